//! Transpose through a swizzled shared tile and 3-D permutes: interpreter vs reference; the
//! shared accesses are conflict-free.
use tilekit_ir::ScalarType;
use tilekit_ops::backend::Interp;
use tilekit_ops::check::{check, Op};
use tilekit_ops::{host::FLOAT_TYPES, transpose};

#[test]
fn transpose_matches_on_random_shapes() {
    for ty in FLOAT_TYPES {
        for (i, s) in [[1i64, 1], [70, 33], [64, 128], [129, 65], [200, 31]].iter().enumerate() {
            let c = check(&Interp, Op::Transpose, s, ty, i as u64).unwrap().compare();
            assert!(c.passed && c.max_abs == 0.0, "{ty} {s:?}: {c:?}");
        }
    }
}

#[test]
fn permutes_match_on_random_shapes() {
    for ty in [ScalarType::F32, ScalarType::BF16] {
        for perm in [[2usize, 0, 1], [0, 2, 1], [1, 2, 0], [2, 1, 0], [1, 0, 2]] {
            for (i, s) in
                [[3i64, 5, 7], [2, 70, 33], [4, 16, 64], [1, 9, 130], [5, 1, 3]].iter().enumerate()
            {
                let c = check(&Interp, Op::Permute(perm), s, ty, i as u64).unwrap().compare();
                assert!(c.passed && c.max_abs == 0.0, "{ty} {perm:?} {s:?}: {c:?}");
            }
        }
    }
}

#[test]
fn swizzled_shared_tile_is_conflict_free_and_plain_is_not() {
    for ty in FLOAT_TYPES {
        assert_eq!(transpose::bank_conflicts(ty).unwrap(), 1, "{ty}");
    }
    // the same accesses on an unswizzled tile serialise 8 ways
    let plain = tilekit_layout::TensorDescriptor::packed(vec![64i64, 64], Some(4)).unwrap();
    assert_eq!(transpose::bank_conflicts_with(ScalarType::F32, &plain).unwrap(), 8);
}
