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
//!                    baseline); "…/tma/s3": a third K/V stage; "…/c3": three consumer
//!                    warpgroups, 192 query rows a block; --attention-variant TEXT keeps the
//!                    names containing TEXT, e.g. "/c3"):
//!       O, LSE poisoned (NaN) → api::attention_with → median of --reps calls (CUDA events)
//!       8 sampled (batch, head, query row) checked against an f64 softmax(QKᵀ·scale)·V
//!   TFLOP/s = 4·b·h·s²·d / t   (halved for causal), the FlashAttention convention
//! ```
//!
//! PyTorch's SDPA backends on the same cases: `python3 bench/compare.py --attention`.
//!
//! **Timeline probe** (`--probe FILE`, [`run_probe`]): one case and one variant, timed without
//! and with the probe (what the marks cost), then one probed run whose events
//! ([`tilekit_kernel::probe`], [`AttnSpan`]) are checked, written out and summed:
//!
//! ```text
//!   tilekit bench attention --attention-case 128,4096 --attention-variant plain/bn128/tma \
//!       --probe attn.csv [--probe-blocks 132] [--probe-svg attn.svg]
//!   attn.csv:  block,warpgroup,index,time,event,span,edge   (time: %clock64, SM cycles)
//!   stdout:    warpgroup  span  count  mean  share        (waits marked *)
//!              tensor busy (GEMM issue → retiring wait): consumer 1, consumer 2 (, 3), either
//! ```

use std::process::ExitCode;

use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::ScalarType;
use tilekit_kernel::probe::{ProbeLayout, Record, EMPTY};
use tilekit_ops::attention_sm90::{probe_report, variants, AttnConfig, AttnSpan, ProbeReport};
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
/// assert_eq!(all.len(), 18);
/// let pp = timed_variants(64, false, Some("pingpong")).unwrap();
/// let names: Vec<&str> = pp.iter().map(|(n, _)| n.as_str()).collect();
/// assert_eq!(names[..4], ["pingpong/bn64", "pingpong/bn64/tma", "pingpong/bn128", "pingpong/bn128/tma"]);
/// assert_eq!(names[4..6], ["pingpong/bn64/tma/s3", "pingpong/bn128/tma/s3"]);
/// assert_eq!(names[6..], ["pingpong/bn64/c3", "pingpong/bn64/tma/c3", "pingpong/bn64/tma/s3/c3"]);
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

/// The `--attention-variant` that times, per case, the one schedule `api::attention` runs
/// ([`AttnConfig::recommended`] for the head dim, the mask and the sequence length), in one
/// column named `recommended`; its variant name is the row's `best`.
pub const RECOMMENDED: &str = "recommended";

/// The variants timed for one case: [`timed_variants`], or with `filter` = [`RECOMMENDED`] the
/// API's choice, named by its variant (the variant whose config it is).
///
/// ```
/// use tilekit_cli::bench_attention::case_variants;
/// let r = case_variants(64, false, 4096, Some("recommended")).unwrap();
/// assert_eq!((r.len(), r[0].0.as_str()), (1, "plain/bn128/tma/c3"));
/// let r = case_variants(128, true, 512, Some("recommended")).unwrap();
/// assert_eq!(r[0].0, "pingpong/bn128/tma");
/// assert_eq!(case_variants(256, true, 4096, Some("/tma")).unwrap().len(), 3);
/// ```
pub fn case_variants(
    d: i64,
    causal: bool,
    seq: i64,
    filter: Option<&str>,
) -> Result<Vec<(String, AttnConfig)>, String> {
    if filter != Some(RECOMMENDED) {
        return timed_variants(d, causal, filter);
    }
    let cfg = AttnConfig::recommended(ScalarType::BF16, d, causal, seq);
    let name = timed_variants(d, causal, None)?
        .into_iter()
        .find(|(_, c)| *c == cfg)
        .map(|(n, _)| n)
        .ok_or_else(|| format!("the recommended config {cfg:?} is not a bench variant"))?;
    Ok(vec![(name, cfg)])
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
    let inp = Inputs::new(cuda, ty, d, seq)?;
    let (b, h) = (inp.batch, inp.heads);
    let shape = [b, seq, h, d];
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
    for (name, cfg) in case_variants(d, causal, seq, filter)? {
        let mut o = inp.poison(cuda, ty, &shape)?;
        let mut lse = inp.poison(cuda, ScalarType::F32, &[b, h, seq])?;
        eprintln!("  d {d} causal {causal} seq {seq} (batch {b}, heads {h}): {name} …");
        let t = cuda
            .time(3, reps, |_| {
                api::attention_with(cuda, cfg, &inp.q, &inp.k, &inp.v, None, &mut o, &mut lse)
            })
            .map_err(|x| format!("{name}: {x}"))?;
        inp.check(cuda, &o, &lse, causal, &name)?;
        let ms = t.median_ms();
        let tf = flops / (ms * 1e-3) / 1e12;
        eprintln!("    {ms:.3} ms, {tf:.1} TFLOP/s, checked");
        if tf > row.best_tflops {
            row.best_tflops = tf;
            row.best = name.clone();
        }
        // the recommended schedule's column is `recommended` in every case
        let column = if filter == Some(RECOMMENDED) { RECOMMENDED.to_string() } else { name };
        row.schedules.push((column, ms, tf));
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
    if let Some(path) = &a.probe {
        return run_probe(a, path);
    }
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
        let names: Vec<String> = if filter == Some(RECOMMENDED) {
            vec![RECOMMENDED.to_string()]
        } else {
            timed_variants(d, false, filter)
                .map_err(|why| CliError::Check { what: "attention variants".into(), why })?
                .into_iter()
                .map(|(n, _)| n)
                .collect()
        };
        if names.is_empty() {
            continue;
        }
        if !a.json {
            // a column as wide as its name (`pingpong/bn64/tma/s3/c3`), at least 14
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
                                    let fig = f.map_or("—".into(), |s| format!("{:.1}", s.2));
                                    format!("{fig:>w$}", w = n.chars().count().max(14))
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

/// The one variant `--probe` runs: the name `filter` equals, else the only one containing it.
///
/// ```
/// use tilekit_cli::bench_attention::probe_variant;
/// assert_eq!(probe_variant(128, false, Some("plain/bn128/tma")).unwrap().0, "plain/bn128/tma");
/// assert_eq!(probe_variant(128, false, Some("pingpong/bn64")).unwrap().0, "pingpong/bn64");
/// let e = probe_variant(128, false, Some("bn128")).unwrap_err();
/// assert!(e.contains("plain/bn128/tma"), "{e}");
/// assert!(probe_variant(128, false, None).is_err());
/// assert!(probe_variant(128, false, Some("nothing")).unwrap_err().contains("nothing"));
/// ```
pub fn probe_variant(
    d: i64,
    causal: bool,
    filter: Option<&str>,
) -> Result<(String, AttnConfig), String> {
    let all = timed_variants(d, causal, None)?;
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    let Some(f) = filter else {
        return Err(format!("--probe needs --attention-variant, one of {names:?}"));
    };
    if let Some(v) = all.iter().find(|(n, _)| n == f) {
        return Ok(v.clone());
    }
    let hits: Vec<_> = all.iter().filter(|(n, _)| n.contains(f)).collect();
    match hits.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(format!("--attention-variant {f:?} names no variant of d {d}: {names:?}")),
        many => Err(format!(
            "--attention-variant {f:?} names {} variants ({:?}); --probe runs one",
            many.len(),
            many.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>()
        )),
    }
}

/// Events a warpgroup may mark for `tiles` key tiles (the consumers' pipelined ping-pong marks
/// the most: 20 a tile, plus the prologue and the epilogue), with room to spare.
///
/// ```
/// assert_eq!(tilekit_cli::bench_attention::probe_cap(64), 24 * 64 + 32);
/// ```
pub fn probe_cap(tiles: i64) -> usize {
    (24 * tiles + 32) as usize
}

/// The probe's records as CSV: `block,warpgroup,index,time,event,span,edge`.
///
/// ```
/// use tilekit_kernel::probe::Record;
/// let r = Record { block: 1, warpgroup: 2, index: 0, time: 77, event: 11 };
/// let csv = tilekit_cli::bench_attention::probe_csv(&[r]);
/// assert_eq!(csv.lines().nth(1), Some("1,2,0,77,11,k_full_wait,end"));
/// ```
pub fn probe_csv(records: &[Record]) -> String {
    let mut out = String::from("block,warpgroup,index,time,event,span,edge\n");
    for r in records {
        let span = AttnSpan::from_kind((r.event / 2) as u32).map_or("?", AttnSpan::name);
        let edge = if r.event % 2 == 1 { "end" } else { "begin" };
        out += &format!(
            "{},{},{},{},{},{span},{edge}\n",
            r.block, r.warpgroup, r.index, r.time, r.event
        );
    }
    out
}

/// The summary [`run_probe`] prints: per warpgroup and span, count, mean (cycles) and share of
/// the warpgroup's time, waits marked `*`; then the tensor-busy estimate.
///
/// ```
/// use tilekit_ops::attention_sm90::{AttnSpan, ProbeReport, SpanStat};
/// let rep = ProbeReport {
///     blocks: 2,
///     full_slices: 0,
///     rows: vec![SpanStat { warpgroup: 1, span: AttnSpan::KFullWait, count: 4, mean: 120.0, share: 0.25 }],
///     busy: vec![(1, 0.5), (2, 0.25)],
///     busy_either: 0.625,
/// };
/// let t = tilekit_cli::bench_attention::probe_summary(&rep);
/// assert!(t.contains("consumer 1") && t.contains("k_full_wait *") && t.contains("25.0%"), "{t}");
/// assert!(t.contains("either 62.5%"), "{t}");
/// ```
pub fn probe_summary(rep: &ProbeReport) -> String {
    let role = |wg: usize| if wg == 0 { "producer".to_string() } else { format!("consumer {wg}") };
    let mut s = format!(
        "{} blocks{}; times in %clock64 cycles; share = time in the span / the warpgroup's time (* = a wait)\n",
        rep.blocks,
        if rep.full_slices > 0 {
            format!(" ({} warpgroup slices full: events dropped, raise the cap)", rep.full_slices)
        } else {
            String::new()
        }
    );
    s += &format!(
        "{:<11} {:<15} {:>8} {:>10} {:>7}\n",
        "warpgroup", "span", "count", "mean", "share"
    );
    for r in &rep.rows {
        let name = format!("{}{}", r.span.name(), if r.span.is_wait() { " *" } else { "" });
        s += &format!(
            "{:<11} {:<15} {:>8} {:>10.1} {:>6.1}%\n",
            role(r.warpgroup),
            name,
            r.count,
            r.mean,
            100.0 * r.share
        );
    }
    let per: Vec<String> =
        rep.busy.iter().map(|(wg, b)| format!("{} {:.1}%", role(*wg), 100.0 * b)).collect();
    s += &format!(
        "tensor busy (GEMM issue → its retiring wait, an upper bound): {}, either {:.1}%\n",
        per.join(", "),
        100.0 * rep.busy_either
    );
    s
}

/// A timeline picture of the first `blocks` blocks: one row per warpgroup, a bar per span
/// (waits red-ish, GEMM issue and softmax in other colours), time from the block's first
/// event.
///
/// ```
/// use tilekit_kernel::probe::Record;
/// let r = |index, time, event| Record { block: 0, warpgroup: 1, index, time, event };
/// let svg = tilekit_cli::bench_attention::probe_svg(&[r(0, 0, 10), r(1, 50, 11)], 4);
/// assert!(svg.starts_with("<svg") && svg.contains("k_full_wait"), "{svg}");
/// ```
pub fn probe_svg(records: &[Record], blocks: usize) -> String {
    use crate::svg::{Style, Svg};
    let all = tilekit_kernel::probe::spans(records);
    let kept: Vec<usize> = {
        let mut b: Vec<usize> = all.iter().map(|s| s.block).collect();
        b.sort();
        b.dedup();
        b.into_iter().take(blocks).collect()
    };
    let (width, left, row_h) = (1200.0, 110.0, 18.0);
    // the producer and the consumers (2, or 3 with `AttnConfig::consumers` = 3)
    let nwg = records.iter().map(|r| r.warpgroup + 1).max().unwrap_or(1).max(3);
    let height = 30.0 + kept.len() as f64 * (nwg as f64 * row_h + 14.0) + 20.0 * 3.0;
    let mut svg = Svg::new(width, height);
    svg.rect(0.0, 0.0, width, height, &Style::new().fill("white"));
    let color = |s: AttnSpan| match s {
        AttnSpan::SIssue | AttnSpan::PvIssue => "#1f77b4",
        AttnSpan::SWait | AttnSpan::PvWait => "#aec7e8",
        AttnSpan::Softmax => "#2ca02c",
        AttnSpan::KLoad | AttnSpan::VLoad | AttnSpan::QLoad => "#9467bd",
        AttnSpan::Epilogue => "#8c564b",
        AttnSpan::TurnSync | AttnSpan::TurnArrive | AttnSpan::StoreSync => "#ff7f0e",
        _ => "#d62728",
    };
    let t_max = kept
        .iter()
        .filter_map(|&b| {
            let mine: Vec<_> = all.iter().filter(|s| s.block == b).collect();
            let a = mine.iter().map(|s| s.begin).min()?;
            Some(mine.iter().map(|s| s.end).max()? - a)
        })
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let x = |t: f64| left + t / t_max * (width - left - 10.0);
    let mut y = 20.0;
    for &b in &kept {
        let t0 = all.iter().filter(|s| s.block == b).map(|s| s.begin).min().unwrap_or(0);
        svg.text(4.0, y + 10.0, &format!("block {b}"), &Style::new().attr("font-size", 11));
        y += 12.0;
        for wg in 0..nwg {
            let label = if wg == 0 { "producer".to_string() } else { format!("consumer {wg}") };
            svg.text(14.0, y + 12.0, &label, &Style::new().attr("font-size", 10));
            for s in all.iter().filter(|s| s.block == b && s.warpgroup == wg) {
                let Some(span) = AttnSpan::from_kind(s.kind) else { continue };
                // nested spans (the TMA store's barrier in the epilogue) drawn thinner
                let inset = if span == AttnSpan::StoreSync { 4.0 } else { 1.0 };
                let (x0, x1) = (x((s.begin - t0) as f64), x((s.end - t0) as f64));
                svg.rect(
                    x0,
                    y + inset,
                    (x1 - x0).max(0.5),
                    row_h - 2.0 * inset,
                    &Style::new().fill(color(span)).attr("data-span", span.name()),
                );
            }
            y += row_h;
        }
        y += 2.0;
    }
    // the legend
    let mut lx = left;
    for span in [
        AttnSpan::KFullWait,
        AttnSpan::SIssue,
        AttnSpan::SWait,
        AttnSpan::Softmax,
        AttnSpan::KLoad,
        AttnSpan::TurnSync,
        AttnSpan::Epilogue,
    ] {
        svg.rect(lx, y + 4.0, 12.0, 10.0, &Style::new().fill(color(span)));
        let label = match span {
            AttnSpan::KFullWait => "mbarrier waits",
            AttnSpan::SIssue => "GEMM issue",
            AttnSpan::SWait => "wgmma wait",
            AttnSpan::Softmax => "softmax",
            AttnSpan::KLoad => "TMA issue",
            AttnSpan::TurnSync => "named barriers",
            _ => "epilogue",
        };
        svg.text(lx + 16.0, y + 13.0, label, &Style::new().attr("font-size", 10));
        lx += 130.0;
    }
    svg.finish()
}

/// What a GPU's probe must satisfy: in each warpgroup the clock never goes back, and every
/// begin has its end (unless the slice is full); an error names the first warpgroup that
/// breaks it.
///
/// ```
/// use tilekit_kernel::probe::{ProbeLayout, Record};
/// use tilekit_cli::bench_attention::probe_consistent;
/// let l = ProbeLayout { blocks: 1, warpgroups: 3, cap: 8 };
/// let r = |index, time, event| Record { block: 0, warpgroup: 1, index, time, event };
/// assert!(probe_consistent(&l, &[r(0, 5, 10), r(1, 9, 11)]).is_ok());
/// assert!(probe_consistent(&l, &[r(0, 9, 10), r(1, 5, 11)]).unwrap_err().contains("back"));
/// assert!(probe_consistent(&l, &[r(0, 5, 10)]).unwrap_err().contains("unpaired"));
/// ```
pub fn probe_consistent(layout: &ProbeLayout, records: &[Record]) -> Result<(), String> {
    for w in records.windows(2) {
        let same = w[0].block == w[1].block && w[0].warpgroup == w[1].warpgroup;
        if same && w[1].time < w[0].time {
            return Err(format!(
                "block {} warpgroup {}: the clock goes back at event {} ({} after {})",
                w[1].block, w[1].warpgroup, w[1].index, w[1].time, w[0].time
            ));
        }
    }
    let paired = tilekit_kernel::probe::spans(records);
    for b in 0..layout.blocks {
        for wg in 0..layout.warpgroups {
            let n = records.iter().filter(|r| r.block == b && r.warpgroup == wg).count();
            let s = paired.iter().filter(|s| s.block == b && s.warpgroup == wg).count();
            if 2 * s != n && !layout.full(records, b, wg) {
                return Err(format!(
                    "block {b} warpgroup {wg}: {n} events, {s} spans (unpaired marks)"
                ));
            }
        }
    }
    Ok(())
}

/// `tilekit bench attention --probe FILE`: the one case and variant, timed without and with
/// the probe (median of `--reps`), then one probed run: its O and LSE checked on sampled rows,
/// the events of blocks `0..--probe-blocks` written to FILE (CSV or JSON) and summed
/// ([`probe_summary`]); `--probe-svg` draws 4 blocks.
pub fn run_probe(a: &Args, path: &std::path::Path) -> Result<ExitCode, CliError> {
    let check = |why: String| CliError::Check { what: "bench attention --probe".into(), why };
    let Some((d, seq, causal)) = a.attention_case else {
        return Err(check("--probe needs one --attention-case D,SEQ[,causal]".into()));
    };
    let (name, cfg) = probe_variant(d, causal, a.attention_variant.as_deref()).map_err(check)?;
    let cuda = Cuda::open(a.device).map_err(|e| CliError::NoGpu {
        command: "bench attention --probe".into(),
        reason: e.to_string(),
    })?;
    let device = cuda.gpu().props().name.clone();
    let ty = ScalarType::BF16;
    let inp = Inputs::new(&cuda, ty, d, seq).map_err(check)?;
    let (b, h) = (inp.batch, inp.heads);
    let e = |e: tilekit_ops::OpsError| check(e.to_string());
    let mut o = inp.poison(&cuda, ty, &[b, seq, h, d]).map_err(check)?;
    let mut lse = inp.poison(&cuda, ScalarType::F32, &[b, h, seq]).map_err(check)?;
    let tiles = (seq + cfg.bn - 1) / cfg.bn;
    let rows = cfg.block_rows();
    let blocks = ((seq + rows - 1) / rows * h * b) as usize;
    let cap = probe_cap(tiles);
    let words = blocks * (cfg.consumers as usize + 1) * cap * 2;
    let empty = || -> Result<_, CliError> {
        let t = HostTensor::from_slice(&vec![EMPTY; words], &[words as i64])
            .map_err(|x| check(x.to_string()))?;
        cuda.from_host(&t).map_err(e)
    };
    let mut probe = empty()?;
    eprintln!("probe: d {d} causal {causal} seq {seq} (batch {b}, heads {h}) {name}, {blocks} blocks, {cap} events a warpgroup");
    let plain = cuda
        .time(3, a.reps, |_| {
            api::attention_with(&cuda, cfg, &inp.q, &inp.k, &inp.v, None, &mut o, &mut lse)
        })
        .map_err(e)?;
    let probed = cuda
        .time(3, a.reps, |_| {
            api::attention_probed(
                &cuda, cfg, &inp.q, &inp.k, &inp.v, None, &mut o, &mut lse, &mut probe,
            )
            .map(|_| ())
        })
        .map_err(e)?;
    // the recorded run: fresh outputs and buffer
    let mut o = inp.poison(&cuda, ty, &[b, seq, h, d]).map_err(check)?;
    let mut lse = inp.poison(&cuda, ScalarType::F32, &[b, h, seq]).map_err(check)?;
    let mut probe = empty()?;
    let layout = api::attention_probed(
        &cuda, cfg, &inp.q, &inp.k, &inp.v, None, &mut o, &mut lse, &mut probe,
    )
    .map_err(e)?;
    inp.check(&cuda, &o, &lse, causal, &name).map_err(check)?;
    let all = cuda.to_host(&probe).map_err(e)?.to_vec::<i64>().map_err(|x| check(x.to_string()))?;
    let kept = ProbeLayout { blocks: a.probe_blocks.min(layout.blocks), ..layout };
    let records = kept.decode(&all[..kept.len()]).map_err(|x| check(x.to_string()))?;
    probe_consistent(&kept, &records).map_err(check)?;
    let rep = probe_report(&kept, &records);
    let text = if path.extension().is_some_and(|x| x == "csv") {
        probe_csv(&records)
    } else {
        let ev: Vec<[i64; 5]> = records
            .iter()
            .map(|r| [r.block as i64, r.warpgroup as i64, r.index as i64, r.time, r.event as i64])
            .collect();
        let spans: Vec<(u32, &str, bool)> =
            AttnSpan::ALL.iter().map(|s| (*s as u32, s.name(), s.is_wait())).collect();
        serde_json::json!({
            "device": device, "variant": name, "head_dim": d, "seq": seq, "causal": causal,
            "batch": b, "heads": h, "clock": "%clock64 (SM cycles)",
            "ms_unprobed": plain.median_ms(), "ms_probed": probed.median_ms(),
            "blocks": kept.blocks, "warpgroups": kept.warpgroups, "cap": kept.cap,
            "spans": spans, "columns": ["block", "warpgroup", "index", "time", "event"],
            "events": ev,
        })
        .to_string()
    };
    std::fs::write(path, text)
        .map_err(|source| CliError::WriteFile { path: path.into(), source })?;
    if let Some(svg) = &a.probe_svg {
        std::fs::write(svg, probe_svg(&records, 4))
            .map_err(|source| CliError::WriteFile { path: svg.clone(), source })?;
    }
    outln!(
        "device {device}; {name}, d {d} seq {seq}{}: {:.3} ms unprobed, {:.3} ms probed (+{:.1}%); {} events of blocks 0..{} in {}",
        if causal { " causal" } else { "" },
        plain.median_ms(),
        probed.median_ms(),
        100.0 * (probed.median_ms() / plain.median_ms() - 1.0),
        records.len(),
        kept.blocks,
        path.display()
    )?;
    outln!("{}", probe_summary(&rep).trim_end())?;
    Ok(ExitCode::SUCCESS)
}

/// The device tensors of the CUDA backend.
type DevTensor = <Cuda as tilekit_ops::backend::Backend>::Tensor;

/// A case's inputs on the device and in f64 (for the sampled check).
struct Inputs {
    q: DevTensor,
    k: DevTensor,
    v: DevTensor,
    qf: Vec<f64>,
    kf: Vec<f64>,
    vf: Vec<f64>,
    batch: i64,
    heads: i64,
    d: i64,
    seq: i64,
}

impl Inputs {
    fn new(cuda: &Cuda, ty: ScalarType, d: i64, seq: i64) -> Result<Inputs, String> {
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
            let f = host::to_f64(&t.buffer());
            Ok((t, f))
        };
        let ((qh, qf), (kh, kf), (vh, vf)) = (input(41)?, input(42)?, input(43)?);
        Ok(Inputs {
            q: cuda.from_host(&qh).map_err(e)?,
            k: cuda.from_host(&kh).map_err(e)?,
            v: cuda.from_host(&vh).map_err(e)?,
            qf,
            kf,
            vf,
            batch: b,
            heads: h,
            d,
            seq,
        })
    }

    fn poison(&self, cuda: &Cuda, ty: ScalarType, shape: &[i64]) -> Result<DevTensor, String> {
        let n = shape.iter().product::<i64>() as usize;
        let t = HostTensor::new(
            host::poisoned(ty, n).map_err(|e| e.to_string())?,
            TensorLayout::contiguous(ty, shape.to_vec()).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        cuda.from_host(&t).map_err(|e| e.to_string())
    }

    /// 8 sampled (batch, head, query row) of O and LSE against the f64 reference.
    fn check(
        &self,
        cuda: &Cuda,
        o: &DevTensor,
        lse: &DevTensor,
        causal: bool,
        name: &str,
    ) -> Result<(), String> {
        let e = |e: tilekit_ops::OpsError| e.to_string();
        let (og, lg) = (
            host::to_f64(&cuda.to_host(o).map_err(e)?.buffer()),
            host::to_f64(&cuda.to_host(lse).map_err(e)?.buffer()),
        );
        let (b, seq, d) = (self.batch, self.seq, self.d);
        let (s, hh, dd) = (seq as usize, self.heads as usize, d as usize);
        let scale = 1.0 / (d as f64).sqrt();
        let mut r = 0x2545_f491_u64 ^ (seq as u64) << 8 ^ d as u64;
        for _ in 0..8 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let (bi, hi, i) =
                ((r >> 5) as usize % b as usize, (r >> 21) as usize % hh, (r >> 37) as usize % s);
            let (want, want_lse) = reference_row(
                &self.qf,
                &self.kf,
                &self.vf,
                (s, hh, dd),
                (bi, hi, i),
                causal,
                scale,
            );
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
        Ok(())
    }
}
