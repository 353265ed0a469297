//! # tilekit
//!
//! CK Tile's tile-programming model in Rust. This crate gathers the layers under one name and
//! holds the `tilekit` binary and the numbered examples:
//!
//! | module | crate | what lives there |
//! |---|---|---|
//! | [`layout`] | `tilekit-layout` | index domain, coordinate transforms, adaptors, descriptors, coordinates, space-filling curves |
//! | [`tile`] | `tilekit-tile` | validated distribution encodings, tile distributions, distributed tensors, load/store traits, tensor views, tile windows, rendering (`tilekit show`) |
//! | [`cli`] | `tilekit-cli` | the subcommands of the `tilekit` binary |
//!
//! ```
//! use tilekit::layout::TensorDescriptor;
//! let d = TensorDescriptor::naive(vec![4i64, 6], vec![6, 1], None).unwrap();
//! assert_eq!(d.calculate_offset(&[2, 3]).unwrap(), 15);
//! ```

pub use tilekit_cli as cli;
pub use tilekit_layout as layout;
pub use tilekit_tile as tile;

/// The README's Rust examples run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
