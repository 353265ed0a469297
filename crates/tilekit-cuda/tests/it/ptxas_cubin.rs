//! `module::ptxas_to_cubin`: an external ptxas (`TILEKIT_PTXAS` or on the PATH, as the PTX tests
//! use; the tests are reported as ignored where the build found none: docs/testing.md) turns tilekit's PTX into an ELF cubin for sm_90a, reports its
//! resource lines, and a PTX it rejects is a `Jit` error carrying ptxas's message.

use tilekit_cuda::module::ptxas_to_cubin;
use tilekit_cuda::CudaError;
use tilekit_ir::{Axis, KernelBuilder, ScalarType};
use tilekit_ptx::{emit_kernel, Target};

/// The assembler; a test that calls this is ignored where the build found none (build.rs), and
/// fails when run without one.
fn ptxas() -> std::path::PathBuf {
    tilekit_ptx::ptxas::find().unwrap().expect("no ptxas (TILEKIT_PTXAS or the PATH)")
}

fn copy_kernel_ptx() -> String {
    let b = KernelBuilder::new("copy_f32", [128, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let i = b.thread_id(Axis::X);
    let v = b.load(x, &i, 1, None).unwrap();
    b.store(y, &i, &v, None).unwrap();
    emit_kernel(&b.finish().unwrap(), Target::Sm90a).unwrap()
}

#[test]
#[cfg_attr(not(has_ptxas), ignore = "needs ptxas (TILEKIT_PTXAS or on the PATH)")]
fn ptxas_builds_an_elf_cubin_and_reports_registers() {
    let p = ptxas();
    let (cubin, report) = ptxas_to_cubin(&p, &copy_kernel_ptx(), "sm_90a", "copy_f32").unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF");
    assert!(
        report.info_log.contains("Used") && report.info_log.contains("registers"),
        "{}",
        report.info_log
    );
    assert!(report.jit_ms > 0.0);
}

#[test]
#[cfg_attr(not(has_ptxas), ignore = "needs ptxas (TILEKIT_PTXAS or on the PATH)")]
fn ptx_that_ptxas_rejects_is_a_jit_error_with_its_message() {
    let p = ptxas();
    let bad = copy_kernel_ptx().replace("ret;", "not_an_instruction;");
    match ptxas_to_cubin(&p, &bad, "sm_90a", "copy_f32") {
        Err(CudaError::Jit { kernel, code, log }) => {
            assert_eq!(kernel, "copy_f32");
            assert!(code.contains("exited with"), "{code}");
            assert!(log.contains("not_an_instruction"), "{log}");
        }
        other => panic!("{other:?}"),
    }
}
