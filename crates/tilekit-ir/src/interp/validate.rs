//! Structural checks of a kernel before it runs, so that a [`Kernel`] assembled by hand (its
//! fields are public) gets [`InterpError::InvalidKernel`] instead of a panic in the executor:
//! value ids in range, results never among their own operands, memory references naming a
//! parameter or allocation of their element type, operand and result counts per op, block
//! arguments and yields matching their loop or if, at most 1024 threads per block.

use crate::interp::error::InterpError;
use crate::kernel::{Kernel, ParamKind};
use crate::op::{BinOp, Block, Inst, MemRef, MemSpace, Op, ValueId};
use crate::types::ScalarType;

/// Threads per block the interpreter accepts (the CUDA limit).
const MAX_THREADS: u64 = 1024;

/// Shared memory per block the interpreter accepts (far above any GPU's 227 KiB).
const MAX_SHARED_BYTES: u64 = 16 << 20;

/// Which parameters the kernel stores to.
pub(crate) fn stored_params(k: &Kernel) -> Vec<bool> {
    let mut out = vec![false; k.params.len()];
    k.body.walk(&mut |i| {
        let stored = match &i.op {
            Op::Store { mem: MemRef { space: MemSpace::Global(p), .. }, .. } => Some(*p),
            Op::AtomicAdd { mem: MemRef { space: MemSpace::Global(p), .. }, .. } => Some(*p),
            Op::Async(crate::asyncop::AsyncOp::BulkStore {
                dst: MemRef { space: MemSpace::Global(p), .. },
                ..
            }) => Some(*p),
            Op::Async(crate::asyncop::AsyncOp::TensorStore {
                global: MemRef { space: MemSpace::Global(p), .. },
                ..
            }) => Some(*p),
            _ => None,
        };
        if let Some(x) = stored.and_then(|p| out.get_mut(p as usize)) {
            *x = true;
        }
    });
    out
}

pub(crate) fn kernel(k: &Kernel) -> Result<(), InterpError> {
    let bad = |reason: String| InterpError::InvalidKernel { kernel: k.name.clone(), reason };
    let threads: u64 = k.block_dim.iter().map(|&d| d as u64).product();
    if threads == 0 || threads > MAX_THREADS {
        return Err(bad(format!(
            "block {:?} has {threads} threads; the interpreter runs 1..={MAX_THREADS}",
            k.block_dim
        )));
    }
    let shared = k.shared.iter().try_fold(0u64, |t, d| {
        (d.len as u64).checked_mul(d.elem.size_bytes() as u64).and_then(|b| t.checked_add(b))
    });
    if shared.is_none_or(|b| b > MAX_SHARED_BYTES) {
        return Err(bad(format!(
            "its shared allocations exceed the {MAX_SHARED_BYTES} bytes per block the interpreter holds"
        )));
    }
    check_block(k, &k.body, 0, &bad)
}

fn check_block(
    k: &Kernel,
    b: &Block,
    yields: usize,
    bad: &dyn Fn(String) -> InterpError,
) -> Result<(), InterpError> {
    let nv = k.values.len();
    let id = |v: &ValueId, what: &str| -> Result<(), InterpError> {
        if (v.0 as usize) < nv {
            Ok(())
        } else {
            Err(bad(format!("{what} {v} is not a value of the kernel (it has {nv})")))
        }
    };
    for v in &b.args {
        id(v, "block argument")?;
    }
    for v in &b.yields {
        id(v, "yielded value")?;
    }
    if b.yields.len() != yields {
        return Err(bad(format!(
            "a block yields {} values, its op expects {yields}",
            b.yields.len()
        )));
    }
    for inst in &b.insts {
        check_inst(k, inst, &id, bad)?;
    }
    Ok(())
}

fn check_inst(
    k: &Kernel,
    inst: &Inst,
    id: &dyn Fn(&ValueId, &str) -> Result<(), InterpError>,
    bad: &dyn Fn(String) -> InterpError,
) -> Result<(), InterpError> {
    let ops = inst.op.operands();
    for v in &ops {
        id(v, "operand")?;
    }
    for r in &inst.results {
        id(r, "result")?;
        if ops.contains(r) {
            return Err(bad(format!("{r} is both a result and an operand of one instruction")));
        }
    }
    let count = |want: usize| -> Result<(), InterpError> {
        if inst.results.len() == want {
            Ok(())
        } else {
            Err(bad(format!(
                "an instruction of kind {:?} has {} results, expected {want}",
                std::mem::discriminant(&inst.op),
                inst.results.len()
            )))
        }
    };
    let mem = |m: &MemRef| -> Result<(), InterpError> {
        let ok = match m.space {
            MemSpace::Global(p) => {
                k.params.get(p as usize).map(|d| d.kind) == Some(ParamKind::GlobalPtr(m.elem))
            }
            MemSpace::Shared(s) => k.shared.get(s as usize).map(|d| d.elem) == Some(m.elem),
        };
        if ok {
            Ok(())
        } else {
            Err(bad(format!("{m:?} names no memory of element type {}", m.elem)))
        }
    };
    match &inst.op {
        Op::Const(_) | Op::Special(_) | Op::Unary(..) | Op::Binary(..) | Op::Fma(..) => count(1),
        Op::Cmp(..) | Op::Select(..) | Op::Cvt(_) | Op::Shfl { .. } | Op::Vote(..) => count(1),
        Op::Elect => count(1),
        Op::Clock(c) => {
            count(1)?;
            if k.ty(inst.results[0]) != ScalarType::I64 {
                return Err(bad(format!(
                    "%{c} is read into an i64, not {}",
                    k.ty(inst.results[0])
                )));
            }
            Ok(())
        }
        Op::BinaryPair(op, v) => {
            count(2)?;
            let t = k.ty(v[0]);
            let same = v.iter().chain(&inst.results).all(|x| k.ty(*x) == t);
            if !matches!(op, BinOp::Max | BinOp::Min)
                || !matches!(t, ScalarType::F16 | ScalarType::BF16)
                || !same
            {
                return Err(bad(format!(
                    "{}.x2 takes and gives pairs of one 16-bit float type (max or min): {t}",
                    op.name()
                )));
            }
            Ok(())
        }
        Op::CvtPack(t, a, b) => {
            count(1)?;
            let f32s = [a, b].iter().all(|v| k.ty(**v) == ScalarType::F32);
            if !matches!(t, ScalarType::F16 | ScalarType::BF16)
                || !f32s
                || k.ty(inst.results[0]) != ScalarType::U32
            {
                return Err(bad(format!(
                    "cvt.rn.{t}x2 packs two f32 into a u32 (f16 or bf16 halves): {} and {} into {}",
                    k.ty(*a),
                    k.ty(*b),
                    k.ty(inst.results[0])
                )));
            }
            Ok(())
        }
        Op::Param(i) => {
            count(1)?;
            match k.params.get(*i as usize).map(|d| d.kind) {
                Some(ParamKind::Scalar(_)) => Ok(()),
                _ => Err(bad(format!("param.{i} is not a scalar parameter"))),
            }
        }
        Op::Load { mem: m, width, .. } => {
            mem(m)?;
            if *width == 0 {
                return Err(bad("a load of width 0".into()));
            }
            count(*width as usize)
        }
        Op::Store { mem: m, values, .. } => {
            mem(m)?;
            if values.is_empty() {
                return Err(bad("a store of no values".into()));
            }
            count(0)
        }
        Op::Barrier
        | Op::ClusterBarrier
        | Op::ClusterArrive
        | Op::ClusterWait
        | Op::Note(_)
        | Op::FenceGpu
        | Op::GridDepWait
        | Op::LaunchDependents => count(0),
        Op::AtomicAdd { mem: m, .. }
        | Op::LoadAcquire { mem: m, .. }
        | Op::WaitAcquire { mem: m, .. } => {
            mem(m)?;
            if !matches!(m.space, MemSpace::Global(_)) || m.elem != crate::ScalarType::U32 {
                return Err(bad(
                    "an atomic or acquire access that is not to a global u32 buffer".into()
                ));
            }
            count(usize::from(!matches!(inst.op, Op::WaitAcquire { .. })))
        }
        Op::Async(a) => {
            for m in a.mems() {
                mem(&m)?;
            }
            use crate::asyncop::AsyncOp as A;
            if let A::TensorLoad { map, global, .. }
            | A::TensorStore { map, global, .. }
            | A::TensorPrefetch { map, global, .. } = a
            {
                let viewed = crate::tma::map_of(k, *map).map(|(_, g)| g);
                if viewed.is_none() || Some(global.space) != viewed.map(MemSpace::Global) {
                    return Err(bad(format!(
                        "a tensor copy names parameter {map} as a tensor map over {global:?}, \
                         which it is not"
                    )));
                }
            }
            count(0)
        }
        Op::Wgmma(w) => {
            for m in w.mems() {
                mem(&m)?;
                if !matches!(m.space, MemSpace::Shared(_)) {
                    return Err(bad("a wgmma descriptor names a shared allocation".into()));
                }
            }
            match w {
                crate::wgmma::WgmmaOp::Desc { .. } => count(1),
                crate::wgmma::WgmmaOp::Mma { shape, a, c, .. } => {
                    let a_ok = match a {
                        crate::wgmma::WgmmaA::Desc(_) => true,
                        crate::wgmma::WgmmaA::Regs(r) => {
                            r.len() == shape.ty.a_regs()
                                || (shape.ty.elem().size_bytes() == 2
                                    && 2 * r.len() == shape.ty.a_regs()
                                    && r.iter().all(|v| k.ty(*v) == ScalarType::U32))
                        }
                    };
                    if !a_ok || !(c.is_empty() || c.len() == shape.acc_regs()) {
                        return Err(bad(format!(
                            "wgmma {} takes {} A values and 0 or {} accumulators",
                            shape.name(),
                            shape.ty.a_regs(),
                            shape.acc_regs()
                        )));
                    }
                    count(shape.acc_regs())
                }
                _ => count(0),
            }
        }
        Op::LoadCluster { mem: m, width, .. } => {
            mem(m)?;
            if !matches!(m.space, MemSpace::Shared(_)) {
                return Err(bad("ld.shared::cluster reads a shared allocation".into()));
            }
            if *width == 0 {
                return Err(bad("a load of width 0".into()));
            }
            count(*width as usize)
        }
        Op::Mma { a, b, c, .. } => {
            if (a.len(), b.len(), c.len()) != (8, 4, 4) {
                return Err(bad("mma.m16n8k16 takes 8 + 4 + 4 fragment registers".into()));
            }
            count(4)
        }
        Op::For { init, body, .. } => {
            count(init.len())?;
            if body.args.len() != init.len() + 1 {
                return Err(bad(format!(
                    "a loop body has {} arguments, expected the induction variable and {} carried",
                    body.args.len(),
                    init.len()
                )));
            }
            check_block(k, body, init.len(), bad)
        }
        Op::If { then, else_, .. } => {
            check_block(k, then, inst.results.len(), bad)?;
            check_block(k, else_, inst.results.len(), bad)
        }
    }
}
