//! Vectorized copy of a (batched) 2-D tensor with any strides into another: the data-movement
//! kernel every other one is measured against, and the body of the permutes that keep the last
//! dim.
//!
//! ```text
//!   grid (ceil(N/TN), ceil(M/TM), batch)        block tile TM × TN = 32 × 32·V, 256 threads
//!   x view  = naive(len, stride) ─freeze batch─► pad to the tile ─► Window(row_major) ─load─┐
//!   y view  = same                                                  Window(row_major) ◄store┘
//!   per thread: 4 row segments of V elements (16 bytes), 4 loads in flight
//!   griddepcontrol.wait before the loads, launch_dependents between loads and stores
//!   (programmatic dependent launch, tilekit_cuda::module)
//!   (a side without 16-byte vectors: V = what both sides allow, down to 1 element, with
//!    32·TN/V/256 segments per thread — lanes stay contiguous, so accesses stay coalesced)
//! ```
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::{backend::Interp, check::{check, Op}};
//! let o = check(&Interp, Op::Copy, &[5, 37], ScalarType::F16, 3).unwrap();
//! assert!(o.compare().passed);
//! ```

use tilekit_ir::{Axis, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::Idx;

use crate::dist;
use crate::error::Result;
use crate::host;
use crate::tile::{View, Window};

/// Threads per block of the data-movement kernels.
///
/// ```
/// assert_eq!(tilekit_ops::copy::THREADS, 256);
/// ```
pub const THREADS: u32 = 256;

/// Block tile `(TM, TN)` for `ty`: 32 rows × 32 segments of 16 bytes.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::copy::tile(ScalarType::F32), (32, 128));
/// ```
pub fn tile(ty: ScalarType) -> (i64, i64) {
    (32, 32 * (16 / ty.size_bytes() as i64))
}

/// `y[b, i, j] = x[b, i, j]` (params: `x`, `y`: rank-3 tensors with runtime lengths and
/// strides; last stride 1), `vx`/`vy` the vector guarantees of the two views.
///
/// A thread's row segment is as wide as both sides can access at once, `min(vx, vy, 16 bytes)`:
/// where one side has no vector guarantee (a row pitch of an odd number of elements, say), the
/// segments are single elements and consecutive lanes take consecutive elements, so each warp
/// access still covers 32 contiguous elements on both sides. (Wide per-thread segments read
/// element by element would leave a warp's accesses 16 bytes apart: every store instruction then
/// writes a sliver of 16 sectors, and memory sees many partial writes per sector.)
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::copy::build(ScalarType::F32, 4, 4).unwrap();
/// assert!(k.to_string().contains("st.global.v4.f32"));
/// // an unaligned source: single-element segments, lanes contiguous, 32 rows per thread
/// let k = tilekit_ops::copy::build(ScalarType::BF16, 1, 8).unwrap();
/// let text = k.to_string();
/// assert!(!text.contains("st.global.v"));
/// assert_eq!(text.matches("st.global").count(), 32);
/// // a programmatic dependent launch may start it while the previous kernel drains
/// assert!(k.waits_on_prior_grid() && text.contains("griddepcontrol.launch_dependents"));
/// ```
pub fn build(ty: ScalarType, vx: i64, vy: i64) -> Result<Kernel> {
    build_indexed(ty, vx, vy, ScalarType::I32)
}

/// [`build`] with lengths, strides and offsets of `index` type (`i32`, or `i64` for tensors
/// past 2^31 elements: [`host::index_type`] picks it).
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::copy::build_indexed(ScalarType::F32, 4, 4, ScalarType::I64).unwrap();
/// let i64 = tilekit_ir::ParamKind::Scalar(ScalarType::I64);
/// assert!(k.params.iter().filter(|p| p.name.contains(".len")).all(|p| p.kind == i64));
/// ```
pub fn build_indexed(ty: ScalarType, vx: i64, vy: i64, index: ScalarType) -> Result<Kernel> {
    host::check_dtype("copy", ty, &host::FLOAT_TYPES)?;
    let (tm, tn) = tile(ty);
    let full = 16 / ty.size_bytes() as i64;
    // the largest power of two dividing both guarantees, at most 16 bytes
    let divides = |p: i64, g: i64| g >= p && g % p == 0;
    let v = (0..=4)
        .map(|s| 1i64 << s)
        .filter(|&p| p <= full && divides(p, vx) && divides(p, vy))
        .max()
        .unwrap_or(1);
    let b = KernelBuilder::new("copy", [THREADS, 1, 1])?;
    b.set_index_type(index)?;
    let x = b.tensor_param("x", ty, 3)?;
    let y = b.tensor_param("y", ty, 3)?;
    let d = dist::row_major(tm, tn, THREADS as i64, v)?;
    let z = b.block_id(Axis::Z);
    let origin = [b.block_id(Axis::Y) * Val::lit(tm), b.block_id(Axis::X) * Val::lit(tn)];
    let xv = View::global(&x, vx)?.freeze(0, z.clone())?.pad(&[tm, tn])?;
    let yv = View::global(&y, vy)?.freeze(0, z)?.pad(&[tm, tn])?;
    // programmatic dependent launch (sm_90): wait for the previous grid before the first
    // global access, let the next grid launch once this block's loads are out
    b.grid_dependency_wait();
    let t = Window::new(&b, &xv, &[tm, tn], &origin, &d)?.load(&b)?;
    b.launch_dependents();
    Window::new(&b, &yv, &[tm, tn], &origin, &d)?.store(&b, &t)?;
    Ok(b.finish()?)
}
