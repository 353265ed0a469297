//! Dead-code elimination over the region tree.
//!
//! ```text
//!   repeat until nothing changes:
//!     used  = roots ∪ operands of every instruction ∪ yields of every block
//!     drop  every instruction whose results are all unused and that has no effect:
//!           pure ops, loads, shuffles, votes, mma, and loops/ifs whose blocks have no effect
//! ```
//!
//! Stores and barriers are effects; so is any loop or if that contains one. A fixpoint over the
//! whole tree is simple and exact enough for kernels of thousands of instructions.
//!
//! ```
//! use tilekit_ir::{KernelBuilder, Axis, passes::dce};
//! use tilekit_layout::Idx;
//! let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
//! let x = b.thread_id(Axis::X) * Idx::lit(3);
//! b.keep(&x);
//! let mut k = b.finish().unwrap();
//! assert_eq!(k.instruction_count(), 2);
//! dce::run(&mut k, &[]);                 // without the root, both go
//! assert_eq!(k.instruction_count(), 0);
//! ```

use std::collections::HashSet;

use crate::kernel::Kernel;
use crate::op::{Block, Inst, Op, ValueId};

/// Whether an instruction has an effect (a store or barrier, directly or inside its blocks).
///
/// ```
/// use tilekit_ir::{passes::dce::has_effect, Inst, Op};
/// assert!(has_effect(&Inst { results: vec![], op: Op::Barrier }));
/// ```
pub fn has_effect(inst: &Inst) -> bool {
    match &inst.op {
        Op::Store { .. }
        | Op::Barrier
        | Op::ClusterBarrier
        | Op::ClusterArrive
        | Op::ClusterWait
        | Op::Async(_)
        | Op::Note(_)
        | Op::AtomicAdd { .. }
        | Op::LoadAcquire { .. }
        | Op::WaitAcquire { .. }
        | Op::FenceGpu
        | Op::GridDepWait
        | Op::LaunchDependents => true,
        Op::Wgmma(w) => w.has_effect(),
        op => op.blocks().iter().any(|b| b.insts.iter().any(has_effect)),
    }
}

fn collect_uses(b: &Block, used: &mut HashSet<ValueId>) {
    used.extend(b.yields.iter().copied());
    for i in &b.insts {
        used.extend(i.op.operands());
        for nb in i.op.blocks() {
            collect_uses(nb, used);
        }
    }
}

fn sweep(b: &mut Block, used: &HashSet<ValueId>) -> bool {
    let before = b.insts.len();
    b.insts.retain(|i| has_effect(i) || i.results.iter().any(|r| used.contains(r)));
    let mut changed = before != b.insts.len();
    for i in &mut b.insts {
        for nb in i.op.blocks_mut() {
            changed |= sweep(nb, used);
        }
    }
    changed
}

/// Removes dead instructions; `roots` are values to keep regardless.
///
/// ```
/// use tilekit_ir::{KernelBuilder, passes::dce};
/// let mut k = KernelBuilder::new("k", [32, 1, 1]).unwrap().finish().unwrap();
/// dce::run(&mut k, &[]);
/// assert!(k.body.insts.is_empty());
/// ```
pub fn run(kernel: &mut Kernel, roots: &[ValueId]) {
    loop {
        let mut used: HashSet<ValueId> = roots.iter().copied().collect();
        collect_uses(&kernel.body, &mut used);
        if !sweep(&mut kernel.body, &used) {
            break;
        }
    }
}
