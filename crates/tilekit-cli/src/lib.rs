//! # tilekit-cli
//!
//! The `tilekit` command-line tool. Each subcommand is a module holding its `Args` (clap) and a
//! `run` function; the logic they present lives in the library crates.
//!
//! With no subcommand, `tilekit` runs its embedded default job: the conformance suite against
//! `../shared/conformance`, then a few kernels on small shapes on the interpreter (`tilekit run`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod banks;
pub mod bench;
pub mod conformance;
pub mod error;
pub mod gpu;
pub mod morton;
pub mod ptx;
pub mod rng;
pub mod run;
pub mod selftest;
pub mod sfc;
pub mod show;
pub mod svg;

pub use error::CliError;

/// CK Tile's tile-programming model in Rust: layouts you can validate and see.
#[derive(Debug, Parser)]
#[command(name = "tilekit", version, about, long_about = None)]
pub struct Cli {
    /// What to do; without one, the embedded default job runs (`tilekit conformance`).
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
    /// Print what the CUDA driver reports about a GPU (or why there is none).
    Gpu(gpu::Args),
    /// Run every kernel on the GPU and compare with the interpreter and CPU references.
    Selftest(selftest::Args),
    /// Time kernels on the GPU against a same-process device-to-device copy.
    Bench(bench::Args),
    /// Run a kernel of the library on random data and check it against its CPU reference.
    Run(run::Args),
    /// Print the PTX (or IR) tilekit generates for a kernel of the library.
    Ptx(ptx::Args),
    /// Morton (Z-order) codes: the index table of a 2^N × 2^N tile, encode/decode, the Z curve as SVG.
    Morton(morton::Args),
    /// Shared-memory bank conflicts of a tile layout read by a warp walk or a distribution's window.
    Banks(banks::Args),
}

/// Parses the command line, runs the command and turns errors into a message and exit code 2.
pub fn main_entry() -> ExitCode {
    let cli = Cli::parse();
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
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tilekit: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// The embedded default job: the conformance suite, then kernels on the interpreter; non-zero
/// exit if either fails.
fn default_job() -> Result<ExitCode, CliError> {
    let args = conformance::Args::default();
    let conf = if args.dir.is_dir() {
        conformance::run(&args)?
    } else {
        println!(
            "conformance vectors not found at {} (the repository expects ../shared beside it): skipped",
            args.dir.display()
        );
        ExitCode::SUCCESS
    };
    let kernels_ok = run::default_runs()?;
    Ok(if conf == ExitCode::SUCCESS && kernels_ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
