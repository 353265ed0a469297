//! Rings of shared-memory stages guarded by mbarriers, the producer/consumer pipeline of the
//! Hopper kernels, and the pipeline position as an object ([`PipelineState`], CuTe's
//! `PipelineState`): one copy of the stage/phase arithmetic for every kernel.
//!
//! ```text
//!   producer (one thread)                         consumers (every thread, or a warp's lane 0)
//!   for it:  wait empty[s] parity 1 − ph  ◄─────┐   for it:  wait full[s] parity ph
//!            arrive full[s] + expect_tx bytes   │            … read stage s …
//!            TMA / bulk copies into stage s ────┼──────────► arrive empty[s]   (release)
//!            (s, ph) = advance(s, ph)           └──────────  (s, ph) = advance(s, ph)
//!
//!   iteration it:   0  1  2  3  4  5  6  7 …   (3 stages)
//!   stage  s:       0  1  2  0  1  2  0  1     it mod S
//!   phase  ph:      0  0  0  1  1  1  0  0     ⌊it / S⌋ mod 2
//! ```
//!
//! A barrier's phase `ph` completes when its expected arrivals (and transaction bytes) are in;
//! a wait on parity `ph` returns once phase `ph` has completed. The consumers wait `full[s]` on
//! the round's parity; the producer waits `empty[s]` on the opposite one, so its first round
//! (nothing to wait for: every stage is free) passes at once — a fresh barrier reports the phase
//! before its first as complete.
//!
//! The position is carried through a loop as two values ([`PipelineState::carried`] /
//! [`PipelineState::from_carried`]) and stepped with [`PipelineState::advance`] (a compare and
//! two selects: no division in the loop), or computed from an iteration count
//! ([`PipelineState::at`], [`PipelineState::at_masked`]) where a kernel resumes a ring (a
//! persistent kernel's next tile, or a loop that recomputes it every iteration).
//!
//! A complete producer/consumer kernel on the interpreter, which checks every wait and arrival
//! (`tests/it/ring.rs` has the same kernel with its bugs planted):
//!
//! ```
//! use tilekit_ir::interp::{run, Args, HostBuffer};
//! use tilekit_ir::{lit, Axis, BinOp, CmpOp, KernelBuilder, ScalarType};
//! use tilekit_kernel::ring::{PipelineState, Ring};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! const STAGES: i64 = 2;
//! const CHUNK: i64 = 32; // f32 elements a stage
//! const ITERS: i64 = 5;
//! // warp 0's thread 0 produces (bulk copies of x's chunks), warp 1 consumes (sums a column)
//! let b = KernelBuilder::new("ring", [64, 1, 1])?;
//! let x = b.ptr_param("x", ScalarType::F32)?;
//! let y = b.ptr_param("y", ScalarType::F32)?;
//! let buf = b.shared("stages", ScalarType::F32, (STAGES * CHUNK) as usize)?;
//! let ring = Ring::new(&b, STAGES, "full", "empty")?;
//! let tid = b.thread_id(Axis::X);
//! let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
//! b.if_then(&first, |b| {
//!     ring.init(b, 1, 32)?; // full: the producer's arrival; empty: the 32 consumer threads
//!     b.fence_mbarrier_init();
//!     Ok(())
//! })?;
//! b.barrier();
//! b.if_then(&first, |b| {
//!     let start = PipelineState::start(STAGES);
//!     b.for_range(&lit(0), &lit(ITERS), &lit(1), &start.carried(), |b, it, c| {
//!         let pos = PipelineState::from_carried(c, STAGES);
//!         ring.producer_acquire(b, &pos, CHUNK * 4)?;
//!         let at = pos.stage.clone() * lit(CHUNK);
//!         b.bulk_load(buf, &at, x, &(it * lit(CHUNK)), &lit(CHUNK), ring.full(), &pos.stage)?;
//!         Ok(pos.advance(b)?.carried())
//!     })?;
//!     Ok(())
//! })?;
//! let consumer = b.cmp(CmpOp::Ge, &tid, &lit(32))?;
//! b.if_then(&consumer, |b| {
//!     let lane = tid.clone() - lit(32);
//!     let mut init = vec![b.f32(0.0)];
//!     init.extend(PipelineState::start(STAGES).carried());
//!     let out = b.for_range(&lit(0), &lit(ITERS), &lit(1), &init, |b, _, c| {
//!         let pos = PipelineState::from_carried(&c[1..], STAGES);
//!         ring.wait_full(b, &pos)?;
//!         let v = b.load(buf, &(pos.stage.clone() * lit(CHUNK) + lane.clone()), 1, None)?;
//!         let sum = b.binary(BinOp::Add, &c[0], &v[0])?;
//!         ring.release(b, &pos.stage)?;
//!         let mut next = vec![sum];
//!         next.extend(pos.advance(b)?.carried());
//!         Ok(next)
//!     })?;
//!     b.store(y, &lane, &out[..1], None)
//! })?;
//! let k = b.finish()?;
//! let xs: Vec<f32> = (0..ITERS * CHUNK).map(|i| i as f32).collect();
//! let mut args = Args::new();
//! args.buffer(HostBuffer::from_f32(&xs)).buffer(HostBuffer::from_f32(&[0.0; 32]));
//! run(&k, [1, 1, 1], &mut args)?;
//! let got = args.take_buffer(1).unwrap().to_f32().unwrap();
//! for lane in 0..32 {
//!     let want: f32 = (0..ITERS).map(|i| (i * CHUNK + lane) as f32).sum();
//!     assert_eq!(got[lane as usize], want);
//! }
//! # Ok(()) }
//! ```

use tilekit_ir::error::Result;
use tilekit_ir::{lit, BinOp, CmpOp, KernelBuilder, MemRef, Val};

/// A ring of `stages` shared-memory stages: its `full` mbarriers (a stage's data has landed:
/// the producer's arrival plus the transaction bytes of its copies) and `empty` mbarriers (the
/// consumers have released the stage). The stages' buffers are the kernel's own (their layout
/// is the kernel's business); a [`PipelineState`] names the stage and phase an iteration uses.
/// See the [module docs](self) for the protocol and a worked example.
#[derive(Debug, Clone, Copy)]
pub struct Ring {
    stages: i64,
    full: MemRef,
    empty: MemRef,
}

impl Ring {
    /// Declares the ring's barriers: `stages` mbarriers named `full`, then `stages` named
    /// `empty` (in that order in shared memory). Initialise them with [`Ring::init`].
    ///
    /// ```
    /// use tilekit_ir::KernelBuilder;
    /// let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
    /// let ring = tilekit_kernel::ring::Ring::new(&b, 4, "full", "empty").unwrap();
    /// assert_eq!(ring.stages(), 4);
    /// ```
    pub fn new(b: &KernelBuilder, stages: i64, full: &str, empty: &str) -> Result<Ring> {
        let full = b.mbarrier(full, stages as usize)?;
        let empty = b.mbarrier(empty, stages as usize)?;
        Ok(Ring { stages, full, empty })
    }

    /// A ring over barriers the kernel declared itself (`stages` each), e.g. where two rings
    /// share a stage count and their declarations interleave.
    pub fn from_barriers(stages: i64, full: MemRef, empty: MemRef) -> Ring {
        Ring { stages, full, empty }
    }

    /// The number of stages.
    pub fn stages(&self) -> i64 {
        self.stages
    }

    /// The `full` barriers (the barrier a stage's copies complete on).
    pub fn full(&self) -> MemRef {
        self.full
    }

    /// The `empty` barriers.
    pub fn empty(&self) -> MemRef {
        self.empty
    }

    /// Initialises every stage's barriers, stage by stage (`full[s]`, then `empty[s]`):
    /// `full` expects `producer_arrivals` arrivals a phase (1 for one producing thread; the
    /// bytes come as transactions), `empty` `consumer_arrivals` (every consumer thread, or the
    /// electing lanes). Run by one thread, followed by `fence_mbarrier_init` and a block (or
    /// cluster) barrier before any use.
    pub fn init(
        &self,
        b: &KernelBuilder,
        producer_arrivals: i64,
        consumer_arrivals: i64,
    ) -> Result<()> {
        for s in 0..self.stages {
            b.mbarrier_init(self.full, &lit(s), &lit(producer_arrivals))?;
            b.mbarrier_init(self.empty, &lit(s), &lit(consumer_arrivals))?;
        }
        Ok(())
    }

    /// The producer's acquire of `pos`'s stage: waits until the consumers have released it
    /// ([`Ring::wait_empty`] on [`PipelineState::empty_parity`]), then arrives on its `full`
    /// barrier announcing `bytes` of copies ([`Ring::expect_bytes`]). The copies into the stage
    /// complete on `full()` at `pos.stage`.
    pub fn producer_acquire(
        &self,
        b: &KernelBuilder,
        pos: &PipelineState,
        bytes: i64,
    ) -> Result<()> {
        self.wait_empty(b, &pos.stage, &pos.empty_parity())?;
        self.expect_bytes(b, &pos.stage, bytes)
    }

    /// Waits on `empty[stage]` for `parity` (the producer's side; [`Ring::producer_acquire`]
    /// with the parity of a [`PipelineState`]).
    pub fn wait_empty(&self, b: &KernelBuilder, stage: &Val, parity: &Val) -> Result<()> {
        b.mbarrier_wait(self.empty, stage, parity)
    }

    /// Arrives on `full[stage]` announcing `bytes` of transactions (the copies that follow).
    pub fn expect_bytes(&self, b: &KernelBuilder, stage: &Val, bytes: i64) -> Result<()> {
        b.mbarrier_arrive(self.full, stage, Some(&lit(bytes)))
    }

    /// The consumers' wait for `pos`'s stage to land (`full[stage]`, the round's parity).
    pub fn wait_full(&self, b: &KernelBuilder, pos: &PipelineState) -> Result<()> {
        b.mbarrier_wait(self.full, &pos.stage, &pos.phase)
    }

    /// A consumer's release of `stage` (one arrival on `empty[stage]`).
    pub fn release(&self, b: &KernelBuilder, stage: &Val) -> Result<()> {
        b.mbarrier_arrive(self.empty, stage, None)
    }

    /// A consumer's release of `stage` in every block of a cluster of `ctas` whose producers
    /// multicast into it (one arrival on `empty[stage]` of blocks `0..ctas`).
    pub fn release_cluster(&self, b: &KernelBuilder, stage: &Val, ctas: i64) -> Result<()> {
        (0..ctas).try_for_each(|r| b.mbarrier_arrive_cluster(self.empty, stage, &lit(r)))
    }
}

/// A position in a ring of `stages` stages: the stage index and the phase (parity) of the
/// round, CuTe's `PipelineState`. Iteration `it` of a ring uses stage `it mod stages` in phase
/// `⌊it / stages⌋ mod 2`; [`PipelineState::advance`] steps to the next iteration.
///
/// ```
/// use tilekit_ir::{lit, KernelBuilder};
/// use tilekit_kernel::ring::PipelineState;
/// use tilekit_kernel::Idx;
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// // literals fold: the positions of iterations 0.. of a 3-stage ring
/// let mut pos = PipelineState::start(3);
/// let mut seen = vec![];
/// for _ in 0..7 {
///     seen.push((pos.stage.to_const().unwrap(), pos.phase.to_const().unwrap()));
///     pos = pos.advance(&b).unwrap();
/// }
/// assert_eq!(seen, [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 0)]);
/// let at = PipelineState::at(&lit(5), 3);
/// assert_eq!((at.stage.to_const(), at.phase.to_const()), (Some(2), Some(1)));
/// ```
#[derive(Clone)]
pub struct PipelineState {
    /// The stage index, `0..stages`.
    pub stage: Val,
    /// The phase (parity) of the stage's current round, 0 or 1: what a consumer waits `full`
    /// for; the producer waits `empty` for the other one ([`PipelineState::empty_parity`]).
    pub phase: Val,
    stages: i64,
}

impl PipelineState {
    /// Iteration 0: stage 0, phase 0.
    pub fn start(stages: i64) -> PipelineState {
        PipelineState { stage: lit(0), phase: lit(0), stages }
    }

    /// The position of iteration `it ≥ 0`: `(it mod stages, ⌊it / stages⌋ mod 2)`, by division
    /// (where `it` is known once a tile or a loop: ptxas lowers a division by a constant that
    /// is not a power of two to a generic division, about 20 instructions — compute it outside
    /// the hot loop and [`advance`](Self::advance) inside, or use
    /// [`at_masked`](Self::at_masked)). The GEMM resumes its ring once a tile with it.
    pub fn at(it: &Val, stages: i64) -> PipelineState {
        PipelineState {
            stage: it.clone() % lit(stages),
            phase: (it.clone() / lit(stages)) % lit(2),
            stages,
        }
    }

    /// The stage of iteration `it ≥ 0` alone, `it mod stages` (as [`at`](Self::at) computes it).
    pub fn stage_at(it: &Val, stages: i64) -> Val {
        it.clone() % lit(stages)
    }

    /// The same position as [`at`](Self::at), with a power-of-two stage count as a mask and a
    /// shift (`it & (S − 1)`, `(it >> log2 S) & 1`: 3 instructions where the division is about
    /// 20 — for a loop that recomputes its position every iteration, like attention's); by
    /// division for other stage counts.
    ///
    /// ```
    /// use tilekit_ir::{lit, KernelBuilder};
    /// use tilekit_kernel::ring::PipelineState;
    /// use tilekit_kernel::Idx;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// for stages in [2, 3, 4] {
    ///     for it in 0..20 {
    ///         let p = PipelineState::at_masked(&b, &lit(it), stages).unwrap();
    ///         let want = (Some(it % stages), Some(it / stages % 2));
    ///         assert_eq!((p.stage.to_const(), p.phase.to_const()), want);
    ///     }
    /// }
    /// ```
    pub fn at_masked(b: &KernelBuilder, it: &Val, stages: i64) -> Result<PipelineState> {
        if stages & (stages - 1) != 0 {
            return Ok(PipelineState::at(it, stages));
        }
        let stage = b.binary(BinOp::And, it, &lit(stages - 1))?;
        let round = b.binary(BinOp::Shr, it, &lit(stages.trailing_zeros() as i64))?;
        let phase = b.binary(BinOp::And, &round, &lit(1))?;
        Ok(PipelineState { stage, phase, stages })
    }

    /// The number of stages of the ring.
    pub fn stages(&self) -> i64 {
        self.stages
    }

    /// The next iteration's position: the next stage, the phase flipped on the wrap to stage 0
    /// (a compare and two selects).
    pub fn advance(&self, b: &KernelBuilder) -> Result<PipelineState> {
        let next = self.stage.clone() + lit(1);
        let wrap = b.cmp(CmpOp::Eq, &next, &lit(self.stages))?;
        let stage = b.select(&wrap, &lit(0), &next)?;
        let phase = b.select(&wrap, &(lit(1) - self.phase.clone()), &self.phase)?;
        Ok(PipelineState { stage, phase, stages: self.stages })
    }

    /// The previous iteration's stage (`stages − 1` before stage 0): the stage a consumer that
    /// keeps one group of reads in flight releases.
    pub fn previous_stage(&self, b: &KernelBuilder) -> Result<Val> {
        let first = b.cmp(CmpOp::Eq, &self.stage, &lit(0))?;
        b.select(&first, &lit(self.stages - 1), &(self.stage.clone() - lit(1)))
    }

    /// The parity the producer waits `empty` for, `1 − phase`: the consumers' release of the
    /// previous round of this stage (the first round passes at once).
    pub fn empty_parity(&self) -> Val {
        lit(1) - self.phase.clone()
    }

    /// [`empty_parity`](Self::empty_parity) as `phase xor 1` (the same value; attention's
    /// producer computes it so).
    pub fn empty_parity_xor(&self, b: &KernelBuilder) -> Result<Val> {
        b.binary(BinOp::Xor, &self.phase, &lit(1))
    }

    /// The position as loop-carried values `[stage, phase]` (`for_range`'s `init` and the
    /// body's result).
    pub fn carried(&self) -> Vec<Val> {
        vec![self.stage.clone(), self.phase.clone()]
    }

    /// The position from loop-carried values `[stage, phase, …]` (the first two).
    pub fn from_carried(vals: &[Val], stages: i64) -> PipelineState {
        PipelineState { stage: vals[0].clone(), phase: vals[1].clone(), stages }
    }
}
