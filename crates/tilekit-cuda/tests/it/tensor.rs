//! Device tensors: uploads, views and gathers against hand-computed values on a GPU (those tests
//! are `#[ignore]`d: `--include-ignored` runs them; no_gpu.rs checks the typed error without one).

use half::{bf16, f16};
use tilekit_cuda::tensor::{DeviceTensor, DeviceTensorRef};
use tilekit_cuda::{CudaError, Gpu};
use tilekit_ir::tensor::{HostTensor, TensorError, TensorLayout};
use tilekit_ir::ScalarType;

/// The GPU of a test that needs one. Such tests are `#[ignore]`d (the summary counts them) and
/// run with `--include-ignored`; a missing GPU is then a failure, never a skip.
fn gpu() -> Gpu {
    Gpu::open(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU and none opened: {e}"))
}

#[test]
fn tensor_errors_convert_to_cuda_errors() {
    let e: CudaError = TensorError::DoesNotFit { span: 6, buffer_len: 5 }.into();
    assert!(matches!(e, CudaError::Tensor(TensorError::DoesNotFit { span: 6, buffer_len: 5 })));
    assert_eq!(
        e.to_string(),
        "tensor: the layout spans 6 elements but the buffer holds 5: the buffer must hold at least 6"
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
fn owned_tensors_views_and_gathers() {
    let gpu = gpu();
    let data: Vec<i32> = (0..24).collect();
    let t = DeviceTensor::from_slice(&gpu, &data, &[2, 3, 4]).unwrap();
    assert_eq!(t.storage_bytes(), 96);
    assert_eq!(t.to_vec::<i32>().unwrap(), data);
    // permute [2, 0, 1]: out[k][i][j] = 12i + 4j + k
    let mut want = vec![];
    for k in 0..4 {
        for i in 0..2 {
            for j in 0..3 {
                want.push(12 * i + 4 * j + k);
            }
        }
    }
    let p = t.permute(&[2, 0, 1]).unwrap();
    assert!(std::sync::Arc::ptr_eq(p.storage().unwrap(), t.storage().unwrap()));
    assert_eq!(p.to_vec::<i32>().unwrap(), want);
    let c = p.contiguous().unwrap();
    assert!(c.layout().is_contiguous());
    assert_eq!(c.to_vec::<i32>().unwrap(), want);
    // narrow (an offset into the storage) then transpose: the same as the host tensor
    let n = t.narrow(0, 1, 1).unwrap().narrow(2, 1, 2).unwrap().transpose(1, 2).unwrap();
    assert_eq!(n.to_vec::<i32>().unwrap(), vec![13, 17, 21, 14, 18, 22]);
    let h = HostTensor::from_slice(&data, &[2, 3, 4]).unwrap();
    let hn = h.narrow(0, 1, 1).unwrap().narrow(2, 1, 2).unwrap().transpose(1, 2).unwrap();
    assert_eq!(n.to_host().unwrap().to_vec::<i32>().unwrap(), hn.to_vec::<i32>().unwrap());
    // broadcast
    let b = DeviceTensor::from_slice(&gpu, &[1.0f32, 2.0], &[2, 1]).unwrap();
    assert_eq!(
        b.broadcast_to(&[2, 2, 3]).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
    );
    // half types, zeros, empty tensors, upload of a strided host view
    let x = [0.5f32, 1.5, 2.5, 3.5].map(bf16::from_f32);
    let bt = DeviceTensor::from_slice(&gpu, &x, &[2, 2]).unwrap();
    assert_eq!(bt.transpose(0, 1).unwrap().to_vec::<bf16>().unwrap(), vec![x[0], x[2], x[1], x[3]]);
    let ft = DeviceTensor::from_slice(&gpu, &[f16::ONE, f16::ZERO], &[2]).unwrap();
    assert_eq!(ft.to_vec::<f16>().unwrap(), vec![f16::ONE, f16::ZERO]);
    let z = DeviceTensor::zeros(&gpu, ScalarType::F64, &[3, 2]).unwrap();
    assert_eq!(z.to_vec::<f64>().unwrap(), vec![0.0; 6]);
    let e = DeviceTensor::zeros(&gpu, ScalarType::F32, &[3, 0]).unwrap();
    assert_eq!(e.to_vec::<f32>().unwrap(), Vec::<f32>::new());
    let e = DeviceTensor::from_slice::<f32>(&gpu, &[], &[0]).unwrap();
    assert_eq!(e.to_vec::<f32>().unwrap(), Vec::<f32>::new());
    let d = DeviceTensor::from_host(&gpu, &h.permute(&[2, 0, 1]).unwrap()).unwrap();
    assert_eq!(d.to_vec::<i32>().unwrap(), want);
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
fn owned_tensor_errors_are_typed() {
    let gpu = gpu();
    let t = DeviceTensor::from_slice(&gpu, &[1i32, 2, 3, 4], &[2, 2]).unwrap();
    assert!(matches!(
        DeviceTensor::from_slice(&gpu, &[1i32, 2, 3], &[2, 2]),
        Err(CudaError::Tensor(TensorError::LengthMismatch { numel: 4, len: 3, .. }))
    ));
    assert!(matches!(
        t.to_vec::<f32>(),
        Err(CudaError::Tensor(TensorError::DtypeMismatch {
            layout: ScalarType::I32,
            other: ScalarType::F32
        }))
    ));
    assert!(matches!(
        t.permute(&[0, 0]),
        Err(CudaError::Tensor(TensorError::BadPermutation { .. }))
    ));
    assert!(matches!(
        t.narrow(0, 1, 2),
        Err(CudaError::Tensor(TensorError::NarrowOutOfRange { .. }))
    ));
    let l = TensorLayout::contiguous(ScalarType::I32, vec![5]).unwrap();
    assert!(matches!(
        DeviceTensor::from_storage(&gpu, t.storage().unwrap().clone(), l),
        Err(CudaError::Tensor(TensorError::DoesNotFit { span: 5, buffer_len: 4 }))
    ));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
fn borrowed_tensors_over_cudarc_memory() {
    let gpu = gpu();
    let buf = gpu.upload(&(0..12).map(|x| x as f32).collect::<Vec<_>>()).unwrap();
    // a 3x2 view with row stride 4 starting at element 1
    let l = TensorLayout::strided(ScalarType::F32, vec![3, 2], vec![4, 1], 1).unwrap();
    let t = DeviceTensorRef::from_cuda_slice(&buf, l.clone()).unwrap();
    assert_eq!(t.to_vec::<f32>(&gpu).unwrap(), vec![1.0, 2.0, 5.0, 6.0, 9.0, 10.0]);
    assert_eq!(
        t.permute(&[1, 0]).unwrap().to_vec::<f32>(&gpu).unwrap(),
        vec![1.0, 5.0, 9.0, 2.0, 6.0, 10.0]
    );
    assert_eq!(t.narrow(0, 2, 1).unwrap().to_vec::<f32>(&gpu).unwrap(), vec![9.0, 10.0]);
    // from a cudarc view: element 0 of the view is element 4 of the buffer
    let l2 = TensorLayout::strided(ScalarType::F32, vec![2, 2], vec![4, 1], 1).unwrap();
    let v = DeviceTensorRef::from_view(&gpu, buf.slice(4..), l2).unwrap();
    assert_eq!(v.bytes().len(), 32);
    assert_eq!(v.to_vec::<f32>(&gpu).unwrap(), vec![5.0, 6.0, 9.0, 10.0]);
    // an owned tensor borrowed
    let o = DeviceTensor::from_slice(&gpu, &[3u32, 4], &[2]).unwrap();
    assert_eq!(o.as_ref().unwrap().to_vec::<u32>(&gpu).unwrap(), vec![3, 4]);
    // errors: the layout does not fit the slice, the dtype differs
    let big = TensorLayout::contiguous(ScalarType::F32, vec![13]).unwrap();
    assert!(matches!(
        DeviceTensorRef::from_cuda_slice(&buf, big),
        Err(CudaError::Tensor(TensorError::DoesNotFit { span: 13, buffer_len: 12 }))
    ));
    assert!(matches!(
        DeviceTensorRef::from_view(&gpu, buf.slice(4..), l),
        Err(CudaError::Tensor(TensorError::DoesNotFit { span: 11, buffer_len: 8 }))
    ));
    let wrong = TensorLayout::contiguous(ScalarType::I32, vec![2]).unwrap();
    assert!(matches!(
        DeviceTensorRef::from_cuda_slice(&buf, wrong),
        Err(CudaError::Tensor(TensorError::DtypeMismatch {
            layout: ScalarType::I32,
            other: ScalarType::F32
        }))
    ));
    assert!(matches!(
        t.to_vec::<i32>(&gpu),
        Err(CudaError::Tensor(TensorError::DtypeMismatch { .. }))
    ));
}
