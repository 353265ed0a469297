//! Elementwise binary ops with broadcast: interpreter vs rounded f64 reference (exact).
mod common;

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
