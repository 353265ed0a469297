//! wgmma coverage kernels: run by the interpreter against an f64 CPU reference (random inputs,
//! poisoned outputs), emitted for sm_90a and — where `ptxas` is available (`TILEKIT_PTXAS`) —
//! assembled; refused with a clear error on other targets.

use std::path::PathBuf;
use std::process::Command;

use tilekit_ir::eval::{from_f64, to_f64};
use tilekit_ir::interp::{self, Args, HostBuffer};
use tilekit_ir::wgmma::{Major, WgmmaType};
use tilekit_layout::swizzle::HopperSwizzle;
use tilekit_ptx::coverage::{wgmma, WgmmaCase, WgmmaTile};
use tilekit_ptx::{emit_kernel, Target};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

/// Runs the case in the interpreter; returns (D, reference, tolerance per element).
fn run_case(case: &WgmmaCase, seed: u64) -> (Vec<f32>, Vec<f64>, Vec<f64>) {
    let k = wgmma(case).unwrap_or_else(|e| panic!("{}: {e}", case.name()));
    let elem = case.ty.elem();
    let (n, kt) = (case.n as usize, case.kt as usize);
    let mut rng = Rng(seed);
    let mut fill = |len: usize| {
        let mut buf = HostBuffer::zeroed(elem, len);
        let mut vals = vec![];
        for i in 0..len {
            let bits = from_f64(elem, rng.next());
            buf.set_bits(i, bits);
            vals.push(case.ty.input(to_f64(elem, bits)));
        }
        (buf, vals)
    };
    let (ab, av) = fill(64 * kt);
    let (bb, bv) = fill(n * kt);
    let mut args = Args::new();
    args.buffer(ab).buffer(bb).buffer(HostBuffer::from_f32(&vec![f32::NAN; 64 * n]));
    interp::run(&k, [1, 1, 1], &mut args).unwrap_or_else(|e| panic!("{}: {e}", case.name()));
    let d = args.take_buffer(2).unwrap().to_f32().unwrap();
    let mut reference = vec![0f64; 64 * n];
    let mut tol = vec![0f64; 64 * n];
    for m in 0..64 {
        for j in 0..n {
            let terms = (0..kt).map(|x| av[m * kt + x] * bv[j * kt + x]);
            reference[m * n + j] = terms.clone().sum();
            // f32 accumulation of kt products: a few ulps of the sum of magnitudes
            tol[m * n + j] = terms.map(f64::abs).sum::<f64>() * 4.0 * f32::EPSILON as f64 + 1e-30;
        }
    }
    (d, reference, tol)
}

fn assert_close(case: &WgmmaCase, seed: u64) {
    let (d, r, tol) = run_case(case, seed);
    for (i, ((&x, &y), &t)) in d.iter().zip(&r).zip(&tol).enumerate() {
        assert!(
            (x as f64 - y).abs() <= t,
            "{} ({:?}): D[{}][{}] = {x}, reference {y} (tolerance {t})",
            case.name(),
            case,
            i / case.n as usize,
            i % case.n as usize
        );
    }
}

#[test]
fn selftest_cases_match_the_reference_in_the_interpreter() {
    for (i, case) in WgmmaCase::all().iter().enumerate() {
        assert_close(case, 17 + i as u64);
    }
}

fn extra_cases() -> Vec<WgmmaCase> {
    let k = |s| WgmmaTile::swizzled(s, Major::K);
    let mn = |s| WgmmaTile::swizzled(s, Major::MN);
    vec![
        // A interleaved, B MN-major (transposed) 128-byte swizzle
        WgmmaCase {
            ty: WgmmaType::F16,
            n: 64,
            kt: 32,
            a_regs: false,
            a_tile: WgmmaTile::interleaved(Major::K),
            b_tile: mn(HopperSwizzle::B128),
        },
        // A MN-major (transposed) 128-byte swizzle, B K-major 32-byte swizzle
        WgmmaCase {
            ty: WgmmaType::BF16,
            n: 32,
            kt: 16,
            a_regs: false,
            a_tile: mn(HopperSwizzle::B128),
            b_tile: k(HopperSwizzle::B32),
        },
        // B MN-major interleaved, A K-major 64-byte swizzle
        WgmmaCase {
            ty: WgmmaType::F16,
            n: 16,
            kt: 32,
            a_regs: false,
            a_tile: k(HopperSwizzle::B64),
            b_tile: WgmmaTile::interleaved(Major::MN),
        },
        // tf32: A interleaved, B 64-byte swizzle
        WgmmaCase {
            ty: WgmmaType::TF32,
            n: 16,
            kt: 16,
            a_regs: false,
            a_tile: WgmmaTile::interleaved(Major::K),
            b_tile: k(HopperSwizzle::B64),
        },
        // tf32 A in registers, B interleaved, N = 256
        WgmmaCase {
            ty: WgmmaType::TF32,
            n: 256,
            kt: 8,
            a_regs: true,
            a_tile: WgmmaTile::interleaved(Major::K),
            b_tile: WgmmaTile::interleaved(Major::K),
        },
    ]
}

#[test]
fn other_layouts_and_transposes_match_the_reference() {
    for (i, case) in extra_cases().iter().enumerate() {
        assert_close(case, 101 + i as u64);
    }
}

fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TILEKIT_PTXAS") {
        return Some(PathBuf::from(p));
    }
    let found = Command::new("ptxas").arg("--version").output().is_ok_and(|o| o.status.success());
    if found {
        return Some(PathBuf::from("ptxas"));
    }
    assert!(
        std::env::var_os("TILEKIT_REQUIRE_PTXAS").is_none(),
        "TILEKIT_REQUIRE_PTXAS is set but no ptxas was found"
    );
    None
}

#[test]
fn kernels_assemble_for_sm90a_and_are_refused_elsewhere() {
    let tmp = tempfile::Builder::new().prefix("tk-wgmma-").tempdir().unwrap();
    for case in WgmmaCase::all().into_iter().chain(extra_cases()) {
        let k = wgmma(&case).unwrap();
        let e = emit_kernel(&k, Target::Sm80).unwrap_err().to_string();
        assert!(e.contains("sm_90"), "{e}");
        let e = emit_kernel(&k, Target::Sm90).unwrap_err().to_string();
        assert!(e.contains("wgmma needs sm_90a (the target is sm_90)"), "{e}");
        let ptx = emit_kernel(&k, Target::Sm90a).unwrap();
        assert!(ptx.is_ascii());
        let mnemonic = format!(
            "wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{t}.{t}",
            case.n,
            case.ty.k(),
            t = case.ty.name()
        );
        assert_eq!(ptx.matches(&mnemonic).count() as i64, case.kt / case.ty.k() as i64, "{ptx}");
        assert!(
            ptx.contains("wgmma.fence.sync.aligned;")
                && ptx.contains("wgmma.wait_group.sync.aligned 0;")
        );
        if let Some(ptxas) = ptxas() {
            let path = tmp.path().join(format!("{}.ptx", k.name));
            std::fs::write(&path, &ptx).unwrap();
            let out = Command::new(&ptxas)
                .arg("-arch=sm_90a")
                .arg(&path)
                .arg("-o")
                .arg(tmp.path().join(format!("{}.cubin", k.name)))
                .output()
                .expect("ptxas runs");
            assert!(
                out.status.success(),
                "ptxas rejected {}:\n{}\n--- PTX ---\n{ptx}",
                k.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Register writes a wgmma reads (packed A fragments, copies of a shared accumulator input)
/// are emitted before its `wgmma.fence`, so ptxas has no `warpgroup.arrive` to inject.
/// An 8 × 16 f16 B tile in shared memory, K-major and interleaved, each thread's element its
/// thread index (as f16, also returned), made visible to wgmma (proxy fence + barrier).
fn b_tile(
    b: &tilekit_ir::KernelBuilder,
) -> (tilekit_ir::MemRef, tilekit_ir::wgmma::SmemMatrix, tilekit_ir::Val) {
    use tilekit_ir::wgmma::{interleaved, SmemMatrix};
    use tilekit_ir::ScalarType;
    let s = b.shared("b_tile", ScalarType::F16, 8 * 16).unwrap();
    let m = SmemMatrix::from_layout(
        &interleaved(Major::K, 8, 16, 2).unwrap(),
        Major::K,
        ScalarType::F16,
    )
    .unwrap();
    let tid = b.thread_id(tilekit_ir::Axis::X);
    let h = b.cvt(&tid, ScalarType::F16).unwrap();
    b.store(s, &tid, std::slice::from_ref(&h), None).unwrap();
    b.fence_proxy_async();
    b.barrier();
    (s, m, h)
}

#[test]
fn operand_registers_are_written_before_the_fence() {
    use tilekit_ir::wgmma::{Acc, WgmmaShape, WgmmaSrc};
    use tilekit_ir::{KernelBuilder, Lit, ScalarType};
    use tilekit_layout::Idx;
    let b = KernelBuilder::new("before_fence", [128, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let (s, m, h) = b_tile(&b);
    let tid = b.thread_id(tilekit_ir::Axis::X);
    let frag = vec![h.clone(); 8];
    let half = b.konst(Lit::f32(0.5));
    let c = vec![half; 4]; // one value four times: copied, not lent
    b.wgmma_fence().unwrap();
    let db = b.wgmma_desc(s, &Idx::lit(0), &m, 0).unwrap();
    let shape = WgmmaShape::new(WgmmaType::F16, 8).unwrap();
    let d = b.wgmma(shape, &WgmmaSrc::Regs(frag), &db, Acc::Add(&c)).unwrap();
    b.wgmma_commit().unwrap();
    b.wgmma_wait(0).unwrap();
    b.store(y, &(tid * Idx::lit(4)), &d, None).unwrap();
    let k = b.finish().unwrap();
    let ptx = emit_kernel(&k, Target::Sm90a).unwrap();
    let fence = ptx.find("wgmma.fence").unwrap();
    let mma = ptx.find("wgmma.mma_async").unwrap();
    let between = &ptx[fence..mma];
    // (descriptor arithmetic and the scale-d predicate may sit there: the fence orders
    // accumulator and A-fragment registers)
    assert!(
        !between.contains("mov.f32") && !between.contains(", {%h"),
        "accumulator or fragment writes between fence and wgmma:\n{between}"
    );
    // each accumulator register received its copy of the input before the fence
    let regs = &ptx[mma..];
    let regs = &regs[regs.find('{').unwrap() + 1..regs.find('}').unwrap()];
    for r in regs.split(", ") {
        assert!(ptx[..fence].contains(&format!("mov.f32 {r}, ")), "{r}:\n{ptx}");
    }
    if let Some(ptxas) = ptxas() {
        let tmp = tempfile::Builder::new().prefix("tk-wgmma-").tempdir().unwrap();
        let path = tmp.path().join("before_fence.ptx");
        std::fs::write(&path, &ptx).unwrap();
        let out = Command::new(&ptxas)
            .args(["-arch=sm_90a", "-v"])
            .arg(&path)
            .arg("-o")
            .arg(tmp.path().join("before_fence.cubin"))
            .output()
            .expect("ptxas runs");
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{log}");
        assert!(!log.contains("warpgroup.arrive is injected"), "{log}");
    }
}

/// A software-pipelined loop — its wgmma still running at the back edge, waited for at the top
/// of the next iteration — keeps the accumulators in the loop-carried registers: the rescale
/// `acc ·= s` writes them in place, the wgmma accumulates in them, and neither the back edge
/// nor the loop's exit copies them (a copy would read accumulators an in-flight wgmma writes,
/// and ptxas serializes the wgmmas: "C7514 … non wgmma instructions reading accumulator
/// registers").
#[test]
fn a_pipelined_loop_keeps_its_accumulators_in_place() {
    use tilekit_ir::wgmma::{Acc, WgmmaShape, WgmmaSrc};
    use tilekit_ir::{BinOp, KernelBuilder, Lit, ScalarType};
    use tilekit_layout::Idx;
    let b = KernelBuilder::new("pipelined_carry", [128, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let n = b.scalar_param("n", ScalarType::I32).unwrap();
    let (s, m, h) = b_tile(&b);
    let tid = b.thread_id(tilekit_ir::Axis::X);
    let frag = vec![h.clone(); 8];
    let scale = b.konst(Lit::f32(0.5));
    let init = vec![b.konst(Lit::f32(0.0)); 4];
    let shape = WgmmaShape::new(WgmmaType::F16, 8).unwrap();
    let zero = Idx::lit(0);
    let out = b
        .for_range(&zero, &n, &Idx::lit(1), &init, |b, _, acc| {
            // the previous iteration's wgmma is done: its accumulators may be read
            b.wgmma_wait(0)?;
            let scaled: Vec<_> =
                acc.iter().map(|v| b.binary(BinOp::Mul, v, &scale)).collect::<Result<_, _>>()?;
            b.wgmma_fence()?;
            let db = b.wgmma_desc(s, &Idx::lit(0), &m, 0)?;
            let d = b.wgmma(shape, &WgmmaSrc::Regs(frag.clone()), &db, Acc::Add(&scaled))?;
            b.wgmma_commit()?;
            Ok(d)
        })
        .unwrap();
    b.wgmma_wait(0).unwrap();
    b.store(y, &(tid * Idx::lit(4)), &out, None).unwrap();
    let k = b.finish().unwrap();
    let ptx = emit_kernel(&k, Target::Sm90a).unwrap();
    let mma = ptx.find("wgmma.mma_async").unwrap();
    let regs = &ptx[mma..];
    let regs: Vec<&str> =
        regs[regs.find('{').unwrap() + 1..regs.find('}').unwrap()].split(", ").collect();
    assert_eq!(regs.len(), 4, "{ptx}");
    for r in &regs {
        // scaled in place before the fence ...
        assert!(ptx[..mma].contains(&format!("mul.rn.f32 {r}, {r}, ")), "{r} in place:\n{ptx}");
        // ... and never copied: not at the back edge, not after the loop
        assert!(!ptx.contains(&format!(", {r};")), "{r} is read by a copy:\n{ptx}");
    }
    // the store after the loop reads them directly (after the final wait)
    let wait = ptx.rfind("wgmma.wait_group.sync.aligned 0;").unwrap();
    assert!(ptx[wait..].contains(regs[0]), "{ptx}");
    if let Some(ptxas) = ptxas() {
        let tmp = tempfile::Builder::new().prefix("tk-wgmma-").tempdir().unwrap();
        let path = tmp.path().join("pipelined_carry.ptx");
        std::fs::write(&path, &ptx).unwrap();
        let out = Command::new(&ptxas)
            .args(["-arch=sm_90a", "-v"])
            .arg(&path)
            .arg("-o")
            .arg(tmp.path().join("pipelined_carry.cubin"))
            .output()
            .expect("ptxas runs");
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{log}");
        assert!(!log.contains("serialized"), "{log}");
    }
}
