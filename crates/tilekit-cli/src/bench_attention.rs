//! `tilekit bench attention`: the Hopper attention forward ([`tilekit_ops::attention_sm90`]) on
//! issue 14's grid of cases, every variant of the kernel timed and checked.
//!
//! ```text
//!   16384 tokens per batch (batch = 16384 / seq), hidden 2048 (heads = 2048 / d), K/V heads = heads
//!   for d in 64, 128, 256;  causal in no, yes;  seq in 512 … 16384:
//!     Q, K, V random (b, s, h, d) bf16 on the device
//!     for variant in attention_sm90::variants(bf16, d, causal)   ("plain/bn64", "overlap/bn64",
//!                    "pingpong/bn128/tma", …: each schedule at each key tile, register or TMA-store
//!                    epilogue, that assembles without spills (and d 256's register-epilogue
//!                    baseline); --attention-variant TEXT keeps the names containing TEXT):
//!       O, LSE poisoned (NaN) → api::attention_with → median of --reps calls (CUDA events)
//!       8 sampled (batch, head, query row) checked against an f64 softmax(QKᵀ·scale)·V
//!   TFLOP/s = 4·b·h·s²·d / t   (halved for causal), the FlashAttention convention
//! ```
//!
//! PyTorch's SDPA backends on the same cases: `python3 bench/compare.py --attention`.

use std::process::ExitCode;

use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::ScalarType;
use tilekit_ops::attention_sm90::{variants, AttnConfig};
use tilekit_ops::backend::{Backend as _, Cuda};
use tilekit_ops::{api, host};

use crate::bench::Args;
use crate::error::CliError;
use crate::outln;

/// Tokens per batch of every case (batch × seq).
///
/// ```
/// assert_eq!(tilekit_cli::bench_attention::TOKENS, 16384);
/// ```
pub const TOKENS: i64 = 16384;

/// Model width: heads × head dim.
///
/// ```
/// assert_eq!(tilekit_cli::bench_attention::HIDDEN / 128, 16);
/// ```
pub const HIDDEN: i64 = 2048;

/// Sequence lengths of issue 14's table.
///
/// ```
/// assert_eq!(tilekit_cli::bench_attention::SEQS.len(), 6);
/// ```
pub const SEQS: &[i64] = &[512, 1024, 2048, 4096, 8192, 16384];

/// One row of `tilekit bench attention`: one case, every schedule's figure.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AttnRow {
    /// Device name.
    pub device: String,
    /// Element type.
    pub dtype: String,
    /// Head dim.
    pub head_dim: i64,
    /// Causal mask.
    pub causal: bool,
    /// Sequence length (queries = keys).
    pub seq: i64,
    /// Batch.
    pub batch: i64,
    /// Heads.
    pub heads: i64,
    /// (variant, median ms, TFLOP/s) of every variant that built and passed.
    pub schedules: Vec<(String, f64, f64)>,
    /// The best TFLOP/s.
    pub best_tflops: f64,
    /// Its variant.
    pub best: String,
}

/// The variants timed for (d, causal): [`variants`] (bf16) whose name contains `filter`.
///
/// ```
/// use tilekit_cli::bench_attention::timed_variants;
/// let all = timed_variants(128, true, None).unwrap();
/// assert_eq!(all.len(), 10);
/// let pp = timed_variants(64, false, Some("pingpong")).unwrap();
/// let names: Vec<&str> = pp.iter().map(|(n, _)| n.as_str()).collect();
/// assert_eq!(names, ["pingpong/bn64", "pingpong/bn64/tma", "pingpong/bn128", "pingpong/bn128/tma"]);
/// assert_eq!(timed_variants(256, true, Some("/tma")).unwrap().len(), 3);
/// assert!(timed_variants(96, false, None).is_err());
/// ```
pub fn timed_variants(
    d: i64,
    causal: bool,
    filter: Option<&str>,
) -> Result<Vec<(String, AttnConfig)>, String> {
    let all = variants(ScalarType::BF16, d, causal).map_err(|e| e.to_string())?;
    Ok(all.into_iter().filter(|(n, _)| filter.is_none_or(|f| n.contains(f))).collect())
}

/// The f64 reference of query row `i` of (batch `bi`, head `hi`): (O row, LSE).
#[allow(clippy::too_many_arguments)]
fn reference_row(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    (s, h, d): (usize, usize, usize),
    (bi, hi, i): (usize, usize, usize),
    causal: bool,
    scale: f64,
) -> (Vec<f64>, f64) {
    let at = |t: usize| ((bi * s + t) * h + hi) * d;
    let keys = if causal { i + 1 } else { s };
    let scores: Vec<f64> = (0..keys)
        .map(|j| (0..d).map(|x| q[at(i) + x] * k[at(j) + x]).sum::<f64>() * scale)
        .collect();
    let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = scores.iter().map(|x| (x - m).exp()).collect();
    let l: f64 = p.iter().sum();
    let o = (0..d).map(|x| (0..keys).map(|j| p[j] * v[at(j) + x]).sum::<f64>() / l).collect();
    (o, m + l.ln())
}

#[allow(clippy::too_many_arguments)]
fn case(
    cuda: &Cuda,
    device: &str,
    ty: ScalarType,
    d: i64,
    causal: bool,
    seq: i64,
    reps: usize,
    filter: Option<&str>,
) -> Result<AttnRow, String> {
    let (b, h) = (TOKENS / seq, HIDDEN / d);
    let e = |e: tilekit_ops::OpsError| e.to_string();
    let len = (b * seq * h * d) as usize;
    let shape = vec![b, seq, h, d];
    let input = |seed| -> Result<(HostTensor, Vec<f64>), String> {
        let t = HostTensor::new(
            host::random(ty, len, seed).map_err(e)?,
            TensorLayout::contiguous(ty, shape.clone()).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        let f = host::to_f64(t.buffer());
        Ok((t, f))
    };
    let ((qh, qf), (kh, kf), (vh, vf)) = (input(41)?, input(42)?, input(43)?);
    let (q, k, v) = (
        cuda.from_host(&qh).map_err(e)?,
        cuda.from_host(&kh).map_err(e)?,
        cuda.from_host(&vh).map_err(e)?,
    );
    let poison = |ty: ScalarType, shape: &[i64]| -> Result<_, String> {
        let n = shape.iter().product::<i64>() as usize;
        let t = HostTensor::new(
            host::poisoned(ty, n).map_err(e)?,
            TensorLayout::contiguous(ty, shape.to_vec()).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        cuda.from_host(&t).map_err(e)
    };
    let scale = 1.0 / (d as f64).sqrt();
    let flops =
        4.0 * (b * h) as f64 * (seq * seq) as f64 * d as f64 / if causal { 2.0 } else { 1.0 };
    let mut row = AttnRow {
        device: device.into(),
        dtype: ty.name().into(),
        head_dim: d,
        causal,
        seq,
        batch: b,
        heads: h,
        schedules: vec![],
        best_tflops: 0.0,
        best: String::new(),
    };
    for (name, cfg) in timed_variants(d, causal, filter)? {
        let mut o = poison(ty, &shape)?;
        let mut lse = poison(ScalarType::F32, &[b, h, seq])?;
        eprintln!("  d {d} causal {causal} seq {seq} (batch {b}, heads {h}): {name} …");
        let t = cuda
            .time(3, reps, |_| api::attention_with(cuda, cfg, &q, &k, &v, None, &mut o, &mut lse))
            .map_err(|x| format!("{name}: {x}"))?;
        let (og, lg) = (
            host::to_f64(cuda.to_host(&o).map_err(e)?.buffer()),
            host::to_f64(cuda.to_host(&lse).map_err(e)?.buffer()),
        );
        let (s, hh, dd) = (seq as usize, h as usize, d as usize);
        let mut r = 0x2545_f491_u64 ^ (seq as u64) << 8 ^ d as u64;
        for _ in 0..8 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let (bi, hi, i) =
                ((r >> 5) as usize % b as usize, (r >> 21) as usize % hh, (r >> 37) as usize % s);
            let (want, want_lse) =
                reference_row(&qf, &kf, &vf, (s, hh, dd), (bi, hi, i), causal, scale);
            let at = ((bi * s + i) * hh + hi) * dd;
            for (x, w) in want.iter().enumerate() {
                let g = og[at + x];
                if (g - w).abs() > 2e-2 + w.abs() / 64.0 || g.is_nan() {
                    return Err(format!("{name}: O[{bi}][{i}][{hi}][{x}] = {g}, reference {w}"));
                }
            }
            let gl = lg[(bi * hh + hi) * s + i];
            if (gl - want_lse).abs() > 1e-2 || gl.is_nan() {
                return Err(format!("{name}: LSE[{bi}][{hi}][{i}] = {gl}, reference {want_lse}"));
            }
        }
        let ms = t.median_ms();
        let tf = flops / (ms * 1e-3) / 1e12;
        eprintln!("    {ms:.3} ms, {tf:.1} TFLOP/s, checked");
        if tf > row.best_tflops {
            row.best_tflops = tf;
            row.best = name.clone();
        }
        row.schedules.push((name, ms, tf));
    }
    Ok(row)
}

/// Parses `--attention-case`: `D,SEQ` or `D,SEQ,causal`, a head dim of 64, 128 or 256 and a
/// sequence length of [`SEQS`].
///
/// ```
/// use tilekit_cli::bench_attention::parse_case;
/// assert_eq!(parse_case("128,4096"), Ok((128, 4096, false)));
/// assert_eq!(parse_case("64, 512, causal"), Ok((64, 512, true)));
/// assert!(parse_case("96,4096").unwrap_err().contains("64, 128 or 256"));
/// assert!(parse_case("128,4000").unwrap_err().contains("4096"));
/// assert!(parse_case("128,4096,sideways").is_err());
/// ```
pub fn parse_case(s: &str) -> Result<(i64, i64, bool), String> {
    let f: Vec<&str> = s.split(',').map(str::trim).collect();
    let bad = || format!("`{s}`: expected D,SEQ or D,SEQ,causal, e.g. 128,4096");
    let (d, seq, causal) = match f.as_slice() {
        [d, q] => (d, q, false),
        [d, q, "causal"] => (d, q, true),
        _ => return Err(bad()),
    };
    let d: i64 = d.parse().map_err(|_| bad())?;
    let seq: i64 = seq.parse().map_err(|_| bad())?;
    if ![64, 128, 256].contains(&d) {
        return Err(format!("head dim {d}: the bench has 64, 128 or 256"));
    }
    if !SEQS.contains(&seq) {
        return Err(format!("sequence length {seq}: the bench has {SEQS:?}"));
    }
    Ok((d, seq, causal))
}

/// Runs `tilekit bench attention`: a table (or JSON lines) on stdout, progress on stderr; a
/// wrong result or failed launch is `FAIL …` on stderr and exit code 1; no GPU is
/// [`CliError::NoGpu`].
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    let cuda = Cuda::open(a.device).map_err(|e| CliError::NoGpu {
        command: "bench attention".into(),
        reason: e.to_string(),
    })?;
    cuda.gpu().set_timed_calls(a.back_to_back);
    let device = cuda.gpu().props().name.clone();
    let filter = a.attention_variant.as_deref();
    if !a.json {
        outln!("device {device}; bf16, {TOKENS} tokens per batch, hidden {HIDDEN}; TFLOP/s per variant")?;
    }
    let mut failed = false;
    let only = a.attention_case;
    for d in [64, 128, 256] {
        if only.is_some_and(|(od, _, _)| od != d) {
            continue;
        }
        // the variants of this head dim (the same list causal or not), one column each
        let names: Vec<String> = timed_variants(d, false, filter)
            .map_err(|why| CliError::Check { what: "attention variants".into(), why })?
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        if names.is_empty() {
            continue;
        }
        if !a.json {
            let head: Vec<String> = names.iter().map(|n| format!("{n:>14}")).collect();
            outln!("{:>4} {:>6} {:>6} {}  best", "d", "causal", "seq", head.join(" "))?;
        }
        for causal in [false, true] {
            for &seq in SEQS {
                if only.is_some_and(|(_, os, oc)| os != seq || oc != causal) {
                    continue;
                }
                match case(&cuda, &device, ScalarType::BF16, d, causal, seq, a.reps, filter) {
                    Ok(row) => {
                        if a.json {
                            crate::output::json_line(&row)?;
                        } else {
                            let figs: Vec<String> = names
                                .iter()
                                .map(|n| {
                                    let f = row.schedules.iter().find(|s| &s.0 == n);
                                    format!(
                                        "{:>14}",
                                        f.map_or("—".into(), |s| format!("{:.1}", s.2))
                                    )
                                })
                                .collect();
                            outln!(
                                "{:>4} {:>6} {:>6} {}  {}",
                                d,
                                if causal { "yes" } else { "no" },
                                seq,
                                figs.join(" "),
                                row.best
                            )?;
                        }
                    }
                    Err(why) => {
                        eprintln!("FAIL attention d {d} causal {causal} seq {seq}: {why}");
                        failed = true;
                    }
                }
            }
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
