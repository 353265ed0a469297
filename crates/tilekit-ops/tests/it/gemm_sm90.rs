//! The Hopper GEMM (TMA ring + wgmma, warp-specialised) on the interpreter: edge tiles in M, N
//! and K (TMA's zero fill, masked stores), every output type, K- and MN-major operands (all
//! four transposes), pairs of blocks in a cluster sharing B by multicast, against an f64
//! reference; and its PTX assembles for sm_90a.

use crate::gemm_common;

use gemm_common::{assemble_clean, full_op, run, run_on};
use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::wgmma::Major;
use tilekit_ir::ScalarType;
use tilekit_ops::backend::Interp;
use tilekit_ops::bind::{map_arg, Bindings};
use tilekit_ops::compiled::CompiledKernel;
use tilekit_ops::gemm_sm90::{
    build_gemm_sm90, launch_grid, Activation, Epilogue, EpilogueOp, GemmConfig, Raster,
};
use tilekit_ops::host;

#[test]
fn the_hopper_gemm_with_one_group_in_flight_matches_the_reference() {
    let cfg = GemmConfig { bn: 64, stages: 3, overlap: true, ..GemmConfig::default() };
    run(cfg, 200, 100, 328, 11);
    run(GemmConfig { stages: 2, ..cfg }, 128, 64, 512, 13);
}

#[test]
fn the_hopper_gemm_matches_the_reference_with_edge_tiles() {
    // one block with K a multiple of 64; several blocks with M, N and K all ragged (K = 8·17:
    // the last stage half zero-filled by TMA), more K tiles than stages (the ring wraps)
    run(GemmConfig { bn: 64, stages: 2, ..GemmConfig::default() }, 128, 64, 128, 3);
    run(
        GemmConfig { bn: 64, stages: 2, output: ScalarType::F32, ..GemmConfig::default() },
        200,
        100,
        136,
        5,
    );
    run(
        GemmConfig {
            input: ScalarType::F16,
            output: ScalarType::F16,
            bn: 128,
            stages: 3,
            ..GemmConfig::default()
        },
        130,
        130,
        328,
        7,
    );
}

#[test]
fn the_persistent_hopper_gemm_walks_several_tiles_per_block() {
    // 2 blocks for 2 × 3 = 6 tiles of bn 64 (3 each): the ring's stage and phase run on across
    // tiles (K = 200: 4 slices a tile over 3 stages), grouped and linear orders
    let base = GemmConfig { bn: 64, stages: 3, persistent: true, ..GemmConfig::default() };
    run_on(GemmConfig { raster: Raster::Grouped(2), ..base }, 200, 136, 200, 21, 2);
    run_on(GemmConfig { overlap: true, ..base }, 200, 136, 200, 23, 4);
    // one group (of one M-tile) narrower than the grid's rows; one block for all 4 tiles
    run_on(
        GemmConfig { raster: Raster::Grouped(1), overlap: true, stages: 2, ..base },
        130,
        130,
        72,
        25,
        1,
    );
}

#[test]
fn the_hilbert_order_matches_the_reference() {
    // 2 × 3 tiles (a 4 × 4 curve with cells skipped), 2 blocks walking 3 tiles each; and one
    // block per tile
    let cfg = GemmConfig {
        bn: 64,
        stages: 2,
        overlap: true,
        persistent: true,
        raster: Raster::Hilbert,
        epilogue: Epilogue::Tma,
        ..GemmConfig::default()
    };
    run_on(cfg, 200, 136, 136, 41, 2);
    run(GemmConfig { persistent: false, epilogue: Epilogue::Registers, ..cfg }, 200, 136, 72, 43);
}

#[test]
fn the_grouped_order_without_persistence_matches_the_reference() {
    run(
        GemmConfig { bn: 64, stages: 2, raster: Raster::Grouped(2), ..GemmConfig::default() },
        200,
        136,
        136,
        27,
    );
}

#[test]
fn the_tma_store_epilogue_matches_the_reference() {
    // ragged M, N and K; persistent with 3 tiles a block (the C tile reused while the last
    // stores may still read it); f32 output (32-column boxes)
    let base = GemmConfig {
        bn: 64,
        stages: 3,
        overlap: true,
        epilogue: Epilogue::Tma,
        ..GemmConfig::default()
    };
    run(base, 200, 136, 200, 31);
    run_on(
        GemmConfig { persistent: true, raster: Raster::Grouped(2), ..base },
        200,
        136,
        200,
        33,
        2,
    );
    run_on(
        GemmConfig { persistent: true, output: ScalarType::F32, bn: 128, ..base },
        130,
        264,
        72,
        35,
        2,
    );
}

#[test]
fn a_tma_epilogue_needs_rows_of_c_in_16_byte_steps() {
    // N = 100 bf16: a 200-byte row pitch, no tensor map (a typed error at binding)
    let cfg = GemmConfig { epilogue: Epilogue::Tma, ..GemmConfig::default() };
    let c = HostTensor::new(
        host::poisoned(ScalarType::BF16, 8 * 100).unwrap(),
        TensorLayout::contiguous(ScalarType::BF16, vec![8, 100]).unwrap(),
    )
    .unwrap();
    let kernel = CompiledKernel::new(build_gemm_sm90(cfg).unwrap());
    let e = map_arg(c.layout())
        .and_then(|m| Bindings::<Interp>::new(&kernel).tensor_map("cm", m).map(|_| ()))
        .unwrap_err();
    assert!(e.to_string().contains("16"), "{e}");
}

#[test]
fn an_odd_row_length_of_c_is_refused_at_binding() {
    // C is stored in column pairs: N must be even (a typed error, not a wrong result)
    let kernel = CompiledKernel::new(build_gemm_sm90(GemmConfig::default()).unwrap());
    let mut c = HostTensor::new(
        host::poisoned(ScalarType::BF16, 8 * 9).unwrap(),
        TensorLayout::contiguous(ScalarType::BF16, vec![8, 9]).unwrap(),
    )
    .unwrap();
    let e = Bindings::new(&kernel).output("c", &mut c, &Interp).unwrap_err();
    assert!(e.to_string().contains("2-element vectors"), "{e}");
}

#[test]
fn the_hopper_gemm_assembles_for_sm_90a_without_spills() {
    for cfg in [
        GemmConfig::default(),
        GemmConfig { bn: 192, stages: 4, ..GemmConfig::default() },
        // bn 256: 128 accumulator registers of the 168 every thread gets (.maxnreg binds;
        // ptxas does not allocate past it after setmaxnreg.inc)
        GemmConfig { bn: 256, stages: 4, overlap: true, ..GemmConfig::default() },
        GemmConfig { bn: 256, stages: 3, output: ScalarType::F32, ..GemmConfig::default() },
        GemmConfig { output: ScalarType::F32, ..GemmConfig::default() },
        GemmConfig {
            persistent: true,
            raster: Raster::Grouped(8),
            overlap: true,
            epilogue: Epilogue::Tma,
            ..GemmConfig::default()
        },
        GemmConfig {
            bn: 256,
            stages: 3,
            persistent: true,
            raster: Raster::Grouped(8),
            overlap: true,
            epilogue: Epilogue::Tma,
            ..GemmConfig::default()
        },
    ]
    .into_iter()
    .chain(LAYOUTS.into_iter().skip(1).flat_map(|(a_major, b_major)| {
        // api::gemm's kernel (bn 256, f32 out, registers) and the TMA-store one, each layout
        let api = GemmConfig {
            bn: 256,
            output: ScalarType::F32,
            overlap: true,
            persistent: true,
            raster: Raster::Grouped(8),
            a_major,
            b_major,
            ..GemmConfig::default()
        };
        [api, GemmConfig { bn: 128, output: ScalarType::BF16, epilogue: Epilogue::Tma, ..api }]
    }))
    .chain([ScalarType::F32, ScalarType::BF16].into_iter().flat_map(|output| {
        // the whole epilogue (alpha, beta·C, bias, GELU) in api::gemm_ex's kernel and the
        // TMA-store one
        let op = full_op(output);
        let api = GemmConfig {
            bn: 256,
            output,
            overlap: true,
            persistent: true,
            raster: Raster::Grouped(8),
            b_major: Major::MN,
            op,
            ..GemmConfig::default()
        };
        [api, GemmConfig { bn: 128, epilogue: Epilogue::Tma, ..api }]
    }))
    .chain(
        [
            (256, 3, Epilogue::Tma, ScalarType::BF16, Major::K),
            (128, 5, Epilogue::Tma, ScalarType::BF16, Major::K),
            (256, 4, Epilogue::Registers, ScalarType::F32, Major::K),
            (256, 3, Epilogue::Tma, ScalarType::BF16, Major::MN),
        ]
        .map(|(bn, stages, epilogue, output, b_major)| {
            // pairs of blocks sharing B by multicast (the bench's and the tuner's cluster
            // candidates)
            GemmConfig {
                bn,
                stages,
                output,
                epilogue,
                b_major,
                overlap: true,
                persistent: true,
                raster: Raster::Grouped(8),
                cluster: 2,
                ..GemmConfig::default()
            }
        }),
    )
    .chain([128, 256].map(|bn| {
        // a split K's kernel: f32 partial products, the split's slab of the workspace
        GemmConfig {
            bn,
            output: ScalarType::F32,
            overlap: true,
            persistent: true,
            raster: Raster::Grouped(8),
            split_k: 4,
            ..GemmConfig::default()
        }
    }))
    .chain(
        [
            // one consumer warpgroup (64-row tiles, 256 threads, .maxnreg 248): the heuristic's
            // picks for M ≤ 64 (bf16 and f32 C) and few tiles, the widest tile, B MN-major with
            // the whole epilogue, pairs, a split K, the deepest ring
            (128, 8, Epilogue::Tma, ScalarType::BF16, Major::K, 1, 1),
            (128, 8, Epilogue::Tma, ScalarType::F32, Major::K, 1, 1),
            (128, 6, Epilogue::Tma, ScalarType::BF16, Major::K, 1, 1),
            (256, 4, Epilogue::Tma, ScalarType::BF16, Major::K, 1, 1),
            (256, 4, Epilogue::Registers, ScalarType::F32, Major::MN, 1, 1),
            (192, 6, Epilogue::Tma, ScalarType::BF16, Major::MN, 2, 1),
            (256, 5, Epilogue::Registers, ScalarType::F32, Major::K, 1, 4),
            // the deepest ring (12 stages of 64 × 64)
            (64, 12, Epilogue::Tma, ScalarType::F32, Major::K, 1, 1),
        ]
        .map(|(bn, stages, epilogue, output, b_major, cluster, split_k)| {
            let op = if b_major == Major::MN && cluster == 1 {
                full_op(output)
            } else {
                EpilogueOp::default()
            };
            GemmConfig {
                bn,
                stages,
                output,
                epilogue,
                b_major,
                op,
                overlap: true,
                persistent: true,
                raster: Raster::Grouped(8),
                cluster,
                split_k,
                consumers: 1,
                ..GemmConfig::default()
            }
        }),
    ) {
        let k = build_gemm_sm90(cfg).unwrap();
        let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
        assert!(tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90).is_err());
        if let Some(report) =
            tilekit_ptx::ptxas::assemble(&ptx, tilekit_ptx::Target::Sm90a, "gemm_sm90").unwrap()
        {
            assert!(report.contains("0 bytes spill stores"), "{cfg:?}\n{report}");
            eprintln!(
                "{}: {}",
                cfg.label(),
                report
                    .lines()
                    .filter(|l| l.contains("registers") || l.contains("spill"))
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
        }
    }
}

/// f32 in and out as tf32 (K-major operands, 32 K a stage), bn 128, 3 stages, overlapped.
fn tf32_base() -> GemmConfig {
    GemmConfig {
        input: ScalarType::F32,
        output: ScalarType::F32,
        bn: 128,
        stages: 3,
        overlap: true,
        ..GemmConfig::default()
    }
}

#[test]
fn f32_inputs_run_as_tf32() {
    // K-major f32 operands, 32 K per stage (a 128-byte row), 4 wgmma k8 per stage: edges in
    // M, N and K (K = 200: the last stage 8 deep), persistent TMA-store and register epilogues
    let base = tf32_base();
    run(base, 130, 72, 200, 81);
    run(
        GemmConfig {
            persistent: true,
            raster: Raster::Grouped(2),
            epilogue: Epilogue::Tma,
            ..base
        },
        200,
        136,
        96,
        82,
    );
    // MN-major f32 operands are refused by name (tf32 wgmma has no transpose)
    let e = GemmConfig { b_major: Major::MN, ..base }.check().unwrap_err().to_string();
    assert!(e.contains("K-major for f32 inputs"), "{e}");
    let k = build_gemm_sm90(base).unwrap();
    assert!(k.to_string().contains(".tf32"));
    let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
    if let Some(report) =
        tilekit_ptx::ptxas::assemble(&ptx, tilekit_ptx::Target::Sm90a, "gemm_sm90").unwrap()
    {
        assert!(report.contains("0 bytes spill stores"), "{report}");
    }
}

#[test]
fn the_split_reduce_kernel_assembles_for_every_output_type() {
    for ty in [ScalarType::F32, ScalarType::F16, ScalarType::BF16] {
        let k = tilekit_ops::gemm_sm90::build_split_reduce(ty).unwrap();
        for target in [tilekit_ptx::Target::Sm80, tilekit_ptx::Target::Sm90a] {
            let ptx = tilekit_ptx::emit_kernel(&k, target).unwrap();
            if let Some(report) =
                tilekit_ptx::ptxas::assemble(&ptx, target, "gemm_split_reduce").unwrap()
            {
                assert!(report.contains("0 bytes spill stores"), "{ty}\n{report}");
            }
        }
    }
}

const LAYOUTS: [(Major, Major); 4] =
    [(Major::K, Major::K), (Major::K, Major::MN), (Major::MN, Major::K), (Major::MN, Major::MN)];

#[test]
fn every_operand_layout_matches_the_reference() {
    // TN, NN, TT, NT: M, N, K off the tiles (130 × 72 × 80: two M-tiles, the second 2 rows;
    // N = 72 = one full slab and 8 columns of the second; K = 80: the second stage 16 deep),
    // and a one-tile 64 × 256 × 64 (half the M rows zero-filled) with bn 256 (4 B slabs)
    for (i, (a_major, b_major)) in LAYOUTS.into_iter().enumerate() {
        let cfg = GemmConfig { a_major, b_major, bn: 128, stages: 2, ..GemmConfig::default() };
        run(cfg, 130, 72, 80, 50 + i as u64);
        let wide = GemmConfig { bn: 256, overlap: true, output: ScalarType::F32, ..cfg };
        run(wide, 64, 256, 64, 60 + i as u64);
    }
}

#[test]
fn mn_major_operands_in_the_persistent_tma_store_kernel_match_the_reference() {
    // f16 in, f16 out through the C tile; 2 blocks walking 2 × 3 tiles of bn 64 (one slab);
    // bn 192 (3 slabs) with one block per tile
    for (i, (a_major, b_major)) in LAYOUTS.into_iter().enumerate().skip(1) {
        let cfg = GemmConfig {
            input: ScalarType::F16,
            output: ScalarType::F16,
            bn: 64,
            stages: 3,
            overlap: true,
            persistent: true,
            raster: Raster::Grouped(2),
            epilogue: Epilogue::Tma,
            a_major,
            b_major,
            ..GemmConfig::default()
        };
        run_on(cfg, 200, 136, 136, 70 + i as u64, 2);
        let wide = GemmConfig { bn: 192, persistent: false, raster: Raster::Linear, ..cfg };
        run(wide, 136, 200, 72, 80 + i as u64);
    }
}

#[test]
fn mn_major_labels_name_the_layouts() {
    let nn = GemmConfig { b_major: Major::MN, ..GemmConfig::default() };
    assert_eq!(nn.label(), "bn 128, 4 stages, B MN-major");
    let tt = GemmConfig { a_major: Major::MN, ..GemmConfig::default() };
    assert_eq!(tt.label(), "bn 128, 4 stages, A MN-major");
}

#[test]
fn each_epilogue_step_matches_the_reference_in_both_epilogues() {
    // alpha; beta·C on a random C; bias of the output type and of f32; ReLU; GELU; all at once —
    // each through the register stores and through the TMA-store C tile, ragged M and N
    let steps = [
        EpilogueOp { alpha: true, ..EpilogueOp::default() },
        EpilogueOp { beta: true, ..EpilogueOp::default() },
        EpilogueOp { bias: Some(ScalarType::BF16), ..EpilogueOp::default() },
        EpilogueOp { bias: Some(ScalarType::F32), act: Activation::Relu, ..EpilogueOp::default() },
        EpilogueOp { act: Activation::Gelu, ..EpilogueOp::default() },
        full_op(ScalarType::F32),
    ];
    for (i, op) in steps.into_iter().enumerate() {
        for epilogue in [Epilogue::Registers, Epilogue::Tma] {
            let cfg = GemmConfig { bn: 64, stages: 2, epilogue, op, ..GemmConfig::default() };
            run(cfg, 136, 72, 80, 90 + 2 * i as u64);
        }
    }
    // f32 output (bias f32), persistent with B MN-major; f16 output with beta, A MN-major
    let all = steps[5];
    let f32_out = GemmConfig {
        bn: 128,
        stages: 2,
        output: ScalarType::F32,
        persistent: true,
        overlap: true,
        b_major: Major::MN,
        op: all,
        ..GemmConfig::default()
    };
    run_on(f32_out, 200, 136, 72, 101, 2);
    run_on(GemmConfig { epilogue: Epilogue::Tma, ..f32_out }, 200, 136, 72, 103, 2);
    let f16 = GemmConfig {
        input: ScalarType::F16,
        output: ScalarType::F16,
        a_major: Major::MN,
        op: EpilogueOp { bias: Some(ScalarType::F16), ..all },
        ..f32_out
    };
    run_on(f16, 136, 200, 72, 105, 2);
}

#[test]
fn a_bias_of_another_type_is_refused() {
    let op = EpilogueOp { bias: Some(ScalarType::F16), ..EpilogueOp::default() };
    let e = build_gemm_sm90(GemmConfig { op, ..GemmConfig::default() }).unwrap_err();
    assert!(e.to_string().contains("bias type") && e.to_string().contains("f32"), "{e}");
}

#[test]
fn cluster_pairs_sharing_b_match_the_reference_with_edge_tiles() {
    // 3 M-tiles (an odd count: the second tile of the last pair lies outside C, computed in
    // step and stored nowhere), ragged N and K (K = 136: the last stage half zero-filled), one
    // pair per cluster; f32 output through the register epilogue
    let pair = GemmConfig { bn: 64, stages: 2, cluster: 2, ..GemmConfig::default() };
    run(GemmConfig { output: ScalarType::F32, ..pair }, 300, 100, 136, 61);
    // persistent: 2 clusters walking 2 × 3 pairs (3 each) in grouped order, one wgmma group in
    // flight, the TMA-store epilogue (bf16), 4 k-slices a tile over 3 stages
    let persistent = GemmConfig {
        stages: 3,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(1),
        epilogue: Epilogue::Tma,
        ..pair
    };
    run_on(persistent, 300, 136, 200, 63, 4);
    // one cluster for everything: M of one tile (the pair's second block idle but in step)
    run_on(GemmConfig { raster: Raster::Linear, ..persistent }, 100, 136, 72, 65, 2);
}

#[test]
fn cluster_pairs_with_mn_major_operands_match_the_reference() {
    // B MN-major in bn 192: three slabs a stage, two multicast by rank 0 and one by rank 1; A
    // MN-major
    let cfg = GemmConfig {
        bn: 192,
        stages: 2,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(2),
        a_major: Major::MN,
        b_major: Major::MN,
        cluster: 2,
        ..GemmConfig::default()
    };
    run_on(cfg, 260, 200, 72, 67, 2);
    // tf32 (f32 inputs, K-major, 32 K a stage) in pairs, bn 128 (halves of 64 rows)
    let tf32 = GemmConfig {
        input: ScalarType::F32,
        output: ScalarType::F32,
        bn: 128,
        a_major: Major::K,
        b_major: Major::K,
        ..cfg
    };
    run_on(tf32, 200, 130, 72, 69, 2);
}

#[test]
fn cluster_configs_are_checked_and_launch_in_pairs() {
    let pair = GemmConfig { cluster: 2, ..GemmConfig::default() };
    assert_eq!(pair.label(), "bn 128, 4 stages, cluster 2");
    let e = GemmConfig { cluster: 3, ..GemmConfig::default() }.check().unwrap_err().to_string();
    assert!(e.contains("cluster") && e.contains('3') && e.contains("1 or 2"), "{e}");
    let split = GemmConfig { split_k: 2, output: ScalarType::F32, ..pair };
    assert!(split.check().unwrap_err().to_string().contains("split K"));
    let k = build_gemm_sm90(pair).unwrap();
    assert_eq!(k.cluster_dim, [2, 1, 1]);
    let text = k.to_string();
    assert!(text.contains("multicast to ctas") && text.contains("mbarrier.arrive.shared::cluster"));
    // 5 × 3 tiles: 3 × 3 pairs; persistent on 7 SMs: 3 clusters (an even grid)
    assert_eq!(launch_grid(&pair, 600, 300, 132).unwrap(), [18, 1, 1]);
    let p = GemmConfig { persistent: true, ..pair };
    assert_eq!(launch_grid(&p, 600, 300, 7).unwrap(), [6, 1, 1]);
    assert_eq!(launch_grid(&p, 100, 100, 1).unwrap(), [2, 1, 1]);
}

/// One consumer warpgroup: 64-row tiles, 256 threads.
fn one(cfg: GemmConfig) -> GemmConfig {
    GemmConfig { consumers: 1, ..cfg }
}

#[test]
fn one_consumer_with_every_layout_and_width_matches_the_reference() {
    // TN, NN, TT, NT × bn 64, 128, 256: M = 100 (two 64-row tiles, the second 36 rows), N off
    // the tile (72: one slab and 8 columns; 200: bn 256 one partial tile), K = 80 and 200 (the
    // last stage 16 or 8 deep), the ring wrapping (2 and 3 stages)
    for (i, (a_major, b_major)) in LAYOUTS.into_iter().enumerate() {
        let seed = 200 + 10 * i as u64;
        let cfg = one(GemmConfig { a_major, b_major, bn: 64, stages: 2, ..GemmConfig::default() });
        run(cfg, 100, 72, 80, seed);
        run(GemmConfig { bn: 128, overlap: true, ..cfg }, 100, 136, 200, seed + 1);
        let wide = GemmConfig { bn: 256, stages: 3, output: ScalarType::F32, ..cfg };
        run(wide, 64, 200, 200, seed + 2);
    }
    // a K shorter than one stage (8), f16, and M of one row
    let f16 = one(GemmConfig {
        input: ScalarType::F16,
        output: ScalarType::F16,
        bn: 128,
        stages: 4,
        ..GemmConfig::default()
    });
    run(f16, 130, 130, 8, 241);
    run(GemmConfig { output: ScalarType::F32, ..f16 }, 1, 130, 136, 243);
}

#[test]
fn one_consumer_walks_persistent_grids_with_both_epilogues() {
    // 200 × 136 in 64-row tiles: 4 × 3 tiles of bn 64 over 2 blocks (6 each), the ring running
    // on across tiles (K = 200: 4 slices a tile over 3 stages), grouped and Hilbert orders, the
    // TMA-store epilogue's C tile (64 rows) reused while the last tile's stores may still read
    // it; the 8-stage ring the heuristic picks for M ≤ 64
    let base = one(GemmConfig {
        bn: 64,
        stages: 3,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(2),
        ..GemmConfig::default()
    });
    run_on(base, 200, 136, 200, 251, 2);
    run_on(GemmConfig { epilogue: Epilogue::Tma, ..base }, 200, 136, 200, 253, 2);
    run_on(
        GemmConfig { raster: Raster::Hilbert, epilogue: Epilogue::Tma, ..base },
        200,
        136,
        136,
        255,
        3,
    );
    let deep = GemmConfig { bn: 128, stages: 8, epilogue: Epilogue::Tma, ..base };
    run_on(deep, 64, 520, 1000, 257, 2);
    run_on(
        GemmConfig { output: ScalarType::F32, raster: Raster::Linear, ..deep },
        50,
        264,
        600,
        259,
        3,
    );
}

#[test]
fn one_consumer_rings_of_ten_and_twelve_stages_match_the_reference() {
    // bn 64 with one consumer: 16 KiB stages, so 12 fit (192 KiB + the C tile); K = 1000 is
    // 16 slices a tile, the ring wrapping within a tile and running on across the 3 tiles of
    // each of 2 persistent blocks (64 × 328: 6 tiles of bn 64), f32 C through TMA and bf16 C
    // through registers
    let deep = one(GemmConfig {
        bn: 64,
        stages: 12,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(8),
        epilogue: Epilogue::Tma,
        output: ScalarType::F32,
        ..GemmConfig::default()
    });
    deep.check().unwrap();
    run_on(deep, 64, 328, 1000, 261, 2);
    let ten = GemmConfig { stages: 10, epilogue: Epilogue::Registers, ..deep };
    run_on(GemmConfig { output: ScalarType::BF16, ..ten }, 50, 330, 1000, 263, 2);
    // 13 stages are refused by name, as is a deep ring of wide tiles that does not fit
    let e = GemmConfig { stages: 13, ..deep }.check().unwrap_err();
    assert!(e.to_string().contains("2..=12"), "{e}");
    assert!(GemmConfig { bn: 256, ..deep }.check().is_err());
}

#[test]
fn one_consumer_applies_every_epilogue_step() {
    let steps = [
        EpilogueOp { alpha: true, ..EpilogueOp::default() },
        EpilogueOp { beta: true, ..EpilogueOp::default() },
        EpilogueOp { bias: Some(ScalarType::F32), act: Activation::Relu, ..EpilogueOp::default() },
        full_op(ScalarType::BF16),
    ];
    for (i, op) in steps.into_iter().enumerate() {
        for epilogue in [Epilogue::Registers, Epilogue::Tma] {
            let cfg = one(GemmConfig { bn: 64, stages: 2, epilogue, op, ..GemmConfig::default() });
            run(cfg, 100, 72, 80, 270 + 2 * i as u64);
        }
    }
    // f32 output with B MN-major, persistent, through the TMA-store C tile (32-column boxes)
    let f32_out = one(GemmConfig {
        bn: 128,
        stages: 2,
        output: ScalarType::F32,
        persistent: true,
        overlap: true,
        epilogue: Epilogue::Tma,
        b_major: Major::MN,
        op: EpilogueOp {
            alpha: true,
            beta: true,
            bias: Some(ScalarType::F32),
            act: Activation::Gelu,
        },
        ..GemmConfig::default()
    });
    run_on(f32_out, 136, 200, 72, 281, 2);
}

#[test]
fn one_consumer_in_cluster_pairs_and_tf32_matches_the_reference() {
    // pairs of 64-row blocks sharing B: 5 M-tiles (the last pair's second tile outside C),
    // persistent, B MN-major in bn 192 (three slabs, two multicast by rank 0)
    let pair = one(GemmConfig {
        bn: 192,
        stages: 2,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(2),
        epilogue: Epilogue::Tma,
        b_major: Major::MN,
        cluster: 2,
        ..GemmConfig::default()
    });
    run_on(pair, 300, 200, 72, 291, 2);
    run(
        GemmConfig {
            b_major: Major::K,
            bn: 64,
            persistent: false,
            raster: Raster::Linear,
            epilogue: Epilogue::Registers,
            ..pair
        },
        130,
        100,
        136,
        293,
    );
    // tf32: f32 operands K-major, 32 K a stage
    let tf32 = one(tf32_base());
    run(tf32, 100, 72, 200, 295);
}

#[test]
fn one_consumer_kernels_are_checked_and_shaped() {
    let cfg = one(GemmConfig::default());
    let k = build_gemm_sm90(cfg).unwrap();
    assert_eq!(k.block_dim, [256, 1, 1]);
    // the producer gives registers back; the consumer keeps the entry's 248 (no increase)
    let text = k.to_string();
    assert!(text.contains("setmaxnreg.dec 40") && !text.contains("setmaxnreg.inc"), "{text}");
    let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
    assert!(ptx.contains(".maxnreg 248") && ptx.contains(".reqntid 256, 1, 1"));
    let two = build_gemm_sm90(GemmConfig::default()).unwrap().to_string();
    assert!(two.contains("setmaxnreg.inc 232"));
    // the tile grid in 64-row tiles
    assert_eq!(launch_grid(&cfg, 100, 300, 132).unwrap(), [3, 2, 1]);
    assert_eq!(
        launch_grid(&GemmConfig { persistent: true, ..cfg }, 1000, 1000, 132).unwrap(),
        [128, 1, 1]
    );
    // 0 or 3 consumers: named errors
    for bad in [0, 3] {
        let e = build_gemm_sm90(GemmConfig { consumers: bad, ..cfg }).unwrap_err().to_string();
        assert!(e.contains(&format!("consumers = {bad}")) && e.contains("1 (64-row"), "{e}");
    }
}

// ---------------------------------------------------------------- ping-pong consumers

/// Ping-pong consumers (each warpgroup a whole 128-row tile of the persistent walk, the two
/// taking turns), persistent in grouped order, one wgmma group in flight.
fn pingpong(cfg: GemmConfig) -> GemmConfig {
    GemmConfig {
        pingpong: true,
        persistent: true,
        overlap: true,
        raster: Raster::Grouped(2),
        ..cfg
    }
}

#[test]
fn pingpong_walks_match_the_reference_with_ragged_tiles() {
    // 200 × 136 in tiles of 128 × 64: 2 × 3 = 6 tiles, M, N and K (200: 4 slices, the last 8
    // deep) off the tile, the ring (3 stages) wrapping inside a tile and across the warpgroups'
    // tiles. 2 blocks: 3 tiles each (warpgroup 1 gets two, warpgroup 2 one); 4 blocks: 2, 2, 1, 1
    // (blocks with a single tile: warpgroup 2 idle); 1 block: all 6; 6 blocks: one tile each
    let base = pingpong(GemmConfig { bn: 64, stages: 3, ..GemmConfig::default() });
    for (sms, seed) in [(2, 301), (4, 303), (1, 305), (6, 307)] {
        run_on(base, 200, 136, 200, seed, sms);
    }
    // without a group in flight, linear and Hilbert orders, bn 128 (128 accumulators a thread)
    run_on(GemmConfig { overlap: false, raster: Raster::Linear, ..base }, 200, 136, 200, 309, 2);
    run_on(GemmConfig { raster: Raster::Hilbert, bn: 128, ..base }, 300, 200, 136, 311, 2);
    // more stages than a tile's slices (6 stages, K = 72: 2 slices a tile): the ring's stages
    // are refilled for the other warpgroup's tiles before this one's next tile; a K shorter than
    // one stage (8); f16 with an f32 C
    run_on(GemmConfig { stages: 6, ..base }, 200, 136, 72, 313, 2);
    run_on(GemmConfig { stages: 6, ..base }, 136, 130, 8, 315, 3);
    let f16 =
        GemmConfig { input: ScalarType::F16, output: ScalarType::F32, bn: 128, stages: 4, ..base };
    run_on(f16, 260, 130, 200, 317, 2);
}

#[test]
fn pingpong_tma_store_epilogue_matches_the_reference() {
    // each warpgroup its own C tile, named barrier and storing thread: the same walks as above
    // (odd and even tile counts per block, single-tile blocks), bf16 and f32 C (32-column
    // boxes), bn 64 and 128
    let base = pingpong(GemmConfig {
        bn: 64,
        stages: 3,
        epilogue: Epilogue::Tma,
        ..GemmConfig::default()
    });
    for (sms, seed) in [(2, 321), (4, 323), (1, 325)] {
        run_on(base, 200, 136, 200, seed, sms);
    }
    let wide = GemmConfig { bn: 128, output: ScalarType::F32, ..base };
    run_on(wide, 330, 264, 136, 327, 2);
    run_on(GemmConfig { stages: 5, output: ScalarType::BF16, ..wide }, 390, 200, 72, 329, 2);
}

#[test]
fn pingpong_applies_every_epilogue_step_and_operand_layout() {
    // alpha, beta·C, bias, ReLU / GELU in both epilogues, 3 tiles a block
    let steps = [
        EpilogueOp { alpha: true, beta: true, ..EpilogueOp::default() },
        EpilogueOp { bias: Some(ScalarType::F32), act: Activation::Relu, ..EpilogueOp::default() },
        full_op(ScalarType::BF16),
    ];
    for (i, op) in steps.into_iter().enumerate() {
        for epilogue in [Epilogue::Registers, Epilogue::Tma] {
            let cfg =
                pingpong(GemmConfig { bn: 64, stages: 2, epilogue, op, ..GemmConfig::default() });
            run_on(cfg, 200, 136, 80, 330 + 2 * i as u64, 2);
        }
    }
    // TN, NN, TT, NT: the MN-major A's two slabs are both this warpgroup's
    for (i, (a_major, b_major)) in LAYOUTS.into_iter().enumerate() {
        let cfg = pingpong(GemmConfig {
            a_major,
            b_major,
            bn: 128,
            stages: 3,
            epilogue: if i % 2 == 0 { Epilogue::Tma } else { Epilogue::Registers },
            ..GemmConfig::default()
        });
        run_on(cfg, 200, 264, 136, 340 + i as u64, 2);
    }
    // tf32: 32 K a stage
    run_on(pingpong(tf32_base()), 200, 136, 200, 349, 2);
}

#[test]
fn pingpong_configs_are_checked_labelled_and_sized() {
    let pp = pingpong(GemmConfig {
        bn: 128,
        stages: 5,
        epilogue: Epilogue::Tma,
        ..GemmConfig::default()
    });
    assert_eq!(pp.label(), "bn 128, 5 stages, overlap, persistent, grouped 2, tma store, pingpong");
    // two C tiles of 128 × 128 bf16 beside the ring
    assert_eq!(pp.shared_bytes(), 5 * (128 + 128) * 64 * 2 + 2 * 128 * 128 * 2);
    assert_eq!(pp.threads(), 384);
    pp.check().unwrap();
    // 6 stages and two C tiles do not fit 227 KiB; with the register epilogue they do
    let e = GemmConfig { stages: 6, ..pp }.check().unwrap_err().to_string();
    assert!(e.contains("stages = 6") && e.contains("64 KiB besides"), "{e}");
    GemmConfig { stages: 6, epilogue: Epilogue::Registers, ..pp }.check().unwrap();
    // every unsupported combination is refused by name
    let bad = [
        (GemmConfig { persistent: false, ..pp }, "persistent"),
        (GemmConfig { consumers: 1, ..pp }, "consumers = 2"),
        (GemmConfig { bn: 224, stages: 2, ..pp }, "bn ≤ 208"),
        (GemmConfig { bn: 256, stages: 3, epilogue: Epilogue::Registers, ..pp }, "bn ≤ 208"),
        (GemmConfig { bn: 144, stages: 3, op: full_op(ScalarType::F32), ..pp }, "bn ≤ 128 with"),
        (
            GemmConfig { split_k: 2, epilogue: Epilogue::Registers, output: ScalarType::F32, ..pp },
            "split_k = 1",
        ),
        (GemmConfig { batched: true, ..pp }, "batched = false"),
        (GemmConfig { cluster: 2, ..pp }, "cluster = 1"),
    ];
    for (cfg, why) in bad {
        let e = build_gemm_sm90(cfg).unwrap_err().to_string();
        assert!(e.contains("pingpong") && e.contains(why), "{cfg:?}: {e}");
    }
    // the kernel: one warpgroup's releases per stage, its own named barrier per C tile
    let text = build_gemm_sm90(pp).unwrap().to_string();
    assert!(text.contains("bar.sync 1, 128") && text.contains("bar.sync 2, 128"), "{text}");
}

/// FNV-1a of the PTX text.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

#[test]
fn the_kernel_without_pingpong_is_the_cooperative_one_byte_for_byte() {
    // the PTX of these configurations as emitted before `pingpong` existed (main at 52fc84e,
    // whose emitter has the wgmma descriptor fix: re-derived there, session 10): (FNV-1a,
    // length). An emitter change elsewhere changes them too — then re-derive them from the
    // kernels of a commit without `pingpong`'s kernel changes, never from this one
    let p = GemmConfig {
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(8),
        ..GemmConfig::default()
    };
    let all = full_op(ScalarType::F32);
    let cases = [
        (GemmConfig::default(), 0xbabca8de7f145ecfu64, 39332usize),
        (
            GemmConfig { bn: 256, stages: 3, epilogue: Epilogue::Tma, ..p },
            0xc10a02f9e4045658,
            39821,
        ),
        (
            GemmConfig {
                bn: 128,
                stages: 5,
                epilogue: Epilogue::Tma,
                raster: Raster::Hilbert,
                ..p
            },
            0xf51d119422b236e1,
            26838,
        ),
        (
            GemmConfig {
                bn: 256,
                stages: 4,
                output: ScalarType::F32,
                b_major: Major::MN,
                op: all,
                ..p
            },
            0xb994c317bed15d19,
            151600,
        ),
        (
            GemmConfig { consumers: 1, bn: 128, stages: 8, epilogue: Epilogue::Tma, ..p },
            0x0c9419e23bfc447e,
            28017,
        ),
        (
            GemmConfig { cluster: 2, bn: 256, stages: 3, epilogue: Epilogue::Tma, ..p },
            0xd15362ae430733c3,
            41586,
        ),
        (GemmConfig { split_k: 4, output: ScalarType::F32, ..p }, 0x2c80f3c73f717d3c, 33928),
    ];
    for (cfg, hash, len) in cases {
        assert!(!cfg.pingpong);
        let k = build_gemm_sm90(cfg).unwrap();
        let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
        assert_eq!((fnv(&ptx), ptx.len()), (hash, len), "{}", cfg.label());
    }
    // and the ping-pong kernel is another one
    let k = build_gemm_sm90(GemmConfig {
        pingpong: true,
        bn: 128,
        stages: 5,
        epilogue: Epilogue::Tma,
        raster: Raster::Hilbert,
        ..p
    })
    .unwrap();
    let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
    assert_ne!(fnv(&ptx), 0xf51d119422b236e1);
}

#[test]
fn pingpong_kernels_assemble_for_sm_90a_without_spills() {
    // the bench's and the tuner's ping-pong candidates (the register epilogue with a group in
    // flight among them: C7514 there before the order barrier's arrive moved into the k-loop):
    // bn 128 (128 accumulators a thread, in
    // the 168 registers .maxnreg gives every thread) and bn 64, both epilogues, bf16 and f32 C,
    // the whole epilogue op, B MN-major
    let base = GemmConfig {
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(8),
        pingpong: true,
        ..GemmConfig::default()
    };
    let all = full_op(ScalarType::F32);
    for cfg in [
        GemmConfig { bn: 128, stages: 4, epilogue: Epilogue::Tma, ..base },
        GemmConfig { bn: 128, stages: 5, epilogue: Epilogue::Tma, ..base },
        GemmConfig { bn: 128, stages: 4, ..base },
        GemmConfig { bn: 128, stages: 5, ..base },
        GemmConfig { bn: 128, stages: 6, ..base },
        GemmConfig { bn: 128, stages: 4, output: ScalarType::F32, ..base },
        GemmConfig { bn: 128, stages: 5, raster: Raster::Hilbert, epilogue: Epilogue::Tma, ..base },
        GemmConfig { bn: 128, stages: 4, overlap: false, ..base },
        GemmConfig { bn: 64, stages: 8, epilogue: Epilogue::Tma, ..base },
        GemmConfig {
            bn: 128,
            stages: 4,
            b_major: Major::MN,
            op: all,
            output: ScalarType::F32,
            ..base
        },
        GemmConfig {
            bn: 128,
            stages: 4,
            a_major: Major::MN,
            op: all,
            epilogue: Epilogue::Tma,
            ..base
        },
        GemmConfig { bn: 128, stages: 5, op: all, epilogue: Epilogue::Tma, ..base },
        GemmConfig { bn: 128, stages: 4, op: all, ..base },
        GemmConfig { bn: 64, stages: 6, op: all, epilogue: Epilogue::Tma, ..base },
        GemmConfig { input: ScalarType::F32, output: ScalarType::F32, bn: 128, stages: 3, ..base },
    ] {
        // no spills, and the wgmmas not serialized (C7514: an instruction reading accumulators
        // while a wgmma may still write them, e.g. an arrive before the final wait_group)
        assemble_clean(cfg);
    }
}

// ptxas assembled this file's kernels, or the summary counts one ignored test (docs/testing.md)
tilekit_ptx::ptxas_sentinel!();
