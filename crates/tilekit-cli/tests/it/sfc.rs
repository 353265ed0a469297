//! `tilekit sfc` as a library: the streamed JSON equals the collected one, the streamed
//! statistics equal the collected ones, and curves past the caps are refused by name.

use tilekit_cli::sfc::{locality, to_json, write_json, STATS_MAX_ACCESSES};
use tilekit_cli::CliError;
use tilekit_layout::SpaceFillingCurve;
use tilekit_tile::analysis::cache;

#[test]
fn streamed_json_equals_the_collected_form() {
    let sfc = SpaceFillingCurve::new(vec![5, 7, 3], vec![2, 0, 1], vec![2, 1, 3], true).unwrap();
    let mut out = Vec::new();
    write_json(&sfc, None, &mut out).unwrap();
    let streamed: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(streamed, serde_json::to_value(to_json(&sfc)).unwrap());
    // with statistics: the same plus a `locality` field
    let l = locality(&sfc, 4).unwrap();
    let mut out = Vec::new();
    write_json(&sfc, Some(&l), &mut out).unwrap();
    let mut with: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(with["locality"], l.to_json());
    with.as_object_mut().unwrap().remove("locality");
    assert_eq!(with, streamed);
}

#[test]
fn streamed_statistics_equal_the_collected_ones() {
    let sfc = SpaceFillingCurve::new(vec![16, 12], vec![1, 0], vec![1, 4], true).unwrap();
    let points: Vec<Vec<i64>> = sfc.accesses().map(|a| a.index).collect();
    let offsets: Vec<i64> = points.iter().map(|p| p[0] * 12 + p[1]).collect();
    let l = locality(&sfc, 2).unwrap();
    assert_eq!(l.memory, cache::locality(&offsets, 2, 4).unwrap());
    assert_eq!(l.index_space, cache::manhattan_steps(&points));
}

#[test]
fn curves_past_the_stats_cap_are_refused_by_name() {
    let sfc = SpaceFillingCurve::new(vec![i64::MAX], vec![0], vec![1], false).unwrap();
    match locality(&sfc, 4) {
        Err(CliError::BadArgument { flag, rule, .. }) => {
            assert_eq!(flag, "--stats");
            assert!(rule.contains("9223372036854775807 accesses"), "{rule}");
        }
        other => panic!("expected a --stats error, got {other:?}"),
    }
    let edge =
        SpaceFillingCurve::new(vec![STATS_MAX_ACCESSES / 4, 4], vec![0, 1], vec![1, 1], false)
            .unwrap();
    assert_eq!(edge.num_access(), STATS_MAX_ACCESSES);
    let big =
        SpaceFillingCurve::new(vec![STATS_MAX_ACCESSES + 1], vec![0], vec![1], false).unwrap();
    assert!(locality(&big, 4).is_err());
}
