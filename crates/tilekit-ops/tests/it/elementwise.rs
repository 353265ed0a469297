//! Elementwise binary ops with broadcast: interpreter vs rounded f64 reference (exact).
use crate::common;

use tilekit_ops::backend::Interp;
use tilekit_ops::check::{check, Op};
use tilekit_ops::elementwise::{Binary, Broadcast};
use tilekit_ops::host::FLOAT_TYPES;

#[test]
fn binary_ops_with_broadcast_match_on_random_shapes() {
    for ty in FLOAT_TYPES {
        for op in [Binary::Add, Binary::Mul, Binary::Max] {
            for bc in [Broadcast::None, Broadcast::Row, Broadcast::Col] {
                for (i, s) in [[1i64, 1], [5, 9], [32, 128], [33, 130], [70, 7]].iter().enumerate()
                {
                    let c =
                        check(&Interp, Op::Elementwise(op, bc), s, ty, i as u64).unwrap().compare();
                    assert!(c.passed && c.max_abs == 0.0, "{} {bc:?} {ty} {s:?}: {c:?}", op.name());
                }
            }
        }
    }
}

#[test]
fn elementwise_waits_for_the_prior_grid_and_triggers_after_both_operands_loads() {
    for ty in FLOAT_TYPES {
        for vb in [1, 16 / ty.size_bytes() as i64] {
            let k =
                tilekit_ops::elementwise::build(Binary::Add, ty, 16 / ty.size_bytes() as i64, vb)
                    .unwrap();
            common::assert_pdl_placement(&k);
        }
    }
}

#[test]
fn maximum_propagates_nan_like_torch() {
    // torch.maximum: NaN in either operand gives NaN (the GPU's max.NaN), on every float type,
    // for short and vectorised rows and with a broadcast operand
    use tilekit_ops::api;
    use tilekit_ops::host;
    let nan = f64::NAN;
    let (a, b) = ([nan, 1.0, -2.0, nan], [1.0, nan, 3.0, nan]);
    let want = [nan, nan, 3.0, nan];
    let same = |g: &[f64], w: &[f64]| {
        g.len() == w.len() && g.iter().zip(w).all(|(g, w)| (g.is_nan() && w.is_nan()) || g == w)
    };
    for ty in FLOAT_TYPES {
        let y = api::maximum(&Interp, &common::tensor(ty, &a, &[4]), &common::tensor(ty, &b, &[4]))
            .unwrap();
        let got = host::to_f64(&y.buffer());
        assert!(same(&got, &want), "{ty}: {got:?}");
        // 37 × 130: vectors and a tail; NaN planted in a, in b and in both
        let (m, n) = (37usize, 130usize);
        let va: Vec<f64> = (0..m * n)
            .map(|i| if i % 7 == 3 { nan } else { ((i * 13) % 41) as f64 / 4.0 - 5.0 })
            .collect();
        let vb: Vec<f64> = (0..m * n)
            .map(|i| if i % 5 == 1 { -nan } else { ((i * 29) % 37) as f64 / 4.0 - 4.0 })
            .collect();
        let want: Vec<f64> = va.iter().zip(&vb).map(|(&x, &z)| Binary::Max.apply(x, z)).collect();
        assert!(want.iter().any(|v| v.is_nan()) && want.iter().any(|v| !v.is_nan()));
        let (ta, tb) = (
            common::tensor(ty, &va, &[m as i64, n as i64]),
            common::tensor(ty, &vb, &[m as i64, n as i64]),
        );
        let got = host::to_f64(&api::maximum(&Interp, &ta, &tb).unwrap().buffer());
        assert!(same(&got, &want), "{ty} {m} × {n}");
        // broadcast: a row of b (with NaN) against every row of a
        let row = common::tensor(ty, &vb[..n], &[n as i64]);
        let got = host::to_f64(&api::maximum(&Interp, &ta, &row).unwrap().buffer());
        let want: Vec<f64> = (0..m * n).map(|i| Binary::Max.apply(va[i], vb[i % n])).collect();
        assert!(same(&got, &want), "{ty} {m} × {n} with a broadcast row");
    }
}
