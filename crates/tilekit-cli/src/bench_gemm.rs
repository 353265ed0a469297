//! `tilekit bench gemm`: TFLOP/s of GEMM on the shapes of issue 13, tilekit's kernel beside
//! cuBLASLt measured in the same process.
//!
//! ```text
//!   for each shape M×N×K (row-major A, B) and input type (bf16, f16; f32 for 8192³):
//!     cuBLASLt, output = input type   the best of the heuristic's first 8 algorithms
//!                                     (each: warm-up 3, median of --reps, CUDA events)
//!     cuBLASLt, output f32            the same, for the comparison with tilekit's kernel
//!     tilekit                         api::gemm_into on device tensors (f32 output, row-major
//!                                     A and B: on sm_90 the Hopper kernel with B MN-major);
//!                                     its ratio to the line above
//!     cuBLASLt --layout               A, B stored as --layout says (default nt: A row-major,
//!                                     B column-major), output of the input type
//!     sm90 --layout                   gemm_sm90 on the same storage (K- / MN-major operands),
//!                                     the best of SM90_CONFIGS, SM90_ODD_WIDTHS,
//!                                     SM90_WIDE_PINGPONG, SM90_PINGPONG_SUBTILE and
//!                                     SM90_BM64_TMA (or of those
//!                                     --gemm-config selects, see below);
//!                                     its ratio to the line above
//!   flops = 2·M·N·K; TFLOP/s = flops / median
//! ```
//!
//! `--layout` letters (A then B) are BLAS's for a row-major `C = A·B`, [`Order::letter`]: `n`
//! row-major, `t` column-major. The kernel's essay calls the default `nt` "TN" (both operands
//! K-contiguous, CUTLASS's naming).
//!
//! `--gemm-config PATTERNS` times only the Hopper configurations whose label contains one of
//! the `|`-separated texts (as `tune gemm --config` does with one text), `--gemm-config best`
//! only the per-shape winners of [`BEST`]; the cuBLASLt columns and the tilekit (API) column
//! are timed as before. Every entry of the sm90 column has a label ([`sm90_case`] lists them
//! without a GPU): a [`GemmConfig::label`], `staged, …` where the operands go through padded
//! copies, `api, …` for a split K through the API. The selection is checked before anything
//! runs:
//!
//! ```text
//!   a text no label of any case in the table contains   → error naming the text and listing
//!                                                          the labels there are (exit 2)
//!   a case none of whose labels a text contains          → a warning on stderr, the case's
//!     (several shapes; another case matched)               sm90 cells empty, its config cell
//!                                                          says so: no number stands for a
//!                                                          configuration that was not timed
//!   best: a shape without a list, a layout other than nt → error naming it (exit 2)
//! ```
//!
//! `--dtype f32` runs [`crate::bench_gemm_simt`] instead (the CUDA-core kernel beside cuBLAS
//! SGEMM); `--dtype f16` or `bf16` keeps that type's rows.

use std::process::ExitCode;

use tilekit_cuda::blas::{time_gemm_lt, LtSpec, Order};
use tilekit_cuda::Gpu;
use tilekit_ir::wgmma::Major;
use tilekit_ir::ScalarType;
use tilekit_ops::backend::{Backend as _, Cuda};
use tilekit_ops::bind::{map_arg, Bindings};
use tilekit_ops::compiled::CompiledKernel;
use tilekit_ops::gemm_sm90::{
    build_gemm_sm90, hilbert_order, launch_grid, Activation, Epilogue, EpilogueOp, GemmConfig,
    Raster,
};
use tilekit_ops::gemm_tuning::{GemmChoice, GemmProblem};
use tilekit_ops::host;

use crate::bench::Args;
use crate::{outln, CliError};

/// The shapes of issue 13's table (M, N, K).
///
/// ```
/// assert_eq!(tilekit_cli::bench_gemm::SHAPES[0], (8192, 8192, 8192));
/// ```
pub const SHAPES: &[(usize, usize, usize)] = &[
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (2048, 2048, 2048),
    (8192, 8192, 1024),
    (4096, 14336, 4096),
    (14336, 4096, 4096),
    (16384, 1024, 4096),
    (8191, 8191, 8191),
    (1000, 1000, 1000),
    (64, 8192, 8192),
];

/// Algorithms of cuBLASLt's heuristic timed per problem (the fastest is the baseline).
pub const ALGOS: usize = 8;

/// One row of `tilekit bench gemm`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GemmRow {
    /// `M×N×K`.
    pub shape: String,
    /// Input type.
    pub dtype: String,
    /// Device name.
    pub device: String,
    /// cuBLASLt, output of the input type: TFLOP/s of the best algorithm.
    pub cublaslt_tflops: f64,
    /// cuBLASLt's heuristic first choice, same output: TFLOP/s.
    pub cublaslt_first_tflops: f64,
    /// cuBLASLt with f32 output (tilekit's kernel's output today).
    pub cublaslt_f32_out_tflops: Option<f64>,
    /// tilekit's kernel (f32 output), where it takes the shape.
    pub tilekit_tflops: Option<f64>,
    /// `tilekit_tflops / cublaslt_f32_out_tflops`.
    pub ratio: Option<f64>,
    /// The operands' storage of the two columns below (`--layout`: `nt`, `nn`, `tn`, `tt`).
    pub layout: String,
    /// cuBLASLt with A and B stored as `layout` says (default `nt`: B column-major, both
    /// operands K-contiguous), output of the input type.
    pub cublaslt_tn_tflops: Option<f64>,
    /// tilekit's Hopper kernel (TMA + wgmma) on the same storage, output of the input type:
    /// the best config.
    pub sm90_tflops: Option<f64>,
    /// Its configuration ([`GemmConfig::label`]).
    pub sm90_config: Option<String>,
    /// `sm90_tflops / cublaslt_tn_tflops`.
    pub sm90_ratio: Option<f64>,
}

fn tflops(flops: f64, ms: f64) -> f64 {
    flops / (ms * 1e-3) / 1e12
}

/// tilekit's GEMM through `api::gemm_into` on random device tensors (A M×K, B K×N row-major,
/// C f32: on sm_90 the Hopper kernel with B MN-major, elsewhere the `mma.sync` kernel): median
/// ms, or `None` where no kernel takes the shape. (Its results
/// are checked by the API tests and `tilekit selftest`; no host reference is computed here.)
fn tilekit_ms(
    cuda: &Cuda,
    m: usize,
    n: usize,
    k: usize,
    ty: ScalarType,
    reps: usize,
) -> Option<f64> {
    let (mi, ni, ki) = (m as i64, n as i64, k as i64);
    let t = |len: usize, shape: Vec<i64>, seed| {
        let buf = host::random(ty, len, seed).ok()?;
        let h = tilekit_ir::tensor::HostTensor::new(
            buf,
            tilekit_ir::tensor::TensorLayout::contiguous(ty, shape).ok()?,
        )
        .ok()?;
        cuda.from_host(&h).ok()
    };
    let a = t(m * k, vec![mi, ki], 31)?;
    let b = t(k * n, vec![ki, ni], 32)?;
    let mut c = cuda.empty(ScalarType::F32, &[mi, ni]).ok()?;
    tilekit_ops::api::gemm_into(cuda, &a, &b, &mut c).ok()?;
    let t = cuda.time(3, reps, |_| tilekit_ops::api::gemm_into(cuda, &a, &b, &mut c)).ok()?;
    Some(t.median_ms())
}

const fn sm90(
    bn: i64,
    stages: i64,
    persistent: bool,
    raster: Raster,
    epilogue: Epilogue,
) -> GemmConfig {
    GemmConfig {
        input: ScalarType::BF16,
        output: ScalarType::BF16,
        bn,
        stages,
        overlap: true,
        persistent,
        raster,
        epilogue,
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

/// `c` run by pairs of blocks (2-block clusters) sharing B by TMA multicast.
const fn pair(c: GemmConfig) -> GemmConfig {
    GemmConfig { cluster: 2, ..c }
}

/// `c` with one consumer warpgroup: 64-row tiles (labels end in `bm 64`).
const fn bm64(c: GemmConfig) -> GemmConfig {
    GemmConfig { consumers: 1, ..c }
}

/// `c` with ping-pong consumers (each warpgroup its own 128-row tile; labels end in
/// `pingpong`).
const fn pp(c: GemmConfig) -> GemmConfig {
    GemmConfig { pingpong: true, ..c }
}

/// The Hopper kernel's configurations timed per problem (input and output types are set per
/// problem): the two winners of the one-block-per-tile kernel (bn 128 / 6 stages, bn 256 / 4
/// stages, one wgmma group in flight), then the persistent grid in linear, grouped and Hilbert
/// order, with the register epilogue and the TMA-store one; then pairs of blocks in 2-block
/// clusters sharing B by multicast (labels end in `cluster 2`; grouped g = g pairs of M-tiles);
/// then ping-pong consumers (bn 128, each warpgroup its own tile, labels end in `pingpong`);
/// then the 64-row tile (one consumer warpgroup, labels end in `bm 64`), timed only where
/// [`GemmProblem::wants_64_rows`] (M ≤ 64, or few tiles). TMA-store configs are skipped where
/// C's row pitch is not a multiple of 16 bytes. The problem's [`GemmChoice::heuristic`] (what
/// the API runs untuned) is timed too, where it is not among these.
///
/// ```
/// use tilekit_cli::bench_gemm::SM90_CONFIGS;
/// assert!(SM90_CONFIGS.len() <= 37);
/// assert_eq!(SM90_CONFIGS.iter().filter(|c| c.pingpong).count(), 6);
/// assert_eq!(SM90_CONFIGS.iter().filter(|c| c.cluster == 2).count(), 7);
/// assert_eq!(SM90_CONFIGS.iter().filter(|c| c.consumers == 1).count(), 9);
/// ```
pub const SM90_CONFIGS: &[GemmConfig] = &[
    sm90(128, 6, false, Raster::Linear, Epilogue::Registers),
    sm90(256, 4, false, Raster::Linear, Epilogue::Registers),
    sm90(128, 6, false, Raster::Grouped(8), Epilogue::Registers),
    sm90(128, 6, true, Raster::Linear, Epilogue::Registers),
    sm90(128, 6, true, Raster::Grouped(8), Epilogue::Registers),
    sm90(256, 4, true, Raster::Linear, Epilogue::Registers),
    sm90(256, 4, true, Raster::Grouped(8), Epilogue::Registers),
    sm90(128, 4, true, Raster::Grouped(8), Epilogue::Tma),
    sm90(128, 5, true, Raster::Grouped(8), Epilogue::Tma),
    sm90(128, 6, true, Raster::Grouped(8), Epilogue::Tma),
    sm90(128, 6, true, Raster::Grouped(4), Epilogue::Tma),
    sm90(128, 6, true, Raster::Grouped(16), Epilogue::Tma),
    sm90(192, 4, true, Raster::Grouped(8), Epilogue::Tma),
    sm90(256, 3, true, Raster::Grouped(8), Epilogue::Tma),
    sm90(128, 6, true, Raster::Hilbert, Epilogue::Tma),
    sm90(256, 3, true, Raster::Hilbert, Epilogue::Tma),
    pair(sm90(256, 3, true, Raster::Grouped(4), Epilogue::Tma)),
    pair(sm90(256, 3, true, Raster::Grouped(8), Epilogue::Tma)),
    pair(sm90(256, 4, true, Raster::Grouped(4), Epilogue::Registers)),
    pair(sm90(192, 4, true, Raster::Grouped(4), Epilogue::Tma)),
    pair(sm90(128, 5, true, Raster::Grouped(4), Epilogue::Tma)),
    pair(sm90(128, 6, true, Raster::Grouped(8), Epilogue::Tma)),
    // ping-pong: one warpgroup's epilogue under the other's mainloop (two C tiles of 128 × 128
    // beside the ring: 5 stages at most with the TMA store)
    pp(sm90(128, 4, true, Raster::Grouped(8), Epilogue::Tma)),
    pp(sm90(128, 5, true, Raster::Grouped(8), Epilogue::Tma)),
    pp(sm90(128, 5, true, Raster::Hilbert, Epilogue::Tma)),
    pp(sm90(128, 4, true, Raster::Grouped(8), Epilogue::Registers)),
    pp(sm90(128, 5, true, Raster::Grouped(8), Epilogue::Registers)),
    pp(sm90(128, 6, true, Raster::Grouped(8), Epilogue::Registers)),
    bm64(sm90(128, 8, true, Raster::Grouped(8), Epilogue::Tma)),
    bm64(sm90(128, 6, true, Raster::Grouped(8), Epilogue::Tma)),
    bm64(sm90(128, 8, false, Raster::Linear, Epilogue::Registers)),
    bm64(sm90(64, 8, true, Raster::Grouped(8), Epilogue::Tma)),
    // skinny M: 16 KiB stages, so a deeper ring keeps more of B in flight per SM
    bm64(sm90(64, 10, true, Raster::Grouped(8), Epilogue::Tma)),
    bm64(sm90(64, 12, true, Raster::Grouped(8), Epilogue::Tma)),
    bm64(sm90(192, 6, true, Raster::Grouped(8), Epilogue::Tma)),
    bm64(sm90(256, 4, true, Raster::Grouped(8), Epilogue::Tma)),
    bm64(pair(sm90(128, 6, true, Raster::Grouped(4), Epilogue::Tma))),
];

/// Tile widths between the powers of two (`bn` a multiple of 16, [`GemmConfig::bn`]), timed
/// after [`SM90_CONFIGS`] (the 64-row ones likewise only where
/// [`GemmProblem::wants_64_rows`]): K-major B only (the default `--layout nt`; other layouts
/// skip them), the register epilogue, rings of about
/// 200 KiB (the TMA store takes these widths too, in narrower last boxes, but is timed here
/// only in [`SM90_WIDE_PINGPONG`]). `bn 176, 5 stages` and `bn 160, 6 stages` are cuBLASLt's 8192 × 8192 × 1024 tiles,
/// `bn 240, 4 stages` cuts 8192 columns into 35 N-tiles (16.97 waves of 128-row tiles on 132
/// SMs), bn 176 in pairs; 64-row: `bn 144, 8 stages` (cuBLASLt's 1000³ tile), `bn 80, 11
/// stages`, bn 144 in pairs.
///
/// ```
/// use tilekit_cli::bench_gemm::SM90_ODD_WIDTHS;
/// assert_eq!(SM90_ODD_WIDTHS.len(), 7);
/// assert!(SM90_ODD_WIDTHS.iter().all(|c| c.bn % 64 != 0 && c.bn % 16 == 0));
/// assert!(SM90_ODD_WIDTHS.iter().all(|c| c.check().is_ok() && c.shared_bytes() >= 180 * 1024));
/// let labels: Vec<String> = SM90_ODD_WIDTHS.iter().map(|c| c.label()).collect();
/// assert_eq!(labels[0], "bn 176, 5 stages, overlap, persistent, grouped 8");
/// assert_eq!(labels[4], "bn 144, 8 stages, overlap, persistent, grouped 8, bm 64");
/// ```
pub const SM90_ODD_WIDTHS: &[GemmConfig] = &[
    sm90(176, 5, true, Raster::Grouped(8), Epilogue::Registers),
    sm90(160, 6, true, Raster::Grouped(8), Epilogue::Registers),
    sm90(240, 4, true, Raster::Grouped(8), Epilogue::Registers),
    pair(sm90(176, 5, true, Raster::Grouped(4), Epilogue::Registers)),
    bm64(sm90(144, 8, true, Raster::Grouped(8), Epilogue::Registers)),
    bm64(sm90(80, 11, true, Raster::Grouped(8), Epilogue::Registers)),
    bm64(pair(sm90(144, 8, true, Raster::Grouped(4), Epilogue::Registers))),
];

/// Ping-pong tiles wider than 128 columns ([`GemmConfig::pingpong`], bn ≤ 208 with the plain
/// product: each consumer warpgroup holds a 128 × bn tile, bn accumulators a thread in 240
/// registers), timed after [`SM90_ODD_WIDTHS`] with two consumers: cuBLASLt's 8192 × 8192 ×
/// 1024 winner is a ping-pong tile of 128 × 176. Each with the TMA store (two C tiles of
/// 128 × bn beside the ring: 3 or 4 stages; the last boxes of a width not a multiple of 64
/// narrower, [`GemmConfig::c_maps`]) and with the register epilogue (5 or 6 stages: the other
/// warpgroup's mainloop hides it), persistent, grouped 8.
///
/// ```
/// use tilekit_cli::bench_gemm::SM90_WIDE_PINGPONG;
/// assert_eq!(SM90_WIDE_PINGPONG.len(), 8);
/// assert!(SM90_WIDE_PINGPONG.iter().all(|c| c.pingpong && c.bn > 128 && c.check().is_ok()));
/// let labels: Vec<String> = SM90_WIDE_PINGPONG.iter().map(|c| c.label()).collect();
/// assert_eq!(labels[0], "bn 176, 3 stages, overlap, persistent, grouped 8, tma store, pingpong");
/// ```
pub const SM90_WIDE_PINGPONG: &[GemmConfig] = &[
    pp(sm90(176, 3, true, Raster::Grouped(8), Epilogue::Tma)),
    pp(sm90(176, 5, true, Raster::Grouped(8), Epilogue::Registers)),
    pp(sm90(160, 4, true, Raster::Grouped(8), Epilogue::Tma)),
    pp(sm90(160, 6, true, Raster::Grouped(8), Epilogue::Registers)),
    pp(sm90(192, 3, true, Raster::Grouped(8), Epilogue::Tma)),
    pp(sm90(192, 5, true, Raster::Grouped(8), Epilogue::Registers)),
    pp(sm90(144, 4, true, Raster::Grouped(8), Epilogue::Tma)),
    pp(sm90(144, 6, true, Raster::Grouped(8), Epilogue::Registers)),
];

/// `c` storing C in column subtiles of `s` ([`GemmConfig::epilogue_subtile`]; labels end in
/// `subtile s`).
const fn subtile(c: GemmConfig, s: i64) -> GemmConfig {
    GemmConfig { epilogue_subtile: s, ..c }
}

/// Ping-pong tiles 128..=208 wide with the TMA store in column subtiles
/// ([`GemmConfig::epilogue_subtile`]: two buffers of 128 × s per warpgroup instead of a whole
/// 128 × bn C tile each), timed after [`SM90_WIDE_PINGPONG`] with two consumers: each width at
/// the deepest ring that fits beside its buffers (bf16 C: bn 128 six stages with 32-column
/// subtiles, 144 six with 16, 160 and 176 five with 32, 192 and 208 five with 16), and bn 176
/// with 64- and 16-column subtiles (4 and 5 stages) to separate the subtile's cost from the
/// ring's depth. Persistent, grouped 8. cuBLASLt's 8192 × 8192 × 1024 winners are 176 × 128 and
/// 168 × 128 ping-pong kernels storing C this way. Last, the cooperative 128 × 256 tile (the
/// measured winner at 3 stages beside its whole C tile) with 4 stages beside 64-column
/// subtiles.
///
/// ```
/// use tilekit_cli::bench_gemm::SM90_PINGPONG_SUBTILE;
/// assert_eq!(SM90_PINGPONG_SUBTILE.len(), 9);
/// assert!(SM90_PINGPONG_SUBTILE.iter().all(|c| c.epilogue_subtile > 0 && c.check().is_ok()));
/// assert_eq!(SM90_PINGPONG_SUBTILE.iter().filter(|c| c.pingpong).count(), 8);
/// // each the deepest ring: one more stage does not fit
/// assert!(SM90_PINGPONG_SUBTILE
///     .iter()
///     .all(|c| c.stages == 6 || tilekit_ops::gemm_sm90::GemmConfig { stages: c.stages + 1, ..*c }.check().is_err()));
/// let labels: Vec<String> = SM90_PINGPONG_SUBTILE.iter().map(|c| c.label()).collect();
/// assert_eq!(labels[3], "bn 176, 5 stages, overlap, persistent, grouped 8, tma store, pingpong, subtile 32");
/// ```
pub const SM90_PINGPONG_SUBTILE: &[GemmConfig] = &[
    subtile(pp(sm90(128, 6, true, Raster::Grouped(8), Epilogue::Tma)), 32),
    subtile(pp(sm90(144, 6, true, Raster::Grouped(8), Epilogue::Tma)), 16),
    subtile(pp(sm90(160, 5, true, Raster::Grouped(8), Epilogue::Tma)), 32),
    subtile(pp(sm90(176, 5, true, Raster::Grouped(8), Epilogue::Tma)), 32),
    subtile(pp(sm90(176, 5, true, Raster::Grouped(8), Epilogue::Tma)), 16),
    subtile(pp(sm90(176, 4, true, Raster::Grouped(8), Epilogue::Tma)), 64),
    subtile(pp(sm90(192, 5, true, Raster::Grouped(8), Epilogue::Tma)), 16),
    subtile(pp(sm90(208, 5, true, Raster::Grouped(8), Epilogue::Tma)), 16),
    subtile(sm90(256, 4, true, Raster::Grouped(8), Epilogue::Tma), 64),
];

/// 64-row tiles of odd widths with the TMA-store epilogue (the C tile's last 16 columns of
/// bn 144 through the `cm_tail` map, [`GemmConfig::c_maps`]), timed after
/// [`SM90_PINGPONG_SUBTILE`] only where [`GemmProblem::wants_64_rows`]: cuBLASLt's 1000³ winner on
/// the H100 is a 64 × 144 tile with 8 stages on 112 blocks (`nvjet_sm90_tst_64x144_64x8_4x1`);
/// 1000 × 1000 in 64 × 144 tiles is 16 × 7 = 112 tiles (64 × 160 as well), where 128 × 128
/// tiles are 64 blocks on 132 SMs. bn 144 with 8 stages (226 KiB beside a bf16 C tile) and 6,
/// persistent grouped 8 and one block per tile; bn 160 with 7.
///
/// ```
/// use tilekit_cli::bench_gemm::SM90_BM64_TMA;
/// use tilekit_ops::gemm_sm90::{launch_grid, Epilogue};
/// assert_eq!(SM90_BM64_TMA.len(), 4);
/// assert!(SM90_BM64_TMA.iter().all(|c| c.bm() == 64 && c.epilogue == Epilogue::Tma));
/// assert!(SM90_BM64_TMA.iter().all(|c| c.check().is_ok()));
/// let labels: Vec<String> = SM90_BM64_TMA.iter().map(|c| c.label()).collect();
/// assert_eq!(labels[0], "bn 144, 8 stages, overlap, persistent, grouped 8, tma store, bm 64");
/// assert_eq!(labels[2], "bn 144, 8 stages, overlap, tma store, bm 64");
/// // one block per tile: 7 N-tiles × 16 M-tiles, cuBLASLt's 112 blocks
/// assert_eq!(launch_grid(&SM90_BM64_TMA[2], 1000, 1000, 132).unwrap(), [7, 16, 1]);
/// ```
pub const SM90_BM64_TMA: &[GemmConfig] = &[
    bm64(sm90(144, 8, true, Raster::Grouped(8), Epilogue::Tma)),
    bm64(sm90(144, 6, true, Raster::Grouped(8), Epilogue::Tma)),
    bm64(sm90(144, 8, false, Raster::Linear, Epilogue::Tma)),
    bm64(sm90(160, 7, true, Raster::Grouped(8), Epilogue::Tma)),
];

/// One entry of [`BEST`]: a shape (M, N, K) and the labels timed for it.
///
/// ```
/// let (shape, labels): tilekit_cli::bench_gemm::BestList = tilekit_cli::bench_gemm::BEST[0];
/// assert_eq!((shape, labels.len()), ((8192, 8192, 8192), 2));
/// ```
pub type BestList = ((usize, usize, usize), &'static [&'static str]);

/// `tilekit bench gemm --gemm-config best`: per shape of [`SHAPES`], the labels of the sm90
/// configurations that won on the H100 (SXM, 132 SMs) in the full run of 2026-11-27
/// (session 11, layout nt, bf16 and f16) — for 8192 × 8192 × 1024 and 2048³ the subtiled ping-pong
/// tiles that won the session-12 comparison (H100, 2026-11-27: bn 176 / 5 stages / 32-column
/// subtiles 764.7 TFLOP/s against 738.1 for the cooperative bn 256; bn 128 ping-pong with
/// subtiles 673.2 against 660.0) — so a recorded run of every shape times two to four
/// configurations a shape instead of about 35. Labels are matched exactly (not as substrings:
/// `… grouped 8, tma store` would also take its `cluster 2` and `bm 64` relatives). Where one
/// configuration won, a sibling that won a neighbouring shape is timed beside it; 1000³ also
/// times cuBLASLt's tile, 64 × 144 ([`SM90_BM64_TMA`]). 8191³ is staged (its rows are not
/// 16-byte aligned: padded copies, timed). The test `tests/it/bench_gemm.rs` checks that every
/// label here is among the configurations `bench gemm` times for its shape, so the list
/// cannot rot silently when the tables above change.
///
/// ```
/// use tilekit_cli::bench_gemm::{best_labels, BEST, SHAPES};
/// assert_eq!(BEST.len(), SHAPES.len());
/// assert!(BEST.iter().all(|(_, l)| (2..=4).contains(&l.len())));
/// assert_eq!(best_labels((8191, 8191, 8191)).unwrap()[0].split(", ").next(), Some("staged"));
/// ```
pub const BEST: &[BestList] = &[
    (
        (8192, 8192, 8192),
        &[
            "bn 256, 3 stages, overlap, persistent, grouped 8, tma store",
            "bn 256, 3 stages, overlap, persistent, hilbert, tma store",
        ],
    ),
    (
        (4096, 4096, 4096),
        &[
            "bn 256, 3 stages, overlap, persistent, hilbert, tma store",
            "bn 256, 3 stages, overlap, persistent, grouped 8, tma store",
        ],
    ),
    (
        (2048, 2048, 2048),
        &[
            "bn 128, 6 stages, overlap, persistent, grouped 8, tma store, pingpong, subtile 32",
            "bn 128, 6 stages, overlap, persistent, hilbert, tma store",
            "bn 128, 5 stages, overlap, persistent, hilbert, tma store, pingpong",
        ],
    ),
    (
        (8192, 8192, 1024),
        &[
            "bn 176, 5 stages, overlap, persistent, grouped 8, tma store, pingpong, subtile 32",
            "bn 160, 5 stages, overlap, persistent, grouped 8, tma store, pingpong, subtile 32",
            "bn 256, 3 stages, overlap, persistent, hilbert, tma store",
        ],
    ),
    (
        (4096, 14336, 4096),
        &[
            "bn 256, 3 stages, overlap, persistent, grouped 8, tma store",
            "bn 256, 3 stages, overlap, persistent, hilbert, tma store",
        ],
    ),
    (
        (14336, 4096, 4096),
        &[
            "bn 256, 3 stages, overlap, persistent, hilbert, tma store",
            "bn 256, 3 stages, overlap, persistent, grouped 8, tma store",
        ],
    ),
    (
        (16384, 1024, 4096),
        &[
            "bn 256, 3 stages, overlap, persistent, hilbert, tma store",
            "bn 256, 3 stages, overlap, persistent, grouped 8, tma store",
        ],
    ),
    (
        (8191, 8191, 8191),
        &[
            "staged, bn 256, 3 stages, overlap, persistent, grouped 8, tma store",
            "staged, bn 256, 3 stages, overlap, persistent, hilbert, tma store",
        ],
    ),
    (
        (1000, 1000, 1000),
        &[
            "bn 128, 6 stages, overlap, persistent, grouped 4, tma store",
            "bn 128, 4 stages, overlap, persistent, grouped 8, tma store, pingpong",
            "bn 144, 8 stages, overlap, persistent, grouped 8, tma store, bm 64",
            "bn 144, 8 stages, overlap, tma store, bm 64",
        ],
    ),
    (
        (64, 8192, 8192),
        &[
            "bn 64, 8 stages, overlap, persistent, grouped 8, tma store, bm 64",
            "bn 128, 8 stages, overlap, persistent, grouped 8, tma store, bm 64",
        ],
    ),
];

/// The labels [`BEST`] lists for a shape, `None` for a shape it has no list for.
///
/// ```
/// use tilekit_cli::bench_gemm::best_labels;
/// let l = best_labels((2048, 2048, 2048)).unwrap();
/// assert_eq!((l.len(), l[0].ends_with("pingpong, subtile 32")), (3, true));
/// assert!(best_labels((512, 512, 512)).is_none());
/// ```
pub fn best_labels(shape: (usize, usize, usize)) -> Option<&'static [&'static str]> {
    BEST.iter().find(|(s, _)| *s == shape).map(|(_, l)| *l)
}

/// `--gemm-config`: which of the Hopper kernel's configurations `bench gemm` times.
///
/// ```
/// use tilekit_cli::bench_gemm::{parse_gemm_config, GemmConfigFilter};
/// let f = parse_gemm_config("bn 256, 3 stages|bm 64").unwrap();
/// assert!(f.selects((1000, 1000, 1000), "bn 144, 8 stages, overlap, tma store, bm 64"));
/// assert!(!f.selects((1000, 1000, 1000), "bn 128, 6 stages"));
/// assert_eq!(f.to_string(), "bn 256, 3 stages|bm 64");
/// assert_eq!(parse_gemm_config("best").unwrap(), GemmConfigFilter::Best);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GemmConfigFilter {
    /// Those whose label contains one of these texts.
    Patterns(Vec<String>),
    /// Those whose label [`BEST`] lists for the shape (exact labels).
    Best,
}

impl GemmConfigFilter {
    /// Whether the entry labelled `label` of the case of `shape` is timed.
    ///
    /// ```
    /// use tilekit_cli::bench_gemm::GemmConfigFilter;
    /// let best = GemmConfigFilter::Best;
    /// let won = "bn 128, 6 stages, overlap, persistent, hilbert, tma store";
    /// assert!(best.selects((2048, 2048, 2048), won));
    /// assert!(!best.selects((2048, 2048, 2048), "bn 128, 6 stages, overlap, persistent"));
    /// assert!(!best.selects((512, 512, 512), won));
    /// ```
    pub fn selects(&self, shape: (usize, usize, usize), label: &str) -> bool {
        match self {
            GemmConfigFilter::Patterns(p) => p.iter().any(|t| label.contains(t.as_str())),
            GemmConfigFilter::Best => best_labels(shape).is_some_and(|l| l.contains(&label)),
        }
    }
}

impl std::fmt::Display for GemmConfigFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GemmConfigFilter::Patterns(p) => f.write_str(&p.join("|")),
            GemmConfigFilter::Best => f.write_str("best"),
        }
    }
}

/// `--gemm-config` text → [`GemmConfigFilter`]: `best`, or texts separated by `|` (spaces
/// around a `|` are dropped; an empty text, which every label would contain, is refused).
///
/// ```
/// use tilekit_cli::bench_gemm::{parse_gemm_config, GemmConfigFilter};
/// let f = parse_gemm_config("bm 64 | cluster 2").unwrap();
/// assert_eq!(f, GemmConfigFilter::Patterns(vec!["bm 64".into(), "cluster 2".into()]));
/// assert!(parse_gemm_config("bm 64||pingpong").unwrap_err().contains("empty"));
/// assert!(parse_gemm_config("").is_err());
/// ```
pub fn parse_gemm_config(text: &str) -> Result<GemmConfigFilter, String> {
    if text.trim() == "best" {
        return Ok(GemmConfigFilter::Best);
    }
    let patterns: Vec<String> = text.split('|').map(|p| p.trim().to_string()).collect();
    if patterns.iter().any(String::is_empty) {
        return Err(format!(
            "{text:?} has an empty text between `|`s (every label would match it): texts \
             separated by `|`, e.g. `bn 256, 3 stages|bm 64`, or `best`"
        ));
    }
    Ok(GemmConfigFilter::Patterns(patterns))
}

/// How one entry of the sm90 column runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sm90Run {
    /// `gemm_sm90` launched directly on the operands as stored (through padded copies where
    /// the case is staged).
    Kernel(GemmConfig),
    /// A split K through `api::gemm_with`, the operands viewed as M × K and K × N.
    SplitK(GemmChoice),
}

/// The sm90 column's entries for one case (shape and input type, the operands stored as
/// `--layout` says), each with its label: what `bench gemm` times there, without `--gemm-config`.
///
/// ```
/// use tilekit_cli::bench_gemm::sm90_case;
/// use tilekit_cuda::blas::Order;
/// use tilekit_ir::ScalarType;
/// let nt = (Order::RowMajor, Order::ColMajor);
/// let small = sm90_case((1000, 1000, 1000), nt, ScalarType::BF16);
/// assert!(!small.staged);
/// assert!(small.labels().contains(&"bn 144, 8 stages, overlap, persistent, grouped 8, tma store, bm 64"));
/// assert!(small.labels().iter().any(|l| l.starts_with("api, ")), "split K: 64 tiles of 128²");
/// let big = sm90_case((4096, 4096, 4096), nt, ScalarType::BF16);
/// assert!(big.labels().iter().all(|l| !l.ends_with("bm 64")));
/// let odd = sm90_case((8191, 8191, 8191), nt, ScalarType::F16);
/// assert!(odd.staged && odd.labels().iter().all(|l| l.starts_with("staged, bn ")));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Sm90Case {
    /// (M, N, K).
    pub shape: (usize, usize, usize),
    /// Input (and output) type.
    pub ty: ScalarType,
    /// Whether the operands and C go through copies of padded pitch (a row pitch TMA cannot
    /// describe): then only the TMA-store configurations of bn ≥ 192 are timed, labelled
    /// `staged, …`.
    pub staged: bool,
    /// (label, how it runs), in the order they are timed.
    pub entries: Vec<(String, Sm90Run)>,
}

impl Sm90Case {
    /// The entries' labels.
    ///
    /// ```
    /// use tilekit_cli::bench_gemm::sm90_case;
    /// use tilekit_cuda::blas::Order;
    /// let c = sm90_case((2048, 2048, 2048), (Order::RowMajor, Order::ColMajor), tilekit_ir::ScalarType::BF16);
    /// assert_eq!(c.labels()[0], "bn 128, 6 stages, overlap");
    /// ```
    pub fn labels(&self) -> Vec<&str> {
        self.entries.iter().map(|(l, _)| l.as_str()).collect()
    }
}

/// Whether the Hopper kernel reads operands stored as `orders` (and writes C) in place, or
/// through copies of padded pitch (`true`: a row pitch that is not a multiple of 16 bytes).
fn staged_case((m, n, k): (usize, usize, usize), orders: (Order, Order), ty: ScalarType) -> bool {
    let (a_major, b_major) = (major(orders.0, true), major(orders.1, false));
    let inner = |major, mn: usize| if major == Major::K { k } else { mn };
    let aligned = |inner: usize| (inner * ty.size_bytes()).is_multiple_of(16);
    !aligned(inner(a_major, m)) || !aligned(inner(b_major, n)) || !aligned(n)
}

/// The sm90 column's entries for a case: [`SM90_CONFIGS`], [`SM90_ODD_WIDTHS`],
/// [`SM90_WIDE_PINGPONG`], [`SM90_PINGPONG_SUBTILE`] and [`SM90_BM64_TMA`] (the 64-row ones
/// only where
/// [`GemmProblem::wants_64_rows`]), the problem's [`GemmChoice::heuristic`] where it is not
/// among them, each that passes [`GemmConfig::check`] for the case's types and layout (a TMA
/// store only where C's rows are 16-byte aligned; staged: only TMA stores of bn ≥ 192); then,
/// for a C of at most 64 tiles of 128 × 128 (not staged), split K through the API.
/// An example is at [`Sm90Case`].
pub fn sm90_case(
    (m, n, k): (usize, usize, usize),
    orders: (Order, Order),
    ty: ScalarType,
) -> Sm90Case {
    let (a_major, b_major) = (major(orders.0, true), major(orders.1, false));
    let staged = staged_case((m, n, k), orders, ty);
    let (mi, ni, ki) = (m as i64, n as i64, k as i64);
    let c_aligned = (n * ty.size_bytes()).is_multiple_of(16);
    let problem =
        GemmProblem::new(mi, ni, ki, ty, ty, !staged && c_aligned).with_majors(a_major, b_major);
    let typed = |c: &GemmConfig| GemmConfig { input: ty, output: ty, a_major, b_major, ..*c };
    let mut configs: Vec<GemmConfig> = SM90_CONFIGS
        .iter()
        .chain(SM90_ODD_WIDTHS)
        .chain(SM90_WIDE_PINGPONG)
        .chain(SM90_PINGPONG_SUBTILE)
        .chain(SM90_BM64_TMA)
        .filter(|c| c.consumers == 2 || problem.wants_64_rows())
        .map(typed)
        .collect();
    let heuristic = problem.config(&GemmChoice::heuristic(&problem));
    if heuristic.split_k == 1 && !configs.contains(&heuristic) {
        configs.push(heuristic);
    }
    let mut entries = vec![];
    for cfg in configs {
        // staging costs the same for every config: time only the large-tile TMA-store ones
        if staged && (cfg.bn < 192 || cfg.epilogue != Epilogue::Tma) {
            continue;
        }
        // a TMA store needs C's rows 16-byte aligned
        if cfg.epilogue == Epilogue::Tma && !staged && !c_aligned {
            continue;
        }
        if cfg.check().is_err() {
            continue;
        }
        let label = if staged { format!("staged, {}", cfg.label()) } else { cfg.label() };
        entries.push((label, Sm90Run::Kernel(cfg)));
    }
    // a C of few tiles and a long K: split K through the API (f32 workspace, then the sum
    // into C), the operands viewed as M × K and K × N
    // (tiles of bm × bn; two consumers with 4 stages, one (64-row tiles) with 6 or 5)
    let tiles = |bm: i64, bn: i64| ((mi + bm - 1) / bm) * ((ni + bn - 1) / bn);
    if !staged && tiles(128, 128) <= 64 {
        let splits = [
            (128, 2, 2),
            (128, 4, 2),
            (256, 2, 2),
            (256, 4, 2),
            (256, 8, 2),
            (128, 2, 1),
            (256, 2, 1),
            (256, 4, 1),
        ];
        for (bn, split_k, consumers) in splits {
            let bm = 64 * consumers;
            if (ki + 63) / 64 < 4 * split_k || tiles(bm, bn) > 64 {
                continue;
            }
            let stages = if consumers == 2 {
                4
            } else if bn == 128 {
                6
            } else {
                5
            };
            let choice = GemmChoice::split(bn, stages, consumers, split_k, false, Raster::Linear);
            entries.push((format!("api, {}", choice.label()), Sm90Run::SplitK(choice)));
        }
    }
    Sm90Case { shape: (m, n, k), ty, staged, entries }
}

/// The entries of each case that `filter` selects, checked before anything is timed: `Err`
/// ([`CliError::BadArgument`] on `--gemm-config`) for a text no label of any case contains
/// (naming it and listing the labels there are), for `best` with a `layout` other than `nt`
/// (its labels are the nt runs'), a shape [`BEST`] has no list for, or a label of [`BEST`]
/// the case does not have. A case none of whose labels match keeps no entries (the caller
/// warns and leaves its sm90 cells empty).
///
/// ```
/// use tilekit_cli::bench_gemm::{parse_gemm_config, select_sm90, sm90_case};
/// use tilekit_cuda::blas::Order;
/// use tilekit_ir::ScalarType;
/// let nt = (Order::RowMajor, Order::ColMajor);
/// let cases = [(1000, 1000, 1000), (4096, 4096, 4096)].map(|s| sm90_case(s, nt, ScalarType::BF16));
/// let bm64 = parse_gemm_config("bm 64").unwrap();
/// let picked = select_sm90(&cases, &bm64, "nt").unwrap();
/// assert!(picked[0].entries.len() >= 10 && picked[1].entries.is_empty());
/// let e = select_sm90(&cases, &parse_gemm_config("bn 999").unwrap(), "nt").unwrap_err();
/// assert!(e.to_string().contains("\"bn 999\"") && e.to_string().contains("bn 144, 8 stages"), "{e}");
/// let best = select_sm90(&cases, &parse_gemm_config("best").unwrap(), "nt").unwrap();
/// assert_eq!((best[0].entries.len(), best[1].entries.len()), (4, 2));
/// ```
pub fn select_sm90(
    cases: &[Sm90Case],
    filter: &GemmConfigFilter,
    layout: &str,
) -> Result<Vec<Sm90Case>, CliError> {
    let bad = |value: &str, rule: String| CliError::BadArgument {
        flag: "--gemm-config".into(),
        value: value.into(),
        rule,
    };
    let shape_name = |(m, n, k): (usize, usize, usize)| format!("{m}x{n}x{k}");
    match filter {
        GemmConfigFilter::Best => {
            if layout != "nt" {
                return Err(bad(
                    "best",
                    format!(
                        "texts of configuration labels with --layout {layout} (best lists the \
                         winners of layout nt: run it with --layout nt)"
                    ),
                ));
            }
            for case in cases {
                let Some(list) = best_labels(case.shape) else {
                    let known: Vec<String> = BEST.iter().map(|(s, _)| shape_name(*s)).collect();
                    return Err(bad(
                        "best",
                        format!(
                            "texts of configuration labels for {} (best has lists for {} only)",
                            shape_name(case.shape),
                            known.join(", ")
                        ),
                    ));
                };
                let labels = case.labels();
                if let Some(missing) = list.iter().find(|l| !labels.contains(l)) {
                    return Err(bad(
                        "best",
                        format!(
                            "a list whose labels {} {} has; `{missing}` is not among them: {}",
                            shape_name(case.shape),
                            case.ty,
                            labels.join("; ")
                        ),
                    ));
                }
            }
        }
        GemmConfigFilter::Patterns(patterns) => {
            for p in patterns {
                let hit = cases.iter().any(|c| c.labels().iter().any(|l| l.contains(p.as_str())));
                if !hit {
                    let mut all: Vec<&str> = vec![];
                    for l in cases.iter().flat_map(|c| c.labels()) {
                        if !all.contains(&l) {
                            all.push(l);
                        }
                    }
                    let shapes: Vec<String> =
                        cases.iter().map(|c| format!("{} {}", shape_name(c.shape), c.ty)).collect();
                    return Err(bad(
                        p,
                        format!(
                            "a text contained in a configuration label of {}: {}",
                            shapes.join(", "),
                            all.join("; ")
                        ),
                    ));
                }
            }
        }
    }
    Ok(cases
        .iter()
        .map(|c| Sm90Case {
            entries: c
                .entries
                .iter()
                .filter(|(l, _)| filter.selects(c.shape, l))
                .cloned()
                .collect(),
            ..c.clone()
        })
        .collect())
}

/// `--layout` → the storage of A and B.
///
/// ```
/// use tilekit_cuda::blas::Order;
/// assert_eq!(tilekit_cli::bench_gemm::parse_layout("nn").unwrap(), (Order::RowMajor, Order::RowMajor));
/// assert_eq!(tilekit_cli::bench_gemm::parse_layout("nt").unwrap(), (Order::RowMajor, Order::ColMajor));
/// assert!(tilekit_cli::bench_gemm::parse_layout("xx").is_err());
/// ```
pub fn parse_layout(text: &str) -> Result<(Order, Order), CliError> {
    let order = |c| match c {
        'n' => Some(Order::RowMajor),
        't' => Some(Order::ColMajor),
        _ => None,
    };
    let mut it = text.chars().map(order);
    match (it.next(), it.next(), it.next()) {
        (Some(Some(a)), Some(Some(b)), None) => Ok((a, b)),
        _ => Err(CliError::BadArgument {
            flag: "--layout".into(),
            value: text.into(),
            rule: "two letters of n (row-major) / t (column-major), A then B: nt, nn, tn, tt"
                .into(),
        }),
    }
}

/// The kernel's major of an operand stored in `order`: `a` (A: row-major is K-contiguous) or
/// B (column-major is K-contiguous).
fn major(order: Order, a: bool) -> Major {
    match (order, a) {
        (Order::RowMajor, true) | (Order::ColMajor, false) => Major::K,
        _ => Major::MN,
    }
}

/// tilekit's Hopper GEMM on device tensors (A, B stored as `orders` says, C M×N row-major):
/// the best of the case's entries ([`sm90_case`], as `--gemm-config` selected them) as
/// (median ms, label), each kernel launched on [`launch_grid`] for the device's SM count and
/// checked on 64 sampled elements of C (poisoned first) against an f64 reference; `Err` names
/// a wrong result or a failed launch.
fn sm90_best(
    cuda: &Cuda,
    case: &Sm90Case,
    orders: (Order, Order),
    reps: usize,
) -> Result<Option<(f64, String)>, String> {
    if cuda.gpu().props().compute_capability.0 < 9 {
        return Ok(None);
    }
    let ((m, n, k), ty, staged) = (case.shape, case.ty, case.staged);
    let (a_major, b_major) = (major(orders.0, true), major(orders.1, false));
    // each operand as stored: (outer, inner) = (rows of MN, K) K-major, (K, MN) MN-major
    let stored = |major, mn: usize| if major == Major::K { (mn, k) } else { (k, mn) };
    let (a_st, b_st) = (stored(a_major, m), stored(b_major, n));
    // rows TMA cannot describe (pitches not multiples of 16 bytes): each call copies A and B
    // into buffers of padded pitch (the TMA maps keep the true dims, so the pad reads as
    // zeros), the kernel writes C at a padded pitch, and a copy brings C to its M×N place —
    // all timed
    let n8 = n.next_multiple_of(8) as i64;
    let e = |e: tilekit_ops::OpsError| e.to_string();
    let (mi, ni, ki) = (m as i64, n as i64, k as i64);
    let layout = |r, c| {
        tilekit_ir::tensor::TensorLayout::contiguous(ty, vec![r, c]).map_err(|e| e.to_string())
    };
    let ah = tilekit_ir::tensor::HostTensor::new(
        host::random(ty, m * k, 21).map_err(e)?,
        layout(a_st.0 as i64, a_st.1 as i64)?,
    )
    .map_err(|e| e.to_string())?;
    let bh = tilekit_ir::tensor::HostTensor::new(
        host::random(ty, n * k, 22).map_err(e)?,
        layout(b_st.0 as i64, b_st.1 as i64)?,
    )
    .map_err(|e| e.to_string())?;
    let a = cuda.from_host(&ah).map_err(e)?;
    let b = cuda.from_host(&bh).map_err(e)?;
    // C is poisoned (NaN) before each config, so a config that leaves elements unwritten
    // cannot pass on the last one's results
    let ch =
        tilekit_ir::tensor::HostTensor::new(host::poisoned(ty, m * n).map_err(e)?, layout(mi, ni)?)
            .map_err(|e| e.to_string())?;
    let (av, bv) = (host::to_f64(&ah.buffer()), host::to_f64(&bh.buffer()));
    let pad8 = |(o, i): (usize, usize)| [o as i64, i.next_multiple_of(8) as i64];
    let (a_pad_dims, b_pad_dims) = (pad8(a_st), pad8(b_st));
    let pads = if staged {
        let a_pad = cuda.empty(ty, &a_pad_dims).map_err(e)?;
        let b_pad = cuda.empty(ty, &b_pad_dims).map_err(e)?;
        let c_pad = cuda.empty(ty, &[mi, n8]).map_err(e)?;
        Some((a_pad, b_pad, c_pad))
    } else {
        None
    };
    let flops = 2.0 * (m * n * k) as f64;
    // 64 sampled elements of C against an f64 reference (C poisoned before each config)
    let check_c = |got: &[f64], label: &str| -> Result<(), String> {
        let mut s = 0x9e37_79b9_u64;
        for _ in 0..64 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let (i, j) = ((s >> 3) as usize % m, (s >> 33) as usize % n);
            // element (row, x) of an operand through its storage
            let at = |major, v: &[f64], mn: usize, row: usize, x: usize| match major {
                Major::K => v[row * k + x],
                Major::MN => v[x * mn + row],
            };
            let terms = (0..k).map(|x| at(a_major, &av, m, i, x) * at(b_major, &bv, n, j, x));
            let want: f64 = terms.clone().sum();
            let tol = terms.map(f64::abs).sum::<f64>() * 8.0 * f32::EPSILON as f64
                + want.abs() / 128.0
                + 1e-6;
            let g = got[i * n + j];
            if (g - want).abs() > tol || g.is_nan() {
                return Err(format!("{label}: C[{i}][{j}] = {g}, reference {want}"));
            }
        }
        Ok(())
    };
    // a timed config's C checked, its time printed, and kept if it is the fastest so far
    let keep = |best: &mut Option<(f64, String)>,
                label: String,
                ms: f64,
                c: &tilekit_cuda::DeviceTensor|
     -> Result<(), String> {
        check_c(&host::to_f64(&cuda.to_host(c).map_err(e)?.buffer()), &label)?;
        eprintln!("    {ms:.3} ms, {:.1} TFLOP/s, checked", tflops(flops, ms));
        if best.as_ref().is_none_or(|(b, _)| ms < *b) {
            *best = Some((ms, label));
        }
        Ok(())
    };
    let mut best: Option<(f64, String)> = None;
    // a split K's operands viewed as M × K and K × N
    let view = |t: &tilekit_cuda::DeviceTensor, transposed: bool| {
        if transposed {
            t.transpose(0, 1).map_err(|x| x.to_string())
        } else {
            Ok(t.clone())
        }
    };
    for (label, run) in &case.entries {
        match *run {
            Sm90Run::Kernel(cfg) => {
                let Ok(kernel) = build_gemm_sm90(cfg) else { continue };
                let kernel = CompiledKernel::new(kernel);
                let mut c = cuda.from_host(&ch).map_err(e)?;
                let grid = launch_grid(&cfg, mi, ni, cuda.multiprocessors()).map_err(e)?;
                // the operands the kernel reads and the C it writes: the callers' own, or the
                // padded buffers' M×K, N×K and M×N views
                let views = match &pads {
                    Some((ap, bp, cp)) => Some((
                        ap.narrow(1, 0, a_st.1 as i64).map_err(|x| x.to_string())?,
                        bp.narrow(1, 0, b_st.1 as i64).map_err(|x| x.to_string())?,
                        cp.narrow(1, 0, ni).map_err(|x| x.to_string())?,
                        // the kernel's `c` tensor is stored in column pairs: an even width (its
                        // extra column is pad; the TMA stores clip at the map's true N)
                        cp.narrow(1, 0, ni + ni % 2).map_err(|x| x.to_string())?,
                    )),
                    None => None,
                };
                let (ga, gb, a_len, b_len) = match (&pads, &views) {
                    (Some((ap, bp, _)), Some((av_, bv_, _, _))) => (
                        av_,
                        bv_,
                        (ap, a_pad_dims[0] * a_pad_dims[1]),
                        (bp, b_pad_dims[0] * b_pad_dims[1]),
                    ),
                    _ => (&a, &b, (&a, mi * ki), (&b, ni * ki)),
                };
                let c_map = match &views {
                    Some((_, _, cv, _)) => map_arg(cv.layout()).map_err(e)?,
                    None => map_arg(c.layout()).map_err(e)?,
                };
                let mut c_staged = views.as_ref().map(|(_, _, _, even)| even.clone());
                // the Hilbert walk's table of tile ids (a one-element dummy for the other orders)
                let bm = cfg.bm();
                let (tm, tn) = ((mi + bm - 1) / bm, (ni + cfg.bn - 1) / cfg.bn);
                let ids = match cfg.raster {
                    Raster::Hilbert => hilbert_order(tm, tn),
                    _ => vec![0],
                };
                let order_h = tilekit_ir::tensor::HostTensor::from_slice(&ids, &[ids.len() as i64])
                    .map_err(|e| e.to_string())?;
                let order = cuda.from_host(&order_h).map_err(e)?;
                let mut launch = |c: &mut tilekit_cuda::DeviceTensor| -> tilekit_ops::Result<()> {
                    if let (Some((av_, bv_, _, _)), Some(_)) = (&views, &pads) {
                        tilekit_ops::api::copy_into(cuda, &a, &mut av_.clone())?;
                        tilekit_ops::api::copy_into(cuda, &b, &mut bv_.clone())?;
                    }
                    let out = match c_staged.as_mut() {
                        Some(cv) => cv,
                        None => &mut *c,
                    };
                    let mut bind = Bindings::new(&kernel)
                        .input_ptr("a", a_len.0, a_len.1, cuda)?
                        .input_ptr("b", b_len.0, b_len.1, cuda)?
                        .tensor_map("am", map_arg(ga.layout())?)?
                        .tensor_map("bm", map_arg(gb.layout())?)?
                        .output("c", out, cuda)?
                        .int("k", ki)?;
                    for name in cfg.c_maps() {
                        bind = bind.tensor_map(name, c_map.clone())?;
                    }
                    if cfg.raster == Raster::Hilbert {
                        bind = bind.input_ptr("order", &order, tm * tn, cuda)?;
                    }
                    cuda.launch(&kernel, grid, bind)?;
                    if let Some((_, _, cv, _)) = &views {
                        tilekit_ops::api::copy_into(cuda, cv, c)?;
                    }
                    Ok(())
                };
                eprintln!("  {m}x{n}x{k} {ty}: tilekit sm90, {label}, grid {grid:?} …");
                let t =
                    cuda.time(3, reps, |_| launch(&mut c)).map_err(|x| format!("{label}: {x}"))?;
                keep(&mut best, label.clone(), t.median_ms(), &c)?;
            }
            Sm90Run::SplitK(choice) => {
                let (av_, bv_) = (view(&a, a_major == Major::MN)?, view(&b, b_major == Major::K)?);
                let mut c = cuda.from_host(&ch).map_err(e)?;
                eprintln!("  {m}x{n}x{k} {ty}: tilekit sm90, {label} …");
                let t = cuda
                    .time(3, reps, |_| {
                        tilekit_ops::api::gemm_with(cuda, choice, &av_, &bv_, &mut c)
                    })
                    .map_err(|x| format!("{label}: {x}"))?;
                keep(&mut best, label.clone(), t.median_ms(), &c)?;
            }
        }
    }
    Ok(best)
}

/// `MxNxK` → (M, N, K), each at least 1.
///
/// ```
/// assert_eq!(tilekit_cli::bench_gemm::parse_shape("64x128x32").unwrap(), (64, 128, 32));
/// assert!(tilekit_cli::bench_gemm::parse_shape("64x0x32").is_err());
/// ```
pub fn parse_shape(text: &str) -> Result<(usize, usize, usize), CliError> {
    let bad = || CliError::BadArgument {
        flag: "--gemm-shape".into(),
        value: text.into(),
        rule: "MxNxK with M, N, K ≥ 1 (e.g. 4096x4096x4096)".into(),
    };
    let v: Vec<usize> = text
        .split('x')
        .map(|p| p.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    match v[..] {
        [m, n, k] if m > 0 && n > 0 && k > 0 => Ok((m, n, k)),
        _ => Err(bad()),
    }
}

/// The cases of the table: `--gemm-shape` or [`SHAPES`], each in bf16 and f16 (or
/// `--dtype`), and 8192³ in f32 (cuBLASLt only) where neither is given.
fn gemm_cases(a: &Args) -> Result<Vec<(usize, usize, usize, ScalarType)>, CliError> {
    let mut cases: Vec<(usize, usize, usize, ScalarType)> = vec![];
    let shapes: Vec<(usize, usize, usize)> = match &a.gemm_shape {
        Some(text) => vec![parse_shape(text)?],
        None => SHAPES.to_vec(),
    };
    for &(m, n, k) in &shapes {
        for ty in [ScalarType::BF16, ScalarType::F16] {
            if a.dtype.is_some_and(|d| d != ty) {
                continue;
            }
            cases.push((m, n, k, ty));
        }
    }
    if a.gemm_shape.is_none() && a.dtype.is_none() {
        cases.push((8192, 8192, 8192, ScalarType::F32));
    }
    Ok(cases)
}

/// Runs `tilekit bench gemm`: the table (or JSON lines) on stdout; a cuBLASLt failure is
/// reported on stderr as `FAIL …` and makes the exit code 1.
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    if let (Some(f), true) = (&a.gemm_config, a.batch.is_some() || a.dtype == Some(ScalarType::F32))
    {
        return Err(CliError::BadArgument {
            flag: "--gemm-config".into(),
            value: f.to_string(),
            rule: "no --gemm-config with --batch or --dtype f32 (it selects the Hopper kernel's \
                   configurations of the bf16 / f16 table)"
                .into(),
        });
    }
    if a.batch.is_some() {
        return crate::bench_gemm_batched::run(a);
    }
    if a.dtype == Some(ScalarType::F32) {
        return crate::bench_gemm_simt::run(a);
    }
    let orders = parse_layout(&a.layout)?;
    let cases = gemm_cases(a)?;
    // the sm90 column's entries per case, --gemm-config checked before the GPU is opened
    let all: Vec<Sm90Case> = cases
        .iter()
        .filter(|c| c.3 != ScalarType::F32)
        .map(|&(m, n, k, ty)| sm90_case((m, n, k), orders, ty))
        .collect();
    let plans = match &a.gemm_config {
        Some(f) => select_sm90(&all, f, &a.layout)?,
        None => all,
    };
    let gpu = Gpu::open(a.device)
        .map_err(|e| CliError::NoGpu { command: "bench gemm".into(), reason: e.to_string() })?;
    gpu.set_timed_calls(a.back_to_back);
    let cuda = Cuda::new(gpu.clone());
    let device = gpu.props().name.clone();
    let lay = a.layout.to_uppercase();
    if !a.json {
        outln!("device {device}; cuBLASLt: best of the heuristic's first {ALGOS} algorithms, row-major A and B{}", crate::bench::timed_calls_note(a.back_to_back))?;
        outln!(
            "last columns: layout {lay} (A {:?}, B {:?}; BLAS letters of row-major C = A·B)",
            orders.0,
            orders.1
        )?;
        outln!(
            "{:<18} {:>5} {:>12} {:>12} {:>14} {:>10} {:>7} {:>10} {:>10} {:>7}{}",
            "M×N×K",
            "dtype",
            "cuBLASLt",
            "(1st algo)",
            "cuBLASLt f32→",
            "tilekit",
            "ratio",
            format!("cuBLASLt {lay}"),
            format!("sm90 {lay}"),
            "ratio",
            match &a.gemm_config {
                Some(f) => format!("  sm90: only --gemm-config \"{f}\""),
                None => String::new(),
            }
        )?;
    }
    let mut failed = false;
    for (m, n, k, ty) in cases {
        let plan = plans.iter().find(|p| p.shape == (m, n, k) && p.ty == ty);
        let unmatched = plan.is_some_and(|p| p.entries.is_empty());
        if unmatched {
            eprintln!(
                "warning: --gemm-config {:?} matches no configuration of {m}x{n}x{k} {ty}: its \
                 sm90 cells are left empty",
                a.gemm_config.as_ref().map(|f| f.to_string()).unwrap_or_default()
            );
        }
        let shape = format!("{m}x{n}x{k}");
        let spec = LtSpec::new(m, n, k, ty);
        let flops = spec.flops();
        eprintln!("  {shape} {ty}: cuBLASLt …");
        let lt = match time_gemm_lt(&gpu, spec, ALGOS, a.reps) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("FAIL cuBLASLt {shape} {ty}: {e}");
                failed = true;
                continue;
            }
        };
        let (lt32, ours) = if ty == ScalarType::F32 {
            (None, None)
        } else {
            let lt32 =
                time_gemm_lt(&gpu, LtSpec { output: ScalarType::F32, ..spec }, ALGOS, a.reps)
                    .ok()
                    .map(|t| tflops(flops, t.best.median_ms()));
            eprintln!("  {shape} {ty}: tilekit api::gemm_into (row-major A, B; f32 out) …");
            (lt32, tilekit_ms(&cuda, m, n, k, ty, a.reps).map(|ms| tflops(flops, ms)))
        };
        let (tn, sm90) = if ty == ScalarType::F32 {
            (None, None)
        } else {
            let lt_spec = LtSpec { a: orders.0, b: orders.1, ..spec };
            let tn = time_gemm_lt(&gpu, lt_spec, ALGOS, a.reps)
                .ok()
                .map(|t| tflops(flops, t.best.median_ms()));
            let sm90 = match plan.filter(|p| !p.entries.is_empty()) {
                None => Ok(None),
                Some(p) => sm90_best(&cuda, p, orders, a.reps),
            };
            let sm90 = match sm90 {
                Ok(v) => v,
                Err(why) => {
                    eprintln!("FAIL tilekit gemm_sm90 {shape} {ty}: {why}");
                    failed = true;
                    None
                }
            };
            (tn, sm90)
        };
        let sm90_tflops = sm90.as_ref().map(|(ms, _)| tflops(flops, *ms));
        let row = GemmRow {
            shape,
            dtype: ty.name().into(),
            device: device.clone(),
            cublaslt_tflops: tflops(flops, lt.best.median_ms()),
            cublaslt_first_tflops: tflops(flops, lt.first_ms),
            cublaslt_f32_out_tflops: lt32,
            tilekit_tflops: ours,
            ratio: ours.zip(lt32).map(|(o, t)| o / t),
            layout: a.layout.clone(),
            cublaslt_tn_tflops: tn,
            sm90_tflops,
            sm90_config: sm90.map(|(_, c)| c),
            sm90_ratio: sm90_tflops.zip(tn).map(|(o, t)| o / t),
        };
        if a.json {
            crate::output::json_line(&row)?;
        } else {
            let opt = crate::output::cell;
            outln!(
                "{:<18} {:>5} {:>12.1} {:>12.1} {:>14} {:>10} {:>7} {:>10} {:>10} {:>7}  {}",
                row.shape,
                row.dtype,
                row.cublaslt_tflops,
                row.cublaslt_first_tflops,
                opt(row.cublaslt_f32_out_tflops, 1),
                opt(row.tilekit_tflops, 1),
                opt(row.ratio, 3),
                opt(row.cublaslt_tn_tflops, 1),
                opt(row.sm90_tflops, 1),
                opt(row.sm90_ratio, 3),
                match (&row.sm90_config, unmatched) {
                    (Some(c), _) => c.clone(),
                    (None, true) => "(no configuration matches --gemm-config)".into(),
                    (None, false) => String::new(),
                }
            )?;
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
