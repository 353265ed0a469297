//! Descriptors: factories against brute-force offsets, element space sizes, vector guarantees.

use tilekit_layout::{TensorDescriptor, Transform};

#[test]
fn naive_offsets_equal_dot_product() {
    let d = TensorDescriptor::naive(vec![3i64, 4, 5], vec![40, 9, 2], None).unwrap();
    for i in 0..3 {
        for j in 0..4 {
            for k in 0..5 {
                assert_eq!(d.calculate_offset(&[i, j, k]), 40 * i + 9 * j + 2 * k);
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
            let o = d.calculate_offset(&[i, j]);
            assert!((0..m * k).contains(&o));
            assert!(!seen[o as usize], "offset {o} twice");
            seen[o as usize] = true;
        }
    }
    // 8 contiguous fp16 along K stay contiguous (the XOR acts on vector-granular dims)
    assert_eq!(d.top_safe_vector_lengths_strides(), (vec![-1, 8], vec![-1, 1]));
    assert_eq!(d.calculate_offset(&[1, 9]) - d.calculate_offset(&[1, 8]), 1);
}

#[test]
fn left_pad_works_inside_descriptors() {
    // A reference compile failure (left_pad_1d); tilekit implements it.
    let d = TensorDescriptor::packed(vec![5i64], None)
        .unwrap()
        .transform(vec![Transform::left_pad(5, 2, false).unwrap()], vec![vec![0]], vec![vec![0]])
        .unwrap();
    let offs: Vec<i64> = (0..7).map(|u| d.calculate_offset(&[u])).collect();
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
