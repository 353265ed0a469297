//! Load/store traits: how a tile window moves a thread's values, one vector at a time
//! (SEMANTICS §11).
//!
//! The traits answer three questions for a (distribution, bottom view) pair — the data type
//! never enters, only the view's guaranteed vector lengths do:
//!
//! ```text
//!  1. Which Y can be vectorised, and how wide?
//!
//!     view descriptor ──top_safe_vector_lengths_strides──► per X: (len, stride)   e.g. X1: (4, 1)
//!          placed on the X slots of the ps_ys_to_xs adaptor (everything else −1)
//!          pushed up through replicate → unmerge → merge                  (one propagation,
//!          read at the Y slots                                             TensorAdaptor's)
//!     ──► per Y: (len, stride)   a Y gets gcd(v_X, h) only if it is the LAST H of its X
//!
//!  2. (VectorDimY, ScalarPerVector) = the first Y with stride 1 and the largest length > 1,
//!     else (0, 1): scalar accesses.
//!
//!  3. In which order? A space-filling curve over the Y lengths, dim order 0..NDimY,
//!     scalars_per_access = ScalarPerVector at VectorDimY (1 elsewhere); NumAccess accesses.
//!     Default: no snake (2025 reference); snake on request (Oct 2024 reference).
//!
//!     access i: y_start = curve.index(i); vector element j is Y = y_start + j·e_VectorDimY and
//!     lands in the thread buffer at d = ys_to_d(that Y); forward_step(i) = the Y step to i+1.
//! ```
//!
//! Example (`doc_rowmajor_4x16_fixed` over an fp32 view guaranteeing 4-vectors on its last
//! dim): Y1 is the last H (length 4) of X1, so `ScalarPerVector = gcd(4, 4) = 4` on Y1; with Y
//! lengths (2, 4) there are 2 accesses, `d_elems` = (0,1,2,3) then (4,5,6,7).
//!
//! The traits are compile-time constants of a kernel (they depend only on lengths), so they
//! are plain `i64` data here.

use tilekit_layout::{SpaceFillingCurve, TensorAdaptor, TensorDescriptor};

use crate::distribution::TileDistribution;
use crate::error::{Result, TileError};

/// The order of a window's accesses over the Y space.
///
/// ```
/// use tilekit_tile::traits::AccessCurve;
/// assert_eq!(AccessCurve::default(), AccessCurve::Linear);
/// assert!(AccessCurve::Snake.is_snake());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AccessCurve {
    /// Row-major over Y, last Y fastest (2025 reference; tilekit's default).
    #[default]
    Linear,
    /// Snake-curved (Oct 2024 reference): inner dims reverse on odd outer positions.
    Snake,
}

impl AccessCurve {
    /// Whether the curve snakes.
    ///
    /// ```
    /// use tilekit_tile::traits::AccessCurve;
    /// assert!(!AccessCurve::Linear.is_snake());
    /// ```
    pub fn is_snake(self) -> bool {
        self == AccessCurve::Snake
    }
}

/// One access of the traits' curve: where it starts in Y, and where its vector elements land
/// in the thread buffer.
///
/// ```
/// use tilekit_tile::traits::TraitsAccess;
/// let a = TraitsAccess { i: 0, y_start: vec![0, 0], d_start: 0, d_elems: vec![0, 1], forward_step: Some(vec![0, 2]) };
/// assert_eq!(a.d_elems.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TraitsAccess {
    /// Access number.
    pub i: i64,
    /// Y index of the vector's first element (`SFC_Ys::get_index(i)`).
    pub y_start: Vec<i64>,
    /// `ys_to_d(y_start)`.
    pub d_start: i64,
    /// `ys_to_d(y_start + j·e_VectorDimY)` for each vector element `j`.
    pub d_elems: Vec<i64>,
    /// The Y step to the next access (`None` for the last).
    pub forward_step: Option<Vec<i64>>,
}

/// Load/store traits of a tile window (`tile_window_with_static_distribution::load_store_traits`).
///
/// ```
/// use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
/// use tilekit_layout::TensorDescriptor;
/// let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
///     ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]],
///     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
/// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((4, 1))).unwrap();
/// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap();
/// assert_eq!((t.vector_dim_y(), t.scalar_per_vector(), t.num_access()), (1, 4, 2));
/// assert_eq!(t.access(1).unwrap().d_elems, vec![4, 5, 6, 7]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LoadStoreTraits {
    bottom_lengths: Vec<i64>,
    bottom_strides: Vec<i64>,
    ys_lengths_safe: Vec<i64>,
    ys_strides_safe: Vec<i64>,
    y_lengths: Vec<i64>,
    vector_dim_y: usize,
    scalar_per_vector: i64,
    scalars_per_access: Vec<i64>,
    sfc: SpaceFillingCurve,
    ys_to_d: TensorDescriptor<i64>,
}

impl LoadStoreTraits {
    /// The traits of a window over a view with descriptor `bottom` and a distribution. The view
    /// must have one dim per X of the distribution.
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// use tilekit_layout::TensorDescriptor;
    /// let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    ///     ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]],
    ///     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![64i64], vec![1], Some((4, 1))).unwrap();
    /// let e = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap_err();
    /// assert_eq!(e.to_string(), "load/store traits: bottom view rank = 1 is invalid: \
    ///     the distribution has 2 X dims, so the view needs 2 dims");
    /// ```
    pub fn new(
        dist: &TileDistribution,
        bottom: &TensorDescriptor<i64>,
        curve: AccessCurve,
    ) -> Result<Self> {
        Self::from_adaptor(
            dist.ps_ys_to_xs(),
            dist.encoding().ndim_p(),
            dist.ys_to_d_descriptor(),
            bottom.top_safe_vector_lengths_strides(),
            curve,
        )
    }

    /// The traits from the raw parts the reference uses: a ps_ys_to_xs adaptor (top = `ndim_p`
    /// Ps then the Ys, bottom = X), its ys_to_d descriptor, and the bottom view's top safe
    /// vector (lengths, strides). [`LoadStoreTraits::new`] calls this; it also serves encodings
    /// tilekit refuses but the reference compiles
    /// ([`TileDistribution::reference_unchecked`]).
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// let spec = EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    ///     ps_to_rhss_major: vec![vec![1], vec![1]], ps_to_rhss_minor: vec![vec![0], vec![0]],
    ///     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] };
    /// let (a, ys_to_d) = TileDistribution::reference_unchecked(&spec).unwrap();
    /// let t = LoadStoreTraits::from_adaptor(&a, 2, &ys_to_d, (vec![-1, 8], vec![-1, 1]), AccessCurve::Snake).unwrap();
    /// assert_eq!((t.vector_dim_y(), t.scalar_per_vector()), (1, 4));
    /// ```
    pub fn from_adaptor(
        ps_ys_to_xs: &TensorAdaptor<i64>,
        ndim_p: usize,
        ys_to_d: &TensorDescriptor<i64>,
        bottom_safe: (Vec<i64>, Vec<i64>),
        curve: AccessCurve,
    ) -> Result<Self> {
        let ctx = "load/store traits";
        let (bottom_lengths, bottom_strides) = bottom_safe;
        let nx = ps_ys_to_xs.bottom_ids().len();
        if bottom_lengths.len() != nx || bottom_strides.len() != nx {
            return Err(TileError::invalid(
                ctx,
                "bottom view rank",
                bottom_lengths.len(),
                format!("the distribution has {nx} X dims, so the view needs {nx} dims"),
            ));
        }
        let ntop = ps_ys_to_xs.ndim_top();
        if ndim_p > ntop {
            return Err(TileError::invalid(
                ctx,
                "ndim_p",
                ndim_p,
                format!("the adaptor has {ntop} top dims (P then Y)"),
            ));
        }
        let y_lengths = ys_to_d.lengths();
        if y_lengths.len() != ntop - ndim_p || y_lengths.is_empty() {
            return Err(TileError::invalid(
                ctx,
                "ys_to_d rank",
                y_lengths.len(),
                format!("one Y per top dim of the adaptor after the {ndim_p} Ps (at least 1)"),
            ));
        }
        // 1. guaranteed vectors on the X slots, pushed up through the adaptor, read at the Ys.
        let nh = ps_ys_to_xs.ndim_hidden();
        let (mut gl, mut gs) = (vec![-1i64; nh], vec![-1i64; nh]);
        for (k, &id) in ps_ys_to_xs.bottom_ids().iter().enumerate() {
            gl[id] = bottom_lengths[k];
            gs[id] = bottom_strides[k];
        }
        let (top_l, top_s) = ps_ys_to_xs.top_safe_vector_lengths_strides(&gl, &gs);
        let ys_lengths_safe = top_l[ndim_p..].to_vec();
        let ys_strides_safe = top_s[ndim_p..].to_vec();
        // 2. (VectorDimY, ScalarPerVector): first stride-1 Y with the largest length.
        let (mut vector_dim_y, mut scalar_per_vector) = (0usize, 1i64);
        for (i, (&l, &s)) in ys_lengths_safe.iter().zip(&ys_strides_safe).enumerate() {
            if s == 1 && l > scalar_per_vector {
                (vector_dim_y, scalar_per_vector) = (i, l);
            }
        }
        // 3. the access curve.
        let mut scalars_per_access = vec![1i64; y_lengths.len()];
        scalars_per_access[vector_dim_y] = scalar_per_vector;
        let sfc = SpaceFillingCurve::new(
            y_lengths.clone(),
            (0..y_lengths.len()).collect(),
            scalars_per_access.clone(),
            curve.is_snake(),
        )?;
        if y_lengths[vector_dim_y] % scalar_per_vector != 0 {
            return Err(TileError::invalid(
                ctx,
                "ScalarPerVector",
                scalar_per_vector,
                format!(
                    "must divide the length {} of Y{vector_dim_y} (the reference's gcd rule \
                     guarantees it for guaranteed vectors pushed through a distribution)",
                    y_lengths[vector_dim_y]
                ),
            ));
        }
        Ok(LoadStoreTraits {
            bottom_lengths,
            bottom_strides,
            ys_lengths_safe,
            ys_strides_safe,
            y_lengths,
            vector_dim_y,
            scalar_per_vector,
            scalars_per_access,
            sfc,
            ys_to_d: ys_to_d.clone(),
        })
    }

    /// The bottom view's top safe vector lengths (per X).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((8, 1))).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap();
    /// assert_eq!((t.bottom_top_safe_vector_lengths(), t.bottom_top_safe_vector_strides()), (&[-1, 8][..], &[-1, 1][..]));
    /// ```
    pub fn bottom_top_safe_vector_lengths(&self) -> &[i64] {
        &self.bottom_lengths
    }

    /// The bottom view's top safe vector strides (per X).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((8, 1))).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap();
    /// assert_eq!(t.bottom_top_safe_vector_strides(), &[-1, 1]);
    /// ```
    pub fn bottom_top_safe_vector_strides(&self) -> &[i64] {
        &self.bottom_strides
    }

    /// Safe vector length per Y (`-1` = unknown).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((8, 1))).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap();
    /// assert_eq!((t.ys_safe_vector_lengths(), t.ys_safe_vector_strides()), (&[-1, 4][..], &[-1, 1][..]));
    /// ```
    pub fn ys_safe_vector_lengths(&self) -> &[i64] {
        &self.ys_lengths_safe
    }

    /// Safe vector stride per Y (`-1` = unknown).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((8, 1))).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap();
    /// assert_eq!(t.ys_safe_vector_strides(), &[-1, 1]);
    /// ```
    pub fn ys_safe_vector_strides(&self) -> &[i64] {
        &self.ys_strides_safe
    }

    /// Y lengths.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((8, 1))).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap();
    /// assert_eq!(t.y_lengths(), &[2, 4]);
    /// ```
    pub fn y_lengths(&self) -> &[i64] {
        &self.y_lengths
    }

    /// The Y dim that is vectorised (`VectorDimY`; 0 when accesses are scalar).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((8, 1))).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap();
    /// assert_eq!(t.vector_dim_y(), 1);
    /// ```
    pub fn vector_dim_y(&self) -> usize {
        self.vector_dim_y
    }

    /// Elements per vector access (`ScalarPerVector`).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((8, 1))).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap();
    /// assert_eq!(t.scalar_per_vector(), 4); // gcd(8, 4)
    /// ```
    pub fn scalar_per_vector(&self) -> i64 {
        self.scalar_per_vector
    }

    /// `ScalarPerVector` at `VectorDimY`, 1 elsewhere.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((8, 1))).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap();
    /// assert_eq!(t.scalars_per_access(), &[1, 4]);
    /// ```
    pub fn scalars_per_access(&self) -> &[i64] {
        &self.scalars_per_access
    }

    /// Number of accesses per thread (`NumAccess`).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((8, 1))).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap();
    /// assert_eq!(t.num_access(), 2);
    /// ```
    pub fn num_access(&self) -> i64 {
        self.sfc.num_access()
    }

    /// The access curve over the Y space (`SFC_Ys`).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], None).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Snake).unwrap();
    /// assert!(t.curve().snake());
    /// assert_eq!(t.curve().num_access(), 8);
    /// ```
    pub fn curve(&self) -> &SpaceFillingCurve {
        &self.sfc
    }

    /// Access `i`: its Y start, the thread-buffer offsets of its vector elements, and its
    /// forward step; an error for `i` outside `0..num_access`.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], None).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Snake).unwrap();
    /// let a = t.access(4).unwrap();
    /// assert_eq!((a.y_start, a.d_elems, a.forward_step), (vec![1, 3], vec![7], Some(vec![0, -1])));
    /// assert!(t.access(8).is_err());
    /// ```
    pub fn access(&self, i: i64) -> Result<TraitsAccess> {
        let y_start = self.sfc.index(i)?;
        // the curve and ys_to_d have one dim per Y (checked when the traits were built)
        let d_start = self.ys_to_d.calculate_offset_unchecked(&y_start);
        let d_elems = (0..self.scalar_per_vector)
            .map(|j| {
                let mut y = y_start.clone();
                y[self.vector_dim_y] += j;
                self.ys_to_d.calculate_offset_unchecked(&y)
            })
            .collect();
        Ok(TraitsAccess { i, y_start, d_start, d_elems, forward_step: self.sfc.forward_step(i) })
    }

    /// Every access in order.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec, traits::{LoadStoreTraits, AccessCurve}};
    /// # use tilekit_layout::TensorDescriptor;
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let view = TensorDescriptor::naive(vec![4i64, 16], vec![16, 1], Some((4, 1))).unwrap();
    /// let t = LoadStoreTraits::new(&d, &view, AccessCurve::Linear).unwrap();
    /// let starts: Vec<Vec<i64>> = t.accesses().into_iter().map(|a| a.y_start).collect();
    /// assert_eq!(starts, vec![vec![0, 0], vec![1, 0]]);
    /// ```
    pub fn accesses(&self) -> Vec<TraitsAccess> {
        (0..self.num_access()).filter_map(|i| self.access(i).ok()).collect()
    }
}
