//! The bounded set of kernels a device keeps loaded: least recently used out first.
//!
//! ```text
//!  get(id) ──hit──▶ stamp = clock++ ──▶ value
//!     └─miss─▶ insert(id, v) ─▶ len > capacity? ─▶ evict the oldest quarter (returned to the
//!                                                  caller, dropped outside its lock)
//! ```
//!
//! Kernels are specialised to shapes, so a process that sees ever new shapes (a server with
//! varying sequence lengths, `tilekit soak`) would otherwise load modules until the device's
//! memory is gone. Evicting a quarter at a time keeps the bookkeeping off the launch path.

use std::collections::HashMap;

/// Kernels a [`crate::backend::Cuda`] device keeps loaded unless told otherwise: far more than
/// one model's distinct kernels, a few hundred MiB of modules at most.
pub const DEFAULT_CAPACITY: usize = 2048;

/// Values keyed by kernel id, at most `capacity` of them, the least recently used evicted first.
///
/// ```
/// use tilekit_ops::loaded::Lru;
/// let mut lru = Lru::new(4).unwrap();
/// for id in 0..4 {
///     assert!(lru.insert(id, id * 10).is_empty());
/// }
/// assert_eq!(lru.get(0), Some(&0)); // 0 is now the most recent
/// let out = lru.insert(4, 40); // over capacity: down to 3 of 4, oldest first
/// assert_eq!(out, vec![10, 20]);
/// assert_eq!(lru.get(1), None);
/// assert_eq!(lru.len(), 3);
/// ```
#[derive(Debug)]
pub struct Lru<V> {
    map: HashMap<u64, (V, u64)>,
    clock: u64,
    capacity: usize,
}

/// A capacity of zero: a device must be able to keep the kernel it is about to launch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a kernel cache capacity of {0} is too small: it holds at least 1 kernel")]
pub struct ZeroCapacity(pub usize);

impl<V> Lru<V> {
    /// An empty set holding at most `capacity` values (at least 1).
    ///
    /// ```
    /// assert!(tilekit_ops::loaded::Lru::<u8>::new(0).is_err());
    /// ```
    pub fn new(capacity: usize) -> Result<Lru<V>, ZeroCapacity> {
        if capacity == 0 {
            return Err(ZeroCapacity(capacity));
        }
        Ok(Lru { map: HashMap::new(), clock: 0, capacity })
    }

    /// The value under `id`, now the most recently used.
    ///
    /// ```
    /// let mut lru = tilekit_ops::loaded::Lru::new(2).unwrap();
    /// lru.insert(7, "k");
    /// assert_eq!(lru.get(7), Some(&"k"));
    /// assert_eq!(lru.get(8), None);
    /// ```
    pub fn get(&mut self, id: u64) -> Option<&V> {
        self.clock += 1;
        let now = self.clock;
        self.map.get_mut(&id).map(|(v, stamp)| {
            *stamp = now;
            &*v
        })
    }

    /// Keeps `v` under `id` (a value already there stays: two threads loading one kernel keep
    /// the first) and returns what had to go to stay within capacity, oldest first. The
    /// caller drops them, outside any lock it holds.
    ///
    /// ```
    /// let mut lru = tilekit_ops::loaded::Lru::new(1).unwrap();
    /// assert!(lru.insert(1, 'a').is_empty());
    /// assert!(lru.insert(1, 'b').is_empty()); // kept 'a'
    /// assert_eq!(lru.get(1), Some(&'a'));
    /// assert_eq!(lru.insert(2, 'c'), vec!['a']);
    /// ```
    pub fn insert(&mut self, id: u64, v: V) -> Vec<V> {
        self.clock += 1;
        let now = self.clock;
        self.map.entry(id).or_insert((v, now)).1 = now;
        self.shrink()
    }

    /// How many values are kept.
    ///
    /// ```
    /// let lru = tilekit_ops::loaded::Lru::<u8>::new(3).unwrap();
    /// assert_eq!(lru.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether none is kept.
    ///
    /// ```
    /// assert!(tilekit_ops::loaded::Lru::<u8>::new(3).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The most values kept.
    ///
    /// ```
    /// assert_eq!(tilekit_ops::loaded::Lru::<u8>::new(3).unwrap().capacity(), 3);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// A new capacity; returns what had to go to meet it, oldest first.
    ///
    /// ```
    /// let mut lru = tilekit_ops::loaded::Lru::new(8).unwrap();
    /// for id in 0..8 { lru.insert(id, id); }
    /// assert_eq!(lru.set_capacity(2).unwrap().len(), 7); // down to 1 below the new capacity
    /// assert_eq!(lru.len(), 1);
    /// ```
    pub fn set_capacity(&mut self, capacity: usize) -> Result<Vec<V>, ZeroCapacity> {
        if capacity == 0 {
            return Err(ZeroCapacity(capacity));
        }
        self.capacity = capacity;
        Ok(self.shrink())
    }

    /// Over capacity: down to three quarters of it (at least one below it, at least one kept),
    /// oldest first.
    fn shrink(&mut self) -> Vec<V> {
        if self.map.len() <= self.capacity {
            return Vec::new();
        }
        let keep = self.capacity.saturating_sub((self.capacity / 4).max(1)).max(1);
        let mut by_age: Vec<(u64, u64)> = self.map.iter().map(|(&id, &(_, s))| (s, id)).collect();
        by_age.sort_unstable();
        let drop = by_age.len() - keep;
        by_age[..drop].iter().filter_map(|&(_, id)| self.map.remove(&id).map(|(v, _)| v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a brute-force model: a list ordered by last use.
    #[test]
    fn matches_a_recency_list() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for capacity in [1usize, 2, 3, 5, 8, 16] {
            let mut lru = Lru::new(capacity).unwrap();
            let mut model: Vec<u64> = Vec::new(); // least recent first
            for _ in 0..2000 {
                let id = next() % 24;
                if next() % 2 == 0 {
                    let got = lru.get(id).copied();
                    let pos = model.iter().position(|&m| m == id);
                    assert_eq!(got, pos.map(|_| id));
                    if let Some(p) = pos {
                        model.remove(p);
                        model.push(id);
                    }
                } else {
                    let evicted = lru.insert(id, id);
                    if let Some(p) = model.iter().position(|&m| m == id) {
                        model.remove(p);
                    }
                    model.push(id);
                    let mut want = Vec::new();
                    if model.len() > capacity {
                        let keep = match capacity {
                            1 => 1,
                            c if c < 8 => c - 1,
                            c => c - c / 4,
                        };
                        want = model.drain(..model.len() - keep).collect();
                    }
                    assert_eq!(evicted, want, "capacity {capacity}");
                }
                assert!(lru.len() <= capacity);
                assert_eq!(lru.len(), model.len());
            }
        }
    }
}
