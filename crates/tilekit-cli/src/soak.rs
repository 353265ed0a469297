//! `tilekit soak`: random ops, shapes, dtypes, views, in-place and overlapping outputs,
//! several streams and early frees for a while, each result against its CPU reference
//! ([`tilekit_ops::soak`]).
//!
//! ```text
//!   tilekit soak --minutes 20 --backend gpu --streams 3     a GPU, three streams of it
//!   tilekit soak --minutes 2 --backend interp               the interpreter (CI)
//!   progress every 5 s, then `soak: N passed, N failed` and one line per failed case
//!   exit 0 when every case matched its reference or was refused as it must be, else 1
//! ```

use std::process::ExitCode;
use std::time::Duration;

use tilekit_ops::backend::{Backend, Cuda, Interp};
use tilekit_ops::soak::{soak, SoakConfig, SoakReport};

use crate::error::CliError;
use crate::outln;

fn bad(flag: &str, value: &str, rule: &str) -> CliError {
    CliError::BadArgument { flag: flag.into(), value: value.into(), rule: rule.into() }
}

/// Arguments of `tilekit soak`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// How long to run, in minutes (fractions allowed).
    #[arg(long, default_value_t = 1.0)]
    pub minutes: f64,
    /// Run this many cases instead of a time.
    #[arg(long)]
    pub cases: Option<u64>,
    /// `gpu` or `interp`.
    #[arg(long, default_value = "interp")]
    pub backend: String,
    /// Streams of the GPU the cases spread over (uploads, ops and downloads each on a random one).
    #[arg(long, default_value_t = 3)]
    pub streams: usize,
    /// The seed of case 0 (case n uses seed + n: a failed case reruns alone with
    /// `--seed S+n --cases 1`).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The most elements of one tensor (default: 4096 on the interpreter, 2^22 on a GPU).
    #[arg(long)]
    pub max_elems: Option<i64>,
}

fn summary(r: &SoakReport) -> String {
    format!(
        "{} cases in {:.0} s: {} matched their reference ({} in place, {} through padded views), \
         {} overlapping outputs refused, {} failed",
        r.cases,
        r.seconds,
        r.matched,
        r.in_place,
        r.padded,
        r.refused,
        r.failures.len()
    )
}

/// Runs the soak and prints its report.
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    if !(a.minutes.is_finite() && a.minutes >= 0.0) {
        return Err(bad("--minutes", &a.minutes.to_string(), "a number of minutes >= 0"));
    }
    if a.streams == 0 {
        return Err(bad("--streams", "0", "at least 1"));
    }
    let gpu = match a.backend.as_str() {
        "gpu" => true,
        "interp" => false,
        other => return Err(bad("--backend", other, "one of interp, gpu")),
    };
    let max_elems = a.max_elems.unwrap_or(if gpu { 1 << 22 } else { 4096 });
    if max_elems < 1 {
        return Err(bad("--max-elems", &max_elems.to_string(), "at least 1"));
    }
    let cfg = SoakConfig {
        duration: Duration::from_secs_f64(a.minutes * 60.0),
        cases: a.cases,
        seed: a.seed,
        max_elems,
    };
    let progress = |r: &SoakReport| eprintln!("soak: {}", summary(r));
    let report = if gpu {
        let main = Cuda::open(0).map_err(|e| CliError::kernel("soak", e))?;
        let mut streams = vec![main.clone()];
        for _ in 1..a.streams {
            streams.push(main.new_stream().map_err(|e| CliError::kernel("soak", e))?);
        }
        outln!("soak on {} ({} streams), seed {}", main.gpu().props().name, a.streams, a.seed)?;
        let r = soak(&streams, &cfg, progress).map_err(|e| CliError::kernel("soak", e))?;
        main.synchronize().map_err(|e| CliError::kernel("soak", e))?;
        r
    } else {
        outln!("soak on the CPU interpreter, seed {}", a.seed)?;
        soak(&[Interp], &cfg, progress).map_err(|e| CliError::kernel("soak", e))?
    };
    outln!("{}", summary(&report))?;
    for f in &report.failures {
        outln!("  FAIL {f}")?;
    }
    outln!("soak: {} passed, {} failed", report.matched + report.refused, report.failures.len())?;
    Ok(if report.failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
