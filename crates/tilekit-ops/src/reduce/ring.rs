//! Row softmax for rows too long for one SM, on a **resident grid whose blocks walk a fixed
//! list of slices through a ring of shared-memory slots**, publishing each slice's (max, sum)
//! at once but waiting for its row only `lag` slices later — the exchange wait of the
//! cooperative kernels ([`super::coop`], [`super::coop_smem`]) taken off the critical path.
//!
//! Why: the cooperative kernels keep one slice per block, so every block stops at its row's
//! exchange with nothing in flight, and the next block cannot start until it is done; on an
//! H200 they stop at 0.84–0.87 of the copy (bench/NOTES.md §10–§21). Here a block never waits
//! for the row it has just published: it reduces the next slice, which bulk copies brought in
//! meanwhile, and the row it waits for was published by its peers a whole slice's work ago.
//!
//! ```text
//!   N = rows · k slices (slice q: part q mod k of row q / k, L = chunks · C elements)
//!   G resident blocks (all on the device at once); block b takes slices b, b + G, b + 2G, …
//!   ring of S slots per block, one mbarrier each; slice i (the block's i-th) lives in slot i mod S
//!   block = `threads` compute threads + one exchange warp (E)
//!
//!   prologue: E's lane 0 issues slices 0 … S−1 (cp.async.bulk, chunk by chunk, expect_tx)
//!   for i in 0 .. J + D:                       J = the block's slices, D = lag ≥ 1
//!     compute:  wait slot i mod S (parity ⌊i/S⌋ mod 2); a slot reaching past the row gets
//!               −∞ over its tail (then fence.proxy.async), so every load is unmasked;
//!               (m, s) online per thread, per step m' = max(m, step max),
//!               s = s·exp(m − m') + Σ exp(x − m')   (ex2.approx.ftz; 16-bit: one FFMA a
//!               term, x·log2 e − m'·log2 e); warp butterfly of pairs → lane 0 → scratch
//!     ─── bar.sync 1 ───
//!     E:        fold the warps' pairs, publish slice i (stats, red.release counter);
//!               row(i − D): (M, −log2 S) from the count and pairs it prefetched last
//!               iteration — or, if the count was short, wait (acquire, backoff) and load the
//!               pairs again — into shared memory; slot of slice i − 1 − D is free: issue
//!               slice i − 1 − D + S into it;  bar.arrive 2;  prefetch row(i + 1 − D)
//!     ─── bar.sync 2 (compute) ───
//!     compute:  y = exp2((x − M)·log2 e − log2 S) of slice i − D from its slot, stored
//! ```
//!
//! **Measured** (H200, 2026-11-27, bench/NOTES.md §22): correct and sanitizer-clean, but
//! slower than the shared-memory cooperative kernel at every shape tried: this version 0.756
//! bf16 / 0.802 f32 of the copy at best (0.77 / 0.87 for the first version, whose exchange
//! waited between the barriers; 0.86 / 0.87 for the cooperative kernel in the same runs).
//! ncu: the ring runs ~20% more instructions per element on ~30% fewer resident warps, and its
//! warps wait at the barriers; the DRAM wait the design removes was not what limits the H200.
//! Kept as a tuning option (`CoopTuning::ring`).
//!
//! **Progress.** Slice `j`'s row is complete when its `k` slices are published. Those are
//! slices `r·k … r·k + k − 1`, which the blocks take at iterations `⌊r·k/G⌋ …
//! ⌊(r·k + k − 1)/G⌋`, at most `⌈(k − 1)/G⌉` after the first. With `D ≥ ⌈(k − 1)/G⌉` (`G ≥
//! k − 1` for `D = 1`) the wait at iteration `i` needs publications of iterations `≤ i`, each
//! made before the publishing block's own wait of that iteration, and a block reaches
//! iteration `i`'s publication after waits that need iterations `≤ i − 1` only: by induction
//! on the iteration every wait ends — provided every block of the grid is resident at once
//! (`api::softmax` sizes the grid by the device's occupancy for the compiled kernel). No
//! tickets: the assignment is static, and a row's blocks advance at the same pace, so the row
//! a block waits for was usually complete a slice ago. A slot is refilled a slice after it is
//! read (at the next barrier every thread passes), so `S ≥ D + 2`. The prefetch never waits;
//! the wait, when the prefetched count is short, comes after the block's own publication.
//!
//! **Ordering.** As [`super::coop`]: the exchange lane's pair store precedes its release add;
//! the exchange warp's acquire of the counter precedes its loads of the pairs (each lane's
//! own acquire), and barrier 2 (`bar.arrive` by the exchange warp, `bar.sync` by the compute
//! warps) hands (M, S) to them through shared memory. The warps' pairs and (M, S) live in one
//! buffer each: written before one barrier, read between the two, written again after the
//! next. The ring's slots are written by
//! bulk copies only after the barrier every compute thread passes once it has read the slot.
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::reduce::ring::build_softmax_ring;
//! // 512 compute threads (and an exchange warp) × 2 vectors of 8 bf16 a step, 2 steps: 32 KiB
//! // slots, 3 of them, lag 1
//! let k = build_softmax_ring(ScalarType::BF16, 512, 4, (2, 2), (3, 1)).unwrap();
//! assert_eq!((k.name.as_str(), k.block_dim, k.min_blocks_per_sm), ("softmax_ring", [544, 1, 1], 2));
//! assert!(k.shared_bytes() >= 3 * 32 * 1024);
//! let text = k.to_string();
//! assert!(text.contains("cp.async.bulk") && text.contains("atom.release.gpu.global.add.u32"));
//! assert!(build_softmax_ring(ScalarType::BF16, 512, 4, (2, 2), (3, 0)).is_err()); // lag 0
//! assert!(build_softmax_ring(ScalarType::BF16, 512, 4, (2, 2), (2, 1)).is_err()); // S < lag + 2
//! ```

use tilekit_ir::{Axis, BinOp, CmpOp, Kernel, KernelBuilder, Pred, ScalarType, UnOp, Val};
use tilekit_kernel::lit;
use tilekit_kernel::ring::PipelineState;
use tilekit_layout::IdxBool;

use crate::error::{OpsError, Result};

use super::coop::publish;

/// The most steps (chunks) a slot may take: the steps are unrolled at build time.
///
/// ```
/// assert_eq!(tilekit_ops::reduce::ring::RING_MAX_CHUNKS, 16);
/// ```
pub const RING_MAX_CHUNKS: i64 = 16;

/// The most shared memory the slots of one block may take (an SM has 228 KiB).
///
/// ```
/// assert_eq!(tilekit_ops::reduce::ring::RING_MAX_BYTES, 200 * 1024);
/// ```
pub const RING_MAX_BYTES: i64 = 200 * 1024;

/// Row softmax on a resident grid walking slices through a ring of `slots` shared-memory
/// slots with the exchange `lag` slices behind (see the [module docs](self)). A slice is
/// `chunks` steps of `threads · V · unroll` elements (V = 16 bytes / element size); the row is
/// split into `k` slices; the block is `threads + 32` threads (the compute threads and the
/// exchange warp). Params `x`, `y` (2-D, same type, rows 16-byte aligned whole vectors: bulk
/// copies), `ws` (u32, `1 + rows`, **zero** at launch), `stats` (f32, `2 · k · rows`); launch
/// on `G` blocks along x with `lag ≥ ⌈(k − 1)/G⌉`, every one resident at once. Columns past
/// `k · L` are not written (`api::softmax` picks a covering shape).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::ring::build_softmax_ring;
/// let k = build_softmax_ring(ScalarType::F32, 768, 4, (2, 2), (4, 2)).unwrap(); // 4 × 48 KiB
/// assert_eq!((k.block_dim, k.min_blocks_per_sm), ([800, 1, 1], 1));
/// assert!(build_softmax_ring(ScalarType::F32, 768, 4, (2, 2), (5, 2)).is_err()); // 240 KiB
/// assert!(build_softmax_ring(ScalarType::F32, 1024, 4, (1, 2), (3, 1)).is_err()); // + 32 > 1024
/// assert!(build_softmax_ring(ScalarType::F16, 256, 8, (1, 2), (3, 1)).is_err());
/// ```
pub fn build_softmax_ring(
    ty: ScalarType,
    threads: u32,
    k: u32,
    (unroll, chunks): (i64, i64),
    (slots, lag): (i64, i64),
) -> Result<Kernel> {
    super::coop::check_coop(ty, threads, k)?;
    if threads + 32 > 1024 {
        return Err(OpsError::invalid(
            "softmax",
            "threads (ring softmax)",
            threads,
            "32..=992: the block adds one warp for the exchange and the copies",
        ));
    }
    if !(1..=8).contains(&unroll) {
        return Err(OpsError::invalid("softmax", "unroll", unroll, "1..=8 vectors per thread"));
    }
    if !(1..=RING_MAX_CHUNKS).contains(&chunks) {
        return Err(OpsError::invalid(
            "softmax",
            "chunks (ring softmax)",
            chunks,
            format!("1..={RING_MAX_CHUNKS} steps a slot"),
        ));
    }
    if lag < 1 {
        return Err(OpsError::invalid(
            "softmax",
            "lag (ring softmax)",
            lag,
            "at least 1: a block waits for a row one slice after publishing it, or the rows' \
             blocks could wait for each other",
        ));
    }
    if slots < lag + 2 {
        return Err(OpsError::invalid(
            "softmax",
            "slots (ring softmax)",
            slots,
            format!(
                "at least the lag {lag} + 2: the slices waiting for their rows, the one being \
                 reduced, and the one a freed slot is refilled with (it is refilled a slice \
                 after it is read)"
            ),
        ));
    }
    let size = ty.size_bytes() as i64;
    let v = 16 / size;
    let c = threads as i64 * v * unroll;
    let len = chunks * c;
    if slots * len * size > RING_MAX_BYTES {
        return Err(OpsError::invalid(
            "softmax",
            "slots × slice (ring softmax)",
            format!("{slots} × {} KiB", len * size / 1024),
            format!("at most {} KiB of shared memory", RING_MAX_BYTES / 1024),
        ));
    }
    let name = "softmax_ring";
    let kk = k as i64;
    let warps = threads as i64 / 32;
    let b = KernelBuilder::new(name, [threads + 32, 1, 1])?;
    // as many blocks per SM as the slots' shared memory allows: ptxas fits the registers
    let per_sm = (228 * 1024 / (slots * len * size + 2048)).clamp(1, 8) as u32;
    b.set_min_blocks_per_sm(per_sm.min(2048 / (threads + 32)))?;
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("y", ty, 2)?;
    // full 16-byte vectors: the binding checks 16-byte aligned rows
    x.descriptor(Some((v, 1)))?;
    y.descriptor(Some((v, 1)))?;
    let ws = b.ptr_param("ws", ScalarType::U32)?;
    let stats = b.ptr_param("stats", ScalarType::F32)?;
    let buf = b.shared("slots", ty, (slots * len) as usize)?;
    // the compute warps' pairs of the slice just reduced; the row's (M, −log2 S) for pass 2
    let scratch = b.shared("pairs", ScalarType::F32, (2 * warps) as usize)?;
    let rowstat = b.shared("row_stats", ScalarType::F32, 2)?;
    let full = b.mbarrier("full", slots as usize)?;
    let rows = x.lengths[0].clone();
    let n = x.lengths[1].clone();
    let tid = b.thread_id(Axis::X);
    let lane = b.lane_id();
    let warp = b.warp_id();
    let lane0 = b.cmp(CmpOp::Eq, &lane, &lit(0))?;
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
    let me = b.block_id(Axis::X);
    let big_g = b.grid_dim(Axis::X);
    let total = rows.clone() * lit(kk);
    // the block's slices: b, b + G, … below rows · k
    let mine = (total.clone() - me.clone() + big_g.clone() - lit(1)) / big_g.clone();
    let slice = |i: &Val| me.clone() + i.clone() * big_g.clone();
    // (the slot, the parity of its use) of the block's slice i ≥ 0
    let ring_of = |i: &Val| {
        let pos = PipelineState::at(i, slots);
        (pos.stage, pos.phase)
    };
    // one thread: slice q's bulk copies into slot s, completing on full[s]
    let issue =
        |b: &KernelBuilder, q: &Val, s: &Val| -> std::result::Result<(), tilekit_ir::IrError> {
            let (row, part) = (q.clone() / lit(kk), q.clone() % lit(kk));
            let xrow = row * x.strides[0].clone();
            let lo = part * lit(len);
            let left = b.binary(BinOp::Sub, &n, &lo)?;
            let all = b.binary(BinOp::Max, &b.binary(BinOp::Min, &left, &lit(len))?, &lit(0))?;
            b.mbarrier_arrive(full, s, Some(&(all * lit(size))))?;
            for step in 0..chunks {
                let c0 = lo.clone() + lit(step * c);
                let left = b.binary(BinOp::Sub, &n, &c0)?;
                let part_len =
                    b.binary(BinOp::Max, &b.binary(BinOp::Min, &left, &lit(c))?, &lit(0))?;
                let some = b.cmp(CmpOp::Gt, &part_len, &lit(0))?;
                b.if_then(&some, |b| {
                    let at = s.clone() * lit(len) + lit(step * c);
                    b.bulk_load(buf, &at, x.mem, &(xrow.clone() + c0.clone()), &part_len, full, s)
                })?;
            }
            Ok(())
        };
    b.note(format!("{name}: one mbarrier per slot; slices 0 … {} in flight", slots - 1));
    b.if_then(&first, |b| {
        for s in 0..slots {
            b.mbarrier_init(full, &lit(s), &lit(1))?;
        }
        b.fence_mbarrier_init();
        Ok(())
    })?;
    b.barrier();
    let exchange = b.cmp(CmpOp::Eq, &warp, &lit(warps))?;
    let compute = b.cmp(CmpOp::Lt, &warp, &lit(warps))?;
    let leader = exchange.and(&lane0);
    b.if_then(&leader, |b| {
        for s in 0..slots {
            let real = b.cmp(CmpOp::Lt, &lit(s), &mine)?;
            b.if_then(&real, |b| issue(b, &slice(&lit(s)), &lit(s)))?;
        }
        Ok(())
    })?;
    let log2e = b.f32(std::f32::consts::LOG2_E);
    let ninf = b.f32(f32::NEG_INFINITY);
    let ftz_exp = |b: &KernelBuilder, a: &Val, m: &Val| -> Result<Val> {
        let z = b.binary(BinOp::Mul, &b.binary(BinOp::Sub, a, m)?, &log2e)?;
        Ok(b.unary(UnOp::Exp2ApproxFtz, &z)?)
    };
    // (m, s) ⊕ (m', s') = (M, s·exp(m − M) + s'·exp(m' − M)), M = max(m, m'); both m finite
    let combine =
        |b: &KernelBuilder, (m, s): (&Val, &Val), (mo, so): (&Val, &Val)| -> Result<(Val, Val)> {
            let big = b.binary(BinOp::Max, m, mo)?;
            let a = b.binary(BinOp::Mul, s, &ftz_exp(b, m, &big)?)?;
            let r = b.fma(so, &ftz_exp(b, mo, &big)?, &a)?;
            Ok((big, r))
        };
    let butterfly = |b: &KernelBuilder, m: Val, s: Val| -> Result<(Val, Val)> {
        let (mut m, mut s) = (m, s);
        for d in [16, 8, 4, 2, 1] {
            let mo = b.shfl(tilekit_ir::ShflMode::Bfly, &m, &lit(d))?;
            let so = b.shfl(tilekit_ir::ShflMode::Bfly, &s, &lit(d))?;
            (m, s) = combine(b, (&m, &s), (&mo, &so))?;
        }
        Ok((m, s))
    };
    // lane l's pairs of `row` (pairs l, l + 32, …; (−∞, 0) past the k-th), loaded after `after`
    let pairs_of =
        |b: &KernelBuilder, row: &Val| -> std::result::Result<Vec<Val>, tilekit_ir::IrError> {
            let mut out = vec![];
            for j0 in (0..kk).step_by(32) {
                let j = lane.clone() + lit(j0);
                let inside = b.cmp(CmpOp::Lt, &j, &lit(kk))?;
                let at = (row.clone() * lit(kk) + j) * lit(2);
                let p = b.load(stats, &at, 2, Some(&inside))?;
                out.push(b.select(&inside, &p[0], &ninf)?);
                out.push(b.select(&inside, &p[1], &b.f32(0.0))?);
            }
            Ok(out)
        };
    let npairs = (kk as usize).div_ceil(32);
    // the vectors of step `step` this thread owns in a slot: (offset in the slot, in-row mask)
    let vectors = |b: &KernelBuilder, lo: &Val, step: i64| -> Result<Vec<(Val, Pred)>> {
        (0..unroll)
            .map(|u| {
                let off = lit(step * c) + (lit(u * threads as i64) + tid.clone()) * lit(v);
                let inside = b.cmp(CmpOp::Lt, &(lo.clone() + off.clone()), &n)?;
                Ok((off, inside))
            })
            .collect()
    };
    let ftz_out = size == 2;
    let zero = lit(0);
    let one = lit(1);
    let end = mine.clone() + lit(lag);
    let block_threads = threads + 32;
    // the exchange warp's prefetch of row(slice i − lag): its count, then its pairs (acquire
    // first: each lane's own); dummies (count 0) where there is no such slice
    let prefetch =
        |b: &KernelBuilder, i: &Val| -> std::result::Result<Vec<Val>, tilekit_ir::IrError> {
            let live = b.cmp(CmpOp::Ge, i, &lit(lag))?.and(&b.cmp(CmpOp::Lt, i, &end)?);
            let jrow = slice(&(i.clone() - lit(lag))) / lit(kk);
            b.if_then_else(
                &exchange.and(&live),
                |b| {
                    let cnt = b.load_acquire(ws, &(jrow.clone() + lit(1)))?;
                    let mut v = vec![b.cvt(&cnt, ScalarType::I32)?];
                    v.extend(pairs_of(b, &jrow)?);
                    Ok(v)
                },
                |b| {
                    let mut v = vec![lit(0)];
                    for _ in 0..npairs {
                        v.push(b.f32(f32::NEG_INFINITY));
                        v.push(b.f32(0.0));
                    }
                    Ok(v)
                },
            )
        };
    // 16-bit outputs: the exponent as one FFMA, x·log2 e − c (c rounded once; the result is
    // rounded to 8 bits anyway); f32: (x − m)·log2 e as before
    let fast = size == 2;
    let init = prefetch(&b, &zero)?;
    b.for_range(&zero, &end, &one, &init, |b, i, pre| {
        let has_stats = b.cmp(CmpOp::Lt, &i, &mine)?;
        let has_out = b.cmp(CmpOp::Ge, &i, &lit(lag))?;
        let j = i.clone() - lit(lag);
        let jrow = slice(&j) / lit(kk);
        b.note(format!("{name}: the compute warps reduce slice i (online max and sum)"));
        b.if_then(&compute.and(&has_stats), |b| -> std::result::Result<(), tilekit_ir::IrError> {
            let lo = (slice(&i) % lit(kk)) * lit(len);
            let (s, ph) = ring_of(&i);
            b.mbarrier_wait(full, &s, &ph)?;
            let base = s * lit(len);
            // a slot reaching past the row: −∞ over this thread's vectors there (the copies
            // wrote only the row's part), so every load below is unmasked
            let whole = b.cmp(CmpOp::Le, &(lo.clone() + lit(len)), &n)?;
            b.if_then(&whole.not(), |b| {
                let pad = vec![b.konst(super::float_lit(ty, f64::NEG_INFINITY).map_err(ir)?); v as usize];
                for step in 0..chunks {
                    for (off, inside) in vectors(b, &lo, step).map_err(ir)? {
                        b.store(buf, &(base.clone() + off), &pad, Some(&inside.not()))?;
                    }
                }
                // the next copies into this slot must come after these writes
                b.fence_proxy_async();
                Ok(())
            })?;
            let pass = |b: &KernelBuilder| -> Result<(Val, Val)> {
                let mut m = b.f32(f32::MIN);
                let mut sum = b.f32(0.0);
                for step in 0..chunks {
                    let mut xs = vec![];
                    for u in 0..unroll {
                        let off = lit(step * c) + (lit(u * threads as i64) + tid.clone()) * lit(v);
                        for e in b.load(buf, &(base.clone() + off), v as usize, None)? {
                            xs.push(b.cvt(&e, ScalarType::F32)?);
                        }
                    }
                    let mx = crate::tile::tree_reduce(b, xs.clone(), BinOp::Max)?;
                    let m2 = b.binary(BinOp::Max, &m, &mx)?;
                    let es = if fast {
                        // (a slot of padding only has m2 = f32::MIN, whose product overflows)
                        let floor = b.binary(BinOp::Max, &m2, &b.f32(-1e37))?;
                        let c2 = b.binary(BinOp::Mul, &floor, &log2e)?;
                        let nc2 = b.unary(UnOp::Neg, &c2)?;
                        xs.iter()
                            .map(|x| Ok(b.unary(UnOp::Exp2ApproxFtz, &b.fma(x, &log2e, &nc2)?)?))
                            .collect::<Result<Vec<_>>>()?
                    } else {
                        xs.iter().map(|x| ftz_exp(b, x, &m2)).collect::<Result<Vec<_>>>()?
                    };
                    let e = crate::tile::tree_reduce(b, es, BinOp::Add)?;
                    sum = if step == 0 { e } else { b.fma(&sum, &ftz_exp(b, &m, &m2)?, &e)? };
                    m = m2;
                }
                butterfly(b, m, sum)
            };
            let (wm, wsum) = pass(b).map_err(ir)?;
            b.if_then(&lane0, |b| {
                b.store(scratch, &(warp.clone() * lit(2)), &[wm.clone(), wsum.clone()], None)
            })
        })?;
        b.named_barrier(1, block_threads)?;
        b.note(format!("{name}: the exchange warp folds and publishes slice i, finishes row(i − {lag}), refills a slot"));
        b.if_then(&exchange, |b| -> std::result::Result<(), tilekit_ir::IrError> {
            b.if_then(&has_stats, |b| {
                let q = slice(&i);
                let (row, part) = (q.clone() / lit(kk), q % lit(kk));
                let real = b.cmp(CmpOp::Lt, &lane, &lit(warps))?;
                let p = b.load(scratch, &(lane.clone() * lit(2)), 2, Some(&real))?;
                let pm = b.select(&real, &p[0], &b.f32(f32::MIN))?;
                let ps = b.select(&real, &p[1], &b.f32(0.0))?;
                let (bm, bs) = butterfly(b, pm, ps).map_err(ir)?;
                publish(b, name, &lane0, (ws, stats), (&row, &part, kk), (&bm, &bs)).map_err(ir)
            })?;
            b.if_then(&has_out, |b| {
                // the prefetched count was short: wait now (after publishing slice i)
                let done = b.cmp(CmpOp::Ge, &pre[0], &lit(kk))?;
                let ps = b.if_then_else(
                    &done,
                    |_| Ok(pre[1..].to_vec()),
                    |b| {
                        b.wait_acquire_backoff(ws, &(jrow.clone() + lit(1)), &lit(kk), super::coop::COOP_BACKOFF_NS)?;
                        pairs_of(b, &jrow)
                    },
                )?;
                let fin = |b: &KernelBuilder| -> Result<()> {
                    let ms: Vec<Val> = ps.iter().step_by(2).cloned().collect();
                    let lm = crate::tile::tree_reduce(b, ms, BinOp::Max)?;
                    let big_m = crate::tile::warp_reduce(b, &lm, BinOp::Max)?;
                    // every pair's max is at least the lowest finite f32, so M is finite
                    let scaled = ps
                        .chunks(2)
                        .map(|p| Ok(b.binary(BinOp::Mul, &p[1], &super::exp_diff(b, &p[0], &big_m)?)?))
                        .collect::<Result<Vec<_>>>()?;
                    let part = crate::tile::tree_reduce(b, scaled, BinOp::Add)?;
                    let big_s = crate::tile::warp_reduce(b, &part, BinOp::Add)?;
                    let lg2 = b.unary(UnOp::Lg2Approx, &big_s)?;
                    // 16-bit: y = exp2(x·log2 e − (M·log2 e + log2 S)); f32: the second word
                    // is −log2 S
                    let second = if fast {
                        let floor = b.binary(BinOp::Max, &big_m, &b.f32(-1e37))?;
                        b.unary(UnOp::Neg, &b.fma(&floor, &log2e, &lg2)?)?
                    } else {
                        b.unary(UnOp::Neg, &lg2)?
                    };
                    b.if_then(&lane0, |b| b.store(rowstat, &lit(0), &[big_m.clone(), second.clone()], None))?;
                    Ok(())
                };
                fin(b).map_err(ir)
            })?;
            // every compute thread has passed the barrier after storing slice i − 1 − lag
            let prev = i.clone() - lit(1 + lag);
            let later = prev.clone() + lit(slots);
            let due = b.cmp(CmpOp::Ge, &prev, &zero)?.and(&b.cmp(CmpOp::Lt, &later, &mine)?);
            b.if_then(&lane0.and(&due), |b| issue(b, &slice(&later), &ring_of(&prev).0))?;
            // release the compute warps, then prefetch the next row while they work
            b.named_barrier_arrive(2, block_threads)
        })?;
        b.if_then(&compute, |b| b.named_barrier(2, block_threads))?;
        let next = prefetch(b, &(i.clone() + lit(1)))?;
        b.note(format!("{name}: the compute warps store y of slice i − {lag}"));
        b.if_then(&compute.and(&has_out), |b| -> std::result::Result<(), tilekit_ir::IrError> {
            let q = slice(&j);
            let (row, part) = (q.clone() / lit(kk), q % lit(kk));
            let lo = part * lit(len);
            let (sj, _) = ring_of(&j);
            let st = b.load(rowstat, &lit(0), 2, None)?;
            let (big_m, second) = (&st[0], &st[1]);
            let base = sj * lit(len);
            let yrow = row * y.strides[0].clone();
            let out = |b: &KernelBuilder| -> Result<()> {
                for step in 0..chunks {
                    for (off, inside) in vectors(b, &lo, step)? {
                        let xs = b.load(buf, &(base.clone() + off.clone()), v as usize, None)?;
                        let outs = xs
                            .iter()
                            .map(|e| {
                                let f = b.cvt(e, ScalarType::F32)?;
                                let z = if fast {
                                    b.fma(&f, &log2e, second)?
                                } else {
                                    b.fma(&b.binary(BinOp::Sub, &f, big_m)?, &log2e, second)?
                                };
                                let op = if ftz_out { UnOp::Exp2ApproxFtz } else { UnOp::Exp2Approx };
                                Ok(b.cvt(&b.unary(op, &z)?, ty)?)
                            })
                            .collect::<Result<Vec<_>>>()?;
                        let at = yrow.clone() + lo.clone() + off;
                        b.store(y.mem, &at, &outs, Some(&inside))?;
                    }
                }
                Ok(())
            };
            out(b).map_err(ir)
        })?;
        Ok(next)
    })?;
    Ok(b.finish()?)
}

/// This layer's error inside an IR closure (the builder's closures return `IrError`).
fn ir(e: OpsError) -> tilekit_ir::IrError {
    match e {
        OpsError::Ir(e) => e,
        other => tilekit_ir::IrError::Layout(tilekit_layout::LayoutError::invalid(
            "softmax_ring",
            "error",
            other.to_string(),
            "see the ops layer's error",
        )),
    }
}
