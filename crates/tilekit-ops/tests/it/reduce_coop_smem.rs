//! The cooperative softmax with slices in shared memory (`reduce::coop_smem`): the kernel on
//! the interpreter (the whole grid as one unit, so blocks wait on each other; its race checker
//! on) against the f64 reference, the op's choice of it through the tuning, the deadlock bound
//! from its shared memory, its typed errors, and a missing block caught as a deadlock.

use crate::common;

use common::{api_softmax_checked, assert_close_relative, random_rows, tensor};
use tilekit_ir::interp::{HostBuffer, InterpError};
use tilekit_ir::ScalarType;
use tilekit_ops::api;
use tilekit_ops::backend::{LayoutTensor, Record, TunedInterp};
use tilekit_ops::host;
use tilekit_ops::reduce::coop_smem::{
    build_softmax_coop_smem_cluster, build_softmax_coop_smem_early, build_softmax_coop_smem_held,
    build_softmax_coop_smem_one_exp, build_softmax_coop_smem_pipelined,
    build_softmax_coop_smem_rows, build_softmax_coop_smem_spec, coop_smem_one_exp_resident_blocks,
    Variant, ONE_EXP_PIPELINE_STEPS,
};
use tilekit_ops::reduce::{
    build_softmax_coop_smem, coop_smem_resident_blocks, coop_smem_shared_bytes, reference,
    CoopTuning, Reduction,
};
use tilekit_ops::tuning::Tuning;
use tilekit_ops::OpsError;

/// Which shared-memory kernel a test runs: two exponentials per element, one, or two with
/// pass 1 pipelined.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    TwoExp,
    OneExp,
    Pipe,
    Early,
    /// The ticket speculated (one exponential?, the guess's rotation).
    Spec(bool, u32),
    /// One exponential, this many vectors a thread held in registers beside the shared slice,
    /// and with `Some(shift)` loaded for a guessed ticket (the guess's rotation).
    Held(i64, Option<u32>),
}

/// Runs the kernel directly: `m` rows of `n`, `k` blocks of `threads` per row, `unroll`
/// vectors a step, `chunks` steps per block, the slice loaded by the threads or (`bulk`) by
/// bulk copies, the kernel of `kind`, on `blocks` blocks (normally `m · k`); output and stats
/// poisoned with NaN. Checks the shared memory it declares and that the blocks leave the
/// tickets and counters at zero.
fn run_smem(
    x: &HostBuffer,
    (m, n): (usize, usize),
    ty: ScalarType,
    (threads, k, unroll, chunks): (u32, u32, i64, i64),
    (blocks, bulk, kind): (u32, bool, Kind),
) -> Result<HostBuffer, InterpError> {
    let v = host::vector_for(ty, &[n as i64]);
    let kern = match kind {
        Kind::OneExp => {
            build_softmax_coop_smem_one_exp(ty, threads, v, k, unroll, chunks, bulk).unwrap()
        }
        Kind::TwoExp => build_softmax_coop_smem(ty, threads, v, k, unroll, chunks, bulk).unwrap(),
        Kind::Pipe => {
            assert!(!bulk, "the pipelined pass 1 loads");
            build_softmax_coop_smem_pipelined(ty, threads, v, k, unroll, chunks).unwrap()
        }
        Kind::Early => {
            assert!(!bulk, "publishing before pass 2 takes loads");
            build_softmax_coop_smem_early(ty, threads, v, k, unroll, chunks).unwrap()
        }
        Kind::Spec(one_exp, shift) => {
            assert!(!bulk, "the speculated ticket takes loads");
            build_softmax_coop_smem_spec(ty, threads, v, k, unroll, chunks, one_exp, shift).unwrap()
        }
        Kind::Held(held, spec) => {
            assert!(!bulk, "registers are held by loads");
            let shape = (unroll, chunks);
            build_softmax_coop_smem_held(ty, threads, v, k, shape, held, (false, spec)).unwrap()
        }
    };
    assert_eq!(kern.shared_bytes(), coop_smem_shared_bytes(threads, unroll, chunks, bulk));
    let (y, ws) = common::run_exchange(&kern, x, (m, n), ty, (k, blocks))?;
    // the ticket wraps at the grid's last block, every row's counter at 2k − 1: the kernel
    // leaves its workspace as it found it (the next launch needs no memset)
    assert!(ws.iter().all(|&c| c == 0), "tickets and counters left {ws:?} ({blocks} blocks)");
    Ok(y)
}

#[test]
fn coop_smem_softmax_matches_the_f64_reference() {
    // (rows, n) × (threads, k, unroll, chunks) for f32 (bf16: half the unroll, so the same
    // elements a step): an exact split over 4 blocks, an odd length (scalar accesses, a tail
    // inside the last block), a last block of padding only, 2 blocks of one long step each,
    // one block per row
    let cases: [Case; 5] = [
        ((3, 4096), (64, 4, 2, 2)),
        ((2, 3001), (64, 3, 2, 2)),
        ((3, 1500), (32, 4, 2, 2)),
        ((2, 2047), (128, 2, 2, 1)),
        ((2, 999), (32, 1, 2, 4)),
    ];
    check_cases(&cases, 11, Kind::TwoExp);
}

/// `m` rows of `n` values `f(row, column, noise)`, the noise from [`random_rows`] (blocks of
/// 512 columns).
fn shaped_rows(
    (m, n): (usize, usize),
    seed: u64,
    f: impl Fn(usize, usize, f64) -> f64,
) -> Vec<f64> {
    let noise = random_rows(m, n, 512, seed);
    noise.iter().enumerate().map(|(i, &v)| f(i / n, i % n, v)).collect()
}

#[test]
fn f32_results_below_the_normal_range_stay_subnormal() {
    // one element of each row at 0, the rest within 2.6 of −100: their results, e^−97.4 ≈
    // 4.6e−43 down to e^−102.6 ≈ 2.6e−45, are f32 subnormals, which pass 3 computes as
    // 2^(z + 64) with ex2.approx.ftz times 2⁻⁶⁴ (one rounding into the subnormal range), not 0
    let (m, n) = (2usize, 1500usize);
    let vals = shaped_rows((m, n), 7, |_, c, v| if c == 17 { 0.0 } else { -100.0 + v / 10.0 });
    let ty = ScalarType::F32;
    let x = host::from_f64(ty, &vals);
    let want = host::to_f64(&reference(Reduction::Softmax, &x, m, n, ty).unwrap());
    let got = run_smem(&x, (m, n), ty, (64, 2, 2, 2), (2 * m as u32, false, Kind::TwoExp));
    let got = host::to_f64(&got.unwrap());
    let tiny = f64::from(f32::from_bits(1)); // 2^-149, the subnormal spacing
    let mut subnormal = 0;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * w.abs() + tiny, "element {i}: got {g:e}, want {w:e}");
        if *w > 0.0 && *w < f64::from(f32::MIN_POSITIVE) {
            assert!(*g > 0.0, "element {i}: {w:e} flushed to zero");
            subnormal += 1;
        }
    }
    assert!(subnormal > m * (n - 1) / 2, "{subnormal} subnormal results");
}

#[test]
fn bf16_rows_near_the_largest_floats_take_the_exact_exponent() {
    // maxima beyond 2^126 (where m·log2 e would overflow the folded FFMA): row 0 near +2.5e38
    // in its second half only (block 0's own max is small and folds, the row's does not), row 1
    // entirely near −3e38 (every block exact); bf16 spacing there is ~1e36, so each row's
    // softmax is 1 at its max element(s) and 0 elsewhere
    let (m, n) = (2usize, 1024usize);
    let vals = shaped_rows((m, n), 9, |r, c, v| match (r, c) {
        (0, c) if c < n / 2 => v,
        (0, _) => 2.5e38 + v * 1e36,
        _ => -3.0e38 + v * 1e36,
    });
    let ty = ScalarType::BF16;
    let x = host::from_f64(ty, &vals);
    let want = reference(Reduction::Softmax, &x, m, n, ty).unwrap();
    for kind in [Kind::TwoExp, Kind::OneExp, Kind::Early] {
        let got = run_smem(&x, (m, n), ty, (32, 2, 1, 2), (2 * m as u32, false, kind));
        assert_close_relative(&got.unwrap(), &want, n, ty, &format!("{kind:?} bf16 beyond 2^126"));
    }
    // the case is what it claims: row 0's mass sits in its second half, on a few tied maxima
    let w = host::to_f64(&want);
    let (first, second) = w[..n].split_at(n / 2);
    assert!(first.iter().all(|&v| v == 0.0) && second.iter().any(|&v| v > 0.01));
    assert!(w.iter().filter(|&&v| v > 0.0).count() < n / 4, "few maxima per row");
}

#[test]
fn bulk_copies_cover_rows_ending_inside_a_step_and_blocks_past_the_row() {
    // whole-vector rows whose end falls inside a step (the vectors past it are filled with
    // −∞ in shared memory) and a last block entirely past the row (its copies move 0 bytes)
    check_bulk_edges(21, Kind::TwoExp);
}

#[test]
fn a_row_missing_a_block_is_a_named_deadlock_not_a_hang() {
    // 2 rows × 3 blocks launched on 5: the last row's 2 blocks wait for a third; in each, warp
    // 0 polls the counter and warp 1 waits at the barrier
    let (m, n) = (2usize, 1536usize);
    let x = host::from_f64(ScalarType::F32, &random_rows(m, n, 512, 5));
    let e =
        run_smem(&x, (m, n), ScalarType::F32, (64, 3, 1, 2), (5, false, Kind::TwoExp)).unwrap_err();
    match &e {
        InterpError::WarpDeadlock { warps, .. } => {
            let mut blocks: Vec<u32> = warps.iter().map(|w| w.block[0]).collect();
            blocks.sort_unstable();
            blocks.dedup();
            assert_eq!((blocks.len(), warps.len()), (2, 4), "{e}");
            for w in warps {
                let want = if w.warp == 0 { "wait.acquire" } else { "bar.sync" };
                assert!(w.inst.contains(want), "{e}");
            }
        }
        _ => panic!("expected a warp deadlock, got {e}"),
    }
}

#[test]
fn api_softmax_takes_the_smem_kernel_when_tuned_and_matches() {
    // 128 threads × 16 elements a step, 16 KiB a block: f32 4096 elements (2 steps), bf16
    // 8192 (4 steps); rows longer than the register kernel holds (f32 16384, bf16 32768)
    let coop = CoopTuning::in_shared(128, 16, 16);
    let t = Tuning { softmax_coop: Some(coop), ..Tuning::default() };
    for (ty, n, k, chunks) in
        [(ScalarType::F32, 20001i64, 5u32, 2i64), (ScalarType::BF16, 40000, 5, 4)]
    {
        let m = 2i64;
        assert_eq!(coop.plan(ty, n), Some((k, chunks)), "{ty}");
        let part = (n as usize).div_ceil(k as usize);
        let l = api_softmax_checked(t, ty, (m, n), (part, 7), &format!("api coop smem {ty}"));
        let kern = l.kernel.kernel();
        assert_eq!((kern.name.as_str(), l.grid), ("softmax_coop_smem", [m as u32 * k, 1, 1]));
        assert_eq!(kern.block_dim, [128, 1, 1]);
        assert_eq!(
            kern.shared_bytes(),
            coop_smem_shared_bytes(128, coop.unroll(ty), chunks, false)
        );
    }
}

#[test]
fn the_deadlock_bound_counts_shared_memory() {
    // 228 KiB per SM, 1 KiB reserved per block: 64 KiB slices fit 3 by shared memory, 32 KiB
    // 6, 16 KiB 13; 48 registers a thread (the estimate) hold 5 blocks of 256 threads
    assert_eq!(coop_smem_resident_blocks(ScalarType::F32, 256, 2, 8, false), 3); // 64 KiB
    assert_eq!(coop_smem_resident_blocks(ScalarType::F32, 128, 2, 8, true), 6); // 32 KiB
    assert_eq!(coop_smem_resident_blocks(ScalarType::F32, 256, 1, 4, false), 5); // registers
    assert_eq!(coop_smem_resident_blocks(ScalarType::BF16, 1024, 4, 3, true), 1); // 192 KiB

    // 200 KiB slices: one block per SM, 4 on the interpreter's 4 "multiprocessors"; a row of
    // 5 such blocks could wait forever on a real device
    let c = CoopTuning::in_shared(512, 16, 200);
    let t = Tuning { softmax_coop: Some(c), ..Tuning::default() };
    let (k, chunks) = c.plan(ScalarType::F32, 5 * 49152).unwrap();
    assert_eq!((k, chunks, c.resident_blocks(ScalarType::F32, chunks)), (5, 6, 1));
    let x = LayoutTensor::contiguous(ScalarType::F32, &[2, 5 * 49152]).unwrap();
    let e = api::softmax_into(&Record::with_tuning(t), &x, &mut x.clone()).unwrap_err();
    match &e {
        OpsError::Invalid { field, value, rule, .. } => {
            assert_eq!(
                (field.as_str(), value.as_str()),
                ("blocks per row (cooperative softmax)", "5")
            );
            assert!(rule.contains("at most 4") && rule.contains("200 KiB"), "{e}");
        }
        _ => panic!("expected a typed error, got {e}"),
    }
    // four blocks fit
    let x = LayoutTensor::contiguous(ScalarType::F32, &[2, 4 * 49152]).unwrap();
    let rec = Record::with_tuning(t);
    api::softmax_into(&rec, &x, &mut x.clone()).unwrap();
    assert_eq!(rec.take().remove(0).grid, [8, 1, 1]);
}

#[test]
fn the_builder_refuses_bad_shapes_with_typed_errors() {
    for (threads, k, unroll, chunks, what) in [
        (128u32, 0u32, 2i64, 2i64, "blocks per row"),
        (128, 65, 2, 2, "blocks per row"),
        (128, 4, 0, 2, "unroll"),
        (128, 4, 9, 2, "unroll"),
        (128, 4, 2, 0, "chunks"),
        (1024, 4, 8, 2, "chunks"), // 256 KiB
        (100, 4, 2, 2, "threads per block"),
    ] {
        let e = build_softmax_coop_smem(ScalarType::F32, threads, 4, k, unroll, chunks, false)
            .unwrap_err();
        match &e {
            OpsError::Invalid { field, .. } => assert_eq!(field, what, "{e}"),
            _ => panic!("expected a typed error, got {e}"),
        }
    }
    assert!(build_softmax_coop_smem(ScalarType::F16, 128, 8, 4, 2, 2, false).is_err());
    // bulk copies need whole 16-byte vectors
    let e = build_softmax_coop_smem(ScalarType::BF16, 128, 4, 4, 2, 2, true).unwrap_err();
    match &e {
        OpsError::Invalid { field, value, .. } => {
            assert_eq!((field.as_str(), value.as_str()), ("vector width (bulk copies)", "4"))
        }
        _ => panic!("expected a typed error, got {e}"),
    }
}

#[test]
fn api_softmax_takes_bulk_copies_for_aligned_rows_and_loads_elsewhere() {
    let coop = CoopTuning::in_shared(128, 16, 16).with_bulk();
    let t = Tuning { softmax_coop: Some(coop), ..Tuning::default() };
    // f32 rows of 20000 are whole 16-byte vectors; 20001 are not
    for (n, name) in [(20000i64, "softmax_coop_smem_bulk"), (20001, "softmax_coop_smem")] {
        let (m, ty) = (2i64, ScalarType::F32);
        let (k, _) = coop.plan(ty, n).unwrap();
        let rec = Record::with_tuning(t);
        let lx = LayoutTensor::contiguous(ty, &[m, n]).unwrap();
        api::softmax_into(&rec, &lx, &mut lx.clone()).unwrap();
        let l = rec.take().remove(0);
        assert_eq!((l.kernel.kernel().name.as_str(), l.grid), (name, [m as u32 * k, 1, 1]));
        let part = (n as usize).div_ceil(k as usize);
        let x = tensor(ty, &random_rows(m as usize, n as usize, part, 13), &[m, n]);
        let mut y = tensor(ty, &vec![f64::NAN; (m * n) as usize], &[m, n]);
        api::softmax_into(&TunedInterp(t), &x, &mut y).unwrap();
        let want = reference(Reduction::Softmax, &x.buffer(), m as usize, n as usize, ty).unwrap();
        assert_close_relative(&y.buffer(), &want, n as usize, ty, &format!("api {name} {n}"));
    }
}

#[test]
fn one_exp_softmax_matches_the_f64_reference() {
    // (rows, n) × (threads, k, unroll, chunks) in f32 vectors (bf16: half the unroll where it
    // halves, else twice the elements a step): 4 blocks of an exact split (pass 1 pipelined over
    // 2 steps), an odd length (scalar accesses, a tail inside the last block, 3 pipelined
    // steps), a last block of padding only, a row of one step per block (no pipelining), one
    // block per row, and more steps than pass 1 unrolls (its loop)
    check_cases(&ONE_EXP_CASES, 31, Kind::OneExp);
}

#[test]
fn one_exp_bulk_copies_cover_rows_ending_inside_a_step_and_blocks_past_the_row() {
    check_bulk_edges(41, Kind::OneExp);
}

#[test]
fn one_exp_kernels_compute_one_exponential_per_element() {
    // pass 2's ex2 per element of a step, one for the block's factor, one (k ≤ 32: one pair
    // a lane) for the exchange; the two-exponential kernel has pass 3's as well
    for (ty, unroll) in [(ScalarType::F32, 4i64), (ScalarType::BF16, 2)] {
        let v = 16 / ty.size_bytes() as i64;
        let per_step = (unroll * v) as usize;
        for bulk in [false, true] {
            let one = build_softmax_coop_smem_one_exp(ty, 128, v, 8, unroll, 4, bulk).unwrap();
            let two = build_softmax_coop_smem(ty, 128, v, 8, unroll, 4, bulk).unwrap();
            let count = |k: &tilekit_ir::Kernel| k.to_string().matches("ex2.approx").count();
            // 16-bit types have each per-element pass twice: the folded FFMA and the exact
            // form for a max beyond 2¹²⁶ (one uniform branch)
            let twice = if ty.size_bytes() == 2 { 2 } else { 1 };
            assert_eq!(count(&one), twice * per_step + 2, "{ty} bulk {bulk}");
            // pass 2's flush subnormals to zero (one MUFU.EX2 each), and so do every
            // per-element one of the two-exponential kernel (f32's pass 3 as 2^(z + 64) · 2⁻⁶⁴,
            // keeping its subnormal results)
            let ftz = |k: &tilekit_ir::Kernel| k.to_string().matches("ex2.approx.ftz").count();
            let two_ftz = 2 * twice * per_step;
            assert_eq!((ftz(&one), ftz(&two)), (twice * per_step, two_ftz), "{ty} bulk {bulk}");
            assert_eq!(count(&two), two_ftz + 1, "{ty} bulk {bulk}");
            // the two-exponential kernel divides by S in the exponent: one lg2, no division
            let lg2 = |k: &tilekit_ir::Kernel| k.to_string().matches("lg2.approx").count();
            assert_eq!((lg2(&one), lg2(&two)), (0, 1), "{ty} bulk {bulk}");
            let divs: Vec<String> = two
                .to_string()
                .lines()
                .filter(|l| l.contains("div.f32"))
                .map(String::from)
                .collect();
            assert!(divs.is_empty(), "{ty} bulk {bulk}: {divs:?}");
            assert_eq!(one.shared_bytes(), two.shared_bytes(), "same shared memory");
        }
    }
}

#[test]
fn api_softmax_takes_the_one_exp_kernel_when_tuned_and_matches() {
    // f32 20000 is whole aligned vectors (bulk copies), 20001 not (loads); bf16 40000 aligned
    let coop = CoopTuning::in_shared(128, 16, 16).with_bulk().with_one_exp();
    let t = Tuning { softmax_coop: Some(coop), ..Tuning::default() };
    for (ty, n, name) in [
        (ScalarType::F32, 20000i64, "softmax_coop_smem_bulk_1exp"),
        (ScalarType::F32, 20001, "softmax_coop_smem_1exp"),
        (ScalarType::BF16, 40000, "softmax_coop_smem_bulk_1exp"),
    ] {
        let m = 2i64;
        let (k, chunks) = coop.plan(ty, n).unwrap();
        assert!(k >= 2, "{ty} {n}");
        let rec = Record::with_tuning(t);
        let lx = LayoutTensor::contiguous(ty, &[m, n]).unwrap();
        api::softmax_into(&rec, &lx, &mut lx.clone()).unwrap();
        let l = rec.take().remove(0);
        assert_eq!((l.kernel.kernel().name.as_str(), l.grid), (name, [m as u32 * k, 1, 1]));
        assert_eq!(
            coop.resident_blocks(ty, chunks),
            coop_smem_one_exp_resident_blocks(ty, 128, coop.unroll(ty), chunks, true)
        );
        let part = (n as usize).div_ceil(k as usize);
        let x = tensor(ty, &random_rows(m as usize, n as usize, part, 17), &[m, n]);
        let mut y = tensor(ty, &vec![f64::NAN; (m * n) as usize], &[m, n]);
        api::softmax_into(&TunedInterp(t), &x, &mut y).unwrap();
        let want = reference(Reduction::Softmax, &x.buffer(), m as usize, n as usize, ty).unwrap();
        assert_close_relative(&y.buffer(), &want, n as usize, ty, &format!("api {name} {ty} {n}"));
    }
}

#[test]
fn one_exp_without_a_shared_memory_slice_is_a_typed_error() {
    let c = CoopTuning::in_registers(256, 32).with_one_exp();
    let t = Tuning { softmax_coop: Some(c), ..Tuning::default() };
    let x = LayoutTensor::contiguous(ScalarType::F32, &[2, 65536]).unwrap();
    let e = api::softmax_into(&Record::with_tuning(t), &x, &mut x.clone()).unwrap_err();
    match &e {
        OpsError::Invalid { field, value, rule, .. } => {
            assert_eq!((field.as_str(), value.as_str()), ("one_exp (cooperative softmax)", "true"));
            assert!(rule.contains("smem_kib"), "{e}");
        }
        _ => panic!("expected a typed error, got {e}"),
    }
    // the one-exponential builder refuses bad shapes as the two-exponential one does
    let e = build_softmax_coop_smem_one_exp(ScalarType::F32, 128, 4, 4, 9, 2, false).unwrap_err();
    assert!(matches!(&e, OpsError::Invalid { field, .. } if field == "unroll"), "{e}");
    let e = build_softmax_coop_smem_one_exp(ScalarType::BF16, 128, 4, 4, 2, 2, true).unwrap_err();
    assert!(
        matches!(&e, OpsError::Invalid { field, .. } if field == "vector width (bulk copies)"),
        "{e}"
    );
}

#[test]
fn one_exp_pass_1_issues_the_next_steps_loads_before_storing_a_step() {
    // 3 steps of 2 vectors: steps 0 and 1's loads come before step 0's st.shared, step 2's
    // before step 1's; the two-exponential kernel's loop has one step's loads in flight
    let (ty, unroll) = (ScalarType::BF16, 2usize);
    let text =
        build_softmax_coop_smem_one_exp(ty, 64, 8, 2, unroll as i64, 3, false).unwrap().to_string();
    let pass1 = &text[text.find("pass 1").unwrap()..text.find("pass 2").unwrap()];
    let order: Vec<char> = pass1
        .lines()
        .filter_map(|l| {
            if l.contains("ld.global.v8.bf16 x") {
                Some('L')
            } else if l.contains("st.shared.v8.bf16 slice") {
                Some('S')
            } else {
                None
            }
        })
        .collect();
    assert_eq!(order.iter().collect::<String>(), "LLLLSSLLSSSS");
    let two = build_softmax_coop_smem(ty, 64, 8, 2, unroll as i64, 3, false).unwrap().to_string();
    let pass1 = &two[two.find("pass 1").unwrap()..two.find("pass 2").unwrap()];
    assert_eq!(pass1.matches("ld.global.v8.bf16 x").count(), unroll, "one step, in a loop");
}

#[test]
fn one_exp_flushes_elements_far_below_the_block_max_to_zero() {
    // f32 rows of 2 blocks, values in [0, 1) but every 7th element −89.5: e^−90 ≈ 8e-40 is
    // a subnormal, and so is its softmax (~1e-42): the one-exponential kernel's
    // ex2.approx.ftz makes those exactly 0, the two-exponential kernel keeps subnormals;
    // every other element matches the reference
    let (ty, m, n) = (ScalarType::F32, 2usize, 2000usize);
    let (threads, k, unroll, chunks) = (32u32, 2u32, 2i64, 4i64);
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let vals: Vec<f64> = (0..m * n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            if i % 7 == 3 {
                -89.5
            } else {
                (s >> 11) as f64 / (1u64 << 53) as f64
            }
        })
        .collect();
    let x = host::from_f64(ty, &vals);
    let want = host::to_f64(&reference(Reduction::Softmax, &x, m, n, ty).unwrap());
    let shape = (threads, k, unroll, chunks);
    let one = host::to_f64(&run_smem(&x, (m, n), ty, shape, (4, false, Kind::OneExp)).unwrap());
    let two = host::to_f64(&run_smem(&x, (m, n), ty, shape, (4, false, Kind::TwoExp)).unwrap());
    for i in 0..m * n {
        if i % 7 == 3 {
            assert!(want[i] > 0.0 && want[i] < 1e-38, "element {i}: {}", want[i]);
            assert_eq!(one[i], 0.0, "element {i} flushed");
            assert!(two[i] > 0.0, "element {i}: the two-exponential kernel keeps subnormals");
        } else {
            assert!((one[i] - want[i]).abs() <= 1e-5 * want[i], "element {i}");
        }
    }
}

#[test]
fn two_rows_a_block_match_the_reference_for_even_and_odd_row_counts() {
    // 2 rows a block: ⌈m / 2⌉ groups of k blocks; an odd m leaves the last group's second
    // row past the tensor (skipped); f32 20001 is not whole vectors (loads of 1), bf16 aligned
    let coop = CoopTuning::in_shared(128, 16, 16).with_rows(2);
    let t = Tuning { softmax_coop: Some(coop), ..Tuning::default() };
    for (ty, m, n) in [
        (ScalarType::F32, 4i64, 20000i64),
        (ScalarType::F32, 3, 20001),
        (ScalarType::BF16, 5, 40000),
    ] {
        let (k, chunks) = coop.plan(ty, n).unwrap();
        assert!(k >= 2, "{ty} {n}");
        let part = (n as usize).div_ceil(k as usize);
        let what = format!("2 rows {ty} {m}x{n}");
        let l = api_softmax_checked(t, ty, (m, n), (part, 23), &what);
        let groups = (m as u32).div_ceil(2);
        assert_eq!(l.kernel.kernel().name, "softmax_coop_smem_2rows", "{what}");
        assert_eq!(l.grid, [groups * k, 1, 1], "{what}");
        // two slices a block: the residency of a kernel with twice the steps
        let one = CoopTuning { rows: 1, ..coop };
        assert_eq!(coop.resident_blocks(ty, chunks), one.resident_blocks(ty, 2 * chunks));
        assert_eq!(
            l.kernel.kernel().shared_bytes(),
            coop_smem_shared_bytes(128, coop.unroll(ty), 2 * chunks, false)
        );
    }
}

#[test]
fn two_rows_are_refused_with_bulk_copies_one_exponential_or_three_rows() {
    let c = CoopTuning::in_shared(256, 16, 32).with_rows(2);
    for bad in [
        CoopTuning { bulk: true, ..c },
        CoopTuning { one_exp: true, ..c },
        CoopTuning { rows: 3, ..c },
        CoopTuning { smem_kib: 0, ..c },
    ] {
        let e = bad.build(ScalarType::F32, 4, 4, 2).unwrap_err();
        assert!(matches!(e, OpsError::Invalid { .. }), "{bad:?}: {e}");
        assert!(e.to_string().contains("rows"), "{bad:?}: {e}");
    }
    let e = build_softmax_coop_smem_rows(ScalarType::BF16, 256, 8, 4, 2, 4, 3).unwrap_err();
    assert!(e.to_string().contains("rows per block"), "{e}");
}

/// The one-exponential kernels' cases (see `one_exp_softmax_matches_the_f64_reference`).
const ONE_EXP_CASES: [Case; 6] = [
    ((3, 4096), (64, 4, 2, 2)),
    ((2, 3001), (32, 4, 2, 3)),
    ((3, 1500), (32, 4, 2, 2)),
    ((2, 2047), (128, 2, 2, 1)),
    ((2, 999), (32, 1, 2, 4)),
    ((2, 5001), (32, 2, 1, ONE_EXP_PIPELINE_STEPS + 4)),
];

/// One case: `(rows, n) × (threads, k, unroll, chunks)` (unroll in f32 vectors).
type Case = ((usize, usize), (u32, u32, i64, i64));

/// The cases of the shared-memory kernel (two or one exponentials) against the f64
/// reference, f32 and bf16 (bf16: half the unroll where it halves, so the same elements a
/// step), with loads and, for rows of whole 16-byte vectors, bulk copies; inputs from seed
/// `seed + case`.
fn check_cases(cases: &[Case], seed: u64, kind: Kind) {
    let label = match kind {
        Kind::TwoExp => "coop smem",
        Kind::OneExp => "coop smem 1exp",
        Kind::Pipe => "coop smem pipe",
        Kind::Early => "coop smem 1exp early",
        Kind::Spec(false, _) => "coop smem spec",
        Kind::Spec(true, _) => "coop smem 1exp spec",
        Kind::Held(_, None) => "coop smem 1exp held",
        Kind::Held(_, Some(_)) => "coop smem 1exp held spec",
    };
    for ty in [ScalarType::F32, ScalarType::BF16] {
        let v = 16 / ty.size_bytes() as i64;
        for (i, &((m, n), (threads, k, unroll, chunks))) in cases.iter().enumerate() {
            let unroll = if v == 8 { (unroll / 2).max(1) } else { unroll };
            let part = threads as usize * (v * unroll * chunks) as usize;
            assert!(k as usize * part >= n, "case {i} covers its rows");
            assert!(k >= 2 || i == 4, "case {i}: rows split over blocks");
            if i == 2 {
                assert!((k as usize - 1) * part >= n, "case 2: the last block is padding only");
            }
            let x = host::from_f64(ty, &random_rows(m, n, part, i as u64 + seed));
            let shape = (threads, k, unroll, chunks);
            let want = reference(Reduction::Softmax, &x, m, n, ty).unwrap();
            // bulk copies only take rows of whole 16-byte vectors; the pipelined pass 1 loads
            let bulks = [false, true].into_iter().filter(|&bu| !bu || n as i64 % v == 0);
            let loads_only =
                matches!(kind, Kind::Pipe | Kind::Early | Kind::Spec(..) | Kind::Held(..));
            for bulk in bulks.filter(|&bu| !bu || !loads_only) {
                let got = run_smem(&x, (m, n), ty, shape, ((m * k as usize) as u32, bulk, kind))
                    .unwrap_or_else(|e| panic!("{ty} case {i} bulk {bulk}: {e}"));
                let what = format!("{label} {ty} {m}x{n} {shape:?} bulk {bulk} {kind:?}");
                assert_close_relative(&got, &want, n, ty, &what);
            }
        }
    }
}

/// Bulk copies of whole-vector rows whose end falls inside a step (the vectors past it are
/// filled with −∞ in shared memory) and a last block entirely past the row (its copies move 0
/// bytes): 2 rows of 4 blocks × 32 threads × 8 elements a step × 2 steps, f32 1500 and bf16
/// 1496, against the f64 reference.
fn check_bulk_edges(seed: u64, kind: Kind) {
    let label = if kind == Kind::OneExp { "coop smem bulk 1exp" } else { "coop smem bulk" };
    for (ty, n) in [(ScalarType::F32, 1500usize), (ScalarType::BF16, 1496)] {
        let v = 16 / ty.size_bytes() as i64;
        let (m, threads, k, chunks) = (2usize, 32u32, 4u32, 2i64);
        let unroll = 8 / v; // 8 elements a step
        let part = threads as usize * (v * unroll * chunks) as usize;
        assert!(n % part != 0 && (k as usize - 1) * part >= n, "{ty}");
        let x = host::from_f64(ty, &random_rows(m, n, part, seed));
        let got = run_smem(&x, (m, n), ty, (threads, k, unroll, chunks), (8, true, kind))
            .unwrap_or_else(|e| panic!("{ty}: {e}"));
        let want = reference(Reduction::Softmax, &x, m, n, ty).unwrap();
        assert_close_relative(&got, &want, n, ty, &format!("{label} {ty} {n}"));
    }
}

#[test]
fn pipelined_pass_one_matches_the_f64_reference() {
    // ((rows, n), (threads, k, unroll for f32, chunks)), at least 2 steps a block (the steps
    // unroll two in flight): an exact split over 4 blocks, an odd length (a tail inside the
    // last block, scalar accesses), a last block of padding only, 4 unrolled steps
    let cases: [Case; 4] = [
        ((3, 4096), (64, 4, 2, 2)),
        ((2, 3001), (64, 3, 2, 2)),
        ((3, 1500), (32, 4, 2, 2)),
        ((2, 2000), (32, 4, 1, 4)),
    ];
    check_cases(&cases, 31, Kind::Pipe);
}

#[test]
fn a_rows_blocks_as_one_cluster_match_the_f64_reference() {
    // 128 threads × 16 elements a step, 16 KiB slices (f32 4096 elements, bf16 8192) as in
    // the counter kernel's API test, each row's blocks one thread-block cluster: two and one
    // exponentials, bulk copies (aligned rows), pass 1 pipelined; rows ending inside the last
    // block (f32 20001: scalar accesses), a split whose last block is padding only (k 4 for
    // 9000 f32: 3 blocks hold it), and one block a row (k 1, no cluster at all)
    let base = CoopTuning::in_shared(128, 16, 16).with_cluster();
    let shapes = [
        ("cluster", base, "softmax_cluster_smem"),
        ("cluster 1exp", base.with_one_exp(), "softmax_cluster_smem_1exp"),
        ("cluster bulk", base.with_bulk(), "softmax_cluster_smem_bulk"),
        ("cluster bulk 1exp", base.with_bulk().with_one_exp(), "softmax_cluster_smem_bulk_1exp"),
        ("cluster pipe", base.with_pipe(), "softmax_cluster_smem_pipe"),
        ("cluster early", base.with_early(), "softmax_cluster_smem_1exp_early"),
        ("cluster held", base.with_held(2), "softmax_cluster_smem_1exp_held"),
    ];
    for (label, coop, name) in shapes {
        let t = Tuning { softmax_coop: Some(coop), ..Tuning::default() };
        for (ty, m, n) in [
            (ScalarType::F32, 2i64, 20001i64),
            (ScalarType::F32, 3, 24576),
            (ScalarType::BF16, 2, 40000),
            (ScalarType::BF16, 3, 49152),
        ] {
            let (k, _) = coop.plan(ty, n).unwrap();
            let part = (n as usize).div_ceil(k as usize);
            let what = format!("{label} {ty} {m}x{n}");
            let l = api_softmax_checked(t, ty, (m, n), (part, 41), &what);
            let kern = l.kernel.kernel();
            // unaligned rows take loads where bulk copies were asked for
            let want = if n % (16 / ty.size_bytes() as i64) != 0 {
                name.replace("_bulk", "")
            } else {
                name.to_string()
            };
            assert_eq!(kern.name, want, "{what}");
            assert_eq!(kern.cluster_dim, [k, 1, 1], "{what}");
            assert_eq!(l.grid, [m as u32 * k, 1, 1], "{what}");
            // no counters or pairs in global memory: x and y are the only parameters
            let names: Vec<&str> = kern.params.iter().map(|p| p.name.as_str()).collect();
            assert!(names.iter().all(|p| p.starts_with("x") || p.starts_with("y")), "{names:?}");
            let text = kern.to_string();
            assert!(!text.contains("atom"), "{what}: no ticket");
            // one full barrier before the pairs are read, a split one after: arrive, wait last
            let (arrive, wait) =
                (text.find("barrier.cluster.arrive"), text.rfind("barrier.cluster.wait"));
            assert!(arrive.is_some() && arrive < wait, "{what}");
        }
    }
}

#[test]
fn a_cluster_of_one_and_a_padding_block_match_the_reference() {
    // through the API, k = 1: a 200 KiB slice holds f32 20000 (no cluster, no exchange)
    let one = CoopTuning::in_shared(128, 16, 200).with_cluster();
    let t = Tuning { softmax_coop: Some(one), ..Tuning::default() };
    assert_eq!(one.plan(ScalarType::F32, 20000), Some((1, 10)));
    let l = api_softmax_checked(t, ScalarType::F32, (2, 20000), (20000, 43), "cluster of 1");
    assert_eq!(l.kernel.kernel().cluster_dim, [1, 1, 1]);
    // directly, 2 rows of 1500 over clusters of 4 blocks × 32 threads × 8 elements × 2 steps
    // (512 a block): the last block of each row holds no element and still meets its cluster
    for (ty, one_exp) in [(ScalarType::F32, false), (ScalarType::BF16, true)] {
        let (m, n, k) = (2usize, 1500usize, 4u32);
        let unroll = 8 / (16 / ty.size_bytes() as i64);
        let variant = Variant { one_exp, ..Variant::default() };
        let kern = build_softmax_coop_smem_cluster(ty, 32, 1, k, (unroll, 2), variant).unwrap();
        let x = host::from_f64(ty, &random_rows(m, n, 375, 47));
        let y = run_x_y(&kern, &x, (m, n), ty, m as u32 * k);
        let want = reference(Reduction::Softmax, &x, m, n, ty).unwrap();
        assert_close_relative(&y, &want, n, ty, &format!("cluster of {k} {ty} padding block"));
    }
}

/// Runs a kernel of params `x`, `y` (the `m × n` rows) on the interpreter on `blocks` blocks,
/// `y` poisoned with NaN; returns `y`.
fn run_x_y(
    kern: &tilekit_ir::Kernel,
    x: &HostBuffer,
    (m, n): (usize, usize),
    ty: ScalarType,
    blocks: u32,
) -> HostBuffer {
    use tilekit_ir::interp::{self, Args};
    let mut a = Args::new();
    let (mi, ni) = (m as i64, n as i64);
    a.tensor(x.clone(), &[mi, ni], &[ni, 1]).tensor(
        host::poisoned(ty, m * n).unwrap(),
        &[mi, ni],
        &[ni, 1],
    );
    interp::run(kern, [blocks, 1, 1], &mut a).unwrap_or_else(|e| panic!("{}: {e}", kern.name));
    a.take_buffer(5).unwrap()
}

#[test]
fn clusters_are_refused_beyond_16_blocks_and_with_two_rows() {
    let c = CoopTuning::in_shared(256, 16, 16).with_cluster();
    // f32 262144 over 16 KiB slices: 64 blocks, more than a cluster holds
    assert_eq!(c.plan(ScalarType::F32, 262144), None);
    assert_eq!(CoopTuning { cluster: false, ..c }.plan(ScalarType::F32, 262144), Some((64, 1)));
    for bad in [c.with_rows(2), CoopTuning { smem_kib: 0, ..c }] {
        let e = bad.build(ScalarType::F32, 4, 4, 2).unwrap_err();
        assert!(matches!(e, OpsError::Invalid { .. }), "{bad:?}: {e}");
    }
    let e = c.build(ScalarType::F32, 4, 17, 2).unwrap_err();
    assert!(e.to_string().contains("1..=16"), "{e}");
}

#[test]
fn publishing_before_pass_2_matches_the_f64_reference() {
    // the one-exponential cases (loads): pass 1 keeps the running sum, pass 2 runs after the
    // block has published
    check_cases(&ONE_EXP_CASES, 51, Kind::Early);
}

#[test]
fn the_running_sum_is_rescaled_as_the_max_grows() {
    // rows rising by 80 over each block's slice (every step raises the thread's max, so its
    // running sum is rescaled by factors down to e^-80 and must keep only the last steps'
    // terms) and rows falling the same way (no rescale after the first step)
    for ty in [ScalarType::F32, ScalarType::BF16] {
        let (m, n) = (2usize, 2048usize);
        let vals = shaped_rows((m, n), 53, |r, c, v| {
            let ramp = 80.0 * (c % 512) as f64 / 512.0;
            (if r == 0 { ramp } else { -ramp }) + v / 50.0
        });
        let x = host::from_f64(ty, &vals);
        let want = reference(Reduction::Softmax, &x, m, n, ty).unwrap();
        let unroll = if ty == ScalarType::F32 { 2 } else { 1 };
        let got = run_smem(&x, (m, n), ty, (32, 4, unroll, 2), (4 * m as u32, false, Kind::Early));
        assert_close_relative(&got.unwrap(), &want, n, ty, &format!("early {ty} ramps"));
    }
}

#[test]
fn early_is_refused_outside_the_one_exponential_loads_kernel() {
    let c = CoopTuning::in_shared(256, 16, 32).with_early();
    for bad in [
        CoopTuning { one_exp: false, ..c },
        CoopTuning { bulk: true, ..c },
        c.with_rows(2),
        CoopTuning { smem_kib: 0, ..c },
    ] {
        // (without a shared-memory slice, one_exp is the first thing named)
        let e = bad.build(ScalarType::F32, 4, 4, 2).unwrap_err().to_string();
        assert!(e.contains("early") || e.contains("one_exp"), "{bad:?}: {e}");
    }
    let t = Tuning { softmax_coop: Some(c), ..Tuning::default() };
    let l = api_softmax_checked(t, ScalarType::BF16, (2, 40000), (8000, 57), "api early bf16");
    assert_eq!(l.kernel.kernel().name, "softmax_coop_smem_1exp_early");
}

#[test]
fn a_speculated_ticket_matches_the_f64_reference_whether_the_guess_holds_or_not() {
    // the two- and one-exponential cases with step 0 loaded for the guessed ticket before the
    // atomic: the guess blockIdx.x (shift 0) and rotated by one and by a row (shifts 1 and
    // 3: every guess differs from a ticket that follows the block index, so step 0 is loaded
    // again at the ticket's slice); the rows, the padding block and the odd lengths as above
    for shift in [0, 1, 3] {
        check_cases(&ONE_EXP_CASES, 61 + u64::from(shift), Kind::Spec(true, shift));
        let two: [Case; 3] =
            [((3, 4096), (64, 4, 2, 2)), ((2, 3001), (64, 3, 2, 2)), ((3, 1500), (32, 4, 2, 2))];
        check_cases(&two, 71 + u64::from(shift), Kind::Spec(false, shift));
    }
}

#[test]
fn the_speculated_ticket_is_refused_outside_the_counter_kernel_with_loads() {
    let c = CoopTuning::in_shared(256, 16, 32).with_spec();
    let (k, chunks) = c.plan(ScalarType::F32, 65536).unwrap();
    assert_eq!(c.build(ScalarType::F32, 4, k, chunks).unwrap().name, "softmax_coop_smem_spec");
    for (what, bad) in [
        ("cluster", c.with_cluster()),
        ("bulk", c.with_bulk()),
        ("2rows", c.with_rows(2)),
        ("pipe", c.with_pipe()),
        ("early", c.with_early()),
        ("registers", CoopTuning { smem_kib: 0, ..c }),
    ] {
        let e = bad.build(ScalarType::F32, 4, k, chunks).unwrap_err();
        assert!(e.to_string().contains("spec (cooperative softmax)"), "{what}: {e}");
    }
}

#[test]
fn registers_held_beside_the_shared_slice_match_the_f64_reference() {
    // the one-exponential cases with 1 and 3 vectors a thread held in registers before each
    // block's shared steps: the blocks now hold more of the row, so the splits end in
    // different places (inside the register part, inside a step, blocks of padding only)
    for held in [1, 3] {
        check_cases(&ONE_EXP_CASES, 81 + held as u64, Kind::Held(held, None));
    }
}

#[test]
fn held_registers_loaded_for_a_guessed_ticket_match_whether_the_guess_holds_or_not() {
    // the guess blockIdx.x (shift 0), and rotated by one and by three (every block misses and
    // loads its held vectors again at its ticket's slice)
    for shift in [0, 1, 3] {
        check_cases(&ONE_EXP_CASES, 91 + u64::from(shift), Kind::Held(2, Some(shift)));
    }
}

#[test]
fn held_registers_through_the_api_use_fewer_blocks_and_match() {
    // 64 threads × 8 f32 a step (2 vectors), 8 KiB slices: 2048 elements in shared memory a
    // block, + 4 vectors a thread (1024) in registers
    let plain = CoopTuning::in_shared(64, 8, 8).with_one_exp();
    let held = plain.with_held(4);
    // (rows longer than the one-block register kernel takes)
    assert_eq!(plain.plan(ScalarType::F32, 20001), Some((10, 4)));
    assert_eq!(held.plan(ScalarType::F32, 20001), Some((7, 4)));
    let t = Tuning { softmax_coop: Some(held), ..Tuning::default() };
    for (ty, n) in [(ScalarType::F32, 20001i64), (ScalarType::BF16, 40000)] {
        let (k, _) = held.plan(ty, n).unwrap();
        let what = format!("held {ty} 3x{n}");
        let l = api_softmax_checked(t, ty, (3, n), ((n as usize).div_ceil(k as usize), 83), &what);
        assert_eq!(l.kernel.kernel().name, "softmax_coop_smem_1exp_held", "{what}");
        assert_eq!(l.grid, [3 * k, 1, 1], "{what}");
    }
}

#[test]
fn held_registers_are_refused_outside_the_one_exponential_loads_kernel() {
    let c = CoopTuning::in_shared(256, 16, 32).with_held(2);
    let (k, chunks) = c.plan(ScalarType::F32, 65536).unwrap();
    assert_eq!(c.build(ScalarType::F32, 4, k, chunks).unwrap().name, "softmax_coop_smem_1exp_held");
    for (what, bad) in [
        ("two exponentials", CoopTuning { one_exp: false, ..c }),
        ("bulk", c.with_bulk()),
        ("early", c.with_early()),
        ("spec with a cluster", c.with_spec().with_cluster()),
    ] {
        let e = bad.build(ScalarType::F32, 4, k, chunks).unwrap_err();
        assert!(matches!(e, OpsError::Invalid { .. }), "{what}: {e}");
        assert!(e.to_string().contains("held"), "{what}: {e}");
    }
    let spec = c.with_spec().build(ScalarType::F32, 4, k, chunks).unwrap();
    assert_eq!(spec.name, "softmax_coop_smem_1exp_held_spec");
    let e = build_softmax_coop_smem_held(ScalarType::F32, 256, 4, 4, (4, 2), 17, (false, None))
        .unwrap_err();
    assert!(e.to_string().contains("0..=16"), "{e}");
}
