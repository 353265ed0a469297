//! # tilekit-tile
//!
//! The tile layer of tilekit (see `shared/DESIGN.md`): validated distribution encodings, tile
//! distributions, distributed tensors, load/store traits, tensor views and tile windows, text
//! and SVG rendering — and the memory-access analyses that judge a layout before any kernel
//! runs. Index math is generic over the index domain of tilekit-layout; nothing touches a GPU.
//!
//! ```
//! use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
//! let d = TileDistribution::from_spec(EncodingSpec {
//!     rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
//!     ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]],
//!     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1],
//! }).unwrap();
//! assert_eq!(d.x_lengths(), vec![4, 16]);
//! ```
#![deny(missing_docs)]

pub mod analysis;
pub mod distributed_tensor;
pub mod distribution;
pub mod encoding;
pub mod encoding_text;
pub mod error;
pub mod render;
pub mod svg;
pub mod traits;
pub mod view;
pub mod window;

pub use distributed_tensor::StaticDistributedTensor;
pub use distribution::TileDistribution;
pub use encoding::TileDistributionEncoding;
pub use error::{Result, TileError};
pub use traits::LoadStoreTraits;
pub use window::TileWindow;
