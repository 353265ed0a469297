//! `tilekit gpu`: what the CUDA driver reports about device 0, or why there is none (on
//! stderr, exit code 1).

use std::process::ExitCode;

use crate::{outln, CliError};

/// Arguments of `tilekit gpu`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
}

/// Prints the device's properties; [`CliError::NoGpu`] (exit code 1) when there is no usable
/// GPU.
pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    match tilekit_cuda::Gpu::open(args.device) {
        Ok(g) => {
            let p = g.props();
            outln!("device {}: {}", p.ordinal, p.name)?;
            outln!(
                "  compute capability {}.{} (PTX target {})",
                p.compute_capability.0,
                p.compute_capability.1,
                p.target()
            )?;
            outln!(
                "  {} SMs, L2 {} MiB, {:.1} GiB memory",
                p.sm_count,
                p.l2_bytes >> 20,
                p.total_mem as f64 / (1u64 << 30) as f64
            )?;
            outln!("  shared memory per block (opt-in) {} KiB", p.max_smem_per_block_optin / 1024)?;
            outln!("  driver version {}", p.driver_version)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(CliError::NoGpu { command: "gpu".into(), reason: e.to_string() }),
    }
}
