//! Helpers shared by the Hopper GEMM test files (`mod gemm_common;` in each).

use tilekit_ir::tensor::HostTensor;
use tilekit_ir::tma::TensorMapArg;
use tilekit_ir::Lit;
use tilekit_ops::backend::Interp;
use tilekit_ops::bind::Bindings;
use tilekit_ops::gemm_sm90::{Epilogue, GemmConfig, Raster};

/// The GEMM's parameters beyond A, B, C and K, as `cfg` declares them: C's tensor map (TMA-store
/// epilogue; unwrapped only there), the Hilbert tile order (`tiles` entries), `alpha`, `beta` and the bias (`n`
/// elements).
pub fn bind_epilogue<'a>(
    mut bind: Bindings<'a, Interp>,
    cfg: &GemmConfig,
    (c_map, order, tiles): (tilekit_ops::Result<TensorMapArg>, &'a HostTensor, i64),
    (alpha, beta): (f32, f32),
    (bias, n): (Option<&'a HostTensor>, i64),
) -> Bindings<'a, Interp> {
    if cfg.epilogue == Epilogue::Tma {
        bind = bind.tensor_map("cm", c_map.unwrap()).unwrap();
    }
    if cfg.raster == Raster::Hilbert {
        bind = bind.input_ptr("order", order, tiles, &Interp).unwrap();
    }
    if cfg.op.alpha {
        bind = bind.scalar("alpha", Lit::f32(alpha)).unwrap();
    }
    if cfg.op.beta {
        bind = bind.scalar("beta", Lit::f32(beta)).unwrap();
    }
    if let Some(bias) = bias {
        bind = bind.input_ptr("bias", bias, n, &Interp).unwrap();
    }
    bind
}
