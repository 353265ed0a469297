//! A small deterministic random generator for test data (xorshift64*), so that selftests and
//! benchmarks are reproducible from a seed without a dependency.

/// xorshift64*.
///
/// ```
/// let mut r = tilekit_cli::rng::Rng::new(1);
/// let a = r.f32();
/// assert!(a != 0.0 && (-1.0..1.0).contains(&a));
/// ```
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [-1, 1), never exactly 0.
    pub fn f32(&mut self) -> f32 {
        let x = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
        if x == 0.0 {
            0.5
        } else {
            x
        }
    }
    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo).max(1) as u64) as i64
    }
}
