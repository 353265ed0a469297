//! # 03 — static distributed tensors: the GEMM accumulate pattern on the host model
//!
//! The design documents (docs-ck-tile 003) accumulate a 64×64 C tile over 16×16 threads, each
//! thread holding a 4×4 block of C in registers, with A and B loaded through tile windows. This
//! example runs that pattern for a whole 128×128 C (2×2 thread blocks of 256 threads) with
//! K = 48 in steps of 16, on tilekit's host model:
//!
//! ```text
//!   C tile 64×64:  X0 = rows = H(16 ty, 4 i)   X1 = cols = H(16 tx, 4 j)    P = (ty, tx), Y = (i, j)
//!   A tile 64×16:  X0 = rows = H(16 ty, 4 i)   X1 = k = H(16 kk)            P = (ty, R = tx), Y = (i, kk)
//!   B tile 16×64:  X0 = k = H(16 kk)           X1 = cols = H(16 tx, 4 j)    P = (R = ty, tx), Y = (kk, j)
//!
//!   thread (ty, tx):  c[i][j] += Σ_kk a[i][kk] · b[kk][j]        (registers only, no communication)
//! ```
//!
//! A is replicated over `tx` and B over `ty` (the R dims), so every thread holds exactly the rows
//! of A and the columns of B its C block needs. The windows move along K; the C window stores
//! the accumulators; the result is checked against a plain matmul.
//!
//! Run: `cargo run --example 03_static_distributed_tensor`

use tilekit::tile::encoding::EncodingSpec;
use tilekit::tile::view::make_naive_tensor_view;
use tilekit::tile::{StaticDistributedTensor, TileDistribution, TileError, TileWindow};

const TILE: i64 = 64;
const KT: i64 = 16;
const M: i64 = 128;
const N: i64 = 128;
const K: i64 = 48;

fn dist(spec: EncodingSpec) -> Result<TileDistribution, TileError> {
    TileDistribution::from_spec(spec)
}

fn random(n: i64, seed: &mut u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((*seed >> 40) % 2001) as f32 / 1000.0 - 1.0 + 0.0005 // never exactly 0
        })
        .collect()
}

fn main() -> Result<(), TileError> {
    let c_dist = dist(EncodingSpec {
        rs_lengths: vec![],
        hs_lengthss: vec![vec![16, 4], vec![16, 4]],
        ps_to_rhss_major: vec![vec![1], vec![2]],
        ps_to_rhss_minor: vec![vec![0], vec![0]],
        ys_to_rhs_major: vec![1, 2],
        ys_to_rhs_minor: vec![1, 1],
    })?;
    let a_dist = dist(EncodingSpec {
        rs_lengths: vec![16],
        hs_lengthss: vec![vec![16, 4], vec![KT]],
        ps_to_rhss_major: vec![vec![1], vec![0]],
        ps_to_rhss_minor: vec![vec![0], vec![0]],
        ys_to_rhs_major: vec![1, 2],
        ys_to_rhs_minor: vec![1, 0],
    })?;
    let b_dist = dist(EncodingSpec {
        rs_lengths: vec![16],
        hs_lengthss: vec![vec![KT], vec![16, 4]],
        ps_to_rhss_major: vec![vec![0], vec![2]],
        ps_to_rhss_minor: vec![vec![0], vec![0]],
        ys_to_rhs_major: vec![1, 2],
        ys_to_rhs_minor: vec![0, 1],
    })?;

    let mut seed = 0x5EED;
    let a = random(M * K, &mut seed); // row-major M×K
    let b = random(K * N, &mut seed); // row-major K×N
    let mut c = vec![f32::NAN; (M * N) as usize]; // poisoned: every element must be stored

    let mut traits_line = String::new();
    for bm in 0..M / TILE {
        for bn in 0..N / TILE {
            let a_view = make_naive_tensor_view(&a[..], &[M, K], &[K, 1])?;
            let b_view = make_naive_tensor_view(&b[..], &[K, N], &[N, 1])?;
            let mut a_win = TileWindow::new(a_view, &[TILE, KT], &[bm * TILE, 0], &a_dist)?;
            let mut b_win = TileWindow::new(b_view, &[KT, TILE], &[0, bn * TILE], &b_dist)?;
            let mut acc = StaticDistributedTensor::new(&c_dist, 0f32);
            for _ in 0..K / KT {
                let a_tile = a_win.load()?;
                let b_tile = b_win.load()?;
                for t in 0..acc.num_threads() {
                    let p = acc.thread_p(t)?;
                    for i in 0..4 {
                        for j in 0..4 {
                            let mut sum = 0f32;
                            for kk in 0..KT {
                                sum += a_tile.get(&p, &[i, kk])? * b_tile.get(&p, &[kk, j])?;
                            }
                            let old = acc.get(&p, &[i, j])?;
                            acc.set(&p, &[i, j], old + sum)?;
                        }
                    }
                }
                a_win.move_window(&[0, KT])?;
                b_win.move_window(&[KT, 0])?;
            }
            // the layout contract the loop relies on: a thread's A rows and B columns are its C's
            for t in 0..acc.num_threads() {
                let p = acc.thread_p(t)?;
                for (i, j) in [(0, 0), (3, 2)] {
                    let xc = acc.x_of(&p, &[i, j])?;
                    assert_eq!(a_win.distribution().calculate_x(&p, &[i, 5]).unwrap()[0], xc[0]);
                    assert_eq!(b_win.distribution().calculate_x(&p, &[5, j]).unwrap()[1], xc[1]);
                }
            }
            let c_view = make_naive_tensor_view(&mut c[..], &[M, N], &[N, 1])?;
            let mut c_win =
                TileWindow::new(c_view, &[TILE, TILE], &[bm * TILE, bn * TILE], &c_dist)?;
            c_win.store(&acc)?;
            if traits_line.is_empty() {
                let w = |t: &tilekit::tile::LoadStoreTraits| {
                    format!("{} × {}-wide", t.num_access(), t.scalar_per_vector())
                };
                traits_line = format!(
                    "accesses per thread: A {}, B {}, C {}",
                    w(a_win.traits()),
                    w(b_win.traits()),
                    w(c_win.traits())
                );
            }
        }
    }

    let mut max_err = 0f32;
    for i in 0..M {
        for j in 0..N {
            let want: f32 = (0..K).map(|k| a[(i * K + k) as usize] * b[(k * N + j) as usize]).sum();
            max_err = max_err.max((c[(i * N + j) as usize] - want).abs());
        }
    }
    println!(
        "GEMM {M}×{N}×{K} on the host model: {} blocks of {} threads",
        (M / TILE) * (N / TILE),
        c_dist.num_threads()
    );
    println!(
        "C tile {TILE}×{TILE}: {} values per thread (4×4), y lengths {:?}",
        c_dist.thread_buffer_size(),
        c_dist.y_lengths()
    );
    println!("A tile {TILE}×{KT} replicated over tx, B tile {KT}×{TILE} replicated over ty; K steps of {KT}");
    println!("{traits_line}");
    println!("max |C − plain matmul| = {max_err:.2e}");
    assert!(max_err < 1e-4, "the distributed GEMM disagrees with the plain matmul");
    println!("ok: the distributed accumulation equals the plain matmul");
    Ok(())
}
