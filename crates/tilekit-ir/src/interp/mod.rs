//! The CPU interpreter: runs a kernel over a grid on host buffers with GPU semantics.
//!
//! ```text
//!   run(kernel, grid, args)
//!     check the kernel's structure and the args against its params
//!     move the buffers out of args (no copies): stored-to buffers behind a lock + access map
//!     blocks in parallel (rayon; one executor per worker, reused) ──► each: BlockExec (exec)
//!        threads of the block in lockstep, warps of 32 for shuffles/votes/mma (warp)
//!        — or, for warp-specialised kernels (named barriers, mbarrier waits inside an `if`),
//!        one warp at a time until it blocks, deadlocks named (exec/warps)
//!        shared memory + race detection (memory)
//!        global loads/stores straight on the buffers + race detection (global)
//!     lowest failing block's error, else the lowest cross-block race (named by a re-run)
//!     buffers back into args
//! ```
//!
//! Memory: the buffers themselves, plus 2 bits per element of each buffer the kernel stores
//! to (only when the grid has more than one block), plus per worker one block's registers,
//! shared memory and access records (see [`global`] for why that bounds race detection).
//!
//! Errors are typed ([`InterpError`]) and name the instruction (its dump text), the memory and
//! address, and the block and thread(s). When several blocks fail, the lowest block's error is
//! reported, so runs are deterministic (blocks above a failed one may be skipped); after an
//! error the buffers hold what the blocks stored before it. Global-memory races — two threads
//! of a block in one barrier interval, or two blocks, touching one element with at least one
//! write — are errors ([`InterpError::GlobalRace`]): so a block never depends on another
//! block's stores, and the result does not depend on the order blocks ran in. Not modelled:
//! atomics (the IR has none), memory-ordering subtleties beyond barriers.
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
pub mod global;
pub mod memory;
mod validate;
pub mod warp;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use rayon::prelude::*;

pub use crate::tensor::HostTensor;
pub use error::{Access, AsyncBug, BlockedWarp, GlobalAccess, InterpError};
pub use memory::HostBuffer;

use crate::kernel::{Kernel, ParamKind};
use crate::types::Lit;
use exec::{BlockExec, Hit, Prog};
use global::{AccessMap, Global};

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
    /// The dims and strides of a tensor-map parameter (its memory is the buffer of the
    /// pointer parameter the map views; see [`crate::tma`]).
    TensorMap(crate::tma::TensorMapArg),
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

    /// The arguments, in parameter order.
    ///
    /// ```
    /// use tilekit_ir::interp::{Args, Arg};
    /// let mut a = Args::new();
    /// a.int(3);
    /// assert!(matches!(a.items()[0], Arg::Int(3)));
    /// ```
    pub fn items(&self) -> &[Arg] {
        &self.items
    }

    /// Replaces argument `i` with a buffer (how another backend hands results back); false if
    /// there is no argument `i`.
    ///
    /// ```
    /// use tilekit_ir::interp::{Args, HostBuffer};
    /// let mut a = Args::new();
    /// a.buffer(HostBuffer::from_f32(&[0.0]));
    /// assert!(a.set_buffer(0, HostBuffer::from_f32(&[1.0])));
    /// assert_eq!(a.get_buffer(0).unwrap().to_f32(), Some(vec![1.0]));
    /// assert!(!a.set_buffer(5, HostBuffer::from_f32(&[1.0])));
    /// ```
    pub fn set_buffer(&mut self, i: usize, b: HostBuffer) -> bool {
        match self.items.get_mut(i) {
            Some(slot) => {
                *slot = Arg::Buffer(b);
                true
            }
            None => false,
        }
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

    /// Appends a tensor-map argument.
    ///
    /// ```
    /// use tilekit_ir::{interp::Args, tma::TensorMapArg};
    /// assert_eq!(Args::new().tensor_map(TensorMapArg::packed(&[8, 4], 4)).len(), 1);
    /// ```
    pub fn tensor_map(&mut self, m: crate::tma::TensorMapArg) -> &mut Self {
        self.items.push(Arg::TensorMap(m));
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
    /// Instructions executed, counted once per block (all threads together) — or, for kernels
    /// under the independent warp schedule, once per warp, polls of a blocked wait included.
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
            (ParamKind::TensorMap { spec, global }, Arg::TensorMap(m)) => {
                let len = match args.items.get(global as usize) {
                    Some(Arg::Buffer(b)) => b.len(),
                    _ => {
                        return Err(mismatch("a map over a parameter that is not a buffer".into()))
                    }
                };
                crate::tma::check_fits(&spec, m, len).map_err(|source| InterpError::TensorMap {
                    index: i,
                    name: p.name.clone(),
                    source,
                })?;
            }
            (_, Arg::TensorMap(m)) => {
                return Err(mismatch(format!("a tensor map of dims {:?}", m.dims())))
            }
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
    run_scheduled(kernel, grid, args, Schedule::Auto)
}

/// How the threads of a block are scheduled (see the `exec` module's essay).
///
/// ```
/// use tilekit_ir::interp::Schedule;
/// assert_eq!(Schedule::default(), Schedule::Auto);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// The independent warp schedule for kernels that need it (a named barrier, or an
    /// mbarrier wait inside an `if`), lockstep for the others: what [`run`] does.
    #[default]
    Auto,
    /// Every thread of a block in lockstep (fast). A kernel with a named barrier cannot run
    /// so ([`InterpError::InvalidKernel`]); one whose warps wait on each other deadlocks with
    /// advice ([`AsyncBug::Deadlock`]).
    Lockstep,
    /// One warp at a time, each until it blocks: any kernel, also to check that a kernel
    /// written for lockstep-looking code does not depend on warps running together.
    Warps,
}

/// [`run`] with a chosen [`Schedule`].
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType, Axis, interp::{run_scheduled, Args, HostBuffer, Schedule}};
/// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
/// let y = b.ptr_param("y", ScalarType::I32).unwrap();
/// let t = b.thread_id(Axis::X);
/// b.store(y, &t, &[t.clone()], None).unwrap();
/// let k = b.finish().unwrap();
/// let mut a = Args::new();
/// a.buffer(HostBuffer::from_i32(&[-1; 64]));
/// run_scheduled(&k, [1, 1, 1], &mut a, Schedule::Warps).unwrap();
/// assert_eq!(a.take_buffer(0).unwrap().to_i32().unwrap()[63], 63);
/// ```
pub fn run_scheduled(
    kernel: &Kernel,
    grid: [u32; 3],
    args: &mut Args,
    schedule: Schedule,
) -> Result<RunStats, InterpError> {
    if grid.contains(&0) {
        return Err(InterpError::Grid { grid });
    }
    validate::kernel(kernel)?;
    if grid.iter().zip(kernel.cluster_dim).any(|(&g, c)| g % c != 0) {
        return Err(InterpError::ClusterGrid { grid, cluster: kernel.cluster_dim });
    }
    let mut waits = false;
    kernel.body.walk(&mut |i| waits |= matches!(i.op, crate::op::Op::WaitAcquire { .. }));
    if waits && kernel.cluster_size() > 1 {
        return Err(InterpError::InvalidKernel {
            kernel: kernel.name.clone(),
            reason: format!(
                "blocks that wait on global counters run as one unit of the whole grid, which \
                 does not combine with clusters (cluster dims {:?}; valid: [1, 1, 1])",
                kernel.cluster_dim
            ),
        });
    }
    let scalars = check_args(kernel, args)?;
    let stored = validate::stored_params(kernel);
    let nblocks = grid
        .iter()
        .try_fold(1u64, |n, &g| n.checked_mul(g as u64))
        .ok_or(InterpError::GridTooLarge { grid })?;
    // the cross-block maps first: nothing has been moved out of `args` if one cannot be made
    let mut maps: Vec<Option<AccessMap>> = Vec::with_capacity(args.len());
    for (i, a) in args.items.iter().enumerate() {
        let map = match a {
            Arg::Buffer(b) if stored[i] && nblocks > 1 => {
                Some(AccessMap::new(b.len()).ok_or_else(|| InterpError::HostAlloc {
                    elem: b.elem(),
                    len: b.len(),
                    reason: format!(
                        "its race-detection map ({} bytes) cannot be allocated",
                        AccessMap::bytes_for(b.len())
                    ),
                })?)
            }
            _ => None,
        };
        maps.push(map);
    }
    let globals: Vec<Global> = args
        .items
        .iter_mut()
        .zip(maps)
        .enumerate()
        .map(|(i, (a, map))| match a {
            Arg::Buffer(b) => {
                let buf = std::mem::replace(b, HostBuffer::zeroed(b.elem(), 0));
                if stored[i] {
                    Global::Written(RwLock::new(buf), map)
                } else {
                    Global::ReadOnly(buf)
                }
            }
            _ => Global::Scalar,
        })
        .collect();
    let maps: Vec<Option<crate::tma::TensorMapArg>> = args
        .items
        .iter()
        .map(|a| match a {
            Arg::TensorMap(m) => Some(m.clone()),
            _ => None,
        })
        .collect();
    let result = execute(kernel, grid, scalars, maps, &globals, schedule);
    for (i, g) in globals.into_iter().enumerate() {
        if let Some(b) = g.into_buffer() {
            args.items[i] = Arg::Buffer(b);
        }
    }
    result
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn execute(
    kernel: &Kernel,
    grid: [u32; 3],
    scalars: Vec<u64>,
    maps: Vec<Option<crate::tma::TensorMapArg>>,
    globals: &[Global],
    schedule: Schedule,
) -> Result<RunStats, InterpError> {
    let mut prog = Prog::new(kernel, grid, scalars, globals, schedule);
    prog.maps = maps;
    // the unit of execution is a cluster (one block without clusters), named by its first block
    let c = prog.unit;
    let [gx, gy, gz] = [0, 1, 2].map(|a| (grid[a] / c[a]) as u64);
    let nblocks = grid.iter().map(|&g| g as u64).product::<u64>();
    let nunits = gx * gy * gz;
    let block_of = |b: u64| {
        [(b % gx) as u32 * c[0], ((b / gx) % gy) as u32 * c[1], (b / (gx * gy)) as u32 * c[2]]
    };
    let first_error: Mutex<Option<(u64, InterpError)>> = Mutex::new(None);
    let min_failed = AtomicU64::new(u64::MAX);
    let steps = AtomicU64::new(0);
    let race: Mutex<Option<(u32, u64)>> = Mutex::new(None);
    (0..nunits).into_par_iter().for_each_init(
        || BlockExec::new(&prog),
        |ex, b| {
            if b > min_failed.load(Ordering::Relaxed) {
                return;
            }
            match ex.run(block_of(b)) {
                Ok(found) => {
                    steps.fetch_add(ex.steps, Ordering::Relaxed);
                    if let Some(f) = found {
                        let mut g = lock(&race);
                        if g.is_none_or(|x| f < x) {
                            *g = Some(f);
                        }
                    }
                }
                Err(e) => {
                    let mut g = lock(&first_error);
                    if g.as_ref().is_none_or(|(fb, _)| b < *fb) {
                        *g = Some((b, e));
                    }
                    min_failed.fetch_min(b, Ordering::Relaxed);
                }
            }
        },
    );
    if let Some((_, e)) = lock(&first_error).take() {
        return Err(e);
    }
    if let Some((param, element)) = lock(&race).take() {
        return Err(attribute(&prog, nunits, &block_of, param, element));
    }
    Ok(RunStats { blocks: nblocks, block_instructions: steps.load(Ordering::Relaxed) })
}

/// One unit's (block's or cluster's) accesses to the probed element: the unit, the hits, and
/// each hit's (block, thread).
type UnitHits = (u64, Vec<Hit>, Vec<([u32; 3], [u32; 3])>);

/// Names both sides of a cross-block race on `(param, element)`: re-runs every block (cluster) with
/// stores suppressed, recording the accesses to that element, and takes the lowest block that
/// touched it with the next block whose access conflicts with it.
fn attribute(
    prog: &Prog,
    nblocks: u64,
    block_of: &(dyn Fn(u64) -> [u32; 3] + Sync),
    param: u32,
    element: u64,
) -> InterpError {
    let k = prog.k;
    let mem = k.params.get(param as usize).map(|d| d.name.clone()).unwrap_or_default();
    let hits: Vec<UnitHits> = (0..nblocks)
        .into_par_iter()
        .map_init(
            || {
                let mut ex = BlockExec::new(prog);
                ex.probe = Some((param, element));
                ex
            },
            |ex, b| {
                let _ = ex.run(block_of(b));
                let threads = ex
                    .hits
                    .iter()
                    .map(|h| (ex.block_of(h.thread as usize), ex.thread(h.thread as usize)))
                    .collect();
                (b, std::mem::take(&mut ex.hits), threads)
            },
        )
        .filter(|(_, h, _)| !h.is_empty())
        .collect();
    let side = |h: &Hit, (block, thread): ([u32; 3], [u32; 3])| {
        Box::new(GlobalAccess {
            block,
            thread,
            inst: prog
                .insts
                .get(h.inst as usize)
                .map(|i| crate::dump::inst_text(k, i))
                .unwrap_or_default(),
            write: h.write,
        })
    };
    let pick = |(_, h, th): &UnitHits, write: bool| {
        h.iter().position(|x| x.write || !write).map(|i| side(&h[i], th[i]))
    };
    let unattributed =
        InterpError::GlobalRaceUnattributed { mem: mem.clone(), element: element as usize };
    let Some(first_block) = hits.first() else { return unattributed };
    let first_wrote = first_block.1.iter().any(|h| h.write);
    let first = pick(first_block, first_wrote);
    let second = hits[1..].iter().find_map(|x| pick(x, !first_wrote));
    match (first, second) {
        (Some(first), Some(second)) => {
            InterpError::GlobalRace { mem, element: element as usize, first, second }
        }
        _ => unattributed,
    }
}
