//! Encoding TMA tensor maps (`cuTensorMapEncodeTiled`) for kernels with tensor-map parameters.
//!
//! ```text
//!   TensorMapSpec (kernel: type, box, swizzle, fill)  ┐
//!   TensorMapArg  (launch: dims, byte strides)        ├─► check_encode (host, named errors)
//!   device address of the viewed buffer               ┘        │
//!                                                              ▼
//!                                         EncodeTiled (the driver call's arguments, pure)
//!                                                              │ cuTensorMapEncodeTiled
//!                                                              ▼
//!                                     128 bytes, passed by value as the kernel argument
//! ```
//!
//! Everything up to the driver call is a pure function ([`encode_params`]), tested without a
//! GPU.

use cudarc::driver::sys;
use tilekit_ir::tma::{
    check_encode, element_strides, OobFill, TensorMapArg, TensorMapSpec, TmaSwizzle,
};
use tilekit_ir::ScalarType;

use crate::device::Gpu;
use crate::error::{CudaError, Result};

/// The arguments of one `cuTensorMapEncodeTiled` call (everything but the output), checked.
///
/// ```
/// use tilekit_ir::{ScalarType, tma::*};
/// let s = TensorMapSpec::new(ScalarType::F16, &[64, 8], TmaSwizzle::B128, OobFill::Zero).unwrap();
/// let p = tilekit_cuda::tma::encode_params(&s, &TensorMapArg::packed(&[200, 30], 2), 0x1000).unwrap();
/// assert_eq!((p.rank, p.dims.clone(), p.strides.clone(), p.box_dims.clone()), (2, vec![200, 30], vec![400], vec![64, 8]));
/// assert_eq!(p.swizzle as u32, 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeTiled {
    /// `tensorDataType`.
    pub data_type: sys::CUtensorMapDataType,
    /// `tensorRank`.
    pub rank: u32,
    /// `globalAddress`.
    pub addr: u64,
    /// `globalDim`, innermost first.
    pub dims: Vec<u64>,
    /// `globalStrides` (bytes, dims 1..).
    pub strides: Vec<u64>,
    /// `boxDim`.
    pub box_dims: Vec<u32>,
    /// `elementStrides`.
    pub element_strides: Vec<u32>,
    /// `swizzle`.
    pub swizzle: sys::CUtensorMapSwizzle,
    /// `oobFill`.
    pub oob_fill: sys::CUtensorMapFloatOOBfill,
}

/// The driver's data type for an element type.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_cuda::tma::data_type(ScalarType::BF16).unwrap() as u32, 9);
/// assert!(tilekit_cuda::tma::data_type(ScalarType::Pred).is_none());
/// ```
pub fn data_type(t: ScalarType) -> Option<sys::CUtensorMapDataType> {
    use sys::CUtensorMapDataType as D;
    Some(match t {
        ScalarType::I32 => D::CU_TENSOR_MAP_DATA_TYPE_INT32,
        ScalarType::U32 => D::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        ScalarType::I64 => D::CU_TENSOR_MAP_DATA_TYPE_INT64,
        ScalarType::F16 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        ScalarType::BF16 => D::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        ScalarType::F32 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        ScalarType::F64 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        ScalarType::Pred => return None,
    })
}

/// Checks a map against the driver's rules on the host ([`check_encode`]) and gives the
/// arguments of the encode call. Pure: no GPU needed.
///
/// ```
/// use tilekit_ir::{ScalarType, tma::*};
/// let s = TensorMapSpec::new(ScalarType::F32, &[8, 8], TmaSwizzle::None, OobFill::Zero).unwrap();
/// let e = tilekit_cuda::tma::encode_params(&s, &TensorMapArg::new(&[30, 30], &[120]), 0).unwrap_err();
/// assert!(e.to_string().contains("byte stride of dim 1 = 120"), "{e}");
/// ```
pub fn encode_params(
    spec: &TensorMapSpec,
    arg: &TensorMapArg,
    addr: u64,
) -> std::result::Result<EncodeTiled, tilekit_ir::tma::TensorMapError> {
    check_encode(spec, arg, addr)?;
    let data_type =
        data_type(spec.elem()).ok_or_else(|| tilekit_ir::tma::TensorMapError::Invalid {
            what: "element type".into(),
            value: spec.elem().to_string(),
            valid: "i32, u32, i64, f16, bf16, f32, f64".into(),
        })?;
    use sys::CUtensorMapSwizzle as S;
    let swizzle = match spec.swizzle() {
        TmaSwizzle::None => S::CU_TENSOR_MAP_SWIZZLE_NONE,
        TmaSwizzle::B32 => S::CU_TENSOR_MAP_SWIZZLE_32B,
        TmaSwizzle::B64 => S::CU_TENSOR_MAP_SWIZZLE_64B,
        TmaSwizzle::B128 => S::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let oob_fill = match spec.oob() {
        OobFill::Zero => sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        OobFill::Nan => {
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
        }
    };
    Ok(EncodeTiled {
        data_type,
        rank: spec.rank() as u32,
        addr,
        dims: arg.dims().to_vec(),
        strides: arg.byte_strides().to_vec(),
        box_dims: spec.box_dims().to_vec(),
        element_strides: element_strides(spec),
        swizzle,
        oob_fill,
    })
}

/// The 128 bytes of an encoded tensor map, aligned as the driver wants them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct TensorMapBytes(pub [u8; 128]);

impl Gpu {
    /// Encodes a tensor map over device memory at `addr` (checked on the host first).
    pub fn encode_tensor_map(
        &self,
        param: &str,
        spec: &TensorMapSpec,
        arg: &TensorMapArg,
        addr: u64,
    ) -> Result<TensorMapBytes> {
        let p = encode_params(spec, arg, addr)
            .map_err(|source| CudaError::TensorMap { param: param.into(), source })?;
        self.ctx.bind_to_thread().map_err(|e| CudaError::driver("cuCtxSetCurrent", e))?;
        let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
        // SAFETY: every array holds `rank` entries (`strides` rank − 1), as check_encode
        // verified; `map` is a properly aligned CUtensorMap the driver writes.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                map.as_mut_ptr(),
                p.data_type,
                p.rank,
                p.addr as *mut std::ffi::c_void,
                p.dims.as_ptr(),
                p.strides.as_ptr(),
                p.box_dims.as_ptr(),
                p.element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                p.swizzle,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                p.oob_fill,
            )
        }
        .result()
        .map_err(|e| CudaError::driver("cuTensorMapEncodeTiled", e))?;
        // SAFETY: the driver initialised it (and it was zeroed before).
        let map = unsafe { map.assume_init() };
        let mut out = [0u8; 128];
        for (i, w) in map.opaque.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        Ok(TensorMapBytes(out))
    }
}
