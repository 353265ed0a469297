//! The warp-specialised producer/consumer ring (`coverage::warp_ring`) under the interpreter's
//! independent warp schedule: the correct kernel matches a CPU reference for several ring
//! depths, and each planted bug gets its named error — a producer waiting on the wrong parity
//! deadlocks (every blocked warp listed), consumers waiting on the wrong parity read a stage
//! before its copy lands, a producer that skips the `empty` wait refills a stage early, a named
//! barrier whose count is too large deadlocks, and one whose warps disagree on the count is
//! named. The kernel assembles with ptxas for sm_90a (a test ignored where the build found no
//! ptxas: docs/testing.md).

use tilekit_ir::interp::{run, Args, AsyncBug, HostBuffer, InterpError};
use tilekit_ptx::coverage::{warp_ring, warp_ring_reference, warp_ring_with, RingBug, RING_TILE};

/// Random-looking f32 inputs (xorshift), never all zeros.
fn inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0
        })
        .collect()
}

fn launch(
    stages: i64,
    bug: RingBug,
    tiles: usize,
    blocks: usize,
) -> (Result<(), InterpError>, Vec<f32>, Vec<f32>) {
    let k = warp_ring_with(stages, bug).unwrap();
    let n = blocks * tiles * RING_TILE as usize;
    let x = inputs(n, 0x9e37_79b9 + stages as u64);
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&x))
        .buffer(HostBuffer::from_f32(&vec![f32::NAN; n]))
        .int(tiles as i64);
    let r = run(&k, [blocks as u32, 1, 1], &mut a).map(|_| ());
    let y = a.take_buffer(1).unwrap().to_f32().unwrap();
    (r, x, y)
}

#[test]
fn the_ring_matches_the_cpu_reference() {
    for (stages, tiles) in [(1, 3), (2, 5), (3, 7), (4, 4)] {
        let (r, x, y) = launch(stages, RingBug::None, tiles, 3);
        r.unwrap_or_else(|e| panic!("{stages} stages: {e}"));
        let want = warp_ring_reference(&x);
        for (i, (g, w)) in y.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{stages} stages, element {i}: {g} vs {w}");
        }
    }
}

#[test]
fn a_producer_waiting_on_the_wrong_parity_deadlocks_and_lists_the_warps() {
    let (r, _, _) = launch(2, RingBug::ProducerWrongParity, 4, 1);
    let e = r.unwrap_err();
    let InterpError::WarpDeadlock { block, warps } = &e else { panic!("expected a deadlock: {e}") };
    assert_eq!(*block, [0, 0, 0]);
    // the producer's warp 0 and the 8 consumer warps
    let ids: Vec<usize> = warps.iter().map(|w| w.warp).collect();
    assert_eq!(ids, vec![0, 4, 5, 6, 7, 8, 9, 10, 11], "{e}");
    assert!(warps[0].waits.contains("mbarrier \"empty\"[0] parity 0"), "{e}");
    assert!(warps[0].waits.contains("still needs 256 of 256 arrivals"), "{e}");
    assert!(warps[0].inst.contains("mbarrier.try_wait.parity"), "{e}");
    assert!(warps[1].waits.contains("mbarrier \"full\"[0] parity 0"), "{e}");
    assert!(warps[1].waits.contains("still needs 1 of 1 arrivals"), "{e}");
    let text = e.to_string();
    assert!(text.starts_with("deadlock in block [0, 0, 0]"), "{text}");
    assert!(text.contains("warp 11 of block [0, 0, 0] (threads 352..384)"), "{text}");
}

#[test]
fn consumers_waiting_on_the_wrong_parity_read_a_stage_the_next_copy_overwrites() {
    // parity 1 on a fresh barrier returns at once: the consumers read stage 0 before the
    // producer fills it, and the producer's copy then overwrites what they read, unordered
    let e = launch(2, RingBug::ConsumerWrongParity, 4, 1).0.unwrap_err();
    let InterpError::Async { kind, ref mem, ref detail, thread, ref inst, .. } = e else {
        panic!("expected an async bug: {e}")
    };
    assert_eq!(kind, AsyncBug::OverwriteWhileRead, "{e}");
    assert_eq!(mem, "ring");
    assert_eq!(thread, [0, 0, 0], "{e}"); // the producer issues the copy
    assert!(inst.contains("cp.async.bulk.shared.global"), "{e}");
    assert!(detail.contains("read it") && detail.contains("ld.shared.v2.f32 ring"), "{e}");
}

#[test]
fn a_producer_that_skips_the_empty_wait_refills_a_stage_too_early() {
    let e = launch(2, RingBug::ProducerSkipsEmpty, 4, 1).0.unwrap_err();
    let InterpError::Async { kind, ref mem, ref detail, .. } = e else {
        panic!("expected an async bug: {e}")
    };
    assert_eq!(kind, AsyncBug::TxMismatch, "{e}");
    assert_eq!(mem, "full");
    assert!(detail.contains("a phase that has not begun"), "{e}");
}

#[test]
fn a_named_barrier_counting_more_threads_than_arrive_deadlocks() {
    let e = launch(2, RingBug::NamedBarrierTooLarge, 4, 1).0.unwrap_err();
    let InterpError::WarpDeadlock { warps, .. } = &e else { panic!("expected a deadlock: {e}") };
    let consumers: Vec<_> = warps.iter().filter(|w| w.warp >= 4).collect();
    assert_eq!(consumers.len(), 8, "{e}");
    for w in consumers {
        assert!(w.inst.contains("bar.sync 1, 384"), "{e}");
        assert!(w.waits.contains("named barrier 1 (count 384): 256 of 384 threads arrived"), "{e}");
    }
}

#[test]
fn warps_disagreeing_on_a_named_barrier_count_are_named() {
    let e = launch(2, RingBug::NamedBarrierMismatch, 4, 1).0.unwrap_err();
    let InterpError::NamedBarrier { id, warp, ref detail, .. } = e else {
        panic!("expected a named-barrier error: {e}")
    };
    assert_eq!(id, 1);
    assert_eq!(warp, 8, "{e}"); // the first warp of warpgroup 2
    assert!(detail.contains("count of 128 threads") && detail.contains("with 256"), "{e}");
}

#[test]
#[cfg_attr(not(has_ptxas), ignore = "needs ptxas (TILEKIT_PTXAS or on the PATH)")]
fn the_ring_assembles_for_sm90a() {
    let ptx =
        tilekit_ptx::emit::emit_kernel(&warp_ring(3).unwrap(), tilekit_ptx::Target::Sm90a).unwrap();
    assert!(ptx.contains(".maxnreg 168"), "{ptx}");
    assert!(
        ptx.contains("bar.sync 1, 256;") && ptx.contains("setmaxnreg.inc.sync.aligned.u32 232;")
    );
    match tilekit_ptx::ptxas::assemble(&ptx, tilekit_ptx::Target::Sm90a, "warp_ring_3") {
        Ok(Some(report)) => {
            // setmaxnreg was honoured: no "setmaxnreg ignored" warning
            assert!(!report.contains("setmaxnreg ignored"), "{report}");
            assert!(report.contains("Used"), "{report}");
        }
        Ok(None) => panic!("no ptxas (TILEKIT_PTXAS or the PATH)"),
        Err(e) => panic!("{e}"),
    }
}
