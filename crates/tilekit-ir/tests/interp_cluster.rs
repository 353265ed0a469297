//! Thread-block clusters in the interpreter: distributed shared memory between the blocks of a
//! cluster gives the right values, and the bugs clusters make possible — reading a peer's
//! shared memory before a `barrier.cluster`, overwriting it while a peer may still read it,
//! exiting while a peer may still read it, naming a rank outside the cluster, a grid that is not
//! a multiple of the cluster — are named errors.

use tilekit_ir::interp::{run, Args, HostBuffer, InterpError};
use tilekit_ir::{Axis, Kernel, KernelBuilder, ScalarType, ShflMode, Val};
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

/// Block r of a cluster of 4 writes `s[t] = 1000·block + 100·r + t`, then every thread reads
/// `s[t]` of the block with rank `(r + 1) mod 4` and stores it to `y[32·block + t]`.
fn ring(bug: Bug, threads: u32) -> Kernel {
    let b = KernelBuilder::new("ring", [threads, 1, 1]).unwrap();
    b.set_cluster_dim([C, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let s = b.shared("s", ScalarType::F32, threads as usize).unwrap();
    let t = b.thread_id(Axis::X);
    let r = b.cluster_cta_rank();
    let blk = b.block_id(Axis::X);
    let v = blk.clone() * Idx::lit(1000) + r.clone() * Idx::lit(100) + t.clone();
    b.store(s, &t, &[b.cvt(&v, ScalarType::F32).unwrap()], None).unwrap();
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
