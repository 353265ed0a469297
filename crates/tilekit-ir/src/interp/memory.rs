//! Host buffers, and per-block shared memory with race detection (global memory during a run:
//! [`crate::interp::global`]).
//!
//! ```text
//!   shared:  bytes + per element { initialised, last write (epoch, thread, inst),
//!                                  last reads of this epoch (two distinct threads) }
//!            epoch += 1 at every barrier; same epoch + another thread + a write = SharedRace
//!            epochs keep counting across the blocks a worker runs, so a record from an earlier
//!            block is simply old: the memory is allocated once per worker, never cleared
//! ```

use half::{bf16, f16};

use crate::interp::error::InterpError;
use crate::types::{canonical, ScalarType};

/// A typed host buffer (little-endian elements), the interpreter's global memory.
///
/// ```
/// use tilekit_ir::interp::HostBuffer;
/// let b = HostBuffer::from_f32(&[1.0, -2.5]);
/// assert_eq!(b.len(), 2);
/// assert_eq!(b.to_f32(), Some(vec![1.0, -2.5]));
/// assert_eq!(b.to_i32(), None); // wrong type
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HostBuffer {
    elem: ScalarType,
    bytes: Vec<u8>,
}

macro_rules! host_conv {
    ($from:ident, $to:ident, $t:ty, $st:expr, $bits:expr, $val:expr) => {
        /// A buffer from a slice.
        ///
        /// ```
        /// # use tilekit_ir::interp::HostBuffer;
        #[doc = concat!("let b = HostBuffer::", stringify!($from), "(&[]);")]
        /// assert!(b.is_empty());
        /// ```
        pub fn $from(v: &[$t]) -> HostBuffer {
            let mut h = HostBuffer::zeroed($st, v.len());
            for (i, x) in v.iter().enumerate() {
                #[allow(clippy::redundant_closure_call)]
                h.set_bits(i, ($bits)(*x));
            }
            h
        }

        /// The elements, if the buffer has this type.
        ///
        /// ```
        /// # use tilekit_ir::interp::HostBuffer;
        #[doc = concat!("assert_eq!(HostBuffer::", stringify!($from), "(&[]).", stringify!($to), "(), Some(vec![]));")]
        /// ```
        pub fn $to(&self) -> Option<Vec<$t>> {
            (self.elem == $st).then(|| {
                #[allow(clippy::redundant_closure_call)]
                (0..self.len()).map(|i| ($val)(self.bits(i))).collect()
            })
        }
    };
}

impl HostBuffer {
    /// `len` zero elements of `elem`.
    ///
    /// ```
    /// use tilekit_ir::{interp::HostBuffer, ScalarType};
    /// assert_eq!(HostBuffer::zeroed(ScalarType::F16, 3).size_bytes(), 6);
    /// ```
    pub fn zeroed(elem: ScalarType, len: usize) -> HostBuffer {
        HostBuffer { elem, bytes: vec![0; len * elem.size_bytes()] }
    }

    /// `len` zero elements of `elem`, or a typed error when the byte size overflows or the
    /// host cannot allocate it (instead of [`HostBuffer::zeroed`]'s abort).
    ///
    /// ```
    /// use tilekit_ir::{interp::{HostBuffer, InterpError}, ScalarType};
    /// assert_eq!(HostBuffer::try_zeroed(ScalarType::F32, 3).unwrap().size_bytes(), 12);
    /// let e = HostBuffer::try_zeroed(ScalarType::F64, usize::MAX / 4).unwrap_err();
    /// assert!(matches!(e, InterpError::HostAlloc { .. }));
    /// assert!(e.to_string().contains("overflows"), "{e}");
    /// ```
    pub fn try_zeroed(elem: ScalarType, len: usize) -> Result<HostBuffer, InterpError> {
        let err = |reason: &str| InterpError::HostAlloc { elem, len, reason: reason.into() };
        let n = len
            .checked_mul(elem.size_bytes())
            .filter(|&n| n <= isize::MAX as usize)
            .ok_or_else(|| err("the byte size overflows the address space"))?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(n).map_err(|e| err(&format!("allocation failed ({e})")))?;
        bytes.resize(n, 0);
        Ok(HostBuffer { elem, bytes })
    }

    /// `len` copies of `fill`, with [`HostBuffer::try_zeroed`]'s checks.
    ///
    /// ```
    /// use tilekit_ir::{interp::HostBuffer, Lit};
    /// assert_eq!(HostBuffer::try_filled(Lit::f32(2.0), 2).unwrap().to_f32(), Some(vec![2.0, 2.0]));
    /// ```
    pub fn try_filled(fill: crate::types::Lit, len: usize) -> Result<HostBuffer, InterpError> {
        let mut h = HostBuffer::try_zeroed(fill.ty(), len)?;
        let s = fill.ty().size_bytes();
        let pattern = &fill.bits().to_le_bytes()[..s];
        if pattern.iter().any(|&b| b != 0) {
            for chunk in h.bytes.chunks_exact_mut(s) {
                chunk.copy_from_slice(pattern);
            }
        }
        Ok(h)
    }

    /// `len` copies of the constant `fill` (to poison outputs before a run: NaN, sentinels).
    ///
    /// ```
    /// use tilekit_ir::{interp::HostBuffer, Lit};
    /// let b = HostBuffer::filled(Lit::f32(f32::NAN), 2);
    /// assert!(b.to_f32().unwrap().iter().all(|x| x.is_nan()));
    /// ```
    pub fn filled(fill: crate::types::Lit, len: usize) -> HostBuffer {
        let mut h = HostBuffer::zeroed(fill.ty(), len);
        let s = fill.ty().size_bytes();
        let pattern = &fill.bits().to_le_bytes()[..s];
        for chunk in h.bytes.chunks_exact_mut(s) {
            chunk.copy_from_slice(pattern);
        }
        h
    }

    host_conv!(from_f32, to_f32, f32, ScalarType::F32, |x: f32| x.to_bits() as u64, |b: u64| {
        f32::from_bits(b as u32)
    });
    host_conv!(from_f64, to_f64, f64, ScalarType::F64, |x: f64| x.to_bits(), f64::from_bits);
    host_conv!(from_i32, to_i32, i32, ScalarType::I32, |x: i32| x as i64 as u64, |b: u64| b as i32);
    host_conv!(from_u32, to_u32, u32, ScalarType::U32, |x: u32| x as u64, |b: u64| b as u32);
    host_conv!(from_i64, to_i64, i64, ScalarType::I64, |x: i64| x as u64, |b: u64| b as i64);
    host_conv!(from_f16, to_f16, f16, ScalarType::F16, |x: f16| x.to_bits() as u64, |b: u64| {
        f16::from_bits(b as u16)
    });
    host_conv!(
        from_bf16,
        to_bf16,
        bf16,
        ScalarType::BF16,
        |x: bf16| x.to_bits() as u64,
        |b: u64| bf16::from_bits(b as u16)
    );

    /// Element type.
    ///
    /// ```
    /// use tilekit_ir::{interp::HostBuffer, ScalarType};
    /// assert_eq!(HostBuffer::from_i64(&[1]).elem(), ScalarType::I64);
    /// ```
    pub fn elem(&self) -> ScalarType {
        self.elem
    }

    /// Elements.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::interp::HostBuffer::from_u32(&[1, 2, 3]).len(), 3);
    /// ```
    pub fn len(&self) -> usize {
        self.bytes.len() / self.elem.size_bytes()
    }

    /// No elements.
    ///
    /// ```
    /// assert!(!tilekit_ir::interp::HostBuffer::from_u32(&[1]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The raw little-endian bytes (what a GPU buffer holds).
    ///
    /// ```
    /// assert_eq!(tilekit_ir::interp::HostBuffer::from_u32(&[0x0102]).as_bytes(), &[2, 1, 0, 0]);
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// A buffer from raw little-endian bytes; `None` unless the length is a multiple of the
    /// element size (and the type is not a predicate).
    ///
    /// ```
    /// use tilekit_ir::{interp::HostBuffer, ScalarType};
    /// let b = HostBuffer::from_bytes(ScalarType::U32, vec![2, 1, 0, 0]).unwrap();
    /// assert_eq!(b.to_u32(), Some(vec![0x0102]));
    /// assert!(HostBuffer::from_bytes(ScalarType::U32, vec![1, 2, 3]).is_none());
    /// ```
    pub fn from_bytes(elem: ScalarType, bytes: Vec<u8>) -> Option<HostBuffer> {
        (elem != ScalarType::Pred && bytes.len().is_multiple_of(elem.size_bytes()))
            .then_some(HostBuffer { elem, bytes })
    }

    /// Bytes.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::interp::HostBuffer::from_u32(&[1]).size_bytes(), 4);
    /// ```
    pub fn size_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Canonical bits of element `i` (panics on an index out of range, like slice indexing;
    /// the interpreter checks bounds first).
    ///
    /// ```
    /// assert_eq!(tilekit_ir::interp::HostBuffer::from_i32(&[-1]).bits(0), u64::MAX);
    /// ```
    #[inline]
    pub fn bits(&self, i: usize) -> u64 {
        // fixed-size copies per width: a load, not a memcpy call
        let v = match self.elem.size_bytes() {
            1 => self.bytes[i] as u64,
            2 => {
                let mut b = [0u8; 2];
                b.copy_from_slice(&self.bytes[2 * i..2 * i + 2]);
                u16::from_le_bytes(b) as u64
            }
            4 => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&self.bytes[4 * i..4 * i + 4]);
                u32::from_le_bytes(b) as u64
            }
            _ => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&self.bytes[8 * i..8 * i + 8]);
                u64::from_le_bytes(b)
            }
        };
        canonical(self.elem, v)
    }

    /// Sets element `i` from canonical bits.
    ///
    /// ```
    /// let mut b = tilekit_ir::interp::HostBuffer::from_u32(&[0]);
    /// b.set_bits(0, 7);
    /// assert_eq!(b.to_u32(), Some(vec![7]));
    /// ```
    #[inline]
    pub fn set_bits(&mut self, i: usize, bits: u64) {
        match self.elem.size_bytes() {
            1 => self.bytes[i] = bits as u8,
            2 => self.bytes[2 * i..2 * i + 2].copy_from_slice(&(bits as u16).to_le_bytes()),
            4 => self.bytes[4 * i..4 * i + 4].copy_from_slice(&(bits as u32).to_le_bytes()),
            _ => self.bytes[8 * i..8 * i + 8].copy_from_slice(&bits.to_le_bytes()),
        }
    }

    /// The raw little-endian bytes, mutable (to fill a buffer in parallel chunks).
    ///
    /// ```
    /// let mut b = tilekit_ir::interp::HostBuffer::from_u32(&[0]);
    /// b.as_bytes_mut()[0] = 5;
    /// assert_eq!(b.to_u32(), Some(vec![5]));
    /// ```
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

/// The "thread" of writes by the async proxy (bulk copies landing).
pub(crate) const ASYNC_PROXY: u32 = u32::MAX;

/// One recorded shared-memory access; epoch 0 = none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) epoch: u32,
    pub(crate) thread: u32,
    pub(crate) inst: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct ElemMeta {
    init: bool,
    write: Rec,
    read: Rec,
    read2: Rec,
}

/// A detected conflict: the earlier access and whether it was a write.
pub(crate) struct Conflict {
    pub(crate) first: Rec,
    pub(crate) first_write: bool,
    pub(crate) element: usize,
}

/// One shared allocation, reused by every block a worker runs.
pub(crate) struct SharedMem {
    data: HostBuffer,
    meta: Vec<ElemMeta>,
}

impl SharedMem {
    pub(crate) fn new(elem: ScalarType, len: usize) -> Self {
        SharedMem { data: HostBuffer::zeroed(elem, len), meta: vec![ElemMeta::default(); len] }
    }

    pub(crate) fn len(&self) -> usize {
        self.meta.len()
    }

    fn data(&self) -> &HostBuffer {
        &self.data
    }

    /// Forgets every record (when the epoch counter wraps).
    pub(crate) fn reset(&mut self) {
        self.meta.fill(ElemMeta::default());
    }

    /// Reads element `i`: `(bits, initialised in this block)`, recording the read; a conflict
    /// with a write of another thread in this epoch is returned. `base` is the block's first
    /// epoch: older records belong to earlier blocks.
    #[inline]
    pub(crate) fn read(&mut self, i: usize, rec: Rec, base: u32) -> Result<(u64, bool), Conflict> {
        let m = &mut self.meta[i];
        let w = m.write;
        if w.epoch == rec.epoch && w.thread != rec.thread && w.thread != ASYNC_PROXY {
            return Err(Conflict { first: w, first_write: true, element: i });
        }
        if m.read.epoch == rec.epoch {
            if m.read.thread != rec.thread && m.read2.epoch != rec.epoch {
                m.read2 = rec;
            }
        } else {
            m.read = rec;
        }
        let init = m.init && w.epoch >= base;
        Ok((self.data().bits(i), init))
    }

    /// [`SharedMem::read`] under the independent warp schedule: a conflict is a write by
    /// another thread that `ordered` does not place before this read (happens-before by the
    /// warps' vector clocks instead of one epoch for all). Keeps the two latest reads that are
    /// not ordered before each other (a read ordered before a newer one is implied by it).
    #[inline]
    pub(crate) fn read_hb(
        &mut self,
        i: usize,
        rec: Rec,
        base: u32,
        ordered: impl Fn(Rec) -> bool,
    ) -> Result<(u64, bool), Conflict> {
        let m = &mut self.meta[i];
        let w = m.write;
        if w.thread != rec.thread && w.thread != ASYNC_PROXY && !ordered(w) {
            return Err(Conflict { first: w, first_write: true, element: i });
        }
        if m.read.thread == rec.thread || ordered(m.read) {
            m.read = rec;
        } else {
            m.read2 = rec;
        }
        let init = m.init && w.epoch >= base;
        Ok((self.data().bits(i), init))
    }

    /// [`SharedMem::write`] under the independent warp schedule (see [`SharedMem::read_hb`]).
    /// A write ordered after every earlier access replaces them all.
    #[inline]
    pub(crate) fn write_hb(
        &mut self,
        i: usize,
        bits: u64,
        init: bool,
        rec: Rec,
        ordered: impl Fn(Rec) -> bool,
    ) -> Result<(), Conflict> {
        if let Some((first, first_write)) = self.unordered(i, rec.thread, ordered) {
            return Err(Conflict { first, first_write, element: i });
        }
        let m = &mut self.meta[i];
        m.write = rec;
        m.read = Rec::default();
        m.read2 = Rec::default();
        m.init = init;
        self.data.set_bits(i, bits);
        Ok(())
    }

    /// The access of element `i` (and whether it wrote) by a thread other than `thread` (and
    /// not the async proxy) that `ordered` does not place before now, if any.
    pub(crate) fn unordered(
        &self,
        i: usize,
        thread: u32,
        ordered: impl Fn(Rec) -> bool,
    ) -> Option<(Rec, bool)> {
        let m = &self.meta[i];
        let other = |r: Rec| r.thread != thread && r.thread != ASYNC_PROXY && !ordered(r);
        if other(m.write) {
            return Some((m.write, true));
        }
        [m.read, m.read2].into_iter().find(|&r| other(r)).map(|r| (r, false))
    }

    /// A bulk copy lands element `i` in `epoch`: written by the async proxy, ordered before
    /// every read by the mbarrier wait that made it land (no conflict with threads' accesses).
    #[inline]
    pub(crate) fn land(&mut self, i: usize, bits: u64, epoch: u32, inst: u32) {
        let m = &mut self.meta[i];
        m.write = Rec { epoch, thread: ASYNC_PROXY, inst };
        m.init = true;
        self.data.set_bits(i, bits);
    }

    /// The last write of element `i` (epoch 0: none).
    #[inline]
    pub(crate) fn last_write(&self, i: usize) -> Rec {
        self.meta[i].write
    }

    /// Element `i`'s bits and whether it was ever written, without recording a read (reads by
    /// other blocks of a cluster are recorded by the executor).
    #[inline]
    pub(crate) fn peek(&self, i: usize) -> (u64, bool) {
        (self.data().bits(i), self.meta[i].init)
    }

    /// Writes element `i` (`init = false` stores an uninitialised value), checking for
    /// conflicts with other threads' accesses in this epoch.
    #[inline]
    pub(crate) fn write(
        &mut self,
        i: usize,
        bits: u64,
        init: bool,
        rec: Rec,
    ) -> Result<(), Conflict> {
        let m = &mut self.meta[i];
        let other =
            |r: Rec| r.epoch == rec.epoch && r.thread != rec.thread && r.thread != ASYNC_PROXY;
        if other(m.write) {
            return Err(Conflict { first: m.write, first_write: true, element: i });
        }
        for r in [m.read, m.read2] {
            if other(r) {
                return Err(Conflict { first: r, first_write: false, element: i });
            }
        }
        m.write = rec;
        m.init = init;
        self.data.set_bits(i, bits);
        Ok(())
    }
}
