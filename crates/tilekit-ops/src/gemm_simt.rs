//! fp32 GEMM on the CUDA cores (no tensor cores, no TF32): `C = A·B`, A `M × K`, B `K × N`
//! (or B given as its `N × K` transpose), C `M × N`, all f32, any M, N, K and any row pitches.
//! It has no batch dim: [`api::gemm_batched_into`](crate::api::gemm_batched_into) launches it
//! once per entry for f32 inputs (the one-launch strided batch is the Hopper kernel's,
//! [`GemmConfig::batched`](crate::gemm_sm90::GemmConfig::batched), tf32 included).
//!
//! Each block computes a `bm × bn` tile of C; each of its `threads` threads owns a `tm × tn`
//! sub-tile of accumulators in registers (an outer product per k: `tm + tn` shared loads feed
//! `tm · tn` FMAs). The k dim is walked in steps of `bk`:
//!
//! ```text
//!   block (bx, by) ── C[by·bm .. +bm, bx·bn .. +bn]         thread t = ty·TX + tx
//!                                                            TY = bm/tm, TX = bn/tn
//!   global A[bm × bk] ─row_major(v)─► regs ─(transposed)─► sA[buf][k][m]   pitch bm+4
//!   global B[bk × bn] ─row_major(v)─► regs ──────────────► sB[buf][k][n]   pitch bn+4
//!          (B as N×K: like A, transposed into sB)
//!
//!   sA[buf] (k-major)                 sB[buf]
//!    k ┌──────────────────────┐         k ┌──────────────────────────────┐
//!      │ m: [tm/4][TY][4]     │           │ n: [tn/4][TX][4]             │
//!      │ thread ty reads      │           │ thread tx reads tn/4 float4  │
//!      │ tm/4 float4 (R = TX) │           │ (R = TY: broadcast)          │
//!      └──────────────────────┘           └──────────────────────────────┘
//!   for kk in 0..bk:  a[tm] = sA[buf][kk][..], b[tn] = sB[buf][kk][..]
//!                     acc[i][j] = fma(a[i], b[j], acc[i][j])        (tm·tn FMAs)
//!
//!   stages = 2 (register double buffering, one bar.sync per k-tile):
//!     regs ← tile 0; sA/sB[0] ← regs; bar.sync
//!     for k0 in 0..K step 2·bk:    (two k-tiles per iteration: buffers are constants)
//!       for buf in 0, 1:
//!        regs ← global tile k0+(buf+1)·bk   (issued first: in flight during the FMAs)
//!        outer products on sA/sB[buf]       (past K: the zeros loaded there)
//!        sA/sB[1-buf] ← regs; bar.sync      (1-buf was last read before the previous bar.sync)
//!   stages = 1: for k0: regs ← tile; smem ← regs; bar.sync; FMAs; bar.sync
//!   C: Window(C, acc distribution).store  (float4 where C's pitch allows; clipped at edges)
//! ```
//!
//! Every index comes from tile distributions: the global loads are [`dist::row_major`] windows
//! on padded views (out-of-range elements read as 0, so edge tiles need no special code), the
//! store into shared goes through a *permuted* view of the k-major buffer (A lands
//! transposed), the per-k fragments are windows of one row of the shared buffer whose
//! distributions replicate over the other thread coordinate (R = TX for A, R = TY for B), and
//! the accumulators form a `bm × bn` distribution whose window clips the store to C.
//!
//! Vector widths are part of the kernel ([`SimtLayout`]): a kernel built for 4-element vectors
//! on A records that in [`tilekit_ir::Kernel::tensors`], and binding refuses an argument whose
//! pitch or alignment does not allow them; [`crate::api::gemm_into`] picks the widest width
//! each operand allows (1 = scalar loads: any pitch).
//!
//! Shared-memory banks: A is written transposed with scalar stores; the pitch `bm + 4` puts the
//! two k rows a warp writes at once 16 banks apart (conflict-free). Fragment reads are float4:
//! within a warp the A reads are broadcasts (2 thread rows) and the B reads are 16 consecutive
//! float4s.
//!
//! Registers (ptxas 13.0, sm_90a, float4 kernels): `wide` 227 (128 accumulators, 24 fragment
//! values, 12 prefetched values, addresses), `default` 126 (two blocks per SM), `small` 64 —
//! no spills; the tests assemble every candidate and check it. The SASS of `wide`'s loop (two
//! k-tiles) is 2048 FFMA, 96 LDS.128 and 79 other instructions: 92% of the issue slots are
//! FMAs. One block of `wide` per SM (8 warps): each thread's 128 independent FMAs per k hide
//! the shared-memory latency without more warps.
//!
//! ```
//! use tilekit_ir::tensor::HostTensor;
//! use tilekit_ops::{api, backend::Interp};
//! let a = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
//! let b = HostTensor::from_slice(&[1.0f32, 0.5, 0.25], &[3, 1]).unwrap();
//! let c = api::gemm(&Interp, &a, &b).unwrap(); // f32 inputs run this kernel
//! assert_eq!(c.to_vec::<f32>().unwrap(), vec![2.75, 8.0]); // 1 + 1 + 0.75, 4 + 2.5 + 1.5
//! ```

use tilekit_ir::{Axis, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::{Idx, TensorDescriptor};
use tilekit_tile::encoding::EncodingSpec;
use tilekit_tile::TileDistribution;

use crate::dist;
use crate::error::{OpsError, Result};
use crate::tile::{for_range, DTile, View, Window};

/// The most accumulators a thread may hold (`tm · tn`): with the fragments, the prefetch
/// registers and the addresses they must fit in the 255 registers of a thread without spills.
///
/// ```
/// assert_eq!(tilekit_ops::gemm_simt::MAX_ACCUMULATORS, 128);
/// ```
pub const MAX_ACCUMULATORS: i64 = 128;

/// The element types [`crate::api::gemm`] takes: f16 and bf16 run on tensor cores
/// ([`crate::gemm::TYPES`]), f32 on this kernel.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::gemm_simt::API_TYPES[2], ScalarType::F32);
/// ```
pub const API_TYPES: [ScalarType; 3] = [ScalarType::F16, ScalarType::BF16, ScalarType::F32];

/// Shared-memory row padding (elements) of the k-major buffers: keeps rows 16-byte aligned and
/// makes the transposed stores conflict-free.
const PAD: i64 = 4;

/// The shape of the SIMT GEMM: block tile `bm × bn`, k step `bk`, `threads` per block, a
/// `tm × tn` accumulator tile per thread, and `stages` shared buffers (1: two barriers per
/// k-tile; 2: register prefetch and one barrier per k-tile).
///
/// ```
/// use tilekit_ops::gemm_simt::SimtConfig;
/// let c = SimtConfig::wide();
/// assert_eq!((c.bm, c.bn, c.threads, c.tm * c.tn), (128, 256, 256, 128));
/// assert!(c.validate().is_ok());
/// let bad = SimtConfig { tm: 6, ..SimtConfig::default() };
/// assert!(bad.validate().unwrap_err().to_string().contains("tm = 6"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SimtConfig {
    /// Rows of C per block.
    pub bm: i64,
    /// Columns of C per block.
    pub bn: i64,
    /// Depth of one k-tile.
    pub bk: i64,
    /// Threads per block: `(bm / tm) · (bn / tn)`.
    pub threads: i64,
    /// Rows of C per thread (a multiple of 4: float4 fragment reads).
    pub tm: i64,
    /// Columns of C per thread (a multiple of 4).
    pub tn: i64,
    /// Shared-memory buffers: 1 or 2.
    pub stages: i64,
}

impl Default for SimtConfig {
    /// 128 × 128 block tile, bk 8, 256 threads of 8 × 8 accumulators, double-buffered.
    ///
    /// ```
    /// let c = tilekit_ops::gemm_simt::SimtConfig::default();
    /// assert_eq!((c.bm, c.bn, c.bk, c.threads, c.tm, c.tn, c.stages), (128, 128, 8, 256, 8, 8, 2));
    /// ```
    fn default() -> Self {
        SimtConfig { bm: 128, bn: 128, bk: 8, threads: 256, tm: 8, tn: 8, stages: 2 }
    }
}

impl SimtConfig {
    /// 128 × 256 block tile, bk 8, 256 threads of 8 × 16 accumulators: the fast one for large
    /// products (more FMAs per shared load).
    ///
    /// ```
    /// let c = tilekit_ops::gemm_simt::SimtConfig::wide();
    /// assert_eq!((c.tm, c.tn, c.bk), (8, 16, 8));
    /// ```
    pub fn wide() -> Self {
        SimtConfig { bm: 128, bn: 256, bk: 8, threads: 256, tm: 8, tn: 16, stages: 2 }
    }

    /// 64 × 64 block tile, bk 16, 256 threads of 4 × 4 accumulators: more blocks for small or
    /// skinny products.
    ///
    /// ```
    /// let c = tilekit_ops::gemm_simt::SimtConfig::small();
    /// assert_eq!((c.bm, c.bn, c.tm, c.tn), (64, 64, 4, 4));
    /// ```
    pub fn small() -> Self {
        SimtConfig { bm: 64, bn: 64, bk: 16, threads: 256, tm: 4, tn: 4, stages: 2 }
    }

    /// The presets by name: `default`, `wide`, `small`.
    ///
    /// ```
    /// use tilekit_ops::gemm_simt::SimtConfig;
    /// assert_eq!(SimtConfig::presets()[1], ("wide", SimtConfig::wide()));
    /// ```
    pub fn presets() -> [(&'static str, SimtConfig); 3] {
        [("default", Self::default()), ("wide", Self::wide()), ("small", Self::small())]
    }

    /// The presets and three variants `tilekit bench gemm --dtype f32` also times (the
    /// configuration space around them): `tall` (256 × 128, 16 × 8 per thread), `default_bk16`
    /// (k step 16) and `wide_bk16_s1` (k step 16, one shared buffer: two would exceed 48 KiB).
    ///
    /// ```
    /// use tilekit_ops::gemm_simt::SimtConfig;
    /// let c = SimtConfig::candidates();
    /// assert_eq!(c.len(), 6);
    /// assert!(c.iter().all(|(_, cfg)| cfg.validate().is_ok()));
    /// ```
    pub fn candidates() -> Vec<(&'static str, SimtConfig)> {
        let mut v = Self::presets().to_vec();
        v.push(("tall", SimtConfig { bm: 256, bn: 128, tm: 16, tn: 8, ..Self::wide() }));
        v.push(("default_bk16", SimtConfig { bk: 16, ..Self::default() }));
        v.push(("wide_bk16_s1", SimtConfig { bk: 16, stages: 1, ..Self::wide() }));
        v
    }

    /// A preset by name; an error listing the names otherwise.
    ///
    /// ```
    /// use tilekit_ops::gemm_simt::SimtConfig;
    /// assert_eq!(SimtConfig::preset("small").unwrap(), SimtConfig::small());
    /// assert!(SimtConfig::preset("huge").unwrap_err().to_string().contains("default, wide, small"));
    /// ```
    pub fn preset(name: &str) -> Result<SimtConfig> {
        Self::presets().into_iter().find(|(n, _)| *n == name).map(|(_, c)| c).ok_or_else(|| {
            OpsError::invalid("gemm_simt", "preset", name, "must be one of default, wide, small")
        })
    }

    /// Threads along M (`bm / tm`) and along N (`bn / tn`).
    ///
    /// ```
    /// assert_eq!(tilekit_ops::gemm_simt::SimtConfig::wide().thread_grid(), (16, 16));
    /// ```
    pub fn thread_grid(&self) -> (i64, i64) {
        (self.bm / self.tm.max(1), self.bn / self.tn.max(1))
    }

    /// Checks the configuration; the error names the first bad field and what would be valid.
    ///
    /// ```
    /// use tilekit_ops::gemm_simt::SimtConfig;
    /// let e = SimtConfig { threads: 128, ..SimtConfig::default() }.validate().unwrap_err();
    /// assert!(e.to_string().contains("threads = 128"), "{e}");
    /// let e = SimtConfig { tm: 16, tn: 16, bm: 256, bn: 256, ..SimtConfig::default() }.validate().unwrap_err();
    /// assert!(e.to_string().contains("tm · tn = 256"), "{e}");
    /// ```
    pub fn validate(&self) -> Result<()> {
        let bad = |f: &str, v: String, why: String| Err(OpsError::invalid("gemm_simt", f, v, why));
        let c = self;
        for (f, v) in [("bm", c.bm), ("bn", c.bn), ("bk", c.bk), ("tm", c.tm), ("tn", c.tn)] {
            if !(1..=4096).contains(&v) {
                return bad(f, v.to_string(), "must be in 1..=4096".into());
            }
        }
        if c.tm % 4 != 0 {
            return bad("tm", c.tm.to_string(), "must be a multiple of 4 (float4 reads)".into());
        }
        if c.tn % 4 != 0 {
            return bad("tn", c.tn.to_string(), "must be a multiple of 4 (float4 reads)".into());
        }
        if c.tm * c.tn > MAX_ACCUMULATORS {
            return bad(
                "tm · tn",
                (c.tm * c.tn).to_string(),
                format!("must be at most {MAX_ACCUMULATORS} accumulators (255 registers a thread)"),
            );
        }
        if c.bm % c.tm != 0 {
            return bad("bm", c.bm.to_string(), format!("must be a multiple of tm = {}", c.tm));
        }
        if c.bn % c.tn != 0 {
            return bad("bn", c.bn.to_string(), format!("must be a multiple of tn = {}", c.tn));
        }
        let (ty, tx) = self.thread_grid();
        if c.threads != ty * tx || c.threads % 32 != 0 || c.threads > 1024 {
            return bad(
                "threads",
                c.threads.to_string(),
                format!("must be (bm/tm)·(bn/tn) = {}, a multiple of 32, at most 1024", ty * tx),
            );
        }
        if !(1..=2).contains(&c.stages) {
            return bad("stages", c.stages.to_string(), "must be 1 or 2".into());
        }
        if (c.bm * c.bk) % c.threads != 0 || (c.bn * c.bk) % c.threads != 0 {
            return bad(
                "bk",
                c.bk.to_string(),
                format!(
                    "bm·bk and bn·bk must be multiples of the {} threads (each loads whole rows)",
                    c.threads
                ),
            );
        }
        let bytes = 4 * c.stages * c.bk * (c.bm + c.bn + 2 * PAD);
        if bytes > 48 * 1024 {
            return bad(
                "bk",
                c.bk.to_string(),
                format!("the shared buffers take {bytes} bytes: at most 48 KiB (static shared)"),
            );
        }
        Ok(())
    }

    /// The four integers of a kernel-cache key: the config and the layout.
    ///
    /// ```
    /// use tilekit_ops::gemm_simt::{SimtConfig, SimtLayout};
    /// let l = SimtLayout::scalar(false);
    /// assert_ne!(SimtConfig::wide().key(&l), SimtConfig::default().key(&l));
    /// ```
    pub fn key(&self, l: &SimtLayout) -> [i64; 4] {
        [
            self.bm | self.bn << 16 | self.bk << 32,
            self.threads | self.tm << 16 | self.tn << 32 | self.stages << 48,
            l.a_vector | l.b_vector << 8 | l.c_vector << 16 | i64::from(l.b_transposed) << 24,
            0,
        ]
    }
}

impl std::fmt::Display for SimtConfig {
    /// ```
    /// assert_eq!(tilekit_ops::gemm_simt::SimtConfig::wide().to_string(), "128x256x8 t256 8x16 s2");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}x{}x{} t{} {}x{} s{}",
            self.bm, self.bn, self.bk, self.threads, self.tm, self.tn, self.stages
        )
    }
}

/// How the kernel addresses its operands: the vector width (elements: 1, 2 or 4) of the
/// global accesses to A, B and C along their last dim, and whether B is given as an `N × K`
/// row-major matrix (its parameter `b` is then `N × K`).
///
/// ```
/// use tilekit_ops::gemm_simt::SimtLayout;
/// assert_eq!(SimtLayout::aligned(false).a_vector, 4);
/// assert_eq!(SimtLayout::scalar(true).b_vector, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SimtLayout {
    /// Elements per access of A (1, 2 or 4).
    pub a_vector: i64,
    /// Elements per access of B (1, 2 or 4).
    pub b_vector: i64,
    /// Elements per access of C (1, 2 or 4).
    pub c_vector: i64,
    /// B is given as `N × K` (the parameter `b` is `Bᵀ`, row-major).
    pub b_transposed: bool,
}

impl SimtLayout {
    /// float4 everywhere (pitches and lengths multiples of 4, 16-byte aligned bases).
    ///
    /// ```
    /// assert_eq!(tilekit_ops::gemm_simt::SimtLayout::aligned(false).c_vector, 4);
    /// ```
    pub fn aligned(b_transposed: bool) -> Self {
        SimtLayout { a_vector: 4, b_vector: 4, c_vector: 4, b_transposed }
    }

    /// Scalar accesses: any pitch, any alignment.
    ///
    /// ```
    /// assert_eq!(tilekit_ops::gemm_simt::SimtLayout::scalar(false).a_vector, 1);
    /// ```
    pub fn scalar(b_transposed: bool) -> Self {
        SimtLayout { a_vector: 1, b_vector: 1, c_vector: 1, b_transposed }
    }

    fn validate(&self, cfg: &SimtConfig) -> Result<()> {
        for (f, v) in
            [("a_vector", self.a_vector), ("b_vector", self.b_vector), ("c_vector", self.c_vector)]
        {
            if ![1, 2, 4].contains(&v) {
                return Err(OpsError::invalid("gemm_simt", f, v, "must be 1, 2 or 4 elements"));
            }
        }
        if cfg.bk % self.a_vector != 0 || (self.b_transposed && cfg.bk % self.b_vector != 0) {
            return Err(OpsError::invalid(
                "gemm_simt",
                "bk",
                cfg.bk,
                "must be a multiple of the vector width along K",
            ));
        }
        Ok(())
    }
}

/// A distribution from its parts (R lengths, H lengths per X, P and Y as (major, minor)).
fn enc(
    rs: Vec<i64>,
    hs: Vec<Vec<i64>>,
    ps: &[(usize, usize)],
    ys: &[(usize, usize)],
) -> Result<TileDistribution> {
    Ok(TileDistribution::from_spec(EncodingSpec {
        rs_lengths: rs,
        hs_lengthss: hs,
        ps_to_rhss_major: vec![ps.iter().map(|p| p.0 as i64).collect()],
        ps_to_rhss_minor: vec![ps.iter().map(|p| p.1 as i64).collect()],
        ys_to_rhs_major: ys.iter().map(|y| y.0 as i64).collect(),
        ys_to_rhs_minor: ys.iter().map(|y| y.1 as i64).collect(),
    })?)
}

/// The distributions of one configuration: the A fragment (one k row of `bm`, thread row `ty`
/// holding `tm/4` float4s, replicated over `tx`), the B fragment (one k row of `bn`, `tx`
/// holding `tn/4` float4s, replicated over `ty`) and the accumulators (`bm × bn`).
///
/// ```text
///   A frag: R [TX]   X0 H [1]          X1 H [tm/4, TY, 4]   P0 = (X1.H1, R0)  Y = (X0.H0, X1.H0, X1.H2)
///   B frag: R [TY]   X0 H [1]          X1 H [tn/4, TX, 4]   P0 = (R0, X1.H1)  Y = (X0.H0, X1.H0, X1.H2)
///   acc   :          X0 H [tm/4,TY,4]  X1 H [tn/4, TX, 4]   P0 = (X0.H1, X1.H1)
///                                                           Y = (X0.H0, X0.H2, X1.H0, X1.H2)
/// ```
///
/// ```
/// use tilekit_ops::gemm_simt::{fragments, SimtConfig};
/// let (fa, fb, fc) = fragments(&SimtConfig::wide()).unwrap();
/// assert_eq!((fa.x_lengths(), fb.x_lengths(), fc.x_lengths()), (vec![1, 128], vec![1, 256], vec![128, 256]));
/// assert_eq!((fa.thread_buffer_size(), fb.thread_buffer_size(), fc.thread_buffer_size()), (8, 16, 128));
/// // thread 17 = (ty 1, tx 1): rows 4..8 and 68..72, columns 4..8, 68.., 132.., 196..
/// assert_eq!(fa.calculate_x(&[17i64], &fa.d_to_ys(4)).unwrap(), vec![0, 68]);
/// assert_eq!(fb.calculate_x(&[17i64], &fb.d_to_ys(12)).unwrap(), vec![0, 196]);
/// ```
pub fn fragments(
    cfg: &SimtConfig,
) -> Result<(TileDistribution, TileDistribution, TileDistribution)> {
    cfg.validate()?;
    let (ty, tx) = cfg.thread_grid();
    let y3 = [(1, 0), (2, 0), (2, 2)];
    let fa = enc(vec![tx], vec![vec![1], vec![cfg.tm / 4, ty, 4]], &[(2, 1), (0, 0)], &y3)?;
    let fb = enc(vec![ty], vec![vec![1], vec![cfg.tn / 4, tx, 4]], &[(0, 0), (2, 1)], &y3)?;
    let fc = enc(
        vec![],
        vec![vec![cfg.tm / 4, ty, 4], vec![cfg.tn / 4, tx, 4]],
        &[(1, 1), (2, 1)],
        &[(1, 0), (1, 2), (2, 0), (2, 2)],
    )?;
    Ok((fa, fb, fc))
}

/// A k-major shared buffer `[rows, cols]` with row pitch `cols + PAD`, float4 rows.
fn shared_rows(b: &KernelBuilder, name: &str, rows: i64, cols: i64) -> Result<View> {
    let d = TensorDescriptor::naive(vec![rows, cols], vec![cols + PAD, 1], Some((4, 1)))?;
    Ok(View::shared(b, name, ScalarType::F32, &d)?)
}

/// Where the thread's `i`-th element of a fragment sits among its `tm` (or `tn`) values:
/// Y = (1, t/4 block, lane in float4).
fn frag_index(d: &TileDistribution, reg: usize) -> usize {
    let y = d.d_to_ys(reg as i64);
    (y[1] * 4 + y[2]) as usize
}

/// The kernel for `cfg` and `layout`: params `a` (M×K), `b` (K×N, or N×K when
/// `layout.b_transposed`) and `c` (M×N), all f32 with runtime lengths and strides; grid
/// [`grid`]`(cfg, m, n)`.
///
/// ```
/// use tilekit_ops::gemm_simt::{build, SimtConfig, SimtLayout};
/// let k = build(&SimtConfig::default(), &SimtLayout::aligned(false)).unwrap();
/// let text = k.to_string();
/// assert_eq!(k.block_dim, [256, 1, 1]);
/// assert_eq!(k.tensors[0].vector, 4); // binding checks A's pitch and alignment
/// assert!(text.contains("fma"));
/// assert!(!text.contains("mma"));
/// let bad = SimtLayout { a_vector: 3, ..SimtLayout::scalar(false) };
/// assert!(build(&SimtConfig::default(), &bad).is_err());
/// ```
pub fn build(cfg: &SimtConfig, layout: &SimtLayout) -> Result<Kernel> {
    cfg.validate()?;
    layout.validate(cfg)?;
    let SimtConfig { bm, bn, bk, threads, tm, tn, stages } = *cfg;
    let f32t = ScalarType::F32;
    let b = KernelBuilder::new("gemm_simt", [threads as u32, 1, 1])?;
    let a = b.tensor_param("a", f32t, 2)?;
    let bp = b.tensor_param("b", f32t, 2)?;
    let c = b.tensor_param("c", f32t, 2)?;
    let (fa, fb, fc) = fragments(cfg)?;
    let trans = layout.b_transposed;

    // global views (padded: out-of-range reads are 0) and their load distributions
    let av = View::global(&a, layout.a_vector)?.pad(&[bm, bk])?;
    let da = dist::row_major(bm, bk, threads, layout.a_vector)?;
    let (bv, db, b_tile) = if trans {
        let v = View::global(&bp, layout.b_vector)?.pad(&[bn, bk])?;
        (v, dist::row_major(bn, bk, threads, layout.b_vector)?, [bn, bk])
    } else {
        let v = View::global(&bp, layout.b_vector)?.pad(&[bk, bn])?;
        (v, dist::row_major(bk, bn, threads, layout.b_vector)?, [bk, bn])
    };

    // k-major shared buffers; A (and Bᵀ) are written through the transposed view
    let rows = stages * bk;
    let sa = shared_rows(&b, "sA", rows, bm)?;
    let sb = shared_rows(&b, "sB", rows, bn)?;
    let sa_t = sa.clone().permute(&[1, 0])?;
    let sb_w = if trans { sb.clone().permute(&[1, 0])? } else { sb.clone() };

    let (row0, col0) = (b.block_id(Axis::Y) * Val::lit(bm), b.block_id(Axis::X) * Val::lit(bn));
    let load_tiles = |b: &KernelBuilder, k: &Val| -> Result<(DTile, DTile)> {
        let ta = Window::new(b, &av, &[bm, bk], &[row0.clone(), k.clone()], &da)?.load(b)?;
        let ob = if trans { [col0.clone(), k.clone()] } else { [k.clone(), col0.clone()] };
        let tb = Window::new(b, &bv, &b_tile, &ob, &db)?.load(b)?;
        Ok((ta, tb))
    };
    let store_tiles = |b: &KernelBuilder, r: &Val, ta: &DTile, tb: &DTile| -> Result<()> {
        Window::new(b, &sa_t, &[bm, bk], &[Val::lit(0), r.clone()], &da)?.store(b, ta)?;
        let ob = if trans { [Val::lit(0), r.clone()] } else { [r.clone(), Val::lit(0)] };
        Window::new(b, &sb_w, &b_tile, &ob, &db)?.store(b, tb)?;
        Ok(())
    };
    // bk outer products from the shared rows r .. r + bk
    let outer = |b: &KernelBuilder, r: &Val, acc: &mut [Val]| -> Result<()> {
        for kk in 0..bk {
            let o = [r.clone() + Val::lit(kk), Val::lit(0)];
            let fra = Window::new(b, &sa, &[1, bm], &o, &fa)?.load(b)?;
            let frb = Window::new(b, &sb, &[1, bn], &o, &fb)?.load(b)?;
            let mut av = vec![Val::lit(0); tm as usize];
            let mut bv = vec![Val::lit(0); tn as usize];
            for (d, v) in fra.regs.iter().enumerate() {
                av[frag_index(&fa, d)] = v.clone();
            }
            for (d, v) in frb.regs.iter().enumerate() {
                bv[frag_index(&fb, d)] = v.clone();
            }
            for (i, x) in av.iter().enumerate() {
                for (j, y) in bv.iter().enumerate() {
                    let at = i * tn as usize + j;
                    acc[at] = b.fma(x, y, &acc[at])?;
                }
            }
        }
        Ok(())
    };

    let init = vec![b.f32(0.0); (tm * tn) as usize];
    let zero = Val::lit(0);
    let k_len = a.lengths[1].clone();
    let acc = if stages == 2 {
        b.note("prologue: k-tile 0 into shared buffer 0");
        let (ta, tb) = load_tiles(&b, &zero)?;
        store_tiles(&b, &zero, &ta, &tb)?;
        b.barrier();
        // two k-tiles per iteration, so each half's buffers are build-time constants (every
        // shared address is the thread's base plus an immediate); an odd tile count ends with
        // a half on the zeros loaded past K
        for_range(&b, &zero, &k_len, &Val::lit(2 * bk), &init, |b, k0, acc| {
            let mut acc = acc.to_vec();
            for half in 0..2 {
                b.note("prefetch: the next k-tile into registers (zeros past K)");
                let (ta, tb) = load_tiles(b, &(k0.clone() + Val::lit((half + 1) * bk)))?;
                b.note("outer products on the current shared buffer");
                outer(b, &Val::lit(half * bk), &mut acc)?;
                store_tiles(b, &Val::lit((1 - half) * bk), &ta, &tb)?;
                b.barrier();
            }
            Ok(acc)
        })?
    } else {
        for_range(&b, &zero, &k_len, &Val::lit(bk), &init, |b, k0, acc| {
            let (ta, tb) = load_tiles(b, &k0)?;
            store_tiles(b, &Val::lit(0), &ta, &tb)?;
            b.barrier();
            let mut acc = acc.to_vec();
            outer(b, &Val::lit(0), &mut acc)?;
            b.barrier();
            Ok(acc)
        })?
    };

    b.note("epilogue: the accumulators through the C window (clipped at the edges)");
    let mut regs = Vec::with_capacity(acc.len());
    for d in 0..fc.thread_buffer_size() {
        let y = fc.d_to_ys(d);
        let (i, j) = (y[0] * 4 + y[1], y[2] * 4 + y[3]);
        regs.push(acc[(i * tn + j) as usize].clone());
    }
    let tile = DTile { dist: fc.clone(), elem: f32t, regs };
    let cv = View::global(&c, layout.c_vector)?.pad(&[bm, bn])?;
    Window::new(&b, &cv, &[bm, bn], &[row0, col0], &fc)?.store(&b, &tile)?;
    Ok(b.finish()?)
}

/// The launch grid for an `m × n` C: `[⌈n / bn⌉, ⌈m / bm⌉, 1]`.
///
/// ```
/// use tilekit_ops::gemm_simt::{grid, SimtConfig};
/// assert_eq!(grid(&SimtConfig::wide(), 8192, 8192).unwrap(), [32, 64, 1]);
/// assert_eq!(grid(&SimtConfig::small(), 77, 130).unwrap(), [3, 2, 1]);
/// ```
pub fn grid(cfg: &SimtConfig, m: i64, n: i64) -> Result<[u32; 3]> {
    Ok([crate::host::blocks(n, cfg.bn)?, crate::host::blocks(m, cfg.bm)?, 1])
}

/// The preset [`crate::api::gemm_into`] runs for an `m × n` f32 product on `sms`
/// multiprocessors: the largest tile whose grid still gives every multiprocessor a block —
/// [`SimtConfig::wide`], else [`SimtConfig::default`], else [`SimtConfig::small`].
///
/// ```
/// use tilekit_ops::gemm_simt::{choose, SimtConfig};
/// assert_eq!(choose(8192, 8192, 132), SimtConfig::wide());
/// assert_eq!(choose(2048, 2048, 132), SimtConfig::default()); // wide: 128 blocks
/// assert_eq!(choose(1000, 1000, 132), SimtConfig::small());
/// ```
pub fn choose(m: i64, n: i64, sms: u32) -> SimtConfig {
    let blocks = |c: &SimtConfig| (m + c.bm - 1) / c.bm * ((n + c.bn - 1) / c.bn);
    [SimtConfig::wide(), SimtConfig::default()]
        .into_iter()
        .find(|c| blocks(c) >= i64::from(sms.max(1)))
        .unwrap_or_else(SimtConfig::small)
}
