//! GEMM on Hopper's asynchronous machinery: TMA tiles into a shared-memory ring, wgmma from
//! descriptors derived from the swizzled tile layouts, a producer warpgroup and one or two
//! consumer warpgroups (warp specialisation with `setmaxnreg`), optionally persistent with a
//! grouped tile order and an epilogue through shared memory and TMA stores.
//!
//! ```text
//!   C (M×N, row-major) = A (M×K, row-major) · Bᵀ   with B stored N×K, row-major ("TN": both
//!   operands K-contiguous, the layout wgmma reads without transposing)
//!
//!   block: tiles of bm × BN of C, bm = 64 · consumers (GemmConfig::consumers, 1 or 2), one
//!   producer warpgroup + the consumers: 384 threads (bm 128) or 256 (bm 64); `it` = k-slices
//!   the block has streamed
//!   warpgroup 0 (producer, setmaxnreg.dec 40)     warpgroups 1, 2 (consumers, setmaxnreg.inc 232)
//!   (ping-pong bn > 128: .dec 24)                 (ping-pong bn > 128: .inc 240)
//!                                                 (one consumer: warpgroup 1 alone, no .inc)
//!   one thread,                                   for each tile t of the block (same walk):
//!   for each tile t of the block:                   for kt: g = it + kt, s = g mod S, r = ⌊g/S⌋
//!     for kt = 0 .. ⌈K/64⌉:                           wait full[s] parity r mod 2
//!       g = it + kt, s = g mod S, r = ⌊g/S⌋           wgmma.fence; 4 × wgmma m64nBNk16
//!       wait empty[s] parity (r+1) mod 2              commit; wait_group 0 (overlap: 1)
//!       arrive.expect_tx(full[s], A + B bytes)        arrive empty[s] (overlap: s − 1)  (128·c)
//!       TMA A[m0.., k0..] (64 × bm box, 128B swz)   (overlap: wait_group 0, release the last s)
//!       TMA B[n0.., k0..] (64 × BN box, 128B swz)   epilogue (below)
//!     it += ⌈K/64⌉                                  it += ⌈K/64⌉
//!
//!   the ring's stage and phase run on across tiles (no drain): while the consumers store a
//!   tile, the producer already streams the next tile's first slices into the freed stages;
//!   (s, r mod 2) are computed from `it` once a tile and stepped in the k-loop (s + 1, wrapped
//!   to 0 with r flipped): a division by S there is ptxas's general one, every k-slice
//!
//!   persistent (grid = min(tiles, SMs), launch_grid):      one block per tile:
//!     block b walks t = b, b + grid, b + 2·grid, …           t = blockIdx.y · gridDim.x + x
//!     SM0 │ t0 ld+mma │ t4 ld+mma │ t8 … (grid 4)          (the same walk, one step)
//!         │           │▒ st t0   │▒ st t4     ▒ = epilogue overlapping the next loads
//!
//!   pairs (GemmConfig::cluster = 2): a cluster of 2 blocks (ranks 0, 1) on M-tiles 2p, 2p + 1
//!   of one N-tile; the walk (and the tile order below) runs over pairs: ⌈tiles_m / 2⌉ × tiles_n
//!     rank r's producer, per stage:  A rows of its own M-tile    → its own ring (as above)
//!                                    B rows r·BN/2 .. (r+1)·BN/2  → both rings, multicast 0b11
//!                                    (MN-major B: slabs j ≡ r mod 2)
//!     full[s] of each block: expect_tx(A + all of B) — its own A box and both halves of B
//!     empty[s] of each block: 2 × 4·c arrivals — lane 0 of every consumer warp of both blocks,
//!       after the warpgroup's wait_group, arrives on empty[s] of rank 0 and of rank 1 (mapa +
//!       mbarrier.arrive.shared::cluster): a producer refills a stage only when both blocks
//!       have read it, because its multicast writes into both
//!     barrier.cluster after the barriers' init and before exit (no block exits while its
//!       peer may still multicast into it or arrive on its barriers)
//!     the last pair of an odd tiles_m: rank 1's tile lies below C — it loads the last real
//!       tile's A (no box wholly outside A), computes in step, and stores nothing (masked /
//!       skipped)
//!   (the pair shares B rather than A: for bn ≥ 128 B's box is the larger, so L2 → SM traffic
//!   per stage and block falls from A + B to A + B/2 — bn 256: 32 KiB instead of 48)
//!
//!   ping-pong (GemmConfig::pingpong; persistent, two consumers, bn ≤ 208): the consumer
//!   warpgroups take turns over the block's walk — warpgroup 1 (w = 0) its steps 0, 2, 4, …,
//!   warpgroup 2 (w = 1) steps 1, 3, 5, … — each computing a whole 128-row tile by itself
//!   (per k16 step 2 × wgmma m64nBNk16, A slabs 0 and 1 of the same stage; 2 · BN/2 = BN f32
//!   accumulators a thread: 128 at bn 128, 176 at bn 176 — cuBLASLt's 8192 × 8192 × 1024
//!   winner), so one warpgroup's epilogue runs under the other's mainloop and the tensor cores
//!   never wait for a store:
//!
//!     producer   │ t0 slices │ t1 slices │ t2 slices │ t3 slices │ …   (the same walk, one ring)
//!     WG1 (w 0)  │ mma t0    │ epi t0 ▒▒ │ mma t2    │ epi t2 ▒▒ │
//!     WG2 (w 1)  │ (waits)   │ mma t1    │ epi t1 ▒▒ │ mma t3    │
//!                            ▲ order[1]  ▲ order[0]  ▲ order[1]     ▒ = no MMA of its own
//!
//!   the ring as before (stage and phase run on over all the block's tiles); warpgroup w's i-th
//!   tile of the walk starts at slice i · ⌈K/bk⌉ (`it` starts at w tiles' slices and steps two
//!   tiles), and each stage is released by the one warpgroup that read it: empty[s] expects 128
//!   arrivals. The order barriers (mbarriers order[0], order[1], 128 arrivals): warpgroup w
//!   waits order[w] before its mainloop (not before the walk's first tile), and arrives on
//!   order[1 − w] once the last stage of its tile has landed — that is CUTLASS's
//!   OrderedSequenceBarrier, and it is needed for more than the turns: a stage's full barrier
//!   is waited by parity, and a warpgroup skipping the other's slices could otherwise wait on
//!   full[s] while its previous fill (the other warpgroup's slice) has not landed yet, and read
//!   that phase as already complete; after the turn, every earlier fill has been waited by
//!   someone. (The arrive sits in the k-loop, at the last slice: between the loop and its
//!   wait_group 0, ptxas serializes the wgmmas, C7514.)
//!   epilogues: Registers unchanged (rows 64·j + … of slab j's accumulators); Tma: a C tile
//!   (or, with epilogue subtiles, two buffers of 128 × s: below),
//!   a named barrier (1 for warpgroup 1, 2 for warpgroup 2, 128 threads) and a storing thread
//!   (the warpgroup's first) per warpgroup, each waiting its own bulk groups; with an epilogue
//!   op the warpgroup also syncs every quarter slab (ptxas hoists the loads of C and the bias
//!   over the shared stores otherwise, and spills beside 128 accumulators)
//!
//!   tile order, t → (M-tile, N-tile) on tiles_m × tiles_n:
//!     Linear        (t / tiles_n, t mod tiles_n)
//!     Grouped(g)    groups of g M-tiles walked column by column (CUTLASS / Triton swizzle):
//!                   the blocks in flight share a few A row tiles and B column tiles in L2
//!                   g = 2:  t:  0 2 4 6      M-tile 0
//!                               1 3 5 7      M-tile 1
//!                               8 9 10 11    M-tile 2 (the last group, one row)
//!
//!   epilogue op (GemmConfig::op, in registers, both epilogues; each step and its param only
//!   where on — the default kernel is the plain product):
//!     v = α·acc (alpha)  → v += β·C[row, col] (beta; masked ld of C)  → v += bias[col] (bias;
//!     masked ld)  → ReLU max(v, 0) | GELU v / (1 + 2^(−2·log2e·√(2/π)(v + 0.044715v³)))
//!   epilogue, Registers: C[m0 + row, n0 + col] = v, masked global stores of column pairs
//!   epilogue, Tma:
//!     the storing thread (tid 128): wait the last tile's bulk group (read) ─┐
//!     bar.sync 1, 128·c (the c consumers) ◄──────────────────────────────────┘
//!     each consumer: acc → output type → shared C tile (⌊BN/cw⌋ blocks of bm rows × 128
//!       bytes, 128B swizzle: a warp's 8 rows × 4 lanes hit 8 different 16-byte chunks, no
//!       conflicts; the rest of the width, BN mod cw, in blocks of one 64-byte (64B swizzle)
//!       or 32-byte (32B swizzle) row — c_boxes)
//!     fence.proxy.async; bar.sync 1, 128·c
//!     the storing thread: a TMA store per block (box width × bm at (n0 + its column, m0):
//!       `cm` for the 128-byte boxes, `cm_tail` for the narrower ones); commit
//!     (the stores drain while the next tile's mainloop runs; waited at the next epilogue)
//!
//!     C tile of bn 176, bf16 (cw 64), bm rows each:     box   cols      swizzle  map
//!       ┌──────────┬──────────┬────┬────┬────┐           0     0..64    128 B    cm
//!       │  0..64   │ 64..128  │ 16 │ 16 │ 16 │           1    64..128   128 B    cm
//!       └──────────┴──────────┴────┴────┴────┘           2-4 128..176   32 B     cm_tail
//!     (bn 160: one 32-column box, 64 B swizzle; an f32 C: 32-column boxes, a 16-column one
//!     with 64 B swizzle last; a thread's swizzle phase in a box of R-byte rows is
//!     (row mod 8) / (128 / R): 8 rows of 128 bytes, 4 of 64 or 2 of 32 share one)
//!
//!   epilogue subtiles (GemmConfig::epilogue_subtile = s > 0, Tma; CUTLASS's epilogue
//!   subtiling): the tile's columns s at a time (the last subtile bn mod s wide) through
//!   C_SUB_BUFFERS = 2 shared buffers of bm × s per C tile (ping-pong: two per warpgroup), a
//!   subtile's buffer laid out as the C tile of its width above (c_boxes; s is one 32- or
//!   64-byte swizzle row of C or whole 128-byte rows, so at most two kinds of box: `cm` the
//!   wider, `cm_tail` the other), each thread's offsets the C tile's formula:
//!     the storing thread: wait_group.read 0 (the last tile's stores have read both buffers)
//!     bar.sync (the warpgroup's, or all consumers')
//!     for subtile j = 0 .. ⌈bn / s⌉:
//!       j ≥ 2: the storing thread waits wait_group.read 1 (every store but subtile j − 1's
//!              has read its buffer: j − 2's, in buffer j mod 2); bar.sync
//!       accumulators of columns j·s .. j·s + s → buffer j mod 2; fence.proxy.async; bar.sync
//!       the storing thread: a TMA store per box of the subtile at (n0 + j·s + its column, m0);
//!              commit_group (one bulk group a subtile)
//!
//!     bn 176, s 32, bf16 (a ping-pong warpgroup's two buffers of 128 × 32, 8 KiB each):
//!       columns   0..32  32..64  64..96  96..128  128..160  160..176
//!       buffer      0      1       0       1         0         1
//!       box       64 B   64 B    64 B    64 B      64 B      32 B       (64 B swizzle: cm;
//!                                                                       32 B: cm_tail)
//!     a warp's store of a register pair: 8 rows × 4 lanes into 8 different 16-byte chunks of
//!     a 128-byte line in either swizzle (4 phases of 2 rows of 64 B, 2 phases of 4 of 32 B):
//!     no bank conflicts, as in the whole tile
//!
//!   shared memory per block, bf16 (227 KiB; a stage is (128 + bn) × 64 × 2 bytes), ping-pong
//!   with the TMA store at the deepest ring, whole C tiles against subtiles
//!   (`tilekit_ops::gemm_tuning::pingpong_subtile_choice`):
//!     bn    stage    2 whole C tiles          2 warpgroups × 2 buffers of 128 × s
//!     128   32 KiB   64 KiB + 5 stages = 224   s 32: 32 KiB + 6 stages = 224
//!     144   34 KiB   72 KiB + 4 stages = 208   s 16: 16 KiB + 6 stages = 220
//!     160   36 KiB   80 KiB + 4 stages = 224   s 32: 32 KiB + 5 stages = 212
//!     176   38 KiB   88 KiB + 3 stages = 202   s 32: 32 KiB + 5 stages = 222
//!     192   40 KiB   96 KiB + 3 stages = 216   s 16: 16 KiB + 5 stages = 216
//!     208   42 KiB  104 KiB + 2 stages = 188   s 16: 16 KiB + 5 stages = 226
//!   (the cooperative kernel takes subtiles too: bn 256 with s 64, 32 KiB of buffers beside 4
//!   stages of 48 KiB, where a whole C tile of 64 KiB leaves 3)
//!
//!   shared: S stages of { A tile bm×64, B tile BN×64 } bf16/f16, each the TMA box image with
//!   the 128-byte swizzle = HopperSwizzle::B128.descriptor(rows, 64, 2), from which both the
//!   tensor map and the wgmma descriptors are derived; (Tma) the C tile, bm × BN outputs (two
//!   of them with ping-pong), or with subtiles 2 buffers of bm × s (4 with ping-pong);
//!   (ping-pong) the order barriers
//!
//!   the 64-row tile (one consumer), against the 128-row one, per stage and block:
//!     bm 128:  A 16 KiB + B (bn 256) 32 KiB = 48 KiB; 2 × 4 wgmma m64n256k16; 384 threads
//!     bm  64:  A  8 KiB + B (bn 256) 32 KiB = 40 KiB; 1 × 4 wgmma m64n256k16; 256 threads
//!     M = 64 in 128-row tiles: rows 64..127 of every A box are TMA zero fill that the second
//!     consumer multiplies — half the MMA work wasted; 64-row tiles do none of it, and a
//!     problem of few tiles gets twice the blocks (1000³: 128 tiles of 64 × 128, not 64)
//!
//!   operand majors (GemmConfig::a_major / b_major; K-major is the picture above):
//!     K-major  A stored M×K, B stored N×K: one box (64 along K) × rows, descriptor(rows, 64)
//!     MN-major A stored K×M (column-major), B stored K×N (row-major): the tile is slabs of
//!              64 MN-columns × 64 K-rows, one TMA box each at (mn0 + 64·j, k0), slab j at
//!              element 64·64·j — HopperSwizzle::B128.descriptor_atoms(64, width, 2), the
//!              swizzle on the MN side; wgmma reads it MN-major (trans-a / trans-b = 1):
//!                LBO = the slab stride (8 KiB), SBO = 8 K-rows (1 KiB)
//!              A: slab h is consumer warpgroup h's 64 rows (at the K-major tile's offset;
//!              bm / 64 slabs: one with one consumer)
//!     k-major A, B    (TN)  A·Bᵀ with B = a weight N×K     ┌ slab 0 ┬ slab 1 ┐ B MN-major,
//!     k-major A, MN B (NN)  plain row-major A and B        │ n 0..64│64..128 │ bn 128: two
//!     MN A, k-major B (TT)  ...                            │ k 0..64│ k 0..64│ boxes a stage
//!     MN A, MN B      (NT)                                 └────────┴────────┘
//! ```
//!
//! f32 inputs run as tf32 (wgmma `.tf32`, k 8): the same 128-byte swizzled rows hold 32 of them,
//! so a stage covers K = 32 ([`GemmConfig::bk`]) in four wgmmas; tf32 has no transpose, so both
//! operands are K-major (the API stages others).
//!
//! Split K ([`GemmConfig::split_k`] = s > 1): for a C of few tiles and a long K (64 × 8192 × 8192
//! is 32 tiles of 128 × 256 on 132 SMs), the walk covers s × tiles: tile t of split j streams
//! k-slices `j·⌈S/s⌉ ..` (S = ⌈K/64⌉; the last splits may get fewer, or none, and then store
//! zeros) and writes its f32 partial product to rows `j·M ..` of a workspace; a second kernel
//! ([`build_split_reduce`]) sums the s slabs into C:
//!
//! ```text
//!   workspace (s·M × N, f32)      C (M × N, any type)
//!   ┌──────── split 0 ───────┐
//!   ├──────── split 1 ───────┤ ──Σ over j──►  C[i][c] = Σ_j ws[j·M + i][c]
//!   └──────── split s−1 ─────┘
//! ```
//!
//! Strided batches ([`GemmConfig::batched`]): one launch for `batch` products of one shape —
//! for many small entries the ~5 µs of a launch per entry dominate. C is `batch × M × N`; A's,
//! B's (and the TMA epilogue's C) tensor maps get a third dim, the entry, whose byte stride
//! TMA needs a multiple of 16 (the API launches per entry otherwise); the walk runs over the
//! entries' tiles one after another and every TMA coordinate list and C offset carries the
//! tile's entry (an operand's `a_batch_step` / `b_batch_step` 0: entry 0 for all, shared):
//!
//! ```text
//!   t = 0 .. batch·tiles:   entry e = t / tiles,  (M-tile, N-tile) = raster(t mod tiles)
//!   A box at (k0, m0, e·a_step)   B box at (k0, n0, e·b_step)   C at e·C.stride(0) + …
//!   (one block per tile in linear order: grid (tiles_n, tiles_m, batch), e = blockIdx.z)
//! ```
//!
//! Not with a split K (refused by name). With `batched` off the kernel is the 2-D one, op for op.
//!
//! Edges: TMA fills the parts of a box outside A or B with zeros (so K need not be a multiple
//! of 64, nor M, N of the tile); the register stores of C are masked, the TMA stores clipped at
//! C's far edges (dim 0 at 16-byte granularity, so the TMA epilogue needs C's row pitch a
//! multiple of 16 bytes — its tensor map refuses others at binding). TMA needs 16-byte aligned
//! rows of A and B: the pitch of the stored rows (K for K-major, M or N for MN-major) a
//! multiple of 8 elements.
//!
//! Tile widths ([`GemmConfig::bn`]): any multiple of 16 in 16..=256, not only 64, 128, 192,
//! 256 — wgmma takes N any multiple of 8, and a K-major B tile is BN rows of one 128-byte
//! swizzle row each, whole 8-row (1 KiB) swizzle atoms, so every stage, and a pair's half of B
//! (BN/2 rows, a multiple of 8), starts on a 1 KiB boundary with the same swizzle phase the
//! wgmma descriptor assumes. B MN-major is tied to 64 columns and refuses other widths by name
//! (its tile is slabs of 64 N-columns). The TMA-store epilogue stores `⌊bn / cw⌋` boxes of `cw`
//! = 128 bytes of C (64 columns of a 16-bit C, 32 of f32) through `cm` and the rest of the
//! width — a multiple of 32 bytes — in boxes of one 64- or 32-byte swizzle row through a second
//! map `cm_tail` (declared only where there is a rest, so the kernels of the widths that are
//! multiples of `cw` are unchanged; [`GemmConfig::c_maps`] names the maps the host binds, all
//! over the same C). Each box's shared image is [`HopperSwizzle::descriptor`] of its swizzle,
//! the tensor map is derived from it, and the epilogue's offsets are checked against it for
//! every thread and register when the kernel is built. tf32 (k 8) reads the same 128-byte rows
//! and takes the same widths.
//!
//! ```text
//!   bn 144, 1000³, bm 64:  16 × 7 = 112 tiles (bn 128: 128 tiles, the last N-tile 104 wide;
//!                           bn 256: 64 tiles) — a wave of 132 SMs, less zero-filled B
//!   B tile, K-major:  rows 0..8 │ 8..16 │ … │ 136..144   18 swizzle atoms of 8 × 128 B
//!   pair (cluster 2): rank 0 rows 0..72, rank 1 rows 72..144 (9 atoms each, multicast)
//! ```
//!
//! Registers: the kernel declares `.maxnreg 168` (65536 / 384), the count every thread starts
//! with and the one `ptxas -v` reports; code after `setmaxnreg.inc` is allocated up to the new
//! count (a bn 192 ping-pong consumer's SASS names registers up to R219, no local memory:
//! cuobjdump, CUDA 13.0). bn 256 keeps its 128 accumulator registers and the rest without
//! spills (the epilogue's addresses are per-thread bases plus constants, and are computed
//! after the mainloop inside the tile walk; a ping-pong warpgroup's 128 × 128 tile is the same
//! 128 accumulators). A ping-pong tile wider than 128 ([`GemmConfig::registers`]) gives its
//! consumers 240 and the producer 24 (128·24 + 256·240 = 64512 of 65536):
//!
//! ```text
//!   ping-pong, bn accumulators a thread       consumers 232        consumers 240
//!   plain product, bn 144..192                0 spills             0 spills
//!   plain product, bn 208                     ~2 KiB spilled       0 spills   ← PINGPONG_MAX_BN
//!   plain product, bn 224                     ~2.4 KiB             ~2.4 KiB   (refused)
//!   epilogue op (α, β·C, bias, GELU), bn 144  TMA store spills     TMA store spills (refused:
//!                                                                  an op needs bn ≤ 128)
//!   TMA store in subtiles, bn 128..208        —                    0 spills, no C7514 (every
//!   (s 8..128; the op at bn 128)                                   width at its deepest ring)
//!   (the cooperative kernel in subtiles: the plain product 0 spills at bn 128..256; with an
//!   op it spills from bn 144 in 128-byte subtiles and at 240, 256 in any: an op with subtiles
//!   needs bn ≤ 128, refused by name otherwise)
//! ```
//!
//! With one consumer
//! (256 threads) the entry count is 248 (65536 / 256 = 256, capped at 248 below the 255 a
//! thread may address); the producer still gives its registers back (`.dec 40`), the consumer
//! keeps the 248 it starts with (an `.inc` to the same count would be no increase), ptxas
//! allocates 248 to every config and spills nothing. One block per SM either way (a 256-thread
//! block at 248 registers holds 62 Ki of the 64 Ki-register file).

use tilekit_ir::tma::{OobFill, TensorMapSpec, TmaSwizzle};
use tilekit_ir::wgmma::{acc_coord, Acc, Major, SmemMatrix, WgmmaShape, WgmmaSrc, WgmmaType};
use tilekit_ir::{Axis, BinOp, CmpOp, Kernel, KernelBuilder, ScalarType, UnOp, Val};
use tilekit_kernel::lit;
use tilekit_kernel::ring::{PipelineState, Ring};

type IrResult<T> = std::result::Result<T, tilekit_ir::IrError>;
use tilekit_layout::swizzle::HopperSwizzle;

use crate::error::{OpsError, Result};

/// Rows of C per consumer warpgroup (the wgmma's M): a block's tile is
/// [`GemmConfig::bm`] = `WG_ROWS × consumers` rows.
///
/// ```
/// use tilekit_ops::gemm_sm90::{GemmConfig, WG_ROWS};
/// assert_eq!(WG_ROWS, 64);
/// assert_eq!(GemmConfig::default().bm(), 2 * WG_ROWS); // two consumer warpgroups
/// assert_eq!(GemmConfig { consumers: 1, ..GemmConfig::default() }.bm(), WG_ROWS);
/// ```
pub const WG_ROWS: i64 = 64;
/// K per stage of 16-bit inputs (one 128-byte swizzle row); f32 inputs (tf32) take half as
/// many, [`GemmConfig::bk`].
pub const BK: i64 = 64;

/// The largest [`GemmConfig::split_k`].
///
/// ```
/// assert_eq!(tilekit_ops::gemm_sm90::MAX_SPLIT_K, 16);
/// ```
pub const MAX_SPLIT_K: i64 = 16;
/// MN-columns of a slab of an MN-major tile (one 128-byte swizzle row of 16-bit elements; one
/// TMA box of `SLAB × BK` each).
pub const SLAB: i64 = 64;

/// The widest [`GemmConfig::pingpong`] tile: one consumer warpgroup holds all of a 128 × bn
/// tile's accumulators, `bn` f32 registers a thread, in the 240 registers a wide ping-pong
/// consumer takes ([`GemmConfig::registers`]); ptxas (CUDA 13.0) assembles the plain product up
/// to bn 208 without spills and spills from 224. With an epilogue op ([`GemmConfig::op`]) the
/// limit is 128 (the op's loads of C and the bias and their addresses spill beside more
/// accumulators).
///
/// ```
/// use tilekit_ops::gemm_sm90::{EpilogueOp, GemmConfig, PINGPONG_MAX_BN};
/// let pp = GemmConfig { pingpong: true, persistent: true, ..GemmConfig::default() };
/// assert!(GemmConfig { bn: PINGPONG_MAX_BN, ..pp }.check().is_ok());
/// assert!(GemmConfig { bn: PINGPONG_MAX_BN + 16, ..pp }.check().is_err());
/// let op = EpilogueOp { alpha: true, ..EpilogueOp::default() };
/// assert!(GemmConfig { bn: 144, op, ..pp }.check().is_err());
/// ```
pub const PINGPONG_MAX_BN: i64 = 208;

/// The order in which a [`GemmConfig::persistent`] kernel's blocks (or a non-persistent grid)
/// walk the tiles of C.
///
/// ```
/// use tilekit_ops::gemm_sm90::Raster;
/// // 3 M-tiles × 4 N-tiles in groups of 2 M-tiles: down a group's 2 rows, then right
/// let order: Vec<_> = (0..12).map(|t| Raster::Grouped(2).tile(t, 3, 4)).collect();
/// assert_eq!(&order[..5], &[(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]);
/// assert_eq!(&order[8..], &[(2, 0), (2, 1), (2, 2), (2, 3)]); // the last group is one row
/// assert_eq!(Raster::Linear.tile(5, 3, 4), (1, 1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Raster {
    /// Row-major over (M-tile, N-tile): tile `t` is `(t / tiles_n, t mod tiles_n)`.
    Linear,
    /// CUTLASS / Triton grouped order: groups of `g` M-tiles (rows of tiles), each group walked
    /// column by column, so consecutive tiles share B's column tiles and A's row tiles stay in
    /// L2 while a group is walked. `g` ≥ 1.
    Grouped(u32),
    /// Hilbert-curve order over the (M-tile, N-tile) grid: consecutive tiles are neighbours,
    /// and any run of tiles covers a compact patch. The kernel reads the order from a table
    /// (`order`, i32 linear tile ids, [`hilbert_order`]) the host passes.
    Hilbert,
}

/// The tiles of a `tiles_m × tiles_n` grid in Hilbert-curve order, as linear ids
/// `M-tile · tiles_n + N-tile`: the curve over the smallest power-of-two square covering the
/// grid, cells outside the grid skipped (every tile exactly once).
///
/// ```
/// use tilekit_ops::gemm_sm90::hilbert_order;
/// assert_eq!(hilbert_order(2, 2), vec![0, 1, 3, 2]); // (0,0) (0,1) (1,1) (1,0)
/// let mut o = hilbert_order(3, 5);
/// o.sort();
/// assert_eq!(o, (0..15).collect::<Vec<i32>>());
/// ```
pub fn hilbert_order(tiles_m: i64, tiles_n: i64) -> Vec<i32> {
    let side = (tiles_m.max(tiles_n).max(1) as u64).next_power_of_two() as i64;
    let mut out = Vec::with_capacity((tiles_m * tiles_n).max(0) as usize);
    for d in 0..side * side {
        // Hilbert d → (x, y) (the classic iterative form)
        let (mut x, mut y, mut t) = (0i64, 0i64, d);
        let mut s = 1;
        while s < side {
            let rx = 1 & (t / 2);
            let ry = 1 & (t ^ rx);
            if ry == 0 {
                if rx == 1 {
                    x = s - 1 - x;
                    y = s - 1 - y;
                }
                std::mem::swap(&mut x, &mut y);
            }
            x += s * rx;
            y += s * ry;
            t /= 4;
            s *= 2;
        }
        // x along M-tiles, y along N-tiles
        if x < tiles_m && y < tiles_n {
            out.push((x * tiles_n + y) as i32);
        }
    }
    out
}

impl Raster {
    /// `(M-tile, N-tile)` of linear tile id `t` on a `tiles_m × tiles_n` grid of tiles (the
    /// host's mirror of the kernel's arithmetic; for [`Raster::Hilbert`] it computes the whole
    /// order, so call it per tile only on small grids).
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::Raster;
    /// assert_eq!(Raster::Grouped(8).tile(9, 16, 2), (1, 1));
    /// assert_eq!(Raster::Hilbert.tile(3, 2, 2), (1, 0));
    /// ```
    pub fn tile(self, t: i64, tiles_m: i64, tiles_n: i64) -> (i64, i64) {
        match self {
            Raster::Hilbert => {
                let id = hilbert_order(tiles_m, tiles_n)[t as usize] as i64;
                (id / tiles_n, id % tiles_n)
            }
            Raster::Linear => (t / tiles_n, t % tiles_n),
            Raster::Grouped(g) => {
                let g = g.max(1) as i64;
                let group = g * tiles_n;
                let first = t / group * g;
                let rows = (tiles_m - first).min(g);
                let r = t % group;
                (first + r % rows, r / rows)
            }
        }
    }
}

/// How a [`build_gemm_sm90`] kernel writes C.
///
/// ```
/// use tilekit_ops::gemm_sm90::{Epilogue, GemmConfig};
/// assert_eq!(GemmConfig::default().epilogue, Epilogue::Registers);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Epilogue {
    /// Masked global stores straight from the accumulator registers (any C with unit column
    /// stride and an even row stride).
    Registers,
    /// The accumulators (converted) into a 128-byte-swizzled shared C tile, then TMA tensor
    /// stores of it (one thread, a bulk group waited before the tile is rewritten). C is a
    /// pointer `c` with tensor map `cm` (and, for a `bn` not a multiple of 128 bytes of C, a
    /// second map `cm_tail` over the same C for the narrower last boxes:
    /// [`GemmConfig::c_maps`]): its row pitch must be a multiple of 16 bytes.
    Tma,
}

/// The activation the epilogue applies last ([`EpilogueOp::act`]).
///
/// ```
/// use tilekit_ops::gemm_sm90::Activation;
/// assert_eq!(Activation::Relu.apply(-2.0), 0.0);
/// assert!((Activation::Gelu.apply(1.0) - 0.8411919906).abs() < 1e-9);
/// assert_eq!(Activation::None.apply(-2.0), -2.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Activation {
    /// The identity.
    #[default]
    None,
    /// `max(x, 0)`; NaN stays NaN (`torch.relu`; `max.NaN` on the GPU).
    Relu,
    /// GELU, tanh approximation: `x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))`, computed as
    /// `x / (1 + 2^(−2·log2(e)·u))` with `u` the tanh's argument (`ex2.approx`, `rcp.approx`
    /// on the GPU).
    Gelu,
}

impl Activation {
    /// The activation in f64 (the reference the kernels are tested against).
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::Activation;
    /// assert_eq!(Activation::Relu.apply(3.0), 3.0);
    /// assert!(Activation::Relu.apply(f64::NAN).is_nan());
    /// ```
    pub fn apply(self, x: f64) -> f64 {
        match self {
            Activation::None => x,
            Activation::Relu if x.is_nan() => x,
            Activation::Relu => x.max(0.0),
            Activation::Gelu => {
                let u = GELU_C * (x + 0.044715 * x * x * x);
                0.5 * x * (1.0 + u.tanh())
            }
        }
    }
}

/// `√(2/π)`.
const GELU_C: f64 = 0.797_884_560_802_865_4;

/// What a [`build_gemm_sm90`] kernel does to the accumulator before it stores C, in this
/// order: `v = α·acc` (f32 param `alpha`), `v += β·C` (f32 param `beta`; C is read — in the
/// output type — before it is overwritten), `v += bias[column]` (pointer param `bias`, N
/// elements of this type), `v = act(v)`; then the conversion to the output type. Each param
/// exists only where its step is on: the default (all off) kernel is the plain product.
///
/// ```
/// use tilekit_ops::gemm_sm90::{build_gemm_sm90, Activation, EpilogueOp, GemmConfig};
/// use tilekit_ir::ScalarType;
/// let op = EpilogueOp { beta: true, bias: Some(ScalarType::F32), act: Activation::Relu, ..EpilogueOp::default() };
/// assert!(!op.is_identity());
/// let k = build_gemm_sm90(GemmConfig { op, ..GemmConfig::default() }).unwrap();
/// let names: Vec<_> = k.params.iter().map(|p| p.name.as_str()).collect();
/// assert!(names.contains(&"beta") && names.contains(&"bias") && !names.contains(&"alpha"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EpilogueOp {
    /// Scale the product by the f32 param `alpha`.
    pub alpha: bool,
    /// Add `beta · C` (f32 param `beta`), reading C.
    pub beta: bool,
    /// Add a per-column bias of this type (the output type or f32): pointer param `bias`.
    pub bias: Option<ScalarType>,
    /// The activation, last.
    pub act: Activation,
}

impl EpilogueOp {
    /// Whether the epilogue stores the product unchanged (no params, no extra code).
    ///
    /// ```
    /// assert!(tilekit_ops::gemm_sm90::EpilogueOp::default().is_identity());
    /// ```
    pub fn is_identity(&self) -> bool {
        *self == EpilogueOp::default()
    }

    /// The f64 reference of the epilogue on one element of the product `acc`, with C's old
    /// value `c` and the column's `bias`: `act(α·acc + β·c + bias)`, each step only where it
    /// is on (`alpha`, `beta`, `bias` are ignored where off).
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::{Activation, EpilogueOp};
    /// let op = EpilogueOp { alpha: true, beta: true, act: Activation::Relu, ..EpilogueOp::default() };
    /// assert_eq!(op.reference(3.0, 2.0, 0.5, -8.0, 100.0), 2.0); // 2·3 + 0.5·(−8); no bias
    /// assert_eq!(op.reference(-1.0, 2.0, 0.0, 0.0, 0.0), 0.0);
    /// ```
    pub fn reference(&self, acc: f64, alpha: f64, beta: f64, c: f64, bias: f64) -> f64 {
        let mut v = if self.alpha { alpha * acc } else { acc };
        if self.beta {
            v += beta * c;
        }
        if self.bias.is_some() {
            v += bias;
        }
        self.act.apply(v)
    }
}

/// The shape of a [`build_gemm_sm90`] kernel.
///
/// ```
/// let c = tilekit_ops::gemm_sm90::GemmConfig::default();
/// assert_eq!((c.bn, c.stages, c.persistent), (128, 4, false));
/// assert_eq!(c.shared_bytes(), 4 * (128 * 64 + 128 * 64) * 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GemmConfig {
    /// Input element type: F16 or BF16, or F32 read as tf32 (the low 13 mantissa bits ignored;
    /// K-major operands only, 32 K per stage).
    pub input: ScalarType,
    /// Output element type (the input type or F32).
    pub output: ScalarType,
    /// Columns of C per block (the wgmma's N): a multiple of 16 in 16..=256 — with B
    /// [`Major::MN`] a multiple of [`SLAB`] (64, 128, 192, 256: the tile is whole slabs); with
    /// [`Epilogue::Tma`] C is stored in boxes of 128 bytes (64 columns of a 16-bit C, 32 of
    /// f32) and the rest in boxes of 64 or 32 bytes ([`GemmConfig::c_maps`]). Widths between the powers of two fit a problem's N or the SM count better: 1000³
    /// in 64 × 144 tiles is 16 × 7 = 112 blocks, 8192² in 128 × 176 tiles 64 × 47.
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::{build_gemm_sm90, GemmConfig};
    /// let cfg = GemmConfig { bn: 144, consumers: 1, stages: 8, ..GemmConfig::default() };
    /// assert_eq!(cfg.shared_bytes(), 8 * (64 + 144) * 64 * 2); // 208 KiB
    /// assert!(build_gemm_sm90(cfg).unwrap().to_string().contains("m64n144k16"));
    /// ```
    pub bn: i64,
    /// Stages of the shared-memory ring (2..=12, and they must fit 227 KiB: the deepest rings
    /// only for small tiles, e.g. 12 of 64 × 64 with one consumer).
    pub stages: i64,
    /// Keep one wgmma group in flight: each consumer waits with `wait_group 1` and releases the
    /// previous stage, so the next stage's wgmmas are issued while the last ones still run.
    pub overlap: bool,
    /// One block per SM (at most; [`launch_grid`]) walking tiles `blockIdx.x, + gridDim.x, …`;
    /// the ring's stage and phase run on across tiles, so the producer loads the next tile
    /// while the consumers store the last one. `false`: one block per tile.
    pub persistent: bool,
    /// The tile order.
    pub raster: Raster,
    /// How C is written.
    pub epilogue: Epilogue,
    /// A's contiguous axis in global memory: [`Major::K`] (A row-major, `M × K`) or
    /// [`Major::MN`] (A column-major: stored `K × M`, M contiguous).
    pub a_major: Major,
    /// B's contiguous axis in global memory: [`Major::K`] (B stored `N × K` row-major, "TN")
    /// or [`Major::MN`] (B stored `K × N` row-major, N contiguous, "NN").
    pub b_major: Major,
    /// What the epilogue computes before the store (scale, `β·C`, bias, activation).
    pub op: EpilogueOp,
    /// Split K over this many blocks per C tile (1: no split). With a split, `c` is an f32
    /// workspace of `split_k · M` rows — split `s` writes its partial product of C's rows at rows
    /// `s·M ..` — that [`build_split_reduce`] sums into C: more blocks for a C of few tiles and a
    /// long K (64 × 8192 × 8192 has 32 tiles of 128 × 256 for 132 SMs). Register epilogue,
    /// plain product, f32 output only.
    pub split_k: i64,
    /// Strided batches in one launch ([`launch_grid_batched`]): C is a rank-3 tensor
    /// `batch × M × N` (its dim 0 the batch count), the tensor maps of A, B (and C with
    /// [`Epilogue::Tma`]) have a third dim, the batch, whose byte stride must be a multiple of
    /// 16 (TMA), and the walk covers `batch × tiles` — tile `t` is entry `t / tiles` of C, the
    /// raster inside the entry. i32 params `a_batch_step`, `b_batch_step` (1: entry `b` reads
    /// the operand's entry `b`; 0: every entry reads entry 0, a shared operand). Not with a
    /// split K. `false`: the plain 2-D kernel (one C).
    pub batched: bool,
    /// Blocks per thread-block cluster: 1 (no cluster) or 2 — a pair of blocks on two
    /// vertically adjacent tiles of C (M-tiles `2p`, `2p + 1`, the same N-tile) that share
    /// B's tile: each loads its own A tile and half of B's, multicast into both blocks (see the
    /// module docs). The walk hands out tile pairs ([`Raster`] over pairs of M-tiles; not
    /// [`Raster::Hilbert`]); no split K.
    pub cluster: i64,
    /// Consumer warpgroups per block: 2 (the tile is 128 rows of C, 384 threads) or 1 (64
    /// rows, 256 threads: for M ≤ 64, where a 128-row tile would compute half a tile of zeros,
    /// and for problems of few tiles, which get twice the blocks). The producer warpgroup is
    /// there either way. [`GemmConfig::bm`] is the tile's row count.
    pub consumers: i64,
    /// Ping-pong consumers (CUTLASS's schedule, see the module docs): the two consumer
    /// warpgroups work on *different* tiles of the block's persistent walk — warpgroup 1 on
    /// the walk's even steps, warpgroup 2 on the odd ones — each computing the whole 128-row
    /// tile (both 64-row A slabs, `2 × bn / 2` accumulators a thread), their mainloops taking
    /// turns (an order barrier), so one warpgroup's epilogue runs while the other's mainloop
    /// keeps the tensor cores busy. Needs `persistent`, two consumers and `bn` ≤
    /// [`PINGPONG_MAX_BN`] (the accumulators of a 128 × bn tile in one warpgroup: 240 registers
    /// a consumer thread above bn 128, [`GemmConfig::registers`]; with an epilogue op bn ≤ 128);
    /// no split K, batches or clusters.
    /// With [`Epilogue::Tma`] each warpgroup has its own C tile (twice the shared memory), or
    /// its own two subtile buffers ([`GemmConfig::epilogue_subtile`]).
    /// `false`: both consumers on one tile (the cooperative schedule).
    pub pingpong: bool,
    /// The TMA-store epilogue in column subtiles (CUTLASS's epilogue subtiling): 0 stores the
    /// whole C tile from one shared `bm × bn` tile (two with [`GemmConfig::pingpong`]); `s` > 0
    /// stores it `s` columns at a time (the last subtile `bn mod s` wide) through
    /// [`C_SUB_BUFFERS`] shared buffers of `bm × s` outputs per C tile, so the rest of shared
    /// memory holds ring stages (a 128 × 176 ping-pong tile: 5 stages with `s` 32 instead of 3
    /// with two whole C tiles). [`Epilogue::Tma`] only; `s` ≤ `bn` and one 32- or 64-byte
    /// swizzle row of C or a multiple of 128 bytes (bf16 / f16: 16, 32, 64, 128, 192, 256
    /// columns; f32: 8, 16, 32, 64, …); with an epilogue op ([`GemmConfig::op`]) bn ≤ 128 (ptxas
    /// spills the op beside wider tiles in subtiles). See the module docs, "epilogue
    /// subtiles".
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::{Epilogue, GemmConfig};
    /// let pp = GemmConfig { pingpong: true, persistent: true, epilogue: Epilogue::Tma, bn: 176, ..GemmConfig::default() };
    /// assert!(GemmConfig { stages: 5, ..pp }.check().is_err()); // two 44 KiB C tiles
    /// let sub = GemmConfig { stages: 5, epilogue_subtile: 32, ..pp };
    /// assert!(sub.check().is_ok());
    /// assert_eq!(sub.shared_bytes(), 5 * (128 + 176) * 64 * 2 + 2 * 2 * 128 * 32 * 2);
    /// assert_eq!(sub.label(), "bn 176, 5 stages, persistent, tma store, pingpong, subtile 32");
    /// // an epilogue op in subtiles: bn ≤ 128 (wider tiles spill), either kernel
    /// use tilekit_ops::gemm_sm90::EpilogueOp;
    /// let op = EpilogueOp { alpha: true, ..EpilogueOp::default() };
    /// let coop = GemmConfig { pingpong: false, bn: 256, stages: 4, epilogue_subtile: 64, ..pp };
    /// assert!(coop.check().is_ok());
    /// let e = GemmConfig { op, ..coop }.check().unwrap_err().to_string();
    /// assert!(e.contains("64 with an epilogue op at bn 256") && e.contains("bn ≤ 128"), "{e}");
    /// assert!(GemmConfig { op, bn: 128, stages: 6, ..coop }.check().is_ok());
    /// ```
    pub epilogue_subtile: i64,
}

/// Shared buffers per C tile of a subtiled TMA-store epilogue ([`GemmConfig::epilogue_subtile`]):
/// subtile `j` is written into buffer `j mod 2` while the bulk store of subtile `j − 1` still
/// reads the other one; before rewriting a buffer its storing thread waits
/// `cp.async.bulk.wait_group.read 1` (all but the last store have read their shared memory).
///
/// ```
/// assert_eq!(tilekit_ops::gemm_sm90::C_SUB_BUFFERS, 2);
/// ```
pub const C_SUB_BUFFERS: i64 = 2;

impl Default for GemmConfig {
    fn default() -> Self {
        GemmConfig {
            input: ScalarType::BF16,
            output: ScalarType::BF16,
            bn: 128,
            stages: 4,
            overlap: false,
            persistent: false,
            raster: Raster::Linear,
            epilogue: Epilogue::Registers,
            a_major: Major::K,
            b_major: Major::K,
            op: EpilogueOp { alpha: false, beta: false, bias: None, act: Activation::None },
            split_k: 1,
            batched: false,
            cluster: 1,
            consumers: 2,
            pingpong: false,
            epilogue_subtile: 0,
        }
    }
}

impl GemmConfig {
    /// A short name of the configuration (for benchmark tables).
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::{Epilogue, GemmConfig, Raster};
    /// assert_eq!(GemmConfig::default().label(), "bn 128, 4 stages");
    /// let p = GemmConfig { overlap: true, persistent: true, raster: Raster::Grouped(8), epilogue: Epilogue::Tma, ..GemmConfig::default() };
    /// assert_eq!(p.label(), "bn 128, 4 stages, overlap, persistent, grouped 8, tma store");
    /// ```
    pub fn label(&self) -> String {
        let mut s = format!("bn {}, {} stages", self.bn, self.stages);
        if self.overlap {
            s += ", overlap";
        }
        if self.persistent {
            s += ", persistent";
        }
        match self.raster {
            Raster::Linear => {}
            Raster::Grouped(g) => s += &format!(", grouped {g}"),
            Raster::Hilbert => s += ", hilbert",
        }
        if self.epilogue == Epilogue::Tma {
            s += ", tma store";
        }
        if self.a_major == Major::MN {
            s += ", A MN-major";
        }
        if self.b_major == Major::MN {
            s += ", B MN-major";
        }
        let op = &self.op;
        for (on, what) in
            [(op.alpha, ", alpha"), (op.beta, ", beta·C"), (op.bias.is_some(), ", bias")]
        {
            if on {
                s += what;
            }
        }
        match op.act {
            Activation::None => {}
            Activation::Relu => s += ", relu",
            Activation::Gelu => s += ", gelu",
        }
        if self.split_k > 1 {
            s += &format!(", split k {}", self.split_k);
        }
        if self.batched {
            s += ", batched";
        }
        if self.cluster > 1 {
            s += &format!(", cluster {}", self.cluster);
        }
        if self.consumers != 2 {
            s += &format!(", bm {}", self.bm());
        }
        if self.pingpong {
            s += ", pingpong";
        }
        if self.epilogue_subtile > 0 {
            s += &format!(", subtile {}", self.epilogue_subtile);
        }
        s
    }

    /// Rows of C per block: [`WG_ROWS`] per consumer warpgroup (128 with the default two, 64
    /// with one).
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::GemmConfig;
    /// let one = GemmConfig { consumers: 1, ..GemmConfig::default() };
    /// assert_eq!((GemmConfig::default().bm(), one.bm()), (128, 64));
    /// assert_eq!(one.label(), "bn 128, 4 stages, bm 64");
    /// ```
    pub fn bm(&self) -> i64 {
        WG_ROWS * self.consumers
    }

    /// Threads per block: a producer warpgroup and [`GemmConfig::consumers`] consumer
    /// warpgroups of 128.
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::GemmConfig;
    /// assert_eq!(GemmConfig::default().threads(), 384);
    /// assert_eq!(GemmConfig { consumers: 1, ..GemmConfig::default() }.threads(), 256);
    /// ```
    pub fn threads(&self) -> u32 {
        (128 * (1 + self.consumers.clamp(1, 2))) as u32
    }

    /// Bytes of shared memory: the ring's tiles, and with [`Epilogue::Tma`] the C tile
    /// (`bm × bn` of the output type, [`GemmConfig::bm`]; one per consumer warpgroup with
    /// [`GemmConfig::pingpong`]) or, with [`GemmConfig::epilogue_subtile`] `s`, its
    /// [`C_SUB_BUFFERS`] buffers of `bm × s`.
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::{Epilogue, GemmConfig};
    /// let c = GemmConfig { epilogue: Epilogue::Tma, ..GemmConfig::default() };
    /// assert_eq!(c.shared_bytes(), 4 * (128 * 64 + 128 * 64) * 2 + 128 * 128 * 2);
    /// let one = GemmConfig { consumers: 1, ..c };
    /// assert_eq!(one.shared_bytes(), 4 * (64 * 64 + 128 * 64) * 2 + 64 * 128 * 2);
    /// let pp = GemmConfig { pingpong: true, persistent: true, ..c };
    /// assert_eq!(pp.shared_bytes(), 4 * (128 * 64 + 128 * 64) * 2 + 2 * 128 * 128 * 2);
    /// let sub = GemmConfig { epilogue_subtile: 32, stages: 6, ..pp };
    /// assert_eq!(sub.shared_bytes(), 6 * (128 * 64 + 128 * 64) * 2 + 2 * 2 * 128 * 32 * 2);
    /// ```
    pub fn shared_bytes(&self) -> i64 {
        let bm = self.bm();
        let ring =
            self.stages * (bm * self.bk() + self.bn * self.bk()) * self.input.size_bytes() as i64;
        match self.epilogue {
            Epilogue::Registers => ring,
            Epilogue::Tma => {
                let tiles = if self.pingpong { 2 } else { 1 };
                let width = match self.epilogue_subtile {
                    0 => self.bn,
                    s => C_SUB_BUFFERS * s,
                };
                ring + tiles * bm * width * self.output.size_bytes() as i64
            }
        }
    }

    /// The registers a thread of the producer warpgroup and of a consumer warpgroup keep after
    /// `setmaxnreg` (the block starts with 65536 / threads each): two consumers 40 and 232
    /// (128·40 + 256·232 = 384·168), a ping-pong tile wider than 128 columns 24 and 240 (its
    /// `bn` accumulators; 128·24 + 256·240 = 64512); one consumer 40 and 248 (the count it
    /// starts with, no increase).
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::GemmConfig;
    /// let c = GemmConfig::default();
    /// assert_eq!(c.registers(), (40, 232));
    /// let pp = GemmConfig { pingpong: true, persistent: true, bn: 176, ..c };
    /// assert_eq!(pp.registers(), (24, 240));
    /// assert_eq!(GemmConfig { bn: 128, ..pp }.registers(), (40, 232));
    /// assert_eq!(GemmConfig { consumers: 1, ..c }.registers(), (40, 248));
    /// ```
    pub fn registers(&self) -> (u32, u32) {
        if self.consumers == 1 {
            (40, 248)
        } else if self.pingpong && self.bn > 128 {
            (24, 240)
        } else {
            (40, 232)
        }
    }

    /// The tensor-map params of C the kernel declares (each bound to a map over C, the same
    /// [`TensorMapArg`](tilekit_ir::tma::TensorMapArg): the kernel fixes the boxes): none with
    /// [`Epilogue::Registers`]; `cm` (boxes of 128 bytes of C); and `cm_tail` where `bn` is not
    /// a multiple of 128 bytes of C — the rest of the tile in boxes of 64 or 32 bytes.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::gemm_sm90::{Epilogue, GemmConfig};
    /// let tma = GemmConfig { epilogue: Epilogue::Tma, ..GemmConfig::default() };
    /// assert_eq!(tma.c_maps(), ["cm"]);
    /// assert_eq!(GemmConfig { bn: 176, ..tma }.c_maps(), ["cm", "cm_tail"]); // 64 + 64 + 3 × 16
    /// assert_eq!(GemmConfig { bn: 160, output: ScalarType::F32, ..tma }.c_maps(), ["cm"]);
    /// // subtiles (GemmConfig::epilogue_subtile): the kinds of box they are stored in, widest
    /// // first — bn 176 in 32-column subtiles: 5 boxes of 64 bytes, then one of 32
    /// let sub = GemmConfig { bn: 176, epilogue_subtile: 32, ..tma };
    /// assert_eq!(sub.c_maps(), ["cm", "cm_tail"]);
    /// assert_eq!(GemmConfig { epilogue_subtile: 64, ..tma }.c_maps(), ["cm"]);
    /// assert!(GemmConfig::default().c_maps().is_empty());
    /// ```
    pub fn c_maps(&self) -> &'static [&'static str] {
        let ob = self.output.size_bytes().max(1) as i64;
        let cw = 128 / ob;
        match self.epilogue {
            Epilogue::Registers => &[],
            Epilogue::Tma if self.epilogue_subtile > 0 => {
                match c_sub_kinds(ob, self.bm(), self.bn, self.epilogue_subtile).len() {
                    1 => &["cm"],
                    _ => &["cm", "cm_tail"],
                }
            }
            Epilogue::Tma if self.bn % cw == 0 => &["cm"],
            Epilogue::Tma => &["cm", "cm_tail"],
        }
    }

    /// K per stage: one 128-byte swizzle row of the input type (64 of f16 / bf16, 32 of f32).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::gemm_sm90::GemmConfig;
    /// assert_eq!(GemmConfig::default().bk(), 64);
    /// assert_eq!(GemmConfig { input: ScalarType::F32, output: ScalarType::F32, ..GemmConfig::default() }.bk(), 32);
    /// ```
    pub fn bk(&self) -> i64 {
        128 / self.input.size_bytes() as i64
    }

    /// Types, tile width, stages and raster group; a named error otherwise.
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::{GemmConfig, Raster};
    /// use tilekit_ir::{wgmma::Major, ScalarType};
    /// use tilekit_ops::gemm_sm90::Epilogue;
    /// // bn: any multiple of 16 up to 256 with K-major B and the register epilogue
    /// assert!(GemmConfig { bn: 144, ..GemmConfig::default() }.check().is_ok());
    /// let e = GemmConfig { bn: 72, ..GemmConfig::default() }.check().unwrap_err();
    /// assert!(e.to_string().contains("bn = 72") && e.to_string().contains("multiple of 16"), "{e}");
    /// // B MN-major: whole 64-column slabs; the TMA store takes any width (narrower boxes last)
    /// assert!(GemmConfig { bn: 176, b_major: Major::MN, ..GemmConfig::default() }.check().is_err());
    /// let tma = GemmConfig { bn: 80, epilogue: Epilogue::Tma, ..GemmConfig::default() };
    /// assert!(tma.check().is_ok());
    /// assert!(GemmConfig { stages: 7, bn: 256, ..GemmConfig::default() }.check().is_err()); // 336 KiB
    /// assert!(GemmConfig { raster: Raster::Grouped(0), ..GemmConfig::default() }.check().is_err());
    /// assert!(GemmConfig { cluster: 2, ..GemmConfig::default() }.check().is_ok());
    /// assert!(GemmConfig { cluster: 4, ..GemmConfig::default() }.check().is_err());
    /// assert!(GemmConfig { cluster: 2, raster: Raster::Hilbert, ..GemmConfig::default() }.check().is_err());
    /// let e = GemmConfig { consumers: 3, ..GemmConfig::default() }.check().unwrap_err();
    /// assert!(e.to_string().contains("consumers = 3"), "{e}");
    /// // one consumer: 64-row tiles, so 5 stages of bn 256 fit (5 × 40 KiB; 5 × 48 KiB do not)
    /// assert!(GemmConfig { stages: 5, bn: 256, ..GemmConfig::default() }.check().is_err());
    /// assert!(GemmConfig { consumers: 1, stages: 5, bn: 256, ..GemmConfig::default() }.check().is_ok());
    /// // ping-pong: persistent, two consumers, bn ≤ 208 (≤ 128 with an epilogue op)
    /// let pp = GemmConfig { pingpong: true, persistent: true, ..GemmConfig::default() };
    /// assert!(pp.check().is_ok());
    /// let e = GemmConfig { persistent: false, ..pp }.check().unwrap_err();
    /// assert!(e.to_string().contains("pingpong") && e.to_string().contains("persistent"), "{e}");
    /// assert!(GemmConfig { bn: 176, epilogue: Epilogue::Tma, stages: 3, ..pp }.check().is_ok());
    /// let e = GemmConfig { bn: 256, ..pp }.check().unwrap_err().to_string();
    /// assert!(e.contains("bn 256") && e.contains("bn ≤ 208"), "{e}");
    /// ```
    pub fn check(&self) -> Result<()> {
        let op = "gemm_sm90";
        if !(1..=2).contains(&self.consumers) {
            return Err(OpsError::invalid(
                op,
                "consumers",
                self.consumers,
                "1 (64-row tiles, 256 threads) or 2 (128-row tiles, 384 threads) warpgroups",
            ));
        }
        if !matches!(self.input, ScalarType::F16 | ScalarType::BF16 | ScalarType::F32) {
            return Err(OpsError::invalid(op, "input type", self.input, "f16, bf16 or f32 (tf32)"));
        }
        if self.input == ScalarType::F32 && (self.a_major != Major::K || self.b_major != Major::K) {
            return Err(OpsError::invalid(
                op,
                "operand majors",
                format!("A {:?}, B {:?}", self.a_major, self.b_major),
                "K-major for f32 inputs (tf32 wgmma has no transpose)",
            ));
        }
        if self.output != self.input && self.output != ScalarType::F32 {
            return Err(OpsError::invalid(
                op,
                "output type",
                self.output,
                format!("{} (the input type) or f32", self.input),
            ));
        }
        if let Some(t) = self.op.bias {
            if t != self.output && t != ScalarType::F32 {
                return Err(OpsError::invalid(
                    op,
                    "bias type",
                    t,
                    format!("{} (the output type) or f32", self.output),
                ));
            }
        }
        if !(16..=256).contains(&self.bn) || self.bn % 16 != 0 {
            return Err(OpsError::invalid(
                op,
                "bn",
                self.bn,
                "a multiple of 16 in 16..=256 (the wgmma's N; a pair's half of B whole 8-row \
                 swizzle atoms)",
            ));
        }
        if self.b_major == Major::MN && self.bn % SLAB != 0 {
            return Err(OpsError::invalid(
                op,
                "bn",
                self.bn,
                format!(
                    "a multiple of {SLAB} (64, 128, 192 or 256) with B MN-major (its tile is \
                     slabs of {SLAB} N-columns, one 128-byte swizzle row each); K-major B \
                     takes any multiple of 16"
                ),
            ));
        }
        if let Raster::Grouped(g) = self.raster {
            if !(1..=65535).contains(&g) {
                return Err(OpsError::invalid(op, "raster group", g, "1..=65535 M-tiles"));
            }
        }
        if self.epilogue_subtile != 0 {
            let ob = self.output.size_bytes() as i64;
            let sub = self.epilogue_subtile;
            let bytes = sub * ob;
            if self.epilogue != Epilogue::Tma
                || sub < 0
                || sub > self.bn
                || !(bytes == 32 || bytes == 64 || bytes % 128 == 0)
            {
                return Err(OpsError::invalid(
                    op,
                    "epilogue_subtile",
                    sub,
                    format!(
                        "0 (the whole C tile at once), or with the TMA-store epilogue a width \
                         ≤ bn ({}) of one 32- or 64-byte swizzle row of C or a multiple of 128 \
                         bytes: {} columns of {} (epilogue {:?})",
                        self.bn,
                        [32 / ob, 64 / ob, 128 / ob, 256 / ob]
                            .iter()
                            .filter(|&&w| w <= self.bn)
                            .map(|w| w.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                            + ", …",
                        self.output,
                        self.epilogue
                    ),
                ));
            }
            if !self.op.is_identity() && self.bn > 128 {
                // (ptxas 13.0: the cooperative kernel's op in subtiles spills from bn 144 with
                // 128-byte subtiles and at bn 240 / 256 with any; ping-pong takes an op at bn
                // ≤ 128 anyway)
                return Err(OpsError::invalid(
                    op,
                    "epilogue_subtile",
                    format!("{sub} with an epilogue op at bn {}", self.bn),
                    "0 (the whole C tile), or an op-free product, or bn ≤ 128 (the op's loads \
                     and addresses beside a wider tile's accumulators spill)",
                ));
            }
        }
        if !(2..=12).contains(&self.stages) || self.shared_bytes() > 227 * 1024 {
            return Err(OpsError::invalid(
                op,
                "stages",
                self.stages,
                format!(
                    "2..=12 whose tiles fit 227 KiB ({} KiB a stage, {} KiB besides)",
                    (self.bm() + self.bn) * 128 / 1024,
                    (self.shared_bytes() - self.stages * (self.bm() + self.bn) * 128) / 1024
                ),
            ));
        }
        if !(1..=MAX_SPLIT_K).contains(&self.split_k) {
            return Err(OpsError::invalid(
                op,
                "split_k",
                self.split_k,
                format!("1..={MAX_SPLIT_K}"),
            ));
        }
        if self.split_k > 1
            && (self.epilogue != Epilogue::Registers
                || !self.op.is_identity()
                || self.output != ScalarType::F32)
        {
            return Err(OpsError::invalid(
                op,
                "split_k",
                self.split_k,
                "1 unless the epilogue is the register one, the product plain and the output f32 \
                 (the split's partial products go to an f32 workspace)",
            ));
        }
        if self.split_k > 1 && self.batched {
            return Err(OpsError::invalid(
                op,
                "split_k",
                self.split_k,
                "1 for a batched kernel (a batch's entries are the extra blocks a split would add)",
            ));
        }
        if !(1..=2).contains(&self.cluster) {
            return Err(OpsError::invalid(op, "cluster", self.cluster, "1 or 2 blocks"));
        }
        if self.cluster > 1 && (self.split_k > 1 || self.raster == Raster::Hilbert) {
            return Err(OpsError::invalid(
                op,
                "cluster",
                self.cluster,
                format!(
                    "1 with {} (a cluster walks pairs of M-tiles in linear or grouped order, \
                     unsplit)",
                    if self.split_k > 1 { "a split K" } else { "Hilbert order" }
                ),
            ));
        }
        if self.pingpong {
            let why = if !self.persistent {
                Some("a persistent walk (persistent = true): the warpgroups take turns over it")
            } else if self.consumers != 2 {
                Some("two consumer warpgroups (consumers = 2)")
            } else if self.bn > PINGPONG_MAX_BN {
                Some(
                    "bn ≤ 208: one warpgroup holds a 128 × bn tile's bn accumulators a thread \
                     (240 registers; wider tiles spill)",
                )
            } else if self.bn > 128 && !self.op.is_identity() {
                Some(
                    "bn ≤ 128 with an epilogue op (wider tiles spill the op's loads and \
                     addresses beside their accumulators), or the plain product",
                )
            } else if self.split_k > 1 {
                Some("no split K (split_k = 1)")
            } else if self.batched {
                Some("an unbatched kernel (batched = false)")
            } else if self.cluster > 1 {
                Some("no cluster (cluster = 1)")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(OpsError::invalid(
                    op,
                    "pingpong",
                    format!(
                        "true with persistent {}, consumers {}, bn {}, split_k {}, batched {}, \
                         cluster {}",
                        self.persistent,
                        self.consumers,
                        self.bn,
                        self.split_k,
                        self.batched,
                        self.cluster
                    ),
                    format!("false, or true with {why}"),
                ));
            }
        }
        Ok(())
    }
}

/// The launch grid of a [`build_gemm_sm90`] kernel for C of `m × n` on a device of `sms`
/// multiprocessors ([`Backend::multiprocessors`](crate::backend::Backend::multiprocessors)):
/// persistent, `min(tiles, sms)` blocks in x; otherwise one block per tile, `(⌈n/bn⌉, ⌈m/bm⌉)`
/// ([`GemmConfig::bm`]: 128, or 64 with one consumer) in linear order and `(tiles, 1)` in any other. With [`GemmConfig::cluster`] 2, pairs of
/// blocks over pairs of tiles (`⌈tiles_m / 2⌉ · tiles_n` pairs, times the batch):
/// `2 · min(pairs, ⌊sms / 2⌋)` blocks persistent, else `2 · pairs`, in x. A named error for a
/// bad config or an empty or too large problem. (One C: [`launch_grid_batched`] with a batch of
/// 1.)
///
/// ```
/// use tilekit_ops::gemm_sm90::{launch_grid, GemmConfig, Raster};
/// let cfg = GemmConfig::default();
/// assert_eq!(launch_grid(&cfg, 1000, 500, 132).unwrap(), [4, 8, 1]);
/// let p = GemmConfig { persistent: true, raster: Raster::Grouped(8), ..cfg };
/// assert_eq!(launch_grid(&p, 8192, 8192, 132).unwrap(), [132, 1, 1]);
/// assert_eq!(launch_grid(&p, 200, 136, 132).unwrap(), [4, 1, 1]); // 2 × 2 tiles
/// assert!(launch_grid(&cfg, 0, 64, 132).is_err());
/// let pair = GemmConfig { cluster: 2, ..p };
/// assert_eq!(launch_grid(&pair, 8192, 8192, 132).unwrap(), [132, 1, 1]);
/// assert_eq!(launch_grid(&pair, 300, 136, 132).unwrap(), [8, 1, 1]); // 3 × 2 tiles: 2 × 2 pairs
/// assert_eq!(launch_grid(&GemmConfig { cluster: 2, ..cfg }, 300, 136, 132).unwrap(), [8, 1, 1]);
/// // one consumer warpgroup: 64-row tiles, twice the M-tiles
/// let one = GemmConfig { consumers: 1, ..cfg };
/// assert_eq!(launch_grid(&one, 1000, 500, 132).unwrap(), [4, 16, 1]);
/// assert_eq!(launch_grid(&GemmConfig { consumers: 1, ..p }, 64, 8192, 132).unwrap(), [64, 1, 1]);
/// ```
pub fn launch_grid(cfg: &GemmConfig, m: i64, n: i64, sms: u32) -> Result<[u32; 3]> {
    launch_grid_batched(cfg, 1, m, n, sms)
}

/// [`launch_grid`] for `batch` entries of C, each `m × n` ([`GemmConfig::batched`]; a
/// batch of 1 for the plain kernel): persistent, `min(batch · tiles, sms)` blocks; one block
/// per tile, `(⌈n/bn⌉, ⌈m/bm⌉, batch)` in linear order (batch at most 65535) and
/// `(batch · tiles, 1, 1)` in any other. A named error for a batch other than 1 of the plain
/// kernel.
///
/// ```
/// use tilekit_ops::gemm_sm90::{launch_grid_batched, GemmConfig, Raster};
/// let cfg = GemmConfig { batched: true, ..GemmConfig::default() };
/// assert_eq!(launch_grid_batched(&cfg, 64, 512, 512, 132).unwrap(), [4, 4, 64]);
/// let p = GemmConfig { persistent: true, raster: Raster::Grouped(8), ..cfg };
/// assert_eq!(launch_grid_batched(&p, 64, 512, 512, 132).unwrap(), [132, 1, 1]); // 1024 tiles
/// assert_eq!(launch_grid_batched(&p, 3, 200, 136, 132).unwrap(), [12, 1, 1]);
/// let e = launch_grid_batched(&GemmConfig::default(), 2, 64, 64, 132).unwrap_err();
/// assert!(e.to_string().contains("batch"), "{e}");
/// ```
pub fn launch_grid_batched(
    cfg: &GemmConfig,
    batch: i64,
    m: i64,
    n: i64,
    sms: u32,
) -> Result<[u32; 3]> {
    cfg.check()?;
    let op = "gemm_sm90";
    if m < 1 || n < 1 {
        return Err(OpsError::invalid(op, "shape of C", format!("{m}×{n}"), "M, N ≥ 1"));
    }
    if batch < 1 || (!cfg.batched && batch != 1) {
        return Err(OpsError::invalid(
            op,
            "batch",
            batch,
            if cfg.batched { "≥ 1" } else { "1 (GemmConfig::batched is off)" },
        ));
    }
    let bm = cfg.bm();
    let (tm, tn) = ((m + bm - 1) / bm, (n + cfg.bn - 1) / cfg.bn);
    let tiles = tm * tn * cfg.split_k;
    let linear = !cfg.persistent && cfg.raster == Raster::Linear;
    if tiles.saturating_mul(batch) > i32::MAX as i64
        || tm * cfg.split_k > 65535
        || (linear && batch > 65535)
    {
        return Err(OpsError::invalid(
            op,
            "shape of C",
            format!("{batch}×{m}×{n}"),
            "fewer than 2³¹ tiles in all, 65535 M-tiles, and (one block per tile in linear \
             order) 65535 batch entries",
        ));
    }
    if cfg.cluster > 1 {
        let pairs = (tm + 1) / 2 * tn * batch;
        let clusters = if cfg.persistent { pairs.min((sms / 2).max(1) as i64) } else { pairs };
        return Ok([(2 * clusters) as u32, 1, 1]);
    }
    let all = tiles * batch;
    Ok(if cfg.persistent {
        [all.min(sms.max(1) as i64) as u32, 1, 1]
    } else if linear {
        [tn as u32, (tm * cfg.split_k) as u32, batch as u32]
    } else {
        [all as u32, 1, 1]
    })
}

/// Threads per block of [`build_split_reduce`].
const REDUCE_THREADS: u32 = 256;

/// The second half of a split-K GEMM ([`GemmConfig::split_k`]): `C[i][j] = Σ_s ws[s][i][j]`,
/// the partial products summed in f32 (in split order) and converted to C's type. Params: `ws`
/// (rank-3 f32 tensor `split × M × N'`, `N' ≥ N`), `c` (rank-2 tensor `M × N` of `output`).
/// One thread per element of C, consecutive threads along a row; launch on
/// [`split_reduce_grid`].
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::gemm_sm90::build_split_reduce(ScalarType::BF16).unwrap();
/// assert!(k.to_string().contains("cvt"));
/// assert!(tilekit_ops::gemm_sm90::build_split_reduce(ScalarType::I32).is_err());
/// ```
pub fn build_split_reduce(output: ScalarType) -> Result<Kernel> {
    if !matches!(output, ScalarType::F32 | ScalarType::F16 | ScalarType::BF16) {
        return Err(OpsError::invalid(
            "gemm split reduce",
            "output type",
            output,
            "f32, f16 or bf16",
        ));
    }
    let b = KernelBuilder::new("gemm_split_reduce", [REDUCE_THREADS, 1, 1])?;
    let ws = b.tensor_param("ws", ScalarType::F32, 3)?;
    let c = b.tensor_param("c", output, 2)?;
    let (m, n) = (c.lengths[0].clone(), c.lengths[1].clone());
    let idx = b.block_id(Axis::X) * lit(REDUCE_THREADS as i64) + b.thread_id(Axis::X);
    let (i, j) = (idx.clone() / n.clone(), idx.clone() % n.clone());
    let inside = b.cmp(CmpOp::Lt, &idx, &(m * n))?;
    b.if_then(&inside, |b| {
        let at = i.clone() * ws.strides[1].clone() + j.clone() * ws.strides[2].clone();
        let zero = b.f32(0.0);
        let sum = b.for_range(&lit(0), &ws.lengths[0], &lit(1), &[zero], |b, s, acc| {
            let v = b.load(ws.mem, &(s * ws.strides[0].clone() + at.clone()), 1, None)?.remove(0);
            Ok(vec![b.binary(BinOp::Add, &acc[0], &v)?])
        })?;
        let out = b.cvt(&sum[0], output)?;
        b.store(
            c.mem,
            &(i.clone() * c.strides[0].clone() + j.clone() * c.strides[1].clone()),
            &[out],
            None,
        )
    })?;
    Ok(b.finish()?)
}

/// The grid of [`build_split_reduce`] for an `m × n` C: one thread per element.
///
/// ```
/// assert_eq!(tilekit_ops::gemm_sm90::split_reduce_grid(64, 8192).unwrap(), [2048, 1, 1]);
/// assert!(tilekit_ops::gemm_sm90::split_reduce_grid(0, 8).is_err());
/// ```
pub fn split_reduce_grid(m: i64, n: i64) -> Result<[u32; 3]> {
    let elems = m.checked_mul(n).filter(|&e| e >= 1 && e <= i32::MAX as i64).ok_or_else(|| {
        OpsError::invalid("gemm split reduce", "shape of C", format!("{m}×{n}"), "1..2³¹ elements")
    })?;
    Ok([((elems + REDUCE_THREADS as i64 - 1) / REDUCE_THREADS as i64) as u32, 1, 1])
}

/// A column box of the shared C tile, one TMA store each: its first column in the tile, its
/// width (one swizzle row of the output type), its swizzle and its first element in the tile.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CBox {
    col: i64,
    width: i64,
    swizzle: HopperSwizzle,
    at: i64,
}

/// The boxes of a `bm × bn` C tile of `ob`-byte outputs: `⌊bn / cw⌋` boxes of `cw` = 128 bytes
/// (the 128-byte swizzle), then the rest of the width (a multiple of 32 bytes: 16 columns of
/// a 16-bit C) in the widest boxes of one swizzle row that divide it — one of 64 bytes
/// (64-byte swizzle), or 32-byte ones (32-byte swizzle; 96 bytes are three). Box `q` holds
/// its `bm` rows at `at`, the boxes one after another.
fn c_boxes(ob: i64, bm: i64, bn: i64) -> Vec<CBox> {
    let cw = 128 / ob;
    let full = bn / cw;
    let mut boxes: Vec<CBox> = (0..full)
        .map(|j| CBox { col: j * cw, width: cw, swizzle: HopperSwizzle::B128, at: j * bm * cw })
        .collect();
    let tail = bn % cw;
    if tail > 0 {
        let swizzle = if tail * ob % 64 == 0 { HopperSwizzle::B64 } else { HopperSwizzle::B32 };
        let w = swizzle.row_bytes() / ob;
        boxes.extend((0..tail / w).map(|q| CBox {
            col: full * cw + q * w,
            width: w,
            swizzle,
            at: full * bm * cw + q * bm * w,
        }));
    }
    boxes
}

/// The box of `boxes` that holds column `col` of the tile.
fn c_box_of(boxes: &[CBox], col: i64) -> CBox {
    *boxes.iter().find(|x| (x.col..x.col + x.width).contains(&col)).expect("col < bn")
}

/// The column subtiles of a `bn`-wide C tile stored `sub` columns at a time
/// ([`GemmConfig::epilogue_subtile`]): `(first column, width)`, the last `bn mod sub` wide.
fn c_subtiles(bn: i64, sub: i64) -> Vec<(i64, i64)> {
    (0..bn).step_by(sub.max(1) as usize).map(|c| (c, sub.min(bn - c))).collect()
}

/// The kinds of box (swizzle, width) the subtiles of a `bm × bn` tile are stored in, each
/// subtile's shared buffer laid out as [`c_boxes`] of its width: widest first (the first
/// through the map `cm`, a second through `cm_tail`; with the widths
/// [`GemmConfig::check`] takes, at most two kinds).
fn c_sub_kinds(ob: i64, bm: i64, bn: i64, sub: i64) -> Vec<(HopperSwizzle, i64)> {
    let mut kinds: Vec<(HopperSwizzle, i64)> = Vec::new();
    for (_, w) in c_subtiles(bn, sub) {
        for bx in c_boxes(ob, bm, w) {
            if !kinds.contains(&(bx.swizzle, bx.width)) {
                kinds.push((bx.swizzle, bx.width));
            }
        }
    }
    kinds.sort_by_key(|k| -k.1);
    kinds
}

/// Element of the shared C tile ([`c_boxes`]) where consumer thread `t` (0..128 · consumers)
/// puts accumulator pair `i` (registers `i`, `i + 1`): the arithmetic the epilogue emits, on
/// the host. Per box of width `w` and 16-byte chunks of `ce` elements: a thread's rows have
/// the swizzle phase `x / (128 / row bytes)` (x = lane / 4, the row mod 8: 8 rows of 128
/// bytes, 4 of 64 or 2 of 32 in a phase), its column pair's chunk is XORed with it.
fn c_tile_offset(ob: i64, bm: i64, bn: i64, t: i64, i: usize) -> i64 {
    let ce = 16 / ob;
    let (half, warp, lane) = (t / 128, t % 128 / 32, t % 32);
    let (pair_col, x) = (lane % 4 * 2, lane / 4);
    let (r0, c0) = acc_coord(0, i);
    let (r0, c0) = (r0 as i64, c0 as i64);
    let bx = c_box_of(&c_boxes(ob, bm, bn), c0);
    let w = bx.width;
    let y = (pair_col / ce) ^ (x / (128 / bx.swizzle.row_bytes()));
    let base = (half * 64 + warp * 16 + x) * w + pair_col % ce;
    base + bx.at + r0 * w + (y ^ ((c0 - bx.col) / ce)) * ce
}

/// The epilogue's offsets agree with the boxes' layout descriptors (the ones C's tensor maps
/// are derived from) for every thread and accumulator pair; a named error otherwise.
fn check_c_tile(out: ScalarType, (bm, bn): (i64, i64)) -> Result<()> {
    let ob = out.size_bytes() as i64;
    let boxes = c_boxes(ob, bm, bn);
    let regs = (bn / 2) as usize; // m64nBN: BN / 2 f32 registers a thread
    for t in 0..2 * bm {
        for i in (0..regs).step_by(2) {
            let (r0, c0) = acc_coord((t % 128) as usize, i);
            let (row, col) = (t / 128 * 64 + r0 as i64, c0 as i64);
            let bx = c_box_of(&boxes, col);
            let layout = bx.swizzle.descriptor(bm, bx.width, ob)?;
            let want = bx.at
                + layout
                    .calculate_offset(&[row, col - bx.col])
                    .map_err(tilekit_ir::IrError::from)?;
            let got = c_tile_offset(ob, bm, bn, t, i);
            if got != want {
                return Err(OpsError::invalid(
                    "gemm_sm90 C tile",
                    format!("offset of thread {t}, accumulator {i}"),
                    got,
                    format!("{want} (the swizzled layout's)"),
                ));
            }
        }
    }
    Ok(())
}

/// What the tile walk runs per tile: `(builder, m0, n0, it, slices)`.
type TileBody<'a> = dyn Fn(&KernelBuilder, Val, Val, Val, &Slices) -> IrResult<()> + 'a;

/// The k-slices of one tile of the walk: the first, how many, (split K) the split's index,
/// (batched) the tile's batch entry, and (a ping-pong consumer's walk) how many tiles this
/// warpgroup computed before it.
struct Slices {
    first: Val,
    count: Val,
    split: Option<Val>,
    entry: Option<Val>,
    nth: Option<Val>,
}

/// The warp-specialised TMA + wgmma GEMM (see the [module docs](self)). Params: `a`, `b`
/// (pointers; K-major: A is M×K, B is N×K, both row-major; MN-major: A is K×M, B is K×N,
/// row-major), `am`, `bm` (their tensor maps over that storage: K-major boxes of 64 × bm
/// ([`GemmConfig::bm`]) and 64 × BN, MN-major boxes of 64 × 64, with the 128-byte swizzle), `c`
/// (a 2-D tensor M×N of the output type, any row stride), with [`Epilogue::Tma`] also `cm` (C's
/// tensor map: boxes of 128 bytes × bm rows, the 128-byte swizzle; [`GemmConfig::c_maps`]
/// names all of C's maps, whose boxes depend on the width and the subtile), `k` (i32), with [`Raster::Hilbert`] also `order` (i32
/// pointer: [`hilbert_order`] of the tile grid). Launch on [`launch_grid`].
/// [`GemmConfig::batched`]: `c` is `batch × M × N`, the maps 3-D (entry last, innermost first),
/// i32 `a_batch_step`, `b_batch_step`; launch on [`launch_grid_batched`].
///
/// ```
/// use tilekit_ops::gemm_sm90::{build_gemm_sm90, Epilogue, GemmConfig};
/// let k = build_gemm_sm90(GemmConfig::default()).unwrap();
/// assert_eq!(k.block_dim, [384, 1, 1]);
/// assert!(k.to_string().contains("wgmma.mma_async"));
/// let t = build_gemm_sm90(GemmConfig { persistent: true, epilogue: Epilogue::Tma, ..GemmConfig::default() });
/// assert!(t.unwrap().to_string().contains("cp.async.bulk.tensor.2d.global.shared cm"));
/// let bt = build_gemm_sm90(GemmConfig { batched: true, ..GemmConfig::default() }).unwrap();
/// assert!(bt.params.iter().any(|p| p.name == "b_batch_step"));
/// assert_eq!(bt.tensors[0].rank, 3); // c: batch × M × N
/// // one consumer warpgroup: 256 threads, the consumers' named barrier of 128
/// let one = GemmConfig { consumers: 1, epilogue: Epilogue::Tma, ..GemmConfig::default() };
/// let k = build_gemm_sm90(one).unwrap();
/// assert_eq!(k.block_dim, [256, 1, 1]);
/// assert!(k.to_string().contains("bar.sync 1, 128"));
/// // ping-pong consumers: each warpgroup its own tile, C tile and named barrier
/// let pp = GemmConfig { pingpong: true, persistent: true, consumers: 2, ..one }; // TMA store
/// let text = build_gemm_sm90(pp).unwrap().to_string();
/// assert!(text.contains("bar.sync 1, 128") && text.contains("bar.sync 2, 128"));
/// ```
pub fn build_gemm_sm90(cfg: GemmConfig) -> Result<Kernel> {
    cfg.check()?;
    let (elem, bn, stages) = (cfg.input, cfg.bn, cfg.stages);
    let ty = WgmmaType::of(elem).expect("checked: f16, bf16 or f32 (tf32)");
    // K per stage: one 128-byte swizzle row (64 of 16-bit elements, 32 tf32)
    let bk = cfg.bk();
    let eb = elem.size_bytes() as i64;
    // rows of C per block (64 per consumer warpgroup) and the consumers' thread count
    let (bm, consumers) = (cfg.bm(), cfg.consumers);
    let cthreads = 128 * consumers;
    let b = KernelBuilder::new("gemm_sm90", [cfg.threads(), 1, 1])?;
    // a pair of blocks (cluster 2) on M-tiles 2p, 2p + 1 sharing B's tile
    let pair = cfg.cluster > 1;
    if pair {
        b.set_cluster_dim([cfg.cluster as u32, 1, 1])?;
    }
    let ga = b.ptr_param("a", elem)?;
    let gb = b.ptr_param("b", elem)?;
    // an MN-major operand's tile is slabs of SLAB MN-columns × BK K-rows (one 128-byte swizzle
    // row of MN each), one TMA box a slab: the map's box is derived from the slab's layout
    // (16-bit inputs only: f32 operands are K-major, checked)
    let slab = HopperSwizzle::B128.descriptor(bk, 128 / eb, eb)?;
    // batched: every map has a third dim, the batch entry (a box one entry deep)
    let boxd = |inner: i64, outer: i64| -> Vec<u32> {
        let mut d = vec![inner as u32, outer as u32];
        if cfg.batched {
            d.push(1);
        }
        d
    };
    let spec = |major: Major, rows: i64| match major {
        Major::K => TensorMapSpec::new(elem, &boxd(bk, rows), TmaSwizzle::B128, OobFill::Zero),
        Major::MN => TensorMapSpec::from_layout(elem, &boxd(SLAB, BK), &slab, OobFill::Zero),
    };
    let am = b.tensor_map_param("am", ga, spec(cfg.a_major, bm)?)?;
    // (a pair's blocks each load half of a K-major B tile: boxes of bn / 2 rows)
    let bmap = b.tensor_map_param("bm", gb, spec(cfg.b_major, bn / cfg.cluster)?)?;
    let c = b.tensor_param("c", cfg.output, if cfg.batched { 3 } else { 2 })?;
    // C's matrix dims (batched: dims 1, 2 of the `batch × M × N` tensor; dim 0 the entries)
    let cd = usize::from(cfg.batched);
    let (c_n, c_pitch) = (c.lengths[cd + 1].clone(), c.strides[cd].clone());
    // the C tile of the TMA epilogue: bn / cw column blocks of bm rows × 128 bytes, each the
    // box image of C's map with the 128-byte swizzle (a fragment row's 4 lanes fill one
    // 16-byte chunk, the 8 rows of a warp's store land in 8 different chunks: no conflicts)
    let ob = cfg.output.size_bytes() as i64;
    let cw = 128 / ob;
    let c_layout = HopperSwizzle::B128.descriptor(bm, cw, ob)?;
    let c_box = c_boxes(ob, bm, bn);
    // subtiled (epilogue_subtile > 0): buffers of bm × sub outputs, each subtile laid out as
    // the C tile of its width, stored through one map per kind of box (widest first)
    let sub = cfg.epilogue_subtile;
    let subtiled = cfg.epilogue == Epilogue::Tma && sub > 0;
    if subtiled {
        let mut widths: Vec<i64> = c_subtiles(bn, sub).iter().map(|st| st.1).collect();
        widths.dedup();
        for w in widths {
            check_c_tile(cfg.output, (bm, w))?;
        }
    } else if cfg.epilogue == Epilogue::Tma {
        check_c_tile(cfg.output, (bm, bn))?;
    }
    let sub_kinds = if subtiled { c_sub_kinds(ob, bm, bn, sub) } else { vec![] };
    if sub_kinds.len() > 2 {
        return Err(OpsError::invalid(
            "gemm_sm90",
            "epilogue_subtile",
            sub,
            "a width whose subtiles need at most two kinds of TMA box (GemmConfig::check)",
        ));
    }
    let mut sub_maps = Vec::with_capacity(sub_kinds.len());
    for (&(sw, w), name) in sub_kinds.iter().zip(["cm", "cm_tail"]) {
        let layout = sw.descriptor(bm, w, ob)?;
        let map = b.tensor_map_for_layout(name, c.mem, &boxd(w, bm), &layout, OobFill::Zero)?;
        sub_maps.push((sw, w, map));
    }
    let cmap = match cfg.epilogue {
        Epilogue::Registers => None,
        Epilogue::Tma if subtiled => None,
        Epilogue::Tma => {
            Some(b.tensor_map_for_layout("cm", c.mem, &boxd(cw, bm), &c_layout, OobFill::Zero)?)
        }
    };
    // a width not a multiple of cw: the rest of the tile in narrower boxes (`cm_tail`, over the
    // same C: boxes of one 64- or 32-byte swizzle row × bm, the layout of the last boxes)
    let tail_box = c_box.last().filter(|x| x.swizzle != HopperSwizzle::B128).copied();
    let tail_map = match (cfg.epilogue, tail_box) {
        (Epilogue::Tma, Some(tb)) if !subtiled => {
            let layout = tb.swizzle.descriptor(bm, tb.width, ob)?;
            let dims = boxd(tb.width, bm);
            Some(b.tensor_map_for_layout("cm_tail", c.mem, &dims, &layout, OobFill::Zero)?)
        }
        _ => None,
    };
    // pairs of columns stored together: unit column stride, even row stride (binding checks)
    c.descriptor(Some((2, 1)))?;
    let kk = b.scalar_param("k", ScalarType::I32)?;
    // batched: per operand, 1 (entry b reads its own entry) or 0 (a shared operand)
    let steps = if cfg.batched {
        let a = b.scalar_param("a_batch_step", ScalarType::I32)?;
        Some((a, b.scalar_param("b_batch_step", ScalarType::I32)?))
    } else {
        None
    };
    let order = match cfg.raster {
        Raster::Hilbert => Some(b.ptr_param("order", ScalarType::I32)?),
        _ => None,
    };
    // the epilogue's params, each only where its step is on
    let f32p = |on: bool, name: &str| on.then(|| b.scalar_param(name, ScalarType::F32)).transpose();
    let alpha = f32p(cfg.op.alpha, "alpha")?;
    let beta = f32p(cfg.op.beta, "beta")?;
    let bias = cfg.op.bias.map(|t| b.ptr_param("bias", t)).transpose()?;
    // v = act(α·acc + β·C[at] + bias[col]) in f32; `mask`: the element is inside C (the masked
    // loads of C and the bias read nothing outside it)
    let epilogue_op = |b: &KernelBuilder,
                       acc: &Val,
                       at: &Val,
                       col: &Val,
                       mask: &tilekit_ir::Pred|
     -> IrResult<Val> {
        let mut v = acc.clone();
        if let Some(alpha) = &alpha {
            v = b.binary(BinOp::Mul, &v, alpha)?;
        }
        if let Some(beta) = &beta {
            let old = b.load(c.mem, at, 1, Some(mask))?.remove(0);
            v = b.fma(beta, &b.cvt(&old, ScalarType::F32)?, &v)?;
        }
        if let Some(bias) = bias {
            let x = b.load(bias, col, 1, Some(mask))?.remove(0);
            v = b.binary(BinOp::Add, &v, &b.cvt(&x, ScalarType::F32)?)?;
        }
        match cfg.op.act {
            Activation::None => Ok(v),
            Activation::Relu => b.binary(BinOp::Max, &v, &b.f32(0.0)),
            Activation::Gelu => {
                // x / (1 + 2^(−2·log2 e · u)), u = √(2/π)·(x + 0.044715·x³)
                let x2 = b.binary(BinOp::Mul, &v, &v)?;
                let poly = b.fma(&x2, &b.f32((GELU_C * 0.044715) as f32), &b.f32(GELU_C as f32))?;
                let u = b.binary(BinOp::Mul, &v, &poly)?;
                let t =
                    b.binary(BinOp::Mul, &u, &b.f32((-2.0 * std::f64::consts::LOG2_E) as f32))?;
                let e = b.unary(UnOp::Exp2Approx, &t)?;
                let d = b.binary(BinOp::Add, &e, &b.f32(1.0))?;
                let r = b.unary(UnOp::RcpApprox, &d)?;
                b.binary(BinOp::Mul, &v, &r)
            }
        }
    };
    // the tiles: TMA box images with the 128-byte swizzle, and the wgmma views of them (a
    // consumer's A: 64 rows of M; MN-major, that is one slab; B MN-major: bn / SLAB slabs)
    let a_layout = match cfg.a_major {
        Major::K => HopperSwizzle::B128.descriptor(64, bk, eb)?,
        Major::MN => slab.clone(),
    };
    let b_layout = match cfg.b_major {
        Major::K => HopperSwizzle::B128.descriptor(bn, bk, eb)?,
        Major::MN => HopperSwizzle::B128.descriptor_atoms(BK, bn, eb)?,
    };
    let ma =
        SmemMatrix::from_layout(&a_layout, cfg.a_major, elem).map_err(tilekit_ir::IrError::from)?;
    let mb =
        SmemMatrix::from_layout(&b_layout, cfg.b_major, elem).map_err(tilekit_ir::IrError::from)?;
    let (a_elems, b_elems) = (bm * bk, bn * bk);
    let sa = b.shared("a_ring", elem, (stages * a_elems) as usize)?;
    let sb = b.shared("b_ring", elem, (stages * b_elems) as usize)?;
    // ping-pong: the two consumer warpgroups on different tiles, one C tile each
    let pingpong = cfg.pingpong;
    let c_tiles = if pingpong { 2 } else { 1 };
    // (subtiled: C_SUB_BUFFERS buffers of bm × sub per C tile)
    let c_width = if subtiled { C_SUB_BUFFERS * sub } else { bn };
    let sc = match cfg.epilogue {
        Epilogue::Registers => None,
        Epilogue::Tma => Some(b.shared("c_tile", cfg.output, (c_tiles * bm * c_width) as usize)?),
    };
    let ring = Ring::new(&b, stages, "full", "empty")?;
    let full = ring.full();
    // ping-pong: order[w] completes a phase when the other warpgroup has waited every stage of
    // its tile's mainloop (its 128 threads arrive): warpgroup w's next mainloop may start
    let order_bar = if pingpong { Some(b.mbarrier("wg_order", 2)?) } else { None };
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
    b.note(if pair {
        "gemm_sm90: the ring's barriers (full: the producer's TMA bytes, own A and both halves of B; empty: lane 0 of every consumer warp of both blocks of the pair)"
    } else {
        "gemm_sm90: the ring's barriers (full: the producer's TMA bytes; empty: one arrival per consumer thread)"
    });
    // a stage's releases: every consumer thread, or (a pair) lane 0 of each consumer warp of
    // both blocks, or (ping-pong) every thread of the one warpgroup that computes its tile
    let releases = if pair {
        2 * 4 * consumers
    } else if pingpong {
        128
    } else {
        cthreads
    };
    b.if_then(&first, |b| {
        ring.init(b, 1, releases)?;
        if let Some(order_bar) = order_bar {
            for w in 0..2 {
                b.mbarrier_init(order_bar, &lit(w), &lit(128))?;
            }
        }
        b.fence_mbarrier_init();
        Ok(())
    })?;
    if pair {
        // both blocks' barriers are initialised before either multicasts or arrives on them
        b.cluster_barrier()?;
    } else {
        b.barrier();
    }
    let rank = b.cluster_cta_rank();
    let i32v = |b: &KernelBuilder, v: &Val| b.cvt(v, ScalarType::I32);
    let tiles = i32v(&b, &((kk.clone() + lit(bk - 1)) / lit(bk)))?;
    let split = cfg.split_k;
    // C's rows: the workspace of a split holds `split` slabs of M rows
    let m_rows = if split > 1 { c.lengths[0].clone() / lit(split) } else { c.lengths[cd].clone() };
    let tiles_m = i32v(&b, &((m_rows.clone() + lit(bm - 1)) / lit(bm)))?;
    let tiles_n = i32v(&b, &((c_n.clone() + lit(bn - 1)) / lit(bn)))?;
    // the walk's rows: M-tiles, or pairs of M-tiles (the last pair of an odd count has its
    // second tile outside C: computed in step, stored nowhere)
    let walk_m = if pair { (tiles_m.clone() + lit(1)) / lit(2) } else { tiles_m.clone() };
    // the tile walk: body(b, m0, n0, it, slices) for each tile of the block — its first row and
    // column of C, `it`, the k-slices the ring streamed before it (carried across tiles), and
    // `slices`: its first k-slice, how many, its split (with split_k > 1) and entry (batched);
    // `pp`: ping-pong consumer warpgroup w's share — the walk's steps w, w + 2, …, `it` starting
    // at w tiles' slices and skipping the other warpgroup's (every tile has ⌈K/bk⌉ slices)
    let walk = |b: &KernelBuilder, pp: Option<&Val>, body: &TileBody| -> IrResult<()> {
        let zero = b.i32(0);
        // (a one-block-per-tile grid is the same walk with one step: its blocks' linear id, a
        // step past the end; in a loop, ptxas keeps the epilogue's addresses out of the
        // mainloop — computed from block ids before it, bn 256 spilled 132 bytes)
        // batched: the entries' tiles one after another (C's dim 0 entries)
        let entries = |b: &KernelBuilder, tiles: Val| -> IrResult<Val> {
            Ok(if cfg.batched { tiles * i32v(b, &c.lengths[0])? } else { tiles })
        };
        let (lo, step) = if pair {
            // both blocks of a cluster (consecutive x) walk the same tile pairs
            let c = lit(cfg.cluster);
            let id = i32v(b, &(b.block_id(Axis::X) / c.clone()))?;
            if cfg.persistent {
                (id, i32v(b, &(b.grid_dim(Axis::X) / c))?)
            } else {
                (id, entries(b, walk_m.clone() * tiles_n.clone())?)
            }
        } else if cfg.persistent {
            (i32v(b, &b.block_id(Axis::X))?, i32v(b, &b.grid_dim(Axis::X))?)
        } else {
            let y = if cfg.batched {
                b.block_id(Axis::Z) * b.grid_dim(Axis::Y) + b.block_id(Axis::Y)
            } else {
                b.block_id(Axis::Y)
            };
            let linear = y * b.grid_dim(Axis::X) + b.block_id(Axis::X);
            let total = tiles_m.clone() * tiles_n.clone() * lit(split);
            (i32v(b, &linear)?, entries(b, i32v(b, &total)?)?)
        };
        let per_split = walk_m.clone() * tiles_n.clone();
        let total = if split > 1 { per_split.clone() * lit(split) } else { per_split.clone() };
        let total = entries(b, total)?;
        // ping-pong: (walk, `it`, tiles of this warpgroup so far) from step w, every other step
        let (lo, step, init) = match pp {
            Some(w) => {
                let lo = lo + w.clone() * step.clone();
                (lo, step * lit(2), vec![w.clone() * tiles.clone(), b.i32(0)])
            }
            None => (lo, step, vec![zero]),
        };
        b.for_range(&lo, &total, &step, &init, |b, t, it| {
            // batched: (entry, tile of the entry)
            let (t, entry) = if cfg.batched {
                (t.clone() % per_split.clone(), Some(t / per_split.clone()))
            } else {
                (t, None)
            };
            // a split's tiles follow the previous split's: (split, tile of C)
            let (t, sl) = if split > 1 {
                let ks = t.clone() / per_split.clone();
                let per = (tiles.clone() + lit(split - 1)) / lit(split);
                let first = b.binary(BinOp::Min, &(ks.clone() * per.clone()), &tiles)?;
                let end = b.binary(BinOp::Min, &(first.clone() + per), &tiles)?;
                let count = end - first.clone();
                (t % per_split.clone(), Slices { first, count, split: Some(ks), entry, nth: None })
            } else {
                let nth = it.get(1).cloned();
                (t, Slices { first: lit(0), count: tiles.clone(), split: None, entry, nth })
            };
            let (mt, nt) = match cfg.raster {
                Raster::Linear => (t.clone() / tiles_n.clone(), t % tiles_n.clone()),
                Raster::Grouped(g) => {
                    let g = lit(g as i64);
                    let group = g.clone() * tiles_n.clone();
                    let firstm = t.clone() / group.clone() * g.clone();
                    let rows = b.binary(BinOp::Min, &(walk_m.clone() - firstm.clone()), &g)?;
                    let r = t % group;
                    (firstm + r.clone() % rows.clone(), r / rows)
                }
                Raster::Hilbert => {
                    let table = order.expect("declared for Hilbert");
                    let id = b.load(table, &t, 1, None)?.remove(0);
                    (id.clone() / tiles_n.clone(), id % tiles_n.clone())
                }
            };
            // a pair's blocks take the pair's two M-tiles
            let mt = if pair { mt * lit(cfg.cluster) + rank.clone() } else { mt };
            body(b, mt * lit(bm), nt * lit(bn), it[0].clone(), &sl)?;
            Ok(match &sl.nth {
                // the other warpgroup's tile's slices are skipped
                Some(nth) => {
                    vec![it[0].clone() + sl.count.clone() * lit(2), nth.clone() + lit(1)]
                }
                None => vec![it[0].clone() + sl.count.clone()],
            })
        })?;
        Ok(())
    };
    let wg = b.warpgroup_id();
    let producer = b.cmp(CmpOp::Eq, &wg, &lit(0))?;
    let stage_bytes = (a_elems + b_elems) * eb;
    b.if_then_else(
        &producer,
        |b| {
            b.setmaxnreg(false, cfg.registers().0)?;
            b.if_then(&first, |b| {
                b.note("gemm_sm90 producer: TMA tiles into the ring");
                walk(b, None, &|b, m0, n0, it, sl| {
                    // the ring position carried as in the consumers' (resumed from `it`
                    // once a tile); the producer waits for the opposite phase of `empty`
                    let start = PipelineState::at(&it, stages).carried();
                    b.for_range(&lit(0), &sl.count, &lit(1), &start, |b, kt, pos| {
                        let pos = PipelineState::from_carried(pos, stages);
                        ring.producer_acquire(b, &pos, stage_bytes)?;
                        let s = pos.stage.clone();
                        let k0 = i32v(b, &((sl.first.clone() + kt.clone()) * lit(bk)))?;
                        // a K-major tile is one box at (k0, mn0); an MN-major one a box per
                        // slab at (mn0 + j·SLAB, k0), slab j at element j·SLAB·BK of the tile;
                        // batched, the operand's entry (the tile's, or 0 if shared) last
                        let at3 = |mut xy: Vec<Val>, step: &Val| {
                            if let Some(e) = &sl.entry {
                                xy.push(e.clone() * step.clone());
                            }
                            xy
                        };
                        let load = |mem, at: Val, map, major, mn0: &Val, rows: i64, step: &Val| {
                            match major {
                                Major::K => {
                                    let xy = at3(vec![k0.clone(), mn0.clone()], step);
                                    b.tensor_load(mem, &at, map, &xy, full, &s)
                                }
                                Major::MN => (0..rows / SLAB).try_for_each(|j| {
                                    let x = mn0.clone() + lit(j * SLAB);
                                    let at = at.clone() + lit(j * SLAB * BK);
                                    b.tensor_load(
                                        mem,
                                        &at,
                                        map,
                                        &at3(vec![x, k0.clone()], step),
                                        full,
                                        &s,
                                    )
                                }),
                            }
                        };
                        // (a pair's second tile below C loads the last tile's A instead: a box
                        // wholly outside the tensor is not relied upon; nothing of it is stored)
                        let a0 = if pair {
                            let last = (tiles_m.clone() - lit(1)) * lit(bm);
                            b.binary(BinOp::Min, &m0, &last)?
                        } else {
                            m0.clone()
                        };
                        let (sta, stb) = steps.clone().unwrap_or((lit(1), lit(1)));
                        load(sa, s.clone() * lit(a_elems), am, cfg.a_major, &a0, bm, &sta)?;
                        if !pair {
                            load(sb, s.clone() * lit(b_elems), bmap, cfg.b_major, &n0, bn, &stb)?;
                            return Ok(pos.advance(b)?.carried());
                        }
                        // a pair shares B's tile: each block multicasts its part of it into the
                        // same place of both blocks' stage (K-major: rows rank·bn/2 ..; MN-major:
                        // the slabs j ≡ rank mod 2), both full barriers counting its bytes
                        let both = lit(0b11);
                        let at = s.clone() * lit(b_elems);
                        match cfg.b_major {
                            Major::K => {
                                let half = bn / 2;
                                let x = n0.clone() + rank.clone() * lit(half);
                                let at = at + rank.clone() * lit(half * bk);
                                let xy = at3(vec![k0.clone(), x], &stb);
                                b.tensor_load_multicast(sb, &at, bmap, &xy, full, &s, &both)?;
                            }
                            Major::MN => {
                                for j in 0..bn / SLAB {
                                    let mine = b.cmp(CmpOp::Eq, &rank, &lit(j % 2))?;
                                    b.if_then(&mine, |b| {
                                        let x = n0.clone() + lit(j * SLAB);
                                        let at = at.clone() + lit(j * SLAB * BK);
                                        let xy = at3(vec![x, k0.clone()], &stb);
                                        b.tensor_load_multicast(sb, &at, bmap, &xy, full, &s, &both)
                                    })?;
                                }
                            }
                        }
                        Ok(pos.advance(b)?.carried())
                    })?;
                    Ok(())
                })
            })?;
            Ok(vec![])
        },
        |b| {
            // two consumers: 384 threads start with 168 registers (65536 / 384), the producer
            // gives 128 of them back and the consumers take 232 (128·40 + 256·232 = 384·168);
            // a wide ping-pong tile (bn > 128) 240, the producer keeping 24
            // (128·24 + 256·240 = 64512); one consumer: 256 threads start with 248 (the most a
            // thread may own below 256), already all the accumulators and addresses of bn 256
            // need — no increase
            if consumers == 2 {
                b.setmaxnreg(true, cfg.registers().1)?;
            }
            let (ta, tb) = (cfg.a_major == Major::MN, cfg.b_major == Major::MN);
            let shape = WgmmaShape::new(ty, bn as u32)?.transposed(ta, tb)?;
            let half = wg.clone() - lit(1);
            let t = tid.clone() - lit(128) - half.clone() * lit(128);
            let (warp, lane) = (t.clone() / lit(32), t.clone() % lit(32));
            // the thread that issues the TMA stores: the consumers' first, or (ping-pong) each
            // warpgroup's first (its own C tile, its own bulk groups)
            let storer = if pingpong {
                b.cmp(CmpOp::Eq, &t, &lit(0))?
            } else {
                b.cmp(CmpOp::Eq, &tid, &lit(128))?
            };
            // ping-pong: this warpgroup's index w (0, 1) as i32, and its A slabs (both)
            let pp = if pingpong { Some(i32v(b, &half)?) } else { None };
            let slabs = if pingpong { 2 } else { 1 };
            // a stage is released when every consumer warp has finished reading it: all the
            // threads arrive; in a pair, lane 0 of each warp (after the warpgroup's
            // wait_group) arrives on the stage's `empty` barrier of both blocks, since both
            // producers multicast into it
            let lane0 = if pair { Some(b.cmp(CmpOp::Eq, &lane, &lit(0))?) } else { None };
            let release = |b: &KernelBuilder, stage: &Val| -> IrResult<()> {
                match &lane0 {
                    Some(lane0) => b.if_then(lane0, |b| ring.release_cluster(b, stage, cfg.cluster)),
                    None => ring.release(b, stage),
                }
            };
            walk(b, pp.as_ref(), &|b, m0, n0, it, sl| {
                b.note("gemm_sm90 consumers: wgmma over the landed stages");
                // ping-pong: this warpgroup's mainloop starts once the other one has waited all
                // the stages of its last tile (order[w]; the walk's first tile starts at once)
                let turn = match (order_bar, &pp, &sl.nth) {
                    (Some(ob), Some(w), Some(nth)) => {
                        let later = b.cmp(CmpOp::Ne, &(nth.clone() + w.clone()), &lit(0))?;
                        b.if_then(&later, |b| {
                            let parity = (nth.clone() + w.clone() + lit(1)) % lit(2);
                            b.mbarrier_wait(ob, w, &parity)
                        })?;
                        // (a tile of no k-slices, K = 0: its turn ends at once)
                        let none = b.cmp(CmpOp::Eq, &sl.count, &lit(0))?;
                        b.if_then(&none, |b| b.mbarrier_arrive(ob, &(lit(1) - w.clone()), None))?;
                        Some((ob, w.clone()))
                    }
                    _ => None,
                };
                let zero = b.f32(0.0);
                let init = vec![zero; shape.acc_regs() * slabs];
                // the ring's stage and phase carried through the k-loop (from `it` once a
                // tile): a division by the stage count in the loop is ptxas's general one
                // (I2F, MUFU.RCP, F2I and fix-ups, ~30 instructions a k-slice)
                let mut init = init;
                init.extend(PipelineState::at(&it, stages).carried());
                // (a wgmma's accumulators; ping-pong: the tile's two slabs', one after the other)
                let nacc = shape.acc_regs();
                let carried =
                    b.for_range(&lit(0), &sl.count, &lit(1), &init, |b, kt, carried| {
                        let (acc, pos) = carried.split_at(nacc * slabs);
                        let pos = PipelineState::from_carried(pos, stages);
                        let s = pos.stage.clone();
                        ring.wait_full(b, &pos)?;
                        if let Some((ob, w)) = &turn {
                            // the tile's last stage has landed (all of them have): the other
                            // warpgroup's turn — every earlier fill of the stages its next tile
                            // waits on has landed, so the parity it waits for names the fill it
                            // wants, not the unfinished one before it. (Here, not after the
                            // loop: an arrive between the loop and its wait_group 0 makes ptxas
                            // serialize the wgmmas, C7514, with the register epilogue.)
                            let last = b.cmp(CmpOp::Eq, &kt, &(sl.count.clone() - lit(1)))?;
                            b.if_then(&last, |b| {
                                b.mbarrier_arrive(*ob, &(lit(1) - w.clone()), None)
                            })?;
                        }
                        b.wgmma_fence()?;
                        let mut acc = acc.to_vec();
                        if pingpong {
                            // the whole 128-row tile: A slab j (rows 64·j ..) into accumulators j
                            let a_at = s.clone() * lit(a_elems);
                            let b_at = s.clone() * lit(b_elems);
                            for blk in 0..bk as usize / ty.k() {
                                let db = b.wgmma_desc(sb, &b_at, &mb, blk)?;
                                for j in 0..slabs {
                                    let at = a_at.clone() + lit(j as i64 * 64 * bk);
                                    let da = b.wgmma_desc(sa, &at, &ma, blk)?;
                                    let part = &acc[j * nacc..(j + 1) * nacc];
                                    let part =
                                        b.wgmma(shape, &WgmmaSrc::Smem(da), &db, Acc::Add(part))?;
                                    acc.splice(j * nacc..(j + 1) * nacc, part);
                                }
                            }
                        } else {
                            let a_at = s.clone() * lit(a_elems) + half.clone() * lit(64 * bk);
                            let b_at = s.clone() * lit(b_elems);
                            for blk in 0..bk as usize / ty.k() {
                                let da = b.wgmma_desc(sa, &a_at, &ma, blk)?;
                                let db = b.wgmma_desc(sb, &b_at, &mb, blk)?;
                                acc = b.wgmma(shape, &WgmmaSrc::Smem(da), &db, Acc::Add(&acc))?;
                            }
                        }
                        b.wgmma_commit()?;
                        if cfg.overlap {
                            // this stage's group may still run: the previous one has finished reading
                            b.wgmma_wait(1)?;
                            let has_prev = b.cmp(CmpOp::Gt, &kt, &lit(0))?;
                            b.if_then(&has_prev, |b| release(b, &pos.previous_stage(b)?))?;
                        } else {
                            b.wgmma_wait(0)?;
                            release(b, &s)?;
                        }
                        acc.extend(pos.advance(b)?.carried());
                        Ok(acc)
                    })?;
                let acc = carried[..nacc * slabs].to_vec();
                if cfg.overlap {
                    b.wgmma_wait(0)?;
                    // the tile's last stage (the next tile's first release is of its own)
                    let any = b.cmp(CmpOp::Gt, &sl.count, &lit(0))?;
                    b.if_then(&any, |b| {
                        let last = it.clone() + sl.count.clone() - lit(1);
                        release(b, &PipelineState::stage_at(&last, stages))
                    })?;
                }
                // the fragment's (row, column) in the tile for accumulator registers i, i + 1
                // (ping-pong: register i of the tile's slab i / nacc)
                let frag = |i: usize| {
                    let (slab_row, i) = if pingpong {
                        (lit((i / nacc) as i64 * 64), i % nacc)
                    } else {
                        (half.clone() * lit(64), i)
                    };
                    let (r0, c0) = acc_coord(0, i);
                    let row =
                        slab_row + warp.clone() * lit(16) + lane.clone() / lit(4) + lit(r0 as i64);
                    (row, lane.clone() % lit(4) * lit(2) + lit(c0 as i64))
                };
                // an element's offset in the tile's entry of C (batched: past the entries before)
                let in_entry = |at: Val| match &sl.entry {
                    Some(e) => e.clone() * c.strides[0].clone() + at,
                    None => at,
                };
                // (row, col) is inside C
                let inside =
                    |b: &KernelBuilder, row: &Val, col: &Val| -> IrResult<tilekit_ir::Pred> {
                        let rows_left = m_rows.clone() - lit(1) - row.clone();
                        let cols_left = c_n.clone() - lit(1) - col.clone();
                        let least = b.binary(BinOp::Min, &rows_left, &cols_left)?;
                        b.cmp(CmpOp::Ge, &least, &lit(0))
                    };
                // the consumers of the C tile meet: all of them, or (ping-pong) the
                // warpgroup's 128 at its own named barrier (1 or 2)
                let c_sync = |b: &KernelBuilder| -> IrResult<()> {
                    if pingpong {
                        let wg1 = b.cmp(CmpOp::Eq, &half, &lit(0))?;
                        b.if_then_else(
                            &wg1,
                            |b| b.named_barrier(1, 128).map(|_| vec![]),
                            |b| b.named_barrier(2, 128).map(|_| vec![]),
                        )?;
                        Ok(())
                    } else {
                        b.named_barrier(1, cthreads as u32)
                    }
                };
                // accumulator pair i, i + 1 in the output type: the epilogue op (if any) at
                // the elements' place in C (the stores clip there; the op's loads are masked
                // to it), converted
                let tile_vals = |b: &KernelBuilder, i: usize| -> IrResult<[Val; 2]> {
                    if cfg.op.is_identity() {
                        return Ok([b.cvt(&acc[i], cfg.output)?, b.cvt(&acc[i + 1], cfg.output)?]);
                    }
                    let (r, cc) = frag(i);
                    let (row, col) = (m0.clone() + r, n0.clone() + cc);
                    let g = in_entry(row.clone() * c_pitch.clone() + col.clone());
                    let mut out = Vec::with_capacity(2);
                    for e in 0..2 {
                        let col = col.clone() + lit(e);
                        let mask = inside(b, &row, &col)?;
                        let v =
                            epilogue_op(b, &acc[i + e as usize], &(g.clone() + lit(e)), &col, &mask)?;
                        out.push(b.cvt(&v, cfg.output)?);
                    }
                    Ok([out[0].clone(), out[1].clone()])
                };
                // the stores of one subtile's (or the tile's) boxes, by its storing thread
                // (a pair's second tile of an odd count's last pair is outside C: none)
                let store_boxes = |b: &KernelBuilder, stores: &dyn Fn(&KernelBuilder) -> IrResult<()>| {
                    b.if_then(&storer, |b| {
                        if pair {
                            let inside = b.cmp(CmpOp::Lt, &m0, &m_rows)?;
                            b.if_then(&inside, stores)
                        } else {
                            stores(b)
                        }
                    })
                };
                if let (true, Some(sc)) = (subtiled, sc) {
                    b.note(
                        "gemm_sm90 epilogue: the fragment in column subtiles through two shared buffers, TMA stores",
                    );
                    // per thread: its rows' swizzle phase x = row mod 8 = lane / 4 and the
                    // 16-byte chunk of its column pair (as in the whole C tile below)
                    let ce = 16 / ob;
                    let pair_col = lane.clone() % lit(4) * lit(2);
                    let x = lane.clone() / lit(4);
                    let sbuf = bm * sub;
                    // ping-pong: the warpgroup's own buffers, at w · C_SUB_BUFFERS · bm · sub
                    let (row_t, c_base) = if pingpong {
                        let cb = half.clone() * lit(C_SUB_BUFFERS * sbuf);
                        (warp.clone() * lit(16) + x.clone(), Some(cb))
                    } else {
                        (half.clone() * lit(64) + warp.clone() * lit(16) + x.clone(), None)
                    };
                    // per kind of box (rows of w outputs, its swizzle): the thread's chunk
                    // phase and its first element in a buffer
                    let mut kinds = Vec::with_capacity(sub_maps.len());
                    for &(sw, w, map) in &sub_maps {
                        let xk = x.clone() / lit(128 / sw.row_bytes());
                        let y = b.binary(BinOp::Xor, &(pair_col.clone() / lit(ce)), &xk)?;
                        let at = row_t.clone() * lit(w) + pair_col.clone() % lit(ce);
                        let at = match &c_base {
                            Some(cb) => cb.clone() + at,
                            None => at,
                        };
                        kinds.push((sw, w, map, y, at));
                    }
                    let kind = |bx: &CBox| {
                        kinds
                            .iter()
                            .find(|k| k.0 == bx.swizzle && k.1 == bx.width)
                            .expect("a map for every kind of box (c_sub_kinds)")
                    };
                    // the last tile's stores have finished reading both buffers
                    b.if_then(&storer, |b| {
                        b.bulk_wait(0, true);
                        Ok(())
                    })?;
                    c_sync(b)?;
                    for (j, &(col0, width)) in c_subtiles(bn, sub).iter().enumerate() {
                        let j = j as i64;
                        let buf = j % C_SUB_BUFFERS * sbuf;
                        if j >= C_SUB_BUFFERS {
                            // this buffer's last store (subtile j − 2) has read it: all but
                            // the newest bulk group (subtile j − 1's)
                            b.if_then(&storer, |b| {
                                b.bulk_wait((C_SUB_BUFFERS - 1) as u32, true);
                                Ok(())
                            })?;
                            c_sync(b)?;
                        }
                        let boxes = c_boxes(ob, bm, width);
                        let mut written = 0;
                        for i in (0..acc.len()).step_by(2) {
                            let (slab, ii) =
                                if pingpong { ((i / nacc) as i64, i % nacc) } else { (0, i) };
                            let (r0, c0) = acc_coord(0, ii);
                            let (r0, c0) = (r0 as i64, c0 as i64);
                            if !(col0..col0 + width).contains(&c0) {
                                continue;
                            }
                            if pingpong && !cfg.op.is_identity() && written > 0 && written % (nacc / 8) == 0 {
                                // (as in the whole tile: the op's loads kept below the stores)
                                c_sync(b)?;
                            }
                            written += 1;
                            let bx = c_box_of(&boxes, c0 - col0);
                            let (_, w, _, y, base) = kind(&bx);
                            let chunk = b.binary(BinOp::Xor, y, &lit((c0 - col0 - bx.col) / ce))?;
                            let at = base.clone()
                                + lit(buf + slab * 64 * w + bx.at + r0 * w)
                                + chunk * lit(ce);
                            let vals = tile_vals(b, i)?;
                            b.store(sc, &at, &vals, None)?;
                        }
                        b.fence_proxy_async();
                        c_sync(b)?;
                        store_boxes(b, &|b| {
                            for bx in &boxes {
                                let mut xy = vec![n0.clone() + lit(col0 + bx.col), m0.clone()];
                                xy.extend(sl.entry.clone());
                                let from = match &c_base {
                                    Some(cb) => cb.clone() + lit(buf + bx.at),
                                    None => lit(buf + bx.at),
                                };
                                b.tensor_store(kind(bx).2, &xy, sc, &from)?;
                            }
                            b.bulk_commit();
                            Ok(())
                        })?;
                    }
                } else if let (Some(cmap), Some(sc)) = (cmap, sc) {
                    b.note("gemm_sm90 epilogue: the fragment into the swizzled C tile, TMA stores");
                    // per thread: its rows' swizzle phase x = row mod 8 = lane / 4 and the
                    // 16-byte chunk of its column pair; per register pair a constant chunk
                    let ce = 16 / ob;
                    let pair_col = lane.clone() % lit(4) * lit(2);
                    let x = lane.clone() / lit(4);
                    let y = b.binary(BinOp::Xor, &(pair_col.clone() / lit(ce)), &x)?;
                    // ping-pong: the warpgroup's own C tile (at w·bm·bn), its slab j's rows at
                    // 64·j (a constant per register)
                    let (row_t, c_base) = if pingpong {
                        (warp.clone() * lit(16) + x.clone(), half.clone() * lit(bm * bn))
                    } else {
                        (half.clone() * lit(64) + warp.clone() * lit(16) + x.clone(), lit(0))
                    };
                    // the narrower boxes of a width not a multiple of cw (one swizzle, one
                    // width): rows of `tw` elements, the swizzle phase x / (128 / row bytes)
                    let tail = match tail_box {
                        Some(tb) => {
                            let tw = tb.width;
                            let xt = x / lit(128 / tb.swizzle.row_bytes());
                            let yt = b.binary(BinOp::Xor, &(pair_col.clone() / lit(ce)), &xt)?;
                            let at = row_t.clone() * lit(tw) + pair_col.clone() % lit(ce);
                            Some((yt, if pingpong { c_base.clone() + at } else { at }))
                        }
                        None => None,
                    };
                    let base = if pingpong {
                        c_base.clone() + row_t * lit(cw) + pair_col % lit(ce)
                    } else {
                        row_t * lit(cw) + pair_col % lit(ce)
                    };
                    // the last tile's stores have finished reading the C tile
                    b.if_then(&storer, |b| {
                        b.bulk_wait(0, true);
                        Ok(())
                    })?;
                    c_sync(b)?;
                    for i in (0..acc.len()).step_by(2) {
                        if pingpong && !cfg.op.is_identity() && i > 0 && i % (nacc / 4) == 0 {
                            // (a 128 × bn tile in one warpgroup: ptxas would hoist the loads
                            // of C and the bias above the earlier shared stores — nothing
                            // aliases them — while all 128 accumulators are live, and spill;
                            // the warpgroup's barrier every quarter slab keeps them in it)
                            c_sync(b)?;
                        }
                        let (slab, ii) =
                            if pingpong { ((i / nacc) as i64, i % nacc) } else { (0, i) };
                        let (r0, c0) = acc_coord(0, ii);
                        let (r0, c0) = (r0 as i64, c0 as i64);
                        // the pair's box (c_boxes: constant per register), its rows w wide
                        let bx = c_box_of(&c_box, c0);
                        let w = bx.width;
                        let (y, base) = match &tail {
                            Some((yt, bt)) if bx.swizzle != HopperSwizzle::B128 => (yt, bt),
                            _ => (&y, &base),
                        };
                        let chunk = b.binary(BinOp::Xor, y, &lit((c0 - bx.col) / ce))?;
                        let at =
                            base.clone() + lit(slab * 64 * w + bx.at + r0 * w) + chunk * lit(ce);
                        let vals = tile_vals(b, i)?;
                        b.store(sc, &at, &vals, None)?;
                    }
                    b.fence_proxy_async();
                    c_sync(b)?;
                    let stores = |b: &KernelBuilder| -> IrResult<()> {
                        for bx in &c_box {
                            let mut xy = vec![n0.clone() + lit(bx.col), m0.clone()];
                            xy.extend(sl.entry.clone());
                            let from =
                                if pingpong { c_base.clone() + lit(bx.at) } else { lit(bx.at) };
                            let map = match tail_map {
                                Some(tm) if bx.swizzle != HopperSwizzle::B128 => tm,
                                _ => cmap,
                            };
                            b.tensor_store(map, &xy, sc, &from)?;
                        }
                        b.bulk_commit();
                        Ok(())
                    };
                    store_boxes(b, &stores)?;
                } else {
                    b.note(
                        "gemm_sm90 epilogue: the accumulator fragment to C, masked at the edges",
                    );
                    let (m, n) = (m_rows.clone(), c_n.clone());
                    // a split's partial product goes to its slab of the workspace
                    let slab_row = match &sl.split {
                        Some(ks) => ks.clone() * m.clone(),
                        None => lit(0),
                    };
                    for i in (0..acc.len()).step_by(2) {
                        let (r, cc) = frag(i);
                        let row = m0.clone() + r;
                        let col = n0.clone() + cc;
                        let at = in_entry(
                            (slab_row.clone() + row.clone()) * c_pitch.clone() + col.clone(),
                        );
                        let plain = cfg.op.is_identity();
                        let vals = if plain {
                            vec![b.cvt(&acc[i], cfg.output)?, b.cvt(&acc[i + 1], cfg.output)?]
                        } else {
                            vec![]
                        };
                        // both columns inside, or (odd N) only the first: min of the slacks ≥ 0
                        let rows_left = m.clone() - lit(1) - row;
                        let slack = |b: &KernelBuilder, cols: i64| -> IrResult<tilekit_ir::Pred> {
                            let cols_left = n.clone() - lit(cols) - col.clone();
                            let least = b.binary(BinOp::Min, &rows_left, &cols_left)?;
                            b.cmp(CmpOp::Ge, &least, &lit(0))
                        };
                        let pair = slack(b, 2)?;
                        let single = slack(b, 1)?;
                        let vals = if plain {
                            vals
                        } else {
                            // element 0 is inside where `single` holds, element 1 where `pair`
                            let v0 = epilogue_op(b, &acc[i], &at, &col, &single)?;
                            let at1 = at.clone() + lit(1);
                            let v1 =
                                epilogue_op(b, &acc[i + 1], &at1, &(col.clone() + lit(1)), &pair)?;
                            vec![b.cvt(&v0, cfg.output)?, b.cvt(&v1, cfg.output)?]
                        };
                        b.if_then_else(
                            &pair,
                            |b| {
                                b.store(c.mem, &at, &vals, None)?;
                                Ok(vec![])
                            },
                            |b| {
                                b.store(c.mem, &at, &vals[..1], Some(&single))?;
                                Ok(vec![])
                            },
                        )?;
                    }
                }
                Ok(())
            })?;
            if cfg.epilogue == Epilogue::Tma {
                // the C tile stays allocated until the last store has read it
                b.if_then(&storer, |b| {
                    b.bulk_wait(0, true);
                    Ok(())
                })?;
            }
            Ok(vec![])
        },
    )?;
    if pair {
        // no block exits while its peer may still multicast into it or arrive on its barriers
        b.cluster_barrier()?;
    }
    Ok(b.finish()?)
}
