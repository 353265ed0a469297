//! Tile distribution encodings: R/H/P/Y, validated (SEMANTICS §8).
//!
//! An encoding says how a tile of X dims is spread over the threads of a block (P) and the
//! registers of each thread (Y), with optional replication (R):
//!
//! ```text
//!   X0 (rows, 16) = H(4, 4)        X1 (cols, 16) = H(2, 8)
//!                    │  │                          │  │
//!                    P0 Y0                         P1 Y1     P0 = warp dim, P1 = lane dim
//!
//!   RH major 0 = R, major m ≥ 1 = the H list of X(m−1); minor = position in that list.
//!   ps_to_rhss_major = [[1], [2]]  ps_to_rhss_minor = [[0], [0]]   (P0 = X0.H0, P1 = X1.H0)
//!   ys_to_rhs_major  = [1, 2]      ys_to_rhs_minor  = [1, 1]       (Y0 = X0.H1, Y1 = X1.H1)
//!
//!   X0 = h00·… row-major over its H list (first H slowest); each P is the row-major merge of
//!   its components (first listed slowest); each Y is exactly one component; threads whose P
//!   indices differ only in R components hold the same data.
//! ```
//!
//! The reference accepts broken encodings and silently produces wrong layouts (two Ps on one
//! component: the lower-numbered P wins and the other component stays 0). tilekit refuses them
//! when built: every H component used exactly once, no Y on R, majors and minors in range, no
//! empty lists; each error names the field, the value and the [`EncodingRule`].
//!
//! The derived tables of the reference (`tile_distribution_encoding::detail`) are methods here,
//! and so are the two helpers block GEMMs use: [`TileDistributionEncoding::embed`] (outer ⊗
//! inner) and [`TileDistributionEncoding::reduce`] (remove X dims, keeping P components as new
//! R dims).

use serde::{Deserialize, Serialize};

use crate::error::{EncodingRule, Result, TileError};

/// The six fields of an encoding as plain data (the JSON form of the conformance files), before
/// validation. Build a [`TileDistributionEncoding`] from it with
/// [`TileDistributionEncoding::new`].
///
/// ```
/// use tilekit_tile::encoding::EncodingSpec;
/// let spec: EncodingSpec = serde_json::from_str(r#"{"rs_lengths": [], "hs_lengthss": [[2], [2]],
///     "ps_to_rhss_major": [[1]], "ps_to_rhss_minor": [[0]], "ys_to_rhs_major": [2], "ys_to_rhs_minor": [0]}"#).unwrap();
/// assert_eq!(spec.hs_lengthss, vec![vec![2], vec![2]]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncodingSpec {
    /// R (replication) lengths.
    pub rs_lengths: Vec<i64>,
    /// Per X, its H lengths (first slowest).
    pub hs_lengthss: Vec<Vec<i64>>,
    /// Per P, the RH majors of its components.
    pub ps_to_rhss_major: Vec<Vec<i64>>,
    /// Per P, the RH minors of its components.
    pub ps_to_rhss_minor: Vec<Vec<i64>>,
    /// Per Y, its RH major.
    pub ys_to_rhs_major: Vec<i64>,
    /// Per Y, its RH minor.
    pub ys_to_rhs_minor: Vec<i64>,
}

/// One RH component: `major` 0 = R, `major` m ≥ 1 = H list of X(m−1); `minor` = position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rh {
    /// 0 = R, m ≥ 1 = X(m−1).
    pub major: usize,
    /// Position in that list.
    pub minor: usize,
}

/// A validated tile distribution encoding.
///
/// ```
/// use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding};
/// // 2 warps × 2 lanes over a 4×16 tile; each thread holds 2×4 values
/// let e = TileDistributionEncoding::new(EncodingSpec {
///     rs_lengths: vec![],
///     hs_lengthss: vec![vec![2, 2], vec![4, 4]],
///     ps_to_rhss_major: vec![vec![1], vec![2]],
///     ps_to_rhss_minor: vec![vec![0], vec![0]],
///     ys_to_rhs_major: vec![1, 2],
///     ys_to_rhs_minor: vec![1, 1],
/// }).unwrap();
/// assert_eq!(e.x_lengths(), vec![4, 16]);
/// assert_eq!(e.p_lengths(), vec![2, 4]);
/// assert_eq!(e.ys_lengths(), vec![2, 4]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TileDistributionEncoding {
    spec: EncodingSpec,
    ps: Vec<Vec<Rh>>,
    ys: Vec<Rh>,
}

fn enc_err(
    rule: EncodingRule,
    field: impl Into<String>,
    value: impl std::fmt::Debug,
    message: impl Into<String>,
) -> TileError {
    TileError::Encoding {
        rule,
        field: field.into(),
        value: format!("{value:?}"),
        message: message.into(),
    }
}

impl TileDistributionEncoding {
    /// Validates an encoding. The rules, in the order they are checked:
    /// [`EncodingRule::NotEmpty`], [`EncodingRule::PositiveLength`], [`EncodingRule::FitsInI64`],
    /// [`EncodingRule::PairedLists`],
    /// [`EncodingRule::MajorInRange`], [`EncodingRule::MinorInRange`], [`EncodingRule::NoYOnR`],
    /// [`EncodingRule::RUsedAtMostOnce`], [`EncodingRule::HUsedOnce`].
    ///
    /// ```
    /// use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding};
    /// use tilekit_tile::error::EncodingRule;
    /// use tilekit_tile::TileError;
    /// // the design documents' literal RowMajorDist: Ys2RHsMajor = <2, 4>
    /// let err = TileDistributionEncoding::new(EncodingSpec {
    ///     rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    ///     ps_to_rhss_major: vec![vec![1], vec![1]], ps_to_rhss_minor: vec![vec![0], vec![0]],
    ///     ys_to_rhs_major: vec![2, 4], ys_to_rhs_minor: vec![1, 1],
    /// }).unwrap_err();
    /// assert_eq!(err.to_string(), "tile distribution encoding: ys_to_rhs_major[1] = 4 is invalid: \
    ///     the encoding has 2 X dims, so RH majors are 0 (R) or 1..=2 (X0..X1)");
    /// assert!(matches!(err, TileError::Encoding { rule: EncodingRule::MajorInRange, .. }));
    /// // a 2^32 × 2^32 tile has more elements than i64 counts
    /// let err = TileDistributionEncoding::new(EncodingSpec {
    ///     rs_lengths: vec![], hs_lengthss: vec![vec![1 << 32], vec![1 << 32]],
    ///     ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]],
    ///     ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0],
    /// }).unwrap_err();
    /// assert_eq!(err.to_string(), "tile distribution encoding: x_lengths = [4294967296, 4294967296] \
    ///     is invalid: the tile's element count (the product of the X lengths) overflows i64");
    /// ```
    pub fn new(spec: EncodingSpec) -> Result<Self> {
        use EncodingRule as R;
        let nx = spec.hs_lengthss.len();
        if nx == 0 {
            return Err(enc_err(
                R::NotEmpty,
                "hs_lengthss",
                &spec.hs_lengthss,
                "an encoding needs at least one X dim",
            ));
        }
        for (i, hs) in spec.hs_lengthss.iter().enumerate() {
            if hs.is_empty() {
                return Err(enc_err(
                    R::NotEmpty,
                    format!("hs_lengthss[{i}]"),
                    hs,
                    "every X needs at least one H component",
                ));
            }
        }
        if spec.ps_to_rhss_major.is_empty() {
            return Err(enc_err(
                R::NotEmpty,
                "ps_to_rhss_major",
                &spec.ps_to_rhss_major,
                "an encoding needs at least one P dim",
            ));
        }
        if spec.ys_to_rhs_major.is_empty() {
            return Err(enc_err(
                R::NotEmpty,
                "ys_to_rhs_major",
                &spec.ys_to_rhs_major,
                "an encoding needs at least one Y dim",
            ));
        }
        for (r, &l) in spec.rs_lengths.iter().enumerate() {
            if l < 1 {
                return Err(enc_err(
                    R::PositiveLength,
                    format!("rs_lengths[{r}]"),
                    l,
                    "lengths must be >= 1",
                ));
            }
        }
        for (i, hs) in spec.hs_lengthss.iter().enumerate() {
            for (j, &l) in hs.iter().enumerate() {
                if l < 1 {
                    return Err(enc_err(
                        R::PositiveLength,
                        format!("hs_lengthss[{i}][{j}]"),
                        l,
                        "lengths must be >= 1",
                    ));
                }
            }
        }
        check_sizes(&spec)?;
        if spec.ps_to_rhss_minor.len() != spec.ps_to_rhss_major.len() {
            return Err(enc_err(
                R::PairedLists,
                "ps_to_rhss_minor",
                &spec.ps_to_rhss_minor,
                format!(
                    "it must have one list per P, like ps_to_rhss_major ({} lists)",
                    spec.ps_to_rhss_major.len()
                ),
            ));
        }
        if spec.ys_to_rhs_minor.len() != spec.ys_to_rhs_major.len() {
            return Err(enc_err(
                R::PairedLists,
                "ys_to_rhs_minor",
                &spec.ys_to_rhs_minor,
                format!(
                    "it must have one entry per Y, like ys_to_rhs_major ({} entries)",
                    spec.ys_to_rhs_major.len()
                ),
            ));
        }
        let count = |major: usize| {
            if major == 0 {
                spec.rs_lengths.len()
            } else {
                spec.hs_lengthss[major - 1].len()
            }
        };
        let rh = |field_major: String, field_minor: String, major: i64, minor: i64| -> Result<Rh> {
            if major < 0 || major as usize > nx {
                return Err(enc_err(
                    R::MajorInRange,
                    field_major,
                    major,
                    format!("the encoding has {nx} X dims, so RH majors are 0 (R) or 1..={nx} (X0..X{})", nx - 1),
                ));
            }
            let major = major as usize;
            let n = count(major);
            if minor < 0 || minor as usize >= n {
                let list = if major == 0 { "R".to_string() } else { format!("X{}", major - 1) };
                return Err(enc_err(
                    R::MinorInRange,
                    field_minor,
                    minor,
                    format!(
                        "major {major} is {list}, which has {n} components, so minors are 0..{n}"
                    ),
                ));
            }
            Ok(Rh { major, minor: minor as usize })
        };
        let mut ps = Vec::with_capacity(spec.ps_to_rhss_major.len());
        for (p, (majors, minors)) in
            spec.ps_to_rhss_major.iter().zip(&spec.ps_to_rhss_minor).enumerate()
        {
            if majors.is_empty() {
                return Err(enc_err(
                    R::NotEmpty,
                    format!("ps_to_rhss_major[{p}]"),
                    majors,
                    "every P needs at least one component",
                ));
            }
            if majors.len() != minors.len() {
                return Err(enc_err(
                    R::PairedLists,
                    format!("ps_to_rhss_minor[{p}]"),
                    minors,
                    format!("it must have one minor per major ({} majors)", majors.len()),
                ));
            }
            let mut list = Vec::with_capacity(majors.len());
            for (k, (&ma, &mi)) in majors.iter().zip(minors).enumerate() {
                list.push(rh(
                    format!("ps_to_rhss_major[{p}][{k}]"),
                    format!("ps_to_rhss_minor[{p}][{k}]"),
                    ma,
                    mi,
                )?);
            }
            ps.push(list);
        }
        let mut ys = Vec::with_capacity(spec.ys_to_rhs_major.len());
        for (y, (&ma, &mi)) in spec.ys_to_rhs_major.iter().zip(&spec.ys_to_rhs_minor).enumerate() {
            let c = rh(format!("ys_to_rhs_major[{y}]"), format!("ys_to_rhs_minor[{y}]"), ma, mi)?;
            if c.major == 0 {
                return Err(enc_err(
                    R::NoYOnR,
                    format!("ys_to_rhs_major[{y}]"),
                    0,
                    "a Y cannot map to an R (replication) component: Ys hold X data, so majors of Ys are 1..=NDimX",
                ));
            }
            ys.push(c);
        }
        // usage: who uses each component
        let mut users: std::collections::BTreeMap<Rh, Vec<String>> = Default::default();
        for (p, list) in ps.iter().enumerate() {
            for (k, c) in list.iter().enumerate() {
                users.entry(*c).or_default().push(format!("P{p} (ps_to_rhss[{p}][{k}])"));
            }
        }
        for (y, c) in ys.iter().enumerate() {
            users.entry(*c).or_default().push(format!("Y{y}"));
        }
        for r in 0..spec.rs_lengths.len() {
            if let Some(u) = users.get(&Rh { major: 0, minor: r }) {
                if u.len() > 1 {
                    return Err(enc_err(
                        R::RUsedAtMostOnce,
                        format!("R{r}"),
                        u,
                        "an R component may be merged into at most one P, once",
                    ));
                }
            }
        }
        for (i, hs) in spec.hs_lengthss.iter().enumerate() {
            for (j, h) in hs.iter().enumerate() {
                match users.get(&Rh { major: i + 1, minor: j }) {
                    None => {
                        return Err(enc_err(
                            R::HUsedOnce,
                            format!("X{i}.H{j}"),
                            h,
                            "every H component must be used by exactly one P list or one Y, but nothing uses this one \
                             (the reference would leave it at 0)",
                        ))
                    }
                    Some(u) if u.len() > 1 => {
                        return Err(enc_err(
                            R::HUsedOnce,
                            format!("X{i}.H{j}"),
                            u,
                            "every H component must be used by exactly one P list or one Y (the reference lets the \
                             lower-numbered P win and leaves the other component at 0)",
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(TileDistributionEncoding { spec, ps, ys })
    }

    /// The encoding as plain data.
    ///
    /// ```
    /// # use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding};
    /// # let e = TileDistributionEncoding::new(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(e.spec().rs_lengths, Vec::<i64>::new());
    /// ```
    pub fn spec(&self) -> &EncodingSpec {
        &self.spec
    }

    /// `NDimX`.
    ///
    /// ```
    /// # use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding};
    /// # let e = TileDistributionEncoding::new(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!((e.ndim_x(), e.ndim_p(), e.ndim_y(), e.ndim_r()), (2, 1, 1, 0));
    /// ```
    pub fn ndim_x(&self) -> usize {
        self.spec.hs_lengthss.len()
    }
    /// `NDimP`.
    pub fn ndim_p(&self) -> usize {
        self.ps.len()
    }
    /// `NDimY`.
    pub fn ndim_y(&self) -> usize {
        self.ys.len()
    }
    /// `NDimR`.
    pub fn ndim_r(&self) -> usize {
        self.spec.rs_lengths.len()
    }

    /// The components of each P (first slowest).
    ///
    /// ```
    /// # use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding, Rh};
    /// # let e = TileDistributionEncoding::new(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(e.ps(), &[vec![Rh { major: 1, minor: 0 }]]);
    /// ```
    pub fn ps(&self) -> &[Vec<Rh>] {
        &self.ps
    }

    /// The component of each Y.
    ///
    /// ```
    /// # use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding, Rh};
    /// # let e = TileDistributionEncoding::new(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(e.ys(), &[Rh { major: 2, minor: 0 }]);
    /// ```
    pub fn ys(&self) -> &[Rh] {
        &self.ys
    }

    /// The length of a component; `None` for a component the encoding does not have.
    ///
    /// ```
    /// # use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding, Rh};
    /// # let e = TileDistributionEncoding::new(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![3]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(e.rh_length(Rh { major: 2, minor: 0 }), Some(3));
    /// assert_eq!(e.rh_length(Rh { major: 3, minor: 0 }), None);
    /// ```
    pub fn rh_length(&self, c: Rh) -> Option<i64> {
        if c.major == 0 {
            self.spec.rs_lengths.get(c.minor).copied()
        } else {
            self.spec.hs_lengthss.get(c.major - 1)?.get(c.minor).copied()
        }
    }

    /// The length of a component of this encoding's own P and Y lists (validated in range).
    fn len_of(&self, c: Rh) -> i64 {
        self.rh_length(c).unwrap_or(1)
    }

    /// Number of components of each RH major (`ndims_rhs_minor`).
    pub fn ndims_rhs_minor(&self) -> Vec<usize> {
        std::iter::once(self.ndim_r()).chain(self.spec.hs_lengthss.iter().map(Vec::len)).collect()
    }

    /// Per X, the product of its H lengths.
    pub fn x_lengths(&self) -> Vec<i64> {
        self.spec.hs_lengthss.iter().map(|h| h.iter().product()).collect()
    }

    /// Per P, the product of its components' lengths.
    pub fn p_lengths(&self) -> Vec<i64> {
        self.ps.iter().map(|l| l.iter().map(|c| self.len_of(*c)).product()).collect()
    }

    /// Per Y, its component's length.
    pub fn ys_lengths(&self) -> Vec<i64> {
        self.ys.iter().map(|c| self.len_of(*c)).collect()
    }

    /// `rhs_major_minor_to_ys[major][minor]`: the Y of a component, or `None`.
    ///
    /// ```
    /// # use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding, Rh};
    /// # let e = TileDistributionEncoding::new(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    /// #   ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// assert_eq!(e.y_of(Rh { major: 2, minor: 0 }), Some(0));
    /// assert_eq!(e.y_of(Rh { major: 1, minor: 0 }), None);
    /// ```
    pub fn y_of(&self, c: Rh) -> Option<usize> {
        self.ys.iter().position(|y| *y == c)
    }

    /// Distributed spans: per X, the lengths of its Y-mapped H components in H order.
    pub fn distributed_spans(&self) -> Vec<Vec<i64>> {
        (0..self.ndim_x())
            .map(|i| {
                let hs = &self.spec.hs_lengthss[i];
                (0..hs.len())
                    .filter(|&j| self.y_of(Rh { major: i + 1, minor: j }).is_some())
                    .map(|j| hs[j])
                    .collect()
            })
            .collect()
    }

    /// Per Y: its span major (the X it lives in).
    pub fn ys_to_span_major(&self) -> Vec<usize> {
        self.ys.iter().map(|c| c.major - 1).collect()
    }

    /// Per Y: its rank among the Y-mapped components of its X, by H minor.
    pub fn ys_to_span_minor(&self) -> Vec<usize> {
        self.ys
            .iter()
            .map(|c| {
                (0..c.minor)
                    .filter(|&j| self.y_of(Rh { major: c.major, minor: j }).is_some())
                    .count()
            })
            .collect()
    }

    /// Per X, how many span dims it has.
    pub fn ndims_distributed_spans_minor(&self) -> Vec<usize> {
        self.distributed_spans().iter().map(Vec::len).collect()
    }

    /// `does_p_own_r[p][r]`.
    pub fn does_p_own_r(&self) -> Vec<Vec<bool>> {
        self.ps
            .iter()
            .map(|l| (0..self.ndim_r()).map(|r| l.contains(&Rh { major: 0, minor: r })).collect())
            .collect()
    }

    /// `ps_over_rs_derivative[p][r]`: how much P advances per unit of R (the product of the
    /// lengths of the components listed after R in P's list; 0 when P does not own R).
    pub fn ps_over_rs_derivative(&self) -> Vec<Vec<i64>> {
        self.ps
            .iter()
            .map(|l| {
                (0..self.ndim_r())
                    .map(|r| match l.iter().position(|c| *c == Rh { major: 0, minor: r }) {
                        Some(k) => l[k + 1..].iter().map(|c| self.len_of(*c)).product(),
                        None => 0,
                    })
                    .collect()
            })
            .collect()
    }

    /// `detail::make_embed_tile_distribution_encoding(outer, inner)`: R = outer R ++ inner R; per X,
    /// H = outer H ++ inner H; inner minors shift by the outer count of the same major; Ps and Ys
    /// are outer's then inner's. Both encodings must have the same NDimX and NDimP.
    ///
    /// ```
    /// # use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding};
    /// let outer = TileDistributionEncoding::new(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
    ///     ps_to_rhss_major: vec![vec![1, 2]], ps_to_rhss_minor: vec![vec![0, 0]], ys_to_rhs_major: vec![], ys_to_rhs_minor: vec![] });
    /// assert!(outer.is_err()); // no Y: an outer encoding alone is not a distribution
    /// let outer = TileDistributionEncoding::new(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![2]],
    ///     ps_to_rhss_major: vec![vec![2]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![1, 1], ys_to_rhs_minor: vec![0, 1] }).unwrap();
    /// let inner = TileDistributionEncoding::new(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![4], vec![8]],
    ///     ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![2], ys_to_rhs_minor: vec![0] }).unwrap();
    /// let e = outer.embed(&inner).unwrap();
    /// assert_eq!(e.spec().hs_lengthss, vec![vec![2, 2, 4], vec![2, 8]]);
    /// assert_eq!(e.spec().ps_to_rhss_minor, vec![vec![0, 2]]);
    /// ```
    pub fn embed(&self, inner: &TileDistributionEncoding) -> Result<TileDistributionEncoding> {
        Self::new(embed_spec(&self.spec, &inner.spec)?)
    }

    /// `detail::make_reduce_tile_distribution_encoding(self, xs)`: removes the X dims in `xs`.
    /// In those dims, H components mapped to a Y are dropped with their Y; the others become new
    /// R dims appended after the existing ones; majors and minors are renumbered.
    ///
    /// ```
    /// # use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding};
    /// let e = TileDistributionEncoding::new(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![4, 2], vec![8, 4]],
    ///     ps_to_rhss_major: vec![vec![1, 2]], ps_to_rhss_minor: vec![vec![0, 0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let r = e.reduce(&[1]).unwrap();
    /// assert_eq!(r.spec().rs_lengths, vec![8]);
    /// assert_eq!(r.spec().hs_lengthss, vec![vec![4, 2]]);
    /// assert_eq!((r.spec().ps_to_rhss_major.clone(), r.spec().ps_to_rhss_minor.clone()), (vec![vec![1, 0]], vec![vec![0, 0]]));
    /// assert_eq!(r.spec().ys_to_rhs_major, vec![1]);
    /// ```
    pub fn reduce(&self, xs: &[usize]) -> Result<TileDistributionEncoding> {
        let nx = self.ndim_x();
        for (k, &x) in xs.iter().enumerate() {
            if x >= nx {
                return Err(TileError::invalid(
                    "reduce encoding",
                    format!("xs[{k}]"),
                    x,
                    format!("X dims are 0..{nx}"),
                ));
            }
        }
        let mut rs = self.spec.rs_lengths.clone();
        // where each old component goes: Some(new component) or None (dropped with its Y)
        let mut map: std::collections::BTreeMap<Rh, Rh> = Default::default();
        for r in 0..self.ndim_r() {
            map.insert(Rh { major: 0, minor: r }, Rh { major: 0, minor: r });
        }
        let mut new_hs = Vec::new();
        for i in 0..nx {
            let hs = &self.spec.hs_lengthss[i];
            if xs.contains(&i) {
                for (j, &l) in hs.iter().enumerate() {
                    let c = Rh { major: i + 1, minor: j };
                    if self.y_of(c).is_none() {
                        map.insert(c, Rh { major: 0, minor: rs.len() });
                        rs.push(l);
                    }
                }
            } else {
                let major = new_hs.len() + 1;
                for j in 0..hs.len() {
                    map.insert(Rh { major: i + 1, minor: j }, Rh { major, minor: j });
                }
                new_hs.push(hs.clone());
            }
        }
        let conv = |c: &Rh| map.get(c).copied();
        let ps: Vec<Vec<Rh>> =
            self.ps.iter().map(|l| l.iter().filter_map(conv).collect()).collect();
        let ys: Vec<Rh> = self.ys.iter().filter_map(conv).collect();
        Self::new(EncodingSpec {
            rs_lengths: rs,
            hs_lengthss: new_hs,
            ps_to_rhss_major: ps
                .iter()
                .map(|l| l.iter().map(|c| c.major as i64).collect())
                .collect(),
            ps_to_rhss_minor: ps
                .iter()
                .map(|l| l.iter().map(|c| c.minor as i64).collect())
                .collect(),
            ys_to_rhs_major: ys.iter().map(|c| c.major as i64).collect(),
            ys_to_rhs_minor: ys.iter().map(|c| c.minor as i64).collect(),
        })
    }
}

/// [`EncodingRule::FitsInI64`]: each X length, the element count and `Π R · Π X` fit in `i64`
/// (lengths are already known to be >= 1).
fn check_sizes(spec: &EncodingSpec) -> Result<()> {
    use tilekit_layout::idx::checked_product;
    let mut xs = Vec::with_capacity(spec.hs_lengthss.len());
    for (i, hs) in spec.hs_lengthss.iter().enumerate() {
        let Some(x) = checked_product(hs) else {
            return Err(enc_err(
                EncodingRule::FitsInI64,
                format!("hs_lengthss[{i}]"),
                hs,
                format!("the length of X{i} (the product of its H lengths) overflows i64"),
            ));
        };
        xs.push(x);
    }
    let Some(elements) = checked_product(&xs) else {
        return Err(enc_err(
            EncodingRule::FitsInI64,
            "x_lengths",
            &xs,
            "the tile's element count (the product of the X lengths) overflows i64",
        ));
    };
    if checked_product(&spec.rs_lengths).and_then(|r| r.checked_mul(elements)).is_none() {
        return Err(enc_err(
            EncodingRule::FitsInI64,
            "rs_lengths",
            &spec.rs_lengths,
            format!(
                "the number of (element, replica) pairs Π R · Π X (with {elements} elements) \
                 overflows i64"
            ),
        ));
    }
    Ok(())
}

/// The embed of two encoding specs, without validating the result (outer-only specs, e.g.
/// with no Y, are fine inputs).
///
/// ```
/// use tilekit_tile::encoding::{embed_spec, EncodingSpec};
/// let outer = EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2], vec![2]],
///     ps_to_rhss_major: vec![vec![1, 2]], ps_to_rhss_minor: vec![vec![0, 0]], ys_to_rhs_major: vec![], ys_to_rhs_minor: vec![] };
/// let inner = EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![4], vec![4]],
///     ps_to_rhss_major: vec![vec![2]], ps_to_rhss_minor: vec![vec![0]], ys_to_rhs_major: vec![1], ys_to_rhs_minor: vec![0] };
/// let e = embed_spec(&outer, &inner).unwrap();
/// assert_eq!(e.ps_to_rhss_major, vec![vec![1, 2, 2]]);
/// assert_eq!(e.ps_to_rhss_minor, vec![vec![0, 0, 1]]);
/// assert_eq!(e.ys_to_rhs_minor, vec![1]);
/// ```
pub fn embed_spec(outer: &EncodingSpec, inner: &EncodingSpec) -> Result<EncodingSpec> {
    if outer.hs_lengthss.len() != inner.hs_lengthss.len() {
        return Err(TileError::invalid(
            "embed encoding",
            "inner.hs_lengthss",
            inner.hs_lengthss.len(),
            format!(
                "outer and inner must have the same number of X dims ({})",
                outer.hs_lengthss.len()
            ),
        ));
    }
    if outer.ps_to_rhss_major.len() != inner.ps_to_rhss_major.len() {
        return Err(TileError::invalid(
            "embed encoding",
            "inner.ps_to_rhss_major",
            inner.ps_to_rhss_major.len(),
            format!(
                "outer and inner must have the same number of P dims ({})",
                outer.ps_to_rhss_major.len()
            ),
        ));
    }
    let shift = |major: i64| -> i64 {
        if major == 0 {
            outer.rs_lengths.len() as i64
        } else {
            usize::try_from(major - 1)
                .ok()
                .and_then(|m| outer.hs_lengthss.get(m))
                .map_or(0, |h| h.len() as i64)
        }
    };
    let mut spec = outer.clone();
    spec.rs_lengths.extend(&inner.rs_lengths);
    for (h, ih) in spec.hs_lengthss.iter_mut().zip(&inner.hs_lengthss) {
        h.extend(ih);
    }
    // unvalidated specs may have unpaired lists: extend what is there (validation of the
    // result names the mismatch)
    if spec.ps_to_rhss_minor.len() < spec.ps_to_rhss_major.len() {
        spec.ps_to_rhss_minor.resize(spec.ps_to_rhss_major.len(), Vec::new());
    }
    let empty = Vec::new();
    for p in 0..outer.ps_to_rhss_major.len() {
        let inner_majors = &inner.ps_to_rhss_major[p];
        let inner_minors = inner.ps_to_rhss_minor.get(p).unwrap_or(&empty);
        spec.ps_to_rhss_major[p].extend(inner_majors);
        let minors =
            inner_majors.iter().zip(inner_minors).map(|(&ma, &mi)| mi.saturating_add(shift(ma)));
        spec.ps_to_rhss_minor[p].extend(minors);
    }
    spec.ys_to_rhs_major.extend(&inner.ys_to_rhs_major);
    let minors = inner.ys_to_rhs_major.iter().zip(&inner.ys_to_rhs_minor).map(|(&ma, &mi)| {
        // saturating: an absurd minor stays out of range and is refused when validated
        mi.saturating_add(shift(ma))
    });
    spec.ys_to_rhs_minor.extend(minors);
    Ok(spec)
}
