//! Descriptors: factories against brute-force offsets, element space sizes, vector guarantees.

use proptest::prelude::*;
use tilekit_layout::{LayoutError, TensorDescriptor, Transform};

#[test]
fn naive_offsets_equal_dot_product() {
    let d = TensorDescriptor::naive(vec![3i64, 4, 5], vec![40, 9, 2], None).unwrap();
    for i in 0..3 {
        for j in 0..4 {
            for k in 0..5 {
                assert_eq!(d.calculate_offset(&[i, j, k]).unwrap(), 40 * i + 9 * j + 2 * k);
            }
        }
    }
    assert_eq!(d.element_space_size(), 1 + 2 * 40 + 3 * 9 + 4 * 2);
}

#[test]
fn gemm_lds_a_xor_descriptor_is_a_permutation() {
    // The reference's MakeALdsBlockDescriptor pattern for a 32×32 fp16 tile, K1 = 8, KPack = 8:
    // naive (K0·L, M/L, K1) -> xor on (M/L, K0·L) -> unmerge K0·L -> merge to (M, K).
    let (m, k, k1) = (32i64, 32i64, 8i64);
    let l = 2i64; // 64 bytes of K per row -> two rows share a 128-byte line
    let k0 = k / k1;
    let d =
        TensorDescriptor::naive(vec![k0 * l, m / l, k1], vec![k1, k0 * l * k1, 1], Some((k1, 1)))
            .unwrap()
            .transform(
                vec![Transform::xor(m / l, k0 * l).unwrap(), Transform::pass_through(k1).unwrap()],
                vec![vec![1, 0], vec![2]],
                vec![vec![1, 0], vec![2]],
            )
            .unwrap()
            .transform(
                vec![
                    Transform::unmerge(vec![k0, l]).unwrap(),
                    Transform::pass_through(m / l).unwrap(),
                    Transform::pass_through(k1).unwrap(),
                ],
                vec![vec![0], vec![1], vec![2]],
                vec![vec![0, 2], vec![1], vec![3]],
            )
            .unwrap()
            .transform(
                vec![
                    Transform::merge(vec![m / l, l]).unwrap(),
                    Transform::merge(vec![k0, k1]).unwrap(),
                ],
                vec![vec![1, 2], vec![0, 3]],
                vec![vec![0], vec![1]],
            )
            .unwrap();
    assert_eq!(d.lengths(), vec![m, k]);
    let mut seen = vec![false; (m * k) as usize];
    for i in 0..m {
        for j in 0..k {
            let o = d.calculate_offset(&[i, j]).unwrap();
            assert!((0..m * k).contains(&o));
            assert!(!seen[o as usize], "offset {o} twice");
            seen[o as usize] = true;
        }
    }
    // 8 contiguous fp16 along K stay contiguous (the XOR acts on vector-granular dims)
    assert_eq!(d.top_safe_vector_lengths_strides(), (vec![-1, 8], vec![-1, 1]));
    assert_eq!(d.calculate_offset(&[1, 9]).unwrap() - d.calculate_offset(&[1, 8]).unwrap(), 1);
}

#[test]
fn left_pad_works_inside_descriptors() {
    // A reference compile failure (left_pad_1d); tilekit implements it.
    let d = TensorDescriptor::packed(vec![5i64], None)
        .unwrap()
        .transform(vec![Transform::left_pad(5, 2, false).unwrap()], vec![vec![0]], vec![vec![0]])
        .unwrap();
    let offs: Vec<i64> = (0..7).map(|u| d.calculate_offset(&[u]).unwrap()).collect();
    assert_eq!(offs, [-2, -1, 0, 1, 2, 3, 4]);
}

#[test]
fn factory_errors() {
    let e = TensorDescriptor::<i64>::naive(vec![4, 6], vec![1], None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "naive tensor descriptor: strides has 1 entries, expected 2 (one per length)"
    );
    let e = TensorDescriptor::<i64>::aligned(vec![4, 6], 0).unwrap_err();
    assert!(e.to_string().contains("align = 0"));
}

#[test]
fn an_index_of_the_wrong_rank_is_refused() {
    // the example: a 2-D descriptor asked for the offset of a 1-D index
    let d = TensorDescriptor::naive(vec![4i64, 6], vec![6, 1], None).unwrap();
    let e = d.calculate_offset(&[1]).unwrap_err();
    assert_eq!(
        e,
        LayoutError::CountMismatch {
            context: "tensor adaptor".into(),
            field: "top index".into(),
            got: 1,
            expected: "2 (one per top dimension)".into(),
        }
    );
    assert!(d.calculate_offset(&[1, 2, 3]).is_err());
    // the checked and the unchecked path agree on indices of the right rank
    for (i, j) in [(0, 0), (1, 5), (3, 2)] {
        assert_eq!(d.calculate_offset(&[i, j]).unwrap(), 6 * i + j);
        assert_eq!(d.calculate_offset_unchecked(&[i, j]), 6 * i + j);
    }
}

#[test]
fn element_spaces_that_overflow_are_named_errors() {
    let overflow = |e: LayoutError| match e {
        LayoutError::Overflow { context, quantity, operands } => (context, quantity, operands),
        other => panic!("expected an overflow error, got {other:?}"),
    };
    // 1 + (2 − 1)·(2^62) + (2 − 1)·(2^62) = 2^63 + 1 does not fit
    let (ctx, what, ops) =
        overflow(TensorDescriptor::naive(vec![2i64, 2], vec![1 << 62, 1 << 62], None).unwrap_err());
    assert_eq!(ctx, "naive tensor descriptor");
    assert!(what.starts_with("the element space size"));
    assert_eq!(ops, "lengths [2, 2], strides [4611686018427387904, 4611686018427387904]");
    // one less fits exactly: 1 + 2^62 + (2^62 − 2) = 2^63 − 1
    let d = TensorDescriptor::naive(vec![2i64, 2], vec![1 << 62, (1 << 62) - 2], None).unwrap();
    assert_eq!(d.element_space_size(), i64::MAX);
    // packed: the product of the lengths
    let (ctx, _, ops) = overflow(
        TensorDescriptor::packed(vec![3_000_000_000i64, 4_000_000_000], None).unwrap_err(),
    );
    assert_eq!(
        (ctx.as_str(), ops.as_str()),
        ("unmerge transform", "up_lengths [3000000000, 4000000000]")
    );
    // aligned: the rounded stride times the inner lengths
    let (ctx, _, _) =
        overflow(TensorDescriptor::aligned(vec![2, 1 << 40, 1 << 40], 4).unwrap_err());
    assert_eq!(ctx, "aligned tensor descriptor");
    // strides that fit but a space that does not: the naive descriptor says so
    let (ctx, _, _) =
        overflow(TensorDescriptor::aligned(vec![1 << 40, 1 << 40, 8], 4).unwrap_err());
    assert_eq!(ctx, "naive tensor descriptor");
    let (ctx, _, _) = overflow(TensorDescriptor::aligned(vec![2, i64::MAX], 4).unwrap_err());
    assert_eq!(ctx, "aligned tensor descriptor");
    // with an offset: the last offset must fit
    let (ctx, _, _) = overflow(
        TensorDescriptor::naive_with_offset(vec![4i64], vec![1], i64::MAX - 2).unwrap_err(),
    );
    assert_eq!(ctx, "offset transform");
    assert_eq!(
        TensorDescriptor::naive_with_offset(vec![4i64], vec![1], i64::MAX - 3)
            .unwrap()
            .calculate_offset(&[3])
            .unwrap(),
        i64::MAX
    );
}

proptest! {
    /// Constructors never panic, whatever the lengths (huge, negative, zero): they build or
    /// return an error; what they build evaluates its first and last index without panicking.
    #[test]
    fn descriptor_constructors_never_panic(
        lengths in prop::collection::vec(any_length(), 0..5),
        strides in prop::collection::vec(any_length(), 0..5),
        align in any_length(),
        offset in any::<i64>(),
    ) {
        let probe = |d: &TensorDescriptor<i64>| {
            let lens = d.lengths();
            let zero = vec![0; lens.len()];
            let last: Vec<i64> = lens.iter().map(|l| l - 1).collect();
            assert!(d.calculate_offset(&zero).is_ok());
            assert!(d.calculate_offset(&last).is_ok());
            assert!(d.calculate_offset(&lens[..lens.len().saturating_sub(1)]).is_err() || lens.is_empty());
        };
        if let Ok(d) = TensorDescriptor::naive(lengths.clone(), strides.clone(), None) { probe(&d) }
        if let Ok(d) = TensorDescriptor::packed(lengths.clone(), None) { probe(&d) }
        if let Ok(d) = TensorDescriptor::aligned(lengths.clone(), align) { probe(&d) }
        if let Ok(d) = TensorDescriptor::naive_with_offset(lengths.clone(), strides.clone(), offset) { probe(&d) }
        for t in [
            Transform::merge(lengths.clone()),
            Transform::unmerge(lengths.clone()),
            Transform::embed(lengths.clone(), strides.clone()),
            Transform::replicate(lengths.clone()),
        ]
        .into_iter()
        .flatten()
        {
            let _ = t.upper_lengths();
            let _ = t.lower_index(&vec![0; t.num_upper()]);
        }
        if let [a, b, c, ..] = lengths[..] {
            for t in [
                Transform::pad(a, b, c, false),
                Transform::left_pad(a, b, false),
                Transform::right_pad(a, c, false),
                Transform::offset(a, offset),
                Transform::slice(b, c),
                Transform::modulo(b, a),
                Transform::xor(a, b),
            ]
            .into_iter()
            .flatten()
            {
                let _ = t.upper_lengths();
            }
        }
    }
}

/// Lengths to try: small, huge, zero and negative, and the edges of i64.
fn any_length() -> impl Strategy<Value = i64> {
    prop_oneof![
        1i64..9,
        Just(0i64),
        -5i64..0,
        Just(i64::MAX),
        Just(i64::MIN),
        Just(3_000_000_000),
        Just(1 << 32),
        Just((1 << 62) + 1),
        any::<i64>(),
    ]
}
