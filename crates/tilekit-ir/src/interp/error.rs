//! Typed run-time errors of the interpreter: each names the instruction (its dump text), the
//! memory and address, and the block and thread(s) involved.
//!
//! ```text
//!   shared-memory race on "tile" byte 12 (element 3) in block (0, 0, 0):
//!     thread (3, 0, 0) write by `st.shared.f32 tile[%4], %2`
//!     thread (5, 0, 0) read by `%7 = ld.shared.f32 tile[%6]`, with no barrier in between
//!   global-memory race on "y" element 0:
//!     block (0, 0, 0) thread (0, 0, 0) write by `st.global.i32 y[%1], %2` and
//!     block (1, 0, 0) thread (0, 0, 0) write by `st.global.i32 y[%1], %2` (blocks are unordered)
//! ```

use crate::types::ScalarType;

/// One side of a race.
///
/// ```
/// use tilekit_ir::interp::Access;
/// let a = Access { thread: [1, 0, 0], inst: "st.shared.f32 s[%1], %2".into(), write: true };
/// assert_eq!(a.to_string(), "thread (1, 0, 0) write by `st.shared.f32 s[%1], %2`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// Thread index in the block.
    pub thread: [u32; 3],
    /// The instruction's text.
    pub inst: String,
    /// Write (true) or read.
    pub write: bool,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y, z] = self.thread;
        let kind = if self.write { "write" } else { "read" };
        write!(f, "thread ({x}, {y}, {z}) {kind} by `{}`", self.inst)
    }
}

/// One side of a global-memory race: the block, the thread, the instruction.
///
/// ```
/// use tilekit_ir::interp::GlobalAccess;
/// let a = GlobalAccess { block: [2, 0, 0], thread: [1, 0, 0], inst: "st.global.f32 y[%1], %2".into(), write: true };
/// assert_eq!(a.to_string(), "block (2, 0, 0) thread (1, 0, 0) write by `st.global.f32 y[%1], %2`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalAccess {
    /// Block index in the grid.
    pub block: [u32; 3],
    /// Thread index in the block.
    pub thread: [u32; 3],
    /// The instruction's text.
    pub inst: String,
    /// Write (true) or read.
    pub write: bool,
}

impl std::fmt::Display for GlobalAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [bx, by, bz] = self.block;
        let [x, y, z] = self.thread;
        let kind = if self.write { "write" } else { "read" };
        write!(f, "block ({bx}, {by}, {bz}) thread ({x}, {y}, {z}) {kind} by `{}`", self.inst)
    }
}

fn race_order(first: &GlobalAccess, second: &GlobalAccess) -> &'static str {
    if first.block == second.block {
        "in one barrier interval (no bar.sync orders them)"
    } else {
        "in two blocks (blocks run in any order)"
    }
}

/// The asynchronous-operation bugs the interpreter names (see [`crate::asyncop`]).
///
/// ```
/// use tilekit_ir::interp::AsyncBug;
/// assert_eq!(AsyncBug::ReadBeforeComplete.to_string(), "read of shared memory before its bulk copy completed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AsyncBug {
    /// A TMA tensor store whose box starts at a negative coordinate: the GPU traps with an
    /// illegal instruction (measured on an H100); loads may start below zero.
    #[error("tensor store of a box starting below zero")]
    NegativeStoreCoordinate,
    /// A TMA tensor store writes the 16-byte chunk that ends the tensor's dim 0 whole (the
    /// GPU's clipping granularity), and that chunk runs past the buffer.
    #[error("tensor store past the end of its buffer")]
    StorePastBuffer,
    /// A thread reads shared memory a bulk copy has not finished writing.
    #[error("read of shared memory before its bulk copy completed")]
    ReadBeforeComplete,
    /// A thread writes shared memory a bulk copy is still writing.
    #[error("write to shared memory while a bulk copy is writing it")]
    WriteBeforeComplete,
    /// A thread (or a bulk load) writes shared memory a bulk store may still be reading.
    #[error("overwrite of shared memory a bulk store may still be reading")]
    OverwriteWhileStoreReads,
    /// A bulk load into shared memory that threads may still be reading or writing (no
    /// synchronisation orders their access before the copy; independent warp schedule).
    #[error("bulk load into shared memory threads may still be accessing")]
    OverwriteWhileRead,
    /// The bytes that arrived differ from the phase's `expect_tx` count.
    #[error("mbarrier transaction count mismatch")]
    TxMismatch,
    /// A wait on a phase that nothing left can complete.
    #[error("deadlock: waiting on an mbarrier phase that cannot complete")]
    Deadlock,
    /// An mbarrier op on a barrier that was not initialised.
    #[error("mbarrier used before mbarrier.init")]
    Uninitialized,
    /// Loads or stores to an initialised mbarrier's memory.
    #[error("an mbarrier's memory accessed as data")]
    BarrierAsData,
    /// A bulk store of shared memory written by threads without a `fence.proxy.async` between.
    #[error("bulk store of generic-proxy writes without fence.proxy.async")]
    MissingProxyFence,
    /// The block ends while a bulk store may still read its shared memory.
    #[error("block ends while a bulk store may still read its shared memory (no wait_group.read)")]
    StoreReadAtExit,
    /// The block ends with a bulk load still in flight.
    #[error("block ends with a bulk load in flight (nobody waited on its mbarrier)")]
    LoadAtExit,
    /// A bulk copy that is misaligned, ragged or out of bounds.
    #[error("invalid bulk copy")]
    BadBulkCopy,
    /// A warpgroup-collective op (`setmaxnreg`) executed by part of a warpgroup.
    #[error("warpgroup op executed by part of a warpgroup")]
    WarpgroupDivergence,
    /// An accumulator register of a wgmma read or overwritten before the `wgmma.wait_group`
    /// that retires its group.
    #[error("accumulator touched between its wgmma and the wait_group retiring it")]
    AccumulatorInFlight,
    /// A thread (or a bulk load) writes shared memory an in-flight wgmma still reads.
    #[error("overwrite of shared memory an in-flight wgmma still reads")]
    OverwriteWhileWgmmaReads,
    /// A wgmma issued without a `wgmma.fence` after register writes to its accumulator or A
    /// fragment (or before the warpgroup's first wgmma).
    #[error("wgmma without a wgmma.fence after register writes to its operands")]
    MissingWgmmaFence,
    /// A wgmma descriptor whose addresses disagree with the layout it was derived from.
    #[error("wgmma descriptor disagrees with the layout it was derived from")]
    DescriptorMismatch,
    /// A wgmma descriptor that reads outside the shared allocations of its type, differs
    /// between the threads of a warpgroup, or reads shared memory never written.
    #[error("invalid wgmma descriptor or operand")]
    BadDescriptor,
    /// The block ends with a wgmma group never retired by a wait_group.
    #[error("block ends with a wgmma in flight (no wait_group retired it)")]
    WgmmaAtExit,
    /// An arrival on another block's mbarrier (`mbarrier.arrive.shared::cluster`) with no
    /// `barrier.cluster` after it: the owner may exit first.
    #[error("arrival on another block's mbarrier not followed by a barrier.cluster")]
    RemoteArriveAtExit,
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpError {
    /// Wrong number of launch arguments.
    #[error("kernel {kernel} takes {expected} arguments, got {got}")]
    ArgCount {
        /// Kernel name.
        kernel: String,
        /// Parameters.
        expected: usize,
        /// Arguments.
        got: usize,
    },
    /// An argument does not match its parameter.
    #[error("argument {index} ({name}): expected {expected}, got {got}")]
    ArgMismatch {
        /// Position.
        index: usize,
        /// Parameter name.
        name: String,
        /// The parameter's kind.
        expected: String,
        /// What was passed.
        got: String,
    },
    /// A tensor-map argument the driver would refuse, or that reaches past its buffer.
    #[error("argument {index} ({name}): {source}")]
    TensorMap {
        /// Position.
        index: usize,
        /// Parameter name.
        name: String,
        /// What is wrong.
        source: crate::tma::TensorMapError,
    },
    /// A grid with a zero dimension.
    #[error("grid {grid:?} is invalid: every dimension must be >= 1")]
    Grid {
        /// The grid.
        grid: [u32; 3],
    },
    /// A grid whose block count overflows 64 bits.
    #[error("grid {grid:?} has more than 2^64 blocks")]
    GridTooLarge {
        /// The grid.
        grid: [u32; 3],
    },
    /// A bug in the use of asynchronous operations (mbarriers, bulk copies): which bug, the
    /// instruction, the memory and element, the block and thread, and what happened.
    #[error("{kind}: `{inst}` on \"{mem}\" element {element}, block {block:?} thread {thread:?}: {detail}")]
    Async {
        /// Which bug.
        kind: AsyncBug,
        /// The instruction that found it.
        inst: String,
        /// The memory (shared allocation or global parameter).
        mem: String,
        /// The element.
        element: usize,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
        /// What happened (the other op, counts).
        detail: String,
    },
    /// A cluster kernel launched on a grid that is not a multiple of its cluster dims.
    #[error("grid {grid:?} is not a multiple of the kernel's cluster dims {cluster:?} (each grid dim must be divisible by the cluster dim)")]
    ClusterGrid {
        /// The grid.
        grid: [u32; 3],
        /// The kernel's cluster dims.
        cluster: [u32; 3],
    },
    /// `ld.shared::cluster` naming a block rank outside the cluster.
    #[error("`{inst}` reads the shared memory of cluster rank {rank}, but the cluster has {size} blocks (ranks 0..{size}); block {block:?} thread {thread:?}")]
    ClusterRank {
        /// The instruction.
        inst: String,
        /// The rank it named.
        rank: i64,
        /// Blocks per cluster.
        size: usize,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
    },
    /// Two blocks of a cluster touch one shared element — the owner's write and another block's
    /// `ld.shared::cluster` — without a `barrier.cluster` between them.
    #[error("cluster shared-memory race on \"{mem}\" element {element} of block {owner:?}: {first}, then {second}, with no barrier.cluster between them")]
    ClusterRace {
        /// Allocation name.
        mem: String,
        /// Element index.
        element: usize,
        /// The block owning the memory.
        owner: [u32; 3],
        /// The earlier access.
        first: Box<GlobalAccess>,
        /// The later access.
        second: Box<GlobalAccess>,
    },
    /// A block of a cluster exits (or the kernel ends) while another block may still be reading
    /// its shared memory: no `barrier.cluster` after the last `ld.shared::cluster`.
    #[error("block {owner:?} may exit while {reader} still reads its \"{mem}\" element {element}: end the kernel with a barrier.cluster after the last ld.shared::cluster")]
    ClusterExit {
        /// Allocation name.
        mem: String,
        /// Element index.
        element: usize,
        /// The block owning the memory.
        owner: [u32; 3],
        /// The read.
        reader: Box<GlobalAccess>,
    },
    /// An access outside its memory.
    #[error("out-of-bounds {space} access to \"{mem}\" by `{inst}`: elements {element}..{end} but it has {len}, block {block:?} thread {thread:?}")]
    OutOfBounds {
        /// The instruction.
        inst: String,
        /// `"global"` or `"shared"`.
        space: String,
        /// Memory name.
        mem: String,
        /// First element accessed.
        element: i64,
        /// One past the last element accessed.
        end: i64,
        /// Elements in the memory.
        len: usize,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
    },
    /// A vector access not aligned to its size.
    #[error("misaligned {width}-element access to \"{mem}\" at element {element} by `{inst}` (the element offset must be a multiple of {width}), block {block:?} thread {thread:?}")]
    Misaligned {
        /// The instruction.
        inst: String,
        /// Memory name.
        mem: String,
        /// Element offset.
        element: i64,
        /// Vector width.
        width: usize,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
    },
    /// Two threads accessed one shared address, at least one writing, with no barrier between.
    #[error("shared-memory race on \"{mem}\" byte {byte} (element {element}) in block {block:?}: {first}, then {second}, with no barrier in between")]
    SharedRace {
        /// Allocation name.
        mem: String,
        /// Byte offset in the allocation.
        byte: usize,
        /// Element index.
        element: usize,
        /// Block index.
        block: [u32; 3],
        /// The earlier access.
        first: Box<Access>,
        /// The later access.
        second: Box<Access>,
    },
    /// Two threads of one launch accessed one global element, at least one writing, without an
    /// order between them: two threads of a block in one barrier interval, or two blocks (which
    /// run in any order). The IR has no atomics; a race is never benign.
    #[error(
        "global-memory race on \"{mem}\" element {element}: {first} and {second}, {}",
        race_order(first, second)
    )]
    GlobalRace {
        /// The buffer (its parameter's name).
        mem: String,
        /// The element index in the buffer.
        element: usize,
        /// The earlier access (in block order, then execution order).
        first: Box<GlobalAccess>,
        /// The later access.
        second: Box<GlobalAccess>,
    },
    /// Two blocks raced on a global element, but re-running the blocks to name them did not
    /// reproduce the accesses (the kernel's addresses depend on the data it races on).
    #[error("global-memory race on \"{mem}\" element {element} between two blocks (re-running the blocks to name them did not reproduce the accesses: the addresses depend on racing data)")]
    GlobalRaceUnattributed {
        /// The buffer.
        mem: String,
        /// The element index.
        element: usize,
    },
    /// A host buffer (or the interpreter's bookkeeping for one) cannot be allocated.
    #[error("a host buffer of {len} × {elem} cannot be allocated: {reason}")]
    HostAlloc {
        /// Element type.
        elem: ScalarType,
        /// Elements.
        len: usize,
        /// Why (byte size overflow, allocation failure).
        reason: String,
    },
    /// The kernel is malformed (only possible for kernels not made by the builder).
    #[error("kernel {kernel} is malformed: {reason}")]
    InvalidKernel {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        reason: String,
    },
    /// A barrier reached by only part of the block.
    #[error("`{inst}` reached by only part of block {block:?}: thread {thread:?} is not there (barriers must be uniform)")]
    BarrierDivergence {
        /// The instruction.
        inst: String,
        /// Block index.
        block: [u32; 3],
        /// A thread that did not arrive.
        thread: [u32; 3],
    },
    /// A warp-collective op executed by only part of a warp.
    #[error("`{inst}` executed by only part of warp {warp} of block {block:?} (active lanes {active:#010x}); warp ops need every lane")]
    WarpDivergence {
        /// The instruction.
        inst: String,
        /// Block index.
        block: [u32; 3],
        /// Warp.
        warp: usize,
        /// Mask of active lanes.
        active: u32,
    },
    /// An uninitialised value (from unwritten shared memory or an inactive shuffle source) was
    /// used where it matters.
    #[error(
        "uninitialised value {value} used as {what} by `{inst}`, block {block:?} thread {thread:?}"
    )]
    Poison {
        /// The instruction.
        inst: String,
        /// The value.
        value: String,
        /// Its role (`"address"`, `"stored value"`, `"condition"`, …).
        what: String,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
    },
    /// Integer division by zero at run time.
    #[error("integer division by zero in `{inst}`, block {block:?} thread {thread:?}")]
    DivisionByZero {
        /// The instruction.
        inst: String,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
    },
    /// A loop step that is not positive.
    #[error("loop step {step} is not positive in `{inst}`, block {block:?} thread {thread:?}")]
    LoopStep {
        /// The instruction.
        inst: String,
        /// The step.
        step: i64,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
    },
    /// Independent warp schedule: no warp can run and some are blocked — each waits on a
    /// barrier (an mbarrier phase, a named barrier, `bar.sync`, `barrier.cluster`) that
    /// nothing left can complete. Lists every blocked warp, what it waits on and where.
    #[error("deadlock in block {block:?}: every live warp is blocked\n{}", blocked_list(.warps))]
    WarpDeadlock {
        /// The block (the cluster's first block, for cluster kernels).
        block: [u32; 3],
        /// The blocked warps, by warp index (warps that finished are not listed).
        warps: Vec<BlockedWarp>,
    },
    /// A named barrier used wrongly (independent warp schedule): warps of one generation
    /// disagreeing on its thread count, or one warp arriving twice before it completes.
    #[error("named barrier {id} misused by `{inst}`, block {block:?} warp {warp}: {detail}")]
    NamedBarrier {
        /// The instruction.
        inst: String,
        /// Barrier id.
        id: u32,
        /// Block index.
        block: [u32; 3],
        /// Warp in the block.
        warp: usize,
        /// What went wrong.
        detail: String,
    },
}

/// One warp in a [`InterpError::WarpDeadlock`]: where it is blocked and on what.
///
/// ```
/// use tilekit_ir::interp::BlockedWarp;
/// let w = BlockedWarp {
///     block: [0, 0, 0],
///     warp: 4,
///     inst: "mbarrier.try_wait.parity full[%7], %9".into(),
///     waits: "mbarrier \"full\"[0] parity 0: phase 0 needs 1 of 1 arrivals".into(),
/// };
/// assert!(w.to_string().starts_with("warp 4 of block [0, 0, 0] (threads 128..160)"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedWarp {
    /// Its block.
    pub block: [u32; 3],
    /// Warp index in the block (linear thread id / 32).
    pub warp: usize,
    /// The instruction it waits in (dump text).
    pub inst: String,
    /// What it waits for: the barrier, its index, the parity or thread count, and its state.
    pub waits: String,
}

impl std::fmt::Display for BlockedWarp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "warp {} of block {:?} (threads {}..{}) waits in `{}` on {}",
            self.warp,
            self.block,
            self.warp * 32,
            self.warp * 32 + 32,
            self.inst,
            self.waits
        )
    }
}

fn blocked_list(warps: &[BlockedWarp]) -> String {
    warps.iter().map(|w| format!("  {w}")).collect::<Vec<_>>().join("\n")
}
