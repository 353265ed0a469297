//! Typed run-time errors of the interpreter: each names the instruction (its dump text), the
//! memory and address, and the block and thread(s) involved.
//!
//! ```text
//!   shared-memory race on "tile" byte 12 (element 3) in block (0, 0, 0):
//!     thread (3, 0, 0) write by `st.shared.f32 tile[%4], %2`
//!     thread (5, 0, 0) read by `%7 = ld.shared.f32 tile[%6]`, with no barrier in between
//! ```

/// One side of a race.
///
/// ```
/// use tilekit_ir::interp::Access;
/// let a = Access { thread: [1, 0, 0], inst: "st.shared.f32 s[%1], %2".into(), write: true };
/// assert_eq!(a.to_string(), "thread (1, 0, 0) write by `st.shared.f32 s[%1], %2`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// Thread index in the block.
    pub thread: [u32; 3],
    /// The instruction's text.
    pub inst: String,
    /// Write (true) or read.
    pub write: bool,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y, z] = self.thread;
        let kind = if self.write { "write" } else { "read" };
        write!(f, "thread ({x}, {y}, {z}) {kind} by `{}`", self.inst)
    }
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpError {
    /// Wrong number of launch arguments.
    #[error("kernel {kernel} takes {expected} arguments, got {got}")]
    ArgCount {
        /// Kernel name.
        kernel: String,
        /// Parameters.
        expected: usize,
        /// Arguments.
        got: usize,
    },
    /// An argument does not match its parameter.
    #[error("argument {index} ({name}): expected {expected}, got {got}")]
    ArgMismatch {
        /// Position.
        index: usize,
        /// Parameter name.
        name: String,
        /// The parameter's kind.
        expected: String,
        /// What was passed.
        got: String,
    },
    /// A grid with a zero dimension.
    #[error("grid {grid:?} is invalid: every dimension must be >= 1")]
    Grid {
        /// The grid.
        grid: [u32; 3],
    },
    /// An access outside its memory.
    #[error("out-of-bounds {space} access to \"{mem}\" by `{inst}`: elements {element}..{end} but it has {len}, block {block:?} thread {thread:?}")]
    OutOfBounds {
        /// The instruction.
        inst: String,
        /// `"global"` or `"shared"`.
        space: String,
        /// Memory name.
        mem: String,
        /// First element accessed.
        element: i64,
        /// One past the last element accessed.
        end: i64,
        /// Elements in the memory.
        len: usize,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
    },
    /// A vector access not aligned to its size.
    #[error("misaligned {width}-element access to \"{mem}\" at element {element} by `{inst}` (the element offset must be a multiple of {width}), block {block:?} thread {thread:?}")]
    Misaligned {
        /// The instruction.
        inst: String,
        /// Memory name.
        mem: String,
        /// Element offset.
        element: i64,
        /// Vector width.
        width: usize,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
    },
    /// Two threads accessed one shared address, at least one writing, with no barrier between.
    #[error("shared-memory race on \"{mem}\" byte {byte} (element {element}) in block {block:?}: {first}, then {second}, with no barrier in between")]
    SharedRace {
        /// Allocation name.
        mem: String,
        /// Byte offset in the allocation.
        byte: usize,
        /// Element index.
        element: usize,
        /// Block index.
        block: [u32; 3],
        /// The earlier access.
        first: Box<Access>,
        /// The later access.
        second: Box<Access>,
    },
    /// Two blocks wrote the same global element.
    #[error("global write conflict on \"{mem}\" element {element}: written by blocks {first:?} and {second:?} (blocks run in any order)")]
    GlobalWriteConflict {
        /// Memory name.
        mem: String,
        /// Element.
        element: usize,
        /// One block.
        first: [u32; 3],
        /// The other block.
        second: [u32; 3],
    },
    /// A barrier reached by only part of the block.
    #[error("`{inst}` reached by only part of block {block:?}: thread {thread:?} is not there (barriers must be uniform)")]
    BarrierDivergence {
        /// The instruction.
        inst: String,
        /// Block index.
        block: [u32; 3],
        /// A thread that did not arrive.
        thread: [u32; 3],
    },
    /// A warp-collective op executed by only part of a warp.
    #[error("`{inst}` executed by only part of warp {warp} of block {block:?} (active lanes {active:#010x}); warp ops need every lane")]
    WarpDivergence {
        /// The instruction.
        inst: String,
        /// Block index.
        block: [u32; 3],
        /// Warp.
        warp: usize,
        /// Mask of active lanes.
        active: u32,
    },
    /// An uninitialised value (from unwritten shared memory or an inactive shuffle source) was
    /// used where it matters.
    #[error(
        "uninitialised value {value} used as {what} by `{inst}`, block {block:?} thread {thread:?}"
    )]
    Poison {
        /// The instruction.
        inst: String,
        /// The value.
        value: String,
        /// Its role (`"address"`, `"stored value"`, `"condition"`, …).
        what: String,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
    },
    /// Integer division by zero at run time.
    #[error("integer division by zero in `{inst}`, block {block:?} thread {thread:?}")]
    DivisionByZero {
        /// The instruction.
        inst: String,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
    },
    /// A loop step that is not positive.
    #[error("loop step {step} is not positive in `{inst}`, block {block:?} thread {thread:?}")]
    LoopStep {
        /// The instruction.
        inst: String,
        /// The step.
        step: i64,
        /// Block index.
        block: [u32; 3],
        /// Thread index.
        thread: [u32; 3],
    },
}
