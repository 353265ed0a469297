//! # tilekit-cli
//!
//! The `tilekit` command-line tool. Each subcommand is a module holding its `Args` (clap) and a
//! `run` function; the logic they present lives in the library crates.
//!
//! With no subcommand, `tilekit` runs its main job: the conformance suite against the
//! repository's `../shared/conformance` (see [`conformance_candidates`]), then a few kernels on
//! small shapes (on the GPU when there is one, on the interpreter otherwise).
//!
//! Exit codes (see [`error`]): 0 success, 1 a check or run failed (a FAIL, a GPU error, no
//! usable GPU for a GPU command, conformance vectors missing, stdout not writable), 2 usage or
//! input errors. Errors go to stderr as `tilekit: error: …`; a closed stdout pipe ends the
//! command quietly with 0 (see [`output`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod banks;
pub mod bench;
pub mod bench_attention;
pub mod bench_gemm;
pub mod bench_gemm_batched;
pub mod bench_gemm_simt;
pub mod bench_launch;
pub mod conformance;
pub mod dtype;
pub mod error;
pub mod gpu;
pub mod morton;
pub mod output;
pub mod ptx;
pub mod rng;
pub mod run;
pub mod selftest;
pub mod sfc;
pub mod show;
pub mod soak;
pub mod svg;
pub mod tune;
pub mod tune_gemm;

pub use error::CliError;

/// What the bare `tilekit` does, for its `--help`.
const MAIN_JOB_HELP: &str = "\
Without a command, tilekit runs its main job: the conformance suite against the
repository's ../shared/conformance (TILEKIT_CONFORMANCE=DIR to use another folder), then a
few library kernels on small shapes (on the GPU when the CUDA driver finds one, on the CPU
interpreter otherwise), each checked against its CPU reference.

Exit codes: 0 success; 1 a check or run failed (a FAIL, a GPU error, no usable GPU for a GPU
command, conformance vectors missing, stdout not writable); 2 usage or input errors.";

/// CK Tile's tile-programming model in Rust: layouts you can validate and see, kernels as PTX
/// for a GPU or on a CPU interpreter.
#[derive(Debug, Parser)]
#[command(name = "tilekit", version, long_about = None, after_help = MAIN_JOB_HELP)]
pub struct Cli {
    /// What to do; without one, the main job runs (see below).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands of `tilekit`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check this build against CK Tile conformance vectors (JSON files of the reference's numbers).
    Conformance(conformance::Args),
    /// Show a space-filling curve: access table, grid picture, JSON or SVG.
    Sfc(sfc::Args),
    /// Show a tile distribution encoding: explained in words, traits, ownership map, SVG.
    Show(show::Args),
    /// Print what the CUDA driver reports about a GPU (exit code 1 when there is none).
    Gpu(gpu::Args),
    /// Run every kernel on the GPU and compare with the interpreter and CPU references.
    Selftest(selftest::Args),
    /// Time kernels on the GPU against a same-process device-to-device copy.
    #[command(after_help = bench::kernels_help())]
    Bench(bench::Args),
    /// Run a kernel of the library on random data and check it against its CPU reference.
    #[command(after_help = run::kernels_help())]
    Run(run::Args),
    /// Print the PTX (or IR) tilekit generates for a kernel of the library (no data is made).
    #[command(after_help = run::kernels_help())]
    Ptx(ptx::Args),
    /// Morton (Z-order) codes: the index table of a 2^N × 2^N tile, encode/decode, the Z curve as SVG.
    Morton(morton::Args),
    /// Shared-memory bank conflicts of a tile layout read by a warp walk or a distribution's window.
    Banks(banks::Args),
    /// Time every candidate launch shape of the tunable kernels on the GPU (per-device tuning).
    Tune(tune::Args),
    /// Random ops, views, in-place and overlapping outputs, streams and early frees for a
    /// while, each result against its CPU reference.
    Soak(soak::Args),
}

/// Parses the command line, runs the command and turns errors into a message on stderr and an
/// exit code (see [`error`] for the codes, [`output`] for write errors).
pub fn main_entry() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    let result = match cli.command {
        None => default_job(),
        Some(Command::Conformance(a)) => conformance::run(&a),
        Some(Command::Sfc(a)) => sfc::run(&a),
        Some(Command::Show(a)) => show::run(&a),
        Some(Command::Gpu(a)) => gpu::run(&a),
        Some(Command::Selftest(a)) => selftest::run(&a),
        Some(Command::Bench(a)) => bench::run(&a),
        Some(Command::Run(a)) => run::run(&a),
        Some(Command::Ptx(a)) => ptx::run(&a),
        Some(Command::Morton(a)) => morton::run(&a),
        Some(Command::Banks(a)) => banks::run(&a),
        Some(Command::Tune(a)) => tune::run(&a),
        Some(Command::Soak(a)) => soak::run(&a),
    };
    match result.and_then(|code| output::flush_stdout().map(|()| code)) {
        Ok(code) => code,
        Err(e) => report(e),
    }
}

/// clap's answer: `--help` and `--version` go to stdout through [`out!`] (so a closed pipe or a
/// full disk is handled like any output), usage errors to stderr with clap's exit code (2).
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    use std::io::IsTerminal;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let text = if std::io::stdout().is_terminal() {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            match out!("{text}").and_then(|()| output::flush_stdout()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => report(err),
            }
        }
        _ => {
            let _ = e.print();
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
        }
    }
}

/// Prints an error on stderr and picks the exit code ([`CliError::exit_code`]): a closed pipe
/// on stdout is a quiet exit 0 (the reader took what it wanted).
fn report(e: CliError) -> ExitCode {
    match &e {
        CliError::Output(io) if io.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        _ => {
            output::write_stderr(format_args!("tilekit: error: {e}\n"));
            ExitCode::from(e.exit_code())
        }
    }
}

/// Where the main job looks for the conformance vectors, in order: `$TILEKIT_CONFORMANCE` alone
/// when it is set; otherwise the repository's `../shared/conformance` (the repository found at
/// compile time, from this crate's folder `<repo>/crates/tilekit-cli`), then
/// `../shared/conformance` from the current folder (a binary built elsewhere).
///
/// ```
/// # if std::env::var_os("TILEKIT_CONFORMANCE").is_none() {
/// let c = tilekit_cli::conformance_candidates();
/// assert!(c[0].ends_with("shared/conformance") && c[0].is_absolute());
/// assert!(c[1].ends_with("../shared/conformance"));
/// # }
/// ```
pub fn conformance_candidates() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("TILEKIT_CONFORMANCE") {
        return vec![PathBuf::from(dir)];
    }
    let mut out = Vec::new();
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Some(beside_repo) = crate_dir.ancestors().nth(3) {
        out.push(beside_repo.join("shared").join("conformance"));
    }
    let here = std::env::current_dir().unwrap_or_default();
    out.push(here.join("..").join("shared").join("conformance"));
    out
}

/// The first of `candidates` that is a folder holding at least one `*.json` file, or
/// [`CliError::MissingVectors`] naming every folder tried.
///
/// ```
/// use std::path::PathBuf;
/// let e = tilekit_cli::find_conformance(&[PathBuf::from("/nowhere/conformance")]).unwrap_err();
/// assert!(e.to_string().contains("looked at /nowhere/conformance"));
/// assert_eq!(e.exit_code(), 1);
/// ```
pub fn find_conformance(candidates: &[PathBuf]) -> Result<PathBuf, CliError> {
    let has_vectors = |dir: &Path| {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries.flatten().any(|e| e.path().extension().is_some_and(|x| x == "json"))
        })
    };
    candidates
        .iter()
        .find(|dir| has_vectors(dir))
        .cloned()
        .ok_or_else(|| CliError::MissingVectors { looked: candidates.to_vec() })
}

/// The main job: the conformance suite, then kernels; exit code 1 if either fails or the
/// vectors are missing.
fn default_job() -> Result<ExitCode, CliError> {
    let dir = find_conformance(&conformance_candidates())?;
    outln!("conformance vectors: {}", dir.display())?;
    let conf = conformance::run(&conformance::Args { dir, ..Default::default() })?;
    let kernels_ok = run::default_runs()?;
    Ok(if conf == ExitCode::SUCCESS && kernels_ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
