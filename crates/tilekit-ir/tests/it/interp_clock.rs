//! The interpreter's clock ([`tilekit_ir::Op::Clock`]): not time but a per-block count of the
//! clock reads executed — 0, 1, 2, … in execution order, restarted in every block, one value
//! per read for all lanes that execute it together (the block in lockstep, a warp under the
//! warp schedule), ordered across warps by their synchronisation.

use tilekit_ir::interp::{run, Args, HostBuffer};
use tilekit_ir::lit;
use tilekit_ir::{Axis, Clock, CmpOp, KernelBuilder, ScalarType};

fn i64s(b: &HostBuffer) -> Vec<i64> {
    b.to_i64().expect("an i64 buffer")
}

#[test]
fn lockstep_reads_count_up_per_block_and_restart_in_the_next() {
    // 64 threads, 3 blocks: two reads, then one per iteration of a 3-trip loop, then one in
    // the odd threads' branch; y[block][tid][0..6]
    let b = KernelBuilder::new("clocks", [64, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I64).unwrap();
    let tid = b.thread_id(Axis::X);
    let base = (b.block_id(Axis::X) * lit(64) + tid.clone()) * lit(6);
    let c0 = b.clock(Clock::Sm);
    let c1 = b.clock(Clock::Global);
    b.store(y, &base, &[c0, c1], None).unwrap();
    b.for_range(&lit(0), &lit(3), &lit(1), &[], |b, i, _| {
        let c = b.clock(Clock::Sm);
        b.store(y, &(base.clone() + lit(2) + i), &[c], None)?;
        Ok(vec![])
    })
    .unwrap();
    let odd = b.cmp(CmpOp::Eq, &(tid % lit(2)), &lit(1)).unwrap();
    b.if_then(&odd, |b| {
        let c = b.clock(Clock::Sm);
        b.store(y, &(base.clone() + lit(5)), &[c], None)
    })
    .unwrap();
    let k = b.finish().unwrap();
    let n = 3 * 64 * 6;
    let mut a = Args::new();
    a.buffer(HostBuffer::from_i64(&vec![-7; n]));
    run(&k, [3, 1, 1], &mut a).unwrap();
    let got = i64s(&a.take_buffer(0).unwrap());
    for blk in 0..3 {
        for t in 0..64 {
            let at = (blk * 64 + t) * 6;
            let want: Vec<i64> =
                if t % 2 == 1 { vec![0, 1, 2, 3, 4, 5] } else { vec![0, 1, 2, 3, 4, -7] };
            assert_eq!(got[at..at + 6], want[..], "block {blk}, thread {t}");
        }
    }
}

#[test]
fn warp_schedule_reads_are_per_warp_and_ordered_by_a_named_barrier() {
    // warp 0 reads, then arrives at named barrier 1; warp 1 syncs on it, then reads: warp 1's
    // value is later, and each warp's 32 lanes share one value
    let b = KernelBuilder::new("clock_warps", [64, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I64).unwrap();
    let tid = b.thread_id(Axis::X);
    let at = b.block_id(Axis::X) * lit(64) + tid;
    let first = b.cmp(CmpOp::Eq, &b.warp_id(), &lit(0)).unwrap();
    b.if_then_else(
        &first,
        |b| {
            let c = b.clock(Clock::Sm);
            b.store(y, &at, &[c], None)?;
            b.named_barrier_arrive(1, 64)?;
            Ok(vec![])
        },
        |b| {
            b.named_barrier(1, 64)?;
            let c = b.clock(Clock::Sm);
            b.store(y, &at, &[c], None)?;
            Ok(vec![])
        },
    )
    .unwrap();
    let k = b.finish().unwrap();
    let mut a = Args::new();
    a.buffer(HostBuffer::from_i64(&vec![-7; 128]));
    run(&k, [2, 1, 1], &mut a).unwrap();
    let got = i64s(&a.take_buffer(0).unwrap());
    for blk in 0..2 {
        let w0 = &got[blk * 64..blk * 64 + 32];
        let w1 = &got[blk * 64 + 32..blk * 64 + 64];
        assert!(w0.iter().all(|&v| v == w0[0]) && w1.iter().all(|&v| v == w1[0]), "{got:?}");
        // two reads in the block: 0 and 1, warp 0's first
        assert_eq!((w0[0], w1[0]), (0, 1), "block {blk}");
    }
}
