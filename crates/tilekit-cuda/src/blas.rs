//! cuBLAS baselines (through cudarc, loaded dynamically): what a GEMM of tilekit's is compared
//! with in `tilekit bench`.

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{DevicePtr, DevicePtrMut};
use tilekit_ir::ScalarType;

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

/// How a GEMM operand is stored: `RowMajor` (rows contiguous, leading dimension = columns) or
/// `ColMajor` (columns contiguous, leading dimension = rows).
///
/// ```
/// use tilekit_cuda::blas::Order;
/// assert_eq!(Order::RowMajor.letter(), 'N');
/// assert_eq!(Order::ColMajor.letter(), 'T');
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Order {
    /// Rows contiguous.
    RowMajor,
    /// Columns contiguous.
    ColMajor,
}

impl Order {
    /// BLAS's letter for the operand of a row-major `C = A·B`: `N` for row-major, `T` for a
    /// column-major operand (a transposed row-major one).
    pub fn letter(self) -> char {
        match self {
            Order::RowMajor => 'N',
            Order::ColMajor => 'T',
        }
    }
}

/// A cuBLASLt GEMM baseline: row-major `C (M×N) = A (M×K) · B (K×N)`, inputs of one type
/// (f16, bf16, or f32), f32 accumulation, output `output` (the input type or f32); f32 inputs
/// use plain f32 math (no TF32) unless `tf32`; `batch` products of that shape in one call
/// (strided batched: each operand's entries one packed matrix apart).
///
/// ```
/// use tilekit_cuda::blas::{LtSpec, Order};
/// use tilekit_ir::ScalarType;
/// let s = LtSpec::new(1000, 1000, 1000, ScalarType::BF16);
/// assert_eq!((s.a, s.b, s.output), (Order::RowMajor, Order::RowMajor, ScalarType::BF16));
/// assert_eq!(s.flops(), 2e9);
/// assert!(s.check().is_ok());
/// assert_eq!(LtSpec { batch: 64, ..LtSpec::new(512, 512, 512, ScalarType::BF16) }.flops(), 64.0 * 2.0 * 512f64.powi(3));
/// assert!(LtSpec { batch: 0, ..s }.check().is_err());
/// assert!(LtSpec { output: ScalarType::F16, ..s }.check().is_err()); // bf16 in, f16 out
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LtSpec {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// A's storage.
    pub a: Order,
    /// B's storage.
    pub b: Order,
    /// Input element type (F16, BF16 or F32).
    pub input: ScalarType,
    /// Output element type (the input type, or F32).
    pub output: ScalarType,
    /// f32 inputs: allow TF32 tensor cores.
    pub tf32: bool,
    /// Products in one call (1: a plain GEMM; more: strided batched, cuBLASLt's batch count
    /// and strided batch offsets on every matrix layout).
    pub batch: usize,
}

impl LtSpec {
    /// Row-major operands, output of the input type, no TF32.
    pub fn new(m: usize, n: usize, k: usize, input: ScalarType) -> LtSpec {
        LtSpec {
            m,
            n,
            k,
            a: Order::RowMajor,
            b: Order::RowMajor,
            input,
            output: input,
            tf32: false,
            batch: 1,
        }
    }

    /// `2·M·N·K` per product, times the batch.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64 * self.batch as f64
    }

    /// Types cuBLASLt takes here, and non-empty sizes; a named error otherwise.
    pub fn check(&self) -> Result<()> {
        let bad = |field: &'static str, value: String, rule: &str| CudaError::BadLaunch {
            kernel: "cuBLASLt gemm".into(),
            field,
            value,
            rule: rule.into(),
        };
        if !matches!(self.input, ScalarType::F16 | ScalarType::BF16 | ScalarType::F32) {
            return Err(bad("input", self.input.name().into(), "f16, bf16 or f32"));
        }
        if self.output != self.input && self.output != ScalarType::F32 {
            return Err(bad(
                "output",
                self.output.name().into(),
                &format!("{} (the input type) or f32", self.input.name()),
            ));
        }
        if self.m == 0 || self.n == 0 || self.k == 0 {
            return Err(bad("shape", format!("{}x{}x{}", self.m, self.n, self.k), "M, N, K ≥ 1"));
        }
        if !(1..=i32::MAX as usize).contains(&self.batch) {
            return Err(bad("batch", self.batch.to_string(), "1..=2³¹−1 products"));
        }
        Ok(())
    }
}

/// What [`time_gemm_lt`] measured: the fastest of the algorithms cuBLASLt's heuristic offered.
#[derive(Debug, Clone)]
pub struct LtTiming {
    /// The fastest algorithm's timing.
    pub best: Timing,
    /// Which of the heuristic's candidates (0 = its first choice) was fastest.
    pub best_index: usize,
    /// The heuristic's first choice's median, ms.
    pub first_ms: f64,
    /// How many candidates were timed.
    pub tried: usize,
}

fn lt_type(t: ScalarType) -> cudarc::cublaslt::sys::cudaDataType {
    use cudarc::cublaslt::sys::cudaDataType_t as D;
    match t {
        ScalarType::F16 => D::CUDA_R_16F,
        ScalarType::BF16 => D::CUDA_R_16BF,
        _ => D::CUDA_R_32F,
    }
}

/// Owns cuBLASLt descriptors and destroys them (in reverse order) when dropped.
struct LtObjects {
    handle: cudarc::cublaslt::sys::cublasLtHandle_t,
    desc: cudarc::cublaslt::sys::cublasLtMatmulDesc_t,
    layouts: Vec<cudarc::cublaslt::sys::cublasLtMatrixLayout_t>,
    pref: cudarc::cublaslt::sys::cublasLtMatmulPreference_t,
}

impl Drop for LtObjects {
    fn drop(&mut self) {
        use cudarc::cublaslt::result as r;
        // SAFETY: each handle was created by the matching create call and is destroyed once.
        unsafe {
            let _ = r::destroy_matmul_pref(self.pref);
            for l in self.layouts.drain(..) {
                let _ = r::destroy_matrix_layout(l);
            }
            let _ = r::destroy_matmul_desc(self.desc);
            let _ = r::destroy_handle(self.handle);
        }
    }
}

/// Times cuBLASLt on `spec` with random inputs: asks the heuristic for up to `algos`
/// algorithms (32 MiB workspace), times each (`warm-up 3`, `reps` runs, CUDA events) and
/// returns the fastest — the "best heuristic algorithm" baseline a GEMM of tilekit's is
/// compared with in the same process.
pub fn time_gemm_lt(gpu: &Gpu, spec: LtSpec, algos: usize, reps: usize) -> Result<LtTiming> {
    use cudarc::cublaslt::result as r;
    use cudarc::cublaslt::sys;
    spec.check()?;
    // SAFETY: loads and drops the library; no cuBLASLt call is made.
    if !unsafe { cudarc::cublaslt::sys::is_culib_present() } {
        return Err(CudaError::Driver {
            call: "cublasLtCreate",
            code: "libcublasLt could not be loaded (set LD_LIBRARY_PATH)".into(),
        });
    }
    let lt = |call: &'static str| {
        move |e: cudarc::cublaslt::result::CublasError| CudaError::Driver {
            call,
            code: format!("{e:?}"),
        }
    };
    let (m, n, k) = (spec.m, spec.n, spec.k);
    let mut seed = 0x9e37_79b9_u32;
    let mut rnd = |len: usize| -> Vec<f32> {
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect()
    };
    let bytes_of = |v: Vec<f32>| -> Vec<u8> {
        match spec.input {
            ScalarType::F16 => {
                v.iter().flat_map(|x| half::f16::from_f32(*x).to_le_bytes()).collect()
            }
            ScalarType::BF16 => {
                v.iter().flat_map(|x| half::bf16::from_f32(*x).to_le_bytes()).collect()
            }
            _ => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    };
    let batch = spec.batch;
    let a = gpu.upload(&bytes_of(rnd(batch * m * k)))?;
    let b = gpu.upload(&bytes_of(rnd(batch * k * n)))?;
    let mut c = gpu.alloc_zeros::<u8>(batch * m * n * spec.output.size_bytes())?;
    let workspace_size = 32usize << 20;
    let mut workspace = gpu.alloc_zeros::<u8>(workspace_size)?;
    // row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: cuBLASLt's (m, n, k) = (N, M, K) with
    // operands (B, A). A row-major K×N B is a column-major N×K matrix with ld N (op N); a
    // column-major B (stored N×K row-major) is K×N with ld K, used transposed (op T).
    let (bt, b_rows, b_cols, ldb) = match spec.b {
        Order::RowMajor => (0i32, n, k, n),
        Order::ColMajor => (1i32, k, n, k),
    };
    let (at, a_rows, a_cols, lda) = match spec.a {
        Order::RowMajor => (0i32, k, m, k),
        Order::ColMajor => (1i32, m, k, m),
    };
    let compute = match (spec.input, spec.tf32) {
        (ScalarType::F32, true) => sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
        _ => sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
    };
    let handle = r::create_handle().map_err(lt("cublasLtCreate"))?;
    let mut obj = LtObjects {
        handle,
        desc: std::ptr::null_mut(),
        layouts: vec![],
        pref: std::ptr::null_mut(),
    };
    obj.desc = r::create_matmul_desc(compute, sys::cudaDataType_t::CUDA_R_32F)
        .map_err(lt("cublasLtMatmulDescCreate"))?;
    for (attr, v) in [
        (sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA, bt),
        (sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB, at),
    ] {
        // SAFETY: the attribute is an i32 (cublasOperation_t), passed by address and size.
        unsafe {
            r::set_matmul_desc_attribute(obj.desc, attr, (&v) as *const i32 as *const _, 4)
                .map_err(lt("cublasLtMatmulDescSetAttribute"))?;
        }
    }
    let it = lt_type(spec.input);
    for (ty, rows, cols, ld) in
        [(it, b_rows, b_cols, ldb), (it, a_rows, a_cols, lda), (lt_type(spec.output), n, m, n)]
    {
        let layout = r::create_matrix_layout(ty, rows as u64, cols as u64, ld as i64)
            .map_err(lt("cublasLtMatrixLayoutCreate"))?;
        obj.layouts.push(layout);
        if batch > 1 {
            // strided batched: `batch` matrices, each one packed matrix after the last
            let (count, offset) = (batch as i32, (rows * cols) as i64);
            use sys::cublasLtMatrixLayoutAttribute_t as A;
            // SAFETY: BATCH_COUNT is an i32 and STRIDED_BATCH_OFFSET an i64 (elements), each
            // passed by address and size to a live layout.
            unsafe {
                r::set_matrix_layout_attribute(
                    layout,
                    A::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                    (&count) as *const i32 as *const _,
                    4,
                )
                .map_err(lt("cublasLtMatrixLayoutSetAttribute"))?;
                r::set_matrix_layout_attribute(
                    layout,
                    A::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                    (&offset) as *const i64 as *const _,
                    8,
                )
                .map_err(lt("cublasLtMatrixLayoutSetAttribute"))?;
            }
        }
    }
    obj.pref = r::create_matmul_pref().map_err(lt("cublasLtMatmulPreferenceCreate"))?;
    let ws = workspace_size as u64;
    // SAFETY: the attribute is a u64 byte count.
    unsafe {
        r::set_matmul_pref_attribute(
            obj.pref,
            sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
            (&ws) as *const u64 as *const _,
            8,
        )
        .map_err(lt("cublasLtMatmulPreferenceSetAttribute"))?;
    }
    let want = algos.clamp(1, 16);
    // SAFETY: zeroed heuristic results are plain data the call overwrites.
    let mut results: Vec<sys::cublasLtMatmulHeuristicResult_t> =
        (0..want).map(|_| unsafe { std::mem::zeroed() }).collect();
    let mut found = 0i32;
    // SAFETY: `results` holds `want` entries; every descriptor is live.
    unsafe {
        sys::cublasLtMatmulAlgoGetHeuristic(
            obj.handle,
            obj.desc,
            obj.layouts[0],
            obj.layouts[1],
            obj.layouts[2],
            obj.layouts[2],
            obj.pref,
            want as i32,
            results.as_mut_ptr(),
            &mut found,
        )
        .result()
        .map_err(lt("cublasLtMatmulAlgoGetHeuristic"))?;
    }
    let usable: Vec<_> = results
        .iter()
        .take(found.max(0) as usize)
        .filter(|h| h.state == sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS)
        .collect();
    if usable.is_empty() {
        return Err(CudaError::Driver {
            call: "cublasLtMatmulAlgoGetHeuristic",
            code: format!("no algorithm for {spec:?}"),
        });
    }
    let (alpha, beta) = (1.0f32, 0.0f32);
    let stream = gpu.stream().clone();
    let mut best: Option<(usize, Timing)> = None;
    let mut first_ms = f64::NAN;
    for (i, h) in usable.iter().enumerate() {
        let t = gpu.time(3, reps, |_| {
            let (pa, _ra) = a.device_ptr(&stream);
            let (pb, _rb) = b.device_ptr(&stream);
            let (pc, _rc) = c.device_ptr_mut(&stream);
            let (pw, _rw) = workspace.device_ptr_mut(&stream);
            // SAFETY: the buffers have the sizes the layouts describe; the algorithm came
            // from the heuristic for these descriptors; the workspace is as large as promised.
            unsafe {
                r::matmul(
                    obj.handle,
                    obj.desc,
                    (&alpha) as *const f32 as *const _,
                    (&beta) as *const f32 as *const _,
                    pb as *const _,
                    obj.layouts[0],
                    pa as *const _,
                    obj.layouts[1],
                    pc as *const _,
                    obj.layouts[2],
                    pc as *mut _,
                    obj.layouts[2],
                    &h.algo,
                    pw as *mut _,
                    workspace_size,
                    stream.cu_stream() as *mut _,
                )
            }
            .map_err(lt("cublasLtMatmul"))
        });
        // an algorithm the heuristic offered may still fail to launch: skip it
        let Ok(t) = t else { continue };
        if i == 0 {
            first_ms = t.median_ms();
        }
        if best.as_ref().is_none_or(|(_, b)| t.median_ms() < b.median_ms()) {
            best = Some((i, t));
        }
    }
    let (best_index, best) = best.ok_or(CudaError::Driver {
        call: "cublasLtMatmul",
        code: format!("every algorithm the heuristic offered failed for {spec:?}"),
    })?;
    Ok(LtTiming { best, best_index, first_ms, tried: usable.len() })
}
