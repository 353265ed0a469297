//! Hopper's warpgroup matrix multiply-accumulate: `wgmma.mma_async`, the shared-memory matrix
//! descriptors it reads its operands through, and the fence / commit / wait protocol that
//! brackets it.
//!
//! # The model
//!
//! A **warpgroup** is four consecutive warps (128 threads, the first warp's id a multiple of 4).
//! One `wgmma.mma_async.m64nNkK` of a warpgroup computes `D(64×N) = A(64×K)·B(K×N) (+ D)`:
//! K = 16 for f16 / bf16 inputs, 8 for tf32, N from 8 to 256 in steps of 8, f32 accumulators.
//! A comes from shared memory (a descriptor) or from registers (a fragment, like `mma.sync`'s);
//! B always from shared memory. D lives in registers: N/2 f32 per thread.
//!
//! ```text
//!   warpgroup (128 threads)                    D: 64 × N f32 accumulator
//!   ┌────────┬────────┬────────┬────────┐      rows  0..16  warp 0   thread (w, lane l)
//!   │ warp 0 │ warp 1 │ warp 2 │ warp 3 │      rows 16..32  warp 1   register i holds
//!   └────────┴────────┴────────┴────────┘      rows 32..48  warp 2     row 16w + l/4 + 8·(i/2 mod 2)
//!                                              rows 48..64  warp 3     col 8·(i/4) + 2·(l mod 4) + i mod 2
//! ```
//!
//! **Descriptors.** The tensor cores read A and B from shared memory in units of **core
//! matrices**: 8 rows of 16 contiguous bytes (8×8 f16). A 64-bit *matrix descriptor* says where
//! they are:
//!
//! ```text
//!   bits  0–13  start address >> 4        bits 32–45  stride byte offset (SBO) >> 4
//!   bits 16–29  leading byte offset >> 4  bits 49–51  base offset (0: tiles aligned to the pattern)
//!   bits 62–63  layout: 0 interleave (no swizzle), 1 = 128-byte, 2 = 64-byte, 3 = 32-byte swizzle
//!
//!   K-major operand (K contiguous), 16-bit elements, one K=16 step = two 16-byte chunks:
//!     interleave:  core matrix (mn/8, chunk) at start + (mn/8)·SBO + chunk·LBO, rows 16 B apart
//!     swizzled:    row mn at start + (mn/8)·SBO + (mn mod 8)·W (W = 32/64/128), chunk at +16·chunk,
//!                  then the address's bits 4.. ⊕= its bits 7.. (the Hopper swizzle)
//!   MN-major operand (MN contiguous): the same with the roles of the two axes swapped:
//!     interleave:  8 MN elements per 16 bytes; MN chunks SBO apart, K rows 16 B, 8-row K groups LBO
//!     swizzled:    W bytes of MN per row, the next W bytes of MN at LBO; K rows W apart, 8-row
//!                  K groups SBO apart
//! ```
//!
//! Nobody writes a descriptor by hand here: a [`SmemMatrix`] is **derived** from the
//! tilekit-layout descriptor of the shared tile (a [`HopperSwizzle`] descriptor or the
//! [`interleaved`] core-matrix layout) by probing its offsets, trying each of the four layout
//! types and keeping the one whose hardware addresses reproduce *every* element of the tile;
//! a layout no descriptor can express is refused with [`WgmmaError::NotExpressible`].
//!
//! **The lifetime of a group.** `wgmma.mma_async` is asynchronous: the tensor cores read
//! shared memory and the accumulator registers *after* the instruction issues.
//!
//! ```text
//!   registers written by threads ─► wgmma.fence ─► wgmma ─► wgmma ─► commit_group ─► wait_group 0 ─► read D
//!                                   (orders the    └── in flight: D registers and  ┘   (retires the
//!                                    writes first)     the shared tiles are busy        group)
//! ```
//!
//! The interpreter (`interp`) runs wgmma with these semantics: it decodes the 64-bit
//! descriptors and reads shared memory through them as the hardware would (a descriptor that
//! disagrees with its layout gives wrong numbers, and [`AsyncBug::DescriptorMismatch`] names
//! it when the descriptor was derived from a layout whose addresses it does not reproduce);
//! it accumulates in f32 and reports, with the warp, memory and op, every access to an
//! accumulator between its wgmma and the wait that retires it, a shared write an in-flight
//! wgmma still reads, a wgmma without a `wgmma.fence` after register writes to its operands,
//! and a warpgroup that does not execute a wgmma op together.
//!
//! [`HopperSwizzle`]: tilekit_layout::swizzle::HopperSwizzle
//! [`AsyncBug::DescriptorMismatch`]: crate::interp::AsyncBug::DescriptorMismatch
//!
//! ```
//! use tilekit_ir::{KernelBuilder, ScalarType};
//! use tilekit_ir::wgmma::{interleaved, Acc, Major, SmemMatrix, WgmmaShape, WgmmaSrc, WgmmaType};
//! use tilekit_layout::{swizzle::HopperSwizzle, Idx};
//! # fn main() -> Result<(), tilekit_ir::IrError> {
//! let b = KernelBuilder::new("mm", [128, 1, 1])?;
//! let sa = b.shared("a", ScalarType::F16, 64 * 16)?;
//! let sb = b.shared("b", ScalarType::F16, 8 * 16)?;
//! let la = SmemMatrix::from_layout(&HopperSwizzle::B32.descriptor(64, 16, 2)?, Major::K, ScalarType::F16)?;
//! let lb = SmemMatrix::from_layout(&interleaved(Major::K, 8, 16, 2)?, Major::K, ScalarType::F16)?;
//! let da = b.wgmma_desc(sa, &Idx::lit(0), &la, 0)?;
//! let db = b.wgmma_desc(sb, &Idx::lit(0), &lb, 0)?;
//! b.wgmma_fence()?;
//! let shape = WgmmaShape::new(WgmmaType::F16, 8)?;
//! let d = b.wgmma(shape, &WgmmaSrc::Smem(da), &db, Acc::Zero)?;
//! b.wgmma_commit()?;
//! b.wgmma_wait(0)?;
//! assert_eq!(d.len(), 4);
//! let text = b.finish()?.to_string();
//! assert!(text.contains("wgmma.mma_async.m64n8k16.f32.f16.f16"), "{text}");
//! # Ok(()) }
//! ```

use tilekit_layout::TensorDescriptor;

use crate::builder::KernelBuilder;
use crate::error::{IrError, Result};
use crate::kernel::Kernel;
use crate::op::{MemRef, MemSpace, Op, ValueId};
use crate::types::ScalarType;
use crate::value::{Pred, Val};

/// Why a wgmma op, descriptor or layout was refused.
///
/// ```
/// use tilekit_ir::wgmma::{WgmmaShape, WgmmaType};
/// let e = WgmmaShape::new(WgmmaType::F16, 12).unwrap_err();
/// assert_eq!(e.to_string(), "N = 12 is not a wgmma shape: N must be 8..=256, a multiple of 8");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WgmmaError {
    /// N outside 8..=256 or not a multiple of 8.
    #[error("N = {n} is not a wgmma shape: N must be 8..=256, a multiple of 8")]
    BadN {
        /// The N given.
        n: u32,
    },
    /// A block that is not whole warpgroups.
    #[error("{op} needs a block of whole warpgroups (a multiple of 128 threads); this block has {threads}")]
    NotWarpgroups {
        /// The op.
        op: String,
        /// Threads per block.
        threads: usize,
    },
    /// An element type the op does not take.
    #[error("{op}: {what} has element type {got}; valid: {valid}")]
    Dtype {
        /// The op.
        op: String,
        /// Which operand.
        what: String,
        /// Its type.
        got: ScalarType,
        /// What would be valid.
        valid: String,
    },
    /// A transposed (MN-major) operand where the op needs K-major.
    #[error("{op}: {what} must be K-major ({why})")]
    Transpose {
        /// The op.
        op: String,
        /// Which operand.
        what: String,
        /// Why.
        why: String,
    },
    /// A layout that no matrix descriptor can express.
    #[error("the {major} layout of a {mn}×{k} {elem} tile cannot be expressed by a wgmma descriptor: {why}")]
    NotExpressible {
        /// K-major or MN-major.
        major: Major,
        /// MN extent.
        mn: usize,
        /// K extent.
        k: usize,
        /// Element type.
        elem: ScalarType,
        /// What failed for each layout type.
        why: String,
    },
    /// A K block beyond the tile.
    #[error("K block {block} is outside the tile: it has {blocks} blocks of K = {k_step}")]
    Block {
        /// The block asked for.
        block: usize,
        /// Blocks in the tile.
        blocks: usize,
        /// K per block.
        k_step: usize,
    },
}

/// The input type of a wgmma (the accumulator is always f32).
///
/// ```
/// use tilekit_ir::wgmma::WgmmaType;
/// assert_eq!((WgmmaType::BF16.k(), WgmmaType::TF32.k()), (16, 8));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WgmmaType {
    /// IEEE half, K = 16.
    F16,
    /// bfloat16, K = 16.
    BF16,
    /// tf32 (f32 storage, the low 13 mantissa bits ignored), K = 8.
    TF32,
}

impl WgmmaType {
    /// The PTX type name.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::wgmma::WgmmaType::TF32.name(), "tf32");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            WgmmaType::F16 => "f16",
            WgmmaType::BF16 => "bf16",
            WgmmaType::TF32 => "tf32",
        }
    }

    /// K of one wgmma: 32 bytes of input.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::wgmma::WgmmaType::F16.k(), 16);
    /// ```
    pub fn k(self) -> usize {
        32 / self.elem().size_bytes()
    }

    /// The IR type the inputs are stored as (`f32` for tf32).
    ///
    /// ```
    /// use tilekit_ir::{wgmma::WgmmaType, ScalarType};
    /// assert_eq!(WgmmaType::TF32.elem(), ScalarType::F32);
    /// ```
    pub fn elem(self) -> ScalarType {
        match self {
            WgmmaType::F16 => ScalarType::F16,
            WgmmaType::BF16 => ScalarType::BF16,
            WgmmaType::TF32 => ScalarType::F32,
        }
    }

    /// The wgmma type of an element type (`f32` → tf32).
    ///
    /// ```
    /// use tilekit_ir::{wgmma::WgmmaType, ScalarType};
    /// assert_eq!(WgmmaType::of(ScalarType::BF16), Some(WgmmaType::BF16));
    /// assert_eq!(WgmmaType::of(ScalarType::I32), None);
    /// ```
    pub fn of(elem: ScalarType) -> Option<WgmmaType> {
        match elem {
            ScalarType::F16 => Some(WgmmaType::F16),
            ScalarType::BF16 => Some(WgmmaType::BF16),
            ScalarType::F32 => Some(WgmmaType::TF32),
            _ => None,
        }
    }

    /// Values of the A fragment per thread when A comes from registers (64×K over 128
    /// threads): 8 for f16/bf16, 4 for tf32.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::wgmma::WgmmaType::TF32.a_regs(), 4);
    /// ```
    pub fn a_regs(self) -> usize {
        64 * self.k() / 128
    }

    /// Rounds an input to what the tensor cores use: tf32 keeps the top 19 bits of the f32
    /// (the low 13 mantissa bits are ignored); f16 and bf16 are exact.
    ///
    /// ```
    /// use tilekit_ir::wgmma::WgmmaType;
    /// assert_eq!(WgmmaType::TF32.input(1.0 + f64::powi(2.0, -12)), 1.0);
    /// assert_eq!(WgmmaType::TF32.input(1.0 + f64::powi(2.0, -10)), 1.0 + f64::powi(2.0, -10));
    /// ```
    pub fn input(self, x: f64) -> f64 {
        match self {
            WgmmaType::TF32 => f32::from_bits((x as f32).to_bits() & !0x1fff) as f64,
            _ => x,
        }
    }
}

/// A shape `m64nNkK` with its input type and the transpose flags of A and B (f16/bf16 only:
/// `trans` = the operand is MN-major in shared memory).
///
/// ```
/// use tilekit_ir::wgmma::{WgmmaShape, WgmmaType};
/// let s = WgmmaShape::new(WgmmaType::BF16, 256).unwrap().transposed(false, true).unwrap();
/// assert_eq!(s.name(), "m64n256k16");
/// assert!(WgmmaShape::new(WgmmaType::TF32, 8).unwrap().transposed(true, false).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WgmmaShape {
    /// Input type.
    pub ty: WgmmaType,
    /// N (8..=256, a multiple of 8).
    pub n: u32,
    /// A is MN-major (M contiguous) in shared memory.
    pub trans_a: bool,
    /// B is MN-major (N contiguous) in shared memory.
    pub trans_b: bool,
}

impl WgmmaShape {
    /// `m64nNkK` for `ty`, both operands K-major; a [`WgmmaError::BadN`] for an N outside
    /// 8..=256 or not a multiple of 8.
    ///
    /// ```
    /// use tilekit_ir::wgmma::{WgmmaShape, WgmmaType};
    /// assert_eq!(WgmmaShape::new(WgmmaType::TF32, 64).unwrap().name(), "m64n64k8");
    /// assert!(WgmmaShape::new(WgmmaType::F16, 264).is_err());
    /// ```
    pub fn new(ty: WgmmaType, n: u32) -> Result<Self, WgmmaError> {
        if !(8..=256).contains(&n) || !n.is_multiple_of(8) {
            return Err(WgmmaError::BadN { n });
        }
        Ok(WgmmaShape { ty, n, trans_a: false, trans_b: false })
    }

    /// The same shape with A and/or B MN-major (transposed); tf32 takes K-major only.
    ///
    /// ```
    /// use tilekit_ir::wgmma::{WgmmaShape, WgmmaType};
    /// assert!(WgmmaShape::new(WgmmaType::F16, 8).unwrap().transposed(true, true).unwrap().trans_a);
    /// ```
    pub fn transposed(self, trans_a: bool, trans_b: bool) -> Result<Self, WgmmaError> {
        if self.ty == WgmmaType::TF32 && (trans_a || trans_b) {
            return Err(WgmmaError::Transpose {
                op: format!("wgmma {}.tf32", self.name()),
                what: if trans_a { "A" } else { "B" }.into(),
                why: "tf32 wgmma has no transpose; store the tile K-major".into(),
            });
        }
        Ok(WgmmaShape { trans_a, trans_b, ..self })
    }

    /// `m64nNkK`.
    ///
    /// ```
    /// use tilekit_ir::wgmma::{WgmmaShape, WgmmaType};
    /// assert_eq!(WgmmaShape::new(WgmmaType::F16, 128).unwrap().name(), "m64n128k16");
    /// ```
    pub fn name(&self) -> String {
        format!("m64n{}k{}", self.n, self.ty.k())
    }

    /// Accumulator registers per thread: N/2.
    ///
    /// ```
    /// use tilekit_ir::wgmma::{WgmmaShape, WgmmaType};
    /// assert_eq!(WgmmaShape::new(WgmmaType::F16, 256).unwrap().acc_regs(), 128);
    /// ```
    pub fn acc_regs(&self) -> usize {
        self.n as usize / 2
    }
}

/// Which axis of an operand is contiguous in shared memory.
///
/// ```
/// assert_eq!(tilekit_ir::wgmma::Major::MN.to_string(), "MN-major");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Major {
    /// K contiguous (A row-major, B column-major): the layout's top is `(mn, k)`.
    K,
    /// M (or N) contiguous: the layout's top is `(k, mn)`.
    MN,
}

impl std::fmt::Display for Major {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Major::K => "K-major",
            Major::MN => "MN-major",
        })
    }
}

/// The layout type of a matrix descriptor (bits 62–63).
///
/// ```
/// use tilekit_ir::wgmma::DescLayout;
/// assert_eq!(DescLayout::B128.code(), 1);
/// assert_eq!(DescLayout::from_code(3), DescLayout::B32);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DescLayout {
    /// No swizzle: core matrices of 8 rows × 16 bytes, placed by LBO and SBO.
    Interleave,
    /// 128-byte swizzle.
    B128,
    /// 64-byte swizzle.
    B64,
    /// 32-byte swizzle.
    B32,
}

impl DescLayout {
    /// Every layout type, the order [`SmemMatrix::from_layout`] tries them in.
    pub const ALL: [DescLayout; 4] =
        [DescLayout::B128, DescLayout::B64, DescLayout::B32, DescLayout::Interleave];

    /// The 2-bit code.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::wgmma::DescLayout::Interleave.code(), 0);
    /// ```
    pub fn code(self) -> u64 {
        match self {
            DescLayout::Interleave => 0,
            DescLayout::B128 => 1,
            DescLayout::B64 => 2,
            DescLayout::B32 => 3,
        }
    }

    /// The layout type of a 2-bit code (only the low two bits are read).
    ///
    /// ```
    /// assert_eq!(tilekit_ir::wgmma::DescLayout::from_code(2), tilekit_ir::wgmma::DescLayout::B64);
    /// ```
    pub fn from_code(code: u64) -> DescLayout {
        match code & 3 {
            0 => DescLayout::Interleave,
            1 => DescLayout::B128,
            2 => DescLayout::B64,
            _ => DescLayout::B32,
        }
    }

    /// Bytes of one swizzled row (16 for interleave: a core-matrix row).
    ///
    /// ```
    /// assert_eq!(tilekit_ir::wgmma::DescLayout::B64.row_bytes(), 64);
    /// ```
    pub fn row_bytes(self) -> u32 {
        match self {
            DescLayout::Interleave => 16,
            DescLayout::B128 => 128,
            DescLayout::B64 => 64,
            DescLayout::B32 => 32,
        }
    }

    /// The alignment a tile's origin needs so that the pattern (applied to absolute
    /// addresses) starts at its first row: 8 rows (1024, 512, 256 bytes; 16 for interleave).
    ///
    /// ```
    /// assert_eq!(tilekit_ir::wgmma::DescLayout::B128.align_bytes(), 1024);
    /// ```
    pub fn align_bytes(self) -> u32 {
        match self {
            DescLayout::Interleave => 16,
            s => 8 * s.row_bytes(),
        }
    }

    /// The swizzle on a shared byte address: bits `[4, 4+B)` ⊕= bits `[7, 7+B)` (B = 3, 2, 1;
    /// identity for interleave).
    ///
    /// ```
    /// use tilekit_ir::wgmma::DescLayout;
    /// assert_eq!(DescLayout::B128.swizzle(3 * 128 + 16), 3 * 128 + 32);
    /// assert_eq!(DescLayout::Interleave.swizzle(400), 400);
    /// ```
    pub fn swizzle(self, addr: u32) -> u32 {
        let bits = match self {
            DescLayout::Interleave => return addr,
            DescLayout::B32 => 1,
            DescLayout::B64 => 2,
            DescLayout::B128 => 3,
        };
        addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)
    }

    fn name(self) -> &'static str {
        match self {
            DescLayout::Interleave => "interleave",
            DescLayout::B128 => "128B",
            DescLayout::B64 => "64B",
            DescLayout::B32 => "32B",
        }
    }
}

/// A decoded 64-bit shared-memory matrix descriptor (byte values, not shifted).
///
/// ```
/// use tilekit_ir::wgmma::{DescLayout, MatrixDescriptor};
/// let d = MatrixDescriptor { start: 1024, lbo: 16, sbo: 1024, base_offset: 0, layout: DescLayout::B128 };
/// let bits = d.encode();
/// assert_eq!(bits, (1024 >> 4) | (1 << 16) | ((1024u64 >> 4) << 32) | (1 << 62));
/// assert_eq!(MatrixDescriptor::decode(bits), d);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MatrixDescriptor {
    /// Start address in the shared window (bytes, a multiple of 16, below 2^18).
    pub start: u32,
    /// Leading-dimension byte offset.
    pub lbo: u32,
    /// Stride-dimension byte offset.
    pub sbo: u32,
    /// Base offset (bits 49–51), for tiles not aligned to their swizzle pattern.
    pub base_offset: u8,
    /// The layout type.
    pub layout: DescLayout,
}

impl MatrixDescriptor {
    /// The 64-bit descriptor (start, LBO and SBO keep their bits 4–17).
    ///
    /// ```
    /// use tilekit_ir::wgmma::{DescLayout, MatrixDescriptor};
    /// let d = MatrixDescriptor { start: 0x100, lbo: 128, sbo: 256, base_offset: 0, layout: DescLayout::Interleave };
    /// assert_eq!(d.encode(), 0x10 | (8 << 16) | (16u64 << 32));
    /// // CUTLASS's descriptor of a 128-byte-swizzled K-major f16 tile at shared byte 0x400
    /// // (SBO = 1024: 8 rows of 128 bytes; LBO unused, 1)
    /// let sw = MatrixDescriptor { start: 0x400, lbo: 16, sbo: 1024, base_offset: 0, layout: DescLayout::B128 };
    /// assert_eq!(sw.encode(), 0x4000_0040_0001_0040);
    /// ```
    pub fn encode(&self) -> u64 {
        let f = |v: u32| ((v as u64) >> 4) & 0x3fff;
        f(self.start)
            | (f(self.lbo) << 16)
            | (f(self.sbo) << 32)
            | (((self.base_offset & 7) as u64) << 49)
            | (self.layout.code() << 62)
    }

    /// Decodes the fields of a 64-bit descriptor.
    ///
    /// ```
    /// use tilekit_ir::wgmma::{DescLayout, MatrixDescriptor};
    /// let d = MatrixDescriptor::decode((3u64 << 62) | (2 << 32) | 5);
    /// assert_eq!((d.start, d.sbo, d.layout), (80, 32, DescLayout::B32));
    /// ```
    pub fn decode(bits: u64) -> MatrixDescriptor {
        let f = |shift: u32| (((bits >> shift) & 0x3fff) as u32) << 4;
        MatrixDescriptor {
            start: f(0),
            lbo: f(16),
            sbo: f(32),
            base_offset: ((bits >> 49) & 7) as u8,
            layout: DescLayout::from_code(bits >> 62),
        }
    }

    /// The shared byte address the hardware reads element `(mn, k)` of one wgmma operand
    /// block from (`k < 32 / elem_bytes`), as described in the [module docs](self): the
    /// canonical core-matrix placement, then the swizzle on the absolute address.
    ///
    /// ```
    /// use tilekit_ir::wgmma::{DescLayout, Major, MatrixDescriptor};
    /// let d = MatrixDescriptor { start: 0, lbo: 16, sbo: 1024, base_offset: 0, layout: DescLayout::B128 };
    /// // f16 K-major: row 1 at 128 bytes, its chunk 0 swizzled to chunk 1
    /// assert_eq!(d.address(Major::K, 2, 1, 0), 128 + 16);
    /// assert_eq!(d.address(Major::K, 2, 9, 8), 1024 + 128 + (1 ^ 1) * 16);
    /// ```
    pub fn address(&self, major: Major, elem_bytes: usize, mn: usize, k: usize) -> u32 {
        let eb = elem_bytes as u32;
        let t = 16 / eb; // elements per 16-byte chunk
        let (mn, k) = (mn as u32, k as u32);
        let w = self.layout.row_bytes();
        let lin = match (major, self.layout) {
            (Major::K, DescLayout::Interleave) => {
                (mn / 8) * self.sbo + (mn % 8) * 16 + (k / t) * self.lbo + (k % t) * eb
            }
            (Major::K, _) => (mn / 8) * self.sbo + (mn % 8) * w + k * eb,
            (Major::MN, DescLayout::Interleave) => {
                (mn / t) * self.sbo + (k % 8) * 16 + (k / 8) * self.lbo + (mn % t) * eb
            }
            (Major::MN, _) => {
                let per = w / eb;
                (mn / per) * self.lbo + (mn % per) * eb + (k % 8) * w + (k / 8) * self.sbo
            }
        };
        self.layout.swizzle(self.start.wrapping_add(lin))
    }
}

/// A shared tile as wgmma sees it: the layout type, LBO and SBO **derived from the tile's
/// tilekit-layout descriptor**, and the layout's own element offsets (kept so that the
/// interpreter can check a descriptor against the layout it came from).
///
/// The tile is `mn × k` elements; wgmma reads it one K block (32 bytes of K) at a time
/// ([`SmemMatrix::blocks`]).
///
/// ```
/// use tilekit_ir::{wgmma::{DescLayout, Major, SmemMatrix}, ScalarType};
/// use tilekit_layout::swizzle::HopperSwizzle;
/// let m = SmemMatrix::from_layout(&HopperSwizzle::B128.descriptor(64, 64, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
/// assert_eq!((m.layout(), m.sbo(), m.blocks()), (DescLayout::B128, 1024, 4));
/// assert_eq!(m.block_offset(1), 16);          // K block 1 starts 16 elements (32 bytes) in
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SmemMatrix {
    major: Major,
    layout: DescLayout,
    elem: ScalarType,
    mn: usize,
    k: usize,
    lbo: u32,
    sbo: u32,
    /// Element offset of `(mn, k)` at `mn · k_extent + k`.
    offsets: Vec<u32>,
}

/// The first element at which a descriptor's addresses and a layout's disagree.
///
/// ```
/// use tilekit_ir::wgmma::Disagreement;
/// let d = Disagreement { mn: 1, k: 0, layout_byte: 32, descriptor_byte: 48 };
/// assert_eq!(d.to_string(), "element (mn 1, k 0): the layout puts it at byte 32, the descriptor reads byte 48");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disagreement {
    /// MN index in the block.
    pub mn: usize,
    /// K index in the block.
    pub k: usize,
    /// Where the layout stores it (shared byte address).
    pub layout_byte: u64,
    /// Where the descriptor reads it.
    pub descriptor_byte: u64,
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "element (mn {}, k {}): the layout puts it at byte {}, the descriptor reads byte {}",
            self.mn, self.k, self.layout_byte, self.descriptor_byte
        )
    }
}

impl SmemMatrix {
    /// Derives the descriptor parameters of a shared tile from its layout: `layout`'s top is
    /// `(mn, k)` for [`Major::K`] and `(k, mn)` for [`Major::MN`], its bottom the element
    /// offset. Every layout type is tried (128-, 64-, 32-byte swizzle, interleave); LBO and SBO
    /// are read off the layout's offsets, and the first type whose hardware addresses reproduce
    /// every element of every K block wins. Errors: [`WgmmaError::Dtype`] for a type wgmma does
    /// not take, [`WgmmaError::NotExpressible`] when no descriptor reproduces the layout (or
    /// the tile is not whole core matrices).
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// use tilekit_layout::TensorDescriptor;
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 16, 2).unwrap(), Major::K, ScalarType::BF16).unwrap();
    /// assert_eq!((m.layout(), m.lbo(), m.sbo()), (DescLayout::Interleave, 128, 256));
    /// // a plain row-major 64×16 tile: rows 32 bytes apart, unswizzled — no descriptor does that
    /// let row_major = TensorDescriptor::packed(vec![64, 16], None).unwrap();
    /// let e = SmemMatrix::from_layout(&row_major, Major::K, ScalarType::F16).unwrap_err();
    /// assert!(e.to_string().contains("cannot be expressed by a wgmma descriptor"), "{e}");
    /// ```
    pub fn from_layout(
        layout: &TensorDescriptor<i64>,
        major: Major,
        elem: ScalarType,
    ) -> Result<SmemMatrix, WgmmaError> {
        let ty = WgmmaType::of(elem).ok_or_else(|| WgmmaError::Dtype {
            op: "wgmma shared tile".into(),
            what: "the tile".into(),
            got: elem,
            valid: "f16, bf16, f32 (tf32)".into(),
        })?;
        let lengths = layout.lengths();
        let refuse = |mn: usize, k: usize, why: String| WgmmaError::NotExpressible {
            major,
            mn,
            k,
            elem,
            why,
        };
        if lengths.len() != 2 {
            return Err(refuse(0, 0, format!("the layout has {} dims, expected 2", lengths.len())));
        }
        let (mn, k) = match major {
            Major::K => (lengths[0], lengths[1]),
            Major::MN => (lengths[1], lengths[0]),
        };
        let (mn, k) = (mn.max(0) as usize, k.max(0) as usize);
        let kb = ty.k();
        if mn == 0 || !mn.is_multiple_of(8) || k == 0 || !k.is_multiple_of(kb) || mn * k > 1 << 20 {
            return Err(refuse(
                mn,
                k,
                format!("MN must be a positive multiple of 8 and K a positive multiple of {kb} (at most 2^20 elements)"),
            ));
        }
        let mut offsets = Vec::with_capacity(mn * k);
        for i in 0..mn {
            for j in 0..k {
                let top = match major {
                    Major::K => [i as i64, j as i64],
                    Major::MN => [j as i64, i as i64],
                };
                let o = layout.calculate_offset(&top).map_err(|e| refuse(mn, k, e.to_string()))?;
                if !(0..1 << 30).contains(&o) {
                    return Err(refuse(mn, k, format!("offset {o} of ({i}, {j}) is out of range")));
                }
                offsets.push(o as u32);
            }
        }
        let eb = elem.size_bytes() as u32;
        let at = |i: usize, j: usize| offsets[i * k + j] as i64 * eb as i64;
        let mut why = Vec::new();
        for cand in DescLayout::ALL {
            let w = cand.row_bytes();
            let t = (16 / eb) as usize;
            let (lbo, sbo) = match (major, cand) {
                (Major::K, DescLayout::Interleave) => {
                    (at(0, t) - at(0, 0), if mn > 8 { at(8, 0) - at(0, 0) } else { 128 })
                }
                (Major::K, _) => (16, if mn > 8 { at(8, 0) - at(0, 0) } else { 8 * w as i64 }),
                (Major::MN, DescLayout::Interleave) => {
                    (at(0, 8) - at(0, 0), if mn > t { at(t, 0) - at(0, 0) } else { 128 })
                }
                (Major::MN, _) => {
                    let per = (w / eb) as usize;
                    (
                        if mn > per { at(per, 0) - at(0, 0) } else { 8 * w as i64 },
                        at(0, 8) - at(0, 0),
                    )
                }
            };
            if lbo <= 0
                || sbo <= 0
                || lbo % 16 != 0
                || sbo % 16 != 0
                || lbo >= 1 << 18
                || sbo >= 1 << 18
            {
                why.push(format!(
                    "{}: LBO {lbo} / SBO {sbo} bytes are not positive multiples of 16 below 2^18",
                    cand.name()
                ));
                continue;
            }
            let m = SmemMatrix {
                major,
                layout: cand,
                elem,
                mn,
                k,
                lbo: lbo as u32,
                sbo: sbo as u32,
                offsets: offsets.clone(),
            };
            match (0..m.blocks()).find_map(|b| m.check(0, b).err()) {
                None => return Ok(m),
                Some(d) => why.push(format!("{}: {d}", cand.name())),
            }
        }
        Err(refuse(mn, k, why.join("; ")))
    }

    /// K-major or MN-major.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.major(), Major::K);
    /// ```
    pub fn major(&self) -> Major {
        self.major
    }
    /// The derived layout type.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.layout(), DescLayout::Interleave);
    /// ```
    pub fn layout(&self) -> DescLayout {
        self.layout
    }
    /// The element type.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.elem(), ScalarType::F16);
    /// ```
    pub fn elem(&self) -> ScalarType {
        self.elem
    }
    /// The derived leading-dimension byte offset.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.lbo(), 128);   // the next core matrix along K
    /// ```
    pub fn lbo(&self) -> u32 {
        self.lbo
    }
    /// The derived stride-dimension byte offset.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.sbo(), 512);   // the next 8 rows: 4 core matrices of 128 bytes
    /// ```
    pub fn sbo(&self) -> u32 {
        self.sbo
    }
    /// MN extent of the tile.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.mn(), 64);
    /// ```
    pub fn mn(&self) -> usize {
        self.mn
    }
    /// K extent of the tile.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.k(), 32);
    /// ```
    pub fn k(&self) -> usize {
        self.k
    }
    /// K per wgmma (32 bytes of K).
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.k_step(), 16);
    /// ```
    pub fn k_step(&self) -> usize {
        32 / self.elem.size_bytes()
    }
    /// K blocks in the tile (one wgmma each).
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{Major, SmemMatrix}, ScalarType};
    /// use tilekit_layout::swizzle::HopperSwizzle;
    /// let m = SmemMatrix::from_layout(&HopperSwizzle::B64.descriptor(64, 16, 4).unwrap(), Major::K, ScalarType::F32).unwrap();
    /// assert_eq!(m.blocks(), 2);   // tf32: K = 8 per wgmma
    /// ```
    pub fn blocks(&self) -> usize {
        self.k / self.k_step()
    }
    /// The layout's element offset of `(mn, k)` (tile coordinates).
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!((m.offset(1, 0), m.offset(0, 8), m.offset(8, 0)), (8, 64, 256));
    /// ```
    pub fn offset(&self, mn: usize, k: usize) -> u32 {
        self.offsets[mn * self.k + k]
    }
    /// The element offset where K block `block` starts (its `(0, block · k_step)`).
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.block_offset(1), 128);
    /// ```
    pub fn block_offset(&self, block: usize) -> u32 {
        self.offset(0, block * self.k_step())
    }
    /// Bytes a tile origin must be aligned to (the swizzle pattern's repeat).
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.align_bytes(), 16);
    /// ```
    pub fn align_bytes(&self) -> u32 {
        self.layout.align_bytes()
    }
    /// The largest element offset of the tile, plus one.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{interleaved, DescLayout, Major, SmemMatrix}, ScalarType};
    /// let m = SmemMatrix::from_layout(&interleaved(Major::K, 64, 32, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.extent(), 64 * 32);
    /// ```
    pub fn extent(&self) -> usize {
        self.offsets.iter().max().map_or(0, |&m| m as usize + 1)
    }

    /// The descriptor of K block `block` of the tile whose origin is at shared byte address
    /// `origin`.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{Major, SmemMatrix}, ScalarType};
    /// use tilekit_layout::swizzle::HopperSwizzle;
    /// let m = SmemMatrix::from_layout(&HopperSwizzle::B128.descriptor(64, 64, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(m.descriptor(2048, 3).start, 2048 + 3 * 32);
    /// ```
    pub fn descriptor(&self, origin: u32, block: usize) -> MatrixDescriptor {
        let eb = self.elem.size_bytes() as u32;
        MatrixDescriptor {
            start: origin.wrapping_add(self.block_offset(block) * eb),
            lbo: self.lbo,
            sbo: self.sbo,
            base_offset: 0,
            layout: self.layout,
        }
    }

    /// Checks that K block `block`'s descriptor, for a tile at shared byte `origin`, reads
    /// every element where the layout stores it; the first disagreement otherwise (a swizzled
    /// tile whose origin is not aligned to [`align_bytes`](Self::align_bytes), for instance).
    ///
    /// ```
    /// use tilekit_ir::{wgmma::{Major, SmemMatrix}, ScalarType};
    /// use tilekit_layout::swizzle::HopperSwizzle;
    /// let m = SmemMatrix::from_layout(&HopperSwizzle::B128.descriptor(64, 64, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert!(m.check(1024, 0).is_ok());
    /// // not 1024-aligned: the tile's row 0 falls on row 4 of the hardware's pattern
    /// let d = m.check(512, 0).unwrap_err();
    /// assert_eq!((d.mn, d.k, d.layout_byte, d.descriptor_byte), (0, 0, 512, 512 + 64));
    /// ```
    pub fn check(&self, origin: u32, block: usize) -> Result<(), Disagreement> {
        let eb = self.elem.size_bytes();
        let d = self.descriptor(origin, block);
        let ks = self.k_step();
        for i in 0..self.mn {
            for j in 0..ks {
                let want = origin as u64 + self.offset(i, block * ks + j) as u64 * eb as u64;
                let got = d.address(self.major, eb, i, j) as u64;
                if want != got {
                    return Err(Disagreement {
                        mn: i,
                        k: j,
                        layout_byte: want,
                        descriptor_byte: got,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The non-swizzled ("interleave") core-matrix layout of an `mn × k` tile as a tilekit-layout
/// descriptor: 8×16-byte core matrices stored one after another, the K-direction neighbour
/// first (`Major::K`: top `(mn, k)`, core matrix `(mn/8, kchunk)` at `(mn/8 · K/T + kchunk) ·
/// 8T` elements, T = 16 / elem_bytes), or the MN-direction neighbour first (`Major::MN`: top
/// `(k, mn)`, core matrix `(k/8, mnchunk)` at `(k/8 · MN/T + mnchunk) · 8T`).
///
/// ```
/// use tilekit_ir::wgmma::{interleaved, Major};
/// let d = interleaved(Major::K, 16, 16, 2).unwrap();   // f16: T = 8
/// assert_eq!(d.calculate_offset(&[1, 0]).unwrap(), 8);     // next row of the core matrix
/// assert_eq!(d.calculate_offset(&[0, 8]).unwrap(), 64);    // next core matrix along K
/// assert_eq!(d.calculate_offset(&[8, 0]).unwrap(), 128);   // next 8 rows
/// assert!(interleaved(Major::K, 12, 16, 2).is_err());
/// ```
pub fn interleaved(
    major: Major,
    mn: i64,
    k: i64,
    elem_bytes: i64,
) -> Result<TensorDescriptor<i64>, tilekit_layout::LayoutError> {
    use tilekit_layout::transform::Transform;
    let ctx = "interleaved core-matrix layout";
    if ![1, 2, 4, 8, 16].contains(&elem_bytes) {
        return Err(tilekit_layout::LayoutError::invalid(
            ctx,
            "elem_bytes",
            elem_bytes,
            "must be 1, 2, 4, 8 or 16",
        ));
    }
    let t = 16 / elem_bytes;
    // (outer, inner): inner = the contiguous axis (chunks of T), outer = the other (rows of 8)
    let (outer, inner) = match major {
        Major::K => (mn, k),
        Major::MN => (k, mn),
    };
    if outer < 8 || outer % 8 != 0 || inner < t || inner % t != 0 {
        return Err(tilekit_layout::LayoutError::invalid(
            ctx,
            "extents",
            format!("{mn}×{k}"),
            format!(
                "the strided axis must be a positive multiple of 8 and the contiguous one of {t}"
            ),
        ));
    }
    let storage = TensorDescriptor::packed(vec![outer / 8, inner / t, 8, t], Some(t))?;
    storage.transform(
        vec![Transform::merge(vec![outer / 8, 8])?, Transform::merge(vec![inner / t, t])?],
        vec![vec![0, 2], vec![1, 3]],
        vec![vec![0], vec![1]],
    )
}

/// The A operand of a wgmma at the builder: a descriptor value or the thread's fragment.
///
/// ```
/// use tilekit_ir::wgmma::WgmmaSrc;
/// use tilekit_layout::Idx;
/// let s = WgmmaSrc::Regs(vec![Idx::lit(0)]);
/// assert!(matches!(s, WgmmaSrc::Regs(ref v) if v.len() == 1));
/// ```
#[derive(Debug, Clone)]
pub enum WgmmaSrc {
    /// A shared-memory descriptor (from [`KernelBuilder::wgmma_desc`]).
    Smem(Val),
    /// The thread's A fragment: [`WgmmaType::a_regs`] values of the input type (see
    /// [`a_coord`]), or, for f16/bf16, half as many `u32` words each holding two of them
    /// (fragment values `2j` low, `2j + 1` high: [`KernelBuilder::cvt_pack`]).
    Regs(Vec<Val>),
}

/// What the accumulator starts from.
///
/// ```
/// use tilekit_ir::wgmma::Acc;
/// assert!(matches!(Acc::Zero, Acc::Zero));
/// ```
#[derive(Debug, Clone, Copy)]
pub enum Acc<'a> {
    /// D = A·B (scale-d false; no input accumulator).
    Zero,
    /// D = A·B + C.
    Add(&'a [Val]),
    /// D = A·B + (p ? C : 0), `p` a runtime predicate (scale-d).
    Scaled(&'a [Val], &'a Pred),
}

/// The A operand of a wgmma in the IR.
///
/// ```
/// use tilekit_ir::{wgmma::WgmmaA, ValueId};
/// assert_eq!(WgmmaA::Desc(ValueId(3)).values(), vec![ValueId(3)]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WgmmaA {
    /// A shared-memory descriptor (`i64`).
    Desc(ValueId),
    /// The thread's fragment.
    Regs(Vec<ValueId>),
}

impl WgmmaA {
    /// The values it reads.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::WgmmaA, ValueId};
    /// assert_eq!(WgmmaA::Regs(vec![ValueId(1), ValueId(2)]).values().len(), 2);
    /// ```
    pub fn values(&self) -> Vec<ValueId> {
        match self {
            WgmmaA::Desc(d) => vec![*d],
            WgmmaA::Regs(r) => r.clone(),
        }
    }
}

/// A wgmma op (see the [module docs](self)).
///
/// ```
/// use tilekit_ir::WgmmaOp;
/// assert_eq!(WgmmaOp::Wait { pending: 1 }.name(), "wgmma.wait_group");
/// assert!(WgmmaOp::Fence.operands().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WgmmaOp {
    /// `wgmma.fence.sync.aligned`: register writes before it are ordered before the wgmmas
    /// after it.
    Fence,
    /// `wgmma.commit_group.sync.aligned`: the wgmmas issued since the last commit form a group.
    Commit,
    /// `wgmma.wait_group.sync.aligned pending`: waits until at most `pending` committed groups
    /// are in flight.
    Wait {
        /// Groups that may stay in flight.
        pending: u32,
    },
    /// The matrix descriptor (`i64`) of K block `block` of the tile `matrix` stored at element
    /// `origin` of the shared allocation `mem`.
    Desc {
        /// The shared allocation.
        mem: MemRef,
        /// Element offset of the tile's origin in it.
        origin: ValueId,
        /// The tile (its derived descriptor parameters and layout offsets).
        matrix: Box<SmemMatrix>,
        /// Which K block.
        block: u32,
    },
    /// `wgmma.mma_async.sync.aligned.m64nNkK.f32.T.T`: results D (N/2 f32 per thread).
    Mma {
        /// Shape, type and transposes.
        shape: WgmmaShape,
        /// A.
        a: WgmmaA,
        /// B's descriptor.
        b: ValueId,
        /// Input accumulator (N/2 values; empty = zero).
        c: Vec<ValueId>,
        /// scale-d predicate (None: accumulate when `c` is given).
        scale_d: Option<ValueId>,
    },
}

impl WgmmaOp {
    /// The PTX mnemonic.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::WgmmaOp::Commit.name(), "wgmma.commit_group");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            WgmmaOp::Fence => "wgmma.fence",
            WgmmaOp::Commit => "wgmma.commit_group",
            WgmmaOp::Wait { .. } => "wgmma.wait_group",
            WgmmaOp::Desc { .. } => "wgmma.desc",
            WgmmaOp::Mma { .. } => "wgmma.mma_async",
        }
    }

    /// The values it reads.
    ///
    /// ```
    /// use tilekit_ir::{WgmmaOp, wgmma::{WgmmaA, WgmmaShape, WgmmaType}, ValueId};
    /// let shape = WgmmaShape::new(WgmmaType::F16, 8).unwrap();
    /// let op = WgmmaOp::Mma { shape, a: WgmmaA::Desc(ValueId(1)), b: ValueId(2), c: vec![], scale_d: None };
    /// assert_eq!(op.operands(), vec![ValueId(1), ValueId(2)]);
    /// ```
    pub fn operands(&self) -> Vec<ValueId> {
        match self {
            WgmmaOp::Fence | WgmmaOp::Commit | WgmmaOp::Wait { .. } => vec![],
            WgmmaOp::Desc { origin, .. } => vec![*origin],
            WgmmaOp::Mma { a, b, c, scale_d, .. } => {
                let mut v = a.values();
                v.push(*b);
                v.extend(c);
                v.extend(scale_d);
                v
            }
        }
    }

    pub(crate) fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        match self {
            WgmmaOp::Fence | WgmmaOp::Commit | WgmmaOp::Wait { .. } => vec![],
            WgmmaOp::Desc { origin, .. } => vec![origin],
            WgmmaOp::Mma { a, b, c, scale_d, .. } => {
                let mut v: Vec<&mut ValueId> = match a {
                    WgmmaA::Desc(d) => vec![d],
                    WgmmaA::Regs(r) => r.iter_mut().collect(),
                };
                v.push(b);
                v.extend(c.iter_mut());
                v.extend(scale_d.as_mut());
                v
            }
        }
    }

    /// Whether dead-code elimination must keep it (everything but a descriptor).
    ///
    /// ```
    /// assert!(tilekit_ir::WgmmaOp::Fence.has_effect());
    /// ```
    pub fn has_effect(&self) -> bool {
        !matches!(self, WgmmaOp::Desc { .. })
    }

    /// The memories it names.
    ///
    /// ```
    /// assert!(tilekit_ir::WgmmaOp::Commit.mems().is_empty());
    /// ```
    pub fn mems(&self) -> Vec<MemRef> {
        match self {
            WgmmaOp::Desc { mem, .. } => vec![*mem],
            _ => vec![],
        }
    }

    /// The dump text after the mnemonic.
    pub(crate) fn text(&self, k: &Kernel) -> String {
        let list = |v: &[ValueId]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
        match self {
            WgmmaOp::Fence => "wgmma.fence".into(),
            WgmmaOp::Commit => "wgmma.commit_group".into(),
            WgmmaOp::Wait { pending } => format!("wgmma.wait_group {pending}"),
            WgmmaOp::Desc { mem, origin, matrix, block } => {
                let name = match mem.space {
                    MemSpace::Shared(s) => {
                        k.shared.get(s as usize).map_or(format!("shared{s}"), |d| d.name.clone())
                    }
                    MemSpace::Global(p) => format!("param{p}"),
                };
                format!(
                    "wgmma.desc {} {} {}x{} {} lbo {} sbo {} {name}[{origin}] kblock {block}",
                    matrix.layout.name(),
                    matrix.major,
                    matrix.mn,
                    matrix.k,
                    matrix.elem,
                    matrix.lbo,
                    matrix.sbo
                )
            }
            WgmmaOp::Mma { shape, a, b, c, scale_d } => {
                let t = shape.ty.name();
                let a = match a {
                    WgmmaA::Desc(d) => format!("desc {d}"),
                    WgmmaA::Regs(r) => format!("{{{}}}", list(r)),
                };
                let acc = match (c.is_empty(), scale_d) {
                    (true, _) => "zero".to_string(),
                    (false, None) => format!("{{{}}}", list(c)),
                    (false, Some(p)) => format!("{{{}}} scale-d {p}", list(c)),
                };
                format!(
                    "wgmma.mma_async.{}.f32.{t}.{t} A {a}, B desc {b}, C {acc}{}{}",
                    shape.name(),
                    if shape.trans_a { " trans-a" } else { "" },
                    if shape.trans_b { " trans-b" } else { "" }
                )
            }
        }
    }
}

/// Row and column of the accumulator D (64×N) held by thread `thread` (0..128 of the
/// warpgroup) in register `reg` (0..N/2) — the PTX ISA's fragment layout for wgmma `.m64nNk*`
/// with f32 accumulators: warp `w = thread / 32` owns rows `16w..16w+16`; lane `l` holds row
/// `16w + l/4 (+8 for odd register pairs)`, columns `8·(reg/4) + 2·(l mod 4) (+1)`.
///
/// ```
/// use tilekit_ir::wgmma::acc_coord;
/// assert_eq!(acc_coord(0, 0), (0, 0));
/// assert_eq!(acc_coord(5, 3), (9, 3));      // lane 5: row 1 (+8), col 2 (+1)
/// assert_eq!(acc_coord(37, 6), (25, 10));   // warp 1, lane 5, reg 6: col block 1
/// ```
pub fn acc_coord(thread: usize, reg: usize) -> (usize, usize) {
    let (w, l) = (thread / 32, thread % 32);
    (16 * w + l / 4 + 8 * ((reg / 2) % 2), 8 * (reg / 4) + 2 * (l % 4) + reg % 2)
}

/// Row (m) and column (k) of the A fragment (64×K) held by thread `thread` (0..128) in value
/// `i`, when A comes from registers: for f16/bf16 (8 values) like `mma.sync`'s A per warp,
/// `row 16w + l/4 + 8·(i/2 mod 2)`, `k 2·(l mod 4) + i mod 2 + 8·(i/4)`; for tf32 (4 values)
/// `row 16w + l/4 + 8·(i mod 2)`, `k l mod 4 + 4·(i/2)`.
///
/// ```
/// use tilekit_ir::wgmma::{a_coord, WgmmaType};
/// assert_eq!(a_coord(WgmmaType::F16, 5, 6), (9, 10));
/// assert_eq!(a_coord(WgmmaType::TF32, 37, 3), (25, 5));
/// ```
pub fn a_coord(ty: WgmmaType, thread: usize, i: usize) -> (usize, usize) {
    let (w, l) = (thread / 32, thread % 32);
    match ty {
        WgmmaType::TF32 => (16 * w + l / 4 + 8 * (i % 2), l % 4 + 4 * (i / 2)),
        _ => (16 * w + l / 4 + 8 * ((i / 2) % 2), 2 * (l % 4) + i % 2 + 8 * (i / 4)),
    }
}

/// Byte offsets of a kernel's shared allocations in the layout both the interpreter and the
/// PTX backend use: 16-byte aligned, and aligned to its swizzle pattern (up to 1024 bytes)
/// when a wgmma descriptor names the allocation.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType};
/// let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
/// b.shared("x", ScalarType::F32, 3).unwrap();
/// b.shared("y", ScalarType::F32, 5).unwrap();
/// let k = b.finish().unwrap();
/// assert_eq!(tilekit_ir::wgmma::shared_offsets(&k), (vec![0, 16], 48));
/// ```
pub fn shared_offsets(k: &Kernel) -> (Vec<usize>, usize) {
    let align = crate::kernel::shared_alignments(k);
    let mut at = 0usize;
    let mut offs = Vec::with_capacity(k.shared.len());
    for (s, a) in k.shared.iter().zip(align) {
        at = at.next_multiple_of(a);
        offs.push(at);
        at += s.size_bytes().div_ceil(16) * 16;
    }
    (offs, at)
}

/// The alignment of each shared allocation (see [`shared_offsets`]): 16, or the largest
/// [`SmemMatrix::align_bytes`] of a wgmma descriptor naming it.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType};
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// b.shared("x", ScalarType::F32, 3).unwrap();
/// assert_eq!(tilekit_ir::wgmma::shared_alignments(&b.finish().unwrap()), vec![16]);
/// ```
pub fn shared_alignments(k: &Kernel) -> Vec<usize> {
    let mut align = vec![16usize; k.shared.len()];
    k.body.walk(&mut |i| {
        if let Op::Wgmma(WgmmaOp::Desc {
            mem: MemRef { space: MemSpace::Shared(s), .. },
            matrix,
            ..
        }) = &i.op
        {
            if let Some(a) = align.get_mut(*s as usize) {
                *a = (*a).max(matrix.align_bytes() as usize);
            }
        }
    });
    align
}

impl KernelBuilder {
    fn wg_check(&self, op: &str) -> Result<()> {
        let threads: usize = self.ctx.borrow().block_dim.iter().map(|&d| d as usize).product();
        if !threads.is_multiple_of(128) {
            return Err(WgmmaError::NotWarpgroups { op: op.into(), threads }.into());
        }
        Ok(())
    }

    fn push_wgmma(&self, w: WgmmaOp, results: &[ScalarType]) -> Vec<ValueId> {
        self.ctx.borrow_mut().push(Op::Wgmma(w), results)
    }

    /// When `d` is a descriptor made by [`wgmma_desc`](Self::wgmma_desc) in an open block, its
    /// tile must have the wgmma's element type, the major-ness its transpose flag says and at
    /// least `rows` MN rows (descriptors computed otherwise are checked by the interpreter).
    fn check_desc_operand(
        &self,
        op: &str,
        d: ValueId,
        what: &str,
        ty: WgmmaType,
        trans: bool,
        rows: usize,
    ) -> Result<()> {
        let c = self.ctx.borrow();
        let found = c.stack.iter().flat_map(|(_, blk)| &blk.insts).find_map(|i| match &i.op {
            Op::Wgmma(WgmmaOp::Desc { matrix, .. }) if i.results.first() == Some(&d) => {
                Some(matrix.clone())
            }
            _ => None,
        });
        let Some(m) = found else { return Ok(()) };
        if m.elem != ty.elem() {
            return Err(WgmmaError::Dtype {
                op: op.into(),
                what: format!("the {what} tile"),
                got: m.elem,
                valid: ty.elem().to_string(),
            }
            .into());
        }
        let want = if trans { Major::MN } else { Major::K };
        if m.major != want {
            return Err(IrError::Invalid {
                op: op.into(),
                what: format!("the {what} tile's major-ness"),
                value: m.major.to_string(),
                valid: format!("{want} (trans-{} = {trans})", what.to_lowercase()),
            });
        }
        if m.mn < rows {
            return Err(IrError::Invalid {
                op: op.into(),
                what: format!("the {what} tile's MN extent"),
                value: m.mn.to_string(),
                valid: format!("at least {rows} rows, what one wgmma reads"),
            });
        }
        Ok(())
    }

    /// `wgmma.fence`: orders the registers written before it (accumulators, A fragments) before
    /// the wgmmas after it. Needed before the first wgmma and after any register write to a
    /// wgmma operand. The block must be whole warpgroups.
    ///
    /// ```
    /// let b = tilekit_ir::KernelBuilder::new("k", [128, 1, 1]).unwrap();
    /// b.wgmma_fence().unwrap();
    /// let b = tilekit_ir::KernelBuilder::new("k", [96, 1, 1]).unwrap();
    /// assert!(b.wgmma_fence().is_err());
    /// ```
    pub fn wgmma_fence(&self) -> Result<()> {
        self.wg_check("wgmma.fence")?;
        self.push_wgmma(WgmmaOp::Fence, &[]);
        Ok(())
    }

    /// `wgmma.commit_group`: closes the group of the wgmmas issued since the last commit.
    ///
    /// ```
    /// let b = tilekit_ir::KernelBuilder::new("k", [256, 1, 1]).unwrap();
    /// b.wgmma_commit().unwrap();
    /// ```
    pub fn wgmma_commit(&self) -> Result<()> {
        self.wg_check("wgmma.commit_group")?;
        self.push_wgmma(WgmmaOp::Commit, &[]);
        Ok(())
    }

    /// `wgmma.wait_group pending`: waits until at most `pending` committed groups are in
    /// flight; the accumulators of the groups it retires may be used from here on.
    ///
    /// ```
    /// let b = tilekit_ir::KernelBuilder::new("k", [128, 1, 1]).unwrap();
    /// b.wgmma_wait(0).unwrap();
    /// ```
    pub fn wgmma_wait(&self, pending: u32) -> Result<()> {
        self.wg_check("wgmma.wait_group")?;
        self.push_wgmma(WgmmaOp::Wait { pending }, &[]);
        Ok(())
    }

    /// The matrix descriptor (an `i64` value) of K block `block` of the shared tile
    /// `matrix` whose origin is element `origin` of the shared allocation `mem` — computed
    /// from the tile's derived parameters and the allocation's address, never by hand.
    /// Errors: not a shared allocation of the tile's element type, a block outside the tile,
    /// a constant origin whose tile runs past the allocation.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, wgmma::{Major, SmemMatrix}};
    /// use tilekit_layout::{swizzle::HopperSwizzle, Idx};
    /// let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
    /// let s = b.shared("a", ScalarType::F16, 64 * 64).unwrap();
    /// let m = SmemMatrix::from_layout(&HopperSwizzle::B128.descriptor(64, 64, 2).unwrap(), Major::K, ScalarType::F16).unwrap();
    /// assert_eq!(b.wgmma_desc(s, &Idx::lit(0), &m, 3).unwrap().ty(), Some(ScalarType::I64));
    /// assert!(b.wgmma_desc(s, &Idx::lit(0), &m, 4).is_err());     // 4 blocks: 0..4
    /// assert!(b.wgmma_desc(s, &Idx::lit(64), &m, 0).is_err());    // runs past the allocation
    /// ```
    pub fn wgmma_desc(
        &self,
        mem: MemRef,
        origin: &Val,
        matrix: &SmemMatrix,
        block: usize,
    ) -> Result<Val> {
        let op = "wgmma.desc";
        self.check_mem(mem, op)?;
        let MemSpace::Shared(s) = mem.space else {
            return Err(IrError::Invalid {
                op: op.into(),
                what: "memory".into(),
                value: "a global pointer".into(),
                valid: "a shared allocation".into(),
            });
        };
        if mem.elem != matrix.elem {
            return Err(WgmmaError::Dtype {
                op: op.into(),
                what: "the shared allocation".into(),
                got: mem.elem,
                valid: format!("{} (the tile's type)", matrix.elem),
            }
            .into());
        }
        if block >= matrix.blocks() {
            return Err(WgmmaError::Block {
                block,
                blocks: matrix.blocks(),
                k_step: matrix.k_step(),
            }
            .into());
        }
        let origin = self.offset_operand(origin, op)?;
        let (konst, len) = {
            let c = self.ctx.borrow();
            (c.int_of(origin), c.shared.get(s as usize).map_or(0, |d| d.len))
        };
        if let Some(o) = konst {
            if o < 0 || o as usize + matrix.extent() > len {
                return Err(IrError::Invalid {
                    op: op.into(),
                    what: "tile origin".into(),
                    value: o.to_string(),
                    valid: format!(
                        "0..={} (the tile spans {} elements of an allocation of {len})",
                        len.saturating_sub(matrix.extent()),
                        matrix.extent()
                    ),
                });
            }
        }
        let w =
            WgmmaOp::Desc { mem, origin, matrix: Box::new(matrix.clone()), block: block as u32 };
        let id = self.push_wgmma(w, &[ScalarType::I64])[0];
        Ok(self.wrap(id))
    }

    /// `wgmma.mma_async.sync.aligned.m64nNkK.f32.T.T`: the warpgroup computes `D = A·B (+ C)`
    /// (see the [module docs](crate::wgmma)); returns D, N/2 f32 values per thread laid out as
    /// [`acc_coord`] says. `a` is a descriptor (from [`wgmma_desc`](Self::wgmma_desc)) or the
    /// thread's A fragment ([`a_coord`]); `b` a descriptor. The results are in flight until
    /// the `wgmma.wait_group` that retires their group. Errors: a block of partial warpgroups,
    /// wrong fragment counts or types, a non-`i64` descriptor, a transposed A in registers.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, Lit, wgmma::{Acc, WgmmaShape, WgmmaSrc, WgmmaType}};
    /// let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
    /// let h = b.konst(Lit::float(ScalarType::F16, 1.0).unwrap());
    /// let desc = b.konst(Lit::int(ScalarType::I64, 0).unwrap());
    /// let shape = WgmmaShape::new(WgmmaType::F16, 16).unwrap();
    /// let d = b.wgmma(shape, &WgmmaSrc::Regs(vec![h.clone(); 8]), &desc, Acc::Zero).unwrap();
    /// let d2 = b.wgmma(shape, &WgmmaSrc::Regs(vec![h.clone(); 8]), &desc, Acc::Add(&d)).unwrap();
    /// assert_eq!(d2.len(), 8);
    /// assert!(b.wgmma(shape, &WgmmaSrc::Regs(vec![h; 4]), &desc, Acc::Zero).is_err());
    /// // the same fragment as 4 packed pairs
    /// let w = b.cvt_pack(&b.f32(1.0), &b.f32(1.0), ScalarType::F16).unwrap();
    /// assert!(b.wgmma(shape, &WgmmaSrc::Regs(vec![w; 4]), &desc, Acc::Zero).is_ok());
    /// ```
    pub fn wgmma(
        &self,
        shape: WgmmaShape,
        a: &WgmmaSrc,
        b: &Val,
        acc: Acc<'_>,
    ) -> Result<Vec<Val>> {
        let op = format!("wgmma.mma_async.{}.f32.{t}.{t}", shape.name(), t = shape.ty.name());
        self.wg_check(&op)?;
        let shape = WgmmaShape::new(shape.ty, shape.n)?.transposed(shape.trans_a, shape.trans_b)?;
        let typed = |v: &Val, ty: ScalarType, what: &str| -> Result<ValueId> {
            let id = self.operand(v, Some(ty), &op)?;
            let got = self.ctx.borrow().ty(id);
            if got != ty {
                return Err(WgmmaError::Dtype {
                    op: op.clone(),
                    what: what.into(),
                    got,
                    valid: ty.to_string(),
                }
                .into());
            }
            Ok(id)
        };
        let a = match a {
            WgmmaSrc::Smem(d) => WgmmaA::Desc(typed(d, ScalarType::I64, "A descriptor")?),
            WgmmaSrc::Regs(r) => {
                if shape.trans_a {
                    return Err(WgmmaError::Transpose {
                        op,
                        what: "A in registers".into(),
                        why: "only a shared-memory A may be transposed".into(),
                    }
                    .into());
                }
                // 16-bit inputs may come packed in pairs (u32 words)
                let packed = shape.ty.elem().size_bytes() == 2
                    && r.first().and_then(|v| v.ty()) == Some(ScalarType::U32);
                let expected = shape.ty.a_regs() / if packed { 2 } else { 1 };
                if r.len() != expected {
                    return Err(IrError::OperandCount {
                        op,
                        what: "the A fragment".into(),
                        got: r.len(),
                        expected,
                    });
                }
                let elem = if packed { ScalarType::U32 } else { shape.ty.elem() };
                WgmmaA::Regs(r.iter().map(|v| typed(v, elem, "A fragment")).collect::<Result<_>>()?)
            }
        };
        let b = typed(b, ScalarType::I64, "B descriptor")?;
        if let WgmmaA::Desc(d) = &a {
            self.check_desc_operand(&op, *d, "A", shape.ty, shape.trans_a, 64)?;
        }
        self.check_desc_operand(&op, b, "B", shape.ty, shape.trans_b, shape.n as usize)?;
        let (c, p) = match acc {
            Acc::Zero => (&[][..], None),
            Acc::Add(c) => (c, None),
            Acc::Scaled(c, p) => (c, Some(p)),
        };
        if !matches!(acc, Acc::Zero) && c.len() != shape.acc_regs() {
            return Err(IrError::OperandCount {
                op,
                what: "the accumulator C".into(),
                got: c.len(),
                expected: shape.acc_regs(),
            });
        }
        let c =
            c.iter().map(|v| typed(v, ScalarType::F32, "accumulator C")).collect::<Result<_>>()?;
        let scale_d = p.map(|p| self.pred_operand(p, &op)).transpose()?;
        let w = WgmmaOp::Mma { shape, a, b, c, scale_d };
        let ids = self.push_wgmma(w, &vec![ScalarType::F32; shape.acc_regs()]);
        Ok(ids.into_iter().map(|i| self.wrap(i)).collect())
    }
}
