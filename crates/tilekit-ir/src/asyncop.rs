//! Hopper's asynchronous operations: mbarriers, bulk copies between global and shared memory,
//! the proxy fences and bulk groups that order them.
//!
//! # The model
//!
//! A bulk copy (`cp.async.bulk`, the TMA unit's one-dimensional form) is not an instruction whose
//! result a thread waits for: one thread *issues* it and goes on; the copy engine moves the
//! bytes later, through the **async proxy** — a different path to memory than the loads and
//! stores of threads (the **generic proxy**). Completion is reported in two ways:
//!
//! * a global→shared copy completes on an **mbarrier**, a 64-bit object in shared memory that
//!   counts arrivals and transaction bytes. It is initialised with the number of arrivals a
//!   phase needs; a thread announces the bytes it expects (`arrive.expect_tx`), each copy's bytes
//!   count down as they land (`complete_tx`), and the phase completes when both counts reach
//!   zero. Threads wait with `try_wait.parity`: phases alternate parity 0, 1, 0, …, so a ring
//!   of stages waits on parity `(round) mod 2`.
//! * a shared→global copy is committed to a **bulk group**; `wait_group.read N` returns when all
//!   but the newest N groups have finished *reading* shared memory (the buffer may be reused),
//!   `wait_group N` when they have finished writing global memory.
//!
//! The multi-dimensional form, `cp.async.bulk.tensor` (a box of a 1–5-D tensor described by a
//! tensor map, swizzled into shared memory, out-of-bounds elements filled), follows the same
//! model — loads complete on an mbarrier, stores join bulk groups — and is described in
//! [`crate::tma`].
//!
//! Generic-proxy writes to shared memory are not seen by the async proxy until a
//! `fence.proxy.async`; an mbarrier's initialisation is published with `fence.mbarrier_init`.
//!
//! ```text
//!   one pipeline stage (stage s of a ring, round r):
//!
//!   thread 0                       copy engine (async proxy)          all threads
//!   ────────                       ─────────────────────────          ───────────
//!   arrive.expect_tx(bar[s], B) ─┐
//!   cp.async.bulk  x → buf[s] ───┼──► B bytes land in buf[s] ──► tx(bar[s]) −= B
//!                                └──► arrivals(bar[s]) −= 1      phase r of bar[s] completes
//!                                                                 wait.parity(bar[s], r mod 2)
//!                                                                 read buf[s]   ◄─ only now
//! ```
//!
//! **Named barriers** (`bar.sync id, count`, `bar.arrive id, count`) synchronise a subset of a
//! block's warps — the consumer warpgroups of a warp-specialised kernel, whose producer warp
//! never joins them. A generation completes when `count` threads (whole warps) have arrived.
//!
//! # What the interpreter checks
//!
//! It runs these ops with the hardware's semantics on a legal schedule (a copy lands when a
//! thread first waits on its barrier, or when the block ends) and names the bugs that make such
//! kernels hard, with the block, thread, buffer and op: reading or writing a buffer whose copy
//! has not completed; overwriting shared memory a bulk store may still be reading; `expect_tx`
//! byte counts that differ from what arrives; waiting on a phase nothing can complete
//! (deadlock); using an mbarrier before `init`, or its memory as data; a bulk store of shared
//! memory written by threads without a `fence.proxy.async` between; a block that ends while a
//! bulk store may still read its shared memory; misaligned or ragged bulk copies; an arrival
//! on another block's mbarrier (a cluster's shared ring) with no `barrier.cluster` after it.
//! Kernels whose warps wait on each other (a named barrier, or an mbarrier wait inside an
//! `if`) run one warp at a time (the interpreter's independent warp schedule); there a deadlock
//! lists every blocked warp with the barrier, index and parity (or the named barrier's count)
//! it waits on, named barriers whose warps disagree on the count, or that one warp arrives at
//! twice in a generation, are errors, and a bulk or tensor load into shared memory that some
//! thread (or wgmma) accessed without a barrier phase ordering that access before the copy —
//! a consumer of any block of the cluster that has not released the stage — is named.
//!
//! ```
//! use tilekit_ir::{KernelBuilder, ScalarType, Axis, CmpOp};
//! use tilekit_layout::Idx;
//! let b = KernelBuilder::new("stage", [64, 1, 1]).unwrap();
//! let x = b.ptr_param("x", ScalarType::F32).unwrap();
//! let buf = b.shared("buf", ScalarType::F32, 256).unwrap();
//! let bar = b.mbarrier("full", 1).unwrap();
//! let first = b.cmp(CmpOp::Eq, &b.thread_id(Axis::X), &Idx::lit(0)).unwrap();
//! b.if_then(&first, |b| {
//!     b.mbarrier_init(bar, &Idx::lit(0), &Idx::lit(1))?;
//!     b.fence_mbarrier_init();
//!     b.mbarrier_arrive(bar, &Idx::lit(0), Some(&Idx::lit(1024)))?;
//!     b.bulk_load(buf, &Idx::lit(0), x, &Idx::lit(0), &Idx::lit(256), bar, &Idx::lit(0))
//! }).unwrap();
//! b.barrier();
//! b.mbarrier_wait(bar, &Idx::lit(0), &Idx::lit(0)).unwrap();
//! let text = b.finish().unwrap().to_string();
//! assert!(text.contains("cp.async.bulk.shared.global") && text.contains("mbarrier.try_wait.parity"));
//! ```

use crate::op::{MemRef, ValueId};

/// An asynchronous operation (see the [module docs](self)). None has results.
///
/// ```
/// use tilekit_ir::{AsyncOp, ValueId};
/// let op = AsyncOp::BulkWait { pending: 0, read: true };
/// assert_eq!(op.name(), "cp.async.bulk.wait_group.read");
/// assert!(op.operands().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AsyncOp {
    /// `mbarrier.init`: element `index` of the barrier allocation `bar` expects `count`
    /// arrivals per phase.
    MbarrierInit {
        /// The barrier allocation (shared, `i64` elements).
        bar: MemRef,
        /// Which barrier of it.
        index: ValueId,
        /// Arrivals per phase (1..=2^20 − 1).
        count: ValueId,
    },
    /// `mbarrier.arrive` (with `tx`: `arrive.expect_tx`, which first adds `tx` bytes to the
    /// phase's expected transaction count).
    MbarrierArrive {
        /// The barrier allocation.
        bar: MemRef,
        /// Which barrier.
        index: ValueId,
        /// Bytes the phase expects from bulk copies.
        tx: Option<ValueId>,
    },
    /// `mbarrier.arrive.shared::cluster` (release at CTA scope, the default: a cluster-scope release costs every arrival a `MEMBAR`): one arrival on barrier `index` of
    /// `bar` **in the block of rank `cta` of the cluster** (`mapa` of this block's own barrier
    /// address; `cta` may be the block's own rank). A consumer releases a stage that another
    /// block's multicast copies write into this way. The owner must not exit before the
    /// arrival: a `barrier.cluster` follows it (the interpreter checks).
    MbarrierArriveCluster {
        /// The barrier allocation.
        bar: MemRef,
        /// Which barrier.
        index: ValueId,
        /// The rank of the block whose barrier receives the arrival (`0..cluster size`).
        cta: ValueId,
    },
    /// Waits (a `try_wait.parity` loop) until the phase of parity `parity` has completed.
    MbarrierWait {
        /// The barrier allocation.
        bar: MemRef,
        /// Which barrier.
        index: ValueId,
        /// 0 or 1.
        parity: ValueId,
    },
    /// `mbarrier.inval`: the barrier's memory may be reused as data afterwards.
    MbarrierInval {
        /// The barrier allocation.
        bar: MemRef,
        /// Which barrier.
        index: ValueId,
    },
    /// `fence.proxy.async.shared::cta`: the thread's generic-proxy shared-memory writes become
    /// visible to the async proxy (bulk copies).
    FenceProxyAsync,
    /// `fence.mbarrier_init.release.cluster`: publishes mbarrier initialisations.
    FenceMbarrierInit,
    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`: copies `elems`
    /// elements from global `src[src_off..]` to shared `dst[dst_off..]` (16-byte aligned, a
    /// multiple of 16 bytes); completes `elems · size` transaction bytes on barrier `index` of
    /// `bar`.
    BulkLoad {
        /// Shared destination.
        dst: MemRef,
        /// Element offset in `dst`.
        dst_off: ValueId,
        /// Global source.
        src: MemRef,
        /// Element offset in `src`.
        src_off: ValueId,
        /// Elements copied.
        elems: ValueId,
        /// The barrier allocation.
        bar: MemRef,
        /// Which barrier.
        index: ValueId,
        /// `.multicast::cluster`: the blocks of the cluster (a mask of ranks) that each receive
        /// the data at `dst_off` and the transaction bytes on their own barrier `index`.
        multicast: Option<ValueId>,
    },
    /// `cp.async.bulk.global.shared::cta.bulk_group`: copies `elems` elements from shared
    /// `src[src_off..]` to global `dst[dst_off..]`, in the bulk group being formed.
    BulkStore {
        /// Global destination.
        dst: MemRef,
        /// Element offset in `dst`.
        dst_off: ValueId,
        /// Shared source.
        src: MemRef,
        /// Element offset in `src`.
        src_off: ValueId,
        /// Elements copied.
        elems: ValueId,
    },
    /// `cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes`: the box
    /// of tensor map `map` at `coords` lands (swizzled, out-of-bounds elements filled) in shared
    /// `dst[dst_off..]` and completes the box's bytes on barrier `index` of `bar` (see
    /// [`crate::tma`]).
    TensorLoad {
        /// Shared destination.
        dst: MemRef,
        /// Element offset in `dst`.
        dst_off: ValueId,
        /// The tensor-map parameter.
        map: u32,
        /// The global memory the map views.
        global: MemRef,
        /// Box coordinates, innermost first (`i32`).
        coords: Vec<ValueId>,
        /// The barrier allocation.
        bar: MemRef,
        /// Which barrier.
        index: ValueId,
        /// `.multicast::cluster`: the mask of cluster ranks that each receive the box.
        multicast: Option<ValueId>,
    },
    /// `cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group`: the box image at shared
    /// `src[src_off..]` is stored to the box of `map` at `coords` (elements outside the tensor
    /// are not written), in the bulk group being formed.
    TensorStore {
        /// The tensor-map parameter.
        map: u32,
        /// The global memory the map views.
        global: MemRef,
        /// Box coordinates, innermost first.
        coords: Vec<ValueId>,
        /// Shared source.
        src: MemRef,
        /// Element offset in `src`.
        src_off: ValueId,
    },
    /// `cp.async.bulk.prefetch.tensor.Nd.L2.global`: a hint to bring the box into L2.
    TensorPrefetch {
        /// The tensor-map parameter.
        map: u32,
        /// The global memory the map views.
        global: MemRef,
        /// Box coordinates, innermost first.
        coords: Vec<ValueId>,
    },
    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 regs`: the executing warpgroups' threads own
    /// `regs` registers each from here on (producer warpgroups give registers to consumers).
    SetMaxNReg {
        /// Increase (true) or decrease.
        inc: bool,
        /// Registers per thread (24..=256, a multiple of 8).
        regs: u32,
    },
    /// `cp.async.bulk.commit_group`: closes the bulk group of the thread's bulk stores so far.
    BulkCommit,
    /// A **named barrier** (`bar.sync id, count` or, with `sync = false`, `bar.arrive id,
    /// count`): barrier `id` (0..16) of the block completes when `count` threads (whole warps:
    /// every warp counts 32) have arrived; `bar.sync` waits for that, `bar.arrive` does not.
    /// Synchronises a subset of the warps (two consumer warpgroups of a warp-specialised
    /// kernel); kernels with one run under the interpreter's independent warp schedule.
    NamedBarrier {
        /// Barrier id, 0..16 (0 is also the id `bar.sync` without a count uses).
        id: u32,
        /// Threads that complete a generation: a positive multiple of 32.
        count: u32,
        /// Wait for the generation to complete (`bar.sync`) or only arrive (`bar.arrive`).
        sync: bool,
    },
    /// `cp.async.bulk.wait_group{.read} pending`: waits until at most `pending` of the thread's
    /// committed groups are unfinished (`read`: have not finished reading shared memory).
    BulkWait {
        /// Groups that may stay in flight.
        pending: u32,
        /// Wait only for the reads of shared memory.
        read: bool,
    },
}

impl AsyncOp {
    /// The PTX mnemonic (without state spaces where they vary).
    ///
    /// ```
    /// assert_eq!(tilekit_ir::AsyncOp::FenceProxyAsync.name(), "fence.proxy.async");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            AsyncOp::MbarrierInit { .. } => "mbarrier.init",
            AsyncOp::MbarrierArrive { tx: None, .. } => "mbarrier.arrive",
            AsyncOp::MbarrierArrive { tx: Some(_), .. } => "mbarrier.arrive.expect_tx",
            AsyncOp::MbarrierArriveCluster { .. } => "mbarrier.arrive.shared::cluster",
            AsyncOp::MbarrierWait { .. } => "mbarrier.try_wait.parity",
            AsyncOp::MbarrierInval { .. } => "mbarrier.inval",
            AsyncOp::FenceProxyAsync => "fence.proxy.async",
            AsyncOp::FenceMbarrierInit => "fence.mbarrier_init",
            AsyncOp::BulkLoad { .. } => "cp.async.bulk.shared.global",
            AsyncOp::BulkStore { .. } => "cp.async.bulk.global.shared",
            AsyncOp::TensorLoad { .. } => "cp.async.bulk.tensor.shared.global",
            AsyncOp::TensorStore { .. } => "cp.async.bulk.tensor.global.shared",
            AsyncOp::TensorPrefetch { .. } => "cp.async.bulk.prefetch.tensor",
            AsyncOp::BulkCommit => "cp.async.bulk.commit_group",
            AsyncOp::NamedBarrier { sync: true, .. } => "bar.sync",
            AsyncOp::NamedBarrier { sync: false, .. } => "bar.arrive",
            AsyncOp::SetMaxNReg { inc: true, .. } => "setmaxnreg.inc",
            AsyncOp::SetMaxNReg { inc: false, .. } => "setmaxnreg.dec",
            AsyncOp::BulkWait { read: true, .. } => "cp.async.bulk.wait_group.read",
            AsyncOp::BulkWait { read: false, .. } => "cp.async.bulk.wait_group",
        }
    }

    /// The values it reads.
    ///
    /// ```
    /// use tilekit_ir::{AsyncOp, MemRef, MemSpace, ScalarType, ValueId};
    /// let bar = MemRef { space: MemSpace::Shared(0), elem: ScalarType::I64 };
    /// let op = AsyncOp::MbarrierWait { bar, index: ValueId(1), parity: ValueId(2) };
    /// assert_eq!(op.operands(), vec![ValueId(1), ValueId(2)]);
    /// ```
    pub fn operands(&self) -> Vec<ValueId> {
        match self {
            AsyncOp::MbarrierInit { index, count, .. } => vec![*index, *count],
            AsyncOp::MbarrierArrive { index, tx, .. } => {
                std::iter::once(*index).chain(*tx).collect()
            }
            AsyncOp::MbarrierArriveCluster { index, cta, .. } => vec![*index, *cta],
            AsyncOp::MbarrierWait { index, parity, .. } => vec![*index, *parity],
            AsyncOp::MbarrierInval { index, .. } => vec![*index],
            AsyncOp::FenceProxyAsync
            | AsyncOp::FenceMbarrierInit
            | AsyncOp::BulkCommit
            | AsyncOp::SetMaxNReg { .. }
            | AsyncOp::NamedBarrier { .. }
            | AsyncOp::BulkWait { .. } => vec![],
            AsyncOp::BulkLoad { dst_off, src_off, elems, index, multicast, .. } => {
                [*dst_off, *src_off, *elems, *index].into_iter().chain(*multicast).collect()
            }
            AsyncOp::BulkStore { dst_off, src_off, elems, .. } => vec![*dst_off, *src_off, *elems],
            AsyncOp::TensorLoad { dst_off, coords, index, multicast, .. } => {
                std::iter::once(*dst_off)
                    .chain(coords.iter().copied())
                    .chain([*index])
                    .chain(*multicast)
                    .collect()
            }
            AsyncOp::TensorStore { coords, src_off, .. } => {
                coords.iter().copied().chain([*src_off]).collect()
            }
            AsyncOp::TensorPrefetch { coords, .. } => coords.clone(),
        }
    }

    /// Mutable access to the values it reads (for renumbering).
    pub(crate) fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        match self {
            AsyncOp::MbarrierInit { index, count, .. } => vec![index, count],
            AsyncOp::MbarrierArrive { index, tx, .. } => {
                let mut v = vec![index];
                v.extend(tx.as_mut());
                v
            }
            AsyncOp::MbarrierArriveCluster { index, cta, .. } => vec![index, cta],
            AsyncOp::MbarrierWait { index, parity, .. } => vec![index, parity],
            AsyncOp::MbarrierInval { index, .. } => vec![index],
            AsyncOp::FenceProxyAsync
            | AsyncOp::FenceMbarrierInit
            | AsyncOp::BulkCommit
            | AsyncOp::SetMaxNReg { .. }
            | AsyncOp::NamedBarrier { .. }
            | AsyncOp::BulkWait { .. } => vec![],
            AsyncOp::BulkLoad { dst_off, src_off, elems, index, multicast, .. } => {
                let mut v = vec![dst_off, src_off, elems, index];
                v.extend(multicast.as_mut());
                v
            }
            AsyncOp::BulkStore { dst_off, src_off, elems, .. } => vec![dst_off, src_off, elems],
            AsyncOp::TensorLoad { dst_off, coords, index, multicast, .. } => {
                let mut v = vec![dst_off];
                v.extend(coords.iter_mut());
                v.push(index);
                v.extend(multicast.as_mut());
                v
            }
            AsyncOp::TensorStore { coords, src_off, .. } => {
                let mut v: Vec<&mut ValueId> = coords.iter_mut().collect();
                v.push(src_off);
                v
            }
            AsyncOp::TensorPrefetch { coords, .. } => coords.iter_mut().collect(),
        }
    }

    /// The memories it names (barrier allocations included).
    ///
    /// ```
    /// assert!(tilekit_ir::AsyncOp::BulkCommit.mems().is_empty());
    /// ```
    pub fn mems(&self) -> Vec<MemRef> {
        match self {
            AsyncOp::MbarrierInit { bar, .. }
            | AsyncOp::MbarrierArrive { bar, .. }
            | AsyncOp::MbarrierWait { bar, .. }
            | AsyncOp::MbarrierInval { bar, .. } => vec![*bar],
            AsyncOp::BulkLoad { dst, src, bar, .. } => vec![*dst, *src, *bar],
            AsyncOp::BulkStore { dst, src, .. } => vec![*dst, *src],
            AsyncOp::TensorLoad { dst, global, bar, .. } => vec![*dst, *global, *bar],
            AsyncOp::TensorStore { global, src, .. } => vec![*global, *src],
            AsyncOp::TensorPrefetch { global, .. } => vec![*global],
            _ => vec![],
        }
    }
}
