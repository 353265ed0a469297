//! A coverage kernel per scalar type: every op the builder accepts, for assembling with ptxas
//! (CI) and for comparing a GPU with the interpreter bit for bit (`tilekit selftest`).

pub mod tma;

use tilekit_ir::{
    lit, Axis, BinOp, CmpOp, IrError, Kernel, KernelBuilder, Lit, ScalarType, ShflMode, UnOp,
};
use tilekit_layout::Idx;

/// The scalar types with memory and arithmetic.
pub const TYPES: [ScalarType; 7] = [
    ScalarType::I32,
    ScalarType::U32,
    ScalarType::I64,
    ScalarType::F16,
    ScalarType::BF16,
    ScalarType::F32,
    ScalarType::F64,
];

/// One kernel per type exercising every op the builder accepts for it: loads (vector, masked),
/// unary and binary ops, fma, compares and selects, conversions to every type and back, votes,
/// shuffles, shared memory with a barrier, a loop with a carried value, an if/else and masked
/// vector stores, with the grid-dependency wait before the first global access and the
/// dependents' trigger after the last global load. Parameters: `x` (input, `64·grid·W` elements where W is the widest vector of
/// the type), `y` (output, same length), `n` (elements per row of threads that are active).
/// With `approx = false` the fast approximate functions are left out, so that a GPU and the
/// interpreter agree bit for bit.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ptx::coverage::every_op(ScalarType::F32, false).unwrap();
/// assert!(k.to_string().contains("bar.sync"));
/// ```
pub fn every_op(t: ScalarType, approx: bool) -> Result<Kernel, IrError> {
    let b = KernelBuilder::new(
        &format!("every_op_{}{}", t.name(), if approx { "_approx" } else { "" }),
        [64, 1, 1],
    )?;
    let x = b.ptr_param("x", t)?;
    let y = b.ptr_param("y", t)?;
    let n = b.scalar_param("n", ScalarType::I32)?;
    let tid = b.thread_id(Axis::X);
    let gid = b.block_id(Axis::X) * Idx::lit(64) + tid.clone();
    let inside = b.cmp(CmpOp::Lt, &gid, &n)?;
    let widest = tilekit_ir::op::valid_vector_widths(t).last().copied().unwrap_or(1);
    // programmatic dependent launch: wait before the first global access, trigger after the
    // last global load (no-ops without such a launch, and on sm_80)
    b.grid_dependency_wait();
    let vec = b.load(x, &(gid.clone() * Idx::lit(widest as i64)), widest, Some(&inside))?;
    let a = b.load(x, &gid, 1, None)?.remove(0);
    // a masked load whose masked-off lanes get a fill (1 of the type) instead of zeros
    let one = Lit::float(t, 1.0).or(Lit::int(t, 1)).unwrap_or(Lit::pred(true));
    let filled = b.load_fill(x, &gid, 1, Some(&inside), &one)?.remove(0);
    b.launch_dependents();
    // never zero for integers: masked-off lanes load 0, the unmasked `a` is an input (>= 1)
    let c = b.binary(BinOp::Max, &vec[widest - 1], &a)?;
    let mut acc = a.clone();
    for op in [
        UnOp::Neg,
        UnOp::Not,
        UnOp::Abs,
        UnOp::Exp2Approx,
        UnOp::Exp2ApproxFtz,
        UnOp::RcpApprox,
        UnOp::RsqrtApprox,
        UnOp::Sqrt,
    ] {
        if let Ok(v) = b.unary(op, &acc) {
            acc = v;
        }
    }
    for op in [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Min,
        BinOp::Max,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Shr,
    ] {
        if let Ok(v) = b.binary(op, &acc, &c) {
            acc = v;
        }
    }
    acc = b.fma(&acc, &c, &a)?;
    acc = b.binary(BinOp::Max, &acc, &filled).unwrap_or(acc);
    if matches!(t, ScalarType::F16 | ScalarType::BF16) {
        // packed pairs of 16-bit floats (max.f16x2 / min.bf16x2)
        let hi = b.binary_pair(BinOp::Max, [&acc, &c], [&filled, &a])?;
        let lo = b.binary_pair(BinOp::Min, [&hi[0], &a], [&hi[1], &c])?;
        acc = b.select(&inside, &lo[0], &lo[1])?;
    }
    for op in [CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Eq, CmpOp::Ne] {
        let p = b.cmp(op, &acc, &c)?;
        acc = b.select(&p, &acc, &c)?;
    }
    for to in TYPES {
        let v = b.cvt(&acc, to)?;
        let back = b.cvt(&v, t)?;
        acc = b.binary(BinOp::Max, &acc, &back).unwrap_or(back);
    }
    let zero = b.cvt(&b.i32(0), t)?;
    let p = b.cmp(CmpOp::Ne, &acc, &zero)?;
    let q = b.vote_any(&p)?;
    let r = b.vote_all(&q)?;
    let ballot = b.ballot(&r)?;
    let ballot_t = b.cvt(&ballot, t)?;
    acc = b.select(&r, &acc, &ballot_t)?;
    for mode in [ShflMode::Idx, ShflMode::Up, ShflMode::Down, ShflMode::Bfly] {
        // the builder refuses non-32-bit shuffles with a typed error
        if let Ok(v) = b.shfl(mode, &acc, &Idx::lit(1)) {
            acc = v;
        }
    }
    let s = b.shared("stage", t, 64 * widest)?;
    b.store(s, &(tid.clone() * Idx::lit(widest as i64)), &vec, None)?;
    b.barrier();
    let back = b.load(
        s,
        &(((tid.clone() + Idx::lit(1)) % Idx::lit(64)) * Idx::lit(widest as i64)),
        widest,
        None,
    )?;
    let sums = b.for_range(&Idx::lit(0), &n, &Idx::lit(1), &[acc.clone()], |b, i, carried| {
        let iv = b.cvt(&i, t)?;
        Ok(vec![b.binary(BinOp::Add, &carried[0], &iv)?])
    })?;
    let chosen =
        b.if_then_else(&inside, |_| Ok(vec![sums[0].clone()]), |_| Ok(vec![back[0].clone()]))?;
    let mut out = back.clone();
    out[0] = chosen[0].clone();
    b.store(y, &(gid * Idx::lit(widest as i64)), &out, Some(&inside))?;
    b.finish()
}

/// A kernel with more shared memory than PTX allows statically (96 KiB + a small second
/// allocation): 256 threads stage `x` (24576 f32 per block) through shared memory and write it
/// back reversed into `y`. It must be launched with dynamic shared memory (see
/// [`crate::emit::shared_layout`]).
///
/// ```
/// let k = tilekit_ptx::coverage::big_shared().unwrap();
/// assert!(tilekit_ptx::emit::shared_layout(&k).dynamic);
/// ```
pub fn big_shared() -> Result<Kernel, IrError> {
    const N: i64 = 24 * 1024;
    let b = KernelBuilder::new("big_shared", [256, 1, 1])?;
    let x = b.ptr_param("x", ScalarType::F32)?;
    let y = b.ptr_param("y", ScalarType::F32)?;
    let small = b.shared("small", ScalarType::F32, 4)?;
    let s = b.shared("stage", ScalarType::F32, N as usize)?;
    let tid = b.thread_id(Axis::X);
    let base = b.block_id(Axis::X) * Idx::lit(N);
    b.for_range(&Idx::lit(0), &Idx::lit(N / 256), &Idx::lit(1), &[], |b, k, _| {
        let i = k * Idx::lit(256) + tid.clone();
        let v = b.load(x, &(base.clone() + i.clone()), 1, None)?;
        b.store(s, &i, &v, None)?;
        Ok(vec![])
    })?;
    let first = b.cmp(CmpOp::Eq, &tid, &Idx::lit(0))?;
    b.if_then(&first, |b| b.store(small, &Idx::lit(0), &[b.f32(1.0)], None))?;
    b.barrier();
    let one = b.load(small, &Idx::lit(0), 1, None)?.remove(0);
    b.for_range(&Idx::lit(0), &Idx::lit(N / 256), &Idx::lit(1), &[], |b, k, _| {
        let i = k * Idx::lit(256) + tid.clone();
        let v = b.load(s, &(<tilekit_ir::Val as Idx>::lit(N - 1) - i.clone()), 1, None)?.remove(0);
        let w = b.binary(BinOp::Mul, &v, &one)?;
        b.store(y, &(base.clone() + i), &[w], None)?;
        Ok(vec![])
    })?;
    b.finish()
}

/// Elements of one tile of [`bulk_pipeline`] (2 KiB of f32).
pub const BULK_TILE: i64 = 512;

/// A bulk-copy pipeline over a ring of `stages` shared-memory stages: each block walks `tiles`
/// tiles of [`BULK_TILE`] f32 (its own run of `x`); thread 0 keeps the ring full with bulk loads
/// that complete on one mbarrier per stage (`arrive.expect_tx`), every thread waits on the
/// stage's phase, computes `2x + 1` into an output stage, fences the generic writes for the
/// async proxy, and thread 0 writes the stage back with a bulk store, retiring the store of the
/// same stage `stages` tiles earlier (`wait_group.read`) before the stage is written again.
/// Params `x`, `y` (f32), `tiles` (i32); one block per `tiles · 512` elements.
///
/// ```
/// let k = tilekit_ptx::coverage::bulk_pipeline(2).unwrap();
/// let text = k.to_string();
/// assert!(text.contains("mbarrier.arrive.expect_tx") && text.contains("cp.async.bulk.wait_group.read 1"));
/// assert!(tilekit_ptx::coverage::bulk_pipeline(0).is_err());
/// ```
pub fn bulk_pipeline(stages: i64) -> Result<Kernel, IrError> {
    if !(1..=8).contains(&stages) {
        return Err(IrError::Invalid {
            op: "bulk_pipeline".into(),
            what: "stages".into(),
            value: stages.to_string(),
            valid: "1..=8".into(),
        });
    }
    let t = BULK_TILE;
    let b = KernelBuilder::new(&format!("bulk_pipeline_{stages}"), [128, 1, 1])?;
    let x = b.ptr_param("x", ScalarType::F32)?;
    let y = b.ptr_param("y", ScalarType::F32)?;
    let tiles = b.scalar_param("tiles", ScalarType::I32)?;
    let inbuf = b.shared("in", ScalarType::F32, (stages * t) as usize)?;
    let outbuf = b.shared("out", ScalarType::F32, (stages * t) as usize)?;
    let full = b.mbarrier("full", stages as usize)?;
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
    let base = b.block_id(Axis::X) * tiles.clone() * lit(t);
    b.note("bulk pipeline: thread 0 initialises one mbarrier per stage");
    b.if_then(&first, |b| {
        for s in 0..stages {
            b.mbarrier_init(full, &lit(s), &lit(1))?;
        }
        b.fence_mbarrier_init();
        Ok(())
    })?;
    b.barrier();
    b.note("bulk pipeline: fill the ring");
    let fill = b.binary(BinOp::Min, &lit(stages), &tiles)?;
    b.if_then(&first, |b| {
        b.for_range(&lit(0), &fill, &lit(1), &[], |b, i, _| {
            b.mbarrier_arrive(full, &i, Some(&lit(t * 4)))?;
            b.bulk_load(
                inbuf,
                &(i.clone() * lit(t)),
                x,
                &(base.clone() + i.clone() * lit(t)),
                &lit(t),
                full,
                &i,
            )?;
            Ok(vec![])
        })?;
        Ok(())
    })?;
    b.for_range(&lit(0), &tiles, &lit(1), &[], |b, i, _| {
        let s = i.clone() % lit(stages);
        let parity = (i.clone() / lit(stages)) % lit(2);
        b.note("bulk pipeline: wait for the stage, retire the store that last read its output");
        b.mbarrier_wait(full, &s, &parity)?;
        b.if_then(&first, |b| {
            b.bulk_wait((stages - 1) as u32, true);
            Ok(())
        })?;
        b.barrier();
        let e = s.clone() * lit(t) + tid.clone() * lit(4);
        let v = b.load(inbuf, &e, 4, None)?;
        let w = v
            .iter()
            .map(|x| {
                let two = b.binary(BinOp::Mul, x, &b.f32(2.0))?;
                b.binary(BinOp::Add, &two, &b.f32(1.0))
            })
            .collect::<Result<Vec<_>, IrError>>()?;
        b.store(outbuf, &e, &w, None)?;
        b.fence_proxy_async();
        b.barrier();
        b.note("bulk pipeline: store the stage, refill it with the tile `stages` ahead");
        b.if_then(&first, |b| {
            b.bulk_store(
                y,
                &(base.clone() + i.clone() * lit(t)),
                outbuf,
                &(s.clone() * lit(t)),
                &lit(t),
            )?;
            b.bulk_commit();
            let next = i.clone() + lit(stages);
            let more = b.cmp(CmpOp::Lt, &next, &tiles)?;
            b.if_then(&more, |b| {
                b.mbarrier_arrive(full, &s, Some(&lit(t * 4)))?;
                b.bulk_load(
                    inbuf,
                    &(s.clone() * lit(t)),
                    x,
                    &(base.clone() + next.clone() * lit(t)),
                    &lit(t),
                    full,
                    &s,
                )
            })
        })?;
        Ok(vec![])
    })?;
    b.if_then(&first, |b| {
        b.bulk_wait(0, false);
        Ok(())
    })?;
    b.finish()
}

/// A bulk copy **multicast** to both blocks of a 2-block cluster: thread 0 of every block
/// initialises its mbarrier and expects [`BULK_TILE`] f32 on it; after a cluster barrier (every
/// barrier is initialised) rank 0 copies the cluster's tile of `x` into both blocks' shared
/// memory with one multicast bulk copy; every thread waits on its block's barrier and writes
/// `y[block · 512 + i] = (rank + 1) · tile[i]`. Params `x` (one tile per cluster), `y` (one
/// tile per block), f32.
///
/// ```
/// let k = tilekit_ptx::coverage::multicast_pair().unwrap();
/// assert_eq!(k.cluster_dim, [2, 1, 1]);
/// assert!(k.to_string().contains("multicast to ctas"));
/// ```
pub fn multicast_pair() -> Result<Kernel, IrError> {
    let t = BULK_TILE;
    let b = KernelBuilder::new("multicast_pair", [128, 1, 1])?;
    b.set_cluster_dim([2, 1, 1])?;
    let x = b.ptr_param("x", ScalarType::F32)?;
    let y = b.ptr_param("y", ScalarType::F32)?;
    let buf = b.shared("tile", ScalarType::F32, t as usize)?;
    let bar = b.mbarrier("full", 1)?;
    let tid = b.thread_id(Axis::X);
    let rank = b.cluster_cta_rank();
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
    b.if_then(&first, |b| {
        b.mbarrier_init(bar, &lit(0), &lit(1))?;
        b.fence_mbarrier_init();
        b.mbarrier_arrive(bar, &lit(0), Some(&lit(t * 4)))
    })?;
    b.note("multicast: every block's barrier is initialised and armed before rank 0 copies");
    b.cluster_barrier()?;
    // thread 0 of rank 0
    let issue = b.cmp(CmpOp::Eq, &(tid.clone() + rank.clone() * lit(128)), &lit(0))?;
    let cluster = b.block_id(Axis::X) / lit(2);
    b.if_then(&issue, |b| {
        b.bulk_load_multicast(buf, &lit(0), x, &(cluster * lit(t)), &lit(t), bar, &lit(0), &lit(3))
    })?;
    b.mbarrier_wait(bar, &lit(0), &lit(0))?;
    let scale = b.cvt(&(rank + lit(1)), ScalarType::F32)?;
    let e = tid.clone() * lit(4);
    let v = b.load(buf, &e, 4, None)?;
    let w = v.iter().map(|x| b.binary(BinOp::Mul, x, &scale)).collect::<Result<Vec<_>, _>>()?;
    b.store(y, &(b.block_id(Axis::X) * lit(t) + e), &w, None)?;
    b.finish()
}

/// How a wgmma coverage kernel stores one operand tile in shared memory.
///
/// ```
/// use tilekit_ptx::coverage::WgmmaTile;
/// use tilekit_ir::wgmma::Major;
/// let t = WgmmaTile::swizzled(tilekit_layout::swizzle::HopperSwizzle::B128, Major::K);
/// assert_eq!(t.major, Major::K);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgmmaTile {
    /// A Hopper swizzle, or `None` for the interleaved core-matrix layout.
    pub swizzle: Option<tilekit_layout::swizzle::HopperSwizzle>,
    /// Which axis is contiguous.
    pub major: tilekit_ir::wgmma::Major,
}

impl WgmmaTile {
    /// A swizzled tile.
    ///
    /// ```
    /// use tilekit_ptx::coverage::WgmmaTile;
    /// let t = WgmmaTile::swizzled(tilekit_layout::swizzle::HopperSwizzle::B64, tilekit_ir::wgmma::Major::MN);
    /// assert!(t.swizzle.is_some());
    /// ```
    pub fn swizzled(
        s: tilekit_layout::swizzle::HopperSwizzle,
        major: tilekit_ir::wgmma::Major,
    ) -> Self {
        WgmmaTile { swizzle: Some(s), major }
    }

    /// An interleaved (non-swizzled) tile.
    ///
    /// ```
    /// let t = tilekit_ptx::coverage::WgmmaTile::interleaved(tilekit_ir::wgmma::Major::K);
    /// assert!(t.swizzle.is_none());
    /// ```
    pub fn interleaved(major: tilekit_ir::wgmma::Major) -> Self {
        WgmmaTile { swizzle: None, major }
    }

    /// The tilekit-layout descriptor of an `mn × k` tile (top `(mn, k)` K-major, `(k, mn)`
    /// MN-major).
    ///
    /// ```
    /// use tilekit_ptx::coverage::WgmmaTile;
    /// use tilekit_ir::wgmma::Major;
    /// let d = WgmmaTile::interleaved(Major::K).layout(64, 32, 2).unwrap();
    /// assert_eq!(d.lengths(), vec![64, 32]);
    /// ```
    pub fn layout(
        &self,
        mn: i64,
        k: i64,
        elem_bytes: i64,
    ) -> Result<tilekit_layout::TensorDescriptor<i64>, IrError> {
        use tilekit_ir::wgmma::Major;
        let (rows, cols) = match self.major {
            Major::K => (mn, k),
            Major::MN => (k, mn),
        };
        Ok(match self.swizzle {
            Some(s) => s.descriptor(rows, cols, elem_bytes)?,
            None => tilekit_ir::wgmma::interleaved(self.major, mn, k, elem_bytes)?,
        })
    }
}

/// A wgmma coverage configuration: `D(64×n) = A(64×kt)·B(kt×n)` in `kt / K` chained wgmmas.
///
/// ```
/// use tilekit_ptx::coverage::WgmmaCase;
/// use tilekit_ir::wgmma::WgmmaType;
/// let c = WgmmaCase::standard(WgmmaType::BF16, 64, true);
/// assert_eq!((c.kt, c.name()), (64, "wgmma_bf16_n64_rs".to_string()));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgmmaCase {
    /// Input type.
    pub ty: tilekit_ir::wgmma::WgmmaType,
    /// N.
    pub n: u32,
    /// K of the whole tile (a multiple of the wgmma's K).
    pub kt: i64,
    /// A from registers (else from shared memory through `a_tile`).
    pub a_regs: bool,
    /// A's shared layout.
    pub a_tile: WgmmaTile,
    /// B's shared layout.
    pub b_tile: WgmmaTile,
}

impl WgmmaCase {
    /// The selftest's case: both operands K-major with the 128-byte swizzle, `kt` = one
    /// 128-byte row (64 f16/bf16, 32 tf32: 4 chained wgmmas).
    ///
    /// ```
    /// use tilekit_ptx::coverage::WgmmaCase;
    /// assert_eq!(WgmmaCase::standard(tilekit_ir::wgmma::WgmmaType::TF32, 8, false).kt, 32);
    /// ```
    pub fn standard(ty: tilekit_ir::wgmma::WgmmaType, n: u32, a_regs: bool) -> Self {
        use tilekit_ir::wgmma::Major;
        use tilekit_layout::swizzle::HopperSwizzle;
        let t = WgmmaTile::swizzled(HopperSwizzle::B128, Major::K);
        WgmmaCase { ty, n, kt: 128 / ty.elem().size_bytes() as i64, a_regs, a_tile: t, b_tile: t }
    }

    /// The kernel's name, e.g. `wgmma_f16_n128_ss` (`ss`: A and B in shared memory, `rs`: A
    /// in registers).
    ///
    /// ```
    /// use tilekit_ptx::coverage::WgmmaCase;
    /// assert_eq!(WgmmaCase::standard(tilekit_ir::wgmma::WgmmaType::F16, 8, false).name(), "wgmma_f16_n8_ss");
    /// ```
    pub fn name(&self) -> String {
        format!("wgmma_{}_n{}_{}", self.ty.name(), self.n, if self.a_regs { "rs" } else { "ss" })
    }

    /// The selftest's cases: f16 and bf16 × N ∈ {8, 64, 128, 256} × A in shared memory / in
    /// registers, and tf32 with N = 64 both ways.
    ///
    /// ```
    /// assert_eq!(tilekit_ptx::coverage::WgmmaCase::all().len(), 18);
    /// ```
    pub fn all() -> Vec<WgmmaCase> {
        use tilekit_ir::wgmma::WgmmaType;
        let mut out = vec![];
        for ty in [WgmmaType::F16, WgmmaType::BF16] {
            for n in [8, 64, 128, 256] {
                for a_regs in [false, true] {
                    out.push(WgmmaCase::standard(ty, n, a_regs));
                }
            }
        }
        out.push(WgmmaCase::standard(WgmmaType::TF32, 64, false));
        out.push(WgmmaCase::standard(WgmmaType::TF32, 64, true));
        out
    }
}

/// One warpgroup (128 threads) computes `D = A·B` with wgmma: parameters `a` (64×kt row-major),
/// `b` (n×kt row-major: B's columns), `d` (64×n f32 row-major). The threads copy A and B into
/// shared memory at the offsets of the tiles' **layouts** (`fence.proxy.async`, `bar.sync`),
/// descriptors are derived from the same layouts, `kt / K` wgmmas accumulate (the first with a
/// zero accumulator), one group is committed and waited for, and each thread stores its
/// accumulator registers at their fragment coordinates. A in registers is loaded from global
/// memory at its fragment coordinates.
///
/// ```
/// use tilekit_ptx::coverage::{wgmma, WgmmaCase};
/// use tilekit_ir::wgmma::WgmmaType;
/// let k = wgmma(&WgmmaCase::standard(WgmmaType::F16, 64, false)).unwrap();
/// assert!(k.to_string().contains("wgmma.mma_async.m64n64k16.f32.f16.f16"));
/// ```
pub fn wgmma(case: &WgmmaCase) -> Result<Kernel, IrError> {
    use tilekit_ir::wgmma::{a_coord, acc_coord, Acc, Major, SmemMatrix, WgmmaShape, WgmmaSrc};
    use tilekit_ir::Val;
    let ty = case.ty;
    let elem = ty.elem();
    let eb = elem.size_bytes() as i64;
    let (n, kt) = (case.n as i64, case.kt);
    let b = KernelBuilder::new(&case.name(), [128, 1, 1])?;
    let ga = b.ptr_param("a", elem)?;
    let gb = b.ptr_param("b", elem)?;
    let gd = b.ptr_param("d", ScalarType::F32)?;
    let tid = b.thread_id(Axis::X);
    let warp = tid.clone() / Idx::lit(32);
    let lane = tid.clone() % Idx::lit(32);
    let stage = |name: &str,
                 g,
                 rows: i64,
                 tile: &WgmmaTile|
     -> Result<(tilekit_ir::MemRef, SmemMatrix), IrError> {
        let layout = tile.layout(rows, kt, eb)?;
        let matrix = SmemMatrix::from_layout(&layout, tile.major, elem)?;
        let s = b.shared(name, elem, matrix.extent())?;
        let lv: tilekit_layout::TensorDescriptor<Val> = layout.lift();
        b.note(format!(
            "{name}: {rows}x{kt} tile into shared memory, {:?} {}",
            matrix.layout(),
            tile.major
        ));
        b.for_range(&Idx::lit(0), &Idx::lit(rows * kt / 128), &Idx::lit(1), &[], |b, i, _| {
            let idx = i * Idx::lit(128) + tid.clone();
            let (r, k) = (idx.clone() / Idx::lit(kt), idx.clone() % Idx::lit(kt));
            let top = match tile.major {
                Major::K => [r, k],
                Major::MN => [k, r],
            };
            let off = lv.calculate_offset(&top)?;
            let v = b.load(g, &idx, 1, None)?;
            b.store(s, &off, &v, None)?;
            Ok(vec![])
        })?;
        Ok((s, matrix))
    };
    let a_smem = if case.a_regs { None } else { Some(stage("a_tile", ga, 64, &case.a_tile)?) };
    let (sb, mb) = stage("b_tile", gb, n, &case.b_tile)?;
    b.fence_proxy_async();
    b.barrier();
    let shape = WgmmaShape::new(ty, case.n)?.transposed(
        case.a_tile.major == Major::MN && !case.a_regs,
        case.b_tile.major == Major::MN,
    )?;
    // A fragments from global memory (before the fence: register writes the wgmmas read)
    let k = ty.k() as i64;
    let mut frags = vec![];
    if case.a_regs {
        b.note("A fragments from global memory at their fragment coordinates");
        for blk in 0..kt / k {
            let mut f = vec![];
            for i in 0..ty.a_regs() {
                // a_coord(ty, thread, i) with thread = 32·warp + lane, written on symbols
                let (r0, c0) = a_coord(ty, 0, i);
                let row =
                    warp.clone() * Idx::lit(16) + lane.clone() / Idx::lit(4) + Idx::lit(r0 as i64);
                let col = match ty {
                    tilekit_ir::wgmma::WgmmaType::TF32 => lane.clone() % Idx::lit(4),
                    _ => lane.clone() % Idx::lit(4) * Idx::lit(2),
                } + Idx::lit(c0 as i64 + blk * k);
                f.push(b.load(ga, &(row * Idx::lit(kt) + col), 1, None)?.remove(0));
            }
            frags.push(f);
        }
    }
    b.wgmma_fence()?;
    let mut acc: Vec<Val> = vec![];
    for blk in 0..(kt / k) as usize {
        let a = match &a_smem {
            Some((sa, ma)) => WgmmaSrc::Smem(b.wgmma_desc(*sa, &Idx::lit(0), ma, blk)?),
            None => WgmmaSrc::Regs(frags.get(blk).cloned().unwrap_or_default()),
        };
        let db = b.wgmma_desc(sb, &Idx::lit(0), &mb, blk)?;
        let c = if blk == 0 { Acc::Zero } else { Acc::Add(&acc) };
        acc = b.wgmma(shape, &a, &db, c)?;
    }
    b.wgmma_commit()?;
    b.wgmma_wait(0)?;
    b.note("D from the accumulator fragment");
    for i in (0..shape.acc_regs()).step_by(2) {
        let (r0, c0) = acc_coord(0, i);
        let row = warp.clone() * Idx::lit(16) + lane.clone() / Idx::lit(4) + Idx::lit(r0 as i64);
        let col = lane.clone() % Idx::lit(4) * Idx::lit(2) + Idx::lit(c0 as i64);
        b.store(gd, &(row * Idx::lit(n) + col), &[acc[i].clone(), acc[i + 1].clone()], None)?;
    }
    b.finish()
}

/// Elements of one tile of [`warp_ring`] (2 KiB of f32).
pub const RING_TILE: i64 = 512;

/// The planted bugs of [`warp_ring_with`] (the interpreter's tests use them; the selftest runs
/// [`RingBug::None`]).
///
/// ```
/// use tilekit_ptx::coverage::{warp_ring_with, RingBug};
/// assert!(warp_ring_with(2, RingBug::ProducerWrongParity).is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingBug {
    /// The correct kernel.
    None,
    /// The producer waits on `empty[s]` with parity `round mod 2` instead of `(round + 1) mod
    /// 2`: its first wait is for a phase only consumers complete, who wait for its copies.
    ProducerWrongParity,
    /// The consumers wait on `full[s]` with parity `(round + 1) mod 2`: the wait returns at once
    /// and they read the stage before its copy lands.
    ConsumerWrongParity,
    /// The producer never waits on `empty[s]`: it refills a stage the consumers still read.
    ProducerSkipsEmpty,
    /// The consumers' named barrier counts 384 threads, but only their 256 arrive.
    NamedBarrierTooLarge,
    /// The second consumer warpgroup gives the named barrier a different count (128).
    NamedBarrierMismatch,
}

/// A **warp-specialised producer/consumer ring**: 384 threads, warpgroup 0 the producer
/// (`setmaxnreg.dec 40`), warpgroups 1 and 2 the consumers (`setmaxnreg.inc 232`; the kernel
/// starts every thread with 168 registers, so the pool balances: 128·128 = 256·64). Each block
/// walks `tiles` tiles of [`RING_TILE`] f32 of `x` through a ring of `stages` shared buffers:
///
/// ```text
///   producer (thread 0)                           consumers (threads 128..384, c = tid − 128)
///   for i: s = i mod S, r = i / S                 for i: s = i mod S, r = i / S
///     wait empty[s] parity (r + 1) mod 2            wait full[s] parity r mod 2
///     arrive.expect_tx full[s], 2048 B              v0, v1 = buf[s][2c], buf[s][2c + 1]
///     bulk load x tile i → buf[s] (on full[s])      arrive empty[s]          (256 per phase)
///                                                   part[i mod 2][c] = v0 + v1
///                                                   bar.sync 1, 256          (consumers only)
///                                                   q = part[i mod 2][(c + 128) mod 256]
///                                                   y[tile i][2c + k] = 2·v_k + q
/// ```
///
/// Each output pairs a consumer's elements with the sum of the pair the *other* consumer
/// warpgroup read, so the named barrier is needed. Params `x`, `y` (f32), `tiles` (i32); one
/// block per `tiles · 512` elements. The producer's loop and the consumers' loop are the two
/// branches of an `if` on the warpgroup, so the interpreter runs it under its independent warp
/// schedule.
///
/// ```
/// let k = tilekit_ptx::coverage::warp_ring(2).unwrap();
/// let text = k.to_string();
/// assert!(text.contains("setmaxnreg.dec 40") && text.contains("bar.sync 1, 256"));
/// assert!(tilekit_ptx::coverage::warp_ring(9).is_err());
/// ```
pub fn warp_ring(stages: i64) -> Result<Kernel, IrError> {
    warp_ring_with(stages, RingBug::None)
}

/// [`warp_ring`] with a planted bug (see [`RingBug`]).
///
/// ```
/// use tilekit_ptx::coverage::{warp_ring_with, RingBug};
/// let k = warp_ring_with(2, RingBug::NamedBarrierTooLarge).unwrap();
/// assert!(k.to_string().contains("bar.sync 1, 384"));
/// ```
pub fn warp_ring_with(stages: i64, bug: RingBug) -> Result<Kernel, IrError> {
    if !(1..=8).contains(&stages) {
        return Err(IrError::Invalid {
            op: "warp_ring".into(),
            what: "stages".into(),
            value: stages.to_string(),
            valid: "1..=8".into(),
        });
    }
    let t = RING_TILE;
    let name = match bug {
        RingBug::None => format!("warp_ring_{stages}"),
        bug => format!("warp_ring_{stages}_{bug:?}").to_lowercase(),
    };
    let b = KernelBuilder::new(&name, [384, 1, 1])?;
    let x = b.ptr_param("x", ScalarType::F32)?;
    let y = b.ptr_param("y", ScalarType::F32)?;
    let tiles = b.scalar_param("tiles", ScalarType::I32)?;
    let buf = b.shared("ring", ScalarType::F32, (stages * t) as usize)?;
    let part = b.shared("part", ScalarType::F32, 2 * 256)?;
    let full = b.mbarrier("full", stages as usize)?;
    let empty = b.mbarrier("empty", stages as usize)?;
    let tid = b.thread_id(Axis::X);
    let wg = b.warpgroup_id();
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
    let base = b.block_id(Axis::X) * tiles.clone() * lit(t);
    b.note("warp ring: thread 0 initialises full (1 arrival + bytes) and empty (256 consumers)");
    b.if_then(&first, |b| {
        for s in 0..stages {
            b.mbarrier_init(full, &lit(s), &lit(1))?;
            b.mbarrier_init(empty, &lit(s), &lit(256))?;
        }
        b.fence_mbarrier_init();
        Ok(())
    })?;
    b.barrier();
    let producer = b.cmp(CmpOp::Eq, &wg, &lit(0))?;
    b.if_then_else(
        &producer,
        |b| {
            b.note("warp ring: producer warpgroup gives registers away; thread 0 issues copies");
            b.setmaxnreg(false, 40)?;
            b.if_then(&first, |b| {
                b.for_range(&lit(0), &tiles, &lit(1), &[], |b, i, _| {
                    let s = i.clone() % lit(stages);
                    let round = i.clone() / lit(stages);
                    if bug != RingBug::ProducerSkipsEmpty {
                        let parity = if bug == RingBug::ProducerWrongParity {
                            round % lit(2)
                        } else {
                            (round + lit(1)) % lit(2)
                        };
                        b.mbarrier_wait(empty, &s, &parity)?;
                    }
                    b.mbarrier_arrive(full, &s, Some(&lit(t * 4)))?;
                    b.bulk_load(
                        buf,
                        &(s.clone() * lit(t)),
                        x,
                        &(base.clone() + i.clone() * lit(t)),
                        &lit(t),
                        full,
                        &s,
                    )?;
                    Ok(vec![])
                })?;
                Ok(())
            })?;
            Ok(vec![])
        },
        |b| {
            b.note("warp ring: consumer warpgroups take the registers");
            b.setmaxnreg(true, 232)?;
            let c = tid.clone() - lit(128);
            let count = match bug {
                RingBug::NamedBarrierTooLarge => Some(384),
                RingBug::NamedBarrierMismatch => None,
                _ => Some(256),
            };
            b.for_range(&lit(0), &tiles, &lit(1), &[], |b, i, _| {
                let s = i.clone() % lit(stages);
                let round = i.clone() / lit(stages);
                let parity = if bug == RingBug::ConsumerWrongParity {
                    (round + lit(1)) % lit(2)
                } else {
                    round % lit(2)
                };
                b.mbarrier_wait(full, &s, &parity)?;
                let v = b.load(buf, &(s.clone() * lit(t) + c.clone() * lit(2)), 2, None)?;
                b.mbarrier_arrive(empty, &s, None)?;
                let sum = b.binary(BinOp::Add, &v[0], &v[1])?;
                let slot = (i.clone() % lit(2)) * lit(256);
                b.store(part, &(slot.clone() + c.clone()), &[sum], None)?;
                match count {
                    Some(n) => b.named_barrier(1, n)?,
                    None => {
                        // warpgroup 1 says 256, warpgroup 2 says 128
                        let second = b.cmp(CmpOp::Eq, &wg, &lit(2))?;
                        b.if_then_else(
                            &second,
                            |b| b.named_barrier(1, 128).map(|_| vec![]),
                            |b| b.named_barrier(1, 256).map(|_| vec![]),
                        )?;
                    }
                }
                let other = (c.clone() + lit(128)) % lit(256);
                let q = b.load(part, &(slot + other), 1, None)?.remove(0);
                let w = v
                    .iter()
                    .map(|x| {
                        let two = b.binary(BinOp::Mul, x, &b.f32(2.0))?;
                        b.binary(BinOp::Add, &two, &q)
                    })
                    .collect::<Result<Vec<_>, IrError>>()?;
                b.store(y, &(base.clone() + i * lit(t) + c.clone() * lit(2)), &w, None)?;
                Ok(vec![])
            })?;
            Ok(vec![])
        },
    )?;
    b.finish()
}

/// The CPU reference of [`warp_ring`] for one block's `tiles` tiles of `x` (f64 sums rounded
/// to f32 the way the kernel rounds: `v0 + v1` in f32, then `2·v + q` in f32).
///
/// ```
/// let x: Vec<f32> = (0..512).map(|i| i as f32).collect();
/// let y = tilekit_ptx::coverage::warp_ring_reference(&x);
/// // element 0: 2·0 + (x[256] + x[257])
/// assert_eq!(y[0], 256.0 + 257.0);
/// ```
pub fn warp_ring_reference(x: &[f32]) -> Vec<f32> {
    let t = RING_TILE as usize;
    let mut y = vec![0.0; x.len()];
    for (tile, out) in x.chunks(t).zip(y.chunks_mut(t)) {
        for c in 0..256 {
            let o = (c + 128) % 256;
            let q = tile[2 * o] + tile[2 * o + 1];
            for k in 0..2 {
                out[2 * c + k] = 2.0 * tile[2 * c + k] + q;
            }
        }
    }
    y
}
