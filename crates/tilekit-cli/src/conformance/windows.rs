//! Checker for `window_walks` files (`window_walks.json`).
//!
//! Each walk is rebuilt from its own fields: a naive row-major view (`tensor_lengths`,
//! `tensor_strides`, the guaranteed last-dim vector), `pad_tensor_view` to multiples of
//! `pad_to_multiple_of` (right pads on every dim), and a [`TileWindow`] of `window_lengths` at
//! `window_origin` with the entry's distribution (its `encoding` field, else by name from the
//! folder's `tile_distribution` files) and access curve (`snake_curved`). For an encoding tilekit
//! refuses, the refusal must name a rule and the walk is recomputed with the reference's own
//! adaptor ([`walk_with_adaptor`]).
//!
//! Compared: the padded lengths, the traits (`vector_dim_y`, `scalar_per_vector`, `num_access`),
//! the P enumeration, and every access of every thread (`i`, `y_start`, `x_in_window`,
//! `bottom_index`, `offset`, `valid`).

use std::path::Path;

use serde::Deserialize;
use tilekit_layout::TensorDescriptor;
use tilekit_tile::encoding::EncodingSpec;
use tilekit_tile::traits::{AccessCurve, LoadStoreTraits};
use tilekit_tile::view::{make_naive_tensor_view_with_guarantee, pad_tensor_view};
use tilekit_tile::window::{walk_with_adaptor, WindowAccess};
use tilekit_tile::TileWindow;

use super::schema::checked_count;
use super::schema::row_major;
use super::traits::{encodings_in, names_a_rule, parts_of, resolve_encoding};
use super::{parse, Tally};
use crate::CliError;

#[derive(Debug, Deserialize)]
struct File {
    walks: Vec<WalkJson>,
}

#[derive(Debug, Deserialize)]
struct AccessJson {
    i: i64,
    y_start: Vec<i64>,
    x_in_window: Vec<i64>,
    bottom_index: Vec<i64>,
    offset: i64,
    valid: bool,
}

#[derive(Debug, Deserialize)]
struct ThreadJson {
    p: Vec<i64>,
    accesses: Vec<AccessJson>,
}

#[derive(Debug, Deserialize)]
struct WalkJson {
    name: String,
    distribution: String,
    #[serde(default)]
    encoding: Option<EncodingSpec>,
    tensor_lengths: Vec<i64>,
    tensor_strides: Vec<i64>,
    guaranteed_last_dim_vector_length: i64,
    guaranteed_last_dim_vector_stride: i64,
    pad_to_multiple_of: Vec<i64>,
    padded_lengths: Vec<i64>,
    window_lengths: Vec<i64>,
    window_origin: Vec<i64>,
    vector_dim_y: usize,
    scalar_per_vector: i64,
    num_access: i64,
    snake_curved: bool,
    threads: Vec<ThreadJson>,
}

/// Per thread P index, its walk.
type Walks = Vec<(Vec<i64>, Vec<WindowAccess<i64>>)>;

fn walks_of(
    path: &Path,
    w: &WalkJson,
    spec: &EncodingSpec,
    t: &mut Tally,
) -> Result<Walks, String> {
    let desc = TensorDescriptor::naive(w.tensor_lengths.clone(), w.tensor_strides.clone(), None)
        .map_err(|e| format!("the tensor does not build: {e}"))?;
    // the view holds the tensor's element space: validated before anything is allocated
    let space = checked_count(
        path,
        &w.name,
        "the element space of tensor_lengths and tensor_strides",
        &[desc.element_space_size()],
    )
    .map_err(|e| e.to_string())?;
    let space = usize::try_from(space).map_err(|_| format!("element space {space}"))?;
    let data = vec![0f32; space];
    let guarantee =
        Some((w.guaranteed_last_dim_vector_length, w.guaranteed_last_dim_vector_stride));
    let view = make_naive_tensor_view_with_guarantee(
        &data[..],
        &w.tensor_lengths,
        &w.tensor_strides,
        guarantee,
    )
    .map_err(|e| format!("the view does not build: {e}"))?;
    let pads = vec![true; w.tensor_lengths.len()];
    let view = pad_tensor_view(view, &w.pad_to_multiple_of, &pads)
        .map_err(|e| format!("pad_tensor_view fails: {e}"))?;
    t.eq(&w.name, "padded_lengths", &w.padded_lengths, &view.lengths());
    let curve = if w.snake_curved { AccessCurve::Snake } else { AccessCurve::Linear };
    let (dist, (adaptor, ndim_p, ys_to_d, refusal)) =
        parts_of(spec).map_err(|e| format!("the distribution does not build: {e}"))?;
    // one walk per thread: the file lists them, so a thread count that differs is one failure
    // (and an encoding with billions of threads is never walked)
    let p_lengths: Vec<i64> = adaptor.top_lengths()[..ndim_p].to_vec();
    let threads = tilekit_layout::idx::checked_product(&p_lengths);
    if threads != i64::try_from(w.threads.len()).ok() {
        return Err(format!(
            "the file lists {} threads, the distribution's P lengths {p_lengths:?} make {}",
            w.threads.len(),
            threads.map_or_else(|| "more than i64".to_string(), |n| n.to_string())
        ));
    }
    let (traits, walks): (LoadStoreTraits, Walks) = match dist {
        Some(dist) => {
            let win =
                TileWindow::with_curve(view, &w.window_lengths, &w.window_origin, &dist, curve)
                    .map_err(|e| format!("the window does not build: {e}"))?;
            let mut walks = Vec::new();
            for p in win.thread_ps() {
                let walk = win.thread_walk(&p).map_err(|e| e.to_string())?;
                walks.push((p, walk));
            }
            (win.traits().clone(), walks)
        }
        None => {
            let r = refusal.as_ref().map(|r| r.to_string()).unwrap_or_default();
            t.check(
                &w.name,
                &format!("tilekit refuses the encoding with a named rule ({r})"),
                refusal.as_ref().is_some_and(names_a_rule),
            );
            let desc = view.descriptor();
            let traits = LoadStoreTraits::from_adaptor(
                &adaptor,
                ndim_p,
                &ys_to_d,
                desc.top_safe_vector_lengths_strides(),
                curve,
            )
            .map_err(|e| format!("the reference traits do not build: {e}"))?;
            let mut walks = Vec::new();
            for p in row_major(&p_lengths) {
                let walk = walk_with_adaptor(&adaptor, ndim_p, &traits, desc, &w.window_origin, &p)
                    .map_err(|e| e.to_string())?;
                walks.push((p, walk));
            }
            (traits, walks)
        }
    };
    t.eq(&w.name, "vector_dim_y", &w.vector_dim_y, &traits.vector_dim_y());
    t.eq(&w.name, "scalar_per_vector", &w.scalar_per_vector, &traits.scalar_per_vector());
    t.eq(&w.name, "num_access", &w.num_access, &traits.num_access());
    Ok(walks)
}

/// Checks every walk of a `window_walks` file.
pub fn check(path: &Path, text: &str) -> Result<Tally, CliError> {
    let file: File = parse(path, text)?;
    let known = encodings_in(path.parent().unwrap_or(Path::new(".")));
    let mut t = Tally::default();
    for w in &file.walks {
        let spec = match resolve_encoding(&w.encoding, &w.distribution, &known) {
            Ok(s) => s,
            Err(why) => {
                t.fail(&w.name, why);
                continue;
            }
        };
        let walks = match walks_of(path, w, &spec, &mut t) {
            Ok(x) => x,
            Err(why) => {
                t.fail(&w.name, why);
                continue;
            }
        };
        t.eq(
            &w.name,
            "threads enumerate every P row-major",
            &walks.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(),
            &w.threads.iter().map(|th| th.p.clone()).collect::<Vec<_>>(),
        );
        for (th, (_, got)) in w.threads.iter().zip(&walks) {
            let item = format!("{} p {:?}", w.name, th.p);
            t.eq(&item, "access count", &th.accesses.len(), &got.len());
            for (a, g) in th.accesses.iter().zip(got) {
                let at = format!("access {}", a.i);
                t.eq(&item, &format!("{at}.i"), &a.i, &g.i);
                t.eq(&item, &format!("{at}.y_start"), &a.y_start, &g.y_start);
                t.eq(&item, &format!("{at}.x_in_window"), &a.x_in_window, &g.x_in_window);
                t.eq(&item, &format!("{at}.bottom_index"), &a.bottom_index, &g.bottom_index);
                t.eq(&item, &format!("{at}.offset"), &a.offset, &g.offset);
                t.eq(&item, &format!("{at}.valid"), &a.valid, &g.valid);
            }
        }
    }
    Ok(t)
}
