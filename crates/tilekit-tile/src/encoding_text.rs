//! A compact text form for tile distribution encodings, with a parser and a printer that
//! round-trip.
//!
//! The six template arguments of `tile_distribution_encoding` are hard to read because majors
//! and minors are split into separate lists. The text form writes each RH component as one token
//! instead, so a P list or a Y reads as the components it uses:
//!
//! ```text
//!   R[4] H[[8],[4,4]] P[[R0],[X0.0,X1.0]] Y[X1.1]
//!   │    │            │                   └ Y0 is component 1 of X1's H list
//!   │    │            └ P0 = merge(R0); P1 = merge(X0.H0, X1.H0), first listed slowest
//!   │    └ X0 = H(8), X1 = H(4, 4): one H list per X (its lengths, first slowest)
//!   └ R lengths (replication); the whole `R[…]` section is left out when there is no R
//!
//!   component tokens:  R<r>   = RH major 0, minor r      (an R component)
//!                      X<i>.<j> = RH major i+1, minor j  (H component j of X i)
//! ```
//!
//! Sections come in the order `R H P Y` (`R` optional); whitespace is free anywhere between
//! tokens. The text form is *syntax only*: it expresses every value of the JSON schema
//! ([`EncodingSpec`]), ill-formed ones included (two Ps on one component, out-of-range majors,
//! even negative numbers — `X-1.0` is major 0 written the long way and `X-2.0` is major −1), so
//! that broken encodings can be written, shown and explained. Validation is
//! [`TileDistributionEncoding::new`](crate::TileDistributionEncoding::new)'s job.
//!
//! ```
//! use tilekit_tile::encoding_text::{parse_encoding, print_encoding};
//! let spec = parse_encoding("H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]").unwrap();
//! assert_eq!(spec.ys_to_rhs_major, vec![1, 2]);
//! assert_eq!(print_encoding(&spec), "H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]");
//! ```
//!
//! Parse errors are typed ([`EncodingTextError`]): they give the column, the token found and
//! what would have been valid there.

use std::fmt::Write as _;

use crate::encoding::EncodingSpec;

/// Why a text could not be parsed as an encoding: at `column` (1-based, in characters) the
/// parser `found` a token where it `expected` something else.
///
/// ```
/// use tilekit_tile::encoding_text::parse_encoding;
/// let e = parse_encoding("H[[2,2],[4,4]] P[[X0.0],[Z1.0]] Y[X0.1,X1.1]").unwrap_err();
/// assert_eq!((e.column, e.found.as_str()), (26, "Z1.0"));
/// assert_eq!(
///     e.to_string(),
///     "encoding text, column 26: found `Z1.0`, expected a component: R<r> (R component r) or \
///      X<i>.<j> (H component j of X i), e.g. X0.1"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("encoding text, column {column}: found {}, expected {expected}", show_found(found))]
pub struct EncodingTextError {
    /// 1-based column (in characters) of the offending token.
    pub column: usize,
    /// The offending token (empty at the end of the text).
    pub found: String,
    /// What would have been valid at that point.
    pub expected: String,
}

fn show_found(found: &str) -> String {
    if found.is_empty() {
        "the end of the text".to_string()
    } else {
        format!("`{found}`")
    }
}

const COMPONENT: &str =
    "a component: R<r> (R component r) or X<i>.<j> (H component j of X i), e.g. X0.1";

/// Prints an encoding in the text form (see the [module documentation](self)); `R[…]` is left
/// out when there is no R.
///
/// ```
/// use tilekit_tile::encoding::EncodingSpec;
/// use tilekit_tile::encoding_text::print_encoding;
/// let spec = EncodingSpec { rs_lengths: vec![4], hs_lengthss: vec![vec![8], vec![4, 4]],
///     ps_to_rhss_major: vec![vec![0], vec![1, 2]], ps_to_rhss_minor: vec![vec![0], vec![0, 0]],
///     ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![1] };
/// assert_eq!(print_encoding(&spec), "R[4] H[[8],[4,4]] P[[R0],[X0.0,X1.0]] Y[X1.1]");
/// ```
pub fn print_encoding(spec: &EncodingSpec) -> String {
    fn ints(v: &[i64]) -> String {
        let items: Vec<String> = v.iter().map(i64::to_string).collect();
        format!("[{}]", items.join(","))
    }
    fn comps(majors: &[i64], minors: &[i64]) -> String {
        // unpaired entries (lists of different lengths) cannot be written as tokens; the parser
        // never produces them and the validator rejects them
        let items: Vec<String> =
            majors.iter().zip(minors).map(|(&ma, &mi)| component_name(ma, mi)).collect();
        format!("[{}]", items.join(","))
    }
    let mut out = String::new();
    if !spec.rs_lengths.is_empty() {
        let _ = write!(out, "R{} ", ints(&spec.rs_lengths));
    }
    let hs: Vec<String> = spec.hs_lengthss.iter().map(|h| ints(h)).collect();
    let _ = write!(out, "H[{}] ", hs.join(","));
    let ps: Vec<String> = spec
        .ps_to_rhss_major
        .iter()
        .zip(&spec.ps_to_rhss_minor)
        .map(|(ma, mi)| comps(ma, mi))
        .collect();
    let _ = write!(out, "P[{}] ", ps.join(","));
    let _ = write!(out, "Y{}", comps(&spec.ys_to_rhs_major, &spec.ys_to_rhs_minor));
    out
}

/// The token of one RH component: `R<minor>` for major 0, `X<major−1>.<minor>` otherwise.
///
/// ```
/// use tilekit_tile::encoding_text::component_name;
/// assert_eq!(component_name(0, 1), "R1");
/// assert_eq!(component_name(2, 0), "X1.0");
/// assert_eq!(component_name(-1, 0), "X-2.0");
/// ```
pub fn component_name(major: i64, minor: i64) -> String {
    if major == 0 {
        format!("R{minor}")
    } else {
        format!("X{}.{minor}", major as i128 - 1)
    }
}

/// Parses the text form (see the [module documentation](self)) into an unvalidated
/// [`EncodingSpec`].
///
/// ```
/// use tilekit_tile::encoding_text::parse_encoding;
/// let s = parse_encoding(" R[4]  H[[8], [4,4]]\n P[[R0], [X0.0, X1.0]] Y[X1.1] ").unwrap();
/// assert_eq!(s.rs_lengths, vec![4]);
/// assert_eq!((s.ps_to_rhss_major, s.ps_to_rhss_minor), (vec![vec![0], vec![1, 2]], vec![vec![0], vec![0, 0]]));
/// let e = parse_encoding("H[[2]] P[[X0.0]]").unwrap_err();
/// assert_eq!(e.to_string(), "encoding text, column 17: found the end of the text, expected the Y section `Y[...]`");
/// ```
pub fn parse_encoding(text: &str) -> Result<EncodingSpec, EncodingTextError> {
    let mut p = Parser { chars: text.chars().collect(), at: 0 };
    p.skip_ws();
    let rs_lengths = if p.peek() == Some('R') {
        p.at += 1;
        p.int_list()?
    } else {
        Vec::new()
    };
    p.section('H', "the H section `H[[...],...]` (or an R section `R[...]` before it)")?;
    let hs_lengthss = p.list(|p| p.int_list(), "an H list such as [2,2]")?;
    p.section('P', "the P section `P[[...],...]`")?;
    let ps = p.list(|p| p.comp_list(), "a P list such as [X0.0] or [R0,X1.0]")?;
    p.section('Y', "the Y section `Y[...]`")?;
    let ys = p.comp_list()?;
    p.skip_ws();
    if p.at < p.chars.len() {
        return Err(p.error("the end of the text (the Y section is the last)"));
    }
    Ok(EncodingSpec {
        rs_lengths,
        hs_lengthss,
        ps_to_rhss_major: ps.iter().map(|l| l.iter().map(|c| c.0).collect()).collect(),
        ps_to_rhss_minor: ps.iter().map(|l| l.iter().map(|c| c.1).collect()).collect(),
        ys_to_rhs_major: ys.iter().map(|c| c.0).collect(),
        ys_to_rhs_minor: ys.iter().map(|c| c.1).collect(),
    })
}

/// The range of i64 as i128 bounds.
const I64: (i128, i128) = (i64::MIN as i128, i64::MAX as i128);

struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    /// The token at the cursor: a run of alphanumerics (and `.`/`-`), or one other character.
    fn token(&self) -> String {
        let word = |c: &char| c.is_alphanumeric() || *c == '.' || *c == '-' || *c == '_';
        match self.peek() {
            None => String::new(),
            Some(c) if word(&c) => self.chars[self.at..].iter().take_while(|c| word(c)).collect(),
            Some(c) => c.to_string(),
        }
    }

    fn error(&self, expected: &str) -> EncodingTextError {
        EncodingTextError { column: self.at + 1, found: self.token(), expected: expected.into() }
    }

    fn expect(&mut self, c: char, expected: &str) -> Result<(), EncodingTextError> {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(expected))
        }
    }

    fn section(&mut self, name: char, expected: &str) -> Result<(), EncodingTextError> {
        self.expect(name, expected)
    }

    /// `[item, item, …]` (possibly empty).
    fn list<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<T, EncodingTextError>,
        what: &str,
    ) -> Result<Vec<T>, EncodingTextError> {
        self.expect('[', "`[`")?;
        let mut out = Vec::new();
        self.skip_ws();
        if self.peek() == Some(']') {
            self.at += 1;
            return Ok(out);
        }
        loop {
            self.skip_ws();
            if self.peek() == Some(']') || self.peek() == Some(',') {
                return Err(self.error(what));
            }
            out.push(item(self)?);
            self.skip_ws();
            match self.peek() {
                Some(',') => self.at += 1,
                Some(']') => {
                    self.at += 1;
                    return Ok(out);
                }
                _ => return Err(self.error(&format!("`,` or `]` after {what}"))),
            }
        }
    }

    /// An integer in `lo..=hi`.
    fn int(&mut self, what: &str, lo: i128, hi: i128) -> Result<i128, EncodingTextError> {
        self.skip_ws();
        let start = self.at;
        if self.peek() == Some('-') {
            self.at += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        let s: String = self.chars[start..self.at].iter().collect();
        match s.parse::<i128>() {
            Ok(v) if (lo..=hi).contains(&v) => Ok(v),
            _ => {
                self.at = start;
                Err(self.error(&format!("{what} (an integer that fits in i64)")))
            }
        }
    }

    fn int_list(&mut self) -> Result<Vec<i64>, EncodingTextError> {
        self.list(|p| p.int("a length", I64.0, I64.1).map(|v| v as i64), "a length")
    }

    fn comp(&mut self) -> Result<(i64, i64), EncodingTextError> {
        self.skip_ws();
        match self.peek() {
            Some('R') => {
                self.at += 1;
                let minor = self.int("the R minor after `R`", I64.0, I64.1)?;
                Ok((0, minor as i64))
            }
            Some('X') => {
                self.at += 1;
                // X i is major i + 1, so i ranges over i64::MIN − 1 ..= i64::MAX − 1
                let x = self.int("the X index after `X`", I64.0 - 1, I64.1 - 1)?;
                if self.peek() != Some('.') {
                    return Err(self.error("`.` and the H minor, as in X0.1"));
                }
                self.at += 1;
                let minor = self.int("the H minor after `.`", I64.0, I64.1)?;
                Ok(((x + 1) as i64, minor as i64))
            }
            _ => Err(self.error(COMPONENT)),
        }
    }

    fn comp_list(&mut self) -> Result<Vec<(i64, i64)>, EncodingTextError> {
        self.list(|p| p.comp(), COMPONENT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn err(text: &str) -> (usize, String, String) {
        let e = parse_encoding(text).unwrap_err();
        (e.column, e.found, e.expected)
    }

    #[test]
    fn errors_name_column_token_and_what_is_valid() {
        assert_eq!(
            err("P[[X0.0]]"),
            (
                1,
                "P".into(),
                "the H section `H[[...],...]` (or an R section `R[...]` before it)".into()
            )
        );
        assert_eq!(
            err("H[[2,x]] P[] Y[]"),
            (6, "x".into(), "a length (an integer that fits in i64)".into())
        );
        assert_eq!(
            err("H[[2] P[] Y[]"),
            (7, "P".into(), "`,` or `]` after an H list such as [2,2]".into())
        );
        assert_eq!(
            err("H[[2]] P[[X0]] Y[]"),
            (13, "]".into(), "`.` and the H minor, as in X0.1".into())
        );
        assert_eq!(err("H[[2]] P[[X0.0,]] Y[]"), (16, "]".into(), COMPONENT.into()));
        assert_eq!(
            err("H[[2]] P[] Y[] Z"),
            (16, "Z".into(), "the end of the text (the Y section is the last)".into())
        );
        assert_eq!(
            err("H[[99999999999999999999]] P[] Y[]"),
            (4, "99999999999999999999".into(), "a length (an integer that fits in i64)".into())
        );
    }

    #[test]
    fn empty_sections_and_odd_values_parse() {
        let s = parse_encoding("R[] H[] P[[]] Y[]").unwrap();
        assert_eq!(s.hs_lengthss, Vec::<Vec<i64>>::new());
        assert_eq!(s.ps_to_rhss_major, vec![Vec::<i64>::new()]);
        let s = parse_encoding("H[[-2]] P[[X-1.0,X5.-3]] Y[R7]").unwrap();
        assert_eq!(
            (s.ps_to_rhss_major[0].clone(), s.ps_to_rhss_minor[0].clone()),
            (vec![0, 6], vec![0, -3])
        );
        assert_eq!(print_encoding(&s), "H[[-2]] P[[R0,X5.-3]] Y[R7]");
    }

    fn spec_strategy() -> impl Strategy<Value = EncodingSpec> {
        let v = -3i64..40;
        let comps = prop::collection::vec((-2i64..5, -1i64..5), 0..4);
        (
            prop::collection::vec(v.clone(), 0..3),
            prop::collection::vec(prop::collection::vec(v, 0..4), 0..4),
            prop::collection::vec(comps.clone(), 0..3),
            comps,
        )
            .prop_map(|(rs, hs, ps, ys)| EncodingSpec {
                rs_lengths: rs,
                hs_lengthss: hs,
                ps_to_rhss_major: ps.iter().map(|l| l.iter().map(|c| c.0).collect()).collect(),
                ps_to_rhss_minor: ps.iter().map(|l| l.iter().map(|c| c.1).collect()).collect(),
                ys_to_rhs_major: ys.iter().map(|c| c.0).collect(),
                ys_to_rhs_minor: ys.iter().map(|c| c.1).collect(),
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn print_then_parse_is_the_identity(spec in spec_strategy()) {
            let text = print_encoding(&spec);
            prop_assert_eq!(parse_encoding(&text).unwrap(), spec);
        }
    }

    #[test]
    fn extreme_values_round_trip() {
        let spec = EncodingSpec {
            rs_lengths: vec![i64::MIN],
            hs_lengthss: vec![vec![i64::MAX]],
            ps_to_rhss_major: vec![vec![i64::MIN, i64::MAX]],
            ps_to_rhss_minor: vec![vec![i64::MIN, i64::MAX]],
            ys_to_rhs_major: vec![],
            ys_to_rhs_minor: vec![],
        };
        assert_eq!(parse_encoding(&print_encoding(&spec)).unwrap(), spec);
    }
}
