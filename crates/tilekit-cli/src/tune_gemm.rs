//! `tilekit tune gemm --shape MxNxK`: times every candidate tile configuration of the Hopper
//! GEMM for one problem in one process, through the same API call programs make
//! (`api::gemm_with`), checks each result, and reports (and with `--save` keeps) the winner
//! for the problem's shape class on this device.
//!
//! ```text
//!   A, B random on the device, stored as --layout says (nt: A M×K, B N×K), C poisoned (NaN)
//!   before each candidate
//!   GemmProblem::candidates()  ─► per candidate: [i/n] label … warm-up ×3, median of reps,
//!   (--config TEXT: those whose label contains TEXT)
//!                                  64 sampled elements of C against an f64 reference
//!   table, fastest first, beside the heuristic's choice (what api::gemm runs untuned)
//!   --save: the winner into <cache>/tuning/gemm-<device>.json, class "bf16>f32 nt m… n… k…"
//! ```

use std::process::ExitCode;

use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::wgmma::Major;
use tilekit_ir::ScalarType;
use tilekit_ops::backend::{Backend, Cuda};
use tilekit_ops::gemm_tuning::{GemmChoice, GemmProblem, GemmTable, Tuned};
use tilekit_ops::{api, host, OpsError};

use crate::tune::Args;
use crate::{outln, CliError};

/// One timed candidate of `tilekit tune gemm` (what `--json` writes).
///
/// ```
/// let c = tilekit_cli::tune_gemm::GemmCandidate {
///     shape: "64x64x64".into(), dtype: "bf16".into(), output: "f32".into(),
///     class: "bf16>f32 nt m64 n64 k64".into(), config: "bn 128, 3 stages".into(),
///     median_ms: Some(0.01), tflops: Some(0.05), device: "GPU".into(), error: None,
/// };
/// assert!(serde_json::to_string(&c).unwrap().contains("\"tflops\":0.05"));
/// ```
#[derive(Debug, Clone, serde::Serialize)]
pub struct GemmCandidate {
    /// `MxNxK`.
    pub shape: String,
    /// A's and B's type.
    pub dtype: String,
    /// C's type.
    pub output: String,
    /// The shape class the winner is kept under.
    pub class: String,
    /// The candidate's configuration ([`GemmChoice::label`]).
    pub config: String,
    /// Median milliseconds per call (`None`: it failed).
    pub median_ms: Option<f64>,
    /// TFLOP/s = 2·M·N·K / median.
    pub tflops: Option<f64>,
    /// Device name.
    pub device: String,
    /// Why the candidate failed (a launch error or a wrong result).
    pub error: Option<String>,
}

/// `--shape` of `tune gemm`: `MxNxK`, each at least 1.
///
/// ```
/// assert_eq!(tilekit_cli::tune_gemm::parse_shape("8191x8191x8191").unwrap(), (8191, 8191, 8191));
/// let e = tilekit_cli::tune_gemm::parse_shape("8x8").unwrap_err().to_string();
/// assert!(e.starts_with("--shape \"8x8\" is invalid"), "{e}");
/// ```
pub fn parse_shape(text: &str) -> Result<(usize, usize, usize), CliError> {
    crate::bench_gemm::parse_shape(text).map_err(|e| match e {
        CliError::BadArgument { value, rule, .. } => {
            CliError::BadArgument { flag: "--shape".into(), value, rule }
        }
        other => other,
    })
}

/// The element types of `--dtype` and `--out`: bf16 or f16 in; f32 or the input type out.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_cli::tune_gemm::types("f16", "same").unwrap(), (ScalarType::F16, ScalarType::F16));
/// assert!(tilekit_cli::tune_gemm::types("f32", "f32").is_err());
/// assert!(tilekit_cli::tune_gemm::types("bf16", "f16").is_err());
/// ```
pub fn types(dtype: &str, out: &str) -> Result<(ScalarType, ScalarType), CliError> {
    let ty = crate::dtype::kernel_dtype().parse_str(dtype)?;
    if ty == ScalarType::F32 {
        return Err(CliError::BadArgument {
            flag: "--dtype".into(),
            value: dtype.into(),
            rule: "bf16 or f16 (the tensor-core GEMM's inputs)".into(),
        });
    }
    let output = match out {
        "f32" | "fp32" => ScalarType::F32,
        "same" => ty,
        _ => {
            return Err(CliError::BadArgument {
                flag: "--out".into(),
                value: out.into(),
                rule: "f32, or `same` (the input type)".into(),
            })
        }
    };
    Ok((ty, output))
}

/// Runs `tilekit tune gemm`.
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    let shape_text = a.shape.as_deref().ok_or_else(|| CliError::BadArgument {
        flag: "--shape".into(),
        value: String::new(),
        rule: "`tune gemm` needs the problem, MxNxK (e.g. --shape 4096x4096x4096)".into(),
    })?;
    let (m, n, k) = parse_shape(shape_text)?;
    let (ty, output) = types(&a.dtype, &a.out)?;
    let cuda = Cuda::open(a.device)
        .map_err(|e| CliError::NoGpu { command: "tune gemm".into(), reason: e.to_string() })?;
    let device = cuda.gpu().props().name.clone();
    if !cuda.hopper() {
        return Err(CliError::NoGpu {
            command: "tune gemm".into(),
            reason: format!("{device} is not a Hopper GPU (the tuned kernel needs sm_90a)"),
        });
    }
    let (mi, ni, ki) = (m as i64, n as i64, k as i64);
    let shape = format!("{m}x{n}x{k}");
    let e = |what: &'static str| {
        move |x: OpsError| CliError::Check { what: what.into(), why: x.to_string() }
    };
    let t = |what: &'static str| {
        move |x: tilekit_ir::tensor::TensorError| CliError::Check {
            what: what.into(),
            why: x.to_string(),
        }
    };
    // each operand stored as the layout says, and viewed as M×K / K×N for the call
    let (a_t, b_t) = (a.layout.starts_with('t'), a.layout.ends_with('t'));
    let stored = |rows: i64, cols: i64, transposed: bool, seed: u64, what: &'static str| {
        let (r, c) = if transposed { (cols, rows) } else { (rows, cols) };
        let layout = TensorLayout::contiguous(ty, vec![r, c]).map_err(t(what))?;
        HostTensor::new(host::random(ty, (r * c) as usize, seed).map_err(e(what))?, layout)
            .map_err(t(what))
    };
    let ah = stored(mi, ki, a_t, 31, "A")?;
    let bh = stored(ki, ni, b_t, 32, "B")?;
    let view = |d: tilekit_cuda::DeviceTensor, transposed: bool, what: &'static str| {
        if transposed {
            tilekit_ir::tensor::TensorView::transpose(&d, 0, 1).map_err(t(what))
        } else {
            Ok(d)
        }
    };
    let a_dev = view(cuda.from_host(&ah).map_err(e("A upload"))?, a_t, "A")?;
    let b_dev = view(cuda.from_host(&bh).map_err(e("B upload"))?, b_t, "B")?;
    let ch = HostTensor::new(
        host::poisoned(output, m * n).map_err(e("C"))?,
        TensorLayout::contiguous(output, vec![mi, ni]).map_err(t("C"))?,
    )
    .map_err(t("C"))?;
    // A[i][x] and B[x][j] in f64 from their stored order
    let (av, bv) = (host::to_f64(&ah.buffer()), host::to_f64(&bh.buffer()));
    let a_at = |i: usize, x: usize| if a_t { av[x * m + i] } else { av[i * k + x] };
    let b_at = |x: usize, j: usize| if b_t { bv[j * k + x] } else { bv[x * n + j] };
    let (a_major, b_major) =
        (if a_t { Major::MN } else { Major::K }, if b_t { Major::K } else { Major::MN });

    let c_tma = (n * output.size_bytes()).is_multiple_of(16);
    let problem = GemmProblem::new(mi, ni, ki, ty, output, c_tma).with_majors(a_major, b_major);
    let class = problem.class();
    let heuristic = GemmChoice::heuristic(&problem);
    let table = cuda.gemm_table();
    let in_use = table.choose(&problem);
    // --config: only the candidates whose label contains the text (e.g. `cluster 2`, or
    // `bn 256, 3 stages` for a config with and without pairs)
    let cands: Vec<GemmChoice> = problem
        .candidates()
        .into_iter()
        .filter(|c| a.config.as_ref().is_none_or(|t| c.label().contains(t.as_str())))
        .collect();
    if cands.is_empty() {
        return Err(CliError::BadArgument {
            flag: "--config".into(),
            value: a.config.clone().unwrap_or_default(),
            rule: format!(
                "text in at least one candidate's label, such as `cluster 2` or `{}`",
                heuristic.label()
            ),
        });
    }
    let flops = 2.0 * (m * n * k) as f64;
    outln!(
        "device {device}; gemm {shape} {ty} → {output}, layout {} (A {}, B {})",
        a.layout,
        if a_t { "stored K×M" } else { "M×K row-major" },
        if b_t { "stored N×K" } else { "K×N row-major" }
    )?;
    outln!("class `{class}`; GEMM tuning in use: {}", cuda.gemm_tuning_source())?;
    outln!(
        "{} candidates, {} timed calls each (median), 64 sampled elements checked",
        cands.len(),
        a.reps
    )?;

    let mut rows: Vec<(GemmChoice, GemmCandidate)> = Vec::new();
    for (i, ch_) in cands.iter().enumerate() {
        let label = ch_.label();
        eprint!("  [{}/{}] {label} … ", i + 1, cands.len());
        let mut c = cuda.from_host(&ch).map_err(e("C upload"))?;
        let timed = cuda.time(3, a.reps, |_| api::gemm_with(&cuda, *ch_, &a_dev, &b_dev, &mut c));
        let mut row = GemmCandidate {
            shape: shape.clone(),
            dtype: ty.to_string(),
            output: output.to_string(),
            class: class.clone(),
            config: label.clone(),
            median_ms: None,
            tflops: None,
            device: device.clone(),
            error: None,
        };
        match timed {
            Ok(t) => {
                let got = host::to_f64(&cuda.to_host(&c).map_err(e("C download"))?.buffer());
                match check_sampled(&a_at, &b_at, &got, (m, n, k), output) {
                    Ok(()) => {
                        row.median_ms = Some(t.median_ms());
                        row.tflops = Some(flops / (t.median_ms() * 1e-3) / 1e12);
                        eprintln!(
                            "{:.3} ms, {:.1} TFLOP/s",
                            t.median_ms(),
                            row.tflops.unwrap_or(0.0)
                        );
                    }
                    Err(why) => {
                        eprintln!("WRONG: {why}");
                        row.error = Some(why);
                    }
                }
            }
            Err(x) => {
                eprintln!("FAILED: {x}");
                row.error = Some(x.to_string());
            }
        }
        rows.push((*ch_, row));
    }
    rows.sort_by(|x, y| {
        let t = |r: &GemmCandidate| r.tflops.unwrap_or(-1.0);
        t(&y.1).total_cmp(&t(&x.1))
    });
    let tf_of = |c: GemmChoice| rows.iter().find(|r| r.0 == c).and_then(|r| r.1.tflops);
    let base = tf_of(heuristic);
    outln!(
        "{:>4} {:<62} {:>9} {:>9} {:>12}",
        "rank",
        "configuration",
        "ms",
        "TFLOP/s",
        "× heuristic"
    )?;
    for (i, (choice, r)) in rows.iter().enumerate() {
        let mut tags = String::new();
        if *choice == heuristic {
            tags += " [heuristic]";
        }
        if *choice == in_use && in_use != heuristic {
            tags += " [tuned]";
        }
        let rel = match (r.tflops, base) {
            (Some(t), Some(b)) => format!("{:.3}", t / b),
            _ => "—".into(),
        };
        match (r.median_ms, r.tflops) {
            (Some(ms), Some(tf)) => outln!(
                "{:>4} {:<62} {:>9.3} {:>9.1} {:>12}",
                i + 1,
                format!("{}{tags}", r.config),
                ms,
                tf,
                rel
            )?,
            _ => outln!(
                "{:>4} {:<62} {}",
                i + 1,
                format!("{}{tags}", r.config),
                r.error.as_deref().unwrap_or("failed")
            )?,
        }
    }
    if let Some(path) = &a.json {
        let text: Vec<String> =
            rows.iter().map(|r| serde_json::to_string(&r.1).unwrap_or_default()).collect();
        std::fs::write(path, text.join("\n") + "\n")
            .map_err(|x| CliError::WriteFile { path: path.clone(), source: x })?;
    }
    let failed = rows.iter().any(|r| r.1.error.is_some());
    if a.save {
        let Some((choice, best)) = rows.first().filter(|r| r.1.tflops.is_some()) else {
            return Err(CliError::Check {
                what: "tune gemm --save".into(),
                why: "no candidate ran correctly: nothing to save".into(),
            });
        };
        let dir = tilekit_ops::tuning::default_dir();
        let mut t = match GemmTable::load(&dir, &device) {
            Ok(Some((t, _))) => t,
            Ok(None) => GemmTable::default(),
            Err(x) => {
                eprintln!("note: replacing an unusable GEMM tuning file ({x})");
                GemmTable::default()
            }
        };
        let tuned =
            Tuned { choice: *choice, shape: [mi, ni, ki], tflops: best.tflops.unwrap_or(0.0) };
        t.insert(&problem, tuned);
        let path = t
            .save(&dir, &device)
            .map_err(|x| CliError::Check { what: "tune gemm --save".into(), why: x.to_string() })?;
        outln!("saved `{class}` → {} to {}", choice.label(), path.display())?;
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// 64 pseudo-random elements of C (M×N, row-major) against `Σ_x A[i][x]·B[x][j]` in f64, with
/// a K-scaled tolerance (f32 accumulation; a 16-bit output adds its rounding).
fn check_sampled(
    a_at: &dyn Fn(usize, usize) -> f64,
    b_at: &dyn Fn(usize, usize) -> f64,
    got: &[f64],
    (m, n, k): (usize, usize, usize),
    output: ScalarType,
) -> Result<(), String> {
    let mut s = 0x2545_f491_4f6c_dd1d_u64;
    let out_rel = if output == ScalarType::F32 { 0.0 } else { 1.0 / 128.0 };
    for _ in 0..64 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let (i, j) = ((s >> 3) as usize % m, (s >> 33) as usize % n);
        let terms = (0..k).map(|x| a_at(i, x) * b_at(x, j));
        let want: f64 = terms.clone().sum();
        let tol = terms.map(f64::abs).sum::<f64>() * 8.0 * f64::from(f32::EPSILON)
            + want.abs() * out_rel
            + 1e-6;
        let g = got[i * n + j];
        if g.is_nan() || (g - want).abs() > tol {
            return Err(format!("C[{i}][{j}] = {g}, reference {want}"));
        }
    }
    Ok(())
}
