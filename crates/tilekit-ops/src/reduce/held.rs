//! Row softmax with each block's slice **brought in by bulk copies and held in registers**: one
//! exponential per element.
//!
//! [`super::build_softmax_bulk_cluster`] reduces its slice online (a running max, the sum
//! rescaled as the max grows) and exponentiates every element again when it normalises: two
//! `ex2` per element. On an H200 a bf16 row moves 4 bytes per element at ~16 bytes per SM
//! clock, about 4 elements per clock, while the SM's MUFU unit does 16 `ex2` per clock: two per
//! element keep it half busy, on top of the conversions and arithmetic. Here the block first
//! takes the max of its slice (no exponential), then computes `e = exp2((x − m)·log2 e)` once
//! into registers, and the cluster's exchange only rescales:
//!
//! ```text
//!   thread 0: every chunk's bulk copy in flight (one mbarrier each)
//!   all:      for k: wait(bar[k]); x_k = buf[chunk k] → f32 registers;  m ⊕= max x_k   (no ex2)
//!             m = block max;  e = exp2((x − m)·log2 e) (one ex2 each);  s = block Σ e
//!             (M, S) from every block's (m, s) through distributed shared memory
//!             y = cast(e · exp2((m − M)·log2 e) / S)
//! ```
//!
//! A thread holds its `chunks · unroll · V` elements as f32 registers, at most 64.

use tilekit_ir::{Axis, BinOp, CmpOp, Kernel, KernelBuilder, ScalarType};
use tilekit_kernel::lit;

use crate::error::{OpsError, Result};
use crate::tile::block_reduce;

use super::{check_cluster_shape, exp_diff};

/// Row softmax over a cluster of `cluster` blocks (1 = one block per row), each block's slice
/// of `chunks` chunks of `threads · V · unroll` elements brought in by bulk copies and held in
/// registers, one exponential per element (see the [module docs](self)). At most 64 elements
/// per thread (`chunks · unroll · V ≤ 64`). Rows must be 16-byte aligned whole vectors (binding
/// checks it); columns past `cluster · chunks · C` are not written (`api::softmax` picks a
/// covering shape). Launch on `cluster · rows` blocks along x.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::reduce::build_softmax_bulk_held;
/// let k = build_softmax_bulk_held(ScalarType::BF16, 8, 128, 4, 2).unwrap(); // 64 bf16 a thread
/// assert_eq!((k.name.as_str(), k.cluster_dim), ("softmax_bulk_held", [8, 1, 1]));
/// // one per element, one per peer's pair, one for the rescale factor
/// assert_eq!(k.to_string().matches("ex2.approx").count(), 64 + 8 + 1);
/// assert!(build_softmax_bulk_held(ScalarType::BF16, 8, 128, 4, 3).is_err()); // 96 a thread
/// ```
pub fn build_softmax_bulk_held(
    ty: ScalarType,
    cluster: u32,
    threads: u32,
    unroll: i64,
    chunks: i64,
) -> Result<Kernel> {
    check_cluster_shape(ty, threads, cluster)?;
    let size = ty.size_bytes() as i64;
    let v = 16 / size;
    if !(1..=8).contains(&unroll) {
        return Err(OpsError::invalid("softmax", "unroll", unroll, "1..=8 vectors per thread"));
    }
    if chunks < 1 || chunks * unroll * v > 64 {
        return Err(OpsError::invalid(
            "softmax",
            "chunks",
            chunks,
            format!("1..={} (at most 64 elements held per thread)", (64 / (unroll * v)).max(1)),
        ));
    }
    let c = threads as i64 * v * unroll;
    let slice = chunks * c;
    let name = "softmax_bulk_held";
    let b = KernelBuilder::new(name, [threads, 1, 1])?;
    if cluster > 1 {
        b.set_cluster_dim([cluster, 1, 1])?;
    }
    let x = b.tensor_param("x", ty, 2)?;
    let y = b.tensor_param("y", ty, 2)?;
    x.descriptor(Some((v, 1)))?;
    y.descriptor(Some((v, 1)))?;
    let scratch = b.shared("partial", ScalarType::F32, threads as usize / 32)?;
    let stats = b.shared("stats", ScalarType::F32, 2)?;
    let buf = b.shared("slice", ty, slice as usize)?;
    let bars = b.mbarrier("chunk", chunks as usize)?;
    let rank = if cluster > 1 { b.cluster_cta_rank() } else { lit(0) };
    let row = b.block_id(Axis::X) / lit(cluster as i64);
    let n = x.lengths[1].clone();
    let lo = rank * lit(slice);
    let (xrow, yrow) = (row.clone() * x.strides[0].clone(), row * y.strides[0].clone());
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
    b.note(format!("{name}: one mbarrier per chunk, every chunk's bulk copy in flight"));
    super::init_chunk_barriers(&b, &first, bars, chunks)?;
    b.if_then(&first, |b| {
        let zero = lit(0);
        super::issue_slice(b, &x, buf, bars, (&xrow, &lo, &n), (c, chunks), &zero, &zero)
    })?;
    let ninf = b.f32(f32::NEG_INFINITY);
    b.note(format!("{name} pass 1: each chunk into registers as it lands, its max"));
    // (offset in the slice, in-row mask, the vector's values as f32)
    let mut held = vec![];
    let mut maxima = vec![];
    for k in 0..chunks {
        b.mbarrier_wait(bars, &lit(k), &lit(0))?;
        for u in 0..unroll {
            let off = lit(k * c) + (lit(u * threads as i64) + tid.clone()) * lit(v);
            let inside = b.cmp(CmpOp::Lt, &(lo.clone() + off.clone()), &n)?;
            let mut xs = vec![];
            for e in b.load(buf, &off, v as usize, Some(&inside))? {
                let f = b.cvt(&e, ScalarType::F32)?;
                xs.push(b.select(&inside, &f, &ninf)?);
            }
            maxima.push(crate::tile::tree_reduce(&b, xs.clone(), BinOp::Max)?);
            held.push((off, inside, xs));
        }
    }
    let mx = crate::tile::tree_reduce(&b, maxima, BinOp::Max)?;
    let m = block_reduce(&b, &b.binary(BinOp::Max, &mx, &b.f32(f32::MIN))?, BinOp::Max, scratch)?;
    b.note(format!("{name} pass 2: one exponential per element, the block's sum"));
    let mut sums = vec![];
    for (_, _, xs) in held.iter_mut() {
        for x in xs.iter_mut() {
            *x = exp_diff(&b, x, &m)?;
        }
        sums.push(crate::tile::tree_reduce(&b, xs.clone(), BinOp::Add)?);
    }
    let s =
        block_reduce(&b, &crate::tile::tree_reduce(&b, sums, BinOp::Add)?, BinOp::Add, scratch)?;
    let (big_m, big_s) = if cluster > 1 {
        super::cluster_combine(&b, name, stats, cluster, &m, &s)?
    } else {
        (m.clone(), s)
    };
    let f = b.binary(BinOp::Div, &exp_diff(&b, &m, &big_m)?, &big_s)?;
    b.note(format!("{name}: rescale and store"));
    for (off, inside, es) in held {
        let out = es
            .iter()
            .map(|e| Ok(b.cvt(&b.binary(BinOp::Mul, e, &f)?, ty)?))
            .collect::<Result<Vec<_>>>()?;
        b.store(y.mem, &(yrow.clone() + lo.clone() + off), &out, Some(&inside))?;
    }
    if cluster > 1 {
        b.note(format!("{name}: no block exits while another may still read its stats"));
        b.cluster_barrier()?;
    }
    Ok(b.finish()?)
}
