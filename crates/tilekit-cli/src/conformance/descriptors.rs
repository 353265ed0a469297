//! Checker for `tensor_descriptor` files (`descriptors.json`).
//!
//! Each descriptor is rebuilt from the file's own `adaptor` structure and its guaranteed vector
//! arrays through tilekit-layout's constructors; then every listed number is recomputed:
//! shape, element space size (derived from the naive base of the chain where there is one),
//! top safe vector lengths/strides, every entry (offset, validity with and without bounds, the
//! whole hidden index) and every walk (incremental moves vs fresh coordinates).

use std::path::Path;

use serde::Deserialize;
use tilekit_layout::transform::TransformKind;
use tilekit_layout::{Coordinate, TensorAdaptor, TensorDescriptor};

use super::schema::{row_major, AdaptorJson};
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
    let stage = a.stages().iter().find(|s| s.lower() == [id])?;
    match stage.transform().kind() {
        TransformKind::Embed { up_lengths, coefficients } => {
            Some(1 + up_lengths.iter().zip(coefficients).map(|(l, c)| (l - 1) * c).sum::<i64>())
        }
        TransformKind::Unmerge { up_lengths } => Some(up_lengths.iter().product()),
        TransformKind::Offset { .. } => naive_base_space(a, stage.upper()[0]),
        _ => None,
    }
}

/// Checks every descriptor of a `tensor_descriptor` file.
pub fn check(path: &Path, text: &str) -> Result<Tally, CliError> {
    let file: File = parse(path, text)?;
    let mut t = Tally::default();
    for d in &file.descriptors {
        check_one(d, &mut t);
    }
    Ok(t)
}

fn check_one(d: &DescriptorJson, t: &mut Tally) {
    let name = d.name.as_str();
    let (adaptor, mismatches) = match d.adaptor.to_adaptor() {
        Ok(x) => x,
        Err(e) => return t.fail(name, format!("could not build the adaptor: {e}")),
    };
    for m in mismatches {
        t.fail(name, m);
    }
    let space = naive_base_space(&adaptor, adaptor.bottom_ids()[0]);
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

    let all = row_major(&d.top_lengths);
    let listed: Vec<Vec<i64>> = d.entries.iter().map(|e| e.idx.clone()).collect();
    t.eq(name, "entries enumerate every top index row-major", &all, &listed);
    for e in &d.entries {
        let item = format!("{name} idx {:?}", e.idx);
        let c = Coordinate::new_descriptor(&desc, &e.idx);
        t.eq(&item, "offset", &e.offset, &desc.calculate_offset(&e.idx));
        t.eq(&item, "coordinate offset", &e.offset, &c.offset());
        t.eq(&item, "valid", &e.valid, &desc.is_valid_assuming_top_valid(&c));
        t.eq(&item, "valid_with_bounds", &e.valid_with_bounds, &desc.is_valid(&c));
        t.eq(&item, "hidden", e.hidden.as_slice(), c.hidden());
    }
    for (w, walk) in d.walks.iter().flatten().enumerate() {
        let mut c = Coordinate::new_descriptor(&desc, &walk.start);
        let mut at = walk.start.clone();
        for (k, s) in walk.steps.iter().enumerate() {
            let item = format!("{name} walk {w} step {k}");
            at = at.iter().zip(&s.step).map(|(a, b)| a + b).collect();
            t.eq(&item, "to", &s.to, &at);
            desc.move_coordinate(&mut c, &s.step);
            t.eq(&item, "moved_top", &s.moved_top, &c.top());
            t.eq(&item, "moved_offset", &s.moved_offset, &c.offset());
            t.eq(&item, "moved_valid", &s.moved_valid, &desc.is_valid_assuming_top_valid(&c));
            t.eq(&item, "moved_hidden", s.moved_hidden.as_slice(), c.hidden());
            let fresh = Coordinate::new_descriptor(&desc, &s.to);
            t.eq(&item, "fresh_offset", &s.fresh_offset, &fresh.offset());
            t.eq(&item, "fresh_hidden", s.fresh_hidden.as_slice(), fresh.hidden());
        }
    }
}
