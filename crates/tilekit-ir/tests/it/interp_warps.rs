//! The interpreter's independent warp schedule: kernels whose warps wait on each other in the
//! two branches of an `if` (which lockstep cannot run) give the CPU reference's values, alone
//! and in clusters; named barriers synchronise subsets of warps (`bar.arrive` releases a
//! `bar.sync`); and each misuse is named — a deadlock lists every blocked warp with its
//! barrier, a warp arriving twice at a named barrier, a named barrier reached by part of a
//! warp, setmaxnreg by part of a warp — while races between warps are still found.

use tilekit_ir::interp::{run, run_scheduled, Args, AsyncBug, HostBuffer, InterpError, Schedule};
use tilekit_ir::lit;
use tilekit_ir::{Axis, BinOp, CmpOp, Kernel, KernelBuilder, ScalarType};

/// Random-looking f32 inputs (xorshift).
fn inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 16.0 - 8.0
        })
        .collect()
}

const ROUNDS: i64 = 5;

/// Two warps hand `ROUNDS` chunks of 32 values through one shared buffer: warp 0 (producer)
/// waits for `empty`, writes `3x` and arrives on `full`; warp 1 (consumer) waits for `full`,
/// reads the chunk reversed, arrives on `empty` and writes `v + 1`. Each loop waits on
/// arrivals the other branch's loop makes: only independent scheduling runs it.
fn ping_pong(cluster: bool) -> Kernel {
    let b = KernelBuilder::new("ping_pong", [64, 1, 1]).unwrap();
    if cluster {
        b.set_cluster_dim([2, 1, 1]).unwrap();
    }
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let data = b.shared("data", ScalarType::F32, 32).unwrap();
    let full = b.mbarrier("full", 1).unwrap();
    let empty = b.mbarrier("empty", 1).unwrap();
    let tid = b.thread_id(Axis::X);
    let lane = b.lane_id();
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
    b.if_then(&first, |b| {
        b.mbarrier_init(full, &lit(0), &lit(32))?;
        b.mbarrier_init(empty, &lit(0), &lit(32))?;
        b.fence_mbarrier_init();
        Ok(())
    })
    .unwrap();
    b.barrier();
    let base = b.block_id(Axis::X) * lit(ROUNDS * 32);
    let producer = b.cmp(CmpOp::Eq, &b.warp_id(), &lit(0)).unwrap();
    b.if_then_else(
        &producer,
        |b| {
            b.for_range(&lit(0), &lit(ROUNDS), &lit(1), &[], |b, r, _| {
                b.mbarrier_wait(empty, &lit(0), &((r.clone() + lit(1)) % lit(2)))?;
                let v = b.load(x, &(base.clone() + r * lit(32) + lane.clone()), 1, None)?;
                let w = b.binary(BinOp::Mul, &v[0], &b.f32(3.0))?;
                b.store(data, &lane, &[w], None)?;
                b.mbarrier_arrive(full, &lit(0), None)?;
                Ok(vec![])
            })?;
            Ok(vec![])
        },
        |b| {
            b.for_range(&lit(0), &lit(ROUNDS), &lit(1), &[], |b, r, _| {
                b.mbarrier_wait(full, &lit(0), &(r.clone() % lit(2)))?;
                let v = b.load(data, &(lit(31) - lane.clone()), 1, None)?;
                b.mbarrier_arrive(empty, &lit(0), None)?;
                let w = b.binary(BinOp::Add, &v[0], &b.f32(1.0))?;
                b.store(y, &(base.clone() + r * lit(32) + lane.clone()), &[w], None)?;
                Ok(vec![])
            })?;
            Ok(vec![])
        },
    )
    .unwrap();
    b.finish().unwrap()
}

fn ping_pong_reference(x: &[f32]) -> Vec<f32> {
    let mut y = vec![0.0; x.len()];
    for (c, out) in x.chunks(32).zip(y.chunks_mut(32)) {
        for l in 0..32 {
            out[l] = c[31 - l] * 3.0 + 1.0;
        }
    }
    y
}

#[test]
fn two_warps_handing_chunks_through_mbarriers_match_the_reference() {
    for (cluster, blocks) in [(false, 3usize), (true, 4)] {
        let n = blocks * ROUNDS as usize * 32;
        let x = inputs(n, 17 + blocks as u64);
        let mut a = Args::new();
        a.buffer(HostBuffer::from_f32(&x)).buffer(HostBuffer::from_f32(&vec![f32::NAN; n]));
        run(&ping_pong(cluster), [blocks as u32, 1, 1], &mut a)
            .unwrap_or_else(|e| panic!("cluster {cluster}: {e}"));
        let y = a.take_buffer(1).unwrap().to_f32().unwrap();
        let want = ping_pong_reference(&x);
        for (i, (g, w)) in y.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "cluster {cluster}, element {i}: {g} vs {w}");
        }
    }
}

/// 64 threads; warp 0 writes `x[tid] + 1` to shared memory and `bar.arrive 1, 64` (twice when
/// `twice`), warp 1 `bar.sync 1, 64` and writes the other warp's value to `y`.
fn arrive_then_sync(twice: bool, partial: bool) -> Kernel {
    let b = KernelBuilder::new("arrive_then_sync", [64, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let s = b.shared("s", ScalarType::F32, 32).unwrap();
    let tid = b.thread_id(Axis::X);
    let lane = b.lane_id();
    let producer = b.cmp(CmpOp::Eq, &b.warp_id(), &lit(0)).unwrap();
    b.if_then_else(
        &producer,
        |b| {
            let v = b.load(x, &tid, 1, None)?;
            let w = b.binary(BinOp::Add, &v[0], &b.f32(1.0))?;
            b.store(s, &lane, &[w], None)?;
            b.named_barrier_arrive(1, 64)?;
            if twice {
                b.named_barrier_arrive(1, 64)?;
            }
            Ok(vec![])
        },
        |b| {
            if partial {
                let low = b.cmp(CmpOp::Lt, &lane, &lit(16))?;
                b.if_then(&low, |b| b.named_barrier(1, 64))?;
            } else {
                b.named_barrier(1, 64)?;
            }
            let v = b.load(s, &lane, 1, None)?;
            b.store(y, &lane, &v, None)?;
            Ok(vec![])
        },
    )
    .unwrap();
    b.finish().unwrap()
}

fn launch(k: &Kernel, n_in: usize, n_out: usize) -> (Result<(), InterpError>, Vec<f32>, Vec<f32>) {
    let x = inputs(n_in, 5);
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&x)).buffer(HostBuffer::from_f32(&vec![f32::NAN; n_out]));
    let r = run(k, [1, 1, 1], &mut a).map(|_| ());
    (r, x, a.take_buffer(1).unwrap().to_f32().unwrap())
}

#[test]
fn bar_arrive_releases_a_bar_sync_of_the_other_warp() {
    let (r, x, y) = launch(&arrive_then_sync(false, false), 64, 32);
    r.unwrap();
    for l in 0..32 {
        assert_eq!(y[l], x[l] + 1.0, "lane {l}");
    }
}

#[test]
fn a_warp_arriving_twice_in_one_generation_is_named() {
    let e = launch(&arrive_then_sync(true, false), 64, 32).0.unwrap_err();
    let InterpError::NamedBarrier { id, warp, ref detail, ref inst, .. } = e else {
        panic!("expected a named-barrier error: {e}")
    };
    assert_eq!((id, warp), (1, 0), "{e}");
    assert!(inst.contains("bar.arrive 1, 64"), "{e}");
    assert!(detail.contains("already arrived") && detail.contains("32 of 64 threads"), "{e}");
}

#[test]
fn a_named_barrier_reached_by_part_of_a_warp_is_divergence() {
    let e = launch(&arrive_then_sync(false, true), 64, 32).0.unwrap_err();
    let InterpError::BarrierDivergence { thread, ref inst, .. } = e else {
        panic!("expected barrier divergence: {e}")
    };
    assert_eq!(thread, [48, 0, 0], "{e}"); // lane 16 of warp 1
    assert!(inst.contains("bar.sync 1, 64"), "{e}");
}

#[test]
fn a_wait_nothing_arrives_on_is_a_deadlock_naming_the_warp_and_barrier() {
    let b = KernelBuilder::new("stuck", [96, 1, 1]).unwrap();
    b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let flag = b.mbarrier("flag", 2).unwrap();
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
    b.if_then(&first, |b| {
        b.mbarrier_init(flag, &lit(1), &lit(1))?;
        b.fence_mbarrier_init();
        Ok(())
    })
    .unwrap();
    b.barrier();
    let waiter = b.cmp(CmpOp::Eq, &b.warp_id(), &lit(2)).unwrap();
    b.if_then(&waiter, |b| {
        b.mbarrier_wait(flag, &lit(1), &lit(0))?;
        b.store(y, &tid, &[b.f32(1.0)], None)
    })
    .unwrap();
    let k = b.finish().unwrap();
    let e = launch(&k, 0, 96).0.unwrap_err();
    let InterpError::WarpDeadlock { ref warps, block } = e else {
        panic!("expected deadlock: {e}")
    };
    assert_eq!(block, [0, 0, 0]);
    assert_eq!(warps.len(), 1, "{e}");
    assert_eq!(warps[0].warp, 2);
    assert!(warps[0].inst.contains("mbarrier.try_wait.parity flag"), "{e}");
    assert_eq!(
        warps[0].waits,
        "mbarrier \"flag\"[1] parity 0: phase 0 (parity 0) still needs 1 of 1 arrivals and 0 bytes"
    );
    assert!(e.to_string().contains("warp 2 of block [0, 0, 0] (threads 64..96) waits in"), "{e}");
}

/// Thread 0 and thread 32 (two warps) write one shared element; with `sync`, a named barrier
/// orders them and thread 32 reads instead.
fn two_writers(sync: bool) -> Kernel {
    let b = KernelBuilder::new("two_writers", [64, 1, 1]).unwrap();
    b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let s = b.shared("s", ScalarType::F32, 4).unwrap();
    let tid = b.thread_id(Axis::X);
    let t0 = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
    b.if_then(&t0, |b| b.store(s, &lit(0), &[b.f32(1.0)], None)).unwrap();
    if sync {
        b.named_barrier(1, 64).unwrap();
    }
    let t32 = b.cmp(CmpOp::Eq, &tid, &lit(32)).unwrap();
    b.if_then(&t32, |b| {
        if sync {
            let v = b.load(s, &lit(0), 1, None)?;
            b.store(y, &lit(0), &v, None)
        } else {
            b.store(s, &lit(0), &[b.f32(2.0)], None)?;
            b.named_barrier(1, 32)
        }
    })
    .unwrap();
    b.finish().unwrap()
}

#[test]
fn races_between_warps_are_still_found() {
    let e = launch(&two_writers(false), 0, 1).0.unwrap_err();
    let InterpError::SharedRace { ref first, ref second, ref mem, .. } = e else {
        panic!("expected a shared race: {e}")
    };
    assert_eq!(mem, "s");
    assert_eq!((first.thread, second.thread), ([0, 0, 0], [32, 0, 0]), "{e}");
    assert!(first.write && second.write, "{e}");
    let (r, _, y) = launch(&two_writers(true), 0, 1);
    r.unwrap();
    assert_eq!(y, vec![1.0]);
}

#[test]
fn setmaxnreg_by_part_of_a_warp_is_named_in_warp_mode() {
    let b = KernelBuilder::new("half", [128, 1, 1]).unwrap();
    let lane = b.lane_id();
    let low = b.cmp(CmpOp::Lt, &lane, &lit(8)).unwrap();
    b.if_then(&low, |b| b.setmaxnreg(false, 40)).unwrap();
    b.named_barrier(0, 128).unwrap();
    let e = run(&b.finish().unwrap(), [1, 1, 1], &mut Args::new()).unwrap_err();
    let InterpError::Async { kind, thread, .. } = e else { panic!("expected async: {e}") };
    assert_eq!(kind, AsyncBug::WarpgroupDivergence);
    assert_eq!(thread, [8, 0, 0]);
}

#[test]
fn named_barrier_arguments_are_checked_by_the_builder() {
    let b = KernelBuilder::new("k", [96, 1, 1]).unwrap();
    let e = b.named_barrier(16, 64).unwrap_err().to_string();
    assert!(e.contains("barrier id = 16") && e.contains("0..16"), "{e}");
    let e = b.named_barrier_arrive(3, 40).unwrap_err().to_string();
    assert!(e.contains("thread count = 40") && e.contains("multiple of 32"), "{e}");
    let e = b.named_barrier(3, 128).unwrap_err().to_string();
    assert!(e.contains("at most 96"), "{e}");
    assert!(b.named_barrier(15, 96).is_ok());
}

/// Warp 1 writes `s[lane] = x[lane]` and arrives on `flag` (32 arrivals); warp 0 waits on it
/// and copies `s` to `y` — or, with `early`, reads `s` before its wait.
fn flag_handoff(early: bool) -> Kernel {
    let b = KernelBuilder::new("flag_handoff", [64, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let s = b.shared("s", ScalarType::F32, 32).unwrap();
    let flag = b.mbarrier("flag", 1).unwrap();
    let tid = b.thread_id(Axis::X);
    let lane = b.lane_id();
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
    b.if_then(&first, |b| {
        b.mbarrier_init(flag, &lit(0), &lit(32))?;
        b.fence_mbarrier_init();
        Ok(())
    })
    .unwrap();
    b.barrier();
    let writer = b.cmp(CmpOp::Eq, &b.warp_id(), &lit(1)).unwrap();
    b.if_then_else(
        &writer,
        |b| {
            let v = b.load(x, &lane, 1, None)?;
            b.store(s, &lane, &v, None)?;
            b.mbarrier_arrive(flag, &lit(0), None)?;
            Ok(vec![])
        },
        |b| {
            let v = if early {
                let v = b.load(s, &lane, 1, None)?;
                b.mbarrier_wait(flag, &lit(0), &lit(0))?;
                v
            } else {
                b.mbarrier_wait(flag, &lit(0), &lit(0))?;
                b.load(s, &lane, 1, None)?
            };
            b.store(y, &lane, &v, None)?;
            Ok(vec![])
        },
    )
    .unwrap();
    b.finish().unwrap()
}

#[test]
fn a_read_before_its_wait_races_with_the_write_the_wait_orders() {
    let (r, x, y) = launch(&flag_handoff(false), 64, 32);
    r.unwrap();
    assert_eq!(y, x[..32]);
    // warp 1 completes the block barrier and runs on: it writes and completes the phase
    // before warp 0 runs, so the early read even sees the value — but nothing orders the
    // write before it (warp 0 acquires the phase only at its wait): the clocks say so
    let e = launch(&flag_handoff(true), 32, 32).0.unwrap_err();
    let InterpError::SharedRace { ref first, ref second, .. } = e else {
        panic!("expected a shared race: {e}")
    };
    assert_eq!((first.thread, first.write), ([32, 0, 0], true), "{e}");
    assert_eq!((second.thread, second.write), ([0, 0, 0], false), "{e}");
    assert!(e.to_string().contains("ld.shared.f32 s"), "{e}");
}

#[test]
fn setmaxnreg_by_part_of_a_warpgroup_is_named_when_the_block_ends() {
    // warps 0 and 1 of warpgroup 0 give registers away; warps 2 and 3 never do
    let b = KernelBuilder::new("half_group", [128, 1, 1]).unwrap();
    let low = b.cmp(CmpOp::Lt, &b.warp_id(), &lit(2)).unwrap();
    b.if_then(&low, |b| b.setmaxnreg(false, 40)).unwrap();
    b.named_barrier(0, 128).unwrap();
    let e = run(&b.finish().unwrap(), [1, 1, 1], &mut Args::new()).unwrap_err();
    let InterpError::Async { kind, thread, ref detail, .. } = e else {
        panic!("expected async: {e}")
    };
    assert_eq!(kind, AsyncBug::WarpgroupDivergence);
    assert_eq!(thread, [0, 0, 0]);
    assert!(detail.contains("only warps [0, 1]"), "{e}");
}

#[test]
fn warps_specialised_by_a_loop_bound_fail_in_lockstep_with_advice() {
    // warp 1 loops once waiting on `flag`, warp 0 loops zero times and arrives after its loop:
    // no `if`, so the block runs in lockstep, and the wait cannot return
    let b = KernelBuilder::new("loop_bound", [64, 1, 1]).unwrap();
    let flag = b.mbarrier("flag", 1).unwrap();
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
    b.if_then(&first, |b| {
        b.mbarrier_init(flag, &lit(0), &lit(32))?;
        b.fence_mbarrier_init();
        Ok(())
    })
    .unwrap();
    b.barrier();
    let w = b.warp_id();
    b.for_range(&lit(0), &w, &lit(1), &[], |b, _, _| {
        b.mbarrier_wait(flag, &lit(0), &lit(0))?;
        Ok(vec![])
    })
    .unwrap();
    let zero = b.cmp(CmpOp::Eq, &w, &lit(0)).unwrap();
    b.if_then(&zero, |b| b.mbarrier_arrive(flag, &lit(0), None)).unwrap();
    let e = run(&b.finish().unwrap(), [1, 1, 1], &mut Args::new()).unwrap_err();
    let InterpError::Async { kind, ref detail, .. } = e else { panic!("expected async: {e}") };
    assert_eq!(kind, AsyncBug::Deadlock);
    assert!(detail.contains("32 of its 64 threads are not at this wait"), "{e}");
    assert!(detail.contains("put the wait in an `if` on the warp"), "{e}");
}

/// A 2-block cluster under the warp schedule (a named barrier puts it there): each block
/// stages `x` in shared memory, a cluster barrier publishes it (left out with `bug`), each
/// thread adds the peer block's element, and a last cluster barrier keeps the blocks alive
/// while their peers read.
fn cluster_pairs(bug: bool) -> Kernel {
    let b = KernelBuilder::new("cluster_pairs", [64, 1, 1]).unwrap();
    b.set_cluster_dim([2, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let s = b.shared("s", ScalarType::F32, 64).unwrap();
    let tid = b.thread_id(Axis::X);
    let g = b.block_id(Axis::X) * lit(64) + tid.clone();
    let v = b.load(x, &g, 1, None).unwrap();
    b.store(s, &tid, &v, None).unwrap();
    b.named_barrier(1, 64).unwrap();
    if !bug {
        b.cluster_barrier().unwrap();
    }
    let peer = lit(1) - b.cluster_cta_rank();
    let p = b.load_cluster(s, &peer, &tid, 1).unwrap();
    let w = b.binary(BinOp::Add, &v[0], &p[0]).unwrap();
    b.store(y, &g, &[w], None).unwrap();
    b.cluster_barrier().unwrap();
    b.finish().unwrap()
}

#[test]
fn clusters_run_under_the_warp_schedule_with_their_barriers() {
    let n = 4 * 64;
    let x = inputs(n, 99);
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&x)).buffer(HostBuffer::from_f32(&vec![f32::NAN; n]));
    run(&cluster_pairs(false), [4, 1, 1], &mut a).unwrap();
    let y = a.take_buffer(1).unwrap().to_f32().unwrap();
    for i in 0..n {
        let peer = ((i / 64) ^ 1) * 64 + i % 64;
        assert_eq!(y[i], x[i] + x[peer], "element {i}");
    }
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&x)).buffer(HostBuffer::from_f32(&vec![f32::NAN; n]));
    // without the first cluster barrier, warp 1 of block 0 runs past its named barrier and
    // reads block 1's elements before block 1's warps have run at all: it gets uninitialised
    // values, named where they are stored
    let e = run(&cluster_pairs(true), [4, 1, 1], &mut a).unwrap_err();
    let InterpError::Poison { ref inst, thread, block, .. } = e else {
        panic!("expected an uninitialised value: {e}")
    };
    assert_eq!((block, thread), ([0, 0, 0], [32, 0, 0]), "{e}");
    assert!(inst.contains("st.global.f32 y"), "{e}");
}

#[test]
fn kernels_that_need_the_warp_schedule_fail_in_lockstep_with_a_reason() {
    let n = ROUNDS as usize * 32;
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&inputs(n, 3))).buffer(HostBuffer::from_f32(&vec![f32::NAN; n]));
    let e = run_scheduled(&ping_pong(false), [1, 1, 1], &mut a, Schedule::Lockstep).unwrap_err();
    let InterpError::Async { kind, ref detail, .. } = e else { panic!("expected async: {e}") };
    // warp 0's loop runs to its first wait before warp 1's loop starts
    assert_eq!(kind, AsyncBug::Deadlock, "{e}");
    assert!(detail.contains("32 of its 64 threads are not at this wait"), "{e}");
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&inputs(64, 3))).buffer(HostBuffer::from_f32(&[f32::NAN; 32]));
    let k = arrive_then_sync(false, false);
    let e = run_scheduled(&k, [1, 1, 1], &mut a, Schedule::Lockstep).unwrap_err();
    assert!(matches!(e, InterpError::InvalidKernel { .. }), "{e}");
    assert!(e.to_string().contains("needs the independent warp schedule"), "{e}");
}
