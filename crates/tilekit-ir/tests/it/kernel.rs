//! `Kernel::waits_on_prior_grid` (when a kernel may be launched as a programmatic dependent)
//! and the grid-dependency ops on the interpreter: no-ops, results unchanged.

use crate::common;

use common::Rng;
use tilekit_ir::interp::{run_scheduled, Args, HostBuffer, Schedule};
use tilekit_ir::{Axis, BinOp, Kernel, KernelBuilder, Lit, ScalarType, Val};
use tilekit_layout::Idx;

/// What comes before the wait in [`with_prefix`].
#[derive(Clone, Copy, Debug)]
enum Before {
    Nothing,
    SharedStoreAndBarrier,
    GlobalLoad,
    GlobalStore,
    Atomic,
    LoopWithGlobalStore,
    LoopWithSharedStore,
}

/// A kernel that does `before`, then the wait (at the top level, or inside a loop when
/// `wait_in_loop`), then a global load and store.
fn with_prefix(before: Before, wait_in_loop: bool) -> Kernel {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let c = b.ptr_param("c", ScalarType::U32).unwrap();
    let s = b.shared("s", ScalarType::F32, 32).unwrap();
    let t = b.thread_id(Axis::X);
    match before {
        Before::Nothing => {}
        Before::SharedStoreAndBarrier => {
            b.store(s, &t, &[b.f32(1.0)], None).unwrap();
            b.barrier();
        }
        Before::GlobalLoad => {
            let v = b.load(x, &t, 1, None).unwrap();
            b.store(s, &t, &v, None).unwrap();
        }
        Before::GlobalStore => b.store(x, &t, &[b.f32(2.0)], None).unwrap(),
        Before::Atomic => {
            b.atomic_add(c, &Idx::lit(0), &Idx::lit(1), false).unwrap();
        }
        Before::LoopWithGlobalStore | Before::LoopWithSharedStore => {
            let global = matches!(before, Before::LoopWithGlobalStore);
            b.for_range(&Idx::lit(0), &Idx::lit(2), &Idx::lit(1), &[], |b, i, _| {
                let v = b.cvt(&i, ScalarType::F32)?;
                if global {
                    b.store(x, &(t.clone() + Idx::lit(32)), &[v], None)?;
                } else {
                    b.store(s, &t, &[v], None)?;
                }
                Ok(vec![])
            })
            .unwrap();
        }
    }
    if wait_in_loop {
        b.for_range(&Idx::lit(0), &Idx::lit(1), &Idx::lit(1), &[], |b, _, _| {
            b.grid_dependency_wait();
            Ok(vec![])
        })
        .unwrap();
    } else {
        b.grid_dependency_wait();
    }
    let v = b.load(x, &t, 1, None).unwrap();
    b.launch_dependents();
    b.store(x, &(t + Idx::lit(64)), &v, None).unwrap();
    b.finish().unwrap()
}

#[test]
fn a_kernel_waits_on_the_prior_grid_only_if_no_global_access_precedes_a_top_level_wait() {
    use Before::*;
    for (before, expected) in [
        (Nothing, true),
        (SharedStoreAndBarrier, true),
        (LoopWithSharedStore, true),
        (GlobalLoad, false),
        (GlobalStore, false),
        (Atomic, false),
        (LoopWithGlobalStore, false),
    ] {
        let k = with_prefix(before, false);
        assert_eq!(k.waits_on_prior_grid(), expected, "{before:?}:\n{k}");
        // a wait inside a loop is never enough: not every thread is known to execute it
        // before the accesses that follow
        assert!(
            !with_prefix(before, true).waits_on_prior_grid(),
            "{before:?} with the wait in a loop"
        );
    }
}

#[test]
fn dce_keeps_both_ops_in_order_and_a_kernel_without_the_wait_does_not_wait() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    b.launch_dependents();
    b.grid_dependency_wait(); // no global access at all: trivially safe, and kept by DCE
    let k = b.finish().unwrap();
    assert_eq!(k.instruction_count(), 2, "{k}");
    assert!(k.waits_on_prior_grid());
    let text = k.to_string();
    assert!(
        text.find("griddepcontrol.launch_dependents").unwrap()
            < text.find("griddepcontrol.wait").unwrap()
    );
    let plain = KernelBuilder::new("k", [32, 1, 1]).unwrap().finish().unwrap();
    assert!(!plain.waits_on_prior_grid());
}

/// `y[i] = x[i] · x[(i + 1) mod n] + x[(i + 7) mod n]` over several blocks (reads across block
/// boundaries), optionally with the wait first and the trigger after the last load.
fn neighbours(n: i64, pdl: bool) -> Kernel {
    let b =
        KernelBuilder::new(if pdl { "neighbours_pdl" } else { "neighbours" }, [64, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let i = b.block_id(Axis::X) * Val::lit(64) + b.thread_id(Axis::X);
    if pdl {
        b.grid_dependency_wait();
    }
    let a = b.load(x, &i, 1, None).unwrap().remove(0);
    let c = b.load(x, &((i.clone() + Val::lit(1)) % Val::lit(n)), 1, None).unwrap().remove(0);
    let d = b.load(x, &((i.clone() + Val::lit(7)) % Val::lit(n)), 1, None).unwrap().remove(0);
    if pdl {
        b.launch_dependents();
    }
    let v = b.binary(BinOp::Mul, &a, &c).unwrap();
    let v = b.binary(BinOp::Add, &v, &d).unwrap();
    b.store(y, &i, &[v], None).unwrap();
    b.finish().unwrap()
}

#[test]
fn the_interpreter_runs_kernels_with_grid_dependency_ops_unchanged() {
    let n = 4 * 64;
    let mut rng = Rng::new(11);
    let xs: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let expect: Vec<f32> = (0..n).map(|i| xs[i] * xs[(i + 1) % n] + xs[(i + 7) % n]).collect();
    let mut outs = vec![];
    for pdl in [false, true] {
        let k = neighbours(n as i64, pdl);
        assert_eq!(k.waits_on_prior_grid(), pdl);
        // in lockstep and one warp at a time (the schedule that interleaves warps)
        for schedule in [Schedule::Lockstep, Schedule::Warps] {
            let mut args = Args::new();
            args.buffer(HostBuffer::from_f32(&xs))
                .buffer(HostBuffer::filled(Lit::f32(f32::NAN), n));
            run_scheduled(&k, [4, 1, 1], &mut args, schedule).unwrap();
            let y = args.get_buffer(1).unwrap().to_f32().unwrap();
            for (i, (g, e)) in y.iter().zip(&expect).enumerate() {
                // one rounding per op, as the kernel computes it in f32
                assert_eq!(
                    g.to_bits(),
                    e.to_bits(),
                    "pdl {pdl}, {schedule:?}: y[{i}] = {g}, expected {e}"
                );
            }
            outs.push(y);
        }
    }
    assert!(outs.windows(2).all(|w| w[0] == w[1]));
}
