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
