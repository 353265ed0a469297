//! Without a CUDA driver (CI), opening a GPU is a typed error, never a panic.

use tilekit_cuda::{CudaError, Gpu};

#[test]
fn open_reports_why_there_is_no_gpu() {
    match Gpu::open(0) {
        Ok(gpu) => {
            // on a machine with a GPU: the properties are real
            assert!(gpu.props().sm_count > 0);
            assert!(!gpu.props().name.is_empty());
        }
        Err(CudaError::NoDriver {}) => assert!(!tilekit_cuda::driver_present()),
        Err(CudaError::NoDevice { ordinal, .. }) => assert_eq!(ordinal, 0),
        Err(e) => panic!("unexpected error kind: {e}"),
    }
    // an absurd ordinal is always refused
    match Gpu::open(1_000_000) {
        Ok(_) => panic!("device 1000000 cannot exist"),
        Err(e) => assert!(matches!(e, CudaError::NoDriver {} | CudaError::NoDevice { .. }), "{e}"),
    }
}
