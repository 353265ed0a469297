//! The mma.sync GEMM: interpreter vs f64 product.
use tilekit_ir::ScalarType;
use tilekit_ops::backend::Interp;
use tilekit_ops::check::{check, Op};

#[test]
fn gemm_matches_the_f64_product() {
    for ty in [ScalarType::F16, ScalarType::BF16] {
        for (i, s) in
            [[64i64, 64, 32], [128, 64, 64], [64, 128, 96], [192, 64, 32], [128, 128, 128]]
                .iter()
                .enumerate()
        {
            let o = check(&Interp, Op::Gemm, s, ty, i as u64).unwrap();
            let c = o.compare();
            assert!(c.passed, "{ty} {s:?}: {c:?}");
            assert!(tilekit_ops::host::to_f64(&o.want).iter().any(|v| v.abs() > 1.0));
            // a real product, not zeros
        }
    }
}

#[test]
fn shapes_off_the_tile_are_refused() {
    let e = check(&Interp, Op::Gemm, &[64, 64, 40], ScalarType::F16, 1).unwrap_err();
    assert!(e.to_string().contains("K = 40 is invalid: must be a multiple of 32"), "{e}");
}
