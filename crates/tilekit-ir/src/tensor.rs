//! Tensors: a dtype, a shape, strides and an offset over a flat buffer of elements.
//!
//! A [`TensorLayout`] says where each logical element of an n-dimensional tensor lives in a
//! flat buffer. Lengths, strides and the offset are counted in **elements** (not bytes) and are
//! `i64`, like the interpreter's tensor arguments ([`crate::interp::Args::tensor`]):
//!
//! ```text
//!   shape [2, 3], strides [4, 1], offset 1
//!
//!   flat buffer:  index   0    1    2    3    4    5    6    7
//!                       ┌────┬────┬────┬────┬────┬────┬────┬────┐
//!                       │    │ 00 │ 01 │ 02 │    │ 10 │ 11 │ 12 │   ij = element (i, j)
//!                       └────┴────┴────┴────┴────┴────┴────┴────┘
//!                              ▲                   ▲
//!                              offset 1            offset 1 + 1·4 (row 1)
//!   buffer elements 0 and 4 are not addressed: gaps are allowed
//!
//!   element (i, j) lives at  offset + i·4 + j·1
//!   span = offset + (2−1)·4 + (3−1)·1 + 1 = 8 elements: the smallest buffer that holds it
//! ```
//!
//! Strides may be any non-negative value: 0 repeats an element along a dimension (what
//! [`TensorLayout::broadcast_to`] makes), and strides need not be sorted (what
//! [`TensorLayout::permute`] makes). Negative strides are refused. Every layout is validated
//! when it is made: the element count, the span and its byte size fit in `i64`, so every
//! query afterwards is plain arithmetic without overflow. Views (permute, transpose, narrow,
//! broadcast) make new layouts over the same elements; nothing is copied.
//!
//! A [`HostTensor`] puts a layout over a [`HostBuffer`] (the interpreter's memory), checked
//! that the layout fits the buffer and the dtypes agree; [`HostTensor::to_vec`] gathers any
//! strided view into a contiguous `Vec` in logical row-major order. The gather itself,
//! [`gather_bytes`], works on raw little-endian bytes, so the CUDA runtime downloads a device
//! tensor's span and gathers it with the same code.
//!
//! ```
//! use tilekit_ir::{tensor::{HostTensor, TensorLayout}, ScalarType};
//! # fn main() -> Result<(), tilekit_ir::tensor::TensorError> {
//! let l = TensorLayout::strided(ScalarType::F32, vec![2, 3], vec![4, 1], 1)?;
//! assert_eq!(l.span_elems(), 8);
//! assert_eq!(l.offset_of(&[1, 2])?, 7);
//! let t = HostTensor::from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3])?;
//! assert_eq!(t.transpose(0, 1)?.to_vec::<f32>()?, vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
//! # Ok(()) }
//! ```

use std::sync::{Arc, RwLock, RwLockWriteGuard};

use half::{bf16, f16};

use crate::interp::HostBuffer;
use crate::types::ScalarType;

/// Why a tensor layout or a tensor could not be made or used.
///
/// ```
/// use tilekit_ir::{tensor::{TensorError, TensorLayout}, ScalarType};
/// let e = TensorLayout::strided(ScalarType::F32, vec![2, 3], vec![1], 0).unwrap_err();
/// assert!(matches!(e, TensorError::RankMismatch { .. }));
/// assert_eq!(e.to_string(), "strides has rank 1: must equal the tensor's rank 2");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TensorError {
    /// A list (strides, an index, a permutation, a shape) has the wrong number of entries.
    #[error("{what} has rank {got}: must equal the tensor's rank {expected}")]
    RankMismatch {
        /// Which list.
        what: &'static str,
        /// Its number of entries.
        got: usize,
        /// The tensor's rank.
        expected: usize,
    },
    /// A length is negative.
    #[error("length {len} of dimension {dim} is negative: lengths must be >= 0")]
    NegativeLength {
        /// The dimension.
        dim: usize,
        /// Its length.
        len: i64,
    },
    /// A stride is negative.
    #[error("stride {stride} of dimension {dim} is negative: strides must be >= 0")]
    NegativeStride {
        /// The dimension.
        dim: usize,
        /// Its stride.
        stride: i64,
    },
    /// The offset is negative.
    #[error("offset {offset} is negative: the offset must be >= 0")]
    NegativeOffset {
        /// The offset.
        offset: i64,
    },
    /// The element count, the span or its byte size does not fit in `i64`.
    #[error("the {what} of shape {shape:?} with strides {strides:?} and offset {offset} overflows i64: it must be at most {max}")]
    Overflow {
        /// `element count`, `span` or `byte size`.
        what: &'static str,
        /// The shape.
        shape: Vec<i64>,
        /// The strides.
        strides: Vec<i64>,
        /// The offset.
        offset: i64,
        /// The largest valid value.
        max: i64,
    },
    /// The element type has no memory representation a tensor can hold.
    #[error("dtype {dtype} cannot be a tensor element: use i32, u32, i64, f16, bf16, f32 or f64")]
    UnsupportedDtype {
        /// The type.
        dtype: ScalarType,
    },
    /// A dimension number is out of range.
    #[error("dimension {dim} is out of range: the tensor has rank {rank} (dimensions 0..{rank})")]
    DimOutOfRange {
        /// The dimension asked for.
        dim: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// A permutation does not name every dimension exactly once.
    #[error(
        "permutation {perm:?} is invalid: it must name every dimension 0..{rank} exactly once"
    )]
    BadPermutation {
        /// The permutation.
        perm: Vec<usize>,
        /// The tensor's rank.
        rank: usize,
    },
    /// A narrow reaches past its dimension.
    #[error("narrow of dimension {dim} at start {start} with length {len} is out of range: start >= 0, len >= 0 and start + len <= {dim_len}")]
    NarrowOutOfRange {
        /// The dimension.
        dim: usize,
        /// The start.
        start: i64,
        /// The length.
        len: i64,
        /// The dimension's length.
        dim_len: i64,
    },
    /// A shape cannot be broadcast to another.
    #[error("shape {from:?} cannot be broadcast to {to:?}: dimension {dim} must have length 1 or {target}")]
    BroadcastMismatch {
        /// The tensor's shape.
        from: Vec<i64>,
        /// The target shape.
        to: Vec<i64>,
        /// The offending dimension of the target shape.
        dim: usize,
        /// The target length there.
        target: i64,
    },
    /// An index is outside its dimension.
    #[error("index {index} of dimension {dim} is out of range: it must be in 0..{len}")]
    IndexOutOfRange {
        /// The dimension.
        dim: usize,
        /// The index.
        index: i64,
        /// The dimension's length.
        len: i64,
    },
    /// The layout addresses elements past the end of the buffer.
    #[error("the layout spans {span} elements but the buffer holds {buffer_len}: the buffer must hold at least {span}")]
    DoesNotFit {
        /// The layout's span in elements.
        span: i64,
        /// The buffer's length in elements.
        buffer_len: usize,
    },
    /// The buffer's (or the requested) element type differs from the layout's.
    #[error("dtype mismatch: the tensor holds {layout} but {other} was given or asked for")]
    DtypeMismatch {
        /// The layout's dtype.
        layout: ScalarType,
        /// The other dtype.
        other: ScalarType,
    },
    /// The host cannot hold a contiguous copy of the tensor's elements (a gather of a large
    /// broadcast view).
    #[error("a contiguous copy of {numel} {dtype} elements cannot be allocated on the host: the copy must fit in memory")]
    HostAlloc {
        /// The element count.
        numel: i64,
        /// The element type.
        dtype: ScalarType,
    },
    /// The data's length differs from the shape's element count.
    #[error("{len} elements were given for shape {shape:?}: it needs exactly {numel}")]
    LengthMismatch {
        /// The shape.
        shape: Vec<i64>,
        /// Its element count.
        numel: i64,
        /// The number of elements given.
        len: usize,
    },
}

/// Result alias of the tensor module.
///
/// ```
/// let r: tilekit_ir::tensor::Result<i64> = Ok(1);
/// assert_eq!(r, Ok(1));
/// ```
pub type Result<T, E = TensorError> = std::result::Result<T, E>;

/// Where each element of an n-dimensional tensor lives in a flat buffer: dtype, shape,
/// strides and offset in elements (see the [module essay](self)).
///
/// ```
/// use tilekit_ir::{tensor::TensorLayout, ScalarType};
/// let l = TensorLayout::contiguous(ScalarType::BF16, vec![2, 3, 4]).unwrap();
/// assert_eq!(l.strides(), &[12, 4, 1]);
/// assert_eq!(l.size_bytes(), 48);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorLayout {
    dtype: ScalarType,
    shape: Vec<i64>,
    strides: Vec<i64>,
    offset: i64,
}

impl TensorLayout {
    /// A row-major (C order) layout at offset 0.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let l = TensorLayout::contiguous(ScalarType::F32, vec![3, 5]).unwrap();
    /// assert_eq!((l.strides(), l.numel(), l.span_elems()), (&[5, 1][..], 15, 15));
    /// assert!(TensorLayout::contiguous(ScalarType::F32, vec![-1]).is_err());
    /// ```
    pub fn contiguous(dtype: ScalarType, shape: Vec<i64>) -> Result<TensorLayout> {
        let mut strides = vec![0i64; shape.len()];
        let mut acc = 1i64;
        for d in (0..shape.len()).rev() {
            strides[d] = acc;
            // saturating: an overflowing stride only happens with an overflowing element
            // count, which `strided` reports by name
            acc = acc.saturating_mul(shape[d].max(1));
        }
        TensorLayout::strided(dtype, shape, strides, 0)
    }

    /// A layout with explicit strides and offset (in elements), validated: as many strides as
    /// lengths, nothing negative, the element count, span and byte size within `i64`.
    ///
    /// ```
    /// use tilekit_ir::{tensor::{TensorError, TensorLayout}, ScalarType};
    /// let l = TensorLayout::strided(ScalarType::F16, vec![4, 2], vec![0, 1], 3).unwrap();
    /// assert_eq!(l.span_elems(), 5);
    /// let e = TensorLayout::strided(ScalarType::F16, vec![4], vec![-1], 0).unwrap_err();
    /// assert_eq!(e, TensorError::NegativeStride { dim: 0, stride: -1 });
    /// ```
    pub fn strided(
        dtype: ScalarType,
        shape: Vec<i64>,
        strides: Vec<i64>,
        offset: i64,
    ) -> Result<TensorLayout> {
        if dtype == ScalarType::Pred {
            return Err(TensorError::UnsupportedDtype { dtype });
        }
        if strides.len() != shape.len() {
            return Err(TensorError::RankMismatch {
                what: "strides",
                got: strides.len(),
                expected: shape.len(),
            });
        }
        if let Some((dim, &len)) = shape.iter().enumerate().find(|(_, &l)| l < 0) {
            return Err(TensorError::NegativeLength { dim, len });
        }
        if let Some((dim, &stride)) = strides.iter().enumerate().find(|(_, &s)| s < 0) {
            return Err(TensorError::NegativeStride { dim, stride });
        }
        if offset < 0 {
            return Err(TensorError::NegativeOffset { offset });
        }
        let overflow = |what: &'static str, max: i64| TensorError::Overflow {
            what,
            shape: shape.clone(),
            strides: strides.clone(),
            offset,
            max,
        };
        shape
            .iter()
            .try_fold(1i64, |a, &l| a.checked_mul(l))
            .ok_or_else(|| overflow("element count", i64::MAX))?;
        let es = dtype.size_bytes() as i64;
        if !shape.contains(&0) {
            let span = shape
                .iter()
                .zip(&strides)
                .try_fold(offset, |a, (&l, &s)| {
                    (l - 1).checked_mul(s).and_then(|x| a.checked_add(x))
                })
                .and_then(|a| a.checked_add(1))
                .ok_or_else(|| overflow("span", i64::MAX / es))?;
            span.checked_mul(es).ok_or_else(|| overflow("byte size", i64::MAX / es))?;
        }
        Ok(TensorLayout { dtype, shape, strides, offset })
    }

    /// The element type.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// assert_eq!(TensorLayout::contiguous(ScalarType::I32, vec![1]).unwrap().dtype(), ScalarType::I32);
    /// ```
    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }

    /// The lengths.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// assert_eq!(TensorLayout::contiguous(ScalarType::I32, vec![2, 7]).unwrap().shape(), &[2, 7]);
    /// ```
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    /// The strides, in elements.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// assert_eq!(TensorLayout::contiguous(ScalarType::I32, vec![2, 7]).unwrap().strides(), &[7, 1]);
    /// ```
    pub fn strides(&self) -> &[i64] {
        &self.strides
    }

    /// The offset of element `[0, …, 0]`, in elements.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// assert_eq!(TensorLayout::strided(ScalarType::I32, vec![2], vec![1], 5).unwrap().offset(), 5);
    /// ```
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// The number of dimensions.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// assert_eq!(TensorLayout::contiguous(ScalarType::F32, vec![]).unwrap().rank(), 0);
    /// ```
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The number of logical elements (1 for rank 0, 0 when a length is 0).
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// assert_eq!(TensorLayout::contiguous(ScalarType::F32, vec![3, 0]).unwrap().numel(), 0);
    /// assert_eq!(TensorLayout::contiguous(ScalarType::F32, vec![]).unwrap().numel(), 1);
    /// ```
    pub fn numel(&self) -> i64 {
        self.shape.iter().product()
    }

    /// Row-major with no gaps: each stride is the product of the later lengths (dimensions of
    /// length 1 may have any stride, and an empty tensor is contiguous). The offset may be
    /// anything.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let l = TensorLayout::contiguous(ScalarType::F32, vec![2, 3]).unwrap();
    /// assert!(l.is_contiguous());
    /// assert!(!l.transpose(0, 1).unwrap().is_contiguous());
    /// ```
    pub fn is_contiguous(&self) -> bool {
        if self.shape.contains(&0) {
            return true;
        }
        let mut acc = 1i64;
        for d in (0..self.rank()).rev() {
            if self.shape[d] != 1 && self.strides[d] != acc {
                return false;
            }
            acc *= self.shape[d];
        }
        true
    }

    /// The smallest buffer length in elements that holds every addressed element:
    /// `offset + Σ (len−1)·stride + 1`, and 0 for an empty tensor.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let l = TensorLayout::strided(ScalarType::F32, vec![2, 3], vec![4, 1], 1).unwrap();
    /// assert_eq!(l.span_elems(), 8);
    /// assert_eq!(TensorLayout::strided(ScalarType::F32, vec![0], vec![1], 9).unwrap().span_elems(), 0);
    /// ```
    pub fn span_elems(&self) -> i64 {
        if self.shape.contains(&0) {
            return 0;
        }
        self.offset
            + self.shape.iter().zip(&self.strides).map(|(&l, &s)| (l - 1) * s).sum::<i64>()
            + 1
    }

    /// The byte size of [`TensorLayout::span_elems`].
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// assert_eq!(TensorLayout::contiguous(ScalarType::F64, vec![3]).unwrap().size_bytes(), 24);
    /// ```
    pub fn size_bytes(&self) -> i64 {
        self.span_elems() * self.dtype.size_bytes() as i64
    }

    /// True when a buffer of `buffer_len` elements holds every addressed element.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let l = TensorLayout::contiguous(ScalarType::F32, vec![4]).unwrap();
    /// assert!(l.fits(4) && l.fits(5) && !l.fits(3));
    /// ```
    pub fn fits(&self, buffer_len: usize) -> bool {
        self.check_fits(buffer_len).is_ok()
    }

    /// [`TensorLayout::fits`] as a typed error.
    ///
    /// ```
    /// use tilekit_ir::{tensor::{TensorError, TensorLayout}, ScalarType};
    /// let l = TensorLayout::contiguous(ScalarType::F32, vec![4]).unwrap();
    /// assert_eq!(l.check_fits(3), Err(TensorError::DoesNotFit { span: 4, buffer_len: 3 }));
    /// ```
    pub fn check_fits(&self, buffer_len: usize) -> Result<()> {
        let span = self.span_elems();
        if (span as u64) <= buffer_len as u64 {
            Ok(())
        } else {
            Err(TensorError::DoesNotFit { span, buffer_len })
        }
    }

    /// The buffer position of the element at `index` (one entry per dimension, each in range).
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let l = TensorLayout::strided(ScalarType::F32, vec![2, 3], vec![4, 1], 1).unwrap();
    /// assert_eq!(l.offset_of(&[1, 0]).unwrap(), 5);
    /// assert!(l.offset_of(&[2, 0]).is_err());
    /// assert!(l.offset_of(&[1]).is_err());
    /// ```
    pub fn offset_of(&self, index: &[i64]) -> Result<i64> {
        if index.len() != self.rank() {
            return Err(TensorError::RankMismatch {
                what: "index",
                got: index.len(),
                expected: self.rank(),
            });
        }
        let mut at = self.offset;
        for (dim, ((&i, &len), &s)) in index.iter().zip(&self.shape).zip(&self.strides).enumerate()
        {
            if i < 0 || i >= len {
                return Err(TensorError::IndexOutOfRange { dim, index: i, len });
            }
            at += i * s;
        }
        Ok(at)
    }

    /// The buffer position of every element, in logical row-major order (the last index
    /// moving fastest): the order a gather writes.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let l = TensorLayout::strided(ScalarType::F32, vec![2, 2], vec![1, 2], 0).unwrap();
    /// assert_eq!(l.offsets().collect::<Vec<_>>(), vec![0, 2, 1, 3]);
    /// ```
    pub fn offsets(&self) -> impl Iterator<Item = i64> + '_ {
        let n = self.numel();
        let mut index = vec![0i64; self.rank()];
        let mut at = self.offset;
        (0..n).map(move |k| {
            if k > 0 {
                // odometer step: the last dimension moves fastest
                for d in (0..index.len()).rev() {
                    index[d] += 1;
                    at += self.strides[d];
                    if index[d] < self.shape[d] {
                        break;
                    }
                    at -= self.strides[d] * self.shape[d];
                    index[d] = 0;
                }
            }
            at
        })
    }

    /// A view with the dimensions reordered: dimension `d` of the result is dimension
    /// `perm[d]` of `self`.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let l = TensorLayout::contiguous(ScalarType::F32, vec![2, 3, 4]).unwrap();
    /// let p = l.permute(&[2, 0, 1]).unwrap();
    /// assert_eq!((p.shape(), p.strides()), (&[4, 2, 3][..], &[1, 12, 4][..]));
    /// assert!(l.permute(&[0, 0, 1]).is_err());
    /// ```
    pub fn permute(&self, perm: &[usize]) -> Result<TensorLayout> {
        let rank = self.rank();
        if perm.len() != rank {
            return Err(TensorError::RankMismatch {
                what: "permutation",
                got: perm.len(),
                expected: rank,
            });
        }
        let mut seen = vec![false; rank];
        for &p in perm {
            if p >= rank || seen[p] {
                return Err(TensorError::BadPermutation { perm: perm.to_vec(), rank });
            }
            seen[p] = true;
        }
        Ok(TensorLayout {
            dtype: self.dtype,
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        })
    }

    /// A view with dimensions `a` and `b` swapped.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let t = TensorLayout::contiguous(ScalarType::F32, vec![2, 3]).unwrap().transpose(0, 1).unwrap();
    /// assert_eq!((t.shape(), t.strides()), (&[3, 2][..], &[1, 3][..]));
    /// ```
    pub fn transpose(&self, a: usize, b: usize) -> Result<TensorLayout> {
        let rank = self.rank();
        for dim in [a, b] {
            if dim >= rank {
                return Err(TensorError::DimOutOfRange { dim, rank });
            }
        }
        let mut perm: Vec<usize> = (0..rank).collect();
        perm.swap(a, b);
        self.permute(&perm)
    }

    /// A view of `len` elements of dimension `dim` starting at `start`.
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let l = TensorLayout::contiguous(ScalarType::F32, vec![4, 5]).unwrap();
    /// let n = l.narrow(1, 2, 3).unwrap();
    /// assert_eq!((n.shape(), n.offset(), n.span_elems()), (&[4, 3][..], 2, 20));
    /// assert!(l.narrow(1, 3, 3).is_err());
    /// ```
    pub fn narrow(&self, dim: usize, start: i64, len: i64) -> Result<TensorLayout> {
        let rank = self.rank();
        if dim >= rank {
            return Err(TensorError::DimOutOfRange { dim, rank });
        }
        let dim_len = self.shape[dim];
        if start < 0 || len < 0 || start.checked_add(len).is_none_or(|end| end > dim_len) {
            return Err(TensorError::NarrowOutOfRange { dim, start, len, dim_len });
        }
        let mut shape = self.shape.clone();
        shape[dim] = len;
        // start < dim_len when len > 0, so the new offset is an addressed element of `self`;
        // an empty narrow keeps the offset (its span is 0 anyway)
        let offset = if len > 0 { self.offset + start * self.strides[dim] } else { self.offset };
        TensorLayout::strided(self.dtype, shape, self.strides.clone(), offset)
    }

    /// A view with the shape `shape` that repeats elements with stride 0: `shape` has at least
    /// the tensor's rank; the tensor's dimensions align with its last ones, where each must
    /// have length 1 or the target length (NumPy rules).
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let l = TensorLayout::contiguous(ScalarType::F32, vec![3, 1]).unwrap();
    /// let b = l.broadcast_to(&[2, 3, 4]).unwrap();
    /// assert_eq!((b.shape(), b.strides(), b.span_elems()), (&[2, 3, 4][..], &[0, 1, 0][..], 3));
    /// assert!(l.broadcast_to(&[2, 4]).is_err());
    /// ```
    pub fn broadcast_to(&self, shape: &[i64]) -> Result<TensorLayout> {
        let rank = self.rank();
        if shape.len() < rank {
            return Err(TensorError::RankMismatch {
                what: "broadcast shape",
                got: shape.len(),
                expected: rank,
            });
        }
        let lead = shape.len() - rank;
        let mut strides = vec![0i64; shape.len()];
        for (dim, &target) in shape.iter().enumerate() {
            if target < 0 {
                return Err(TensorError::NegativeLength { dim, len: target });
            }
            if dim < lead {
                continue;
            }
            let (len, s) = (self.shape[dim - lead], self.strides[dim - lead]);
            if len == target {
                strides[dim] = s;
            } else if len != 1 {
                return Err(TensorError::BroadcastMismatch {
                    from: self.shape.clone(),
                    to: shape.to_vec(),
                    dim,
                    target,
                });
            }
        }
        TensorLayout::strided(self.dtype, shape.to_vec(), strides, self.offset)
    }

    /// The same shape and strides at another offset (validated like [`TensorLayout::strided`]).
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let l = TensorLayout::strided(ScalarType::F32, vec![2], vec![3], 4).unwrap();
    /// assert_eq!(l.with_offset(0).unwrap().span_elems(), 4);
    /// ```
    pub fn with_offset(&self, offset: i64) -> Result<TensorLayout> {
        TensorLayout::strided(self.dtype, self.shape.clone(), self.strides.clone(), offset)
    }
}

/// Gathers the elements a layout addresses in `bytes` (a little-endian buffer of the layout's
/// dtype) into contiguous bytes, in logical row-major order. `bytes` must hold the layout's
/// span.
///
/// ```
/// use tilekit_ir::{tensor::{gather_bytes, TensorLayout}, ScalarType};
/// let l = TensorLayout::strided(ScalarType::I32, vec![2], vec![2], 1).unwrap();
/// let buf: Vec<u8> = [10i32, 11, 12, 13].iter().flat_map(|x| x.to_le_bytes()).collect();
/// let out = gather_bytes(&l, &buf).unwrap();
/// assert_eq!(out, [11i32, 13].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
/// assert!(gather_bytes(&l, &buf[..8]).is_err());
/// ```
pub fn gather_bytes(layout: &TensorLayout, bytes: &[u8]) -> Result<Vec<u8>> {
    let es = layout.dtype.size_bytes();
    layout.check_fits(bytes.len() / es)?;
    let n = (layout.numel() as u64).checked_mul(es as u64).filter(|&n| n <= isize::MAX as u64);
    let n = n.ok_or(TensorError::HostAlloc { numel: layout.numel(), dtype: layout.dtype })?;
    let mut out = Vec::new();
    out.try_reserve_exact(n as usize)
        .map_err(|_| TensorError::HostAlloc { numel: layout.numel(), dtype: layout.dtype })?;
    for at in layout.offsets() {
        let at = at as usize * es;
        out.extend_from_slice(&bytes[at..at + es]);
    }
    Ok(out)
}

/// A Rust type a tensor can hold, with its [`ScalarType`] and its [`HostBuffer`] conversions.
///
/// ```
/// use tilekit_ir::{tensor::Element, ScalarType};
/// assert_eq!(<half::bf16 as Element>::DTYPE, ScalarType::BF16);
/// let b = f32::to_buffer(&[1.0, 2.0]);
/// assert_eq!(f32::from_buffer(&b), Some(vec![1.0, 2.0]));
/// ```
pub trait Element: Copy + Send + Sync + 'static {
    /// The element's scalar type.
    const DTYPE: ScalarType;
    /// A host buffer holding `data`.
    fn to_buffer(data: &[Self]) -> HostBuffer;
    /// The buffer's elements, if it holds this type.
    fn from_buffer(buf: &HostBuffer) -> Option<Vec<Self>>;
}

macro_rules! element {
    ($t:ty, $st:ident, $from:ident, $to:ident) => {
        impl Element for $t {
            const DTYPE: ScalarType = ScalarType::$st;
            fn to_buffer(data: &[Self]) -> HostBuffer {
                HostBuffer::$from(data)
            }
            fn from_buffer(buf: &HostBuffer) -> Option<Vec<Self>> {
                buf.$to()
            }
        }
    };
}
element!(f32, F32, from_f32, to_f32);
element!(f64, F64, from_f64, to_f64);
element!(i32, I32, from_i32, to_i32);
element!(u32, U32, from_u32, to_u32);
element!(i64, I64, from_i64, to_i64);
element!(f16, F16, from_f16, to_f16);
element!(bf16, BF16, from_bf16, to_bf16);

/// A tensor that is a layout over storage other views may share (host tensors, device tensors):
/// every view — permute, transpose, narrow, broadcast — is a new layout over the same storage,
/// so generic code (over `tilekit_ops::backend::Backend::Tensor`, say) can make views of any
/// backend's tensors.
///
/// ```
/// use tilekit_ir::tensor::{HostTensor, TensorView};
/// fn last_two_swapped<T: TensorView>(t: &T) -> T {
///     let r = t.layout().rank();
///     TensorView::transpose(t, r - 2, r - 1).unwrap()
/// }
/// let t = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
/// assert_eq!(last_two_swapped(&t).to_vec::<f32>().unwrap(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
/// ```
pub trait TensorView: Sized {
    /// Dtype, shape, strides and offset.
    fn layout(&self) -> &TensorLayout;
    /// The same storage under another layout, checked to fit the storage and to keep the dtype.
    fn with_layout(&self, layout: TensorLayout) -> Result<Self>;
    /// The dims reordered: dim `k` of the view is dim `perm[k]` of `self`.
    fn permute(&self, perm: &[usize]) -> Result<Self> {
        self.with_layout(self.layout().permute(perm)?)
    }
    /// Dims `a` and `b` swapped.
    fn transpose(&self, a: usize, b: usize) -> Result<Self> {
        self.with_layout(self.layout().transpose(a, b)?)
    }
    /// `len` indices of dim `dim` from `start`.
    fn narrow(&self, dim: usize, start: i64, len: i64) -> Result<Self> {
        self.with_layout(self.layout().narrow(dim, start, len)?)
    }
    /// Broadcast to `shape` (numpy rules: stride-0 dims).
    fn broadcast_to(&self, shape: &[i64]) -> Result<Self> {
        self.with_layout(self.layout().broadcast_to(shape)?)
    }
}

impl TensorView for HostTensor {
    fn layout(&self) -> &TensorLayout {
        &self.layout
    }
    fn with_layout(&self, layout: TensorLayout) -> Result<Self> {
        if self.storage.dtype != layout.dtype() {
            return Err(TensorError::DtypeMismatch {
                layout: layout.dtype(),
                other: self.storage.dtype,
            });
        }
        layout.check_fits(self.storage.len)?;
        Ok(self.view(layout))
    }
}

/// The memory of host tensors: one buffer that a tensor, its clones and its views all share,
/// as views of device memory share it. A write through any of them is seen by all:
///
/// ```text
///   HostTensor a ─┐
///   a.clone()   ──┼──► HostStorage ──► Arc<HostBuffer>   (read: a snapshot, no copy)
///   a.narrow(..)──┘        write: in place (the buffer is copied only while a snapshot
///                                 taken earlier is still alive, so snapshots never change)
/// ```
///
/// The storage's identity ([`HostStorage::id`]) is what overlap checks compare: two host
/// tensors can share elements only if they share a storage.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// let a = HostTensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
/// let b = a.narrow(0, 1, 1).unwrap();
/// assert_eq!(a.storage().id(), b.storage().id());
/// let before = a.buffer();                       // a snapshot
/// b.storage().write(|buf| buf.as_bytes_mut()[4..8].copy_from_slice(&5.0f32.to_le_bytes()));
/// assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 5.0]);
/// assert_eq!(before.to_f32(), Some(vec![1.0, 2.0]));
/// ```
#[derive(Debug, Clone)]
pub struct HostStorage {
    shared: Arc<RwLock<Arc<HostBuffer>>>,
    dtype: ScalarType,
    len: usize,
}

impl HostStorage {
    fn new(buffer: Arc<HostBuffer>) -> HostStorage {
        let (dtype, len) = (buffer.elem(), buffer.len());
        HostStorage { shared: Arc::new(RwLock::new(buffer)), dtype, len }
    }

    /// A number that identifies the storage while it lives: equal for tensors that share it.
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let a = HostTensor::from_slice(&[1u32, 2], &[2]).unwrap();
    /// let b = HostTensor::from_slice(&[1u32, 2], &[2]).unwrap();
    /// assert_eq!(a.storage().id(), a.clone().storage().id());
    /// assert_ne!(a.storage().id(), b.storage().id());
    /// ```
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.shared) as *const () as usize
    }

    /// The buffer as it is now (a shared snapshot: later writes do not change it).
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let a = HostTensor::from_slice(&[3u32], &[1]).unwrap();
    /// assert_eq!(a.storage().snapshot().to_u32(), Some(vec![3]));
    /// ```
    pub fn snapshot(&self) -> Arc<HostBuffer> {
        Arc::clone(&self.shared.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs `f` on the buffer, writable: what it writes is seen by every tensor of this
    /// storage (snapshots taken before keep their contents).
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let a = HostTensor::from_slice(&[3u32], &[1]).unwrap();
    /// a.clone().storage().write(|b| b.as_bytes_mut()[0] = 9);
    /// assert_eq!(a.to_vec::<u32>().unwrap(), vec![9]);
    /// ```
    pub fn write<R>(&self, f: impl FnOnce(&mut HostBuffer) -> R) -> R {
        let mut guard = self.shared.write().unwrap_or_else(|e| e.into_inner());
        f(Arc::make_mut(&mut guard))
    }

    /// The element type of the buffer.
    ///
    /// ```
    /// use tilekit_ir::{tensor::HostTensor, ScalarType};
    /// assert_eq!(HostTensor::from_slice(&[3u32], &[1]).unwrap().storage().dtype(), ScalarType::U32);
    /// ```
    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }

    /// The buffer's length in elements.
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// assert_eq!(HostTensor::from_slice(&[3u32, 4], &[2]).unwrap().narrow(0, 1, 1).unwrap().storage().len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// assert!(!HostTensor::from_slice(&[3u32], &[1]).unwrap().storage().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The buffer of a host tensor, writable in place ([`HostTensor::buffer_mut`]): holds the
/// storage's lock until dropped.
pub struct BufferMut<'a>(RwLockWriteGuard<'a, Arc<HostBuffer>>);

impl std::ops::Deref for BufferMut<'_> {
    type Target = HostBuffer;
    fn deref(&self) -> &HostBuffer {
        &self.0
    }
}

impl std::ops::DerefMut for BufferMut<'_> {
    fn deref_mut(&mut self) -> &mut HostBuffer {
        Arc::make_mut(&mut self.0)
    }
}

/// A tensor on the host: a [`HostStorage`] and a [`TensorLayout`] that fits it, of the same
/// dtype. Clones and views share the storage, as device tensors share device memory: a write
/// through one is seen by all (make a [`contiguous`](HostTensor::contiguous) copy for memory of
/// its own). Two tensors are equal when their layouts and elements are.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// let t = HostTensor::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
/// let v = t.narrow(1, 1, 2).unwrap();
/// assert_eq!(v.to_vec::<i32>().unwrap(), vec![2, 3, 5, 6]);
/// ```
#[derive(Debug, Clone)]
pub struct HostTensor {
    storage: HostStorage,
    layout: TensorLayout,
}

impl PartialEq for HostTensor {
    fn eq(&self, other: &HostTensor) -> bool {
        self.layout == other.layout && self.buffer() == other.buffer()
    }
}

impl HostTensor {
    /// A tensor over `buffer` with `layout`, checked: same dtype, and the layout fits.
    ///
    /// ```
    /// use tilekit_ir::{interp::HostBuffer, tensor::{HostTensor, TensorLayout}, ScalarType};
    /// let l = TensorLayout::strided(ScalarType::F32, vec![2], vec![2], 0).unwrap();
    /// assert!(HostTensor::new(HostBuffer::from_f32(&[0.0; 3]), l.clone()).is_ok());
    /// assert!(HostTensor::new(HostBuffer::from_f32(&[0.0; 2]), l.clone()).is_err());
    /// assert!(HostTensor::new(HostBuffer::from_i32(&[0; 3]), l).is_err());
    /// ```
    pub fn new(buffer: HostBuffer, layout: TensorLayout) -> Result<HostTensor> {
        HostTensor::from_shared(Arc::new(buffer), layout)
    }

    /// [`HostTensor::new`] over a buffer that other tensors may share.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tilekit_ir::{interp::HostBuffer, tensor::{HostTensor, TensorLayout}, ScalarType};
    /// let b = Arc::new(HostBuffer::from_f32(&[1.0, 2.0]));
    /// let l = TensorLayout::contiguous(ScalarType::F32, vec![2]).unwrap();
    /// assert_eq!(HostTensor::from_shared(b, l).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    /// ```
    /// The tensor gets a storage of its own holding `buffer` (the bytes are shared with other
    /// holders of the `Arc` until one side writes: then the storage copies them first).
    pub fn from_shared(buffer: Arc<HostBuffer>, layout: TensorLayout) -> Result<HostTensor> {
        if buffer.elem() != layout.dtype() {
            return Err(TensorError::DtypeMismatch {
                layout: layout.dtype(),
                other: buffer.elem(),
            });
        }
        layout.check_fits(buffer.len())?;
        Ok(HostTensor { storage: HostStorage::new(buffer), layout })
    }

    /// The buffer, writable in place: the write is seen by every tensor that shares the
    /// storage (clones and views), as on a device. Hold the guard briefly: reading any tensor
    /// of the same storage while it is held waits for it.
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let a = HostTensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    /// let mut b = a.clone();
    /// b.buffer_mut().as_bytes_mut()[..4].copy_from_slice(&5.0f32.to_le_bytes());
    /// assert_eq!(b.to_vec::<f32>().unwrap(), vec![5.0, 2.0]);
    /// assert_eq!(a.to_vec::<f32>().unwrap(), vec![5.0, 2.0]); // shared, as device memory is
    /// ```
    pub fn buffer_mut(&mut self) -> BufferMut<'_> {
        BufferMut(self.storage.shared.write().unwrap_or_else(|e| e.into_inner()))
    }

    /// The storage, shared with clones and views ([`HostStorage`]).
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let a = HostTensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    /// assert_eq!(a.storage().id(), a.transpose(0, 0).unwrap().storage().id());
    /// ```
    pub fn storage(&self) -> &HostStorage {
        &self.storage
    }

    /// A contiguous tensor of `shape` holding a copy of `data` (row-major), checked that the
    /// length matches the shape.
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// use half::f16;
    /// let t = HostTensor::from_slice(&[f16::ONE; 6], &[3, 2]).unwrap();
    /// assert_eq!(t.layout().strides(), &[2, 1]);
    /// assert!(HostTensor::from_slice(&[1.0f32; 5], &[3, 2]).is_err());
    /// ```
    pub fn from_slice<T: Element>(data: &[T], shape: &[i64]) -> Result<HostTensor> {
        let layout = TensorLayout::contiguous(T::DTYPE, shape.to_vec())?;
        check_len(&layout, data.len())?;
        HostTensor::new(T::to_buffer(data), layout)
    }

    /// A contiguous zero tensor (a typed error when the host cannot allocate it).
    ///
    /// ```
    /// use tilekit_ir::{tensor::{HostTensor, TensorError}, ScalarType};
    /// let t = HostTensor::zeros(ScalarType::F64, &[2, 2]).unwrap();
    /// assert_eq!(t.to_vec::<f64>().unwrap(), vec![0.0; 4]);
    /// let e = HostTensor::zeros(ScalarType::I32, &[1 << 40, 1 << 20]).unwrap_err(); // 4 EiB
    /// assert!(matches!(e, TensorError::HostAlloc { .. }));
    /// ```
    pub fn zeros(dtype: ScalarType, shape: &[i64]) -> Result<HostTensor> {
        let layout = TensorLayout::contiguous(dtype, shape.to_vec())?;
        let numel = layout.numel();
        let buf = HostBuffer::try_zeroed(dtype, numel as usize)
            .map_err(|_| TensorError::HostAlloc { numel, dtype })?;
        HostTensor::new(buf, layout)
    }

    /// The layout.
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// assert_eq!(HostTensor::from_slice(&[1u32, 2], &[2]).unwrap().layout().numel(), 2);
    /// ```
    pub fn layout(&self) -> &TensorLayout {
        &self.layout
    }

    /// The whole underlying buffer as it is now: a snapshot, shared with the storage until
    /// the storage is written ([`HostStorage::snapshot`]).
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let t = HostTensor::from_slice(&[1u32, 2], &[2]).unwrap().narrow(0, 1, 1).unwrap();
    /// assert_eq!(t.buffer().len(), 2);
    /// ```
    pub fn buffer(&self) -> Arc<HostBuffer> {
        self.storage.snapshot()
    }

    /// The element type.
    ///
    /// ```
    /// use tilekit_ir::{tensor::HostTensor, ScalarType};
    /// assert_eq!(HostTensor::from_slice(&[1i64], &[1]).unwrap().dtype(), ScalarType::I64);
    /// ```
    pub fn dtype(&self) -> ScalarType {
        self.layout.dtype()
    }

    /// The lengths.
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// assert_eq!(HostTensor::from_slice(&[1i64; 6], &[2, 3]).unwrap().shape(), &[2, 3]);
    /// ```
    pub fn shape(&self) -> &[i64] {
        self.layout.shape()
    }

    fn view(&self, layout: TensorLayout) -> HostTensor {
        HostTensor { storage: self.storage.clone(), layout }
    }

    /// A permuted view ([`TensorLayout::permute`]).
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let t = HostTensor::from_slice(&[0i32, 1, 2, 3, 4, 5], &[1, 2, 3]).unwrap();
    /// assert_eq!(t.permute(&[2, 0, 1]).unwrap().to_vec::<i32>().unwrap(), vec![0, 3, 1, 4, 2, 5]);
    /// ```
    pub fn permute(&self, perm: &[usize]) -> Result<HostTensor> {
        Ok(self.view(self.layout.permute(perm)?))
    }

    /// A transposed view ([`TensorLayout::transpose`]).
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let t = HostTensor::from_slice(&[0i32, 1, 2, 3], &[2, 2]).unwrap();
    /// assert_eq!(t.transpose(0, 1).unwrap().to_vec::<i32>().unwrap(), vec![0, 2, 1, 3]);
    /// ```
    pub fn transpose(&self, a: usize, b: usize) -> Result<HostTensor> {
        Ok(self.view(self.layout.transpose(a, b)?))
    }

    /// A narrowed view ([`TensorLayout::narrow`]).
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let t = HostTensor::from_slice(&[0i32, 1, 2, 3], &[4]).unwrap();
    /// assert_eq!(t.narrow(0, 1, 2).unwrap().to_vec::<i32>().unwrap(), vec![1, 2]);
    /// ```
    pub fn narrow(&self, dim: usize, start: i64, len: i64) -> Result<HostTensor> {
        Ok(self.view(self.layout.narrow(dim, start, len)?))
    }

    /// A broadcast view ([`TensorLayout::broadcast_to`]).
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let t = HostTensor::from_slice(&[7i32, 8], &[2]).unwrap();
    /// assert_eq!(t.broadcast_to(&[2, 2]).unwrap().to_vec::<i32>().unwrap(), vec![7, 8, 7, 8]);
    /// ```
    pub fn broadcast_to(&self, shape: &[i64]) -> Result<HostTensor> {
        Ok(self.view(self.layout.broadcast_to(shape)?))
    }

    /// The elements in logical row-major order as a new contiguous buffer.
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let t = HostTensor::from_slice(&[0u32, 1, 2, 3], &[2, 2]).unwrap().transpose(0, 1).unwrap();
    /// assert_eq!(t.to_buffer().unwrap().to_u32(), Some(vec![0, 2, 1, 3]));
    /// ```
    pub fn to_buffer(&self) -> Result<HostBuffer> {
        let bytes = gather_bytes(&self.layout, self.buffer().as_bytes())?;
        Ok(HostBuffer::from_bytes(self.dtype(), bytes).expect("whole elements of a memory type"))
    }

    /// The elements in logical row-major order, checked that `T` is the tensor's dtype.
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let t = HostTensor::from_slice(&[1.5f32], &[1]).unwrap();
    /// assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.5]);
    /// assert!(t.to_vec::<i32>().is_err());
    /// ```
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(TensorError::DtypeMismatch { layout: self.dtype(), other: T::DTYPE });
        }
        Ok(T::from_buffer(&self.to_buffer()?).expect("dtype checked"))
    }

    /// A contiguous copy (row-major at offset 0, its own buffer).
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// let t = HostTensor::from_slice(&[0i32, 1, 2, 3], &[2, 2]).unwrap().transpose(0, 1).unwrap();
    /// let c = t.contiguous().unwrap();
    /// assert!(c.layout().is_contiguous());
    /// assert_eq!(c.buffer().to_i32(), Some(vec![0, 2, 1, 3]));
    /// ```
    pub fn contiguous(&self) -> Result<HostTensor> {
        let layout = TensorLayout::contiguous(self.dtype(), self.shape().to_vec())?;
        HostTensor::new(self.to_buffer()?, layout)
    }
}

/// Checks that `len` data elements fill the layout's shape exactly.
///
/// ```
/// use tilekit_ir::{tensor::{check_len, TensorLayout}, ScalarType};
/// let l = TensorLayout::contiguous(ScalarType::F32, vec![2, 2]).unwrap();
/// assert!(check_len(&l, 4).is_ok());
/// assert!(check_len(&l, 3).is_err());
/// ```
pub fn check_len(layout: &TensorLayout, len: usize) -> Result<()> {
    if layout.numel() as u64 != len as u64 {
        return Err(TensorError::LengthMismatch {
            shape: layout.shape().to_vec(),
            numel: layout.numel(),
            len,
        });
    }
    Ok(())
}
