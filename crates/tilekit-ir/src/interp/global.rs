//! Global memory during a run, and global-memory race detection with bounded memory.
//!
//! ```text
//!   launch buffers ──► Global::ReadOnly(buf)      never stored to by the kernel: read freely,
//!                                                 no tracking (nothing can race on it)
//!                 └──► Global::Written(RwLock<buf>, AccessMap)
//!                         loads take the read lock, stores the write lock, once per instruction
//!                         (not per lane); stores go straight into the buffer: no copies, no logs
//!
//!   per block (bounded by what the block does, not by the buffers):
//!     epoch runs    every lane access of a written buffer, coalesced into Runs:
//!                   lanes t0, t0+1, … of one instruction at elements s, s+w, s+2w, … (width w)
//!     at bar.sync   sort the epoch's runs, sweep for overlaps with a different thread per
//!     and at exit   element and a write on either side ──► GlobalRace (same block)
//!                   then fold the runs into the block footprint: merged write / read intervals
//!     at exit       publish the footprint into the AccessMap ──► GlobalRace (two blocks)
//!
//!   AccessMap: 2 bits per element of a written buffer (W = some block wrote it, R = some block
//!   read it), 32 elements per AtomicU64; a block publishes each element once with one fetch_or
//!   per word; the later of two blocks sees the earlier one's bits:
//!     we write, word had W or R ─► race          we only read, word had W ─► race
//! ```
//!
//! **Why this shape.** A per-element shadow word (last writer, last readers) would name both
//! sides of a race directly but costs several bytes per element, more than a 16-bit buffer
//! itself. Within a block, accesses are ordered by barriers, so only one barrier interval
//! (epoch) needs exact per-thread records, and lanes of one vector instruction are contiguous in
//! every tiled kernel, so a run of `lanes × width` elements is one record: the softmax kernel's
//! block keeps 8 runs for its 16384 stores. Across blocks, order does not exist at all, so
//! every block's whole footprint matters; the bitmap answers "did another block touch this
//! element" for 2 bits per element of the *written* buffers only (a bf16 output: 1/8 of its
//! bytes; inputs: nothing), and a block's footprint lives only until it is published.
//!
//! The bitmap cannot say *which* block came first. When a cross-block race is found, the run
//! reports the lowest racing element (deterministic: every racing element is found by the
//! later of its two blocks, whatever the schedule), and a second, read-only pass re-runs the
//! blocks, stores suppressed, recording only the accesses to that element, to name both
//! blocks, threads and instructions. The IR has no atomics; when it gets them they are exempt.
//!
//! ```
//! use tilekit_ir::{KernelBuilder, ScalarType, Axis, interp::{run, Args, HostBuffer, InterpError}};
//! // every block writes y[tid]: blocks 0 and 1 both write element 0
//! let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
//! let y = b.ptr_param("y", ScalarType::I32).unwrap();
//! b.store(y, &b.thread_id(Axis::X), &[b.block_id(Axis::X)], None).unwrap();
//! let k = b.finish().unwrap();
//! let mut args = Args::new();
//! args.buffer(HostBuffer::from_i32(&[0; 32]));
//! match run(&k, [2, 1, 1], &mut args).unwrap_err() {
//!     InterpError::GlobalRace { mem, element, first, second } => {
//!         assert_eq!((mem.as_str(), element), ("y", 0));
//!         assert_eq!((first.block, second.block), ([0, 0, 0], [1, 0, 0]));
//!         assert!(first.write && second.write);
//!     }
//!     e => panic!("{e}"),
//! }
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use crate::interp::memory::HostBuffer;

/// One launch argument as the blocks see it.
pub(crate) enum Global {
    /// A scalar argument: no memory.
    Scalar,
    /// A buffer the kernel never stores to.
    ReadOnly(HostBuffer),
    /// A buffer the kernel stores to; the map is absent for single-block launches.
    Written(RwLock<HostBuffer>, Option<AccessMap>),
}

impl Global {
    /// The buffer back, after the run.
    pub(crate) fn into_buffer(self) -> Option<HostBuffer> {
        match self {
            Global::Scalar => None,
            Global::ReadOnly(b) => Some(b),
            Global::Written(b, _) => Some(b.into_inner().unwrap_or_else(|e| e.into_inner())),
        }
    }
}

/// Two bits per element (W, R) of a written buffer, shared by all blocks of a launch.
pub(crate) struct AccessMap {
    words: Vec<AtomicU64>,
}

const EVEN: u64 = 0x5555_5555_5555_5555;

/// Spreads bit `j` of `x` to bit `2j`.
fn spread(x: u32) -> u64 {
    let mut x = x as u64;
    x = (x | x << 16) & 0x0000_FFFF_0000_FFFF;
    x = (x | x << 8) & 0x00FF_00FF_00FF_00FF;
    x = (x | x << 4) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | x << 2) & 0x3333_3333_3333_3333;
    (x | x << 1) & EVEN
}

/// Gathers bit `2j` of `x` to bit `j` (the inverse of [`spread`]).
fn compact(x: u64) -> u32 {
    let mut x = x & EVEN;
    x = (x | x >> 1) & 0x3333_3333_3333_3333;
    x = (x | x >> 2) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | x >> 4) & 0x00FF_00FF_00FF_00FF;
    x = (x | x >> 8) & 0x0000_FFFF_0000_FFFF;
    (x | x >> 16) as u32
}

/// Per-word element masks of sorted, disjoint intervals `[s, e)`.
fn word_masks(ivs: &[(u64, u64)]) -> Vec<(u64, u32)> {
    let mut out: Vec<(u64, u32)> = Vec::new();
    for &(s, e) in ivs {
        if s >= e {
            continue;
        }
        for w in s / 32..=(e - 1) / 32 {
            let lo = s.max(w * 32) - w * 32;
            let hi = e.min(w * 32 + 32) - w * 32;
            let m = (u64::MAX >> (64 - (hi - lo))) << lo;
            match out.last_mut() {
                Some((lw, lm)) if *lw == w => *lm |= m as u32,
                _ => out.push((w, m as u32)),
            }
        }
    }
    out
}

impl AccessMap {
    /// A map for `len` elements, or `None` when the host cannot hold it.
    pub(crate) fn new(len: usize) -> Option<AccessMap> {
        let n = len.div_ceil(32);
        let mut words = Vec::new();
        words.try_reserve_exact(n).ok()?;
        words.extend((0..n).map(|_| AtomicU64::new(0)));
        Some(AccessMap { words })
    }

    /// Bytes the map of `len` elements takes.
    pub(crate) fn bytes_for(len: usize) -> usize {
        len.div_ceil(32) * 8
    }

    /// Publishes one block's footprint (sorted, merged element intervals it wrote and read);
    /// returns the lowest element another block already accessed in a conflicting way.
    pub(crate) fn publish(&self, writes: &[(u64, u64)], reads: &[(u64, u64)]) -> Option<u64> {
        let wm = word_masks(writes);
        let rm = word_masks(reads);
        let (mut i, mut j) = (0, 0);
        let mut first: Option<u64> = None;
        while i < wm.len() || j < rm.len() {
            let wi = wm.get(i).map_or(u64::MAX, |x| x.0);
            let wj = rm.get(j).map_or(u64::MAX, |x| x.0);
            let word = wi.min(wj);
            let mut w = 0u32;
            let mut r = 0u32;
            if wi == word {
                w = wm[i].1;
                i += 1;
            }
            if wj == word {
                r = rm[j].1;
                j += 1;
            }
            r &= !w;
            let Some(cell) = self.words.get(word as usize) else { continue };
            let old = cell.fetch_or(spread(w) | spread(r) << 1, Ordering::AcqRel);
            let (ow, or) = (compact(old), compact(old >> 1));
            let c = (w & (ow | or)) | (r & ow);
            if c != 0 && first.is_none() {
                first = Some(word * 32 + c.trailing_zeros() as u64);
            }
        }
        first
    }
}

/// Consecutive lanes of one execution of one memory instruction on a written buffer: thread
/// `thread0 + k` accessed elements `start + k·width .. start + (k+1)·width`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) param: u32,
    pub(crate) write: bool,
    pub(crate) start: u64,
    pub(crate) lanes: u32,
    pub(crate) width: u32,
    pub(crate) thread0: u32,
    pub(crate) inst: u32,
    /// Execution order of the instruction within the block.
    pub(crate) seq: u64,
}

impl Run {
    pub(crate) fn end(&self) -> u64 {
        self.start + self.lanes as u64 * self.width as u64
    }

    /// The thread that accessed element `e` (which the run covers).
    pub(crate) fn thread_of(&self, e: u64) -> u32 {
        self.thread0 + ((e - self.start) / self.width as u64) as u32
    }

    /// First element after `e` where the run's thread changes.
    fn next_boundary(&self, e: u64) -> u64 {
        self.start + ((e - self.start) / self.width as u64 + 1) * self.width as u64
    }

    /// The order of the access to element `e` in the block's execution.
    fn order(&self, e: u64) -> (u64, u32) {
        (self.seq, self.thread_of(e))
    }
}

/// The lowest element both runs cover with a different thread each.
fn first_conflict(x: &Run, y: &Run) -> Option<u64> {
    let lo = x.start.max(y.start);
    let hi = x.end().min(y.end());
    let mut e = lo;
    while e < hi {
        if x.thread_of(e) != y.thread_of(e) {
            return Some(e);
        }
        e = x.next_boundary(e).min(y.next_boundary(e));
    }
    None
}

/// A race found inside one block: the earlier and the later access, and the element.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EpochRace {
    pub(crate) first: (Run, u32),
    pub(crate) second: (Run, u32),
    pub(crate) element: u64,
}

/// Checks the runs of one barrier interval of one block: two threads accessing one element,
/// at least one writing. Reports the lowest such (param, element); deterministic.
pub(crate) fn check_epoch(runs: &mut Vec<Run>) -> Option<EpochRace> {
    if runs.len() < 2 {
        return None;
    }
    runs.sort_unstable_by_key(|r| (r.param, r.start, r.seq, r.thread0));
    // identical footprints of the same kind cannot race with each other: keep the earliest
    let mut keyed: Vec<Run> = runs.clone();
    keyed.sort_by_key(|r| (r.param, r.write, r.start, r.lanes, r.width, r.thread0, r.seq));
    keyed.dedup_by(|b, a| {
        (a.param, a.write, a.start, a.lanes, a.width, a.thread0)
            == (b.param, b.write, b.start, b.lanes, b.width, b.thread0)
    });
    if keyed.len() < runs.len() {
        keyed.sort_unstable_by_key(|r| (r.param, r.start, r.seq, r.thread0));
        *runs = keyed;
    }
    let mut best: Option<(u32, u64, Run, Run)> = None;
    let mut writes: Vec<usize> = Vec::new();
    let mut reads: Vec<usize> = Vec::new();
    for i in 0..runs.len() {
        let x = runs[i];
        if let Some((p, e, ..)) = best {
            if (x.param, x.start) > (p, e) {
                break;
            }
        }
        let live = |j: &usize| runs[*j].param == x.param && runs[*j].end() > x.start;
        writes.retain(live);
        reads.retain(live);
        let against: &[usize] = &writes;
        let check = |j: usize, best: &mut Option<(u32, u64, Run, Run)>| {
            let y = runs[j];
            if let Some(e) = first_conflict(&x, &y) {
                if best.is_none_or(|(p, be, ..)| (x.param, e) < (p, be)) {
                    *best = Some((x.param, e, y, x));
                }
            }
        };
        for &j in against {
            check(j, &mut best);
        }
        if x.write {
            for &j in &reads {
                check(j, &mut best);
            }
            writes.push(i);
        } else {
            reads.push(i);
        }
    }
    best.map(|(_, e, a, b)| {
        let (a, b) = if a.order(e) <= b.order(e) { (a, b) } else { (b, a) };
        EpochRace { first: (a, a.thread_of(e)), second: (b, b.thread_of(e)), element: e }
    })
}

/// Sorted, disjoint element intervals `[start, end)`.
pub(crate) type Intervals = Vec<(u64, u64)>;

/// Merged element intervals a block wrote and read, per written buffer.
#[derive(Debug, Default)]
pub(crate) struct Footprint {
    /// (param, write, start, end), sorted and merged per (param, write).
    ivs: Vec<(u32, bool, u64, u64)>,
}

impl Footprint {
    pub(crate) fn clear(&mut self) {
        self.ivs.clear();
    }

    /// Adds one epoch's runs and re-merges.
    pub(crate) fn add(&mut self, runs: &[Run]) {
        if runs.is_empty() {
            return;
        }
        self.ivs.extend(runs.iter().map(|r| (r.param, r.write, r.start, r.end())));
        self.ivs.sort_unstable();
        let mut out: Vec<(u32, bool, u64, u64)> = Vec::with_capacity(self.ivs.len());
        for &(p, w, s, e) in &self.ivs {
            match out.last_mut() {
                Some((lp, lw, _, le)) if *lp == p && *lw == w && s <= *le => *le = (*le).max(e),
                _ => out.push((p, w, s, e)),
            }
        }
        self.ivs = out;
    }

    /// The write and read intervals of buffer `param`.
    pub(crate) fn of(&self, param: u32) -> (Intervals, Intervals) {
        let mut w = vec![];
        let mut r = vec![];
        for &(p, wr, s, e) in &self.ivs {
            if p == param {
                if wr {
                    w.push((s, e));
                } else {
                    r.push((s, e));
                }
            }
        }
        (w, r)
    }

    /// The buffers the block touched.
    pub(crate) fn params(&self) -> Vec<u32> {
        let mut p: Vec<u32> = self.ivs.iter().map(|x| x.0).collect();
        p.dedup();
        p
    }
}
