//! Transpose through a swizzled shared tile and 3-D permutes: interpreter vs reference; the
//! shared accesses are conflict-free.
use tilekit_ir::ScalarType;
use tilekit_ops::backend::Interp;
use tilekit_ops::check::{check, Op};
use tilekit_ops::{host::FLOAT_TYPES, transpose};

#[test]
fn transpose_matches_on_random_shapes() {
    for ty in FLOAT_TYPES {
        for (i, s) in [[1i64, 1], [70, 33], [64, 128], [129, 65], [200, 31]].iter().enumerate() {
            let c = check(&Interp, Op::Transpose, s, ty, i as u64).unwrap().compare();
            assert!(c.passed && c.max_abs == 0.0, "{ty} {s:?}: {c:?}");
        }
    }
}

#[test]
fn permutes_match_on_random_shapes() {
    for ty in [ScalarType::F32, ScalarType::BF16] {
        for perm in [[2usize, 0, 1], [0, 2, 1], [1, 2, 0], [2, 1, 0], [1, 0, 2]] {
            for (i, s) in
                [[3i64, 5, 7], [2, 70, 33], [4, 16, 64], [1, 9, 130], [5, 1, 3]].iter().enumerate()
            {
                let c = check(&Interp, Op::Permute(perm), s, ty, i as u64).unwrap().compare();
                assert!(c.passed && c.max_abs == 0.0, "{ty} {perm:?} {s:?}: {c:?}");
            }
        }
    }
}

#[test]
fn swizzled_shared_tile_is_conflict_free_and_plain_is_not() {
    for ty in FLOAT_TYPES {
        assert_eq!(transpose::bank_conflicts(ty).unwrap(), 1, "{ty}");
    }
    // the same accesses on an unswizzled tile serialise 8 ways
    let plain = tilekit_layout::TensorDescriptor::packed(vec![64i64, 64], Some(4)).unwrap();
    assert_eq!(transpose::bank_conflicts_with(ScalarType::F32, &plain).unwrap(), 8);
}

#[test]
fn smaller_micro_blocks_transpose_exactly() {
    use tilekit_ir::tensor::{HostTensor, TensorLayout};
    use tilekit_ops::{backend::Backend, bind::Bindings, compiled::CompiledKernel, host};
    // 16-bit types with 4×4 and 2×2 micro-blocks (tiles 64² and 32²), batched, odd sizes
    for ty in [ScalarType::BF16, ScalarType::F16] {
        for v in [4i64, 2] {
            let (batch, m, n) = (2i64, 70i64, 131i64);
            let x = HostTensor::new(
                host::random(ty, (batch * m * n) as usize, 3).unwrap(),
                TensorLayout::contiguous(ty, vec![batch, m, n]).unwrap(),
            )
            .unwrap();
            let mut y = Interp.empty(ty, &[batch, n, m]).unwrap();
            let k = CompiledKernel::new(transpose::build_micro(ty, v, 1, 1).unwrap());
            let t = 16 * v;
            let grid = [host::blocks(n, t).unwrap(), host::blocks(m, t).unwrap(), batch as u32];
            let args = Bindings::new(&k)
                .input("x", &x, &Interp)
                .unwrap()
                .output("y", &mut y, &Interp)
                .unwrap();
            Interp.launch(&k, grid, args).unwrap();
            let want = x.permute(&[0, 2, 1]).unwrap().contiguous().unwrap();
            assert_eq!(y.buffer().as_bytes(), want.buffer().as_bytes(), "{ty} v {v}");
        }
    }
}

/// `y[b, j, i] = x[b, i, j]` read element by element through x's strides (bits copied).
fn transposed_bits(x: &tilekit_ir::tensor::HostTensor) -> Vec<u64> {
    let l = x.layout();
    let (s, st) = (l.shape(), l.strides());
    let (batch, m, n) = (s[0], s[1], s[2]);
    let mut out = Vec::with_capacity((batch * m * n) as usize);
    for b in 0..batch {
        for j in 0..n {
            for i in 0..m {
                let at = l.offset() + b * st[0] + i * st[1] + j * st[2];
                out.push(x.buffer().bits(at as usize));
            }
        }
    }
    out
}

#[test]
fn tiled_transpose_walks_several_tiles_per_block_exactly() {
    use tilekit_ir::tensor::{HostTensor, TensorLayout};
    use tilekit_ops::{backend::Backend, bind::Bindings, compiled::CompiledKernel, host};
    // batch 2, odd sizes (edge tiles in both dims), x strided (row and batch strides padded,
    // an offset); grid y from 1 (one block walks every row tile) to every tile its own block
    for (ty, v) in [(ScalarType::F32, 4i64), (ScalarType::F32, 2), (ScalarType::BF16, 8)] {
        for (vx, vy, buffers, prefetch) in
            [(v, v, 1u32, true), (v, v, 2, true), (1, 1, 2, false), (v, 1, 1, false)]
        {
            let t = 16 * v;
            // vectors must divide the lengths they run along: edges of 3·vx and 5·vy elements
            let (batch, m, n) = (2i64, 3 * t + 5 * vy, t + 3 * vx);
            let (row, bstride, offset) = (n + 2 * vx, (m + 1) * (n + 2 * vx), 3 * vx);
            let len = (offset + batch * bstride) as usize;
            let buf = host::random(ty, len, 7 + v as u64).unwrap();
            let layout =
                TensorLayout::strided(ty, vec![batch, m, n], vec![bstride, row, 1], offset)
                    .unwrap();
            let x = HostTensor::new(buf, layout).unwrap();
            let want = transposed_bits(&x);
            let k = CompiledKernel::new(
                transpose::build_tiled(ty, v, vx, vy, buffers, prefetch).unwrap(),
            );
            let row_tiles = host::blocks(m, t).unwrap();
            for gy in 1..=row_tiles {
                let mut y = Interp.empty(ty, &[batch, n, m]).unwrap(); // poisoned (NaN)
                let grid = [host::blocks(n, t).unwrap(), gy, batch as u32];
                let args = Bindings::new(&k)
                    .input("x", &x, &Interp)
                    .unwrap()
                    .output("y", &mut y, &Interp)
                    .unwrap();
                Interp.launch(&k, grid, args).unwrap();
                let got: Vec<u64> = (0..want.len()).map(|i| y.buffer().bits(i)).collect();
                assert!(
                    got == want,
                    "{ty} v {v} vx {vx} vy {vy} buffers {buffers} prefetch {prefetch} grid y {gy}"
                );
            }
        }
    }
}

#[test]
fn permutes_through_the_tuned_loop_match_the_reference() {
    use tilekit_ops::backend::TunedInterp;
    use tilekit_ops::transpose::TransposeLoop;
    use tilekit_ops::tuning::Tuning;
    // the API on a backend whose tuning picks the tiled kernel (f32 and 16-bit, micro-blocks
    // 8 and 4 for bf16): permutes whose merged transpose has several row tiles, batch > 1
    for (tiles, buffers, prefetch) in [(2u32, 1u32, true), (3, 2, false), (64, 2, true)] {
        let lp = TransposeLoop {
            tiles_per_block: tiles,
            buffers,
            prefetch,
            min_blocks: 0,
            cache: tilekit_ir::GlobalCache::Default,
        };
        for micro in [8i64, 4] {
            let b = TunedInterp(Tuning {
                transpose_loop_f32: lp,
                transpose_loop_16bit: lp,
                transpose_micro_16bit: micro,
                ..Tuning::default()
            });
            for ty in [ScalarType::F32, ScalarType::BF16] {
                for (perm, s) in [
                    ([2usize, 0, 1], [5i64, 61, 9]), // one transpose of 305 × 9
                    ([0, 2, 1], [3, 140, 70]),       // 3 batches of 140 × 70
                    ([1, 2, 0], [131, 2, 3]),        // 6 × 131
                ] {
                    let c = check(&b, Op::Permute(perm), &s, ty, tiles as u64).unwrap().compare();
                    assert!(
                        c.passed && c.max_abs == 0.0,
                        "{lp} micro {micro} {ty} {perm:?} {s:?}: {c:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn strided_transposes_through_the_tuned_loop_match_the_reference() {
    use tilekit_ir::tensor::HostTensor;
    use tilekit_ops::backend::{Backend, TunedInterp};
    use tilekit_ops::transpose::TransposeLoop;
    use tilekit_ops::tuning::Tuning;
    use tilekit_ops::{api, host};
    let lp = TransposeLoop {
        tiles_per_block: 2,
        buffers: 2,
        prefetch: false,
        min_blocks: 0,
        cache: tilekit_ir::GlobalCache::Default,
    };
    let b = TunedInterp(Tuning { transpose_loop_f32: lp, ..Tuning::default() });
    // x a column window of a wider matrix: rows 3 + 200, columns 5 + 70 of 80
    let full = HostTensor::new(
        host::random(ScalarType::F32, 210 * 80, 11).unwrap(),
        tilekit_ir::tensor::TensorLayout::contiguous(ScalarType::F32, vec![210, 80]).unwrap(),
    )
    .unwrap();
    let x = full.narrow(0, 3, 200).unwrap().narrow(1, 5, 70).unwrap();
    let mut y = b.empty(ScalarType::F32, &[70, 200]).unwrap();
    api::transpose_into(&b, &x, &mut y).unwrap();
    for j in 0..70i64 {
        for i in 0..200i64 {
            let want = full.buffer().bits(((3 + i) * 80 + 5 + j) as usize);
            assert_eq!(y.buffer().bits((j * 200 + i) as usize), want, "y[{j}, {i}]");
        }
    }
}

#[test]
fn the_tuned_loop_shrinks_grid_y_and_splits_past_the_grid_limit() {
    use tilekit_ops::api;
    use tilekit_ops::backend::{LayoutTensor, Record};
    use tilekit_ops::transpose::TransposeLoop;
    use tilekit_ops::tuning::Tuning;
    let lp = TransposeLoop {
        tiles_per_block: 4,
        buffers: 1,
        prefetch: true,
        min_blocks: 0,
        cache: tilekit_ir::GlobalCache::Default,
    };
    let rec = Record::with_tuning(Tuning { transpose_loop_f32: lp, ..Tuning::default() });
    // the permute (2, 0, 1) of 512×512×256 f32: a 262144 × 256 transpose, tiles 64²
    let x = LayoutTensor::contiguous(ScalarType::F32, &[512, 512, 256]).unwrap();
    api::permute(&rec, &x, &[2, 0, 1]).unwrap();
    let l = rec.take();
    assert_eq!(l.len(), 1);
    assert_eq!((l[0].kernel.kernel().name.as_str(), l[0].grid), ("transpose_tiled", [4, 1024, 1]));
    // 65538 row tiles: pieces of 65535 and 3 tiles, each launch ⌈tiles / 4⌉ blocks in y
    let x = LayoutTensor::contiguous(ScalarType::F32, &[64 * 65538, 64]).unwrap();
    api::transpose(&rec, &x).unwrap();
    let grids: Vec<[u32; 3]> = rec.take().iter().map(|l| l.grid).collect();
    assert_eq!(grids, vec![[1, 16384, 1], [1, 1, 1]]);
    // the default tuning launches today's one-tile kernel
    let rec = Record::new();
    api::permute(
        &rec,
        &LayoutTensor::contiguous(ScalarType::BF16, &[512, 512, 256]).unwrap(),
        &[2, 0, 1],
    )
    .unwrap();
    let l = rec.take();
    assert_eq!((l[0].kernel.kernel().name.as_str(), l[0].grid), ("transpose", [2, 2048, 1]));
    // an out-of-range loop is a typed error naming the value
    let bad = TransposeLoop { tiles_per_block: 0, ..TransposeLoop::default() };
    let rec = Record::with_tuning(Tuning { transpose_loop_16bit: bad, ..Tuning::default() });
    let e = api::permute(
        &rec,
        &LayoutTensor::contiguous(ScalarType::BF16, &[8, 8, 8]).unwrap(),
        &[2, 0, 1],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("tiles_per_block") && e.contains('0'), "{e}");
}

#[test]
fn the_tiled_kernels_shared_accesses_stay_conflict_free() {
    // each buffer of the stacked tile is the swizzled tile, so its conflict degree is the same
    for ty in FLOAT_TYPES {
        let (v, t) = transpose::tile(ty);
        let two = transpose::xor_swizzled_buffers(2, t, t, v, v).unwrap();
        let one = transpose::shared_tile(ty).unwrap();
        for r in 0..t {
            for c in (0..t).step_by(v as usize) {
                let a = one.calculate_offset(&[r, c]).unwrap();
                assert_eq!(two.calculate_offset(&[0, r, c]).unwrap(), a);
                assert_eq!(two.calculate_offset(&[1, r, c]).unwrap(), t * t + a);
            }
        }
    }
}

/// The sm_90a PTX of `k`: the grid-dependency wait comes before the first global load and
/// (when `trigger_before_stores`) the trigger after the last global load and before the first
/// global store.
fn pdl_placement(k: &tilekit_ir::Kernel, trigger_before_stores: bool) {
    assert!(k.waits_on_prior_grid(), "{}: a global access precedes the wait", k.name);
    let ptx = tilekit_ptx::emit_kernel(k, tilekit_ptx::Target::Sm90a).unwrap();
    let wait = ptx.find("griddepcontrol.wait;").expect("wait emitted");
    let trigger = ptx.find("griddepcontrol.launch_dependents;").expect("trigger emitted");
    assert_eq!(ptx.matches("griddepcontrol.wait;").count(), 1, "{}", k.name);
    assert!(wait < ptx.find("ld.global").unwrap(), "{}: wait after a load", k.name);
    if trigger_before_stores {
        let last_load = ptx.rfind("ld.global").unwrap();
        let first_store = ptx.find("st.global").unwrap();
        assert!(last_load < trigger && trigger < first_store, "{}:\n{ptx}", k.name);
    }
}

#[test]
fn transpose_kernels_wait_for_the_prior_grid_before_any_global_access() {
    for ty in FLOAT_TYPES {
        let (v, _) = transpose::tile(ty);
        pdl_placement(&transpose::build(ty, v, v).unwrap(), true);
        pdl_placement(&transpose::build_micro(ty, 1, 1, 1).unwrap(), true);
        for (buffers, prefetch) in [(1u32, true), (2, true), (1, false), (2, false)] {
            let k = transpose::build_tiled(ty, v, v, v, buffers, prefetch).unwrap();
            // the trigger sits at the top of the loop body, under `r + gy >= R`
            pdl_placement(&k, false);
            let text = k.to_string();
            let (for_at, trig) = (
                text.find("for ").unwrap(),
                text.find("griddepcontrol.launch_dependents").unwrap(),
            );
            assert!(for_at < trig && trig < text.find("st.shared").unwrap(), "{text}");
        }
    }
}
