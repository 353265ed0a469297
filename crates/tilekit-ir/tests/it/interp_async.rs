//! Asynchronous operations in the interpreter: a correct mbarrier + bulk-copy stage gives the
//! right values, and each bug these ops make possible is planted once and named — reading a
//! buffer before its copy lands, waiting on the wrong parity, expect_tx counts that differ from
//! what arrives, a phase nothing can complete, a bulk store of unfenced writes, overwriting what a
//! bulk store may still read, ending with a store unretired, an uninitialised barrier, a
//! barrier's memory used as data, a misaligned copy.

use tilekit_ir::interp::{run, run_scheduled, Args, AsyncBug, HostBuffer, InterpError, Schedule};
use tilekit_ir::lit;
use tilekit_ir::{Axis, BinOp, CmpOp, Kernel, KernelBuilder, ScalarType, Val};

const N: i64 = 256; // elements per block (1 KiB of f32)

#[derive(Clone, Copy, PartialEq, Debug)]
enum Bug {
    None,
    NoWait,
    WrongParity,
    TxTooLarge,
    TxTooSmall,
    TwoArrivalsExpected,
    NoProxyFence,
    OverwriteBeforeWaitRead,
    NoWaitRead,
    NoInit,
    BarrierAsData,
    Misaligned,
}

/// One stage: thread 0 loads the block's 256 elements with a bulk copy completing on an
/// mbarrier; every thread waits, computes 3x into an output buffer, and thread 0 stores it
/// back with a bulk store.
fn stage(bug: Bug) -> Kernel {
    let b = KernelBuilder::new("stage", [64, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let buf = b.shared("buf", ScalarType::F32, N as usize + 4).unwrap();
    let out = b.shared("out", ScalarType::F32, N as usize).unwrap();
    let bar = b.mbarrier("full", 1).unwrap();
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
    let base = b.block_id(Axis::X) * lit(N);
    b.if_then(&first, |b| {
        if bug != Bug::NoInit {
            let count = if bug == Bug::TwoArrivalsExpected { 2 } else { 1 };
            b.mbarrier_init(bar, &lit(0), &lit(count))?;
        }
        b.fence_mbarrier_init();
        Ok(())
    })
    .unwrap();
    b.barrier();
    b.if_then(&first, |b| {
        let tx = match bug {
            Bug::TxTooLarge => 2 * N * 4,
            Bug::TxTooSmall => N * 4 / 2,
            _ => N * 4,
        };
        b.mbarrier_arrive(bar, &lit(0), Some(&lit(tx)))?;
        let dst = if bug == Bug::Misaligned { 1 } else { 0 };
        b.bulk_load(buf, &lit(dst), x, &base, &lit(N), bar, &lit(0))
    })
    .unwrap();
    if bug == Bug::BarrierAsData {
        b.keep(&b.load(bar, &lit(0), 1, None).unwrap()[0]);
    }
    if bug != Bug::NoWait {
        let parity = if bug == Bug::WrongParity { 1 } else { 0 };
        b.mbarrier_wait(bar, &lit(0), &lit(parity)).unwrap();
    }
    let e = tid.clone() * lit(4);
    let v = b.load(buf, &e, 4, None).unwrap();
    let w: Vec<Val> = v.iter().map(|x| b.binary(BinOp::Mul, x, &b.f32(3.0)).unwrap()).collect();
    b.store(out, &e, &w, None).unwrap();
    if bug != Bug::NoProxyFence {
        b.fence_proxy_async();
    }
    b.barrier();
    b.if_then(&first, |b| {
        b.bulk_store(y, &base, out, &lit(0), &lit(N))?;
        b.bulk_commit();
        Ok(())
    })
    .unwrap();
    if bug == Bug::OverwriteBeforeWaitRead {
        b.store(out, &e, &v, None).unwrap();
    }
    if bug != Bug::NoWaitRead {
        b.if_then(&first, |b| {
            b.bulk_wait(0, true);
            Ok(())
        })
        .unwrap();
    }
    b.finish().unwrap()
}

fn launch(bug: Bug) -> (Result<(), InterpError>, Vec<f32>, Vec<f32>) {
    launch_scheduled(bug, Schedule::Auto)
}

fn launch_scheduled(bug: Bug, schedule: Schedule) -> (Result<(), InterpError>, Vec<f32>, Vec<f32>) {
    let blocks = 3usize;
    let x: Vec<f32> =
        (0..blocks * N as usize).map(|i| ((i * 37) % 101) as f32 / 8.0 - 6.0).collect();
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&x)).buffer(HostBuffer::from_f32(&vec![f32::NAN; x.len()]));
    let r = run_scheduled(&stage(bug), [blocks as u32, 1, 1], &mut a, schedule).map(|_| ());
    let y = a.take_buffer(1).unwrap().to_f32().unwrap();
    (r, x, y)
}

fn bug_of(bug: Bug) -> (AsyncBug, String) {
    match launch(bug).0 {
        Err(e @ InterpError::Async { kind, .. }) => (kind, e.to_string()),
        other => panic!("{bug:?}: expected an async bug, got {other:?}"),
    }
}

#[test]
fn a_correct_stage_gives_3x() {
    let (r, x, y) = launch(Bug::None);
    r.unwrap();
    for (i, (a, b)) in x.iter().zip(&y).enumerate() {
        assert_eq!(*b, 3.0 * a, "element {i}");
    }
}

#[test]
fn reading_before_the_copy_lands_is_named() {
    let (kind, text) = bug_of(Bug::NoWait);
    assert_eq!(kind, AsyncBug::ReadBeforeComplete);
    assert!(
        text.contains("\"buf\" element 0") && text.contains("cp.async.bulk.shared.global"),
        "{text}"
    );
    assert!(
        text.contains("thread [0, 0, 0]")
            || text.contains("thread (0, 0, 0)")
            || text.contains("[0, 0, 0]"),
        "{text}"
    );
    // waiting on parity 1 while phase 0 is in flight returns at once: the same read
    assert_eq!(bug_of(Bug::WrongParity).0, AsyncBug::ReadBeforeComplete);
}

#[test]
fn transaction_counts_that_differ_from_the_bytes_are_named() {
    let (kind, text) = bug_of(Bug::TxTooLarge);
    assert_eq!(kind, AsyncBug::TxMismatch);
    assert!(text.contains("1024 of the bytes announced by expect_tx never arrive"), "{text}");
    let (kind, text) = bug_of(Bug::TxTooSmall);
    assert_eq!(kind, AsyncBug::TxMismatch);
    assert!(text.contains("512 more bytes arrived"), "{text}");
}

#[test]
fn a_phase_nothing_can_complete_is_a_deadlock() {
    let (kind, text) = bug_of(Bug::TwoArrivalsExpected);
    assert_eq!(kind, AsyncBug::Deadlock);
    assert!(text.contains("still needs 1 of 2 arrivals"), "{text}");
}

#[test]
fn bulk_stores_need_fenced_writes_and_a_retired_read() {
    let (kind, text) = bug_of(Bug::NoProxyFence);
    assert_eq!(kind, AsyncBug::MissingProxyFence);
    assert!(text.contains("\"out\"") && text.contains("never ran"), "{text}");
    assert_eq!(bug_of(Bug::OverwriteBeforeWaitRead).0, AsyncBug::OverwriteWhileStoreReads);
    assert_eq!(bug_of(Bug::NoWaitRead).0, AsyncBug::StoreReadAtExit);
}

#[test]
fn barriers_must_be_initialised_and_are_not_data() {
    assert_eq!(bug_of(Bug::NoInit).0, AsyncBug::Uninitialized);
    let (kind, text) = bug_of(Bug::BarrierAsData);
    assert_eq!(kind, AsyncBug::BarrierAsData);
    assert!(text.contains("\"full\""), "{text}");
}

#[test]
fn misaligned_bulk_copies_are_named() {
    let (kind, text) = bug_of(Bug::Misaligned);
    assert_eq!(kind, AsyncBug::BadBulkCopy);
    assert!(text.contains("multiples of 16"), "{text}");
}

#[test]
fn elect_picks_one_lane_per_warp() {
    let b = KernelBuilder::new("elect", [96, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let leader = b.elect();
    let v = b.select(&leader, &lit(1), &lit(0)).unwrap();
    b.store(y, &b.thread_id(Axis::X), &[v], None).unwrap();
    let k = b.finish().unwrap();
    let mut a = Args::new();
    a.buffer(HostBuffer::from_i32(&[-1; 96]));
    run(&k, [1, 1, 1], &mut a).unwrap();
    let got = a.take_buffer(0).unwrap().to_i32().unwrap();
    let want: Vec<i32> = (0..96).map(|t| i32::from(t % 32 == 0)).collect();
    assert_eq!(got, want);
}

fn setmaxnreg_kernel(threads: u32, active: i64) -> Kernel {
    let b = KernelBuilder::new("regs", [threads, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let tid = b.thread_id(Axis::X);
    let some = b.cmp(CmpOp::Lt, &tid, &lit(active)).unwrap();
    b.if_then(&some, |b| b.setmaxnreg(false, 40)).unwrap();
    b.store(y, &tid, std::slice::from_ref(&tid), None).unwrap();
    b.finish().unwrap()
}

#[test]
fn setmaxnreg_is_executed_by_whole_warpgroups() {
    let go = |threads: u32, active: i64| {
        let mut a = Args::new();
        a.buffer(HostBuffer::from_i32(&vec![-1; threads as usize]));
        run(&setmaxnreg_kernel(threads, active), [1, 1, 1], &mut a)
    };
    go(256, 128).unwrap(); // the first warpgroup
    go(256, 256).unwrap();
    for (threads, active) in [(256u32, 64i64), (96, 96)] {
        match go(threads, active) {
            Err(InterpError::Async { kind: AsyncBug::WarpgroupDivergence, detail, .. }) => {
                assert!(detail.contains("setmaxnreg 40"), "{detail}")
            }
            other => panic!("{threads} threads, {active} active: {other:?}"),
        }
    }
}

#[test]
fn the_stage_under_the_warp_schedule_gives_the_same_values_and_errors() {
    let (r, x, y) = launch_scheduled(Bug::None, Schedule::Warps);
    r.unwrap();
    for (i, (a, b)) in x.iter().zip(&y).enumerate() {
        assert_eq!(*b, 3.0 * a, "element {i}");
    }
    for bug in [
        Bug::NoWait,
        Bug::TxTooSmall,
        Bug::NoProxyFence,
        Bug::OverwriteBeforeWaitRead,
        Bug::NoWaitRead,
        Bug::NoInit,
        Bug::BarrierAsData,
        Bug::Misaligned,
    ] {
        let want = match bug {
            // warp 1 runs on past the block barrier and reads the buffer before warp 0 has
            // issued the copy: the copy then overwrites an unordered read
            Bug::NoWait => AsyncBug::OverwriteWhileRead,
            // warp 1 overwrites its part of `out` before warp 0's store copies it: the store
            // would copy data written after the last fence
            Bug::OverwriteBeforeWaitRead => AsyncBug::MissingProxyFence,
            _ => bug_of(bug).0,
        };
        match launch_scheduled(bug, Schedule::Warps).0 {
            Err(InterpError::Async { kind, .. }) => assert_eq!(kind, want, "{bug:?}"),
            other => panic!("{bug:?}: expected {want:?}, got {other:?}"),
        }
    }
    // a phase nothing can complete: every warp waits, listed
    match launch_scheduled(Bug::TwoArrivalsExpected, Schedule::Warps).0 {
        Err(InterpError::WarpDeadlock { warps, .. }) => {
            assert_eq!(warps.iter().map(|w| w.warp).collect::<Vec<_>>(), vec![0, 1]);
            assert!(warps[1].waits.contains("still needs 1 of 2 arrivals"), "{warps:?}");
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}
