//! Row sum, row max and softmax: interpreter vs f64 reference on random shapes.

use crate::common;

use common::assert_close_relative;
use tilekit_ir::interp::{self, Args, HostBuffer};
use tilekit_ir::ScalarType;
use tilekit_ops::api;
use tilekit_ops::backend::Interp;
use tilekit_ops::backend::{LayoutTensor, Record, TunedInterp};
use tilekit_ops::check::{self, check, Op};
use tilekit_ops::compiled::CompiledKernel;
use tilekit_ops::host;
use tilekit_ops::reduce::{
    build_softmax_cluster, build_softmax_online, build_softmax_stream_cluster, reference,
    softmax_chunks, softmax_kernel, ClusterTuning, OnlineTuning, Reduction, TYPES,
};
use tilekit_ops::tuning::Tuning;

fn launch(
    r: Reduction,
    shape: &[i64],
    ty: ScalarType,
    seed: u64,
) -> tilekit_ops::Result<tilekit_ops::host::Outcome> {
    check(&Interp, Op::Reduce(r), shape, ty, seed)
}

fn plan(
    r: Reduction,
    shape: &[i64],
    ty: ScalarType,
) -> tilekit_ops::Result<(CompiledKernel, [u32; 3])> {
    check::plan(Op::Reduce(r), shape, ty)
}

#[test]
fn reductions_match_on_random_shapes() {
    for ty in [ScalarType::F32, ScalarType::BF16] {
        for r in [Reduction::Sum, Reduction::Max, Reduction::Softmax] {
            for (i, s) in [[1i64, 1], [3, 1000], [5, 4096], [2, 4097], [7, 33]].iter().enumerate() {
                let o = launch(r, s, ty, i as u64).unwrap();
                let c = o.compare();
                assert!(c.passed, "{} {ty} {s:?}: {c:?}", r.name());
                assert_eq!(
                    o.got.len(),
                    if r == Reduction::Softmax { (s[0] * s[1]) as usize } else { s[0] as usize }
                );
            }
        }
    }
}

#[test]
fn softmax_rows_sum_to_one() {
    let o = launch(Reduction::Softmax, &[4, 777], ScalarType::F32, 9).unwrap();
    for row in tilekit_ops::host::to_f64(&o.got).chunks(777) {
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-5);
    }
}

#[test]
fn softmax_of_long_rows_takes_the_stream_cluster_kernel_and_matches() {
    for ty in TYPES {
        // the longest register row: 64 elements per thread (f32 rows at 256 threads, bf16 at
        // 512, see tuning::Tuning::default); above it the row is streamed by a cluster
        let max = 64 * tilekit_ops::tuning::Tuning::default().softmax_threads(ty) as i64;
        for (i, n) in [max + 1, max + 3617, 65536].into_iter().enumerate() {
            let shape = [2, n];
            assert_eq!(
                plan(Reduction::Softmax, &shape, ty).unwrap().0.kernel().name,
                "softmax_stream_cluster"
            );
            let o = launch(Reduction::Softmax, &shape, ty, 100 + i as u64).unwrap();
            let c = o.compare();
            assert!(c.passed, "softmax {ty} {shape:?}: {c:?}");
            assert_close_relative(&o.got, &o.want, n as usize, ty, &format!("{ty} {shape:?}"));
        }
    }
}

#[test]
fn without_clusters_long_rows_take_the_online_kernel_and_match() {
    // an sm_80 device's tuning: no clusters
    let t = Tuning { softmax_cluster: None, ..Tuning::default() };
    let shape = [2i64, 40_001];
    for ty in TYPES {
        let rec = Record::with_tuning(t);
        let mut y = LayoutTensor::contiguous(ty, &shape).unwrap();
        api::softmax_into(&rec, &LayoutTensor::contiguous(ty, &shape).unwrap(), &mut y).unwrap();
        assert_eq!(rec.take()[0].kernel.kernel().name, "softmax_online");
        let o = check(&TunedInterp(t), Op::Reduce(Reduction::Softmax), &shape, ty, 7).unwrap();
        assert!(o.compare().passed, "{:?}", o.compare());
        assert_close_relative(&o.got, &o.want, 40_001, ty, &format!("online {ty}"));
    }
}

#[test]
fn register_cluster_tuning_takes_the_register_cluster_kernel_and_matches() {
    let c = ClusterTuning {
        threads: 256,
        per_thread: 32,
        max_cluster: 8,
        stream: false,
        stash: false,
        bulk: false,
        ring: 0,
        held: false,
    };
    let t = Tuning { softmax_cluster: Some(c), ..Tuning::default() };
    let shape = [2i64, 40_001];
    for ty in TYPES {
        let rec = Record::with_tuning(t);
        let mut y = LayoutTensor::contiguous(ty, &shape).unwrap();
        api::softmax_into(&rec, &LayoutTensor::contiguous(ty, &shape).unwrap(), &mut y).unwrap();
        assert_eq!(rec.take().remove(0).kernel.kernel().name, "softmax_cluster");
        let o = check(&TunedInterp(t), Op::Reduce(Reduction::Softmax), &shape, ty, 8).unwrap();
        assert!(o.compare().passed, "{:?}", o.compare());
        assert_close_relative(&o.got, &o.want, 40_001, ty, &format!("register cluster {ty}"));
    }
}

/// Runs the stream-cluster kernel directly on the interpreter (contiguous rows).
fn run_stream_cluster(
    x: &HostBuffer,
    (m, n): (i64, i64),
    ty: ScalarType,
    (cluster, threads, unroll, slice, reverse): (u32, u32, i64, i64, bool),
) -> HostBuffer {
    let o = OnlineTuning { threads, unroll, reverse, blocks_per_sm: 0 };
    let k =
        build_softmax_stream_cluster(ty, host::vector_for(ty, &[n]), o, cluster, slice).unwrap();
    let mut args = Args::new();
    let y = host::poisoned(ty, (m * n) as usize).unwrap();
    args.tensor(x.clone(), &[m, n], &[n, 1]).tensor(y, &[m, n], &[n, 1]);
    interp::run(&k, [cluster * m as u32, 1, 1], &mut args).unwrap();
    args.take_buffer(5).unwrap()
}

#[test]
fn stream_cluster_softmax_matches_for_every_split() {
    // slices of one and several chunks, a tail, blocks past the row's end, both directions,
    // a row longer than the slices (2x5000 f32: 4 slices of 3 × 256; the last block takes
    // the rest)
    let cases = [
        ((3i64, 1000i64), (2u32, 32u32, 1i64, 4i64, true)),
        ((2, 5000), (4, 32, 2, 3, false)),
        ((2, 9), (8, 32, 1, 1, true)),
        ((1, 1), (2, 32, 1, 1, true)),
        ((2, 3001), (3, 64, 1, 2, true)),
    ];
    for ty in TYPES {
        for (i, ((m, n), shape)) in cases.into_iter().enumerate() {
            let x = host::random(ty, (m * n) as usize, 80 + i as u64).unwrap();
            let want = reference(Reduction::Softmax, &x, m as usize, n as usize, ty).unwrap();
            let got = run_stream_cluster(&x, (m, n), ty, shape);
            let what = format!("stream cluster {ty} {m}x{n} {shape:?}");
            assert_close_relative(&got, &want, n as usize, ty, &what);
        }
    }
    // an increasing row: every block's max exceeds the previous block's
    let n = 4096i64;
    let x: Vec<f32> = (0..n).map(|j| j as f32 / 200.0 - 8.0).collect();
    let x = HostBuffer::from_f32(&x);
    let want = reference(Reduction::Softmax, &x, 1, n as usize, ScalarType::F32).unwrap();
    let got = run_stream_cluster(&x, (1, n), ScalarType::F32, (4, 32, 2, 4, true));
    assert_close_relative(&got, &want, n as usize, ScalarType::F32, "increasing row");
}

/// Runs the cluster kernel directly on the interpreter (contiguous rows).
fn run_cluster(
    x: &HostBuffer,
    (m, n): (i64, i64),
    ty: ScalarType,
    (cluster, threads, chunks): (u32, u32, i64),
) -> HostBuffer {
    let k =
        build_softmax_cluster(ty, host::vector_for(ty, &[n]), cluster, threads, chunks).unwrap();
    let mut args = Args::new();
    let y = host::poisoned(ty, (m * n) as usize).unwrap();
    args.tensor(x.clone(), &[m, n], &[n, 1]).tensor(y, &[m, n], &[n, 1]);
    interp::run(&k, [cluster * m as u32, 1, 1], &mut args).unwrap();
    args.take_buffer(5).unwrap()
}

#[test]
fn cluster_softmax_matches_for_every_split() {
    // (rows, n) × (cluster, threads, chunks): rows spread over every block, a tail in the last
    // block, blocks entirely past the row's end (n = 5 over 4 blocks), one element, odd sizes
    let cases = [
        ((3i64, 1000i64), (2u32, 64u32, 2i64)),
        ((2, 4096), (4, 32, 8)),
        ((2, 5), (4, 32, 1)),
        ((1, 1), (2, 32, 1)),
        ((2, 3001), (3, 64, 4)),
        ((1, 2048), (16, 32, 1)),
    ];
    for ty in TYPES {
        for (i, ((m, n), shape)) in cases.into_iter().enumerate() {
            let x = host::random(ty, (m * n) as usize, 60 + i as u64).unwrap();
            let want = reference(Reduction::Softmax, &x, m as usize, n as usize, ty).unwrap();
            let got = run_cluster(&x, (m, n), ty, shape);
            let what = format!("cluster {ty} {m}x{n} {shape:?}");
            assert_close_relative(&got, &want, n as usize, ty, &what);
        }
    }
}

#[test]
fn cluster_softmax_combines_blocks_with_different_maxima() {
    // an increasing row: each block's max is higher than the previous block's, so a sum that
    // is not rescaled to the cluster's max is off by factors of e^(512/100)
    let n = 2048i64;
    let x: Vec<f32> = (0..n).map(|j| j as f32 / 100.0 - 8.0).collect();
    let x = HostBuffer::from_f32(&x);
    let want = reference(Reduction::Softmax, &x, 1, n as usize, ScalarType::F32).unwrap();
    let got = run_cluster(&x, (1, n), ScalarType::F32, (4, 32, 4));
    assert_close_relative(&got, &want, n as usize, ScalarType::F32, "increasing row");
}

#[test]
fn cluster_softmax_refuses_bad_shapes() {
    for (c, t, ch) in [(0u32, 64u32, 1i64), (17, 64, 1), (2, 100, 1), (2, 64, 0), (2, 64, 17)] {
        let e = build_softmax_cluster(ScalarType::F32, 4, c, t, ch).unwrap_err().to_string();
        assert!(e.contains("softmax"), "{e}");
    }
}

/// Runs the online kernel directly on the interpreter (contiguous rows, as the API binds them).
fn run_online(x: &HostBuffer, m: i64, n: i64, ty: ScalarType) -> HostBuffer {
    let k = build_softmax_online(ty, host::vector_for(ty, &[n])).unwrap();
    assert_eq!(k.name, "softmax_online");
    let mut args = Args::new();
    let y = host::poisoned(ty, (m * n) as usize).unwrap();
    args.tensor(x.clone(), &[m, n], &[n, 1]).tensor(y, &[m, n], &[n, 1]);
    interp::run(&k, [m as u32, 1, 1], &mut args).unwrap();
    args.take_buffer(5).unwrap()
}

#[test]
fn online_softmax_matches_on_short_rows_too() {
    // one chunk with most threads all padding (300), exactly one chunk, several chunks with a
    // tail (f32 chunk 4096, bf16 8192), a single element
    for ty in TYPES {
        for (i, (m, n)) in
            [(3i64, 300i64), (2, 4096), (2, 8192), (2, 9001), (2, 1)].into_iter().enumerate()
        {
            let x = host::random(ty, (m * n) as usize, 40 + i as u64).unwrap();
            let want = reference(Reduction::Softmax, &x, m as usize, n as usize, ty).unwrap();
            let got = run_online(&x, m, n, ty);
            assert_close_relative(&got, &want, n as usize, ty, &format!("online {ty} {m}x{n}"));
        }
    }
}

#[test]
fn online_softmax_rescales_when_a_later_chunk_raises_the_max() {
    // an increasing row: every chunk raises the running max, so a sum that is not rescaled
    // (or rescaled the wrong way) is off by factors of e^(4096/1000) and more
    let n = 12_000i64;
    let x: Vec<f32> = (0..2 * n).map(|j| (j % n) as f32 / 1000.0 - 3.0).collect();
    let x = HostBuffer::from_f32(&x);
    let want = reference(Reduction::Softmax, &x, 2, n as usize, ScalarType::F32).unwrap();
    let got = run_online(&x, 2, n, ScalarType::F32);
    assert_close_relative(&got, &want, n as usize, ScalarType::F32, "increasing rows");
    // and a decreasing row: the max is in the first chunk, later chunks add tiny terms
    let x: Vec<f32> = (0..n).map(|j| 5.0 - j as f32 / 1000.0).collect();
    let x = HostBuffer::from_f32(&x);
    let want = reference(Reduction::Softmax, &x, 1, n as usize, ScalarType::F32).unwrap();
    let got = run_online(&x, 1, n, ScalarType::F32);
    assert_close_relative(&got, &want, n as usize, ScalarType::F32, "decreasing row");
}

#[test]
fn plan_picks_the_register_kernel_then_a_stream_cluster() {
    for ty in TYPES {
        let max = 64 * tilekit_ops::tuning::Tuning::default().softmax_threads(ty) as i64;
        assert_eq!(max, if ty == ScalarType::F32 { 16384 } else { 32768 });
        let (k, grid) = plan(Reduction::Softmax, &[4, max], ty).unwrap();
        assert_eq!((k.kernel().name.as_str(), grid), ("softmax", [4, 1, 1]));
        // the register kernel has no loop and no cluster
        assert_eq!(k.kernel().to_string().matches("for %").count(), 0);
        // one more element: the row streamed by 8 blocks (chunks of 256 threads × 16 bytes
        // × 4 vectors (f32) or × 2 (bf16), both 4096 elements: 5 or 9 of them → 8 blocks)
        for n in [max + 1, 262_144, 1 << 22] {
            let (k, grid) = plan(Reduction::Softmax, &[4, n], ty).unwrap();
            assert_eq!((k.kernel().name.as_str(), grid), ("softmax_stream_cluster", [32, 1, 1]));
            assert_eq!((k.kernel().cluster_dim, k.kernel().block_dim), ([8, 1, 1], [256, 1, 1]));
            let text = k.kernel().to_string();
            assert_eq!(text.matches("barrier.cluster").count(), 2);
            assert_eq!(text.matches("for %").count(), 2, "{text}");
        }
        assert!(plan(Reduction::Softmax, &[4, 0], ty).is_err());
        assert!(softmax_chunks(ty, 16385).is_err());
        assert_eq!(softmax_kernel(ty, 1 << 30, 1).unwrap().name, "softmax_online");
    }
}

#[test]
fn every_online_launch_shape_matches() {
    use tilekit_ops::reduce::{build_softmax_online_tuned, OnlineTuning};
    // the shapes `tilekit tune` tries: threads, vectors in flight, direction of pass 2, blocks
    // per SM (reserved shared memory)
    let (m, n) = (2i64, 9001i64);
    for ty in TYPES {
        let x = host::random(ty, (m * n) as usize, 77).unwrap();
        let want = reference(Reduction::Softmax, &x, m as usize, n as usize, ty).unwrap();
        for (threads, unroll, reverse, blocks_per_sm) in
            [(1024u32, 4i64, true, 1u32), (512, 2, false, 0), (256, 4, true, 2), (512, 8, true, 0)]
        {
            let t = OnlineTuning { threads, unroll, reverse, blocks_per_sm };
            let k = build_softmax_online_tuned(ty, host::vector_for(ty, &[n]), t).unwrap();
            let mut args = Args::new();
            let y = host::poisoned(ty, (m * n) as usize).unwrap();
            args.tensor(x.clone(), &[m, n], &[n, 1]).tensor(y, &[m, n], &[n, 1]);
            interp::run(&k, [m as u32, 1, 1], &mut args).unwrap();
            let got = args.take_buffer(5).unwrap();
            assert_close_relative(&got, &want, n as usize, ty, &format!("{t:?} {ty}"));
        }
    }
}

#[test]
fn the_staged_kernel_matches_and_refuses_rows_beyond_shared_memory() {
    use tilekit_ops::reduce::build_softmax_staged;
    for ty in TYPES {
        for (i, (m, n)) in [(3i64, 300i64), (2, 9001), (2, 20001)].into_iter().enumerate() {
            let x = host::random(ty, (m * n) as usize, 90 + i as u64).unwrap();
            let want = reference(Reduction::Softmax, &x, m as usize, n as usize, ty).unwrap();
            for (threads, unroll) in [(512u32, 4i64), (256, 2)] {
                let k = build_softmax_staged(ty, host::vector_for(ty, &[n]), n, threads, unroll)
                    .unwrap();
                let mut args = Args::new();
                let y = host::poisoned(ty, (m * n) as usize).unwrap();
                args.tensor(x.clone(), &[m, n], &[n, 1]).tensor(y, &[m, n], &[n, 1]);
                interp::run(&k, [m as u32, 1, 1], &mut args).unwrap();
                let got = args.take_buffer(5).unwrap();
                assert_close_relative(
                    &got,
                    &want,
                    n as usize,
                    ty,
                    &format!("staged {threads}x{unroll} {ty} {m}x{n}"),
                );
            }
        }
    }
    // 65536 f32 is 256 KiB: more shared memory than a block has
    let e = build_softmax_staged(ScalarType::F32, 4, 65536, 512, 4).unwrap_err().to_string();
    assert!(e.contains("shared"), "{e}");
}

#[test]
fn stashed_stream_cluster_softmax_matches() {
    // each block keeps its slice in shared memory: slices of one and several chunks, blocks
    // past the row's end, both directions
    let cases = [
        ((3i64, 1000i64), (2u32, 32u32, 1i64, 4i64, true)),
        ((2, 5000), (4, 32, 2, 5, false)),
        ((2, 9), (8, 32, 1, 1, true)),
    ];
    for ty in TYPES {
        for (i, ((m, n), (cluster, threads, unroll, slice, reverse))) in
            cases.into_iter().enumerate()
        {
            let o = OnlineTuning { threads, unroll, reverse, blocks_per_sm: 0 };
            let v = host::vector_for(ty, &[n]);
            let k = tilekit_ops::reduce::build_softmax_stream_cluster_stashed(
                ty, v, o, cluster, slice, true,
            )
            .unwrap();
            assert_eq!(k.name, "softmax_stream_cluster_staged");
            let x = host::random(ty, (m * n) as usize, 90 + i as u64).unwrap();
            let want = reference(Reduction::Softmax, &x, m as usize, n as usize, ty).unwrap();
            let mut args = Args::new();
            let y = host::poisoned(ty, (m * n) as usize).unwrap();
            args.tensor(x.clone(), &[m, n], &[n, 1]).tensor(y, &[m, n], &[n, 1]);
            interp::run(&k, [cluster * m as u32, 1, 1], &mut args).unwrap();
            let got = args.take_buffer(5).unwrap();
            assert_close_relative(&got, &want, n as usize, ty, &format!("stashed {ty} {m}x{n}"));
        }
    }
    // the API with a stashed tuning, through the plan
    let c = ClusterTuning {
        threads: 256,
        per_thread: 16,
        max_cluster: 8,
        stream: true,
        stash: true,
        bulk: false,
        ring: 0,
        held: false,
    };
    let t = Tuning { softmax_cluster: Some(c), ..Tuning::default() };
    let o =
        check(&TunedInterp(t), Op::Reduce(Reduction::Softmax), &[2, 40_001], ScalarType::F32, 9)
            .unwrap();
    assert!(o.compare().passed, "{:?}", o.compare());
}

#[test]
fn bulk_cluster_softmax_matches_for_every_split() {
    // rows of whole 16-byte vectors (bulk copies move 16-byte units): one block, several, a
    // block past the row's end, chunks partly past it, rising maxima across blocks
    let cases = [
        ((3i64, 1024i64), (1u32, 32u32, 2i64, 8i64)),
        ((2, 4000), (4, 32, 2, 4)),
        ((2, 504), (4, 32, 1, 1)),
        ((1, 8), (2, 32, 1, 1)),
    ];
    for ty in TYPES {
        for (i, ((m, n), (cluster, threads, unroll, chunks))) in cases.into_iter().enumerate() {
            let k = tilekit_ops::reduce::build_softmax_bulk_cluster(
                ty, cluster, threads, unroll, chunks,
            )
            .unwrap();
            let x = host::random(ty, (m * n) as usize, 120 + i as u64).unwrap();
            let want = reference(Reduction::Softmax, &x, m as usize, n as usize, ty).unwrap();
            let mut args = Args::new();
            let y = host::poisoned(ty, (m * n) as usize).unwrap();
            args.tensor(x.clone(), &[m, n], &[n, 1]).tensor(y, &[m, n], &[n, 1]);
            interp::run(&k, [cluster * m as u32, 1, 1], &mut args)
                .unwrap_or_else(|e| panic!("bulk {ty} {m}x{n}: {e}"));
            let got = args.take_buffer(5).unwrap();
            assert_close_relative(&got, &want, n as usize, ty, &format!("bulk {ty} {m}x{n}"));
        }
    }
    let n = 2048i64;
    let x: Vec<f32> = (0..n).map(|j| j as f32 / 100.0 - 8.0).collect();
    let x = HostBuffer::from_f32(&x);
    let want = reference(Reduction::Softmax, &x, 1, n as usize, ScalarType::F32).unwrap();
    let k = tilekit_ops::reduce::build_softmax_bulk_cluster(ScalarType::F32, 4, 32, 2, 2).unwrap();
    let mut args = Args::new();
    args.tensor(x, &[1, n], &[n, 1]).tensor(
        host::poisoned(ScalarType::F32, n as usize).unwrap(),
        &[1, n],
        &[n, 1],
    );
    interp::run(&k, [4, 1, 1], &mut args).unwrap();
    let got = args.take_buffer(5).unwrap();
    assert_close_relative(&got, &want, n as usize, ScalarType::F32, "bulk increasing row");
}

#[test]
fn bulk_cluster_tuning_takes_bulk_copies_where_rows_allow_and_streams_otherwise() {
    let c = ClusterTuning {
        threads: 256,
        per_thread: 16,
        max_cluster: 8,
        stream: true,
        stash: false,
        bulk: true,
        ring: 0,
        held: false,
    };
    let t = Tuning { softmax_cluster: Some(c), ..Tuning::default() };
    for ty in TYPES {
        // 40000 is a multiple of every 16-byte vector: bulk copies; 40001 is not: streamed
        for (n, name) in [(40_000i64, "softmax_bulk_cluster"), (40_001, "softmax_stream_cluster")] {
            let shape = [2i64, n];
            let rec = Record::with_tuning(t);
            let mut y = LayoutTensor::contiguous(ty, &shape).unwrap();
            api::softmax_into(&rec, &LayoutTensor::contiguous(ty, &shape).unwrap(), &mut y)
                .unwrap();
            assert_eq!(rec.take().remove(0).kernel.kernel().name, name, "{ty} {n}");
            let o = check(&TunedInterp(t), Op::Reduce(Reduction::Softmax), &shape, ty, 11).unwrap();
            assert!(o.compare().passed, "{ty} {n}: {:?}", o.compare());
            assert_close_relative(&o.got, &o.want, n as usize, ty, &format!("{name} {ty}"));
        }
    }
}

#[test]
fn staged_by_bulk_copies_takes_one_block_per_row_and_matches() {
    let t =
        Tuning { softmax_staged: Some((256, 4)), softmax_staged_bulk: true, ..Tuning::default() };
    for ty in TYPES {
        let shape = [3i64, 40_000];
        let rec = Record::with_tuning(t);
        let mut y = LayoutTensor::contiguous(ty, &shape).unwrap();
        api::softmax_into(&rec, &LayoutTensor::contiguous(ty, &shape).unwrap(), &mut y).unwrap();
        let l = rec.take().remove(0);
        assert_eq!((l.kernel.kernel().name.as_str(), l.grid), ("softmax_bulk_cluster", [3, 1, 1]));
        assert_eq!(l.kernel.kernel().cluster_size(), 1);
        let o = check(&TunedInterp(t), Op::Reduce(Reduction::Softmax), &shape, ty, 12).unwrap();
        assert!(o.compare().passed, "{ty}: {:?}", o.compare());
        assert_close_relative(&o.got, &o.want, 40_000, ty, &format!("staged bulk {ty}"));
    }
}

#[test]
fn persistent_softmax_walks_rows_over_a_grid_of_clusters_with_two_stages_in_flight() {
    // (rows, columns), (cluster, threads, unroll, chunks), clusters in the grid: fewer
    // clusters than rows (each walks several rows, both stages reused, parity flips),
    // more clusters than rows (some walk none), ragged last slices, one-block clusters
    let cases = [
        ((7, 1000), (4, 32, 2, 2, 2), 2),
        ((5, 2048), (2, 64, 2, 2, 3), 1),
        ((3, 520), (1, 32, 1, 5, 2), 2),
        ((2, 96), (4, 32, 1, 1, 4), 5),
        ((9, 4096), (8, 32, 2, 2, 4), 1),
        ((13, 256), (2, 32, 1, 1, 5), 2),
    ];
    for ty in TYPES {
        for (i, ((m, n), (cluster, threads, unroll, chunks, stages), clusters)) in
            cases.into_iter().enumerate()
        {
            let v = 16 / ty.size_bytes() as i64;
            let n = n / v * v; // whole 16-byte vectors
            let k = tilekit_ops::reduce::build_softmax_persistent(
                ty, cluster, threads, unroll, chunks, stages,
            )
            .unwrap();
            let x = host::random(ty, (m * n) as usize, 140 + i as u64).unwrap();
            let want = reference(Reduction::Softmax, &x, m as usize, n as usize, ty).unwrap();
            let mut args = Args::new();
            let y = host::poisoned(ty, (m * n) as usize).unwrap();
            args.tensor(x.clone(), &[m, n], &[n, 1]).tensor(y, &[m, n], &[n, 1]);
            let what =
                format!("persistent {ty} {m}x{n} cluster {cluster} × {clusters}, {stages} stages");
            interp::run(&k, [cluster * clusters, 1, 1], &mut args)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = args.take_buffer(5).unwrap();
            assert_close_relative(&got, &want, n as usize, ty, &what);
        }
    }
}

#[test]
fn persistent_tuning_sizes_the_grid_by_the_multiprocessors_and_walks_every_row() {
    let c = ClusterTuning {
        threads: 64,
        per_thread: 16,
        max_cluster: 4,
        stream: true,
        stash: false,
        bulk: true,
        ring: 2,
        held: false,
    };
    let t = Tuning { softmax_cluster: Some(c), ..Tuning::default() };
    for ty in TYPES {
        // 11 rows of 40000 (past the register kernel): clusters of 4 (plan), slices of 10
        // chunks of 4 KiB (f32) or 2 KiB (bf16), 2 stages: 80 or 40 KiB a block, 2 or 5 per
        // SM (shared memory); 4 SMs × 2 / 4 = 2 clusters, 4 × 5 / 4 = 5 clusters
        let shape = [11i64, 40_000];
        let rec = Record::with_tuning(t);
        let mut y = LayoutTensor::contiguous(ty, &shape).unwrap();
        api::softmax_into(&rec, &LayoutTensor::contiguous(ty, &shape).unwrap(), &mut y).unwrap();
        let l = rec.take().remove(0);
        let blocks = if ty == ScalarType::F32 { 8 } else { 20 };
        assert_eq!(
            (l.kernel.kernel().name.as_str(), l.grid),
            ("softmax_persistent", [blocks, 1, 1])
        );
        assert_eq!(l.kernel.kernel().cluster_size(), 4);
        let o = check(&TunedInterp(t), Op::Reduce(Reduction::Softmax), &shape, ty, 13).unwrap();
        assert!(o.compare().passed, "{ty}: {:?}", o.compare());
        assert_close_relative(&o.got, &o.want, 40_000, ty, &format!("persistent {ty}"));
    }
}

#[test]
fn held_softmax_exponentiates_once_and_matches_for_every_split() {
    // (rows, columns), (cluster, threads, unroll, chunks): one block, several, blocks past the
    // row's end, chunks partly past it, rows whose maxima sit in different blocks
    let cases = [
        ((3, 1024), (1, 32, 2, 4)),
        ((2, 4000), (4, 32, 2, 4)),
        ((2, 504), (4, 32, 1, 1)),
        ((1, 8), (2, 32, 1, 1)),
        ((5, 3000), (8, 64, 1, 2)),
    ];
    for ty in TYPES {
        for (i, ((m, n), (cluster, threads, unroll, chunks))) in cases.into_iter().enumerate() {
            let v = 16 / ty.size_bytes() as i64;
            let n = (n / v).max(1) * v;
            let chunks = chunks.min(64 / (unroll * v)).max(1);
            let k =
                tilekit_ops::reduce::build_softmax_bulk_held(ty, cluster, threads, unroll, chunks)
                    .unwrap();
            let covered = cluster as i64 * chunks * threads as i64 * v * unroll;
            assert!(covered >= n, "case {i} {ty}: {covered} < {n}");
            let x = host::random(ty, (m * n) as usize, 160 + i as u64).unwrap();
            let want = reference(Reduction::Softmax, &x, m as usize, n as usize, ty).unwrap();
            let mut args = Args::new();
            let y = host::poisoned(ty, (m * n) as usize).unwrap();
            args.tensor(x.clone(), &[m, n], &[n, 1]).tensor(y, &[m, n], &[n, 1]);
            let what = format!("held {ty} {m}x{n} cluster {cluster}");
            interp::run(&k, [cluster * m as u32, 1, 1], &mut args)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = args.take_buffer(5).unwrap();
            assert_close_relative(&got, &want, n as usize, ty, &what);
        }
    }
    // through the API with a tuning that asks for it
    let c = ClusterTuning {
        threads: 64,
        per_thread: 16,
        max_cluster: 16,
        stream: true,
        stash: false,
        bulk: true,
        ring: 0,
        held: true,
    };
    let t = Tuning { softmax_cluster: Some(c), ..Tuning::default() };
    for ty in TYPES {
        let shape = [3i64, 40_000];
        let rec = Record::with_tuning(t);
        let mut y = LayoutTensor::contiguous(ty, &shape).unwrap();
        api::softmax_into(&rec, &LayoutTensor::contiguous(ty, &shape).unwrap(), &mut y).unwrap();
        let l = rec.take().remove(0);
        assert_eq!((l.kernel.kernel().name.as_str(), l.grid), ("softmax_bulk_held", [48, 1, 1]));
        let o = check(&TunedInterp(t), Op::Reduce(Reduction::Softmax), &shape, ty, 14).unwrap();
        assert!(o.compare().passed, "{ty}: {:?}", o.compare());
        assert_close_relative(&o.got, &o.want, 40_000, ty, &format!("held {ty}"));
    }
}

#[test]
fn the_one_block_per_row_kernels_wait_for_the_prior_grid_then_trigger_after_reading_the_row() {
    use tilekit_ops::reduce::{build_reduce, build_softmax, Reduction};
    for ty in [ScalarType::F32, ScalarType::BF16] {
        let v = 16 / ty.size_bytes() as i64;
        for k in [
            build_reduce(Reduction::Sum, ty, v).unwrap(),
            build_reduce(Reduction::Max, ty, 1).unwrap(),
            build_softmax(ty, 2, v).unwrap(),
        ] {
            common::assert_pdl_placement(&k);
        }
    }
}

/// Four rows of `n` values exact in bf16: row 0 all NaN, row 1 numbers with a NaN in its last
/// column, row 2 numbers only (all ≤ −1, so a padding fill other than −∞ would show), row 3
/// numbers with a negative NaN in its middle column.
fn rows_with_nan(n: usize) -> Vec<f64> {
    (0..4 * n)
        .map(|i| {
            let (r, c) = (i / n, i % n);
            match r {
                0 => f64::NAN,
                1 if c == n - 1 => f64::NAN,
                3 if c == n / 2 => -f64::NAN,
                2 => -1.0 - ((c * 17) % 97) as f64 / 8.0,
                _ => ((r * 31 + c * 17) % 97) as f64 / 8.0 - 6.0,
            }
        })
        .collect()
}

#[test]
fn row_max_of_a_row_holding_nan_is_nan() {
    // torch.amax: a row holding a NaN (all NaN, or one among numbers, in the tail or the
    // middle) gives NaN, the other rows their maxima; contiguous rows (16-byte vectors where
    // the length allows) and columns of a transposed tensor (scalar accesses)
    for ty in TYPES {
        for n in [1usize, 2, 7, 33, 1000, 4096, 4097, 40_001] {
            let vals = rows_with_nan(n);
            let want2 = vals[2 * n..3 * n].iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let t = common::tensor(ty, &vals, &[4, n as i64]);
            // the same rows as the columns of an n × 4 tensor, transposed back
            let cols: Vec<f64> = (0..4 * n).map(|i| vals[(i % 4) * n + i / 4]).collect();
            let tt = common::tensor(ty, &cols, &[n as i64, 4]).transpose(0, 1).unwrap();
            for (what, x) in [("rows", &t), ("transposed", &tt)] {
                let y = api::row_max(&Interp, x).unwrap();
                let got = host::to_f64(&y.buffer());
                let ok = got[0].is_nan() && got[1].is_nan() && got[2] == want2 && got[3].is_nan();
                assert!(ok, "{ty} n = {n} {what}: {got:?} (row 2's max {want2})");
            }
            let want = reference(Reduction::Max, &t.buffer(), 4, n, ty).unwrap();
            let want = host::to_f64(&want);
            assert!(want[0].is_nan() && want[1].is_nan() && want[2] == want2 && want[3].is_nan());
        }
    }
}

#[test]
fn softmax_of_a_row_holding_nan_is_nan_in_that_row_only_for_every_kernel() {
    // torch.softmax: a row holding a NaN gives NaN throughout; the other rows are untouched.
    // Every row kernel the op picks: registers, clusters (registers, streamed, bulk copies
    // with held registers), the online kernel, and the cooperative kernels (slices in
    // registers, in shared memory — 16-bit: max on packed pairs — with one exponential)
    use tilekit_ops::reduce::CoopTuning;
    let cluster = |stream, bulk, held| ClusterTuning {
        threads: if stream { 64 } else { 256 },
        per_thread: if stream { 16 } else { 32 },
        max_cluster: if stream { 16 } else { 8 },
        stream,
        stash: false,
        bulk,
        ring: 0,
        held,
    };
    let coop = |c: CoopTuning| Tuning { softmax_coop: Some(c), ..Tuning::default() };
    let cases: Vec<(Tuning, usize, &str)> = vec![
        (Tuning::default(), 1, "softmax"),
        (Tuning::default(), 7, "softmax"),
        (Tuning::default(), 1000, "softmax"),
        (Tuning::default(), 40_001, "softmax_stream_cluster"),
        (Tuning { softmax_cluster: None, ..Tuning::default() }, 40_001, "softmax_online"),
        (
            Tuning { softmax_cluster: Some(cluster(false, false, false)), ..Tuning::default() },
            40_001,
            "softmax_cluster",
        ),
        (
            Tuning { softmax_cluster: Some(cluster(true, true, true)), ..Tuning::default() },
            40_000,
            "softmax_bulk_held",
        ),
        (coop(CoopTuning::in_registers(128, 64)), 40_000, "softmax_coop"),
        (coop(CoopTuning::in_shared(128, 16, 16)), 40_001, "softmax_coop_smem"),
        (
            coop(CoopTuning::in_shared(128, 16, 16).with_bulk().with_one_exp()),
            40_000,
            "softmax_coop_smem_bulk_1exp",
        ),
    ];
    for ty in TYPES {
        for &(t, n, name) in &cases {
            let shape = [4i64, n as i64];
            let rec = Record::with_tuning(t);
            let lx = LayoutTensor::contiguous(ty, &shape).unwrap();
            api::softmax_into(&rec, &lx, &mut lx.clone()).unwrap();
            assert_eq!(rec.take().remove(0).kernel.kernel().name, name, "{ty} {n}");
            let x = common::tensor(ty, &rows_with_nan(n), &shape);
            let mut y = common::tensor(ty, &vec![0.0; 4 * n], &shape);
            api::softmax_into(&TunedInterp(t), &x, &mut y).unwrap();
            let got = host::to_f64(&y.buffer());
            for r in [0, 1, 3] {
                let row = &got[r * n..(r + 1) * n];
                assert!(row.iter().all(|v| v.is_nan()), "{name} {ty} {n}: row {r} {row:?}");
            }
            // row 2 against the reference, on its own
            let x2 = common::tensor(ty, &rows_with_nan(n)[2 * n..3 * n], &[1, n as i64]);
            let want = reference(Reduction::Softmax, &x2.buffer(), 1, n, ty).unwrap();
            let got2 = host::from_f64(ty, &got[2 * n..3 * n]);
            assert_close_relative(&got2, &want, n, ty, &format!("{name} {ty} {n}: row 2"));
            // the reference agrees on the NaN rows
            let want = reference(Reduction::Softmax, &x.buffer(), 4, n, ty).unwrap();
            let want = host::to_f64(&want);
            assert!([0, 1, 3].iter().all(|r| want[r * n..(r + 1) * n].iter().all(|v| v.is_nan())));
        }
    }
}
