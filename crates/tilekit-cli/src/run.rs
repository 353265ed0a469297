//! `tilekit run KERNEL --shape AxB[xC] [--dtype f32|f16|bf16] [--backend interp|gpu] [--seed N]`:
//! builds a kernel of `tilekit-ops`, runs it on random data, checks it against its CPU
//! reference and prints a one-line summary; exit code 1 on a mismatch.

use std::process::ExitCode;

use tilekit_ir::ScalarType;
use tilekit_ops::run::{self as ops_run, Backend};

use crate::error::CliError;

/// Arguments of `tilekit run`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Kernel: copy, transpose, permute, permute021, morton, unmorton, row_sum, row_max,
    /// softmax, add, mul, max, add_row, mul_col, gemm.
    pub kernel: String,
    /// Problem shape, e.g. 1000x777 (gemm: MxNxK).
    #[arg(long)]
    pub shape: String,
    /// Element type: f32, f16 or bf16 (gemm defaults to f16).
    #[arg(long)]
    pub dtype: Option<String>,
    /// Where to run: interp (the CPU interpreter) or gpu.
    #[arg(long, default_value = "interp")]
    pub backend: String,
    /// Seed of the random input.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn bad(flag: &str, value: &str, rule: &str) -> CliError {
    CliError::BadArgument { flag: flag.into(), value: value.into(), rule: rule.into() }
}

/// Parses `AxBxC`.
pub fn parse_shape(s: &str) -> Result<Vec<i64>, CliError> {
    let dims: Result<Vec<i64>, _> = s.split(['x', 'X']).map(|d| d.trim().parse::<i64>()).collect();
    match dims {
        Ok(d) if !d.is_empty() && d.len() <= 3 && d.iter().all(|&v| v >= 1) => Ok(d),
        _ => Err(bad("--shape", s, "1 to 3 positive lengths separated by 'x', e.g. 1000x777")),
    }
}

pub fn parse_dtype(s: &str) -> Result<ScalarType, CliError> {
    match s {
        "f32" => Ok(ScalarType::F32),
        "f16" => Ok(ScalarType::F16),
        "bf16" => Ok(ScalarType::BF16),
        _ => Err(bad("--dtype", s, "one of f32, f16, bf16")),
    }
}

fn parse_backend(s: &str) -> Result<Backend, CliError> {
    match s {
        "interp" => Ok(Backend::Interp),
        "gpu" => Ok(Backend::Gpu),
        _ => Err(bad("--backend", s, "one of interp, gpu")),
    }
}

/// Runs one kernel and prints its summary.
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    let shape = parse_shape(&a.shape)?;
    let default = if a.kernel == "gemm" { "f16" } else { "f32" };
    let dtype = parse_dtype(a.dtype.as_deref().unwrap_or(default))?;
    let backend = parse_backend(&a.backend)?;
    let r = ops_run::run(&a.kernel, &shape, dtype, backend, a.seed)?;
    println!("{}", r.summary());
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
            println!("kernels on the GPU ({}):", g.props().name);
            Backend::Gpu
        }
        Err(e) => {
            println!("kernels on the CPU interpreter ({e}):");
            Backend::Interp
        }
    };
    for (k, s, t) in jobs {
        let r = ops_run::run(k, s, t, backend, 1)?;
        println!("  {}", r.summary());
        ok &= r.passed;
    }
    Ok(ok)
}
