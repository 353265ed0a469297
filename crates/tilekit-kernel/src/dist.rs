//! The distributions the kernels use, built as encodings (R/H/P/Y) — never as hand-written
//! index math.
//!
//! ```text
//!   row_major(m, n, threads, v)          micro_block(v)  (transpose, 256 threads)
//!   X0 (rows) H = [ym, tm]               X0 (rows) H = [8, 2, v]     X1 (cols) H = [16, v]
//!   X1 (cols) H = [yn, tn, v]            P0 = (X0.H0, X0.H1, X1.H0)  thread = w·32 + r·16 + c
//!   P0 = (X0.H1, X1.H1): thread = r·tn+c Y  = (X0.H2, X1.H1): a v×v block per thread
//!   Y  = (X0.H0, X1.H0, X1.H2)
//!
//!   mma m16n8k16 fragments (P0 = lane = 4·groupID + threadID_in_group), as in the PTX ISA:
//!   A 16×16: X0 H = [2, 8], X1 H = [2, 4, 2]   Y = (X1.H0, X0.H0, X1.H2)  → a[i], i = ys_to_d
//!   B 16×8 : X0 H = [2, 4, 2], X1 H = [8]      Y = (X0.H0, X0.H2)
//!   C 16×8 : X0 H = [2, 8], X1 H = [4, 2]      Y = (X0.H0, X1.H1)
//!
//!   wgmma m64nNk* accumulator D (64×N f32 over a warpgroup of 128 threads), as in the PTX ISA:
//!   X0 (rows) H = [4, 2, 8]        warp, odd register pair, lane / 4
//!   X1 (cols) H = [N/8, 4, 2]      column block, lane mod 4, register parity
//!   P0 = (X0.H0, X0.H2, X1.H1)     thread = 32·warp + 4·(lane/4) + lane mod 4
//!   Y  = (X1.H0, X0.H1, X1.H2)     register i = 4·block + 2·pair + parity
//! ```
//!
//! ```
//! let d = tilekit_kernel::dist::row_major(4, 16, 8, 4).unwrap();
//! assert_eq!((d.x_lengths(), d.num_threads(), d.thread_buffer_size()), (vec![4, 16], 8, 8));
//! ```

use tilekit_tile::encoding::EncodingSpec;
use tilekit_tile::TileDistribution;

use crate::error::{KernelError, Result};

fn enc(
    hs: Vec<Vec<i64>>,
    ps: &[&[(usize, usize)]],
    ys: &[(usize, usize)],
) -> Result<TileDistribution> {
    Ok(TileDistribution::from_spec(EncodingSpec {
        rs_lengths: vec![],
        hs_lengthss: hs,
        ps_to_rhss_major: ps.iter().map(|p| p.iter().map(|x| x.0 as i64).collect()).collect(),
        ps_to_rhss_minor: ps.iter().map(|p| p.iter().map(|x| x.1 as i64).collect()).collect(),
        ys_to_rhs_major: ys.iter().map(|y| y.0 as i64).collect(),
        ys_to_rhs_minor: ys.iter().map(|y| y.1 as i64).collect(),
    })?)
}

/// A `tile_m × tile_n` tile over `threads` threads, each access a `vector`-wide row segment;
/// consecutive threads take consecutive segments of a row (coalesced), then rows.
///
/// ```
/// use tilekit_kernel::dist::row_major;
/// let d = row_major(8, 32, 64, 4).unwrap();
/// // thread 9: row 1, columns 4..8
/// assert_eq!(d.calculate_x(&[9i64], &[0, 0, 0]).unwrap(), vec![1, 4]);
/// assert!(row_major(8, 30, 64, 4).is_err());
/// ```
pub fn row_major(tile_m: i64, tile_n: i64, threads: i64, vector: i64) -> Result<TileDistribution> {
    let bad =
        |f: &str, v: i64, r: String| Err(KernelError::invalid("row_major distribution", f, v, r));
    if vector < 1 || tile_n % vector != 0 {
        return bad("tile_n", tile_n, format!("must be a multiple of the vector {vector}"));
    }
    let segs = tile_n / vector;
    let tn = segs.min(threads);
    if threads < 1 || segs % tn != 0 || threads % tn != 0 {
        return bad("threads", threads, format!("must divide or be a multiple of {segs} segments"));
    }
    let tm = threads / tn;
    if tile_m < 1 || tile_m % tm != 0 {
        return bad("tile_m", tile_m, format!("must be a multiple of {tm} thread rows"));
    }
    enc(
        vec![vec![tile_m / tm, tm], vec![segs / tn, tn, vector]],
        &[&[(1, 1), (2, 1)]],
        &[(1, 0), (2, 0), (2, 2)],
    )
}

/// The transpose distribution: a `16v × 16v` tile over 256 threads, each holding a `v × v`
/// block (`v` rows of `v`-element row segments).
///
/// ```
/// let d = tilekit_kernel::dist::micro_block(4).unwrap();
/// assert_eq!((d.x_lengths(), d.num_threads()), (vec![64, 64], 256));
/// // thread 17 (warp 0, second thread row, column block 1): rows 4..8, columns 4..8
/// assert_eq!(d.calculate_x(&[17i64], &[2, 3]).unwrap(), vec![6, 7]);
/// ```
pub fn micro_block(v: i64) -> Result<TileDistribution> {
    enc(vec![vec![8, 2, v], vec![16, v]], &[&[(1, 0), (1, 1), (2, 0)]], &[(1, 2), (2, 1)])
}

/// The A fragment of `mma.sync.m16n8k16` (16×16, row): element `i` of lane `l` is `a[i]`.
///
/// ```
/// let d = tilekit_kernel::dist::mma_a().unwrap();
/// assert_eq!(d.calculate_x(&[5i64], &d.d_to_ys(6)).unwrap(), vec![9, 10]); // lane 5: g = 1, q = 1
/// ```
pub fn mma_a() -> Result<TileDistribution> {
    enc(vec![vec![2, 8], vec![2, 4, 2]], &[&[(1, 1), (2, 1)]], &[(2, 0), (1, 0), (2, 2)])
}

/// The B fragment of `mma.sync.m16n8k16` (16×8 as (k, n), col).
///
/// ```
/// let d = tilekit_kernel::dist::mma_b().unwrap();
/// assert_eq!(d.calculate_x(&[5i64], &d.d_to_ys(3)).unwrap(), vec![11, 1]);
/// ```
pub fn mma_b() -> Result<TileDistribution> {
    enc(vec![vec![2, 4, 2], vec![8]], &[&[(2, 0), (1, 1)]], &[(1, 0), (1, 2)])
}

/// The C/D fragment of `mma.sync.m16n8k16` (16×8 f32).
///
/// ```
/// let d = tilekit_kernel::dist::mma_c().unwrap();
/// assert_eq!(d.calculate_x(&[5i64], &d.d_to_ys(2)).unwrap(), vec![9, 2]);
/// ```
pub fn mma_c() -> Result<TileDistribution> {
    enc(vec![vec![2, 8], vec![4, 2]], &[&[(1, 1), (2, 0)]], &[(1, 0), (2, 1)])
}

/// The accumulator D of `wgmma.mma_async.m64nNk*` (64×N f32 over the 128 threads of a
/// warpgroup): register `i` of thread `t` is `d[i]` of [`tilekit_ir::wgmma::acc_coord`] — row
/// `16·(t/32) + (t mod 32)/4 + 8·(i/2 mod 2)`, column `8·(i/4) + 2·(t mod 4) + i mod 2`. So a
/// [`crate::Window`] stores the result of [`tilekit_ir::KernelBuilder::wgmma`] as a
/// [`crate::DTile`] (its registers in order). `n` must be 8..=256, a multiple of 8.
///
/// ```
/// let d = tilekit_kernel::dist::wgmma_acc(64).unwrap();
/// assert_eq!((d.x_lengths(), d.num_threads(), d.thread_buffer_size()), (vec![64, 64], 128, 32));
/// // thread 37 (warp 1, lane 5), register 6: row 16 + 1 + 8, column 8 + 2
/// assert_eq!(d.calculate_x(&[37i64], &d.d_to_ys(6)).unwrap(), vec![25, 10]);
/// assert!(tilekit_kernel::dist::wgmma_acc(12).is_err());
/// ```
pub fn wgmma_acc(n: i64) -> Result<TileDistribution> {
    if !(8..=256).contains(&n) || n % 8 != 0 {
        return Err(KernelError::invalid(
            "wgmma accumulator distribution",
            "n",
            n,
            "must be 8..=256, a multiple of 8",
        ));
    }
    enc(
        vec![vec![4, 2, 8], vec![n / 8, 4, 2]],
        &[&[(1, 0), (1, 2), (2, 1)]],
        &[(2, 0), (1, 1), (2, 2)],
    )
}

/// Storage-order tiles: `tiles` tiles of `tile_elems` elements (the last dim, contiguous in
/// storage) over `threads` threads, each holding one `vector`-element run; consecutive threads
/// take consecutive runs of a tile, then the next tile (so a warp writes whole tiles).
///
/// ```text
///   X0 (tile row, 1) H = [1] → Y0     X1 (tile) H = [tiles] → P    X2 (element) H = [runs, vector]
///   P0 = (X1.H0, X2.H0): thread = tile·runs + run        Y = (X0.H0, X2.H1)
/// ```
///
/// ```
/// let d = tilekit_kernel::dist::storage_tiles(16, 64, 256, 4).unwrap();
/// assert_eq!(d.x_lengths(), vec![1, 16, 64]);
/// // thread 17: tile 1, elements 4..8
/// assert_eq!(d.calculate_x(&[17i64], &[0, 0]).unwrap(), vec![0, 1, 4]);
/// assert!(tilekit_kernel::dist::storage_tiles(16, 64, 128, 4).is_err());
/// ```
pub fn storage_tiles(
    tiles: i64,
    tile_elems: i64,
    threads: i64,
    vector: i64,
) -> Result<TileDistribution> {
    if vector < 1 || tile_elems % vector != 0 {
        return Err(KernelError::invalid(
            "storage_tiles distribution",
            "tile_elems",
            tile_elems,
            format!("must be a multiple of the vector {vector}"),
        ));
    }
    let runs = tile_elems / vector;
    if tiles * runs != threads {
        return Err(KernelError::invalid(
            "storage_tiles distribution",
            "threads",
            threads,
            format!("must equal tiles · runs = {tiles} · {runs}"),
        ));
    }
    enc(vec![vec![1], vec![tiles], vec![runs, vector]], &[&[(2, 0), (3, 0)]], &[(1, 0), (3, 1)])
}

/// A distribution from its text form — the notation `tilekit show` takes and draws, e.g.
/// `H[[1,1],[4,64,4]] P[[X0.1,X1.1]] Y[X0.0,X1.0,X1.2]` — so an encoding checked in a picture
/// is the one the kernel uses. A text that does not parse or does not describe a valid
/// encoding is a [`KernelError`] naming what is wrong.
///
/// ```
/// use tilekit_kernel::dist;
/// let d = dist::from_text("H[[1,1],[4,64,4]] P[[X0.1,X1.1]] Y[X0.0,X1.0,X1.2]").unwrap();
/// assert_eq!(d, dist::row_major(1, 1024, 64, 4).unwrap()); // 64 threads, 4 vectors of 4 each
/// assert_eq!(dist::to_text(&d), "H[[1,1],[4,64,4]] P[[X0.1,X1.1]] Y[X0.0,X1.0,X1.2]");
/// let e = dist::from_text("H[[2]] P[[X0.0]]").unwrap_err();
/// assert!(e.to_string().contains("expected the Y section"), "{e}");
/// ```
pub fn from_text(text: &str) -> Result<TileDistribution> {
    let spec = tilekit_tile::encoding_text::parse_encoding(text)
        .map_err(|e| KernelError::invalid("distribution text", "encoding", text, e.to_string()))?;
    Ok(TileDistribution::from_spec(spec)?)
}

/// The text form of a distribution's encoding (what [`from_text`] reads and `tilekit show`
/// draws).
///
/// ```
/// let d = tilekit_kernel::dist::row_major(4, 16, 8, 4).unwrap();
/// assert_eq!(tilekit_kernel::dist::to_text(&d), "H[[2,2],[1,4,4]] P[[X0.1,X1.1]] Y[X0.0,X1.0,X1.2]");
/// ```
pub fn to_text(d: &TileDistribution) -> String {
    tilekit_tile::encoding_text::print_encoding(d.encoding().spec())
}
