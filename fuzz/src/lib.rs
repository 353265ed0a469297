//! Shared pieces of tilekit's fuzz targets (see `fuzz/README.md`).
//!
//! The targets feed arbitrary input to the public library APIs and to the CLI in-process; any
//! panic, abort, timeout or allocation over the limits of `fuzz/run.sh` is a crash. Work whose
//! size is proportional to the input by design (ownership maps, sweeps over every thread and
//! value) is only run when the input is small (see [`small_spec`]), so that a run spends its time
//! on many inputs rather than on one large one; the size caps of the commands themselves are
//! fuzzed uncapped through `cli_args`.

use arbitrary::{Arbitrary, Unstructured};
use tilekit_tile::encoding::EncodingSpec;
use tilekit_tile::encoding_text::{parse_encoding, print_encoding};
use tilekit_tile::render::{
    explain, explain_reference, explain_vector_access, ownership_map, ownership_svg, vector_access,
    Dtype, Ownership,
};
use tilekit_tile::TileDistribution;

/// The value of a call whose API returns either `T` or `Result<T, _>`: with size and rank checks
/// at the library's boundary (issue 10) calls such as `calculate_offset`, `Ownership::of` or
/// `move_coordinate` return `Result`, and `settle` lets the targets build against either form
/// (`None` for an error).
///
/// ```
/// use tilekit_fuzz::Settle;
/// assert_eq!(5i64.settle(), Some(5));
/// assert_eq!(Err::<i64, ()>(()).settle(), None);
/// ```
pub trait Settle {
    /// The value's type.
    type Out;
    /// The value, or `None` for an error.
    fn settle(self) -> Option<Self::Out>;
}

macro_rules! settle {
    ($($t:ty),*) => {$(
        impl Settle for $t {
            type Out = $t;
            fn settle(self) -> Option<$t> {
                Some(self)
            }
        }
        impl<E> Settle for Result<$t, E> {
            type Out = $t;
            fn settle(self) -> Option<$t> {
                self.ok()
            }
        }
    )*};
}

settle!((), bool, i64, String, Vec<i64>, Vec<Vec<i64>>, Ownership, tilekit_layout::Coordinate<i64>);

/// The largest number of (thread, value) pairs or tile elements for which the targets run the
/// per-element paths (ownership maps, SVG, sweeps).
pub const WORK_CAP: u128 = 1 << 12;

/// Every dtype `show` accepts.
pub const DTYPES: [Dtype; 5] = [Dtype::Fp32, Dtype::Fp16, Dtype::Bf16, Dtype::Fp8, Dtype::F64];

/// An integer biased towards the values that break index arithmetic: small lengths, zero,
/// negatives, and the edges of i32/u32/i64.
#[derive(Debug, Clone, Copy)]
pub struct Len(pub i64);

impl<'a> Arbitrary<'a> for Len {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let v = match u.int_in_range(0u8..=15)? {
            0..=8 => u.int_in_range(1i64..=8)?,
            9 => u.int_in_range(0i64..=64)?,
            10 => -u.int_in_range(0i64..=4)?,
            11 => *u.choose(&[
                i32::MAX as i64,
                i32::MAX as i64 + 1,
                u32::MAX as i64,
                1 << 32,
                3_000_000_000,
                i64::MAX,
                i64::MIN,
                i64::MAX / 2 + 1,
            ])?,
            12 => 1i64 << u.int_in_range(0u32..=62)?,
            13 => u.int_in_range(1i64..=4096)?,
            _ => i64::arbitrary(u)?,
        };
        Ok(Len(v))
    }
}

/// A vector of at most `max` arbitrary items.
pub fn short_vec<'a, T: Arbitrary<'a>>(
    u: &mut Unstructured<'a>,
    max: usize,
) -> arbitrary::Result<Vec<T>> {
    let n = u.int_in_range(0..=max)?;
    (0..n).map(|_| T::arbitrary(u)).collect()
}

/// `|x|` as u128 (never overflows).
fn abs(x: i64) -> u128 {
    x.unsigned_abs() as u128
}

/// Saturating product of `|x|` over an iterator.
fn prod(it: impl IntoIterator<Item = i64>) -> u128 {
    it.into_iter().fold(1u128, |acc, x| acc.saturating_mul(abs(x)))
}

/// Whether the per-element paths (ownership maps, sweeps) are cheap for this spec: the product of
/// every R and H length, and the product of the lengths of every component a P or Y names
/// (counted again when named twice, as an ill-formed spec may), stay below [`WORK_CAP`].
///
/// ```
/// use tilekit_fuzz::small_spec;
/// let s = tilekit_tile::encoding_text::parse_encoding("H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]").unwrap();
/// assert!(small_spec(&s));
/// let s = tilekit_tile::encoding_text::parse_encoding("H[[3000000000,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]").unwrap();
/// assert!(!small_spec(&s));
/// ```
pub fn small_spec(spec: &EncodingSpec) -> bool {
    let all = prod(spec.rs_lengths.iter().chain(spec.hs_lengthss.iter().flatten()).copied());
    let len_of = |major: i64, minor: i64| -> i64 {
        let list = if major == 0 {
            Some(&spec.rs_lengths)
        } else {
            usize::try_from(major - 1).ok().and_then(|m| spec.hs_lengthss.get(m))
        };
        list.and_then(|l| usize::try_from(minor).ok().and_then(|i| l.get(i))).copied().unwrap_or(1)
    };
    let named = spec
        .ps_to_rhss_major
        .iter()
        .flatten()
        .zip(spec.ps_to_rhss_minor.iter().flatten())
        .chain(spec.ys_to_rhs_major.iter().zip(&spec.ys_to_rhs_minor))
        .map(|(&ma, &mi)| len_of(ma, mi));
    let dims = spec.rs_lengths.len()
        + spec.hs_lengthss.iter().map(Vec::len).sum::<usize>()
        + spec.ps_to_rhss_major.iter().map(Vec::len).sum::<usize>()
        + spec.ys_to_rhs_major.len();
    all <= WORK_CAP && prod(named) <= WORK_CAP && dims <= 64
}

/// Parses `text` as an encoding; when it parses, checks that printing and parsing again gives the
/// same spec, then runs [`exercise_spec`].
pub fn exercise_text(text: &str) {
    let Ok(spec) = parse_encoding(text) else { return };
    let printed = print_encoding(&spec);
    let again = parse_encoding(&printed).unwrap_or_else(|e| {
        panic!("the printed form {printed:?} of a parsed text does not parse: {e}")
    });
    assert_eq!(again, spec, "print/parse round trip of {text:?} (printed {printed:?})");
    exercise_spec(&spec);
}

/// What `tilekit show` does with a spec, with the per-element paths only for small specs:
/// validation; for a valid distribution its explanation, traits for every dtype and (small)
/// its ownership map, SVG picture and sweep; for a refused spec (small) what the reference
/// would build from it.
pub fn exercise_spec(spec: &EncodingSpec) {
    let small = small_spec(spec);
    match TileDistribution::from_spec(spec.clone()) {
        Ok(dist) => {
            let _ = explain(&dist);
            for dtype in DTYPES {
                let _ = explain_vector_access(&vector_access(&dist, dtype));
            }
            let _ = dist.distributed_spans();
            if small {
                if let Some(own) = Ownership::of(&dist).settle() {
                    let _ = ownership_map(&own);
                    let _ = own.never_owned();
                }
                let _ = ownership_svg(&dist, Dtype::Fp16).settle();
                let sweep = dist.sweep_order().settle().unwrap_or_default();
                for y in sweep.iter().take(64) {
                    if let Some(d) = dist.ys_to_d(y).settle() {
                        assert_eq!(
                            dist.d_to_ys(d).settle().as_ref(),
                            Some(y),
                            "ys_to_d/d_to_ys of {spec:?}"
                        );
                    }
                }
            }
        }
        Err(_) => {
            if small {
                let _ = explain_reference(spec);
            }
        }
    }
}
