//! The interpreter: planted races and out-of-bounds accesses are reported with the instruction,
//! address and threads; warp ops against brute force; mma against a CPU matrix product.

use crate::common;

use common::Rng;
use half::f16;
use tilekit_ir::interp::warp::{mma_a_coord, mma_b_coord, mma_c_coord};
use tilekit_ir::interp::{run, Access, Args, GlobalAccess, HostBuffer, InterpError};
use tilekit_ir::{Axis, BinOp, CmpOp, KernelBuilder, Lit, ScalarType, ShflMode, Val};
use tilekit_layout::{Idx, IdxBool};

/// Each thread writes s[tid] then reads s[(tid + 1) % 32]; with `sync` a barrier separates them.
fn neighbour_kernel(sync: bool) -> tilekit_ir::Kernel {
    let b = KernelBuilder::new("neighbour", [32, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let s = b.shared("s", ScalarType::F32, 32).unwrap();
    let t = b.thread_id(Axis::X);
    let v = b.cvt(&t, ScalarType::F32).unwrap();
    b.store(s, &t, &[v], None).unwrap();
    if sync {
        b.barrier();
    }
    let r = b.load(s, &((t.clone() + Val::lit(1)) % Val::lit(32)), 1, None).unwrap();
    b.store(y, &t, &r, None).unwrap();
    b.finish().unwrap()
}

fn f32_args(n: usize) -> Args {
    let mut a = Args::new();
    a.buffer(HostBuffer::filled(Lit::f32(f32::NAN), n));
    a
}

#[test]
fn planted_shared_race_is_reported_with_instructions_address_and_threads() {
    let k = neighbour_kernel(false);
    let e = run(&k, [2, 1, 1], &mut f32_args(32)).unwrap_err();
    // thread 0 reads s[1], which thread 1 wrote in the same barrier interval
    assert_eq!(
        e,
        InterpError::SharedRace {
            mem: "s".into(),
            byte: 4,
            element: 1,
            block: [0, 0, 0],
            first: Box::new(Access {
                thread: [1, 0, 0],
                inst: "st.shared.f32 s[%0], %3".into(),
                write: true
            }),
            second: Box::new(Access {
                thread: [0, 0, 0],
                inst: "%6 = ld.shared.f32 s[%5]".into(),
                write: false
            }),
        },
        "{k}"
    );
    assert!(e.to_string().starts_with("shared-memory race on \"s\" byte 4 (element 1) in block [0, 0, 0]: thread (1, 0, 0) write by `st.shared.f32 s[%0], %3`, then thread (0, 0, 0) read"));
}

#[test]
fn the_barrier_removes_the_race_and_the_result_is_the_rotation() {
    let k = neighbour_kernel(true);
    let mut args = f32_args(32);
    run(&k, [1, 1, 1], &mut args).unwrap();
    let y = args.get_buffer(0).unwrap().to_f32().unwrap();
    assert_eq!(y, (0..32).map(|t| ((t + 1) % 32) as f32).collect::<Vec<_>>());
}

#[test]
fn write_write_race_between_warps() {
    // every thread writes s[tid % 16]: threads 0 and 16 collide
    let b = KernelBuilder::new("ww", [64, 1, 1]).unwrap();
    let s = b.shared("s", ScalarType::I32, 16).unwrap();
    let t = b.thread_id(Axis::X);
    b.store(s, &(t.clone() % Val::lit(16)), &[t], None).unwrap();
    let k = b.finish().unwrap();
    match run(&k, [1, 1, 1], &mut Args::new()).unwrap_err() {
        InterpError::SharedRace { first, second, element, .. } => {
            assert_eq!(element, 0);
            assert_eq!((first.thread, second.thread), ([0, 0, 0], [16, 0, 0]));
            assert!(first.write && second.write);
        }
        e => panic!("unexpected {e}"),
    }
}

#[test]
fn planted_out_of_bounds_global_and_shared_accesses() {
    let b = KernelBuilder::new("oob", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let n = b.scalar_param("n", ScalarType::I32).unwrap();
    let i = b.block_id(Axis::X) * Val::lit(32) + b.thread_id(Axis::X);
    let v = b.load(x, &i, 1, None).unwrap(); // no bounds check against n
    let ok = i.lt(&n);
    b.store(x, &i, &v, Some(&ok)).unwrap();
    let k = b.finish().unwrap();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_f32(&[1.5; 40])).int(40);
    let e = run(&k, [2, 1, 1], &mut args).unwrap_err();
    assert_eq!(
        e.to_string(),
        "out-of-bounds global access to \"x\" by `%6 = ld.global.f32 x[%5]`: elements 40..41 but it has 40, block [1, 0, 0] thread [8, 0, 0]",
        "{k}"
    );

    let b = KernelBuilder::new("oob_shared", [32, 1, 1]).unwrap();
    let s = b.shared("tile", ScalarType::F16, 30).unwrap();
    let t = b.thread_id(Axis::X);
    let h = b.konst(Lit::float(ScalarType::F16, 1.0).unwrap());
    b.store(s, &t, &[h], None).unwrap();
    let k = b.finish().unwrap();
    match run(&k, [1, 1, 1], &mut Args::new()).unwrap_err() {
        InterpError::OutOfBounds { space, mem, element, len, thread, .. } => {
            assert_eq!(
                (space.as_str(), mem.as_str(), element, len, thread),
                ("shared", "tile", 30, 30, [30, 0, 0])
            );
        }
        e => panic!("unexpected {e}"),
    }
}

#[test]
fn misaligned_vector_access_divergent_barrier_and_poison() {
    // a v4 load at element 2
    let b = KernelBuilder::new("mis", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let v = b.load(x, &(b.thread_id(Axis::X) * Val::lit(4) + Val::lit(2)), 4, None).unwrap();
    b.store(x, &Val::lit(0), &v[..1], None).unwrap();
    let k = b.finish().unwrap();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_f32(&[0.5; 200]));
    assert!(matches!(
        run(&k, [1, 1, 1], &mut args).unwrap_err(),
        InterpError::Misaligned { element: 2, width: 4, .. }
    ));

    // a barrier inside an if taken by half the block
    let b = KernelBuilder::new("div", [64, 1, 1]).unwrap();
    let p = b.cmp(CmpOp::Lt, &b.thread_id(Axis::X), &Val::lit(32)).unwrap();
    b.if_then(&p, |b| {
        b.barrier();
        Ok(())
    })
    .unwrap();
    let k = b.finish().unwrap();
    assert_eq!(
        run(&k, [1, 1, 1], &mut Args::new()).unwrap_err().to_string(),
        "`bar.sync` reached by only part of block [0, 0, 0]: thread [32, 0, 0] is not there (barriers must be uniform)"
    );

    // storing never-written shared memory to global
    let b = KernelBuilder::new("poison", [32, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let s = b.shared("s", ScalarType::F32, 32).unwrap();
    let t = b.thread_id(Axis::X);
    let v = b.load(s, &t, 1, None).unwrap();
    b.store(y, &t, &v, None).unwrap();
    let k = b.finish().unwrap();
    match run(&k, [1, 1, 1], &mut f32_args(32)).unwrap_err() {
        InterpError::Poison { what, thread, .. } => {
            assert_eq!((what.as_str(), thread), ("stored value", [0, 0, 0]))
        }
        e => panic!("unexpected {e}"),
    }
}

#[test]
fn shuffles_and_votes_match_brute_force() {
    let b = KernelBuilder::new("warp", [64, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::I32).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let t = b.thread_id(Axis::X);
    let v = b.load(x, &t, 1, None).unwrap().remove(0);
    let modes = [(ShflMode::Idx, 5), (ShflMode::Up, 3), (ShflMode::Down, 7), (ShflMode::Bfly, 9)];
    for (j, (mode, d)) in modes.into_iter().enumerate() {
        let r = b.shfl(mode, &v, &Val::lit(d)).unwrap();
        b.store(y, &(t.clone() * Val::lit(8) + Val::lit(j as i64)), &[r], None).unwrap();
    }
    let odd =
        b.cmp(CmpOp::Eq, &b.binary(BinOp::And, &v, &Val::lit(1)).unwrap(), &Val::lit(1)).unwrap();
    let ballot = b.ballot(&odd).unwrap();
    let ballot = b.cvt(&ballot, ScalarType::I32).unwrap();
    let any = b.cvt(b.vote_any(&odd).unwrap().as_val(), ScalarType::I32).unwrap();
    let all = b.cvt(b.vote_all(&odd).unwrap().as_val(), ScalarType::I32).unwrap();
    for (j, r) in [ballot, any, all].into_iter().enumerate() {
        b.store(y, &(t.clone() * Val::lit(8) + Val::lit(4 + j as i64)), &[r], None).unwrap();
    }
    let k = b.finish().unwrap();
    let mut rng = Rng::new(9);
    // warp 1 is all odd, warp 0 random
    let xs: Vec<i32> =
        (0..64)
            .map(|t| {
                if t >= 32 {
                    (rng.below(1000) as i32) * 2 + 1
                } else {
                    rng.below(1000) as i32 + 1
                }
            })
            .collect();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_i32(&xs)).buffer(HostBuffer::from_i32(&[i32::MIN; 512]));
    run(&k, [1, 1, 1], &mut args).unwrap();
    let out = args.get_buffer(1).unwrap().to_i32().unwrap();
    for t in 0..64usize {
        let (w, l) = (t / 32 * 32, t % 32);
        let lane = |s: usize| xs[w + s];
        let expect = [
            lane(5),
            if l >= 3 { lane(l - 3) } else { lane(l) },
            if l + 7 < 32 { lane(l + 7) } else { lane(l) },
            lane(l ^ 9),
        ];
        assert_eq!(&out[t * 8..t * 8 + 4], &expect, "thread {t}");
        let bal = (0..32).filter(|&s| lane(s) & 1 == 1).fold(0u32, |m, s| m | 1 << s);
        assert_eq!(out[t * 8 + 4], bal as i32);
        assert_eq!(out[t * 8 + 5], (bal != 0) as i32);
        assert_eq!(out[t * 8 + 6], (bal == u32::MAX) as i32);
        assert_eq!(&out[t * 8 + 7..t * 8 + 8], &[i32::MIN]);
    }
}

#[test]
fn shuffle_in_a_partly_active_warp_is_an_error() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let t = b.thread_id(Axis::X);
    let p = t.lt(&Val::lit(16));
    b.if_then(&p, |b| {
        let r = b.shfl(ShflMode::Bfly, &t, &Val::lit(1))?;
        b.store(y, &t, &[r], None)
    })
    .unwrap();
    let k = b.finish().unwrap();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_i32(&[0; 32]));
    assert!(matches!(
        run(&k, [1, 1, 1], &mut args).unwrap_err(),
        InterpError::WarpDivergence { warp: 0, active: 0xffff, .. }
    ));
}

#[test]
fn mma_m16n8k16_matches_a_cpu_product() {
    // each lane loads its fragments from row-major A (16×16), B (16×8) and C (16×8)
    let b = KernelBuilder::new("mma", [32, 1, 1]).unwrap();
    let pa = b.ptr_param("a", ScalarType::F16).unwrap();
    let pb = b.ptr_param("b", ScalarType::F16).unwrap();
    let pc = b.ptr_param("c", ScalarType::F32).unwrap();
    let pd = b.ptr_param("d", ScalarType::F32).unwrap();
    let lane = b.lane_id();
    let g = lane.clone() / Val::lit(4);
    let q = lane % Val::lit(4);
    let ld =
        |m, r: Val, c: Val, ld: i64| b.load(m, &(r * Val::lit(ld) + c), 1, None).unwrap().remove(0);
    let a: Vec<Val> = (0..8i64)
        .map(|i| {
            ld(
                pa,
                g.clone() + Val::lit(8 * ((i / 2) % 2)),
                q.clone() * Val::lit(2) + Val::lit(i % 2 + 8 * (i / 4)),
                16,
            )
        })
        .collect();
    let bb: Vec<Val> = (0..4i64)
        .map(|i| ld(pb, q.clone() * Val::lit(2) + Val::lit(i % 2 + 8 * (i / 2)), g.clone(), 8))
        .collect();
    let cc: Vec<(Val, Val)> = (0..4i64)
        .map(|i| (g.clone() + Val::lit(8 * (i / 2)), q.clone() * Val::lit(2) + Val::lit(i % 2)))
        .collect();
    let c: Vec<Val> = cc.iter().map(|(r, col)| ld(pc, r.clone(), col.clone(), 8)).collect();
    let d = b.mma_m16n8k16(&a, &bb, &c).unwrap();
    for ((r, col), v) in cc.into_iter().zip(d) {
        b.store(pd, &(r * Val::lit(8) + col), &[v], None).unwrap();
    }
    let k = b.finish().unwrap();
    // the coordinate functions the interpreter uses agree with the loads above
    assert_eq!(mma_a_coord(6, 5), (1, 5 + 8));
    assert_eq!(mma_b_coord(6, 2), (12, 1));
    assert_eq!(mma_c_coord(6, 3), (9, 5));

    let mut rng = Rng::new(4);
    let ha: Vec<f16> = (0..256).map(|_| f16::from_f32(rng.f32())).collect();
    let hb: Vec<f16> = (0..128).map(|_| f16::from_f32(rng.f32())).collect();
    let hc: Vec<f32> = (0..128).map(|_| rng.f32()).collect();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_f16(&ha))
        .buffer(HostBuffer::from_f16(&hb))
        .buffer(HostBuffer::from_f32(&hc))
        .buffer(HostBuffer::filled(Lit::f32(f32::NAN), 128));
    run(&k, [1, 1, 1], &mut args).unwrap();
    let out = args.get_buffer(3).unwrap().to_f32().unwrap();
    for m in 0..16 {
        for n in 0..8 {
            let want: f64 =
                (0..16).map(|kk| ha[m * 16 + kk].to_f64() * hb[kk * 8 + n].to_f64()).sum::<f64>()
                    + hc[m * 8 + n] as f64;
            assert!(
                (out[m * 8 + n] as f64 - want).abs() < 1e-5,
                "({m}, {n}): {} vs {want}",
                out[m * 8 + n]
            );
        }
    }
}

#[test]
fn loops_with_thread_dependent_trip_counts_and_argument_checks() {
    // y[t] = Σ_{i < t} i, a loop whose trip count differs per thread
    let b = KernelBuilder::new("tri", [40, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I64).unwrap();
    let t = b.thread_id(Axis::X);
    let z = b.konst(Lit::int(ScalarType::I64, 0).unwrap());
    let s = b
        .for_range(&Val::lit(0), &t, &Val::lit(1), &[z], |b, i, acc| {
            Ok(vec![acc[0].clone() + b.cvt(&i, ScalarType::I64)?])
        })
        .unwrap();
    b.store(y, &t, &s, None).unwrap();
    let k = b.finish().unwrap();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_i64(&[-1; 40]));
    run(&k, [1, 1, 1], &mut args).unwrap();
    assert_eq!(
        args.get_buffer(0).unwrap().to_i64().unwrap(),
        (0..40i64).map(|t| t * (t - 1) / 2).collect::<Vec<_>>()
    );
    // wrong argument type
    let mut bad = Args::new();
    bad.buffer(HostBuffer::from_f32(&[0.0; 40]));
    assert_eq!(
        run(&k, [1, 1, 1], &mut bad).unwrap_err().to_string(),
        "argument 0 (y): expected ptr<global i64>, got a buffer of f32"
    );
}

#[test]
fn two_blocks_writing_one_element_is_a_conflict() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let t = b.thread_id(Axis::X);
    b.store(y, &t, &[b.block_id(Axis::X)], None).unwrap();
    let k = b.finish().unwrap();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_i32(&[0; 32]));
    let e = run(&k, [2, 1, 1], &mut args).unwrap_err();
    let inst = "st.global.i32 y[%0], %1".to_string();
    let side = |block, write| {
        Box::new(GlobalAccess { block, thread: [0, 0, 0], inst: inst.clone(), write })
    };
    assert_eq!(
        e,
        InterpError::GlobalRace {
            mem: "y".into(),
            element: 0,
            first: side([0, 0, 0], true),
            second: side([1, 0, 0], true),
        },
        "{k}"
    );
}

/// The one buffer `y` of `n` i32 zeros.
fn i32_args(n: usize) -> Args {
    let mut a = Args::new();
    a.buffer(HostBuffer::from_i32(&vec![0; n]));
    a
}

fn global_race(e: InterpError) -> (String, usize, GlobalAccess, GlobalAccess) {
    match e {
        InterpError::GlobalRace { mem, element, first, second } => (mem, element, *first, *second),
        e => panic!("expected a global race, got {e}"),
    }
}

#[test]
fn planted_global_write_write_race_within_a_block() {
    // every thread writes y[tid / 2]: threads 0 and 1 both write element 0
    let b = KernelBuilder::new("ww", [64, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let t = b.thread_id(Axis::X);
    b.store(y, &(t.clone() / Val::lit(2)), &[t], None).unwrap();
    let k = b.finish().unwrap();
    let e = run(&k, [1, 1, 1], &mut i32_args(32)).unwrap_err();
    let inst = "st.global.i32 y[%2], %0".to_string();
    let at = |thread| GlobalAccess { block: [0, 0, 0], thread, inst: inst.clone(), write: true };
    assert_eq!(
        e,
        InterpError::GlobalRace {
            mem: "y".into(),
            element: 0,
            first: Box::new(at([0, 0, 0])),
            second: Box::new(at([1, 0, 0])),
        },
        "{k}"
    );
    assert_eq!(
        e.to_string(),
        "global-memory race on \"y\" element 0: block (0, 0, 0) thread (0, 0, 0) write by \
         `st.global.i32 y[%2], %0` and block (0, 0, 0) thread (1, 0, 0) write by \
         `st.global.i32 y[%2], %0`, in one barrier interval (no bar.sync orders them)"
    );
}

/// Thread t writes y[t]; then (after a barrier if `sync`) reads y[(t + 1) % 32] into z[t].
fn global_neighbour_kernel(sync: bool) -> tilekit_ir::Kernel {
    let b = KernelBuilder::new("gneighbour", [32, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let z = b.ptr_param("z", ScalarType::I32).unwrap();
    let t = b.thread_id(Axis::X);
    b.store(y, &t, &[t.clone() * Val::lit(10)], None).unwrap();
    if sync {
        b.barrier();
    }
    let v = b.load(y, &((t.clone() + Val::lit(1)) % Val::lit(32)), 1, None).unwrap();
    b.store(z, &t, &v, None).unwrap();
    b.finish().unwrap()
}

#[test]
fn planted_global_write_read_race_within_a_block_and_the_barrier_that_fixes_it() {
    let k = global_neighbour_kernel(false);
    let mut args = i32_args(32);
    args.buffer(HostBuffer::from_i32(&[0; 32]));
    let (mem, element, first, second) = global_race(run(&k, [1, 1, 1], &mut args).unwrap_err());
    // the lowest racing element is y[0]: thread 0 wrote it, thread 31 read it in the same
    // barrier interval (the store ran first)
    assert_eq!((mem.as_str(), element), ("y", 0), "{k}");
    assert_eq!(
        (first.thread, first.write, second.thread, second.write),
        ([0, 0, 0], true, [31, 0, 0], false)
    );
    assert_eq!((first.block, second.block), ([0, 0, 0], [0, 0, 0]));
    assert!(first.inst.starts_with("st.global.i32 y[") && second.inst.contains("ld.global.i32 y["));

    let k = global_neighbour_kernel(true);
    let mut args = i32_args(32);
    args.buffer(HostBuffer::from_i32(&[0; 32]));
    run(&k, [1, 1, 1], &mut args).unwrap();
    let z = args.get_buffer(1).unwrap().to_i32().unwrap();
    assert_eq!(z, (0..32).map(|t| ((t + 1) % 32) * 10).collect::<Vec<i32>>());
}

#[test]
fn a_thread_reading_and_rewriting_its_own_elements_is_no_race() {
    // y[t] += 1 twice without barriers, in a loop: one thread per element
    let b = KernelBuilder::new("own", [64, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let i = b.block_id(Axis::X) * Val::lit(64) + b.thread_id(Axis::X);
    b.for_range(&Val::lit(0), &Val::lit(3), &Val::lit(1), &[], |b, _, _| {
        let v = b.load(y, &i, 1, None)?.remove(0);
        b.store(y, &i, &[v + Val::lit(1)], None)?;
        Ok(vec![])
    })
    .unwrap();
    let k = b.finish().unwrap();
    let mut args = i32_args(256);
    run(&k, [4, 1, 1], &mut args).unwrap();
    assert_eq!(args.get_buffer(0).unwrap().to_i32().unwrap(), vec![3; 256]);
}

#[test]
fn planted_cross_block_write_read_race_names_both_blocks() {
    // block b writes y[32·b + t] and reads y[32·(b + 1) + t]: block 1 writes what block 0 read
    let b = KernelBuilder::new("halo", [32, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let z = b.ptr_param("z", ScalarType::I32).unwrap();
    let blk = b.block_id(Axis::X);
    let t = b.thread_id(Axis::X);
    let own = blk.clone() * Val::lit(32) + t.clone();
    b.store(y, &own, std::slice::from_ref(&t), None).unwrap();
    let v = b.load(y, &(own.clone() + Val::lit(32)), 1, None).unwrap();
    b.store(z, &own, &v, None).unwrap();
    let k = b.finish().unwrap();
    for grid in [2u32, 3, 16] {
        let mut args = i32_args(32 * (grid as usize + 1));
        args.buffer(HostBuffer::from_i32(&vec![0; 32 * grid as usize]));
        let (mem, element, first, second) =
            global_race(run(&k, [grid, 1, 1], &mut args).unwrap_err());
        // the lowest racing element is 32: read by block 0 thread 0, written by block 1 thread 0
        assert_eq!((mem.as_str(), element), ("y", 32), "grid {grid}");
        assert_eq!((first.block, first.thread, first.write), ([0, 0, 0], [0, 0, 0], false));
        assert_eq!((second.block, second.thread, second.write), ([1, 0, 0], [0, 0, 0], true));
        assert!(
            first.inst.contains("ld.global.i32 y[") && second.inst.starts_with("st.global.i32 y[")
        );
        assert!(run(&k, [grid, 1, 1], &mut args)
            .unwrap_err()
            .to_string()
            .ends_with("in two blocks (blocks run in any order)"));
    }
}

#[test]
fn planted_cross_block_write_write_race_in_a_large_grid_is_deterministic() {
    // 256 blocks each write y[b]; blocks 77 and 200 also write y[1000]
    let b = KernelBuilder::new("scatter", [32, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let blk = b.block_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &b.thread_id(Axis::X), &Val::lit(0)).unwrap();
    b.store(y, &blk, std::slice::from_ref(&blk), Some(&first)).unwrap();
    let hit = blk.eq_(&Val::lit(77)).or(&blk.eq_(&Val::lit(200))).and(&first);
    b.store(y, &Val::lit(1000), std::slice::from_ref(&blk), Some(&hit)).unwrap();
    let k = b.finish().unwrap();
    for _ in 0..4 {
        let (mem, element, a, c) =
            global_race(run(&k, [256, 1, 1], &mut i32_args(1024)).unwrap_err());
        assert_eq!((mem.as_str(), element), ("y", 1000));
        assert_eq!((a.block, c.block, a.write, c.write), ([77, 0, 0], [200, 0, 0], true, true));
    }
    // without the collision the grid is race-free and every element is written once
    let b = KernelBuilder::new("scatter_ok", [32, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let blk = b.block_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &b.thread_id(Axis::X), &Val::lit(0)).unwrap();
    b.store(y, &blk, std::slice::from_ref(&blk), Some(&first)).unwrap();
    let k = b.finish().unwrap();
    let mut args = i32_args(256);
    run(&k, [256, 1, 1], &mut args).unwrap();
    assert_eq!(args.get_buffer(0).unwrap().to_i32().unwrap(), (0..256).collect::<Vec<i32>>());
}

#[test]
fn blocks_reading_one_input_in_common_is_no_race() {
    // every block reads x[0..32] (never written) and writes its own y row
    let b = KernelBuilder::new("bcast", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::I32).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let t = b.thread_id(Axis::X);
    let v = b.load(x, &t, 1, None).unwrap().remove(0);
    let i = b.block_id(Axis::X) * Val::lit(32) + t;
    b.store(y, &i, &[v + b.block_id(Axis::X)], None).unwrap();
    let k = b.finish().unwrap();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_i32(&(0..32).collect::<Vec<i32>>()));
    args.buffer(HostBuffer::from_i32(&[0; 128]));
    let s = run(&k, [4, 1, 1], &mut args).unwrap();
    assert_eq!(s.blocks, 4);
    let y = args.get_buffer(1).unwrap().to_i32().unwrap();
    assert_eq!(y, (0..128).map(|i| i % 32 + i / 32).collect::<Vec<i32>>());
}

#[test]
fn a_hand_made_malformed_kernel_is_a_typed_error() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    b.store(y, &b.thread_id(Axis::X), &[b.thread_id(Axis::X)], None).unwrap();
    let mut k = b.finish().unwrap();
    k.values.clear();
    let e = run(&k, [1, 1, 1], &mut i32_args(32)).unwrap_err();
    assert!(matches!(e, InterpError::InvalidKernel { .. }), "{e}");
    assert!(e.to_string().contains("is not a value of the kernel (it has 0)"), "{e}");
    let mut k2 = KernelBuilder::new("big", [32, 1, 1]).unwrap().finish().unwrap();
    k2.block_dim = [4096, 4096, 1];
    assert_eq!(
        run(&k2, [1, 1, 1], &mut Args::new()).unwrap_err().to_string(),
        "kernel big is malformed: block [4096, 4096, 1] has 16777216 threads; the interpreter runs 1..=1024"
    );
    let ok = KernelBuilder::new("k", [32, 1, 1]).unwrap().finish().unwrap();
    assert_eq!(
        run(&ok, [u32::MAX, u32::MAX, 2], &mut Args::new()).unwrap_err(),
        InterpError::GridTooLarge { grid: [u32::MAX, u32::MAX, 2] }
    );
    let mut k3 = ok.clone();
    k3.shared.push(tilekit_ir::SharedDecl {
        name: "huge".into(),
        elem: ScalarType::F64,
        len: usize::MAX / 4,
    });
    let e = run(&k3, [1, 1, 1], &mut Args::new()).unwrap_err();
    assert!(e.to_string().contains("shared allocations exceed"), "{e}");
}

#[test]
fn cvt_pack_rounds_two_f32_into_the_halves_of_a_u32() {
    // y[t] = pack(x[2t] → low, x[2t + 1] → high), for f16 and bf16, against the `half` crate's
    // round-to-nearest-even conversions (values past f16's range, subnormals and ties included)
    use half::bf16;
    let mut rng = Rng::new(11);
    let mut xs: Vec<f32> = (0..120).map(|_| rng.f32() * 3.0).collect();
    // f16: overflow to ∞, a subnormal, a tie (1 + 2^-11 rounds to even 1.0); bf16: a tie
    xs.extend([70000.0, -1.0e-6, 1.0 + f32::powi(2.0, -11), 1.0 + f32::powi(2.0, -8), 0.0, -0.0]);
    xs.extend([f32::NEG_INFINITY, 1.0e-40]);
    for ty in [ScalarType::F16, ScalarType::BF16] {
        let b = KernelBuilder::new("pack", [64, 1, 1]).unwrap();
        let x = b.ptr_param("x", ScalarType::F32).unwrap();
        let y = b.ptr_param("y", ScalarType::U32).unwrap();
        let t = b.thread_id(Axis::X);
        let v = b.load(x, &(t.clone() * Val::lit(2)), 2, None).unwrap();
        let w = b.cvt_pack(&v[0], &v[1], ty).unwrap();
        b.store(y, &t, &[w], None).unwrap();
        let k = b.finish().unwrap();
        assert!(k.to_string().contains(&format!("cvt.rn.{ty}x2")), "{k}");
        let mut args = Args::new();
        args.buffer(HostBuffer::from_f32(&xs)).buffer(HostBuffer::from_u32(&[0xdead_beef; 64]));
        run(&k, [1, 1, 1], &mut args).unwrap();
        let out = args.get_buffer(1).unwrap();
        for i in 0..64 {
            let half_bits = |f: f32| -> u32 {
                match ty {
                    ScalarType::F16 => f16::from_f32(f).to_bits() as u32,
                    _ => bf16::from_f32(f).to_bits() as u32,
                }
            };
            let want = half_bits(xs[2 * i]) | (half_bits(xs[2 * i + 1]) << 16);
            assert_eq!(out.bits(i) as u32, want, "{ty} pair {i}: {} {}", xs[2 * i], xs[2 * i + 1]);
        }
    }
    // typed errors: a 32-bit target, a non-f32 operand
    let b = KernelBuilder::new("bad", [32, 1, 1]).unwrap();
    let e = b.cvt_pack(&b.f32(1.0), &b.f32(2.0), ScalarType::F32).unwrap_err();
    assert!(e.to_string().contains("f16 or bf16"), "{e}");
    let h = b.cvt(&b.thread_id(Axis::X), ScalarType::F16).unwrap();
    let e = b.cvt_pack(&h, &b.f32(2.0), ScalarType::BF16).unwrap_err();
    assert!(e.to_string().contains("f16") && e.to_string().contains("f32 operands"), "{e}");
}

#[test]
fn masked_loads_with_a_fill_and_packed_pair_ops_match_brute_force() {
    // 32 threads, 8 bf16 each; threads 20.. are masked off and get the fill −∞ (0xFF80). Each
    // thread folds its 8 elements two by two with max.x2 / min.x2: (e0, e1) ⊕ (e2, e3) ⊕ …,
    // so lane 0 of the pair holds the max (min) of the even elements, lane 1 of the odd ones
    let b = KernelBuilder::new("pairs", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::BF16).unwrap();
    let y = b.ptr_param("y", ScalarType::BF16).unwrap();
    let t = b.thread_id(Axis::X);
    let inside = b.cmp(CmpOp::Lt, &t, &Idx::lit(20)).unwrap();
    let ninf = Lit::from_bits(ScalarType::BF16, 0xFF80);
    let e = b.load_fill(x, &(t.clone() * Idx::lit(8)), 8, Some(&inside), &ninf).unwrap();
    let fold = |op| {
        let mut acc = [e[0].clone(), e[1].clone()];
        for k in 1..4 {
            acc = b.binary_pair(op, [&acc[0], &acc[1]], [&e[2 * k], &e[2 * k + 1]]).unwrap();
        }
        acc
    };
    let (hi, lo) = (fold(BinOp::Max), fold(BinOp::Min));
    let out = [hi[0].clone(), hi[1].clone(), lo[0].clone(), lo[1].clone()];
    b.store(y, &(t * Idx::lit(4)), &out, None).unwrap();
    let k = b.finish().unwrap();
    let mut rng = Rng::new(42);
    let xs: Vec<f32> = (0..256).map(|_| rng.f32() * 100.0).collect();
    let bits: Vec<u8> =
        xs.iter().flat_map(|v| half::bf16::from_f32(*v).to_bits().to_le_bytes()).collect();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_bytes(ScalarType::BF16, bits).unwrap());
    args.buffer(HostBuffer::filled(Lit::from_bits(ScalarType::BF16, 0x7FC0), 128));
    run(&k, [1, 1, 1], &mut args).unwrap();
    let got = args.get_buffer(1).unwrap();
    for th in 0..32 {
        let v: Vec<f32> = (0..8).map(|j| half::bf16::from_f32(xs[8 * th + j]).to_f32()).collect();
        let pick = |odd: usize, max: bool| {
            let it = (0..4).map(|k| v[2 * k + odd]);
            if th >= 20 {
                f32::NEG_INFINITY
            } else if max {
                it.fold(f32::NEG_INFINITY, f32::max)
            } else {
                it.fold(f32::INFINITY, f32::min)
            }
        };
        let want = [pick(0, true), pick(1, true), pick(0, false), pick(1, false)];
        for (j, w) in want.iter().enumerate() {
            let g = half::bf16::from_bits(got.bits(4 * th + j) as u16).to_f32();
            assert_eq!(g, *w, "thread {th} output {j}");
        }
    }
    // the IR says what the GPU does: the fill rides on the load, no select
    let text = k.to_string();
    assert!(text.contains("else 0xFF80") && !text.contains("selp"), "{text}");
    assert_eq!(text.matches("max.x2").count() + text.matches("min.x2").count(), 6);
}

#[test]
fn max_and_min_propagate_nan_on_the_interpreter_scalar_and_packed() {
    // y[t] = max(a[t], b[t]), z[t] = min(a[t], b[t]) for f32; and the same on bf16 packed
    // pairs (max.x2 / min.x2): a NaN in either operand gives NaN, as PTX max.NaN
    let nan = f32::NAN;
    let a = [nan, 1.0, -2.0, nan, f32::NEG_INFINITY, 0.5, 3.0, -1.0];
    let c = [1.0, nan, 3.0, nan, nan, f32::NEG_INFINITY, 2.0, -4.0];
    let want_max = [nan, nan, 3.0, nan, nan, 0.5, 3.0, -1.0];
    let want_min = [nan, nan, -2.0, nan, nan, f32::NEG_INFINITY, 2.0, -4.0];
    let same = |g: f32, w: f32| (g.is_nan() && w.is_nan()) || g == w;
    // f32 scalars
    let b = KernelBuilder::new("maxmin", [8, 1, 1]).unwrap();
    let (x, y) =
        (b.ptr_param("x", ScalarType::F32).unwrap(), b.ptr_param("y", ScalarType::F32).unwrap());
    let t = b.thread_id(Axis::X);
    let u = b.load(x, &t, 1, None).unwrap().remove(0);
    let v = b.load(x, &(t.clone() + Idx::lit(8)), 1, None).unwrap().remove(0);
    let hi = b.binary(BinOp::Max, &u, &v).unwrap();
    let lo = b.binary(BinOp::Min, &u, &v).unwrap();
    b.store(y, &t, &[hi], None).unwrap();
    b.store(y, &(t + Idx::lit(8)), &[lo], None).unwrap();
    let k = b.finish().unwrap();
    let mut args = Args::new();
    let xs: Vec<f32> = a.iter().chain(&c).copied().collect();
    args.buffer(HostBuffer::from_f32(&xs)).buffer(HostBuffer::from_f32(&[0.0; 16]));
    run(&k, [1, 1, 1], &mut args).unwrap();
    let got = args.get_buffer(1).unwrap();
    for i in 0..8 {
        let (gh, gl) = (f32::from_bits(got.bits(i) as u32), f32::from_bits(got.bits(8 + i) as u32));
        assert!(same(gh, want_max[i]), "max({}, {}) = {gh}", a[i], c[i]);
        assert!(same(gl, want_min[i]), "min({}, {}) = {gl}", a[i], c[i]);
        if want_max[i].is_nan() {
            assert_eq!(got.bits(i), 0x7fff_ffff, "the canonical NaN, as max.NaN.f32");
        }
    }
    // bf16 pairs: thread t folds (a[2t], a[2t+1]) with (c[2t], c[2t+1])
    let b = KernelBuilder::new("maxmin_pairs", [4, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::BF16).unwrap();
    let y = b.ptr_param("y", ScalarType::BF16).unwrap();
    let t = b.thread_id(Axis::X);
    let u = b.load(x, &(t.clone() * Idx::lit(2)), 2, None).unwrap();
    let v = b.load(x, &(t.clone() * Idx::lit(2) + Idx::lit(8)), 2, None).unwrap();
    let hi = b.binary_pair(BinOp::Max, [&u[0], &u[1]], [&v[0], &v[1]]).unwrap();
    let lo = b.binary_pair(BinOp::Min, [&u[0], &u[1]], [&v[0], &v[1]]).unwrap();
    b.store(y, &(t.clone() * Idx::lit(2)), &hi, None).unwrap();
    b.store(y, &(t * Idx::lit(2) + Idx::lit(8)), &lo, None).unwrap();
    let k = b.finish().unwrap();
    let bits: Vec<u8> =
        xs.iter().flat_map(|v| half::bf16::from_f32(*v).to_bits().to_le_bytes()).collect();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_bytes(ScalarType::BF16, bits).unwrap());
    args.buffer(HostBuffer::filled(Lit::from_bits(ScalarType::BF16, 0), 16));
    run(&k, [1, 1, 1], &mut args).unwrap();
    let got = args.get_buffer(1).unwrap();
    for i in 0..8 {
        let g = |j: usize| half::bf16::from_bits(got.bits(j) as u16).to_f32();
        assert!(same(g(i), want_max[i]), "max.x2({}, {}) = {}", a[i], c[i], g(i));
        assert!(same(g(8 + i), want_min[i]), "min.x2({}, {}) = {}", a[i], c[i], g(8 + i));
        if want_max[i].is_nan() {
            assert_eq!(got.bits(i), 0x7fff, "the canonical NaN, as max.NaN.bf16x2");
        }
    }
}
