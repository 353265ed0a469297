//! IR kernel → loaded GPU kernel, through the PTX backend, the driver's JIT and the disk cache.
//!
//! ```text
//!   Kernel (IR) ──tilekit-ptx──► PTX text ──sha256──► cache key (with target, driver, version)
//!                                    │                     │
//!                                    │           hit ──────┴──► cubin ──► load_kernel
//!                                    └─ miss/corrupt ──JIT──► cubin ──► store ──┘
//!                                       (or ptxas, when TILEKIT_CUBIN_PTXAS names one)
//! ```
//!
//! [`CompileReport`] says how long each step took and what the driver reports about the kernel
//! (registers, local memory for spills), so `tilekit` can show it and a regression is visible.

use std::path::PathBuf;
use std::time::Instant;

use tilekit_ir::Kernel as IrKernel;
use tilekit_ptx::{emit_kernel, Target};

use crate::cache::{content_hash, CacheKey, CacheOutcome, KernelCache};
use crate::device::Gpu;
use crate::error::{CudaError, Result};
use crate::module::{jit_ptx_to_cubin, load_kernel, ptxas_to_cubin, JitReport, Kernel, PTXAS_ENV};

/// How one kernel was built.
#[derive(Debug, Clone)]
pub struct CompileReport {
    /// The kernel.
    pub name: String,
    /// PTX target used.
    pub target: Target,
    /// Milliseconds to print the PTX.
    pub emit_ms: f64,
    /// Cache hit, miss or rebuild.
    pub cache: CacheOutcome,
    /// JIT report (empty on a cache hit).
    pub jit: JitReport,
    /// Milliseconds to load the module and look up the kernel.
    pub load_ms: f64,
    /// Total milliseconds from IR to a launchable kernel.
    pub total_ms: f64,
}

impl Gpu {
    /// The PTX target for this device.
    pub fn ptx_target(&self) -> Result<Target> {
        let (a, b) = self.props().compute_capability;
        Target::for_compute_capability(a, b).ok_or_else(|| CudaError::BadLaunch {
            kernel: "(any)".into(),
            field: "compute capability",
            value: format!("{a}.{b}"),
            rule: "tilekit targets sm_80 and newer".into(),
        })
    }

    /// Compiles an IR kernel for this device, through the cache when one is given.
    pub fn compile(
        &self,
        kernel: &IrKernel,
        cache: Option<&KernelCache>,
    ) -> Result<(Kernel, CompileReport)> {
        let started = Instant::now();
        let target = self.ptx_target()?;
        let ptx = emit_kernel(kernel, target).map_err(|e| CudaError::Jit {
            kernel: kernel.name.clone(),
            code: "PTX emission failed".into(),
            log: e.to_string(),
        })?;
        let emit_ms = started.elapsed().as_secs_f64() * 1e3;
        // an external ptxas (TILEKIT_CUBIN_PTXAS) instead of the driver's JIT: its own cache
        // entries (the compiler is part of the key's target)
        let ptxas = std::env::var_os(PTXAS_ENV).filter(|p| !p.is_empty()).map(PathBuf::from);
        let key_target = match &ptxas {
            Some(p) => format!("{} ptxas={}", target.name(), p.display()),
            None => target.name().to_string(),
        };
        let build = || match &ptxas {
            Some(p) => ptxas_to_cubin(p, &ptx, target.name(), &kernel.name),
            None => jit_ptx_to_cubin(self, &ptx, &kernel.name),
        };
        let key = CacheKey {
            ir_hash: content_hash(ptx.as_bytes()),
            target: key_target,
            driver_version: self.props().driver_version,
            tilekit_version: env!("CARGO_PKG_VERSION").to_string(),
        };
        let mut jit = JitReport::default();
        let (cubin, outcome) = match cache {
            Some(c) => c.get_or_build(&key, || {
                let (bin, report) = build()?;
                jit = report;
                Ok(bin)
            })?,
            None => {
                let (bin, report) = build()?;
                jit = report;
                (bin, CacheOutcome::Miss)
            }
        };
        let t_load = Instant::now();
        let k = load_kernel(self, &cubin, &kernel.name)?;
        let load_ms = t_load.elapsed().as_secs_f64() * 1e3;
        let report = CompileReport {
            name: kernel.name.clone(),
            target,
            emit_ms,
            cache: outcome,
            jit,
            load_ms,
            total_ms: started.elapsed().as_secs_f64() * 1e3,
        };
        Ok((k, report))
    }
}
