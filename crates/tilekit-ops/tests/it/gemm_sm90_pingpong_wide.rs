//! The Hopper GEMM's ping-pong schedule in tiles wider than 128 columns (`GemmConfig::pingpong`
//! with bn 144..=208: each consumer warpgroup holds a 128 × bn tile, bn accumulators a thread
//! in 240 registers) and the TMA-store epilogue of widths that are not a multiple of 128 bytes
//! of C (64-column boxes, then narrower ones through `cm_tail`: a 64-byte box for 32 bf16
//! columns or 16 f32, 32-byte boxes for 16 and 48 bf16 columns), on the interpreter against an
//! f64 reference with C poisoned first: M, N and K off the tile, several tiles a block so both
//! warpgroups take turns, every output type; the refusals by name; and the new configurations
//! assemble for sm_90a without spills.

use crate::gemm_common;

use gemm_common::{assemble_clean, full_op, run_on};
use tilekit_ir::ScalarType;
use tilekit_ops::gemm_sm90::{build_gemm_sm90, Epilogue, GemmConfig, Raster, PINGPONG_MAX_BN};
use tilekit_ops::gemm_tuning::GemmProblem;

/// Ping-pong consumers, persistent in grouped order, one wgmma group in flight.
fn pp(bn: i64, stages: i64, epilogue: Epilogue) -> GemmConfig {
    GemmConfig {
        bn,
        stages,
        epilogue,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(2),
        pingpong: true,
        ..GemmConfig::default()
    }
}

#[test]
fn bn_176_pingpong_tma_store_matches_the_reference() {
    // 300 × 400 × 136: 3 × 3 tiles of 128 × 176 (the last M-tile 44 rows, the last N-tile 48
    // columns: its 64-column boxes wholly or partly outside C, its three 16-column tail boxes
    // partly inside), K in 3 slices (the last 8 deep), 3 stages; 2 blocks walk 5 and 4 tiles,
    // each warpgroup 2 or 3 of them, the ring wrapping across the warpgroups' tiles
    let cfg = pp(176, 3, Epilogue::Tma);
    assert_eq!(cfg.c_maps(), ["cm", "cm_tail"]);
    run_on(cfg, 300, 400, 136, 501, 2);
    // f16 in and out, N inside the tail (the last N-tile 136 wide: 2 boxes of 64 and 8 columns
    // of the first 16-column box), Linear order, 3 blocks
    let f16 = GemmConfig {
        input: ScalarType::F16,
        output: ScalarType::F16,
        raster: Raster::Linear,
        ..cfg
    };
    run_on(f16, 260, 312, 200, 503, 3);
}

#[test]
fn bn_160_and_144_pingpong_tma_stores_use_64_and_32_byte_tail_boxes() {
    // bn 160: 2 × 64 + one 32-column box (64-byte swizzle); bn 144: 2 × 64 + one 16-column box
    // (32-byte swizzle); 4 stages; 3 × 3 tiles on 2 blocks, N off the tile (a TMA store needs
    // C's rows in 16-byte steps: N a multiple of 8 bf16)
    run_on(pp(160, 4, Epilogue::Tma), 290, 344, 200, 511, 2);
    run_on(pp(144, 4, Epilogue::Tma), 260, 296, 136, 513, 2);
    // an f32 C at bn 144: four 32-column boxes and one of 16 (64-byte swizzle); two f32 C tiles
    // of 128 × 144 leave room for 2 stages
    let f32_c = GemmConfig { output: ScalarType::F32, ..pp(144, 2, Epilogue::Tma) };
    assert_eq!(f32_c.c_maps(), ["cm", "cm_tail"]);
    run_on(f32_c, 260, 300, 136, 515, 2);
}

#[test]
fn bn_192_and_208_pingpong_match_the_reference_in_both_epilogues() {
    // bn 192: three 64-column boxes (no tail), 3 stages beside two 48 KiB C tiles; the register
    // epilogue with an f32 C and 5 stages; bn 208 (the widest: 2 stages with the TMA store,
    // whose tail is one 16-column box); 3 blocks over 3 × 2 tiles
    run_on(pp(192, 3, Epilogue::Tma), 300, 376, 136, 521, 2);
    let regs = GemmConfig { output: ScalarType::F32, ..pp(192, 5, Epilogue::Registers) };
    run_on(regs, 290, 370, 200, 523, 2);
    run_on(pp(PINGPONG_MAX_BN, 2, Epilogue::Tma), 300, 400, 72, 525, 3);
    run_on(pp(176, 5, Epilogue::Registers), 260, 300, 136, 527, 1);
}

#[test]
fn the_cooperative_kernel_takes_tail_boxes_with_the_epilogue_op() {
    // the narrower boxes are the epilogue's, not ping-pong's: two consumers on one 128 × 176
    // tile with every step of the op (beta reads C), and one consumer (64 rows) at bn 80 (one
    // 16-column box of 32 bytes), both ragged
    let coop = GemmConfig {
        bn: 176,
        stages: 3,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(2),
        epilogue: Epilogue::Tma,
        op: full_op(ScalarType::F32),
        ..GemmConfig::default()
    };
    run_on(coop, 200, 232, 72, 531, 2);
    let one = GemmConfig { consumers: 1, bn: 80, stages: 4, op: full_op(ScalarType::BF16), ..coop };
    run_on(one, 150, 168, 136, 533, 2);
}

#[test]
fn wide_pingpong_tiles_that_would_spill_are_refused_by_name() {
    for bn in [224, 240, 256] {
        let e = build_gemm_sm90(pp(bn, 2, Epilogue::Registers)).unwrap_err().to_string();
        assert!(e.contains("pingpong") && e.contains(&format!("bn {bn}")), "{e}");
        assert!(e.contains("bn ≤ 208"), "{e}");
    }
    // an epilogue op beside more than 128 accumulators spills: bn ≤ 128 with one
    for bn in [144, 176] {
        let cfg = GemmConfig { op: full_op(ScalarType::F32), ..pp(bn, 3, Epilogue::Registers) };
        let e = cfg.check().unwrap_err().to_string();
        assert!(
            e.contains(&format!("bn {bn}")) && e.contains("bn ≤ 128 with an epilogue op"),
            "{e}"
        );
    }
    let cfg = GemmConfig { op: full_op(ScalarType::F32), ..pp(128, 3, Epilogue::Registers) };
    cfg.check().unwrap();
    // registers: the wide tiles' consumers take 240, the producer keeps 24
    let text = build_gemm_sm90(pp(176, 3, Epilogue::Tma)).unwrap().to_string();
    assert!(text.contains("setmaxnreg.inc 240") && text.contains("setmaxnreg.dec 24"), "{text}");
    let text = build_gemm_sm90(pp(128, 3, Epilogue::Tma)).unwrap().to_string();
    assert!(text.contains("setmaxnreg.inc 232") && text.contains("setmaxnreg.dec 40"));
}

#[test]
fn wide_pingpong_kernels_assemble_for_sm_90a_without_spills() {
    // every width 144..=208 in both epilogues and C types where the shared memory fits, and the
    // tuner's ping-pong candidates for 8192 × 8192 × 1024 and 2048³ (bf16 and f32 C)
    let mut configs = Vec::new();
    for bn in (144..=PINGPONG_MAX_BN).step_by(16) {
        for epilogue in [Epilogue::Registers, Epilogue::Tma] {
            for output in [ScalarType::BF16, ScalarType::F32] {
                let at = |stages| GemmConfig { output, ..pp(bn, stages, epilogue) };
                if let Some(cfg) = (2..=5).rev().map(at).find(|c| c.check().is_ok()) {
                    configs.push(cfg);
                }
            }
        }
    }
    for (m, n, k, out) in [
        (8192, 8192, 1024, ScalarType::BF16),
        (2048, 2048, 2048, ScalarType::BF16),
        (8192, 8192, 1024, ScalarType::F32),
    ] {
        let p = GemmProblem::new(m, n, k, ScalarType::BF16, out, true);
        for c in p.candidates().iter().filter(|c| c.pingpong && c.bn > 128) {
            let cfg = p.config(c);
            if !configs.contains(&cfg) {
                configs.push(cfg);
            }
        }
    }
    assert!(configs.len() >= 20, "{}", configs.len());
    for cfg in configs {
        assemble_clean(cfg);
    }
}

// ptxas assembled this file's kernels, or the summary counts one ignored test (docs/testing.md)
tilekit_ptx::ptxas_sentinel!();
