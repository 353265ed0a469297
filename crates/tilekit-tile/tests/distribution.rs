//! Distributions: thread origins and element owners against hand computation, slicing, and the
//! reference semantics of an ill-formed encoding.

mod common;

use common::doc_rowmajor;

use tilekit_tile::encoding::EncodingSpec;
use tilekit_tile::TileDistribution;

#[test]
fn owners_by_brute_force() {
    // X0 = 2·p0 + y0, X1 = 4·p1 + y1: compare every (p, y) with the formula
    let d = doc_rowmajor();
    for p0 in 0..2 {
        for p1 in 0..4 {
            for y0 in 0..2 {
                for y1 in 0..4 {
                    assert_eq!(d.calculate_x(&[p0, p1], &[y0, y1]), vec![2 * p0 + y0, 4 * p1 + y1]);
                }
            }
        }
    }
    assert_eq!(d.num_threads(), 8);
    assert_eq!(
        (0..8).map(|k| d.d_to_ys(k)).map(|y| d.ys_to_d(&y)).collect::<Vec<i64>>(),
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
        let x0 = d.calculate_x(&[0, lane], &[3]);
        for warp in 1..4 {
            assert_eq!(d.calculate_x(&[warp, lane], &[3]), x0);
            assert_eq!(d.calculate_rs_index_from_ps_index(&[warp, lane]), vec![warp]);
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
                let sliced = s.calculate_x(&p, &[y0, y1]);
                let orig = d.calculate_x(&p, &[y0 + origin[0], y1 + origin[1]]);
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
        assert_eq!(a.calculate_bottom_index(&[1, p1, 1, 3]), vec![3, 3]);
    }
}
