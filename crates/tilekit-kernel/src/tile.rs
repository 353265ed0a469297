//! The builder ↔ tile layer: views, tile windows and distributed tensors of registers, in a
//! kernel under construction.
//!
//! ```text
//!   TensorParam (ptr, runtime lengths/strides) ──View::global──► View { mem, TensorDescriptor<Val> }
//!        │ View::pad / freeze / permute: tilekit-layout transforms over Val (runtime lengths)
//!        ▼
//!   Window::new(view, lengths, origin: [Val], distribution)
//!        P index  = merge(P lengths).lower_index(thread id mod threads of the distribution)
//!        traits   = LoadStoreTraits from the view's guaranteed vectors (i64 metadata)
//!        walk     = tilekit_tile::window::walk_generic over Val: per access, offset + validity
//!        ▼
//!   load  ──► DTile { distribution, elem, regs[d] }   one masked vector load per access,
//!   store ◄──                                         element j ─► regs[ys_to_d(y_start + j·e)]
//!   map / zip_map / cast / sweep / reduce_thread       elementwise and per-Y work on registers
//!   warp_reduce / block_reduce                         shuffles, shared memory and barriers
//! ```
//!
//! No index math is written here: offsets and validity come from the same generic code the
//! `i64` tests, conformance and host model use (`Idx` over the IR's `Val`). Shared-memory tiles
//! are views too ([`View::shared`]): their descriptor (swizzled or not) is an `i64` layout,
//! lifted to `Val`.
//!
//! ```
//! use tilekit_ir::{KernelBuilder, ScalarType, Axis, Val};
//! use tilekit_layout::Idx;
//! use tilekit_kernel::{View, Window, dist};
//! # fn main() -> Result<(), tilekit_kernel::KernelError> {
//! let b = KernelBuilder::new("copy_tile", [64, 1, 1])?;
//! let x = b.tensor_param("x", ScalarType::F32, 2)?;
//! let y = b.tensor_param("y", ScalarType::F32, 2)?;
//! let d = dist::row_major(8, 32, 64, 4)?;              // 8×32 tile, 64 threads, 4-vectors
//! let origin = [b.block_id(Axis::Y) * Val::lit(8), b.block_id(Axis::X) * Val::lit(32)];
//! let src = Window::new(&b, &View::global(&x, 4)?.pad(&[8, 32])?, &[8, 32], &origin, &d)?;
//! let dst = Window::new(&b, &View::global(&y, 4)?.pad(&[8, 32])?, &[8, 32], &origin, &d)?;
//! dst.store(&b, &src.load(&b)?)?;
//! assert!(b.finish()?.to_string().contains("ld.global.v4.f32"));
//! # Ok(()) }
//! ```

use tilekit_ir::{Axis, BinOp, CmpOp, KernelBuilder, MemRef, Pred, ScalarType, ShflMode, Val};
use tilekit_layout::{Idx, IdxBool, TensorDescriptor, Transform};
use tilekit_tile::traits::{AccessCurve, LoadStoreTraits, TraitsAccess};
use tilekit_tile::window::{walk_generic, WindowAccess};
use tilekit_tile::TileDistribution;

use crate::error::{KernelError, Result};

/// A tensor view in a kernel: memory plus a descriptor over the symbolic domain.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType};
/// use tilekit_kernel::View;
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// let x = b.tensor_param("x", ScalarType::F16, 2).unwrap();
/// let v = View::global(&x, 8).unwrap();
/// assert_eq!(v.desc.top_safe_vector_lengths_strides().0, vec![-1, 8]);
/// ```
#[derive(Debug, Clone)]
pub struct View {
    /// The memory (a global parameter or a shared allocation).
    pub mem: MemRef,
    /// Top = the view's index, bottom = the element offset in `mem`.
    pub desc: TensorDescriptor<Val>,
    padded: Vec<bool>,
}

impl View {
    /// The naive view of a tensor parameter, guaranteeing `vector`-element vectors (stride 1)
    /// on the last dim. The caller promises it: the last stride is 1 and `vector` divides the
    /// last length and every other stride (kernels pick it from the shape, see
    /// `tilekit_ops::api::vector_of`, which binding checks again). `vector` = 1 means scalar
    /// accesses.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// use tilekit_kernel::View;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
    /// assert!(View::global(&x, 3).is_err());
    /// ```
    pub fn global(t: &tilekit_ir::TensorParam, vector: i64) -> Result<View> {
        let max = 16 / t.mem.elem.size_bytes() as i64;
        if vector < 1 || vector & (vector - 1) != 0 || vector > max {
            return Err(KernelError::invalid(
                "tensor view",
                "vector",
                vector,
                format!("must be a power of two in 1..={max} (16 bytes of {})", t.mem.elem),
            ));
        }
        let desc = t.descriptor((vector > 1).then_some((vector, 1)))?;
        let n = desc.ndim();
        Ok(View { mem: t.mem, desc, padded: vec![false; n] })
    }

    /// A view from raw parts (no padding).
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, Val};
    /// use tilekit_layout::{Idx, TensorDescriptor};
    /// use tilekit_kernel::View;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let s = b.shared("s", ScalarType::F32, 64).unwrap();
    /// let d = TensorDescriptor::naive(vec![Val::lit(8), Val::lit(8)], vec![Val::lit(8), Val::lit(1)], None).unwrap();
    /// assert_eq!(View::new(s, d).desc.ndim(), 2);
    /// ```
    pub fn new(mem: MemRef, desc: TensorDescriptor<Val>) -> View {
        let n = desc.ndim();
        View { mem, desc, padded: vec![false; n] }
    }

    /// A shared-memory tile: allocates `desc.element_space_size()` elements of `elem` and views
    /// them through `desc` (e.g. a swizzled layout) lifted to the symbolic domain.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// use tilekit_layout::TensorDescriptor;
    /// use tilekit_kernel::View;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let d = TensorDescriptor::packed(vec![64i64, 64], Some(4)).unwrap();
    /// let v = View::shared(&b, "tile", ScalarType::F32, &d).unwrap();
    /// assert_eq!(v.lengths_const(), vec![Some(64), Some(64)]);
    /// b.set_shared_limit(1024);
    /// assert!(View::shared(&b, "big", ScalarType::F32, &d).is_err()); // 16 KiB > 1 KiB
    /// ```
    pub fn shared(
        b: &KernelBuilder,
        name: &str,
        elem: ScalarType,
        desc: &TensorDescriptor<i64>,
    ) -> Result<View> {
        let mem = b.shared(name, elem, desc.element_space_size() as usize)?;
        Ok(View::new(mem, desc.lift::<Val>()))
    }

    /// The lengths that are known at build time.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// use tilekit_kernel::View;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
    /// assert_eq!(View::global(&x, 1).unwrap().lengths_const(), vec![None, None]);
    /// ```
    pub fn lengths_const(&self) -> Vec<Option<i64>> {
        self.desc.lengths().iter().map(Idx::to_const).collect()
    }

    /// `pad_tensor_view`: every dim is right-padded to a multiple of `tile` (a runtime length
    /// when the view's is); elements in the pad read as zero and are never written.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// use tilekit_kernel::View;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
    /// assert!(View::global(&x, 4).unwrap().pad(&[8]).is_err()); // one tile length per dim
    /// ```
    pub fn pad(self, tile: &[i64]) -> Result<View> {
        let n = self.desc.ndim();
        if tile.len() != n || tile.iter().any(|&t| t < 1) {
            return Err(KernelError::invalid(
                "pad view",
                "tile",
                format!("{tile:?}"),
                format!("one length >= 1 per view dim ({n})"),
            ));
        }
        let mut ts = Vec::with_capacity(n);
        for (len, &t) in self.desc.lengths().into_iter().zip(tile) {
            let padded = (len.clone() + Val::lit(t - 1)) / Val::lit(t) * Val::lit(t);
            ts.push(Transform::right_pad(len.clone(), padded - len, false)?);
        }
        let ids: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
        let desc = self.desc.transform(ts, ids.clone(), ids)?;
        Ok(View { mem: self.mem, desc, padded: vec![true; n] })
    }

    /// Fixes dim `dim` at index `at` (a runtime value, e.g. a batch from the block id): the
    /// view loses that dim.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, Axis};
    /// use tilekit_kernel::View;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.tensor_param("x", ScalarType::F32, 3).unwrap();
    /// let v = View::global(&x, 4).unwrap().freeze(0, b.block_id(Axis::Z)).unwrap();
    /// assert_eq!(v.desc.ndim(), 2);
    /// ```
    pub fn freeze(self, dim: usize, at: Val) -> Result<View> {
        let n = self.desc.ndim();
        if dim >= n || n < 2 {
            return Err(KernelError::invalid(
                "freeze view",
                "dim",
                dim,
                format!("must be < {n} and leave at least one dim"),
            ));
        }
        let lengths = self.desc.lengths();
        let mut ts = Vec::with_capacity(n);
        let mut upper = Vec::with_capacity(n);
        let mut next = 0;
        for (i, len) in lengths.into_iter().enumerate() {
            if i == dim {
                ts.push(Transform::freeze(at.clone())?);
                upper.push(vec![]);
            } else {
                ts.push(Transform::pass_through(len)?);
                upper.push(vec![next]);
                next += 1;
            }
        }
        let lower: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
        let desc = self.desc.transform(ts, lower, upper)?;
        let padded = self.padded.iter().enumerate().filter(|(i, _)| *i != dim).map(|(_, &p)| p);
        Ok(View { mem: self.mem, desc, padded: padded.collect() })
    }

    /// Inserts a dim of length 1 at position `dim` (0..=rank): a vector `[n]` viewed as a row
    /// `[1, n]`, so it can be read through the same 2-D distribution as the rows of a matrix.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// use tilekit_kernel::View;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let g = b.tensor_param("gamma", ScalarType::F32, 1).unwrap();
    /// let v = View::global(&g, 4).unwrap().unsqueeze(0).unwrap();
    /// assert_eq!(v.lengths_const()[0], Some(1));
    /// assert_eq!(v.desc.top_safe_vector_lengths_strides().0, vec![-1, 4]);
    /// assert!(View::global(&g, 4).unwrap().unsqueeze(2).is_err());
    /// ```
    pub fn unsqueeze(self, dim: usize) -> Result<View> {
        let n = self.desc.ndim();
        if dim > n {
            return Err(KernelError::invalid(
                "unsqueeze view",
                "dim",
                dim,
                format!("must be at most the view's rank {n}"),
            ));
        }
        let lengths = self.desc.lengths();
        let mut ts = Vec::with_capacity(n + 1);
        let mut lower = Vec::with_capacity(n + 1);
        let mut upper = Vec::with_capacity(n + 1);
        for (i, len) in lengths.into_iter().enumerate() {
            if i == dim {
                ts.push(Transform::insert(Val::lit(1))?);
                lower.push(vec![]);
                upper.push(vec![i]);
            }
            let up = if i < dim { i } else { i + 1 };
            ts.push(Transform::pass_through(len)?);
            lower.push(vec![i]);
            upper.push(vec![up]);
        }
        if dim == n {
            ts.push(Transform::insert(Val::lit(1))?);
            lower.push(vec![]);
            upper.push(vec![n]);
        }
        let desc = self.desc.transform(ts, lower, upper)?;
        let mut padded = self.padded;
        padded.insert(dim, false);
        Ok(View { mem: self.mem, desc, padded })
    }

    /// Reorders the dims: new dim `i` is old dim `order[i]` (a transposed view of the same
    /// memory).
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// use tilekit_kernel::View;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
    /// let v = View::global(&x, 4).unwrap().permute(&[1, 0]).unwrap();
    /// assert_eq!(v.desc.top_safe_vector_lengths_strides().0, vec![4, -1]);
    /// ```
    pub fn permute(self, order: &[usize]) -> Result<View> {
        let n = self.desc.ndim();
        let mut seen = vec![false; n];
        if order.len() != n
            || order.iter().any(|&o| o >= n || std::mem::replace(&mut seen[o], true))
        {
            return Err(KernelError::invalid(
                "permute view",
                "order",
                format!("{order:?}"),
                format!("must be a permutation of 0..{n}"),
            ));
        }
        let lengths = self.desc.lengths();
        let ts = order
            .iter()
            .map(|&o| Transform::pass_through(lengths[o].clone()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let lower = order.iter().map(|&o| vec![o]).collect();
        let upper = (0..n).map(|i| vec![i]).collect();
        let desc = self.desc.transform(ts, lower, upper)?;
        let padded = order.iter().map(|&o| self.padded[o]).collect();
        Ok(View { mem: self.mem, desc, padded })
    }
}

/// A distributed tensor of registers: element `d` (= `ys_to_d(y)`) of every thread's buffer
/// is `regs[d]`, one SSA value per element.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType};
/// use tilekit_kernel::{DTile, dist};
/// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
/// let t = DTile::splat(&dist::row_major(8, 32, 64, 4).unwrap(), &b.f32(1.0));
/// assert_eq!((t.regs.len(), t.elem), (4, ScalarType::F32));
/// ```
#[derive(Debug, Clone)]
pub struct DTile {
    /// The distribution.
    pub dist: TileDistribution,
    /// The element type.
    pub elem: ScalarType,
    /// One value per thread-buffer element.
    pub regs: Vec<Val>,
}

impl DTile {
    /// Every element `v`.
    ///
    /// ```
    /// use tilekit_ir::KernelBuilder;
    /// use tilekit_kernel::{DTile, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let t = DTile::splat(&dist::row_major(8, 32, 64, 4).unwrap(), &b.f32(0.0));
    /// assert!(t.regs.iter().all(|r| r.const_lit().is_some()));
    /// ```
    pub fn splat(dist: &TileDistribution, v: &Val) -> DTile {
        let n = dist.thread_buffer_size() as usize;
        DTile {
            dist: dist.clone(),
            elem: v.ty().unwrap_or(ScalarType::I32),
            regs: vec![v.clone(); n],
        }
    }

    /// Applies `f` to every element (elementwise map).
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// use tilekit_kernel::{DTile, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let t = DTile::splat(&dist::row_major(8, 32, 64, 4).unwrap(), &b.f32(2.0));
    /// let h = t.map(&b, |b, v| Ok(b.cvt(v, ScalarType::F16)?)).unwrap();
    /// assert_eq!(h.elem, ScalarType::F16);
    /// ```
    pub fn map(
        &self,
        b: &KernelBuilder,
        f: impl Fn(&KernelBuilder, &Val) -> Result<Val>,
    ) -> Result<DTile> {
        let regs = self.regs.iter().map(|v| f(b, v)).collect::<Result<Vec<_>>>()?;
        let elem = regs.first().and_then(Val::ty).unwrap_or(self.elem);
        Ok(DTile { dist: self.dist.clone(), elem, regs })
    }

    /// Combines two tiles of one distribution element by element.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, BinOp};
    /// use tilekit_kernel::{DTile, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let d = dist::row_major(8, 32, 64, 4).unwrap();
    /// let (x, y) = (DTile::splat(&d, &b.f32(2.0)), DTile::splat(&d, &b.f32(3.0)));
    /// let s = x.zip_map(&b, &y, |b, p, q| Ok(b.binary(BinOp::Add, p, q)?)).unwrap();
    /// assert_eq!(s.regs[0].const_lit().unwrap().as_f64(), Some(5.0));
    /// let other = DTile::splat(&dist::row_major(8, 64, 64, 4).unwrap(), &b.f32(1.0));
    /// assert!(x.zip_map(&b, &other, |_, p, _| Ok(p.clone())).is_err());
    /// ```
    pub fn zip_map(
        &self,
        b: &KernelBuilder,
        other: &DTile,
        f: impl Fn(&KernelBuilder, &Val, &Val) -> Result<Val>,
    ) -> Result<DTile> {
        if other.dist != self.dist {
            return Err(KernelError::invalid(
                "zip_map",
                "distribution",
                format!("{:?}", other.dist.x_lengths()),
                format!(
                    "must be the same distribution as the first tile ({:?})",
                    self.dist.x_lengths()
                ),
            ));
        }
        let regs = self
            .regs
            .iter()
            .zip(&other.regs)
            .map(|(x, y)| f(b, x, y))
            .collect::<Result<Vec<_>>>()?;
        let elem = regs.first().and_then(Val::ty).unwrap_or(self.elem);
        Ok(DTile { dist: self.dist.clone(), elem, regs })
    }

    /// Converts every element to `ty`.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// use tilekit_kernel::{DTile, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let t = DTile::splat(&dist::row_major(8, 32, 64, 4).unwrap(), &b.f32(1.5));
    /// assert_eq!(t.cast(&b, ScalarType::BF16).unwrap().elem, ScalarType::BF16);
    /// ```
    pub fn cast(&self, b: &KernelBuilder, ty: ScalarType) -> Result<DTile> {
        if self.elem == ty {
            return Ok(self.clone());
        }
        let mut t = self.map(b, |b, v| Ok(b.cvt(v, ty)?))?;
        t.elem = ty;
        Ok(t)
    }

    /// `sweep_tile`: calls `f(y, value)` for every element of the thread buffer, in the
    /// distribution's sweep order (Y index given).
    ///
    /// ```
    /// use tilekit_ir::KernelBuilder;
    /// use tilekit_kernel::{DTile, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let t = DTile::splat(&dist::row_major(8, 32, 64, 4).unwrap(), &b.f32(1.0));
    /// let mut ys = vec![];
    /// t.sweep(|y, _| { ys.push(y.to_vec()); Ok(()) }).unwrap();
    /// assert_eq!(ys, [vec![0, 0, 0], vec![0, 0, 1], vec![0, 0, 2], vec![0, 0, 3]]);
    /// ```
    pub fn sweep(&self, mut f: impl FnMut(&[i64], &Val) -> Result<()>) -> Result<()> {
        for y in self.dist.sweep_order() {
            // the sweep order's Y indices have one entry per Y
            let d = self.dist.ys_to_d_unchecked(&y) as usize;
            f(&y, &self.regs[d])?;
        }
        Ok(())
    }

    /// Where every element of the calling thread's buffer sits in the tile: `positions[d]` is
    /// the X index (one value per tile dim, relative to the window's origin) of `regs[d]`,
    /// computed from the distribution (`calculate_x` of the thread's P index and the element's
    /// Y index). Add the window origin for the position in the view, e.g. a column index for an
    /// argmax or a mask `column < n`.
    ///
    /// ```
    /// use tilekit_ir::KernelBuilder;
    /// use tilekit_kernel::{DTile, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let t = DTile::splat(&dist::row_major(8, 32, 64, 4).unwrap(), &b.f32(0.0));
    /// let x = t.positions(&b).unwrap();
    /// assert_eq!((x.len(), x[0].len()), (4, 2)); // 4 elements per thread, (row, column) each
    /// ```
    pub fn positions(&self, b: &KernelBuilder) -> Result<Vec<Vec<Val>>> {
        let p = p_index(b, &self.dist)?;
        (0..self.regs.len() as i64)
            .map(|d| {
                let y: Vec<Val> = self.dist.d_to_ys(d).into_iter().map(Val::lit).collect();
                Ok(self.dist.calculate_x(&p, &y)?)
            })
            .collect()
    }

    /// Folds every element of the thread's buffer with `op` (the in-thread part of a reduction).
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, BinOp};
    /// use tilekit_kernel::{DTile, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let t = DTile::splat(&dist::row_major(8, 32, 64, 4).unwrap(), &b.f32(1.5));
    /// assert_eq!(t.reduce_thread(&b, BinOp::Add).unwrap().const_lit().unwrap().as_f64(), Some(6.0));
    /// ```
    pub fn reduce_thread(&self, b: &KernelBuilder, op: BinOp) -> Result<Val> {
        tree_reduce(b, self.regs.clone(), op)
    }

    /// [`reduce_thread`](Self::reduce_thread) with the result in f32, whatever the element
    /// type. A max or min of a 16-bit tile (F16, BF16) with an even element count folds the
    /// raw elements two at a time with packed pair instructions ([`KernelBuilder::binary_pair`],
    /// `max.NaN.bf16x2`: one instruction per two elements, no widening) and widens only the
    /// last pair — exact, as a max picks an element, and NaN-propagating like the f32 max (a
    /// NaN element makes the result NaN). Every other case widens each element to f32 first.
    ///
    /// ```
    /// use tilekit_ir::{BinOp, KernelBuilder, ScalarType};
    /// use tilekit_kernel::{DTile, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let d = dist::row_major(8, 64, 64, 8).unwrap();
    /// // 8 distinct bf16 values a thread (its elements' column indices)
    /// let mut t = DTile::splat(&d, &b.cvt(&b.f32(0.0), ScalarType::BF16).unwrap());
    /// let at = t.positions(&b).unwrap();
    /// for (r, x) in t.regs.iter_mut().zip(at) {
    ///     let col = b.cvt(&x[1], ScalarType::F32).unwrap();
    ///     *r = b.cvt(&col, ScalarType::BF16).unwrap();
    /// }
    /// let m = t.reduce_thread_f32(&b, BinOp::Max).unwrap();
    /// assert_eq!(m.ty(), Some(ScalarType::F32));
    /// b.keep(&m);
    /// let text = b.finish().unwrap().to_string();
    /// assert_eq!(text.matches("max.x2").count(), 2 + 1); // 4 pairs folded to one
    /// ```
    pub fn reduce_thread_f32(&self, b: &KernelBuilder, op: BinOp) -> Result<Val> {
        let packed = matches!(self.elem, ScalarType::F16 | ScalarType::BF16)
            && matches!(op, BinOp::Max | BinOp::Min)
            && self.regs.len() >= 2
            && self.regs.len().is_multiple_of(2);
        if !packed {
            return self.cast(b, ScalarType::F32)?.reduce_thread(b, op);
        }
        let mut level: Vec<[Val; 2]> =
            self.regs.chunks(2).map(|p| [p[0].clone(), p[1].clone()]).collect();
        while level.len() > 1 {
            let mut next = Vec::with_capacity(level.len().div_ceil(2));
            for two in level.chunks(2) {
                next.push(match two {
                    [x, y] => b.binary_pair(op, [&x[0], &x[1]], [&y[0], &y[1]])?,
                    [x] => x.clone(),
                    _ => unreachable!("chunks(2) gives one or two"),
                });
            }
            level = next;
        }
        let [lo, hi] = level.pop().expect("at least one pair");
        let (lo, hi) = (b.cvt(&lo, ScalarType::F32)?, b.cvt(&hi, ScalarType::F32)?);
        Ok(b.binary(op, &lo, &hi)?)
    }
}

/// A tile window in a kernel: a distribution placed on a view at a (runtime) origin, with every
/// thread's access walk computed once.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType, Val};
/// use tilekit_layout::Idx;
/// use tilekit_kernel::{View, Window, dist, KernelError};
/// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
/// let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
/// let d = dist::row_major(8, 32, 64, 4).unwrap();
/// let o = [Val::lit(0), Val::lit(0)];
/// // the window must have the distribution's lengths
/// assert!(Window::new(&b, &View::global(&x, 4).unwrap().pad(&[8, 32]).unwrap(), &[8, 16], &o, &d).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct Window {
    mem: MemRef,
    dist: TileDistribution,
    traits: LoadStoreTraits,
    accesses: Vec<TraitsAccess>,
    walk: Vec<WindowAccess<Val>>,
}

/// The linear thread id of the block.
fn linear_tid(b: &KernelBuilder) -> Val {
    let (bx, by) = (b.block_dim(Axis::X), b.block_dim(Axis::Y));
    b.thread_id(Axis::X) + b.thread_id(Axis::Y) * bx.clone() + b.thread_id(Axis::Z) * bx * by
}

/// Threads per block (a build-time constant).
fn block_threads(b: &KernelBuilder) -> i64 {
    [Axis::X, Axis::Y, Axis::Z].iter().map(|&a| b.block_dim(a).const_int().unwrap_or(1)).product()
}

/// The P index of the calling thread for `dist`: the block's threads are split into groups of
/// `dist.num_threads()` (each group one copy of the distribution); within a group, P is the
/// row-major decomposition of the thread's position over the P lengths.
///
/// ```
/// use tilekit_ir::KernelBuilder;
/// use tilekit_kernel::{p_index, dist};
/// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
/// let p = p_index(&b, &dist::row_major(8, 32, 64, 4).unwrap()).unwrap();
/// assert_eq!(p.len(), 1);
/// let b = KernelBuilder::new("k", [48, 1, 1]).unwrap();
/// assert!(p_index(&b, &dist::row_major(8, 32, 64, 4).unwrap()).is_err());
/// ```
pub fn p_index(b: &KernelBuilder, dist: &TileDistribution) -> Result<Vec<Val>> {
    let n = dist.num_threads();
    let threads = block_threads(b);
    if threads % n != 0 {
        return Err(KernelError::invalid(
            "tile window",
            "distribution threads",
            n,
            format!("must divide the block's {threads} threads"),
        ));
    }
    let local = linear_tid(b) % Val::lit(n);
    let lengths: Vec<Val> = dist.p_lengths().into_iter().map(Val::lit).collect();
    Ok(Transform::merge(lengths)?.lower_index(&[local])?)
}

impl Window {
    /// `make_tile_window(view, lengths, origin, distribution)` for the calling thread. Typed
    /// errors: `lengths` not the distribution's X lengths, ranks that differ, a window longer
    /// than an unpadded view dim whose length is known, a distribution whose thread count does
    /// not divide the block.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, Val};
    /// use tilekit_layout::{Idx, TensorDescriptor};
    /// use tilekit_kernel::{View, Window, dist, KernelError};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let s = View::shared(&b, "s", ScalarType::F32, &TensorDescriptor::packed(vec![4i64, 32], Some(4)).unwrap()).unwrap();
    /// let e = Window::new(&b, &s, &[8, 32], &[Val::lit(0), Val::lit(0)], &dist::row_major(8, 32, 64, 4).unwrap()).unwrap_err();
    /// assert!(matches!(e, KernelError::WindowExceedsView { dim: 0, window: 8, view: 4 }));
    /// ```
    pub fn new(
        b: &KernelBuilder,
        view: &View,
        lengths: &[i64],
        origin: &[Val],
        dist: &TileDistribution,
    ) -> Result<Window> {
        let xl = dist.x_lengths();
        if lengths != xl.as_slice() {
            return Err(KernelError::invalid(
                "tile window",
                "lengths",
                format!("{lengths:?}"),
                format!("must be the distribution's X lengths {xl:?}"),
            ));
        }
        let n = view.desc.ndim();
        if lengths.len() != n || origin.len() != n {
            return Err(KernelError::invalid(
                "tile window",
                "rank",
                format!("window {}, origin {}", lengths.len(), origin.len()),
                format!("the view has {n} dims"),
            ));
        }
        for (i, (len, &w)) in view.lengths_const().into_iter().zip(lengths).enumerate() {
            if let Some(l) = len {
                if !view.padded[i] && w > l {
                    return Err(KernelError::WindowExceedsView { dim: i, window: w, view: l });
                }
            }
        }
        b.note(format!(
            "tile window {} {}[{lengths:?}]: thread index math (distribution {})",
            view.mem.space.name(),
            mem_index(view.mem),
            tilekit_tile::encoding_text::print_encoding(dist.encoding().spec())
        ));
        let p = p_index(b, dist)?;
        let ndim_p = dist.encoding().ndim_p();
        let traits = LoadStoreTraits::from_adaptor(
            dist.ps_ys_to_xs(),
            ndim_p,
            dist.ys_to_d_descriptor(),
            view.desc.top_safe_vector_lengths_strides(),
            AccessCurve::Linear,
        )?;
        let adaptor = dist.ps_ys_to_xs().lift::<Val>();
        let walk = walk_generic(&adaptor, ndim_p, &traits, &view.desc, origin, &p)?;
        Ok(Window { mem: view.mem, dist: dist.clone(), accesses: traits.accesses(), traits, walk })
    }

    /// The load/store traits (vector width, number of accesses).
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, Val};
    /// use tilekit_layout::Idx;
    /// use tilekit_kernel::{View, Window, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
    /// let w = Window::new(&b, &View::global(&x, 2).unwrap().pad(&[8, 32]).unwrap(), &[8, 32],
    ///     &[Val::lit(0), Val::lit(0)], &dist::row_major(8, 32, 64, 4).unwrap()).unwrap();
    /// assert_eq!((w.traits().scalar_per_vector(), w.traits().num_access()), (2, 2));
    /// ```
    pub fn traits(&self) -> &LoadStoreTraits {
        &self.traits
    }

    /// The calling thread's accesses (offset and validity per vector), in issue order.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, Val};
    /// use tilekit_layout::Idx;
    /// use tilekit_kernel::{View, Window, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
    /// let w = Window::new(&b, &View::global(&x, 4).unwrap(), &[8, 32],
    ///     &[Val::lit(0), Val::lit(0)], &dist::row_major(8, 32, 64, 4).unwrap()).unwrap();
    /// assert_eq!(w.walk().len(), 1);
    /// ```
    pub fn walk(&self) -> &[WindowAccess<Val>] {
        &self.walk
    }

    fn pieces(&self) -> (usize, usize) {
        let spv = self.traits.scalar_per_vector() as usize;
        let max = (16 / self.mem.elem.size_bytes()).max(1);
        let w = spv.min(max);
        (w, spv / w)
    }

    fn mask(valid: &Pred) -> Option<&Pred> {
        (valid.to_const() != Some(true)).then_some(valid)
    }

    /// Loads the tile: one masked vector load per access; elements in the pad read as zero.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, Val};
    /// use tilekit_layout::Idx;
    /// use tilekit_kernel::{View, Window, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
    /// let w = Window::new(&b, &View::global(&x, 4).unwrap().pad(&[8, 32]).unwrap(), &[8, 32],
    ///     &[Val::lit(0), Val::lit(0)], &dist::row_major(8, 32, 64, 4).unwrap()).unwrap();
    /// assert_eq!(w.load(&b).unwrap().regs.len(), 4);
    /// ```
    pub fn load(&self, b: &KernelBuilder) -> Result<DTile> {
        self.note(b, "load");
        self.load_impl(b, None)
    }

    fn note(&self, b: &KernelBuilder, what: &str) {
        b.note(format!(
            "tile window {what} {} {}: {} accesses of {} elements along Y{}",
            self.mem.space.name(),
            mem_index(self.mem),
            self.traits.num_access(),
            self.traits.scalar_per_vector(),
            self.traits.vector_dim_y()
        ));
    }

    /// [`load`](Self::load) with `fill` (e.g. −∞ for a max) where the vector is invalid.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, Val};
    /// use tilekit_layout::Idx;
    /// use tilekit_kernel::{View, Window, dist};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
    /// let w = Window::new(&b, &View::global(&x, 4).unwrap().pad(&[8, 32]).unwrap(), &[8, 32],
    ///     &[Val::lit(0), Val::lit(0)], &dist::row_major(8, 32, 64, 4).unwrap()).unwrap();
    /// assert!(w.load_or(&b, &b.f32(f32::NEG_INFINITY)).is_ok());
    /// assert!(w.load_or(&b, &b.i32(0)).is_err()); // fill of the wrong type
    /// ```
    pub fn load_or(&self, b: &KernelBuilder, fill: &Val) -> Result<DTile> {
        if fill.ty() != Some(self.mem.elem) {
            return Err(KernelError::DtypeMismatch {
                context: "window load fill".into(),
                got: fill.ty().unwrap_or(ScalarType::I32),
                expected: self.mem.elem,
            });
        }
        self.load_impl(b, Some(fill))
    }

    fn load_impl(&self, b: &KernelBuilder, fill: Option<&Val>) -> Result<DTile> {
        let n = self.dist.thread_buffer_size() as usize;
        let mut regs: Vec<Option<Val>> = vec![None; n];
        let (w, pieces) = self.pieces();
        // a constant fill goes into the registers before the predicated load (no select)
        let konst = fill.and_then(Val::const_lit);
        for (a, acc) in self.accesses.iter().zip(&self.walk) {
            let mask = Self::mask(&acc.valid);
            for k in 0..pieces {
                let off = acc.offset.clone() + Val::lit((k * w) as i64);
                let vals = match konst {
                    Some(lit) => b.load_fill(self.mem, &off, w, mask, &lit)?,
                    None => b.load(self.mem, &off, w, mask)?,
                };
                for (j, v) in vals.into_iter().enumerate() {
                    let v = match (fill, mask, konst) {
                        (Some(f), Some(m), None) => b.select(m, &v, f)?,
                        _ => v,
                    };
                    regs[a.d_elems[k * w + j] as usize] = Some(v);
                }
            }
        }
        let zero = b.konst(tilekit_ir::Lit::from_bits(self.mem.elem, 0));
        Ok(DTile {
            dist: self.dist.clone(),
            elem: self.mem.elem,
            regs: regs.into_iter().map(|r| r.unwrap_or_else(|| zero.clone())).collect(),
        })
    }

    /// Stores a tile of the window's distribution and element type (masked by validity).
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, Val};
    /// use tilekit_layout::Idx;
    /// use tilekit_kernel::{DTile, View, Window, dist, KernelError};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let y = b.tensor_param("y", ScalarType::F16, 2).unwrap();
    /// let d = dist::row_major(8, 32, 64, 4).unwrap();
    /// let w = Window::new(&b, &View::global(&y, 4).unwrap().pad(&[8, 32]).unwrap(), &[8, 32],
    ///     &[Val::lit(0), Val::lit(0)], &d).unwrap();
    /// let e = w.store(&b, &DTile::splat(&d, &b.f32(1.0))).unwrap_err();
    /// assert!(matches!(e, KernelError::DtypeMismatch { .. }));
    /// ```
    pub fn store(&self, b: &KernelBuilder, t: &DTile) -> Result<()> {
        self.note(b, "store");
        if t.dist != self.dist {
            return Err(KernelError::invalid(
                "window store",
                "tile distribution",
                format!("{:?}", t.dist.x_lengths()),
                format!("must be the window's distribution ({:?})", self.dist.x_lengths()),
            ));
        }
        if t.elem != self.mem.elem {
            return Err(KernelError::DtypeMismatch {
                context: "window store".into(),
                got: t.elem,
                expected: self.mem.elem,
            });
        }
        let (w, pieces) = self.pieces();
        for (a, acc) in self.accesses.iter().zip(&self.walk) {
            let mask = Self::mask(&acc.valid);
            for k in 0..pieces {
                let off = acc.offset.clone() + Val::lit((k * w) as i64);
                let vals: Vec<Val> =
                    (0..w).map(|j| t.regs[a.d_elems[k * w + j] as usize].clone()).collect();
                b.store(self.mem, &off, &vals, mask)?;
            }
        }
        Ok(())
    }
}

/// Reduces `v` over the 32 lanes of each warp with butterfly shuffles (every lane gets the
/// result). `v` must be a 32-bit value.
///
/// ```
/// use tilekit_ir::{KernelBuilder, BinOp};
/// use tilekit_kernel::warp_reduce;
/// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
/// let s = warp_reduce(&b, &b.f32(1.0), BinOp::Add).unwrap();
/// b.keep(&s);
/// assert_eq!(b.finish().unwrap().to_string().matches("shfl.sync.bfly").count(), 5);
/// ```
pub fn warp_reduce(b: &KernelBuilder, v: &Val, op: BinOp) -> Result<Val> {
    b.note(format!("warp reduce ({}) with butterfly shuffles", op.name()));
    let mut v = v.clone();
    for s in [16, 8, 4, 2, 1] {
        let other = b.shfl(ShflMode::Bfly, &v, &Val::lit(s))?;
        v = b.binary(op, &v, &other)?;
    }
    Ok(v)
}

/// Reduces `v` over the whole block (every thread gets the result): warp reductions, lane 0 of
/// each warp writes `scratch[warp]`, a barrier, every thread folds the partials, and a second
/// barrier so `scratch` can be reused. `scratch` must be shared memory of at least one element
/// per warp, of `v`'s type.
///
/// ```
/// use tilekit_ir::{KernelBuilder, BinOp, ScalarType};
/// use tilekit_kernel::block_reduce;
/// let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
/// let s = b.shared("partial", ScalarType::F32, 4).unwrap();
/// let r = block_reduce(&b, &b.f32(1.0), BinOp::Max, s).unwrap();
/// b.keep(&r);
/// assert_eq!(b.finish().unwrap().to_string().matches("bar.sync").count(), 2);
/// // too little scratch is named at build time, not an out-of-bounds access at run time
/// let b = KernelBuilder::new("k", [256, 1, 1]).unwrap();
/// let s = b.shared("partial", ScalarType::F32, 4).unwrap();
/// let e = block_reduce(&b, &b.f32(1.0), BinOp::Add, s).unwrap_err().to_string();
/// assert!(e.contains("8 warps need 8 elements"), "{e}");
/// ```
pub fn block_reduce(b: &KernelBuilder, v: &Val, op: BinOp, scratch: MemRef) -> Result<Val> {
    b.note(format!("block reduce ({}) through shared memory", op.name()));
    let (r, shared) = reduce_through(b, v, op, scratch, 0)?;
    if shared {
        // the scratch may be reused once every warp has read the partials
        b.barrier();
    }
    Ok(r)
}

/// The block's reduction of `v`: warp shuffles, then (more than one warp) each warp's
/// partial at `scratch[first + warp]`, one barrier, every thread folding the partials.
/// Returns the result and whether the scratch was used.
fn reduce_through(
    b: &KernelBuilder,
    v: &Val,
    op: BinOp,
    scratch: MemRef,
    first: i64,
) -> Result<(Val, bool)> {
    let warps = (block_threads(b) + 31) / 32;
    if warps > 1 {
        if let Some((name, len)) = b.shared_len(scratch) {
            let needs = first + warps;
            if (len as i64) < needs {
                return Err(KernelError::invalid(
                    "block reduce",
                    "scratch",
                    format!("`{name}` of {len} elements"),
                    format!(
                        "the block's {warps} warps need {needs} elements (one partial a warp{})",
                        if first > 0 { format!(", from element {first}") } else { String::new() }
                    ),
                ));
            }
        }
    }
    let w = warp_reduce(b, v, op)?;
    if warps == 1 {
        return Ok((w, false));
    }
    let lane0 = b.cmp(CmpOp::Eq, &b.lane_id(), &Val::lit(0))?;
    let at = b.warp_id() + Val::lit(first);
    b.if_then(&lane0, |b| b.store(scratch, &at, std::slice::from_ref(&w), None))?;
    b.barrier();
    let parts = (0..warps)
        .map(|i| Ok(b.load(scratch, &Val::lit(first + i), 1, None)?.remove(0)))
        .collect::<Result<Vec<_>>>()?;
    Ok((tree_reduce(b, parts, op)?, true))
}

/// [`block_reduce`] with the warps' partials at `scratch[first ..  first + warps]` and **no
/// trailing barrier**: for a region of `scratch` that nothing in the block writes afterwards
/// (each reduction of a kernel its own region), so the barrier that lets `block_reduce` reuse
/// its scratch is not needed. One `bar.sync` instead of two: the warps leave as soon as every
/// partial is written.
///
/// ```
/// use tilekit_ir::{KernelBuilder, BinOp, ScalarType};
/// use tilekit_kernel::block_reduce_at;
/// let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
/// let s = b.shared("partial", ScalarType::F32, 8).unwrap();
/// let m = block_reduce_at(&b, &b.f32(1.0), BinOp::Max, s, 0).unwrap();
/// let t = block_reduce_at(&b, &m, BinOp::Add, s, 4).unwrap(); // its own 4 slots
/// b.keep(&t);
/// assert_eq!(b.finish().unwrap().to_string().matches("bar.sync").count(), 2);
/// ```
pub fn block_reduce_at(
    b: &KernelBuilder,
    v: &Val,
    op: BinOp,
    scratch: MemRef,
    first: i64,
) -> Result<Val> {
    b.note(format!("block reduce ({}) through shared memory, one barrier", op.name()));
    Ok(reduce_through(b, v, op, scratch, first)?.0)
}

/// Folds values with `op` as a balanced tree (independent operations in flight).
///
/// ```
/// use tilekit_ir::{KernelBuilder, BinOp};
/// use tilekit_kernel::tree_reduce;
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// let r = tree_reduce(&b, vec![b.f32(1.0), b.f32(4.0), b.f32(2.0)], BinOp::Max).unwrap();
/// assert_eq!(r.const_lit().unwrap().as_f64(), Some(4.0));
/// assert!(tree_reduce(&b, vec![], BinOp::Max).is_err());
/// ```
pub fn tree_reduce(b: &KernelBuilder, vals: Vec<Val>, op: BinOp) -> Result<Val> {
    let mut level = vals;
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        for pair in level.chunks(2) {
            next.push(match pair {
                [x, y] => b.binary(op, x, y)?,
                [x] => x.clone(),
                _ => unreachable!("chunks(2) gives one or two"),
            });
        }
        level = next;
    }
    level
        .pop()
        .ok_or_else(|| KernelError::invalid("reduce", "values", 0, "needs at least one value"))
}

/// [`KernelBuilder::for_range`] for a body written with this crate's errors: the loop stays a
/// loop (one body in the IR, run `⌈(hi − lo) / step⌉` times, carrying `init` through as
/// loop-carried values); a [`KernelError`] from the body comes back as itself, and so does an
/// error of another layer wrapped in [`KernelError::Other`].
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType, BinOp, Val};
/// use tilekit_layout::Idx;
/// use tilekit_kernel::{for_range, KernelError};
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// let n = b.scalar_param("n", ScalarType::I32).unwrap();
/// let r = for_range(&b, &Val::lit(0), &n, &Val::lit(1), &[b.f32(0.0)], |b, _, acc| {
///     Ok(vec![b.binary(BinOp::Add, &acc[0], &b.f32(1.0))?])
/// }).unwrap();
/// assert_eq!(r.len(), 1);
/// let e = for_range(&b, &Val::lit(0), &n, &Val::lit(1), &[], |_, _, _| {
///     Err(KernelError::invalid("body", "x", 1, "stop"))
/// }).unwrap_err();
/// assert!(matches!(e, KernelError::Invalid { .. }));
/// ```
pub fn for_range(
    b: &KernelBuilder,
    lo: &Val,
    hi: &Val,
    step: &Val,
    init: &[Val],
    body: impl FnOnce(&KernelBuilder, Val, &[Val]) -> Result<Vec<Val>>,
) -> Result<Vec<Val>> {
    let slot = std::cell::RefCell::new(None);
    let r = b.for_range(lo, hi, step, init, |b, i, c| {
        body(b, i, c).map_err(|e| keep_error(&slot, "loop body", e))
    });
    match slot.into_inner() {
        Some(e) => Err(e),
        None => Ok(r?),
    }
}

/// Hands a kernel-layer error through a builder closure (which returns the IR's errors): an IR
/// error passes as itself; any other is kept in `slot` (for the caller to return as itself)
/// and a placeholder naming `what` crosses the IR layer.
fn keep_error(
    slot: &std::cell::RefCell<Option<KernelError>>,
    what: &str,
    e: KernelError,
) -> tilekit_ir::IrError {
    match e {
        KernelError::Ir(e) => e,
        other => {
            let msg = other.to_string();
            *slot.borrow_mut() = Some(other);
            tilekit_ir::IrError::Layout(tilekit_layout::LayoutError::invalid(
                what,
                "error",
                msg,
                "see the kernel layer's error",
            ))
        }
    }
}

/// [`KernelBuilder::if_then_else`] for branches written with this crate's errors: `then` and
/// `else_` each return the values the if yields (same count and types); a [`KernelError`] from
/// either comes back as itself. A uniform condition (the same in every thread, e.g. a block's
/// reduced max) makes it a choice between two loops at no cost per element.
///
/// ```
/// use tilekit_ir::{KernelBuilder, CmpOp, ScalarType};
/// use tilekit_kernel::{if_then_else, KernelError};
/// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
/// let n = b.scalar_param("n", ScalarType::I32).unwrap();
/// let big = b.cmp(CmpOp::Gt, &n, &b.i32(8)).unwrap();
/// let v = if_then_else(&b, &big, |b| Ok(vec![b.f32(1.0)]), |b| Ok(vec![b.f32(2.0)])).unwrap();
/// assert_eq!(v[0].ty(), Some(ScalarType::F32));
/// let e = if_then_else(&b, &big, |b| Ok(vec![b.f32(1.0)]), |_| {
///     Err(KernelError::invalid("else", "x", 1, "stop"))
/// }).unwrap_err();
/// assert!(matches!(e, KernelError::Invalid { .. }));
/// ```
pub fn if_then_else(
    b: &KernelBuilder,
    cond: &tilekit_ir::Pred,
    then: impl FnOnce(&KernelBuilder) -> Result<Vec<Val>>,
    else_: impl FnOnce(&KernelBuilder) -> Result<Vec<Val>>,
) -> Result<Vec<Val>> {
    let slot = std::cell::RefCell::new(None);
    let keep = |e: KernelError| keep_error(&slot, "branch", e);
    let r = b.if_then_else(cond, |b| then(b).map_err(keep), |b| else_(b).map_err(keep));
    match slot.into_inner() {
        Some(e) => Err(e),
        None => Ok(r?),
    }
}

fn mem_index(m: MemRef) -> u32 {
    match m.space {
        tilekit_ir::MemSpace::Global(i) | tilekit_ir::MemSpace::Shared(i) => i,
    }
}
