//! Row sum, row max and softmax: interpreter vs f64 reference on random shapes.
use tilekit_ir::ScalarType;
use tilekit_ops::reduce::{launch, Reduction};

#[test]
fn reductions_match_on_random_shapes() {
    for ty in [ScalarType::F32, ScalarType::BF16] {
        for r in [Reduction::Sum, Reduction::Max, Reduction::Softmax] {
            for (i, s) in [[1i64, 1], [3, 1000], [5, 4096], [2, 4097], [7, 33]].iter().enumerate() {
                let o = launch(r, s, ty, i as u64).unwrap();
                let c = o.compare();
                assert!(c.passed, "{} {ty} {s:?}: {c:?}", r.name());
                assert_eq!(
                    o.got.len(),
                    if r == Reduction::Softmax { (s[0] * s[1]) as usize } else { s[0] as usize }
                );
            }
        }
    }
}

#[test]
fn softmax_rows_sum_to_one() {
    let o = launch(Reduction::Softmax, &[4, 777], ScalarType::F32, 9).unwrap();
    for row in tilekit_ops::host::to_f64(&o.got).chunks(777) {
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-5);
    }
}
