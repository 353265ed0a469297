//! # tilekit-kernel: the documented way to write tilekit kernels
//!
//! A kernel is Rust code that *builds* a GPU kernel: it runs once on the host, calls the IR
//! builder ([`tilekit_ir::KernelBuilder`]) and this crate, and produces a
//! [`tilekit_ir::Kernel`] that the CPU interpreter runs and the PTX backend compiles. Nothing
//! in it is index arithmetic written by hand: which thread touches which element comes from a
//! **tile distribution**, an encoding of how a tile is split over threads and registers, and
//! every address from the layout algebra of `tilekit-layout` evaluated over the builder's
//! symbolic values.
//!
//! What a kernel author writes:
//!
//! 1. a [`KernelBuilder`](tilekit_ir::KernelBuilder) with the block size (`[256, 1, 1]`);
//! 2. **tensor parameters** (`b.tensor_param("x", F32, 2)`): a pointer plus runtime lengths
//!    and strides, bound by name at launch;
//! 3. **views** over them ([`View::global`], [`View::pad`], [`View::freeze`],
//!    [`View::permute`], [`View::unsqueeze`], or shared memory with [`View::shared`]);
//! 4. **windows** ([`Window::new`]): a tile of fixed lengths placed on a view at a runtime
//!    origin, read and written through a distribution ([`dist`] has the common ones, or build
//!    one from an [`EncodingSpec`](tilekit_tile::encoding::EncodingSpec));
//! 5. **distributed tiles of registers** ([`DTile`]): what a window load gives, worked on
//!    element by element ([`DTile::map`], [`DTile::zip_map`], [`DTile::cast`]) and stored
//!    through a window of the same distribution;
//! 6. **loops and reductions**: [`for_range`] over chunks of a row, [`if_then_else`] for a
//!    uniform choice between two loops, [`DTile::reduce_thread`] inside a thread
//!    ([`DTile::reduce_thread_f32`]: a 16-bit max or min on packed pairs of raw elements),
//!    [`warp_reduce`] over a warp, [`block_reduce`] over the block ([`block_reduce_at`]: one
//!    barrier, for a scratch region used once).
//! 7. **rings** of shared-memory stages for asynchronous copies ([`ring::Ring`]: full/empty
//!    mbarriers, producer and consumer roles; [`ring::PipelineState`]: the stage and phase a
//!    loop iteration uses), and literals as [`lit`]`(64)`.
//!
//! What the GPU runs per element is what a memory-bound kernel is made of, so the layer keeps
//! it small: a [`Window::load_or`] with a constant fill writes the fill into the registers
//! before the predicated load (no select per element), and 16-bit data stays packed until an
//! element needs f32 arithmetic.
//!
//! ```text
//!   encoding  H[[1,1],[4,256,4]] P[[X0.1,X1.1]] Y[X0.0,X1.0,X1.2]    (tilekit show draws it)
//!      │ dist::from_text(…) = dist::row_major(1, 4096, 256, 4): 256 threads, 4 vectors each
//!      ▼
//!   distribution   thread t, element d  ──calculate_x──►  (row, column) in the tile
//!      │ Window::new(view, [1, 4096], origin [row, c0], distribution)
//!      ▼
//!   window         per thread: one vector access per 4 elements, offset + validity
//!      │ load / load_or(fill)                (elements past the view's end: fill, or 0)
//!      ▼
//!   registers      DTile { regs[d] }  ── map / zip_map / cast / reduce_thread ──►
//!      │                               warp_reduce / block_reduce (shuffles, shared memory)
//!      ▼ store through a window of the same distribution (masked where invalid)
//!   memory
//! ```
//!
//! The kernel is then launched through `tilekit-ops`' public API
//! (`compiled::cached` → `bind::Bindings` → `Backend::launch` on the interpreter or a CUDA
//! stream); `docs/write-your-own-kernel.md` walks through it, and the repository's
//! `examples/layernorm.rs` and `examples/row_argmax.rs` are complete kernels written this way.
//!
//! ## A worked example: the L2 norm of every row
//!
//! One block of 64 threads per row; the row is read in chunks of 256 elements (64 threads ×
//! one 4-element vector), squared, summed per thread across chunks, summed over the block,
//! and thread 0 stores `sqrt` of the sum. Rows of any length work: the view is padded to a
//! multiple of the chunk and padding reads as zero. Run here on the interpreter directly
//! (`tilekit-ops`' `Interp` backend does the same with tensors and checked bindings):
//!
//! ```
//! use tilekit_ir::interp::{self, Args, HostBuffer};
//! use tilekit_ir::{Axis, BinOp, CmpOp, KernelBuilder, ScalarType, UnOp, Val};
//! use tilekit_kernel::{block_reduce, dist, for_range, Idx, KernelError, View, Window};
//!
//! fn row_norm() -> Result<tilekit_ir::Kernel, KernelError> {
//!     const THREADS: u32 = 64;
//!     let chunk = THREADS as i64 * 4;
//!     let b = KernelBuilder::new("row_norm", [THREADS, 1, 1])?;
//!     let x = b.tensor_param("x", ScalarType::F32, 2)?; // [rows, n]
//!     let y = b.tensor_param("y", ScalarType::F32, 1)?; // [rows]
//!     let scratch = b.shared("partial", ScalarType::F32, THREADS as usize / 32)?;
//!     let d = dist::row_major(1, chunk, THREADS as i64, 4)?;
//!     let row = b.block_id(Axis::X);
//!     let xv = View::global(&x, 4)?.pad(&[1, chunk])?;
//!     let n_pad = (x.lengths[1].clone() + Val::lit(chunk - 1)) / Val::lit(chunk) * Val::lit(chunk);
//!     let acc = for_range(&b, &Val::lit(0), &n_pad, &Val::lit(chunk), &[b.f32(0.0)], |b, c0, acc| {
//!         let t = Window::new(b, &xv, &[1, chunk], &[row.clone(), c0], &d)?.load(b)?;
//!         let sq = t.map(b, |b, v| Ok(b.binary(BinOp::Mul, v, v)?))?;
//!         Ok(vec![b.binary(BinOp::Add, &acc[0], &sq.reduce_thread(b, BinOp::Add)?)?])
//!     })?;
//!     let total = block_reduce(&b, &acc[0], BinOp::Add, scratch)?;
//!     let norm = b.unary(UnOp::Sqrt, &total)?;
//!     let first = b.cmp(CmpOp::Eq, &b.thread_id(Axis::X), &Val::lit(0))?;
//!     let off = y.descriptor(None)?.calculate_offset(std::slice::from_ref(&row))?;
//!     b.store(y.mem, &off, &[norm], Some(&first))?;
//!     Ok(b.finish()?)
//! }
//!
//! let (rows, n) = (3usize, 300usize);
//! let xs: Vec<f32> = (0..rows * n).map(|i| ((i * 7919) % 13) as f32 - 6.0).collect();
//! let mut args = Args::new();
//! args.tensor(HostBuffer::from_f32(&xs), &[rows as i64, n as i64], &[n as i64, 1]);
//! args.tensor(HostBuffer::from_f32(&vec![f32::NAN; rows]), &[rows as i64], &[1]);
//! interp::run(&row_norm().unwrap(), [rows as u32, 1, 1], &mut args).unwrap();
//! let got = args.get_buffer(5).unwrap().to_f32().unwrap(); // x: 5 slots (ptr, 2 lengths, 2 strides)
//! for r in 0..rows {
//!     let want = xs[r * n..(r + 1) * n].iter().map(|&v| (v as f64).powi(2)).sum::<f64>().sqrt();
//!     assert!((got[r] as f64 - want).abs() <= 1e-5 * want, "row {r}: {} vs {want}", got[r]);
//! }
//! ```
#![deny(missing_docs)]

pub mod dist;
pub mod error;
pub mod probe;
pub mod ring;
pub mod tile;

pub use error::{KernelError, Result};
pub use tile::{
    block_reduce, block_reduce_at, for_range, if_then_else, p_index, tree_reduce, warp_reduce,
    DTile, View, Window,
};
/// The untyped integer literal (`Idx::lit` for [`tilekit_ir::Val`]): `lit(64)`.
pub use tilekit_ir::lit;
/// The index trait of the layout algebra: brings `Val::lit` and the index arithmetic of
/// [`tilekit_ir::Val`] into scope (`use tilekit_kernel::Idx;`).
pub use tilekit_layout::Idx;
/// A tile distribution (built by [`dist`]'s helpers, [`dist::from_text`], or
/// `TileDistribution::from_spec`).
pub use tilekit_tile::TileDistribution;
