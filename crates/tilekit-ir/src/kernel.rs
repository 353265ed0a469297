//! A finished kernel: parameters, shared allocations, the value table and the body.
//!
//! ```text
//!   Kernel "row_sum"  block (128, 1, 1)
//!   ├─ params   [0] x: ptr<global f32>   [1] x.len0: i32   [2] x.len1: i32 ...
//!   ├─ shared   [0] partial: f32 × 4   (16 bytes)
//!   ├─ values   %0: i32 (const 32)  %1: i32 (tid.x, range 0..=127)  ...
//!   └─ body     Block { insts }       (see crate::op)
//! ```
//!
//! A `Kernel` is plain owned data (`Send + Sync`): the builder produces it, passes rewrite it,
//! the interpreter runs it on many threads at once, and the PTX backend prints it. Its
//! [`Display`](std::fmt::Display) is the text dump of [`crate::dump`].

use crate::op::{Block, Inst, MemRef, MemSpace, ValueId};
use crate::types::{Lit, ScalarType};

/// What a kernel parameter is.
///
/// ```
/// use tilekit_ir::{ParamKind, ScalarType};
/// let p = ParamKind::GlobalPtr(ScalarType::F32);
/// assert_eq!(p.to_string(), "ptr<global f32>");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A pointer to global memory holding elements of this type.
    GlobalPtr(ScalarType),
    /// A scalar of this type.
    Scalar(ScalarType),
    /// A TMA tensor map (the 128-byte `CUtensorMap`, passed as a grid constant) viewing the
    /// memory of the global pointer parameter `global` (see [`crate::tma`]).
    TensorMap {
        /// Element type, box, swizzle, fill.
        spec: crate::tma::TensorMapSpec,
        /// Index of the pointer parameter whose memory it views.
        global: u32,
    },
}

impl std::fmt::Display for ParamKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamKind::GlobalPtr(t) => write!(f, "ptr<global {t}>"),
            ParamKind::Scalar(t) => write!(f, "{t}"),
            ParamKind::TensorMap { spec, .. } => write!(f, "{spec}"),
        }
    }
}

/// A kernel parameter.
///
/// ```
/// use tilekit_ir::{ParamDecl, ParamKind, ScalarType};
/// let p = ParamDecl { name: "n".into(), kind: ParamKind::Scalar(ScalarType::I32) };
/// assert_eq!(p.name, "n");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamDecl {
    /// Name (for dumps, errors and PTX).
    pub name: String,
    /// Pointer or scalar.
    pub kind: ParamKind,
}

/// What a kernel assumes of one of its tensor parameters (declared with
/// [`crate::KernelBuilder::tensor_param`]): the contract a launch's arguments must meet.
///
/// `vector` > 1 means the kernel reads or writes the last dim in `vector`-element vectors: the
/// tensor's last stride is 1, `vector` divides its last length and every other stride, and its
/// first element is aligned to `vector` elements. Launchers check this before binding an
/// argument (`tilekit_ops::bind`), so a misaligned view is a named error, not a fault.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType};
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
/// let d = x.descriptor(Some((4, 1))).unwrap(); // the kernel promises 4-vectors
/// # let _ = d;
/// let k = b.finish().unwrap();
/// assert_eq!(k.tensors[0].name, "x");
/// assert_eq!((k.tensors[0].rank, k.tensors[0].vector, k.tensors[0].ptr_param), (2, 4, 0));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorParamInfo {
    /// The tensor's name (its pointer parameter's name).
    pub name: String,
    /// Element type.
    pub elem: ScalarType,
    /// Number of dims (one length and one stride parameter each).
    pub rank: usize,
    /// Index of the pointer parameter; lengths follow it, then strides.
    pub ptr_param: usize,
    /// Elements per vector access the kernel assumes on the last dim (1 = none).
    pub vector: i64,
}

/// A static shared-memory allocation of the block.
///
/// ```
/// use tilekit_ir::{SharedDecl, ScalarType};
/// let s = SharedDecl { name: "tile".into(), elem: ScalarType::F16, len: 64 * 64 };
/// assert_eq!(s.size_bytes(), 8192);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SharedDecl {
    /// Name.
    pub name: String,
    /// Element type.
    pub elem: ScalarType,
    /// Number of elements.
    pub len: usize,
}

impl SharedDecl {
    /// Bytes.
    ///
    /// ```
    /// # use tilekit_ir::{SharedDecl, ScalarType};
    /// assert_eq!(SharedDecl { name: "s".into(), elem: ScalarType::F32, len: 3 }.size_bytes(), 12);
    /// ```
    pub fn size_bytes(&self) -> usize {
        self.len * self.elem.size_bytes()
    }
}

/// What is known about a value: its type, its constant (if any) and, for integers, a range
/// `lo..=hi` that every thread's value lies in.
///
/// ```
/// use tilekit_ir::{ValueInfo, ScalarType};
/// let v = ValueInfo { ty: ScalarType::I32, konst: None, range: Some((0, 127)) };
/// assert_eq!(v.range, Some((0, 127)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ValueInfo {
    /// Type.
    pub ty: ScalarType,
    /// The constant, for values defined by `const`.
    pub konst: Option<Lit>,
    /// Inclusive integer range, when known.
    pub range: Option<(i64, i64)>,
}

/// Cache operators for a kernel's plain global loads and stores (PTX `.cop` and
/// `.level::prefetch_size`): what a kernel that touches every byte once may ask of the caches.
/// The interpreter ignores them (they change no value).
///
/// ```
/// use tilekit_ir::{GlobalCache, KernelBuilder, ScalarType, Axis};
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// let x = b.ptr_param("x", ScalarType::F32).unwrap();
/// let y = b.ptr_param("y", ScalarType::F32).unwrap();
/// let t = b.thread_id(Axis::X);
/// let v = b.load(x, &t, 1, None).unwrap();
/// b.store(y, &t, &v, None).unwrap();
/// b.set_global_cache(GlobalCache::Streaming);
/// let k = b.finish().unwrap();
/// assert_eq!(k.global_cache, GlobalCache::Streaming);
/// assert_eq!(GlobalCache::Streaming.to_string(), "streaming");
/// assert_eq!(GlobalCache::default(), GlobalCache::Default);
/// ```
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum GlobalCache {
    /// The defaults (`.ca` loads, `.wb` stores).
    #[default]
    Default,
    /// `ld.global.cs` and `st.global.cs`: evict first, the data is touched once.
    Streaming,
    /// `st.global.cs` only (loads as by default).
    StreamingStores,
    /// Loads with `.L2::256B` (the L2 fetches the 256-byte block around each access).
    Prefetch256,
}

impl std::fmt::Display for GlobalCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GlobalCache::Default => "default",
            GlobalCache::Streaming => "streaming",
            GlobalCache::StreamingStores => "streaming stores",
            GlobalCache::Prefetch256 => "L2 256B prefetch",
        })
    }
}

/// A finished kernel.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType};
/// let b = KernelBuilder::new("noop", [32, 1, 1]).unwrap();
/// let k = b.finish().unwrap();
/// assert_eq!(k.name, "noop");
/// assert_eq!(k.block_dim, [32, 1, 1]);
/// assert_eq!(k.instruction_count(), 0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Kernel {
    /// Name (the PTX entry name).
    pub name: String,
    /// Threads per block along x, y, z (fixed at build time).
    pub block_dim: [u32; 3],
    /// Blocks per cluster along x, y, z (`[1, 1, 1]`: no clusters). The grid must be a
    /// multiple of it; its product is at most 16 (8 is the portable limit).
    pub cluster_dim: [u32; 3],
    /// Blocks of this kernel every SM must be able to hold at once (`.minnctapersm`: ptxas
    /// caps the registers a thread gets so that many fit); `0` leaves it to ptxas. Set with
    /// [`crate::KernelBuilder::set_min_blocks_per_sm`].
    pub min_blocks_per_sm: u32,
    /// The cache operators of the kernel's plain global loads and stores
    /// ([`GlobalCache`]; atomics, acquires and bulk copies keep theirs). Set with
    /// [`crate::KernelBuilder::set_global_cache`] or on the finished kernel.
    pub global_cache: GlobalCache,
    /// Parameters, in launch order.
    pub params: Vec<ParamDecl>,
    /// The tensor parameters among `params`, with what the kernel assumes of each.
    pub tensors: Vec<TensorParamInfo>,
    /// Shared allocations.
    pub shared: Vec<SharedDecl>,
    /// Every value, indexed by [`ValueId`].
    pub values: Vec<ValueInfo>,
    /// The body.
    pub body: Block,
}

impl Kernel {
    /// Type of a value.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let n = b.scalar_param("n", ScalarType::U32).unwrap();
    /// let id = n.id().unwrap();
    /// b.keep(&n);
    /// assert_eq!(b.finish().unwrap().ty(id), ScalarType::U32);
    /// ```
    pub fn ty(&self, v: ValueId) -> ScalarType {
        self.values[v.0 as usize].ty
    }

    /// Threads per block.
    ///
    /// ```
    /// use tilekit_ir::KernelBuilder;
    /// assert_eq!(KernelBuilder::new("k", [8, 4, 2]).unwrap().finish().unwrap().threads_per_block(), 64);
    /// ```
    pub fn threads_per_block(&self) -> usize {
        self.block_dim.iter().map(|&d| d as usize).product()
    }

    /// Blocks per cluster (1 without clusters).
    ///
    /// ```
    /// use tilekit_ir::KernelBuilder;
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// b.set_cluster_dim([4, 1, 1]).unwrap();
    /// assert_eq!(b.finish().unwrap().cluster_size(), 4);
    /// ```
    pub fn cluster_size(&self) -> usize {
        self.cluster_dim.iter().map(|&d| d as usize).product()
    }

    /// Total shared-memory bytes.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// b.shared("s", ScalarType::F32, 100).unwrap();
    /// assert_eq!(b.finish().unwrap().shared_bytes(), 400);
    /// ```
    pub fn shared_bytes(&self) -> usize {
        self.shared.iter().map(SharedDecl::size_bytes).sum()
    }

    /// Number of instructions, counted recursively, **not** counting constants (which become
    /// immediates): the size of the generated code, pinned by tests.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, SpecialReg, Axis};
    /// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    /// let t = b.special(SpecialReg::ThreadId(Axis::X));
    /// let x = t.clone() * tilekit_layout::Idx::lit(4) + tilekit_layout::Idx::lit(0);
    /// b.keep(&x);
    /// assert_eq!(b.finish().unwrap().instruction_count(), 2); // tid.x, mul
    /// ```
    pub fn instruction_count(&self) -> usize {
        let mut n = 0;
        self.body.walk(&mut |i: &Inst| {
            if !matches!(i.op, crate::op::Op::Const(_) | crate::op::Op::Note(_)) {
                n += 1
            }
        });
        n
    }

    /// True when every thread executes `griddepcontrol.wait`
    /// ([`grid_dependency_wait`](crate::KernelBuilder::grid_dependency_wait)) before its first
    /// access to global memory: a wait at the top level of the body (not inside a loop or an
    /// if) with no instruction before it that may touch global memory — global loads and
    /// stores, atomics and acquire loads, and (conservatively) every asynchronous operation,
    /// directly or inside a loop or if. Such a kernel may be launched as a *programmatic
    /// dependent* of the grid before it (`tilekit_cuda::Gpu::set_programmatic_launch`):
    /// whatever it reads was written by a complete grid, and nothing it writes can race with
    /// that grid's reads.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// use tilekit_layout::Idx;
    /// # fn main() -> Result<(), tilekit_ir::IrError> {
    /// let build = |wait_first: bool| -> Result<tilekit_ir::Kernel, tilekit_ir::IrError> {
    ///     let b = KernelBuilder::new("k", [32, 1, 1])?;
    ///     let x = b.ptr_param("x", ScalarType::F32)?;
    ///     if wait_first {
    ///         b.grid_dependency_wait();
    ///     }
    ///     let v = b.load(x, &Idx::lit(0), 1, None)?;
    ///     b.grid_dependency_wait(); // too late for the load above
    ///     b.store(x, &Idx::lit(1), &v, None)?;
    ///     b.finish()
    /// };
    /// assert!(build(true)?.waits_on_prior_grid());
    /// assert!(!build(false)?.waits_on_prior_grid());
    /// # Ok(()) }
    /// ```
    pub fn waits_on_prior_grid(&self) -> bool {
        use crate::op::Op;
        fn touches_global(i: &Inst) -> bool {
            match &i.op {
                Op::Load { mem, .. } | Op::Store { mem, .. } => {
                    matches!(mem.space, MemSpace::Global(_))
                }
                Op::AtomicAdd { .. }
                | Op::LoadAcquire { .. }
                | Op::WaitAcquire { .. }
                | Op::Async(_) => true,
                op => op.blocks().into_iter().any(|b| b.insts.iter().any(touches_global)),
            }
        }
        for inst in &self.body.insts {
            if inst.op == Op::GridDepWait {
                return true;
            }
            if touches_global(inst) {
                return false;
            }
        }
        false
    }

    /// The name of the memory an access goes to (the parameter or the shared allocation).
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let s = b.shared("tile", ScalarType::F32, 4).unwrap();
    /// assert_eq!(b.finish().unwrap().mem_name(s), "tile");
    /// ```
    pub fn mem_name(&self, m: MemRef) -> &str {
        match m.space {
            MemSpace::Global(p) => self.params.get(p as usize).map_or("?", |d| &d.name),
            MemSpace::Shared(s) => self.shared.get(s as usize).map_or("?", |d| &d.name),
        }
    }
}

/// The alignment in bytes of each shared allocation of `k`: 16, or more where an asynchronous
/// unit reads it with a pattern anchored to its address — a TMA tensor copy's swizzle
/// ([`crate::tma::shared_alignments`]) or a wgmma descriptor's
/// ([`crate::wgmma::shared_alignments`]), whichever is larger. The PTX backend and the
/// interpreter place shared memory by it.
///
/// ```
/// use tilekit_ir::{KernelBuilder, ScalarType};
/// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
/// b.shared("x", ScalarType::F32, 3).unwrap();
/// assert_eq!(tilekit_ir::kernel::shared_alignments(&b.finish().unwrap()), vec![16]);
/// ```
pub fn shared_alignments(k: &Kernel) -> Vec<usize> {
    crate::tma::shared_alignments(k)
        .into_iter()
        .zip(crate::wgmma::shared_alignments(k))
        .map(|(a, b)| a.max(b))
        .collect()
}
