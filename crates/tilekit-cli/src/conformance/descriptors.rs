//! Checker for `tensor_descriptor` files (`descriptors.json`).
//!
//! Each descriptor is rebuilt from the file's own `adaptor` structure and its guaranteed vector
//! arrays through tilekit-layout's constructors; then every listed number is recomputed:
//! shape, element space size (derived from the naive base of the chain where there is one),
//! top safe vector lengths/strides, every entry (offset, validity with and without bounds, the
//! whole hidden index) and every walk (incremental moves vs fresh coordinates).
//!
//! Sizes come from the file, so nothing is enumerated from them: the entries are compared with
//! the row-major order of `top_lengths` index by index (a count mismatch is one failure, even
//! for lengths that describe billions of indices), and only indices inside the tensor (walk
//! positions: within one length of it) are evaluated.

use std::path::Path;

use serde::Deserialize;
use tilekit_layout::transform::TransformKind;
use tilekit_layout::{Coordinate, TensorAdaptor, TensorDescriptor};

use super::schema::{check_row_major, checked_count, inside, AdaptorJson};
use super::{parse, Tally};
use crate::CliError;

#[derive(Debug, Deserialize)]
struct File {
    descriptors: Vec<DescriptorJson>,
}

#[derive(Debug, Deserialize)]
struct DescriptorJson {
    name: String,
    top_lengths: Vec<i64>,
    ndim_top: usize,
    ndim_hidden: usize,
    element_space_size: i64,
    guaranteed_vector_lengths: Vec<i64>,
    guaranteed_vector_strides: Vec<i64>,
    top_safe_vector_lengths: Vec<i64>,
    top_safe_vector_strides: Vec<i64>,
    adaptor: AdaptorJson,
    entries: Vec<EntryJson>,
    walks: Option<Vec<WalkJson>>,
}

#[derive(Debug, Deserialize)]
struct EntryJson {
    idx: Vec<i64>,
    offset: i64,
    valid: bool,
    valid_with_bounds: bool,
    hidden: Vec<i64>,
}

#[derive(Debug, Deserialize)]
struct WalkJson {
    start: Vec<i64>,
    steps: Vec<StepJson>,
}

#[derive(Debug, Deserialize)]
struct StepJson {
    step: Vec<i64>,
    to: Vec<i64>,
    moved_top: Vec<i64>,
    moved_offset: i64,
    moved_valid: bool,
    moved_hidden: Vec<i64>,
    fresh_offset: i64,
    fresh_hidden: Vec<i64>,
}

/// The element space size implied by the naive base of a descriptor chain: the stage that
/// writes the bottom (offset) dim is an embed (`1 + Σ (lenᵢ − 1)·coefᵢ`), an unmerge (product),
/// or an offset above one of those (the offset is not counted). `None` for any other base.
fn naive_base_space(a: &TensorAdaptor<i64>, id: usize) -> Option<i64> {
    // at most one step per stage: a malformed chain cannot recurse without end
    naive_base_space_within(a, id, a.stages().len())
}

fn naive_base_space_within(a: &TensorAdaptor<i64>, id: usize, steps: usize) -> Option<i64> {
    let steps = steps.checked_sub(1)?;
    let stage = a.stages().iter().find(|s| s.lower() == [id])?;
    match stage.transform().kind() {
        // checked: the constructors bound these, but the space adds one more term
        TransformKind::Embed { up_lengths, coefficients } => up_lengths
            .iter()
            .zip(coefficients)
            .try_fold(1i64, |acc, (l, c)| acc.checked_add(l.checked_sub(1)?.checked_mul(*c)?)),
        TransformKind::Unmerge { up_lengths } => tilekit_layout::idx::checked_product(up_lengths),
        TransformKind::Offset { .. } => naive_base_space_within(a, stage.upper()[0], steps),
        _ => None,
    }
}

/// Checks every descriptor of a `tensor_descriptor` file.
pub fn check(path: &Path, text: &str) -> Result<Tally, CliError> {
    let file: File = parse(path, text)?;
    let mut t = Tally::default();
    for d in &file.descriptors {
        check_one(path, d, &mut t);
    }
    Ok(t)
}

/// Whether a walk position is within one length of the tensor on every dim (walks may step a
/// little outside, e.g. into pads; far outside, i64 index math is not meaningful).
fn near(idx: &[i64], lengths: &[i64]) -> bool {
    idx.len() == lengths.len() && idx.iter().zip(lengths).all(|(&i, &l)| i >= -l && i / 2 < l)
}

fn check_one(path: &Path, d: &DescriptorJson, t: &mut Tally) {
    let name = d.name.as_str();
    let file = path.display();
    // sizes first: nothing below allocates in proportion to them, but an entry that describes
    // more indices than any conformance vector holds is refused by name
    if let Err(e) = checked_count(path, name, "top_lengths", &d.top_lengths) {
        return t.fail(name, e.to_string());
    }
    let (adaptor, mismatches) = match d.adaptor.to_adaptor() {
        Ok(x) => x,
        Err(e) => return t.fail(name, format!("could not build the adaptor: {e}")),
    };
    for m in mismatches {
        t.fail(name, m);
    }
    let Some(&bottom) = adaptor.bottom_ids().first() else {
        return t.fail(name, "the adaptor has no bottom dim (bottom_hidden_ids is empty)");
    };
    let space = naive_base_space(&adaptor, bottom);
    if let Some(s) = space {
        t.eq(name, "element_space_size", &d.element_space_size, &s);
    }
    let desc = match TensorDescriptor::from_parts(
        adaptor,
        space.unwrap_or(d.element_space_size),
        d.guaranteed_vector_lengths.clone(),
        d.guaranteed_vector_strides.clone(),
    ) {
        Ok(x) => x,
        Err(e) => return t.fail(name, format!("could not build the descriptor: {e}")),
    };
    t.eq(name, "ndim_top", &d.ndim_top, &desc.ndim());
    t.eq(name, "ndim_hidden", &d.ndim_hidden, &desc.adaptor().ndim_hidden());
    t.eq(name, "top_lengths", &d.top_lengths, &desc.lengths());
    let (sl, ss) = desc.top_safe_vector_lengths_strides();
    t.eq(name, "top_safe_vector_lengths", &d.top_safe_vector_lengths, &sl);
    t.eq(name, "top_safe_vector_strides", &d.top_safe_vector_strides, &ss);

    let lengths = desc.lengths();
    if let Err(e) = checked_count(path, name, "adaptor top lengths", &lengths) {
        return t.fail(name, e.to_string());
    }
    check_row_major(
        t,
        name,
        "entries enumerate every top index row-major",
        &lengths,
        d.entries.iter().map(|e| e.idx.as_slice()),
    );
    for e in &d.entries {
        let item = format!("{name} idx {:?}", e.idx);
        if !inside(&e.idx, &lengths) {
            t.fail(&item, format!("{file}: idx is outside top_lengths {lengths:?}: not evaluated"));
            continue;
        }
        // in range and of the descriptor's rank: the unchecked paths are safe
        let c = Coordinate::new_descriptor_unchecked(&desc, &e.idx);
        t.eq(&item, "offset", &e.offset, &desc.calculate_offset_unchecked(&e.idx));
        t.eq(&item, "coordinate offset", &e.offset, &c.offset());
        t.eq(&item, "valid", &e.valid, &desc.is_valid_assuming_top_valid_unchecked(&c));
        t.eq(&item, "valid_with_bounds", &e.valid_with_bounds, &desc.is_valid_unchecked(&c));
        t.eq(&item, "hidden", e.hidden.as_slice(), c.hidden());
    }
    for (w, walk) in d.walks.iter().flatten().enumerate() {
        if !near(&walk.start, &lengths) {
            t.fail(
                &format!("{name} walk {w}"),
                format!(
                    "{file}: start {:?} is far outside top_lengths {lengths:?}: not evaluated",
                    walk.start
                ),
            );
            continue;
        }
        let mut c = Coordinate::new_descriptor_unchecked(&desc, &walk.start);
        let mut at = walk.start.clone();
        for (k, s) in walk.steps.iter().enumerate() {
            let item = format!("{name} walk {w} step {k}");
            let next: Option<Vec<i64>> = (s.step.len() == at.len())
                .then(|| at.iter().zip(&s.step).map(|(a, b)| a.checked_add(*b)).collect())
                .flatten();
            match next {
                Some(n) if near(&n, &lengths) => at = n,
                _ => {
                    t.fail(
                        &item,
                        format!(
                            "{file}: step {:?} from {at:?} leaves the tensor (top_lengths \
                             {lengths:?}) by more than its length: the rest of the walk is \
                             not evaluated",
                            s.step
                        ),
                    );
                    break;
                }
            }
            t.eq(&item, "to", &s.to, &at);
            desc.move_coordinate_unchecked(&mut c, &s.step);
            t.eq(&item, "moved_top", &s.moved_top, &c.top());
            t.eq(&item, "moved_offset", &s.moved_offset, &c.offset());
            t.eq(
                &item,
                "moved_valid",
                &s.moved_valid,
                &desc.is_valid_assuming_top_valid_unchecked(&c),
            );
            t.eq(&item, "moved_hidden", s.moved_hidden.as_slice(), c.hidden());
            let fresh = Coordinate::new_descriptor_unchecked(&desc, &at);
            t.eq(&item, "fresh_offset", &s.fresh_offset, &fresh.offset());
            t.eq(&item, "fresh_hidden", s.fresh_hidden.as_slice(), fresh.hidden());
        }
    }
}
