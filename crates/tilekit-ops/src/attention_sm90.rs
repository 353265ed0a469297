//! Fused attention forward on Hopper (FlashAttention-3's structure): Q·Kᵀ and P·V on wgmma,
//! K and V tiles streamed by TMA through an mbarrier ring, online softmax in registers, a
//! producer warpgroup and two or three consumer warpgroups (warp specialisation with
//! `setmaxnreg`; [`AttnConfig::consumers`]).
//!
//! # What it computes
//!
//! Q is `(b, s_q, h, d)`, K and V are `(b, s_k, h_kv, d)` — PyTorch's (batch, seq, heads, dim)
//! layout, any strides with `d` contiguous; `h_kv` divides `h` and query head `hq` reads K/V
//! head `hq / (h / h_kv)` (grouped-query and multi-query attention). For each (batch, head):
//!
//! ```text
//!   S = Q·Kᵀ · scale          (scale = 1/√d unless given)
//!   S[i][j] = −∞  where j ≥ s_k, or (causal) j > i + s_k − s_q   (bottom-right aligned,
//!                                                                 as PyTorch and FA2)
//!   O = softmax_rows(S) · V                                      (b, s_q, h, d), Q's type
//!   LSE[i] = ln Σ_j exp(S[i][j])                                 (b, h, s_q), f32
//! ```
//!
//! A row that sees no key (causal with `s_q > s_k`: the first `s_q − s_k` rows) gets O = 0 and
//! LSE = −∞ (PyTorch's math backend gives NaN there; 0 / −∞ is what FlashAttention returns).
//!
//! # The schedule
//!
//! ```text
//!   C = consumers (2, or 3), BM = 64·C query rows (AttnConfig::block_rows)
//!   block = (BM query rows m0.., head, batch), 128·(C+1) threads: 384, or 512;
//!   n = key tiles of BN it needs (causal: only up to the diagonal of its last row)
//!
//!   warpgroup 0: producer (setmaxnreg.dec 40; C = 3: 32), one thread
//!     TMA Q[m0..m0+BM, :] → q_tile, on q_full
//!     for t in 0..n:  s = t mod S, round r = ⌊t/S⌋
//!       wait k_empty[s] parity (r+1) mod 2;  TMA K[t·BN.., :] → k_ring[s] on k_full[s]
//!       wait v_empty[s] parity (r+1) mod 2;  TMA V[t·BN.., :] → v_ring[s] on v_full[s]
//!
//!   warpgroups 1..=C: consumers (setmaxnreg.inc 232; C = 3: 160), 64 query rows each
//!     wait q_full;  O = 0, m = −∞, ℓ = 0                (f32 registers: O is 64×d over 128 threads)
//!     for t in 0..n:
//!       wait k_full[s]; S = Q·K[s]ᵀ   (d/16 × wgmma m64nBNk16, both operands K-major in smem)
//!       arrive k_empty[s] (128·C arrivals)
//!       mask S (−∞ past s_k and above the causal diagonal; only in the tiles that reach
//!              past the limit of one of the thread's rows)
//!       m' = max(m, rowmax S)   (a thread's values, then shuffles over the 4 lanes of a row)
//!       α = 2^((m − m')·c), P = 2^(S·c − m'·c)  (c = scale·log2 e: the scale folded into exp2)
//!       ℓ = α·ℓ + Σ P (per thread; the 4 lanes are summed once at the end), O = α·O
//!       wait v_full[s]; O += P·V[s]  (BN/16 × wgmma m64n{d}k16: P from registers — the
//!                                     accumulator of a 16-column slice of S *is* wgmma's A
//!                                     fragment — and V MN-major from smem)
//!       arrive v_empty[s]  (128·C arrivals)
//!     O /= ℓ → Q's type, masked stores;  LSE = (m·c + log2 ℓ)·ln 2
//!     (tma_store: O /= ℓ into this warpgroup's 64 rows of q_tile, swizzled as TMA wrote Q;
//!      fence.proxy.async; bar.sync 1+C+h, 128; its first thread: one TMA store per 64-column
//!      slab of a 64-row box, commit, wait for the reads — rows past s_q are clipped)
//!
//!   shared: q_tile BM×d, S stages of { k_ring BN×d, v_ring BN×d }, all bf16/f16 TMA box
//!   images with the 128-byte swizzle, cut into slabs of 64 columns (a swizzled box's inner
//!   dim is one 128-byte row): HopperSwizzle::B128.descriptor_atoms(rows, d, 2), from which
//!   both the tensor maps (boxes [64, 1, rows, 1] over [d, h, s, b]) and the wgmma
//!   descriptors are derived (V's is MN-major: LBO = the slab stride, SBO = 8 key rows)
//! ```
//!
//! Edges: TMA fills box elements past `s_q` or `s_k` with zeros (the 4-D maps clip at the
//! sequence end, never reading the next batch), the scores of keys past `s_k` are masked, and
//! the stores of O and LSE are masked to `s_q`. TMA needs 16-byte aligned strides: every
//! stride of Q, K and V a multiple of 8 elements, and their first elements 16-byte aligned.
//! Offsets are computed in i32: O and LSE of fewer than 2^31 elements.
//!
//! # Overlap and ping-pong (optional, [`AttnConfig::overlap`], [`AttnConfig::pingpong`])
//!
//! ```text
//!   overlap: a consumer software-pipelines its tiles — S of tile t and P·V of tile t−1 are
//!   issued together, and the softmax of t runs while P·V(t−1) is still on the tensor cores
//!
//!     prologue   S(0); wait; release K(0); softmax(0) → P(0), α(0)
//!     t = 1..n   wait_group 0 (P·V(t−2) done); release V(t−2)
//!                S(t), commit; O ·= α(t−1); P(t−1)·V(t−1), commit
//!                wait_group 1 (S(t) done); release K(t)
//!                softmax(t) → P(t), α(t)       (P·V(t−1) still running)
//!     epilogue   wait_group 0; release V(n−2); O ·= α(n−1); P(n−1)·V(n−1); wait; release V(n−1)
//!
//!   pingpong: the consumer warpgroups take turns on the tensor cores, a round robin — each
//!   brackets its GEMM issue with bar.sync (own barrier 1+h) … bar.arrive (the next one's,
//!   1 + (h+1) mod C: with two, 2−h), so one warpgroup's softmax runs under the others' GEMMs:
//!
//!     wg 1:  [S(t) P·V(t−1)] softmax(t) ·········· [S(t+1) P·V(t)] softmax(t+1)
//!     wg 2:  ··· wait ······ [S(t) P·V(t−1)] softmax(t) ········· [S(t+1) P·V(t)]
//!
//!     three consumers (C = 3): each softmax has two other warpgroups' GEMMs to hide under
//!     wg 1:  [GEMMs t] softmax(t) ··················· [GEMMs t+1] softmax(t+1)
//!     wg 2:  ·· wait ·· [GEMMs t] softmax(t) ·················· [GEMMs t+1]
//!     wg 3:  ······· wait ······· [GEMMs t] softmax(t) ················· [GEMMs t+1]
//! ```
//!
//! (ping-pong: O ·= α(t−1) before the warpgroup waits for its turn, not between its GEMMs.
//! The last warpgroup lets the first go at the start and makes no arrival after its last turn,
//! so every barrier's syncs and arrivals pair up: n + 1 turns a warpgroup for n tiles.)
//!
//! Both are off by default until they are measured on the GPU.
//!
//! Where the waits sit is what ptxas makes of them. Its scheduler puts a `wgmma.wait_group`
//! (SASS `WARPGROUP.DEPBAR.LE gsb0, N`) at the top of its basic block when what follows needs
//! it: the first version waited for P·V(t−1) after the softmax in the same block, and ptxas
//! 13.0 ran that wait right after the wait(1) — no exp2 between them, the softmax never under
//! P·V (the pipelined variants measured slower than `plain`). So nothing after the loop's
//! wait(1) needs P·V(t−1): P(t) is packed into fresh registers (the in-flight P·V reads
//! copies made before its fence), O ·= α(t) waits for the next tile, after its wait(0). K and
//! V of a stage are released apart, K(t) as soon as S(t) is done: V(t−2) is released only in
//! tile t, and with one `empty` barrier a 2-stage ring would wait for it before loading K(t).
//! And no copy may read O while a P·V runs on it (ptxas serializes the wgmmas, C7514): the
//! emitter keeps a software-pipelined loop's accumulators in its carried registers
//! (`O ·= α` in place, no copies at the back edge or the exit). The tests check the PTX
//! structure always and the SASS where ptxas and cuobjdump are installed.
//!
//! # Registers
//!
//! A 384-thread block declares `.maxnreg 168` at entry (what `ptxas -v` reports), and the code
//! after `setmaxnreg.inc 232` is allocated up to 232 (the SASS of the consumers uses up to R213
//! at d = 128, R217 at d = 256). With three consumers the 512-thread block declares 128 at
//! entry, and `setmaxnreg` moves the file to 32 for the producer and 160 for each consumer
//! (32 + 3 · 160 = 512 registers a thread of each warpgroup: the 64 Ki of the file;
//! FlashAttention-3's counts). The live state of a consumer thread (f32 unless said; BN keys
//! per tile, 64 query rows per warpgroup):
//!
//! ```text
//!                       O         S(t)      P(t−1) in flight   P(t) being made
//!   plain               d/2       BN/2      —                  BN/4 (packed)
//!   overlap, pingpong   d/2       BN/2      BN/4 (packed)      BN/4 (packed)
//!   d 128, BN 64:       64    +   32    +   16             +   ≤ 16     + addresses, m, ℓ, α
//! ```
//!
//! P is rounded to the input type and packed two to a register as it is computed
//! (`cvt.rn.{f16,bf16}x2.f32`, [`KernelBuilder::cvt_pack`]) — one 16-bit value per register
//! spilled the pipelined d = 128 (20–28 bytes). In the pipelined loops the packed words reach
//! wgmma through an identity `prmt`, not a copy, or ptxas would put the next tile's P into the
//! registers an in-flight P·V reads and serialize the wgmmas (its warning C7513); `plain`
//! passes them as they are (see "The softmax in SASS"). ptxas 13.0 `-v`, every
//! variant at 168 registers at entry, spill-store bytes, bf16, not causal, with the register
//! epilogue and with the TMA store:
//!
//! ```text
//!   d    BN    plain   overlap   pingpong    with tma_store
//!   64   64    0       0         0           0 0 0
//!   64   128   0       0         0           0 0 0
//!   128  64    0       0         0           0 0 0   (before packing P: 0 / 20 / 20)
//!   128  128   4*      148       148         0 0 0   (causal, f16: 12* / 156 / 156)
//!   256  64    192*    268*      268*        0 4 4   (causal 200* / 280* / 280*, 0 / 56* / 56*)
//! ```
//!
//! (\* the leaner softmax, see "The softmax in SASS": O stays in its carried registers in
//! `plain` too, so d = 128's spill is a few epilogue values stored once before the consumer
//! loop and reloaded after it, none in the loop — a test checks the SASS; d = 256's fell
//! from 280 / 288, 272 / 284 and 60.)
//!
//! Three consumers (160 registers), ptxas 13.0, spill-store bytes, bf16, register epilogue /
//! TMA store, not causal (causal where it differs); a TMA-store variant with 3 stages spills
//! what its 2-stage one does:
//!
//! ```text
//!   d    BN    plain              overlap               pingpong
//!   64   64    0 / 0              0 / 0                 0 / 0
//!   64   128   0 / 0              256 / 188 (236/192)   256 / 184 (220/212)
//!   128  64    0 / 0  (128 / 0)   144 / 4 (152 / 4)     144 / 4 (152 / 4)
//!   128  128   232 / 132          448 / 352, serialized wgmma
//! ```
//!
//! (O, S and P of d = 64, BN = 128 are 32 + 64 + 32 registers, and the pipelined schedules
//! keep a second P: 160 is not enough. d = 256 is refused with three consumers: O alone is
//! 128 registers.)
//!
//! (The pipelined schedule that really overlaps — P(t) and P(t−1) both live during the
//! softmax, α carried — costs d = 256 one or a few values reloaded per tile with the TMA store;
//! the earlier one, whose softmax waited for P·V, spilled 0 there and 116 / 112 at d = 128,
//! BN = 128 with the register epilogue.)
//!
//! The register epilogue's cost is its 64-bit addresses and masks per stored pair (d = 256:
//! 64 pairs a thread); the TMA store writes the tile with 32-bit shared addresses and one
//! thread's handful of instructions.
//!
//! [`variants`] lists the spill-free ones (and d = 256's); `tilekit bench attention` times them
//! and a test asserts they assemble without serialized wgmmas and without spills (but for
//! d = 256's).
//!
//! # The softmax in SASS
//!
//! ncu at d 64 / s 4096 (two consumers) had the consumers instruction-bound between the GEMMs
//! (tensor pipe 41% active against cuDNN's 51%, issue slots 50% busy, top stall "wait", a
//! fixed-latency dependency). The tests' SASS audit (`the_softmax_stays_lean_in_the_machine_code`,
//! ptxas 13.0 + cuobjdump) walks one iteration of the consumer loop — the path of a tile that
//! needs no mask and of one that does — and counts what a thread issues per S element (BN/2 of
//! them: 64 at BN = 128), in the softmax (from the `WARPGROUP.DEPBAR` that retires S to P·V's
//! `WARPGROUP.ARRIVE`; pipelined: to the back edge) and in the whole tile; and the longest
//! chain of dependent instructions in the softmax. bf16, not causal, unmasked tile (causal:
//! within 0.05; a masked tile adds 1.5 compares/selects an element, causal 2):
//!
//! ```text
//!                       d 64 plain/bn128/tma/c3        d 128 pingpong/bn128/tma
//!                       before        after            before        after
//!                       soft   tile   soft   tile      soft   tile   soft   tile
//!   MUFU.EX2            1.03   1.03   1.03   1.03      1.03   1.03   1.03   1.03
//!   FFMA                1.03   1.03   1.06   1.06      1.03   1.03   1.06   1.06
//!   FMUL                0.56   0.56   0.53   0.53      0.06   1.06   0.03   1.03
//!   FADD                1.00   1.00   0.97   0.97      1.00   1.00   0.97   0.97
//!   FMNMX               1.06   1.06   1.06   1.06      1.06   1.06   1.06   1.06
//!   SHFL                0.06   0.06   0.06   0.06      0.06   0.06   0.06   0.06
//!   F2FP (pack P)       0.50   0.50   0.50   0.50      0.50   0.50   0.50   0.50
//!   compare / select    0.08   0.16   0.06   0.09      0.08   0.23   0.09   0.11
//!   integer             0      0.22   0      0.06      0      0.41   0      0.09
//!   moves               0.70   1.25   0.19   0.22      0.11   0.67   0.16   0.66
//!   uniform datapath    0.30   1.95   0.05   1.36      0.03   2.97   0.03   1.70
//!   sync, gemm, branch  0.08   0.41   0.08   0.41      0.06   0.53   0.06   0.53
//!   total               6.41   9.23   5.59   7.36      5.03  10.56   5.06   8.81
//!   dependent chain     74            21               73            21
//! ```
//!
//! What the SASS showed, and what changed:
//!
//! - The essential work is ~5 an element: one FFMA (S·c − m·c, the scale folded into exp2 and
//!   m·c hoisted per row) and one MUFU.EX2 per element, one FMNMX, one FADD, half an F2FP
//!   (`F2FP.BF16.F32.PACK_AB`: one per pair); sm_90 has no 3-input FMNMX (ptxas emits the
//!   2-input one), so the max stays one per element.
//! - The mask costs nothing in a tile that needs none: the per-element compares and selects
//!   sit in the branch taken only by tiles past a row's limit (ptxas sinks the hoisted
//!   `setp`/`selp` into it); the other path is a dozen moves of the branch's results.
//! - The row max and the row sum were chains (BN/4 + 1 dependent FMNMX, then as many FADDs:
//!   a 74-deep chain, the "wait" stall). Both are balanced trees now (`tree`, max exact,
//!   the sum's rounding differs from the chain's by f32 ulps), ℓ' = α·ℓ + ΣP one FFMA: 21
//!   deep. The 4 lanes of a row are summed only in the epilogue (as FlashAttention-3 does).
//! - `plain` copied O back each tile (32 MOV at d 64: ptxas kept the rescaled O in other
//!   registers than the carried one) and sent P to wgmma through the identity `prmt` (32
//!   PRMT): the emitter now computes O ·= α in the carried registers in every loop
//!   (`tilekit_ptx::emit`'s in-place accumulators) and passes packed words as they are in a
//!   loop whose wgmmas retire before its back edge. The pipelined loops keep the `prmt` (their
//!   in-flight P·V needs it: 0.5 an element of `pingpong`'s moves).
//! - The ring slot `t mod S`, `⌊t/S⌋ mod 2` was a generic signed division in SASS (ptxas 13.0
//!   does not fold `rem.s32` by a register holding 2): a mask and a shift for 2 and 4 stages
//!   ([`PipelineState::at_masked`]).
//! - Q's wgmma descriptors are the same every tile: d ≤ 128 makes them once before the loop
//!   (uniform datapath 1.67 → 1.36 an element at d 64, 2.44 → 1.70 at d 128; d = 256's 16
//!   descriptors would hold 32 registers and spill more, so it keeps them per tile).
//! - Left: the rest of the descriptor math (K's and V's: shift, mask and OR per wgmma — a base
//!   descriptor per stage plus constant offsets would save most of it; an emitter change), and
//!   O ·= α (d/2 FMULs a tile, FMUL's 1.03 at d 128 — FlashAttention-3 pays it too; skipping
//!   it when α = 1 would need a warpgroup-uniform branch around wgmma, not done).
//!
//! # The TMA-store epilogue ([`AttnConfig::tma_store`])
//!
//! A consumer warpgroup reads only its own 64 rows of the Q tile, and its last S GEMM has
//! completed when the loop ends, so it may overwrite those rows with O / ℓ without waiting for
//! the others: its own named barrier (1 + C + h, past the ping-pong's 1..=C: 3 or 4 with two
//! consumers, 4, 5 or 6 with three; 128 threads) after `fence.proxy.async`,
//! then one thread stores 64-row boxes (the map `om` over O, as Q's but 64 rows), commits and
//! waits until the tile has been read. A register holds the pair at columns 8·(i/4) + 2·quad of
//! row (lane/4) + 8·((i/2) mod 2) of the warp's 16: the 16-byte chunk c = (col mod 64)/8 of
//! tile row y goes to chunk c ⊕ (y mod 8) = c ⊕ lane/4, the 128-byte swizzle TMA applied to Q.
//! O must start on a 16-byte boundary (a typed error otherwise).
//!
//! # The timeline probe ([`AttnConfig::probe`])
//!
//! ncu says the consumers stall at barriers and the tensor pipe idles half the time (bench
//! NOTES §11), not which wait costs what. A probed kernel ([`tilekit_kernel::probe`]) has the
//! first thread of each warpgroup stamp `%clock64` at both ends of every [`AttnSpan`] into a
//! buffer; [`probe_report`] sums them, `tilekit bench attention --probe FILE` runs it:
//!
//! ```text
//!   producer   [q_load] [k_empty_wait][k_load][v_empty_wait][v_load] [k_empty_wait] …
//!   consumer   [q_full_wait] [k_full_wait][s_issue][s_wait][softmax][v_full_wait][pv_issue][pv_wait] …
//!              (ping-pong: [turn_sync] before and [turn_arrive] after each GEMM issue) [epilogue]
//!   tensor busy ≈ ∪ [s_issue begin, s_wait end] ∪ [pv_issue begin, the next pv_wait end]
//! ```
//!
//! The marks are branch-free (a clock read, a shared counter, one predicated 16-byte store by
//! one thread of 128), so they sit between a wgmma's issue and its wait; ptxas keeps them
//! around the waits (a SASS test checks it). Probed kernels assemble at 168 registers without
//! spills for every d 64 / 128 variant; with the probe off the PTX is the unprobed kernel's,
//! byte for byte. With it on, the shared layout is the unprobed kernel's with the probe's
//! counters appended: Q, the K/V ring and the barriers stay at their offsets (a probe that
//! moved them once exposed an emitter bug — descriptors of V's later K blocks read past the
//! end of shared memory, see `tilekit_ptx::emit` — and a probe should not move what it
//! measures).
//!
//! *Causal block order.* A causal block's work grows with its query rows (block i of n reads
//! ⌈(i + 1)·BM / BN⌉ key tiles), and the hardware dispatches blocks in x order, so a grid that
//! maps x to query block x ends each (batch, head) on its longest block and the whole grid on a
//! last wave of long blocks. Causal kernels map x to query block n − 1 − x (longest first, as
//! FlashAttention-3's scheduler does); the last wave is then the shortest blocks:
//!
//! ```text
//!   x order      0   1   2   3        dispatched →      tail: the SMs that hold the last blocks
//!   x → i        ▂   ▄   ▆   █   (i = x)                 run a █ while the others idle
//!   x → n−1−i    █   ▆   ▄   ▂   (longest first)         run a ▂
//! ```
//!
//! Not yet here (the structure allows it): a persistent tile scheduler.

use tilekit_ir::tma::{OobFill, TensorMapSpec};
use tilekit_ir::wgmma::{Acc, Major, SmemMatrix, WgmmaShape, WgmmaSrc, WgmmaType};
use tilekit_ir::{
    Axis, BinOp, Clock, CmpOp, IrError, Kernel, KernelBuilder, ScalarType, ShflMode, UnOp, Val,
};
use tilekit_kernel::lit;
use tilekit_kernel::probe::Probe;
use tilekit_kernel::ring::{PipelineState, Ring};
use tilekit_layout::swizzle::HopperSwizzle;

use crate::error::{OpsError, Result};

/// Query rows per block of the default two consumer warpgroups (64 rows each); a config's own
/// count is [`AttnConfig::block_rows`] (`64 · consumers`).
///
/// ```
/// use tilekit_ops::attention_sm90::{AttnConfig, BM};
/// assert_eq!(AttnConfig::new(tilekit_ir::ScalarType::BF16, 64, false).block_rows(), BM);
/// ```
pub const BM: i64 = 128;
/// Columns of one swizzle slab (128 bytes of 16-bit elements).
const SLAB: i64 = 64;

/// The shape of a [`build_attention_sm90`] kernel.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::attention_sm90::AttnConfig;
/// let c = AttnConfig::new(ScalarType::BF16, 128, true);
/// assert_eq!((c.bn, c.stages), (64, 2));
/// assert_eq!(c.shared_bytes(), (128 * 128 + 2 * 2 * 64 * 128) * 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AttnConfig {
    /// Element type of Q, K, V and O (F16 or BF16).
    pub dtype: ScalarType,
    /// Head dim d: 64, 128 or 256.
    pub head_dim: i64,
    /// Causal mask (bottom-right aligned).
    pub causal: bool,
    /// Keys per tile (the S GEMM's N): 64 or 128 (64 for d = 256). With d = 128 the pipelined
    /// schedules spill at BN = 128 with the register epilogue (the 232 registers of a consumer
    /// thread, 160 with three consumers; see the module docs); the default is 64.
    pub bn: i64,
    /// Stages of the K/V ring (2..=4, and they must fit 227 KiB).
    pub stages: i64,
    /// Software-pipeline each consumer: issue S(t) and P·V(t−1) together and run the softmax
    /// of tile t while P·V(t−1) is still on the tensor cores (`wgmma.wait_group 1`).
    pub overlap: bool,
    /// Ping-pong the consumer warpgroups (needs `overlap`): one issues its GEMMs while the
    /// others run their softmax, in a round robin ordered by one named barrier per consumer.
    pub pingpong: bool,
    /// Store O through shared memory and TMA: each consumer warpgroup writes its 64 rows of
    /// O / ℓ into its own rows of the Q tile (free once its last S GEMM has completed) and one
    /// of its threads stores them with one TMA store per 64-column slab (rows past `s_q`
    /// clipped by the map). Needs an `om` tensor map over O: its strides multiples of 8
    /// elements and its base 16-byte aligned.
    pub tma_store: bool,
    /// Timeline probe ([`tilekit_kernel::probe`]): the first thread of each warpgroup stamps
    /// `%clock64` around every wait, GEMM issue, softmax and barrier ([`AttnSpan`]) into a
    /// probe buffer (the extra parameters `probe` and `probe_cap`;
    /// [`api::attention_probed`](crate::api::attention_probed) binds them). Off by default:
    /// the kernel is then exactly the unprobed one.
    pub probe: bool,
    /// Consumer warpgroups of 64 query rows each: 2 (the default: 128 rows, 384 threads,
    /// `setmaxnreg` 40 / 232) or 3 (FlashAttention-3's d = 64 shape: 192 rows, 512 threads,
    /// `setmaxnreg` 32 / 160 — the short GEMMs of d = 64 leave the softmax a large share, and a
    /// third warpgroup's softmax hides under two others' GEMMs). 3 is for d = 64 and 128 (the
    /// O accumulator of d = 256 alone would be 128 of a consumer's 160 registers).
    pub consumers: i64,
}

impl AttnConfig {
    /// The default tiles for a head dim: BN = 128 for d = 64, 64 otherwise; 2 stages.
    ///
    /// ```
    /// use tilekit_ops::attention_sm90::AttnConfig;
    /// assert_eq!(AttnConfig::new(tilekit_ir::ScalarType::F16, 256, false).bn, 64);
    /// assert_eq!(AttnConfig::new(tilekit_ir::ScalarType::F16, 64, false).bn, 128);
    /// ```
    pub fn new(dtype: ScalarType, head_dim: i64, causal: bool) -> AttnConfig {
        AttnConfig {
            dtype,
            head_dim,
            causal,
            bn: if head_dim == 64 { 128 } else { 64 },
            stages: 2,
            overlap: false,
            pingpong: false,
            tma_store: false,
            probe: false,
            consumers: 2,
        }
    }

    /// The schedule [`api::attention`](crate::api::attention) runs: the fastest variant per
    /// head dim measured on an H100 (session 11, 2026-11-27, `tilekit bench attention --reps
    /// 10` beside PyTorch SDPA; `bench/RESULTS.md` "Session 11"), all with the TMA-store
    /// epilogue (take [`without_tma_store`](Self::without_tma_store) when O cannot be
    /// described by a tensor map):
    ///
    /// ```text
    ///   d     causal   s_k          variant                 TFLOP/s (H100, 16k tokens)
    ///   64    no       any          plain/bn128/tma/c3      272–475  (3 consumer warpgroups)
    ///   64    yes      ≤ 1024       plain/bn128/tma         169–236  (c3: 5–6% slower here)
    ///   64    yes      > 1024       plain/bn128/tma/c3      316–440
    ///   128   either   any          pingpong/bn128/tma      258–650
    ///   256   no       ≤ 512        plain/bn64/tma          472
    ///   256   no       > 512        pingpong/bn64/tma       568–677
    ///   256   yes      ≤ 2048       plain/bn64/tma          306–491
    ///   256   yes      > 2048       pingpong/bn64/tma       548–604
    /// ```
    ///
    /// A head dim the kernel does not take keeps [`new`](Self::new)'s tiles, so
    /// [`check`](Self::check) names it.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::attention_sm90::AttnConfig;
    /// let c = AttnConfig::recommended(ScalarType::BF16, 64, false, 4096);
    /// assert_eq!((c.bn, c.consumers, c.tma_store, c.pingpong), (128, 3, true, false));
    /// assert_eq!(AttnConfig::recommended(ScalarType::BF16, 64, true, 1024).consumers, 2);
    /// let c = AttnConfig::recommended(ScalarType::F16, 128, true, 77);
    /// assert_eq!((c.bn, c.consumers, c.tma_store, c.pingpong), (128, 2, true, true));
    /// let short = AttnConfig::recommended(ScalarType::BF16, 256, true, 2048);
    /// let long = AttnConfig::recommended(ScalarType::BF16, 256, true, 4096);
    /// assert_eq!((short.pingpong, long.pingpong), (false, true));
    /// assert!(AttnConfig::recommended(ScalarType::BF16, 96, false, 512).check().is_err());
    /// ```
    pub fn recommended(dtype: ScalarType, head_dim: i64, causal: bool, s_k: i64) -> AttnConfig {
        let base = AttnConfig::new(dtype, head_dim, causal);
        let tma = AttnConfig { tma_store: true, ..base };
        let pingpong = AttnConfig { overlap: true, pingpong: true, ..tma };
        match head_dim {
            64 if causal && s_k <= 1024 => AttnConfig { bn: 128, ..tma },
            64 => AttnConfig { bn: 128, consumers: 3, ..tma },
            128 => AttnConfig { bn: 128, ..pingpong },
            256 if s_k <= if causal { 2048 } else { 512 } => tma,
            256 => pingpong,
            _ => base,
        }
    }

    /// The same schedule with the register epilogue (O stored from registers, any strides and
    /// alignment), or the nearest one that assembles without spills where the pipelined
    /// schedules need the TMA store's registers (d = 128 at BN = 128: `plain`).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::attention_sm90::AttnConfig;
    /// let c = AttnConfig::recommended(ScalarType::BF16, 128, false, 4096).without_tma_store();
    /// assert_eq!((c.bn, c.tma_store, c.overlap, c.pingpong), (128, false, false, false));
    /// let c = AttnConfig::recommended(ScalarType::BF16, 64, false, 4096).without_tma_store();
    /// assert_eq!((c.bn, c.consumers, c.tma_store), (128, 3, false));
    /// ```
    pub fn without_tma_store(self) -> AttnConfig {
        let c = AttnConfig { tma_store: false, ..self };
        if c.head_dim == 128 && c.bn == 128 && c.overlap {
            AttnConfig { overlap: false, pingpong: false, ..c }
        } else {
            c
        }
    }

    /// Query rows per block: 64 per consumer warpgroup (128, or 192 with 3 consumers).
    ///
    /// ```
    /// use tilekit_ops::attention_sm90::AttnConfig;
    /// let c = AttnConfig::new(tilekit_ir::ScalarType::BF16, 64, false);
    /// assert_eq!((c.block_rows(), AttnConfig { consumers: 3, ..c }.block_rows()), (128, 192));
    /// ```
    pub fn block_rows(&self) -> i64 {
        64 * self.consumers
    }

    /// Threads per block: the producer warpgroup and the consumers, 128 each.
    ///
    /// ```
    /// use tilekit_ops::attention_sm90::AttnConfig;
    /// let c = AttnConfig::new(tilekit_ir::ScalarType::BF16, 64, false);
    /// assert_eq!((c.threads(), AttnConfig { consumers: 3, ..c }.threads()), (384, 512));
    /// ```
    pub fn threads(&self) -> i64 {
        128 * (self.consumers + 1)
    }

    /// The `setmaxnreg` counts (producer, consumer): 40 / 232 with 2 consumers, 32 / 160 with
    /// 3 (FlashAttention-3's): the warpgroups' counts add up to at most the 64 Ki registers of
    /// the file (`128 · (producer + consumers · consumer) ≤ 65536`).
    ///
    /// ```
    /// use tilekit_ops::attention_sm90::AttnConfig;
    /// let c = AttnConfig::new(tilekit_ir::ScalarType::BF16, 64, false);
    /// assert_eq!(c.registers(), (40, 232));
    /// let (p, q) = AttnConfig { consumers: 3, ..c }.registers();
    /// assert_eq!((p, q), (32, 160));
    /// assert!(128 * (p + 3 * q) <= 65536);
    /// ```
    pub fn registers(&self) -> (u32, u32) {
        if self.consumers == 3 {
            (32, 160)
        } else {
            (40, 232)
        }
    }

    /// Bytes of the Q tile ([`block_rows`](Self::block_rows) × d) and the K/V ring.
    ///
    /// ```
    /// use tilekit_ops::attention_sm90::AttnConfig;
    /// let c = AttnConfig::new(tilekit_ir::ScalarType::F16, 64, false);
    /// assert_eq!(c.shared_bytes(), 80 * 1024);
    /// assert_eq!(AttnConfig { consumers: 3, ..c }.shared_bytes(), 88 * 1024);
    /// ```
    pub fn shared_bytes(&self) -> i64 {
        (self.block_rows() + 2 * self.stages * self.bn)
            * self.head_dim
            * self.dtype.size_bytes() as i64
    }

    /// Types, head dim, tile and stages; a named error otherwise.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::attention_sm90::AttnConfig;
    /// let e = AttnConfig::new(ScalarType::BF16, 96, false).check().unwrap_err();
    /// assert!(e.to_string().contains("96"), "{e}");
    /// assert!(e.to_string().contains("64, 128 or 256"), "{e}");
    /// assert!(AttnConfig::new(ScalarType::F32, 64, false).check().is_err());
    /// assert!(AttnConfig { stages: 4, bn: 128, ..AttnConfig::new(ScalarType::BF16, 128, false) }.check().is_err());
    /// let e = AttnConfig { consumers: 3, ..AttnConfig::new(ScalarType::BF16, 256, false) }.check();
    /// assert!(e.unwrap_err().to_string().contains("d = 64 or 128"));
    /// ```
    pub fn check(&self) -> Result<()> {
        let op = "attention_sm90";
        if ![2, 3].contains(&self.consumers) {
            return Err(OpsError::invalid(op, "consumers", self.consumers, "2 or 3"));
        }
        if !matches!(self.dtype, ScalarType::F16 | ScalarType::BF16) {
            return Err(OpsError::invalid(op, "dtype", self.dtype, "f16 or bf16"));
        }
        if ![64, 128, 256].contains(&self.head_dim) {
            return Err(OpsError::invalid(op, "head dim", self.head_dim, "64, 128 or 256"));
        }
        let bns: &[i64] = if self.head_dim > 128 { &[64] } else { &[64, 128] };
        if !bns.contains(&self.bn) {
            let valid = if self.head_dim > 128 { "64 (d = 256)" } else { "64 or 128" };
            return Err(OpsError::invalid(op, "bn", self.bn, valid));
        }
        if self.consumers == 3 && self.head_dim > 128 {
            return Err(OpsError::invalid(
                op,
                "consumers",
                format!("3 with head dim {}", self.head_dim),
                "2, or 3 with d = 64 or 128 (160 registers a consumer thread: d = 256's O alone takes 128)",
            ));
        }
        if !(2..=4).contains(&self.stages) || self.shared_bytes() > 227 * 1024 {
            return Err(OpsError::invalid(
                op,
                "stages",
                self.stages,
                format!(
                    "2..=4 whose tiles fit 227 KiB with the {} KiB Q tile ({} KiB a stage)",
                    self.block_rows() * self.head_dim * 2 / 1024,
                    2 * self.bn * self.head_dim * 2 / 1024
                ),
            ));
        }
        if self.pingpong && !self.overlap {
            return Err(OpsError::invalid(op, "pingpong", true, "only with overlap = true"));
        }
        Ok(())
    }
}

/// The lengths of one attention problem: Q `(batch, s_q, heads, head_dim)`, K and V
/// `(batch, s_k, kv_heads, head_dim)`.
///
/// ```
/// use tilekit_ops::attention_sm90::AttnDims;
/// let d = AttnDims::from_shape(&[2, 77, 300, 8, 2, 128]).unwrap();
/// assert_eq!((d.s_q, d.s_k, d.kv_heads), (77, 300, 2));
/// assert!(AttnDims::from_shape(&[2, 77, 300]).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnDims {
    /// Batch.
    pub batch: i64,
    /// Query length.
    pub s_q: i64,
    /// Key / value length.
    pub s_k: i64,
    /// Query heads.
    pub heads: i64,
    /// Key / value heads (a divisor of `heads`).
    pub kv_heads: i64,
    /// Head dim.
    pub head_dim: i64,
}

impl AttnDims {
    /// From `[B, S_Q, S_K, H, H_KV, D]` (the shape `tilekit run attention` takes), every
    /// length at least 1 and `H_KV` dividing `H`.
    ///
    /// ```
    /// use tilekit_ops::attention_sm90::AttnDims;
    /// let e = AttnDims::from_shape(&[1, 4, 4, 3, 2, 64]).unwrap_err();
    /// assert!(e.to_string().contains("H_KV = 2"), "{e}");
    /// ```
    pub fn from_shape(shape: &[i64]) -> Result<AttnDims> {
        let [batch, s_q, s_k, heads, kv_heads, head_dim] = <[i64; 6]>::try_from(shape)
            .ok()
            .filter(|s| s.iter().all(|&v| v >= 1))
            .ok_or_else(|| {
                OpsError::invalid(
                    "attention",
                    "shape",
                    format!("{shape:?}"),
                    "[B, S_Q, S_K, H, H_KV, D], every length at least 1",
                )
            })?;
        if heads % kv_heads != 0 {
            return Err(OpsError::invalid(
                "attention",
                "H_KV",
                kv_heads,
                format!("a divisor of the {heads} query heads"),
            ));
        }
        Ok(AttnDims { batch, s_q, s_k, heads, kv_heads, head_dim })
    }
}

/// The f64 reference of attention on contiguous Q, K, V ([`AttnDims`]' shapes), the scale
/// `1/√d`: (O row-major `(b, s_q, h, d)`, LSE `(b, h, s_q)`). Query `i` of head `hq` sees keys
/// `j < s_k` (causal: `j ≤ i + s_k − s_q`) of K/V head `hq / (h / h_kv)`; a row that sees
/// none gets O = 0 and LSE = −∞.
///
/// ```
/// use tilekit_ir::interp::HostBuffer;
/// use tilekit_ops::attention_sm90::{reference, AttnDims};
/// // one query, two keys with equal scores: O = the mean of the two value rows
/// let dims = AttnDims::from_shape(&[1, 1, 2, 1, 1, 64]).unwrap();
/// let q = HostBuffer::from_f64(&vec![0.5; 64]);
/// let k = HostBuffer::from_f64(&vec![1.0; 128]);
/// let v = HostBuffer::from_f64(&(0..128).map(|i| if i < 64 { 1.0 } else { 3.0 }).collect::<Vec<_>>());
/// let (o, lse) = reference(&q, &k, &v, dims, false).unwrap();
/// assert!(o.iter().all(|&x| (x - 2.0).abs() < 1e-12));
/// assert!((lse[0] - (4.0 + 2f64.ln())).abs() < 1e-12); // score 0.5·64/8 = 4, twice
/// ```
pub fn reference(
    q: &tilekit_ir::interp::HostBuffer,
    k: &tilekit_ir::interp::HostBuffer,
    v: &tilekit_ir::interp::HostBuffer,
    dims: AttnDims,
    causal: bool,
) -> Result<(Vec<f64>, Vec<f64>)> {
    use rayon::prelude::*;
    let AttnDims { batch, s_q, s_k, heads, kv_heads, head_dim: d } = dims;
    let (nq, nkv) = ((batch * s_q * heads * d) as usize, (batch * s_k * kv_heads * d) as usize);
    for (what, buf, n) in [("q", q, nq), ("k", k, nkv), ("v", v, nkv)] {
        if buf.len() != n {
            return Err(OpsError::invalid(
                "attention reference",
                format!("{what} elements"),
                buf.len(),
                format!("{n} for {dims:?}"),
            ));
        }
    }
    let val = |b: &tilekit_ir::interp::HostBuffer, i: i64| crate::host::value(b, i as usize);
    let scale = 1.0 / (d as f64).sqrt();
    let group = heads / kv_heads;
    // one (batch, query row, head) per task: its O row and LSE
    let rows: Vec<(Vec<f64>, f64)> = (0..batch * s_q * heads)
        .into_par_iter()
        .map(|r| {
            let (bi, i, hq) = (r / (s_q * heads), (r / heads) % s_q, r % heads);
            let hk = hq / group;
            let last = if causal { (i + s_k - s_q).min(s_k - 1) } else { s_k - 1 };
            if last < 0 {
                return (vec![0.0; d as usize], f64::NEG_INFINITY);
            }
            let qo = ((bi * s_q + i) * heads + hq) * d;
            let kv = |j: i64| ((bi * s_k + j) * kv_heads + hk) * d;
            let scores: Vec<f64> = (0..=last)
                .map(|j| (0..d).map(|c| val(q, qo + c) * val(k, kv(j) + c)).sum::<f64>() * scale)
                .collect();
            let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let p: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
            let l: f64 = p.iter().sum();
            let o = (0..d)
                .map(|c| {
                    p.iter().enumerate().map(|(j, pj)| pj * val(v, kv(j as i64) + c)).sum::<f64>()
                        / l
                })
                .collect();
            (o, m + l.ln())
        })
        .collect();
    let mut o = Vec::with_capacity(nq);
    let mut lse = vec![0.0; (batch * heads * s_q) as usize];
    for (r, (row, l)) in rows.into_iter().enumerate() {
        let r = r as i64;
        let (bi, i, hq) = (r / (s_q * heads), (r / heads) % s_q, r % heads);
        o.extend(row);
        lse[((bi * heads + hq) * s_q + i) as usize] = l;
    }
    Ok((o, lse))
}

/// The tolerance of O against [`reference()`] for inputs in `[-2, 2)` (`tilekit run`'s): P and
/// O are rounded to the input type, so about two of its half-ulps of a value ≤ 2 — `1/32`
/// for bf16 (8 significant bits), `1/256` for f16 (11), in
/// [`host::compare`](crate::host::compare)'s units (absolute below 1, relative above).
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::attention_sm90::tolerance(ScalarType::BF16), 1.0 / 32.0);
/// ```
pub fn tolerance(ty: ScalarType) -> f64 {
    if ty == ScalarType::BF16 {
        1.0 / 32.0
    } else {
        1.0 / 256.0
    }
}

/// The configurations worth timing for one (type, head dim, mask): each schedule (`plain`,
/// `overlap`, `pingpong` = overlap + ping-pong) at each key tile BN, with the register epilogue
/// (`"{schedule}/bn{BN}"`) and with the TMA-store one ([`AttnConfig::tma_store`],
/// `"{schedule}/bn{BN}/tma"`), where the kernel assembles without spilling (ptxas 13.0,
/// sm_90a; the table in the [module docs](self)). So d = 128 pipelines BN = 128 only with the
/// TMA store; d = 256 (BN 64, its only tile) spills with the register epilogue in every
/// schedule, listed as the baseline, and its pipelined TMA-store ones reload a value or a few
/// per tile (4 bytes, causal 56). Then, for d = 64 and 128, the TMA-store ones with a third
/// K/V stage (`…/tma/s3`), and the three-consumer ones ([`AttnConfig::consumers`] = 3, 192
/// query rows a block: `…/c3`) that assemble without spills. `tilekit bench attention` times
/// these, and a test asserts that they assemble without spills (but for d = 256). A head dim
/// other than 64, 128 or 256 is an error naming it.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::attention_sm90::variants;
/// let v = variants(ScalarType::BF16, 128, true).unwrap();
/// let names: Vec<&str> = v.iter().map(|(n, _)| n.as_str()).collect();
/// assert_eq!(names[..4], ["plain/bn64", "plain/bn64/tma", "plain/bn128", "plain/bn128/tma"]);
/// assert_eq!(names[4..7], ["overlap/bn64", "overlap/bn64/tma", "overlap/bn128/tma"]);
/// assert_eq!(names[7..10], ["pingpong/bn64", "pingpong/bn64/tma", "pingpong/bn128/tma"]);
/// assert_eq!(names[10..12], ["plain/bn64/tma/s3", "plain/bn128/tma/s3"]);
/// assert_eq!(names[16..], ["plain/bn64/tma/c3", "plain/bn64/tma/s3/c3"]);
/// let (_, pp) = v[8];
/// assert!(pp.pingpong && pp.overlap && pp.causal && pp.bn == 64 && pp.tma_store);
/// assert_eq!((v[15].1.stages, v[15].1.consumers), (3, 2));
/// assert_eq!((v[17].1.stages, v[17].1.consumers, v[17].1.block_rows()), (3, 3, 192));
/// let d64 = variants(ScalarType::BF16, 64, false).unwrap();
/// assert_eq!(d64.len(), 12 + 6 + 12);
/// assert!(d64.iter().any(|(n, c)| n == "pingpong/bn64/tma/c3" && c.pingpong && c.consumers == 3));
/// assert_eq!(variants(ScalarType::F16, 256, false).unwrap().len(), 6);
/// assert!(variants(ScalarType::F16, 96, false).unwrap_err().to_string().contains("96"));
/// ```
pub fn variants(
    dtype: ScalarType,
    head_dim: i64,
    causal: bool,
) -> Result<Vec<(String, AttnConfig)>> {
    let base = AttnConfig::new(dtype, head_dim, causal);
    base.check()?;
    // what spills (the module docs' table): d = 128 pipelined at BN = 128
    // with the register epilogue; d = 256 with the register epilogue (kept: the baseline)
    let fits = |bn: i64, overlap: bool, tma: bool| match head_dim {
        128 => !overlap || bn == 64 || tma,
        _ => true,
    };
    let schedules = [("plain", false, false), ("overlap", true, false), ("pingpong", true, true)];
    let mut out = vec![];
    for (name, overlap, pingpong) in schedules {
        for bn in [64, 128] {
            for tma_store in [false, true] {
                let cfg = AttnConfig { bn, overlap, pingpong, tma_store, ..base };
                if cfg.check().is_ok() && fits(bn, overlap, tma_store) {
                    let tail = if tma_store { "/tma" } else { "" };
                    out.push((format!("{name}/bn{bn}{tail}"), cfg));
                }
            }
        }
    }
    // a third K/V stage for the TMA-store variants of d = 64 and 128 (a probe of d = 128 with
    // 2 stages had the producer waiting for a free V stage half its time): all fit 227 KiB
    // (d = 128, BN = 128: 32 + 3 · 64 = 224 KiB) and assemble without spills (the stage count
    // changes addresses only); d = 256's third stage would not fit (32 KiB a stage plus 64 KiB
    // of Q: 160 KiB at BN = 64 fits, but its register epilogue spills and its TMA-store ones
    // reload a value per tile already, not worth a column)
    if head_dim <= 128 {
        for (name, overlap, pingpong) in schedules {
            for bn in [64, 128] {
                let cfg = AttnConfig { bn, overlap, pingpong, tma_store: true, stages: 3, ..base };
                if cfg.check().is_ok() {
                    out.push((format!("{name}/bn{bn}/tma/s3"), cfg));
                }
            }
        }
    }
    // three consumer warpgroups (192 query rows, 160 registers a consumer thread), where
    // ptxas 13.0 assembles them without spills, causal or not: d = 64 every schedule at
    // BN = 64 and `plain` at BN = 128 (the pipelined BN = 128 ones spill 184–256 bytes: S, P(t)
    // and P(t−1) of 128 keys), both epilogues, and a third stage with the TMA store; d = 128
    // only `plain/bn64` with the TMA store (its register epilogue spills 128 bytes causal, the
    // pipelined BN = 64 ones 4 bytes with the TMA store and 140–152 without, BN = 128 more)
    let c3 = |bn: i64, overlap: bool, tma: bool| match head_dim {
        64 => bn == 64 || !overlap,
        128 => bn == 64 && !overlap && tma,
        _ => false,
    };
    for (name, overlap, pingpong) in schedules {
        for bn in [64, 128] {
            for (tma_store, stages) in [(false, 2), (true, 2), (true, 3)] {
                let cfg =
                    AttnConfig { bn, overlap, pingpong, tma_store, stages, consumers: 3, ..base };
                if cfg.check().is_ok() && c3(bn, overlap, tma_store) {
                    let tail = ["", "/tma", "/tma/s3"][tma_store as usize + (stages == 3) as usize];
                    out.push((format!("{name}/bn{bn}{tail}/c3"), cfg));
                }
            }
        }
    }
    Ok(out)
}

/// `log2(e)`, to fold the softmax scale into `exp2`.
pub const LOG2_E: f64 = std::f64::consts::LOG2_E;

/// The spans a probed kernel ([`AttnConfig::probe`]) marks, each a begin and an end event of
/// one warpgroup ([`Probe::begin`] / [`Probe::end`] with `kind = span as u32`). Producer
/// (warpgroup 0): `QLoad`, then per tile `KEmptyWait`, `KLoad`, `VEmptyWait`, `VLoad`.
/// Consumers (warpgroups 1 and up): `QFullWait`; per tile `KFullWait`, `SIssue` (fence, wgmmas,
/// commit), `SWait` (the `wgmma.wait_group` that retires S), `Softmax` (mask, max, exp2,
/// sums, P packed), `VFullWait`, `PvIssue`, `PvWait`, and with ping-pong `TurnSync` /
/// `TurnArrive` (the named barriers); `Epilogue` (with `StoreSync`, the TMA store's
/// barrier, inside it).
///
/// ```
/// use tilekit_ops::attention_sm90::AttnSpan;
/// assert_eq!(AttnSpan::from_kind(5), Some(AttnSpan::KFullWait));
/// assert_eq!(AttnSpan::KFullWait.name(), "k_full_wait");
/// assert!(AttnSpan::KFullWait.is_wait() && !AttnSpan::Softmax.is_wait());
/// assert_eq!(AttnSpan::ALL.len(), 17);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum AttnSpan {
    /// Producer: waiting for consumers to free a K stage (`k_empty`).
    KEmptyWait = 0,
    /// Producer: `arrive.expect_tx` and the TMA loads of a K tile.
    KLoad = 1,
    /// Producer: waiting for a free V stage (`v_empty`).
    VEmptyWait = 2,
    /// Producer: the TMA loads of a V tile.
    VLoad = 3,
    /// Consumer: waiting for the Q tile (`q_full`).
    QFullWait = 4,
    /// Consumer: waiting for a K tile (`k_full`).
    KFullWait = 5,
    /// Consumer: issuing S = Q·Kᵀ (fence, wgmmas, commit).
    SIssue = 6,
    /// Consumer: the `wgmma.wait_group` that retires S.
    SWait = 7,
    /// Consumer: the online softmax of a tile (and P packed).
    Softmax = 8,
    /// Consumer: waiting for a V tile (`v_full`).
    VFullWait = 9,
    /// Consumer: issuing O += P·V.
    PvIssue = 10,
    /// Consumer: the `wgmma.wait_group` that retires a P·V.
    PvWait = 11,
    /// Consumer (ping-pong): `bar.sync` for its turn on the tensor cores.
    TurnSync = 12,
    /// Consumer (ping-pong): `bar.arrive` handing the turn over.
    TurnArrive = 13,
    /// Consumer (TMA store): the warpgroup's named barrier before the store.
    StoreSync = 14,
    /// Consumer: O / ℓ, LSE and the stores.
    Epilogue = 15,
    /// Producer: the TMA loads of the Q tile.
    QLoad = 16,
}

impl AttnSpan {
    /// Every span, by kind.
    pub const ALL: [AttnSpan; 17] = [
        AttnSpan::KEmptyWait,
        AttnSpan::KLoad,
        AttnSpan::VEmptyWait,
        AttnSpan::VLoad,
        AttnSpan::QFullWait,
        AttnSpan::KFullWait,
        AttnSpan::SIssue,
        AttnSpan::SWait,
        AttnSpan::Softmax,
        AttnSpan::VFullWait,
        AttnSpan::PvIssue,
        AttnSpan::PvWait,
        AttnSpan::TurnSync,
        AttnSpan::TurnArrive,
        AttnSpan::StoreSync,
        AttnSpan::Epilogue,
        AttnSpan::QLoad,
    ];

    /// The span of a probe kind (`event / 2`), if it is one.
    ///
    /// ```
    /// assert!(tilekit_ops::attention_sm90::AttnSpan::from_kind(17).is_none());
    /// ```
    pub fn from_kind(kind: u32) -> Option<AttnSpan> {
        AttnSpan::ALL.get(kind as usize).copied()
    }

    /// snake_case name (the CSV/JSON and summary label).
    ///
    /// ```
    /// assert_eq!(tilekit_ops::attention_sm90::AttnSpan::PvWait.name(), "pv_wait");
    /// ```
    pub fn name(self) -> &'static str {
        [
            "k_empty_wait",
            "k_load",
            "v_empty_wait",
            "v_load",
            "q_full_wait",
            "k_full_wait",
            "s_issue",
            "s_wait",
            "softmax",
            "v_full_wait",
            "pv_issue",
            "pv_wait",
            "turn_sync",
            "turn_arrive",
            "store_sync",
            "epilogue",
            "q_load",
        ][self as usize]
    }

    /// Whether the span is a wait (an mbarrier, a named barrier or a `wgmma.wait_group`).
    ///
    /// ```
    /// assert!(tilekit_ops::attention_sm90::AttnSpan::TurnSync.is_wait());
    /// ```
    pub fn is_wait(self) -> bool {
        use AttnSpan::*;
        matches!(
            self,
            KEmptyWait
                | VEmptyWait
                | QFullWait
                | KFullWait
                | SWait
                | VFullWait
                | PvWait
                | TurnSync
                | StoreSync
        )
    }
}

/// Marks the begin (`end = false`) or end of `span` when the kernel is probed.
fn mark(
    p: Option<&Probe>,
    b: &KernelBuilder,
    span: AttnSpan,
    end: bool,
) -> std::result::Result<(), IrError> {
    match (p, end) {
        (Some(p), false) => p.begin(b, span as u32),
        (Some(p), true) => p.end(b, span as u32),
        (None, _) => Ok(()),
    }
}

/// The attention forward kernel (see the [module docs](self)). Params, in order: `q`, `k`, `v`
/// (pointers), `qm`, `km`, `vm` (their tensor maps over the 4-D tensors, innermost first
/// `[d, heads, s, b]`: boxes `[64, 1, BM, 1]` for Q — BM = [`AttnConfig::block_rows`], 128 or
/// 192 — and `[64, 1, BN, 1]` for K and V, 128-byte swizzle, zero fill), `o` (a 4-D tensor
/// `(b, s_q, h, d)` of the input type), `om` with the TMA store (a map over O, boxes
/// `[64, 1, 64, 1]`), `lse` (a 3-D f32 tensor `(b, h, s_q)`), `s_k` (i32: keys), `group`
/// (i32: `h / h_kv`), `scale_log2` (f32: the softmax scale times log2 e). Launch on
/// `(⌈s_q / BM⌉, h, b)` blocks of [`AttnConfig::threads`].
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::attention_sm90::{build_attention_sm90, AttnConfig};
/// let k = build_attention_sm90(AttnConfig::new(ScalarType::BF16, 64, true)).unwrap();
/// assert_eq!(k.block_dim, [384, 1, 1]);
/// let c3 = AttnConfig { consumers: 3, ..AttnConfig::new(ScalarType::BF16, 64, true) };
/// assert_eq!(build_attention_sm90(c3).unwrap().block_dim, [512, 1, 1]);
/// assert!(k.to_string().contains("wgmma.mma_async.m64n64k16.f32.bf16.bf16"));
/// ```
pub fn build_attention_sm90(cfg: AttnConfig) -> Result<Kernel> {
    cfg.check()?;
    let (elem, d, bn, stages) = (cfg.dtype, cfg.head_dim, cfg.bn, cfg.stages);
    // the block's query rows: 64 per consumer warpgroup
    let (nc, bm) = (cfg.consumers, cfg.block_rows());
    let ty = WgmmaType::of(elem).expect("checked: f16 or bf16");
    let eb = elem.size_bytes() as i64;
    let slabs = d / SLAB;
    let name = format!(
        "attention_sm90_d{d}{}{}",
        if cfg.causal { "_causal" } else { "" },
        if nc == 2 { String::new() } else { format!("_c{nc}") }
    );
    let b = KernelBuilder::new(&name, [cfg.threads() as u32, 1, 1])?;
    let gq = b.ptr_param("q", elem)?;
    let gk = b.ptr_param("k", elem)?;
    let gv = b.ptr_param("v", elem)?;
    // the tiles: TMA box images (64-column slabs, 128-byte swizzle), from which the maps'
    // swizzle and the wgmma descriptors are derived
    let q_slab = HopperSwizzle::B128.descriptor(bm, SLAB, eb)?;
    let kv_slab = HopperSwizzle::B128.descriptor(bn, SLAB, eb)?;
    let spec = |rows: i64, slab| {
        TensorMapSpec::from_layout(elem, &[SLAB as u32, 1, rows as u32, 1], slab, OobFill::Zero)
    };
    let qm = b.tensor_map_param("qm", gq, spec(bm, &q_slab)?)?;
    let km = b.tensor_map_param("km", gk, spec(bn, &kv_slab)?)?;
    let vm = b.tensor_map_param("vm", gv, spec(bn, &kv_slab)?)?;
    let o = b.tensor_param("o", elem, 4)?;
    // pairs of columns stored together: unit column stride, even other strides (binding checks)
    o.descriptor(Some((2, 1)))?;
    // the TMA store of O: one warpgroup's 64 rows of a 64-column slab per box
    let om = if cfg.tma_store {
        let o_slab = HopperSwizzle::B128.descriptor(64, SLAB, eb)?;
        Some(b.tensor_map_param("om", o.mem, spec(64, &o_slab)?)?)
    } else {
        None
    };
    let lse = b.tensor_param("lse", ScalarType::F32, 3)?;
    let s_k = b.scalar_param("s_k", ScalarType::I32)?;
    let group = b.scalar_param("group", ScalarType::I32)?;
    let scale_log2 = b.scalar_param("scale_log2", ScalarType::F32)?;
    let s_q = o.lengths[1].clone();
    let kv_layout = HopperSwizzle::B128.descriptor_atoms(bn, d, eb)?;
    let ir = |e: tilekit_ir::wgmma::WgmmaError| IrError::from(e);
    // Q and K K-major one slab at a time (64 rows of a Q slab: a warpgroup's A)
    let mq =
        SmemMatrix::from_layout(&HopperSwizzle::B128.descriptor(64, SLAB, eb)?, Major::K, elem)
            .map_err(ir)?;
    let mk =
        SmemMatrix::from_layout(&HopperSwizzle::B128.descriptor(bn, SLAB, eb)?, Major::K, elem)
            .map_err(ir)?;
    // V (keys × d, d contiguous) is P·V's B MN-major, all d columns in one wgmma
    let mv = SmemMatrix::from_layout(&kv_layout, Major::MN, elem).map_err(ir)?;
    let (q_elems, kv_elems) = (bm * d, bn * d);
    let sq = b.shared("q_tile", elem, q_elems as usize)?;
    let sk = b.shared("k_ring", elem, (stages * kv_elems) as usize)?;
    let sv = b.shared("v_ring", elem, (stages * kv_elems) as usize)?;
    let q_full = b.mbarrier("q_full", 1)?;
    let k_full = b.mbarrier("k_full", stages as usize)?;
    let v_full = b.mbarrier("v_full", stages as usize)?;
    // a stage's K and V are released separately (the pipelined consumers are done with K(t)
    // a tile before V(t))
    let k_empty = b.mbarrier("k_empty", stages as usize)?;
    let v_empty = b.mbarrier("v_empty", stages as usize)?;
    let (k_ring, v_ring) = (
        Ring::from_barriers(stages, k_full, k_empty),
        Ring::from_barriers(stages, v_full, v_empty),
    );
    // the timeline probe's parameters come last (`probe`, `probe_cap`), and so do its shared
    // counters: the probed kernel's tiles and barriers lie where the unprobed kernel's do (the
    // counters zeroed here, where every thread runs)
    let probe = if cfg.probe { Some(Probe::new(&b, Clock::Sm)?) } else { None };
    let pr = probe.as_ref();
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
    b.note(format!("attention_sm90: the barriers (full: the producer's TMA bytes; empty: {} consumer arrivals, K and V apart)", 128 * nc));
    b.if_then(&first, |b| {
        b.mbarrier_init(q_full, &lit(0), &lit(1))?;
        for s in 0..stages {
            b.mbarrier_init(k_full, &lit(s), &lit(1))?;
            b.mbarrier_init(v_full, &lit(s), &lit(1))?;
            b.mbarrier_init(k_empty, &lit(s), &lit(128 * nc))?;
            b.mbarrier_init(v_empty, &lit(s), &lit(128 * nc))?;
        }
        b.fence_mbarrier_init();
        Ok(())
    })?;
    b.barrier();
    // causal: the longest blocks first — block x takes query block (grid x − 1 − x), so each
    // (batch, head)'s blocks start with the one that needs every key tile up to the diagonal
    // and the grid's last wave is made of the shortest ones (the tail is a short block's time,
    // not a long one's); without a mask every block has the same work and keeps x
    let m_block = if cfg.causal {
        b.grid_dim(Axis::X) - lit(1) - b.block_id(Axis::X)
    } else {
        b.block_id(Axis::X)
    };
    let m0 = m_block * lit(bm);
    let head = b.block_id(Axis::Y);
    let batch = b.block_id(Axis::Z);
    let kv_head = head.clone() / group;
    // the key tiles this block needs: all of them, or (causal) up to its last row's diagonal
    let diag = s_k.clone() - s_q.clone();
    let all_tiles = (s_k.clone() + lit(bn - 1)) / lit(bn);
    let tiles = if cfg.causal {
        let last = b.binary(BinOp::Max, &(m0.clone() + lit(bm) + diag.clone()), &lit(0))?;
        b.binary(BinOp::Min, &((last + lit(bn - 1)) / lit(bn)), &all_tiles)?
    } else {
        all_tiles
    };
    let wg = b.warpgroup_id();
    let producer = b.cmp(CmpOp::Eq, &wg, &lit(0))?;
    let i32v = |b: &KernelBuilder, v: &Val| b.cvt(v, ScalarType::I32);
    b.if_then_else(
        &producer,
        |b| {
            b.setmaxnreg(false, cfg.registers().0)?;
            b.if_then(&first, |b| {
                b.note("attention_sm90 producer: Q once, then K and V tiles into the ring");
                let (hi, bi, kvi) = (i32v(b, &head)?, i32v(b, &batch)?, i32v(b, &kv_head)?);
                let mi = i32v(b, &m0)?;
                mark(pr, b, AttnSpan::QLoad, false)?;
                b.mbarrier_arrive(q_full, &lit(0), Some(&lit(q_elems * eb)))?;
                for a in 0..slabs {
                    let coords =
                        [b.i32(a as i32 * SLAB as i32), hi.clone(), mi.clone(), bi.clone()];
                    b.tensor_load(sq, &lit(a * bm * SLAB), qm, &coords, q_full, &lit(0))?;
                }
                mark(pr, b, AttnSpan::QLoad, true)?;
                b.for_range(&lit(0), &tiles, &lit(1), &[], |b, t, _| {
                    let pos = PipelineState::at_masked(b, &t, stages)?;
                    let (s, parity) = (pos.stage.clone(), pos.empty_parity_xor(b)?);
                    let n0 = i32v(b, &(t.clone() * lit(bn)))?;
                    for (ring, mem, map, (wait, load)) in [
                        (k_ring, sk, km, (AttnSpan::KEmptyWait, AttnSpan::KLoad)),
                        (v_ring, sv, vm, (AttnSpan::VEmptyWait, AttnSpan::VLoad)),
                    ] {
                        mark(pr, b, wait, false)?;
                        ring.wait_empty(b, &s, &parity)?;
                        mark(pr, b, wait, true)?;
                        mark(pr, b, load, false)?;
                        ring.expect_bytes(b, &s, kv_elems * eb)?;
                        for a in 0..slabs {
                            let coords = [
                                b.i32(a as i32 * SLAB as i32),
                                kvi.clone(),
                                n0.clone(),
                                bi.clone(),
                            ];
                            let at = s.clone() * lit(kv_elems) + lit(a * bn * SLAB);
                            b.tensor_load(mem, &at, map, &coords, ring.full(), &s)?;
                        }
                        mark(pr, b, load, true)?;
                    }
                    Ok(vec![])
                })?;
                Ok(())
            })?;
            Ok(vec![])
        },
        |b| {
            b.setmaxnreg(true, cfg.registers().1)?;
            consumer(
                b,
                &cfg,
                ty,
                Consumer {
                    sq,
                    sk,
                    sv,
                    q_full,
                    k_ring,
                    v_ring,
                    mq: &mq,
                    mk: &mk,
                    mv: &mv,
                    tid: &tid,
                    wg: &wg,
                    m0: &m0,
                    head: &head,
                    batch: &batch,
                    tiles: &tiles,
                    s_k: &s_k,
                    s_q: &s_q,
                    diag: &diag,
                    scale_log2: &scale_log2,
                    o: &o,
                    om,
                    lse: &lse,
                    probe: pr,
                },
            )?;
            Ok(vec![])
        },
    )?;
    Ok(b.finish()?)
}

/// `vals[0] op vals[1] op …` as a balanced tree: neighbours paired level by level, so the
/// dependent chain is ⌈log2 n⌉ deep, not n − 1 (for `Max` the same value as a chain; for `Add`
/// the same up to f32 rounding).
fn tree(b: &KernelBuilder, op: BinOp, mut vals: Vec<Val>) -> std::result::Result<Val, IrError> {
    while vals.len() > 1 {
        let mut next = Vec::with_capacity(vals.len().div_ceil(2));
        for pair in vals.chunks(2) {
            next.push(match pair {
                [x, y] => b.binary(op, x, y)?,
                [x] => x.clone(),
                _ => unreachable!("chunks of two"),
            });
        }
        vals = next;
    }
    Ok(vals.pop().expect("a tree of at least one value"))
}

/// One tile's softmax: P in f32 (the S fragment's order; [`pack`] rounds it to the input type
/// for wgmma), α per row, (m0, m1, ℓ0, ℓ1).
struct Soft {
    p: Vec<Val>,
    alpha: Vec<Val>,
    ml: Vec<Val>,
}

struct Consumer<'a> {
    sq: tilekit_ir::MemRef,
    sk: tilekit_ir::MemRef,
    sv: tilekit_ir::MemRef,
    q_full: tilekit_ir::MemRef,
    k_ring: Ring,
    v_ring: Ring,
    mq: &'a SmemMatrix,
    mk: &'a SmemMatrix,
    mv: &'a SmemMatrix,
    tid: &'a Val,
    wg: &'a Val,
    m0: &'a Val,
    head: &'a Val,
    batch: &'a Val,
    tiles: &'a Val,
    s_k: &'a Val,
    s_q: &'a Val,
    diag: &'a Val,
    scale_log2: &'a Val,
    o: &'a tilekit_ir::TensorParam,
    om: Option<tilekit_ir::tma::TensorMap>,
    lse: &'a tilekit_ir::TensorParam,
    probe: Option<&'a Probe>,
}

/// The consumer warpgroups (`cfg.consumers` of them): S GEMM, online softmax, P·V GEMM over
/// the ring; the epilogue.
fn consumer(
    b: &KernelBuilder,
    cfg: &AttnConfig,
    ty: WgmmaType,
    c: Consumer<'_>,
) -> std::result::Result<(), IrError> {
    let (elem, d, bn, stages) = (cfg.dtype, cfg.head_dim, cfg.bn, cfg.stages);
    let (nc, bm) = (cfg.consumers, cfg.block_rows());
    let slabs = d / SLAB;
    let kv_elems = bn * d;
    b.note("attention_sm90 consumers: S = Q·Kᵀ, online softmax, O += P·V");
    let half = c.wg.clone() - lit(1);
    let t = c.tid.clone() - lit(128) - half.clone() * lit(128);
    let (warp, lane) = (t.clone() / lit(32), t.clone() % lit(32));
    let quad = lane.clone() % lit(4);
    // the two query rows of this thread (registers with (i/2) mod 2 = r hold row r)
    let rows: Vec<Val> = (0..2)
        .map(|r| {
            c.m0.clone()
                + half.clone() * lit(64)
                + warp.clone() * lit(16)
                + lane.clone() / lit(4)
                + lit(8 * r)
        })
        .collect();
    // a row's keys end at s_k, or (causal) after its diagonal
    let limits: Vec<Val> = rows
        .iter()
        .map(|q| -> std::result::Result<Val, IrError> {
            Ok(if cfg.causal {
                b.binary(BinOp::Min, c.s_k, &(q.clone() + c.diag.clone() + lit(1)))?
            } else {
                c.s_k.clone()
            })
        })
        .collect::<std::result::Result<_, _>>()?;
    let ir = |e: tilekit_ir::wgmma::WgmmaError| IrError::from(e);
    let s_shape = WgmmaShape::new(ty, bn as u32).map_err(ir)?;
    let o_shape =
        WgmmaShape::new(ty, d as u32).and_then(|s| s.transposed(false, true)).map_err(ir)?;
    let neg_inf = b.f32(f32::NEG_INFINITY);
    let zero = b.f32(0.0);
    let sl2 = c.scale_log2.clone();
    let pr = c.probe;
    let span = |b: &KernelBuilder, s: AttnSpan, end: bool| mark(pr, b, s, end);
    span(b, AttnSpan::QFullWait, false)?;
    b.mbarrier_wait(c.q_full, &lit(0), &lit(0))?;
    span(b, AttnSpan::QFullWait, true)?;
    let nacc = o_shape.acc_regs();
    type R<T> = std::result::Result<T, IrError>;
    let stage =
        |kt: &Val| PipelineState::at_masked(b, kt, stages).expect("a tile index and a constant");
    // S = Q·K[kt]ᵀ issued, once K has landed (the caller commits after): the fence after the
    // wait, so that no branch (the wait's loop) separates it from the wgmmas (ptxas would
    // inject a second `warpgroup.arrive`, its info C7519)
    // Q's descriptors are the same every tile (this warpgroup's rows): d ≤ 128 computes them
    // once, before the loop (4 or 8 of them: 1.7 → 1.4 uniform-datapath instructions an S
    // element at d 64, 2.4 → 1.7 at d 128); d = 256's 16 would hold 32 registers through the
    // loop and spill more (4 → 8 bytes pipelined with the TMA store), so it makes them per tile
    let q_desc = |b: &KernelBuilder, a: i64, blk: usize| -> R<Val> {
        let q_at = lit(a * bm * SLAB) + half.clone() * lit(64 * SLAB);
        b.wgmma_desc(c.sq, &q_at, c.mq, blk)
    };
    let q_descs: Vec<Val> = if d <= 128 {
        (0..slabs)
            .flat_map(|a| (0..c.mq.blocks()).map(move |blk| (a, blk)))
            .map(|(a, blk)| q_desc(b, a, blk))
            .collect::<R<_>>()?
    } else {
        vec![]
    };
    let issue_s = |b: &KernelBuilder, kt: &Val| -> R<Vec<Val>> {
        let pos = stage(kt);
        span(b, AttnSpan::KFullWait, false)?;
        c.k_ring.wait_full(b, &pos)?;
        let s = pos.stage;
        span(b, AttnSpan::KFullWait, true)?;
        span(b, AttnSpan::SIssue, false)?;
        b.wgmma_fence()?;
        let k_at = s * lit(kv_elems);
        let mut sc: Vec<Val> = vec![];
        for a in 0..slabs {
            let k_slab = k_at.clone() + lit(a * bn * SLAB);
            for blk in 0..c.mq.blocks() {
                let dq = match q_descs.get(a as usize * c.mq.blocks() + blk) {
                    Some(dq) => dq.clone(),
                    None => q_desc(b, a, blk)?,
                };
                let dk = b.wgmma_desc(c.sk, &k_slab, c.mk, blk)?;
                let acc = if sc.is_empty() { Acc::Zero } else { Acc::Add(&sc) };
                sc = b.wgmma(s_shape, &WgmmaSrc::Smem(dq), &dk, acc)?;
            }
        }
        Ok(sc)
    };
    // O += P·V[kt] issued, once V has landed (P from registers: the S fragment's 16-column
    // slices are wgmma's A fragments; the fence as in `issue_s`)
    let issue_pv = |b: &KernelBuilder, p: &[Val], kt: &Val, o: &[Val]| -> R<Vec<Val>> {
        let pos = stage(kt);
        span(b, AttnSpan::VFullWait, false)?;
        c.v_ring.wait_full(b, &pos)?;
        let s = pos.stage;
        span(b, AttnSpan::VFullWait, true)?;
        span(b, AttnSpan::PvIssue, false)?;
        b.wgmma_fence()?;
        let v_at = s * lit(kv_elems);
        let mut o = o.to_vec();
        for j in 0..(bn / 16) as usize {
            let dv = b.wgmma_desc(c.sv, &v_at, c.mv, j)?;
            let frag = p[4 * j..4 * j + 4].to_vec();
            o = b.wgmma(o_shape, &WgmmaSrc::Regs(frag), &dv, Acc::Add(&o))?;
        }
        Ok(o)
    };
    // the masked online softmax of tile kt from (m0, m1, ℓ0, ℓ1): P in the input type, α per
    // row, the new (m0, m1, ℓ0, ℓ1)
    let softmax = |b: &KernelBuilder, sc: &[Val], kt: &Val, ml: &[Val]| -> R<Soft> {
        // mask: key column 8·(i/4) + 2·quad + i mod 2 of the tile, valid below the row's limit
        let rel: Vec<Val> = limits
            .iter()
            .map(|l| l.clone() - kt.clone() * lit(bn) - quad.clone() * lit(2))
            .collect();
        // only tiles that reach past a row's limit are masked (the thread's first row has the
        // smaller limit): the last tile, and the diagonal ones when causal
        let need = b.cmp(CmpOp::Lt, &rel[0], &lit(bn))?;
        let sm = b.if_then_else(
            &need,
            |b| {
                let mut sm = Vec::with_capacity(sc.len());
                for (i, v) in sc.iter().enumerate() {
                    let col = (8 * (i / 4) + i % 2) as i64;
                    let ok = b.cmp(CmpOp::Lt, &lit(col), &rel[(i / 2) % 2])?;
                    sm.push(b.select(&ok, v, &neg_inf)?);
                }
                Ok(sm)
            },
            |_| Ok(sc.to_vec()),
        )?;
        // row max over the thread's values, then over the 4 lanes of the row
        let mut new_ml = Vec::with_capacity(4);
        let mut base = Vec::with_capacity(2);
        let mut alpha = Vec::with_capacity(2);
        for (r, m_old) in ml[..2].iter().enumerate() {
            // a balanced tree (max is exact in any order): depth log2(BN/4 + 1), not a chain of
            // BN/4 dependent FMNMX
            let mut row = vec![m_old.clone()];
            row.extend(
                sm.iter().enumerate().filter(|(i, _)| (i / 2) % 2 == r).map(|(_, v)| v.clone()),
            );
            let mut mx = tree(b, BinOp::Max, row)?;
            for x in [1, 2] {
                let other = b.shfl(ShflMode::Bfly, &mx, &b.i32(x))?;
                mx = b.binary(BinOp::Max, &mx, &other)?;
            }
            // a row with no key yet keeps m = −∞: subtract 0 instead (no −∞ − −∞)
            let none = b.cmp(CmpOp::Eq, &mx, &neg_inf)?;
            let scaled = b.binary(BinOp::Mul, &mx, &sl2)?;
            let bs = b.select(&none, &zero, &scaled)?;
            let nb = b.unary(UnOp::Neg, &bs)?;
            let a = b.unary(UnOp::Exp2ApproxFtz, &b.fma(m_old, &sl2, &nb)?)?;
            new_ml.push(mx);
            base.push(nb);
            alpha.push(a);
        }
        // P in f32: the pipelined schedules pack it only after P·V(t−1) has read the previous
        // tile's P (see `pack`); one FFMA and one MUFU.EX2 an element (m·c hoisted per row)
        let mut p = Vec::with_capacity(sm.len());
        for (i, v) in sm.iter().enumerate() {
            p.push(b.unary(UnOp::Exp2ApproxFtz, &b.fma(v, &sl2, &base[(i / 2) % 2])?)?);
        }
        // ℓ' = α·ℓ + Σ P: the thread's sum of a row as a balanced tree of FADDs, then one FFMA
        for (r, (l, a)) in ml[2..].iter().zip(&alpha).enumerate() {
            let row =
                p.iter().enumerate().filter(|(i, _)| (i / 2) % 2 == r).map(|(_, v)| v.clone());
            let sum = tree(b, BinOp::Add, row.collect())?;
            new_ml.push(b.fma(l, a, &sum)?);
        }
        Ok(Soft { p, alpha, ml: new_ml })
    };
    // P rounded to the input type and packed in pairs (fragment values 2j, 2j + 1 share a row):
    // one register per pair, wgmma's A fragment
    let pack = |b: &KernelBuilder, p: &[Val]| -> R<Vec<Val>> {
        p.chunks(2).map(|w| b.cvt_pack(&w[0], &w[1], elem)).collect()
    };
    let rescale = |b: &KernelBuilder, o: &[Val], alpha: &[Val]| -> R<Vec<Val>> {
        o.iter().enumerate().map(|(i, v)| b.binary(BinOp::Mul, v, &alpha[(i / 2) % 2])).collect()
    };
    // `f(h)` run by consumer warpgroup h (0-based) alone: named barriers take constant ids,
    // so a branch per warpgroup (two consumers: one `if`, as the kernel always had)
    let first_wg = b.cmp(CmpOp::Eq, &half, &lit(0))?;
    let per_wg = |b: &KernelBuilder, f: &dyn Fn(&KernelBuilder, i64) -> R<()>| -> R<()> {
        b.if_then_else(
            &first_wg,
            |b| f(b, 0).map(|_| vec![]),
            |b| {
                if nc == 2 {
                    return f(b, 1).map(|_| vec![]);
                }
                let second = b.cmp(CmpOp::Eq, &half, &lit(1))?;
                b.if_then_else(&second, |b| f(b, 1).map(|_| vec![]), |b| f(b, 2).map(|_| vec![]))
            },
        )?;
        Ok(())
    };
    // ping-pong, a round robin: warpgroup h issues its GEMMs after `bar.sync 1+h` and lets the
    // next one go with `bar.arrive 1+(h+1) mod consumers` (256 threads each: the 128 that sync
    // and the 128 that arrive); two consumers: 1+h and 2−h
    let turn = |h: i64| (1 + h) as u32;
    let next = |h: i64| (1 + (h + 1) % nc) as u32;
    let pp_sync = |b: &KernelBuilder| -> R<()> {
        if cfg.pingpong {
            span(b, AttnSpan::TurnSync, false)?;
            per_wg(b, &|b, h| b.named_barrier(turn(h), 256))?;
            span(b, AttnSpan::TurnSync, true)?;
        }
        Ok(())
    };
    let pp_arrive = |b: &KernelBuilder, last: bool| -> R<()> {
        if cfg.pingpong {
            span(b, AttnSpan::TurnArrive, false)?;
            if last && nc == 2 {
                // the second warpgroup's last arrival would have no matching sync
                b.if_then(&first_wg, |b| b.named_barrier_arrive(2, 256))?;
            } else {
                // the last warpgroup of the round's last arrival would have no matching sync
                per_wg(b, &|b, h| {
                    if last && h == nc - 1 {
                        Ok(())
                    } else {
                        b.named_barrier_arrive(next(h), 256)
                    }
                })?;
            }
            span(b, AttnSpan::TurnArrive, true)?;
        }
        Ok(())
    };
    b.mbarrier_wait(c.q_full, &lit(0), &lit(0))?;
    let mut init = vec![zero.clone(); nacc];
    init.extend([neg_inf.clone(), neg_inf.clone(), zero.clone(), zero.clone()]);
    let out = if !cfg.overlap {
        b.for_range(&lit(0), c.tiles, &lit(1), &init, |b, kt, carried| {
            let (o_acc, ml) = carried.split_at(nacc);
            let sc = issue_s(b, &kt)?;
            b.wgmma_commit()?;
            span(b, AttnSpan::SIssue, true)?;
            span(b, AttnSpan::SWait, false)?;
            b.wgmma_wait(0)?;
            span(b, AttnSpan::SWait, true)?;
            c.k_ring.release(b, &stage(&kt).stage)?;
            span(b, AttnSpan::Softmax, false)?;
            let soft = softmax(b, &sc, &kt, ml)?;
            let p = pack(b, &soft.p)?;
            let o = rescale(b, o_acc, &soft.alpha)?;
            span(b, AttnSpan::Softmax, true)?;
            let mut o = issue_pv(b, &p, &kt, &o)?;
            b.wgmma_commit()?;
            span(b, AttnSpan::PvIssue, true)?;
            span(b, AttnSpan::PvWait, false)?;
            b.wgmma_wait(0)?;
            span(b, AttnSpan::PvWait, true)?;
            c.v_ring.release(b, &stage(&kt).stage)?;
            o.extend(soft.ml);
            Ok(o)
        })?
    } else {
        b.note("attention_sm90 consumers (overlap): S(t) and P·V(t−1) issued together, the softmax of t while P·V(t−1) runs");
        // the carry: O (P·V(t−2) may still run on it), P(t−1) packed, α(t−1), (m, ℓ)
        let p_len = (bn / 4) as usize;
        let has_tiles = b.cmp(CmpOp::Gt, c.tiles, &lit(0))?;
        if cfg.pingpong {
            // the first warpgroup goes first: the last one lets it (when there is any tile)
            let slack =
                b.binary(BinOp::Min, &(c.tiles.clone() - lit(1)), &(half.clone() - lit(nc - 1)))?;
            let lets = b.cmp(CmpOp::Ge, &slack, &lit(0))?;
            b.if_then(&lets, |b| b.named_barrier_arrive(1, 256))?;
        }
        // tile 0: S and its softmax (O is still 0)
        let zero_p = b.cvt_pack(&zero, &zero, elem)?;
        let mut none = vec![zero_p; p_len];
        none.extend([zero.clone(), zero.clone()]);
        none.extend(init[nacc..].iter().cloned());
        let first = b.if_then_else(
            &has_tiles,
            |b| {
                pp_sync(b)?;
                let sc = issue_s(b, &lit(0))?;
                b.wgmma_commit()?;
                span(b, AttnSpan::SIssue, true)?;
                pp_arrive(b, false)?;
                span(b, AttnSpan::SWait, false)?;
                b.wgmma_wait(0)?;
                span(b, AttnSpan::SWait, true)?;
                c.k_ring.release(b, &stage(&lit(0)).stage)?;
                span(b, AttnSpan::Softmax, false)?;
                let soft = softmax(b, &sc, &lit(0), &init[nacc..])?;
                let mut v = pack(b, &soft.p)?;
                span(b, AttnSpan::Softmax, true)?;
                v.extend(soft.alpha);
                v.extend(soft.ml);
                Ok(v)
            },
            |_| Ok(none.clone()),
        )?;
        let mut carry = init[..nacc].to_vec();
        carry.extend(first);
        // Every `wgmma.wait_group` here is followed by work that needs it: ptxas's scheduler
        // puts a wait at the top of its basic block, so a wait(0) after the softmax (for
        // P·V(t−1)) would run before it and the softmax would never overlap P·V (what the
        // first version did: SASS `WARPGROUP.DEPBAR.LE gsb0, 0x0` right after the wait(1)).
        // So P·V(t−1) is waited for at the top of the next tile, where the packing of P(t) and
        // O ·= α(t) need it. (Not after S(t+1) is issued: ptxas does not see that a wait(1)
        // there retires the previous tile's P·V, and serializes the wgmmas, C7514.)
        let looped = b.for_range(&lit(1), c.tiles, &lit(1), &carry, |b, kt, carried| {
            let (o_acc, rest) = carried.split_at(nacc);
            let (p_prev, rest) = rest.split_at(p_len);
            let (alpha_prev, ml) = rest.split_at(2);
            let prev = kt.clone() - lit(1);
            // P·V(t−2) is done: its V stage is free, and so are O and the registers of P(t−2)
            span(b, AttnSpan::PvWait, false)?;
            b.wgmma_wait(0)?;
            span(b, AttnSpan::PvWait, true)?;
            let two_back = b.cmp(CmpOp::Ge, &kt, &lit(2))?;
            b.if_then(&two_back, |b| c.v_ring.release(b, &stage(&(kt.clone() - lit(2))).stage))?;
            // O ·= α(t−1): ping-pong, before waiting for the turn (the other warpgroup's GEMMs
            // run meanwhile); else while S(t) runs (a fence before P·V: O was written)
            let o = if cfg.pingpong { rescale(b, o_acc, alpha_prev)? } else { o_acc.to_vec() };
            pp_sync(b)?;
            let sc = issue_s(b, &kt)?;
            b.wgmma_commit()?;
            span(b, AttnSpan::SIssue, true)?;
            let o = if cfg.pingpong { o } else { rescale(b, &o, alpha_prev)? };
            let mut o = issue_pv(b, p_prev, &prev, &o)?;
            b.wgmma_commit()?;
            span(b, AttnSpan::PvIssue, true)?;
            pp_arrive(b, false)?;
            // S(t) is done; P·V(t−1) may still run during the softmax
            span(b, AttnSpan::SWait, false)?;
            b.wgmma_wait(1)?;
            span(b, AttnSpan::SWait, true)?;
            c.k_ring.release(b, &stage(&kt).stage)?;
            span(b, AttnSpan::Softmax, false)?;
            let soft = softmax(b, &sc, &kt, ml)?;
            o.extend(pack(b, &soft.p)?);
            span(b, AttnSpan::Softmax, true)?;
            o.extend(soft.alpha);
            o.extend(soft.ml);
            Ok(o)
        })?;
        let (o_acc, rest) = looped.split_at(nacc);
        let (p_last, rest) = rest.split_at(p_len);
        let (alpha_last, ml) = rest.split_at(2);
        // the last tile's P·V, after P·V(n−2) (the wait outside the `if`: the packing and
        // O ·= α are pure ops, placed with their operands before it)
        span(b, AttnSpan::PvWait, false)?;
        b.wgmma_wait(0)?;
        span(b, AttnSpan::PvWait, true)?;
        let o = b.if_then_else(
            &has_tiles,
            |b| {
                let last = c.tiles.clone() - lit(1);
                let two = b.cmp(CmpOp::Ge, c.tiles, &lit(2))?;
                b.if_then(&two, |b| c.v_ring.release(b, &stage(&(last.clone() - lit(1))).stage))?;
                let o = rescale(b, o_acc, alpha_last)?;
                pp_sync(b)?;
                let o = issue_pv(b, p_last, &last, &o)?;
                b.wgmma_commit()?;
                span(b, AttnSpan::PvIssue, true)?;
                pp_arrive(b, true)?;
                span(b, AttnSpan::PvWait, false)?;
                b.wgmma_wait(0)?;
                span(b, AttnSpan::PvWait, true)?;
                c.v_ring.release(b, &stage(&last).stage)?;
                Ok(o)
            },
            |_| Ok(o_acc.to_vec()),
        )?;
        let mut out = o;
        out.extend(ml.iter().cloned());
        out
    };
    b.note("attention_sm90 epilogue: O / ℓ and LSE, masked to s_q");
    span(b, AttnSpan::Epilogue, false)?;
    let (o_acc, ml) = out.split_at(nacc);
    let ln2 = b.f32(std::f32::consts::LN_2);
    let mut inv = Vec::with_capacity(2);
    let mut lse_v = Vec::with_capacity(2);
    for r in 0..2 {
        let mut l = ml[2 + r].clone();
        for x in [1, 2] {
            let other = b.shfl(ShflMode::Bfly, &l, &b.i32(x))?;
            l = b.binary(BinOp::Add, &l, &other)?;
        }
        let seen = b.cmp(CmpOp::Gt, &l, &zero)?;
        let one = b.f32(1.0);
        let recip = b.binary(BinOp::Div, &one, &l)?;
        inv.push(b.select(&seen, &recip, &zero)?);
        let lg = b.unary(UnOp::Lg2Approx, &l)?;
        let nat = b.binary(BinOp::Mul, &b.fma(&ml[r], &sl2, &lg)?, &ln2)?;
        lse_v.push(b.select(&seen, &nat, &neg_inf)?);
    }
    let (o, lse) = (c.o, c.lse);
    let base_o = c.batch.clone() * o.strides[0].clone() + c.head.clone() * o.strides[2].clone();
    if let Some(om) = c.om {
        b.note("attention_sm90 epilogue (TMA store): O / ℓ into this warpgroup's rows of the Q tile, then one TMA store per slab");
        // the Q tile's 128-byte swizzle: the 16-byte chunk j of tile row y is stored at chunk
        // j ^ (y mod 8); a thread's rows are ≡ lane / 4 (mod 8), its pair at 2·quad in a chunk
        let phase = lane.clone() / lit(4);
        let row0 = half.clone() * lit(64) + warp.clone() * lit(16) + phase.clone();
        for (r, inv_r) in inv.iter().enumerate() {
            let row = row0.clone() + lit(8 * r as i64);
            for i in (0..o_acc.len()).filter(|i| (i / 2) % 2 == r).step_by(2) {
                let col = (8 * (i / 4)) as i64;
                let chunk = b.binary(BinOp::Xor, &phase, &lit(col % SLAB / 8))?;
                let at = lit(col / SLAB * bm * SLAB)
                    + row.clone() * lit(SLAB)
                    + chunk * lit(8)
                    + quad.clone() * lit(2);
                let vals = [
                    b.cvt(&b.binary(BinOp::Mul, &o_acc[i], inv_r)?, elem)?,
                    b.cvt(&b.binary(BinOp::Mul, &o_acc[i + 1], inv_r)?, elem)?,
                ];
                b.store(c.sq, &at, &vals, None)?;
            }
        }
        // the tile's generic writes visible to the async proxy, then this warpgroup's 128
        // threads meet (named barrier 1 + consumers + h, past the ping-pong's: 3 or 4 with two
        // consumers, 4..=6 with three) and its first thread issues the stores
        b.fence_proxy_async();
        span(b, AttnSpan::StoreSync, false)?;
        per_wg(b, &|b, h| b.named_barrier((1 + nc + h) as u32, 128))?;
        span(b, AttnSpan::StoreSync, true)?;
        let storer = b.cmp(CmpOp::Eq, &t, &lit(0))?;
        b.if_then(&storer, |b| {
            let i32v = |v: &Val| b.cvt(v, ScalarType::I32);
            let (hi, bi) = (i32v(c.head)?, i32v(c.batch)?);
            let m = i32v(&(c.m0.clone() + half.clone() * lit(64)))?;
            for a in 0..slabs {
                let coords = [b.i32(a as i32 * SLAB as i32), hi.clone(), m.clone(), bi.clone()];
                let at = lit(a * bm * SLAB) + half.clone() * lit(64 * SLAB);
                b.tensor_store(om, &coords, c.sq, &at)?;
            }
            b.bulk_commit();
            // the tile must outlive the stores' reads of it
            b.bulk_wait(0, true);
            Ok(())
        })?;
    }
    for r in 0..2 {
        let q = &rows[r];
        let row_at = base_o.clone() + q.clone() * o.strides[1].clone() + quad.clone() * lit(2);
        let inside = b.cmp(CmpOp::Lt, q, c.s_q)?;
        for i in (0..o_acc.len()).filter(|i| (i / 2) % 2 == r && c.om.is_none()).step_by(2) {
            let col = (8 * (i / 4)) as i64;
            let vals = [
                b.cvt(&b.binary(BinOp::Mul, &o_acc[i], &inv[r])?, elem)?,
                b.cvt(&b.binary(BinOp::Mul, &o_acc[i + 1], &inv[r])?, elem)?,
            ];
            b.store(o.mem, &(row_at.clone() + lit(col)), &vals, Some(&inside))?;
        }
        // one lane of the four writes the row's LSE: min(s_q − 1 − q, −quad) ≥ 0
        let slack =
            b.binary(BinOp::Min, &(c.s_q.clone() - lit(1) - q.clone()), &(lit(0) - quad.clone()))?;
        let writer = b.cmp(CmpOp::Ge, &slack, &lit(0))?;
        let at = c.batch.clone() * lse.strides[0].clone()
            + c.head.clone() * lse.strides[1].clone()
            + q.clone() * lse.strides[2].clone();
        b.store(lse.mem, &at, std::slice::from_ref(&lse_v[r]), Some(&writer))?;
    }
    span(b, AttnSpan::Epilogue, true)?;
    Ok(())
}

/// One row of a [`ProbeReport`]: a span kind in one warpgroup, over every block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpanStat {
    /// Warpgroup (0: producer, 1 and up: consumers).
    pub warpgroup: usize,
    /// The span.
    pub span: AttnSpan,
    /// How many, over all blocks.
    pub count: usize,
    /// Mean length (clock units: cycles with the kernel's `%clock64`).
    pub mean: f64,
    /// Total length over the warpgroup's time (the sum over blocks of its first begin to last
    /// end).
    pub share: f64,
}

/// What a probed run says ([`probe_report`]): per warpgroup and span, how often, how long and
/// what share of the warpgroup's time; and per consumer warpgroup the tensor-busy estimate —
/// the union of its GEMMs' intervals from issue (`SIssue` / `PvIssue` begin) to the end of
/// the wait that retires them (the next `SWait` / `PvWait`), over its time. That is an upper
/// bound of the tensor pipe's work for the warpgroup (it counts queueing behind the other
/// warpgroups' GEMMs too); `busy_either` is the union over all consumers per block. The
/// layout's `warpgroups` says how many there are (1 + [`AttnConfig::consumers`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeReport {
    /// Blocks with any event.
    pub blocks: usize,
    /// Warpgroup slices that were full (events may have been dropped).
    pub full_slices: usize,
    /// Per (warpgroup, span), in that order; only spans that occurred.
    pub rows: Vec<SpanStat>,
    /// Per consumer warpgroup (1, 2, and 3 with three consumers): the tensor-busy share.
    pub busy: Vec<(usize, f64)>,
    /// The union of all consumers' GEMM intervals over their joint time.
    pub busy_either: f64,
}

/// Sums a probed run's records ([`tilekit_kernel::probe::ProbeLayout::decode`]) into a
/// [`ProbeReport`].
///
/// ```
/// use tilekit_kernel::probe::{ProbeLayout, Record};
/// use tilekit_ops::attention_sm90::{probe_report, AttnSpan};
/// let rec = |warpgroup, index, time, span: AttnSpan, end| Record {
///     block: 0, warpgroup, index, time, event: 2 * span as u64 + end as u64 };
/// // consumer 1: k_full_wait 0..10, S issued 10..12, waited 12..30, softmax 30..50
/// let r = [
///     rec(1, 0, 0, AttnSpan::KFullWait, false), rec(1, 1, 10, AttnSpan::KFullWait, true),
///     rec(1, 2, 10, AttnSpan::SIssue, false), rec(1, 3, 12, AttnSpan::SIssue, true),
///     rec(1, 4, 12, AttnSpan::SWait, false), rec(1, 5, 30, AttnSpan::SWait, true),
///     rec(1, 6, 30, AttnSpan::Softmax, false), rec(1, 7, 50, AttnSpan::Softmax, true),
/// ];
/// let rep = probe_report(&ProbeLayout { blocks: 1, warpgroups: 3, cap: 8 }, &r);
/// let wait = rep.rows.iter().find(|s| s.span == AttnSpan::KFullWait).unwrap();
/// assert_eq!((wait.count, wait.mean, wait.share), (1, 10.0, 0.2));
/// assert_eq!(rep.busy, vec![(1, 0.4), (2, 0.0)]); // S from 10 to 30 of 0..50
/// assert_eq!((rep.full_slices, rep.busy_either), (1, 0.4));
/// ```
pub fn probe_report(
    layout: &tilekit_kernel::probe::ProbeLayout,
    records: &[tilekit_kernel::probe::Record],
) -> ProbeReport {
    use tilekit_kernel::probe::{spans, Timeline};
    let all = spans(records);
    let tl = Timeline::new(&all);
    let blocks: std::collections::BTreeSet<usize> = records.iter().map(|r| r.block).collect();
    let mut full_slices = 0;
    let mut rows = vec![];
    let mut busy = vec![];
    let (mut either_num, mut either_den) = (0i64, 0i64);
    let nwg = layout.warpgroups;
    let mut per_wg_busy = vec![(0i64, 0i64); nwg];
    let mut time = vec![0i64; nwg];
    let mut intervals: Vec<Vec<Vec<(i64, i64)>>> = vec![vec![vec![]; nwg]; layout.blocks];
    for &blk in &blocks {
        for wg in 0..nwg {
            if layout.full(records, blk, wg) {
                full_slices += 1;
            }
            let Some((a, z)) = tl.extent(blk, wg) else { continue };
            time[wg] += z - a;
            // each GEMM issue to the end of the next wait of its kind
            let mine = tl.of(blk, wg);
            for (i, s) in mine.iter().enumerate() {
                let waits = match AttnSpan::from_kind(s.kind) {
                    Some(AttnSpan::SIssue) => AttnSpan::SWait,
                    Some(AttnSpan::PvIssue) => AttnSpan::PvWait,
                    _ => continue,
                };
                if let Some(w) = mine[i + 1..].iter().find(|w| w.kind == waits as u32) {
                    if let Some(v) = intervals.get_mut(blk) {
                        v[wg].push((s.begin, w.end));
                    }
                }
            }
            if wg > 0 {
                let u = Timeline::union(intervals.get(blk).map_or(&[][..], |v| &v[wg]));
                per_wg_busy[wg].0 += u;
                per_wg_busy[wg].1 += z - a;
            }
        }
        if let Some(v) = intervals.get(blk) {
            let both: Vec<(i64, i64)> = v.iter().skip(1).flatten().copied().collect();
            let ext: Vec<_> = (1..nwg).map(|wg| tl.extent(blk, wg)).collect();
            let (a, z) = ext
                .iter()
                .flatten()
                .fold((i64::MAX, i64::MIN), |(a, z), &(b, e)| (a.min(b), z.max(e)));
            if a < z {
                either_num += Timeline::union(&both);
                either_den += z - a;
            }
        }
    }
    for (wg, &t) in time.iter().enumerate() {
        for span in AttnSpan::ALL {
            let (mut n, mut total) = (0usize, 0i64);
            for &blk in &blocks {
                let (c, s) = tl.sum(blk, wg, span as u32);
                n += c;
                total += s;
            }
            if n > 0 {
                let share = if t > 0 { total as f64 / t as f64 } else { 0.0 };
                rows.push(SpanStat {
                    warpgroup: wg,
                    span,
                    count: n,
                    mean: total as f64 / n as f64,
                    share,
                });
            }
        }
    }
    for (wg, &(u, t)) in per_wg_busy.iter().enumerate().skip(1) {
        busy.push((wg, if t > 0 { u as f64 / t as f64 } else { 0.0 }));
    }
    let busy_either = if either_den > 0 { either_num as f64 / either_den as f64 } else { 0.0 };
    ProbeReport { blocks: blocks.len(), full_slices, rows, busy, busy_either }
}
