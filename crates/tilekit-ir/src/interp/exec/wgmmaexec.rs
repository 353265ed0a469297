//! The interpreter side of [`crate::wgmma`]: descriptors, `wgmma.mma_async` and its groups on
//! the lockstep schedule.
//!
//! ```text
//!   state per block (cluster) run
//!   inflight   accumulator value → per warpgroup (its first lane): (group, the wgmma)
//!   open       per warpgroup: the group being formed (committed groups are 0..open)
//!   fence      per warpgroup: step of its last wgmma.fence
//!   reads      shared elements an in-flight wgmma reads → (warpgroup, group, the wgmma)
//!   def        per value: step of its last write by a non-wgmma op (loop-carried and if-merged
//!              values inherit it from the value they copy)
//!
//!   a wgmma reads shared memory and computes D at issue (a legal schedule, since writing its
//!   operands or touching D before the wait is an error); D is marked in flight until the
//!   wait_group that retires its group. Copies of an in-flight value into a loop-carried or
//!   merged value are renames (the registers stay the same) and carry the mark.
//! ```

use std::collections::HashMap;

use super::{BlockExec, Mask, R};
use crate::eval::to_f64;
use crate::interp::error::{AsyncBug, InterpError};
use crate::interp::memory::Rec;
use crate::op::{Inst, MemSpace, Op, ValueId};
use crate::types::ScalarType;
use crate::wgmma::{a_coord, acc_coord, Major, MatrixDescriptor, WgmmaA, WgmmaOp, WgmmaShape};

/// What the wgmma ops of one block (cluster) run have in flight.
#[derive(Debug, Default)]
pub(crate) struct WgState {
    inflight: HashMap<ValueId, HashMap<usize, (u64, u32)>>,
    open: HashMap<usize, u64>,
    fence: HashMap<usize, u64>,
    reads: HashMap<(usize, u32, usize), (usize, u64, u32)>,
    def: Vec<u64>,
}

impl WgState {
    pub(crate) fn clear(&mut self, values: usize) {
        self.inflight.clear();
        self.open.clear();
        self.fence.clear();
        self.reads.clear();
        self.def.clear();
        self.def.resize(values, 0);
    }
}

impl<'a> BlockExec<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn wg_error(
        &self,
        kind: AsyncBug,
        inst: &Inst,
        mem: String,
        element: usize,
        t: usize,
        detail: String,
    ) -> InterpError {
        let lane = t % self.p.cta_threads;
        InterpError::Async {
            kind,
            inst: self.text(inst),
            mem,
            element,
            block: self.block_of(t),
            thread: self.thread(t),
            detail: format!("warp {} (warpgroup {}): {detail}", lane / 32, lane / 128),
        }
    }

    fn wg_name(&self, s: u32) -> String {
        self.k.shared.get(s as usize).map(|d| d.name.clone()).unwrap_or_default()
    }

    fn wg_inst(&self, id: u32) -> String {
        self.p.insts.get(id as usize).map(|i| self.text(i)).unwrap_or_default()
    }

    /// The warpgroups (first lanes) with an active lane; a partly active one is an error.
    fn warpgroups(&self, inst: &Inst, m: &Mask) -> R<Vec<usize>> {
        let mut out = vec![];
        for t0 in (0..self.n).step_by(128) {
            let active = (t0..(t0 + 128).min(self.n)).filter(|&t| m.on[t]).count();
            if active == 0 {
                continue;
            }
            if active != 128 || !self.p.cta_threads.is_multiple_of(128) {
                let t = (t0..(t0 + 128).min(self.n)).find(|&t| !m.on[t]).unwrap_or(t0);
                let detail = format!(
                    "{active} of the warpgroup's 128 threads execute it; every thread of a \
                     warpgroup (of a block of whole warpgroups: this one has {}) executes a \
                     wgmma op together",
                    self.p.cta_threads
                );
                let kind = AsyncBug::WarpgroupDivergence;
                return Err(self.wg_error(kind, inst, String::new(), 0, t, detail));
            }
            out.push(t0);
        }
        Ok(out)
    }

    /// Before `inst` runs: none of the values it reads may be an in-flight accumulator of a
    /// warpgroup with an active lane.
    pub(crate) fn wg_before(&self, inst: &Inst, m: &Mask) -> R {
        if self.wg.inflight.is_empty() {
            return Ok(());
        }
        let reads = match &inst.op {
            Op::Wgmma(_) => return Ok(()),
            Op::For { lo, hi, step, .. } => vec![*lo, *hi, *step],
            op => op.operands(),
        };
        for v in reads {
            self.wg_read(inst, v, m)?;
        }
        Ok(())
    }

    fn wg_read(&self, inst: &Inst, v: ValueId, m: &Mask) -> R {
        let Some(groups) = self.wg.inflight.get(&v) else { return Ok(()) };
        for (&base, &(g, id)) in groups {
            if let Some(t) = (base..(base + 128).min(self.n)).find(|&t| m.on[t]) {
                let detail = format!(
                    "it reads {v}, an accumulator of `{}` (group {g}) still in flight: \
                     wgmma.wait_group first",
                    self.wg_inst(id)
                );
                let kind = AsyncBug::AccumulatorInFlight;
                return Err(self.wg_error(kind, inst, String::new(), 0, t, detail));
            }
        }
        Ok(())
    }

    /// After `inst` ran: its results were written at this step (wgmma results are marked by
    /// the wgmma; loop and if results by [`wg_rename`](Self::wg_rename)).
    pub(crate) fn wg_after(&mut self, inst: &Inst) {
        if matches!(inst.op, Op::Wgmma(_) | Op::For { .. } | Op::If { .. }) {
            return;
        }
        for r in &inst.results {
            if let Some(d) = self.wg.def.get_mut(r.0 as usize) {
                *d = self.steps;
            }
        }
    }

    /// Copies `src → dst` pairs (loop-carried values, if results) as one parallel assignment
    /// on the warpgroups with a lane in `m`: the in-flight marks and write steps travel with the
    /// values. Overwriting a value that holds an in-flight accumulator of one of those
    /// warpgroups with one that does not is an error. The marks of the other warpgroups stay
    /// as they are: on the independent warp schedule a warp's loop step renames only its own
    /// registers, while another warpgroup's wgmma may still be in flight on the same values.
    pub(crate) fn wg_rename(&mut self, inst: &Inst, pairs: &[(ValueId, ValueId)], m: &Mask) -> R {
        if !self.p.has_wgmma {
            return Ok(());
        }
        let bases: Vec<usize> = (0..self.n)
            .step_by(128)
            .filter(|&t0| (t0..(t0 + 128).min(self.n)).any(|t| m.on[t]))
            .collect();
        let mine = |groups: Option<&HashMap<usize, (u64, u32)>>| -> HashMap<usize, (u64, u32)> {
            groups
                .map(|g| {
                    g.iter().filter(|(b, _)| bases.contains(b)).map(|(b, x)| (*b, *x)).collect()
                })
                .unwrap_or_default()
        };
        let snap: Vec<_> = pairs
            .iter()
            .map(|(_, s)| (mine(self.wg.inflight.get(s)), self.wg.def[s.0 as usize]))
            .collect();
        for (&(d, s), (st, def)) in pairs.iter().zip(snap) {
            if d == s {
                continue;
            }
            let held = mine(self.wg.inflight.get(&d));
            if let Some((&base, &(g, id))) =
                held.iter().filter(|(b, _)| !st.contains_key(b)).min_by_key(|(b, _)| **b)
            {
                let detail = format!(
                    "{d} holds an accumulator of `{}` (group {g}) still in flight, and this \
                     overwrites it with {s}: wgmma.wait_group first",
                    self.wg_inst(id)
                );
                let kind = AsyncBug::AccumulatorInFlight;
                return Err(self.wg_error(kind, inst, String::new(), 0, base, detail));
            }
            let entry = self.wg.inflight.entry(d).or_default();
            entry.retain(|b, _| !bases.contains(b));
            entry.extend(st);
            if entry.is_empty() {
                self.wg.inflight.remove(&d);
            }
            self.wg.def[d.0 as usize] = def;
        }
        Ok(())
    }

    /// A shared write by a thread (or a bulk load) of element `x` of allocation `s` in block
    /// `cta`: an in-flight wgmma may not be reading it.
    pub(crate) fn wg_shared_write(&self, inst: &Inst, cta: usize, s: u32, x: usize, t: usize) -> R {
        if let Some(&(base, g, id)) = self.wg.reads.get(&(cta, s, x)) {
            let detail = format!(
                "`{}` of the warpgroup at thread {:?} (group {g}) still reads it: \
                 wgmma.wait_group first",
                self.wg_inst(id),
                self.thread(base)
            );
            let kind = AsyncBug::OverwriteWhileWgmmaReads;
            return Err(self.wg_error(kind, inst, self.wg_name(s), x, t, detail));
        }
        Ok(())
    }

    /// The block's run ends: every wgmma must have been retired.
    pub(crate) fn wgmma_end(&self) -> R {
        let first = self
            .wg
            .inflight
            .iter()
            .flat_map(|(v, m)| m.iter().map(move |(b, x)| (*b, *v, *x)))
            .min();
        if let Some((base, v, (g, id))) = first {
            if let Some(inst) = self.p.insts.get(id as usize) {
                let detail = format!(
                    "its accumulator {v} (group {g}) was never retired by a wgmma.wait_group \
                     (a group is retired only once committed)"
                );
                return Err(self.wg_error(
                    AsyncBug::WgmmaAtExit,
                    inst,
                    String::new(),
                    0,
                    base,
                    detail,
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn exec_wgmma(&mut self, inst: &Inst, w: &WgmmaOp, m: &Mask) -> R {
        match w {
            WgmmaOp::Fence => {
                for b in self.warpgroups(inst, m)? {
                    self.wg.fence.insert(b, self.steps);
                }
            }
            WgmmaOp::Commit => {
                for b in self.warpgroups(inst, m)? {
                    *self.wg.open.entry(b).or_insert(0) += 1;
                }
            }
            WgmmaOp::Wait { pending } => {
                for b in self.warpgroups(inst, m)? {
                    let open = self.wg.open.get(&b).copied().unwrap_or(0);
                    let retired = |g: u64| g + (*pending as u64) < open;
                    for groups in self.wg.inflight.values_mut() {
                        groups.retain(|&base, &mut (g, _)| base != b || !retired(g));
                    }
                    self.wg.inflight.retain(|_, groups| !groups.is_empty());
                    self.wg.reads.retain(|_, &mut (base, g, _)| base != b || !retired(g));
                }
            }
            WgmmaOp::Desc { mem, origin, matrix, block } => {
                let MemSpace::Shared(s) = mem.space else { unreachable!("validated: shared") };
                let len = self.shared_len(inst, s)?;
                let r = inst.results[0];
                let eb = mem.elem.size_bytes();
                for &t in &m.active {
                    let t = t as usize;
                    let o = self.element(inst, *origin, 1, mem.space, len, t)?;
                    if o + matrix.extent() > len {
                        let detail = format!(
                            "the tile at element {o} spans {} elements, past the allocation's {len}",
                            matrix.extent()
                        );
                        let kind = AsyncBug::BadDescriptor;
                        return Err(self.wg_error(kind, inst, self.wg_name(s), o, t, detail));
                    }
                    let addr = self.p.smem_offsets[s as usize] + o * eb;
                    if addr + matrix.extent() * eb > 1 << 18 {
                        let detail = format!(
                            "shared byte {addr} is beyond the 256 KiB a descriptor addresses"
                        );
                        let kind = AsyncBug::BadDescriptor;
                        return Err(self.wg_error(kind, inst, self.wg_name(s), o, t, detail));
                    }
                    if let Err(d) = matrix.check(addr as u32, *block as usize) {
                        let detail = format!(
                            "{d} (the tile's origin, shared byte {addr}, must be aligned to {} \
                             bytes for its {:?} layout)",
                            matrix.align_bytes(),
                            matrix.layout()
                        );
                        let kind = AsyncBug::DescriptorMismatch;
                        return Err(self.wg_error(kind, inst, self.wg_name(s), o, t, detail));
                    }
                    let bits = matrix.descriptor(addr as u32, *block as usize).encode();
                    self.set(r, t, bits, false);
                }
                if m.full {
                    self.normalize(r);
                }
            }
            WgmmaOp::Mma { shape, a, b, c, scale_d } => {
                for base in self.warpgroups(inst, m)? {
                    self.wgmma_one(inst, base, *shape, a, *b, c, *scale_d)?;
                }
            }
        }
        Ok(())
    }

    /// Maps a shared byte address (in the layout of [`crate::wgmma::shared_offsets`]) to
    /// (allocation, element) of an allocation of type `elem`.
    fn smem_at(&self, addr: u32, elem: ScalarType) -> Option<(u32, usize)> {
        let addr = addr as usize;
        self.k.shared.iter().enumerate().find_map(|(s, d)| {
            let o = self.p.smem_offsets[s];
            let eb = d.elem.size_bytes();
            (d.elem == elem && addr >= o && addr < o + d.len * eb && (addr - o).is_multiple_of(eb))
                .then(|| (s as u32, (addr - o) / eb))
        })
    }

    /// Reads one operand (64×K for A, N×K for B) through a descriptor.
    #[allow(clippy::too_many_arguments)]
    fn wg_operand(
        &mut self,
        inst: &Inst,
        base: usize,
        desc: u64,
        major: Major,
        (rows, shape): (usize, WgmmaShape),
        group: u64,
        what: &str,
    ) -> R<Vec<f64>> {
        let ty = shape.ty;
        let (kk, elem) = (ty.k(), ty.elem());
        let d = MatrixDescriptor::decode(desc);
        let cta = base / self.p.cta_threads;
        let id = self.p.inst_id(inst);
        if d.base_offset != 0 {
            let detail = format!(
                "the {what} descriptor has base offset {}; tilekit aligns tiles and uses 0",
                d.base_offset
            );
            return Err(self.wg_error(
                AsyncBug::BadDescriptor,
                inst,
                String::new(),
                0,
                base,
                detail,
            ));
        }
        let mut out = vec![0f64; rows * kk];
        for i in 0..rows {
            for j in 0..kk {
                let addr = d.address(major, elem.size_bytes(), i, j);
                let Some((s, e)) = self.smem_at(addr, elem) else {
                    let detail = format!(
                        "the {what} descriptor ({desc:#018x}) reads element ({i}, {j}) at shared byte \
                         {addr}, which is in no {elem} allocation"
                    );
                    return Err(self.wg_error(
                        AsyncBug::BadDescriptor,
                        inst,
                        String::new(),
                        0,
                        base,
                        detail,
                    ));
                };
                let key = (cta, s, e);
                if let Some(&l) = self.asy.landing.get(&key) {
                    let detail = format!(
                        "{what} element ({i}, {j}): the bulk load `{}` has not completed",
                        self.wg_inst(self.asy.loads[l].inst)
                    );
                    let kind = AsyncBug::ReadBeforeComplete;
                    return Err(self.wg_error(kind, inst, self.wg_name(s), e, base, detail));
                }
                if let Err(unfenced) = self.proxy_fenced(key) {
                    let detail = format!(
                        "{what} element ({i}, {j}): {}; wgmma reads through the async proxy",
                        self.proxy_detail(unfenced)
                    );
                    let kind = AsyncBug::MissingProxyFence;
                    return Err(self.wg_error(kind, inst, self.wg_name(s), e, base, detail));
                }
                let rec = Rec { epoch: self.epoch, thread: base as u32, inst: id };
                let res = self.shared[cta][s as usize].read(e, rec, self.base);
                let (bits, init) = res.map_err(|c| self.race(inst, s, c, base, false))?;
                if !init {
                    let detail = format!("{what} element ({i}, {j}) was never written");
                    return Err(self.wg_error(
                        AsyncBug::BadDescriptor,
                        inst,
                        self.wg_name(s),
                        e,
                        base,
                        detail,
                    ));
                }
                out[i * kk + j] = ty.input(to_f64(elem, bits));
                self.wg.reads.insert(key, (base, group, id));
            }
        }
        Ok(out)
    }

    /// A uniform operand of the warpgroup (a descriptor), defined and not in flight.
    fn wg_uniform(&self, inst: &Inst, base: usize, v: ValueId, what: &str) -> R<u64> {
        let x = self.defined(inst, v, base, what)?;
        for t in base..base + 128 {
            if self.defined(inst, v, t, what)? != x {
                let detail = format!(
                    "the {what} differs between threads {:?} and {:?} of the warpgroup",
                    self.thread(base),
                    self.thread(t)
                );
                return Err(self.wg_error(
                    AsyncBug::BadDescriptor,
                    inst,
                    String::new(),
                    0,
                    t,
                    detail,
                ));
            }
        }
        Ok(x)
    }

    #[allow(clippy::too_many_arguments)]
    fn wgmma_one(
        &mut self,
        inst: &Inst,
        base: usize,
        shape: WgmmaShape,
        a: &WgmmaA,
        b: ValueId,
        c: &[ValueId],
        scale_d: Option<ValueId>,
    ) -> R {
        let mut regs: Vec<ValueId> = c.to_vec();
        if let WgmmaA::Regs(r) = a {
            regs.extend(r);
        }
        // reads that must not be in flight (c may be: consecutive wgmmas chain accumulators)
        let mut plain: Vec<ValueId> = a.values();
        plain.push(b);
        plain.extend(scale_d);
        for &v in &plain {
            let on: Vec<bool> = (0..self.n).map(|t| t >= base && t < base + 128).collect();
            let mk = Mask { on, active: vec![], full: false };
            self.wg_read(inst, v, &mk)?;
        }
        // wgmma.fence after the last register write to its operands
        let fence = self.wg.fence.get(&base).copied();
        for &v in &regs {
            let def = self.wg.def[v.0 as usize];
            let in_flight = self.wg.inflight.get(&v).is_some_and(|m| m.contains_key(&base));
            if !in_flight && fence.is_none_or(|f| def > f) {
                let detail = format!(
                    "{v} was written at step {def} and the warpgroup's last wgmma.fence {}",
                    fence.map_or("never ran".to_string(), |f| format!("was at step {f}"))
                );
                let kind = AsyncBug::MissingWgmmaFence;
                return Err(self.wg_error(kind, inst, String::new(), 0, base, detail));
            }
        }
        if fence.is_none() {
            let detail = "no wgmma.fence before the warpgroup's first wgmma".to_string();
            let kind = AsyncBug::MissingWgmmaFence;
            return Err(self.wg_error(kind, inst, String::new(), 0, base, detail));
        }
        let group = self.wg.open.get(&base).copied().unwrap_or(0);
        let (n, kk) = (shape.n as usize, shape.ty.k());
        let major = |t: bool| if t { Major::MN } else { Major::K };
        let av: Vec<f64> = match a {
            WgmmaA::Desc(d) => {
                let desc = self.wg_uniform(inst, base, *d, "A descriptor")?;
                self.wg_operand(inst, base, desc, major(shape.trans_a), (64, shape), group, "A")?
            }
            WgmmaA::Regs(r) => {
                let mut out = vec![0f64; 64 * kk];
                // 16-bit values one per register, or two per u32 word (value 2j low)
                let per = if r.len() < shape.ty.a_regs() { 2 } else { 1 };
                for l in 0..128 {
                    for (j, &v) in r.iter().enumerate() {
                        let x = self.defined(inst, v, base + l, "wgmma A fragment")?;
                        for h in 0..per {
                            let (row, col) = a_coord(shape.ty, l, per * j + h);
                            let bits = if per == 2 { (x >> (16 * h)) & 0xffff } else { x };
                            out[row * kk + col] = shape.ty.input(to_f64(shape.ty.elem(), bits));
                        }
                    }
                }
                out
            }
        };
        let bdesc = self.wg_uniform(inst, base, b, "B descriptor")?;
        let bv =
            self.wg_operand(inst, base, bdesc, major(shape.trans_b), (n, shape), group, "B")?;
        let mut out = vec![(0u64, false); 128 * shape.acc_regs()];
        for l in 0..128 {
            let t = base + l;
            let scale = match scale_d {
                Some(p) => self.defined(inst, p, t, "wgmma scale-d")? != 0,
                None => !c.is_empty(),
            };
            for i in 0..shape.acc_regs() {
                let (row, col) = acc_coord(l, i);
                let mut d: f64 = (0..kk).map(|k| av[row * kk + k] * bv[col * kk + k]).sum();
                if scale {
                    d += to_f64(ScalarType::F32, self.defined(inst, c[i], t, "wgmma accumulator")?);
                }
                out[l * shape.acc_regs() + i] = ((d as f32).to_bits() as u64, false);
            }
        }
        let id = self.p.inst_id(inst);
        for l in 0..128 {
            for (i, &r) in inst.results.iter().enumerate() {
                let (bits, p) = out[l * shape.acc_regs() + i];
                self.set(r, base + l, bits, p);
            }
        }
        for &r in &inst.results {
            self.normalize(r);
            self.wg.inflight.entry(r).or_default().insert(base, (group, id));
            self.wg.def[r.0 as usize] = 0;
        }
        Ok(())
    }
}
