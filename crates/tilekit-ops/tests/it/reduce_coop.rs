//! The cooperative softmax (`reduce::coop`): the kernel on the interpreter (which runs the
//! whole grid as one unit, so blocks can wait on each other) against the f64 reference, the
//! op's choice of it through the tuning, its typed errors, and a missing block caught as a
//! deadlock instead of a hang.

use crate::common;

use common::{api_softmax_checked, assert_close_relative, random_rows};
use tilekit_ir::interp::{HostBuffer, InterpError};
use tilekit_ir::ScalarType;
use tilekit_ops::api;
use tilekit_ops::backend::{LayoutTensor, Record};
use tilekit_ops::host;
use tilekit_ops::reduce::{build_softmax_coop, reference, CoopTuning, Reduction};
use tilekit_ops::tuning::Tuning;
use tilekit_ops::OpsError;

/// Runs the coop kernel directly: `m` rows of `n`, `k` blocks of `threads` per row, `chunks`
/// per thread, on `blocks` blocks (normally `m · k`); output and stats poisoned with NaN.
fn run_coop(
    x: &HostBuffer,
    (m, n): (usize, usize),
    ty: ScalarType,
    (threads, k, chunks): (u32, u32, i64),
    blocks: u32,
) -> Result<HostBuffer, InterpError> {
    let v = host::vector_for(ty, &[n as i64]);
    let kern = build_softmax_coop(ty, threads, v, k, chunks).unwrap();
    let (y, ws) = common::run_exchange(&kern, x, (m, n), ty, (k, blocks))?;
    // every block took one ticket and counted itself into its row
    assert_eq!(ws[0], blocks, "tickets");
    assert!(ws[1..].iter().all(|&c| c == k), "counters {ws:?}");
    Ok(y)
}

#[test]
fn coop_softmax_matches_the_f64_reference() {
    // (rows, n) × (threads, k, chunks): an exact split, a tail inside the last block, a last
    // block with no columns at all (all padding), one block per row
    type Case = ((usize, usize), (u32, u32, i64));
    let cases: [Case; 5] = [
        ((3, 4096), (128, 4, 2)),
        ((3, 4000), (128, 4, 2)),
        ((2, 2500), (64, 4, 3)),
        ((3, 1500), (32, 4, 4)),
        ((2, 1000), (128, 1, 2)),
    ];
    for ty in [ScalarType::F32, ScalarType::BF16] {
        let v = 16 / ty.size_bytes() as i64;
        for (i, ((m, n), (threads, k, chunks))) in cases.into_iter().enumerate() {
            // bf16: the same elements per thread (chunks of 8 instead of 4)
            let chunks = if v == 8 { (chunks as u64).div_ceil(2) as i64 } else { chunks };
            let part = threads as usize * v as usize * chunks as usize;
            assert!(k as usize * part >= n, "case {i} covers its rows");
            let x = host::from_f64(ty, &random_rows(m, n, part, i as u64 + 1));
            let got = run_coop(&x, (m, n), ty, (threads, k, chunks), (m * k as usize) as u32)
                .unwrap_or_else(|e| panic!("{ty} case {i}: {e}"));
            let want = reference(Reduction::Softmax, &x, m, n, ty).unwrap();
            let what = format!("coop {ty} {m}x{n} threads {threads} k {k} chunks {chunks}");
            assert_close_relative(&got, &want, n, ty, &what);
        }
    }
}

#[test]
fn a_row_missing_a_block_is_a_named_deadlock_not_a_hang() {
    // 2 rows × 4 blocks, launched on 7: the last row's blocks wait for a fourth that never comes
    let (m, n) = (2usize, 2048usize);
    let x = host::from_f64(ScalarType::F32, &random_rows(m, n, 512, 9));
    let e = run_coop(&x, (m, n), ScalarType::F32, (128, 4, 1), 7).unwrap_err();
    match &e {
        InterpError::WarpDeadlock { warps, .. } => {
            // three blocks of the incomplete row wait, every warp of them (4 warps each):
            // warp 0 (thread 0) polls the counter with a backoff, warps 1–3 wait at the barrier
            let mut blocks: Vec<u32> = warps.iter().map(|w| w.block[0]).collect();
            blocks.sort_unstable();
            blocks.dedup();
            assert_eq!(blocks.len(), 3, "{e}");
            assert_eq!(warps.len(), 12, "{e}");
            for w in warps {
                if w.warp == 0 {
                    assert!(w.waits.contains("global counter"), "{e}");
                    assert!(w.inst.contains("nanosleep 64"), "{e}");
                } else {
                    assert!(w.inst.contains("bar.sync"), "{e}");
                }
            }
        }
        _ => panic!("expected a warp deadlock, got {e}"),
    }
}

#[test]
fn api_softmax_takes_the_coop_kernel_when_tuned_and_matches() {
    // rows longer than the register kernel holds (f32: 256 threads × 64 = 16384; bf16: 512 ×
    // 64 = 32768): 128 threads × 64 elements a block, so 3 blocks (f32) and 5 blocks (bf16)
    let coop = CoopTuning::in_registers(128, 64);
    let t = Tuning { softmax_coop: Some(coop), ..Tuning::default() };
    for (ty, n, k) in [(ScalarType::F32, 20000i64, 3u32), (ScalarType::BF16, 40000, 5)] {
        let m = 2i64;
        assert_eq!(coop.plan(ty, n).unwrap().0, k);
        // the plan: the coop kernel on m · k blocks; the result over a poisoned output
        let part = (n as usize).div_ceil(k as usize);
        let l = api_softmax_checked(t, ty, (m, n), (part, 3), &format!("api coop {ty}"));
        assert_eq!(
            (l.kernel.kernel().name.as_str(), l.grid),
            ("softmax_coop", [m as u32 * k, 1, 1])
        );
        assert_eq!(l.kernel.kernel().block_dim, [128, 1, 1]);
    }
    // rows the register kernel holds keep it, coop tuning or not
    let rec = Record::with_tuning(t);
    let lx = LayoutTensor::contiguous(ScalarType::F32, &[4, 16384]).unwrap();
    api::softmax_into(&rec, &lx, &mut lx.clone()).unwrap();
    assert_eq!(rec.take().remove(0).kernel.kernel().name, "softmax");
}

#[test]
fn more_blocks_per_row_than_fit_at_once_is_a_typed_error() {
    // 1024 threads × 16 f32 a block: one block per SM by registers, 4 on the interpreter's 4
    // "multiprocessors"; a row of 5 blocks could wait forever on a real device
    let t = Tuning { softmax_coop: Some(CoopTuning::in_registers(1024, 16)), ..Tuning::default() };
    let n = 1024 * 16 * 5;
    let x = LayoutTensor::contiguous(ScalarType::F32, &[2, n]).unwrap();
    let e = api::softmax_into(&Record::with_tuning(t), &x, &mut x.clone()).unwrap_err();
    match &e {
        OpsError::Invalid { field, value, rule, .. } => {
            assert_eq!(
                (field.as_str(), value.as_str()),
                ("blocks per row (cooperative softmax)", "5")
            );
            assert!(rule.contains("at most 4") && rule.contains("1024 threads"), "{e}");
        }
        _ => panic!("expected a typed error, got {e}"),
    }
    // four blocks fit
    let x = LayoutTensor::contiguous(ScalarType::F32, &[2, 1024 * 16 * 4]).unwrap();
    let rec = Record::with_tuning(t);
    api::softmax_into(&rec, &x, &mut x.clone()).unwrap();
    assert_eq!(rec.take().remove(0).grid, [8, 1, 1]);
}

#[test]
fn the_builder_refuses_bad_shapes_with_typed_errors() {
    for (threads, k, chunks, what) in [
        (128u32, 0u32, 2i64, "blocks per row"),
        (128, 65, 2, "blocks per row"),
        (128, 4, 0, "chunks"),
        (128, 4, 17, "chunks"),
        (100, 4, 2, "threads per block"),
    ] {
        let e = build_softmax_coop(ScalarType::F32, threads, 4, k, chunks).unwrap_err();
        match &e {
            OpsError::Invalid { field, .. } => assert_eq!(field, what, "{e}"),
            _ => panic!("expected a typed error, got {e}"),
        }
    }
    assert!(build_softmax_coop(ScalarType::F16, 128, 8, 4, 2).is_err());
}
