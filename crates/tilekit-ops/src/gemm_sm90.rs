//! GEMM on Hopper's asynchronous machinery: TMA tiles into a shared-memory ring, wgmma from
//! descriptors derived from the swizzled tile layouts, a producer warpgroup and two consumer
//! warpgroups (warp specialisation with `setmaxnreg`).
//!
//! ```text
//!   C (M×N, row-major) = A (M×K, row-major) · Bᵀ   with B stored N×K, row-major ("TN": both
//!   operands K-contiguous, the layout wgmma reads without transposing)
//!
//!   block (BM = 128) × (BN) of C, 384 threads:
//!   warpgroup 0 (producer, setmaxnreg.dec 40)     warpgroups 1, 2 (consumers, setmaxnreg.inc 232)
//!   one thread, for kt = 0 .. ⌈K/64⌉:             for kt:  s = kt mod S, round r = ⌊kt/S⌋
//!     s = kt mod S, round r = ⌊kt/S⌋                wait full[s] parity r mod 2
//!     wait empty[s] parity (r+1) mod 2              wgmma.fence
//!     arrive.expect_tx(full[s], A + B tile bytes)   4 × wgmma m64nBNk16 (A rows 64·(wg−1).., B)
//!     TMA A[m0.., k0..] (64 × 128 box, 128B swz)    commit; wait_group 0
//!     TMA B[n0.., k0..] (64 × BN box, 128B swz)     arrive empty[s]              (256 arrivals)
//!                                                 C[m0 + 64·(wg−1) + row, n0 + col] = acc (masked)
//!
//!   shared: S stages of { A tile 128×64, B tile BN×64 } bf16/f16, each the TMA box image with
//!   the 128-byte swizzle = HopperSwizzle::B128.descriptor(rows, 64, 2), from which both the
//!   tensor map and the wgmma descriptors are derived
//! ```
//!
//! Edges: TMA fills the parts of a box outside A or B with zeros (so K need not be a multiple
//! of 64, nor M, N of the tile), and the stores of C are masked. TMA needs 16-byte aligned rows:
//! K a multiple of 8 elements.

use tilekit_ir::tma::{OobFill, TensorMapSpec, TmaSwizzle};
use tilekit_ir::wgmma::{acc_coord, Acc, Major, SmemMatrix, WgmmaShape, WgmmaSrc, WgmmaType};
use tilekit_ir::{Axis, BinOp, CmpOp, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::swizzle::HopperSwizzle;
use tilekit_layout::Idx;

use crate::error::{OpsError, Result};

/// Rows of C per block (two consumer warpgroups of 64).
pub const BM: i64 = 128;
/// K per stage (one 128-byte swizzle row of 16-bit elements).
pub const BK: i64 = 64;

/// The shape of a [`build_gemm_sm90`] kernel.
///
/// ```
/// let c = tilekit_ops::gemm_sm90::GemmConfig::default();
/// assert_eq!((c.bn, c.stages), (128, 4));
/// assert_eq!(c.shared_bytes(), 4 * (128 * 64 + 128 * 64) * 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GemmConfig {
    /// Input element type (F16 or BF16).
    pub input: ScalarType,
    /// Output element type (the input type or F32).
    pub output: ScalarType,
    /// Columns of C per block (the wgmma's N): 64, 128, 192 or 256.
    pub bn: i64,
    /// Stages of the shared-memory ring (2..=8, and they must fit 227 KiB).
    pub stages: i64,
    /// Keep one wgmma group in flight: each consumer waits with `wait_group 1` and releases the
    /// previous stage, so the next stage's wgmmas are issued while the last ones still run.
    pub overlap: bool,
}

impl Default for GemmConfig {
    fn default() -> Self {
        GemmConfig {
            input: ScalarType::BF16,
            output: ScalarType::BF16,
            bn: 128,
            stages: 4,
            overlap: false,
        }
    }
}

impl GemmConfig {
    /// Bytes of the ring's tiles.
    pub fn shared_bytes(&self) -> i64 {
        self.stages * (BM * BK + self.bn * BK) * self.input.size_bytes() as i64
    }

    /// Types, tile width and stages; a named error otherwise.
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::GemmConfig;
    /// assert!(GemmConfig { bn: 96, ..GemmConfig::default() }.check().is_err());
    /// assert!(GemmConfig { stages: 7, bn: 256, ..GemmConfig::default() }.check().is_err()); // 336 KiB
    /// ```
    pub fn check(&self) -> Result<()> {
        let op = "gemm_sm90";
        if !matches!(self.input, ScalarType::F16 | ScalarType::BF16) {
            return Err(OpsError::invalid(op, "input type", self.input, "f16 or bf16"));
        }
        if self.output != self.input && self.output != ScalarType::F32 {
            return Err(OpsError::invalid(
                op,
                "output type",
                self.output,
                format!("{} (the input type) or f32", self.input),
            ));
        }
        if ![64, 128, 192, 256].contains(&self.bn) {
            return Err(OpsError::invalid(op, "bn", self.bn, "64, 128, 192 or 256"));
        }
        if !(2..=8).contains(&self.stages) || self.shared_bytes() > 227 * 1024 {
            return Err(OpsError::invalid(
                op,
                "stages",
                self.stages,
                format!(
                    "2..=8 whose tiles fit 227 KiB ({} KiB a stage)",
                    (BM + self.bn) * BK * 2 / 1024
                ),
            ));
        }
        Ok(())
    }
}

fn lit(v: i64) -> Val {
    <Val as Idx>::lit(v)
}

/// The warp-specialised TMA + wgmma GEMM (see the [module docs](self)). Params: `a`, `b`
/// (pointers; A is M×K, B is N×K, both row-major), `am`, `bm` (their tensor maps: boxes of
/// 64 × 128 and 64 × BN with the 128-byte swizzle), `c` (a 2-D tensor M×N of the output type,
/// any row stride), `k` (i32). Launch on `(⌈N/BN⌉, ⌈M/128⌉)` blocks.
///
/// ```
/// use tilekit_ops::gemm_sm90::{build_gemm_sm90, GemmConfig};
/// let k = build_gemm_sm90(GemmConfig::default()).unwrap();
/// assert_eq!(k.block_dim, [384, 1, 1]);
/// assert!(k.to_string().contains("wgmma.mma_async"));
/// ```
pub fn build_gemm_sm90(cfg: GemmConfig) -> Result<Kernel> {
    cfg.check()?;
    let (elem, bn, stages) = (cfg.input, cfg.bn, cfg.stages);
    let ty = WgmmaType::of(elem).expect("checked: f16 or bf16");
    let eb = elem.size_bytes() as i64;
    let b = KernelBuilder::new("gemm_sm90", [384, 1, 1])?;
    let ga = b.ptr_param("a", elem)?;
    let gb = b.ptr_param("b", elem)?;
    let am = b.tensor_map_param(
        "am",
        ga,
        TensorMapSpec::new(elem, &[BK as u32, BM as u32], TmaSwizzle::B128, OobFill::Zero)?,
    )?;
    let bmap = b.tensor_map_param(
        "bm",
        gb,
        TensorMapSpec::new(elem, &[BK as u32, bn as u32], TmaSwizzle::B128, OobFill::Zero)?,
    )?;
    let c = b.tensor_param("c", cfg.output, 2)?;
    // pairs of columns stored together: unit column stride, even row stride (binding checks)
    c.descriptor(Some((2, 1)))?;
    let kk = b.scalar_param("k", ScalarType::I32)?;
    // the tiles: TMA box images with the 128-byte swizzle, and the wgmma views of them
    let a_layout = HopperSwizzle::B128.descriptor(64, BK, eb)?;
    let b_layout = HopperSwizzle::B128.descriptor(bn, BK, eb)?;
    let ma =
        SmemMatrix::from_layout(&a_layout, Major::K, elem).map_err(tilekit_ir::IrError::from)?;
    let mb =
        SmemMatrix::from_layout(&b_layout, Major::K, elem).map_err(tilekit_ir::IrError::from)?;
    let (a_elems, b_elems) = (BM * BK, bn * BK);
    let sa = b.shared("a_ring", elem, (stages * a_elems) as usize)?;
    let sb = b.shared("b_ring", elem, (stages * b_elems) as usize)?;
    let full = b.mbarrier("full", stages as usize)?;
    let empty = b.mbarrier("empty", stages as usize)?;
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
    b.note("gemm_sm90: the ring's barriers (full: the producer's TMA bytes; empty: 256 consumer arrivals)");
    b.if_then(&first, |b| {
        for s in 0..stages {
            b.mbarrier_init(full, &lit(s), &lit(1))?;
            b.mbarrier_init(empty, &lit(s), &lit(256))?;
        }
        b.fence_mbarrier_init();
        Ok(())
    })?;
    b.barrier();
    let m0 = b.block_id(Axis::Y) * lit(BM);
    let n0 = b.block_id(Axis::X) * lit(bn);
    let tiles = (kk.clone() + lit(BK - 1)) / lit(BK);
    let wg = b.warpgroup_id();
    let producer = b.cmp(CmpOp::Eq, &wg, &lit(0))?;
    let stage_bytes = (a_elems + b_elems) * eb;
    b.if_then_else(
        &producer,
        |b| {
            b.setmaxnreg(false, 40)?;
            b.if_then(&first, |b| {
                b.note("gemm_sm90 producer: TMA tiles into the ring");
                b.for_range(&lit(0), &tiles, &lit(1), &[], |b, kt, _| {
                    let s = kt.clone() % lit(stages);
                    let round = kt.clone() / lit(stages);
                    let parity = (round.clone() + lit(1)) % lit(2);
                    b.mbarrier_wait(empty, &s, &parity)?;
                    b.mbarrier_arrive(full, &s, Some(&lit(stage_bytes)))?;
                    let k0 = b.cvt(&(kt.clone() * lit(BK)), ScalarType::I32)?;
                    let mi = b.cvt(&m0, ScalarType::I32)?;
                    let ni = b.cvt(&n0, ScalarType::I32)?;
                    b.tensor_load(sa, &(s.clone() * lit(a_elems)), am, &[k0.clone(), mi], full, &s)?;
                    b.tensor_load(sb, &(s.clone() * lit(b_elems)), bmap, &[k0, ni], full, &s)?;
                    Ok(vec![])
                })?;
                Ok(())
            })?;
            Ok(vec![])
        },
        |b| {
            b.setmaxnreg(true, 232)?;
            b.note("gemm_sm90 consumers: wgmma over the landed stages");
            let shape = WgmmaShape::new(ty, bn as u32)?;
            let zero = b.f32(0.0);
            let init = vec![zero; shape.acc_regs()];
            let half = wg.clone() - lit(1);
            let acc = b.for_range(&lit(0), &tiles, &lit(1), &init, |b, kt, acc| {
                let s = kt.clone() % lit(stages);
                let parity = (kt.clone() / lit(stages)) % lit(2);
                b.mbarrier_wait(full, &s, &parity)?;
                b.wgmma_fence()?;
                let a_at = s.clone() * lit(a_elems) + half.clone() * lit(64 * BK);
                let b_at = s.clone() * lit(b_elems);
                let mut acc = acc.to_vec();
                for blk in 0..(BK / 16) as usize {
                    let da = b.wgmma_desc(sa, &a_at, &ma, blk)?;
                    let db = b.wgmma_desc(sb, &b_at, &mb, blk)?;
                    acc = b.wgmma(shape, &WgmmaSrc::Smem(da), &db, Acc::Add(&acc))?;
                }
                b.wgmma_commit()?;
                if cfg.overlap {
                    // this stage's group may still run: the previous one has finished reading
                    b.wgmma_wait(1)?;
                    let has_prev = b.cmp(CmpOp::Gt, &kt, &lit(0))?;
                    b.if_then(&has_prev, |b| {
                        let prev = (kt.clone() + lit(stages - 1)) % lit(stages);
                        b.mbarrier_arrive(empty, &prev, None)
                    })?;
                } else {
                    b.wgmma_wait(0)?;
                    b.mbarrier_arrive(empty, &s, None)?;
                }
                Ok(acc)
            })?;
            if cfg.overlap {
                b.wgmma_wait(0)?;
            }
            b.note("gemm_sm90 epilogue: the accumulator fragment to C, masked at the edges");
            let t = tid.clone() - lit(128) - half.clone() * lit(128);
            let (warp, lane) = (t.clone() / lit(32), t % lit(32));
            let (m, n) = (c.lengths[0].clone(), c.lengths[1].clone());
            for i in (0..acc.len()).step_by(2) {
                let (r0, c0) = acc_coord(0, i);
                let row = m0.clone()
                    + half.clone() * lit(64)
                    + warp.clone() * lit(16)
                    + lane.clone() / lit(4)
                    + lit(r0 as i64);
                let col = n0.clone() + lane.clone() % lit(4) * lit(2) + lit(c0 as i64);
                let at = row.clone() * c.strides[0].clone() + col.clone();
                let vals = [b.cvt(&acc[i], cfg.output)?, b.cvt(&acc[i + 1], cfg.output)?];
                // both columns inside, or (odd N) only the first: min of the slacks ≥ 0
                let rows_left = m.clone() - lit(1) - row;
                let slack = |b: &KernelBuilder, cols: i64| -> std::result::Result<tilekit_ir::Pred, tilekit_ir::IrError> {
                    let cols_left = n.clone() - lit(cols) - col.clone();
                    let least = b.binary(BinOp::Min, &rows_left, &cols_left)?;
                    b.cmp(CmpOp::Ge, &least, &lit(0))
                };
                let pair = slack(b, 2)?;
                let single = slack(b, 1)?;
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
            Ok(vec![])
        },
    )?;
    Ok(b.finish()?)
}
