//! Timeline probes: clock stamps of named points of a kernel, written by one thread of each
//! warpgroup into a global buffer, to see *where* the warps of a block wait.
//!
//! Aggregate counters (ncu's stall reasons) say that warps wait at barriers; they do not say
//! which barrier, in which warpgroup, for how long, or what the tensor cores did meanwhile. A
//! probe answers that: the kernel author marks the points around each wait and each issue
//! ([`Probe::begin`] / [`Probe::end`] of a *kind* — "K full wait", "S GEMM", …), and every
//! warpgroup's first thread appends `(clock, event)` to its own slice of the buffer.
//!
//! ```text
//!   buffer "probe": i64, blocks × warpgroups slices of `probe_cap` events, 2 words each
//!
//!   block (linear id bx + gx·(by + gy·bz)) ─┬─ warpgroup 0: (t, e) (t, e) … ──────┐ probe_cap
//!                                           ├─ warpgroup 1: (t, e) (t, e) …       │ pairs; past
//!                                           └─ warpgroup 2: …                     ┘ the end: none
//!
//!   mark(e):  t = clock (every thread; one CS2R)
//!             n = count[wg]           (shared i32; the leader's load, others masked off)
//!             leader ∧ n < cap:  buf[slice + 2n] = (t, e)     one predicated 16-byte store
//!             leader:            count[wg] = n + 1
//!   event e = 2·kind + (0 begin | 1 end)
//! ```
//!
//! The leader is the thread with linear id ≡ 0 (mod 128): lane 0 of warp 0 of the warpgroup.
//! Only it touches its warpgroup's counter, so the counter needs no barrier; a mark made where
//! the leader does not run (an `if` it is not in) records nothing. The marks are straight-line
//! code (no branch), so they may sit between `wgmma` issue and wait without splitting the
//! warpgroup's instruction stream.
//!
//! **Costs and caveats.** A mark is a clock read, a shared load and store, and a global store
//! in one thread of 128: tens of cycles on the critical path of the marked warp, so marks
//! distort what they measure a little — compare a probed run's total time with an unprobed
//! one. [`Clock::Sm`] (`%clock64`, SM cycles) is the default: a block's warps share an SM, so
//! its stamps compare within a block (not across blocks). `ptxas` may schedule independent
//! arithmetic across a clock read; the stamps bound what lies between them only up to that.
//! On the interpreter the "clock" is a count of clock reads ([`tilekit_ir::Op::Clock`]): the
//! events' order is meaningful there, their differences are not.
//!
//! Host side: [`ProbeLayout`] sizes the buffer and decodes it into [`Record`]s, [`spans`]
//! pairs begins with ends, and [`Timeline`] sums waits and busy time per warpgroup.

use tilekit_ir::lit;
use tilekit_ir::{Axis, Clock, CmpOp, KernelBuilder, Lit, MemRef, ScalarType, Val};

use crate::error::{KernelError, Result};

/// The builder's result: a probe's marks go inside builder closures (loops, ifs) as they are.
type IrResult<T> = std::result::Result<T, tilekit_ir::IrError>;

/// Threads of a warpgroup (the unit a probe stamps for).
pub const WARPGROUP: i64 = 128;

/// The value a host fills the buffer with before the launch: an entry whose event word is
/// still this was never written.
///
/// ```
/// assert_eq!(tilekit_kernel::probe::EMPTY, -1);
/// ```
pub const EMPTY: i64 = -1;

/// A kernel's timeline probe: the parameters `probe` (an `i64` global buffer) and `probe_cap`
/// (i32: events per warpgroup), a shared `i32` counter per warpgroup, and the leader thread's
/// predicate. See the [module docs](self).
///
/// ```
/// use tilekit_ir::{interp, Axis, Clock, KernelBuilder};
/// use tilekit_kernel::probe::{Probe, ProbeLayout, EMPTY};
/// let b = KernelBuilder::new("k", [256, 1, 1]).unwrap();
/// let p = Probe::new(&b, Clock::Sm).unwrap();
/// p.begin(&b, 3).unwrap();
/// p.end(&b, 3).unwrap();
/// let k = b.finish().unwrap();
/// let layout = ProbeLayout { blocks: 2, warpgroups: 2, cap: 4 };
/// let mut a = interp::Args::new();
/// a.buffer(interp::HostBuffer::from_i64(&vec![EMPTY; layout.len()])).int(4);
/// interp::run(&k, [2, 1, 1], &mut a).unwrap();
/// let recs = layout.decode(&a.take_buffer(0).unwrap().to_i64().unwrap()).unwrap();
/// assert_eq!(recs.len(), 2 * 2 * 2); // two events in each warpgroup of each block
/// assert!(recs.iter().all(|r| r.event == 6 || r.event == 7));
/// ```
#[derive(Debug, Clone)]
pub struct Probe {
    buf: MemRef,
    cap: Val,
    count: MemRef,
    wg: Val,
    slice: Val,
    leader: tilekit_ir::Pred,
    clock: Clock,
}

impl Probe {
    /// Declares the probe's parameters (`probe`, `probe_cap`, in that order, after those
    /// declared so far) and shared counters, and zeroes the counters. Call it where every
    /// thread of the block runs (before any branch), once per kernel, and after the kernel's
    /// other shared allocations: the counters then come last, and the probed kernel's arrays
    /// lie where the unprobed kernel's do.
    ///
    /// ```
    /// use tilekit_ir::{Clock, KernelBuilder};
    /// let b = KernelBuilder::new("k", [384, 1, 1]).unwrap();
    /// let p = tilekit_kernel::probe::Probe::new(&b, Clock::Global).unwrap();
    /// p.begin(&b, 0).unwrap();
    /// let k = b.finish().unwrap();
    /// let names: Vec<_> = k.params.iter().map(|p| p.name.as_str()).collect();
    /// assert_eq!(names, ["probe", "probe_cap"]);
    /// assert!(k.to_string().contains("mov.u64 %globaltimer"));
    /// ```
    pub fn new(b: &KernelBuilder, clock: Clock) -> IrResult<Probe> {
        let threads: i64 = b_threads(b);
        let wgs = (threads + WARPGROUP - 1) / WARPGROUP;
        let buf = b.ptr_param("probe", ScalarType::I64)?;
        let cap = b.scalar_param("probe_cap", ScalarType::I32)?;
        let count = b.shared("probe_count", ScalarType::I32, wgs as usize)?;
        let tid = linear_thread(b);
        let wg = tid.clone() / lit(WARPGROUP);
        let leader = b.cmp(CmpOp::Eq, &(tid % lit(WARPGROUP)), &lit(0))?;
        let block = b.block_id(Axis::X)
            + b.grid_dim(Axis::X)
                * (b.block_id(Axis::Y) + b.grid_dim(Axis::Y) * b.block_id(Axis::Z));
        let slice = (block * lit(wgs) + wg.clone()) * cap.clone() * lit(2);
        b.store(count, &wg, &[b.i32(0)], Some(&leader))?;
        Ok(Probe { buf, cap, count, wg, slice, leader, clock })
    }

    /// Appends `(clock, event)` to this warpgroup's slice (its leader thread does; nothing past
    /// `probe_cap` events). `event` must be below 2^62 (an [`IrError`](tilekit_ir::IrError)
    /// otherwise: the probe's methods give the builder's error type, so they go inside builder
    /// closures as they are).
    ///
    /// ```
    /// use tilekit_ir::{Clock, KernelBuilder};
    /// let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
    /// let p = tilekit_kernel::probe::Probe::new(&b, Clock::Sm).unwrap();
    /// p.mark(&b, 42).unwrap();
    /// assert!(p.mark(&b, u64::MAX).is_err());
    /// ```
    pub fn mark(&self, b: &KernelBuilder, event: u64) -> IrResult<()> {
        if event >= 1 << 62 {
            return Err(tilekit_ir::IrError::Invalid {
                op: "probe mark".into(),
                what: "event".into(),
                value: event.to_string(),
                valid: "below 2^62".into(),
            });
        }
        let t = b.clock(self.clock);
        let n = b.load(self.count, &self.wg, 1, Some(&self.leader))?.remove(0);
        // n for the leader, cap (never below cap) for the others: one compare
        let lim = b.select(&self.leader, &n, &self.cap)?;
        let room = b.cmp(CmpOp::Lt, &lim, &self.cap)?;
        let ev = b.konst(Lit::int(ScalarType::I64, event as i64).expect("below 2^62: an i64"));
        b.store(self.buf, &(self.slice.clone() + n.clone() * lit(2)), &[t, ev], Some(&room))?;
        b.store(self.count, &self.wg, &[n + lit(1)], Some(&self.leader))?;
        Ok(())
    }

    /// Marks the beginning of a span of `kind` (event `2·kind`).
    ///
    /// ```
    /// use tilekit_ir::{Clock, KernelBuilder};
    /// let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
    /// let p = tilekit_kernel::probe::Probe::new(&b, Clock::Sm).unwrap();
    /// p.begin(&b, 5).unwrap();
    /// assert!(b.finish().unwrap().to_string().contains("const.i64 10"));
    /// ```
    pub fn begin(&self, b: &KernelBuilder, kind: u32) -> IrResult<()> {
        self.mark(b, 2 * kind as u64)
    }

    /// Marks the end of a span of `kind` (event `2·kind + 1`).
    ///
    /// ```
    /// use tilekit_ir::{Clock, KernelBuilder};
    /// let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
    /// let p = tilekit_kernel::probe::Probe::new(&b, Clock::Sm).unwrap();
    /// p.end(&b, 5).unwrap();
    /// assert!(b.finish().unwrap().to_string().contains("const.i64 11"));
    /// ```
    pub fn end(&self, b: &KernelBuilder, kind: u32) -> IrResult<()> {
        self.mark(b, 2 * kind as u64 + 1)
    }
}

fn b_threads(b: &KernelBuilder) -> i64 {
    (0..3).map(|a| b.block_dim(axis(a)).const_int().unwrap_or(1)).product()
}

fn axis(i: usize) -> Axis {
    [Axis::X, Axis::Y, Axis::Z][i]
}

/// The linear thread index `tid.x + ntid.x·(tid.y + ntid.y·tid.z)`.
fn linear_thread(b: &KernelBuilder) -> Val {
    b.thread_id(Axis::X)
        + b.block_dim(Axis::X)
            * (b.thread_id(Axis::Y) + b.block_dim(Axis::Y) * b.thread_id(Axis::Z))
}

/// The shape of a probe buffer: `blocks × warpgroups` slices of `cap` events of two `i64`
/// words (clock, event).
///
/// ```
/// use tilekit_kernel::probe::ProbeLayout;
/// let l = ProbeLayout { blocks: 3, warpgroups: 3, cap: 100 };
/// assert_eq!(l.len(), 3 * 3 * 100 * 2);
/// assert_eq!(ProbeLayout::fitting(3, 3, 1800).unwrap().cap, 100);
/// assert!(ProbeLayout::fitting(3, 3, 17).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeLayout {
    /// Blocks of the launch.
    pub blocks: usize,
    /// Warpgroups per block (`⌈threads / 128⌉`).
    pub warpgroups: usize,
    /// Events per warpgroup (`probe_cap`).
    pub cap: usize,
}

/// One event a warpgroup's leader wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// Linear block id.
    pub block: usize,
    /// Warpgroup in the block.
    pub warpgroup: usize,
    /// Position in the warpgroup's slice (the order of its marks).
    pub index: usize,
    /// The clock's value.
    pub time: i64,
    /// The event (`2·kind + end`).
    pub event: u64,
}

impl ProbeLayout {
    /// `i64` words of the buffer.
    ///
    /// ```
    /// assert_eq!(tilekit_kernel::probe::ProbeLayout { blocks: 1, warpgroups: 2, cap: 5 }.len(), 20);
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.blocks * self.warpgroups * self.cap * 2
    }

    /// The largest `cap` whose buffer fits `words` (at least one event per warpgroup, and
    /// `blocks × warpgroups × cap × 2` below 2^31: the kernel indexes it in i32).
    ///
    /// ```
    /// let e = tilekit_kernel::probe::ProbeLayout::fitting(4, 3, 10).unwrap_err();
    /// assert!(e.to_string().contains("24"), "{e}");
    /// ```
    pub fn fitting(blocks: usize, warpgroups: usize, words: usize) -> Result<ProbeLayout> {
        let per = blocks.max(1) * warpgroups.max(1) * 2;
        let cap = words.min(i32::MAX as usize) / per;
        if cap == 0 {
            return Err(KernelError::invalid(
                "probe buffer",
                "words",
                words,
                format!(
                    "at least {per} (one event per warpgroup of {blocks} blocks × {warpgroups})"
                ),
            ));
        }
        Ok(ProbeLayout { blocks, warpgroups, cap })
    }

    /// The written events, by block, warpgroup and position; an entry whose event word is
    /// [`EMPTY`] ends its slice. A buffer of another length is an error.
    ///
    /// ```
    /// use tilekit_kernel::probe::{ProbeLayout, EMPTY};
    /// let l = ProbeLayout { blocks: 1, warpgroups: 2, cap: 2 };
    /// let r = l.decode(&[10, 0, 12, 1, 11, 4, EMPTY, EMPTY]).unwrap();
    /// assert_eq!(r.len(), 3);
    /// assert_eq!((r[2].warpgroup, r[2].time, r[2].event), (1, 11, 4));
    /// assert!(l.decode(&[0; 6]).is_err());
    /// ```
    pub fn decode(&self, words: &[i64]) -> Result<Vec<Record>> {
        if words.len() != self.len() {
            return Err(KernelError::invalid(
                "probe buffer",
                "length",
                words.len(),
                format!("{} words for {self:?}", self.len()),
            ));
        }
        let mut out = vec![];
        for block in 0..self.blocks {
            for warpgroup in 0..self.warpgroups {
                let at = (block * self.warpgroups + warpgroup) * self.cap * 2;
                for index in 0..self.cap {
                    let (time, event) = (words[at + 2 * index], words[at + 2 * index + 1]);
                    if event == EMPTY {
                        break;
                    }
                    out.push(Record { block, warpgroup, index, time, event: event as u64 });
                }
            }
        }
        Ok(out)
    }

    /// Whether a warpgroup's slice is full (its later marks, if any, were dropped).
    ///
    /// ```
    /// use tilekit_kernel::probe::{ProbeLayout, Record};
    /// let l = ProbeLayout { blocks: 1, warpgroups: 1, cap: 1 };
    /// let r = l.decode(&[5, 2]).unwrap();
    /// assert!(l.full(&r, 0, 0));
    /// ```
    pub fn full(&self, records: &[Record], block: usize, warpgroup: usize) -> bool {
        records.iter().filter(|r| r.block == block && r.warpgroup == warpgroup).count() == self.cap
    }
}

/// A begin/end pair of one kind in one warpgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Linear block id.
    pub block: usize,
    /// Warpgroup in the block.
    pub warpgroup: usize,
    /// The kind (`event / 2`).
    pub kind: u32,
    /// Clock at the begin mark.
    pub begin: i64,
    /// Clock at the end mark.
    pub end: i64,
}

/// Pairs each begin with the next end of the same kind in the same warpgroup (records in
/// slice order, as [`ProbeLayout::decode`] gives them); an end without a begin or a begin
/// without an end is dropped.
///
/// ```
/// use tilekit_kernel::probe::{spans, Record};
/// let r = |index, time, event| Record { block: 0, warpgroup: 1, index, time, event };
/// let s = spans(&[r(0, 10, 4), r(1, 12, 6), r(2, 15, 7), r(3, 20, 5), r(4, 21, 5)]);
/// assert_eq!(s.len(), 2);
/// assert_eq!((s[0].kind, s[0].begin, s[0].end), (3, 12, 15));
/// assert_eq!((s[1].kind, s[1].begin, s[1].end), (2, 10, 20));
/// ```
pub fn spans(records: &[Record]) -> Vec<Span> {
    let mut open: std::collections::HashMap<(usize, usize, u32), i64> = Default::default();
    let mut out = vec![];
    for r in records {
        let (kind, end) = ((r.event / 2) as u32, r.event % 2 == 1);
        let key = (r.block, r.warpgroup, kind);
        if !end {
            open.insert(key, r.time);
        } else if let Some(begin) = open.remove(&key) {
            out.push(Span { block: r.block, warpgroup: r.warpgroup, kind, begin, end: r.time });
        }
    }
    out
}

/// Per-warpgroup sums over a probe's spans: the share of each warpgroup's time spent in each
/// kind of span, and busy time as the union of intervals.
///
/// ```
/// use tilekit_kernel::probe::{Span, Timeline};
/// let s = |kind, begin, end| Span { block: 0, warpgroup: 0, kind, begin, end };
/// let t = Timeline::new(&[s(1, 0, 10), s(2, 10, 40), s(1, 40, 50), s(3, 0, 100)]);
/// assert_eq!(t.extent(0, 0), Some((0, 100)));
/// let (n, total) = t.sum(0, 0, 1);
/// assert_eq!((n, total), (2, 20));
/// assert_eq!(Timeline::union(&[(0, 10), (5, 20), (30, 40)]), 30);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    spans: Vec<Span>,
}

impl Timeline {
    /// The spans to sum over.
    ///
    /// ```
    /// assert!(tilekit_kernel::probe::Timeline::new(&[]).extent(0, 0).is_none());
    /// ```
    pub fn new(spans: &[Span]) -> Timeline {
        Timeline { spans: spans.to_vec() }
    }

    /// The first begin and last end of a warpgroup's spans.
    ///
    /// ```
    /// use tilekit_kernel::probe::{Span, Timeline};
    /// let t = Timeline::new(&[Span { block: 2, warpgroup: 1, kind: 0, begin: 5, end: 9 }]);
    /// assert_eq!(t.extent(2, 1), Some((5, 9)));
    /// ```
    pub fn extent(&self, block: usize, warpgroup: usize) -> Option<(i64, i64)> {
        let mine = self.spans.iter().filter(|s| s.block == block && s.warpgroup == warpgroup);
        mine.fold(None, |acc, s| match acc {
            None => Some((s.begin, s.end)),
            Some((a, b)) => Some((a.min(s.begin), b.max(s.end))),
        })
    }

    /// (count, total length) of a warpgroup's spans of `kind`.
    ///
    /// ```
    /// use tilekit_kernel::probe::{Span, Timeline};
    /// let t = Timeline::new(&[Span { block: 0, warpgroup: 0, kind: 4, begin: 5, end: 9 }]);
    /// assert_eq!(t.sum(0, 0, 4), (1, 4));
    /// assert_eq!(t.sum(0, 0, 3), (0, 0));
    /// ```
    pub fn sum(&self, block: usize, warpgroup: usize, kind: u32) -> (usize, i64) {
        self.spans
            .iter()
            .filter(|s| s.block == block && s.warpgroup == warpgroup && s.kind == kind)
            .fold((0, 0), |(n, t), s| (n + 1, t + (s.end - s.begin)))
    }

    /// The length of the union of intervals `[begin, end)`.
    ///
    /// ```
    /// assert_eq!(tilekit_kernel::probe::Timeline::union(&[(3, 4), (0, 2), (1, 3)]), 4);
    /// ```
    pub fn union(intervals: &[(i64, i64)]) -> i64 {
        let mut v: Vec<(i64, i64)> = intervals.iter().copied().filter(|(a, b)| b > a).collect();
        v.sort();
        let (mut total, mut cur): (i64, Option<(i64, i64)>) = (0, None);
        for (a, b) in v {
            cur = match cur {
                Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
                Some((ca, cb)) => {
                    total += cb - ca;
                    Some((a, b))
                }
                None => Some((a, b)),
            };
        }
        total + cur.map_or(0, |(a, b)| b - a)
    }

    /// The spans of one warpgroup, in slice order.
    ///
    /// ```
    /// use tilekit_kernel::probe::{Span, Timeline};
    /// let t = Timeline::new(&[Span { block: 0, warpgroup: 1, kind: 0, begin: 5, end: 9 }]);
    /// assert_eq!(t.of(0, 1).len(), 1);
    /// assert!(t.of(0, 0).is_empty());
    /// ```
    pub fn of(&self, block: usize, warpgroup: usize) -> Vec<Span> {
        self.spans
            .iter()
            .filter(|s| s.block == block && s.warpgroup == warpgroup)
            .copied()
            .collect()
    }
}
