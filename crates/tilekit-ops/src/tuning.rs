//! Launch shapes chosen per device: what `tilekit tune` measured, as a table the ops consult.
//!
//! A kernel's best launch shape depends on the memory system it runs against: the softmax row
//! kernel that reached the copy limit on an H100 (256 threads, 8 bf16 chunks per thread) keeps
//! too few bytes in flight for an H200's faster HBM3e, where 512 threads do (0.821 → 0.936 of
//! the same-run copy, `tilekit tune` on 2026-11-23; 0.981 → 0.998 on the H100). So every
//! backend names a [`Tuning`], and the ops read their knobs from it:
//!
//! ```text
//!   Cuda::new(gpu) ── device name ──► Tuning::for_device("NVIDIA H200") ─┐
//!   Interp ─────────────────────────► Tuning::default() ─────────────────┤
//!                                                                        ▼
//!   api::softmax: row ≤ 64 · softmax_threads(dtype) → register kernel with those threads
//!                 longer rows, softmax_coop set       → the row over k cooperating blocks
//!                 longer rows                        → staged / cluster / online kernels
//! ```
//!
//! Every entry is a measured winner of `tilekit tune` (bench/RESULTS.md has the sweeps, the
//! JSON files beside it every candidate); a device not in the table gets the defaults, the
//! shapes that won on both the H100 and the H200.
//!
//! `tilekit tune --save` stores a device's winners beside the kernel cache
//! (`<cache>/tuning/<device>.json`); a saved file wins over the table ([`Tuning::resolve`]). A
//! file from another tilekit version is ignored (its knobs may mean other kernels); a corrupt one
//! is a [`TuningError`] naming the file, and the backend falls back to the table and says so in
//! its [`TuningSource`].

use std::path::{Path, PathBuf};

use tilekit_ir::ScalarType;

use crate::reduce::{ClusterTuning, CoopTuning, OnlineTuning};
use crate::transpose::{TransposeLoop, MAX_TILES_PER_BLOCK};

/// A saved tuning file that cannot be used.
///
/// ```
/// let e = tilekit_ops::tuning::TuningError::Corrupt { path: "t.json".into(), why: "expected value at line 1".into() };
/// assert_eq!(e.to_string(), "tuning file t.json is corrupt: expected value at line 1 (run `tilekit tune --save` again, or delete it)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TuningError {
    /// The file is not a tuning file of this format.
    #[error(
        "tuning file {path} is corrupt: {why} (run `tilekit tune --save` again, or delete it)"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// Reading or writing failed.
    #[error("tuning file {path}: {why}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        why: String,
    },
}

/// Where a backend's [`Tuning`] came from.
///
/// ```
/// use tilekit_ops::tuning::TuningSource;
/// assert_eq!(TuningSource::Table.to_string(), "built-in table");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TuningSource {
    /// The built-in table ([`Tuning::for_device`]): no saved file for this device.
    Table,
    /// A file saved by `tilekit tune --save`.
    Saved(PathBuf),
    /// A saved file was unusable; the table was used instead.
    TableAfter(TuningError),
}

impl std::fmt::Display for TuningSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TuningSource::Table => write!(f, "built-in table"),
            TuningSource::Saved(p) => write!(f, "saved by tilekit tune: {}", p.display()),
            TuningSource::TableAfter(e) => write!(f, "built-in table ({e})"),
        }
    }
}

/// What a tuning file holds: the device, the tilekit version that measured it, the knobs.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct TuningFile {
    device: String,
    tilekit_version: String,
    tuning: Tuning,
}

/// The file name of a device's saved tuning: the name with every character other than ASCII
/// letters and digits replaced by `_`.
///
/// ```
/// assert_eq!(tilekit_ops::tuning::file_name("NVIDIA H100 80GB HBM3"), "NVIDIA_H100_80GB_HBM3.json");
/// ```
pub fn file_name(device: &str) -> String {
    let s: String =
        device.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("{s}.json")
}

/// The folder tuning files live in: `tuning/` beside the kernel cache's folder.
///
/// ```
/// let d = tilekit_ops::tuning::default_dir();
/// assert!(d.ends_with("tuning"));
/// ```
pub fn default_dir() -> PathBuf {
    let k = tilekit_cuda::KernelCache::default_dir();
    k.parent().map_or_else(|| k.join("tuning"), |p| p.join("tuning"))
}

/// Writes `value` as pretty JSON to `dir/name` (the folder created if needed), through a
/// temporary file and a rename, so a reader never sees half a file.
///
/// ```
/// let tmp = tempfile::tempdir().unwrap();
/// let p = tilekit_ops::tuning::write_json(tmp.path(), "x.json", &vec![1, 2]).unwrap();
/// assert_eq!(std::fs::read_to_string(p).unwrap().split_whitespace().collect::<String>(), "[1,2]");
/// ```
pub fn write_json<T: serde::Serialize>(
    dir: &Path,
    name: &str,
    value: &T,
) -> Result<PathBuf, TuningError> {
    let path = dir.join(name);
    let io = |e: std::io::Error| TuningError::Io { path: path.clone(), why: e.to_string() };
    std::fs::create_dir_all(dir).map_err(io)?;
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| TuningError::Io { path: path.clone(), why: e.to_string() })?;
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)?;
    Ok(path)
}

/// The JSON file at `path` parsed as `T`: `None` when there is no file, a
/// [`TuningError::Corrupt`] naming it when it does not parse.
///
/// ```
/// use tilekit_ops::tuning::{read_json, TuningError};
/// let tmp = tempfile::tempdir().unwrap();
/// assert_eq!(read_json::<Vec<i32>>(&tmp.path().join("none.json")).unwrap(), None);
/// std::fs::write(tmp.path().join("bad.json"), "[1,").unwrap();
/// assert!(matches!(read_json::<Vec<i32>>(&tmp.path().join("bad.json")), Err(TuningError::Corrupt { .. })));
/// ```
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, TuningError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(TuningError::Io { path: path.into(), why: e.to_string() }),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| TuningError::Corrupt { path: path.into(), why: e.to_string() })
}

/// The longest row (in bytes) the staged softmax keeps in shared memory: 200 KiB of the 227 an
/// H100 or H200 block may have.
///
/// ```
/// assert_eq!(tilekit_ops::tuning::STAGED_MAX_BYTES, 204_800);
/// ```
pub const STAGED_MAX_BYTES: i64 = 200 * 1024;

/// Per-device launch shapes of the tunable kernels.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::tuning::Tuning;
/// assert_eq!(Tuning::default().softmax_threads(ScalarType::BF16), 512);
/// assert_eq!(Tuning::for_device("NVIDIA H200").online.threads, 512);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Tuning {
    /// Threads per block of the register softmax kernel for bf16 rows.
    pub softmax_threads_bf16: u32,
    /// Threads per block of the register softmax kernel for f32 rows.
    pub softmax_threads_f32: u32,
    /// The online softmax kernel's launch shape (rows longer than the register kernel holds).
    pub online: OnlineTuning,
    /// Unmorton walks the storage in order (16-byte reads, 8-byte scattered writes) instead of
    /// the image in tiles (see `morton::build_storage_order_dir`).
    pub unmorton_storage_order: bool,
    /// Rows too long for registers but within [`STAGED_MAX_BYTES`] take the shared-memory
    /// staged softmax kernel with these (threads, 16-byte vectors per chunk) when set
    /// (`reduce::build_softmax_staged`); otherwise the online kernel.
    pub softmax_staged: Option<(u32, i64)>,
    /// The staged kernel brings the row in with bulk copies (`reduce::build_softmax_bulk_cluster`
    /// with one block per row) where rows are 16-byte aligned whole vectors.
    #[serde(default)]
    pub softmax_staged_bulk: bool,
    /// Rows too long for one block's registers are split over a thread-block cluster with this
    /// shape (`reduce::build_softmax_cluster`: the row is read once) when set and the device
    /// has clusters (sm_90); otherwise the staged or online kernel.
    #[serde(default = "default_cluster")]
    pub softmax_cluster: Option<ClusterTuning>,
    /// Rows too long for one block's registers are split over cooperating blocks with this
    /// shape (`reduce::build_softmax_coop`, slices in registers, or with
    /// [`CoopTuning::smem_kib`] set `reduce::build_softmax_coop_smem`, slices in shared memory:
    /// the row is read once, the blocks meet at a counter in global memory; no clusters needed)
    /// when set and the row fits [`CoopTuning::plan`]; rows the staged kernel holds (when
    /// [`softmax_staged`](Self::softmax_staged) is set) stay there, the coop kernel comes
    /// before the cluster and online kernels. For 4-byte types, and for 2-byte types too
    /// unless [`softmax_coop_16bit`](Self::softmax_coop_16bit) is set.
    #[serde(default)]
    pub softmax_coop: Option<CoopTuning>,
    /// [`softmax_coop`](Self::softmax_coop) for 2-byte types (bf16, f16), where it differs:
    /// a thread's step is counted in elements, and half as many bytes per element want other
    /// shapes (H100 and H200: 2 vectors a step into 32 KiB slices for bf16, 8 vectors into 64
    /// KiB for f32).
    #[serde(default)]
    pub softmax_coop_16bit: Option<CoopTuning>,
    /// The cooperative shape for rows that the [`softmax_coop`](Self::softmax_coop) shape,
    /// when it is a thread-block cluster ([`CoopTuning::cluster`]), would split over more than
    /// [`CLUSTER_ROW_BLOCKS`] blocks (clusters of 16 lose to the counter exchange on the H200:
    /// bench/NOTES.md §25). Unset: the same shape with the counter exchange.
    #[serde(default)]
    pub softmax_coop_long: Option<CoopTuning>,
    /// [`softmax_coop_long`](Self::softmax_coop_long) for 2-byte types.
    #[serde(default)]
    pub softmax_coop_long_16bit: Option<CoopTuning>,
    /// The most blocks a row of a cluster [`softmax_coop`](Self::softmax_coop) shape takes
    /// before [`softmax_coop_long`](Self::softmax_coop_long) does
    /// ([`softmax_coop_for_row`](Self::softmax_coop_for_row)); default
    /// [`CLUSTER_ROW_BLOCKS`]. The H200's table takes 3: its shapes with registers held
    /// beside the shared slice (session 17) hold rows of 65536 in 1–3 blocks, and rows of
    /// 262144 go to shapes tuned for them.
    #[serde(default = "cluster_row_blocks")]
    pub softmax_cluster_row_blocks: u32,
    /// Micro-block side of the transpose kernel for 2-byte types (8 = 16-byte accesses, tile
    /// 128²; 4 = 8-byte accesses, tile 64²), see `transpose::build_micro`.
    pub transpose_micro_16bit: i64,
    /// Row tiles per block and shared buffers of the f32 transpose (default one tile per block:
    /// `transpose::build_micro`; more tiles: the pipelined `transpose::build_tiled`).
    #[serde(default)]
    pub transpose_loop_f32: TransposeLoop,
    /// [`transpose_loop_f32`](Self::transpose_loop_f32) for 2-byte types.
    #[serde(default)]
    pub transpose_loop_16bit: TransposeLoop,
}

impl Default for Tuning {
    fn default() -> Self {
        // tilekit tune, H100 and H200, 2026-11-23: bf16 softmax rows at 512 threads 0.998 / 0.936
        // of the same-run copy (256 threads: 0.981 / 0.821); unmorton in storage order bf16
        // 0.979 / 0.879 (tile order 0.335 / 0.237), f32 0.998 / 0.997 (tile order 1.005 / 0.856)
        Tuning {
            softmax_threads_bf16: 512,
            softmax_threads_f32: 256,
            online: OnlineTuning::default(),
            unmorton_storage_order: true,
            softmax_staged: None,
            softmax_staged_bulk: false,
            softmax_cluster: default_cluster(),
            // not yet measured on a GPU: `tilekit tune` sweeps it, `--save` keeps it if it wins
            softmax_coop: None,
            softmax_coop_16bit: None,
            softmax_coop_long: None,
            softmax_coop_long_16bit: None,
            softmax_cluster_row_blocks: CLUSTER_ROW_BLOCKS,
            transpose_micro_16bit: 8,
            transpose_loop_f32: TransposeLoop::default(),
            transpose_loop_16bit: TransposeLoop::default(),
        }
    }
}

/// The cooperative softmax shape that won the f32 rows of 65536 and 262144 on both the H100 and
/// the H200 (`tilekit tune --config coop`, 2026-11-26): 256 threads reading 8 vectors a step
/// into 64 KiB slices of shared memory. With the lean kernels (session 14) the H200's best f32
/// shape again: 0.900 / 0.873 of copy at 65536 / 262144.
const COOP_SMEM_F32: CoopTuning = CoopTuning::in_shared(256, 32, 64);

/// The same for bf16 rows: 256 threads, 2 vectors a step, 32 KiB slices.
const COOP_SMEM_16BIT: CoopTuning = CoopTuning::in_shared(256, 16, 32);

/// The f32 shape for rows of up to [`CLUSTER_ROW_BLOCKS`] blocks, the H200's since session 15
/// and the H100's since session 16: a row's blocks as one thread-block cluster, 256 threads ×
/// 8 vectors a step into 64 KiB, one exponential (bench/RESULTS.md session 15: H200 2048×65536
/// 0.916–0.918 of copy, the counter kernel 0.900–0.902 in the same runs; session 16: H100
/// 0.985 / 0.978). Longer rows keep [`COOP_SMEM_F32`].
const CLUSTER_F32: CoopTuning = CoopTuning::in_shared(256, 32, 64).with_one_exp().with_cluster();

/// The bf16 shape (H200 since session 15, H100 since session 16): clusters, 256 threads × 2
/// vectors a step into 64 KiB, one exponential — H200 4096×65536 0.927–0.928, 1024×262144
/// 0.888–0.890 (8 blocks a row); H100 0.984 / 0.969.
const CLUSTER_16BIT: CoopTuning = CoopTuning::in_shared(256, 16, 64).with_one_exp().with_cluster();

/// The H200's shapes since session 17 (bench/NOTES.md §27): each block also **holds part of
/// its slice in registers** (`CoopTuning::held`), so a row needs fewer blocks at the same
/// shared memory. Rows of up to 3 blocks: f32 256 threads × 4 vectors a step, 48 KiB shared +
/// 10 vectors a thread held (40 KiB), clusters of 3 for rows of 65536 (0.934 of copy, the
/// session-15 shape 0.917 in the same run).
const CLUSTER_F32_H200: CoopTuning =
    CoopTuning::in_shared(256, 16, 64).with_held(10).with_cluster();

/// See [`CLUSTER_F32_H200`]; bf16: 512 threads × 2 vectors a step, 96 KiB shared + 4 vectors
/// held (32 KiB): a row of 65536 in one block, no exchange (0.948–0.949 of copy, the
/// session-15 clusters of 2 0.927–0.928 in the same runs).
const CLUSTER_16BIT_H200: CoopTuning =
    CoopTuning::in_shared(512, 16, 96).with_held(4).with_cluster();

/// The H200's f32 shape for rows beyond 3 blocks since session 17: 384 threads × 2 vectors a
/// step into 60 KiB + 6 vectors a thread held (36 KiB), the counter exchange: 11 blocks a row
/// of 262144 (0.901 of copy, the session-16 counter shape 0.875 in the same run).
const LONG_F32_H200: CoopTuning = CoopTuning::in_shared(384, 8, 64).with_held(6);

/// The H200's bf16 shape for rows beyond 3 blocks since session 17: 384 threads × 2 vectors a
/// step into 60 KiB + 6 vectors held (48 KiB), clusters of 6 for rows of 262144 (0.909–0.913,
/// the session-15 clusters of 8 0.886–0.890 in the same runs).
const LONG_16BIT_H200: CoopTuning = CoopTuning::in_shared(384, 16, 64).with_held(6).with_cluster();

/// The most blocks of a row a cluster shape of the table takes ([`Tuning::softmax_coop_for_row`]):
/// beyond it the [`Tuning::softmax_coop_long`] shape (H200, session 15: clusters of 2, 4 and 8
/// blocks 0.93 / 0.92 / 0.89 of copy, of 16 at most 0.84 against the counter kernel's 0.88).
///
/// ```
/// assert_eq!(tilekit_ops::tuning::CLUSTER_ROW_BLOCKS, 8);
/// ```
pub const CLUSTER_ROW_BLOCKS: u32 = 8;

fn cluster_row_blocks() -> u32 {
    CLUSTER_ROW_BLOCKS
}

fn default_cluster() -> Option<ClusterTuning> {
    Some(ClusterTuning::default())
}

impl Tuning {
    /// The table entry for a device, by the name the driver reports (defaults when unknown).
    ///
    /// ```
    /// use tilekit_ops::tuning::Tuning;
    /// assert_eq!(Tuning::for_device("Some Future GPU"), Tuning::default());
    /// assert_eq!(Tuning::for_device("NVIDIA H200").online.threads, 512);
    /// ```
    pub fn for_device(name: &str) -> Tuning {
        if name.contains("H200") {
            // tilekit tune, H200, 2026-11-23 (bench/logs/tune-h200-2026-11-23-s4.json): online 512
            // threads × 4 vectors, pass 2 reversed; rows past registers streamed by clusters of
            // up to 8 blocks of 256 threads × 4 vectors (the shape with the best mean over the
            // rows of 65536 and 262144: 0.70–0.84 of copy, the online kernel 0.65–0.77)
            // rows past one block's registers (2026-11-26, bench/RESULTS.md session 8): the
            // cooperative kernel with slices in shared memory, f32 0.851 / 0.836 of copy at
            // 65536 / 262144 (stream cluster 0.834 / 0.639), bf16 0.787 / 0.755 (0.664 / 0.677);
            // since the lean kernels (2026-11-27, session 14: fill-before-load, max.bf16x2,
            // folded exponents, .minnctapersm): f32 256 × 32 × 64 KiB 0.900 / 0.873, bf16
            // one exponential 256 × 32 × 64 KiB 0.892 / 0.861
            // since session 15 (2026-11-27): a row's blocks as one thread-block cluster up to 8
            // blocks a row (f32 65536 0.917, bf16 65536 0.928, bf16 262144 0.890), the
            // counter kernel beyond (f32 262144 0.871–0.879)
            // since session 17 (2026-11-27): part of each block's slice held in registers —
            // rows of up to 3 blocks in clusters (f32 / bf16 65536: 0.934 / 0.948), longer
            // rows by the counter (f32 262144: 0.901–0.909) or clusters of 6 (bf16 262144:
            // 0.909–0.913)
            return Tuning {
                online: OnlineTuning { threads: 512, unroll: 4, reverse: true, blocks_per_sm: 0 },
                softmax_coop: Some(CLUSTER_F32_H200),
                softmax_coop_16bit: Some(CLUSTER_16BIT_H200),
                softmax_coop_long: Some(LONG_F32_H200),
                softmax_coop_long_16bit: Some(LONG_16BIT_H200),
                softmax_cluster_row_blocks: 3,
                ..Tuning::default()
            };
        }
        if name.contains("H100") {
            // tilekit tune, H100, 2026-11-23 (bench/logs/tune-h100-2026-11-23-s4.json): bf16 rows of
            // 65536 staged in shared memory at 1024 threads × 4 vectors (0.952 of copy), f32
            // rows of 65536 streamed by clusters of 4 blocks of 512 threads × 4 vectors (0.905)
            return Tuning {
                online: OnlineTuning { threads: 1024, unroll: 4, reverse: true, blocks_per_sm: 0 },
                // 2026-11-26 (bench/RESULTS.md session 8): rows the staged kernel cannot hold
                // take the cooperative kernel with slices in shared memory: f32 65536 0.935,
                // f32 262144 0.920, bf16 262144 0.876 of copy (cluster: 0.906, 0.675, 0.684)
                // since session 16 (2026-11-27, bench/RESULTS.md): as on the H200, a row's
                // blocks as one thread-block cluster up to 8 blocks a row, the counter kernel
                // beyond, and no staged kernel (bf16 4096×65536 0.984 against staged 0.964,
                // f32 2048×65536 0.985 / 0.978, bf16 1024×262144 0.969 / 0.959, f32 512×262144
                // 0.977 / 0.976, one run)
                softmax_staged: None,
                softmax_coop: Some(CLUSTER_F32),
                softmax_coop_16bit: Some(CLUSTER_16BIT),
                softmax_coop_long: Some(COOP_SMEM_F32),
                softmax_coop_long_16bit: Some(COOP_SMEM_16BIT),
                softmax_cluster: Some(ClusterTuning {
                    threads: 512,
                    per_thread: 16,
                    max_cluster: 4,
                    stream: true,
                    stash: false,
                    bulk: false,
                    ring: 0,
                    held: false,
                }),
                ..Tuning::default()
            };
        }
        Tuning::default()
    }

    /// Saves this tuning as `device`'s in `dir` (created if needed); returns the file.
    ///
    /// ```
    /// use tilekit_ops::tuning::Tuning;
    /// let tmp = tempfile::tempdir().unwrap();
    /// let t = Tuning { softmax_threads_f32: 512, ..Tuning::default() };
    /// let path = t.save(tmp.path(), "Some GPU").unwrap();
    /// assert_eq!(Tuning::load(tmp.path(), "Some GPU").unwrap(), Some((t, path)));
    /// ```
    pub fn save(&self, dir: &Path, device: &str) -> Result<PathBuf, TuningError> {
        let file = TuningFile {
            device: device.into(),
            tilekit_version: env!("CARGO_PKG_VERSION").into(),
            tuning: *self,
        };
        write_json(dir, &file_name(device), &file)
    }

    /// The tuning saved for `device` in `dir`: `None` when there is no file, or when it was
    /// measured by another tilekit version; an error when it is corrupt or names another device.
    ///
    /// ```
    /// use tilekit_ops::tuning::{Tuning, TuningError};
    /// let tmp = tempfile::tempdir().unwrap();
    /// assert_eq!(Tuning::load(tmp.path(), "GPU").unwrap(), None);
    /// std::fs::write(tmp.path().join("GPU.json"), "{ not json").unwrap();
    /// assert!(matches!(Tuning::load(tmp.path(), "GPU"), Err(TuningError::Corrupt { .. })));
    /// ```
    pub fn load(dir: &Path, device: &str) -> Result<Option<(Tuning, PathBuf)>, TuningError> {
        let path = dir.join(file_name(device));
        let Some(file) = read_json::<TuningFile>(&path)? else { return Ok(None) };
        if file.device != device {
            return Err(TuningError::Corrupt {
                path,
                why: format!("it is for device `{}`, not `{device}`", file.device),
            });
        }
        if file.tilekit_version != env!("CARGO_PKG_VERSION") {
            return Ok(None);
        }
        let t = file.tuning;
        let bad = |what: &str, v: i64| TuningError::Corrupt {
            path: path.clone(),
            why: format!("{what} = {v} is out of range"),
        };
        for (what, v) in [
            ("softmax_threads_bf16", t.softmax_threads_bf16),
            ("softmax_threads_f32", t.softmax_threads_f32),
            ("online.threads", t.online.threads),
        ] {
            if v == 0 || v % 32 != 0 || v > 1024 {
                return Err(bad(what, i64::from(v)));
            }
        }
        if !(1..=8).contains(&t.online.unroll) {
            return Err(bad("online.unroll", t.online.unroll));
        }
        if let Some((threads, unroll)) = t.softmax_staged {
            if threads == 0 || threads % 32 != 0 || threads > 1024 {
                return Err(bad("softmax_staged.threads", i64::from(threads)));
            }
            if !(1..=8).contains(&unroll) {
                return Err(bad("softmax_staged.unroll", unroll));
            }
        }
        if let Some(c) = t.softmax_cluster {
            if c.threads == 0 || c.threads % 32 != 0 || c.threads > 1024 {
                return Err(bad("softmax_cluster.threads", i64::from(c.threads)));
            }
            if !(1..=64).contains(&c.per_thread) {
                // (streaming: elements per thread per chunk, also at most 8 vectors = 64)
                return Err(bad("softmax_cluster.per_thread", c.per_thread));
            }
            if !(2..=16).contains(&c.max_cluster) {
                return Err(bad("softmax_cluster.max_cluster", i64::from(c.max_cluster)));
            }
        }
        for (what, c) in [
            ("softmax_coop", t.softmax_coop),
            ("softmax_coop_16bit", t.softmax_coop_16bit),
            ("softmax_coop_long", t.softmax_coop_long),
            ("softmax_coop_long_16bit", t.softmax_coop_long_16bit),
        ] {
            let Some(c) = c else { continue };
            if c.threads == 0 || c.threads % 32 != 0 || c.threads > 1024 {
                return Err(bad(&format!("{what}.threads"), i64::from(c.threads)));
            }
            if !(1..=64).contains(&c.per_thread) {
                return Err(bad(&format!("{what}.per_thread"), c.per_thread));
            }
            if c.smem_kib > 200 {
                return Err(bad(&format!("{what}.smem_kib"), i64::from(c.smem_kib)));
            }
            if i64::from(c.held) > crate::reduce::coop_smem::MAX_HELD_VECTORS {
                return Err(bad(&format!("{what}.held"), i64::from(c.held)));
            }
        }
        if !(1..=crate::reduce::coop::MAX_CLUSTER_BLOCKS).contains(&t.softmax_cluster_row_blocks) {
            let v = i64::from(t.softmax_cluster_row_blocks);
            return Err(bad("softmax_cluster_row_blocks", v));
        }
        if ![1, 2, 4, 8].contains(&t.transpose_micro_16bit) {
            return Err(bad("transpose_micro_16bit", t.transpose_micro_16bit));
        }
        for (what, l) in [
            ("transpose_loop_f32", t.transpose_loop_f32),
            ("transpose_loop_16bit", t.transpose_loop_16bit),
        ] {
            if !(1..=MAX_TILES_PER_BLOCK).contains(&l.tiles_per_block) {
                return Err(bad(&format!("{what}.tiles_per_block"), i64::from(l.tiles_per_block)));
            }
            if !(1..=2).contains(&l.buffers) {
                return Err(bad(&format!("{what}.buffers"), i64::from(l.buffers)));
            }
        }
        Ok(Some((t, path)))
    }

    /// The tuning a backend on `device` uses: a file saved in `dir` by `tilekit tune --save`
    /// when there is a usable one, else the built-in table — with where it came from.
    ///
    /// ```
    /// use tilekit_ops::tuning::{Tuning, TuningSource};
    /// let tmp = tempfile::tempdir().unwrap();
    /// assert_eq!(Tuning::resolve(tmp.path(), "NVIDIA H200"), (Tuning::for_device("NVIDIA H200"), TuningSource::Table));
    /// std::fs::write(tmp.path().join("NVIDIA_H200.json"), "[]").unwrap();
    /// let (t, source) = Tuning::resolve(tmp.path(), "NVIDIA H200");
    /// assert_eq!(t, Tuning::for_device("NVIDIA H200"));
    /// assert!(source.to_string().contains("corrupt"), "{source}");
    /// ```
    pub fn resolve(dir: &Path, device: &str) -> (Tuning, TuningSource) {
        match Tuning::load(dir, device) {
            Ok(Some((t, path))) => (t, TuningSource::Saved(path)),
            Ok(None) => (Tuning::for_device(device), TuningSource::Table),
            Err(e) => (Tuning::for_device(device), TuningSource::TableAfter(e)),
        }
    }

    /// The cooperative softmax shape for rows of `ty` ([`softmax_coop_16bit`](Self::softmax_coop_16bit)
    /// for 2-byte types when set, else [`softmax_coop`](Self::softmax_coop)).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::tuning::Tuning;
    /// let t = Tuning::for_device("NVIDIA H100 80GB HBM3");
    /// // bf16: 256 threads × 2 vectors a step, f32: × 8 (64 KiB slices, clusters)
    /// assert_eq!(t.softmax_coop_for(ScalarType::BF16).unwrap().per_thread, 16);
    /// assert_eq!(t.softmax_coop_for(ScalarType::F32).unwrap().per_thread, 32);
    /// assert_eq!(Tuning::default().softmax_coop_for(ScalarType::F32), None);
    /// ```
    pub fn softmax_coop_for(&self, ty: ScalarType) -> Option<CoopTuning> {
        if ty.size_bytes() == 2 {
            self.softmax_coop_16bit.or(self.softmax_coop)
        } else {
            self.softmax_coop
        }
    }

    /// The cooperative softmax shape for a row of `n` elements of `ty`:
    /// [`softmax_coop_for`](Self::softmax_coop_for), unless that is a thread-block cluster
    /// whose plan splits the row over more than
    /// [`softmax_cluster_row_blocks`](Self::softmax_cluster_row_blocks) blocks (or cannot plan
    /// it): then [`softmax_coop_long`](Self::softmax_coop_long) (`_16bit` for 2-byte types),
    /// or the same shape with the counter exchange when that is unset; a long shape that is a
    /// cluster meets at the counter instead where a cluster cannot hold the row.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::tuning::Tuning;
    /// let t = Tuning::for_device("NVIDIA H200");
    /// // f32 rows of 65536: 3 blocks (48 KiB shared + 40 KiB registers), one cluster; rows of
    /// // 262144: the long shape, 11 blocks meeting at the counter
    /// let short = t.softmax_coop_for_row(ScalarType::F32, 65536).unwrap();
    /// assert!(short.cluster && short.held == 10);
    /// assert_eq!(short.plan(ScalarType::F32, 65536).unwrap().0, 3);
    /// let long = t.softmax_coop_for_row(ScalarType::F32, 262144).unwrap();
    /// assert!(!long.cluster && long.plan(ScalarType::F32, 262144).unwrap().0 == 11);
    /// // bf16 rows of 262144: the long shape is a cluster of 6; rows of 2²⁰ need 22 blocks,
    /// // more than a cluster holds: the same shape at the counter
    /// let long16 = t.softmax_coop_for_row(ScalarType::BF16, 262144).unwrap();
    /// assert!(long16.cluster && long16.plan(ScalarType::BF16, 262144).unwrap().0 == 6);
    /// let longer = t.softmax_coop_for_row(ScalarType::BF16, 1 << 20).unwrap();
    /// assert!(!longer.cluster && longer.held == 6);
    /// ```
    pub fn softmax_coop_for_row(&self, ty: ScalarType, n: i64) -> Option<CoopTuning> {
        let main = self.softmax_coop_for(ty)?;
        let most = self.softmax_cluster_row_blocks;
        if !main.cluster || main.plan(ty, n).is_some_and(|(k, _)| k <= most) {
            return Some(main);
        }
        let long = if ty.size_bytes() == 2 {
            self.softmax_coop_long_16bit.or(self.softmax_coop_long)
        } else {
            self.softmax_coop_long
        };
        let long = long.unwrap_or(CoopTuning { cluster: false, ..main });
        // a cluster shape for long rows, as long as a cluster holds the row; beyond, the same
        // shape meets at the counter
        if long.cluster && long.plan(ty, n).is_none() {
            return Some(CoopTuning { cluster: false, ..long });
        }
        Some(long)
    }

    /// Threads per block of the register softmax kernel for `ty`.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// assert_eq!(tilekit_ops::tuning::Tuning::default().softmax_threads(ScalarType::F32), 256);
    /// ```
    pub fn softmax_threads(&self, ty: ScalarType) -> u32 {
        if ty == ScalarType::F32 {
            self.softmax_threads_f32
        } else {
            self.softmax_threads_bf16
        }
    }
}
