//! `--dtype`: one spelling of the element types for every command.
//!
//! Every command with a `--dtype` parses it with a [`DtypeParser`]: the same names and aliases
//! everywhere (`f32` = `fp32`, `f16` = `fp16`, `bf16`; the layout commands also take `fp8`
//! and `f64` = `fp64`), listed by `--help`, and an unknown spelling is clap's usage error
//! (exit code 2) naming the value and the possible ones.
//!
//! ```text
//!   SPELLINGS (name, aliases, words)  ──►  kernel_dtype():  f32 f16 bf16           → ScalarType
//!                                     └─►  element_dtype(): f32 f16 bf16 fp8 f64   → render::Dtype
//! ```
//!
//! ```
//! use clap::Parser;
//! use tilekit_ir::ScalarType;
//! #[derive(Parser)]
//! struct Cmd {
//!     #[arg(long, value_parser = tilekit_cli::dtype::kernel_dtype())]
//!     dtype: ScalarType,
//! }
//! assert_eq!(Cmd::try_parse_from(["x", "--dtype", "fp16"]).unwrap().dtype, ScalarType::F16);
//! assert_eq!(Cmd::try_parse_from(["x", "--dtype", "f32"]).unwrap().dtype, ScalarType::F32);
//! assert!(Cmd::try_parse_from(["x", "--dtype", "fp8"]).is_err()); // kernels take f32, f16, bf16
//! ```

use std::ffi::OsStr;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use tilekit_ir::ScalarType;
use tilekit_tile::render::Dtype;

use crate::CliError;

/// One element type as written on the command line: its name, its aliases, and words for
/// `--help`.
type Spelling = (&'static str, &'static [&'static str], &'static str);

const F32: Spelling = ("f32", &["fp32"], "32-bit float (also fp32)");
const F16: Spelling = ("f16", &["fp16"], "16-bit IEEE float (also fp16)");
const BF16: Spelling = ("bf16", &[], "bfloat16");
const FP8: Spelling = ("fp8", &["f8"], "8-bit float (also f8)");
const F64: Spelling = ("f64", &["fp64"], "64-bit float (also fp64)");

/// A clap value parser for `--dtype` over a table of (spelling, value): accepts a name or one
/// of its aliases and returns the value; `--help` lists the names with their aliases.
///
/// ```
/// use tilekit_tile::render::Dtype;
/// let p = tilekit_cli::dtype::element_dtype();
/// assert_eq!(p.lookup("fp64"), Some(Dtype::F64));
/// assert_eq!(p.lookup("f32"), Some(Dtype::Fp32));
/// assert_eq!(p.lookup("int4"), None);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct DtypeParser<T: 'static> {
    table: &'static [(Spelling, T)],
}

impl<T: Copy> DtypeParser<T> {
    /// The value a spelling stands for, if it is one of the table's names or aliases.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// assert_eq!(tilekit_cli::dtype::kernel_dtype().lookup("fp32"), Some(ScalarType::F32));
    /// ```
    pub fn lookup(&self, spelling: &str) -> Option<T> {
        self.table
            .iter()
            .find(|((name, aliases, _), _)| *name == spelling || aliases.contains(&spelling))
            .map(|(_, v)| *v)
    }

    /// The names the table accepts (aliases left out), e.g. for messages.
    ///
    /// ```
    /// assert_eq!(tilekit_cli::dtype::kernel_dtype().names(), vec!["f32", "f16", "bf16"]);
    /// ```
    pub fn names(&self) -> Vec<&'static str> {
        self.table.iter().map(|((name, _, _), _)| *name).collect()
    }

    fn possible(&self) -> Vec<PossibleValue> {
        self.table
            .iter()
            .map(|((name, aliases, help), _)| {
                PossibleValue::new(*name).aliases(aliases.iter().copied()).help(*help)
            })
            .collect()
    }

    /// Parses a spelling outside clap (a command's own `Args` built in code), with the same
    /// table: an unknown spelling is a [`CliError::BadArgument`] for `--dtype`.
    ///
    /// ```
    /// let p = tilekit_cli::dtype::kernel_dtype();
    /// assert!(p.parse_str("fp16").is_ok());
    /// let e = p.parse_str("f64").unwrap_err().to_string();
    /// assert_eq!(e, "--dtype \"f64\" is invalid: one of f32 (fp32), f16 (fp16), bf16");
    /// ```
    pub fn parse_str(&self, spelling: &str) -> Result<T, CliError> {
        self.lookup(spelling).ok_or_else(|| CliError::BadArgument {
            flag: "--dtype".into(),
            value: spelling.into(),
            rule: format!("one of {}", self.describe()),
        })
    }

    /// `f32 (fp32), f16 (fp16), bf16`: the names with their aliases.
    fn describe(&self) -> String {
        let parts: Vec<String> = self
            .table
            .iter()
            .map(|((name, aliases, _), _)| {
                if aliases.is_empty() {
                    name.to_string()
                } else {
                    format!("{name} ({})", aliases.join(", "))
                }
            })
            .collect();
        parts.join(", ")
    }
}

impl<T: Copy + Send + Sync + 'static> TypedValueParser for DtypeParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        // clap's own parser checks the spelling, so that a bad one gets clap's usage error
        let text = PossibleValuesParser::new(self.possible()).parse_ref(cmd, arg, value)?;
        let ignore_case = arg.is_some_and(|a| a.is_ignore_case_set());
        let found =
            if ignore_case { self.lookup(&text.to_ascii_lowercase()) } else { self.lookup(&text) };
        found.ok_or_else(|| {
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("invalid --dtype {text:?}: one of {}\n", self.describe()),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.possible().into_iter()))
    }
}

const KERNEL_TABLE: &[(Spelling, ScalarType)] =
    &[(F32, ScalarType::F32), (F16, ScalarType::F16), (BF16, ScalarType::BF16)];

const ELEMENT_TABLE: &[(Spelling, Dtype)] = &[
    (F32, Dtype::Fp32),
    (F16, Dtype::Fp16),
    (BF16, Dtype::Bf16),
    (FP8, Dtype::Fp8),
    (F64, Dtype::F64),
];

/// `--dtype` of the kernel commands (`run`, `ptx`): `f32`/`fp32`, `f16`/`fp16`, `bf16`, as the
/// IR's [`ScalarType`].
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_cli::dtype::kernel_dtype().lookup("bf16"), Some(ScalarType::BF16));
/// ```
pub fn kernel_dtype() -> DtypeParser<ScalarType> {
    DtypeParser { table: KERNEL_TABLE }
}

/// `--dtype` of the layout commands (`show`, `banks`): the kernel spellings plus `fp8` and
/// `f64`/`fp64`, as the tile layer's [`Dtype`].
///
/// ```
/// use tilekit_tile::render::Dtype;
/// assert_eq!(tilekit_cli::dtype::element_dtype().lookup("fp16"), Some(Dtype::Fp16));
/// assert_eq!(tilekit_cli::dtype::element_dtype().lookup("f16"), Some(Dtype::Fp16));
/// ```
pub fn element_dtype() -> DtypeParser<Dtype> {
    DtypeParser { table: ELEMENT_TABLE }
}
