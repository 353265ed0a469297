//! # tilekit-layout
//!
//! CK Tile's layout algebra in Rust: the index domain ([`Idx`]), coordinate transforms
//! ([`Transform`]), tensor adaptors and descriptors over hidden dimension ids, coordinates with
//! incremental moves, guaranteed vector length/stride propagation, and space-filling curves.
//! Everything is written once, generic over the index domain, so the same code evaluates on
//! `i64` (tests, conformance, analyses) and generates GPU code on the IR's symbolic values.
//!
//! The semantics follow the reference (CK Tile, see `shared/ck_tile/SEMANTICS.md` §1–§7) number
//! for number, except where tilekit deliberately goes further: `left_pad` and `modulo` work, and
//! space-filling curves accept non-divisible lengths.
//!
//! # Sizes and ranks
//!
//! Every length product, element count, index range and stride product a constructor implies
//! is computed with overflow checks (when the values are known now, i.e. always on `i64`):
//! one that does not fit in `i64` is a [`LayoutError::Overflow`] naming the quantity and the
//! values, so evaluating an index that stays inside the lengths of every stage it passes
//! through cannot overflow (a pad can send a top index of its upper length outside the length
//! below it: such an index is invalid, [`TensorDescriptor::is_valid`] says so, and its offset is
//! not meaningful). Functions that take an index, a step or a coordinate check that it has one entry
//! per dimension (a [`LayoutError::CountMismatch`] otherwise) and have an `_unchecked` twin
//! for hot loops that checked once (see [`coordinate`]).
//!
//! ```
//! use tilekit_layout::{LayoutError, TensorDescriptor};
//! let d = TensorDescriptor::naive(vec![4i64, 6], vec![6, 1], None).unwrap();
//! assert!(matches!(d.calculate_offset(&[1]), Err(LayoutError::CountMismatch { .. })));
//! assert!(matches!(
//!     TensorDescriptor::packed(vec![1i64 << 32, 1 << 32], None),
//!     Err(LayoutError::Overflow { .. })
//! ));
//! ```
#![deny(missing_docs)]

pub mod adaptor;
pub mod coordinate;
pub mod descriptor;
pub mod error;
pub mod idx;
pub mod morton;
pub(crate) mod reach;
pub mod sfc;
pub mod swizzle;
pub mod transform;

pub use adaptor::TensorAdaptor;
pub use coordinate::Coordinate;
pub use descriptor::TensorDescriptor;
pub use error::{LayoutError, Result};
pub use idx::{Idx, IdxBool};
pub use sfc::SpaceFillingCurve;
pub use transform::Transform;
