//! `tilekit ptx KERNEL --shape S [--dtype T] [--target sm_90a] [--ir]`: the code tilekit
//! generates for a library kernel, as PTX (commented with the tile operations it comes from) or
//! as the IR dump.

use std::process::ExitCode;
use std::rc::Rc;

use tilekit_ops::exec::{with_executor, Capture};
use tilekit_ptx::{emit_kernel, Target};

use crate::error::CliError;
use crate::run::{parse_dtype, parse_shape};

/// Arguments of `tilekit ptx`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Kernel name (as for `tilekit run`).
    pub kernel: String,
    /// Problem shape, e.g. `1000x777`.
    #[arg(long)]
    pub shape: String,
    /// Element type: f32, f16 or bf16 (default f32; f16 for gemm).
    #[arg(long)]
    pub dtype: Option<String>,
    /// PTX target: sm_80, sm_90 or sm_90a.
    #[arg(long, default_value = "sm_90a")]
    pub target: String,
    /// Print the IR dump instead of PTX.
    #[arg(long)]
    pub ir: bool,
}

/// Prints the generated code.
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    let shape = parse_shape(&a.shape)?;
    let default = if a.kernel == "gemm" { "f16" } else { "f32" };
    let dtype = parse_dtype(a.dtype.as_deref().unwrap_or(default))?;
    let target: Target =
        a.target.parse().map_err(|e: tilekit_ptx::PtxError| CliError::BadArgument {
            flag: "--target".into(),
            value: a.target.clone(),
            rule: e.to_string(),
        })?;
    let cap = Rc::new(Capture::default());
    // building runs the kernel's host code (random inputs, reference) with a capturing executor
    let _ = with_executor(cap.clone(), || {
        tilekit_ops::run::launch_outcome(&a.kernel, &shape, dtype, 1)
    })
    .map_err(|e| CliError::BadArgument {
        flag: "KERNEL".into(),
        value: a.kernel.clone(),
        rule: e.to_string(),
    })?;
    for (k, grid) in cap.take() {
        if a.ir {
            println!("// grid {grid:?}\n{k}");
        } else {
            let ptx = emit_kernel(&k, target).map_err(|e| CliError::BadArgument {
                flag: "KERNEL".into(),
                value: a.kernel.clone(),
                rule: e.to_string(),
            })?;
            println!("// grid {grid:?}\n{ptx}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
