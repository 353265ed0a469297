//! Row reductions (sum, max) and row softmax, one block per row, f32 math (f32 or bf16 input).
//!
//! ```text
//!   row reduce (any N)                         softmax (N ≤ 16384: the row stays in registers)
//!   for c0 in 0..N_pad step 256·V·4:           x  = Window(row, 256·V·U).load_or(−∞) → f32
//!     x = Window(row, c0).load_or(identity)    m  = block_reduce(max over the thread's x)
//!     acc ⊕= reduce_thread(f32(x))             e  = exp2((x − m)·log2 e)
//!   r = block_reduce(acc)                      s  = block_reduce(Σ e)
//!   thread 0: y[row] = r                       y  = Window(row).store(cast(e · (1/s)))
//!   (4 vectors of 16 bytes in flight per thread; warps: butterfly shuffles; block: shared memory)
//!   both: griddepcontrol.wait before the first load, launch_dependents once the row is read
//!   (programmatic dependent launch, tilekit_cuda::module; not in the kernels below)
//!
//!   online softmax (N > 16384: any length, the row is read twice, chunks of 256·V·4)
//!   m = lowest f32, s = 0                                     per thread, f32
//!   pass 1: for c0 in 0..N_pad step 256·V·4:
//!     x  = Window(row, c0).load_or(−∞) → f32                  padding gives exp2(−∞) = 0
//!     m' = max(m, max over the thread's x)
//!     s  = s · exp2((m − m')·log2 e) + Σ exp2((x − m')·log2 e)    rescale, then add the chunk
//!     m  = m'
//!   M = block_reduce(max of m)       S = block_reduce(Σ s · exp2((m − M)·log2 e))
//!   pass 2: for c0 in 0..N_pad step 256·V·4:
//!     Window(row, c0).store(cast(exp2((x − M)·log2 e) · (1/S)))   masked tail
//!
//!   cluster softmax (rows too long for one block's registers: the row split over a cluster)
//!   cluster of C blocks (sm_90), block r holds columns [r·L, (r+1)·L) in registers
//!   ┌ block 0 ┐┌ block 1 ┐ … ┌ block C−1 ┐   each: m_r = max, s_r = Σ exp2((x − m_r)·log2 e)
//!   │ stats   ││ stats   │   │ stats     │   → its own shared (m_r, s_r)
//!   └────┬────┘└────┬────┘   └─────┬─────┘   barrier.cluster
//!        └── every thread reads all C (m, s) through distributed shared memory ──┐
//!   M = max m_j, S = Σ s_j·exp2((m_j − M)·log2 e); y = cast(e · exp2((m_r − M)·log2 e) / S)
//!   barrier.cluster (no block exits while another may still read its stats)
//!   one read and one write of the row, as the register kernel, for rows up to C·L
//!
//!   cooperative softmax (coop.rs: the row split over k blocks, no clusters)
//!   block takes ticket t (atom.add, in start order): row t / k, slice t mod k in registers
//!   (m, s) of the slice → global stats; release add on counter[row]; acquire-wait for k
//!   M, S from the row's k pairs; y = cast(e · exp2((m − M)·log2 e) / S)   one read, one write
//!   (coop_smem.rs: the same with the slice held raw in shared memory — few registers, so
//!   several blocks per SM overlap one block's exchange with others' loads and stores;
//!   its one-exponential variant writes e over the slice and scales it: one ex2 an element)
//! ```
//!
//! [`softmax_kernel`] picks the register kernel when the row fits: it reads the row once; the
//! online kernel reads it twice but takes rows of any length in a fixed number of registers.
//! `api::softmax` also uses the cluster kernel ([`build_softmax_cluster`]) for rows that fit a
//! cluster's registers when the device has clusters (see `tuning::ClusterTuning`), and the
//! cooperative kernel ([`build_softmax_coop`], any device) when the tuning names a
//! [`CoopTuning`].
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::{backend::Interp, check::{check, Op}, reduce::Reduction};
//! let o = check(&Interp, Op::Reduce(Reduction::Sum), &[3, 1000], ScalarType::F32, 1).unwrap();
//! assert!(o.compare().passed);
//! ```

use tilekit_ir::interp::HostBuffer;
use tilekit_ir::{Axis, BinOp, CmpOp, Kernel, KernelBuilder, Lit, Pred, ScalarType, UnOp, Val};
use tilekit_kernel::lit;
use tilekit_layout::Idx;

use crate::dist;
use crate::error::{OpsError, Result};
use crate::host;
use crate::tile::{block_reduce, View, Window};

pub mod coop;
pub mod coop_smem;
pub mod held;
pub mod persistent;
pub mod ring;
pub mod split_rows;
pub mod warp_rows;
pub use coop::{build_softmax_coop, coop_resident_blocks, CoopTuning};
pub use coop_smem::{
    build_softmax_coop_smem, build_softmax_coop_smem_one_exp, coop_smem_resident_blocks,
    coop_smem_shared_bytes,
};
pub use held::build_softmax_bulk_held;
pub use persistent::{build_softmax_persistent, resident_blocks};

/// Threads per block.
///
/// ```
/// assert_eq!(tilekit_ops::reduce::THREADS, 256);
/// ```
pub const THREADS: u32 = 256;

/// What a kernel of this module computes per row.
///
/// ```
/// assert_eq!(tilekit_ops::reduce::Reduction::Max.name(), "row_max");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    /// `y[r] = Σ_c x[r, c]`.
    Sum,
    /// `y[r] = max_c x[r, c]`; NaN where the row holds a NaN (`torch.amax`).
    Max,
    /// `y[r, c] = exp(x[r, c] − max) / Σ exp(x[r, ·] − max)`; a row holding a NaN gives NaN
    /// throughout (`torch.softmax`), other rows are unaffected.
    Softmax,
}

impl Reduction {
    /// The kernel name.
    ///
    /// ```
    /// assert_eq!(tilekit_ops::reduce::Reduction::Softmax.name(), "softmax");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Sum => "row_sum",
            Reduction::Max => "row_max",
            Reduction::Softmax => "softmax",
        }
    }

    /// The fold of a row reduction and its identity (`+` and 0, `max` and −∞); softmax is not
    /// one: a typed error naming `kernel`.
    ///
    /// ```
    /// use tilekit_ops::reduce::Reduction;
    /// assert_eq!(Reduction::Max.fold("k").unwrap(), (tilekit_ir::BinOp::Max, f64::NEG_INFINITY));
    /// assert!(Reduction::Softmax.fold("k").is_err());
    /// ```
    pub fn fold(self, kernel: &str) -> Result<(BinOp, f64)> {
        match self {
            Reduction::Sum => Ok((BinOp::Add, 0.0)),
            Reduction::Max => Ok((BinOp::Max, f64::NEG_INFINITY)),
            Reduction::Softmax => {
                Err(OpsError::invalid(kernel, "reduction", "softmax", "row sum or max"))
            }
        }
    }
}

/// The element types the reductions and the softmax take.
///
/// ```
/// assert_eq!(tilekit_ops::reduce::TYPES.len(), 2);
/// ```
pub const TYPES: [ScalarType; 2] = [ScalarType::F32, ScalarType::BF16];

/// The float literal `v` of type `ty` (an error naming the dtype for a non-float `ty`).
fn float_lit(ty: ScalarType, v: f64) -> Result<Lit> {
    Lit::float(ty, v).ok_or_else(|| OpsError::invalid("reduce", "dtype", ty, "a float type"))
}

/// Row sum or max: params `x` (2-D, runtime lengths/strides) and `y` (1-D f32); grid = rows.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::{build_reduce, Reduction};
/// let k = build_reduce(Reduction::Max, ScalarType::BF16, 8).unwrap();
/// assert!(k.to_string().contains("ld.global.v8.bf16"));
/// assert!(k.waits_on_prior_grid()); // may be launched as a programmatic dependent
/// assert!(build_reduce(Reduction::Softmax, ScalarType::F32, 4).is_err());
/// ```
pub fn build_reduce(r: Reduction, ty: ScalarType, vx: i64) -> Result<Kernel> {
    build_reduce_indexed(r, ty, vx, ScalarType::I32)
}

/// [`build_reduce`] with lengths, strides and offsets of `index` type (`i32`, or `i64` for
/// tensors past 2^31 elements: [`host::index_type`] picks it).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::{build_reduce_indexed, Reduction};
/// let k = build_reduce_indexed(Reduction::Sum, ScalarType::BF16, 8, ScalarType::I64).unwrap();
/// let i64 = tilekit_ir::ParamKind::Scalar(ScalarType::I64);
/// assert!(k.params.iter().filter(|p| p.name.contains(".len")).all(|p| p.kind == i64));
/// ```
pub fn build_reduce_indexed(
    r: Reduction,
    ty: ScalarType,
    vx: i64,
    index: ScalarType,
) -> Result<Kernel> {
    host::check_dtype(r.name(), ty, &TYPES)?;
    let op = match r {
        Reduction::Sum => BinOp::Add,
        Reduction::Max => BinOp::Max,
        Reduction::Softmax => {
            return Err(OpsError::invalid(
                "build_reduce",
                "reduction",
                "softmax",
                "use build_softmax",
            ))
        }
    };
    let identity = if op == BinOp::Add { 0.0 } else { f64::NEG_INFINITY };
    let v = 16 / ty.size_bytes() as i64;
    let chunk = THREADS as i64 * v * 4;
    let b = KernelBuilder::new(r.name(), [THREADS, 1, 1])?;
    b.set_index_type(index)?;
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("y", ScalarType::F32, 1)?;
    let scratch = b.shared("partial", ScalarType::F32, THREADS as usize / 32)?;
    let d = dist::row_major(1, chunk, THREADS as i64, v)?;
    let row = b.block_id(Axis::X);
    let xv = View::global(&x, vx)?.pad(&[1, chunk])?;
    let fill = b.konst(float_lit(ty, identity)?);
    let n_pad = (x.lengths[1].clone() + Val::lit(chunk - 1)) / Val::lit(chunk) * Val::lit(chunk);
    b.grid_dependency_wait(); // programmatic dependent launch: before the first global access
    let acc = crate::tile::for_range(
        &b,
        &Val::lit(0),
        &n_pad,
        &Val::lit(chunk),
        &[b.f32(identity as f32)],
        |b, c0, acc| {
            let t = Window::new(b, &xv, &[1, chunk], &[row.clone(), c0], &d)?.load_or(b, &fill)?;
            let part = t.cast(b, ScalarType::F32)?.reduce_thread(b, op)?;
            Ok(vec![b.binary(op, &acc[0], &part)?])
        },
    )?;
    b.launch_dependents(); // the row has been read: the next grid may launch
    let total = block_reduce(&b, &acc[0], op, scratch)?;
    let first = b.cmp(CmpOp::Eq, &b.thread_id(Axis::X), &Val::lit(0))?;
    let off = y.descriptor(None)?.calculate_offset(std::slice::from_ref(&row))?;
    b.store(y.mem, &off, &[total], Some(&first))?;
    Ok(b.finish()?)
}

/// The longest row the register softmax ([`build_softmax`]) takes: 256 threads × 64 elements.
/// Longer rows go to the online kernel ([`build_softmax_online`]).
///
/// ```
/// assert_eq!(tilekit_ops::reduce::MAX_REGISTER_ROW, 16384);
/// ```
pub const MAX_REGISTER_ROW: i64 = 64 * THREADS as i64;

/// Row-chunks per thread the register softmax kernel needs for rows of `n` (at most 64
/// elements per thread: rows up to [`MAX_REGISTER_ROW`] = 16384; rows above are refused here
/// and go to the online kernel, see [`softmax_kernel`]).
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::reduce::softmax_chunks(ScalarType::F32, 16384).unwrap(), 16);
/// assert!(tilekit_ops::reduce::softmax_chunks(ScalarType::F32, 16385).is_err());
/// ```
pub fn softmax_chunks(ty: ScalarType, n: i64) -> Result<i64> {
    let v = 16 / ty.size_bytes() as i64;
    let u = (n + THREADS as i64 * v - 1) / (THREADS as i64 * v);
    if n < 1 || u * v > 64 {
        return Err(OpsError::invalid(
            "softmax",
            "row length",
            n,
            format!(
                "must be 1..={MAX_REGISTER_ROW} (the row is held in registers; \
                 longer rows take build_softmax_online)"
            ),
        ));
    }
    Ok(u)
}

/// Row softmax of rows of at most `chunks · 256 · V` elements (numerically stable: max, exp2
/// of scaled differences, sum, normalise); params `x`, `y` (2-D, same type).
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::reduce::build_softmax(ScalarType::F32, 1, 4).unwrap();
/// assert!(k.to_string().contains("ex2.approx"));
/// assert!(k.waits_on_prior_grid()); // may be launched as a programmatic dependent
/// ```
pub fn build_softmax(ty: ScalarType, chunks: i64, vx: i64) -> Result<Kernel> {
    build_softmax_threads(ty, chunks, vx, THREADS)
}

/// [`build_softmax`] with `threads` per block (a multiple of 32 up to 1024): rows of at most
/// `chunks · threads · V` elements.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::reduce::build_softmax_threads(ScalarType::BF16, 2, 8, 1024).unwrap();
/// assert_eq!(k.block_dim, [1024, 1, 1]);
/// assert!(tilekit_ops::reduce::build_softmax_threads(ScalarType::BF16, 2, 8, 100).is_err());
/// ```
pub fn build_softmax_threads(ty: ScalarType, chunks: i64, vx: i64, threads: u32) -> Result<Kernel> {
    host::check_dtype("softmax", ty, &TYPES)?;
    check_threads(threads)?;
    let v = 16 / ty.size_bytes() as i64;
    let len = threads as i64 * v * chunks;
    let b = KernelBuilder::new("softmax", [threads, 1, 1])?;
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("y", ty, 2)?;
    let scratch = b.shared("partial", ScalarType::F32, threads as usize / 32)?;
    let d = dist::row_major(1, len, threads as i64, v)?;
    let origin = [b.block_id(Axis::X), Val::lit(0)];
    let xv = View::global(&x, vx)?.pad(&[1, len])?;
    let yv = View::global(&y, vx)?.pad(&[1, len])?;
    let ninf = b.konst(float_lit(ty, f64::NEG_INFINITY)?);
    b.grid_dependency_wait(); // programmatic dependent launch: before the first global access
    let t = Window::new(&b, &xv, &[1, len], &origin, &d)?
        .load_or(&b, &ninf)?
        .cast(&b, ScalarType::F32)?;
    b.launch_dependents(); // the row is in registers: the next grid may launch
    let (e, _, s) = block_exp(&b, &t, scratch, false)?;
    let inv = b.binary(BinOp::Div, &b.f32(1.0), &s)?;
    let out = e.map(&b, |b, ev| Ok(b.binary(BinOp::Mul, ev, &inv)?))?.cast(&b, ty)?;
    Window::new(&b, &yv, &[1, len], &origin, &d)?.store(&b, &out)?;
    Ok(b.finish()?)
}

/// Row softmax of rows of any length, in two passes over the row in chunks of `256 · V · 4`
/// elements (V = 16 bytes / element size, 4 vectors in flight per thread): the "online"
/// softmax. Pass 1 keeps per thread a running max `m` and a running sum `s` of `exp(x − m)` in
/// f32 (when a chunk raises the max from `m` to `m'`: `s ← s · exp2((m − m')·log2 e) + Σ
/// exp2((x − m')·log2 e)`), then combines the threads: `M` = block max of `m`, `S` = block sum
/// of `s · exp2((m − M)·log2 e)`. Pass 2 reads the row again and stores
/// `cast(exp2((x − M)·log2 e) · (1/S))`. Params `x`, `y` (2-D, same type, runtime
/// lengths/strides); one block of 256 threads per row. The running max starts at the lowest
/// finite f32, so a thread whose elements are all padding (−∞) keeps `s = 0` and never forms
/// `−∞ − (−∞)`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::reduce::build_softmax_online(ScalarType::BF16, 8).unwrap();
/// assert_eq!(k.name, "softmax_online");
/// assert!(k.to_string().contains("ld.global.v8.bf16"));
/// assert!(tilekit_ops::reduce::build_softmax_online(ScalarType::F16, 8).is_err());
/// ```
pub fn build_softmax_online(ty: ScalarType, vx: i64) -> Result<Kernel> {
    build_softmax_online_tuned(ty, vx, OnlineTuning::default())
}

/// The launch shape of the online softmax kernel: threads per block, 16-byte vectors in flight
/// per thread and pass, and whether pass 2 walks the row backwards (the chunks pass 1 read last
/// are the likeliest still in L2, so a row larger than its share of L2 is re-read mostly from
/// L2 rather than DRAM).
///
/// ```
/// let t = tilekit_ops::reduce::OnlineTuning::default();
/// assert_eq!((t.threads, t.unroll, t.reverse, t.blocks_per_sm), (256, 4, true, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct OnlineTuning {
    /// Threads per block (a multiple of 32, at most 1024).
    pub threads: u32,
    /// 16-byte vectors per thread per chunk (1..=8).
    pub unroll: i64,
    /// Pass 2 walks the chunks last to first.
    pub reverse: bool,
    /// At most this many blocks per SM (0 = as many as registers allow), enforced by reserving
    /// shared memory: fewer rows in flight keep each row's bytes in L2 until pass 2 re-reads
    /// them.
    pub blocks_per_sm: u32,
}

impl Default for OnlineTuning {
    fn default() -> Self {
        OnlineTuning { threads: THREADS, unroll: 4, reverse: true, blocks_per_sm: 0 }
    }
}

/// How `api::softmax` splits rows too long for one block's registers over a thread-block
/// cluster, in one of two ways:
///
/// * `stream = false` ([`build_softmax_cluster`]): the row is held in the cluster's registers —
///   `threads` per block, at most `per_thread` elements per thread (≤ 64), the smallest
///   cluster of at most `max_cluster` blocks that holds the row; longer rows take the online
///   kernel.
/// * `stream = true` ([`build_softmax_stream_cluster`]): each block streams a slice of the row
///   twice (the second read from L1/L2) — `threads` per block, `per_thread` elements per
///   thread per chunk (16-byte vectors, 1..=8 of them), `max_cluster` blocks per row (fewer
///   for short rows): rows of any length.
///
/// At most 8 blocks per cluster is portable; H100 and H200 allow 16.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::ClusterTuning;
/// let t = ClusterTuning { threads: 512, per_thread: 64, max_cluster: 8, stream: false, stash: false, bulk: false, ring: 0, held: false };
/// assert_eq!(t.plan(ScalarType::F32, 65536), Some((2, 16)));   // 2 blocks × 512 × (16 · 4)
/// assert_eq!(t.plan(ScalarType::BF16, 262144), Some((8, 8)));
/// assert_eq!(t.plan(ScalarType::F32, 262145), None);
/// let s = ClusterTuning { threads: 256, per_thread: 16, max_cluster: 8, stream: true, stash: false, bulk: false, ring: 0, held: false };
/// assert_eq!(s.plan(ScalarType::F32, 262144), Some((8, 8)));   // 8 slices of 8 chunks of 4096
/// assert_eq!(s.plan(ScalarType::F32, 5000), Some((2, 1)));
/// assert_eq!(s.plan(ScalarType::F32, 16385), Some((8, 1)));     // 5 chunks → 8 blocks
/// assert_eq!(s.plan(ScalarType::F32, 1 << 24), Some((8, 512)));  // any length
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ClusterTuning {
    /// Threads per block (a multiple of 32, at most 1024).
    pub threads: u32,
    /// Most elements a thread holds (a multiple of 16 bytes' worth, at most 64).
    pub per_thread: i64,
    /// Most blocks per cluster (2..=16).
    pub max_cluster: u32,
    /// Stream slices twice (true) or hold the row in registers (false).
    #[serde(default)]
    pub stream: bool,
    /// Streaming only: keep each block's slice in shared memory (no second global read).
    #[serde(default)]
    pub stash: bool,
    /// Streaming only: bring each block's slice in with bulk copies
    /// ([`build_softmax_bulk_cluster`]) when the rows are 16-byte aligned whole vectors.
    #[serde(default)]
    pub bulk: bool,
    /// Bulk copies only: when 2 or more, a **persistent** grid ([`build_softmax_persistent`],
    /// as many blocks as fit the SMs at once) walks the rows, each block with a ring of this
    /// many stages of its slice (`ring − 1` rows in flight); 0 launches one cluster per row.
    #[serde(default)]
    pub ring: u32,
    /// Bulk copies only: hold the slice in registers and exponentiate each element once
    /// ([`build_softmax_bulk_held`]; at most 64 elements per thread).
    #[serde(default)]
    pub held: bool,
}

impl Default for ClusterTuning {
    fn default() -> Self {
        ClusterTuning {
            threads: 256,
            per_thread: 16,
            max_cluster: 8,
            stream: true,
            stash: false,
            bulk: false,
            ring: 0,
            held: false,
        }
    }
}

impl ClusterTuning {
    /// `(cluster size, chunks per thread)` (registers) or `(cluster size, chunks per slice)`
    /// (streaming) for rows of `n` elements of `ty`, or `None` when the row does not fit
    /// `max_cluster` blocks' registers.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let t = tilekit_ops::reduce::ClusterTuning { threads: 256, per_thread: 32, max_cluster: 16, stream: false, stash: false, bulk: false, ring: 0, held: false };
    /// assert_eq!(t.plan(ScalarType::BF16, 65536), Some((8, 4)));
    /// ```
    pub fn plan(&self, ty: ScalarType, n: i64) -> Option<(u32, i64)> {
        let v = 16 / ty.size_bytes() as i64;
        if self.stream {
            let chunk = self.threads as i64 * v * self.unroll(ty);
            // a power of two (clusters are placed on whole groups of SMs) up to max_cluster
            let blocks = ((n + chunk - 1) / chunk).max(1) as u64;
            let c =
                (blocks.next_power_of_two() as i64).clamp(2, self.max_cluster.clamp(2, 16) as i64);
            let slice = (n + c * chunk - 1) / (c * chunk);
            // a stashed slice must fit the shared memory of a block (with room for another)
            if (self.stash || self.bulk) && slice * chunk * ty.size_bytes() as i64 > 100 * 1024 {
                return None;
            }
            // a persistent ring's stages must fit together
            let stages = if self.bulk { i64::from(self.ring) } else { 0 };
            if stages >= 2 && stages * slice * chunk * ty.size_bytes() as i64 > 200 * 1024 {
                return None;
            }
            // held slices: at most 64 elements a thread
            if self.bulk && self.held && slice * self.unroll(ty) * v > 64 {
                return None;
            }
            return Some((c as u32, slice));
        }
        let max_chunks = (self.per_thread.min(64) / v).max(1);
        let per_chunk = self.threads as i64 * v;
        (2..=self.max_cluster.min(16)).find_map(|c| {
            let chunks = (n + c as i64 * per_chunk - 1) / (c as i64 * per_chunk);
            (chunks <= max_chunks).then_some((c, chunks.max(1)))
        })
    }

    /// 16-byte vectors per thread per chunk of the streaming kernel (`per_thread / V`, 1..=8).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// assert_eq!(tilekit_ops::reduce::ClusterTuning::default().unroll(ScalarType::F32), 4);
    /// ```
    pub fn unroll(&self, ty: ScalarType) -> i64 {
        (self.per_thread / (16 / ty.size_bytes() as i64)).clamp(1, 8)
    }

    /// The streaming kernel's [`OnlineTuning`] (pass 2 walks each slice backwards, so it
    /// starts with the bytes read last).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let o = tilekit_ops::reduce::ClusterTuning::default().online(ScalarType::BF16);
    /// assert_eq!((o.threads, o.unroll, o.reverse), (256, 2, true));
    /// ```
    pub fn online(&self, ty: ScalarType) -> OnlineTuning {
        OnlineTuning {
            threads: self.threads,
            unroll: self.unroll(ty),
            reverse: true,
            blocks_per_sm: 0,
        }
    }
}

/// The dtype, threads per block and cluster size of a cluster softmax kernel.
fn check_cluster_shape(ty: ScalarType, threads: u32, cluster: u32) -> Result<()> {
    host::check_dtype("softmax", ty, &TYPES)?;
    check_threads(threads)?;
    if !(1..=16).contains(&cluster) {
        return Err(OpsError::invalid("softmax", "cluster size", cluster, "1..=16 blocks"));
    }
    Ok(())
}

fn check_threads(threads: u32) -> Result<()> {
    if threads == 0 || !threads.is_multiple_of(32) || threads > 1024 {
        return Err(OpsError::invalid(
            "softmax",
            "threads per block",
            threads,
            "a multiple of 32 in 32..=1024",
        ));
    }
    Ok(())
}

/// [`build_softmax_online`] with an explicit [`OnlineTuning`].
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::{build_softmax_online_tuned, OnlineTuning};
/// let t = OnlineTuning { threads: 1024, unroll: 2, reverse: false, blocks_per_sm: 1 };
/// assert_eq!(build_softmax_online_tuned(ScalarType::F32, 4, t).unwrap().block_dim, [1024, 1, 1]);
/// assert!(build_softmax_online_tuned(ScalarType::F32, 4, OnlineTuning { unroll: 0, ..t }).is_err());
/// ```
pub fn build_softmax_online_tuned(ty: ScalarType, vx: i64, tuning: OnlineTuning) -> Result<Kernel> {
    build_streaming(ty, vx, tuning, None, None, ScalarType::I32)
}

/// [`build_softmax_online_tuned`] with lengths, strides and offsets of `index` type (`i64` for
/// tensors past 2^31 elements: [`host::index_type`] picks it; rows of any length, one block a
/// row).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::{build_softmax_online_indexed, OnlineTuning};
/// let k = build_softmax_online_indexed(ScalarType::BF16, 8, OnlineTuning::default(), ScalarType::I64).unwrap();
/// let i64 = tilekit_ir::ParamKind::Scalar(ScalarType::I64);
/// assert!(k.params.iter().filter(|p| p.name.contains(".len")).all(|p| p.kind == i64));
/// ```
pub fn build_softmax_online_indexed(
    ty: ScalarType,
    vx: i64,
    tuning: OnlineTuning,
    index: ScalarType,
) -> Result<Kernel> {
    build_streaming(ty, vx, tuning, None, None, index)
}

/// `exp2((a − m)·log2 e)` in f32.
fn exp_diff(b: &KernelBuilder, a: &Val, m: &Val) -> Result<Val> {
    let z = b.binary(BinOp::Mul, &b.binary(BinOp::Sub, a, m)?, &b.f32(std::f32::consts::LOG2_E))?;
    Ok(b.unary(UnOp::Exp2Approx, &z)?)
}

/// The block's share of a softmax over the f32 values `t` its threads hold (one block's slice
/// of a row, or the whole row): `m` = the block's max (with `floor`, at least the lowest finite
/// f32, so a block whose values are all padding (−∞) gets `e = 0`, `s = 0` instead of
/// `exp(−∞ − (−∞))`), `e = exp2((t − m)·log2 e)` element by element, `s` = the block's sum of
/// `e`; both reductions through `scratch` (one f32 per warp). Returns `(e, m, s)`.
fn block_exp(
    b: &KernelBuilder,
    t: &crate::tile::DTile,
    scratch: tilekit_ir::MemRef,
    floor: bool,
) -> Result<(crate::tile::DTile, Val, Val)> {
    let mx = block_reduce(b, &t.reduce_thread(b, BinOp::Max)?, BinOp::Max, scratch)?;
    let m = if floor { b.binary(BinOp::Max, &mx, &b.f32(f32::MIN))? } else { mx };
    let e = t.map(b, |b, xv| Ok(exp_diff(b, xv, &m)?))?;
    let s = block_reduce(b, &e.reduce_thread(b, BinOp::Add)?, BinOp::Add, scratch)?;
    Ok((e, m, s))
}

/// The row's `(M, S)` from every part's `(m_j, s_j)` (`parts[j] = [m_j, s_j]`): `M = max m_j`,
/// `S = Σ s_j · exp2((m_j − M)·log2 e)` — each part's sum rescaled to the common max.
fn combine_pairs(b: &KernelBuilder, parts: &[Vec<Val>]) -> Result<(Val, Val)> {
    let big_m =
        crate::tile::tree_reduce(b, parts.iter().map(|p| p[0].clone()).collect(), BinOp::Max)?;
    let scaled = parts
        .iter()
        .map(|p| Ok(b.binary(BinOp::Mul, &p[1], &exp_diff(b, &p[0], &big_m)?)?))
        .collect::<Result<Vec<_>>>()?;
    Ok((big_m.clone(), crate::tile::tree_reduce(b, scaled, BinOp::Add)?))
}

/// Thread `first` initialises mbarriers `0..count` of `bars` for one arrival each and
/// publishes them (`fence.mbarrier_init`); then the block synchronises.
fn init_chunk_barriers(
    b: &KernelBuilder,
    first: &Pred,
    bars: tilekit_ir::MemRef,
    count: i64,
) -> Result<()> {
    b.if_then(first, |b| {
        for k in 0..count {
            b.mbarrier_init(bars, &Val::lit(k), &Val::lit(1))?;
        }
        b.fence_mbarrier_init();
        Ok(())
    })?;
    b.barrier();
    Ok(())
}

/// One thread's bulk copies of a row's slice for the bulk-copy softmax kernels: chunk `k`
/// (`c` elements of `x` from column `lo + k·c` of the row starting at element `xrow`, clipped
/// at the row length `n`) lands at `buf[dst + k·c]` and completes on mbarrier `bar0 + k`,
/// which expects exactly its bytes (0 for a chunk past the row's end, which copies nothing).
#[allow(clippy::too_many_arguments)]
fn issue_slice(
    b: &KernelBuilder,
    x: &tilekit_ir::TensorParam,
    buf: tilekit_ir::MemRef,
    bars: tilekit_ir::MemRef,
    (xrow, lo, n): (&Val, &Val, &Val),
    (c, chunks): (i64, i64),
    dst: &Val,
    bar0: &Val,
) -> std::result::Result<(), tilekit_ir::IrError> {
    let size = x.mem.elem.size_bytes() as i64;
    for k in 0..chunks {
        let c0 = lo.clone() + lit(k * c);
        let left = b.binary(BinOp::Sub, n, &c0)?;
        let len = b.binary(BinOp::Max, &b.binary(BinOp::Min, &left, &lit(c))?, &lit(0))?;
        let bar = bar0.clone() + lit(k);
        b.mbarrier_arrive(bars, &bar, Some(&(len.clone() * lit(size))))?;
        let some = b.cmp(CmpOp::Gt, &len, &lit(0))?;
        b.if_then(&some, |b| {
            let at = dst.clone() + lit(k * c);
            b.bulk_load(buf, &at, x.mem, &(xrow.clone() + c0.clone()), &len, bars, &bar)
        })?;
    }
    Ok(())
}

/// The cluster's (max, sum of `exp(x − max)`) from every block's `(m, s)`: thread 0 leaves its
/// block's pair in `stats` (2 f32 of shared memory), `barrier.cluster`, then every thread reads
/// the `cluster` pairs through distributed shared memory and combines them, rescaling each
/// sum to the common max. The caller ends the kernel with another `barrier.cluster` (no block
/// may exit while another still reads its `stats`).
fn cluster_combine(
    b: &KernelBuilder,
    name: &str,
    stats: tilekit_ir::MemRef,
    cluster: u32,
    m: &Val,
    s: &Val,
) -> Result<(Val, Val)> {
    cluster_combine_at(b, name, stats, &Val::lit(0), cluster, m, s)
}

/// [`cluster_combine`] with the pair at element `at` of `stats` (double-buffered stats).
fn cluster_combine_at(
    b: &KernelBuilder,
    name: &str,
    stats: tilekit_ir::MemRef,
    at: &Val,
    cluster: u32,
    m: &Val,
    s: &Val,
) -> Result<(Val, Val)> {
    b.note(format!("{name}: every block's (max, sum) through distributed shared memory"));
    let first = b.cmp(CmpOp::Eq, &b.thread_id(Axis::X), &Val::lit(0))?;
    b.if_then(&first, |b| b.store(stats, at, &[m.clone(), s.clone()], None))?;
    b.cluster_barrier()?;
    let parts = (0..cluster as i64)
        .map(|j| Ok(b.load_cluster(stats, &Val::lit(j), at, 2)?))
        .collect::<Result<Vec<_>>>()?;
    combine_pairs(b, &parts)
}

/// The two-pass streaming softmax both [`build_softmax_online_tuned`] and
/// [`build_softmax_staged`] are: pass 1 walks the row in chunks keeping a running max and
/// rescaled sum per thread (and, with `stash = Some(cap)`, leaves each chunk in a shared row
/// buffer of `cap` elements); the block combines them; pass 2 walks the row again — from the
/// stash when there is one, else from global memory, backwards when `tuning.reverse` — and
/// stores the normalised values.
fn build_streaming(
    ty: ScalarType,
    vx: i64,
    tuning: OnlineTuning,
    stash: Option<i64>,
    cluster: Option<(u32, i64)>,
    index: ScalarType,
) -> Result<Kernel> {
    host::check_dtype("softmax", ty, &TYPES)?;
    let OnlineTuning { threads, unroll, reverse, blocks_per_sm } = tuning;
    check_threads(threads)?;
    if !(1..=8).contains(&unroll) {
        return Err(OpsError::invalid("softmax", "unroll", unroll, "1..=8 vectors per thread"));
    }
    let v = 16 / ty.size_bytes() as i64;
    let chunk = threads as i64 * v * unroll;
    let name = match (stash, cluster) {
        (Some(_), Some(_)) => "softmax_stream_cluster_staged",
        (Some(_), None) => "softmax_staged",
        (None, Some(_)) => "softmax_stream_cluster",
        (None, None) => "softmax_online",
    };
    let b = KernelBuilder::new(name, [threads, 1, 1])?;
    b.set_index_type(index)?;
    if let Some((c, _)) = cluster {
        b.set_cluster_dim([c, 1, 1])?;
    }
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("y", ty, 2)?;
    let scratch = b.shared("partial", ScalarType::F32, threads as usize / 32)?;
    let stash = match stash {
        Some(cap) => {
            let cap = (cap.max(1) + chunk - 1) / chunk * chunk;
            let desc = tilekit_layout::TensorDescriptor::packed(vec![1, cap], Some(v))?;
            Some(View::shared(&b, "row", ty, &desc)?)
        }
        None => None,
    };
    if blocks_per_sm > 0 {
        // an SM has 228 KiB of shared memory: N + 1 blocks must not fit
        let bytes = 228 * 1024 / (blocks_per_sm as usize + 1) + 4096;
        b.shared("occupancy_limit", ScalarType::F32, bytes / 4)?;
    }
    let d = dist::row_major(1, chunk, threads as i64, v)?;
    let stats = match cluster {
        Some(_) => Some(b.shared("stats", ScalarType::F32, 2)?),
        None => None,
    };
    let row = match cluster {
        Some((c, _)) => b.block_id(Axis::X) / Val::lit(c as i64),
        None => b.block_id(Axis::X),
    };
    let xv = View::global(&x, vx)?.pad(&[1, chunk])?;
    let yv = View::global(&y, vx)?.pad(&[1, chunk])?;
    let ninf = b.konst(float_lit(ty, f64::NEG_INFINITY)?);
    let n_pad = (x.lengths[1].clone() + Val::lit(chunk - 1)) / Val::lit(chunk) * Val::lit(chunk);
    // the columns this block walks: the whole row, or its cluster rank's slice of it (without
    // a stash the last rank also takes whatever lies past the slices, so every row length is
    // covered; a stash holds one slice)
    let (lo, hi) = match cluster {
        Some((c, slice)) => {
            let rank = b.cluster_cta_rank();
            let lo = rank.clone() * Val::lit(slice * chunk);
            let end = b.binary(BinOp::Min, &(lo.clone() + Val::lit(slice * chunk)), &n_pad)?;
            let hi = if stash.is_some() {
                end
            } else {
                let last = b.cmp(CmpOp::Eq, &rank, &Val::lit(c as i64 - 1))?;
                b.select(&last, &n_pad, &end)?
            };
            (lo, hi)
        }
        None => (Val::lit(0), n_pad.clone()),
    };
    b.note(format!("{name} pass 1: running max and rescaled running sum per thread"));
    let ms = crate::tile::for_range(
        &b,
        &lo,
        &hi,
        &Val::lit(chunk),
        &[b.f32(f32::MIN), b.f32(0.0)],
        |b, c0, ms| {
            let raw = Window::new(b, &xv, &[1, chunk], &[row.clone(), c0.clone()], &d)?
                .load_or(b, &ninf)?;
            if let Some(st) = &stash {
                let at = c0.clone() - lo.clone();
                Window::new(b, st, &[1, chunk], &[Val::lit(0), at], &d)?.store(b, &raw)?;
            }
            let t = raw.cast(b, ScalarType::F32)?;
            let (m, s) = (&ms[0], &ms[1]);
            let m2 = b.binary(BinOp::Max, m, &t.reduce_thread(b, BinOp::Max)?)?;
            let e = t.map(b, |b, xv| Ok(exp_diff(b, xv, &m2)?))?.reduce_thread(b, BinOp::Add)?;
            let s2 = b.binary(BinOp::Add, &b.binary(BinOp::Mul, s, &exp_diff(b, m, &m2)?)?, &e)?;
            Ok(vec![m2, s2])
        },
    )?;
    let big_m = block_reduce(&b, &ms[0], BinOp::Max, scratch)?;
    let part = b.binary(BinOp::Mul, &ms[1], &exp_diff(&b, &ms[0], &big_m)?)?;
    let big_s = block_reduce(&b, &part, BinOp::Add, scratch)?;
    let (big_m, big_s) = match (cluster, stats) {
        (Some((c, _)), Some(stats)) => cluster_combine(&b, name, stats, c, &big_m, &big_s)?,
        _ => (big_m, big_s),
    };
    let inv = b.binary(BinOp::Div, &b.f32(1.0), &big_s)?;
    b.note(format!("{name} pass 2: normalise and store"));
    crate::tile::for_range(&b, &lo, &hi, &Val::lit(chunk), &[], |b, c0, _| {
        let c = if reverse { lo.clone() + hi.clone() - Val::lit(chunk) - c0 } else { c0 };
        let raw = match &stash {
            Some(st) => {
                let at = c.clone() - lo.clone();
                Window::new(b, st, &[1, chunk], &[Val::lit(0), at], &d)?.load(b)?
            }
            None => Window::new(b, &xv, &[1, chunk], &[row.clone(), c.clone()], &d)?.load(b)?,
        };
        let out = raw
            .cast(b, ScalarType::F32)?
            .map(b, |b, xv| Ok(b.binary(BinOp::Mul, &exp_diff(b, xv, &big_m)?, &inv)?))?
            .cast(b, ty)?;
        Window::new(b, &yv, &[1, chunk], &[row.clone(), c], &d)?.store(b, &out)?;
        Ok(vec![])
    })?;
    if cluster.is_some() {
        b.note(format!("{name}: no block exits while another may still read its stats"));
        b.cluster_barrier()?;
    }
    Ok(b.finish()?)
}

/// Row softmax for rows of up to `cap` elements kept in **shared memory**: pass 1 streams the
/// row from global memory in chunks (online max and sum, as [`build_softmax_online_tuned`])
/// and leaves each chunk in a shared row buffer; pass 2 reads the row back from shared memory,
/// so global memory sees one read and one write per element, as with the register kernel, for
/// rows too long for registers (a bf16 row of 65536 is 128 KiB of the SM's 227). One block per
/// row, `threads` threads, `unroll` 16-byte vectors per thread per chunk; `cap` is rounded up
/// to whole chunks and must fit the shared memory (named error otherwise).
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::reduce::build_softmax_staged(ScalarType::BF16, 8, 65536, 512, 4).unwrap();
/// assert_eq!(k.name, "softmax_staged");
/// assert!(k.to_string().contains("st.shared.v8.bf16"));
/// assert!(tilekit_ops::reduce::build_softmax_staged(ScalarType::F32, 4, 65536, 512, 4).is_err()); // 256 KiB
/// ```
pub fn build_softmax_staged(
    ty: ScalarType,
    vx: i64,
    cap: i64,
    threads: u32,
    unroll: i64,
) -> Result<Kernel> {
    let tuning = OnlineTuning { threads, unroll, reverse: false, blocks_per_sm: 0 };
    build_streaming(ty, vx, tuning, Some(cap), None, ScalarType::I32)
}

/// Row softmax **streamed by a cluster**: each of the `cluster` blocks of a row's cluster runs
/// the online kernel ([`build_softmax_online_tuned`]) over its own slice of the row (`slice`
/// chunks of `threads · V · unroll` elements; the last block also takes any columns past
/// `cluster · slice` chunks, so every row length is right, if unbalanced), the blocks combine their (max, sum) through
/// distributed shared memory, and each re-reads only its own slice — a few tens of KiB read
/// moments before, so the second read comes from L1/L2, not DRAM: one DRAM read and one write
/// per element for rows of any length, with the small, light blocks of the online kernel.
/// Launch on `cluster · rows` blocks along x.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::{build_softmax_stream_cluster, OnlineTuning};
/// let t = OnlineTuning { threads: 256, unroll: 4, reverse: true, blocks_per_sm: 0 };
/// let k = build_softmax_stream_cluster(ScalarType::F32, 4, t, 8, 2).unwrap();
/// assert_eq!((k.name.as_str(), k.cluster_dim), ("softmax_stream_cluster", [8, 1, 1]));
/// assert!(build_softmax_stream_cluster(ScalarType::F32, 4, t, 1, 2).is_err());
/// ```
pub fn build_softmax_stream_cluster(
    ty: ScalarType,
    vx: i64,
    tuning: OnlineTuning,
    cluster: u32,
    slice: i64,
) -> Result<Kernel> {
    build_softmax_stream_cluster_stashed(ty, vx, tuning, cluster, slice, false)
}

/// [`build_softmax_stream_cluster`], and with `stash` each block also keeps its slice in shared
/// memory during pass 1 and normalises from there (no second global read at all; `slice ·
/// chunk` elements of shared memory per block). With a stash, columns past `cluster · slice`
/// chunks are not written: `api::softmax` picks a slice that covers the row
/// ([`ClusterTuning::plan`]).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::{build_softmax_stream_cluster_stashed, OnlineTuning};
/// let t = OnlineTuning { threads: 512, unroll: 4, reverse: true, blocks_per_sm: 0 };
/// let k = build_softmax_stream_cluster_stashed(ScalarType::F32, 4, t, 16, 2, true).unwrap();
/// assert_eq!(k.shared_bytes(), 2 * 8192 * 4 + 16 * 4 + 8); // the slice, the warp partials, the stats
/// ```
pub fn build_softmax_stream_cluster_stashed(
    ty: ScalarType,
    vx: i64,
    tuning: OnlineTuning,
    cluster: u32,
    slice: i64,
    stash: bool,
) -> Result<Kernel> {
    if !(2..=16).contains(&cluster) {
        return Err(OpsError::invalid("softmax", "cluster size", cluster, "2..=16 blocks"));
    }
    if slice < 1 {
        return Err(OpsError::invalid("softmax", "slice", slice, "at least 1 chunk per block"));
    }
    let v = 16 / ty.size_bytes() as i64;
    let cap = stash.then_some(slice * tuning.threads as i64 * v * tuning.unroll);
    build_streaming(ty, vx, tuning, cap, Some((cluster, slice)), ScalarType::I32)
}

/// The 16-byte vector of `ty` in elements, after checking `chunks` of them per thread hold at
/// most 64 elements (what the register-resident row kernels keep per thread).
pub(crate) fn check_chunks(ty: ScalarType, chunks: i64) -> Result<i64> {
    let v = 16 / ty.size_bytes() as i64;
    if chunks < 1 || chunks * v > 64 {
        return Err(OpsError::invalid(
            "softmax",
            "chunks",
            chunks,
            format!("1..={} (at most 64 elements per thread)", 64 / v),
        ));
    }
    Ok(v)
}

/// Row softmax with each row split over a **cluster** of `cluster` blocks (sm_90; see the
/// module essay): block `r` of the cluster holds columns `[r·L, (r+1)·L)` of its row in
/// registers (`L = threads · V · chunks`, V = 16 bytes / element size), reduces its max and
/// sum, and the blocks exchange them through distributed shared memory, so the row is read
/// once — rows up to `cluster · L` (e.g. 8 · 512 · 64 = 262144; columns past that are not
/// written: `api::softmax` picks a shape that holds the row, see [`ClusterTuning::plan`]). Launch on a grid of
/// `cluster · rows` blocks along x; params `x`, `y` (2-D, same type). A block whose columns are
/// all past the row's end contributes nothing (its max starts at the lowest finite f32).
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::reduce::build_softmax_cluster(ScalarType::BF16, 8, 4, 512, 8).unwrap();
/// assert_eq!((k.name.as_str(), k.cluster_dim), ("softmax_cluster", [4, 1, 1]));
/// assert!(k.to_string().contains("ld.shared::cluster.v2.f32"));
/// assert!(tilekit_ops::reduce::build_softmax_cluster(ScalarType::F32, 4, 32, 512, 8).is_err());
/// ```
pub fn build_softmax_cluster(
    ty: ScalarType,
    vx: i64,
    cluster: u32,
    threads: u32,
    chunks: i64,
) -> Result<Kernel> {
    check_cluster_shape(ty, threads, cluster)?;
    let v = check_chunks(ty, chunks)?;
    let len = threads as i64 * v * chunks;
    let b = KernelBuilder::new("softmax_cluster", [threads, 1, 1])?;
    b.set_cluster_dim([cluster, 1, 1])?;
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("y", ty, 2)?;
    let scratch = b.shared("partial", ScalarType::F32, threads as usize / 32)?;
    let stats = b.shared("stats", ScalarType::F32, 2)?;
    let d = dist::row_major(1, len, threads as i64, v)?;
    let rank = b.cluster_cta_rank();
    let origin = [b.block_id(Axis::X) / Val::lit(cluster as i64), rank * Val::lit(len)];
    let xv = View::global(&x, vx)?.pad(&[1, len])?;
    let yv = View::global(&y, vx)?.pad(&[1, len])?;
    let ninf = b.konst(float_lit(ty, f64::NEG_INFINITY)?);
    b.note("softmax_cluster: this block's columns, max and sum");
    let t = Window::new(&b, &xv, &[1, len], &origin, &d)?
        .load_or(&b, &ninf)?
        .cast(&b, ScalarType::F32)?;
    let (e, m, s) = block_exp(&b, &t, scratch, true)?;
    let (big_m, big_s) = cluster_combine(&b, "softmax_cluster", stats, cluster, &m, &s)?;
    let f = b.binary(BinOp::Div, &exp_diff(&b, &m, &big_m)?, &big_s)?;
    let out = e.map(&b, |b, ev| Ok(b.binary(BinOp::Mul, ev, &f)?))?.cast(&b, ty)?;
    Window::new(&b, &yv, &[1, len], &origin, &d)?.store(&b, &out)?;
    b.note("softmax_cluster: no block exits while another may still read its stats");
    b.cluster_barrier()?;
    Ok(b.finish()?)
}

/// The softmax kernel for rows of `n` elements: the register kernel ([`build_softmax`] with
/// [`softmax_chunks`]) when the row fits in registers (`n ≤ 16384`), else the online kernel
/// ([`build_softmax_online`]). `n < 1` is refused.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::softmax_kernel;
/// assert_eq!(softmax_kernel(ScalarType::F32, 16384, 4).unwrap().name, "softmax");
/// assert_eq!(softmax_kernel(ScalarType::F32, 16385, 1).unwrap().name, "softmax_online");
/// assert!(softmax_kernel(ScalarType::F32, 0, 1).is_err());
/// ```
pub fn softmax_kernel(ty: ScalarType, n: i64, vx: i64) -> Result<Kernel> {
    if n > MAX_REGISTER_ROW {
        build_softmax_online(ty, vx)
    } else {
        build_softmax(ty, softmax_chunks(ty, n)?, vx)
    }
}

/// `max(a, b)`, NaN if either is NaN: the kernels' `max.NaN` in the reference.
fn max_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// CPU reference in `f64`, read from the input buffer row by row: row sums and maxima as an
/// `f64` buffer of `m`, the softmax rounded to the output type `ty` (`m × n`). A NaN in a row
/// makes its maximum NaN and its softmax NaN throughout, as the kernels (and PyTorch) give.
///
/// ```
/// use tilekit_ir::{interp::HostBuffer, ScalarType};
/// use tilekit_ops::reduce::{reference, Reduction};
/// let x = HostBuffer::from_f32(&[1.0, 3.0, 2.0, -1.0]);
/// let r = reference(Reduction::Max, &x, 2, 2, ScalarType::F32).unwrap();
/// assert_eq!(r.to_f64(), Some(vec![3.0, 2.0]));
/// let s = reference(Reduction::Softmax, &x, 2, 2, ScalarType::F32).unwrap();
/// assert_eq!(s.to_f32().unwrap()[0], (1.0 / (1.0 + 2f64.exp())) as f32);
/// assert!(reference(Reduction::Sum, &x, 3, 2, ScalarType::F32).is_err()); // 6 > 4 elements
/// let x = HostBuffer::from_f32(&[f32::NAN, 3.0, 2.0, -1.0]);
/// let r = reference(Reduction::Max, &x, 2, 2, ScalarType::F32).unwrap().to_f64().unwrap();
/// assert!(r[0].is_nan() && r[1] == 2.0);
/// ```
pub fn reference(
    r: Reduction,
    x: &HostBuffer,
    m: usize,
    n: usize,
    ty: ScalarType,
) -> Result<HostBuffer> {
    if m.checked_mul(n).is_none_or(|mn| mn > x.len()) {
        return Err(OpsError::invalid(
            "reduce reference",
            "rows × columns",
            format!("{m} × {n}"),
            format!("at most the input's {} elements", x.len()),
        ));
    }
    let row = |i: usize| (i * n..(i + 1) * n).map(move |j| host::value(x, j));
    match r {
        Reduction::Sum => host::fill_with(ScalarType::F64, m, |i| row(i).sum::<f64>().to_bits()),
        Reduction::Max => host::fill_with(ScalarType::F64, m, |i| {
            row(i).fold(f64::NEG_INFINITY, max_nan).to_bits()
        }),
        Reduction::Softmax => host::fill_rows(ty, m, n, |i, out| {
            let mx = row(i).fold(f64::NEG_INFINITY, max_nan);
            let mut s = 0.0;
            for (o, v) in out.iter_mut().zip(row(i)) {
                let e = (v - mx).exp();
                s += e;
                *o = e.to_bits();
            }
            for o in out.iter_mut() {
                *o = host::round_bits(ty, f64::from_bits(*o) / s);
            }
        }),
    }
}

/// Row softmax with each block's slice of the row **brought in by bulk copies** (sm_90): the
/// cluster's `cluster` blocks each own `chunks` chunks of `threads · V · unroll` elements of a
/// row; thread 0 issues one bulk copy per chunk into shared memory at once (each completing on
/// its own mbarrier), so a block has its whole slice in flight while its threads reduce the
/// chunks that have landed (online max and sum); the blocks combine (max, sum) through
/// distributed shared memory and normalise from shared memory — one global read and one write
/// per element, with no thread waiting on its own loads.
///
/// ```text
///   thread 0:  arrive.expect_tx(bar[k], bytes of chunk k); cp.async.bulk x[row, lo + k·C ..] → buf[k·C ..]   k = 0..chunks
///   all:       for k: wait(bar[k], 0); m, s ⊕= chunk k of buf          (pass 1, from shared memory)
///              block reduce; barrier.cluster; (M, S) from every block's stats
///              for k: y[row, lo + k·C ..] = exp2((buf − M)·log2 e) / S   (pass 2, from shared memory)
/// ```
///
/// The rows must be 16-byte aligned with a length that is a multiple of 16 bytes (bulk copies
/// move whole 16-byte units): the kernel promises full 16-byte vectors, so binding checks it.
/// Columns past `cluster · chunks · C` are not written (`api::softmax` picks a covering shape).
/// Launch on `cluster · rows` blocks along x.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::reduce::build_softmax_bulk_cluster(ScalarType::F32, 4, 256, 4, 2).unwrap();
/// assert_eq!((k.name.as_str(), k.cluster_dim), ("softmax_bulk_cluster", [4, 1, 1]));
/// assert_eq!(k.shared_bytes(), 2 * 4096 * 4 + 8 * 4 + 2 * 4 + 2 * 8);
/// assert!(k.to_string().contains("cp.async.bulk.shared.global"));
/// ```
pub fn build_softmax_bulk_cluster(
    ty: ScalarType,
    cluster: u32,
    threads: u32,
    unroll: i64,
    chunks: i64,
) -> Result<Kernel> {
    check_cluster_shape(ty, threads, cluster)?;
    if !(1..=8).contains(&unroll) {
        return Err(OpsError::invalid("softmax", "unroll", unroll, "1..=8 vectors per thread"));
    }
    let size = ty.size_bytes() as i64;
    let v = 16 / size;
    let c = threads as i64 * v * unroll;
    if chunks < 1 || chunks * c * size > 200 * 1024 {
        return Err(OpsError::invalid(
            "softmax",
            "chunks",
            chunks,
            format!(
                "1..={} (the slice must fit 200 KiB of shared memory)",
                200 * 1024 / (c * size)
            ),
        ));
    }
    let slice = chunks * c;
    let b = KernelBuilder::new("softmax_bulk_cluster", [threads, 1, 1])?;
    if cluster > 1 {
        b.set_cluster_dim([cluster, 1, 1])?;
    }
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("y", ty, 2)?;
    // full 16-byte vectors: the binding checks 16-byte aligned rows
    x.descriptor(Some((v, 1)))?;
    y.descriptor(Some((v, 1)))?;
    let scratch = b.shared("partial", ScalarType::F32, threads as usize / 32)?;
    let stats = b.shared("stats", ScalarType::F32, 2)?;
    let buf = b.shared("slice", ty, slice as usize)?;
    let bars = b.mbarrier("chunk", chunks as usize)?;
    let rank = b.cluster_cta_rank();
    let row = b.block_id(Axis::X) / lit(cluster as i64);
    let n = x.lengths[1].clone();
    let lo = rank * lit(slice);
    let (xrow, yrow) = (row.clone() * x.strides[0].clone(), row * y.strides[0].clone());
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
    b.note("softmax_bulk_cluster: one mbarrier per chunk, every chunk's bulk copy in flight");
    init_chunk_barriers(&b, &first, bars, chunks)?;
    b.if_then(&first, |b| {
        let lit0 = lit(0);
        issue_slice(b, &x, buf, bars, (&xrow, &lo, &n), (c, chunks), &lit0, &lit0)
    })?;
    // the vectors of chunk k this thread owns: (offset in the slice, in-row mask)
    let vectors = |b: &KernelBuilder, k: &Val| -> Result<Vec<(Val, Pred)>> {
        (0..unroll)
            .map(|u| {
                let off = k.clone() * lit(c) + (lit(u * threads as i64) + tid.clone()) * lit(v);
                let inside = b.cmp(CmpOp::Lt, &(lo.clone() + off.clone()), &n)?;
                Ok((off, inside))
            })
            .collect()
    };
    let ninf = b.f32(f32::NEG_INFINITY);
    b.note("softmax_bulk_cluster pass 1: online max and sum over the landed chunks");
    let ms = crate::tile::for_range(
        &b,
        &lit(0),
        &lit(chunks),
        &lit(1),
        &[b.f32(f32::MIN), b.f32(0.0)],
        |b, k, ms| {
            b.mbarrier_wait(bars, &k, &lit(0))?;
            let mut xs = vec![];
            for (off, inside) in vectors(b, &k)? {
                for e in b.load(buf, &off, v as usize, Some(&inside))? {
                    let f = b.cvt(&e, ScalarType::F32)?;
                    xs.push(b.select(&inside, &f, &ninf)?);
                }
            }
            let (m, s) = (&ms[0], &ms[1]);
            let mx = crate::tile::tree_reduce(b, xs.clone(), BinOp::Max)?;
            let m2 = b.binary(BinOp::Max, m, &mx)?;
            let es = xs.iter().map(|x| exp_diff(b, x, &m2)).collect::<Result<Vec<_>>>()?;
            let e = crate::tile::tree_reduce(b, es, BinOp::Add)?;
            let s2 = b.binary(BinOp::Add, &b.binary(BinOp::Mul, s, &exp_diff(b, m, &m2)?)?, &e)?;
            Ok(vec![m2, s2])
        },
    )?;
    let big_m = block_reduce(&b, &ms[0], BinOp::Max, scratch)?;
    let part = b.binary(BinOp::Mul, &ms[1], &exp_diff(&b, &ms[0], &big_m)?)?;
    let big_s = block_reduce(&b, &part, BinOp::Add, scratch)?;
    let (big_m, big_s) = if cluster > 1 {
        cluster_combine(&b, "softmax_bulk_cluster", stats, cluster, &big_m, &big_s)?
    } else {
        (big_m, big_s)
    };
    let inv = b.binary(BinOp::Div, &b.f32(1.0), &big_s)?;
    b.note("softmax_bulk_cluster pass 2: normalise from shared memory and store");
    crate::tile::for_range(&b, &lit(0), &lit(chunks), &lit(1), &[], |b, k, _| {
        for (off, inside) in vectors(b, &k)? {
            let xs = b.load(buf, &off, v as usize, Some(&inside))?;
            let out = xs
                .iter()
                .map(|e| {
                    let f = b.cvt(e, ScalarType::F32)?;
                    let p = b.binary(BinOp::Mul, &exp_diff(b, &f, &big_m)?, &inv)?;
                    Ok(b.cvt(&p, ty)?)
                })
                .collect::<Result<Vec<_>>>()?;
            b.store(y.mem, &(yrow.clone() + lo.clone() + off), &out, Some(&inside))?;
        }
        Ok(vec![])
    })?;
    if cluster > 1 {
        b.note("softmax_bulk_cluster: no block exits while another may still read its stats");
        b.cluster_barrier()?;
    }
    Ok(b.finish()?)
}
