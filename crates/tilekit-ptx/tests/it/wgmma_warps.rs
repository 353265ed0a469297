//! wgmma under the independent warp schedule: a warp-specialised kernel (warpgroup 0 fills the
//! operand tiles and arrives on an mbarrier, warpgroup 1 waits on it and multiplies) runs one
//! warp at a time in the interpreter, and each wgmma op runs once for its whole warpgroup when
//! the last of its four warps reaches it — as on the GPU. Checked against an f64 reference; a
//! warp that skips a wgmma is named.

use tilekit_ir::eval::{from_f64, to_f64};
use tilekit_ir::interp::{self, Args, AsyncBug, HostBuffer, InterpError};
use tilekit_ir::lit;
use tilekit_ir::wgmma::{acc_coord, Acc, Major, SmemMatrix, WgmmaShape, WgmmaSrc, WgmmaType};
use tilekit_ir::{Axis, CmpOp, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::swizzle::HopperSwizzle;

const N: i64 = 64;
const KT: i64 = 64;

/// `skip_warp`: a consumer warp that branches around the wgmma (the bug).
fn kernel(skip_warp: Option<i64>) -> Kernel {
    let ty = WgmmaType::BF16;
    let elem = ScalarType::BF16;
    let b = KernelBuilder::new("wgmma_specialised", [256, 1, 1]).unwrap();
    let ga = b.ptr_param("a", elem).unwrap();
    let gb = b.ptr_param("b", elem).unwrap();
    let gd = b.ptr_param("d", ScalarType::F32).unwrap();
    let tid = b.thread_id(Axis::X);
    let full = b.mbarrier("full", 1).unwrap();
    let layout_a = HopperSwizzle::B128.descriptor(64, KT, 2).unwrap();
    let layout_b = HopperSwizzle::B128.descriptor(N, KT, 2).unwrap();
    let ma = SmemMatrix::from_layout(&layout_a, Major::K, elem).unwrap();
    let mb = SmemMatrix::from_layout(&layout_b, Major::K, elem).unwrap();
    let sa = b.shared("a_tile", elem, ma.extent()).unwrap();
    let sb = b.shared("b_tile", elem, mb.extent()).unwrap();
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
    b.if_then(&first, |b| {
        b.mbarrier_init(full, &lit(0), &lit(128))?;
        b.fence_mbarrier_init();
        Ok(())
    })
    .unwrap();
    b.barrier();
    let wg = b.warpgroup_id();
    let producer = b.cmp(CmpOp::Eq, &wg, &lit(0)).unwrap();
    b.if_then(&producer, |b| {
        for (g, s, layout, rows) in [(ga, sa, &layout_a, 64), (gb, sb, &layout_b, N)] {
            let lv = layout.lift::<Val>();
            b.for_range(&lit(0), &lit(rows * KT / 128), &lit(1), &[], |b, i, _| {
                let idx = i * lit(128) + tid.clone();
                let off = lv
                    .calculate_offset(&[idx.clone() / lit(KT), idx.clone() % lit(KT)])
                    .map_err(tilekit_ir::IrError::Layout)?;
                let v = b.load(g, &idx, 1, None)?;
                b.store(s, &off, &v, None)?;
                Ok(vec![])
            })?;
        }
        b.fence_proxy_async();
        b.mbarrier_arrive(full, &lit(0), None)
    })
    .unwrap();
    let consumer = b.cmp(CmpOp::Eq, &wg, &lit(1)).unwrap();
    b.if_then(&consumer, |b| {
        b.mbarrier_wait(full, &lit(0), &lit(0))?;
        b.wgmma_fence()?;
        let shape = WgmmaShape::new(ty, N as u32)?;
        let run = |b: &KernelBuilder| -> Result<Vec<Val>, tilekit_ir::IrError> {
            let mut acc: Vec<Val> = vec![];
            for blk in 0..(KT / 16) as usize {
                let da = b.wgmma_desc(sa, &lit(0), &ma, blk)?;
                let db = b.wgmma_desc(sb, &lit(0), &mb, blk)?;
                let c = if blk == 0 { Acc::Zero } else { Acc::Add(&acc) };
                acc = b.wgmma(shape, &WgmmaSrc::Smem(da), &db, c)?;
            }
            Ok(acc)
        };
        let acc = match skip_warp {
            None => run(b)?,
            Some(w) => {
                let go = b.cmp(CmpOp::Ne, &b.warp_id(), &lit(w))?;
                b.if_then(&go, |b| run(b).map(|_| ()))?;
                vec![]
            }
        };
        b.wgmma_commit()?;
        b.wgmma_wait(0)?;
        let t = tid.clone() - lit(128);
        let (warp, lane) = (t.clone() / lit(32), t % lit(32));
        for i in (0..acc.len()).step_by(2) {
            let (r0, c0) = acc_coord(0, i);
            let row = warp.clone() * lit(16) + lane.clone() / lit(4) + lit(r0 as i64);
            let col = lane.clone() % lit(4) * lit(2) + lit(c0 as i64);
            b.store(gd, &(row * lit(N) + col), &[acc[i].clone(), acc[i + 1].clone()], None)?;
        }
        Ok(())
    })
    .unwrap();
    b.finish().unwrap()
}

fn inputs() -> (Args, Vec<f64>, Vec<f64>) {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut fill = |len: usize| {
        let mut buf = HostBuffer::zeroed(ScalarType::BF16, len);
        let mut vals = vec![];
        for i in 0..len {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let bits = from_f64(ScalarType::BF16, (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5);
            buf.set_bits(i, bits);
            vals.push(to_f64(ScalarType::BF16, bits));
        }
        (buf, vals)
    };
    let (ab, av) = fill((64 * KT) as usize);
    let (bb, bv) = fill((N * KT) as usize);
    let mut args = Args::new();
    args.buffer(ab).buffer(bb).buffer(HostBuffer::from_f32(&vec![f32::NAN; (64 * N) as usize]));
    (args, av, bv)
}

#[test]
fn a_warp_specialised_wgmma_matches_the_reference() {
    let k = kernel(None);
    let (mut args, av, bv) = inputs();
    interp::run(&k, [1, 1, 1], &mut args).unwrap();
    let d = args.take_buffer(2).unwrap().to_f32().unwrap();
    let (n, kt) = (N as usize, KT as usize);
    for m in 0..64 {
        for j in 0..n {
            let terms = (0..kt).map(|x| av[m * kt + x] * bv[j * kt + x]);
            let want: f64 = terms.clone().sum();
            let tol = terms.map(f64::abs).sum::<f64>() * 4.0 * f32::EPSILON as f64 + 1e-30;
            let got = d[m * n + j] as f64;
            assert!((got - want).abs() <= tol, "D[{m}][{j}] = {got}, reference {want}");
        }
    }
}

#[test]
fn a_warp_that_skips_the_wgmma_is_named() {
    let (mut args, ..) = inputs();
    let e = interp::run(&kernel(Some(6)), [1, 1, 1], &mut args).unwrap_err();
    match e {
        InterpError::Async { kind, detail, .. } => {
            assert_eq!(kind, AsyncBug::WarpgroupDivergence, "{detail}");
            assert!(detail.contains("warpgroup"), "{detail}");
        }
        other => panic!("expected a divergence, got {other}"),
    }
}

#[test]
#[cfg_attr(not(has_ptxas), ignore = "needs ptxas (TILEKIT_PTXAS or on the PATH)")]
fn the_warp_specialised_wgmma_kernel_assembles_for_sm_90a() {
    let k = kernel(None);
    let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
    assert!(ptx.contains("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"), "{ptx}");
    let report =
        tilekit_ptx::ptxas::assemble(&ptx, tilekit_ptx::Target::Sm90a, "wgmma_specialised")
            .unwrap()
            .expect("no ptxas (TILEKIT_PTXAS or the PATH)");
    assert!(report.contains("0 bytes spill stores"), "{report}");
}
