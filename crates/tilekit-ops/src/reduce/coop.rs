//! Row softmax with each row **split over `k` cooperating blocks** that exchange their
//! (max, sum) through global memory: no thread-block clusters, one read and one write of every
//! element (the traffic of a device copy), for rows too long for one block's registers.
//!
//! The cluster kernels ([`super::build_softmax_cluster`] and the streaming ones) need blocks
//! that the hardware schedules together; here any `k` blocks of a row cooperate, wherever they
//! run. Each block holds its slice of the row in registers, so the row is read once; the blocks
//! of a row meet at a counter in global memory:
//!
//! ```text
//!   ws (u32, zeroed per launch):  [ ticket | counter[0] counter[1] … counter[rows−1] ]
//!   stats (f32):                  [ (m, s) of row 0 part 0 | row 0 part 1 | … ]   2·k per row
//!
//!   block (any of rows·k):
//!     thread 0: t = atom.add(ws[0], 1)  ──► shared ──► bar.sync      t = the block's ticket
//!     row = t / k, part = t mod k        columns [part·L, (part+1)·L) of the row, L = T·V·chunks
//!     x slice ──► registers (f32); m = block max (≥ lowest f32); e = exp2((x − m)·log2 e); s = Σ e
//!     thread 0: stats[row, part] = (m, s); red.release.gpu ws[1 + row] += 1   (the release
//!               orders the thread's stats store before the count: no separate fence)
//!     thread 0: spin ld.acquire.gpu ws[1 + row] until it is k (nanosleep between polls)
//!     all:      bar.sync (the other threads wait here, issuing nothing)
//!               M = max_j m_j, S = Σ_j s_j · exp2((m_j − M)·log2 e)      the k pairs of the row
//!               (in every warp: lane l reads pairs l and l + 32, butterfly shuffles combine)
//!               y slice = cast(e · exp2((m − M)·log2 e) / S)
//! ```
//!
//! **Why tickets.** A block waits for the other `k − 1` blocks of its row. If rows were
//! assigned by block index, a block could wait for a block the GPU has not started and never
//! will while the waiting ones hold every slot. Tickets are handed out in the order blocks
//! *start*: when a block holds ticket `t`, every ticket below `t` belongs to a block that
//! started, so every row below the newest one has all its blocks running or finished, and
//! only the newest row can have waiting blocks, at most `k − 1` of them. As long as `k` blocks
//! fit on the GPU at once, one slot is always left to start the next ticket: the kernel cannot
//! deadlock. `api::softmax` refuses a `k` above the resident blocks
//! ([`coop_resident_blocks`] × multiprocessors) with a typed error.
//!
//! **Ordering.** Thread 0's stores of `(m, s)` come before its release add (the fence and the
//! release make them visible to whoever acquires the counter); thread 0 of every block of the
//! row acquires the count `k`, and the block barrier after its wait orders every other thread
//! of the block after that acquire (acquire, then `bar.sync`: the CUDA memory model's
//! causality order), so each thread reads the pairs after the release of every block. Only
//! one thread per block polls, sleeping between polls: the other threads wait at the barrier
//! without issuing, leaving the SM's issue slots and the L2 to co-resident blocks. The
//! interpreter checks the release → acquire → barrier chain (release adds, finished acquire
//! waits and barriers are happens-before edges of its race checker) and runs the whole grid
//! as one unit, so its blocks can wait on each other.
//!
//! The workspace costs a stream-ordered allocation and memset of `4·(rows + 1)` bytes per call
//! (`api::softmax` makes it with `Backend::zeros`); `stats` needs no zeroing (every pair is
//! written before its count is released).
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::reduce::{build_softmax_coop, CoopTuning};
//! let t = CoopTuning::in_registers(256, 32);
//! assert_eq!(t.plan(ScalarType::F32, 65536), Some((8, 8)));  // 8 blocks × 256 threads × 8 chunks of 4
//! let k = build_softmax_coop(ScalarType::F32, 256, 4, 8, 8).unwrap();
//! assert!(k.to_string().contains("wait.acquire.gpu.global.u32"));
//! ```

use tilekit_ir::{Axis, BinOp, CmpOp, Kernel, KernelBuilder, MemRef, Pred, ScalarType, Val};
use tilekit_layout::Idx;

use crate::dist;
use crate::error::{OpsError, Result};
use crate::host;
use crate::tile::{View, Window};

use super::{block_exp, check_threads, exp_diff, float_lit, TYPES};

/// The most blocks one row may be split over.
///
/// ```
/// assert_eq!(tilekit_ops::reduce::coop::MAX_COOP_BLOCKS, 64);
/// ```
pub const MAX_COOP_BLOCKS: u32 = 64;

/// How `api::softmax` splits rows too long for one block's registers over cooperating blocks:
/// `threads` per block and, with `smem_kib = 0`, each thread holding at most `per_thread`
/// elements of the row in registers ([`build_softmax_coop`]; a multiple of 16 bytes' worth, at
/// most 64); with `smem_kib > 0`, each block holding a slice of at most `smem_kib` KiB in
/// shared memory, read `per_thread` elements a thread per step
/// ([`super::build_softmax_coop_smem`]; `per_thread / V` vectors, 1..=8). [`CoopTuning::plan`]
/// picks the number of blocks per row `k` for a row length.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::CoopTuning;
/// let t = CoopTuning::in_registers(512, 32);
/// assert_eq!(t.plan(ScalarType::F32, 262144), Some((16, 8)));
/// assert_eq!(t.plan(ScalarType::BF16, 65536), Some((4, 4)));
/// // 32 KiB of f32 in shared memory a block: 8192 elements, 2 steps of 512 × 8
/// let s = CoopTuning::in_shared(512, 8, 32);
/// assert_eq!(s.plan(ScalarType::F32, 262144), Some((32, 2)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CoopTuning {
    /// Threads per block (a multiple of 32, at most 1024).
    pub threads: u32,
    /// Registers: most elements of the row a thread holds (1..=64). Shared memory: elements a
    /// thread reads per step (rounded down to whole 16-byte vectors, 1..=8 of them).
    pub per_thread: i64,
    /// `0`: the slice is held in registers. Otherwise the most shared memory, in KiB, a block's
    /// slice takes (1..=200).
    #[serde(default)]
    pub smem_kib: u32,
    /// Shared memory only: thread 0 brings the slice in with bulk copies (`cp.async.bulk`, one
    /// mbarrier per step; sm_90) instead of every thread loading and storing it, where rows
    /// are 16-byte aligned whole vectors (elsewhere `api::softmax` uses the loads).
    #[serde(default)]
    pub bulk: bool,
    /// Shared memory only: one exponential per element
    /// ([`super::coop_smem::build_softmax_coop_smem_one_exp`]): the sum pass writes
    /// `e = exp2((x − m)·log2 e)` back over the slice and the output pass multiplies it by
    /// one factor, instead of computing the exponential again; pass 1 also keeps the next
    /// step's loads in flight. Labelled `1exp` by `tilekit tune` and `bench --softmax-coop`.
    #[serde(default)]
    pub one_exp: bool,
    /// Shared memory with loads (not `bulk`, not `one_exp`) only: rows each block takes a
    /// slice of, 1 or 2 ([`super::coop_smem::build_softmax_coop_smem_rows`]). With 2 a block
    /// holds a slice of two rows, publishes the first row's (max, sum) and goes on to load the
    /// second while the first row's other blocks come in: the wait at the row's counter hides
    /// behind the second row's loads. Labelled `2rows` by `tilekit tune` and `bench
    /// --softmax-coop`.
    #[serde(default = "one_row")]
    pub rows: u32,
    /// `0`: the kernels above. Otherwise the **ring** kernel ([`super::ring`]): a resident grid
    /// whose blocks walk a fixed list of slices (`smem_kib` KiB each, `per_thread` elements a
    /// thread per step, brought in by bulk copies) through this many shared-memory slots,
    /// waiting for each slice's row [`lag`](Self::lag) slices after publishing it (at least
    /// `lag + 2`; `slots × smem_kib ≤ 200`). Rows must be 16-byte aligned whole vectors
    /// (elsewhere `api::softmax` uses the shared-memory kernel with loads). Labelled `ringS`
    /// by `tilekit tune` and `bench --softmax-coop`.
    #[serde(default)]
    pub ring: u32,
    /// Ring only: how many slices after publishing a slice's (max, sum) a block waits for its
    /// row (at least 1). Labelled `lagD`.
    #[serde(default)]
    pub lag: u32,
    /// Shared memory with loads, two exponentials, one row a block only: pass 1
    /// software-pipelined, the next step's loads in flight while the current one is stored
    /// ([`super::coop_smem::build_softmax_coop_smem_pipelined`]; 2–16 steps a slice).
    /// Labelled `pipe`.
    #[serde(default)]
    pub pipe: bool,
    /// Shared memory, one row a block, not the ring: the row's `k` blocks (at most
    /// [`MAX_CLUSTER_BLOCKS`]) form a **thread-block cluster** (sm_90) and meet at
    /// `barrier.cluster`, reading each other's (max, sum) through distributed shared memory —
    /// no ticket, no counters, no global exchange (the hardware schedules a cluster's blocks
    /// together: [`super::coop_smem`], "clusters"). Labelled `cluster`.
    #[serde(default)]
    pub cluster: bool,
    /// Shared memory, one exponential, loads, one row a block, the counter exchange: pass 1
    /// keeps a running sum beside the max, so the block publishes its (max, sum) before pass 2
    /// and writes its exponentials while the row's other blocks come in
    /// ([`super::coop_smem::build_softmax_coop_smem_early`]). Labelled `early`.
    #[serde(default)]
    pub early: bool,
    /// Shared memory with loads, one row a block, the counter exchange (not a cluster, bulk,
    /// early or the ring): the ticket taken **speculatively**, step 0 of the slice loaded for
    /// `blockIdx.x` while the ticket's atomic is in flight and again only where the ticket
    /// differs ([`super::coop_smem::build_softmax_coop_smem_spec`]). Labelled `spec`.
    #[serde(default)]
    pub spec: bool,
    /// Shared memory, one exponential, loads, one row a block (the counter or a cluster; not
    /// bulk, early or spec): `0`, or the 16-byte vectors of the row each thread also **holds in
    /// registers** beside the shared slice (1..=16;
    /// [`super::coop_smem::build_softmax_coop_smem_held`]): a block holds `held · threads ·
    /// V` elements more, so a long row needs fewer blocks. Labelled `heldN`.
    #[serde(default)]
    pub held: u32,
}

/// The most blocks a row of the cluster variant ([`CoopTuning::cluster`]) is split over: a
/// Hopper cluster holds at most 16 blocks (more than 8 with the non-portable size the launch
/// allows).
///
/// ```
/// assert_eq!(tilekit_ops::reduce::coop::MAX_CLUSTER_BLOCKS, 16);
/// ```
pub const MAX_CLUSTER_BLOCKS: u32 = 16;

fn one_row() -> u32 {
    1
}

impl CoopTuning {
    /// Slices held in **registers** ([`build_softmax_coop`]): `threads` per block, each holding
    /// at most `per_thread` elements of the row; everything else off.
    ///
    /// ```
    /// use tilekit_ops::reduce::CoopTuning;
    /// let t = CoopTuning::in_registers(256, 32);
    /// assert_eq!((t.threads, t.per_thread, t.smem_kib, t.rows, t.ring), (256, 32, 0, 1, 0));
    /// ```
    pub const fn in_registers(threads: u32, per_thread: i64) -> CoopTuning {
        CoopTuning {
            threads,
            per_thread,
            smem_kib: 0,
            bulk: false,
            one_exp: false,
            rows: 1,
            ring: 0,
            lag: 0,
            pipe: false,
            cluster: false,
            early: false,
            spec: false,
            held: 0,
        }
    }

    /// Slices of at most `smem_kib` KiB in **shared memory**
    /// ([`super::build_softmax_coop_smem`]), read `per_thread` elements a thread per step by
    /// loads, two exponentials per element, one row a block; the `with_*` methods change one
    /// of those.
    ///
    /// ```
    /// use tilekit_ops::reduce::CoopTuning;
    /// let t = CoopTuning::in_shared(256, 16, 32);
    /// assert!(t.smem() && !t.bulk && !t.one_exp && !t.pipe && t.rows == 1);
    /// assert!(CoopTuning::in_shared(256, 32, 64).with_bulk().with_one_exp().one_exp);
    /// let r = CoopTuning::in_shared(512, 8, 32).with_ring(3, 1);
    /// assert_eq!((r.ring, r.lag), (3, 1));
    /// ```
    pub const fn in_shared(threads: u32, per_thread: i64, smem_kib: u32) -> CoopTuning {
        CoopTuning { smem_kib, ..CoopTuning::in_registers(threads, per_thread) }
    }

    /// The slice brought in by bulk copies ([`CoopTuning::bulk`]).
    pub const fn with_bulk(self) -> CoopTuning {
        CoopTuning { bulk: true, ..self }
    }

    /// One exponential per element ([`CoopTuning::one_exp`]).
    pub const fn with_one_exp(self) -> CoopTuning {
        CoopTuning { one_exp: true, ..self }
    }

    /// `rows` rows a block ([`CoopTuning::rows`]).
    pub const fn with_rows(self, rows: u32) -> CoopTuning {
        CoopTuning { rows, ..self }
    }

    /// The ring kernel with `slots` slots and the exchange `lag` slices behind
    /// ([`CoopTuning::ring`], [`CoopTuning::lag`]).
    pub const fn with_ring(self, slots: u32, lag: u32) -> CoopTuning {
        CoopTuning { ring: slots, lag, ..self }
    }

    /// Pass 1 pipelined ([`CoopTuning::pipe`]).
    pub const fn with_pipe(self) -> CoopTuning {
        CoopTuning { pipe: true, ..self }
    }

    /// A row's blocks as one thread-block cluster ([`CoopTuning::cluster`]).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::reduce::CoopTuning;
    /// let t = CoopTuning::in_shared(256, 32, 64).with_one_exp().with_cluster();
    /// assert_eq!(t.plan(ScalarType::BF16, 262144), Some((8, 4)));
    /// assert_eq!(t.plan(ScalarType::F32, 262144 * 2), None); // 32 blocks: more than a cluster
    /// assert_eq!(t.build(ScalarType::BF16, 8, 8, 4).unwrap().cluster_dim, [8, 1, 1]);
    /// ```
    pub const fn with_cluster(self) -> CoopTuning {
        CoopTuning { cluster: true, ..self }
    }

    /// Publish before pass 2 ([`CoopTuning::early`]; implies one exponential per element).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::reduce::CoopTuning;
    /// let t = CoopTuning::in_shared(256, 32, 64).with_early();
    /// assert!(t.one_exp && t.early);
    /// assert_eq!(t.build(ScalarType::BF16, 8, 8, 4).unwrap().name, "softmax_coop_smem_1exp_early");
    /// ```
    pub const fn with_early(self) -> CoopTuning {
        CoopTuning { early: true, one_exp: true, ..self }
    }

    /// The ticket taken speculatively ([`CoopTuning::spec`]).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::reduce::CoopTuning;
    /// let t = CoopTuning::in_shared(256, 32, 64).with_spec();
    /// assert_eq!(t.build(ScalarType::F32, 4, 16, 2).unwrap().name, "softmax_coop_smem_spec");
    /// assert!(t.with_cluster().build(ScalarType::F32, 4, 16, 2).is_err());
    /// ```
    pub const fn with_spec(self) -> CoopTuning {
        CoopTuning { spec: true, ..self }
    }

    /// `held` 16-byte vectors a thread kept in registers beside the shared slice
    /// ([`CoopTuning::held`]; implies one exponential per element).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::reduce::CoopTuning;
    /// // 512 threads × 96 KiB shared + 4 vectors a thread (32 KiB) = 128 KiB a block
    /// let t = CoopTuning::in_shared(512, 16, 96).with_held(4).with_cluster();
    /// assert_eq!(t.plan(ScalarType::BF16, 262144), Some((4, 6))); // 6 steps of 512 × 2 × 8
    /// assert_eq!(t.plan(ScalarType::F32, 262144), Some((8, 3)));  // 3 steps of 512 × 4 × 4
    /// let k = t.build(ScalarType::BF16, 8, 4, 6).unwrap();
    /// assert_eq!((k.name.as_str(), k.cluster_dim), ("softmax_cluster_smem_1exp_held", [4, 1, 1]));
    /// ```
    pub const fn with_held(self, held: u32) -> CoopTuning {
        CoopTuning { held, one_exp: true, ..self }
    }

    /// The shapes `tilekit tune` sweeps. Registers: 128 to 1024 threads × 16, 32 or 64
    /// elements a thread, but not 1024 × 64 (a 1024-thread block has 64 registers a thread:
    /// ptxas spills the slice). Shared memory: 256 or 512 threads × 16 or 32 elements a step ×
    /// slices of 16, 32 or 64 KiB (up to 13, 6 or 3 blocks per SM by shared memory), loaded by
    /// every thread; and 256 or 512 threads × 32 elements a step × 16, 32 or 64 KiB brought in
    /// by bulk copies; then each of those 18 shared-memory shapes with one exponential per
    /// element (`one_exp`); 256 or 512 threads × 96 KiB slices with one exponential (two
    /// blocks an SM, fewer blocks a long row); 6 shapes whose row's blocks form a thread-block
    /// cluster (`cluster`: the H200's tabled shapes and neighbours); 4 that publish before pass 2
    /// (`early`); 3 that take the ticket speculatively (`spec`: 256 threads, 64 KiB); 6 that
    /// hold part of the slice in registers (`held`: the H200's tabled shapes and neighbours,
    /// 64 KiB of shared memory at most); and 3 shapes of the ring kernel ([`super::ring`]: 256 or 512
    /// compute threads, 3 or 4 slots of 16 or 32 KiB, lag 1 or 2; slower than the
    /// shared-memory kernel on the H200, bench/NOTES.md §22). Two rows a block (`rows` 2) is
    /// not swept: slower than one row at every H200 shape measured (bench/NOTES.md §10);
    /// `--softmax-coop …,2rows` times it.
    ///
    /// ```
    /// let c = tilekit_ops::reduce::CoopTuning::candidates();
    /// assert_eq!(c.len(), 11 + 12 + 6 + 18 + 2 + 6 + 4 + 3 + 6 + 3);
    /// assert_eq!(c.iter().filter(|t| t.held > 0).count(), 6);
    /// assert_eq!(c.iter().filter(|t| t.early).count(), 4);
    /// assert_eq!(c.iter().filter(|t| t.spec).count(), 3);
    /// assert_eq!(c.iter().filter(|t| t.cluster && t.held == 0).count(), 6);
    /// assert!(c.iter().all(|t| t.rows == 1));
    /// assert!(c.iter().filter(|t| t.ring > 0).all(|t| t.smem() && t.ring >= t.lag + 2));
    /// assert!(!c.iter().any(|t| t.threads == 1024 && t.per_thread == 64));
    /// assert_eq!(c.iter().filter(|t| t.smem_kib > 0 && t.ring == 0).count(), 57);
    /// assert!(c.iter().all(|t| !t.bulk || t.smem_kib > 0));
    /// assert!(c.iter().all(|t| !t.one_exp || t.smem_kib > 0));
    /// assert_eq!(c.iter().filter(|t| t.one_exp && t.bulk).count(), 6);
    /// ```
    pub fn candidates() -> Vec<CoopTuning> {
        let mut v = Vec::new();
        for threads in [128u32, 256, 512, 1024] {
            for per_thread in [16i64, 32, 64] {
                if threads * per_thread as u32 <= 32768 {
                    v.push(CoopTuning::in_registers(threads, per_thread));
                }
            }
        }
        for threads in [256u32, 512] {
            for per_thread in [16i64, 32] {
                for smem_kib in [16u32, 32, 64] {
                    v.push(CoopTuning::in_shared(threads, per_thread, smem_kib));
                }
            }
        }
        for threads in [256u32, 512] {
            for smem_kib in [16u32, 32, 64] {
                v.push(CoopTuning::in_shared(threads, 32, smem_kib).with_bulk());
            }
        }
        // every shared-memory shape again with one exponential per element
        let one: Vec<CoopTuning> =
            v.iter().filter(|t| t.smem()).map(|t| t.with_one_exp()).collect();
        v.extend(one);
        // 96 KiB slices (two blocks an SM): fewer blocks a row of 262144, one exponential
        for threads in [256u32, 512] {
            v.push(CoopTuning::in_shared(threads, 32, 96).with_one_exp());
        }
        // a row's blocks as one thread-block cluster (no ticket, no global exchange): the
        // H200's tabled shapes and their neighbours
        for (threads, per_thread, smem_kib, one_exp) in [
            (256u32, 32i64, 64u32, true),
            (256, 32, 64, false),
            (256, 16, 32, true),
            (256, 16, 32, false),
            (512, 32, 64, true),
            (256, 32, 96, true),
        ] {
            let t = CoopTuning::in_shared(threads, per_thread, smem_kib).with_cluster();
            v.push(if one_exp { t.with_one_exp() } else { t });
        }
        // publishing before pass 2 (one exponential, loads): the H200's tabled shapes and
        // their neighbours
        for (threads, per_thread, smem_kib) in
            [(256u32, 32i64, 64u32), (256, 16, 32), (256, 16, 64), (512, 32, 64)]
        {
            v.push(CoopTuning::in_shared(threads, per_thread, smem_kib).with_early());
        }
        // the ticket speculated: the H200's counter shapes for rows beyond a cluster
        for (per_thread, one_exp) in [(32i64, false), (32, true), (16, true)] {
            let t = CoopTuning::in_shared(256, per_thread, 64).with_spec();
            v.push(if one_exp { t.with_one_exp() } else { t });
        }
        // part of the slice held in registers (one exponential): the H200's tabled shapes
        // (session 17) and neighbours — (threads, elements a step, vectors held, cluster)
        for (threads, per_thread, held, cluster) in [
            (256u32, 16i64, 8u32, true),
            (256, 16, 10, true),
            (384, 16, 6, true),
            (384, 8, 6, false),
            (512, 16, 8, false),
            (512, 16, 8, true),
        ] {
            let t = CoopTuning::in_shared(threads, per_thread, 64).with_held(held);
            v.push(if cluster { t.with_cluster() } else { t });
        }
        // the ring kernel: (threads, slice KiB, slots, lag), 8 elements a thread per step
        for (threads, smem_kib, ring, lag) in
            [(256u32, 16u32, 3u32, 1u32), (256, 16, 4, 2), (512, 32, 3, 1)]
        {
            v.push(CoopTuning::in_shared(threads, 8, smem_kib).with_ring(ring, lag));
        }
        v
    }

    /// Whether the slice is held in shared memory ([`super::build_softmax_coop_smem`]).
    ///
    /// ```
    /// use tilekit_ops::reduce::CoopTuning;
    /// assert!(CoopTuning::in_shared(256, 16, 32).smem());
    /// assert!(!CoopTuning::in_registers(256, 16).smem());
    /// ```
    pub fn smem(&self) -> bool {
        self.smem_kib > 0
    }

    /// Shared memory: 16-byte vectors a thread reads per step, `per_thread / V` within 1..=8
    /// (V = 16 bytes / element size).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let t = tilekit_ops::reduce::CoopTuning::in_shared(256, 32, 16);
    /// assert_eq!((t.unroll(ScalarType::F32), t.unroll(ScalarType::BF16)), (8, 4));
    /// ```
    pub fn unroll(&self, ty: ScalarType) -> i64 {
        (self.per_thread / (16 / ty.size_bytes() as i64)).clamp(1, 8)
    }

    /// `(k, chunks)` for rows of `n` elements of `ty`: the fewest blocks `k` whose slices hold
    /// the row, then the fewest chunks per block that cover the row with those `k` blocks.
    /// Registers: a chunk is `threads · V` elements (V = 16 bytes / element size), at most
    /// `per_thread / V` of them a block. Shared memory: a chunk (a step) is `threads · V ·
    /// unroll` elements, as many a block as fit `smem_kib` KiB (at least one). `None` when
    /// `n < 1` or the row needs more than [`MAX_COOP_BLOCKS`] blocks ([`MAX_CLUSTER_BLOCKS`]
    /// for the cluster variant).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let t = tilekit_ops::reduce::CoopTuning::in_registers(128, 64);
    /// assert_eq!(t.plan(ScalarType::F32, 4096), Some((1, 8)));
    /// assert_eq!(t.plan(ScalarType::F32, 8193), Some((2, 9))); // balanced: 2 × 128 × 9 × 4 ≥ 8193
    /// assert_eq!(t.plan(ScalarType::F32, 8192 * 65), None);    // 65 blocks
    /// let s = tilekit_ops::reduce::CoopTuning::in_shared(256, 16, 64);
    /// assert_eq!(s.plan(ScalarType::BF16, 65536), Some((2, 8))); // 2 × 8 steps of 256 × 8 × 2
    /// assert_eq!(s.plan(ScalarType::F32, 262145), Some((17, 4)));
    /// ```
    pub fn plan(&self, ty: ScalarType, n: i64) -> Option<(u32, i64)> {
        let size = ty.size_bytes() as i64;
        let v = 16 / size;
        let (per_chunk, max_chunks) = if self.smem() {
            let c = self.threads as i64 * v * self.unroll(ty);
            let bytes =
                (i64::from(self.smem_kib) * 1024).min(super::coop_smem::COOP_SMEM_MAX_BYTES);
            (c, (bytes / (c * size).max(1)).max(1))
        } else {
            (self.threads as i64 * v, (self.per_thread.min(64) / v).max(1))
        };
        if n < 1 || per_chunk < 1 {
            return None;
        }
        if self.ring > 0 {
            // the ring's slots must fit its shared memory, its steps its unrolled body
            let slot = max_chunks * per_chunk * size;
            if i64::from(self.ring) * slot > super::ring::RING_MAX_BYTES
                || max_chunks > super::ring::RING_MAX_CHUNKS
            {
                return None;
            }
        }
        // elements a block holds in registers beside its shared slice
        let held = if self.smem() { i64::from(self.held) * self.threads as i64 * v } else { 0 };
        let block = max_chunks * per_chunk + held;
        let k = (n + block - 1) / block;
        let most = if self.cluster { MAX_CLUSTER_BLOCKS } else { MAX_COOP_BLOCKS };
        if k > i64::from(most) {
            return None;
        }
        let rest = ((n + k - 1) / k - held).max(1);
        let chunks = (rest + per_chunk - 1) / per_chunk;
        Some((k as u32, chunks))
    }

    /// The kernel of this shape for `k` blocks per row of `chunks` chunks each (from
    /// [`CoopTuning::plan`]), `x` and `y` accessed with vectors of `vx`. `one_exp` without a
    /// shared-memory slice is a typed error (the register kernel already computes one
    /// exponential per element).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let t = tilekit_ops::reduce::CoopTuning::in_shared(256, 16, 32);
    /// let (k, chunks) = t.plan(ScalarType::F32, 65536).unwrap();
    /// assert_eq!(t.build(ScalarType::F32, 4, k, chunks).unwrap().name, "softmax_coop_smem");
    /// let one = tilekit_ops::reduce::CoopTuning { one_exp: true, ..t };
    /// assert_eq!(one.build(ScalarType::F32, 4, k, chunks).unwrap().name, "softmax_coop_smem_1exp");
    /// let regs = tilekit_ops::reduce::CoopTuning { smem_kib: 0, ..one };
    /// assert!(regs.build(ScalarType::F32, 4, 8, 8).is_err());
    /// ```
    pub fn build(&self, ty: ScalarType, vx: i64, k: u32, chunks: i64) -> Result<Kernel> {
        if self.held > 0 {
            if !self.smem()
                || !self.one_exp
                || self.bulk
                || self.rows != 1
                || self.pipe
                || self.early
                || (self.spec && self.cluster)
                || self.ring > 0
            {
                return Err(OpsError::invalid(
                    "softmax",
                    "held (cooperative softmax)",
                    self.held,
                    "0 unless the slice is in shared memory (smem_kib 1..=200) brought in by \
                     loads with one exponential, one row a block (not bulk, pipe, early, the ring \
                     or spec with a cluster)",
                ));
            }
            return super::coop_smem::build_softmax_coop_smem_held(
                ty,
                self.threads,
                vx,
                k,
                (self.unroll(ty), chunks),
                i64::from(self.held),
                (self.cluster, if self.spec { Some(0) } else { None }),
            );
        }
        if self.spec {
            if !self.smem()
                || self.bulk
                || self.rows != 1
                || self.cluster
                || self.pipe
                || self.early
                || self.ring > 0
            {
                return Err(OpsError::invalid(
                    "softmax",
                    "spec (cooperative softmax)",
                    true,
                    "false unless the slice is in shared memory (smem_kib 1..=200) brought in by \
                     loads, one row a block, the counter exchange (not cluster, bulk, pipe or \
                     early)",
                ));
            }
            return super::coop_smem::build_softmax_coop_smem_spec(
                ty,
                self.threads,
                vx,
                k,
                self.unroll(ty),
                chunks,
                self.one_exp,
                0,
            );
        }
        if self.ring > 0 {
            if !self.smem() || self.bulk || self.one_exp || self.rows != 1 {
                return Err(OpsError::invalid(
                    "softmax",
                    "ring (cooperative softmax)",
                    self.ring,
                    "0 unless the slice is in shared memory (smem_kib 1..=200) with bulk, \
                     one_exp off and rows 1: the ring brings its slots in by bulk copies itself",
                ));
            }
            let _ = vx;
            return super::ring::build_softmax_ring(
                ty,
                self.threads,
                k,
                (self.unroll(ty), chunks),
                (i64::from(self.ring), i64::from(self.lag)),
            );
        }
        if self.one_exp && !self.smem() {
            return Err(OpsError::invalid(
                "softmax",
                "one_exp (cooperative softmax)",
                true,
                "false while smem_kib = 0: one_exp needs a shared-memory slice (smem_kib \
                 1..=200); the register kernel computes one exponential per element already",
            ));
        }
        if self.rows != 1 && !(self.smem() && !self.bulk && !self.one_exp) {
            return Err(OpsError::invalid(
                "softmax",
                "rows (cooperative softmax)",
                self.rows,
                "1, or 2 with a shared-memory slice brought in by loads (smem_kib 1..=200, \
                 bulk and one_exp off)",
            ));
        }
        if self.pipe && (!self.smem() || self.bulk || self.one_exp || self.rows != 1) {
            return Err(OpsError::invalid(
                "softmax",
                "pipe (cooperative softmax)",
                true,
                "false unless the slice is in shared memory (smem_kib 1..=200) brought in by \
                 loads, with two exponentials and one row a block",
            ));
        }
        if self.early {
            if !self.smem() || !self.one_exp || self.bulk || self.pipe || self.rows != 1 {
                return Err(OpsError::invalid(
                    "softmax",
                    "early (cooperative softmax)",
                    true,
                    "false unless the slice is in shared memory (smem_kib 1..=200) brought in by \
                     loads, with one exponential and one row a block (not bulk or pipe)",
                ));
            }
            if self.cluster {
                let variant = super::coop_smem::Variant {
                    one_exp: true,
                    early: true,
                    ..super::coop_smem::Variant::default()
                };
                return super::coop_smem::build_softmax_coop_smem_cluster(
                    ty,
                    self.threads,
                    vx,
                    k,
                    (self.unroll(ty), chunks),
                    variant,
                );
            }
            return super::coop_smem::build_softmax_coop_smem_early(
                ty,
                self.threads,
                vx,
                k,
                self.unroll(ty),
                chunks,
            );
        }
        if self.cluster && (!self.smem() || self.rows != 1) {
            return Err(OpsError::invalid(
                "softmax",
                "cluster (cooperative softmax)",
                true,
                "false unless the slice is in shared memory (smem_kib 1..=200) with one row a \
                 block and no ring",
            ));
        }
        if self.cluster {
            let u = self.unroll(ty);
            let variant = super::coop_smem::Variant {
                bulk: self.bulk,
                one_exp: self.one_exp,
                pipe: self.pipe,
                early: false,
            };
            return super::coop_smem::build_softmax_coop_smem_cluster(
                ty,
                self.threads,
                vx,
                k,
                (u, chunks),
                variant,
            );
        }
        if self.smem() {
            let u = self.unroll(ty);
            if self.pipe {
                return super::coop_smem::build_softmax_coop_smem_pipelined(
                    ty,
                    self.threads,
                    vx,
                    k,
                    u,
                    chunks,
                );
            }
            if self.rows != 1 {
                return super::coop_smem::build_softmax_coop_smem_rows(
                    ty,
                    self.threads,
                    vx,
                    k,
                    u,
                    chunks,
                    self.rows,
                );
            }
            if self.one_exp {
                return super::coop_smem::build_softmax_coop_smem_one_exp(
                    ty,
                    self.threads,
                    vx,
                    k,
                    u,
                    chunks,
                    self.bulk,
                );
            }
            super::build_softmax_coop_smem(ty, self.threads, vx, k, u, chunks, self.bulk)
        } else {
            build_softmax_coop(ty, self.threads, vx, k, chunks)
        }
    }

    /// Blocks of this shape's kernel (`chunks` from [`CoopTuning::plan`]) one SM holds at
    /// once: [`coop_resident_blocks`] or [`super::coop_smem_resident_blocks`]. A row's `k`
    /// blocks must fit the device at once (`k ≤` this × multiprocessors).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let t = tilekit_ops::reduce::CoopTuning::in_shared(256, 16, 32);
    /// assert_eq!(t.resident_blocks(ScalarType::F32, 2), 4);
    /// ```
    pub fn resident_blocks(&self, ty: ScalarType, chunks: i64) -> u32 {
        if self.ring > 0 {
            // the slots, the warps' pairs, the mbarriers; at most 64 registers a thread
            let v = 16 / ty.size_bytes() as i64;
            let slice =
                chunks * i64::from(self.threads) * v * self.unroll(ty) * ty.size_bytes() as i64;
            // (the block has one more warp than `threads`: the exchange and the copies)
            let block = self.threads + 32;
            let bytes = i64::from(self.ring) * (slice + 40) + i64::from(self.threads) / 2 + 1024;
            let by_smem = (228 * 1024 / bytes.max(1)) as u32;
            let by_regs = 65536 / (block * 56);
            return by_smem.min(by_regs).min(2048 / block).max(1);
        }
        if self.smem() {
            let u = self.unroll(ty);
            if self.held > 0 {
                let shape = (u, chunks, i64::from(self.held));
                return super::coop_smem::coop_smem_held_resident_blocks(ty, self.threads, shape);
            }
            if self.one_exp {
                return super::coop_smem::coop_smem_one_exp_resident_blocks(
                    ty,
                    self.threads,
                    u,
                    chunks,
                    self.bulk,
                );
            }
            // a block of `rows` rows holds as many slices, and a few more registers
            let held = chunks * i64::from(self.rows.max(1));
            let by_smem = super::coop_smem_resident_blocks(ty, self.threads, u, held, self.bulk);
            let regs = super::coop_smem::coop_smem_rows_registers(ty, u, self.rows);
            by_smem.min(65536 / (self.threads.max(32) * regs)).max(1)
        } else {
            coop_resident_blocks(ty, self.threads, chunks)
        }
    }
}

/// How many blocks of the coop kernel with `threads` threads and `chunks` chunks of 16 bytes
/// per thread one SM holds at once, estimated from registers (65536 per SM: the held elements
/// as f32 plus 56 for addresses and reductions, rounded up to 8, at most 255 per thread),
/// threads (2048 per SM) and blocks (32 per SM); at least 1. Conservative where it matters:
/// ptxas (CUDA 13.0, sm_90a) gives the candidate shapes 42–118 registers, at most the
/// estimate, and a kernel that needs fewer registers only makes more blocks resident.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_resident_blocks;
/// assert_eq!(coop_resident_blocks(ScalarType::F32, 256, 8), 2);   // 88 registers: 65536 / (256 · 88)
/// assert_eq!(coop_resident_blocks(ScalarType::F32, 1024, 16), 1);
/// assert_eq!(coop_resident_blocks(ScalarType::BF16, 128, 1), 8);   // 64 registers
/// ```
pub fn coop_resident_blocks(ty: ScalarType, threads: u32, chunks: i64) -> u32 {
    let v = 16 / ty.size_bytes() as i64;
    let regs = ((chunks * v + 56 + 7) / 8 * 8).min(255) as u32;
    let threads = threads.max(1);
    let by_regs = 65536 / (threads * regs);
    let by_threads = 2048 / threads;
    by_regs.min(by_threads).clamp(1, 32)
}

/// Nanoseconds the waiting thread sleeps between polls of its row's counter: short against
/// the exchange itself (an L2 round trip is ~0.6 µs), long enough that a waiting block issues
/// next to nothing.
///
/// ```
/// assert_eq!(tilekit_ops::reduce::coop::COOP_BACKOFF_NS, 64);
/// ```
pub const COOP_BACKOFF_NS: u32 = 64;

/// Thread `first` takes the block's ticket (`atom.add` on `ws[0]`, relaxed: tickets follow
/// the blocks' start) and shares it through the shared `slot`; returns `(row, part)` =
/// `(ticket / k, ticket mod k)` as index values.
pub(crate) fn take_ticket(
    b: &KernelBuilder,
    name: &str,
    first: &Pred,
    ws: MemRef,
    slot: MemRef,
    k: i64,
) -> Result<(Val, Val)> {
    take_ticket_wrapping(b, name, first, (ws, slot), k, false)
}

/// [`take_ticket`]; with `wrap` the ticket is an `atom.inc` bounded by `gridDim.x − 1`, so the
/// grid's last ticket leaves the counter at zero for the next launch.
pub(crate) fn take_ticket_wrapping(
    b: &KernelBuilder,
    name: &str,
    first: &Pred,
    (ws, slot): (MemRef, MemRef),
    k: i64,
    wrap: bool,
) -> Result<(Val, Val)> {
    b.note(format!("{name}: thread 0 takes the next ticket (tickets follow the blocks' start)"));
    b.if_then(first, |b| {
        let t = if wrap {
            let last = b.cvt(&(b.grid_dim(Axis::X) - Val::lit(1)), ScalarType::U32)?;
            b.atomic_inc(ws, &Val::lit(0), &last, false)?
        } else {
            b.atomic_add(ws, &Val::lit(0), &Val::lit(1), false)?
        };
        b.store(slot, &Val::lit(0), &[t], None)
    })?;
    b.barrier();
    let ticket = b.load(slot, &Val::lit(0), 1, None)?.remove(0);
    let index_ty = b.block_id(Axis::X).ty().unwrap_or(ScalarType::I32);
    let ticket = b.cvt(&ticket, index_ty)?;
    Ok((ticket.clone() / Val::lit(k), ticket % Val::lit(k)))
}

/// The row's exchange: thread `first` publishes this block's `(m, s)` as pair `part` of
/// `row` in `stats` and counts the block in (a release add on `ws[1 + row]`, which orders the
/// store before it), then polls the counter alone (acquire, sleeping [`COOP_BACKOFF_NS`]
/// between polls) until all `k` blocks are in, and the block barrier hands its acquire to
/// every other thread, which waits at the barrier without issuing loads. Returns the row's
/// `(M, S)` from its `k` pairs.
pub(crate) fn exchange(
    b: &KernelBuilder,
    name: &str,
    first: &Pred,
    (ws, stats): (MemRef, MemRef),
    (row, part, k): (&Val, &Val, i64),
    (m, s): (&Val, &Val),
) -> Result<(Val, Val)> {
    exchange_with(b, name, (first, false), (ws, stats), (row, part, k), (m, s))
}

/// [`exchange`] with a `fence.acq_rel.gpu` before the release add: the same ordering (the
/// release alone orders the store), kept for the register kernel because without it ptxas
/// 13.0 schedules that kernel into an 8-byte spill (bf16, 256 threads × 2 chunks, k 16, sm_90:
/// tests/it/ptx.rs).
pub(crate) fn exchange_fenced(
    b: &KernelBuilder,
    name: &str,
    first: &Pred,
    (ws, stats): (MemRef, MemRef),
    (row, part, k): (&Val, &Val, i64),
    (m, s): (&Val, &Val),
) -> Result<(Val, Val)> {
    exchange_with(b, name, (first, true), (ws, stats), (row, part, k), (m, s))
}

fn exchange_with(
    b: &KernelBuilder,
    name: &str,
    (first, fence): (&Pred, bool),
    (ws, stats): (MemRef, MemRef),
    (row, part, k): (&Val, &Val, i64),
    (m, s): (&Val, &Val),
) -> Result<(Val, Val)> {
    publish_with(b, name, first, (ws, stats), (row, part, k), (m, s), fence)?;
    gather(b, name, first, (ws, stats), (row, k))
}

/// The first half of [`exchange`]: thread `first` publishes this block's `(m, s)` as pair
/// `part` of `row` and counts the block in (release). A block may publish several rows before
/// it [`gather`]s them.
pub(crate) fn publish(
    b: &KernelBuilder,
    name: &str,
    first: &Pred,
    (ws, stats): (MemRef, MemRef),
    (row, part, k): (&Val, &Val, i64),
    (m, s): (&Val, &Val),
) -> Result<()> {
    publish_with(b, name, first, (ws, stats), (row, part, k), (m, s), false)
}

/// [`publish`], with a `fence.acq_rel.gpu` before the release add when `fence` is set (see
/// [`exchange_fenced`]).
fn publish_with(
    b: &KernelBuilder,
    name: &str,
    first: &Pred,
    (ws, stats): (MemRef, MemRef),
    (row, part, k): (&Val, &Val, i64),
    (m, s): (&Val, &Val),
    fence: bool,
) -> Result<()> {
    let counter = row.clone() + Val::lit(1);
    b.note(format!("{name}: thread 0 publishes (max, sum), then counts the block in (release)"));
    b.if_then(first, |b| {
        let at = (row.clone() * Val::lit(k) + part.clone()) * Val::lit(2);
        b.store(stats, &at, &[m.clone(), s.clone()], None)?;
        // a release atomic orders every earlier access of this thread (PTX memory model):
        // no fence.acq_rel.gpu needed before it (one L2 round trip less per block, NOTES §14)
        if fence {
            b.fence_gpu();
        }
        b.atomic_add(ws, &counter, &Val::lit(1), true)?;
        Ok(())
    })?;
    Ok(())
}

/// The second half of [`exchange`]: thread `first` waits until all `k` blocks of `row` are in,
/// the block barrier hands the acquire on, and every warp combines the row's `k` pairs into
/// `(M, S)`.
pub(crate) fn gather(
    b: &KernelBuilder,
    name: &str,
    first: &Pred,
    (ws, stats): (MemRef, MemRef),
    (row, k): (&Val, i64),
) -> Result<(Val, Val)> {
    let counter = row.clone() + Val::lit(1);
    b.note(format!("{name}: thread 0 waits (acquire, backoff) for all {k} blocks of the row"));
    b.if_then(first, |b| b.wait_acquire_backoff(ws, &counter, &Val::lit(k), COOP_BACKOFF_NS))?;
    b.barrier();
    b.note(format!(
        "{name}: every warp combines the row's {k} pairs, lane l taking pairs l, l + 32"
    ));
    let lane = b.lane_id();
    let ninf = b.f32(f32::NEG_INFINITY);
    // this lane's pairs (m_j, s_j); a lane past the last pair holds (−∞, 0)
    let mut mine = vec![];
    for j0 in (0..k).step_by(32) {
        let j = lane.clone() + Val::lit(j0);
        let inside = b.cmp(CmpOp::Lt, &j, &Val::lit(k))?;
        let at = (row.clone() * Val::lit(k) + j) * Val::lit(2);
        let p = b.load(stats, &at, 2, Some(&inside))?;
        mine.push(vec![b.select(&inside, &p[0], &ninf)?, b.select(&inside, &p[1], &b.f32(0.0))?]);
    }
    let (lm, ls) = if mine.len() == 1 {
        (mine[0][0].clone(), mine[0][1].clone())
    } else {
        // two pairs: rescale both to their max (a lane's max may be −∞ only if both are)
        let lm =
            crate::tile::tree_reduce(b, mine.iter().map(|p| p[0].clone()).collect(), BinOp::Max)?;
        let safe = b.binary(BinOp::Max, &lm, &b.f32(f32::MIN))?;
        let scaled = mine
            .iter()
            .map(|p| Ok(b.binary(BinOp::Mul, &p[1], &exp_diff(b, &p[0], &safe)?)?))
            .collect::<Result<Vec<_>>>()?;
        (lm, crate::tile::tree_reduce(b, scaled, BinOp::Add)?)
    };
    // every pair's max is at least the lowest finite f32, so M is finite
    let big_m = crate::tile::warp_reduce(b, &lm, BinOp::Max)?;
    let part_s = b.binary(BinOp::Mul, &ls, &exp_diff(b, &lm, &big_m)?)?;
    let big_s = crate::tile::warp_reduce(b, &part_s, BinOp::Add)?;
    Ok((big_m, big_s))
}

/// The checks every cooperative kernel makes of its type, block size and blocks per row.
pub(crate) fn check_coop(ty: ScalarType, threads: u32, k: u32) -> Result<()> {
    host::check_dtype("softmax", ty, &TYPES)?;
    check_threads(threads)?;
    if !(1..=MAX_COOP_BLOCKS).contains(&k) {
        return Err(OpsError::invalid(
            "softmax",
            "blocks per row",
            k,
            format!("1..={MAX_COOP_BLOCKS}"),
        ));
    }
    Ok(())
}

/// Row softmax with each row split over `k` cooperating blocks (see the [module docs](self)):
/// block part `p` of a row holds columns `[p·L, (p+1)·L)` in registers (`L = threads · V ·
/// chunks`, V = 16 bytes / element size), the blocks exchange their (max, sum) through global
/// memory (`stats`) and meet at a per-row counter (`ws`) with release/acquire atomics. Params
/// `x`, `y` (2-D, same type), `ws` (u32, `1 + rows` elements, **zero** at launch), `stats`
/// (f32, `2 · k · rows` elements); launch on `k · rows` blocks along x. Columns past `k · L`
/// are not written (`api::softmax` picks a covering shape, [`CoopTuning::plan`]); `x` is read
/// with vectors of `vx` elements.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::build_softmax_coop;
/// let k = build_softmax_coop(ScalarType::BF16, 512, 8, 4, 4).unwrap();
/// assert_eq!((k.name.as_str(), k.block_dim, k.cluster_dim), ("softmax_coop", [512, 1, 1], [1, 1, 1]));
/// let text = k.to_string();
/// assert!(text.contains("atom.release.gpu.global.add.u32") && text.contains("fence.acq_rel.gpu"));
/// assert!(build_softmax_coop(ScalarType::F32, 512, 4, 0, 4).is_err());   // k = 0
/// assert!(build_softmax_coop(ScalarType::F32, 512, 4, 4, 17).is_err());  // 68 elements a thread
/// assert!(build_softmax_coop(ScalarType::F16, 512, 8, 4, 4).is_err());
/// ```
pub fn build_softmax_coop(
    ty: ScalarType,
    threads: u32,
    vx: i64,
    k: u32,
    chunks: i64,
) -> Result<Kernel> {
    check_coop(ty, threads, k)?;
    let v = super::check_chunks(ty, chunks)?;
    let name = "softmax_coop";
    let len = threads as i64 * v * chunks;
    let kk = k as i64;
    let b = KernelBuilder::new(name, [threads, 1, 1])?;
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("y", ty, 2)?;
    let ws = b.ptr_param("ws", ScalarType::U32)?;
    let stats = b.ptr_param("stats", ScalarType::F32)?;
    let scratch = b.shared("partial", ScalarType::F32, threads as usize / 32)?;
    let slot = b.shared("ticket", ScalarType::U32, 1)?;
    let first = b.cmp(CmpOp::Eq, &b.thread_id(Axis::X), &Val::lit(0))?;
    let (row, part) = take_ticket(&b, name, &first, ws, slot, kk)?;
    let d = dist::row_major(1, len, threads as i64, v)?;
    let origin = [row.clone(), part.clone() * Val::lit(len)];
    let xv = View::global(&x, vx)?.pad(&[1, len])?;
    let yv = View::global(&y, vx)?.pad(&[1, len])?;
    let ninf = b.konst(float_lit(ty, f64::NEG_INFINITY)?);
    b.note(format!("{name}: this block's slice in registers, its max and sum"));
    let t = Window::new(&b, &xv, &[1, len], &origin, &d)?
        .load_or(&b, &ninf)?
        .cast(&b, ScalarType::F32)?;
    let (e, m, s) = block_exp(&b, &t, scratch, true)?;
    let (big_m, big_s) =
        exchange_fenced(&b, name, &first, (ws, stats), (&row, &part, kk), (&m, &s))?;
    let f = b.binary(BinOp::Div, &exp_diff(&b, &m, &big_m)?, &big_s)?;
    let out = e.map(&b, |b, ev| Ok(b.binary(BinOp::Mul, ev, &f)?))?.cast(&b, ty)?;
    Window::new(&b, &yv, &[1, len], &origin, &d)?.store(&b, &out)?;
    Ok(b.finish()?)
}
