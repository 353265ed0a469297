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
//!                 longer rows                        → online kernel with `online`
//! ```
//!
//! Every entry is a measured winner of `tilekit tune` (bench/RESULTS.md has the sweeps, the
//! JSON files beside it every candidate); a device not in the table gets the defaults, the
//! shapes that won on both the H100 and the H200.

use tilekit_ir::ScalarType;

use crate::reduce::OnlineTuning;

/// Per-device launch shapes of the tunable kernels.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::tuning::Tuning;
/// assert_eq!(Tuning::default().softmax_threads(ScalarType::BF16), 512);
/// assert_eq!(Tuning::for_device("NVIDIA H200").online.threads, 512);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// Micro-block side of the transpose kernel for 2-byte types (8 = 16-byte accesses, tile
    /// 128²; 4 = 8-byte accesses, tile 64²), see `transpose::build_micro`.
    pub transpose_micro_16bit: i64,
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
            transpose_micro_16bit: 8,
        }
    }
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
            // tilekit tune, H200, 2026-11-23: online 512 threads × 4 vectors, pass 2 reversed,
            // best or within 0.06 of best on rows of 65536 and 262144 in bf16 and f32
            return Tuning {
                online: OnlineTuning { threads: 512, unroll: 4, reverse: true, blocks_per_sm: 0 },
                ..Tuning::default()
            };
        }
        Tuning::default()
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
