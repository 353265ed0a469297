//! NVIDIA shared-memory bank conflicts of one warp request.
//!
//! # The model
//!
//! Shared memory is 32 banks, each 4 bytes wide: byte address `a` lies in 4-byte word `a / 4`,
//! and word `w` in bank `w mod 32`. Each bank delivers one word per cycle ("wavefront"), so a
//! request costs as many wavefronts as the busiest bank has *distinct* words to deliver:
//!
//! ```text
//!  word:   0   1   2  …  31 │ 32  33  34 … 63 │ 64 …
//!  bank:   0   1   2  …  31 │  0   1   2 … 31 │  0 …
//!
//!  stride 1  (lane l → word l):       banks 0..31 once each        → 1 wavefront
//!  stride 32 (lane l → word 32·l):    bank 0 holds 32 distinct words → 32 wavefronts (32-way)
//!  stride 33 (padded rows):           word 33·l → bank l            → 1 wavefront
//!  all lanes → word 7:                one word, broadcast           → 1 wavefront
//! ```
//!
//! A warp request is served in **phases**, by access size:
//!
//! | access | phases | lanes per phase |
//! |---|---|---|
//! | 4 bytes (`ld.shared.b32`) | 1 | 32 (lanes 0–31) |
//! | 8 bytes (`.v2.b32`, `.b64`) | 2 | 16 (half warps 0–15, 16–31) |
//! | 16 bytes (`.v4.b32`) | 4 | 8 (quarter warps 0–7, 8–15, 16–23, 24–31) |
//!
//! Within a phase an element covers `size / 4` consecutive words; lanes touching the same word
//! are served by one broadcast (no conflict); the phase costs
//! `max over banks of |distinct words in that bank|` wavefronts. The request costs the sum over
//! its phases ([`BankReport::transactions`]). The ideal is one wavefront per phase that has an
//! active lane ([`BankReport::ideal_transactions`]): a phase moves at most 32 distinct words
//! (8 lanes × 4 words, 16 × 2 or 32 × 1), which fit the 32 banks exactly once when conflict-free.
//!
//! This is the documented behaviour of NVIDIA's 32-bit banks (compute capability 5.0 and newer:
//! lanes reading the same 32-bit word do not conflict) with the usual phase rule for 64- and
//! 128-bit accesses; it is what Nsight Compute reports as shared-memory wavefronts for the
//! common cases. Stores are modelled the same way (two lanes *writing* one word is a race, not a
//! conflict; the model counts the word once).
//!
//! # Limits
//!
//! * 1- and 2-byte accesses are not modelled (they are rejected with a typed error); neither are
//!   atomics, `ldmatrix`/`stmatrix` (which have their own 8-address phases), TMA, or distributed
//!   shared memory.
//! * The phase split is applied uniformly; a given GPU may serve some 8- and 16-byte requests in
//!   fewer wavefronts (for example when phases can be merged without a conflict). The model has
//!   not been checked against a GPU in this project; Nsight Compute
//!   (`l1tex__data_pipe_lsu_wavefronts_mem_shared`) is the ground truth where it matters.
//! * Bank conflicts depend only on the **set of addresses in each phase**, not on which lane
//!   asks for which address: permuting the lanes of a phase (e.g. visiting a tile in Morton
//!   order instead of row-major order) cannot change the count. A swizzle helps only when it
//!   changes *where data is stored*.
//!
//! # The design documents' comparisons
//!
//! `docs-ck-tile/001` ("Bank Conflict Reduction") counts, for each bank, how many **lanes** hit
//! it (`bank_access[bank]++` per lane) and reports the maximum. That is not what the hardware
//! does: lanes hitting the same *word* are a broadcast. For its example — row-major
//! `lane → lane` vs Morton `lane → morton_decode(lane % 16)` over a 4×4 fp32 tile — the
//! document's counter gives 1-way vs 2-way (lanes `l` and `l + 16` read the same word); this
//! model gives **1 wavefront for both**: the 16 words of a 4×4 fp32 tile sit in 16 different
//! banks whatever the order of the lanes. The tests in `tests/it/analysis_banks.rs` reproduce both
//! counters, the document's kernel, a Morton-*stored* 32×32 tile, and CK's XOR LDS descriptor.
//!
//! ```
//! use tilekit_tile::analysis::{banks, WarpAccess};
//! // fp32, lane l → row l of a 32×33 padded tile: stride 33 words → conflict-free
//! let padded = WarpAccess::from_offsets(4, 1, |lane| Some(lane as i64 * 33)).unwrap();
//! let r = banks::analyze(&padded).unwrap();
//! assert_eq!((r.transactions, r.ideal_transactions, r.worst_conflict), (1, 1, 1));
//! ```

use std::ops::Range;

use super::{WarpAccess, WARP_SIZE};
use crate::error::{Result, TileError};

/// Number of shared-memory banks.
///
/// ```
/// assert_eq!(tilekit_tile::analysis::banks::NUM_BANKS, 32);
/// ```
pub const NUM_BANKS: usize = 32;

/// Width of a bank in bytes.
///
/// ```
/// assert_eq!(tilekit_tile::analysis::banks::BANK_BYTES, 4);
/// ```
pub const BANK_BYTES: u64 = 4;

/// A bank that must deliver more than one distinct word within a phase.
///
/// ```
/// use tilekit_tile::analysis::{banks, WarpAccess};
/// let a = WarpAccess::from_offsets(4, 1, |lane| (lane < 2).then_some(lane as i64 * 32)).unwrap();
/// let report = banks::analyze(&a).unwrap();
/// let c = &report.conflicts()[0];
/// assert_eq!((c.phase, c.bank, c.words.clone(), c.lanes.clone()), (0, 0, vec![0, 32], vec![0, 1]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankConflict {
    /// The phase (0-based; see the module table).
    pub phase: usize,
    /// The bank, `0..32`.
    pub bank: usize,
    /// The distinct 4-byte words (byte address / 4) it must deliver, ascending.
    pub words: Vec<u64>,
    /// The lanes touching those words, ascending.
    pub lanes: Vec<usize>,
}

/// The result of one phase of a request.
///
/// ```
/// use tilekit_tile::analysis::{banks, WarpAccess};
/// let v4 = WarpAccess::from_offsets(4, 4, |lane| Some(lane as i64 * 4)).unwrap();
/// let r = banks::analyze(&v4).unwrap();
/// assert_eq!(r.phases.len(), 4);
/// assert_eq!(r.phases[1].lanes, 8..16);
/// assert_eq!(r.phases[1].wavefronts, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankPhase {
    /// The lanes served in this phase.
    pub lanes: Range<usize>,
    /// Wavefronts this phase costs: the most distinct words any bank holds (0 when no lane of
    /// the phase is active).
    pub wavefronts: u32,
    /// Distinct words per bank in this phase (index = bank).
    pub bank_words: [u32; NUM_BANKS],
}

/// Bank-conflict report of one warp request. See the [module documentation](self) for the
/// model.
///
/// ```
/// use tilekit_tile::analysis::{banks, WarpAccess};
/// // fp32 column of a row-major 32×32 tile: all 32 lanes in bank 0, 32 distinct words
/// let col = WarpAccess::from_offsets(4, 1, |lane| Some(lane as i64 * 32)).unwrap();
/// let r = banks::analyze(&col).unwrap();
/// assert_eq!((r.transactions, r.ideal_transactions, r.worst_conflict), (32, 1, 32));
/// assert_eq!(r.bank_words[0], 32);
/// assert_eq!(r.conflicting_lanes().len(), 32);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankReport {
    /// Bytes per lane of the request (4, 8 or 16).
    pub access_bytes: u32,
    /// Wavefronts the request costs: the sum over phases.
    pub transactions: u32,
    /// Wavefronts a conflict-free request of the same shape would cost: one per phase with an
    /// active lane.
    pub ideal_transactions: u32,
    /// The worst n-way conflict: the most distinct words one bank delivers in one phase
    /// (1 = conflict-free, 0 = no active lane).
    pub worst_conflict: u32,
    /// Heat map: distinct words per bank, summed over phases (index = bank).
    pub bank_words: [u32; NUM_BANKS],
    /// Per-phase details.
    pub phases: Vec<BankPhase>,
    conflicts: Vec<BankConflict>,
}

impl BankReport {
    /// True when every phase costs one wavefront (or nothing).
    ///
    /// ```
    /// use tilekit_tile::analysis::{banks, WarpAccess};
    /// let a = WarpAccess::new([Some(0); 32], 4).unwrap(); // broadcast
    /// assert!(banks::analyze(&a).unwrap().is_conflict_free());
    /// ```
    pub fn is_conflict_free(&self) -> bool {
        self.transactions == self.ideal_transactions
    }

    /// Every bank that must deliver more than one distinct word in some phase, ordered by
    /// phase then bank.
    ///
    /// ```
    /// use tilekit_tile::analysis::{banks, WarpAccess};
    /// let a = WarpAccess::from_offsets(4, 1, |lane| Some(lane as i64)).unwrap();
    /// assert!(banks::analyze(&a).unwrap().conflicts().is_empty());
    /// ```
    pub fn conflicts(&self) -> &[BankConflict] {
        &self.conflicts
    }

    /// The lanes involved in a conflict (those touching a bank listed by
    /// [`BankReport::conflicts`]), ascending and without repeats.
    ///
    /// ```
    /// use tilekit_tile::analysis::{banks, WarpAccess};
    /// // lanes 0 and 1 read words 0 and 32 (both bank 0); lane 2 reads word 1
    /// let a = WarpAccess::from_offsets(4, 1, |lane| [Some(0), Some(32), Some(1)].get(lane).copied().flatten()).unwrap();
    /// assert_eq!(banks::analyze(&a).unwrap().conflicting_lanes(), vec![0, 1]);
    /// ```
    pub fn conflicting_lanes(&self) -> Vec<usize> {
        let mut lanes: Vec<usize> =
            self.conflicts.iter().flat_map(|c| c.lanes.iter().copied()).collect();
        lanes.sort_unstable();
        lanes.dedup();
        lanes
    }

    /// A text heat map: one row per phase with the distinct-word count of each bank
    /// (`.` for an idle bank), then the totals.
    ///
    /// ```
    /// use tilekit_tile::analysis::{banks, WarpAccess};
    /// let a = WarpAccess::from_offsets(4, 1, |lane| (lane < 4).then_some(lane as i64 * 16)).unwrap();
    /// let text = banks::analyze(&a).unwrap().heat_map();
    /// assert!(text.starts_with("phase lanes  banks 0..31 (distinct words)\n"));
    /// assert!(text.contains("0     0..32  2 . . . . . . . . . . . . . . . 2 . . . . . . . . . . . . . . .\n"));
    /// assert!(text.ends_with("2 wavefronts (ideal 1), worst 2-way\n"));
    /// ```
    pub fn heat_map(&self) -> String {
        let cell = |n: u32| if n == 0 { ".".to_string() } else { n.to_string() };
        let mut s = String::from("phase lanes  banks 0..31 (distinct words)\n");
        for (i, p) in self.phases.iter().enumerate() {
            let lanes = format!("{}..{}", p.lanes.start, p.lanes.end);
            let cells: Vec<String> = p.bank_words.iter().map(|&n| cell(n)).collect();
            s.push_str(&format!("{i:<5} {lanes:<6} {}\n", cells.join(" ")));
        }
        let cells: Vec<String> = self.bank_words.iter().map(|&n| cell(n)).collect();
        s.push_str(&format!("total        {}\n", cells.join(" ")));
        s.push_str(&format!(
            "{} wavefronts (ideal {}), worst {}-way\n",
            self.transactions, self.ideal_transactions, self.worst_conflict
        ));
        s
    }
}

/// Lanes per phase for an access size, or the typed error for sizes the model does not cover.
fn lanes_per_phase(access_bytes: u32) -> Result<usize> {
    match access_bytes {
        4 => Ok(32),
        8 => Ok(16),
        16 => Ok(8),
        other => Err(TileError::invalid(
            "shared-memory bank model",
            "access_bytes",
            other,
            "the model covers 4-, 8- and 16-byte accesses",
        )),
    }
}

/// Analyses one warp request against the 32-bank shared memory (see the
/// [module documentation](self)). Errors for 1- and 2-byte accesses, which the model does not
/// cover.
///
/// ```
/// use tilekit_tile::analysis::{banks, WarpAccess};
/// // 8-byte elements, lane l → element 2l: each half warp covers 64 words, 2 per used bank
/// let a = WarpAccess::from_offsets(8, 1, |lane| Some(lane as i64 * 2)).unwrap();
/// let r = banks::analyze(&a).unwrap();
/// assert_eq!((r.transactions, r.ideal_transactions, r.worst_conflict), (4, 2, 2));
/// assert!(banks::analyze(&WarpAccess::new([Some(0); 32], 2).unwrap()).is_err());
/// ```
pub fn analyze(access: &WarpAccess) -> Result<BankReport> {
    let per_phase = lanes_per_phase(access.access_bytes())?;
    let words_per_lane = u64::from(access.access_bytes()) / BANK_BYTES;
    let addrs = access.addresses();
    let mut phases = Vec::new();
    let mut conflicts = Vec::new();
    let mut bank_words = [0u32; NUM_BANKS];
    let (mut transactions, mut ideal, mut worst) = (0u32, 0u32, 0u32);

    for (phase, start) in (0..WARP_SIZE).step_by(per_phase).enumerate() {
        let lanes = start..start + per_phase;
        // (bank, word, lane) of every word touched in this phase.
        let mut touches: Vec<(usize, u64, usize)> = Vec::new();
        for lane in lanes.clone() {
            if let Some(a) = addrs[lane] {
                let first = a / BANK_BYTES;
                for w in first..first + words_per_lane {
                    touches.push(((w % NUM_BANKS as u64) as usize, w, lane));
                }
            }
        }
        touches.sort_unstable();
        let mut per_bank = [0u32; NUM_BANKS];
        let mut i = 0;
        while i < touches.len() {
            let bank = touches[i].0;
            let mut j = i;
            while j < touches.len() && touches[j].0 == bank {
                j += 1;
            }
            let group = &touches[i..j];
            let mut words: Vec<u64> = group.iter().map(|t| t.1).collect();
            words.dedup(); // sorted by (bank, word, lane): equal words are adjacent
            per_bank[bank] = words.len() as u32;
            if words.len() > 1 {
                let mut lanes: Vec<usize> = group.iter().map(|t| t.2).collect();
                lanes.sort_unstable();
                lanes.dedup();
                conflicts.push(BankConflict { phase, bank, words, lanes });
            }
            i = j;
        }
        let wavefronts = per_bank.iter().copied().max().unwrap_or(0);
        transactions += wavefronts;
        if !touches.is_empty() {
            ideal += 1;
        }
        worst = worst.max(wavefronts);
        for (total, n) in bank_words.iter_mut().zip(per_bank) {
            *total += n;
        }
        phases.push(BankPhase { lanes, wavefronts, bank_words: per_bank });
    }

    Ok(BankReport {
        access_bytes: access.access_bytes(),
        transactions,
        ideal_transactions: ideal,
        worst_conflict: worst,
        bank_words,
        phases,
        conflicts,
    })
}

/// [`analyze`] of the request built by [`WarpAccess::from_offsets`]: lane → scalar offset,
/// `vector_len` scalars of `scalar_bytes` per lane. The usual entry point for "a descriptor and
/// a thread → index map".
///
/// ```
/// use tilekit_tile::analysis::banks;
/// // fp32 row-major 32×32, lane l reads (l, 5): 32 words in bank 5
/// let r = banks::analyze_offsets(4, 1, |lane| Some(lane as i64 * 32 + 5)).unwrap();
/// assert_eq!(r.transactions, 32);
/// assert_eq!(r.bank_words[5], 32);
/// ```
pub fn analyze_offsets(
    scalar_bytes: u32,
    vector_len: u32,
    offset: impl Fn(usize) -> Option<i64>,
) -> Result<BankReport> {
    analyze(&WarpAccess::from_offsets(scalar_bytes, vector_len, offset)?)
}
