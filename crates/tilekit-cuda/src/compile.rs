//! IR kernel → loaded GPU kernel, through the PTX backend, the driver's JIT and the disk cache.
//!
//! ```text
//!   Kernel (IR) ──tilekit-ptx──► PTX text ──sha256──► cache key (with target, driver, version)
//!                                    │                     │
//!                                    │           hit ──────┴──► cubin ──► load_kernel
//!                                    └─ miss/corrupt ──JIT──► cubin ──► store ──┘
//!                                       JIT = ptxas for wgmma kernels when one is found
//!                                       (cubin_compiler), else the driver's linker JIT
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
        // the compiler: for kernels with wgmma, ptxas when one is found (TILEKIT_CUBIN_PTXAS,
        // CUDA_HOME, PATH); else, and for every other kernel, the driver's JIT; each has its
        // own cache entries (the compiler is part of the key)
        let ptxas = cubin_compiler().filter(|_| uses_wgmma(kernel));
        let key = |with: Option<&PathBuf>| CacheKey {
            ir_hash: content_hash(ptx.as_bytes()),
            target: match with {
                Some(p) => format!("{} ptxas={}", target.name(), p.display()),
                None => target.name().to_string(),
            },
            driver_version: self.props().driver_version,
            tilekit_version: env!("CARGO_PKG_VERSION").to_string(),
        };
        let build = |with: Option<&PathBuf>| -> Result<(Vec<u8>, CacheOutcome, JitReport)> {
            let mut jit = JitReport::default();
            let run = |jit: &mut JitReport| -> Result<Vec<u8>> {
                let (bin, report) = match with {
                    Some(p) => ptxas_to_cubin(p, &ptx, target.name(), &kernel.name)?,
                    None => jit_ptx_to_cubin(self, &ptx, &kernel.name)?,
                };
                *jit = report;
                Ok(bin)
            };
            let (bin, outcome) = match cache {
                Some(c) => c.get_or_build(&key(with), || run(&mut jit))?,
                None => (run(&mut jit)?, CacheOutcome::Miss),
            };
            Ok((bin, outcome, jit))
        };
        let t_build = Instant::now();
        let built = match ptxas.as_ref() {
            // a ptxas that fails, or whose cubin the driver will not load (a toolkit newer
            // than the driver), falls back to the driver's JIT for the rest of the process
            Some(p) => match build(Some(p)).and_then(|(bin, o, j)| {
                let k = load_kernel(self, &bin, &kernel.name)?;
                Ok((k, o, j))
            }) {
                Ok(done) => Some(done),
                Err(e) => {
                    eprintln!(
                        "tilekit: ptxas {} could not build {} ({e}); the driver's JIT builds it \
                         and every later kernel",
                        p.display(),
                        kernel.name
                    );
                    disable_ptxas();
                    None
                }
            },
            None => None,
        };
        let (mut k, outcome, jit) = match built {
            Some(done) => done,
            None => {
                let (bin, o, j) = build(None)?;
                (load_kernel(self, &bin, &kernel.name)?, o, j)
            }
        };
        // what the IR proves: may be launched as a programmatic dependent
        k.waits_on_prior_grid = kernel.waits_on_prior_grid();
        let smem = tilekit_ptx::emit::shared_layout(kernel);
        k.dynamic_smem = if smem.dynamic { smem.total as u32 } else { 0 };
        let load_ms = t_build.elapsed().as_secs_f64() * 1e3 - f64::from(jit.jit_ms);
        let report = CompileReport {
            name: kernel.name.clone(),
            target,
            emit_ms,
            cache: outcome,
            jit,
            load_ms: load_ms.max(0.0),
            total_ms: started.elapsed().as_secs_f64() * 1e3,
        };
        Ok((k, report))
    }
}

/// True when the kernel issues wgmma (the kernels [`cubin_compiler`]'s ptxas builds).
///
/// ```
/// let b = tilekit_ir::KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// assert!(!tilekit_cuda::compile::uses_wgmma(&b.finish().unwrap()));
/// ```
pub fn uses_wgmma(kernel: &IrKernel) -> bool {
    let mut found = false;
    kernel.body.walk(&mut |i| found |= matches!(i.op, tilekit_ir::op::Op::Wgmma(_)));
    found
}

/// The ptxas that builds this process's wgmma kernels ([`uses_wgmma`]; every other kernel
/// goes to the driver's JIT), or `None` for the driver's JIT: the path in
/// `TILEKIT_CUBIN_PTXAS` (empty or `jit`: the driver's JIT), else `$CUDA_HOME/bin/ptxas`,
/// `$CUDA_PATH/bin/ptxas`, `/usr/local/cuda/bin/ptxas`, else `ptxas` on `PATH`, the first that
/// exists; looked up once. Why ptxas for wgmma: the driver's linker JIT (CUDA 13.0, driver
/// 580) waits for every wgmma of a chain before issuing the next (a `WARPGROUP.DEPBAR` after
/// each `HGMMA`) where ptxas keeps them in flight — attention 1.2–1.4× faster on an H100; and
/// why not for the rest: the memory-bound kernels measured up to 5% slower from ptxas on an
/// H200 (bench/NOTES.md §16).
///
/// ```
/// // whatever this machine has; a path, when there is one, names an existing file
/// if let Some(p) = tilekit_cuda::compile::cubin_compiler() {
///     assert!(p.is_file());
/// }
/// ```
pub fn cubin_compiler() -> Option<PathBuf> {
    if PTXAS_DISABLED.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            if let Some(v) = std::env::var_os(PTXAS_ENV) {
                return (!v.is_empty() && v != "jit").then(|| PathBuf::from(v));
            }
            let mut dirs: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
                .iter()
                .filter_map(std::env::var_os)
                .map(|d| PathBuf::from(d).join("bin"))
                .collect();
            dirs.push(PathBuf::from("/usr/local/cuda/bin"));
            if let Some(path) = std::env::var_os("PATH") {
                dirs.extend(std::env::split_paths(&path));
            }
            dirs.into_iter().map(|d| d.join("ptxas")).find(|p| p.is_file())
        })
        .clone()
}

static PTXAS_DISABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn disable_ptxas() {
    PTXAS_DISABLED.store(true, std::sync::atomic::Ordering::Relaxed);
}
