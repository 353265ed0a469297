//! IR → PTX text.
//!
//! Every SSA value gets one virtual register of its type's class; PTX is itself SSA-friendly
//! (ptxas allocates the real registers), so the emitter is a direct walk of the structured IR:
//!
//! ```text
//!   IR                                       PTX
//!   %3 = sreg.tid.x                          mov.u32 %r3, %tid.x;
//!   %7 = mul.i32 %3, %5                      mul.lo.s32 %r7, %r3, %r5;
//!   %8..%11 = ld.global.v4.f32 x[%7]         mul.wide.s32 %rd1, %r7, 4; add.s64 %rd2, %rd_x, %rd1;
//!                                            ld.global.v4.f32 {%f8, %f9, %f10, %f11}, [%rd2];
//!   %r = for %i = %a to %b step %c           mov.s32 %r_i, %r_a;  (carried regs = init)
//!          iter(%acc = %z) { … yield %n }    L1: setp.ge.s32 %p, %r_i, %r_b; @%p bra L2;
//!                                                …body…; mov tmp, %n; mov %acc, tmp;
//!                                                add.s32 %r_i, %r_i, %r_c; bra L1;
//!                                            L2: mov %r, %acc;
//! ```
//!
//! Semantics follow the interpreter exactly: f16/bf16 arithmetic is done in f32 (f64 for fma)
//! and rounded once to nearest even; a masked-off load yields 0; float compares are ordered
//! except `ne`; float → int conversions truncate and saturate (`cvt.rzi`); shuffles clamp at the
//! warp edge like `shfl.sync` with `c = 0x1f` (`up`: `c = 0`).

use std::fmt::Write;

use tilekit_ir::{
    Axis, BinOp, Block, CmpOp, GlobalCache, Inst, Kernel, MemRef, MemSpace, MmaShape, Op,
    ParamKind, ScalarType, ShflMode, SpecialReg, UnOp, ValueId, VoteMode,
};

use crate::error::{PtxError, Result};
use crate::target::Target;

/// Register class of a scalar type.
fn class(t: ScalarType) -> (&'static str, &'static str) {
    match t {
        ScalarType::Pred => ("p", ".pred"),
        ScalarType::I32 | ScalarType::U32 => ("r", ".b32"),
        ScalarType::I64 => ("rd", ".b64"),
        ScalarType::F16 | ScalarType::BF16 => ("h", ".b16"),
        ScalarType::F32 => ("f", ".f32"),
        ScalarType::F64 => ("fd", ".f64"),
    }
}

/// PTX arithmetic type suffix.
fn arith(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Pred => "pred",
        ScalarType::I32 => "s32",
        ScalarType::U32 => "u32",
        ScalarType::I64 => "s64",
        ScalarType::F16 => "f16",
        ScalarType::BF16 => "bf16",
        ScalarType::F32 => "f32",
        ScalarType::F64 => "f64",
    }
}

/// Bit-size type of a memory element.
fn bits(t: ScalarType) -> &'static str {
    match t.size_bytes() {
        1 => "b8",
        2 => "b16",
        4 => "b32",
        _ => "b64",
    }
}

struct Emitter<'k> {
    k: &'k Kernel,
    target: Target,
    out: String,
    indent: usize,
    labels: usize,
    /// extra registers: (class prefix, count)
    tmp_r: usize,
    tmp_rd: usize,
    tmp_f: usize,
    tmp_fd: usize,
    tmp_p: usize,
    tmp_h: usize,
    /// registers holding each global pointer parameter (generic → global), by param index
    ptr_regs: Vec<Option<String>>,
    shared_names: Vec<String>,
    /// Values printed as another value's register (a wgmma accumulator in its input's).
    alias: std::collections::HashMap<ValueId, String>,
    /// What the wgmma emitter plans ahead (use counts, A fragments packed before fences).
    wg: wgmma::WgEmit,
}

mod wgmma;

/// Emits the PTX module of one kernel for a target.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType};
/// use tilekit_ptx::{emit_kernel, Target};
/// let b = KernelBuilder::new("noop", [32, 1, 1]).unwrap();
/// let k = b.finish().unwrap();
/// let ptx = emit_kernel(&k, Target::Sm90a).unwrap();
/// assert!(ptx.contains(".target sm_90a"));
/// assert!(ptx.contains(".visible .entry noop("));
/// ```
pub fn emit_kernel(k: &Kernel, target: Target) -> Result<String> {
    let mut e = Emitter {
        k,
        target,
        out: String::new(),
        indent: 1,
        labels: 0,
        tmp_r: 0,
        tmp_rd: 0,
        tmp_f: 0,
        tmp_fd: 0,
        tmp_p: 0,
        tmp_h: 0,
        ptr_regs: vec![None; k.params.len()],
        shared_names: k
            .shared
            .iter()
            .enumerate()
            .map(|(i, s)| format!("smem{i}_{}", sanitize(&s.name)))
            .collect(),
        alias: std::collections::HashMap::new(),
        wg: wgmma::WgEmit::default(),
    };
    if !valid_ident(&k.name) {
        return Err(PtxError::Unsupported {
            kernel: k.name.clone(),
            what: format!("kernel name {:?}", k.name),
            why: "PTX entry names are [A-Za-z_][A-Za-z0-9_$]*".into(),
        });
    }
    if k.cluster_size() > 1 && target == Target::Sm80 {
        return Err(PtxError::Unsupported {
            kernel: k.name.clone(),
            what: format!("cluster dims {:?}", k.cluster_dim),
            why: "thread-block clusters need sm_90 or sm_90a".into(),
        });
    }
    e.body()?;
    let mut head = String::new();
    let _ = writeln!(head, "//");
    let _ = writeln!(
        head,
        "// Generated by tilekit {} from kernel {:?}",
        env!("CARGO_PKG_VERSION"),
        k.name
    );
    let _ = writeln!(
        head,
        "// block ({}, {}, {}), {} shared bytes",
        k.block_dim[0],
        k.block_dim[1],
        k.block_dim[2],
        k.shared_bytes()
    );
    let _ = writeln!(head, "//");
    let _ = writeln!(head, ".version {}", target.ptx_version());
    let _ = writeln!(head, ".target {}", target.name());
    let _ = writeln!(head, ".address_size 64\n");
    if shared_layout(k).dynamic {
        let _ = writeln!(
            head,
            ".extern .shared .align {} .b8 {DYNAMIC_SMEM}[]; // {} bytes, launched as dynamic shared memory\n",
            shared_layout(k).align,
            shared_layout(k).total
        );
    }
    let _ = write!(head, ".visible .entry {}(", k.name);
    for (i, p) in k.params.iter().enumerate() {
        let decl = match p.kind {
            ParamKind::GlobalPtr(_) => format!(".param .u64 param{i}"),
            ParamKind::Scalar(t) => format!(".param .{} param{i}", param_type(t)),
            // the 128-byte CUtensorMap, passed by value: a grid constant whose address the
            // tensor copies take
            ParamKind::TensorMap { .. } => format!(".param .align 64 .b8 param{i}[128]"),
        };
        let _ = write!(head, "{}\n\t{decl}", if i == 0 { "" } else { "," });
    }
    let _ = writeln!(head, "\n)");
    let [x, y, z] = k.block_dim;
    let _ = writeln!(head, ".reqntid {x}, {y}, {z}");
    if let Some(regs) = entry_registers(k) {
        let _ = writeln!(
            head,
            ".maxnreg {regs} // setmaxnreg: every thread starts with {regs} registers"
        );
    }
    if k.cluster_size() > 1 {
        let [cx, cy, cz] = k.cluster_dim;
        let _ = writeln!(head, ".reqnctapercluster {cx}, {cy}, {cz}");
    }
    if k.min_blocks_per_sm > 0 {
        let _ = writeln!(head, ".minnctapersm {}", k.min_blocks_per_sm);
    }
    let _ = writeln!(head, "{{");
    let layout = shared_layout(k);
    if layout.dynamic {
        for (i, s) in k.shared.iter().enumerate() {
            let _ = writeln!(
                head,
                "\t// {}: {} x {} at byte {}",
                s.name, s.len, s.elem, layout.offsets[i]
            );
        }
    } else {
        for (i, s) in k.shared.iter().enumerate() {
            let _ = writeln!(
                head,
                "\t.shared .align {} .b8 {}[{}]; // {}: {} x {}",
                layout.aligns[i],
                e.shared_names[i],
                s.size_bytes().max(1),
                s.name,
                s.len,
                s.elem
            );
        }
    }
    let n = k.values.len();
    for (prefix, decl, extra) in [
        ("p", ".pred", e.tmp_p),
        ("h", ".b16", e.tmp_h),
        ("r", ".b32", e.tmp_r),
        ("rd", ".b64", e.tmp_rd),
        ("f", ".f32", e.tmp_f),
        ("fd", ".f64", e.tmp_fd),
    ] {
        let _ = writeln!(head, "\t.reg {decl} %{prefix}<{}>;", n + extra + 1);
        let _ = decl;
    }
    head.push('\n');
    head.push_str(&e.out);
    head.push_str("\tret;\n}\n");
    Ok(head)
}

/// Name of the dynamic shared-memory array (kernels above 48 KiB of shared memory).
pub const DYNAMIC_SMEM: &str = "tk_dynamic_smem";

/// Where a kernel's shared allocations live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedLayout {
    /// Byte offset of each allocation (16-byte aligned).
    pub offsets: Vec<usize>,
    /// Total bytes.
    pub total: usize,
    /// True above 48 KiB: PTX's static shared memory stops there, so the allocations become
    /// offsets into one dynamic array and the kernel must be launched with `total` bytes of
    /// dynamic shared memory.
    pub dynamic: bool,
    /// Alignment of each allocation (16 bytes, more for the tiles of tensor copies: see
    /// [`tilekit_ir::tma::shared_alignments`]).
    pub aligns: Vec<usize>,
    /// Alignment of the whole (dynamic) array: the largest of `aligns`.
    pub align: usize,
}

/// The static limit of shared memory per block (48 KiB).
pub const STATIC_SMEM_LIMIT: usize = 48 * 1024;

/// The shared-memory layout the emitter uses for a kernel.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType};
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// b.shared("a", ScalarType::F32, 3).unwrap();
/// b.shared("b", ScalarType::F32, 16 * 1024).unwrap();
/// let l = tilekit_ptx::emit::shared_layout(&b.finish().unwrap());
/// assert_eq!((l.offsets.clone(), l.total, l.dynamic), (vec![0, 16], 16 + 64 * 1024, true));
/// ```
pub fn shared_layout(k: &Kernel) -> SharedLayout {
    let aligns = tilekit_ir::kernel::shared_alignments(k);
    let mut offsets = Vec::with_capacity(k.shared.len());
    let mut at = 0usize;
    for (s, &a) in k.shared.iter().zip(&aligns) {
        at = at.div_ceil(a) * a;
        offsets.push(at);
        at += s.size_bytes().div_ceil(16) * 16;
    }
    let align = aligns.iter().copied().max().unwrap_or(16);
    SharedLayout { offsets, total: at, dynamic: at > STATIC_SMEM_LIMIT, aligns, align }
}

fn param_type(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Pred => "u32",
        ScalarType::I32 => "s32",
        ScalarType::U32 => "u32",
        ScalarType::I64 => "s64",
        ScalarType::F16 | ScalarType::BF16 => "b16",
        ScalarType::F32 => "f32",
        ScalarType::F64 => "f64",
    }
}

fn valid_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '$')
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

impl<'k> Emitter<'k> {
    fn ty(&self, v: ValueId) -> ScalarType {
        self.k.ty(v)
    }

    fn reg(&self, v: ValueId) -> String {
        if let Some(a) = self.alias.get(&v) {
            return a.clone();
        }
        format!("%{}{}", class(self.ty(v)).0, v.0)
    }

    fn tmp(&mut self, t: ScalarType) -> String {
        let n = self.k.values.len() + 1;
        let (prefix, counter) = match class(t).0 {
            "p" => ("p", &mut self.tmp_p),
            "h" => ("h", &mut self.tmp_h),
            "r" => ("r", &mut self.tmp_r),
            "rd" => ("rd", &mut self.tmp_rd),
            "f" => ("f", &mut self.tmp_f),
            _ => ("fd", &mut self.tmp_fd),
        };
        let name = format!("%{prefix}{}", n + *counter);
        *counter += 1;
        name
    }

    fn line(&mut self, s: impl AsRef<str>) {
        for _ in 0..self.indent {
            self.out.push('\t');
        }
        self.out.push_str(s.as_ref());
        self.out.push('\n');
    }

    fn label(&mut self) -> String {
        self.labels += 1;
        format!("L{}", self.labels)
    }

    fn unsupported(&self, what: impl Into<String>, why: impl Into<String>) -> PtxError {
        PtxError::Unsupported { kernel: self.k.name.clone(), what: what.into(), why: why.into() }
    }

    fn body(&mut self) -> Result<()> {
        // pointer parameters are loaded once, converted to global addresses
        for (i, p) in self.k.params.iter().enumerate() {
            if let ParamKind::GlobalPtr(_) = p.kind {
                let r = self.tmp(ScalarType::I64);
                let g = self.tmp(ScalarType::I64);
                self.line(format!("ld.param.u64 {r}, [param{i}]; // {}", p.name));
                self.line(format!("cvta.to.global.u64 {g}, {r};"));
                self.ptr_regs[i] = Some(g);
            }
            if let ParamKind::TensorMap { .. } = p.kind {
                // the generic address of the grid-constant parameter (as CUTLASS passes
                // `&params.tma_desc`)
                let r = self.tmp(ScalarType::I64);
                let g = self.tmp(ScalarType::I64);
                self.line(format!("mov.u64 {r}, param{i}; // tensor map {}", p.name));
                self.line(format!("cvta.param.u64 {g}, {r};"));
                self.ptr_regs[i] = Some(g);
            }
        }
        let body = &self.k.body;
        self.block(body)
    }

    fn block(&mut self, b: &Block) -> Result<()> {
        for inst in &b.insts {
            self.inst(inst)?;
        }
        Ok(())
    }

    /// Moves `src` into `dst` (same type).
    fn mov(&mut self, dst: &str, src: &str, t: ScalarType) {
        let ty = match t {
            ScalarType::Pred => "pred",
            ScalarType::F16 | ScalarType::BF16 => "b16",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::I64 => "b64",
            _ => "b32",
        };
        self.line(format!("mov.{ty} {dst}, {src};"));
    }

    /// f16/bf16 register → f32 temp.
    fn widen(&mut self, v: &str, t: ScalarType) -> String {
        let f = self.tmp(ScalarType::F32);
        if t == ScalarType::BF16 {
            // bf16 is the high half of an f32: exact on every target. Packed as the high half
            // of a b32 over a zero low half (not cvt.u32.u16 + shl): where `v` is one half of
            // a loaded word, ptxas makes the pair one PRMT from the word instead of two
            let z = self.tmp(ScalarType::BF16);
            self.line(format!("mov.b16 {z}, 0;"));
            self.line(format!("mov.b32 {f}, {{{z}, {v}}};"));
        } else {
            self.line(format!("cvt.f32.{} {f}, {v};", arith(t)));
        }
        f
    }

    /// f64 register → f16/bf16 destination, one rounding where the target can (`cvt.rn.bf16.f64`
    /// needs sm_90; on sm_80 bf16 goes through f32, which can round twice).
    fn narrow_f64(&mut self, dst: &str, fd: &str, t: ScalarType) {
        if t == ScalarType::BF16 && self.target == Target::Sm80 {
            let f = self.tmp(ScalarType::F32);
            self.line(format!("cvt.rn.f32.f64 {f}, {fd};"));
            self.narrow(dst, &f, t);
        } else {
            self.line(format!("cvt.rn.{}.f64 {dst}, {fd};", arith(t)));
        }
    }

    /// f32 register → f16/bf16 destination, round to nearest even.
    fn narrow(&mut self, dst: &str, f: &str, t: ScalarType) {
        self.line(format!("cvt.rn.{}.f32 {dst}, {f};", arith(t)));
    }

    fn inst(&mut self, inst: &Inst) -> Result<()> {
        let res = |i: usize| inst.results[i];
        match &inst.op {
            Op::Const(lit) => {
                let r = self.reg(res(0));
                let t = lit.ty();
                let b = lit.bits();
                match t {
                    ScalarType::Pred => self.pred_const(&r, b != 0),
                    ScalarType::I32 | ScalarType::U32 => {
                        self.line(format!("mov.b32 {r}, 0x{:08X};", b as u32))
                    }
                    ScalarType::I64 => self.line(format!("mov.b64 {r}, 0x{:016X};", b)),
                    ScalarType::F16 | ScalarType::BF16 => {
                        self.line(format!("mov.b16 {r}, 0x{:04X};", b as u16))
                    }
                    ScalarType::F32 => self.line(format!("mov.f32 {r}, 0f{:08X};", b as u32)),
                    ScalarType::F64 => self.line(format!("mov.f64 {r}, 0d{:016X};", b)),
                }
            }
            Op::Param(i) => {
                let r = self.reg(res(0));
                let t = self.ty(res(0));
                match t {
                    ScalarType::Pred => {
                        let u = self.tmp(ScalarType::U32);
                        self.line(format!("ld.param.u32 {u}, [param{i}];"));
                        self.line(format!("setp.ne.u32 {r}, {u}, 0;"));
                    }
                    _ => self.line(format!("ld.param.{} {r}, [param{i}];", param_type(t))),
                }
            }
            Op::Special(s) => self.special(&self.reg(res(0)), *s),
            Op::Unary(op, a) => self.unary(inst, *op, *a)?,
            Op::Binary(op, a, b) => self.binary(inst, *op, *a, *b)?,
            Op::Fma(a, b, c) => {
                let t = self.ty(res(0));
                let (d, a, b, c) = (self.reg(res(0)), self.reg(*a), self.reg(*b), self.reg(*c));
                match t {
                    ScalarType::F32 | ScalarType::F64 => {
                        self.line(format!("fma.rn.{} {d}, {a}, {b}, {c};", arith(t)))
                    }
                    ScalarType::I32 | ScalarType::U32 | ScalarType::I64 => {
                        self.line(format!("mad.lo.{} {d}, {a}, {b}, {c};", arith(t)))
                    }
                    ScalarType::F16 | ScalarType::BF16 => {
                        // exact product and sum in f64, one rounding to 16 bits (as the interpreter)
                        let (x, y, z, w) = (
                            self.tmp(ScalarType::F64),
                            self.tmp(ScalarType::F64),
                            self.tmp(ScalarType::F64),
                            self.tmp(ScalarType::F64),
                        );
                        let (fa, fb, fc) =
                            (self.widen(&a, t), self.widen(&b, t), self.widen(&c, t));
                        self.line(format!("cvt.f64.f32 {x}, {fa};"));
                        self.line(format!("cvt.f64.f32 {y}, {fb};"));
                        self.line(format!("cvt.f64.f32 {z}, {fc};"));
                        self.line(format!("fma.rn.f64 {w}, {x}, {y}, {z};"));
                        self.narrow_f64(&d, &w, t);
                    }
                    ScalarType::Pred => {
                        return Err(self.unsupported("fma on predicates", "fma needs numbers"))
                    }
                }
            }
            Op::Cmp(op, a, b) => {
                let t = self.ty(*a);
                let (d, mut ra, mut rb) = (self.reg(res(0)), self.reg(*a), self.reg(*b));
                let mut at = t;
                if matches!(t, ScalarType::F16 | ScalarType::BF16) {
                    ra = self.widen(&ra, t);
                    rb = self.widen(&rb, t);
                    at = ScalarType::F32;
                }
                let cmp = match (op, at.is_float()) {
                    (CmpOp::Ne, true) => "neu",
                    (o, _) => o.name(),
                };
                if t == ScalarType::Pred {
                    // predicates: compare as 0/1 integers
                    let (x, y) = (self.tmp(ScalarType::U32), self.tmp(ScalarType::U32));
                    self.line(format!("selp.u32 {x}, 1, 0, {ra};"));
                    self.line(format!("selp.u32 {y}, 1, 0, {rb};"));
                    self.line(format!("setp.{cmp}.u32 {d}, {x}, {y};"));
                } else {
                    self.line(format!("setp.{cmp}.{} {d}, {ra}, {rb};", arith(at)));
                }
            }
            Op::Select(c, a, b) => {
                let t = self.ty(res(0));
                let (d, c, a, b) = (self.reg(res(0)), self.reg(*c), self.reg(*a), self.reg(*b));
                if t == ScalarType::Pred {
                    let (x, y) = (self.tmp(ScalarType::Pred), self.tmp(ScalarType::Pred));
                    self.line(format!("and.pred {x}, {c}, {a};"));
                    self.line(format!("and.pred {y}, !{c}, {b};"));
                    self.line(format!("or.pred {d}, {x}, {y};"));
                } else {
                    self.line(format!("selp.{} {d}, {a}, {b}, {c};", bits(t)));
                }
            }
            Op::Cvt(a) => self.cvt(res(0), *a)?,
            Op::CvtPack(t, lo, hi) => {
                // d = {hi → upper half, lo → lower half}; sm_80 and later
                let (d, lo, hi) = (self.reg(res(0)), self.reg(*lo), self.reg(*hi));
                self.line(format!("cvt.rn.{}x2.f32 {d}, {hi}, {lo};", t.name()));
            }
            Op::BinaryPair(op, [a0, a1, b0, b1]) => {
                // the halves packed into words (free where they are one loaded word's), one
                // packed instruction, the word split again (free where it is used packed)
                let t = self.ty(*a0);
                let (wa, wb, wd) = (
                    self.tmp(ScalarType::U32),
                    self.tmp(ScalarType::U32),
                    self.tmp(ScalarType::U32),
                );
                let (a0, a1, b0, b1) = (self.reg(*a0), self.reg(*a1), self.reg(*b0), self.reg(*b1));
                self.line(format!("mov.b32 {wa}, {{{a0}, {a1}}};"));
                self.line(format!("mov.b32 {wb}, {{{b0}, {b1}}};"));
                // .NaN: a NaN in either operand gives NaN (torch.maximum), as the scalar form
                let name = match op {
                    BinOp::Min => "min.NaN",
                    BinOp::Max => "max.NaN",
                    _ => return Err(self.unsupported("a packed pair op", "max or min only")),
                };
                self.line(format!("{name}.{}x2 {wd}, {wa}, {wb};", arith(t)));
                let (d0, d1) = (self.reg(res(0)), self.reg(res(1)));
                self.line(format!("mov.b32 {{{d0}, {d1}}}, {wd};"));
            }
            Op::Load { mem, offset, width, mask, fill } => {
                self.load(inst, *mem, *offset, *width as usize, (*mask, *fill), None)?
            }
            Op::LoadCluster { mem, cta, offset, width } => {
                self.load(inst, *mem, *offset, *width as usize, (None, 0), Some(*cta))?
            }
            Op::Async(a) => self.async_op(a)?,
            Op::Wgmma(w) => self.wgmma(inst, w)?,
            Op::ClusterBarrier => {
                // arrive has release semantics and wait acquire by default
                self.line("barrier.cluster.arrive.aligned;");
                self.line("barrier.cluster.wait.aligned;");
            }
            Op::ClusterArrive => self.line("barrier.cluster.arrive.aligned;"),
            Op::ClusterWait => self.line("barrier.cluster.wait.aligned;"),
            Op::Store { mem, offset, values, mask } => self.store(*mem, *offset, values, *mask)?,
            Op::Barrier => self.line("bar.sync 0;"),
            Op::FenceGpu => self.line("fence.acq_rel.gpu;"),
            // sm_80 has no programmatic dependent launch: a grid starts after the previous one
            // completed, so the wait is already satisfied and there is nobody to trigger
            Op::GridDepWait if self.target == Target::Sm80 => {
                self.line("// griddepcontrol.wait: nothing on sm_80 (no programmatic launch)")
            }
            Op::LaunchDependents if self.target == Target::Sm80 => self.line(
                "// griddepcontrol.launch_dependents: nothing on sm_80 (no programmatic launch)",
            ),
            Op::GridDepWait => self.line("griddepcontrol.wait;"),
            Op::LaunchDependents => self.line("griddepcontrol.launch_dependents;"),
            Op::WaitAcquire { mem, offset, target, sleep_ns } => {
                let (addr, space) = self.address(*mem, *offset)?;
                let v = self.tmp(ScalarType::U32);
                let p = self.tmp(ScalarType::Pred);
                let t = self.reg(*target);
                let again = self.label();
                self.out.push_str(&format!("{again}:\n"));
                self.line(format!("ld.acquire.gpu.{space}.u32 {v}, [{addr}];"));
                self.line(format!("setp.lt.u32 {p}, {v}, {t};"));
                if *sleep_ns == 0 {
                    self.line(format!("@{p} bra {again};"));
                } else {
                    // back off between polls: the sleeping warp issues nothing
                    let done = self.label();
                    self.line(format!("@!{p} bra {done};"));
                    self.line(format!("nanosleep.u32 {sleep_ns};"));
                    self.line(format!("bra {again};"));
                    self.out.push_str(&format!("{done}:\n"));
                }
            }
            Op::AtomicAdd { mem, offset, value, release, wrap } => {
                let (addr, space) = self.address(*mem, *offset)?;
                let sem = if *release { "release" } else { "relaxed" };
                let d = self.reg(inst.results[0]);
                let v = self.reg(*value);
                let op = if *wrap { "inc" } else { "add" };
                self.line(format!("atom.{sem}.gpu.{space}.{op}.u32 {d}, [{addr}], {v};"));
            }
            Op::LoadAcquire { mem, offset } => {
                let (addr, space) = self.address(*mem, *offset)?;
                let d = self.reg(inst.results[0]);
                self.line(format!("ld.acquire.gpu.{space}.u32 {d}, [{addr}];"));
            }
            Op::Note(t) => {
                let text: String = t
                    .chars()
                    .map(|c| if c.is_ascii() && !c.is_ascii_control() { c } else { '?' })
                    .collect();
                self.line(format!("// {text}"));
            }
            Op::Shfl { mode, value, lane } => self.shfl(res(0), *mode, *value, *lane)?,
            Op::Clock(c) => {
                let d = self.reg(res(0));
                self.line(format!("mov.u64 {d}, %{c};"));
            }
            Op::Elect => {
                if self.target == Target::Sm80 {
                    return Err(self.unsupported("elect.sync", "it needs sm_90"));
                }
                let d = self.reg(res(0));
                self.line(format!("elect.sync _|{d}, 0xffffffff;"));
            }
            Op::Vote(mode, p) => {
                let (d, p) = (self.reg(res(0)), self.reg(*p));
                match mode {
                    VoteMode::Any => self.line(format!("vote.sync.any.pred {d}, {p}, 0xffffffff;")),
                    VoteMode::All => self.line(format!("vote.sync.all.pred {d}, {p}, 0xffffffff;")),
                    VoteMode::Ballot => {
                        self.line(format!("vote.sync.ballot.b32 {d}, {p}, 0xffffffff;"))
                    }
                }
            }
            Op::Mma { shape, a, b, c } => self.mma(inst, *shape, a, b, c)?,
            Op::For { lo, hi, step, init, body } => {
                self.for_loop(inst, *lo, *hi, *step, init, body)?
            }
            Op::If { cond, then, else_ } => self.if_else(inst, *cond, then, else_)?,
        }
        Ok(())
    }

    /// A 32-bit register holding `v` (integers of 64 bits are truncated).
    fn u32_of(&mut self, v: ValueId) -> String {
        if self.ty(v) == ScalarType::I64 {
            let t = self.tmp(ScalarType::U32);
            self.line(format!("cvt.u32.u64 {t}, {};", self.reg(v)));
            t
        } else {
            self.reg(v)
        }
    }

    /// Bytes of `elems` elements of `t` as a 32-bit register.
    fn bytes_of(&mut self, elems: ValueId, t: ScalarType) -> String {
        let n = self.u32_of(elems);
        let b = self.tmp(ScalarType::U32);
        self.line(format!("mul.lo.u32 {b}, {n}, {};", t.size_bytes()));
        b
    }

    fn async_op(&mut self, a: &tilekit_ir::AsyncOp) -> Result<()> {
        use tilekit_ir::AsyncOp as A;
        if self.target == Target::Sm80 && !matches!(a, A::NamedBarrier { .. }) {
            return Err(
                self.unsupported(a.name(), "mbarrier transactions and bulk copies need sm_90")
            );
        }
        self.line(format!("// {}", a.name()));
        match a {
            A::MbarrierInit { bar, index, count } => {
                let (addr, _) = self.address(*bar, *index)?;
                let c = self.u32_of(*count);
                self.line(format!("mbarrier.init.shared::cta.b64 [{addr}], {c};"));
            }
            A::MbarrierArrive { bar, index, tx } => {
                let (addr, _) = self.address(*bar, *index)?;
                match tx {
                    Some(tx) => {
                        let n = self.u32_of(*tx);
                        self.line(format!(
                            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{addr}], {n};"
                        ));
                    }
                    None => self.line(format!("mbarrier.arrive.shared::cta.b64 _, [{addr}];")),
                }
            }
            A::MbarrierArriveCluster { bar, index, cta } => {
                // the same barrier in the shared memory of the cluster's block of rank `cta`
                let (addr, _) = self.address(*bar, *index)?;
                let rank = self.u32_of(*cta);
                let remote = self.tmp(ScalarType::U32);
                self.line(format!("mapa.shared::cluster.u32 {remote}, {addr}, {rank};"));
                self.line(format!("mbarrier.arrive.shared::cluster.b64 _, [{remote}];"));
            }
            A::MbarrierWait { bar, index, parity } => {
                let (addr, _) = self.address(*bar, *index)?;
                let par = self.u32_of(*parity);
                let p = self.tmp(ScalarType::Pred);
                let again = self.label();
                self.out.push_str(&format!("{again}:\n"));
                self.line(format!(
                    "mbarrier.try_wait.parity.shared::cta.b64 {p}, [{addr}], {par};"
                ));
                self.line(format!("@!{p} bra {again};"));
            }
            A::MbarrierInval { bar, index } => {
                let (addr, _) = self.address(*bar, *index)?;
                self.line(format!("mbarrier.inval.shared::cta.b64 [{addr}];"));
            }
            A::FenceProxyAsync => self.line("fence.proxy.async.shared::cta;"),
            A::FenceMbarrierInit => self.line("fence.mbarrier_init.release.cluster;"),
            A::BulkLoad { dst, dst_off, src, src_off, elems, bar, index, multicast } => {
                let (d, _) = self.address(*dst, *dst_off)?;
                let (g, _) = self.address(*src, *src_off)?;
                let (b, _) = self.address(*bar, *index)?;
                let n = self.bytes_of(*elems, dst.elem);
                match multicast {
                    None => self.line(format!(
                        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{g}], {n}, [{b}];"
                    )),
                    Some(m) => {
                        let m32 = self.u32_of(*m);
                        let h = self.tmp(ScalarType::F16);
                        self.line(format!("cvt.u16.u32 {h}, {m32};"));
                        self.line(format!(
                            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{g}], {n}, [{b}], {h};"
                        ));
                    }
                }
            }
            A::BulkStore { dst, dst_off, src, src_off, elems } => {
                let (g, _) = self.address(*dst, *dst_off)?;
                let (sh, _) = self.address(*src, *src_off)?;
                let n = self.bytes_of(*elems, src.elem);
                self.line(format!(
                    "cp.async.bulk.global.shared::cta.bulk_group [{g}], [{sh}], {n};"
                ));
            }
            A::TensorLoad { .. } | A::TensorStore { .. } | A::TensorPrefetch { .. } => {
                self.tensor_op(a)?
            }
            A::BulkCommit => self.line("cp.async.bulk.commit_group;"),
            A::NamedBarrier { id, count, sync } => {
                let op = if *sync { "sync" } else { "arrive" };
                self.line(format!("bar.{op} {id}, {count};"));
            }
            A::SetMaxNReg { inc, regs } => {
                if self.target != Target::Sm90a {
                    return Err(self.unsupported(a.name(), "setmaxnreg needs sm_90a"));
                }
                let d = if *inc { "inc" } else { "dec" };
                self.line(format!("setmaxnreg.{d}.sync.aligned.u32 {regs};"));
            }
            A::BulkWait { pending, read } => {
                let r = if *read { ".read" } else { "" };
                self.line(format!("cp.async.bulk.wait_group{r} {pending};"));
            }
        }
        Ok(())
    }

    /// `[tmap, {c0, ..}]`: the tensor map's generic address and the box coordinates.
    fn tensor_operand(&self, map: u32, coords: &[ValueId]) -> Result<String> {
        let m = self.ptr_regs.get(map as usize).cloned().flatten().ok_or_else(|| {
            self.unsupported(format!("tensor map {map}"), "not a tensor-map parameter")
        })?;
        let c: Vec<String> = coords.iter().map(|&v| self.reg(v)).collect();
        Ok(format!("[{m}, {{{}}}]", c.join(", ")))
    }

    fn tensor_op(&mut self, a: &tilekit_ir::AsyncOp) -> Result<()> {
        use tilekit_ir::AsyncOp as A;
        match a {
            A::TensorLoad { dst, dst_off, map, coords, bar, index, multicast, .. } => {
                let n = coords.len();
                let (d, _) = self.address(*dst, *dst_off)?;
                let (b, _) = self.address(*bar, *index)?;
                let t = self.tensor_operand(*map, coords)?;
                match multicast {
                    None => self.line(format!(
                        "cp.async.bulk.tensor.{n}d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], {t}, [{b}];"
                    )),
                    Some(m) => {
                        if self.target != Target::Sm90a {
                            return Err(self.unsupported(
                                "cp.async.bulk.tensor multicast",
                                "multicast tensor copies need sm_90a",
                            ));
                        }
                        let m32 = self.u32_of(*m);
                        let h = self.tmp(ScalarType::F16);
                        self.line(format!("cvt.u16.u32 {h}, {m32};"));
                        self.line(format!(
                            "cp.async.bulk.tensor.{n}d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [{d}], {t}, [{b}], {h};"
                        ));
                    }
                }
            }
            A::TensorStore { map, coords, src, src_off, .. } => {
                let n = coords.len();
                let (sh, _) = self.address(*src, *src_off)?;
                let t = self.tensor_operand(*map, coords)?;
                self.line(format!(
                    "cp.async.bulk.tensor.{n}d.global.shared::cta.bulk_group {t}, [{sh}];"
                ));
            }
            A::TensorPrefetch { map, coords, .. } => {
                let n = coords.len();
                let t = self.tensor_operand(*map, coords)?;
                self.line(format!("cp.async.bulk.prefetch.tensor.{n}d.L2.global {t};"));
            }
            _ => unreachable!("tensor_op emits tensor copies only"),
        }
        Ok(())
    }

    fn special(&mut self, d: &str, s: SpecialReg) {
        let ax = |a: Axis| ["x", "y", "z"][a.index()];
        match s {
            SpecialReg::ThreadId(a) => self.line(format!("mov.u32 {d}, %tid.{};", ax(a))),
            SpecialReg::BlockDim(a) => self.line(format!("mov.u32 {d}, %ntid.{};", ax(a))),
            SpecialReg::BlockId(a) => self.line(format!("mov.u32 {d}, %ctaid.{};", ax(a))),
            SpecialReg::GridDim(a) => self.line(format!("mov.u32 {d}, %nctaid.{};", ax(a))),
            SpecialReg::ClusterCtaRank => self.line(format!("mov.u32 {d}, %cluster_ctarank;")),
            SpecialReg::ClusterSize => self.line(format!("mov.u32 {d}, %cluster_nctarank;")),
            SpecialReg::LaneId | SpecialReg::WarpId => {
                // linear thread index of the block, then lane = linear % 32, warp = linear / 32
                let [nx, ny, _] = self.k.block_dim;
                let lin = self.tmp(ScalarType::U32);
                self.line(format!("mov.u32 {lin}, %tid.x;"));
                if self.k.block_dim[1] > 1 || self.k.block_dim[2] > 1 {
                    let (ty_, tz) = (self.tmp(ScalarType::U32), self.tmp(ScalarType::U32));
                    self.line(format!("mov.u32 {ty_}, %tid.y;"));
                    self.line(format!("mov.u32 {tz}, %tid.z;"));
                    self.line(format!("mad.lo.u32 {ty_}, {tz}, {ny}, {ty_};"));
                    self.line(format!("mad.lo.u32 {lin}, {ty_}, {nx}, {lin};"));
                }
                if s == SpecialReg::LaneId {
                    self.line(format!("and.b32 {d}, {lin}, 31;"));
                } else {
                    self.line(format!("shr.u32 {d}, {lin}, 5;"));
                }
            }
        }
    }

    fn unary(&mut self, inst: &Inst, op: UnOp, a: ValueId) -> Result<()> {
        let t = self.ty(inst.results[0]);
        let (d, ra) = (self.reg(inst.results[0]), self.reg(a));
        if t == ScalarType::Pred {
            return match op {
                UnOp::Not => {
                    self.line(format!("not.pred {d}, {ra};"));
                    Ok(())
                }
                _ => Err(self.unsupported(
                    format!("{} on a predicate", op.name()),
                    "only not applies to predicates",
                )),
            };
        }
        if t == ScalarType::U32 && op == UnOp::Abs {
            self.mov(&d, &ra, t);
            return Ok(());
        }
        if t.is_int() {
            let signed = if t == ScalarType::I64 { "s64" } else { "s32" };
            let ins = match op {
                UnOp::Neg => format!("neg.{signed}"),
                UnOp::Not => format!("not.{}", bits(t)),
                UnOp::Abs => format!("abs.{signed}"),
                _ => {
                    return Err(
                        self.unsupported(format!("{} on {t}", op.name()), "a float operation")
                    )
                }
            };
            self.line(format!("{ins} {d}, {ra};"));
            return Ok(());
        }
        let (src, dst_f32) = if matches!(t, ScalarType::F16 | ScalarType::BF16) {
            (self.widen(&ra, t), Some(self.tmp(ScalarType::F32)))
        } else {
            (ra, None)
        };
        let ft = if dst_f32.is_some() { ScalarType::F32 } else { t };
        let dst = dst_f32.clone().unwrap_or_else(|| d.clone());
        let f = arith(ft);
        let ins = match (op, ft) {
            (UnOp::Neg, _) => format!("neg.{f}"),
            (UnOp::Abs, _) => format!("abs.{f}"),
            (UnOp::Exp2Approx, ScalarType::F32) => "ex2.approx.f32".into(),
            (UnOp::Exp2ApproxFtz, ScalarType::F32) => "ex2.approx.ftz.f32".into(),
            (UnOp::RcpApprox, ScalarType::F32) => "rcp.approx.f32".into(),
            (UnOp::RsqrtApprox, ScalarType::F32) => "rsqrt.approx.f32".into(),
            (UnOp::Lg2Approx, ScalarType::F32) => "lg2.approx.f32".into(),
            (UnOp::Sqrt, _) => format!("sqrt.rn.{f}"),
            (o, _) => {
                return Err(
                    self.unsupported(format!("{} on {t}", o.name()), "not defined for this type")
                )
            }
        };
        self.line(format!("{ins} {dst}, {src};"));
        if let Some(f32r) = dst_f32 {
            self.narrow(&d, &f32r, t);
        }
        Ok(())
    }

    fn binary(&mut self, inst: &Inst, op: BinOp, a: ValueId, b: ValueId) -> Result<()> {
        let t = self.ty(inst.results[0]);
        let (d, ra, rb) = (self.reg(inst.results[0]), self.reg(a), self.reg(b));
        if t == ScalarType::Pred {
            let ins = match op {
                BinOp::And => "and",
                BinOp::Or => "or",
                BinOp::Xor => "xor",
                o => {
                    return Err(
                        self.unsupported(format!("{} on predicates", o.name()), "only and/or/xor")
                    )
                }
            };
            self.line(format!("{ins}.pred {d}, {ra}, {rb};"));
            return Ok(());
        }
        if t.is_int() {
            let a_ = arith(t);
            let ins = match op {
                BinOp::Add => format!("add.{a_}"),
                BinOp::Sub => format!("sub.{a_}"),
                BinOp::Mul => format!("mul.lo.{a_}"),
                BinOp::Div => format!("div.{a_}"),
                BinOp::Rem => format!("rem.{a_}"),
                BinOp::Min => format!("min.{a_}"),
                BinOp::Max => format!("max.{a_}"),
                BinOp::And => format!("and.{}", bits(t)),
                BinOp::Or => format!("or.{}", bits(t)),
                BinOp::Xor => format!("xor.{}", bits(t)),
                BinOp::Shl => format!("shl.{}", bits(t)),
                BinOp::Shr => format!("shr.{a_}"),
            };
            // PTX shift amounts are always .u32
            let rb = if matches!(op, BinOp::Shl | BinOp::Shr) && t == ScalarType::I64 {
                let s = self.tmp(ScalarType::U32);
                self.line(format!("cvt.u32.u64 {s}, {rb};"));
                s
            } else {
                rb
            };
            self.line(format!("{ins} {d}, {ra}, {rb};"));
            return Ok(());
        }
        let narrow = matches!(t, ScalarType::F16 | ScalarType::BF16);
        let (fa, fb, fd) = if narrow {
            (self.widen(&ra, t), self.widen(&rb, t), self.tmp(ScalarType::F32))
        } else {
            (ra, rb, d.clone())
        };
        let ft = if narrow { "f32" } else { arith(t) };
        if t == ScalarType::F64 && matches!(op, BinOp::Min | BinOp::Max) {
            // no min.NaN.f64: the plain form, then the canonical NaN where either is NaN
            let p = self.tmp(ScalarType::Pred);
            self.line(format!("setp.nan.f64 {p}, {fa}, {fb};"));
            self.line(format!("{}.f64 {fd}, {fa}, {fb};", op.name()));
            let nan = self.tmp(ScalarType::F64);
            self.line(format!("mov.f64 {nan}, 0d7FFFFFFFFFFFFFFF;"));
            self.line(format!("selp.f64 {fd}, {nan}, {fd}, {p};"));
            return Ok(());
        }
        let ins = match op {
            BinOp::Add => format!("add.rn.{ft}"),
            BinOp::Sub => format!("sub.rn.{ft}"),
            BinOp::Mul => format!("mul.rn.{ft}"),
            BinOp::Div => format!("div.rn.{ft}"),
            // .NaN (sm_80+): a NaN in either operand gives the canonical NaN, as torch.maximum;
            // the plain form would return the other operand
            BinOp::Min => format!("min.NaN.{ft}"),
            BinOp::Max => format!("max.NaN.{ft}"),
            o => {
                return Err(self.unsupported(format!("{} on {t}", o.name()), "an integer operation"))
            }
        };
        self.line(format!("{ins} {fd}, {fa}, {fb};"));
        if narrow {
            self.narrow(&d, &fd, t);
        }
        Ok(())
    }

    fn cvt(&mut self, r: ValueId, a: ValueId) -> Result<()> {
        let (from, to) = (self.ty(a), self.ty(r));
        let (d, s) = (self.reg(r), self.reg(a));
        if from == to {
            self.mov(&d, &s, to);
            return Ok(());
        }
        match (from, to) {
            (ScalarType::Pred, _) => {
                if to.is_float() {
                    let u = self.tmp(ScalarType::U32);
                    self.line(format!("selp.u32 {u}, 1, 0, {s};"));
                    self.line(format!("cvt.rn.{}.u32 {d}, {u};", arith(to)));
                } else if to == ScalarType::I64 {
                    self.line(format!("selp.b64 {d}, 1, 0, {s};"));
                } else {
                    self.line(format!("selp.b32 {d}, 1, 0, {s};"));
                }
            }
            (_, ScalarType::Pred) => {
                if matches!(from, ScalarType::F16 | ScalarType::BF16) {
                    let f = self.widen(&s, from);
                    self.line(format!("setp.ne.f32 {d}, {f}, 0f00000000;"));
                } else {
                    self.line(format!("setp.ne.{} {d}, {s}, 0;", arith(from)));
                }
            }
            (f, t) if f.is_float() && t.is_float() => {
                let wider = t.size_bytes() > f.size_bytes();
                if matches!(
                    (f, t),
                    (ScalarType::F16, ScalarType::BF16) | (ScalarType::BF16, ScalarType::F16)
                ) {
                    let w = self.widen(&s, f);
                    self.narrow(&d, &w, t);
                } else if f == ScalarType::F64 && matches!(t, ScalarType::F16 | ScalarType::BF16) {
                    self.narrow_f64(&d, &s, t);
                } else if wider && matches!(f, ScalarType::F16 | ScalarType::BF16) {
                    let w = self.widen(&s, f);
                    if t == ScalarType::F32 {
                        self.mov(&d, &w, t);
                    } else {
                        self.line(format!("cvt.f64.f32 {d}, {w};"));
                    }
                } else if wider {
                    self.line(format!("cvt.{}.{} {d}, {s};", arith(t), arith(f)));
                } else {
                    self.line(format!("cvt.rn.{}.{} {d}, {s};", arith(t), arith(f)));
                }
            }
            (f, t) if f.is_float() => {
                // truncate toward zero, saturate, NaN -> 0 (cvt.rzi)
                let src = if matches!(f, ScalarType::F16 | ScalarType::BF16) {
                    self.widen(&s, f)
                } else {
                    s
                };
                let fs =
                    if matches!(f, ScalarType::F16 | ScalarType::BF16) { "f32" } else { arith(f) };
                self.line(format!("cvt.rzi.{}.{fs} {d}, {src};", arith(t)));
            }
            (f, t) if t.is_float() => {
                if matches!(t, ScalarType::BF16 | ScalarType::F16) {
                    let w = self.tmp(ScalarType::F64);
                    self.line(format!("cvt.rn.f64.{} {w}, {s};", arith(f)));
                    self.narrow_f64(&d, &w, t);
                } else {
                    self.line(format!("cvt.rn.{}.{} {d}, {s};", arith(t), arith(f)));
                }
            }
            (f, t) => {
                // integer ↔ integer: sign/zero extension or truncation
                if f.size_bytes() == t.size_bytes() {
                    self.mov(&d, &s, t);
                } else {
                    self.line(format!("cvt.{}.{} {d}, {s};", arith(t), arith(f)));
                }
            }
        }
        Ok(())
    }

    /// Byte address (u64 for global, u32 for shared) of element `offset` of `mem`.
    fn address(&mut self, mem: MemRef, offset: ValueId) -> Result<(String, &'static str)> {
        let size = mem.elem.size_bytes();
        let off = self.reg(offset);
        let ot = self.ty(offset);
        match mem.space {
            MemSpace::Global(p) => {
                let base = self.ptr_regs.get(p as usize).cloned().flatten().ok_or_else(|| {
                    self.unsupported(
                        format!("global memory {p}"),
                        "not a pointer parameter of this kernel",
                    )
                })?;
                let bytes = self.tmp(ScalarType::I64);
                match ot {
                    ScalarType::I32 => self.line(format!("mul.wide.s32 {bytes}, {off}, {size};")),
                    ScalarType::U32 => self.line(format!("mul.wide.u32 {bytes}, {off}, {size};")),
                    ScalarType::I64 => self.line(format!("mul.lo.s64 {bytes}, {off}, {size};")),
                    t => {
                        return Err(
                            self.unsupported(format!("a {t} offset"), "offsets are integers")
                        )
                    }
                }
                let addr = self.tmp(ScalarType::I64);
                self.line(format!("add.s64 {addr}, {base}, {bytes};"));
                Ok((addr, "global"))
            }
            MemSpace::Shared(s) => {
                let name = self.shared_names.get(s as usize).cloned().ok_or_else(|| {
                    self.unsupported(
                        format!("shared memory {s}"),
                        "not a shared allocation of this kernel",
                    )
                })?;
                let off32 = match ot {
                    ScalarType::I64 => {
                        let t = self.tmp(ScalarType::U32);
                        self.line(format!("cvt.u32.u64 {t}, {off};"));
                        t
                    }
                    _ => off,
                };
                let base = self.tmp(ScalarType::U32);
                let layout = shared_layout(self.k);
                if layout.dynamic {
                    self.line(format!("mov.u32 {base}, {DYNAMIC_SMEM};"));
                    let off = layout.offsets[s as usize];
                    if off > 0 {
                        self.line(format!("add.u32 {base}, {base}, {off}; // {name}"));
                    }
                } else {
                    self.line(format!("mov.u32 {base}, {name};"));
                }
                let addr = self.tmp(ScalarType::U32);
                self.line(format!("mad.lo.u32 {addr}, {off32}, {size}, {base};"));
                Ok((addr, "shared"))
            }
        }
    }

    /// Registers holding `n` elements as the memory instruction sees them: 16-byte vectors of
    /// 2-byte elements travel as `.b32` pairs.
    fn load(
        &mut self,
        inst: &Inst,
        mem: MemRef,
        offset: ValueId,
        width: usize,
        (mask, fill): (Option<ValueId>, u64),
        cta: Option<ValueId>,
    ) -> Result<()> {
        let (mut addr, mut space) = self.address(mem, offset)?;
        if space == "global" {
            space = match self.k.global_cache {
                GlobalCache::Streaming => "global.cs",
                GlobalCache::Prefetch256 => "global.L2::256B",
                GlobalCache::Default | GlobalCache::StreamingStores => "global",
            };
        }
        if let Some(c) = cta {
            // the same allocation in the shared memory of the cluster's block of rank `c`
            let rank = match self.ty(c) {
                ScalarType::I64 => {
                    let t = self.tmp(ScalarType::U32);
                    self.line(format!("cvt.u32.u64 {t}, {};", self.reg(c)));
                    t
                }
                _ => self.reg(c),
            };
            let remote = self.tmp(ScalarType::U32);
            self.line(format!("mapa.shared::cluster.u32 {remote}, {addr}, {rank};"));
            addr = remote;
            space = "shared::cluster";
        }
        let t = mem.elem;
        let pred = mask.map(|m| format!("@{} ", self.reg(m))).unwrap_or_default();
        let dsts: Vec<String> = inst.results.iter().map(|&r| self.reg(r)).collect();
        if mask.is_some() {
            // the fill first: lanes whose predicate is false keep it (no select afterwards)
            for (d, &r) in dsts.iter().zip(&inst.results) {
                self.fill(d, self.ty(r), fill);
            }
        }
        if t.size_bytes() == 2 && width == 8 {
            let words: Vec<String> = (0..4).map(|_| self.tmp(ScalarType::U32)).collect();
            if mask.is_some() {
                let pair = (fill & 0xffff) | ((fill & 0xffff) << 16);
                for w in &words {
                    self.line(format!("mov.b32 {w}, 0x{pair:08X};"));
                }
            }
            self.line(format!("{pred}ld.{space}.v4.b32 {{{}}}, [{addr}];", words.join(", ")));
            for (i, w) in words.iter().enumerate() {
                self.line(format!("mov.b32 {{{}, {}}}, {w};", dsts[2 * i], dsts[2 * i + 1]));
            }
            return Ok(());
        }
        let ty = match t {
            ScalarType::F32 => "f32".to_string(),
            ScalarType::F64 => "f64".to_string(),
            ScalarType::Pred => {
                return Err(self.unsupported("a predicate load", "predicates are not memory types"))
            }
            _ => bits(t).to_string(),
        };
        let v = if width == 1 { String::new() } else { format!(".v{width}") };
        let list = if width == 1 { dsts[0].clone() } else { format!("{{{}}}", dsts.join(", ")) };
        self.line(format!("{pred}ld.{space}{v}.{ty} {list}, [{addr}];"));
        Ok(())
    }

    fn pred_const(&mut self, d: &str, v: bool) {
        let u = self.tmp(ScalarType::U32);
        self.line(format!("mov.b32 {u}, {};", u32::from(v)));
        self.line(format!("setp.ne.u32 {d}, {u}, 0;"));
    }

    /// `d` (of type `t`) = the element bits `bits` (0: [`zero`](Self::zero)).
    fn fill(&mut self, d: &str, t: ScalarType, bits: u64) {
        if bits == 0 || t == ScalarType::Pred {
            return self.zero(d, t);
        }
        match t {
            ScalarType::F32 => self.line(format!("mov.f32 {d}, 0f{:08X};", bits as u32)),
            ScalarType::F64 => self.line(format!("mov.f64 {d}, 0d{bits:016X};")),
            ScalarType::F16 | ScalarType::BF16 => {
                self.line(format!("mov.b16 {d}, 0x{:04X};", bits as u16))
            }
            ScalarType::I64 => self.line(format!("mov.b64 {d}, 0x{bits:016X};")),
            _ => self.line(format!("mov.b32 {d}, 0x{:08X};", bits as u32)),
        }
    }

    fn zero(&mut self, d: &str, t: ScalarType) {
        match t {
            ScalarType::F32 => self.line(format!("mov.f32 {d}, 0f00000000;")),
            ScalarType::F64 => self.line(format!("mov.f64 {d}, 0d0000000000000000;")),
            ScalarType::F16 | ScalarType::BF16 => self.line(format!("mov.b16 {d}, 0;")),
            ScalarType::I64 => self.line(format!("mov.b64 {d}, 0;")),
            ScalarType::Pred => self.pred_const(d, false),
            _ => self.line(format!("mov.b32 {d}, 0;")),
        }
    }

    fn store(
        &mut self,
        mem: MemRef,
        offset: ValueId,
        values: &[ValueId],
        mask: Option<ValueId>,
    ) -> Result<()> {
        let (addr, mut space) = self.address(mem, offset)?;
        if space == "global"
            && matches!(self.k.global_cache, GlobalCache::Streaming | GlobalCache::StreamingStores)
        {
            space = "global.cs";
        }
        let t = mem.elem;
        let width = values.len();
        let pred = mask.map(|m| format!("@{} ", self.reg(m))).unwrap_or_default();
        let srcs: Vec<String> = values.iter().map(|&v| self.reg(v)).collect();
        if t.size_bytes() == 2 && width == 8 {
            let mut words = Vec::new();
            for i in 0..4 {
                let w = self.tmp(ScalarType::U32);
                self.line(format!("mov.b32 {w}, {{{}, {}}};", srcs[2 * i], srcs[2 * i + 1]));
                words.push(w);
            }
            self.line(format!("{pred}st.{space}.v4.b32 [{addr}], {{{}}};", words.join(", ")));
            return Ok(());
        }
        let ty = match t {
            ScalarType::F32 => "f32".to_string(),
            ScalarType::F64 => "f64".to_string(),
            ScalarType::Pred => {
                return Err(self.unsupported("a predicate store", "predicates are not memory types"))
            }
            _ => bits(t).to_string(),
        };
        let v = if width == 1 { String::new() } else { format!(".v{width}") };
        let list = if width == 1 { srcs[0].clone() } else { format!("{{{}}}", srcs.join(", ")) };
        self.line(format!("{pred}st.{space}{v}.{ty} [{addr}], {list};"));
        Ok(())
    }

    fn shfl(&mut self, r: ValueId, mode: ShflMode, value: ValueId, lane: ValueId) -> Result<()> {
        let t = self.ty(r);
        let (d, v, l) = (self.reg(r), self.reg(value), self.reg(lane));
        let c = if mode == ShflMode::Up { "0" } else { "0x1f" };
        let m = mode.name();
        match t {
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => {
                self.line(format!("shfl.sync.{m}.b32 {d}, {v}, {l}, {c}, 0xffffffff;"))
            }
            ScalarType::I64 | ScalarType::F64 => {
                let (lo, hi, lo2, hi2) = (
                    self.tmp(ScalarType::U32),
                    self.tmp(ScalarType::U32),
                    self.tmp(ScalarType::U32),
                    self.tmp(ScalarType::U32),
                );
                let bb = "b64";
                self.line(format!("mov.{bb} {{{lo}, {hi}}}, {v};"));
                self.line(format!("shfl.sync.{m}.b32 {lo2}, {lo}, {l}, {c}, 0xffffffff;"));
                self.line(format!("shfl.sync.{m}.b32 {hi2}, {hi}, {l}, {c}, 0xffffffff;"));
                self.line(format!("mov.{bb} {d}, {{{lo2}, {hi2}}};"));
            }
            ScalarType::F16 | ScalarType::BF16 => {
                let (w, w2) = (self.tmp(ScalarType::U32), self.tmp(ScalarType::U32));
                self.line(format!("cvt.u32.u16 {w}, {v};"));
                self.line(format!("shfl.sync.{m}.b32 {w2}, {w}, {l}, {c}, 0xffffffff;"));
                self.line(format!("cvt.u16.u32 {d}, {w2};"));
            }
            ScalarType::Pred => {
                let (w, w2) = (self.tmp(ScalarType::U32), self.tmp(ScalarType::U32));
                self.line(format!("selp.u32 {w}, 1, 0, {v};"));
                self.line(format!("shfl.sync.{m}.b32 {w2}, {w}, {l}, {c}, 0xffffffff;"));
                self.line(format!("setp.ne.u32 {d}, {w2}, 0;"));
            }
        }
        Ok(())
    }

    fn mma(
        &mut self,
        inst: &Inst,
        shape: MmaShape,
        a: &[ValueId],
        b: &[ValueId],
        c: &[ValueId],
    ) -> Result<()> {
        let MmaShape::M16N8K16 = shape;
        let it = self.ty(a[0]);
        let ab = match it {
            ScalarType::F16 => "f16",
            ScalarType::BF16 => "bf16",
            t => {
                return Err(self.unsupported(
                    format!("mma.sync with {t} inputs"),
                    "m16n8k16 takes f16 or bf16",
                ))
            }
        };
        let pack = |e: &mut Self, vals: &[ValueId]| -> Vec<String> {
            vals.chunks(2)
                .map(|pair| {
                    let w = e.tmp(ScalarType::U32);
                    let (x, y) = (e.reg(pair[0]), e.reg(pair[1]));
                    e.line(format!("mov.b32 {w}, {{{x}, {y}}};"));
                    w
                })
                .collect()
        };
        let ra = pack(self, a);
        let rb = pack(self, b);
        let rc: Vec<String> = c.iter().map(|&v| self.reg(v)).collect();
        let rd: Vec<String> = inst.results.iter().map(|&v| self.reg(v)).collect();
        self.line(format!(
            "mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}.f32 {{{}}}, {{{}}}, {{{}}}, {{{}}};",
            rd.join(", "),
            ra.join(", "),
            rb.join(", "),
            rc.join(", ")
        ));
        Ok(())
    }

    fn for_loop(
        &mut self,
        inst: &Inst,
        lo: ValueId,
        hi: ValueId,
        step: ValueId,
        init: &[ValueId],
        body: &Block,
    ) -> Result<()> {
        let it = self.ty(lo);
        let iv =
            body.args.first().copied().ok_or_else(|| {
                self.unsupported("a loop without induction variable", "malformed IR")
            })?;
        let carried = &body.args[1..];
        let (ivr, lor, hir, str_) = (self.reg(iv), self.reg(lo), self.reg(hi), self.reg(step));
        self.line(format!("// for {} = {} to {} step {}", iv, lo, hi, step));
        self.mov(&ivr, &lor, it);
        for (&a, &i) in carried.iter().zip(init) {
            let (ra, ri) = (self.reg(a), self.reg(i));
            self.mov(&ra, &ri, self.ty(a));
        }
        let (head, end) = (self.label(), self.label());
        let p = self.tmp(ScalarType::Pred);
        self.out.push_str(&format!("{head}:\n"));
        self.line(format!("setp.ge.{} {p}, {ivr}, {hir};", arith(it)));
        self.line(format!("@{p} bra {end};"));
        self.indent += 1;
        // a loop's wgmma accumulators that are rescaled and accumulated each iteration stay in
        // the carried registers, in the loop and after it (`wgmma::carried_in_place`): in a
        // software-pipelined loop (wgmmas running across the back edge) a copy would read
        // accumulators in flight; in any other it is one move per accumulator and iteration
        // that ptxas keeps (the rescaled copy lives in other registers than the carried one)
        let in_flight = wgmma::in_flight_at_end(body);
        self.wg.loops.push(in_flight);
        let pipelined = self.wgmma_carry(body, carried) || in_flight;
        let emitted = self.block(body);
        self.wg.loops.pop();
        emitted?;
        // parallel copy of the yields into the carried registers (none where a yield is in its
        // carried register already: a wgmma accumulator computed in place)
        let in_place: Vec<bool> = body
            .yields
            .iter()
            .zip(carried)
            .map(|(&y, &a)| pipelined && self.reg(y) == self.reg(a))
            .collect();
        let temps: Vec<Option<(String, ScalarType)>> = body
            .yields
            .iter()
            .zip(&in_place)
            .map(|(&y, &same)| {
                let (t, ry) = (self.ty(y), self.reg(y));
                if same {
                    return None;
                }
                let tmp = self.tmp(t);
                self.mov(&tmp, &ry, t);
                Some((tmp, t))
            })
            .collect();
        for (&a, tmp) in carried.iter().zip(&temps) {
            if let Some((tmp, t)) = tmp {
                let ra = self.reg(a);
                self.mov(&ra, tmp, *t);
            }
        }
        self.line(format!("add.{} {ivr}, {ivr}, {str_};", arith(it)));
        self.line(format!("bra {head};"));
        self.indent -= 1;
        self.out.push_str(&format!("{end}:\n"));
        // the results: copies of the carried registers — but a wgmma accumulator computed in
        // place stays in them (the loop's last wgmmas may still run: a copy would read their
        // accumulators; the carried registers are not written again after the loop)
        for ((&r, &a), &same) in inst.results.iter().zip(carried).zip(&in_place) {
            if same {
                let ra = self.reg(a);
                self.alias.insert(r, ra);
                continue;
            }
            let (rr, ra) = (self.reg(r), self.reg(a));
            self.mov(&rr, &ra, self.ty(r));
        }
        Ok(())
    }

    fn if_else(&mut self, inst: &Inst, cond: ValueId, then: &Block, else_: &Block) -> Result<()> {
        let c = self.reg(cond);
        let (lelse, lend) = (self.label(), self.label());
        self.line(format!("// if {cond}"));
        self.line(format!("@!{c} bra {lelse};"));
        self.indent += 1;
        self.block(then)?;
        for (&r, &y) in inst.results.iter().zip(&then.yields) {
            let (rr, ry) = (self.reg(r), self.reg(y));
            self.mov(&rr, &ry, self.ty(r));
        }
        self.line(format!("bra {lend};"));
        self.indent -= 1;
        self.out.push_str(&format!("{lelse}:\n"));
        self.indent += 1;
        self.block(else_)?;
        for (&r, &y) in inst.results.iter().zip(&else_.yields) {
            let (rr, ry) = (self.reg(r), self.reg(y));
            self.mov(&rr, &ry, self.ty(r));
        }
        self.indent -= 1;
        self.out.push_str(&format!("{lend}:\n"));
        Ok(())
    }
}

/// The registers per thread a kernel that uses `setmaxnreg` declares at entry (`.maxnreg`):
/// ptxas needs a known count at entry to honour `setmaxnreg`, and the warpgroups' increases and
/// decreases move registers within the block's pool of `threads · count`. The count fills the
/// 64 Ki-register file with one block: `65536 / threads`, rounded down to a multiple of 8, at
/// most 248. `None` for kernels without `setmaxnreg`.
///
/// ```
/// use tilekit_ir::KernelBuilder;
/// let b = KernelBuilder::new("k", [384, 1, 1]).unwrap();
/// b.setmaxnreg(false, 40).unwrap();
/// let k = b.finish().unwrap();
/// assert_eq!(tilekit_ptx::emit::entry_registers(&k), Some(168));
/// let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
/// assert_eq!(tilekit_ptx::emit::entry_registers(&b.finish().unwrap()), None);
/// ```
pub fn entry_registers(k: &Kernel) -> Option<u32> {
    let mut uses = false;
    k.body.walk(&mut |i| {
        uses |= matches!(i.op, Op::Async(tilekit_ir::AsyncOp::SetMaxNReg { .. }));
    });
    let threads = k.threads_per_block().max(1) as u32;
    uses.then(|| (65536 / threads / 8 * 8).min(248))
}
