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
#![deny(missing_docs)]

pub mod adaptor;
pub mod coordinate;
pub mod descriptor;
pub mod error;
pub mod idx;
pub mod morton;
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
