//! Checker for `tile_distribution` files (`distributions.json`).
//!
//! Each distribution is rebuilt from its `encoding` alone. Every listed number is recomputed:
//! dimension counts and lengths, spans, the `detail` tables, the whole ps_ys_to_xs adaptor and
//! ys_to_d descriptor structures (transform by transform, hidden id by hidden id), ys_to_d,
//! the sweep order, and for every thread its origin, R index and the X of every Y.
//!
//! Encodings that tilekit refuses (the file may hold deliberately ill-formed ones) are checked
//! twice: the refusal must name a broken [`EncodingRule`],
//! and the reference's own numbers in the file must show the breakage — rebuilt with
//! [`TileDistribution::reference_unchecked`], they must match, and they must not cover every X
//! element exactly `Π R` times. `meta.compile_failures` must be refused with an error of the
//! kind the reference reports.
//!
//! Nothing is enumerated from the encoding's sizes alone: the file's lists (Ys, Ps, sweep order)
//! are compared with the row-major orders index by index after their counts agree, so an
//! encoding with billions of elements costs a count comparison, and only P and Y indices inside
//! their lengths are evaluated.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use tilekit_layout::{TensorAdaptor, TensorDescriptor};
use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding};
use tilekit_tile::error::EncodingRule;
use tilekit_tile::{TileDistribution, TileError};

use super::schema::{check_row_major, inside, AdaptorJson};
use super::{parse, Tally};
use crate::CliError;

#[derive(Debug, Deserialize)]
struct File {
    meta: Meta,
    distributions: Vec<DistJson>,
}

#[derive(Debug, Deserialize)]
struct Meta {
    #[serde(default)]
    compile_failures: Vec<CompileFailure>,
}

#[derive(Debug, Deserialize)]
struct CompileFailure {
    name: String,
    encoding: EncodingSpec,
    error: String,
}

#[derive(Debug, Deserialize)]
struct Detail {
    ys_lengths: Vec<i64>,
    ys_to_span_major: Vec<i64>,
    ys_to_span_minor: Vec<i64>,
    ndims_distributed_spans_minor: Vec<i64>,
    distributed_spans_lengthss_padded: Vec<Vec<i64>>,
    rhs_major_minor_to_ys_padded: Vec<Vec<i64>>,
    rh_major_minor_to_adaptor_hidden_idss: Vec<Vec<i64>>,
    does_p_own_r: Vec<Vec<i64>>,
    ps_over_rs_derivative: Vec<Vec<i64>>,
}

#[derive(Debug, Deserialize)]
struct YsToD {
    y: Vec<i64>,
    d: i64,
}

#[derive(Debug, Deserialize)]
struct PJson {
    p: Vec<i64>,
    x_origin: Vec<i64>,
    rs_index: Vec<i64>,
    xs: Vec<Vec<i64>>,
}

#[derive(Debug, Deserialize)]
struct DistJson {
    name: String,
    encoding: EncodingSpec,
    ndim_x: usize,
    ndim_p: usize,
    ndim_y: usize,
    ndim_r: usize,
    x_lengths: Vec<i64>,
    p_lengths: Vec<i64>,
    y_lengths: Vec<i64>,
    thread_buffer_size: i64,
    distributed_spans: Vec<Vec<i64>>,
    detail: Detail,
    ps_ys_to_xs_adaptor: AdaptorJson,
    ys_to_d_descriptor: AdaptorJson,
    ys_to_d: Vec<YsToD>,
    sweep_y_order: Vec<Vec<i64>>,
    ps: Vec<PJson>,
}

/// Checks every distribution and compile failure of a `tile_distribution` file.
pub fn check(path: &Path, text: &str) -> Result<Tally, CliError> {
    let file: File = parse(path, text)?;
    let mut t = Tally::default();
    for d in &file.distributions {
        match TileDistribution::from_spec(d.encoding.clone()) {
            Ok(dist) => check_one(d, &dist, &mut t),
            Err(e) => check_refused(d, &e, &mut t),
        }
    }
    for f in &file.meta.compile_failures {
        let item = format!("compile_failure {}", f.name);
        match TileDistributionEncoding::new(f.encoding.clone()) {
            Ok(_) => t.fail(&item, "the reference refuses this encoding but tilekit accepted it"),
            Err(e) => {
                let expected = expected_rule(&f.error);
                let got = rule_of(&e);
                match expected {
                    Some(r) => t.eq(&item, &format!("error rule ({e})"), &Some(r), &got),
                    None => {
                        t.check(&item, &format!("refused with a named rule ({e})"), got.is_some())
                    }
                }
            }
        }
    }
    Ok(t)
}

fn rule_of(e: &TileError) -> Option<EncodingRule> {
    match e {
        TileError::Encoding { rule, .. } => Some(*rule),
        _ => None,
    }
}

/// The rule tilekit must report for a reference compile error, from the error's words.
fn expected_rule(reference_error: &str) -> Option<EncodingRule> {
    let e = reference_error.to_lowercase();
    if e.contains("pointed to r") || e.contains("span_major = 0-1") || e.contains("y dim pointed") {
        Some(EncodingRule::NoYOnR)
    } else if e.contains("majors 0..") || e.contains("major") && e.contains("out of range") {
        Some(EncodingRule::MajorInRange)
    } else if e.contains("minor") && e.contains("out of range") {
        Some(EncodingRule::MinorInRange)
    } else {
        None
    }
}

fn padded<T: Clone>(rows: Vec<Vec<T>>, fill: T, min_width: usize) -> Vec<Vec<T>> {
    let w = rows.iter().map(Vec::len).max().unwrap_or(0).max(min_width);
    rows.into_iter()
        .map(|mut r| {
            r.resize(w, fill.clone());
            r
        })
        .collect()
}

fn check_structure(
    t: &mut Tally,
    item: &str,
    what: &str,
    file: &AdaptorJson,
    ours: &TensorAdaptor<i64>,
) {
    match file.to_adaptor() {
        Ok((theirs, mismatches)) => {
            for m in mismatches {
                t.fail(item, format!("{what}: {m}"));
            }
            t.eq(item, &format!("{what}.ndim_hidden"), &theirs.ndim_hidden(), &ours.ndim_hidden());
            t.eq(
                item,
                &format!("{what}.bottom_hidden_ids"),
                theirs.bottom_ids(),
                ours.bottom_ids(),
            );
            t.eq(item, &format!("{what}.top_hidden_ids"), theirs.top_ids(), ours.top_ids());
            t.eq(
                item,
                &format!("{what}.transforms count"),
                &theirs.stages().len(),
                &ours.stages().len(),
            );
            for (k, (a, b)) in theirs.stages().iter().zip(ours.stages()).enumerate() {
                t.eq(item, &format!("{what}.transforms[{k}]"), a, b);
            }
        }
        Err(e) => t.fail(item, format!("{what}: the file's structure does not build: {e}")),
    }
}

fn check_one(d: &DistJson, dist: &TileDistribution, t: &mut Tally) {
    let n = d.name.as_str();
    let e = dist.encoding();
    t.eq(n, "ndim_x", &d.ndim_x, &e.ndim_x());
    t.eq(n, "ndim_p", &d.ndim_p, &e.ndim_p());
    t.eq(n, "ndim_y", &d.ndim_y, &e.ndim_y());
    t.eq(n, "ndim_r", &d.ndim_r, &e.ndim_r());
    t.eq(n, "x_lengths", &d.x_lengths, &dist.x_lengths());
    t.eq(n, "p_lengths", &d.p_lengths, &dist.p_lengths());
    t.eq(n, "y_lengths", &d.y_lengths, &dist.y_lengths());
    t.eq(n, "thread_buffer_size", &d.thread_buffer_size, &dist.thread_buffer_size());
    t.eq(n, "distributed_spans", &d.distributed_spans, &dist.distributed_spans());

    let det = &d.detail;
    let as_i = |v: Vec<usize>| v.into_iter().map(|x| x as i64).collect::<Vec<i64>>();
    t.eq(n, "detail.ys_lengths", &det.ys_lengths, &e.ys_lengths());
    t.eq(n, "detail.ys_to_span_major", &det.ys_to_span_major, &as_i(e.ys_to_span_major()));
    t.eq(n, "detail.ys_to_span_minor", &det.ys_to_span_minor, &as_i(e.ys_to_span_minor()));
    t.eq(
        n,
        "detail.ndims_distributed_spans_minor",
        &det.ndims_distributed_spans_minor,
        &as_i(e.ndims_distributed_spans_minor()),
    );
    t.eq(
        n,
        "detail.distributed_spans_lengthss_padded",
        &det.distributed_spans_lengthss_padded,
        &padded(dist.distributed_spans(), -1, 1),
    );
    let counts = e.ndims_rhs_minor();
    let to_ys: Vec<Vec<i64>> = counts
        .iter()
        .enumerate()
        .map(|(ma, &c)| {
            (0..c)
                .map(|mi| {
                    e.y_of(tilekit_tile::encoding::Rh { major: ma, minor: mi })
                        .map_or(-1, |y| y as i64)
                })
                .collect()
        })
        .collect();
    t.eq(
        n,
        "detail.rhs_major_minor_to_ys_padded",
        &det.rhs_major_minor_to_ys_padded,
        &padded(to_ys, -1, 1),
    );
    let hidden: Vec<Vec<i64>> = dist.rh_hidden_ids().iter().map(|v| as_i(v.clone())).collect();
    t.eq(
        n,
        "detail.rh_major_minor_to_adaptor_hidden_idss",
        &det.rh_major_minor_to_adaptor_hidden_idss,
        &padded(hidden, -1, 1),
    );
    let own: Vec<Vec<i64>> =
        e.does_p_own_r().iter().map(|r| r.iter().map(|&b| i64::from(b)).collect()).collect();
    let (own, deriv) =
        if e.ndim_r() == 0 { (vec![], vec![]) } else { (own, e.ps_over_rs_derivative()) };
    t.eq(n, "detail.does_p_own_r", &det.does_p_own_r, &own);
    t.eq(n, "detail.ps_over_rs_derivative", &det.ps_over_rs_derivative, &deriv);

    check_structure(t, n, "ps_ys_to_xs_adaptor", &d.ps_ys_to_xs_adaptor, dist.ps_ys_to_xs());
    check_structure(
        t,
        n,
        "ys_to_d_descriptor",
        &d.ys_to_d_descriptor,
        dist.ys_to_d_descriptor().adaptor(),
    );

    let (y_lengths, p_lengths) = (dist.y_lengths(), dist.p_lengths());
    check_row_major(
        t,
        n,
        "ys_to_d enumerates every Y row-major",
        &y_lengths,
        d.ys_to_d.iter().map(|e| e.y.as_slice()),
    );
    // only Ys inside the Y lengths are evaluated (of the right rank: the unchecked paths are safe)
    let ys: Vec<&[i64]> =
        d.ys_to_d.iter().map(|e| e.y.as_slice()).filter(|y| inside(y, &y_lengths)).collect();
    for e in d.ys_to_d.iter().filter(|e| inside(&e.y, &y_lengths)) {
        t.eq(n, &format!("ys_to_d({:?})", e.y), &e.d, &dist.ys_to_d_unchecked(&e.y));
    }
    // the sweep visits every Y once: compared only when the file lists as many (so that its
    // size, not the encoding's, bounds the work)
    if i64::try_from(d.sweep_y_order.len()).ok() == Some(dist.thread_buffer_size()) {
        t.eq(n, "sweep_y_order", &d.sweep_y_order, &dist.sweep_order());
    } else {
        t.fail(
            n,
            format!(
                "sweep_y_order: the file lists {} Y indices, the thread buffer holds {}",
                d.sweep_y_order.len(),
                dist.thread_buffer_size()
            ),
        );
    }

    check_row_major(
        t,
        n,
        "ps enumerate every P row-major",
        &p_lengths,
        d.ps.iter().map(|p| p.p.as_slice()),
    );
    for p in &d.ps {
        let item = format!("{n} p {:?}", p.p);
        if !inside(&p.p, &p_lengths) {
            t.fail(&item, format!("p is outside the P lengths {p_lengths:?}: not evaluated"));
            continue;
        }
        let origin = dist.calculate_x_unchecked(&p.p, &vec![0; y_lengths.len()]);
        t.eq(&item, "x_origin", &p.x_origin, &origin);
        match dist.calculate_rs_index_from_ps_index(&p.p) {
            Ok(rs) => t.eq(&item, "rs_index", &p.rs_index, &rs),
            Err(e) => t.fail(&item, format!("rs_index: {e}")),
        }
        let xs: Vec<Vec<i64>> = ys.iter().map(|y| dist.calculate_x_unchecked(&p.p, y)).collect();
        t.eq(&item, "xs", &p.xs, &xs);
    }
}

/// A refused encoding: the refusal must name a rule, and the reference's numbers must both be
/// reproduced by the reference semantics and show that the encoding is not a distribution.
fn check_refused(d: &DistJson, err: &TileError, t: &mut Tally) {
    let n = d.name.as_str();
    t.check(n, &format!("refused with a named rule ({err})"), rule_of(err).is_some());
    let (adaptor, ys_to_d): (TensorAdaptor<i64>, TensorDescriptor<i64>) =
        match TileDistribution::reference_unchecked(&d.encoding) {
            Ok(x) => x,
            Err(e) => {
                return t.fail(n, format!("the reference semantics could not be rebuilt: {e}"))
            }
        };
    check_structure(t, n, "ps_ys_to_xs_adaptor", &d.ps_ys_to_xs_adaptor, &adaptor);
    check_structure(t, n, "ys_to_d_descriptor", &d.ys_to_d_descriptor, ys_to_d.adaptor());
    let mut owners: HashMap<Vec<i64>, i64> = HashMap::new();
    let top_lengths = adaptor.top_lengths();
    for p in &d.ps {
        let item = format!("{n} p {:?} (reference semantics)", p.p);
        let mut xs: Vec<Vec<i64>> = Vec::with_capacity(d.ys_to_d.len());
        for e in &d.ys_to_d {
            let top: Vec<i64> = p.p.iter().chain(&e.y).copied().collect();
            if !inside(&top, &top_lengths) {
                t.fail(
                    &item,
                    format!("(p, y) = {top:?} is outside {top_lengths:?}: not evaluated"),
                );
                continue;
            }
            xs.push(adaptor.calculate_bottom_index_unchecked(&top));
        }
        t.eq(&item, "xs", &p.xs, &xs);
        for x in &p.xs {
            *owners.entry(x.clone()).or_default() += 1;
        }
    }
    // proper iff every X element is held exactly Π R times: the file's holders are distinct X
    // indices, so count those inside the tile instead of enumerating the tile
    let r = tilekit_layout::idx::checked_product(&d.encoding.rs_lengths);
    let elements = tilekit_layout::idx::checked_product(&d.x_lengths);
    let inside_tile = owners.keys().filter(|x| inside(x, &d.x_lengths)).count();
    let proper = owners.values().all(|&c| Some(c) == r)
        && inside_tile == owners.len()
        && i64::try_from(inside_tile).ok() == elements;
    t.check(
        n,
        "the reference's own numbers show it is not a distribution (X coverage is not exactly Π R)",
        !proper,
    );
}
