//! `tilekit selftest`: every kernel on random data, GPU against the interpreter and against an
//! independent CPU reference where there is one; a pass/fail line per kernel, exit code 1 on any
//! failure.
//!
//! ```text
//!   case ──make args (seeded, never zeros, outputs poisoned)──┬──► interpreter ──► Args'
//!                                                            └──► GPU (PTX→JIT) ─► Args''
//!   PASS iff every buffer of Args'' equals Args' (floats: same bits, or both NaN)
//!        and the CPU reference (where given) accepts Args''
//!
//!   library ops (run::SELFTEST_CASES): check::Problem ──api call on backend::Interp──► y'
//!                                                    └─api call on backend::Cuda───► y''
//!   PASS iff y'' matches the CPU reference and y' (within the op's tolerance)
//! ```

use std::process::ExitCode;
use std::time::Instant;

use tilekit_cuda::{Gpu, KernelCache};
use tilekit_ir::interp::{self, Args as KArgs, HostBuffer};
use tilekit_ir::{examples, Kernel, Lit, ScalarType};

use tilekit_ops::backend::{Backend as _, Cuda, Interp};
use tilekit_ops::check::{Op, Problem};

use crate::rng::Rng;
use crate::{outln, CliError};

pub mod wgmma;

/// Arguments of `tilekit selftest`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Only run cases whose name contains this text.
    #[arg(long)]
    pub filter: Option<String>,
}

/// A CPU check of the GPU's outputs.
pub type Reference = Box<dyn Fn(&KArgs, &KArgs) -> Result<(), String>>;

/// One selftest case.
pub struct Case {
    /// Name printed in the report.
    pub name: String,
    /// The kernel.
    pub kernel: Kernel,
    /// Grid.
    pub grid: [u32; 3],
    /// Inputs (outputs poisoned).
    pub args: KArgs,
    /// Optional independent reference: (inputs, GPU outputs) → ok or why not.
    pub reference: Option<Reference>,
}

/// Random contents of a buffer of type `t` (ints in 1..1000, floats in [-1, 1) without 0).
pub fn random_buffer(t: ScalarType, len: usize, rng: &mut Rng) -> HostBuffer {
    let mut b = HostBuffer::zeroed(t, len);
    for i in 0..len {
        let lit = if t.is_float() {
            Lit::float(t, f64::from(rng.f32())).expect("a float type")
        } else {
            Lit::int(t, rng.range(1, 1000)).expect("fits")
        };
        b.set_bits(i, lit.bits());
    }
    b
}

/// A buffer of poison: NaN for floats, a sentinel for integers.
pub fn poison(t: ScalarType, len: usize) -> HostBuffer {
    let lit = if t.is_float() {
        Lit::float(t, f64::NAN).expect("a float type")
    } else {
        Lit::from_bits(t, 0x5A5A_5A5A_5A5A_5A5A)
    };
    HostBuffer::filled(lit, len)
}

/// The cases available in this build.
pub fn cases(seed: u64) -> Result<Vec<Case>, CliError> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let ir = |e: tilekit_ir::IrError| CliError::Check {
        what: "selftest".into(),
        why: format!("a case's kernel could not be built: {e}"),
    };
    for t in tilekit_ptx::coverage::TYPES {
        let kernel = tilekit_ptx::coverage::every_op(t, false).map_err(ir)?;
        let w = tilekit_ir::op::valid_vector_widths(t).last().copied().unwrap_or(1);
        let grid = 4u32;
        let len = 64 * grid as usize * w;
        let mut args = KArgs::new();
        args.buffer(random_buffer(t, len, &mut rng))
            .buffer(poison(t, len))
            .int(rng.range(1, 64 * grid as i64));
        out.push(Case {
            name: format!("coverage {}", t.name()),
            kernel,
            grid: [grid, 1, 1],
            args,
            reference: None,
        });
    }
    {
        // more than 48 KiB of shared memory: launched with dynamic shared memory
        let kernel = tilekit_ptx::coverage::big_shared().map_err(ir)?;
        let n = 24 * 1024;
        let mut args = KArgs::new();
        args.buffer(random_buffer(ScalarType::F32, 2 * n, &mut rng))
            .buffer(poison(ScalarType::F32, 2 * n));
        let reference: Reference = Box::new(move |input, output| {
            let (Some(x), Some(y)) = (input.get_buffer(0), output.get_buffer(1)) else {
                return Err("missing buffers".into());
            };
            for blk in 0..2 {
                for i in 0..n {
                    if y.bits(blk * n + i) != x.bits(blk * n + n - 1 - i) {
                        return Err(format!(
                            "y[{}] is not x reversed within its block",
                            blk * n + i
                        ));
                    }
                }
            }
            Ok(())
        });
        out.push(Case {
            name: "big shared (96 KiB dynamic)".into(),
            kernel,
            grid: [2, 1, 1],
            args,
            reference: Some(reference),
        });
    }
    for stages in [1i64, 2, 3] {
        // bulk copies through a ring of mbarrier-tracked stages (sm_90): y = 2x + 1
        let kernel = tilekit_ptx::coverage::bulk_pipeline(stages).map_err(ir)?;
        let (grid, tiles) = (6u32, 7i64);
        let n = grid as usize * tiles as usize * tilekit_ptx::coverage::BULK_TILE as usize;
        let mut args = KArgs::new();
        args.buffer(random_buffer(ScalarType::F32, n, &mut rng))
            .buffer(poison(ScalarType::F32, n))
            .int(tiles);
        let reference: Reference = Box::new(move |input, output| {
            let (Some(x), Some(y)) = (input.get_buffer(0), output.get_buffer(1)) else {
                return Err("missing buffers".into());
            };
            let (x, y) = (x.to_f32().unwrap_or_default(), y.to_f32().unwrap_or_default());
            match (0..n).find(|&i| y.get(i) != Some(&(2.0 * x[i] + 1.0))) {
                Some(i) => {
                    Err(format!("y[{i}] = {:?}, want 2·x + 1 = {}", y.get(i), 2.0 * x[i] + 1.0))
                }
                None => Ok(()),
            }
        });
        out.push(Case {
            name: format!("bulk pipeline, {stages} stage{}", if stages == 1 { "" } else { "s" }),
            kernel,
            grid: [grid, 1, 1],
            args,
            reference: Some(reference),
        });
    }
    for stages in [2i64, 3] {
        // warp-specialised ring: a producer warp's bulk loads, two consumer warpgroups with a
        // named barrier between them, setmaxnreg (sm_90a; the interpreter's warp schedule)
        let kernel = tilekit_ptx::coverage::warp_ring(stages).map_err(ir)?;
        let (grid, tiles) = (4u32, 7i64);
        let n = grid as usize * tiles as usize * tilekit_ptx::coverage::RING_TILE as usize;
        let mut args = KArgs::new();
        args.buffer(random_buffer(ScalarType::F32, n, &mut rng))
            .buffer(poison(ScalarType::F32, n))
            .int(tiles);
        let reference: Reference = Box::new(move |input, output| {
            let (Some(x), Some(y)) = (input.get_buffer(0), output.get_buffer(1)) else {
                return Err("missing buffers".into());
            };
            let (x, y) = (x.to_f32().unwrap_or_default(), y.to_f32().unwrap_or_default());
            let want = tilekit_ptx::coverage::warp_ring_reference(&x);
            match (0..n).find(|&i| y.get(i).map(|v| v.to_bits()) != Some(want[i].to_bits())) {
                Some(i) => Err(format!("y[{i}] = {:?}, want {}", y.get(i), want[i])),
                None => Ok(()),
            }
        });
        out.push(Case {
            name: format!("warp-specialised ring, {stages} stages"),
            kernel,
            grid: [grid, 1, 1],
            args,
            reference: Some(reference),
        });
    }
    {
        // one bulk copy multicast to both blocks of a 2-block cluster
        let kernel = tilekit_ptx::coverage::multicast_pair().map_err(ir)?;
        let (clusters, t) = (5usize, tilekit_ptx::coverage::BULK_TILE as usize);
        let mut args = KArgs::new();
        args.buffer(random_buffer(ScalarType::F32, clusters * t, &mut rng))
            .buffer(poison(ScalarType::F32, 2 * clusters * t));
        let reference: Reference = Box::new(move |input, output| {
            let (Some(x), Some(y)) = (input.get_buffer(0), output.get_buffer(1)) else {
                return Err("missing buffers".into());
            };
            let (x, y) = (x.to_f32().unwrap_or_default(), y.to_f32().unwrap_or_default());
            for blk in 0..2 * clusters {
                let scale = (blk % 2 + 1) as f32;
                for i in 0..t {
                    let want = scale * x[(blk / 2) * t + i];
                    if y.get(blk * t + i) != Some(&want) {
                        return Err(format!("block {blk} element {i}: want {want}"));
                    }
                }
            }
            Ok(())
        });
        out.push(Case {
            name: "bulk multicast, 2-block cluster".into(),
            kernel,
            grid: [2 * clusters as u32, 1, 1],
            args,
            reference: Some(reference),
        });
    }
    for c in tilekit_ptx::coverage::tma::cases() {
        // a TMA load → compute → store round trip (sm_90): y = 2x + 1 clipped at the tensor's
        // edges, z = every box as it landed (zero fill outside)
        let kernel = c.kernel().map_err(ir)?;
        let x = random_buffer(ScalarType::F32, c.len(), &mut rng).to_f32().unwrap_or_default();
        let args = c.args(&x);
        let (name, grid) = (format!("TMA round trip {}", c.name), c.grid());
        let reference: Reference = Box::new(move |_, output| {
            let (want_y, want_z) = c.reference(&x);
            for (i, want) in [(1usize, want_y), (2, want_z)] {
                let got: Vec<u32> = output
                    .get_buffer(i)
                    .and_then(HostBuffer::to_f32)
                    .unwrap_or_default()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect();
                if let Some(k) = (0..want.len()).find(|&k| got.get(k) != Some(&want[k])) {
                    let what = if i == 1 { "y" } else { "z" };
                    return Err(format!(
                        "{what}[{k}] = {:?}, want {:#x}",
                        got.get(k).map(|b| format!("{b:#x}")),
                        want[k]
                    ));
                }
            }
            Ok(())
        });
        out.push(Case { name, grid, kernel, args, reference: Some(reference) });
    }
    for (t, vec) in [(ScalarType::F32, 4), (ScalarType::F16, 8), (ScalarType::I64, 2)] {
        for n in [1usize, 1000, 65_537] {
            let kernel = examples::copy(t, vec, 256).map_err(ir)?;
            let mut args = KArgs::new();
            args.buffer(random_buffer(t, n, &mut rng)).buffer(poison(t, n)).int(n as i64);
            let reference: Reference = Box::new(|input, output| {
                let (x, y) = (input.get_buffer(0), output.get_buffer(1));
                match (x, y) {
                    (Some(x), Some(y)) if x.as_bytes() == y.as_bytes() => Ok(()),
                    _ => Err("y differs from x".into()),
                }
            });
            out.push(Case {
                name: format!("copy {} v{vec} n={n}", t.name()),
                kernel,
                grid: [((n / (256 * vec)).max(1) as u32).min(64), 1, 1],
                args,
                reference: Some(reference),
            });
        }
    }
    Ok(out)
}

fn same(t: ScalarType, a: u64, b: u64) -> bool {
    if a == b {
        return true;
    }
    t.is_float() && {
        let fa = tilekit_ir::eval::to_f64(t, a);
        let fb = tilekit_ir::eval::to_f64(t, b);
        fa.is_nan() && fb.is_nan()
    }
}

fn compare(want: &KArgs, got: &KArgs) -> Result<(), String> {
    for i in 0..want.len() {
        if let (Some(w), Some(g)) = (want.get_buffer(i), got.get_buffer(i)) {
            if w.len() != g.len() {
                return Err(format!("buffer {i}: length {} vs {}", w.len(), g.len()));
            }
            let t = w.elem();
            let bad: Vec<usize> =
                (0..w.len()).filter(|&k| !same(t, w.bits(k), g.bits(k))).collect();
            if let Some(&k) = bad.first() {
                return Err(format!(
                    "buffer {i}: {} of {} elements differ; first at {k}: interpreter {:#x}, GPU {:#x}",
                    bad.len(),
                    w.len(),
                    w.bits(k),
                    g.bits(k)
                ));
            }
        }
    }
    Ok(())
}

/// One library op through the API on device tensors: the GPU's result against the CPU
/// reference and against the interpreter's run of the same call; the kernel's registers,
/// spills and build, and the median time of the API call (CUDA events).
fn ops_case(
    cuda: &Cuda,
    kernel: &str,
    shape: &[i64],
    dtype: ScalarType,
    seed: u64,
) -> Result<String, String> {
    let op = Op::named(kernel).map_err(|e| e.to_string())?;
    let p = Problem::new(op, shape, dtype, seed).map_err(|e| format!("inputs: {e}"))?;
    let (interp, _) = p.run(&Interp).map_err(|e| format!("interpreter: {e}"))?;
    let (g, xs) = p.run(cuda).map_err(|e| format!("GPU: {e}"))?;
    let c = g.compare();
    if !c.passed {
        return Err(format!("reference: {} mismatches, max abs {:.3e}", c.mismatches, c.max_abs));
    }
    let vs = tilekit_ops::host::compare(&g.got, &interp.got, c.tolerance);
    if !vs.passed {
        return Err(format!(
            "interpreter: {} elements differ, max abs {:.3e}",
            vs.mismatches, vs.max_abs
        ));
    }
    let mut y = cuda.empty(p.output_dtype(), &p.output_shape()).map_err(|e| e.to_string())?;
    let t = cuda.time(1, 3, |_| p.call_into(cuda, &xs, &mut y)).map_err(|e| format!("GPU: {e}"))?;
    let (k, _) = tilekit_ops::check::plan(op, shape, dtype).map_err(|e| e.to_string())?;
    let info = cuda.loaded(&k).map_err(|e| e.to_string())?;
    Ok(format!(
        "{} regs, {} B local; build {:.1} ms (JIT {:.1}); GPU {:.3} ms; max |GPU-interp| {:.1e}",
        info.registers(),
        info.local_bytes(),
        info.compile.total_ms,
        info.compile.jit.jit_ms,
        t.median_ms(),
        vs.max_abs
    ))
}

/// Runs `tilekit selftest`: a PASS/FAIL line per case on stdout, exit code 1 on any FAIL;
/// no usable GPU is [`CliError::NoGpu`] (exit code 1).
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    let gpu = Gpu::open(a.device)
        .map_err(|e| CliError::NoGpu { command: "selftest".into(), reason: e.to_string() })?;
    outln!("selftest on {} ({}), seed {}", gpu.props().name, gpu.props().target(), a.seed)?;
    let cache = KernelCache::open(KernelCache::default_dir()).ok();
    let cuda = Cuda::new(gpu.clone());
    let mut failed = 0;
    let mut total = 0;
    for case in cases(a.seed)? {
        if a.filter.as_ref().is_some_and(|f| !case.name.contains(f.as_str())) {
            continue;
        }
        total += 1;
        let started = Instant::now();
        let result = (|| -> Result<String, String> {
            let mut want = case.args.clone();
            interp::run(&case.kernel, case.grid, &mut want)
                .map_err(|e| format!("interpreter: {e}"))?;
            let (k, report) =
                gpu.compile(&case.kernel, cache.as_ref()).map_err(|e| e.to_string())?;
            let mut got = case.args.clone();
            // SAFETY: `k` is the compilation of `case.kernel`, and the interpreter just ran the
            // same kernel over the same arguments with its bounds checks (out-of-range accesses
            // are errors there)
            unsafe { gpu.run_ir(&k, &case.kernel, case.grid, &mut got) }
                .map_err(|e| e.to_string())?;
            compare(&want, &got)?;
            if let Some(r) = &case.reference {
                r(&case.args, &got).map_err(|e| format!("reference: {e}"))?;
            }
            Ok(format!(
                "{} regs, {} B local; build {:.1} ms (PTX {:.2}, JIT {:.1}, load {:.2}, cache {})",
                k.registers,
                k.local_bytes,
                report.total_ms,
                report.emit_ms,
                report.jit.jit_ms,
                report.load_ms,
                match report.cache {
                    tilekit_cuda::cache::CacheOutcome::Hit => "hit".to_string(),
                    tilekit_cuda::cache::CacheOutcome::Miss => "miss".to_string(),
                    tilekit_cuda::cache::CacheOutcome::Rebuilt { ref reason } =>
                        format!("rebuilt: {reason}"),
                }
            ))
        })();
        let ms = started.elapsed().as_secs_f64() * 1e3;
        match result {
            Ok(info) => outln!("PASS {:<28} {ms:8.1} ms  {info}", case.name)?,
            Err(why) => {
                failed += 1;
                outln!("FAIL {:<28} {ms:8.1} ms  {why}", case.name)?;
            }
        }
    }
    for (wc, case) in wgmma::cases(a.seed)? {
        if a.filter.as_ref().is_some_and(|f| !case.name.contains(f.as_str())) {
            continue;
        }
        total += 1;
        let started = Instant::now();
        let result = (|| -> Result<String, String> {
            let want = wgmma::interpreter(&wc, &case)?;
            let (k, report) =
                gpu.compile(&case.kernel, cache.as_ref()).map_err(|e| e.to_string())?;
            let mut got = case.args.clone();
            // SAFETY: as above: `k` compiles `case.kernel`, whose arguments the interpreter ran
            unsafe { gpu.run_ir(&k, &case.kernel, case.grid, &mut got) }
                .map_err(|e| e.to_string())?;
            wgmma::within_interpreter(&wc, &case.args, &want, &got)?;
            wgmma::within_reference(&wc, &case.args, &got)
                .map_err(|e| format!("reference: {e}"))?;
            Ok(format!(
                "{} regs, {} B local; build {:.1} ms; within f32 accumulation tolerance",
                k.registers, k.local_bytes, report.total_ms
            ))
        })();
        let ms = started.elapsed().as_secs_f64() * 1e3;
        match result {
            Ok(info) => outln!("PASS {:<28} {ms:8.1} ms  {info}", case.name)?,
            Err(why) => {
                failed += 1;
                outln!("FAIL {:<28} {ms:8.1} ms  {why}", case.name)?;
            }
        }
    }
    for (i, (kernel, shape, dtype)) in tilekit_ops::run::SELFTEST_CASES.iter().enumerate() {
        let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
        let name = format!("{kernel} {} {}", dims.join("x"), dtype.name());
        if a.filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        total += 1;
        let started = Instant::now();
        let result = ops_case(&cuda, kernel, shape, *dtype, a.seed.wrapping_add(i as u64));
        let ms = started.elapsed().as_secs_f64() * 1e3;
        match result {
            Ok(info) => outln!("PASS {name:<28} {ms:8.1} ms  {info}")?,
            Err(why) => {
                failed += 1;
                outln!("FAIL {name:<28} {ms:8.1} ms  {why}")?;
            }
        }
    }
    outln!("{} passed, {} failed", total - failed, failed)?;
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
