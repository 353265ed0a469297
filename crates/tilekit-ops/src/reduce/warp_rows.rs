//! Row sum / max of short rows: a warp a row, eight rows a block.
//!
//! ```text
//!   block b, 256 threads = 8 warps           row 8b + w ─ warp w: lanes take 16-byte pieces,
//!   ┌──────────── n (padded) ────────────┐   UNROLL pieces in flight an iteration
//!   │ w0 ▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸ │   shuffles fold the warp: no shared memory,
//!   │ …                                  │   no barrier; lane 0 stores y[row]
//!   │ w7 ▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸▸ │
//!   └────────────────────────────────────┘
//! ```
//!
//! The one-block-a-row kernel ([`super::build_reduce`]) gives a row 256 threads; a row shorter
//! than one 16-byte piece per thread leaves most of them idle and pays a block reduction
//! (two barriers) for little data. Rows up to [`max_row`] elements take this kernel.

use tilekit_ir::{Axis, CmpOp, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::{Idx, IdxBool};

use super::{float_lit, Reduction, THREADS, TYPES};
use crate::dist;
use crate::error::Result;
use crate::host;
use crate::tile::{for_range, warp_reduce, View, Window};

/// Rows a block reduces: one per warp.
///
/// ```
/// assert_eq!(tilekit_ops::reduce::warp_rows::ROWS, 8);
/// ```
pub const ROWS: i64 = THREADS as i64 / 32;

/// 16-byte pieces a lane loads per loop iteration (loads in flight before the adds).
const UNROLL: i64 = 4;

/// The longest row this kernel takes for `ty`: one 16-byte piece per thread of a 256-thread
/// block (a longer row keeps a whole block busy, and gets one).
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::reduce::warp_rows::max_row(ScalarType::BF16), 2048);
/// assert_eq!(tilekit_ops::reduce::warp_rows::max_row(ScalarType::F32), 1024);
/// ```
pub fn max_row(ty: ScalarType) -> i64 {
    THREADS as i64 * (16 / ty.size_bytes() as i64)
}

/// The kernel: params `x` (2-D, runtime lengths/strides, read in `vx`-element vectors) and `y`
/// (1-D f32, one per row); grid = ⌈rows / [`ROWS`]⌉ blocks of 256 threads.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::{warp_rows, Reduction};
/// let k = warp_rows::build(Reduction::Sum, ScalarType::BF16, 8, ScalarType::I32).unwrap();
/// let text = k.to_string();
/// assert!(text.contains("ld.global.v8.bf16") && text.contains("shfl") && !text.contains("bar.sync"));
/// assert!(warp_rows::build(Reduction::Softmax, ScalarType::F32, 4, ScalarType::I32).is_err());
/// ```
pub fn build(r: Reduction, ty: ScalarType, vx: i64, index: ScalarType) -> Result<Kernel> {
    host::check_dtype(r.name(), ty, &TYPES)?;
    let (op, identity) = r.fold("warp_rows::build")?;
    let v = 16 / ty.size_bytes() as i64;
    let piece = 32 * v; // a warp's 16-byte pieces side by side: one row segment
    let chunk = piece * UNROLL;
    let b = KernelBuilder::new(&format!("{}_rows", r.name()), [THREADS, 1, 1])?;
    b.set_index_type(index)?;
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("y", ScalarType::F32, 1)?;
    // 8 rows × one piece over 256 threads: warp w holds row w
    let d = dist::row_major(ROWS, piece, THREADS as i64, v)?;
    let row0 = b.block_id(Axis::X) * Val::lit(ROWS);
    let xv = View::global(&x, vx)?.pad(&[ROWS, chunk])?;
    let fill = b.konst(float_lit(ty, identity)?);
    let n_pad = (x.lengths[1].clone() + Val::lit(chunk - 1)) / Val::lit(chunk) * Val::lit(chunk);
    b.grid_dependency_wait(); // programmatic dependent launch: before the first global access
    let acc = for_range(
        &b,
        &Val::lit(0),
        &n_pad,
        &Val::lit(chunk),
        &[b.f32(identity as f32)],
        |b, c0, acc| {
            let tiles = (0..UNROLL)
                .map(|k| {
                    let at = [row0.clone(), c0.clone() + Val::lit(k * piece)];
                    Window::new(b, &xv, &[ROWS, piece], &at, &d)?.load_or(b, &fill)
                })
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let mut a = acc[0].clone();
            for t in tiles {
                a = b.binary(op, &a, &t.cast(b, ScalarType::F32)?.reduce_thread(b, op)?)?;
            }
            Ok(vec![a])
        },
    )?;
    b.launch_dependents(); // the rows have been read: the next grid may launch
    let total = warp_reduce(&b, &acc[0], op)?;
    let row = row0 + b.warp_id();
    // compared with y's length in the kernel's index type
    let row = if index == ScalarType::I32 { row } else { b.cvt(&row, index)? };
    let lane0 = b.cmp(CmpOp::Eq, &b.lane_id(), &Val::lit(0))?;
    let inside = b.cmp(CmpOp::Lt, &row, &y.lengths[0])?;
    let off = y.descriptor(None)?.calculate_offset(std::slice::from_ref(&row))?;
    b.store(y.mem, &off, &[total], Some(&lane0.and(&inside)))?;
    Ok(b.finish()?)
}
