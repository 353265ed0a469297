//! Checker for `space_filling_curve` vector files (`sfc.json`).
//!
//! Each config is rebuilt from its own `tensor_lengths`, `dim_access_order`,
//! `scalars_per_access` and `snake_curved`, and every listed number is recomputed:
//!
//! ```text
//! config ──► SpaceFillingCurve::new ──► ndim, scalar_per_vector, access_lengths,
//!                                       ordered_access_lengths, num_access, step_first_to_last,
//!                                       accesses[i].{index, forward_step, backward_step}
//! ```
//!
//! A config with `num_access_compiles: false` is one the reference refuses (a length that is
//! not a multiple of its scalars). tilekit follows the design documents there, so such a config
//! is checked only for `access_lengths == ceil(tensor_lengths / scalars_per_access)` and for the
//! accesses (with their valid extents) covering every element exactly once. A config whose curve
//! cannot be built is one failure carrying the error message.

use std::path::Path;

use serde::Deserialize;
use tilekit_layout::SpaceFillingCurve;

use super::{parse, Tally};
use crate::CliError;

/// Largest tensor (in elements) whose coverage is checked by counting every element; larger
/// ones are checked structurally (see [`coverage`]).
const COUNT_LIMIT: i64 = 1 << 24;

#[derive(Debug, Deserialize)]
struct File {
    configs: Vec<Config>,
}

#[derive(Debug, Deserialize)]
struct Config {
    name: String,
    tensor_lengths: Vec<i64>,
    dim_access_order: Vec<i64>,
    scalars_per_access: Vec<i64>,
    snake_curved: bool,
    ndim: Option<i64>,
    scalar_per_vector: Option<i64>,
    access_lengths: Option<Vec<i64>>,
    ordered_access_lengths: Option<Vec<i64>>,
    num_access: Option<i64>,
    #[serde(default = "yes")]
    num_access_compiles: bool,
    step_first_to_last: Option<Vec<i64>>,
    #[serde(default)]
    accesses: Vec<AccessRecord>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
struct AccessRecord {
    i: i64,
    index: Vec<i64>,
    forward_step: Option<Vec<i64>>,
    backward_step: Option<Vec<i64>>,
}

/// Checks every config of an `sfc.json`-schema file; one tally entry per compared value.
///
/// Errors only when the file does not follow the schema; a config that cannot be built is
/// counted as a failure.
///
/// ```
/// use std::path::Path;
/// let text = r#"{"meta": {"category": "space_filling_curve"}, "configs": [{
///   "name": "1d", "tensor_lengths": [4], "dim_access_order": [0], "scalars_per_access": [2],
///   "snake_curved": true, "ndim": 1, "scalar_per_vector": 2, "access_lengths": [2],
///   "ordered_access_lengths": [2], "num_access": 2, "num_access_compiles": true,
///   "step_first_to_last": [2], "accesses": [
///     {"i": 0, "index": [0], "forward_step": [2], "backward_step": null},
///     {"i": 1, "index": [2], "forward_step": null, "backward_step": [-2]}]}]}"#;
/// let t = tilekit_cli::conformance::sfc::check(Path::new("x.json"), text).unwrap();
/// assert_eq!((t.passed, t.failed), (13, 0)); // 7 curve-wide numbers + 3 per access
/// ```
pub fn check(path: &Path, text: &str) -> Result<Tally, CliError> {
    let file: File = parse(path, text)?;
    let mut t = Tally::default();
    for c in &file.configs {
        check_config(path, c, &mut t);
    }
    Ok(t)
}

fn build(c: &Config) -> Result<SpaceFillingCurve, String> {
    let order = c
        .dim_access_order
        .iter()
        .enumerate()
        .map(|(k, &d)| {
            usize::try_from(d).map_err(|_| {
                format!(
                    "space_filling_curve: dim_access_order[{k}] = {d} is invalid: \
                     the order must be a permutation of 0..{}",
                    c.tensor_lengths.len()
                )
            })
        })
        .collect::<Result<Vec<usize>, String>>()?;
    SpaceFillingCurve::new(
        c.tensor_lengths.clone(),
        order,
        c.scalars_per_access.clone(),
        c.snake_curved,
    )
    .map_err(|e| e.to_string())
}

fn check_config(path: &Path, c: &Config, t: &mut Tally) {
    let name = c.name.as_str();
    let sfc = match build(c) {
        Ok(s) => s,
        Err(e) => {
            t.fail(name, format!("curve cannot be built: {e}"));
            return;
        }
    };
    if !c.num_access_compiles {
        let ceil: Vec<i64> = c
            .tensor_lengths
            .iter()
            .zip(&c.scalars_per_access)
            .map(|(l, s)| l / s + i64::from(l % s != 0))
            .collect();
        t.eq(name, "access_lengths (ceil)", &ceil[..], sfc.access_lengths());
        match coverage(&sfc) {
            Ok(()) => t.check(name, "every element covered exactly once", true),
            Err(why) => t.fail(name, format!("{}: coverage: {why}", path.display())),
        }
        return;
    }

    let ndim = i64::try_from(sfc.ndim()).ok();
    opt_eq(t, name, "ndim", c.ndim.as_ref(), ndim.as_ref());
    opt_eq(
        t,
        name,
        "scalar_per_vector",
        c.scalar_per_vector.as_ref(),
        Some(&sfc.scalar_per_vector()),
    );
    opt_eq(t, name, "access_lengths", c.access_lengths.as_deref(), Some(sfc.access_lengths()));
    opt_eq(
        t,
        name,
        "ordered_access_lengths",
        c.ordered_access_lengths.as_deref(),
        Some(sfc.ordered_access_lengths()),
    );
    let n = sfc.num_access();
    t.eq(name, "num_access", &c.num_access, &Some(n));
    t.eq(name, "step_first_to_last", &c.step_first_to_last, &sfc.step_between(0, n - 1).ok());
    t.eq(name, "number of listed accesses", &Some(n), &i64::try_from(c.accesses.len()).ok());
    for a in &c.accesses {
        let item = format!("{name} access {}", a.i);
        match sfc.index(a.i) {
            Ok(idx) => t.eq(&item, "index", &a.index, &idx),
            Err(e) => t.fail(&item, format!("index: {e}")),
        }
        t.eq(&item, "forward_step", &a.forward_step, &sfc.forward_step(a.i));
        t.eq(&item, "backward_step", &a.backward_step, &sfc.backward_step(a.i));
    }
}

/// Compares a field that a file may omit (`null`/absent = not listed, so not checked).
fn opt_eq<T: PartialEq + std::fmt::Debug + ?Sized>(
    t: &mut Tally,
    item: &str,
    what: &str,
    expected: Option<&T>,
    got: Option<&T>,
) {
    if let Some(e) = expected {
        match got {
            Some(g) => t.eq(item, what, e, g),
            None => t.fail(item, format!("{what}: expected {e:?}, got nothing")),
        }
    }
}

/// Checks that the accesses of `sfc`, each with its valid extent, cover every element of the
/// tensor exactly once.
///
/// Up to [`COUNT_LIMIT`] elements every element is counted. Beyond that the check is
/// structural, in O(num_access): every access starts on a multiple of its scalars inside the
/// tensor with extent `min(scalars, length − start)`, and the starts are pairwise distinct and
/// `Π ceil(length / scalars)` in number — so the boxes are exactly the cells of the per-dim
/// partition `[0, s), [s, 2s), …` and tile the tensor once. Curves of more than
/// [`MAX_ENUMERATED`](super::schema::MAX_ENUMERATED) accesses are not walked (an error naming
/// the count).
fn coverage(sfc: &SpaceFillingCurve) -> Result<(), String> {
    let lengths = sfc.tensor_lengths();
    let scalars = sfc.scalars_per_access();
    if sfc.num_access() > super::schema::MAX_ENUMERATED {
        return Err(format!(
            "the curve has {} accesses; the checker walks at most {} per config",
            sfc.num_access(),
            super::schema::MAX_ENUMERATED
        ));
    }
    let total: i64 = lengths.iter().product(); // fits: checked by the constructor
    if total <= COUNT_LIMIT {
        let mut count = vec![0u8; usize::try_from(total).map_err(|e| e.to_string())?];
        for a in sfc.accesses() {
            for_each_in_box(&a.index, &a.extent, |e| {
                let lin = e.iter().zip(lengths).fold(0i64, |acc, (x, l)| acc * l + x);
                match usize::try_from(lin).ok().and_then(|k| count.get_mut(k)) {
                    Some(c) => {
                        *c = c.saturating_add(1);
                        Ok(())
                    }
                    None => Err(format!("access {} reaches {e:?}, outside {lengths:?}", a.i)),
                }
            })?;
        }
        return match count.iter().position(|&c| c != 1) {
            None => Ok(()),
            Some(k) => Err(format!("element #{k} (row-major) is covered {} times", count[k])),
        };
    }
    let mut starts = std::collections::HashSet::new();
    for a in sfc.accesses() {
        for d in 0..lengths.len() {
            let (s, e) = (a.index[d], a.extent[d]);
            if s < 0
                || s >= lengths[d]
                || s % scalars[d] != 0
                || e != scalars[d].min(lengths[d] - s)
            {
                return Err(format!(
                    "access {} has start {:?}, extent {:?}",
                    a.i, a.index, a.extent
                ));
            }
        }
        if !starts.insert(a.index.clone()) {
            return Err(format!("access {} repeats start {:?}", a.i, a.index));
        }
    }
    let cells: i64 =
        lengths.iter().zip(scalars).map(|(l, s)| l / s + i64::from(l % s != 0)).product();
    if i64::try_from(starts.len()).ok() == Some(cells) {
        Ok(())
    } else {
        Err(format!("{} distinct starts for {cells} cells", starts.len()))
    }
}

/// Calls `f` on every element of the box `start .. start + extent` (row-major).
fn for_each_in_box(
    start: &[i64],
    extent: &[i64],
    mut f: impl FnMut(&[i64]) -> Result<(), String>,
) -> Result<(), String> {
    if extent.iter().any(|&e| e <= 0) {
        return Ok(());
    }
    let mut e = start.to_vec();
    loop {
        f(&e)?;
        // row-major increment, last dim fastest
        let mut d = e.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            e[d] += 1;
            if e[d] < start[d] + extent[d] {
                break;
            }
            e[d] = start[d];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"{"meta": {"category": "space_filling_curve"}, "configs": ["#;

    fn run(configs: &str) -> Tally {
        check(Path::new("t.json"), &format!("{HEAD}{configs}]}}")).unwrap()
    }

    #[test]
    fn non_divisible_checks_ceil_and_coverage() {
        let t = run(r#"{"name": "nd", "tensor_lengths": [5, 7], "dim_access_order": [0, 1],
            "scalars_per_access": [2, 3], "snake_curved": false, "ndim": 2,
            "scalar_per_vector": 6, "access_lengths": [2, 2], "ordered_access_lengths": [2, 2],
            "num_access": null, "num_access_compiles": false, "step_first_to_last": null,
            "accesses": []}"#);
        assert_eq!((t.passed, t.failed), (2, 0), "{:?}", t.failures);
    }

    #[test]
    fn wrong_numbers_and_unbuildable_curves_fail() {
        let t = run(r#"{"name": "bad", "tensor_lengths": [4], "dim_access_order": [0],
            "scalars_per_access": [1], "snake_curved": false, "num_access": 5,
            "step_first_to_last": [3],
            "accesses": [{"i": 9, "index": [0], "forward_step": null, "backward_step": null}]},
            {"name": "order", "tensor_lengths": [4, 4], "dim_access_order": [0, -1],
            "scalars_per_access": [1, 1], "snake_curved": false},
            {"name": "zero", "tensor_lengths": [4, 0], "dim_access_order": [0, 1],
            "scalars_per_access": [1, 1], "snake_curved": false}"#);
        // num_access, listed count, access 9 index; forward/backward None == None pass
        assert_eq!(t.failed, 5, "{:?}", t.failures);
        assert!(t.failures.iter().any(|f| f.contains("num_access: expected Some(5), got Some(4)")));
        assert!(t.failures.iter().any(|f| f.starts_with("order: curve cannot be built")
            && f.contains("dim_access_order[1] = -1")));
        assert!(t.failures.iter().any(|f| f.contains("tensor_lengths[1] = 0 is invalid")));
    }

    #[test]
    fn structural_coverage_accepts_a_large_curve() {
        let sfc = SpaceFillingCurve::new(vec![4097, 4099], vec![1, 0], vec![64, 64], true).unwrap();
        assert_eq!(coverage(&sfc), Ok(()));
    }

    #[test]
    fn schema_errors_are_errors() {
        let e = check(Path::new("t.json"), r#"{"meta": {}, "configs": [{"name": 1}]}"#);
        assert!(matches!(e, Err(CliError::Json { .. })));
    }
}
