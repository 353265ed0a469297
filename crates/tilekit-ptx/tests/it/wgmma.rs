//! wgmma coverage kernels: run by the interpreter against an f64 CPU reference (random inputs,
//! poisoned outputs), emitted for sm_90a and — where `ptxas` is available (`TILEKIT_PTXAS`) —
//! assembled (without one, `ptxas_assembled_the_kernels_of_this_file` is reported as ignored:
//! docs/testing.md); refused with a clear error on other targets.

use std::collections::HashMap;
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

/// The integer PTX a descriptor is computed with, evaluated for a dynamic shared array at
/// `base` (what `mov.u32 r, tk_dynamic_smem` gives on the device): every register the
/// straight-line `mov`/`add`/`mad`/`shr`/`and`/`cvt`/`or` of literal operands defines.
fn eval_int_ptx(ptx: &str, base: u64) -> HashMap<String, u64> {
    let mut regs: HashMap<String, u64> = HashMap::new();
    for line in ptx.lines() {
        let line = line.trim();
        let code = line.split(';').next().unwrap_or("");
        let Some((op, rest)) = code.split_once(' ') else { continue };
        let args: Vec<&str> = rest.split(',').map(str::trim).collect();
        let val = |a: &str| -> Option<u64> {
            if a == "tk_dynamic_smem" {
                Some(base)
            } else if let Some(h) = a.strip_prefix("0x") {
                u64::from_str_radix(h, 16).ok()
            } else if a.starts_with('%') {
                regs.get(a).copied()
            } else {
                a.parse().ok()
            }
        };
        let v: Option<Vec<u64>> = args[1..].iter().map(|a| val(a)).collect();
        let u32w = |x: u64| x & 0xffff_ffff;
        let out = match (op, v.as_deref()) {
            ("mov.u32" | "mov.b32", Some(&[x])) => Some(u32w(x)),
            ("add.u32" | "add.s32", Some(&[x, y])) => Some(u32w(x + y)),
            ("mad.lo.u32" | "mad.lo.s32", Some(&[x, y, z])) => Some(u32w(x * y + z)),
            ("shr.u32", Some(&[x, y])) => Some(x >> y),
            ("and.b32", Some(&[x, y])) => Some(x & y),
            ("cvt.u64.u32", Some(&[x])) => Some(x),
            ("or.b64", Some(&[x, y])) => Some(x | y),
            _ => None,
        };
        match out {
            Some(x) => regs.insert(args[0].to_string(), x),
            None => regs.remove(args[0]),
        };
    }
    regs
}

/// Every wgmma's descriptors, as the emitted PTX computes them with the dynamic shared array
/// at several bases (0, and 0x400 as on sm_90, where the driver reserves the window's first
/// KiB, …), are the descriptors of the blocks the kernel names: start = the tile's shared
/// address + the block's offset, and the layout's LBO, SBO and swizzle. A shared array
/// declared first (12 bytes, as a probe's counters were) moves the tiles by 1024 bytes. The
/// emitter once put the block's offset in the descriptor's constant part as well as adding it
/// to the address: the OR was harmless for K-major blocks (32-byte steps land on clear bits of
/// an aligned tile) but doubled an MN-major 128-byte-swizzle tile's 2048-byte steps whenever
/// bits 11–12 of its address were clear — the probed attention kernel read V past the end of
/// shared memory on the GPU while the interpreter, which computes descriptors from the IR,
/// was right.
#[test]
fn descriptors_address_their_blocks_wherever_the_shared_window_starts() {
    use tilekit_ir::wgmma::{Acc, MatrixDescriptor, SmemMatrix, WgmmaShape, WgmmaSrc};
    use tilekit_ir::{KernelBuilder, ScalarType};
    use tilekit_layout::Idx;
    let elem = ScalarType::BF16;
    // V of attention d 128, 64 keys, three stages: P·V's B, MN-major, all 128 columns
    let v_layout = HopperSwizzle::B128.descriptor_atoms(64, 128, 2).unwrap();
    let mv = SmemMatrix::from_layout(&v_layout, Major::MN, elem).unwrap();
    // a Q slab (64 × 64), K-major: S's A and (here too) its B
    let slab = HopperSwizzle::B128.descriptor(64, 64, 2).unwrap();
    let mk = SmemMatrix::from_layout(&slab, Major::K, elem).unwrap();
    for pad in [false, true] {
        let b = KernelBuilder::new("desc_blocks", [128, 1, 1]).unwrap();
        let y = b.ptr_param("y", ScalarType::F32).unwrap();
        if pad {
            b.shared("pad", ScalarType::I32, 3).unwrap();
        }
        let sq = b.shared("q", elem, 64 * 64).unwrap();
        let sv = b.shared("v", elem, 3 * 64 * 128).unwrap();
        let tid = b.thread_id(tilekit_ir::Axis::X);
        let h = b.cvt(&tid, elem).unwrap();
        // (tile, element origin, matrix, block) of each descriptor, in the order emitted
        let mut want = vec![];
        b.wgmma_fence().unwrap();
        let s_shape = WgmmaShape::new(WgmmaType::BF16, 64).unwrap();
        let mut sc: Vec<tilekit_ir::Val> = vec![];
        for blk in 0..mk.blocks() {
            let dq = b.wgmma_desc(sq, &Idx::lit(0), &mk, blk).unwrap();
            let dk = b.wgmma_desc(sq, &Idx::lit(0), &mk, blk).unwrap();
            let acc = if sc.is_empty() { Acc::Zero } else { Acc::Add(&sc) };
            sc = b.wgmma(s_shape, &WgmmaSrc::Smem(dq), &dk, acc).unwrap();
            want.push(vec![("q", 0u32, &mk, blk), ("q", 0, &mk, blk)]);
        }
        let o_shape =
            WgmmaShape::new(WgmmaType::BF16, 128).unwrap().transposed(false, true).unwrap();
        let mut o = vec![b.f32(0.0); o_shape.acc_regs()];
        for stage in 0..3u32 {
            for j in 0..(64 / 16) {
                let origin = stage * 64 * 128;
                let dv = b.wgmma_desc(sv, &Idx::lit(origin as i64), &mv, j).unwrap();
                let frag = vec![h.clone(); 8];
                o = b.wgmma(o_shape, &WgmmaSrc::Regs(frag), &dv, Acc::Add(&o)).unwrap();
                want.push(vec![("v", origin, &mv, j)]);
            }
        }
        b.wgmma_commit().unwrap();
        b.wgmma_wait(0).unwrap();
        let out: Vec<_> = sc.iter().chain(&o).cloned().collect();
        for (i, vals) in out.chunks(4).enumerate() {
            let at = tid.clone() * Idx::lit(out.len() as i64) + Idx::lit(4 * i as i64);
            b.store(y, &at, vals, None).unwrap();
        }
        let k = b.finish().unwrap();
        let layout = tilekit_ptx::emit::shared_layout(&k);
        let at = |name: &str| {
            let i = k.shared.iter().position(|s| s.name == name).unwrap();
            layout.offsets[i] as u32
        };
        // (the attention kernel's case: one dynamic array, the tiles at offsets in it)
        assert!(layout.dynamic, "{layout:?}");
        assert_eq!(at("q"), if pad { 1024 } else { 0 });
        let ptx = emit_kernel(&k, Target::Sm90a).unwrap();
        let mmas: Vec<&str> = ptx.lines().filter(|l| l.contains("wgmma.mma_async")).collect();
        assert_eq!(mmas.len(), want.len(), "{ptx}");
        for base in [0u32, 0x400, 0x800, 0xc00, 0x1c00, 0x2400] {
            let regs = eval_int_ptx(&ptx, base as u64);
            for (mma, want) in mmas.iter().zip(&want) {
                // the descriptor operands: the 64-bit registers after the accumulators' braces
                let tail = &mma[mma.rfind('}').unwrap()..];
                let descs: Vec<&str> =
                    tail.split([',', ' ', ';']).filter(|t| t.starts_with("%rd")).collect();
                assert_eq!(descs.len(), want.len(), "{mma}");
                for (d, &(name, origin, m, blk)) in descs.iter().zip(want) {
                    let bits = regs.get(*d).copied();
                    let bits = bits.unwrap_or_else(|| panic!("{d} of {mma} unevaluated:\n{ptx}"));
                    let got = MatrixDescriptor::decode(bits);
                    let tile = base + at(name) + origin * 2;
                    let expect = m.descriptor(tile, blk);
                    assert_eq!(
                        got, expect,
                        "{name}[{origin}] block {blk}, pad {pad}, window at {base:#x}: \
                         the descriptor starts at {:#x}, the block at {:#x}",
                        got.start, expect.start
                    );
                }
            }
        }
    }
}

// ptxas assembled this file's kernels, or the summary counts one ignored test (docs/testing.md)
tilekit_ptx::ptxas_sentinel!();
