//! Tile windows: load-then-store is the identity (published and random distributions, exact and
//! padded non-multiple views, windows moved over every tile); moving a window equals making a
//! fresh one; the generic walk equals the host walk; the access sequence follows the traits.

use crate::common;

use common::{encoding_strategy, packed_strides, published, row_major, Rng};
use proptest::prelude::*;
use tilekit_tile::traits::AccessCurve;
use tilekit_tile::view::{make_naive_tensor_view, pad_tensor_view, MemoryOp};
use tilekit_tile::{TileDistribution, TileWindow};

const POISON: f32 = -7777.0;

fn random_data(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| 1.0 + (rng.next() % 100_000) as f32 / 7.0).collect()
}

/// Copies a tensor of `lengths` (padded to multiples of the tile) tile by tile through windows
/// that are moved across the tensor; returns (source, destination).
fn copy_through_windows(
    dist: &TileDistribution,
    lengths: &[i64],
    seed: u64,
    curve: AccessCurve,
) -> (Vec<f32>, Vec<f32>) {
    let tile = dist.x_lengths();
    let strides = packed_strides(lengths);
    let n: i64 = lengths.iter().product();
    let src = random_data(n as usize, seed);
    let mut dst = vec![POISON; n as usize];
    let pads = vec![true; lengths.len()];
    let zero = vec![0i64; lengths.len()];
    {
        let sv = pad_tensor_view(
            make_naive_tensor_view(&src[..], lengths, &strides).unwrap(),
            &tile,
            &pads,
        )
        .unwrap();
        let dv = pad_tensor_view(
            make_naive_tensor_view(&mut dst[..], lengths, &strides).unwrap(),
            &tile,
            &pads,
        )
        .unwrap();
        let mut sw = TileWindow::with_curve(sv, &tile, &zero, dist, curve).unwrap();
        let mut dw = TileWindow::with_curve(dv, &tile, &zero, dist, curve).unwrap();
        let counts: Vec<i64> = lengths.iter().zip(&tile).map(|(l, t)| (l + t - 1) / t).collect();
        let mut at = zero.clone();
        for tiles in row_major(&counts) {
            let target: Vec<i64> = tiles.iter().zip(&tile).map(|(i, t)| i * t).collect();
            let step: Vec<i64> = target.iter().zip(&at).map(|(a, b)| a - b).collect();
            sw.move_window(&step).unwrap();
            dw.move_window(&step).unwrap();
            at = target;
            let t = sw.load().unwrap();
            dw.store(&t).unwrap();
        }
    }
    (src, dst)
}

#[test]
fn load_then_store_is_the_identity_for_every_published_distribution() {
    for (name, d) in published() {
        let x = d.x_lengths();
        // exactly one tile, then a non-multiple tensor (pads on every dim, several tiles)
        let odd: Vec<i64> = x.iter().map(|&l| l + l / 2 + 1).collect();
        for (k, lengths) in [x.clone(), odd].iter().enumerate() {
            for curve in [AccessCurve::Linear, AccessCurve::Snake] {
                let (src, dst) = copy_through_windows(&d, lengths, 17 + k as u64, curve);
                assert!(src.iter().all(|&v| v != 0.0));
                assert_eq!(src, dst, "{name}, lengths {lengths:?}, {curve:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn load_then_store_is_the_identity_on_random_padded_views(
        which in any::<prop::sample::Index>(),
        factors in prop::collection::vec(1i64..=7, 3),
        seed in any::<u64>(),
    ) {
        let all = published();
        let (name, d) = &all[which.index(all.len())];
        // lengths between 1 and 1.75 tiles per dim: rarely multiples
        let lengths: Vec<i64> = d.x_lengths().iter().zip(&factors).map(|(&l, &f)| (l * f / 4).max(1)).collect();
        let (src, dst) = copy_through_windows(d, &lengths, seed, AccessCurve::Linear);
        prop_assert!(src == dst, "{}: lengths {:?}", name, lengths);
    }

    #[test]
    fn load_then_store_is_the_identity_for_random_encodings(spec in encoding_strategy(), seed in any::<u64>()) {
        let d = TileDistribution::from_spec(spec.clone()).unwrap();
        let lengths: Vec<i64> = d.x_lengths().iter().map(|&l| l + (seed % 3) as i64).collect();
        let (src, dst) = copy_through_windows(&d, &lengths, seed, AccessCurve::Linear);
        prop_assert!(src == dst, "{:?}: lengths {:?}", spec, lengths);
    }

    #[test]
    fn moving_a_window_equals_a_fresh_one(
        which in any::<prop::sample::Index>(),
        extra in prop::collection::vec(0i64..=9, 3),
        origin in prop::collection::vec(0i64..=12, 3),
        step in prop::collection::vec(-6i64..=6, 3),
        snake in any::<bool>(),
    ) {
        let all = published();
        let (name, d) = &all[which.index(all.len())];
        let tile = d.x_lengths();
        let n = tile.len();
        let lengths: Vec<i64> = tile.iter().zip(&extra).map(|(t, e)| t + e).collect();
        let data = vec![1f32; lengths.iter().product::<i64>() as usize];
        let curve = if snake { AccessCurve::Snake } else { AccessCurve::Linear };
        let make = |o: &[i64]| {
            let v = pad_tensor_view(
                make_naive_tensor_view(&data[..], &lengths, &packed_strides(&lengths)).unwrap(),
                &tile,
                &vec![true; n],
            )
            .unwrap();
            TileWindow::with_curve(v, &tile, o, d, curve).unwrap()
        };
        let o0 = &origin[..n];
        let o1: Vec<i64> = o0.iter().zip(&step).map(|(a, b)| a + b).collect();
        let mut moved = make(o0);
        moved.move_window(&step[..n]).unwrap();
        let fresh = make(&o1);
        prop_assert_eq!(moved.origin(), fresh.origin());
        for p in fresh.thread_ps() {
            let (a, b) = (moved.thread_walk(&p).unwrap(), fresh.thread_walk(&p).unwrap());
            prop_assert!(a == b, "{}: p {:?}: moved {:?} fresh {:?}", name, p, a, b);
            // the generic walk (fresh coordinates in the index domain) agrees too
            let sym = fresh.walk_symbolic(&o1, &p).unwrap();
            prop_assert!(sym == b, "{}: p {:?}: generic walk differs", name, p);
        }
    }
}

#[test]
fn each_access_reads_the_traits_d_elems_at_origin_plus_x() {
    // The walk and the load agree with the distribution: access i of thread p reads the vector
    // at origin + X(p, y_start), and element j lands in d_elems[j].
    for (name, d) in published() {
        let tile = d.x_lengths();
        let lengths: Vec<i64> = tile.iter().map(|t| t + 3).collect();
        let data = random_data(lengths.iter().product::<i64>() as usize, 5);
        let origin: Vec<i64> = vec![1; tile.len()];
        let view = make_naive_tensor_view(&data[..], &lengths, &packed_strides(&lengths)).unwrap();
        let w = TileWindow::new(view, &tile, &origin, &d).unwrap();
        let t = w.load().unwrap();
        let accesses = w.traits().accesses();
        for p in w.thread_ps() {
            for (a, wa) in accesses.iter().zip(w.thread_walk(&p).unwrap()) {
                let x = d.calculate_x(&p, &a.y_start).unwrap();
                assert_eq!(wa.x_in_window, x, "{name}");
                let top: Vec<i64> = origin.iter().zip(&x).map(|(o, x)| o + x).collect();
                assert_eq!(wa.bottom_index, top, "{name}");
                assert!(wa.valid);
                for (j, &dd) in a.d_elems.iter().enumerate() {
                    let v = t.get_d(&p, dd as usize).unwrap();
                    assert_eq!(v, data[wa.offset as usize + j], "{name} p {p:?} access {}", a.i);
                }
            }
        }
    }
}

#[test]
fn update_adds_and_maxes_and_checks_the_distribution() {
    let all = published();
    let (_, d) = all.iter().find(|(n, _)| n == "doc_rowmajor_4x16_fixed").unwrap();
    let (_, other) = all.iter().find(|(n, _)| n == "doc_6x8_fixed").unwrap();
    let tile = d.x_lengths();
    let src = random_data(64, 9);
    let t = TileWindow::new(
        make_naive_tensor_view(&src[..], &tile, &[16, 1]).unwrap(),
        &tile,
        &[0, 0],
        d,
    )
    .unwrap()
    .load()
    .unwrap();
    let mut dst = vec![1f32; 64];
    let mut w = TileWindow::new(
        make_naive_tensor_view(&mut dst[..], &tile, &[16, 1]).unwrap(),
        &tile,
        &[0, 0],
        d,
    )
    .unwrap();
    w.update(&t, MemoryOp::Add).unwrap();
    w.update(&t, MemoryOp::Max).unwrap();
    let wrong = tilekit_tile::StaticDistributedTensor::new(other, 0f32);
    assert!(w.store(&wrong).unwrap_err().to_string().contains("must be the window's distribution"));
    assert_eq!(dst, src.iter().map(|v| v + 1.0).collect::<Vec<_>>());
}

#[test]
fn windows_of_more_threads_than_a_block_are_refused() {
    use tilekit_tile::encoding_text::parse_encoding;
    use tilekit_tile::window::MAX_WINDOW_THREADS;
    let d =
        TileDistribution::from_spec(parse_encoding("H[[131072],[4]] P[[X0.0]] Y[X1.0]").unwrap())
            .unwrap();
    let data = [0f32; 4];
    // a broadcast view (stride 0) of the whole tile: tiny data, 2^17 threads
    let view = make_naive_tensor_view(&data[..], &[131072, 4], &[0, 1]).unwrap();
    let e = TileWindow::new(view, &[131072, 4], &[0, 0], &d).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "tile window: distribution threads = 131072 is invalid: a window models at most \
             {MAX_WINDOW_THREADS} threads (one block)"
        )
    );
}
