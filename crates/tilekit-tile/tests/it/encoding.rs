//! Encodings: every validation rule with its named error, the detail tables on hand-worked
//! cases, and the embed/reduce helpers against the reference's block-GEMM encodings.

use tilekit_tile::encoding::{embed_spec, EncodingSpec, Rh, TileDistributionEncoding};
use tilekit_tile::error::EncodingRule;
use tilekit_tile::TileError;

fn spec(
    rs: &[i64],
    hs: &[&[i64]],
    pma: &[&[i64]],
    pmi: &[&[i64]],
    yma: &[i64],
    ymi: &[i64],
) -> EncodingSpec {
    EncodingSpec {
        rs_lengths: rs.to_vec(),
        hs_lengthss: hs.iter().map(|h| h.to_vec()).collect(),
        ps_to_rhss_major: pma.iter().map(|h| h.to_vec()).collect(),
        ps_to_rhss_minor: pmi.iter().map(|h| h.to_vec()).collect(),
        ys_to_rhs_major: yma.to_vec(),
        ys_to_rhs_minor: ymi.to_vec(),
    }
}

fn rule(s: EncodingSpec) -> (EncodingRule, String) {
    match TileDistributionEncoding::new(s).unwrap_err() {
        e @ TileError::Encoding { rule, .. } => (rule, e.to_string()),
        e => panic!("not an encoding error: {e}"),
    }
}

#[test]
fn every_rule_is_enforced_and_named() {
    use EncodingRule as R;
    let (r, m) = rule(spec(&[], &[], &[&[1]], &[&[0]], &[1], &[0]));
    assert_eq!(r, R::NotEmpty);
    assert!(m.contains("hs_lengthss = [] is invalid"), "{m}");
    let (r, m) = rule(spec(&[], &[&[2, 0]], &[&[1]], &[&[0]], &[1], &[1]));
    assert_eq!((r, m.contains("hs_lengthss[0][1] = 0")), (R::PositiveLength, true), "{m}");
    let (r, _) = rule(spec(&[], &[&[2, 2]], &[&[1]], &[&[0], &[1]], &[1], &[1]));
    assert_eq!(r, R::PairedLists);
    let (r, m) = rule(spec(&[], &[&[2, 2]], &[&[1]], &[&[0]], &[1], &[2]));
    assert_eq!(r, R::MinorInRange);
    assert!(m.contains("ys_to_rhs_minor[0] = 2 is invalid: major 1 is X0, which has 2 components, so minors are 0..2"), "{m}");
    let (r, m) = rule(spec(&[], &[&[2, 2]], &[&[1]], &[&[0]], &[-1], &[1]));
    assert_eq!(r, R::MajorInRange, "{m}");
    let (r, _) = rule(spec(&[2], &[&[4], &[4]], &[&[1]], &[&[0]], &[0, 2], &[0, 0]));
    assert_eq!(r, R::NoYOnR);
    let (r, m) =
        rule(spec(&[2], &[&[4], &[4]], &[&[0, 1], &[0, 2]], &[&[0, 0], &[0, 0]], &[2], &[0]));
    assert_eq!(r, R::RUsedAtMostOnce, "{m}");
    // the documents' RowMajorDist with both Ps on X0.H0 (conformance edge_doc_rowmajor_dup_p)
    let (r, m) =
        rule(spec(&[], &[&[2, 2], &[4, 4]], &[&[1], &[1]], &[&[0], &[0]], &[1, 2], &[1, 1]));
    assert_eq!(r, R::HUsedOnce);
    assert!(m.starts_with("tile distribution encoding: X0.H0 = [\"P0 (ps_to_rhss[0][0])\", \"P1 (ps_to_rhss[1][0])\"]"), "{m}");
    // an unused H component
    let (r, m) = rule(spec(&[], &[&[2, 2], &[4]], &[&[1]], &[&[0]], &[2], &[0]));
    assert_eq!(r, R::HUsedOnce);
    assert!(m.contains("X0.H1 = 2 is invalid: every H component must be used"), "{m}");
}

#[test]
fn detail_tables_by_hand() {
    // r_two_dims: P0 = (R0, X0.H0), P1 = (R1, X1.H0), Y = (X0.H1, X1.H1)
    let e = TileDistributionEncoding::new(spec(
        &[2, 2],
        &[&[4, 2], &[4, 2]],
        &[&[0, 1], &[0, 2]],
        &[&[0, 0], &[1, 0]],
        &[1, 2],
        &[1, 1],
    ))
    .unwrap();
    assert_eq!(e.p_lengths(), vec![8, 8]);
    assert_eq!(e.does_p_own_r(), vec![vec![true, false], vec![false, true]]);
    assert_eq!(e.ps_over_rs_derivative(), vec![vec![4, 0], vec![0, 4]]);
    assert_eq!(e.distributed_spans(), vec![vec![2], vec![2]]);
    assert_eq!(e.y_of(Rh { major: 2, minor: 1 }), Some(1));
    // Y order differs from H order within X0: spans list H order
    let e =
        TileDistributionEncoding::new(spec(&[], &[&[2, 3, 4]], &[&[1]], &[&[1]], &[1, 1], &[2, 0]))
            .unwrap();
    assert_eq!(e.distributed_spans(), vec![vec![2, 4]]);
    assert_eq!(e.ys_to_span_minor(), vec![1, 0]);
}

/// The reference's block GEMM C layout: outer (2×2 iterations × 2×2 warps) embedded with the
/// MFMA 32×32 C warp layout gives the published `block_gemm_C_embed_2x2warps` encoding.
fn block_gemm_c() -> EncodingSpec {
    let outer = spec(&[], &[&[2, 2], &[2, 2]], &[&[1, 2], &[]], &[&[1, 1], &[]], &[1, 2], &[0, 0]);
    let inner = spec(&[], &[&[4, 2, 4], &[32]], &[&[], &[1, 2]], &[&[], &[1, 0]], &[1, 1], &[0, 2]);
    embed_spec(&outer, &inner).unwrap()
}

#[test]
fn embed_reproduces_block_gemm_c() {
    let s = block_gemm_c();
    assert_eq!(
        s,
        spec(
            &[],
            &[&[2, 2, 4, 2, 4], &[2, 2, 32]],
            &[&[1, 2], &[1, 2]],
            &[&[1, 1], &[3, 2]],
            &[1, 2, 1, 1],
            &[0, 0, 2, 4]
        )
    );
    assert!(TileDistributionEncoding::new(s).is_ok());
}

#[test]
fn reduce_over_x1_turns_p_components_into_rs() {
    let e = TileDistributionEncoding::new(block_gemm_c()).unwrap();
    let r = e.reduce(&[1]).unwrap();
    assert_eq!(
        r.spec(),
        &spec(
            &[2, 32],
            &[&[2, 2, 4, 2, 4]],
            &[&[1, 0], &[1, 0]],
            &[&[1, 0], &[3, 1]],
            &[1, 1, 1],
            &[0, 2, 4]
        )
    );
    assert_eq!(r.p_lengths(), vec![4, 64]);
    assert!(e
        .reduce(&[2])
        .unwrap_err()
        .to_string()
        .contains("xs[0] = 2 is invalid: X dims are 0..2"));
}

#[test]
fn sizes_past_i64_break_the_fits_rule() {
    let rule = |s: EncodingSpec| match TileDistributionEncoding::new(s).unwrap_err() {
        e @ TileError::Encoding { rule, .. } => (rule, e.to_string()),
        other => panic!("expected an encoding error, got {other:?}"),
    };
    // one X whose H lengths multiply past i64
    let (r, msg) =
        rule(spec(&[], &[&[1 << 32, 1 << 32], &[2]], &[&[1]], &[&[0]], &[1, 2], &[1, 0]));
    assert_eq!(r, EncodingRule::FitsInI64);
    assert_eq!(
        msg,
        "tile distribution encoding: hs_lengthss[0] = [4294967296, 4294967296] is invalid: the \
         length of X0 (the product of its H lengths) overflows i64"
    );
    // X lengths that fit, an element count that does not
    let (r, msg) = rule(spec(&[], &[&[1 << 32], &[1 << 32]], &[&[1]], &[&[0]], &[2], &[0]));
    assert_eq!(r, EncodingRule::FitsInI64);
    assert!(
        msg.contains("x_lengths = [4294967296, 4294967296] is invalid: the tile's element count")
    );
    // replicas: Π R · Π X
    let (r, msg) =
        rule(spec(&[1 << 40], &[&[1 << 12], &[1 << 12]], &[&[0, 1]], &[&[0, 0]], &[2], &[0]));
    assert_eq!(r, EncodingRule::FitsInI64);
    assert!(msg.contains(
        "rs_lengths = [1099511627776] is invalid: the number of (element, replica) pairs"
    ));
    // 3000 X dims of length 2 (the thread count wrapped to 0 before)
    let hs: Vec<&[i64]> = vec![&[2]; 3000];
    let ys: Vec<i64> = (2..=3000).collect();
    let (r, _) = rule(spec(&[], &hs, &[&[1]], &[&[0]], &ys, &vec![0; 2999]));
    assert_eq!(r, EncodingRule::FitsInI64);
    // the largest that fit: 2^31 threads × 2^31 values
    let e = TileDistributionEncoding::new(spec(
        &[],
        &[&[1 << 31], &[1 << 31]],
        &[&[1]],
        &[&[0]],
        &[2],
        &[0],
    ))
    .unwrap();
    assert_eq!((e.p_lengths(), e.ys_lengths()), (vec![1 << 31], vec![1 << 31]));
    assert_eq!(e.rh_length(Rh { major: 2, minor: 0 }), Some(1 << 31));
    assert_eq!(e.rh_length(Rh { major: 2, minor: 1 }), None);
    assert_eq!(e.rh_length(Rh { major: 3, minor: 0 }), None);
}

#[test]
fn embed_spec_of_unpaired_or_absurd_specs_does_not_panic() {
    let outer = spec(&[], &[&[2], &[2]], &[&[1], &[2]], &[&[0]], &[], &[]); // one minor list short
    let inner =
        spec(&[], &[&[4], &[4]], &[&[1], &[2]], &[&[0], &[i64::MAX]], &[1, 2], &[0, i64::MAX]);
    let e = embed_spec(&outer, &inner).unwrap();
    assert_eq!(e.ps_to_rhss_minor[1], vec![i64::MAX]); // saturated, refused when validated
    assert!(TileDistributionEncoding::new(e).is_err());
}
