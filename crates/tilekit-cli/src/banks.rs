//! `tilekit banks`: shared-memory bank conflicts of a tile layout, per warp request, with a
//! bank heat map (text and SVG).
//!
//! Two ways to say who reads what:
//!
//! ```text
//! (a) a layout and a warp walk over the whole tile
//! $ tilekit banks --layout row-major --tile 64x64 --dtype fp16 --access col-vec8
//! (b) a tile distribution encoding and a window over the shared-memory tile
//! $ tilekit banks --layout swizzle128 --dtype fp16 --encoding 'H[[4,16],[8,8]] P[[X1.0,X0.1]] Y[X0.0,X1.1]'
//!
//! shared memory: 64×64 fp16, layout swizzle128
//! reads: ... 16 requests of 16 bytes per lane
//! totals: 64 wavefronts (ideal 64, 1.00×), worst 1-way, 0 of 16 requests with a conflict
//! request  warp  access  wavefronts  ideal  worst
//! …
//! heat map of request 0 (the worst; --request K shows another)
//! phase lanes  banks 0..31 (distinct words)
//! …
//! ```
//!
//! * `--layout`: how the tile is stored — `row-major`, `col-major`, `padded:P` (P elements
//!   after each row), `morton` (Z order in square tiles), `swizzle128|swizzle64|swizzle32`
//!   (Hopper's TMA/wgmma swizzles; rows must be exactly 128/64/32 bytes), `xor-lds` (CK's XOR
//!   LDS layout of a GEMM operand).
//! * `--tile RxC` (default: the distribution's X lengths in mode (b)), `--dtype` fp32, fp16,
//!   bf16, f64 (also `f32`, `f16`); 1-byte types are not covered by the bank model.
//! * (a) `--access`: `row` / `col` (one element per lane, lanes along a row / down a column,
//!   wrapping), `row-vecN` / `col-vecN` (N-element vectors, at most 16 bytes per lane; lanes
//!   along a row of vectors / down a column of vectors). The walk covers the whole tile.
//! * (b) `--encoding ENC` (the forms `tilekit show` reads); `--origin` (default 0,…),
//!   `--snake` for the Oct 2024 access order. Thread `t` (P indices row-major) is lane
//!   `t mod 32` of warp `t / 32`; every access of every warp is one request.
//! * `--request K`: which request's heat map to show (default: the worst).
//! * `--svg FILE`: the heat map of that request (phases × banks) and of the whole walk.
//! * `--json`: totals, every request's numbers, the heat maps.
//!
//! The model and its limits: [`tilekit_tile::analysis::banks`]; the requests:
//! [`tilekit_tile::analysis::requests`]. A walk is analysed up to
//! [`MAX_REQUESTS`](tilekit_tile::analysis::requests::MAX_REQUESTS) = 65536 requests (e.g. a
//! 2048×1024 fp32 tile read one element per lane); a larger one is refused with an error
//! naming its size, before anything is walked. Layout sizes past `i64` (`padded:P` with a huge
//! `P`) are overflow errors.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;
use tilekit_tile::analysis::banks::{BankReport, NUM_BANKS};
use tilekit_tile::analysis::requests::{
    summarize, tile_requests, window_requests, RequestsSummary, SmemLayout, WarpPattern,
    SMEM_LAYOUT_NAMES, WARP_PATTERN_NAMES,
};
use tilekit_tile::analysis::WarpAccess;
use tilekit_tile::render::Dtype;
use tilekit_tile::traits::AccessCurve;
use tilekit_tile::TileDistribution;

use crate::svg::{num, Style, Svg};
use crate::CliError;

/// Most requests the text table lists in full (else the first and last 16).
pub const TABLE_MAX_ROWS: usize = 64;

/// Arguments of `tilekit banks`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// How the shared-memory tile is stored: row-major, col-major, padded:P, morton,
    /// swizzle128, swizzle64, swizzle32, xor-lds.
    #[arg(long, default_value = "row-major")]
    pub layout: String,
    /// Tile size RxC (default in --encoding mode: the distribution's X lengths); walks of up to
    /// 65536 warp requests are analysed.
    #[arg(long, value_name = "RxC")]
    pub tile: Option<String>,
    /// Element type: fp32, fp16, bf16, f64 (f32, f16 accepted).
    #[arg(long, default_value = "fp32")]
    pub dtype: String,
    /// Warp walk over the tile: row, col, row-vecN, col-vecN.
    #[arg(long)]
    pub access: Option<String>,
    /// A tile distribution encoding (text form or JSON, as for `tilekit show`): analyse the
    /// window's walk instead of --access.
    #[arg(long, allow_hyphen_values = true)]
    pub encoding: Option<String>,
    /// Window origin in the tile, comma-separated (--encoding mode; default all 0).
    #[arg(long, allow_hyphen_values = true)]
    pub origin: Option<String>,
    /// Snake access order (Oct 2024 reference; --encoding mode).
    #[arg(long)]
    pub snake: bool,
    /// The request whose heat map is shown (default: the worst).
    #[arg(long)]
    pub request: Option<usize>,
    /// Draw the heat maps into FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn bad(flag: &str, value: impl Into<String>, rule: impl Into<String>) -> CliError {
    CliError::BadArgument { flag: flag.into(), value: value.into(), rule: rule.into() }
}

/// Parses `--tile RxC` (or `R×C`).
///
/// ```
/// use tilekit_cli::banks::parse_tile;
/// assert_eq!(parse_tile("64x32").unwrap(), (64, 32));
/// assert_eq!(parse_tile("8×8").unwrap(), (8, 8));
/// assert_eq!(parse_tile("0x8").unwrap_err().to_string(),
///     "--tile \"0x8\" is invalid: expected RxC with R, C in 1..=4096, e.g. 64x64");
/// ```
pub fn parse_tile(value: &str) -> Result<(i64, i64), CliError> {
    let err = || bad("--tile", value, "expected RxC with R, C in 1..=4096, e.g. 64x64");
    let (r, c) = value.split_once(['x', '×']).ok_or_else(err)?;
    let p = |s: &str| s.trim().parse::<i64>().ok().filter(|v| (1..=4096).contains(v));
    Ok((p(r).ok_or_else(err)?, p(c).ok_or_else(err)?))
}

/// Parses `--dtype` for the bank model with the spellings every command accepts
/// ([`crate::dtype::element_dtype`]).
///
/// ```
/// use tilekit_cli::banks::parse_dtype;
/// assert_eq!(parse_dtype("f16").unwrap().size_bytes(), 2);
/// assert!(parse_dtype("int4").is_err());
/// ```
pub fn parse_dtype(value: &str) -> Result<Dtype, CliError> {
    crate::dtype::element_dtype().parse_str(value)
}

/// What was analysed, for the report header.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Header lines describing the tile, layout and walk.
    pub header: Vec<String>,
    /// `(warp, access)` of each request in `--encoding` mode.
    pub labels: Option<Vec<(usize, i64)>>,
    /// The totals and every request's report.
    pub summary: RequestsSummary,
}

/// Runs the analysis the arguments describe (both modes), every bad value a
/// [`CliError::BadArgument`] naming the flag.
///
/// ```
/// use tilekit_cli::banks::{analyse, Args};
/// let a = Args { layout: "row-major".into(), tile: Some("32x32".into()), dtype: "fp32".into(),
///                access: Some("col".into()), ..Args::default() };
/// let r = analyse(&a).unwrap();
/// assert_eq!((r.summary.requests, r.summary.transactions, r.summary.worst_conflict), (32, 1024, 32));
/// let b = Args { access: Some("diag".into()), ..a };
/// assert!(analyse(&b).unwrap_err().to_string().starts_with("--access \"diag\" is invalid"));
/// ```
pub fn analyse(args: &Args) -> Result<Analysis, CliError> {
    let layout: SmemLayout = args.layout.parse().map_err(|_| {
        bad("--layout", args.layout.as_str(), format!("known layouts are {SMEM_LAYOUT_NAMES}"))
    })?;
    let dtype = parse_dtype(&args.dtype)?;
    let bytes = dtype.size_bytes();
    if bytes < 4 && bytes != 2 {
        return Err(bad(
            "--dtype",
            args.dtype.as_str(),
            "the bank model covers 4-, 8- and 16-byte accesses; 1-byte types give smaller ones",
        ));
    }
    match (&args.access, &args.encoding) {
        (Some(_), Some(_)) => Err(bad(
            "--access",
            args.access.clone().unwrap_or_default(),
            "give either --access (a warp walk) or --encoding (a distribution's window), not both",
        )),
        (None, None) => Err(bad(
            "--access",
            "(none)",
            format!("give --access ({WARP_PATTERN_NAMES}) or --encoding ENC"),
        )),
        (Some(acc), None) => {
            let pattern: WarpPattern = acc.parse().map_err(|_| {
                bad("--access", acc.as_str(), format!("known walks are {WARP_PATTERN_NAMES}"))
            })?;
            let tile = args.tile.as_deref().ok_or_else(|| {
                bad("--tile", "(none)", "--access needs --tile RxC, e.g. --tile 32x32")
            })?;
            let (rows, cols) = parse_tile(tile)?;
            let desc = layout
                .descriptor(rows, cols, bytes)
                .map_err(|e| bad("--layout", args.layout.as_str(), e.to_string()))?;
            let reqs = tile_requests(&desc, bytes as u32, pattern)
                .map_err(|e| bad("--access", acc.as_str(), e.to_string()))?;
            let summary =
                summarize(&reqs).map_err(|e| bad("--access", acc.as_str(), e.to_string()))?;
            let n = pattern.vector_len();
            Ok(Analysis {
                header: vec![
                    format!("shared memory: {rows}×{cols} {}, layout {layout}", dtype.name()),
                    format!(
                        "walk: {pattern} ({n} element{} = {} bytes per lane), {} requests covering the tile",
                        if n == 1 { "" } else { "s" },
                        i64::from(n) * bytes,
                        summary.requests
                    ),
                ],
                labels: None,
                summary,
            })
        }
        (None, Some(enc)) => {
            let show = crate::show::Args { encoding: Some(enc.clone()), ..Default::default() };
            let spec = crate::show::spec_from_args(&show)?;
            let dist = TileDistribution::from_spec(spec)
                .map_err(|e| bad("--encoding", enc.as_str(), e.to_string()))?;
            let x = dist.x_lengths();
            if x.len() != 2 {
                return Err(bad(
                    "--encoding",
                    enc.as_str(),
                    format!(
                        "the shared-memory tile is 2-D: the distribution needs 2 X dims, it has {}",
                        x.len()
                    ),
                ));
            }
            let (rows, cols) = match &args.tile {
                Some(t) => parse_tile(t)?,
                None => (x[0], x[1]),
            };
            let origin = match &args.origin {
                None => vec![0, 0],
                Some(o) => {
                    let v = crate::sfc::parse_list("--origin", o)?;
                    if v.len() != 2 {
                        return Err(bad("--origin", o.as_str(), "expected 2 entries (row, col)"));
                    }
                    v
                }
            };
            let desc = layout
                .descriptor(rows, cols, bytes)
                .map_err(|e| bad("--layout", args.layout.as_str(), e.to_string()))?;
            let curve = if args.snake { AccessCurve::Snake } else { AccessCurve::Linear };
            let reqs = window_requests(&dist, &desc, &origin, curve, bytes as u32)
                .map_err(|e| bad("--encoding", enc.as_str(), e.to_string()))?;
            let plain: Vec<WarpAccess> = reqs.iter().map(|r| r.request.clone()).collect();
            let summary =
                summarize(&plain).map_err(|e| bad("--encoding", enc.as_str(), e.to_string()))?;
            let vec_bytes = plain.first().map_or(0, WarpAccess::access_bytes);
            Ok(Analysis {
                header: vec![
                    format!("shared memory: {rows}×{cols} {}, layout {layout}", dtype.name()),
                    format!(
                        "window: {}×{} at ({}, {}), {} threads = {} warps, {} requests of {vec_bytes} bytes per lane",
                        x[0],
                        x[1],
                        origin[0],
                        origin[1],
                        dist.num_threads(),
                        (dist.num_threads() as usize).div_ceil(32),
                        summary.requests
                    ),
                ],
                labels: Some(reqs.iter().map(|r| (r.warp, r.access)).collect()),
                summary,
            })
        }
    }
}

fn ratio(s: &RequestsSummary) -> f64 {
    if s.ideal_transactions == 0 {
        1.0
    } else {
        s.transactions as f64 / s.ideal_transactions as f64
    }
}

/// The text report: header, totals, a table of requests, the heat map of request `shown`, and
/// the heat map summed over all requests.
pub fn to_text(a: &Analysis, shown: Option<usize>) -> String {
    let s = &a.summary;
    let mut out = String::new();
    for h in &a.header {
        let _ = writeln!(out, "{h}");
    }
    let _ = writeln!(
        out,
        "totals: {} wavefronts (ideal {}, {:.2}×), worst {}-way, {} of {} requests with a conflict\n",
        s.transactions,
        s.ideal_transactions,
        ratio(s),
        s.worst_conflict,
        s.conflicted_requests,
        s.requests
    );
    let n = s.reports.len();
    let rows: Vec<usize> =
        if n <= TABLE_MAX_ROWS { (0..n).collect() } else { (0..16).chain(n - 16..n).collect() };
    match &a.labels {
        Some(_) => out.push_str("request  warp  access  wavefronts  ideal  worst\n"),
        None => out.push_str("request  wavefronts  ideal  worst\n"),
    }
    for (k, &i) in rows.iter().enumerate() {
        if n > TABLE_MAX_ROWS && k == 16 {
            let _ = writeln!(out, "… {} requests not shown (--json lists every one)", n - 32);
        }
        let r = &s.reports[i];
        match &a.labels {
            Some(l) => {
                let _ = writeln!(
                    out,
                    "{i:<8} {:<5} {:<7} {:<11} {:<6} {}",
                    l[i].0, l[i].1, r.transactions, r.ideal_transactions, r.worst_conflict
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "{i:<8} {:<11} {:<6} {}",
                    r.transactions, r.ideal_transactions, r.worst_conflict
                );
            }
        }
    }
    if let Some(i) = shown {
        let why =
            if Some(i) == s.worst_request { " (the worst; --request K shows another)" } else { "" };
        let _ = writeln!(out, "\nheat map of request {i}{why}");
        out.push_str(&s.reports[i].heat_map());
    }
    let cells: Vec<String> = s.bank_words.iter().map(u64::to_string).collect();
    let _ = writeln!(
        out,
        "\nheat map of the whole walk (distinct words per bank, summed over requests)"
    );
    let _ = writeln!(out, "  {}", cells.join(" "));
    out
}

fn heat_color(n: u64, max: u64) -> String {
    if n == 0 {
        return "#f4f4f4".into();
    }
    if max <= 1 {
        return "hsl(130, 55%, 72%)".into();
    }
    // 1 word: green; max: red
    let t = (n - 1) as f64 / (max - 1) as f64;
    format!("hsl({:.0}, 70%, {:.0}%)", 130.0 - 130.0 * t, 72.0 - 14.0 * t)
}

/// The heat maps as an SVG picture: one row per phase of `report` (the distinct words each
/// bank delivers; green = one, red = the worst) and one row for the whole walk.
///
/// ```
/// use tilekit_tile::analysis::{banks, requests::summarize, WarpAccess};
/// let a = WarpAccess::from_offsets(4, 1, |l| Some(32 * l as i64)).unwrap();
/// let s = summarize(&[a]).unwrap();
/// let doc = tilekit_cli::banks::heat_svg("fp32 column", &s.reports[0], &s.bank_words);
/// assert!(doc.starts_with("<svg") && doc.contains(">32</text>"));
/// assert_eq!(doc.matches("class=\"bank\"").count(), 2 * 32);
/// ```
pub fn heat_svg(title: &str, report: &BankReport, walk: &[u64; NUM_BANKS]) -> String {
    let cell = 26.0;
    let (left, top, pad) = (96.0, 78.0, 16.0);
    let rows = report.phases.len() + 1;
    let width = left + NUM_BANKS as f64 * cell + pad;
    let height = top + rows as f64 * cell + 20.0 + pad;
    let mut svg = Svg::new(width, height);
    svg.rect(0.0, 0.0, width, height, &Style::new().fill("white"));
    svg.text(12.0, 22.0, title, &Style::new().attr("font-size", 13).attr("font-weight", "bold"));
    let sub = format!(
        "{} wavefronts (ideal {}), worst {}-way; cells: distinct 4-byte words per bank",
        report.transactions, report.ideal_transactions, report.worst_conflict
    );
    svg.text(12.0, 40.0, &sub, &Style::new().attr("font-size", 11).fill("#555"));
    let axis = Style::new().attr("font-size", 9).fill("#777").attr("text-anchor", "middle");
    for b in 0..NUM_BANKS {
        svg.text(left + (b as f64 + 0.5) * cell, top - 6.0, &b.to_string(), &axis);
    }
    svg.text(left, top - 20.0, "bank →", &Style::new().attr("font-size", 10).fill("#333"));
    let label = Style::new().attr("font-size", 10).fill("#333");
    let max_req = report.phases.iter().flat_map(|p| p.bank_words).max().unwrap_or(0);
    // `heat` colours a cell (0 = idle, 1 = green … max = red); `shown` is the number in it
    let draw_row = |svg: &mut Svg, y: f64, heat: &[u64], shown: &[u64], max: u64| {
        for (b, (&n, &label)) in heat.iter().zip(shown).enumerate() {
            let x = left + b as f64 * cell;
            svg.rect(
                x,
                y,
                cell,
                cell,
                &Style::new()
                    .attr("class", "bank")
                    .fill(&heat_color(n, max))
                    .stroke("#ffffff", 1.0),
            );
            if n > 0 {
                svg.text(
                    x + cell / 2.0,
                    y + cell / 2.0 + 3.5,
                    &label.to_string(),
                    &Style::new()
                        .attr("font-size", num(10.0))
                        .attr("text-anchor", "middle")
                        .fill("#111"),
                );
            }
        }
    };
    for (i, p) in report.phases.iter().enumerate() {
        let y = top + i as f64 * cell;
        let lanes = format!("phase {i} ({}..{})", p.lanes.start, p.lanes.end);
        svg.text(12.0, y + cell / 2.0 + 3.5, &lanes, &label);
        let v: Vec<u64> = p.bank_words.iter().map(|&n| u64::from(n)).collect();
        draw_row(&mut svg, y, &v, &v, u64::from(max_req));
    }
    let y = top + report.phases.len() as f64 * cell + 20.0;
    svg.text(12.0, y + cell / 2.0 + 3.5, "whole walk", &label);
    let max_walk = walk.iter().copied().max().unwrap_or(0);
    let min_walk = walk.iter().copied().filter(|&n| n > 0).min().unwrap_or(0);
    // the whole walk is coloured relative to its own spread (even use = green)
    let rel: Vec<u64> = walk.iter().map(|&n| if n == 0 { 0 } else { n - min_walk + 1 }).collect();
    draw_row(&mut svg, y, &rel, walk, max_walk - min_walk + 1);
    svg.finish()
}

/// Runs `tilekit banks`.
pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    let a = analyse(args)?;
    let s = &a.summary;
    let shown = match args.request {
        Some(k) if k >= s.requests => {
            return Err(bad(
                "--request",
                k.to_string(),
                format!("there are {} requests: 0..={}", s.requests, s.requests.saturating_sub(1)),
            ))
        }
        Some(k) => Some(k),
        None => s.worst_request,
    };
    if let Some(path) = &args.svg {
        let Some(i) = shown else {
            return Err(bad("--svg", path.display().to_string(), "there are no requests to draw"));
        };
        let title = format!("{} — request {i}", a.header[0]);
        let doc = heat_svg(&title, &s.reports[i], &s.bank_words);
        std::fs::write(path, doc)
            .map_err(|source| CliError::WriteFile { path: path.clone(), source })?;
    }
    if args.json {
        let reqs: Vec<_> = s
            .reports
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut v = json!({
                    "request": i,
                    "access_bytes": r.access_bytes,
                    "wavefronts": r.transactions,
                    "ideal": r.ideal_transactions,
                    "worst_conflict": r.worst_conflict,
                    "bank_words": r.bank_words,
                });
                if let Some(l) = &a.labels {
                    v["warp"] = json!(l[i].0);
                    v["access"] = json!(l[i].1);
                }
                v
            })
            .collect();
        let v = json!({
            "header": a.header,
            "requests": s.requests,
            "transactions": s.transactions,
            "ideal_transactions": s.ideal_transactions,
            "worst_conflict": s.worst_conflict,
            "conflicted_requests": s.conflicted_requests,
            "worst_request": s.worst_request,
            "bank_words": s.bank_words,
            "shown_request": shown,
            "per_request": reqs,
        });
        crate::outln!("{v}")?;
    } else {
        crate::out!("{}", to_text(&a, shown))?;
        if let Some(path) = &args.svg {
            crate::outln!("\nwrote {}", path.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
