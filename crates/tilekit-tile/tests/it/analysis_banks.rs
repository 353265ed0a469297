//! Shared-memory bank model: hand-computed cases, the design document's row-major vs Morton
//! comparison, CK's XOR LDS descriptor, and a brute-force cross-check.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use tilekit_layout::morton;
use tilekit_layout::Transform;
use tilekit_tile::analysis::banks::{self, BankReport};
use tilekit_tile::analysis::WarpAccess;
use tilekit_tile::TileError;

fn fp32(offset: impl Fn(usize) -> Option<i64>) -> BankReport {
    banks::analyze_offsets(4, 1, offset).unwrap()
}

/// (transactions, ideal, worst n-way)
fn summary(r: &BankReport) -> (u32, u32, u32) {
    (r.transactions, r.ideal_transactions, r.worst_conflict)
}

// ---------------------------------------------------------------------------------------------
// Hand-computed cases
// ---------------------------------------------------------------------------------------------

#[test]
fn fp32_stride_1_is_one_wavefront() {
    // lane l → word l → bank l: every bank one word.
    let r = fp32(|l| Some(l as i64));
    assert_eq!(summary(&r), (1, 1, 1));
    assert_eq!(r.bank_words, [1; 32]);
    assert!(r.conflicts().is_empty());
    assert!(r.is_conflict_free());
}

#[test]
fn fp32_stride_32_column_is_32_way() {
    // lane l → word 32·l → bank 0 for every lane, 32 distinct words.
    let r = fp32(|l| Some(32 * l as i64));
    assert_eq!(summary(&r), (32, 1, 32));
    let mut heat = [0; 32];
    heat[0] = 32;
    assert_eq!(r.bank_words, heat);
    assert_eq!(r.conflicts().len(), 1);
    let c = &r.conflicts()[0];
    assert_eq!((c.phase, c.bank), (0, 0));
    assert_eq!(c.words, (0..32).map(|l| 32 * l).collect::<Vec<u64>>());
    assert_eq!(r.conflicting_lanes(), (0..32).collect::<Vec<usize>>());
}

#[test]
fn fp32_stride_33_padding_is_conflict_free() {
    // word 33·l → bank (33·l) mod 32 = l.
    let r = fp32(|l| Some(33 * l as i64));
    assert_eq!(summary(&r), (1, 1, 1));
    assert_eq!(r.bank_words, [1; 32]);
}

#[test]
fn fp32_stride_2_is_2_way() {
    // word 2l: banks 0,2,…,30, each twice (l and l+16) with different words.
    let r = fp32(|l| Some(2 * l as i64));
    assert_eq!(summary(&r), (2, 1, 2));
    let heat: [u32; 32] = std::array::from_fn(|b| if b % 2 == 0 { 2 } else { 0 });
    assert_eq!(r.bank_words, heat);
    assert_eq!(r.conflicts().len(), 16);
    assert_eq!(r.conflicts()[1].bank, 2);
    assert_eq!(r.conflicts()[1].words, vec![2, 34]);
    assert_eq!(r.conflicts()[1].lanes, vec![1, 17]);
}

#[test]
fn fp32x4_contiguous_is_four_phases_each_one_wavefront() {
    // 16-byte vectors, lane l at byte 16l: quarter warp q covers words 32q..32q+31.
    let r = banks::analyze_offsets(4, 4, |l| Some(4 * l as i64)).unwrap();
    assert_eq!(summary(&r), (4, 4, 1));
    assert_eq!(r.phases.len(), 4);
    for (q, p) in r.phases.iter().enumerate() {
        assert_eq!(p.lanes, 8 * q..8 * q + 8);
        assert_eq!(p.wavefronts, 1);
        assert_eq!(p.bank_words, [1; 32]);
    }
    assert_eq!(r.bank_words, [4; 32]);
}

#[test]
fn fp32x4_stride_2_vectors_is_2_way_per_quarter() {
    // lane l at byte 32l: quarter warp covers words 8i..8i+3 for i in 0..8 (of 64 words):
    // banks 0-3, 8-11, 16-19, 24-27 hold two words each.
    let r = banks::analyze_offsets(4, 4, |l| Some(8 * l as i64)).unwrap();
    assert_eq!(summary(&r), (8, 4, 2));
}

#[test]
fn broadcast_costs_one_wavefront() {
    // Every lane reads word 7.
    let r = fp32(|_| Some(7));
    assert_eq!(summary(&r), (1, 1, 1));
    let mut heat = [0; 32];
    heat[7] = 1;
    assert_eq!(r.bank_words, heat);
    // Lanes read 4 words in turn (l mod 4): still one word per bank.
    assert_eq!(summary(&fp32(|l| Some((l % 4) as i64))), (1, 1, 1));
    // Two words of bank 0 (0 and 32), each broadcast to 16 lanes: 2 wavefronts.
    assert_eq!(summary(&fp32(|l| Some(32 * (l % 2) as i64))), (2, 1, 2));
    // 16-byte broadcast: four quarter-warp phases, each one wavefront.
    assert_eq!(summary(&banks::analyze_offsets(4, 4, |_| Some(0)).unwrap()), (4, 4, 1));
}

#[test]
fn eight_byte_cases() {
    // fp64 stride 1: half warp h covers words 32h..32h+31 → 2 phases × 1.
    let r = banks::analyze_offsets(8, 1, |l| Some(l as i64)).unwrap();
    assert_eq!(summary(&r), (2, 2, 1));
    assert_eq!(r.phases[0].lanes, 0..16);
    assert_eq!(r.phases[1].lanes, 16..32);

    // fp64 stride 2 (lane l at byte 16l): half warp covers words {4i, 4i+1}, i < 16, over
    // 64 words → banks 0,1,4,5,…,28,29 hold two words each → 2 per phase.
    let r = banks::analyze_offsets(8, 1, |l| Some(2 * l as i64)).unwrap();
    assert_eq!(summary(&r), (4, 2, 2));
    let heat: [u32; 32] = std::array::from_fn(|b| if b % 4 < 2 { 4 } else { 0 });
    assert_eq!(r.bank_words, heat); // 2 words × 2 phases
    assert_eq!(r.conflicts().len(), 32); // 16 banks × 2 phases

    // fp32×2 with stride 16 vectors (byte 128l): every lane in banks 0-1 → 16-way per phase.
    let r = banks::analyze_offsets(4, 2, |l| Some(32 * l as i64)).unwrap();
    assert_eq!(summary(&r), (32, 2, 16));

    // Both half warps read the same 128 bytes: the phases are served separately.
    let r = banks::analyze_offsets(8, 1, |l| Some((l % 16) as i64)).unwrap();
    assert_eq!(summary(&r), (2, 2, 1));
}

#[test]
fn inactive_lanes() {
    // Only the first quarter warp of a 16-byte request: one phase to serve.
    let r = banks::analyze_offsets(4, 4, |l| (l < 8).then_some(4 * l as i64)).unwrap();
    assert_eq!(summary(&r), (1, 1, 1));
    assert_eq!(r.phases.iter().map(|p| p.wavefronts).collect::<Vec<_>>(), vec![1, 0, 0, 0]);
    // No active lane at all.
    let r = banks::analyze(&WarpAccess::new([None; 32], 4).unwrap()).unwrap();
    assert_eq!(summary(&r), (0, 0, 0));
    assert!(r.is_conflict_free());
}

#[test]
fn heat_map_text() {
    let r = fp32(|l| (l < 3).then_some(32 * l as i64 + (l as i64 % 2)));
    // lanes 0,1,2 → words 0, 33, 64 → banks 0, 1, 0: bank 0 has 2 words.
    assert_eq!(summary(&r), (2, 1, 2));
    let dots = |n: usize| vec!["."; n].join(" ");
    let want = format!(
        "phase lanes  banks 0..31 (distinct words)\n\
         0     0..32  2 1 {d}\n\
         total        2 1 {d}\n\
         2 wavefronts (ideal 1), worst 2-way\n",
        d = dots(30)
    );
    assert_eq!(r.heat_map(), want);
    assert_eq!(r.conflicting_lanes(), vec![0, 2]);
}

#[test]
fn typed_errors() {
    let two_byte = WarpAccess::new([Some(0); 32], 2).unwrap();
    let e = banks::analyze(&two_byte).unwrap_err();
    assert_eq!(
        e.to_string(),
        "shared-memory bank model: access_bytes = 2 is invalid: the model covers 4-, 8- and 16-byte accesses"
    );
    assert!(matches!(e, TileError::InvalidParameter { ref field, .. } if field == "access_bytes"));
    assert_eq!(
        banks::analyze_offsets(4, 3, |_| Some(0)).unwrap_err().to_string(),
        "warp access: access_bytes = 12 is invalid: an access is 1, 2, 4, 8 or 16 bytes"
    );
    assert_eq!(
        banks::analyze_offsets(4, 4, |l| Some(l as i64)).unwrap_err().to_string(),
        "warp access: lane 1 address = 4 is invalid: a 16-byte access must be 16-byte aligned"
    );
    assert_eq!(
        banks::analyze_offsets(4, 1, |l| Some(l as i64 - 3)).unwrap_err().to_string(),
        "warp access: lane 0 offset = -3 is invalid: element offsets must be >= 0 and their byte address must fit in 64 bits"
    );
}

// ---------------------------------------------------------------------------------------------
// docs-ck-tile/001, "Bank Conflict Reduction"
// ---------------------------------------------------------------------------------------------

/// The document's own counter: lanes per bank (not distinct words), maximum over banks.
fn document_counter(offset: impl Fn(usize) -> i64) -> u32 {
    let mut bank_access = [0u32; 32];
    for tid in 0..32 {
        bank_access[((offset(tid) * 4 / 4) % 32) as usize] += 1;
    }
    bank_access.into_iter().max().unwrap_or(0)
}

fn doc_row_major(tid: usize) -> i64 {
    ((tid / 4) * 4 + tid % 4) as i64
}

fn doc_morton(tid: usize) -> i64 {
    let (y, x) = morton::decode2_bits((tid % 16) as u64, 2).unwrap();
    i64::from(y) * 4 + i64::from(x)
}

#[test]
fn document_row_major_vs_morton_4x4() {
    // The document's counter: row-major "1-way", Morton "2-way" (lanes l and l+16 both land
    // on word morton(l mod 16) and are counted twice).
    assert_eq!(document_counter(doc_row_major), 1);
    assert_eq!(document_counter(doc_morton), 2);
    // The hardware model: lanes l and l+16 read the *same word* — a broadcast — and the 16
    // words of a 4×4 fp32 tile occupy 16 different banks in any order. Both cost 1 wavefront;
    // the document's 2-way is an artifact of counting lanes instead of distinct words.
    let row = fp32(|l| Some(doc_row_major(l)));
    let z = fp32(|l| Some(doc_morton(l)));
    assert_eq!(summary(&row), (1, 1, 1));
    assert_eq!(summary(&z), (1, 1, 1));
    let heat: [u32; 32] = std::array::from_fn(|b| if b < 16 { 1 } else { 0 });
    assert_eq!(z.bank_words, heat);
}

#[test]
fn document_morton_kernel_is_conflict_free_like_row_major() {
    // `morton_optimized_kernel`: 16×16 threads, smem[16][16] fp32. Warp w holds threads
    // tid = 32w..32w+31 (tid_x = tid mod 16, tid_y = tid / 16). The store is row-major; the
    // read decodes a Morton index inside each 4×4 tile. Rows 2w and 2w+1 of the block are the
    // 32 words 32w..32w+31 either way, so both cost one wavefront in every warp.
    for warp in 0..8 {
        let store = fp32(|l| Some((32 * warp + l) as i64));
        let read = fp32(|l| {
            let tid = 32 * warp + l;
            let (tx, ty) = (tid % 16, tid / 16);
            let tile_id = (ty / 4) * 4 + tx / 4;
            let m = ((ty % 4) * 4 + tx % 4) as u64;
            let (yi, xi) = morton::decode2_bits(m, 2).unwrap();
            let (tile_y, tile_x) = (tile_id / 4, tile_id % 4);
            Some(((tile_y * 4 + yi as usize) * 16 + tile_x * 4 + xi as usize) as i64)
        });
        assert_eq!(summary(&store), (1, 1, 1), "warp {warp} store");
        assert_eq!(summary(&read), (1, 1, 1), "warp {warp} read");
    }
}

#[test]
fn lane_order_inside_a_tile_does_not_matter() {
    // A 4×4 fp32 tile inside a 32-float-wide row-major smem array: rows are 32 words apart,
    // so the tile's column c is in bank c for every row → 4 distinct words per bank.
    // Lanes 0..15 visit it row-major or in Morton order: same set of words, same 4 wavefronts.
    let row_major = fp32(|l| (l < 16).then_some(((l / 4) * 32 + l % 4) as i64));
    let z_order = fp32(|l| {
        (l < 16).then(|| {
            let (y, x) = morton::decode2(l as u64);
            i64::from(y) * 32 + i64::from(x)
        })
    });
    assert_eq!(summary(&row_major), (4, 1, 4));
    assert_eq!(summary(&z_order), (4, 1, 4));
    assert_eq!(row_major.bank_words, z_order.bank_words);
}

#[test]
fn storage_layouts_of_a_32x32_fp32_tile() {
    // Where Morton *storage* stands against row-major and padded storage, for a warp reading
    // one row (lane l → (r, l)) or one column (lane l → (l, c)) of a 32×32 fp32 tile.
    let row_major = |i: usize, j: usize| (i * 32 + j) as i64;
    let padded = |i: usize, j: usize| (i * 33 + j) as i64;
    let z = |i: usize, j: usize| morton::encode2(i as u32, j as u32) as i64;
    let row = |f: &dyn Fn(usize, usize) -> i64| fp32(|l| Some(f(7, l)));
    let col = |f: &dyn Fn(usize, usize) -> i64| fp32(|l| Some(f(l, 5)));

    assert_eq!(summary(&row(&row_major)), (1, 1, 1));
    assert_eq!(summary(&col(&row_major)), (32, 1, 32));
    assert_eq!(summary(&row(&padded)), (1, 1, 1));
    assert_eq!(summary(&col(&padded)), (1, 1, 1));
    // Morton: bank = code mod 32 = bits x0 y0 x1 y1 x2. A row fixes y: x0, x1, x2 vary →
    // 8 banks, each with the 4 words of x3, x4 → 4-way. A column fixes x: y0, y1 vary →
    // 4 banks, each with 8 words → 8-way. Morton storage trades the column's 32-way for
    // 4-/8-way on both; padding (or an XOR swizzle) removes the conflicts.
    assert_eq!(summary(&row(&z)), (4, 1, 4));
    assert_eq!(summary(&col(&z)), (8, 1, 8));
}

// ---------------------------------------------------------------------------------------------
// CK's XOR LDS descriptor (SEMANTICS §14): MakeALdsBlockDescriptor of the universal GEMM
// pipeline policy, A tile 32×32 fp16 (MPerBlock = KPerBlock = 32), KPack = 8 (16 bytes),
// MLdsLayer = 32·4 / 32 / 2 = 2:
//
//   naive (K0·L = 8, M/L = 16, KPack = 8), strides (8, 64, 1)
//   → xor on (M/L, K0·L): k0l' = k0l ^ (m' mod 8)
//   → unmerge K0·L into (L = 2, K0 = 4)
//   → merge (M/L, L) = M and (K0, KPack) = K.
// Evaluated here with the layer's own transforms, from (m, k) down to the element offset.
// ---------------------------------------------------------------------------------------------

struct XorLds {
    merge_m: Transform,
    merge_k: Transform,
    unmerge: Transform,
    xor: Transform,
    naive: Transform,
}

impl XorLds {
    fn new() -> Self {
        XorLds {
            merge_m: Transform::merge(vec![16, 2]).unwrap(),
            merge_k: Transform::merge(vec![4, 8]).unwrap(),
            unmerge: Transform::unmerge(vec![2, 4]).unwrap(),
            xor: Transform::xor(16, 8).unwrap(),
            naive: Transform::embed(vec![8, 16, 8], vec![8, 64, 1]).unwrap(),
        }
    }
    /// Element offset of A(m, k).
    fn offset(&self, m: i64, k: i64) -> i64 {
        let ml = self.merge_m.lower_index(&[m]).unwrap(); // (m', l)
        let kk = self.merge_k.lower_index(&[k]).unwrap(); // (k0, kpack)
        let k0l = self.unmerge.lower_index(&[ml[1], kk[0]]).unwrap(); // l·4 + k0
        let x = self.xor.lower_index(&[ml[0], k0l[0]]).unwrap(); // (m', k0l ^ (m' mod 8))
        self.naive.lower_index(&[x[1], x[0], kk[1]]).unwrap()[0]
    }
}

#[test]
fn xor_lds_descriptor_offsets() {
    let d = XorLds::new();
    // Hand-computed: (m=1,k=0): m'=0, l=1 → k0l = 4 → 4·8 = 32.
    // (m=2,k=0): m'=1, l=0 → k0l = 0 ^ 1 = 1 → 1·8 + 64 = 72. (m=3,k=9): m'=1, l=1, k0=1,
    // kp=1 → k0l = 5 ^ 1 = 4 → 32 + 64 + 1 = 97.
    assert_eq!([d.offset(0, 0), d.offset(1, 0), d.offset(2, 0), d.offset(3, 9)], [0, 32, 72, 97]);
    // A permutation of 0..1024.
    let mut all: Vec<i64> =
        (0..32).flat_map(|m| (0..32).map(move |k| (m, k))).map(|(m, k)| d.offset(m, k)).collect();
    all.sort_unstable();
    assert_eq!(all, (0..1024).collect::<Vec<i64>>());
}

#[test]
fn xor_lds_descriptor_removes_the_column_read_conflict() {
    let d = XorLds::new();
    let row_major = |m: i64, k: i64| m * 32 + k;
    // Read: lane t takes 8 halves (16 bytes) of row m = t at k = 8c — the access of a warp
    // feeding an MMA along M. Row-major rows are 64 bytes (16 banks): the 8 lanes of a quarter
    // warp hit banks 4c..4c+3 and 16+4c..16+4c+3 with 4 distinct words each → 4-way, 16
    // wavefronts instead of 4. The XOR moves each row pair's 16-byte chunk to a different
    // bank group: conflict-free.
    for c in 0..4 {
        let naive = banks::analyze_offsets(2, 8, |t| Some(row_major(t as i64, 8 * c))).unwrap();
        let xor = banks::analyze_offsets(2, 8, |t| Some(d.offset(t as i64, 8 * c))).unwrap();
        assert_eq!(summary(&naive), (16, 4, 4), "k chunk {c}, row-major");
        assert_eq!(summary(&xor), (4, 4, 1), "k chunk {c}, xor");
    }
    // Write: lane t stores 8 halves at (m = 8w + t/4, k = 8·(t mod 4)) — whole rows per
    // quarter warp. Conflict-free in both layouts (the XOR permutes chunks within 128 bytes).
    for w in 0..4 {
        let at = |t: usize| (8 * w + (t / 4) as i64, 8 * (t % 4) as i64);
        let naive = banks::analyze_offsets(2, 8, |t| Some(row_major(at(t).0, at(t).1))).unwrap();
        let xor = banks::analyze_offsets(2, 8, |t| Some(d.offset(at(t).0, at(t).1))).unwrap();
        assert_eq!(summary(&naive), (4, 4, 1));
        assert_eq!(summary(&xor), (4, 4, 1));
    }
}

// ---------------------------------------------------------------------------------------------
// Brute force
// ---------------------------------------------------------------------------------------------

/// Independent reference: per phase, a map bank → set of words; wavefronts = largest set.
fn brute(addrs: &[Option<u64>; 32], size: u64) -> (u32, u32, u32) {
    let per = match size {
        4 => 32,
        8 => 16,
        _ => 8,
    };
    let (mut total, mut ideal, mut worst) = (0, 0, 0);
    for phase in addrs.chunks(per) {
        let mut m: HashMap<u64, HashSet<u64>> = HashMap::new();
        for a in phase.iter().flatten() {
            for w in a / 4..(a + size) / 4 {
                m.entry(w % 32).or_default().insert(w);
            }
        }
        let wf = m.values().map(|s| s.len() as u32).max().unwrap_or(0);
        total += wf;
        worst = worst.max(wf);
        if !m.is_empty() {
            ideal += 1;
        }
    }
    (total, ideal, worst)
}

fn access_strategy() -> impl Strategy<Value = ([Option<u64>; 32], u32)> {
    prop_oneof![Just(4u32), Just(8u32), Just(16u32)].prop_flat_map(|size| {
        // Small address space (512 words) so that conflicts and broadcasts both happen.
        proptest::collection::vec(
            proptest::option::weighted(0.85, 0u64..(2048 / u64::from(size))),
            32,
        )
        .prop_map(move |v| {
            let addrs: [Option<u64>; 32] =
                std::array::from_fn(|i| v[i].map(|e| e * u64::from(size)));
            (addrs, size)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn model_equals_brute_force((addrs, size) in access_strategy()) {
        let r = banks::analyze(&WarpAccess::new(addrs, size).unwrap()).unwrap();
        prop_assert_eq!(summary(&r), brute(&addrs, u64::from(size)));
        prop_assert_eq!(r.bank_words.iter().sum::<u32>(), r.phases.iter().map(|p| p.bank_words.iter().sum::<u32>()).sum::<u32>());
        prop_assert_eq!(r.is_conflict_free(), r.conflicts().is_empty());
    }

    #[test]
    fn permuting_lanes_within_a_phase_changes_nothing((addrs, size) in access_strategy(), rot in 0usize..8) {
        let per = match size { 4 => 32, 8 => 16, _ => 8 };
        let mut permuted = addrs;
        for chunk in permuted.chunks_mut(per) {
            chunk.rotate_left(rot % per);
        }
        let a = banks::analyze(&WarpAccess::new(addrs, size).unwrap()).unwrap();
        let b = banks::analyze(&WarpAccess::new(permuted, size).unwrap()).unwrap();
        prop_assert_eq!(summary(&a), summary(&b));
        prop_assert_eq!(a.bank_words, b.bank_words);
    }
}

// ---------------------------------------------------------------------------------------------
// Layouts as descriptors (analysis::requests): the document's 4×4 comparison with Morton
// *storage*, CK's XOR LDS descriptor from the layout crate, Hopper's 128-byte swizzle, and a
// distribution + window reading a swizzled tile.
// ---------------------------------------------------------------------------------------------

use tilekit_layout::swizzle::{self, HopperSwizzle};
use tilekit_tile::analysis::requests::{
    summarize, tile_requests, window_requests, RequestsSummary, SmemLayout, WarpPattern,
};
use tilekit_tile::encoding_text::parse_encoding;
use tilekit_tile::traits::AccessCurve;
use tilekit_tile::TileDistribution;

/// (requests, transactions, ideal, worst n-way, requests with a conflict)
fn totals(s: &RequestsSummary) -> (usize, u64, u64, u32, usize) {
    (s.requests, s.transactions, s.ideal_transactions, s.worst_conflict, s.conflicted_requests)
}

fn walk(layout: SmemLayout, rows: i64, cols: i64, bytes: u32, p: WarpPattern) -> RequestsSummary {
    let d = layout.descriptor(rows, cols, i64::from(bytes)).unwrap();
    summarize(&tile_requests(&d, bytes, p).unwrap()).unwrap()
}

#[test]
fn document_4x4_with_morton_storage_descriptor() {
    // The 4×4 fp32 tile *stored* in Morton order (the descriptor of SmemLayout::Morton), read by
    // 16 lanes in row-major order: element (r, c) sits at word morton(r, c) < 16, so the 16
    // words are 16 distinct banks — 1 wavefront, exactly as row-major storage.
    let z = walk(SmemLayout::Morton, 4, 4, 4, WarpPattern::Row);
    let rm = walk(SmemLayout::RowMajor, 4, 4, 4, WarpPattern::Row);
    assert_eq!(totals(&z), (1, 1, 1, 1, 0));
    assert_eq!(totals(&rm), (1, 1, 1, 1, 0));
    // lane l reads (l / 4, l % 4): its word is the document's Morton table entry
    let table = [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15];
    let d = SmemLayout::Morton.descriptor(4, 4, 4).unwrap();
    let reqs = tile_requests(&d, 4, WarpPattern::Row).unwrap();
    let words: Vec<u64> = reqs[0].addresses().iter().flatten().map(|a| a / 4).collect();
    assert_eq!(words, table);
}

#[test]
fn whole_32x32_fp32_tile_per_layout() {
    // 32 requests each; the per-request numbers of `storage_layouts_of_a_32x32_fp32_tile`
    // (row-major column 32-way, Morton row 4-way / column 8-way, padding conflict-free) summed.
    let t = |l, p| totals(&walk(l, 32, 32, 4, p));
    assert_eq!(t(SmemLayout::RowMajor, WarpPattern::Row), (32, 32, 32, 1, 0));
    assert_eq!(t(SmemLayout::RowMajor, WarpPattern::Col), (32, 1024, 32, 32, 32));
    assert_eq!(t(SmemLayout::Padded(1), WarpPattern::Col), (32, 32, 32, 1, 0));
    assert_eq!(t(SmemLayout::Morton, WarpPattern::Row), (32, 128, 32, 4, 32));
    assert_eq!(t(SmemLayout::Morton, WarpPattern::Col), (32, 256, 32, 8, 32));
    assert_eq!(t(SmemLayout::ColMajor, WarpPattern::Row), (32, 1024, 32, 32, 32));
    // fp32 rows are 128 bytes: the 128-byte swizzle fits; a column of 16-byte chunks
    // (lanes down the rows) is 8-way in row-major storage and conflict-free swizzled.
    assert_eq!(t(SmemLayout::RowMajor, WarpPattern::ColVec(4)), (8, 256, 32, 8, 8));
    assert_eq!(t(SmemLayout::Swizzle128, WarpPattern::ColVec(4)), (8, 32, 32, 1, 0));
    // padding by one float breaks 16-byte alignment; padding by 4 floats (16 bytes) keeps it
    // and spreads 8 consecutive rows over 8 chunks: conflict-free.
    assert_eq!(t(SmemLayout::Padded(4), WarpPattern::ColVec(4)), (8, 32, 32, 1, 0));
}

#[test]
fn xor_lds_from_the_layout_crate_equals_the_hand_built_one() {
    let hand = XorLds::new();
    let lib = swizzle::xor_lds(32, 32, 8, 2).unwrap();
    for m in 0..32 {
        for k in 0..32 {
            assert_eq!(lib.calculate_offset(&[m, k]).unwrap(), hand.offset(m, k), "({m}, {k})");
        }
    }
    // The column read of `xor_lds_descriptor_removes_the_column_read_conflict` as a whole-tile
    // walk: 4 requests (one per 16-byte chunk column), 16 wavefronts each row-major (4-way),
    // 4 each with the XOR.
    let t = |l| totals(&walk(l, 32, 32, 2, WarpPattern::ColVec(8)));
    assert_eq!(t(SmemLayout::RowMajor), (4, 64, 16, 4, 4));
    assert_eq!(t(SmemLayout::XorLds), (4, 16, 16, 1, 0));
    // Its row walk (the store) is conflict-free in both.
    assert_eq!(
        totals(&walk(SmemLayout::XorLds, 32, 32, 2, WarpPattern::RowVec(8))),
        (4, 16, 16, 1, 0)
    );
}

#[test]
fn hopper_128_byte_swizzle_column_of_chunks() {
    // 64 rows of 64 fp16 (128 bytes). A warp reads chunk c (16 bytes) of rows 0..31: lane l →
    // (l, 8c). Row-major: every row's chunk c is words 4c..4c+3, i.e. the same 4 banks; a
    // quarter warp = 8 rows = 8 distinct words per bank → 8-way, 8 wavefronts per phase.
    // Swizzled: chunk c of row r is stored at chunk c ⊕ (r mod 8): 8 rows → 8 chunks → 1 each.
    let d = HopperSwizzle::B128.descriptor(64, 64, 2).unwrap();
    for c in 0..8i64 {
        let plain = banks::analyze_offsets(2, 8, |l| Some(l as i64 * 64 + 8 * c)).unwrap();
        let swz =
            banks::analyze_offsets(2, 8, |l| Some(d.calculate_offset(&[l as i64, 8 * c]).unwrap()))
                .unwrap();
        assert_eq!(summary(&plain), (32, 4, 8), "chunk {c}, row-major");
        assert_eq!(summary(&swz), (4, 4, 1), "chunk {c}, swizzled");
        // independent reference: the hardware's byte formula and the brute-force counter
        let addrs: [Option<u64>; 32] = std::array::from_fn(|l| {
            Some(HopperSwizzle::B128.swizzle_byte_offset(l as i64 * 128 + 16 * c) as u64)
        });
        assert_eq!(swz.phases.len(), 4);
        assert_eq!(brute(&addrs, 16), (4, 4, 1));
        assert_eq!(*WarpAccess::new(addrs, 16).unwrap().addresses(), addrs_of(&d, c));
    }
    // The 64- and 32-byte modes on their own row widths (32 and 16 fp16), same column read.
    // 64-byte rows (16 words): chunk c of row r is words 16r + 4c → 2 bank groups (r even /
    // odd), 4 of the 8 rows each → 4-way. The 64-byte swizzle XORs c with bits 7–8 of the
    // address (r/2 mod 4): (r mod 2, c ⊕ r/2) takes 8 distinct values → conflict-free.
    // 32-byte rows (8 words): words 8r + 4c → 4 groups (r mod 4) → 2-way; the 32-byte swizzle
    // XORs c with bit 7 (r/4 mod 2): (r mod 4, c ⊕ r/4) → 8 distinct → conflict-free.
    let t = |l, cols| totals(&walk(l, 64, cols, 2, WarpPattern::ColVec(8)));
    assert_eq!(t(SmemLayout::RowMajor, 32), (8, 128, 32, 4, 8));
    assert_eq!(t(SmemLayout::Swizzle64, 32), (8, 32, 32, 1, 0));
    assert_eq!(t(SmemLayout::RowMajor, 16), (4, 32, 16, 2, 4));
    assert_eq!(t(SmemLayout::Swizzle32, 16), (4, 16, 16, 1, 0));
}

fn addrs_of(d: &tilekit_layout::TensorDescriptor<i64>, c: i64) -> [Option<u64>; 32] {
    std::array::from_fn(|l| Some(2 * d.calculate_offset(&[l as i64, 8 * c]).unwrap() as u64))
}

#[test]
fn distribution_window_read_of_a_swizzled_64x64_fp16_tile() {
    // 128 threads, 16-byte vectors (8 fp16 along the row), 64×64 fp16 in shared memory.
    // Column-first: P = merge(X1.0 = 8 chunks, X0.1 = 16 rows), Y0 = X0.0 (4 row groups),
    // Y1 = X1.1 (the 8-element vector). Thread t reads, at access i, row 16i + t mod 16, chunk
    // t / 16 — a quarter warp reads 8 consecutive rows of one chunk column (an MMA-style read).
    let col_first = "H[[4,16],[8,8]] P[[X1.0,X0.1]] Y[X0.0,X1.1]";
    // Row-first: P = merge(X0.1, X1.0): a quarter warp reads one whole 128-byte row.
    let row_first = "H[[4,16],[8,8]] P[[X0.1,X1.0]] Y[X0.0,X1.1]";
    let run = |enc: &str, layout: SmemLayout| {
        let d = TileDistribution::from_spec(parse_encoding(enc).unwrap()).unwrap();
        assert_eq!((d.num_threads(), d.x_lengths()), (128, vec![64, 64]));
        let smem = layout.descriptor(64, 64, 2).unwrap();
        let reqs = window_requests(&d, &smem, &[0, 0], AccessCurve::Linear, 2).unwrap();
        let plain: Vec<WarpAccess> = reqs.iter().map(|r| r.request.clone()).collect();
        (reqs, summarize(&plain).unwrap())
    };
    // 4 warps × 4 accesses = 16 requests of 16 bytes per lane: ideal 4 wavefronts each.
    let (reqs, plain) = run(col_first, SmemLayout::RowMajor);
    assert_eq!(totals(&plain), (16, 512, 64, 8, 16));
    let (swz_reqs, swz) = run(col_first, SmemLayout::Swizzle128);
    assert_eq!(totals(&swz), (16, 64, 64, 1, 0));
    assert_eq!(totals(&run(row_first, SmemLayout::RowMajor).1), (16, 64, 64, 1, 0));
    assert_eq!(totals(&run(row_first, SmemLayout::Swizzle128).1), (16, 64, 64, 1, 0));

    // The requests are what the hand formula says: ordered by access then warp; lane l of warp
    // w at access i is thread t = 32w + l, row 16i + t mod 16, chunk t / 16.
    for (r, s) in reqs.iter().zip(&swz_reqs) {
        assert_eq!(r.request.access_bytes(), 16);
        let (w, i) = (r.warp as i64, r.access);
        let want: [Option<u64>; 32] = std::array::from_fn(|l| {
            let t = 32 * w + l as i64;
            let (row, chunk) = (16 * i + t % 16, t / 16);
            Some((row * 128 + 16 * chunk) as u64)
        });
        let want_swz: [Option<u64>; 32] = std::array::from_fn(|l| {
            want[l].map(|a| HopperSwizzle::B128.swizzle_byte_offset(a as i64) as u64)
        });
        assert_eq!(*r.request.addresses(), want, "warp {w} access {i}");
        assert_eq!(*s.request.addresses(), want_swz, "warp {w} access {i}, swizzled");
        assert_eq!(brute(&want, 16), (32, 4, 8));
        assert_eq!(brute(&want_swz, 16), (4, 4, 1));
    }
    assert_eq!(
        reqs.iter().map(|r| (r.access, r.warp)).take(6).collect::<Vec<_>>(),
        vec![(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]
    );
}

#[test]
fn layout_and_pattern_errors() {
    assert_eq!(
        "diagonal".parse::<SmemLayout>().unwrap_err().to_string(),
        "shared-memory layout: name = \"diagonal\" is invalid: known layouts are row-major, col-major, \
         padded:P (P >= 0), morton, swizzle128, swizzle64, swizzle32, xor-lds"
    );
    assert!("col-vec32".parse::<WarpPattern>().is_err());
    // fp32 × 8 = 32 bytes per lane
    let d = SmemLayout::RowMajor.descriptor(8, 8, 4).unwrap();
    assert_eq!(
        tile_requests(&d, 4, WarpPattern::RowVec(8)).unwrap_err().to_string(),
        "tile requests: vector bytes = 32 is invalid: 8 elements of 4 bytes; a lane accesses at most 16 bytes"
    );
    // padding by one float: row 1 starts at float 33, not 16-byte aligned
    let d = SmemLayout::Padded(1).descriptor(32, 32, 4).unwrap();
    assert!(tile_requests(&d, 4, WarpPattern::ColVec(4))
        .unwrap_err()
        .to_string()
        .contains("must be 16-byte aligned"));
    assert!(SmemLayout::Morton.descriptor(6, 8, 4).is_err());
    assert!(SmemLayout::Swizzle64.descriptor(64, 64, 2).is_err());
}
