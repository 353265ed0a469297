//! Morton (Z-order) encoding: interleave the bits of 2-D and 3-D coordinates into one integer.
//!
//! A Morton code writes the bits of the coordinates in turn, lowest bits first. For a 2-D point
//! `(y, x)` (row, column) with bits `y = …y₁y₀` and `x = …x₁x₀` the code is `…y₁x₁y₀x₀`: `x`
//! owns the even bit positions, `y` the odd ones. This is the convention of the design
//! documents (`docs-ck-tile/001`, `morton_encode_2d(y, x)`) and of `morton_8x8` in the
//! conformance vectors. Walking the codes `0, 1, 2, …` traces a Z inside every 2×2 block, a Z of
//! Zs inside every 4×4 block, and so on:
//!
//! ```text
//!          x=0     x=1     x=2     x=3
//!  y=0      0 ───→  1       4 ───→  5
//!                 ↙       ↗       ↙
//!  y=1      2 ───→  3       6 ───→  7
//!                                 ↙      7 → 8 jumps back to the
//!  y=2      8 ───→  9      12 ───→ 13    left edge two rows down
//!                 ↙       ↗       ↙
//!  y=3     10 ───→ 11      14 ───→ 15
//! ```
//!
//! The 4×4 table is the one printed in the design document; it is reproduced literally by the
//! tests. In 3-D the point is `(z, y, x)` and the code is `…z₁y₁x₁z₀y₀x₀`.
//!
//! # Ranges
//!
//! | function | coordinates | code |
//! |---|---|---|
//! | [`encode2`] / [`decode2`] | `u32` each (32 bits) | `u64`, every value valid |
//! | [`encode3`] / [`decode3`] | `0..2²¹` each ([`MAX_BITS_3D`] = 21) | `0..2⁶³` |
//! | [`encode2_bits`] / [`decode2_bits`] | `0..2^bits`, `bits ≤ 32` | `0..2^(2·bits)` |
//! | [`encode3_bits`] / [`decode3_bits`] | `0..2^bits`, `bits ≤ 21` | `0..2^(3·bits)` |
//!
//! Three 32-bit coordinates do not fit in a `u64`; tilekit keeps codes in `u64` (tiles are far
//! smaller than 2²¹ along any axis) and returns a typed [`LayoutError`] for a 3-D coordinate of
//! 2²¹ or more, or a 3-D code with bit 63 set, instead of truncating silently. The `_bits`
//! variants check a tighter range: the coordinate must fit in `bits` bits, and the error names
//! the value and the valid range.
//!
//! # Two implementations
//!
//! * [`Portable`]: the classic magic-mask bit spreading (`x = (x | x << 16) & 0x0000ffff0000ffff`,
//!   then shifts of 8, 4, 2, 1: five shift/or/and steps per coordinate, in 2-D and 3-D) and
//!   the mirror-image compaction for decoding. Runs everywhere.
//! * [`Bmi2`]: x86-64 BMI2 `pdep` (parallel bit deposit) scatters a coordinate onto its mask in
//!   one instruction, and `pext` (parallel bit extract) gathers it back. A [`Bmi2`] value can
//!   only be obtained from [`Bmi2::detect`], which checks `is_x86_feature_detected!("bmi2")` once
//!   per process; holding one is the proof that the instructions exist, so its methods are safe.
//!
//! Both implement [`Interleave`] and give identical results (tested exhaustively for small bit
//! counts and on random inputs). The free functions ([`encode2`], …) use BMI2 when the CPU has
//! it and the portable path otherwise.
//!
//! Performance (figures in `bench/RESULTS.md`): a BMI2-enabled function cannot be inlined into
//! code compiled without BMI2, so one call per coordinate costs a function call, and for 2-D
//! encoding the inlined portable code is as fast. For many coordinates use the batch methods
//! ([`Interleave::encode2_batch`], …), whose BMI2 loop runs inside one BMI2-enabled function:
//! about 1 ns per 2-D or 3-D encode on the benchmark machine.
//!
//! ```
//! use tilekit_layout::morton::{self, Interleave, Portable};
//! assert_eq!(morton::encode2(1, 2), 0b0110); // y=01, x=10 -> y1 x1 y0 x0 = 0 1 1 0
//! assert_eq!(morton::decode2(6), (1, 2));
//! if let Some(bmi2) = morton::Bmi2::detect() {
//!     assert_eq!(bmi2.encode2(1, 2), Portable.encode2(1, 2));
//! }
//! ```

use std::sync::OnceLock;

use crate::error::{LayoutError, Result};

/// Largest bit count per coordinate of a 2-D code (2 × 32 = 64 bits).
///
/// ```
/// assert_eq!(tilekit_layout::morton::MAX_BITS_2D, 32);
/// ```
pub const MAX_BITS_2D: u32 = 32;

/// Largest bit count per coordinate of a 3-D code (3 × 21 = 63 bits of a `u64`).
///
/// ```
/// assert_eq!(tilekit_layout::morton::MAX_BITS_3D, 21);
/// ```
pub const MAX_BITS_3D: u32 = 21;

/// Bits owned by `x` in a 2-D code (even positions). `y` owns `MASK2_X << 1`.
const MASK2_X: u64 = 0x5555_5555_5555_5555;
/// Bits owned by `x` in a 3-D code (positions 0, 3, 6, …, 60). `y` owns `<< 1`, `z` owns `<< 2`.
const MASK3_X: u64 = 0x1249_2492_4924_9249;
/// The 21 low bits a 3-D coordinate may use.
const LOW21: u64 = (1 << MAX_BITS_3D) - 1;

/// One implementation of the bit interleaving. The methods do not validate: 3-D methods use the
/// low 21 bits of each coordinate and ignore bit 63 of a code. The checked free functions of
/// this module ([`encode3`], [`decode3_bits`], …) are built on top.
///
/// ```
/// use tilekit_layout::morton::{Interleave, Portable};
/// fn table<P: Interleave>(p: P) -> Vec<u64> {
///     (0..2).flat_map(|y| (0..2).map(move |x| p.encode2(y, x))).collect()
/// }
/// assert_eq!(table(Portable), vec![0, 1, 2, 3]);
/// ```
pub trait Interleave: Copy {
    /// A short name for reports and benchmarks (`"portable"`, `"bmi2"`).
    ///
    /// ```
    /// use tilekit_layout::morton::{Interleave, Portable};
    /// assert_eq!(Portable.name(), "portable");
    /// ```
    fn name(self) -> &'static str;

    /// The 2-D code of `(y, x)`: `x` on the even bits, `y` on the odd bits.
    ///
    /// ```
    /// use tilekit_layout::morton::{Interleave, Portable};
    /// assert_eq!(Portable.encode2(0, 3), 0b0101);
    /// assert_eq!(Portable.encode2(u32::MAX, u32::MAX), u64::MAX);
    /// ```
    fn encode2(self, y: u32, x: u32) -> u64;

    /// The `(y, x)` of a 2-D code; inverse of [`Interleave::encode2`].
    ///
    /// ```
    /// use tilekit_layout::morton::{Interleave, Portable};
    /// assert_eq!(Portable.decode2(0b1001), (2, 1));
    /// ```
    fn decode2(self, code: u64) -> (u32, u32);

    /// The 3-D code of `(z, y, x)` from the low 21 bits of each coordinate: `x` on bits
    /// `0, 3, 6, …`, `y` on `1, 4, 7, …`, `z` on `2, 5, 8, …`. Higher coordinate bits are dropped;
    /// use [`encode3`] to have them reported.
    ///
    /// ```
    /// use tilekit_layout::morton::{Interleave, Portable};
    /// assert_eq!(Portable.encode3(1, 1, 1), 0b111);
    /// assert_eq!(Portable.encode3(0, 0, 2), 0b1000);
    /// ```
    fn encode3(self, z: u32, y: u32, x: u32) -> u64;

    /// The `(z, y, x)` of a 3-D code, ignoring bit 63; inverse of [`Interleave::encode3`].
    ///
    /// ```
    /// use tilekit_layout::morton::{Interleave, Portable};
    /// // bits z1 y1 x1 z0 y0 x0 = 1 0 0 0 1 0
    /// assert_eq!(Portable.decode3(0b100_010), (2, 1, 0));
    /// ```
    fn decode3(self, code: u64) -> (u32, u32, u32);

    /// [`Interleave::encode2`] of every `(y, x)`, appended to `out`. One call for a whole
    /// batch: [`Bmi2`] runs the loop inside one BMI2-enabled function, where `pdep` is inlined.
    ///
    /// ```
    /// use tilekit_layout::morton::{Interleave, Portable};
    /// let mut out = vec![];
    /// Portable.encode2_batch(&[(0, 2), (1, 3)], &mut out);
    /// assert_eq!(out, vec![4, 7]);
    /// ```
    fn encode2_batch(self, coords: &[(u32, u32)], out: &mut Vec<u64>) {
        out.extend(coords.iter().map(|&(y, x)| self.encode2(y, x)));
    }

    /// [`Interleave::decode2`] of every code, appended to `out`.
    ///
    /// ```
    /// use tilekit_layout::morton::{Interleave, Portable};
    /// let mut out = vec![];
    /// Portable.decode2_batch(&[4, 7], &mut out);
    /// assert_eq!(out, vec![(0, 2), (1, 3)]);
    /// ```
    fn decode2_batch(self, codes: &[u64], out: &mut Vec<(u32, u32)>) {
        out.extend(codes.iter().map(|&c| self.decode2(c)));
    }

    /// [`Interleave::encode3`] of every `(z, y, x)` (low 21 bits each), appended to `out`.
    ///
    /// ```
    /// use tilekit_layout::morton::{Interleave, Portable};
    /// let mut out = vec![];
    /// Portable.encode3_batch(&[(1, 0, 0), (0, 0, 2)], &mut out);
    /// assert_eq!(out, vec![4, 8]);
    /// ```
    fn encode3_batch(self, coords: &[(u32, u32, u32)], out: &mut Vec<u64>) {
        out.extend(coords.iter().map(|&(z, y, x)| self.encode3(z, y, x)));
    }

    /// [`Interleave::decode3`] of every code (bit 63 ignored), appended to `out`.
    ///
    /// ```
    /// use tilekit_layout::morton::{Interleave, Portable};
    /// let mut out = vec![];
    /// Portable.decode3_batch(&[4, 8], &mut out);
    /// assert_eq!(out, vec![(1, 0, 0), (0, 0, 2)]);
    /// ```
    fn decode3_batch(self, codes: &[u64], out: &mut Vec<(u32, u32, u32)>) {
        out.extend(codes.iter().map(|&c| self.decode3(c)));
    }
}

/// The portable magic-mask implementation (no special instructions).
///
/// ```
/// use tilekit_layout::morton::{Interleave, Portable};
/// assert_eq!(Portable.encode2(3, 3), 15);
/// assert_eq!(Portable.decode3(Portable.encode3(7, 8, 9)), (7, 8, 9));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Portable;

/// Spreads the 32 bits of `v` onto the even bit positions of a `u64`.
#[inline]
fn spread2(v: u32) -> u64 {
    let mut v = u64::from(v);
    v = (v | (v << 16)) & 0x0000_ffff_0000_ffff;
    v = (v | (v << 8)) & 0x00ff_00ff_00ff_00ff;
    v = (v | (v << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    v = (v | (v << 2)) & 0x3333_3333_3333_3333;
    v = (v | (v << 1)) & MASK2_X;
    v
}

/// Gathers the even bit positions of `v` into a `u32` (inverse of [`spread2`]).
#[inline]
fn compact2(v: u64) -> u32 {
    let mut v = v & MASK2_X;
    v = (v | (v >> 1)) & 0x3333_3333_3333_3333;
    v = (v | (v >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
    v = (v | (v >> 4)) & 0x00ff_00ff_00ff_00ff;
    v = (v | (v >> 8)) & 0x0000_ffff_0000_ffff;
    v = (v | (v >> 16)) & 0x0000_0000_ffff_ffff;
    v as u32
}

/// Spreads the low 21 bits of `v` onto every third bit position (0, 3, …, 60).
#[inline]
fn spread3(v: u32) -> u64 {
    let mut v = u64::from(v) & LOW21;
    v = (v | (v << 32)) & 0x001f_0000_0000_ffff;
    v = (v | (v << 16)) & 0x001f_0000_ff00_00ff;
    v = (v | (v << 8)) & 0x100f_00f0_0f00_f00f;
    v = (v | (v << 4)) & 0x10c3_0c30_c30c_30c3;
    v = (v | (v << 2)) & MASK3_X;
    v
}

/// Gathers bit positions 0, 3, …, 60 of `v` into 21 bits (inverse of [`spread3`]).
#[inline]
fn compact3(v: u64) -> u32 {
    let mut v = v & MASK3_X;
    v = (v | (v >> 2)) & 0x10c3_0c30_c30c_30c3;
    v = (v | (v >> 4)) & 0x100f_00f0_0f00_f00f;
    v = (v | (v >> 8)) & 0x001f_0000_ff00_00ff;
    v = (v | (v >> 16)) & 0x001f_0000_0000_ffff;
    v = (v | (v >> 32)) & LOW21;
    v as u32
}

impl Interleave for Portable {
    fn name(self) -> &'static str {
        "portable"
    }
    #[inline]
    fn encode2(self, y: u32, x: u32) -> u64 {
        spread2(x) | (spread2(y) << 1)
    }
    #[inline]
    fn decode2(self, code: u64) -> (u32, u32) {
        (compact2(code >> 1), compact2(code))
    }
    #[inline]
    fn encode3(self, z: u32, y: u32, x: u32) -> u64 {
        spread3(x) | (spread3(y) << 1) | (spread3(z) << 2)
    }
    #[inline]
    fn decode3(self, code: u64) -> (u32, u32, u32) {
        (compact3(code >> 2), compact3(code >> 1), compact3(code))
    }
}

/// The x86-64 BMI2 implementation (`pdep` / `pext`). Obtain one with [`Bmi2::detect`]; it is
/// `None` on other architectures and on x86-64 CPUs without BMI2.
///
/// ```
/// use tilekit_layout::morton::{Bmi2, Interleave, Portable};
/// match Bmi2::detect() {
///     Some(b) => assert_eq!(b.decode2(b.encode2(40, 2)), (40, 2)),
///     None => println!("no BMI2 here: the portable path is used"),
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bmi2 {
    /// Private: only [`Bmi2::detect`] makes one, after checking the CPU.
    _proof: (),
}

impl Bmi2 {
    /// `Some` when this CPU has BMI2. The CPU is asked once per process (a `OnceLock`); later
    /// calls read the cached answer.
    ///
    /// ```
    /// let a = tilekit_layout::morton::Bmi2::detect();
    /// assert_eq!(a, tilekit_layout::morton::Bmi2::detect()); // same answer every time
    /// ```
    #[inline]
    pub fn detect() -> Option<Bmi2> {
        static HAS_BMI2: OnceLock<bool> = OnceLock::new();
        if *HAS_BMI2.get_or_init(cpu_has_bmi2) {
            Some(Bmi2 { _proof: () })
        } else {
            None
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn cpu_has_bmi2() -> bool {
    std::arch::is_x86_feature_detected!("bmi2")
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_has_bmi2() -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
mod pdep {
    //! The only `unsafe` of the module: whole encode/decode operations compiled with BMI2
    //! enabled (one call per operation; the `pdep`/`pext` inside are inlined).
    use super::{Bmi2, MASK2_X, MASK3_X};
    use std::arch::x86_64::{_pdep_u64, _pext_u64};

    #[target_feature(enable = "bmi2")]
    unsafe fn encode2_bmi2(y: u32, x: u32) -> u64 {
        _pdep_u64(u64::from(x), MASK2_X) | _pdep_u64(u64::from(y), MASK2_X << 1)
    }

    #[target_feature(enable = "bmi2")]
    unsafe fn decode2_bmi2(code: u64) -> (u32, u32) {
        (_pext_u64(code, MASK2_X << 1) as u32, _pext_u64(code, MASK2_X) as u32)
    }

    // pdep drops source bits beyond the mask's 21 set bits, like the portable LOW21 mask.
    #[target_feature(enable = "bmi2")]
    unsafe fn encode3_bmi2(z: u32, y: u32, x: u32) -> u64 {
        _pdep_u64(u64::from(x), MASK3_X)
            | _pdep_u64(u64::from(y), MASK3_X << 1)
            | _pdep_u64(u64::from(z), MASK3_X << 2)
    }

    #[target_feature(enable = "bmi2")]
    unsafe fn decode3_bmi2(code: u64) -> (u64, u64) {
        // Returned as the pair (z << 32 | y, x), which comes back in two registers; a 3-tuple
        // is returned through memory, and callers that re-read it in pieces stalled on store
        // forwarding (measured: 9.7 ns instead of about 2.5 ns per call on the bench machine).
        (
            (_pext_u64(code, MASK3_X << 2) << 32) | _pext_u64(code, MASK3_X << 1),
            _pext_u64(code, MASK3_X),
        )
    }

    #[inline]
    fn unpack3((zy, x): (u64, u64)) -> (u32, u32, u32) {
        ((zy >> 32) as u32, zy as u32, x as u32)
    }

    // The batch loops run inside BMI2-enabled functions so that the operations above inline.
    #[target_feature(enable = "bmi2")]
    unsafe fn encode2_batch_bmi2(coords: &[(u32, u32)], out: &mut Vec<u64>) {
        out.reserve(coords.len());
        for &(y, x) in coords {
            out.push(encode2_bmi2(y, x));
        }
    }

    #[target_feature(enable = "bmi2")]
    unsafe fn decode2_batch_bmi2(codes: &[u64], out: &mut Vec<(u32, u32)>) {
        out.reserve(codes.len());
        for &c in codes {
            out.push(decode2_bmi2(c));
        }
    }

    #[target_feature(enable = "bmi2")]
    unsafe fn encode3_batch_bmi2(coords: &[(u32, u32, u32)], out: &mut Vec<u64>) {
        out.reserve(coords.len());
        for &(z, y, x) in coords {
            out.push(encode3_bmi2(z, y, x));
        }
    }

    #[target_feature(enable = "bmi2")]
    unsafe fn decode3_batch_bmi2(codes: &[u64], out: &mut Vec<(u32, u32, u32)>) {
        out.reserve(codes.len());
        for &c in codes {
            out.push(unpack3(decode3_bmi2(c)));
        }
    }

    // SAFETY (all eight below): a `Bmi2` value exists only after
    // `is_x86_feature_detected!("bmi2")` returned true (its field is private and `Bmi2::detect`
    // is its only constructor), so the CPU supports the BMI2 instructions these functions use.
    // They take plain integers and touch no memory; there is no other precondition.
    #[inline]
    pub(super) fn encode2(_proof: Bmi2, y: u32, x: u32) -> u64 {
        // SAFETY: see above.
        unsafe { encode2_bmi2(y, x) }
    }
    #[inline]
    pub(super) fn decode2(_proof: Bmi2, code: u64) -> (u32, u32) {
        // SAFETY: see above.
        unsafe { decode2_bmi2(code) }
    }
    #[inline]
    pub(super) fn encode3(_proof: Bmi2, z: u32, y: u32, x: u32) -> u64 {
        // SAFETY: see above.
        unsafe { encode3_bmi2(z, y, x) }
    }
    #[inline]
    pub(super) fn decode3(_proof: Bmi2, code: u64) -> (u32, u32, u32) {
        // SAFETY: see above.
        unpack3(unsafe { decode3_bmi2(code) })
    }
    #[inline]
    pub(super) fn encode2_batch(_proof: Bmi2, coords: &[(u32, u32)], out: &mut Vec<u64>) {
        // SAFETY: see above.
        unsafe { encode2_batch_bmi2(coords, out) }
    }
    #[inline]
    pub(super) fn decode2_batch(_proof: Bmi2, codes: &[u64], out: &mut Vec<(u32, u32)>) {
        // SAFETY: see above.
        unsafe { decode2_batch_bmi2(codes, out) }
    }
    #[inline]
    pub(super) fn encode3_batch(_proof: Bmi2, coords: &[(u32, u32, u32)], out: &mut Vec<u64>) {
        // SAFETY: see above.
        unsafe { encode3_batch_bmi2(coords, out) }
    }
    #[inline]
    pub(super) fn decode3_batch(_proof: Bmi2, codes: &[u64], out: &mut Vec<(u32, u32, u32)>) {
        // SAFETY: see above.
        unsafe { decode3_batch_bmi2(codes, out) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod pdep {
    //! Elsewhere no `Bmi2` value can exist (`Bmi2::detect` returns `None`); these forward to
    //! the portable code so that the crate compiles on every target.
    use super::{Bmi2, Interleave, Portable};
    pub(super) fn encode2(_proof: Bmi2, y: u32, x: u32) -> u64 {
        Portable.encode2(y, x)
    }
    pub(super) fn decode2(_proof: Bmi2, code: u64) -> (u32, u32) {
        Portable.decode2(code)
    }
    pub(super) fn encode3(_proof: Bmi2, z: u32, y: u32, x: u32) -> u64 {
        Portable.encode3(z, y, x)
    }
    pub(super) fn decode3(_proof: Bmi2, code: u64) -> (u32, u32, u32) {
        Portable.decode3(code)
    }
    pub(super) fn encode2_batch(_proof: Bmi2, coords: &[(u32, u32)], out: &mut Vec<u64>) {
        Portable.encode2_batch(coords, out)
    }
    pub(super) fn decode2_batch(_proof: Bmi2, codes: &[u64], out: &mut Vec<(u32, u32)>) {
        Portable.decode2_batch(codes, out)
    }
    pub(super) fn encode3_batch(_proof: Bmi2, coords: &[(u32, u32, u32)], out: &mut Vec<u64>) {
        Portable.encode3_batch(coords, out)
    }
    pub(super) fn decode3_batch(_proof: Bmi2, codes: &[u64], out: &mut Vec<(u32, u32, u32)>) {
        Portable.decode3_batch(codes, out)
    }
}

impl Interleave for Bmi2 {
    fn name(self) -> &'static str {
        "bmi2"
    }
    #[inline]
    fn encode2(self, y: u32, x: u32) -> u64 {
        pdep::encode2(self, y, x)
    }
    #[inline]
    fn decode2(self, code: u64) -> (u32, u32) {
        pdep::decode2(self, code)
    }
    #[inline]
    fn encode3(self, z: u32, y: u32, x: u32) -> u64 {
        pdep::encode3(self, z, y, x)
    }
    #[inline]
    fn decode3(self, code: u64) -> (u32, u32, u32) {
        pdep::decode3(self, code)
    }
    fn encode2_batch(self, coords: &[(u32, u32)], out: &mut Vec<u64>) {
        pdep::encode2_batch(self, coords, out)
    }
    fn decode2_batch(self, codes: &[u64], out: &mut Vec<(u32, u32)>) {
        pdep::decode2_batch(self, codes, out)
    }
    fn encode3_batch(self, coords: &[(u32, u32, u32)], out: &mut Vec<u64>) {
        pdep::encode3_batch(self, coords, out)
    }
    fn decode3_batch(self, codes: &[u64], out: &mut Vec<(u32, u32, u32)>) {
        pdep::decode3_batch(self, codes, out)
    }
}

/// The 2-D Morton code of `(y, x)` (`y` row, `x` column): `…y₁x₁y₀x₀`. Every pair of `u32`
/// fits, so this cannot fail. Uses BMI2 when available.
///
/// ```
/// use tilekit_layout::morton::encode2;
/// // The design document's 4×4 table, row y = 1: 2 3 6 7
/// assert_eq!([0, 1, 2, 3].map(|x| encode2(1, x)), [2, 3, 6, 7]);
/// ```
#[inline]
pub fn encode2(y: u32, x: u32) -> u64 {
    match Bmi2::detect() {
        Some(b) => b.encode2(y, x),
        None => Portable.encode2(y, x),
    }
}

/// The `(y, x)` of a 2-D Morton code; every `u64` is a valid code. Inverse of [`encode2`].
///
/// ```
/// use tilekit_layout::morton::decode2;
/// assert_eq!(decode2(13), (2, 3));
/// assert_eq!(decode2(u64::MAX), (u32::MAX, u32::MAX));
/// ```
#[inline]
pub fn decode2(code: u64) -> (u32, u32) {
    match Bmi2::detect() {
        Some(b) => b.decode2(code),
        None => Portable.decode2(code),
    }
}

/// The 3-D Morton code of `(z, y, x)`: `…z₁y₁x₁z₀y₀x₀`. Each coordinate must be below 2²¹
/// ([`MAX_BITS_3D`]) so that the code fits in 63 bits of a `u64`.
///
/// ```
/// use tilekit_layout::morton::encode3;
/// assert_eq!(encode3(1, 0, 1).unwrap(), 0b101);
/// let err = encode3(0, 1 << 21, 0).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "morton encode3: y = 2097152 is invalid: with 21 bits per coordinate it must be in 0..=2097151"
/// );
/// ```
#[inline]
pub fn encode3(z: u32, y: u32, x: u32) -> Result<u64> {
    encode3_checked("morton encode3", z, y, x, MAX_BITS_3D)
}

/// The `(z, y, x)` of a 3-D Morton code. Codes with bit 63 set would need a 22nd bit of `x`
/// and are rejected. Inverse of [`encode3`].
///
/// ```
/// use tilekit_layout::morton::decode3;
/// // bits z1 y1 x1 z0 y0 x0 = 1 1 0 0 0 1
/// assert_eq!(decode3(0b110_001).unwrap(), (2, 2, 1));
/// assert!(decode3(1 << 63).is_err());
/// ```
#[inline]
pub fn decode3(code: u64) -> Result<(u32, u32, u32)> {
    decode3_checked("morton decode3", code, MAX_BITS_3D)
}

// The checks are inlined (a shift and a compare on the fast path); building the error message
// is kept out of line.

#[inline]
fn check_bits(ctx: &str, bits: u32, max: u32, dims: &str) -> Result<()> {
    if bits > max {
        return Err(bits_error(ctx, bits, max, dims));
    }
    Ok(())
}

#[inline]
fn check_coord(ctx: &str, field: &str, v: u32, bits: u32) -> Result<()> {
    if bits < 32 && (v >> bits) != 0 {
        return Err(coord_error(ctx, field, v, bits));
    }
    Ok(())
}

#[inline]
fn check_code(ctx: &str, code: u64, code_bits: u32, bits: u32) -> Result<()> {
    if code_bits < 64 && (code >> code_bits) != 0 {
        return Err(code_error(ctx, code, code_bits, bits));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn bits_error(ctx: &str, bits: u32, max: u32, dims: &str) -> LayoutError {
    LayoutError::invalid(
        ctx,
        "bits",
        bits,
        format!(
            "a {dims} code holds at most {max} bits per coordinate, so bits must be in 0..={max}"
        ),
    )
}

#[cold]
#[inline(never)]
fn coord_error(ctx: &str, field: &str, v: u32, bits: u32) -> LayoutError {
    let max = (1u64 << bits) - 1;
    let what = if bits == 1 { "bit" } else { "bits" };
    LayoutError::invalid(
        ctx,
        field,
        v,
        format!("with {bits} {what} per coordinate it must be in 0..={max}"),
    )
}

#[cold]
#[inline(never)]
fn code_error(ctx: &str, code: u64, code_bits: u32, bits: u32) -> LayoutError {
    let max = (1u64 << code_bits) - 1;
    LayoutError::invalid(
        ctx,
        "code",
        code,
        format!("with {bits} bits per coordinate the code has {code_bits} bits, so it must be in 0..={max}"),
    )
}

/// [`encode2`] with a bit budget: `bits ≤ 32`, and `y` and `x` must be below `2^bits`.
///
/// ```
/// use tilekit_layout::morton::encode2_bits;
/// assert_eq!(encode2_bits(3, 2, 2).unwrap(), 14);
/// assert_eq!(
///     encode2_bits(0, 4, 2).unwrap_err().to_string(),
///     "morton encode2_bits: x = 4 is invalid: with 2 bits per coordinate it must be in 0..=3"
/// );
/// assert!(encode2_bits(0, 0, 33).is_err());
/// ```
#[inline]
pub fn encode2_bits(y: u32, x: u32, bits: u32) -> Result<u64> {
    let ctx = "morton encode2_bits";
    check_bits(ctx, bits, MAX_BITS_2D, "2-D")?;
    check_coord(ctx, "y", y, bits)?;
    check_coord(ctx, "x", x, bits)?;
    Ok(encode2(y, x))
}

/// [`decode2`] with a bit budget: `bits ≤ 32`, and the code must be below `2^(2·bits)`.
///
/// ```
/// use tilekit_layout::morton::decode2_bits;
/// assert_eq!(decode2_bits(15, 2).unwrap(), (3, 3));
/// assert_eq!(
///     decode2_bits(16, 2).unwrap_err().to_string(),
///     "morton decode2_bits: code = 16 is invalid: with 2 bits per coordinate the code has 4 bits, so it must be in 0..=15"
/// );
/// ```
#[inline]
pub fn decode2_bits(code: u64, bits: u32) -> Result<(u32, u32)> {
    let ctx = "morton decode2_bits";
    check_bits(ctx, bits, MAX_BITS_2D, "2-D")?;
    check_code(ctx, code, 2 * bits, bits)?;
    Ok(decode2(code))
}

/// [`encode3`] with a bit budget: `bits ≤ 21`, and `z`, `y`, `x` must be below `2^bits`.
///
/// ```
/// use tilekit_layout::morton::encode3_bits;
/// assert_eq!(encode3_bits(1, 1, 1, 1).unwrap(), 7);
/// assert_eq!(
///     encode3_bits(2, 0, 0, 1).unwrap_err().to_string(),
///     "morton encode3_bits: z = 2 is invalid: with 1 bit per coordinate it must be in 0..=1"
/// );
/// assert_eq!(
///     encode3_bits(0, 0, 0, 22).unwrap_err().to_string(),
///     "morton encode3_bits: bits = 22 is invalid: a 3-D code holds at most 21 bits per coordinate, so bits must be in 0..=21"
/// );
/// ```
#[inline]
pub fn encode3_bits(z: u32, y: u32, x: u32, bits: u32) -> Result<u64> {
    encode3_checked("morton encode3_bits", z, y, x, bits)
}

#[inline]
fn encode3_checked(ctx: &str, z: u32, y: u32, x: u32, bits: u32) -> Result<u64> {
    check_bits(ctx, bits, MAX_BITS_3D, "3-D")?;
    check_coord(ctx, "z", z, bits)?;
    check_coord(ctx, "y", y, bits)?;
    check_coord(ctx, "x", x, bits)?;
    Ok(match Bmi2::detect() {
        Some(b) => b.encode3(z, y, x),
        None => Portable.encode3(z, y, x),
    })
}

/// [`decode3`] with a bit budget: `bits ≤ 21`, and the code must be below `2^(3·bits)`.
///
/// ```
/// use tilekit_layout::morton::decode3_bits;
/// assert_eq!(decode3_bits(63, 2).unwrap(), (3, 3, 3));
/// assert!(decode3_bits(64, 2).is_err());
/// ```
#[inline]
pub fn decode3_bits(code: u64, bits: u32) -> Result<(u32, u32, u32)> {
    decode3_checked("morton decode3_bits", code, bits)
}

#[inline]
fn decode3_checked(ctx: &str, code: u64, bits: u32) -> Result<(u32, u32, u32)> {
    check_bits(ctx, bits, MAX_BITS_3D, "3-D")?;
    check_code(ctx, code, 3 * bits, bits)?;
    Ok(match Bmi2::detect() {
        Some(b) => b.decode3(code),
        None => Portable.decode3(code),
    })
}
