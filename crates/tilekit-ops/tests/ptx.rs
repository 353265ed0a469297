//! Every kernel of the library, in every configuration the selftest uses, is emitted as PTX for
//! sm_80, sm_90 and sm_90a and assembled with ptxas (CI requires the assembler); cluster kernels
//! for sm_90 and sm_90a only (sm_80 has no clusters: a named error).

use tilekit_ops::run::{plan, SELFTEST_CASES};
use tilekit_ptx::{emit_kernel, ptxas, Target};

#[test]
fn every_library_kernel_assembles() {
    for (i, (kernel, shape, dtype)) in SELFTEST_CASES.iter().enumerate() {
        // the kernel the API launches for this case (tests/run.rs: plan = launch)
        let launched = [plan(kernel, shape, *dtype).unwrap()];
        for (k, _) in launched {
            for t in Target::ALL {
                if k.cluster_size() > 1 && t == Target::Sm80 {
                    // thread-block clusters are sm_90 and later: a named error, not PTX
                    let e = emit_kernel(&k, t).unwrap_err().to_string();
                    assert!(e.contains("clusters need sm_90"), "{kernel}: {e}");
                    continue;
                }
                let ptx = emit_kernel(&k, t).unwrap_or_else(|e| panic!("{kernel}: {e}"));
                if let Some(report) =
                    ptxas::assemble(&ptx, t, &format!("{kernel}_{}_{}", dtype.name(), i)).unwrap()
                {
                    assert!(
                        !report.contains("spill stores, 0 bytes spill loads")
                            || report.contains("0 bytes spill stores"),
                        "{kernel}: spills\n{report}"
                    );
                }
            }
        }
    }
}
