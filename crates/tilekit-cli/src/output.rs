//! Writing to standard output without panicking.
//!
//! `println!` panics when stdout is a closed pipe (`tilekit sfc … | head -1`) or a full disk
//! (`tilekit morton > /dev/full`). Every command writes through [`outln!`](crate::outln) /
//! [`out!`](crate::out) instead, which return a [`CliError::Output`]; [`crate::main_entry`]
//! turns a broken pipe into a quiet exit 0 (the reader has all it wanted) and any other write
//! error into a message on stderr and exit code 1.
//!
//! ```text
//!   command ── outln!(…)? ──► stdout lock ── EPIPE ──► CliError::Output(BrokenPipe) ──► exit 0, silent
//!                                         └─ ENOSPC ─► CliError::Output(…)           ──► exit 1, stderr
//! ```

use std::fmt::Arguments;
use std::io::Write;

use crate::CliError;

/// Writes formatted text to stdout; a write error (closed pipe, full disk) becomes
/// [`CliError::Output`].
///
/// ```
/// tilekit_cli::output::write_stdout(format_args!("")).unwrap();
/// ```
pub fn write_stdout(args: Arguments<'_>) -> Result<(), CliError> {
    let mut lock = std::io::stdout().lock();
    lock.write_fmt(args).map_err(CliError::Output)
}

/// Writes formatted text to stderr, ignoring a failure (`eprintln!` would panic on a closed or
/// full stderr, and there is nowhere left to report it).
///
/// ```
/// tilekit_cli::output::write_stderr(format_args!(""));
/// ```
pub fn write_stderr(args: Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// Flushes stdout; a failure (full disk) becomes [`CliError::Output`].
///
/// ```
/// tilekit_cli::output::flush_stdout().unwrap();
/// ```
pub fn flush_stdout() -> Result<(), CliError> {
    std::io::stdout().flush().map_err(CliError::Output)
}

/// Writes `row` as one line of JSON (the `--json` output of the bench commands).
///
/// ```
/// tilekit_cli::output::json_line(&serde_json::json!({ "ratio": 0.5 })).unwrap();
/// ```
pub fn json_line<T: serde::Serialize>(row: &T) -> Result<(), CliError> {
    let line = serde_json::to_string(row)
        .map_err(|e| CliError::Check { what: "json".into(), why: e.to_string() })?;
    write_stdout(format_args!("{line}\n"))
}

/// A table cell for a figure that may be missing: `p` decimals, or `—`.
///
/// ```
/// use tilekit_cli::output::cell;
/// assert_eq!((cell(Some(0.91234), 3), cell(None, 1)), ("0.912".to_string(), "—".to_string()));
/// ```
pub fn cell(v: Option<f64>, p: usize) -> String {
    v.map_or("—".to_string(), |x| format!("{x:.p$}"))
}

/// `print!` that returns `Result<(), CliError>` instead of panicking.
///
/// ```
/// # fn f() -> Result<(), tilekit_cli::CliError> {
/// tilekit_cli::out!("{}", "")?;
/// # Ok(()) }
/// # f().unwrap();
/// ```
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!($($arg)*)) };
}

/// `println!` that returns `Result<(), CliError>` instead of panicking.
///
/// ```
/// # fn f() -> Result<(), tilekit_cli::CliError> {
/// tilekit_cli::outln!()?;
/// tilekit_cli::outln!("{} passed", 3)?;
/// # Ok(()) }
/// # f().unwrap();
/// ```
#[macro_export]
macro_rules! outln {
    () => { $crate::output::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}
