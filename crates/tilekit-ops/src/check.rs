//! Random-data checks of the library's ops, on any backend: the test and bench utilities of
//! `tilekit run`, `selftest` and `bench`, built on the tensor API ([`crate::api`]).
//!
//! ```text
//!   Problem::new(op, shape, dtype, seed)      sizes and host memory checked first (named errors)
//!     inputs: random host tensors (never 0)   want: the kernel module's CPU reference
//!   p.upload(b)      ──b.from_host──►  backend tensors
//!   p.call(b, xs)    ──api::copy / transpose / permute / morton / row_sum / add / gemm …──► y
//!   b.to_host(y)     ──► compare(got, want, the module's tolerance) ──► Outcome / Comparison
//!
//!   plan(op, shape, dtype): the same call on backend::Record (layouts only, no data):
//!                           the kernel and grid the op launches — what `tilekit ptx` prints
//! ```
//!
//! Because the check goes through the same functions a user calls, a passing check on
//! `Cuda` is a passing API call on device tensors, and [`plan`] cannot disagree with a launch.
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::{backend::Interp, check::{check, Op}};
//! let o = check(&Interp, Op::Transpose, &[70, 33], ScalarType::F32, 1).unwrap();
//! assert!(o.compare().passed && o.compare().max_abs == 0.0);
//! ```

use std::sync::Arc;
use std::time::Instant;

use tilekit_ir::interp::HostBuffer;
use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::{Kernel, ScalarType};
use tilekit_layout::swizzle::TiledMorton;

use crate::api;
use crate::backend::{Backend, LayoutTensor, Record, TensorIn};
use crate::compiled::CompiledKernel;
use crate::elementwise::{Binary, Broadcast};
use crate::error::{OpsError, Result};
use crate::host::{self, Comparison, Outcome};
use crate::reduce::Reduction;

/// The Morton kernels' tile side in `tilekit run` (`morton`, `unmorton`).
///
/// ```
/// assert_eq!(tilekit_ops::check::MORTON_TILE, 8);
/// ```
pub const MORTON_TILE: i64 = 8;

/// An op of the library with what its random problem needs beyond the shape.
///
/// ```
/// use tilekit_ops::check::Op;
/// assert!(matches!(Op::named("permute021").unwrap(), Op::Permute([0, 2, 1])));
/// assert!(Op::named("nope").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `api::copy` of a row-major `MxN` or `BxMxN` tensor.
    Copy,
    /// `api::transpose` of an `MxN` matrix.
    Transpose,
    /// `api::permute` of an `AxBxC` tensor: `out.shape[k] = shape[perm[k]]`.
    Permute([usize; 3]),
    /// `api::morton` (or `api::unmorton` when `inverse`) of an `HxW` image in `tile × tile`
    /// tiles.
    Morton {
        /// Tile side.
        tile: i64,
        /// Storage → image.
        inverse: bool,
    },
    /// `api::row_sum`, `row_max` or `softmax` of an `MxN` matrix.
    Reduce(Reduction),
    /// `api::add` / `mul` / `maximum` of an `MxN` matrix and `b` (full, a row or a column).
    Elementwise(Binary, Broadcast),
    /// `api::gemm` of `[M, N, K]`: A `MxK`, B `KxN`.
    Gemm,
    /// `api::attention` of `[B, S_Q, S_K, H, H_KV, D]`: Q `(B, S_Q, H, D)`, K and V
    /// `(B, S_K, H_KV, D)`, the default scale `1/√D`; O `(B, S_Q, H, D)` is checked (the LSE
    /// the call also writes is checked by the attention tests).
    Attention {
        /// Causal mask, bottom-right aligned.
        causal: bool,
    },
}

/// The element types attention takes.
///
/// ```
/// assert_eq!(tilekit_ops::check::ATTENTION_TYPES.len(), 2);
/// ```
pub const ATTENTION_TYPES: [ScalarType; 2] = [ScalarType::F16, ScalarType::BF16];

impl Op {
    /// The op a `tilekit run` kernel name stands for (see [`crate::run::KERNELS`]).
    ///
    /// ```
    /// use tilekit_ops::{check::Op, elementwise::{Binary, Broadcast}};
    /// assert_eq!(Op::named("mul_col").unwrap(), Op::Elementwise(Binary::Mul, Broadcast::Col));
    /// ```
    pub fn named(kernel: &str) -> Result<Op> {
        Ok(match kernel {
            "copy" => Op::Copy,
            "transpose" => Op::Transpose,
            "permute" => Op::Permute([2, 0, 1]),
            "permute021" => Op::Permute([0, 2, 1]),
            "morton" => Op::Morton { tile: MORTON_TILE, inverse: false },
            "unmorton" => Op::Morton { tile: MORTON_TILE, inverse: true },
            "row_sum" => Op::Reduce(Reduction::Sum),
            "row_max" => Op::Reduce(Reduction::Max),
            "softmax" => Op::Reduce(Reduction::Softmax),
            "add" => Op::Elementwise(Binary::Add, Broadcast::None),
            "mul" => Op::Elementwise(Binary::Mul, Broadcast::None),
            "max" => Op::Elementwise(Binary::Max, Broadcast::None),
            "add_row" => Op::Elementwise(Binary::Add, Broadcast::Row),
            "mul_col" => Op::Elementwise(Binary::Mul, Broadcast::Col),
            "gemm" => Op::Gemm,
            "attention" => Op::Attention { causal: false },
            "attention_causal" => Op::Attention { causal: true },
            _ => {
                let names: Vec<&str> = crate::run::KERNELS.iter().map(|k| k.name).collect();
                return Err(OpsError::invalid(
                    "run",
                    "kernel",
                    kernel,
                    format!("one of {}", names.join(", ")),
                ));
            }
        })
    }

    /// The name errors about the op's shape and dtype use (the kernel module's).
    ///
    /// ```
    /// use tilekit_ops::check::Op;
    /// assert_eq!(Op::named("add_row").unwrap().name(), "add");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Op::Copy => "copy",
            Op::Transpose => "transpose",
            Op::Permute(_) => "permute",
            Op::Morton { .. } => "morton",
            Op::Reduce(r) => r.name(),
            Op::Elementwise(b, _) => b.name(),
            Op::Gemm => "gemm",
            Op::Attention { .. } => "attention",
        }
    }

    /// The element types the op takes.
    ///
    /// ```
    /// use tilekit_ops::check::Op;
    /// assert_eq!(Op::Gemm.dtypes(), &tilekit_ops::gemm_simt::API_TYPES); // f16, bf16, f32
    /// ```
    pub fn dtypes(self) -> &'static [ScalarType] {
        match self {
            Op::Reduce(_) => &crate::reduce::TYPES,
            Op::Gemm => &crate::gemm_simt::API_TYPES,
            Op::Attention { .. } => &ATTENTION_TYPES,
            _ => &host::FLOAT_TYPES,
        }
    }
}

fn check_perm(perm: &[usize; 3]) -> Result<()> {
    let mut seen = [false; 3];
    if perm.iter().any(|&p| p > 2 || std::mem::replace(&mut seen[p], true)) {
        return Err(OpsError::invalid(
            "permute",
            "perm",
            format!("{perm:?}"),
            "a permutation of 0, 1, 2",
        ));
    }
    Ok(())
}

/// Checks `shape` (rank, lengths, element count within the kernels' 32-bit indices) and
/// `dtype` for `op`, before anything is built or allocated.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::check::{validate, Op};
/// assert!(validate(Op::Copy, &[4, 5], ScalarType::F32).is_ok());
/// let e = validate(Op::Copy, &[65536, 65536], ScalarType::F32).unwrap_err().to_string();
/// assert!(e.contains("4294967296 elements, more than 2^31-1"), "{e}");
/// // errors name the shape as given, not the kernel's rank-3 view of it
/// let e = validate(Op::Copy, &[1, 2147483648], ScalarType::F32).unwrap_err().to_string();
/// assert_eq!(e, "copy: shape = [1, 2147483648] is invalid: needs 2 lengths in 1..=2^31-1");
/// assert!(validate(Op::Gemm, &[200, 328, 72], ScalarType::BF16).is_ok()); // any M, N, K
/// assert!(validate(Op::Gemm, &[64, 60, 33], ScalarType::F32).is_ok());
/// ```
pub fn validate(op: Op, shape: &[i64], dtype: ScalarType) -> Result<()> {
    match op {
        Op::Copy => {
            // the kernel views MxN as 1xMxN; the checks (and their messages) take the shape as
            // given, so an error names the user's shape, not the kernel's rank-3 view
            if !matches!(shape.len(), 2 | 3) {
                return Err(OpsError::invalid(
                    "copy",
                    "shape",
                    format!("{shape:?}"),
                    "needs 2 or 3 lengths (MxN or BxMxN) in 1..=2^31-1",
                ));
            }
            host::check_shape("copy", shape, shape.len())?;
        }
        Op::Permute(perm) => {
            host::check_shape("permute", shape, 3)?;
            check_perm(&perm)?;
        }
        Op::Morton { tile, .. } => {
            host::check_shape("morton", shape, 2)?;
            TiledMorton::new(shape[0], shape[1], tile)?;
        }
        Op::Transpose | Op::Reduce(_) | Op::Elementwise(..) => {
            host::check_shape(op.name(), shape, 2)?;
        }
        Op::Gemm => {
            // [M, N, K] is not a tensor: each operand (A: M×K, B: K×N, C: M×N) must fit an index
            let [m, n, k] = <[i64; 3]>::try_from(shape).map_err(|_| {
                OpsError::invalid("gemm", "shape", format!("{shape:?}"), "[M, N, K]")
            })?;
            host::check_shape("gemm A (M×K)", &[m, k], 2)?;
            host::check_shape("gemm B (K×N)", &[k, n], 2)?;
            host::check_shape("gemm C (M×N)", &[m, n], 2)?;
            // any M, N, K: the API picks the kernel per backend (the Hopper kernel and the
            // SIMT kernel take every shape; elsewhere api::gemm names the tile rule)
        }
        Op::Attention { .. } => {
            // the shape's arity, lengths ≥ 1 and H_KV dividing H, as `tilekit run` parses it
            let dims = crate::attention_sm90::AttnDims::from_shape(shape)?;
            let (b, sq, sk, h, hkv, d) =
                (dims.batch, dims.s_q, dims.s_k, dims.heads, dims.kv_heads, dims.head_dim);
            host::check_shape("attention Q and O (B×S_Q×H×D)", &[b, sq, h, d], 4)?;
            host::check_shape("attention K and V (B×S_K×H_KV×D)", &[b, sk, hkv, d], 4)?;
            host::check_shape("attention LSE (B×H×S_Q)", &[b, h, sq], 3)?;
            if ![64, 128, 256].contains(&d) {
                return Err(OpsError::invalid("attention", "head dim D", d, "64, 128 or 256"));
            }
        }
    }
    host::check_dtype(op.name(), dtype, op.dtypes())
}

/// The inputs' (dtype, shape) of `op` on `shape` (validated).
fn input_shapes(op: Op, shape: &[i64], ty: ScalarType) -> Result<Vec<(ScalarType, Vec<i64>)>> {
    Ok(match op {
        Op::Copy
        | Op::Transpose
        | Op::Permute(_)
        | Op::Reduce(_)
        | Op::Morton { inverse: false, .. } => vec![(ty, shape.to_vec())],
        Op::Morton { tile, inverse: true } => {
            vec![(ty, vec![api::morton_len(shape[0], shape[1], tile)?])]
        }
        Op::Elementwise(_, bc) => {
            let (m, n) = (shape[0], shape[1]);
            let b = match bc {
                Broadcast::None => vec![m, n],
                Broadcast::Row => vec![n],
                Broadcast::Col => vec![m, 1],
            };
            vec![(ty, vec![m, n]), (ty, b)]
        }
        Op::Gemm => {
            let (m, n, k) = (shape[0], shape[1], shape[2]);
            vec![(ty, vec![m, k]), (ty, vec![k, n])]
        }
        Op::Attention { .. } => {
            let [b, sq, sk, h, hkv, d] =
                [shape[0], shape[1], shape[2], shape[3], shape[4], shape[5]];
            let kv = vec![b, sk, hkv, d];
            vec![(ty, vec![b, sq, h, d]), (ty, kv.clone()), (ty, kv)]
        }
    })
}

/// The host memory a checked run of `op` on `shape` holds ([`host::RunBytes`]: the inputs,
/// every buffer the API allocates, the interpreter's copies and race map, the reference and
/// its scratch), computed from the shape alone: [`Problem::new`] checks its
/// [`peak`](host::RunBytes::peak) against the host-memory limit before allocating anything.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::check::{run_bytes, Op};
/// // softmax of 20000 × 20000 f32: 1.6 GB each for x, y and the reference, and the
/// // interpreter's copies of x and (twice) y
/// let r = run_bytes(Op::named("softmax").unwrap(), &[20000, 20000], ScalarType::F32).unwrap();
/// assert_eq!((r.inputs, r.outputs, r.reference), (1_600_000_000, 1_600_000_000, 1_600_000_000));
/// assert_eq!(r.total(), 6 * 1_600_000_000 + 100_000_000 + r.state);
/// ```
pub fn run_bytes(op: Op, shape: &[i64], ty: ScalarType) -> Result<host::RunBytes> {
    validate(op, shape, ty)?;
    let count = |s: &[i64]| s.iter().product::<i64>() as u64;
    let inputs = input_shapes(op, shape, ty)?.iter().try_fold(0u64, |sum, (t, s)| {
        Ok::<u64, OpsError>(sum.saturating_add(host::bytes(*t, count(s))?))
    })?;
    let (out_ty, out_shape) = output_of(op, shape, ty);
    let out_elems = count(&out_shape);
    let out_bytes = host::bytes(out_ty, out_elems)?;
    let mut r = host::RunBytes {
        inputs,
        outputs: out_bytes,
        output_elems: out_elems,
        // the reference in the output's type (copies, permutes, Morton orders, softmax,
        // elementwise ops)
        reference: out_bytes,
        reference_scratch: 0,
        state: host::interp_state_bytes(),
    };
    match op {
        Op::Reduce(Reduction::Softmax) => {
            r.reference_scratch = host::row_scratch_bytes(shape[0] as u64, shape[1] as u64);
        }
        Op::Reduce(_) => r.reference = host::bytes(ScalarType::F64, out_elems)?,
        Op::Gemm => {
            // the f64 product, built as a vector and copied into the reference buffer
            r.reference = host::bytes(ScalarType::F64, out_elems)?;
            r.reference_scratch = r.reference;
            // a split K writes its partial products to an f32 workspace first
            let (m, n, k) = (shape[0], shape[1], shape[2]);
            if ty != ScalarType::F32 {
                let p = crate::gemm_tuning::GemmProblem::new(m, n, k, ty, ScalarType::F32, true);
                let split = crate::gemm_tuning::GemmChoice::heuristic(&p)
                    .split_k
                    .min(crate::gemm_sm90::MAX_SPLIT_K);
                if split > 1 {
                    let ws = split as u64 * m as u64 * (n + n % 2) as u64;
                    r.outputs = r.outputs.saturating_add(host::bytes(ScalarType::F32, ws)?);
                    r.output_elems = r.output_elems.saturating_add(ws);
                }
            }
        }
        Op::Attention { .. } => {
            // the LSE the call also writes (f32, B × H × S_Q)
            let lse = (shape[0] * shape[3] * shape[1]) as u64;
            r.outputs = r.outputs.saturating_add(host::bytes(ScalarType::F32, lse)?);
            r.output_elems = r.output_elems.saturating_add(lse);
            // f64 O and LSE, built row by row (a vector each) and copied
            r.reference = host::bytes(ScalarType::F64, out_elems)?;
            r.reference_scratch = r.reference.saturating_add(lse.saturating_mul(8 + 48));
        }
        _ => {}
    }
    Ok(r)
}

/// A random problem of an op with its CPU reference: the inputs, and what the output must be.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::{backend::Interp, check::{Op, Problem}};
/// let p = Problem::new(Op::named("add_row").unwrap(), &[5, 9], ScalarType::F16, 1).unwrap();
/// assert_eq!(p.inputs[1].shape(), &[9]); // the row vector
/// let xs = p.upload(&Interp).unwrap();
/// let y = p.call(&Interp, &xs).unwrap();
/// assert!(p.compare(&y).passed);
/// ```
#[derive(Debug, Clone)]
pub struct Problem {
    /// The op.
    pub op: Op,
    /// The problem shape (gemm: `[M, N, K]`).
    pub shape: Vec<i64>,
    /// Element type of the inputs.
    pub dtype: ScalarType,
    /// Random host inputs (values in `[-2, 2)`, never 0), contiguous.
    pub inputs: Vec<HostTensor>,
    /// The CPU reference of the output, row-major: in the output's type where exact there,
    /// else `f64`.
    pub want: HostBuffer,
    /// Tolerance of the comparison (0 = exact), the kernel module's.
    pub tolerance: f64,
}

fn tensor(buf: HostBuffer, shape: &[i64]) -> Result<HostTensor> {
    let l = TensorLayout::contiguous(buf.elem(), shape.to_vec())?;
    Ok(HostTensor::new(buf, l)?)
}

impl Problem {
    /// Random inputs from `seed` and the reference, after checking the shape, the dtype and
    /// that the run's host memory at its peak ([`run_bytes`]: inputs, outputs, the
    /// interpreter's copies and race map, the reference and its scratch) fits the host-memory
    /// limit ([`host::check_memory`]): refused with the figures before anything is allocated.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::check::{Op, Problem};
    /// let p = Problem::new(Op::Transpose, &[2, 3], ScalarType::F32, 1).unwrap();
    /// assert_eq!(p.output_shape(), vec![3, 2]);
    /// assert!(Problem::new(Op::Transpose, &[3], ScalarType::F32, 1).is_err());
    /// ```
    pub fn new(op: Op, shape: &[i64], ty: ScalarType, seed: u64) -> Result<Problem> {
        let name = match op {
            Op::Morton { inverse: true, .. } => "unmorton",
            op => op.name(),
        };
        let need = run_bytes(op, shape, ty)?;
        host::check_memory(&host::context(name, shape, ty), &need.peak())?;
        let (inputs, want, tolerance) = match op {
            Op::Copy | Op::Transpose | Op::Permute(_) => {
                let kernel = match op {
                    Op::Copy => "copy",
                    Op::Transpose => "transpose",
                    _ => "permute",
                };
                let n = host::elements(kernel, shape)? as u64;
                let x = host::random(ty, n as usize, seed)?;
                let want = match op {
                    Op::Copy => x.clone(),
                    Op::Transpose => crate::transpose::permute_reference(
                        &x,
                        &[1, shape[0], shape[1]],
                        &[0, 2, 1],
                    )?,
                    Op::Permute(perm) => crate::transpose::permute_reference(&x, shape, &perm)?,
                    _ => unreachable!("matched above"),
                };
                (vec![tensor(x, shape)?], want, 0.0)
            }
            Op::Morton { tile, inverse } => {
                let (h, w) = (shape[0], shape[1]);
                let geo = TiledMorton::new(h, w, tile)?;
                let (hw, storage) = (h as u64 * w as u64, geo.storage_len() as u64);
                // the reference moves element bits through TiledMorton::offset (padding 0.0)
                if inverse {
                    let s = host::random(ty, storage as usize, seed)?;
                    let want = host::fill_with(ty, hw as usize, |i| {
                        let i = i as i64;
                        s.bits(geo.offset(i / w, i % w) as usize)
                    })?;
                    (vec![tensor(s, &[storage as i64])?], want, 0.0)
                } else {
                    let img = host::random(ty, hw as usize, seed)?;
                    let mut want = HostBuffer::try_zeroed(ty, storage as usize)?;
                    for r in 0..h {
                        for c in 0..w {
                            want.set_bits(
                                geo.offset(r, c) as usize,
                                img.bits((r * w + c) as usize),
                            );
                        }
                    }
                    (vec![tensor(img, shape)?], want, 0.0)
                }
            }
            Op::Reduce(r) => {
                let (m, n) = (shape[0], shape[1]);
                let len = (m * n) as u64;
                let x = host::random(ty, len as usize, seed)?;
                let want = crate::reduce::reference(r, &x, m as usize, n as usize, ty)?;
                // exact for max; sums as GEMM's K-long dot products (f32 accumulation in
                // another order: max(1e-4, 1e-6·n) · max(|sum|, 1) — a sum of 254796 f32
                // values that cancel to 0.19 was 1.8e-4 off on an H100, within f32 rounding of
                // terms summing to |x|·n ≈ 2.5e5); softmax 1e-5 for f32, one bf16 ulp (2⁻⁸)
                let tol = match r {
                    Reduction::Softmax if ty == ScalarType::F32 => 1e-5,
                    Reduction::Softmax => 1.0 / 256.0,
                    Reduction::Max => 0.0,
                    Reduction::Sum => crate::gemm::gemm_tolerance(n),
                };
                (vec![tensor(x, shape)?], want, tol)
            }
            Op::Elementwise(bop, bc) => {
                let (m, n) = (shape[0], shape[1]);
                let len = (m * n) as u64;
                let b_len = bc.len(m, n) as u64;
                let a = host::random(ty, len as usize, seed)?;
                let b = host::random(ty, b_len as usize, seed.wrapping_add(1))?;
                let bs = bc.strides(m, n);
                // math in f32 of values exact in f32: the f64 result rounded once to the type
                let want = host::fill_with(ty, len as usize, |i| {
                    let i = i as i64;
                    let bi = ((i / n) * bs[0] + (i % n) * bs[1]) as usize;
                    let (x, y) = (host::value(&a, i as usize), host::value(&b, bi));
                    host::round_bits(ty, bop.apply(x, y))
                })?;
                let shapes = input_shapes(op, shape, ty)?;
                (vec![tensor(a, &shapes[0].1)?, tensor(b, &shapes[1].1)?], want, 0.0)
            }
            Op::Gemm => {
                let (m, n, k) = (shape[0], shape[1], shape[2]);
                let (mk, kn) = ((m * k) as u64, (k * n) as u64);
                let a = host::random(ty, mk as usize, seed)?;
                let b = host::random(ty, kn as usize, seed.wrapping_add(1))?;
                let want = HostBuffer::from_f64(&crate::gemm::reference(
                    &a, &b, m as usize, n as usize, k as usize,
                )?);
                let tol = crate::gemm::gemm_tolerance(k);
                (vec![tensor(a, &[m, k])?, tensor(b, &[k, n])?], want, tol)
            }
            Op::Attention { causal } => {
                let shapes = input_shapes(op, shape, ty)?;
                let n = |s: &[i64]| s.iter().product::<i64>() as u64;
                let (nq, nkv) = (n(&shapes[0].1), n(&shapes[1].1));
                let q = host::random(ty, nq as usize, seed)?;
                let k = host::random(ty, nkv as usize, seed.wrapping_add(1))?;
                let v = host::random(ty, nkv as usize, seed.wrapping_add(2))?;
                let dims = crate::attention_sm90::AttnDims::from_shape(shape)?;
                let want = crate::attention_sm90::reference(&q, &k, &v, dims, causal)?;
                let tol = crate::attention_sm90::tolerance(ty);
                let inputs = vec![
                    tensor(q, &shapes[0].1)?,
                    tensor(k, &shapes[1].1)?,
                    tensor(v, &shapes[2].1)?,
                ];
                (inputs, HostBuffer::from_f64(&want.0), tol)
            }
        };
        Ok(Problem { op, shape: shape.to_vec(), dtype: ty, inputs, want, tolerance })
    }

    /// The output's shape.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::check::{Op, Problem};
    /// let p = Problem::new(Op::Permute([2, 0, 1]), &[2, 3, 4], ScalarType::F32, 1).unwrap();
    /// assert_eq!(p.output_shape(), vec![4, 2, 3]);
    /// ```
    pub fn output_shape(&self) -> Vec<i64> {
        output_of(self.op, &self.shape, self.dtype).1
    }

    /// The output's element type.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::{check::{Op, Problem}, reduce::Reduction};
    /// let p = Problem::new(Op::Reduce(Reduction::Sum), &[2, 3], ScalarType::BF16, 1).unwrap();
    /// assert_eq!(p.output_dtype(), ScalarType::F32);
    /// ```
    pub fn output_dtype(&self) -> ScalarType {
        output_of(self.op, &self.shape, self.dtype).0
    }

    /// Bytes of the inputs and the output: each read or written once, the fewest bytes the
    /// op must move (for memory-bound ops' GB/s).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::check::{Op, Problem};
    /// assert_eq!(Problem::new(Op::Copy, &[4, 8], ScalarType::F32, 1).unwrap().bytes(), 2 * 4 * 32);
    /// ```
    pub fn bytes(&self) -> u64 {
        let ins: u64 = self.inputs.iter().map(|t| t.layout().size_bytes() as u64).sum();
        let n: i64 = self.output_shape().iter().product();
        ins + n as u64 * self.output_dtype().size_bytes() as u64
    }

    /// The inputs moved to backend `b`.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::{backend::Interp, check::{Op, Problem}};
    /// let p = Problem::new(Op::Gemm, &[64, 64, 32], ScalarType::F16, 1).unwrap();
    /// assert_eq!(p.upload(&Interp).unwrap().len(), 2);
    /// ```
    pub fn upload<B: Backend>(&self, b: &B) -> Result<Vec<B::Tensor>> {
        self.inputs.iter().map(|t| b.from_host(t)).collect()
    }

    /// The op through the API on `b`, output allocated by the API (`api::copy`,
    /// `api::transpose`, …).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::{backend::Interp, check::{Op, Problem}};
    /// let p = Problem::new(Op::Copy, &[3, 5], ScalarType::BF16, 2).unwrap();
    /// let y = p.call(&Interp, &p.upload(&Interp).unwrap()).unwrap();
    /// assert_eq!(y.shape(), &[3, 5]);
    /// ```
    pub fn call<B: Backend>(&self, b: &B, xs: &[B::Tensor]) -> Result<B::Tensor> {
        call(b, self.op, &self.shape, xs)
    }

    /// The op through the API on `b` into a caller's output (`api::copy_into`, …): what
    /// timings repeat.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::{backend::{Backend, Interp}, check::{Op, Problem}};
    /// let p = Problem::new(Op::Transpose, &[3, 5], ScalarType::F32, 2).unwrap();
    /// let mut y = Interp.empty(p.output_dtype(), &p.output_shape()).unwrap();
    /// p.call_into(&Interp, &p.upload(&Interp).unwrap(), &mut y).unwrap();
    /// assert!(p.compare(&y).passed);
    /// ```
    pub fn call_into<B: Backend>(&self, b: &B, xs: &[B::Tensor], y: &mut B::Tensor) -> Result<()> {
        call_into(b, self.op, xs, y)
    }

    /// `got` (a host tensor of the output's shape) against the reference.
    ///
    /// ```
    /// use tilekit_ir::{tensor::HostTensor, ScalarType};
    /// use tilekit_ops::check::{Op, Problem};
    /// let p = Problem::new(Op::Copy, &[1, 2], ScalarType::F32, 1).unwrap();
    /// assert!(p.compare(&p.inputs[0]).passed);
    /// assert!(!p.compare(&HostTensor::from_slice(&[0.5f32, 0.5], &[1, 2]).unwrap()).passed);
    /// ```
    pub fn compare(&self, got: &HostTensor) -> Comparison {
        if got.layout().is_contiguous() && got.layout().offset() == 0 {
            return host::compare(&*got.buffer(), &self.want, self.tolerance);
        }
        match got.to_buffer() {
            Ok(buf) => host::compare(&buf, &self.want, self.tolerance),
            Err(_) => Comparison {
                max_abs: f64::NAN,
                max_rel: f64::NAN,
                mismatches: self.want.len().max(1),
                tolerance: self.tolerance,
                passed: false,
            },
        }
    }

    /// Runs the op on `b` once (inputs uploaded, output allocated by the API, brought back)
    /// and returns the outcome with the reference, and the inputs on `b` for more calls.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::{backend::Interp, check::{Op, Problem}};
    /// let p = Problem::new(Op::named("softmax").unwrap(), &[2, 300], ScalarType::BF16, 4).unwrap();
    /// let (o, _) = p.run(&Interp).unwrap();
    /// assert!(o.compare().passed);
    /// ```
    pub fn run<B: Backend>(&self, b: &B) -> Result<(Outcome, Vec<B::Tensor>)> {
        let xs = self.upload(b)?;
        let t = Instant::now();
        let y = self.call(b, &xs)?;
        b.synchronize()?;
        let elapsed = t.elapsed();
        let got = b.to_host(&y)?;
        // the backend's output goes before the outcome copies the reference (the run's
        // check phase in host::RunBytes holds one of the two, not both)
        drop(y);
        let got = if got.layout().is_contiguous() && got.layout().offset() == 0 {
            let buf = got.buffer();
            drop(got);
            Arc::unwrap_or_clone(buf)
        } else {
            got.to_buffer()?
        };
        let instructions = plan(self.op, &self.shape, self.dtype)?.0.kernel().instruction_count();
        let o = Outcome {
            instructions,
            got,
            want: self.want.clone(),
            tolerance: self.tolerance,
            elapsed,
        };
        Ok((o, xs))
    }
}

fn output_of(op: Op, shape: &[i64], ty: ScalarType) -> (ScalarType, Vec<i64>) {
    match op {
        Op::Copy | Op::Elementwise(..) | Op::Reduce(Reduction::Softmax) => (ty, shape.to_vec()),
        Op::Transpose => (ty, vec![shape[1], shape[0]]),
        Op::Permute(p) => (ty, p.iter().map(|&d| shape[d]).collect()),
        Op::Morton { tile, inverse: false } => {
            (ty, vec![api::morton_len(shape[0], shape[1], tile).unwrap_or(0)])
        }
        Op::Morton { inverse: true, .. } => (ty, shape.to_vec()),
        Op::Reduce(_) => (ScalarType::F32, vec![shape[0]]),
        Op::Gemm => (ScalarType::F32, vec![shape[0], shape[1]]),
        Op::Attention { .. } => (ty, vec![shape[0], shape[1], shape[3], shape[5]]),
    }
}

fn operands<T>(op: Op, xs: &[T], n: usize) -> Result<&[T]> {
    if xs.len() != n {
        return Err(OpsError::invalid(
            op.name(),
            "inputs",
            xs.len(),
            format!("the op takes {n} input tensors"),
        ));
    }
    Ok(xs)
}

/// `op` on `xs` through the API, allocating the output (`shape` is the problem's: unmorton
/// takes the image's `H × W` from it).
fn call<B: Backend>(b: &B, op: Op, shape: &[i64], xs: &[B::Tensor]) -> Result<B::Tensor> {
    match op {
        Op::Copy => api::copy(b, &operands(op, xs, 1)?[0]),
        Op::Transpose => api::transpose(b, &operands(op, xs, 1)?[0]),
        Op::Permute(p) => api::permute(b, &operands(op, xs, 1)?[0], &p),
        Op::Morton { tile, inverse: false } => api::morton(b, &operands(op, xs, 1)?[0], tile),
        Op::Morton { tile, inverse: true } => {
            api::unmorton(b, &operands(op, xs, 1)?[0], shape[0], shape[1], tile)
        }
        Op::Reduce(Reduction::Sum) => api::row_sum(b, &operands(op, xs, 1)?[0]),
        Op::Reduce(Reduction::Max) => api::row_max(b, &operands(op, xs, 1)?[0]),
        Op::Reduce(Reduction::Softmax) => api::softmax(b, &operands(op, xs, 1)?[0]),
        Op::Elementwise(bop, _) => {
            let xs = operands(op, xs, 2)?;
            match bop {
                Binary::Add => api::add(b, &xs[0], &xs[1]),
                Binary::Mul => api::mul(b, &xs[0], &xs[1]),
                Binary::Max => api::maximum(b, &xs[0], &xs[1]),
            }
        }
        Op::Gemm => {
            let xs = operands(op, xs, 2)?;
            api::gemm(b, &xs[0], &xs[1])
        }
        Op::Attention { causal } => {
            let xs = operands(op, xs, 3)?;
            api::attention(b, &xs[0], &xs[1], &xs[2], causal, None).map(|(o, _lse)| o)
        }
    }
}

/// `op` on `xs` through the API into `y`.
fn call_into<B: Backend>(b: &B, op: Op, xs: &[B::Tensor], y: &mut B::Tensor) -> Result<()> {
    match op {
        Op::Copy => api::copy_into(b, &operands(op, xs, 1)?[0], y),
        Op::Transpose => api::transpose_into(b, &operands(op, xs, 1)?[0], y),
        Op::Permute(p) => api::permute_into(b, &operands(op, xs, 1)?[0], &p, y),
        Op::Morton { tile, inverse: false } => {
            api::morton_into(b, &operands(op, xs, 1)?[0], tile, y)
        }
        Op::Morton { tile, inverse: true } => {
            api::unmorton_into(b, &operands(op, xs, 1)?[0], tile, y)
        }
        Op::Reduce(Reduction::Sum) => api::row_sum_into(b, &operands(op, xs, 1)?[0], y),
        Op::Reduce(Reduction::Max) => api::row_max_into(b, &operands(op, xs, 1)?[0], y),
        Op::Reduce(Reduction::Softmax) => api::softmax_into(b, &operands(op, xs, 1)?[0], y),
        Op::Elementwise(bop, _) => {
            let xs = operands(op, xs, 2)?;
            api::binary_op_into(b, bop, &xs[0], &xs[1], y)
        }
        Op::Gemm => {
            let xs = operands(op, xs, 2)?;
            api::gemm_into(b, &xs[0], &xs[1], y)
        }
        Op::Attention { causal } => {
            let xs = operands(op, xs, 3)?;
            let s = TensorIn::<B>::layout(&xs[0]).shape().to_vec();
            let mut lse = b.empty(ScalarType::F32, &[s[0], s[2], s[1]])?;
            api::attention_into(b, &xs[0], &xs[1], &xs[2], causal, None, y, &mut lse)
        }
    }
}

/// Runs `op` on a random problem from `seed` on backend `b` through the API and returns the
/// outcome with its CPU reference ([`Outcome::compare`] checks it).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::{backend::Interp, check::{check, Op}};
/// let o = check(&Interp, Op::Morton { tile: 4, inverse: true }, &[9, 17], ScalarType::BF16, 3).unwrap();
/// assert!(o.compare().passed);
/// ```
pub fn check<B: Backend>(
    b: &B,
    op: Op,
    shape: &[i64],
    dtype: ScalarType,
    seed: u64,
) -> Result<Outcome> {
    Ok(Problem::new(op, shape, dtype, seed)?.run(b)?.0)
}

/// [`check`] of a `tilekit run` kernel name (see [`crate::run::KERNELS`]).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::{backend::Interp, check::check_named};
/// assert!(check_named(&Interp, "row_sum", &[3, 50], ScalarType::F32, 2).unwrap().compare().passed);
/// ```
pub fn check_named<B: Backend>(
    b: &B,
    kernel: &str,
    shape: &[i64],
    dtype: ScalarType,
    seed: u64,
) -> Result<Outcome> {
    check(b, Op::named(kernel)?, shape, dtype, seed)
}

/// The kernel and grid `op` launches on contiguous inputs of `shape`: the API call on the
/// [`Record`] backend (layouts only), so nothing is allocated however large the shape and
/// the answer is the launch's by construction. `tilekit ptx` prints it.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::check::{plan, Op};
/// let (k, grid) = plan(Op::Transpose, &[16384, 16384], ScalarType::F32).unwrap();
/// assert_eq!((k.kernel().name.as_str(), grid), ("transpose", [256, 256, 1]));
/// let (k, grid) = plan(Op::named("softmax").unwrap(), &[4, 16385], ScalarType::F32).unwrap();
/// // the row does not fit one block's registers: streamed by clusters of 8 blocks
/// assert_eq!((k.kernel().name.as_str(), grid), ("softmax_stream_cluster", [32, 1, 1]));
/// ```
pub fn plan(op: Op, shape: &[i64], dtype: ScalarType) -> Result<(CompiledKernel, [u32; 3])> {
    plan_tuned(op, shape, dtype, crate::tuning::Tuning::default())
}

/// [`plan`] on a device with `tuning` (what `tilekit bench` reports for the kernel it timed).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::{check::{plan_tuned, Op}, reduce::CoopTuning, tuning::Tuning};
/// let t = Tuning { softmax_coop: Some(CoopTuning::in_registers(256, 32)), ..Tuning::default() };
/// let (k, grid) = plan_tuned(Op::named("softmax").unwrap(), &[4, 65536], ScalarType::F32, t).unwrap();
/// assert_eq!((k.kernel().name.as_str(), grid), ("softmax_coop", [32, 1, 1]));
/// ```
pub fn plan_tuned(
    op: Op,
    shape: &[i64],
    dtype: ScalarType,
    tuning: crate::tuning::Tuning,
) -> Result<(CompiledKernel, [u32; 3])> {
    plan_device(op, shape, dtype, tuning, 4)
}

/// [`plan_tuned`] on a device of `multiprocessors` SMs (persistent grids and the cooperative
/// softmax's residency bound depend on it; [`plan_tuned`] assumes the interpreter's 4).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::check::{plan_device, plan_tuned, Op};
/// use tilekit_ops::tuning::Tuning;
/// let (t, op) = (Tuning::for_device("NVIDIA H100 80GB HBM3"), Op::named("softmax").unwrap());
/// // f32 rows of 262144 in 64 KiB slices: 16 blocks a row, more than 4 SMs hold at once
/// assert!(plan_tuned(op, &[2, 262144], ScalarType::F32, t).is_err());
/// let (k, grid) = plan_device(op, &[2, 262144], ScalarType::F32, t, 132).unwrap();
/// assert_eq!((k.kernel().name.as_str(), grid), ("softmax_coop_smem", [32, 1, 1]));
/// ```
pub fn plan_device(
    op: Op,
    shape: &[i64],
    dtype: ScalarType,
    tuning: crate::tuning::Tuning,
    multiprocessors: u32,
) -> Result<(CompiledKernel, [u32; 3])> {
    validate(op, shape, dtype)?;
    let rec = Record::with_tuning(tuning).on_multiprocessors(multiprocessors);
    let xs = input_shapes(op, shape, dtype)?
        .into_iter()
        .map(|(t, s)| LayoutTensor::contiguous(t, &s))
        .collect::<Result<Vec<_>>>()?;
    call(&rec, op, shape, &xs)?;
    // an op that stages operands (a GEMM whose shape TMA cannot read in place: copies into
    // padded buffers, the GEMM, a copy back) launches several kernels: its main one is the
    // largest
    rec.take()
        .into_iter()
        .max_by_key(|l| l.kernel.kernel().instruction_count())
        .map(|l| (l.kernel, l.grid))
        .ok_or_else(|| OpsError::invalid(op.name(), "launches", 0, "at least one kernel"))
}

/// [`plan`] of a `tilekit run` kernel name, as an owned IR kernel.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let (k, grid) = tilekit_ops::check::plan_named("row_sum", &[4, 100], ScalarType::F32).unwrap();
/// assert_eq!((k.name.as_str(), grid), ("row_sum_rows", [1, 1, 1])); // short rows: a warp each
/// let (k, grid) = tilekit_ops::check::plan_named("row_sum", &[4, 5000], ScalarType::F32).unwrap();
/// assert_eq!((k.name.as_str(), grid), ("row_sum", [4, 1, 1])); // a block a row
/// ```
pub fn plan_named(kernel: &str, shape: &[i64], dtype: ScalarType) -> Result<(Kernel, [u32; 3])> {
    let (k, grid) = plan(Op::named(kernel)?, shape, dtype)?;
    Ok((k.kernel().clone(), grid))
}
