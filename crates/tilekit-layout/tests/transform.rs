//! Transforms: literal values for every kind (hand-computed), validation errors, and the
//! vector length/stride propagation rules of the reference.

use tilekit_layout::transform::MergeVariant;
use tilekit_layout::{LayoutError, Transform};

#[test]
fn xor_non_power_of_two_matches_hand_table() {
    // l1 = u1 ^ (u0 % 6): for u0 = 5, u1 = 0..6 -> 5,4,7,6,1,0 (7 and 6 exceed the length: the
    // reference does not clamp, and neither does tilekit).
    let t = Transform::xor(4i64, 6).unwrap();
    let row: Vec<i64> = (0..6).map(|u1| t.lower_index(&[5, u1])[1]).collect();
    assert_eq!(row, [5, 4, 7, 6, 1, 0]);
    assert_eq!(t.lower_index(&[3, 2]), vec![3, 1]);
}

#[test]
fn merge_variants_agree_and_match_mixed_radix() {
    let a = Transform::merge_variant(vec![3i64, 5, 7], MergeVariant::MagicDivision).unwrap();
    let b = Transform::merge_variant(vec![3i64, 5, 7], MergeVariant::DivisionMod).unwrap();
    for u in 0..105 {
        let expect = vec![u / 35, (u / 7) % 5, u % 7];
        assert_eq!(a.lower_index(&[u]), expect);
        assert_eq!(b.lower_index(&[u]), expect);
    }
    assert_eq!(a.lower_index(&[104]), vec![2, 4, 6]);
}

#[test]
fn every_kind_literal_values() {
    assert_eq!(Transform::embed(vec![4i64, 5], vec![2, 3]).unwrap().lower_index(&[1, 1]), vec![5]);
    assert_eq!(Transform::unmerge(vec![3i64, 5]).unwrap().lower_index(&[2, 4]), vec![14]);
    assert_eq!(Transform::pad(10i64, 2, 3, false).unwrap().lower_index(&[0]), vec![-2]);
    assert_eq!(Transform::left_pad(5i64, 2, false).unwrap().lower_index(&[0]), vec![-2]);
    assert_eq!(Transform::right_pad(5i64, 2, false).unwrap().lower_index(&[6]), vec![6]);
    assert_eq!(Transform::slice(2i64, 7).unwrap().lower_index(&[0]), vec![2]);
    assert_eq!(Transform::modulo(4i64, 12).unwrap().lower_index(&[9]), vec![1]);
    assert_eq!(Transform::offset(10i64, 5).unwrap().lower_index(&[9]), vec![14]);
    assert_eq!(Transform::freeze(3i64).unwrap().lower_index(&[]), vec![3]);
    assert_eq!(Transform::<i64>::indexing(vec![4, 0, 2]).unwrap().lower_index(&[1]), vec![0]);
    assert_eq!(Transform::<i64>::indexing(vec![4, 0, 2]).unwrap().lower_index(&[7]), vec![0]);
    assert_eq!(Transform::insert(3i64).unwrap().lower_index(&[2]), Vec::<i64>::new());
}

#[test]
fn reference_test_values_for_pad() {
    // CK's test_coordinate_transform.cpp: pad of length 10 with pads 2/3.
    let t = Transform::pad(10i64, 2, 3, false).unwrap();
    assert_eq!(t.upper_lengths(), vec![15]);
    let valid: Vec<i64> = (0..15).filter(|&u| t.is_valid(&[u])).collect();
    assert_eq!(valid, (2..12).collect::<Vec<_>>());
    let skip = Transform::pad(10i64, 2, 3, true).unwrap();
    assert!((0..15).all(|u| skip.is_valid(&[u])));
}

#[test]
fn vector_propagation_rules() {
    let u = Transform::unmerge(vec![2i64, 6]).unwrap();
    assert_eq!(u.upper_vector_lengths_strides(&[4], &[1]), (vec![-1, 2], vec![-1, 1]));
    assert_eq!(u.upper_vector_lengths_strides(&[-1], &[1]), (vec![-1, -1], vec![-1, 1]));
    let x = Transform::xor(4i64, 8).unwrap();
    assert_eq!(x.upper_vector_lengths_strides(&[-1, 8], &[-1, 1]), (vec![-1, 8], vec![-1, 1]));
    for t in [
        Transform::embed(vec![4i64], vec![1]).unwrap(),
        Transform::slice(0i64, 4).unwrap(),
        Transform::modulo(4i64, 8).unwrap(),
        Transform::offset(4i64, 1).unwrap(),
    ] {
        assert_eq!(
            t.upper_vector_lengths_strides(&[4], &[1]),
            (vec![-1], vec![-1]),
            "{}",
            t.name()
        );
    }
    let lp = Transform::left_pad(8i64, 1, false).unwrap();
    assert_eq!(lp.upper_vector_lengths_strides(&[4], &[1]), (vec![4], vec![1]));
}

#[test]
fn errors_name_field_value_and_rule() {
    let e = Transform::<i64>::embed(vec![4, 6], vec![1]).unwrap_err();
    assert_eq!(
        e,
        LayoutError::count("embed transform", "coefficients", 1, "2 (one per upper length)")
    );
    let e = Transform::<i64>::merge(vec![4, 0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "merge transform: low_lengths[1] = 0 is invalid: lengths must be >= 1"
    );
    let e = Transform::<i64>::slice(5, 5).unwrap_err();
    assert_eq!(
        e.to_string(),
        "slice transform: slice_end = 5 is invalid: the end must be greater than slice_begin = 5"
    );
    let e = Transform::<i64>::modulo(0, 4).unwrap_err();
    assert!(e.to_string().contains("modulus = 0"));
    let e = Transform::<i64>::indexing(vec![1, -2]).unwrap_err();
    assert!(e.to_string().contains("table[1] = -2"));
}
