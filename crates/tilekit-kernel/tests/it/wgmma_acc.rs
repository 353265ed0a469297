//! The wgmma accumulator as a tile distribution: it agrees with the fragment coordinates of
//! the PTX ISA (figure "WGMMA .m64nNk16 register fragment layout for accumulator matrix D")
//! and with `tilekit_ir::wgmma::acc_coord`, covers the 64×N tile exactly once, and a Window
//! stores a wgmma's result through it (interpreter, against an f64 reference).

use tilekit_ir::eval::{from_f64, to_f64};
use tilekit_ir::interp::{run, Args, HostBuffer};
use tilekit_ir::wgmma::{acc_coord, Acc, Major, SmemMatrix, WgmmaShape, WgmmaSrc, WgmmaType};
use tilekit_ir::{Axis, KernelBuilder, Lit, ScalarType, Val};
use tilekit_kernel::lit;
use tilekit_kernel::{dist, DTile, View, Window};
use tilekit_layout::swizzle::HopperSwizzle;
use tilekit_layout::TensorDescriptor;

#[test]
fn the_distribution_is_the_isa_fragment_layout() {
    for n in [8i64, 16, 64, 136, 256] {
        let d = dist::wgmma_acc(n).unwrap();
        assert_eq!(
            (d.x_lengths(), d.num_threads(), d.thread_buffer_size()),
            (vec![64, n], 128, n / 2)
        );
        let mut seen = vec![0u32; (64 * n) as usize];
        for t in 0..128usize {
            for i in 0..(n / 2) as usize {
                let x = d.calculate_x(&[t as i64], &d.d_to_ys(i as i64)).unwrap();
                let (r, c) = acc_coord(t, i);
                assert_eq!(x, vec![r as i64, c as i64], "n {n} thread {t} register {i}");
                seen[(x[0] * n + x[1]) as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&s| s == 1), "n {n}: every element exactly once");
    }
    // entries read off the ISA figure: (thread, register) → (row, col)
    let d = dist::wgmma_acc(16).unwrap();
    let at = |t: i64, i: i64| d.calculate_x(&[t], &d.d_to_ys(i)).unwrap();
    assert_eq!(at(0, 0), vec![0, 0]);
    assert_eq!(at(0, 1), vec![0, 1]);
    assert_eq!(at(0, 2), vec![8, 0]);
    assert_eq!(at(0, 3), vec![8, 1]);
    assert_eq!(at(1, 0), vec![0, 2]);
    assert_eq!(at(3, 1), vec![0, 7]);
    assert_eq!(at(4, 0), vec![1, 0]);
    assert_eq!(at(31, 3), vec![15, 7]);
    assert_eq!(at(0, 4), vec![0, 8]); // the next 8 columns
    assert_eq!(at(32, 0), vec![16, 0]); // warp 1
    assert_eq!(at(127, 7), vec![63, 15]);
}

#[test]
fn a_window_stores_the_accumulator() {
    const N: i64 = 32;
    const KT: i64 = 16;
    let b = KernelBuilder::new("wg_window", [128, 1, 1]).unwrap();
    let ga = b.ptr_param("a", ScalarType::BF16).unwrap();
    let gb = b.ptr_param("b", ScalarType::BF16).unwrap();
    let gd = b.tensor_param("d", ScalarType::F32, 2).unwrap();
    let tid = b.thread_id(Axis::X);
    let la = HopperSwizzle::B32.descriptor(64, KT, 2).unwrap();
    let lb = HopperSwizzle::B32.descriptor(N, KT, 2).unwrap();
    let mut tiles = vec![];
    for (name, g, rows, layout) in [("a", ga, 64, &la), ("b", gb, N, &lb)] {
        let m = SmemMatrix::from_layout(layout, Major::K, ScalarType::BF16).unwrap();
        let s = b.shared(name, ScalarType::BF16, m.extent()).unwrap();
        let lv: TensorDescriptor<Val> = layout.lift();
        b.for_range(&lit(0), &lit(rows * KT / 128), &lit(1), &[], |b, i, _| {
            let idx = i * lit(128) + tid.clone();
            let off = lv.calculate_offset(&[idx.clone() / lit(KT), idx.clone() % lit(KT)])?;
            let v = b.load(g, &idx, 1, None)?;
            b.store(s, &off, &v, None)?;
            Ok(vec![])
        })
        .unwrap();
        tiles.push((s, m));
    }
    b.fence_proxy_async();
    b.barrier();
    b.wgmma_fence().unwrap();
    let da = b.wgmma_desc(tiles[0].0, &lit(0), &tiles[0].1, 0).unwrap();
    let db = b.wgmma_desc(tiles[1].0, &lit(0), &tiles[1].1, 0).unwrap();
    let shape = WgmmaShape::new(WgmmaType::BF16, N as u32).unwrap();
    let acc = b.wgmma(shape, &WgmmaSrc::Smem(da), &db, Acc::Zero).unwrap();
    b.wgmma_commit().unwrap();
    b.wgmma_wait(0).unwrap();
    let dist = dist::wgmma_acc(N).unwrap();
    let view = View::global(&gd, 2).unwrap();
    let w = Window::new(&b, &view, &[64, N], &[lit(0), lit(0)], &dist).unwrap();
    w.store(&b, &DTile { dist, elem: ScalarType::F32, regs: acc }).unwrap();
    let k = b.finish().unwrap();

    let mut s = 11u64;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let mut fill = |len: usize| {
        let mut buf = HostBuffer::zeroed(ScalarType::BF16, len);
        let mut v = vec![];
        for i in 0..len {
            let bits = from_f64(ScalarType::BF16, next());
            buf.set_bits(i, bits);
            v.push(to_f64(ScalarType::BF16, bits));
        }
        (buf, v)
    };
    let (ab, av) = fill((64 * KT) as usize);
    let (bb, bv) = fill((N * KT) as usize);
    let mut args = Args::new();
    args.buffer(ab).buffer(bb).buffer(HostBuffer::from_f32(&vec![f32::NAN; (64 * N) as usize]));
    for v in [64, N, N, 1] {
        args.scalar(Lit::int(ScalarType::I32, v).unwrap());
    }
    run(&k, [1, 1, 1], &mut args).unwrap();
    let d = args.take_buffer(2).unwrap().to_f32().unwrap();
    let kt = KT as usize;
    for m in 0..64 {
        for n in 0..N as usize {
            let terms: Vec<f64> = (0..kt).map(|x| av[m * kt + x] * bv[n * kt + x]).collect();
            let want: f64 = terms.iter().sum();
            let tol = terms.iter().map(|t| t.abs()).sum::<f64>() * 1e-6 + 1e-30;
            let got = d[m * N as usize + n] as f64;
            assert!((got - want).abs() <= tol, "D[{m}][{n}] = {got}, want {want}");
        }
    }
}
