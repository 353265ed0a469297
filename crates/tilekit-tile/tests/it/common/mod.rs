//! Shared test helpers: the published distributions and a strategy for random well-formed
//! encodings.
#![allow(dead_code)]

use proptest::prelude::*;
use tilekit_tile::encoding::EncodingSpec;
use tilekit_tile::TileDistribution;

/// Every distribution of the published `distributions.json` that tilekit accepts (the file also
/// holds a deliberately ill-formed one).
pub fn published() -> Vec<(String, TileDistribution)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/conformance/distributions.json");
    let text = std::fs::read_to_string(&path).expect("the published distributions");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    for d in v["distributions"].as_array().unwrap() {
        let spec: EncodingSpec = serde_json::from_value(d["encoding"].clone()).unwrap();
        if let Ok(dist) = TileDistribution::from_spec(spec) {
            out.push((d["name"].as_str().unwrap().to_string(), dist));
        }
    }
    assert!(out.len() >= 10, "only {} published distributions", out.len());
    out
}

/// A small deterministic generator (splitmix64) for choices derived from one proptest seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// Builds a well-formed encoding from H factorizations, R lengths and a seed for the
/// assignment: every H component goes to a Y or to a P, every R component to a P; at least one
/// Y and one P; one or two P lists, components shuffled; Y order shuffled.
pub fn assign(hs: Vec<Vec<i64>>, mut rs: Vec<i64>, seed: u64) -> EncodingSpec {
    let mut rng = Rng::new(seed);
    let mut ys: Vec<(i64, i64)> = Vec::new();
    let mut ps: Vec<(i64, i64)> = Vec::new();
    for (x, h) in hs.iter().enumerate() {
        for j in 0..h.len() {
            if rng.next() & 1 == 0 {
                ys.push((x as i64 + 1, j as i64));
            } else {
                ps.push((x as i64 + 1, j as i64));
            }
        }
    }
    if ys.is_empty() {
        ys.push(ps.remove(0));
    }
    for r in 0..rs.len() {
        ps.push((0, r as i64));
    }
    if ps.is_empty() {
        rs.push(2);
        ps.push((0, rs.len() as i64 - 1));
    }
    rng.shuffle(&mut ps);
    rng.shuffle(&mut ys);
    let split = if ps.len() >= 2 && rng.next() & 1 == 0 { 1 + rng.below(ps.len() - 1) } else { 0 };
    let lists: Vec<Vec<(i64, i64)>> =
        if split == 0 { vec![ps] } else { vec![ps[..split].to_vec(), ps[split..].to_vec()] };
    EncodingSpec {
        rs_lengths: rs,
        hs_lengthss: hs,
        ps_to_rhss_major: lists.iter().map(|l| l.iter().map(|c| c.0).collect()).collect(),
        ps_to_rhss_minor: lists.iter().map(|l| l.iter().map(|c| c.1).collect()).collect(),
        ys_to_rhs_major: ys.iter().map(|c| c.0).collect(),
        ys_to_rhs_minor: ys.iter().map(|c| c.1).collect(),
    }
}

/// Random well-formed encodings: 1–3 X dims, each a random factorization into 1–3 H lengths of
/// 1–4, optional R (0–2 lengths of 1–3), random assignment of components to Ps and Ys.
pub fn encoding_strategy() -> impl Strategy<Value = EncodingSpec> {
    (
        prop::collection::vec(prop::collection::vec(1i64..=4, 1..=3), 1..=3),
        prop::collection::vec(1i64..=3, 0..=2),
        any::<u64>(),
    )
        .prop_map(|(hs, rs, seed)| assign(hs, rs, seed))
}

/// Row-major enumeration of every multi-index of `lengths`.
pub fn row_major(lengths: &[i64]) -> Vec<Vec<i64>> {
    let total: i64 = lengths.iter().product();
    (0..total)
        .map(|mut k| {
            let mut idx = vec![0; lengths.len()];
            for d in (0..lengths.len()).rev() {
                idx[d] = k % lengths[d];
                k /= lengths[d];
            }
            idx
        })
        .collect()
}

/// Row-major strides of a packed tensor.
pub fn packed_strides(lengths: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; lengths.len()];
    for i in (0..lengths.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * lengths[i + 1];
    }
    s
}

/// The design documents' RowMajorDist with valid P/Y maps: 2×4 threads over a 4×16 tile, each
/// holding 2×4 values (`X0 = 2·p0 + y0`, `X1 = 4·p1 + y1`).
pub fn doc_rowmajor() -> TileDistribution {
    TileDistribution::from_spec(EncodingSpec {
        rs_lengths: vec![],
        hs_lengthss: vec![vec![2, 2], vec![4, 4]],
        ps_to_rhss_major: vec![vec![1], vec![2]],
        ps_to_rhss_minor: vec![vec![0], vec![0]],
        ys_to_rhs_major: vec![1, 2],
        ys_to_rhs_minor: vec![1, 1],
    })
    .unwrap()
}
