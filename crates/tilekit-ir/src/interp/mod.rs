//! The CPU interpreter: runs a kernel over a grid on host buffers with GPU semantics.
//!
//! ```text
//!   run(kernel, grid, args)
//!     check args against params
//!     blocks in parallel (rayon) ──► each: BlockExec (crate::interp::exec)
//!        threads of the block in lockstep, warps of 32 for shuffles/votes/mma (warp)
//!        shared memory + race detection, global reads + own-writes overlay (memory)
//!     ──► logs of global writes applied in block order (cross-block conflicts reported)
//! ```
//!
//! Errors are typed ([`InterpError`]) and name the instruction (its dump text), the memory and
//! address, and the block and thread(s). When several blocks fail, the lowest block's error is
//! reported, so runs are deterministic. Not modelled: atomics, cross-block reads of another
//! block's writes (blocks only see their own), memory-ordering subtleties beyond barriers.
//!
//! Rayon is used for parallelism over blocks: blocks are independent by the CUDA model, so a
//! work-stealing `par_iter` is the natural fit, and it keeps large grids usable on a laptop.
//!
//! ```
//! use tilekit_ir::{KernelBuilder, ScalarType, Axis, interp::{run, Args, HostBuffer, InterpError}};
//! use tilekit_layout::Idx;
//! let b = KernelBuilder::new("oob", [32, 1, 1]).unwrap();
//! let y = b.ptr_param("y", ScalarType::F32).unwrap();
//! b.store(y, &(b.thread_id(Axis::X) + Idx::lit(1)), &[b.f32(1.0)], None).unwrap();
//! let k = b.finish().unwrap();
//! let mut args = Args::new();
//! args.buffer(HostBuffer::from_f32(&[0.0; 32]));
//! let e = run(&k, [1, 1, 1], &mut args).unwrap_err();
//! assert!(matches!(e, InterpError::OutOfBounds { element: 32, .. }));
//! ```

pub mod error;
mod exec;
pub mod memory;
pub mod warp;

use std::collections::HashMap;

use rayon::prelude::*;

pub use error::{Access, InterpError};
pub use memory::HostBuffer;

use crate::kernel::{Kernel, ParamKind};
use crate::op::Inst;
use crate::types::Lit;
use exec::BlockExec;
use memory::{GlobalView, SharedMem};

/// What one block leaves behind: its global write log `(param, element, bits)` and its
/// instruction count.
type BlockOutcome = (Vec<(u32, usize, u64)>, u64);

/// A launch argument.
///
/// ```
/// use tilekit_ir::interp::{Arg, HostBuffer};
/// let a = Arg::Int(5);
/// assert!(matches!(a, Arg::Int(5)));
/// let _ = Arg::Buffer(HostBuffer::from_f32(&[1.0]));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A global buffer, for a pointer parameter of its element type.
    Buffer(HostBuffer),
    /// A typed scalar, for a scalar parameter of exactly its type.
    Scalar(Lit),
    /// An integer for any integer scalar parameter it fits.
    Int(i64),
}

/// Launch arguments, in parameter order.
///
/// ```
/// use tilekit_ir::interp::{Args, HostBuffer};
/// let mut a = Args::new();
/// a.tensor(HostBuffer::from_f32(&[0.0; 6]), &[2, 3], &[3, 1]).int(7);
/// assert_eq!(a.len(), 6);
/// assert!(a.take_buffer(0).is_some());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Args {
    items: Vec<Arg>,
}

impl Args {
    /// No arguments.
    ///
    /// ```
    /// assert!(tilekit_ir::interp::Args::new().is_empty());
    /// ```
    pub fn new() -> Args {
        Args::default()
    }

    /// Appends a buffer.
    ///
    /// ```
    /// # use tilekit_ir::interp::{Args, HostBuffer};
    /// assert_eq!(Args::new().buffer(HostBuffer::from_u32(&[1])).len(), 1);
    /// ```
    pub fn buffer(&mut self, b: HostBuffer) -> &mut Self {
        self.items.push(Arg::Buffer(b));
        self
    }

    /// Appends an integer (for any integer parameter it fits).
    ///
    /// ```
    /// assert_eq!(tilekit_ir::interp::Args::new().int(3).len(), 1);
    /// ```
    pub fn int(&mut self, v: i64) -> &mut Self {
        self.items.push(Arg::Int(v));
        self
    }

    /// Appends a typed scalar.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::interp::Args::new().scalar(tilekit_ir::Lit::f32(1.0)).len(), 1);
    /// ```
    pub fn scalar(&mut self, v: Lit) -> &mut Self {
        self.items.push(Arg::Scalar(v));
        self
    }

    /// Appends the arguments of a [`crate::TensorParam`]: the buffer, the lengths, the strides.
    ///
    /// ```
    /// # use tilekit_ir::interp::{Args, HostBuffer};
    /// assert_eq!(Args::new().tensor(HostBuffer::from_u32(&[1]), &[1], &[1]).len(), 3);
    /// ```
    pub fn tensor(&mut self, b: HostBuffer, lengths: &[i64], strides: &[i64]) -> &mut Self {
        self.buffer(b);
        for &l in lengths {
            self.int(l);
        }
        for &s in strides {
            self.int(s);
        }
        self
    }

    /// Number of arguments.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::interp::Args::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// No arguments.
    ///
    /// ```
    /// assert!(tilekit_ir::interp::Args::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Takes the buffer at argument position `i` (after a run: the kernel's output), leaving an
    /// empty buffer of the same type.
    ///
    /// ```
    /// # use tilekit_ir::interp::{Args, HostBuffer};
    /// let mut a = Args::new();
    /// a.int(1);
    /// assert!(a.take_buffer(0).is_none());
    /// ```
    pub fn take_buffer(&mut self, i: usize) -> Option<HostBuffer> {
        match self.items.get_mut(i)? {
            Arg::Buffer(b) => {
                let empty = HostBuffer::zeroed(b.elem(), 0);
                Some(std::mem::replace(b, empty))
            }
            _ => None,
        }
    }

    /// The buffer at position `i`.
    ///
    /// ```
    /// # use tilekit_ir::interp::{Args, HostBuffer};
    /// let mut a = Args::new();
    /// a.buffer(HostBuffer::from_u32(&[4]));
    /// assert_eq!(a.get_buffer(0).unwrap().to_u32(), Some(vec![4]));
    /// ```
    pub fn get_buffer(&self, i: usize) -> Option<&HostBuffer> {
        match self.items.get(i)? {
            Arg::Buffer(b) => Some(b),
            _ => None,
        }
    }
}

/// What a run did.
///
/// ```
/// let s = tilekit_ir::interp::RunStats { blocks: 2, block_instructions: 10 };
/// assert_eq!(s.blocks, 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunStats {
    /// Blocks run.
    pub blocks: u64,
    /// Instructions executed, counted once per block (all threads together).
    pub block_instructions: u64,
}

fn check_args(k: &Kernel, args: &Args) -> Result<Vec<u64>, InterpError> {
    if args.len() != k.params.len() {
        return Err(InterpError::ArgCount {
            kernel: k.name.clone(),
            expected: k.params.len(),
            got: args.len(),
        });
    }
    let mut scalars = vec![0u64; k.params.len()];
    for (i, (p, a)) in k.params.iter().zip(&args.items).enumerate() {
        let mismatch = |got: String| InterpError::ArgMismatch {
            index: i,
            name: p.name.clone(),
            expected: p.kind.to_string(),
            got,
        };
        match (p.kind, a) {
            (ParamKind::GlobalPtr(t), Arg::Buffer(b)) if b.elem() == t => {}
            (ParamKind::Scalar(t), Arg::Scalar(l)) if l.ty() == t => scalars[i] = l.bits(),
            (ParamKind::Scalar(t), Arg::Int(v)) if t.is_int() => match Lit::int(t, *v) {
                Some(l) => scalars[i] = l.bits(),
                None => return Err(mismatch(format!("{v}, which does not fit {t}"))),
            },
            (_, Arg::Buffer(b)) => return Err(mismatch(format!("a buffer of {}", b.elem()))),
            (_, Arg::Scalar(l)) => return Err(mismatch(format!("a scalar {}", l.ty()))),
            (_, Arg::Int(v)) => return Err(mismatch(format!("the integer {v}"))),
        }
    }
    Ok(scalars)
}

/// Runs `kernel` over `grid` blocks; buffers in `args` are updated in place.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType, interp::{run, Args, HostBuffer}};
/// let k = KernelBuilder::new("k", [32, 1, 1]).unwrap().finish().unwrap();
/// let e = run(&k, [1, 1, 1], &mut Args::new().int(1).clone()).unwrap_err();
/// assert_eq!(e.to_string(), "kernel k takes 0 arguments, got 1");
/// ```
pub fn run(kernel: &Kernel, grid: [u32; 3], args: &mut Args) -> Result<RunStats, InterpError> {
    if grid.contains(&0) {
        return Err(InterpError::Grid { grid });
    }
    let scalars = check_args(kernel, args)?;
    let mut insts: Vec<&Inst> = vec![];
    kernel.body.walk(&mut |i| insts.push(i));
    let inst_ids: HashMap<usize, u32> =
        insts.iter().enumerate().map(|(n, i)| (*i as *const Inst as usize, n as u32)).collect();
    let buffers: Vec<Option<&HostBuffer>> = args
        .items
        .iter()
        .map(|a| match a {
            Arg::Buffer(b) => Some(b),
            _ => None,
        })
        .collect();
    let [gx, gy, gz] = grid.map(|g| g as u64);
    let nblocks = gx * gy * gz;
    let n = kernel.threads_per_block();
    let block_of = |b: u64| [(b % gx) as u32, ((b / gx) % gy) as u32, (b / (gx * gy)) as u32];
    let results: Vec<Result<BlockOutcome, InterpError>> = (0..nblocks)
        .into_par_iter()
        .map(|b| {
            let mut ex = BlockExec {
                k: kernel,
                n,
                block: block_of(b),
                grid,
                regs: vec![0; kernel.values.len() * n],
                poison: vec![true; kernel.values.len() * n],
                scalars: &scalars,
                shared: kernel.shared.iter().map(|s| SharedMem::new(s.elem, s.len)).collect(),
                global: GlobalView::new(&buffers),
                epoch: 1,
                inst_ids: &inst_ids,
                insts: &insts,
                steps: 0,
            };
            ex.run_block(&kernel.body, &vec![true; n])?;
            Ok((std::mem::take(&mut ex.global.log), ex.steps))
        })
        .collect();
    let mut logs = Vec::with_capacity(results.len());
    for r in results {
        logs.push(r?);
    }
    // apply in block order; report elements written by two blocks
    let mut writer: HashMap<(u32, usize), u64> = HashMap::new();
    let mut stats = RunStats { blocks: nblocks, block_instructions: 0 };
    let mut updates: Vec<(u32, usize, u64)> = vec![];
    for (b, (log, steps)) in logs.into_iter().enumerate() {
        stats.block_instructions += steps;
        for (p, i, bits) in log {
            let w = *writer.entry((p, i)).or_insert(b as u64);
            if w != b as u64 {
                return Err(InterpError::GlobalWriteConflict {
                    mem: kernel.params[p as usize].name.clone(),
                    element: i,
                    first: block_of(w),
                    second: block_of(b as u64),
                });
            }
            updates.push((p, i, bits));
        }
    }
    for (p, i, bits) in updates {
        if let Some(Arg::Buffer(buf)) = args.items.get_mut(p as usize) {
            buf.set_bits(i, bits);
        }
    }
    Ok(stats)
}
