//! Errors of the command-line tool, and the exit code each one gives.
//!
//! ```text
//!   exit 0  success (and a closed stdout pipe: the reader took what it wanted)
//!   exit 1  a check or a run failed: a FAIL, a GPU error, the interpreter's error, no usable
//!           GPU for a command that needs one, stdout or an output file not writable (a full
//!           disk), conformance vectors missing (no folder, or none of its files a vector file)
//!   exit 2  usage or input errors: clap's usage errors, a malformed value, an input file that
//!           cannot be read, a kernel or layout the library refuses for the input given
//! ```
//!
//! Reading and writing files are separate variants for that reason: [`CliError::Io`] is an
//! input the command cannot read (2), [`CliError::WriteFile`] an output it cannot write (1,
//! like [`CliError::Output`] for stdout).

use std::path::PathBuf;

use tilekit_ops::OpsError;

/// Why a `tilekit` command could not do its work.
///
/// ```
/// use tilekit_cli::CliError;
/// let e = CliError::NoGpu { command: "selftest".into(), reason: "no CUDA driver".into() };
/// assert_eq!(e.to_string(), "no usable GPU for `selftest`: no CUDA driver");
/// assert_eq!(e.exit_code(), 1);
/// ```
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A layout object could not be built.
    #[error(transparent)]
    Layout(#[from] tilekit_layout::LayoutError),
    /// An input file could not be read (exit code 2: an input error).
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A JSON file does not follow its schema.
    #[error("{path}: not a valid conformance file: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error (with line and column).
        source: serde_json::Error,
    },
    /// A command-line value is malformed.
    #[error("{flag} {value:?} is invalid: {rule}")]
    BadArgument {
        /// The flag.
        flag: String,
        /// The value given.
        value: String,
        /// What would be valid.
        rule: String,
    },
    /// A tile-layer object could not be built (e.g. an ill-formed encoding).
    #[error(transparent)]
    Tile(#[from] tilekit_tile::TileError),
    /// An encoding in the text form could not be parsed.
    #[error(transparent)]
    EncodingText(#[from] tilekit_tile::encoding_text::EncodingTextError),
    /// A kernel could not be built, run or checked.
    #[error(transparent)]
    Ops(#[from] OpsError),
    /// Standard output could not be written (a closed pipe, a full disk).
    #[error("writing to standard output: {0}")]
    Output(std::io::Error),
    /// An output file (`--svg`, `--json FILE`, …) could not be written (exit code 1, as for
    /// standard output).
    ///
    /// ```
    /// use tilekit_cli::CliError;
    /// let e = CliError::WriteFile {
    ///     path: "/dev/full".into(),
    ///     source: std::io::Error::new(std::io::ErrorKind::StorageFull, "no space"),
    /// };
    /// assert_eq!((e.to_string().as_str(), e.exit_code()), ("writing /dev/full: no space", 1));
    /// ```
    #[error("writing {}: {source}", .path.display())]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A kernel of the library could not be built, run or checked; `kernel` is the name the
    /// user typed (the library's message may name the module behind it).
    #[error("{}", kernel_message(.kernel, .source))]
    Kernel {
        /// The kernel as typed.
        kernel: String,
        /// What the library said.
        source: Box<OpsError>,
    },
    /// A kernel's IR could not be printed as PTX for the target asked for.
    #[error("{kernel}: PTX for {target}: {source}")]
    Emit {
        /// The kernel as typed.
        kernel: String,
        /// The target.
        target: String,
        /// What the PTX backend said.
        source: tilekit_ptx::PtxError,
    },
    /// A command that needs a GPU found none (no driver, no device).
    #[error("no usable GPU for `{command}`: {reason}")]
    NoGpu {
        /// The command, as typed (e.g. `run --backend gpu`).
        command: String,
        /// Why there is none.
        reason: String,
    },
    /// A GPU operation failed at run time (allocation, JIT, launch, copy).
    #[error("{what}: GPU error: {reason}")]
    Gpu {
        /// What was being done.
        what: String,
        /// The driver's message.
        reason: String,
    },
    /// A check of a result failed (a wrong kernel output).
    #[error("{what}: {why}")]
    Check {
        /// What was checked.
        what: String,
        /// How it failed.
        why: String,
    },
    /// The main job's conformance vectors are not where it looked.
    #[error(
        "conformance vectors not found: looked at {}; put the shared folder beside the \
         repository (../shared/conformance) or set TILEKIT_CONFORMANCE to the folder",
        .looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" and ")
    )]
    MissingVectors {
        /// The folders tried, in order.
        looked: Vec<PathBuf>,
    },
    /// The folder `tilekit conformance DIR` was given holds no conformance vectors: it cannot
    /// be listed, or none of its files is a vector file of a category this build checks
    /// (exit code 1, as for the main job's missing vectors).
    ///
    /// ```
    /// use tilekit_cli::CliError;
    /// let e = CliError::NoVectors { dir: "/nonexistent".into(), reason: "No such file or directory (os error 2)".into() };
    /// assert_eq!(e.to_string(), "conformance vectors not found in /nonexistent: No such file or directory (os error 2)");
    /// assert_eq!(e.exit_code(), 1);
    /// ```
    #[error("conformance vectors not found in {}: {reason}", .dir.display())]
    NoVectors {
        /// The folder given.
        dir: PathBuf,
        /// Why it holds none.
        reason: String,
    },
}

/// `kernel: message`, or the message alone when it already starts with the kernel's name.
fn kernel_message(kernel: &str, source: &OpsError) -> String {
    let msg = source.to_string();
    if msg.strip_prefix(kernel).is_some_and(|rest| rest.starts_with(':')) {
        msg
    } else {
        format!("{kernel}: {msg}")
    }
}

/// Whether a library error is a failed run (exit 1) rather than an input the library refuses
/// (exit 2).
fn ops_failed_run(e: &OpsError) -> bool {
    matches!(e, OpsError::Gpu(_) | OpsError::GpuUnavailable(_) | OpsError::Interp(_))
}

impl CliError {
    /// The process exit code for this error: 1 when a check or a run failed (see the module
    /// docs), 2 for usage and input errors.
    ///
    /// ```
    /// use tilekit_cli::CliError;
    /// use tilekit_ops::OpsError;
    /// let bad = CliError::BadArgument { flag: "--shape".into(), value: "4xq".into(), rule: "…".into() };
    /// assert_eq!(bad.exit_code(), 2);
    /// let gpu = CliError::kernel("copy", OpsError::Gpu("launch failed".into()));
    /// assert_eq!((gpu.exit_code(), gpu.to_string().as_str()), (1, "copy: GPU: launch failed"));
    /// let full = std::io::Error::new(std::io::ErrorKind::StorageFull, "full");
    /// assert_eq!(CliError::WriteFile { path: "a.svg".into(), source: full }.exit_code(), 1);
    /// let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "missing");
    /// assert_eq!(CliError::Io { path: "enc.json".into(), source: missing }.exit_code(), 2);
    /// let refused = CliError::kernel(
    ///     "permute021",
    ///     OpsError::invalid("permute", "shape", "[3, 4]", "needs 3 lengths"),
    /// );
    /// assert_eq!(refused.exit_code(), 2);
    /// assert_eq!(refused.to_string(), "permute021: permute: shape = [3, 4] is invalid: needs 3 lengths");
    /// ```
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Output(_)
            | CliError::WriteFile { .. }
            | CliError::NoVectors { .. }
            | CliError::NoGpu { .. }
            | CliError::Gpu { .. }
            | CliError::Check { .. }
            | CliError::MissingVectors { .. } => 1,
            CliError::Kernel { source, .. } if ops_failed_run(source) => 1,
            CliError::Ops(source) if ops_failed_run(source) => 1,
            _ => 2,
        }
    }

    /// Wraps a library error with the kernel name the user typed.
    ///
    /// ```
    /// let e = tilekit_cli::CliError::kernel("transpose", tilekit_ops::OpsError::invalid("transpose", "shape", "[3]", "needs 2 lengths"));
    /// assert_eq!(e.to_string(), "transpose: shape = [3] is invalid: needs 2 lengths");
    /// ```
    pub fn kernel(kernel: &str, source: OpsError) -> CliError {
        CliError::Kernel { kernel: kernel.to_string(), source: Box::new(source) }
    }
}
