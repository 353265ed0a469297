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
//! Running the whole block in lockstep is a legal schedule for any kernel whose barriers are
//! uniform (the only kind structured control flow with `bar.sync` permits), and the race
//! detector does not depend on the schedule: it compares accesses by barrier epoch, not by the
//! order they happened in. Registers start *poisoned* (uninitialised); poison spreads through
//! arithmetic and is an error where it would change behaviour (addresses, masks, conditions,
//! bounds, values stored to global memory).

use std::collections::HashMap;

use crate::eval::{eval_binary, eval_cmp, eval_cvt, eval_fma, eval_unary};
use crate::interp::error::{Access, InterpError};
use crate::interp::memory::{Conflict, GlobalView, Rec, SharedMem};
use crate::kernel::Kernel;
use crate::op::{Block, Inst, MemSpace, Op, SpecialReg, ValueId};
use crate::types::ScalarType;

pub(crate) struct BlockExec<'a> {
    pub(crate) k: &'a Kernel,
    pub(crate) n: usize,
    pub(crate) block: [u32; 3],
    pub(crate) grid: [u32; 3],
    pub(crate) regs: Vec<u64>,
    pub(crate) poison: Vec<bool>,
    pub(crate) scalars: &'a [u64],
    pub(crate) shared: Vec<SharedMem>,
    pub(crate) global: GlobalView<'a>,
    pub(crate) epoch: u32,
    pub(crate) inst_ids: &'a HashMap<usize, u32>,
    pub(crate) insts: &'a [&'a Inst],
    pub(crate) steps: u64,
}

type R<T = ()> = Result<T, InterpError>;

impl<'a> BlockExec<'a> {
    pub(crate) fn thread(&self, t: usize) -> [u32; 3] {
        let [bx, by, _] = self.k.block_dim;
        let (bx, by) = (bx as usize, by as usize);
        [(t % bx) as u32, ((t / bx) % by) as u32, (t / (bx * by)) as u32]
    }

    pub(crate) fn text(&self, inst: &Inst) -> String {
        crate::dump::inst_text(self.k, inst)
    }

    #[inline]
    pub(crate) fn get(&self, v: ValueId, t: usize) -> u64 {
        self.regs[v.0 as usize * self.n + t]
    }

    #[inline]
    pub(crate) fn is_poison(&self, v: ValueId, t: usize) -> bool {
        self.poison[v.0 as usize * self.n + t]
    }

    #[inline]
    pub(crate) fn set(&mut self, v: ValueId, t: usize, bits: u64, poison: bool) {
        let i = v.0 as usize * self.n + t;
        self.regs[i] = bits;
        self.poison[i] = poison;
    }

    /// The value, or a Poison error naming its role.
    pub(crate) fn defined(&self, inst: &Inst, v: ValueId, t: usize, what: &str) -> R<u64> {
        if self.is_poison(v, t) {
            return Err(InterpError::Poison {
                inst: self.text(inst),
                value: v.to_string(),
                what: what.into(),
                block: self.block,
                thread: self.thread(t),
            });
        }
        Ok(self.get(v, t))
    }

    pub(crate) fn run_block(&mut self, b: &Block, mask: &[bool]) -> R {
        for inst in &b.insts {
            self.steps += 1;
            self.exec(inst, mask)?;
        }
        Ok(())
    }

    fn special(&self, reg: SpecialReg, t: usize) -> u64 {
        let th = self.thread(t);
        let v = match reg {
            SpecialReg::ThreadId(a) => th[a.index()],
            SpecialReg::BlockDim(a) => self.k.block_dim[a.index()],
            SpecialReg::BlockId(a) => self.block[a.index()],
            SpecialReg::GridDim(a) => self.grid[a.index()],
            SpecialReg::LaneId => (t % 32) as u32,
            SpecialReg::WarpId => (t / 32) as u32,
        };
        v as u64
    }

    fn exec(&mut self, inst: &Inst, mask: &[bool]) -> R {
        let n = self.n;
        let r0 = inst.results.first().copied();
        let active: Vec<usize> = (0..n).filter(|&t| mask[t]).collect();
        match &inst.op {
            Op::Const(l) => {
                let r = r0.unwrap_or(ValueId(0));
                for t in 0..n {
                    self.set(r, t, l.bits(), false);
                }
            }
            Op::Param(i) => {
                let r = r0.unwrap_or(ValueId(0));
                let v = self.scalars[*i as usize];
                for t in 0..n {
                    self.set(r, t, v, false);
                }
            }
            Op::Special(reg) => {
                let r = r0.unwrap_or(ValueId(0));
                for t in 0..n {
                    let v = self.special(*reg, t);
                    self.set(r, t, v, false);
                }
            }
            Op::Unary(op, a) => {
                let (r, ty) = (r0.unwrap_or(ValueId(0)), self.k.ty(*a));
                for &t in &active {
                    let p = self.is_poison(*a, t);
                    let v = eval_unary(*op, ty, self.get(*a, t)).unwrap_or(0);
                    self.set(r, t, v, p);
                }
            }
            Op::Binary(op, a, b) => {
                let (r, ty) = (r0.unwrap_or(ValueId(0)), self.k.ty(*a));
                for &t in &active {
                    let p = self.is_poison(*a, t) || self.is_poison(*b, t);
                    let v = match eval_binary(*op, ty, self.get(*a, t), self.get(*b, t)) {
                        Ok(v) => v,
                        Err(_) if p => 0,
                        Err(_) => {
                            return Err(InterpError::DivisionByZero {
                                inst: self.text(inst),
                                block: self.block,
                                thread: self.thread(t),
                            })
                        }
                    };
                    self.set(r, t, v, p);
                }
            }
            Op::Fma(a, b, c) => {
                let (r, ty) = (r0.unwrap_or(ValueId(0)), self.k.ty(*a));
                for &t in &active {
                    let p = [a, b, c].iter().any(|v| self.is_poison(**v, t));
                    let v = eval_fma(ty, self.get(*a, t), self.get(*b, t), self.get(*c, t))
                        .unwrap_or(0);
                    self.set(r, t, v, p);
                }
            }
            Op::Cmp(op, a, b) => {
                let (r, ty) = (r0.unwrap_or(ValueId(0)), self.k.ty(*a));
                for &t in &active {
                    let p = self.is_poison(*a, t) || self.is_poison(*b, t);
                    let v = eval_cmp(*op, ty, self.get(*a, t), self.get(*b, t));
                    self.set(r, t, v, p);
                }
            }
            Op::Select(c, a, b) => {
                let r = r0.unwrap_or(ValueId(0));
                for &t in &active {
                    let pick = if self.get(*c, t) != 0 { *a } else { *b };
                    let p = self.is_poison(*c, t) || self.is_poison(pick, t);
                    let v = self.get(pick, t);
                    self.set(r, t, v, p);
                }
            }
            Op::Cvt(a) => {
                let r = r0.unwrap_or(ValueId(0));
                let (from, to) = (self.k.ty(*a), self.k.ty(r));
                for &t in &active {
                    let p = self.is_poison(*a, t);
                    let v = eval_cvt(from, to, self.get(*a, t));
                    self.set(r, t, v, p);
                }
            }
            Op::Load { mem, offset, width, mask: m } => {
                let w = *width as usize;
                for &t in &active {
                    if let Some(m) = m {
                        if self.defined(inst, *m, t, "mask")? == 0 {
                            for &r in &inst.results {
                                self.set(r, t, 0, false);
                            }
                            continue;
                        }
                    }
                    let e = self.element(inst, *offset, w, mem.space, t)?;
                    for (j, &r) in inst.results.iter().enumerate() {
                        let (v, init) = match mem.space {
                            MemSpace::Global(p) => (self.global.read(p, e + j), true),
                            MemSpace::Shared(s) => {
                                let rec = self.rec(inst, t);
                                let res = self.shared[s as usize].read(e + j, rec);
                                res.map_err(|c| self.race(inst, s, c, t, false))?
                            }
                        };
                        self.set(r, t, v, !init);
                    }
                }
            }
            Op::Store { mem, offset, values, mask: m } => {
                let w = values.len();
                for &t in &active {
                    if let Some(m) = m {
                        if self.defined(inst, *m, t, "mask")? == 0 {
                            continue;
                        }
                    }
                    let e = self.element(inst, *offset, w, mem.space, t)?;
                    for (j, &v) in values.iter().enumerate() {
                        match mem.space {
                            MemSpace::Global(p) => {
                                let bits = self.defined(inst, v, t, "stored value")?;
                                self.global.write(p, e + j, bits);
                            }
                            MemSpace::Shared(s) => {
                                let (bits, init) = (self.get(v, t), !self.is_poison(v, t));
                                let rec = self.rec(inst, t);
                                let res = self.shared[s as usize].write(e + j, bits, init, rec);
                                res.map_err(|c| self.race(inst, s, c, t, true))?;
                            }
                        }
                    }
                }
            }
            Op::Note(_) => {}
            Op::Barrier => {
                if let Some(t) = (0..n).find(|&t| !mask[t]) {
                    return Err(InterpError::BarrierDivergence {
                        inst: self.text(inst),
                        block: self.block,
                        thread: self.thread(t),
                    });
                }
                self.epoch += 1;
            }
            Op::Shfl { mode, value, lane } => {
                crate::interp::warp::shfl(self, inst, mask, *mode, *value, *lane)?
            }
            Op::Vote(mode, p) => crate::interp::warp::vote(self, inst, mask, *mode, *p)?,
            Op::Mma { a, b, c, .. } => crate::interp::warp::mma(self, inst, mask, a, b, c)?,
            Op::For { lo, hi, step, init, body } => {
                self.run_for(inst, mask, (*lo, *hi, *step), init, body)?
            }
            Op::If { cond, then, else_ } => {
                let mut mt = vec![false; n];
                let mut me = vec![false; n];
                for &t in &active {
                    if self.defined(inst, *cond, t, "condition")? != 0 {
                        mt[t] = true;
                    } else {
                        me[t] = true;
                    }
                }
                if mt.iter().any(|&x| x) {
                    self.run_block(then, &mt)?;
                }
                if me.iter().any(|&x| x) {
                    self.run_block(else_, &me)?;
                }
                for &t in &active {
                    let ys = if mt[t] { &then.yields } else { &else_.yields };
                    for (&r, &y) in inst.results.iter().zip(ys) {
                        let (v, p) = (self.get(y, t), self.is_poison(y, t));
                        self.set(r, t, v, p);
                    }
                }
            }
        }
        Ok(())
    }

    fn run_for(
        &mut self,
        inst: &Inst,
        mask: &[bool],
        (lo, hi, step): (ValueId, ValueId, ValueId),
        init: &[ValueId],
        body: &Block,
    ) -> R {
        let n = self.n;
        let ty = self.k.ty(lo);
        let iv = body.args[0];
        let carried = &body.args[1..];
        let mut live = mask.to_vec();
        for t in (0..n).filter(|&t| mask[t]) {
            let l = self.defined(inst, lo, t, "loop lower bound")?;
            self.defined(inst, hi, t, "loop upper bound")?;
            let s = self.defined(inst, step, t, "loop step")?;
            if (s as i64) <= 0 {
                return Err(InterpError::LoopStep {
                    inst: self.text(inst),
                    step: s as i64,
                    block: self.block,
                    thread: self.thread(t),
                });
            }
            self.set(iv, t, l, false);
            for (&c, &i) in carried.iter().zip(init) {
                let (v, p) = (self.get(i, t), self.is_poison(i, t));
                self.set(c, t, v, p);
            }
        }
        loop {
            let mut any = false;
            for (t, l) in live.iter_mut().enumerate() {
                if *l {
                    let lt = eval_cmp(crate::op::CmpOp::Lt, ty, self.get(iv, t), self.get(hi, t));
                    *l = lt != 0;
                    any |= *l;
                }
            }
            if !any {
                break;
            }
            self.run_block(body, &live)?;
            for t in (0..n).filter(|&t| live[t]) {
                let next: Vec<(u64, bool)> =
                    body.yields.iter().map(|&y| (self.get(y, t), self.is_poison(y, t))).collect();
                for (&c, (v, p)) in carried.iter().zip(next) {
                    self.set(c, t, v, p);
                }
                let v = eval_binary(crate::op::BinOp::Add, ty, self.get(iv, t), self.get(step, t))
                    .unwrap_or(0);
                self.set(iv, t, v, false);
            }
        }
        for t in (0..n).filter(|&t| mask[t]) {
            for (&r, &c) in inst.results.iter().zip(carried) {
                let (v, p) = (self.get(c, t), self.is_poison(c, t));
                self.set(r, t, v, p);
            }
        }
        Ok(())
    }

    fn rec(&self, inst: &Inst, t: usize) -> Rec {
        Rec {
            epoch: self.epoch,
            thread: t as u32,
            inst: self.inst_ids.get(&(inst as *const Inst as usize)).copied().unwrap_or(0),
        }
    }

    fn race(&self, inst: &Inst, s: u32, c: Conflict, t: usize, write: bool) -> InterpError {
        let decl = &self.k.shared[s as usize];
        let first_inst = self.insts.get(c.first.inst as usize).map(|i| self.text(i));
        InterpError::SharedRace {
            mem: decl.name.clone(),
            byte: c.byte,
            element: c.byte / decl.elem.size_bytes(),
            block: self.block,
            first: Box::new(Access {
                thread: self.thread(c.first.thread as usize),
                inst: first_inst.unwrap_or_default(),
                write: c.first_write,
            }),
            second: Box::new(Access { thread: self.thread(t), inst: self.text(inst), write }),
        }
    }

    /// The first element of a vector access, bounds- and alignment-checked.
    fn element(
        &self,
        inst: &Inst,
        offset: ValueId,
        w: usize,
        space: MemSpace,
        t: usize,
    ) -> R<usize> {
        let e = self.defined(inst, offset, t, "address")? as i64;
        let e = if self.k.ty(offset) == ScalarType::U32 { e & 0xffff_ffff } else { e };
        let (len, name) = match space {
            MemSpace::Global(p) => (self.global.len(p), &self.k.params[p as usize].name),
            MemSpace::Shared(s) => (self.shared[s as usize].len(), &self.k.shared[s as usize].name),
        };
        if e < 0 || e + w as i64 > len as i64 {
            return Err(InterpError::OutOfBounds {
                inst: self.text(inst),
                space: space.name().into(),
                mem: name.clone(),
                element: e,
                end: e + w as i64,
                len,
                block: self.block,
                thread: self.thread(t),
            });
        }
        if e % w as i64 != 0 {
            return Err(InterpError::Misaligned {
                inst: self.text(inst),
                mem: name.clone(),
                element: e,
                width: w,
                block: self.block,
                thread: self.thread(t),
            });
        }
        Ok(e as usize)
    }
}
