//! Row softmax on a **persistent grid of clusters** with the next row's slice in flight while
//! the current one is reduced: the long-row kernel that keeps DRAM busy across the cluster's
//! exchange.
//!
//! The one-row-per-cluster kernels ([`super::build_softmax_bulk_cluster`] and the streaming
//! ones) stop reading memory while a row's blocks reduce, exchange their (max, sum) and
//! normalise: a block's loads, its barriers and its stores come one after another, and a new
//! cluster must be scheduled for every row. Here a cluster stays resident and walks rows
//! `g, g + G, g + 2G, …` (`g` its cluster index, `G` the clusters in the grid) through a ring
//! of S shared-memory stages per block: the bulk copies of rows `i + 1 … i + S − 1` are in
//! flight while row `i` is reduced, and row `i + S`'s copies are issued the moment row `i`'s
//! stage is free. (Bytes in flight per SM are what keep DRAM busy: two stages of a 16 KiB slice
//! on one block per SM reached a quarter of the copy bandwidth on an H200.)
//!
//! ```text
//!   block r of cluster g (stages 0..S, each one slice of `chunks` chunks of C elements)
//!   prologue: thread 0 issues row g + j·G → stage j, j < S                (bulk copies on mbarriers)
//!   for i = 0, 1, …   (row = g + i·G, stage s = i mod S, parity ⌊i/S⌋ mod 2)
//!     wait full[s][k] for each chunk k; online (m, σ) over stage s         ← rows i+1.. land meanwhile
//!     block reduce; stats[i mod 2] = (m, σ); barrier.cluster; (M, Σ) from every block's stats
//!     y[row, slice] = exp2((stage s − M)·log2 e) / Σ                       (stores, no waiting)
//!     bar.sync; thread 0 issues row g+(i+S)·G → stage s                    (the stage is free)
//!   barrier.cluster (no block exits while a peer may read its stats)
//! ```
//!
//! One cluster barrier per row suffices: block r writes `stats[i mod 2]` again two rows later,
//! after the barrier of row `i + 1`, which every peer reaches only after reading row `i`'s pair.
//! The grid is any multiple of the cluster size (the rows are strided over the clusters); it is
//! fastest when every cluster is resident at once (see `api::softmax`).

use tilekit_ir::{Axis, BinOp, CmpOp, IrError, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_kernel::lit;
use tilekit_kernel::ring::PipelineState;

use crate::error::{OpsError, Result};
use crate::tile::block_reduce;

use super::{check_cluster_shape, exp_diff};

/// Row softmax on a persistent grid of `cluster`-block clusters, each block owning a slice of
/// `chunks` chunks of `threads · V · unroll` elements of a row (V = 16 bytes / element size),
/// brought in by bulk copies into a ring of `stages` shared-memory stages, so `stages − 1`
/// rows are in flight while one is reduced (see the [module docs](self)). Rows must be 16-byte aligned whole vectors (bulk copies move 16-byte
/// units; binding checks it); columns past `cluster · chunks · C` are not written
/// (`api::softmax` picks a covering shape). Launch on any multiple of `cluster` blocks along x.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::reduce::build_softmax_persistent(ScalarType::BF16, 4, 128, 8, 4, 2).unwrap();
/// assert_eq!((k.name.as_str(), k.cluster_dim), ("softmax_persistent", [4, 1, 1]));
/// // two stages of 4 chunks of 128 · 8 · 8 bf16, the warp partials, two stats pairs, 8 mbarriers
/// assert_eq!(k.shared_bytes(), 2 * 4 * 8192 * 2 + 4 * 4 + 4 * 4 + 8 * 8);
/// assert!(tilekit_ops::reduce::build_softmax_persistent(ScalarType::F32, 4, 128, 8, 40, 2).is_err());
/// assert!(tilekit_ops::reduce::build_softmax_persistent(ScalarType::F32, 4, 128, 8, 4, 1).is_err());
/// ```
pub fn build_softmax_persistent(
    ty: ScalarType,
    cluster: u32,
    threads: u32,
    unroll: i64,
    chunks: i64,
    stages: i64,
) -> Result<Kernel> {
    check_cluster_shape(ty, threads, cluster)?;
    if stages < 2 {
        return Err(OpsError::invalid("softmax", "stages", stages, "at least 2 (one in flight)"));
    }
    if !(1..=8).contains(&unroll) {
        return Err(OpsError::invalid("softmax", "unroll", unroll, "1..=8 vectors per thread"));
    }
    let size = ty.size_bytes() as i64;
    let v = 16 / size;
    let c = threads as i64 * v * unroll;
    if chunks < 1 || stages * chunks * c * size > 200 * 1024 {
        return Err(OpsError::invalid(
            "softmax",
            "chunks × stages",
            format!("{chunks} × {stages}"),
            format!(
                "at most {} chunks in all (the stages must fit 200 KiB of shared memory)",
                200 * 1024 / (c * size)
            ),
        ));
    }
    let slice = chunks * c;
    let name = "softmax_persistent";
    let b = KernelBuilder::new(name, [threads, 1, 1])?;
    if cluster > 1 {
        b.set_cluster_dim([cluster, 1, 1])?;
    }
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("y", ty, 2)?;
    // full 16-byte vectors: the binding checks 16-byte aligned rows
    x.descriptor(Some((v, 1)))?;
    y.descriptor(Some((v, 1)))?;
    let scratch = b.shared("partial", ScalarType::F32, threads as usize / 32)?;
    let stats = b.shared("stats", ScalarType::F32, 4)?;
    let buf = b.shared("stages", ty, (stages * slice) as usize)?;
    let bars = b.mbarrier("full", (stages * chunks) as usize)?;
    let ctas = lit(cluster as i64);
    let rank = if cluster > 1 { b.cluster_cta_rank() } else { lit(0) };
    let g = b.block_id(Axis::X) / ctas.clone();
    let big_g = b.grid_dim(Axis::X) / ctas;
    let rows = x.lengths[0].clone();
    let n = x.lengths[1].clone();
    let lo = rank * lit(slice);
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
    // thread 0: the bulk copies of `row` into stage `s` (chunk k completes on full[s·chunks + k])
    let issue = |b: &KernelBuilder, row: &Val, s: &Val| -> std::result::Result<(), IrError> {
        let real = b.cmp(CmpOp::Lt, row, &rows)?;
        b.if_then(&real, |b| {
            let xrow = row.clone() * x.strides[0].clone();
            let (dst, bar0) = (s.clone() * lit(slice), s.clone() * lit(chunks));
            super::issue_slice(b, &x, buf, bars, (&xrow, &lo, &n), (c, chunks), &dst, &bar0)
        })?;
        Ok(())
    };
    b.note(format!("{name}: one mbarrier per chunk and stage; rows g + j·G in flight, j < stages"));
    b.if_then(&first, |b| {
        for k in 0..stages * chunks {
            b.mbarrier_init(bars, &lit(k), &lit(1))?;
        }
        b.fence_mbarrier_init();
        Ok(())
    })?;
    if cluster > 1 {
        // peers' mbarriers are not touched, but their stats are: start together
        b.cluster_barrier()?;
    } else {
        b.barrier();
    }
    b.if_then(&first, |b| {
        for j in 0..stages {
            issue(b, &(g.clone() + big_g.clone() * lit(j)), &lit(j))?;
        }
        Ok(())
    })?;
    // the vectors of chunk k this thread owns: (offset in the slice, in-row mask)
    let vectors = |b: &KernelBuilder, k: i64| -> Result<Vec<(Val, tilekit_ir::Pred)>> {
        (0..unroll)
            .map(|u| {
                let off = lit(k * c) + (lit(u * threads as i64) + tid.clone()) * lit(v);
                let inside = b.cmp(CmpOp::Lt, &(lo.clone() + off.clone()), &n)?;
                Ok((off, inside))
            })
            .collect()
    };
    let ninf = b.f32(f32::NEG_INFINITY);
    crate::tile::for_range(&b, &g, &rows, &big_g, &[lit(0)], |b, row, it| {
        let i = &it[0];
        let PipelineState { stage: s, phase: parity, .. } = PipelineState::at(i, stages);
        let pair = b.binary(BinOp::Rem, i, &lit(2))? * lit(2);
        let base = s.clone() * lit(slice);
        b.note(format!("{name} pass 1: online max and sum over stage s as its chunks land"));
        let mut m = b.f32(f32::MIN);
        let mut sum = b.f32(0.0);
        for k in 0..chunks {
            b.mbarrier_wait(bars, &(s.clone() * lit(chunks) + lit(k)), &parity)?;
            let mut xs = vec![];
            for (off, inside) in vectors(b, k)? {
                for e in b.load(buf, &(base.clone() + off), v as usize, Some(&inside))? {
                    let f = b.cvt(&e, ScalarType::F32)?;
                    xs.push(b.select(&inside, &f, &ninf)?);
                }
            }
            let mx = crate::tile::tree_reduce(b, xs.clone(), BinOp::Max)?;
            let m2 = b.binary(BinOp::Max, &m, &mx)?;
            let es = xs.iter().map(|x| exp_diff(b, x, &m2)).collect::<Result<Vec<_>>>()?;
            let e = crate::tile::tree_reduce(b, es, BinOp::Add)?;
            sum = b.binary(BinOp::Add, &b.binary(BinOp::Mul, &sum, &exp_diff(b, &m, &m2)?)?, &e)?;
            m = m2;
        }
        let bm = block_reduce(b, &m, BinOp::Max, scratch)?;
        let part = b.binary(BinOp::Mul, &sum, &exp_diff(b, &m, &bm)?)?;
        let bs = block_reduce(b, &part, BinOp::Add, scratch)?;
        let (big_m, big_s) = if cluster > 1 {
            super::cluster_combine_at(b, name, stats, &pair, cluster, &bm, &bs)?
        } else {
            (bm, bs)
        };
        let inv = b.binary(BinOp::Div, &b.f32(1.0), &big_s)?;
        b.note(format!("{name} pass 2: normalise stage s and store"));
        let yrow = row.clone() * y.strides[0].clone();
        for k in 0..chunks {
            for (off, inside) in vectors(b, k)? {
                let xs = b.load(buf, &(base.clone() + off.clone()), v as usize, Some(&inside))?;
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
        }
        b.note(format!("{name}: stage s is free, thread 0 brings in row i + stages"));
        b.barrier();
        b.if_then(&first, |b| {
            issue(b, &(row.clone() + big_g.clone() * lit(stages)), &s)?;
            Ok(())
        })?;
        Ok(vec![i.clone() + lit(1)])
    })?;
    if cluster > 1 {
        b.note(format!("{name}: no block exits while a peer may still read its stats"));
        b.cluster_barrier()?;
    }
    Ok(b.finish()?)
}

/// How many blocks of `kernel` an SM holds at once, by its shared memory (227 KiB per SM, 1 KiB
/// reserved per block) and threads (2048 per SM), at most 32: the persistent grid launches this
/// many per SM.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::{build_softmax_persistent, resident_blocks};
/// let k = build_softmax_persistent(ScalarType::BF16, 4, 128, 8, 4, 2).unwrap(); // 128 KiB of stages
/// assert_eq!(resident_blocks(&k), 1);
/// let k = build_softmax_persistent(ScalarType::BF16, 4, 128, 8, 1, 2).unwrap(); // 32 KiB
/// assert_eq!(resident_blocks(&k), 6);
/// ```
pub fn resident_blocks(kernel: &Kernel) -> u32 {
    let by_smem = (227 * 1024 / (kernel.shared_bytes() + 1024)).max(1) as u32;
    let by_threads = (2048 / kernel.block_dim[0].max(1)).max(1);
    by_smem.min(by_threads).min(32)
}
