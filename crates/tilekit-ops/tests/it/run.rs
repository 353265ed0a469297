//! `run::plan` is the kernel and grid the API launches, without data: the same API call on the
//! record backend, compared here with the same call on tensors uploaded from real host data
//! (whose layouts and addresses the interpreter sees), and with the kernel the interpreter ran
//! correctly.

use std::time::Instant;

use tilekit_ir::ScalarType;
use tilekit_ops::backend::{Interp, Record};
use tilekit_ops::check::{Op, Problem};
use tilekit_ops::run::{plan, KERNELS, SELFTEST_CASES};

#[test]
fn plan_is_what_the_api_launches() {
    let extra: &[(&str, &[i64], ScalarType)] = &[
        ("copy", &[1, 1], ScalarType::F32),
        ("copy", &[3, 100, 200], ScalarType::F16),
        ("permute021", &[5, 6, 7], ScalarType::BF16),
        ("softmax", &[2, 16384], ScalarType::F32),
        ("add_row", &[30, 100], ScalarType::F32),
        ("gemm", &[64, 128, 32], ScalarType::BF16),
    ];
    for (kernel, shape, dtype) in SELFTEST_CASES.iter().chain(extra) {
        let p = Problem::new(Op::named(kernel).unwrap(), shape, *dtype, 1).unwrap();
        let rec = Record::new();
        let xs = p.upload(&rec).unwrap();
        p.call(&rec, &xs).unwrap();
        let launched = rec.take();
        assert_eq!(launched.len(), 1, "{kernel} {shape:?}");
        let (k, grid) = plan(kernel, shape, *dtype).unwrap();
        assert_eq!(grid, launched[0].grid, "{kernel} {shape:?} {dtype}");
        assert!(
            k == *launched[0].kernel.kernel(),
            "{kernel} {shape:?} {dtype}: planned kernel differs"
        );
        // small enough to run: the interpreter's run of the same call is right
        if shape.iter().product::<i64>() <= 40_000 {
            let (o, _) = p.run(&Interp).unwrap();
            assert!(o.compare().passed, "{kernel} {shape:?} {dtype}: {:?}", o.compare());
            assert_eq!(o.instructions, k.instruction_count());
        }
    }
}

#[test]
fn every_listed_kernel_plans_for_its_dtypes_and_refuses_others() {
    for info in KERNELS {
        let shape: &[i64] = if info.name == "gemm" {
            &[64, 64, 32]
        } else if info.name.starts_with("attention") {
            &[1, 65, 70, 2, 1, 64]
        } else if info.shape.starts_with("AxBxC") {
            &[4, 5, 6]
        } else {
            &[8, 16]
        };
        for t in [ScalarType::F32, ScalarType::F16, ScalarType::BF16] {
            let r = plan(info.name, shape, t);
            assert_eq!(r.is_ok(), info.dtypes.contains(&t), "{} {t}: {:?}", info.name, r.err());
        }
    }
}

#[test]
fn plan_does_not_grow_with_the_shape() {
    // the examples: 2^31 - 1 elements of copy (24 GB when the host side ran) and a
    // 16384² transpose (23 s); planning takes what a 4×4 plan takes
    let t = Instant::now();
    // one run of 2^31 - 1 elements (odd: no row split) in tiles of 128
    let (k, grid) = plan("copy", &[2_147_483_647, 1], ScalarType::F32).unwrap();
    assert_eq!((k.name.as_str(), grid), ("copy", [16_777_216, 1, 1]));
    // a contiguous copy of 2^28 elements: rows of 256 (rows of 128 would need 65536 blocks of
    // 32 rows, one over the grid's y limit), full 32-row tiles
    let (_, grid) = plan("copy", &[16384, 16384], ScalarType::F32).unwrap();
    assert_eq!(grid, [2, 32_768, 1]);
    let (k, grid) = plan("transpose", &[16384, 16384], ScalarType::F32).unwrap();
    assert_eq!((k.name.as_str(), grid), ("transpose", [256, 256, 1]));
    let (_, grid) = plan("softmax", &[2_147_483_647 / 16384, 16384], ScalarType::BF16).unwrap();
    assert_eq!(grid, [131_071, 1, 1]);
    assert!(t.elapsed().as_secs_f64() < 20.0, "planning took {:?}", t.elapsed());
    // the same shape checks as a launch: too many elements is refused by name
    let e = plan("copy", &[65536, 65536], ScalarType::F32).unwrap_err().to_string();
    assert!(e.contains("more than 2^31-1"), "{e}");
}

/// `tilekit run attention…` on the interpreter: O within the bf16 / f16 tolerance of the f64
/// reference for ragged lengths, grouped-query heads and a query row that sees no key (causal,
/// s_q > s_k), and an O off by twice the tolerance in one element is caught.
#[test]
fn attention_runs_against_its_f64_reference_and_a_wrong_o_fails() {
    use tilekit_ops::run::{run, Backend};
    for (kernel, shape, ty) in [
        ("attention_causal", &[2, 77, 50, 4, 2, 64][..], ScalarType::BF16),
        ("attention", &[1, 33, 70, 2, 1, 128][..], ScalarType::F16),
    ] {
        let r = run(kernel, shape, ty, Backend::Interp, 5).unwrap();
        assert!(r.passed && r.mismatches == 0, "{}", r.summary());
        assert!(r.max_abs > 0.0 && r.max_abs < r.tolerance, "{}", r.summary());
        let p = Problem::new(Op::named(kernel).unwrap(), shape, ty, 5).unwrap();
        let (o, _) = p.run(&Interp).unwrap();
        assert!(o.compare().passed);
        let mut wrong = tilekit_ops::host::to_f64(&o.got);
        wrong[17] += 2.0 * p.tolerance * wrong[17].abs().max(1.0);
        let wrong = tilekit_ir::interp::HostBuffer::from_f64(&wrong);
        assert!(!tilekit_ops::host::compare(&wrong, &p.want, p.tolerance).passed);
    }
    // causal with s_q > s_k: the first s_q − s_k rows see no key and are 0
    let p = Problem::new(
        Op::named("attention_causal").unwrap(),
        &[1, 9, 4, 1, 1, 64],
        ScalarType::BF16,
        2,
    )
    .unwrap();
    let want = tilekit_ops::host::to_f64(&p.want);
    assert!(want[..5 * 64].iter().all(|&x| x == 0.0) && want[5 * 64..].iter().any(|&x| x != 0.0));
    let (o, _) = p.run(&Interp).unwrap();
    assert!(o.compare().passed, "{:?}", o.compare());
}
