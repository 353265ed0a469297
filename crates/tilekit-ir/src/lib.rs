//! # tilekit-ir
//!
//! The kernel layer of tilekit: a typed SSA IR with structured control flow, the builder that
//! kernel authors drive, the symbolic index domain that lets `tilekit-layout`'s generic index
//! math generate code, build-time passes (folding, CSE, dead code) and a CPU interpreter with
//! GPU semantics (blocks, barriers, warps, shared memory, races, out-of-bounds accesses).
//!
//! ```text
//!   kernel author ──► KernelBuilder ──(Val: Idx)──► tilekit-layout descriptors, transforms
//!                          │ fold + CSE per op
//!                          ▼
//!                       Kernel (typed SSA, regions) ──► dump (text)
//!                          │                        ──► tilekit-ptx (next layer)
//!                          ▼
//!                       interp::run(kernel, grid, args)  on host buffers
//! ```
//!
//! ```
//! use tilekit_ir::{KernelBuilder, ScalarType, Axis, interp::{self, Args, HostBuffer}};
//! use tilekit_layout::Idx;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let b = KernelBuilder::new("iota", [32, 1, 1])?;
//! let y = b.ptr_param("y", ScalarType::I32)?;
//! let i = b.block_id(Axis::X) * Idx::lit(32) + b.thread_id(Axis::X);
//! b.store(y, &i, &[i.clone()], None)?;
//! let k = b.finish()?;
//! let mut args = Args::new();
//! args.buffer(HostBuffer::from_i32(&[-1; 64]));
//! interp::run(&k, [2, 1, 1], &mut args)?;
//! assert_eq!(args.take_buffer(0).unwrap().to_i32().unwrap(), (0..64).collect::<Vec<_>>());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod asyncop;
pub mod builder;
pub mod dump;
pub mod error;
pub mod eval;
pub mod examples;
pub mod interp;
pub mod kernel;
pub mod op;
pub mod passes;
pub mod symbolic;
pub mod tensor;
pub mod tma;
pub mod types;
pub mod value;
pub mod wgmma;

pub use asyncop::AsyncOp;
pub use builder::{KernelBuilder, TensorParam};
pub use error::IrError;
pub use kernel::{
    GlobalCache, Kernel, ParamDecl, ParamKind, SharedDecl, TensorParamInfo, ValueInfo,
};
pub use op::{
    Axis, BinOp, Block, Clock, CmpOp, Inst, MemRef, MemSpace, MmaShape, Op, ShflMode, SpecialReg,
    UnOp, ValueId, VoteMode,
};
pub use tma::{OobFill, TensorMap, TensorMapArg, TensorMapSpec, TmaSwizzle};
pub use types::{Lit, ScalarType};
pub use value::{lit, Pred, Val};
pub use wgmma::WgmmaOp;
