//! Adaptors: hidden-id bookkeeping of the builders, evaluation order, chaining.

use tilekit_layout::adaptor::Stage;
use tilekit_layout::{TensorAdaptor, TensorDescriptor, Transform};

#[test]
fn transform_allocates_hidden_ids_in_transform_order() {
    // The reference layout of texture_8x8_tiles4x4_unmerge: embed 0->(1,2), unmerge 1->(3,4),
    // unmerge 2->(5,6), top order (3,5,4,6).
    let base = TensorAdaptor::single_stage(
        vec![Transform::embed(vec![8i64, 8], vec![8, 1]).unwrap()],
        vec![vec![0]],
        vec![vec![0, 1]],
    )
    .unwrap();
    let a = base
        .transform(
            vec![Transform::unmerge(vec![2, 4]).unwrap(), Transform::unmerge(vec![2, 4]).unwrap()],
            vec![vec![0], vec![1]],
            vec![vec![0, 2], vec![1, 3]],
        )
        .unwrap();
    assert_eq!(a.top_ids(), &[3, 5, 4, 6]);
    assert_eq!(a.ndim_hidden(), 7);
    assert_eq!(a.stages()[2].upper(), &[5, 6]);
    assert_eq!(a.calculate_bottom_index(&[1, 1, 3, 2]).unwrap(), vec![(4 + 3) * 8 + 4 + 2]);
}

#[test]
fn earlier_stage_wins_when_two_write_one_slot() {
    // Two merges write hidden 1; stages run last-to-first, so stage 0's value survives.
    let s0 = Stage::new(Transform::merge(vec![4i64]).unwrap(), vec![1], vec![2]).unwrap();
    let s1 = Stage::new(Transform::merge(vec![4i64]).unwrap(), vec![1], vec![3]).unwrap();
    let a = TensorAdaptor::new(vec![s0, s1], vec![1, 0], vec![2, 3], 4).unwrap();
    assert_eq!(a.calculate_bottom_index(&[1, 3]).unwrap(), vec![1, 0]);
}

#[test]
fn chain_identifies_bottom_with_top() {
    let a0 = TensorAdaptor::single_stage(
        vec![Transform::unmerge(vec![3i64, 4]).unwrap()],
        vec![vec![0]],
        vec![vec![0, 1]],
    )
    .unwrap();
    let a1 = TensorAdaptor::single_stage(
        vec![Transform::merge(vec![3i64, 4]).unwrap()],
        vec![vec![0, 1]],
        vec![vec![0]],
    )
    .unwrap();
    let c = a1.chain(&a0).unwrap();
    // top (i, j) -> unmerge -> 4i + j -> merge -> (i, j): the identity on 3×4
    for i in 0..3 {
        for j in 0..4 {
            assert_eq!(c.calculate_bottom_index(&[i, j]).unwrap(), vec![i, j]);
        }
    }
    assert_eq!(c.ndim_hidden(), 3 + 3);
    let bad = a0.chain(
        &TensorAdaptor::single_stage(
            vec![Transform::pass_through(4i64).unwrap()],
            vec![vec![0]],
            vec![vec![0]],
        )
        .unwrap(),
    );
    assert!(bad.unwrap_err().to_string().contains("expected 2 (the first adaptor's top rank)"));
}

#[test]
fn structural_errors() {
    let s = Stage::new(Transform::pass_through(4i64).unwrap(), vec![0], vec![1]).unwrap();
    let e = TensorAdaptor::new(vec![s.clone()], vec![0], vec![0], 2).unwrap_err();
    assert!(e
        .to_string()
        .contains("top_hidden_ids[0] = 0 is invalid: a top dimension must be the upper dimension"));
    let e = TensorAdaptor::new(vec![s], vec![0, 0], vec![1], 2).unwrap_err();
    assert!(e
        .to_string()
        .contains("bottom_hidden_ids[1] = 0 is invalid: each hidden id may appear only once"));
    let e = TensorAdaptor::<i64>::single_stage(
        vec![Transform::pass_through(4).unwrap()],
        vec![vec![0]],
        vec![vec![1]],
    )
    .unwrap_err();
    assert!(e
        .to_string()
        .contains("upper_ids[0][0] = 1 is invalid: labels must use each of 0..1 exactly once"));
}

#[test]
fn sizes_and_ranks_are_checked() {
    use tilekit_layout::adaptor::MAX_HIDDEN_DIMS;
    use tilekit_layout::LayoutError;
    let s = Stage::new(Transform::pass_through(4i64).unwrap(), vec![0], vec![1]).unwrap();
    // a hidden-dim count that would make every evaluation allocate gigabytes
    let e = TensorAdaptor::new(vec![s.clone()], vec![0], vec![1], 3_000_000_000).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "tensor adaptor: ndim_hidden = 3000000000 is invalid: an adaptor has at most \
             {MAX_HIDDEN_DIMS} hidden dims"
        )
    );
    assert!(TensorAdaptor::new(vec![s], vec![0], vec![1], MAX_HIDDEN_DIMS).is_ok());
    // top lengths whose product does not fit: 2^40 × 2^40 strided (embed) view of 2 elements
    let e = TensorAdaptor::single_stage(
        vec![Transform::embed(vec![1i64 << 40, 1 << 40], vec![0, 0]).unwrap()],
        vec![vec![0]],
        vec![vec![0, 1]],
    )
    .unwrap_err();
    assert!(matches!(e, LayoutError::Overflow { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "tensor adaptor: the number of top indices Π top lengths overflows i64: \
         top lengths [1099511627776, 1099511627776]"
    );
    // evaluation checks the top rank
    let a = TensorAdaptor::single_stage(
        vec![Transform::unmerge(vec![2i64, 3]).unwrap()],
        vec![vec![0]],
        vec![vec![0, 1]],
    )
    .unwrap();
    assert!(a.calculate_bottom_index(&[1]).is_err());
    assert!(a.calculate_hidden_index(&[1, 2, 3]).is_err());
    assert_eq!(a.calculate_bottom_index(&[1, 2]).unwrap(), vec![5]);
    assert_eq!(a.calculate_bottom_index_unchecked(&[1, 2]), vec![5]);
}

#[test]
fn a_stage_that_reads_its_own_output_is_refused() {
    // found by fuzzing: an offset stage whose upper id is its lower id made the conformance
    // loader's walk to the naive base recurse without end
    let s = Stage::new(Transform::offset(4i64, 1).unwrap(), vec![0], vec![0]).unwrap();
    let e = TensorAdaptor::new(vec![s], vec![0], vec![0], 1).unwrap_err().to_string();
    assert_eq!(
        e,
        "tensor adaptor: transforms[0].upper_hidden_ids = 0 is invalid: hidden id 0 is also a \
         lower id of the same transform [0]: a transform's upper and lower dims must differ"
    );
}

#[test]
fn an_indexing_table_must_address_the_dim_below() {
    // found by fuzzing: a gather table value far above the length of the dim below overflowed
    // the embed under it (16607027887341567 · stride)
    let d = TensorDescriptor::naive(vec![4i64, 6], vec![6, 1], None).unwrap();
    let ok = d
        .transform(
            vec![Transform::indexing(vec![3, 0]).unwrap(), Transform::pass_through(6).unwrap()],
            vec![vec![0], vec![1]],
            vec![vec![0], vec![1]],
        )
        .unwrap();
    assert_eq!(ok.calculate_offset(&[0, 2]).unwrap(), 20);
    let e = d
        .transform(
            vec![
                Transform::indexing(vec![1, 16607027887341567]).unwrap(),
                Transform::pass_through(6).unwrap(),
            ],
            vec![vec![0], vec![1]],
            vec![vec![0], vec![1]],
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("indexing table[1] = 16607027887341567 is invalid: must be < 4, the length of the lower dim"),
        "{e}"
    );
}

#[test]
fn an_old_top_dim_feeds_at_most_one_new_transform() {
    use tilekit_layout::{TensorAdaptor, Transform};
    let base = TensorAdaptor::single_stage(
        vec![Transform::embed(vec![4i64, 8], vec![8, 1]).unwrap()],
        vec![vec![0]],
        vec![vec![0, 1]],
    )
    .unwrap();
    // dim 1 padded and passed through at once: two new top dims would write one hidden dim
    let e = base
        .transform(
            vec![
                Transform::pass_through(4i64).unwrap(),
                Transform::left_pad(8, 1, false).unwrap(),
                Transform::pass_through(8).unwrap(),
            ],
            vec![vec![0], vec![1], vec![1]],
            vec![vec![0], vec![1], vec![2]],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("position 1 already feeds transform 1"), "{e}");
    // each old dim once is fine
    let ok = base
        .transform(
            vec![Transform::pass_through(4i64).unwrap(), Transform::left_pad(8, 1, false).unwrap()],
            vec![vec![0], vec![1]],
            vec![vec![0], vec![1]],
        )
        .unwrap();
    assert_eq!(ok.calculate_bottom_index(&[2, 3]).unwrap(), vec![2 * 8 + 2]);
}

#[test]
fn a_transform_may_not_declare_a_lower_dim_longer_than_the_one_it_reads() {
    use tilekit_layout::{TensorDescriptor, Transform};
    let d = TensorDescriptor::packed(vec![4i64, 2, 6], None).unwrap();
    let e = d
        .transform(
            vec![Transform::left_pad(3_688_786_964_232_744_751i64, 8, true).unwrap()],
            vec![vec![0]],
            vec![vec![0]],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("at most the length 4 of old top dim 0"), "{e}");
    // a merge longer than the dims it merges, an unmerge longer than its dim
    assert!(d
        .transform(vec![Transform::merge(vec![4i64, 3]).unwrap()], vec![vec![0, 1]], vec![vec![0]])
        .is_err());
    assert!(d
        .transform(
            vec![Transform::unmerge(vec![2i64, 4]).unwrap()],
            vec![vec![2]],
            vec![vec![0, 1]]
        )
        .is_err());
    // equal (or shorter, as a pad over part of a dim) is fine
    let ok = d
        .transform(
            vec![
                Transform::merge(vec![4i64, 2]).unwrap(),
                Transform::right_pad(6i64, 2, false).unwrap(),
            ],
            vec![vec![0, 1], vec![2]],
            vec![vec![0], vec![1]],
        )
        .unwrap();
    assert_eq!(ok.lengths(), vec![8, 8]);
    assert_eq!(ok.calculate_offset(&[5, 3]).unwrap(), 5 * 6 + 3);
}

/// A right pad of 2⁴⁰ over a dim that an embed multiplies by 2⁶⁰: in-range top indices would
/// overflow i64 in the embed (the kind of adaptor the layout_construction fuzz target found), so
/// it is refused with the stage named; a pad of 4 over the same dim is fine and evaluates exactly.
#[test]
fn index_ranges_that_overflow_are_refused() {
    let base = TensorAdaptor::single_stage(
        vec![Transform::embed(vec![4i64], vec![1 << 60]).unwrap()],
        vec![vec![0]],
        vec![vec![0]],
    )
    .unwrap();
    let err = base
        .transform(
            vec![Transform::right_pad(4i64, 1 << 40, false).unwrap()],
            vec![vec![0]],
            vec![vec![0]],
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tensor adaptor, transforms[0] (embed): a term uᵢ·cᵢ for in-range top indices \
         overflows i64: reaches [0, 1267650600231688166010523746304]"
    );
    let ok = base
        .transform(
            vec![Transform::right_pad(4i64, 4, false).unwrap()],
            vec![vec![0]],
            vec![vec![0]],
        )
        .unwrap();
    // 6 lies in the pad: the index math still runs (6·2⁶⁰); the largest, 7·2⁶⁰, fits, validity is separate
    assert_eq!(ok.calculate_bottom_index(&[6]).unwrap(), vec![6 << 60]);
}
