//! Thread-block clusters in the interpreter: distributed shared memory between the blocks of a
//! cluster gives the right values, and the bugs clusters make possible — reading a peer's
//! shared memory before a `barrier.cluster`, overwriting it while a peer may still read it,
//! exiting while a peer may still read it, naming a rank outside the cluster, a grid that is not
//! a multiple of the cluster — are named errors. A ring of stages filled by multicast copies
//! from both blocks runs when consumers release each stage on both blocks' `empty` barriers
//! (`mbarrier.arrive.shared::cluster`); releasing only the own block, a remote arrival with no
//! `barrier.cluster` after it, and a rank outside the cluster are named.

use tilekit_ir::interp::{run, Args, AsyncBug, HostBuffer, InterpError};
use tilekit_ir::tma::{OobFill, TensorMapArg, TensorMapSpec, TmaSwizzle};
use tilekit_ir::{Axis, BinOp, CmpOp, Kernel, KernelBuilder, ScalarType, ShflMode, Val};
use tilekit_layout::Idx;

const C: u32 = 4;

/// What the ring kernel leaves out or adds (each variant plants one bug).
#[derive(Clone, Copy, PartialEq)]
enum Bug {
    None,
    NoBarrierBeforeRead,
    NoBarrierAtExit,
    OwnerWritesAfterPeerRead,
    RankOutOfRange,
}

/// What [`ring_start`] declares.
struct Ring {
    y: tilekit_ir::MemRef,
    s: tilekit_ir::MemRef,
    t: Val,
    r: Val,
    blk: Val,
}

/// A cluster kernel of 4 blocks of `threads` whose block r has written
/// `s[t] = 1000·block + 100·r + t` to its shared `s`; `y` is the output.
fn ring_start(name: &str, threads: u32) -> (KernelBuilder, Ring) {
    let b = KernelBuilder::new(name, [threads, 1, 1]).unwrap();
    b.set_cluster_dim([C, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let s = b.shared("s", ScalarType::F32, threads as usize).unwrap();
    let t = b.thread_id(Axis::X);
    let r = b.cluster_cta_rank();
    let blk = b.block_id(Axis::X);
    let v = blk.clone() * Idx::lit(1000) + r.clone() * Idx::lit(100) + t.clone();
    b.store(s, &t, &[b.cvt(&v, ScalarType::F32).unwrap()], None).unwrap();
    (b, Ring { y, s, t, r, blk })
}

/// Block r of a cluster of 4 writes `s[t] = 1000·block + 100·r + t`, then every thread reads
/// `s[t]` of the block with rank `(r + 1) mod 4` and stores it to `y[32·block + t]`.
fn ring(bug: Bug, threads: u32) -> Kernel {
    let (b, Ring { y, s, t, r, blk }) = ring_start("ring", threads);
    if bug != Bug::NoBarrierBeforeRead {
        b.cluster_barrier().unwrap();
    }
    let peer = if bug == Bug::RankOutOfRange {
        r.clone() + Idx::lit(C as i64)
    } else {
        (r.clone() + Idx::lit(1)) % Idx::lit(C as i64)
    };
    let got = b.load_cluster(s, &peer, &t, 1).unwrap();
    b.store(y, &(blk * Idx::lit(threads as i64) + t.clone()), &got, None).unwrap();
    if bug == Bug::OwnerWritesAfterPeerRead {
        b.store(s, &t, &[b.f32(-1.0)], None).unwrap();
    }
    if bug != Bug::NoBarrierAtExit {
        b.cluster_barrier().unwrap();
    }
    b.finish().unwrap()
}

fn args(n: usize) -> Args {
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&vec![f32::NAN; n]));
    a
}

#[test]
fn blocks_of_a_cluster_read_each_others_shared_memory() {
    for threads in [32u32, 48] {
        let k = ring(Bug::None, threads);
        let blocks = 3 * C; // three clusters
        let mut a = args((blocks * threads) as usize);
        let stats = run(&k, [blocks, 1, 1], &mut a).unwrap();
        assert_eq!(stats.blocks, blocks as u64);
        let y = a.take_buffer(0).unwrap().to_f32().unwrap();
        for blk in 0..blocks {
            let (rank, first) = (blk % C, blk - blk % C);
            let peer_rank = (rank + 1) % C;
            let peer_block = first + peer_rank;
            for t in 0..threads {
                let want = (1000 * peer_block + 100 * peer_rank + t) as f32;
                assert_eq!(y[(blk * threads + t) as usize], want, "block {blk} thread {t}");
            }
        }
    }
}

#[test]
fn reading_a_peer_before_the_cluster_barrier_is_a_race() {
    let e = run(&ring(Bug::NoBarrierBeforeRead, 32), [C, 1, 1], &mut args(128)).unwrap_err();
    match &e {
        InterpError::ClusterRace { mem, element, owner, first, second } => {
            assert_eq!((mem.as_str(), *element, *owner), ("s", 0, [1, 0, 0]));
            assert!(first.write && first.inst.starts_with("st.shared.f32"), "{e}");
            assert_eq!(first.block, [1, 0, 0]);
            assert!(!second.write && second.inst.contains("ld.shared::cluster"), "{e}");
            assert_eq!((second.block, second.thread), ([0, 0, 0], [0, 0, 0]));
        }
        other => panic!("expected a cluster race, got {other}"),
    }
    assert!(e.to_string().contains("no barrier.cluster between them"), "{e}");
}

#[test]
fn overwriting_what_a_peer_read_without_a_barrier_is_a_race() {
    let e = run(&ring(Bug::OwnerWritesAfterPeerRead, 32), [C, 1, 1], &mut args(128)).unwrap_err();
    match &e {
        InterpError::ClusterRace { owner, first, second, .. } => {
            // lockstep: block 0 is the first to overwrite its shared memory, which block 3 read
            assert_eq!(*owner, [0, 0, 0]);
            assert!(!first.write && first.block == [3, 0, 0], "{e}");
            assert!(second.write && second.block == [0, 0, 0], "{e}");
        }
        other => panic!("expected a cluster race, got {other}"),
    }
}

#[test]
fn exiting_while_a_peer_may_still_read_is_an_error() {
    let e = run(&ring(Bug::NoBarrierAtExit, 32), [C, 1, 1], &mut args(128)).unwrap_err();
    assert!(matches!(e, InterpError::ClusterExit { .. }), "{e}");
    assert!(e.to_string().contains("end the kernel with a barrier.cluster"), "{e}");
}

#[test]
fn a_rank_outside_the_cluster_and_a_grid_off_the_cluster_are_errors() {
    let e = run(&ring(Bug::RankOutOfRange, 32), [C, 1, 1], &mut args(128)).unwrap_err();
    match e {
        InterpError::ClusterRank { rank, size, block, .. } => {
            assert_eq!((rank, size, block), (4, 4, [0, 0, 0]))
        }
        other => panic!("expected a rank error, got {other}"),
    }
    let e = run(&ring(Bug::None, 32), [6, 1, 1], &mut args(192)).unwrap_err();
    assert_eq!(e, InterpError::ClusterGrid { grid: [6, 1, 1], cluster: [4, 1, 1] });
    assert!(e.to_string().contains("not a multiple"), "{e}");
}

#[test]
fn warps_and_block_ids_stay_inside_each_block_of_a_cluster() {
    // 48 threads: warp 1 of every block is partial; a shuffle broadcasts lane 0 of each warp,
    // and y records (block id, rank, warp, lane) of every thread
    let threads = 48u32;
    let b = KernelBuilder::new("ids", [threads, 1, 1]).unwrap();
    b.set_cluster_dim([2, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::U32).unwrap();
    let t = b.thread_id(Axis::X);
    let code = b.block_id(Axis::X) * Idx::lit(1000)
        + b.cluster_cta_rank() * Idx::lit(100)
        + b.warp_id() * Idx::lit(10);
    let lane0 = b.shfl(ShflMode::Idx, &(code.clone() + t.clone()), &Val::lit(0)).unwrap();
    let base = b.block_id(Axis::X) * Idx::lit(2 * threads as i64) + t.clone() * Idx::lit(2);
    let vals = [code + b.lane_id(), lane0].map(|v| b.cvt(&v, ScalarType::U32).unwrap());
    b.store(y, &base, &vals, None).unwrap();
    let k = b.finish().unwrap();
    let mut a = Args::new();
    a.buffer(HostBuffer::from_u32(&vec![u32::MAX; (4 * 2 * threads) as usize]));
    run(&k, [4, 1, 1], &mut a).unwrap();
    let got = a.take_buffer(0).unwrap().to_u32().unwrap();
    for blk in 0..4u32 {
        for t in 0..threads {
            let (w, l) = (t / 32, t % 32);
            let code = 1000 * blk + 100 * (blk % 2) + 10 * w;
            let at = (blk * 2 * threads + 2 * t) as usize;
            assert_eq!((got[at], got[at + 1]), (code + l, code + 32 * w), "block {blk} t {t}");
        }
    }
}

#[test]
fn cluster_dims_are_checked_by_the_builder() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    assert!(b.set_cluster_dim([0, 1, 1]).is_err());
    assert!(b.set_cluster_dim([4, 4, 2]).unwrap_err().to_string().contains("at most 16"));
    b.keep(&b.thread_id(Axis::X));
    let e = b.set_cluster_dim([2, 1, 1]).unwrap_err().to_string();
    assert!(e.contains("before building any instruction"), "{e}");
    let s = b.shared("s", ScalarType::F32, 4).unwrap();
    assert!(b.load_cluster(s, &Idx::lit(0), &Idx::lit(0), 1).is_err()); // no cluster
    let k = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    k.set_cluster_dim([4, 2, 2]).unwrap();
    assert_eq!(k.finish().unwrap().cluster_size(), 16);
}

/// What the shared-ring kernel gets wrong (each variant plants one bug).
#[derive(Clone, Copy, PartialEq, Debug)]
enum RingBug {
    None,
    /// consumers release only their own block's stage (count 32, a local arrive)
    LocalRelease,
    /// no barrier.cluster at the end: a peer may exit before the remote arrivals
    NoBarrierAtExit,
    /// the remote arrival names rank 2 of a 2-block cluster
    RankOutOfRange,
}

const RING_ROUNDS: i64 = 5;

/// A ring of 2 stages of 64 f32 shared by a 2-block cluster: per round, the producer thread
/// of rank r multicasts its half (32 values of `x`) into the stage of both blocks; each block's
/// consumer warp waits for the whole stage, writes `v + 1000·r` to `y` and releases the stage
/// with an arrival on the `empty` barrier of **both** blocks (each expects 2 × 32 arrivals), so
/// neither producer refills a stage that a peer still reads.
/// `tensor`: the halves travel by TMA tensor copies (boxes of 32 × 1 of `x` viewed as rows of
/// 64) instead of bulk copies.
fn shared_ring(bug: RingBug, tensor: bool) -> Kernel {
    let b = KernelBuilder::new("shared_ring", [64, 1, 1]).unwrap();
    b.set_cluster_dim([2, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let spec =
        TensorMapSpec::new(ScalarType::F32, &[32, 1], TmaSwizzle::None, OobFill::Zero).unwrap();
    let xm = if tensor { Some(b.tensor_map_param("xm", x, spec).unwrap()) } else { None };
    let buf = b.shared("buf", ScalarType::F32, 128).unwrap();
    let full = b.mbarrier("full", 2).unwrap();
    let empty = b.mbarrier("empty", 2).unwrap();
    let tid = b.thread_id(Axis::X);
    let lane = b.lane_id();
    let rank = b.cluster_cta_rank();
    let releases = if bug == RingBug::LocalRelease { 32 } else { 64 };
    let first = b.cmp(CmpOp::Eq, &tid, &Idx::lit(0)).unwrap();
    b.if_then(&first, |b| {
        for s in 0..2 {
            b.mbarrier_init(full, &Idx::lit(s), &Idx::lit(1))?;
            b.mbarrier_init(empty, &Idx::lit(s), &Idx::lit(releases))?;
        }
        b.fence_mbarrier_init();
        Ok(())
    })
    .unwrap();
    // every block's barriers are initialised before a peer copies or arrives on them
    b.cluster_barrier().unwrap();
    let cluster = b.block_id(Axis::X) / Idx::lit(2);
    let producer = b.cmp(CmpOp::Eq, &b.warp_id(), &Idx::lit(0)).unwrap();
    b.if_then_else(
        &producer,
        |b| {
            b.if_then(&first, |b| {
                b.for_range(&Idx::lit(0), &Idx::lit(RING_ROUNDS), &Idx::lit(1), &[], |b, i, _| {
                    let s = i.clone() % Idx::lit(2);
                    let parity = (i.clone() / Idx::lit(2) + Idx::lit(1)) % Idx::lit(2);
                    b.mbarrier_wait(empty, &s, &parity)?;
                    b.mbarrier_arrive(full, &s, Some(&Idx::lit(64 * 4)))?;
                    let row = cluster.clone() * Idx::lit(RING_ROUNDS) + i;
                    let src = row.clone() * Idx::lit(64) + rank.clone() * Idx::lit(32);
                    let dst = s.clone() * Idx::lit(64) + rank.clone() * Idx::lit(32);
                    let mask = Idx::lit(3);
                    if let Some(xm) = xm {
                        let xy = [
                            b.cvt(&(rank.clone() * Idx::lit(32)), ScalarType::I32)?,
                            b.cvt(&row, ScalarType::I32)?,
                        ];
                        b.tensor_load_multicast(buf, &dst, xm, &xy, full, &s, &mask)?;
                        return Ok(vec![]);
                    }
                    b.bulk_load_multicast(
                        buf,
                        &dst,
                        x,
                        &src,
                        &Idx::lit(32),
                        full,
                        &(dst.clone() / Idx::lit(64)),
                        &mask,
                    )?;
                    Ok(vec![])
                })?;
                Ok(())
            })?;
            Ok(vec![])
        },
        |b| {
            b.for_range(&Idx::lit(0), &Idx::lit(RING_ROUNDS), &Idx::lit(1), &[], |b, i, _| {
                let s = i.clone() % Idx::lit(2);
                b.mbarrier_wait(full, &s, &((i.clone() / Idx::lit(2)) % Idx::lit(2)))?;
                let v = b.load(buf, &(s.clone() * Idx::lit(64) + lane.clone()), 1, None)?;
                let w = b.load(
                    buf,
                    &(s.clone() * Idx::lit(64) + Idx::lit(32) + lane.clone()),
                    1,
                    None,
                )?;
                match bug {
                    RingBug::LocalRelease => b.mbarrier_arrive(empty, &s, None)?,
                    RingBug::RankOutOfRange => {
                        b.mbarrier_arrive_cluster(empty, &s, &Idx::lit(2))?
                    }
                    _ => {
                        for r in 0..2 {
                            b.mbarrier_arrive_cluster(empty, &s, &Idx::lit(r))?;
                        }
                    }
                }
                let off = b.cvt(&(rank.clone() * Idx::lit(1000)), ScalarType::F32)?;
                let at =
                    (b.block_id(Axis::X) * Idx::lit(RING_ROUNDS) + i) * Idx::lit(64) + lane.clone();
                let v = b.binary(BinOp::Add, &v[0], &off)?;
                let w = b.binary(BinOp::Add, &w[0], &off)?;
                b.store(y, &at, &[v], None)?;
                b.store(y, &(at + Idx::lit(32)), &[w], None)?;
                Ok(vec![])
            })?;
            Ok(vec![])
        },
    )
    .unwrap();
    if bug != RingBug::NoBarrierAtExit {
        b.cluster_barrier().unwrap();
    }
    b.finish().unwrap()
}

fn run_ring(
    bug: RingBug,
    blocks: usize,
    tensor: bool,
) -> (Result<(), InterpError>, Vec<f32>, Vec<f32>) {
    let n = blocks * RING_ROUNDS as usize * 64;
    // distinct, non-zero values: element i of x is 0.25 + i·1.5 (mod a prime spread)
    let x: Vec<f32> = (0..n / 2).map(|i| ((i * 7919) % 1009) as f32 * 0.5 + 0.25).collect();
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&x)).buffer(HostBuffer::from_f32(&vec![f32::NAN; n]));
    if tensor {
        a.tensor_map(TensorMapArg::packed(&[64, (x.len() / 64) as u64], 4));
    }
    let r = run(&shared_ring(bug, tensor), [blocks as u32, 1, 1], &mut a).map(|_| ());
    let y = a.take_buffer(1).unwrap().to_f32().unwrap();
    (r, x, y)
}

fn async_kind(r: Result<(), InterpError>) -> (AsyncBug, String) {
    match r {
        Err(e @ InterpError::Async { kind, .. }) => (kind, e.to_string()),
        other => panic!("expected an async bug, got {other:?}"),
    }
}

#[test]
fn a_stage_released_on_both_blocks_of_a_cluster_carries_the_multicast_ring() {
    for (blocks, tensor) in [(2usize, false), (6, false), (4, true)] {
        let (r, x, y) = run_ring(RingBug::None, blocks, tensor);
        r.unwrap_or_else(|e| panic!("{blocks} blocks, tensor copies {tensor}: {e}"));
        for blk in 0..blocks {
            let (cluster, rank) = (blk / 2, blk % 2);
            for i in 0..RING_ROUNDS as usize {
                for e in 0..64 {
                    // both blocks of a cluster get the same 64 values, each half from one rank
                    let want =
                        x[(cluster * RING_ROUNDS as usize + i) * 64 + e] + 1000.0 * rank as f32;
                    let got = y[(blk * RING_ROUNDS as usize + i) * 64 + e];
                    assert_eq!(got, want, "block {blk} round {i} element {e}");
                }
            }
        }
    }
}

#[test]
fn releasing_only_the_own_block_lets_the_peer_overwrite_a_stage_being_read() {
    // bulk and tensor copies alike
    for tensor in [false, true] {
        let (r, _, _) = run_ring(RingBug::LocalRelease, 2, tensor);
        let (kind, text) = async_kind(r);
        assert_eq!(kind, AsyncBug::OverwriteWhileRead, "tensor copies {tensor}: {text}");
        assert!(text.contains("\"buf\"") && text.contains("nothing orders"), "{text}");
    }
}

#[test]
fn a_remote_arrival_without_a_cluster_barrier_after_it_is_named() {
    let (r, _, _) = run_ring(RingBug::NoBarrierAtExit, 2, false);
    let (kind, text) = async_kind(r);
    assert_eq!(kind, AsyncBug::RemoteArriveAtExit, "{text}");
    assert!(
        text.contains("mbarrier.arrive.shared::cluster") && text.contains("\"empty\""),
        "{text}"
    );
}

#[test]
fn a_remote_arrival_outside_the_cluster_is_named() {
    let (r, _, _) = run_ring(RingBug::RankOutOfRange, 2, false);
    match r {
        Err(InterpError::ClusterRank { rank, size, .. }) => assert_eq!((rank, size), (2, 2)),
        other => panic!("expected a rank error, got {other:?}"),
    }
}

/// What the split-barrier ring leaves out or adds.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Split {
    None,
    NoWait,
    WriteAfterArrive,
    WaitWithoutArrive,
}

/// [`ring`] with the exit barrier split: after reading its peer, each thread arrives
/// (`barrier.cluster.arrive`), stores its value again to `y[32·(blocks) + …]` (work after the
/// arrival), and waits (`barrier.cluster.wait`) at the end.
fn split_ring(bug: Split) -> Kernel {
    let threads = 32u32;
    let (b, Ring { y, s, t, r, blk }) = ring_start("split_ring", threads);
    b.cluster_barrier().unwrap();
    let peer = (r.clone() + Idx::lit(1)) % Idx::lit(C as i64);
    let got = b.load_cluster(s, &peer, &t, 1).unwrap();
    if bug != Split::WaitWithoutArrive {
        b.cluster_arrive().unwrap();
    }
    if bug == Split::WriteAfterArrive {
        b.store(s, &t, &[b.f32(-1.0)], None).unwrap();
    }
    // after the arrival: this block's own work (its output), no peer memory
    b.store(y, &(blk * Idx::lit(threads as i64) + t.clone()), &got, None).unwrap();
    if bug != Split::NoWait {
        b.cluster_wait().unwrap();
    }
    b.finish().unwrap()
}

#[test]
fn a_split_exit_barrier_lets_blocks_work_between_arrive_and_wait() {
    let k = split_ring(Split::None);
    assert!(k.to_string().contains("barrier.cluster.arrive"));
    let blocks = 2 * C;
    let mut a = args((blocks * 32) as usize);
    run(&k, [blocks, 1, 1], &mut a).unwrap();
    let y = a.take_buffer(0).unwrap().to_f32().unwrap();
    for blk in 0..blocks {
        let (rank, first) = (blk % C, blk - blk % C);
        let peer_rank = (rank + 1) % C;
        for t in 0..32 {
            let want = (1000 * (first + peer_rank) + 100 * peer_rank + t) as f32;
            assert_eq!(y[(blk * 32 + t) as usize], want, "block {blk} thread {t}");
        }
    }
    // lockstep cannot run it: a named error, not a silent wrong order
    let e = tilekit_ir::interp::run_scheduled(
        &k,
        [C, 1, 1],
        &mut args(128),
        tilekit_ir::interp::Schedule::Lockstep,
    )
    .unwrap_err();
    assert!(e.to_string().contains("warp schedule"), "{e}");
}

#[test]
fn split_barrier_misuse_is_named() {
    // ending after the arrival without waiting, overwriting the shared memory a peer may
    // still read after the arrival, waiting without arriving
    let e = run(&split_ring(Split::NoWait), [C, 1, 1], &mut args(128)).unwrap_err();
    assert!(e.to_string().contains("without barrier.cluster.wait"), "{e}");
    let e = run(&split_ring(Split::WriteAfterArrive), [C, 1, 1], &mut args(128)).unwrap_err();
    assert!(matches!(e, InterpError::ClusterRace { .. }), "{e}");
    let e = run(&split_ring(Split::WaitWithoutArrive), [C, 1, 1], &mut args(128)).unwrap_err();
    assert!(e.to_string().contains("waits without having arrived"), "{e}");
}
