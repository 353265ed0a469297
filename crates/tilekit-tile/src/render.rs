//! Seeing layouts: an encoding explained in words, its ownership map as text, and as SVG.
//!
//! CK Tile users say nobody can read an R/H/P/Y encoding, and the reference silently accepts
//! broken ones. This module turns a distribution into three things a person can check:
//!
//! ```text
//!   explain(&dist)              ownership_map(&Ownership::of(&dist))    ownership_svg(&dist, Dtype::Fp32)
//!
//!   X0 = 4 = H[2, 2]: …         rows = X0, columns = X1                 ┌──────┬──────┬────
//!   P0 = 2 = merge(X0.H0)            0    1    2    3    4 …           │ 0  1  2  3 │ 0 1 …   one colour per
//!     X0.H0 length 2: +2 in X0  0  0:0  0:1  0:2  0:3  1:0 …           ├────────────┤          thread, d in each
//!   Y0 = X0.H1 …                1  0:4  0:5  0:6  0:7  1:4 …           │ 4  5  6  7 │ 4 5 …   cell, a bar around
//!   thread buffer: 8 values …   2  4:0  …                              └────────────┘          each vector access
//! ```
//!
//! * [`explain`] walks the encoding: each X with its H factorisation, each P with the components
//!   it merges (where they come from, their lengths, how far a step of the P moves in X), each Y
//!   (its X, length and stride), R replication, the thread-buffer size and the ys_to_d order,
//!   threads per block and how the row-major thread id is formed.
//! * [`Ownership`] evaluates the ps_ys_to_xs adaptor for every thread and every register `d`,
//!   and inverts it: for each X element, the `(thread, d)` pairs that hold it. Thread ids are
//!   row-major over P. [`Ownership::of_reference`] does the same with the **reference's**
//!   unchecked adaptor ([`TileDistribution::reference_unchecked`]), which is how broken encodings
//!   are shown: elements nobody owns, elements owned twice.
//! * [`ownership_map`] prints the map (2-D tiles as a grid, 1-D tiles wrapped in rows of
//!   [`WRAP_1D`], higher ranks as one 2-D slice per leading index); [`ownership_svg`] draws it,
//!   with the vector accesses of [`vector_access`] outlined.
//!
//! # Size limits
//!
//! Explaining an encoding ([`explain`], [`vector_access`]) costs time in proportion to the
//! encoding, never to the tile, so it works for any valid encoding (up to `i64` sizes: larger
//! ones are refused when the encoding is validated). What enumerates the tile is capped, and a
//! tile above a cap gets a note or a typed error, before anything is allocated:
//!
//! | what | cap |
//! |---|---|
//! | [`Ownership::of`], [`Ownership::of_reference`] (every `(thread, d)` evaluated) | [`OWNERSHIP_MAX`] elements and `(thread, d)` pairs (2^20) |
//! | [`ownership_map`] / [`ownership_map_of`] (the text map) | [`MAP_MAX_ELEMENTS`] elements (4096) and [`OWNERSHIP_MAX`] holders; larger tiles get a one-line note |
//! | [`ownership_svg`] (the picture) | [`SVG_MAX_ELEMENTS`] elements (65536, e.g. 256×256) |
//!
//! [`vector_access`] is the load/store traits rule of SEMANTICS §11 computed locally for a dtype
//! (a view of that dtype guarantees `16 / size_of(dtype)` contiguous elements on the last X;
//! propagated through ps_ys_to_xs to the Ys; VectorDimY = the first stride-1 Y with the largest
//! length > 1). It is kept in one function so it can be swapped for the shared
//! `LoadStoreTraits` type once that exists.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use tilekit_layout::TensorAdaptor;

use crate::encoding::{EncodingSpec, Rh};
use crate::encoding_text::print_encoding;
use crate::error::{Result, TileError};
use crate::svg::{num, Style, Svg};
use crate::TileDistribution;

/// 1-D tiles are printed and drawn in rows of this many elements.
pub const WRAP_1D: i64 = 32;

/// Largest number of X elements [`ownership_map`] prints (larger tiles get a one-line note; see
/// [`SVG_MAX_ELEMENTS`] for pictures).
pub const MAP_MAX_ELEMENTS: i64 = 4096;

/// Largest number of X elements [`ownership_svg`] draws (256×256; a picture of more cells is
/// tens of megabytes and unreadable). Larger tiles are a typed error.
pub const SVG_MAX_ELEMENTS: i64 = 1 << 16;

/// Largest tile [`Ownership`] evaluates: at most this many X elements and this many
/// `(thread, d)` pairs (threads × values per thread). Larger ones are a typed error, returned
/// before anything is allocated.
pub const OWNERSHIP_MAX: i64 = 1 << 20;

/// Largest number of threads drawn with one colour each; above it, colours go by P0 (warp) and
/// shades by the rest of the thread id.
pub const SVG_MAX_THREAD_COLOURS: i64 = 64;

/// Element types `show` knows: they only enter through the view's guaranteed vector length,
/// `16 / size_of(dtype)` (DESIGN.md).
///
/// ```
/// use tilekit_tile::render::Dtype;
/// let t: Dtype = "fp16".parse().unwrap();
/// assert_eq!((t, t.size_bytes(), t.name()), (Dtype::Fp16, 2, "fp16"));
/// assert_eq!(
///     "int4".parse::<Dtype>().unwrap_err().to_string(),
///     "dtype: name = \"int4\" is invalid: known dtypes are fp32, fp16, bf16, fp8, f64 (or fp64)"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// 32-bit float (4 bytes).
    Fp32,
    /// 16-bit float (2 bytes).
    Fp16,
    /// bfloat16 (2 bytes).
    Bf16,
    /// 8-bit float (1 byte).
    Fp8,
    /// 64-bit float (8 bytes).
    F64,
}

impl Dtype {
    /// Bytes per element.
    ///
    /// ```
    /// assert_eq!(tilekit_tile::render::Dtype::F64.size_bytes(), 8);
    /// ```
    pub fn size_bytes(self) -> i64 {
        match self {
            Dtype::Fp32 => 4,
            Dtype::Fp16 | Dtype::Bf16 => 2,
            Dtype::Fp8 => 1,
            Dtype::F64 => 8,
        }
    }

    /// The name as written on the command line.
    ///
    /// ```
    /// assert_eq!(tilekit_tile::render::Dtype::Bf16.name(), "bf16");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Fp16 => "fp16",
            Dtype::Bf16 => "bf16",
            Dtype::Fp8 => "fp8",
            Dtype::F64 => "f64",
        }
    }
}

impl std::str::FromStr for Dtype {
    type Err = TileError;

    /// Parses `fp32`, `fp16`, `bf16`, `fp8`, `f64` (or `fp64`).
    ///
    /// ```
    /// assert_eq!("fp64".parse::<tilekit_tile::render::Dtype>().unwrap().name(), "f64");
    /// ```
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "fp32" => Ok(Dtype::Fp32),
            "fp16" => Ok(Dtype::Fp16),
            "bf16" => Ok(Dtype::Bf16),
            "fp8" => Ok(Dtype::Fp8),
            "f64" | "fp64" => Ok(Dtype::F64),
            _ => Err(TileError::invalid(
                "dtype",
                "name",
                s,
                "known dtypes are fp32, fp16, bf16, fp8, f64 (or fp64)",
            )),
        }
    }
}

/// How a thread's values are moved in vectors for one dtype (the load/store traits of
/// SEMANTICS §11, computed by [`vector_access`]).
///
/// ```
/// use tilekit_tile::{TileDistribution, render::{vector_access, Dtype}};
/// let d = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding(
///     "H[[4,2],[2,8]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]").unwrap()).unwrap();
/// let v = vector_access(&d, Dtype::Fp16);
/// assert_eq!((v.vector_dim_y, v.scalar_per_vector, v.num_access), (1, 8, 2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorAccess {
    /// The element type.
    pub dtype: Dtype,
    /// Contiguous elements the view guarantees on the last X (`16 / size_of(dtype)`).
    pub guaranteed_length: i64,
    /// Per Y, the propagated guaranteed vector length (−1 = none).
    pub ys_vector_lengths: Vec<i64>,
    /// Per Y, the propagated guaranteed vector stride (−1 = none).
    pub ys_vector_strides: Vec<i64>,
    /// The Y that vectors run along (Y0 when nothing vectorises).
    pub vector_dim_y: usize,
    /// Elements per vector.
    pub scalar_per_vector: i64,
    /// Vector accesses per thread (`thread buffer size / scalar_per_vector`).
    pub num_access: i64,
}

/// The load/store traits rule of SEMANTICS §11 for a view of `dtype` whose last X is contiguous:
/// the view guarantees `16 / size_of(dtype)` elements with stride 1 on the last X (nothing on
/// the other Xs); those are propagated through the ps_ys_to_xs adaptor to the Ys; VectorDimY is
/// the first Y with stride 1 and the largest length > 1, else Y0 with width 1.
///
/// This is the one place `show` computes traits; it stands in for the shared `LoadStoreTraits`
/// type and can be swapped for it.
///
/// ```
/// use tilekit_tile::{TileDistribution, render::{vector_access, Dtype}};
/// use tilekit_tile::encoding_text::parse_encoding;
/// // gcd_demo_y6: the last H of X1 is 6, so vectors are gcd(4, 6) = gcd(8, 6) = 2 wide
/// let d = TileDistribution::from_spec(parse_encoding("H[[4,2],[2,6]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]").unwrap()).unwrap();
/// let v = vector_access(&d, Dtype::Fp32);
/// assert_eq!((v.ys_vector_lengths.clone(), v.ys_vector_strides.clone()), (vec![-1, 2], vec![-1, 1]));
/// assert_eq!((v.vector_dim_y, v.scalar_per_vector, v.num_access), (1, 2, 6));
/// assert_eq!(vector_access(&d, Dtype::Fp16).scalar_per_vector, 2);
/// ```
pub fn vector_access(dist: &TileDistribution, dtype: Dtype) -> VectorAccess {
    let a = dist.ps_ys_to_xs();
    let guaranteed_length = 16 / dtype.size_bytes();
    let mut gl = vec![-1; a.ndim_hidden()];
    let mut gs = vec![-1; a.ndim_hidden()];
    if let Some(&last_x) = a.bottom_ids().last() {
        gl[last_x] = guaranteed_length;
        gs[last_x] = 1;
    }
    let (l, s) = a.top_safe_vector_lengths_strides(&gl, &gs);
    let np = dist.encoding().ndim_p();
    let (ys_vector_lengths, ys_vector_strides) = (l[np..].to_vec(), s[np..].to_vec());
    let (mut vector_dim_y, mut scalar_per_vector) = (0, 1);
    for (i, (&len, &stride)) in ys_vector_lengths.iter().zip(&ys_vector_strides).enumerate() {
        if stride == 1 && len > scalar_per_vector {
            (vector_dim_y, scalar_per_vector) = (i, len);
        }
    }
    VectorAccess {
        dtype,
        guaranteed_length,
        ys_vector_lengths,
        ys_vector_strides,
        vector_dim_y,
        scalar_per_vector,
        num_access: dist.thread_buffer_size() / scalar_per_vector,
    }
}

/// The traits in words (three lines), as `tilekit show` prints them.
///
/// ```
/// use tilekit_tile::{TileDistribution, render::{explain_vector_access, vector_access, Dtype}};
/// let d = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding(
///     "H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]").unwrap()).unwrap();
/// let text = explain_vector_access(&vector_access(&d, Dtype::Fp32));
/// assert_eq!(text.lines().last().unwrap(),
///     "  vector dim Y1, 4 scalars per vector (16 bytes), 2 accesses per thread");
/// ```
pub fn explain_vector_access(v: &VectorAccess) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "traits for {} (the view guarantees {} contiguous elements = 16 bytes on the last X):",
        v.dtype.name(),
        v.guaranteed_length
    );
    let _ = writeln!(
        out,
        "  Y vector lengths {:?}, strides {:?} (propagated through ps_ys_to_xs; -1 = none)",
        v.ys_vector_lengths, v.ys_vector_strides
    );
    let _ = writeln!(
        out,
        "  vector dim Y{}, {} scalar{} per vector ({} bytes), {} access{} per thread",
        v.vector_dim_y,
        v.scalar_per_vector,
        if v.scalar_per_vector == 1 { "" } else { "s" },
        v.scalar_per_vector * v.dtype.size_bytes(),
        v.num_access,
        if v.num_access == 1 { "" } else { "es" }
    );
    out
}

fn cname(c: Rh) -> String {
    if c.major == 0 {
        format!("R{}", c.minor)
    } else {
        format!("X{}.H{}", c.major - 1, c.minor)
    }
}

fn times(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join("×")
}

/// `c0·i0 + c1·i1 + …` for a row-major index over `lengths` (last fastest).
fn row_major_formula(lengths: &[i64], var: &str) -> String {
    let mut terms = Vec::new();
    for i in 0..lengths.len() {
        let stride: i64 = lengths[i + 1..].iter().product();
        if lengths[i] == 1 {
            continue;
        }
        terms.push(if stride == 1 { format!("{var}{i}") } else { format!("{stride}·{var}{i}") });
    }
    if terms.is_empty() {
        "0".to_string()
    } else {
        terms.join(" + ")
    }
}

fn steps(n: i64, p: usize) -> String {
    if n == 1 {
        format!("per step of P{p}")
    } else {
        format!("every {n} steps of P{p}")
    }
}

/// The encoding explained in words: each X (length, H factorisation, who uses each H), each P
/// (the components it merges, first slowest, and how far each moves in X per step of the P),
/// each Y (its X, length, stride), R replication, the thread buffer and its ys_to_d order, and
/// threads per block with the row-major thread id.
///
/// ```
/// use tilekit_tile::{TileDistribution, render::explain};
/// let d = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding(
///     "R[4] H[[8],[4,4]] P[[R0],[X0.0,X1.0]] Y[X1.1]").unwrap()).unwrap();
/// let text = explain(&d);
/// assert!(text.contains("\n  P1 = 32 = merge(X0.H0, X1.H0), first slowest:\n    \
///     X0.H0  length 8: +1 in X0 every 4 steps of P1\n    X1.H0  length 4: +4 in X1 per step of P1\n"));
/// assert!(text.contains("\n    R0  length 4: replication, no X movement; P0 values 1 apart hold the same data\n"));
/// ```
pub fn explain(dist: &TileDistribution) -> String {
    let enc = dist.encoding();
    let spec = enc.spec();
    let (xl, pl, yl) = (dist.x_lengths(), dist.p_lengths(), dist.y_lengths());
    let mut out = String::new();
    let _ = writeln!(out, "encoding: {}", print_encoding(spec));
    let replication = replication(dist);
    let _ = writeln!(
        out,
        "tile {} over {} threads (P {}), {} values per thread (Y {}), {}",
        times(&xl),
        dist.num_threads(),
        times(&pl),
        dist.thread_buffer_size(),
        times(&yl),
        if replication == 1 {
            "each element held by one thread".to_string()
        } else {
            format!("each element held by {replication} threads (replication)")
        }
    );
    out.push('\n');

    // who uses each component
    let mut user: BTreeMap<Rh, String> = BTreeMap::new();
    for (p, list) in enc.ps().iter().enumerate() {
        for c in list {
            user.insert(*c, format!("P{p}"));
        }
    }
    for (y, c) in enc.ys().iter().enumerate() {
        user.insert(*c, format!("Y{y}"));
    }
    let h_stride = |c: Rh| -> i64 { spec.hs_lengthss[c.major - 1][c.minor + 1..].iter().product() };

    out.push_str("X (tile dims; each is its H components row-major, first slowest):\n");
    for (i, hs) in spec.hs_lengthss.iter().enumerate() {
        let parts: Vec<String> = (0..hs.len())
            .map(|j| {
                let c = Rh { major: i + 1, minor: j };
                format!(
                    "H{j} = {} (stride {}) → {}",
                    hs[j],
                    h_stride(c),
                    user.get(&c).map_or("unused", String::as_str)
                )
            })
            .collect();
        let _ = writeln!(out, "  X{i} = {} = H{hs:?}: {}", xl[i], parts.join("; "));
    }

    out.push_str("P (thread dims; each is the row-major merge of its components):\n");
    let derivative = enc.ps_over_rs_derivative();
    for (p, list) in enc.ps().iter().enumerate() {
        let names: Vec<String> = list.iter().map(|c| cname(*c)).collect();
        let _ = writeln!(
            out,
            "  P{p} = {} = merge({}){}",
            pl[p],
            names.join(", "),
            if list.len() > 1 { ", first slowest:" } else { ":" }
        );
        for (k, c) in list.iter().enumerate() {
            // components of a validated encoding are in range
            let per: i64 = list[k + 1..].iter().map(|c| enc.rh_length(*c).unwrap_or(1)).product();
            let len = enc.rh_length(*c).unwrap_or(1);
            if c.major == 0 {
                let _ = writeln!(
                    out,
                    "    R{}  length {len}: replication, no X movement; P{p} values {} apart hold the same data",
                    c.minor, derivative[p][c.minor]
                );
            } else {
                let _ = writeln!(
                    out,
                    "    {}  length {len}: +{} in X{} {}",
                    cname(*c),
                    h_stride(*c),
                    c.major - 1,
                    steps(per, p)
                );
            }
        }
    }

    out.push_str("Y (values held by each thread):\n");
    for (y, c) in enc.ys().iter().enumerate() {
        let _ = writeln!(
            out,
            "  Y{y} = {}  length {}: +{} in X{} per step",
            cname(*c),
            enc.rh_length(*c).unwrap_or(1),
            h_stride(*c),
            c.major - 1
        );
    }

    if spec.rs_lengths.is_empty() {
        out.push_str("R (replication): none\n");
    } else {
        let parts: Vec<String> = spec
            .rs_lengths
            .iter()
            .enumerate()
            .map(|(r, l)| {
                let c = Rh { major: 0, minor: r };
                match user.get(&c) {
                    Some(p) => format!("R{r} = {l} (in {p})"),
                    None => format!("R{r} = {l} (in no P: no replicas)"),
                }
            })
            .collect();
        let _ = writeln!(out, "R (replication): {}", parts.join(", "));
    }
    let _ = writeln!(
        out,
        "thread buffer: {} values; d = {} (ys_to_d: row-major in Y order, last Y fastest)",
        dist.thread_buffer_size(),
        row_major_formula(&yl, "y")
    );
    let _ = writeln!(
        out,
        "threads per block: {}; thread = {} (row-major over P)",
        dist.num_threads(),
        row_major_formula(&pl, "p")
    );
    out
}

/// How many threads hold each element: the product of the lengths of the R components that
/// some P uses.
fn replication(dist: &TileDistribution) -> i64 {
    let enc = dist.encoding();
    enc.ps()
        .iter()
        .flatten()
        .filter(|c| c.major == 0)
        .map(|c| enc.rh_length(*c).unwrap_or(1))
        .product()
}

/// One holder of an X element: a thread (row-major over P) and the index `d` in its buffer.
///
/// ```
/// use tilekit_tile::render::Owner;
/// let o = Owner { thread: 3, d: 5 };
/// assert_eq!((o.thread, o.d), (3, 5));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Owner {
    /// Row-major thread id over the P lengths.
    pub thread: i64,
    /// Index in the thread buffer (`ys_to_d`).
    pub d: i64,
}

/// The ownership map of a tile: for every X element (row-major), who holds it.
///
/// ```
/// use tilekit_tile::{TileDistribution, render::{Owner, Ownership}};
/// let d = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding(
///     "H[[2],[2]] P[[X0.0]] Y[X1.0]").unwrap()).unwrap();
/// let own = Ownership::of(&d).unwrap();
/// assert_eq!(own.owners_at(&[1, 0]), &[Owner { thread: 1, d: 0 }]);
/// assert!(own.never_owned().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    /// The tile shape.
    pub x_lengths: Vec<i64>,
    /// Threads per P dim.
    pub p_lengths: Vec<i64>,
    /// Values per Y dim.
    pub y_lengths: Vec<i64>,
    /// Per X element (row-major), its holders sorted by thread.
    pub owners: Vec<Vec<Owner>>,
    /// Holders the adaptor sent outside the tile (always empty for adaptors built from
    /// encodings whose components are in range).
    pub outside: Vec<(Owner, Vec<i64>)>,
}

/// `Err` when the ownership map of a tile is above [`OWNERSHIP_MAX`] (elements or
/// `(thread, d)` pairs), so that nothing is allocated for it.
fn check_ownership_size(x_lengths: &[i64], p_lengths: &[i64], y_lengths: &[i64]) -> Result<()> {
    use tilekit_layout::idx::checked_product;
    let elements = checked_product(x_lengths);
    let threads = checked_product(p_lengths);
    let values = checked_product(y_lengths);
    let pairs = threads.zip(values).and_then(|(t, v)| t.checked_mul(v));
    let fits = |n: Option<i64>| n.is_some_and(|n| n <= OWNERSHIP_MAX);
    if fits(elements) && fits(pairs) {
        return Ok(());
    }
    let show = |n: Option<i64>| n.map_or_else(|| "more than i64".to_string(), |n| n.to_string());
    Err(TileError::invalid(
        "ownership map",
        "tile",
        format!(
            "{} = {} elements, {} threads × {} values",
            times(x_lengths),
            show(elements),
            show(threads),
            show(values)
        ),
        format!("the map is evaluated for up to {OWNERSHIP_MAX} elements and (thread, d) pairs"),
    ))
}

fn digits(mut k: i64, lengths: &[i64]) -> Vec<i64> {
    let mut out = vec![0; lengths.len()];
    for i in (0..lengths.len()).rev() {
        out[i] = k % lengths[i];
        k /= lengths[i];
    }
    out
}

fn linear(idx: &[i64], lengths: &[i64]) -> i64 {
    idx.iter().zip(lengths).fold(0, |acc, (i, l)| acc * l + i)
}

impl Ownership {
    /// The map of a validated distribution.
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, render::Ownership};
    /// let d = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding(
    ///     "R[2] H[[2],[2]] P[[R0,X0.0]] Y[X1.0]").unwrap()).unwrap();
    /// let own = Ownership::of(&d).unwrap();
    /// // threads 1 and 3 differ only in R0: both hold row 1
    /// assert_eq!(own.owners_at(&[1, 1]).iter().map(|o| o.thread).collect::<Vec<_>>(), vec![1, 3]);
    /// // above OWNERSHIP_MAX the map is refused before anything is allocated
    /// let big = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding(
    ///     "H[[3000000000,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]").unwrap()).unwrap();
    /// assert_eq!(Ownership::of(&big).unwrap_err().to_string(),
    ///     "ownership map: tile = \"6000000000×16 = 96000000000 elements, 12000000000 threads × 8 values\" \
    ///      is invalid: the map is evaluated for up to 1048576 elements and (thread, d) pairs");
    /// ```
    pub fn of(dist: &TileDistribution) -> Result<Ownership> {
        check_ownership_size(&dist.x_lengths(), &dist.p_lengths(), &dist.y_lengths())?;
        Ok(Self::from_adaptor(
            dist.ps_ys_to_xs(),
            dist.x_lengths(),
            dist.p_lengths(),
            dist.y_lengths(),
        ))
    }

    /// The map the **reference** would produce for a spec whose majors and minors are in range
    /// but whose components are misused (SEMANTICS §8.4), through
    /// [`TileDistribution::reference_unchecked`].
    ///
    /// ```
    /// use tilekit_tile::render::Ownership;
    /// // two Ps on X0.H0: the lower-numbered P wins, X1.H0 stays 0
    /// let spec = tilekit_tile::encoding_text::parse_encoding("H[[2,2],[4,4]] P[[X0.0],[X0.0]] Y[X0.1,X1.1]").unwrap();
    /// let own = Ownership::of_reference(&spec).unwrap();
    /// assert_eq!(own.never_owned().len(), 48);
    /// assert_eq!(own.owners_at(&[0, 0]).len(), 2);
    /// ```
    pub fn of_reference(spec: &EncodingSpec) -> Result<Ownership> {
        let (a, desc) = TileDistribution::reference_unchecked(spec)?;
        let np = spec.ps_to_rhss_major.len();
        let top = a.top_lengths();
        // the adaptor's unmerges were built, so each X length fits in i64
        let x_lengths: Vec<i64> = spec.hs_lengthss.iter().map(|h| h.iter().product()).collect();
        let (p_lengths, y_lengths) = (top[..np].to_vec(), desc.lengths());
        check_ownership_size(&x_lengths, &p_lengths, &y_lengths)?;
        Ok(Self::from_adaptor(&a, x_lengths, p_lengths, y_lengths))
    }

    fn from_adaptor(
        a: &TensorAdaptor<i64>,
        x_lengths: Vec<i64>,
        p_lengths: Vec<i64>,
        y_lengths: Vec<i64>,
    ) -> Ownership {
        // sizes checked by `check_ownership_size`
        let nx_total: i64 = x_lengths.iter().product();
        let mut owners = vec![Vec::new(); nx_total.max(0) as usize];
        let mut outside = Vec::new();
        let threads: i64 = p_lengths.iter().product();
        let values: i64 = y_lengths.iter().product();
        for t in 0..threads {
            let p = digits(t, &p_lengths);
            for d in 0..values {
                let mut top = p.clone();
                top.extend(digits(d, &y_lengths));
                // top has one entry per P and per Y: the adaptor's top rank
                let x = a.calculate_bottom_index_unchecked(&top);
                let o = Owner { thread: t, d };
                if x.len() == x_lengths.len()
                    && x.iter().zip(&x_lengths).all(|(i, l)| 0 <= *i && i < l)
                {
                    owners[linear(&x, &x_lengths) as usize].push(o);
                } else {
                    outside.push((o, x));
                }
            }
        }
        Ownership { x_lengths, p_lengths, y_lengths, owners, outside }
    }

    /// The holders of one X element (empty when the index is outside the tile).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, render::Ownership};
    /// # let d = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding("H[[2],[2]] P[[X0.0]] Y[X1.0]").unwrap()).unwrap();
    /// let own = Ownership::of(&d).unwrap();
    /// assert_eq!(own.owners_at(&[0, 1])[0].d, 1);
    /// assert!(own.owners_at(&[2, 0]).is_empty());
    /// ```
    pub fn owners_at(&self, x: &[i64]) -> &[Owner] {
        if x.len() != self.x_lengths.len()
            || x.iter().zip(&self.x_lengths).any(|(i, l)| *i < 0 || i >= l)
        {
            return &[];
        }
        // `get`: the fields are public, so a map built by hand may disagree with its lengths
        usize::try_from(linear(x, &self.x_lengths))
            .ok()
            .and_then(|k| self.owners.get(k))
            .map_or(&[], Vec::as_slice)
    }

    /// The X index of the k-th element (row-major).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, render::Ownership};
    /// # let d = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding("H[[2],[2]] P[[X0.0]] Y[X1.0]").unwrap()).unwrap();
    /// assert_eq!(Ownership::of(&d).unwrap().x_index(3), vec![1, 1]);
    /// ```
    pub fn x_index(&self, k: i64) -> Vec<i64> {
        digits(k, &self.x_lengths)
    }

    /// Elements nobody holds (X indices, row-major order).
    ///
    /// ```
    /// # use tilekit_tile::render::Ownership;
    /// let spec = tilekit_tile::encoding_text::parse_encoding("H[[2,2],[4,4]] P[[X0.0],[X0.0]] Y[X0.1,X1.1]").unwrap();
    /// assert_eq!(Ownership::of_reference(&spec).unwrap().never_owned()[0], vec![0, 4]);
    /// ```
    pub fn never_owned(&self) -> Vec<Vec<i64>> {
        (0..self.owners.len() as i64)
            .filter(|&k| self.owners[k as usize].is_empty())
            .map(|k| self.x_index(k))
            .collect()
    }

    /// Elements held by more than `expected` holders, with their holders.
    ///
    /// ```
    /// # use tilekit_tile::render::Ownership;
    /// let spec = tilekit_tile::encoding_text::parse_encoding("H[[2,2],[4,4]] P[[X0.0],[X0.0]] Y[X0.1,X1.1]").unwrap();
    /// let twice = Ownership::of_reference(&spec).unwrap().owned_more_than(1);
    /// assert_eq!(twice.len(), 16);
    /// assert_eq!(twice[0].0, vec![0, 0]);
    /// assert_eq!(twice[0].1.iter().map(|o| o.thread).collect::<Vec<_>>(), vec![0, 1]);
    /// ```
    pub fn owned_more_than(&self, expected: usize) -> Vec<(Vec<i64>, Vec<Owner>)> {
        (0..self.owners.len() as i64)
            .filter(|&k| self.owners[k as usize].len() > expected)
            .map(|k| (self.x_index(k), self.owners[k as usize].clone()))
            .collect()
    }

    /// Row-major threads count (`Π P lengths`).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, render::Ownership};
    /// # let d = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding("H[[2],[2]] P[[X0.0]] Y[X1.0]").unwrap()).unwrap();
    /// assert_eq!(Ownership::of(&d).unwrap().num_threads(), 2);
    /// ```
    pub fn num_threads(&self) -> i64 {
        // saturating: the fields are public (a map made by [`Ownership::of`] always fits)
        tilekit_layout::idx::checked_product(&self.p_lengths).unwrap_or(i64::MAX)
    }
}

/// The text of one cell: `thread:d`, replicas joined with `/` (`0/32:3` when all share `d`,
/// `0:1/2:5` otherwise), `-` when nobody holds the element.
fn cell_text(owners: &[Owner]) -> String {
    match owners {
        [] => "-".to_string(),
        [o] => format!("{}:{}", o.thread, o.d),
        _ if owners.iter().all(|o| o.d == owners[0].d) => {
            let ts: Vec<String> = owners.iter().map(|o| o.thread.to_string()).collect();
            format!("{}:{}", ts.join("/"), owners[0].d)
        }
        _ => owners.iter().map(|o| format!("{}:{}", o.thread, o.d)).collect::<Vec<_>>().join("/"),
    }
}

/// A tile laid out as 2-D pictures: 1-D wrapped in rows, 2-D as is, higher ranks as one slice
/// per leading index.
struct Grid {
    /// Per slice: its caption (empty for 1-D and 2-D) and leading index.
    slices: Vec<(String, Vec<i64>)>,
    rows: i64,
    cols: i64,
    caption: String,
    rank: usize,
    x_lengths: Vec<i64>,
}

impl Grid {
    fn new(x_lengths: &[i64]) -> Grid {
        let n = x_lengths.len();
        let (rows, cols) = match n {
            1 => (
                x_lengths[0] / WRAP_1D + i64::from(x_lengths[0] % WRAP_1D != 0),
                x_lengths[0].min(WRAP_1D),
            ),
            _ => (x_lengths[n - 2], x_lengths[n - 1]),
        };
        let lead = &x_lengths[..n.saturating_sub(2)];
        let lead_total: i64 = lead.iter().product();
        let slices = (0..lead_total)
            .map(|l| {
                let prefix = digits(l, lead);
                let cap = if lead.is_empty() {
                    String::new()
                } else {
                    let dims: Vec<String> = prefix
                        .iter()
                        .map(i64::to_string)
                        .chain([format!("X{}", n - 2), format!("X{}", n - 1)])
                        .collect();
                    format!("[{}]", dims.join(", "))
                };
                (cap, prefix)
            })
            .collect();
        let caption = match n {
            1 => format!("X0 in rows of {WRAP_1D} (row label = first X0 of the row)"),
            2 => "rows = X0, columns = X1".to_string(),
            _ => format!(
                "one slice per index of {}; rows = X{}, columns = X{}",
                if n == 3 { "X0".to_string() } else { format!("X0..=X{}", n - 3) },
                n - 2,
                n - 1
            ),
        };
        Grid { slices, rows, cols, caption, rank: n, x_lengths: x_lengths.to_vec() }
    }

    /// The X index at (slice prefix, row, col), or None past the end of a wrapped 1-D tile.
    fn x_at(&self, prefix: &[i64], r: i64, c: i64) -> Option<Vec<i64>> {
        if self.rank == 1 {
            let k = r * WRAP_1D + c;
            return (k < self.x_lengths[0]).then(|| vec![k]);
        }
        let mut x = prefix.to_vec();
        x.push(r);
        x.push(c);
        Some(x)
    }

    fn row_label(&self, r: i64) -> i64 {
        if self.rank == 1 {
            r * WRAP_1D
        } else {
            r
        }
    }
}

/// The note printed instead of the text map of a tile of more than [`MAP_MAX_ELEMENTS`]
/// elements.
fn map_omitted(total: i64) -> String {
    format!(
        "ownership map omitted: the tile has {total} elements, the text map is printed up to \
         {MAP_MAX_ELEMENTS} (draw tiles of up to {SVG_MAX_ELEMENTS} with --svg)\n"
    )
}

/// The ownership map of a distribution as text, evaluated only when it is printed: a tile of
/// more than [`MAP_MAX_ELEMENTS`] elements, or one whose holders (threads × values, replicas
/// included) exceed [`OWNERSHIP_MAX`], gets a one-line note without evaluating anything, so
/// this takes bounded time for any tile.
///
/// ```
/// use tilekit_tile::{TileDistribution, render::ownership_map_of};
/// let dist = |t| TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding(t).unwrap()).unwrap();
/// let big = dist("H[[2048,2],[2048,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]");
/// assert!(ownership_map_of(&big).starts_with("ownership map omitted: the tile has 33554432 elements"));
/// // 2048 elements, each held by 2^20 replicas
/// let replicated = dist("R[1048576] H[[32],[64]] P[[R0,X0.0]] Y[X1.0]");
/// assert_eq!(ownership_map_of(&replicated), "ownership map omitted: the tile's 2048 elements \
///     have 2147483648 (thread, d) holders; the map is evaluated for up to 1048576\n");
/// ```
pub fn ownership_map_of(dist: &TileDistribution) -> String {
    // all fit: checked by the encoding
    let total: i64 = dist.x_lengths().iter().product();
    let holders = dist.num_threads() * dist.thread_buffer_size();
    if total > MAP_MAX_ELEMENTS {
        return map_omitted(total);
    }
    if holders > OWNERSHIP_MAX {
        return format!(
            "ownership map omitted: the tile's {total} elements have {holders} (thread, d) \
             holders; the map is evaluated for up to {OWNERSHIP_MAX}\n"
        );
    }
    match Ownership::of(dist) {
        Ok(own) => ownership_map(&own),
        // not reached: the sizes were checked above
        Err(e) => format!("ownership map omitted: {e}\n"),
    }
}

/// The ownership map as text: each cell is `thread:d` (replicated holders joined with `/`, `-`
/// for nobody). Tiles of more than [`MAP_MAX_ELEMENTS`] elements get a one-line note.
///
/// ```
/// use tilekit_tile::{TileDistribution, render::{ownership_map, Ownership}};
/// let d = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding(
///     "H[[2],[2]] P[[X0.0]] Y[X1.0]").unwrap()).unwrap();
/// assert_eq!(ownership_map(&Ownership::of(&d).unwrap()),
///     "ownership map (rows = X0, columns = X1; each cell is thread:d):\n\
///      \x20      0    1\n\
///      \x20 0  0:0  0:1\n\
///      \x20 1  1:0  1:1\n");
/// ```
pub fn ownership_map(own: &Ownership) -> String {
    let total = own.owners.len() as i64;
    if total > MAP_MAX_ELEMENTS {
        return map_omitted(total);
    }
    // the fields are public: a map whose lengths disagree with its owner lists is described,
    // not indexed
    if tilekit_layout::idx::checked_product(&own.x_lengths) != Some(total) {
        return format!(
            "ownership map: the X lengths {:?} do not match the {total} owner lists\n",
            own.x_lengths
        );
    }
    let g = Grid::new(&own.x_lengths);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "ownership map ({}; each cell is thread:d{}):",
        g.caption,
        if own.owners.iter().any(|o| o.len() != 1) {
            ", replicated holders joined with /, - = nobody"
        } else {
            ""
        }
    );
    let cells: Vec<String> = own.owners.iter().map(|o| cell_text(o)).collect();
    let w = cells.iter().map(|c| c.len()).max().unwrap_or(1).max((g.cols - 1).to_string().len());
    let lw = g.row_label(g.rows - 1).to_string().len();
    for (cap, prefix) in &g.slices {
        if !cap.is_empty() {
            let _ = writeln!(out, "{cap}");
        }
        let _ = write!(out, "  {:lw$}", "");
        for c in 0..g.cols {
            let _ = write!(out, "  {c:>w$}");
        }
        out.push('\n');
        for r in 0..g.rows {
            let _ = write!(out, "  {:>lw$}", g.row_label(r));
            for c in 0..g.cols {
                let cell = match g.x_at(prefix, r, c) {
                    Some(x) => cells[linear(&x, &own.x_lengths) as usize].as_str(),
                    None => "",
                };
                let _ = write!(out, "  {cell:>w$}");
            }
            let line = out.trim_end_matches(' ').len();
            out.truncate(line);
            out.push('\n');
        }
    }
    out
}

/// What the reference does with a spec tilekit refuses: never-owned and multiply-owned elements
/// of its unchecked adaptor, and its ownership map. `Err` when even the reference cannot build
/// it (out-of-range majors or minors, a Y on an R: the reference fails to compile those too;
/// sizes past `i64`). Above [`OWNERSHIP_MAX`] the text says that the map is not evaluated.
///
/// ```
/// use tilekit_tile::render::explain_reference;
/// let spec = tilekit_tile::encoding_text::parse_encoding("H[[2,2],[4,4]] P[[X0.0],[X0.0]] Y[X0.1,X1.1]").unwrap();
/// let text = explain_reference(&spec).unwrap();
/// assert!(text.contains("never owned: 48 of 64 elements:"));
/// assert!(text.contains("owned more than once: 16 elements: [0, 0] by 0/1:0,"));
/// ```
pub fn explain_reference(spec: &EncodingSpec) -> Result<String> {
    if let Some(y) = spec.ys_to_rhs_major.iter().position(|&m| m == 0) {
        return Err(TileError::invalid(
            "reference encoding",
            format!("ys_to_rhs_major[{y}]"),
            0,
            "a Y on an R component does not compile in the reference (SEMANTICS §8.4)",
        ));
    }
    // the reference's adaptor first: an error here means the reference cannot build it
    TileDistribution::reference_unchecked(spec)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "what the reference silently builds from {} (SEMANTICS §8.4: the lower-numbered P wins, \
         unwritten components stay 0):",
        print_encoding(spec)
    );
    let own = match Ownership::of_reference(spec) {
        Ok(own) => own,
        // it builds, so the only refusal left is the size of its ownership map
        Err(e) => {
            let _ = writeln!(out, "  its ownership map is not evaluated: {e}");
            return Ok(out);
        }
    };
    let total = own.owners.len();
    let fmt_x = |x: &[i64]| format!("{x:?}");
    let list = |xs: Vec<String>| -> String {
        if xs.len() > 16 {
            format!("{}, … ({} more)", xs[..16].join(", "), xs.len() - 16)
        } else {
            xs.join(", ")
        }
    };
    let never = own.never_owned();
    if never.is_empty() {
        out.push_str("  never owned: none\n");
    } else {
        let _ = writeln!(
            out,
            "  never owned: {} of {total} elements: {}",
            never.len(),
            list(never.iter().map(|x| fmt_x(x)).collect())
        );
    }
    // R components some P uses replicate each element that many times
    let mut used_rs: Vec<i64> = spec
        .ps_to_rhss_major
        .iter()
        .zip(&spec.ps_to_rhss_minor)
        .flat_map(|(ma, mi)| ma.iter().zip(mi).filter(|(&a, _)| a == 0).map(|(_, &b)| b))
        .collect();
    used_rs.sort_unstable();
    used_rs.dedup();
    let r: i64 =
        used_rs.iter().map(|&m| spec.rs_lengths.get(m as usize).copied().unwrap_or(1)).product();
    let more = own.owned_more_than(r.max(1) as usize);
    if more.is_empty() {
        out.push_str("  owned more than once: none\n");
    } else {
        let _ = writeln!(
            out,
            "  owned more than once: {} elements: {}",
            more.len(),
            list(more.iter().map(|(x, o)| format!("{} by {}", fmt_x(x), cell_text(o))).collect())
        );
    }
    out.push_str(&ownership_map(&own));
    Ok(out)
}

/// A colour per thread: one hue per thread up to [`SVG_MAX_THREAD_COLOURS`] threads; above it,
/// one hue per P0 value (or per 32 threads when there is one P dim) and a shade by the rest.
///
/// ```
/// use tilekit_tile::render::thread_colour;
/// assert_eq!(thread_colour(0, &[2, 4]), "hsl(0, 70%, 72%)");
/// assert_eq!(thread_colour(1, &[2, 4]), "hsl(45, 70%, 72%)");
/// assert_eq!(thread_colour(64, &[4, 64]), "hsl(90, 65%, 46%)"); // P0 = 1, first lane: darkest
/// ```
pub fn thread_colour(thread: i64, p_lengths: &[i64]) -> String {
    let n = tilekit_layout::idx::checked_product(p_lengths).unwrap_or(i64::MAX);
    let hue = |i: i64, count: i64| -> f64 {
        if count <= 12 {
            360.0 * i as f64 / count as f64
        } else {
            (i as f64 * 137.508) % 360.0
        }
    };
    if n <= SVG_MAX_THREAD_COLOURS {
        let light = if n > 12 && thread % 2 == 1 { 62 } else { 72 };
        return format!("hsl({}, 70%, {light}%)", num(hue(thread, n)));
    }
    let (group, groups, rest, rests) = group_of(thread, p_lengths).unwrap_or((0, 1, 0, 1));
    let light = 46.0 + 42.0 * rest as f64 / (rests - 1).max(1) as f64;
    format!("hsl({}, 65%, {}%)", num(hue(group, groups)), num(light.round()))
}

/// (group, groups, rest, rests): P0 value and the rest of the thread id when there are two or
/// more P dims and P0 > 1, else warps of 32.
fn group_of(thread: i64, p_lengths: &[i64]) -> Option<(i64, i64, i64, i64)> {
    let n = tilekit_layout::idx::checked_product(p_lengths)?;
    if n <= 0 {
        return None;
    }
    if p_lengths.len() >= 2 && p_lengths[0] > 1 {
        let rests = n / p_lengths[0];
        Some((thread / rests, p_lengths[0], thread % rests, rests))
    } else {
        let w = 32.min(n);
        Some((thread / w, n / w + i64::from(n % w != 0), thread % w, w))
    }
}

/// Draws the ownership map of a distribution as a standalone SVG document: one colour per
/// thread (per P0 value, shaded by the rest, above [`SVG_MAX_THREAD_COLOURS`] threads), the `d`
/// index in each cell when cells are large enough, each vector access of `dtype` outlined as a
/// bar, a legend, and the encoding's text form in the title. Cells shrink with the tile (down
/// to 4 px); 3-D and higher tiles are drawn as one slice per leading index. Tiles of more than
/// [`SVG_MAX_ELEMENTS`] elements are refused (a typed error naming the size), as are those
/// [`Ownership::of`] refuses; the legend lists at most [`SVG_MAX_LEGEND_ROWS`] thread groups.
///
/// ```
/// use tilekit_tile::{TileDistribution, render::{ownership_svg, Dtype}};
/// let d = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding(
///     "H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]").unwrap()).unwrap();
/// let doc = ownership_svg(&d, Dtype::Fp32).unwrap();
/// assert!(doc.starts_with("<svg") && doc.ends_with("</svg>\n"));
/// assert_eq!(doc.matches("class=\"cell\"").count(), 64);
/// assert_eq!(doc.matches("class=\"vector\"").count(), 16); // 8 threads × 2 accesses of 4
/// let big = TileDistribution::from_spec(tilekit_tile::encoding_text::parse_encoding(
///     "H[[512,2],[512,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]").unwrap()).unwrap();
/// assert_eq!(ownership_svg(&big, Dtype::Fp32).unwrap_err().to_string(),
///     "ownership picture: tile = \"1024×2048\" is invalid: it has 2097152 elements; pictures are \
///      drawn for up to 65536 (e.g. 256×256)");
/// ```
pub fn ownership_svg(dist: &TileDistribution, dtype: Dtype) -> Result<String> {
    let x = dist.x_lengths();
    let total: i64 = x.iter().product(); // fits: checked by the encoding
    if total > SVG_MAX_ELEMENTS {
        return Err(TileError::invalid(
            "ownership picture",
            "tile",
            times(&x),
            format!(
                "it has {total} elements; pictures are drawn for up to {SVG_MAX_ELEMENTS} \
                 (e.g. 256×256)"
            ),
        ));
    }
    let own = Ownership::of(dist)?;
    let v = vector_access(dist, dtype);
    let title = format!("tile distribution  {}", print_encoding(dist.encoding().spec()));
    let vec_words = if v.scalar_per_vector > 1 {
        format!(
            "{}: vectors of {} along Y{} ({} accesses per thread)",
            dtype.name(),
            v.scalar_per_vector,
            v.vector_dim_y,
            v.num_access
        )
    } else {
        format!("{}: scalar accesses ({} per thread)", dtype.name(), v.num_access)
    };
    let r = replication(dist);
    let subtitle = format!(
        "{} tile · {} threads (P {}) · {} values per thread (Y {}){} · {vec_words}",
        times(&dist.x_lengths()),
        dist.num_threads(),
        times(&dist.p_lengths()),
        dist.thread_buffer_size(),
        times(&dist.y_lengths()),
        if r > 1 { format!(" · each element held by {r} threads") } else { String::new() }
    );
    Ok(draw(&own, &title, &subtitle, (v.scalar_per_vector > 1).then_some(&v)))
}

/// Most thread groups (P0 values or warps) the legend of [`ownership_svg`] lists; more are
/// summarised in one line.
pub const SVG_MAX_LEGEND_ROWS: i64 = 32;

/// (first row, first column, last row, last column) of a vector bar, in cells.
type CellBox = (i64, i64, i64, i64);

fn draw(own: &Ownership, title: &str, subtitle: &str, v: Option<&VectorAccess>) -> String {
    let g = Grid::new(&own.x_lengths);
    let nslices = g.slices.len() as i64;
    let caption_h = if nslices > 1 { 20.0 } else { 0.0 };
    let gap = if nslices > 1 { 14.0 } else { 0.0 };
    let rows_total = (g.rows * nslices) as f64;
    let cell = (960.0 / g.cols as f64).min(1400.0 / rows_total).clamp(4.0, 40.0).floor();
    let threads = own.num_threads();
    let per_thread = threads <= SVG_MAX_THREAD_COLOURS;
    let show_d = cell >= 15.0;
    let show_t = cell >= 34.0;
    let (left, top) = (46.0, 104.0);
    let grid_w = g.cols as f64 * cell;
    let slice_h = caption_h + g.rows as f64 * cell;
    let grid_h = nslices as f64 * slice_h + (nslices - 1) as f64 * gap;

    // legend rows: per thread, swatches wrapping; per group (P0 or warp), one row each with
    // a label and shades sampled across the rest of the thread id
    let groups: Vec<(String, Vec<(String, String)>)> = if per_thread {
        let all =
            (0..threads).map(|t| (thread_colour(t, &own.p_lengths), format!("t{t}"))).collect();
        vec![(String::new(), all)]
    } else {
        let mut out = Vec::new();
        if let Some((_, groups, _, rests)) = group_of(0, &own.p_lengths) {
            let by_p0 = own.p_lengths.len() >= 2 && own.p_lengths[0] > 1;
            for gi in 0..groups.min(SVG_MAX_LEGEND_ROWS) {
                let samples = rests.min(8);
                let shades = (0..samples)
                    .map(|k| {
                        let t = gi * rests + k * (rests - 1) / (samples - 1).max(1);
                        let label = if k == 0 || k == samples - 1 {
                            format!("t{t}")
                        } else {
                            String::new()
                        };
                        (thread_colour(t, &own.p_lengths), label)
                    })
                    .collect();
                let label = if by_p0 { format!("P0 = {gi}") } else { format!("warp {gi}") };
                out.push((label, shades));
            }
            if groups > SVG_MAX_LEGEND_ROWS {
                let what = if by_p0 { "P0 values" } else { "warps" };
                out.push((format!("… {} more {what}", groups - SVG_MAX_LEGEND_ROWS), Vec::new()));
            }
        }
        out
    };
    let sw = 74.0;
    let notes = [
        format!(
            "cell colour = thread{}; number in a cell = d, the index in that thread's buffer (ys_to_d){}",
            if per_thread { "" } else { " (hue = P0 / warp, shade = the rest of the thread id)" },
            if show_d { "" } else { " — cells too small for numbers here" }
        ),
        match v {
            Some(v) => format!(
                "outlined bar = one vector access of {} × {} along Y{}",
                v.scalar_per_vector,
                v.dtype.name(),
                v.vector_dim_y
            ),
            None => "no vector accesses: every access is one element".to_string(),
        },
    ];
    let text_w = (title.chars().count() as f64 * 13.0 * 0.6)
        .max(subtitle.chars().count() as f64 * 11.0 * 0.55)
        .max(notes.iter().map(|n| n.chars().count()).max().unwrap_or(0) as f64 * 11.0 * 0.55);
    let width = (left + grid_w).max(left + text_w).max(420.0) + 20.0;
    let per_row = (((width - left - 10.0) / sw).floor() as usize).max(1);
    let legend_rows: usize = if per_thread {
        groups.iter().map(|g| g.1.len().div_ceil(per_row)).sum()
    } else {
        groups.len()
    };
    let legend_top = top + grid_h + 30.0;
    let height = legend_top + legend_rows as f64 * 18.0 + 44.0;

    let mut svg = Svg::new(width, height);
    svg.rect(0.0, 0.0, width, height, &Style::new().fill("white"));
    svg.text(12.0, 22.0, title, &Style::new().attr("font-size", 13).attr("font-weight", "bold"));
    let small = Style::new().attr("font-size", 11).fill("#444");
    svg.text(12.0, 40.0, subtitle, &small);
    svg.text(12.0, 56.0, &notes[0], &small);
    svg.text(12.0, 72.0, &notes[1], &small);

    let axis = Style::new().attr("font-size", 10).fill("#777").attr("text-anchor", "middle");
    let label_every = if cell >= 16.0 {
        1
    } else if cell >= 8.0 {
        4
    } else {
        8
    };
    let cap = Style::new().attr("font-size", 10).fill("#333");
    let (row_axis, col_axis) = match g.rank {
        1 => ("X0 ↓".to_string(), "+X0 →".to_string()),
        n => (format!("X{} ↓", n - 2), format!("X{} →", n - 1)),
    };
    svg.text(left, top - 20.0, &col_axis, &cap);
    svg.text(4.0, top - 20.0, &row_axis, &cap);

    for (s, (caption, prefix)) in g.slices.iter().enumerate() {
        let y0 = top + s as f64 * (slice_h + gap);
        if !caption.is_empty() {
            svg.text(left, y0 + 13.0, caption, &cap);
        }
        let gy = y0 + caption_h;
        for c in (0..g.cols).filter(|c| c % label_every == 0) {
            if s == 0 {
                svg.text(left + (c as f64 + 0.5) * cell, top - 6.0, &c.to_string(), &axis);
            }
        }
        for r in (0..g.rows).filter(|r| r % label_every == 0) {
            let y = gy + (r as f64 + 0.5) * cell + 3.5;
            svg.text(left - 14.0, y, &g.row_label(r).to_string(), &axis);
        }
        // cells
        let stroke_w = if cell >= 10.0 { 1.0 } else { 0.3 };
        // vector bars: (thread, access key) -> bounding box in cells
        let mut bars: BTreeMap<(i64, Vec<i64>), CellBox> = BTreeMap::new();
        for r in 0..g.rows {
            for c in 0..g.cols {
                let Some(x) = g.x_at(prefix, r, c) else { continue };
                let owners = own.owners_at(&x);
                let (cx, cy) = (left + c as f64 * cell, gy + r as f64 * cell);
                let style = match owners.first() {
                    Some(o) => Style::new()
                        .attr("class", "cell")
                        .fill(&thread_colour(o.thread, &own.p_lengths))
                        .stroke("white", stroke_w),
                    None => Style::new().attr("class", "cell").fill("#fff").stroke("#c0392b", 1.0),
                };
                svg.rect(cx, cy, cell, cell, &style);
                if owners.len() > 1 && owners.iter().any(|o| o.d != owners[0].d) {
                    svg.rect(
                        cx + 1.0,
                        cy + 1.0,
                        cell - 2.0,
                        cell - 2.0,
                        &Style::new().fill("none").stroke("#c0392b", 2.0),
                    );
                }
                if let (Some(o), Some(v)) = (owners.first(), v) {
                    let mut y = digits(o.d, &own.y_lengths);
                    y[v.vector_dim_y] /= v.scalar_per_vector;
                    let b = bars.entry((o.thread, y)).or_insert((r, c, r, c));
                    *b = (b.0.min(r), b.1.min(c), b.2.max(r), b.3.max(c));
                }
                if show_d {
                    let text = match owners {
                        [] => "∅".to_string(),
                        [o, ..] => o.d.to_string(),
                    };
                    let font = (cell * 0.38).min(14.0);
                    let ty = if show_t { cy + cell * 0.68 } else { cy + cell / 2.0 + font * 0.36 };
                    svg.text(
                        cx + cell / 2.0,
                        ty,
                        &text,
                        &Style::new()
                            .attr("font-size", num(font))
                            .attr("text-anchor", "middle")
                            .fill("#111"),
                    );
                    if show_t && !owners.is_empty() {
                        let ts: Vec<String> =
                            owners.iter().map(|o| format!("t{}", o.thread)).collect();
                        let t = if ts.len() > 2 {
                            format!("{}+{}", ts[0], ts.len() - 1)
                        } else {
                            ts.join(",")
                        };
                        svg.text(
                            cx + cell / 2.0,
                            cy + cell * 0.3,
                            &t,
                            &Style::new()
                                .attr("font-size", num(cell * 0.22))
                                .attr("text-anchor", "middle")
                                .fill("#333"),
                        );
                    }
                }
            }
        }
        let inset = (cell * 0.1).clamp(0.5, 3.0);
        let bar_w = (cell * 0.07).clamp(0.6, 2.0);
        for (r0, c0, r1, c1) in bars.values() {
            svg.rect(
                left + *c0 as f64 * cell + inset,
                gy + *r0 as f64 * cell + inset,
                (c1 - c0 + 1) as f64 * cell - 2.0 * inset,
                (r1 - r0 + 1) as f64 * cell - 2.0 * inset,
                &Style::new()
                    .attr("class", "vector")
                    .fill("none")
                    .stroke("#222", bar_w)
                    .attr("rx", num(inset * 2.0)),
            );
        }
    }

    // legend
    svg.text(12.0, legend_top - 8.0, "threads:", &cap);
    let label_style = Style::new().attr("font-size", 10).fill("#333");
    if per_thread {
        for (k, (colour, label)) in groups.iter().flat_map(|g| &g.1).enumerate() {
            let (lr, lc) = (k / per_row, k % per_row);
            let (x, y) = (left + lc as f64 * sw, legend_top + lr as f64 * 18.0);
            svg.rect(x, y, 14.0, 12.0, &Style::new().fill(colour).stroke("#888", 0.5));
            svg.text(x + 18.0, y + 10.0, label, &label_style);
        }
    } else {
        for (gi, (label, shades)) in groups.iter().enumerate() {
            let y = legend_top + gi as f64 * 18.0;
            svg.text(left, y + 10.0, label, &label_style);
            let mut x = left + 70.0;
            for (colour, t) in shades {
                if !t.is_empty() && x > left + 70.0 {
                    x += 4.0;
                }
                svg.rect(x, y, 14.0, 12.0, &Style::new().fill(colour).stroke("#888", 0.5));
                x += 16.0;
                if !t.is_empty() {
                    svg.text(x, y + 10.0, t, &label_style);
                    x += 8.0 + 6.0 * t.len() as f64;
                }
            }
        }
    }
    svg.finish()
}
