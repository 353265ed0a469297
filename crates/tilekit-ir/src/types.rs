//! Scalar types and typed constants.
//!
//! Every SSA value of the IR is a **scalar** of one of eight types. Vectors never appear as
//! values: a 16-byte load of four `f32` has four results, and an `mma.sync` fragment is a list
//! of registers. That keeps every op, pass and the interpreter scalar, and lets the PTX backend
//! pack registers into `.v4` / `.b32` as it likes.
//!
//! ```text
//!   ScalarType   bytes  PTX      encoding of a constant in Lit::bits (and of an interpreter register)
//!   pred           1    .pred    0 or 1
//!   i32            4    .s32     sign-extended to 64 bits
//!   u32            4    .u32     zero-extended
//!   i64            8    .s64     the two's-complement bits
//!   f16 / bf16     2    .f16/.bf16  the 16 IEEE / bfloat bits, zero-extended
//!   f32 / f64    4 / 8  .f32/.f64   the IEEE bits, zero-extended
//! ```
//!
//! The encoding is canonical, so two equal constants have equal bits and [`Lit`] can be hashed
//! (CSE) and compared, and the same evaluation functions ([`crate::eval`]) serve the build-time
//! folder and the interpreter.

use std::fmt;

use half::{bf16, f16};

/// The type of an SSA value.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(ScalarType::F16.size_bytes(), 2);
/// assert!(ScalarType::U32.is_int() && !ScalarType::U32.is_signed());
/// assert_eq!(ScalarType::BF16.to_string(), "bf16");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    /// A predicate (boolean) register.
    Pred,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 32-bit integer.
    U32,
    /// Signed 64-bit integer.
    I64,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
}

impl ScalarType {
    /// Every type, in declaration order.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::ScalarType::ALL.len(), 8);
    /// ```
    pub const ALL: [ScalarType; 8] = [
        ScalarType::Pred,
        ScalarType::I32,
        ScalarType::U32,
        ScalarType::I64,
        ScalarType::F16,
        ScalarType::BF16,
        ScalarType::F32,
        ScalarType::F64,
    ];

    /// Size in bytes in memory (a predicate counts as one byte; it cannot be loaded or stored).
    ///
    /// ```
    /// assert_eq!(tilekit_ir::ScalarType::F64.size_bytes(), 8);
    /// ```
    #[inline]
    pub fn size_bytes(self) -> usize {
        match self {
            ScalarType::Pred => 1,
            ScalarType::F16 | ScalarType::BF16 => 2,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::F64 => 8,
        }
    }

    /// Integer type (`i32`, `u32`, `i64`).
    ///
    /// ```
    /// assert!(tilekit_ir::ScalarType::I64.is_int());
    /// ```
    #[inline]
    pub fn is_int(self) -> bool {
        matches!(self, ScalarType::I32 | ScalarType::U32 | ScalarType::I64)
    }

    /// Signed integer type.
    ///
    /// ```
    /// assert!(tilekit_ir::ScalarType::I32.is_signed());
    /// ```
    #[inline]
    pub fn is_signed(self) -> bool {
        matches!(self, ScalarType::I32 | ScalarType::I64)
    }

    /// Floating-point type.
    ///
    /// ```
    /// assert!(tilekit_ir::ScalarType::BF16.is_float());
    /// ```
    #[inline]
    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 | ScalarType::F64)
    }

    /// Smallest and largest value of an integer type (`None` for other types).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// assert_eq!(ScalarType::U32.int_range(), Some((0, u32::MAX as i64)));
    /// ```
    pub fn int_range(self) -> Option<(i64, i64)> {
        match self {
            ScalarType::I32 => Some((i32::MIN as i64, i32::MAX as i64)),
            ScalarType::U32 => Some((0, u32::MAX as i64)),
            ScalarType::I64 => Some((i64::MIN, i64::MAX)),
            _ => None,
        }
    }

    /// The lowercase name used in the text dump (`i32`, `f16`, `pred`, …).
    ///
    /// ```
    /// assert_eq!(tilekit_ir::ScalarType::Pred.name(), "pred");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Pred => "pred",
            ScalarType::I32 => "i32",
            ScalarType::U32 => "u32",
            ScalarType::I64 => "i64",
            ScalarType::F16 => "f16",
            ScalarType::BF16 => "bf16",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A typed constant: a type and its canonical bits (see the [module docs](self)).
///
/// ```
/// use tilekit_ir::{Lit, ScalarType};
/// let a = Lit::int(ScalarType::I32, -3).unwrap();
/// assert_eq!(a.as_i64(), Some(-3));
/// assert_eq!(Lit::f32(1.5).as_f64(), Some(1.5));
/// assert!(Lit::int(ScalarType::U32, -1).is_none()); // does not fit
/// assert_eq!(Lit::f32(2.0).to_string(), "2.0");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lit {
    ty: ScalarType,
    bits: u64,
}

impl Lit {
    /// A constant from canonical bits (bits outside the type's encoding are normalised).
    ///
    /// ```
    /// use tilekit_ir::{Lit, ScalarType};
    /// assert_eq!(Lit::from_bits(ScalarType::I32, 0xffff_ffff).as_i64(), Some(-1));
    /// ```
    pub fn from_bits(ty: ScalarType, bits: u64) -> Lit {
        Lit { ty, bits: canonical(ty, bits) }
    }

    /// An integer constant of an integer type, or `None` when `v` does not fit (or `ty` is not an
    /// integer type).
    ///
    /// ```
    /// use tilekit_ir::{Lit, ScalarType};
    /// assert_eq!(Lit::int(ScalarType::I64, 1 << 40).unwrap().as_i64(), Some(1 << 40));
    /// assert!(Lit::int(ScalarType::I32, 1 << 40).is_none());
    /// ```
    pub fn int(ty: ScalarType, v: i64) -> Option<Lit> {
        let (lo, hi) = ty.int_range()?;
        (lo..=hi).contains(&v).then(|| Lit::from_bits(ty, v as u64))
    }

    /// A predicate constant.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::Lit::pred(true).as_bool(), Some(true));
    /// ```
    pub fn pred(v: bool) -> Lit {
        Lit { ty: ScalarType::Pred, bits: v as u64 }
    }

    /// An `f32` constant.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::Lit::f32(0.25).as_f64(), Some(0.25));
    /// ```
    pub fn f32(v: f32) -> Lit {
        Lit { ty: ScalarType::F32, bits: v.to_bits() as u64 }
    }

    /// A float constant of a float type, rounded to nearest (`None` for non-float types).
    ///
    /// ```
    /// use tilekit_ir::{Lit, ScalarType};
    /// assert_eq!(Lit::float(ScalarType::F16, 0.1).unwrap().as_f64(), Some(half::f16::from_f64(0.1).to_f64()));
    /// ```
    pub fn float(ty: ScalarType, v: f64) -> Option<Lit> {
        let bits = match ty {
            ScalarType::F16 => f16::from_f64(v).to_bits() as u64,
            ScalarType::BF16 => bf16::from_f64(v).to_bits() as u64,
            ScalarType::F32 => (v as f32).to_bits() as u64,
            ScalarType::F64 => v.to_bits(),
            _ => return None,
        };
        Some(Lit { ty, bits })
    }

    /// The type.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::Lit::pred(false).ty(), tilekit_ir::ScalarType::Pred);
    /// ```
    pub fn ty(self) -> ScalarType {
        self.ty
    }

    /// The canonical bits.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::Lit::f32(1.0).bits(), 0x3f80_0000);
    /// ```
    pub fn bits(self) -> u64 {
        self.bits
    }

    /// The value of an integer constant.
    ///
    /// ```
    /// use tilekit_ir::{Lit, ScalarType};
    /// assert_eq!(Lit::int(ScalarType::U32, 7).unwrap().as_i64(), Some(7));
    /// assert_eq!(Lit::f32(7.0).as_i64(), None);
    /// ```
    pub fn as_i64(self) -> Option<i64> {
        self.ty.is_int().then_some(self.bits as i64)
    }

    /// The value of a float constant, widened to `f64`.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::Lit::f32(-2.0).as_f64(), Some(-2.0));
    /// ```
    pub fn as_f64(self) -> Option<f64> {
        Some(match self.ty {
            ScalarType::F16 => f16::from_bits(self.bits as u16).to_f64(),
            ScalarType::BF16 => bf16::from_bits(self.bits as u16).to_f64(),
            ScalarType::F32 => f32::from_bits(self.bits as u32) as f64,
            ScalarType::F64 => f64::from_bits(self.bits),
            _ => return None,
        })
    }

    /// The value of a predicate constant.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::Lit::pred(true).as_bool(), Some(true));
    /// ```
    pub fn as_bool(self) -> Option<bool> {
        (self.ty == ScalarType::Pred).then_some(self.bits != 0)
    }
}

impl fmt::Display for Lit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(b) = self.as_bool() {
            write!(f, "{b}")
        } else if let Some(i) = self.as_i64() {
            write!(f, "{i}")
        } else {
            let v = self.as_f64().unwrap_or(f64::NAN);
            write!(f, "{v:?}")
        }
    }
}

/// Normalises raw bits to the canonical encoding of `ty` (see the [module docs](self)).
///
/// ```
/// use tilekit_ir::{types::canonical, ScalarType};
/// assert_eq!(canonical(ScalarType::I32, 0x1_8000_0000), 0xffff_ffff_8000_0000);
/// assert_eq!(canonical(ScalarType::U32, u64::MAX), 0xffff_ffff);
/// assert_eq!(canonical(ScalarType::Pred, 2), 1);
/// ```
#[inline]
pub fn canonical(ty: ScalarType, bits: u64) -> u64 {
    match ty {
        ScalarType::Pred => (bits != 0) as u64,
        ScalarType::I32 => bits as u32 as i32 as i64 as u64,
        ScalarType::U32 | ScalarType::F32 => bits as u32 as u64,
        ScalarType::F16 | ScalarType::BF16 => bits as u16 as u64,
        ScalarType::I64 | ScalarType::F64 => bits,
    }
}
