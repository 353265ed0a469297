//! Row sum / max of few long rows: each row split over several blocks, then the partials
//! reduced by a second launch.
//!
//! ```text
//!   grid (s, m): block (p, i) folds piece p of row i     partial[i, p]      y[i]
//!   row i  ┌── piece 0 ──┬── piece 1 ──┬ … ┬─ piece s−1 ─┐   ─►  [ · · · · ]  ─►  ·
//!          └─────────────┴─────────────┴───┴─────────────┘   (warp_rows on the partials)
//!   piece length = ⌈n / (s · chunk)⌉ · chunk, from n and the grid: no extra parameter
//! ```
//!
//! One block a row keeps only `m` SMs busy: a single row of 10^7 elements runs on one SM at a
//! hundredth of the device's bandwidth. [`pieces`] picks `s` so the grid holds two blocks an SM.

use tilekit_ir::{Axis, BinOp, CmpOp, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::Idx;

use super::{float_lit, Reduction, THREADS, TYPES};
use crate::dist;
use crate::error::Result;
use crate::host;
use crate::tile::{block_reduce, for_range, View, Window};

/// Elements a block folds per loop iteration: four 16-byte pieces per thread.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::reduce::split_rows::chunk(ScalarType::BF16), 8192);
/// ```
pub fn chunk(ty: ScalarType) -> i64 {
    THREADS as i64 * (16 / ty.size_bytes() as i64) * 4
}

/// How many pieces to split each of `m` rows of `n` elements into on a device of `sms`
/// multiprocessors: enough for two blocks an SM (one block a row fills only `m` of them), each
/// piece at least two chunks long (a loop, not a single pass); `None` when one block a row
/// already fills the device or the rows are too short to split.
///
/// ```
/// use tilekit_ir::ScalarType::BF16;
/// use tilekit_ops::reduce::split_rows::pieces;
/// assert_eq!(pieces(1, 10_000_000, BF16, 132), Some(264)); // one long row: 264 blocks
/// assert_eq!(pieces(4, 1 << 20, BF16, 132), Some(64));     // 4 rows of 2^20: 64 chunks each
/// assert_eq!(pieces(4096, 1 << 20, BF16, 132), None);      // rows fill the device
/// assert_eq!(pieces(1, 4096, BF16, 132), None);            // too short to split
/// ```
pub fn pieces(m: i64, n: i64, ty: ScalarType, sms: u32) -> Option<i64> {
    let sms = i64::from(sms.max(1));
    if m <= 0 || m >= sms {
        return None;
    }
    let want = (2 * sms + m - 1) / m;
    let most = n / (2 * chunk(ty));
    let s = want.min(most);
    (s >= 2).then_some(s)
}

/// The first pass: params `x` (2-D `m × n`, runtime lengths/strides, read in `vx`-element
/// vectors) and `partial` (2-D f32 `m × s`); grid `[s, m, 1]`. Block `(p, i)` writes the sum
/// (or max) of piece `p` of row `i` to `partial[i, p]`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::{split_rows, Reduction};
/// let k = split_rows::build(Reduction::Max, ScalarType::BF16, 8, ScalarType::I32).unwrap();
/// assert!(k.to_string().contains("ld.global.v8.bf16"));
/// assert!(split_rows::build(Reduction::Softmax, ScalarType::F32, 4, ScalarType::I32).is_err());
/// ```
pub fn build(r: Reduction, ty: ScalarType, vx: i64, index: ScalarType) -> Result<Kernel> {
    host::check_dtype(r.name(), ty, &TYPES)?;
    let (op, identity) = r.fold("split_rows::build")?;
    let v = 16 / ty.size_bytes() as i64;
    let chunk = chunk(ty);
    let b = KernelBuilder::new(&format!("{}_split", r.name()), [THREADS, 1, 1])?;
    b.set_index_type(index)?;
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("partial", ScalarType::F32, 2)?;
    let scratch = b.shared("partial", ScalarType::F32, THREADS as usize / 32)?;
    let d = dist::row_major(1, chunk, THREADS as i64, v)?;
    let (part, row) = (b.block_id(Axis::X), b.block_id(Axis::Y));
    let xv = View::global(&x, vx)?.pad(&[1, chunk])?;
    let fill = b.konst(float_lit(ty, identity)?);
    // the piece: a whole number of chunks, the grid's pieces covering the row
    let chunks = (x.lengths[1].clone() + Val::lit(chunk - 1)) / Val::lit(chunk);
    let per = (chunks.clone() + b.grid_dim(Axis::X) - Val::lit(1)) / b.grid_dim(Axis::X);
    let start = part.clone() * per.clone() * Val::lit(chunk);
    let end = (part.clone() + Val::lit(1)) * per * Val::lit(chunk);
    let end = b.binary(BinOp::Min, &end, &(chunks * Val::lit(chunk)))?;
    b.grid_dependency_wait(); // programmatic dependent launch: before the first global access
    let acc =
        for_range(&b, &start, &end, &Val::lit(chunk), &[b.f32(identity as f32)], |b, c0, acc| {
            let t = Window::new(b, &xv, &[1, chunk], &[row.clone(), c0], &d)?.load_or(b, &fill)?;
            let piece = t.cast(b, ScalarType::F32)?.reduce_thread(b, op)?;
            Ok(vec![b.binary(op, &acc[0], &piece)?])
        })?;
    b.launch_dependents(); // the piece has been read: the next grid may launch
    let total = block_reduce(&b, &acc[0], op, scratch)?;
    let first = b.cmp(CmpOp::Eq, &b.thread_id(Axis::X), &Val::lit(0))?;
    let off = y.descriptor(None)?.calculate_offset(&[row, part])?;
    b.store(y.mem, &off, &[total], Some(&first))?;
    Ok(b.finish()?)
}
