//! `tilekit ptx KERNEL --shape S [--dtype T] [--target sm_90a] [--ir]`: the code tilekit
//! generates for a library kernel, as PTX (commented with the tile operations it comes from) or
//! as the IR dump.
//!
//! Only the kernel is built ([`tilekit_ops::run::plan`]): no inputs, no reference, no
//! interpreter, so the time and memory do not grow with the shape (the kernels take their
//! lengths at run time; the shape picks vector widths, the grid and, for Morton, the layout).
//!
//! ```text
//!   KERNEL + shape + dtype ──plan──► (Kernel, grid) ──emit_kernel(target)──► PTX   (or --ir: the IR)
//! ```

use std::process::ExitCode;

use tilekit_ir::ScalarType;
use tilekit_ptx::{emit_kernel, Target};

use crate::error::CliError;
use crate::outln;
use crate::run::{default_dtype, parse_shape};

/// The coverage kernels of the asynchronous machinery `tilekit ptx` also prints (the shape is
/// the number of pipeline stages for `bulk_pipeline` and `warp_ring`, and is ignored for
/// `multicast_pair` and the TMA round trips `tma_*` (see `tilekit_ptx::coverage::tma`); for
/// `wgmma_ss` / `wgmma_rs` — A in shared memory / in registers — it is N, and the dtype f16,
/// bf16 or f32 for tf32).
///
/// ```
/// assert!(tilekit_cli::ptx::COVERAGE.contains(&"bulk_pipeline"));
/// ```
pub const COVERAGE: &[&str] = &[
    "bulk_pipeline",
    "multicast_pair",
    "tma_none",
    "tma_sw32",
    "tma_sw64",
    "tma_sw128",
    "tma_rank1",
    "tma_rank3",
    "tma_rank4",
    "tma_rank5",
    "wgmma_ss",
    "wgmma_rs",
    "warp_ring",
];

fn ptx_kernel_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        tilekit_ops::run::KERNELS.iter().map(|k| k.name).chain(COVERAGE.iter().copied()),
    )
}

/// Arguments of `tilekit ptx`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Kernel (as for `tilekit run`, with the same shapes and default dtypes; the list below
    /// gives each one's shape and dtypes), or a coverage kernel of the asynchronous machinery:
    /// `bulk_pipeline` or `warp_ring` (shape = stages), `multicast_pair`, a TMA round trip
    /// `tma_none`, `tma_sw32`, `tma_sw64`, `tma_sw128`, `tma_rank1`, `tma_rank3`, `tma_rank4`,
    /// `tma_rank5`, or a wgmma `wgmma_ss`, `wgmma_rs` (shape = N).
    #[arg(value_parser = ptx_kernel_names(), hide_possible_values = true)]
    pub kernel: String,
    /// Problem shape, read as `tilekit run` reads it ([`crate::run::SHAPE_HELP`]).
    #[arg(long, help = crate::run::SHAPE_HELP, allow_hyphen_values = true)]
    pub shape: String,
    /// Element type, defaulted as `tilekit run` does ([`crate::run::DTYPE_HELP`]).
    #[arg(long, help = crate::run::DTYPE_HELP, value_parser = crate::dtype::kernel_dtype())]
    pub dtype: Option<ScalarType>,
    /// PTX target: sm_80, sm_90 or sm_90a.
    #[arg(long, default_value = "sm_90a")]
    pub target: String,
    /// Print the IR dump instead of PTX.
    #[arg(long)]
    pub ir: bool,
}

/// The text `tilekit ptx` prints: `// grid [x, y, z]` then the PTX (or the IR dump).
///
/// ```
/// use tilekit_cli::ptx::{generate, Args};
/// let a = Args { kernel: "copy".into(), shape: "2147483647x1".into(), dtype: None,
///                target: "sm_90a".into(), ir: false };
/// let text = generate(&a).unwrap(); // 2^31 - 1 elements: nothing is allocated for them
/// assert!(text.starts_with("// grid [16777216, 1, 1]\n") && text.contains(".visible .entry copy("));
/// ```
pub fn generate(a: &Args) -> Result<String, CliError> {
    let shape = parse_shape(&a.shape)?;
    let dtype = a.dtype.unwrap_or_else(|| default_dtype(&a.kernel));
    let target: Target =
        a.target.parse().map_err(|e: tilekit_ptx::PtxError| CliError::BadArgument {
            flag: "--target".into(),
            value: a.target.clone(),
            rule: e.to_string(),
        })?;
    let ir = |e: tilekit_ir::IrError| CliError::Check {
        what: a.kernel.clone(),
        why: format!("the coverage kernel could not be built: {e}"),
    };
    let (kernel, grid) = match a.kernel.as_str() {
        // grids as `tilekit selftest` launches them
        "bulk_pipeline" => (tilekit_ptx::coverage::bulk_pipeline(shape[0]).map_err(ir)?, [6, 1, 1]),
        "multicast_pair" => (tilekit_ptx::coverage::multicast_pair().map_err(ir)?, [10, 1, 1]),
        "warp_ring" => (tilekit_ptx::coverage::warp_ring(shape[0]).map_err(ir)?, [4, 1, 1]),
        "wgmma_ss" | "wgmma_rs" => {
            let ty =
                tilekit_ir::wgmma::WgmmaType::of(dtype).ok_or_else(|| CliError::BadArgument {
                    flag: "--dtype".into(),
                    value: dtype.name().into(),
                    rule: "wgmma takes f16, bf16 or f32 (tf32)".into(),
                })?;
            let n = u32::try_from(shape[0]).unwrap_or(0);
            let case = tilekit_ptx::coverage::WgmmaCase::standard(ty, n, a.kernel == "wgmma_rs");
            (tilekit_ptx::coverage::wgmma(&case).map_err(ir)?, [1, 1, 1])
        }
        name if tilekit_ptx::coverage::tma::case(name).is_some() => {
            let c = tilekit_ptx::coverage::tma::case(name).expect("checked");
            (c.kernel().map_err(ir)?, c.grid())
        }
        _ => tilekit_ops::run::plan(&a.kernel, &shape, dtype)
            .map_err(|e| CliError::kernel(&a.kernel, e))?,
    };
    let code = if a.ir {
        kernel.to_string()
    } else {
        emit_kernel(&kernel, target).map_err(|source| CliError::Emit {
            kernel: a.kernel.clone(),
            target: target.name().to_string(),
            source,
        })?
    };
    Ok(format!("// grid {grid:?}\n{code}"))
}

/// Prints the generated code.
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    outln!("{}", generate(a)?)?;
    Ok(ExitCode::SUCCESS)
}
