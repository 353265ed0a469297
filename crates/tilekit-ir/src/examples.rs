//! First kernels, written only with the builder, to prove the IR end to end (the kernel
//! library proper, `tilekit-ops`, comes later).
//!
//! ```text
//!   copy (grid-stride, 16-byte vectors)          row_sum (one block per row)
//!   ┌ for base = ctaid·T; base < n; base += nctaid·T     ┌ for c = tid; c < cols; c += 128: acc += x[row, c]
//!   │   off = base + tid·V                               │ warp: acc += shfl.bfly(acc, 16, 8, 4, 2, 1)
//!   │   if off + V <= n: ld.v / st.v (V elements)        │ lane 0: partial[warp] = acc;  bar.sync
//!   │   else: V masked scalar copies (the tail)          │ warp 0: v = partial[lane] (lane < 4), reduce again
//!   └                                                    └ thread 0: y[row] = v
//! ```
//!
//! ```
//! use tilekit_ir::{examples, ScalarType, interp::{run, Args, HostBuffer}};
//! let k = examples::copy(ScalarType::F32, 4, 64).unwrap();
//! let mut args = Args::new();
//! args.buffer(HostBuffer::from_f32(&[1.0, 2.0, 3.0]))
//!     .buffer(HostBuffer::from_f32(&[f32::NAN; 3]))
//!     .int(3);
//! run(&k, [1, 1, 1], &mut args).unwrap();
//! assert_eq!(args.get_buffer(1).unwrap().to_f32(), Some(vec![1.0, 2.0, 3.0]));
//! ```

use tilekit_layout::{Idx, IdxBool};

use crate::builder::KernelBuilder;
use crate::error::Result;
use crate::kernel::Kernel;
use crate::op::{Axis, BinOp, CmpOp, ShflMode};
use crate::types::ScalarType;
use crate::value::Val;

/// `y[i] = x[i]` for `i < n` (params `x`, `y`, `n: i32`), `threads` per block, `vec` elements per
/// access (`vec · size_of(elem)` ≤ 16 bytes), grid-stride over tiles of `threads · vec`.
///
/// ```
/// use tilekit_ir::{examples, ScalarType};
/// let k = examples::copy(ScalarType::F16, 8, 128).unwrap();
/// assert!(k.to_string().contains("ld.global.v8.f16"));
/// assert!(examples::copy(ScalarType::F32, 8, 128).is_err()); // 32 bytes
/// ```
pub fn copy(elem: ScalarType, vec: usize, threads: u32) -> Result<Kernel> {
    let b = KernelBuilder::new("copy", [threads, 1, 1])?;
    let x = b.ptr_param("x", elem)?;
    let y = b.ptr_param("y", elem)?;
    let n = b.scalar_param("n", ScalarType::I32)?;
    let v = Val::lit(vec as i64);
    let tile = Val::lit(threads as i64 * vec as i64);
    let start = b.block_id(Axis::X) * tile.clone();
    let step = b.grid_dim(Axis::X) * tile;
    let tid = b.thread_id(Axis::X);
    b.for_range(&start, &n, &step, &[], |b, base, _| {
        let off = base + tid.clone() * v.clone();
        let full = (off.clone() + v.clone()).le(&n);
        b.if_then_else(
            &full,
            |b| {
                let vals = b.load(x, &off, vec, None)?;
                b.store(y, &off, &vals, None)?;
                Ok(vec![])
            },
            |b| {
                for j in 0..vec as i64 {
                    let e = off.clone() + Val::lit(j);
                    let ok = e.lt(&n);
                    let val = b.load(x, &e, 1, Some(&ok))?;
                    b.store(y, &e, &val, Some(&ok))?;
                }
                Ok(vec![])
            },
        )?;
        Ok(vec![])
    })?;
    b.finish()
}

/// Threads per block of [`row_sum`].
///
/// ```
/// assert_eq!(tilekit_ir::examples::ROW_SUM_THREADS, 128);
/// ```
pub const ROW_SUM_THREADS: u32 = 128;

/// `y[r] = Σ_c x[r, c]` in f32, one block of [`ROW_SUM_THREADS`] per row (grid = rows): a
/// strided per-thread sum, a butterfly-shuffle warp reduction, the warps' partials through
/// shared memory and a barrier, and a last warp reduction. Params: tensor `x` (2-D) and tensor
/// `y` (1-D), each with runtime lengths and strides.
///
/// ```
/// use tilekit_ir::{examples, interp::{run, Args, HostBuffer}};
/// let k = examples::row_sum().unwrap();
/// let mut args = Args::new();
/// args.tensor(HostBuffer::from_f32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), &[2, 3], &[3, 1])
///     .tensor(HostBuffer::from_f32(&[f32::NAN; 2]), &[2], &[1]);
/// run(&k, [2, 1, 1], &mut args).unwrap();
/// assert_eq!(args.get_buffer(5).unwrap().to_f32(), Some(vec![6.0, 15.0]));
/// ```
pub fn row_sum() -> Result<Kernel> {
    let threads = ROW_SUM_THREADS as i64;
    let warps = threads / 32;
    let b = KernelBuilder::new("row_sum", [ROW_SUM_THREADS, 1, 1])?;
    let x = b.tensor_param("x", ScalarType::F32, 2)?;
    let y = b.tensor_param("y", ScalarType::F32, 1)?;
    let dx = x.descriptor(None)?;
    let dy = y.descriptor(None)?;
    let partial = b.shared("partial", ScalarType::F32, warps as usize)?;
    let row = b.block_id(Axis::X);
    let tid = b.thread_id(Axis::X);
    let (lane, warp) = (b.lane_id(), b.warp_id());

    let acc =
        b.for_range(&tid, &x.lengths[1], &Val::lit(threads), &[b.f32(0.0)], |b, c, acc| {
            let v = b.load(x.mem, &dx.calculate_offset(&[row.clone(), c])?, 1, None)?;
            Ok(vec![b.binary(BinOp::Add, &acc[0], &v[0])?])
        })?;
    let warp_sum = |b: &KernelBuilder, mut v: Val| -> Result<Val> {
        for s in [16, 8, 4, 2, 1] {
            let other = b.shfl(ShflMode::Bfly, &v, &Val::lit(s))?;
            v = b.binary(BinOp::Add, &v, &other)?;
        }
        Ok(v)
    };
    let s = warp_sum(&b, acc[0].clone())?;
    let lane0 = b.cmp(CmpOp::Eq, &lane, &Val::lit(0))?;
    b.if_then(&lane0, |b| b.store(partial, &warp, std::slice::from_ref(&s), None))?;
    b.barrier();
    let warp0 = b.cmp(CmpOp::Eq, &warp, &Val::lit(0))?;
    b.if_then(&warp0, |b| {
        let has = lane.lt(&Val::lit(warps));
        let v = b.load(partial, &lane, 1, Some(&has))?;
        let total = warp_sum(b, v[0].clone())?;
        let first = lane0.and(&has);
        b.store(y.mem, &dy.calculate_offset(std::slice::from_ref(&row))?, &[total], Some(&first))
    })?;
    b.finish()
}
