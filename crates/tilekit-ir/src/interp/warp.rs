//! Warp-collective ops: shuffles, votes and `mma.sync`, executed for a whole warp at once.
//!
//! A warp is 32 consecutive linear thread ids of the block (of each block of a cluster); a block whose size is not a
//! multiple of 32 has a last, partial warp whose missing lanes read as uninitialised. Every
//! existing lane of a warp must execute a warp op together (`.sync` with a full member mask),
//! otherwise the run fails with `WarpDivergence`.
//!
//! `mma.sync.m16n8k16` fragment layout (PTX ISA, "Matrix Fragments for mma.m16n8k16 with
//! floating point type"), with `g = lane / 4` and `q = lane % 4`:
//!
//! ```text
//!   A 16×16 (row):  a[i]  row = g + 8·((i / 2) % 2)     col = 2q + (i % 2) + 8·(i / 4)     i in 0..8
//!   B 16×8  (col):  b[i]  row(k) = 2q + (i % 2) + 8·(i / 2)   col(n) = g                   i in 0..4
//!   C/D 16×8:       c[i]  row = g + 8·(i / 2)           col = 2q + (i % 2)                 i in 0..4
//! ```
//!
//! The products of 16-bit inputs are exact in `f32`; the interpreter sums each dot product in
//! `f64` and rounds once, which may differ from the tensor cores' rounding by an ulp or so.
//!
//! ```
//! use tilekit_ir::interp::warp::{mma_a_coord, mma_b_coord, mma_c_coord};
//! assert_eq!(mma_a_coord(5, 6), (9, 10));  // lane 5: g = 1, q = 1
//! assert_eq!(mma_b_coord(5, 3), (11, 1));
//! assert_eq!(mma_c_coord(5, 2), (9, 2));
//! ```

use crate::eval::to_f64;
use crate::interp::error::InterpError;
use crate::interp::exec::{BlockExec, Mask};
use crate::op::{Inst, ShflMode, ValueId, VoteMode};
use crate::types::ScalarType;

/// (row, col) of element `i` of lane `lane`'s A fragment.
///
/// ```
/// assert_eq!(tilekit_ir::interp::warp::mma_a_coord(0, 0), (0, 0));
/// ```
pub fn mma_a_coord(lane: usize, i: usize) -> (usize, usize) {
    let (g, q) = (lane / 4, lane % 4);
    (g + 8 * ((i / 2) % 2), 2 * q + (i % 2) + 8 * (i / 4))
}

/// (k, n) of element `i` of lane `lane`'s B fragment.
///
/// ```
/// assert_eq!(tilekit_ir::interp::warp::mma_b_coord(31, 3), (15, 7));
/// ```
pub fn mma_b_coord(lane: usize, i: usize) -> (usize, usize) {
    let (g, q) = (lane / 4, lane % 4);
    (2 * q + (i % 2) + 8 * (i / 2), g)
}

/// (row, col) of element `i` of lane `lane`'s C/D fragment.
///
/// ```
/// assert_eq!(tilekit_ir::interp::warp::mma_c_coord(31, 3), (15, 7));
/// ```
pub fn mma_c_coord(lane: usize, i: usize) -> (usize, usize) {
    let (g, q) = (lane / 4, lane % 4);
    (g + 8 * (i / 2), 2 * q + (i % 2))
}

/// The warps with at least one active lane, as (warp, first thread, lanes); a warp that is only
/// partly active is an error.
fn warps(
    ex: &BlockExec,
    inst: &Inst,
    mask: &Mask,
) -> Result<Vec<(usize, usize, usize)>, InterpError> {
    let mut out = vec![];
    let per = ex.p.cta_threads;
    let warps_per_cta = per.div_ceil(32);
    for w in 0..ex.p.ctas * warps_per_cta {
        let base = (w / warps_per_cta) * per + (w % warps_per_cta) * 32;
        let lanes = (per - (w % warps_per_cta) * 32).min(32);
        let active: u32 = (0..lanes).filter(|&l| mask.on[base + l]).fold(0, |m, l| m | 1 << l);
        if active == 0 {
            continue;
        }
        if active.count_ones() as usize != lanes {
            return Err(InterpError::WarpDivergence {
                inst: ex.text(inst),
                block: ex.block_of(base),
                warp: w % warps_per_cta,
                active,
            });
        }
        out.push((w % warps_per_cta, base, lanes));
    }
    Ok(out)
}

pub(crate) fn shfl(
    ex: &mut BlockExec,
    inst: &Inst,
    mask: &Mask,
    mode: ShflMode,
    value: ValueId,
    lane: ValueId,
) -> Result<(), InterpError> {
    let r = inst.results[0];
    for (_, base, lanes) in warps(ex, inst, mask)? {
        let mut out = Vec::with_capacity(lanes);
        for l in 0..lanes {
            let b = (ex.defined(inst, lane, base + l, "shuffle lane")? & 31) as usize;
            let src = match mode {
                ShflMode::Idx => b,
                ShflMode::Up => l.checked_sub(b).unwrap_or(l),
                ShflMode::Down => {
                    if l + b <= 31 {
                        l + b
                    } else {
                        l
                    }
                }
                ShflMode::Bfly => l ^ b,
            };
            out.push(if src < lanes {
                (ex.get(value, base + src), ex.is_poison(value, base + src))
            } else {
                (0, true) // a lane that does not exist
            });
        }
        for (l, (v, p)) in out.into_iter().enumerate() {
            ex.set(r, base + l, v, p);
        }
    }
    if mask.full {
        ex.normalize(r);
    }
    Ok(())
}

pub(crate) fn vote(
    ex: &mut BlockExec,
    inst: &Inst,
    mask: &Mask,
    mode: VoteMode,
    p: ValueId,
) -> Result<(), InterpError> {
    let r = inst.results[0];
    for (_, base, lanes) in warps(ex, inst, mask)? {
        let mut ballot = 0u32;
        for l in 0..lanes {
            if ex.defined(inst, p, base + l, "vote predicate")? != 0 {
                ballot |= 1 << l;
            }
        }
        let v = match mode {
            VoteMode::Any => (ballot != 0) as u64,
            VoteMode::All => (ballot.count_ones() as usize == lanes) as u64,
            VoteMode::Ballot => ballot as u64,
        };
        for l in 0..lanes {
            ex.set(r, base + l, v, false);
        }
    }
    Ok(())
}

/// `elect.sync`: lane 0 of each warp is the leader (the lowest lane of a full warp).
pub(crate) fn elect(ex: &mut BlockExec, inst: &Inst, mask: &Mask) -> Result<(), InterpError> {
    let r = inst.results[0];
    for (_, base, lanes) in warps(ex, inst, mask)? {
        for l in 0..lanes {
            ex.set(r, base + l, u64::from(l == 0), false);
        }
    }
    Ok(())
}

pub(crate) fn mma(
    ex: &mut BlockExec,
    inst: &Inst,
    mask: &Mask,
    a: &[ValueId],
    b: &[ValueId],
    c: &[ValueId],
) -> Result<(), InterpError> {
    let ab = ex.k.ty(a[0]);
    for (w, base, lanes) in warps(ex, inst, mask)? {
        if lanes != 32 {
            return Err(InterpError::WarpDivergence {
                inst: ex.text(inst),
                block: ex.block_of(base),
                warp: w,
                active: (1u64 << lanes) as u32 - 1,
            });
        }
        let mut ma = [[0f64; 16]; 16];
        let mut mb = [[0f64; 8]; 16];
        let mut mc = [[0f64; 8]; 16];
        for l in 0..32 {
            let t = base + l;
            for (i, &v) in a.iter().enumerate() {
                let (row, col) = mma_a_coord(l, i);
                ma[row][col] = to_f64(ab, ex.defined(inst, v, t, "mma A")?);
            }
            for (i, &v) in b.iter().enumerate() {
                let (k, n) = mma_b_coord(l, i);
                mb[k][n] = to_f64(ab, ex.defined(inst, v, t, "mma B")?);
            }
            for (i, &v) in c.iter().enumerate() {
                let (row, col) = mma_c_coord(l, i);
                mc[row][col] = to_f64(ScalarType::F32, ex.defined(inst, v, t, "mma C")?);
            }
        }
        for l in 0..32 {
            for (i, &r) in inst.results.iter().enumerate() {
                let (row, col) = mma_c_coord(l, i);
                let d: f64 = (0..16).map(|k| ma[row][k] * mb[k][col]).sum::<f64>() + mc[row][col];
                let bits = (d as f32).to_bits() as u64;
                ex.set(r, base + l, bits, false);
            }
        }
    }
    Ok(())
}
