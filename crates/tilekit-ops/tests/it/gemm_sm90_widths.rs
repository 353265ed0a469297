//! The Hopper GEMM in tile widths between the powers of two (`GemmConfig::bn` any multiple of
//! 16: 80, 112, 144, 176, 208, …) on the interpreter: ragged M, N and K (N off the tile, the
//! last N-tile partial), one and two consumers, persistent walks, pairs of blocks splitting B
//! into halves of `bn / 2` rows, tf32, the epilogue op, and an f32 C through the TMA store
//! (32-column boxes), the 64 × 144 and 64 × 160 tiles (cuBLASLt's 1000³ tile) through TMA
//! boxes of bf16 / f16 C, against an f64 reference with C poisoned first; the widths that a layout
//! cannot take are refused by name; and the new widths assemble for sm_90a without spills.

use crate::gemm_common;

use gemm_common::{full_op, run, run_on};
use tilekit_ir::wgmma::Major;
use tilekit_ir::ScalarType;
use tilekit_ops::gemm_sm90::{
    build_gemm_sm90, launch_grid, Activation, Epilogue, EpilogueOp, GemmConfig, Raster,
};
use tilekit_ops::gemm_tuning::GemmProblem;

/// One consumer warpgroup: 64-row tiles, 256 threads.
fn one(cfg: GemmConfig) -> GemmConfig {
    GemmConfig { consumers: 1, ..cfg }
}

#[test]
fn bn_80_matches_the_reference_with_both_tile_heights() {
    // 200 × 200 × 136: 2 (bm 128) or 4 (bm 64) M-tiles, 3 N-tiles of 80 (the last 40 wide),
    // the last k-slice 8 deep; one block per tile, then persistent over 3 blocks
    let cfg = GemmConfig { bn: 80, stages: 3, overlap: true, ..GemmConfig::default() };
    run(cfg, 200, 200, 136, 401);
    let walk = one(GemmConfig { persistent: true, raster: Raster::Grouped(2), ..cfg });
    run_on(walk, 200, 200, 136, 403, 3);
}

#[test]
fn bn_144_matches_the_reference_in_persistent_walks() {
    // the 1000³ candidate's width, 64-row tiles: 130 × 300 is 3 × 3 tiles (the last N-tile 12
    // wide), 2 blocks walking them in grouped order, K = 200 over 3 stages
    let cfg = one(GemmConfig {
        bn: 144,
        stages: 3,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(2),
        ..GemmConfig::default()
    });
    run_on(cfg, 130, 300, 200, 411, 2);
    // two consumers, A MN-major (its slabs are independent of bn), Hilbert order, f32 C
    let two = GemmConfig {
        consumers: 2,
        a_major: Major::MN,
        raster: Raster::Hilbert,
        output: ScalarType::F32,
        ..cfg
    };
    run_on(two, 260, 150, 72, 413, 2);
}

#[test]
fn the_64_by_144_tile_stores_through_tma_boxes_at_ragged_edges() {
    // cuBLASLt's 1000³ tile (64 × 144, 8 stages) with the TMA store: two 64-column boxes
    // through `cm`, the last 16 columns through `cm_tail`. 200 × 296 × 136: 4 M-tiles (the last
    // 8 rows), 3 N-tiles (the last 8 wide: the tail box clipped at N), the last k-slice 8 deep;
    // one block per tile, then persistent walks over 5 and 3 blocks with 8 and 6 stages
    let tile = one(GemmConfig {
        bn: 144,
        stages: 8,
        overlap: true,
        epilogue: Epilogue::Tma,
        ..GemmConfig::default()
    });
    assert_eq!(tile.c_maps(), ["cm", "cm_tail"]);
    run(tile, 200, 296, 136, 451);
    let walk = GemmConfig { persistent: true, raster: Raster::Grouped(8), ..tile };
    run_on(walk, 200, 296, 136, 453, 5);
    run_on(GemmConfig { stages: 6, ..walk }, 136, 280, 200, 455, 3);
    // bn 160, 7 stages (the bench's other 112-tile width), f16 in and out: 130 × 200 is 3 × 2
    // tiles, the last N-tile 40 wide (a 64-column box clipped, then the 32-column tail)
    let f16 =
        GemmConfig { bn: 160, stages: 7, input: ScalarType::F16, output: ScalarType::F16, ..walk };
    run_on(f16, 130, 200, 200, 457, 4);
}

#[test]
fn bn_176_applies_the_epilogue_op_with_ragged_edges() {
    // the 8192 × 8192 × 1024 candidate's width: 150 × 200 (2 × 2 tiles of 128 × 176, the last
    // N-tile 24 wide), every step of the epilogue, both tile heights
    let op =
        EpilogueOp { alpha: true, beta: true, bias: Some(ScalarType::F32), act: Activation::Relu };
    let cfg = GemmConfig {
        bn: 176,
        stages: 2,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(8),
        op,
        ..GemmConfig::default()
    };
    run_on(cfg, 150, 200, 72, 421, 3);
    let gelu = EpilogueOp { act: Activation::Gelu, bias: Some(ScalarType::BF16), ..op };
    run(
        one(GemmConfig { persistent: false, raster: Raster::Linear, op: gelu, ..cfg }),
        100,
        190,
        136,
        423,
    );
}

#[test]
fn pairs_of_blocks_split_odd_widths_into_halves() {
    // cluster 2: each block multicasts bn / 2 rows of B (bn 112: 56 rows, 7 swizzle atoms; bn
    // 208: 104), 3 M-tiles (the last pair's second tile outside C), N off the tile
    let pair = GemmConfig {
        bn: 112,
        stages: 3,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(2),
        cluster: 2,
        ..GemmConfig::default()
    };
    run_on(pair, 300, 250, 136, 431, 4);
    let wide = one(GemmConfig { bn: 208, stages: 2, output: ScalarType::F32, ..pair });
    run_on(wide, 150, 230, 72, 433, 2);
}

#[test]
fn tf32_and_an_f32_tma_store_take_odd_widths() {
    // tf32 (k 8, 32 K a stage in the same 128-byte rows), bn 80, K = 200 (the last stage 8 deep)
    let tf32 = GemmConfig {
        input: ScalarType::F32,
        output: ScalarType::F32,
        bn: 80,
        stages: 3,
        overlap: true,
        ..GemmConfig::default()
    };
    run(tf32, 130, 170, 200, 441);
    // an f32 C is stored in boxes of 32 columns: bn 96 is three of them, bn 160 five
    let tma = GemmConfig {
        input: ScalarType::BF16,
        bn: 96,
        persistent: true,
        raster: Raster::Grouped(2),
        epilogue: Epilogue::Tma,
        ..tf32
    };
    run_on(tma, 200, 200, 136, 443, 3);
    let op = EpilogueOp { beta: true, bias: Some(ScalarType::F32), ..EpilogueOp::default() };
    run_on(one(GemmConfig { bn: 160, op, ..tma }), 100, 172, 72, 445, 2);
}

#[test]
fn widths_a_layout_cannot_take_are_refused_by_name() {
    let base = GemmConfig::default();
    for bad in [0, 8, 72, 100, 264, 272] {
        let e = GemmConfig { bn: bad, ..base }.check().unwrap_err().to_string();
        assert!(
            e.contains(&format!("bn = {bad}")) && e.contains("multiple of 16 in 16..=256"),
            "{e}"
        );
    }
    // B MN-major: whole slabs of 64 N-columns
    for bn in [80, 144, 176] {
        let e = build_gemm_sm90(GemmConfig { bn, b_major: Major::MN, ..base }).unwrap_err();
        let e = e.to_string();
        assert!(e.contains(&format!("bn = {bn}")) && e.contains("multiple of 64"), "{e}");
        assert!(e.contains("B MN-major"), "{e}");
    }
    assert!(GemmConfig { bn: 192, b_major: Major::MN, ..base }.check().is_ok());
    // the TMA store: boxes of 128 bytes (64 columns of bf16, 32 of f32), the rest in boxes of
    // 64 or 32 bytes through a second map
    let tma = GemmConfig { epilogue: Epilogue::Tma, ..base };
    for (bn, out, maps) in [
        (144, ScalarType::BF16, 2),
        (192, ScalarType::BF16, 1),
        (80, ScalarType::F32, 2),
        (96, ScalarType::F32, 1),
        (16, ScalarType::BF16, 2),
    ] {
        let cfg = GemmConfig { bn, output: out, stages: 2, ..tma };
        cfg.check().unwrap();
        assert_eq!(cfg.c_maps().len(), maps, "{bn} {out}");
        let k = build_gemm_sm90(cfg).unwrap();
        let names: Vec<&str> = k.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names.contains(&"cm_tail"), maps == 2, "{names:?}");
    }
    // the same widths through registers are fine, and the stage size follows bn
    let odd = GemmConfig { bn: 176, stages: 5, ..base };
    assert_eq!(odd.shared_bytes(), 5 * (128 + 176) * 64 * 2);
    odd.check().unwrap();
    let e = GemmConfig { stages: 6, ..odd }.check().unwrap_err().to_string();
    assert!(e.contains("stages = 6") && e.contains("38 KiB a stage"), "{e}");
    // the grid follows bn: 1000 columns in 7 tiles of 144
    let cfg = one(GemmConfig { bn: 144, ..base });
    assert_eq!(launch_grid(&cfg, 1000, 1000, 132).unwrap(), [7, 16, 1]);
    assert_eq!(cfg.label(), "bn 144, 4 stages, bm 64");
}

#[test]
fn odd_widths_assemble_for_sm_90a_without_spills() {
    let p = GemmConfig {
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(8),
        ..GemmConfig::default()
    };
    let op = full_op(ScalarType::BF16);
    let configs = [
        // the bench's and the tuner's candidates
        one(GemmConfig { bn: 144, stages: 8, ..p }),
        one(GemmConfig { bn: 144, stages: 8, epilogue: Epilogue::Tma, ..p }),
        one(GemmConfig {
            bn: 144,
            stages: 8,
            persistent: false,
            raster: Raster::Linear,
            epilogue: Epilogue::Tma,
            ..p
        }),
        one(GemmConfig {
            bn: 160,
            stages: 7,
            input: ScalarType::F16,
            output: ScalarType::F16,
            epilogue: Epilogue::Tma,
            ..p
        }),
        one(GemmConfig { bn: 80, stages: 10, ..p }),
        GemmConfig { bn: 176, stages: 5, ..p },
        GemmConfig { bn: 160, stages: 5, ..p },
        GemmConfig { bn: 176, stages: 5, cluster: 2, ..p },
        GemmConfig { bn: 240, stages: 4, output: ScalarType::F32, ..p },
        // every width once, the whole epilogue, tf32, an f32 TMA store
        GemmConfig { bn: 208, stages: 4, op, ..p },
        one(GemmConfig { bn: 112, stages: 6, op, ..p }),
        GemmConfig { bn: 224, stages: 2, output: ScalarType::F32, epilogue: Epilogue::Tma, ..p },
        GemmConfig { bn: 96, input: ScalarType::F32, output: ScalarType::F32, stages: 4, ..p },
        GemmConfig { bn: 16, stages: 4, ..p },
        GemmConfig { bn: 48, stages: 4, a_major: Major::MN, ..p },
    ];
    // and every odd-width candidate of the tuner on the shapes it was added for (bf16 and f32
    // C, the 64-row tile where the problem wants it)
    let mut tuned: Vec<GemmConfig> = Vec::new();
    for (m, n, k, out) in [
        (1000, 1000, 1000, ScalarType::BF16),
        (8192, 8192, 1024, ScalarType::BF16),
        (8192, 8192, 1024, ScalarType::F32),
        (64, 8192, 8192, ScalarType::F32),
    ] {
        let p = GemmProblem::new(m, n, k, ScalarType::BF16, out, true);
        for c in p.candidates().iter().filter(|c| c.bn % 64 != 0) {
            let cfg = p.config(c);
            if !tuned.contains(&cfg) && !configs.contains(&cfg) {
                tuned.push(cfg);
            }
        }
    }
    assert!(tuned.len() >= 12, "{}", tuned.len());
    for cfg in configs.into_iter().chain(tuned) {
        let k = build_gemm_sm90(cfg).unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
        assert!(k.to_string().contains(&format!("m64n{}k", cfg.bn)), "{cfg:?}");
        let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
        if let Some(report) =
            tilekit_ptx::ptxas::assemble(&ptx, tilekit_ptx::Target::Sm90a, "gemm_sm90").unwrap()
        {
            assert!(report.contains("0 bytes spill stores"), "{cfg:?}\n{report}");
            eprintln!(
                "{}: {}",
                cfg.label(),
                report.lines().filter(|l| l.contains("registers")).collect::<Vec<_>>().join(" | ")
            );
        }
    }
}

// ptxas assembled this file's kernels, or the summary counts one ignored test (docs/testing.md)
tilekit_ptx::ptxas_sentinel!();
