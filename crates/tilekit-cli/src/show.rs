//! `tilekit show`: see a tile distribution encoding — in words, its traits for a dtype, its
//! ownership map as text, and as an SVG picture.
//!
//! ```text
//! $ tilekit show 'H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]'
//! encoding: H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]
//! tile 4×16 over 8 threads (P 2×4), 8 values per thread (Y 2×4), each element held by one thread
//! …
//! ownership map (rows = X0, columns = X1; each cell is thread:d):
//!        0    1    2    3    4 …
//!   0  0:0  0:1  0:2  0:3  1:0 …
//! ```
//!
//! ENCODING is, in this order of trial: inline JSON (text starting with `{`: an encoding object
//! of the conformance files' schema, or any object with an `encoding` field, such as a whole
//! conformance entry); a file holding such JSON (or the text form); or the compact text form of
//! [`tilekit_tile::encoding_text`]. `--from FILE --name NAME` picks a distribution (or a
//! `meta.compile_failures` entry) by name from a conformance `distributions.json`.
//!
//! Ill-formed encodings are refused with the validator's named error (exit code 2); before that,
//! `show` prints what the reference would silently build from them (elements never owned,
//! elements owned twice, its ownership map), from
//! [`TileDistribution::reference_unchecked`](tilekit_tile::TileDistribution::reference_unchecked).
//!
//! # Sizes
//!
//! The explanation and the traits cost time in proportion to the encoding, not the tile, so
//! any valid encoding is explained (sizes past `i64` are refused by the validator,
//! [`EncodingRule::FitsInI64`](tilekit_tile::error::EncodingRule::FitsInI64)). The ownership
//! map is evaluated only when it is printed, within the caps of [`tilekit_tile::render`]:
//!
//! * the text map is printed for tiles of up to
//!   [`MAP_MAX_ELEMENTS`](tilekit_tile::render::MAP_MAX_ELEMENTS) = 4096 elements (a one-line
//!   note otherwise, computed without evaluating anything);
//! * `--json` lists the `owners` of tiles of up to
//!   [`SVG_MAX_ELEMENTS`] = 65536 elements (otherwise
//!   `"owners": null` and an `owners_omitted` reason);
//! * `--svg` draws tiles of up to 65536 elements (256×256) and is an error above;
//! * either needs at most [`OWNERSHIP_MAX`](tilekit_tile::render::OWNERSHIP_MAX) = 2^20
//!   `(thread, d)` pairs (replication multiplies them).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{json, Value};
use tilekit_tile::encoding::EncodingSpec;
use tilekit_tile::encoding_text::{parse_encoding, print_encoding};
use tilekit_tile::render::{
    explain, explain_reference, explain_vector_access, ownership_map_of, ownership_svg,
    vector_access, Dtype, Ownership, SVG_MAX_ELEMENTS,
};
use tilekit_tile::TileDistribution;

use crate::CliError;

/// Arguments of `tilekit show`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// The encoding: inline JSON, a JSON file, or the text form, e.g.
    /// `'H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]'`.
    #[arg(allow_hyphen_values = true)]
    pub encoding: Option<String>,
    /// Element type for the traits and the vector bars: fp32, fp16, bf16, fp8, f64.
    #[arg(long, default_value = "fp32")]
    pub dtype: String,
    /// Also draw the ownership map as an SVG picture into FILE (tiles of up to 65536 elements,
    /// e.g. 256×256).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print JSON instead of text (the owners of every element for tiles of up to 65536
    /// elements; the text map is printed up to 4096).
    #[arg(long)]
    pub json: bool,
    /// A conformance distributions.json to pick the encoding from (with --name).
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// The name of the distribution in --from.
    #[arg(long)]
    pub name: Option<String>,
}

fn bad(flag: &str, value: impl Into<String>, rule: impl Into<String>) -> CliError {
    CliError::BadArgument { flag: flag.into(), value: value.into(), rule: rule.into() }
}

/// An encoding file's text; an empty (or blank) file is refused by name, not with the JSON or
/// text parser's error at line 1, column 0.
fn read(path: &Path) -> Result<String, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| CliError::Io { path: path.to_path_buf(), source })?;
    if text.trim().is_empty() {
        return Err(CliError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the file is empty (expected an encoding: JSON or the text form)",
            ),
        });
    }
    Ok(text)
}

/// The encoding object of a JSON value: the value itself, or its `encoding` field.
fn spec_of_json(v: Value, flag: &str, shown: &str) -> Result<EncodingSpec, CliError> {
    let v = match v {
        Value::Object(mut m) if m.contains_key("encoding") => {
            m.remove("encoding").unwrap_or_default()
        }
        v => v,
    };
    serde_json::from_value(v).map_err(|e| {
        bad(
            flag,
            shown,
            format!(
                "not an encoding object ({e}); expected {{\"rs_lengths\", \"hs_lengthss\", \
                 \"ps_to_rhss_major\", \"ps_to_rhss_minor\", \"ys_to_rhs_major\", \"ys_to_rhs_minor\"}} \
                 or an object with an \"encoding\" field"
            ),
        )
    })
}

fn spec_of_text(text: &str, flag: &str, shown: &str) -> Result<EncodingSpec, CliError> {
    if text.trim_start().starts_with('{') {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| bad(flag, shown, format!("not valid JSON: {e}")))?;
        spec_of_json(v, flag, shown)
    } else {
        Ok(parse_encoding(text)?)
    }
}

/// The encoding the arguments name (not yet validated).
///
/// ```
/// use tilekit_cli::show::{spec_from_args, Args};
/// let a = Args { encoding: Some("H[[2],[2]] P[[X0.0]] Y[X1.0]".into()), ..Args::default() };
/// assert_eq!(spec_from_args(&a).unwrap().hs_lengthss, vec![vec![2], vec![2]]);
/// let a = Args { encoding: Some(r#"{"encoding": {"rs_lengths": [], "hs_lengthss": [[2], [2]],
///     "ps_to_rhss_major": [[1]], "ps_to_rhss_minor": [[0]], "ys_to_rhs_major": [2], "ys_to_rhs_minor": [0]}}"#.into()),
///     ..Args::default() };
/// assert_eq!(spec_from_args(&a).unwrap().ys_to_rhs_major, vec![2]);
/// let a = Args::default();
/// assert_eq!(spec_from_args(&a).unwrap_err().to_string(),
///     "ENCODING \"(none)\" is invalid: give an encoding (inline JSON, a JSON file or the text form) \
///      or --from FILE --name NAME");
/// ```
pub fn spec_from_args(args: &Args) -> Result<EncodingSpec, CliError> {
    match (&args.from, &args.name, &args.encoding) {
        (Some(_), _, Some(e)) => {
            Err(bad("ENCODING", e.as_str(), "give either ENCODING or --from FILE --name NAME, not both"))
        }
        (Some(file), Some(name), None) => from_file(file, name),
        (Some(file), None, None) => Err(bad(
            "--from",
            file.display().to_string(),
            "--from needs --name NAME (a distribution name in the file)",
        )),
        (None, Some(name), _) => Err(bad("--name", name.as_str(), "--name needs --from FILE")),
        (None, None, None) => Err(bad(
            "ENCODING",
            "(none)",
            "give an encoding (inline JSON, a JSON file or the text form) or --from FILE --name NAME",
        )),
        (None, None, Some(e)) => {
            let t = e.trim_start();
            if t.starts_with('{') {
                return spec_of_text(e, "ENCODING", e);
            }
            let path = Path::new(e);
            if path.is_file() {
                return spec_of_text(&read(path)?, "ENCODING", e);
            }
            if e.ends_with(".json") || (e.contains('/') && !e.contains('[')) {
                return Err(bad(
                    "ENCODING",
                    e.as_str(),
                    "no such file (ENCODING is inline JSON, a JSON file, or the text form)",
                ));
            }
            Ok(parse_encoding(e)?)
        }
    }
}

fn from_file(file: &Path, name: &str) -> Result<EncodingSpec, CliError> {
    let text = read(file)?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|source| CliError::Json { path: file.to_path_buf(), source })?;
    let lists = [v.get("distributions"), v.pointer("/meta/compile_failures")];
    let mut names = Vec::new();
    for entries in lists.into_iter().flatten().filter_map(Value::as_array) {
        for entry in entries {
            let n = entry.get("name").and_then(Value::as_str).unwrap_or("");
            if n == name {
                return spec_of_json(entry.clone(), "--name", name);
            }
            names.push(n.to_string());
        }
    }
    Err(bad(
        "--name",
        name,
        format!(
            "{} holds no distribution of that name; it holds: {}",
            file.display(),
            names.join(", ")
        ),
    ))
}

/// Runs `tilekit show`.
pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    let dtype: Dtype = crate::dtype::element_dtype().parse_str(&args.dtype)?;
    let spec = spec_from_args(args)?;
    let dist = match TileDistribution::from_spec(spec.clone()) {
        Ok(d) => d,
        Err(e) => {
            report_refusal(&spec, &e, args.json)?;
            return Err(e.into());
        }
    };
    // the picture first: a tile too large to draw is an error before anything is printed
    let svg = match &args.svg {
        None => None,
        Some(p) => Some((
            p,
            ownership_svg(&dist, dtype)
                .map_err(|e| bad("--svg", p.display().to_string(), e.to_string()))?,
        )),
    };
    let traits = vector_access(&dist, dtype);
    if args.json {
        // owners are listed (and so evaluated) only for tiles that can be listed
        let elements: i64 = dist.x_lengths().iter().product(); // fits: validated encoding
        let owners = if elements > SVG_MAX_ELEMENTS {
            Err(format!(
                "the tile has {elements} elements; owners are listed for up to {SVG_MAX_ELEMENTS}"
            ))
        } else {
            Ownership::of(&dist).map_err(|e| e.to_string())
        };
        let (owners, omitted) = match owners {
            Ok(own) => {
                let list: Vec<Vec<[i64; 2]>> = own
                    .owners
                    .iter()
                    .map(|os| os.iter().map(|o| [o.thread, o.d]).collect())
                    .collect();
                (json!(list), None)
            }
            Err(why) => (serde_json::Value::Null, Some(why)),
        };
        let mut v = json!({
            "encoding": spec,
            "text": print_encoding(&spec),
            "x_lengths": dist.x_lengths(),
            "p_lengths": dist.p_lengths(),
            "y_lengths": dist.y_lengths(),
            "thread_buffer_size": dist.thread_buffer_size(),
            "num_threads": dist.num_threads(),
            "traits": {
                "dtype": dtype.name(),
                "guaranteed_last_dim_vector_length": traits.guaranteed_length,
                "ys_vector_lengths": traits.ys_vector_lengths,
                "ys_vector_strides": traits.ys_vector_strides,
                "vector_dim_y": traits.vector_dim_y,
                "scalar_per_vector": traits.scalar_per_vector,
                "num_access": traits.num_access,
            },
            "owners": owners,
        });
        if let Some(why) = omitted {
            v["owners_omitted"] = json!(why);
        }
        crate::outln!("{v}")?;
    } else {
        crate::out!("{}", explain(&dist))?;
        crate::outln!()?;
        crate::out!("{}", explain_vector_access(&traits))?;
        crate::outln!()?;
        // evaluated only when it is printed (a note for larger tiles)
        crate::out!("{}", ownership_map_of(&dist))?;
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

/// Prints what the reference would build from a refused spec (stdout), before the error.
fn report_refusal(
    spec: &EncodingSpec,
    err: &tilekit_tile::TileError,
    json: bool,
) -> Result<(), CliError> {
    if json {
        let reference = explain_reference(spec).and_then(|_| Ownership::of_reference(spec));
        let r = match &reference {
            Ok(own) => {
                // replicas: the product of the R lengths (saturating: a huge R means "many")
                let r = spec.rs_lengths.iter().fold(1i64, |a, &l| a.saturating_mul(l.max(1)));
                json!({
                    "never_owned": own.never_owned(),
                    "owned_more_than_once": own.owned_more_than(usize::try_from(r).unwrap_or(usize::MAX))
                        .into_iter().map(|(x, _)| x).collect::<Vec<_>>(),
                })
            }
            Err(e) => json!({ "error": e.to_string() }),
        };
        return crate::outln!(
            "{}",
            json!({ "text": print_encoding(spec), "error": err.to_string(), "reference": r })
        );
    }
    crate::outln!("encoding: {}", print_encoding(spec))?;
    crate::outln!("refused by the validator ({}; the error is below)", rule_name(err))?;
    crate::outln!()?;
    match explain_reference(spec) {
        Ok(text) => crate::out!("{text}"),
        // out-of-range components fail to compile in the reference; sizes past i64 cannot be
        // evaluated either
        Err(e) => crate::outln!("the reference cannot build it either: {e}"),
    }
}

fn rule_name(err: &tilekit_tile::TileError) -> String {
    match err {
        tilekit_tile::TileError::Encoding { rule, .. } => format!("rule {rule:?}"),
        _ => "not an encoding rule".to_string(),
    }
}
