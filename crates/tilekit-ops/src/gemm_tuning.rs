//! Which Hopper GEMM configuration runs a given problem: a measured winner saved by
//! `tilekit tune gemm`, or a heuristic grounded in the benchmark logs when nothing was tuned.
//!
//! A [`GemmConfig`] has two halves. The types (input, output) come from the caller's tensors;
//! the **tile knobs** — `bn`, stages, overlap, persistence, raster order, epilogue — are what a
//! tuner chooses, captured as a [`GemmChoice`]. Choices are kept per device and per **shape
//! class** ([`GemmProblem::class`]): the types, the operand layout (BLAS letters, [`GemmProblem::layout`]) and each of M, N, K rounded
//! up to a power of two, so one tuning run of 8192³ serves 6000³ too, while a skinny
//! 64×8192×8192 keeps its own winner.
//!
//! ```text
//!   api::gemm(A, B) on a Hopper backend
//!     GemmProblem { m, n, k, input, output, majors, c_tma }     ── class ──►  "bf16>f32 nt m8192 n8192 k8192"
//!        │                                                                       │
//!        ▼                                                                       ▼
//!   backend.gemm_table() ─ saved by `tilekit tune gemm --save` ─► entry? ──yes──► its GemmChoice
//!   (<cache>/tuning/gemm-<device>.json)                              │no
//!                                                                    ▼
//!                                                       GemmChoice::heuristic(problem)
//!        GemmChoice.apply(GemmConfig { input, output, .. })  ──►  build_gemm_sm90 + launch
//! ```
//!
//! The heuristic is the H100 measurements of session 6 (bench/RESULTS.md; the per-config logs
//! `bench/logs/h100-gemm-persistent-configs-*.log`): with a 16-bit output and a C whose rows TMA can
//! store, `bn 256, 3 stages, overlap, persistent, grouped 8, TMA store` won every shape timed
//! (2048³ to 8192³, 4096×14336×4096, 8192×8192×1024; Hilbert order tied it on two). An f32 C
//! tile of 128×256 does not fit shared memory beside 3 stages, so f32 outputs (and C pitches TMA
//! cannot describe) take the register epilogue with 4 stages, the configuration the API has
//! used since it gained the Hopper path.
//!
//! Problems of few tiles (fewer than [`FEW_TILES`] tiles of 128 × 256, i.e. under one wave
//! of 256-wide blocks on a 132-SM device) take `bn 128, 6 stages` instead (session 8, H100,
//! bench/RESULTS.md): 64×8192×8192 140.8 TFLOP/s against 97.0 for the bn-256 choice (f32
//! out, `tilekit tune gemm`), 1000³ bf16 160 against 116 (`tilekit bench gemm`): twice the
//! blocks, and six stages keep the long K streaming.
//!
//! **The 64-row tile** (one consumer warpgroup, [`GemmConfig::consumers`] = 1; session 9,
//! reasoned, not yet measured — bench/NOTES.md §9). Tile counts on 132 SMs:
//!
//! ```text
//!   problem          128×256   128×128   64×128    what the 64-row tile changes
//!   64×8192×8192       32        64        64      half of every 128-row tile is TMA zero fill
//!                                                  that the tensor cores multiply: 64 rows halve
//!                                                  the MMA work of the same 64 blocks (session 8:
//!                                                  ~36 µs of MMA in the 61 µs kernel), leaving the
//!                                                  stream of B (134 MB, ~45 µs at copy speed)
//!   1000×1000×1000     32        64       128      64 blocks leave 68 SMs idle; 128 fill a wave
//!   1024×2048×K        32       128       256      128×128 already fills a wave: kept
//! ```
//!
//! So: M ≤ 64 takes one consumer (bn 128, 8 stages: the deepest ring that fits beside an f32 C
//! tile, for the long K of a skinny product); a few-tile problem whose 64 × 128 tiles still fit
//! one wave ([`ONE_WAVE`]) takes one consumer and bn 128 (6 stages); every other problem keeps the
//! two-consumer choices above, unchanged.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tilekit_ir::wgmma::Major;
use tilekit_ir::ScalarType;

use crate::gemm_sm90::{Epilogue, GemmConfig, Raster};
use crate::tuning::{TuningError, TuningSource};

/// The tile knobs of a [`GemmConfig`]: what a tuner chooses (the types come from the tensors).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::gemm_sm90::{Epilogue, GemmConfig, Raster};
/// use tilekit_ops::gemm_tuning::GemmChoice;
/// let c = GemmChoice { bn: 256, stages: 3, overlap: true, persistent: true,
///                      raster: Raster::Grouped(8), epilogue: Epilogue::Tma, split_k: 1, cluster: 1,
///                      consumers: 2, pingpong: false, epilogue_subtile: 0 };
/// let cfg = c.apply(GemmConfig { input: ScalarType::F16, output: ScalarType::F16, ..GemmConfig::default() });
/// assert_eq!((cfg.input, cfg.bn, cfg.stages), (ScalarType::F16, 256, 3));
/// assert_eq!(GemmChoice::of(&cfg), c);
/// assert_eq!(c.label(), "bn 256, 3 stages, overlap, persistent, grouped 8, tma store");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct GemmChoice {
    /// Columns of C per block: a multiple of 16 in 16..=256 (see [`GemmConfig::bn`]; the
    /// tuner's are 64, 128, 192, 256 and [`ODD_WIDTHS`], [`ODD_WIDTHS_64_ROWS`]).
    pub bn: i64,
    /// Stages of the shared-memory ring.
    pub stages: i64,
    /// One wgmma group kept in flight.
    pub overlap: bool,
    /// A persistent grid (one block per SM walking tiles).
    pub persistent: bool,
    /// The tile order.
    #[serde(with = "raster_text")]
    pub raster: Raster,
    /// How C is written.
    #[serde(with = "epilogue_text")]
    pub epilogue: Epilogue,
    /// K split over this many blocks per C tile (1: none; see [`GemmConfig::split_k`]).
    #[serde(default = "one")]
    pub split_k: i64,
    /// Blocks per cluster: 1, or 2 — pairs of blocks sharing B by multicast (see
    /// [`GemmConfig::cluster`]). Files written before clusters existed read as 1.
    #[serde(default = "one")]
    pub cluster: i64,
    /// Consumer warpgroups per block: 2 (128-row tiles) or 1 (64-row tiles; see
    /// [`GemmConfig::consumers`]). Files written before the 64-row tile existed read as 2.
    #[serde(default = "two")]
    pub consumers: i64,
    /// Ping-pong consumer warpgroups, each on its own tile (see [`GemmConfig::pingpong`]).
    /// Files written before it existed read as `false`.
    #[serde(default)]
    pub pingpong: bool,
    /// The TMA-store epilogue's column subtile (0: the whole C tile; see
    /// [`GemmConfig::epilogue_subtile`]). Files written before it existed read as 0.
    #[serde(default)]
    pub epilogue_subtile: i64,
}

fn one() -> i64 {
    1
}

fn two() -> i64 {
    2
}

impl GemmChoice {
    /// A ping-pong choice ([`GemmConfig::pingpong`]): two consumer warpgroups taking turns
    /// over a persistent walk in grouped-8 order, `bn` wide, `stages` deep, unsplit, no
    /// cluster — the shape every ping-pong candidate of the tuner has.
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::Epilogue;
    /// use tilekit_ops::gemm_tuning::GemmChoice;
    /// let c = GemmChoice::pingpong(176, 3, Epilogue::Tma);
    /// assert_eq!(c.label(), "bn 176, 3 stages, overlap, persistent, grouped 8, tma store, pingpong");
    /// ```
    pub fn pingpong(bn: i64, stages: i64, epilogue: Epilogue) -> GemmChoice {
        GemmChoice {
            bn,
            stages,
            overlap: true,
            persistent: true,
            raster: Raster::Grouped(8),
            epilogue,
            split_k: 1,
            cluster: 1,
            consumers: 2,
            pingpong: true,
            epilogue_subtile: 0,
        }
    }

    /// A split-K choice: the K range of every tile split over `split_k` blocks (partial
    /// products in an f32 workspace, summed into C by a second kernel), `consumers` warpgroups
    /// with `stages` of ring, the register epilogue, no cluster, not ping-pong; `persistent`
    /// and `raster` the walk. The shape of every split candidate of the tuner and of the split
    /// entries `tilekit bench gemm` times through the API.
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::Raster;
    /// use tilekit_ops::gemm_tuning::GemmChoice;
    /// let c = GemmChoice::split(256, 4, 2, 4, false, Raster::Linear);
    /// assert_eq!((c.split_k, c.consumers, c.cluster, c.pingpong), (4, 2, 1, false));
    /// ```
    pub fn split(
        bn: i64,
        stages: i64,
        consumers: i64,
        split_k: i64,
        persistent: bool,
        raster: Raster,
    ) -> GemmChoice {
        GemmChoice {
            bn,
            stages,
            overlap: true,
            persistent,
            raster,
            epilogue: Epilogue::Registers,
            split_k,
            cluster: 1,
            consumers,
            pingpong: false,
            epilogue_subtile: 0,
        }
    }

    /// `base` with this choice's tile knobs (its types and any other fields kept).
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::GemmConfig;
    /// use tilekit_ops::gemm_tuning::GemmChoice;
    /// let base = GemmConfig::default();
    /// assert_eq!(GemmChoice::of(&base).apply(base), base);
    /// ```
    pub fn apply(&self, base: GemmConfig) -> GemmConfig {
        GemmConfig {
            bn: self.bn,
            stages: self.stages,
            overlap: self.overlap,
            persistent: self.persistent,
            raster: self.raster,
            epilogue: self.epilogue,
            split_k: self.split_k,
            cluster: self.cluster,
            consumers: self.consumers,
            pingpong: self.pingpong,
            epilogue_subtile: self.epilogue_subtile,
            ..base
        }
    }

    /// The tile knobs of a configuration.
    ///
    /// ```
    /// use tilekit_ops::gemm_sm90::GemmConfig;
    /// use tilekit_ops::gemm_tuning::GemmChoice;
    /// assert_eq!(GemmChoice::of(&GemmConfig::default()).bn, 128);
    /// ```
    pub fn of(cfg: &GemmConfig) -> GemmChoice {
        GemmChoice {
            bn: cfg.bn,
            stages: cfg.stages,
            overlap: cfg.overlap,
            persistent: cfg.persistent,
            raster: cfg.raster,
            epilogue: cfg.epilogue,
            split_k: cfg.split_k,
            cluster: cfg.cluster,
            consumers: cfg.consumers,
            pingpong: cfg.pingpong,
            epilogue_subtile: cfg.epilogue_subtile,
        }
    }

    /// The configuration's short name ([`GemmConfig::label`]).
    ///
    /// ```
    /// use tilekit_ops::gemm_tuning::{GemmChoice, GemmProblem};
    /// use tilekit_ir::ScalarType;
    /// let p = GemmProblem::new(8192, 8192, 8192, ScalarType::BF16, ScalarType::F32, false);
    /// assert_eq!(GemmChoice::heuristic(&p).label(), "bn 256, 4 stages, overlap, persistent, grouped 8");
    /// ```
    pub fn label(&self) -> String {
        self.apply(GemmConfig { output: ScalarType::F32, ..GemmConfig::default() }).label()
    }

    /// The choice when nothing is tuned for the problem's class (see the [module
    /// documentation](self) for the measurements behind it).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::gemm_sm90::Epilogue;
    /// use tilekit_ops::gemm_tuning::{GemmChoice, GemmProblem};
    /// let bf16_out = GemmProblem::new(4096, 4096, 4096, ScalarType::BF16, ScalarType::BF16, true);
    /// assert_eq!(GemmChoice::heuristic(&bf16_out).epilogue, Epilogue::Tma);
    /// let f32_out = GemmProblem::new(4096, 4096, 4096, ScalarType::BF16, ScalarType::F32, true);
    /// assert_eq!(GemmChoice::heuristic(&f32_out).epilogue, Epilogue::Registers);
    /// ```
    ///
    /// Few tiles (under [`FEW_TILES`] of 128 × 256) take 128-wide blocks with 6 stages; M ≤ 64,
    /// and few-tile problems whose 64 × 128 tiles fit one wave ([`ONE_WAVE`]), take one consumer
    /// warpgroup (64-row tiles):
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::gemm_tuning::{GemmChoice, GemmProblem};
    /// // 64 × 8192: 64 tiles of 64 × 128, none of them half zeros
    /// let skinny = GemmProblem::new(64, 8192, 8192, ScalarType::BF16, ScalarType::F32, true);
    /// assert_eq!(GemmChoice::heuristic(&skinny).label(), "bn 128, 8 stages, overlap, persistent, grouped 8, tma store, bm 64");
    /// // 1000³: 16 × 8 = 128 tiles of 64 × 128 (one wave) instead of 64 of 128 × 128
    /// let small = GemmProblem::new(1000, 1000, 1000, ScalarType::BF16, ScalarType::BF16, true);
    /// assert_eq!(GemmChoice::heuristic(&small).label(), "bn 128, 6 stages, overlap, persistent, grouped 8, tma store, bm 64");
    /// // 1024 × 2048: 128 tiles of 128 × 128 already fill a wave: two consumers
    /// let mid = GemmProblem::new(1024, 2048, 1024, ScalarType::BF16, ScalarType::BF16, true);
    /// assert_eq!(GemmChoice::heuristic(&mid).label(), "bn 128, 6 stages, overlap, persistent, grouped 8, tma store");
    /// // 2048² is 128 tiles of 128 × 256: the big-tile choice
    /// let square = GemmProblem::new(2048, 2048, 2048, ScalarType::BF16, ScalarType::BF16, true);
    /// assert_eq!(GemmChoice::heuristic(&square).bn, 256);
    /// assert_eq!(GemmChoice::heuristic(&square).consumers, 2);
    /// ```
    pub fn heuristic(p: &GemmProblem) -> GemmChoice {
        let measured_winner = GemmChoice {
            bn: 256,
            stages: 3,
            overlap: true,
            persistent: true,
            raster: Raster::Grouped(8),
            epilogue: Epilogue::Tma,
            split_k: 1,
            cluster: 1,
            consumers: 2,
            pingpong: false,
            epilogue_subtile: 0,
        };
        // the first of these that builds for the problem's types and can store its C
        let pick = |tma: GemmChoice| -> Option<GemmChoice> {
            if p.c_tma && tma.apply(p.base()).check().is_ok() {
                return Some(tma);
            }
            let regs = GemmChoice { epilogue: Epilogue::Registers, ..tma };
            regs.apply(p.base()).check().is_ok().then_some(regs)
        };
        let tiles = |bm: i64, bn: i64| (p.m + bm - 1) / bm * ((p.n + bn - 1) / bn);
        let few = GemmChoice { bn: 128, stages: 6, ..measured_winner };
        if p.m <= 64 {
            // the 128-row tile would be half zeros; a long K streams through 8 stages
            if let Some(c) = pick(GemmChoice { stages: 8, consumers: 1, ..few }) {
                return c;
            }
        }
        if tiles(128, 256) < FEW_TILES {
            if tiles(64, 128) <= ONE_WAVE {
                if let Some(c) = pick(GemmChoice { consumers: 1, ..few }) {
                    return c;
                }
            }
            if let Some(c) = pick(few) {
                return c;
            }
        }
        let tma = measured_winner.apply(p.base());
        if p.c_tma && tma.check().is_ok() {
            return measured_winner;
        }
        GemmChoice { stages: 4, epilogue: Epilogue::Registers, ..measured_winner }
    }
}

/// Blocks of one wave on the devices the heuristic was measured on (H100 SXM, H200: 132 SMs):
/// a few-tile problem whose tiles of 64 × 128 number at most this takes [`GemmChoice::heuristic`]'s
/// one-consumer choice.
///
/// ```
/// assert_eq!(tilekit_ops::gemm_tuning::ONE_WAVE, 132);
/// ```
pub const ONE_WAVE: i64 = 132;

/// Problems with fewer tiles of 128 × 256 than this take [`GemmChoice::heuristic`]'s few-tile
/// choice (128-wide blocks, 6 stages).
///
/// ```
/// assert_eq!(tilekit_ops::gemm_tuning::FEW_TILES, 128);
/// ```
pub const FEW_TILES: i64 = 128;

/// Tile widths between the powers of two that [`GemmProblem::candidates`] adds for the
/// 128-row tile (K-major B; both epilogues, the TMA store's last boxes narrower,
/// [`GemmConfig::c_maps`]):
/// cuBLASLt's fastest kernels for 8192 × 8192 × 1024 on the H200 are 176 × 128 and 128 × 160
/// tiles, and 8192 columns in tiles of 240 are 35 N-tiles, 2240 tiles of 128 rows: 16.97 waves
/// of 132 SMs (bn 256: 15.5, bn 176: 22.8). Not yet measured here: none is the heuristic's.
///
/// ```
/// assert_eq!(tilekit_ops::gemm_tuning::ODD_WIDTHS, [160, 176, 240]);
/// ```
pub const ODD_WIDTHS: [i64; 3] = [160, 176, 240];

/// The ping-pong tile widths above 128 the tuner tries ([`GemmConfig::pingpong`], two
/// consumers, the plain product; each warpgroup holds the 128 × bn tile's bn accumulators a
/// thread): cuBLASLt's 8192 × 8192 × 1024 winner is a ping-pong tile of 128 × 176.
///
/// ```
/// assert_eq!(tilekit_ops::gemm_tuning::PINGPONG_WIDTHS, [144, 160, 176, 192]);
/// assert!(tilekit_ops::gemm_tuning::PINGPONG_WIDTHS
///     .iter()
///     .all(|&w| w <= tilekit_ops::gemm_sm90::PINGPONG_MAX_BN));
/// ```
pub const PINGPONG_WIDTHS: [i64; 4] = [144, 160, 176, 192];

/// The ping-pong tile widths [`GemmProblem::candidates`] also tries with the TMA store in
/// column subtiles ([`GemmConfig::epilogue_subtile`]): two buffers of 128 × s per warpgroup
/// instead of a whole 128 × bn C tile each, so the ring keeps 5–6 stages (cuBLASLt's 176 × 128
/// and 168 × 128 ping-pong kernels store C that way). Each with [`pingpong_subtile_choice`]'s
/// subtile and ring.
///
/// ```
/// assert_eq!(tilekit_ops::gemm_tuning::PINGPONG_SUBTILE_WIDTHS, [128, 144, 160, 176, 192, 208]);
/// ```
pub const PINGPONG_SUBTILE_WIDTHS: [i64; 6] = [128, 144, 160, 176, 192, 208];

/// The subtiled ping-pong choice of width `bn` for a problem's types (`base`): the TMA store
/// in subtiles of 128, 64 or 32 bytes of C, whichever leaves the deepest ring (at most 6
/// stages; the wider subtile where they tie); None where none fits.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::gemm_sm90::GemmConfig;
/// use tilekit_ops::gemm_tuning::pingpong_subtile_choice;
/// let bf16 = GemmConfig::default();
/// let depth = |bn| pingpong_subtile_choice(bn, bf16).map(|c| (c.stages, c.epilogue_subtile));
/// // bf16 C: 128 × 176 in subtiles of 32 columns beside 5 stages (222 KiB), 208 in 16 beside 5
/// assert_eq!(depth(176), Some((5, 32)));
/// assert_eq!(depth(128), Some((6, 32)));
/// assert_eq!(depth(208), Some((5, 16)));
/// let f32_c = GemmConfig { output: ScalarType::F32, ..bf16 };
/// assert_eq!(pingpong_subtile_choice(176, f32_c).unwrap().epilogue_subtile, 16);
/// ```
pub fn pingpong_subtile_choice(bn: i64, base: GemmConfig) -> Option<GemmChoice> {
    let ob = base.output.size_bytes() as i64;
    let mut best: Option<GemmChoice> = None;
    for bytes in [128, 64, 32] {
        let at = |stages| GemmChoice {
            epilogue_subtile: bytes / ob,
            ..GemmChoice::pingpong(bn, stages, Epilogue::Tma)
        };
        if let Some(c) = (2..=6).rev().map(at).find(|c| c.apply(base).check().is_ok()) {
            if best.is_none_or(|b| c.stages > b.stages) {
                best = Some(c);
            }
        }
    }
    best
}

/// The odd tile widths for the 64-row tile (where [`GemmProblem::wants_64_rows`]): cuBLASLt's
/// fastest 1000³ kernel on the H200 and the H100 uses 64 × 144 tiles (1000³ in 64 × 144
/// tiles: 16 × 7 = 112 blocks; 64 × 160: 16 × 7 as well, the last N-tile 40 wide; 64 × 112:
/// 16 × 9 = 144; 64 × 80: 16 × 13 = 208).
///
/// ```
/// assert_eq!(tilekit_ops::gemm_tuning::ODD_WIDTHS_64_ROWS, [80, 112, 144, 160, 176]);
/// ```
pub const ODD_WIDTHS_64_ROWS: [i64; 5] = [80, 112, 144, 160, 176];

/// The shallower ring also tried for the 64-row odd widths with the TMA store, persistent in
/// grouped order (besides the deepest ring that fits): 64 × 144 holds 8 stages beside a bf16
/// C tile, 7 beside an f32 one; 6 leaves shared memory for a second block's worth of C traffic
/// to drain while the next tile's loads start.
///
/// ```
/// assert_eq!(tilekit_ops::gemm_tuning::SHALLOW_STAGES_64_ROWS_TMA, 6);
/// ```
pub const SHALLOW_STAGES_64_ROWS_TMA: i64 = 6;

/// A GEMM as the tuner and the API see it: C (M×N) = A (M×K) · B (K×N), the element types, the
/// operands' layout and whether C's rows can take TMA stores (a row pitch that is a multiple of
/// 16 bytes).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::gemm_tuning::GemmProblem;
/// let p = GemmProblem::new(1000, 1000, 1000, ScalarType::BF16, ScalarType::F32, true);
/// assert_eq!(p.class(), "bf16>f32 nt m1024 n1024 k1024");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GemmProblem {
    /// Rows of A and C.
    pub m: i64,
    /// Columns of B and C.
    pub n: i64,
    /// The reduced dim.
    pub k: i64,
    /// A's and B's element type.
    pub input: ScalarType,
    /// C's element type.
    pub output: ScalarType,
    /// A's contiguous axis: K (A stored `M × K`, row-major) or M (A stored `K × M`).
    pub a_major: Major,
    /// B's contiguous axis: K (B stored `N × K`: the transpose of a linear layer's weight) or N
    /// (B stored `K × N`, row-major).
    pub b_major: Major,
    /// C's rows can take TMA stores (row pitch a multiple of 16 bytes, aligned base).
    pub c_tma: bool,
}

impl GemmProblem {
    /// A problem with both operands K-major (A `M × K` row-major, B stored `N × K`: `nt` in
    /// BLAS letters for a row-major C = A·B).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let p = tilekit_ops::gemm_tuning::GemmProblem::new(64, 8192, 8192, ScalarType::F16, ScalarType::F16, true);
    /// assert_eq!((p.m, p.layout()), (64, "nt"));
    /// ```
    pub fn new(
        m: i64,
        n: i64,
        k: i64,
        input: ScalarType,
        output: ScalarType,
        c_tma: bool,
    ) -> GemmProblem {
        GemmProblem { m, n, k, input, output, a_major: Major::K, b_major: Major::K, c_tma }
    }

    /// The same problem with other operand majors.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::Major, ScalarType};
    /// let p = tilekit_ops::gemm_tuning::GemmProblem::new(64, 64, 64, ScalarType::F16, ScalarType::F32, true);
    /// assert_eq!(p.with_majors(Major::K, Major::MN).layout(), "nn"); // row-major A and B
    /// ```
    pub fn with_majors(self, a_major: Major, b_major: Major) -> GemmProblem {
        GemmProblem { a_major, b_major, ..self }
    }

    /// The operands' layout in BLAS letters for a row-major C = A·B (`n`: the operand is
    /// row-major, `t`: it is stored transposed), as `tilekit bench gemm --layout` spells it:
    /// `nt` = A `M × K`, B stored `N × K`; `nn` = both row-major.
    ///
    /// ```
    /// use tilekit_ir::{wgmma::Major, ScalarType};
    /// let p = tilekit_ops::gemm_tuning::GemmProblem::new(64, 64, 64, ScalarType::F16, ScalarType::F32, true);
    /// assert_eq!(p.clone().with_majors(Major::MN, Major::K).layout(), "tt");
    /// ```
    pub fn layout(&self) -> &'static str {
        match (self.a_major, self.b_major) {
            (Major::K, Major::K) => "nt",
            (Major::K, Major::MN) => "nn",
            (Major::MN, Major::K) => "tt",
            (Major::MN, Major::MN) => "tn",
        }
    }

    /// The key tuned choices are kept under: types, layout, and M, N, K each rounded up to a
    /// power of two (at least 64).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let p = tilekit_ops::gemm_tuning::GemmProblem::new(8191, 14336, 8, ScalarType::F16, ScalarType::F16, false);
    /// assert_eq!(p.class(), "f16>f16 nt m8192 n16384 k64");
    /// ```
    pub fn class(&self) -> String {
        let up = |v: i64| (v.max(64) as u64).next_power_of_two();
        format!(
            "{}>{} {} m{} n{} k{}",
            self.input,
            self.output,
            self.layout(),
            up(self.m),
            up(self.n),
            up(self.k)
        )
    }

    /// A configuration of this problem's types with the default tile knobs.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let p = tilekit_ops::gemm_tuning::GemmProblem::new(64, 64, 64, ScalarType::F16, ScalarType::F32, true);
    /// assert_eq!(p.base().output, ScalarType::F32);
    /// ```
    pub fn base(&self) -> GemmConfig {
        GemmConfig {
            input: self.input,
            output: self.output,
            a_major: self.a_major,
            b_major: self.b_major,
            ..GemmConfig::default()
        }
    }

    /// The kernel configuration the API runs for `choice` on this problem: the problem's types
    /// and majors with the choice's knobs — and, for a split K, an f32 output (the workspace
    /// the partial products go to; a second kernel converts to C's type).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::gemm_sm90::Epilogue;
    /// use tilekit_ops::gemm_tuning::{GemmChoice, GemmProblem};
    /// let p = GemmProblem::new(64, 8192, 8192, ScalarType::BF16, ScalarType::BF16, true);
    /// let split = GemmChoice { split_k: 4, epilogue: Epilogue::Registers, ..GemmChoice::heuristic(&p) };
    /// assert_eq!(p.config(&split).output, ScalarType::F32);
    /// assert_eq!(p.config(&GemmChoice::heuristic(&p)).output, ScalarType::BF16);
    /// ```
    pub fn config(&self, choice: &GemmChoice) -> GemmConfig {
        let cfg = choice.apply(self.base());
        if choice.split_k > 1 {
            GemmConfig { output: ScalarType::F32, ..cfg }
        } else {
            cfg
        }
    }

    /// Whether the 64-row tile (one consumer warpgroup) is worth timing for this problem: M ≤ 64
    /// (a 128-row tile would be half zeros), or fewer than [`FEW_TILES`] tiles of 128 × 256
    /// (64-row tiles give twice the blocks). The tuner's candidates and `tilekit bench gemm`
    /// add 64-row configurations only here.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::gemm_tuning::GemmProblem;
    /// let p = |m, n, k| GemmProblem::new(m, n, k, ScalarType::BF16, ScalarType::BF16, true);
    /// assert!(p(64, 8192, 8192).wants_64_rows());
    /// assert!(p(1000, 1000, 1000).wants_64_rows()); // 8 × 4 = 32 tiles of 128 × 256
    /// assert!(!p(4096, 4096, 4096).wants_64_rows());
    /// ```
    pub fn wants_64_rows(&self) -> bool {
        self.m <= 64 || (self.m + 127) / 128 * ((self.n + 255) / 256) < FEW_TILES
    }

    /// The configurations `tilekit tune gemm` times for this problem: tile widths, ring depths,
    /// persistence, raster orders, epilogues and 2-block clusters (persistent, grouped 4 and 8
    /// pairs, where M has at least two tiles), each one that passes [`GemmConfig::check`] for
    /// the types and can store this C (the TMA epilogue only where [`c_tma`](Self::c_tma)).
    /// Tile widths wider than N (rounded up to 64) are left out, as are persistent grids for a
    /// problem of one tile.
    ///
    /// With two consumers and bn 128, also the ping-pong schedule ([`GemmConfig::pingpong`],
    /// labels ending `pingpong`): persistent, grouped 8, each epilogue and ring depth that fits;
    /// and the wider ping-pong tiles [`PINGPONG_WIDTHS`] (the plain product), each epilogue with
    /// the deepest ring that fits (at most 6); and where C takes the TMA store, ping-pong tiles
    /// of [`PINGPONG_SUBTILE_WIDTHS`] storing C in column subtiles
    /// ([`pingpong_subtile_choice`]), and the cooperative 128 × 256 tile in subtiles of 128 bytes
    /// with the deepest ring beside them.
    ///
    /// Where M ≤ 64 or the problem has fewer than [`FEW_TILES`] tiles of 128 × 256, also the
    /// 64-row tile (one consumer warpgroup, labels ending `bm 64`): widths 64 to 256, 4 to 12
    /// stages (where the ring fits), one block per tile or persistent in grouped order, pairs in clusters, and split
    /// K with the deepest ring that fits.
    ///
    /// And the odd tile widths ([`ODD_WIDTHS`] for 128 rows, [`ODD_WIDTHS_64_ROWS`] for 64),
    /// each with the deepest ring that fits (at most 6 stages of 128 rows, 12 of 64; 64 rows
    /// with the TMA store, persistent grouped 8, also [`SHALLOW_STAGES_64_ROWS_TMA`]), persistent
    /// in grouped order (8), in pairs (grouped 4, where M has two tiles) and, 64-row, one block
    /// per tile; both epilogues where [`GemmConfig::check`] takes them (B MN-major and the TMA
    /// store of C takes them in narrower last boxes). No split K.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::gemm_sm90::Epilogue;
    /// use tilekit_ops::gemm_tuning::GemmProblem;
    /// let p = GemmProblem::new(4096, 4096, 4096, ScalarType::BF16, ScalarType::BF16, true);
    /// let c = p.candidates();
    /// assert!(c.len() >= 20);
    /// assert!(c.iter().all(|c| c.apply(p.base()).check().is_ok()));
    /// assert!(c.iter().any(|c| c.cluster == 2));
    /// assert!(c.iter().all(|c| c.consumers == 2), "a big square keeps the 128-row tile");
    /// // bn 128: 3..6 stages (TMA: 3..5); 144..192: the deepest ring, both epilogues
    /// assert_eq!(c.iter().filter(|c| c.pingpong && c.bn == 128).count(), 8);
    /// assert_eq!(c.iter().filter(|c| c.pingpong && c.bn > 128).count(), 13);
    /// // subtiled TMA stores: 128 × 176 with 5 stages beside 32-column buffers
    /// assert!(c.iter().any(|c| c.bn == 176 && c.stages == 5 && c.epilogue_subtile == 32));
    /// assert!(c.iter().any(|c| !c.pingpong && c.bn == 256 && c.stages == 4 && c.epilogue_subtile == 64));
    /// assert!(c.iter().any(|c| c.pingpong && c.bn == 176 && c.stages == 3 && c.epilogue == Epilogue::Tma));
    /// let one_row = GemmProblem::new(64, 8192, 4096, ScalarType::BF16, ScalarType::BF16, true);
    /// assert!(one_row.candidates().iter().all(|c| c.cluster == 1));
    /// assert!(one_row.candidates().iter().any(|c| c.consumers == 1 && c.split_k == 4));
    /// let f32_odd = GemmProblem::new(4096, 4095, 4096, ScalarType::BF16, ScalarType::F32, false);
    /// assert!(f32_odd.candidates().iter().all(|c| c.epilogue == Epilogue::Registers));
    /// // bn 176 (128 rows, 5 stages of 38 KiB) alone and in pairs
    /// assert!(c.iter().any(|c| c.bn == 176 && c.stages == 5 && c.cluster == 2));
    /// ```
    pub fn candidates(&self) -> Vec<GemmChoice> {
        let mut out = Vec::new();
        let n_cap = (self.n.max(1) + 63) / 64 * 64;
        let k_slices = (self.k + 63) / 64;
        for consumers in [2, 1] {
            if consumers == 1 && !self.wants_64_rows() {
                continue;
            }
            let bm = 64 * consumers;
            let tiles_m = (self.m + bm - 1) / bm;
            let tiles = |bn: i64| tiles_m * ((self.n + bn - 1) / bn);
            let widths: &[i64] =
                if consumers == 2 { &[128, 192, 256] } else { &[64, 128, 192, 256] };
            // (64-row tiles of few columns have small stages: 10 or 12 keep more in flight;
            // configurations whose ring does not fit are dropped by the check below)
            let stage_counts: &[i64] =
                if consumers == 2 { &[3, 4, 5, 6] } else { &[4, 6, 8, 10, 12] };
            for &bn in widths {
                if bn > n_cap.max(widths[0]) {
                    continue;
                }
                for epilogue in [Epilogue::Registers, Epilogue::Tma] {
                    if epilogue == Epilogue::Tma && !self.c_tma {
                        continue;
                    }
                    for &stages in stage_counts {
                        let grids: &[(bool, Raster)] = if tiles(bn) <= 1 {
                            &[(false, Raster::Linear)]
                        } else if consumers == 2 {
                            &[
                                (false, Raster::Linear),
                                (true, Raster::Grouped(8)),
                                (true, Raster::Grouped(4)),
                                (true, Raster::Hilbert),
                            ]
                        } else {
                            // (few tiles: about one wave, the order matters little)
                            &[(false, Raster::Linear), (true, Raster::Grouped(8))]
                        };
                        for &(persistent, raster) in grids {
                            let c = GemmChoice {
                                bn,
                                stages,
                                overlap: true,
                                persistent,
                                raster,
                                epilogue,
                                split_k: 1,
                                cluster: 1,
                                consumers,
                                pingpong: false,
                                epilogue_subtile: 0,
                            };
                            if c.apply(self.base()).check().is_ok() {
                                out.push(c);
                            }
                        }
                        // ping-pong consumers (each warpgroup a whole 128 × bn tile, bn ≤ 128),
                        // persistent in grouped order, where a block has tiles to alternate
                        if consumers == 2 && bn <= 128 && tiles(bn) > 1 {
                            let c = GemmChoice::pingpong(bn, stages, epilogue);
                            if c.apply(self.base()).check().is_ok() {
                                out.push(c);
                            }
                        }
                        // pairs of blocks sharing B by multicast (groups of 4 and 8 pairs: 8
                        // and 16 M-tiles), where there are at least two M-tiles to pair
                        if tiles_m >= 2 {
                            let groups: &[u32] = if consumers == 2 { &[4, 8] } else { &[4] };
                            for &g in groups {
                                let c = GemmChoice {
                                    bn,
                                    stages,
                                    overlap: true,
                                    persistent: true,
                                    raster: Raster::Grouped(g),
                                    epilogue,
                                    split_k: 1,
                                    cluster: 2,
                                    consumers,
                                    pingpong: false,
                                    epilogue_subtile: 0,
                                };
                                if c.apply(self.base()).check().is_ok() {
                                    out.push(c);
                                }
                            }
                        }
                    }
                }
                // a C of few tiles and a long K: the K split over 2, 4 or 8 blocks a tile
                // (partial products in an f32 workspace, summed by a second kernel into C of
                // any type), each split at least 4 k-slices (problems of at most 64 tiles); two
                // consumers with 4 stages, one with the deepest ring that fits
                if tiles(bn) <= 64 {
                    for split_k in [2, 4, 8] {
                        if k_slices < 4 * split_k {
                            continue;
                        }
                        for (persistent, raster) in
                            [(false, Raster::Linear), (true, Raster::Grouped(8))]
                        {
                            let at = |stages| {
                                GemmChoice::split(
                                    bn, stages, consumers, split_k, persistent, raster,
                                )
                            };
                            let c = if consumers == 2 {
                                Some(at(4))
                            } else {
                                (2..=12).rev().map(at).find(|c| self.config(c).check().is_ok())
                            };
                            if let Some(c) = c.filter(|c| self.config(c).check().is_ok()) {
                                out.push(c);
                            }
                        }
                    }
                }
            }
            // ping-pong tiles wider than 128 (the plain product only: PINGPONG_MAX_BN), each
            // epilogue with the deepest ring that fits, persistent grouped 8
            if consumers == 2 {
                for &bn in &PINGPONG_WIDTHS {
                    if bn > n_cap || tiles(bn) <= 1 {
                        continue;
                    }
                    for epilogue in [Epilogue::Registers, Epilogue::Tma] {
                        if epilogue == Epilogue::Tma && !self.c_tma {
                            continue;
                        }
                        let at = |stages| GemmChoice::pingpong(bn, stages, epilogue);
                        if let Some(c) =
                            (2..=6).rev().map(at).find(|c| self.config(c).check().is_ok())
                        {
                            out.push(c);
                        }
                    }
                }
                // the TMA store in subtiles: the deepest ring beside two small buffers
                for &bn in &PINGPONG_SUBTILE_WIDTHS {
                    if !self.c_tma || bn > n_cap || tiles(bn) <= 1 {
                        continue;
                    }
                    if let Some(c) = pingpong_subtile_choice(bn, self.base()) {
                        out.push(c);
                    }
                }
                // and the cooperative 128 × 256 tile in subtiles of 128 bytes of C: a stage
                // more than beside a whole C tile (bf16: 4 of 48 KiB beside 32 KiB of buffers)
                if self.c_tma && 256 <= n_cap && tiles(256) > 1 {
                    let sub = 128 / self.base().output.size_bytes() as i64;
                    let at = |stages| GemmChoice {
                        pingpong: false,
                        epilogue_subtile: sub,
                        ..GemmChoice::pingpong(256, stages, Epilogue::Tma)
                    };
                    if let Some(c) = (2..=6).rev().map(at).find(|c| self.config(c).check().is_ok())
                    {
                        out.push(c);
                    }
                }
            }
            // the odd widths: the deepest ring that fits, persistent grouped, in pairs, and
            // (64 rows, about one wave) one block per tile
            let (odd, deepest): (&[i64], i64) =
                if consumers == 2 { (&ODD_WIDTHS, 6) } else { (&ODD_WIDTHS_64_ROWS, 12) };
            for &bn in odd {
                if bn > n_cap {
                    continue;
                }
                let mut grids = vec![(true, Raster::Grouped(8), 1)];
                if tiles_m >= 2 {
                    grids.push((true, Raster::Grouped(4), 2));
                }
                if consumers == 1 || tiles(bn) <= 1 {
                    grids.insert(0, (false, Raster::Linear, 1));
                }
                if tiles(bn) <= 1 {
                    grids.truncate(1);
                }
                for epilogue in [Epilogue::Registers, Epilogue::Tma] {
                    if epilogue == Epilogue::Tma && !self.c_tma {
                        continue;
                    }
                    for &(persistent, raster, cluster) in &grids {
                        // (unsplit; any other knob the default's)
                        let at = |stages| GemmChoice {
                            bn,
                            stages,
                            overlap: true,
                            persistent,
                            raster,
                            epilogue,
                            cluster,
                            consumers,
                            ..GemmChoice::of(&GemmConfig::default())
                        };
                        if let Some(c) =
                            (2..=deepest).rev().map(at).find(|c| self.config(c).check().is_ok())
                        {
                            out.push(c);
                            // 64 rows, the TMA store, persistent grouped: a shallower ring too
                            let shallow = at(SHALLOW_STAGES_64_ROWS_TMA);
                            if consumers == 1
                                && epilogue == Epilogue::Tma
                                && persistent
                                && cluster == 1
                                && c.stages > shallow.stages
                                && self.config(&shallow).check().is_ok()
                            {
                                out.push(shallow);
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// One tuned entry: the winner of a class, and what it measured.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::gemm_tuning::{GemmChoice, GemmProblem, Tuned};
/// let p = GemmProblem::new(8192, 8192, 8192, ScalarType::BF16, ScalarType::F32, false);
/// let t = Tuned { choice: GemmChoice::heuristic(&p), shape: [8192, 8192, 8192], tflops: 700.0 };
/// assert_eq!(t.shape[0], 8192);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Tuned {
    /// The winning tile knobs.
    pub choice: GemmChoice,
    /// The (M, N, K) it was measured on.
    pub shape: [i64; 3],
    /// Its median TFLOP/s there.
    pub tflops: f64,
}

/// A device's tuned GEMM choices, by [`GemmProblem::class`].
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::gemm_tuning::{GemmChoice, GemmProblem, GemmTable, Tuned};
/// let p = GemmProblem::new(64, 8192, 8192, ScalarType::BF16, ScalarType::F32, true);
/// let mut table = GemmTable::default();
/// assert_eq!(table.choose(&p), GemmChoice::heuristic(&p));
/// let won = GemmChoice { bn: 128, stages: 6, ..GemmChoice::heuristic(&p) };
/// table.insert(&p, Tuned { choice: won, shape: [64, 8192, 8192], tflops: 120.0 });
/// assert_eq!(table.choose(&p), won);
/// ```
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GemmTable {
    /// Class → tuned entry.
    pub entries: BTreeMap<String, Tuned>,
}

/// What a GEMM tuning file holds.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct GemmFile {
    device: String,
    tilekit_version: String,
    gemm: GemmTable,
}

/// The file name of a device's GEMM tuning: `gemm-` and the device name with every character
/// other than ASCII letters and digits replaced by `_`.
///
/// ```
/// assert_eq!(tilekit_ops::gemm_tuning::file_name("NVIDIA H100 80GB HBM3"), "gemm-NVIDIA_H100_80GB_HBM3.json");
/// ```
pub fn file_name(device: &str) -> String {
    format!("gemm-{}", crate::tuning::file_name(device))
}

impl GemmTable {
    /// The tuned choice for the problem's class, else [`GemmChoice::heuristic`]. A tuned choice
    /// that cannot run this problem (a TMA epilogue for a C that TMA cannot store) falls back to
    /// the heuristic too.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::gemm_tuning::{GemmChoice, GemmProblem, GemmTable};
    /// let p = GemmProblem::new(100, 100, 100, ScalarType::F16, ScalarType::F16, true);
    /// assert_eq!(GemmTable::default().choose(&p), GemmChoice::heuristic(&p));
    /// ```
    pub fn choose(&self, p: &GemmProblem) -> GemmChoice {
        match self.entries.get(&p.class()) {
            Some(t)
                if (p.c_tma || t.choice.epilogue != Epilogue::Tma)
                    && p.config(&t.choice).check().is_ok() =>
            {
                t.choice
            }
            _ => GemmChoice::heuristic(p),
        }
    }

    /// Records the winner of the problem's class (replacing an earlier one).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::gemm_tuning::{GemmChoice, GemmProblem, GemmTable, Tuned};
    /// let p = GemmProblem::new(512, 512, 512, ScalarType::BF16, ScalarType::BF16, true);
    /// let mut t = GemmTable::default();
    /// t.insert(&p, Tuned { choice: GemmChoice::heuristic(&p), shape: [512, 512, 512], tflops: 1.0 });
    /// assert_eq!(t.entries.len(), 1);
    /// ```
    pub fn insert(&mut self, p: &GemmProblem, t: Tuned) {
        self.entries.insert(p.class(), t);
    }

    /// Writes the table as `device`'s GEMM tuning in `dir` (created if needed; write then
    /// rename, so a reader never sees half a file).
    ///
    /// ```
    /// use tilekit_ops::gemm_tuning::GemmTable;
    /// let tmp = tempfile::tempdir().unwrap();
    /// let path = GemmTable::default().save(tmp.path(), "Some GPU").unwrap();
    /// assert!(path.ends_with("gemm-Some_GPU.json"));
    /// assert_eq!(GemmTable::load(tmp.path(), "Some GPU").unwrap(), Some((GemmTable::default(), path)));
    /// ```
    pub fn save(&self, dir: &Path, device: &str) -> std::result::Result<PathBuf, TuningError> {
        let file = GemmFile {
            device: device.into(),
            tilekit_version: env!("CARGO_PKG_VERSION").into(),
            gemm: self.clone(),
        };
        crate::tuning::write_json(dir, &file_name(device), &file)
    }

    /// The GEMM tuning saved for `device` in `dir`: `None` when there is no file or it was
    /// measured by another tilekit version; a [`TuningError::Corrupt`] naming the file when it
    /// does not parse, names another device, or holds a choice no kernel can be built from.
    ///
    /// ```
    /// use tilekit_ops::gemm_tuning::GemmTable;
    /// use tilekit_ops::tuning::TuningError;
    /// let tmp = tempfile::tempdir().unwrap();
    /// assert_eq!(GemmTable::load(tmp.path(), "GPU").unwrap(), None);
    /// std::fs::write(tmp.path().join("gemm-GPU.json"), "{ not json").unwrap();
    /// assert!(matches!(GemmTable::load(tmp.path(), "GPU"), Err(TuningError::Corrupt { .. })));
    /// ```
    pub fn load(
        dir: &Path,
        device: &str,
    ) -> std::result::Result<Option<(GemmTable, PathBuf)>, TuningError> {
        let path = dir.join(file_name(device));
        let Some(file) = crate::tuning::read_json::<GemmFile>(&path)? else { return Ok(None) };
        let corrupt = |why: String| TuningError::Corrupt { path: path.clone(), why };
        if file.device != device {
            return Err(corrupt(format!("it is for device `{}`, not `{device}`", file.device)));
        }
        if file.tilekit_version != env!("CARGO_PKG_VERSION") {
            return Ok(None);
        }
        for (class, t) in &file.gemm.entries {
            // the choice must build for some types (a 16-bit C tile is the smallest)
            let output = if t.choice.split_k > 1 { ScalarType::F32 } else { ScalarType::BF16 };
            let cfg = t.choice.apply(GemmConfig { output, ..Default::default() });
            if let Err(e) = cfg.check() {
                return Err(corrupt(format!("entry `{class}`: {e}")));
            }
        }
        Ok(Some((file.gemm, path)))
    }

    /// The table a backend on `device` uses: the saved file when usable, else an empty table
    /// (every problem takes the heuristic) — with where it came from.
    ///
    /// ```
    /// use tilekit_ops::gemm_tuning::GemmTable;
    /// use tilekit_ops::tuning::TuningSource;
    /// let tmp = tempfile::tempdir().unwrap();
    /// assert_eq!(GemmTable::resolve(tmp.path(), "GPU"), (GemmTable::default(), TuningSource::Table));
    /// std::fs::write(tmp.path().join("gemm-GPU.json"), "[]").unwrap();
    /// let (t, source) = GemmTable::resolve(tmp.path(), "GPU");
    /// assert_eq!(t, GemmTable::default());
    /// assert!(source.to_string().contains("corrupt"), "{source}");
    /// ```
    pub fn resolve(dir: &Path, device: &str) -> (GemmTable, TuningSource) {
        match GemmTable::load(dir, device) {
            Ok(Some((t, path))) => (t, TuningSource::Saved(path)),
            Ok(None) => (GemmTable::default(), TuningSource::Table),
            Err(e) => (GemmTable::default(), TuningSource::TableAfter(e)),
        }
    }
}

mod raster_text {
    //! `Raster` as text in tuning files: `linear`, `grouped G`, `hilbert`.
    use crate::gemm_sm90::Raster;

    pub fn serialize<S: serde::Serializer>(r: &Raster, s: S) -> Result<S::Ok, S::Error> {
        let text = match r {
            Raster::Linear => "linear".to_string(),
            Raster::Grouped(g) => format!("grouped {g}"),
            Raster::Hilbert => "hilbert".to_string(),
        };
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Raster, D::Error> {
        let text: String = serde::Deserialize::deserialize(d)?;
        let bad = || {
            serde::de::Error::custom(format!(
                "raster `{text}`: expected `linear`, `grouped G` (G ≥ 1) or `hilbert`"
            ))
        };
        match text.as_str() {
            "linear" => Ok(Raster::Linear),
            "hilbert" => Ok(Raster::Hilbert),
            t => {
                let g = t.strip_prefix("grouped ").ok_or_else(bad)?;
                let g: u32 = g.parse().map_err(|_| bad())?;
                if g == 0 {
                    return Err(bad());
                }
                Ok(Raster::Grouped(g))
            }
        }
    }
}

mod epilogue_text {
    //! `Epilogue` as text in tuning files: `registers`, `tma`.
    use crate::gemm_sm90::Epilogue;

    pub fn serialize<S: serde::Serializer>(e: &Epilogue, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match e {
            Epilogue::Registers => "registers",
            Epilogue::Tma => "tma",
        })
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Epilogue, D::Error> {
        let text: String = serde::Deserialize::deserialize(d)?;
        match text.as_str() {
            "registers" => Ok(Epilogue::Registers),
            "tma" => Ok(Epilogue::Tma),
            t => Err(serde::de::Error::custom(format!(
                "epilogue `{t}`: expected `registers` or `tma`"
            ))),
        }
    }
}
