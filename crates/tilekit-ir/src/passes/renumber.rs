//! Renumbering: values named `%0, %1, …` in definition order, the value table compacted.
//!
//! ```text
//!   before (after DCE):  %3 = sreg.tid.x   %9 = mul %3, %5 …     (gaps, creation order)
//!   after:               %0 = const 4      %1 = sreg.tid.x   %2 = mul %1, %0
//! ```
//!
//! Dumps become stable and readable, and two kernels built the same way compare equal (the
//! kernel's hash is a cache key later).
//!
//! ```
//! use tilekit_ir::{KernelBuilder, Axis};
//! use tilekit_layout::Idx;
//! let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
//! let _dead = b.thread_id(Axis::Y);
//! b.keep(&(b.thread_id(Axis::X) * Idx::lit(4)));
//! let k = b.finish().unwrap();
//! assert_eq!(k.values.len(), 3);
//! assert!(k.to_string().contains("%2 = mul.i32 %0, %1"));
//! ```

use std::collections::HashMap;

use crate::kernel::Kernel;
use crate::op::{Block, Op, ValueId};

fn number(b: &Block, map: &mut HashMap<ValueId, ValueId>, order: &mut Vec<ValueId>) {
    let def = |v: ValueId, map: &mut HashMap<ValueId, ValueId>, order: &mut Vec<ValueId>| {
        map.entry(v).or_insert_with(|| {
            order.push(v);
            ValueId(order.len() as u32 - 1)
        });
    };
    for &a in &b.args {
        def(a, map, order);
    }
    for i in &b.insts {
        // a loop's or if's blocks come before its results, as in the dump
        for nb in i.op.blocks() {
            number(nb, map, order);
        }
        for &r in &i.results {
            def(r, map, order);
        }
    }
}

fn rename_op(op: &mut Op, f: &dyn Fn(ValueId) -> ValueId) {
    let r = |v: &mut ValueId| *v = f(*v);
    match op {
        Op::Const(_)
        | Op::Param(_)
        | Op::Special(_)
        | Op::Barrier
        | Op::ClusterBarrier
        | Op::ClusterArrive
        | Op::ClusterWait
        | Op::Elect
        | Op::Clock(_)
        | Op::FenceGpu
        | Op::GridDepWait
        | Op::LaunchDependents
        | Op::Note(_) => {}
        Op::AtomicAdd { offset, value, .. } => {
            r(offset);
            r(value)
        }
        Op::LoadAcquire { offset, .. } => r(offset),
        Op::WaitAcquire { offset, target, .. } => {
            r(offset);
            r(target)
        }
        Op::LoadCluster { cta, offset, .. } => {
            r(cta);
            r(offset)
        }
        Op::Async(a) => a.operands_mut().into_iter().for_each(r),
        Op::Wgmma(w) => w.operands_mut().into_iter().for_each(r),
        Op::Unary(_, a) | Op::Cvt(a) | Op::Vote(_, a) => r(a),
        Op::BinaryPair(_, v) => v.iter_mut().for_each(r),
        Op::Binary(_, a, b) | Op::Cmp(_, a, b) | Op::CvtPack(_, a, b) => {
            r(a);
            r(b)
        }
        Op::Fma(a, b, c) | Op::Select(a, b, c) => {
            r(a);
            r(b);
            r(c)
        }
        Op::Load { offset, mask, .. } => {
            r(offset);
            mask.iter_mut().for_each(r);
        }
        Op::Store { offset, values, mask, .. } => {
            r(offset);
            values.iter_mut().for_each(r);
            mask.iter_mut().for_each(r);
        }
        Op::Shfl { value, lane, .. } => {
            r(value);
            r(lane)
        }
        Op::Mma { a, b, c, .. } => a.iter_mut().chain(b).chain(c).for_each(r),
        Op::For { lo, hi, step, init, body } => {
            r(lo);
            r(hi);
            r(step);
            init.iter_mut().for_each(r);
            rename_block(body, f);
        }
        Op::If { cond, then, else_ } => {
            r(cond);
            rename_block(then, f);
            rename_block(else_, f);
        }
    }
}

fn rename_block(b: &mut Block, f: &dyn Fn(ValueId) -> ValueId) {
    b.args.iter_mut().for_each(|v| *v = f(*v));
    b.yields.iter_mut().for_each(|v| *v = f(*v));
    for i in &mut b.insts {
        i.results.iter_mut().for_each(|v| *v = f(*v));
        rename_op(&mut i.op, f);
    }
}

/// Renumbers the kernel's values in definition order and drops unused entries of the table.
///
/// ```
/// use tilekit_ir::{KernelBuilder, passes::renumber};
/// let mut k = KernelBuilder::new("k", [32, 1, 1]).unwrap().finish().unwrap();
/// renumber::run(&mut k);
/// assert!(k.values.is_empty());
/// ```
pub fn run(kernel: &mut Kernel) {
    let mut map = HashMap::new();
    let mut order = vec![];
    number(&kernel.body, &mut map, &mut order);
    let f = |v: ValueId| map.get(&v).copied().unwrap_or(v);
    rename_block(&mut kernel.body, &f);
    kernel.values = order.iter().map(|v| kernel.values[v.0 as usize]).collect();
}
