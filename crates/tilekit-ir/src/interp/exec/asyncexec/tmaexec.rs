//! The interpreter side of [`crate::tma`]: tensor loads, stores and prefetches.
//!
//! ```text
//!   tensor_load  at issue: every box element read from global (or filled when outside the
//!                tensor), placed at its swizzled position of the image, the image marked as
//!                landing in shared memory exactly like a bulk load (same Load record, so the
//!                same read-before-complete, overwrite and expect_tx rules apply); the box's
//!                bytes complete on the barrier when a thread first waits on it
//!   tensor_store at issue: every image element checked (landed, fenced if threads wrote it,
//!                initialised when it is stored), in-bounds elements written to global, the
//!                whole image marked as read by the thread's bulk group
//! ```

use super::super::{BlockExec, Mask, R};
use super::Load;
use crate::asyncop::AsyncOp;
use crate::interp::error::{AsyncBug, InterpError};
use crate::interp::global::Global;
use crate::interp::memory::Rec;
use crate::op::{Inst, MemRef, MemSpace, ValueId};
use crate::tma::{map_of, TensorMapArg, TensorMapSpec};

/// One tensor copy's resolved operands.
struct Copy<'m> {
    spec: TensorMapSpec,
    arg: &'m TensorMapArg,
    /// The viewed pointer parameter.
    param: u32,
    /// Box origin, innermost first.
    origin: Vec<i64>,
}

impl<'a> BlockExec<'a> {
    fn tma_operands(&self, inst: &Inst, map: u32, coords: &[ValueId], t: usize) -> R<Copy<'a>> {
        let invalid = |reason: String| InterpError::InvalidKernel {
            kernel: self.k.name.clone(),
            reason: format!("`{}`: {reason}", self.text(inst)),
        };
        let (spec, param) = map_of(self.k, map)
            .ok_or_else(|| invalid(format!("parameter {map} is not a tensor map")))?;
        let maps: &'a [Option<TensorMapArg>] = &self.p.maps;
        let arg = maps
            .get(map as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| invalid(format!("tensor map parameter {map} has no argument")))?;
        if coords.len() != spec.rank() {
            return Err(invalid(format!("{} coordinates for rank {}", coords.len(), spec.rank())));
        }
        let origin = coords
            .iter()
            .map(|&c| Ok(self.defined(inst, c, t, "coordinate")? as u32 as i32 as i64))
            .collect::<R<Vec<i64>>>()?;
        Ok(Copy { spec, arg, param, origin })
    }

    /// The global element of box element `l`, or none when it lies outside the tensor.
    fn tma_global_element(c: &Copy, l: usize) -> Option<usize> {
        let b = c.spec.box_coord(l);
        let mut g = Vec::with_capacity(b.len());
        for ((&o, &bi), &d) in c.origin.iter().zip(&b).zip(c.arg.dims()) {
            let x = o + bi as i64;
            if x < 0 || x >= d as i64 {
                return None;
            }
            g.push(x as u64);
        }
        Some(c.arg.element(&g, c.spec.elem().size_bytes()) as usize)
    }

    /// The global element a tensor **store** writes for box element `l`, or none when it is
    /// clipped. The GPU clips dim 0 at 16-byte granularity: it writes the whole 16-byte chunk
    /// holding the tensor's last dim-0 element (measured on an H100: a rank-5 f32 tensor of 6
    /// columns with a pitch of 8 got columns 6 and 7 written), so dim 0 ends at
    /// `⌈dims[0] · size / 16⌉ · 16 / size` here; the other dims clip exactly.
    fn tma_store_element(c: &Copy, l: usize) -> Option<usize> {
        let size = c.spec.elem().size_bytes() as u64;
        let b = c.spec.box_coord(l);
        let mut g = Vec::with_capacity(b.len());
        for (i, ((&o, &bi), &d)) in c.origin.iter().zip(&b).zip(c.arg.dims()).enumerate() {
            let x = o + bi as i64;
            let end = if i == 0 { (d * size).div_ceil(16) * 16 / size } else { d };
            if x < 0 || x >= end as i64 {
                return None;
            }
            g.push(x as u64);
        }
        Some(c.arg.element(&g, size as usize) as usize)
    }

    /// Checks the shared side: aligned for the swizzle, the whole image inside the allocation.
    fn tma_shared_start(
        &self,
        inst: &Inst,
        sh: MemRef,
        off: ValueId,
        spec: &TensorMapSpec,
        t: usize,
    ) -> R<(u32, usize)> {
        let MemSpace::Shared(s) = sh.space else { unreachable!("validated: shared side") };
        let size = spec.elem().size_bytes() as i64;
        let so = self.defined(inst, off, t, "shared offset")? as i64;
        let slen = self.shared_len(inst, s)? as i64;
        let align = spec.swizzle().shared_align() as i64;
        let n = spec.box_elems() as i64;
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
        if so < 0 || so + n > slen {
            return bad(format!(
                "the box image (elements {so}..{}) must lie inside the allocation (length {slen})",
                so + n
            ));
        }
        if (so * size) % align != 0 {
            return bad(format!(
                "shared byte offset {} must be a multiple of {align} (swizzle {})",
                so * size,
                spec.swizzle().name()
            ));
        }
        Ok((s, so as usize))
    }

    /// Executes a tensor copy for the active lanes.
    pub(crate) fn exec_tma(&mut self, inst: &Inst, a: &AsyncOp, m: &Mask) -> R {
        match a {
            AsyncOp::TensorLoad { dst, dst_off, map, coords, bar, index, multicast, .. } => {
                for &t in &m.active {
                    let t = t as usize;
                    let own = t / self.p.cta_threads;
                    let ranks: Vec<usize> = match multicast {
                        None => vec![own],
                        Some(mask) => {
                            let mask = self.defined(inst, *mask, t, "multicast mask")? & 0xffff;
                            if mask == 0 || mask >> self.p.ctas != 0 {
                                let MemSpace::Shared(s) = dst.space else { unreachable!() };
                                let detail = format!(
                                    "multicast mask {mask:#x}; valid: a non-empty set of the \
                                     cluster's {} ranks",
                                    self.p.ctas
                                );
                                let name = self.shared_name(s);
                                let kind = AsyncBug::BadBulkCopy;
                                return Err(self.async_error(kind, inst, name, 0, t, detail));
                            }
                            (0..self.p.ctas).filter(|r| mask >> r & 1 == 1).collect()
                        }
                    };
                    for r in ranks {
                        self.tensor_load(
                            inst,
                            (*dst, *dst_off),
                            *map,
                            coords,
                            (*bar, *index),
                            (t, r),
                        )?;
                    }
                }
            }
            AsyncOp::TensorStore { map, coords, src, src_off, .. } => {
                for &t in &m.active {
                    self.tensor_store(inst, *map, coords, (*src, *src_off), t as usize)?;
                }
            }
            AsyncOp::TensorPrefetch { map, coords, .. } => {
                for &t in &m.active {
                    self.tma_operands(inst, *map, coords, t as usize)?;
                }
            }
            _ => unreachable!("exec_tma runs tensor copies only"),
        }
        Ok(())
    }

    fn tensor_load(
        &mut self,
        inst: &Inst,
        (dst, dst_off): (MemRef, ValueId),
        map: u32,
        coords: &[ValueId],
        (bar, index): (MemRef, ValueId),
        (t, cta): (usize, usize),
    ) -> R {
        let c = self.tma_operands(inst, map, coords, t)?;
        let (s, so) = self.tma_shared_start(inst, dst, dst_off, &c.spec, t)?;
        // the barrier at the same index in the destination block
        let (_, bs, bi) = self.bar_key(inst, bar, index, t)?;
        let key = (cta, bs, bi);
        self.bar_state(inst, key, t)?;
        let n = c.spec.box_elems();
        let fill = c.spec.oob().bits(c.spec.elem());
        let sources: Vec<Option<usize>> = (0..n).map(|l| Self::tma_global_element(&c, l)).collect();
        let mut image = vec![fill; n];
        let g = self.global(inst, c.param)?;
        let read = |bits: &dyn Fn(usize) -> u64, image: &mut Vec<u64>| {
            for (l, src) in sources.iter().enumerate() {
                if let Some(e) = src {
                    image[c.spec.smem_element(l)] = bits(*e);
                }
            }
        };
        match g {
            Global::ReadOnly(buf) => read(&|e| buf.bits(e), &mut image),
            Global::Written(lock, _) => {
                let buf = lock.read().unwrap_or_else(|e| e.into_inner());
                read(&|e| buf.bits(e), &mut image);
                drop(buf);
                if self.probe.is_none() {
                    let id = self.p.inst_id(inst);
                    for e in sources.iter().flatten() {
                        self.record(c.param, false, *e, 1, t, id, self.steps);
                    }
                }
            }
            Global::Scalar => return Err(self.not_a_buffer(c.param)),
        }
        // the same checks as a bulk load's: no wgmma, bulk store or load in flight there, and
        // (warp schedule) every thread's access ordered before the copy
        for x in so..so + n {
            self.copy_target(inst, (cta, s, x), t)?;
        }
        let i = self.asy.loads.len();
        for x in so..so + n {
            self.asy.landing.insert((cta, s, x), i);
        }
        let id = self.p.inst_id(inst);
        self.asy.loads.push(Load { cta, s, start: so, bits: image, bar: key, thread: t, inst: id });
        Ok(())
    }

    fn tensor_store(
        &mut self,
        inst: &Inst,
        map: u32,
        coords: &[ValueId],
        (src, src_off): (MemRef, ValueId),
        t: usize,
    ) -> R {
        let c = self.tma_operands(inst, map, coords, t)?;
        if let Some((dim, &o)) = c.origin.iter().enumerate().find(|(_, &o)| o < 0) {
            // measured on an H100 (2026-11-23): a tensor store whose box starts below zero
            // traps with an illegal instruction; loads may (the elements are filled)
            let detail = format!(
                "coordinate {dim} of the box is {o}: a tensor store's box must start at \
                 coordinates ≥ 0 (the elements past the far edges are clipped, but a box starting \
                 below zero makes the GPU trap with CUDA_ERROR_ILLEGAL_INSTRUCTION); store the part \
                 inside the tensor, or load-only boxes may start below zero"
            );
            let kind = AsyncBug::NegativeStoreCoordinate;
            return Err(self.async_error(kind, inst, String::new(), 0, t, detail));
        }
        let (s, so) = self.tma_shared_start(inst, src, src_off, &c.spec, t)?;
        let lock = match self.global(inst, c.param)? {
            Global::Written(lock, _) => lock,
            _ => return Err(self.not_a_buffer(c.param)),
        };
        let cta = t / self.p.cta_threads;
        let group = self.asy.group.get(&t).copied().unwrap_or(0);
        let id = self.p.inst_id(inst);
        let n = c.spec.box_elems();
        let len = lock.read().unwrap_or_else(|e| e.into_inner()).len();
        let mut writes: Vec<(usize, u64)> = Vec::with_capacity(n);
        for l in 0..n {
            let x = so + c.spec.smem_element(l);
            let k = (cta, s, x);
            self.async_source(inst, k, t)?;
            if let Some(e) = Self::tma_store_element(&c, l) {
                if e >= len {
                    let detail = format!(
                        "box element {:?} lies in the 16-byte chunk that ends the tensor's dim 0, \
                         which the GPU writes whole: element {e} of a buffer of {len}; pad the \
                         buffer to whole 16-byte chunks",
                        c.spec.box_coord(l)
                    );
                    let kind = AsyncBug::StorePastBuffer;
                    return Err(self.async_error(kind, inst, String::new(), 0, t, detail));
                }
                let rec = Rec { epoch: self.epoch, thread: t as u32, inst: id };
                let res = self.shared[cta][s as usize].read(x, rec, self.base);
                let (v, init) = res.map_err(|cf| self.race(inst, s, cf, t, false))?;
                if !init {
                    let detail = format!(
                        "it was never written, and box element {:?} stores it inside the tensor",
                        c.spec.box_coord(l)
                    );
                    let kind = AsyncBug::ReadBeforeComplete;
                    return Err(self.async_error(kind, inst, self.shared_name(s), x, t, detail));
                }
                writes.push((e, v));
            }
            self.asy.reads.insert(k, (t, group));
        }
        if self.probe.is_none() {
            let mut buf = lock.write().unwrap_or_else(|e| e.into_inner());
            for &(e, v) in &writes {
                buf.set_bits(e, v);
            }
            drop(buf);
            for &(e, _) in &writes {
                self.record(c.param, true, e, 1, t, id, self.steps);
            }
        }
        Ok(())
    }
}
