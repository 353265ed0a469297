//! The ring ([`Ring`], [`PipelineState`]) against brute force: the stage/phase sequence of
//! many iterations for every stage count 1..=12, folded at build time and computed by a kernel
//! on the interpreter (each of `at`, `at_masked` and `advance`); and a producer/consumer kernel
//! built with it, correct and with its bugs planted (the async checker names each).

use tilekit_ir::interp::{run, Args, AsyncBug, HostBuffer, InterpError};
use tilekit_ir::{lit, Axis, BinOp, CmpOp, Kernel, KernelBuilder, ScalarType};
use tilekit_kernel::ring::{PipelineState, Ring};
use tilekit_kernel::Idx;

/// The positions of iterations `0..n`, by counting: the stage steps, the phase flips on a wrap.
fn brute_force(stages: i64, n: i64) -> Vec<(i64, i64)> {
    let (mut s, mut ph) = (0, 0);
    let mut out = vec![];
    for _ in 0..n {
        out.push((s, ph));
        s += 1;
        if s == stages {
            s = 0;
            ph ^= 1;
        }
    }
    out
}

const ITERS: i64 = 100;

#[test]
fn positions_fold_to_the_brute_force_sequence() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    for stages in 1..=12 {
        let want = brute_force(stages, ITERS);
        let mut pos = PipelineState::start(stages);
        for (it, &w) in want.iter().enumerate() {
            let c = |p: &PipelineState| (p.stage.to_const().unwrap(), p.phase.to_const().unwrap());
            assert_eq!(c(&pos), w, "advance: {stages} stages, iteration {it}");
            let at = PipelineState::at(&lit(it as i64), stages);
            assert_eq!(c(&at), w, "at: {stages} stages, iteration {it}");
            let masked = PipelineState::at_masked(&b, &lit(it as i64), stages).unwrap();
            assert_eq!(c(&masked), w, "at_masked: {stages} stages, iteration {it}");
            assert_eq!(PipelineState::stage_at(&lit(it as i64), stages).to_const(), Some(w.0));
            assert_eq!(pos.empty_parity().to_const(), Some(1 - w.1));
            assert_eq!(pos.empty_parity_xor(&b).unwrap().to_const(), Some(1 - w.1));
            let prev = pos.previous_stage(&b).unwrap().to_const().unwrap();
            assert_eq!(prev, (w.0 + stages - 1) % stages, "previous stage");
            pos = pos.advance(&b).unwrap();
        }
    }
}

/// A kernel whose loop writes, per iteration, the position carried by `advance` and the ones
/// `at` and `at_masked` compute from the (runtime) iteration: 6 i32 an iteration.
fn positions_kernel(stages: i64) -> Kernel {
    let b = KernelBuilder::new("positions", [1, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let n = b.scalar_param("n", ScalarType::I32).unwrap();
    let start = PipelineState::start(stages).carried();
    b.for_range(&lit(0), &n, &lit(1), &start, |b, it, c| {
        let pos = PipelineState::from_carried(c, stages);
        let at = PipelineState::at(&it, stages);
        let masked = PipelineState::at_masked(b, &it, stages)?;
        let vals = [&pos.stage, &pos.phase, &at.stage, &at.phase, &masked.stage, &masked.phase];
        for (j, v) in vals.into_iter().enumerate() {
            let v = b.cvt(v, ScalarType::I32)?;
            b.store(y, &(it.clone() * lit(6) + lit(j as i64)), &[v], None)?;
        }
        Ok(pos.advance(b)?.carried())
    })
    .unwrap();
    b.finish().unwrap()
}

#[test]
fn positions_computed_by_a_kernel_match_brute_force() {
    for stages in 1..=12 {
        let mut args = Args::new();
        args.buffer(HostBuffer::from_i32(&vec![-1; (6 * ITERS) as usize]));
        args.scalar(tilekit_ir::Lit::int(ScalarType::I32, ITERS).unwrap());
        run(&positions_kernel(stages), [1, 1, 1], &mut args).unwrap();
        let got = args.take_buffer(0).unwrap().to_i32().unwrap();
        for (it, (s, ph)) in brute_force(stages, ITERS).into_iter().enumerate() {
            let row = &got[6 * it..6 * it + 6];
            let want = [s, ph, s, ph, s, ph].map(|v| v as i32);
            assert_eq!(row, want, "{stages} stages, iteration {it}");
        }
    }
}

const CHUNK: i64 = 32; // f32 elements a stage

#[derive(Clone, Copy, PartialEq, Debug)]
enum Bug {
    None,
    /// the producer refills a stage without waiting for its release
    NoEmptyWait,
    /// the consumers wait `full` on the opposite parity
    WrongPhase,
    /// the consumers never release: the producer's second round waits forever
    NoRelease,
}

/// Thread 0 (warp 0) streams `iters` chunks of `x` through a ring of `stages` by bulk copies;
/// warp 1 sums lane `l`'s column of the chunks into `y[l]`.
fn producer_consumer(stages: i64, iters: i64, bug: Bug) -> Kernel {
    let b = KernelBuilder::new("ring", [64, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let buf = b.shared("stages", ScalarType::F32, (stages * CHUNK) as usize).unwrap();
    let ring = Ring::new(&b, stages, "full", "empty").unwrap();
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
    b.if_then(&first, |b| {
        ring.init(b, 1, 32)?;
        b.fence_mbarrier_init();
        Ok(())
    })
    .unwrap();
    b.barrier();
    b.if_then(&first, |b| {
        let start = PipelineState::start(stages).carried();
        b.for_range(&lit(0), &lit(iters), &lit(1), &start, |b, it, c| {
            let pos = PipelineState::from_carried(c, stages);
            if bug == Bug::NoEmptyWait {
                ring.expect_bytes(b, &pos.stage, CHUNK * 4)?;
            } else {
                ring.producer_acquire(b, &pos, CHUNK * 4)?;
            }
            let at = pos.stage.clone() * lit(CHUNK);
            b.bulk_load(buf, &at, x, &(it * lit(CHUNK)), &lit(CHUNK), ring.full(), &pos.stage)?;
            Ok(pos.advance(b)?.carried())
        })?;
        Ok(())
    })
    .unwrap();
    let consumer = b.cmp(CmpOp::Ge, &tid, &lit(32)).unwrap();
    b.if_then(&consumer, |b| {
        let lane = tid.clone() - lit(32);
        let mut init = vec![b.f32(0.0)];
        init.extend(PipelineState::start(stages).carried());
        let out = b.for_range(&lit(0), &lit(iters), &lit(1), &init, |b, _, c| {
            let pos = PipelineState::from_carried(&c[1..], stages);
            if bug == Bug::WrongPhase {
                b.mbarrier_wait(ring.full(), &pos.stage, &pos.empty_parity())?;
            } else {
                ring.wait_full(b, &pos)?;
            }
            let v = b.load(buf, &(pos.stage.clone() * lit(CHUNK) + lane.clone()), 1, None)?;
            let sum = b.binary(BinOp::Add, &c[0], &v[0])?;
            if bug != Bug::NoRelease {
                ring.release(b, &pos.stage)?;
            }
            let mut next = vec![sum];
            next.extend(pos.advance(b)?.carried());
            Ok(next)
        })?;
        b.store(y, &lane, &out[..1], None)
    })
    .unwrap();
    b.finish().unwrap()
}

fn launch(stages: i64, iters: i64, bug: Bug) -> (Result<(), InterpError>, Vec<f32>) {
    let xs: Vec<f32> = (0..iters * CHUNK).map(|i| (i % 97) as f32 - 40.0).collect();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_f32(&xs)).buffer(HostBuffer::from_f32(&[f32::NAN; 32]));
    let r = run(&producer_consumer(stages, iters, bug), [1, 1, 1], &mut args).map(|_| ());
    let got = args.take_buffer(1).unwrap().to_f32().unwrap();
    let want: Vec<f32> =
        (0..32).map(|l| (0..iters).map(|i| xs[(i * CHUNK + l) as usize]).sum::<f32>()).collect();
    assert!(r.is_err() || got == want, "{stages} stages, {iters} iterations: {got:?}");
    (r, got)
}

#[test]
fn a_producer_consumer_ring_streams_every_chunk() {
    for stages in [1, 2, 3, 4, 5] {
        for iters in [1, 2, 7, 16] {
            launch(stages, iters, Bug::None).0.unwrap();
        }
    }
}

#[test]
fn the_async_checker_names_a_broken_ring() {
    // never released: the producer's second round of stage 0 waits forever on `empty`
    match launch(3, 9, Bug::NoRelease).0 {
        Err(e @ InterpError::WarpDeadlock { .. }) => {
            let text = format!("{e:?}");
            assert!(text.contains("empty") && text.contains("needs 32 of 32 arrivals"), "{text}");
        }
        other => panic!("NoRelease: expected a deadlock, got {other:?}"),
    }
    // refilled before the release: a second arrival and copy on a phase in flight
    match launch(3, 9, Bug::NoEmptyWait).0 {
        Err(InterpError::Async { kind, .. }) => assert!(
            matches!(
                kind,
                AsyncBug::ReadBeforeComplete | AsyncBug::OverwriteWhileRead | AsyncBug::TxMismatch
            ),
            "{kind:?}"
        ),
        other => panic!("NoEmptyWait: expected an async bug, got {other:?}"),
    }
    // the wrong parity: the first wait returns at once (a read of a stage in flight), or the
    // ring falls out of step and deadlocks — either is reported, never a silent wrong sum
    match launch(3, 9, Bug::WrongPhase).0 {
        Err(InterpError::Async { kind: AsyncBug::ReadBeforeComplete, .. })
        | Err(InterpError::WarpDeadlock { .. }) => {}
        other => {
            panic!("WrongPhase: expected a read before completion or a deadlock, got {other:?}")
        }
    }
}
