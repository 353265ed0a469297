//! Host-side helpers shared by the kernels: random data in a dtype, poisoned outputs, sizes
//! checked before anything is allocated, vector-width choice from a shape, and result
//! comparison.
//!
//! ```text
//!   shape ──checked product──► elements ──× dtype size──► bytes of every buffer of the run
//!         ──► RunBytes::peak: the largest phase (reference, launch, check) of the run
//!         ──► check_memory: the sum against the host limit (TILEKIT_HOST_MEMORY_LIMIT, else
//!             3/4 of MemAvailable) — refused with the figures before a byte is allocated
//!   seed ──splitmix64 (counter-based)──► uniform in [-2, 2) away from 0 ──round──► HostBuffer
//!   outputs: NaN-filled (poison) before every run, so an element never written shows up
//!   references: computed from the input buffers element by element (no f64 copies of the
//!   data), stored in the output's type when exact there, in f64 when small (row reductions,
//!   GEMM)
//!   compare(got, want): streamed; max |Δ|, max |Δ| / max(|want|, 1e-3), exact or a tolerance
//! ```
//!
//! A run of `M × N` elements on the interpreter therefore holds at its peak (the launch) the
//! input(s), the output, the reference, the interpreter's copies of every bound buffer (one of
//! each input, two of each output: [`INTERP_INPUT_COPIES`], [`INTERP_OUTPUT_COPIES`]), its 2
//! bits per output element and the process's own state ([`interp_state_bytes`]) — for
//! `softmax 4096x16384 bf16`, 6 × 128 MiB + 16 MiB + the state ([`RunBytes`]).
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::host::{random, value};
//! let buf = random(ScalarType::BF16, 100, 7).unwrap();
//! assert_eq!(buf.len(), 100);
//! assert!((0..100).map(|i| value(&buf, i)).all(|v| v != 0.0 && v.abs() <= 2.0));
//! ```

use half::{bf16, f16};
use rayon::prelude::*;
use tilekit_ir::interp::HostBuffer;
use tilekit_ir::{Lit, ScalarType};

use crate::error::{OpsError, Result};

/// The data types the kernels accept for data movement.
///
/// ```
/// assert_eq!(tilekit_ops::host::FLOAT_TYPES.len(), 3);
/// ```
pub const FLOAT_TYPES: [ScalarType; 3] = [ScalarType::F32, ScalarType::F16, ScalarType::BF16];

/// The environment variable that sets the host-memory limit of a run, in bytes (a plain
/// number, or with a `K`, `M`, `G` or `T` suffix: powers of 1024).
///
/// ```
/// assert_eq!(tilekit_ops::host::MEMORY_LIMIT_ENV, "TILEKIT_HOST_MEMORY_LIMIT");
/// ```
pub const MEMORY_LIMIT_ENV: &str = "TILEKIT_HOST_MEMORY_LIMIT";

/// The limit when neither the environment variable nor `/proc/meminfo` gives one: 8 GiB.
///
/// ```
/// assert_eq!(tilekit_ops::host::DEFAULT_MEMORY_LIMIT, 8 << 30);
/// ```
pub const DEFAULT_MEMORY_LIMIT: u64 = 8 << 30;

/// Checks that `ty` is one of `allowed` (a typed error naming the kernel otherwise).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::host::check_dtype;
/// assert!(check_dtype("gemm", ScalarType::F32, &[ScalarType::F16, ScalarType::BF16]).is_err());
/// ```
pub fn check_dtype(kernel: &str, ty: ScalarType, allowed: &[ScalarType]) -> Result<()> {
    if allowed.contains(&ty) {
        return Ok(());
    }
    let names: Vec<String> = allowed.iter().map(|t| t.to_string()).collect();
    Err(OpsError::invalid(kernel, "dtype", ty, format!("must be one of {}", names.join(", "))))
}

/// The element count of `shape`, checked: every length ≥ 1 and the product within `i64`.
///
/// ```
/// use tilekit_ops::host::elements;
/// assert_eq!(elements("copy", &[3, 4, 5]).unwrap(), 60);
/// let e = elements("copy", &[1 << 31, 1 << 31, 1 << 31]).unwrap_err();
/// assert!(e.to_string().contains("element count overflows i64"), "{e}");
/// assert!(elements("copy", &[3, 0]).is_err());
/// ```
pub fn elements(kernel: &str, shape: &[i64]) -> Result<i64> {
    if let Some(l) = shape.iter().find(|&&l| l < 1) {
        return Err(OpsError::invalid(
            kernel,
            "shape",
            format!("{shape:?}"),
            format!("every length must be >= 1 (got {l})"),
        ));
    }
    shape.iter().try_fold(1i64, |n, &l| n.checked_mul(l)).ok_or_else(|| {
        OpsError::invalid(kernel, "shape", format!("{shape:?}"), "the element count overflows i64")
    })
}

/// Checks a shape's rank and that every length is ≥ 1 and the element count at most 2³¹−1
/// (the kernels index with `i32`).
///
/// ```
/// use tilekit_ops::host::check_shape;
/// assert!(check_shape("copy", &[3, 0], 2).is_err());
/// assert!(check_shape("copy", &[3, 4], 2).is_ok());
/// assert!(check_shape("copy", &[2147483647, 2147483647, 2147483647], 3).is_err());
/// ```
pub fn check_shape(kernel: &str, shape: &[i64], rank: usize) -> Result<()> {
    if shape.len() != rank || shape.iter().any(|&l| l < 1 || l > i32::MAX as i64) {
        return Err(OpsError::invalid(
            kernel,
            "shape",
            format!("{shape:?}"),
            format!("needs {rank} lengths in 1..=2^31-1"),
        ));
    }
    let n = elements(kernel, shape)?;
    if n > i32::MAX as i64 {
        return Err(OpsError::invalid(
            kernel,
            "shape",
            format!("{shape:?}"),
            format!("{n} elements, more than 2^31-1"),
        ));
    }
    Ok(())
}

/// Bytes of `n` elements of `ty`, checked.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::host::bytes(ScalarType::BF16, 10).unwrap(), 20);
/// assert!(tilekit_ops::host::bytes(ScalarType::F64, u64::MAX / 2).is_err());
/// ```
pub fn bytes(ty: ScalarType, n: u64) -> Result<u64> {
    n.checked_mul(ty.size_bytes() as u64).ok_or_else(|| {
        OpsError::invalid("host buffer", "elements", n, format!("the byte size of {ty} overflows"))
    })
}

/// Bytes the interpreter keeps to detect races on an output of `n` elements (2 bits each).
///
/// ```
/// assert_eq!(tilekit_ops::host::race_map_bytes(64), 16);
/// ```
pub fn race_map_bytes(n: u64) -> u64 {
    n.div_ceil(32) * 8
}

/// Copies of each bound input buffer an interpreter launch holds while it runs: the launch
/// copies every bound buffer, from its offset on, into the interpreter's argument list.
///
/// ```
/// assert_eq!(tilekit_ops::host::INTERP_INPUT_COPIES, 1);
/// ```
pub const INTERP_INPUT_COPIES: u64 = 1;

/// Copies of each bound output buffer an interpreter launch is counted as holding at its
/// peak: the argument the interpreter writes, plus one more as a margin for the write-back,
/// which keeps a bit per changed byte (an eighth of the output) and drops the pre-launch
/// snapshot before writing, so the storage is written in place rather than copied.
///
/// ```
/// assert_eq!(tilekit_ops::host::INTERP_OUTPUT_COPIES, 2);
/// ```
pub const INTERP_OUTPUT_COPIES: u64 = 2;

/// The host memory of one checked run (`tilekit run`, `selftest`, `bench`: random inputs, a
/// CPU reference, the op through the API, the output read back and compared), by what it is
/// for. [`RunBytes::peak`] is what [`check_memory`] checks: the largest of its three phases,
///
/// ```text
///   reference   inputs + reference + the reference's scratch (f64 rows or products, copied
///               into the reference buffer)
///   launch      inputs + reference + outputs (every buffer the op allocates, workspaces too)
///               + the interpreter's copies (INTERP_INPUT_COPIES × inputs,
///               INTERP_OUTPUT_COPIES × outputs) + its race map (2 bits per output element)
///   check       inputs + reference + the output read back + the larger of the output (while
///               it is read back) and the outcome's copy of the reference
/// ```
///
/// On a GPU the run holds less (no interpreter copies, no race map): the interpreter's peak
/// bounds both.
///
/// ```
/// use tilekit_ops::host::RunBytes;
/// // softmax of 1000 × 1000 f32: 4 MB in, out and reference
/// let r = RunBytes { inputs: 4_000_000, outputs: 4_000_000, output_elems: 1_000_000,
///                    reference: 4_000_000, ..Default::default() };
/// let peak = r.peak();
/// assert_eq!(r.total(), 4_000_000 * 6 + 250_000); // x, y, reference, 3 copies, race map
/// assert_eq!(peak.iter().map(|p| p.0).collect::<Vec<_>>(),
///            ["inputs", "reference", "outputs", "interpreter copies", "race map"]);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunBytes {
    /// Bytes of the input buffers.
    pub inputs: u64,
    /// Bytes of every buffer the op allocates: its outputs and any workspace.
    pub outputs: u64,
    /// Elements of the buffers the kernel writes (the race map's 2 bits each).
    pub output_elems: u64,
    /// Bytes of the reference the output is compared with.
    pub reference: u64,
    /// Bytes held besides the reference while it is computed (dropped before the launch).
    pub reference_scratch: u64,
    /// The process and the interpreter's own state, whatever the shape: the binary, the
    /// built kernels, the registers and records of the blocks in flight
    /// ([`interp_state_bytes`]).
    pub state: u64,
}

impl RunBytes {
    /// The parts of the run's peak phase, `(what, bytes)` (see [`RunBytes`]); their sum is
    /// [`RunBytes::total`].
    ///
    /// ```
    /// use tilekit_ops::host::RunBytes;
    /// // a reference whose scratch outweighs the launch's copies: the reference phase wins
    /// let r = RunBytes { inputs: 1 << 20, outputs: 1 << 20, output_elems: 1 << 18,
    ///                    reference: 2 << 20, reference_scratch: 16 << 20, state: 0 };
    /// assert_eq!(r.peak(), vec![("inputs", 1 << 20), ("reference", 2 << 20), ("reference scratch", 16 << 20)]);
    /// assert_eq!(r.total(), 19 << 20);
    /// ```
    pub fn peak(&self) -> Vec<(&'static str, u64)> {
        let RunBytes { inputs, outputs, output_elems, reference, reference_scratch, state } = *self;
        let copies = inputs
            .saturating_mul(INTERP_INPUT_COPIES)
            .saturating_add(outputs.saturating_mul(INTERP_OUTPUT_COPIES));
        let phases = [
            vec![
                ("inputs", inputs),
                ("reference", reference),
                ("reference scratch", reference_scratch),
            ],
            vec![
                ("inputs", inputs),
                ("reference", reference),
                ("outputs", outputs),
                ("interpreter copies", copies),
                ("race map", race_map_bytes(output_elems)),
            ],
            vec![
                ("inputs", inputs),
                ("reference", reference),
                ("output read back", outputs),
                if outputs >= reference {
                    ("outputs", outputs)
                } else {
                    ("reference copy", reference)
                },
            ],
        ];
        let sum = |p: &[(&str, u64)]| p.iter().fold(0u64, |s, x| s.saturating_add(x.1));
        let mut phases = phases.map(|mut p| {
            p.push(("process and interpreter state", state));
            p
        });
        let mut best = std::mem::take(&mut phases[0]);
        for p in phases.into_iter().skip(1) {
            if sum(&p) > sum(&best) {
                best = p;
            }
        }
        best.retain(|p| p.1 > 0);
        best
    }

    /// Bytes at the run's peak: the sum of [`RunBytes::peak`].
    ///
    /// ```
    /// use tilekit_ops::host::RunBytes;
    /// let copy = RunBytes { inputs: 64, outputs: 64, output_elems: 16, reference: 64, ..Default::default() };
    /// assert_eq!(copy.total(), 64 * 6 + 8);
    /// ```
    pub fn total(&self) -> u64 {
        self.peak().iter().fold(0u64, |s, p| s.saturating_add(p.1))
    }
}

/// Host memory a run holds whatever its shape: 32 MiB for the process (the binary, the
/// kernels built) and 8 MiB for each thread of the pool, whose blocks in flight keep their
/// registers and access records (a Hopper GEMM block's are several MiB).
///
/// ```
/// let b = tilekit_ops::host::interp_state_bytes();
/// assert_eq!(b, (32 << 20) + (8 << 20) * rayon::current_num_threads() as u64);
/// ```
pub fn interp_state_bytes() -> u64 {
    (32 << 20) + (8u64 << 20).saturating_mul(rayon::current_num_threads().max(1) as u64)
}

/// Scratch the row-wise references (softmax) hold while they run: one `f64` row per worker
/// thread in flight, at most one per row (twice the pool's threads, for the rows a waiting
/// thread steals).
///
/// ```
/// use tilekit_ops::host::row_scratch_bytes;
/// assert_eq!(row_scratch_bytes(1, 1000), 8000); // one row of 1000 f64
/// assert!(row_scratch_bytes(1_000_000, 10) <= 2 * rayon::current_num_threads() as u64 * 80);
/// ```
pub fn row_scratch_bytes(rows: u64, n: u64) -> u64 {
    let workers = 2 * rayon::current_num_threads().max(1) as u64;
    rows.min(workers).saturating_mul(n).saturating_mul(8)
}

/// `3 GiB`, `12.5 MiB`, `100 B`.
///
/// ```
/// assert_eq!(tilekit_ops::host::human_bytes(3 << 30), "3.0 GiB");
/// assert_eq!(tilekit_ops::host::human_bytes(1536), "1.5 KiB");
/// ```
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, shift) = match s.chars().last()?.to_ascii_uppercase() {
        'K' => (&s[..s.len() - 1], 10),
        'M' => (&s[..s.len() - 1], 20),
        'G' => (&s[..s.len() - 1], 30),
        'T' => (&s[..s.len() - 1], 40),
        _ => (s, 0),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(1u64 << shift)
}

/// The host-memory limit of a run and where it comes from: [`MEMORY_LIMIT_ENV`] if set,
/// else 3/4 of `MemAvailable` in `/proc/meminfo`, else [`DEFAULT_MEMORY_LIMIT`]. A malformed
/// variable is an error naming it.
///
/// ```
/// let (limit, from) = tilekit_ops::host::memory_limit().unwrap();
/// assert!(limit > 0 && !from.is_empty());
/// ```
pub fn memory_limit() -> Result<(u64, String)> {
    let var = std::env::var(MEMORY_LIMIT_ENV).ok();
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    memory_limit_from(var.as_deref(), meminfo.as_deref())
}

/// [`memory_limit`] from the variable's value and the text of `/proc/meminfo` (either absent).
///
/// ```
/// use tilekit_ops::host::{memory_limit_from, DEFAULT_MEMORY_LIMIT};
/// assert_eq!(memory_limit_from(Some("2G"), None).unwrap(), (2 << 30, "TILEKIT_HOST_MEMORY_LIMIT=2G".into()));
/// let info = "MemTotal: 16 kB\nMemAvailable:    4194304 kB\n";
/// assert_eq!(memory_limit_from(None, Some(info)).unwrap().0, 3 << 30);
/// assert_eq!(memory_limit_from(None, None).unwrap().0, DEFAULT_MEMORY_LIMIT);
/// assert!(memory_limit_from(Some("lots"), Some(info)).is_err());
/// ```
pub fn memory_limit_from(var: Option<&str>, meminfo: Option<&str>) -> Result<(u64, String)> {
    if let Some(v) = var {
        return parse_bytes(v).map(|b| (b, format!("{MEMORY_LIMIT_ENV}={v}"))).ok_or_else(|| {
            OpsError::invalid(
                "host memory limit",
                MEMORY_LIMIT_ENV,
                format!("{v:?}"),
                "a byte count, optionally with a K, M, G or T suffix (powers of 1024)",
            )
        });
    }
    let avail = meminfo.and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        kb.checked_mul(1024)
    });
    Ok(match avail {
        Some(b) => (b / 4 * 3, format!("3/4 of MemAvailable ({})", human_bytes(b))),
        None => (DEFAULT_MEMORY_LIMIT, "the default without /proc/meminfo".into()),
    })
}

/// Refuses a run whose host buffers (`(what, bytes)`) add up to more than [`memory_limit`],
/// before anything is allocated.
///
/// ```
/// use tilekit_ops::host::check_memory;
/// assert!(check_memory("copy", &[("x", 1024), ("y", 1024)]).is_ok());
/// let e = check_memory("copy 2x2 f32", &[("x", 1 << 60), ("y", 1 << 60)]).unwrap_err();
/// assert!(e.to_string().starts_with(
///     "copy 2x2 f32: the run needs 2048.0 PiB of host memory (x 1024.0 PiB, y 1024.0 PiB), over the limit of "
/// ), "{e}");
/// ```
pub fn check_memory(context: &str, parts: &[(&str, u64)]) -> Result<()> {
    let needed = parts.iter().try_fold(0u64, |s, p| s.checked_add(p.1)).unwrap_or(u64::MAX);
    let (limit, from) = memory_limit()?;
    if needed <= limit {
        return Ok(());
    }
    let list: Vec<String> = parts.iter().map(|(w, b)| format!("{w} {}", human_bytes(*b))).collect();
    Err(OpsError::HostMemory {
        context: context.into(),
        needed,
        parts: list.join(", "),
        limit,
        limit_from: from,
    })
}

/// `"copy 1000x2 f32"`: how errors name a run.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::host::context("copy", &[1000, 2], ScalarType::F32), "copy 1000x2 f32");
/// ```
pub fn context(kernel: &str, shape: &[i64], ty: ScalarType) -> String {
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    format!("{kernel} {} {ty}", dims.join("x"))
}

/// The `k`-th output (0-based) of splitmix64 started at `state`: the generator is a counter
/// (state + (k+1)·γ) through a mixer, so any element is computed directly.
fn splitmix_at(state: u64, k: u64) -> u64 {
    let mut z = state.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(k.wrapping_add(1)));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn random_value(state: u64, k: u64) -> f64 {
    let u = (splitmix_at(state, k) >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
    let x = u * 4.0 - 2.0;
    if x.abs() < 1.0 / 64.0 {
        x.signum() * (1.0 / 64.0 + x.abs()) + if x == 0.0 { 0.5 } else { 0.0 }
    } else {
        x
    }
}

/// `len` random values of `ty` in `[-2, 2)`, never zero, generated straight into the buffer
/// (an allocation failure is a typed error).
///
/// ```
/// use tilekit_ir::ScalarType;
/// let a = tilekit_ops::host::random(ScalarType::F32, 8, 1).unwrap();
/// let b = tilekit_ops::host::random(ScalarType::F32, 8, 1).unwrap();
/// assert_eq!(a, b); // deterministic in the seed
/// ```
pub fn random(ty: ScalarType, len: usize, seed: u64) -> Result<HostBuffer> {
    let state = seed ^ 0x005E_ED0F_711E_u64;
    fill_with(ty, len, |i| round_bits(ty, random_value(state, i as u64)))
}

#[inline]
fn put(dst: &mut [u8], bits: u64) {
    match dst.len() {
        1 => dst[0] = bits as u8,
        2 => dst.copy_from_slice(&(bits as u16).to_le_bytes()),
        4 => dst.copy_from_slice(&(bits as u32).to_le_bytes()),
        _ => dst.copy_from_slice(&bits.to_le_bytes()[..dst.len().min(8)]),
    }
}

/// Elements per parallel chunk for `len` elements: small enough to spread a few thousand
/// expensive elements (row reductions) over the cores, at most 64 Ki.
fn chunk_for(len: usize) -> usize {
    (len / 256).clamp(1, 1 << 16)
}

/// A buffer of `len` elements of `ty` whose element `i` has the bits `f(i)`, filled in
/// parallel (checked allocation).
///
/// ```
/// use tilekit_ir::ScalarType;
/// let b = tilekit_ops::host::fill_with(ScalarType::I32, 4, |i| i as u64 * 3).unwrap();
/// assert_eq!(b.to_i32(), Some(vec![0, 3, 6, 9]));
/// ```
pub fn fill_with(
    ty: ScalarType,
    len: usize,
    f: impl Fn(usize) -> u64 + Sync,
) -> Result<HostBuffer> {
    let mut buf = HostBuffer::try_zeroed(ty, len)?;
    let s = ty.size_bytes();
    let chunk = chunk_for(len);
    buf.as_bytes_mut().par_chunks_mut(chunk * s).enumerate().for_each(|(c, bytes)| {
        for (j, e) in bytes.chunks_exact_mut(s).enumerate() {
            put(e, f(c * chunk + j));
        }
    });
    Ok(buf)
}

/// A buffer of `rows × n` elements of `ty` filled one row at a time, rows in parallel:
/// `f(row, out)` writes the row's `n` element bits into `out`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let b = tilekit_ops::host::fill_rows(ScalarType::I32, 2, 3, |r, out| {
///     for (j, o) in out.iter_mut().enumerate() { *o = (10 * r + j) as u64 }
/// }).unwrap();
/// assert_eq!(b.to_i32(), Some(vec![0, 1, 2, 10, 11, 12]));
/// ```
pub fn fill_rows(
    ty: ScalarType,
    rows: usize,
    n: usize,
    f: impl Fn(usize, &mut [u64]) + Sync,
) -> Result<HostBuffer> {
    let len = rows.checked_mul(n).ok_or_else(|| {
        OpsError::invalid("host buffer", "rows × columns", format!("{rows} × {n}"), "overflows")
    })?;
    let mut buf = HostBuffer::try_zeroed(ty, len)?;
    let s = ty.size_bytes();
    if len == 0 {
        return Ok(buf);
    }
    buf.as_bytes_mut().par_chunks_mut(n * s).enumerate().for_each_init(
        || vec![0u64; n],
        |row, (r, bytes)| {
            f(r, row);
            for (e, &bits) in bytes.chunks_exact_mut(s).zip(row.iter()) {
                put(e, bits);
            }
        },
    );
    Ok(buf)
}

/// The bits of `v` rounded to `ty` (floats; integers truncate).
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert_eq!(tilekit_ops::host::round_bits(ScalarType::F16, 1.0), 0x3c00);
/// ```
pub fn round_bits(ty: ScalarType, v: f64) -> u64 {
    match ty {
        ScalarType::F16 => f16::from_f64(v).to_bits() as u64,
        ScalarType::BF16 => bf16::from_f64(v).to_bits() as u64,
        ScalarType::F64 => v.to_bits(),
        ScalarType::F32 => (v as f32).to_bits() as u64,
        t => Lit::int(t, v as i64).map_or(0, Lit::bits),
    }
}

/// Element `i` of `buf` as `f64` (floats exactly; integers by value).
///
/// ```
/// use tilekit_ir::interp::HostBuffer;
/// assert_eq!(tilekit_ops::host::value(&HostBuffer::from_i32(&[-3]), 0), -3.0);
/// ```
#[inline]
pub fn value(buf: &HostBuffer, i: usize) -> f64 {
    tilekit_ir::eval::to_f64(buf.elem(), buf.bits(i))
}

/// A buffer of `ty` holding `vals` rounded to `ty`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::host::{from_f64, to_f64};
/// assert_eq!(to_f64(&from_f64(ScalarType::F16, &[1.0, 0.5])), vec![1.0, 0.5]);
/// ```
pub fn from_f64(ty: ScalarType, vals: &[f64]) -> HostBuffer {
    let mut h = HostBuffer::zeroed(ty, vals.len());
    for (i, &v) in vals.iter().enumerate() {
        h.set_bits(i, round_bits(ty, v));
    }
    h
}

/// The buffer's elements as `f64` (floats; integers by value): a copy, for small buffers and
/// tests (comparisons stream with [`value`]).
///
/// ```
/// use tilekit_ir::interp::HostBuffer;
/// assert_eq!(tilekit_ops::host::to_f64(&HostBuffer::from_i32(&[3])), vec![3.0]);
/// ```
pub fn to_f64(buf: &HostBuffer) -> Vec<f64> {
    (0..buf.len()).map(|i| value(buf, i)).collect()
}

/// `len` NaNs of `ty` (all-ones bits for an integer type: −1 signed, the maximum unsigned):
/// outputs are poisoned before every run.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let b = tilekit_ops::host::poisoned(ScalarType::BF16, 2).unwrap();
/// assert!(tilekit_ops::host::to_f64(&b).iter().all(|v| v.is_nan()));
/// let i = tilekit_ops::host::poisoned(ScalarType::I32, 2).unwrap();
/// assert_eq!(i.to_i32(), Some(vec![-1, -1]));
/// ```
pub fn poisoned(ty: ScalarType, len: usize) -> Result<HostBuffer> {
    let lit = Lit::float(ty, f64::NAN).unwrap_or(Lit::from_bits(ty, u64::MAX));
    Ok(HostBuffer::try_filled(lit, len)?)
}

/// The widest vector (elements, a power of two, at most 16 bytes of `ty`) that divides every
/// one of `lengths` — the guarantee a view may make for a contiguous last dim whose length and
/// other strides are these.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::host::vector_for;
/// assert_eq!(vector_for(ScalarType::F32, &[1000, 64]), 4);
/// assert_eq!(vector_for(ScalarType::BF16, &[1000]), 8);
/// assert_eq!(vector_for(ScalarType::F32, &[777]), 1);
/// ```
pub fn vector_for(ty: ScalarType, lengths: &[i64]) -> i64 {
    let mut v = 16 / ty.size_bytes() as i64;
    while v > 1 && lengths.iter().any(|&l| l % v != 0) {
        v /= 2;
    }
    v
}

/// A sequence of numbers a comparison reads one at a time: `f64` slices and vectors, and
/// host buffers (read in place, no copy).
///
/// ```
/// use tilekit_ir::interp::HostBuffer;
/// use tilekit_ops::host::Values;
/// assert_eq!(HostBuffer::from_f32(&[1.5]).value(0), 1.5);
/// assert_eq!(vec![2.0].count(), 1);
/// ```
pub trait Values: Sync {
    /// How many.
    fn count(&self) -> usize;
    /// Number `i` (< count) as `f64`.
    fn value(&self, i: usize) -> f64;
}

impl Values for [f64] {
    fn count(&self) -> usize {
        self.len()
    }
    fn value(&self, i: usize) -> f64 {
        self[i]
    }
}

impl<const N: usize> Values for [f64; N] {
    fn count(&self) -> usize {
        N
    }
    fn value(&self, i: usize) -> f64 {
        self[i]
    }
}

impl Values for Vec<f64> {
    fn count(&self) -> usize {
        self.len()
    }
    fn value(&self, i: usize) -> f64 {
        self[i]
    }
}

impl Values for HostBuffer {
    fn count(&self) -> usize {
        self.len()
    }
    fn value(&self, i: usize) -> f64 {
        value(self, i)
    }
}

/// How a result compares with its reference.
///
/// ```
/// let c = tilekit_ops::host::compare(&[1.0, 2.0], &[1.0, 2.5], 0.0);
/// assert_eq!((c.max_abs, c.max_rel, c.mismatches, c.passed), (0.5, 0.2, 1, false));
/// // near zero the error is taken relative to 1: 7.8e-4 off a value of 1e-3 passes tol 3e-2
/// let c = tilekit_ops::host::compare(&[1.78e-3], &[1.0e-3], 3e-2);
/// assert!(c.passed && (c.max_rel - 7.8e-4).abs() < 1e-12 && c.max_rel <= c.tolerance);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// Largest absolute error.
    pub max_abs: f64,
    /// Largest error relative to `max(|want|, 1)`: `|got − want| / max(|want|, 1)`, the
    /// quantity the tolerance is compared with (an element fails when it is above `tolerance`,
    /// so a passing comparison has `max_rel ≤ tolerance`). Near zero it is the absolute error.
    pub max_rel: f64,
    /// Elements outside the tolerance (NaN counts).
    pub mismatches: usize,
    /// The tolerance used (0 = exact).
    pub tolerance: f64,
    /// No mismatches.
    pub passed: bool,
}

/// Compares element by element, streaming (buffers are read in place); an element passes when
/// `|got − want| ≤ tol · max(|want|, 1)` (so `tol = 0` is exact). NaN never passes.
///
/// ```
/// use tilekit_ir::interp::HostBuffer;
/// let c = tilekit_ops::host::compare(&[1.0, f64::NAN], &[1.0, 1.0], 0.1);
/// assert_eq!(c.mismatches, 1);
/// let c = tilekit_ops::host::compare(&HostBuffer::from_f32(&[1.0]), &[1.0], 0.0);
/// assert!(c.passed);
/// ```
pub fn compare<G: Values + ?Sized, W: Values + ?Sized>(got: &G, want: &W, tol: f64) -> Comparison {
    let empty =
        Comparison { max_abs: 0.0, max_rel: 0.0, mismatches: 0, tolerance: tol, passed: true };
    if got.count() != want.count() {
        let mismatches = got.count().abs_diff(want.count()).max(1);
        return Comparison { mismatches, passed: false, ..empty };
    }
    let n = got.count();
    let chunk = chunk_for(n);
    // per chunk in parallel, then merged: max and sum do not depend on the order
    let parts: Vec<Comparison> = (0..n.div_ceil(chunk))
        .into_par_iter()
        .map(|k| {
            let mut c = empty;
            for i in k * chunk..((k + 1) * chunk).min(n) {
                let (g, w) = (got.value(i), want.value(i));
                let d = (g - w).abs();
                if d.is_nan() {
                    c.mismatches += 1;
                    c.max_abs = f64::NAN;
                    continue;
                }
                c.max_abs = if c.max_abs.is_nan() { c.max_abs } else { c.max_abs.max(d) };
                // the printed error is the tested one: d / max(|w|, 1) against tol
                let scale = w.abs().max(1.0);
                c.max_rel = c.max_rel.max(d / scale);
                if d > tol * scale {
                    c.mismatches += 1;
                }
            }
            c
        })
        .collect();
    let mut c = empty;
    for p in parts {
        c.max_abs = if c.max_abs.is_nan() || p.max_abs.is_nan() {
            f64::NAN
        } else {
            c.max_abs.max(p.max_abs)
        };
        c.max_rel = c.max_rel.max(p.max_rel);
        c.mismatches += p.mismatches;
    }
    c.passed = c.mismatches == 0;
    c
}

/// What one kernel launch produced, with its reference.
///
/// ```
/// use tilekit_ir::interp::HostBuffer;
/// let o = tilekit_ops::host::Outcome { instructions: 3, got: HostBuffer::from_f32(&[1.0]), want: HostBuffer::from_f64(&[1.0]), tolerance: 0.0, elapsed: std::time::Duration::ZERO };
/// assert!(o.compare().passed);
/// ```
#[derive(Debug, Clone)]
pub struct Outcome {
    /// IR instructions of the kernel (constants not counted).
    pub instructions: usize,
    /// The output buffer.
    pub got: HostBuffer,
    /// The CPU reference: in the output's type where it is exact there, else `f64`.
    pub want: HostBuffer,
    /// Tolerance (0 = exact).
    pub tolerance: f64,
    /// Time in the interpreter.
    pub elapsed: std::time::Duration,
}

impl Outcome {
    /// The comparison of `got` and `want` with the outcome's tolerance.
    ///
    /// ```
    /// use tilekit_ir::interp::HostBuffer;
    /// let o = tilekit_ops::host::Outcome { instructions: 3, got: HostBuffer::from_f32(&[1.0]), want: HostBuffer::from_f32(&[2.0]), tolerance: 0.0, elapsed: std::time::Duration::ZERO };
    /// assert!(!o.compare().passed);
    /// ```
    pub fn compare(&self) -> Comparison {
        compare(&self.got, &self.want, self.tolerance)
    }
}

/// Row-major strides of `shape`.
///
/// ```
/// assert_eq!(tilekit_ops::host::strides(&[2, 3, 4]), vec![12, 4, 1]);
/// ```
pub fn strides(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        // shapes are checked first (element count within i64), so this saturation never bites
        s[i] = s[i + 1].saturating_mul(shape[i + 1]);
    }
    s
}

/// Grid size along one axis: `ceil(len / tile)`, checked against the hardware limit.
///
/// ```
/// assert_eq!(tilekit_ops::host::blocks(1000, 64).unwrap(), 16);
/// ```
pub fn blocks(len: i64, tile: i64) -> Result<u32> {
    if tile < 1 || len < 0 {
        return Err(OpsError::invalid("grid", "tile", tile, "tiles and lengths must be positive"));
    }
    let n = len / tile + i64::from(len % tile != 0);
    u32::try_from(n).map_err(|_| OpsError::invalid("grid", "blocks", n, "must fit in u32"))
}

/// The index type a kernel over `layouts` needs: `i32` while every length, stride and span fits
/// 2^31 − 1 (the fast path), else `i64`, so no size is refused for size alone — the memory-bound
/// ops build a 64-bit twin of their kernel for such tensors.
///
/// ```
/// use tilekit_ir::{tensor::TensorLayout, ScalarType};
/// use tilekit_ops::host::index_type;
/// let small = TensorLayout::contiguous(ScalarType::BF16, vec![65536, 1024]).unwrap();
/// let big = TensorLayout::contiguous(ScalarType::BF16, vec![65536, 32776]).unwrap(); // 2^31 + 2^19
/// assert_eq!(index_type(&[&small]), ScalarType::I32);
/// assert_eq!(index_type(&[&small, &big]), ScalarType::I64);
/// // a small view far into a big tensor indexes from its first element: 32 bits
/// assert_eq!(index_type(&[&big.narrow(0, 65000, 16).unwrap()]), ScalarType::I32);
/// ```
pub fn index_type(layouts: &[&tilekit_ir::tensor::TensorLayout]) -> ScalarType {
    let max = i64::from(i32::MAX);
    let wide = layouts
        .iter()
        // (the first element's offset goes into the pointer: the kernel indexes from there)
        .any(|l| {
            l.span_elems() - l.offset() > max
                || l.shape().iter().chain(l.strides()).any(|&v| v > max)
        });
    if wide {
        ScalarType::I64
    } else {
        ScalarType::I32
    }
}
