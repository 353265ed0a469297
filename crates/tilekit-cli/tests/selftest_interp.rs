//! The asynchronous coverage cases of `tilekit selftest` on the interpreter alone (no GPU): each
//! runs on its seeded random inputs with poisoned outputs, under the schedule the interpreter
//! picks and under the independent warp schedule, and its CPU reference accepts what the
//! interpreter wrote — so a case the selftest compares a GPU against is itself right.

use tilekit_cli::selftest::cases;
use tilekit_ir::interp;

#[test]
fn the_async_coverage_cases_pass_on_the_interpreter() {
    let mut ran = vec![];
    for case in cases(7).unwrap() {
        if !(case.name.starts_with("warp-specialised ring") || case.name.starts_with("bulk")) {
            continue;
        }
        let reference = case.reference.as_ref().expect("async cases have a CPU reference");
        // the schedule the interpreter picks, and every case one warp at a time as well
        for schedule in [interp::Schedule::Auto, interp::Schedule::Warps] {
            let mut out = case.args.clone();
            interp::run_scheduled(&case.kernel, case.grid, &mut out, schedule)
                .unwrap_or_else(|e| panic!("{} ({schedule:?}): interpreter: {e}", case.name));
            reference(&case.args, &out)
                .unwrap_or_else(|e| panic!("{} ({schedule:?}): {e}", case.name));
        }
        // the poisoned output was overwritten: the reference rejects the untouched inputs
        assert!(reference(&case.args, &case.args).is_err(), "{}", case.name);
        ran.push(case.name);
    }
    assert!(ran.iter().any(|n| n == "warp-specialised ring, 2 stages"), "{ran:?}");
    assert!(ran.iter().any(|n| n == "warp-specialised ring, 3 stages"), "{ran:?}");
}

#[test]
fn tilekit_ptx_prints_the_ring() {
    let a = tilekit_cli::ptx::Args {
        kernel: "warp_ring".into(),
        shape: "2".into(),
        dtype: None,
        target: "sm_90a".into(),
        ir: false,
    };
    let text = tilekit_cli::ptx::generate(&a).unwrap();
    assert!(text.starts_with("// grid [4, 1, 1]\n"), "{text}");
    assert!(text.contains(".visible .entry warp_ring_2(") && text.contains("bar.sync 1, 256;"));
    assert!(text.contains("setmaxnreg.dec.sync.aligned.u32 40;") && text.contains(".maxnreg 168"));
}
