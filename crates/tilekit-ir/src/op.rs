//! Operations, instructions and structured regions.
//!
//! A kernel body is a tree of [`Block`]s. A block is a list of [`Inst`]s; an instruction has an
//! [`Op`] and zero or more result values. Control flow is **structured**: a loop or an if is one
//! instruction that owns its blocks, so a GEMM K loop stays one `for` with loop-carried
//! accumulators however many iterations it runs, and the PTX backend and the interpreter never
//! reconstruct control flow from jumps.
//!
//! ```text
//!   Block (kernel body)
//!   ├─ %0 = const.i32 4                       prelude: constants, params, special registers
//!   ├─ %1 = sreg.tid.x : i32                  (hoisted, visible everywhere)
//!   ├─ %5 = mul.i32 %1, %0
//!   ├─ %6, %7 = for %i = %a to %b step %c iter(%acc0 = %z, %acc1 = %z) {
//!   │     Block  args [%i, %acc0, %acc1]
//!   │     ├─ ...
//!   │     └─ yield %x, %y                     the next values of the carried args
//!   │  }                                      results = carried values after the last iteration
//!   └─ st.global.v4.f32 y[%5], %8, %9, %10, %11
//! ```
//!
//! Operands are [`ValueId`]s; constants are values defined by [`Op::Const`] in the prelude (the
//! backend may print them as immediates). Memory is addressed as *(memory, element offset)*:
//! [`MemRef`] names a global pointer parameter or a shared allocation together with its element
//! type, so bounds are known to the interpreter and the PTX backend computes `base + off·size`.
//!
//! Ops still to come fit this shape: `ldmatrix` is a shared load with several results,
//! `mma.sync` ([`Op::Mma`]) takes and returns fragments as lists of values, `cp.async` /
//! `cp.async.bulk.tensor` are memory ops with two [`MemRef`]s, `mbarrier` and commit/wait groups
//! are side-effecting ops without results, and `wgmma` takes a shared-memory descriptor (an
//! `i64` value built from a shared [`MemRef`]).

use crate::types::{Lit, ScalarType};

/// The name of an SSA value: an index into the kernel's value table.
///
/// ```
/// use tilekit_ir::ValueId;
/// assert_eq!(ValueId(3).to_string(), "%3");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

impl std::fmt::Display for ValueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// One of the three axes of thread, block and grid indices.
///
/// ```
/// assert_eq!(tilekit_ir::Axis::Y.index(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Axis {
    /// x (fastest).
    X,
    /// y.
    Y,
    /// z.
    Z,
}

impl Axis {
    /// 0, 1 or 2.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::Axis::Z.index(), 2);
    /// ```
    pub fn index(self) -> usize {
        self as usize
    }

    fn name(self) -> &'static str {
        ["x", "y", "z"][self.index()]
    }
}

/// A special register: the ids and dims every thread can read.
///
/// `WarpId` and `LaneId` are defined from the **linear** thread index of the block
/// (`tid.x + ntid.x·(tid.y + ntid.y·tid.z)`): lane = linear % 32, warp = linear / 32 — what
/// kernels mean by them (PTX's `%warpid` is a different, unstable thing; the backend computes
/// these from `%tid`).
///
/// ```
/// use tilekit_ir::{SpecialReg, Axis};
/// assert_eq!(SpecialReg::ThreadId(Axis::X).to_string(), "tid.x");
/// assert_eq!(SpecialReg::GridDim(Axis::Y).to_string(), "nctaid.y");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpecialReg {
    /// `%tid.{x,y,z}`: thread index in the block.
    ThreadId(Axis),
    /// `%ntid.{x,y,z}`: block dims (known at build time, so it folds to a constant).
    BlockDim(Axis),
    /// `%ctaid.{x,y,z}`: block index in the grid.
    BlockId(Axis),
    /// `%nctaid.{x,y,z}`: grid dims.
    GridDim(Axis),
    /// Lane of the thread in its warp (0..32).
    LaneId,
    /// Warp of the thread in its block.
    WarpId,
    /// `%cluster_ctarank`: the block's rank in its cluster (`0..cluster size`; 0 without a
    /// cluster).
    ClusterCtaRank,
    /// `%cluster_nctarank`: blocks per cluster (known at build time, so it folds to a constant).
    ClusterSize,
}

impl std::fmt::Display for SpecialReg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpecialReg::ThreadId(a) => write!(f, "tid.{}", a.name()),
            SpecialReg::BlockDim(a) => write!(f, "ntid.{}", a.name()),
            SpecialReg::BlockId(a) => write!(f, "ctaid.{}", a.name()),
            SpecialReg::GridDim(a) => write!(f, "nctaid.{}", a.name()),
            SpecialReg::LaneId => f.write_str("laneid"),
            SpecialReg::WarpId => f.write_str("warpid"),
            SpecialReg::ClusterCtaRank => f.write_str("cluster_ctarank"),
            SpecialReg::ClusterSize => f.write_str("cluster_nctarank"),
        }
    }
}

/// Which clock [`Op::Clock`] reads.
///
/// On the GPU both are free-running 64-bit counters: [`Clock::Sm`] is `%clock64`, the SM's
/// cycle counter (fine-grained, comparable only between threads of one SM — a block's warps
/// are), [`Clock::Global`] is `%globaltimer`, nanoseconds common to every SM (its update
/// interval depends on the device and driver: microseconds on some, tens of nanoseconds on
/// others). The interpreter has no time: it returns a deterministic count (see [`Op::Clock`]).
///
/// ```
/// use tilekit_ir::Clock;
/// assert_eq!(Clock::Sm.to_string(), "clock64");
/// assert_eq!(Clock::Global.to_string(), "globaltimer");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Clock {
    /// `%clock64`: SM cycles.
    Sm,
    /// `%globaltimer`: nanoseconds, common to all SMs.
    Global,
}

impl std::fmt::Display for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Clock::Sm => "clock64",
            Clock::Global => "globaltimer",
        })
    }
}

/// Unary operations.
///
/// ```
/// assert_eq!(tilekit_ir::UnOp::Exp2Approx.name(), "ex2.approx");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Arithmetic negation (ints wrap, floats flip the sign).
    Neg,
    /// Bitwise not for integers, logical not for predicates.
    Not,
    /// Absolute value.
    Abs,
    /// `2^x`, fast approximation on the GPU (`ex2.approx`; f32 only).
    Exp2Approx,
    /// `2^x`, fast approximation with subnormals flushed to zero (`ex2.approx.ftz`; f32
    /// only): a subnormal input counts as 0 (result 1) and a result below 2⁻¹²⁶ is +0. One
    /// `MUFU.EX2` on sm_90; `ex2.approx` adds a range check and two multiplies to keep
    /// subnormal results.
    ///
    /// ```
    /// use tilekit_ir::{eval::eval_unary, ScalarType, UnOp};
    /// let f = |x: f32| x.to_bits() as u64;
    /// assert_eq!(eval_unary(UnOp::Exp2ApproxFtz, ScalarType::F32, f(3.0)), Ok(f(8.0)));
    /// assert_eq!(eval_unary(UnOp::Exp2ApproxFtz, ScalarType::F32, f(-130.0)), Ok(f(0.0)));
    /// assert_ne!(eval_unary(UnOp::Exp2Approx, ScalarType::F32, f(-130.0)), Ok(f(0.0)));
    /// ```
    Exp2ApproxFtz,
    /// `1/x`, fast approximation (`rcp.approx`; f32 only).
    RcpApprox,
    /// `1/sqrt(x)`, fast approximation (`rsqrt.approx`; f32 only).
    RsqrtApprox,
    /// `log2(x)`, fast approximation (`lg2.approx`; f32 only): `-inf` at 0, NaN below.
    Lg2Approx,
    /// Correctly rounded square root (floats).
    Sqrt,
}

impl UnOp {
    /// The mnemonic used in the dump.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::UnOp::Neg.name(), "neg");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Not => "not",
            UnOp::Abs => "abs",
            UnOp::Exp2Approx => "ex2.approx",
            UnOp::Exp2ApproxFtz => "ex2.approx.ftz",
            UnOp::RcpApprox => "rcp.approx",
            UnOp::RsqrtApprox => "rsqrt.approx",
            UnOp::Lg2Approx => "lg2.approx",
            UnOp::Sqrt => "sqrt",
        }
    }
}

/// Binary operations (both operands and the result have one type).
///
/// Integer division and remainder truncate (C, PTX `div.s32`); `Shr` is arithmetic for signed
/// and logical for unsigned types; shift amounts ≥ the width give 0 (or all sign bits), as in
/// PTX. `And`/`Or`/`Xor` also apply to predicates. Float `Min`/`Max` propagate NaN (PTX
/// `min.NaN`/`max.NaN`, `torch.minimum`/`torch.maximum`): a NaN operand gives NaN, so a max
/// reduction over values holding a NaN is NaN, while `−∞` stays the identity for padding.
///
/// ```
/// use tilekit_ir::{eval::eval_binary, BinOp, ScalarType};
/// assert!(BinOp::Add.is_commutative() && !BinOp::Sub.is_commutative());
/// assert_eq!(BinOp::Shr.name(), "shr");
/// let f = |x: f32| x.to_bits() as u64;
/// let m = eval_binary(BinOp::Max, ScalarType::F32, f(f32::NAN), f(1.0)).unwrap();
/// assert!(f32::from_bits(m as u32).is_nan());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b` (low half for integers).
    Mul,
    /// `a / b`.
    Div,
    /// `a % b` (integers).
    Rem,
    /// Minimum; for floats NaN if either operand is NaN (`min.NaN`).
    Min,
    /// Maximum; for floats NaN if either operand is NaN (`max.NaN`).
    Max,
    /// Bitwise / logical and.
    And,
    /// Bitwise / logical or.
    Or,
    /// Bitwise / logical xor.
    Xor,
    /// Shift left.
    Shl,
    /// Shift right.
    Shr,
}

impl BinOp {
    /// `a op b == b op a`.
    ///
    /// ```
    /// assert!(tilekit_ir::BinOp::Xor.is_commutative());
    /// ```
    pub fn is_commutative(self) -> bool {
        matches!(
            self,
            BinOp::Add | BinOp::Mul | BinOp::Min | BinOp::Max | BinOp::And | BinOp::Or | BinOp::Xor
        )
    }

    /// The mnemonic used in the dump.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::BinOp::Rem.name(), "rem");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
        }
    }
}

/// Comparisons (result: `pred`). Float comparisons are ordered: false when either is NaN,
/// except `Ne`, which is true then.
///
/// ```
/// assert_eq!(tilekit_ir::CmpOp::Le.name(), "le");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
}

impl CmpOp {
    /// The mnemonic used in the dump.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::CmpOp::Ne.name(), "ne");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
        }
    }
}

/// `shfl.sync` modes (PTX): where a lane reads from.
///
/// ```
/// assert_eq!(tilekit_ir::ShflMode::Bfly.name(), "bfly");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShflMode {
    /// From lane `b`.
    Idx,
    /// From lane `lane - b` (own value if below 0).
    Up,
    /// From lane `lane + b` (own value if above 31).
    Down,
    /// From lane `lane ^ b` (butterfly; the xor shuffle).
    Bfly,
}

impl ShflMode {
    /// The PTX mode name.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::ShflMode::Down.name(), "down");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ShflMode::Idx => "idx",
            ShflMode::Up => "up",
            ShflMode::Down => "down",
            ShflMode::Bfly => "bfly",
        }
    }
}

/// `vote.sync` modes.
///
/// ```
/// assert_eq!(tilekit_ir::VoteMode::Ballot.name(), "ballot");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VoteMode {
    /// True if the predicate holds on any lane of the warp.
    Any,
    /// True if it holds on every lane.
    All,
    /// A `u32` with bit `l` set iff it holds on lane `l`.
    Ballot,
}

impl VoteMode {
    /// The PTX mode name.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::VoteMode::Any.name(), "any");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            VoteMode::Any => "any",
            VoteMode::All => "all",
            VoteMode::Ballot => "ballot",
        }
    }
}

/// Which memory an access goes to.
///
/// ```
/// use tilekit_ir::{MemSpace, MemRef, ScalarType};
/// let m = MemRef { space: MemSpace::Shared(0), elem: ScalarType::F32 };
/// assert_eq!(m.space.name(), "shared");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemSpace {
    /// Global memory behind the pointer parameter with this parameter index.
    Global(u32),
    /// The shared-memory allocation with this index.
    Shared(u32),
}

impl MemSpace {
    /// `"global"` or `"shared"`.
    ///
    /// ```
    /// assert_eq!(tilekit_ir::MemSpace::Global(0).name(), "global");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            MemSpace::Global(_) => "global",
            MemSpace::Shared(_) => "shared",
        }
    }
}

/// A typed memory: a global pointer parameter or a shared allocation, with its element type.
/// Accesses give an element offset into it.
///
/// ```
/// use tilekit_ir::{MemSpace, MemRef, ScalarType};
/// let m = MemRef { space: MemSpace::Global(1), elem: ScalarType::F16 };
/// assert_eq!(m.elem.size_bytes(), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemRef {
    /// Where.
    pub space: MemSpace,
    /// Element type.
    pub elem: ScalarType,
}

/// Matrix-multiply-accumulate shapes (`mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}...`).
///
/// ```
/// use tilekit_ir::MmaShape;
/// assert_eq!(MmaShape::M16N8K16.fragment_sizes(), (8, 4, 4));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MmaShape {
    /// m16n8k16 with 16-bit inputs and f32 accumulators.
    M16N8K16,
}

impl MmaShape {
    /// Values per lane of the A, B and C/D fragments (A, B as unpacked 16-bit values).
    ///
    /// ```
    /// assert_eq!(tilekit_ir::MmaShape::M16N8K16.fragment_sizes().0, 8);
    /// ```
    pub fn fragment_sizes(self) -> (usize, usize, usize) {
        match self {
            MmaShape::M16N8K16 => (8, 4, 4),
        }
    }
}

/// An operation. Operands are [`ValueId`]s; the result types are recorded in the kernel's value
/// table. See the [module docs](self) for the structure.
///
/// ```
/// use tilekit_ir::{Op, BinOp, ValueId};
/// let op = Op::Binary(BinOp::Add, ValueId(1), ValueId(2));
/// assert!(op.is_pure());
/// assert_eq!(op.operands(), vec![ValueId(1), ValueId(2)]);
/// assert!(!Op::Barrier.is_pure());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Op {
    /// A constant.
    Const(Lit),
    /// The scalar kernel parameter with this parameter index.
    Param(u32),
    /// A special register.
    Special(SpecialReg),
    /// A unary operation.
    Unary(UnOp, ValueId),
    /// A binary operation.
    Binary(BinOp, ValueId, ValueId),
    /// `a * b + c`, one rounding for floats (`fma.rn`), `mad.lo` for integers.
    Fma(ValueId, ValueId, ValueId),
    /// A comparison giving `pred`.
    Cmp(CmpOp, ValueId, ValueId),
    /// `cond ? a : b` (`selp`).
    Select(ValueId, ValueId, ValueId),
    /// Conversion to the result type: float→int truncates toward zero and saturates (`cvt.rzi`),
    /// int→float and float→float round to nearest even, int→int wraps or sign-extends.
    Cvt(ValueId),
    /// Two f32 values rounded (to nearest even) to a 16-bit float type (F16 or BF16) and packed
    /// into one 32-bit result (`U32`): the first in the low half, the second in the high half
    /// (`cvt.rn.{f16x2,bf16x2}.f32`). The form wgmma's register A fragment is read in.
    CvtPack(ScalarType, ValueId, ValueId),
    /// One op on two pairs of 16-bit floats as one packed instruction (`max.bf16x2`,
    /// `min.f16x2`): operands `[a0, a1, b0, b1]` (all F16 or all BF16), results
    /// `(a0 op b0, a1 op b1)`. `Max` and `Min` only: the result is one of the operands (or the
    /// canonical NaN `0x7fff` where either is NaN: `max.NaN.bf16x2`), so it is exact in the
    /// element type. Where `a0, a1` are the halves of one loaded word, the pair
    /// costs one instruction on the GPU instead of four (two widenings, two f32 ops).
    BinaryPair(BinOp, [ValueId; 4]),
    /// A vector load of `width` consecutive elements at element offset `offset`; one result per
    /// element. With a mask, lanes whose mask is false load nothing and get `fill` (the bits of
    /// one element: 0 gives zeros, `0xFF80` a bf16 −∞). The GPU writes the fill into the
    /// registers before the predicated load, so a masked load with a fill costs no select.
    Load {
        /// The memory.
        mem: MemRef,
        /// Element offset (an integer value).
        offset: ValueId,
        /// Elements (1, 2, 4 or 8, at most 16 bytes).
        width: u8,
        /// Optional predicate.
        mask: Option<ValueId>,
        /// The bits every element gets where the mask is false.
        fill: u64,
    },
    /// A vector store of `values` at element offset `offset`; nothing where the mask is false.
    Store {
        /// The memory.
        mem: MemRef,
        /// Element offset.
        offset: ValueId,
        /// The elements (1, 2, 4 or 8, at most 16 bytes).
        values: Vec<ValueId>,
        /// Optional predicate.
        mask: Option<ValueId>,
    },
    /// `bar.sync 0`: every thread of the block waits here; shared-memory writes before it are
    /// visible after it.
    Barrier,
    /// `barrier.cluster.arrive` + `barrier.cluster.wait`: every thread of every block of the
    /// cluster waits here; shared-memory writes before it (in any block of the cluster) are
    /// visible after it to [`Op::LoadCluster`] of the other blocks. A block must not exit while
    /// another block may still read its shared memory, so a kernel that reads other blocks'
    /// shared memory ends with one.
    ClusterBarrier,
    /// `barrier.cluster.arrive` alone (release): the first half of a split
    /// [`Op::ClusterBarrier`]. This thread's earlier accesses (its reads of other blocks'
    /// shared memory included) happen before the return of every thread's next
    /// [`Op::ClusterWait`]; the thread goes on without waiting. Every thread of the cluster
    /// arrives once before it waits, and waits once before it arrives again.
    ClusterArrive,
    /// `barrier.cluster.wait` (acquire): waits until every thread of the cluster has arrived
    /// ([`Op::ClusterArrive`]) in the generation this thread arrived in.
    ClusterWait,
    /// A vector load of `width` consecutive elements at element offset `offset` of the shared
    /// allocation `mem` **of the cluster's block with rank `cta`** (distributed shared memory:
    /// `mapa.shared::cluster` + `ld.shared::cluster`); one result per element.
    LoadCluster {
        /// The shared allocation (its offset in every block of the cluster).
        mem: MemRef,
        /// The rank of the block whose shared memory is read (`u32`/`i32`, `0..cluster size`).
        cta: ValueId,
        /// Element offset (an integer value).
        offset: ValueId,
        /// Elements (1, 2, 4 or 8, at most 16 bytes).
        width: u8,
    },
    /// `atom.{relaxed,release}.gpu.global.add.u32` (or, with `wrap`, `.inc.u32`): adds `value` to the `u32` at element
    /// `offset` of a global buffer and returns the old value (one result). With `release`, this
    /// thread's earlier memory accesses are ordered before the add (a release at GPU scope): the
    /// publishing half of a counter that other blocks read with [`Op::LoadAcquire`].
    AtomicAdd {
        /// The global `u32` buffer.
        mem: MemRef,
        /// Element offset (an integer value).
        offset: ValueId,
        /// The `u32` added.
        value: ValueId,
        /// Release semantics (`atom.release.gpu`) instead of relaxed (`atom.relaxed.gpu`).
        release: bool,
        /// `atom.inc` instead of `atom.add`: `value` is the bound, the new value
        /// `old ≥ value ? 0 : old + 1` (a counter that returns to zero by itself after
        /// `value + 1` increments).
        wrap: bool,
    },
    /// `ld.acquire.gpu.global.u32`: the `u32` at element `offset` of a global buffer, with
    /// acquire semantics at GPU scope (this thread's later accesses are ordered after it).
    LoadAcquire {
        /// The global `u32` buffer.
        mem: MemRef,
        /// Element offset (an integer value).
        offset: ValueId,
    },
    /// Spins on `ld.acquire.gpu.global.u32` of element `offset` of a global `u32` buffer until
    /// the value is at least `target` (unsigned): how a block waits for a counter that other
    /// threads or blocks raise with a release [`Op::AtomicAdd`]. No results. With a nonzero
    /// `sleep_ns` each failed poll is followed by `nanosleep.u32 sleep_ns` (a backoff that
    /// frees the SM's issue slots and the L2 for co-resident blocks while this one waits).
    WaitAcquire {
        /// The global `u32` buffer.
        mem: MemRef,
        /// Element offset (an integer value).
        offset: ValueId,
        /// The `u32` value the counter must reach.
        target: ValueId,
        /// Nanoseconds to sleep after each failed poll (0: spin without sleeping).
        sleep_ns: u32,
    },
    /// `fence.acq_rel.gpu`: orders this thread's memory accesses before and after it at GPU scope.
    FenceGpu,
    /// `griddepcontrol.wait` (sm_90+): the thread waits until every prerequisite grid of a
    /// programmatic dependent launch has completed and its memory operations are performed and
    /// visible to this grid. Without such a launch (or on sm_80, where it is emitted as nothing)
    /// the previous grid is already complete and it returns at once. See
    /// [`crate::KernelBuilder::grid_dependency_wait`].
    GridDepWait,
    /// `griddepcontrol.launch_dependents` (sm_90+): a hint that the grid launched after this one
    /// as a programmatic dependent may be scheduled once every block of this grid has issued it
    /// or exited. Carries no memory ordering; repeats in a block have no further effect; no
    /// effect without a dependent. See [`crate::KernelBuilder::launch_dependents`].
    LaunchDependents,
    /// `mov.u64 %rd, %clock64` / `%globaltimer`: one `i64` result, the clock's raw 64-bit value.
    /// Not pure: two reads are two instructions, never merged, hoisted or moved across other
    /// side effects by the passes (ptxas may still schedule independent arithmetic around it).
    ///
    /// **The interpreter returns no time**: each execution of a clock instruction by a warp
    /// (or by the block, in lockstep) reads a counter of the unit being run (the block, or the
    /// cluster) and then increments it, so within a block the values are strictly increasing
    /// in the interpreter's execution order, start at 0 in every block, and say nothing about
    /// durations. What it is good for there: a timeline's *order*.
    Clock(Clock),
    /// An asynchronous operation: mbarriers, bulk copies, proxy fences, bulk groups (see
    /// [`crate::asyncop`]).
    Async(crate::asyncop::AsyncOp),
    /// A warpgroup matrix multiply-accumulate op: descriptors, `wgmma.mma_async`, fences and
    /// groups (see [`crate::wgmma`]).
    Wgmma(crate::wgmma::WgmmaOp),
    /// A note naming the tile operation the following instructions come from: no effect on
    /// execution; printed as a comment in the dump and in the PTX.
    Note(String),
    /// `shfl.sync.<mode>.b32` over the full warp: the value of another lane (32-bit types).
    Shfl {
        /// Where a lane reads from.
        mode: ShflMode,
        /// The value.
        value: ValueId,
        /// Source lane (`Idx`), delta (`Up`, `Down`) or xor mask (`Bfly`); a `u32`/`i32` value.
        lane: ValueId,
    },
    /// `vote.sync.<mode>` over the full warp.
    Vote(VoteMode, ValueId),
    /// `elect.sync` over the full warp: true in exactly one lane (the lowest) of each warp.
    Elect,
    /// `mma.sync.aligned.m16n8k16.row.col.f32.<ab>.<ab>.f32`: `d = a·b + c` for the warp.
    /// Operands are the lane's fragments (A: 8 values, B: 4, C: 4, unpacked), results D (4).
    Mma {
        /// The shape.
        shape: MmaShape,
        /// A fragment.
        a: Vec<ValueId>,
        /// B fragment.
        b: Vec<ValueId>,
        /// C fragment (accumulators).
        c: Vec<ValueId>,
    },
    /// `for (iv = lo; iv < hi; iv += step)` with loop-carried values. The body's args are
    /// `[iv, carried…]`, its yields the next carried values; the results are the carried
    /// values after the last iteration (`init` if it runs zero times).
    For {
        /// Lower bound.
        lo: ValueId,
        /// Exclusive upper bound.
        hi: ValueId,
        /// Step (positive).
        step: ValueId,
        /// Initial carried values.
        init: Vec<ValueId>,
        /// The body.
        body: Block,
    },
    /// `if cond { then } else { else_ }`; both blocks yield the results.
    If {
        /// The condition (`pred`).
        cond: ValueId,
        /// Taken when true.
        then: Block,
        /// Taken when false.
        else_: Block,
    },
}

impl Op {
    /// No side effects and no dependence on other threads or memory: can be CSE'd, hoisted or
    /// removed when unused.
    ///
    /// ```
    /// use tilekit_ir::{Op, ValueId};
    /// assert!(Op::Cvt(ValueId(0)).is_pure());
    /// ```
    pub fn is_pure(&self) -> bool {
        matches!(
            self,
            Op::Const(_)
                | Op::Param(_)
                | Op::Special(_)
                | Op::Unary(..)
                | Op::Binary(..)
                | Op::Fma(..)
                | Op::Cmp(..)
                | Op::Select(..)
                | Op::Cvt(_)
                | Op::CvtPack(..)
                | Op::BinaryPair(..)
        )
    }

    /// The values this op reads directly (not those read inside its blocks).
    ///
    /// ```
    /// use tilekit_ir::{Op, ValueId};
    /// assert_eq!(Op::Select(ValueId(0), ValueId(1), ValueId(2)).operands().len(), 3);
    /// ```
    pub fn operands(&self) -> Vec<ValueId> {
        match self {
            Op::Const(_)
            | Op::Param(_)
            | Op::Special(_)
            | Op::Barrier
            | Op::ClusterBarrier
            | Op::ClusterArrive
            | Op::ClusterWait
            | Op::Elect
            | Op::FenceGpu
            | Op::GridDepWait
            | Op::LaunchDependents
            | Op::Clock(_)
            | Op::Note(_) => vec![],
            Op::LoadCluster { cta, offset, .. } => vec![*cta, *offset],
            Op::AtomicAdd { offset, value, .. } => vec![*offset, *value],
            Op::LoadAcquire { offset, .. } => vec![*offset],
            Op::WaitAcquire { offset, target, .. } => vec![*offset, *target],
            Op::Async(a) => a.operands(),
            Op::Wgmma(w) => w.operands(),
            Op::Unary(_, a) | Op::Cvt(a) | Op::Vote(_, a) => vec![*a],
            Op::Binary(_, a, b) | Op::Cmp(_, a, b) | Op::CvtPack(_, a, b) => vec![*a, *b],
            Op::Fma(a, b, c) | Op::Select(a, b, c) => vec![*a, *b, *c],
            Op::BinaryPair(_, v) => v.to_vec(),
            Op::Load { offset, mask, .. } => std::iter::once(*offset).chain(*mask).collect(),
            Op::Store { offset, values, mask, .. } => {
                std::iter::once(*offset).chain(values.iter().copied()).chain(*mask).collect()
            }
            Op::Shfl { value, lane, .. } => vec![*value, *lane],
            Op::Mma { a, b, c, .. } => a.iter().chain(b).chain(c).copied().collect(),
            Op::For { lo, hi, step, init, .. } => {
                [*lo, *hi, *step].into_iter().chain(init.iter().copied()).collect()
            }
            Op::If { cond, .. } => vec![*cond],
        }
    }

    /// The blocks this op owns (loop body, if branches).
    ///
    /// ```
    /// use tilekit_ir::Op;
    /// assert!(Op::Barrier.blocks().is_empty());
    /// ```
    pub fn blocks(&self) -> Vec<&Block> {
        match self {
            Op::For { body, .. } => vec![body],
            Op::If { then, else_, .. } => vec![then, else_],
            _ => vec![],
        }
    }

    /// Mutable access to the blocks this op owns.
    ///
    /// ```
    /// use tilekit_ir::Op;
    /// assert!(Op::Barrier.blocks_mut().is_empty());
    /// ```
    pub fn blocks_mut(&mut self) -> Vec<&mut Block> {
        match self {
            Op::For { body, .. } => vec![body],
            Op::If { then, else_, .. } => vec![then, else_],
            _ => vec![],
        }
    }
}

/// One instruction: an op and the values it defines.
///
/// ```
/// use tilekit_ir::{Inst, Op, Lit, ValueId};
/// let i = Inst { results: vec![ValueId(0)], op: Op::Const(Lit::f32(1.0)) };
/// assert_eq!(i.results.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Inst {
    /// Defined values.
    pub results: Vec<ValueId>,
    /// The operation.
    pub op: Op,
}

/// A structured region: arguments, instructions, and the values it yields to its parent op.
///
/// ```
/// use tilekit_ir::Block;
/// let b = Block::default();
/// assert!(b.insts.is_empty() && b.yields.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Block {
    /// Values defined on entry (a loop's induction variable and carried values).
    pub args: Vec<ValueId>,
    /// The instructions, in order.
    pub insts: Vec<Inst>,
    /// Values passed to the parent op at the end of the block.
    pub yields: Vec<ValueId>,
}

impl Block {
    /// Visits every instruction of this block and of nested blocks, parents first.
    ///
    /// ```
    /// use tilekit_ir::{Block, Inst, Op};
    /// let b = Block { insts: vec![Inst { results: vec![], op: Op::Barrier }], ..Block::default() };
    /// let mut n = 0;
    /// b.walk(&mut |_| n += 1);
    /// assert_eq!(n, 1);
    /// ```
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Inst)) {
        for inst in &self.insts {
            f(inst);
            for b in inst.op.blocks() {
                b.walk(f);
            }
        }
    }
}

/// The element counts a vector memory access may have for an element type: powers of two, at
/// most 16 bytes, as PTX `.v1/.v2/.v4` (8 elements of a 16-bit type travel as 4 packed `.b32`).
///
/// ```
/// use tilekit_ir::{op::valid_vector_widths, ScalarType};
/// assert_eq!(valid_vector_widths(ScalarType::F32), vec![1, 2, 4]);
/// assert_eq!(valid_vector_widths(ScalarType::F16), vec![1, 2, 4, 8]);
/// assert_eq!(valid_vector_widths(ScalarType::F64), vec![1, 2]);
/// ```
pub fn valid_vector_widths(elem: ScalarType) -> Vec<usize> {
    [1usize, 2, 4, 8]
        .into_iter()
        .filter(|w| w * elem.size_bytes() <= 16 && (*w <= 4 || elem.size_bytes() == 2))
        .collect()
}
