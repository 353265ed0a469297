//! Every kernel of the library, in every configuration the selftest uses, is emitted as PTX for
//! sm_80, sm_90 and sm_90a and assembled with ptxas (CI requires the assembler); cluster kernels
//! for sm_90 and sm_90a only (sm_80 has no clusters: a named error), the Hopper kernels
//! (`*_sm90*`: TMA + wgmma) for sm_90a only.

use tilekit_ops::run::{plan, SELFTEST_CASES};
use tilekit_ptx::{emit_kernel, ptxas, Target};

#[test]
fn every_library_kernel_assembles() {
    for (i, (kernel, shape, dtype)) in SELFTEST_CASES.iter().enumerate() {
        // the kernel the API launches for this case (tests/it/run.rs: plan = launch)
        let launched = [plan(kernel, shape, *dtype).unwrap()];
        for (k, _) in launched {
            for t in Target::ALL {
                if k.cluster_size() > 1 && t == Target::Sm80 {
                    // thread-block clusters are sm_90 and later: a named error, not PTX
                    let e = emit_kernel(&k, t).unwrap_err().to_string();
                    assert!(e.contains("clusters need sm_90"), "{kernel}: {e}");
                    continue;
                }
                let ptx = match emit_kernel(&k, t) {
                    Ok(ptx) => ptx,
                    // the Hopper kernels (gemm: TMA, mbarrier transactions, wgmma) below
                    // sm_90a: a named error, not PTX
                    Err(e) if t != Target::Sm90a && k.name.contains("_sm90") => {
                        assert!(e.to_string().contains("sm_90"), "{kernel}: {e}");
                        continue;
                    }
                    Err(e) => panic!("{kernel}: {e}"),
                };
                if let Some(report) =
                    ptxas::assemble(&ptx, t, &format!("{kernel}_{}_{}", dtype.name(), i)).unwrap()
                {
                    assert!(
                        !report.contains("spill stores, 0 bytes spill loads")
                            || report.contains("0 bytes spill stores"),
                        "{kernel}: spills\n{report}"
                    );
                }
            }
        }
    }
}

/// The 64-bit-indexed twins the memory-bound ops take past 2^31 elements (issue 30): copy,
/// transpose, elementwise, row sum and max, the online softmax — for every target, every dtype.
#[test]
fn the_64_bit_kernels_assemble() {
    use tilekit_ir::ScalarType::{self, BF16, F16, F32, I64};
    use tilekit_ops::transpose::TransposeLoop;
    use tilekit_ops::{copy, elementwise, reduce};
    for ty in [F32, F16, BF16] {
        let v = 16 / ty.size_bytes() as i64;
        let mut ks = vec![copy::build_indexed(ty, v, v, I64).unwrap()];
        let tv = tilekit_ops::transpose::tile(ty).0;
        for lp in [
            TransposeLoop::default(),
            TransposeLoop { tiles_per_block: 2, buffers: 2, ..TransposeLoop::default() },
        ] {
            ks.push(tilekit_ops::transpose::build_looped_indexed(ty, tv, tv, tv, lp, I64).unwrap());
        }
        for op in [elementwise::Binary::Add, elementwise::Binary::Max] {
            ks.push(elementwise::build_indexed(op, ty, v, 1, I64).unwrap());
        }
        if reduce::TYPES.contains(&ty) {
            for r in [reduce::Reduction::Sum, reduce::Reduction::Max] {
                ks.push(reduce::build_reduce_indexed(r, ty, v, I64).unwrap());
            }
            let o = reduce::OnlineTuning::default();
            ks.push(reduce::build_softmax_online_indexed(ty, v, o, I64).unwrap());
        }
        for k in ks {
            for t in Target::ALL {
                let ptx = emit_kernel(&k, t).unwrap();
                assert!(ptx.contains(".param .s64") || ptx.contains(".param .u64"), "{}", k.name);
                let name = format!("{}_i64_{}_{:?}", k.name, ScalarType::name(ty), t);
                ptxas::assemble(&ptx, t, &name).unwrap();
            }
        }
    }
}

/// The row-reduction kernels chosen by shape (a warp a row, a row split over blocks), both
/// index types, for every target.
#[test]
fn the_row_reduction_kernels_assemble() {
    use tilekit_ir::ScalarType::{self, BF16, F32, I32, I64};
    use tilekit_ops::reduce::{split_rows, warp_rows, Reduction};
    for ty in [F32, BF16] {
        let v = 16 / ty.size_bytes() as i64;
        for r in [Reduction::Sum, Reduction::Max] {
            for ix in [I32, I64] {
                for k in [
                    warp_rows::build(r, ty, v, ix).unwrap(),
                    warp_rows::build(r, ty, 1, ix).unwrap(),
                    split_rows::build(r, ty, v, ix).unwrap(),
                ] {
                    for t in Target::ALL {
                        let ptx = emit_kernel(&k, t).unwrap();
                        let name = format!("{}_{}_{:?}_{:?}", k.name, ScalarType::name(ty), ix, t);
                        ptxas::assemble(&ptx, t, &name).unwrap();
                    }
                }
            }
        }
    }
}

#[test]
fn the_tiled_transpose_assembles_without_spills() {
    use tilekit_ir::ScalarType;
    use tilekit_ops::transpose::build_tiled;
    // the candidates `tilekit tune` sweeps: f32 micro-block 4, bf16 micro-blocks 8, 4 and 2,
    // one and two shared buffers, loads before or after the stores
    for (ty, v) in [
        (ScalarType::F32, 4i64),
        (ScalarType::BF16, 8),
        (ScalarType::BF16, 4),
        (ScalarType::BF16, 2),
    ] {
        for (buffers, prefetch) in [(1u32, true), (2, true), (1, false), (2, false)] {
            let k = build_tiled(ty, v, v, v, buffers, prefetch).unwrap();
            for t in Target::ALL {
                let ptx = emit_kernel(&k, t).unwrap();
                let name = format!("transpose_tiled_{}_{v}_{buffers}_{prefetch}", ty.name());
                if let Some(report) = ptxas::assemble(&ptx, t, &name).unwrap() {
                    // "N bytes spill stores": ptxas keeps the 16-byte bf16 micro-block (two
                    // tiles of 64 16-bit values) in 80 registers and spills a few bytes, with or
                    // without a register cap; every other configuration spills nothing
                    let spilled: u32 = report
                        .split(" bytes spill stores")
                        .next()
                        .and_then(|h| h.rsplit(' ').next())
                        .and_then(|n| n.parse().ok())
                        .unwrap_or_else(|| panic!("{name}: no spill line\n{report}"));
                    let allowed = if ty == ScalarType::BF16 && v == 8 { 32 } else { 0 };
                    assert!(spilled <= allowed, "{name} {t:?}: {spilled} bytes spilled\n{report}");
                }
            }
        }
    }
}

#[test]
fn the_transposes_cache_operators_reach_the_ptx_and_assemble() {
    use tilekit_ir::{GlobalCache, ScalarType};
    use tilekit_ops::transpose::{build_looped, TransposeLoop};
    // (cache, what the global loads and the global stores must read as)
    let cases = [
        (GlobalCache::Default, "ld.global.v4", "st.global.v4"),
        (GlobalCache::Streaming, "ld.global.cs.v4", "st.global.cs.v4"),
        (GlobalCache::StreamingStores, "ld.global.v4", "st.global.cs.v4"),
        (GlobalCache::Prefetch256, "ld.global.L2::256B.v4", "st.global.v4"),
    ];
    for (cache, ld, st) in cases {
        let lp = TransposeLoop { cache, ..TransposeLoop::default() };
        let k = build_looped(ScalarType::BF16, 8, 8, 8, lp).unwrap();
        for t in Target::ALL {
            let ptx = emit_kernel(&k, t).unwrap();
            let loads = ptx.lines().filter(|l| l.contains("ld.global")).count();
            let stores = ptx.lines().filter(|l| l.contains("st.global")).count();
            assert!(loads > 0 && stores > 0, "{cache}");
            assert_eq!(ptx.matches(ld).count(), loads, "{cache} {t:?}: every global load `{ld}`");
            assert_eq!(ptx.matches(st).count(), stores, "{cache} {t:?}: every global store `{st}`");
            let name = format!("transpose_cache_{cache:?}_{t:?}");
            ptxas::assemble(&ptx, t, &name).unwrap();
        }
    }
}

#[test]
fn the_cluster_softmax_kernels_assemble_for_sm_90() {
    use tilekit_ir::ScalarType;
    use tilekit_ops::reduce::{
        build_softmax_bulk_cluster, build_softmax_cluster, build_softmax_stream_cluster_stashed,
        OnlineTuning,
    };
    let o = OnlineTuning { threads: 512, unroll: 4, reverse: true, blocks_per_sm: 0 };
    for ty in [ScalarType::F32, ScalarType::BF16] {
        let v = 16 / ty.size_bytes() as i64;
        let kernels = [
            build_softmax_bulk_cluster(ty, 16, 256, 4, 4).unwrap(),
            tilekit_ops::reduce::build_softmax_persistent(ty, 4, 128, 8, 4 / (4 / v).max(1), 3)
                .unwrap(),
            tilekit_ops::reduce::build_softmax_persistent(ty, 1, 512, 4, 2, 2).unwrap(),
            tilekit_ops::reduce::build_softmax_bulk_held(ty, 8, 128, 4, 2).unwrap(),
            build_softmax_cluster(ty, v, 8, 256, 32 / v).unwrap(),
            build_softmax_stream_cluster_stashed(ty, v, o, 8, 2, true).unwrap(),
        ];
        for k in kernels {
            for t in [Target::Sm90, Target::Sm90a] {
                let ptx = emit_kernel(&k, t).unwrap();
                if let Some(report) =
                    ptxas::assemble(&ptx, t, &format!("{}_{}", k.name, ty.name())).unwrap()
                {
                    assert!(
                        report.contains("0 bytes spill stores"),
                        "{}: spills\n{report}",
                        k.name
                    );
                }
            }
            assert!(emit_kernel(&k, Target::Sm80).is_err(), "{}: sm_80 has no clusters", k.name);
        }
    }
}

#[test]
fn the_coop_softmax_assembles_without_spills_for_every_tuned_shape() {
    use tilekit_ir::ScalarType;
    use tilekit_ops::reduce::{build_softmax_coop, CoopTuning};
    // every shape `tilekit tune` sweeps, at the row lengths of issue 11; no clusters, so every
    // target (release/acquire atomics are sm_70 and later)
    for ty in [ScalarType::F32, ScalarType::BF16] {
        let v = 16 / ty.size_bytes() as i64;
        for n in [65536i64, 262144] {
            // (the ring shapes are assembled with the shared-memory ones below)
            // (the cluster shapes too: they meet in their cluster, not at counters)
            // (the shared-memory shapes, held registers too, are assembled below)
            for c in CoopTuning::candidates().into_iter().filter(|c| !c.smem() && !c.cluster) {
                // small shapes need more than 64 blocks for the longest rows: not planned
                let Some((k, chunks)) = c.plan(ty, n) else {
                    assert!(n == 262144 && c.threads * c.per_thread as u32 <= 2048, "{c:?}");
                    continue;
                };
                let kern = build_softmax_coop(ty, c.threads, v, k, chunks).unwrap();
                for t in Target::ALL {
                    let ptx = emit_kernel(&kern, t).unwrap();
                    assert!(ptx.contains("atom.release.gpu.global.add.u32"), "{ty} {c:?}");
                    assert!(ptx.contains("ld.acquire.gpu.global.u32"), "{ty} {c:?}");
                    // one poller per block, sleeping between polls
                    // one polling loop per row the block waits for
                    let polls = c.rows as usize;
                    assert_eq!(ptx.matches("nanosleep.u32").count(), polls, "{ty} {c:?}");
                    let name = format!("softmax_coop_{}_{}_{}_{k}", ty.name(), c.threads, chunks);
                    if let Some(report) = ptxas::assemble(&ptx, t, &name).unwrap() {
                        assert!(
                            report.contains("0 bytes spill stores"),
                            "{name}: spills\n{report}"
                        );
                    }
                }
            }
        }
    }
}

/// ptxas's register count in a `-v` report (`Used N registers`).
fn registers(report: &str) -> u32 {
    let at = report.find("Used ").expect("a resource line");
    report[at + 5..].split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn the_coop_smem_softmax_assembles_without_spills_within_its_register_estimate() {
    use tilekit_ir::ScalarType;
    use tilekit_ops::reduce::coop_smem::{
        coop_smem_held_registers, coop_smem_one_exp_registers, coop_smem_rows_registers,
    };
    use tilekit_ops::reduce::CoopTuning;
    // every shared-memory shape `tilekit tune` sweeps (loads and bulk copies, two exponentials
    // per element or one, one row a block or two), at the row lengths of issue 11; the register
    // estimate behind the
    // deadlock bound must not be below what ptxas gives
    for ty in [ScalarType::F32, ScalarType::BF16] {
        let v = 16 / ty.size_bytes() as i64;
        for n in [65536i64, 262144] {
            for c in CoopTuning::candidates().into_iter().filter(|c| c.smem()) {
                // a ring whose step outgrows its slots (f32 1024 × 8 a step in 16 KiB) has no
                // plan, nor a row of more than 16 blocks as one cluster: `tilekit tune` skips them
                let Some((k, chunks)) = c.plan(ty, n) else {
                    assert!(c.ring > 0 || c.cluster, "{ty} {n} {c:?}");
                    continue;
                };
                let kern = c.build(ty, v, k, chunks).unwrap();
                let unroll = c.unroll(ty);
                for t in Target::ALL {
                    // (a cluster of one block is no cluster: plain PTX)
                    if (c.bulk || c.ring > 0 || (c.cluster && k > 1)) && t == Target::Sm80 {
                        // bulk copies, mbarriers and clusters are sm_90: a named error, not PTX
                        let e = emit_kernel(&kern, t).unwrap_err().to_string();
                        assert!(e.contains("sm_90"), "{ty} {c:?}: {e}");
                        continue;
                    }
                    let ptx = emit_kernel(&kern, t).unwrap();
                    // one polling loop per row the block waits for; none in a cluster
                    let polls = if c.cluster { 0 } else { c.rows as usize };
                    assert_eq!(ptx.matches("nanosleep.u32").count(), polls, "{ty} {c:?}");
                    let name = format!(
                        "coop_smem_{}_{}_{unroll}_{chunks}_{k}{}{}{}{}",
                        ty.name(),
                        c.threads,
                        if c.bulk { "_bulk" } else { "" },
                        if c.one_exp { "_1exp" } else { "" },
                        if c.rows == 2 { "_2rows" } else { "" },
                        if c.cluster { "_cluster" } else { "" }
                    ) + &if c.ring > 0 {
                        format!("_ring{}_{}", c.ring, c.lag)
                    } else if c.held > 0 {
                        format!("_held{}", c.held)
                    } else {
                        String::new()
                    } + if c.spec { "_spec" } else { "" };
                    // every kernel asks ptxas for `.minnctapersm` blocks per SM: its registers
                    // must let that many fit (allocated per warp in units of 256); the coop
                    // kernels' deadlock bound assumes no more blocks than its register estimate
                    // gives, so either bound holding keeps the bound true
                    let per_sm = kern.min_blocks_per_sm;
                    assert!(per_sm > 0, "{ty} {c:?}: no .minnctapersm");
                    let warps = kern.block_dim[0].div_ceil(32);
                    let cap = 65536 / (per_sm * warps * 32) / 8 * 8;
                    let estimate = if c.ring > 0 {
                        cap
                    } else if c.held > 0 {
                        let shape = (unroll, chunks, i64::from(c.held));
                        coop_smem_held_registers(ty, shape).max(cap)
                    } else if c.one_exp {
                        coop_smem_one_exp_registers(ty, unroll, chunks, c.bulk).max(cap)
                    } else {
                        coop_smem_rows_registers(ty, unroll, c.rows).max(cap)
                    };
                    if c.ring == 0 {
                        assert!(
                            c.resident_blocks(ty, chunks) <= per_sm,
                            "{ty} {c:?}: the deadlock bound's residency above .minnctapersm"
                        );
                    }
                    if let Some(report) = ptxas::assemble(&ptx, t, &name).unwrap() {
                        // known exceptions, held registers at the edge of the register file
                        // (ptxas 13.0): the H200's f32 long shape (384 threads × 8 elements a
                        // step, 6 vectors held) read as bf16 is one vector a step and spills
                        // 12 bytes at the 56 registers three blocks an SM leave, and the
                        // 512-thread bf16 shapes spill 4 bytes for sm_80 (whose allocation
                        // differs; the residency model is Hopper's). No table uses either: the
                        // tabled held shapes assemble for sm_90/sm_90a without spills
                        let known = c.held > 0
                            && ((ty.size_bytes() == 2 && unroll == 1) || t == Target::Sm80);
                        let spill = |b: u32| report.contains(&format!("{b} bytes spill stores"));
                        assert!(
                            spill(0) || (known && (1..=16).any(spill)),
                            "{name}: spills\n{report}"
                        );
                        let regs = registers(&report);
                        // the residency model is Hopper's (sm_90: 228 KiB, 64K registers)
                        if t != Target::Sm80 {
                            assert!(regs <= estimate, "{name} {t:?}: {regs} > {estimate}");
                        }
                        if t == Target::Sm90a {
                            eprintln!(
                                "{ty} n={n} {c:?}: k={k} chunks={chunks} smem={} B regs={regs} resident/SM={}",
                                kern.shared_bytes(),
                                c.resident_blocks(ty, chunks)
                            );
                        }
                    }
                }
            }
        }
    }
}

// ptxas assembled this file's kernels, or the summary counts one ignored test (docs/testing.md)
tilekit_ptx::ptxas_sentinel!();
