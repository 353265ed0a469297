//! Buffer views and tensor views: memory with the reference's validity rules (SEMANTICS §6).
//!
//! A [`BufferView`] is a host slice with an **address space** and an **element space size**. A
//! [`TensorView`] puts a [`TensorDescriptor`] on top of one. Every access moves a whole
//! *vector* of `n` consecutive elements starting at the coordinate's offset, and its validity is
//! decided **per vector, by the first element only**:
//!
//! ```text
//!   get_vectorized_elements(coord, n)
//!     valid  = desc.is_valid_assuming_top_valid(coord)      ← only pads can say no
//!     offset = coord.offset()
//!        │
//!        ▼
//!   buffer.get(offset, valid, n)
//!     valid = false            → n copies of the invalid value (0, or the custom one)
//!     Global (hardware range)  → element j reads 0 if offset + j is outside 0..buffer_size
//!     Shared / Generic         → plain access (no range check); on the host an access outside
//!                                the slice is a typed error instead of undefined behaviour
//!
//!   set / update (Set, Add, Max): the same rules; invalid writes are dropped.
//! ```
//!
//! Notes on the model:
//!
//! * The top index itself is **not** checked (the reference's `..._assuming_top_index_is_valid`):
//!   an index past the end of an unpadded view is caught only by the global range check. Pad
//!   the view ([`pad_tensor_view`]) to get the reference's per-vector masking at tile edges.
//! * A vector whose first element is valid is moved whole, even if its tail lies in the pad:
//!   that is the reference (validity is per vector).
//! * On global memory, an element outside the buffer reads **0** even with a custom invalid
//!   value: the hardware returns 0 and the select only replaces invalid *vectors*. AMD buffer
//!   instructions range-check each dword; the host model checks each element.
//!
//! The validity and range predicates are generic over the index domain
//! ([`BufferView::in_hardware_range`], [`TensorDescriptor::is_valid_assuming_top_valid`]), so
//! code generation uses the same formulas; the host data movement runs on `i64`.
//!
//! Views made by tilekit for element type `T` with a contiguous last dim guarantee a vector
//! length of `16 / size_of::<T>()` on it ([`make_naive_tensor_view`], DESIGN.md): 4 for
//! `f32`, 8 for 2-byte types. [`make_naive_tensor_view_with_guarantee`] states it explicitly.

use std::fmt::Debug;
use std::ops::Add;

use tilekit_layout::{Coordinate, Idx, IdxBool, TensorDescriptor, Transform};

use crate::error::{Result, TileError};

/// What a view element must support: copy, a zero (`Default`), and what `update` needs
/// (`+` for [`MemoryOp::Add`], ordering for [`MemoryOp::Max`]). Implemented for every such type.
///
/// ```
/// fn zero<T: tilekit_tile::view::Element>() -> T { T::default() }
/// assert_eq!(zero::<f32>(), 0.0);
/// ```
pub trait Element: Copy + Default + Debug + PartialOrd + Add<Output = Self> {}
impl<T: Copy + Default + Debug + PartialOrd + Add<Output = T>> Element for T {}

/// The address space of a buffer (`address_space_enum`).
///
/// ```
/// use tilekit_tile::view::AddressSpace;
/// assert!(AddressSpace::Global.has_hardware_range_check());
/// assert!(!AddressSpace::Shared.has_hardware_range_check());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AddressSpace {
    /// Global memory: accesses are range-checked against the buffer size (buffer instructions).
    #[default]
    Global,
    /// Shared memory (LDS): plain accesses.
    Shared,
    /// A generic pointer: plain accesses.
    Generic,
}

impl AddressSpace {
    /// Whether offsets outside the buffer are masked by the hardware (global only).
    ///
    /// ```
    /// use tilekit_tile::view::AddressSpace;
    /// assert!(!AddressSpace::Generic.has_hardware_range_check());
    /// ```
    pub fn has_hardware_range_check(self) -> bool {
        self == AddressSpace::Global
    }
}

/// How an update combines the stored value with the new one (`DstInMemOp`).
///
/// ```
/// use tilekit_tile::view::MemoryOp;
/// assert_eq!(MemoryOp::Add.apply(2, 3), 5);
/// assert_eq!(MemoryOp::Max.apply(2, 3), 3);
/// assert_eq!(MemoryOp::Set.apply(2, 3), 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MemoryOp {
    /// Overwrite.
    #[default]
    Set,
    /// Add (atomic add on the GPU).
    Add,
    /// Maximum (atomic max on the GPU).
    Max,
}

impl MemoryOp {
    /// The new stored value from the old one and the written one.
    ///
    /// ```
    /// use tilekit_tile::view::MemoryOp;
    /// assert_eq!(MemoryOp::Max.apply(4.0, 1.0), 4.0);
    /// ```
    pub fn apply<T: Element>(self, old: T, new: T) -> T {
        match self {
            MemoryOp::Set => new,
            MemoryOp::Add => old + new,
            MemoryOp::Max => {
                if new > old {
                    new
                } else {
                    old
                }
            }
        }
    }
}

/// Host storage a buffer view can read: a slice, a mutable slice or a vector.
///
/// ```
/// use tilekit_tile::view::Buffer;
/// let v = vec![1, 2, 3];
/// assert_eq!(v.as_slice(), Buffer::as_slice(&v.as_slice()));
/// ```
pub trait Buffer {
    /// The element type.
    type Elem: Element;
    /// The elements.
    fn as_slice(&self) -> &[Self::Elem];
}

/// Host storage a buffer view can also write.
///
/// ```
/// use tilekit_tile::view::BufferMut;
/// let mut v = vec![1, 2, 3];
/// BufferMut::as_mut_slice(&mut v)[0] = 9;
/// assert_eq!(v[0], 9);
/// ```
pub trait BufferMut: Buffer {
    /// The elements, mutable.
    fn as_mut_slice(&mut self) -> &mut [Self::Elem];
}

impl<T: Element> Buffer for &[T] {
    type Elem = T;
    fn as_slice(&self) -> &[T] {
        self
    }
}
impl<T: Element> Buffer for &mut [T] {
    type Elem = T;
    fn as_slice(&self) -> &[T] {
        self
    }
}
impl<T: Element> BufferMut for &mut [T] {
    fn as_mut_slice(&mut self) -> &mut [T] {
        self
    }
}
impl<T: Element> Buffer for Vec<T> {
    type Elem = T;
    fn as_slice(&self) -> &[T] {
        self
    }
}
impl<T: Element> BufferMut for Vec<T> {
    fn as_mut_slice(&mut self) -> &mut [T] {
        self
    }
}

/// A buffer view (`buffer_view<AddressSpace, T>`): host storage, an address space, the element
/// space size (the hardware range of global buffers) and the value invalid reads return.
///
/// ```
/// use tilekit_tile::view::{AddressSpace, BufferView};
/// let data = [1.0f32, 2.0, 3.0, 4.0];
/// let b = BufferView::new(&data[..], AddressSpace::Global, 4).unwrap();
/// assert_eq!(b.get(2, true, 4).unwrap(), vec![3.0, 4.0, 0.0, 0.0]); // elements 4, 5 are out of range
/// assert_eq!(b.get(0, false, 2).unwrap(), vec![0.0, 0.0]);          // invalid vector
/// ```
#[derive(Debug, Clone)]
pub struct BufferView<B: Buffer> {
    data: B,
    space: AddressSpace,
    size: i64,
    invalid_value: B::Elem,
}

impl<B: Buffer> BufferView<B> {
    /// A buffer view over `data` holding `element_space_size` elements; invalid reads return
    /// zero (`T::default()`). The storage must hold at least that many elements.
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView};
    /// let data = vec![0u32; 8];
    /// assert!(BufferView::new(&data[..], AddressSpace::Shared, 8).is_ok());
    /// assert_eq!(
    ///     BufferView::new(&data[..], AddressSpace::Shared, 9).unwrap_err().to_string(),
    ///     "buffer view: element_space_size = 9 is invalid: must be in 0..=8 (the storage holds 8 elements)"
    /// );
    /// ```
    pub fn new(data: B, space: AddressSpace, element_space_size: i64) -> Result<Self> {
        let len = data.as_slice().len();
        if element_space_size < 0 || element_space_size as u64 > len as u64 {
            return Err(TileError::invalid(
                "buffer view",
                "element_space_size",
                element_space_size,
                format!("must be in 0..={len} (the storage holds {len} elements)"),
            ));
        }
        Ok(BufferView { data, space, size: element_space_size, invalid_value: B::Elem::default() })
    }

    /// The same view, with invalid reads returning `v` (broadcast to every lane of the vector)
    /// instead of zero.
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView};
    /// let data = [1i32, 2];
    /// let b = BufferView::new(&data[..], AddressSpace::Generic, 2).unwrap().with_invalid_value(-7);
    /// assert_eq!(b.get(0, false, 3).unwrap(), vec![-7, -7, -7]);
    /// ```
    pub fn with_invalid_value(mut self, v: B::Elem) -> Self {
        self.invalid_value = v;
        self
    }

    /// The address space.
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView};
    /// let data = [1i32];
    /// assert_eq!(BufferView::new(&data[..], AddressSpace::Shared, 1).unwrap().address_space(), AddressSpace::Shared);
    /// ```
    pub fn address_space(&self) -> AddressSpace {
        self.space
    }

    /// The element space size.
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView};
    /// let data = [1i32; 5];
    /// assert_eq!(BufferView::new(&data[..], AddressSpace::Global, 4).unwrap().element_space_size(), 4);
    /// ```
    pub fn element_space_size(&self) -> i64 {
        self.size
    }

    /// The value invalid reads return.
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView};
    /// let data = [1i32];
    /// assert_eq!(BufferView::new(&data[..], AddressSpace::Global, 1).unwrap().invalid_value(), 0);
    /// ```
    pub fn invalid_value(&self) -> B::Elem {
        self.invalid_value
    }

    /// The storage.
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView};
    /// let data = [1i32, 2];
    /// assert_eq!(BufferView::new(&data[..], AddressSpace::Global, 2).unwrap().data(), &[1, 2]);
    /// ```
    pub fn data(&self) -> &[B::Elem] {
        self.data.as_slice()
    }

    /// Gives the storage back.
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView};
    /// let b = BufferView::new(vec![1i32, 2], AddressSpace::Global, 2).unwrap();
    /// assert_eq!(b.into_inner(), vec![1, 2]);
    /// ```
    pub fn into_inner(self) -> B {
        self.data
    }

    /// Whether element offset `offset` passes the hardware range check: `0 <= offset <
    /// element_space_size` on global memory, always true elsewhere. Generic over the index
    /// domain (the formula code generation uses).
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView};
    /// let data = [0f32; 8];
    /// let g = BufferView::new(&data[..], AddressSpace::Global, 8).unwrap();
    /// assert_eq!((g.in_hardware_range(&7i64), g.in_hardware_range(&8i64)), (true, false));
    /// let s = BufferView::new(&data[..], AddressSpace::Shared, 8).unwrap();
    /// assert!(s.in_hardware_range(&8i64));
    /// ```
    pub fn in_hardware_range<I: Idx>(&self, offset: &I) -> I::Bool {
        if self.space.has_hardware_range_check() {
            offset.ge(&I::lit(0)).and(&offset.lt(&I::lit(self.size)))
        } else {
            I::Bool::lit(true)
        }
    }

    /// The slice positions of a valid vector access on a space without range check; a typed
    /// error if any lies outside the storage.
    fn plain_positions(&self, offset: i64, n: usize) -> Result<std::ops::Range<usize>> {
        let len = self.data.as_slice().len();
        let end = offset.checked_add(n as i64);
        match end {
            Some(end) if offset >= 0 && end as u64 <= len as u64 => {
                Ok(offset as usize..end as usize)
            }
            _ => Err(TileError::invalid(
                format!("{:?} buffer view", self.space),
                "vector access at offset",
                offset,
                format!(
                    "a valid access of {n} elements must lie inside the storage (0..{len}): \
                     {:?} memory has no range check, so this would be out of bounds",
                    self.space
                ),
            )),
        }
    }

    /// Reads `n` elements starting at `offset`; `valid` is the vector's validity (from its first
    /// element). Invalid vectors read the invalid value; on global memory elements outside the
    /// buffer read 0; elsewhere an access outside the storage is an error.
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView};
    /// let data = [1i32, 2, 3];
    /// let s = BufferView::new(&data[..], AddressSpace::Shared, 3).unwrap();
    /// assert_eq!(s.get(1, true, 2).unwrap(), vec![2, 3]);
    /// assert!(s.get(2, true, 2).is_err());              // no range check: out of bounds
    /// assert_eq!(s.get(2, false, 2).unwrap(), vec![0, 0]); // invalid: never touches memory
    /// ```
    pub fn get(&self, offset: i64, valid: bool, n: usize) -> Result<Vec<B::Elem>> {
        if !valid {
            return Ok(vec![self.invalid_value; n]);
        }
        let data = self.data.as_slice();
        if self.space.has_hardware_range_check() {
            Ok((0..n as i64)
                .map(|j| {
                    let o = offset.saturating_add(j);
                    if self.in_hardware_range(&o) {
                        data[o as usize]
                    } else {
                        B::Elem::default()
                    }
                })
                .collect())
        } else {
            Ok(data[self.plain_positions(offset, n)?].to_vec())
        }
    }
}

impl<B: BufferMut> BufferView<B> {
    /// Writes `values` starting at `offset` with `op`; dropped when `valid` is false; on global
    /// memory elements outside the buffer are dropped; elsewhere an access outside the storage
    /// is an error (and nothing is written).
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView, MemoryOp};
    /// let mut data = [1i32, 2, 3];
    /// let mut b = BufferView::new(&mut data[..], AddressSpace::Global, 3).unwrap();
    /// b.update(1, true, &[10, 20, 30], MemoryOp::Add).unwrap(); // element 3 is out of range
    /// b.update(0, false, &[99], MemoryOp::Set).unwrap();        // invalid: dropped
    /// assert_eq!(data, [1, 12, 23]);
    /// ```
    pub fn update(
        &mut self,
        offset: i64,
        valid: bool,
        values: &[B::Elem],
        op: MemoryOp,
    ) -> Result<()> {
        if !valid {
            return Ok(());
        }
        if self.space.has_hardware_range_check() {
            for (j, &v) in values.iter().enumerate() {
                let o = offset.saturating_add(j as i64);
                if self.in_hardware_range(&o) {
                    let slot = &mut self.data.as_mut_slice()[o as usize];
                    *slot = op.apply(*slot, v);
                }
            }
        } else {
            let range = self.plain_positions(offset, values.len())?;
            for (slot, &v) in self.data.as_mut_slice()[range].iter_mut().zip(values) {
                *slot = op.apply(*slot, v);
            }
        }
        Ok(())
    }

    /// [`update`](Self::update) with [`MemoryOp::Set`].
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView};
    /// let mut data = vec![0i32; 4];
    /// let mut b = BufferView::new(&mut data[..], AddressSpace::Generic, 4).unwrap();
    /// b.set(2, true, &[5, 6]).unwrap();
    /// assert!(b.set(3, true, &[7, 8]).is_err());
    /// assert_eq!(data, [0, 0, 5, 6]);
    /// ```
    pub fn set(&mut self, offset: i64, valid: bool, values: &[B::Elem]) -> Result<()> {
        self.update(offset, valid, values, MemoryOp::Set)
    }
}

/// A tensor view (`tensor_view`): a buffer view seen through a tensor descriptor.
///
/// ```
/// use tilekit_tile::view::make_naive_tensor_view;
/// use tilekit_layout::Coordinate;
/// let data: Vec<f32> = (0..24).map(|v| v as f32).collect();
/// let v = make_naive_tensor_view(&data[..], &[4, 6], &[6, 1]).unwrap();
/// let c = Coordinate::new_descriptor(v.descriptor(), &[2, 1]).unwrap();
/// assert_eq!(v.get_vectorized_elements(&c, 4).unwrap(), vec![13.0, 14.0, 15.0, 16.0]);
/// ```
#[derive(Debug, Clone)]
pub struct TensorView<B: Buffer> {
    buffer: BufferView<B>,
    desc: TensorDescriptor<i64>,
}

impl<B: Buffer> TensorView<B> {
    /// A tensor view of a buffer view through a descriptor.
    ///
    /// ```
    /// use tilekit_tile::view::{AddressSpace, BufferView, TensorView};
    /// use tilekit_layout::TensorDescriptor;
    /// let data = [0f32; 6];
    /// let b = BufferView::new(&data[..], AddressSpace::Shared, 6).unwrap();
    /// let v = TensorView::new(b, TensorDescriptor::packed(vec![2, 3], None).unwrap());
    /// assert_eq!(v.lengths(), vec![2, 3]);
    /// ```
    pub fn new(buffer: BufferView<B>, desc: TensorDescriptor<i64>) -> Self {
        TensorView { buffer, desc }
    }

    /// The descriptor.
    ///
    /// ```
    /// # use tilekit_tile::view::make_naive_tensor_view;
    /// let data = [0f32; 6];
    /// let v = make_naive_tensor_view(&data[..], &[2, 3], &[3, 1]).unwrap();
    /// assert_eq!(v.descriptor().element_space_size(), 6);
    /// ```
    pub fn descriptor(&self) -> &TensorDescriptor<i64> {
        &self.desc
    }

    /// The buffer view.
    ///
    /// ```
    /// # use tilekit_tile::view::make_naive_tensor_view;
    /// let data = [0f32; 6];
    /// let v = make_naive_tensor_view(&data[..], &[2, 3], &[3, 1]).unwrap();
    /// assert_eq!(v.buffer().element_space_size(), 6);
    /// ```
    pub fn buffer(&self) -> &BufferView<B> {
        &self.buffer
    }

    /// Gives the buffer view back.
    ///
    /// ```
    /// # use tilekit_tile::view::make_naive_tensor_view;
    /// let v = make_naive_tensor_view(vec![1f32; 6], &[2, 3], &[3, 1]).unwrap();
    /// assert_eq!(v.into_buffer().into_inner().len(), 6);
    /// ```
    pub fn into_buffer(self) -> BufferView<B> {
        self.buffer
    }

    /// The same view in another address space (changes only the range-check rule).
    ///
    /// ```
    /// use tilekit_tile::view::{make_naive_tensor_view, AddressSpace};
    /// let data = [0f32; 6];
    /// let v = make_naive_tensor_view(&data[..], &[2, 3], &[3, 1]).unwrap().with_address_space(AddressSpace::Shared);
    /// assert_eq!(v.buffer().address_space(), AddressSpace::Shared);
    /// ```
    pub fn with_address_space(mut self, space: AddressSpace) -> Self {
        self.buffer.space = space;
        self
    }

    /// The same view with invalid reads returning `v`.
    ///
    /// ```
    /// use tilekit_tile::view::{make_naive_tensor_view, pad_tensor_view};
    /// use tilekit_layout::Coordinate;
    /// let data = [1f32; 6];
    /// let v = make_naive_tensor_view(&data[..], &[2, 3], &[3, 1]).unwrap().with_invalid_value(-1.0);
    /// let v = pad_tensor_view(v, &[2, 4], &[true, true]).unwrap();
    /// let c = Coordinate::new_descriptor(v.descriptor(), &[0, 3]).unwrap();
    /// assert_eq!(v.get_vectorized_elements(&c, 1).unwrap(), vec![-1.0]);
    /// ```
    pub fn with_invalid_value(mut self, v: B::Elem) -> Self {
        self.buffer.invalid_value = v;
        self
    }

    /// Top lengths.
    ///
    /// ```
    /// # use tilekit_tile::view::make_naive_tensor_view;
    /// let data = [0f32; 6];
    /// assert_eq!(make_naive_tensor_view(&data[..], &[2, 3], &[3, 1]).unwrap().lengths(), vec![2, 3]);
    /// ```
    pub fn lengths(&self) -> Vec<i64> {
        self.desc.lengths()
    }

    /// Number of top dims.
    ///
    /// ```
    /// # use tilekit_tile::view::make_naive_tensor_view;
    /// let data = [0f32; 6];
    /// assert_eq!(make_naive_tensor_view(&data[..], &[2, 3], &[3, 1]).unwrap().ndim(), 2);
    /// ```
    pub fn ndim(&self) -> usize {
        self.desc.ndim()
    }

    /// A fresh coordinate at a top index (rank-checked; the index itself is not range-checked,
    /// as in the reference).
    ///
    /// ```
    /// # use tilekit_tile::view::make_naive_tensor_view;
    /// let data = [0f32; 6];
    /// let v = make_naive_tensor_view(&data[..], &[2, 3], &[3, 1]).unwrap();
    /// assert_eq!(v.coordinate(&[1, 2]).unwrap().offset(), 5);
    /// assert!(v.coordinate(&[1]).is_err());
    /// ```
    pub fn coordinate(&self, top: &[i64]) -> Result<Coordinate<i64>> {
        if top.len() != self.ndim() {
            return Err(TileError::invalid(
                "tensor view",
                "index rank",
                top.len(),
                format!("the view has {} dims", self.ndim()),
            ));
        }
        Ok(Coordinate::new_descriptor_unchecked(&self.desc, top))
    }

    fn check_coord(&self, coord: &Coordinate<i64>) -> Result<()> {
        let n = self.desc.adaptor().ndim_hidden();
        if coord.hidden().len() != n {
            return Err(TileError::invalid(
                "tensor view",
                "coordinate hidden rank",
                coord.hidden().len(),
                format!("a coordinate of this view's descriptor has {n} hidden dims"),
            ));
        }
        Ok(())
    }

    /// Reads a vector of `n` elements at a coordinate: valid iff the descriptor says so for
    /// the first element (`is_valid_assuming_top_valid`), then the buffer rules.
    ///
    /// ```
    /// use tilekit_tile::view::{make_naive_tensor_view, pad_tensor_view};
    /// let data: Vec<i32> = (1..=15).collect();           // 3×5
    /// let v = pad_tensor_view(make_naive_tensor_view(&data[..], &[3, 5], &[5, 1]).unwrap(), &[4, 8], &[true, true]).unwrap();
    /// let at = |i, j| v.coordinate(&[i, j]).unwrap();
    /// assert_eq!(v.get_vectorized_elements(&at(0, 4), 2).unwrap(), vec![5, 6]); // valid first element: whole vector
    /// assert_eq!(v.get_vectorized_elements(&at(0, 5), 2).unwrap(), vec![0, 0]); // in the pad
    /// assert_eq!(v.get_vectorized_elements(&at(2, 4), 2).unwrap(), vec![15, 0]); // past the buffer
    /// ```
    pub fn get_vectorized_elements(
        &self,
        coord: &Coordinate<i64>,
        n: usize,
    ) -> Result<Vec<B::Elem>> {
        self.check_coord(coord)?;
        let valid = self.desc.is_valid_assuming_top_valid(coord)?;
        self.buffer.get(coord.offset(), valid, n)
    }
}

impl<B: BufferMut> TensorView<B> {
    /// Writes a vector at a coordinate (dropped when the first element is invalid).
    ///
    /// ```
    /// use tilekit_tile::view::{make_naive_tensor_view, pad_tensor_view};
    /// let mut data = vec![0i32; 6];
    /// let mut v = pad_tensor_view(make_naive_tensor_view(&mut data[..], &[2, 3], &[3, 1]).unwrap(), &[2, 4], &[true, true]).unwrap();
    /// let c = v.coordinate(&[0, 2]).unwrap();
    /// v.set_vectorized_elements(&c, &[7, 8]).unwrap();   // spills into the next row: per-vector validity
    /// let c = v.coordinate(&[1, 3]).unwrap();
    /// v.set_vectorized_elements(&c, &[9]).unwrap();      // in the pad: dropped
    /// assert_eq!(data, [0, 0, 7, 8, 0, 0]);
    /// ```
    pub fn set_vectorized_elements(
        &mut self,
        coord: &Coordinate<i64>,
        values: &[B::Elem],
    ) -> Result<()> {
        self.update_vectorized_elements(coord, values, MemoryOp::Set)
    }

    /// Updates a vector at a coordinate with `op` (set / add / max).
    ///
    /// ```
    /// use tilekit_tile::view::{make_naive_tensor_view, MemoryOp};
    /// let mut data = vec![1i32, 5, 1, 5];
    /// let mut v = make_naive_tensor_view(&mut data[..], &[4], &[1]).unwrap();
    /// let c = v.coordinate(&[0]).unwrap();
    /// v.update_vectorized_elements(&c, &[3, 3, 3, 3], MemoryOp::Max).unwrap();
    /// assert_eq!(data, [3, 5, 3, 5]);
    /// ```
    pub fn update_vectorized_elements(
        &mut self,
        coord: &Coordinate<i64>,
        values: &[B::Elem],
        op: MemoryOp,
    ) -> Result<()> {
        self.check_coord(coord)?;
        let valid = self.desc.is_valid_assuming_top_valid(coord)?;
        self.buffer.update(coord.offset(), valid, values, op)
    }
}

/// The default guaranteed vector length of views of `T`: `16 / size_of::<T>()` (at least 1).
///
/// ```
/// use tilekit_tile::view::default_vector_length;
/// assert_eq!(default_vector_length::<f32>(), 4);
/// assert_eq!(default_vector_length::<u16>(), 8);
/// assert_eq!(default_vector_length::<[f64; 4]>(), 1);
/// ```
pub fn default_vector_length<T>() -> i64 {
    (16 / std::mem::size_of::<T>().max(1)).max(1) as i64
}

/// `make_naive_tensor_view<global>(data, lengths, strides)` with tilekit's default guarantee:
/// when the last stride is 1, the last dim guarantees vectors of
/// [`default_vector_length::<T>()`](default_vector_length) with stride 1 (DESIGN.md);
/// otherwise nothing is guaranteed. The buffer's element space is the descriptor's.
///
/// ```
/// use tilekit_tile::view::make_naive_tensor_view;
/// let data = [0f32; 32];
/// let v = make_naive_tensor_view(&data[..], &[4, 8], &[8, 1]).unwrap();
/// assert_eq!(v.descriptor().top_safe_vector_lengths_strides(), (vec![-1, 4], vec![-1, 1]));
/// let col = make_naive_tensor_view(&data[..], &[8, 4], &[1, 8]).unwrap();
/// assert_eq!(col.descriptor().top_safe_vector_lengths_strides(), (vec![-1, -1], vec![-1, -1]));
/// assert!(make_naive_tensor_view(&data[..], &[4, 9], &[9, 1]).is_err()); // needs 36 elements
/// ```
pub fn make_naive_tensor_view<B: Buffer>(
    data: B,
    lengths: &[i64],
    strides: &[i64],
) -> Result<TensorView<B>> {
    let guarantee =
        (strides.last() == Some(&1)).then(|| (default_vector_length::<B::Elem>(), 1i64));
    make_naive_tensor_view_with_guarantee(data, lengths, strides, guarantee)
}

/// `make_naive_tensor_view<global>(data, lengths, strides, number<V>, number<S>)`: the last dim
/// guarantees vectors of length `V` with stride `S` when `guarantee` is `Some((V, S))`, nothing
/// when `None` (the reference's default `-1, -1`).
///
/// ```
/// use tilekit_tile::view::make_naive_tensor_view_with_guarantee;
/// let data = [0f32; 32];
/// let v = make_naive_tensor_view_with_guarantee(&data[..], &[4, 8], &[8, 1], Some((2, 1))).unwrap();
/// assert_eq!(v.descriptor().top_safe_vector_lengths_strides(), (vec![-1, 2], vec![-1, 1]));
/// let v = make_naive_tensor_view_with_guarantee(&data[..], &[4, 8], &[8, 1], None).unwrap();
/// assert_eq!(v.descriptor().top_safe_vector_lengths_strides(), (vec![-1, -1], vec![-1, -1]));
/// ```
pub fn make_naive_tensor_view_with_guarantee<B: Buffer>(
    data: B,
    lengths: &[i64],
    strides: &[i64],
    guarantee: Option<(i64, i64)>,
) -> Result<TensorView<B>> {
    let desc = TensorDescriptor::naive(lengths.to_vec(), strides.to_vec(), guarantee)?;
    let buffer = BufferView::new(data, AddressSpace::Global, desc.element_space_size())?;
    Ok(TensorView::new(buffer, desc))
}

/// `pad_tensor_view(view, tile_lengths, DoPads)`: each dim with `do_pads[i]` gets a
/// `right_pad` to `ceil(len / tile) · tile`; the others pass through. Elements in the pad are
/// invalid (read zero / the invalid value, writes dropped) — per vector, by its first element.
///
/// ```
/// use tilekit_tile::view::{make_naive_tensor_view, pad_tensor_view};
/// let data = [0f32; 35];
/// let v = pad_tensor_view(make_naive_tensor_view(&data[..], &[5, 7], &[7, 1]).unwrap(), &[4, 4], &[true, true]).unwrap();
/// assert_eq!(v.lengths(), vec![8, 8]);
/// let v = pad_tensor_view(make_naive_tensor_view(&data[..], &[5, 7], &[7, 1]).unwrap(), &[4, 4], &[false, true]).unwrap();
/// assert_eq!(v.lengths(), vec![5, 8]);
/// let e = pad_tensor_view(make_naive_tensor_view(&data[..], &[5, 7], &[7, 1]).unwrap(), &[0, 4], &[true, true]).unwrap_err();
/// assert_eq!(e.to_string(), "pad_tensor_view: tile_lengths[0] = 0 is invalid: tile lengths must be >= 1");
/// ```
pub fn pad_tensor_view<B: Buffer>(
    view: TensorView<B>,
    tile_lengths: &[i64],
    do_pads: &[bool],
) -> Result<TensorView<B>> {
    let ctx = "pad_tensor_view";
    let n = view.ndim();
    if tile_lengths.len() != n || do_pads.len() != n {
        return Err(TileError::invalid(
            ctx,
            "tile_lengths/do_pads rank",
            (tile_lengths.len(), do_pads.len()),
            format!("one tile length and one flag per view dim ({n})"),
        ));
    }
    let lengths = view.lengths();
    let mut transforms = Vec::with_capacity(n);
    for (i, ((&len, &tile), &pad)) in lengths.iter().zip(tile_lengths).zip(do_pads).enumerate() {
        if tile < 1 {
            return Err(TileError::invalid(
                ctx,
                format!("tile_lengths[{i}]"),
                tile,
                "tile lengths must be >= 1",
            ));
        }
        transforms.push(if pad {
            // up to the next multiple of the tile (right_pad refuses a length past i64)
            let right = (tile - len % tile) % tile;
            Transform::right_pad(len, right, false)?
        } else {
            Transform::pass_through(len)?
        });
    }
    let ids: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    let desc = view.desc.transform(transforms, ids.clone(), ids)?;
    Ok(TensorView { buffer: view.buffer, desc })
}
