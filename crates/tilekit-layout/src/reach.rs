//! Reachable index ranges: an interval analysis run once, when an adaptor is built, so that no
//! in-range top index can overflow `i64` anywhere in the index math below it.
//!
//! Each transform validates its own parameters, but a value can leave a dim's length on its way
//! down: a right pad of `2⁶²` hands its lower dim indices far past the dim's length, and an
//! `unmerge` below it multiplies them by its lengths. The reference evaluates such indices in
//! 32-bit arithmetic and lets them wrap; tilekit refuses the adaptor instead, naming the stage.
//!
//! ```text
//!   top dims        [0, len-1]            every top index in range
//!      │ right_pad(4, +2⁶²)      → lower  [0, 2⁶²+3]
//!      │ unmerge([4, 8])         → lower  u₀·8 + u₁ ≤ (2⁶²+3)·8 …  overflows: refused
//!      ▼
//!   bottom
//! ```
//!
//! Intervals are kept in `i128` and every intermediate result (each product and partial sum the
//! evaluation computes, and the differences a coordinate move computes) must fit in `i64`.
//! Symbolic lengths (the IR domain) make a range unknown, and unknown ranges are not checked.

use crate::error::{LayoutError, Result};
use crate::idx::Idx;
use crate::transform::{Transform, TransformKind};

/// A closed interval of values an index can take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Range {
    pub lo: i128,
    pub hi: i128,
}

impl Range {
    pub(crate) fn new(lo: i128, hi: i128) -> Self {
        Range { lo, hi }
    }

    fn point(v: i128) -> Self {
        Range { lo: v, hi: v }
    }

    /// The differences `b − a` of two values of this range (what a move between them computes).
    fn diffs(self) -> Self {
        let span = self.hi - self.lo;
        Range { lo: -span, hi: span }
    }

    fn add(self, o: Range) -> Self {
        Range { lo: self.lo + o.lo, hi: self.hi + o.hi }
    }

    fn mul(self, o: Range) -> Self {
        let c = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi];
        Range { lo: *c.iter().min().unwrap_or(&0), hi: *c.iter().max().unwrap_or(&0) }
    }

    /// Truncating division by a positive constant (monotone).
    fn div(self, d: i128) -> Self {
        Range { lo: self.lo / d, hi: self.hi / d }
    }

    /// Remainder (sign of the dividend) by a positive constant.
    fn rem(self, d: i128) -> Self {
        let m = d - 1;
        if self.lo >= 0 {
            if self.hi < d {
                self
            } else {
                Range { lo: 0, hi: m }
            }
        } else if self.hi <= 0 {
            Range { lo: -m, hi: 0 }
        } else {
            Range { lo: -m, hi: m }
        }
    }

    /// Bitwise xor: bounded by the bit width of the larger magnitude.
    fn xor(self, o: Range) -> Self {
        let mag =
            [self.lo, self.hi, o.lo, o.hi].iter().map(|v| v.unsigned_abs()).max().unwrap_or(0);
        let bits = 128 - mag.leading_zeros();
        let top = (1i128 << bits.min(126)) - 1;
        if self.lo >= 0 && o.lo >= 0 {
            Range { lo: 0, hi: top }
        } else {
            Range { lo: -top - 1, hi: top }
        }
    }

    fn fits(self) -> bool {
        self.lo >= i128::from(i64::MIN) && self.hi <= i128::from(i64::MAX)
    }
}

/// The checked arithmetic of one stage: every result must fit in `i64`.
struct Check<'a> {
    what: &'a dyn Fn() -> String,
}

impl Check<'_> {
    fn ok(&self, r: Range, op: &str) -> Result<Range> {
        if r.fits() {
            Ok(r)
        } else {
            Err(LayoutError::overflow(
                (self.what)(),
                format!("{op} for in-range top indices"),
                format!("reaches [{}, {}]", r.lo, r.hi),
            ))
        }
    }
}

fn known<I: Idx>(v: &I) -> Option<i128> {
    v.to_const().map(i128::from)
}

/// `Σ uᵢ·cᵢ` (embed) or `((u₀·l₁ + u₁)·l₂ + u₂)…` (unmerge) over ranges, every step checked.
fn linear<I: Idx>(kind: &TransformKind<I>, up: &[Range], c: &Check) -> Result<Option<Range>> {
    match kind {
        TransformKind::Embed { coefficients, .. } => {
            let mut acc = Range::point(0);
            for (u, k) in up.iter().zip(coefficients) {
                let Some(k) = known(k) else { return Ok(None) };
                let term = c.ok(u.mul(Range::point(k)), "a term uᵢ·cᵢ")?;
                acc = c.ok(acc.add(term), "a partial sum Σ uᵢ·cᵢ")?;
            }
            Ok(Some(acc))
        }
        TransformKind::Unmerge { up_lengths } => {
            let mut acc = up[0];
            for (u, l) in up.iter().zip(up_lengths).skip(1) {
                let Some(l) = known(l) else { return Ok(None) };
                acc = c.ok(acc.mul(Range::point(l)), "a product acc·lᵢ")?;
                acc = c.ok(acc.add(*u), "a partial sum acc·lᵢ + uᵢ")?;
            }
            Ok(Some(acc))
        }
        _ => Ok(None),
    }
}

/// The ranges of a transform's lower dims given the ranges of its upper dims (`None`: unknown),
/// checking that evaluating it — and moving between two in-range upper indices — stays in `i64`.
pub(crate) fn lower_ranges<I: Idx>(
    t: &Transform<I>,
    up: &[Option<Range>],
    what: &dyn Fn() -> String,
) -> Result<Vec<Option<Range>>> {
    use TransformKind as K;
    let n = t.num_lower();
    let c = Check { what };
    let Some(up) = up.iter().copied().collect::<Option<Vec<Range>>>() else {
        return Ok(vec![None; n]);
    };
    let shift = |u: Range, by: Option<i128>, op: &str| -> Result<Vec<Option<Range>>> {
        match by {
            Some(b) => Ok(vec![Some(c.ok(u.add(Range::point(b)), op)?)]),
            None => Ok(vec![None]),
        }
    };
    let out = match t.kind() {
        K::PassThrough { .. } | K::RightPad { .. } => vec![Some(up[0])],
        K::Pad { left, .. } | K::LeftPad { left, .. } => {
            shift(up[0], known(left).map(|l| -l), "the padded index u − left")?
        }
        K::Slice { begin, .. } => shift(up[0], known(begin), "the sliced index u + begin")?,
        K::Offset { offset, .. } => shift(up[0], known(offset), "the index u + offset")?,
        K::Embed { .. } | K::Unmerge { .. } => {
            let value = linear(t.kind(), &up, &c)?;
            // a move applies the same formula to the upper differences
            let diffs: Vec<Range> = up.iter().map(|r| r.diffs()).collect();
            linear(t.kind(), &diffs, &c)?;
            vec![value]
        }
        K::Merge { low_lengths, .. } => {
            let mut out = vec![None; low_lengths.len()];
            let mut rest = up[0];
            for i in (1..low_lengths.len()).rev() {
                let Some(l) = known(&low_lengths[i]) else { return Ok(vec![None; n]) };
                out[i] = Some(rest.rem(l));
                rest = rest.div(l);
            }
            out[0] = Some(rest);
            out
        }
        K::Freeze { low_idx } => vec![known(low_idx).map(Range::point)],
        K::Insert { .. } | K::Replicate { .. } => vec![],
        K::Modulo { modulus, .. } => vec![known(modulus).map(|m| up[0].rem(m))],
        K::Xor { lengths } => match known(&lengths[1]) {
            Some(l1) => vec![Some(up[0]), Some(up[1].xor(up[0].rem(l1)))],
            None => vec![Some(up[0]), None],
        },
        K::Indexing { table } => {
            // an index outside the table reads 0
            let lo = table.iter().copied().chain([0]).min().unwrap_or(0);
            let hi = table.iter().copied().chain([0]).max().unwrap_or(0);
            vec![Some(Range::new(i128::from(lo), i128::from(hi)))]
        }
    };
    // moves recompute merge, xor, modulo and indexing and take `new − old` of each lower dim
    for r in out.iter().flatten() {
        c.ok(r.diffs(), "the difference of two lower indices")?;
    }
    Ok(out)
}
