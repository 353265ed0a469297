//! `tilekit run KERNEL --shape AxB[xC] [--dtype f32|f16|bf16] [--backend interp|gpu] [--seed N]`:
//! builds a kernel of `tilekit-ops`, runs it on random data, checks it against its CPU
//! reference and prints a one-line summary; exit code 1 on a mismatch, a failed run or no GPU
//! for `--backend gpu`, 2 when the library refuses the kernel, shape or dtype (or the run's
//! host memory at its peak would pass the limit: `TILEKIT_HOST_MEMORY_LIMIT`). A run longer
//! than 3 s says on stderr that it is still running, every 10 s ([`Progress`]).

use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::builder::PossibleValuesParser;
use tilekit_ir::ScalarType;
use tilekit_ops::run::{self as ops_run, Backend, KERNELS};
use tilekit_ops::OpsError;

use crate::error::CliError;
use crate::outln;

/// Arguments of `tilekit run`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Kernel (the list below gives each one's shape and dtypes).
    #[arg(value_parser = kernel_names(), hide_possible_values = true)]
    pub kernel: String,
    /// Problem shape ([`SHAPE_HELP`]).
    #[arg(long, help = SHAPE_HELP, allow_hyphen_values = true)]
    pub shape: String,
    /// Element type ([`DTYPE_HELP`]; [`default_dtype`]).
    #[arg(long, help = DTYPE_HELP, value_parser = crate::dtype::kernel_dtype())]
    pub dtype: Option<ScalarType>,
    /// Where to run: the CPU interpreter or the GPU.
    #[arg(long, default_value = "interp", value_parser = ["interp", "gpu"])]
    pub backend: String,
    /// Seed of the random input.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// clap's parser for a kernel name: one of [`KERNELS`], listed in the usage error otherwise.
///
/// ```
/// use clap::builder::TypedValueParser;
/// let cmd = clap::Command::new("x");
/// let p = tilekit_cli::run::kernel_names();
/// assert!(p.parse_ref(&cmd, None, "softmax".as_ref()).is_ok());
/// assert!(p.parse_ref(&cmd, None, "nope".as_ref()).is_err());
/// ```
pub fn kernel_names() -> PossibleValuesParser {
    PossibleValuesParser::new(KERNELS.iter().map(|k| k.name))
}

/// The kernels with their shapes and dtypes, for `--help` of `run` and `ptx`.
///
/// ```
/// let h = tilekit_cli::run::kernels_help();
/// assert!(h.contains("gemm") && h.contains("MxNxK") && h.contains("f16, bf16"));
/// ```
pub fn kernels_help() -> String {
    let mut s = String::from("Kernels (shape: dtypes):\n");
    for k in KERNELS {
        let types: Vec<String> = k.dtypes.iter().map(|t| t.to_string()).collect();
        s += &format!("  {:<11} {:<34} {}\n", k.name, k.shape, types.join(", "));
    }
    s
}

/// The `--shape` help of `tilekit run` and `tilekit ptx`: both read a shape with
/// [`parse_shape`], in the same order.
///
/// ```
/// assert!(tilekit_cli::run::SHAPE_HELP.contains("attention: BxSQxSKxHxHKVxD"));
/// ```
pub const SHAPE_HELP: &str =
    "Problem shape, e.g. 1000x777 (gemm: MxNxK; attention: BxSQxSKxHxHKVxD)";

/// The `--dtype` help of `tilekit run` and `tilekit ptx`: what [`default_dtype`] picks.
///
/// ```
/// assert!(tilekit_cli::run::DTYPE_HELP.contains("bf16 for attention"));
/// ```
pub const DTYPE_HELP: &str = "Element type (default f32; f16 for gemm, bf16 for attention)";

fn bad(flag: &str, value: &str, rule: &str) -> CliError {
    CliError::BadArgument { flag: flag.into(), value: value.into(), rule: rule.into() }
}

/// Parses `AxBxC…`: 1 to 6 lengths of at least 1 (the kernels check their ranks and sizes;
/// attention takes six: `BxSQxSKxHxHKVxD`).
///
/// ```
/// use tilekit_cli::run::parse_shape;
/// assert_eq!(parse_shape("1000x777").unwrap(), vec![1000, 777]);
/// assert_eq!(parse_shape("2x77x300x8x2x128").unwrap().len(), 6);
/// assert!(parse_shape("4x0").is_err());
/// assert!(parse_shape("1x2x3x4x5x6x7").is_err());
/// assert_eq!(parse_shape("-5x10").unwrap_err().to_string(),
///     "--shape \"-5x10\" is invalid: lengths are positive integers (got -5)");
/// ```
pub fn parse_shape(s: &str) -> Result<Vec<i64>, CliError> {
    let dims: Result<Vec<i64>, _> = s.split(['x', 'X']).map(|d| d.trim().parse::<i64>()).collect();
    match dims {
        Ok(d) if !d.is_empty() && d.len() <= 6 && d.iter().all(|&v| v >= 1) => Ok(d),
        Ok(d) if d.iter().any(|&v| v < 1) => {
            let v = d.iter().find(|&&v| v < 1).expect("checked");
            Err(bad("--shape", s, &format!("lengths are positive integers (got {v})")))
        }
        _ => Err(bad(
            "--shape",
            s,
            "1 to 6 positive lengths separated by 'x', e.g. 1000x777 (attention: 2x77x300x8x2x128)",
        )),
    }
}

/// The dtype a kernel runs on when none is given: f16 for gemm, bf16 for attention, f32
/// otherwise.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_cli::run::default_dtype("gemm"), ScalarType::F16);
/// assert_eq!(tilekit_cli::run::default_dtype("attention_causal"), ScalarType::BF16);
/// assert_eq!(tilekit_cli::run::default_dtype("copy"), ScalarType::F32);
/// ```
pub fn default_dtype(kernel: &str) -> ScalarType {
    match kernel {
        "gemm" => ScalarType::F16,
        k if k.starts_with("attention") => ScalarType::BF16,
        _ => ScalarType::F32,
    }
}

fn parse_backend(s: &str) -> Result<Backend, CliError> {
    match s {
        "interp" => Ok(Backend::Interp),
        "gpu" => Ok(Backend::Gpu),
        _ => Err(bad("--backend", s, "one of interp, gpu")),
    }
}

/// How long a run goes before [`Progress`] says it is still running, and how often after.
///
/// ```
/// assert_eq!(tilekit_cli::run::PROGRESS_AFTER.as_secs(), 3);
/// ```
pub const PROGRESS_AFTER: Duration = Duration::from_secs(3);

/// The interval of [`Progress`]'s later lines.
///
/// ```
/// assert_eq!(tilekit_cli::run::PROGRESS_EVERY.as_secs(), 10);
/// ```
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// A line on stderr while a long run goes on: after `after`, then every `every`, until the
/// guard is dropped (a watcher thread that waits on a channel; the run itself is untouched).
///
/// ```
/// use std::time::Duration;
/// use tilekit_cli::run::Progress;
/// let p = Progress::start("copy 4x4 f32 on interp".into(), Duration::from_secs(60), Duration::from_secs(60));
/// drop(p); // ends the watcher at once, nothing printed
/// // a slow run: `tilekit: softmax 9x9 f32 on interp: still running (0 s)` on stderr, twice
/// let p = Progress::start("softmax 9x9 f32 on interp".into(), Duration::from_millis(5), Duration::from_millis(20));
/// std::thread::sleep(Duration::from_millis(40));
/// drop(p);
/// ```
pub struct Progress {
    stop: Option<mpsc::Sender<()>>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts watching the run `what` (e.g. `softmax 20000x20000 f32 on interp`).
    pub fn start(what: String, after: Duration, every: Duration) -> Progress {
        let (stop, rx) = mpsc::channel::<()>();
        let t0 = Instant::now();
        let watcher = std::thread::spawn(move || {
            let mut wait = after;
            while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(wait) {
                crate::output::write_stderr(format_args!(
                    "tilekit: {what}: still running ({} s)\n",
                    t0.elapsed().as_secs()
                ));
                wait = every;
            }
        });
        Progress { stop: Some(stop), watcher: Some(watcher) }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}

/// Runs one kernel and prints its summary; a run longer than [`PROGRESS_AFTER`] says on
/// stderr that it is still running ([`Progress`]).
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    let shape = parse_shape(&a.shape)?;
    let dtype = a.dtype.unwrap_or_else(|| default_dtype(&a.kernel));
    let backend = parse_backend(&a.backend)?;
    let what =
        format!("{} on {}", tilekit_ops::host::context(&a.kernel, &shape, dtype), backend.name());
    let progress = Progress::start(what, PROGRESS_AFTER, PROGRESS_EVERY);
    let r = ops_run::run(&a.kernel, &shape, dtype, backend, a.seed);
    drop(progress);
    let r = r.map_err(|e| match e {
        OpsError::GpuUnavailable(reason) => {
            CliError::NoGpu { command: "run --backend gpu".into(), reason }
        }
        e => CliError::kernel(&a.kernel, e),
    })?;
    outln!("{}", r.summary())?;
    Ok(if r.passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The default job's kernel runs: a few kernels on small shapes, on the GPU when one is present
/// and on the interpreter otherwise. Returns whether all passed.
pub fn default_runs() -> Result<bool, CliError> {
    let jobs: [(&str, &[i64], ScalarType); 6] = [
        ("copy", &[100, 130], ScalarType::F32),
        ("transpose", &[100, 77], ScalarType::F32),
        ("morton", &[64, 50], ScalarType::BF16),
        ("row_sum", &[16, 1000], ScalarType::F32),
        ("softmax", &[16, 1000], ScalarType::BF16),
        ("gemm", &[64, 64, 64], ScalarType::F16),
    ];
    let mut ok = true;
    let backend = match tilekit_cuda::Gpu::open(0) {
        Ok(g) => {
            outln!("kernels on the GPU ({}):", g.props().name)?;
            Backend::Gpu
        }
        Err(e) => {
            outln!("kernels on the CPU interpreter ({e}):")?;
            Backend::Interp
        }
    };
    for (k, s, t) in jobs {
        let r = ops_run::run(k, s, t, backend, 1).map_err(|e| CliError::kernel(k, e))?;
        outln!("  {}", r.summary())?;
        ok &= r.passed;
    }
    Ok(ok)
}
