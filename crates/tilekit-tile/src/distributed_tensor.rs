//! Static distributed tensors: the registers of every thread of a block, as host data
//! (SEMANTICS §10).
//!
//! On the GPU a static distributed tensor is one small array per thread (its *thread buffer*),
//! indexed by `d = ys_to_d(y)`: the Y index of a value, numbered row-major over the Y lengths
//! with the last Y fastest. On the host tilekit models the **whole block** at once: one thread
//! buffer per P index, P indices numbered row-major over the P lengths.
//!
//! ```text
//!   2 warps × 2 lanes (P = (warp, lane)), each thread holding 2×4 values (Y = (y0, y1)):
//!
//!   StaticDistributedTensor
//!   ├── thread 0  p = (0, 0)   [ d0 d1 d2 d3 | d4 d5 d6 d7 ]   d = 4·y0 + y1
//!   ├── thread 1  p = (0, 1)   [ …                          ]
//!   ├── thread 2  p = (1, 0)   [ …                          ]
//!   └── thread 3  p = (1, 1)   [ …                          ]
//!
//!   value (p, y)  ──ps_ys_to_xs──►  X (its place in the tile)        x_of(p, y)
//!   value (p, y)  ──ys_to_d──────►  d (its register in thread p)     get / set / get_d
//!   distributed index (per X, over its span) ──► y                   get_distributed
//! ```
//!
//! Threads whose P indices differ only in R (replicated) components hold the same X elements;
//! the tensor does not force their values to agree — a load through a tile window fills them
//! with the same data, and computations may do what they like.
//!
//! Every access checks its indices and returns a typed [`TileError`] naming the index and the
//! valid range; nothing here panics on user input.

use crate::distribution::TileDistribution;
use crate::error::{Result, TileError};

/// The thread buffers of a whole block for one tile distribution.
///
/// ```
/// use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
/// let d = TileDistribution::from_spec(EncodingSpec {
///     rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
///     ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]],
///     ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1],
/// }).unwrap();
/// let mut t = StaticDistributedTensor::new(&d, 0.0f32);
/// t.set(&[1, 3], &[1, 2], 7.5).unwrap();
/// assert_eq!(t.get_d(&[1, 3], 6).unwrap(), 7.5);           // d = 4·1 + 2
/// assert_eq!(t.x_of(&[1, 3], &[1, 2]).unwrap(), vec![3, 14]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct StaticDistributedTensor<T> {
    dist: TileDistribution,
    p_lengths: Vec<i64>,
    y_lengths: Vec<i64>,
    buffers: Vec<Vec<T>>,
}

/// Row-major linear index of `idx` over `lengths` (last fastest), with range checks.
fn linear(context: &str, what: &str, idx: &[i64], lengths: &[i64]) -> Result<usize> {
    if idx.len() != lengths.len() {
        return Err(TileError::invalid(
            context,
            format!("{what} rank"),
            idx.len(),
            format!("{what} indices have {} entries (lengths {lengths:?})", lengths.len()),
        ));
    }
    let mut acc = 0usize;
    for (k, (&i, &l)) in idx.iter().zip(lengths).enumerate() {
        if i < 0 || i >= l {
            return Err(TileError::invalid(
                context,
                format!("{what}[{k}]"),
                i,
                format!("must be in 0..{l} ({what} lengths {lengths:?})"),
            ));
        }
        acc = acc * l as usize + i as usize;
    }
    Ok(acc)
}

impl<T: Clone> StaticDistributedTensor<T> {
    /// A tensor with every value of every thread set to `fill`.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let t = StaticDistributedTensor::new(&d, 1u8);
    /// assert_eq!((t.num_threads(), t.thread_buffer_size()), (8, 8));
    /// ```
    pub fn new(dist: &TileDistribution, fill: T) -> Self {
        let p_lengths = dist.p_lengths();
        let y_lengths = dist.y_lengths();
        let n = dist.thread_buffer_size().max(0) as usize;
        let threads = dist.num_threads().max(0) as usize;
        StaticDistributedTensor {
            dist: dist.clone(),
            p_lengths,
            y_lengths,
            buffers: vec![vec![fill; n]; threads],
        }
    }

    /// The distribution.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let t = StaticDistributedTensor::new(&d, 0i32);
    /// assert_eq!(t.distribution().x_lengths(), vec![4, 16]);
    /// ```
    pub fn distribution(&self) -> &TileDistribution {
        &self.dist
    }

    /// Number of threads (P indices) of the block.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// assert_eq!(StaticDistributedTensor::new(&d, 0i32).num_threads(), 8);
    /// ```
    pub fn num_threads(&self) -> usize {
        self.buffers.len()
    }

    /// Values per thread (`Π Y lengths`).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// assert_eq!(StaticDistributedTensor::new(&d, 0i32).thread_buffer_size(), 8);
    /// ```
    pub fn thread_buffer_size(&self) -> usize {
        self.buffers.first().map_or(0, Vec::len)
    }

    /// The position of thread `p` in the block (row-major over the P lengths).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let t = StaticDistributedTensor::new(&d, 0i32);
    /// assert_eq!(t.thread_index(&[1, 2]).unwrap(), 6);
    /// assert_eq!(
    ///     t.thread_index(&[2, 0]).unwrap_err().to_string(),
    ///     "static distributed tensor: P[0] = 2 is invalid: must be in 0..2 (P lengths [2, 4])"
    /// );
    /// ```
    pub fn thread_index(&self, p: &[i64]) -> Result<usize> {
        linear("static distributed tensor", "P", p, &self.p_lengths)
    }

    /// The P index of the thread at position `k` of the block (inverse of
    /// [`thread_index`](Self::thread_index)).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let t = StaticDistributedTensor::new(&d, 0i32);
    /// assert_eq!(t.thread_p(6).unwrap(), vec![1, 2]);
    /// assert!(t.thread_p(8).is_err());
    /// ```
    pub fn thread_p(&self, k: usize) -> Result<Vec<i64>> {
        if k >= self.buffers.len() {
            return Err(TileError::invalid(
                "static distributed tensor",
                "thread position",
                k,
                format!("must be in 0..{} (threads of the block)", self.buffers.len()),
            ));
        }
        let mut p = vec![0; self.p_lengths.len()];
        let mut rest = k as i64;
        for i in (0..p.len()).rev() {
            p[i] = rest % self.p_lengths[i];
            rest /= self.p_lengths[i];
        }
        Ok(p)
    }

    /// The thread buffer of thread `p` (indexed by `d`).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let mut t = StaticDistributedTensor::new(&d, 0i32);
    /// t.thread_mut(&[0, 1]).unwrap()[3] = 9;
    /// assert_eq!(t.thread(&[0, 1]).unwrap(), &[0, 0, 0, 9, 0, 0, 0, 0]);
    /// ```
    pub fn thread(&self, p: &[i64]) -> Result<&[T]> {
        let k = self.thread_index(p)?;
        Ok(&self.buffers[k])
    }

    /// The thread buffer of thread `p`, mutable.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let mut t = StaticDistributedTensor::new(&d, 0i32);
    /// t.thread_mut(&[1, 1]).unwrap().fill(4);
    /// assert_eq!(t.get(&[1, 1], &[1, 3]).unwrap(), 4);
    /// ```
    pub fn thread_mut(&mut self, p: &[i64]) -> Result<&mut [T]> {
        let k = self.thread_index(p)?;
        Ok(&mut self.buffers[k])
    }

    /// Every thread buffer, in block order (row-major over P).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let t = StaticDistributedTensor::new(&d, 0i32);
    /// assert_eq!(t.buffers().len(), 8);
    /// ```
    pub fn buffers(&self) -> &[Vec<T>] {
        &self.buffers
    }

    /// The register `d` of Y index `y` (`ys_to_d`), range-checked.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let t = StaticDistributedTensor::new(&d, 0i32);
    /// assert_eq!(t.d_of(&[1, 2]).unwrap(), 6);
    /// assert_eq!(
    ///     t.d_of(&[0, 4]).unwrap_err().to_string(),
    ///     "static distributed tensor: Y[1] = 4 is invalid: must be in 0..4 (Y lengths [2, 4])"
    /// );
    /// ```
    pub fn d_of(&self, y: &[i64]) -> Result<usize> {
        linear("static distributed tensor", "Y", y, &self.y_lengths)?;
        Ok(self.dist.ys_to_d_unchecked(y) as usize)
    }

    fn check_d(&self, d: usize) -> Result<()> {
        let n = self.thread_buffer_size();
        if d >= n {
            return Err(TileError::invalid(
                "static distributed tensor",
                "d",
                d,
                format!("thread buffer offsets are 0..{n}"),
            ));
        }
        Ok(())
    }

    /// The value of thread `p` at Y index `y`.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let mut t = StaticDistributedTensor::new(&d, 0i32);
    /// t.set(&[0, 0], &[1, 1], 5).unwrap();
    /// assert_eq!(t.get(&[0, 0], &[1, 1]).unwrap(), 5);
    /// assert!(t.get(&[0, 0], &[1]).is_err());
    /// ```
    pub fn get(&self, p: &[i64], y: &[i64]) -> Result<T> {
        let k = self.thread_index(p)?;
        let d = self.d_of(y)?;
        Ok(self.buffers[k][d].clone())
    }

    /// Sets the value of thread `p` at Y index `y`.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let mut t = StaticDistributedTensor::new(&d, 0i32);
    /// t.set(&[0, 0], &[0, 3], 2).unwrap();
    /// assert_eq!(t.thread(&[0, 0]).unwrap()[3], 2);
    /// ```
    pub fn set(&mut self, p: &[i64], y: &[i64], v: T) -> Result<()> {
        let k = self.thread_index(p)?;
        let d = self.d_of(y)?;
        self.buffers[k][d] = v;
        Ok(())
    }

    /// The value of thread `p` at thread-buffer offset `d`.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let t = StaticDistributedTensor::new(&d, 3i32);
    /// assert_eq!(t.get_d(&[0, 0], 7).unwrap(), 3);
    /// assert_eq!(
    ///     t.get_d(&[0, 0], 8).unwrap_err().to_string(),
    ///     "static distributed tensor: d = 8 is invalid: thread buffer offsets are 0..8"
    /// );
    /// ```
    pub fn get_d(&self, p: &[i64], d: usize) -> Result<T> {
        let k = self.thread_index(p)?;
        self.check_d(d)?;
        Ok(self.buffers[k][d].clone())
    }

    /// Sets the value of thread `p` at thread-buffer offset `d`.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let mut t = StaticDistributedTensor::new(&d, 0i32);
    /// t.set_d(&[1, 0], 5, 8).unwrap();
    /// assert_eq!(t.get(&[1, 0], &[1, 1]).unwrap(), 8);
    /// ```
    pub fn set_d(&mut self, p: &[i64], d: usize, v: T) -> Result<()> {
        let k = self.thread_index(p)?;
        self.check_d(d)?;
        self.buffers[k][d] = v;
        Ok(())
    }

    /// The value of thread `p` at a distributed index (one index list per X, over that X's
    /// span; SEMANTICS §9 `get_y_indices_from_distributed_indices`).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let mut t = StaticDistributedTensor::new(&d, 0i32);
    /// t.set_distributed(&[0, 0], &[vec![1], vec![2]], 6).unwrap();
    /// assert_eq!(t.get(&[0, 0], &[1, 2]).unwrap(), 6);
    /// assert_eq!(t.get_distributed(&[0, 0], &[vec![1], vec![2]]).unwrap(), 6);
    /// ```
    pub fn get_distributed(&self, p: &[i64], dist_idx: &[Vec<i64>]) -> Result<T> {
        let y = self.dist.y_from_distributed(dist_idx)?;
        self.get(p, &y)
    }

    /// Sets the value of thread `p` at a distributed index.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let mut t = StaticDistributedTensor::new(&d, 0i32);
    /// assert!(t.set_distributed(&[0, 0], &[vec![2], vec![0]], 1).is_err()); // X0's span is [2]
    /// ```
    pub fn set_distributed(&mut self, p: &[i64], dist_idx: &[Vec<i64>], v: T) -> Result<()> {
        let y = self.dist.y_from_distributed(dist_idx)?;
        self.set(p, &y, v)
    }

    /// The X index (place in the tile) of thread `p`'s value at Y index `y`.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let t = StaticDistributedTensor::new(&d, 0i32);
    /// assert_eq!(t.x_of(&[1, 3], &[1, 2]).unwrap(), vec![3, 14]);
    /// ```
    pub fn x_of(&self, p: &[i64], y: &[i64]) -> Result<Vec<i64>> {
        self.thread_index(p)?;
        linear("static distributed tensor", "Y", y, &self.y_lengths)?;
        Ok(self.dist.calculate_x_unchecked(p, y))
    }

    fn check_box(&self, origins: &[i64], lengths: &[i64]) -> Result<Vec<Vec<i64>>> {
        let ctx = "y-sliced thread data";
        let n = self.y_lengths.len();
        if origins.len() != n || lengths.len() != n {
            return Err(TileError::invalid(
                ctx,
                "origins/lengths rank",
                (origins.len(), lengths.len()),
                format!("one origin and one length per Y ({n})"),
            ));
        }
        for (i, ((&o, &l), &yl)) in origins.iter().zip(lengths).zip(&self.y_lengths).enumerate() {
            if o < 0 || l < 1 || o + l > yl {
                return Err(TileError::invalid(
                    ctx,
                    format!("Y{i} box"),
                    (o, l),
                    format!("origin >= 0, length >= 1 and origin + length <= {yl} (Y{i} length)"),
                ));
            }
        }
        let total: i64 = lengths.iter().product();
        let mut out = Vec::with_capacity(total as usize);
        for k in 0..total {
            let mut y = origins.to_vec();
            let mut rest = k;
            for i in (0..n).rev() {
                y[i] += rest % lengths[i];
                rest /= lengths[i];
            }
            out.push(y);
        }
        Ok(out)
    }

    /// The values of thread `p` in the Y box `origins .. origins + lengths`, packed row-major
    /// over the box (last Y fastest; reference `get_y_sliced_thread_data`).
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let mut t = StaticDistributedTensor::new(&d, 0i64);
    /// for dd in 0..8 { t.set_d(&[0, 0], dd, dd as i64).unwrap(); }
    /// // Y0 = 0..2, Y1 = 1..3  →  d = 1, 2, 5, 6
    /// assert_eq!(t.get_y_sliced_thread_data(&[0, 0], &[0, 1], &[2, 2]).unwrap(), vec![1, 2, 5, 6]);
    /// assert!(t.get_y_sliced_thread_data(&[0, 0], &[0, 3], &[1, 2]).is_err());
    /// ```
    pub fn get_y_sliced_thread_data(
        &self,
        p: &[i64],
        origins: &[i64],
        lengths: &[i64],
    ) -> Result<Vec<T>> {
        let k = self.thread_index(p)?;
        let ys = self.check_box(origins, lengths)?;
        Ok(ys
            .iter()
            .map(|y| self.buffers[k][self.dist.ys_to_d_unchecked(y) as usize].clone())
            .collect())
    }

    /// Writes `data` (packed row-major over the box) into the Y box of thread `p` (reference
    /// `set_y_sliced_thread_data`); `data` must hold exactly `Π lengths` values.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let mut t = StaticDistributedTensor::new(&d, 0i64);
    /// t.set_y_sliced_thread_data(&[1, 1], &[1, 0], &[1, 4], &[1, 2, 3, 4]).unwrap();
    /// assert_eq!(t.thread(&[1, 1]).unwrap(), &[0, 0, 0, 0, 1, 2, 3, 4]);
    /// assert!(t.set_y_sliced_thread_data(&[1, 1], &[1, 0], &[1, 4], &[1, 2]).is_err());
    /// ```
    pub fn set_y_sliced_thread_data(
        &mut self,
        p: &[i64],
        origins: &[i64],
        lengths: &[i64],
        data: &[T],
    ) -> Result<()> {
        let k = self.thread_index(p)?;
        let ys = self.check_box(origins, lengths)?;
        if data.len() != ys.len() {
            return Err(TileError::invalid(
                "y-sliced thread data",
                "data length",
                data.len(),
                format!("the box {lengths:?} holds {} values", ys.len()),
            ));
        }
        for (y, v) in ys.iter().zip(data) {
            let d = self.dist.ys_to_d_unchecked(y) as usize;
            self.buffers[k][d] = v.clone();
        }
        Ok(())
    }

    /// Applies `f` to every value of every thread.
    ///
    /// ```
    /// # use tilekit_tile::{TileDistribution, StaticDistributedTensor, encoding::EncodingSpec};
    /// # let d = TileDistribution::from_spec(EncodingSpec { rs_lengths: vec![], hs_lengthss: vec![vec![2, 2], vec![4, 4]],
    /// #   ps_to_rhss_major: vec![vec![1], vec![2]], ps_to_rhss_minor: vec![vec![0], vec![0]], ys_to_rhs_major: vec![1, 2], ys_to_rhs_minor: vec![1, 1] }).unwrap();
    /// let mut t = StaticDistributedTensor::new(&d, 2i32);
    /// t.for_each_mut(|v| *v *= 3);
    /// assert_eq!(t.get(&[1, 1], &[0, 0]).unwrap(), 6);
    /// ```
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut T)) {
        self.buffers.iter_mut().flatten().for_each(&mut f);
    }
}
