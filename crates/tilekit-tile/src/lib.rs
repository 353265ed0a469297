//! # tilekit-tile
//!
//! The tile layer of tilekit (see `shared/DESIGN.md`): validated distribution encodings, tile
//! distributions, distributed tensors, load/store traits, tensor views and tile windows, text
//! and SVG rendering — and the memory-access analyses that judge a layout before any kernel
//! runs. Everything here evaluates on plain integers; nothing touches a GPU.
//!
//! So far the crate holds the analyses:
//!
//! * [`analysis::banks`] — NVIDIA shared-memory bank conflicts of one warp request;
//! * [`analysis::cache`] — 128-byte lines and 32-byte sectors touched by warp requests and
//!   traversals, and locality statistics of an access sequence.
//!
//! ```
//! use tilekit_tile::analysis::{banks, WarpAccess};
//! // 32 lanes read column 0 of a row-major 32×32 fp32 tile: every lane hits bank 0.
//! let column = WarpAccess::from_offsets(4, 1, |lane| Some(lane as i64 * 32)).unwrap();
//! assert_eq!(banks::analyze(&column).unwrap().transactions, 32);
//! ```
#![deny(missing_docs)]

pub mod analysis;
pub mod error;

pub use error::{Result, TileError};
