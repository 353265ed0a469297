//! Memory-access analyses: what one warp request, or a whole traversal, costs in hardware terms.
//!
//! The input of every analysis is plain byte addresses — one [`WarpAccess`] per warp
//! instruction: for each of the 32 lanes an optional address (`None` = inactive lane) and the
//! access size in bytes. Any layout can produce them: a tensor descriptor's offset function, a
//! Morton swizzle, a hand-written closure (see [`WarpAccess::from_offsets`]). Keeping the
//! analyses on addresses makes them independent of how the layout was built, and lets tests
//! check them against hand-computed numbers.
//!
//! ```text
//!   lane → element offset        WarpAccess             analyses
//!   (descriptor, swizzle, …)  ─▶  32 × Option<byte addr> ─▶ banks::analyze   (shared memory)
//!                                 + access size           cache::footprint (global memory)
//!   sequence of offsets       ─────────────────────────▶ cache::locality  (traversal order)
//! ```
//!
//! * [`banks`] — NVIDIA shared memory: 32 banks of 4 bytes, requests split into phases by access
//!   size, broadcasts, wavefronts ("transactions") and the worst n-way conflict.
//! * [`cache`] — global memory: 128-byte lines and 32-byte sectors per request and per
//!   traversal; locality statistics (sequential steps, jumps within a line, large jumps).
//! * [`requests`] — where the requests come from: shared-memory tile layouts (row-major,
//!   padded, Morton, Hopper swizzles, CK's XOR LDS) walked by a warp pattern, or every warp
//!   request of a tile window's walk; totals over many requests.

pub mod banks;
pub mod cache;
pub mod requests;

use crate::error::{Result, TileError};

/// Threads per warp on NVIDIA GPUs.
///
/// ```
/// assert_eq!(tilekit_tile::analysis::WARP_SIZE, 32);
/// ```
pub const WARP_SIZE: usize = 32;

/// One warp-wide memory instruction: a byte address per lane (`None` = the lane is inactive)
/// and the access size, the same for every lane (1, 2, 4, 8 or 16 bytes, as for NVIDIA
/// `ld`/`st` with `.v2`/`.v4` vectors). Every address must be aligned to the access size, as the
/// hardware requires.
///
/// ```
/// use tilekit_tile::analysis::WarpAccess;
/// let mut addrs = [None; 32];
/// addrs[0] = Some(0);
/// addrs[1] = Some(16);
/// let a = WarpAccess::new(addrs, 16).unwrap();
/// assert_eq!(a.active_lanes().collect::<Vec<_>>(), vec![(0, 0), (1, 16)]);
/// assert!(WarpAccess::new([Some(8); 32], 16).is_err()); // 8 is not 16-byte aligned
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarpAccess {
    addrs: [Option<u64>; WARP_SIZE],
    access_bytes: u32,
}

const CTX: &str = "warp access";

fn check_access_bytes(bytes: u32) -> Result<()> {
    if !matches!(bytes, 1 | 2 | 4 | 8 | 16) {
        return Err(TileError::invalid(
            CTX,
            "access_bytes",
            bytes,
            "an access is 1, 2, 4, 8 or 16 bytes",
        ));
    }
    Ok(())
}

impl WarpAccess {
    /// A request from explicit byte addresses. Errors: an access size other than 1, 2, 4, 8 or
    /// 16, or an address not aligned to it (the error names the lane).
    ///
    /// ```
    /// use tilekit_tile::analysis::WarpAccess;
    /// let addrs = std::array::from_fn(|lane| Some(4 * lane as u64));
    /// let a = WarpAccess::new(addrs, 4).unwrap();
    /// assert_eq!(a.num_active(), 32);
    /// assert_eq!(
    ///     WarpAccess::new([Some(6); 32], 4).unwrap_err().to_string(),
    ///     "warp access: lane 0 address = 6 is invalid: a 4-byte access must be 4-byte aligned"
    /// );
    /// ```
    pub fn new(addrs: [Option<u64>; WARP_SIZE], access_bytes: u32) -> Result<Self> {
        check_access_bytes(access_bytes)?;
        for (lane, a) in addrs.iter().enumerate() {
            if let Some(a) = *a {
                if a % u64::from(access_bytes) != 0 {
                    return Err(TileError::invalid(
                        CTX,
                        format!("lane {lane} address"),
                        a,
                        format!("a {access_bytes}-byte access must be {access_bytes}-byte aligned"),
                    ));
                }
                if a.checked_add(u64::from(access_bytes)).is_none() {
                    return Err(TileError::invalid(
                        CTX,
                        format!("lane {lane} address"),
                        a,
                        "the access must end below 2^64",
                    ));
                }
            }
        }
        Ok(Self { addrs, access_bytes })
    }

    /// A request from a lane → element-offset function, the usual way to analyse a layout:
    /// `offset(lane)` is the offset in scalars (what a descriptor's offset calculation returns),
    /// `None` for an inactive lane. Lane `l` accesses `vector_len` consecutive scalars of
    /// `scalar_bytes` each, starting at byte `offset(l) · scalar_bytes`.
    ///
    /// Errors: `scalar_bytes · vector_len` not 1, 2, 4, 8 or 16; a negative offset; a
    /// misaligned address.
    ///
    /// ```
    /// use tilekit_tile::analysis::WarpAccess;
    /// // fp16 × 8 (16 bytes) per lane, lanes walk rows of 64 halves
    /// let a = WarpAccess::from_offsets(2, 8, |lane| Some(lane as i64 * 64)).unwrap();
    /// assert_eq!(a.access_bytes(), 16);
    /// assert_eq!(a.addresses()[3], Some(384));
    /// assert!(WarpAccess::from_offsets(4, 1, |lane| Some(lane as i64 - 1)).is_err());
    /// ```
    pub fn from_offsets(
        scalar_bytes: u32,
        vector_len: u32,
        offset: impl Fn(usize) -> Option<i64>,
    ) -> Result<Self> {
        let access_bytes = scalar_bytes.saturating_mul(vector_len);
        check_access_bytes(access_bytes)?;
        let mut addrs = [None; WARP_SIZE];
        for (lane, slot) in addrs.iter_mut().enumerate() {
            if let Some(off) = offset(lane) {
                let byte = u64::try_from(off)
                    .ok()
                    .and_then(|o| o.checked_mul(u64::from(scalar_bytes)))
                    .ok_or_else(|| {
                        TileError::invalid(
                            CTX,
                            format!("lane {lane} offset"),
                            off,
                            "element offsets must be >= 0 and their byte address must fit in 64 bits",
                        )
                    })?;
                *slot = Some(byte);
            }
        }
        Self::new(addrs, access_bytes)
    }

    /// The byte address of every lane (`None` = inactive).
    ///
    /// ```
    /// use tilekit_tile::analysis::WarpAccess;
    /// let a = WarpAccess::from_offsets(4, 1, |lane| (lane < 2).then_some(lane as i64)).unwrap();
    /// assert_eq!(&a.addresses()[..3], &[Some(0), Some(4), None]);
    /// ```
    pub fn addresses(&self) -> &[Option<u64>; WARP_SIZE] {
        &self.addrs
    }

    /// Bytes accessed by each active lane.
    ///
    /// ```
    /// use tilekit_tile::analysis::WarpAccess;
    /// assert_eq!(WarpAccess::new([Some(0); 32], 8).unwrap().access_bytes(), 8);
    /// ```
    pub fn access_bytes(&self) -> u32 {
        self.access_bytes
    }

    /// `(lane, byte address)` of the active lanes, in lane order.
    ///
    /// ```
    /// use tilekit_tile::analysis::WarpAccess;
    /// let a = WarpAccess::from_offsets(4, 1, |lane| (lane % 16 == 0).then_some(lane as i64)).unwrap();
    /// assert_eq!(a.active_lanes().collect::<Vec<_>>(), vec![(0, 0), (16, 64)]);
    /// ```
    pub fn active_lanes(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.addrs.iter().enumerate().filter_map(|(lane, a)| a.map(|a| (lane, a)))
    }

    /// Number of active lanes.
    ///
    /// ```
    /// use tilekit_tile::analysis::WarpAccess;
    /// assert_eq!(WarpAccess::new([None; 32], 4).unwrap().num_active(), 0);
    /// ```
    pub fn num_active(&self) -> usize {
        self.addrs.iter().filter(|a| a.is_some()).count()
    }
}
