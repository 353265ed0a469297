//! Tile distributions: an encoding turned into index math (SEMANTICS §9).
//!
//! A [`TileDistribution`] holds two layout objects built from its encoding:
//!
//! ```text
//!   ps_ys_to_xs adaptor (top = [P…, Y…], bottom = [X…])       ys_to_d descriptor
//!
//!      P0      P1       Y0    Y1                                  Y0  Y1
//!      │       │        │     │                                    └┬─┘
//!    merge   merge      │     │      ← one merge per P               unmerge(Y lengths)
//!      │       │        │     │                                     │
//!   X0.H0   X1.H0    X0.H1  X1.H1   (R ids: replicate, no lower)    d = row-major(y)
//!      └──┬────┼────────┘     │
//!      unmerge(X0 Hs)      unmerge(X1 Hs)
//!         │                   │
//!         X0                  X1
//!
//!   hidden ids: 0..NDimX = X; then every R component; then the H components of X0, X1, …;
//!   then one id per P. Transforms in order: replicate(R), unmerge per X, merge per P.
//! ```
//!
//! Evaluating X from (P, Y) runs the merges first (P → its RH components), then the unmerges
//! (H → X). `d = ys_to_d(y)` numbers a thread's registers row-major in Y order, last Y fastest.
//!
//! All index methods are generic over the index domain: on `i64` they evaluate; on the IR's
//! symbolic values they generate the thread-dependent index math of a kernel.

use tilekit_layout::adaptor::Stage;
use tilekit_layout::{Idx, TensorAdaptor, TensorDescriptor, Transform};

use crate::encoding::{EncodingSpec, Rh, TileDistributionEncoding};
use crate::error::{Result, TileError};

/// A tile distribution: an encoding with its ps_ys_to_xs adaptor and ys_to_d descriptor.
///
/// ```
/// use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
/// // 2×4 threads over a 4×16 tile, each holding 2×4 values (the documents' RowMajorDist, repaired)
/// let d = TileDistribution::from_spec(EncodingSpec {
///     rs_lengths: vec![],
///     hs_lengthss: vec![vec![2, 2], vec![4, 4]],
///     ps_to_rhss_major: vec![vec![1], vec![2]],
///     ps_to_rhss_minor: vec![vec![0], vec![0]],
///     ys_to_rhs_major: vec![1, 2],
///     ys_to_rhs_minor: vec![1, 1],
/// }).unwrap();
/// assert_eq!(d.thread_buffer_size(), 8);
/// assert_eq!(d.calculate_index(&[1i64, 3]).unwrap(), vec![2, 12]);         // thread origin
/// assert_eq!(d.calculate_x(&[1i64, 3], &[1, 2]).unwrap(), vec![3, 14]);    // its element y = (1, 2)
/// assert_eq!(d.ys_to_d(&[1i64, 2]).unwrap(), 6);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TileDistribution {
    encoding: TileDistributionEncoding,
    ps_ys_to_xs: TensorAdaptor<i64>,
    ys_to_d: TensorDescriptor<i64>,
    rh_hidden: Vec<Vec<usize>>,
}

impl TileDistribution {
    /// The distribution of a validated encoding (`make_static_tile_distribution`).
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, encoding::{EncodingSpec, TileDistributionEncoding}};
    /// let e = TileDistributionEncoding::new(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    ///     ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// let d = TileDistribution::new(e).unwrap();
    /// assert_eq!(d.calculate_x(&[1i64], &[1]).unwrap(), vec![1, 1]);
    /// ```
    pub fn new(encoding: TileDistributionEncoding) -> Result<Self> {
        let (ps_ys_to_xs, rh_hidden) =
            build_adaptor(encoding.spec(), encoding.ps(), encoding.ys())?;
        let ys_to_d = TensorDescriptor::packed(encoding.ys_lengths(), None)?;
        Ok(TileDistribution { encoding, ps_ys_to_xs, ys_to_d, rh_hidden })
    }

    /// Validates a spec and builds its distribution.
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// let err = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    ///     ps_to_rhss_major: vec![vec![1], vec![1]], ps_to_rhss_minor: vec![vec![0], vec![0]],
    ///     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap_err();
    /// assert!(err.to_string().starts_with("tile distribution encoding: X0.H0 = "));
    /// ```
    pub fn from_spec(spec: EncodingSpec) -> Result<Self> {
        Self::new(TileDistributionEncoding::new(spec)?)
    }

    /// What the **reference** builds for a spec that is in range but misuses components (an H
    /// used twice or never; SEMANTICS §8.4) — the lower-numbered P wins and unwritten components
    /// stay 0. For conformance and for explaining broken encodings; kernels use
    /// [`TileDistribution::new`]. Returns the adaptor and the ys_to_d descriptor.
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// let spec = EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    ///     ps_to_rhss_major: vec![vec![1], vec![1]], ps_to_rhss_minor: vec![vec![0], vec![0]],
    ///     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] };
    /// let (a, _) = TileDistribution::reference_unchecked(&spec).unwrap();
    /// // P0 = 1 and P1 = 0 both write X0.H0; P0 wins; X1.H0 is never written
    /// assert_eq!(a.calculate_bottom_index(&[1, 0, 0, 0]).unwrap(), vec![2, 0]);
    /// assert_eq!(a.calculate_bottom_index(&[0, 1, 0, 0]).unwrap(), vec![0, 0]);
    /// ```
    pub fn reference_unchecked(
        spec: &EncodingSpec,
    ) -> Result<(TensorAdaptor<i64>, TensorDescriptor<i64>)> {
        let ck = |v: i64, n: usize, field: String| -> Result<usize> {
            if v < 0 || v as usize >= n {
                return Err(TileError::invalid(
                    "reference encoding",
                    field,
                    v,
                    format!("must be in 0..{n}"),
                ));
            }
            Ok(v as usize)
        };
        // the lists are zipped below: their lengths must agree, or Ps and Ys would silently
        // go missing from the adaptor
        let same = |field: &str, got: usize, want: usize, of: &str| -> Result<()> {
            if got != want {
                return Err(TileError::invalid(
                    "reference encoding",
                    field.to_string(),
                    got,
                    format!("must have {want} entries, one per entry of {of}"),
                ));
            }
            Ok(())
        };
        same(
            "ps_to_rhss_minor (entries)",
            spec.ps_to_rhss_minor.len(),
            spec.ps_to_rhss_major.len(),
            "ps_to_rhss_major",
        )?;
        for (p, (mas, mis)) in spec.ps_to_rhss_major.iter().zip(&spec.ps_to_rhss_minor).enumerate()
        {
            same(
                &format!("ps_to_rhss_minor[{p}] (entries)"),
                mis.len(),
                mas.len(),
                &format!("ps_to_rhss_major[{p}]"),
            )?;
        }
        same(
            "ys_to_rhs_minor (entries)",
            spec.ys_to_rhs_minor.len(),
            spec.ys_to_rhs_major.len(),
            "ys_to_rhs_major",
        )?;
        let nx = spec.hs_lengthss.len();
        let count = |ma: usize| {
            if ma == 0 {
                spec.rs_lengths.len()
            } else {
                spec.hs_lengthss[ma - 1].len()
            }
        };
        let mut ps = Vec::new();
        for (p, (mas, mis)) in spec.ps_to_rhss_major.iter().zip(&spec.ps_to_rhss_minor).enumerate()
        {
            let mut l = Vec::new();
            for (k, (&ma, &mi)) in mas.iter().zip(mis).enumerate() {
                let ma = ck(ma, nx + 1, format!("ps_to_rhss_major[{p}][{k}]"))?;
                let mi = ck(mi, count(ma), format!("ps_to_rhss_minor[{p}][{k}]"))?;
                l.push(Rh { major: ma, minor: mi });
            }
            ps.push(l);
        }
        let mut ys = Vec::new();
        for (y, (&ma, &mi)) in spec.ys_to_rhs_major.iter().zip(&spec.ys_to_rhs_minor).enumerate() {
            let ma = ck(ma, nx + 1, format!("ys_to_rhs_major[{y}]"))?;
            let mi = ck(mi, count(ma), format!("ys_to_rhs_minor[{y}]"))?;
            ys.push(Rh { major: ma, minor: mi });
        }
        let (a, _) = build_adaptor(spec, &ps, &ys)?;
        let ylens: Vec<i64> = ys
            .iter()
            .map(|c| {
                if c.major == 0 {
                    spec.rs_lengths[c.minor]
                } else {
                    spec.hs_lengthss[c.major - 1][c.minor]
                }
            })
            .collect();
        Ok((a, TensorDescriptor::packed(ylens, None)?))
    }

    /// The encoding.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(d.encoding().ndim_x(), 2);
    /// ```
    pub fn encoding(&self) -> &TileDistributionEncoding {
        &self.encoding
    }

    /// The ps_ys_to_xs adaptor (top = P then Y, bottom = X), with the reference's hidden ids.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(d.ps_ys_to_xs().top_ids(), &[4, 3]);
    /// ```
    pub fn ps_ys_to_xs(&self) -> &TensorAdaptor<i64> {
        &self.ps_ys_to_xs
    }

    /// The ys_to_d descriptor (packed over the Y lengths).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(d.ys_to_d_descriptor().element_space_size(), 2);
    /// ```
    pub fn ys_to_d_descriptor(&self) -> &TensorDescriptor<i64> {
        &self.ys_to_d
    }

    /// `rh_major_minor_to_adaptor_hidden_idss[major][minor]`.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(d.rh_hidden_ids(), &[vec![], vec![2], vec![3]]);
    /// ```
    pub fn rh_hidden_ids(&self) -> &[Vec<usize>] {
        &self.rh_hidden
    }

    /// The number of P entries then Y entries `calculate_x` expects.
    fn check_py<I>(&self, p: &[I], y: &[I]) -> Result<()> {
        let (np, ny) = (self.encoding.ndim_p(), self.encoding.ndim_y());
        if p.len() != np || y.len() != ny {
            return Err(TileError::invalid(
                "tile distribution",
                "P/Y index rank",
                (p.len(), y.len()),
                format!("the distribution has {np} P dims and {ny} Y dims"),
            ));
        }
        Ok(())
    }

    /// X lengths (the tile shape).
    pub fn x_lengths(&self) -> Vec<i64> {
        self.encoding.x_lengths()
    }
    /// P lengths (threads per P dim).
    pub fn p_lengths(&self) -> Vec<i64> {
        self.encoding.p_lengths()
    }
    /// Y lengths.
    pub fn y_lengths(&self) -> Vec<i64> {
        self.encoding.ys_lengths()
    }
    /// Values per thread (`Π Y lengths`).
    pub fn thread_buffer_size(&self) -> i64 {
        self.y_lengths().iter().product()
    }
    /// Threads in the block (`Π P lengths`).
    pub fn num_threads(&self) -> i64 {
        self.p_lengths().iter().product()
    }

    /// X of (P, Y): `ps_ys_to_xs.calculate_bottom_index(p ++ y)`; an error when `p` does not
    /// have one entry per P or `y` one per Y.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(d.calculate_x(&[1i64], &[0]).unwrap(), vec![1, 0]);
    /// assert_eq!(
    ///     d.calculate_x(&[1i64, 0], &[]).unwrap_err().to_string(),
    ///     "tile distribution: P/Y index rank = (2, 0) is invalid: the distribution has 1 P dims and 1 Y dims"
    /// );
    /// ```
    pub fn calculate_x<I: Idx>(&self, p: &[I], y: &[I]) -> Result<Vec<I>> {
        self.check_py(p, y)?;
        Ok(self.calculate_x_unchecked(p, y))
    }

    /// **Unchecked fast path** of [`calculate_x`](Self::calculate_x): the caller guarantees
    /// `p.len() == ndim_p` and `y.len() == ndim_y` (a debug assertion checks it; in release
    /// builds a wrong rank gives a meaningless index).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(d.calculate_x_unchecked(&[1i64], &[1]), vec![1, 1]);
    /// ```
    pub fn calculate_x_unchecked<I: Idx>(&self, p: &[I], y: &[I]) -> Vec<I> {
        let top: Vec<I> = p.iter().chain(y).cloned().collect();
        self.ps_ys_to_xs.lift::<I>().calculate_bottom_index_unchecked(&top)
    }

    /// The thread origin: X at (P = p, Y = 0) (`calculate_index`); an error when `p` does not
    /// have one entry per P.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(d.calculate_index(&[1i64]).unwrap(), vec![1, 0]);
    /// assert!(d.calculate_index(&[1i64, 1]).is_err());
    /// ```
    pub fn calculate_index<I: Idx>(&self, p: &[I]) -> Result<Vec<I>> {
        let y = vec![I::lit(0); self.encoding.ndim_y()];
        self.calculate_x(p, &y)
    }

    /// R indices of a thread (`calculate_rs_index_from_ps_index`): R components not owned by
    /// any P are 0. An error when `p` does not have one entry per P.
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// // P0 = (R0 = 2, X0.H0 = 4), P1 = X1.H0
    /// let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![2], hs_lengthss: vec![vec![4, 2], vec![4, 2]],
    ///     ps_to_rhss_major: vec![vec![0, 1], vec![2]], ps_to_rhss_minor: vec![vec![0, 0], vec![0]],
    ///     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// assert_eq!(d.calculate_rs_index_from_ps_index(&[5i64, 0]).unwrap(), vec![1]);
    /// assert!(d.calculate_rs_index_from_ps_index(&[5i64]).is_err());
    /// ```
    pub fn calculate_rs_index_from_ps_index<I: Idx>(&self, p: &[I]) -> Result<Vec<I>> {
        let y = vec![I::lit(0); self.encoding.ndim_y()];
        self.check_py(p, &y)?;
        let top: Vec<I> = p.iter().cloned().chain(y).collect();
        let hidden = self.ps_ys_to_xs.lift::<I>().calculate_hidden_index_unchecked(&top);
        Ok(self.rh_hidden[0].iter().map(|&h| hidden[h].clone()).collect())
    }

    /// The thread-buffer index of a Y index (`ys_to_d`); an error when `y` does not have one
    /// entry per Y.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(d.ys_to_d(&[1i64]).unwrap(), 1);
    /// assert!(d.ys_to_d(&[1i64, 0]).is_err());
    /// ```
    pub fn ys_to_d<I: Idx>(&self, y: &[I]) -> Result<I> {
        Ok(self.ys_to_d.lift::<I>().calculate_offset(y)?)
    }

    /// **Unchecked fast path** of [`ys_to_d`](Self::ys_to_d): the caller guarantees
    /// `y.len() == ndim_y` (debug assertion only).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// assert_eq!(d.ys_to_d_unchecked(&[1i64, 2]), 6);
    /// ```
    pub fn ys_to_d_unchecked<I: Idx>(&self, y: &[I]) -> I {
        self.ys_to_d.lift::<I>().calculate_offset_unchecked(y)
    }

    /// The Y index of a thread-buffer index (inverse of [`ys_to_d`](Self::ys_to_d)).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// assert_eq!(d.d_to_ys(6), vec![1, 2]);
    /// ```
    pub fn d_to_ys(&self, d: i64) -> Vec<i64> {
        let lens = self.y_lengths();
        let mut y = vec![0; lens.len()];
        let mut rest = d;
        for i in (0..lens.len()).rev() {
            y[i] = rest % lens[i];
            rest /= lens[i];
        }
        y
    }

    /// Distributed spans (per X, lengths of its Y-mapped H components in H order).
    pub fn distributed_spans(&self) -> Vec<Vec<i64>> {
        self.encoding.distributed_spans()
    }

    /// Y index from distributed indices (one index list per X, over that X's span):
    /// `y_i = dist[span_major(i)][span_minor(i)]`.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// assert_eq!(d.y_from_distributed(&[vec![1], vec![3]]).unwrap(), vec![1, 3]);
    /// assert!(d.y_from_distributed(&[vec![1]]).is_err());
    /// ```
    pub fn y_from_distributed(&self, dist: &[Vec<i64>]) -> Result<Vec<i64>> {
        let spans = self.distributed_spans();
        if dist.len() != spans.len() {
            return Err(TileError::invalid(
                "distributed index",
                "number of X lists",
                dist.len(),
                format!("one index list per X ({})", spans.len()),
            ));
        }
        for (x, (d, s)) in dist.iter().zip(&spans).enumerate() {
            if d.len() != s.len() || d.iter().zip(s).any(|(i, l)| *i < 0 || i >= l) {
                return Err(TileError::invalid(
                    "distributed index",
                    format!("X{x}"),
                    d,
                    format!("an index inside the span {s:?}"),
                ));
            }
        }
        let (ma, mi) = (self.encoding.ys_to_span_major(), self.encoding.ys_to_span_minor());
        Ok(ma.iter().zip(&mi).map(|(&a, &b)| dist[a][b]).collect())
    }

    /// The Y indices in `sweep_tile` order: nested loops with X0 outermost, each X's span dims
    /// row-major (an X without span contributes one empty index).
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// // Y0 on X1, Y1 on X0: the sweep runs Y1 (on X0) outer, Y0 inner
    /// let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![2, 3]],
    ///     ps_to_rhss_major: vec![vec![1, 2]], ps_to_rhss_minor: vec![vec![0, 0]],
    ///     ys_to_rhs_major: vec![2, 1], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// assert_eq!(&d.sweep_order()[..4], &[vec![0, 0], vec![1, 0], vec![2, 0], vec![0, 1]]);
    /// ```
    pub fn sweep_order(&self) -> Vec<Vec<i64>> {
        let spans = self.distributed_spans();
        let flat: Vec<i64> = spans.iter().flatten().copied().collect();
        let mut out = Vec::new();
        for k in 0..flat.iter().product::<i64>() {
            let mut digits = vec![0; flat.len()];
            let mut rest = k;
            for i in (0..flat.len()).rev() {
                digits[i] = rest % flat[i];
                rest /= flat[i];
            }
            let mut dist = Vec::with_capacity(spans.len());
            let mut at = 0;
            for s in &spans {
                dist.push(digits[at..at + s.len()].to_vec());
                at += s.len();
            }
            out.push(self.y_from_distributed(&dist).expect("digits lie inside the spans"));
        }
        out
    }

    /// Slices the distribution along X (`detail::slice_distribution_from_x`): per X, the range
    /// `[begin, end)` must be a box of whole P components and partial Y components. The slice
    /// length is split over the H components from the last (fastest) with gcds; the box must be
    /// contiguous and start on a multiple of its shape. Returns the sliced distribution and, per
    /// Y, the origin of the slice in the original Y space.
    ///
    /// ```
    /// use tilekit_tile::{TileDistribution, encoding::EncodingSpec};
    /// // X1 = H(4 values (Y1), 4 lanes (P1)): column = 4·y1 + lane
    /// let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    ///     ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![1]],
    ///     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 0] }).unwrap();
    /// // columns 4..12: every lane keeps y1 = 1, 2
    /// let (s, y0) = d.slice_x(&[0, 4], &[4, 12]).unwrap();
    /// assert_eq!((s.x_lengths(), s.y_lengths(), y0), (vec![4, 8], vec![2, 2], vec![0, 1]));
    /// // columns 0..2 would cut the lane component
    /// assert!(d.slice_x(&[0, 0], &[4, 2]).is_err());
    /// ```
    pub fn slice_x(&self, begins: &[i64], ends: &[i64]) -> Result<(TileDistribution, Vec<i64>)> {
        let enc = &self.encoding;
        let nx = enc.ndim_x();
        if begins.len() != nx || ends.len() != nx {
            return Err(TileError::invalid(
                "slice distribution",
                "x_begins/x_ends",
                (begins.len(), ends.len()),
                format!("one begin and one end per X ({nx})"),
            ));
        }
        let mut spec = enc.spec().clone();
        let mut y_origin = vec![0; enc.ndim_y()];
        for x in 0..nx {
            let hs = &enc.spec().hs_lengthss[x];
            let (b, e) = (begins[x], ends[x]);
            let full: i64 = hs.iter().product();
            if b < 0 || e > full || e <= b {
                return Err(TileError::invalid(
                    "slice distribution",
                    format!("X{x} range"),
                    (b, e),
                    format!("0 <= begin < end <= {full}"),
                ));
            }
            let mut rem = e - b;
            let mut new = vec![0; hs.len()];
            for j in (0..hs.len()).rev() {
                new[j] = tilekit_layout::idx::gcd(rem, hs[j]);
                rem /= new[j];
            }
            let first_partial = (0..hs.len()).find(|&j| new[j] > 1);
            let contiguous =
                first_partial.is_none_or(|f| (f + 1..hs.len()).all(|j| new[j] == hs[j]));
            if rem != 1 || !contiguous {
                return Err(TileError::invalid(
                    "slice distribution",
                    format!("X{x} length"),
                    e - b,
                    format!("a contiguous box of the H components {hs:?} (split from the fastest with gcds)"),
                ));
            }
            // digits of the begin
            let mut digits = vec![0; hs.len()];
            let mut rest = b;
            for j in (0..hs.len()).rev() {
                digits[j] = rest % hs[j];
                rest /= hs[j];
            }
            for j in 0..hs.len() {
                let c = Rh { major: x + 1, minor: j };
                let is_y = enc.y_of(c);
                if digits[j] + new[j] > hs[j] || (new[j] == hs[j] && digits[j] != 0) {
                    return Err(TileError::invalid(
                        "slice distribution",
                        format!("X{x} begin"),
                        b,
                        format!("a multiple of the box {new:?} inside the H components {hs:?}"),
                    ));
                }
                match is_y {
                    Some(y) => y_origin[y] = digits[j],
                    None if new[j] != hs[j] => {
                        return Err(TileError::invalid(
                            "slice distribution",
                            format!("X{x}.H{j}"),
                            hs[j],
                            "only Y components can be sliced; a P component must stay whole",
                        ))
                    }
                    None => {}
                }
            }
            spec.hs_lengthss[x] = new;
        }
        Ok((TileDistribution::from_spec(spec)?, y_origin))
    }
}

/// Builds the ps_ys_to_xs adaptor of the reference for components already range-checked.
fn build_adaptor(
    spec: &EncodingSpec,
    ps: &[Vec<Rh>],
    ys: &[Rh],
) -> Result<(TensorAdaptor<i64>, Vec<Vec<usize>>)> {
    let nx = spec.hs_lengthss.len();
    let nr = spec.rs_lengths.len();
    let mut rh_hidden = vec![(nx..nx + nr).collect::<Vec<usize>>()];
    let mut next = nx + nr;
    for hs in &spec.hs_lengthss {
        rh_hidden.push((next..next + hs.len()).collect());
        next += hs.len();
    }
    let p0 = next;
    let len = |c: &Rh| {
        if c.major == 0 {
            spec.rs_lengths[c.minor]
        } else {
            spec.hs_lengthss[c.major - 1][c.minor]
        }
    };
    let mut stages = vec![Stage::new(
        Transform::replicate(spec.rs_lengths.clone())?,
        vec![],
        rh_hidden[0].clone(),
    )?];
    for (x, hs) in spec.hs_lengthss.iter().enumerate() {
        stages.push(Stage::new(
            Transform::unmerge(hs.clone())?,
            vec![x],
            rh_hidden[x + 1].clone(),
        )?);
    }
    for (p, list) in ps.iter().enumerate() {
        let lower: Vec<usize> = list.iter().map(|c| rh_hidden[c.major][c.minor]).collect();
        stages.push(Stage::new(
            Transform::merge(list.iter().map(len).collect())?,
            lower,
            vec![p0 + p],
        )?);
    }
    let top: Vec<usize> =
        (p0..p0 + ps.len()).chain(ys.iter().map(|c| rh_hidden[c.major][c.minor])).collect();
    let adaptor = TensorAdaptor::new(stages, (0..nx).collect(), top, p0 + ps.len())?;
    Ok((adaptor, rh_hidden))
}
