//! wgmma in the interpreter: a correct kernel gives `A·B + C` (f16 inputs, f32 accumulation,
//! a 64-byte-swizzled A and an interleaved B, both with derived descriptors), and each bug
//! wgmma makes possible is planted once and named — touching an accumulator before the wait
//! that retires it (reading it, or overwriting the register a loop carries it in), writing a
//! tile an in-flight wgmma reads (by threads, or by a bulk load), a wgmma without `wgmma.fence`
//! (none at all, or register writes after it), a diverged warpgroup, a descriptor whose tile
//! origin breaks the swizzle its layout assumed, a block ending with a group in flight, a tile
//! written by threads without `fence.proxy.async`.

use tilekit_ir::eval::{from_f64, to_f64};
use tilekit_ir::interp::{run, Args, AsyncBug, HostBuffer, InterpError};
use tilekit_ir::lit;
use tilekit_ir::wgmma::{
    acc_coord, interleaved, Acc, Major, SmemMatrix, WgmmaShape, WgmmaSrc, WgmmaType,
};
use tilekit_ir::{Axis, CmpOp, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::swizzle::HopperSwizzle;
use tilekit_layout::TensorDescriptor;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Bug {
    None,
    ReadBeforeWait,
    OverwriteCarried,
    WriteTileInFlight,
    BulkLoadIntoTileInFlight,
    NoFence,
    RegsAfterFence,
    Diverged,
    Misaligned,
    NoWaitAtExit,
    NoProxyFence,
}

const KT: i64 = 32; // two wgmmas of K = 16
const N: i64 = 8;

/// `d (64×8 f32) = a (64×32 f16, row-major) · b (8×32 f16, rows = B's columns)`, plus `c`
/// (64×8 f32) as the input accumulator of the first wgmma.
fn kernel(bug: Bug) -> Kernel {
    let b = KernelBuilder::new("wg", [128, 1, 1]).unwrap();
    let ga = b.ptr_param("a", ScalarType::F16).unwrap();
    let gb = b.ptr_param("b", ScalarType::F16).unwrap();
    let gc = b.ptr_param("c", ScalarType::F32).unwrap();
    let gd = b.ptr_param("d", ScalarType::F32).unwrap();
    let tid = b.thread_id(Axis::X);
    let (warp, lane) = (tid.clone() / lit(32), tid.clone() % lit(32));
    let la = HopperSwizzle::B64.descriptor(64, KT, 2).unwrap();
    let lb = interleaved(Major::K, N, KT, 2).unwrap();
    let ma = SmemMatrix::from_layout(&la, Major::K, ScalarType::F16).unwrap();
    let mb = SmemMatrix::from_layout(&lb, Major::K, ScalarType::F16).unwrap();
    // A's allocation holds two tiles; the misaligned bug puts the tile 128 bytes in
    let sa = b.shared("a_tile", ScalarType::F16, 2 * ma.extent()).unwrap();
    let sb = b.shared("b_tile", ScalarType::F16, mb.extent()).unwrap();
    let a_origin = if bug == Bug::Misaligned { 64 } else { 0 };
    let fill = |s, g, rows: i64, layout: &TensorDescriptor<i64>, origin: i64| {
        let lv: TensorDescriptor<Val> = layout.lift();
        b.for_range(&lit(0), &lit(rows * KT / 128), &lit(1), &[], |b, i, _| {
            let idx = i * lit(128) + tid.clone();
            let off = lv.calculate_offset(&[idx.clone() / lit(KT), idx.clone() % lit(KT)])?;
            let v = b.load(g, &idx, 1, None)?;
            b.store(s, &(off + lit(origin)), &v, None)?;
            Ok(vec![])
        })
        .unwrap();
    };
    fill(sa, ga, 64, &la, a_origin);
    fill(sb, gb, N, &lb, 0);
    if bug != Bug::NoProxyFence {
        b.fence_proxy_async();
    }
    b.barrier();
    let coords: Vec<(Val, Val)> = (0..4)
        .map(|i| {
            let (r0, c0) = acc_coord(0, i);
            (
                warp.clone() * lit(16) + lane.clone() / lit(4) + lit(r0 as i64),
                lane.clone() % lit(4) * lit(2) + lit(c0 as i64),
            )
        })
        .collect();
    let load_c = |b: &KernelBuilder| -> Vec<Val> {
        coords
            .iter()
            .map(|(r, c)| b.load(gc, &(r.clone() * lit(N) + c.clone()), 1, None).unwrap().remove(0))
            .collect()
    };
    let mut c_in = if bug == Bug::RegsAfterFence { vec![] } else { load_c(&b) };
    if bug != Bug::NoFence {
        b.wgmma_fence().unwrap();
    }
    if bug == Bug::RegsAfterFence {
        c_in = load_c(&b);
    }
    let shape = WgmmaShape::new(WgmmaType::F16, N as u32).unwrap();
    let mma = |b: &KernelBuilder, acc: &[Val]| -> Vec<Val> {
        let mut acc = acc.to_vec();
        for blk in 0..2 {
            let da = b.wgmma_desc(sa, &lit(a_origin), &ma, blk).unwrap();
            let db = b.wgmma_desc(sb, &lit(0), &mb, blk).unwrap();
            acc = b.wgmma(shape, &WgmmaSrc::Smem(da), &db, Acc::Add(&acc)).unwrap();
        }
        acc
    };
    let run_one = |b: &KernelBuilder| -> Vec<Val> {
        if bug == Bug::Diverged {
            let half = b.cmp(CmpOp::Lt, &tid, &lit(64)).unwrap();
            b.if_then(&half, |b| {
                mma(b, &c_in);
                Ok(())
            })
            .unwrap();
            return c_in.clone();
        }
        mma(b, &c_in)
    };
    let mut d = run_one(&b);
    b.wgmma_commit().unwrap();
    match bug {
        Bug::ReadBeforeWait => {
            let (r, c) = &coords[0];
            b.store(gd, &(r.clone() * lit(N) + c.clone()), &[d[0].clone()], None).unwrap();
        }
        Bug::OverwriteCarried => {
            // the loop carries D in the same registers; yielding fresh zeros overwrites them
            let z = vec![b.f32(0.0); 4];
            d = b.for_range(&lit(0), &lit(1), &lit(1), &d, |_, _, _| Ok(z.clone())).unwrap();
        }
        Bug::WriteTileInFlight => {
            b.store(
                sb,
                &tid,
                &[b.konst(tilekit_ir::Lit::float(ScalarType::F16, 1.0).unwrap())],
                None,
            )
            .unwrap();
        }
        Bug::BulkLoadIntoTileInFlight => {
            let bar = b.mbarrier("full", 1).unwrap();
            let first = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
            b.if_then(&first, |b| {
                b.mbarrier_init(bar, &lit(0), &lit(1))?;
                b.fence_mbarrier_init();
                b.mbarrier_arrive(bar, &lit(0), Some(&lit(N * KT * 2)))?;
                b.bulk_load(sb, &lit(0), gb, &lit(0), &lit(N * KT), bar, &lit(0))
            })
            .unwrap();
            b.mbarrier_wait(bar, &lit(0), &lit(0)).unwrap();
        }
        _ => {}
    }
    if bug != Bug::NoWaitAtExit {
        b.wgmma_wait(0).unwrap();
        for (i, (r, c)) in coords.iter().enumerate() {
            b.store(gd, &(r.clone() * lit(N) + c.clone()), &[d[i].clone()], None).unwrap();
        }
    }
    b.finish().unwrap()
}

struct Inputs {
    a: Vec<f64>,
    bm: Vec<f64>,
    c: Vec<f32>,
    args: Args,
}

fn inputs(seed: u64) -> Inputs {
    let mut s = seed;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let mut half = |len: usize| {
        let mut buf = HostBuffer::zeroed(ScalarType::F16, len);
        let mut v = vec![];
        for i in 0..len {
            let bits = from_f64(ScalarType::F16, next());
            buf.set_bits(i, bits);
            v.push(to_f64(ScalarType::F16, bits));
        }
        (buf, v)
    };
    let (ab, a) = half((64 * KT) as usize);
    let (bb, bm) = half((N * KT) as usize);
    let c: Vec<f32> = (0..64 * N).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
    let mut args = Args::new();
    args.buffer(ab)
        .buffer(bb)
        .buffer(HostBuffer::from_f32(&c))
        .buffer(HostBuffer::from_f32(&vec![f32::NAN; (64 * N) as usize]));
    Inputs { a, bm, c, args }
}

fn async_kind(bug: Bug) -> (AsyncBug, String) {
    let mut x = inputs(7);
    match run(&kernel(bug), [1, 1, 1], &mut x.args) {
        Err(InterpError::Async { kind, detail, .. }) => (kind, detail),
        other => panic!("{bug:?}: expected an async error, got {other:?}"),
    }
}

#[test]
fn a_correct_kernel_computes_a_times_b_plus_c() {
    let mut x = inputs(3);
    run(&kernel(Bug::None), [1, 1, 1], &mut x.args).unwrap();
    let d = x.args.take_buffer(3).unwrap().to_f32().unwrap();
    let kt = KT as usize;
    for m in 0..64 {
        for n in 0..N as usize {
            let terms: Vec<f64> = (0..kt).map(|k| x.a[m * kt + k] * x.bm[n * kt + k]).collect();
            let want = terms.iter().sum::<f64>() + x.c[m * N as usize + n] as f64;
            let tol = terms.iter().map(|t| t.abs()).sum::<f64>() * 1e-6 + 1e-6;
            let got = d[m * N as usize + n] as f64;
            assert!((got - want).abs() <= tol, "D[{m}][{n}] = {got}, expected {want}");
        }
    }
}

#[test]
fn reading_an_accumulator_before_the_wait_is_named() {
    let (kind, detail) = async_kind(Bug::ReadBeforeWait);
    assert_eq!(kind, AsyncBug::AccumulatorInFlight);
    assert!(
        detail.contains("warp 0 (warpgroup 0)") && detail.contains("still in flight"),
        "{detail}"
    );
}

#[test]
fn overwriting_a_carried_accumulator_before_the_wait_is_named() {
    let (kind, detail) = async_kind(Bug::OverwriteCarried);
    assert_eq!(kind, AsyncBug::AccumulatorInFlight);
    assert!(detail.contains("overwrites it"), "{detail}");
}

#[test]
fn writing_a_tile_an_inflight_wgmma_reads_is_named() {
    let mut x = inputs(7);
    match run(&kernel(Bug::WriteTileInFlight), [1, 1, 1], &mut x.args) {
        Err(InterpError::Async { kind, mem, detail, .. }) => {
            assert_eq!(kind, AsyncBug::OverwriteWhileWgmmaReads);
            assert_eq!(mem, "b_tile");
            assert!(detail.contains("wgmma.mma_async.m64n8k16"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_bulk_load_into_a_tile_an_inflight_wgmma_reads_is_named() {
    let mut x = inputs(7);
    match run(&kernel(Bug::BulkLoadIntoTileInFlight), [1, 1, 1], &mut x.args) {
        Err(InterpError::Async { kind, mem, inst, .. }) => {
            assert_eq!(kind, AsyncBug::OverwriteWhileWgmmaReads);
            assert_eq!(mem, "b_tile");
            assert!(inst.contains("cp.async.bulk"), "{inst}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_wgmma_without_fence_is_named() {
    let (kind, detail) = async_kind(Bug::NoFence);
    assert_eq!(kind, AsyncBug::MissingWgmmaFence);
    assert!(detail.contains("never ran"), "{detail}");
    let (kind, detail) = async_kind(Bug::RegsAfterFence);
    assert_eq!(kind, AsyncBug::MissingWgmmaFence);
    assert!(detail.contains("was at step"), "{detail}");
}

#[test]
fn a_diverged_warpgroup_is_named() {
    let (kind, detail) = async_kind(Bug::Diverged);
    assert_eq!(kind, AsyncBug::WarpgroupDivergence);
    assert!(detail.contains("64 of the warpgroup's 128 threads"), "{detail}");
}

#[test]
fn a_descriptor_disagreeing_with_its_layout_is_named() {
    let (kind, detail) = async_kind(Bug::Misaligned);
    assert_eq!(kind, AsyncBug::DescriptorMismatch);
    assert!(detail.contains("aligned to 512 bytes"), "{detail}");
}

#[test]
fn a_block_ending_with_a_group_in_flight_is_named() {
    let (kind, _) = async_kind(Bug::NoWaitAtExit);
    assert_eq!(kind, AsyncBug::WgmmaAtExit);
}

#[test]
fn a_tile_written_without_proxy_fence_is_named() {
    let (kind, detail) = async_kind(Bug::NoProxyFence);
    assert_eq!(kind, AsyncBug::MissingProxyFence);
    assert!(detail.contains("async proxy"), "{detail}");
}

#[test]
fn the_builder_refuses_bad_shapes_and_operands() {
    let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    let e = b.wgmma_fence().unwrap_err().to_string();
    assert_eq!(e, "wgmma: wgmma.fence needs a block of whole warpgroups (a multiple of 128 threads); this block has 64");
    let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
    let desc = b.konst(tilekit_ir::Lit::int(ScalarType::I64, 0).unwrap());
    let f = b.f32(1.0);
    let shape = WgmmaShape::new(WgmmaType::F16, 8).unwrap();
    // an f32 fragment for an f16 wgmma
    let e = b.wgmma(shape, &WgmmaSrc::Regs(vec![f.clone(); 8]), &desc, Acc::Zero).unwrap_err();
    assert!(e.to_string().contains("A fragment has element type f32; valid: f16"), "{e}");
    // an accumulator of the wrong size
    let e = b
        .wgmma(shape, &WgmmaSrc::Smem(desc.clone()), &desc, Acc::Add(std::slice::from_ref(&f)))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "wgmma.mma_async.m64n8k16.f32.f16.f16: the accumulator C has 1 values, expected 4"
    );
    // a descriptor that is not i64
    let e = b.wgmma(shape, &WgmmaSrc::Smem(f.clone()), &desc, Acc::Zero).unwrap_err();
    assert!(e.to_string().contains("A descriptor has element type f32"), "{e}");
    // descriptors whose tiles disagree with the wgmma: type, major-ness, rows
    let s16 = b.shared("s16", ScalarType::F16, 64 * 16).unwrap();
    let s32 = b.shared("s32", ScalarType::F32, 64 * 16).unwrap();
    let k16 = SmemMatrix::from_layout(
        &interleaved(Major::K, 64, 16, 2).unwrap(),
        Major::K,
        ScalarType::F16,
    )
    .unwrap();
    let mn16 = SmemMatrix::from_layout(
        &interleaved(Major::MN, 64, 16, 2).unwrap(),
        Major::MN,
        ScalarType::F16,
    )
    .unwrap();
    let k32 = SmemMatrix::from_layout(
        &interleaved(Major::K, 64, 16, 4).unwrap(),
        Major::K,
        ScalarType::F32,
    )
    .unwrap();
    let d16 = b.wgmma_desc(s16, &lit(0), &k16, 0).unwrap();
    let dmn = b.wgmma_desc(s16, &lit(0), &mn16, 0).unwrap();
    let d32 = b.wgmma_desc(s32, &lit(0), &k32, 0).unwrap();
    assert!(b.wgmma(shape, &WgmmaSrc::Smem(d16.clone()), &d16, Acc::Zero).is_ok());
    let e = b.wgmma(shape, &WgmmaSrc::Smem(d32), &d16, Acc::Zero).unwrap_err();
    assert!(e.to_string().contains("the A tile has element type f32; valid: f16"), "{e}");
    let e = b.wgmma(shape, &WgmmaSrc::Smem(d16.clone()), &dmn, Acc::Zero).unwrap_err();
    assert!(
        e.to_string()
            .contains("the B tile's major-ness = MN-major is invalid: K-major (trans-b = false)"),
        "{e}"
    );
    let wide = WgmmaShape::new(WgmmaType::F16, 128).unwrap();
    let e = b.wgmma(wide, &WgmmaSrc::Smem(d16.clone()), &d16, Acc::Zero).unwrap_err();
    assert!(e.to_string().contains("at least 128 rows"), "{e}");
    // a tile type wgmma does not take
    let e = SmemMatrix::from_layout(
        &interleaved(Major::K, 64, 16, 4).unwrap(),
        Major::K,
        ScalarType::I32,
    )
    .unwrap_err();
    assert!(e.to_string().contains("valid: f16, bf16, f32 (tf32)"), "{e}");
}

/// Two warpgroups: each has its own fence, groups and accumulators; warpgroup 1 multiplies
/// by B's second half. A plain kernel passes; warpgroup 1 skipping its wait is named for it.
/// `looped`: the product twice (tiles 0 and 1 of `d`), each from a zeroed loop-carried
/// accumulator, on the independent warp schedule.
fn two_warpgroups(wg1_waits: bool, looped: bool) -> Kernel {
    let b = KernelBuilder::new("wg2", [256, 1, 1]).unwrap();
    let ga = b.ptr_param("a", ScalarType::F16).unwrap();
    let gb = b.ptr_param("b", ScalarType::F16).unwrap();
    let gd = b.ptr_param("d", ScalarType::F32).unwrap();
    let tid = b.thread_id(Axis::X);
    let (wg, t) = (tid.clone() / lit(128), tid.clone() % lit(128));
    let (warp, lane) = (t.clone() / lit(32), t.clone() % lit(32));
    let la = interleaved(Major::K, 64, 16, 2).unwrap();
    let lb = interleaved(Major::K, 2 * N, 16, 2).unwrap();
    let ma = SmemMatrix::from_layout(&la, Major::K, ScalarType::F16).unwrap();
    let mb = SmemMatrix::from_layout(&lb, Major::K, ScalarType::F16).unwrap();
    // B's second half (rows N..2N) as its own tile: the same layout from row N on
    let lb_half = interleaved(Major::K, N, 16, 2).unwrap();
    let mh = SmemMatrix::from_layout(&lb_half, Major::K, ScalarType::F16).unwrap();
    let sa = b.shared("a_tile", ScalarType::F16, ma.extent()).unwrap();
    let sb = b.shared("b_tile", ScalarType::F16, mb.extent()).unwrap();
    for (s, g, rows, layout) in [(sa, ga, 64, &la), (sb, gb, 2 * N, &lb)] {
        let lv: TensorDescriptor<Val> = layout.lift();
        b.for_range(&lit(0), &lit(rows * 16 / 256), &lit(1), &[], |b, i, _| {
            let idx = i * lit(256) + tid.clone();
            let off = lv.calculate_offset(&[idx.clone() / lit(16), idx.clone() % lit(16)])?;
            let v = b.load(g, &idx, 1, None)?;
            b.store(s, &off, &v, None)?;
            Ok(vec![])
        })
        .unwrap();
    }
    b.fence_proxy_async();
    b.barrier();
    // warpgroup w reads B rows w·N.. : the interleaved layout puts row N at element N·16
    let origin = wg.clone() * lit(N * 16);
    let shape = WgmmaShape::new(WgmmaType::F16, N as u32).unwrap();
    let store = |b: &KernelBuilder, d: &[Val], tile: Val| {
        for (i, v) in d.iter().enumerate() {
            let (r0, c0) = acc_coord(0, i);
            let row = warp.clone() * lit(16) + lane.clone() / lit(4) + lit(r0 as i64);
            let col = lane.clone() % lit(4) * lit(2) + lit(c0 as i64);
            let at = (tile.clone() * lit(2) + wg.clone()) * lit(64 * N) + row * lit(N) + col;
            b.store(gd, &at, std::slice::from_ref(v), None)?;
        }
        Ok::<(), tilekit_ir::IrError>(())
    };
    if looped {
        // a persistent GEMM's shape: per tile, a fresh accumulator carried through a K loop;
        // the named barrier puts the block on the independent warp schedule, where one
        // warpgroup's loop steps while the other's wgmma is still in flight on the same values
        b.named_barrier(1, 256).unwrap();
        b.for_range(&lit(0), &lit(2), &lit(1), &[], |b, tile, _| {
            let init = vec![b.f32(0.0); shape.acc_regs()];
            let d = b.for_range(&lit(0), &lit(1), &lit(1), &init, |b, _, acc| {
                b.wgmma_fence()?;
                let da = b.wgmma_desc(sa, &lit(0), &ma, 0)?;
                let db = b.wgmma_desc(sb, &origin, &mh, 0)?;
                let d = b.wgmma(shape, &WgmmaSrc::Smem(da), &db, Acc::Add(acc))?;
                b.wgmma_commit()?;
                b.wgmma_wait(0)?;
                Ok(d)
            })?;
            store(b, &d, tile)?;
            Ok(vec![])
        })
        .unwrap();
        return b.finish().unwrap();
    }
    b.wgmma_fence().unwrap();
    let da = b.wgmma_desc(sa, &lit(0), &ma, 0).unwrap();
    let db = b.wgmma_desc(sb, &origin, &mh, 0).unwrap();
    let d = b.wgmma(shape, &WgmmaSrc::Smem(da), &db, Acc::Zero).unwrap();
    b.wgmma_commit().unwrap();
    if wg1_waits {
        b.wgmma_wait(0).unwrap();
    } else {
        let first = b.cmp(CmpOp::Eq, &wg, &lit(0)).unwrap();
        b.if_then(&first, |b| b.wgmma_wait(0)).unwrap();
    }
    store(&b, &d, lit(0)).unwrap();
    b.finish().unwrap()
}

#[test]
fn two_warpgroups_run_independently() {
    let x = inputs(9);
    // inputs() made B with N rows; this kernel reads 2N: a fresh B and D
    let mut s = 77u64;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let mut bbuf = HostBuffer::zeroed(ScalarType::F16, (2 * N * 16) as usize);
    let mut bm = vec![];
    for i in 0..(2 * N * 16) as usize {
        let bits = from_f64(ScalarType::F16, next());
        bbuf.set_bits(i, bits);
        bm.push(to_f64(ScalarType::F16, bits));
    }
    // a: the first 64×16 of inputs()'s A, row-major with 16 columns
    let mut abuf = HostBuffer::zeroed(ScalarType::F16, 64 * 16);
    let mut a = vec![];
    for m in 0..64 {
        for k in 0..16 {
            let v = x.a[m * KT as usize + k];
            abuf.set_bits(m * 16 + k, from_f64(ScalarType::F16, v));
            a.push(v);
        }
    }
    let mut args = Args::new();
    args.buffer(abuf.clone()).buffer(bbuf.clone()).buffer(HostBuffer::from_f32(&vec![
        f32::NAN;
        (2 * 64 * N)
            as usize
    ]));
    run(&two_warpgroups(true, false), [1, 1, 1], &mut args).unwrap();
    let d = args.take_buffer(2).unwrap().to_f32().unwrap();
    for w in 0..2usize {
        for m in 0..64 {
            for n in 0..N as usize {
                let want: f64 =
                    (0..16).map(|k| a[m * 16 + k] * bm[(w * N as usize + n) * 16 + k]).sum();
                let got = d[w * 64 * N as usize + m * N as usize + n] as f64;
                assert!(
                    (got - want).abs() <= 1e-5,
                    "warpgroup {w} D[{m}][{n}] = {got}, want {want}"
                );
            }
        }
    }
    // warpgroup 1 reads its accumulator without waiting: named, with warpgroup 1's thread
    let mut args = Args::new();
    args.buffer(abuf)
        .buffer(bbuf)
        .buffer(HostBuffer::from_f32(&vec![f32::NAN; (2 * 64 * N) as usize]));
    match run(&two_warpgroups(false, false), [1, 1, 1], &mut args) {
        Err(InterpError::Async { kind, thread, detail, .. }) => {
            assert_eq!(kind, AsyncBug::AccumulatorInFlight);
            assert_eq!(thread, [128, 0, 0]);
            assert!(detail.contains("warpgroup 1"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn two_warpgroups_reenter_a_loop_with_fresh_accumulators() {
    // the in-flight marks of one warpgroup's wgmma do not travel with the other warpgroup's
    // loop steps (a false AccumulatorInFlight once, on the second tile)
    let mut s = 91u64;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let mut make = |len: usize| {
        let mut buf = HostBuffer::zeroed(ScalarType::F16, len);
        let mut vals = vec![];
        for i in 0..len {
            let bits = from_f64(ScalarType::F16, next());
            buf.set_bits(i, bits);
            vals.push(to_f64(ScalarType::F16, bits));
        }
        (buf, vals)
    };
    let (abuf, a) = make(64 * 16);
    let (bbuf, bm) = make((2 * N * 16) as usize);
    let mut args = Args::new();
    args.buffer(abuf)
        .buffer(bbuf)
        .buffer(HostBuffer::from_f32(&vec![f32::NAN; (4 * 64 * N) as usize]));
    run(&two_warpgroups(true, true), [1, 1, 1], &mut args).unwrap();
    let d = args.take_buffer(2).unwrap().to_f32().unwrap();
    for tile in 0..2usize {
        for w in 0..2usize {
            for m in 0..64 {
                for n in 0..N as usize {
                    let want: f64 =
                        (0..16).map(|k| a[m * 16 + k] * bm[(w * N as usize + n) * 16 + k]).sum();
                    let got = d[(tile * 2 + w) * 64 * N as usize + m * N as usize + n] as f64;
                    assert!(
                        (got - want).abs() <= 1e-5,
                        "tile {tile}, warpgroup {w}: D[{m}][{n}] = {got}, want {want}"
                    );
                }
            }
        }
    }
}
