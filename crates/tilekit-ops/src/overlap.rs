//! Whether an op's outputs may share memory with themselves or with its inputs — checked
//! before every launch, as PyTorch's internal- and partial-overlap checks are.
//!
//! ```text
//!   Memory { space, base }   host: one space per HostStorage · GPU: one per device (absolute
//!                            addresses) · Record: one per LayoutTensor family
//!   element i of a tensor    bytes [base + (offset + Σ idx·stride)·size, … + size)
//!
//!   output alone             overlaps itself (a stride 0, strides that interleave) ─► refused
//!   output vs output         any shared element ─► refused
//!   output vs input          Disjoint ─► fine
//!                            Same (one element map, same bytes) ─► fine where the op is
//!                              defined in place (elementwise, softmax, copy) ─► else refused
//!                            Partial (some shared elements) ─► refused
//! ```
//!
//! Disjointness is proved cheaply where it can be (byte ranges, a common divisor of the
//! strides) and by enumerating elements below [`EXACT_LIMIT`]; past that, a layout the cheap
//! tests cannot clear is refused as *may* overlap, with the reason — never run.
//!
//! ```
//! use tilekit_ir::{tensor::TensorLayout, ScalarType};
//! use tilekit_ops::overlap::{overlaps_itself, relation, Memory, Relation};
//! let t = TensorLayout::contiguous(ScalarType::F32, vec![4, 8]).unwrap();
//! assert!(!overlaps_itself(&t));
//! assert!(overlaps_itself(&t.broadcast_to(&[3, 4, 8]).unwrap()));      // stride 0
//! let m = Memory::host(1);
//! let (even, odd) = (t.narrow(1, 0, 4).unwrap(), t.narrow(1, 4, 4).unwrap());
//! assert_eq!(relation((&even, m), (&odd, m)), Relation::Disjoint);
//! assert_eq!(relation((&t, m), (&t, m)), Relation::Same);
//! assert_eq!(relation((&t, m), (&t.transpose(0, 1).unwrap(), m)), Relation::Partial);
//! ```

use std::collections::HashSet;

use tilekit_ir::tensor::TensorLayout;

use crate::error::{OpsError, Result};

/// Where a tensor's storage lives: an address space and the byte address, in that space, of
/// the storage's first byte (the layout's offset counts from there). Two tensors can share
/// elements only if they are in one space.
///
/// ```
/// use tilekit_ops::overlap::Memory;
/// assert_ne!(Memory::host(7), Memory::device(0, 0x1000));
/// assert_eq!(Memory::device(0, 0x1000).base, 0x1000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Memory {
    /// The address space.
    pub space: Space,
    /// The storage's first byte in that space.
    pub base: u64,
}

/// An address space ([`Memory`]).
///
/// ```
/// use tilekit_ops::overlap::Space;
/// assert_ne!(Space::Device(0), Space::Device(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    /// One host storage ([`tilekit_ir::tensor::HostStorage::id`]): addresses count from its
    /// first byte.
    Host(usize),
    /// The memory of one GPU (its ordinal): absolute device addresses, so views, slices and
    /// tensors imported from other libraries are compared by address.
    Device(usize),
    /// The storage of one [`crate::backend::LayoutTensor`] and its views.
    Record(u64),
}

impl Memory {
    /// A host storage of identity `id`, addresses from 0.
    ///
    /// ```
    /// assert_eq!(tilekit_ops::overlap::Memory::host(3).base, 0);
    /// ```
    pub fn host(id: usize) -> Memory {
        Memory { space: Space::Host(id), base: 0 }
    }

    /// Device memory of GPU `ordinal` whose storage starts at device address `address`.
    ///
    /// ```
    /// use tilekit_ops::overlap::{Memory, Space};
    /// assert_eq!(Memory::device(1, 256).space, Space::Device(1));
    /// ```
    pub fn device(ordinal: usize, address: u64) -> Memory {
        Memory { space: Space::Device(ordinal), base: address }
    }
}

/// Layouts with more elements than this are not enumerated: past it, only the cheap proofs
/// of disjointness count (a layout they cannot clear is refused as one that may overlap).
pub const EXACT_LIMIT: i64 = 1 << 24;

/// Dims of length > 1 as (stride, length), sorted by stride.
fn live_dims(l: &TensorLayout) -> Vec<(i64, i64)> {
    let mut d: Vec<(i64, i64)> =
        l.shape().iter().zip(l.strides()).filter(|(&n, _)| n > 1).map(|(&n, &s)| (s, n)).collect();
    d.sort_unstable();
    d
}

/// Whether two different indices of `l` reach one element (a stride 0 over a dim of more than
/// one element, or strides that interleave): such a layout cannot be written, since which
/// write lands is undefined. Proved by sorting the strides (each larger than the reach of the
/// smaller ones) or, below [`EXACT_LIMIT`] elements, by enumeration; a layout neither clears
/// counts as overlapping.
///
/// ```
/// use tilekit_ir::{tensor::TensorLayout, ScalarType};
/// use tilekit_ops::overlap::overlaps_itself;
/// let s = |shape: Vec<i64>, strides: Vec<i64>| TensorLayout::strided(ScalarType::F32, shape, strides, 0).unwrap();
/// assert!(overlaps_itself(&s(vec![2, 8], vec![0, 1])));       // a broadcast row
/// assert!(overlaps_itself(&s(vec![4, 4], vec![2, 1])));       // rows that overlap by half
/// assert!(!overlaps_itself(&s(vec![4, 4], vec![1, 4])));      // column-major
/// assert!(!overlaps_itself(&s(vec![2, 3, 2], vec![1, 4, 2]))); // interleaved, yet disjoint
/// assert!(!overlaps_itself(&s(vec![1, 8], vec![0, 1])));      // stride 0 over one element
/// ```
pub fn overlaps_itself(l: &TensorLayout) -> bool {
    let dims = live_dims(l);
    if dims.iter().any(|&(s, _)| s == 0) {
        return true;
    }
    let mut reach = 0i64;
    if dims.iter().all(|&(s, n)| {
        let ok = s > reach;
        reach = reach.saturating_add(s.saturating_mul(n - 1));
        ok
    }) {
        return false;
    }
    if l.numel() > EXACT_LIMIT {
        return true;
    }
    let mut seen = HashSet::with_capacity(l.numel() as usize);
    let unique = offsets(&dims).all(|o| seen.insert(o));
    !unique
}

/// The element offsets (relative to the first element) of a layout's live dims.
fn offsets(dims: &[(i64, i64)]) -> impl Iterator<Item = i64> + '_ {
    let total: i64 = dims.iter().map(|&(_, n)| n).product();
    (0..total).map(move |mut i| {
        let mut o = 0;
        for &(s, n) in dims {
            o += (i % n) * s;
            i /= n;
        }
        o
    })
}

/// How two tensors' elements relate in memory.
///
/// ```
/// use tilekit_ops::overlap::Relation;
/// assert_ne!(Relation::Same, Relation::Partial);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// No byte in common.
    Disjoint,
    /// The same element map over the same bytes: index `i` of one is index `i` of the other.
    Same,
    /// Some bytes in common otherwise (or, past [`EXACT_LIMIT`], not proved disjoint).
    Partial,
}

fn byte_range(l: &TensorLayout, m: Memory) -> (u64, u64) {
    let es = l.dtype().size_bytes() as u64;
    let lo = m.base + l.offset() as u64 * es;
    (lo, m.base + l.span_elems() as u64 * es)
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// How the elements of `a` and `b` (each a layout and where its storage is) relate: compared
/// by address space, byte range, element map, a common divisor of the strides, and below
/// [`EXACT_LIMIT`] elements by enumeration.
///
/// ```
/// use tilekit_ir::{tensor::TensorLayout, ScalarType};
/// use tilekit_ops::overlap::{relation, Memory, Relation};
/// let t = TensorLayout::contiguous(ScalarType::F32, vec![6, 4]).unwrap();
/// let m = Memory::host(1);
/// let evens = TensorLayout::strided(ScalarType::F32, vec![12], vec![2], 0).unwrap();
/// let odds = TensorLayout::strided(ScalarType::F32, vec![12], vec![2], 1).unwrap();
/// assert_eq!(relation((&evens, m), (&odds, m)), Relation::Disjoint);   // interleaved
/// assert_eq!(relation((&t, m), (&t, Memory::host(2))), Relation::Disjoint);
/// assert_eq!(relation((&t, m), (&t.narrow(0, 2, 2).unwrap(), m)), Relation::Partial);
/// ```
pub fn relation(a: (&TensorLayout, Memory), b: (&TensorLayout, Memory)) -> Relation {
    let ((la, ma), (lb, mb)) = (a, b);
    if ma.space != mb.space || la.numel() == 0 || lb.numel() == 0 {
        return Relation::Disjoint;
    }
    let ((a0, a1), (b0, b1)) = (byte_range(la, ma), byte_range(lb, mb));
    if a1 <= b0 || b1 <= a0 {
        return Relation::Disjoint;
    }
    let (ea, eb) = (la.dtype().size_bytes() as i64, lb.dtype().size_bytes() as i64);
    let (da, db) = (live_dims(la), live_dims(lb));
    let delta = b0 as i64 - a0 as i64;
    if ea != eb || delta % ea != 0 {
        // elements of different sizes, or misaligned: only a byte-exact walk could clear them
        return if bytes_disjoint(la, a0, lb, b0) { Relation::Disjoint } else { Relation::Partial };
    }
    let d = delta / ea;
    if d == 0 && la.shape().iter().filter(|&&n| n > 1).eq(lb.shape().iter().filter(|&&n| n > 1)) {
        let sa = la.shape().iter().zip(la.strides()).filter(|(&n, _)| n > 1).map(|(_, &s)| s);
        let sb = lb.shape().iter().zip(lb.strides()).filter(|(&n, _)| n > 1).map(|(_, &s)| s);
        if sa.eq(sb) {
            return Relation::Same;
        }
    }
    let g = da.iter().chain(&db).fold(0, |g, &(s, _)| gcd(g, s));
    if g > 1 && d % g != 0 {
        return Relation::Disjoint;
    }
    if la.numel().max(lb.numel()) > EXACT_LIMIT {
        return Relation::Partial;
    }
    let first: HashSet<i64> = offsets(&da).collect();
    if offsets(&db).any(|o| first.contains(&(o + d))) {
        Relation::Partial
    } else {
        Relation::Disjoint
    }
}

/// Byte-exact disjointness of two layouts whose elements differ in size or alignment (below
/// [`EXACT_LIMIT`] elements; false past it).
fn bytes_disjoint(la: &TensorLayout, a0: u64, lb: &TensorLayout, b0: u64) -> bool {
    if la.numel().max(lb.numel()) > EXACT_LIMIT {
        return false;
    }
    let spans = |l: &TensorLayout, at: u64| -> Vec<(u64, u64)> {
        let es = l.dtype().size_bytes() as u64;
        let mut v: Vec<(u64, u64)> = offsets(&live_dims(l))
            .map(|o| (at + o as u64 * es, at + (o as u64 + 1) * es))
            .collect();
        v.sort_unstable();
        v
    };
    let (sa, sb) = (spans(la, a0), spans(lb, b0));
    let (mut i, mut j) = (0, 0);
    while i < sa.len() && j < sb.len() {
        if sa[i].1 <= sb[j].0 {
            i += 1;
        } else if sb[j].1 <= sa[i].0 {
            j += 1;
        } else {
            return false;
        }
    }
    true
}

/// A tensor as the overlap checks see it: its name in the op, its layout, its memory.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{backend::Interp, overlap::Operand};
/// let x = HostTensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
/// let o = Operand::of::<Interp, _>("x", &x);
/// assert_eq!(o.layout.shape(), &[2]);
/// ```
#[derive(Debug, Clone)]
pub struct Operand<'n> {
    /// The tensor's name in the op (`x`, `out`, …).
    pub name: &'n str,
    /// Its layout.
    pub layout: TensorLayout,
    /// Its memory.
    pub memory: Memory,
}

impl<'n> Operand<'n> {
    /// The operand of tensor `t` named `name`.
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// use tilekit_ops::{backend::Interp, overlap::{Memory, Operand}};
    /// let x = HostTensor::from_slice(&[1.0f32], &[1]).unwrap();
    /// assert_eq!(Operand::of::<Interp, _>("x", &x).memory, Memory::host(x.storage().id()));
    /// ```
    pub fn of<B, T>(name: &'n str, t: &T) -> Operand<'n>
    where
        B: crate::backend::Backend + ?Sized,
        T: crate::backend::TensorIn<B> + ?Sized,
    {
        Operand { name, layout: t.layout().clone(), memory: t.memory() }
    }

    /// The same memory seen through `layout` (an input broadcast to the output's shape, say).
    ///
    /// ```
    /// use tilekit_ir::tensor::HostTensor;
    /// use tilekit_ops::{backend::Interp, overlap::Operand};
    /// let x = HostTensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    /// let b = x.layout().broadcast_to(&[3, 2]).unwrap();
    /// assert_eq!(Operand::of::<Interp, _>("x", &x).with_layout(b).layout.shape(), &[3, 2]);
    /// ```
    pub fn with_layout(self, layout: TensorLayout) -> Operand<'n> {
        Operand { layout, ..self }
    }
}

/// Whether an op may write an output over an input that is the very same view.
///
/// ```
/// use tilekit_ops::overlap::InPlace;
/// assert_ne!(InPlace::SameView, InPlace::Never);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InPlace {
    /// Each output element depends only on the input elements at its own index, read before
    /// it is written (elementwise ops, copies, softmax's rows): an output that is exactly an
    /// input's view is fine.
    SameView,
    /// Outputs must not share any element with an input.
    Never,
}

fn describe(o: &Operand<'_>) -> String {
    format!(
        "shape {:?}, strides {:?}, offset {}",
        o.layout.shape(),
        o.layout.strides(),
        o.layout.offset()
    )
}

/// Checks an op's outputs before it runs: no output overlaps itself or another output, and
/// none shares an element with an input, except an input that is the very same view where
/// `in_place` allows it. The refusal is an [`OpsError::Overlap`] naming both tensors.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{backend::Interp, overlap::{check, InPlace, Operand}};
/// let x = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// let (xo, xt) = (Operand::of::<Interp, _>("x", &x), x.transpose(0, 1).unwrap());
/// let same = [Operand::of::<Interp, _>("out", &x)];
/// assert!(check("add", &same, &[xo.clone()], InPlace::SameView).is_ok());
/// assert!(check("row_sum", &same, &[xo.clone()], InPlace::Never).is_err());
/// let t = [Operand::of::<Interp, _>("out", &xt)];
/// let e = check("transpose", &t, &[xo], InPlace::SameView).unwrap_err().to_string();
/// assert!(e.contains("`out` shares memory with input `x`"), "{e}");
/// ```
pub fn check(
    op: &str,
    outputs: &[Operand<'_>],
    inputs: &[Operand<'_>],
    in_place: InPlace,
) -> Result<()> {
    for (i, out) in outputs.iter().enumerate() {
        if out.layout.numel() > 1 && overlaps_itself(&out.layout) {
            return Err(OpsError::Overlap {
                op: op.into(),
                detail: format!(
                    "output `{}` ({}) has elements that share memory: a written tensor needs \
                     one memory location per element (no stride 0, no interleaved strides); \
                     write into a contiguous tensor and copy",
                    out.name,
                    describe(out)
                ),
            });
        }
        for other in &outputs[..i] {
            if relation((&out.layout, out.memory), (&other.layout, other.memory))
                != Relation::Disjoint
            {
                return Err(OpsError::Overlap {
                    op: op.into(),
                    detail: format!(
                        "outputs `{}` ({}) and `{}` ({}) share memory: each output needs its \
                         own",
                        other.name,
                        describe(other),
                        out.name,
                        describe(out)
                    ),
                });
            }
        }
        for x in inputs {
            let rel = relation((&out.layout, out.memory), (&x.layout, x.memory));
            let fine = match rel {
                Relation::Disjoint => true,
                Relation::Same => in_place == InPlace::SameView,
                Relation::Partial => false,
            };
            if !fine {
                let rule = match (rel, in_place) {
                    (Relation::Same, _) => "this op cannot run in place: write into another tensor",
                    (_, InPlace::SameView) => {
                        "this op runs in place only into the input's own view (same shape, \
                         strides and offset); otherwise write into memory the inputs do not use"
                    }
                    _ => "write into memory the inputs do not use",
                };
                return Err(OpsError::Overlap {
                    op: op.into(),
                    detail: format!(
                        "output `{}` shares memory with input `{}` ({} over {}): {rule}",
                        out.name,
                        x.name,
                        describe(out),
                        describe(x)
                    ),
                });
            }
        }
    }
    Ok(())
}
