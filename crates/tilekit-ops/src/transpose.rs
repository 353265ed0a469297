//! 2-D transpose through a swizzled shared-memory tile, batched; and the 3-D permutes built on
//! it (and on [`crate::copy`]).
//!
//! ```text
//!   T = 16·V (V = 16 bytes of the type: 64 for f32, 128 for f16/bf16), 256 threads
//!   micro_block(V): each thread holds a V×V block of the tile (V row segments of V elements)
//!
//!   griddepcontrol.wait (programmatic dependent launch: before the first global access)
//!   x tile (r, c) ──load: V-vectors along c──► regs ──store: V-vectors along r──► St[c][r]
//!                                                    (the shared view is St permuted to (r, c):
//!                                                     the traits pick the other Y as vector dim)
//!   (griddepcontrol.launch_dependents between the global loads and the shared stores)
//!   bar.sync
//!   St[c][r] ──load: V-vectors along r──► regs ──store: V-vectors along r──► y tile (c, r)
//!
//!   St row of T elements = 16 chunks of 16 bytes; chunk' = chunk ⊕ ((row / V) mod 16):
//!   a phase of 8 lanes (16-byte accesses) writes rows 4m+j (m = 0..7) of one chunk column →
//!   8 different chunk' → 8 distinct groups of 4 banks: conflict-free; reads take 8 consecutive
//!   chunks of one row → a permutation of them: conflict-free.
//! ```
//!
//! One tile per block leaves a block idle between its loads and its stores, and a grid of
//! large tiles ends in a partial wave (a 262144×256 bf16 matrix is 4096 blocks of 32 KiB of
//! shared memory: about 4.4 waves of 7 blocks on 132 SMs). [`build_tiled`] walks several row
//! tiles per block, block-stride over grid y, with the next tile's global loads issued before
//! the current tile's shared reads and global stores (software pipelining in registers):
//!
//! ```text
//!   block (bx, by, bz), grid y = ⌈R / k⌉ (R row tiles, k = tiles per block): rows by, by + gy, …
//!
//!   griddepcontrol.wait                                   (programmatic dependent launch)
//!   regs ← x tile by                                      prologue
//!   for r = by; r < R; r += gy:                           carried: regs (+ buffer parity)
//!     if r + gy ≥ R: launch_dependents                    last tile: every real load is out
//!     regs ──► St[buf] (transposed)
//!     bar.sync                                            St[buf] complete
//!     prefetch:  next ← x tile r + gy   (masked: past R every vector is invalid, no traffic)
//!     St[buf] ──► out ──► y tile (c, r)                   stores overlap the loads in flight
//!     otherwise: next ← x tile r + gy   (after the stores: one tile of registers fewer; the
//!                                        stores are still in flight while the loads go out)
//!     1 buffer:  bar.sync       (everyone read St before anyone writes it again)
//!     2 buffers: buf ← 1 − buf  (the next iteration's bar.sync orders the reuse: St[buf] is
//!                                written again two iterations on, after every thread passed
//!                                the barrier that follows its reads)
//!     regs ← next
//! ```
//!
//! What it costs (ptxas 13.0, sm_90a, 256 threads): the one-tile kernel holds 34 registers for
//! f32 (micro-block 4) and 56 for bf16 (micro-block 8, so at most 4 blocks per SM by
//! registers, not the 7 its 32 KiB tile would allow); the loop with prefetch holds two tiles:
//! 54 (f32) and 80 (bf16 8, 3 blocks per SM, a few bytes spilled), 48 / 80 with the loads after
//! the stores. Fewer resident blocks against fewer, longer-lived ones: `tilekit tune` decides.
//!
//! Permutes of a 3-D tensor: `out[k] = in[perm[k]]`. When `perm[2] = 2` the last dim stays and
//! the permute is a copy from a strided view; otherwise it is a batched transpose of the
//! (`perm[2]`, 2) plane over the remaining dim — only strides differ, the kernel is the same.
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::{backend::Interp, check::{check, Op}};
//! let o = check(&Interp, Op::Transpose, &[70, 33], ScalarType::F32, 1).unwrap();
//! assert!(o.compare().passed);
//! ```

use tilekit_ir::interp::HostBuffer;
use tilekit_ir::{Axis, CmpOp, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::{Idx, TensorDescriptor, Transform};
use tilekit_tile::traits::{AccessCurve, LoadStoreTraits};
use tilekit_tile::window::walk_generic;
use tilekit_tile::TileDistribution;

use crate::dist;
use crate::error::{OpsError, Result};
use crate::host;
use crate::tile::{for_range, DTile, View, Window};

/// Threads per block.
///
/// ```
/// assert_eq!(tilekit_ops::transpose::THREADS, 256);
/// ```
pub const THREADS: u32 = 256;

/// The vector (elements per 16 bytes) and tile side for `ty`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::transpose::tile(ScalarType::BF16), (8, 128));
/// ```
pub fn tile(ty: ScalarType) -> (i64, i64) {
    let v = 16 / ty.size_bytes() as i64;
    (v, 16 * v)
}

/// The shared tile: `rows × cols` row-major, 16-byte chunks of `v` elements, chunk index XORed
/// with `(row / group) mod (cols / v)` — built from transforms (unmerge, xor, merge).
///
/// ```
/// let d = tilekit_ops::transpose::xor_swizzled(64, 64, 4, 4).unwrap();
/// assert_eq!(d.calculate_offset(&[4, 0]).unwrap(), 4 * 64 + 4);      // row 4: chunk 0 ⊕ 1 = 1
/// assert_eq!(d.top_safe_vector_lengths_strides(), (vec![-1, 4], vec![-1, 1]));
/// ```
pub fn xor_swizzled(rows: i64, cols: i64, v: i64, group: i64) -> Result<TensorDescriptor<i64>> {
    if v < 1 || cols % v != 0 || group < 1 || rows % group != 0 {
        return Err(OpsError::invalid(
            "xor swizzled tile",
            "rows/cols/v/group",
            format!("{rows}/{cols}/{v}/{group}"),
            "v must divide cols and group must divide rows",
        ));
    }
    let (hi, chunks) = (rows / group, cols / v);
    let storage = TensorDescriptor::packed(vec![hi, group, chunks, v], Some(v))?;
    let sw = storage.transform(
        vec![
            Transform::xor(hi, chunks)?,
            Transform::pass_through(group)?,
            Transform::pass_through(v)?,
        ],
        vec![vec![0, 2], vec![1], vec![3]],
        vec![vec![0, 2], vec![1], vec![3]],
    )?;
    Ok(sw.transform(
        vec![Transform::merge(vec![hi, group])?, Transform::merge(vec![chunks, v])?],
        vec![vec![0, 1], vec![2, 3]],
        vec![vec![0], vec![1]],
    )?)
}

/// `buffers` copies of [`xor_swizzled`] one after another: top = (buffer, row, col), each
/// buffer `rows · cols` elements, swizzled alike.
///
/// ```
/// let d = tilekit_ops::transpose::xor_swizzled_buffers(2, 64, 64, 4, 4).unwrap();
/// assert_eq!(d.calculate_offset(&[1, 4, 0]).unwrap(), 64 * 64 + 4 * 64 + 4);
/// assert_eq!(d.element_space_size(), 2 * 64 * 64);
/// assert!(tilekit_ops::transpose::xor_swizzled_buffers(0, 64, 64, 4, 4).is_err());
/// ```
pub fn xor_swizzled_buffers(
    buffers: i64,
    rows: i64,
    cols: i64,
    v: i64,
    group: i64,
) -> Result<TensorDescriptor<i64>> {
    if buffers < 1 || v < 1 || cols % v != 0 || group < 1 || rows % group != 0 {
        return Err(OpsError::invalid(
            "xor swizzled buffers",
            "buffers/rows/cols/v/group",
            format!("{buffers}/{rows}/{cols}/{v}/{group}"),
            "buffers must be >= 1, v must divide cols and group must divide rows",
        ));
    }
    let (hi, chunks) = (rows / group, cols / v);
    let storage = TensorDescriptor::packed(vec![buffers, hi, group, chunks, v], Some(v))?;
    let sw = storage.transform(
        vec![
            Transform::pass_through(buffers)?,
            Transform::xor(hi, chunks)?,
            Transform::pass_through(group)?,
            Transform::pass_through(v)?,
        ],
        vec![vec![0], vec![1, 3], vec![2], vec![4]],
        vec![vec![0], vec![1, 3], vec![2], vec![4]],
    )?;
    Ok(sw.transform(
        vec![
            Transform::pass_through(buffers)?,
            Transform::merge(vec![hi, group])?,
            Transform::merge(vec![chunks, v])?,
        ],
        vec![vec![0], vec![1, 2], vec![3, 4]],
        vec![vec![0], vec![1], vec![2]],
    )?)
}

/// The shared tile descriptor the kernel uses for `ty` (top = (row, col) of `St`).
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::transpose::shared_tile(ScalarType::F32).unwrap().element_space_size(), 64 * 64);
/// ```
pub fn shared_tile(ty: ScalarType) -> Result<TensorDescriptor<i64>> {
    let (v, t) = tile(ty);
    xor_swizzled(t, t, v, v)
}

/// `y[b, j, i] = x[b, i, j]`: params `x` (batch, M, N) and `y` (batch, N, M), runtime lengths
/// and strides, last strides 1; `vx`/`vy` the views' vector guarantees.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::transpose::build(ScalarType::F32, 4, 4).unwrap();
/// let text = k.to_string();
/// assert!(text.contains("ld.global.v4.f32") && text.contains("st.shared.v4.f32") && text.contains("bar.sync"));
/// // launchable as a programmatic dependent: the wait comes before every global access
/// assert!(k.waits_on_prior_grid());
/// ```
pub fn build(ty: ScalarType, vx: i64, vy: i64) -> Result<Kernel> {
    build_micro(ty, tile(ty).0, vx, vy)
}

/// [`build`] with a `v × v` micro-block per thread (tile `16·v` square, `v`-element accesses):
/// `v` is a power of two up to 16 bytes of `ty`. Smaller tiles mean more blocks (less tail on
/// small tensors) and shorter accesses; `tilekit tune` compares them.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::transpose::build_micro(ScalarType::BF16, 4, 8, 8).unwrap();
/// assert!(k.to_string().contains("ld.global.v4.bf16"));
/// assert!(tilekit_ops::transpose::build_micro(ScalarType::BF16, 16, 8, 8).is_err());
/// ```
pub fn build_micro(ty: ScalarType, v: i64, vx: i64, vy: i64) -> Result<Kernel> {
    build_micro_indexed(ty, v, vx, vy, ScalarType::I32)
}

fn build_micro_indexed(
    ty: ScalarType,
    v: i64,
    vx: i64,
    vy: i64,
    index: ScalarType,
) -> Result<Kernel> {
    check_micro(ty, v)?;
    let t = 16 * v;
    let (vx, vy) = (vx.min(v), vy.min(v));
    let b = KernelBuilder::new("transpose", [THREADS, 1, 1])?;
    b.set_index_type(index)?;
    let x = b.tensor_param("x", ty, 3)?;
    let y = b.tensor_param("y", ty, 3)?;
    let d = dist::micro_block(v)?;
    let z = b.block_id(Axis::Z);
    let (r0, c0) = (b.block_id(Axis::Y) * Val::lit(t), b.block_id(Axis::X) * Val::lit(t));
    let xv = View::global(&x, vx)?.freeze(0, z.clone())?.pad(&[t, t])?;
    let yv = View::global(&y, vy)?.freeze(0, z)?.pad(&[t, t])?;
    let st = View::shared(&b, "tile", ty, &xor_swizzled(t, t, v, v)?)?; // top (c, r)
    let zero = [Val::lit(0), Val::lit(0)];
    b.grid_dependency_wait(); // programmatic dependent launch: before the first global access
    let regs = Window::new(&b, &xv, &[t, t], &[r0.clone(), c0.clone()], &d)?.load(&b)?;
    b.launch_dependents(); // the block's loads are out: the next grid may launch
    Window::new(&b, &st.clone().permute(&[1, 0])?, &[t, t], &zero, &d)?.store(&b, &regs)?;
    b.barrier();
    let out = Window::new(&b, &st, &[t, t], &zero, &d)?.load(&b)?;
    Window::new(&b, &yv, &[t, t], &[c0, r0], &d)?.store(&b, &out)?;
    Ok(b.finish()?)
}

fn check_micro(ty: ScalarType, v: i64) -> Result<()> {
    host::check_dtype("transpose", ty, &host::FLOAT_TYPES)?;
    let max = 16 / ty.size_bytes() as i64;
    if v < 1 || v > max || v & (v - 1) != 0 {
        return Err(OpsError::invalid(
            "transpose",
            "micro-block",
            v,
            format!("a power of two in 1..={max}"),
        ));
    }
    Ok(())
}

/// How the transpose walks its tiles: `tiles_per_block` row tiles per block (1 = one tile per
/// block, [`build_micro`]; more = [`build_tiled`], grid y shrunk to `⌈R / tiles_per_block⌉`)
/// through `buffers` shared tiles (1 or 2), the next tile's loads issued before the current
/// tile's stores when `prefetch` (buffers and prefetch matter only when `tiles_per_block > 1`).
///
/// ```
/// use tilekit_ops::transpose::TransposeLoop;
/// let one = TransposeLoop { tiles_per_block: 1, buffers: 1, prefetch: true, min_blocks: 0, cache: tilekit_ir::GlobalCache::Default };
/// assert_eq!(TransposeLoop::default(), one);
/// let l = TransposeLoop { tiles_per_block: 4, buffers: 2, prefetch: false, min_blocks: 0, cache: tilekit_ir::GlobalCache::Default };
/// assert_eq!(l.to_string(), "4 tiles/block, 2 buffers, loads after stores");
/// assert_eq!(one.to_string(), "1 tile/block");
/// assert_eq!(TransposeLoop { min_blocks: 4, ..one }.to_string(), "1 tile/block, ≥ 4 blocks/SM");
/// let cs = TransposeLoop { cache: tilekit_ir::GlobalCache::Streaming, ..one };
/// assert_eq!(cs.to_string(), "1 tile/block, streaming");
/// assert!(TransposeLoop { tiles_per_block: 0, ..one }.check().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TransposeLoop {
    /// Row tiles each block transposes (1..=[`MAX_TILES_PER_BLOCK`]).
    pub tiles_per_block: u32,
    /// Shared tiles the loop alternates between (1 or 2).
    pub buffers: u32,
    /// The next tile's global loads go out before the current tile's stores (two tiles of
    /// registers live); otherwise right after them.
    #[serde(default = "yes")]
    pub prefetch: bool,
    /// Blocks every SM must hold at once (`.minnctapersm`, so the compiler caps the registers
    /// a thread gets: the bf16 one-tile kernel takes 72 from the driver's JIT, 3 blocks an SM,
    /// and fits 4 at 64); `0` leaves it to the compiler. At most [`MAX_MIN_BLOCKS`].
    #[serde(default)]
    pub min_blocks: u32,
    /// The cache operators of the kernel's global loads and stores (`tilekit_ir::GlobalCache`:
    /// e.g. streaming, `.cs`, for data touched once).
    #[serde(default)]
    pub cache: tilekit_ir::GlobalCache,
}

/// The most blocks per SM a [`TransposeLoop`] may ask for: 8 blocks of [`THREADS`] fill an
/// SM's 2048 threads.
///
/// ```
/// assert_eq!(tilekit_ops::transpose::MAX_MIN_BLOCKS, 8);
/// ```
pub const MAX_MIN_BLOCKS: u32 = 8;

fn yes() -> bool {
    true
}

/// The most row tiles one transpose block walks.
///
/// ```
/// assert_eq!(tilekit_ops::transpose::MAX_TILES_PER_BLOCK, 64);
/// ```
pub const MAX_TILES_PER_BLOCK: u32 = 64;

impl Default for TransposeLoop {
    fn default() -> Self {
        TransposeLoop {
            tiles_per_block: 1,
            buffers: 1,
            prefetch: true,
            min_blocks: 0,
            cache: tilekit_ir::GlobalCache::Default,
        }
    }
}

impl std::fmt::Display for TransposeLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.tiles_per_block == 1 {
            write!(f, "1 tile/block")?;
        } else {
            let s = if self.buffers == 1 { "" } else { "s" };
            let order = if self.prefetch { "prefetch" } else { "loads after stores" };
            write!(f, "{} tiles/block, {} buffer{s}, {order}", self.tiles_per_block, self.buffers)?;
        }
        if self.min_blocks > 0 {
            write!(f, ", ≥ {} blocks/SM", self.min_blocks)?;
        }
        if self.cache != tilekit_ir::GlobalCache::Default {
            write!(f, ", {}", self.cache)?;
        }
        Ok(())
    }
}

impl TransposeLoop {
    /// A typed error naming the value when a field is out of range.
    ///
    /// ```
    /// use tilekit_ops::transpose::TransposeLoop;
    /// let e = TransposeLoop { buffers: 3, ..TransposeLoop::default() }.check().unwrap_err();
    /// assert!(e.to_string().contains("buffers"), "{e}");
    /// let e = TransposeLoop { min_blocks: 9, ..TransposeLoop::default() }.check().unwrap_err();
    /// assert!(e.to_string().contains("min_blocks") && e.to_string().contains("0..=8"), "{e}");
    /// let l = TransposeLoop { tiles_per_block: 8, buffers: 2, prefetch: false, min_blocks: 4, ..TransposeLoop::default() };
    /// assert!(l.check().is_ok());
    /// ```
    pub fn check(&self) -> Result<()> {
        if !(1..=MAX_TILES_PER_BLOCK).contains(&self.tiles_per_block) {
            return Err(OpsError::invalid(
                "transpose loop",
                "tiles_per_block",
                self.tiles_per_block,
                format!("1..={MAX_TILES_PER_BLOCK}"),
            ));
        }
        if !(1..=2).contains(&self.buffers) {
            return Err(OpsError::invalid("transpose loop", "buffers", self.buffers, "1 or 2"));
        }
        if self.min_blocks > MAX_MIN_BLOCKS {
            return Err(OpsError::invalid(
                "transpose loop",
                "min_blocks",
                self.min_blocks,
                format!("0..={MAX_MIN_BLOCKS} (0: the compiler's choice)"),
            ));
        }
        Ok(())
    }

    /// Grid y for `row_tiles` tiles of rows: `⌈row_tiles / tiles_per_block⌉` (at least 1).
    ///
    /// ```
    /// use tilekit_ops::transpose::TransposeLoop;
    /// let l = TransposeLoop { tiles_per_block: 5, ..TransposeLoop::default() };
    /// assert_eq!((l.grid_rows(2048), l.grid_rows(3), l.grid_rows(0)), (410, 1, 0));
    /// ```
    pub fn grid_rows(&self, row_tiles: u32) -> u32 {
        row_tiles.div_ceil(self.tiles_per_block.max(1))
    }
}

/// [`build_micro`] walking several row tiles per block: block (bx, by, bz) transposes row tiles
/// `by, by + gy, by + 2·gy, …` (gy = grid y, read from `nctaid.y`) of column tile `bx` and batch
/// `bz`, through `buffers` (1 or 2) shared tiles, the next tile's loads issued before the
/// current tile's stores when `prefetch`, else right after them (see the module's picture). Launch it with grid y = ⌈R / k⌉ for k tiles per
/// block ([`TransposeLoop::grid_rows`]); any grid y from 1 to R is correct.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::transpose::build_tiled(ScalarType::BF16, 8, 8, 8, 2, true).unwrap();
/// let text = k.to_string();
/// assert!(text.contains("for ") && text.contains("ld.global.v8.bf16"), "{text}");
/// assert_eq!(k.shared_bytes(), 2 * 128 * 128 * 2);
/// assert!(k.waits_on_prior_grid() && text.contains("griddepcontrol.launch_dependents"));
/// assert!(tilekit_ops::transpose::build_tiled(ScalarType::F32, 4, 4, 4, 3, true).is_err());
/// ```
pub fn build_tiled(
    ty: ScalarType,
    v: i64,
    vx: i64,
    vy: i64,
    buffers: u32,
    prefetch: bool,
) -> Result<Kernel> {
    build_tiled_indexed(ty, v, vx, vy, (buffers, prefetch), ScalarType::I32)
}

fn build_tiled_indexed(
    ty: ScalarType,
    v: i64,
    vx: i64,
    vy: i64,
    (buffers, prefetch): (u32, bool),
    index: ScalarType,
) -> Result<Kernel> {
    check_micro(ty, v)?;
    TransposeLoop {
        tiles_per_block: 2,
        buffers,
        prefetch,
        min_blocks: 0,
        cache: tilekit_ir::GlobalCache::Default,
    }
    .check()?;
    let t = 16 * v;
    let (vx, vy) = (vx.min(v), vy.min(v));
    let b = KernelBuilder::new("transpose_tiled", [THREADS, 1, 1])?;
    b.set_index_type(index)?;
    let x = b.tensor_param("x", ty, 3)?;
    let y = b.tensor_param("y", ty, 3)?;
    let d = dist::micro_block(v)?;
    let z = b.block_id(Axis::Z);
    let c0 = b.block_id(Axis::X) * Val::lit(t);
    let xv = View::global(&x, vx)?.freeze(0, z.clone())?.pad(&[t, t])?;
    let yv = View::global(&y, vy)?.freeze(0, z)?.pad(&[t, t])?;
    // top (buffer, c, r)
    let st = View::shared(&b, "tile", ty, &xor_swizzled_buffers(buffers as i64, t, t, v, v)?)?;
    let zero = [Val::lit(0), Val::lit(0)];
    // the two shared windows of one buffer: the transposed store and the load
    let shared = |b: &KernelBuilder, buf: Val| -> Result<(Window, Window)> {
        let sb = st.clone().freeze(0, buf)?;
        let w_in = Window::new(b, &sb.clone().permute(&[1, 0])?, &[t, t], &zero, &d)?;
        Ok((w_in, Window::new(b, &sb, &[t, t], &zero, &d)?))
    };
    let one_buffer = if buffers == 1 { Some(shared(&b, Val::lit(0))?) } else { None };
    let row_tiles = (x.lengths[1].clone() + Val::lit(t - 1)) / Val::lit(t);
    // the loop counts tiles in 32 bits: a launch walks at most 65535 tiles of rows (the
    // launcher splits taller tensors), whatever the index type of the lengths
    let row_tiles =
        if index == ScalarType::I32 { row_tiles } else { b.cvt(&row_tiles, ScalarType::I32)? };
    let (first, stride) = (b.block_id(Axis::Y), b.grid_dim(Axis::Y));
    let load = |b: &KernelBuilder, r: &Val| -> Result<DTile> {
        Ok(Window::new(b, &xv, &[t, t], &[r.clone() * Val::lit(t), c0.clone()], &d)?.load(b)?)
    };
    b.note("transpose tiled: prologue loads the block's first tile");
    b.grid_dependency_wait(); // programmatic dependent launch: before the first global access
    let mut init = load(&b, &first)?.regs;
    let n = init.len();
    if buffers == 2 {
        init.push(b.i32(0));
    }
    for_range(&b, &first, &row_tiles, &stride, &init, |b, r, carried| {
        let cur = DTile { dist: d.clone(), elem: ty, regs: carried[..n].to_vec() };
        // the last iteration: every load that moves data has been issued (this iteration's
        // prefetch is masked off), so the next grid may launch
        let last = b.cmp(CmpOp::Ge, &(r.clone() + stride.clone()), &row_tiles)?;
        b.if_then(&last, |b| {
            b.launch_dependents();
            Ok(())
        })?;
        let (w_in, w_out) = match &one_buffer {
            Some(w) => w.clone(),
            None => shared(b, carried[n].clone())?,
        };
        w_in.store(b, &cur)?;
        b.barrier();
        let next_row = r.clone() + stride.clone();
        let early = if prefetch {
            b.note("transpose tiled: the next tile's loads go out before this tile's stores");
            Some(load(b, &next_row)?)
        } else {
            None
        };
        let out = w_out.load(b)?;
        Window::new(b, &yv, &[t, t], &[c0.clone(), r * Val::lit(t)], &d)?.store(b, &out)?;
        let next = match early {
            Some(n) => n,
            None => load(b, &next_row)?,
        };
        let mut carry = next.regs;
        if buffers == 1 {
            b.barrier();
        } else {
            carry.push(Val::lit(1) - carried[n].clone());
        }
        Ok(carry)
    })?;
    Ok(b.finish()?)
}

/// The transpose kernel a [`TransposeLoop`] names: [`build_micro`] for one tile a block, else
/// [`build_tiled`] with its buffers and load order; with `min_blocks` set, the kernel asks
/// every SM to hold that many blocks (`.minnctapersm`).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::transpose::{build_looped, TransposeLoop};
/// let lp = TransposeLoop { min_blocks: 4, ..TransposeLoop::default() };
/// let k = build_looped(ScalarType::BF16, 8, 8, 8, lp).unwrap();
/// assert_eq!((k.name.as_str(), k.min_blocks_per_sm), ("transpose", 4));
/// let cs = TransposeLoop { cache: tilekit_ir::GlobalCache::Streaming, ..lp };
/// let k = build_looped(ScalarType::BF16, 8, 8, 8, cs).unwrap();
/// assert_eq!(k.global_cache, tilekit_ir::GlobalCache::Streaming);
/// let two = TransposeLoop { tiles_per_block: 2, ..TransposeLoop::default() };
/// assert_eq!(build_looped(ScalarType::F32, 4, 4, 4, two).unwrap().name, "transpose_tiled");
/// assert!(build_looped(ScalarType::F32, 4, 4, 4, TransposeLoop { min_blocks: 9, ..two }).is_err());
/// ```
pub fn build_looped(ty: ScalarType, v: i64, vx: i64, vy: i64, lp: TransposeLoop) -> Result<Kernel> {
    build_looped_indexed(ty, v, vx, vy, lp, ScalarType::I32)
}

/// [`build_looped`] with lengths, strides and offsets of `index` type (`i32`, or `i64` for
/// tensors past 2^31 elements: [`host::index_type`] picks it).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::transpose::{build_looped_indexed, TransposeLoop};
/// let k = build_looped_indexed(ScalarType::BF16, 8, 8, 8, TransposeLoop::default(), ScalarType::I64).unwrap();
/// let i64 = tilekit_ir::ParamKind::Scalar(ScalarType::I64);
/// assert!(k.params.iter().filter(|p| p.name.contains(".len")).all(|p| p.kind == i64));
/// ```
pub fn build_looped_indexed(
    ty: ScalarType,
    v: i64,
    vx: i64,
    vy: i64,
    lp: TransposeLoop,
    index: ScalarType,
) -> Result<Kernel> {
    lp.check()?;
    let mut k = if lp.tiles_per_block == 1 {
        build_micro_indexed(ty, v, vx, vy, index)?
    } else {
        build_tiled_indexed(ty, v, vx, vy, (lp.buffers, lp.prefetch), index)?
    };
    k.min_blocks_per_sm = lp.min_blocks;
    k.global_cache = lp.cache;
    Ok(k)
}

/// CPU reference of a 3-D permute: `out[o] = in[i]` with `o[k] = i[perm[k]]`, element bits
/// copied from the row-major input buffer into a new one.
///
/// ```
/// use tilekit_ir::interp::HostBuffer;
/// let x = HostBuffer::from_f32(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);   // 1×2×3
/// let y = tilekit_ops::transpose::permute_reference(&x, &[1, 2, 3], &[0, 2, 1]).unwrap();
/// assert_eq!(y.to_f32().unwrap(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
/// assert!(tilekit_ops::transpose::permute_reference(&x, &[1, 2, 4], &[0, 2, 1]).is_err());
/// ```
pub fn permute_reference(x: &HostBuffer, shape: &[i64], perm: &[usize]) -> Result<HostBuffer> {
    check_perm(perm)?;
    let n = host::elements("permute reference", shape)?;
    if shape.len() != 3 || n != x.len() as i64 {
        return Err(OpsError::invalid(
            "permute reference",
            "shape",
            format!("{shape:?}"),
            format!("3 lengths whose product is the input's {} elements", x.len()),
        ));
    }
    let is = host::strides(shape);
    let out_shape: Vec<i64> = perm.iter().map(|&p| shape[p]).collect();
    let (d1, d2) = (out_shape[1], out_shape[2]);
    host::fill_with(x.elem(), x.len(), |o| {
        let o = o as i64;
        let (i0, i1, i2) = (o / (d1 * d2), (o / d2) % d1, o % d2);
        x.bits((i0 * is[perm[0]] + i1 * is[perm[1]] + i2 * is[perm[2]]) as usize)
    })
}

fn check_perm(perm: &[usize]) -> Result<()> {
    let mut seen = [false; 3];
    if perm.len() != 3 || perm.iter().any(|&p| p > 2 || std::mem::replace(&mut seen[p], true)) {
        return Err(OpsError::invalid(
            "permute",
            "perm",
            format!("{perm:?}"),
            "a permutation of 0, 1, 2",
        ));
    }
    Ok(())
}

/// The worst bank conflict of the kernel's shared accesses for `ty`: for every warp and every
/// shared access of the two shared windows (the transposed store and the load), the lanes are
/// split into phases (32 / 16 / 8 lanes for 4- / 8- / 16-byte accesses); within a phase, the
/// number of distinct 4-byte words that fall in one bank is counted. 1 = conflict-free.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::transpose::bank_conflicts(ScalarType::F32).unwrap(), 1);
/// ```
pub fn bank_conflicts(ty: ScalarType) -> Result<usize> {
    bank_conflicts_with(ty, &shared_tile(ty)?)
}

/// [`bank_conflicts`] for another layout of the `T × T` shared tile (e.g. unswizzled).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_layout::TensorDescriptor;
/// let plain = TensorDescriptor::packed(vec![64i64, 64], Some(4)).unwrap();
/// assert_eq!(tilekit_ops::transpose::bank_conflicts_with(ScalarType::F32, &plain).unwrap(), 8);
/// ```
pub fn bank_conflicts_with(ty: ScalarType, st: &TensorDescriptor<i64>) -> Result<usize> {
    let (v, t) = tile(ty);
    let d = dist::micro_block(v)?;
    let st = st.clone();
    let st_rc = st.transform(
        vec![Transform::pass_through(t)?, Transform::pass_through(t)?],
        vec![vec![1], vec![0]],
        vec![vec![0], vec![1]],
    )?;
    let size = ty.size_bytes() as i64;
    Ok(worst_conflict(&d, &st_rc, size)?.max(worst_conflict(&d, &st, size)?))
}

/// The worst conflict degree of one shared window (see [`bank_conflicts`]).
#[allow(clippy::needless_range_loop)] // a = access number, th = thread: both index `walks`
fn worst_conflict(d: &TileDistribution, desc: &TensorDescriptor<i64>, size: i64) -> Result<usize> {
    let traits = LoadStoreTraits::new(d, desc, AccessCurve::Linear)?;
    let bytes = traits.scalar_per_vector() * size;
    let lanes_per_phase = (128 / bytes.max(4)).min(32) as usize;
    let adaptor = d.ps_ys_to_xs();
    let walks = (0..d.num_threads())
        .map(|p| walk_generic(adaptor, 1, &traits, desc, &[0, 0], &[p]))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut worst = 1;
    for w in 0..(d.num_threads() as usize / 32) {
        for a in 0..traits.num_access() as usize {
            for phase in 0..32 / lanes_per_phase {
                let mut banks: Vec<Vec<i64>> = vec![vec![]; 32];
                for l in 0..lanes_per_phase {
                    let th = w * 32 + phase * lanes_per_phase + l;
                    let addr = walks[th][a].offset * size;
                    for word in addr / 4..(addr + bytes + 3) / 4 {
                        let bank = &mut banks[(word % 32) as usize];
                        if !bank.contains(&word) {
                            bank.push(word);
                        }
                    }
                }
                worst = worst.max(banks.iter().map(Vec::len).max().unwrap_or(1));
            }
        }
    }
    Ok(worst)
}
