//! cuBLAS baselines (through cudarc, loaded dynamically): what a GEMM of tilekit's is compared
//! with in `tilekit bench`.

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};

use crate::device::Gpu;
use crate::error::{CudaError, Result};
use crate::timing::Timing;

/// True when libcublas can be loaded.
///
/// ```
/// println!("cuBLAS present: {}", tilekit_cuda::blas::cublas_present());
/// ```
pub fn cublas_present() -> bool {
    // SAFETY: loads and drops the library; no cuBLAS call is made.
    unsafe { cudarc::cublas::sys::is_culib_present() }
}

/// Times cuBLAS `C = A·B` for row-major `A: M×K`, `B: K×N` of f16 with f32 accumulation and f16
/// output (`cublasGemmEx`), on random data; returns the timing (warm-up 3, `reps` runs).
pub fn time_gemm_f16(gpu: &Gpu, m: usize, n: usize, k: usize, reps: usize) -> Result<Timing> {
    if !cublas_present() {
        return Err(CudaError::Driver {
            call: "cublasCreate",
            code: "libcublas could not be loaded (set LD_LIBRARY_PATH)".into(),
        });
    }
    let blas = CudaBlas::new(gpu.stream().clone())
        .map_err(|e| CudaError::Driver { call: "cublasCreate", code: format!("{e:?}") })?;
    let mut seed = 0x1234_5678_u32;
    let mut rnd = |len: usize| -> Vec<half::f16> {
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                half::f16::from_f32((seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5)
            })
            .collect()
    };
    let a = gpu.upload(&rnd(m * k))?;
    let b = gpu.upload(&rnd(k * n))?;
    let mut c = gpu.alloc_zeros::<half::f16>(m * n)?;
    // row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: cuBLAS's (m, n, k) = (N, M, K) on (B, A)
    let cfg = GemmConfig {
        transa: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
        transb: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: m as i32,
        k: k as i32,
        alpha: half::f16::ONE,
        lda: n as i32,
        ldb: k as i32,
        beta: half::f16::ZERO,
        ldc: n as i32,
    };
    gpu.time(3, reps, |_| {
        // SAFETY: the buffers have the sizes the configuration describes.
        unsafe { blas.gemm(cfg, &b, &a, &mut c) }
            .map_err(|e| CudaError::Driver { call: "cublasGemmEx", code: format!("{e:?}") })
    })
}
