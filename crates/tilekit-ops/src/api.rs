//! The library's ops as functions on tensors, for any [`Backend`].
//!
//! Every op takes the backend and its inputs, and either returns a new output (allocated on
//! the backend) or writes a caller's output (`*_into`). Inputs may be views: any strides and
//! offsets the op can address (permuted, narrowed, broadcast) are read in place, with the
//! widest vector the layout allows; shapes, dtypes and devices are checked first.
//!
//! ```text
//!   op(b, x)            plan from x's layout ─► kernel key ─► compiled::cached ─► bind ─► launch
//!   op_into(b, x, y)    the same, into y (its shape and dtype are checked against the op's)
//!
//!   copy / permute / transpose   dims that stay adjacent in both x and y are merged; then
//!                                 x's unit-stride dim last in y ─► vectorized copy kernel
//!                                 otherwise                    ─► batched transpose kernel
//!   row_sum / row_max / softmax  rows = all dims but the last (merged), one block per row
//!   add / mul / maximum          numpy broadcasting (stride-0 views), any strides
//!   morton / unmorton            tiled Morton order of an H × W image (padded tiles)
//!   gemm                         A (M×K) · B (K×N) → C f32 (M×N), tensor cores (Hopper kernel, any transposes; mma.sync)
//!   gemm_ex                      act(α·A·B + β·C + bias) → C f32 / bf16 / f16, fused in the Hopper kernel's epilogue
//!                                f32 A, B: CUDA cores (gemm_simt, no TF32), any shape
//!   attention                    softmax(Q·Kᵀ·scale)·V and the LSE, Hopper (TMA + wgmma)
//! ```
//!
//! ```
//! use tilekit_ir::tensor::HostTensor;
//! use tilekit_ops::{api, backend::Interp};
//! let x = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
//! let s = api::row_sum(&Interp, &x).unwrap();
//! assert_eq!(s.to_vec::<f32>().unwrap(), vec![3.0, 7.0]);
//! let p = api::softmax(&Interp, &x).unwrap();
//! assert!((p.to_vec::<f32>().unwrap()[0] - 1.0 / (1.0 + 1f32.exp())).abs() < 1e-6);
//! ```

use tilekit_ir::tensor::TensorLayout;
use tilekit_ir::ScalarType;

use crate::backend::{Backend, TensorIn, TensorOut};
use crate::bind::Bindings;
use crate::compiled::{cached, CompiledKernel, KernelKey};
use crate::elementwise::Binary;
use crate::error::{OpsError, Result};
use crate::gemm_tuning::GemmChoice;
use crate::host;
use crate::overlap::{self, relation, InPlace, Operand, Relation};
use crate::reduce::{ClusterTuning, CoopTuning, Reduction};

/// The widest vector (elements, a power of two up to 16 bytes) a kernel can use on the last
/// dim of `layout` whose storage starts at byte `address`: last stride 1, and the vector
/// divides the last length, every other stride and the first element's address.
///
/// ```
/// use tilekit_ir::{tensor::TensorLayout, ScalarType};
/// use tilekit_ops::api::vector_of;
/// let l = TensorLayout::contiguous(ScalarType::F32, vec![4, 8]).unwrap();
/// assert_eq!(vector_of(&l, 0), 4);
/// assert_eq!(vector_of(&l.narrow(1, 1, 4).unwrap(), 0), 1);   // first element at offset 1
/// assert_eq!(vector_of(&l.transpose(0, 1).unwrap(), 0), 1);   // last stride 8
/// ```
pub fn vector_of(layout: &TensorLayout, address: u64) -> i64 {
    let es = layout.dtype().size_bytes() as i64;
    let rank = layout.rank();
    if rank == 0 || layout.strides()[rank - 1] != 1 && layout.shape()[rank - 1] > 1 {
        return 1;
    }
    let (shape, strides) = (layout.shape(), layout.strides());
    let mut v = 16 / es;
    let start = (address as i64 / es) + layout.offset();
    if address as i64 % es != 0 {
        return 1;
    }
    while v > 1 {
        let ok = shape[rank - 1] % v == 0
            && start % v == 0
            && (0..rank - 1).all(|d| shape[d] == 1 || strides[d] % v == 0);
        if ok {
            break;
        }
        v /= 2;
    }
    v
}

fn vec_in<B: Backend, X: TensorIn<B> + ?Sized>(x: &X) -> i64 {
    vector_of(x.layout(), x.base_address())
}

fn check_dtype(op: &str, got: ScalarType, allowed: &[ScalarType]) -> Result<()> {
    host::check_dtype(op, got, allowed)
}

fn check_same(
    op: &str,
    what: &str,
    got: &TensorLayout,
    shape: &[i64],
    dtype: ScalarType,
) -> Result<()> {
    if got.dtype() != dtype {
        return Err(OpsError::DtypeMismatch {
            context: format!("{op}: {what}"),
            got: got.dtype(),
            expected: dtype,
        });
    }
    if got.shape() != shape {
        return Err(OpsError::invalid(
            op,
            format!("{what} shape"),
            format!("{:?}", got.shape()),
            format!("must be {shape:?}"),
        ));
    }
    Ok(())
}

/// Drops unit dims and merges dims adjacent in every layout (`stride[d] = stride[d+1] ·
/// len[d+1]` in all): the smallest rank that addresses the same elements in the same order.
fn coalesce(shape: &[i64], strides: &[&[i64]]) -> (Vec<i64>, Vec<Vec<i64>>) {
    let keep: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
    let mut out_shape: Vec<i64> = Vec::new();
    let mut out: Vec<Vec<i64>> = vec![Vec::new(); strides.len()];
    for &d in &keep {
        let merge = !out_shape.is_empty()
            && strides.iter().zip(&out).all(|(s, o)| *o.last().unwrap_or(&0) == s[d] * shape[d]);
        if merge {
            let last = out_shape.len() - 1;
            out_shape[last] *= shape[d];
            for (o, s) in out.iter_mut().zip(strides) {
                o[last] = s[d];
            }
        } else {
            out_shape.push(shape[d]);
            for (o, s) in out.iter_mut().zip(strides) {
                o.push(s[d]);
            }
        }
    }
    (out_shape, out)
}

/// For a dim of `n` elements merged from whole rows: the row width `w` (a power of two from
/// `tn` down to `tn / 4` dividing `n`) that views it as `n / w` rows of `w`, so that the
/// kernels' `TM × tn` block tiles are full instead of one row high; `None` if none divides.
/// Rows are widened (doubling `w` while it divides `n`) until their `TM`-row blocks fit the
/// grid's y limit of 65535: a contiguous 16384² tensor is 2²¹ rows of 128 f32 but 2²⁰ of 256.
fn split_rows(n: i64, tn: i64) -> Option<i64> {
    const TM: i64 = 32;
    let mut w = tn;
    while w >= (tn / 4).max(1) {
        if n > w && n % w == 0 {
            while (n / w + TM - 1) / TM > i64::from(u16::MAX) && n % (2 * w) == 0 && n > 2 * w {
                w *= 2;
            }
            return Some(w);
        }
        w /= 2;
    }
    None
}

fn grid_u32(op: &str, what: &str, n: i64) -> Result<u32> {
    u32::try_from(n).map_err(|_| OpsError::invalid(op, what, n, "must fit in u32"))
}

// ----------------------------------------------------------------- copy, permute, transpose

/// A strided view with an explicit layout over the same memory as `t` (lengths and strides
/// rewritten after merging dims).
struct Reshaped<'t, T: ?Sized> {
    t: &'t mut T,
    layout: TensorLayout,
}

struct ReshapedIn<'t, T: ?Sized> {
    t: &'t T,
    layout: TensorLayout,
}

impl<B: Backend, T: TensorIn<B> + ?Sized> TensorIn<B> for ReshapedIn<'_, T> {
    fn layout(&self) -> &TensorLayout {
        &self.layout
    }
    fn base_address(&self) -> u64 {
        self.t.base_address()
    }
    fn memory(&self) -> crate::overlap::Memory {
        self.t.memory()
    }
    fn bind_in<'a>(&'a self, b: &'a B) -> Result<B::In<'a>>
    where
        B: 'a,
    {
        self.t.bind_in(b)
    }
}

impl<B: Backend, T: TensorIn<B> + ?Sized> TensorIn<B> for Reshaped<'_, T> {
    fn layout(&self) -> &TensorLayout {
        &self.layout
    }
    fn base_address(&self) -> u64 {
        self.t.base_address()
    }
    fn memory(&self) -> crate::overlap::Memory {
        self.t.memory()
    }
    fn bind_in<'a>(&'a self, b: &'a B) -> Result<B::In<'a>>
    where
        B: 'a,
    {
        self.t.bind_in(b)
    }
}

impl<B: Backend, T: TensorOut<B> + ?Sized> TensorOut<B> for Reshaped<'_, T> {
    fn bind_out<'a>(&'a mut self, b: &'a B) -> Result<B::Out<'a>>
    where
        B: 'a,
    {
        self.t.bind_out(b)
    }
}

fn relayout(l: &TensorLayout, shape: Vec<i64>, strides: Vec<i64>) -> Result<TensorLayout> {
    Ok(TensorLayout::strided(l.dtype(), shape, strides, l.offset())?)
}

/// The most blocks a launch may have along grid y or z.
pub const MAX_GRID_YZ: i64 = 65_535;

/// `len` items in runs of `per_block` items per block, cut into pieces of at most
/// `max_blocks` blocks: `(start, length)` of each piece, starts multiples of `per_block`.
///
/// ```
/// use tilekit_ops::api::pieces;
/// assert_eq!(pieces(100, 8, 5), vec![(0, 40), (40, 40), (80, 20)]);
/// assert_eq!(pieces(10, 1, 65_535), vec![(0, 10)]);
/// assert_eq!(pieces(0, 4, 2), vec![]);
/// ```
pub fn pieces(len: i64, per_block: i64, max_blocks: i64) -> Vec<(i64, i64)> {
    let step = per_block.max(1) * max_blocks.max(1);
    (0..len).step_by(step as usize).map(|s| (s, step.min(len - s))).collect()
}

/// Launches a (batch, rows, cols) kernel whose grid x covers the columns (`grid_x` blocks), y
/// the rows in tiles of `tile_rows` and z the batch: dim 0 of both layouts is the batch, dims
/// `rows.0` of x and `rows.1` of y are the rows. Grids over the hardware's 65535 blocks in y or
/// z become several launches over narrowed views (offsets move, the kernel is the same). A
/// kernel that walks `tiles_per_block` row tiles per block (block-stride over grid y, as
/// `transpose::build_tiled`) gets grid y = ⌈row tiles / tiles_per_block⌉ per piece.
#[allow(clippy::too_many_arguments)] // the launch's shape, each part a different quantity
fn launch_split<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    k: &CompiledKernel,
    grid_x: u32,
    x: &ReshapedIn<'_, X>,
    y: &mut Reshaped<'_, Y>,
    rows: (usize, usize),
    tile_rows: i64,
    tiles_per_block: u32,
) -> Result<()> {
    let (xl, yl) = (x.layout.clone(), y.layout.clone());
    for (z0, zl) in pieces(xl.shape()[0], 1, MAX_GRID_YZ) {
        for (r0, rl) in pieces(xl.shape()[rows.0], tile_rows, MAX_GRID_YZ) {
            let xv = ReshapedIn { t: x.t, layout: xl.narrow(0, z0, zl)?.narrow(rows.0, r0, rl)? };
            let yv_layout = yl.narrow(0, z0, zl)?.narrow(rows.1, r0, rl)?;
            let mut yv = Reshaped { t: &mut *y.t, layout: yv_layout };
            let gy = host::blocks(rl, tile_rows)?.div_ceil(tiles_per_block.max(1));
            let grid = [grid_x, gy, grid_u32("launch", "batch", zl)?];
            let args = Bindings::new(k).input("x", &xv, b)?.output("y", &mut yv, b)?;
            b.launch(k, grid, args)?;
        }
    }
    Ok(())
}

/// `y = x` element by element for any two layouts of one shape and dtype (copy, permute and
/// transpose all end here).
fn copy_strided<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    op: &str,
    x: &X,
    y: &mut Y,
) -> Result<()> {
    let (xl, yl) = (x.layout().clone(), y.layout().clone());
    let ty = xl.dtype();
    check_dtype(op, ty, &host::FLOAT_TYPES)?;
    check_same(op, "output", &yl, xl.shape(), ty)?;
    let (xo, yo) = (Operand::of::<B, _>("x", x), Operand::of::<B, _>("out", y));
    overlap::check(op, std::slice::from_ref(&yo), std::slice::from_ref(&xo), InPlace::SameView)?;
    if xl.numel() == 0
        || relation((&xo.layout, xo.memory), (&yo.layout, yo.memory)) == Relation::Same
    {
        return Ok(()); // nothing to copy, or a copy onto itself
    }
    let (shape, st) = coalesce(xl.shape(), &[xl.strides(), yl.strides()]);
    let (mut xs, mut ys) = (st[0].clone(), st[1].clone());
    let mut shape = shape;
    if shape.is_empty() {
        shape.push(1);
        xs.push(1);
        ys.push(1);
    }
    if shape.len() == 1 {
        // one run of elements: as rows of the tile's width, so blocks fill their tiles
        if let Some(w) = split_rows(shape[0], crate::copy::tile(ty).1) {
            shape = vec![shape[0] / w, w];
            xs = vec![xs[0] * w, xs[0]];
            ys = vec![ys[0] * w, ys[0]];
        }
    }
    let r = shape.len();
    let unit_x = (0..r).rev().find(|&d| xs[d] == 1);
    let last_y_unit = ys[r - 1] == 1;
    match unit_x {
        Some(a) if a != r - 1 && last_y_unit && r <= 3 => {
            // x's contiguous dim is not y's last: a batched transpose of the (last, a) plane
            let l = r - 1;
            let bdim = (0..r).find(|&d| d != a && d != l);
            let batch = bdim.map_or(1, |d| shape[d]);
            let (m, n) = (shape[l], shape[a]);
            let xsb = bdim.map_or(m * n, |d| xs[d]);
            let ysb = bdim.map_or(m * n, |d| ys[d]);
            let xv =
                ReshapedIn { t: x, layout: relayout(&xl, vec![batch, m, n], vec![xsb, xs[l], 1])? };
            let mut yv =
                Reshaped { t: y, layout: relayout(&yl, vec![batch, n, m], vec![ysb, ys[a], 1])? };
            let (vx, vy) = (vec_in::<B, _>(&xv), vec_in::<B, _>(&yv));
            let tuning = b.tuning();
            let (mv, lp) = if ty.size_bytes() == 2 {
                (tuning.transpose_micro_16bit, tuning.transpose_loop_16bit)
            } else {
                (crate::transpose::tile(ty).0, tuning.transpose_loop_f32)
            };
            lp.check()?;
            let (vx, vy) = (vx.min(mv), vy.min(mv));
            // the key: one tile a block or the loop's buffers and load order, and the
            // blocks per SM asked for
            let order = if lp.tiles_per_block == 1 {
                0
            } else {
                2 * lp.buffers as i64 + i64::from(lp.prefetch)
            };
            let name = if lp.tiles_per_block == 1 { "transpose" } else { "transpose_tiled" };
            let cache = lp.cache as i64;
            // past 2^31 elements: the same kernel with 64-bit lengths, strides and offsets
            let ix = host::index_type(&[&xv.layout, &yv.layout]);
            let wide = 100_000 * i64::from(ix == ScalarType::I64);
            let key = KernelKey::new(
                name,
                ty,
                [vx, vy, mv, order + 100 * i64::from(lp.min_blocks) + 10000 * cache + wide],
            );
            let k = cached(key, || crate::transpose::build_looped_indexed(ty, mv, vx, vy, lp, ix))?;
            let t = 16 * mv;
            // grid y walks x's rows (y's last dim) in tiles of t (tiles_per_block tiles per
            // block), grid z the batch
            launch_split(b, &k, host::blocks(n, t)?, &xv, &mut yv, (1, 2), t, lp.tiles_per_block)
        }
        _ if r <= 3 => {
            let pad = 3 - r;
            let s3: Vec<i64> = std::iter::repeat_n(1, pad).chain(shape.iter().copied()).collect();
            let x3: Vec<i64> = std::iter::repeat_n(0, pad).chain(xs.iter().copied()).collect();
            let y3: Vec<i64> = std::iter::repeat_n(0, pad).chain(ys.iter().copied()).collect();
            let xv = ReshapedIn { t: x, layout: relayout(&xl, s3.clone(), x3)? };
            let mut yv = Reshaped { t: y, layout: relayout(&yl, s3.clone(), y3)? };
            let (vx, vy) = (vec_in::<B, _>(&xv), vec_in::<B, _>(&yv));
            let ix = host::index_type(&[&xv.layout, &yv.layout]);
            let k =
                cached(KernelKey::new("copy", ty, [vx, vy, ix.size_bytes() as i64, 0]), || {
                    crate::copy::build_indexed(ty, vx, vy, ix)
                })?;
            let (tm, tn) = crate::copy::tile(ty);
            launch_split(b, &k, host::blocks(s3[2], tn)?, &xv, &mut yv, (1, 1), tm, 1)
        }
        _ => Err(OpsError::invalid(
            op,
            "layout",
            format!(
                "shape {:?}, x strides {:?}, y strides {:?}",
                xl.shape(),
                xl.strides(),
                yl.strides()
            ),
            format!(
                "after merging adjacent dims it has rank {r} ({shape:?}); the copy and transpose \
                 kernels take at most 3 — make x contiguous in fewer groups of dims first"
            ),
        )),
    }
}

/// Copies `x` into `y` (same shape and dtype, any strides of either).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// let mut y = HostTensor::from_slice(&[0.0f32; 4], &[2, 2]).unwrap();
/// api::copy_into(&Interp, &x.transpose(0, 1).unwrap(), &mut y).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, 3.0, 2.0, 4.0]);
/// ```
pub fn copy_into<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    x: &X,
    y: &mut Y,
) -> Result<()> {
    copy_strided(b, "copy", x, y)
}

/// A contiguous copy of `x` (of any strides).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
/// let y = api::copy(&Interp, &x.narrow(1, 1, 2).unwrap()).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, 3.0, 5.0, 6.0]);
/// ```
pub fn copy<B: Backend, X: TensorIn<B> + ?Sized>(b: &B, x: &X) -> Result<B::Tensor> {
    let l = x.layout();
    let mut y = b.empty(l.dtype(), l.shape())?;
    copy_into(b, x, &mut y)?;
    Ok(y)
}

/// `y = x` permuted: `y.shape[k] = x.shape[perm[k]]`, written into `y`.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[1, 2, 3]).unwrap();
/// let mut y = HostTensor::from_slice(&[0.0f32; 6], &[3, 1, 2]).unwrap();
/// api::permute_into(&Interp, &x, &[2, 0, 1], &mut y).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
/// assert!(api::permute_into(&Interp, &x, &[0, 0, 1], &mut y).is_err());
/// ```
pub fn permute_into<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    x: &X,
    perm: &[usize],
    y: &mut Y,
) -> Result<()> {
    let view = x.layout().permute(perm)?;
    let xv = ReshapedIn { t: x, layout: view };
    copy_strided(b, "permute", &xv, y)
}

/// `x` permuted into a new contiguous tensor.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&(0..24).map(|v| v as f32).collect::<Vec<_>>(), &[2, 3, 4]).unwrap();
/// let y = api::permute(&Interp, &x, &[1, 2, 0]).unwrap();
/// assert_eq!(y.shape(), &[3, 4, 2]);
/// assert_eq!(y.to_vec::<f32>().unwrap()[..4], [0.0, 12.0, 1.0, 13.0]);
/// ```
pub fn permute<B: Backend, X: TensorIn<B> + ?Sized>(
    b: &B,
    x: &X,
    perm: &[usize],
) -> Result<B::Tensor> {
    let view = x.layout().permute(perm)?;
    let mut y = b.empty(view.dtype(), view.shape())?;
    permute_into(b, x, perm, &mut y)?;
    Ok(y)
}

fn transpose_perm(op: &str, rank: usize) -> Result<Vec<usize>> {
    match rank {
        2 => Ok(vec![1, 0]),
        r if r > 2 => Ok((0..r - 2).chain([r - 1, r - 2]).collect()),
        r => Err(OpsError::invalid(op, "rank", r, "transpose swaps the last two dims: rank ≥ 2")),
    }
}

/// The last two dims of `x` swapped, into a new contiguous tensor (`x.T` for a matrix).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
/// assert_eq!(api::transpose(&Interp, &x).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
/// assert!(api::transpose(&Interp, &HostTensor::from_slice(&[1.0f32], &[1]).unwrap()).is_err());
/// ```
pub fn transpose<B: Backend, X: TensorIn<B> + ?Sized>(b: &B, x: &X) -> Result<B::Tensor> {
    let perm = transpose_perm("transpose", x.layout().rank())?;
    permute(b, x, &perm)
}

/// The last two dims of `x` swapped, written into `y`.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[1.0f32, 2.0], &[1, 2]).unwrap();
/// let mut y = HostTensor::from_slice(&[0.0f32; 2], &[2, 1]).unwrap();
/// api::transpose_into(&Interp, &x, &mut y).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
/// ```
pub fn transpose_into<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    x: &X,
    y: &mut Y,
) -> Result<()> {
    let perm = transpose_perm("transpose", x.layout().rank())?;
    permute_into(b, x, &perm, y)
}

// ---------------------------------------------------------------------- rows: reduce, softmax

/// `x` as (rows, n): every dim but the last merged into rows (they must merge).
fn as_rows(op: &str, l: &TensorLayout) -> Result<(i64, i64, i64, i64)> {
    let r = l.rank();
    if r == 0 {
        return Err(OpsError::invalid(op, "rank", 0, "the op works along the last dim: rank ≥ 1"));
    }
    let n = l.shape()[r - 1];
    let sn = l.strides()[r - 1];
    let (lead, st) = coalesce(&l.shape()[..r - 1], &[&l.strides()[..r - 1]]);
    match lead.len() {
        0 => Ok((1, n, n * sn.max(1), sn)),
        1 => Ok((lead[0], n, st[0][0], sn)),
        _ => Err(OpsError::invalid(
            op,
            "leading dims",
            format!("shape {:?}, strides {:?}", l.shape(), l.strides()),
            "all dims but the last must merge into one (rows evenly spaced): make x contiguous first",
        )),
    }
}

/// The stride of `l` seen as a vector (all dims merged; rank 0 or a single element: 1).
fn as_vector(op: &str, l: &TensorLayout) -> Result<i64> {
    let (s, st) = coalesce(l.shape(), &[l.strides()]);
    match s.len() {
        0 => Ok(1),
        1 => Ok(st[0][0]),
        _ => Err(OpsError::invalid(
            op,
            "output layout",
            format!("shape {:?}, strides {:?}", l.shape(), l.strides()),
            "the row results must be evenly spaced (dims that merge into one)",
        )),
    }
}

fn row_reduce_into<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    r: Reduction,
    x: &X,
    y: &mut Y,
) -> Result<()> {
    let op = r.name();
    let xl = x.layout().clone();
    let ty = xl.dtype();
    check_dtype(op, ty, &crate::reduce::TYPES)?;
    let (m, n, rs, cs) = as_rows(op, &xl)?;
    let yl = y.layout().clone();
    let want_shape = &xl.shape()[..xl.rank() - 1];
    let want_ty = if r == Reduction::Softmax { ty } else { ScalarType::F32 };
    let want: Vec<i64> =
        if r == Reduction::Softmax { xl.shape().to_vec() } else { want_shape.to_vec() };
    check_same(op, "output", &yl, &want, want_ty)?;
    let in_place = if r == Reduction::Softmax { InPlace::SameView } else { InPlace::Never };
    overlap::check(op, &[Operand::of::<B, _>("out", y)], &[Operand::of::<B, _>("x", x)], in_place)?;
    if m == 0 || (n == 0 && r == Reduction::Softmax) {
        return Ok(());
    }
    if n == 0 {
        if r == Reduction::Sum {
            // the sum of no elements, as torch.sum: zeros
            let zeros = b.zeros(ScalarType::F32, yl.shape())?;
            return copy_strided(b, op, &zeros, y);
        }
        return Err(OpsError::invalid(
            op,
            "row length",
            0,
            "the maximum of an empty row is undefined (as torch.amax): rows need at least one element",
        ));
    }
    let xv = ReshapedIn { t: x, layout: relayout(&xl, vec![m, n], vec![rs, cs])? };
    let grid = [grid_u32(op, "rows", m)?, 1, 1];
    if r == Reduction::Softmax {
        let (yr, ys) = {
            let (_, _, a, c) = as_rows(op, &yl)?;
            (a, c)
        };
        let mut yv = Reshaped { t: y, layout: relayout(&yl, vec![m, n], vec![yr, ys])? };
        let v = vec_in::<B, _>(&xv).min(vec_in::<B, _>(&yv));
        let tune = b.tuning();
        if host::index_type(&[&xv.layout, &yv.layout]) == ScalarType::I64 {
            // past 2^31 elements: the online kernel's 64-bit twin (any row length, a block a row)
            let o = tune.online;
            let shape = o.threads as i64 * 1000
                + i64::from(o.blocks_per_sm) * 100
                + o.unroll * 10
                + i64::from(o.reverse);
            let key = [v, 8, shape, 0]; // 8: the 64-bit twin of "softmax_online" [v, 0, shape]
            let k = cached(KernelKey::new("softmax_online", ty, key), || {
                crate::reduce::build_softmax_online_indexed(ty, v, o, ScalarType::I64)
            })?;
            let args = Bindings::new(&k).input("x", &xv, b)?.output("y", &mut yv, b)?;
            return b.launch(&k, grid, args);
        }
        // rows that fit 64 elements per thread stay in registers; longer rows are staged in one
        // block's shared memory (when tuned so and they fit), else split over a cluster (when
        // the device has clusters), else streamed twice by the online kernel; every shape
        // comes from the device's tuning
        let threads = tune.softmax_threads(ty);
        let per = threads as i64 * (16 / ty.size_bytes() as i64);
        let chunks = (n + per - 1) / per;
        let vw = 16 / ty.size_bytes() as i64;
        // bulk copies move whole 16-byte units of 16-byte aligned rows
        let aligned = vec_in::<B, _>(&xv) == vw && vec_in::<B, _>(&yv) == vw && n % vw == 0;
        let cluster = tune.softmax_cluster.and_then(|c| {
            let c = if c.bulk && !aligned { ClusterTuning { bulk: false, ..c } } else { c };
            Some((c, c.plan(ty, n)?))
        });
        let fits_registers = chunks * vw <= 64;
        // rows the staged kernel holds in one block's shared memory stay there
        let fits_staged = tune.softmax_staged.is_some_and(|(st, su)| {
            let chunk = st as i64 * vw * su;
            (n + chunk - 1) / chunk * chunk * ty.size_bytes() as i64
                <= crate::tuning::STAGED_MAX_BYTES
        });
        if let Some((c, (blocks, cchunks))) = tune
            .softmax_coop_for_row(ty, n)
            .filter(|_| !fits_registers && !fits_staged)
            .and_then(|c| {
                // bulk copies move whole 16-byte units of 16-byte aligned rows
                let c = if c.bulk && !aligned { CoopTuning { bulk: false, ..c } } else { c };
                // so do the ring's: elsewhere the shared-memory kernel with loads
                let c =
                    if c.ring > 0 && !aligned { CoopTuning { ring: 0, lag: 0, ..c } } else { c };
                Some((c, c.plan(ty, n)?))
            })
        {
            // the row split over `blocks` cooperating blocks, each holding its slice in
            // registers (or shared memory), meeting at a counter in global memory
            return softmax_coop_into(b, &xv, &mut yv, (ty, v, m), (c, blocks, cchunks));
        }
        let mut grid = grid;
        let k = if fits_registers {
            cached(KernelKey::new("softmax", ty, [v, chunks, threads as i64, 0]), || {
                crate::reduce::build_softmax_threads(ty, chunks, v, threads)
            })?
        } else if let Some((st, su, cap)) = tune.softmax_staged.and_then(|(st, su)| {
            // the row, rounded up to whole chunks, must fit the staged kernel's shared buffer
            let chunk = st as i64 * (16 / ty.size_bytes() as i64) * su;
            let cap = (n + chunk - 1) / chunk * chunk;
            (cap * ty.size_bytes() as i64 <= crate::tuning::STAGED_MAX_BYTES)
                .then_some((st, su, cap))
        }) {
            if tune.softmax_staged_bulk && aligned {
                // the row brought in by bulk copies, one block per row
                let chunks = cap / (st as i64 * vw * su);
                cached(
                    KernelKey::new("softmax_bulk_cluster", ty, [st as i64, su, chunks, 1]),
                    || crate::reduce::build_softmax_bulk_cluster(ty, 1, st, su, chunks),
                )?
            } else {
                cached(KernelKey::new("softmax_staged", ty, [v, cap, st as i64, su]), || {
                    crate::reduce::build_softmax_staged(ty, v, cap, st, su)
                })?
            }
        } else if let Some((c, (size, chunks))) = cluster {
            // the row split over a cluster of `size` blocks, each holding `chunks` per thread
            // in registers, or streaming a slice of `chunks` chunks twice
            grid[0] = grid_u32(op, "rows × cluster size", m * size as i64)?;
            if c.bulk && c.ring >= 2 {
                // a resident grid of clusters walks the rows, `ring − 1` rows in flight
                let (th, un, ring) = (c.threads, c.unroll(ty), i64::from(c.ring));
                let key = [th as i64 * 100 + ring, un, chunks, size as i64];
                let k = cached(KernelKey::new("softmax_persistent", ty, key), || {
                    crate::reduce::build_softmax_persistent(ty, size, th, un, chunks, ring)
                })?;
                let per_sm = crate::reduce::resident_blocks(k.kernel()) as i64;
                let clusters = (b.multiprocessors() as i64 * per_sm / size as i64).clamp(1, m);
                grid[0] = grid_u32(op, "clusters × cluster size", clusters * size as i64)?;
                k
            } else if c.bulk && c.held {
                let (th, un) = (c.threads, c.unroll(ty));
                let key = [th as i64, un, chunks, size as i64];
                cached(KernelKey::new("softmax_bulk_held", ty, key), || {
                    crate::reduce::build_softmax_bulk_held(ty, size, th, un, chunks)
                })?
            } else if c.bulk {
                let (th, un) = (c.threads, c.unroll(ty));
                let key = [th as i64, un, chunks, size as i64];
                cached(KernelKey::new("softmax_bulk_cluster", ty, key), || {
                    crate::reduce::build_softmax_bulk_cluster(ty, size, th, un, chunks)
                })?
            } else if c.stream {
                let o = c.online(ty);
                let shape = o.threads as i64 * 100 + o.unroll * 10 + i64::from(c.stash);
                let key = [v, chunks, shape, size as i64];
                cached(KernelKey::new("softmax_stream_cluster", ty, key), || {
                    crate::reduce::build_softmax_stream_cluster_stashed(
                        ty, v, o, size, chunks, c.stash,
                    )
                })?
            } else {
                let key = [v, chunks, c.threads as i64, size as i64];
                cached(KernelKey::new("softmax_cluster", ty, key), || {
                    crate::reduce::build_softmax_cluster(ty, v, size, c.threads, chunks)
                })?
            }
        } else {
            let o = tune.online;
            let shape = o.threads as i64 * 1000
                + i64::from(o.blocks_per_sm) * 100
                + o.unroll * 10
                + i64::from(o.reverse);
            cached(KernelKey::new("softmax_online", ty, [v, 0, shape, 0]), || {
                crate::reduce::build_softmax_online_tuned(ty, v, o)
            })?
        };
        let args = Bindings::new(&k).input("x", &xv, b)?.output("y", &mut yv, b)?;
        b.launch(&k, grid, args)
    } else {
        let ystride = as_vector(op, &yl)?;
        let mut yv = Reshaped { t: y, layout: relayout(&yl, vec![m], vec![ystride])? };
        let v = vec_in::<B, _>(&xv);
        let ix = host::index_type(&[&xv.layout, &yv.layout]);
        if n <= crate::reduce::warp_rows::max_row(ty) {
            // rows shorter than a piece per thread of a block: a warp a row
            let name = if r == Reduction::Sum { "row_sum_rows" } else { "row_max_rows" };
            let k = cached(KernelKey::new(name, ty, [v, ix.size_bytes() as i64, 0, 0]), || {
                crate::reduce::warp_rows::build(r, ty, v, ix)
            })?;
            let grid = [host::blocks(m, crate::reduce::warp_rows::ROWS)?, 1, 1];
            let args = Bindings::new(&k).input("x", &xv, b)?.output("y", &mut yv, b)?;
            return b.launch(&k, grid, args);
        }
        if let Some(s) = crate::reduce::split_rows::pieces(m, n, ty, b.multiprocessors()) {
            // fewer rows than SMs, each long: a row over `s` blocks, then the partials reduced
            // a warp a row
            let (name, fold) = if r == Reduction::Sum {
                ("row_sum_split", "row_sum_rows")
            } else {
                ("row_max_split", "row_max_rows")
            };
            let k = cached(KernelKey::new(name, ty, [v, ix.size_bytes() as i64, 0, 0]), || {
                crate::reduce::split_rows::build(r, ty, v, ix)
            })?;
            let mut partial = b.empty(ScalarType::F32, &[m, s])?;
            let grid = [grid_u32(op, "pieces", s)?, grid_u32(op, "rows", m)?, 1];
            let args = Bindings::new(&k).input("x", &xv, b)?.output("partial", &mut partial, b)?;
            b.launch(&k, grid, args)?;
            let vp = vec_in::<B, _>(&partial);
            let f = cached(KernelKey::new(fold, ScalarType::F32, [vp, 4, 0, 0]), || {
                crate::reduce::warp_rows::build(r, ScalarType::F32, vp, ScalarType::I32)
            })?;
            let grid = [host::blocks(m, crate::reduce::warp_rows::ROWS)?, 1, 1];
            let args = Bindings::new(&f).input("x", &partial, b)?.output("y", &mut yv, b)?;
            return b.launch(&f, grid, args);
        }
        let k = cached(KernelKey::new(op, ty, [v, ix.size_bytes() as i64, 0, 0]), || {
            crate::reduce::build_reduce_indexed(r, ty, v, ix)
        })?;
        let args = Bindings::new(&k).input("x", &xv, b)?.output("y", &mut yv, b)?;
        b.launch(&k, grid, args)
    }
}

/// The cooperative softmax (`reduce::coop`, or `reduce::coop_smem` when the tuning holds the
/// slice in shared memory) of `m` rows of `x` into `y`: `k` blocks of `c.threads` per row,
/// `chunks` chunks per block (from [`crate::reduce::CoopTuning::plan`]), `x` read with vectors
/// of `v`. Its counters come from [`Backend::zeros`] (zeroed in stream order on a GPU) and its
/// (max, sum) pairs from [`Backend::empty`], both per call. A `k` above the blocks the device
/// holds at once (multiprocessors × [`crate::reduce::CoopTuning::resident_blocks`]) could
/// deadlock: a typed error names it.
fn softmax_coop_into<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    x: &X,
    y: &mut Y,
    (ty, v, m): (ScalarType, i64, i64),
    (c, k, chunks): (crate::reduce::CoopTuning, u32, i64),
) -> Result<()> {
    let op = "softmax";
    let threads = c.threads;
    if c.ring > 0 {
        let (kern, grid) = ring_launch(b, (ty, v, m), (c, k, chunks))?;
        return launch_exchange(b, &kern, grid, (x, y), (m, k));
    }
    let per_sm = c.resident_blocks(ty, chunks);
    let resident = i64::from(b.multiprocessors()) * i64::from(per_sm);
    // a cluster's blocks start together (the hardware's guarantee): no deadlock bound
    if !c.cluster && i64::from(k) > resident {
        return Err(OpsError::invalid(
            op,
            "blocks per row (cooperative softmax)",
            k,
            format!(
                "at most {resident}: the blocks of a row wait for each other, so all of them \
                 must fit on the device at once ({} multiprocessors × {per_sm} blocks of \
                 {threads} threads{}); tune a shape with more elements per thread",
                b.multiprocessors(),
                if c.smem() {
                    format!(" and {} KiB of shared memory", c.smem_kib)
                } else {
                    String::new()
                }
            ),
        ));
    }
    // the shared-memory kernels' key names the whole shape (every field of the tuning, by its
    // hash: a field added later cannot alias two kernels), the vector width, steps and blocks
    let key = if c.smem() {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        c.hash(&mut h);
        KernelKey::new("softmax_coop_smem", ty, [h.finish() as i64, v, chunks, k as i64])
    } else {
        KernelKey::new("softmax_coop", ty, [v, chunks, threads as i64, k as i64])
    };
    let kern = cached(key, || c.build(ty, v, k, chunks))?;
    // a block takes a slice of `c.rows` rows: ⌈m / rows⌉ groups of k blocks
    let rows = i64::from(c.rows.max(1));
    let groups = (m + rows - 1) / rows;
    let grid = [grid_u32(op, "row groups × blocks per row", groups * i64::from(k))?, 1, 1];
    if c.cluster {
        // the row's blocks meet in their cluster: no counters, no pairs in global memory
        let args = Bindings::new(&kern).input("x", x, b)?.output("y", y, b)?;
        return b.launch(&kern, grid, args);
    }
    if c.smem() {
        // the shared-memory kernels wrap their ticket and row counters back to zero: the
        // backend's kept counters, no memset per call
        let mut ws = b.counters(m + 1)?;
        return launch_exchange_on(b, &kern, grid, (x, y), (m, k), &mut ws);
    }
    launch_exchange(b, &kern, grid, (x, y), (m, k))
}

/// Launches a softmax kernel whose blocks exchange (max, sum) pairs through global memory
/// (`reduce::coop`, `coop_smem`, `ring`) on `grid`: its counters (`ws`, `m + 1` u32 from
/// [`Backend::zeros`], zeroed in stream order on a GPU) and its `2 · m · k` pair slots (from
/// [`Backend::empty`]), both per call.
fn launch_exchange<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    kern: &CompiledKernel,
    grid: [u32; 3],
    (x, y): (&X, &mut Y),
    (m, k): (i64, u32),
) -> Result<()> {
    let mut ws = b.zeros(ScalarType::U32, &[m + 1])?;
    launch_exchange_on(b, kern, grid, (x, y), (m, k), &mut ws)
}

/// [`launch_exchange`] with the counters `ws` given (at least `m + 1` zeros).
fn launch_exchange_on<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    kern: &CompiledKernel,
    grid: [u32; 3],
    (x, y): (&X, &mut Y),
    (m, k): (i64, u32),
    ws: &mut B::Tensor,
) -> Result<()> {
    let pairs = 2 * m * i64::from(k);
    let mut stats = b.empty(ScalarType::F32, &[pairs])?;
    let args = Bindings::new(kern)
        .input("x", x, b)?
        .output("y", y, b)?
        .output_ptr("ws", ws, m + 1, b)?
        .output_ptr("stats", &mut stats, pairs, b)?;
    b.launch(kern, grid, args)
}

/// The ring softmax's (`reduce::ring`) kernel and grid for `m` rows: `k` slices per row of
/// `chunks` steps, on a grid of every block the device holds at once ([`Backend::resident_blocks`]
/// × multiprocessors, at most the `m · k` slices), walking the slices through `c.ring` slots
/// with the exchange `c.lag` slices behind. A lag below `⌈(k − 1)/G⌉` for that grid `G` could
/// deadlock (a row's slices would lie further apart than the lag): a typed error names it.
fn ring_launch<B: Backend>(
    b: &B,
    (ty, v, m): (ScalarType, i64, i64),
    (c, k, chunks): (crate::reduce::CoopTuning, u32, i64),
) -> Result<(CompiledKernel, [u32; 3])> {
    let op = "softmax";
    let shape = [
        i64::from(c.threads),
        chunks * 100 + c.unroll(ty),
        i64::from(c.ring) * 100 + i64::from(c.lag),
        i64::from(k),
    ];
    let kern = cached(KernelKey::new("softmax_ring", ty, shape), || c.build(ty, v, k, chunks))?;
    let per_sm = b.resident_blocks(&kern)?;
    let slices = m * i64::from(k);
    let resident = i64::from(b.multiprocessors()) * i64::from(per_sm);
    let g = resident.min(slices).max(1);
    let reach = (i64::from(k) - 1 + g - 1) / g;
    if per_sm == 0 || i64::from(c.lag) < reach {
        return Err(OpsError::invalid(
            op,
            "lag (ring softmax)",
            c.lag,
            format!(
                "at least {reach}: the grid holds {resident} blocks ({} multiprocessors × \
                 {per_sm} of {} threads with {} KiB slots), so a row's {k} slices lie up to \
                 {reach} iterations apart; tune a shape that fits more blocks",
                b.multiprocessors(),
                c.threads,
                c.smem_kib
            ),
        ));
    }
    Ok((kern, [grid_u32(op, "resident blocks", g)?, 1, 1]))
}

fn row_reduce<B: Backend, X: TensorIn<B> + ?Sized>(
    b: &B,
    r: Reduction,
    x: &X,
) -> Result<B::Tensor> {
    let l = x.layout();
    if l.rank() == 0 {
        return Err(OpsError::invalid(
            r.name(),
            "rank",
            0,
            "the op works along the last dim: rank ≥ 1",
        ));
    }
    let (ty, shape) = if r == Reduction::Softmax {
        (l.dtype(), l.shape().to_vec())
    } else {
        (ScalarType::F32, l.shape()[..l.rank() - 1].to_vec())
    };
    let mut y = b.empty(ty, &shape)?;
    row_reduce_into(b, r, x, &mut y)?;
    Ok(y)
}

/// Sums along the last dim, in f32: `y[r] = Σ_c x[r, c]` (shape: x's without its last dim).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).unwrap();
/// assert_eq!(api::row_sum(&Interp, &x).unwrap().to_vec::<f32>().unwrap(), vec![3.0, 7.0, 11.0]);
/// ```
pub fn row_sum<B: Backend, X: TensorIn<B> + ?Sized>(b: &B, x: &X) -> Result<B::Tensor> {
    row_reduce(b, Reduction::Sum, x)
}

/// Maxima along the last dim, in f32; NaN for a row holding a NaN, as `torch.amax`.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[1.0f32, -2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// assert_eq!(api::row_max(&Interp, &x).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 4.0]);
/// let n = HostTensor::from_slice(&[f32::NAN, 1.0, 3.0, 4.0], &[2, 2]).unwrap();
/// let m = api::row_max(&Interp, &n).unwrap().to_vec::<f32>().unwrap();
/// assert!(m[0].is_nan() && m[1] == 4.0);
/// ```
pub fn row_max<B: Backend, X: TensorIn<B> + ?Sized>(b: &B, x: &X) -> Result<B::Tensor> {
    row_reduce(b, Reduction::Max, x)
}

/// Softmax along the last dim (f32 math, output in x's dtype); a row holding a NaN is NaN
/// throughout, as `torch.softmax`.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[0.0f32, 0.0, 0.0, 0.0], &[1, 4]).unwrap();
/// assert_eq!(api::softmax(&Interp, &x).unwrap().to_vec::<f32>().unwrap(), vec![0.25; 4]);
/// ```
pub fn softmax<B: Backend, X: TensorIn<B> + ?Sized>(b: &B, x: &X) -> Result<B::Tensor> {
    row_reduce(b, Reduction::Softmax, x)
}

/// Row sums into `y` (f32, x's shape without its last dim).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[1.0f32, 2.0], &[1, 2]).unwrap();
/// let mut y = HostTensor::from_slice(&[0.0f32], &[1]).unwrap();
/// api::row_sum_into(&Interp, &x, &mut y).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![3.0]);
/// ```
pub fn row_sum_into<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    x: &X,
    y: &mut Y,
) -> Result<()> {
    row_reduce_into(b, Reduction::Sum, x, y)
}

/// Row maxima into `y` (f32).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[1.0f32, 2.0], &[1, 2]).unwrap();
/// let mut y = HostTensor::from_slice(&[0.0f32], &[1]).unwrap();
/// api::row_max_into(&Interp, &x, &mut y).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0]);
/// ```
pub fn row_max_into<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    x: &X,
    y: &mut Y,
) -> Result<()> {
    row_reduce_into(b, Reduction::Max, x, y)
}

/// Softmax along the last dim into `y` (x's shape and dtype).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[5.0f32, 5.0], &[1, 2]).unwrap();
/// let mut y = HostTensor::from_slice(&[0.0f32; 2], &[1, 2]).unwrap();
/// api::softmax_into(&Interp, &x, &mut y).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.5, 0.5]);
/// ```
pub fn softmax_into<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    x: &X,
    y: &mut Y,
) -> Result<()> {
    row_reduce_into(b, Reduction::Softmax, x, y)
}

// ------------------------------------------------------------------------------ elementwise

/// The numpy broadcast of two shapes.
///
/// ```
/// assert_eq!(tilekit_ops::api::broadcast_shape(&[3, 1], &[4]).unwrap(), vec![3, 4]);
/// assert!(tilekit_ops::api::broadcast_shape(&[3], &[4]).is_err());
/// ```
pub fn broadcast_shape(a: &[i64], b: &[i64]) -> Result<Vec<i64>> {
    let r = a.len().max(b.len());
    let at = |s: &[i64], i: usize| if i + s.len() < r { 1 } else { s[i + s.len() - r] };
    (0..r)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            (x, y) => Err(OpsError::invalid(
                "broadcast",
                "shapes",
                format!("{a:?} and {b:?}"),
                format!("dim {i} has lengths {x} and {y}: they must be equal or one of them 1"),
            )),
        })
        .collect()
}

fn binary_into<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    op: Binary,
    x: &X,
    z: &Z,
    y: &mut Y,
) -> Result<()> {
    let name = op.name();
    let (xl, zl, yl) = (x.layout().clone(), z.layout().clone(), y.layout().clone());
    let ty = xl.dtype();
    check_dtype(name, ty, &host::FLOAT_TYPES)?;
    if zl.dtype() != ty {
        return Err(OpsError::DtypeMismatch {
            context: format!("{name}: second operand"),
            got: zl.dtype(),
            expected: ty,
        });
    }
    let shape = broadcast_shape(xl.shape(), zl.shape())?;
    check_same(name, "output", &yl, &shape, ty)?;
    let (xb, zb) = (xl.broadcast_to(&shape)?, zl.broadcast_to(&shape)?);
    let ins = [
        Operand::of::<B, _>("a", x).with_layout(xb.clone()),
        Operand::of::<B, _>("b", z).with_layout(zb.clone()),
    ];
    overlap::check(name, &[Operand::of::<B, _>("out", y)], &ins, InPlace::SameView)?;
    if yl.numel() == 0 {
        return Ok(());
    }
    let (s, st) = coalesce(&shape, &[xb.strides(), zb.strides(), yl.strides()]);
    // rank ≤ 2 after merging: one launch; rank r > 2: one launch per index of the r − 2
    // leading dims (each a 2-D slice at its own offset)
    let (s2, st2): (Vec<i64>, Vec<Vec<i64>>) = match s.len() {
        0 => (vec![1, 1], st.iter().map(|_| vec![0, 1]).collect()),
        1 => match split_rows(s[0], crate::copy::tile(ty).1) {
            // one run of elements: as rows of the tile's width, so blocks fill their tiles
            Some(w) => (vec![s[0] / w, w], st.iter().map(|v| vec![v[0] * w, v[0]]).collect()),
            None => (vec![1, s[0]], st.iter().map(|v| vec![0, v[0]]).collect()),
        },
        r => (s[r - 2..].to_vec(), st.iter().map(|v| v[r - 2..].to_vec()).collect()),
    };
    let lead: Vec<i64> = if s.len() > 2 { s[..s.len() - 2].to_vec() } else { vec![] };
    let launches: i64 = lead.iter().product();
    if launches > MAX_SLICE_LAUNCHES {
        return Err(OpsError::invalid(
            name,
            "layout",
            format!("shape {shape:?} (merged: {s:?})"),
            format!(
                "{launches} 2-D slices; at most {MAX_SLICE_LAUNCHES} (make the operands \
                 contiguous so their dims merge)"
            ),
        ));
    }
    let at = |l: &TensorLayout, strides: &[i64], delta: i64| -> Result<TensorLayout> {
        Ok(TensorLayout::strided(l.dtype(), s2.clone(), strides.to_vec(), l.offset() + delta)?)
    };
    let (tm, tn) = crate::copy::tile(ty);
    let gx = host::blocks(s2[1], tn)?;
    for i in 0..launches {
        // the offset of slice i in each operand
        let (mut rest, mut d) = (i, [0i64; 3]);
        for (j, &len) in lead.iter().enumerate().rev() {
            let idx = rest % len;
            rest /= len;
            for (o, v) in d.iter_mut().zip(&st) {
                *o += idx * v[j];
            }
        }
        let (xs, zs, ys) =
            (at(&xb, &st2[0], d[0])?, at(&zb, &st2[1], d[1])?, at(&yl, &st2[2], d[2])?);
        let va = vector_of(&xs, x.base_address()).min(vector_of(&ys, y.base_address()));
        let vb = vector_of(&zs, z.base_address());
        let ix = host::index_type(&[&xs, &zs, &ys]);
        let kk = cached(KernelKey::new(name, ty, [va, vb, ix.size_bytes() as i64, 0]), || {
            crate::elementwise::build_indexed(op, ty, va, vb, ix)
        })?;
        // rows past the grid's y limit: several launches over narrowed rows
        for (r0, rl) in pieces(s2[0], tm, MAX_GRID_YZ) {
            let xv = ReshapedIn { t: x, layout: xs.narrow(0, r0, rl)? };
            let zv = ReshapedIn { t: z, layout: zs.narrow(0, r0, rl)? };
            let mut yv = Reshaped { t: &mut *y, layout: ys.narrow(0, r0, rl)? };
            let args = Bindings::new(&kk)
                .input("a", &xv, b)?
                .input("b", &zv, b)?
                .output("c", &mut yv, b)?;
            b.launch(&kk, [gx, host::blocks(rl, tm)?, 1], args)?;
        }
    }
    Ok(())
}

/// The most 2-D slices an elementwise op launches for operands whose dims do not merge into
/// two (one launch each).
pub const MAX_SLICE_LAUNCHES: i64 = 65_536;

fn binary<B: Backend, X: TensorIn<B> + ?Sized, Z: TensorIn<B> + ?Sized>(
    b: &B,
    op: Binary,
    x: &X,
    z: &Z,
) -> Result<B::Tensor> {
    let shape = broadcast_shape(x.layout().shape(), z.layout().shape())?;
    let mut y = b.empty(x.layout().dtype(), &shape)?;
    binary_into(b, op, x, z, &mut y)?;
    Ok(y)
}

/// `a + b` with numpy broadcasting (f32 math, result in the inputs' dtype).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let a = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// let row = HostTensor::from_slice(&[10.0f32, 20.0], &[2]).unwrap();
/// assert_eq!(api::add(&Interp, &a, &row).unwrap().to_vec::<f32>().unwrap(), vec![11.0, 22.0, 13.0, 24.0]);
/// ```
pub fn add<B: Backend, X: TensorIn<B> + ?Sized, Z: TensorIn<B> + ?Sized>(
    b: &B,
    x: &X,
    z: &Z,
) -> Result<B::Tensor> {
    binary(b, Binary::Add, x, z)
}

/// `a · b` with numpy broadcasting.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let a = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// let col = HostTensor::from_slice(&[10.0f32, 100.0], &[2, 1]).unwrap();
/// assert_eq!(api::mul(&Interp, &a, &col).unwrap().to_vec::<f32>().unwrap(), vec![10.0, 20.0, 300.0, 400.0]);
/// ```
pub fn mul<B: Backend, X: TensorIn<B> + ?Sized, Z: TensorIn<B> + ?Sized>(
    b: &B,
    x: &X,
    z: &Z,
) -> Result<B::Tensor> {
    binary(b, Binary::Mul, x, z)
}

/// Elementwise maximum with numpy broadcasting; NaN where either operand is NaN, as
/// `torch.maximum`.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let a = HostTensor::from_slice(&[1.0f32, 5.0], &[2]).unwrap();
/// let b = HostTensor::from_slice(&[3.0f32], &[1]).unwrap();
/// assert_eq!(api::maximum(&Interp, &a, &b).unwrap().to_vec::<f32>().unwrap(), vec![3.0, 5.0]);
/// let n = HostTensor::from_slice(&[f32::NAN, 1.0], &[2]).unwrap();
/// let m = api::maximum(&Interp, &n, &b).unwrap().to_vec::<f32>().unwrap();
/// assert!(m[0].is_nan() && m[1] == 3.0);
/// ```
pub fn maximum<B: Backend, X: TensorIn<B> + ?Sized, Z: TensorIn<B> + ?Sized>(
    b: &B,
    x: &X,
    z: &Z,
) -> Result<B::Tensor> {
    binary(b, Binary::Max, x, z)
}

/// `y = a ⊕ b` for an [`Binary`] op, with broadcasting, into `y` (the broadcast shape).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp, elementwise::Binary};
/// let a = HostTensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
/// let mut y = HostTensor::from_slice(&[0.0f32; 2], &[2]).unwrap();
/// api::binary_op_into(&Interp, Binary::Add, &a, &a, &mut y).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
/// ```
pub fn binary_op_into<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    op: Binary,
    x: &X,
    z: &Z,
    y: &mut Y,
) -> Result<()> {
    binary_into(b, op, x, z, y)
}

// ------------------------------------------------------------------------------------ morton

fn morton_geometry(
    op: &str,
    h: i64,
    w: i64,
    t: i64,
) -> Result<tilekit_layout::swizzle::TiledMorton> {
    tilekit_layout::swizzle::TiledMorton::new(h, w, t).map_err(|e| {
        OpsError::invalid(op, "image / tile", format!("{h}×{w}, tile {t}"), e.to_string())
    })
}

fn morton_kernel(ty: ScalarType, h: i64, w: i64, t: i64, inverse: bool) -> Result<CompiledKernel> {
    let op = if inverse { "unmorton" } else { "morton" };
    cached(KernelKey::new(op, ty, [h, w, t, 0]), || crate::morton::build(ty, h, w, t, inverse))
}

/// The number of elements of the Morton storage of an `h × w` image in `t × t` tiles.
///
/// ```
/// assert_eq!(tilekit_ops::api::morton_len(9, 17, 4).unwrap(), 12 * 20);
/// ```
pub fn morton_len(h: i64, w: i64, t: i64) -> Result<i64> {
    Ok(morton_geometry("morton", h, w, t)?.storage_len())
}

/// An `H × W` image stored in tiled Morton order (`t × t` tiles in Z order, elements of a
/// tile in Z order too;
/// the padding of partial tiles is unspecified): a 1-D tensor of [`morton_len`] elements.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&(0..64).map(|v| v as f32).collect::<Vec<_>>(), &[8, 8]).unwrap();
/// let s = api::morton(&Interp, &x, 4).unwrap();
/// let back = api::unmorton(&Interp, &s, 8, 8, 4).unwrap();
/// assert_eq!(back.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
/// assert_eq!(s.to_vec::<f32>().unwrap()[..5], [0.0, 1.0, 8.0, 9.0, 2.0]); // tile (0,0) in Z order
/// ```
pub fn morton<B: Backend, X: TensorIn<B> + ?Sized>(b: &B, x: &X, t: i64) -> Result<B::Tensor> {
    let l = x.layout();
    if l.rank() != 2 {
        return Err(OpsError::invalid("morton", "rank", l.rank(), "an image is H × W (rank 2)"));
    }
    let (h, w) = (l.shape()[0], l.shape()[1]);
    let mut y = b.empty(l.dtype(), &[morton_len(h, w, t)?])?;
    morton_into(b, x, t, &mut y)?;
    Ok(y)
}

/// [`morton`] into a caller's contiguous storage of at least [`morton_len`] elements.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let x = HostTensor::from_slice(&[1.0f32; 16], &[4, 4]).unwrap();
/// let mut s = HostTensor::from_slice(&[0.0f32; 8], &[8]).unwrap();
/// assert!(api::morton_into(&Interp, &x, 4, &mut s).is_err()); // needs 16
/// ```
pub fn morton_into<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    x: &X,
    t: i64,
    y: &mut Y,
) -> Result<()> {
    let l = x.layout().clone();
    let ty = l.dtype();
    check_dtype("morton", ty, &host::FLOAT_TYPES)?;
    if l.rank() != 2 {
        return Err(OpsError::invalid("morton", "rank", l.rank(), "an image is H × W (rank 2)"));
    }
    let (h, w) = (l.shape()[0], l.shape()[1]);
    let geo = morton_geometry("morton", h, w, t)?;
    if y.layout().dtype() != ty {
        return Err(OpsError::DtypeMismatch {
            context: "morton: storage".into(),
            got: y.layout().dtype(),
            expected: ty,
        });
    }
    let ops = [Operand::of::<B, _>("storage", y)];
    overlap::check("morton", &ops, &[Operand::of::<B, _>("image", x)], InPlace::Never)?;
    let k = morton_kernel(ty, h, w, t, false)?;
    let grid = [
        host::blocks(geo.tiles_w(), crate::morton::tiles_per_block(ty, t))?,
        grid_u32("morton", "tile rows", geo.tiles_h())?,
        1,
    ];
    let args =
        Bindings::new(&k).input("image", x, b)?.output_ptr("storage", y, geo.storage_len(), b)?;
    b.launch(&k, grid, args)
}

/// The `h × w` image back from its tiled Morton storage.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let s = HostTensor::from_slice(&(0..16).map(|v| v as f32).collect::<Vec<_>>(), &[16]).unwrap();
/// let img = api::unmorton(&Interp, &s, 4, 4, 2).unwrap();
/// assert_eq!(img.to_vec::<f32>().unwrap()[..4], [0.0, 1.0, 4.0, 5.0]); // tiles (0,0) and (0,1)
/// ```
pub fn unmorton<B: Backend, X: TensorIn<B> + ?Sized>(
    b: &B,
    s: &X,
    h: i64,
    w: i64,
    t: i64,
) -> Result<B::Tensor> {
    let mut y = b.empty(s.layout().dtype(), &[h, w])?;
    unmorton_into(b, s, t, &mut y)?;
    Ok(y)
}

/// [`unmorton`] into a caller's `H × W` image (`H`, `W` taken from `y`).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// let s = HostTensor::from_slice(&[1.0f32; 4], &[4]).unwrap();
/// let mut y = HostTensor::from_slice(&[0.0f32; 4], &[2, 2]).unwrap();
/// api::unmorton_into(&Interp, &s, 2, &mut y).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0; 4]);
/// ```
pub fn unmorton_into<B: Backend, X: TensorIn<B> + ?Sized, Y: TensorOut<B> + ?Sized>(
    b: &B,
    s: &X,
    t: i64,
    y: &mut Y,
) -> Result<()> {
    let yl = y.layout().clone();
    let ty = yl.dtype();
    check_dtype("unmorton", ty, &host::FLOAT_TYPES)?;
    if yl.rank() != 2 {
        return Err(OpsError::invalid(
            "unmorton",
            "output rank",
            yl.rank(),
            "an image is H × W (rank 2)",
        ));
    }
    if s.layout().dtype() != ty {
        return Err(OpsError::DtypeMismatch {
            context: "unmorton: storage".into(),
            got: s.layout().dtype(),
            expected: ty,
        });
    }
    let (h, w) = (yl.shape()[0], yl.shape()[1]);
    let geo = morton_geometry("unmorton", h, w, t)?;
    let ops = [Operand::of::<B, _>("image", y)];
    overlap::check("unmorton", &ops, &[Operand::of::<B, _>("storage", s)], InPlace::Never)?;
    let vec = (16 / ty.size_bytes() as i64).min(t * t);
    let storage_order =
        b.tuning().unmorton_storage_order && t * t / vec <= crate::copy::THREADS as i64;
    let (k, grid) = if storage_order {
        let k = cached(KernelKey::new("unmorton_storage", ty, [h, w, t, 0]), || {
            crate::morton::build_storage_order_dir(ty, h, w, t, true)
        })?;
        let tpb = crate::morton::tiles_per_block(ty, t);
        (
            k,
            [
                host::blocks(geo.tiles_w(), tpb)?,
                grid_u32("unmorton", "tile rows", geo.tiles_h())?,
                1,
            ],
        )
    } else {
        let (tm, tn) = crate::copy::tile(ty);
        let k = morton_kernel(ty, h, w, t, true)?;
        (k, [host::blocks(geo.tiles_w() * t, tn)?, host::blocks(geo.tiles_h() * t, tm)?, 1])
    };
    let args =
        Bindings::new(&k).output("image", y, b)?.input_ptr("storage", s, geo.storage_len(), b)?;
    b.launch(&k, grid, args)
}

// -------------------------------------------------------------------------------------- gemm

/// The contiguous axis of an operand `rows × cols` whose *K* dim is `k_dim` (1 for A, 0 for B),
/// as the Hopper kernel reads it: [`Major::K`] when K has unit stride, [`Major::MN`] when the
/// other dim has; the other stride (the pitch) must be a multiple of 16 bytes (TMA).
fn sm90_major(l: &TensorLayout, k_dim: usize) -> Option<tilekit_ir::wgmma::Major> {
    use tilekit_ir::wgmma::Major;
    let (sh, st) = (l.shape(), l.strides());
    let pitch_ok = |d: usize| st[d] % 8 == 0;
    let mn_dim = 1 - k_dim;
    if (st[k_dim] == 1 || sh[k_dim] == 1) && pitch_ok(mn_dim) {
        Some(Major::K)
    } else if (st[mn_dim] == 1 || sh[mn_dim] == 1) && pitch_ok(k_dim) {
        Some(Major::MN)
    } else {
        None
    }
}

/// An operand as the caller gave it, or its staged copy (rows padded to 16 bytes) where the
/// Hopper kernel's tensor maps cannot read the caller's own ([`gemm_hopper`]).
enum Staged<'t, B: Backend, T: ?Sized> {
    Given(&'t T),
    Copy(B::Tensor),
}

impl<B: Backend, T: TensorIn<B> + ?Sized> TensorIn<B> for Staged<'_, B, T> {
    fn layout(&self) -> &TensorLayout {
        match self {
            Staged::Given(t) => t.layout(),
            Staged::Copy(t) => t.layout(),
        }
    }
    fn base_address(&self) -> u64 {
        match self {
            Staged::Given(t) => t.base_address(),
            Staged::Copy(t) => t.base_address(),
        }
    }
    fn memory(&self) -> crate::overlap::Memory {
        match self {
            Staged::Given(t) => t.memory(),
            Staged::Copy(t) => t.memory(),
        }
    }
    fn bind_in<'a>(&'a self, b: &'a B) -> Result<B::In<'a>>
    where
        B: 'a,
    {
        match self {
            Staged::Given(t) => t.bind_in(b),
            Staged::Copy(t) => t.bind_in(b),
        }
    }
}

/// Whether a tensor map can read `x` where it lies: its first element 16-byte aligned (the
/// pitches are [`sm90_major`]'s to check).
fn tma_aligned<B: Backend, X: TensorIn<B> + ?Sized>(x: &X) -> bool {
    let l = x.layout();
    let size = l.dtype().size_bytes() as u64;
    (x.base_address() + l.offset().max(0) as u64 * size).is_multiple_of(16)
}

/// An uninitialised row-major `rows × cols` matrix whose rows are padded to a multiple of 8
/// elements (16 bytes of a 16-bit type, 32 of f32), as its `rows × cols` view.
fn padded_empty<B: Backend>(b: &B, ty: ScalarType, rows: i64, cols: i64) -> Result<B::Tensor> {
    use tilekit_ir::tensor::TensorView;
    let pitch = ((cols + 7) / 8 * 8).max(8);
    Ok(b.empty(ty, &[rows, pitch])?.narrow(1, 0, cols)?)
}

/// The Hopper GEMM on any operands of the right types and shapes: an operand whose layout the
/// tensor maps cannot read (a row pitch that is not a multiple of 16 bytes, such as rows of
/// 8191 bf16; a misaligned first element; no unit-stride dim) is first copied into a padded
/// row-major buffer ([`copy_into`], stream-ordered), and a C the epilogue cannot store in
/// place (an odd row pitch, no unit column stride) is computed in a padded buffer (holding C's
/// values first where `beta ≠ 0`) and copied into C afterwards. Aligned operands are read and
/// written where they are.
/// For a C whose elements (from its first) span past `i32::MAX`: how many rows a band of it
/// may hold so that the band's span fits (a multiple of 256 rows: whole tiles), or `None`
/// when C fits as it is. A C that only a column split would fit (column-major, a pitch past
/// 2^31) gets `None` and meets the bind check's typed error.
///
/// (`c_band_rows(&TensorLayout::contiguous(F32, vec![65536, 65536])?) == Some(32512)`.)
fn c_band_rows(cl: &TensorLayout) -> Option<i64> {
    let max = i64::from(i32::MAX);
    if cl.numel() == 0 || cl.span_elems() - cl.offset() <= max {
        return None;
    }
    let (n, s) = (cl.shape()[1], cl.strides());
    let row = (n - 1) * s[1] + 1; // one row's span
    if s[0] < s[1] || row > max || s[0] == 0 {
        return None;
    }
    let rows = (max - row) / s[0] + 1;
    Some(if rows >= 256 { rows / 256 * 256 } else { rows })
}

fn gemm_hopper<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    a: &X,
    bm: &Z,
    c: &mut Y,
    opts: &GemmOptions<'_, B>,
) -> Result<()> {
    if let Some(rows) = c_band_rows(c.layout()) {
        // C past 2^31 elements: the epilogue indexes C in 32 bits, so the product runs on
        // bands of C's rows that fit (disjoint; B and the bias shared), as PyTorch computes it
        let (al, cl, m) = (a.layout().clone(), c.layout().clone(), c.layout().shape()[0]);
        for r0 in (0..m).step_by(rows as usize) {
            let rl = rows.min(m - r0);
            let ab = ReshapedIn { t: a, layout: al.narrow(0, r0, rl)? };
            let mut cb = Reshaped { t: &mut *c, layout: cl.narrow(0, r0, rl)? };
            gemm_hopper_fits(b, &ab, bm, &mut cb, opts)?;
        }
        return Ok(());
    }
    gemm_hopper_fits(b, a, bm, c, opts)
}

/// [`gemm_hopper`] for a C the epilogue's 32-bit indices reach.
fn gemm_hopper_fits<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    a: &X,
    bm: &Z,
    c: &mut Y,
    opts: &GemmOptions<'_, B>,
) -> Result<()> {
    use tilekit_ir::wgmma::Major;
    // tf32 wgmma reads only K-major tiles: f32 operands stored otherwise are staged too
    let k_major_only = a.layout().dtype() == ScalarType::F32;
    let stage =
        |x_layout: &TensorLayout, k_dim: usize, aligned: bool| match sm90_major(x_layout, k_dim) {
            None => true,
            Some(Major::MN) if k_major_only => true,
            Some(_) => !aligned,
        };
    let (al, bl, cl) = (a.layout().clone(), bm.layout().clone(), c.layout().clone());
    let a_in: Staged<'_, B, X> = if stage(&al, 1, tma_aligned(a)) {
        let mut t = padded_empty(b, al.dtype(), al.shape()[0], al.shape()[1])?;
        copy_into(b, a, &mut t)?;
        Staged::Copy(t)
    } else {
        Staged::Given(a)
    };
    let b_in: Staged<'_, B, Z> = if stage(&bl, 0, tma_aligned(bm)) && k_major_only {
        // B (K × N) stored N × K: a padded row-major N × K copy, viewed transposed
        let (k, n) = (bl.shape()[0], bl.shape()[1]);
        let mut t = padded_empty(b, bl.dtype(), n, k)?;
        let kn = TensorIn::<B>::layout(&t).transpose(0, 1)?;
        copy_into(b, bm, &mut Reshaped { t: &mut t, layout: kn })?;
        Staged::Copy(tilekit_ir::tensor::TensorView::transpose(&t, 0, 1)?)
    } else if stage(&bl, 0, tma_aligned(bm)) {
        let mut t = padded_empty(b, bl.dtype(), bl.shape()[0], bl.shape()[1])?;
        copy_into(b, bm, &mut t)?;
        Staged::Copy(t)
    } else {
        Staged::Given(bm)
    };
    // (a staged copy is row-major with a 16-byte pitch: always readable)
    let majors = match (sm90_major(a_in.layout(), 1), sm90_major(b_in.layout(), 0)) {
        (Some(x), Some(y)) => (x, y),
        _ => {
            return Err(OpsError::invalid(
                "gemm",
                "staged operand layouts",
                format!("A {:?}, B {:?}", a_in.layout().strides(), b_in.layout().strides()),
                "row-major copies with pitches of 8 elements",
            ))
        }
    };
    // the epilogue stores column pairs: unit column stride, even pitch and width, and a first
    // element aligned to the pair
    let (sc, n) = (cl.strides(), cl.shape()[1]);
    let pair_bytes = 2 * cl.dtype().size_bytes() as u64;
    let c_in_place = sc[1] == 1
        && sc[0] % 2 == 0
        && n % 2 == 0
        && (c.base_address() + cl.offset().max(0) as u64 * cl.dtype().size_bytes() as u64)
            .is_multiple_of(pair_bytes);
    if c_in_place {
        let choice = b.gemm_table().choose(&sm90_problem(a_in.layout(), &cl, majors));
        return gemm_sm90_into(b, choice, (&a_in, &b_in, c), majors, opts);
    }
    // the kernel writes an even-width view of a padded buffer (its extra column is pad); C
    // gets the first n columns (views through the buffer's own storage)
    let mut wide = padded_empty(b, cl.dtype(), cl.shape()[0], n + n % 2)?;
    let wide_layout = TensorIn::<B>::layout(&wide).clone();
    let first_n = wide_layout.narrow(1, 0, n)?;
    if opts.beta != 0.0 {
        copy_into(b, &*c, &mut Reshaped { t: &mut wide, layout: first_n.clone() })?;
    }
    let choice = b.gemm_table().choose(&sm90_problem(a_in.layout(), &wide_layout, majors));
    gemm_sm90_into(b, choice, (&a_in, &b_in, &mut wide), majors, opts)?;
    copy_into(b, &ReshapedIn { t: &wide, layout: first_n }, c)
}

/// Whether [`gemm_into`] runs the Hopper kernel ([`crate::gemm_sm90`]), and with which operand
/// majors: a backend that runs sm_90a, A and B each with K or M / N contiguous (any of the
/// four transposes; `w.t()` of a linear layer's weight is B K-major) and the other pitch a
/// multiple of 16 bytes (TMA), and C's row pitch even (column pairs).
fn sm90_takes<B: Backend>(
    b: &B,
    al: &TensorLayout,
    bl: &TensorLayout,
    cl: &TensorLayout,
) -> Option<(tilekit_ir::wgmma::Major, tilekit_ir::wgmma::Major)> {
    let sc = cl.strides();
    let c_ok = (sc[1] == 1 || cl.shape()[1] == 1) && sc[0] % 2 == 0;
    if !b.hopper() || !c_ok {
        return None;
    }
    Some((sm90_major(al, 1)?, sm90_major(bl, 0)?))
}

/// The problem the Hopper GEMM sees for these operands: shapes, types, the operands' majors and
/// whether C's rows can take TMA stores.
fn sm90_problem(
    al: &TensorLayout,
    cl: &TensorLayout,
    (a_major, b_major): (tilekit_ir::wgmma::Major, tilekit_ir::wgmma::Major),
) -> crate::gemm_tuning::GemmProblem {
    let (m, k, n) = (al.shape()[0], al.shape()[1], cl.shape()[1]);
    let c_tma = crate::bind::map_arg(cl).is_ok_and(|arg| {
        let size = cl.dtype().size_bytes() as u64;
        arg.byte_strides().iter().all(|s| s % 16 == 0)
            && (cl.offset() as u64 * size).is_multiple_of(16)
    });
    crate::gemm_tuning::GemmProblem::new(m, n, k, al.dtype(), cl.dtype(), c_tma)
        .with_majors(a_major, b_major)
}

/// The compiled-kernel key of a Hopper GEMM configuration: every knob the code depends on
/// (tile knobs, output type, operand majors, epilogue steps).
fn sm90_key(cfg: &crate::gemm_sm90::GemmConfig) -> KernelKey {
    use crate::gemm_sm90::{Activation, Epilogue, Raster};
    use tilekit_ir::wgmma::Major;
    let op = cfg.op;
    let flags = i64::from(cfg.overlap)
        | i64::from(cfg.persistent) << 1
        | i64::from(cfg.epilogue == Epilogue::Tma) << 2
        | (cfg.output.size_bytes() as i64) << 3
        | i64::from(cfg.a_major == Major::MN) << 8
        | i64::from(cfg.b_major == Major::MN) << 9
        | i64::from(op.alpha) << 10
        | i64::from(op.beta) << 11
        | op.bias.map_or(0, |t| t.size_bytes() as i64) << 12
        | (cfg.cluster - 1) << 21
        | (cfg.consumers - 1) << 22
        | i64::from(cfg.pingpong) << 23
        | cfg.epilogue_subtile << 24
        | match op.act {
            Activation::None => 0,
            Activation::Relu => 1,
            Activation::Gelu => 2,
        } << 16
        | i64::from(cfg.batched) << 20;
    let raster = match cfg.raster {
        Raster::Linear => 0,
        Raster::Grouped(g) => i64::from(g),
        Raster::Hilbert => -1,
    };
    KernelKey::new("gemm_sm90", cfg.input, [cfg.bn, cfg.stages | cfg.split_k << 8, flags, raster])
}

/// The Hopper GEMM on `A · B` into C (f32 or the input type; `opts`' epilogue applied) with the
/// tile knobs `choice` (the backend's tuned or heuristic choice for [`gemm_into`] and
/// [`gemm_ex`]): each operand read through a tensor map over its K-major (`M × K`, `N × K`)
/// or MN-major (`K × M`, `K × N`) storage. A split K (plain product only; otherwise the choice
/// runs unsplit) writes the partial products to an f32 workspace that a second kernel sums
/// into C.
fn gemm_sm90_into<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    choice: crate::gemm_tuning::GemmChoice,
    (a, bm, c): (&X, &Z, &mut Y),
    majors: (tilekit_ir::wgmma::Major, tilekit_ir::wgmma::Major),
    opts: &GemmOptions<'_, B>,
) -> Result<()> {
    use crate::gemm_sm90::{build_gemm_sm90, build_split_reduce, split_reduce_grid, Epilogue};
    use crate::gemm_sm90::{EpilogueOp, MAX_SPLIT_K};
    let p = sm90_problem(a.layout(), c.layout(), majors);
    let op = EpilogueOp {
        alpha: opts.alpha != 1.0,
        beta: opts.beta != 0.0,
        bias: opts.bias.map(|t| t.layout().dtype()),
        act: opts.activation,
    };
    let choice = if op.is_identity() { choice } else { GemmChoice { split_k: 1, ..choice } };
    let cfg = crate::gemm_sm90::GemmConfig { op, ..p.config(&choice) };
    cfg.check()?;
    if cfg.epilogue == Epilogue::Tma && !p.c_tma {
        return Err(OpsError::invalid(
            "gemm",
            "epilogue",
            "tma store",
            format!(
                "a C whose row pitch and base are multiples of 16 bytes (C strides {:?} of {}); \
                 the register epilogue stores any C",
                c.layout().strides(),
                c.layout().dtype()
            ),
        ));
    }
    let kc = cached(sm90_key(&cfg), || build_gemm_sm90(cfg))?;
    if cfg.split_k == 1 {
        return launch_sm90(b, &kc, &cfg, (a, bm, c), &p, opts, None);
    }
    // split K: the splits' partial products in an f32 workspace of split · M rows (its width
    // even: the epilogue stores column pairs), summed into C
    let (split, nw) = (cfg.split_k.min(MAX_SPLIT_K), p.n + p.n % 2);
    let mut ws = b.empty(ScalarType::F32, &[split * p.m, nw])?;
    let wp = crate::gemm_tuning::GemmProblem { n: nw, ..p.clone() };
    launch_sm90(b, &kc, &cfg, (a, bm, &mut ws), &wp, opts, None)?;
    let out = c.layout().dtype();
    let rk = cached(KernelKey::new("gemm_split_reduce", out, [0; 4]), || build_split_reduce(out))?;
    let slabs =
        TensorLayout::strided(ScalarType::F32, vec![split, p.m, p.n], vec![p.m * nw, nw, 1], 0)?;
    let ws3 = ReshapedIn { t: &ws, layout: slabs };
    let args = Bindings::new(&rk).input("ws", &ws3, b)?.output("c", c, b)?;
    b.launch(&rk, split_reduce_grid(p.m, p.n)?, args)
}

/// The batch of a [`GemmConfig::batched`](crate::gemm_sm90::GemmConfig::batched) launch:
/// entries, and per operand its batch step (1: one entry each, 0: one entry shared by all).
#[derive(Clone, Copy)]
struct Batch {
    count: i64,
    a_step: i64,
    b_step: i64,
}

/// Binds and launches a built Hopper GEMM `kc` of `cfg` on A, B and its `c` (C, or a split's
/// workspace) for problem `p`; with `batch`, A, B and C are rank 3 (the entry first) and the
/// kernel batched.
fn launch_sm90<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    kc: &CompiledKernel,
    cfg: &crate::gemm_sm90::GemmConfig,
    (a, bm, c): (&X, &Z, &mut Y),
    p: &crate::gemm_tuning::GemmProblem,
    opts: &GemmOptions<'_, B>,
    batch: Option<Batch>,
) -> Result<()> {
    use crate::gemm_sm90::{hilbert_order, launch_grid_batched, Raster};
    use tilekit_ir::wgmma::Major;
    let count = batch.map_or(1, |t| t.count);
    let grid = launch_grid_batched(cfg, count, p.m, p.n, b.multiprocessors())?;
    let c_map = crate::bind::map_arg(c.layout())?;
    // the Hilbert walk reads its tile order from a table the host builds
    let order = match cfg.raster {
        Raster::Hilbert => {
            let bm = cfg.bm();
            let ids = hilbert_order((p.m + bm - 1) / bm, (p.n + cfg.bn - 1) / cfg.bn);
            Some((b.from_slice(&ids, &[ids.len() as i64])?, ids.len() as i64))
        }
        _ => None,
    };
    // the maps run over the operands' storage order: A M×K or K×M, B N×K or K×N (batched:
    // the entry outermost, dim 0 of the permuted layout)
    let perm = |major, b_side: bool| -> Vec<usize> {
        let flip = (major == Major::K) == b_side;
        match (batch.is_some(), flip) {
            (false, false) => vec![0, 1],
            (false, true) => vec![1, 0],
            (true, false) => vec![0, 1, 2],
            (true, true) => vec![0, 2, 1],
        }
    };
    let mut args = Bindings::new(kc)
        .input_mapped_permuted("a", "am", a, &perm(cfg.a_major, false), b)?
        .input_mapped_permuted("b", "bm", bm, &perm(cfg.b_major, true), b)?
        .output("c", c, b)?
        .int("k", p.k)?;
    if let Some(t) = batch {
        args = args.int("a_batch_step", t.a_step)?.int("b_batch_step", t.b_step)?;
    }
    for name in cfg.c_maps() {
        args = args.tensor_map(name, c_map.clone())?;
    }
    if let Some((t, len)) = &order {
        args = args.input_ptr("order", t, *len, b)?;
    }
    if cfg.op.alpha {
        args = args.scalar("alpha", tilekit_ir::Lit::f32(opts.alpha))?;
    }
    if cfg.op.beta {
        args = args.scalar("beta", tilekit_ir::Lit::f32(opts.beta))?;
    }
    if let Some(bias) = opts.bias {
        args = args.input_ptr("bias", bias, p.n, b)?;
    }
    b.launch(kc, grid, args)
}

/// [`gemm_into`] on the Hopper kernel with explicit tile knobs (what `tilekit tune gemm` times;
/// [`gemm_into`] takes the backend's tuned or heuristic choice). The operands must be what the
/// Hopper path reads: A (`M × K`) and B (`K × N`) each with K or M / N contiguous (any of the
/// four transposes) and the other pitch a multiple of 8 elements; C `M × N` of the input type
/// or f32 with unit column stride and an even row pitch (a multiple of 16 bytes for
/// [`Epilogue::Tma`](crate::gemm_sm90::Epilogue::Tma)). Other operands are a typed error.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp, gemm_tuning::{GemmChoice, GemmProblem}};
/// use tilekit_ir::ScalarType;
/// use half::bf16;
/// let a = HostTensor::from_slice(&vec![bf16::from_f32(1.0); 130 * 64], &[130, 64]).unwrap();
/// let w = HostTensor::from_slice(&vec![bf16::from_f32(0.5); 72 * 64], &[72, 64]).unwrap();
/// let mut c = HostTensor::from_slice(&vec![f32::NAN; 130 * 72], &[130, 72]).unwrap();
/// let p = GemmProblem::new(130, 72, 64, ScalarType::BF16, ScalarType::F32, true);
/// let choice = GemmChoice { bn: 128, stages: 2, ..GemmChoice::heuristic(&p) };
/// api::gemm_with(&Interp, choice, &a, &w.transpose(0, 1).unwrap(), &mut c).unwrap();
/// assert!(c.to_vec::<f32>().unwrap().iter().all(|&v| v == 32.0));
/// let mut odd = HostTensor::from_slice(&vec![0.0f32; 130 * 72], &[130, 72]).unwrap();
/// assert!(api::gemm_with(&Interp, choice, &a, &a.transpose(0, 1).unwrap(), &mut odd).is_err()); // 130 ≠ 72 columns
/// ```
pub fn gemm_with<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    choice: crate::gemm_tuning::GemmChoice,
    a: &X,
    bm: &Z,
    c: &mut Y,
) -> Result<()> {
    let (al, bl) = (a.layout().clone(), bm.layout().clone());
    let ty = al.dtype();
    let (m, n, _) = gemm_operands(&al, &bl, &crate::gemm::TYPES)?;
    let out = c.layout().dtype();
    if out != ty && out != ScalarType::F32 {
        return Err(OpsError::DtypeMismatch { context: "gemm: C".into(), got: out, expected: ty });
    }
    check_same("gemm", "C", c.layout(), &[m, n], out)?;
    gemm_overlap("gemm", a, bm, c, None)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if al.shape()[1] == 0 {
        let (za, zb) = empty_k_operands(b, ty, (&[], &[]), m, n)?;
        return gemm_with(b, choice, &za, &zb, c);
    }
    let Some(majors) = sm90_takes(b, &al, &bl, c.layout()) else {
        return Err(OpsError::invalid(
            "gemm",
            "operand layouts",
            format!(
                "A strides {:?}, B strides {:?}, C strides {:?}",
                al.strides(),
                bl.strides(),
                c.layout().strides()
            ),
            "A and B each with K or M / N contiguous and the other pitch a multiple of 8 \
             elements, C with unit column stride and an even pitch, on a Hopper backend",
        ));
    };
    gemm_sm90_into(b, choice, (a, bm, c), majors, &GemmOptions::new())
}

/// Every GEMM entry's overlap rule: C, which it writes, overlaps neither itself nor A, B or
/// the bias (β·C reads each element of C just before writing it: that is fine).
fn gemm_overlap<B, X, Z, Y>(
    op: &str,
    a: &X,
    bm: &Z,
    c: &Y,
    bias: Option<&dyn TensorIn<B>>,
) -> Result<()>
where
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorIn<B> + ?Sized,
{
    let mut ins = vec![Operand::of::<B, _>("A", a), Operand::of::<B, _>("B", bm)];
    if let Some(t) = bias {
        ins.push(Operand::of::<B, _>("bias", t));
    }
    overlap::check(op, &[Operand::of::<B, _>("C", c)], &ins, InPlace::Never)
}

/// Zero operands that stand for an empty K (as PyTorch, `A·B` with K = 0 is a zero matrix and
/// the epilogue still runs): A `lead_a × M × 8` and B `lead_b × 8 × N` of `ty` (leading dims as
/// given, none for plain matrices), 8 columns so every kernel can read them.
fn empty_k_operands<B: Backend>(
    b: &B,
    ty: ScalarType,
    lead: (&[i64], &[i64]),
    m: i64,
    n: i64,
) -> Result<(B::Tensor, B::Tensor)> {
    const K: i64 = 8;
    let shape =
        |lead: &[i64], r: i64, c: i64| lead.iter().copied().chain([r, c]).collect::<Vec<_>>();
    Ok((b.zeros(ty, &shape(lead.0, m, K))?, b.zeros(ty, &shape(lead.1, K, n))?))
}

/// The operand checks every GEMM entry shares: A of one of `types`, B of A's type, both
/// matrices, inner dims equal; `(M, N, K)`.
fn gemm_operands(
    al: &TensorLayout,
    bl: &TensorLayout,
    types: &[ScalarType],
) -> Result<(i64, i64, i64)> {
    let ty = al.dtype();
    check_dtype("gemm", ty, types)?;
    if bl.dtype() != ty {
        return Err(OpsError::DtypeMismatch {
            context: "gemm: B".into(),
            got: bl.dtype(),
            expected: ty,
        });
    }
    if al.rank() != 2 || bl.rank() != 2 {
        return Err(OpsError::invalid(
            "gemm",
            "ranks",
            format!("{} and {}", al.rank(), bl.rank()),
            "A and B are matrices (rank 2)",
        ));
    }
    if al.shape()[1] != bl.shape()[0] {
        return Err(OpsError::invalid(
            "gemm",
            "shapes",
            format!("A {:?} · B {:?}", al.shape(), bl.shape()),
            "the inner dims must agree (A is M×K, B is K×N)",
        ));
    }
    Ok((al.shape()[0], bl.shape()[1], al.shape()[1]))
}

/// `C = A · B` (A: M×K, B: K×N of f16 or bf16; C: M×N in f32) on tensor cores; f32 A and B
/// run on the CUDA cores ([`gemm_simt_into`] with [`crate::gemm_simt::choose`]'s preset: no
/// TF32, any M, N, K and strides).
///
/// Where the backend runs sm_90a (a Hopper GPU, or the interpreter), any M, N, K and any
/// layouts run on the Hopper kernel ([`crate::gemm_sm90`]: TMA, wgmma, persistent). A and B
/// with K or M / N contiguous — row-major or transposed views, any of the four combinations
/// (row-major A and B; `w.t()` of a linear layer's `N × K` weight) — whose other pitch is a
/// multiple of 16 bytes are read in place; other operands (rows of 8191 bf16, a view starting
/// off a 16-byte boundary) are first copied into padded buffers, and a C with an odd row pitch
/// or width is computed in one and copied back. Elsewhere the `mma.sync` kernel takes
/// row-major operands with M, N and K multiples of its block tile (64, 64, 32).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// use half::f16;
/// let a = HostTensor::from_slice(&vec![f16::from_f32(1.0); 64 * 32], &[64, 32]).unwrap();
/// let b = HostTensor::from_slice(&vec![f16::from_f32(0.5); 32 * 64], &[32, 64]).unwrap();
/// let c = api::gemm(&Interp, &a, &b).unwrap();
/// assert!(c.to_vec::<f32>().unwrap().iter().all(|&v| v == 16.0));
/// ```
pub fn gemm<B: Backend, X: TensorIn<B> + ?Sized, Z: TensorIn<B> + ?Sized>(
    b: &B,
    a: &X,
    bm: &Z,
) -> Result<B::Tensor> {
    let (al, bl) = (a.layout(), bm.layout());
    if al.rank() != 2 || bl.rank() != 2 {
        return Err(OpsError::invalid(
            "gemm",
            "ranks",
            format!("{} and {}", al.rank(), bl.rank()),
            "A and B are matrices (rank 2)",
        ));
    }
    let mut c = b.empty(ScalarType::F32, &[al.shape()[0], bl.shape()[1]])?;
    gemm_into(b, a, bm, &mut c)?;
    Ok(c)
}

/// [`gemm`] into a caller's f32 `M × N` output.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// use half::f16;
/// let a = HostTensor::from_slice(&vec![f16::from_f32(1.0); 64 * 32], &[64, 32]).unwrap();
/// let mut c = HostTensor::from_slice(&vec![0.0f32; 64 * 64], &[64, 64]).unwrap();
/// let e = api::gemm_into(&Interp, &a, &a, &mut c).unwrap_err().to_string();
/// assert!(e.contains("inner dims"), "{e}");
/// ```
pub fn gemm_into<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    a: &X,
    bm: &Z,
    c: &mut Y,
) -> Result<()> {
    let (al, bl) = (a.layout().clone(), bm.layout().clone());
    let ty = al.dtype();
    gemm_overlap("gemm", a, bm, c, None)?;
    if al.rank() == 2 && bl.rank() == 2 && al.shape()[1] == 0 && bl.shape()[0] == 0 {
        let (za, zb) = empty_k_operands(b, ty, (&[], &[]), al.shape()[0], bl.shape()[1])?;
        return gemm_into(b, &za, &zb, c);
    }
    if ty == ScalarType::F32 {
        let (m, n, _) = gemm_operands(&al, &bl, &[ScalarType::F32])?;
        let cfg = crate::gemm_simt::choose(m, n, b.multiprocessors());
        return gemm_simt_into(b, a, bm, c, &cfg);
    }
    let (m, n, k) = gemm_operands(&al, &bl, &crate::gemm::TYPES)?;
    check_same("gemm", "C", c.layout(), &[m, n], ScalarType::F32)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if b.hopper() {
        return gemm_hopper(b, a, bm, c, &GemmOptions::new());
    }
    let (bm_, bn_, bk_) = crate::gemm::TILE;
    for (name, v, t) in [("M", m, bm_), ("N", n, bn_), ("K", k, bk_)] {
        if v % t != 0 || v == 0 {
            return Err(OpsError::invalid(
                "gemm",
                name,
                v,
                format!("must be a positive multiple of {t} (no edge tiles yet)"),
            ));
        }
    }
    let grid = [host::blocks(n, bn_)?, host::blocks(m, bm_)?, 1];
    let kc = cached(KernelKey::new("gemm", ty, [0; 4]), || crate::gemm::build(ty))?;
    let args = Bindings::new(&kc).input("a", a, b)?.input("b", bm, b)?.output("c", c, b)?;
    b.launch(&kc, grid, args)
}

pub use crate::gemm_sm90::Activation;

/// The epilogue of [`gemm_ex`]: `C = act(alpha · A·B + beta · C + bias)`, built with
/// [`GemmOptions::new`] (`alpha` 1, `beta` 0, no bias, no activation) and its setters. Steps
/// left at their defaults cost nothing: `beta = 0` does not read C (a C full of NaN stays out
/// of the result), `alpha = 1` does not multiply.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api::{Activation, GemmOptions}, backend::Interp};
/// let bias = HostTensor::from_slice(&[1.0f32; 8], &[8]).unwrap();
/// let o: GemmOptions<'_, Interp> = GemmOptions::new().alpha(0.5).beta(2.0).bias(&bias).activation(Activation::Relu);
/// assert_eq!((o.alpha, o.beta, o.activation), (0.5, 2.0, Activation::Relu));
/// assert!(o.bias.is_some());
/// ```
pub struct GemmOptions<'a, B: Backend> {
    /// The product's scale.
    pub alpha: f32,
    /// C's scale (C is read before it is written where this is not 0).
    pub beta: f32,
    /// A per-column bias: `N` elements (rank 1, unit stride) of C's type or f32.
    pub bias: Option<&'a dyn TensorIn<B>>,
    /// The activation, applied last.
    pub activation: Activation,
    /// f32 A and B on the tensor cores as tf32 (their low 13 mantissa bits ignored: about 3
    /// decimal digits per operand, products accumulated in f32). Off by default: f32 inputs
    /// then need [`gemm_into`] (the CUDA cores, exact f32).
    pub tf32: bool,
}

impl<B: Backend> Default for GemmOptions<'_, B> {
    fn default() -> Self {
        GemmOptions { alpha: 1.0, beta: 0.0, bias: None, activation: Activation::None, tf32: false }
    }
}

impl<'a, B: Backend> GemmOptions<'a, B> {
    /// `alpha` 1, `beta` 0, no bias, no activation: the plain product.
    ///
    /// ```
    /// let o = tilekit_ops::api::GemmOptions::<tilekit_ops::backend::Interp>::new();
    /// assert!(o.is_plain());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets `alpha`.
    ///
    /// ```
    /// let o = tilekit_ops::api::GemmOptions::<tilekit_ops::backend::Interp>::new().alpha(2.0);
    /// assert_eq!(o.alpha, 2.0);
    /// ```
    pub fn alpha(self, alpha: f32) -> Self {
        GemmOptions { alpha, ..self }
    }
    /// Sets `beta`.
    ///
    /// ```
    /// let o = tilekit_ops::api::GemmOptions::<tilekit_ops::backend::Interp>::new().beta(1.0);
    /// assert!(!o.is_plain());
    /// ```
    pub fn beta(self, beta: f32) -> Self {
        GemmOptions { beta, ..self }
    }
    /// Sets the per-column bias.
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let b = HostTensor::from_slice(&[0.5f32; 4], &[4]).unwrap();
    /// let o = tilekit_ops::api::GemmOptions::<tilekit_ops::backend::Interp>::new().bias(&b);
    /// assert!(o.bias.is_some());
    /// ```
    pub fn bias(self, bias: &'a dyn TensorIn<B>) -> Self {
        GemmOptions { bias: Some(bias), ..self }
    }
    /// Sets the activation.
    ///
    /// ```
    /// use tilekit_ops::api::{Activation, GemmOptions};
    /// let o = GemmOptions::<tilekit_ops::backend::Interp>::new().activation(Activation::Gelu);
    /// assert_eq!(o.activation, Activation::Gelu);
    /// ```
    pub fn activation(self, activation: Activation) -> Self {
        GemmOptions { activation, ..self }
    }
    /// Whether these are the defaults (the plain product).
    ///
    /// ```
    /// use tilekit_ops::api::{Activation, GemmOptions};
    /// assert!(!GemmOptions::<tilekit_ops::backend::Interp>::new().activation(Activation::Relu).is_plain());
    /// ```
    pub fn is_plain(&self) -> bool {
        self.alpha == 1.0
            && self.beta == 0.0
            && self.bias.is_none()
            && self.activation == Activation::None
    }
    /// Opts f32 inputs into the tensor cores as tf32 ([`GemmOptions::tf32`]).
    ///
    /// ```
    /// let o = tilekit_ops::api::GemmOptions::<tilekit_ops::backend::Interp>::new().tf32(true);
    /// assert!(o.tf32 && o.is_plain());
    /// ```
    pub fn tf32(self, tf32: bool) -> Self {
        GemmOptions { tf32, ..self }
    }
}

/// `C = act(alpha · A·B + beta · C + bias)` into a caller's `M × N` C of f32 or the inputs'
/// type, on the Hopper kernel ([`crate::gemm_sm90`], the epilogue fused before the store).
/// A, B and C as for [`gemm`] (f16 or bf16, any layouts: those the tensor maps cannot read
/// are staged through padded copies). Typed errors name the offending shape, dtype or layout:
/// C's shape or type, a bias whose length is not N or whose type is neither C's nor f32, a
/// backend without sm_90a unless the options are plain and C is f32 (then this is
/// [`gemm_into`]).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api::{self, Activation, GemmOptions}, backend::Interp};
/// use half::bf16;
/// let a = HostTensor::from_slice(&vec![bf16::from_f32(1.0); 16 * 32], &[16, 32]).unwrap();
/// let b = HostTensor::from_slice(&vec![bf16::from_f32(-0.25); 32 * 8], &[32, 8]).unwrap();
/// let bias = HostTensor::from_slice(&[0.0f32, 5.0, 10.0, 13.0, 14.0, 15.0, 16.0, 20.0], &[8]).unwrap();
/// let mut c = HostTensor::from_slice(&vec![bf16::from_f32(1.0); 16 * 8], &[16, 8]).unwrap();
/// // 2·(−8) + 3·1 + bias, then ReLU: max(bias − 13, 0)
/// let opts = GemmOptions::new().alpha(2.0).beta(3.0).bias(&bias).activation(Activation::Relu);
/// api::gemm_ex(&Interp, &a, &b, &mut c, &opts).unwrap();
/// let row: Vec<f32> = c.to_vec::<bf16>().unwrap()[..8].iter().map(|v| v.to_f32()).collect();
/// assert_eq!(row, vec![0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 7.0]);
/// let short = HostTensor::from_slice(&[0.0f32; 7], &[7]).unwrap();
/// let e = api::gemm_ex(&Interp, &a, &b, &mut c, &GemmOptions::new().bias(&short)).unwrap_err();
/// assert!(e.to_string().contains("[7]"), "{e}");
/// ```
pub fn gemm_ex<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    a: &X,
    bm: &Z,
    c: &mut Y,
    opts: &GemmOptions<'_, B>,
) -> Result<()> {
    let out = gemm_ex_check(a.layout(), bm.layout(), c.layout(), opts)?;
    gemm_overlap("gemm", a, bm, c, opts.bias)?;
    let (m, n, k) = (c.layout().shape()[0], c.layout().shape()[1], a.layout().shape()[1]);
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        let (za, zb) = empty_k_operands(b, a.layout().dtype(), (&[], &[]), m, n)?;
        return gemm_ex(b, &za, &zb, c, opts);
    }
    if b.hopper() {
        gemm_hopper(b, a, bm, c, opts)
    } else if opts.is_plain() && out == ScalarType::F32 {
        gemm_into(b, a, bm, c)
    } else {
        Err(OpsError::invalid(
            "gemm",
            "backend",
            b.name(),
            "one that runs sm_90a (a Hopper GPU, or the interpreter): the fused epilogue and a \
             16-bit C need the Hopper kernel",
        ))
    }
}

/// [`gemm_ex`]'s checks of the operands, C and the options (types, shapes, the bias); C's type.
fn gemm_ex_check<B: Backend>(
    al: &TensorLayout,
    bl: &TensorLayout,
    cl: &TensorLayout,
    opts: &GemmOptions<'_, B>,
) -> Result<ScalarType> {
    let op = "gemm";
    let ty = al.dtype();
    if ty == ScalarType::F32 && !opts.tf32 {
        return Err(OpsError::invalid(
            op,
            "input type",
            "f32",
            "f16 or bf16; f32 with GemmOptions::tf32(true) (tensor cores, tf32 precision), or \
             api::gemm_into for exact f32 on the CUDA cores",
        ));
    }
    let types: &[ScalarType] = if opts.tf32 {
        &[ScalarType::F16, ScalarType::BF16, ScalarType::F32]
    } else {
        &crate::gemm::TYPES
    };
    let (m, n, _) = gemm_operands(al, bl, types)?;
    let out = cl.dtype();
    if out != ScalarType::F32 && out != ty {
        return Err(OpsError::invalid(
            op,
            "C type",
            out,
            format!("f32 or {ty} (the inputs' type)"),
        ));
    }
    check_same(op, "C", cl, &[m, n], out)?;
    if let Some(bias) = opts.bias {
        let l = bias.layout();
        if l.shape() != [n] {
            return Err(OpsError::invalid(
                op,
                "bias shape",
                format!("{:?}", l.shape()),
                format!("[{n}] (one value per column of C)"),
            ));
        }
        if l.dtype() != out && l.dtype() != ScalarType::F32 {
            return Err(OpsError::invalid(
                op,
                "bias type",
                l.dtype(),
                format!("{out} (C's type) or f32"),
            ));
        }
        if n > 1 && l.strides()[0] != 1 {
            return Err(OpsError::invalid(op, "bias stride", l.strides()[0], "1 (contiguous)"));
        }
    }
    Ok(out)
}

/// Strided batches: `C[i] = act(alpha · A[i]·B[i] + beta · C[i] + bias)` for every batch index
/// `i` of rank-3 tensors A (`batch × M × K`), B (`batch × K × N`) and C (`batch × M × N`), each
/// matrix as [`gemm_ex`] takes it (any strides; A or B with a batch length of 1 — or a stride of
/// 0 — is shared by every entry); C of f32, or the inputs' type on a Hopper backend. f32 inputs
/// run on the CUDA cores (plain product only), one [`gemm_simt_into`] launch per entry.
///
/// On a Hopper backend, where every entry's matrices can be read and written in place (as
/// [`gemm_ex`] reads them without staging: K or M / N contiguous, 16-byte pitches and first
/// element, C with unit column stride and even pitch and width) and each batch stride is a
/// multiple of 16 bytes (TMA; C's an even number of elements) and at least an entry's span
/// (entries one after another, not a permuted batch dim), the whole batch is **one launch**
/// of the batched Hopper kernel ([`GemmConfig::batched`](crate::gemm_sm90::GemmConfig::batched):
/// the strided-batch case — a shared operand reads its one entry for all); the TMA-store
/// epilogue only where C's batch stride is a multiple of 16 bytes too. Otherwise one GEMM launch
/// per entry, stream-ordered ([`gemm_ex`], staging what it must).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api::{self, GemmOptions}, backend::Interp};
/// use half::bf16;
/// // two batches of 16×32 · 32×8; B shared (batch length 1)
/// let a: Vec<bf16> = (0..2 * 16 * 32).map(|i| bf16::from_f32(if i < 16 * 32 { 1.0 } else { 2.0 })).collect();
/// let a = HostTensor::from_slice(&a, &[2, 16, 32]).unwrap();
/// let w = HostTensor::from_slice(&vec![bf16::from_f32(0.5); 32 * 8], &[1, 32, 8]).unwrap();
/// let mut c = HostTensor::from_slice(&vec![f32::NAN; 2 * 16 * 8], &[2, 16, 8]).unwrap();
/// api::gemm_batched_into(&Interp, &a, &w, &mut c, &GemmOptions::new()).unwrap();
/// let got = c.to_vec::<f32>().unwrap();
/// assert!(got[..128].iter().all(|&v| v == 16.0) && got[128..].iter().all(|&v| v == 32.0));
/// let mut wrong = HostTensor::from_slice(&vec![0.0f32; 3 * 16 * 8], &[3, 16, 8]).unwrap();
/// let e = api::gemm_batched_into(&Interp, &a, &w, &mut wrong, &GemmOptions::new()).unwrap_err();
/// assert!(e.to_string().contains("batch"), "{e}");
/// ```
pub fn gemm_batched_into<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    a: &X,
    bm: &Z,
    c: &mut Y,
    opts: &GemmOptions<'_, B>,
) -> Result<()> {
    let (al, bl, cl) = (a.layout().clone(), bm.layout().clone(), c.layout().clone());
    if al.rank() != 3 || bl.rank() != 3 || cl.rank() != 3 {
        return Err(OpsError::invalid(
            "gemm batched",
            "ranks",
            format!("A {}, B {}, C {}", al.rank(), bl.rank(), cl.rank()),
            "3 each: batch × rows × columns",
        ));
    }
    gemm_overlap("gemm batched", a, bm, c, opts.bias)?;
    let batch = cl.shape()[0];
    if al.shape()[2] == 0 && bl.shape()[1] == 0 && cl.numel() > 0 {
        let (m, n) = (al.shape()[1], bl.shape()[2]);
        let lead = ([al.shape()[0]], [bl.shape()[0]]);
        let (za, zb) = empty_k_operands(b, al.dtype(), (&lead.0, &lead.1), m, n)?;
        return gemm_batched_into(b, &za, &zb, c, opts);
    }
    for (what, l) in [("A", &al), ("B", &bl)] {
        if l.shape()[0] != batch && l.shape()[0] != 1 {
            return Err(OpsError::invalid(
                "gemm batched",
                "batch",
                format!("{what} {:?}, C {:?}", l.shape(), cl.shape()),
                format!("{batch} (C's) or 1 (shared by every entry)"),
            ));
        }
    }
    // entry i of a batch-1 (shared) operand is entry 0
    let entry = |l: &TensorLayout, i: i64| -> Result<TensorLayout> {
        let i = if l.shape()[0] == 1 { 0 } else { i };
        let (shape, strides) = (l.shape()[1..].to_vec(), l.strides()[1..].to_vec());
        Ok(TensorLayout::strided(l.dtype(), shape, strides, l.offset() + i * l.strides()[0])?)
    };
    let f32_in = al.dtype() == ScalarType::F32 && !opts.tf32;
    if f32_in && !opts.is_plain() {
        return Err(OpsError::invalid(
            "gemm batched",
            "options",
            "an epilogue",
            "the plain product for f32 inputs on the CUDA cores (no fused epilogue there), or \
             GemmOptions::tf32(true)",
        ));
    }
    if !f32_in && batch > 1 && b.hopper() {
        // every entry checked as gemm_ex checks one (the entries share shapes and types)
        gemm_ex_check(&entry(&al, 0)?, &entry(&bl, 0)?, &entry(&cl, 0)?, opts)?;
        if let Some(plan) = batched_plan(a, bm, c, opts.tf32 || al.dtype() == ScalarType::F32) {
            return gemm_sm90_batched(b, (a, bm, c), plan, opts);
        }
    }
    for i in 0..batch {
        let ai = ReshapedIn { t: a, layout: entry(&al, i)? };
        let bi = ReshapedIn { t: bm, layout: entry(&bl, i)? };
        let layout = entry(&cl, i)?;
        let mut ci = Reshaped { t: &mut *c, layout };
        if f32_in {
            gemm_into(b, &ai, &bi, &mut ci)?;
        } else {
            gemm_ex(b, &ai, &bi, &mut ci, opts)?;
        }
    }
    Ok(())
}

/// How [`gemm_batched_into`] launches a batch as one batched Hopper GEMM: the operands' majors,
/// A's and B's rank-3 layouts as the tensor maps read them (a shared operand's batch dim 1 with
/// a stride TMA takes), the batch and whether C's batch stride takes TMA stores.
struct BatchedPlan {
    majors: (tilekit_ir::wgmma::Major, tilekit_ir::wgmma::Major),
    a: TensorLayout,
    bm: TensorLayout,
    batch: Batch,
    c_tma_batch: bool,
}

/// The [`BatchedPlan`] of rank-3 A, B, C (batch lengths checked: C's, or 1 for a shared
/// operand), or `None` where some entry cannot be read or written in place by the batched
/// kernel (then each entry is its own launch): every entry's matrix as [`sm90_major`] and
/// [`tma_aligned`] require (K-major only for `k_major_only`, tf32), C as the register epilogue
/// stores it, each batch stride a multiple of 16 bytes (C's: even) and past its entry
/// ([`entry_extent`]).
fn batched_plan<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    a: &X,
    bm: &Z,
    c: &Y,
    k_major_only: bool,
) -> Option<BatchedPlan> {
    use tilekit_ir::wgmma::Major;
    let (al, bl, cl) = (a.layout(), bm.layout(), c.layout());
    let count = cl.shape()[0];
    // an operand's rank-3 layout for its map and its batch step: a shared one (batch length 1
    // or stride 0) gets batch length 1 and a 16-byte stride past its one entry (any other
    // entry coordinate is 0)
    let operand = |l: &TensorLayout, k_dim: usize| -> Option<(TensorLayout, Major, i64)> {
        let (sh, st) = (l.shape(), l.strides());
        let matrix =
            TensorLayout::strided(l.dtype(), sh[1..].to_vec(), st[1..].to_vec(), 0).ok()?;
        let major = sm90_major(&matrix, k_dim)?;
        if k_major_only && major != Major::K {
            return None;
        }
        let eb = l.dtype().size_bytes() as i64;
        let shared = sh[0] == 1 || st[0] == 0;
        let extent = entry_extent(l);
        let (len0, stride0) = if shared {
            (1, (extent * eb + 15) / 16 * 16 / eb)
        } else if st[0] >= extent && (st[0] * eb) % 16 == 0 {
            (sh[0], st[0])
        } else {
            return None;
        };
        let layout = TensorLayout::strided(
            l.dtype(),
            vec![len0, sh[1], sh[2]],
            vec![stride0, st[1], st[2]],
            l.offset(),
        )
        .ok()?;
        Some((layout, major, i64::from(!shared)))
    };
    if !tma_aligned(a) || !tma_aligned(bm) {
        return None;
    }
    let (a3, a_major, a_step) = operand(al, 1)?;
    let (b3, b_major, b_step) = operand(bl, 0)?;
    // C: each entry stored in place by column pairs, entries an even number of elements apart
    let (sc, n) = (cl.strides(), cl.shape()[2]);
    let eb = cl.dtype().size_bytes() as i64;
    let first = c.base_address() + cl.offset().max(0) as u64 * eb as u64;
    let c_ok = sc[2] == 1
        && sc[1] % 2 == 0
        && n % 2 == 0
        && sc[0] > 0
        && sc[0] % 2 == 0
        && first.is_multiple_of(2 * eb as u64);
    c_ok.then_some(BatchedPlan {
        majors: (a_major, b_major),
        a: a3,
        bm: b3,
        batch: Batch { count, a_step, b_step },
        c_tma_batch: (sc[0] * eb) % 16 == 0 && sc[0] >= entry_extent(cl),
    })
}

/// Elements one entry of a rank-3 layout spans (its matrix's larger `length × stride`, at
/// least 1): the batched kernel's maps take batch strides of at least this (entries stored one
/// after another, as strided batches are; a permuted batch dim launches per entry).
fn entry_extent(l: &TensorLayout) -> i64 {
    let (sh, st) = (l.shape(), l.strides());
    (1..3).map(|d| sh[d] * st[d]).max().unwrap_or(1).max(1)
}

/// One launch of the batched Hopper GEMM for [`gemm_batched_into`] on `plan`: the backend's
/// choice for one entry's problem (no split K; the TMA epilogue only where every entry of C
/// takes it).
fn gemm_sm90_batched<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    (a, bm, c): (&X, &Z, &mut Y),
    plan: BatchedPlan,
    opts: &GemmOptions<'_, B>,
) -> Result<()> {
    use crate::gemm_sm90::{build_gemm_sm90, Epilogue, EpilogueOp, GemmConfig};
    let cl = c.layout().clone();
    let entry = TensorLayout::strided(
        cl.dtype(),
        cl.shape()[1..].to_vec(),
        cl.strides()[1..].to_vec(),
        cl.offset(),
    )?;
    let matrix = |l: &TensorLayout| {
        TensorLayout::strided(l.dtype(), l.shape()[1..].to_vec(), l.strides()[1..].to_vec(), 0)
    };
    let mut p = sm90_problem(&matrix(&plan.a)?, &entry, plan.majors);
    p.c_tma = p.c_tma && plan.c_tma_batch;
    // (a batched kernel runs unsplit and cooperative: split K and ping-pong are refused)
    let choice = GemmChoice { split_k: 1, pingpong: false, ..b.gemm_table().choose(&p) };
    let op = EpilogueOp {
        alpha: opts.alpha != 1.0,
        beta: opts.beta != 0.0,
        bias: opts.bias.map(|t| t.layout().dtype()),
        act: opts.activation,
    };
    let mut cfg = GemmConfig { op, batched: true, ..p.config(&choice) };
    if !p.c_tma {
        cfg.epilogue = Epilogue::Registers;
    }
    cfg.check()?;
    let kc = cached(sm90_key(&cfg), || build_gemm_sm90(cfg))?;
    let a3 = ReshapedIn { t: a, layout: plan.a };
    let b3 = ReshapedIn { t: bm, layout: plan.bm };
    launch_sm90(b, &kc, &cfg, (&a3, &b3, c), &p, opts, Some(plan.batch))
}

/// `C = A · B` in f32 on the CUDA cores ([`crate::gemm_simt`], no tensor cores, no TF32) with
/// an explicit configuration: A `M × K`, B `K × N` (a row-major matrix, or the transposed view
/// `w.t()` of an `N × K` row-major one, which is read in its own row order), C `M × N`; any
/// M, N, K, strides and offsets. Each operand is read with the widest vector (up to float4)
/// its pitch and alignment allow. [`gemm_into`] calls this for f32 inputs with a preset chosen
/// from the shape ([`crate::gemm_simt::choose`]).
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp, gemm_simt::SimtConfig};
/// let a = HostTensor::from_slice(&[1.0f32, 2.0, 3.0], &[1, 3]).unwrap();
/// let w = HostTensor::from_slice(&[1.0f32, 1.0, 1.0, 0.0, 1.0, 2.0], &[2, 3]).unwrap(); // N × K
/// let mut c = HostTensor::from_slice(&[f32::NAN; 2], &[1, 2]).unwrap();
/// api::gemm_simt_into(&Interp, &a, &w.permute(&[1, 0]).unwrap(), &mut c, &SimtConfig::small()).unwrap();
/// assert_eq!(c.to_vec::<f32>().unwrap(), vec![6.0, 8.0]);
/// let bad = SimtConfig { stages: 3, ..SimtConfig::small() };
/// let e = api::gemm_simt_into(&Interp, &a, &w.permute(&[1, 0]).unwrap(), &mut c, &bad).unwrap_err();
/// assert!(e.to_string().contains("stages = 3"), "{e}");
/// ```
pub fn gemm_simt_into<
    B: Backend,
    X: TensorIn<B> + ?Sized,
    Z: TensorIn<B> + ?Sized,
    Y: TensorOut<B> + ?Sized,
>(
    b: &B,
    a: &X,
    bm: &Z,
    c: &mut Y,
    cfg: &crate::gemm_simt::SimtConfig,
) -> Result<()> {
    use crate::gemm_simt::{build, grid, SimtLayout};
    cfg.validate()?;
    let (m, n, k) = gemm_operands(a.layout(), bm.layout(), &[ScalarType::F32])?;
    check_same("gemm", "C", c.layout(), &[m, n], ScalarType::F32)?;
    gemm_overlap("gemm", a, bm, c, None)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        let (za, zb) = empty_k_operands(b, ScalarType::F32, (&[], &[]), m, n)?;
        return gemm_simt_into(b, &za, &zb, c, cfg);
    }
    let bl = bm.layout();
    let (sb, shb) = (bl.strides(), bl.shape());
    // B = Wᵀ of a row-major N × K matrix W: read W (unit stride along K) instead
    let transposed = shb[1] > 1 && sb[1] != 1 && (sb[0] == 1 || shb[0] == 1);
    let b_layout = if transposed { bl.permute(&[1, 0])? } else { bl.clone() };
    let b_in = ReshapedIn { t: bm, layout: b_layout };
    let layout = SimtLayout {
        a_vector: vec_in(a).min(4),
        b_vector: vector_of(&b_in.layout, bm.base_address()).min(4),
        c_vector: vector_of(c.layout(), c.base_address()).min(4),
        b_transposed: transposed,
    };
    // a vector along K wider than the k-tile cannot be used; fall back to what divides bk
    let fit = |v: i64| if cfg.bk % v == 0 { v } else { 1 };
    let layout = SimtLayout {
        a_vector: fit(layout.a_vector),
        b_vector: if transposed { fit(layout.b_vector) } else { layout.b_vector },
        ..layout
    };
    let key = KernelKey::new("gemm_simt", ScalarType::F32, cfg.key(&layout));
    let kc = cached(key, || build(cfg, &layout))?;
    let args = Bindings::new(&kc).input("a", a, b)?.input("b", &b_in, b)?.output("c", c, b)?;
    b.launch(&kc, grid(cfg, m, n)?, args)
}

// --------------------------------------------------------------------------------- attention

/// Fused attention forward on Hopper ([`attention_sm90`](crate::attention_sm90)): `q` is
/// `(b, s_q, h, d)`, `k` and `v` are `(b, s_k, h_kv, d)` (PyTorch's layout; views with any
/// strides whose last dim is contiguous and whose other strides are multiples of 16 bytes),
/// f16 or bf16, `d` ∈ {64, 128, 256}, `h_kv` dividing `h`. Returns `O` `(b, s_q, h, d)` of the
/// input type and the log-sum-exp `(b, h, s_q)` in f32 (natural log). `causal` masks key `j`
/// for query `i` when `j > i + s_k − s_q`; `scale` defaults to `1/√d`. A row that sees no key
/// gets O = 0 and LSE = −∞.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// use half::bf16;
/// // one query, two keys with scores 0 and 0 (q ⊥ k): O = the mean of the values
/// let mut q = vec![bf16::ZERO; 64];
/// q[0] = bf16::ONE;
/// let mut k = vec![bf16::ZERO; 2 * 64];
/// k[1] = bf16::ONE;
/// k[64 + 1] = bf16::ONE;
/// let v: Vec<bf16> = (0..2 * 64).map(|i| bf16::from_f32(if i < 64 { 1.0 } else { 3.0 })).collect();
/// let q = HostTensor::from_slice(&q, &[1, 1, 1, 64]).unwrap();
/// let k = HostTensor::from_slice(&k, &[1, 2, 1, 64]).unwrap();
/// let v = HostTensor::from_slice(&v, &[1, 2, 1, 64]).unwrap();
/// let (o, lse) = api::attention(&Interp, &q, &k, &v, false, None).unwrap();
/// assert!(o.to_vec::<bf16>().unwrap().iter().all(|x| x.to_f32() == 2.0));
/// assert!((lse.to_vec::<f32>().unwrap()[0] - 2f32.ln()).abs() < 1e-5);
/// let n = |t: &HostTensor| t.narrow(3, 0, 32).unwrap();
/// let e = api::attention(&Interp, &n(&q), &n(&k), &n(&v), false, None).unwrap_err();
/// assert!(e.to_string().contains("head dim = 32"), "{e}");
/// ```
pub fn attention<
    B: Backend,
    Q: TensorIn<B> + ?Sized,
    K: TensorIn<B> + ?Sized,
    V: TensorIn<B> + ?Sized,
>(
    b: &B,
    q: &Q,
    k: &K,
    v: &V,
    causal: bool,
    scale: Option<f64>,
) -> Result<(B::Tensor, B::Tensor)> {
    let ql = q.layout();
    if ql.rank() != 4 {
        return Err(OpsError::invalid(
            "attention",
            "q rank",
            ql.rank(),
            "4: (batch, seq, heads, head dim)",
        ));
    }
    let [bs, sq, h, d] = [ql.shape()[0], ql.shape()[1], ql.shape()[2], ql.shape()[3]];
    let mut o = b.empty(ql.dtype(), &[bs, sq, h, d])?;
    let mut lse = b.empty(ScalarType::F32, &[bs, h, sq])?;
    attention_into(b, q, k, v, causal, scale, &mut o, &mut lse)?;
    Ok((o, lse))
}

/// [`attention`] into a caller's `O` `(b, s_q, h, d)` (the input type; any strides with the
/// last dim contiguous and the others even) and `LSE` `(b, h, s_q)` (f32, any strides).
///
/// Both run the schedule [`AttnConfig::recommended`](crate::attention_sm90::AttnConfig::recommended)
/// picks for the head dim, the mask and `s_k` (the fastest measured on an H100), storing O
/// through shared memory and TMA when O allows it (first element on a 16-byte boundary, outer
/// strides multiples of 16 bytes), and from registers
/// ([`without_tma_store`](crate::attention_sm90::AttnConfig::without_tma_store)) otherwise.
/// [`attention_with`] runs any other configuration.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::Interp};
/// use half::f16;
/// let q = HostTensor::from_slice(&vec![f16::ONE; 2 * 64], &[1, 1, 2, 64]).unwrap();
/// let k = HostTensor::from_slice(&vec![f16::ONE; 3 * 64], &[1, 1, 3, 64]).unwrap();
/// let mut o = HostTensor::from_slice(&vec![f16::ZERO; 2 * 64], &[1, 1, 2, 64]).unwrap();
/// let mut lse = HostTensor::from_slice(&[0.0f32; 2], &[1, 2, 1]).unwrap();
/// let e = api::attention_into(&Interp, &q, &k, &k, false, None, &mut o, &mut lse).unwrap_err();
/// assert!(e.to_string().contains("kv heads = 3"), "{e}");   // 3 does not divide 2
/// ```
#[allow(clippy::too_many_arguments)]
pub fn attention_into<
    B: Backend,
    Q: TensorIn<B> + ?Sized,
    K: TensorIn<B> + ?Sized,
    V: TensorIn<B> + ?Sized,
    O: TensorOut<B> + ?Sized,
    L: TensorOut<B> + ?Sized,
>(
    b: &B,
    q: &Q,
    k: &K,
    v: &V,
    causal: bool,
    scale: Option<f64>,
    o: &mut O,
    lse: &mut L,
) -> Result<()> {
    let (ql, kl, ty) = (q.layout(), k.layout(), q.layout().dtype());
    let d = if ql.rank() == 4 { ql.shape()[3] } else { 0 };
    let s_k = if kl.rank() == 4 { kl.shape()[1] } else { 0 };
    let cfg = crate::attention_sm90::AttnConfig::recommended(ty, d, causal, s_k);
    // the TMA store needs O's first element on a 16-byte boundary and its outer strides in
    // multiples of 16 bytes; any other O takes the register epilogue
    let ol = o.layout();
    let size = ol.dtype().size_bytes() as u64;
    let first = o.base_address() + ol.offset() as u64 * size;
    let r = ol.rank();
    let storable = first.is_multiple_of(16)
        && r == 4
        && ol.strides()[r - 1] == 1
        && ol.strides()[..r - 1].iter().all(|&s| s >= 0 && (s as u64 * size).is_multiple_of(16));
    let cfg = if storable { cfg } else { cfg.without_tma_store() };
    attention_with(b, cfg, q, k, v, scale, o, lse)
}

/// [`attention_into`] with an explicit kernel configuration (tile, stages, the overlap and
/// ping-pong schedules): what `tilekit bench attention` sweeps. The config's dtype and head
/// dim must match the tensors; its `causal` flag is the mask.
///
/// ```
/// use tilekit_ir::{tensor::HostTensor, ScalarType};
/// use tilekit_ops::{api, attention_sm90::AttnConfig, backend::Interp};
/// let t = |s: i64| HostTensor::from_slice(&vec![half::bf16::from_f32(0.5); (s * 64) as usize], &[1, s, 1, 64]).unwrap();
/// let (q, k) = (t(3), t(5));
/// let mut o = HostTensor::from_slice(&vec![half::bf16::from_f32(f32::NAN); 3 * 64], &[1, 3, 1, 64]).unwrap();
/// let mut lse = HostTensor::from_slice(&vec![f32::NAN; 3], &[1, 1, 3]).unwrap();
/// let cfg = AttnConfig { overlap: true, ..AttnConfig::new(ScalarType::BF16, 64, false) };
/// api::attention_with(&Interp, cfg, &q, &k, &k, None, &mut o, &mut lse).unwrap();
/// // every score is equal: O is V's row (0.5) and LSE = scale·(0.5·0.5·64) + ln 5
/// assert_eq!(o.to_vec::<half::bf16>().unwrap()[0].to_f32(), 0.5);
/// let want = 0.125 * 16.0 + 5f32.ln();
/// assert!((lse.to_vec::<f32>().unwrap()[2] - want).abs() < 1e-3);
/// let wrong = AttnConfig::new(ScalarType::BF16, 128, false);
/// assert!(api::attention_with(&Interp, wrong, &q, &k, &k, None, &mut o, &mut lse).is_err());
/// ```
#[allow(clippy::too_many_arguments)]
pub fn attention_with<
    B: Backend,
    Q: TensorIn<B> + ?Sized,
    K: TensorIn<B> + ?Sized,
    V: TensorIn<B> + ?Sized,
    O: TensorOut<B> + ?Sized,
    L: TensorOut<B> + ?Sized,
>(
    b: &B,
    cfg: crate::attention_sm90::AttnConfig,
    q: &Q,
    k: &K,
    v: &V,
    scale: Option<f64>,
    o: &mut O,
    lse: &mut L,
) -> Result<()> {
    let layouts = [q.layout(), k.layout(), v.layout(), o.layout(), lse.layout()];
    if let Some(band) = batch_band(&layouts) {
        // a tensor past 2^31 elements: the kernel indexes in 32 bits, so it runs on bands of
        // the batch that fit (each sequence is whole in one band)
        let [ql, kl, vl, ol, ll] = layouts.map(|l| l.clone());
        let bs = ql.shape()[0];
        for b0 in (0..bs).step_by(band as usize) {
            let bl = band.min(bs - b0);
            let cut = |l: &TensorLayout| l.narrow(0, b0, bl);
            attention_fits(
                b,
                cfg,
                (
                    &ReshapedIn { t: q, layout: cut(&ql)? },
                    &ReshapedIn { t: k, layout: cut(&kl)? },
                    &ReshapedIn { t: v, layout: cut(&vl)? },
                ),
                scale,
                &mut Reshaped { t: &mut *o, layout: cut(&ol)? },
                &mut Reshaped { t: &mut *lse, layout: cut(&ll)? },
            )?;
        }
        return Ok(());
    }
    attention_fits(b, cfg, (q, k, v), scale, o, lse)
}

/// For tensors of one batch (dim 0, equal in all) of which one spans (from its first element) past
/// `i32::MAX`: the most batch entries a band may hold so that every tensor's band fits; `None`
/// when all fit as they are, or when not even one batch entry would (the bind check's typed
/// error then names the tensor).
fn batch_band(layouts: &[&TensorLayout]) -> Option<i64> {
    let max = i64::from(i32::MAX);
    let span = |l: &TensorLayout| l.span_elems() - l.offset();
    if layouts
        .iter()
        .any(|l| l.rank() == 0 || l.numel() == 0 || l.shape()[0] != layouts[0].shape()[0])
        || layouts.iter().all(|l| span(l) <= max)
    {
        return None;
    }
    let mut band = layouts[0].shape()[0];
    for l in layouts {
        let s0 = l.strides()[0];
        let one = span(&l.narrow(0, 0, 1).ok()?);
        if one > max {
            return None;
        }
        if s0 > 0 {
            band = band.min((max - one) / s0 + 1);
        }
    }
    (band >= 1).then_some(band)
}

#[allow(clippy::too_many_arguments)]
fn attention_fits<
    B: Backend,
    Q: TensorIn<B> + ?Sized,
    K: TensorIn<B> + ?Sized,
    V: TensorIn<B> + ?Sized,
    O: TensorOut<B> + ?Sized,
    L: TensorOut<B> + ?Sized,
>(
    b: &B,
    cfg: crate::attention_sm90::AttnConfig,
    (q, k, v): (&Q, &K, &V),
    scale: Option<f64>,
    o: &mut O,
    lse: &mut L,
) -> Result<()> {
    if cfg.probe {
        return Err(OpsError::invalid(
            "attention",
            "config probe",
            true,
            "false here; a probed kernel runs through api::attention_probed, which binds its buffer",
        ));
    }
    attention_impl(b, cfg, q, k, v, scale, o, lse, None::<(&mut L, i64)>)
}

/// [`attention_with`] of a probed kernel ([`AttnConfig::probe`](crate::attention_sm90::AttnConfig::probe)
/// is set here): besides O and LSE, every warpgroup's first thread writes `(clock, event)`
/// pairs ([`AttnSpan`](crate::attention_sm90::AttnSpan) begins and ends) into `probe`, a
/// contiguous `i64` tensor of `blocks × warpgroups × cap × 2` elements (blocks =
/// ⌈s_q / rows⌉·h·b with [`AttnConfig::block_rows`](crate::attention_sm90::AttnConfig::block_rows)
/// rows; warpgroups = 1 + [`AttnConfig::consumers`](crate::attention_sm90::AttnConfig::consumers),
/// 3 by default; `cap` events each: [`tilekit_kernel::probe::ProbeLayout::fitting`]
/// gives `cap` for a length). Fill it with [`tilekit_kernel::probe::EMPTY`] first: entries
/// left so were not written. Returns the layout to decode it with.
///
/// ```
/// use tilekit_ir::{tensor::HostTensor, ScalarType};
/// use tilekit_kernel::probe::{spans, EMPTY};
/// use tilekit_ops::{api, attention_sm90::{AttnConfig, AttnSpan}, backend::Interp};
/// let t = |s: i64| HostTensor::from_slice(&vec![half::bf16::from_f32(0.5); (s * 64) as usize], &[1, s, 1, 64]).unwrap();
/// let (q, k) = (t(3), t(5));
/// let mut o = HostTensor::from_slice(&vec![half::bf16::from_f32(f32::NAN); 3 * 64], &[1, 3, 1, 64]).unwrap();
/// let mut lse = HostTensor::from_slice(&vec![f32::NAN; 3], &[1, 1, 3]).unwrap();
/// let mut probe = HostTensor::from_slice(&vec![EMPTY; 3 * 64 * 2], &[3 * 64 * 2]).unwrap();
/// let cfg = AttnConfig::new(ScalarType::BF16, 64, false);
/// let layout = api::attention_probed(&Interp, cfg, &q, &k, &k, None, &mut o, &mut lse, &mut probe).unwrap();
/// assert_eq!(o.to_vec::<half::bf16>().unwrap()[0].to_f32(), 0.5);
/// let recs = layout.decode(&probe.to_vec::<i64>().unwrap()).unwrap();
/// let s = spans(&recs);
/// // one key tile: the producer loads Q, K and V once; each consumer runs one softmax
/// assert_eq!(s.iter().filter(|s| s.kind == AttnSpan::Softmax as u32).count(), 2);
/// assert_eq!(s.iter().filter(|s| s.kind == AttnSpan::KLoad as u32).count(), 1);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn attention_probed<
    B: Backend,
    Q: TensorIn<B> + ?Sized,
    K: TensorIn<B> + ?Sized,
    V: TensorIn<B> + ?Sized,
    O: TensorOut<B> + ?Sized,
    L: TensorOut<B> + ?Sized,
    P: TensorOut<B> + ?Sized,
>(
    b: &B,
    cfg: crate::attention_sm90::AttnConfig,
    q: &Q,
    k: &K,
    v: &V,
    scale: Option<f64>,
    o: &mut O,
    lse: &mut L,
    probe: &mut P,
) -> Result<tilekit_kernel::probe::ProbeLayout> {
    let cfg = crate::attention_sm90::AttnConfig { probe: true, ..cfg };
    let ql = q.layout();
    let pl = probe.layout();
    if pl.dtype() != ScalarType::I64 {
        return Err(OpsError::DtypeMismatch {
            context: "attention: probe".into(),
            got: pl.dtype(),
            expected: ScalarType::I64,
        });
    }
    if pl.rank() != 1 || pl.strides()[0] != 1 {
        return Err(OpsError::invalid(
            "attention",
            "probe",
            format!("shape {:?}, strides {:?}", pl.shape(), pl.strides()),
            "a contiguous 1-D i64 tensor",
        ));
    }
    // (clock, event) pairs are stored 16 bytes at a time
    let first = probe.base_address() + pl.offset() as u64 * 8;
    if !first.is_multiple_of(16) {
        return Err(OpsError::invalid(
            "attention",
            "probe's first element",
            format!("byte {first} (offset {})", pl.offset()),
            "on a 16-byte boundary",
        ));
    }
    let blocks = if ql.rank() == 4 {
        let (sq, h, bs) = (ql.shape()[1], ql.shape()[2], ql.shape()[0]);
        ((sq.max(0) + cfg.block_rows() - 1) / cfg.block_rows() * h * bs).max(0)
    } else {
        0
    };
    // the producer and the consumer warpgroups
    let warpgroups = (cfg.consumers + 1) as usize;
    let layout = tilekit_kernel::probe::ProbeLayout::fitting(
        blocks as usize,
        warpgroups,
        pl.shape()[0] as usize,
    )?;
    attention_impl(b, cfg, q, k, v, scale, o, lse, Some((probe, layout.cap as i64)))?;
    Ok(layout)
}

#[allow(clippy::too_many_arguments)]
fn attention_impl<
    B: Backend,
    Q: TensorIn<B> + ?Sized,
    K: TensorIn<B> + ?Sized,
    V: TensorIn<B> + ?Sized,
    O: TensorOut<B> + ?Sized,
    L: TensorOut<B> + ?Sized,
    P: TensorOut<B> + ?Sized,
>(
    b: &B,
    cfg: crate::attention_sm90::AttnConfig,
    q: &Q,
    k: &K,
    v: &V,
    scale: Option<f64>,
    o: &mut O,
    lse: &mut L,
    probe: Option<(&mut P, i64)>,
) -> Result<()> {
    let op = "attention";
    let (ql, kl, vl) = (q.layout().clone(), k.layout().clone(), v.layout().clone());
    let ty = ql.dtype();
    check_dtype(op, ty, &[ScalarType::F16, ScalarType::BF16])?;
    for (what, l) in [("k", &kl), ("v", &vl)] {
        if l.dtype() != ty {
            return Err(OpsError::DtypeMismatch {
                context: format!("{op}: {what}"),
                got: l.dtype(),
                expected: ty,
            });
        }
    }
    for (what, l) in [("q", &ql), ("k", &kl), ("v", &vl)] {
        if l.rank() != 4 {
            return Err(OpsError::invalid(
                op,
                format!("{what} rank"),
                l.rank(),
                "4: (batch, seq, heads, head dim)",
            ));
        }
    }
    let [bs, sq, h, d] = [ql.shape()[0], ql.shape()[1], ql.shape()[2], ql.shape()[3]];
    let [bk, sk, hk, dk] = [kl.shape()[0], kl.shape()[1], kl.shape()[2], kl.shape()[3]];
    if vl.shape() != kl.shape() || bk != bs || dk != d {
        return Err(OpsError::invalid(
            op,
            "shapes",
            format!("q {:?}, k {:?}, v {:?}", ql.shape(), kl.shape(), vl.shape()),
            "q (b, s_q, h, d), k and v both (b, s_k, h_kv, d)",
        ));
    }
    if hk < 1 || h % hk != 0 {
        return Err(OpsError::invalid(
            op,
            "kv heads",
            hk,
            format!("a divisor of the {h} query heads"),
        ));
    }
    if h > 65535 || bs > 65535 {
        return Err(OpsError::invalid(
            op,
            "heads × batch",
            format!("{h} × {bs}"),
            "each at most 65535 (the grid's y and z)",
        ));
    }
    if sk < 1 && bs * sq > 0 {
        return Err(OpsError::invalid(
            op,
            "lengths",
            format!("batch {bs}, s_q {sq}, s_k {sk}"),
            "at least one key for each query (the softmax of no scores is undefined)",
        ));
    }
    if cfg.dtype != ty || cfg.head_dim != d {
        return Err(OpsError::invalid(
            op,
            "config",
            format!("{} with head dim {}", cfg.dtype, cfg.head_dim),
            format!("the tensors' {ty} and head dim {d}"),
        ));
    }
    cfg.check()?;
    check_same(op, "O", o.layout(), &[bs, sq, h, d], ty)?;
    check_same(op, "LSE", lse.layout(), &[bs, h, sq], ScalarType::F32)?;
    let outs = [Operand::of::<B, _>("O", &*o), Operand::of::<B, _>("LSE", &*lse)];
    let ins =
        [Operand::of::<B, _>("Q", q), Operand::of::<B, _>("K", k), Operand::of::<B, _>("V", v)];
    overlap::check(op, &outs, &ins, InPlace::Never)?;
    if bs == 0 || sq == 0 {
        return Ok(()); // no queries: empty outputs, as SDPA
    }
    let scale = scale.unwrap_or(1.0 / (d as f64).sqrt());
    if !(scale.is_finite() && scale > 0.0) {
        return Err(OpsError::invalid(op, "scale", scale, "a positive finite number"));
    }
    let key = KernelKey::new(
        "attention_sm90",
        ty,
        [
            d,
            cfg.causal as i64,
            cfg.bn,
            cfg.consumers * 128
                + cfg.probe as i64 * 64
                + cfg.stages * 8
                + cfg.tma_store as i64 * 4
                + cfg.overlap as i64 * 2
                + cfg.pingpong as i64,
        ],
    );
    let kc = cached(key, || crate::attention_sm90::build_attention_sm90(cfg))?;
    let grid = [
        host::blocks(sq, cfg.block_rows())?,
        grid_u32(op, "heads", h)?,
        grid_u32(op, "batch", bs)?,
    ];
    // the TMA store's map over O: its first element on a 16-byte boundary (its strides are
    // checked when the map is bound)
    let o_map = if cfg.tma_store {
        let ol = o.layout();
        let first = o.base_address() + ol.offset() as u64 * ol.dtype().size_bytes() as u64;
        if !first.is_multiple_of(16) {
            return Err(OpsError::invalid(
                op,
                "O's first element (TMA store)",
                format!("byte {first} (offset {})", ol.offset()),
                "on a 16-byte boundary; the register epilogue (tma_store = false) stores any O",
            ));
        }
        Some(crate::bind::map_arg(ol)?)
    } else {
        None
    };
    let mut args = Bindings::new(&kc)
        .input_mapped("q", "qm", q, b)?
        .input_mapped("k", "km", k, b)?
        .input_mapped("v", "vm", v, b)?
        .output("o", o, b)?
        .output("lse", lse, b)?
        .int("s_k", sk)?
        .int("group", h / hk)?
        .scalar(
            "scale_log2",
            tilekit_ir::Lit::f32((scale * crate::attention_sm90::LOG2_E) as f32),
        )?;
    if let Some(m) = o_map {
        args = args.tensor_map("om", m)?;
    }
    if let Some((p, cap)) = probe {
        let words = p.layout().shape()[0];
        args = args.output_ptr("probe", p, words, b)?.int("probe_cap", cap)?;
    }
    b.launch(&kc, grid, args)
}
