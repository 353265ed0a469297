//! The kernels of `tilekit selftest` on the interpreter: every case runs and its CPU reference
//! accepts what the interpreter computed (the GPU side is compared with the same references on
//! a lent GPU).

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
