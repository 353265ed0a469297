//! A small block GEMM on `mma.sync.m16n8k16`: `C = A·B`, A row-major `M × K`, B row-major
//! `K × N` (f16 or bf16), C row-major `M × N` f32 (f32 accumulation). `M` and `N` must be
//! multiples of 64 and `K` a multiple of 32 for now (no edge tiles).
//!
//! ```text
//!   block 128 threads = 4 warps, block tile 64×64, K step 32      warp (wm, wn) = (w/2, w%2)
//!   for k0 in 0..K step 32  (stays a loop; 32 f32 accumulators carried)
//!     A[64×32] ─Window(row_major, 8-vectors)─► regs ─► shared sA      B[32×64] likewise ─► sB
//!     bar.sync
//!     for kk in 0, 16:  a[mi] = Window(sA, mma_a at (32·wm + 16·mi, kk)).load    mi = 0..2
//!                       b[ni] = Window(sB, mma_b at (kk, 32·wn + 8·ni)).load     ni = 0..4
//!                       acc[mi][ni] = mma.sync(a[mi], b[ni], acc[mi][ni])
//!     bar.sync
//!   C: Window(C, mma_c at (64·by + 32·wm + 16·mi, 64·bx + 32·wn + 8·ni)).store(acc[mi][ni])
//! ```
//!
//! The fragments are tile distributions ([`crate::dist::mma_a`] …) whose (lane, element) →
//! (row, col) maps are those of the PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating
//! point type"); the tests check them against the interpreter's emulation.
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::{backend::Interp, check::{check, Op}};
//! assert!(check(&Interp, Op::Gemm, &[64, 64, 32], ScalarType::F16, 1).unwrap().compare().passed);
//! ```

use tilekit_ir::{Axis, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::{Idx, TensorDescriptor};

use crate::dist;
use crate::error::{OpsError, Result};
use crate::host::{self, Values};
use crate::tile::{DTile, View, Window};

/// Block tile `(BM, BN, BK)`.
///
/// ```
/// assert_eq!(tilekit_ops::gemm::TILE, (64, 64, 32));
/// ```
pub const TILE: (i64, i64, i64) = (64, 64, 32);

const THREADS: u32 = 128;

/// The element types of A and B.
///
/// ```
/// assert_eq!(tilekit_ops::gemm::TYPES.len(), 2);
/// ```
pub const TYPES: [ScalarType; 2] = [ScalarType::F16, ScalarType::BF16];

/// The kernel: params `a` (M×K), `b` (K×N) of `ty` and `c` (M×N f32), runtime lengths and
/// strides (row-major, last stride 1, every length a multiple of the tile).
///
/// ```
/// use tilekit_ir::ScalarType;
/// let k = tilekit_ops::gemm::build(ScalarType::BF16).unwrap();
/// let text = k.to_string();
/// assert_eq!(text.matches("mma.sync").count(), 16);   // 2 k-steps × 2 × 4 tiles, inside the loop
/// assert!(tilekit_ops::gemm::build(ScalarType::F32).is_err());
/// ```
pub fn build(ty: ScalarType) -> Result<Kernel> {
    host::check_dtype("gemm", ty, &TYPES)?;
    let (bm, bn, bk) = TILE;
    let b = KernelBuilder::new("gemm", [THREADS, 1, 1])?;
    let a = b.tensor_param("a", ty, 2)?;
    let bt = b.tensor_param("b", ty, 2)?;
    let c = b.tensor_param("c", ScalarType::F32, 2)?;
    let (da, db) =
        (dist::row_major(bm, bk, THREADS as i64, 8)?, dist::row_major(bk, bn, THREADS as i64, 8)?);
    let (fa, fb, fc) = (dist::mma_a()?, dist::mma_b()?, dist::mma_c()?);
    let sa = View::shared(&b, "sA", ty, &TensorDescriptor::packed(vec![bm, bk], Some(8))?)?;
    let sb = View::shared(&b, "sB", ty, &TensorDescriptor::packed(vec![bk, bn], Some(8))?)?;
    let av = View::global(&a, 8)?;
    let bv = View::global(&bt, 8)?;
    let (row0, col0) = (b.block_id(Axis::Y) * Val::lit(bm), b.block_id(Axis::X) * Val::lit(bn));
    let w = b.warp_id();
    let (wm, wn) = (w.clone() / Val::lit(2) * Val::lit(32), w % Val::lit(2) * Val::lit(32));
    let zero = [Val::lit(0), Val::lit(0)];
    let init = vec![b.f32(0.0); 32];
    let acc = crate::tile::for_range(
        &b,
        &Val::lit(0),
        &a.lengths[1],
        &Val::lit(bk),
        &init,
        |b, k0, acc| {
            let ta = Window::new(b, &av, &[bm, bk], &[row0.clone(), k0.clone()], &da)?.load(b)?;
            let tb = Window::new(b, &bv, &[bk, bn], &[k0, col0.clone()], &db)?.load(b)?;
            Window::new(b, &sa, &[bm, bk], &zero, &da)?.store(b, &ta)?;
            Window::new(b, &sb, &[bk, bn], &zero, &db)?.store(b, &tb)?;
            b.barrier();
            let mut acc = acc.to_vec();
            for kk in [0, 16] {
                let frag_a = (0..2)
                    .map(|mi| {
                        let o = [wm.clone() + Val::lit(16 * mi), Val::lit(kk)];
                        Ok(Window::new(b, &sa, &[16, 16], &o, &fa)?.load(b)?)
                    })
                    .collect::<Result<Vec<_>>>()?;
                for ni in 0..4 {
                    let o = [Val::lit(kk), wn.clone() + Val::lit(8 * ni)];
                    let frag_b = Window::new(b, &sb, &[16, 8], &o, &fb)?.load(b)?;
                    for (mi, fa) in frag_a.iter().enumerate() {
                        let at = (mi * 4 + ni as usize) * 4;
                        let d = b.mma_m16n8k16(&fa.regs, &frag_b.regs, &acc[at..at + 4])?;
                        acc.splice(at..at + 4, d);
                    }
                }
            }
            b.barrier();
            Ok(acc)
        },
    )?;
    for mi in 0..2 {
        for ni in 0..4 {
            let at = (mi * 4 + ni) * 4;
            let t =
                DTile { dist: fc.clone(), elem: ScalarType::F32, regs: acc[at..at + 4].to_vec() };
            let o = [
                row0.clone() + wm.clone() + Val::lit(16 * mi as i64),
                col0.clone() + wn.clone() + Val::lit(8 * ni as i64),
            ];
            Window::new(&b, &View::global(&c, 2)?, &[16, 8], &o, &fc)?.store(&b, &t)?;
        }
    }
    Ok(b.finish()?)
}

/// `f64` reference product of row-major `a` (m×k) and `b` (k×n), read in place (slices or
/// host buffers); an error when `a` or `b` holds fewer than `m·k` or `k·n` values.
///
/// ```
/// use tilekit_ir::interp::HostBuffer;
/// assert_eq!(tilekit_ops::gemm::reference(&[1.0, 2.0], &[3.0, 4.0], 1, 1, 2).unwrap(), vec![11.0]);
/// let a = HostBuffer::from_f32(&[1.0, 2.0]);
/// assert_eq!(tilekit_ops::gemm::reference(&a, &[3.0, 4.0], 1, 1, 2).unwrap(), vec![11.0]);
/// assert!(tilekit_ops::gemm::reference(&a, &[3.0, 4.0], 2, 1, 2).is_err());
/// ```
pub fn reference<A: Values + ?Sized, B: Values + ?Sized>(
    a: &A,
    b: &B,
    m: usize,
    n: usize,
    k: usize,
) -> Result<Vec<f64>> {
    let fits =
        |rows: usize, cols: usize, have: usize| rows.checked_mul(cols).is_some_and(|x| x <= have);
    if !fits(m, k, a.count()) || !fits(k, n, b.count()) || m.checked_mul(n).is_none() {
        return Err(OpsError::invalid(
            "gemm reference",
            "m, n, k",
            format!("{m}, {n}, {k}"),
            format!("A needs m·k values (it has {}), B k·n (it has {})", a.count(), b.count()),
        ));
    }
    let mut c = Vec::new();
    c.try_reserve_exact(m * n).map_err(|e| {
        OpsError::invalid("gemm reference", "m × n", format!("{m} × {n}"), e.to_string())
    })?;
    c.resize(m * n, 0.0);
    for i in 0..m {
        for p in 0..k {
            let x = a.value(i * k + p);
            for j in 0..n {
                c[i * n + j] += x * b.value(p * n + j);
            }
        }
    }
    Ok(c)
}

/// The GEMM's check tolerance for depth `k`, against the `f64` product. The random inputs are
/// exact in f32, so the error is the accumulation's: it grows with K (tensor cores add in f32
/// with their own rounding), hence `max(1e-4, 1e-6·K) · max(|c|, 1)` — 1e-4 up to K = 100,
/// 1e-3 at K = 1000.
///
/// ```
/// assert_eq!(tilekit_ops::gemm::gemm_tolerance(64), 1e-4);
/// assert_eq!(tilekit_ops::gemm::gemm_tolerance(1024), 1.024e-3);
/// ```
pub fn gemm_tolerance(k: i64) -> f64 {
    (1e-6 * k as f64).max(1e-4)
}
