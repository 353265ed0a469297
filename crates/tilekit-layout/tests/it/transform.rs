//! Transforms: literal values for every kind (hand-computed), validation errors, and the
//! vector length/stride propagation rules of the reference.

use tilekit_layout::transform::MergeVariant;
use tilekit_layout::{LayoutError, Transform};

#[test]
fn xor_non_power_of_two_matches_hand_table() {
    // l1 = u1 ^ (u0 % 6): for u0 = 5, u1 = 0..6 -> 5,4,7,6,1,0 (7 and 6 exceed the length: the
    // reference does not clamp, and neither does tilekit).
    let t = Transform::xor(4i64, 6).unwrap();
    let row: Vec<i64> = (0..6).map(|u1| t.lower_index(&[5, u1]).unwrap()[1]).collect();
    assert_eq!(row, [5, 4, 7, 6, 1, 0]);
    assert_eq!(t.lower_index(&[3, 2]).unwrap(), vec![3, 1]);
}

#[test]
fn merge_variants_agree_and_match_mixed_radix() {
    let a = Transform::merge_variant(vec![3i64, 5, 7], MergeVariant::MagicDivision).unwrap();
    let b = Transform::merge_variant(vec![3i64, 5, 7], MergeVariant::DivisionMod).unwrap();
    for u in 0..105 {
        let expect = vec![u / 35, (u / 7) % 5, u % 7];
        assert_eq!(a.lower_index(&[u]).unwrap(), expect);
        assert_eq!(b.lower_index(&[u]).unwrap(), expect);
    }
    assert_eq!(a.lower_index(&[104]).unwrap(), vec![2, 4, 6]);
}

#[test]
fn every_kind_literal_values() {
    assert_eq!(
        Transform::embed(vec![4i64, 5], vec![2, 3]).unwrap().lower_index(&[1, 1]).unwrap(),
        vec![5]
    );
    assert_eq!(Transform::unmerge(vec![3i64, 5]).unwrap().lower_index(&[2, 4]).unwrap(), vec![14]);
    assert_eq!(Transform::pad(10i64, 2, 3, false).unwrap().lower_index(&[0]).unwrap(), vec![-2]);
    assert_eq!(Transform::left_pad(5i64, 2, false).unwrap().lower_index(&[0]).unwrap(), vec![-2]);
    assert_eq!(Transform::right_pad(5i64, 2, false).unwrap().lower_index(&[6]).unwrap(), vec![6]);
    assert_eq!(Transform::slice(2i64, 7).unwrap().lower_index(&[0]).unwrap(), vec![2]);
    assert_eq!(Transform::modulo(4i64, 12).unwrap().lower_index(&[9]).unwrap(), vec![1]);
    assert_eq!(Transform::offset(10i64, 5).unwrap().lower_index(&[9]).unwrap(), vec![14]);
    assert_eq!(Transform::freeze(3i64).unwrap().lower_index(&[]).unwrap(), vec![3]);
    assert_eq!(
        Transform::<i64>::indexing(vec![4, 0, 2]).unwrap().lower_index(&[1]).unwrap(),
        vec![0]
    );
    assert_eq!(
        Transform::<i64>::indexing(vec![4, 0, 2]).unwrap().lower_index(&[7]).unwrap(),
        vec![0]
    );
    assert_eq!(Transform::insert(3i64).unwrap().lower_index(&[2]).unwrap(), Vec::<i64>::new());
}

#[test]
fn reference_test_values_for_pad() {
    // CK's test_coordinate_transform.cpp: pad of length 10 with pads 2/3.
    let t = Transform::pad(10i64, 2, 3, false).unwrap();
    assert_eq!(t.upper_lengths(), vec![15]);
    let valid: Vec<i64> = (0..15).filter(|&u| t.is_valid(&[u]).unwrap()).collect();
    assert_eq!(valid, (2..12).collect::<Vec<_>>());
    let skip = Transform::pad(10i64, 2, 3, true).unwrap();
    assert!((0..15).all(|u| skip.is_valid(&[u]).unwrap()));
}

#[test]
fn vector_propagation_rules() {
    let u = Transform::unmerge(vec![2i64, 6]).unwrap();
    assert_eq!(u.upper_vector_lengths_strides(&[4], &[1]).unwrap(), (vec![-1, 2], vec![-1, 1]));
    assert_eq!(u.upper_vector_lengths_strides(&[-1], &[1]).unwrap(), (vec![-1, -1], vec![-1, 1]));
    let x = Transform::xor(4i64, 8).unwrap();
    assert_eq!(
        x.upper_vector_lengths_strides(&[-1, 8], &[-1, 1]).unwrap(),
        (vec![-1, 8], vec![-1, 1])
    );
    for t in [
        Transform::embed(vec![4i64], vec![1]).unwrap(),
        Transform::slice(0i64, 4).unwrap(),
        Transform::modulo(4i64, 8).unwrap(),
        Transform::offset(4i64, 1).unwrap(),
    ] {
        assert_eq!(
            t.upper_vector_lengths_strides(&[4], &[1]).unwrap(),
            (vec![-1], vec![-1]),
            "{}",
            t.name()
        );
    }
    let lp = Transform::left_pad(8i64, 1, false).unwrap();
    assert_eq!(lp.upper_vector_lengths_strides(&[4], &[1]).unwrap(), (vec![4], vec![1]));
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

#[test]
fn lengths_and_ranges_past_i64_are_overflow_errors() {
    let msg = |r: Result<Transform<i64>, LayoutError>| r.unwrap_err().to_string();
    assert_eq!(
        msg(Transform::merge(vec![1 << 32, 1 << 31])),
        "merge transform: the upper length Π low_lengths overflows i64: \
         low_lengths [4294967296, 2147483648]"
    );
    assert_eq!(
        msg(Transform::unmerge(vec![3_000_000_000, 4_000_000_000])),
        "unmerge transform: the lower length Π up_lengths overflows i64: \
         up_lengths [3000000000, 4000000000]"
    );
    assert_eq!(
        msg(Transform::pad(i64::MAX - 1, 1, 1, false)),
        "pad transform: the upper length low_length + left_pad + right_pad overflows i64: \
         low_length 9223372036854775806, left_pad 1, right_pad 1"
    );
    assert!(msg(Transform::left_pad(i64::MAX, 1, false)).contains("low_length + left_pad"));
    assert!(msg(Transform::right_pad(i64::MAX, 1, true)).contains("low_length + right_pad"));
    // embed: the largest (and the smallest) lower index of an in-range upper index must fit
    assert_eq!(
        msg(Transform::embed(vec![3, 2], vec![i64::MAX / 2 + 1, 0])),
        "embed transform: the lower index range Σ (up_length − 1)·coefficient overflows i64: \
         up_lengths [3, 2], coefficients [4611686018427387904, 0]"
    );
    assert!(Transform::embed(vec![2, 2], vec![i64::MIN / 2, i64::MIN / 2]).is_ok());
    assert!(Transform::embed(vec![2, 3], vec![i64::MIN / 2, i64::MIN / 2]).is_err());
    assert!(msg(Transform::replicate(vec![1 << 40, 1 << 40])).contains("Π up_lengths"));
    assert_eq!(
        msg(Transform::offset(8, i64::MAX - 6)),
        "offset transform: the lower index range offset + length − 1 overflows i64: \
         length 8, offset 9223372036854775801"
    );
    // the largest that fit
    let t = Transform::offset(8, i64::MAX - 7).unwrap();
    assert_eq!(t.lower_index(&[7]).unwrap(), vec![i64::MAX]);
    let t = Transform::merge(vec![1 << 31, 1 << 31]).unwrap();
    assert_eq!(t.upper_lengths(), vec![1 << 62]);
    assert_eq!(t.lower_index(&[(1 << 62) - 1]).unwrap(), vec![(1 << 31) - 1, (1 << 31) - 1]);
}

#[test]
fn indices_of_the_wrong_rank_are_refused() {
    let merge = Transform::merge(vec![2i64, 3]).unwrap();
    assert_eq!(
        merge.lower_index(&[]).unwrap_err(),
        LayoutError::count(
            "merge_v2_magic_division transform",
            "upper index",
            0,
            "1 (one per upper dimension)"
        )
    );
    let unmerge = Transform::unmerge(vec![2i64, 3]).unwrap();
    assert!(unmerge.lower_index(&[1]).is_err());
    assert_eq!(unmerge.lower_index(&[1, 2]).unwrap(), vec![5]);
    // update: the diff, the new upper index and the lower index are all checked
    assert!(unmerge.update_lower_index(&[1], &mut [0], &[1, 0]).is_err());
    assert!(unmerge.update_lower_index(&[1, 0], &mut [0, 0], &[1, 0]).is_err());
    assert!(unmerge.update_lower_index(&[1, 0], &mut [0], &[1]).is_err());
    let mut low = [0];
    assert_eq!(unmerge.update_lower_index(&[1, 0], &mut low, &[1, 0]).unwrap(), vec![3]);
    assert_eq!(low, [3]);
    let pad = Transform::pad(4i64, 1, 1, false).unwrap();
    assert!(pad.is_valid(&[0, 1]).is_err());
    assert!(!pad.is_valid(&[0]).unwrap());
    assert!(merge.upper_vector_lengths_strides(&[4], &[1]).is_err());
    assert_eq!(merge.upper_vector_lengths_strides(&[-1, 4], &[-1, 1]).unwrap(), (vec![4], vec![1]));
}
