//! Cache lines, sectors and locality: hand-computed requests, the design documents' cache and
//! locality comparisons, and brute-force cross-checks.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use tilekit_layout::morton;
use tilekit_tile::analysis::cache::{
    self, footprint, locality, manhattan_steps, traversal_footprint, Footprint, LocalityStats,
    ManhattanSteps,
};
use tilekit_tile::analysis::WarpAccess;

fn fp32(offset: impl Fn(usize) -> Option<i64>) -> WarpAccess {
    WarpAccess::from_offsets(4, 1, offset).unwrap()
}

/// (lines, sectors, distinct bytes, efficiency)
fn fp(f: Footprint) -> (u64, u64, u64, f64) {
    (f.lines, f.sectors, f.bytes_distinct, f.efficiency())
}

// ---------------------------------------------------------------------------------------------
// One warp request
// ---------------------------------------------------------------------------------------------

#[test]
fn single_requests() {
    // 32 × 4 B contiguous from 0: bytes 0..128 → line 0, sectors 0..4.
    assert_eq!(fp(footprint(&fp32(|l| Some(l as i64)))), (1, 4, 128, 1.0));
    // Shifted by one float: bytes 4..132 → lines 0,1; sectors 0..=4 → 128/160.
    assert_eq!(fp(footprint(&fp32(|l| Some(l as i64 + 1)))), (2, 5, 128, 0.8));
    // Stride 2: bytes 0, 8, …, 248 → 2 lines, 8 sectors, 128/256.
    assert_eq!(fp(footprint(&fp32(|l| Some(2 * l as i64)))), (2, 8, 128, 0.5));
    // Column of a row-major 32×32 fp32 matrix: one sector in each of 32 lines, 4 of 32 bytes used.
    assert_eq!(fp(footprint(&fp32(|l| Some(32 * l as i64)))), (32, 32, 128, 0.125));
    // Broadcast: 32 lanes, one float.
    let b = footprint(&fp32(|_| Some(9)));
    assert_eq!(fp(b), (1, 1, 4, 0.125));
    assert_eq!(b.bytes_requested, 128);
    // fp32 × 4 contiguous: 512 bytes → 4 lines, 16 sectors.
    let v4 = WarpAccess::from_offsets(4, 4, |l| Some(4 * l as i64)).unwrap();
    assert_eq!(fp(footprint(&v4)), (4, 16, 512, 1.0));
    // fp16 contiguous: 64 bytes → 1 line, 2 sectors.
    let h = WarpAccess::from_offsets(2, 1, |l| Some(l as i64)).unwrap();
    assert_eq!(fp(footprint(&h)), (1, 2, 64, 1.0));
    // Nothing active: nothing moved.
    let none = footprint(&WarpAccess::new([None; 32], 4).unwrap());
    assert_eq!(fp(none), (0, 0, 0, 1.0));
}

#[test]
fn morton_stored_32x32_tile() {
    // fp32 tile stored in Morton order (offset = morton(i, j)).
    // Row i = 0: offsets have x bits on even positions: 0,1,4,5,16,17,20,21,64,… A sector holds
    // 8 floats (codes 8s..8s+7) of which the row uses 4 → 8 sectors; a line holds codes
    // 32L..32L+31, of which the row uses 8 → 4 lines.
    let row = footprint(&fp32(|l| Some(morton::encode2(0, l as u32) as i64)));
    assert_eq!(fp(row), (4, 8, 128, 0.5));
    // Column j = 0: y bits on odd positions: 0,2,8,10,32,… 2 floats per sector → 16 sectors,
    // 4 per line → 8 lines. (Row-major storage: 1 line / 32 lines.)
    let col = footprint(&fp32(|l| Some(morton::encode2(l as u32, 0) as i64)));
    assert_eq!(fp(col), (8, 16, 128, 0.25));
}

#[test]
fn traversals_of_a_32x32_fp32_tile() {
    // Row by row (lane = column): 32 requests of 1 line / 4 sectors each.
    let by_rows: Vec<WarpAccess> =
        (0..32).map(|r| fp32(move |l| Some(r * 32 + l as i64))).collect();
    let t = traversal_footprint(&by_rows);
    assert_eq!((t.requests, t.sum.lines, t.sum.sectors, t.efficiency()), (32, 32, 128, 1.0));
    assert_eq!((t.distinct_lines, t.distinct_sectors), (32, 128));
    // Column by column (lane = row): 32 requests of 32 lines / 32 sectors each; with perfect
    // reuse the same 128 sectors, without it 8× the traffic.
    let by_cols: Vec<WarpAccess> =
        (0..32).map(|c| fp32(move |l| Some(l as i64 * 32 + c))).collect();
    let t = traversal_footprint(&by_cols);
    assert_eq!((t.requests, t.sum.lines, t.sum.sectors, t.efficiency()), (32, 1024, 1024, 0.125));
    assert_eq!((t.distinct_lines, t.distinct_sectors), (32, 128));
    assert_eq!(t.sum.bytes_requested, 4096);
}

// ---------------------------------------------------------------------------------------------
// docs-ck-tile/001, "analyze_cache_efficiency" (4×4 fp32 tile, 128-byte lines)
// ---------------------------------------------------------------------------------------------

/// The document's two counters, verbatim.
fn document_counters() -> (u32, u32) {
    const TILE: i64 = 4;
    const PER_LINE: i64 = 128 / 4;
    let mut row_major_lines = 0;
    for _y in 0..TILE {
        let mut x = 0;
        while x < TILE {
            row_major_lines += 1;
            x += PER_LINE;
        }
    }
    let (mut morton_lines, mut current) = (0, -1);
    for i in 0..(TILE * TILE) as u64 {
        let (y, x) = morton::decode2_bits(i, 2).unwrap();
        let line = (i64::from(y) * TILE + i64::from(x)) / PER_LINE;
        if line != current {
            morton_lines += 1;
            current = line;
        }
    }
    (row_major_lines, morton_lines)
}

fn tile_walk(order: &[(i64, i64)], row_stride: i64) -> Vec<i64> {
    order.iter().map(|&(y, x)| y * row_stride + x).collect()
}

fn row_major_order(n: i64) -> Vec<(i64, i64)> {
    (0..n).flat_map(|y| (0..n).map(move |x| (y, x))).collect()
}

fn col_major_order(n: i64) -> Vec<(i64, i64)> {
    (0..n).flat_map(|x| (0..n).map(move |y| (y, x))).collect()
}

fn snake_order(n: i64) -> Vec<(i64, i64)> {
    (0..n).flat_map(|y| (0..n).map(move |x| (y, if y % 2 == 0 { x } else { n - 1 - x }))).collect()
}

fn morton_order(n: i64) -> Vec<(i64, i64)> {
    (0..(n * n) as u64).map(morton::decode2).map(|(y, x)| (i64::from(y), i64::from(x))).collect()
}

#[test]
fn document_cache_line_comparison() {
    // The document prints "Row-major: 4 cache lines", "Morton: 1 cache lines": the row-major
    // counter assumes one line per tile row, the Morton counter a packed tile.
    assert_eq!(document_counters(), (4, 1));
    // One storage for both orders. Packed 4×4 (64 bytes): one line, visited once, either way.
    for order in [row_major_order(4), morton_order(4)] {
        let s = locality(&tile_walk(&order, 4), 4, 1).unwrap();
        assert_eq!((s.distinct_lines, s.line_visits), (1, 1));
    }
    // Tile in a matrix with 64-float (256-byte) rows: each tile row in its own line. Both walks
    // touch the same 4 lines; row-major enters each once, Morton enters 8 times (rows
    // 0 0 1 1 0 0 1 1 2 2 3 3 2 2 3 3).
    let rm = locality(&tile_walk(&row_major_order(4), 64), 4, 1).unwrap();
    let z = locality(&tile_walk(&morton_order(4), 64), 4, 1).unwrap();
    assert_eq!((rm.distinct_lines, rm.line_visits), (4, 4));
    assert_eq!((z.distinct_lines, z.line_visits), (4, 8));
    // As one warp request (16 lanes, one per element) the order of lanes is irrelevant:
    // 4 lines, 4 sectors (16 bytes used in each).
    let req =
        |order: Vec<(i64, i64)>| footprint(&fp32(move |l| order.get(l).map(|&(y, x)| y * 64 + x)));
    assert_eq!(fp(req(row_major_order(4))), (4, 4, 64, 0.5));
    assert_eq!(fp(req(morton_order(4))), (4, 4, 64, 0.5));
}

#[test]
fn document_morton_step_distances() {
    // `analyze_morton_locality` prints the Manhattan distance of each Morton step in a 4×4
    // tile; worked out by hand from the 4×4 table: Z steps alternate 1 (right) and 2 (down-left
    // or up-right), with 4 at 7 → 8 ((1,3) → (2,0)).
    let o = morton_order(4);
    let d: Vec<i64> =
        o.windows(2).map(|w| (w[1].0 - w[0].0).abs() + (w[1].1 - w[0].1).abs()).collect();
    assert_eq!(d, vec![1, 2, 1, 2, 1, 2, 1, 4, 1, 2, 1, 2, 1, 2, 1]);
}

// ---------------------------------------------------------------------------------------------
// docs-ck-tile/002, "bandwidth_utilization"
// ---------------------------------------------------------------------------------------------

#[test]
fn document_bandwidth_utilization() {
    // The document: bytes per thread access / 64-byte line: 4 × fp32 → 25 %, 8 × fp32 → 50 %.
    assert_eq!(4.0 * 4.0 / 64.0 * 100.0, 25.0);
    assert_eq!(8.0 * 4.0 / 64.0 * 100.0, 50.0);
    // On NVIDIA the unit moved is a 32-byte sector. One lane's 16-byte access: 1 sector, 50 %.
    let one = WarpAccess::from_offsets(4, 4, |l| (l == 0).then_some(0)).unwrap();
    assert_eq!(fp(footprint(&one)), (1, 1, 16, 0.5));
    // 8 × fp32 per thread is two 16-byte instructions (16 bytes is the widest access); together
    // they fill the sector: summed 2 sectors moved (50 %) if nothing is reused, 1 distinct.
    let second = WarpAccess::from_offsets(4, 4, |l| (l == 0).then_some(4)).unwrap();
    let t = traversal_footprint(&[one.clone(), second]);
    assert_eq!((t.sum.sectors, t.distinct_sectors, t.efficiency()), (2, 1, 0.5));
    // What matters is the warp: 32 lanes × 16 contiguous bytes use every byte of 16 sectors.
    let warp = WarpAccess::from_offsets(4, 4, |l| Some(4 * l as i64)).unwrap();
    assert_eq!(fp(footprint(&warp)), (4, 16, 512, 1.0));
}

// ---------------------------------------------------------------------------------------------
// docs-ck-tile/000, "access_pattern_analyzer": curves over an 8×8 fp32 tile
// ---------------------------------------------------------------------------------------------

fn stats(s: LocalityStats) -> (u64, u64, u64, u64, u64, u64) {
    (s.sequential, s.within_line, s.large_jumps, s.total_jump, s.distinct_lines, s.line_visits)
}

fn ms(sequential: u64, cache_line_jumps: u64, large_jumps: u64) -> ManhattanSteps {
    ManhattanSteps { sequential, cache_line_jumps, large_jumps }
}

fn points(order: &[(i64, i64)]) -> Vec<[i64; 2]> {
    order.iter().map(|&(y, x)| [y, x]).collect()
}

#[test]
fn document_curve_classes_in_index_space() {
    let hist = |o: Vec<(i64, i64)>| {
        let mut h = BTreeMap::new();
        for w in o.windows(2) {
            *h.entry((w[1].0 - w[0].0).abs() + (w[1].1 - w[0].1).abs()).or_insert(0u64) += 1;
        }
        h
    };
    assert_eq!(hist(morton_order(8)), BTreeMap::from([(1, 32), (2, 24), (4, 6), (8, 1)]));
    // The document's classifier (Manhattan distance ≤ 1 / ≤ 16 / more), 63 steps each:
    // row-major: 56 unit steps + 7 row wraps of distance 1 + 7 = 8.
    assert_eq!(manhattan_steps(&points(&row_major_order(8))), ms(56, 7, 0));
    // column-major: the same by symmetry — the classifier cannot tell it is strided in memory.
    assert_eq!(manhattan_steps(&points(&col_major_order(8))), ms(56, 7, 0));
    // snake: row changes are unit steps down.
    assert_eq!(manhattan_steps(&points(&snake_order(8))), ms(63, 0, 0));
    // Morton: 32 steps of distance 1 (x0 flips), 24 of 2 (diagonal inside a 2×2 block), 6 of 4
    // (between 2×2 blocks, e.g. (1,3)→(2,0)) and 1 of 8 ((3,7)→(4,0)); all ≤ 16 here.
    assert_eq!(manhattan_steps(&points(&morton_order(8))), ms(32, 31, 0));
}

/// Histogram of offset differences, brute force.
fn delta_histogram(offsets: &[i64]) -> BTreeMap<i64, u64> {
    let mut h = BTreeMap::new();
    for w in offsets.windows(2) {
        *h.entry(w[1] - w[0]).or_insert(0) += 1;
    }
    h
}

#[test]
fn curve_locality_in_memory_packed_tile() {
    // 8×8 fp32 tile stored packed (row stride 8 floats = 32 bytes): rows 0–3 in line 0,
    // rows 4–7 in line 1.
    let walk = |o: Vec<(i64, i64)>| tile_walk(&o, 8);

    // Row-major: 63 steps of +1. Total 63.
    assert_eq!(stats(locality(&walk(row_major_order(8)), 4, 1).unwrap()), (63, 0, 0, 63, 2, 2));

    // Column-major: per column 7 steps of +8 (the step row 3 → 4 leaves line 0), then a wrap
    // of −55 back to line 0. Within-line: 8 columns × 6 = 48; large: 8 + 7 = 15.
    // Total: 8·7·8 + 7·55 = 448 + 385 = 833. Line visits: 1 + 8 + 7 = 16.
    assert_eq!(stats(locality(&walk(col_major_order(8)), 4, 1).unwrap()), (0, 48, 15, 833, 2, 16));

    // Snake: 56 steps of ±1, 7 row changes of +8 (row 3 → 4 leaves the line).
    assert_eq!(stats(locality(&walk(snake_order(8)), 4, 1).unwrap()), (56, 6, 1, 112, 2, 2));

    // Morton: steps +1 ×33 (32 x0 flips and (3,7) → (4,0), which is contiguous when packed),
    // +7 ×16, −7 ×8, +5 ×4, −23 ×2; none crosses the line except (3,7) → (4,0), which is
    // sequential. Total 33 + 112 + 56 + 20 + 46 = 267.
    let z = walk(morton_order(8));
    assert_eq!(delta_histogram(&z), BTreeMap::from([(-23, 2), (-7, 8), (1, 33), (5, 4), (7, 16)]));
    assert_eq!(stats(locality(&z, 4, 1).unwrap()), (33, 30, 0, 267, 2, 2));
}

#[test]
fn curve_locality_in_memory_wide_matrix() {
    // The same 8×8 tile in a matrix with 64-float (256-byte) rows: every tile row in its own
    // line, so every change of row is a large jump.
    let walk = |o: Vec<(i64, i64)>| tile_walk(&o, 64);
    // Row-major: 56 × (+1), 7 × (+57). Total 56 + 399 = 455.
    assert_eq!(stats(locality(&walk(row_major_order(8)), 4, 1).unwrap()), (56, 0, 7, 455, 8, 8));
    // Column-major: every step changes row: 56 × 64 + 7 × 447 = 3584 + 3129 = 6713.
    assert_eq!(stats(locality(&walk(col_major_order(8)), 4, 1).unwrap()), (0, 0, 63, 6713, 8, 64));
    // Snake: 56 × 1 + 7 × 64 = 504.
    assert_eq!(stats(locality(&walk(snake_order(8)), 4, 1).unwrap()), (56, 0, 7, 504, 8, 8));
    // Morton: 32 x0 flips stay in the row; the 31 other steps all change row.
    let z = walk(morton_order(8));
    assert_eq!(
        delta_histogram(&z),
        BTreeMap::from([(-191, 2), (-63, 8), (1, 32), (57, 1), (61, 4), (63, 16)])
    );
    assert_eq!(stats(locality(&z, 4, 1).unwrap()), (32, 0, 31, 2227, 8, 32));
}

#[test]
fn vectorized_curve() {
    // docs-ck-tile/000 "VectorizedCurve": 4×8 fp32, vector 4 on dim 1, row-major: access
    // starts 0, 4, …, 28 — every step is exactly one vector; the tile is one line.
    let offs: Vec<i64> = (0..4).flat_map(|r| (0..2).map(move |c| r * 8 + 4 * c)).collect();
    assert_eq!(offs, vec![0, 4, 8, 12, 16, 20, 24, 28]);
    let s = locality(&offs, 4, 4).unwrap();
    assert_eq!(stats(s), (7, 0, 0, 28, 1, 1));
    assert_eq!(s.mean_jump(), 4.0);
}

#[test]
fn locality_edge_cases_and_errors() {
    assert_eq!(locality(&[], 4, 1).unwrap(), LocalityStats::default());
    let one = locality(&[5], 4, 1).unwrap();
    assert_eq!((one.steps, one.distinct_lines, one.line_visits, one.mean_jump()), (0, 1, 1, 0.0));
    // Repeats stay within the line; negative offsets floor to line −1.
    let s = locality(&[3, 3, -1, -33], 4, 1).unwrap();
    assert_eq!(stats(s), (0, 1, 2, 36, 3, 3));
    assert_eq!(
        locality(&[0], 0, 1).unwrap_err().to_string(),
        "locality: elem_bytes = 0 is invalid: must be >= 1"
    );
    assert_eq!(
        locality(&[0], 4, 0).unwrap_err().to_string(),
        "locality: vector_len = 0 is invalid: must be >= 1"
    );
    assert_eq!((cache::LINE_BYTES, cache::SECTOR_BYTES), (128, 32));
}

// ---------------------------------------------------------------------------------------------
// Brute force
// ---------------------------------------------------------------------------------------------

/// Independent reference: every byte of every active lane, its line and its sector.
fn brute_footprint(addrs: &[Option<u64>; 32], size: u64) -> (u64, u64, u64) {
    let mut bytes = BTreeSet::new();
    for a in addrs.iter().flatten() {
        bytes.extend(*a..*a + size);
    }
    let lines: BTreeSet<u64> = bytes.iter().map(|b| b / 128).collect();
    let sectors: BTreeSet<u64> = bytes.iter().map(|b| b / 32).collect();
    (lines.len() as u64, sectors.len() as u64, bytes.len() as u64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn footprint_equals_byte_level_brute_force(
        size in prop_oneof![Just(1u32), Just(2), Just(4), Just(8), Just(16)],
        elems in proptest::collection::vec(proptest::option::weighted(0.8, 0u64..512), 32),
    ) {
        let addrs: [Option<u64>; 32] = std::array::from_fn(|i| elems[i].map(|e| e * u64::from(size)));
        let f = footprint(&WarpAccess::new(addrs, size).unwrap());
        prop_assert_eq!((f.lines, f.sectors, f.bytes_distinct), brute_footprint(&addrs, u64::from(size)));
        prop_assert!(f.efficiency() <= 1.0 && f.efficiency() > 0.0);
    }

    #[test]
    fn locality_classes_partition_the_steps(
        offsets in proptest::collection::vec(-1000i64..1000, 0..50),
        elem in prop_oneof![Just(1u32), Just(2), Just(4), Just(8)],
        vec in 1u32..9,
    ) {
        let s = locality(&offsets, elem, vec).unwrap();
        prop_assert_eq!(s.steps, offsets.len().saturating_sub(1) as u64);
        prop_assert_eq!(s.sequential + s.within_line + s.large_jumps, s.steps);
        let total: u64 = offsets.windows(2).map(|w| (w[1] - w[0]).unsigned_abs()).sum();
        prop_assert_eq!(s.total_jump, total);
        let lines: BTreeSet<i64> = offsets.iter().map(|o| (o * i64::from(elem)).div_euclid(128)).collect();
        prop_assert_eq!(s.distinct_lines, lines.len() as u64);
    }
}
