//! The block executor: every thread of a block in lockstep, instruction by instruction, with a
//! per-thread active mask for structured control flow.
//!
//! ```text
//!   threads 0..n of one block (warps = groups of 32 consecutive linear ids)
//!   inst k:    for t in active: regs[result][t] = f(regs[operands][t])
//!   for:       active' = active ∧ (iv < hi); run the body on active' until active' is empty
//!   if:        then on active ∧ c, else on active ∧ ¬c, results merged per thread
//!   bar.sync:  every thread of the block must be active (else BarrierDivergence); epoch += 1
//!   warp ops:  every lane of the warp must be active (else WarpDivergence)
//! ```
//!
//! A **cluster** kernel runs one cluster at a time: the threads of all its blocks in lockstep
//! (lane `t` is thread `t mod n` of the block of rank `t / n`), each block with its own shared
//! memory. `barrier.cluster` is a barrier over all of them; `ld.shared::cluster` reads another
//! block's shared memory and is checked against the owner's accesses by *cluster epoch*:
//!
//! ```text
//!   owner writes s[i] ── barrier.cluster ── peer reads s[i] ── barrier.cluster ── owner writes / exits
//!   └────────── must be separated ───────┘ └──────────── must be separated ─────────────┘
//! ```
//!
//! (Between blocks of one cluster, global-memory accesses are compared by the `bar.sync`
//! intervals of the lockstep schedule, like threads of one block.)
//!
//! **Warp-specialised kernels** — a kernel with a named barrier (`bar.sync id, count`), or an
//! mbarrier wait inside an `if` (a producer warp's loop in one branch waiting on arrivals the
//! consumer warps' loop in the other branch makes) — cannot run in lockstep: the then branch
//! would run to its end before the else branch starts. Those run under the **independent warp
//! schedule** ([`warps`]): each warp keeps its own stack of frames (a resumable program
//! counter), runs until it blocks on a barrier, and yields to the next warp; a round in which
//! no warp can move is a deadlock, reported with every blocked warp and what it waits on.
//!
//! ```text
//!   lockstep (every other kernel)            warp schedule (Prog::warps)
//!   ─────────────────────────────            ───────────────────────────
//!   all lanes ─ inst k ─ inst k+1 ─ …        warp 0 ─ inst … ─ wait empty (blocks)
//!                                            warp 1 ─ inst … ─ wait full: lands, reads, arrive
//!                                            warp 0 ─ (phase done) ─ inst … ─ …
//! ```
//!
//! Running the whole block in lockstep is a legal schedule for any kernel whose barriers are
//! uniform (the only kind structured control flow with `bar.sync` permits), and the race
//! detectors do not depend on the schedule: they compare accesses by barrier epoch, not by the
//! order they happened in. Registers start *poisoned* (uninitialised); poison spreads through
//! arithmetic and is an error where it would change behaviour (addresses, masks, conditions,
//! bounds, values stored to global memory).
//!
//! **Speed.** The per-lane work is what costs: a block of 256 threads runs each instruction
//! 256 times. So everything that depends only on the instruction is decided once per
//! instruction, outside the lane loop:
//!
//! ```text
//!   registers   one row of n lanes per SSA value (Vec<u64>), reused by every block a worker
//!               runs (rayon map_init: one executor per worker, no allocation per block)
//!   poison      per row: Clean | All | Mixed(per-lane flags) — a clean row costs nothing, and
//!               an op on clean operands under a full mask writes no poison flags at all
//!   dispatch    (op, type) matched once per instruction into a monomorphised lane loop over
//!               the same evaluation functions as the build-time folder (crate::eval), so the
//!               loop body is a few machine instructions, bit-identical to the folder
//!   masks       full (0..n, vectorisable) or a list of active lanes
//!   memory      a buffer is looked up and locked once per instruction, not per lane
//! ```

use std::collections::HashMap;

use crate::eval::{binary_inline, cmp_inline, fma_inline, unary_inline};
use crate::eval::{cvt_inline, eval_binary, eval_cmp};
use crate::interp::error::{Access, GlobalAccess, InterpError};
use crate::interp::global::{check_epoch, EpochRace, Footprint, Global, Run};
use crate::interp::memory::{Conflict, HostBuffer, Rec, SharedMem};
use crate::kernel::Kernel;
use crate::op::{BinOp, Block, CmpOp, Inst, MemSpace, Op, SpecialReg, UnOp, ValueId};
use crate::types::ScalarType;

/// A shared-memory read by lane `rec.thread`, race-checked by barrier epoch (lockstep) or by
/// the warps' vector clocks (the warp schedule).
macro_rules! shared_read {
    ($s:ident, $cta:expr, $alloc:expr, $i:expr, $rec:expr) => {
        if $s.p.warps {
            let hb = crate::interp::exec::warps::Hb::new(&$s.vc, $s.cur_warp, $s.p.cta_threads);
            $s.shared[$cta][$alloc].read_hb($i, $rec, $s.base, |r| hb.ordered(r))
        } else {
            $s.shared[$cta][$alloc].read($i, $rec, $s.base)
        }
    };
}

/// A shared-memory write, race-checked like [`shared_read`].
macro_rules! shared_write {
    ($s:ident, $cta:expr, $alloc:expr, $i:expr, $bits:expr, $init:expr, $rec:expr) => {
        if $s.p.warps {
            let hb = crate::interp::exec::warps::Hb::new(&$s.vc, $s.cur_warp, $s.p.cta_threads);
            $s.shared[$cta][$alloc].write_hb($i, $bits, $init, $rec, |r| hb.ordered(r))
        } else {
            $s.shared[$cta][$alloc].write($i, $bits, $init, $rec)
        }
    };
}

mod asyncexec;
mod warps;
mod wgmmaexec;

type R<T = ()> = Result<T, InterpError>;

/// What every block of a launch shares: the kernel, its arguments, the instruction table.
pub(crate) struct Prog<'a> {
    pub(crate) k: &'a Kernel,
    /// Lanes run together: threads per block × blocks per cluster.
    pub(crate) n: usize,
    /// Threads per block.
    pub(crate) cta_threads: usize,
    /// Blocks per unit of execution: per cluster, or the whole grid for kernels whose blocks
    /// wait on each other through global counters ([`Op::WaitAcquire`]).
    pub(crate) ctas: usize,
    /// The unit's dims in blocks: the cluster dims, or the grid (see `ctas`).
    pub(crate) unit: [u32; 3],
    pub(crate) grid: [u32; 3],
    pub(crate) scalars: Vec<u64>,
    /// Tensor-map arguments, by parameter index.
    pub(crate) maps: Vec<Option<crate::tma::TensorMapArg>>,
    pub(crate) globals: &'a [Global],
    pub(crate) insts: Vec<&'a Inst>,
    inst_ids: HashMap<usize, u32>,
    /// Whether any written buffer has a cross-block map (more than one block).
    cross_block: bool,
    /// Whether the kernel has asynchronous ops (only then are shared accesses checked against
    /// them).
    pub(crate) has_async: bool,
    /// Whether the kernel has wgmma ops (only then are accumulators and operand writes
    /// tracked).
    pub(crate) has_wgmma: bool,
    /// Byte offset of each shared allocation (the layout wgmma descriptors address).
    pub(crate) smem_offsets: Vec<usize>,
    /// Whether blocks run under the independent warp schedule ([`warps`]): the kernel has a
    /// named barrier, or an mbarrier wait inside an `if`.
    pub(crate) warps: bool,
}

impl<'a> Prog<'a> {
    pub(crate) fn new(
        k: &'a Kernel,
        grid: [u32; 3],
        scalars: Vec<u64>,
        globals: &'a [Global],
        schedule: crate::interp::Schedule,
    ) -> Self {
        let mut insts: Vec<&'a Inst> = vec![];
        k.body.walk(&mut |i| insts.push(i));
        let inst_ids =
            insts.iter().enumerate().map(|(n, i)| (*i as *const Inst as usize, n as u32)).collect();
        let cross_block = globals.iter().any(|g| matches!(g, Global::Written(_, Some(_))));
        let mut grid_unit = false;
        k.body.walk(&mut |i| grid_unit |= matches!(i.op, Op::WaitAcquire { .. }));
        let unit = if grid_unit { grid } else { k.cluster_dim };
        let cta_threads = k.threads_per_block();
        let ctas = unit.iter().map(|&d| d as usize).product::<usize>();
        let mut has_async = false;
        let mut has_wgmma = false;
        k.body.walk(&mut |i| has_wgmma |= matches!(i.op, Op::Wgmma(_)));
        k.body.walk(&mut |i| has_async |= matches!(i.op, Op::Async(_)) || has_wgmma);
        let warps = match schedule {
            _ if grid_unit => true,
            crate::interp::Schedule::Auto => warps::needs_warps(&k.body, false),
            crate::interp::Schedule::Lockstep => false,
            crate::interp::Schedule::Warps => true,
        };
        Prog {
            k,
            n: cta_threads * ctas,
            cta_threads,
            ctas,
            unit,
            grid,
            scalars,
            maps: vec![],
            globals,
            insts,
            inst_ids,
            cross_block,
            has_async,
            has_wgmma,
            smem_offsets: crate::wgmma::shared_offsets(k).0,
            warps,
        }
    }

    fn inst_id(&self, inst: &Inst) -> u32 {
        self.inst_ids.get(&(inst as *const Inst as usize)).copied().unwrap_or(0)
    }
}

/// Which lanes execute.
pub(crate) struct Mask {
    /// Per thread.
    pub(crate) on: Vec<bool>,
    /// The active threads, ascending.
    pub(crate) active: Vec<u32>,
    /// Every thread is active.
    pub(crate) full: bool,
}

impl Mask {
    fn all(n: usize) -> Mask {
        Mask { on: vec![true; n], active: (0..n as u32).collect(), full: true }
    }

    fn from_on(on: Vec<bool>) -> Mask {
        let active: Vec<u32> = (0..on.len() as u32).filter(|&t| on[t as usize]).collect();
        let full = active.len() == on.len();
        Mask { on, active, full }
    }

    fn any(&self) -> bool {
        !self.active.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PState {
    /// No lane is poisoned (the flags are stale).
    Clean,
    /// Every lane is poisoned (the flags are stale).
    All,
    /// The flags hold.
    Mixed,
}

#[derive(Debug, Clone)]
struct Reg {
    bits: Vec<u64>,
    poison: Vec<bool>,
    state: PState,
}

impl Reg {
    fn materialize(&mut self) {
        match self.state {
            PState::Clean => self.poison.fill(false),
            PState::All => self.poison.fill(true),
            PState::Mixed => {}
        }
        self.state = PState::Mixed;
    }

    fn normalize(&mut self) {
        if self.state == PState::Mixed {
            if !self.poison.iter().any(|&p| p) {
                self.state = PState::Clean;
            } else if self.poison.iter().all(|&p| p) {
                self.state = PState::All;
            }
        }
    }
}

/// An access to the probed element (attribution pass).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hit {
    pub(crate) thread: u32,
    pub(crate) inst: u32,
    pub(crate) write: bool,
}

/// One worker's executor; runs one block at a time.
pub(crate) struct BlockExec<'a> {
    pub(crate) p: &'a Prog<'a>,
    pub(crate) k: &'a Kernel,
    pub(crate) n: usize,
    /// The first block of the cluster being run (the block, without clusters).
    pub(crate) block: [u32; 3],
    regs: Vec<Reg>,
    /// Per block of the cluster (by rank), its shared allocations.
    shared: Vec<Vec<SharedMem>>,
    /// Per block, allocation and element: the last read by another block of the cluster.
    remote: Vec<Vec<Vec<Rec>>>,
    /// The latest remote read (owner rank, allocation, element, the read).
    last_remote: Option<(usize, u32, usize, Rec)>,
    epoch: u32,
    base: u32,
    /// The first epoch after the latest `barrier.cluster` (or of the cluster).
    cluster_start: u32,
    /// Asynchronous ops in flight.
    asy: asyncexec::AsyncState,
    /// wgmma groups in flight.
    wg: wgmmaexec::WgState,
    runs: Vec<Run>,
    foot: Footprint,
    pub(crate) steps: u64,
    /// Warp schedule: per warp, its vector clock (per warp, the latest epoch of that warp's
    /// synchronisation known to be ordered before this warp's next access).
    vc: Vec<Vec<u32>>,
    /// Per counter element (parameter, element): the join of the vector clocks of the warps'
    /// release adds to it, acquired by a warp whose acquire load or wait reads it (the
    /// release → acquire happens-before edge of the race checker).
    release_clocks: HashMap<(u32, usize), Vec<u32>>,
    /// Warp schedule: the warp running.
    cur_warp: usize,
    /// Attribution pass: stores are not applied; accesses to (param, element) are recorded.
    pub(crate) probe: Option<(u32, u64)>,
    pub(crate) hits: Vec<Hit>,
    /// The unit's clock ([`Op::Clock`]): not time, a count of the clock reads executed so far
    /// in this block (or cluster), 0 at its start.
    clock: u64,
}

macro_rules! dispatch_binary {
    ($s:ident, $r:ident, $a:ident, $b:ident, $m:ident, $op:expr, $ty:expr;
     $( $t:ident: [$($o:ident),*] );* ) => {
        match ($op, $ty) {
            $($( (BinOp::$o, ScalarType::$t) => $s.map2($r, $a, $b, $m, |x, y| {
                binary_inline(BinOp::$o, ScalarType::$t, x, y).unwrap_or(0)
            }), )*)*
            (op, ty) => $s.map2($r, $a, $b, $m, |x, y| binary_inline(op, ty, x, y).unwrap_or(0)),
        }
    };
}

macro_rules! dispatch_unary {
    ($s:ident, $r:ident, $a:ident, $m:ident, $op:expr, $ty:expr;
     $( $t:ident: [$($o:ident),*] );* ) => {
        match ($op, $ty) {
            $($( (UnOp::$o, ScalarType::$t) => $s.map1($r, $a, $m, |x| {
                unary_inline(UnOp::$o, ScalarType::$t, x).unwrap_or(0)
            }), )*)*
            (op, ty) => $s.map1($r, $a, $m, |x| unary_inline(op, ty, x).unwrap_or(0)),
        }
    };
}

macro_rules! dispatch_cmp {
    ($s:ident, $r:ident, $a:ident, $b:ident, $m:ident, $op:expr, $ty:expr;
     [$($t:ident),*]; [$($o:ident),*] ) => {
        dispatch_cmp!(@ty $s, $r, $a, $b, $m, $op, $ty; [$($t),*]; [$($o),*])
    };
    (@ty $s:ident, $r:ident, $a:ident, $b:ident, $m:ident, $op:expr, $ty:expr;
     [$($t:ident),*]; $os:tt ) => {
        match $ty {
            $( ScalarType::$t => dispatch_cmp!(@op $s, $r, $a, $b, $m, $op, $t; $os), )*
            ty => { let op = $op; $s.map2($r, $a, $b, $m, |x, y| cmp_inline(op, ty, x, y)) }
        }
    };
    (@op $s:ident, $r:ident, $a:ident, $b:ident, $m:ident, $op:expr, $t:ident; [$($o:ident),*]) => {
        match $op {
            $( CmpOp::$o => $s.map2($r, $a, $b, $m, |x, y| cmp_inline(CmpOp::$o, ScalarType::$t, x, y)), )*
        }
    };
}

macro_rules! dispatch_cvt {
    ($s:ident, $r:ident, $a:ident, $m:ident, $from:expr, $to:expr; $( ($f:ident, $t:ident) ),* ) => {
        match ($from, $to) {
            $( (ScalarType::$f, ScalarType::$t) => {
                $s.map1($r, $a, $m, |x| cvt_inline(ScalarType::$f, ScalarType::$t, x))
            } )*
            (f, t) => $s.map1($r, $a, $m, |x| cvt_inline(f, t, x)),
        }
    };
}

impl<'a> BlockExec<'a> {
    pub(crate) fn new(p: &'a Prog<'a>) -> Self {
        let n = p.n;
        let reg = Reg { bits: vec![0; n], poison: vec![true; n], state: PState::All };
        BlockExec {
            p,
            k: p.k,
            n,
            block: [0; 3],
            regs: vec![reg; p.k.values.len()],
            shared: (0..p.ctas)
                .map(|_| p.k.shared.iter().map(|s| SharedMem::new(s.elem, s.len)).collect())
                .collect(),
            remote: if p.ctas > 1 {
                (0..p.ctas)
                    .map(|_| p.k.shared.iter().map(|s| vec![Rec::default(); s.len]).collect())
                    .collect()
            } else {
                vec![]
            },
            last_remote: None,
            epoch: 0,
            base: 1,
            cluster_start: 1,
            asy: asyncexec::AsyncState::default(),
            wg: wgmmaexec::WgState::default(),
            vc: vec![],
            release_clocks: HashMap::new(),
            cur_warp: 0,
            runs: vec![],
            foot: Footprint::default(),
            steps: 0,
            probe: None,
            hits: vec![],
            clock: 0,
        }
    }

    /// Runs one block (the cluster whose first block is `block`, for cluster kernels); returns
    /// the lowest (param, element) where publishing its global footprint found another block's
    /// conflicting access.
    pub(crate) fn run(&mut self, block: [u32; 3]) -> R<Option<(u32, u64)>> {
        self.block = block;
        self.steps = 0;
        self.clock = 0;
        for r in &mut self.regs {
            r.state = PState::All;
        }
        if self.epoch >= u32::MAX / 2 {
            for s in self.shared.iter_mut().flatten() {
                s.reset();
            }
            for r in self.remote.iter_mut().flatten() {
                r.fill(Rec::default());
            }
            self.epoch = 0;
        }
        self.epoch += 1;
        self.base = self.epoch;
        self.cluster_start = self.epoch;
        self.last_remote = None;
        self.asy.clear();
        if self.p.has_wgmma {
            self.wg.clear(self.k.values.len());
        }
        self.runs.clear();
        self.foot.clear();
        self.hits.clear();
        if self.p.warps {
            self.run_warps()?;
        } else {
            let all = Mask::all(self.n);
            let k = self.k;
            self.run_insts(&k.body, &all)?;
        }
        self.end_epoch()?;
        self.async_end()?;
        self.wgmma_end()?;
        if let Some((owner, s, e, rec)) = self.last_remote {
            if rec.epoch >= self.cluster_start {
                let inst = self.p.insts.get(rec.inst as usize).map(|i| self.text(i));
                return Err(InterpError::ClusterExit {
                    mem: self.k.shared[s as usize].name.clone(),
                    element: e,
                    owner: self.cta_block(owner),
                    reader: Box::new(GlobalAccess {
                        block: self.block_of(rec.thread as usize),
                        thread: self.thread(rec.thread as usize),
                        inst: inst.unwrap_or_default(),
                        write: false,
                    }),
                });
            }
        }
        if self.probe.is_some() || !self.p.cross_block {
            return Ok(None);
        }
        let mut found: Option<(u32, u64)> = None;
        for param in self.foot.params() {
            if let Some(Global::Written(_, Some(map))) = self.p.globals.get(param as usize) {
                let (w, r) = self.foot.of(param);
                if let Some(e) = map.publish(&w, &r) {
                    found = Some(found.map_or((param, e), |f| f.min((param, e))));
                }
            }
        }
        Ok(found)
    }

    /// The block of lane `t` (its rank in the cluster is `t / threads per block`).
    pub(crate) fn block_of(&self, t: usize) -> [u32; 3] {
        self.cta_block(t / self.p.cta_threads)
    }

    /// The block of cluster rank `r`.
    pub(crate) fn cta_block(&self, r: usize) -> [u32; 3] {
        let [cx, cy, _] = self.p.unit.map(|d| d as usize);
        let [bx, by, bz] = self.block;
        [bx + (r % cx) as u32, by + ((r / cx) % cy) as u32, bz + (r / (cx * cy)) as u32]
    }

    /// Thread index in its block of lane `t`.
    pub(crate) fn thread(&self, t: usize) -> [u32; 3] {
        let t = t % self.p.cta_threads;
        let [bx, by, _] = self.k.block_dim;
        let (bx, by) = (bx as usize, by as usize);
        [(t % bx) as u32, ((t / bx) % by) as u32, (t / (bx * by)) as u32]
    }

    pub(crate) fn text(&self, inst: &Inst) -> String {
        crate::dump::inst_text(self.k, inst)
    }

    #[inline]
    pub(crate) fn get(&self, v: ValueId, t: usize) -> u64 {
        self.regs[v.0 as usize].bits[t]
    }

    #[inline]
    pub(crate) fn is_poison(&self, v: ValueId, t: usize) -> bool {
        let r = &self.regs[v.0 as usize];
        match r.state {
            PState::Clean => false,
            PState::All => true,
            PState::Mixed => r.poison[t],
        }
    }

    #[inline]
    pub(crate) fn set(&mut self, v: ValueId, t: usize, bits: u64, poison: bool) {
        let r = &mut self.regs[v.0 as usize];
        r.bits[t] = bits;
        match (r.state, poison) {
            (PState::Clean, false) | (PState::All, true) => {}
            (PState::Mixed, _) => r.poison[t] = poison,
            _ => {
                r.materialize();
                r.poison[t] = poison;
            }
        }
    }

    /// After per-lane writes: a row whose flags are uniform becomes Clean / All again.
    pub(crate) fn normalize(&mut self, v: ValueId) {
        self.regs[v.0 as usize].normalize();
    }

    /// Copies row `src` into row `dst` (every lane).
    fn copy_row(&mut self, dst: ValueId, src: ValueId) {
        if dst == src {
            return;
        }
        let mut d = std::mem::take(&mut self.regs[dst.0 as usize].bits);
        let mut dp = std::mem::take(&mut self.regs[dst.0 as usize].poison);
        let s = &self.regs[src.0 as usize];
        d.copy_from_slice(&s.bits);
        if s.state == PState::Mixed {
            dp.copy_from_slice(&s.poison);
        }
        let state = s.state;
        let r = &mut self.regs[dst.0 as usize];
        r.bits = d;
        r.poison = dp;
        r.state = state;
    }

    /// The value, or a Poison error naming its role.
    #[inline(always)]
    pub(crate) fn defined(&self, inst: &Inst, v: ValueId, t: usize, what: &str) -> R<u64> {
        if self.is_poison(v, t) {
            return Err(self.poison_error(inst, v, t, what));
        }
        Ok(self.get(v, t))
    }

    #[cold]
    #[inline(never)]
    fn poison_error(&self, inst: &Inst, v: ValueId, t: usize, what: &str) -> InterpError {
        InterpError::Poison {
            inst: self.text(inst),
            value: v.to_string(),
            what: what.into(),
            block: self.block_of(t),
            thread: self.thread(t),
        }
    }

    fn run_insts(&mut self, b: &Block, m: &Mask) -> R {
        for inst in &b.insts {
            self.steps += 1;
            if self.p.has_wgmma {
                self.wg_before(inst, m)?;
            }
            self.exec(inst, m)?;
            if self.p.has_wgmma {
                self.wg_after(inst);
            }
        }
        Ok(())
    }

    fn special(&self, reg: SpecialReg, t: usize) -> u64 {
        let th = self.thread(t);
        let v = match reg {
            SpecialReg::ThreadId(a) => th[a.index()],
            SpecialReg::BlockDim(a) => self.k.block_dim[a.index()],
            SpecialReg::BlockId(a) => self.block_of(t)[a.index()],
            SpecialReg::GridDim(a) => self.p.grid[a.index()],
            SpecialReg::LaneId => (t % self.p.cta_threads % 32) as u32,
            SpecialReg::WarpId => (t % self.p.cta_threads / 32) as u32,
            SpecialReg::ClusterCtaRank => (t / self.p.cta_threads) as u32,
            SpecialReg::ClusterSize => self.k.cluster_size() as u32,
        };
        v as u64
    }

    /// Result poison = any operand's, lane by lane (`r` is not among `ops`).
    fn poison_from(&mut self, r: ValueId, ops: &[ValueId], m: &Mask) {
        let state = |v: &ValueId| self.regs[v.0 as usize].state;
        let clean = ops.iter().all(|v| state(v) == PState::Clean);
        let ri = r.0 as usize;
        if m.full {
            if clean {
                self.regs[ri].state = PState::Clean;
                return;
            }
            if ops.iter().any(|v| state(v) == PState::All) {
                self.regs[ri].state = PState::All;
                return;
            }
            let mut p = std::mem::take(&mut self.regs[ri].poison);
            for (t, x) in p.iter_mut().enumerate() {
                *x = ops.iter().any(|&v| self.is_poison(v, t));
            }
            self.regs[ri].poison = p;
            self.regs[ri].state = PState::Mixed;
            self.regs[ri].normalize();
        } else {
            if clean && self.regs[ri].state == PState::Clean {
                return;
            }
            self.regs[ri].materialize();
            let mut p = std::mem::take(&mut self.regs[ri].poison);
            for &t in &m.active {
                let t = t as usize;
                p[t] = ops.iter().any(|&v| self.is_poison(v, t));
            }
            self.regs[ri].poison = p;
        }
    }

    #[inline(always)]
    fn map1(&mut self, r: ValueId, a: ValueId, m: &Mask, f: impl Fn(u64) -> u64) {
        let mut out = std::mem::take(&mut self.regs[r.0 as usize].bits);
        let xa = &self.regs[a.0 as usize].bits;
        if m.full {
            for (o, &x) in out.iter_mut().zip(xa) {
                *o = f(x);
            }
        } else {
            for &t in &m.active {
                let t = t as usize;
                out[t] = f(xa[t]);
            }
        }
        self.regs[r.0 as usize].bits = out;
    }

    #[inline(always)]
    fn map2(&mut self, r: ValueId, a: ValueId, b: ValueId, m: &Mask, f: impl Fn(u64, u64) -> u64) {
        let mut out = std::mem::take(&mut self.regs[r.0 as usize].bits);
        let xa = &self.regs[a.0 as usize].bits;
        let xb = &self.regs[b.0 as usize].bits;
        if m.full {
            for ((o, &x), &y) in out.iter_mut().zip(xa).zip(xb) {
                *o = f(x, y);
            }
        } else {
            for &t in &m.active {
                let t = t as usize;
                out[t] = f(xa[t], xb[t]);
            }
        }
        self.regs[r.0 as usize].bits = out;
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn map3(
        &mut self,
        r: ValueId,
        a: ValueId,
        b: ValueId,
        c: ValueId,
        m: &Mask,
        f: impl Fn(u64, u64, u64) -> u64,
    ) {
        let mut out = std::mem::take(&mut self.regs[r.0 as usize].bits);
        let xa = &self.regs[a.0 as usize].bits;
        let xb = &self.regs[b.0 as usize].bits;
        let xc = &self.regs[c.0 as usize].bits;
        if m.full {
            for (((o, &x), &y), &z) in out.iter_mut().zip(xa).zip(xb).zip(xc) {
                *o = f(x, y, z);
            }
        } else {
            for &t in &m.active {
                let t = t as usize;
                out[t] = f(xa[t], xb[t], xc[t]);
            }
        }
        self.regs[r.0 as usize].bits = out;
    }

    fn fill(&mut self, r: ValueId, bits: u64) {
        let reg = &mut self.regs[r.0 as usize];
        reg.bits.fill(bits);
        reg.state = PState::Clean;
    }

    fn exec(&mut self, inst: &Inst, m: &Mask) -> R {
        let r = inst.results.first().copied().unwrap_or(ValueId(0));
        match &inst.op {
            Op::Const(l) => self.fill(r, l.bits()),
            Op::Param(i) => {
                let v = self.p.scalars.get(*i as usize).copied().unwrap_or(0);
                self.fill(r, v)
            }
            Op::Special(reg) => {
                let mut out = std::mem::take(&mut self.regs[r.0 as usize].bits);
                for (t, o) in out.iter_mut().enumerate() {
                    *o = self.special(*reg, t);
                }
                self.regs[r.0 as usize].bits = out;
                self.regs[r.0 as usize].state = PState::Clean;
            }
            Op::Unary(op, a) => {
                let (a, ty) = (*a, self.k.ty(*a));
                dispatch_unary!(self, r, a, m, *op, ty;
                    F32: [Neg, Abs, Exp2Approx, Exp2ApproxFtz, RcpApprox, RsqrtApprox, Lg2Approx, Sqrt];
                    I32: [Neg, Not, Abs]; I64: [Neg, Not, Abs]; U32: [Not]; Pred: [Not]);
                self.poison_from(r, &[a], m);
            }
            Op::Binary(op, a, b) => {
                let (a, b, ty) = (*a, *b, self.k.ty(*a));
                if ty.is_int() && matches!(op, BinOp::Div | BinOp::Rem) {
                    self.checked_division(inst, *op, ty, r, a, b, m)?;
                } else {
                    dispatch_binary!(self, r, a, b, m, *op, ty;
                        F32: [Add, Sub, Mul, Div, Min, Max];
                        F64: [Add, Sub, Mul, Div, Min, Max];
                        I32: [Add, Sub, Mul, Min, Max, And, Or, Xor, Shl, Shr];
                        U32: [Add, Sub, Mul, Min, Max, And, Or, Xor, Shl, Shr];
                        I64: [Add, Sub, Mul, Min, Max, And, Or, Xor, Shl, Shr];
                        Pred: [And, Or, Xor]);
                }
                self.poison_from(r, &[a, b], m);
            }
            Op::Fma(a, b, c) => {
                let (a, b, c, ty) = (*a, *b, *c, self.k.ty(*a));
                match ty {
                    ScalarType::F32 => self.map3(r, a, b, c, m, |x, y, z| {
                        fma_inline(ScalarType::F32, x, y, z).unwrap_or(0)
                    }),
                    ScalarType::I32 => self.map3(r, a, b, c, m, |x, y, z| {
                        fma_inline(ScalarType::I32, x, y, z).unwrap_or(0)
                    }),
                    ty => self.map3(r, a, b, c, m, |x, y, z| fma_inline(ty, x, y, z).unwrap_or(0)),
                }
                self.poison_from(r, &[a, b, c], m);
            }
            Op::Cmp(op, a, b) => {
                let (a, b, ty) = (*a, *b, self.k.ty(*a));
                dispatch_cmp!(self, r, a, b, m, *op, ty; [I32, U32, I64, F32]; [Lt, Le, Gt, Ge, Eq, Ne]);
                self.poison_from(r, &[a, b], m);
            }
            Op::Select(c, a, b) => {
                let (c, a, b) = (*c, *a, *b);
                self.map3(r, c, a, b, m, |c, x, y| if c != 0 { x } else { y });
                let clean =
                    [c, a, b].iter().all(|v| self.regs[v.0 as usize].state == PState::Clean);
                if clean {
                    self.poison_from(r, &[c, a, b], m);
                } else {
                    self.regs[r.0 as usize].materialize();
                    for &t in &m.active {
                        let t = t as usize;
                        let pick = if self.get(c, t) != 0 { a } else { b };
                        let p = self.is_poison(c, t) || self.is_poison(pick, t);
                        self.regs[r.0 as usize].poison[t] = p;
                    }
                    self.normalize(r);
                }
            }
            Op::Cvt(a) => {
                let a = *a;
                let (from, to) = (self.k.ty(a), self.k.ty(r));
                dispatch_cvt!(self, r, a, m, from, to;
                    (BF16, F32), (F32, BF16), (F16, F32), (F32, F16), (I32, F32), (F32, I32),
                    (I32, I64), (I64, I32), (U32, I32), (I32, U32), (Pred, I32), (I32, Pred),
                    (U32, I64), (I64, U32), (F32, F64), (F64, F32));
                self.poison_from(r, &[a], m);
            }
            Op::CvtPack(to, lo, hi) => {
                let (to, lo, hi) = (*to, *lo, *hi);
                self.map2(r, lo, hi, m, |x, y| crate::eval::eval_pack(to, x, y));
                self.poison_from(r, &[lo, hi], m);
            }
            Op::BinaryPair(op, [a0, a1, b0, b1]) => {
                let (op, ty) = (*op, self.k.ty(*a0));
                for (res, a, b) in [(r, *a0, *b0), (inst.results[1], *a1, *b1)] {
                    self.map2(res, a, b, m, |x, y| crate::eval::eval_pair(op, ty, x, y));
                    self.poison_from(res, &[a, b], m);
                }
            }
            Op::Load { mem, offset, width, mask, fill } => match mem.space {
                MemSpace::Global(p) => {
                    let g: &'a Global = self.global(inst, p)?;
                    match g {
                        Global::ReadOnly(buf) => self.load_global(
                            inst,
                            p,
                            buf,
                            *offset,
                            *width as usize,
                            (*mask, *fill),
                            m,
                            false,
                        )?,
                        Global::Written(lock, _) => {
                            let buf = lock.read().unwrap_or_else(|e| e.into_inner());
                            self.load_global(
                                inst,
                                p,
                                &buf,
                                *offset,
                                *width as usize,
                                (*mask, *fill),
                                m,
                                true,
                            )?
                        }
                        Global::Scalar => return Err(self.not_a_buffer(p)),
                    }
                }
                MemSpace::Shared(s) => {
                    self.load_shared(inst, s, *offset, *width as usize, (*mask, *fill), m)?
                }
            },
            Op::Store { mem, offset, values, mask } => match mem.space {
                MemSpace::Global(p) => self.store_global(inst, p, *offset, values, *mask, m)?,
                MemSpace::Shared(s) => self.store_shared(inst, s, *offset, values, *mask, m)?,
            },
            // the interpreter runs one grid at a time: the previous grid is complete before this
            // one starts (the wait returns at once) and nothing can start early (no dependent)
            Op::Note(_) | Op::FenceGpu | Op::GridDepWait | Op::LaunchDependents => {}
            Op::Clock(_) => {
                // one read per execution (a warp's, or the block's in lockstep): every active
                // lane gets the count, then it advances
                let now = self.clock;
                self.clock += 1;
                for &t in &m.active {
                    self.set(r, t as usize, now, false);
                }
                self.normalize(r);
            }
            Op::WaitAcquire { .. } => {
                // kernels with counter waits run under the warp schedule, which polls them
                if !self.counter_poll(inst, m)? {
                    return Err(InterpError::InvalidKernel {
                        kernel: self.k.name.clone(),
                        reason: format!("`{}` waits outside the warp schedule", self.text(inst)),
                    });
                }
            }
            Op::AtomicAdd { mem, offset, value, release, wrap } => {
                let p = match mem.space {
                    MemSpace::Global(p) => p,
                    MemSpace::Shared(_) => return Err(self.not_a_buffer(u32::MAX)),
                };
                let lock = match self.global(inst, p)? {
                    Global::Written(lock, _) => lock,
                    _ => return Err(self.not_a_buffer(p)),
                };
                // one thread after another under the buffer's write lock: atomic; atomics are not
                // recorded for the race checker (they do not race with each other)
                let mut buf = lock.write().unwrap_or_else(|e| e.into_inner());
                let len = buf.len();
                let mut touched = Vec::with_capacity(m.active.len());
                for &t in &m.active {
                    let t = t as usize;
                    let e = self.element(inst, *offset, 1, MemSpace::Global(p), len, t)?;
                    let add = self.defined(inst, *value, t, "added value")?;
                    let old = buf.bits(e);
                    if self.probe.is_none() {
                        let (o, v) = (old as u32, add as u32);
                        // atom.inc: back to 0 once the old value reaches the bound
                        let new = match wrap {
                            true if o >= v => 0,
                            true => o + 1,
                            false => o.wrapping_add(v),
                        };
                        buf.set_bits(e, new as u64);
                    }
                    self.regs[inst.results[0].0 as usize].bits[t] = old;
                    touched.push(e);
                }
                drop(buf);
                self.loaded(inst, m);
                if *release && self.p.warps {
                    // everything the warp did so far happens before an acquire of these counters
                    self.warp_tick()?;
                    let w = self.cur_warp;
                    for e in touched {
                        let c = self.release_clocks.entry((p, e)).or_default();
                        warps::join(c, &self.vc[w]);
                    }
                }
            }
            Op::LoadAcquire { mem, offset } => {
                let p = match mem.space {
                    MemSpace::Global(p) => p,
                    MemSpace::Shared(_) => return Err(self.not_a_buffer(u32::MAX)),
                };
                let lock = match self.global(inst, p)? {
                    Global::Written(lock, _) => lock,
                    _ => return Err(self.not_a_buffer(p)),
                };
                let buf = lock.read().unwrap_or_else(|e| e.into_inner());
                let len = buf.len();
                let mut touched = Vec::with_capacity(m.active.len());
                for &t in &m.active {
                    let t = t as usize;
                    let e = self.element(inst, *offset, 1, MemSpace::Global(p), len, t)?;
                    self.regs[inst.results[0].0 as usize].bits[t] = buf.bits(e);
                    touched.push(e);
                }
                drop(buf);
                self.loaded(inst, m);
                self.acquire(p, &touched);
            }
            Op::ClusterArrive | Op::ClusterWait => {
                return Err(InterpError::InvalidKernel {
                    kernel: self.k.name.clone(),
                    reason: format!(
                        "`{}`: a split cluster barrier runs under the warp schedule \
                         (Schedule::Auto or Schedule::Warps), not in lockstep",
                        self.text(inst)
                    ),
                })
            }
            Op::Barrier | Op::ClusterBarrier => {
                if let Some(t) = m.on.iter().position(|&x| !x) {
                    return Err(InterpError::BarrierDivergence {
                        inst: self.text(inst),
                        block: self.block_of(t),
                        thread: self.thread(t),
                    });
                }
                self.end_epoch()?;
                self.epoch = self.epoch.saturating_add(1);
                if matches!(inst.op, Op::ClusterBarrier) {
                    self.cluster_start = self.epoch;
                }
            }
            Op::Async(a) => self.exec_async(inst, a, m)?,
            Op::Wgmma(w) => self.exec_wgmma(inst, w, m)?,
            Op::LoadCluster { mem, cta, offset, width } => match mem.space {
                MemSpace::Shared(s) => {
                    self.load_cluster(inst, s, *cta, *offset, *width as usize, m)?
                }
                MemSpace::Global(_) => {
                    return Err(InterpError::InvalidKernel {
                        kernel: self.k.name.clone(),
                        reason: format!("`{}` reads global memory", self.text(inst)),
                    })
                }
            },
            Op::Shfl { mode, value, lane } => {
                crate::interp::warp::shfl(self, inst, m, *mode, *value, *lane)?
            }
            Op::Vote(mode, p) => crate::interp::warp::vote(self, inst, m, *mode, *p)?,
            Op::Elect => crate::interp::warp::elect(self, inst, m)?,
            Op::Mma { a, b, c, .. } => crate::interp::warp::mma(self, inst, m, a, b, c)?,
            Op::For { lo, hi, step, init, body } => {
                self.run_for(inst, m, (*lo, *hi, *step), init, body)?
            }
            Op::If { cond, then, else_ } => {
                let (mt, me) = self.if_split(inst, *cond, m)?;
                if mt.any() {
                    self.run_insts(then, &mt)?;
                }
                if me.any() {
                    self.run_insts(else_, &me)?;
                }
                self.if_merge(inst, m, (&mt, &me))?;
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn checked_division(
        &mut self,
        inst: &Inst,
        op: BinOp,
        ty: ScalarType,
        r: ValueId,
        a: ValueId,
        b: ValueId,
        m: &Mask,
    ) -> R {
        for &t in &m.active {
            let t = t as usize;
            let p = self.is_poison(a, t) || self.is_poison(b, t);
            let v = match eval_binary(op, ty, self.get(a, t), self.get(b, t)) {
                Ok(v) => v,
                Err(_) if p => 0,
                Err(_) => {
                    return Err(InterpError::DivisionByZero {
                        inst: self.text(inst),
                        block: self.block_of(t),
                        thread: self.thread(t),
                    })
                }
            };
            self.regs[r.0 as usize].bits[t] = v;
        }
        Ok(())
    }

    fn global(&self, inst: &Inst, p: u32) -> R<&'a Global> {
        let globals: &'a [Global] = self.p.globals;
        globals.get(p as usize).ok_or_else(|| InterpError::InvalidKernel {
            kernel: self.k.name.clone(),
            reason: format!("`{}` names parameter {p}, which does not exist", self.text(inst)),
        })
    }

    fn not_a_buffer(&self, p: u32) -> InterpError {
        InterpError::InvalidKernel {
            kernel: self.k.name.clone(),
            reason: format!("parameter {p} is accessed as memory but is a scalar"),
        }
    }

    /// Results of a load are defined on every lane that ran it (masked-off lanes read 0).
    fn loaded(&mut self, inst: &Inst, m: &Mask) {
        for &r in &inst.results {
            let reg = &mut self.regs[r.0 as usize];
            if m.full {
                reg.state = PState::Clean;
            } else if reg.state != PState::Clean {
                reg.materialize();
                for &t in &m.active {
                    reg.poison[t as usize] = false;
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn load_global(
        &mut self,
        inst: &Inst,
        p: u32,
        buf: &HostBuffer,
        offset: ValueId,
        w: usize,
        (mask, fill): (Option<ValueId>, u64),
        m: &Mask,
        tracked: bool,
    ) -> R {
        let len = buf.len();
        let probe = self.probe.filter(|(pp, _)| *pp == p);
        let track = tracked && self.probe.is_none();
        let id = if track || probe.is_some() { self.p.inst_id(inst) } else { 0 };
        let seq = self.steps;
        for &t in &m.active {
            let t = t as usize;
            if let Some(mk) = mask {
                if self.defined(inst, mk, t, "mask")? == 0 {
                    for &r in &inst.results {
                        self.regs[r.0 as usize].bits[t] = fill;
                    }
                    continue;
                }
            }
            let e = self.element(inst, offset, w, MemSpace::Global(p), len, t)?;
            for (j, &r) in inst.results.iter().enumerate() {
                self.regs[r.0 as usize].bits[t] = buf.bits(e + j);
            }
            if track {
                self.record(p, false, e, w, t, id, seq);
            }
            if let Some((_, pe)) = probe {
                if (e as u64..(e + w) as u64).contains(&pe) {
                    self.hits.push(Hit { thread: t as u32, inst: id, write: false });
                }
            }
        }
        self.loaded(inst, m);
        Ok(())
    }

    /// Whether the counter of `inst` (an [`Op::WaitAcquire`]) has reached its target for every
    /// active thread (an acquire read: not recorded for the race checker).
    pub(crate) fn counter_poll(&mut self, inst: &Inst, m: &Mask) -> Result<bool, InterpError> {
        let Op::WaitAcquire { mem, offset, target, .. } = &inst.op else { return Ok(true) };
        let MemSpace::Global(p) = mem.space else { return Err(self.not_a_buffer(u32::MAX)) };
        let lock = match self.global(inst, p)? {
            Global::Written(lock, _) => lock,
            _ => return Err(self.not_a_buffer(p)),
        };
        let buf = lock.read().unwrap_or_else(|e| e.into_inner());
        let len = buf.len();
        let mut touched = Vec::with_capacity(m.active.len());
        for &t in &m.active {
            let t = t as usize;
            let e = self.element(inst, *offset, 1, MemSpace::Global(p), len, t)?;
            let want = self.defined(inst, *target, t, "wait target")? as u32;
            if (buf.bits(e) as u32) < want {
                return Ok(false);
            }
            touched.push(e);
        }
        drop(buf);
        self.acquire(p, &touched);
        Ok(true)
    }

    /// An acquire read of counter elements `es` of parameter `p` by the running warp: it joins
    /// the clocks of the release adds to them (warp schedule only; the lockstep schedule orders
    /// a block's threads by barriers alone).
    fn acquire(&mut self, p: u32, es: &[usize]) {
        if !self.p.warps {
            return;
        }
        let w = self.cur_warp;
        for e in es {
            if let Some(c) = self.release_clocks.get(&(p, *e)) {
                if let Some(mine) = self.vc.get_mut(w) {
                    warps::join(mine, c);
                }
            }
        }
    }

    fn store_global(
        &mut self,
        inst: &Inst,
        p: u32,
        offset: ValueId,
        values: &[ValueId],
        mask: Option<ValueId>,
        m: &Mask,
    ) -> R {
        let lock = match self.global(inst, p)? {
            Global::Written(lock, _) => lock,
            _ => return Err(self.not_a_buffer(p)),
        };
        let probe = self.probe.filter(|(pp, _)| *pp == p);
        let track = self.probe.is_none();
        let id = self.p.inst_id(inst);
        let seq = self.steps;
        let w = values.len();
        let mut buf = lock.write().unwrap_or_else(|e| e.into_inner());
        let len = buf.len();
        for &t in &m.active {
            let t = t as usize;
            if let Some(mk) = mask {
                if self.defined(inst, mk, t, "mask")? == 0 {
                    continue;
                }
            }
            let e = self.element(inst, offset, w, MemSpace::Global(p), len, t)?;
            for (j, &v) in values.iter().enumerate() {
                let bits = self.defined(inst, v, t, "stored value")?;
                if self.probe.is_none() {
                    buf.set_bits(e + j, bits);
                }
            }
            if track {
                self.record(p, true, e, w, t, id, seq);
            }
            if let Some((_, pe)) = probe {
                if (e as u64..(e + w) as u64).contains(&pe) {
                    self.hits.push(Hit { thread: t as u32, inst: id, write: true });
                }
            }
        }
        Ok(())
    }

    fn load_shared(
        &mut self,
        inst: &Inst,
        s: u32,
        offset: ValueId,
        w: usize,
        (mask, fill): (Option<ValueId>, u64),
        m: &Mask,
    ) -> R {
        let len = self.shared_len(inst, s)?;
        let id = self.p.inst_id(inst);
        for &t in &m.active {
            let t = t as usize;
            if let Some(mk) = mask {
                if self.defined(inst, mk, t, "mask")? == 0 {
                    for &r in &inst.results {
                        self.set(r, t, fill, false);
                    }
                    continue;
                }
            }
            let e = self.element(inst, offset, w, MemSpace::Shared(s), len, t)?;
            self.async_generic(inst, s, e, w, t, false)?;
            let rec = Rec { epoch: self.epoch, thread: t as u32, inst: id };
            let cta = t / self.p.cta_threads;
            for (j, &r) in inst.results.iter().enumerate() {
                let res = shared_read!(self, cta, s as usize, e + j, rec);
                let (v, init) = res.map_err(|c| self.race(inst, s, c, t, false))?;
                self.set(r, t, v, !init);
            }
        }
        if m.full {
            for &r in &inst.results {
                self.normalize(r);
            }
        }
        Ok(())
    }

    fn store_shared(
        &mut self,
        inst: &Inst,
        s: u32,
        offset: ValueId,
        values: &[ValueId],
        mask: Option<ValueId>,
        m: &Mask,
    ) -> R {
        let len = self.shared_len(inst, s)?;
        let id = self.p.inst_id(inst);
        let w = values.len();
        for &t in &m.active {
            let t = t as usize;
            if let Some(mk) = mask {
                if self.defined(inst, mk, t, "mask")? == 0 {
                    continue;
                }
            }
            let e = self.element(inst, offset, w, MemSpace::Shared(s), len, t)?;
            self.async_generic(inst, s, e, w, t, true)?;
            let rec = Rec { epoch: self.epoch, thread: t as u32, inst: id };
            let cta = t / self.p.cta_threads;
            for (j, &v) in values.iter().enumerate() {
                if let Some(rr) = self.remote.get(cta).map(|r| r[s as usize][e + j]) {
                    if rr.epoch >= self.cluster_start {
                        return Err(self.cluster_race(inst, s, e + j, cta, rr, t, true));
                    }
                }
                let (bits, init) = (self.get(v, t), !self.is_poison(v, t));
                let res = shared_write!(self, cta, s as usize, e + j, bits, init, rec);
                res.map_err(|c| self.race(inst, s, c, t, true))?;
            }
        }
        Ok(())
    }

    /// Lane `t`'s value of `cta` as a rank of the cluster (u32 operands as unsigned): an error
    /// naming the rank and the cluster's size when no block has it.
    pub(crate) fn cluster_rank(&self, inst: &Inst, cta: ValueId, t: usize) -> R<usize> {
        let rank = self.defined(inst, cta, t, "cluster rank")? as i64;
        let rank = if self.k.ty(cta) == ScalarType::U32 { rank & 0xffff_ffff } else { rank };
        if rank < 0 || rank >= self.p.ctas as i64 {
            return Err(InterpError::ClusterRank {
                inst: self.text(inst),
                rank,
                size: self.p.ctas,
                block: self.block_of(t),
                thread: self.thread(t),
            });
        }
        Ok(rank as usize)
    }

    /// `ld.shared::cluster`: lane `t` reads allocation `s` of the block with rank `cta`.
    #[allow(clippy::too_many_arguments)]
    fn load_cluster(
        &mut self,
        inst: &Inst,
        s: u32,
        cta: ValueId,
        offset: ValueId,
        w: usize,
        m: &Mask,
    ) -> R {
        let len = self.shared_len(inst, s)?;
        let id = self.p.inst_id(inst);
        for &t in &m.active {
            let t = t as usize;
            let owner = self.cluster_rank(inst, cta, t)?;
            let e = self.element(inst, offset, w, MemSpace::Shared(s), len, t)?;
            let rec = Rec { epoch: self.epoch, thread: t as u32, inst: id };
            let own = t / self.p.cta_threads;
            for (j, &r) in inst.results.iter().enumerate() {
                let (v, init) = if owner == own {
                    let res = shared_read!(self, own, s as usize, e + j, rec);
                    res.map_err(|c| self.race(inst, s, c, t, false))?
                } else {
                    let mem = &self.shared[owner][s as usize];
                    let wr = mem.last_write(e + j);
                    if wr.epoch >= self.cluster_start {
                        return Err(self.cluster_race(inst, s, e + j, owner, wr, t, false));
                    }
                    let (bits, init) = mem.peek(e + j);
                    self.remote[owner][s as usize][e + j] = rec;
                    self.last_remote = Some((owner, s, e + j, rec));
                    (bits, init && wr.epoch >= self.base)
                };
                self.set(r, t, v, !init);
            }
        }
        if m.full {
            for &r in &inst.results {
                self.normalize(r);
            }
        }
        Ok(())
    }

    /// A conflict between a block's access to its shared element and another block's, not
    /// separated by a `barrier.cluster`: `first` is the earlier access, by lane `first.thread`.
    #[allow(clippy::too_many_arguments)]
    fn cluster_race(
        &self,
        inst: &Inst,
        s: u32,
        e: usize,
        owner: usize,
        first: Rec,
        t: usize,
        write: bool,
    ) -> InterpError {
        let side = |thread: usize, inst: String, write: bool| {
            Box::new(GlobalAccess {
                block: self.block_of(thread),
                thread: self.thread(thread),
                inst,
                write,
            })
        };
        let first_inst = self.p.insts.get(first.inst as usize).map(|i| self.text(i));
        InterpError::ClusterRace {
            mem: self.k.shared[s as usize].name.clone(),
            element: e,
            owner: self.cta_block(owner),
            first: side(first.thread as usize, first_inst.unwrap_or_default(), !write),
            second: side(t, self.text(inst), write),
        }
    }

    fn shared_len(&self, inst: &Inst, s: u32) -> R<usize> {
        self.shared[0].get(s as usize).map(SharedMem::len).ok_or_else(|| {
            InterpError::InvalidKernel {
                kernel: self.k.name.clone(),
                reason: format!(
                    "`{}` names shared allocation {s}, which does not exist",
                    self.text(inst)
                ),
            }
        })
    }

    /// Appends a lane's access to a written buffer to the epoch's runs.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        param: u32,
        write: bool,
        e: usize,
        w: usize,
        t: usize,
        inst: u32,
        seq: u64,
    ) {
        if let Some(r) = self.runs.last_mut() {
            if r.seq == seq
                && r.param == param
                && r.write == write
                && r.width == w as u32
                && (r.thread0 + r.lanes) as usize == t
                && r.end() == e as u64
            {
                r.lanes += 1;
                return;
            }
        }
        self.runs.push(Run {
            param,
            write,
            start: e as u64,
            lanes: 1,
            width: w as u32,
            thread0: t as u32,
            inst,
            seq,
        });
    }

    /// The end of a barrier interval: check the interval's global accesses for races between
    /// threads of the block, then add them to the block's footprint.
    pub(crate) fn end_epoch(&mut self) -> R {
        if self.runs.is_empty() {
            return Ok(());
        }
        let mut runs = std::mem::take(&mut self.runs);
        if let Some(race) = check_epoch(&mut runs) {
            return Err(self.epoch_race(race));
        }
        if self.p.cross_block {
            self.foot.add(&runs);
        }
        runs.clear();
        self.runs = runs;
        Ok(())
    }

    fn epoch_race(&self, race: EpochRace) -> InterpError {
        let side = |(run, t): (Run, u32)| {
            Box::new(GlobalAccess {
                block: self.block_of(t as usize),
                thread: self.thread(t as usize),
                inst: self.p.insts.get(run.inst as usize).map(|i| self.text(i)).unwrap_or_default(),
                write: run.write,
            })
        };
        let param = race.first.0.param as usize;
        InterpError::GlobalRace {
            mem: self.k.params.get(param).map(|d| d.name.clone()).unwrap_or_default(),
            element: race.element as usize,
            first: side(race.first),
            second: side(race.second),
        }
    }

    fn run_for(
        &mut self,
        inst: &Inst,
        m: &Mask,
        bounds: (ValueId, ValueId, ValueId),
        init: &[ValueId],
        body: &Block,
    ) -> R {
        let mut live = self.for_enter(inst, m, bounds, init, body)?;
        while self.for_live(&mut live, body.args[0], bounds.1) {
            let lm = Mask::from_on(live.clone());
            self.run_insts(body, &lm)?;
            self.for_next(inst, &lm, body, bounds.2)?;
        }
        self.for_exit(inst, m, body)
    }

    /// A loop starts on the lanes of `m`: checks the bounds and binds the induction variable
    /// and the carried values; returns the lanes (all of `m`; [`Self::for_live`] narrows them).
    pub(crate) fn for_enter(
        &mut self,
        inst: &Inst,
        m: &Mask,
        (lo, hi, step): (ValueId, ValueId, ValueId),
        init: &[ValueId],
        body: &Block,
    ) -> R<Vec<bool>> {
        let iv = body.args[0];
        let carried = &body.args[1..];
        for &t in &m.active {
            let t = t as usize;
            self.defined(inst, lo, t, "loop lower bound")?;
            self.defined(inst, hi, t, "loop upper bound")?;
            let s = self.defined(inst, step, t, "loop step")?;
            if (s as i64) <= 0 {
                return Err(InterpError::LoopStep {
                    inst: self.text(inst),
                    step: s as i64,
                    block: self.block_of(t),
                    thread: self.thread(t),
                });
            }
        }
        if self.p.has_wgmma {
            let pairs: Vec<(ValueId, ValueId)> =
                carried.iter().copied().zip(init.iter().copied()).collect();
            self.wg_rename(inst, &pairs, m)?;
        }
        if m.full {
            self.copy_row(iv, lo);
            self.regs[iv.0 as usize].state = PState::Clean;
            for (&c, &i) in carried.iter().zip(init) {
                self.copy_row(c, i);
            }
        } else {
            for &t in &m.active {
                let t = t as usize;
                let l = self.get(lo, t);
                self.set(iv, t, l, false);
                for (&c, &i) in carried.iter().zip(init) {
                    let (v, p) = (self.get(i, t), self.is_poison(i, t));
                    self.set(c, t, v, p);
                }
            }
        }
        Ok(m.on.clone())
    }

    /// Narrows `live` to the lanes whose induction variable `iv` is below `hi`; any left?
    pub(crate) fn for_live(&self, live: &mut [bool], iv: ValueId, hi: ValueId) -> bool {
        let ty = self.k.ty(iv);
        let mut any = false;
        for (t, l) in live.iter_mut().enumerate() {
            if *l {
                *l = eval_cmp(CmpOp::Lt, ty, self.get(iv, t), self.get(hi, t)) != 0;
                any |= *l;
            }
        }
        any
    }

    /// After an iteration on `lm`: the carried values take the yields, the induction variable
    /// steps.
    pub(crate) fn for_next(&mut self, inst: &Inst, lm: &Mask, body: &Block, step: ValueId) -> R {
        if self.p.has_wgmma {
            let pairs: Vec<(ValueId, ValueId)> =
                body.args[1..].iter().copied().zip(body.yields.iter().copied()).collect();
            self.wg_rename(inst, &pairs, lm)?;
        }
        let iv = body.args[0];
        let ty = self.k.ty(iv);
        let carried = &body.args[1..];
        if lm.full {
            let next: Vec<Reg> =
                body.yields.iter().map(|&y| self.regs[y.0 as usize].clone()).collect();
            for (&c, row) in carried.iter().zip(next) {
                self.regs[c.0 as usize] = row;
            }
        } else {
            for &t in &lm.active {
                let t = t as usize;
                let next: Vec<(u64, bool)> =
                    body.yields.iter().map(|&y| (self.get(y, t), self.is_poison(y, t))).collect();
                for (&c, (v, p)) in carried.iter().zip(next) {
                    self.set(c, t, v, p);
                }
            }
        }
        for &t in &lm.active {
            let t = t as usize;
            let v = eval_binary(BinOp::Add, ty, self.get(iv, t), self.get(step, t)).unwrap_or(0);
            self.regs[iv.0 as usize].bits[t] = v;
        }
        Ok(())
    }

    /// The loop ends on the lanes of `m`: its results take the carried values.
    pub(crate) fn for_exit(&mut self, inst: &Inst, m: &Mask, body: &Block) -> R {
        let carried = &body.args[1..];
        if self.p.has_wgmma {
            let pairs: Vec<(ValueId, ValueId)> =
                inst.results.iter().copied().zip(carried.iter().copied()).collect();
            self.wg_rename(inst, &pairs, m)?;
        }
        for (&r, &c) in inst.results.iter().zip(carried) {
            if m.full {
                self.copy_row(r, c);
            } else {
                for &t in &m.active {
                    let t = t as usize;
                    let (v, p) = (self.get(c, t), self.is_poison(c, t));
                    self.set(r, t, v, p);
                }
            }
        }
        Ok(())
    }

    /// Splits the lanes of `m` by the condition: (then, else).
    pub(crate) fn if_split(&self, inst: &Inst, cond: ValueId, m: &Mask) -> R<(Mask, Mask)> {
        let n = self.n;
        let mut mt = vec![false; n];
        let mut me = vec![false; n];
        for &t in &m.active {
            let t = t as usize;
            if self.defined(inst, cond, t, "condition")? != 0 {
                mt[t] = true;
            } else {
                me[t] = true;
            }
        }
        Ok((Mask::from_on(mt), Mask::from_on(me)))
    }

    /// After both branches: the if's results take each lane's branch's yields.
    pub(crate) fn if_merge(&mut self, inst: &Inst, m: &Mask, (mt, me): (&Mask, &Mask)) -> R {
        let Op::If { then, else_, .. } = &inst.op else { return Ok(()) };
        if self.p.has_wgmma {
            let pairs: Vec<(ValueId, ValueId)> = inst
                .results
                .iter()
                .zip(&then.yields)
                .zip(&else_.yields)
                .map(|((&r, &yt), &ye)| (r, if mt.any() { yt } else { ye }))
                .collect();
            self.wg_rename(inst, &pairs, m)?;
        }
        for ((&r, &yt), &ye) in inst.results.iter().zip(&then.yields).zip(&else_.yields) {
            if mt.full {
                self.copy_row(r, yt);
            } else if me.full {
                self.copy_row(r, ye);
            } else {
                for &t in &m.active {
                    let t = t as usize;
                    let y = if mt.on[t] { yt } else { ye };
                    let (v, p) = (self.get(y, t), self.is_poison(y, t));
                    self.set(r, t, v, p);
                }
            }
        }
        Ok(())
    }

    fn race(&self, inst: &Inst, s: u32, c: Conflict, t: usize, write: bool) -> InterpError {
        let decl = &self.k.shared[s as usize];
        let first_inst = self.p.insts.get(c.first.inst as usize).map(|i| self.text(i));
        InterpError::SharedRace {
            mem: decl.name.clone(),
            byte: c.element * decl.elem.size_bytes(),
            element: c.element,
            block: self.block_of(t),
            first: Box::new(Access {
                thread: self.thread(c.first.thread as usize),
                inst: first_inst.unwrap_or_default(),
                write: c.first_write,
            }),
            second: Box::new(Access { thread: self.thread(t), inst: self.text(inst), write }),
        }
    }

    /// The first element of a vector access, bounds- and alignment-checked.
    #[inline(always)]
    fn element(
        &self,
        inst: &Inst,
        offset: ValueId,
        w: usize,
        space: MemSpace,
        len: usize,
        t: usize,
    ) -> R<usize> {
        let e = self.defined(inst, offset, t, "address")? as i64;
        let e = if self.k.ty(offset) == ScalarType::U32 { e & 0xffff_ffff } else { e };
        if e < 0 || e.saturating_add(w as i64) > len as i64 || e % w as i64 != 0 {
            return Err(self.access_error(inst, e, w, space, len, t));
        }
        Ok(e as usize)
    }

    #[cold]
    #[inline(never)]
    fn access_error(
        &self,
        inst: &Inst,
        e: i64,
        w: usize,
        space: MemSpace,
        len: usize,
        t: usize,
    ) -> InterpError {
        let name = match space {
            MemSpace::Global(p) => self.k.params.get(p as usize).map(|d| d.name.clone()),
            MemSpace::Shared(s) => self.k.shared.get(s as usize).map(|d| d.name.clone()),
        };
        if e < 0 || e.saturating_add(w as i64) > len as i64 {
            InterpError::OutOfBounds {
                inst: self.text(inst),
                space: space.name().into(),
                mem: name.unwrap_or_default(),
                element: e,
                end: e.saturating_add(w as i64),
                len,
                block: self.block_of(t),
                thread: self.thread(t),
            }
        } else {
            InterpError::Misaligned {
                inst: self.text(inst),
                mem: name.unwrap_or_default(),
                element: e,
                width: w,
                block: self.block_of(t),
                thread: self.thread(t),
            }
        }
    }
}
