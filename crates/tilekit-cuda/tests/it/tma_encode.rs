//! The host side of tensor-map encoding, without a GPU: every rule of the driver that tilekit
//! checks first is a named error, and the arguments of `cuTensorMapEncodeTiled` are what the
//! spec and the tensor say.

use tilekit_cuda::cudarc::driver::sys;
use tilekit_cuda::tma::{data_type, encode_params};
use tilekit_ir::tma::{OobFill, TensorMapArg, TensorMapError, TensorMapSpec, TmaSwizzle};
use tilekit_ir::ScalarType;

fn spec(t: ScalarType, b: &[u32], sw: TmaSwizzle) -> TensorMapSpec {
    TensorMapSpec::new(t, b, sw, OobFill::Zero).unwrap()
}

fn invalid(e: TensorMapError) -> (String, String) {
    match e {
        TensorMapError::Invalid { what, value, .. } => (what, value),
        other => panic!("expected an invalid field, got {other}"),
    }
}

#[test]
fn each_driver_rule_is_a_named_error() {
    let s = spec(ScalarType::F32, &[8, 4, 2], TmaSwizzle::None);
    let ok = TensorMapArg::new(&[100, 30, 7], &[416, 416 * 30]);
    assert!(encode_params(&s, &ok, 0x7000_0000_0000).is_ok());
    let cases: [(TensorMapArg, u64, &str, &str); 6] = [
        (ok.clone(), 0x7000_0000_0004, "global address", "0x700000000004"),
        (TensorMapArg::new(&[0, 30, 7], &[416, 12480]), 0, "dim 0", "0"),
        (TensorMapArg::new(&[100, 30, (1 << 32) + 1], &[416, 12480]), 0, "dim 2", "4294967297"),
        (TensorMapArg::new(&[100, 30, 7], &[400 + 4, 12480]), 0, "byte stride of dim 1", "404"),
        (
            TensorMapArg::new(&[100, 30, 7], &[416, 1 << 40]),
            0,
            "byte stride of dim 2",
            "1099511627776",
        ),
        (TensorMapArg::new(&[100, 30], &[416]), 0, "rank", "2 dims and 1 strides"),
    ];
    for (arg, addr, what, value) in cases {
        let (w, v) = invalid(encode_params(&s, &arg, addr).unwrap_err());
        assert_eq!((w.as_str(), v.as_str()), (what, value));
    }
}

#[test]
fn the_encode_arguments_follow_the_spec_and_the_tensor() {
    for (sw, want) in [
        (TmaSwizzle::None, sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE),
        (TmaSwizzle::B32, sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B),
        (TmaSwizzle::B64, sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B),
        (TmaSwizzle::B128, sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B),
    ] {
        let inner = sw.span_bytes().unwrap_or(32) as u32 / 2;
        let s = spec(ScalarType::BF16, &[inner, 8], sw);
        let arg = TensorMapArg::packed(&[inner as u64 * 3, 50], 2);
        let p = encode_params(&s, &arg, 1 << 20).unwrap();
        assert_eq!(p.swizzle, want);
        assert_eq!(p.data_type, sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
        assert_eq!((p.rank, p.addr), (2, 1 << 20));
        assert_eq!(p.dims, vec![inner as u64 * 3, 50]);
        assert_eq!(p.strides, vec![inner as u64 * 3 * 2]);
        assert_eq!((p.box_dims, p.element_strides), (vec![inner, 8], vec![1, 1]));
        assert_eq!(p.oob_fill, sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    }
    let nan = TensorMapSpec::new(ScalarType::F16, &[8], TmaSwizzle::None, OobFill::Nan).unwrap();
    let p = encode_params(&nan, &TensorMapArg::packed(&[64], 2), 0).unwrap();
    assert_eq!(
        p.oob_fill,
        sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
    );
    use sys::CUtensorMapDataType as D;
    for (t, d) in [
        (ScalarType::I32, D::CU_TENSOR_MAP_DATA_TYPE_INT32),
        (ScalarType::U32, D::CU_TENSOR_MAP_DATA_TYPE_UINT32),
        (ScalarType::I64, D::CU_TENSOR_MAP_DATA_TYPE_INT64),
        (ScalarType::F16, D::CU_TENSOR_MAP_DATA_TYPE_FLOAT16),
        (ScalarType::F32, D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32),
        (ScalarType::F64, D::CU_TENSOR_MAP_DATA_TYPE_FLOAT64),
    ] {
        assert_eq!(data_type(t), Some(d));
    }
}

#[test]
fn a_tensor_from_a_layout_descriptor_encodes_its_strides() {
    // a [7, 30, 100] f32 tensor whose rows are padded to 104 elements, as a tilekit-layout
    // descriptor (dims outermost first)
    let d =
        tilekit_layout::TensorDescriptor::naive(vec![7i64, 30, 100], vec![30 * 104, 104, 1], None)
            .unwrap();
    let arg = TensorMapArg::from_descriptor(&d, 4).unwrap();
    let s = spec(ScalarType::F32, &[8, 4, 2], TmaSwizzle::None);
    let p = encode_params(&s, &arg, 0).unwrap();
    assert_eq!((p.dims, p.strides), (vec![100, 30, 7], vec![416, 416 * 30]));
}
