//! `tilekit morton`: the Morton (Z-order) index table of a `2^N × 2^N` tile, single
//! encodes/decodes, and a picture of the Z curve.
//!
//! ```text
//! $ tilekit morton --bits 2
//! Morton (Z-order) index of (y, x) in a 4×4 tile, 2 bits per coordinate: z = y1 x1 y0 x0
//!
//!       x=0 x=1 x=2 x=3
//!   y=0   0   1   4   5
//!   y=1   2   3   6   7
//!   y=2   8   9  12  13
//!   y=3  10  11  14  15
//!
//! $ tilekit morton --bits 32 --encode 3,5 --decode 27
//! encode (y=3, x=5) = 27
//! decode 27 = (y=3, x=5)
//! ```
//!
//! * `--bits N`: bits per coordinate, 1..=32. The table is printed up to [`TABLE_MAX_BITS`]
//!   (64×64); with more bits, only `--encode` / `--decode` are answered.
//! * `--encode Y,X`: the code of row `Y`, column `X` (the documents' `morton_encode_2d(y, x)`
//!   order; `x` takes the even bits); each must be below `2^N`.
//! * `--decode Z`: the `(y, x)` of code `Z < 2^(2N)`.
//! * `--svg FILE`: the Z curve over the tile (up to [`SVG_MAX_BITS`], 32×32): numbered cells
//!   and a polyline through the cell centres in z order.
//! * `--json`: the same as one JSON object.
//!
//! The numbers come from [`tilekit_layout::morton`] (`encode2_bits` / `decode2_bits`, BMI2 when
//! the CPU has it).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;
use tilekit_layout::morton;

use crate::svg::{num, Style, Svg};
use crate::CliError;

/// Most bits per coordinate for which the table is printed (64×64).
pub const TABLE_MAX_BITS: u32 = 6;

/// Most bits per coordinate for which `--svg` draws the curve (32×32).
pub const SVG_MAX_BITS: u32 = 5;

/// Arguments of `tilekit morton`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Bits per coordinate (1..=32): the tile is 2^N × 2^N.
    #[arg(long)]
    pub bits: u32,
    /// Encode one coordinate pair Y,X (row, column).
    #[arg(long, value_name = "Y,X", allow_hyphen_values = true)]
    pub encode: Option<String>,
    /// Decode one Morton code.
    #[arg(long, value_name = "Z", allow_hyphen_values = true)]
    pub decode: Option<String>,
    /// Draw the Z curve into FILE (up to 5 bits).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn bad(flag: &str, value: impl Into<String>, rule: impl Into<String>) -> CliError {
    CliError::BadArgument { flag: flag.into(), value: value.into(), rule: rule.into() }
}

/// Checks `--bits`.
///
/// ```
/// use tilekit_cli::morton::check_bits;
/// assert!(check_bits(32).is_ok());
/// assert_eq!(check_bits(33).unwrap_err().to_string(),
///     "--bits \"33\" is invalid: bits per coordinate must be 1..=32 (a 2-D code is 64 bits)");
/// ```
pub fn check_bits(bits: u32) -> Result<(), CliError> {
    if !(1..=morton::MAX_BITS_2D).contains(&bits) {
        return Err(bad(
            "--bits",
            bits.to_string(),
            "bits per coordinate must be 1..=32 (a 2-D code is 64 bits)",
        ));
    }
    Ok(())
}

/// Parses `--encode Y,X` and encodes it with `bits` bits per coordinate.
///
/// ```
/// use tilekit_cli::morton::encode_arg;
/// assert_eq!(encode_arg("1,2", 2).unwrap(), (1, 2, 6));
/// assert_eq!(encode_arg("4,0", 2).unwrap_err().to_string(),
///     "--encode \"4,0\" is invalid: y = 4 does not fit in 2 bits: coordinates must be 0..=3");
/// assert!(encode_arg("1", 2).is_err());
/// ```
pub fn encode_arg(value: &str, bits: u32) -> Result<(u32, u32, u64), CliError> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    // bits ≥ 64 (not a valid --bits) would overflow the shift: every u64 fits then
    let max = 1u64.checked_shl(bits).map_or(u64::MAX, |v| v - 1);
    let rule = format!("expected Y,X: two integers 0..={max} (row, column)");
    let [ys, xs] = parts[..] else {
        return Err(bad("--encode", value, rule));
    };
    let parse = |name: &str, s: &str| -> Result<u32, CliError> {
        let v: u64 = s.parse().map_err(|_| bad("--encode", value, rule.clone()))?;
        if v > max {
            return Err(bad(
                "--encode",
                value,
                format!("{name} = {v} does not fit in {bits} bits: coordinates must be 0..={max}"),
            ));
        }
        Ok(v as u32)
    };
    let (y, x) = (parse("y", ys)?, parse("x", xs)?);
    let z = morton::encode2_bits(y, x, bits).map_err(|e| bad("--encode", value, e.to_string()))?;
    Ok((y, x, z))
}

/// Parses `--decode Z` and decodes it with `bits` bits per coordinate.
///
/// ```
/// use tilekit_cli::morton::decode_arg;
/// assert_eq!(decode_arg("6", 2).unwrap(), (6, 1, 2));
/// assert_eq!(decode_arg("16", 2).unwrap_err().to_string(),
///     "--decode \"16\" is invalid: a code of 2-bit coordinates must be 0..=15");
/// ```
pub fn decode_arg(value: &str, bits: u32) -> Result<(u64, u32, u32), CliError> {
    let max = if bits >= 32 { u64::MAX } else { (1u64 << (2 * bits)) - 1 };
    let rule = format!("a code of {bits}-bit coordinates must be 0..={max}");
    let z: u64 = value.trim().parse().map_err(|_| bad("--decode", value, rule.clone()))?;
    if z > max {
        return Err(bad("--decode", value, rule));
    }
    let (y, x) =
        morton::decode2_bits(z, bits).map_err(|e| bad("--decode", value, e.to_string()))?;
    Ok((z, y, x))
}

/// The `2^bits × 2^bits` table of codes, rows = y, columns = x (`bits` ≤ [`TABLE_MAX_BITS`]).
///
/// ```
/// let t = tilekit_cli::morton::table(1);
/// assert_eq!(t, vec![vec![0, 1], vec![2, 3]]);
/// ```
pub fn table(bits: u32) -> Vec<Vec<u64>> {
    let side = 1u32 << bits.min(TABLE_MAX_BITS);
    (0..side).map(|y| (0..side).map(|x| morton::encode2(y, x)).collect()).collect()
}

/// The table as text (see the [module documentation](self)).
///
/// ```
/// let text = tilekit_cli::morton::table_text(2);
/// assert!(text.contains("\n  y=2   8   9  12  13\n"));
/// ```
pub fn table_text(bits: u32) -> String {
    let t = table(bits);
    let side = t.len();
    let w = (side * side - 1).to_string().len().max(3);
    let mut bit_names: Vec<String> = Vec::new();
    for b in (0..bits.min(TABLE_MAX_BITS)).rev() {
        bit_names.push(format!("y{b}"));
        bit_names.push(format!("x{b}"));
    }
    let mut out = format!(
        "Morton (Z-order) index of (y, x) in a {side}×{side} tile, {bits} bits per coordinate: z = {}\n\n",
        bit_names.join(" ")
    );
    let yw = format!("y={}", side - 1).len();
    let _ = write!(out, "  {:yw$}", "");
    for x in 0..side {
        let _ = write!(out, " {:>w$}", format!("x={x}"));
    }
    out.push('\n');
    for (y, row) in t.iter().enumerate() {
        let _ = write!(out, "  {:<yw$}", format!("y={y}"));
        for z in row {
            let _ = write!(out, " {z:>w$}");
        }
        out.push('\n');
    }
    out
}

/// The Z curve as an SVG picture: numbered cells and a polyline through the cell centres in z
/// order (`bits` ≤ [`SVG_MAX_BITS`]; `Err` gives the reason otherwise).
///
/// ```
/// let doc = tilekit_cli::morton::curve_svg(2).unwrap();
/// assert!(doc.starts_with("<svg") && doc.contains("<polyline"));
/// assert_eq!(doc.matches("class=\"cell\"").count(), 16);
/// assert!(tilekit_cli::morton::curve_svg(6).is_err());
/// ```
pub fn curve_svg(bits: u32) -> Result<String, String> {
    if bits > SVG_MAX_BITS {
        return Err(format!(
            "the curve is drawn for up to {SVG_MAX_BITS} bits (32×32); {bits} bits is \
             2^{bits}×2^{bits}"
        ));
    }
    let side = 1u32 << bits;
    let cell = match side {
        0..=8 => 48.0,
        9..=16 => 32.0,
        _ => 22.0,
    };
    let (left, top, pad) = (40.0, 62.0, 16.0);
    let title =
        format!("Morton (Z-order) curve, {side}×{side}: z = interleave(y, x), x on even bits");
    let width =
        (left + f64::from(side) * cell + pad).max(left + title.chars().count() as f64 * 7.6);
    let height = top + f64::from(side) * cell + pad;
    let mut svg = Svg::new(width, height);
    svg.rect(0.0, 0.0, width, height, &Style::new().fill("white"));
    let title =
        format!("Morton (Z-order) curve, {side}×{side}: z = interleave(y, x), x on even bits");
    svg.text(left, 22.0, &title, &Style::new().attr("font-size", 13).attr("font-weight", "bold"));
    svg.text(
        left,
        40.0,
        "cells numbered by z; the line visits the cell centres in z order",
        &Style::new().attr("font-size", 11).fill("#555"),
    );
    let n = u64::from(side) * u64::from(side);
    let centre =
        |y: u32, x: u32| (left + (f64::from(x) + 0.5) * cell, top + (f64::from(y) + 0.5) * cell);
    for y in 0..side {
        for x in 0..side {
            let z = morton::encode2(y, x);
            let hue = 220.0 - 200.0 * z as f64 / (n.max(2) - 1) as f64;
            svg.rect(
                left + f64::from(x) * cell,
                top + f64::from(y) * cell,
                cell,
                cell,
                &Style::new()
                    .attr("class", "cell")
                    .fill(&format!("hsl({hue:.0}, 70%, 90%)"))
                    .stroke("#c8c8c8", 1.0),
            );
        }
    }
    let points: Vec<(f64, f64)> = (0..n)
        .map(|z| {
            let (y, x) = morton::decode2(z);
            centre(y, x)
        })
        .collect();
    svg.polyline(
        &points,
        &Style::new().fill("none").stroke("#c0392b", 1.6).attr("stroke-linejoin", "round"),
    );
    let font = (cell * 0.28).min(12.0);
    for y in 0..side {
        for x in 0..side {
            let (cx, cy) = centre(y, x);
            svg.circle(cx, cy, (cell * 0.06).max(1.5), &Style::new().fill("#c0392b"));
            svg.text(
                left + f64::from(x) * cell + 3.0,
                top + f64::from(y) * cell + font + 1.0,
                &morton::encode2(y, x).to_string(),
                &Style::new().attr("font-size", num(font)).fill("#333"),
            );
        }
    }
    Ok(svg.finish())
}

/// Runs `tilekit morton`.
pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    check_bits(args.bits)?;
    let enc = args.encode.as_deref().map(|v| encode_arg(v, args.bits)).transpose()?;
    let dec = args.decode.as_deref().map(|v| decode_arg(v, args.bits)).transpose()?;
    let single = enc.is_some() || dec.is_some();
    if args.bits > TABLE_MAX_BITS && !single {
        return Err(bad(
            "--bits",
            args.bits.to_string(),
            format!(
                "the table is printed for 1..={TABLE_MAX_BITS} bits (up to 64×64); \
                 with more bits give --encode Y,X or --decode Z"
            ),
        ));
    }
    let svg = match &args.svg {
        None => None,
        Some(path) => Some((
            path,
            curve_svg(args.bits).map_err(|rule| bad("--svg", path.display().to_string(), rule))?,
        )),
    };
    let show_table = !single && args.bits <= TABLE_MAX_BITS;
    if args.json {
        // bits ≤ 32 here (check_bits)
        let mut v = json!({ "bits": args.bits, "side": 1u64 << args.bits });
        if show_table {
            v["table"] = json!(table(args.bits));
        }
        if let Some((y, x, z)) = enc {
            v["encode"] = json!({ "y": y, "x": x, "z": z });
        }
        if let Some((z, y, x)) = dec {
            v["decode"] = json!({ "z": z, "y": y, "x": x });
        }
        crate::outln!("{v}")?;
    } else {
        if show_table {
            crate::out!("{}", table_text(args.bits))?;
        }
        if let Some((y, x, z)) = enc {
            crate::outln!("encode (y={y}, x={x}) = {z}")?;
        }
        if let Some((z, y, x)) = dec {
            crate::outln!("decode {z} = (y={y}, x={x})")?;
        }
    }
    if let Some((path, doc)) = svg {
        std::fs::write(path, doc)
            .map_err(|source| CliError::WriteFile { path: path.to_path_buf(), source })?;
        if !args.json {
            crate::outln!("\nwrote {}", path.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
