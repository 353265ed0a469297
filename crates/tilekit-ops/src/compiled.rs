//! Kernels built once per configuration and kept for the life of the process.
//!
//! Building a kernel (the builder, the tile layer's index algebra, the passes) takes
//! milliseconds; a library call must cost microseconds. So every op asks this module for its
//! kernel by a [`KernelKey`] — the op, the element type and the few integers that change the
//! code (vector widths, chunks) — and the first call builds it:
//!
//! ```text
//!   api::softmax(x)  ──key (softmax, bf16, [v=8, chunks=4, 0, 0])──►  process cache
//!                                                   │ miss: build IR once  │ hit: Arc clone
//!                                                   ▼                      ▼
//!                                     CompiledKernel { Arc<Kernel>, id = hash of the IR }
//!                                                   │
//!   backend::Cuda  ──id──► loaded module (per device; PTX → cubin through the disk cache once)
//!   backend::Interp ─────► the interpreter runs the IR
//! ```
//!
//! The `id` is a hash of the whole IR, so two keys that build the same code share one module.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use tilekit_ir::{Kernel, ScalarType};

use crate::error::Result;

/// An IR kernel ready to launch on any backend, with an identity for module caches.
///
/// ```
/// use tilekit_ir::{examples, ScalarType};
/// use tilekit_ops::compiled::CompiledKernel;
/// let a = CompiledKernel::new(examples::copy(ScalarType::F32, 4, 64).unwrap());
/// let b = CompiledKernel::new(examples::copy(ScalarType::F32, 4, 64).unwrap());
/// assert_eq!(a.id(), b.id()); // same IR, same id
/// assert_eq!(a.kernel().name, "copy");
/// ```
#[derive(Debug, Clone)]
pub struct CompiledKernel {
    kernel: Arc<Kernel>,
    id: u64,
}

impl CompiledKernel {
    /// Wraps a finished kernel (hashing its IR once).
    ///
    /// ```
    /// use tilekit_ir::{examples, ScalarType};
    /// let k = tilekit_ops::compiled::CompiledKernel::new(examples::copy(ScalarType::F16, 2, 32).unwrap());
    /// assert_eq!(k.kernel().block_dim, [32, 1, 1]);
    /// ```
    pub fn new(kernel: Kernel) -> CompiledKernel {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        kernel.hash(&mut h);
        CompiledKernel { id: h.finish(), kernel: Arc::new(kernel) }
    }

    /// The IR.
    ///
    /// ```
    /// use tilekit_ir::{examples, ScalarType};
    /// let k = tilekit_ops::compiled::CompiledKernel::new(examples::copy(ScalarType::F32, 4, 64).unwrap());
    /// assert_eq!(k.kernel().params.len(), 3);
    /// ```
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// A hash of the IR: equal for equal kernels (the key of per-device module caches).
    ///
    /// ```
    /// use tilekit_ir::{examples, ScalarType};
    /// use tilekit_ops::compiled::CompiledKernel;
    /// let a = CompiledKernel::new(examples::copy(ScalarType::F32, 4, 64).unwrap());
    /// let b = CompiledKernel::new(examples::copy(ScalarType::F16, 4, 64).unwrap());
    /// assert_ne!(a.id(), b.id());
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// What identifies a library kernel: the op, the element type and up to four integers of
/// configuration (vector widths, chunk counts; unused ones 0).
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::compiled::KernelKey::new("copy", ScalarType::F32, [4, 4, 0, 0]);
/// assert_eq!(k.op, "copy");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelKey {
    /// The op (a library name such as `copy`, or a user's own).
    pub op: &'static str,
    /// Element type.
    pub dtype: ScalarType,
    /// The integers the kernel's code depends on.
    pub config: [i64; 4],
}

impl KernelKey {
    /// A key.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::compiled::KernelKey;
    /// assert_ne!(KernelKey::new("a", ScalarType::F32, [1, 0, 0, 0]), KernelKey::new("a", ScalarType::F32, [2, 0, 0, 0]));
    /// ```
    pub fn new(op: &'static str, dtype: ScalarType, config: [i64; 4]) -> KernelKey {
        KernelKey { op, dtype, config }
    }
}

fn cache() -> &'static Mutex<HashMap<KernelKey, CompiledKernel>> {
    static CACHE: OnceLock<Mutex<HashMap<KernelKey, CompiledKernel>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The kernel of `key`, built by `build` on the first request in this process and shared
/// afterwards. A failed build is returned and not cached.
///
/// ```
/// use tilekit_ir::{examples, ScalarType};
/// use tilekit_ops::compiled::{cached, KernelKey};
/// let key = KernelKey::new("doc_example_copy", ScalarType::F32, [4, 0, 0, 0]);
/// let a = cached(key, || Ok(examples::copy(ScalarType::F32, 4, 64)?)).unwrap();
/// let b = cached(key, || unreachable!("built once")).unwrap();
/// assert_eq!(a.id(), b.id());
/// ```
pub fn cached(key: KernelKey, build: impl FnOnce() -> Result<Kernel>) -> Result<CompiledKernel> {
    if let Some(k) = cache().lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(k.clone());
    }
    // built outside the lock: builds take milliseconds and may nest (none do today)
    let k = CompiledKernel::new(build()?);
    let mut c = cache().lock().unwrap_or_else(|p| p.into_inner());
    Ok(c.entry(key).or_insert(k).clone())
}

/// Number of kernels built in this process so far (for `tilekit bench launch` and tests).
///
/// ```
/// use tilekit_ir::{examples, ScalarType};
/// use tilekit_ops::compiled::{cached, cached_count, KernelKey};
/// cached(KernelKey::new("doc_count", ScalarType::F32, [0; 4]), || Ok(examples::copy(ScalarType::F32, 4, 64)?)).unwrap();
/// assert!(cached_count() >= 1);
/// ```
pub fn cached_count() -> usize {
    cache().lock().unwrap_or_else(|p| p.into_inner()).len()
}
