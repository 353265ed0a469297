//! Tile windows: a distribution placed on a tensor view, moving whole tiles between memory and
//! distributed tensors (SEMANTICS §12).
//!
//! ```text
//!   tensor view (maybe padded)                       window: lengths (4, 16) at origin (4, 8)
//!   ┌──────────────────────────────────────┐
//!   │                                      │         thread p:
//!   │        origin ┌────────────────┐     │           adaptor coord  = ps_ys_to_xs at (p, Y = 0)
//!   │               │ X = ps_ys_to_xs│     │           bottom coord   = view at origin + X
//!   │               │     (p, y)     │     │
//!   │               └────────────────┘     │         access i (traits curve, §11):
//!   └──────────────────────────────────────┘           read ScalarPerVector elements at the
//!                                                      bottom coord (valid per vector, §6);
//!                                                      element j → d_elems[j] of thread p;
//!                                                      then move both coords by (0…0, step(i)):
//!                                                      adaptor move gives the X diff, the view
//!                                                      coord moves by that diff (incremental)
//! ```
//!
//! The host model runs **every thread of the block** (every P index, row-major): `load` returns a
//! [`StaticDistributedTensor`] for the whole block; `store` and `update` (set / add / max) write
//! one back. With replication (R), several threads write the same element with, normally, the
//! same value; they run in P order.
//!
//! As in the reference (`NumCoord = 1`): each thread's pair of coordinates is computed once when
//! the window is made, `load`/`store` walk copies of them, and [`TileWindow::move_window`] moves
//! the stored bottom coordinates incrementally by the step. Nothing is bounds-checked except by
//! pad transforms and the global range check of the buffer.
//!
//! The walk itself is generic over the index domain ([`TileWindow::walk_symbolic`]): coordinates,
//! offsets and validity are the same formulas in generated code, lifted from the `i64` layouts.

use tilekit_layout::{Coordinate, Idx, TensorAdaptor, TensorDescriptor};

use crate::distributed_tensor::StaticDistributedTensor;
use crate::distribution::TileDistribution;
use crate::error::{Result, TileError};
use crate::traits::{AccessCurve, LoadStoreTraits, TraitsAccess};
use crate::view::{Buffer, BufferMut, MemoryOp, TensorView};

/// One access of one thread, in issue order.
///
/// ```
/// use tilekit_tile::window::WindowAccess;
/// let a = WindowAccess::<i64> { i: 0, y_start: vec![0, 0], x_in_window: vec![0, 4],
///     bottom_index: vec![4, 12], offset: 92, valid: true };
/// assert!(a.valid);
/// ```
#[derive(Debug, Clone)]
pub struct WindowAccess<I: Idx = i64> {
    /// Access number (`0..num_access`).
    pub i: i64,
    /// Y index of the vector's first element.
    pub y_start: Vec<i64>,
    /// X index in the window (the window adaptor's bottom index).
    pub x_in_window: Vec<I>,
    /// The view's top index (`origin + x_in_window`, reached by incremental moves).
    pub bottom_index: Vec<I>,
    /// Element offset of the vector's first element.
    pub offset: I,
    /// The validity flag the buffer access receives (`is_valid_assuming_top_valid`).
    pub valid: I::Bool,
}

impl PartialEq for WindowAccess<i64> {
    fn eq(&self, o: &Self) -> bool {
        (self.i, &self.y_start, &self.x_in_window, &self.bottom_index, self.offset, self.valid)
            == (o.i, &o.y_start, &o.x_in_window, &o.bottom_index, o.offset, o.valid)
    }
}

/// The (adaptor, bottom) coordinates of a thread at Y = 0 (the window constructor).
fn thread_coords<I: Idx>(
    adaptor: &TensorAdaptor<I>,
    desc: &TensorDescriptor<I>,
    origin: &[I],
    p: &[I],
    ndim_y: usize,
) -> (Coordinate<I>, Coordinate<I>) {
    // ranks were checked by the callers (window constructor, walk_generic)
    let top: Vec<I> = p.iter().cloned().chain((0..ndim_y).map(|_| I::lit(0))).collect();
    let ac = Coordinate::new_unchecked(adaptor, &top);
    let bottom_top: Vec<I> = origin.iter().zip(ac.bottom()).map(|(o, x)| o.clone() + x).collect();
    let bc = Coordinate::new_descriptor_unchecked(desc, &bottom_top);
    (ac, bc)
}

/// The coordinates at every access of one thread: starting from the thread's pair, each access
/// is issued, then both coordinates move by `(0…0, forward_step)` (the adaptor move's bottom diff
/// moves the view coordinate).
fn walk_coords<I: Idx>(
    adaptor: &TensorAdaptor<I>,
    desc: &TensorDescriptor<I>,
    accesses: &[TraitsAccess],
    ndim_p: usize,
    start: (Coordinate<I>, Coordinate<I>),
) -> Vec<(Coordinate<I>, Coordinate<I>)> {
    let (mut ac, mut bc) = start;
    let mut out = Vec::with_capacity(accesses.len());
    for a in accesses {
        out.push((ac.clone(), bc.clone()));
        if let Some(step) = &a.forward_step {
            let top: Vec<I> =
                (0..ndim_p).map(|_| I::lit(0)).chain(step.iter().map(|&s| I::lit(s))).collect();
            let diff_x = adaptor.move_coordinate_unchecked(&mut ac, &top);
            desc.move_coordinate_unchecked(&mut bc, &diff_x);
        }
    }
    out
}

fn records<I: Idx>(
    desc: &TensorDescriptor<I>,
    accesses: &[TraitsAccess],
    coords: Vec<(Coordinate<I>, Coordinate<I>)>,
) -> Vec<WindowAccess<I>> {
    accesses
        .iter()
        .zip(coords)
        .map(|(a, (ac, bc))| WindowAccess {
            i: a.i,
            y_start: a.y_start.clone(),
            x_in_window: ac.bottom(),
            bottom_index: bc.top(),
            offset: bc.offset(),
            valid: desc.is_valid_assuming_top_valid_unchecked(&bc),
        })
        .collect()
}

/// The walk of thread `p` of a window at `origin` over a view with descriptor `desc`, from raw
/// parts: a ps_ys_to_xs adaptor with `ndim_p` Ps and the window's traits. [`TileWindow`] uses
/// the same code; this entry point also serves encodings tilekit refuses but the reference
/// compiles ([`TileDistribution::reference_unchecked`]), e.g. to reproduce the reference's
/// numbers for them. Ranks must match (the adaptor's bottom = `desc`'s top = `origin`'s rank;
/// `p` has `ndim_p` entries): a typed error otherwise.
///
/// ```
/// use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}, window::walk_with_adaptor};
/// use tilekit_layout::TensorDescriptor;
/// let spec = EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
///     ps_to_rhss_major: vec![vec![1], vec![1]], ps_to_rhss_minor: vec![vec![0], vec![0]],
///     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] };   // two Ps on X0.H0: refused
/// let (a, ys_to_d) = TileDistribution::reference_unchecked(&spec).unwrap();
/// let desc = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((4, 1))).unwrap();
/// let t = LoadStoreTraits::from_adaptor(&a, 2, &ys_to_d, desc.top_safe_vector_lengths_strides(), AccessCurve::Linear).unwrap();
/// let walk = walk_with_adaptor(&a, 2, &t, &desc, &[0, 0], &[1, 0]).unwrap();
/// assert_eq!(walk[0].bottom_index, vec![2, 0]);   // X1.H0 is never written by a P: stays 0
/// ```
pub fn walk_with_adaptor(
    adaptor: &TensorAdaptor<i64>,
    ndim_p: usize,
    traits: &LoadStoreTraits,
    desc: &TensorDescriptor<i64>,
    origin: &[i64],
    p: &[i64],
) -> Result<Vec<WindowAccess<i64>>> {
    walk_generic(adaptor, ndim_p, traits, desc, origin, p)
}

/// The walk of thread `p` in any index domain, from raw parts: a ps_ys_to_xs adaptor with
/// `ndim_p` Ps, the window's traits, the view's descriptor and the window origin, all in the
/// domain `I`. This is what a kernel builder uses with the IR's symbolic values: the view's
/// lengths and strides may be runtime parameters (so they cannot be lifted from `i64`), and
/// the P index is the thread's ids. Same code as [`TileWindow::walk_symbolic`] and
/// [`walk_with_adaptor`]; ranks are checked as there.
///
/// ```
/// use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}, window::walk_generic};
/// use tilekit_layout::TensorDescriptor;
/// let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
///     ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]],
///     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
/// let desc = TensorDescriptor::naive(vec![8i64, 32], vec![32, 1], Some((4, 1))).unwrap();
/// let t = LoadStoreTraits::new(&d, &desc, AccessCurve::Linear).unwrap();
/// let walk = walk_generic(&d.ps_ys_to_xs().lift::<i64>(), 2, &t, &desc, &[4, 8], &[0, 1]).unwrap();
/// assert_eq!((walk[0].offset, walk[1].offset), (4 * 32 + 12, 5 * 32 + 12));
/// ```
pub fn walk_generic<I: Idx>(
    adaptor: &TensorAdaptor<I>,
    ndim_p: usize,
    traits: &LoadStoreTraits,
    desc: &TensorDescriptor<I>,
    origin: &[I],
    p: &[I],
) -> Result<Vec<WindowAccess<I>>> {
    let nx = adaptor.bottom_ids().len();
    let ntop = adaptor.ndim_top();
    if desc.ndim() != nx || origin.len() != nx || p.len() != ndim_p || ndim_p > ntop {
        return Err(TileError::invalid(
            "tile window walk",
            "view/origin/P rank",
            (desc.ndim(), origin.len(), p.len()),
            format!(
                "{nx} view dims, {nx} origin entries and {ndim_p} P entries (of {ntop} top dims)"
            ),
        ));
    }
    if traits.y_lengths().len() != ntop - ndim_p {
        return Err(TileError::invalid(
            "tile window walk",
            "traits Y rank",
            traits.y_lengths().len(),
            format!(
                "the adaptor has {} Y dims ({ntop} top dims, {ndim_p} of them P)",
                ntop - ndim_p
            ),
        ));
    }
    let accesses = traits.accesses();
    let start = thread_coords(adaptor, desc, origin, p, ntop - ndim_p);
    let coords = walk_coords(adaptor, desc, &accesses, ndim_p, start);
    Ok(records(desc, &accesses, coords))
}

/// The most threads a [`TileWindow`]'s distribution may have (2^16): the window keeps a pair
/// of coordinates per thread of the block (a CUDA block has at most 1024 threads), so a larger
/// distribution is refused before anything is allocated.
///
/// ```
/// assert_eq!(tilekit_tile::window::MAX_WINDOW_THREADS, 65536);
/// ```
pub const MAX_WINDOW_THREADS: i64 = 1 << 16;

/// A tile window with a static distribution over a tensor view (`NumCoord = 1`).
///
/// ```
/// use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
/// // 2×4 threads over a 4×16 tile, each thread 2 rows × 4 contiguous columns
/// let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
///     ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]],
///     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
/// let data: Vec<f32> = (0..8 * 32).map(|v| v as f32).collect();
/// let view = make_naive_tensor_view(&data[..], &[8, 32], &[32, 1]).unwrap();
/// let w = TileWindow::new(view, &[4, 16], &[4, 8], &d).unwrap();
/// assert_eq!(w.traits().scalar_per_vector(), 4);
/// let t = w.load().unwrap();
/// // thread (1, 3) holds rows 4 + 2..4, columns 8 + 12..16
/// assert_eq!(t.get(&[1, 3], &[1, 0]).unwrap(), (7 * 32 + 20) as f32);
/// ```
#[derive(Debug, Clone)]
pub struct TileWindow<B: Buffer> {
    view: TensorView<B>,
    lengths: Vec<i64>,
    origin: Vec<i64>,
    dist: TileDistribution,
    traits: LoadStoreTraits,
    accesses: Vec<TraitsAccess>,
    coords: Vec<(Coordinate<i64>, Coordinate<i64>)>,
}

impl<B: Buffer> TileWindow<B> {
    /// `make_tile_window(view, window_lengths, origin, distribution)` with tilekit's default
    /// access order (no snake, [`AccessCurve::Linear`]).
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let data = vec![0f32; 64];
    /// let view = make_naive_tensor_view(&data[..], &[4, 16], &[16, 1]).unwrap();
    /// let e = TileWindow::new(view, &[4, 16], &[0], &d).unwrap_err();
    /// assert_eq!(e.to_string(), "tile window: origin rank = 1 is invalid: the view has 2 dims");
    /// ```
    pub fn new(
        view: TensorView<B>,
        window_lengths: &[i64],
        origin: &[i64],
        dist: &TileDistribution,
    ) -> Result<Self> {
        Self::with_curve(view, window_lengths, origin, dist, AccessCurve::Linear)
    }

    /// [`TileWindow::new`] with an explicit access order ([`AccessCurve::Snake`] reproduces the
    /// Oct 2024 reference).
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, traits::AccessCurve, view::make_naive_tensor_view_with_guarantee};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let data = vec![0f32; 64];
    /// let view = make_naive_tensor_view_with_guarantee(&data[..], &[4, 16], &[16, 1], None).unwrap();
    /// let w = TileWindow::with_curve(view, &[4, 16], &[0, 0], &d, AccessCurve::Snake).unwrap();
    /// let ys: Vec<Vec<i64>> = w.thread_walk(&[0, 0]).unwrap().into_iter().map(|a| a.y_start).collect();
    /// assert_eq!(ys[3..5], [vec![0, 3], vec![1, 3]]);
    /// ```
    pub fn with_curve(
        view: TensorView<B>,
        window_lengths: &[i64],
        origin: &[i64],
        dist: &TileDistribution,
        curve: AccessCurve,
    ) -> Result<Self> {
        let ctx = "tile window";
        let n = view.ndim();
        if window_lengths.len() != n {
            return Err(TileError::invalid(
                ctx,
                "window_lengths rank",
                window_lengths.len(),
                format!("the view has {n} dims"),
            ));
        }
        if origin.len() != n {
            return Err(TileError::invalid(
                ctx,
                "origin rank",
                origin.len(),
                format!("the view has {n} dims"),
            ));
        }
        if let Some((i, &l)) = window_lengths.iter().enumerate().find(|(_, &l)| l < 1) {
            return Err(TileError::invalid(
                ctx,
                format!("window_lengths[{i}]"),
                l,
                "window lengths must be >= 1",
            ));
        }
        let nx = dist.encoding().ndim_x();
        if nx != n {
            return Err(TileError::invalid(
                ctx,
                "distribution X rank",
                nx,
                format!("the view has {n} dims, so the distribution needs {n} X dims"),
            ));
        }
        if dist.num_threads() > MAX_WINDOW_THREADS {
            return Err(TileError::invalid(
                ctx,
                "distribution threads",
                dist.num_threads(),
                format!("a window models at most {MAX_WINDOW_THREADS} threads (one block)"),
            ));
        }
        let traits = LoadStoreTraits::new(dist, view.descriptor(), curve)?;
        let accesses = traits.accesses();
        let ndim_y = dist.encoding().ndim_y();
        let mut w = TileWindow {
            view,
            lengths: window_lengths.to_vec(),
            origin: origin.to_vec(),
            dist: dist.clone(),
            traits,
            accesses,
            coords: Vec::new(),
        };
        let ps = w.thread_ps();
        w.coords = ps
            .iter()
            .map(|p| thread_coords(w.dist.ps_ys_to_xs(), w.view.descriptor(), &w.origin, p, ndim_y))
            .collect();
        Ok(w)
    }

    /// The P index of every thread of the block, row-major over the P lengths.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// # let data = vec![0f32; 64];
    /// # let w = TileWindow::new(make_naive_tensor_view(&data[..], &[4, 16], &[16, 1]).unwrap(), &[4, 16], &[0, 0], &d).unwrap();
    /// assert_eq!(w.thread_ps()[5], vec![1, 1]);
    /// ```
    pub fn thread_ps(&self) -> Vec<Vec<i64>> {
        let lens = self.dist.p_lengths();
        let total: i64 = lens.iter().product();
        (0..total)
            .map(|mut k| {
                let mut p = vec![0; lens.len()];
                for i in (0..lens.len()).rev() {
                    p[i] = k % lens[i];
                    k /= lens[i];
                }
                p
            })
            .collect()
    }

    fn thread_position(&self, p: &[i64]) -> Result<usize> {
        let lens = self.dist.p_lengths();
        if p.len() != lens.len() {
            return Err(TileError::invalid(
                "tile window",
                "P rank",
                p.len(),
                format!("the distribution has {} P dims (lengths {lens:?})", lens.len()),
            ));
        }
        let mut k = 0usize;
        for (i, (&v, &l)) in p.iter().zip(&lens).enumerate() {
            if v < 0 || v >= l {
                return Err(TileError::invalid(
                    "tile window",
                    format!("P[{i}]"),
                    v,
                    format!("must be in 0..{l} (P lengths {lens:?})"),
                ));
            }
            k = k * l as usize + v as usize;
        }
        Ok(k)
    }

    /// The view.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let data = vec![0f32; 256];
    /// let w = TileWindow::new(make_naive_tensor_view(&data[..], &[8, 32], &[32, 1]).unwrap(), &[4, 16], &[4, 8], &d).unwrap();
    /// assert_eq!(w.view().lengths(), vec![8, 32]);
    /// ```
    pub fn view(&self) -> &TensorView<B> {
        &self.view
    }

    /// Gives the view back.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let data = vec![0f32; 256];
    /// let w = TileWindow::new(make_naive_tensor_view(&data[..], &[8, 32], &[32, 1]).unwrap(), &[4, 16], &[4, 8], &d).unwrap();
    /// assert_eq!(w.into_view().lengths(), vec![8, 32]);
    /// ```
    pub fn into_view(self) -> TensorView<B> {
        self.view
    }

    /// The window lengths.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let data = vec![0f32; 256];
    /// let w = TileWindow::new(make_naive_tensor_view(&data[..], &[8, 32], &[32, 1]).unwrap(), &[4, 16], &[4, 8], &d).unwrap();
    /// assert_eq!(w.window_lengths(), &[4, 16]);
    /// ```
    pub fn window_lengths(&self) -> &[i64] {
        &self.lengths
    }

    /// The window origin (top index of the view where X = 0 lies).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let data = vec![0f32; 256];
    /// let w = TileWindow::new(make_naive_tensor_view(&data[..], &[8, 32], &[32, 1]).unwrap(), &[4, 16], &[4, 8], &d).unwrap();
    /// assert_eq!(w.origin(), &[4, 8]);
    /// ```
    pub fn origin(&self) -> &[i64] {
        &self.origin
    }

    /// The distribution.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let data = vec![0f32; 256];
    /// let w = TileWindow::new(make_naive_tensor_view(&data[..], &[8, 32], &[32, 1]).unwrap(), &[4, 16], &[4, 8], &d).unwrap();
    /// assert_eq!(w.distribution().num_threads(), 8);
    /// ```
    pub fn distribution(&self) -> &TileDistribution {
        &self.dist
    }

    /// The load/store traits.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let data = vec![0f32; 256];
    /// let w = TileWindow::new(make_naive_tensor_view(&data[..], &[8, 32], &[32, 1]).unwrap(), &[4, 16], &[4, 8], &d).unwrap();
    /// assert_eq!(w.traits().scalar_per_vector(), 4);
    /// ```
    pub fn traits(&self) -> &LoadStoreTraits {
        &self.traits
    }

    /// Every access of thread `p` in issue order, from the window's stored coordinates.
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::{make_naive_tensor_view, pad_tensor_view}};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// // the documents' 4×16 row-major distribution on a 6×20 fp32 tensor padded to 8×32, window at (4, 8)
    /// let data = vec![0f32; 120];
    /// let view = pad_tensor_view(make_naive_tensor_view(&data[..], &[6, 20], &[20, 1]).unwrap(), &[4, 16], &[true, true]).unwrap();
    /// let w = TileWindow::new(view, &[4, 16], &[4, 8], &d).unwrap();
    /// let walk = w.thread_walk(&[0, 1]).unwrap();
    /// assert_eq!((walk[0].bottom_index.clone(), walk[0].offset, walk[0].valid), (vec![4, 12], 92, true));
    /// assert_eq!((walk[1].bottom_index.clone(), walk[1].offset, walk[1].valid), (vec![5, 12], 112, true));
    /// let last = w.thread_walk(&[1, 3]).unwrap();
    /// assert_eq!((last[1].bottom_index.clone(), last[1].valid), (vec![7, 20], false)); // row 7 is in the pad
    /// ```
    pub fn thread_walk(&self, p: &[i64]) -> Result<Vec<WindowAccess<i64>>> {
        let k = self.thread_position(p)?;
        Ok(self.walk_thread(k))
    }

    fn walk_thread(&self, k: usize) -> Vec<WindowAccess<i64>> {
        let desc = self.view.descriptor();
        let coords = walk_coords(
            self.dist.ps_ys_to_xs(),
            desc,
            &self.accesses,
            self.dist.encoding().ndim_p(),
            self.coords[k].clone(),
        );
        records(desc, &self.accesses, coords)
    }

    /// The bottom coordinate of every access of thread `k` (block position), in issue order.
    fn bottom_coords(&self, k: usize) -> Vec<Coordinate<i64>> {
        walk_coords(
            self.dist.ps_ys_to_xs(),
            self.view.descriptor(),
            &self.accesses,
            self.dist.encoding().ndim_p(),
            self.coords[k].clone(),
        )
        .into_iter()
        .map(|(_, bc)| bc)
        .collect()
    }

    /// The walk of thread `p` with the window at `origin`, in any index domain: the layouts are
    /// lifted from `i64` and the coordinates made fresh at the origin (what a kernel computes
    /// when the window is made), then moved access by access. On `i64` it equals
    /// [`thread_walk`](Self::thread_walk) of a window made at `origin`.
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let data = vec![0f32; 256];
    /// let w = TileWindow::new(make_naive_tensor_view(&data[..], &[8, 32], &[32, 1]).unwrap(), &[4, 16], &[0, 0], &d).unwrap();
    /// let sym = w.walk_symbolic(&[4i64, 8], &[0, 1]).unwrap();
    /// assert_eq!(sym[0].offset, 4 * 32 + 12);
    /// assert!(w.walk_symbolic(&[4i64], &[0, 1]).is_err());
    /// ```
    pub fn walk_symbolic<I: Idx>(&self, origin: &[I], p: &[I]) -> Result<Vec<WindowAccess<I>>> {
        let nx = self.origin.len();
        let np = self.dist.encoding().ndim_p();
        if origin.len() != nx || p.len() != np {
            return Err(TileError::invalid(
                "tile window walk",
                "origin/P rank",
                (origin.len(), p.len()),
                format!("{nx} origin entries and {np} P entries"),
            ));
        }
        let adaptor = self.dist.ps_ys_to_xs().lift::<I>();
        let desc = self.view.descriptor().lift::<I>();
        let start = thread_coords(&adaptor, &desc, origin, p, self.dist.encoding().ndim_y());
        let coords = walk_coords(&adaptor, &desc, &self.accesses, np, start);
        Ok(records(&desc, &self.accesses, coords))
    }

    /// Moves the window by `step` (`move_tile_window`): the origin and every thread's stored
    /// bottom coordinate move (incrementally, as the reference does).
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let data: Vec<f32> = (0..256).map(|v| v as f32).collect();
    /// let mut w = TileWindow::new(make_naive_tensor_view(&data[..], &[8, 32], &[32, 1]).unwrap(), &[4, 16], &[0, 0], &d).unwrap();
    /// w.move_window(&[4, 16]).unwrap();
    /// assert_eq!(w.origin(), &[4, 16]);
    /// assert_eq!(w.load().unwrap().get(&[0, 0], &[0, 0]).unwrap(), (4 * 32 + 16) as f32);
    /// assert!(w.move_window(&[1]).is_err());
    /// ```
    pub fn move_window(&mut self, step: &[i64]) -> Result<()> {
        if step.len() != self.origin.len() {
            return Err(TileError::invalid(
                "tile window",
                "step rank",
                step.len(),
                format!("the view has {} dims", self.origin.len()),
            ));
        }
        for (o, s) in self.origin.iter_mut().zip(step) {
            *o += s;
        }
        let desc = self.view.descriptor();
        for (_, bc) in &mut self.coords {
            // the rank was checked above; the coordinates are this view's
            desc.move_coordinate_unchecked(bc, step);
        }
        Ok(())
    }

    /// Loads the whole tile into a distributed tensor (every thread of the block): per thread,
    /// per access, one vector at the bottom coordinate; element j goes to `d_elems[j]`.
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::{make_naive_tensor_view, pad_tensor_view}};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let data = vec![1f32; 3 * 10];                    // 3×10, padded to 4×16
    /// let view = pad_tensor_view(make_naive_tensor_view(&data[..], &[3, 10], &[10, 1]).unwrap(), &[4, 16], &[true, true]).unwrap();
    /// let t = TileWindow::new(view, &[4, 16], &[0, 0], &d).unwrap().load().unwrap();
    /// assert_eq!(t.get(&[0, 0], &[0, 0]).unwrap(), 1.0);
    /// assert_eq!(t.get(&[1, 0], &[1, 0]).unwrap(), 0.0);  // row 3: in the pad
    /// assert_eq!(t.get(&[0, 3], &[0, 0]).unwrap(), 0.0);  // columns 12..16: in the pad
    /// ```
    pub fn load(&self) -> Result<StaticDistributedTensor<B::Elem>> {
        let mut t = StaticDistributedTensor::new(&self.dist, B::Elem::default());
        let n = self.traits.scalar_per_vector() as usize;
        for k in 0..self.coords.len() {
            let p = t.thread_p(k)?;
            let bottoms = self.bottom_coords(k);
            let buf = t.thread_mut(&p)?;
            for (a, bc) in self.accesses.iter().zip(&bottoms) {
                let v = self.view.get_vectorized_elements(bc, n)?;
                for (&d, x) in a.d_elems.iter().zip(v) {
                    buf[d as usize] = x;
                }
            }
        }
        Ok(t)
    }

    fn check_tensor(&self, t: &StaticDistributedTensor<B::Elem>) -> Result<()> {
        if t.distribution() != &self.dist {
            return Err(TileError::invalid(
                "tile window",
                "distributed tensor's encoding",
                t.distribution().encoding().spec(),
                format!("must be the window's distribution {:?}", self.dist.encoding().spec()),
            ));
        }
        Ok(())
    }
}

impl<B: BufferMut> TileWindow<B> {
    /// Stores a distributed tensor of the window's distribution (every thread, in P order):
    /// the mirror of [`load`](TileWindow::load).
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, TileWindow, encoding::EncodingSpec, view::make_naive_tensor_view};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let src: Vec<f32> = (0..64).map(|v| v as f32).collect();
    /// let t = TileWindow::new(make_naive_tensor_view(&src[..], &[4, 16], &[16, 1]).unwrap(), &[4, 16], &[0, 0], &d).unwrap().load().unwrap();
    /// let mut dst = vec![-1f32; 64];
    /// let mut w = TileWindow::new(make_naive_tensor_view(&mut dst[..], &[4, 16], &[16, 1]).unwrap(), &[4, 16], &[0, 0], &d).unwrap();
    /// w.store(&t).unwrap();
    /// assert_eq!(dst, src);
    /// ```
    pub fn store(&mut self, t: &StaticDistributedTensor<B::Elem>) -> Result<()> {
        self.update(t, MemoryOp::Set)
    }

    /// Writes a distributed tensor with `op` (set / add / max; `DstInMemOp`).
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, TileWindow, StaticDistributedTensor, encoding::EncodingSpec, view::{make_naive_tensor_view, MemoryOp}};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let mut dst = vec![1i32; 64];
    /// let mut w = TileWindow::new(make_naive_tensor_view(&mut dst[..], &[4, 16], &[16, 1]).unwrap(), &[4, 16], &[0, 0], &d).unwrap();
    /// w.update(&StaticDistributedTensor::new(&d, 2), MemoryOp::Add).unwrap();
    /// w.update(&StaticDistributedTensor::new(&d, 1), MemoryOp::Max).unwrap();
    /// assert_eq!(dst, vec![3; 64]);
    /// ```
    pub fn update(&mut self, t: &StaticDistributedTensor<B::Elem>, op: MemoryOp) -> Result<()> {
        self.check_tensor(t)?;
        for k in 0..self.coords.len() {
            let p = t.thread_p(k)?;
            let bottoms = self.bottom_coords(k);
            let buf = t.thread(&p)?;
            for (a, bc) in self.accesses.iter().zip(&bottoms) {
                let v: Vec<B::Elem> = a.d_elems.iter().map(|&d| buf[d as usize]).collect();
                self.view.update_vectorized_elements(bc, &v, op)?;
            }
        }
        Ok(())
    }
}
