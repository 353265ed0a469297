//! Swizzled layouts as descriptors: Morton (Z-order) tiles, tiled Morton images, and the XOR
//! swizzles of Hopper's shared memory (TMA and wgmma's 32/64/128-byte modes).
//!
//! None of these needs a new transform. Morton is unmerge-into-bits followed by a merge of the
//! interleaved bits (the reference has no Morton transform either, SEMANTICS §14); the Hopper
//! swizzles are the reference's `xor` on a 16-byte-chunk dimension:
//!
//! ```text
//!   Morton 4×4 (z of each cell)          128-byte swizzle, fp16, 8 rows × 64 cols
//!                                        (16-byte chunk index stored at each (row, chunk))
//!    0  1  4  5                            row 0:  0 1 2 3 4 5 6 7
//!    2  3  6  7                            row 1:  1 0 3 2 5 4 7 6
//!    8  9 12 13                            row 2:  2 3 0 1 6 7 4 5
//!   10 11 14 15                            row 3:  3 2 1 0 7 6 5 4      chunk' = chunk ⊕ (row mod 8)
//!                                            …
//!   row → (y1, y0), col → (x1, x0)
//!   z = merge(y1, x1, y0, x0)
//! ```
//!
//! Hopper defines its swizzle modes on byte addresses (CUTLASS `Swizzle<B, 4, 3>`): bits
//! `[4, 4+B)` (the 16-byte chunk) are XORed with bits `[7, 7+B)`, `B` = 1, 2, 3 for the 32-, 64-
//! and 128-byte modes. [`HopperSwizzle::swizzle_byte_offset`] is that formula;
//! [`HopperSwizzle::descriptor`] builds the same layout from transforms, and the tests check
//! that both agree everywhere.

use crate::descriptor::TensorDescriptor;
use crate::error::{LayoutError, Result};
use crate::transform::Transform;

fn log2_exact(ctx: &str, field: &str, v: i64) -> Result<u32> {
    if v < 1 || v & (v - 1) != 0 {
        return Err(LayoutError::invalid(ctx, field, v, "must be a power of two >= 1"));
    }
    Ok(v.trailing_zeros())
}

/// The Morton (Z-order) layout of a `2^row_bits × 2^col_bits` row-major tile as a descriptor:
/// top = the Z index, offset = `row · 2^col_bits + col`. Bits interleave from the least
/// significant, column bit first (`z = … y1 x1 y0 x0`); the extra high bits of the longer side
/// come last.
///
/// ```
/// use tilekit_layout::swizzle::morton_tile;
/// let d = morton_tile(2, 2).unwrap();     // 4×4
/// let offs: Vec<i64> = (0..8).map(|z| d.calculate_offset(&[z]).unwrap()).collect();
/// assert_eq!(offs, [0, 1, 4, 5, 2, 3, 6, 7]);
/// ```
pub fn morton_tile(row_bits: u32, col_bits: u32) -> Result<TensorDescriptor<i64>> {
    let ctx = "morton tile";
    if row_bits + col_bits > 40 || row_bits + col_bits == 0 {
        return Err(LayoutError::invalid(
            ctx,
            "row_bits + col_bits",
            row_bits + col_bits,
            "must be 1..=40",
        ));
    }
    let (rows, cols) = (1i64 << row_bits, 1i64 << col_bits);
    let (rb, cb) = (row_bits as usize, col_bits as usize);
    let base = TensorDescriptor::naive(vec![rows, cols], vec![cols, 1], None)?;
    let mut transforms = Vec::new();
    let mut lower = Vec::new();
    let mut upper = Vec::new();
    // each coordinate becomes its bits (most significant first); labels rb+cb..: assigned below
    let mut labels_row = Vec::new();
    let mut labels_col = Vec::new();
    if rb > 0 {
        transforms.push(Transform::unmerge(vec![2; rb])?);
        lower.push(vec![0]);
        labels_row = (0..rb).collect::<Vec<_>>();
        upper.push(labels_row.clone());
    }
    if cb > 0 {
        transforms.push(Transform::unmerge(vec![2; cb])?);
        lower.push(vec![1]);
        labels_col = (rb..rb + cb).collect::<Vec<_>>();
        upper.push(labels_col.clone());
    }
    if rb == 0 {
        transforms.push(Transform::freeze(0)?);
        lower.push(vec![0]);
        upper.push(vec![]);
    }
    if cb == 0 {
        transforms.push(Transform::freeze(0)?);
        lower.push(vec![1]);
        upper.push(vec![]);
    }
    let bits = base.transform(transforms, lower, upper)?;
    // interleave from the least significant bit: position k from the bottom takes x_k then y_k
    let mut order_lsb_first = Vec::new();
    for k in 0..rb.max(cb) {
        if k < cb {
            order_lsb_first.push(labels_col[cb - 1 - k]);
        }
        if k < rb {
            order_lsb_first.push(labels_row[rb - 1 - k]);
        }
    }
    order_lsb_first.reverse();
    bits.transform(vec![Transform::merge(vec![2; rb + cb])?], vec![order_lsb_first], vec![vec![0]])
}

/// Geometry of a tiled Morton image: `T×T` tiles stored one after another in row-major tile
/// order, Morton order inside each tile.
///
/// **Padding rule**: an image whose height or width is not a multiple of `T` is padded up to whole
/// tiles (`ceil(H/T)·T × ceil(W/T)·T`); padding elements occupy storage (filled with a value the
/// caller chooses when swizzling) and are skipped when unswizzling. Storage therefore holds
/// `ceil(H/T)·ceil(W/T)·T²` elements.
///
/// ```
/// use tilekit_layout::swizzle::TiledMorton;
/// let t = TiledMorton::new(5, 7, 4).unwrap();
/// assert_eq!((t.tiles_h(), t.tiles_w(), t.storage_len()), (2, 2, 64));
/// assert_eq!(t.offset(0, 5), 16 + 1);   // tile (0, 1), in-tile (0, 1) = z 1
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TiledMorton {
    height: i64,
    width: i64,
    tile: i64,
    tile_bits: u32,
}

impl TiledMorton {
    /// An `height × width` image in `tile × tile` Morton tiles (`tile` a power of two). The
    /// storage (`ceil(H/T)·ceil(W/T)·T²` elements, see [`TiledMorton::storage_len`]) and the
    /// image (`H·W`) must fit in `i64`: a [`LayoutError::Overflow`] otherwise.
    ///
    /// ```
    /// use tilekit_layout::swizzle::TiledMorton;
    /// assert!(TiledMorton::new(16, 16, 6).is_err());
    /// assert_eq!(
    ///     TiledMorton::new(1 << 40, 1 << 40, 4).unwrap_err().to_string(),
    ///     "tiled morton image: the storage ceil(H/T)·ceil(W/T)·T² overflows i64: \
    ///      height 1099511627776, width 1099511627776, tile 4"
    /// );
    /// ```
    pub fn new(height: i64, width: i64, tile: i64) -> Result<Self> {
        let ctx = "tiled morton image";
        if height < 1 {
            return Err(LayoutError::invalid(ctx, "height", height, "must be >= 1"));
        }
        if width < 1 {
            return Err(LayoutError::invalid(ctx, "width", width, "must be >= 1"));
        }
        let tile_bits = log2_exact(ctx, "tile", tile)?;
        if tile_bits > 16 {
            return Err(LayoutError::invalid(ctx, "tile", tile, "must be at most 65536"));
        }
        let ceil = |v: i64| v / tile + i64::from(v % tile != 0);
        let storage = [ceil(height), ceil(width), tile, tile];
        if crate::idx::checked_product(&storage).is_none() || height.checked_mul(width).is_none() {
            return Err(LayoutError::overflow(
                ctx,
                "the storage ceil(H/T)·ceil(W/T)·T²",
                format!("height {height}, width {width}, tile {tile}"),
            ));
        }
        Ok(TiledMorton { height, width, tile, tile_bits })
    }
    /// Image height.
    pub fn height(&self) -> i64 {
        self.height
    }
    /// Image width.
    pub fn width(&self) -> i64 {
        self.width
    }
    /// Tile side.
    pub fn tile(&self) -> i64 {
        self.tile
    }
    /// Tiles down the image (`ceil(H/T)`).
    pub fn tiles_h(&self) -> i64 {
        self.height / self.tile + i64::from(self.height % self.tile != 0)
    }
    /// Tiles across the image (`ceil(W/T)`).
    pub fn tiles_w(&self) -> i64 {
        self.width / self.tile + i64::from(self.width % self.tile != 0)
    }
    /// Elements of storage, padding included (fits in `i64`: checked by [`TiledMorton::new`]).
    pub fn storage_len(&self) -> i64 {
        self.tiles_h() * self.tiles_w() * self.tile * self.tile
    }

    /// Storage offset of image element `(row, col)`, by bit interleaving (the reference for the
    /// descriptor). Meaningful for elements of the image (`0 ≤ row < H`, `0 ≤ col < W`).
    ///
    /// ```
    /// use tilekit_layout::swizzle::TiledMorton;
    /// let t = TiledMorton::new(8, 8, 4).unwrap();
    /// assert_eq!(t.offset(1, 2), 6);
    /// ```
    pub fn offset(&self, row: i64, col: i64) -> i64 {
        let (tr, ir) = (row / self.tile, row % self.tile);
        let (tc, ic) = (col / self.tile, col % self.tile);
        let mut z = 0i64;
        for b in 0..self.tile_bits {
            z |= ((ic >> b) & 1) << (2 * b);
            z |= ((ir >> b) & 1) << (2 * b + 1);
        }
        // exact for elements of the image (the storage fits: checked by `new`); wrapping so that
        // an index outside the image gives a meaningless offset rather than an overflow panic
        let tile_start = tr.wrapping_mul(self.tiles_w()).wrapping_add(tc);
        tile_start.wrapping_mul(self.tile * self.tile).wrapping_add(z)
    }

    /// The layout as a descriptor: top = `(row, col)` over the image (`H × W`), bottom = the
    /// storage offset. Built from transforms only: the storage `(tile_row, tile_col, z)` is
    /// packed, `z` unmerges into interleaved bits, the bits merge into in-tile row and column,
    /// and tile and in-tile indices merge into image coordinates; slices cut the padding off.
    ///
    /// ```
    /// use tilekit_layout::swizzle::TiledMorton;
    /// let t = TiledMorton::new(6, 10, 4).unwrap();
    /// let d = t.descriptor().unwrap();
    /// assert_eq!(d.lengths(), vec![6, 10]);
    /// assert_eq!(d.calculate_offset(&[5, 9]).unwrap(), t.offset(5, 9));
    /// ```
    pub fn descriptor(&self) -> Result<TensorDescriptor<i64>> {
        let b = self.tile_bits as usize;
        let (th, tw, t) = (self.tiles_h(), self.tiles_w(), self.tile);
        let storage = TensorDescriptor::packed(vec![th, tw, t * t], None)?;
        // z -> bits (y_{b-1}, x_{b-1}, ..., y0, x0): labels 2 + 2k = y bit (b-1-k), 3 + 2k = x bit
        let mut stage1_t = vec![Transform::pass_through(th)?, Transform::pass_through(tw)?];
        let mut stage1_lo = vec![vec![0], vec![1]];
        let mut stage1_up = vec![vec![0], vec![1]];
        if b > 0 {
            stage1_t.push(Transform::unmerge(vec![2; 2 * b])?);
            stage1_lo.push(vec![2]);
            stage1_up.push((2..2 + 2 * b).collect());
        } else {
            stage1_t.push(Transform::freeze(0)?);
            stage1_lo.push(vec![2]);
            stage1_up.push(vec![]);
        }
        let bits = storage.transform(stage1_t, stage1_lo, stage1_up)?;
        // bits -> (tile_row, tile_col, in_row, in_col)
        let ys: Vec<usize> = (0..b).map(|k| 2 + 2 * k).collect();
        let xs: Vec<usize> = (0..b).map(|k| 3 + 2 * k).collect();
        let in_tile = if b > 0 {
            bits.transform(
                vec![
                    Transform::pass_through(th)?,
                    Transform::pass_through(tw)?,
                    Transform::merge(vec![2; b])?,
                    Transform::merge(vec![2; b])?,
                ],
                vec![vec![0], vec![1], ys, xs],
                vec![vec![0], vec![1], vec![2], vec![3]],
            )?
        } else {
            bits.transform(
                vec![
                    Transform::pass_through(th)?,
                    Transform::pass_through(tw)?,
                    Transform::insert(1)?,
                    Transform::insert(1)?,
                ],
                vec![vec![0], vec![1], vec![], vec![]],
                vec![vec![0], vec![1], vec![2], vec![3]],
            )?
        };
        // (tile_row, in_row) -> row over H_pad; (tile_col, in_col) -> col over W_pad
        let image = in_tile.transform(
            vec![Transform::merge(vec![th, t])?, Transform::merge(vec![tw, t])?],
            vec![vec![0, 2], vec![1, 3]],
            vec![vec![0], vec![1]],
        )?;
        image.transform(
            vec![Transform::slice(0, self.height)?, Transform::slice(0, self.width)?],
            vec![vec![0], vec![1]],
            vec![vec![0], vec![1]],
        )
    }

    /// The layout walked in **storage** order: an adaptor from `(tile_row, tile_col, z)` (top)
    /// to the image's `(row, col)` over whole tiles (bottom) — the inverse of
    /// [`descriptor`](Self::descriptor)'s mapping. Put on top of an image descriptor (see
    /// [`TensorDescriptor::chain`]) it lets a kernel visit the image in the order the storage is
    /// written, so that storage accesses are contiguous runs of `z`. Built from transforms only:
    /// unmerge rows and columns into (tile, in-tile), in-tile indices into bits, and merge the
    /// interleaved bits `(y_{b−1}, x_{b−1}, …, y0, x0)` into `z`.
    ///
    /// ```
    /// use tilekit_layout::swizzle::TiledMorton;
    /// let t = TiledMorton::new(16, 16, 4).unwrap();
    /// let a = t.storage_order_adaptor().unwrap();
    /// // tile (1, 2), z = 6 = (y1 x1 y0 x0) = 0110: in-tile (1, 2) → image (5, 10)
    /// assert_eq!(a.calculate_bottom_index(&[1, 2, 6]).unwrap(), vec![5, 10]);
    /// assert_eq!(t.offset(5, 10), (1 * 4 + 2) * 16 + 6);
    /// ```
    pub fn storage_order_adaptor(&self) -> Result<crate::adaptor::TensorAdaptor<i64>> {
        use crate::adaptor::{Stage, TensorAdaptor};
        let b = self.tile_bits as usize;
        let (th, tw, t) = (self.tiles_h(), self.tiles_w(), self.tile);
        // hidden ids: 0 row, 1 col, 2 tr, 3 ir, 4 tc, 5 ic, 6..6+b y bits, 6+b..6+2b x bits, z
        let mut stages = vec![
            Stage::new(Transform::unmerge(vec![th, t])?, vec![0], vec![2, 3])?,
            Stage::new(Transform::unmerge(vec![tw, t])?, vec![1], vec![4, 5])?,
        ];
        let z = 6 + 2 * b;
        if b > 0 {
            stages.push(Stage::new(
                Transform::unmerge(vec![2; b])?,
                vec![3],
                (6..6 + b).collect(),
            )?);
            stages.push(Stage::new(
                Transform::unmerge(vec![2; b])?,
                vec![5],
                (6 + b..6 + 2 * b).collect(),
            )?);
            let interleaved: Vec<usize> = (0..b).flat_map(|k| [6 + k, 6 + b + k]).collect();
            stages.push(Stage::new(Transform::merge(vec![2; 2 * b])?, interleaved, vec![z])?);
        } else {
            stages.push(Stage::new(Transform::merge(vec![1, 1])?, vec![3, 5], vec![z])?);
        }
        TensorAdaptor::new(stages, vec![0, 1], vec![2, 4, z], z + 1)
    }

    /// Row-major image → tiled Morton storage, padding filled with `fill`.
    ///
    /// ```
    /// use tilekit_layout::swizzle::TiledMorton;
    /// let t = TiledMorton::new(2, 3, 2).unwrap();
    /// let s = t.swizzle(&[1, 2, 3, 4, 5, 6], 0).unwrap();
    /// assert_eq!(s, vec![1, 2, 4, 5, 3, 0, 6, 0]);
    /// assert_eq!(t.unswizzle(&s).unwrap(), vec![1, 2, 3, 4, 5, 6]);
    /// ```
    pub fn swizzle<T: Copy>(&self, image: &[T], fill: T) -> Result<Vec<T>> {
        self.check_len("image", image.len(), self.height * self.width)?;
        let mut out = vec![fill; self.storage_len() as usize];
        for r in 0..self.height {
            for c in 0..self.width {
                out[self.offset(r, c) as usize] = image[(r * self.width + c) as usize];
            }
        }
        Ok(out)
    }

    /// Tiled Morton storage → row-major image (padding dropped).
    pub fn unswizzle<T: Copy>(&self, storage: &[T]) -> Result<Vec<T>> {
        self.check_len("storage", storage.len(), self.storage_len())?;
        let mut out = Vec::with_capacity((self.height * self.width) as usize);
        for r in 0..self.height {
            for c in 0..self.width {
                out.push(storage[self.offset(r, c) as usize]);
            }
        }
        Ok(out)
    }

    fn check_len(&self, field: &str, got: usize, want: i64) -> Result<()> {
        if got as i64 != want {
            return Err(LayoutError::invalid(
                format!(
                    "tiled morton image {}×{} in {}×{} tiles",
                    self.height, self.width, self.tile, self.tile
                ),
                format!("{field} length"),
                got,
                format!("must be {want}"),
            ));
        }
        Ok(())
    }
}

/// Hopper's shared-memory swizzle modes (TMA `CU_TENSOR_MAP_SWIZZLE_*`, wgmma descriptors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HopperSwizzle {
    /// 32-byte swizzle: chunk bit 4 ⊕= address bit 7.
    B32,
    /// 64-byte swizzle: chunk bits 4–5 ⊕= address bits 7–8.
    B64,
    /// 128-byte swizzle: chunk bits 4–6 ⊕= address bits 7–9.
    B128,
}

impl HopperSwizzle {
    /// Width of one swizzled row in bytes (32, 64 or 128).
    ///
    /// ```
    /// use tilekit_layout::swizzle::HopperSwizzle;
    /// assert_eq!(HopperSwizzle::B128.row_bytes(), 128);
    /// ```
    pub fn row_bytes(self) -> i64 {
        match self {
            HopperSwizzle::B32 => 32,
            HopperSwizzle::B64 => 64,
            HopperSwizzle::B128 => 128,
        }
    }

    /// CUTLASS's `B` (number of XORed bits).
    fn bits(self) -> u32 {
        match self {
            HopperSwizzle::B32 => 1,
            HopperSwizzle::B64 => 2,
            HopperSwizzle::B128 => 3,
        }
    }

    /// The hardware's definition on a byte offset: bits `[4, 4+B)` ⊕= bits `[7, 7+B)`.
    ///
    /// ```
    /// use tilekit_layout::swizzle::HopperSwizzle;
    /// // 128-byte mode, row 3 (byte 384), chunk 1 (byte 16): chunk 1 ⊕ 3 = 2
    /// assert_eq!(HopperSwizzle::B128.swizzle_byte_offset(3 * 128 + 16 + 5), 3 * 128 + 32 + 5);
    /// ```
    pub fn swizzle_byte_offset(self, offset: i64) -> i64 {
        let mask = (1i64 << self.bits()) - 1;
        offset ^ (((offset >> 7) & mask) << 4)
    }

    /// A `rows × cols` tile wider than one swizzle row, stored as **atoms** side by side: the
    /// columns are cut into `cols · elem_bytes / row_bytes()` slabs of one swizzle row each,
    /// slab `a` is the [`descriptor`](Self::descriptor) tile `rows × row` and is stored at
    /// element `a · rows · row` (the slabs one after another — what one TMA box per slab
    /// writes, since a swizzled box's inner dim is at most one swizzle row). Top `(row, col)`,
    /// bottom the element offset. With one slab it is [`descriptor`](Self::descriptor).
    ///
    /// ```text
    ///   128-byte swizzle, 16-bit elements, 64 × 128 tile: two atoms of 64 × 64
    ///   cols  0..64  → elements    0..4096  (row r at 64·r, chunks ⊕ r mod 8)
    ///   cols 64..128 → elements 4096..8192  (the same pattern)
    /// ```
    ///
    /// ```
    /// use tilekit_layout::swizzle::HopperSwizzle;
    /// let d = HopperSwizzle::B128.descriptor_atoms(64, 128, 2).unwrap();
    /// assert_eq!(d.calculate_offset(&[1, 64]).unwrap(), 64 * 64 + 64 + 8);   // atom 1, row 1, chunk 0 → 1
    /// let one = HopperSwizzle::B128.descriptor(64, 64, 2).unwrap();
    /// assert_eq!(d.calculate_offset(&[5, 17]).unwrap(), one.calculate_offset(&[5, 17]).unwrap());
    /// assert!(HopperSwizzle::B128.descriptor_atoms(64, 96, 2).is_err());      // 1.5 rows
    /// ```
    pub fn descriptor_atoms(
        self,
        rows: i64,
        cols: i64,
        elem_bytes: i64,
    ) -> Result<TensorDescriptor<i64>> {
        let ctx = "hopper swizzle atoms descriptor";
        log2_exact(ctx, "elem_bytes", elem_bytes)?;
        if elem_bytes > 16 {
            return Err(LayoutError::invalid(ctx, "elem_bytes", elem_bytes, "must be at most 16"));
        }
        let row = self.row_bytes() / elem_bytes;
        if cols < row || cols % row != 0 {
            return Err(LayoutError::invalid(
                ctx,
                "cols",
                cols,
                format!("must be a positive multiple of one swizzle row ({row} elements)"),
            ));
        }
        // validates rows (the pattern's period)
        self.descriptor(rows, row, elem_bytes)?;
        let atoms = cols / row;
        let chunks = self.row_bytes() / 16;
        let per_chunk = 16 / elem_bytes;
        let row_lo = 128 / self.row_bytes();
        let row_hi = rows / row_lo;
        // storage: packed (atom, row_hi, row_lo, chunk, within)
        let storage = TensorDescriptor::packed(
            vec![atoms, row_hi, row_lo, chunks, per_chunk],
            Some(per_chunk),
        )?;
        let swizzled = storage.transform(
            vec![
                Transform::pass_through(atoms)?,
                Transform::xor(row_hi, chunks)?,
                Transform::pass_through(row_lo)?,
                Transform::pass_through(per_chunk)?,
            ],
            vec![vec![0], vec![1, 3], vec![2], vec![4]],
            vec![vec![0], vec![1, 3], vec![2], vec![4]],
        )?;
        swizzled.transform(
            vec![
                Transform::merge(vec![row_hi, row_lo])?,
                Transform::merge(vec![atoms, chunks, per_chunk])?,
            ],
            vec![vec![1, 2], vec![0, 3, 4]],
            vec![vec![0], vec![1]],
        )
    }

    /// A `rows × cols` tile of `elem_bytes`-byte elements whose rows are exactly one swizzle
    /// row (`cols · elem_bytes == row_bytes()`), stored with this swizzle, as a descriptor:
    /// top `(row, col)`, bottom the element offset. `rows` must be a multiple of the pattern's
    /// period (`1024 / row_bytes()` rows).
    ///
    /// ```
    /// use tilekit_layout::swizzle::HopperSwizzle;
    /// let d = HopperSwizzle::B128.descriptor(8, 64, 2).unwrap();     // 8 rows of 64 fp16
    /// assert_eq!(d.calculate_offset(&[1, 0]).unwrap(), 64 + 8);                // chunk 0 of row 1 lands in chunk 1
    /// assert_eq!(d.top_safe_vector_lengths_strides(), (vec![-1, 8], vec![-1, 1]));
    /// ```
    pub fn descriptor(
        self,
        rows: i64,
        cols: i64,
        elem_bytes: i64,
    ) -> Result<TensorDescriptor<i64>> {
        let ctx = "hopper swizzle descriptor";
        log2_exact(ctx, "elem_bytes", elem_bytes)?;
        if elem_bytes > 16 {
            return Err(LayoutError::invalid(ctx, "elem_bytes", elem_bytes, "must be at most 16"));
        }
        if cols.checked_mul(elem_bytes) != Some(self.row_bytes()) {
            return Err(LayoutError::invalid(
                ctx,
                "cols",
                cols,
                format!(
                    "cols · elem_bytes must be one swizzle row of {} bytes: cols = {}",
                    self.row_bytes(),
                    self.row_bytes() / elem_bytes
                ),
            ));
        }
        let period = 1024 / self.row_bytes();
        if rows < 1 || rows % period != 0 {
            return Err(LayoutError::invalid(
                ctx,
                "rows",
                rows,
                format!("must be a positive multiple of {period} (the pattern's period)"),
            ));
        }
        let chunks = self.row_bytes() / 16; // 16-byte chunks per row
        let per_chunk = 16 / elem_bytes; // elements per chunk
        let row_lo = 128 / self.row_bytes(); // rows per 128-byte group
        let row_hi = rows / row_lo;
        // storage: packed (row_hi, row_lo, chunk, within) = row-major (rows, cols)
        let storage =
            TensorDescriptor::packed(vec![row_hi, row_lo, chunks, per_chunk], Some(per_chunk))?;
        // chunk' = chunk ⊕ (row_hi mod chunks): xor on (row_hi, chunk)
        let swizzled = storage.transform(
            vec![
                Transform::xor(row_hi, chunks)?,
                Transform::pass_through(row_lo)?,
                Transform::pass_through(per_chunk)?,
            ],
            vec![vec![0, 2], vec![1], vec![3]],
            vec![vec![0, 2], vec![1], vec![3]],
        )?;
        swizzled.transform(
            vec![
                Transform::merge(vec![row_hi, row_lo])?,
                Transform::merge(vec![chunks, per_chunk])?,
            ],
            vec![vec![0, 1], vec![2, 3]],
            vec![vec![0], vec![1]],
        )
    }
}

/// CK's XOR-swizzled shared-memory layout of a GEMM operand tile (`MakeALdsBlockDescriptor` of
/// the universal GEMM pipeline policy, SEMANTICS §14), for an `m × k` tile of `elem_bytes`-byte
/// elements stored in `kpack`-element vectors (usually 16 bytes):
///
/// ```text
///   L  = max(1, 128 / (k · elem_bytes))   rows sharing one 128-byte line ("MLdsLayer")
///   K0 = k / kpack                         vectors per row
///   naive (K0·L, m/L, kpack), strides (kpack, K0·L·kpack, 1)
///   → xor on (m/L, K0·L):  k0l' = k0l ⊕ (m' mod K0·L)
///   → unmerge K0·L into (L, K0)
///   → merge (m/L, L) = m and (K0, kpack) = k
/// ```
///
/// Top `(m, k)`, bottom the element offset; a permutation of `0..m·k`. Errors: `kpack` not
/// dividing `k`, `L` not dividing `m`, or a non-power-of-two `elem_bytes` above 16.
///
/// ```
/// use tilekit_layout::swizzle::xor_lds;
/// let d = xor_lds(32, 32, 8, 2).unwrap();     // 32×32 fp16, L = 2, K0 = 4
/// // (m=2, k=0): m' = 1, l = 0 → k0l = 0 ⊕ 1 = 1 → offset 1·8 + 1·64 = 72
/// assert_eq!([d.calculate_offset(&[1, 0]).unwrap(), d.calculate_offset(&[2, 0]).unwrap()], [32, 72]);
/// assert_eq!(d.top_safe_vector_lengths_strides(), (vec![-1, 8], vec![-1, 1]));
/// assert!(xor_lds(32, 30, 8, 2).is_err());
/// ```
pub fn xor_lds(m: i64, k: i64, kpack: i64, elem_bytes: i64) -> Result<TensorDescriptor<i64>> {
    let ctx = "xor lds descriptor";
    log2_exact(ctx, "elem_bytes", elem_bytes)?;
    if elem_bytes > 16 {
        return Err(LayoutError::invalid(ctx, "elem_bytes", elem_bytes, "must be at most 16"));
    }
    if m < 1 {
        return Err(LayoutError::invalid(ctx, "m", m, "must be >= 1"));
    }
    if kpack < 1 || k < 1 || k % kpack != 0 {
        return Err(LayoutError::invalid(
            ctx,
            "k",
            k,
            format!("must be a positive multiple of kpack = {kpack}"),
        ));
    }
    // k·elem_bytes ≥ 128 gives L = 1 (also when the product overflows)
    let l = k.checked_mul(elem_bytes).map_or(1, |row| (128 / row).max(1));
    if m % l != 0 {
        return Err(LayoutError::invalid(
            ctx,
            "m",
            m,
            format!("must be a multiple of L = 128 / (k · elem_bytes) = {l} (rows per 128 bytes)"),
        ));
    }
    let k0 = k / kpack;
    if k.checked_mul(l).and_then(|kl| kl.checked_mul(m / l)).is_none() {
        return Err(LayoutError::overflow(
            ctx,
            "the tile size m·k (with k·L per row group)",
            format!("m {m}, k {k}, L {l}"),
        ));
    }
    let naive = TensorDescriptor::naive(
        vec![k0 * l, m / l, kpack],
        vec![kpack, k0 * l * kpack, 1],
        Some((kpack, 1)),
    )?;
    let permuted = naive.transform(
        vec![Transform::xor(m / l, k0 * l)?, Transform::pass_through(kpack)?],
        vec![vec![1, 0], vec![2]],
        vec![vec![1, 0], vec![2]],
    )?;
    let split = permuted.transform(
        vec![
            Transform::unmerge(vec![l, k0])?,
            Transform::pass_through(m / l)?,
            Transform::pass_through(kpack)?,
        ],
        vec![vec![0], vec![1], vec![2]],
        vec![vec![0, 2], vec![1], vec![3]],
    )?;
    split.transform(
        vec![Transform::merge(vec![m / l, l])?, Transform::merge(vec![k0, kpack])?],
        vec![vec![1, 0], vec![2, 3]],
        vec![vec![0], vec![1]],
    )
}
