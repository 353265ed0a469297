//! The ring softmax (`reduce::ring`): a resident grid walking slices through a ring of
//! shared-memory slots, the exchange `lag` slices behind. The kernel on the interpreter (the
//! whole grid as one unit; its race checker on) against the f64 reference, with grids that
//! make every block walk several slices, rows whose slices straddle two iterations, rows
//! ending inside a step and slices entirely past the row; the counters it leaves; a grid too
//! small for a row caught as a named deadlock; its typed errors.

use crate::common;

use common::{api_softmax_checked, assert_close_relative, random_rows};
use tilekit_ir::interp::{HostBuffer, InterpError};
use tilekit_ir::ScalarType;
use tilekit_ops::api;
use tilekit_ops::backend::{LayoutTensor, Record};
use tilekit_ops::host;
use tilekit_ops::reduce::ring::build_softmax_ring;
use tilekit_ops::reduce::{reference, resident_blocks, CoopTuning, Reduction};
use tilekit_ops::tuning::Tuning;
use tilekit_ops::OpsError;

/// Runs the ring kernel: `m` rows of `n`, `k` slices per row of `chunks` steps of
/// `threads × unroll` vectors, `slots` slots, `lag`, on `blocks` blocks; output and stats
/// poisoned with NaN. Checks that every row's counter ends at `k` and the ticket slot is
/// untouched.
fn run_ring(
    x: &HostBuffer,
    (m, n): (usize, usize),
    ty: ScalarType,
    (threads, k, unroll, chunks): (u32, u32, i64, i64),
    (slots, lag, blocks): (i64, i64, u32),
) -> Result<HostBuffer, InterpError> {
    let kern = build_softmax_ring(ty, threads, k, (unroll, chunks), (slots, lag)).unwrap();
    let (y, ws) = common::run_exchange(&kern, x, (m, n), ty, (k, blocks))?;
    assert_eq!(ws[0], 0, "no tickets");
    assert!(ws[1..].iter().all(|&c| c == k), "counters {ws:?}");
    Ok(y)
}

/// ((rows, n), (threads, k, unroll f32, chunks), (slots, lag, blocks))
type Case = ((usize, usize), (u32, u32, i64, i64), (i64, i64, u32));

fn check(cases: &[Case], seed: u64) {
    for ty in [ScalarType::F32, ScalarType::BF16] {
        let v = 16 / ty.size_bytes() as i64;
        for (i, &((m, n), (threads, k, unroll, chunks), ring)) in cases.iter().enumerate() {
            let unroll = if v == 8 { (unroll / 2).max(1) } else { unroll };
            let part = threads as usize * (v * unroll * chunks) as usize;
            assert!(k as usize * part >= n, "case {i} covers its rows");
            assert_eq!(n as i64 % v, 0, "case {i}: whole vectors");
            let x = host::from_f64(ty, &random_rows(m, n, part, i as u64 + seed));
            let shape = (threads, k, unroll, chunks);
            let want = reference(Reduction::Softmax, &x, m, n, ty).unwrap();
            let got = run_ring(&x, (m, n), ty, shape, ring)
                .unwrap_or_else(|e| panic!("{ty} case {i} {shape:?} {ring:?}: {e}"));
            let what = format!("ring {ty} {m}x{n} {shape:?} slots/lag/blocks {ring:?}");
            assert_close_relative(&got, &want, n, ty, &what);
        }
    }
}

#[test]
fn ring_softmax_matches_the_f64_reference() {
    let cases: [Case; 6] = [
        // 5 rows × 4 slices on 6 blocks: every block walks 3–4 slices, rows straddle two
        // iterations (6 is not a multiple of 4), more slices than slots
        ((5, 4096), (64, 4, 2, 2), (3, 1, 6)),
        // a lag of 2 on 4 blocks (= k): a block's partners are the same three blocks
        ((4, 3000), (64, 3, 2, 2), (4, 2, 4)),
        // rows ending inside a step, the last slice past the row (0 bytes copied)
        ((3, 1496), (32, 4, 2, 2), (3, 1, 5)),
        // one block per row (k = 1), the grid larger than the slices
        ((2, 1024), (64, 1, 2, 2), (3, 1, 7)),
        // many slices per block through the smallest ring for a lag of 1
        ((8, 2048), (32, 2, 2, 4), (3, 1, 3)),
        // 2 blocks for rows of 4 slices: a row spans 2 iterations, so ⌈(k − 1)/G⌉ = 2 needs
        // a lag of 2
        ((3, 2048), (32, 4, 2, 2), (4, 2, 2)),
    ];
    check(&cases, 41);
}

#[test]
fn a_grid_smaller_than_a_row_is_a_named_deadlock_not_a_hang() {
    // 4 slices a row on 1 block with a lag of 1: slice 2 of row 0 is the block's third
    // iteration, but it waits for row 0 at its second — a lag below ⌈(k − 1)/G⌉ = 3
    let (m, n) = (2usize, 1024usize);
    let x = host::from_f64(ScalarType::F32, &random_rows(m, n, 256, 3));
    let e = run_ring(&x, (m, n), ScalarType::F32, (32, 4, 2, 1), (3, 1, 1)).unwrap_err();
    assert!(matches!(e, InterpError::WarpDeadlock { .. }), "{e}");
}

#[test]
fn bad_shapes_are_typed_errors_naming_the_value() {
    let e = build_softmax_ring(ScalarType::F32, 256, 4, (2, 2), (3, 2)).unwrap_err();
    assert!(e.to_string().contains("slots") && e.to_string().contains("lag 2 + 2"), "{e}");
    let e = build_softmax_ring(ScalarType::F32, 256, 4, (2, 17), (3, 1)).unwrap_err();
    assert!(e.to_string().contains("17"), "{e}");
    let e = build_softmax_ring(ScalarType::F32, 512, 4, (8, 2), (3, 1)).unwrap_err();
    assert!(e.to_string().contains("200 KiB"), "{e}");
    let e = build_softmax_ring(ScalarType::F32, 256, 65, (2, 2), (3, 1)).unwrap_err();
    assert!(e.to_string().contains("65"), "{e}");
}

fn ring(threads: u32, smem_kib: u32, ring: u32, lag: u32) -> CoopTuning {
    CoopTuning::in_shared(threads, 8, smem_kib).with_ring(ring, lag)
}

#[test]
fn api_softmax_takes_the_ring_when_tuned_and_matches() {
    // 128 threads × 8 elements a step, 8 KiB slots, 3 of them, lag 1: the interpreter's
    // estimate holds 9 blocks per "multiprocessor", 36 in all, fewer than the 5 rows × 10
    // slices (f32 20000: slots of 2 steps of 1024; bf16 40000: 4 steps of 1024... a 4096-element
    // slot, 10 slices too)
    let c = ring(128, 8, 3, 1);
    let t = Tuning { softmax_coop: Some(c), ..Tuning::default() };
    for (ty, n, k, chunks) in
        [(ScalarType::F32, 20000i64, 10u32, 2i64), (ScalarType::BF16, 40000, 10, 4)]
    {
        let m = 5i64;
        assert_eq!(c.plan(ty, n), Some((k, chunks)), "{ty}");
        let part = (n as usize).div_ceil(k as usize);
        let l = api_softmax_checked(t, ty, (m, n), (part, 9), &format!("api ring {ty}"));
        let kern = l.kernel.kernel();
        let g = (4 * resident_blocks(kern)).min(m as u32 * k);
        assert_eq!((kern.name.as_str(), l.grid), ("softmax_ring", [g, 1, 1]), "{ty}");
        assert!(g < m as u32 * k || ty == ScalarType::BF16, "f32: blocks walk several slices");
    }
    // rows that are not whole 16-byte vectors take the shared-memory kernel with loads
    let l = api_softmax_checked(t, ScalarType::F32, (2, 20001), (2001, 3), "api ring, odd rows");
    assert_eq!(l.kernel.kernel().name, "softmax_coop_smem");
}

#[test]
fn a_lag_too_short_for_the_grid_is_a_typed_error() {
    // 64 KiB slots × 3: one block per "multiprocessor", 4 in all; f32 rows of 10 slices lie
    // up to ⌈9 / 4⌉ = 3 iterations apart, more than a lag of 1
    let c = ring(256, 64, 3, 1);
    let t = Tuning { softmax_coop: Some(c), ..Tuning::default() };
    let x = LayoutTensor::contiguous(ScalarType::F32, &[2, 10 * 16384]).unwrap();
    let e = api::softmax_into(&Record::with_tuning(t), &x, &mut x.clone()).unwrap_err();
    match &e {
        OpsError::Invalid { field, value, rule, .. } => {
            assert_eq!((field.as_str(), value.as_str()), ("lag (ring softmax)", "1"));
            assert!(rule.contains("at least 3") && rule.contains("holds 4 blocks"), "{e}");
        }
        _ => panic!("expected a typed error, got {e}"),
    }
    // on 132 multiprocessors the grid holds every slice: a lag of 1 covers it
    let rec = Record::with_tuning(t).on_multiprocessors(132);
    api::softmax_into(&rec, &x, &mut x.clone()).unwrap();
    let l = rec.take().remove(0);
    assert_eq!((l.kernel.kernel().name.as_str(), l.grid), ("softmax_ring", [20, 1, 1]));
}
