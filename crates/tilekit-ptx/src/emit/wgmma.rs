//! PTX for [`tilekit_ir::wgmma`]: descriptors (integer math on the shared address plus the
//! derived constant fields), `wgmma.mma_async`, fences and groups. sm_90a only.
//!
//! A descriptor is `((address + block offset) >> 4) & 0x3fff | fields`, the fields (layout,
//! LBO, SBO) constant and the start address wholly in the register part: the address of the
//! dynamic shared array is known only at run time (0x400 on sm_90, after the driver's reserved
//! KiB), so a start field in the constant would be ORed onto address bits that may or may not
//! be set — once the block offset was in both, which doubled V's 2048-byte MN-major steps
//! whenever bits 11–12 of the tile's address were clear.
//!
//! An accumulator input `c[i]` used by nothing but this wgmma lends its register to the result
//! `d[i]` (the accumulator stays in place, as the hardware wants); otherwise `c[i]` is copied
//! into `d[i]` first — before the `wgmma.fence` when the wgmma follows one in its block. A
//! 16-bit A fragment travels in `.b32` pairs: the pairs of the wgmmas that
//! follow a `wgmma.fence` in its block are packed *before* the fence (so no register is written
//! between the fence and the wgmma reading it); others are packed at the wgmma. Pairs packed
//! already (`u32` words of [`tilekit_ir::Op::CvtPack`]) are passed through a byte permute
//! (`prmt.b32 w, x, 0, 0x3210`, the identity), not a copy: ptxas coalesces a copy with the
//! word's other copies, so in a software-pipelined loop the next tile's words — written while
//! this wgmma is still in flight — would land in the registers it reads, and ptxas then
//! serializes the wgmmas ("C7513 … non wgmma instructions defining input registers"). The
//! permute is not free (one SASS `PRMT` a word: 32 a key tile of the attention's P·V at
//! BN = 128), so a loop whose wgmmas all retire before its back edge passes the words as they
//! are.

use std::collections::HashMap;

use tilekit_ir::wgmma::{MatrixDescriptor, WgmmaA, WgmmaOp};
use tilekit_ir::{Block, Inst, Op, ScalarType, ValueId};

use super::{Emitter, Result};
use crate::target::Target;

/// Plans made on the first wgmma op of a kernel.
#[derive(Debug, Default)]
pub(super) struct WgEmit {
    /// Uses of each value.
    uses: Option<HashMap<ValueId, usize>>,
    /// Per `wgmma.fence` (by address): what the wgmmas after it need done first.
    plan: HashMap<usize, Vec<Planned>>,
    /// A fragments packed before a fence, by the wgmma (address) that reads them.
    packed: HashMap<usize, Vec<String>>,
    /// wgmmas (by address) whose accumulator inputs were copied into their results before the
    /// fence.
    premoved: std::collections::HashSet<usize>,
    /// The `for` loops being emitted, innermost last: whether each is software-pipelined
    /// ([`in_flight_at_end`]).
    pub(super) loops: Vec<bool>,
}

/// Work done at a fence for one wgmma after it (in its block, before the next fence).
#[derive(Debug, Clone)]
struct Planned {
    /// The wgmma's address.
    mma: usize,
    /// Its register A fragment, when every value is defined before the fence.
    frag: Option<Vec<ValueId>>,
    /// (result, input) accumulator copies, when the inputs are defined before the fence and
    /// cannot lend their registers.
    moves: Vec<(ValueId, ValueId)>,
}

/// Whether accumulator input `v` lends its register to the result (used once, here once).
fn lends(uses: &HashMap<ValueId, usize>, c: &[ValueId], v: ValueId) -> bool {
    uses.get(&v).copied() == Some(1) && c.iter().filter(|&&x| x == v).count() == 1
}

/// For each fence of `b` (and nested blocks): the register A fragments and accumulator copies
/// of the wgmmas after it (before the next fence) whose values are all defined before it.
fn plan_fences(b: &Block, uses: &HashMap<ValueId, usize>, plan: &mut HashMap<usize, Vec<Planned>>) {
    for (f, inst) in b.insts.iter().enumerate() {
        for blk in inst.op.blocks() {
            plan_fences(blk, uses, plan);
        }
        if !matches!(inst.op, Op::Wgmma(WgmmaOp::Fence)) {
            continue;
        }
        let mut after: Vec<ValueId> = vec![];
        let mut frags = vec![];
        for later in &b.insts[f + 1..] {
            match &later.op {
                Op::Wgmma(WgmmaOp::Fence) => break,
                Op::Wgmma(WgmmaOp::Mma { a, c, .. }) => {
                    let frag = match a {
                        WgmmaA::Regs(r) if !r.iter().any(|v| after.contains(v)) => Some(r.clone()),
                        _ => None,
                    };
                    let moves: Vec<(ValueId, ValueId)> = if c.iter().any(|v| after.contains(v)) {
                        vec![]
                    } else {
                        later
                            .results
                            .iter()
                            .zip(c)
                            .filter(|(_, &ci)| !lends(uses, c, ci))
                            .map(|(&r, &ci)| (r, ci))
                            .collect()
                    };
                    if frag.is_some() || !moves.is_empty() {
                        frags.push(Planned { mma: later as *const Inst as usize, frag, moves });
                    }
                }
                _ => {}
            }
            after.extend(&later.results);
        }
        plan.insert(inst as *const Inst as usize, frags);
    }
}

fn count_uses(b: &Block, uses: &mut HashMap<ValueId, usize>) {
    for inst in &b.insts {
        for v in inst.op.operands() {
            *uses.entry(v).or_insert(0) += 1;
        }
        for blk in inst.op.blocks() {
            count_uses(blk, uses);
        }
    }
    for &y in &b.yields {
        *uses.entry(y).or_insert(0) += 1;
    }
}

/// The loop-carried accumulators of `body` (a `for` body with `carried` args) to compute in
/// place: for each position whose yield is a wgmma result that stays in its accumulator input's
/// register (through [`lends`]), back to a value `v` computed by one binary op of the body (one
/// PTX instruction for f32: it reads its operands before it writes) from the carried arg `a` of
/// that position, the only use of `a`: `(v, a)`, `v` to be written into `a`'s register. Then the wgmma accumulates in the carried registers and the loop's
/// back-edge copy is the identity — a copy between distinct registers would read the
/// accumulators while the wgmma may still run (a software-pipelined loop waits for it only in
/// the next iteration), and ptxas would serialize the wgmmas ("C7514 … non wgmma instructions
/// reading accumulator registers").
fn carried_in_place(
    body: &Block,
    carried: &[ValueId],
    uses: &HashMap<ValueId, usize>,
) -> Vec<(ValueId, ValueId)> {
    // the body's own (top-level) definitions: value → (instruction, result index)
    let mut def: HashMap<ValueId, (&Inst, usize)> = HashMap::new();
    for inst in &body.insts {
        for (i, &r) in inst.results.iter().enumerate() {
            def.insert(r, (inst, i));
        }
    }
    let mut out = vec![];
    for (&a, &y) in carried.iter().zip(&body.yields) {
        if uses.get(&a).copied() != Some(1) {
            continue;
        }
        let (mut v, mut through_wgmma) = (y, false);
        while let Some(&(inst, i)) = def.get(&v) {
            match &inst.op {
                Op::Wgmma(WgmmaOp::Mma { c, .. }) if i < c.len() && lends(uses, c, c[i]) => {
                    v = c[i];
                    through_wgmma = true;
                }
                _ => break,
            }
        }
        let Some(&(inst, _)) = def.get(&v) else { continue };
        let binary = matches!(inst.op, Op::Binary(..));
        if through_wgmma && binary && inst.op.operands().contains(&a) {
            out.push((v, a));
        }
    }
    out
}

/// Whether a wgmma group committed in `body` (at its top level) may still run at its end: a
/// `commit_group` after the last `wait_group 0`.
pub(super) fn in_flight_at_end(body: &Block) -> bool {
    let mut running = false;
    for inst in &body.insts {
        match inst.op {
            Op::Wgmma(WgmmaOp::Commit) => running = true,
            Op::Wgmma(WgmmaOp::Wait { pending: 0 }) => running = false,
            _ => {}
        }
    }
    running
}

impl Emitter<'_> {
    /// Plans the wgmma emission on the kernel's first wgmma op or loop: use counts and what
    /// each fence does first.
    fn plan_wgmma(&mut self) {
        if self.wg.uses.is_none() {
            let mut u = HashMap::new();
            count_uses(&self.k.body, &mut u);
            self.wg.uses = Some(u);
            let uses = self.wg.uses.clone().unwrap_or_default();
            plan_fences(&self.k.body, &uses, &mut self.wg.plan);
        }
    }

    /// Before a `for` body is emitted (sm_90a): its loop-carried wgmma accumulators computed in
    /// place ([`carried_in_place`]) — each such value printed as its carried arg's register;
    /// whether there was any.
    pub(super) fn wgmma_carry(&mut self, body: &Block, carried: &[ValueId]) -> bool {
        if self.target != Target::Sm90a {
            return false;
        }
        self.plan_wgmma();
        let uses = self.wg.uses.clone().unwrap_or_default();
        let mut any = false;
        for (v, a) in carried_in_place(body, carried, &uses) {
            if self.ty(v) != ScalarType::F32 || self.ty(a) != ScalarType::F32 {
                continue;
            }
            let name = self.reg(a);
            self.alias.insert(v, name);
            any = true;
        }
        any
    }

    /// The `.b32` registers of an A fragment: 16-bit values in pairs, packed pairs through an
    /// identity permute (see the module docs) — or as they are, in a loop that is not
    /// software-pipelined (the permute is one SASS `PRMT` a word) — tf32 one each.
    fn pack_a(&mut self, vals: &[ValueId]) -> Vec<String> {
        // in a loop whose wgmmas all retire before the back edge no later write can reach the
        // registers a wgmma reads while it runs: the packed words go in as they are
        let retired = self.wg.loops.last() == Some(&false);
        if self.ty(vals[0]) == ScalarType::U32 && retired {
            vals.iter().map(|&v| self.reg(v)).collect()
        } else if self.ty(vals[0]) == ScalarType::U32 {
            vals.iter()
                .map(|&v| {
                    let w = self.tmp(ScalarType::U32);
                    let x = self.reg(v);
                    self.line(format!("prmt.b32 {w}, {x}, 0, 0x3210;"));
                    w
                })
                .collect()
        } else if self.ty(vals[0]).size_bytes() == 2 {
            vals.chunks(2)
                .map(|pair| {
                    let w = self.tmp(ScalarType::U32);
                    let (x, y) = (self.reg(pair[0]), self.reg(pair[1]));
                    self.line(format!("mov.b32 {w}, {{{x}, {y}}};"));
                    w
                })
                .collect()
        } else {
            vals.iter()
                .map(|&v| {
                    let w = self.tmp(ScalarType::U32);
                    let x = self.reg(v);
                    self.line(format!("mov.b32 {w}, {x};"));
                    w
                })
                .collect()
        }
    }

    pub(super) fn wgmma(&mut self, inst: &Inst, w: &WgmmaOp) -> Result<()> {
        if self.target != Target::Sm90a {
            return Err(self.unsupported(
                w.name(),
                format!("wgmma needs sm_90a (the target is {})", self.target),
            ));
        }
        self.plan_wgmma();
        match w {
            WgmmaOp::Fence => {
                let frags = self.wg.plan.get(&(inst as *const Inst as usize)).cloned();
                for p in frags.unwrap_or_default() {
                    if let Some(vals) = &p.frag {
                        let words = self.pack_a(vals);
                        self.wg.packed.insert(p.mma, words);
                    }
                    if !p.moves.is_empty() {
                        for &(r, ci) in &p.moves {
                            let (rr, rc) = (self.reg(r), self.reg(ci));
                            self.mov(&rr, &rc, ScalarType::F32);
                        }
                        self.wg.premoved.insert(p.mma);
                    }
                }
                self.line("wgmma.fence.sync.aligned;")
            }
            WgmmaOp::Commit => self.line("wgmma.commit_group.sync.aligned;"),
            WgmmaOp::Wait { pending } => {
                self.line(format!("wgmma.wait_group.sync.aligned {pending};"))
            }
            WgmmaOp::Desc { mem, origin, matrix, block } => {
                let (addr, _) = self.address(*mem, *origin)?;
                let off = matrix.block_offset(*block as usize) as usize * mem.elem.size_bytes();
                let a = self.tmp(ScalarType::U32);
                if off > 0 {
                    self.line(format!("add.u32 {a}, {addr}, {off};"));
                } else {
                    self.line(format!("mov.u32 {a}, {addr};"));
                }
                self.line(format!("shr.u32 {a}, {a}, 4;"));
                self.line(format!("and.b32 {a}, {a}, 16383;"));
                let wide = self.tmp(ScalarType::I64);
                self.line(format!("cvt.u64.u32 {wide}, {a};"));
                // the constant part: layout, LBO, SBO — and no start address. The block's
                // offset is in the register part already (added above); a start field here
                // would add it a second time wherever the address's bits are clear (an OR, not
                // a sum), i.e. depending on where the tile lies in the shared window
                let desc = matrix.descriptor(0, *block as usize);
                let fields = MatrixDescriptor { start: 0, ..desc }.encode();
                let r = self.reg(inst.results[0]);
                self.line(format!(
                    "or.b64 {r}, {wide}, 0x{fields:016X}; // {:?} {} lbo {} sbo {}",
                    matrix.layout(),
                    matrix.major(),
                    matrix.lbo(),
                    matrix.sbo()
                ));
            }
            WgmmaOp::Mma { shape, a, b, c, scale_d } => {
                let t = shape.ty.name();
                let p = match scale_d {
                    Some(v) => self.reg(*v),
                    None => {
                        let p = self.tmp(ScalarType::Pred);
                        self.pred_const(&p, !c.is_empty());
                        p
                    }
                };
                let once =
                    |e: &Self, v: ValueId| e.wg.uses.as_ref().is_some_and(|u| lends(u, c, v));
                let premoved = self.wg.premoved.contains(&(inst as *const Inst as usize));
                let mut d = Vec::with_capacity(inst.results.len());
                for (i, &r) in inst.results.iter().enumerate() {
                    match c.get(i) {
                        Some(&ci) if once(self, ci) => {
                            let name = self.reg(ci);
                            self.alias.insert(r, name.clone());
                            d.push(name);
                        }
                        Some(_) if premoved => d.push(self.reg(r)),
                        Some(&ci) => {
                            let (rr, rc) = (self.reg(r), self.reg(ci));
                            self.mov(&rr, &rc, ScalarType::F32);
                            d.push(rr);
                        }
                        None => d.push(self.reg(r)),
                    }
                }
                let a_text = match a {
                    WgmmaA::Desc(v) => self.reg(*v),
                    WgmmaA::Regs(vals) => {
                        let words = match self.wg.packed.get(&(inst as *const Inst as usize)) {
                            Some(w) => w.clone(),
                            None => self.pack_a(vals),
                        };
                        format!("{{{}}}", words.join(", "))
                    }
                };
                let b_text = self.reg(*b);
                let trans = match (shape.ty, a) {
                    (tilekit_ir::wgmma::WgmmaType::TF32, _) => String::new(),
                    (_, WgmmaA::Desc(_)) => {
                        format!(", {}, {}", u8::from(shape.trans_a), u8::from(shape.trans_b))
                    }
                    (_, WgmmaA::Regs(_)) => format!(", {}", u8::from(shape.trans_b)),
                };
                self.line(format!(
                    "wgmma.mma_async.sync.aligned.{}.f32.{t}.{t} {{{}}}, {a_text}, {b_text}, {p}, 1, 1{trans};",
                    shape.name(),
                    d.join(", ")
                ));
            }
        }
        Ok(())
    }
}
