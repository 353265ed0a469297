//! Errors of the command-line tool.

use std::path::PathBuf;

/// Why a `tilekit` command could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A layout object could not be built.
    #[error(transparent)]
    Layout(#[from] tilekit_layout::LayoutError),
    /// A file could not be read or written.
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
    Ops(#[from] tilekit_ops::OpsError),
}
