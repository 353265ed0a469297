//! Vectorized copy through `api::copy`: interpreter vs reference on random shapes (non-multiples of the 32×(32·V) tile).
use crate::common;

use tilekit_ir::ScalarType;
use tilekit_ops::backend::Interp;
use tilekit_ops::check::{check, Op};
use tilekit_ops::{copy, host::FLOAT_TYPES};

#[test]
fn copy_matches_on_random_shapes() {
    for ty in FLOAT_TYPES {
        for (i, s) in [vec![1i64, 1], vec![33, 70], vec![64, 256], vec![17, 129], vec![2, 5, 37]]
            .iter()
            .enumerate()
        {
            let o = check(&Interp, Op::Copy, s, ty, i as u64).unwrap();
            let c = o.compare();
            assert!(c.passed && c.max_abs == 0.0, "{ty} {s:?}: {c:?}");
            assert_eq!(o.got.len(), s.iter().product::<i64>() as usize);
        }
    }
}

#[test]
fn vector_width_follows_the_shape() {
    let k4 = copy::build(ScalarType::F32, 4, 4).unwrap().to_string();
    let k1 = copy::build(ScalarType::F32, 1, 1).unwrap().to_string();
    assert!(k4.contains("ld.global.v4.f32") && !k1.contains("ld.global.v4.f32"));
}

#[test]
fn copy_waits_for_the_prior_grid_and_triggers_between_loads_and_stores() {
    for ty in FLOAT_TYPES {
        for (vx, vy) in [(16 / ty.size_bytes() as i64, 16 / ty.size_bytes() as i64), (1, 1)] {
            let k = copy::build(ty, vx, vy).unwrap();
            common::assert_pdl_placement(&k);
        }
    }
}
