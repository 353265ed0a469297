//! # tilekit
//!
//! CK Tile's tile-programming model in Rust. This crate gathers the layers under one name and
//! holds the `tilekit` binary and the numbered examples:
//!
//! | module | crate | what lives there |
//! |---|---|---|
//! | [`layout`] | `tilekit-layout` | index domain, coordinate transforms, adaptors, descriptors, coordinates, space-filling curves |
//! | [`tile`] | `tilekit-tile` | validated distribution encodings, tile distributions, distributed tensors, load/store traits, tensor views, tile windows, rendering (`tilekit show`) |
//! | [`ir`] | `tilekit-ir` | the kernel IR, its builder, the CPU interpreter, host tensors and layouts |
//! | [`kernel`] | `tilekit-kernel` | the kernel-author layer: views, tile windows, distributed tiles, reductions |
//! | [`ptx`] | `tilekit-ptx` | IR → PTX text (`ptx::emit_kernel(&kernel, ptx::Target::Sm90a)`: your own kernel's PTX) |
//! | [`cuda`] | `tilekit-cuda` | the CUDA runtime: devices, streams, device tensors, PTX JIT, timing |
//! | [`ops`] | `tilekit-ops` | the library's ops as functions on tensors for any backend, with their kernels |
//! | [`cli`] | `tilekit-cli` | the subcommands of the `tilekit` binary |
//!
//! ```
//! use tilekit::layout::TensorDescriptor;
//! let d = TensorDescriptor::naive(vec![4i64, 6], vec![6, 1], None).unwrap();
//! assert_eq!(d.calculate_offset(&[2, 3]).unwrap(), 15);
//! ```

pub use tilekit_cli as cli;
pub use tilekit_cuda as cuda;
pub use tilekit_ir as ir;
pub use tilekit_kernel as kernel;
pub use tilekit_layout as layout;
pub use tilekit_ops as ops;
pub use tilekit_ptx as ptx;
pub use tilekit_tile as tile;

/// The README's Rust examples run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// docs/using.md's Rust examples run as doctests.
#[doc = include_str!("../docs/using.md")]
#[cfg(doctest)]
pub struct UsingDoctests;
