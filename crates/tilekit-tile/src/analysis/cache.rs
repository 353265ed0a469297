//! Global-memory footprint: cache lines and sectors touched by warp requests, and the locality
//! of an access sequence.
//!
//! # The model
//!
//! NVIDIA's L1/L2 caches hold **128-byte lines** made of four **32-byte sectors**; DRAM and L2
//! move whole sectors. A warp request costs the distinct sectors its active lanes touch (and
//! the distinct lines they fall into); its efficiency is the distinct bytes it asked for over
//! the bytes of the sectors moved:
//!
//! ```text
//!  line (128 B):  | sector 0 (32 B) | sector 1 | sector 2 | sector 3 |
//!  32 lanes × fp32, stride 1, aligned:  1 line, 4 sectors, 128 / 128 B = 100 %
//!  32 lanes × fp32, stride 2:           2 lines, 8 sectors, 128 / 256 B =  50 %
//!  32 lanes × fp32, column of 32×32:   32 lines, 32 sectors, 128 / 1024 B = 12.5 %
//! ```
//!
//! [`footprint`] measures one request, [`traversal_footprint`] a sequence of them: the sum of the
//! per-request costs (no reuse between requests — a streaming, cache-less bound) next to the
//! distinct lines and sectors of the whole traversal (perfect reuse — what an unbounded cache
//! would fetch).
//!
//! [`locality`] judges the *order* of a sequence of element offsets, e.g. a space-filling curve
//! over a tile: each step is **sequential** (it moves by exactly one element or one vector),
//! a **jump within a line** (it stays in the 128-byte line of the previous access), or a
//! **large jump** (it leaves the line); plus the mean jump length and how often the walk
//! enters a different line than the one it is in ("line visits").
//!
//! # The design documents' numbers
//!
//! * `docs-ck-tile/001`, `analyze_cache_efficiency`, 4×4 fp32 tile, 128-byte lines: the
//!   document's code prints **row-major 4 lines, Morton 1 line**. The two counters assume
//!   different storage: the row-major loop counts one line per row (as if each row of the tile
//!   were in its own line, i.e. the tile sits in a wide matrix), the Morton loop uses
//!   `y·4 + x` (a packed 4×4 tile, 64 bytes, one line). With one storage for both, this model
//!   gives: packed tile — 1 distinct line and 1 line visit for both orders; tile in a matrix with
//!   rows of 256 bytes — 4 distinct lines for both, 4 line visits row-major and **8** Morton
//!   (the Z goes back and forth between row pairs). Morton does not save lines here.
//! * `docs-ck-tile/002`, `bandwidth_utilization`: bytes per *thread* access over a 64-byte line,
//!   25 % for 4 × fp32 and 50 % for 8 × fp32. On NVIDIA the unit is the 32-byte sector and
//!   the question is what the whole *warp* touches: one lane's 16-byte access uses 50 % of its
//!   sector; 32 lanes reading 16 consecutive bytes each use 100 % of 16 sectors.
//! * `docs-ck-tile/000`, `access_pattern_analyzer`: classifies curve steps by Manhattan distance
//!   in *index space* (≤ 1 sequential, ≤ 16 "within cache line", else large); it cannot see the
//!   storage, so a column-major walk over a row-major tile counts as sequential. It is
//!   reproduced as [`manhattan_steps`] for comparison; [`locality`] classifies by memory offset.
//!
//! The tests in `tests/it/analysis_cache.rs` reproduce all three with literal numbers.
//!
//! ```
//! use tilekit_tile::analysis::{cache, WarpAccess};
//! let stride2 = WarpAccess::from_offsets(4, 1, |lane| Some(2 * lane as i64)).unwrap();
//! let f = cache::footprint(&stride2);
//! assert_eq!((f.lines, f.sectors, f.efficiency()), (2, 8, 0.5));
//! ```

use std::collections::BTreeSet;

use super::WarpAccess;
use crate::error::{Result, TileError};

/// Bytes in a cache line.
///
/// ```
/// assert_eq!(tilekit_tile::analysis::cache::LINE_BYTES, 128);
/// ```
pub const LINE_BYTES: u64 = 128;

/// Bytes in a sector, the unit of transfer between DRAM, L2 and L1.
///
/// ```
/// assert_eq!(tilekit_tile::analysis::cache::SECTOR_BYTES, 32);
/// ```
pub const SECTOR_BYTES: u64 = 32;

/// What one warp request touches.
///
/// ```
/// use tilekit_tile::analysis::{cache, WarpAccess};
/// let f = cache::footprint(&WarpAccess::new([Some(0); 32], 4).unwrap()); // one word, 32 lanes
/// assert_eq!((f.lines, f.sectors, f.bytes_requested, f.bytes_distinct), (1, 1, 128, 4));
/// assert_eq!(f.efficiency(), 0.125);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footprint {
    /// Distinct 128-byte lines.
    pub lines: u64,
    /// Distinct 32-byte sectors.
    pub sectors: u64,
    /// Bytes asked for: active lanes × access size (repeats counted).
    pub bytes_requested: u64,
    /// Distinct bytes asked for.
    pub bytes_distinct: u64,
}

impl Footprint {
    /// Bytes moved: sectors × 32.
    ///
    /// ```
    /// let f = tilekit_tile::analysis::cache::Footprint { lines: 1, sectors: 3, bytes_requested: 80, bytes_distinct: 80 };
    /// assert_eq!(f.bytes_moved(), 96);
    /// ```
    pub fn bytes_moved(&self) -> u64 {
        self.sectors * SECTOR_BYTES
    }

    /// Distinct bytes asked for / bytes moved, in `0..=1` (1.0 for an empty request).
    ///
    /// ```
    /// let f = tilekit_tile::analysis::cache::Footprint { lines: 1, sectors: 2, bytes_requested: 32, bytes_distinct: 32 };
    /// assert_eq!(f.efficiency(), 0.5);
    /// ```
    pub fn efficiency(&self) -> f64 {
        if self.sectors == 0 {
            1.0
        } else {
            self.bytes_distinct as f64 / self.bytes_moved() as f64
        }
    }
}

/// Lines, sectors and bytes of one warp request.
///
/// ```
/// use tilekit_tile::analysis::{cache, WarpAccess};
/// // fp32 × 4 per lane, contiguous: 512 bytes
/// let v4 = WarpAccess::from_offsets(4, 4, |lane| Some(4 * lane as i64)).unwrap();
/// let f = cache::footprint(&v4);
/// assert_eq!((f.lines, f.sectors, f.bytes_distinct, f.efficiency()), (4, 16, 512, 1.0));
/// ```
pub fn footprint(access: &WarpAccess) -> Footprint {
    let size = u64::from(access.access_bytes());
    let mut lines = BTreeSet::new();
    let mut sectors = BTreeSet::new();
    // Accesses are aligned to their size (≤ 16 bytes), so each lies in one sector; distinct
    // bytes are counted from the distinct start addresses.
    let mut starts = BTreeSet::new();
    let mut requested = 0;
    for (_, a) in access.active_lanes() {
        lines.insert(a / LINE_BYTES);
        sectors.insert(a / SECTOR_BYTES);
        starts.insert(a);
        requested += size;
    }
    Footprint {
        lines: lines.len() as u64,
        sectors: sectors.len() as u64,
        bytes_requested: requested,
        bytes_distinct: starts.len() as u64 * size,
    }
}

/// Totals over a sequence of warp requests.
///
/// ```
/// use tilekit_tile::analysis::{cache, WarpAccess};
/// let row = |r: i64| WarpAccess::from_offsets(4, 1, move |lane| Some(r * 32 + lane as i64)).unwrap();
/// let t = cache::traversal_footprint(&[row(0), row(1), row(0)]);
/// assert_eq!((t.requests, t.sum.lines, t.distinct_lines, t.distinct_sectors), (3, 3, 2, 8));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TraversalFootprint {
    /// Number of requests.
    pub requests: u64,
    /// Per-request footprints summed: lines and sectors fetched when nothing is reused
    /// between requests.
    pub sum: Footprint,
    /// Distinct lines over the whole traversal (perfect reuse).
    pub distinct_lines: u64,
    /// Distinct sectors over the whole traversal (perfect reuse).
    pub distinct_sectors: u64,
}

impl TraversalFootprint {
    /// Distinct bytes asked for (summed per request) / bytes of the sectors moved (summed per
    /// request): the efficiency without reuse between requests.
    ///
    /// ```
    /// use tilekit_tile::analysis::{cache, WarpAccess};
    /// let a = WarpAccess::from_offsets(4, 1, |lane| Some(2 * lane as i64)).unwrap();
    /// assert_eq!(cache::traversal_footprint(&[a.clone(), a]).efficiency(), 0.5);
    /// ```
    pub fn efficiency(&self) -> f64 {
        self.sum.efficiency()
    }
}

/// Lines, sectors and efficiency of a whole traversal: each request's [`footprint`] summed,
/// plus the distinct lines and sectors over all requests.
///
/// ```
/// use tilekit_tile::analysis::{cache, WarpAccess};
/// // 4 requests, each a column slice of a row-major 32×32 fp32 matrix
/// let col = |c: i64| WarpAccess::from_offsets(4, 1, move |lane| Some(lane as i64 * 32 + c)).unwrap();
/// let reqs: Vec<_> = (0..4).map(col).collect();
/// let t = cache::traversal_footprint(&reqs);
/// assert_eq!((t.sum.sectors, t.distinct_sectors, t.efficiency()), (128, 32, 0.125));
/// ```
pub fn traversal_footprint<'a>(
    requests: impl IntoIterator<Item = &'a WarpAccess>,
) -> TraversalFootprint {
    let mut t = TraversalFootprint::default();
    let mut lines = BTreeSet::new();
    let mut sectors = BTreeSet::new();
    for r in requests {
        let f = footprint(r);
        t.requests += 1;
        t.sum.lines += f.lines;
        t.sum.sectors += f.sectors;
        t.sum.bytes_requested += f.bytes_requested;
        t.sum.bytes_distinct += f.bytes_distinct;
        for (_, a) in r.active_lanes() {
            lines.insert(a / LINE_BYTES);
            sectors.insert(a / SECTOR_BYTES);
        }
    }
    t.distinct_lines = lines.len() as u64;
    t.distinct_sectors = sectors.len() as u64;
    t
}

/// Locality of a sequence of accesses (see the [module documentation](self)).
///
/// ```
/// use tilekit_tile::analysis::cache;
/// let s = cache::locality(&[0, 1, 2, 3, 32, 33], 4, 1).unwrap();
/// assert_eq!((s.steps, s.sequential, s.within_line, s.large_jumps), (5, 4, 0, 1));
/// assert_eq!((s.total_jump, s.distinct_lines, s.line_visits), (33, 2, 2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LocalityStats {
    /// Steps between consecutive accesses (accesses − 1).
    pub steps: u64,
    /// Steps of exactly ±1 element or ±1 vector.
    pub sequential: u64,
    /// Other steps that stay in the line of the previous access (including repeats).
    pub within_line: u64,
    /// Steps that leave the line of the previous access.
    pub large_jumps: u64,
    /// Sum of |Δ| over all steps, in elements.
    pub total_jump: u64,
    /// Distinct 128-byte lines touched.
    pub distinct_lines: u64,
    /// Times the walk is in a different line than at the previous access, counting the first
    /// access: the lines fetched by a cache that holds one line.
    pub line_visits: u64,
}

impl LocalityStats {
    /// Mean |Δ| per step, in elements (0 for fewer than two accesses).
    ///
    /// ```
    /// let s = tilekit_tile::analysis::cache::locality(&[0, 8, 16], 4, 1).unwrap();
    /// assert_eq!(s.mean_jump(), 8.0);
    /// ```
    pub fn mean_jump(&self) -> f64 {
        if self.steps == 0 {
            0.0
        } else {
            self.total_jump as f64 / self.steps as f64
        }
    }
}

/// Locality statistics of a sequence of element offsets (each the first element of an access
/// of `vector_len` elements of `elem_bytes` bytes). A step is sequential when `|Δ|` is 1 or
/// `vector_len`; otherwise it is a jump within the line when the new access starts in the
/// 128-byte line where the previous one started, and a large jump when it does not. Offsets may
/// be negative (lines are floor-divided).
///
/// Errors: `elem_bytes` or `vector_len` of 0.
///
/// ```
/// use tilekit_tile::analysis::cache;
/// // fp32 × 4 vectors along a row of 32 floats: every step is one vector
/// let offs: Vec<i64> = (0..8).map(|i| 4 * i).collect();
/// let s = cache::locality(&offs, 4, 4).unwrap();
/// assert_eq!((s.sequential, s.large_jumps, s.line_visits), (7, 0, 1));
/// assert!(cache::locality(&offs, 0, 4).is_err());
/// ```
pub fn locality(offsets: &[i64], elem_bytes: u32, vector_len: u32) -> Result<LocalityStats> {
    locality_of(offsets.iter().copied(), elem_bytes, vector_len)
}

/// [`locality`] of offsets produced one at a time (e.g. by walking a curve), so that a long
/// sequence is never materialised; memory grows only with the distinct lines touched.
///
/// ```
/// use tilekit_tile::analysis::cache;
/// let s = cache::locality_of((0..1000).map(|i| 4 * i), 4, 4).unwrap();
/// assert_eq!((s.steps, s.sequential, s.distinct_lines), (999, 999, 125));
/// ```
pub fn locality_of(
    offsets: impl IntoIterator<Item = i64>,
    elem_bytes: u32,
    vector_len: u32,
) -> Result<LocalityStats> {
    let ctx = "locality";
    if elem_bytes == 0 {
        return Err(TileError::invalid(ctx, "elem_bytes", elem_bytes, "must be >= 1"));
    }
    if vector_len == 0 {
        return Err(TileError::invalid(ctx, "vector_len", vector_len, "must be >= 1"));
    }
    // i128 keeps `offset · elem_bytes` exact for every i64 offset.
    let line = |o: i64| (i128::from(o) * i128::from(elem_bytes)).div_euclid(i128::from(LINE_BYTES));
    let vec = u128::from(vector_len);
    let mut s = LocalityStats::default();
    let mut lines = BTreeSet::new();
    let mut prev: Option<i64> = None;
    for o in offsets {
        let l = line(o);
        lines.insert(l);
        match prev {
            None => s.line_visits = 1,
            Some(p) => {
                let d = (i128::from(o) - i128::from(p)).unsigned_abs();
                s.steps += 1;
                s.total_jump = s.total_jump.saturating_add(u64::try_from(d).unwrap_or(u64::MAX));
                let same_line = line(p) == l;
                if d == 1 || d == vec {
                    s.sequential += 1;
                } else if same_line {
                    s.within_line += 1;
                } else {
                    s.large_jumps += 1;
                }
                if !same_line {
                    s.line_visits += 1;
                }
            }
        }
        prev = Some(o);
    }
    s.distinct_lines = lines.len() as u64;
    Ok(s)
}

/// Step classes of `docs-ck-tile/000`'s `access_pattern_analyzer`, by Manhattan distance in
/// index space.
///
/// ```
/// use tilekit_tile::analysis::cache::{manhattan_steps, ManhattanSteps};
/// let walk = [[0, 0], [0, 1], [1, 0], [9, 9]]; // distances 1, 2, 17
/// assert_eq!(manhattan_steps(&walk), ManhattanSteps { sequential: 1, cache_line_jumps: 1, large_jumps: 1 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ManhattanSteps {
    /// Steps of Manhattan distance ≤ 1.
    pub sequential: u64,
    /// Steps of distance 2..=16 (the document's "within cache line").
    pub cache_line_jumps: u64,
    /// Steps of distance > 16.
    pub large_jumps: u64,
}

/// The document's classifier, verbatim: for each pair of consecutive multi-indices, the sum of
/// `|Δ|` over dimensions is ≤ 1 → sequential, ≤ 16 → cache-line jump, otherwise large. It looks
/// only at index space, not at storage; see [`locality`] for the memory view.
///
/// ```
/// use tilekit_tile::analysis::cache::manhattan_steps;
/// // column-major walk of a 2×2 index space: (0,0) (1,0) (0,1) (1,1)
/// let s = manhattan_steps(&[[0, 0], [1, 0], [0, 1], [1, 1]]);
/// assert_eq!((s.sequential, s.cache_line_jumps), (2, 1));
/// ```
pub fn manhattan_steps<P: AsRef<[i64]>>(points: &[P]) -> ManhattanSteps {
    manhattan_steps_of(points)
}

/// [`manhattan_steps`] of points produced one at a time (nothing is materialised).
///
/// ```
/// use tilekit_tile::analysis::cache::manhattan_steps_of;
/// let s = manhattan_steps_of((0..5).map(|i| vec![i, 0]));
/// assert_eq!(s.sequential, 4);
/// ```
pub fn manhattan_steps_of<P: AsRef<[i64]>>(points: impl IntoIterator<Item = P>) -> ManhattanSteps {
    let mut s = ManhattanSteps::default();
    let mut prev: Option<P> = None;
    for p in points {
        let Some(q) = prev.replace(p) else { continue };
        let p = prev.as_ref().map_or(&[][..], AsRef::as_ref);
        let d: u128 = q
            .as_ref()
            .iter()
            .zip(p)
            .map(|(a, b)| (i128::from(*b) - i128::from(*a)).unsigned_abs())
            .sum();
        if d <= 1 {
            s.sequential += 1;
        } else if d <= 16 {
            s.cache_line_jumps += 1;
        } else {
            s.large_jumps += 1;
        }
    }
    s
}
