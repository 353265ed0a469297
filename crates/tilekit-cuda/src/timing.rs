//! CUDA-event timing: warm-up, then one event pair per repetition, median over the runs.
//!
//! ```text
//!   warm-up ×w      rep 0              rep 1                     rep n−1
//!   f() f() …   [ev0 f() ev1]  [ev2 f() ev3]  …  [ev2n−2 f() ev2n−1]   one synchronize
//!                     └─ elapsed(ev2i, ev2i+1) for each i → sorted → median, min, max
//!
//!   with c calls a repetition (Gpu::set_timed_calls):
//!               [ev0 f() f() … f() ev1]  → elapsed / c   (c back-to-back calls, as a
//!                                            program's stream of launches runs them)
//! ```

use cudarc::driver::sys::CUevent_flags;

use crate::device::Gpu;
use crate::error::{CudaError, Result};

/// Times of repeated runs, in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Every repetition, in run order.
    pub runs_ms: Vec<f32>,
}

impl Timing {
    /// The median of the runs.
    ///
    /// ```
    /// let t = tilekit_cuda::Timing { runs_ms: vec![3.0, 1.0, 2.0, 10.0] };
    /// assert_eq!(t.median_ms(), 2.5);
    /// ```
    pub fn median_ms(&self) -> f64 {
        let mut v: Vec<f64> = self.runs_ms.iter().map(|&x| f64::from(x)).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        if n == 0 {
            return f64::NAN;
        }
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }
    /// The fastest run.
    ///
    /// ```
    /// let t = tilekit_cuda::Timing { runs_ms: vec![3.0, 1.0, 2.0] };
    /// assert_eq!(t.min_ms(), 1.0);
    /// ```
    pub fn min_ms(&self) -> f64 {
        self.runs_ms.iter().map(|&x| f64::from(x)).fold(f64::INFINITY, f64::min)
    }
}

impl Gpu {
    /// Runs `f(i)` `warmup` times, then `reps` times between CUDA events on the Gpu's stream.
    /// `f` receives the repetition number (use it to rotate input buffers so that they exceed L2).
    pub fn time(
        &self,
        warmup: usize,
        reps: usize,
        mut f: impl FnMut(usize) -> Result<()>,
    ) -> Result<Timing> {
        if reps == 0 {
            return Err(CudaError::BadLaunch {
                kernel: "timing".into(),
                field: "reps",
                value: "0".into(),
                rule: "at least one timed repetition".into(),
            });
        }
        for i in 0..warmup {
            f(i)?;
        }
        let mut events = Vec::with_capacity(2 * reps);
        for _ in 0..2 * reps {
            events.push(
                self.ctx
                    .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(|e| CudaError::driver("cuEventCreate", e))?,
            );
        }
        let calls = self.timed_calls();
        for i in 0..reps {
            events[2 * i]
                .record(&self.stream)
                .map_err(|e| CudaError::driver("cuEventRecord", e))?;
            for j in 0..calls {
                f(warmup + i * calls + j)?;
            }
            events[2 * i + 1]
                .record(&self.stream)
                .map_err(|e| CudaError::driver("cuEventRecord", e))?;
        }
        self.synchronize()?;
        let mut runs_ms = Vec::with_capacity(reps);
        for i in 0..reps {
            runs_ms.push(
                events[2 * i]
                    .elapsed_ms(&events[2 * i + 1])
                    .map_err(|e| CudaError::driver("cuEventElapsedTime", e))?
                    / calls as f32,
            );
        }
        Ok(Timing { runs_ms })
    }
}
