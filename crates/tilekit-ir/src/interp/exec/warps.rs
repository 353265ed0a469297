//! The **independent warp schedule**: each warp of a block (of a cluster) advances on its own,
//! one warp at a time, for kernels whose warps wait on each other — a warp-specialised
//! producer/consumer ring, where the producer warp's loop waits on `empty[s]` phases that only
//! the consumer warps' loop (the other branch of an `if` on the warp index) completes. The
//! lockstep executor cannot run those: it runs the `then` branch to its end before the `else`
//! branch starts.
//!
//! ```text
//!   when:   the kernel has a named barrier (bar.sync id, count / bar.arrive), or an
//!           mbarrier wait inside an `if` (Prog::warps; every other kernel runs in lockstep)
//!
//!   warps:  lanes [32w, 32w + 32) of each block of the cluster; within a warp, lockstep with
//!           active masks exactly as in the block executor (same registers, same op code)
//!   state:  per warp, a stack of frames (block, next instruction, mask, what ends it: the
//!           kernel, a loop iteration, a then / else branch) — a resumable program counter
//!
//!   schedule (round robin, each warp runs until it blocks or ends):
//!
//!     warp 0 ──run──► blocks: wait empty[0] parity 0 ───────────────────────► runs ──► …
//!     warp 4 ─────────────────run──► lands full[0], reads, bar.sync 1 (blocks) ──────► …
//!     …                                                    ▲
//!     warp 11 ───────────────────────────────────────run──► bar.sync 1 completes ──► arrive
//!                                                          empty[0] (256 of 256) completes
//!
//!   blocking ops, re-examined when the schedule comes back to the warp:
//!     mbarrier wait           polled again (copies on that barrier land first)
//!     bar.sync / named        arrival counted at once (32 per warp); the warp waits until the
//!     barrier.cluster         barrier's generation has moved on
//!
//!   deadlock: a full round in which no warp could make a step while some have not ended
//!             → InterpError::WarpDeadlock, listing each blocked warp, the op it waits in and
//!               the barrier it waits on (allocation, index, parity and the phase's counts;
//!               or barrier id, count and the warps that arrived)
//! ```
//!
//! The schedule is deterministic (the same order every run), and it is a legal schedule:
//! every warp runs until the hardware would stall it too.
//!
//! **Race detection** cannot use one barrier epoch for the whole block here: the producer and
//! the consumers synchronise pairwise, through mbarrier phases and named barriers, never all
//! at once. Shared memory is checked by **vector clocks** (happens-before), one per warp:
//!
//! ```text
//!   every sync op of warp w (an arrival, a completed wait, a barrier):  vc[w][w] = epoch;
//!                                                                       epoch += 1
//!   release (mbarrier arrive, bar.arrive / bar.sync):  the phase / generation joins vc[w]
//!   acquire (a wait returns, a barrier completes):     vc[w] joins the completed phase's clock
//!   an access (epoch e, by a lane of warp u) is ordered before warp w's next access
//!                                          ⇔  vc[w][u] ≥ e
//!   conflict = another thread's write (or, for a write, read) of the element not ordered before
//!   a bulk load issued into elements threads accessed unordered = AsyncBug::OverwriteWhileRead
//! ```
//!
//! (lanes of one warp are ordered only by the warp's own sync ops, as in lockstep by barriers.)
//! Each element keeps its last write and its two latest unordered reads, so every race reported
//! is real; a third concurrent reader can hide one. Global memory keeps the epoch rule: a sync
//! op ends the interval, and two accesses of one interval are unordered. The async checks
//! (copies landing, `expect_tx` counts, stores still reading, proxy fences) run unchanged.
//! `bar.sync` is named barrier 0 with the whole block as its count: a block-wide barrier after
//! some warps ended waits for them forever and is reported as a deadlock.
//!
//! Clusters work the same way, with warps of every block of the cluster in one schedule and
//! `barrier.cluster` as a barrier over all of them (reads of another block's shared memory keep
//! the cluster-epoch rule of the block executor).

use std::collections::HashMap;

use super::asyncexec::Pending;
use super::{BlockExec, Mask, R};
use crate::asyncop::AsyncOp;
use crate::interp::error::{BlockedWarp, InterpError};
use crate::interp::memory::Rec;
use crate::op::{Block, Inst, Op};

/// Whether a kernel body needs the warp schedule: a named barrier anywhere, or an mbarrier
/// wait inside an `if` (`in_if`: inside one already).
pub(crate) fn needs_warps(b: &Block, in_if: bool) -> bool {
    b.insts.iter().any(|i| match &i.op {
        Op::Async(AsyncOp::NamedBarrier { .. })
        | Op::WaitAcquire { .. }
        | Op::ClusterArrive
        | Op::ClusterWait => true,
        Op::Async(AsyncOp::MbarrierWait { .. }) => in_if,
        Op::If { then, else_, .. } => needs_warps(then, true) || needs_warps(else_, true),
        Op::For { body, .. } => needs_warps(body, in_if),
        _ => false,
    })
}

/// The happens-before test of the running warp: an access (epoch, lane) is ordered before
/// the warp's next access when the warp's vector clock has reached that epoch for the
/// accessing lane's warp.
#[derive(Clone, Copy)]
pub(crate) struct Hb<'v> {
    vc: &'v [u32],
    per: usize,
    wpc: usize,
}

impl<'v> Hb<'v> {
    /// The test for warp `cur` (`per` threads per block).
    pub(crate) fn new(vc: &'v [Vec<u32>], cur: usize, per: usize) -> Self {
        Hb { vc: vc.get(cur).map_or(&[], Vec::as_slice), per, wpc: per.div_ceil(32) }
    }

    /// The warp (schedule index) of cluster lane `t`.
    #[inline]
    pub(crate) fn warp(&self, t: u32) -> usize {
        let t = t as usize;
        t / self.per * self.wpc + t % self.per / 32
    }

    /// Whether access `r` is ordered before the running warp's next access.
    #[inline]
    pub(crate) fn ordered(&self, r: Rec) -> bool {
        self.vc.get(self.warp(r.thread)).is_none_or(|&c| c >= r.epoch)
    }
}

/// `a = max(a, b)` element-wise (a vector-clock join).
pub(crate) fn join(a: &mut Vec<u32>, b: &[u32]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, &y) in a.iter_mut().zip(b) {
        *x = (*x).max(y);
    }
}

/// What ends a frame.
enum Kind<'a> {
    /// The kernel body: the warp ends.
    Top,
    /// One iteration of a loop; `live` = the lanes still iterating.
    Loop { inst: &'a Inst, live: Vec<bool> },
    /// The then branch; the else branch runs on `me` next.
    Then { inst: &'a Inst, me: Mask },
    /// The else branch; the then branch ran on `mt`.
    Else { inst: &'a Inst, mt: Mask },
}

/// A block of instructions a warp is in.
struct Frame<'a> {
    block: &'a Block,
    pc: usize,
    mask: Mask,
    kind: Kind<'a>,
}

/// Why a warp does not run.
#[derive(Debug, Clone, Copy)]
enum Wait {
    /// An mbarrier wait (instruction id) that has not returned.
    Mbar(u32, Pending),
    /// Arrived at barrier `id` of `scope` (a block rank, or the cluster) in generation `gen`.
    Bar { inst: u32, scope: usize, id: u32, gen: u64 },
    /// Reached warpgroup-collective `inst` (a wgmma op) as warpgroup `group` (its first
    /// cluster lane / 128) in rendezvous generation `gen`: it runs once all the warpgroup's
    /// warps are there.
    Group { inst: u32, group: usize, gen: u64 },
    /// A counter wait (instruction id) whose counter has not reached its target.
    Counter(u32),
}

enum Status {
    Ready,
    Blocked(Wait),
    Done,
}

struct Warp<'a> {
    /// Block rank in the cluster.
    cta: usize,
    /// Warp index in its block.
    index: usize,
    /// Its lanes.
    lanes: std::ops::Range<usize>,
    frames: Vec<Frame<'a>>,
    status: Status,
    /// The cluster barrier's generation this warp arrived in (`barrier.cluster.arrive`) and
    /// has not yet waited for.
    cluster_gen: Option<u64>,
}

/// A named barrier (or `bar.sync`, `barrier.cluster`): the generation in progress.
#[derive(Default)]
struct NamedBar {
    count: u32,
    /// Warps (schedule indices) arrived in this generation.
    arrived: Vec<usize>,
    gen: u64,
    /// The join of the arrived warps' clocks.
    vc: Vec<u32>,
    /// The clock of the last completed generation (what its waiters acquire).
    done: Vec<u32>,
}

/// A warpgroup's rendezvous at a collective op (wgmma): who is there, with which lanes.
#[derive(Default)]
struct Rendezvous {
    inst: u32,
    arrived: Vec<usize>,
    mask: Vec<bool>,
    gen: u64,
}

struct Sched<'a> {
    warps: Vec<Warp<'a>>,
    bars: HashMap<(usize, u32), NamedBar>,
    groups: HashMap<usize, Rendezvous>,
}

enum Step {
    Ran,
    Blocked(Wait),
    Done,
}

impl<'a> BlockExec<'a> {
    /// Runs the block (cluster) under the warp schedule (see the [module docs](self)).
    pub(crate) fn run_warps(&mut self) -> R {
        let k: &'a crate::kernel::Kernel = self.k;
        let per = self.p.cta_threads;
        let mut warps = vec![];
        for cta in 0..self.p.ctas {
            for index in 0..per.div_ceil(32) {
                let lo = cta * per + index * 32;
                let lanes = lo..(lo + 32).min((cta + 1) * per);
                let mut on = vec![false; self.n];
                on[lanes.clone()].fill(true);
                let frame =
                    Frame { block: &k.body, pc: 0, mask: Mask::from_on(on), kind: Kind::Top };
                let status = Status::Ready;
                warps.push(Warp {
                    cta,
                    index,
                    lanes,
                    frames: vec![frame],
                    status,
                    cluster_gen: None,
                });
            }
        }
        let mut s = Sched { warps, bars: HashMap::new(), groups: HashMap::new() };
        let nw = s.warps.len();
        // every access before this block's first epoch is ordered before everything in it
        self.vc = vec![vec![self.base.saturating_sub(1); nw]; nw];
        self.release_clocks.clear();
        let (mut w, mut idle) = (0, 0);
        while s.warps.iter().any(|x| !matches!(x.status, Status::Done)) {
            if idle > nw {
                return Err(self.deadlock(&s));
            }
            let runnable = match s.warps[w].status {
                Status::Done => false,
                Status::Ready | Status::Blocked(Wait::Mbar(..) | Wait::Counter(_)) => true,
                Status::Blocked(Wait::Bar { scope, id, gen, .. }) => {
                    s.bars.get(&(scope, id)).is_some_and(|b| b.gen > gen)
                }
                Status::Blocked(Wait::Group { group, gen, .. }) => {
                    s.groups.get(&group).is_some_and(|g| g.gen > gen)
                }
            };
            let mut progressed = false;
            if runnable {
                self.cur_warp = w;
                if let Status::Blocked(Wait::Bar { scope, id, .. }) = s.warps[w].status {
                    // released by the generation's last arrival: acquire its clock
                    let done = &s.bars[&(scope, id)].done;
                    join(&mut self.vc[w], done);
                }
                s.warps[w].status = Status::Ready;
                loop {
                    match self.warp_step(&mut s, w)? {
                        Step::Ran => progressed = true,
                        Step::Blocked(wait) => {
                            s.warps[w].status = Status::Blocked(wait);
                            break;
                        }
                        Step::Done => {
                            if s.warps[w].cluster_gen.is_some() {
                                return Err(self.unwaited(w, &s));
                            }
                            s.warps[w].status = Status::Done;
                            progressed = true;
                            break;
                        }
                    }
                }
            }
            idle = if progressed { 0 } else { idle + 1 };
            w = (w + 1) % nw;
        }
        Ok(())
    }

    /// One step of warp `w`: an instruction, or the end of a block.
    fn warp_step(&mut self, s: &mut Sched<'a>, w: usize) -> R<Step> {
        let warp = &mut s.warps[w];
        let Some(top) = warp.frames.last_mut() else { return Ok(Step::Done) };
        if top.pc == top.block.insts.len() {
            let frame = warp.frames.pop().expect("a top frame");
            let Frame { block, mask, kind, .. } = frame;
            match kind {
                Kind::Top => return Ok(Step::Done),
                Kind::Loop { inst, mut live } => {
                    let Op::For { hi, step, body, .. } = &inst.op else { unreachable!() };
                    self.for_next(inst, &mask, body, *step)?;
                    if self.for_live(&mut live, body.args[0], *hi) {
                        let mask = Mask::from_on(live.clone());
                        warp.frames.push(Frame {
                            block,
                            pc: 0,
                            mask,
                            kind: Kind::Loop { inst, live },
                        });
                    } else {
                        let parent = warp.frames.last_mut().expect("a loop has a parent");
                        self.for_exit(inst, &parent.mask, body)?;
                        parent.pc += 1;
                    }
                }
                Kind::Then { inst, me } => {
                    let Op::If { else_, .. } = &inst.op else { unreachable!() };
                    if me.any() {
                        let kind = Kind::Else { inst, mt: mask };
                        warp.frames.push(Frame { block: else_, pc: 0, mask: me, kind });
                    } else {
                        let parent = warp.frames.last_mut().expect("an if has a parent");
                        self.if_merge(inst, &parent.mask, (&mask, &me))?;
                        parent.pc += 1;
                    }
                }
                Kind::Else { inst, mt } => {
                    let parent = warp.frames.last_mut().expect("an if has a parent");
                    self.if_merge(inst, &parent.mask, (&mt, &mask))?;
                    parent.pc += 1;
                }
            }
            return Ok(Step::Ran);
        }
        let inst: &'a Inst = &top.block.insts[top.pc];
        self.steps += 1;
        match &inst.op {
            Op::For { lo, hi, step, init, body } => {
                let mut live = self.for_enter(inst, &top.mask, (*lo, *hi, *step), init, body)?;
                if self.for_live(&mut live, body.args[0], *hi) {
                    let mask = Mask::from_on(live.clone());
                    let kind = Kind::Loop { inst, live };
                    warp.frames.push(Frame { block: body, pc: 0, mask, kind });
                } else {
                    self.for_exit(inst, &top.mask, body)?;
                    top.pc += 1;
                }
            }
            Op::If { cond, then, else_ } => {
                let (mt, me) = self.if_split(inst, *cond, &top.mask)?;
                if mt.any() {
                    warp.frames.push(Frame {
                        block: then,
                        pc: 0,
                        mask: mt,
                        kind: Kind::Then { inst, me },
                    });
                } else if me.any() {
                    warp.frames.push(Frame {
                        block: else_,
                        pc: 0,
                        mask: me,
                        kind: Kind::Else { inst, mt },
                    });
                } else {
                    self.if_merge(inst, &top.mask, (&mt, &me))?;
                    top.pc += 1;
                }
            }
            Op::Async(AsyncOp::MbarrierWait { bar, index, parity }) => {
                match self.mbar_poll(inst, *bar, *index, *parity, &top.mask)? {
                    None => top.pc += 1,
                    Some(p) => return Ok(Step::Blocked(Wait::Mbar(self.p.inst_id(inst), p))),
                }
            }
            Op::WaitAcquire { .. } => {
                if self.counter_poll(inst, &top.mask)? {
                    top.pc += 1;
                } else {
                    return Ok(Step::Blocked(Wait::Counter(self.p.inst_id(inst))));
                }
            }
            Op::Barrier | Op::ClusterBarrier | Op::Async(AsyncOp::NamedBarrier { .. }) => {
                top.pc += 1;
                if let Some(wait) = self.bar_arrive(s, w, inst)? {
                    return Ok(Step::Blocked(wait));
                }
            }
            Op::ClusterArrive => {
                top.pc += 1;
                let scope = self.p.ctas;
                let gen = s.bars.get(&(scope, 0)).map_or(0, |b| b.gen);
                if s.warps[w].cluster_gen.is_some() {
                    return Err(self.split_misuse(inst, w, s, "arrives twice without waiting"));
                }
                self.bar_arrive(s, w, inst)?;
                s.warps[w].cluster_gen = Some(gen);
            }
            Op::ClusterWait => {
                let Some(gen) = s.warps[w].cluster_gen.take() else {
                    return Err(self.split_misuse(inst, w, s, "waits without having arrived"));
                };
                let scope = self.p.ctas;
                let top = s.warps[w].frames.last_mut().expect("a running warp has frames");
                top.pc += 1;
                match s.bars.get(&(scope, 0)) {
                    // the generation it arrived in is complete: acquire its clock
                    Some(b) if b.gen > gen => join(&mut self.vc[w], &b.done),
                    _ => {
                        let inst = self.p.inst_id(inst);
                        return Ok(Step::Blocked(Wait::Bar { inst, scope, id: 0, gen }));
                    }
                }
            }
            Op::Wgmma(op) if !matches!(op, crate::wgmma::WgmmaOp::Desc { .. }) => {
                top.pc += 1;
                if let Some(wait) = self.group_arrive(s, w, inst)? {
                    return Ok(Step::Blocked(wait));
                }
            }
            _ => {
                self.exec(inst, &top.mask)?;
                top.pc += 1;
            }
        }
        Ok(Step::Ran)
    }

    /// Warp `w` arrives at a barrier; `Some` when it must wait for the generation to complete.
    fn bar_arrive(&mut self, s: &mut Sched<'a>, w: usize, inst: &Inst) -> R<Option<Wait>> {
        let warp = &s.warps[w];
        let (scope, id, count, sync) = match &inst.op {
            Op::Barrier => (warp.cta, 0, self.p.cta_threads.div_ceil(32) as u32 * 32, true),
            Op::ClusterBarrier => {
                let all = self.p.cta_threads.div_ceil(32) * self.p.ctas;
                (self.p.ctas, 0, all as u32 * 32, true)
            }
            Op::ClusterArrive => {
                let all = self.p.cta_threads.div_ceil(32) * self.p.ctas;
                (self.p.ctas, 0, all as u32 * 32, false)
            }
            Op::Async(AsyncOp::NamedBarrier { id, count, sync }) => (warp.cta, *id, *count, *sync),
            _ => unreachable!("barriers only"),
        };
        let mask = &warp.frames.last().expect("a running warp has frames").mask;
        if let Some(t) = warp.lanes.clone().find(|&t| !mask.on[t]) {
            return Err(InterpError::BarrierDivergence {
                inst: self.text(inst),
                block: self.block_of(t),
                thread: self.thread(t),
            });
        }
        let (block, index) = (self.cta_block(warp.cta), warp.index);
        let b = s.bars.entry((scope, id)).or_default();
        let misuse = |detail: String| InterpError::NamedBarrier {
            inst: self.text(inst),
            id,
            block,
            warp: index,
            detail,
        };
        if b.arrived.is_empty() {
            b.count = count;
        } else if b.count != count {
            let others: Vec<usize> = b.arrived.iter().map(|&x| s.warps[x].index).collect();
            return Err(misuse(format!(
                "this warp arrives with a count of {count} threads, but warps {others:?} \
                 arrived in this generation with {}; every arrival of a generation must give \
                 the same count",
                b.count
            )));
        }
        if b.arrived.contains(&w) {
            return Err(misuse(format!(
                "this warp already arrived in the generation in progress ({} of {count} \
                 threads so far): a warp arrives once per generation (bar.arrive twice without \
                 the barrier completing?)",
                b.arrived.len() * 32
            )));
        }
        b.arrived.push(w);
        self.warp_tick()?;
        join(&mut b.vc, &self.vc[w]);
        if b.arrived.len() * 32 >= b.count as usize {
            b.arrived.clear();
            b.gen += 1;
            b.done = std::mem::take(&mut b.vc);
            join(&mut self.vc[w], &b.done);
            if matches!(inst.op, Op::ClusterBarrier | Op::ClusterArrive) {
                self.cluster_start = self.epoch;
            }
            return Ok(None);
        }
        let gen = b.gen;
        Ok(sync.then_some(Wait::Bar { inst: self.p.inst_id(inst), scope, id, gen }))
    }

    /// Warp `w` reaches a warpgroup-collective op (`.sync.aligned` across the warpgroup: the
    /// wgmma ops): the warpgroup's last warp to get there runs it once for all the warps'
    /// lanes, as the hardware does; the others wait. Warps of one warpgroup at different
    /// collective ops is [`AsyncBug::WarpgroupDivergence`](crate::interp::AsyncBug).
    fn group_arrive(&mut self, s: &mut Sched<'a>, w: usize, inst: &Inst) -> R<Option<Wait>> {
        let per = self.p.cta_threads;
        let warp = &s.warps[w];
        let first = warp.lanes.start;
        let group = first / 128;
        // warps of this warpgroup in the block (a block of fewer than 128 threads has one)
        let lo = (first / 128 * 128).max(warp.cta * per);
        let hi = (lo + 128).min((warp.cta + 1) * per);
        let members = (hi - lo).div_ceil(32);
        let id = self.p.inst_id(inst);
        let mask = warp.frames.last().expect("a running warp has frames").mask.on.clone();
        let n = self.n;
        let g = s.groups.entry(group).or_default();
        if g.arrived.is_empty() {
            g.inst = id;
            g.mask = vec![false; n];
        } else if g.inst != id {
            let other = self.p.insts.get(g.inst as usize).map(|i| self.text(i));
            let detail = format!(
                "warp {} reaches this wgmma op while warps {:?} of its warpgroup wait at `{}`: \
                 the warps of a warpgroup execute its wgmma ops together, in the same order",
                warp.index,
                g.arrived.iter().map(|&x| s.warps[x].index).collect::<Vec<_>>(),
                other.unwrap_or_default()
            );
            let kind = crate::interp::error::AsyncBug::WarpgroupDivergence;
            return Err(self.wg_error(kind, inst, String::new(), 0, first, detail));
        }
        g.arrived.push(w);
        for (a, &b) in g.mask.iter_mut().zip(&mask) {
            *a |= b;
        }
        if g.arrived.len() < members {
            return Ok(Some(Wait::Group { inst: id, group, gen: g.gen }));
        }
        let arrived = std::mem::take(&mut g.arrived);
        let all = Mask::from_on(std::mem::take(&mut g.mask));
        g.gen += 1;
        // the warpgroup's warps synchronise here: each acquires the others' clocks
        let mut clock = vec![];
        for &x in &arrived {
            join(&mut clock, &self.vc[x]);
        }
        for &x in &arrived {
            join(&mut self.vc[x], &clock);
        }
        self.exec(inst, &all)?;
        Ok(None)
    }

    /// A synchronisation op of the running warp (an arrival, a completed wait): the warp's
    /// accesses so far are ordered before whatever acquires its clock from here on, and its
    /// accesses from here on are in a later epoch. Ends the global-memory race interval.
    pub(crate) fn warp_tick(&mut self) -> R {
        self.end_epoch()?;
        let w = self.cur_warp;
        self.vc[w][w] = self.epoch;
        self.epoch = self.epoch.saturating_add(1);
        Ok(())
    }

    /// Warp `w` ended after `barrier.cluster.arrive` without the matching wait.
    fn unwaited(&self, w: usize, s: &Sched<'a>) -> InterpError {
        let warp = &s.warps[w];
        InterpError::NamedBarrier {
            inst: "barrier.cluster.arrive".into(),
            id: 0,
            block: self.cta_block(warp.cta),
            warp: warp.index,
            detail: "this warp ends after arriving without barrier.cluster.wait: its block may \
                     leave while its peers still read its shared memory; wait before the end"
                .into(),
        }
    }

    /// A split cluster barrier used out of order by warp `w`.
    fn split_misuse(&self, inst: &Inst, w: usize, s: &Sched<'a>, what: &str) -> InterpError {
        let warp = &s.warps[w];
        InterpError::NamedBarrier {
            inst: self.text(inst),
            id: 0,
            block: self.cta_block(warp.cta),
            warp: warp.index,
            detail: format!(
                "this warp {what}: every warp arrives at barrier.cluster.arrive once, then \
                 waits at barrier.cluster.wait once, before it arrives again"
            ),
        }
    }

    /// The deadlock error: every warp that has not ended, with what it waits on.
    fn deadlock(&self, s: &Sched<'a>) -> InterpError {
        let inst_text = |id: u32| self.p.insts.get(id as usize).map(|i| self.text(i));
        let warps = s
            .warps
            .iter()
            .filter_map(|x| {
                let Status::Blocked(wait) = x.status else { return None };
                let (inst, waits) = match wait {
                    Wait::Mbar(inst, p) => (inst, self.pending_text(&p)),
                    Wait::Counter(inst) => {
                        (inst, "a global counter to reach its target (ld.acquire spin)".to_string())
                    }
                    Wait::Group { inst, group, .. } => {
                        let g = s.groups.get(&group);
                        let arrived: Vec<usize> = g.map_or(vec![], |g| {
                            g.arrived.iter().map(|&a| s.warps[a].index).collect()
                        });
                        (inst, format!("its warpgroup's other warps (here: {arrived:?})"))
                    }
                    Wait::Bar { inst, scope, id, .. } => {
                        let b = s.bars.get(&(scope, id));
                        let (count, arrived) = b.map_or((0, vec![]), |b| {
                            (b.count, b.arrived.iter().map(|&a| s.warps[a].index).collect())
                        });
                        let what = if scope == self.p.ctas && self.p.ctas > 1 {
                            "the cluster barrier".to_string()
                        } else {
                            format!("named barrier {id}")
                        };
                        let waits = format!(
                            "{what} (count {count}): {} of {count} threads arrived in this \
                             generation (warps {arrived:?})",
                            arrived.len() * 32
                        );
                        (inst, waits)
                    }
                };
                Some(BlockedWarp {
                    block: self.cta_block(x.cta),
                    warp: x.index,
                    inst: inst_text(inst).unwrap_or_default(),
                    waits,
                })
            })
            .collect();
        InterpError::WarpDeadlock { block: self.block, warps }
    }
}
