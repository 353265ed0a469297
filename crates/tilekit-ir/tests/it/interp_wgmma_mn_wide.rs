//! An MN-major B tile wider than one swizzle row (N = 128 and 192 f16 at the 128-byte swizzle:
//! two and three atoms of 64 columns side by side, `HopperSwizzle::descriptor_atoms`), read by
//! wgmma through a derived descriptor (LBO = the atom stride, SBO = 8 K rows), with A from
//! registers — the shape of attention's `O += P·V` — against a brute-force product. Also: the
//! accumulator fragment of one wgmma, converted to f16, is the A register fragment of the next
//! (`acc_coord` over a K = 16 column slice equals `a_coord`), the identity attention relies on.

use tilekit_ir::eval::{from_f64, to_f64};
use tilekit_ir::interp::{run, Args, HostBuffer};
use tilekit_ir::lit;
use tilekit_ir::wgmma::{
    a_coord, acc_coord, Acc, DescLayout, Major, SmemMatrix, WgmmaShape, WgmmaSrc, WgmmaType,
};
use tilekit_ir::{Axis, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::swizzle::HopperSwizzle;
use tilekit_layout::TensorDescriptor;

const KT: i64 = 32; // two wgmmas of K = 16

/// `d (64×n f32) = a (64×32 f16, row-major, from registers) · b (32×n f16, row-major = MN-major)`.
fn kernel(n: i64) -> Kernel {
    let b = KernelBuilder::new("wg_mn", [128, 1, 1]).unwrap();
    let ga = b.ptr_param("a", ScalarType::F16).unwrap();
    let gb = b.ptr_param("b", ScalarType::F16).unwrap();
    let gd = b.ptr_param("d", ScalarType::F32).unwrap();
    let tid = b.thread_id(Axis::X);
    let lb = HopperSwizzle::B128.descriptor_atoms(KT, n, 2).unwrap();
    let mb = SmemMatrix::from_layout(&lb, Major::MN, ScalarType::F16).unwrap();
    assert_eq!((mb.layout(), mb.lbo(), mb.sbo()), (DescLayout::B128, (KT * 64 * 2) as u32, 1024));
    let sb = b.shared("b_tile", ScalarType::F16, mb.extent()).unwrap();
    let lv: TensorDescriptor<Val> = lb.lift();
    b.for_range(&lit(0), &lit(KT * n / 128), &lit(1), &[], |b, i, _| {
        let idx = i * lit(128) + tid.clone();
        let off = lv.calculate_offset(&[idx.clone() / lit(n), idx.clone() % lit(n)])?;
        let v = b.load(gb, &idx, 1, None)?;
        b.store(sb, &off, &v, None)?;
        Ok(vec![])
    })
    .unwrap();
    b.fence_proxy_async();
    b.barrier();
    let ty = WgmmaType::F16;
    let frag = |blk: i64| -> Vec<Val> {
        (0..8)
            .map(|i| {
                let (r, c) = a_coord(ty, 0, i);
                let row = tid.clone() / lit(32) * lit(16)
                    + tid.clone() % lit(32) / lit(4)
                    + lit(r as i64);
                let col = tid.clone() % lit(4) * lit(2) + lit(c as i64 + 16 * blk);
                b.load(ga, &(row * lit(KT) + col), 1, None).unwrap().remove(0)
            })
            .collect()
    };
    let (f0, f1) = (frag(0), frag(1));
    b.wgmma_fence().unwrap();
    let shape = WgmmaShape::new(ty, n as u32).unwrap().transposed(false, true).unwrap();
    let d0 = b.wgmma_desc(sb, &lit(0), &mb, 0).unwrap();
    let d1 = b.wgmma_desc(sb, &lit(0), &mb, 1).unwrap();
    let acc = b.wgmma(shape, &WgmmaSrc::Regs(f0), &d0, Acc::Zero).unwrap();
    let acc = b.wgmma(shape, &WgmmaSrc::Regs(f1), &d1, Acc::Add(&acc)).unwrap();
    b.wgmma_commit().unwrap();
    b.wgmma_wait(0).unwrap();
    for (i, v) in acc.iter().enumerate() {
        let (r0, c0) = acc_coord(0, i);
        let row = tid.clone() / lit(32) * lit(16) + tid.clone() % lit(32) / lit(4) + lit(r0 as i64);
        let col = tid.clone() % lit(4) * lit(2) + lit(c0 as i64);
        b.store(gd, &(row * lit(n) + col), std::slice::from_ref(v), None).unwrap();
    }
    b.finish().unwrap()
}

fn halves(len: usize, seed: u64) -> (HostBuffer, Vec<f64>) {
    let mut s = seed;
    let mut buf = HostBuffer::zeroed(ScalarType::F16, len);
    let mut v = vec![];
    for i in 0..len {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let x = ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0;
        let bits = from_f64(ScalarType::F16, x);
        buf.set_bits(i, bits);
        v.push(to_f64(ScalarType::F16, bits));
    }
    (buf, v)
}

#[test]
fn an_mn_major_b_of_several_swizzle_atoms_times_a_from_registers_matches_brute_force() {
    for (n, seed) in [(128i64, 5u64), (192, 9)] {
        let (ab, a) = halves((64 * KT) as usize, seed);
        let (bb, bm) = halves((KT * n) as usize, seed + 1);
        let mut args = Args::new();
        args.buffer(ab).buffer(bb).buffer(HostBuffer::from_f32(&vec![f32::NAN; (64 * n) as usize]));
        run(&kernel(n), [1, 1, 1], &mut args).unwrap();
        let d = args.take_buffer(2).unwrap().to_f32().unwrap();
        let (kt, nn) = (KT as usize, n as usize);
        for m in 0..64 {
            for j in 0..nn {
                let terms: Vec<f64> = (0..kt).map(|k| a[m * kt + k] * bm[k * nn + j]).collect();
                let want: f64 = terms.iter().sum();
                let tol = terms.iter().map(|t| t.abs()).sum::<f64>() * 1e-6 + 1e-6;
                let got = d[m * nn + j] as f64;
                assert!((got - want).abs() <= tol, "n {n}: D[{m}][{j}] = {got}, expected {want}");
            }
        }
    }
}

#[test]
fn the_accumulator_fragment_of_a_k16_column_slice_is_the_a_register_fragment() {
    for t in 0..128 {
        for j in 0..4 {
            for i in 0..8 {
                let (r, c) = acc_coord(t, 8 * j + i);
                let (ar, ac) = a_coord(WgmmaType::BF16, t, i);
                assert_eq!((r, c), (ar, 16 * j + ac), "thread {t}, slice {j}, value {i}");
            }
        }
    }
}
