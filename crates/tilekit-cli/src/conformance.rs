//! `tilekit conformance [DIR]`: check this build against CK Tile conformance vectors.
//!
//! Every `*.json` file in `DIR` is read; its `meta.category` picks the checker. Each checker
//! rebuilds every object from the file's own description (never from a table of known names),
//! recomputes every listed number with the library, and counts one check per compared value:
//!
//! ```text
//! sfc.json ──► meta.category = "space_filling_curve" ──► sfc::check ──► Tally { passed, failed }
//! descriptors.json ──► "tensor_descriptor" ──► descriptors::check ──► Tally
//! (a category this build does not know) ──► listed as skipped
//! ```
//!
//! The command prints `CATEGORY: N passed, N failed` per category and a final
//! `N passed, N failed`, and exits with 1 on any failure or unreadable file, and when the
//! folder holds no vectors (it does not exist, or none of its files is of a category this
//! build checks), as the table of exit codes in docs/using.md says.
//!
//! Sizes in a file are data, not instructions: no checker allocates or enumerates in proportion
//! to a length from the file. Lists the file holds are compared index by index with the orders
//! the lengths imply (counts first); data the library needs (a view over a tile) is allocated
//! only up to [`schema::MAX_ENUMERATED`] elements per entry, and an entry above it fails with a
//! [`schema::SizeError`] naming the file, the entry and the field.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Deserialize;

use crate::CliError;

pub mod descriptors;
pub mod distributions;
pub mod schema;
pub mod sfc;
pub mod traits;
pub mod windows;

/// Arguments of `tilekit conformance`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Folder of conformance vector files (`*.json`).
    #[arg(default_value = "../shared/conformance")]
    pub dir: PathBuf,
    /// How many failing checks to print in full per category.
    #[arg(long, default_value_t = 20)]
    pub show_failures: usize,
}

impl Default for Args {
    fn default() -> Self {
        Args { dir: PathBuf::from("../shared/conformance"), show_failures: 20 }
    }
}

/// Counts of one category's checks, with the first failures described.
///
/// ```
/// use tilekit_cli::conformance::Tally;
/// let mut t = Tally::default();
/// t.eq("cfg", "num_access", &8, &8);
/// t.eq("cfg", "num_access", &8, &9);
/// assert_eq!((t.passed, t.failed), (1, 1));
/// assert!(t.failures[0].contains("expected 8, got 9"));
/// ```
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Checks whose value matched.
    pub passed: usize,
    /// Checks whose value did not match (or whose object could not be built).
    pub failed: usize,
    /// Descriptions of failures, in order.
    pub failures: Vec<String>,
}

impl Tally {
    /// Compares one value: `item` names the configuration, `what` the field.
    pub fn eq<T: PartialEq + Debug + ?Sized>(
        &mut self,
        item: &str,
        what: &str,
        expected: &T,
        got: &T,
    ) {
        if expected == got {
            self.passed += 1;
        } else {
            self.fail(item, format!("{what}: expected {expected:?}, got {got:?}"));
        }
    }

    /// Records a passed check that is a condition rather than a comparison.
    pub fn check(&mut self, item: &str, what: &str, ok: bool) {
        if ok {
            self.passed += 1;
        } else {
            self.fail(item, format!("{what}: does not hold"));
        }
    }

    /// Records one failed check.
    pub fn fail(&mut self, item: &str, why: impl Into<String>) {
        self.failed += 1;
        self.failures.push(format!("{item}: {}", why.into()));
    }

    /// Adds another tally into this one.
    pub fn merge(&mut self, other: Tally) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.failures.extend(other.failures);
    }
}

/// The `meta` object every conformance file has (only the field used for dispatch).
#[derive(Debug, Deserialize)]
struct Meta {
    category: String,
}

#[derive(Debug, Deserialize)]
struct Head {
    meta: Meta,
}

/// A category this build checks: its short name and its checker.
struct Category {
    short: &'static str,
    check: fn(&Path, &str) -> Result<Tally, CliError>,
}

fn category_of(meta_category: &str) -> Option<Category> {
    match meta_category {
        "space_filling_curve" => Some(Category { short: "sfc", check: sfc::check }),
        "tensor_descriptor" => Some(Category { short: "descriptors", check: descriptors::check }),
        "tile_distribution" => {
            Some(Category { short: "distributions", check: distributions::check })
        }
        "load_store_traits" => Some(Category { short: "load_store_traits", check: traits::check }),
        "window_walks" => Some(Category { short: "window_walks", check: windows::check }),
        _ => None,
    }
}

/// The result of running the whole suite on a folder.
#[derive(Debug, Default)]
pub struct Report {
    /// Per category short name (`sfc`, `descriptors`, …), its tally.
    pub categories: BTreeMap<String, Tally>,
    /// Files whose category this build does not check (path, category).
    pub skipped: Vec<(PathBuf, String)>,
    /// Files that could not be read or parsed.
    pub unreadable: Vec<String>,
}

impl Report {
    /// Total passed checks.
    pub fn passed(&self) -> usize {
        self.categories.values().map(|t| t.passed).sum()
    }
    /// Total failed checks (unreadable files count as failures).
    pub fn failed(&self) -> usize {
        self.categories.values().map(|t| t.failed).sum::<usize>() + self.unreadable.len()
    }
}

/// Runs every supported vector file of `dir`.
///
/// Returns an error only when the folder itself cannot be listed ([`CliError::NoVectors`]: the
/// vectors are missing, exit code 1); unreadable files are reported in [`Report::unreadable`].
///
/// ```
/// let e = tilekit_cli::conformance::run_suite(std::path::Path::new("/nonexistent")).unwrap_err();
/// assert!(e.to_string().starts_with("conformance vectors not found in /nonexistent: "), "{e}");
/// assert_eq!(e.exit_code(), 1);
/// ```
pub fn run_suite(dir: &Path) -> Result<Report, CliError> {
    let missing =
        |e: std::io::Error| CliError::NoVectors { dir: dir.to_path_buf(), reason: e.to_string() };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(missing)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut report = Report::default();
    for path in files {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                report.unreadable.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        if text.trim().is_empty() {
            report.unreadable.push(format!("{}: the file is empty", path.display()));
            continue;
        }
        let head: Head = match serde_json::from_str(&text) {
            Ok(h) => h,
            Err(e) => {
                report.unreadable.push(format!("{}: no meta.category: {e}", path.display()));
                continue;
            }
        };
        let Some(cat) = category_of(&head.meta.category) else {
            report.skipped.push((path.clone(), head.meta.category));
            continue;
        };
        match (cat.check)(&path, &text) {
            Ok(t) => report.categories.entry(cat.short.to_string()).or_default().merge(t),
            Err(e) => report.unreadable.push(e.to_string()),
        }
    }
    Ok(report)
}

/// Parses a whole conformance file into its schema type, naming the file on error.
pub fn parse<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, CliError> {
    serde_json::from_str(text).map_err(|source| CliError::Json { path: path.to_path_buf(), source })
}

/// Runs `tilekit conformance`.
pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    let report = run_suite(&args.dir)?;
    for (name, t) in &report.categories {
        crate::outln!("{name}: {} passed, {} failed", t.passed, t.failed)?;
        for f in t.failures.iter().take(args.show_failures) {
            crate::outln!("  FAIL {f}")?;
        }
        if t.failures.len() > args.show_failures {
            crate::outln!("  … {} more failures", t.failures.len() - args.show_failures)?;
        }
    }
    for (p, c) in &report.skipped {
        crate::outln!("skipped {} (category {c:?} is not checked by this build)", p.display())?;
    }
    for u in &report.unreadable {
        crate::outln!("UNREADABLE {u}")?;
    }
    if report.categories.is_empty() && report.unreadable.is_empty() {
        return Err(CliError::NoVectors {
            dir: args.dir.clone(),
            reason: "the folder holds no conformance file of a category this build checks".into(),
        });
    }
    crate::outln!("{} passed, {} failed", report.passed(), report.failed())?;
    Ok(if report.failed() == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
