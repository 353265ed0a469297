//! Distributions: thread origins and element owners against hand computation, slicing, and the
//! reference semantics of an ill-formed encoding.

use crate::common;

use common::{assign, doc_rowmajor};

use proptest::prelude::*;
use tilekit_tile::encoding::EncodingSpec;
use tilekit_tile::{render, TileDistribution};

#[test]
fn owners_by_brute_force() {
    // X0 = 2·p0 + y0, X1 = 4·p1 + y1: compare every (p, y) with the formula
    let d = doc_rowmajor();
    for p0 in 0..2 {
        for p1 in 0..4 {
            for y0 in 0..2 {
                for y1 in 0..4 {
                    assert_eq!(
                        d.calculate_x(&[p0, p1], &[y0, y1]).unwrap(),
                        vec![2 * p0 + y0, 4 * p1 + y1]
                    );
                }
            }
        }
    }
    assert_eq!(d.num_threads(), 8);
    assert_eq!(
        (0..8).map(|k| d.d_to_ys(k)).map(|y| d.ys_to_d(&y).unwrap()).collect::<Vec<i64>>(),
        (0..8).collect::<Vec<_>>()
    );
}

#[test]
fn replication_gives_equal_x_for_r_siblings() {
    // r_replicate_simple: P0 (4 warps) only owns R0, so every warp holds the same X
    let d = TileDistribution::from_spec(EncodingSpec {
        rs_lengths: vec![4],
        hs_lengthss: vec![vec![8], vec![4, 4]],
        ps_to_rhss_major: vec![vec![0], vec![1, 2]],
        ps_to_rhss_minor: vec![vec![0], vec![0, 0]],
        ys_to_rhs_major: vec![2],
        ys_to_rhs_minor: vec![1],
    })
    .unwrap();
    for lane in 0..32 {
        let x0 = d.calculate_x(&[0, lane], &[3]).unwrap();
        for warp in 1..4 {
            assert_eq!(d.calculate_x(&[warp, lane], &[3]).unwrap(), x0);
            assert_eq!(d.calculate_rs_index_from_ps_index(&[warp, lane]).unwrap(), vec![warp]);
        }
        assert_eq!(x0, vec![lane / 4, (lane % 4) * 4 + 3]);
    }
}

#[test]
fn slicing_keeps_owners_of_the_kept_elements() {
    // X1 = H(Y1 = 4, P1 = 4): column = 4·y1 + lane; keep columns 4..12
    let d = TileDistribution::from_spec(EncodingSpec {
        rs_lengths: vec![],
        hs_lengthss: vec![vec![2, 2], vec![4, 4]],
        ps_to_rhss_major: vec![vec![1], vec![2]],
        ps_to_rhss_minor: vec![vec![0], vec![1]],
        ys_to_rhs_major: vec![1, 2],
        ys_to_rhs_minor: vec![1, 0],
    })
    .unwrap();
    let (s, origin) = d.slice_x(&[0, 4], &[4, 12]).unwrap();
    assert_eq!(origin, vec![0, 1]);
    for p in [[0i64, 0], [1, 3], [0, 2]] {
        for y0 in 0..2 {
            for y1 in 0..2 {
                let sliced = s.calculate_x(&p, &[y0, y1]).unwrap();
                let orig = d.calculate_x(&p, &[y0 + origin[0], y1 + origin[1]]).unwrap();
                assert_eq!(vec![sliced[0], sliced[1] + 4], orig);
            }
        }
    }
    let e = d.slice_x(&[0, 0], &[4, 6]).unwrap_err().to_string();
    assert!(e.contains("X1 length = 6 is invalid"), "{e}");
    let e = d.slice_x(&[0, 2], &[4, 10]).unwrap_err().to_string();
    assert!(e.contains("X1 begin = 2 is invalid"), "{e}");
}

#[test]
fn reference_semantics_of_a_duplicate_p() {
    // edge_doc_rowmajor_dup_p: tilekit refuses it; the reference semantics let P0 win on X0.H0
    // and never write X1.H0, so X1 only spans 0..4 whatever P1 is.
    let spec = EncodingSpec {
        rs_lengths: vec![],
        hs_lengthss: vec![vec![2, 2], vec![4, 4]],
        ps_to_rhss_major: vec![vec![1], vec![1]],
        ps_to_rhss_minor: vec![vec![0], vec![0]],
        ys_to_rhs_major: vec![1, 2],
        ys_to_rhs_minor: vec![1, 1],
    };
    assert!(TileDistribution::from_spec(spec.clone()).is_err());
    let (a, _) = TileDistribution::reference_unchecked(&spec).unwrap();
    for p1 in 0..2 {
        assert_eq!(a.calculate_bottom_index(&[1, p1, 1, 3]).unwrap(), vec![3, 3]);
    }
}

#[test]
fn reference_lists_of_unequal_lengths_are_refused() {
    // found by fuzzing `show`'s JSON input: two P majors but one P minor list made the
    // reference adaptor one P short of what the ownership map walked (a rank assertion)
    let spec = EncodingSpec {
        rs_lengths: vec![4],
        hs_lengthss: vec![vec![4], vec![4, 4]],
        ps_to_rhss_major: vec![vec![0], vec![1, 2]],
        ps_to_rhss_minor: vec![vec![0, 0]],
        ys_to_rhs_major: vec![2],
        ys_to_rhs_minor: vec![1],
    };
    let e = TileDistribution::reference_unchecked(&spec).unwrap_err().to_string();
    assert!(e.contains("ps_to_rhss_minor (entries) = 1 is invalid: must have 2 entries"), "{e}");
    assert!(render::Ownership::of_reference(&spec).is_err());
    let mut inner = spec.clone();
    inner.ps_to_rhss_minor = vec![vec![0], vec![0]];
    let e = TileDistribution::reference_unchecked(&inner).unwrap_err().to_string();
    assert!(e.contains("ps_to_rhss_minor[1] (entries) = 1 is invalid: must have 2 entries"), "{e}");
    let mut ys = spec;
    ys.ps_to_rhss_minor = vec![vec![0], vec![0, 1]];
    ys.ys_to_rhs_minor = vec![];
    let e = TileDistribution::reference_unchecked(&ys).unwrap_err().to_string();
    assert!(e.contains("ys_to_rhs_minor (entries) = 0 is invalid: must have 1 entries"), "{e}");
}

#[test]
fn indices_of_the_wrong_rank_are_refused() {
    let d = doc_rowmajor();
    let e = d.calculate_x(&[1i64], &[0, 0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "tile distribution: P/Y index rank = (1, 2) is invalid: the distribution has 2 P dims and 2 Y dims"
    );
    assert!(d.calculate_x(&[1i64, 1], &[0]).is_err());
    assert!(d.calculate_index(&[1i64]).is_err());
    assert!(d.calculate_rs_index_from_ps_index(&[1i64, 2, 3]).is_err());
    assert!(d.ys_to_d(&[1i64]).is_err());
    assert_eq!(
        d.calculate_x(&[1i64, 3], &[1, 2]).unwrap(),
        d.calculate_x_unchecked(&[1i64, 3], &[1, 2])
    );
    assert_eq!(d.ys_to_d(&[1i64, 2]).unwrap(), d.ys_to_d_unchecked(&[1i64, 2]));
}

/// Lengths to try: mostly small, sometimes zero, negative, or huge (so that tiles are either
/// small enough to evaluate quickly or far past every cap).
fn wild_length() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => 1i64..5,
        1 => Just(0i64),
        1 => -3i64..0,
        1 => Just(3_000_000_000i64),
        1 => Just(1i64 << 32),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Well-formed assignments of arbitrary lengths: building, explaining, the traits and the
    /// (capped) ownership map never panic; what builds evaluates its first and last thread.
    #[test]
    fn distribution_construction_never_panics(
        hs in prop::collection::vec(prop::collection::vec(wild_length(), 1..=3), 1..=3),
        rs in prop::collection::vec(wild_length(), 0..=2),
        seed in any::<u64>(),
    ) {
        let spec = assign(hs, rs, seed);
        let _ = TileDistribution::reference_unchecked(&spec);
        let _ = render::explain_reference(&spec);
        if let Ok(d) = TileDistribution::from_spec(spec) {
            let (np, ny) = (d.encoding().ndim_p(), d.encoding().ndim_y());
            let last_p: Vec<i64> = d.p_lengths().iter().map(|l| l - 1).collect();
            let last_y: Vec<i64> = d.y_lengths().iter().map(|l| l - 1).collect();
            prop_assert!(d.calculate_x(&vec![0i64; np], &vec![0; ny]).is_ok());
            prop_assert!(d.calculate_x(&last_p, &last_y).is_ok());
            prop_assert!(d.ys_to_d(&last_y).unwrap() == d.thread_buffer_size() - 1);
            let _ = render::explain(&d);
            let _ = render::vector_access(&d, render::Dtype::Fp16);
            let _ = render::ownership_map_of(&d);
        }
    }

    /// Arbitrary (mostly ill-formed) specs: validation and the reference semantics refuse them
    /// with errors, never a panic.
    #[test]
    fn arbitrary_specs_never_panic(
        hs in prop::collection::vec(prop::collection::vec(wild_length(), 0..=3), 0..=3),
        rs in prop::collection::vec(wild_length(), 0..=2),
        pma in prop::collection::vec(prop::collection::vec(-1i64..4, 0..=3), 0..=3),
        pmi in prop::collection::vec(prop::collection::vec(-1i64..4, 0..=3), 0..=3),
        yma in prop::collection::vec(-1i64..4, 0..=3),
        ymi in prop::collection::vec(-1i64..4, 0..=3),
    ) {
        let spec = EncodingSpec {
            rs_lengths: rs, hs_lengthss: hs, ps_to_rhss_major: pma, ps_to_rhss_minor: pmi,
            ys_to_rhs_major: yma, ys_to_rhs_minor: ymi,
        };
        let _ = TileDistribution::from_spec(spec.clone());
        let _ = TileDistribution::reference_unchecked(&spec);
        let _ = render::explain_reference(&spec);
        let _ = tilekit_tile::encoding::embed_spec(&spec, &spec);
    }
}
