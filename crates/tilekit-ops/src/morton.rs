//! The design documents' Morton swizzle: a row-major image → tiled Morton storage
//! ([`TiledMorton`]: `t × t` tiles in row-major tile order, Z-order inside a tile) and back.
//!
//! ```text
//!   image H × W (row-major)             storage: ceil(H/t)·ceil(W/t) tiles of t² elements
//!   ┌────────┬────────┐                 tile (0,0) │ tile (0,1) │ … each in Z-order
//!   │ t×t    │ t×t    │  ──swizzle──►   0 1 4 5 …
//!   ├────────┼────────┤  ◄─unswizzle─   2 3 6 7 …
//!
//!   both sides are views with top (row, col):
//!     image   = naive(H, W) padded to the block tile                (runtime lengths)
//!     storage = TiledMorton(H_pad, W_pad, t).descriptor() lifted    (H_pad, W_pad = whole tiles)
//!   swizzle: Window(image).load → Window(storage).store; the pad rows/cols of whole tiles read as
//!   zero from the image, so the storage's padding holds 0 (the documented padding rule with
//!   fill 0); unswizzle: the reverse, image stores masked to H × W.
//! ```
//!
//! The storage layout is a build-time value, so the kernels are specialised to `H × W`.
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::{backend::Interp, check::{check, Op}};
//! let o = check(&Interp, Op::Morton { tile: 8, inverse: false }, &[10, 13], ScalarType::F32, 1);
//! assert!(o.unwrap().compare().passed);
//! ```

use tilekit_ir::{Axis, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::swizzle::TiledMorton;
use tilekit_layout::Idx;

use crate::dist;
use crate::error::Result;
use crate::host;
use crate::tile::{View, Window};

/// `swizzle` (image → storage, `inverse = false`) or `unswizzle` for an `h × w` image of `ty`
/// in `t × t` tiles. Params: `image` (2-D tensor, runtime lengths/strides, last stride 1) and
/// `storage` (a pointer of `TiledMorton::storage_len` elements).
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::morton::build(ScalarType::F32, 64, 64, 8, false).unwrap();
/// // the forward swizzle walks storage order: 16-byte stores, 8-byte (x0-pair) loads
/// assert!(k.to_string().contains("st.global.v4.f32") && k.to_string().contains("ld.global.v2.f32"));
/// let inv = tilekit_ops::morton::build(ScalarType::F32, 64, 64, 8, true).unwrap();
/// assert!(inv.to_string().contains("st.global.v4.f32"));
/// assert!(tilekit_ops::morton::build(ScalarType::F32, 64, 64, 6, false).is_err()); // t not a power of two
/// ```
pub fn build(ty: ScalarType, h: i64, w: i64, t: i64, inverse: bool) -> Result<Kernel> {
    host::check_dtype("morton", ty, &host::FLOAT_TYPES)?;
    if !inverse {
        return build_storage_order(ty, h, w, t);
    }
    let geo = TiledMorton::new(h, w, t)?;
    let (hp, wp) = (geo.tiles_h() * t, geo.tiles_w() * t);
    let padded = TiledMorton::new(hp, wp, t)?;
    let (tm, tn) = crate::copy::tile(ty);
    let v = 16 / ty.size_bytes() as i64;
    let name = if inverse { "morton_unswizzle" } else { "morton_swizzle" };
    let b = KernelBuilder::new(name, [crate::copy::THREADS, 1, 1])?;
    let image = b.tensor_param("image", ty, 2)?;
    let storage = b.ptr_param("storage", ty)?;
    let d = dist::row_major(tm, tn, crate::copy::THREADS as i64, v)?;
    let origin = [b.block_id(Axis::Y) * Val::lit(tm), b.block_id(Axis::X) * Val::lit(tn)];
    let iv = View::global(&image, host::vector_for(ty, &[w]))?.pad(&[tm, tn])?;
    let sv = View::new(storage, padded.descriptor()?.lift::<Val>()).pad(&[tm, tn])?;
    let (src, dst) = if inverse { (&sv, &iv) } else { (&iv, &sv) };
    let regs = Window::new(&b, src, &[tm, tn], &origin, &d)?.load(&b)?;
    Window::new(&b, dst, &[tm, tn], &origin, &d)?.store(&b, &regs)?;
    Ok(b.finish()?)
}

/// Tiles of storage one block writes in [`build_storage_order`]: 256 threads × one 16-byte run.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::morton::tiles_per_block(ScalarType::F32, 8), 16);
/// assert_eq!(tilekit_ops::morton::tiles_per_block(ScalarType::BF16, 16), 8);
/// ```
pub fn tiles_per_block(ty: ScalarType, t: i64) -> i64 {
    let runs = t * t / (16 / ty.size_bytes() as i64).min(t * t);
    (crate::copy::THREADS as i64 / runs).max(1)
}

/// The forward swizzle walked in **storage** order, so that its stores are whole 16-byte runs of
/// Z-order (a warp writes whole tiles, contiguously); the loads gather each run's `2 × 2`
/// quads from the image (8-byte pairs where the image allows). Both views have the top
/// `(tile_row, tile_col, z)`:
///
/// ```text
///   storage = packed(tiles_h, tiles_w, t²), guaranteed 16-byte runs on z
///   image   = naive(H, W) padded to whole tiles, chained with
///             TiledMorton::storage_order_adaptor (tile/in-tile unmerges, bits, interleaving merge)
///   block (bx, by): tile row by, tiles bx·T .. bx·T + T  (T = tiles_per_block), every z
/// ```
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::morton::build_storage_order(ScalarType::F32, 64, 64, 8).unwrap();
/// assert!(k.to_string().contains("st.global.v4.f32"));
/// ```
pub fn build_storage_order(ty: ScalarType, h: i64, w: i64, t: i64) -> Result<Kernel> {
    build_storage_order_dir(ty, h, w, t, false)
}

/// [`build_storage_order`] in either direction: `inverse` reads the storage in order (whole
/// 16-byte runs, a warp reads whole tiles) and scatters each run's `2 × 2` quads into the image
/// (8-byte pairs where the image allows) — the unswizzle with the forward kernel's access
/// pattern, whose contiguous side is the read. Same grid as the forward kernel.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::morton::build_storage_order_dir(ScalarType::F32, 64, 64, 8, true).unwrap();
/// assert_eq!(k.name, "morton_unswizzle_storage");
/// assert!(k.to_string().contains("ld.global.v4.f32") && k.to_string().contains("st.global.v2.f32"));
/// ```
pub fn build_storage_order_dir(
    ty: ScalarType,
    h: i64,
    w: i64,
    t: i64,
    inverse: bool,
) -> Result<Kernel> {
    let geo = TiledMorton::new(h, w, t)?;
    let (th, tw) = (geo.tiles_h(), geo.tiles_w());
    let t2 = t * t;
    let vec = (16 / ty.size_bytes() as i64).min(t2);
    if t2 / vec > crate::copy::THREADS as i64 {
        return Err(crate::error::OpsError::invalid(
            "morton swizzle",
            "t",
            t,
            format!(
                "a tile of {t2} elements needs more than {} threads of 16 bytes; use t <= 32",
                crate::copy::THREADS
            ),
        ));
    }
    let tpb = tiles_per_block(ty, t);
    let d = dist::storage_tiles(tpb, t2, crate::copy::THREADS as i64, vec)?;
    let name = if inverse { "morton_unswizzle_storage" } else { "morton_swizzle" };
    let b = KernelBuilder::new(name, [crate::copy::THREADS, 1, 1])?;
    let image = b.tensor_param("image", ty, 2)?;
    let storage = b.ptr_param("storage", ty)?;
    let sdesc =
        tilekit_layout::TensorDescriptor::packed(vec![th, tw, t2], Some(vec))?.lift::<Val>();
    let sv = View::new(storage, sdesc).pad(&[1, tpb, t2])?;
    // the image through the inverse of the tiled Morton layout; pairs along x0 when W allows
    let pair = host::vector_for(ty, &[w]).min(2);
    let iv = View::global(&image, pair)?.pad(&[t, t])?;
    let desc = iv.desc.chain(&geo.storage_order_adaptor()?.lift::<Val>())?;
    let iv = View::new(iv.mem, desc).pad(&[1, tpb, t2])?;
    let origin = [b.block_id(Axis::Y), b.block_id(Axis::X) * Val::lit(tpb), Val::lit(0)];
    let (src, dst) = if inverse { (&sv, &iv) } else { (&iv, &sv) };
    let regs = Window::new(&b, src, &[1, tpb, t2], &origin, &d)?.load(&b)?;
    Window::new(&b, dst, &[1, tpb, t2], &origin, &d)?.store(&b, &regs)?;
    Ok(b.finish()?)
}
