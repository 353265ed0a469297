//! The text dump: one op per line, named values, types in the mnemonic (PTX-like).
//!
//! ```text
//! kernel @row_sum(x: ptr<global f32>, y: ptr<global f32>, n: i32) block [32, 1, 1] {
//!   shared partial: f32[32]                                   ; 128 bytes
//!   %0 = const.i32 0
//!   %1 = sreg.tid.x.i32                                       ; 0..=31
//!   %2 = param.i32 n
//!   %3 = cmp.lt.i32 %1, %2
//!   %4 = ld.global.f32 x[%1] if %3
//!   %9 = for %5 = %0 to %2 step %6 iter(%7 = %4) : i32 {
//!     %8 = add.f32 %7, %4
//!     yield %8
//!   }
//!   %10 = shfl.sync.bfly.f32 %9, %6
//!   st.global.f32 y[%1], %10 if %3
//! }
//! ```
//!
//! Memory accesses print as `name[offset]` with the memory's parameter or allocation name.
//!
//! ```
//! use tilekit_ir::{KernelBuilder, ScalarType, Axis};
//! let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
//! let y = b.ptr_param("y", ScalarType::I32).unwrap();
//! let t = b.thread_id(Axis::X);
//! b.store(y, &t, &[t.clone()], None).unwrap();
//! let text = b.finish().unwrap().to_string();
//! assert_eq!(text, "kernel @k(y: ptr<global i32>) block [32, 1, 1] {\n  %0 = sreg.tid.x.i32  ; 0..=31\n  st.global.i32 y[%0], %0\n}\n");
//! ```

use std::fmt::{self, Write};

use crate::kernel::{Kernel, ParamKind};
use crate::op::{Block, Inst, MemRef, Op, ValueId};

/// The mnemonic of an op without its operands (`add`, `ld.global.v4`, `for`, …).
///
/// ```
/// use tilekit_ir::{dump::op_mnemonic, Op, BinOp, ValueId};
/// assert_eq!(op_mnemonic(&Op::Binary(BinOp::Add, ValueId(0), ValueId(1))), "add");
/// assert_eq!(op_mnemonic(&Op::Barrier), "bar.sync");
/// ```
pub fn op_mnemonic(op: &Op) -> String {
    let v = |w: usize| {
        if w > 1 {
            format!(".v{w}")
        } else {
            String::new()
        }
    };
    match op {
        Op::Const(_) => "const".into(),
        Op::Param(_) => "param".into(),
        Op::Special(r) => format!("sreg.{r}"),
        Op::Unary(u, _) => u.name().into(),
        Op::Binary(b, ..) => b.name().into(),
        Op::Fma(..) => "fma".into(),
        Op::Cmp(c, ..) => format!("cmp.{}", c.name()),
        Op::Select(..) => "selp".into(),
        Op::Cvt(_) => "cvt".into(),
        Op::CvtPack(t, ..) => format!("cvt.rn.{}x2", t.name()),
        Op::BinaryPair(b, ..) => format!("{}.x2", b.name()),
        Op::Load { mem, width, .. } => format!("ld.{}{}", mem.space.name(), v(*width as usize)),
        Op::Store { mem, values, .. } => format!("st.{}{}", mem.space.name(), v(values.len())),
        Op::Barrier => "bar.sync".into(),
        Op::ClusterBarrier => "barrier.cluster".into(),
        Op::ClusterArrive => "barrier.cluster.arrive".into(),
        Op::ClusterWait => "barrier.cluster.wait".into(),
        Op::Async(a) => a.name().into(),
        Op::Wgmma(w) => w.name().into(),
        Op::LoadCluster { width, .. } => format!("ld.shared::cluster{}", v(*width as usize)),
        Op::AtomicAdd { release, wrap, .. } => format!(
            "atom.{}.gpu.global.{}",
            if *release { "release" } else { "relaxed" },
            if *wrap { "inc" } else { "add" }
        ),
        Op::LoadAcquire { .. } => "ld.acquire.gpu.global".into(),
        Op::FenceGpu => "fence.acq_rel.gpu".into(),
        Op::GridDepWait => "griddepcontrol.wait".into(),
        Op::LaunchDependents => "griddepcontrol.launch_dependents".into(),
        Op::WaitAcquire { .. } => "wait.acquire.gpu.global".into(),
        Op::Note(_) => "//".into(),
        Op::Shfl { mode, .. } => format!("shfl.sync.{}", mode.name()),
        Op::Vote(m, _) => format!("vote.sync.{}", m.name()),
        Op::Elect => "elect.sync".into(),
        Op::Clock(c) => format!("mov.u64 %{c}"),
        Op::Mma { .. } => "mma.sync.m16n8k16.row.col".into(),
        Op::For { .. } => "for".into(),
        Op::If { .. } => "if".into(),
    }
}

fn async_text(k: &Kernel, a: &crate::asyncop::AsyncOp, mn: String) -> String {
    use crate::asyncop::AsyncOp as A;
    let bar = |m: &MemRef, i: &ValueId| mem(k, *m, *i);
    match a {
        A::MbarrierInit { bar: b, index, count } => format!("{mn} {}, {count}", bar(b, index)),
        A::MbarrierArrive { bar: b, index, tx: Some(t) } => format!("{mn} {}, {t}", bar(b, index)),
        A::MbarrierArrive { bar: b, index, tx: None } | A::MbarrierInval { bar: b, index } => {
            format!("{mn} {}", bar(b, index))
        }
        A::MbarrierWait { bar: b, index, parity } => format!("{mn} {}, {parity}", bar(b, index)),
        A::MbarrierArriveCluster { bar: b, index, cta } => {
            format!("{mn} {} of cta {cta}", bar(b, index))
        }
        A::FenceProxyAsync | A::FenceMbarrierInit | A::BulkCommit => mn,
        A::BulkWait { pending, .. } => format!("{mn} {pending}"),
        A::SetMaxNReg { regs, .. } => format!("{mn} {regs}"),
        A::NamedBarrier { id, count, .. } => format!("{mn} {id}, {count}"),
        A::BulkLoad { dst, dst_off, src, src_off, elems, bar: b, index, multicast } => format!(
            "{mn} {}, {}, {elems} x {}, complete_tx {}{}",
            mem(k, *dst, *dst_off),
            mem(k, *src, *src_off),
            dst.elem,
            bar(b, index),
            multicast.map(|m| format!(", multicast to ctas {m}")).unwrap_or_default()
        ),
        A::TensorLoad { dst, dst_off, map, coords, bar: b, index, multicast, .. } => format!(
            "cp.async.bulk.tensor.{}d.shared.global {}, {}[{}], complete_tx {}{}",
            coords.len(),
            mem(k, *dst, *dst_off),
            param_name(k, *map),
            list(coords),
            bar(b, index),
            multicast.map(|m| format!(", multicast to ctas {m}")).unwrap_or_default()
        ),
        A::TensorStore { map, coords, src, src_off, .. } => {
            format!(
                "cp.async.bulk.tensor.{}d.global.shared {}[{}], {}",
                coords.len(),
                param_name(k, *map),
                list(coords),
                mem(k, *src, *src_off)
            )
        }
        A::TensorPrefetch { map, coords, .. } => {
            format!(
                "cp.async.bulk.prefetch.tensor.{}d {}[{}]",
                coords.len(),
                param_name(k, *map),
                list(coords)
            )
        }
        A::BulkStore { dst, dst_off, src, src_off, elems } => format!(
            "{mn} {}, {}, {elems} x {}",
            mem(k, *dst, *dst_off),
            mem(k, *src, *src_off),
            dst.elem
        ),
    }
}

fn param_name(k: &Kernel, p: u32) -> &str {
    k.params.get(p as usize).map_or("?", |d| d.name.as_str())
}

fn list(v: &[ValueId]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}

fn mem(k: &Kernel, m: MemRef, off: ValueId) -> String {
    format!("{}[{off}]", k.mem_name(m))
}

/// One instruction as text, without nested blocks (`for`/`if` give their header line).
///
/// ```
/// use tilekit_ir::{KernelBuilder, Axis, dump::inst_text};
/// use tilekit_layout::Idx;
/// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
/// b.keep(&(b.thread_id(Axis::X) * Idx::lit(4)));
/// let k = b.finish().unwrap();
/// assert_eq!(inst_text(&k, &k.body.insts[2]), "%2 = mul.i32 %0, %1");
/// ```
pub fn inst_text(k: &Kernel, inst: &Inst) -> String {
    let res =
        if inst.results.is_empty() { String::new() } else { format!("{} = ", list(&inst.results)) };
    let rty = inst.results.first().map(|&r| k.ty(r).name()).unwrap_or("");
    let mask = |m: &Option<ValueId>| m.map(|p| format!(" if {p}")).unwrap_or_default();
    let mn = op_mnemonic(&inst.op);
    let body = match &inst.op {
        Op::Const(l) => format!("{mn}.{} {l}", l.ty()),
        Op::Param(i) => {
            format!("{mn}.{rty} {}", k.params.get(*i as usize).map_or("?", |p| p.name.as_str()))
        }
        Op::Special(_) => format!("{mn}.{rty}"),
        Op::Unary(_, a) => format!("{mn}.{rty} {a}"),
        Op::Binary(_, a, b) => format!("{mn}.{rty} {a}, {b}"),
        Op::Fma(a, b, c) => format!("{mn}.{rty} {a}, {b}, {c}"),
        Op::Cmp(_, a, b) => format!("{mn}.{} {a}, {b}", k.ty(*a)),
        Op::Select(c, a, b) => format!("{mn}.{rty} {a}, {b}, {c}"),
        Op::Cvt(a) => format!("{mn}.{rty}.{} {a}", k.ty(*a)),
        Op::CvtPack(_, a, b) => format!("{mn}.{} {a}, {b}", k.ty(*a)),
        Op::BinaryPair(_, [a0, a1, b0, b1]) => {
            format!("{mn}.{} {{{a0}, {a1}}}, {{{b0}, {b1}}}", k.ty(*a0))
        }
        Op::Load { mem: m, offset, mask: p, fill, .. } => {
            let or = match (p, fill) {
                (Some(_), f) if *f != 0 => format!(" else 0x{f:X}"),
                _ => String::new(),
            };
            format!("{mn}.{} {}{}{or}", m.elem, mem(k, *m, *offset), mask(p))
        }
        Op::Store { mem: m, offset, values, mask: p } => {
            format!("{mn}.{} {}, {}{}", m.elem, mem(k, *m, *offset), list(values), mask(p))
        }
        Op::Barrier
        | Op::ClusterBarrier
        | Op::ClusterArrive
        | Op::ClusterWait
        | Op::Elect
        | Op::Clock(_) => mn,
        Op::Async(a) => async_text(k, a, mn),
        Op::Wgmma(w) => w.text(k),
        Op::LoadCluster { mem: m, cta, offset, .. } => {
            format!("{mn}.{} {} of cta {cta}", m.elem, mem(k, *m, *offset))
        }
        Op::AtomicAdd { mem: m, offset, value, .. } => {
            format!("{mn}.{} {}, {value}", m.elem, mem(k, *m, *offset))
        }
        Op::LoadAcquire { mem: m, offset } => format!("{mn}.{} {}", m.elem, mem(k, *m, *offset)),
        Op::FenceGpu | Op::GridDepWait | Op::LaunchDependents => mn,
        Op::WaitAcquire { mem: m, offset, target, sleep_ns } => {
            let sleep =
                if *sleep_ns > 0 { format!(" nanosleep {sleep_ns}") } else { String::new() };
            format!("{mn}.{} {} >= {target}{sleep}", m.elem, mem(k, *m, *offset))
        }
        Op::Note(t) => format!("// {t}"),
        Op::Shfl { value, lane, .. } => format!("{mn}.{rty} {value}, {lane}"),
        Op::Vote(_, p) => format!("{mn} {p}"),
        Op::Mma { a, b, c, .. } => format!(
            "{mn}.f32.{}.f32 {{{}}}, {{{}}}, {{{}}}",
            a.first().map_or("?", |&x| k.ty(x).name()),
            list(a),
            list(b),
            list(c)
        ),
        Op::For { lo, hi, step, init, body } => {
            let iters: Vec<String> =
                body.args[1..].iter().zip(init).map(|(a, i)| format!("{a} = {i}")).collect();
            format!(
                "for {} = {lo} to {hi} step {step} iter({}) : {}",
                body.args[0],
                iters.join(", "),
                k.ty(*lo)
            )
        }
        Op::If { cond, .. } => {
            let tys: Vec<&str> = inst.results.iter().map(|&r| k.ty(r).name()).collect();
            if tys.is_empty() {
                format!("if {cond}")
            } else {
                format!("if {cond} -> ({})", tys.join(", "))
            }
        }
    };
    format!("{res}{body}")
}

fn block(k: &Kernel, b: &Block, depth: usize, out: &mut String) -> fmt::Result {
    let pad = "  ".repeat(depth);
    for inst in &b.insts {
        let mut line = inst_text(k, inst);
        if let [r] = inst.results[..] {
            if let (Some((lo, hi)), false) =
                (k.values[r.0 as usize].range, matches!(inst.op, Op::Const(_)))
            {
                let full = k.ty(r).int_range() == Some((lo, hi));
                if !full {
                    write!(line, "  ; {lo}..={hi}")?;
                }
            }
        }
        match &inst.op {
            Op::For { body, .. } => {
                writeln!(out, "{pad}{line} {{")?;
                block(k, body, depth + 1, out)?;
                if !body.yields.is_empty() {
                    writeln!(out, "{pad}  yield {}", list(&body.yields))?;
                }
                writeln!(out, "{pad}}}")?;
            }
            Op::If { then, else_, .. } => {
                writeln!(out, "{pad}{line} {{")?;
                block(k, then, depth + 1, out)?;
                if !then.yields.is_empty() {
                    writeln!(out, "{pad}  yield {}", list(&then.yields))?;
                }
                if else_.insts.is_empty() && else_.yields.is_empty() {
                    writeln!(out, "{pad}}}")?;
                } else {
                    writeln!(out, "{pad}}} else {{")?;
                    block(k, else_, depth + 1, out)?;
                    if !else_.yields.is_empty() {
                        writeln!(out, "{pad}  yield {}", list(&else_.yields))?;
                    }
                    writeln!(out, "{pad}}}")?;
                }
            }
            _ => writeln!(out, "{pad}{line}")?,
        }
    }
    Ok(())
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| match p.kind {
                ParamKind::GlobalPtr(_) | ParamKind::Scalar(_) => format!("{}: {}", p.name, p.kind),
                ParamKind::TensorMap { global, .. } => format!(
                    "{}: {} over {}",
                    p.name,
                    p.kind,
                    self.params.get(global as usize).map_or("?", |g| g.name.as_str())
                ),
            })
            .collect();
        let [x, y, z] = self.block_dim;
        let mut out = String::new();
        writeln!(out, "kernel @{}({}) block [{x}, {y}, {z}] {{", self.name, params.join(", "))?;
        for s in &self.shared {
            writeln!(
                out,
                "  shared {}: {}[{}]  ; {} bytes",
                s.name,
                s.elem,
                s.len,
                s.size_bytes()
            )?;
        }
        block(self, &self.body, 1, &mut out)?;
        writeln!(out, "}}")?;
        f.write_str(&out)
    }
}
