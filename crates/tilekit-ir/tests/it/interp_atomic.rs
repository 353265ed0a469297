//! Global atomics and memory-ordering ops in the interpreter: `atom.global.add.u32` is atomic
//! across threads and blocks (every thread gets a distinct old value and the counter ends at the
//! sum), `ld.acquire.gpu` reads the counter, and the builder refuses counters that are not global
//! `u32` buffers with a typed error.

use tilekit_ir::interp::{run, Args, HostBuffer, InterpError};
use tilekit_ir::{Axis, IrError, Kernel, KernelBuilder, ScalarType};
use tilekit_layout::Idx;

const THREADS: u32 = 64;

/// Every thread takes a ticket `old = atom.add(&tickets[0], 1)` and stores it to `y[gid]`; then
/// every thread adds `tid + 1` to `sums[block]` with release semantics, the block synchronizes,
/// and every thread reads `sums[block]` with an acquire load into `z[gid]`.
fn tickets() -> Kernel {
    let b = KernelBuilder::new("tickets", [THREADS, 1, 1]).unwrap();
    let tickets = b.ptr_param("tickets", ScalarType::U32).unwrap();
    let sums = b.ptr_param("sums", ScalarType::U32).unwrap();
    let y = b.ptr_param("y", ScalarType::U32).unwrap();
    let z = b.ptr_param("z", ScalarType::U32).unwrap();
    let t = b.thread_id(Axis::X);
    let blk = b.block_id(Axis::X);
    let gid = blk.clone() * Idx::lit(THREADS as i64) + t.clone();
    let old = b.atomic_add(tickets, &Idx::lit(0), &Idx::lit(1), false).unwrap();
    b.store(y, &gid, &[old], None).unwrap();
    let inc = b.cvt(&(t + Idx::lit(1)), ScalarType::U32).unwrap();
    b.atomic_add(sums, &blk, &inc, true).unwrap();
    b.fence_gpu();
    b.barrier();
    let seen = b.load_acquire(sums, &blk).unwrap();
    b.store(z, &gid, &[seen], None).unwrap();
    b.finish().unwrap()
}

/// A small deterministic generator (xorshift) for the counters' random starting values.
fn rand_u32(state: &mut u64) -> u32 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 16) as u32 % 100_000
}

#[test]
fn atomic_add_hands_out_distinct_tickets_across_blocks() {
    let k = tickets();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for blocks in [1u32, 3, 8] {
        let n = (blocks * THREADS) as usize;
        let start = rand_u32(&mut seed);
        let sums0: Vec<u32> = (0..blocks).map(|_| rand_u32(&mut seed)).collect();
        let mut a = Args::new();
        a.buffer(HostBuffer::from_u32(&[start]));
        a.buffer(HostBuffer::from_u32(&sums0));
        a.buffer(HostBuffer::from_u32(&vec![u32::MAX; n]));
        a.buffer(HostBuffer::from_u32(&vec![u32::MAX; n]));
        run(&k, [blocks, 1, 1], &mut a).unwrap();
        let z = a.take_buffer(3).unwrap().to_u32().unwrap();
        let mut y = a.take_buffer(2).unwrap().to_u32().unwrap();
        let sums = a.take_buffer(1).unwrap().to_u32().unwrap();
        let tickets = a.take_buffer(0).unwrap().to_u32().unwrap();
        assert_eq!(tickets, vec![start + n as u32], "blocks {blocks}");
        y.sort_unstable();
        assert_eq!(y, (start..start + n as u32).collect::<Vec<_>>(), "blocks {blocks}");
        let per_block: u32 = (1..=THREADS).sum();
        let want: Vec<u32> = sums0.iter().map(|s| s + per_block).collect();
        assert_eq!(sums, want, "blocks {blocks}");
        for (g, &v) in z.iter().enumerate() {
            assert_eq!(v, want[g / THREADS as usize], "blocks {blocks}, thread {g}");
        }
    }
}

#[test]
fn counters_must_be_global_u32() {
    let b = KernelBuilder::new("bad", [32, 1, 1]).unwrap();
    let f = b.ptr_param("f", ScalarType::F32).unwrap();
    let e = b.atomic_add(f, &Idx::lit(0), &Idx::lit(1), false).unwrap_err();
    assert!(matches!(e, IrError::WrongType { ty: ScalarType::F32, .. }), "{e}");
    let s = b.shared("s", ScalarType::U32, 4).unwrap();
    let e = b.load_acquire(s, &Idx::lit(0)).unwrap_err();
    assert!(e.to_string().contains("a global buffer (pointer parameter)"), "{e}");
    let c = b.ptr_param("c", ScalarType::U32).unwrap();
    let e = b.atomic_add(c, &Idx::lit(0), &b.f32(1.0), true).unwrap_err();
    assert!(e.to_string().contains("valid types are u32"), "{e}");
}

/// Every thread of one block adds 1 to `c[0]` (release), waits with `wait_acquire` until `c[0]`
/// reaches `target`, then stores an acquire load of `c[0]` to `y[tid]`.
fn rendezvous(threads: u32, target: u32) -> Kernel {
    let b = KernelBuilder::new("rendezvous", [threads, 1, 1]).unwrap();
    let c = b.ptr_param("c", ScalarType::U32).unwrap();
    let y = b.ptr_param("y", ScalarType::U32).unwrap();
    let t = b.thread_id(Axis::X);
    b.atomic_add(c, &Idx::lit(0), &Idx::lit(1), true).unwrap();
    b.wait_acquire(c, &Idx::lit(0), &Idx::lit(target as i64)).unwrap();
    let seen = b.load_acquire(c, &Idx::lit(0)).unwrap();
    b.store(y, &t, &[seen], None).unwrap();
    b.finish().unwrap()
}

#[test]
fn counter_wait_ends_when_every_warp_has_arrived() {
    for warps in [1u32, 4, 8] {
        let k = rendezvous(32 * warps, 32 * warps);
        let mut a = Args::new();
        a.buffer(HostBuffer::from_u32(&[0]));
        a.buffer(HostBuffer::from_u32(&vec![u32::MAX; 32 * warps as usize]));
        run(&k, [1, 1, 1], &mut a).unwrap();
        let y = a.take_buffer(1).unwrap().to_u32().unwrap();
        assert_eq!(y, vec![32 * warps; 32 * warps as usize], "warps {warps}");
    }
}

#[test]
fn counter_wait_that_cannot_end_is_a_named_deadlock() {
    // 128 threads raise the counter to 128; waiting for 129 can never end
    let k = rendezvous(128, 129);
    let mut a = Args::new();
    a.buffer(HostBuffer::from_u32(&[0]));
    a.buffer(HostBuffer::from_u32(&[u32::MAX; 128]));
    let e = run(&k, [1, 1, 1], &mut a).unwrap_err();
    match &e {
        InterpError::WarpDeadlock { warps, .. } => {
            assert_eq!(warps.len(), 4, "{e}");
            assert!(warps.iter().all(|w| w.waits.contains("global counter")), "{e}");
            assert!(warps.iter().all(|w| w.inst.contains("wait.acquire")), "{e}");
        }
        _ => panic!("expected a warp deadlock, got {e}"),
    }
}

/// Block `j` of `blocks` (32 threads) stores `s[32j + t] = x[32j + t]`, then (release) adds 1
/// per thread to `c[0]`, waits until `c[0] = 32·blocks`, and copies its neighbour's slot
/// `s[32((j + 1) mod blocks) + t]` to `y[32j + t]`: blocks wait on each other through global
/// memory, which the interpreter runs as one unit of the whole grid.
/// With `release` false the add is relaxed: the wait still ends, but nothing orders the
/// neighbour's store before the read (a planted race).
fn exchange(target_per_thread: u32, blocks: u32, release: bool) -> Kernel {
    let b = KernelBuilder::new("exchange", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let s = b.ptr_param("s", ScalarType::F32).unwrap();
    let c = b.ptr_param("c", ScalarType::U32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let t = b.thread_id(Axis::X);
    let j = b.block_id(Axis::X);
    let me = j.clone() * Idx::lit(32) + t.clone();
    let v = b.load(x, &me, 1, None).unwrap();
    b.store(s, &me, &v, None).unwrap();
    if release {
        b.fence_gpu();
    }
    b.atomic_add(c, &Idx::lit(0), &Idx::lit(1), release).unwrap();
    let target = Idx::lit((target_per_thread * blocks * 32) as i64);
    b.wait_acquire(c, &Idx::lit(0), &target).unwrap();
    let next = ((j + Idx::lit(1)) % Idx::lit(blocks as i64)) * Idx::lit(32) + t;
    let w = b.load(s, &next, 1, None).unwrap();
    b.store(y, &me, &w, None).unwrap();
    b.finish().unwrap()
}

#[test]
fn blocks_exchange_through_global_memory_after_a_counter_wait() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for blocks in [2u32, 5] {
        let n = 32 * blocks as usize;
        let x: Vec<f32> = (0..n).map(|_| rand_u32(&mut seed) as f32 * 0.25 - 7.0).collect();
        let mut a = Args::new();
        a.buffer(HostBuffer::from_f32(&x));
        a.buffer(HostBuffer::from_f32(&vec![f32::NAN; n]));
        a.buffer(HostBuffer::from_u32(&[0]));
        a.buffer(HostBuffer::from_f32(&vec![f32::NAN; n]));
        run(&exchange(1, blocks, true), [blocks, 1, 1], &mut a).unwrap();
        let y = a.take_buffer(3).unwrap().to_f32().unwrap();
        for (g, &v) in y.iter().enumerate() {
            let (j, t) = (g / 32, g % 32);
            let want = x[((j + 1) % blocks as usize) * 32 + t];
            assert_eq!(v.to_bits(), want.to_bits(), "blocks {blocks}, element {g}");
        }
    }
}

#[test]
fn blocks_waiting_for_a_count_never_reached_are_a_named_deadlock() {
    let blocks = 3u32;
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&[1.5; 96]));
    a.buffer(HostBuffer::from_f32(&[f32::NAN; 96]));
    a.buffer(HostBuffer::from_u32(&[0]));
    a.buffer(HostBuffer::from_f32(&[f32::NAN; 96]));
    let e = run(&exchange(2, blocks, true), [blocks, 1, 1], &mut a).unwrap_err();
    match &e {
        InterpError::WarpDeadlock { warps, .. } => {
            let mut waiting: Vec<u32> = warps.iter().map(|w| w.block[0]).collect();
            waiting.sort_unstable();
            assert_eq!(waiting, vec![0, 1, 2], "{e}");
            assert!(warps.iter().all(|w| w.waits.contains("global counter")), "{e}");
        }
        _ => panic!("expected a warp deadlock, got {e}"),
    }
}

#[test]
fn reading_a_neighbour_without_the_release_acquire_edge_is_a_race() {
    let blocks = 4u32;
    let x: Vec<f32> = (0..128).map(|i| i as f32 * 0.5 + 0.25).collect();
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&x));
    a.buffer(HostBuffer::from_f32(&[f32::NAN; 128]));
    a.buffer(HostBuffer::from_u32(&[0]));
    a.buffer(HostBuffer::from_f32(&[f32::NAN; 128]));
    let e = run(&exchange(1, blocks, false), [blocks, 1, 1], &mut a).unwrap_err();
    match &e {
        InterpError::GlobalRace { mem, first, second, .. } => {
            assert_eq!(mem, "s", "{e}");
            assert_ne!(first.block, second.block, "{e}");
            assert!(first.write != second.write, "{e}");
        }
        _ => panic!("expected a global race on s, got {e}"),
    }
}

/// [`exchange`] with 64-thread blocks where only thread 0 waits, with a backoff
/// ([`KernelBuilder::wait_acquire_backoff`]); a block barrier then hands its
/// acquire to the other 63 threads (warp 1 included) before they read the neighbour's slots.
fn exchange_one_waiter(blocks: u32) -> Kernel {
    let b = KernelBuilder::new("exchange_one_waiter", [64, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let s = b.ptr_param("s", ScalarType::F32).unwrap();
    let c = b.ptr_param("c", ScalarType::U32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let t = b.thread_id(Axis::X);
    let j = b.block_id(Axis::X);
    let me = j.clone() * Idx::lit(64) + t.clone();
    let v = b.load(x, &me, 1, None).unwrap();
    b.store(s, &me, &v, None).unwrap();
    b.barrier();
    let first = b.cmp(tilekit_ir::CmpOp::Eq, &t, &Idx::lit(0)).unwrap();
    let target = Idx::lit(blocks as i64);
    b.if_then(&first, |b| {
        b.fence_gpu();
        b.atomic_add(c, &Idx::lit(0), &Idx::lit(1), true)?;
        b.wait_acquire_backoff(c, &Idx::lit(0), &target, 200)
    })
    .unwrap();
    b.barrier();
    let next = ((j + Idx::lit(1)) % Idx::lit(blocks as i64)) * Idx::lit(64) + t;
    let w = b.load(s, &next, 1, None).unwrap();
    b.store(y, &me, &w, None).unwrap();
    b.finish().unwrap()
}

fn one_waiter_args(x: &[f32]) -> Args {
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(x));
    a.buffer(HostBuffer::from_f32(&vec![f32::NAN; x.len()]));
    a.buffer(HostBuffer::from_u32(&[0]));
    a.buffer(HostBuffer::from_f32(&vec![f32::NAN; x.len()]));
    a
}

#[test]
fn one_waiter_then_a_barrier_orders_every_thread_after_the_release() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for blocks in [2u32, 3] {
        let n = 64 * blocks as usize;
        let x: Vec<f32> = (0..n).map(|_| rand_u32(&mut seed) as f32 * 0.125 - 3.0).collect();
        let mut a = one_waiter_args(&x);
        run(&exchange_one_waiter(blocks), [blocks, 1, 1], &mut a).unwrap();
        let y = a.take_buffer(3).unwrap().to_f32().unwrap();
        for (g, &v) in y.iter().enumerate() {
            let want = x[((g / 64 + 1) % blocks as usize) * 64 + g % 64];
            assert_eq!(v.to_bits(), want.to_bits(), "blocks {blocks}, element {g}");
        }
    }
}
