//! `tilekit tune`: times every candidate launch shape of the tunable memory-bound kernels in one
//! process on the GPU, against a device copy measured in the same process, and reports the
//! best per case — how per-device parameters are chosen (and checked on a new device).
//!
//! ```text
//!   baseline   cuMemcpyDtoD of 1 GiB, CUDA events, median of reps  ──► copy GB/s
//!   per case   random input (device)
//!     per candidate   output poisoned, build (compiled::CompiledKernel) ─► bind x, y by name ─► warm-up ×3
//!                     median of reps ─► GB/s = (read + written bytes) / median ─► × copy
//!                     first rows checked against an f64 reference (a wrong candidate fails)
//!   report     table (or --json FILE), best candidate per case marked with *
//! ```

use std::process::ExitCode;

use clap::builder::RangedU64ValueParser;
use tilekit_cuda::Gpu;
use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::{Kernel, ScalarType};
use tilekit_ops::backend::{Backend, Cuda};
use tilekit_ops::bind::Bindings;
use tilekit_ops::compiled::CompiledKernel;
use tilekit_ops::reduce::{self, ClusterTuning, CoopTuning, OnlineTuning};
use tilekit_ops::transpose::TransposeLoop;
use tilekit_ops::tuning::Tuning;
use tilekit_ops::{host, OpsError};

use crate::{outln, CliError};

/// Arguments of `tilekit tune`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// What to tune: `memory` (the memory-bound kernels' launch shapes, every case below) or
    /// `gemm` (the Hopper GEMM's tile configuration for `--shape`).
    #[arg(default_value = "memory", value_parser = ["memory", "gemm"])]
    pub kernel: String,
    /// `gemm`: the problem `MxNxK` (C = A·Wᵀ with A M×K and W N×K row-major).
    #[arg(long)]
    pub shape: Option<String>,
    /// `gemm`: A's and W's element type, bf16 or f16.
    #[arg(long, default_value = "bf16")]
    pub dtype: String,
    /// `gemm`: C's element type, `f32` (what `api::gemm` returns) or `same` (the input type).
    #[arg(long, default_value = "f32")]
    pub out: String,
    /// `gemm`: the operands' storage in BLAS letters for a row-major C = A·B (`n` row-major,
    /// `t` transposed): `nt` (A M×K, B stored N×K: `x @ w.T`), `nn`, `tn`, `tt`.
    #[arg(long, default_value = "nt", value_parser = ["nt", "nn", "tn", "tt"])]
    pub layout: String,
    /// Only cases whose name contains this text (e.g. `softmax bf16`).
    #[arg(long)]
    pub filter: Option<String>,
    /// Only softmax candidates whose launch shape contains this text (e.g. `coop` for the
    /// cooperative kernel's shapes), or gemm candidates whose configuration label does (e.g.
    /// `cluster 2`). With `--save`, the winners are chosen among these alone.
    #[arg(long)]
    pub config: Option<String>,
    /// The cooperative softmax shapes to time (repeatable), in `bench --softmax-coop`'s
    /// labels, instead of the built-in sweep's; with `--config coop` only they are timed, e.g.
    /// `--coop 256,32,64k,1exp,cluster --coop 256,16,64k,1exp`.
    #[arg(long = "coop", value_parser = crate::bench::parse_coop)]
    pub coop: Vec<CoopTuning>,
    /// Timed repetitions per candidate (the median is reported).
    #[arg(long, default_value_t = 20, value_parser = RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub reps: usize,
    /// Also write every measurement as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Store the winners as this device's tuning beside the kernel cache
    /// (`<cache>/tuning/<device>.json`); later runs of any tilekit program on the device use it.
    #[arg(long)]
    pub save: bool,
}

/// One timed candidate.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Candidate {
    /// The case (kernel, shape, dtype).
    pub case: String,
    /// The launch shape tried.
    pub config: String,
    /// Median milliseconds per launch.
    pub median_ms: f64,
    /// GB/s (1e9 bytes per second), bytes = input read once + output written once.
    pub gb_per_s: f64,
    /// Ratio to the same-process device copy.
    pub ratio_to_copy: f64,
    /// Device name.
    pub device: String,
    /// The knob this candidate sets (what `--save` keeps of the winners).
    pub knob: Knob,
}

/// The tuning knob a candidate tries.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum Knob {
    /// The register softmax kernel with this many threads, for rows of this dtype.
    SoftmaxThreads(#[serde(serialize_with = "dtype_name")] ScalarType, u32),
    /// The online softmax kernel with this launch shape.
    Online(OnlineTuning),
    /// Unmorton in storage order (true) or tile order (false).
    UnmortonStorageOrder(bool),
    /// The transpose micro-block and tile loop for 16-bit types.
    Transpose16(i64, TransposeLoop),
    /// The transpose tile loop for f32.
    TransposeF32(TransposeLoop),
    /// The shared-memory staged softmax with (threads, vectors per chunk).
    Staged(u32, i64),
    /// The staged softmax with the row brought in by bulk copies (threads, vectors per chunk).
    StagedBulk(u32, i64),
    /// The cluster softmax (rows split over a thread-block cluster) with this shape.
    Cluster(ClusterTuning),
    /// The cooperative softmax (rows split over blocks that meet at a counter in global
    /// memory, `reduce::coop`) with this shape.
    Coop(CoopTuning),
    /// No knob: a case measured for reference (one shape only).
    Fixed,
}

fn dtype_name<S: serde::Serializer>(t: &ScalarType, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.to_string())
}

/// The tuning `--save` keeps: starting from `base`, for each knob the candidate with the best
/// ratio to copy — register softmax threads per dtype from the row cases the register kernel
/// holds, one online shape by its mean ratio over the long-row cases, the unmorton order and
/// the 16-bit micro-block by their mean ratio over their cases; per dtype the cooperative
/// softmax shape by its mean over the long-row cases — a thread-block cluster shape paired
/// with the counter shape the table takes beyond [`CLUSTER_ROW_BLOCKS`] blocks a row
/// (`softmax_coop_long`) when that pair's mean is the best — kept where it beats what the API
/// would launch otherwise.
///
/// [`CLUSTER_ROW_BLOCKS`]: tilekit_ops::tuning::CLUSTER_ROW_BLOCKS
///
/// ```
/// use tilekit_cli::tune::{winners, Candidate, Knob};
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::tuning::Tuning;
/// let c = |case: &str, knob, r| Candidate { case: case.into(), config: String::new(), median_ms: 1.0, gb_per_s: 1.0, ratio_to_copy: r, device: "G".into(), knob };
/// let cands = [
///     c("softmax bf16", Knob::SoftmaxThreads(ScalarType::BF16, 256), 0.82),
///     c("softmax bf16", Knob::SoftmaxThreads(ScalarType::BF16, 512), 0.94),
///     // a row only 1024 threads can hold: no comparison, ignored
///     c("softmax long bf16", Knob::SoftmaxThreads(ScalarType::BF16, 1024), 0.99),
///     c("unmorton f32", Knob::UnmortonStorageOrder(false), 0.86),
///     c("unmorton f32", Knob::UnmortonStorageOrder(true), 0.99),
/// ];
/// let t = winners(Tuning { softmax_threads_bf16: 256, unmorton_storage_order: false, ..Tuning::default() }, &cands);
/// assert_eq!((t.softmax_threads_bf16, t.unmorton_storage_order), (512, true));
/// ```
pub fn winners(base: Tuning, cands: &[Candidate]) -> Tuning {
    let mut t = base;
    // register softmax threads: per dtype, the best candidate over the cases where thread
    // counts competed (a long row only one count can hold says nothing about the others)
    for ty in [ScalarType::BF16, ScalarType::F32] {
        let threads_of = |c: &Candidate| match c.knob {
            Knob::SoftmaxThreads(d, n) if d == ty => Some(n),
            _ => None,
        };
        let competed = |case: &str| {
            cands.iter().filter(|c| c.case == case && threads_of(c).is_some()).count() > 1
        };
        let best = cands
            .iter()
            .filter(|c| competed(&c.case))
            .filter_map(|c| threads_of(c).map(|n| (n, c.ratio_to_copy)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((n, _)) = best {
            if ty == ScalarType::F32 {
                t.softmax_threads_f32 = n;
            } else {
                t.softmax_threads_bf16 = n;
            }
        }
    }
    // the other knobs: the value with the best mean ratio over the cases that tried it
    fn mean_best<K: PartialEq + Copy>(vals: Vec<(K, f64)>) -> Option<K> {
        let mut keys: Vec<K> = Vec::new();
        for (k, _) in &vals {
            if !keys.contains(k) {
                keys.push(*k);
            }
        }
        keys.into_iter()
            .map(|k| {
                let r: Vec<f64> = vals.iter().filter(|(j, _)| *j == k).map(|(_, r)| *r).collect();
                (k, r.iter().sum::<f64>() / r.len() as f64)
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(k, _)| k)
    }
    // a split-row kernel's shape (cluster, coop): among the shapes that ran on every case any
    // shape of that kernel ran on (a shape that fits only shorter rows would otherwise win on
    // easier cases), the best mean, and whether its mean over those cases beats `other`'s
    // (what the API would otherwise launch there); `None` when no shape qualifies
    fn split_winner<K: PartialEq + Copy>(
        tried: &[(&str, K, f64)],
        other: impl Fn(&str) -> f64,
    ) -> Option<(K, bool)> {
        let mut cases: Vec<&str> = tried.iter().map(|(c, _, _)| *c).collect();
        cases.sort();
        cases.dedup();
        let everywhere: Vec<(K, f64)> = tried
            .iter()
            .filter(|(_, k, _)| {
                cases.iter().all(|case| tried.iter().any(|(c, j, _)| c == case && j == k))
            })
            .map(|(_, k, r)| (*k, *r))
            .collect();
        let k = mean_best(everywhere)?;
        let mine =
            |case: &str| tried.iter().find(|(c, j, _)| *c == case && *j == k).map_or(0.0, |x| x.2);
        let n = cases.len().max(1) as f64;
        let k_mean = cases.iter().map(|c| mine(c)).sum::<f64>() / n;
        let o_mean = cases.iter().map(|c| other(c)).sum::<f64>() / n;
        Some((k, k_mean > o_mean))
    }
    // the best ratio on `case` of the long-row kernel the tuning `t` launches there: its online
    // or staged shape, and (`cluster`) its cluster shape
    fn api_ratio(cands: &[Candidate], t: &Tuning, case: &str, cluster: bool) -> f64 {
        cands
            .iter()
            .filter(|c| c.case == case)
            .filter(|c| match c.knob {
                Knob::Online(o) => o == t.online,
                Knob::Staged(a, b) => t.softmax_staged == Some((a, b)) && !t.softmax_staged_bulk,
                Knob::StagedBulk(a, b) => t.softmax_staged == Some((a, b)) && t.softmax_staged_bulk,
                Knob::Cluster(c) => cluster && t.softmax_cluster == Some(c),
                _ => false,
            })
            .map(|c| c.ratio_to_copy)
            .fold(0.0, f64::max)
    }
    // the best (cluster shape, counter shape) pair: per case the cluster shape's ratio where it
    // ran and takes at most `most` blocks a row (the table's rule: the base tuning's
    // `softmax_cluster_row_blocks`, CLUSTER_ROW_BLOCKS by default), the counter
    // shape's elsewhere; the counter shapes those that ran on every case. `Some` only when the
    // best pair's mean beats the best counter shape's alone, with whether it beats `other`.
    fn coop_pair(
        part: &[(&str, CoopTuning, f64)],
        plain: &[(&str, CoopTuning, f64)],
        other: impl Fn(&str) -> f64,
        most: u32,
    ) -> Option<(CoopTuning, CoopTuning, bool)> {
        let mut cases: Vec<&str> = part.iter().map(|(c, _, _)| *c).collect();
        cases.sort();
        cases.dedup();
        let n = cases.len().max(1) as f64;
        let ratio = |k: CoopTuning, case: &str| {
            part.iter().find(|(c, j, _)| *c == case && *j == k).map(|x| x.2)
        };
        let unique = |shapes: &mut dyn Iterator<Item = CoopTuning>| {
            let mut v: Vec<CoopTuning> = Vec::new();
            for k in shapes {
                if !v.contains(&k) {
                    v.push(k);
                }
            }
            v
        };
        let everywhere: Vec<CoopTuning> = unique(&mut plain.iter().map(|(_, k, _)| *k))
            .into_iter()
            .filter(|k| cases.iter().all(|c| ratio(*k, c).is_some()))
            .collect();
        let mean_of = |k: CoopTuning| cases.iter().filter_map(|c| ratio(k, c)).sum::<f64>() / n;
        let alone = everywhere.iter().map(|&k| mean_of(k)).fold(f64::NEG_INFINITY, f64::max);
        let clusters = unique(&mut part.iter().filter(|(_, k, _)| k.cluster).map(|(_, k, _)| *k));
        // ties on the pair's mean (every case within the cluster shape's rows: the counter
        // shape ran nowhere in the pair) go to the counter shape with the best mean alone, the
        // shape the rows beyond the cluster's then take
        let mut best: Option<(CoopTuning, CoopTuning, f64, f64)> = None;
        for &c in &clusters {
            for &k in &everywhere {
                let per_case = |case: &str| {
                    let fits = row_of(case)
                        .and_then(|(ty, len)| c.plan(ty, len))
                        .is_some_and(|(blocks, _)| blocks <= most);
                    match ratio(c, case) {
                        Some(r) if fits => r,
                        _ => ratio(k, case).unwrap_or(0.0),
                    }
                };
                let mean = cases.iter().map(|c| per_case(c)).sum::<f64>() / n;
                let own = mean_of(k);
                if best.is_none_or(|b| mean > b.2 || (mean == b.2 && own > b.3)) {
                    best = Some((c, k, mean, own));
                }
            }
        }
        let (c, k, mean, _) = best.filter(|b| b.2 > alone)?;
        let o_mean = cases.iter().map(|c| other(c)).sum::<f64>() / n;
        Some((c, k, mean > o_mean))
    }
    // (dtype, row length) of a softmax case named `softmax {rows}x{n} {dtype}`
    fn row_of(case: &str) -> Option<(ScalarType, i64)> {
        let mut words = case.split_whitespace().skip(1);
        let n = words.next()?.rsplit('x').next()?.parse().ok()?;
        let ty = crate::dtype::kernel_dtype().lookup(words.next()?)?;
        Some((ty, n))
    }
    let long_rows = |c: &&Candidate| {
        !cands.iter().any(|d| d.case == c.case && matches!(d.knob, Knob::SoftmaxThreads(..)))
    };
    if let Some(o) = mean_best(
        cands
            .iter()
            .filter(long_rows)
            .filter_map(|c| match c.knob {
                Knob::Online(o) => Some((o, c.ratio_to_copy)),
                _ => None,
            })
            .collect(),
    ) {
        t.online = o;
    }
    // the staged kernel, where it ran, if it beats the chosen online shape on the same cases
    let staged: Vec<(&str, (u32, i64, bool), f64)> = cands
        .iter()
        .filter_map(|c| match c.knob {
            Knob::Staged(th, un) => Some((c.case.as_str(), (th, un, false), c.ratio_to_copy)),
            Knob::StagedBulk(th, un) => Some((c.case.as_str(), (th, un, true), c.ratio_to_copy)),
            _ => None,
        })
        .collect();
    if let Some(k) = mean_best(staged.iter().map(|(_, k, r)| (*k, *r)).collect()) {
        let cases: Vec<&str> =
            staged.iter().filter(|(_, j, _)| *j == k).map(|(c, _, _)| *c).collect();
        let mean = |f: &dyn Fn(&Candidate) -> bool| {
            let r: Vec<f64> = cands
                .iter()
                .filter(|c| cases.contains(&c.case.as_str()) && f(c))
                .map(|c| c.ratio_to_copy)
                .collect();
            if r.is_empty() {
                0.0
            } else {
                r.iter().sum::<f64>() / r.len() as f64
            }
        };
        let knob = if k.2 { Knob::StagedBulk(k.0, k.1) } else { Knob::Staged(k.0, k.1) };
        let s_mean = mean(&|c| c.knob == knob);
        let o_mean = mean(&|c| c.knob == Knob::Online(t.online));
        t.softmax_staged = (s_mean > o_mean).then_some((k.0, k.1));
        t.softmax_staged_bulk = k.2 && s_mean > o_mean;
    }
    // the cluster kernel: its best shape over the long-row cases, kept when it beats the
    // online (or staged) kernel chosen above on the cases where it ran
    let cluster: Vec<(&str, ClusterTuning, f64)> = cands
        .iter()
        .filter_map(|c| match c.knob {
            Knob::Cluster(k) => Some((c.case.as_str(), k, c.ratio_to_copy)),
            _ => None,
        })
        .collect();
    if let Some((k, beats)) = split_winner(&cluster, |case| api_ratio(cands, &t, case, false)) {
        t.softmax_cluster = beats.then_some(k);
    }
    // the coop kernel: its best shape over the cases every coop shape ran on, kept when it
    // beats, on those cases, what the API would otherwise launch (the online, staged and
    // cluster kernels chosen above; the API tries the coop kernel first)
    let coop: Vec<(&str, CoopTuning, f64)> = cands
        .iter()
        .filter_map(|c| match c.knob {
            Knob::Coop(k) => Some((c.case.as_str(), k, c.ratio_to_copy)),
            _ => None,
        })
        .collect();
    // one shape for 4-byte rows, one for 2-byte rows (half the bytes per element want other
    // shapes: bench/RESULTS.md session 8); a cluster shape where it takes at most
    // CLUSTER_ROW_BLOCKS blocks a row, paired with the counter shape for the other rows when
    // the pair's mean is the best (the table's `softmax_coop_long`, session 15)
    for sixteen in [false, true] {
        let part: Vec<(&str, CoopTuning, f64)> =
            coop.iter().filter(|(case, _, _)| case.ends_with("f32") != sixteen).copied().collect();
        let plain: Vec<(&str, CoopTuning, f64)> =
            part.iter().filter(|(_, k, _)| !k.cluster).copied().collect();
        let other = |case: &str| api_ratio(cands, &t, case, true);
        let (main, long, beats) =
            match coop_pair(&part, &plain, other, t.softmax_cluster_row_blocks) {
                Some((c, n, beats)) => (c, Some(n), beats),
                None => match split_winner(&plain, other).or_else(|| split_winner(&part, other)) {
                    Some((k, beats)) => (k, None, beats),
                    None => continue,
                },
            };
        if sixteen {
            t.softmax_coop_16bit = beats.then_some(main);
            t.softmax_coop_long_16bit = long.filter(|_| beats);
        } else {
            t.softmax_coop = beats.then_some(main);
            t.softmax_coop_long = long.filter(|_| beats);
        }
    }
    if let Some(u) = mean_best(
        cands
            .iter()
            .filter_map(|c| match c.knob {
                Knob::UnmortonStorageOrder(u) => Some((u, c.ratio_to_copy)),
                _ => None,
            })
            .collect(),
    ) {
        t.unmorton_storage_order = u;
    }
    if let Some((m, lp)) = mean_best(
        cands
            .iter()
            .filter_map(|c| match c.knob {
                Knob::Transpose16(m, lp) => Some(((m, lp), c.ratio_to_copy)),
                _ => None,
            })
            .collect(),
    ) {
        t.transpose_micro_16bit = m;
        t.transpose_loop_16bit = lp;
    }
    if let Some(lp) = mean_best(
        cands
            .iter()
            .filter_map(|c| match c.knob {
                Knob::TransposeF32(lp) => Some((lp, c.ratio_to_copy)),
                _ => None,
            })
            .collect(),
    ) {
        t.transpose_loop_f32 = lp;
    }
    t
}

fn ops(what: &str) -> impl Fn(OpsError) -> CliError + '_ {
    move |e| CliError::Check { what: what.into(), why: e.to_string() }
}

fn copy_baseline(gpu: &Gpu, reps: usize) -> Result<f64, CliError> {
    let n = 1usize << 30;
    let err = |e: tilekit_cuda::CudaError| CliError::Check {
        what: "copy baseline".into(),
        why: e.to_string(),
    };
    let src = gpu.alloc_zeros::<u8>(n).map_err(err)?;
    let mut dst = gpu.alloc_zeros::<u8>(n).map_err(err)?;
    let t = gpu.time(3, reps, |_| gpu.copy(&src, &mut dst)).map_err(err)?;
    Ok(2.0 * n as f64 / (t.median_ms() * 1e-3) / 1e9)
}

/// The configurations `tilekit tune` times for softmax rows of `n` elements of `ty`: each
/// one's label (what `--config` matches, as a substring) and knob, whether its kernel builds or
/// not. Rows longer than the register kernel holds get the cooperative shapes, `coop, …` with
/// slices in registers, `coop smem, …` with slices in shared memory and `coop smem bulk, …`
/// with those brought in by bulk copies (sm_90 devices only: skipped elsewhere); each
/// shared-memory shape also as `coop smem 1exp, …` / `coop smem bulk 1exp, …`, one
/// exponential per element (`CoopTuning::one_exp`).
///
/// ```
/// use tilekit_cli::tune::{softmax_configs, Knob};
/// use tilekit_ir::ScalarType;
/// let c = softmax_configs(ScalarType::F32, 262144);
/// let smem: Vec<_> = c.iter().filter(|(l, _)| l.starts_with("coop smem")).collect();
/// // 18 shapes less those whose one step (f32: threads × 16 B × vectors) exceeds the slice,
/// // each with two exponentials per element and with one (22); two of 96 KiB; the cluster
/// // shapes whose row fits 16 blocks (4), the early ones (4), the speculated ones (3) and
/// // those holding part of the slice in registers (6)
/// assert_eq!(smem.len(), 41);
/// assert_eq!(smem.iter().filter(|(l, _)| l.contains(" held ")).count(), 6);
/// assert_eq!(smem.iter().filter(|(l, _)| l.starts_with("coop smem bulk")).count(), 6);
/// assert_eq!(smem.iter().filter(|(l, _)| l.contains(" 1exp, ")).count(), 13);
/// assert_eq!(smem.iter().filter(|(l, _)| l.contains(" cluster, ")).count(), 4);
/// assert!(smem.iter().any(|(l, _)| l == "coop smem 1exp, 16 blocks × 256 threads × 64 KiB slice (4 vectors a step)"));
/// assert!(smem.iter().all(|(l, k)| l.contains(" 1exp") == matches!(k, Knob::Coop(t) if t.one_exp)));
/// assert!(smem.iter().all(|(_, k)| matches!(k, Knob::Coop(t) if t.smem_kib > 0)));
/// assert!(smem.iter().any(|(l, _)| l == "coop smem, 16 blocks × 256 threads × 64 KiB slice (4 vectors a step)"));
/// ```
pub fn softmax_configs(ty: ScalarType, n: i64) -> Vec<(String, Knob)> {
    let v = tilekit_ops::host::vector_for(ty, &[n]);
    softmax_candidates(ty, n, v, &CoopTuning::candidates())
        .into_iter()
        .map(|(l, k, _, _)| (l, k))
        .collect()
}

/// The softmax candidates of a row length: the register kernel at 256/512/1024 threads when
/// the row fits, the online kernel over threads × unroll × direction otherwise.
fn softmax_candidates(
    ty: ScalarType,
    n: i64,
    v: i64,
    coop: &[CoopTuning],
) -> Vec<(String, Knob, Result<Kernel, OpsError>, Grid)> {
    let mut out = Vec::new();
    let vw = 16 / ty.size_bytes() as i64;
    if n <= 64 * 1024 {
        for threads in [256u32, 512, 1024] {
            let per = threads as i64 * vw;
            let chunks = (n + per - 1) / per;
            if chunks * vw <= 64 {
                out.push((
                    format!("register, {threads} threads, {chunks} chunks"),
                    Knob::SoftmaxThreads(ty, threads),
                    reduce::build_softmax_threads(ty, chunks, v, threads),
                    Grid::PerRow(1),
                ));
            }
        }
    }
    for threads in [256u32, 512, 1024] {
        for unroll in [4i64] {
            for reverse in [false, true] {
                let t = OnlineTuning { threads, unroll, reverse, blocks_per_sm: 0 };
                out.push((
                    format!(
                        "online, {threads} threads, unroll {unroll}, {}",
                        if reverse { "reverse" } else { "forward" }
                    ),
                    Knob::Online(t),
                    reduce::build_softmax_online_tuned(ty, v, t),
                    Grid::PerRow(1),
                ));
            }
        }
    }
    // the row kept in shared memory (one read, one write of global memory per element)
    for (threads, unroll) in [(512u32, 4i64), (1024, 2), (1024, 4), (256, 4)] {
        let chunk = threads as i64 * vw * unroll;
        let cap = (n + chunk - 1) / chunk * chunk;
        if n > 64 * 256 && cap * ty.size_bytes() as i64 <= tilekit_ops::tuning::STAGED_MAX_BYTES {
            out.push((
                format!("staged in shared memory, {threads} threads, unroll {unroll}"),
                Knob::Staged(threads, unroll),
                reduce::build_softmax_staged(ty, v, cap, threads, unroll),
                Grid::PerRow(1),
            ));
            // the same, the row brought in by bulk copies (every chunk in flight at once)
            out.push((
                format!("staged by bulk copies, {threads} threads, unroll {unroll}"),
                Knob::StagedBulk(threads, unroll),
                reduce::build_softmax_bulk_cluster(ty, 1, threads, unroll, cap / chunk),
                Grid::PerRow(1),
            ));
        }
    }
    // the row split over a cluster of blocks (one DRAM read, one write; sm_90): held in
    // registers, or streamed twice in slices small enough for the second read to hit L1/L2
    let base = ClusterTuning {
        threads: 256,
        per_thread: 32,
        max_cluster: 8,
        stream: false,
        stash: false,
        bulk: false,
        ring: 0,
        held: false,
    };
    let mut shapes = vec![base];
    // streamed twice, stashed in shared memory, or brought in by bulk copies
    for (stash, bulk) in [(false, false), (true, false), (false, true)] {
        for threads in [256u32, 512] {
            for max_cluster in [2u32, 4, 8, 16] {
                let per_thread = 4 * vw;
                shapes.push(ClusterTuning {
                    threads,
                    per_thread,
                    max_cluster,
                    stream: true,
                    stash,
                    bulk,
                    ring: 0,
                    held: false,
                });
            }
        }
    }
    // smaller blocks and more bytes in flight per thread, for the slices kept on chip
    for (stash, bulk) in [(true, false), (false, true)] {
        for (threads, vectors) in [(128u32, 4i64), (128, 8), (256, 8)] {
            for max_cluster in [4u32, 8, 16] {
                shapes.push(ClusterTuning {
                    threads,
                    per_thread: vectors * vw,
                    max_cluster,
                    stream: true,
                    stash,
                    bulk,
                    ring: 0,
                    held: false,
                });
            }
        }
    }
    // a persistent grid of clusters, each block with a ring of stages of its slice in flight
    for (threads, vectors) in [(128u32, 4i64), (128, 8), (256, 4), (256, 8), (512, 4)] {
        for max_cluster in [2u32, 4, 8, 16] {
            for ring in [2u32, 3] {
                shapes.push(ClusterTuning {
                    threads,
                    per_thread: vectors * vw,
                    max_cluster,
                    stream: true,
                    stash: false,
                    bulk: true,
                    ring,
                    held: false,
                });
            }
        }
    }
    // held in registers, one exponential per element
    for (threads, vectors) in [(128u32, 1i64), (128, 2), (128, 4), (256, 1), (256, 2), (256, 4)] {
        for max_cluster in [2u32, 4, 8, 16] {
            shapes.push(ClusterTuning {
                threads,
                per_thread: vectors * vw,
                max_cluster,
                stream: true,
                stash: false,
                bulk: true,
                ring: 0,
                held: true,
            });
        }
    }
    for c in shapes {
        let Some((size, chunks)) = c.plan(ty, n) else { continue };
        let (label, kernel) = if c.bulk && c.ring >= 2 {
            let un = c.unroll(ty);
            (
                format!(
                    "persistent cluster of {size}, {} threads × {un} vectors, {chunks} chunks/slice, ring of {}",
                    c.threads, c.ring
                ),
                reduce::build_softmax_persistent(ty, size, c.threads, un, chunks, c.ring as i64),
            )
        } else if c.bulk && c.held {
            let un = c.unroll(ty);
            (
                format!(
                    "held cluster of {size}, {} threads × {un} vectors, {chunks} chunks/slice",
                    c.threads
                ),
                reduce::build_softmax_bulk_held(ty, size, c.threads, un, chunks),
            )
        } else if c.bulk {
            let un = c.unroll(ty);
            (
                format!(
                    "bulk cluster of {size}, {} threads × {un} vectors, {chunks} chunks/slice",
                    c.threads
                ),
                reduce::build_softmax_bulk_cluster(ty, size, c.threads, un, chunks),
            )
        } else if c.stream {
            let o = c.online(ty);
            (
                format!(
                    "stream cluster of {size}, {} threads × {} vectors, {chunks} chunks/slice{}",
                    o.threads,
                    o.unroll,
                    if c.stash { ", stashed" } else { "" }
                ),
                reduce::build_softmax_stream_cluster_stashed(ty, v, o, size, chunks, c.stash),
            )
        } else {
            (
                format!("cluster of {size}, {} threads, {chunks} chunks", c.threads),
                reduce::build_softmax_cluster(ty, v, size, c.threads, chunks),
            )
        };
        if out.iter().any(|(l, ..)| *l == label) {
            continue; // the same kernel as a smaller max_cluster already gave
        }
        let grid = if let (true, Ok(k)) = (c.bulk && c.ring >= 2, &kernel) {
            Grid::Persistent { size, per_sm: reduce::resident_blocks(k) }
        } else {
            Grid::PerRow(size)
        };
        out.push((label, Knob::Cluster(c), kernel, grid));
    }
    // the row split over k cooperating blocks (no clusters; one read, one write), timed
    // through the API: each call allocates and zeroes the counters, as a user's call does
    if n > reduce::MAX_REGISTER_ROW {
        for &c in coop {
            let Some((k, chunks)) = c.plan(ty, n) else { continue };
            if c.smem() && c.threads as i64 * 16 * c.unroll(ty) > i64::from(c.smem_kib) * 1024 {
                // one step is larger than the slice asked for: the same kernel as a shape
                // with a larger slice (e.g. f32 512 threads × 32 a step = 64 KiB), timed once
                continue;
            }
            // registers: elements a thread holds; shared memory: the slice per block
            let label = if c.ring > 0 {
                let slice = chunks * c.threads as i64 * vw * c.unroll(ty);
                format!(
                    "coop ring {} × {} KiB slots lag {}, {k} slices × {} threads ({} vectors a step)",
                    c.ring,
                    slice * ty.size_bytes() as i64 / 1024,
                    c.lag,
                    c.threads,
                    c.unroll(ty)
                )
            } else if c.smem() {
                let slice = chunks * c.threads as i64 * vw * c.unroll(ty);
                format!(
                    "coop smem{}{}{}{}{}, {k} blocks × {} threads × {} KiB slice ({} vectors a step)",
                    if c.bulk { " bulk" } else { "" },
                    if c.one_exp { " 1exp" } else { "" },
                    if c.rows == 2 {
                        " 2rows"
                    } else if c.pipe {
                        " pipe"
                    } else {
                        ""
                    },
                    match (c.cluster, c.early, c.spec) {
                        (true, true, _) => " cluster early",
                        (true, false, _) => " cluster",
                        (false, true, _) => " early",
                        (false, false, true) => " spec",
                        (false, false, false) => "",
                    },
                    if c.held > 0 { format!(" held {}", c.held) } else { String::new() },
                    c.threads,
                    slice * ty.size_bytes() as i64 / 1024,
                    c.unroll(ty)
                )
            } else {
                format!("coop, {k} blocks × {} threads × {} elements", c.threads, chunks * vw)
            };
            out.push((label, Knob::Coop(c), c.build(ty, v, k, chunks), Grid::PerRow(k)));
        }
    }
    // fewer rows in flight (their bytes stay in L2 for pass 2)
    for (threads, unroll, n_sm) in
        [(1024u32, 4i64, 1u32), (1024, 2, 1), (512, 4, 1), (512, 4, 2), (256, 4, 2)]
    {
        let t = OnlineTuning { threads, unroll, reverse: true, blocks_per_sm: n_sm };
        out.push((
            format!("online, {threads} threads, unroll {unroll}, reverse, ≤{n_sm} blocks/SM"),
            Knob::Online(t),
            reduce::build_softmax_online_tuned(ty, v, t),
            Grid::PerRow(1),
        ));
    }
    out
}

/// The grid a softmax candidate launches on.
#[derive(Debug, Clone, Copy)]
enum Grid {
    /// This many blocks per row (a cluster's worth, or 1).
    PerRow(u32),
    /// Clusters of `size` blocks, `per_sm` blocks per SM (all resident), walking the rows.
    Persistent { size: u32, per_sm: u32 },
}

impl Grid {
    fn blocks(self, rows: u32, sms: u32) -> u32 {
        match self {
            Grid::PerRow(k) => rows * k,
            Grid::Persistent { size, per_sm } => (sms * per_sm / size).clamp(1, rows) * size,
        }
    }
}

/// Whether a kernel uses sm_90 features (clusters, mbarrier transactions, bulk copies).
fn needs_sm90(k: &Kernel) -> bool {
    let mut found = k.cluster_size() > 1;
    k.body.walk(&mut |i| found |= matches!(i.op, tilekit_ir::Op::Async(_)));
    found
}

fn rows_f64(h: &HostTensor, rows: usize, n: usize) -> Vec<f64> {
    let all = host::to_f64(&h.buffer());
    all[..rows * n].to_vec()
}

/// Times the candidates of softmax over `m × n` of `ty`.
fn tune_softmax(
    cuda: &Cuda,
    m: i64,
    n: i64,
    ty: ScalarType,
    (reps, copy_gbs): (usize, f64),
    (config_filter, coop): (Option<&str>, &[CoopTuning]),
) -> Result<Vec<Candidate>, CliError> {
    let case = format!("softmax {m}x{n} {ty}");
    let layout = TensorLayout::contiguous(ty, vec![m, n])
        .map_err(|e| CliError::Check { what: case.clone(), why: e.to_string() })?;
    let xh = HostTensor::new(
        host::random(ty, (m * n) as usize, 11).map_err(ops(&case))?,
        layout.clone(),
    )
    .map_err(|e| CliError::Check { what: case.clone(), why: e.to_string() })?;
    let x = cuda.from_host(&xh).map_err(ops(&case))?;
    let mut y = cuda.empty(ty, &[m, n]).map_err(ops(&case))?;
    // f64 reference of the first two rows
    let check_rows = 2usize.min(m as usize);
    let xs = rows_f64(&xh, check_rows, n as usize);
    let want = {
        let b = host::from_f64(ty, &xs);
        reduce::reference(reduce::Reduction::Softmax, &b, check_rows, n as usize, ty)
            .map_err(ops(&case))?
    };
    let v = tilekit_ops::api::vector_of(&layout, 0);
    let bytes = 2 * (m * n) as u64 * ty.size_bytes() as u64;
    let mut out = Vec::new();
    let sm90 = cuda.gpu().props().compute_capability.0 >= 9;
    let sms = cuda.gpu().props().sm_count.max(1) as u32;
    for (config, knob, kernel, grid) in softmax_candidates(ty, n, v, coop) {
        if config_filter.is_some_and(|f| !config.contains(f)) {
            continue;
        }
        let kernel = kernel.map_err(ops(&case))?;
        if !sm90 && needs_sm90(&kernel) {
            continue; // clusters and bulk copies: sm_90 and later
        }
        let k = CompiledKernel::new(kernel);
        cuda.prepare(&k).map_err(ops(&case))?;
        // a cluster shape: how many of its clusters the GPCs hold at once
        let mut config = config;
        let size = k.kernel().cluster_size();
        if size > 1 {
            if let Ok(n) = cuda.resident_clusters(&k) {
                config = format!("{config} [{n} clusters resident: {} blocks]", n as usize * size);
            }
        }
        // the coop kernel through the API (its counters are allocated and zeroed per call);
        // the register kernel kept to rows of 256 · 64, so every long row takes the coop
        let coop = match knob {
            Knob::Coop(c) => Some(cuda.with_tuning(Tuning {
                softmax_coop: Some(c),
                softmax_coop_16bit: Some(c),
                // the shape asked for at every length (a cluster beyond 8 blocks too)
                softmax_coop_long: Some(c),
                softmax_coop_long_16bit: Some(c),
                softmax_staged: None,
                softmax_threads_bf16: 256,
                softmax_threads_f32: 256,
                ..cuda.tuning()
            })),
            _ => None,
        };
        let launch = |y: &mut tilekit_cuda::DeviceTensor| -> Result<(), OpsError> {
            if let Some(c) = &coop {
                return tilekit_ops::api::softmax_into(c, &x, y);
            }
            let args = Bindings::new(&k).input("x", &x, cuda)?.output("y", y, cuda)?;
            cuda.launch(&k, [grid.blocks(m as u32, sms), 1, 1], args)
        };
        let mut err = None;
        let t = cuda
            .gpu()
            .time(3, reps, |_| {
                launch(&mut y).map_err(|e| {
                    err = Some(e.to_string());
                    tilekit_cuda::CudaError::Driver { call: "launch", code: "see above".into() }
                })
            })
            .map_err(|e| CliError::Check {
                what: format!("{case} [{config}]"),
                why: err.clone().unwrap_or(e.to_string()),
            })?;
        // only the checked rows come back
        let head = y
            .narrow(0, 0, check_rows as i64)
            .map_err(|e| CliError::Check { what: case.clone(), why: e.to_string() })?;
        let got = cuda.to_host(&head).map_err(ops(&case))?;
        let g = rows_f64(&got, check_rows, n as usize);
        let c = host::compare(&g[..], &host::to_f64(&want)[..], 0.0);
        let tol = if ty == ScalarType::F32 { 1e-5 } else { 1.0 / 256.0 };
        if c.max_abs > tol || c.max_abs.is_nan() {
            return Err(CliError::Check {
                what: format!("{case} [{config}]"),
                why: format!(
                    "wrong result: max |Δ| {} over the first {check_rows} rows",
                    c.max_abs
                ),
            });
        }
        let gbs = bytes as f64 / (t.median_ms() * 1e-3) / 1e9;
        out.push(Candidate {
            case: case.clone(),
            config,
            median_ms: t.median_ms(),
            gb_per_s: gbs,
            ratio_to_copy: gbs / copy_gbs,
            device: cuda.gpu().props().name.clone(),
            knob,
        });
    }
    Ok(out)
}

/// The cases `tilekit tune` sweeps: (rows, row length, dtype), about 512 MiB to 1 GiB each.
pub const SOFTMAX_CASES: &[(i64, i64, ScalarType)] = &[
    (16384, 16384, ScalarType::BF16),
    (8192, 16384, ScalarType::F32),
    (4096, 65536, ScalarType::BF16),
    (2048, 65536, ScalarType::F32),
    (1024, 262144, ScalarType::BF16),
    (512, 262144, ScalarType::F32),
];

/// Times `f` (one API call on `cuda`'s stream) with CUDA events: warm-up ×3, median of `reps`.
fn time_api(
    cuda: &Cuda,
    what: &str,
    reps: usize,
    mut f: impl FnMut() -> Result<(), OpsError>,
) -> Result<f64, CliError> {
    let mut err = None;
    let t = cuda
        .gpu()
        .time(3, reps, |_| {
            f().map_err(|e| {
                err = Some(e.to_string());
                tilekit_cuda::CudaError::Driver { call: "launch", code: "see above".into() }
            })
        })
        .map_err(|e| CliError::Check {
            what: what.into(),
            why: err.clone().unwrap_or(e.to_string()),
        })?;
    Ok(t.median_ms())
}

/// A data-movement case tuned through the API itself: each candidate is a [`Tuning`] of the
/// backend, the call is the library op, and every candidate's output must equal the first's
/// bit for bit (the first is the default, which the API tests check against references).
/// How a movement case is timed and rated: bytes moved per call, repetitions, the copy GB/s.
#[derive(Debug, Clone, Copy)]
struct Measure {
    bytes: u64,
    reps: usize,
    copy_gbs: f64,
}

fn tune_movement(
    cuda: &Cuda,
    case: &str,
    candidates: &[(String, Knob, Tuning)],
    x: &tilekit_cuda::DeviceTensor,
    y: &mut tilekit_cuda::DeviceTensor,
    m: Measure,
    call: &dyn Fn(
        &Cuda,
        &tilekit_cuda::DeviceTensor,
        &mut tilekit_cuda::DeviceTensor,
    ) -> Result<(), OpsError>,
) -> Result<Vec<Candidate>, CliError> {
    let mut out = Vec::new();
    let mut first: Option<Vec<u8>> = None;
    // every candidate writes over a poisoned output: one that skips elements cannot pass on
    // what the previous candidate wrote
    let yl = y.layout().clone();
    let poison = host::poisoned(yl.dtype(), yl.numel() as usize)
        .and_then(|b| {
            Ok(HostTensor::new(b, TensorLayout::contiguous(yl.dtype(), yl.shape().to_vec())?)?)
        })
        .map_err(ops(case))?;
    for (config, knob, tuning) in candidates {
        let c = cuda.with_tuning(*tuning);
        let what = format!("{case} [{config}]");
        *y = c.from_host(&poison).map_err(ops(&what))?;
        let ms = time_api(&c, &what, m.reps, || call(&c, x, y))?;
        let got = c.to_host(y).map_err(ops(&what))?.buffer().as_bytes().to_vec();
        match &first {
            None => first = Some(got),
            Some(f) if *f != got => {
                return Err(CliError::Check {
                    what,
                    why: "output differs from the default candidate's".into(),
                })
            }
            Some(_) => {}
        }
        let gbs = m.bytes as f64 / (ms * 1e-3) / 1e9;
        out.push(Candidate {
            case: case.into(),
            config: config.clone(),
            median_ms: ms,
            gb_per_s: gbs,
            ratio_to_copy: gbs / m.copy_gbs,
            device: cuda.gpu().props().name.clone(),
            knob: *knob,
        });
    }
    Ok(out)
}

fn movement_cases(
    cuda: &Cuda,
    reps: usize,
    copy: f64,
    filter: Option<&str>,
) -> Result<Vec<Candidate>, CliError> {
    let base = Tuning::default();
    let mut all = Vec::new();
    let want = |case: &str| filter.is_none_or(|f| case.contains(f));
    // unmorton 16384² f32 (t = 8): tile order vs storage order
    for ty in [ScalarType::F32, ScalarType::BF16] {
        let case = format!("unmorton 16384x16384 {ty}");
        if want(&case) {
            let (h, w, t) = (16384i64, 16384i64, 8i64);
            let len = tilekit_ops::api::morton_len(h, w, t).map_err(ops(&case))?;
            let s = random_device(cuda, ty, &[len], &case)?;
            let mut y = cuda.empty(ty, &[h, w]).map_err(ops(&case))?;
            let cands = vec![
                (
                    "tile order (copy tiles)".to_string(),
                    Knob::UnmortonStorageOrder(false),
                    Tuning { unmorton_storage_order: false, ..base },
                ),
                (
                    "storage order (16-byte reads)".to_string(),
                    Knob::UnmortonStorageOrder(true),
                    Tuning { unmorton_storage_order: true, ..base },
                ),
            ];
            let bytes = (len + h * w) as u64 * ty.size_bytes() as u64;
            let call = move |c: &Cuda,
                             s: &tilekit_cuda::DeviceTensor,
                             y: &mut tilekit_cuda::DeviceTensor| {
                tilekit_ops::api::unmorton_into(c, s, t, y)
            };
            all.push(tune_movement(
                cuda,
                &case,
                &cands,
                &s,
                &mut y,
                Measure { bytes, reps, copy_gbs: copy },
                &call,
            )?);
        }
    }
    // permute (2, 0, 1) of 512×512×256 and transpose of 16384²: micro-blocks for 16-bit types,
    // and for both types the tile loop (tiles per block × shared buffers × load order)
    for ty in [ScalarType::BF16, ScalarType::F32] {
        for (case, shape, perm) in [
            (format!("permute 512x512x256 {ty}"), vec![512i64, 512, 256], vec![2usize, 0, 1]),
            (format!("transpose 16384x16384 {ty}"), vec![16384, 16384], vec![1, 0]),
        ] {
            if !want(&case) {
                continue;
            }
            let x = random_device(cuda, ty, &shape, &case)?;
            let out: Vec<i64> = perm.iter().map(|&p| shape[p]).collect();
            let mut y = cuda.empty(ty, &out).map_err(ops(&case))?;
            let cands: Vec<(String, Knob, Tuning)> = if ty.size_bytes() == 2 {
                [8i64, 4, 2]
                    .iter()
                    .flat_map(|&m| {
                        transpose_loops().into_iter().map(move |lp| {
                            (
                                format!("micro-block {m}×{m} (tile {}²), {lp}", 16 * m),
                                Knob::Transpose16(m, lp),
                                Tuning {
                                    transpose_micro_16bit: m,
                                    transpose_loop_16bit: lp,
                                    ..base
                                },
                            )
                        })
                    })
                    .collect()
            } else {
                transpose_loops()
                    .into_iter()
                    .map(|lp| {
                        (
                            format!("micro-block 4×4 (tile 64²), {lp}"),
                            Knob::TransposeF32(lp),
                            Tuning { transpose_loop_f32: lp, ..base },
                        )
                    })
                    .collect()
            };
            let bytes = 2 * shape.iter().product::<i64>() as u64 * ty.size_bytes() as u64;
            let p2 = perm.clone();
            let call = move |c: &Cuda,
                             x: &tilekit_cuda::DeviceTensor,
                             y: &mut tilekit_cuda::DeviceTensor| {
                tilekit_ops::api::permute_into(c, x, &p2, y)
            };
            all.push(tune_movement(
                cuda,
                &case,
                &cands,
                &x,
                &mut y,
                Measure { bytes, reps, copy_gbs: copy },
                &call,
            )?);
        }
    }
    Ok(all.into_iter().flatten().collect())
}

/// The transpose tile loops `tilekit tune` compares: one tile per block (the default kernel),
/// the same asking for 4, 5, 6 or 8 blocks an SM (the compiler caps the registers to fit
/// them) or with streaming loads and stores, streaming stores or 256-byte L2 prefetches, then 2 to 32 row tiles per block through one or two shared buffers, the next tile's
/// loads before or after the current tile's stores.
///
/// ```
/// let l = tilekit_cli::tune::transpose_loops();
/// assert_eq!((l.len(), l[0].tiles_per_block, l[1].min_blocks), (28, 1, 4));
/// assert!(l.iter().all(|lp| lp.check().is_ok()));
/// ```
pub fn transpose_loops() -> Vec<TransposeLoop> {
    let one = TransposeLoop::default();
    let mut v = vec![one];
    v.extend([4, 5, 6, 8].map(|min_blocks| TransposeLoop { min_blocks, ..one }));
    use tilekit_ir::GlobalCache as C;
    v.extend(
        [C::Streaming, C::StreamingStores, C::Prefetch256]
            .map(|cache| TransposeLoop { cache, ..one }),
    );
    for tiles_per_block in [2, 4, 8, 16, 32] {
        for buffers in [1, 2] {
            for prefetch in [true, false] {
                v.push(TransposeLoop {
                    tiles_per_block,
                    buffers,
                    prefetch,
                    min_blocks: 0,
                    cache: tilekit_ir::GlobalCache::Default,
                });
            }
        }
    }
    v
}

fn random_device(
    cuda: &Cuda,
    ty: ScalarType,
    shape: &[i64],
    case: &str,
) -> Result<tilekit_cuda::DeviceTensor, CliError> {
    let err = |e: String| CliError::Check { what: case.into(), why: e };
    let layout = TensorLayout::contiguous(ty, shape.to_vec()).map_err(|e| err(e.to_string()))?;
    let n = layout.numel() as usize;
    let h = HostTensor::new(host::random(ty, n, 5).map_err(|e| err(e.to_string()))?, layout)
        .map_err(|e| err(e.to_string()))?;
    cuda.from_host(&h).map_err(|e| err(e.to_string()))
}

fn print_case(c: &[Candidate]) -> Result<(), CliError> {
    let best = c.iter().map(|c| c.ratio_to_copy).fold(0.0, f64::max);
    for x in c {
        let mark = if x.ratio_to_copy == best { "*" } else { " " };
        outln!(
            "  {mark} {:<48} {:>8.3} ms {:>7.0} GB/s {:>6.3} x copy",
            x.config,
            x.median_ms,
            x.gb_per_s,
            x.ratio_to_copy
        )?;
    }
    Ok(())
}

/// Runs `tilekit tune`.
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    if a.kernel == "gemm" {
        return crate::tune_gemm::run(a);
    }
    let cuda = Cuda::open(a.device)
        .map_err(|e| CliError::NoGpu { command: "tune".into(), reason: e.to_string() })?;
    let name = cuda.gpu().props().name.clone();
    let copy = copy_baseline(cuda.gpu(), a.reps)?;
    outln!("device {name}; device-to-device copy (cuMemcpyDtoD, 1024 MiB) {copy:.0} GB/s")?;
    outln!("launch shapes in use: {}", cuda.tuning_source())?;
    let mut all = Vec::new();
    for &(m, n, ty) in SOFTMAX_CASES {
        let case = format!("softmax {m}x{n} {ty}");
        if a.filter.as_ref().is_some_and(|f| !case.contains(f.as_str())) {
            continue;
        }
        let coop = if a.coop.is_empty() { CoopTuning::candidates() } else { a.coop.clone() };
        let c = tune_softmax(&cuda, m, n, ty, (a.reps, copy), (a.config.as_deref(), &coop))?;
        let best = c.iter().map(|c| c.ratio_to_copy).fold(0.0, f64::max);
        let t = cuda.tuning();
        // what the API launches with this device's tuning (the Record backend plans it)
        let pick = {
            // on this device's multiprocessors: the cooperative kernel's residency check
            // (and persistent grids) depend on them
            let rec = tilekit_ops::backend::Record::with_tuning(t)
                .on_multiprocessors(cuda.multiprocessors());
            let x =
                tilekit_ops::backend::LayoutTensor::contiguous(ty, &[m, n]).map_err(ops(&case))?;
            let mut y = x.clone();
            tilekit_ops::api::softmax_into(&rec, &x, &mut y).map_err(ops(&case))?;
            rec.take().first().map_or("nothing".into(), |l| {
                let k = l.kernel.kernel();
                format!(
                    "{}, block {:?}, cluster {:?}, grid {:?}",
                    k.name, k.block_dim, k.cluster_dim, l.grid
                )
            })
        };
        outln!("{case}   (this device's table picks: {pick})")?;
        for x in &c {
            let mark = if x.ratio_to_copy == best { "*" } else { " " };
            outln!(
                "  {mark} {:<48} {:>8.3} ms {:>7.0} GB/s {:>6.3} x copy",
                x.config,
                x.median_ms,
                x.gb_per_s,
                x.ratio_to_copy
            )?;
        }
        all.extend(c);
    }
    let moves = movement_cases(&cuda, a.reps, copy, a.filter.as_deref())?;
    let mut case = String::new();
    for c in &moves {
        if c.case != case {
            case = c.case.clone();
            outln!("{case}")?;
            let group: Vec<Candidate> = moves.iter().filter(|m| m.case == case).cloned().collect();
            print_case(&group)?;
        }
    }
    all.extend(moves);
    if a.save {
        let t = winners(cuda.tuning(), &all);
        let dir = tilekit_ops::tuning::default_dir();
        let path = t
            .save(&dir, &name)
            .map_err(|e| CliError::Check { what: "tune --save".into(), why: e.to_string() })?;
        outln!("saved {t:?}\n   to {}", path.display())?;
    }
    if let Some(p) = &a.json {
        let text = serde_json::to_string_pretty(&all)
            .map_err(|e| CliError::Check { what: "tune --json".into(), why: e.to_string() })?;
        std::fs::write(p, text).map_err(|e| CliError::Check {
            what: format!("writing {}", p.display()),
            why: e.to_string(),
        })?;
    }
    Ok(ExitCode::SUCCESS)
}
