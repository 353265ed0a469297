//! Distributed tensors: ownership (every X element owned exactly Π R times), indexing by Y,
//! distributed index and buffer offset, y-sliced data, typed errors.

use crate::common;

use common::doc_rowmajor;

use std::collections::HashMap;

use common::{encoding_strategy, published, row_major};
use proptest::prelude::*;
use tilekit_tile::{StaticDistributedTensor, TileDistribution};

/// Counts, over every thread and every Y, how often each X element is owned; checks every
/// element of the tile is owned exactly Π R times and nothing outside it is.
fn check_ownership(dist: &TileDistribution) -> Result<(), String> {
    let t = StaticDistributedTensor::new(dist, 0u8);
    let r: i64 = dist.encoding().spec().rs_lengths.iter().product();
    let mut owners: HashMap<Vec<i64>, i64> = HashMap::new();
    for k in 0..t.num_threads() {
        let p = t.thread_p(k).map_err(|e| e.to_string())?;
        for y in row_major(&dist.y_lengths()) {
            let x = t.x_of(&p, &y).map_err(|e| e.to_string())?;
            *owners.entry(x).or_default() += 1;
        }
    }
    let all = row_major(&dist.x_lengths());
    if owners.len() != all.len() {
        return Err(format!("{} distinct X owned, the tile has {}", owners.len(), all.len()));
    }
    for x in all {
        let n = owners.get(&x).copied().unwrap_or(0);
        if n != r {
            return Err(format!("X {x:?} is owned {n} times, expected Π R = {r}"));
        }
    }
    Ok(())
}

#[test]
fn every_published_distribution_owns_each_element_prod_r_times() {
    for (name, d) in published() {
        check_ownership(&d).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_encodings_own_each_element_prod_r_times(spec in encoding_strategy()) {
        let d = TileDistribution::from_spec(spec.clone())
            .map_err(|e| TestCaseError::fail(format!("{spec:?}: {e}")))?;
        check_ownership(&d).map_err(|e| TestCaseError::fail(format!("{spec:?}: {e}")))?;
    }

    #[test]
    fn y_sliced_get_set_round_trip(spec in encoding_strategy(), seed in any::<u64>()) {
        let d = TileDistribution::from_spec(spec).unwrap();
        let mut t = StaticDistributedTensor::new(&d, 0i64);
        let p = t.thread_p(t.num_threads() - 1).unwrap();
        let mut rng = common::Rng::new(seed);
        let ylens = d.y_lengths();
        let origins: Vec<i64> = ylens.iter().map(|&l| rng.below(l as usize) as i64).collect();
        let lengths: Vec<i64> = ylens
            .iter()
            .zip(&origins)
            .map(|(&l, &o)| 1 + rng.below((l - o) as usize) as i64)
            .collect();
        let n: i64 = lengths.iter().product();
        let data: Vec<i64> = (1..=n).collect();
        t.set_y_sliced_thread_data(&p, &origins, &lengths, &data).unwrap();
        prop_assert_eq!(t.get_y_sliced_thread_data(&p, &origins, &lengths).unwrap(), data);
        // the box is row-major over Y: its first element is at the origin, its last at the far corner
        prop_assert_eq!(t.get(&p, &origins).unwrap(), 1);
        let far: Vec<i64> = origins.iter().zip(&lengths).map(|(o, l)| o + l - 1).collect();
        prop_assert_eq!(t.get(&p, &far).unwrap(), n);
        // everything else is untouched
        let touched: i64 = t.thread(&p).unwrap().iter().filter(|&&v| v != 0).count() as i64;
        prop_assert_eq!(touched, n);
    }
}

#[test]
fn y_distributed_and_offset_indexing_agree() {
    let d = doc_rowmajor();
    let mut t = StaticDistributedTensor::new(&d, 0i32);
    for k in 0..t.num_threads() {
        let p = t.thread_p(k).unwrap();
        assert_eq!(t.thread_index(&p).unwrap(), k);
        for y in row_major(&d.y_lengths()) {
            let v = (k * 100) as i32 + d.ys_to_d(&y).unwrap() as i32;
            t.set(&p, &y, v).unwrap();
        }
    }
    for k in 0..t.num_threads() {
        let p = t.thread_p(k).unwrap();
        for dd in 0..t.thread_buffer_size() {
            let y = d.d_to_ys(dd as i64);
            let dist_idx = vec![vec![y[0]], vec![y[1]]];
            assert_eq!(t.get_d(&p, dd).unwrap(), (k * 100 + dd) as i32);
            assert_eq!(t.get_distributed(&p, &dist_idx).unwrap(), (k * 100 + dd) as i32);
        }
    }
}

#[test]
fn bad_indices_are_typed_errors() {
    let d = doc_rowmajor();
    let mut t = StaticDistributedTensor::new(&d, 0i32);
    let msg = |e: tilekit_tile::TileError| e.to_string();
    assert_eq!(
        msg(t.get(&[0], &[0, 0]).unwrap_err()),
        "static distributed tensor: P rank = 1 is invalid: P indices have 2 entries (lengths [2, 4])"
    );
    assert_eq!(
        msg(t.set(&[0, -1], &[0, 0], 1).unwrap_err()),
        "static distributed tensor: P[1] = -1 is invalid: must be in 0..4 (P lengths [2, 4])"
    );
    assert!(t.x_of(&[0, 0], &[2, 0]).is_err());
    assert!(t.set_d(&[0, 0], 99, 1).is_err());
    assert!(t.get_distributed(&[0, 0], &[vec![0]]).is_err());
    assert!(t.get_y_sliced_thread_data(&[0, 0], &[0], &[1]).is_err());
    assert!(t.get_y_sliced_thread_data(&[0, 0], &[0, 0], &[0, 1]).is_err());
    assert!(t.thread_p(8).is_err());
}
