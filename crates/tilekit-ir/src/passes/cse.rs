//! Hash-consing of pure ops: common-subexpression elimination at construction time.
//!
//! ```text
//!   scopes:  [ prelude | body | for-body | if-then ]   ← one table per open block
//!   lookup:  innermost ─────────────► outermost        (a value of an enclosing block dominates)
//!   insert:  constants, params, special registers → prelude (hoisted, visible everywhere);
//!            everything else → the innermost block, forgotten when the block closes
//! ```
//!
//! A pure op is placed in the innermost open block that defines one of its operands, so
//! loop-invariant index math (`stride · ctaid` inside a K loop) lands before the loop.
//!
//! The key is the op (with its operands, commutative ones ordered by the folder) plus the result
//! type, so `cvt.f32 %3` and `cvt.f16 %3` stay apart.
//!
//! ```
//! use tilekit_ir::{KernelBuilder, Axis, Val};
//! use tilekit_layout::Idx;
//! let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
//! let t = b.thread_id(Axis::X);
//! let x = t.clone() * Val::lit(4) + Val::lit(1);
//! let y = Val::lit(1) + Val::lit(4) * t;  // the same value, written differently
//! assert_eq!(x.id(), y.id());
//! ```

use crate::builder::{CseKey, Ctx};
use crate::op::{BinOp, Inst, Op, ValueId};
use crate::types::ScalarType;

impl Ctx {
    /// Whether an op may run where its result is not needed (hoisted out of an if or a loop
    /// that might not run): everything pure except division by a non-constant.
    fn speculatable(&self, op: &Op) -> bool {
        match op {
            Op::Binary(BinOp::Div | BinOp::Rem, _, d) => {
                self.konst_of(*d).is_some() || !self.ty(*d).is_int()
            }
            _ => true,
        }
    }

    /// The value of a pure single-result op: an existing one from an enclosing scope, or a new
    /// instruction.
    pub(crate) fn intern(&mut self, op: Op, ty: ScalarType, range: Option<(i64, i64)>) -> ValueId {
        let hoist = matches!(op, Op::Const(_) | Op::Param(_) | Op::Special(_));
        let key: CseKey = (op, ty);
        if hoist {
            if let Some(&v) = self.prelude_cse.get(&key) {
                return v;
            }
        } else {
            for s in self.scopes.iter().rev() {
                if let Some(&v) = s.get(&key) {
                    return v;
                }
            }
        }
        let konst = match &key.0 {
            Op::Const(l) => Some(*l),
            _ => None,
        };
        // a range must lie inside the type (else arithmetic may have wrapped)
        let range = range.filter(|(lo, hi)| {
            ty.int_range().is_some_and(|(tlo, thi)| tlo <= *lo && lo <= hi && *hi <= thi)
        });
        // Loop-invariant code motion at construction: a pure op goes to the innermost open
        // block that defines one of its operands, not necessarily the current one. Ops that
        // could fault if run speculatively (division by a non-constant) stay where they are.
        let level = if hoist {
            0
        } else if self.speculatable(&key.0) {
            key.0
                .operands()
                .iter()
                .map(|v| {
                    let s = self.scope_of[v.0 as usize];
                    self.stack.iter().position(|(o, _)| *o == s).unwrap_or(0)
                })
                .max()
                .unwrap_or(0)
        } else {
            self.stack.len().saturating_sub(1)
        };
        let scope = if hoist { 0 } else { self.stack.get(level).map_or(0, |(s, _)| *s) };
        let id = self.new_value(ty, konst, range, scope);
        self.defs[id.0 as usize] = Some(key.0.clone());
        let inst = Inst { results: vec![id], op: key.0.clone() };
        if hoist {
            self.prelude.push(inst);
            self.prelude_cse.insert(key, id);
        } else {
            if let Some((_, b)) = self.stack.get_mut(level) {
                b.insts.push(inst);
            }
            if let Some(s) = self.scopes.get_mut(level) {
                s.insert(key, id);
            }
        }
        id
    }
}
