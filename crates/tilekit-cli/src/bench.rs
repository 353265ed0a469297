//! `tilekit bench KERNEL|all`: GPU timings as ratios to a device-to-device copy measured in the
//! same process.
//!
//! ```text
//!   for each kernel:  inputs (rotated sets when they fit in L2) ──► warm-up ×3
//!                     CUDA events around each of ≥ 20 runs ──► median
//!   baselines:        cuMemcpyDtoD of --mib MiB (default 1 GiB: the device's copy rate), and
//!                     of each row's own byte count ("x same"), timed the same way
//!   report:           GB/s = (bytes read + bytes written) / median,
//!                     x copy = kernel GB/s / 1 GiB copy GB/s, x same = … / same-size copy GB/s
//! ```
//!
//! Library kernels are timed as API calls (`api::softmax_into(&cuda, &x, &mut y)`, …) on device
//! tensors: what a user of the library gets. `tilekit bench launch` measures the host side of
//! such a call instead (see [`crate::bench_launch`]).

use std::process::ExitCode;

use tilekit_cuda::{Gpu, KernelCache};
use tilekit_ir::interp::Args as KArgs;
use tilekit_ir::{examples, ScalarType};
use tilekit_ops::backend::{Backend as _, Cuda};
use tilekit_ops::check::{Op, Problem};
use tilekit_ops::reduce::CoopTuning;
use tilekit_ops::tuning::Tuning;
use tilekit_ops::OpsError;

use clap::builder::{PossibleValuesParser, RangedU64ValueParser};

use crate::rng::Rng;
use crate::selftest::random_buffer;
use crate::{outln, CliError};

/// The largest `--mib` (the copy example holds three host copies of it).
pub const MAX_MIB: u64 = 16 * 1024;

/// Arguments of `tilekit bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Kernel to time (the list below), `copy-example`, `all`, or `launch` (the host cost of
    /// an API call).
    #[arg(default_value = "all", value_parser = bench_names(), hide_possible_values = true)]
    pub kernel: String,
    /// Size of the data the copy example and the baseline read, in MiB.
    #[arg(long, default_value_t = 1024,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_MIB))]
    pub mib: usize,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 20, value_parser = RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub reps: usize,
    /// Back-to-back calls between each pair of timing events, reported per call
    /// (`Gpu::set_timed_calls`): 1 (the default) times every call alone, launch gap included;
    /// e.g. 10 times a stream of calls as a program issues them — for kernels of tens of
    /// microseconds (permute 512×512×256, the skinny GEMM) the GPU's per-launch gap is then
    /// paid once per kernel boundary, not once per event pair. Applies to every timed region
    /// of the run, the copy and cuBLASLt baselines included.
    #[arg(long, default_value_t = 1,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub back_to_back: usize,
    /// Launch the library kernels that wait on the prior grid (copy, permute and transpose,
    /// the elementwise ops, row sum / max and the register softmax: `griddepcontrol.wait`
    /// before their first global access) as
    /// programmatic dependents of the kernel before them (`Gpu::set_programmatic_launch`,
    /// Hopper and later; no effect before sm_90): the next grid launches while the previous one
    /// drains, hiding the per-launch gap between two calls. Meaningful with `--back-to-back N`
    /// (N calls between two events; a single call per event pair has no kernel before it to
    /// overlap). The copy baseline (`cuMemcpyDtoD`), the copy example and the other kernels
    /// launch as before. Recorded as `pdl` in `--json`.
    #[arg(long)]
    pub pdl: bool,
    /// `launch` only: API calls to time (in 10 batches, after warm-up).
    #[arg(long, default_value_t = 10_000,
          value_parser = RangedU64ValueParser::<usize>::new().range(100..=10_000_000))]
    pub calls: usize,
    /// Softmax rows too long for one block's registers take the cooperative kernel
    /// with this shape instead of what the device's tuning picks: `THREADS,PER_THREAD` (slices
    /// in registers, `reduce::coop`: threads per block, elements a thread holds), e.g. `256,32`;
    /// or `THREADS,PER_THREAD,KIBk` (slices in shared memory, `reduce::coop_smem`: at most KIB
    /// KiB a block, PER_THREAD elements a thread per step), e.g. `256,16,32k`; `,bulk` after
    /// it brings the slices in with bulk copies (sm_90, aligned rows), e.g. `256,32,64k,bulk`;
    /// `,1exp` computes one exponential per element (`reduce::coop_smem`'s one-exponential
    /// kernel), e.g. `256,16,32k,1exp` or `256,32,64k,bulk,1exp`; `,ringS[,lagD]` takes the
    /// ring kernel (`reduce::ring`: a resident grid walking slices of KIB KiB through S slots,
    /// each row waited for D slices after publishing, lag 1 by default), e.g.
    /// `1024,8,32k,ring6,lag2`; `,cluster` makes a row's blocks one thread-block cluster
    /// meeting through distributed shared memory (sm_90, rows of at most 16 blocks), e.g.
    /// `256,32,64k,1exp,cluster`; `,early` (after `1exp`) publishes each block's (max, sum)
    /// before pass 2, e.g. `256,32,64k,1exp,early`; `,spec` takes the counter kernel's ticket
    /// speculatively (step 0's loads in flight with the ticket's atomic), e.g.
    /// `256,32,64k,spec`.
    #[arg(long, value_parser = parse_coop)]
    pub softmax_coop: Option<CoopTuning>,
    /// `gemm` only: one shape `MxNxK` instead of issue 13's list.
    #[arg(long)]
    pub gemm_shape: Option<String>,
    /// `gemm` only: strided batches — this many products of `--gemm-shape` (default
    /// 512x512x512) in one call, tilekit's batched Hopper kernel (one launch) beside cuBLASLt
    /// strided batched and beside one launch per entry ([`crate::bench_gemm_batched`]).
    #[arg(long)]
    pub batch: Option<usize>,
    /// `gemm` only: the operands' storage for the Hopper kernel and its cuBLASLt baseline, BLAS
    /// letters of A then B for a row-major `C = A·B` (`n`: row-major, `t`: column-major): `nt`
    /// (A row-major, B column-major = a weight `N × K`: both K-contiguous), `nn` (both
    /// row-major), `tn`, `tt`.
    #[arg(long, default_value = "nt", value_parser = ["nt", "nn", "tn", "tt"])]
    pub layout: String,
    /// `gemm` only: time only the Hopper kernel's configurations (the `sm90` columns) whose
    /// label contains one of these `|`-separated texts, as `tune gemm --config` does with one
    /// (labels as the table's last column and the progress lines print them: `bn 144, 8
    /// stages, overlap, persistent, grouped 8, tma store, bm 64`, `staged, …`, `api, … split k
    /// 2`), e.g. `--gemm-config "bn 256, 3 stages, overlap, persistent, grouped 8, tma
    /// store|bm 64"`; or `best`: per shape the configurations that won on the H100
    /// ([`crate::bench_gemm::BEST`], exact labels, layout nt) — 2 to 4 a shape instead of
    /// about 35. cuBLASLt and the tilekit (API) columns are timed as before. A text that no
    /// configuration of the table's shapes contains is refused, naming it and listing the
    /// labels; a shape none of whose labels match gets a warning and empty sm90 cells.
    #[arg(long, value_parser = crate::bench_gemm::parse_gemm_config)]
    pub gemm_config: Option<crate::bench_gemm::GemmConfigFilter>,
    /// `gemm` only: one input type. `f32` times the CUDA-core kernel (its presets and three
    /// variants) beside cuBLAS SGEMM (no TF32) at 8192³ and 4096³ (or `--gemm-shape`); f16 /
    /// bf16 keep their rows of the tensor-core table.
    #[arg(long, value_parser = crate::dtype::kernel_dtype())]
    pub dtype: Option<ScalarType>,
    /// `attention` only: time only the kernel variants whose name contains this text
    /// (`plain/bn64`, `overlap/bn128`, `pingpong/bn64`, `plain/bn128/tma/s3` (3 stages),
    /// `plain/bn128/tma/c3` (3 consumer warpgroups), …: `attention_sm90::variants`), e.g.
    /// `pingpong`, `bn64` or `/c3`; `recommended` times per case only the schedule
    /// `api::attention` runs (`AttnConfig::recommended`), in one column.
    #[arg(long)]
    pub attention_variant: Option<String>,
    /// `attention` only: one case `D,SEQ` or `D,SEQ,causal` (head dim, sequence length at
    /// 16384 tokens) instead of the whole grid, e.g. `128,4096` — one kernel to profile.
    #[arg(long, value_parser = crate::bench_attention::parse_case)]
    pub attention_case: Option<(i64, i64, bool)>,
    /// `attention` only: run the `--attention-case` with the timeline probe (the one variant
    /// `--attention-variant` names, e.g. `plain/bn128/tma`) and write each warpgroup's events
    /// to FILE (CSV if it ends in `.csv`, else JSON); prints the waits' means and shares and
    /// the tensor-busy estimate per warpgroup ([`crate::bench_attention::run_probe`]).
    #[arg(long)]
    pub probe: Option<std::path::PathBuf>,
    /// `--probe` only: keep the events of blocks 0..N (linear block id: query block, then
    /// head, then batch).
    #[arg(long, default_value_t = 132,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub probe_blocks: usize,
    /// `--probe` only: also draw the timelines of the first 4 kept blocks into this SVG.
    #[arg(long)]
    pub probe_svg: Option<std::path::PathBuf>,
    /// Print one JSON object per kernel instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
}

/// `THREADS,PER_THREAD` (slices in registers: elements a thread holds),
/// `THREADS,PER_THREAD,KIBk` (slices in shared memory: at most KIB KiB a block, PER_THREAD
/// elements a thread per step, loaded by every thread) or `THREADS,PER_THREAD,KIBk,bulk` (the
/// same, brought in by bulk copies where rows are 16-byte aligned), each shared-memory form
/// optionally followed by `,1exp` (one exponential per element, `CoopTuning::one_exp`),
/// `,2rows`, `,pipe`, `,cluster` (a row's blocks as one thread-block cluster,
/// `CoopTuning::cluster`) or `,ringS[,lagD]`, as a [`CoopTuning`], checked as a saved tuning
/// would be.
///
/// ```
/// use tilekit_cli::bench::parse_coop;
/// let c = parse_coop("512,64").unwrap();
/// assert_eq!((c.threads, c.per_thread, c.smem_kib, c.bulk), (512, 64, 0, false));
/// let s = parse_coop("256,16,32k").unwrap();
/// assert_eq!((s.threads, s.per_thread, s.smem_kib, s.bulk), (256, 16, 32, false));
/// assert!(parse_coop("256,32,64k,bulk").unwrap().bulk);
/// assert!(parse_coop("500,64").unwrap_err().contains("multiple of 32"));
/// assert!(parse_coop("512").is_err() && parse_coop("512,65").is_err());
/// assert!(parse_coop("256,16,32").unwrap_err().contains("KiB"));   // no `k`
/// assert!(parse_coop("256,16,201k").unwrap_err().contains("1..=200"));
/// assert!(parse_coop("256,16,32k,fast").unwrap_err().contains("bulk"));
/// let o = parse_coop("256,16,32k,1exp").unwrap();
/// assert_eq!((o.smem_kib, o.bulk, o.one_exp), (32, false, true));
/// let ob = parse_coop("256,32,64k,bulk,1exp").unwrap();
/// assert_eq!((ob.bulk, ob.one_exp), (true, true));
/// assert!(!parse_coop("256,32,64k,bulk").unwrap().one_exp);
/// assert!(parse_coop("256,32,64k,1exp,bulk").is_err());          // bulk comes first
/// assert!(parse_coop("256,32,64k,bulk,1exp,1exp").is_err());
/// assert_eq!(parse_coop("256,16,32k,2rows").unwrap().rows, 2);
/// assert!(parse_coop("256,16,32k,bulk,2rows").is_err());          // 2rows takes loads
/// assert!(parse_coop("256,16,32k,pipe").unwrap().pipe);
/// assert!(parse_coop("256,16,32k,bulk,pipe").is_err());
/// assert!(parse_coop("256,32,64k,1exp,cluster").unwrap().cluster);  // a row's blocks: a cluster
/// assert!(parse_coop("256,32,64k,2rows,cluster").is_err() && parse_coop("256,32,cluster").is_err());
/// assert!(parse_coop("256,32,64k,1exp,early").unwrap().early);  // publish before pass 2
/// assert!(parse_coop("256,32,64k,early").is_err());              // early takes 1exp
/// assert!(parse_coop("256,32,64k,1exp,spec").unwrap().spec);     // the ticket speculated
/// assert!(parse_coop("256,32,64k,1exp,cluster,spec").is_err());  // spec takes the counter
/// assert_eq!(parse_coop("512,32,96k,1exp,cluster,held4").unwrap().held, 4); // 4 vectors held
/// assert!(parse_coop("512,32,96k,cluster,held4").is_err());      // held takes 1exp
/// let r = parse_coop("1024,8,32k,ring6,lag2").unwrap();
/// assert_eq!((r.ring, r.lag), (6, 2));
/// assert_eq!(parse_coop("512,8,32k,ring3").unwrap().lag, 1);        // lag 1 by default
/// assert!(parse_coop("512,8,32k,ring3,lag2").is_err());             // slots ≥ lag + 2
/// assert!(parse_coop("512,8,32k,lag2").is_err() && parse_coop("512,8,32k,ringx").is_err());
/// ```
pub fn parse_coop(s: &str) -> Result<CoopTuning, String> {
    let bad = || {
        format!(
            "`{s}`: expected THREADS,PER_THREAD[,KIBk[,bulk][,1exp][,2rows][,ringS[,lagD]]], e.g. \
             256,32 or 256,16,32k"
        )
    };
    let mut fields = s.split(',');
    let (Some(t), Some(p)) = (fields.next(), fields.next()) else { return Err(bad()) };
    let threads: u32 = t.trim().parse().map_err(|_| bad())?;
    let per_thread: i64 = p.trim().parse().map_err(|_| bad())?;
    let smem_kib = match fields.next() {
        None => 0,
        Some(f) => {
            let f = f.trim();
            let kib = f.strip_suffix(['k', 'K']).ok_or_else(|| {
                format!("`{f}` in `{s}`: the shared-memory slice is KiB with a `k`, e.g. 32k")
            })?;
            let kib: u32 = kib.parse().map_err(|_| bad())?;
            if !(1..=200).contains(&kib) {
                return Err(format!("shared-memory slice {kib} KiB: must be 1..=200"));
            }
            kib
        }
    };
    let mut words = fields.map(str::trim).peekable();
    let bulk = words.next_if_eq(&"bulk").is_some();
    let one_exp = words.next_if_eq(&"1exp").is_some();
    let rows = if words.next_if_eq(&"2rows").is_some() { 2 } else { 1 };
    let pipe = words.next_if_eq(&"pipe").is_some();
    let cluster = words.next_if_eq(&"cluster").is_some();
    let early = words.next_if_eq(&"early").is_some();
    let spec = words.next_if_eq(&"spec").is_some();
    let mut number = |prefix: &str| -> Result<Option<u32>, String> {
        match words.next_if(|w| w.starts_with(prefix)) {
            None => Ok(None),
            Some(w) => w[prefix.len()..].parse().map(Some).map_err(|_| {
                format!("`{w}` in `{s}`: expected {prefix} and a number, e.g. {prefix}6")
            }),
        }
    };
    let held = number("held")?.unwrap_or(0);
    let ring = number("ring")?.unwrap_or(0);
    let lag = number("lag")?.unwrap_or(if ring > 0 { 1 } else { 0 });
    if let Some(f) = words.next() {
        return Err(format!(
            "`{f}` in `{s}`: after the slice come only `bulk`, then `1exp`, then `2rows`, then \
             `pipe`, then `cluster`, then `early`, then `spec`, then `heldN`, then `ringS` and `lagD` \
             (each at most once)"
        ));
    }
    if ring > 0 && (bulk || one_exp || rows != 1 || smem_kib == 0 || ring < lag + 2 || lag < 1) {
        return Err(format!(
            "`{s}`: `ringS` takes a shared-memory slice without bulk, 1exp or 2rows, and S ≥ \
             lag + 2 with lag ≥ 1 (e.g. 1024,8,32k,ring6,lag2)"
        ));
    }
    if pipe && (bulk || one_exp || rows != 1 || smem_kib == 0 || ring > 0) {
        return Err(format!(
            "`{s}`: `pipe` takes a shared-memory slice brought in by loads (no bulk, 1exp, \
             2rows or ring)"
        ));
    }
    if cluster && (rows != 1 || smem_kib == 0 || ring > 0) {
        return Err(format!(
            "`{s}`: `cluster` takes a shared-memory slice of one row a block (no 2rows or ring)"
        ));
    }
    if early && (!one_exp || bulk || rows != 1 || pipe || ring > 0) {
        return Err(format!(
            "`{s}`: `early` takes a shared-memory slice brought in by loads with `1exp` (no bulk, \
             2rows, pipe or ring), e.g. 256,32,64k,1exp,early or 256,32,64k,1exp,cluster,early"
        ));
    }
    if spec && (bulk || rows != 1 || pipe || cluster || early || ring > 0 || smem_kib == 0) {
        return Err(format!(
            "`{s}`: `spec` takes a shared-memory slice brought in by loads, one row a block and \
             the counter exchange (no bulk, 2rows, pipe, cluster, early or ring), e.g. \
             256,32,64k,spec or 256,32,64k,1exp,spec"
        ));
    }
    if held > 0 && (!one_exp || bulk || rows != 1 || pipe || early || smem_kib == 0) || held > 16 {
        return Err(format!(
            "`{s}`: `heldN` (N = 1..=16 vectors a thread in registers) takes a shared-memory \
             slice brought in by loads with `1exp` (no bulk, 2rows, pipe or early), e.g. \
             512,32,96k,1exp,cluster,held4"
        ));
    }
    if ring == 0 && lag > 0 {
        return Err(format!("`{s}`: `lagD` only goes with `ringS`"));
    }
    if rows == 2 && (bulk || one_exp || smem_kib == 0) {
        return Err(format!(
            "`{s}`: `2rows` takes a shared-memory slice brought in by loads (no bulk, no 1exp)"
        ));
    }
    if threads == 0 || !threads.is_multiple_of(32) || threads > 1024 {
        return Err(format!("threads {threads}: must be a multiple of 32 in 32..=1024"));
    }
    if !(1..=64).contains(&per_thread) {
        return Err(format!("elements per thread {per_thread}: must be 1..=64"));
    }
    Ok(CoopTuning {
        threads,
        per_thread,
        smem_kib,
        bulk,
        one_exp,
        rows,
        ring,
        lag,
        pipe,
        cluster,
        early,
        spec,
        held,
    })
}

/// One measured kernel.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Measurement {
    /// Kernel name.
    pub kernel: String,
    /// Device name.
    pub device: String,
    /// Bytes read plus written per run.
    pub bytes: u64,
    /// Median milliseconds.
    pub median_ms: f64,
    /// GB/s (1e9 bytes per second).
    pub gb_per_s: f64,
    /// Same-process device-to-device copy GB/s (`cuMemcpyDtoD` of `--mib` MiB, default 1 GiB:
    /// the device's copy rate, one baseline for every row).
    pub copy_gb_per_s: f64,
    /// `gb_per_s / copy_gb_per_s`.
    pub ratio_to_copy: f64,
    /// Same-process `cuMemcpyDtoD` of this row's own byte count (`bytes / 2` copied), timed
    /// the same way: what a copy of the same data pays per call, launch boundary included.
    pub same_copy_gb_per_s: f64,
    /// `gb_per_s / same_copy_gb_per_s`.
    pub ratio_to_same_copy: f64,
    /// For matrix products: TFLOP/s.
    pub tflops: Option<f64>,
    /// For matrix products: cuBLAS TFLOP/s on the same problem in the same process.
    pub cublas_tflops: Option<f64>,
    /// Registers per thread of the kernel (library ops).
    pub registers: Option<i32>,
    /// Local memory (spills, stack) per thread in bytes (library ops).
    pub local_bytes: Option<i32>,
    /// The kernel the op launched and its grid (library ops), e.g. `softmax_coop [32768, 1, 1]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launched: Option<String>,
    /// Calls between each pair of timing events (`--back-to-back`); the time is per call.
    pub back_to_back: usize,
    /// Whether programmatic dependent launch was on (`--pdl`).
    pub pdl: bool,
}

/// The names `bench` takes: the benchmark set's kernels, `copy-example` and `all`.
///
/// ```
/// let names = tilekit_cli::bench::names();
/// assert!(names.contains(&"softmax") && names.contains(&"copy-example") && names.contains(&"all"));
/// ```
pub fn names() -> Vec<&'static str> {
    let mut known: Vec<&str> = vec!["all", "copy-example", "launch", "attention"];
    for (k, _, _) in BENCH_SET {
        if !known.contains(k) {
            known.push(k);
        }
    }
    known
}

fn bench_names() -> PossibleValuesParser {
    PossibleValuesParser::new(names())
}

/// The benchmark set with shapes and dtypes, for `tilekit bench --help`.
///
/// ```
/// assert!(tilekit_cli::bench::kernels_help().contains("transpose 16384x16384 bf16"));
/// ```
pub fn kernels_help() -> String {
    let mut s = String::from(
        "launch: the host cost of one API call on an already-compiled kernel (--calls calls of \
         api::copy_into on 1x256 f32) beside a raw driver launch and an empty kernel\n\n\
         gemm: TFLOP/s on issue 13's shapes, tilekit beside cuBLASLt (best of its heuristic's \
         first 8 algorithms) in the same process\n\n\
         attention: TFLOP/s of the Hopper attention forward (bf16, d 64/128/256, causal or not, \
         seq 512..16384 at 16384 tokens), every variant (schedule x key tile; \
         --attention-variant TEXT keeps those whose name contains TEXT) timed and checked on \
         sampled rows; with --probe FILE (and one --attention-case and variant) the timeline \
         probe's events and a summary of where each warpgroup waits\n\n\
         Benchmark set (kernel shape dtype):\n  copy-example (the IR example copy, f32, --mib MiB)\n",
    );
    for (k, shape, t) in BENCH_SET {
        let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
        s += &format!("  {k} {} {t}\n", dims.join("x"));
    }
    s
}

/// A GPU error while doing `what`.
fn cuda(what: &str) -> impl Fn(tilekit_cuda::CudaError) -> CliError + '_ {
    move |e| CliError::Gpu { what: what.to_string(), reason: e.to_string() }
}

/// The table header's note on how calls were timed: empty for one call per event pair.
///
/// ```
/// assert_eq!(tilekit_cli::bench::timed_calls_note(1), "");
/// assert_eq!(tilekit_cli::bench::timed_calls_note(10), "; timed as 10 back-to-back calls per event pair");
/// ```
pub fn timed_calls_note(calls: usize) -> String {
    if calls > 1 {
        format!("; timed as {calls} back-to-back calls per event pair")
    } else {
        String::new()
    }
}

/// The table header's note on programmatic dependent launch (`--pdl`): empty when off, and
/// saying so where the device (compute capability `cc`) cannot launch that way.
///
/// ```
/// use tilekit_cli::bench::pdl_note;
/// assert_eq!(pdl_note(false, (9, 0)), "");
/// assert_eq!(pdl_note(true, (9, 0)), "; programmatic dependent launch on");
/// assert!(pdl_note(true, (8, 0)).contains("no effect before sm_90"));
/// ```
pub fn pdl_note(pdl: bool, cc: (i32, i32)) -> &'static str {
    match (pdl, cc.0 >= 9) {
        (false, _) => "",
        (true, true) => "; programmatic dependent launch on",
        (true, false) => "; --pdl has no effect before sm_90",
    }
}

/// The copy baseline: `cuMemcpyDtoD` of `bytes / 2` bytes (read + write = `bytes`), in GB/s.
pub fn copy_baseline(gpu: &Gpu, bytes_read: usize, reps: usize) -> Result<f64, CliError> {
    let cuda = cuda("bench: device-to-device copy baseline");
    let src = gpu.upload(&vec![1u8; bytes_read]).map_err(&cuda)?;
    let mut dst = gpu.alloc_zeros::<u8>(bytes_read).map_err(&cuda)?;
    let t = gpu.time(3, reps, |_| gpu.copy(&src, &mut dst)).map_err(&cuda)?;
    Ok(2.0 * bytes_read as f64 / (t.median_ms() * 1e-3) / 1e9)
}

fn bench_copy(
    gpu: &Gpu,
    a: &Args,
    cache: Option<&KernelCache>,
    copy_gbs: f64,
) -> Result<Measurement, CliError> {
    let cuda = cuda("bench copy-example");
    let kernel = examples::copy(ScalarType::F32, 4, 256).map_err(|e| CliError::Check {
        what: "bench copy-example".into(),
        why: format!("the kernel could not be built: {e}"),
    })?;
    let n = a.mib * (1 << 20) / 4;
    let mut rng = Rng::new(7);
    let mut args = KArgs::new();
    args.buffer(random_buffer(ScalarType::F32, n, &mut rng))
        .buffer(crate::selftest::poison(ScalarType::F32, n))
        .int(n as i64);
    let (k, _) = gpu.compile(&kernel, cache).map_err(&cuda)?;
    let dev = gpu.upload_args(&kernel, &args).map_err(&cuda)?;
    let grid = (gpu.props().sm_count as u32) * 8;
    // SAFETY: `k` is the compilation of `kernel` and `dev` its uploaded arguments (n elements
    // each, what the grid-stride copy touches)
    let launch = |_| unsafe { gpu.launch_ir(&k, &kernel, [grid, 1, 1], &dev) };
    let t = gpu.time(3, a.reps, launch).map_err(&cuda)?;
    // correctness of what was timed
    let mut out = args.clone();
    gpu.download_args(&dev, &mut out).map_err(&cuda)?;
    if out.get_buffer(1).map(|b| b.as_bytes()) != args.get_buffer(0).map(|b| b.as_bytes()) {
        return Err(CliError::Check {
            what: "bench copy-example".into(),
            why: "the timed copy produced wrong data".into(),
        });
    }
    let bytes = 2 * (n as u64) * 4;
    let gbs = bytes as f64 / (t.median_ms() * 1e-3) / 1e9;
    Ok(Measurement {
        kernel: format!("copy-example f32 v4 {} MiB", a.mib),
        device: gpu.props().name.clone(),
        bytes,
        median_ms: t.median_ms(),
        gb_per_s: gbs,
        copy_gb_per_s: copy_gbs,
        ratio_to_copy: gbs / copy_gbs,
        // the example copies --mib MiB: the baseline is its own byte count
        same_copy_gb_per_s: copy_gbs,
        ratio_to_same_copy: gbs / copy_gbs,
        tflops: None,
        cublas_tflops: None,
        registers: Some(k.registers),
        local_bytes: Some(k.local_bytes),
        launched: None,
        back_to_back: a.back_to_back,
        pdl: a.pdl,
    })
}

/// The benchmark set of issue 7: (kernel, shape, dtype) at the target sizes.
pub const BENCH_SET: &[(&str, &[i64], ScalarType)] = &[
    ("copy", &[16384, 16384], ScalarType::F32),
    ("transpose", &[16384, 16384], ScalarType::F32),
    ("transpose", &[16384, 16384], ScalarType::BF16),
    ("permute", &[512, 512, 256], ScalarType::F32),
    ("permute", &[512, 512, 256], ScalarType::BF16),
    // the same 2^28 elements as the 16384² rows: at 512×512×256 (a quarter of that) a kernel
    // runs ~70 µs on an H200, and the few µs every launch costs the GPU weigh ~6%
    ("permute", &[1024, 1024, 256], ScalarType::F32),
    ("permute", &[1024, 1024, 256], ScalarType::BF16),
    ("morton", &[16384, 16384], ScalarType::F32),
    ("unmorton", &[16384, 16384], ScalarType::F32),
    ("row_sum", &[16384, 16384], ScalarType::F32),
    ("row_sum", &[16384, 16384], ScalarType::BF16),
    ("softmax", &[16384, 16384], ScalarType::F32),
    ("softmax", &[16384, 16384], ScalarType::BF16),
    // rows too long for one block's registers (issue 11: ≥ 0.90 of copy)
    ("softmax", &[4096, 65536], ScalarType::BF16),
    ("softmax", &[2048, 65536], ScalarType::F32),
    ("softmax", &[1024, 262144], ScalarType::BF16),
    ("softmax", &[512, 262144], ScalarType::F32),
    // the rest of the library (no issue-7 target)
    ("permute021", &[512, 512, 256], ScalarType::F32),
    ("row_max", &[16384, 16384], ScalarType::F32),
    ("add", &[16384, 16384], ScalarType::F32),
    ("mul", &[16384, 16384], ScalarType::BF16),
    ("max", &[16384, 16384], ScalarType::F16),
    ("add_row", &[16384, 16384], ScalarType::F32),
    ("mul_col", &[16384, 16384], ScalarType::BF16),
    ("gemm", &[2048, 2048, 1024], ScalarType::F16),
];

/// One op of the library through the API on device tensors: `warm-up ×3`, then the median
/// of `reps` calls of `op_into` (CUDA events around each), then the timed output checked
/// against the CPU reference.
fn ops_bench(
    cuda: &Cuda,
    kernel: &str,
    shape: &[i64],
    dtype: ScalarType,
    a: &Args,
    copy_gbs: f64,
) -> Result<Measurement, CliError> {
    let reps = a.reps;
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    let name = format!("{kernel} {} {}", dims.join("x"), dtype.name());
    let err = |e: OpsError| CliError::kernel(&name, e);
    let op = Op::named(kernel).map_err(err)?;
    let p = Problem::new(op, shape, dtype, 11).map_err(err)?;
    let xs = p.upload(cuda).map_err(err)?;
    let mut y = cuda.empty(p.output_dtype(), &p.output_shape()).map_err(err)?;
    let t = cuda.time(3, reps, |_| p.call_into(cuda, &xs, &mut y)).map_err(err)?;
    // the output after warm-up and timed runs: the ops never read their output
    let c = p.compare(&cuda.to_host(&y).map_err(err)?);
    if !c.passed {
        return Err(CliError::Check {
            what: name,
            why: format!(
                "the timed kernel is wrong: {} mismatches, max abs {:.3e}",
                c.mismatches, c.max_abs
            ),
        });
    }
    let (k, grid) =
        tilekit_ops::check::plan_device(op, shape, dtype, cuda.tuning(), cuda.multiprocessors())
            .map_err(err)?;
    let info = cuda.loaded(&k).map_err(err)?;
    let median_ms = t.median_ms();
    let bytes = p.bytes();
    let gbs = bytes as f64 / (median_ms * 1e-3) / 1e9;
    let same = copy_baseline(cuda.gpu(), (bytes / 2) as usize, reps)?;
    let (tflops, cublas_tflops) = if kernel == "gemm" {
        let (m, n, k) = (shape[0] as usize, shape[1] as usize, shape[2] as usize);
        let flops = 2.0 * (m * n * k) as f64;
        let ours = flops / (median_ms * 1e-3) / 1e12;
        let theirs = tilekit_cuda::blas::time_gemm_f16(cuda.gpu(), m, n, k, reps)
            .ok()
            .map(|t| flops / (t.median_ms() * 1e-3) / 1e12);
        (Some(ours), theirs)
    } else {
        (None, None)
    };
    Ok(Measurement {
        kernel: name,
        device: cuda.gpu().props().name.clone(),
        bytes,
        median_ms,
        gb_per_s: gbs,
        copy_gb_per_s: copy_gbs,
        ratio_to_copy: gbs / copy_gbs,
        same_copy_gb_per_s: same,
        ratio_to_same_copy: gbs / same,
        tflops,
        cublas_tflops,
        registers: Some(info.registers()),
        local_bytes: Some(info.local_bytes()),
        launched: Some(format!("{} {grid:?}", k.kernel().name)),
        back_to_back: a.back_to_back,
        pdl: a.pdl,
    })
}

/// Runs `tilekit bench`: a table (or JSON lines) of measurements on stdout; a kernel that
/// fails (a GPU error, a wrong result) is reported on stderr as `FAIL …` and makes the exit
/// code 1; no usable GPU is [`CliError::NoGpu`].
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    if a.kernel == "launch" {
        return crate::bench_launch::run(a);
    }
    if a.kernel == "attention" {
        return crate::bench_attention::run(a);
    }
    if a.kernel == "gemm" {
        return crate::bench_gemm::run(a);
    }
    let gpu = Gpu::open(a.device)
        .map_err(|e| CliError::NoGpu { command: "bench".into(), reason: e.to_string() })?;
    gpu.set_timed_calls(a.back_to_back);
    // shared with the Cuda backend below (one Gpu::open): every library launch of this run
    gpu.set_programmatic_launch(a.pdl);
    let cache = KernelCache::open(KernelCache::default_dir()).ok();
    let cuda = Cuda::new(gpu.clone());
    let cuda = match a.softmax_coop {
        Some(c) => cuda.with_tuning(Tuning {
            softmax_coop: Some(c),
            softmax_coop_16bit: Some(c),
            // the shape asked for at every length (a cluster beyond 8 blocks too)
            softmax_coop_long: Some(c),
            softmax_coop_long_16bit: Some(c),
            softmax_staged: None,
            ..cuda.tuning()
        }),
        None => cuda,
    };
    let copy_gbs = copy_baseline(&gpu, a.mib << 20, a.reps)?;
    if !a.json {
        outln!(
            "device {}; device-to-device copy (cuMemcpyDtoD, {} MiB) {copy_gbs:.0} GB/s{}{}",
            gpu.props().name,
            a.mib,
            timed_calls_note(a.back_to_back),
            pdl_note(a.pdl, gpu.props().compute_capability)
        )?;
        outln!(
            "{:<34} {:>10} {:>10} {:>8} {:>7} {:>5} {:>7}",
            "kernel",
            "median ms",
            "GB/s",
            "x copy",
            "x same",
            "regs",
            "local B"
        )?;
    }
    let mut failures = 0;
    let mut emit = |r: Result<Measurement, CliError>| -> Result<(), CliError> {
        match r {
            Ok(m) if a.json => {
                let line = serde_json::to_string(&m).map_err(|e| CliError::Check {
                    what: m.kernel.clone(),
                    why: format!("the measurement could not be written as JSON: {e}"),
                })?;
                outln!("{line}")
            }
            Ok(m) => {
                let extra = match (m.tflops, m.cublas_tflops) {
                    (Some(t), Some(c)) => {
                        format!("  {t:.1} TFLOP/s, cuBLAS {c:.1} TFLOP/s ({:.3} of cuBLAS)", t / c)
                    }
                    (Some(t), None) => format!("  {t:.1} TFLOP/s (cuBLAS not available)"),
                    _ => m.launched.as_ref().map_or(String::new(), |l| format!("  {l}")),
                };
                let opt = |v: Option<i32>| v.map_or("-".to_string(), |v| v.to_string());
                outln!(
                    "{:<34} {:>10.3} {:>10.0} {:>8.3} {:>7.3} {:>5} {:>7}{extra}",
                    m.kernel,
                    m.median_ms,
                    m.gb_per_s,
                    m.ratio_to_copy,
                    m.ratio_to_same_copy,
                    opt(m.registers),
                    opt(m.local_bytes)
                )
            }
            // a stdout that cannot be written ends the command
            Err(e @ CliError::Output(_)) => Err(e),
            Err(e) => {
                failures += 1;
                crate::output::write_stderr(format_args!("FAIL {e}\n"));
                Ok(())
            }
        }
    };
    if a.kernel == "all" || a.kernel == "copy-example" {
        emit(bench_copy(&gpu, a, cache.as_ref(), copy_gbs))?;
    }
    for (k, shape, dtype) in BENCH_SET {
        if a.kernel == "all" || a.kernel == *k {
            emit(ops_bench(&cuda, k, shape, *dtype, a, copy_gbs))?;
        }
    }
    Ok(if failures == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
