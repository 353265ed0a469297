//! `tilekit sfc`: show a space-filling curve — its access table, a grid picture, JSON or SVG.
//!
//! ```text
//! $ tilekit sfc --lengths 4,8 --vector 1,4 --snake
//! space_filling_curve(lengths [4, 8], order [0, 1], scalars [1, 4], snake)
//! scalar_per_vector 4, access_lengths [4, 2], ordered_access_lengths [4, 2], num_access 8
//!
//! i  index   extent  forward_step
//! 0  [0, 0]  [1, 4]  [0, 4]
//! 1  [0, 4]  [1, 4]  [1, 0]
//! …
//!
//! grid: rows = dim 0, columns = dim 1; each cell shows the access that covers it
//!   0 0 0 0 1 1 1 1
//!   3 3 3 3 2 2 2 2
//!   …
//! ```
//!
//! * `--order` defaults to `0,1,…,n−1` (dim 0 slowest), `--vector` to all 1.
//! * The table lists every access up to [`TABLE_MAX_ROWS`] (else the first and last
//!   [`TABLE_EDGE_ROWS`]); the grid is printed up to [`GRID_MAX_ELEMENTS`] elements.
//! * `--json` prints the curve in the shape of the conformance files' `sfc.json` configs, with
//!   each access's valid `extent` added. It lists every access, written as it is computed
//!   (nothing is collected first), for curves of up to [`JSON_MAX_ACCESSES`] accesses (about
//!   100 MB of JSON); a larger curve is refused with an error naming the count.
//! * `--stats` adds locality statistics of the access order ([`locality`]): the curve's
//!   accesses as offsets into packed row-major storage of the lengths (`--elem-bytes`, default
//!   4), classified by [`tilekit_tile::analysis::cache::locality`] (sequential steps, jumps
//!   within a 128-byte line, large jumps, lines touched and line visits), next to the design
//!   document's index-space classifier ([`tilekit_tile::analysis::cache::manhattan_steps`]).
//!   With `--json` they are the `locality` field. The statistics walk the curve once, without
//!   collecting it, for curves of up to [`STATS_MAX_ACCESSES`] accesses (their memory grows
//!   only with the distinct 128-byte lines touched); larger curves are refused by name.
//! * `--svg FILE` draws the curve: the element grid, each access as a bar over the cells it
//!   covers (dashed when partial), numbered in order, with arrows from each access to the next
//!   (dashed red where consecutive accesses are not neighbours). Pictures are drawn for 1-D
//!   (one row) and 2-D curves of up to 128 elements per side; for higher ranks `--svg` is an
//!   error naming the rank (the text grid shows higher ranks as one 2-D slice per leading index).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;
use tilekit_layout::{LayoutError, SpaceFillingCurve};
use tilekit_tile::analysis::cache;

use crate::svg::{Style, Svg};
use crate::CliError;

/// Largest side (in elements) of a curve that `--svg` draws.
pub const SVG_MAX_SIDE: i64 = 128;

/// Largest number of accesses the text table lists in full.
pub const TABLE_MAX_ROWS: i64 = 10_000;

/// Rows shown at each end of a longer table.
pub const TABLE_EDGE_ROWS: i64 = 20;

/// Largest number of elements the text grid prints.
pub const GRID_MAX_ELEMENTS: i64 = 4096;

/// Largest number of accesses `--json` lists (2^20, about 100 MB of JSON).
pub const JSON_MAX_ACCESSES: i64 = 1 << 20;

/// Largest number of accesses `--stats` walks (2^22).
pub const STATS_MAX_ACCESSES: i64 = 1 << 22;

/// Arguments of `tilekit sfc`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Tile lengths in elements, comma-separated (e.g. 4,8).
    #[arg(long, allow_hyphen_values = true)]
    pub lengths: String,
    /// Loop order, new-to-old: element k is the dim of the k-th loop from the outside
    /// (default 0,1,…,n-1: dim 0 slowest).
    #[arg(long, allow_hyphen_values = true)]
    pub order: Option<String>,
    /// Elements per access along each dim (default all 1), e.g. 1,4 for vectors of 4 on dim 1.
    #[arg(long, allow_hyphen_values = true)]
    pub vector: Option<String>,
    /// Snake: reverse inner dims on odd outer positions (CK's parity rule).
    #[arg(long)]
    pub snake: bool,
    /// Print JSON instead of the table and grid (every access; curves of up to 1048576 accesses).
    #[arg(long)]
    pub json: bool,
    /// Also draw the curve as an SVG picture into FILE (1-D and 2-D curves).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Add locality statistics of the access order (packed row-major storage of the lengths;
    /// curves of up to 4194304 accesses).
    #[arg(long)]
    pub stats: bool,
    /// Bytes per element for --stats (which 128-byte line an access falls in).
    #[arg(long, default_value_t = 4)]
    pub elem_bytes: u32,
}

/// Parses a comma-separated list of integers given to `flag`.
///
/// ```
/// use tilekit_cli::sfc::parse_list;
/// assert_eq!(parse_list("--lengths", "4, 8").unwrap(), vec![4, 8]);
/// let e = parse_list("--lengths", "4,x").unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "--lengths \"4,x\" is invalid: entry 2 (\"x\") is not an integer; \
///      expected comma-separated integers such as 4,8"
/// );
/// ```
pub fn parse_list(flag: &str, value: &str) -> Result<Vec<i64>, CliError> {
    let bad = |rule: String| CliError::BadArgument {
        flag: flag.to_string(),
        value: value.to_string(),
        rule: format!("{rule}; expected comma-separated integers such as 4,8"),
    };
    if value.trim().is_empty() {
        return Err(bad("the list is empty".into()));
    }
    value
        .split(',')
        .enumerate()
        .map(|(k, s)| {
            let s = s.trim();
            s.parse::<i64>().map_err(|_| bad(format!("entry {} ({s:?}) is not an integer", k + 1)))
        })
        .collect()
}

/// Builds the curve the flags describe; every bad value is a [`CliError::BadArgument`] naming
/// the flag, the value and what is valid.
///
/// ```
/// use tilekit_cli::sfc::{curve_from_args, Args};
/// let args = Args { lengths: "4,8".into(), order: None, vector: Some("1,4".into()),
///                   snake: true, json: false, svg: None, stats: false, elem_bytes: 4 };
/// assert_eq!(curve_from_args(&args).unwrap().num_access(), 8);
/// let bad = Args { order: Some("0,0".into()), ..args };
/// assert_eq!(
///     curve_from_args(&bad).unwrap_err().to_string(),
///     "--order \"0,0\" is invalid: dim_access_order[1] = 0, but dim 0 already appears at \
///      dim_access_order[0]; the order must be a permutation of 0..2"
/// );
/// ```
pub fn curve_from_args(args: &Args) -> Result<SpaceFillingCurve, CliError> {
    let lengths = parse_list("--lengths", &args.lengths)?;
    let n = lengths.len();
    let order = match &args.order {
        None => (0..n).collect(),
        Some(v) => parse_list("--order", v)?
            .into_iter()
            .map(|d| {
                usize::try_from(d).map_err(|_| CliError::BadArgument {
                    flag: "--order".into(),
                    value: v.clone(),
                    rule: format!(
                        "{d} is negative; the order must be a permutation of 0..{n} \
                         (one entry per dim of --lengths)"
                    ),
                })
            })
            .collect::<Result<Vec<usize>, CliError>>()?,
    };
    let scalars = match &args.vector {
        None => vec![1; n],
        Some(v) => parse_list("--vector", v)?,
    };
    SpaceFillingCurve::new(lengths, order, scalars, args.snake).map_err(|e| bad_flag(args, e))
}

/// Turns a constructor error into a `BadArgument` for the flag that carries the field.
fn bad_flag(args: &Args, e: LayoutError) -> CliError {
    let (field, rule) = match &e {
        LayoutError::InvalidParameter { field, value, rule, .. } => {
            (field.clone(), format!("{field} = {value}, but {rule}"))
        }
        LayoutError::CountMismatch { field, got, expected, .. } => {
            (field.clone(), format!("{field} has {got} entries, expected {expected}"))
        }
        LayoutError::Overflow { quantity, operands, .. } => {
            (operands.clone(), format!("{quantity} overflows i64 ({operands})"))
        }
    };
    let (flag, value) = if field.starts_with("dim_access_order") {
        ("--order", args.order.clone())
    } else if field.starts_with("scalars_per_access") {
        ("--vector", args.vector.clone())
    } else {
        ("--lengths", Some(args.lengths.clone()))
    };
    CliError::BadArgument {
        flag: flag.into(),
        value: value.unwrap_or_else(|| "(default)".into()),
        rule,
    }
}

/// The JSON form of a curve: the fields of a conformance `sfc.json` config plus each access's
/// valid `extent`.
#[derive(Debug, Serialize)]
pub struct CurveJson {
    /// `TensorLengths`.
    pub tensor_lengths: Vec<i64>,
    /// `DimAccessOrder` (new-to-old).
    pub dim_access_order: Vec<usize>,
    /// `ScalarsPerAccess`.
    pub scalars_per_access: Vec<i64>,
    /// `SnakeCurved`.
    pub snake_curved: bool,
    /// Number of dims.
    pub ndim: usize,
    /// `Π scalars_per_access`.
    pub scalar_per_vector: i64,
    /// Accesses per dim (ceil).
    pub access_lengths: Vec<i64>,
    /// Accesses per dim in loop order.
    pub ordered_access_lengths: Vec<i64>,
    /// Number of accesses.
    pub num_access: i64,
    /// `index(num_access − 1) − index(0)`.
    pub step_first_to_last: Option<Vec<i64>>,
    /// Every access.
    pub accesses: Vec<AccessJson>,
}

/// One access in [`CurveJson`].
#[derive(Debug, Serialize)]
pub struct AccessJson {
    /// Access number.
    pub i: i64,
    /// Start index in elements.
    pub index: Vec<i64>,
    /// Valid elements per dim.
    pub extent: Vec<i64>,
    /// Step to the next access (`null` for the last).
    pub forward_step: Option<Vec<i64>>,
    /// Step to the previous access (`null` for the first).
    pub backward_step: Option<Vec<i64>>,
}

/// The JSON form of `sfc`, collected in memory (for curves of any size the command streams
/// the same text with [`write_json`] instead; this is for small curves and tests).
///
/// ```
/// use tilekit_layout::SpaceFillingCurve;
/// let sfc = SpaceFillingCurve::new(vec![2, 4], vec![0, 1], vec![1, 4], true).unwrap();
/// let j = serde_json::to_value(tilekit_cli::sfc::to_json(&sfc)).unwrap();
/// assert_eq!(j["num_access"], 2);
/// assert_eq!(j["accesses"][1]["index"], serde_json::json!([1, 0]));
/// assert_eq!(j["accesses"][1]["forward_step"], serde_json::Value::Null);
/// ```
pub fn to_json(sfc: &SpaceFillingCurve) -> CurveJson {
    CurveJson {
        tensor_lengths: sfc.tensor_lengths().to_vec(),
        dim_access_order: sfc.dim_access_order().to_vec(),
        scalars_per_access: sfc.scalars_per_access().to_vec(),
        snake_curved: sfc.snake(),
        ndim: sfc.ndim(),
        scalar_per_vector: sfc.scalar_per_vector(),
        access_lengths: sfc.access_lengths().to_vec(),
        ordered_access_lengths: sfc.ordered_access_lengths().to_vec(),
        num_access: sfc.num_access(),
        step_first_to_last: sfc.step_between(0, sfc.num_access() - 1).ok(),
        accesses: sfc
            .accesses()
            .map(|a| AccessJson {
                forward_step: sfc.forward_step(a.i),
                backward_step: sfc.backward_step(a.i),
                i: a.i,
                index: a.index,
                extent: a.extent,
            })
            .collect(),
    }
}

/// The JSON text `tilekit sfc --json` prints: [`to_json`] with one field per line and one
/// access per line (valid JSON, easy to read and to diff).
///
/// ```
/// use tilekit_layout::SpaceFillingCurve;
/// let sfc = SpaceFillingCurve::new(vec![3], vec![0], vec![2], false).unwrap();
/// let text = tilekit_cli::sfc::to_json_text(&sfc);
/// assert!(text.contains("\n  \"access_lengths\": [2],\n"));
/// assert!(text.contains(
///     "\n    {\"i\":1,\"index\":[2],\"extent\":[1],\"forward_step\":null,\"backward_step\":[-2]}\n"
/// ));
/// let back: serde_json::Value = serde_json::from_str(&text).unwrap();
/// assert_eq!(back, serde_json::to_value(tilekit_cli::sfc::to_json(&sfc)).unwrap());
/// ```
pub fn to_json_text(sfc: &SpaceFillingCurve) -> String {
    let mut out = Vec::new();
    // writing into a Vec cannot fail
    let _ = write_json(sfc, None, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Writes the text of [`to_json_text`] (with a `locality` field when `stats` is given) to `w`
/// one access at a time: memory stays constant whatever the curve's size.
///
/// ```
/// use tilekit_layout::SpaceFillingCurve;
/// let sfc = SpaceFillingCurve::new(vec![2, 2], vec![0, 1], vec![1, 1], false).unwrap();
/// let mut out = Vec::new();
/// tilekit_cli::sfc::write_json(&sfc, None, &mut out).unwrap();
/// assert_eq!(String::from_utf8(out).unwrap(), tilekit_cli::sfc::to_json_text(&sfc));
/// ```
pub fn write_json(
    sfc: &SpaceFillingCurve,
    stats: Option<&Locality>,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    fn c<T: Serialize>(v: &T) -> String {
        serde_json::to_string(v).unwrap_or_else(|e| format!("\"(unserializable: {e})\""))
    }
    let n = sfc.num_access();
    let fields = [
        ("tensor_lengths", c(&sfc.tensor_lengths())),
        ("dim_access_order", c(&sfc.dim_access_order())),
        ("scalars_per_access", c(&sfc.scalars_per_access())),
        ("snake_curved", c(&sfc.snake())),
        ("ndim", c(&sfc.ndim())),
        ("scalar_per_vector", c(&sfc.scalar_per_vector())),
        ("access_lengths", c(&sfc.access_lengths())),
        ("ordered_access_lengths", c(&sfc.ordered_access_lengths())),
        ("num_access", c(&n)),
        ("step_first_to_last", c(&sfc.step_between(0, n - 1).ok())),
    ];
    writeln!(w, "{{")?;
    for (k, v) in fields {
        writeln!(w, "  \"{k}\": {v},")?;
    }
    if let Some(l) = stats {
        writeln!(w, "  \"locality\": {},", l.to_json())?;
    }
    writeln!(w, "  \"accesses\": [")?;
    for a in sfc.accesses() {
        let last = a.i == n - 1;
        let j = AccessJson {
            forward_step: sfc.forward_step(a.i),
            backward_step: sfc.backward_step(a.i),
            i: a.i,
            index: a.index,
            extent: a.extent,
        };
        writeln!(w, "    {}{}", c(&j), if last { "" } else { "," })?;
    }
    writeln!(w, "  ]\n}}")
}

fn list(v: &[i64]) -> String {
    format!("{v:?}")
}

/// The text report: header, access table and grid picture.
///
/// ```
/// use tilekit_layout::SpaceFillingCurve;
/// let sfc = SpaceFillingCurve::new(vec![2, 3], vec![0, 1], vec![1, 1], true).unwrap();
/// let text = tilekit_cli::sfc::to_text(&sfc);
/// assert!(text.contains("\n3  [1, 2]  [1, 1]  [0, -1]\n"));
/// assert!(text.ends_with("  0 1 2\n  5 4 3\n"));
/// ```
pub fn to_text(sfc: &SpaceFillingCurve) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{sfc}");
    let _ = writeln!(
        out,
        "scalar_per_vector {}, access_lengths {}, ordered_access_lengths {}, num_access {}",
        sfc.scalar_per_vector(),
        list(sfc.access_lengths()),
        list(sfc.ordered_access_lengths()),
        sfc.num_access()
    );
    out.push('\n');

    let n = sfc.num_access();
    let row = |i: i64| -> [String; 4] {
        let index = sfc.index_of(&i);
        let extent = sfc.valid_extent_of(&i);
        let partial =
            if extent.iter().zip(sfc.scalars_per_access()).any(|(e, s)| e < s) { "*" } else { "" };
        [
            i.to_string(),
            list(&index),
            format!("{}{partial}", list(&extent)),
            sfc.forward_step(i).map_or_else(|| "-".to_string(), |s| list(&s)),
        ]
    };
    // all rows up to TABLE_MAX_ROWS accesses, else the first and last TABLE_EDGE_ROWS
    let (rows, omitted): (Vec<[String; 4]>, i64) = if n <= TABLE_MAX_ROWS {
        ((0..n).map(row).collect(), 0)
    } else {
        let ids = (0..TABLE_EDGE_ROWS).chain(n - TABLE_EDGE_ROWS..n);
        (ids.map(row).collect(), n - 2 * TABLE_EDGE_ROWS)
    };
    let head = ["i", "index", "extent", "forward_step"];
    let mut w = head.map(str::len);
    for r in &rows {
        for (c, cell) in r.iter().enumerate() {
            w[c] = w[c].max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 4]| {
        format!(
            "{:>w0$}  {:<w1$}  {:<w2$}  {}",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        )
    };
    let _ = writeln!(out, "{}", line(head).trim_end());
    for (k, r) in rows.iter().enumerate() {
        if omitted > 0 && k as i64 == TABLE_EDGE_ROWS {
            let _ = writeln!(out, "… {omitted} accesses not shown (--json lists every access)");
        }
        let _ = writeln!(out, "{}", line([&r[0], &r[1], &r[2], &r[3]]).trim_end());
    }
    if sfc.tensor_lengths().iter().zip(sfc.scalars_per_access()).any(|(l, s)| l % s != 0) {
        out.push_str("(* partial access: the length is not a multiple of the vector)\n");
    }
    out.push('\n');
    out.push_str(&grid(sfc));
    out
}

/// The grid picture: each element labelled with the access that covers it. 1-D is one row;
/// 2-D is rows = dim 0, columns = dim 1; higher ranks print one 2-D slice of the last two dims
/// per leading index.
fn grid(sfc: &SpaceFillingCurve) -> String {
    let lengths = sfc.tensor_lengths();
    let total: i64 = lengths.iter().product();
    let mut out = String::new();
    if total > GRID_MAX_ELEMENTS {
        let _ = writeln!(
            out,
            "(grid omitted: {total} elements; it is printed up to {GRID_MAX_ELEMENTS})"
        );
        return out;
    }
    let n = lengths.len();
    let width = (sfc.num_access() - 1).to_string().len();
    let (rows, cols) = match n {
        1 => (1, lengths[0]),
        _ => (lengths[n - 2], lengths[n - 1]),
    };
    let lead = &lengths[..n.saturating_sub(2)];
    let _ = match n {
        1 => writeln!(out, "grid: one row (dim 0); each cell shows the access that covers it"),
        2 => writeln!(
            out,
            "grid: rows = dim 0, columns = dim 1; each cell shows the access that covers it"
        ),
        _ => writeln!(
            out,
            "grid: one slice per index of {}; rows = dim {}, columns = dim {}; each cell shows \
             the access that covers it",
            if n == 3 { "dim 0".to_string() } else { format!("dims 0..={}", n - 3) },
            n - 2,
            n - 1
        ),
    };
    let lead_total: i64 = lead.iter().product();
    for l in 0..lead_total {
        // row-major digits of the leading index
        let mut prefix = vec![0i64; lead.len()];
        let mut rest = l;
        for d in (0..lead.len()).rev() {
            prefix[d] = rest % lead[d];
            rest /= lead[d];
        }
        if !lead.is_empty() {
            let dims: Vec<String> =
                prefix.iter().map(i64::to_string).chain(["row".into(), "col".into()]).collect();
            let _ = writeln!(out, "[{}]", dims.join(", "));
        }
        for r in 0..rows {
            out.push(' ');
            for c in 0..cols {
                let mut e = prefix.clone();
                if n > 1 {
                    e.push(r);
                }
                e.push(c);
                let label = sfc.access_at(&e).map_or_else(|| "?".into(), |a| a.to_string());
                let _ = write!(out, " {label:>width$}");
            }
            out.push('\n');
        }
    }
    out
}

/// Why `--svg` cannot draw `sfc`, if it cannot.
fn svg_refusal(sfc: &SpaceFillingCurve) -> Option<String> {
    let l = sfc.tensor_lengths();
    if l.len() > 2 {
        return Some(format!(
            "SVG pictures are drawn for 1-D and 2-D curves; this curve has rank {} \
             (use the text grid or --json for higher ranks)",
            l.len()
        ));
    }
    if l.iter().any(|&x| x > SVG_MAX_SIDE) {
        return Some(format!(
            "SVG pictures are drawn for up to {SVG_MAX_SIDE} elements per side; this curve is {}",
            l.iter().map(i64::to_string).collect::<Vec<_>>().join("×")
        ));
    }
    None
}

/// Draws a 1-D or 2-D curve as a standalone SVG document (see the [module documentation](self)).
/// `Err` holds the reason for curves it does not draw (rank above 2, sides above
/// [`SVG_MAX_SIDE`]).
///
/// ```
/// use tilekit_layout::SpaceFillingCurve;
/// let sfc = SpaceFillingCurve::new(vec![4, 8], vec![0, 1], vec![1, 4], true).unwrap();
/// let doc = tilekit_cli::sfc::to_svg(&sfc).unwrap();
/// assert!(doc.starts_with("<svg") && doc.ends_with("</svg>\n"));
/// assert_eq!(doc.matches("class=\"access\"").count(), 8);
/// let cube = SpaceFillingCurve::new(vec![2, 2, 2], vec![0, 1, 2], vec![1, 1, 1], true).unwrap();
/// assert!(tilekit_cli::sfc::to_svg(&cube).unwrap_err().contains("rank 3"));
/// ```
pub fn to_svg(sfc: &SpaceFillingCurve) -> Result<String, String> {
    if let Some(why) = svg_refusal(sfc) {
        return Err(why);
    }
    let l = sfc.tensor_lengths();
    let (rows, cols) = if l.len() == 1 { (1, l[0]) } else { (l[0], l[1]) };
    // 2-D element (r, c) ↔ curve index; 1-D curves are one row
    let rc = |idx: &[i64]| if idx.len() == 1 { (0, idx[0]) } else { (idx[0], idx[1]) };
    let n = sfc.num_access();
    let biggest = rows.max(cols);
    let cell: f64 = if biggest <= 16 {
        44.0
    } else if biggest <= 40 {
        28.0
    } else {
        16.0
    };
    let (left, top, pad) = (58.0, 92.0, 18.0);
    let title = sfc.to_string();
    let kinds = if sfc.scalar_per_vector() > 1 {
        format!("{n} accesses of {} elements", list(sfc.scalars_per_access()))
    } else {
        format!("{n} scalar accesses")
    };
    let legend =
        "arrows follow the access order; red dashed arrow = jump; dashed bar = partial access";
    // rough text widths (DejaVu Sans): 0.58 em bold title, 0.52 em legend
    let text_width = (title.chars().count() as f64 * 13.0 * 0.58)
        .max(kinds.chars().count() as f64 * 11.0 * 0.52)
        .max(legend.chars().count() as f64 * 11.0 * 0.52);
    let width = (left + cols as f64 * cell).max(left + text_width) + pad;
    let height = top + rows as f64 * cell + pad;
    let mut svg = Svg::new(width, height);
    svg.arrow_marker("step", "#222");
    svg.arrow_marker("jump", "#c0392b");

    // title and legend
    svg.rect(0.0, 0.0, width, height, &Style::new().fill("white"));
    svg.text(left, 22.0, &title, &Style::new().attr("font-size", 13).attr("font-weight", "bold"));
    let small = Style::new().attr("font-size", 11).fill("#555");
    svg.text(left, 39.0, &kinds, &small);
    svg.text(left, 54.0, legend, &small);

    // axes
    let axis = Style::new().attr("font-size", 10).fill("#777").attr("text-anchor", "middle");
    let label_every = if cell < 20.0 { 4 } else { 1 };
    let caption = Style::new().attr("font-size", 10).fill("#333");
    let col_caption = if l.len() == 1 { "dim 0 →" } else { "dim 1 →" };
    svg.text(left, top - 22.0, col_caption, &caption);
    for c in (0..cols).filter(|c| c % label_every == 0) {
        svg.text(left + (c as f64 + 0.5) * cell, top - 6.0, &c.to_string(), &axis);
    }
    if l.len() == 2 {
        for r in (0..rows).filter(|r| r % label_every == 0) {
            svg.text(left - 12.0, top + (r as f64 + 0.5) * cell + 3.5, &r.to_string(), &axis);
        }
        svg.text(8.0, top - 22.0, "dim 0 ↓", &caption);
    }

    // element grid
    let grid_style = Style::new().fill("#fafafa").stroke("#d0d0d0", 1.0);
    for r in 0..rows {
        for c in 0..cols {
            svg.rect(left + c as f64 * cell, top + r as f64 * cell, cell, cell, &grid_style);
        }
    }

    // access bars
    let inset = (cell * 0.1).min(4.0);
    let mut centers = Vec::new();
    for a in sfc.accesses() {
        let (r, c) = rc(&a.index);
        let (h, w) = rc(&a.extent);
        let h = if l.len() == 1 { 1 } else { h };
        let hue = if n > 1 { 220.0 - 200.0 * a.i as f64 / (n - 1) as f64 } else { 220.0 };
        let (x, y) = (left + c as f64 * cell + inset, top + r as f64 * cell + inset);
        let (bw, bh) = (w as f64 * cell - 2.0 * inset, h as f64 * cell - 2.0 * inset);
        let mut style = Style::new()
            .attr("class", "access")
            .fill(&format!("hsl({hue:.0}, 70%, 86%)"))
            .stroke(&format!("hsl({hue:.0}, 55%, 40%)"), 1.5)
            .attr("rx", num_attr(inset * 1.5));
        if a.is_partial(sfc) {
            style = style.dash("4 3");
        }
        svg.rect(x, y, bw, bh, &style);
        centers.push((x + bw / 2.0, y + bh / 2.0));
    }

    // arrows between consecutive accesses, arrowhead at each segment's middle
    for i in 0..n.saturating_sub(1) {
        let (Some(&a), Some(&b)) = (centers.get(i as usize), centers.get(i as usize + 1)) else {
            continue;
        };
        let neighbour = sfc.forward_step(i).is_some_and(|s| {
            let moved: Vec<usize> = (0..s.len()).filter(|&d| s[d] != 0).collect();
            moved.len() == 1 && s[moved[0]].abs() == sfc.scalars_per_access()[moved[0]]
        });
        let mid = ((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0);
        let style = if neighbour {
            Style::new().fill("none").stroke("#222", 1.4).marker_mid("step")
        } else {
            Style::new().fill("none").stroke("#c0392b", 1.4).dash("5 3").marker_mid("jump")
        };
        svg.polyline(&[a, mid, b], &style);
    }

    // access numbers on top
    let r = (cell * 0.3).min(11.0);
    let font = if n >= 100 { r * 0.85 } else { r * 1.05 };
    for (i, &(x, y)) in centers.iter().enumerate() {
        svg.circle(x, y, r, &Style::new().fill("white").stroke("#444", 1.0));
        svg.text(
            x,
            y + font * 0.36,
            &i.to_string(),
            &Style::new()
                .attr("font-size", num_attr(font))
                .attr("text-anchor", "middle")
                .fill("#111"),
        );
    }
    Ok(svg.finish())
}

fn num_attr(v: f64) -> String {
    crate::svg::num(v)
}

fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|source| CliError::WriteFile { path: path.to_path_buf(), source })
}

/// Locality statistics of a curve's access order (see the [module documentation](self)).
///
/// ```
/// use tilekit_layout::SpaceFillingCurve;
/// use tilekit_cli::sfc::locality;
/// // 4×8 fp32, vectors of 4 along the row, snake: offsets 0 4 | 12 8 | 16 20 | 28 24, all in
/// // one 128-byte line; steps ±4 (one vector) are sequential, the row changes (+8) are not
/// let sfc = SpaceFillingCurve::new(vec![4, 8], vec![0, 1], vec![1, 4], true).unwrap();
/// let l = locality(&sfc, 4).unwrap();
/// assert_eq!((l.memory.steps, l.memory.sequential, l.memory.within_line, l.memory.large_jumps), (7, 4, 3, 0));
/// assert_eq!((l.memory.distinct_lines, l.memory.line_visits), (1, 1));
/// assert_eq!((l.index_space.sequential, l.index_space.cache_line_jumps), (3, 4));
/// assert!(locality(&sfc, 0).is_err());
/// ```
pub fn locality(sfc: &SpaceFillingCurve, elem_bytes: u32) -> Result<Locality, CliError> {
    let n = sfc.num_access();
    if n > STATS_MAX_ACCESSES {
        return Err(CliError::BadArgument {
            flag: "--stats".into(),
            value: sfc.to_string(),
            rule: format!(
                "the curve has {n} accesses; the statistics walk curves of up to \
                 {STATS_MAX_ACCESSES} accesses"
            ),
        });
    }
    let lengths = sfc.tensor_lengths();
    // offsets fit: they are below the element count, which the curve checked
    let offsets =
        sfc.accesses().map(|a| a.index.iter().zip(lengths).fold(0, |acc, (i, l)| acc * l + i));
    let vector = u32::try_from(sfc.scalar_per_vector()).unwrap_or(u32::MAX);
    let memory =
        cache::locality_of(offsets, elem_bytes, vector).map_err(|e| CliError::BadArgument {
            flag: "--elem-bytes".into(),
            value: elem_bytes.to_string(),
            rule: e.to_string(),
        })?;
    let index_space = cache::manhattan_steps_of(sfc.accesses().map(|a| a.index));
    Ok(Locality { elem_bytes, memory, index_space })
}

/// What [`locality`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locality {
    /// Bytes per element used for the memory view.
    pub elem_bytes: u32,
    /// Steps classified by memory offset (packed row-major storage).
    pub memory: cache::LocalityStats,
    /// Steps classified by Manhattan distance in index space (the design document's analyzer).
    pub index_space: cache::ManhattanSteps,
}

impl Locality {
    /// The text block `--stats` prints.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![2, 2], vec![1, 0], vec![1, 1], false).unwrap();
    /// let text = tilekit_cli::sfc::locality(&sfc, 4).unwrap().to_text();
    /// assert!(text.contains("steps 3: sequential 1, jumps within a line 2, large jumps 0"));
    /// ```
    pub fn to_text(&self) -> String {
        let m = &self.memory;
        let i = &self.index_space;
        format!(
            "locality (packed row-major storage, {} bytes per element, {}-byte lines):\n  \
             memory:      steps {}: sequential {}, jumps within a line {}, large jumps {}; \
             mean |step| {:.2} elements\n  \
             lines:       {} distinct, {} line visits (what a one-line cache fetches)\n  \
             index space: sequential {}, within cache line {}, large jumps {} \
             (the design document's Manhattan-distance classes)\n",
            self.elem_bytes,
            cache::LINE_BYTES,
            m.steps,
            m.sequential,
            m.within_line,
            m.large_jumps,
            m.mean_jump(),
            m.distinct_lines,
            m.line_visits,
            i.sequential,
            i.cache_line_jumps,
            i.large_jumps
        )
    }

    /// The JSON object of `--stats --json` (field `locality`).
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![4], vec![0], vec![1], false).unwrap();
    /// let j = tilekit_cli::sfc::locality(&sfc, 4).unwrap().to_json();
    /// assert_eq!(j["memory"]["sequential"], 3);
    /// assert_eq!(j["index_space"]["large_jumps"], 0);
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        let m = &self.memory;
        let i = &self.index_space;
        serde_json::json!({
            "elem_bytes": self.elem_bytes,
            "line_bytes": cache::LINE_BYTES,
            "memory": {
                "steps": m.steps, "sequential": m.sequential, "within_line": m.within_line,
                "large_jumps": m.large_jumps, "total_jump": m.total_jump, "mean_jump": m.mean_jump(),
                "distinct_lines": m.distinct_lines, "line_visits": m.line_visits,
            },
            "index_space": {
                "sequential": i.sequential, "cache_line_jumps": i.cache_line_jumps,
                "large_jumps": i.large_jumps,
            },
        })
    }
}

/// Runs `tilekit sfc`.
pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    let sfc = curve_from_args(args)?;
    let stats = if args.stats { Some(locality(&sfc, args.elem_bytes)?) } else { None };
    let svg = match &args.svg {
        None => None,
        Some(path) => {
            let doc = to_svg(&sfc).map_err(|rule| CliError::BadArgument {
                flag: "--svg".into(),
                value: path.display().to_string(),
                rule,
            })?;
            Some((path, doc))
        }
    };
    if args.json {
        let n = sfc.num_access();
        if n > JSON_MAX_ACCESSES {
            return Err(CliError::BadArgument {
                flag: "--json".into(),
                value: args.lengths.clone(),
                rule: format!(
                    "the curve has {n} accesses; --json lists every access and is limited to \
                     {JSON_MAX_ACCESSES} (the text table shows the first and last \
                     {TABLE_EDGE_ROWS})"
                ),
            });
        }
        let stdout = std::io::stdout();
        let mut w = std::io::BufWriter::new(stdout.lock());
        write_json(&sfc, stats.as_ref(), &mut w)
            .and_then(|()| std::io::Write::flush(&mut w))
            .map_err(CliError::Output)?;
    } else {
        crate::out!("{}", to_text(&sfc))?;
        if let Some(l) = &stats {
            crate::out!("\n{}", l.to_text())?;
        }
    }
    if let Some((path, doc)) = svg {
        write_file(path, &doc)?;
        if !args.json {
            crate::outln!("\nwrote {}", path.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
