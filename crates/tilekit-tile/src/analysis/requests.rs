//! From a layout to warp requests: the shared-memory tile layouts the bank model is asked
//! about, the warp access patterns that read them, and the requests of a tile window's walk.
//!
//! The bank model ([`super::banks`]) judges one warp request at a time. This module produces
//! the requests, in two ways:
//!
//! ```text
//!  (a) layout + warp pattern                        (b) distribution + window
//!
//!   SmemLayout ──descriptor(R, C, bytes)──┐          TileDistribution ─┐
//!                                         ▼                            ▼
//!   WarpPattern: lane l of request q  ─▶ (row, col) ─▶ offset    LoadStoreTraits + walk of
//!     row      : element 32q + l, row-major                      every thread (P row-major),
//!     col      : element 32q + l, column-major                   thread t = lane t mod 32 of
//!     row-vecN : N-vector 32q + l, row-major                     warp t / 32; access i of the
//!     col-vecN : N-vector 32q + l, column-major                  32 lanes = one request
//!                (lanes walk down a column of vectors)
//!                                         │                            │
//!                                         ▼                            ▼
//!                          Vec<WarpAccess> ──▶ banks::analyze each ──▶ RequestsSummary
//! ```
//!
//! Pattern (a) covers the whole tile: `R·C / (32·N)` requests (the last one partial when the
//! tile is not a multiple of the warp). Pattern (b) analyses every access of every warp of the
//! block, exactly the offsets [`crate::TileWindow`] would read or write (invalid vectors, e.g. in
//! a pad, are inactive lanes).
//!
//! Both produce at most [`MAX_REQUESTS`] requests (65536: e.g. a 1024×2048 fp32 tile read one
//! element per lane); a larger walk is refused with a typed error before anything is
//! allocated, so the analysis of any input takes bounded time and memory (a shared-memory tile
//! is at most a few hundred KiB, far below the cap).
//!
//! ```
//! use tilekit_tile::analysis::requests::{tile_requests, summarize, SmemLayout, WarpPattern};
//! // a warp reading a column of 16-byte chunks of a 64×64 fp16 tile
//! let plain = SmemLayout::RowMajor.descriptor(64, 64, 2).unwrap();
//! let swz = SmemLayout::Swizzle128.descriptor(64, 64, 2).unwrap();
//! let s = |d| summarize(&tile_requests(&d, 2, WarpPattern::ColVec(8)).unwrap()).unwrap();
//! let (a, b) = (s(plain), s(swz));
//! assert_eq!((a.requests, a.transactions, a.ideal_transactions, a.worst_conflict), (16, 512, 64, 8));
//! assert_eq!((b.requests, b.transactions, b.ideal_transactions, b.worst_conflict), (16, 64, 64, 1));
//! ```

use std::fmt;
use std::str::FromStr;

use tilekit_layout::swizzle::{xor_lds, HopperSwizzle, TiledMorton};
use tilekit_layout::{LayoutError, TensorDescriptor};

use super::banks::{self, BankReport, NUM_BANKS};
use super::{WarpAccess, WARP_SIZE};
use crate::distribution::TileDistribution;
use crate::error::{Result, TileError};
use crate::traits::{AccessCurve, LoadStoreTraits};
use crate::window::walk_with_adaptor;

/// The most warp requests [`tile_requests`] and [`window_requests`] produce (a larger walk is
/// an error naming its size).
///
/// ```
/// use tilekit_tile::analysis::requests::{tile_requests, SmemLayout, WarpPattern, MAX_REQUESTS};
/// assert_eq!(MAX_REQUESTS, 65536);
/// let big = SmemLayout::RowMajor.descriptor(4096, 4096, 4).unwrap();   // 2^24 elements
/// let e = tile_requests(&big, 4, WarpPattern::Row).unwrap_err();
/// assert!(e.to_string().contains("524288 requests"));
/// ```
pub const MAX_REQUESTS: usize = 1 << 16;

/// How a 2-D shared-memory tile (`rows × cols`, top index `(row, col)`) is stored.
///
/// ```
/// use tilekit_tile::analysis::requests::SmemLayout;
/// let l: SmemLayout = "padded:4".parse().unwrap();
/// assert_eq!(l, SmemLayout::Padded(4));
/// assert_eq!(l.to_string(), "padded:4");
/// assert_eq!(l.descriptor(8, 8, 4).unwrap().calculate_offset(&[1, 0]).unwrap(), 12);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmemLayout {
    /// `offset = row · cols + col`.
    RowMajor,
    /// `offset = col · rows + row`.
    ColMajor,
    /// Row-major with `P` padding elements after each row: `offset = row · (cols + P) + col`.
    Padded(i64),
    /// Morton (Z-order) storage in square tiles of side `min(rows, cols)`, tiles row-major
    /// ([`TiledMorton`]); both sides must be powers of two.
    Morton,
    /// Hopper's 128-byte swizzle ([`HopperSwizzle::B128`]): rows of exactly 128 bytes.
    Swizzle128,
    /// Hopper's 64-byte swizzle: rows of exactly 64 bytes.
    Swizzle64,
    /// Hopper's 32-byte swizzle: rows of exactly 32 bytes.
    Swizzle32,
    /// CK's XOR LDS layout of a GEMM operand ([`xor_lds`]) with 16-byte vectors along `col`.
    XorLds,
}

/// The names [`SmemLayout::from_str`] accepts, for error messages and help texts.
///
/// ```
/// assert!(tilekit_tile::analysis::requests::SMEM_LAYOUT_NAMES.contains("swizzle128"));
/// ```
pub const SMEM_LAYOUT_NAMES: &str =
    "row-major, col-major, padded:P (P >= 0), morton, swizzle128, swizzle64, swizzle32, xor-lds";

impl FromStr for SmemLayout {
    type Err = TileError;

    /// Parses the names of [`SMEM_LAYOUT_NAMES`].
    ///
    /// ```
    /// use tilekit_tile::analysis::requests::SmemLayout;
    /// assert_eq!("xor-lds".parse::<SmemLayout>().unwrap(), SmemLayout::XorLds);
    /// assert!("padded:-1".parse::<SmemLayout>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self> {
        let bad = |rule: String| TileError::invalid("shared-memory layout", "name", s, rule);
        Ok(match s {
            "row-major" => SmemLayout::RowMajor,
            "col-major" => SmemLayout::ColMajor,
            "morton" => SmemLayout::Morton,
            "swizzle128" => SmemLayout::Swizzle128,
            "swizzle64" => SmemLayout::Swizzle64,
            "swizzle32" => SmemLayout::Swizzle32,
            "xor-lds" => SmemLayout::XorLds,
            _ => match s.strip_prefix("padded:").map(str::parse::<i64>) {
                Some(Ok(p)) if p >= 0 => SmemLayout::Padded(p),
                Some(_) => {
                    return Err(bad("padded:P needs an integer P >= 0, e.g. padded:1".into()))
                }
                None => return Err(bad(format!("known layouts are {SMEM_LAYOUT_NAMES}"))),
            },
        })
    }
}

impl fmt::Display for SmemLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmemLayout::RowMajor => write!(f, "row-major"),
            SmemLayout::ColMajor => write!(f, "col-major"),
            SmemLayout::Padded(p) => write!(f, "padded:{p}"),
            SmemLayout::Morton => write!(f, "morton"),
            SmemLayout::Swizzle128 => write!(f, "swizzle128"),
            SmemLayout::Swizzle64 => write!(f, "swizzle64"),
            SmemLayout::Swizzle32 => write!(f, "swizzle32"),
            SmemLayout::XorLds => write!(f, "xor-lds"),
        }
    }
}

/// The largest power of two dividing every value (values > 0), capped at `cap`.
fn pow2_divisor(values: &[i64], cap: i64) -> i64 {
    let mut v = cap.max(1);
    while v > 1 && values.iter().any(|x| x % v != 0) {
        v /= 2;
    }
    v
}

impl SmemLayout {
    /// The layout of a `rows × cols` tile of `elem_bytes`-byte elements as a descriptor: top
    /// `(row, col)`, bottom the element offset. Row-major-like layouts guarantee vectors of up
    /// to 16 bytes along `col` where row starts stay aligned (what a tile window vectorises).
    /// Errors (typed, naming the value): lengths below 1, a Morton tile whose sides are not
    /// powers of two, a swizzle whose row is not exactly its width, an XOR LDS tile whose
    /// `cols` is not a multiple of the 16-byte vector.
    ///
    /// ```
    /// use tilekit_tile::analysis::requests::SmemLayout;
    /// let d = SmemLayout::Morton.descriptor(4, 4, 4).unwrap();
    /// assert_eq!(d.calculate_offset(&[1, 2]).unwrap(), 6);
    /// // sizes past i64 are typed errors, not wrapped numbers
    /// let e = SmemLayout::Padded(i64::MAX).descriptor(4, 4, 4).unwrap_err();
    /// assert_eq!(e.to_string(), "shared-memory layout: the row pitch cols + padding overflows i64: \
    ///     cols 4, padding 9223372036854775807");
    /// let e = SmemLayout::Swizzle128.descriptor(32, 32, 2).unwrap_err();
    /// assert!(e.to_string().contains("cols · elem_bytes must be one swizzle row of 128 bytes"));
    /// ```
    pub fn descriptor(
        self,
        rows: i64,
        cols: i64,
        elem_bytes: i64,
    ) -> Result<TensorDescriptor<i64>> {
        let ctx = "shared-memory layout";
        if rows < 1 || cols < 1 {
            return Err(TileError::invalid(
                ctx,
                "tile",
                format!("{rows}×{cols}"),
                "sides must be >= 1",
            ));
        }
        if !matches!(elem_bytes, 1 | 2 | 4 | 8 | 16) {
            return Err(TileError::invalid(
                ctx,
                "elem_bytes",
                elem_bytes,
                "must be 1, 2, 4, 8 or 16",
            ));
        }
        let vmax = 16 / elem_bytes;
        let d = match self {
            SmemLayout::RowMajor => {
                let v = pow2_divisor(&[cols], vmax);
                TensorDescriptor::naive(vec![rows, cols], vec![cols, 1], Some((v, 1)))?
            }
            SmemLayout::ColMajor => TensorDescriptor::naive(vec![rows, cols], vec![1, rows], None)?,
            SmemLayout::Padded(p) => {
                if p < 0 {
                    return Err(TileError::invalid(ctx, "padding", p, "must be >= 0"));
                }
                let pitch = cols.checked_add(p).ok_or_else(|| {
                    LayoutError::overflow(
                        ctx,
                        "the row pitch cols + padding",
                        format!("cols {cols}, padding {p}"),
                    )
                })?;
                let v = pow2_divisor(&[cols, pitch], vmax);
                TensorDescriptor::naive(vec![rows, cols], vec![pitch, 1], Some((v, 1)))?
            }
            SmemLayout::Morton => {
                let side = rows.min(cols);
                for (field, v) in [("rows", rows), ("cols", cols)] {
                    if v & (v - 1) != 0 {
                        return Err(TileError::invalid(
                            ctx,
                            field,
                            v,
                            "a Morton tile needs power-of-two sides",
                        ));
                    }
                }
                TiledMorton::new(rows, cols, side)?.descriptor()?
            }
            SmemLayout::Swizzle128 => HopperSwizzle::B128.descriptor(rows, cols, elem_bytes)?,
            SmemLayout::Swizzle64 => HopperSwizzle::B64.descriptor(rows, cols, elem_bytes)?,
            SmemLayout::Swizzle32 => HopperSwizzle::B32.descriptor(rows, cols, elem_bytes)?,
            SmemLayout::XorLds => xor_lds(rows, cols, vmax, elem_bytes)?,
        };
        Ok(d)
    }
}

/// How the 32 lanes of a warp walk a 2-D tile, request after request.
///
/// ```
/// use tilekit_tile::analysis::requests::WarpPattern;
/// assert_eq!("col-vec8".parse::<WarpPattern>().unwrap(), WarpPattern::ColVec(8));
/// assert_eq!(WarpPattern::RowVec(4).to_string(), "row-vec4");
/// assert_eq!(WarpPattern::Col.vector_len(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WarpPattern {
    /// Lane `l` of request `q` reads element `32q + l` in row-major order.
    Row,
    /// Lane `l` of request `q` reads element `32q + l` in column-major order.
    Col,
    /// Lane `l` of request `q` reads the `N`-element row vector `32q + l`, vectors in row-major
    /// order (lanes move along a row of vectors).
    RowVec(u32),
    /// Lane `l` of request `q` reads the `N`-element row vector `32q + l`, vectors in
    /// column-major order (lanes move down a column of vectors).
    ColVec(u32),
}

/// The names [`WarpPattern::from_str`] accepts.
///
/// ```
/// assert!(tilekit_tile::analysis::requests::WARP_PATTERN_NAMES.starts_with("row"));
/// ```
pub const WARP_PATTERN_NAMES: &str =
    "row, col, row-vecN, col-vecN (N = 1, 2, 4, 8 or 16 elements per lane, at most 16 bytes)";

impl FromStr for WarpPattern {
    type Err = TileError;

    /// Parses the names of [`WARP_PATTERN_NAMES`].
    ///
    /// ```
    /// use tilekit_tile::analysis::requests::WarpPattern;
    /// assert_eq!("row".parse::<WarpPattern>().unwrap(), WarpPattern::Row);
    /// assert!("col-vec3".parse::<WarpPattern>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            TileError::invalid(
                "warp access pattern",
                "name",
                s,
                format!("known patterns are {WARP_PATTERN_NAMES}"),
            )
        };
        let vec = |n: &str| match n.parse::<u32>() {
            Ok(n @ (1 | 2 | 4 | 8 | 16)) => Ok(n),
            _ => Err(bad()),
        };
        match s {
            "row" => Ok(WarpPattern::Row),
            "col" => Ok(WarpPattern::Col),
            _ => {
                if let Some(n) = s.strip_prefix("row-vec") {
                    Ok(WarpPattern::RowVec(vec(n)?))
                } else if let Some(n) = s.strip_prefix("col-vec") {
                    Ok(WarpPattern::ColVec(vec(n)?))
                } else {
                    Err(bad())
                }
            }
        }
    }
}

impl fmt::Display for WarpPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WarpPattern::Row => write!(f, "row"),
            WarpPattern::Col => write!(f, "col"),
            WarpPattern::RowVec(n) => write!(f, "row-vec{n}"),
            WarpPattern::ColVec(n) => write!(f, "col-vec{n}"),
        }
    }
}

impl WarpPattern {
    /// Elements per lane.
    ///
    /// ```
    /// assert_eq!(tilekit_tile::analysis::requests::WarpPattern::RowVec(4).vector_len(), 4);
    /// ```
    pub fn vector_len(self) -> u32 {
        match self {
            WarpPattern::Row | WarpPattern::Col => 1,
            WarpPattern::RowVec(n) | WarpPattern::ColVec(n) => n,
        }
    }

    /// The `(row, col)` of the first element of vector number `k` of the walk over a
    /// `rows × (cols / N)`-vector tile.
    fn position(self, k: i64, rows: i64, vcols: i64) -> (i64, i64) {
        let n = i64::from(self.vector_len());
        match self {
            WarpPattern::Row | WarpPattern::RowVec(_) => (k / vcols, (k % vcols) * n),
            WarpPattern::Col | WarpPattern::ColVec(_) => (k % rows, (k / rows) * n),
        }
    }
}

/// The requests of a warp walking a whole 2-D tile with `pattern` (see the
/// [module documentation](self)): `ceil(rows · cols / (32 · N))` requests. Errors: a descriptor
/// that is not 2-D, `cols` not a multiple of the vector, an access larger than 16 bytes, more
/// than [`MAX_REQUESTS`] requests, or a vector the layout does not keep contiguous (the error
/// names the element).
///
/// ```
/// use tilekit_tile::analysis::requests::{tile_requests, SmemLayout, WarpPattern};
/// let d = SmemLayout::RowMajor.descriptor(32, 32, 4).unwrap();
/// let reqs = tile_requests(&d, 4, WarpPattern::Col).unwrap();
/// assert_eq!(reqs.len(), 32);
/// assert_eq!(reqs[0].addresses()[1], Some(128)); // lane 1 reads (1, 0)
/// let cm = SmemLayout::ColMajor.descriptor(32, 32, 4).unwrap();
/// assert!(tile_requests(&cm, 4, WarpPattern::RowVec(4)).is_err()); // rows are not contiguous
/// ```
pub fn tile_requests(
    desc: &TensorDescriptor<i64>,
    elem_bytes: u32,
    pattern: WarpPattern,
) -> Result<Vec<WarpAccess>> {
    let ctx = "tile requests";
    let lengths = desc.lengths();
    let [rows, cols] = lengths[..] else {
        return Err(TileError::invalid(
            ctx,
            "descriptor rank",
            lengths.len(),
            "the tile must be 2-D (row, col)",
        ));
    };
    let n = pattern.vector_len();
    if u64::from(n) * u64::from(elem_bytes) > 16 {
        return Err(TileError::invalid(
            ctx,
            "vector bytes",
            u64::from(n) * u64::from(elem_bytes),
            format!("{n} elements of {elem_bytes} bytes; a lane accesses at most 16 bytes"),
        ));
    }
    let ni = i64::from(n);
    if cols % ni != 0 {
        return Err(TileError::invalid(
            ctx,
            "cols",
            cols,
            format!("must be a multiple of the vector ({n})"),
        ));
    }
    let vcols = cols / ni;
    // rows · cols fits: the descriptor's top index count is checked when it is built
    let total = rows.saturating_mul(vcols);
    let requests = total / WARP_SIZE as i64 + i64::from(total % WARP_SIZE as i64 != 0);
    check_requests(ctx, &format!("{rows}×{cols} tile read as {pattern}"), requests)?;
    let mut out = Vec::with_capacity(requests as usize);
    let mut start = 0;
    while start < total {
        let mut offs = [None; WARP_SIZE];
        for (lane, slot) in offs.iter_mut().enumerate() {
            let k = start + lane as i64;
            if k >= total {
                break;
            }
            let (r, c) = pattern.position(k, rows, vcols);
            // the descriptor is 2-D (checked above)
            let o = desc.calculate_offset_unchecked(&[r, c]);
            for j in 1..ni {
                if desc.calculate_offset_unchecked(&[r, c + j]) != o + j {
                    return Err(TileError::invalid(
                        ctx,
                        "vector",
                        format!("({r}, {c}..{})", c + ni),
                        "the layout does not store these elements contiguously",
                    ));
                }
            }
            *slot = Some(o);
        }
        out.push(WarpAccess::from_offsets(elem_bytes, n, |lane| offs[lane])?);
        start += WARP_SIZE as i64;
    }
    Ok(out)
}

/// `Err` when a walk would make more than [`MAX_REQUESTS`] requests.
fn check_requests(ctx: &str, what: &str, requests: i64) -> Result<()> {
    if requests > MAX_REQUESTS as i64 {
        return Err(TileError::invalid(
            ctx,
            "walk",
            what,
            format!(
                "it makes {requests} requests; the analysis covers up to {MAX_REQUESTS} \
                 (analyse a smaller tile or window)"
            ),
        ));
    }
    Ok(())
}

/// One warp request of a tile window's walk.
///
/// ```
/// use tilekit_tile::analysis::requests::WindowRequest;
/// use tilekit_tile::analysis::WarpAccess;
/// let r = WindowRequest { warp: 0, access: 1, request: WarpAccess::new([None; 32], 4).unwrap() };
/// assert_eq!(r.access, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowRequest {
    /// The warp (thread `t` is lane `t mod 32` of warp `t / 32`, threads numbered row-major
    /// over the P lengths).
    pub warp: usize,
    /// The access number of the window's walk.
    pub access: i64,
    /// The 32 lanes' addresses.
    pub request: WarpAccess,
}

/// The requests of a tile window with distribution `dist` over a shared-memory tile `desc`
/// (top = the distribution's X dims) at `origin`: for every warp of the block and every access
/// of the walk ([`LoadStoreTraits`] with `curve`), the 32 lanes' vectors of
/// `scalar_per_vector` elements of `elem_bytes` bytes. Ordered by access, then warp. Lanes
/// beyond the block and invalid vectors are inactive. A walk of more than [`MAX_REQUESTS`]
/// requests is an error (checked before any thread is walked).
///
/// ```
/// use tilekit_tile::analysis::requests::{window_requests, SmemLayout};
/// use tilekit_tile::{TileDistribution, encoding_text::parse_encoding, traits::AccessCurve};
/// // 32 threads, each one row of 4 fp32 of a 32×4 tile
/// let d = TileDistribution::from_spec(parse_encoding("H[[32],[4]] P[[X0.0]] Y[X1.0]").unwrap()).unwrap();
/// let smem = SmemLayout::RowMajor.descriptor(32, 4, 4).unwrap();
/// let reqs = window_requests(&d, &smem, &[0, 0], AccessCurve::Linear, 4).unwrap();
/// assert_eq!(reqs.len(), 1);
/// assert_eq!(reqs[0].request.access_bytes(), 16);
/// assert_eq!(reqs[0].request.addresses()[2], Some(32));
/// ```
pub fn window_requests(
    dist: &TileDistribution,
    desc: &TensorDescriptor<i64>,
    origin: &[i64],
    curve: AccessCurve,
    elem_bytes: u32,
) -> Result<Vec<WindowRequest>> {
    let traits = LoadStoreTraits::new(dist, desc, curve)?;
    let adaptor = dist.ps_ys_to_xs();
    let p_lengths = dist.p_lengths();
    let ndim_p = p_lengths.len();
    let warps = dist.num_threads().max(1) / WARP_SIZE as i64
        + i64::from(dist.num_threads() % WARP_SIZE as i64 != 0);
    check_requests(
        "window requests",
        &format!("{} threads × {} accesses", dist.num_threads(), traits.num_access()),
        warps.saturating_mul(traits.num_access()),
    )?;
    let threads = dist.num_threads().max(1) as usize;
    let mut walks = Vec::with_capacity(threads);
    for t in 0..threads {
        let mut p = vec![0i64; ndim_p];
        let mut rest = t as i64;
        for d in (0..ndim_p).rev() {
            p[d] = rest % p_lengths[d];
            rest /= p_lengths[d];
        }
        // keep only what the requests need: each access's offset when valid
        let walk = walk_with_adaptor(adaptor, ndim_p, &traits, desc, origin, &p)?;
        walks.push(walk.into_iter().map(|a| a.valid.then_some(a.offset)).collect::<Vec<_>>());
    }
    let spv = u32::try_from(traits.scalar_per_vector()).unwrap_or(u32::MAX);
    let warps = threads.div_ceil(WARP_SIZE);
    let mut out = Vec::new();
    for access in 0..traits.num_access() {
        for warp in 0..warps {
            let request = WarpAccess::from_offsets(elem_bytes, spv, |lane| {
                *walks.get(warp * WARP_SIZE + lane)?.get(access as usize)?
            })?;
            out.push(WindowRequest { warp, access, request });
        }
    }
    Ok(out)
}

/// Totals of the bank model over a sequence of requests.
///
/// ```
/// use tilekit_tile::analysis::requests::summarize;
/// use tilekit_tile::analysis::WarpAccess;
/// let col = WarpAccess::from_offsets(4, 1, |l| Some(32 * l as i64)).unwrap();
/// let row = WarpAccess::from_offsets(4, 1, |l| Some(l as i64)).unwrap();
/// let s = summarize(&[row, col]).unwrap();
/// assert_eq!((s.transactions, s.ideal_transactions, s.worst_conflict, s.conflicted_requests), (33, 2, 32, 1));
/// assert_eq!(s.worst_request, Some(1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestsSummary {
    /// Number of requests.
    pub requests: usize,
    /// Wavefronts over all requests.
    pub transactions: u64,
    /// Wavefronts if every request were conflict-free.
    pub ideal_transactions: u64,
    /// The worst n-way conflict of any request.
    pub worst_conflict: u32,
    /// Requests costing more than their ideal.
    pub conflicted_requests: usize,
    /// The request with the most wavefronts above its ideal (the first of equals), `None` when
    /// there are no requests.
    pub worst_request: Option<usize>,
    /// Heat map over the whole sequence: distinct words per bank, summed over requests.
    pub bank_words: [u64; NUM_BANKS],
    /// The report of every request, in order.
    pub reports: Vec<BankReport>,
}

/// [`banks::analyze`] of every request, with totals. Errors as [`banks::analyze`] (1- and
/// 2-byte accesses are not modelled).
///
/// ```
/// use tilekit_tile::analysis::requests::summarize;
/// use tilekit_tile::analysis::WarpAccess;
/// let s = summarize(&[]).unwrap();
/// assert_eq!((s.requests, s.transactions, s.worst_request), (0, 0, None));
/// assert!(summarize(&[WarpAccess::new([Some(0); 32], 2).unwrap()]).is_err());
/// ```
pub fn summarize(requests: &[WarpAccess]) -> Result<RequestsSummary> {
    let reports: Vec<BankReport> = requests.iter().map(banks::analyze).collect::<Result<_>>()?;
    let mut s = RequestsSummary {
        requests: reports.len(),
        transactions: 0,
        ideal_transactions: 0,
        worst_conflict: 0,
        conflicted_requests: 0,
        worst_request: None,
        bank_words: [0; NUM_BANKS],
        reports: Vec::new(),
    };
    let mut worst_excess = None;
    for (i, r) in reports.iter().enumerate() {
        s.transactions += u64::from(r.transactions);
        s.ideal_transactions += u64::from(r.ideal_transactions);
        s.worst_conflict = s.worst_conflict.max(r.worst_conflict);
        if !r.is_conflict_free() {
            s.conflicted_requests += 1;
        }
        let excess = r.transactions - r.ideal_transactions;
        if worst_excess.is_none_or(|w| excess > w) {
            worst_excess = Some(excess);
            s.worst_request = Some(i);
        }
        for (t, n) in s.bank_words.iter_mut().zip(r.bank_words) {
            *t += u64::from(n);
        }
    }
    s.reports = reports;
    Ok(s)
}
