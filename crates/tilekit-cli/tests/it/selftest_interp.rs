//! The kernels of `tilekit selftest` on the interpreter: every case runs and its CPU reference
//! accepts what the interpreter computed (the GPU side is compared with the same references on
//! a lent GPU); the asynchronous coverage cases also under the independent warp schedule.

use tilekit_ir::interp;

#[test]
fn every_selftest_case_passes_its_reference_on_the_interpreter() {
    let cases = tilekit_cli::selftest::cases(7).unwrap();
    assert!(cases.iter().filter(|c| c.name.starts_with("TMA round trip")).count() == 8);
    for case in cases {
        let mut got = case.args.clone();
        interp::run(&case.kernel, case.grid, &mut got)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        if let Some(r) = &case.reference {
            r(&case.args, &got).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        }
    }
}

#[test]
fn a_tma_reference_rejects_a_wrong_box() {
    // the reference is not vacuous: one flipped element of y or z is caught
    let cases = tilekit_cli::selftest::cases(7).unwrap();
    let case = cases.iter().find(|c| c.name == "TMA round trip tma_sw64").unwrap();
    let mut got = case.args.clone();
    interp::run(&case.kernel, case.grid, &mut got).unwrap();
    for i in [1usize, 2] {
        let mut bad = got.clone();
        let mut b = bad.take_buffer(i).unwrap();
        b.set_bits(5, b.bits(5) ^ 1);
        bad.set_buffer(i, b);
        let r = case.reference.as_ref().unwrap();
        assert!(r(&case.args, &bad).is_err(), "buffer {i}");
    }
}

#[test]
fn the_async_coverage_cases_pass_on_the_interpreter() {
    let mut ran = vec![];
    for case in tilekit_cli::selftest::cases(7).unwrap() {
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
