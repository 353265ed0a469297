//! Host buffers, per-block shared memory with race detection, and the per-block view of global
//! memory.
//!
//! ```text
//!   global:  HostBuffer (read-only during the run) ◄── reads ──┐
//!            per block: overlay of its own writes ◄────────────┤ a block sees its own writes
//!                       + write log ──► applied after all blocks, in block order;
//!                                       two blocks writing one element = GlobalWriteConflict
//!
//!   shared:  bytes + per byte { initialised, last write (epoch, thread, inst),
//!                               last reads of this epoch (two distinct threads) }
//!            epoch += 1 at every barrier; same epoch + another thread + a write = SharedRace
//! ```

use std::collections::HashMap;

use half::{bf16, f16};

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

    /// `len` copies of the constant `fill` (to poison outputs before a run: NaN, sentinels).
    ///
    /// ```
    /// use tilekit_ir::{interp::HostBuffer, Lit};
    /// let b = HostBuffer::filled(Lit::f32(f32::NAN), 2);
    /// assert!(b.to_f32().unwrap().iter().all(|x| x.is_nan()));
    /// ```
    pub fn filled(fill: crate::types::Lit, len: usize) -> HostBuffer {
        let mut h = HostBuffer::zeroed(fill.ty(), len);
        for i in 0..len {
            h.set_bits(i, fill.bits());
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
    pub fn bits(&self, i: usize) -> u64 {
        let s = self.elem.size_bytes();
        let mut b = [0u8; 8];
        b[..s].copy_from_slice(&self.bytes[i * s..(i + 1) * s]);
        canonical(self.elem, u64::from_le_bytes(b))
    }

    /// Sets element `i` from canonical bits.
    ///
    /// ```
    /// let mut b = tilekit_ir::interp::HostBuffer::from_u32(&[0]);
    /// b.set_bits(0, 7);
    /// assert_eq!(b.to_u32(), Some(vec![7]));
    /// ```
    pub fn set_bits(&mut self, i: usize, bits: u64) {
        let s = self.elem.size_bytes();
        self.bytes[i * s..(i + 1) * s].copy_from_slice(&bits.to_le_bytes()[..s]);
    }
}

/// One recorded shared-memory access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) epoch: u32,
    pub(crate) thread: u32,
    pub(crate) inst: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct ByteMeta {
    init: bool,
    write: Option<Rec>,
    read: Option<Rec>,
    read2: Option<Rec>,
}

/// A detected conflict: the earlier access and whether it was a write.
pub(crate) struct Conflict {
    pub(crate) first: Rec,
    pub(crate) first_write: bool,
    pub(crate) byte: usize,
}

/// One shared allocation of a block.
pub(crate) struct SharedMem {
    pub(crate) elem: ScalarType,
    bytes: Vec<u8>,
    meta: Vec<ByteMeta>,
}

impl SharedMem {
    pub(crate) fn new(elem: ScalarType, len: usize) -> Self {
        let n = len * elem.size_bytes();
        SharedMem { elem, bytes: vec![0; n], meta: vec![ByteMeta::default(); n] }
    }

    pub(crate) fn len(&self) -> usize {
        self.bytes.len() / self.elem.size_bytes()
    }

    /// Reads element `i`: `(bits, initialised)`, recording the read; a conflict with a write of
    /// another thread in this epoch is returned.
    pub(crate) fn read(&mut self, i: usize, rec: Rec) -> Result<(u64, bool), Conflict> {
        let s = self.elem.size_bytes();
        let mut init = true;
        for byte in i * s..(i + 1) * s {
            let m = &mut self.meta[byte];
            if let Some(w) = m.write {
                if w.epoch == rec.epoch && w.thread != rec.thread {
                    return Err(Conflict { first: w, first_write: true, byte });
                }
            }
            match m.read {
                Some(r) if r.epoch == rec.epoch => {
                    if r.thread != rec.thread && m.read2.is_none_or(|r2| r2.epoch != rec.epoch) {
                        m.read2 = Some(rec);
                    }
                }
                _ => {
                    m.read = Some(rec);
                    m.read2 = None;
                }
            }
            init &= m.init;
        }
        let mut b = [0u8; 8];
        b[..s].copy_from_slice(&self.bytes[i * s..(i + 1) * s]);
        Ok((canonical(self.elem, u64::from_le_bytes(b)), init))
    }

    /// Writes element `i` (`init = false` stores an uninitialised value), checking for
    /// conflicts with other threads' accesses in this epoch.
    pub(crate) fn write(
        &mut self,
        i: usize,
        bits: u64,
        init: bool,
        rec: Rec,
    ) -> Result<(), Conflict> {
        let s = self.elem.size_bytes();
        for byte in i * s..(i + 1) * s {
            let m = &mut self.meta[byte];
            let same_epoch_other =
                |r: Option<Rec>| r.filter(|r| r.epoch == rec.epoch && r.thread != rec.thread);
            if let Some(w) = same_epoch_other(m.write) {
                return Err(Conflict { first: w, first_write: true, byte });
            }
            if let Some(r) = same_epoch_other(m.read).or(same_epoch_other(m.read2)) {
                return Err(Conflict { first: r, first_write: false, byte });
            }
            m.write = Some(rec);
            m.init = init;
        }
        self.bytes[i * s..(i + 1) * s].copy_from_slice(&bits.to_le_bytes()[..s]);
        Ok(())
    }
}

/// A block's view of global memory: the launch buffers plus its own writes.
pub(crate) struct GlobalView<'a> {
    pub(crate) buffers: &'a [Option<&'a HostBuffer>],
    overlay: HashMap<(u32, usize), u64>,
    pub(crate) log: Vec<(u32, usize, u64)>,
}

impl<'a> GlobalView<'a> {
    pub(crate) fn new(buffers: &'a [Option<&'a HostBuffer>]) -> Self {
        GlobalView { buffers, overlay: HashMap::new(), log: vec![] }
    }

    pub(crate) fn len(&self, param: u32) -> usize {
        self.buffers.get(param as usize).copied().flatten().map_or(0, HostBuffer::len)
    }

    pub(crate) fn read(&self, param: u32, i: usize) -> u64 {
        if let Some(&v) = self.overlay.get(&(param, i)) {
            return v;
        }
        self.buffers[param as usize].map_or(0, |b| b.bits(i))
    }

    pub(crate) fn write(&mut self, param: u32, i: usize, bits: u64) {
        self.overlay.insert((param, i), bits);
        self.log.push((param, i, bits));
    }
}
