//! Vectorized copy of a (batched) 2-D tensor with any strides into another: the data-movement
//! kernel every other one is measured against, and the body of the permutes that keep the last
//! dim.
//!
//! ```text
//!   grid (ceil(N/TN), ceil(M/TM), batch)        block tile TM × TN = 32 × 32·V, 256 threads
//!   x view  = naive(len, stride) ─freeze batch─► pad to the tile ─► Window(row_major) ─load─┐
//!   y view  = same                                                  Window(row_major) ◄store┘
//!   per thread: 4 row segments of V elements (16 bytes), 4 loads in flight
//! ```
//!
//! ```
//! use tilekit_ir::ScalarType;
//! let o = tilekit_ops::copy::launch(&[5, 37], ScalarType::F16, 3).unwrap();
//! assert!(o.compare().passed);
//! ```

use tilekit_ir::interp::{Args, HostBuffer};
use tilekit_ir::{Axis, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::Idx;

use crate::dist;
use crate::error::Result;
use crate::host::{self, Outcome};
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
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::copy::build(ScalarType::F32, 4, 4).unwrap();
/// assert!(k.to_string().contains("st.global.v4.f32"));
/// ```
pub fn build(ty: ScalarType, vx: i64, vy: i64) -> Result<Kernel> {
    host::check_dtype("copy", ty, &host::FLOAT_TYPES)?;
    let (tm, tn) = tile(ty);
    let v = 16 / ty.size_bytes() as i64;
    let b = KernelBuilder::new("copy", [THREADS, 1, 1])?;
    let x = b.tensor_param("x", ty, 3)?;
    let y = b.tensor_param("y", ty, 3)?;
    let d = dist::row_major(tm, tn, THREADS as i64, v)?;
    let z = b.block_id(Axis::Z);
    let origin = [b.block_id(Axis::Y) * Val::lit(tm), b.block_id(Axis::X) * Val::lit(tn)];
    let xv = View::global(&x, vx)?.freeze(0, z.clone())?.pad(&[tm, tn])?;
    let yv = View::global(&y, vy)?.freeze(0, z)?.pad(&[tm, tn])?;
    let t = Window::new(&b, &xv, &[tm, tn], &origin, &d)?.load(&b)?;
    Window::new(&b, &yv, &[tm, tn], &origin, &d)?.store(&b, &t)?;
    Ok(b.finish()?)
}

/// The kernel and grid of a copy of a row-major `shape` (rank 2, or 3 = batched) — what
/// [`launch`] runs, built without any data (`tilekit ptx`).
///
/// ```
/// use tilekit_ir::ScalarType;
/// let (k, grid) = tilekit_ops::copy::plan(&[2_147_483_647, 1], ScalarType::F32).unwrap();
/// assert_eq!((k.name.as_str(), grid), ("copy", [1, 67_108_864, 1]));
/// assert!(tilekit_ops::copy::plan(&[3, 0], ScalarType::F32).is_err());
/// ```
pub fn plan(shape: &[i64], ty: ScalarType) -> Result<(Kernel, [u32; 3])> {
    let (s3, st) = batched(shape)?;
    plan_strided(ty, &s3, &st)
}

/// `shape` as (batch, rows, cols) with its row-major strides, checked.
fn batched(shape: &[i64]) -> Result<(Vec<i64>, Vec<i64>)> {
    let s3: Vec<i64> = if shape.len() == 2 { vec![1, shape[0], shape[1]] } else { shape.to_vec() };
    host::check_shape("copy", &s3, 3)?;
    let st = host::strides(&s3);
    Ok((s3, st))
}

/// Copies a row-major `shape` (rank 2, or 3 = batched) tensor of random data on the
/// interpreter, with the CPU reference (the input itself). Sizes are checked before anything
/// is allocated.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert!(tilekit_ops::copy::launch(&[3, 0], ScalarType::F32, 1).is_err());
/// let e = tilekit_ops::copy::launch(&[1 << 30, 1 << 30], ScalarType::F32, 1).unwrap_err();
/// assert!(e.to_string().contains("more than 2^31-1"), "{e}");
/// ```
pub fn launch(shape: &[i64], ty: ScalarType, seed: u64) -> Result<Outcome> {
    let (s3, st) = batched(shape)?;
    host::check_dtype("copy", ty, &host::FLOAT_TYPES)?;
    let n = host::elements("copy", &s3)? as u64;
    let b = host::bytes(ty, n)?;
    host::check_memory(
        &host::context("copy", shape, ty),
        &[("x", b), ("y", b), ("reference", b), ("race map", host::race_map_bytes(n))],
    )?;
    let xb = host::random(ty, n as usize, seed)?;
    let want = xb.clone();
    launch_strided(ty, &s3, &st, xb, want)
}

/// The kernel and grid of [`launch_strided`] for `lengths` (rank 3) read through
/// `x_strides`: the vector guarantees follow from the lengths and strides, the grid covers
/// `lengths` in block tiles.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let (k, grid) = tilekit_ops::copy::plan_strided(ScalarType::F32, &[2, 64, 256], &[16384, 256, 1]).unwrap();
/// assert_eq!(grid, [2, 2, 2]);
/// assert!(k.to_string().contains("ld.global.v4.f32"));
/// ```
pub fn plan_strided(
    ty: ScalarType,
    lengths: &[i64],
    x_strides: &[i64],
) -> Result<(Kernel, [u32; 3])> {
    host::check_shape("copy", lengths, 3)?;
    if x_strides.len() != 3 {
        return Err(crate::error::OpsError::invalid(
            "copy",
            "x strides",
            format!("{x_strides:?}"),
            "one stride per length (3)",
        ));
    }
    let ys = host::strides(lengths);
    let vx = if x_strides[2] == 1 {
        host::vector_for(ty, &[lengths[2], x_strides[0], x_strides[1]])
    } else {
        1
    };
    let vy = host::vector_for(ty, &[lengths[2], ys[0], ys[1]]);
    let k = build(ty, vx, vy)?;
    let (tm, tn) = tile(ty);
    let grid = [
        host::blocks(lengths[2], tn)?,
        host::blocks(lengths[1], tm)?,
        host::blocks(lengths[0], 1)?,
    ];
    Ok((k, grid))
}

/// The copy of `x` seen through (lengths, strides) = (`lengths`, `x_strides`) into a new
/// row-major tensor of `lengths` (rank 3): the kernel behind permutes that keep the last dim.
/// `want` is the reference output.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::host;
/// // a 2×3 matrix read as it is stored
/// let x = host::random(ScalarType::F32, 6, 1).unwrap();
/// let want = x.clone();
/// let o = tilekit_ops::copy::launch_strided(ScalarType::F32, &[1, 2, 3], &[6, 3, 1], x, want).unwrap();
/// assert!(o.compare().passed);
/// ```
pub fn launch_strided(
    ty: ScalarType,
    lengths: &[i64],
    x_strides: &[i64],
    x: HostBuffer,
    want: HostBuffer,
) -> Result<Outcome> {
    let (k, grid) = plan_strided(ty, lengths, x_strides)?;
    let ys = host::strides(lengths);
    let n = host::elements("copy", lengths)? as usize;
    let mut args = Args::new();
    args.tensor(x, lengths, x_strides).tensor(host::poisoned(ty, n)?, lengths, &ys);
    let (yb, elapsed) = host::launch(&k, grid, args, 7)?;
    Ok(Outcome { instructions: k.instruction_count(), got: yb, want, tolerance: 0.0, elapsed })
}
