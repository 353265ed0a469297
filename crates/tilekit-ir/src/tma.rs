//! TMA tensor copies (`cp.async.bulk.tensor`): tensor maps, boxes, swizzled shared images and
//! out-of-bounds fill.
//!
//! # The model
//!
//! A **tensor map** (the driver's 128-byte `CUtensorMap`) describes a tensor in global memory —
//! element type, rank 1–5, the length of each dim and the byte stride of each dim but the
//! innermost — and a **box**: the block of elements one copy moves (at most 256 per dim, the
//! innermost dim a multiple of 16 bytes). A copy names the box by the coordinates of its first
//! element; one thread issues it, the copy engine (the async proxy, see [`crate::asyncop`])
//! does the rest. Dims and coordinates are listed **innermost first**, as the driver and PTX
//! list them: `dims[0]` is the contiguous one.
//!
//! * `tensor_load` (global→shared) writes the box densely into shared memory (the innermost
//!   dim fastest), the byte offset of every 16-byte chunk passed through the map's **swizzle**,
//!   and completes the box's bytes on an mbarrier. Box elements outside the tensor (a
//!   coordinate below 0 or past the end) are **filled** — zeros, or NaN when the map asks for
//!   it — and still count towards the transaction bytes.
//! * `tensor_store` (shared→global) reads the box image back through the same swizzle and
//!   writes the elements that lie inside the tensor; the others are dropped. It joins the
//!   thread's bulk group like `cp.async.bulk` stores.
//! * `tensor_prefetch` brings the box into L2 and changes nothing a kernel can observe.
//!
//! ```text
//!   global tensor: f32, dims [10, 3] (x contiguous), box [8, 2] loaded at coords (4, 1)
//!
//!            x:  0  1  2  3 │ 4  5  6  7  8  9 │ 10 11
//!   y = 0        ·  ·  ·  · │ ·  ·  ·  ·  ·  · │
//!   y = 1        ·  ·  ·  · │ a  b  c  d  e  f │  ∅  ∅      ∅: past the end of the tensor
//!   y = 2        ·  ·  ·  · │ g  h  i  j  k  l │  ∅  ∅
//!
//!   shared image (no swizzle): the box densely, innermost fastest; ∅ filled with 0 (or NaN),
//!   counted in complete_tx (8·2·4 = 64 bytes), and never written back by a tensor store
//!     row 0: a b c d e f 0 0
//!     row 1: g h i j k l 0 0
//!
//!   128-byte swizzle, box [32, 8] of f32: each row is 128 bytes = eight 16-byte chunks;
//!   the hardware stores logical chunk c of row r at chunk position c ⊕ (r mod 8)
//!     row 0: c0 c1 c2 c3 c4 c5 c6 c7
//!     row 1: c1 c0 c3 c2 c5 c4 c7 c6
//!     row 2: c2 c3 c0 c1 c6 c7 c4 c5
//!     …
//!     row 7: c7 c6 c5 c4 c3 c2 c1 c0      (32- and 64-byte modes: the same on 1 or 2 bits)
//! ```
//!
//! With a swizzle, the box's innermost dim must be exactly one swizzle row (32, 64 or 128
//! bytes — the driver allows fewer, but then the image is not a whole number of swizzle rows
//! and tilekit does not model it), and the shared destination must start on a multiple of
//! the pattern's repeat (`8 × row bytes`: 256, 512 or 1024 bytes; 128 without a swizzle), so
//! the pattern the hardware computes from absolute addresses is the one computed here from
//! offsets. The PTX backend aligns shared allocations that tensor copies touch accordingly.
//!
//! # Derived, never hand-written
//!
//! The shared side of a map is the layout of a shared tile: [`TensorMapSpec::from_layout`]
//! derives the swizzle from a `tilekit-layout` descriptor of the tile (for example
//! `HopperSwizzle::descriptor`), and [`TensorMapSpec::check_layout`] names the first box
//! element where a map and a layout disagree. The global side ([`TensorMapArg`]) comes from
//! the tensor's strides, or from its descriptor ([`TensorMapArg::from_descriptor`]), and
//! [`check_encode`] checks it against the driver's rules before anything is encoded.
//!
//! ```
//! use tilekit_ir::{KernelBuilder, ScalarType, Axis, CmpOp};
//! use tilekit_ir::tma::{TensorMapSpec, TmaSwizzle, OobFill};
//! use tilekit_layout::Idx;
//! let b = KernelBuilder::new("tile", [32, 1, 1]).unwrap();
//! let x = b.ptr_param("x", ScalarType::F16).unwrap();
//! let spec = TensorMapSpec::new(ScalarType::F16, &[64, 8], TmaSwizzle::B128, OobFill::Zero).unwrap();
//! let map = b.tensor_map_param("xmap", x, spec).unwrap();
//! let buf = b.shared("buf", ScalarType::F16, 512).unwrap();
//! let bar = b.mbarrier("full", 1).unwrap();
//! let first = b.cmp(CmpOp::Eq, &b.thread_id(Axis::X), &Idx::lit(0)).unwrap();
//! b.if_then(&first, |b| {
//!     b.mbarrier_init(bar, &Idx::lit(0), &Idx::lit(1))?;
//!     b.fence_mbarrier_init();
//!     b.mbarrier_arrive(bar, &Idx::lit(0), Some(&Idx::lit(spec.box_bytes() as i64)))?;
//!     b.tensor_load(buf, &Idx::lit(0), map, &[Idx::lit(0), Idx::lit(8)], bar, &Idx::lit(0))
//! }).unwrap();
//! b.barrier();
//! b.mbarrier_wait(bar, &Idx::lit(0), &Idx::lit(0)).unwrap();
//! let text = b.finish().unwrap().to_string();
//! assert!(text.contains("cp.async.bulk.tensor.2d.shared.global buf[%"));
//! assert!(text.contains("xmap: tensormap<f16, box [64, 8], swizzle 128B, oob zero> over x"));
//! ```

use crate::asyncop::AsyncOp;
use crate::builder::KernelBuilder;
use crate::error::{IrError, Result};
use crate::kernel::{Kernel, ParamKind};
use crate::op::{MemRef, MemSpace, ValueId};
use crate::types::ScalarType;
use crate::value::Val;
use tilekit_layout::swizzle::HopperSwizzle;
use tilekit_layout::TensorDescriptor;

/// The largest rank of a tensor map.
///
/// ```
/// assert_eq!(tilekit_ir::tma::MAX_RANK, 5);
/// ```
pub const MAX_RANK: usize = 5;

/// The largest box length of one dim.
///
/// ```
/// assert_eq!(tilekit_ir::tma::MAX_BOX, 256);
/// ```
pub const MAX_BOX: u32 = 256;

/// The shared-memory swizzle of a tensor map (`CU_TENSOR_MAP_SWIZZLE_*`).
///
/// ```
/// use tilekit_ir::tma::TmaSwizzle;
/// assert_eq!(TmaSwizzle::B64.span_bytes(), Some(64));
/// assert_eq!(TmaSwizzle::None.span_bytes(), None);
/// // 128-byte mode: row 3 (byte 384), chunk 1 (byte 16) lands in chunk 1 ⊕ 3 = 2
/// assert_eq!(TmaSwizzle::B128.apply(3 * 128 + 16), 3 * 128 + 32);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TmaSwizzle {
    /// The box is stored densely, unswizzled.
    None,
    /// 32-byte swizzle.
    B32,
    /// 64-byte swizzle.
    B64,
    /// 128-byte swizzle.
    B128,
}

impl TmaSwizzle {
    /// All modes, unswizzled first.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::tma::TmaSwizzle::ALL.len(), 4);
    /// ```
    pub const ALL: [TmaSwizzle; 4] =
        [TmaSwizzle::None, TmaSwizzle::B32, TmaSwizzle::B64, TmaSwizzle::B128];

    /// The `tilekit-layout` swizzle it is (none for [`TmaSwizzle::None`]).
    ///
    /// ```
    /// use tilekit_ir::tma::TmaSwizzle;
    /// use tilekit_layout::swizzle::HopperSwizzle;
    /// assert_eq!(TmaSwizzle::B32.hopper(), Some(HopperSwizzle::B32));
    /// ```
    pub fn hopper(self) -> Option<HopperSwizzle> {
        match self {
            TmaSwizzle::None => None,
            TmaSwizzle::B32 => Some(HopperSwizzle::B32),
            TmaSwizzle::B64 => Some(HopperSwizzle::B64),
            TmaSwizzle::B128 => Some(HopperSwizzle::B128),
        }
    }

    /// Bytes of one swizzle row (the largest inner box the driver accepts), none unswizzled.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::tma::TmaSwizzle::B128.span_bytes(), Some(128));
    /// ```
    pub fn span_bytes(self) -> Option<usize> {
        self.hopper().map(|h| h.row_bytes() as usize)
    }

    /// The byte offset where the hardware stores byte `offset` of the dense box image.
    ///
    /// ```
    /// use tilekit_ir::tma::TmaSwizzle;
    /// assert_eq!(TmaSwizzle::None.apply(400), 400);
    /// assert_eq!(TmaSwizzle::B32.apply(128), 144); // bit 7 flips chunk bit 4
    /// ```
    pub fn apply(self, offset: usize) -> usize {
        match self.hopper() {
            None => offset,
            Some(h) => h.swizzle_byte_offset(offset as i64) as usize,
        }
    }

    /// The alignment (bytes) a shared destination or source must have: 128 unswizzled, the
    /// pattern's repeat (8 rows) otherwise.
    ///
    /// ```
    /// use tilekit_ir::tma::TmaSwizzle;
    /// assert_eq!(TmaSwizzle::None.shared_align(), 128);
    /// assert_eq!(TmaSwizzle::B128.shared_align(), 1024);
    /// ```
    pub fn shared_align(self) -> usize {
        self.span_bytes().map_or(128, |s| 8 * s)
    }

    /// `"none"`, `"32B"`, `"64B"` or `"128B"`.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::tma::TmaSwizzle::B64.name(), "64B");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            TmaSwizzle::None => "none",
            TmaSwizzle::B32 => "32B",
            TmaSwizzle::B64 => "64B",
            TmaSwizzle::B128 => "128B",
        }
    }
}

impl From<HopperSwizzle> for TmaSwizzle {
    fn from(h: HopperSwizzle) -> Self {
        match h {
            HopperSwizzle::B32 => TmaSwizzle::B32,
            HopperSwizzle::B64 => TmaSwizzle::B64,
            HopperSwizzle::B128 => TmaSwizzle::B128,
        }
    }
}

/// What a load puts in box elements outside the tensor (`CU_TENSOR_MAP_FLOAT_OOB_FILL_*`).
///
/// ```
/// use tilekit_ir::{tma::OobFill, ScalarType};
/// assert_eq!(OobFill::Zero.bits(ScalarType::F32), 0);
/// assert_eq!(OobFill::Nan.bits(ScalarType::F16), 0x7e00);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OobFill {
    /// Zeros.
    Zero,
    /// NaN (`NAN_REQUEST_ZERO_FMA`; float types only). The interpreter writes the type's
    /// canonical quiet NaN; compare NaN fills by NaN-ness, not bits.
    Nan,
}

impl OobFill {
    /// The bits written for one element of `elem`.
    ///
    /// ```
    /// use tilekit_ir::{tma::OobFill, ScalarType};
    /// assert!(f32::from_bits(OobFill::Nan.bits(ScalarType::F32) as u32).is_nan());
    /// ```
    pub fn bits(self, elem: ScalarType) -> u64 {
        match (self, elem) {
            (OobFill::Zero, _) => 0,
            (OobFill::Nan, ScalarType::F16) => 0x7e00,
            (OobFill::Nan, ScalarType::BF16) => 0x7fc0,
            (OobFill::Nan, ScalarType::F32) => 0x7fc0_0000,
            (OobFill::Nan, ScalarType::F64) => 0x7ff8_0000_0000_0000,
            (OobFill::Nan, _) => 0,
        }
    }

    /// `"zero"` or `"nan"`.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::tma::OobFill::Nan.name(), "nan");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            OobFill::Zero => "zero",
            OobFill::Nan => "nan",
        }
    }
}

/// The static part of a tensor map: element type, box, swizzle and fill. The rank is the
/// box's. Made only by [`TensorMapSpec::new`] (or [`TensorMapSpec::from_layout`]), which
/// check the rules, so a spec is always valid.
///
/// ```
/// use tilekit_ir::{tma::{TensorMapSpec, TmaSwizzle, OobFill}, ScalarType};
/// let s = TensorMapSpec::new(ScalarType::F32, &[32, 4, 2], TmaSwizzle::B128, OobFill::Zero).unwrap();
/// assert_eq!((s.rank(), s.box_dims(), s.box_elems(), s.box_bytes()), (3, &[32, 4, 2][..], 256, 1024));
/// let e = TensorMapSpec::new(ScalarType::F32, &[6, 4], TmaSwizzle::None, OobFill::Zero).unwrap_err();
/// assert!(e.to_string().contains("inner box bytes = 24"), "{e}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TensorMapSpec {
    elem: ScalarType,
    rank: u8,
    box_dims: [u32; MAX_RANK],
    swizzle: TmaSwizzle,
    oob: OobFill,
}

impl TensorMapSpec {
    /// A spec with box `box_dims` (innermost first). Rules: a non-predicate element type; rank
    /// 1..=5; each box dim 1..=256; the inner box a multiple of 16 bytes; with a swizzle, the
    /// inner box exactly one swizzle row (32, 64 or 128 bytes); NaN fill only for floats.
    ///
    /// ```
    /// use tilekit_ir::{tma::{TensorMapSpec, TmaSwizzle, OobFill}, ScalarType};
    /// assert!(TensorMapSpec::new(ScalarType::F16, &[64, 300], TmaSwizzle::B128, OobFill::Zero).is_err());
    /// assert!(TensorMapSpec::new(ScalarType::F16, &[32, 8], TmaSwizzle::B128, OobFill::Zero).is_err());
    /// assert!(TensorMapSpec::new(ScalarType::I32, &[4], TmaSwizzle::None, OobFill::Nan).is_err());
    /// ```
    pub fn new(
        elem: ScalarType,
        box_dims: &[u32],
        swizzle: TmaSwizzle,
        oob: OobFill,
    ) -> Result<Self> {
        let bad = |what: &str, value: String, valid: String| IrError::Invalid {
            op: "tensor map".into(),
            what: what.into(),
            value,
            valid,
        };
        if elem == ScalarType::Pred {
            return Err(IrError::WrongType {
                op: "tensor map".into(),
                ty: elem,
                valid: "i32, u32, i64, f16, bf16, f32, f64".into(),
            });
        }
        if box_dims.is_empty() || box_dims.len() > MAX_RANK {
            return Err(bad("rank (box dims)", format!("{}", box_dims.len()), "1..=5 dims".into()));
        }
        for (i, &d) in box_dims.iter().enumerate() {
            if !(1..=MAX_BOX).contains(&d) {
                return Err(bad(&format!("box dim {i}"), d.to_string(), "1..=256 elements".into()));
            }
        }
        let inner = box_dims[0] as usize * elem.size_bytes();
        if !inner.is_multiple_of(16) {
            return Err(bad(
                "inner box bytes",
                format!("{inner} ({} × {elem})", box_dims[0]),
                format!("a multiple of 16 bytes ({} elements of {elem})", 16 / elem.size_bytes()),
            ));
        }
        if let Some(span) = swizzle.span_bytes() {
            if inner != span {
                return Err(bad(
                    "inner box bytes",
                    format!(
                        "{inner} ({} × {elem}) with the {} swizzle",
                        box_dims[0],
                        swizzle.name()
                    ),
                    format!(
                        "exactly one swizzle row: {span} bytes = {} elements (the driver allows \
                         fewer, whose image tilekit does not model)",
                        span / elem.size_bytes()
                    ),
                ));
            }
        }
        if oob == OobFill::Nan && !elem.is_float() {
            return Err(bad(
                "oob fill",
                format!("nan for {elem}"),
                "zero for integer types (NaN only for floats)".into(),
            ));
        }
        let mut b = [1u32; MAX_RANK];
        b[..box_dims.len()].copy_from_slice(box_dims);
        Ok(TensorMapSpec { elem, rank: box_dims.len() as u8, box_dims: b, swizzle, oob })
    }

    /// The spec whose shared image **is** `layout`, a descriptor of the shared tile: the
    /// swizzle is derived (the one mode whose image agrees with the layout everywhere), never
    /// written by hand. `layout` is 2-D `(rows, cols)` with `cols = box_dims[0]` and `rows` the
    /// product of the other box dims, or has the box's dims outermost first.
    ///
    /// ```
    /// use tilekit_ir::{tma::{TensorMapSpec, TmaSwizzle, OobFill}, ScalarType};
    /// use tilekit_layout::{swizzle::HopperSwizzle, TensorDescriptor};
    /// let tile = HopperSwizzle::B64.descriptor(16, 32, 2).unwrap(); // 16 rows of 32 f16
    /// let s = TensorMapSpec::from_layout(ScalarType::F16, &[32, 16], &tile, OobFill::Zero).unwrap();
    /// assert_eq!(s.swizzle(), TmaSwizzle::B64);
    /// let dense = TensorDescriptor::packed(vec![16i64, 32], None).unwrap();
    /// assert_eq!(TensorMapSpec::from_layout(ScalarType::F16, &[32, 16], &dense, OobFill::Zero).unwrap().swizzle(), TmaSwizzle::None);
    /// let padded = TensorDescriptor::naive(vec![16i64, 32], vec![40, 1], None).unwrap();
    /// assert!(TensorMapSpec::from_layout(ScalarType::F16, &[32, 16], &padded, OobFill::Zero).is_err());
    /// ```
    pub fn from_layout(
        elem: ScalarType,
        box_dims: &[u32],
        layout: &TensorDescriptor<i64>,
        oob: OobFill,
    ) -> Result<Self> {
        let mut first_err = None;
        for sw in TmaSwizzle::ALL {
            let Ok(spec) = TensorMapSpec::new(elem, box_dims, sw, oob) else { continue };
            match spec.check_layout("derived", layout) {
                Ok(()) => return Ok(spec),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            // no swizzle accepts this box at all: report the unswizzled rule
            None => TensorMapSpec::new(elem, box_dims, TmaSwizzle::None, oob),
        }
    }

    /// Checks that the layout `layout` of a shared tile puts every box element where this
    /// map's copies put it; names the first disagreement ([`IrError::TensorMapLayout`]).
    ///
    /// ```
    /// use tilekit_ir::{tma::{TensorMapSpec, TmaSwizzle, OobFill}, ScalarType};
    /// use tilekit_layout::swizzle::HopperSwizzle;
    /// let s = TensorMapSpec::new(ScalarType::F32, &[32, 8], TmaSwizzle::B128, OobFill::Zero).unwrap();
    /// assert!(s.check_layout("a", &HopperSwizzle::B128.descriptor(8, 32, 4).unwrap()).is_ok());
    /// let e = s.check_layout("a", &HopperSwizzle::B64.descriptor(16, 16, 4).unwrap()).unwrap_err();
    /// assert!(e.to_string().contains("disagrees with the layout"), "{e}");
    /// ```
    pub fn check_layout(&self, map: &str, layout: &TensorDescriptor<i64>) -> Result<()> {
        let disagree = |detail: String| IrError::TensorMapLayout { map: map.into(), detail };
        let boxd = self.box_dims();
        let rows: i64 = boxd[1..].iter().map(|&d| d as i64).product();
        let lengths = layout.lengths();
        let full: Vec<i64> = boxd.iter().rev().map(|&d| d as i64).collect();
        let two_d = lengths == [rows, boxd[0] as i64];
        if !two_d && lengths != full {
            return Err(disagree(format!(
                "the layout's lengths are {lengths:?}; the box needs [{rows}, {}] (rows, cols) \
                 or {full:?} (its dims outermost first)",
                boxd[0]
            )));
        }
        for l in 0..self.box_elems() {
            let top: Vec<i64> = if two_d {
                vec![(l / boxd[0] as usize) as i64, (l % boxd[0] as usize) as i64]
            } else {
                let mut c = self.box_coord(l);
                c.reverse();
                c.into_iter().map(|x| x as i64).collect()
            };
            let want = self.smem_element(l) as i64;
            let got = layout.calculate_offset(&top)?;
            if got != want {
                return Err(disagree(format!(
                    "box element {top:?} is at element {got} of the layout, but the map's {} \
                     image puts it at {want}",
                    self.swizzle.name()
                )));
            }
        }
        Ok(())
    }

    /// Element type.
    ///
    /// ```
    /// # use tilekit_ir::{tma::*, ScalarType};
    /// let s = TensorMapSpec::new(ScalarType::I32, &[4], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// assert_eq!(s.elem(), ScalarType::I32);
    /// ```
    pub fn elem(&self) -> ScalarType {
        self.elem
    }

    /// Rank (1..=5).
    ///
    /// ```
    /// # use tilekit_ir::{tma::*, ScalarType};
    /// let s = TensorMapSpec::new(ScalarType::I32, &[4, 1, 1], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// assert_eq!(s.rank(), 3);
    /// ```
    pub fn rank(&self) -> usize {
        self.rank as usize
    }

    /// Box lengths, innermost first.
    ///
    /// ```
    /// # use tilekit_ir::{tma::*, ScalarType};
    /// let s = TensorMapSpec::new(ScalarType::F32, &[4, 3], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// assert_eq!(s.box_dims(), &[4, 3]);
    /// ```
    pub fn box_dims(&self) -> &[u32] {
        &self.box_dims[..self.rank as usize]
    }

    /// The swizzle.
    ///
    /// ```
    /// # use tilekit_ir::{tma::*, ScalarType};
    /// let s = TensorMapSpec::new(ScalarType::F32, &[8, 3], TmaSwizzle::B32, OobFill::Zero).unwrap();
    /// assert_eq!(s.swizzle(), TmaSwizzle::B32);
    /// ```
    pub fn swizzle(&self) -> TmaSwizzle {
        self.swizzle
    }

    /// The out-of-bounds fill.
    ///
    /// ```
    /// # use tilekit_ir::{tma::*, ScalarType};
    /// let s = TensorMapSpec::new(ScalarType::F32, &[4], TmaSwizzle::None, OobFill::Nan).unwrap();
    /// assert_eq!(s.oob(), OobFill::Nan);
    /// ```
    pub fn oob(&self) -> OobFill {
        self.oob
    }

    /// Elements of one box.
    ///
    /// ```
    /// # use tilekit_ir::{tma::*, ScalarType};
    /// let s = TensorMapSpec::new(ScalarType::F32, &[4, 3, 2], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// assert_eq!(s.box_elems(), 24);
    /// ```
    pub fn box_elems(&self) -> usize {
        self.box_dims().iter().map(|&d| d as usize).product()
    }

    /// Bytes of one box: what a load completes on its mbarrier (out-of-bounds elements
    /// included).
    ///
    /// ```
    /// # use tilekit_ir::{tma::*, ScalarType};
    /// let s = TensorMapSpec::new(ScalarType::F16, &[8, 3], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// assert_eq!(s.box_bytes(), 48);
    /// ```
    pub fn box_bytes(&self) -> usize {
        self.box_elems() * self.elem.size_bytes()
    }

    /// The box coordinates (innermost first) of box element `linear` (innermost fastest).
    ///
    /// ```
    /// # use tilekit_ir::{tma::*, ScalarType};
    /// let s = TensorMapSpec::new(ScalarType::F32, &[4, 3, 2], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// assert_eq!(s.box_coord(4 * 3 + 4 + 1), vec![1, 1, 1]);
    /// ```
    pub fn box_coord(&self, linear: usize) -> Vec<u32> {
        let mut rest = linear;
        self.box_dims()
            .iter()
            .map(|&d| {
                let c = rest % d as usize;
                rest /= d as usize;
                c as u32
            })
            .collect()
    }

    /// The element (from the start of the destination) where box element `linear` lands in
    /// shared memory: its dense byte offset passed through the swizzle.
    ///
    /// ```
    /// # use tilekit_ir::{tma::*, ScalarType};
    /// let s = TensorMapSpec::new(ScalarType::F16, &[64, 8], TmaSwizzle::B128, OobFill::Zero).unwrap();
    /// assert_eq!(s.smem_element(64), 64 + 8);    // row 1, chunk 0 → chunk 1
    /// assert_eq!(s.smem_element(3), 3);
    /// ```
    pub fn smem_element(&self, linear: usize) -> usize {
        let size = self.elem.size_bytes();
        self.swizzle.apply(linear * size) / size
    }

    /// PTX-style description: `tensormap<f16, box [64, 8], swizzle 128B, oob zero>`.
    ///
    /// ```
    /// # use tilekit_ir::{tma::*, ScalarType};
    /// let s = TensorMapSpec::new(ScalarType::F32, &[4], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// assert_eq!(s.to_string(), "tensormap<f32, box [4], swizzle none, oob zero>");
    /// ```
    pub fn describe(&self) -> String {
        self.to_string()
    }
}

impl std::fmt::Display for TensorMapSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tensormap<{}, box {:?}, swizzle {}, oob {}>",
            self.elem,
            self.box_dims(),
            self.swizzle.name(),
            self.oob.name()
        )
    }
}

/// A tensor-map kernel parameter (from [`KernelBuilder::tensor_map_param`]): its parameter
/// index, the global pointer parameter whose memory it views, and its spec.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType, tma::*};
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// let x = b.ptr_param("x", ScalarType::F32).unwrap();
/// let spec = TensorMapSpec::new(ScalarType::F32, &[8, 8], TmaSwizzle::B32, OobFill::Zero).unwrap();
/// let m = b.tensor_map_param("xm", x, spec).unwrap();
/// assert_eq!((m.param, m.global, m.spec), (1, x, spec));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TensorMap {
    /// Its parameter index.
    pub param: u32,
    /// The global memory it views.
    pub global: MemRef,
    /// Its spec.
    pub spec: TensorMapSpec,
}

/// The spec and global pointer parameter of tensor-map parameter `param` of `k`.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType, tma::*};
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// let x = b.ptr_param("x", ScalarType::F32).unwrap();
/// let spec = TensorMapSpec::new(ScalarType::F32, &[4], TmaSwizzle::None, OobFill::Zero).unwrap();
/// b.tensor_map_param("xm", x, spec).unwrap();
/// let k = b.finish().unwrap();
/// assert_eq!(map_of(&k, 1), Some((spec, 0)));
/// assert_eq!(map_of(&k, 0), None);
/// ```
pub fn map_of(k: &Kernel, param: u32) -> Option<(TensorMapSpec, u32)> {
    match k.params.get(param as usize)?.kind {
        ParamKind::TensorMap { spec, global } => Some((spec, global)),
        _ => None,
    }
}

/// The alignment (bytes) each shared allocation of `k` needs: 16, or more for those a tensor
/// copy reads or writes ([`TmaSwizzle::shared_align`]). The PTX backend lays shared memory
/// out with it.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType, tma::*};
/// use tilekit_layout::Idx;
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// let y = b.ptr_param("y", ScalarType::F32).unwrap();
/// let spec = TensorMapSpec::new(ScalarType::F32, &[32, 8], TmaSwizzle::B128, OobFill::Zero).unwrap();
/// let m = b.tensor_map_param("ym", y, spec).unwrap();
/// b.shared("other", ScalarType::F32, 4).unwrap();
/// let s = b.shared("tile", ScalarType::F32, 256).unwrap();
/// b.tensor_store(m, &[Idx::lit(0), Idx::lit(0)], s, &Idx::lit(0)).unwrap();
/// assert_eq!(shared_alignments(&b.finish().unwrap()), vec![16, 1024]);
/// ```
pub fn shared_alignments(k: &Kernel) -> Vec<usize> {
    let mut out = vec![16usize; k.shared.len()];
    k.body.walk(&mut |i| {
        let (sh, map) = match &i.op {
            crate::op::Op::Async(AsyncOp::TensorLoad { dst, map, .. }) => (*dst, *map),
            crate::op::Op::Async(AsyncOp::TensorStore { src, map, .. }) => (*src, *map),
            _ => return,
        };
        if let (MemSpace::Shared(s), Some((spec, _))) = (sh.space, map_of(k, map)) {
            if let Some(a) = out.get_mut(s as usize) {
                *a = (*a).max(spec.swizzle().shared_align());
            }
        }
    });
    out
}

/// The runtime part of a tensor map: the global tensor's dims (innermost first) and the byte
/// strides of dims 1.. (dim 0 is contiguous). Its memory is the buffer of the pointer
/// parameter the map views, starting at that buffer's first element.
///
/// ```
/// use tilekit_ir::tma::TensorMapArg;
/// let a = TensorMapArg::packed(&[12, 5], 4);       // 5 rows of 12 f32
/// assert_eq!((a.dims(), a.byte_strides()), (&[12, 5][..], &[48][..]));
/// assert_eq!(a.element(&[3, 2], 4), 2 * 12 + 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorMapArg {
    dims: Vec<u64>,
    strides: Vec<u64>,
}

impl TensorMapArg {
    /// Dims (innermost first) and byte strides of dims `1..` (`dims.len() − 1` of them;
    /// [`check_encode`] checks the counts and the driver's rules).
    ///
    /// ```
    /// let a = tilekit_ir::tma::TensorMapArg::new(&[8, 3], &[64]);
    /// assert_eq!(a.byte_strides(), &[64]);
    /// ```
    pub fn new(dims: &[u64], byte_strides: &[u64]) -> Self {
        TensorMapArg { dims: dims.to_vec(), strides: byte_strides.to_vec() }
    }

    /// A packed tensor (no padding) of `elem_bytes`-byte elements.
    ///
    /// ```
    /// let a = tilekit_ir::tma::TensorMapArg::packed(&[8, 3, 2], 2);
    /// assert_eq!(a.byte_strides(), &[16, 48]);
    /// ```
    pub fn packed(dims: &[u64], elem_bytes: usize) -> Self {
        let mut strides = Vec::with_capacity(dims.len().saturating_sub(1));
        let mut s = elem_bytes as u64;
        for &d in dims.iter().take(dims.len().saturating_sub(1)) {
            s = s.saturating_mul(d);
            strides.push(s);
        }
        TensorMapArg { dims: dims.to_vec(), strides }
    }

    /// The global side derived from a `tilekit-layout` descriptor of the tensor (dims
    /// outermost first, as descriptors list them; the innermost stride must be 1 and the
    /// layout strided, i.e. `offset = Σ index · stride`), for `elem_bytes`-byte elements.
    ///
    /// ```
    /// use tilekit_ir::tma::TensorMapArg;
    /// use tilekit_layout::{TensorDescriptor, swizzle::HopperSwizzle};
    /// let d = TensorDescriptor::naive(vec![5i64, 12], vec![16, 1], None).unwrap();
    /// let a = TensorMapArg::from_descriptor(&d, 4).unwrap();
    /// assert_eq!((a.dims(), a.byte_strides()), (&[12, 5][..], &[64][..]));
    /// assert!(TensorMapArg::from_descriptor(&HopperSwizzle::B128.descriptor(8, 32, 4).unwrap(), 4).is_err());
    /// ```
    pub fn from_descriptor(
        d: &TensorDescriptor<i64>,
        elem_bytes: usize,
    ) -> std::result::Result<Self, TensorMapError> {
        let bad = |value: String, valid: &str| TensorMapError::Invalid {
            what: "global descriptor".into(),
            value,
            valid: valid.into(),
        };
        let lengths = d.lengths();
        let n = lengths.len();
        if n == 0 || n > MAX_RANK {
            return Err(bad(format!("{n} dims"), "1..=5 dims"));
        }
        let zero = vec![0i64; n];
        let at = |top: &[i64]| {
            d.calculate_offset(top).map_err(|e| bad(e.to_string(), "a strided layout"))
        };
        let base = at(&zero)?;
        let mut strides = vec![0i64; n];
        for i in 0..n {
            if lengths[i] > 1 {
                let mut t = zero.clone();
                t[i] = 1;
                strides[i] = at(&t)? - base;
            }
        }
        // strided: the corner, and every point of one step along two dims at a time, agree
        let corner: Vec<i64> = lengths.iter().map(|&l| (l - 1).max(0)).collect();
        let lin = |t: &[i64]| base + t.iter().zip(&strides).map(|(a, b)| a * b).sum::<i64>();
        let mut probes = vec![corner.clone()];
        for i in 0..n {
            let mut t = corner.clone();
            t[i] = lengths[i] / 2;
            probes.push(t);
        }
        for t in &probes {
            if at(t)? != lin(t) {
                return Err(bad(
                    format!("offset {} at {t:?}, {} if strided by {strides:?}", at(t)?, lin(t)),
                    "a strided layout (offset = Σ index · stride), e.g. TensorDescriptor::naive",
                ));
            }
        }
        if base != 0 {
            return Err(bad(format!("offset {base} at the origin"), "offset 0 at the origin"));
        }
        if lengths[n - 1] > 1 && strides[n - 1] != 1 {
            return Err(bad(
                format!("innermost stride {}", strides[n - 1]),
                "innermost stride 1 (the contiguous dim)",
            ));
        }
        if strides.iter().any(|&s| s < 0) || lengths.iter().any(|&l| l < 1) {
            return Err(bad(format!("lengths {lengths:?}, strides {strides:?}"), "positive"));
        }
        let dims: Vec<u64> = lengths.iter().rev().map(|&l| l as u64).collect();
        let bytes: Vec<u64> =
            strides.iter().rev().skip(1).map(|&s| s as u64 * elem_bytes as u64).collect();
        Ok(TensorMapArg { dims, strides: bytes })
    }

    /// Dims, innermost first.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::tma::TensorMapArg::packed(&[4, 2], 4).dims(), &[4, 2]);
    /// ```
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// Byte strides of dims 1.. .
    ///
    /// ```
    /// assert_eq!(tilekit_ir::tma::TensorMapArg::packed(&[4, 2], 4).byte_strides(), &[16]);
    /// ```
    pub fn byte_strides(&self) -> &[u64] {
        &self.strides
    }

    /// The element offset (in the viewed buffer) of the in-bounds tensor element at `coord`
    /// (innermost first), for `elem_bytes`-byte elements.
    ///
    /// ```
    /// let a = tilekit_ir::tma::TensorMapArg::new(&[4, 3], &[32]);
    /// assert_eq!(a.element(&[1, 2], 4), 2 * 8 + 1);
    /// ```
    pub fn element(&self, coord: &[u64], elem_bytes: usize) -> u64 {
        let mut bytes = coord.first().copied().unwrap_or(0) * elem_bytes as u64;
        for (c, s) in coord.iter().skip(1).zip(&self.strides) {
            bytes += c * s;
        }
        bytes / elem_bytes as u64
    }

    /// One past the largest element offset the tensor covers (0 for an empty tensor).
    ///
    /// ```
    /// assert_eq!(tilekit_ir::tma::TensorMapArg::new(&[4, 3], &[32]).extent(4), 2 * 8 + 4);
    /// ```
    pub fn extent(&self, elem_bytes: usize) -> u64 {
        if self.dims.contains(&0) {
            return 0;
        }
        let last: Vec<u64> = self.dims.iter().map(|&d| d - 1).collect();
        self.element(&last, elem_bytes) + 1
    }
}

/// A tensor map the driver would refuse, or that does not fit its buffer.
///
/// ```
/// use tilekit_ir::{tma::*, ScalarType};
/// let s = TensorMapSpec::new(ScalarType::F32, &[4, 4], TmaSwizzle::None, OobFill::Zero).unwrap();
/// let e = check_encode(&s, &TensorMapArg::new(&[10, 4], &[40]), 0).unwrap_err();
/// assert_eq!(e.to_string(), "tensor map: byte stride of dim 1 = 40 is invalid: a multiple of 16 below 2^40");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TensorMapError {
    /// A field outside the driver's rules.
    #[error("tensor map: {what} = {value} is invalid: {valid}")]
    Invalid {
        /// Which field.
        what: String,
        /// Its value.
        value: String,
        /// What would be valid.
        valid: String,
    },
    /// The tensor reaches past the end of the buffer it views.
    #[error("tensor map: the tensor (dims {dims:?}, byte strides {strides:?}) covers {extent} elements, but its buffer holds {len}")]
    OutsideBuffer {
        /// Dims, innermost first.
        dims: Vec<u64>,
        /// Byte strides of dims 1.. .
        strides: Vec<u64>,
        /// Elements it covers.
        extent: u64,
        /// Elements of the buffer.
        len: u64,
    },
}

/// The driver's rules for `cuTensorMapEncodeTiled` (interleave none), checked on the host
/// before encoding, with named errors: rank as the spec's; the global address 16-byte aligned;
/// each dim 1..=2^32; each byte stride a multiple of 16 below 2^40; box dims 1..=256; the inner
/// box a multiple of 16 bytes and at most the swizzle span; element strides (all 1 here) in
/// 1..=8. Pure: no GPU needed.
///
/// ```
/// use tilekit_ir::{tma::*, ScalarType};
/// let s = TensorMapSpec::new(ScalarType::F16, &[64, 8], TmaSwizzle::B128, OobFill::Zero).unwrap();
/// assert!(check_encode(&s, &TensorMapArg::packed(&[128, 40], 2), 0x7f00_0000_0000).is_ok());
/// let e = check_encode(&s, &TensorMapArg::packed(&[128, 40], 2), 0x7f00_0000_0008).unwrap_err();
/// assert!(e.to_string().contains("global address"));
/// assert!(check_encode(&s, &TensorMapArg::packed(&[128], 2), 0).is_err()); // rank 1 ≠ 2
/// ```
pub fn check_encode(
    spec: &TensorMapSpec,
    arg: &TensorMapArg,
    addr: u64,
) -> std::result::Result<(), TensorMapError> {
    let bad = |what: String, value: String, valid: &str| {
        Err(TensorMapError::Invalid { what, value, valid: valid.into() })
    };
    let r = spec.rank();
    if arg.dims.len() != r || arg.strides.len() + 1 != r {
        return bad(
            "rank".into(),
            format!("{} dims and {} strides", arg.dims.len(), arg.strides.len()),
            &format!("{r} dims and {} byte strides (the spec's rank)", r - 1),
        );
    }
    if !addr.is_multiple_of(16) {
        return bad("global address".into(), format!("{addr:#x}"), "a multiple of 16");
    }
    for (i, &d) in arg.dims.iter().enumerate() {
        if d == 0 || d > 1 << 32 {
            return bad(format!("dim {i}"), d.to_string(), "1..=2^32");
        }
    }
    for (i, &s) in arg.strides.iter().enumerate() {
        if !s.is_multiple_of(16) || s >= 1 << 40 {
            return bad(
                format!("byte stride of dim {}", i + 1),
                s.to_string(),
                "a multiple of 16 below 2^40",
            );
        }
    }
    for (i, &b) in spec.box_dims().iter().enumerate() {
        if !(1..=MAX_BOX).contains(&b) {
            return bad(format!("box dim {i}"), b.to_string(), "1..=256");
        }
    }
    let inner = spec.box_dims()[0] as usize * spec.elem().size_bytes();
    if !inner.is_multiple_of(16) {
        return bad("inner box bytes".into(), inner.to_string(), "a multiple of 16");
    }
    if let Some(span) = spec.swizzle().span_bytes() {
        if inner > span {
            return bad(
                "inner box bytes".into(),
                inner.to_string(),
                "at most the swizzle span (32, 64 or 128 bytes)",
            );
        }
    }
    for (i, &e) in element_strides(spec).iter().enumerate() {
        if !(1..=8).contains(&e) {
            return bad(format!("element stride {i}"), e.to_string(), "1..=8");
        }
    }
    Ok(())
}

/// The element strides a map is encoded with (tilekit copies every element: all 1).
///
/// ```
/// use tilekit_ir::{tma::*, ScalarType};
/// let s = TensorMapSpec::new(ScalarType::F32, &[4, 4], TmaSwizzle::None, OobFill::Zero).unwrap();
/// assert_eq!(element_strides(&s), vec![1, 1]);
/// ```
pub fn element_strides(spec: &TensorMapSpec) -> Vec<u32> {
    vec![1; spec.rank()]
}

/// [`check_encode`] for a map viewing a buffer of `len` elements at address 0, plus the check
/// that the tensor lies inside the buffer (what the interpreter checks of a launch argument).
///
/// ```
/// use tilekit_ir::{tma::*, ScalarType};
/// let s = TensorMapSpec::new(ScalarType::F32, &[4, 4], TmaSwizzle::None, OobFill::Zero).unwrap();
/// assert!(check_fits(&s, &TensorMapArg::packed(&[8, 5], 4), 40).is_ok());
/// assert!(check_fits(&s, &TensorMapArg::packed(&[8, 5], 4), 39).is_err());
/// ```
pub fn check_fits(
    spec: &TensorMapSpec,
    arg: &TensorMapArg,
    len: usize,
) -> std::result::Result<(), TensorMapError> {
    check_encode(spec, arg, 0)?;
    let extent = arg.extent(spec.elem().size_bytes());
    if extent > len as u64 {
        return Err(TensorMapError::OutsideBuffer {
            dims: arg.dims.clone(),
            strides: arg.strides.clone(),
            extent,
            len: len as u64,
        });
    }
    Ok(())
}

impl KernelBuilder {
    /// Declares a tensor-map parameter (the 128-byte `CUtensorMap`, a grid constant) viewing
    /// the global memory of pointer parameter `global` with `spec`. At launch it takes a
    /// [`TensorMapArg`] (dims and strides); the runtime encodes the map from it and the
    /// pointer argument's address.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, tma::*};
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.ptr_param("x", ScalarType::F32).unwrap();
    /// let spec = TensorMapSpec::new(ScalarType::F16, &[8], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// assert!(b.tensor_map_param("xm", x, spec).is_err()); // f16 map over an f32 buffer
    /// ```
    pub fn tensor_map_param(
        &self,
        name: &str,
        global: MemRef,
        spec: TensorMapSpec,
    ) -> Result<TensorMap> {
        let op = "tensor map parameter";
        self.check_mem(global, op)?;
        let MemSpace::Global(g) = global.space else {
            return Err(IrError::WrongType {
                op: format!("{op} {name} over shared memory"),
                ty: global.elem,
                valid: "a global pointer parameter".into(),
            });
        };
        if global.elem != spec.elem() {
            return Err(IrError::TypeMismatch {
                op: format!("{op} {name}"),
                left: spec.elem(),
                right: global.elem,
            });
        }
        let param = self.add_param(name, ParamKind::TensorMap { spec, global: g });
        Ok(TensorMap { param, global, spec })
    }

    /// [`tensor_map_param`](Self::tensor_map_param) whose spec is derived from the layout
    /// of the shared tile it fills ([`TensorMapSpec::from_layout`]).
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, tma::*};
    /// use tilekit_layout::swizzle::HopperSwizzle;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.ptr_param("x", ScalarType::F16).unwrap();
    /// let tile = HopperSwizzle::B128.descriptor(8, 64, 2).unwrap();
    /// let m = b.tensor_map_for_layout("xm", x, &[64, 8], &tile, OobFill::Zero).unwrap();
    /// assert_eq!(m.spec.swizzle(), TmaSwizzle::B128);
    /// ```
    pub fn tensor_map_for_layout(
        &self,
        name: &str,
        global: MemRef,
        box_dims: &[u32],
        layout: &TensorDescriptor<i64>,
        oob: OobFill,
    ) -> Result<TensorMap> {
        let spec =
            TensorMapSpec::from_layout(global.elem, box_dims, layout, oob).map_err(
                |e| match e {
                    IrError::TensorMapLayout { detail, .. } => {
                        IrError::TensorMapLayout { map: name.into(), detail }
                    }
                    e => e,
                },
            )?;
        self.tensor_map_param(name, global, spec)
    }

    fn tma_coords(&self, op: &str, map: &TensorMap, coords: &[Val]) -> Result<Vec<ValueId>> {
        self.check_mem(map.global, op)?;
        if coords.len() != map.spec.rank() {
            return Err(IrError::Invalid {
                op: op.into(),
                what: "coordinates".into(),
                value: format!("{} of them", coords.len()),
                valid: format!("{} (the map's rank), innermost first", map.spec.rank()),
            });
        }
        coords
            .iter()
            .map(|c| {
                let id = self.operand(c, Some(ScalarType::I32), op)?;
                let ty = self.ctx_ty(id);
                if ty != ScalarType::I32 {
                    return Err(IrError::WrongType {
                        op: format!("{op} coordinate"),
                        ty,
                        valid: "i32".into(),
                    });
                }
                Ok(id)
            })
            .collect()
    }

    /// Checks the shared side of a tensor copy; with a constant offset, that the box image
    /// fits the allocation and starts aligned (the interpreter checks runtime offsets).
    fn tma_shared(&self, op: &str, sh: MemRef, off: ValueId, map: &TensorMap) -> Result<()> {
        self.check_mem(sh, op)?;
        let MemSpace::Shared(s) = sh.space else {
            return Err(IrError::WrongType {
                op: format!("{op} with {} {}", sh.space.name(), sh.elem),
                ty: sh.elem,
                valid: format!("a shared allocation of {} (the map's type)", map.spec.elem()),
            });
        };
        if sh.elem != map.spec.elem() {
            return Err(IrError::TypeMismatch {
                op: op.into(),
                left: sh.elem,
                right: map.spec.elem(),
            });
        }
        let n = map.spec.box_elems() as i64;
        let size = sh.elem.size_bytes() as i64;
        let align = map.spec.swizzle().shared_align() as i64;
        let len = self.shared_len_of(s).unwrap_or(0) as i64;
        if let Some(o) = self.ctx_int(off) {
            if o < 0 || o + n > len {
                return Err(IrError::Invalid {
                    op: op.into(),
                    what: "shared elements".into(),
                    value: format!("{o}..{} of an allocation of {len}", o + n),
                    valid: format!("the box image ({n} elements) inside the allocation"),
                });
            }
            if (o * size) % align != 0 {
                return Err(IrError::Invalid {
                    op: op.into(),
                    what: "shared byte offset".into(),
                    value: (o * size).to_string(),
                    valid: format!(
                        "a multiple of {align} bytes (swizzle {})",
                        map.spec.swizzle().name()
                    ),
                });
            }
        }
        Ok(())
    }

    /// `cp.async.bulk.tensor.Nd` global→shared: the box of `map` at `coords` (innermost
    /// first, `i32`, may be negative or past the end: those elements are filled) lands in
    /// shared `dst` from element `dst_off` on (aligned to [`TmaSwizzle::shared_align`]), and
    /// completes [`TensorMapSpec::box_bytes`] on barrier `index` of `bar`.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, tma::*};
    /// use tilekit_layout::Idx;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.ptr_param("x", ScalarType::F32).unwrap();
    /// let spec = TensorMapSpec::new(ScalarType::F32, &[8, 2], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// let m = b.tensor_map_param("xm", x, spec).unwrap();
    /// let s = b.shared("s", ScalarType::F32, 16).unwrap();
    /// let bar = b.mbarrier("full", 1).unwrap();
    /// b.tensor_load(s, &Idx::lit(0), m, &[Idx::lit(-4), Idx::lit(0)], bar, &Idx::lit(0)).unwrap();
    /// assert!(b.tensor_load(s, &Idx::lit(0), m, &[Idx::lit(0)], bar, &Idx::lit(0)).is_err()); // rank 2
    /// let e = b.tensor_load(s, &Idx::lit(4), m, &[Idx::lit(0), Idx::lit(0)], bar, &Idx::lit(0));
    /// assert!(e.unwrap_err().to_string().contains("shared elements = 4..20 of an allocation of 16"));
    /// ```
    pub fn tensor_load(
        &self,
        dst: MemRef,
        dst_off: &Val,
        map: TensorMap,
        coords: &[Val],
        bar: MemRef,
        index: &Val,
    ) -> Result<()> {
        self.tensor_load_to(dst, dst_off, map, coords, bar, index, None)
    }

    /// [`tensor_load`](Self::tensor_load) **multicast** to the cluster's blocks whose ranks are
    /// set in `mask`: each gets the box at `dst_off` of its own `dst` and the bytes on its own
    /// barrier `index`. Only in cluster kernels.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, tma::*};
    /// use tilekit_layout::Idx;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// b.set_cluster_dim([2, 1, 1]).unwrap();
    /// let x = b.ptr_param("x", ScalarType::F32).unwrap();
    /// let spec = TensorMapSpec::new(ScalarType::F32, &[8], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// let m = b.tensor_map_param("xm", x, spec).unwrap();
    /// let s = b.shared("s", ScalarType::F32, 8).unwrap();
    /// let bar = b.mbarrier("full", 1).unwrap();
    /// b.tensor_load_multicast(s, &Idx::lit(0), m, &[Idx::lit(0)], bar, &Idx::lit(0), &Idx::lit(3)).unwrap();
    /// assert!(b.finish().unwrap().to_string().contains("multicast to ctas"));
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn tensor_load_multicast(
        &self,
        dst: MemRef,
        dst_off: &Val,
        map: TensorMap,
        coords: &[Val],
        bar: MemRef,
        index: &Val,
        mask: &Val,
    ) -> Result<()> {
        self.tensor_load_to(dst, dst_off, map, coords, bar, index, Some(mask))
    }

    #[allow(clippy::too_many_arguments)]
    fn tensor_load_to(
        &self,
        dst: MemRef,
        dst_off: &Val,
        map: TensorMap,
        coords: &[Val],
        bar: MemRef,
        index: &Val,
        multicast: Option<&Val>,
    ) -> Result<()> {
        let op = "cp.async.bulk.tensor.shared.global";
        if multicast.is_some() {
            self.need_cluster(op)?;
        }
        let dst_off = self.offset_operand(dst_off, op)?;
        self.tma_shared(op, dst, dst_off, &map)?;
        let coords = self.tma_coords(op, &map, coords)?;
        let index = self.bar_operands(op, bar, index)?;
        let multicast = multicast.map(|m| self.offset_operand(m, op)).transpose()?;
        self.push_async(AsyncOp::TensorLoad {
            dst,
            dst_off,
            map: map.param,
            global: map.global,
            coords,
            bar,
            index,
            multicast,
        });
        Ok(())
    }

    /// `cp.async.bulk.tensor.Nd` shared→global: the box image at `src[src_off..]` (swizzled as
    /// the map says) is stored to the box of `map` at `coords`; elements past the tensor's far
    /// edges are not written. The box must start at coordinates ≥ 0: the GPU traps on a store
    /// starting below zero (measured on an H100; the interpreter names it
    /// `AsyncBug::NegativeStoreCoordinate`). Joins the thread's bulk group ([`bulk_commit`](Self::bulk_commit),
    /// [`bulk_wait`](Self::bulk_wait)); shared memory written by threads needs a
    /// [`fence_proxy_async`](Self::fence_proxy_async) first.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, tma::*};
    /// use tilekit_layout::Idx;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let y = b.ptr_param("y", ScalarType::F32).unwrap();
    /// let spec = TensorMapSpec::new(ScalarType::F32, &[4, 4], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// let m = b.tensor_map_param("ym", y, spec).unwrap();
    /// let s = b.shared("s", ScalarType::F32, 16).unwrap();
    /// b.tensor_store(m, &[Idx::lit(0), Idx::lit(4)], s, &Idx::lit(0)).unwrap();
    /// assert!(b.finish().unwrap().to_string().contains("cp.async.bulk.tensor.2d.global.shared ym"));
    /// ```
    pub fn tensor_store(
        &self,
        map: TensorMap,
        coords: &[Val],
        src: MemRef,
        src_off: &Val,
    ) -> Result<()> {
        let op = "cp.async.bulk.tensor.global.shared";
        let src_off = self.offset_operand(src_off, op)?;
        self.tma_shared(op, src, src_off, &map)?;
        let coords = self.tma_coords(op, &map, coords)?;
        self.push_async(AsyncOp::TensorStore {
            map: map.param,
            global: map.global,
            coords,
            src,
            src_off,
        });
        Ok(())
    }

    /// `cp.async.bulk.prefetch.tensor.Nd.L2`: hints that the box at `coords` will be read.
    /// No effect a kernel can observe; the interpreter still checks the coordinates.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, tma::*};
    /// use tilekit_layout::Idx;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.ptr_param("x", ScalarType::F32).unwrap();
    /// let spec = TensorMapSpec::new(ScalarType::F32, &[4], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// let m = b.tensor_map_param("xm", x, spec).unwrap();
    /// b.tensor_prefetch(m, &[Idx::lit(8)]).unwrap();
    /// assert!(b.finish().unwrap().to_string().contains("cp.async.bulk.prefetch.tensor.1d xm"));
    /// ```
    pub fn tensor_prefetch(&self, map: TensorMap, coords: &[Val]) -> Result<()> {
        let op = "cp.async.bulk.prefetch.tensor";
        let coords = self.tma_coords(op, &map, coords)?;
        self.push_async(AsyncOp::TensorPrefetch { map: map.param, global: map.global, coords });
        Ok(())
    }
}
