//! The interpreter side of [`crate::asyncop`]: mbarriers, bulk copies and bulk groups, on the
//! lockstep schedule of the block executor.
//!
//! ```text
//!   state per block (cluster) run
//!   bars      (block, alloc, index) → { count, arrivals left, tx left, completed phases }
//!   loads     bulk loads in flight: the bytes read from global at issue, where they go, which
//!             barrier they complete on; their destination elements are marked in `landing`
//!   reads     shared elements a bulk store may still read, by (thread, bulk group)
//!   writes    last generic-proxy write of each shared element (step, thread), fences per
//!             thread (step): a bulk store's source must be fenced by the threads that wrote it
//!
//!   a load lands when a thread first waits on its barrier (a legal schedule: copies complete
//!   some time before the phase they count for); a store reads shared memory at issue and its
//!   source stays marked until the issuing thread's wait_group.read retires its group
//! ```

use std::collections::HashMap;

mod tmaexec;

use super::{BlockExec, Mask, R};
use crate::asyncop::AsyncOp;
use crate::interp::error::{AsyncBug, InterpError};
use crate::interp::global::Global;
use crate::interp::memory::Rec;
use crate::op::{Inst, MemRef, MemSpace, ValueId};

/// One mbarrier.
#[derive(Debug, Clone, Copy)]
struct Bar {
    count: u32,
    arrivals: u32,
    tx: i64,
    phases: u64,
}

/// A bulk load in flight.
#[derive(Debug, Clone)]
pub(crate) struct Load {
    cta: usize,
    s: u32,
    start: usize,
    bits: Vec<u64>,
    bar: (usize, u32, usize),
    thread: usize,
    pub(crate) inst: u32,
}

/// An arrival on another block's mbarrier: (block, allocation, index) of the barrier, the
/// epoch, the arriving lane and the instruction.
type RemoteArrive = ((usize, u32, usize), u32, usize, u32);

/// An mbarrier wait that has not returned: the first waiting lane, its barrier (block,
/// allocation, index) and the parity it waits for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    pub(crate) t: usize,
    pub(crate) key: (usize, u32, usize),
    pub(crate) want: u64,
}

/// What the async ops of one block (cluster) run have in flight.
#[derive(Debug, Default)]
pub(crate) struct AsyncState {
    bars: HashMap<(usize, u32, usize), Bar>,
    pub(crate) loads: Vec<Load>,
    /// (block, alloc, element) → index in `loads`
    pub(crate) landing: HashMap<(usize, u32, usize), usize>,
    /// (block, alloc, element) → (thread, group) of a bulk store that may read it
    reads: HashMap<(usize, u32, usize), (usize, u64)>,
    /// per thread: the bulk group being formed (groups before it are committed)
    group: HashMap<usize, u64>,
    /// (block, alloc, element) → (step, thread) of the last generic-proxy write
    pub(crate) writes: HashMap<(usize, u32, usize), (u64, usize)>,
    /// per thread: step of its last fence.proxy.async
    pub(crate) fences: HashMap<usize, u64>,
    /// warp schedule: per barrier, the join of the clocks of the current phase's arrivals
    rel: HashMap<(usize, u32, usize), Vec<u32>>,
    /// warp schedule: per barrier, the clock of its last completed phase
    done: HashMap<(usize, u32, usize), Vec<u32>>,
    /// warp schedule: per (warpgroup of the cluster, setmaxnreg instruction), the warps of the
    /// warpgroup that ran it (bits 0..4) and the first lane that did
    maxnreg: HashMap<(usize, u32), (u8, usize)>,
    /// the latest arrival on another block's mbarrier
    remote_arrive: Option<RemoteArrive>,
}

impl AsyncState {
    pub(crate) fn clear(&mut self) {
        self.bars.clear();
        self.loads.clear();
        self.landing.clear();
        self.reads.clear();
        self.group.clear();
        self.writes.clear();
        self.fences.clear();
        self.rel.clear();
        self.done.clear();
        self.maxnreg.clear();
        self.remote_arrive = None;
    }
}

impl<'a> BlockExec<'a> {
    /// Whether the generic-proxy write of shared element `key` (if any) is fenced for the async
    /// proxy: the thread that wrote it ran `fence.proxy.async` after it (a barrier then orders
    /// it before the async op — the race check). `Err((write step, writer, the writer's last
    /// fence))` otherwise.
    pub(crate) fn proxy_fenced(
        &self,
        key: (usize, u32, usize),
    ) -> Result<(), (u64, usize, Option<u64>)> {
        let Some(&(w, writer)) = self.asy.writes.get(&key) else { return Ok(()) };
        let fence = self.asy.fences.get(&writer).copied();
        if fence.is_some_and(|f| f >= w) {
            Ok(())
        } else {
            Err((w, writer, fence))
        }
    }

    /// Shared element `key` as the source of a bulk or tensor store issued by lane `t`: no bulk
    /// load may still be landing there, and the threads' writes to it must be fenced for the
    /// async proxy.
    pub(crate) fn async_source(&self, inst: &Inst, key: (usize, u32, usize), t: usize) -> R {
        let (_, s, x) = key;
        if let Some(&l) = self.asy.landing.get(&key) {
            let detail = format!(
                "the bulk load `{}` has not completed",
                self.inst_text_of(self.asy.loads[l].inst)
            );
            let kind = AsyncBug::ReadBeforeComplete;
            return Err(self.async_error(kind, inst, self.shared_name(s), x, t, detail));
        }
        if let Err(e) = self.proxy_fenced(key) {
            let detail = self.proxy_detail(e);
            let kind = AsyncBug::MissingProxyFence;
            return Err(self.async_error(kind, inst, self.shared_name(s), x, t, detail));
        }
        Ok(())
    }

    /// The detail of a [`AsyncBug::MissingProxyFence`] from [`Self::proxy_fenced`].
    pub(crate) fn proxy_detail(&self, (w, writer, fence): (u64, usize, Option<u64>)) -> String {
        format!(
            "thread {:?} wrote it (step {w}) and that thread's last fence.proxy.async {}: every \
             thread that wrote the data fences it for the async proxy",
            self.thread(writer),
            fence.map_or("never ran".to_string(), |f| format!("was at step {f}"))
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn async_error(
        &self,
        kind: AsyncBug,
        inst: &Inst,
        mem: String,
        element: usize,
        t: usize,
        detail: String,
    ) -> InterpError {
        InterpError::Async {
            kind,
            inst: self.text(inst),
            mem,
            element,
            block: self.block_of(t),
            thread: self.thread(t),
            detail,
        }
    }

    fn shared_name(&self, s: u32) -> String {
        self.k.shared.get(s as usize).map(|d| d.name.clone()).unwrap_or_default()
    }

    fn inst_text_of(&self, id: u32) -> String {
        self.p.insts.get(id as usize).map(|i| self.text(i)).unwrap_or_default()
    }

    /// Checks a generic-proxy access of shared `s` elements `e..e + w` by lane `t` against the
    /// async state (bulk loads landing there, bulk stores reading there, mbarrier memory), and
    /// records generic writes for the proxy-fence rule.
    pub(crate) fn async_generic(
        &mut self,
        inst: &Inst,
        s: u32,
        e: usize,
        w: usize,
        t: usize,
        write: bool,
    ) -> R {
        if !self.p.has_async {
            return Ok(());
        }
        let cta = t / self.p.cta_threads;
        for x in e..e + w {
            let key = (cta, s, x);
            if let Some(&l) = self.asy.landing.get(&key) {
                let load = &self.asy.loads[l];
                let kind = if write {
                    AsyncBug::WriteBeforeComplete
                } else {
                    AsyncBug::ReadBeforeComplete
                };
                let detail = format!(
                    "the bulk load `{}` issued by thread {:?} has not completed: wait on its \
                     mbarrier phase first",
                    self.inst_text_of(load.inst),
                    self.thread(load.thread)
                );
                return Err(self.async_error(kind, inst, self.shared_name(s), x, t, detail));
            }
            if write {
                self.wg_shared_write(inst, cta, s, x, t)?;
                if let Some(&(rt, g)) = self.asy.reads.get(&key) {
                    let detail = format!(
                        "thread {:?}'s bulk group {g} may still be reading it: \
                         cp.async.bulk.wait_group.read first",
                        self.thread(rt)
                    );
                    let kind = AsyncBug::OverwriteWhileStoreReads;
                    return Err(self.async_error(kind, inst, self.shared_name(s), x, t, detail));
                }
                self.asy.writes.insert(key, (self.steps, t));
            }
            if self.asy.bars.contains_key(&key) {
                let detail = "it holds an initialised mbarrier (mbarrier.inval first)".to_string();
                let kind = AsyncBug::BarrierAsData;
                return Err(self.async_error(kind, inst, self.shared_name(s), x, t, detail));
            }
        }
        Ok(())
    }

    /// The block's (cluster's) run ends: nothing may still be in flight.
    pub(crate) fn async_end(&mut self) -> R {
        if let Some((&(_, id), &(warps, t))) =
            self.asy.maxnreg.iter().filter(|(_, (w, _))| *w != 0b1111).min_by_key(|(k, _)| **k)
        {
            if let Some(inst) = self.p.insts.get(id as usize).copied() {
                let ran: Vec<usize> = (0..4).filter(|b| warps >> b & 1 == 1).collect();
                let detail = format!(
                    "only warps {ran:?} of this thread's warpgroup (warps 0..4 of it) executed \
                     it; every warp of a warpgroup executes the same setmaxnreg"
                );
                let kind = AsyncBug::WarpgroupDivergence;
                return Err(self.async_error(kind, inst, String::new(), 0, t, detail));
            }
        }
        if let Some(((owner, s, x), epoch, t, id)) = self.asy.remote_arrive {
            if epoch >= self.cluster_start {
                if let Some(inst) = self.p.insts.get(id as usize).copied() {
                    let detail = format!(
                        "it arrives on block {:?}'s barrier and no barrier.cluster follows: the \
                         owner may have exited (end the kernel with a barrier.cluster)",
                        self.cta_block(owner)
                    );
                    let name = self.shared_name(s);
                    let kind = AsyncBug::RemoteArriveAtExit;
                    return Err(self.async_error(kind, inst, name, x, t, detail));
                }
            }
        }
        if let Some(l) = self.asy.loads.first() {
            let (inst, t) = (self.p.insts.get(l.inst as usize).copied(), l.thread);
            let detail = format!("{} elements never landed", l.bits.len());
            let name = self.shared_name(l.s);
            if let Some(inst) = inst {
                return Err(self.async_error(AsyncBug::LoadAtExit, inst, name, l.start, t, detail));
            }
        }
        if let Some((&(_, s, x), &(t, g))) = self.asy.reads.iter().min_by_key(|(k, _)| **k) {
            let name = self.shared_name(s);
            let detail = format!("bulk group {g} of this thread was never waited for");
            let inst = self.p.insts.iter().find(|i| {
                matches!(
                    i.op,
                    crate::op::Op::Async(AsyncOp::BulkStore { .. } | AsyncOp::TensorStore { .. })
                )
            });
            if let Some(inst) = inst {
                return Err(self.async_error(AsyncBug::StoreReadAtExit, inst, name, x, t, detail));
            }
        }
        Ok(())
    }

    fn bar_key(
        &self,
        inst: &Inst,
        bar: MemRef,
        index: ValueId,
        t: usize,
    ) -> R<(usize, u32, usize)> {
        let MemSpace::Shared(s) = bar.space else {
            return Err(InterpError::InvalidKernel {
                kernel: self.k.name.clone(),
                reason: format!("`{}` names a global mbarrier", self.text(inst)),
            });
        };
        let len = self.shared_len(inst, s)?;
        let e = self.element(inst, index, 1, bar.space, len, t)?;
        Ok((t / self.p.cta_threads, s, e))
    }

    fn bar_state(&self, inst: &Inst, key: (usize, u32, usize), t: usize) -> R<Bar> {
        self.asy.bars.get(&key).copied().ok_or_else(|| {
            let detail = "initialise it with mbarrier.init (and fence.mbarrier_init + a barrier)"
                .to_string();
            self.async_error(
                AsyncBug::Uninitialized,
                inst,
                self.shared_name(key.1),
                key.2,
                t,
                detail,
            )
        })
    }

    /// Completes the phase when both counts reached zero.
    fn bar_settle(&mut self, inst: &Inst, key: (usize, u32, usize), t: usize) -> R {
        let b = self.asy.bars.get_mut(&key).expect("settled barriers exist");
        if b.arrivals == 0 && b.tx < 0 {
            let detail =
                format!("{} more bytes arrived than the phase's expect_tx announced", -b.tx);
            let kind = AsyncBug::TxMismatch;
            return Err(self.async_error(kind, inst, self.shared_name(key.1), key.2, t, detail));
        }
        if b.arrivals == 0 && b.tx == 0 {
            b.phases += 1;
            b.arrivals = b.count;
            if self.p.warps {
                // what the phase's arrivals did is ordered before what its waiters do next
                let rel = self.asy.rel.remove(&key).unwrap_or_default();
                self.asy.done.insert(key, rel);
            }
        }
        Ok(())
    }

    /// One arrival of lane `t` (with `tx`: after adding `tx` expected bytes) on barrier `key`
    /// (block, allocation, index), which may be another block's of the cluster.
    fn mbar_arrive(
        &mut self,
        inst: &Inst,
        key: (usize, u32, usize),
        tx: Option<i64>,
        t: usize,
    ) -> R {
        let mut b = self.bar_state(inst, key, t)?;
        if self.p.warps {
            let vc = &self.vc[self.cur_warp];
            super::warps::join(self.asy.rel.entry(key).or_default(), vc);
        }
        if let Some(tx) = tx {
            b.tx += tx;
        }
        if b.arrivals == 0 {
            let detail = format!(
                "more arrivals than the {} the barrier expects: phase {} has all \
                 its arrivals and waits for {} bytes, so this arrival belongs to a \
                 phase that has not begun (did a producer reuse a stage before its \
                 consumers released it?)",
                b.count, b.phases, b.tx
            );
            let name = self.shared_name(key.1);
            return Err(self.async_error(AsyncBug::TxMismatch, inst, name, key.2, t, detail));
        }
        b.arrivals -= 1;
        self.asy.bars.insert(key, b);
        self.bar_settle(inst, key, t)
    }

    /// Polls an `mbarrier.try_wait.parity` for the lanes of `m` (landing the copies that
    /// complete on the barrier): `None` when every lane's phase has completed, else the first
    /// lane still waiting.
    pub(crate) fn mbar_poll(
        &mut self,
        inst: &Inst,
        bar: MemRef,
        index: ValueId,
        parity: ValueId,
        m: &Mask,
    ) -> R<Option<Pending>> {
        let mut keys: Vec<(usize, u32, usize)> = vec![];
        for &t in &m.active {
            let t = t as usize;
            let key = self.bar_key(inst, bar, index, t)?;
            self.bar_state(inst, key, t)?;
            let want = self.defined(inst, parity, t, "parity")? & 1;
            // the phase of parity `want` has completed when the current phase's parity
            // differs from it
            let done = |b: &Bar| b.phases % 2 != want;
            if !done(&self.asy.bars[&key]) {
                self.land(key);
                self.bar_settle(inst, key, t)?;
                if !done(&self.asy.bars[&key]) {
                    return Ok(Some(Pending { t, key, want }));
                }
            }
            if self.p.warps && !keys.contains(&key) {
                keys.push(key);
            }
        }
        if self.p.warps {
            // the wait returns: acquire what the completed phases' arrivals did
            self.warp_tick()?;
            for key in keys {
                if let Some(d) = self.asy.done.get(&key) {
                    super::warps::join(&mut self.vc[self.cur_warp], d);
                }
            }
        }
        Ok(None)
    }

    /// What a pending wait waits for, in words.
    pub(crate) fn pending_text(&self, p: &Pending) -> String {
        let name = self.shared_name(p.key.1);
        let Some(b) = self.asy.bars.get(&p.key) else {
            return format!("mbarrier \"{name}\"[{}], which was invalidated", p.key.2);
        };
        if b.arrivals == 0 {
            format!(
                "mbarrier \"{name}\"[{}] parity {}: every arrival is in and no bulk copy is in \
                 flight, but {} of the bytes announced by expect_tx never arrive",
                p.key.2, p.want, b.tx
            )
        } else {
            format!(
                "mbarrier \"{name}\"[{}] parity {}: phase {} (parity {}) still needs {} of {} \
                 arrivals and {} bytes",
                p.key.2,
                p.want,
                b.phases,
                b.phases % 2,
                b.arrivals,
                b.count,
                b.tx
            )
        }
    }

    /// Lands every bulk load that completes on barrier `key`.
    fn land(&mut self, key: (usize, u32, usize)) {
        let (mine, rest): (Vec<Load>, Vec<Load>) =
            std::mem::take(&mut self.asy.loads).into_iter().partition(|l| l.bar == key);
        self.asy.loads = rest;
        self.asy.landing.clear();
        for (i, l) in self.asy.loads.iter().enumerate() {
            for x in l.start..l.start + l.bits.len() {
                self.asy.landing.insert((l.cta, l.s, x), i);
            }
        }
        for l in mine {
            let size = self.k.shared[l.s as usize].elem.size_bytes() as i64;
            for (j, &bits) in l.bits.iter().enumerate() {
                self.shared[l.cta][l.s as usize].land(l.start + j, bits, self.epoch, l.inst);
            }
            if let Some(b) = self.asy.bars.get_mut(&l.bar) {
                b.tx -= l.bits.len() as i64 * size;
            }
        }
    }

    /// Executes one async op for the active lanes.
    pub(crate) fn exec_async(&mut self, inst: &Inst, a: &AsyncOp, m: &Mask) -> R {
        match a {
            AsyncOp::FenceMbarrierInit => {}
            AsyncOp::FenceProxyAsync => {
                for &t in &m.active {
                    self.asy.fences.insert(t as usize, self.steps);
                }
            }
            AsyncOp::MbarrierInit { bar, index, count } => {
                for &t in &m.active {
                    let t = t as usize;
                    let key = self.bar_key(inst, *bar, *index, t)?;
                    let c = self.defined(inst, *count, t, "arrival count")? as i64;
                    if !(1..(1 << 20)).contains(&c) {
                        let detail = format!("arrival count {c}; valid: 1..=1048575");
                        let name = self.shared_name(key.1);
                        return Err(self.async_error(
                            AsyncBug::Uninitialized,
                            inst,
                            name,
                            key.2,
                            t,
                            detail,
                        ));
                    }
                    let c = c as u32;
                    self.asy.bars.insert(key, Bar { count: c, arrivals: c, tx: 0, phases: 0 });
                }
            }
            AsyncOp::MbarrierInval { bar, index } => {
                for &t in &m.active {
                    let key = self.bar_key(inst, *bar, *index, t as usize)?;
                    self.bar_state(inst, key, t as usize)?;
                    self.asy.bars.remove(&key);
                }
            }
            AsyncOp::MbarrierArrive { bar, index, tx } => {
                if self.p.warps {
                    self.warp_tick()?;
                }
                for &t in &m.active {
                    let t = t as usize;
                    let key = self.bar_key(inst, *bar, *index, t)?;
                    let tx = match tx {
                        Some(tx) => Some(self.defined(inst, *tx, t, "transaction bytes")? as i64),
                        None => None,
                    };
                    self.mbar_arrive(inst, key, tx, t)?;
                }
            }
            AsyncOp::MbarrierArriveCluster { bar, index, cta } => {
                if self.p.warps {
                    self.warp_tick()?;
                }
                for &t in &m.active {
                    let t = t as usize;
                    let (own, s, e) = self.bar_key(inst, *bar, *index, t)?;
                    let owner = self.cluster_rank(inst, *cta, t)?;
                    self.mbar_arrive(inst, (owner, s, e), None, t)?;
                    if owner != own {
                        // the owner must not exit before the arrival: a barrier.cluster after it
                        let id = self.p.inst_id(inst);
                        self.asy.remote_arrive = Some(((owner, s, e), self.epoch, t, id));
                    }
                }
            }
            AsyncOp::MbarrierWait { bar, index, parity } => {
                if let Some(p) = self.mbar_poll(inst, *bar, *index, *parity, m)? {
                    // lockstep: every thread that could arrive is here
                    let b = self.asy.bars[&p.key];
                    let kind =
                        if b.arrivals == 0 { AsyncBug::TxMismatch } else { AsyncBug::Deadlock };
                    let detail = self.pending_text(&p);
                    let detail = if kind == AsyncBug::Deadlock && m.full {
                        format!("{detail}, and every thread that could arrive is waiting here")
                    } else if kind == AsyncBug::Deadlock {
                        format!(
                            "{detail}, and the block runs in lockstep: {} of its {} threads are \
                             not at this wait and run only after it. If they would arrive — warps \
                             specialised by a loop bound instead of a branch — put the wait in an \
                             `if` on the warp (such kernels run one warp at a time)",
                            self.n - m.active.len(),
                            self.n
                        )
                    } else {
                        detail
                    };
                    let name = self.shared_name(p.key.1);
                    return Err(self.async_error(kind, inst, name, p.key.2, p.t, detail));
                }
            }
            AsyncOp::NamedBarrier { .. } => {
                return Err(InterpError::InvalidKernel {
                    kernel: self.k.name.clone(),
                    reason: format!(
                        "`{}` is a named barrier, which needs the independent warp schedule \
                         (Schedule::Auto or Schedule::Warps), not lockstep",
                        self.text(inst)
                    ),
                })
            }
            AsyncOp::BulkLoad { dst, dst_off, src, src_off, elems, bar, index, multicast } => {
                for &t in &m.active {
                    let t = t as usize;
                    let own = t / self.p.cta_threads;
                    let ranks: Vec<usize> = match multicast {
                        None => vec![own],
                        Some(mask) => {
                            let mask = self.defined(inst, *mask, t, "multicast mask")? & 0xffff;
                            if mask == 0 || mask >> self.p.ctas != 0 {
                                let detail = format!(
                                    "multicast mask {mask:#x}; valid: a non-empty set of the \
                                     cluster's {} ranks",
                                    self.p.ctas
                                );
                                let MemSpace::Shared(s) = dst.space else { unreachable!() };
                                let name = self.shared_name(s);
                                return Err(self.async_error(
                                    AsyncBug::BadBulkCopy,
                                    inst,
                                    name,
                                    0,
                                    t,
                                    detail,
                                ));
                            }
                            (0..self.p.ctas).filter(|r| mask >> r & 1 == 1).collect()
                        }
                    };
                    for r in ranks {
                        self.bulk_load(
                            inst,
                            (*dst, *dst_off),
                            (*src, *src_off),
                            *elems,
                            (*bar, *index),
                            (t, r),
                        )?;
                    }
                }
            }
            AsyncOp::BulkStore { dst, dst_off, src, src_off, elems } => {
                for &t in &m.active {
                    self.bulk_store(inst, (*dst, *dst_off), (*src, *src_off), *elems, t as usize)?;
                }
            }
            AsyncOp::TensorLoad { .. }
            | AsyncOp::TensorStore { .. }
            | AsyncOp::TensorPrefetch { .. } => self.exec_tma(inst, a, m)?,
            AsyncOp::SetMaxNReg { regs, .. } if self.p.warps => {
                // warps run one at a time: each warp must run it whole, in whole warpgroups
                let per = self.p.cta_threads;
                let t0 = m.active.first().map_or(0, |&t| t as usize);
                let warp = t0 / 32 * 32..(t0 / 32 * 32 + 32).min(self.n);
                let active = warp.clone().filter(|&t| m.on[t]).count();
                if active != warp.len() || !per.is_multiple_of(128) {
                    let t = warp.clone().find(|&t| !m.on[t]).unwrap_or(t0);
                    let detail = format!(
                        "{active} of the warp's threads execute setmaxnreg {regs}; whole warps \
                         of whole warpgroups (a block of a multiple of 128 threads: this one \
                         has {per}) execute it"
                    );
                    let kind = AsyncBug::WarpgroupDivergence;
                    return Err(self.async_error(kind, inst, String::new(), 0, t, detail));
                }
                // the warpgroup's other warps must run it too (checked when the block ends)
                let key = (t0 / 128, self.p.inst_id(inst));
                self.asy.maxnreg.entry(key).or_insert((0, t0)).0 |= 1 << (t0 / 32 % 4);
            }
            AsyncOp::SetMaxNReg { regs, .. } => {
                // whole warpgroups (4 warps of the block) execute it together
                let per = self.p.cta_threads;
                let on = |t: usize| m.on[t];
                for t0 in (0..self.n).step_by(128) {
                    let group = t0..(t0 + 128).min(self.n);
                    let active = group.clone().filter(|&t| on(t)).count();
                    let whole = per.is_multiple_of(128);
                    if active > 0 && (active != 128 || !whole) {
                        let t = group.clone().find(|&t| !on(t)).unwrap_or(t0);
                        let detail = format!(
                            "{active} of the warpgroup's threads execute setmaxnreg {regs}; a \
                             warpgroup (128 threads, of a block of whole warpgroups: this one \
                             has {per}) executes it together"
                        );
                        let inst_mem = String::new();
                        return Err(self.async_error(
                            AsyncBug::WarpgroupDivergence,
                            inst,
                            inst_mem,
                            0,
                            t,
                            detail,
                        ));
                    }
                }
            }
            AsyncOp::BulkCommit => {
                for &t in &m.active {
                    *self.asy.group.entry(t as usize).or_insert(0) += 1;
                }
            }
            AsyncOp::BulkWait { pending, .. } => {
                // reads finish before writes, so both forms retire the reads of shared memory
                for &t in &m.active {
                    let t = t as usize;
                    let open = self.asy.group.get(&t).copied().unwrap_or(0);
                    let keep_from = open.saturating_sub(u64::from(*pending));
                    self.asy.reads.retain(|_, (rt, g)| *rt != t || *g >= keep_from);
                }
            }
        }
        Ok(())
    }

    /// Checks a bulk copy's extent: 16-byte aligned ends, a whole number of 16 bytes, inside
    /// both memories. Returns (shared start, global start, elements).
    #[allow(clippy::too_many_arguments)]
    fn bulk_extent(
        &self,
        inst: &Inst,
        (sh, sh_off): (MemRef, ValueId),
        (_, gl_off): (MemRef, ValueId),
        elems: ValueId,
        t: usize,
        glen: usize,
    ) -> R<(usize, usize, usize)> {
        let MemSpace::Shared(s) = sh.space else { unreachable!("validated: shared side") };
        let size = sh.elem.size_bytes() as i64;
        let n = self.defined(inst, elems, t, "element count")? as i64;
        let so = self.defined(inst, sh_off, t, "shared offset")? as i64;
        let go = self.defined(inst, gl_off, t, "global offset")? as i64;
        let slen = self.shared_len(inst, s)? as i64;
        let bad = |why: String| {
            Err(self.async_error(
                AsyncBug::BadBulkCopy,
                inst,
                self.shared_name(s),
                so.max(0) as usize,
                t,
                why,
            ))
        };
        if n <= 0 || (n * size) % 16 != 0 {
            return bad(format!(
                "{n} elements = {} bytes; valid: a positive multiple of 16 bytes",
                n * size
            ));
        }
        if (so * size) % 16 != 0 || (go * size) % 16 != 0 {
            return bad(format!(
                "shared byte offset {} and global byte offset {} must both be multiples of 16",
                so * size,
                go * size
            ));
        }
        if so < 0 || so + n > slen || go < 0 || go + n > glen as i64 {
            return bad(format!(
                "elements {so}..{} of shared (length {slen}) and {go}..{} of global (length {glen})",
                so + n,
                go + n
            ));
        }
        Ok((so as usize, go as usize, n as usize))
    }

    fn bulk_load(
        &mut self,
        inst: &Inst,
        dst: (MemRef, ValueId),
        src: (MemRef, ValueId),
        elems: ValueId,
        (bar, index): (MemRef, ValueId),
        (t, cta): (usize, usize),
    ) -> R {
        let MemSpace::Global(p) = src.0.space else { unreachable!("validated: global source") };
        let MemSpace::Shared(s) = dst.0.space else {
            unreachable!("validated: shared destination")
        };
        // the barrier at the same index in the destination block
        let (_, bs, bi) = self.bar_key(inst, bar, index, t)?;
        let key = (cta, bs, bi);
        self.bar_state(inst, key, t)?;
        let g = self.global(inst, p)?;
        let bits: Vec<u64>;
        let (so, go, n);
        match g {
            Global::ReadOnly(buf) => {
                (so, go, n) = self.bulk_extent(inst, dst, src, elems, t, buf.len())?;
                bits = (go..go + n).map(|i| buf.bits(i)).collect();
            }
            Global::Written(lock, _) => {
                let buf = lock.read().unwrap_or_else(|e| e.into_inner());
                (so, go, n) = self.bulk_extent(inst, dst, src, elems, t, buf.len())?;
                bits = (go..go + n).map(|i| buf.bits(i)).collect();
                drop(buf);
                if self.probe.is_none() {
                    let id = self.p.inst_id(inst);
                    self.record(p, false, go, n, t, id, self.steps);
                }
            }
            Global::Scalar => return Err(self.not_a_buffer(p)),
        }
        for x in so..so + n {
            self.copy_target(inst, (cta, s, x), t)?;
        }
        let i = self.asy.loads.len();
        for x in so..so + n {
            self.asy.landing.insert((cta, s, x), i);
        }
        let id = self.p.inst_id(inst);
        self.asy.loads.push(Load { cta, s, start: so, bits, bar: key, thread: t, inst: id });
        Ok(())
    }

    /// Shared element `k` (block, allocation, element) as the destination of a bulk or tensor
    /// load issued by lane `t`: no in-flight wgmma, bulk store or other load may still read or
    /// write it, and (warp schedule) every thread's access to it is ordered before the copy.
    pub(crate) fn copy_target(&self, inst: &Inst, k: (usize, u32, usize), t: usize) -> R {
        let (cta, s, x) = k;
        self.wg_shared_write(inst, cta, s, x, t)?;
        if let Some(&(rt, g)) = self.asy.reads.get(&k) {
            let detail =
                format!("thread {:?}'s bulk group {g} may still be reading it", self.thread(rt));
            let kind = AsyncBug::OverwriteWhileStoreReads;
            return Err(self.async_error(kind, inst, self.shared_name(s), x, t, detail));
        }
        if self.p.warps {
            let hb = super::warps::Hb::new(&self.vc, self.cur_warp, self.p.cta_threads);
            let mem = &self.shared[cta][s as usize];
            if let Some((r, w)) = mem.unordered(x, t as u32, |r| hb.ordered(r)) {
                let detail = format!(
                    "thread {:?} of block {:?} {} it (`{}`) and nothing orders that access \
                     before this copy (the issuer must wait on a barrier phase the accessing \
                     thread arrived on after it, such as the stage's `empty` mbarrier)",
                    self.thread(r.thread as usize),
                    self.block_of(r.thread as usize),
                    if w { "wrote" } else { "read" },
                    self.inst_text_of(r.inst)
                );
                let kind = AsyncBug::OverwriteWhileRead;
                return Err(self.async_error(kind, inst, self.shared_name(s), x, t, detail));
            }
        }
        if self.asy.landing.contains_key(&k) {
            let detail = "another bulk load in flight writes it too".to_string();
            let kind = AsyncBug::WriteBeforeComplete;
            return Err(self.async_error(kind, inst, self.shared_name(s), x, t, detail));
        }
        Ok(())
    }

    fn bulk_store(
        &mut self,
        inst: &Inst,
        dst: (MemRef, ValueId),
        src: (MemRef, ValueId),
        elems: ValueId,
        t: usize,
    ) -> R {
        let MemSpace::Global(p) = dst.0.space else {
            unreachable!("validated: global destination")
        };
        let MemSpace::Shared(s) = src.0.space else { unreachable!("validated: shared source") };
        let lock = match self.global(inst, p)? {
            Global::Written(lock, _) => lock,
            _ => return Err(self.not_a_buffer(p)),
        };
        let glen = lock.read().unwrap_or_else(|e| e.into_inner()).len();
        let (so, go, n) = self.bulk_extent(inst, src, dst, elems, t, glen)?;
        let cta = t / self.p.cta_threads;
        let group = self.asy.group.get(&t).copied().unwrap_or(0);
        let id = self.p.inst_id(inst);
        let mut bits = Vec::with_capacity(n);
        for x in so..so + n {
            let k = (cta, s, x);
            self.async_source(inst, k, t)?;
            let rec = Rec { epoch: self.epoch, thread: t as u32, inst: id };
            let res = shared_read!(self, cta, s as usize, x, rec);
            let (v, init) = res.map_err(|c| self.race(inst, s, c, t, false))?;
            if !init {
                let detail = "it was never written: the bulk store would copy garbage".to_string();
                let kind = AsyncBug::ReadBeforeComplete;
                return Err(self.async_error(kind, inst, self.shared_name(s), x, t, detail));
            }
            bits.push(v);
            self.asy.reads.insert(k, (t, group));
        }
        if self.probe.is_none() {
            let mut buf = lock.write().unwrap_or_else(|e| e.into_inner());
            for (j, &b) in bits.iter().enumerate() {
                buf.set_bits(go + j, b);
            }
            drop(buf);
            self.record(p, true, go, n, t, id, self.steps);
        }
        Ok(())
    }
}
