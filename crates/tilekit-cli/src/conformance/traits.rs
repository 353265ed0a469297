//! Checker for `load_store_traits` files (`load_store_traits.json`).
//!
//! Each entry is rebuilt from its own fields: the distribution's encoding (from the entry's
//! `encoding` when it carries one, else by name from the `tile_distribution` files of the same
//! folder), and a naive view of rank NDimX whose last dim carries the entry's guaranteed vector
//! length and stride. For a well-formed encoding a [`TileWindow`] is made over that view, once
//! per access curve, and its traits are compared; for an encoding tilekit refuses (the file may
//! hold the reference's traits of ill-formed ones) the refusal must name a rule, and the traits
//! are recomputed from the reference's own adaptor ([`TileDistribution::reference_unchecked`]).
//!
//! Every number is compared: the view's top safe vectors, the Ys' safe vectors, Y lengths,
//! `vector_dim_y`, `scalar_per_vector`, `scalars_per_access`, `num_access`, and both access lists
//! (snake and no snake) access by access (`i`, `y_start`, `d_start`, `d_elems`, `forward_step`).

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use tilekit_layout::{TensorAdaptor, TensorDescriptor};
use tilekit_tile::encoding::EncodingSpec;
use tilekit_tile::traits::{AccessCurve, LoadStoreTraits, TraitsAccess};
use tilekit_tile::view::make_naive_tensor_view_with_guarantee;
use tilekit_tile::{TileDistribution, TileError, TileWindow};

use super::schema::checked_count;
use super::{parse, Tally};
use crate::CliError;

#[derive(Debug, Deserialize)]
struct File {
    traits: Vec<TraitsJson>,
}

#[derive(Debug, Deserialize)]
struct ViewJson {
    guaranteed_last_dim_vector_length: i64,
    guaranteed_last_dim_vector_stride: i64,
}

#[derive(Debug, Deserialize)]
struct AccessJson {
    i: i64,
    y_start: Vec<i64>,
    d_start: i64,
    d_elems: Vec<i64>,
    forward_step: Option<Vec<i64>>,
}

#[derive(Debug, Deserialize)]
struct TraitsJson {
    distribution: String,
    #[serde(default)]
    encoding: Option<EncodingSpec>,
    dtype: String,
    view: ViewJson,
    bottom_top_safe_vector_lengths: Vec<i64>,
    bottom_top_safe_vector_strides: Vec<i64>,
    ys_safe_vector_lengths: Vec<i64>,
    ys_safe_vector_strides: Vec<i64>,
    y_lengths: Vec<i64>,
    vector_dim_y: usize,
    scalar_per_vector: i64,
    scalars_per_access: Vec<i64>,
    num_access: i64,
    accesses_snake: Vec<AccessJson>,
    accesses_nosnake: Vec<AccessJson>,
}

#[derive(Debug, Deserialize)]
struct DistHead {
    category: String,
}

#[derive(Debug, Deserialize)]
struct NamedEncoding {
    name: String,
    encoding: EncodingSpec,
}

#[derive(Debug, Deserialize)]
struct DistFile {
    meta: DistHead,
    #[serde(default)]
    distributions: Vec<NamedEncoding>,
}

/// The encodings of every `tile_distribution` file in `dir`, by distribution name (files that do
/// not parse are left to their own checker).
pub fn encodings_in(dir: &Path) -> HashMap<String, EncodingSpec> {
    let mut out = HashMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        let Ok(file) = serde_json::from_str::<DistFile>(&text) else { continue };
        if file.meta.category == "tile_distribution" {
            for d in file.distributions {
                out.entry(d.name).or_insert(d.encoding);
            }
        }
    }
    out
}

/// The encoding an entry names: its own `encoding` field, else the folder's distribution of that
/// name; a description of what is missing otherwise.
pub fn resolve_encoding(
    own: &Option<EncodingSpec>,
    name: &str,
    known: &HashMap<String, EncodingSpec>,
) -> Result<EncodingSpec, String> {
    match own {
        Some(e) => Ok(e.clone()),
        None => known.get(name).cloned().ok_or_else(|| {
            format!(
                "distribution {name:?} is neither given in the entry (`encoding`) nor found in a \
                 tile_distribution file of the same folder"
            )
        }),
    }
}

/// The ps_ys_to_xs adaptor, its P count and ys_to_d descriptor of a distribution that tilekit
/// builds, or — for one it refuses — of the reference's semantics; with the refusal, if any.
pub type Parts = (TensorAdaptor<i64>, usize, TensorDescriptor<i64>, Option<TileError>);

/// Builds [`Parts`] for an encoding: `Ok((dist, parts))` when tilekit accepts it.
pub fn parts_of(spec: &EncodingSpec) -> Result<(Option<TileDistribution>, Parts), TileError> {
    match TileDistribution::from_spec(spec.clone()) {
        Ok(d) => {
            let parts = (
                d.ps_ys_to_xs().clone(),
                d.encoding().ndim_p(),
                d.ys_to_d_descriptor().clone(),
                None,
            );
            Ok((Some(d), parts))
        }
        Err(refusal) => {
            let (a, ys_to_d) = TileDistribution::reference_unchecked(spec)?;
            Ok((None, (a, spec.ps_to_rhss_major.len(), ys_to_d, Some(refusal))))
        }
    }
}

/// Whether a refusal names a broken encoding rule.
pub fn names_a_rule(e: &TileError) -> bool {
    matches!(e, TileError::Encoding { .. })
}

fn check_accesses(
    t: &mut Tally,
    item: &str,
    what: &str,
    want: &[AccessJson],
    got: &[TraitsAccess],
) {
    t.eq(item, &format!("{what} count"), &want.len(), &got.len());
    for (w, g) in want.iter().zip(got) {
        let at = format!("{what}[{}]", w.i);
        t.eq(item, &format!("{at}.i"), &w.i, &g.i);
        t.eq(item, &format!("{at}.y_start"), &w.y_start, &g.y_start);
        t.eq(item, &format!("{at}.d_start"), &w.d_start, &g.d_start);
        t.eq(item, &format!("{at}.d_elems"), &w.d_elems, &g.d_elems);
        t.eq(item, &format!("{at}.forward_step"), &w.forward_step, &g.forward_step);
    }
}

fn traits_of(
    path: &Path,
    e: &TraitsJson,
    spec: &EncodingSpec,
    curve: AccessCurve,
    t: &mut Tally,
    item: &str,
) -> Result<LoadStoreTraits, String> {
    // the view holds the whole tile: its size is validated before anything is allocated
    let mut x_lengths = Vec::with_capacity(spec.hs_lengthss.len());
    for (i, hs) in spec.hs_lengthss.iter().enumerate() {
        let field = format!("encoding.hs_lengthss[{i}]");
        x_lengths.push(checked_count(path, item, &field, hs).map_err(|e| e.to_string())?);
    }
    let space = checked_count(path, item, "the X lengths of the encoding", &x_lengths)
        .map_err(|e| e.to_string())?;
    let n = x_lengths.len();
    let mut strides = vec![1i64; n];
    for i in (0..n.saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * x_lengths[i + 1]; // fits: a suffix product of `space`
    }
    let guarantee =
        Some((e.view.guaranteed_last_dim_vector_length, e.view.guaranteed_last_dim_vector_stride));
    let data = vec![0f32; usize::try_from(space).map_err(|_| format!("X lengths {x_lengths:?}"))?];
    let view = make_naive_tensor_view_with_guarantee(&data[..], &x_lengths, &strides, guarantee)
        .map_err(|err| format!("the view does not build: {err}"))?;
    let (dist, (adaptor, ndim_p, ys_to_d, refusal)) =
        parts_of(spec).map_err(|err| format!("the distribution does not build: {err}"))?;
    match (dist, refusal) {
        (Some(dist), _) => {
            let origin = vec![0; n];
            let w = TileWindow::with_curve(view, &x_lengths, &origin, &dist, curve)
                .map_err(|err| format!("the window does not build: {err}"))?;
            Ok(w.traits().clone())
        }
        (None, refusal) => {
            if curve == AccessCurve::Linear {
                let r = refusal.as_ref().map(|r| r.to_string()).unwrap_or_default();
                t.check(
                    item,
                    &format!("tilekit refuses the encoding with a named rule ({r})"),
                    refusal.as_ref().is_some_and(names_a_rule),
                );
            }
            LoadStoreTraits::from_adaptor(
                &adaptor,
                ndim_p,
                &ys_to_d,
                view.descriptor().top_safe_vector_lengths_strides(),
                curve,
            )
            .map_err(|err| format!("the reference traits do not build: {err}"))
        }
    }
}

/// Checks every entry of a `load_store_traits` file.
pub fn check(path: &Path, text: &str) -> Result<Tally, CliError> {
    let file: File = parse(path, text)?;
    let known = encodings_in(path.parent().unwrap_or(Path::new(".")));
    let mut t = Tally::default();
    for e in &file.traits {
        let item = format!("{} {}", e.distribution, e.dtype);
        let spec = match resolve_encoding(&e.encoding, &e.distribution, &known) {
            Ok(s) => s,
            Err(why) => {
                t.fail(&item, why);
                continue;
            }
        };
        for (curve, want, what) in [
            (AccessCurve::Linear, &e.accesses_nosnake, "accesses_nosnake"),
            (AccessCurve::Snake, &e.accesses_snake, "accesses_snake"),
        ] {
            let tr = match traits_of(path, e, &spec, curve, &mut t, &item) {
                Ok(tr) => tr,
                Err(why) => {
                    t.fail(&item, format!("{what}: {why}"));
                    continue;
                }
            };
            if curve == AccessCurve::Linear {
                t.eq(
                    &item,
                    "bottom_top_safe_vector_lengths",
                    &e.bottom_top_safe_vector_lengths[..],
                    tr.bottom_top_safe_vector_lengths(),
                );
                t.eq(
                    &item,
                    "bottom_top_safe_vector_strides",
                    &e.bottom_top_safe_vector_strides[..],
                    tr.bottom_top_safe_vector_strides(),
                );
                t.eq(
                    &item,
                    "ys_safe_vector_lengths",
                    &e.ys_safe_vector_lengths[..],
                    tr.ys_safe_vector_lengths(),
                );
                t.eq(
                    &item,
                    "ys_safe_vector_strides",
                    &e.ys_safe_vector_strides[..],
                    tr.ys_safe_vector_strides(),
                );
                t.eq(&item, "y_lengths", &e.y_lengths[..], tr.y_lengths());
                t.eq(&item, "vector_dim_y", &e.vector_dim_y, &tr.vector_dim_y());
                t.eq(&item, "scalar_per_vector", &e.scalar_per_vector, &tr.scalar_per_vector());
                t.eq(
                    &item,
                    "scalars_per_access",
                    &e.scalars_per_access[..],
                    tr.scalars_per_access(),
                );
                t.eq(&item, "num_access", &e.num_access, &tr.num_access());
            }
            check_accesses(&mut t, &item, what, want, &tr.accesses());
        }
    }
    Ok(t)
}
