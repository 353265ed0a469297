//! The interpreter: planted races and out-of-bounds accesses are reported with the instruction,
//! address and threads; warp ops against brute force; mma against a CPU matrix product.

mod common;

use common::Rng;
use half::f16;
use tilekit_ir::interp::warp::{mma_a_coord, mma_b_coord, mma_c_coord};
use tilekit_ir::interp::{run, Access, Args, HostBuffer, InterpError};
use tilekit_ir::{Axis, BinOp, CmpOp, KernelBuilder, Lit, ScalarType, ShflMode, Val};
use tilekit_layout::Idx;

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
    assert!(matches!(
        run(&k, [2, 1, 1], &mut args).unwrap_err(),
        InterpError::GlobalWriteConflict { element: 0, first: [0, 0, 0], second: [1, 0, 0], .. }
    ));
}
