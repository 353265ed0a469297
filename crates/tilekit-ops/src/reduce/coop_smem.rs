//! The cooperative softmax ([`super::coop`]) with each block's slice of the row held in
//! **shared memory** instead of registers: the same tickets, counters and exchange, but a
//! thread keeps only one step of `unroll` 16-byte vectors in registers at a time, so a block
//! needs few registers and an SM holds several blocks at different phases.
//!
//! Why: the register-held coop kernel keeps 64 f32 a thread, so one or two blocks fill an SM;
//! while a block waits at its row's counter the SM has nothing else to load or store, and its
//! DRAM traffic stops (H100, 2026-11-26: 0.86 of copy f32 262144, 0.68 bf16). Here a block
//! holds 16–64 KiB of raw elements (bf16 stays bf16: half the bytes) in shared memory, so
//! 3–8 blocks share an SM (228 KiB), and one block's loads and stores overlap another's
//! exchange:
//!
//! ```text
//!   block (any of rows·k): ticket t → row = t / k, part = t mod k  (as coop.rs)
//!   slice = columns [part·L, (part+1)·L),  L = chunks · C,  C = threads · V · unroll
//!
//!   pass 1  for c in 0..chunks:   x = x[row, part·L + c·C ..] (vectors, −∞ past the row)
//!                                 stash[c·C ..] = x  (raw: bf16 stays bf16);  m ⊕= max x
//!           m = block max (≥ lowest f32)
//!   pass 2  for c in 0..chunks:   s += Σ exp2((stash − m)·log2 e)          (shared memory)
//!           s = block sum
//!   exchange  (m, s) → stats; release; thread 0 polls the counter (nanosleep); bar.sync
//!             M, S from the row's k pairs
//!   pass 3  for c in 0..chunks:   y[row, part·L + c·C ..] = exp2((stash − M)·log2 e − log2 S)
//!           (the division folded into the exponent: one FADD, one FFMA, one MUFU an element;
//!           16-bit types take ex2.approx.ftz in passes 2 and 3)
//!
//!   rows = 2 (CoopTuning::rows): a block holds slices of two rows and publishes row 0's
//!   (m, s) before loading row 1, so row 0's wait hides behind row 1's loads:
//!     load+stats r0 │ publish r0 │ load+stats r1 │ publish r1 │ wait r0 │ store r0 │ wait r1 │ …
//!
//!   pipe (CoopTuning::pipe, one row, loads): pass 1's steps unrolled, step c + 1's loads
//!   issued before step c's st.shared and max — two steps of loads in flight per thread
//!   (the H200's f32 shape: bench/NOTES.md §23)
//!
//!   every thread reads back exactly the stash elements it wrote (the same distribution):
//!   no barrier between pass 1's st.shared and pass 2's ld.shared is needed for the data
//!
//!   bulk (sm_90, aligned rows): thread 0 issues every step's cp.async.bulk right after the
//!   ticket (one mbarrier each); pass 1 waits on step c's mbarrier, reads it from shared
//!   memory, writes −∞ over the vectors past the row's end (the block max's barriers order
//!   those writes before pass 2)
//! ```
//!
//! Global memory sees one read and one write of every element (a device copy's traffic);
//! shared memory sees one write and two reads. Two `ex2` per element, as the bulk-copy
//! kernels (MUFU is not the limit at the H100's bandwidth: bench/NOTES.md §3, sixth change).
//!
//! **Lean code per element** (bench/NOTES.md §24). At the H200's bandwidth the kernel was
//! issue-bound, so each pass is written for the fewest instructions per element:
//!
//! ```text
//!   pass 1   loads whose −∞ fill is written before the predicated load (no select), stored
//!            raw, the max on packed pairs of the raw words (max.bf16x2), one widening a step
//!   pass 2   16-bit: ex2.approx.ftz(fma(x, log2 e, −m·log2 e))   PRMT, FFMA, MUFU, FADD
//!            f32:    ex2.approx.ftz((x − m)·log2 e)              (a sum ≥ 1 needs no subnormals)
//!   pass 3   16-bit: ex2.approx.ftz(fma(x, log2 e, −M·log2 e − log2 S))
//!            f32:    ex2.approx.ftz((x − M)·log2 e − log2 S + 64) · 2⁻⁶⁴  (subnormals kept)
//!   |max| > 2¹²⁶ (m·log2 e would overflow): a uniform branch takes the exact (x − m) form
//!   .minnctapersm: as many blocks per SM as the shared memory allows (coop_smem_target_blocks),
//!            so the compiler cannot trade residency for hoisted loads
//! ```
//!
//! bf16 256 threads × 32 KiB, sm_90a SASS: 16.7 → ~11.7 instructions per element; the
//! numbers below for the one-exponential kernel are those before this change.
//!
//! **One exponential** ([`build_softmax_coop_smem_one_exp`], `CoopTuning::one_exp`). At the
//! H200's 4.2 TB/s of copy traffic (reads + writes) an SM moves ~16 bytes per clock (132 SMs,
//! 1.98 GHz): ~4 bf16 elements (2 bytes in, 2 out), i.e. ~31 lane-instructions per element of
//! the 128 an SM issues per clock, and with 2 `ex2` each, 8 of the MUFU's 16 per clock. The two-exponential
//! kernel spends ~25 instructions per bf16 element (sm_90a SASS of 256 threads × 2 vectors ×
//! 32 KiB: pass 1 ~5.4, pass 2 ~9, pass 3 ~10.5; `ex2.approx` is a range check, two FMULs and
//! a MUFU), ~80% of the issue rate at full copy speed. This variant computes each exponential
//! once, with `ex2.approx.ftz` (one MUFU): ~17 per element (pass 1 ~5.8, pass 2 ~6.8, pass 3
//! ~4.4); f32 ~20 → ~13 (of ~62 at its ~2 elements per clock):
//!
//! ```text
//!   pass 1  as above (no ex2); without bulk, step c + 1's loads are issued before step c's
//!           st.shared and max (steps unrolled at build time, ≤ ONE_EXP_PIPELINE_STEPS): two
//!           steps of loads in flight per thread instead of one
//!   pass 2  for c in 0..chunks:   e = exp2((stash − m)·log2 e)   (f32, ex2.approx.ftz)
//!                                 stash[c·C ..] = cast(e)        (bf16 stays bf16, in place)
//!                                 s += Σ e                        (the unrounded f32 e)
//!   exchange  (m, s) → M, S as above
//!   pass 3  f = exp2((m − M)·log2 e) / S   (once per thread)
//!           for c in 0..chunks:   y[row, part·L + c·C ..] = cast(stash · f)   one FMUL, no ex2
//! ```
//!
//! Each thread rewrites exactly the elements it read in pass 2 (the same distribution), so
//! the in-place write needs no barrier and the race checker sees none. Shared memory sees one
//! more write per element (one write, one read, one write, one read); global traffic is the
//! same.
//!
//! *Precision.* f32 slices hold `e` as f32: `y = e · f` differs from the two-exponential
//! `exp2((x − M)·log2 e) / S` by a few f32 roundings (relative ~1e-7). bf16 slices hold `ê`,
//! `e` rounded to bf16 (`e ∈ [0, 1]`, x ≤ m): `|ê − e| ≤ 2⁻⁸·e` (half an ulp; 8 significant
//! bits), and `y` is `ê · f` rounded to bf16 once more. Let `v = e · f` be the exact value
//! and `ulp` its bf16 spacing (`v < 2·2^E`, `ulp = 2^(E−7)`): `|ê·f − v| ≤ 2⁻⁸·v < ulp`, so
//! `|y − v| < 1.5 ulp`, while the correctly rounded `ŷ` has `|ŷ − v| ≤ 0.5 ulp`. The grid
//! points within 1.5 ulp of `v` are `ŷ` and its two neighbours: **`y` is within 1 bf16 ulp of
//! the correctly rounded result** (up to the f32 arithmetic's ~2⁻²² relative), a relative
//! 2⁻⁷ at most.
//!
//! *Flush to zero.* Pass 2 uses `ex2.approx.ftz` (one `MUFU.EX2`; `ex2.approx` adds a range
//! check and two multiplies per element to produce subnormal results, ~3 of pass 2's ~10
//! instructions per bf16 element on sm_90a). So an element whose `e` would be below 2⁻¹²⁶
//! — more than 126·ln 2 ≈ 87.3 below its block's max — comes out **0**, where the exact
//! result is below 2⁻¹²⁶ (`y ≤ e`: `f ≤ 1/S ≤ 1`, the block holding the row's max has
//! `e = 1` in `S`), i.e. an absolute error under 1.2·10⁻³⁸; the two-exponential kernel
//! returns such elements as subnormals. The factor `f` and the exchange keep `ex2.approx`. The sum
//! uses the unrounded f32 `e`. tests/it/reduce_coop_smem.rs checks every element against an f64
//! reference within 2⁻⁷ relative for bf16 and 1e-5 for f32, and each row's sum.
//!
//! **Clusters** ([`build_softmax_coop_smem_cluster`], `CoopTuning::cluster`). The counter
//! exchange costs a block three to four L2 round trips it spends idle: the ticket before its
//! first load, the release add, the polls, the load of the `k` pairs — plus a memset launch
//! per call for the counters. When a row's `k` blocks form one thread-block cluster the
//! hardware starts them together (no ticket, no deadlock bound) and they meet in their own
//! shared memory:
//!
//! ```text
//!   block b = part (b mod k) of row (b / k), its rank in the cluster
//!   passes 1, 2 as above ─► thread 0: pair = (m, s) (shared) ─► barrier.cluster.arrive
//!   barrier.cluster.wait ─► lane l < k of every warp: ld.shared::cluster pair of block l
//!   ─► butterflies: (M, S) ─► barrier.cluster.arrive ─► pass 3 ─► barrier.cluster.wait (exit)
//!                             └── no block stops for its peers' reads: its own wait, at the
//!                                 end, keeps its pair alive until they are done ──┘
//! ```
//!
//! What a cluster costs is residency: its blocks must all fit one GPC at once, and the GPCs
//! do not tile into every cluster size (H200, 64 KiB slices, 3 blocks an SM = 396 slots:
//! clusters of 2 hold 396 blocks, of 4 368, of 8 360, of 16 336 — `tilekit tune` prints it).
//! H200, the split exit barrier: clusters of 2, 4 and 8 blocks 0.926 / 0.918 / 0.89 of copy
//! against the counter kernel's 0.89 / 0.90 / 0.86; of 16, 0.84 against 0.88 — so the device
//! table takes clusters up to [`crate::tuning::CLUSTER_ROW_BLOCKS`] blocks a row
//! (bench/NOTES.md §25).
//!
//! **Counters that reset themselves; the ticket speculated** (session 16, bench/NOTES.md §26).
//! Two of the counter exchange's costs leave without a cluster's loss of residency:
//!
//! ```text
//!   ticket     atom.inc [ws0], gridDim.x − 1     the grid's last ticket wraps ws0 to 0
//!   publish    red.release.add [ws(1+row)], 1    k publishes: 0 → k
//!   poll       until ws(1+row) ≥ k               (as before)
//!   reset      atom.inc [ws(1+row)], 2k − 1      after its poll, each block once more:
//!                                                k → … → 2k − 1 → 0 (the k-th wraps)
//! ```
//!
//! No block still polls when the last increment wraps the row's counter (every increment
//! follows its block's successful poll), so a kernel leaves its counters as it found them —
//! at zero — and `api` keeps them in the backend between calls ([`crate::backend::Backend::counters`]):
//! no memset launch per call. And with `spec` ([`build_softmax_coop_smem_spec`]) a block issues
//! step 0's loads for the ticket it expects (`blockIdx.x`: the hardware starts a grid in
//! index order) while thread 0's ticket atomic is in flight, and loads step 0 again only
//! when the ticket differs.
//!
//! **Slices partly in registers** ([`build_softmax_coop_smem_held`], `CoopTuning::held`,
//! session 17, bench/NOTES.md §27). An SM has 228 KiB of shared memory but 256 KiB of
//! registers, and the kernels above use a fraction of the latter. A held kernel keeps `held`
//! 16-byte vectors a thread of its slice in registers beside the shared steps, so a block holds
//! more of a row and a long row needs fewer blocks:
//!
//! ```text
//!   block part p:  [ registers: held · threads · V ][ shared: chunks · threads · V · unroll ]
//!   pass 1   the register part loaded first (every vector in flight), then the shared steps
//!   pass 2   e = exp(x − m) over both (registers keep e in the slice's type)
//!   pass 3   y = e · f: the registers stored first, then the shared steps
//!   H200: bf16 rows of 65536 in one block (0.95 of copy), of 262144 in clusters of 6
//!         (0.91, against 8 blocks of 64 KiB: 0.89); f32 262144 at the counter with 11 blocks
//!         instead of 16 (0.91 against 0.875)
//! ```
//!
//! **Deadlock bound.** As for the register kernel, the `k` blocks of a row must fit on the
//! device at once; here the shared memory usually decides how many blocks an SM holds:
//! [`coop_smem_resident_blocks`] counts shared memory (228 KiB per SM, 1 KiB reserved per
//! block), threads (2048 per SM) and an upper estimate of registers, and `api::softmax`
//! refuses a `k` above the device's total with a typed error.
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::reduce::{build_softmax_coop_smem, coop_smem_shared_bytes};
//! // 256 threads, 2 vectors of 4 f32 a step, 8 steps: a 16384-element (64 KiB) slice
//! let k = build_softmax_coop_smem(ScalarType::F32, 256, 4, 16, 2, 8, false).unwrap();
//! assert_eq!(k.shared_bytes(), coop_smem_shared_bytes(256, 2, 8, false));
//! assert!(k.to_string().contains("st.shared.v4.f32"));
//! ```

use tilekit_ir::{Axis, BinOp, CmpOp, Kernel, KernelBuilder, Pred, ScalarType, UnOp, Val};
use tilekit_layout::Idx;

use crate::dist;
use crate::error::{OpsError, Result};
use crate::tile::{block_reduce, block_reduce_at, DTile, View, Window};

use super::coop::{exchange, gather, publish, MAX_CLUSTER_BLOCKS};
use super::{exp_diff, float_lit};

/// The largest slice one block of [`build_softmax_coop_smem`] holds in shared memory: 200 KiB
/// (an SM has 228 KiB, at most 227 KiB for one block).
///
/// ```
/// assert_eq!(tilekit_ops::reduce::coop_smem::COOP_SMEM_MAX_BYTES, 200 * 1024);
/// ```
pub const COOP_SMEM_MAX_BYTES: i64 = 200 * 1024;

/// Shared memory one block of [`build_softmax_coop_smem`] declares, in bytes: the slice
/// (`chunks · threads · V · unroll` raw elements, V = 16 bytes / element size), two f32 per
/// warp of scratch for the block reductions, the 4-byte ticket slot and, with `bulk`, one 8-byte
/// mbarrier per step (the sum of the allocations, as `Kernel::shared_bytes`; the PTX aligns
/// each, which [`coop_smem_resident_blocks`] allows for).
///
/// ```
/// use tilekit_ops::reduce::coop_smem_shared_bytes;
/// assert_eq!(coop_smem_shared_bytes(512, 2, 4, false), 4 * 512 * 16 * 2 + 16 * 8 + 4);
/// assert_eq!(coop_smem_shared_bytes(512, 2, 4, true), 4 * 512 * 16 * 2 + 16 * 8 + 4 + 4 * 8);
/// ```
pub fn coop_smem_shared_bytes(threads: u32, unroll: i64, chunks: i64, bulk: bool) -> usize {
    let slice = chunks.max(0) as usize * threads as usize * 16 * unroll.max(0) as usize;
    let bars = if bulk { 8 * chunks.max(0) as usize } else { 0 };
    slice + threads as usize / 32 * 8 + 4 + bars
}

/// Registers per thread [`coop_smem_resident_blocks`] assumes: an upper estimate of what ptxas
/// gives the kernel for sm_90/sm_90a, `40 + unroll · V · 3/4` rounded up to 8 (one step's
/// elements, bf16 two to a register, their f32 values and the pass's temporaries, plus
/// addresses, loop state and reductions; the row's exchange is combined across a warp's lanes,
/// so `k` adds none). ptxas (CUDA 13.0, sm_90a) gives the candidate shapes 32–58;
/// the ptx tests check every tuned shape stays at or below this, so the residency it gives is
/// never above the device's.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::coop_smem_registers;
/// assert_eq!(coop_smem_registers(ScalarType::F32, 2), 48);
/// assert_eq!(coop_smem_registers(ScalarType::BF16, 4), 64);
/// ```
pub fn coop_smem_registers(ty: ScalarType, unroll: i64) -> u32 {
    let v = 16 / ty.size_bytes() as i64;
    ((40 + unroll.max(0) * v * 3 / 4 + 7) / 8 * 8).min(255) as u32
}

/// Registers per thread the residency estimate assumes for a block of `rows` rows
/// ([`build_softmax_coop_smem_rows`]): [`coop_smem_registers`], plus 8 for the second row's
/// addresses and predicate (ptxas 13.0 gives the two-row candidates up to 58 where one row
/// takes 52).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::coop_smem_rows_registers;
/// assert_eq!(coop_smem_rows_registers(ScalarType::F32, 4, 1), 56);
/// assert_eq!(coop_smem_rows_registers(ScalarType::F32, 4, 2), 64);
/// ```
pub fn coop_smem_rows_registers(ty: ScalarType, unroll: i64, rows: u32) -> u32 {
    (coop_smem_registers(ty, unroll) + 8 * rows.saturating_sub(1)).min(255)
}

/// How many blocks of [`build_softmax_coop_smem`] one Hopper (sm_90) SM holds at once: the fewest allowed by
/// shared memory (228 KiB per SM, each block's [`coop_smem_shared_bytes`] plus 1 KiB the
/// hardware reserves and 256 bytes of alignment), threads (2048 per SM), registers (65536 per SM at
/// [`coop_smem_registers`] a thread) and blocks (32 per SM); at least 1. `api::softmax`
/// multiplies it by the multiprocessors for the deadlock bound `k ≤ resident blocks`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem_resident_blocks;
/// assert_eq!(coop_smem_resident_blocks(ScalarType::F32, 256, 2, 8, false), 3);  // 64 KiB slices
/// assert_eq!(coop_smem_resident_blocks(ScalarType::F32, 256, 2, 4, true), 5);   // 32 KiB: 48 registers
/// assert_eq!(coop_smem_resident_blocks(ScalarType::BF16, 512, 2, 2, false), 2); // 56 registers
/// ```
pub fn coop_smem_resident_blocks(
    ty: ScalarType,
    threads: u32,
    unroll: i64,
    chunks: i64,
    bulk: bool,
) -> u32 {
    let threads = threads.max(32);
    // + 1 KiB the hardware reserves per block, + 256 for the PTX's alignment of allocations
    let bytes = coop_smem_shared_bytes(threads, unroll, chunks, bulk) as u32 + 1024 + 256;
    let by_smem = 228 * 1024 / bytes;
    let by_threads = 2048 / threads;
    let by_regs = 65536 / (threads * coop_smem_registers(ty, unroll));
    by_smem.min(by_threads).min(by_regs).clamp(1, 32)
}

/// The blocks per SM every shared-memory coop kernel asks the compiler for (`.minnctapersm`):
/// as many as its shared memory (`shared_bytes`, the kernel's allocations, plus the 1 KiB the
/// hardware reserves per block and 256 bytes of alignment) and its threads let a Hopper SM
/// hold (228 KiB, 2048 threads), but never so many that a thread gets fewer registers than
/// its `vectors` of 16 bytes in flight (4 registers each) and 40 more (ptxas 13.0 spills the
/// 512-thread bf16 shapes at 32 more). Without it the
/// compiler may hoist every step's loads of a fully unrolled pass 1 (the whole slice in
/// flight per thread) and take 72 registers where 40 do, halving the blocks an SM holds (bf16
/// 256 threads × 32 KiB on the H200's driver JIT: 0.79 of copy against 0.87,
/// bench/NOTES.md §24). The residency the deadlock bound assumes
/// ([`coop_smem_resident_blocks`]: the same shared memory) is never above it (tests/it/ptx.rs).
///
/// ```
/// use tilekit_ops::reduce::coop_smem::coop_smem_target_blocks;
/// assert_eq!(coop_smem_target_blocks(256, 32 * 1024 + 132, 2), 5); // 48 registers a thread
/// assert_eq!(coop_smem_target_blocks(256, 32 * 1024 + 132, 4), 4); // 16 in flight: 56
/// assert_eq!(coop_smem_target_blocks(256, 64 * 1024 + 132, 8), 3);
/// assert_eq!(coop_smem_target_blocks(512, 16 * 1024, 1), 2); // 44 registers: 2 × 512 threads
/// ```
pub fn coop_smem_target_blocks(threads: u32, shared_bytes: usize, vectors: i64) -> u32 {
    let threads = threads.clamp(32, 1024);
    let bytes = (shared_bytes as u32).saturating_add(1024 + 256);
    let by_smem = 228 * 1024 / bytes;
    let floor = 40 + 4 * vectors.clamp(0, 48) as u32;
    by_smem.min(2048 / threads).min(65536 / (threads * floor)).clamp(1, 32)
}

/// The kernel, asking the compiler for [`coop_smem_target_blocks`] blocks per SM (`vectors`:
/// the 16-byte vectors a thread has in flight at once), and never fewer than `model`, the
/// residency the deadlock bound assumes.
fn finish(b: KernelBuilder, vectors: i64, model: u32) -> Result<Kernel> {
    let mut k = b.finish()?;
    let target = coop_smem_target_blocks(k.block_dim[0], k.shared_bytes(), vectors);
    k.min_blocks_per_sm = target.max(model);
    Ok(k)
}

/// Row softmax with each row split over `k` cooperating blocks, each block's slice held in
/// **shared memory** (see the [module docs](self)): block part `p` of a row owns columns
/// `[p·L, (p+1)·L)`, `L = chunks · threads · V · unroll` (V = 16 bytes / element size), in
/// `chunks` steps of `unroll` vectors per thread. Params as [`super::build_softmax_coop`]:
/// `x`, `y` (2-D, same type), `ws` (u32, `1 + rows` elements, **zero** at launch), `stats`
/// (f32, `2 · k · rows` elements); launch on `k · rows` blocks along x. Columns past `k · L`
/// are not written (`api::softmax` picks a covering shape, [`super::CoopTuning::plan`]); `x`
/// and `y` are accessed with vectors of `vx` elements.
///
/// With `bulk`, thread 0 brings the whole slice in with bulk copies (`cp.async.bulk`, one
/// mbarrier per step, sm_90) right after its ticket, and pass 1 reads each step from shared
/// memory as it lands (filling the vectors past the row's end with −∞): no thread waits on its
/// own loads, and the slice's bytes are all in flight at once. Rows must then be 16-byte aligned
/// whole vectors (`vx = V`; binding checks the alignment).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::build_softmax_coop_smem;
/// let k = build_softmax_coop_smem(ScalarType::BF16, 512, 8, 8, 2, 4, false).unwrap(); // 64 KiB
/// assert_eq!((k.name.as_str(), k.block_dim), ("softmax_coop_smem", [512, 1, 1]));
/// let text = k.to_string();
/// assert!(text.contains("st.shared.v8.bf16") && text.contains("nanosleep 64"));
/// let k = build_softmax_coop_smem(ScalarType::F32, 256, 4, 8, 8, 4, true).unwrap();
/// assert_eq!(k.name, "softmax_coop_smem_bulk");
/// assert!(k.to_string().contains("cp.async.bulk.shared.global"));
/// assert!(build_softmax_coop_smem(ScalarType::F32, 256, 1, 8, 8, 4, true).is_err()); // vx 1
/// assert!(build_softmax_coop_smem(ScalarType::F32, 512, 4, 8, 9, 1, false).is_err()); // unroll 9
/// assert!(build_softmax_coop_smem(ScalarType::F32, 512, 4, 8, 8, 8, false).is_err()); // 512 KiB
/// assert!(build_softmax_coop_smem(ScalarType::F32, 512, 4, 65, 1, 1, false).is_err()); // k = 65
/// ```
pub fn build_softmax_coop_smem(
    ty: ScalarType,
    threads: u32,
    vx: i64,
    k: u32,
    unroll: i64,
    chunks: i64,
    bulk: bool,
) -> Result<Kernel> {
    build(ty, threads, vx, k, (unroll, chunks, 0), (bulk, false, 1), (false, false, None))
}

/// [`build_softmax_coop_smem`] (loads, two exponentials, one row a block) with pass 1
/// **software-pipelined**: step `c + 1`'s loads are issued before step `c`'s stores to shared
/// memory and its max (steps unrolled at build time, 2..=[`ONE_EXP_PIPELINE_STEPS`]), so two
/// steps of loads are in flight per thread instead of one, for one step's registers more.
/// Kernel `softmax_coop_smem_pipe`; `CoopTuning::pipe`, label `pipe`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::build_softmax_coop_smem_pipelined;
/// let k = build_softmax_coop_smem_pipelined(ScalarType::BF16, 256, 8, 4, 2, 4).unwrap();
/// assert_eq!(k.name, "softmax_coop_smem_pipe");
/// assert!(build_softmax_coop_smem_pipelined(ScalarType::BF16, 256, 8, 4, 2, 1).is_err()); // one step
/// ```
pub fn build_softmax_coop_smem_pipelined(
    ty: ScalarType,
    threads: u32,
    vx: i64,
    k: u32,
    unroll: i64,
    chunks: i64,
) -> Result<Kernel> {
    if !pipelined(chunks, false) {
        return Err(OpsError::invalid(
            "softmax",
            "chunks (pipelined pass 1)",
            chunks,
            format!("2..={ONE_EXP_PIPELINE_STEPS} steps: the steps are unrolled two in flight"),
        ));
    }
    build(ty, threads, vx, k, (unroll, chunks, 0), (false, false, -1), (false, false, None))
}

/// [`build_softmax_coop_smem`] with **one exponential per element** (see the [module
/// docs](self), "one exponential"): pass 2 writes `e = exp2((x − m)·log2 e)` back over the
/// slice in shared memory (bf16 as bf16) while summing it, and pass 3 is `y = e · f` with one
/// factor `f = exp2((m − M)·log2 e) / S` per block — no `ex2` per element in pass 3. Without
/// `bulk`, pass 1 also issues the next step's loads before storing and reducing the current
/// one (steps unrolled at build time up to [`ONE_EXP_PIPELINE_STEPS`]), two steps of loads in
/// flight per thread. Same parameters, launch and errors as [`build_softmax_coop_smem`];
/// kernel `softmax_coop_smem_1exp` (`softmax_coop_smem_bulk_1exp` with `bulk`).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::build_softmax_coop_smem_one_exp;
/// let k = build_softmax_coop_smem_one_exp(ScalarType::BF16, 256, 8, 8, 2, 4, false).unwrap();
/// assert_eq!(k.name, "softmax_coop_smem_1exp");
/// let text = k.to_string();
/// // one ex2 per element: pass 2's (2 vectors of 8 a step, in the folded loop and in the
/// // exact one a max beyond 2^126 takes), the exchange's and the factor's
/// assert_eq!(text.matches("ex2.approx").count(), 2 * 16 + 2);
/// let b = build_softmax_coop_smem_one_exp(ScalarType::F32, 256, 4, 8, 8, 2, true).unwrap();
/// assert_eq!(b.name, "softmax_coop_smem_bulk_1exp");
/// assert!(build_softmax_coop_smem_one_exp(ScalarType::F32, 256, 4, 8, 9, 2, false).is_err());
/// ```
pub fn build_softmax_coop_smem_one_exp(
    ty: ScalarType,
    threads: u32,
    vx: i64,
    k: u32,
    unroll: i64,
    chunks: i64,
    bulk: bool,
) -> Result<Kernel> {
    build(ty, threads, vx, k, (unroll, chunks, 0), (bulk, true, 1), (false, false, None))
}

/// Which kernel of this module a row's cluster runs ([`build_softmax_coop_smem_cluster`]):
/// the slice brought in by bulk copies, one exponential per element, pass 1 pipelined — as
/// the [`super::CoopTuning`] fields of the same names (`pipe` only with loads and two
/// exponentials).
///
/// ```
/// let v = tilekit_ops::reduce::coop_smem::Variant::default();
/// assert!(!v.bulk && !v.one_exp && !v.pipe && !v.early);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Variant {
    /// Thread 0 brings the slice in with bulk copies.
    pub bulk: bool,
    /// One exponential per element.
    pub one_exp: bool,
    /// Pass 1 software-pipelined (loads, two exponentials).
    pub pipe: bool,
    /// Publish before pass 2 (one exponential, loads; [`build_softmax_coop_smem_early`]):
    /// the block arrives at the cluster barrier after pass 1 and writes its exponentials
    /// before it waits.
    pub early: bool,
}

/// The shared-memory cooperative softmax with each row's `k` blocks (`1..=16`) forming one
/// **thread-block cluster** (sm_90) instead of meeting at a counter in global memory: block
/// `b` of the grid takes part `b mod k` (its rank in the cluster) of row `b / k`, leaves its
/// `(m, s)` in its own shared memory and, after `barrier.cluster`, reads the other blocks'
/// pairs through distributed shared memory (`ld.shared::cluster`); a second `barrier.cluster`
/// keeps each block's pair alive until its peers have read it. No ticket (the hardware starts
/// a cluster's blocks together, so none can wait for a block that never starts), no
/// counters, no workspace, no global round trips:
///
/// ```text
///   counter (coop_smem):  atom ticket ─► pass 1, 2 ─► st pair; red.release ─► poll … ─► ld k pairs ─► pass 3
///   cluster:              pass 1, 2 ─► st.shared pair; barrier.cluster ─► ld.shared::cluster ×k; barrier.cluster ─► pass 3
/// ```
///
/// Params `x`, `y` (2-D, same type); launch on `k · rows` blocks along x (clusters of `k`).
/// Kernels `softmax_cluster_smem`, `…_pipe`, `…_1exp`, `…_bulk`, `…_bulk_1exp`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::{build_softmax_coop_smem_cluster, Variant};
/// let one = Variant { one_exp: true, ..Variant::default() };
/// let k = build_softmax_coop_smem_cluster(ScalarType::BF16, 256, 8, 8, (4, 8), one).unwrap();
/// assert_eq!((k.name.as_str(), k.cluster_dim), ("softmax_cluster_smem_1exp", [8, 1, 1]));
/// let text = k.to_string();
/// assert!(text.contains("ld.shared::cluster.v2.f32") && !text.contains("atom"));
/// assert!(build_softmax_coop_smem_cluster(ScalarType::BF16, 256, 8, 17, (4, 8), one).is_err());
/// ```
pub fn build_softmax_coop_smem_cluster(
    ty: ScalarType,
    threads: u32,
    vx: i64,
    k: u32,
    (unroll, chunks): (i64, i64),
    variant: Variant,
) -> Result<Kernel> {
    let Variant { bulk, one_exp, pipe, early } = variant;
    if pipe && (bulk || one_exp) {
        return Err(OpsError::invalid(
            "softmax",
            "pipe (cluster softmax)",
            true,
            "false with bulk copies or one exponential: pass 1 is pipelined for loads and two \
             exponentials only",
        ));
    }
    if pipe && !pipelined(chunks, false) {
        return Err(OpsError::invalid(
            "softmax",
            "chunks (pipelined pass 1)",
            chunks,
            format!("2..={ONE_EXP_PIPELINE_STEPS} steps: the steps are unrolled two in flight"),
        ));
    }
    let rows = if pipe { -1 } else { 1 };
    build(ty, threads, vx, k, (unroll, chunks, 0), (bulk, one_exp, rows), (true, early, None))
}

/// [`build_softmax_coop_smem_one_exp`] (loads) that **publishes before pass 2**: pass 1 keeps
/// each thread's running sum beside its max (online: the sum rescaled whenever the max
/// grows), so the block's `(m, s)` is known once the slice is in shared memory; the block
/// publishes it, writes `e = exp2((x − m)·log2 e)` over its slice (pass 2, which needs only
/// its own `m`) while the row's other blocks come in, and only then waits at the counter:
///
/// ```text
///   one_exp:  pass 1 (x, max) │ pass 2 (e, sum) │ publish │ wait ······ │ pass 3 (y = e·f)
///   early:    pass 1 (x, max, sum) │ publish │ pass 2 (e) ··· wait │ pass 3 (y = e·f)
///                                            └ the wait hides here ┘
/// ```
///
/// Pass 1 pays an exponential per element more (the running sum); pass 2 loses its sum. On
/// the H200 that costs more than the wait it hides (0.82–0.88 of copy against 0.86–0.90 for
/// [`build_softmax_coop_smem_one_exp`], bench/NOTES.md §25): a knob, not in the device tables.
/// Kernel `softmax_coop_smem_1exp_early`; `CoopTuning::early`, label `early`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::build_softmax_coop_smem_early;
/// let k = build_softmax_coop_smem_early(ScalarType::BF16, 256, 8, 8, 4, 4).unwrap();
/// assert_eq!(k.name, "softmax_coop_smem_1exp_early");
/// let text = k.to_string();
/// // the release add (publish) comes before pass 2's stores of e, the poll after them
/// let (publish, poll) = (text.find("atom.release").unwrap(), text.find("nanosleep").unwrap());
/// assert!(publish < poll);
/// ```
pub fn build_softmax_coop_smem_early(
    ty: ScalarType,
    threads: u32,
    vx: i64,
    k: u32,
    unroll: i64,
    chunks: i64,
) -> Result<Kernel> {
    build(ty, threads, vx, k, (unroll, chunks, 0), (false, true, 1), (false, true, None))
}

/// The counter kernels with loads and one row a block ([`build_softmax_coop_smem`] without
/// bulk copies, or with `one_exp` [`build_softmax_coop_smem_one_exp`]) taking the ticket
/// **speculatively**: step 0 of the slice is loaded for the guess `(blockIdx.x + shift) mod
/// gridDim.x` while thread 0's ticket atomic is in flight, and loaded again only where the
/// ticket differs (see `spec_ticket` in the source: the round trip before a block's first
/// load leaves the critical path when the guess holds). The library passes `shift = 0`;
/// any shift is correct (tests rotate the guess so that every block misses). Kernels
/// `softmax_coop_smem_spec`, `softmax_coop_smem_1exp_spec`; `CoopTuning::spec`, label `spec`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::build_softmax_coop_smem_spec;
/// let k = build_softmax_coop_smem_spec(ScalarType::F32, 256, 4, 16, 8, 2, false, 0).unwrap();
/// assert_eq!(k.name, "softmax_coop_smem_spec");
/// let text = k.to_string();
/// // step 0's loads are issued before the ticket's atomic
/// assert!(text.find("ld.global").unwrap() < text.find("atom.").unwrap(), "{text}");
/// let one = build_softmax_coop_smem_spec(ScalarType::BF16, 256, 8, 8, 4, 2, true, 0).unwrap();
/// assert_eq!(one.name, "softmax_coop_smem_1exp_spec");
/// ```
#[allow(clippy::too_many_arguments)]
pub fn build_softmax_coop_smem_spec(
    ty: ScalarType,
    threads: u32,
    vx: i64,
    k: u32,
    unroll: i64,
    chunks: i64,
    one_exp: bool,
    shift: u32,
) -> Result<Kernel> {
    build(ty, threads, vx, k, (unroll, chunks, 0), (false, one_exp, 1), (false, false, Some(shift)))
}

/// The one-exponential kernel ([`build_softmax_coop_smem_one_exp`], loads) with part of each
/// block's slice **held in registers**: every thread keeps `held` 16-byte vectors of the row
/// beside its steps in shared memory, so a block holds more of a row at the same shared
/// memory and a long row needs fewer blocks (with `cluster`, a smaller cluster: the row's
/// blocks meet as in [`build_softmax_coop_smem_cluster`]; otherwise at the counter):
///
/// ```text
///   block part p of a row:  [ p·(R + L) ,  + R )         R = held · threads · V   registers
///                           [ p·(R + L) + R ,  + L )     L = chunks · threads · V · unroll   shared
///   pass 1   the R elements loaded first (all in flight), then the shared steps; max of both
///   pass 2   e = exp2((x − m)·log2 e) over both: shared in place, registers in the slice's type
///   pass 3   y = e · f: the registers stored first, then the shared steps
/// ```
///
/// Why (bench/NOTES.md §27): an H200 SM holds 228 KiB of shared memory but 256 KiB of
/// registers; at 512 threads and 2 blocks an SM, 8 vectors a thread are 64 KiB a block more
/// than its 96 KiB slice, so a bf16 row of 262144 takes clusters of 4 instead of 8.
/// Kernels `softmax_coop_smem_1exp_held`, `softmax_cluster_smem_1exp_held`;
/// `CoopTuning::held`, label `heldN`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::build_softmax_coop_smem_held;
/// let k = build_softmax_coop_smem_held(ScalarType::BF16, 512, 8, 4, (4, 3), 4, (true, None))
///     .unwrap();
/// assert_eq!((k.name.as_str(), k.cluster_dim), ("softmax_cluster_smem_1exp_held", [4, 1, 1]));
/// // 3 steps of 512 × 4 vectors of 8 bf16 in shared memory: 96 KiB
/// assert!(k.shared_bytes() > 96 * 1024 && k.shared_bytes() < 97 * 1024);
/// let c = build_softmax_coop_smem_held(ScalarType::F32, 256, 4, 16, (8, 2), 2, (false, None))
///     .unwrap();
/// assert_eq!(c.name, "softmax_coop_smem_1exp_held");
/// // the counter with the held registers loaded for a guessed ticket (`spec`)
/// let s = build_softmax_coop_smem_held(ScalarType::F32, 256, 4, 16, (8, 2), 2, (false, Some(0)))
///     .unwrap();
/// assert_eq!(s.name, "softmax_coop_smem_1exp_held_spec");
/// let text = s.to_string();
/// assert!(text.find("ld.global").unwrap() < text.find("atom.").unwrap());
/// assert!(build_softmax_coop_smem_held(ScalarType::F32, 256, 4, 16, (8, 2), 17, (false, None))
///     .is_err());
/// ```
pub fn build_softmax_coop_smem_held(
    ty: ScalarType,
    threads: u32,
    vx: i64,
    k: u32,
    (unroll, chunks): (i64, i64),
    held: i64,
    (cluster, spec): (bool, Option<u32>),
) -> Result<Kernel> {
    build(ty, threads, vx, k, (unroll, chunks, held), (false, true, 1), (cluster, false, spec))
}

/// The most 16-byte vectors a thread of [`build_softmax_coop_smem_held`] holds in registers
/// (64 registers).
///
/// ```
/// assert_eq!(tilekit_ops::reduce::coop_smem::MAX_HELD_VECTORS, 16);
/// ```
pub const MAX_HELD_VECTORS: i64 = 16;

/// Registers per thread the residency estimate assumes for [`build_softmax_coop_smem_held`]:
/// [`coop_smem_one_exp_registers`] plus 4 a held vector (bf16 two to a register).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::{coop_smem_held_registers, coop_smem_held_resident_blocks};
/// assert_eq!(coop_smem_held_registers(ScalarType::BF16, (4, 3, 4)), 72 + 16);
/// // 512 threads: 2 blocks by shared memory (96 KiB), 1 by 88 registers
/// assert_eq!(coop_smem_held_resident_blocks(ScalarType::BF16, 512, (4, 3, 4)), 1);
/// ```
pub fn coop_smem_held_registers(ty: ScalarType, (unroll, chunks, held): (i64, i64, i64)) -> u32 {
    (coop_smem_one_exp_registers(ty, unroll, chunks, false) + 4 * held.clamp(0, 64) as u32).min(255)
}

/// Blocks of [`build_softmax_coop_smem_held`] one Hopper SM holds at once: as
/// [`coop_smem_resident_blocks`] (same shared memory) with [`coop_smem_held_registers`].
pub fn coop_smem_held_resident_blocks(
    ty: ScalarType,
    threads: u32,
    (unroll, chunks, held): (i64, i64, i64),
) -> u32 {
    let by_smem = coop_smem_resident_blocks(ty, threads, unroll, chunks, false);
    let regs = coop_smem_held_registers(ty, (unroll, chunks, held));
    by_smem.min(65536 / (threads.max(32) * regs)).clamp(1, 32)
}

/// The most steps pass 1 of [`build_softmax_coop_smem_one_exp`] (loads, not bulk copies)
/// unrolls at build time to keep the next step's loads in flight; longer slices take the
/// loop of [`build_softmax_coop_smem`] (one step's loads in flight).
///
/// ```
/// assert_eq!(tilekit_ops::reduce::coop_smem::ONE_EXP_PIPELINE_STEPS, 16);
/// ```
pub const ONE_EXP_PIPELINE_STEPS: i64 = 16;

/// Registers per thread [`coop_smem_one_exp_resident_blocks`] assumes for
/// [`build_softmax_coop_smem_one_exp`]: as [`coop_smem_registers`], but with two steps of
/// elements held where pass 1 is pipelined (loads, `2 ≤ chunks ≤` [`ONE_EXP_PIPELINE_STEPS`]):
/// `40 + unroll · V` rounded up to 8. An upper estimate for the deadlock bound only: ptxas
/// (CUDA 13.0, sm_90a) gives the tuned one-exponential shapes 32–40 registers, as the
/// two-exponential kernel, so the hardware holds as many blocks of either; the ptx tests check
/// every tuned shape stays at or below this.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::coop_smem_one_exp_registers;
/// assert_eq!(coop_smem_one_exp_registers(ScalarType::BF16, 2, 4, false), 56);
/// assert_eq!(coop_smem_one_exp_registers(ScalarType::F32, 8, 2, false), 72);
/// assert_eq!(coop_smem_one_exp_registers(ScalarType::F32, 8, 2, true), 64); // bulk: as coop_smem
/// ```
pub fn coop_smem_one_exp_registers(ty: ScalarType, unroll: i64, chunks: i64, bulk: bool) -> u32 {
    if !pipelined(chunks, bulk) {
        return coop_smem_registers(ty, unroll);
    }
    let v = 16 / ty.size_bytes() as i64;
    ((40 + unroll.max(0) * v + 7) / 8 * 8).min(255) as u32
}

/// Blocks of [`build_softmax_coop_smem_one_exp`] one Hopper SM holds at once: as
/// [`coop_smem_resident_blocks`] (same shared memory) with [`coop_smem_one_exp_registers`].
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::coop_smem_one_exp_resident_blocks;
/// // bf16 256 threads × 2 vectors × 4 steps = 32 KiB: 6 by shared memory, 4 by 56 registers
/// assert_eq!(coop_smem_one_exp_resident_blocks(ScalarType::BF16, 256, 2, 4, false), 4);
/// assert_eq!(coop_smem_one_exp_resident_blocks(ScalarType::F32, 256, 8, 2, false), 3);
/// ```
pub fn coop_smem_one_exp_resident_blocks(
    ty: ScalarType,
    threads: u32,
    unroll: i64,
    chunks: i64,
    bulk: bool,
) -> u32 {
    let by_smem = coop_smem_resident_blocks(ty, threads, unroll, chunks, bulk);
    let regs = coop_smem_one_exp_registers(ty, unroll, chunks, bulk);
    let by_regs = 65536 / (threads.max(32) * regs);
    by_smem.min(by_regs).clamp(1, 32)
}

/// Whether pass 1 of the one-exponential kernel keeps the next step's loads in flight.
fn pipelined(chunks: i64, bulk: bool) -> bool {
    !bulk && (2..=ONE_EXP_PIPELINE_STEPS).contains(&chunks)
}

fn build(
    ty: ScalarType,
    threads: u32,
    vx: i64,
    k: u32,
    (unroll, chunks, held): (i64, i64, i64),
    (bulk, one_exp, rows): (bool, bool, i64),
    (cluster, early, spec): (bool, bool, Option<u32>),
) -> Result<Kernel> {
    super::coop::check_coop(ty, threads, k)?;
    if !(0..=MAX_HELD_VECTORS).contains(&held) {
        return Err(OpsError::invalid(
            "softmax",
            "held (vectors a thread holds in registers)",
            held,
            format!("0..={MAX_HELD_VECTORS}"),
        ));
    }
    if held > 0 && (!one_exp || bulk || early || rows != 1) {
        return Err(OpsError::invalid(
            "softmax",
            "held (cooperative softmax)",
            held,
            "0 unless one exponential per element with loads (not bulk copies or early) and \
             one row a block",
        ));
    }
    if spec.is_some() && (cluster || early || bulk || rows.abs() != 1) {
        return Err(OpsError::invalid(
            "softmax",
            "spec (cooperative softmax)",
            true,
            "false unless the counter exchange (not a cluster) with loads (not bulk copies), \
             one row a block and not early",
        ));
    }
    if early && (!one_exp || bulk || rows != 1) {
        return Err(OpsError::invalid(
            "softmax",
            "early (cooperative softmax)",
            true,
            "false unless one exponential per element, loads (not bulk copies) and one row a \
             block",
        ));
    }
    if cluster && k > MAX_CLUSTER_BLOCKS {
        return Err(OpsError::invalid(
            "softmax",
            "blocks per row (cluster)",
            k,
            format!("1..={MAX_CLUSTER_BLOCKS}: a row's blocks form one thread-block cluster"),
        ));
    }
    // rows = −1: one row, pass 1 pipelined (build_softmax_coop_smem_pipelined)
    let pipe = rows == -1;
    let rows = rows.abs();
    if !(1..=2).contains(&rows) || (rows == 2 && (bulk || one_exp)) {
        return Err(OpsError::invalid(
            "softmax",
            "rows per block (cooperative softmax)",
            rows,
            "1, or 2 for the kernel with loads and two exponentials (not bulk, not one_exp)",
        ));
    }
    if !(1..=8).contains(&unroll) {
        return Err(OpsError::invalid("softmax", "unroll", unroll, "1..=8 vectors per thread"));
    }
    let size = ty.size_bytes() as i64;
    let v = 16 / size;
    let c = threads as i64 * v * unroll;
    if chunks < 1 || rows * chunks * c * size > COOP_SMEM_MAX_BYTES {
        return Err(OpsError::invalid(
            "softmax",
            "chunks",
            chunks,
            format!(
                "1..={} (the {rows} slice(s) of {threads} threads × {unroll} vectors a step \
                 must fit {} KiB of shared memory)",
                COOP_SMEM_MAX_BYTES / (rows * c * size),
                COOP_SMEM_MAX_BYTES / 1024
            ),
        ));
    }
    if bulk && vx != v {
        return Err(OpsError::invalid(
            "softmax",
            "vector width (bulk copies)",
            vx,
            format!("{v}: bulk copies move whole 16-byte vectors of 16-byte aligned rows"),
        ));
    }
    if cluster && rows != 1 {
        return Err(OpsError::invalid(
            "softmax",
            "rows per block (cluster)",
            rows,
            "1: a cluster's blocks meet once, for one row",
        ));
    }
    let name = match (bulk, one_exp, cluster) {
        (false, false, _) => {
            return build_rows(ty, threads, vx, k, (unroll, chunks), (rows, pipe), (cluster, spec))
        }
        (true, false, false) => "softmax_coop_smem_bulk",
        (false, true, false) if held > 0 && spec.is_some() => "softmax_coop_smem_1exp_held_spec",
        (false, true, false) if held > 0 => "softmax_coop_smem_1exp_held",
        (false, true, false) if early => "softmax_coop_smem_1exp_early",
        (false, true, false) if spec.is_some() => "softmax_coop_smem_1exp_spec",
        (false, true, false) => "softmax_coop_smem_1exp",
        (true, true, false) => "softmax_coop_smem_bulk_1exp",
        (true, false, true) => "softmax_cluster_smem_bulk",
        (false, true, true) if held > 0 => "softmax_cluster_smem_1exp_held",
        (false, true, true) if early => "softmax_cluster_smem_1exp_early",
        (false, true, true) => "softmax_cluster_smem_1exp",
        (true, true, true) => "softmax_cluster_smem_bulk_1exp",
    };
    let len = chunks * c;
    let kk = k as i64;
    // vectors a thread has in flight: two steps where pass 1 is pipelined
    let pipe1 = one_exp && pipelined(chunks, bulk);
    let in_flight: i64 = if pipe1 { 2 } else { 1 };
    // the residency the deadlock bound assumes (`CoopTuning::resident_blocks`)
    let model = if held > 0 {
        coop_smem_held_resident_blocks(ty, threads, (unroll, chunks, held))
    } else if one_exp {
        coop_smem_one_exp_resident_blocks(ty, threads, unroll, chunks, bulk)
    } else {
        coop_smem_resident_blocks(ty, threads, unroll, chunks, bulk)
    };
    // 16-bit outputs: `ex2.approx.ftz` (one MUFU; results below 2⁻¹²⁶, bf16/f16 subnormals
    // or zero, come out 0); f32 keeps `ex2.approx` and its subnormal results
    let ftz = size == 2;
    let b = KernelBuilder::new(name, [threads, 1, 1])?;
    let Decl { x, y, meet, scratch, stash } = declare(&b, ty, threads, (1, len), (cluster, k))?;
    let bars = if bulk {
        // full 16-byte vectors: the binding checks 16-byte aligned rows
        x.descriptor(Some((v, 1)))?;
        Some(b.mbarrier("chunk", chunks as usize)?)
    } else {
        None
    };
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &Val::lit(0))?;
    if let Some(bars) = bars {
        super::init_chunk_barriers(&b, &first, bars, chunks)?;
    }
    let d = dist::row_major(1, c, threads as i64, v)?;
    let xv = View::global(&x, vx)?.pad(&[1, c])?;
    let yv = View::global(&y, vx)?.pad(&[1, c])?;
    let at0 = Slice { stash: &stash, d: &d, c, len, slot: Val::lit(0) };
    // `held` vectors a thread in registers: the block's first `r` elements, the shared slice
    // after them; with `spec`, those are what is loaded for the guessed ticket
    let r = held * threads as i64 * v;
    let dh = dist::row_major(1, r.max(v * threads as i64), threads as i64, v)?;
    let (row, part, step0, tile) = match (held > 0, spec, &meet) {
        (true, Some(shift), &Meet::Counter { ws, slot, .. }) => {
            let (row, part, t) =
                held_ticket(&b, name, &first, (ws, slot), (kk, shift), (&xv, &dh, len + r))?;
            (row, part, None, Some(t))
        }
        (true, _, _) => {
            let (row, part) = meet.row_part(&b, name, &first, kk)?;
            b.note(format!("{name} pass 1: {held} vectors a thread into registers, all in flight"));
            let ninf = b.konst(float_lit(ty, f64::NEG_INFINITY)?);
            let t = load_held(&b, (&xv, &dh, &ninf), (row.clone(), part.clone(), len + r))?;
            (row, part, None, Some(t))
        }
        (false, _, _) => {
            let (row, part, step0) = meet.row_part_spec(&b, name, &first, kk, spec, (&xv, &at0))?;
            (row, part, step0, None)
        }
    };
    let (lo, regs) = match tile {
        Some(tile) => {
            let lo_blk = part.clone() * Val::lit(len + r);
            (lo_blk.clone() + Val::lit(r), Some(Held { tile, d: dh, lo: lo_blk, r }))
        }
        None => (part.clone() * Val::lit(len), None),
    };
    let (zero, end, step) = (Val::lit(0), Val::lit(len), Val::lit(c));
    let steps = |init: &[Val]| (&zero, &end, &step, init.to_vec());
    let (lo0, hi, st, init) = steps(&[b.f32(f32::MIN)]);
    let mx = if let Some(bars) = bars {
        let n = x.lengths[1].clone();
        let xrow = row.clone() * x.strides[0].clone();
        b.note(format!("{name}: thread 0 puts every chunk's bulk copy in flight"));
        b.if_then(&first, |b| {
            let zero = Val::lit(0);
            super::issue_slice(b, &x, stash.mem, bars, (&xrow, &lo, &n), (c, chunks), &zero, &zero)
        })?;
        b.note(format!("{name} pass 1: each chunk as it lands, the thread's max; −∞ past the row"));
        let fill = b.konst(float_lit(ty, f64::NEG_INFINITY)?);
        let pad = vec![fill; v as usize];
        crate::tile::for_range(&b, lo0, hi, st, &init, |b, c0, acc| {
            b.mbarrier_wait(bars, &(c0.clone() / Val::lit(c)), &Val::lit(0))?;
            let mut xs = vec![];
            for u in 0..unroll {
                let off = c0.clone() + (Val::lit(u * threads as i64) + tid.clone()) * Val::lit(v);
                // rows are whole vectors: a vector is inside the row or past its end
                let inside = b.cmp(CmpOp::Lt, &(lo.clone() + off.clone()), &n)?;
                let outside = b.cmp(CmpOp::Ge, &(lo.clone() + off.clone()), &n)?;
                b.store(stash.mem, &off, &pad, Some(&outside))?;
                for e in b.load(stash.mem, &off, v as usize, Some(&inside))? {
                    let f = b.cvt(&e, ScalarType::F32)?;
                    xs.push(b.select(&inside, &f, &b.f32(f32::NEG_INFINITY))?);
                }
            }
            let t = crate::tile::tree_reduce(b, xs, BinOp::Max)?;
            Ok(vec![b.binary(BinOp::Max, &acc[0], &t)?])
        })?
    } else {
        // one exponential: step c + 1's loads issued before step c's stores (two steps in
        // flight per thread) where the steps unroll
        let at = Slice { stash: &stash, d: &d, c, len, slot: Val::lit(0) };
        let mx = load_slice(&b, name, &at, &xv, (&row, &lo), pipe1, step0)?;
        match &regs {
            Some(h) => {
                let t = h.tile.reduce_thread_f32(&b, BinOp::Max)?;
                vec![b.binary(BinOp::Max, &mx, &t)?]
            }
            None => vec![mx],
        }
    };
    if early {
        let at = Slice { stash: &stash, d: &d, c, len, slot: Val::lit(0) };
        let pipe = pipelined(chunks, false);
        let (mt, st) = load_slice_online(&b, name, &at, &xv, (&row, &lo), pipe)?;
        // the block's (m, s): each thread's sum rescaled to the block's max
        let warps = threads.div_ceil(32) as i64;
        let m = block_reduce_at(&b, &mt, BinOp::Max, scratch, 0)?;
        let scaled = b.binary(BinOp::Mul, &st, &exp_diff(&b, &mt, &m)?)?;
        let s = block_reduce_at(&b, &scaled, BinOp::Add, scratch, warps)?;
        meet.publish(&b, name, &first, (&row, &part, kk), (&m, &s))?;
        b.note(format!("{name} pass 2 (the row's other blocks come in meanwhile): e = exp(x − m)"));
        exp_in_place(&b, &at, &m, ftz, false)?;
        let (big_m, big_s) = meet.gather(&b, name, &first, (&row, kk), (&m, &s))?;
        scale_out(&b, name, &at, &yv, (&row, &lo), (&m, &big_m, &big_s))?;
        meet.close(&b, name)?;
        return finish(b, in_flight * unroll, model);
    }
    // (the block max's barriers also order the bulk path's −∞ fills before pass 2's reads)
    // at least the lowest finite f32: a block of padding only gets e = 0, s = 0
    // one row a block: the max and the sum each reduce through their own half of the scratch,
    // one barrier each (nothing writes it afterwards)
    let warps = threads.div_ceil(32) as i64;
    let m = block_reduce_at(&b, &mx[0], BinOp::Max, scratch, 0)?;
    let at = Slice { stash: &stash, d: &d, c, len, slot: Val::lit(0) };
    let sum = if one_exp {
        b.note(format!("{name} pass 2: e = exp(x − m) over the slice in shared memory, its sum"));
        exp_in_place(&b, &at, &m, ftz, true)?
    } else {
        sum_slice(&b, name, &at, &m, ftz)?
    };
    // the held part: e = exp2((x − m)·log2 e) kept in registers in the slice's type
    let (sum, regs) = match regs {
        Some(h) => {
            b.note(format!("{name} pass 2: e = exp(x − m) of the held registers, its sum"));
            let log2e = b.f32(std::f32::consts::LOG2_E);
            let e = h.tile.cast(&b, ScalarType::F32)?.map(&b, |b, xv| {
                let z = b.binary(BinOp::Mul, &b.binary(BinOp::Sub, xv, &m)?, &log2e)?;
                Ok(b.unary(UnOp::Exp2ApproxFtz, &z)?)
            })?;
            let t = e.reduce_thread(&b, BinOp::Add)?;
            let sum = b.binary(BinOp::Add, &sum, &t)?;
            (sum, Some(Held { tile: e.cast(&b, ty)?, ..h }))
        }
        None => (sum, None),
    };
    let s = block_reduce_at(&b, &sum, BinOp::Add, scratch, warps)?;
    let (big_m, big_s) = meet.exchange(&b, name, &first, (&row, &part, kk), (&m, &s))?;
    // a held kernel asks for the residency its shared memory allows, with registers for
    // the held vectors and 32 more (ptxas 13.0 then keeps pass 1's loads within them: the
    // bf16 512-thread shapes with 4 or 8 vectors held take 64 registers, no spills)
    let vectors = if held > 0 { held - 2 } else { in_flight * unroll };
    if !one_exp {
        store_slice(&b, name, &at, &yv, (&row, &lo), (&big_m, &big_s), ftz)?;
        meet.close(&b, name)?;
        return finish(b, vectors, model);
    }
    if let Some(h) = regs {
        b.note(format!("{name} pass 3: y = e · exp(m − M) / S of the held registers, stored"));
        let f = factor(&b, &m, &big_m, &big_s)?;
        let out = h
            .tile
            .cast(&b, ScalarType::F32)?
            .map(&b, |b, ev| Ok(b.binary(BinOp::Mul, ev, &f)?))?;
        let w = Window::new(&b, &yv, &[1, h.r], &[row.clone(), h.lo.clone()], &h.d)?;
        w.store(&b, &out.cast(&b, ty)?)?;
    }
    let at = Slice { stash: &stash, d: &d, c, len, slot: Val::lit(0) };
    scale_out(&b, name, &at, &yv, (&row, &lo), (&m, &big_m, &big_s))?;
    meet.close(&b, name)?;
    finish(b, vectors, model)
}

/// The part of a block's slice a thread keeps in registers ([`build_softmax_coop_smem_held`]):
/// the tile (raw `x` in pass 1, `e` in the slice's type from pass 2 on), its distribution, the
/// column it starts at and its length `r`.
struct Held {
    tile: DTile,
    d: tilekit_kernel::TileDistribution,
    lo: Val,
    r: i64,
}

/// The held part of block `part`'s slice of `row` (`[part · stride, + r)`, −∞ past the row)
/// loaded into registers with the distribution `dh`.
fn load_held(
    b: &KernelBuilder,
    (xv, dh, ninf): (&View, &tilekit_kernel::TileDistribution, &Val),
    (row, part, stride): (Val, Val, i64),
) -> tilekit_kernel::Result<DTile> {
    let r = dh.x_lengths()[1];
    let origin = [row, part * Val::lit(stride)];
    Window::new(b, xv, &[1, r], &origin, dh)?.load_or(b, ninf)
}

/// The ticket of a held kernel taken **speculatively** ([`spec_ticket`] for the held
/// registers instead of step 0): every thread loads its held vectors of the slice of the
/// guess `(blockIdx.x + shift) mod gridDim.x` while thread 0's ticket atomic is in flight,
/// and loads them again (a loop of one iteration, uniform over the block) only when the
/// ticket differs. Returns `(row, part, the held tile of the ticket's slice)`.
fn held_ticket(
    b: &KernelBuilder,
    name: &str,
    first: &Pred,
    (ws, slot): (tilekit_ir::MemRef, tilekit_ir::MemRef),
    (k, shift): (i64, u32),
    (xv, dh, stride): (&View, &tilekit_kernel::TileDistribution, i64),
) -> Result<(Val, Val, DTile)> {
    b.note(format!("{name}: the held registers loaded for the guessed ticket, the atomic flying"));
    let ninf = b.konst(float_lit(xv.mem.elem, f64::NEG_INFINITY)?);
    let at = (xv, dh, &ninf);
    let guess = (b.block_id(Axis::X) + Val::lit(i64::from(shift))) % b.grid_dim(Axis::X);
    let t = load_held(b, at, (guess.clone() / Val::lit(k), guess.clone() % Val::lit(k), stride))?;
    let (row, part) = super::coop::take_ticket_wrapping(b, name, first, (ws, slot), k, true)?;
    let ticket = row.clone() * Val::lit(k) + part.clone();
    let hit = b.cmp(CmpOp::Eq, &ticket, &guess)?;
    let ity = ticket.ty().unwrap_or(ScalarType::I32);
    let sp = Spec { tile: t, hit, ity };
    let (once, one) = (sp.pick(b, 1, 0)?, sp.one(b));
    let regs = crate::tile::for_range(b, &once, &one, &one, &sp.tile.regs, |b, _, _| {
        Ok(load_held(b, at, (row.clone(), part.clone(), stride))?.regs)
    })?;
    Ok((row, part, DTile { regs, ..sp.tile }))
}

/// `f = exp2((m − M)·log2 e) / S`: the factor that turns a block's `e = exp(x − m)` into the
/// row's softmax.
fn factor(b: &KernelBuilder, m: &Val, big_m: &Val, big_s: &Val) -> Result<Val> {
    let inv = b.binary(BinOp::Div, &b.f32(1.0), big_s)?;
    Ok(b.binary(BinOp::Mul, &exp_diff(b, m, big_m)?, &inv)?)
}

/// [`build_softmax_coop_smem`] (loads, two exponentials) with every block taking a slice of
/// `rows` rows (1 or 2): ticket `t` is part `t mod k` of rows `rows·⌊t/k⌋ ..`; launch on
/// `k · ⌈rows_total / rows⌉` blocks. With 2 rows the block publishes row 0's (max, sum) and
/// loads row 1's slice before it waits for row 0's other blocks, then stores row 0 while row
/// 1's blocks come in:
///
/// ```text
///   load + stats r0 │ publish r0 │ load + stats r1 │ publish r1 │ wait r0 │ store r0 │ wait r1 │ store r1
///                                 └─ r0's wait hides here ─┘                  └─ r1's ─┘
/// ```
///
/// A second row past the tensor (an odd row count) is skipped by all its `k` blocks (the
/// condition is the block's, so its barriers stay uniform). Shared memory holds `rows` slices.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::coop_smem::build_softmax_coop_smem_rows;
/// let k = build_softmax_coop_smem_rows(ScalarType::BF16, 256, 8, 4, 2, 4, 2).unwrap();
/// assert_eq!(k.name, "softmax_coop_smem_2rows");
/// let text = k.to_string();
/// assert_eq!(text.matches("atom.release.gpu.global.add.u32").count(), 2 + 1 - 1); // two rows
/// assert!(build_softmax_coop_smem_rows(ScalarType::BF16, 256, 8, 4, 2, 4, 3).is_err());
/// ```
pub fn build_softmax_coop_smem_rows(
    ty: ScalarType,
    threads: u32,
    vx: i64,
    k: u32,
    unroll: i64,
    chunks: i64,
    rows: u32,
) -> Result<Kernel> {
    build(
        ty,
        threads,
        vx,
        k,
        (unroll, chunks, 0),
        (false, false, i64::from(rows)),
        (false, false, None),
    )
}

/// The kernel of [`build_softmax_coop_smem_rows`] (arguments checked).
fn build_rows(
    ty: ScalarType,
    threads: u32,
    vx: i64,
    k: u32,
    (unroll, chunks): (i64, i64),
    (rows, pipe): (i64, bool),
    (cluster, spec): (bool, Option<u32>),
) -> Result<Kernel> {
    let name = match (rows, pipe, cluster) {
        (1, false, false) if spec.is_some() => "softmax_coop_smem_spec",
        (1, true, false) if spec.is_some() => "softmax_coop_smem_pipe_spec",
        (1, false, false) => "softmax_coop_smem",
        (1, true, false) => "softmax_coop_smem_pipe",
        (1, false, true) => "softmax_cluster_smem",
        (1, true, true) => "softmax_cluster_smem_pipe",
        _ => "softmax_coop_smem_2rows",
    };
    let v = 16 / ty.size_bytes() as i64;
    let c = threads as i64 * v * unroll;
    let len = chunks * c;
    let kk = k as i64;
    let ftz = ty.size_bytes() == 2;
    // vectors a thread has in flight: two steps where pass 1 is pipelined, a step a row
    let in_flight: i64 = if pipe { 2 } else { rows };
    // the residency the deadlock bound assumes (`CoopTuning::resident_blocks`)
    let model = coop_smem_resident_blocks(ty, threads, unroll, chunks * rows, false)
        .min(65536 / (threads.max(32) * coop_smem_rows_registers(ty, unroll, rows as u32)))
        .max(1);
    let b = KernelBuilder::new(name, [threads, 1, 1])?;
    let Decl { x, y, meet, scratch, stash } = declare(&b, ty, threads, (rows, len), (cluster, k))?;
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &Val::lit(0))?;
    let d = dist::row_major(1, c, threads as i64, v)?;
    let xv = View::global(&x, vx)?.pad(&[1, c])?;
    let yv = View::global(&y, vx)?.pad(&[1, c])?;
    let at0 = Slice { stash: &stash, d: &d, c, len, slot: Val::lit(0) };
    let (group, part, step0) = meet.row_part_spec(&b, name, &first, kk, spec, (&xv, &at0))?;
    let step0 = std::cell::RefCell::new(step0);
    let lo = part.clone() * Val::lit(len);
    let slices: Vec<(Val, Slice)> = (0..rows)
        .map(|r| {
            let row = group.clone() * Val::lit(rows) + Val::lit(r);
            (row, Slice { stash: &stash, d: &d, c, len, slot: Val::lit(r) })
        })
        .collect();
    // one row, a cluster: passes 1 and 2, the cluster's meeting, pass 3
    if let Meet::Cluster { .. } = meet {
        let (row, at) = &slices[0];
        let mx = load_slice(&b, name, at, &xv, (row, &lo), pipe, None)?;
        let warps = threads.div_ceil(32) as i64;
        let m = block_reduce_at(&b, &mx, BinOp::Max, scratch, 0)?;
        let sum = sum_slice(&b, name, at, &m, ftz)?;
        let s = block_reduce_at(&b, &sum, BinOp::Add, scratch, warps)?;
        let (big_m, big_s) = meet.exchange(&b, name, &first, (row, &part, kk), (&m, &s))?;
        store_slice(&b, name, at, &yv, (row, &lo), (&big_m, &big_s), ftz)?;
        meet.close(&b, name)?;
        return finish(b, in_flight * unroll, model);
    }
    let Meet::Counter { ws, stats, .. } = meet else { unreachable!("the cluster returned") };
    // pass 1 and 2 of a row, then its (max, sum) published
    let stats_of = |b: &KernelBuilder, (row, at): &(Val, Slice)| -> Result<()> {
        // the speculated first step belongs to the block's first row
        let first_step = step0.borrow_mut().take();
        let mx = load_slice(b, name, at, &xv, (row, &lo), pipe, first_step)?;
        // one row a block: each reduction its own half of the scratch, one barrier each;
        // two rows reuse it, so the barrier after each reduction stays
        let (m, s) = if rows == 1 {
            let warps = threads.div_ceil(32) as i64;
            let m = block_reduce_at(b, &mx, BinOp::Max, scratch, 0)?;
            let sum = sum_slice(b, name, at, &m, ftz)?;
            (m, block_reduce_at(b, &sum, BinOp::Add, scratch, warps)?)
        } else {
            let m = block_reduce(b, &mx, BinOp::Max, scratch)?;
            (m.clone(), block_reduce(b, &sum_slice(b, name, at, &m, ftz)?, BinOp::Add, scratch)?)
        };
        publish(b, name, &first, (ws, stats), (row, &part, kk), (&m, &s))
    };
    // the row's (M, S) once its k blocks are in, then pass 3
    let store_of = |b: &KernelBuilder, (row, at): &(Val, Slice)| -> Result<()> {
        let (big_m, big_s) = gather(b, name, &first, (ws, stats), (row, kk))?;
        reset_counter(b, name, &first, ws, (row, kk))?;
        store_slice(b, name, at, &yv, (row, &lo), (&big_m, &big_s), ftz)
    };
    // a second row past the last: skipped by the whole block
    let second = |b: &KernelBuilder, f: &dyn Fn(&KernelBuilder) -> Result<()>| -> Result<()> {
        let inside = b.cmp(CmpOp::Lt, &slices[1].0, &x.lengths[0])?;
        // the branch's error is an OpsError: kept aside and returned after the if
        let mut failed = Ok(());
        b.if_then(&inside, |b| {
            failed = f(b);
            Ok(())
        })?;
        failed
    };
    stats_of(&b, &slices[0])?;
    if rows == 2 {
        b.note(format!("{name}: row 1's slice loaded while row 0's blocks come in"));
        second(&b, &|b| stats_of(b, &slices[1]))?;
    }
    store_of(&b, &slices[0])?;
    if rows == 2 {
        second(&b, &|b| store_of(b, &slices[1]))?;
    }
    finish(b, in_flight * unroll, model)
}

/// What every kernel of this module declares: `x`, `y` (2-D, the element type), `ws` (u32
/// counters), `stats` (f32 pairs), two f32 a warp of shared scratch for the block reductions
/// (as [`coop_smem_shared_bytes`] counts), the ticket slot and `rows` slices of `len` raw
/// elements.
struct Decl {
    x: tilekit_ir::TensorParam,
    y: tilekit_ir::TensorParam,
    meet: Meet,
    scratch: tilekit_ir::MemRef,
    stash: View,
}

/// How the `k` blocks of a row learn their row and meet: tickets, counters and pairs in
/// global memory (`ws`, `stats` params and the shared ticket `slot`; [`super::coop`]), or one
/// thread-block cluster per row whose blocks leave their pair in shared memory and meet at
/// `barrier.cluster` (no params).
enum Meet {
    Counter { ws: tilekit_ir::MemRef, stats: tilekit_ir::MemRef, slot: tilekit_ir::MemRef },
    Cluster { pair: tilekit_ir::MemRef, k: i64 },
}

impl Meet {
    /// `(row, part)` of this block: from its ticket, or from its cluster (the cluster is the
    /// row, the block's rank in it the part).
    fn row_part(&self, b: &KernelBuilder, name: &str, first: &Pred, k: i64) -> Result<(Val, Val)> {
        match *self {
            Meet::Counter { ws, slot, .. } => {
                super::coop::take_ticket_wrapping(b, name, first, (ws, slot), k, true)
            }
            Meet::Cluster { .. } => {
                let row = b.block_id(Axis::X) / Val::lit(k);
                let part = if k > 1 { b.cluster_cta_rank() } else { Val::lit(0) };
                Ok((row, part))
            }
        }
    }

    /// [`Meet::row_part`], and with `spec` (the counter only) step 0 of the slice: loaded for
    /// the guess `(blockIdx.x + shift) mod gridDim.x` while the ticket's atomic is in flight,
    /// and loaded again at the ticket's slice only when the guess missed ([`spec_ticket`]).
    fn row_part_spec(
        &self,
        b: &KernelBuilder,
        name: &str,
        first: &Pred,
        k: i64,
        spec: Option<u32>,
        (xv, at): (&View, &Slice),
    ) -> Result<(Val, Val, Option<Spec>)> {
        match (self, spec) {
            (&Meet::Counter { ws, slot, .. }, Some(shift)) => {
                let (row, part, t) = spec_ticket(b, name, first, (ws, slot), (k, shift), (xv, at))?;
                Ok((row, part, Some(t)))
            }
            _ => {
                let (row, part) = self.row_part(b, name, first, k)?;
                Ok((row, part, None))
            }
        }
    }

    /// The row's `(M, S)` from its `k` blocks' `(m, s)`: [`Meet::publish`], then
    /// [`Meet::gather`].
    fn exchange(
        &self,
        b: &KernelBuilder,
        name: &str,
        first: &Pred,
        (row, part, k): (&Val, &Val, i64),
        (m, s): (&Val, &Val),
    ) -> Result<(Val, Val)> {
        match *self {
            Meet::Counter { ws, stats, .. } => {
                let pair = exchange(b, name, first, (ws, stats), (row, part, k), (m, s))?;
                reset_counter(b, name, first, ws, (row, k))?;
                Ok(pair)
            }
            Meet::Cluster { .. } => {
                self.publish(b, name, first, (row, part, k), (m, s))?;
                self.gather(b, name, first, (row, k), (m, s))
            }
        }
    }

    /// This block's `(m, s)` made visible to the row's other blocks (the counter's release
    /// add, or the cluster's arrive); the block may work on before it [gathers](Self::gather).
    fn publish(
        &self,
        b: &KernelBuilder,
        name: &str,
        first: &Pred,
        (row, part, k): (&Val, &Val, i64),
        (m, s): (&Val, &Val),
    ) -> Result<()> {
        match *self {
            Meet::Counter { ws, stats, .. } => {
                publish(b, name, first, (ws, stats), (row, part, k), (m, s))
            }
            Meet::Cluster { pair, .. } => cluster_publish(b, name, first, (pair, k), (m, s)),
        }
    }

    /// The row's `(M, S)` once all its blocks have published (`mine`: this block's pair).
    fn gather(
        &self,
        b: &KernelBuilder,
        name: &str,
        first: &Pred,
        (row, k): (&Val, i64),
        mine: (&Val, &Val),
    ) -> Result<(Val, Val)> {
        match *self {
            Meet::Counter { ws, stats, .. } => {
                let pair = gather(b, name, first, (ws, stats), (row, k))?;
                reset_counter(b, name, first, ws, (row, k))?;
                Ok(pair)
            }
            Meet::Cluster { pair, .. } => cluster_gather(b, name, (pair, k), mine),
        }
    }

    /// The end of the kernel: a cluster's block waits (`barrier.cluster.wait`) until every
    /// block of its cluster has read its pair, so its shared memory outlives the reads.
    fn close(&self, b: &KernelBuilder, name: &str) -> Result<()> {
        if let Meet::Cluster { k, .. } = *self {
            if k > 1 {
                b.note(format!("{name}: no block leaves while a peer may still read its pair"));
                b.cluster_wait()?;
            }
        }
        Ok(())
    }
}

/// After the row's gather: thread `first` takes its row's counter once more with an
/// `atom.inc` bounded by `2k − 1` (fire and forget). The `k` publishes raised it to `k`; the
/// `k` blocks' increments, each after its own poll saw `k`, take it to `2k − 1` and the last
/// one back to 0 — no block still polls by then, and the next launch finds the counter (and,
/// with the wrapping ticket, the ticket counter) at zero: the workspace needs no memset per
/// call (`api`'s counters are kept by the backend between calls).
fn reset_counter(
    b: &KernelBuilder,
    name: &str,
    first: &Pred,
    ws: tilekit_ir::MemRef,
    (row, k): (&Val, i64),
) -> Result<()> {
    b.note(format!("{name}: the row's counter back to 0 after its k blocks (atom.inc, 2k − 1)"));
    b.if_then(first, |b| {
        b.atomic_inc(ws, &(row.clone() + Val::lit(1)), &Val::lit(2 * k - 1), false)?;
        Ok(())
    })?;
    Ok(())
}

/// The first half of the cluster's exchange: thread `first` leaves `(m, s)` in the block's
/// `pair`, and every thread arrives at the cluster barrier (`barrier.cluster.arrive`,
/// release) without waiting. One block (`k = 1`): nothing.
fn cluster_publish(
    b: &KernelBuilder,
    name: &str,
    first: &Pred,
    (pair, k): (tilekit_ir::MemRef, i64),
    (m, s): (&Val, &Val),
) -> Result<()> {
    if k == 1 {
        return Ok(());
    }
    b.note(format!("{name}: the block's (max, sum) for its cluster; arrive (release)"));
    b.if_then(first, |b| b.store(pair, &Val::lit(0), &[m.clone(), s.clone()], None))?;
    b.cluster_arrive()?;
    Ok(())
}

/// The second half: wait (`barrier.cluster.wait`, acquire) until every block of the cluster
/// has published, lane `l < k` of every warp reads block `l`'s pair through distributed
/// shared memory, butterfly shuffles combine them into `(M, S)`, and the thread arrives again
/// without waiting: its wait closes the kernel ([`Meet::close`]), so no block leaves while its
/// pair may still be read, and none stops here for its peers' reads. One block (`k = 1`) has
/// the row's `(M, S)` already (`mine`).
fn cluster_gather(
    b: &KernelBuilder,
    name: &str,
    (pair, k): (tilekit_ir::MemRef, i64),
    mine: (&Val, &Val),
) -> Result<(Val, Val)> {
    if k == 1 {
        return Ok((mine.0.clone(), mine.1.clone()));
    }
    b.cluster_wait()?;
    b.note(format!("{name}: the cluster's {k} pairs through distributed shared memory"));
    let lane = b.lane_id();
    let inside = b.cmp(CmpOp::Lt, &lane, &Val::lit(k))?;
    let peer = b.binary(BinOp::Min, &lane, &Val::lit(k - 1))?;
    let p = b.load_cluster(pair, &peer, &Val::lit(0), 2)?;
    let lm = b.select(&inside, &p[0], &b.f32(f32::NEG_INFINITY))?;
    let ls = b.select(&inside, &p[1], &b.f32(0.0))?;
    // every pair's max is at least the lowest finite f32, so M is finite
    let big_m = crate::tile::warp_reduce(b, &lm, BinOp::Max)?;
    let part_s = b.binary(BinOp::Mul, &ls, &exp_diff(b, &lm, &big_m)?)?;
    let big_s = crate::tile::warp_reduce(b, &part_s, BinOp::Add)?;
    b.note(format!("{name}: the pairs read (arrive; the wait closes the kernel)"));
    b.cluster_arrive()?;
    Ok((big_m, big_s))
}

fn declare(
    b: &KernelBuilder,
    ty: ScalarType,
    threads: u32,
    (rows, len): (i64, i64),
    (cluster, k): (bool, u32),
) -> Result<Decl> {
    let v = 16 / ty.size_bytes() as i64;
    let desc = tilekit_layout::TensorDescriptor::packed(vec![rows, len], Some(v))?;
    if cluster && k > 1 {
        // before any instruction
        b.set_cluster_dim([k, 1, 1])?;
    }
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("y", ty, 2)?;
    let meet = if cluster {
        Meet::Cluster { pair: b.shared("pair", ScalarType::F32, 2)?, k: i64::from(k) }
    } else {
        Meet::Counter {
            ws: b.ptr_param("ws", ScalarType::U32)?,
            stats: b.ptr_param("stats", ScalarType::F32)?,
            slot: b.shared("ticket", ScalarType::U32, 1)?,
        }
    };
    Ok(Decl {
        x,
        y,
        meet,
        scratch: b.shared("partial", ScalarType::F32, 2 * threads as usize / 32)?,
        stash: View::shared(b, "slice", ty, &desc)?,
    })
}

/// Where a block keeps one row's slice: row `slot` of `stash` (`rows × len` raw elements in
/// shared memory), walked in steps of `c` elements with the distribution `d`.
struct Slice<'a> {
    stash: &'a View,
    d: &'a tilekit_kernel::TileDistribution,
    c: i64,
    len: i64,
    slot: Val,
}

impl Slice<'_> {
    /// The window of step `c0` of the slice.
    fn at(&self, b: &KernelBuilder, c0: Val) -> tilekit_kernel::Result<Window> {
        Window::new(b, self.stash, &[1, self.c], &[self.slot.clone(), c0], self.d)
    }

    /// `for c0 in (0..len).step_by(c)` with the accumulators `init`.
    fn walk(
        &self,
        b: &KernelBuilder,
        init: &[Val],
        body: impl FnOnce(&KernelBuilder, Val, &[Val]) -> tilekit_kernel::Result<Vec<Val>>,
    ) -> Result<Vec<Val>> {
        let (zero, end, step) = (Val::lit(0), Val::lit(self.len), Val::lit(self.c));
        Ok(crate::tile::for_range(b, &zero, &end, &step, init, body)?)
    }
}

/// The ticket taken **speculatively**: every thread issues step 0's loads of the slice the
/// block would own if its ticket were `guess = (blockIdx.x + shift) mod gridDim.x` (the
/// hardware starts a grid's blocks in index order, so the ticket usually is; the library
/// passes `shift` 0, tests rotate the guess so that every block misses), then thread 0 takes
/// the ticket. The atomic's round trip and the first loads are in flight together:
///
/// ```text
///   plain:  atom ──── round trip ────► bar ─► ld step 0 ──── latency ────► st.shared …
///   spec:   ld step 0 (guess) ─┐
///           atom ──── round trip ──┴─► bar ─► ticket == guess? ─► st.shared …   (hit)
///                                                           └──► ld step 0 again   (miss)
/// ```
///
/// A miss (uniform over the block: the ticket is the block's) loads step 0 again at the
/// ticket's slice ([`load_slice`]: the loop over the steps starts at step 0 instead of 1;
/// the unrolled pass reloads it in a loop that runs once); the guessed slice's bytes were read
/// for nothing (another block holds that ticket and reads them too, most likely from L2).
/// Returns `(row, part, the guess's step 0)`.
fn spec_ticket(
    b: &KernelBuilder,
    name: &str,
    first: &Pred,
    (ws, slot): (tilekit_ir::MemRef, tilekit_ir::MemRef),
    (k, shift): (i64, u32),
    (xv, at): (&View, &Slice),
) -> Result<(Val, Val, Spec)> {
    let ninf = b.konst(float_lit(at.stash.mem.elem, f64::NEG_INFINITY)?);
    let load0 = |b: &KernelBuilder, row: Val, part: Val| {
        let origin = [row, part * Val::lit(at.len)];
        Window::new(b, xv, &[1, at.c], &origin, at.d)?.load_or(b, &ninf)
    };
    let guess = (b.block_id(Axis::X) + Val::lit(i64::from(shift))) % b.grid_dim(Axis::X);
    b.note(format!("{name}: step 0 of the guessed ticket's slice loaded while the atomic flies"));
    let spec = load0(b, guess.clone() / Val::lit(k), guess.clone() % Val::lit(k))?;
    let (row, part) = super::coop::take_ticket_wrapping(b, name, first, (ws, slot), k, true)?;
    let ticket = row.clone() * Val::lit(k) + part.clone();
    let hit = b.cmp(CmpOp::Eq, &ticket, &guess)?;
    let ity = ticket.ty().unwrap_or(ScalarType::I32);
    Ok((row, part, Spec { tile: spec, hit, ity }))
}

/// Step 0 of a block's slice loaded for a guessed ticket ([`spec_ticket`]): its registers,
/// whether the guess held (uniform over the block), the index type of the loop bounds.
struct Spec {
    tile: DTile,
    hit: Pred,
    ity: ScalarType,
}

impl Spec {
    /// `if_hit` where the guess held, else `if_miss`: an index of the loops' type.
    fn pick(&self, b: &KernelBuilder, if_hit: u64, if_miss: u64) -> Result<Val> {
        let int = |v: u64| b.konst(tilekit_ir::Lit::from_bits(self.ity, v));
        Ok(b.select(&self.hit, &int(if_hit), &int(if_miss))?)
    }

    /// `1` as an index of the loops' type.
    fn one(&self, b: &KernelBuilder) -> Val {
        b.konst(tilekit_ir::Lit::from_bits(self.ity, 1))
    }
}

/// Pass 1 with loads: `x[row, lo ..]` (−∞ past the row) into the slice (raw: bf16 stays
/// bf16); returns the thread's max (at least the lowest finite f32). `pipelined`: the steps
/// unrolled, step `c + 1`'s loads issued before step `c`'s stores and max (two steps of loads
/// in flight per thread); otherwise a loop over the steps.
fn load_slice(
    b: &KernelBuilder,
    name: &str,
    at: &Slice,
    xv: &View,
    (row, lo): (&Val, &Val),
    pipelined: bool,
    first: Option<Spec>,
) -> Result<Val> {
    let ninf = b.konst(float_lit(at.stash.mem.elem, f64::NEG_INFINITY)?);
    let load = |b: &KernelBuilder, c0: Val| {
        Window::new(b, xv, &[1, at.c], &[row.clone(), lo.clone() + c0], at.d)?.load_or(b, &ninf)
    };
    // step c0's raw tile into the slice, its max folded into `acc`
    let stash = |b: &KernelBuilder, c0: Val, raw: &crate::tile::DTile, acc: &Val| {
        at.at(b, c0)?.store(b, raw)?;
        // 16-bit: max.bf16x2 on the raw words, only the last pair widened
        let t = raw.reduce_thread_f32(b, BinOp::Max)?;
        Ok::<_, tilekit_kernel::KernelError>(b.binary(BinOp::Max, acc, &t)?)
    };
    if !pipelined {
        b.note(format!("{name} pass 1: the slice into shared memory (raw), the thread's max"));
        let (from, init) = match first {
            // step 0 of the guessed ticket in registers (`spec_ticket`): on a hit stored by a
            // loop of one iteration (none on a miss), and the steps start at 1; on a miss
            // they start at 0 — one step of registers live, as without the guess
            Some(sp) => {
                let once = sp.pick(b, 0, 1)?;
                let min = [b.f32(f32::MIN)];
                let one = sp.one(b);
                let acc = crate::tile::for_range(b, &once, &one, &one, &min, |b, _, acc| {
                    Ok(vec![stash(b, Val::lit(0), &sp.tile, &acc[0])?])
                })?;
                (sp.pick(b, at.c as u64, 0)?, acc[0].clone())
            }
            None => (Val::lit(0), b.f32(f32::MIN)),
        };
        let (end, step) = (Val::lit(at.len), Val::lit(at.c));
        let acc = crate::tile::for_range(b, &from, &end, &step, &[init], |b, c0, acc| {
            let raw = load(b, c0.clone())?;
            Ok(vec![stash(b, c0, &raw, &acc[0])?])
        })?;
        return Ok(acc[0].clone());
    }
    b.note(format!("{name} pass 1: the slice into shared memory, step c + 1's loads in flight"));
    let steps = at.len / at.c;
    let mut next = Some(match first {
        // the guessed ticket's step 0; on a miss loaded again (a loop of one iteration)
        Some(sp) => {
            let once = sp.pick(b, 1, 0)?;
            let one = sp.one(b);
            let regs = crate::tile::for_range(b, &once, &one, &one, &sp.tile.regs, |b, _, _| {
                Ok(load(b, Val::lit(0))?.regs)
            })?;
            DTile { regs, ..sp.tile }
        }
        None => load(b, Val::lit(0))?,
    });
    let mut acc = b.f32(f32::MIN);
    for step in 0..steps {
        let raw = next.take().expect("one step loaded ahead");
        if step + 1 < steps {
            next = Some(load(b, Val::lit((step + 1) * at.c))?);
        }
        acc = stash(b, Val::lit(step * at.c), &raw, &acc)?;
    }
    Ok(acc)
}

/// Pass 2 of the one-exponential kernels: `e = exp2((x − m)·log2 e)` (`ex2.approx.ftz`)
/// written over the slice in shared memory in the slice's type — every thread rewrites
/// exactly the elements it wrote in pass 1 (the same distribution), so no barrier is needed —
/// and, with `sum`, the thread's `Σ e` of the unrounded f32 values (else 0). 16-bit slices
/// (`fold`) take the exponent as one FFMA, `x·log2 e − m·log2 e`, where the block's max allows
/// ([`foldable`]; a uniform branch to the exact difference beyond it).
fn exp_in_place(b: &KernelBuilder, at: &Slice, m: &Val, fold: bool, sum: bool) -> Result<Val> {
    let ty = at.stash.mem.elem;
    let log2e = b.f32(std::f32::consts::LOG2_E);
    let neg_m = b.unary(UnOp::Neg, &b.binary(BinOp::Mul, m, &log2e)?)?;
    let pass = |b: &KernelBuilder, folded: bool| {
        let (zero, end, step) = (Val::lit(0), Val::lit(at.len), Val::lit(at.c));
        crate::tile::for_range(b, &zero, &end, &step, &[b.f32(0.0)], |b, c0, acc| {
            let w = at.at(b, c0)?;
            let e = w.load(b)?.cast(b, ScalarType::F32)?.map(b, |b, xv| {
                let z = if folded {
                    b.fma(xv, &log2e, &neg_m)?
                } else {
                    b.binary(BinOp::Mul, &b.binary(BinOp::Sub, xv, m)?, &log2e)?
                };
                Ok(b.unary(UnOp::Exp2ApproxFtz, &z)?)
            })?;
            w.store(b, &e.cast(b, ty)?)?;
            if !sum {
                return Ok(vec![acc[0].clone()]);
            }
            let t = e.reduce_thread(b, BinOp::Add)?;
            Ok(vec![b.binary(BinOp::Add, &acc[0], &t)?])
        })
    };
    let out = if fold {
        let (fast, exact) = (|b: &KernelBuilder| pass(b, true), |b: &KernelBuilder| pass(b, false));
        crate::tile::if_then_else(b, &foldable(b, m)?, fast, exact)?
    } else {
        pass(b, false)?
    };
    Ok(out[0].clone())
}

/// Pass 3 of the one-exponential kernels: `y[row, lo ..] = e · f` from the slice (which holds
/// `e = exp2((x − m)·log2 e)`), with the block's factor `f = exp2((m − M)·log2 e) / S`.
fn scale_out(
    b: &KernelBuilder,
    name: &str,
    at: &Slice,
    yv: &View,
    (row, lo): (&Val, &Val),
    (m, big_m, big_s): (&Val, &Val, &Val),
) -> Result<()> {
    b.note(format!("{name} pass 3: y = e · exp(m − M) / S from shared memory, stored"));
    let f = factor(b, m, big_m, big_s)?;
    let ty = yv.mem.elem;
    at.walk(b, &[], |b, c0, _| {
        let t = at.at(b, c0.clone())?.load(b)?.cast(b, ScalarType::F32)?;
        let out = t.map(b, |b, ev| Ok(b.binary(BinOp::Mul, ev, &f)?))?.cast(b, ty)?;
        Window::new(b, yv, &[1, at.c], &[row.clone(), lo.clone() + c0], at.d)?.store(b, &out)?;
        Ok(vec![])
    })?;
    Ok(())
}

/// Pass 1 with loads, as [`load_slice`], that also keeps the thread's **running sum**: after
/// each step, `s = s·exp2((m_old − m)·log2 e) + Σ exp2((x − m)·log2 e)` over the step's
/// elements (`ex2.approx.ftz`, the exact difference: any finite max), so the block has its
/// `(m, s)` at the end of pass 1 and can publish it before pass 2. Returns the thread's
/// `(m, s)`, `m` at least the lowest finite f32.
fn load_slice_online(
    b: &KernelBuilder,
    name: &str,
    at: &Slice,
    xv: &View,
    (row, lo): (&Val, &Val),
    pipelined: bool,
) -> Result<(Val, Val)> {
    let ninf = b.konst(float_lit(at.stash.mem.elem, f64::NEG_INFINITY)?);
    let log2e = b.f32(std::f32::consts::LOG2_E);
    let load = |b: &KernelBuilder, c0: Val| {
        Window::new(b, xv, &[1, at.c], &[row.clone(), lo.clone() + c0], at.d)?.load_or(b, &ninf)
    };
    // step c0's raw tile into the slice; (m, s) updated with its elements
    let step = |b: &KernelBuilder, c0: Val, raw: &crate::tile::DTile, m: &Val, s: &Val| {
        at.at(b, c0)?.store(b, raw)?;
        let t = raw.reduce_thread_f32(b, BinOp::Max)?;
        let m2 = b.binary(BinOp::Max, m, &t)?;
        let e = raw.cast(b, ScalarType::F32)?.map(b, |b, xv| {
            let z = b.binary(BinOp::Mul, &b.binary(BinOp::Sub, xv, &m2)?, &log2e)?;
            Ok(b.unary(UnOp::Exp2ApproxFtz, &z)?)
        })?;
        let sum = e.reduce_thread(b, BinOp::Add)?;
        let keep = b.binary(BinOp::Mul, s, &exp_diff(b, m, &m2)?)?;
        Ok::<_, tilekit_kernel::KernelError>((m2, b.binary(BinOp::Add, &keep, &sum)?))
    };
    let (m0, s0) = (b.f32(f32::MIN), b.f32(0.0));
    if !pipelined {
        b.note(format!("{name} pass 1: the slice into shared memory, the thread's max and sum"));
        let acc = at.walk(b, &[m0, s0], |b, c0, acc| {
            let raw = load(b, c0.clone())?;
            let (m, s) = step(b, c0, &raw, &acc[0], &acc[1])?;
            Ok(vec![m, s])
        })?;
        return Ok((acc[0].clone(), acc[1].clone()));
    }
    b.note(format!("{name} pass 1: the slice, max and sum, step c + 1's loads in flight"));
    let steps = at.len / at.c;
    let mut next = Some(load(b, Val::lit(0))?);
    let (mut m, mut s) = (m0, s0);
    for i in 0..steps {
        let raw = next.take().expect("one step loaded ahead");
        if i + 1 < steps {
            next = Some(load(b, Val::lit((i + 1) * at.c))?);
        }
        (m, s) = step(b, Val::lit(i * at.c), &raw, &m, &s)?;
    }
    Ok((m, s))
}

/// The largest |max| for which the 16-bit passes fold the subtraction into one FFMA
/// (`x·log2 e − m·log2 e`): 2¹²⁶, so `m·log2 e` and `−M·log2 e − log2 S` stay finite. A block
/// (pass 2) or row (pass 3) whose max lies beyond it — a block of padding only (`m` = the
/// lowest f32), or values within 2¹²⁶ of the largest floats — takes the exact difference
/// instead (a uniform branch: one of two loops).
const FOLD_LIMIT: f32 = 8.507_059e37; // 2^126

/// Whether `|m| ≤ FOLD_LIMIT`.
fn foldable(b: &KernelBuilder, m: &Val) -> Result<tilekit_ir::Pred> {
    let abs = b.unary(UnOp::Abs, m)?;
    Ok(b.cmp(CmpOp::Le, &abs, &b.f32(FOLD_LIMIT))?)
}

/// Pass 2 (two exponentials): the thread's sum of `exp2((x − m)·log2 e)` over the slice, with
/// `ex2.approx.ftz` for every type (a term below 2⁻¹²⁶ changes a sum of at least 1 — the
/// block's max contributes 1 — by nothing f32 can hold). 16-bit slices (`fold`) take the
/// exponent as one FFMA, `x·log2 e − m·log2 e`: the product `m·log2 e` rounded once per thread
/// moves every term of the block's sum by the same relative ~|m|·2⁻²⁴, far below a 16-bit
/// ulp (beyond [`FOLD_LIMIT`] the exact form); f32 keeps the exact `(x − m)·log2 e`.
fn sum_slice(b: &KernelBuilder, name: &str, at: &Slice, m: &Val, fold: bool) -> Result<Val> {
    b.note(format!("{name} pass 2: the block's sum of exp from shared memory"));
    let log2e = b.f32(std::f32::consts::LOG2_E);
    let exact = |b: &KernelBuilder| {
        walk_sum(b, at, |b, xv| {
            let z = b.binary(BinOp::Mul, &b.binary(BinOp::Sub, xv, m)?, &log2e)?;
            Ok(b.unary(UnOp::Exp2ApproxFtz, &z)?)
        })
    };
    if !fold {
        return Ok(exact(b)?[0].clone());
    }
    let neg_m = b.unary(UnOp::Neg, &b.binary(BinOp::Mul, m, &log2e)?)?;
    let fast = |b: &KernelBuilder| {
        walk_sum(b, at, |b, xv| Ok(b.unary(UnOp::Exp2ApproxFtz, &b.fma(xv, &log2e, &neg_m)?)?))
    };
    Ok(crate::tile::if_then_else(b, &foldable(b, m)?, fast, exact)?[0].clone())
}

/// `Σ exp(x)` over the slice for the thread, `exp` given per element (f32).
fn walk_sum(
    b: &KernelBuilder,
    at: &Slice,
    exp: impl Fn(&KernelBuilder, &Val) -> tilekit_kernel::Result<Val>,
) -> tilekit_kernel::Result<Vec<Val>> {
    let (zero, end, step) = (Val::lit(0), Val::lit(at.len), Val::lit(at.c));
    crate::tile::for_range(b, &zero, &end, &step, &[b.f32(0.0)], |b, c0, acc| {
        let e = at.at(b, c0)?.load(b)?.cast(b, ScalarType::F32)?.map(b, |b, xv| exp(b, xv))?;
        let t = e.reduce_thread(b, BinOp::Add)?;
        Ok(vec![b.binary(BinOp::Add, &acc[0], &t)?])
    })
}

/// Pass 3 (two exponentials): `y[row, lo ..] = exp2((x − M)·log2 e − log2 S)` from the
/// slice — the division by `S` folded into the exponent (one FFMA after the subtraction;
/// `lg2.approx` adds ~2⁻²² relative), `ex2.approx.ftz` with `ftz`. 16-bit outputs (`ftz`) take
/// the whole exponent as one FFMA, `x·log2 e + c` with `c = −M·log2 e − log2 S` rounded once
/// per thread (an absolute ~|c|·2⁻²⁴ in the exponent: relative ~10⁻⁶ in `y` for |M| < 100,
/// against a bf16 half-ulp of 2⁻⁹; beyond [`FOLD_LIMIT`] the exact form); f32 keeps the exact
/// difference first.
fn store_slice(
    b: &KernelBuilder,
    name: &str,
    at: &Slice,
    yv: &View,
    (row, lo): (&Val, &Val),
    (big_m, big_s): (&Val, &Val),
    ftz: bool,
) -> Result<()> {
    b.note(format!("{name} pass 3: y = exp2((x − M)·log2 e − log2 S) from shared memory"));
    let neg_lg2_s = b.unary(UnOp::Neg, &b.unary(UnOp::Lg2Approx, big_s)?)?;
    let log2e = b.f32(std::f32::consts::LOG2_E);
    let ex2 = if ftz { UnOp::Exp2ApproxFtz } else { UnOp::Exp2Approx };
    let ty = yv.mem.elem;
    type Z<'z> = &'z dyn Fn(&KernelBuilder, &Val) -> tilekit_kernel::Result<Val>;
    let pass = |b: &KernelBuilder, z: Z| -> tilekit_kernel::Result<Vec<Val>> {
        let (zero, end, step) = (Val::lit(0), Val::lit(at.len), Val::lit(at.c));
        crate::tile::for_range(b, &zero, &end, &step, &[], |b, c0, _| {
            let out = at
                .at(b, c0.clone())?
                .load(b)?
                .cast(b, ScalarType::F32)?
                .map(b, |b, xv| Ok(b.unary(ex2, &z(b, xv)?)?))?;
            Window::new(b, yv, &[1, at.c], &[row.clone(), lo.clone() + c0], at.d)?
                .store(b, &out.cast(b, ty)?)?;
            Ok(vec![])
        })
    };
    let exact = |b: &KernelBuilder| {
        pass(b, &|b, xv| Ok(b.fma(&b.binary(BinOp::Sub, xv, big_m)?, &log2e, &neg_lg2_s)?))
    };
    if !ftz {
        // f32 keeps its subnormal results without ex2.approx's range check (a compare and two
        // predicated multiplies per element): 2^(z + 64) with ex2.approx.ftz, then one exact
        // multiply by 2⁻⁶⁴ (z ≤ 0, so 2^(z + 64) ≤ 2⁶⁴; a z below −190 flushes to 0 where the
        // true result is below 2⁻¹⁹⁰, under f32's smallest subnormal 2⁻¹⁴⁹)
        let up = b.binary(BinOp::Add, &neg_lg2_s, &b.f32(64.0))?;
        let down = b.f32(f32::from_bits(0x1f80_0000)); // 2^-64
        let (zero, end, step) = (Val::lit(0), Val::lit(at.len), Val::lit(at.c));
        crate::tile::for_range(b, &zero, &end, &step, &[], |b, c0, _| {
            let out = at.at(b, c0.clone())?.load(b)?.map(b, |b, xv| {
                let z = b.fma(&b.binary(BinOp::Sub, xv, big_m)?, &log2e, &up)?;
                Ok(b.binary(BinOp::Mul, &b.unary(UnOp::Exp2ApproxFtz, &z)?, &down)?)
            })?;
            Window::new(b, yv, &[1, at.c], &[row.clone(), lo.clone() + c0], at.d)?
                .store(b, &out)?;
            Ok(vec![])
        })?;
        return Ok(());
    }
    let c = b.binary(BinOp::Sub, &neg_lg2_s, &b.binary(BinOp::Mul, big_m, &log2e)?)?;
    let fast = |b: &KernelBuilder| pass(b, &|b, xv| Ok(b.fma(xv, &log2e, &c)?));
    crate::tile::if_then_else(b, &foldable(b, big_m)?, fast, exact)?;
    Ok(())
}
