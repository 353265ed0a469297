//! The Hopper GEMM's TMA-store epilogue in column subtiles (`GemmConfig::epilogue_subtile`):
//! each C tile is written `s` columns at a time into one of two shared buffers of `bm × s`
//! and stored from there, the storing thread waiting `cp.async.bulk.wait_group.read 1` before
//! a buffer is rewritten — so a 128 × 176 ping-pong tile keeps 5 ring stages instead of 3.
//! On the interpreter (whose async checker refuses a shared write into a buffer a bulk store
//! may still read) against an f64 reference with C poisoned first: M, N and K off the tile,
//! several tiles a block so both ping-pong warpgroups alternate, tail boxes at N, every output
//! type; the refusals by name; the knob at 0 leaves the kernels byte for byte; the new
//! configurations assemble for sm_90a without spills and are in the tuner's and bench's lists.

use crate::gemm_common;

use gemm_common::{assemble_clean, full_op, run_on};
use tilekit_ir::ScalarType;
use tilekit_ops::gemm_sm90::{build_gemm_sm90, Epilogue, GemmConfig, Raster, C_SUB_BUFFERS};
use tilekit_ops::gemm_tuning::{GemmProblem, PINGPONG_SUBTILE_WIDTHS};

/// Ping-pong consumers, persistent in grouped order, one wgmma group in flight, the TMA store
/// in `sub`-column subtiles.
fn pp(bn: i64, stages: i64, sub: i64) -> GemmConfig {
    GemmConfig {
        bn,
        stages,
        epilogue: Epilogue::Tma,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(2),
        pingpong: true,
        epilogue_subtile: sub,
        ..GemmConfig::default()
    }
}

#[test]
fn bn_176_in_32_column_subtiles_keeps_5_stages_and_matches_the_reference() {
    // 128 × 176 in subtiles of 32 (64-byte boxes) and a last one of 16 (a 32-byte box through
    // `cm_tail`): 5 × 38 KiB of ring + 2 warpgroups × 2 buffers × 8 KiB = 222 KiB
    let cfg = pp(176, 5, 32);
    assert_eq!(cfg.shared_bytes(), 5 * 38 * 1024 + 2 * C_SUB_BUFFERS * 128 * 32 * 2);
    assert!(cfg.check().is_ok());
    assert!(GemmConfig { epilogue_subtile: 0, ..cfg }.check().is_err(), "two whole C tiles");
    assert_eq!(cfg.c_maps(), ["cm", "cm_tail"]);
    // 300 × 400 × 136: 3 × 3 tiles (the last M-tile 44 rows, the last N-tile 48 columns: its
    // subtiles 0 and 1 partly inside, 2..5 wholly outside C), K in 3 slices, 2 blocks walking
    // 5 and 4 tiles (each warpgroup 2 or 3: 6 subtiles a tile, the buffers reused 3 times each)
    run_on(cfg, 300, 400, 136, 601, 2);
    // f16, N inside the last subtile of the second N-tile (136 = 176 + 4 · 32 + 8 − 176),
    // linear order, 3 blocks
    let f16 = GemmConfig {
        input: ScalarType::F16,
        output: ScalarType::F16,
        raster: Raster::Linear,
        ..cfg
    };
    run_on(f16, 260, 312, 200, 603, 3);
}

#[test]
fn subtiles_of_64_16_and_f32_rows_match_the_reference() {
    // bn 176 in subtiles of 64 (128-byte boxes) and a last one of 48 (three 32-byte boxes)
    let sub64 = pp(176, 4, 64);
    assert_eq!(sub64.c_maps(), ["cm", "cm_tail"]);
    run_on(sub64, 290, 344, 200, 611, 2);
    // bn 208 in 16-column subtiles (13 of them, one 32-byte box each: one map), 5 stages
    let sub16 = pp(208, 5, 16);
    assert_eq!(sub16.c_maps(), ["cm"]);
    run_on(sub16, 300, 424, 72, 613, 3);
    // an f32 C: bn 144 in 32-column subtiles (128-byte boxes) and a last one of 16 (64 bytes)
    let f32_c = GemmConfig { output: ScalarType::F32, ..pp(144, 4, 32) };
    assert_eq!(f32_c.c_maps(), ["cm", "cm_tail"]);
    run_on(f32_c, 260, 300, 136, 615, 2);
    // bn 128, 6 stages, subtiles of 32, the whole op (alpha, beta·C, bias, GELU)
    let op = GemmConfig { op: full_op(ScalarType::F32), ..pp(128, 6, 32) };
    run_on(op, 200, 264, 136, 617, 2);
}

#[test]
fn the_cooperative_kernels_take_subtiles_too() {
    // two consumers on one 128 × 256 tile in 64-column subtiles (both warpgroups write each,
    // one thread stores it), 4 stages (3 with a whole C tile); and one consumer (64 rows) at
    // bn 128 in subtiles of 32 with the op, and a pair of blocks (cluster 2) with an odd
    // M-tile count (the last pair's second tile stores nothing)
    let coop = GemmConfig { pingpong: false, ..pp(256, 4, 64) };
    assert!(GemmConfig { epilogue_subtile: 0, ..coop }.check().is_err());
    run_on(coop, 200, 488, 136, 621, 2);
    let one = GemmConfig {
        consumers: 1,
        bn: 128,
        epilogue_subtile: 32,
        op: full_op(ScalarType::BF16),
        ..coop
    };
    run_on(one, 150, 296, 72, 623, 2);
    let pair = GemmConfig { cluster: 2, raster: Raster::Grouped(4), ..coop };
    run_on(pair, 300, 488, 72, 625, 4);
}

#[test]
fn bad_subtiles_are_refused_by_name() {
    let cfg = pp(176, 3, 32);
    // not a swizzle row of C nor whole 128-byte rows: 48 bf16 columns are 96 bytes
    for sub in [48, -16, 8, 192, 80] {
        let e = GemmConfig { epilogue_subtile: sub, ..cfg }.check().unwrap_err().to_string();
        assert!(e.contains(&format!("epilogue_subtile = {sub}")), "{e}");
        assert!(e.contains("16, 32, 64, 128"), "{e}");
    }
    // the register epilogue has no C tile to subtile
    let regs = GemmConfig { epilogue: Epilogue::Registers, ..cfg };
    let e = regs.check().unwrap_err().to_string();
    assert!(e.contains("epilogue_subtile = 32") && e.contains("Registers"), "{e}");
    // f32 C: 8 columns (32 bytes) is a subtile, 24 (96 bytes) is not
    let f32_c = GemmConfig { output: ScalarType::F32, ..cfg };
    assert!(GemmConfig { epilogue_subtile: 8, ..f32_c }.check().is_ok());
    let e = GemmConfig { epilogue_subtile: 24, ..f32_c }.check().unwrap_err().to_string();
    assert!(e.contains("epilogue_subtile = 24") && e.contains("8, 16, 32, 64"), "{e}");
    // an epilogue op beside a tile wider than 128 in subtiles spills (ptxas): refused
    for (bn, pingpong) in [(144, false), (256, false)] {
        let wide = GemmConfig { op: full_op(ScalarType::F32), pingpong, ..pp(bn, 3, 32) };
        let e = wide.check().unwrap_err().to_string();
        assert!(e.contains(&format!("32 with an epilogue op at bn {bn}")), "{e}");
        assert!(e.contains("bn ≤ 128"), "{e}");
    }
    // the ring still has to fit beside the buffers
    let e = pp(176, 6, 32).check().unwrap_err().to_string();
    assert!(e.contains("stages = 6"), "{e}");
}

#[test]
fn subtiled_kernels_store_each_subtile_and_wait_before_reusing_a_buffer() {
    let text = build_gemm_sm90(pp(176, 5, 32)).unwrap().to_string();
    // six subtiles per tile, one bulk group each: 5 stores of 64-byte boxes, 1 of 32
    assert_eq!(text.matches("cp.async.bulk.tensor.2d.global.shared cm[").count(), 5, "{text}");
    assert_eq!(text.matches("cp.async.bulk.tensor.2d.global.shared cm_tail[").count(), 1);
    assert_eq!(text.matches("cp.async.bulk.commit_group").count(), 6);
    // subtiles 2..5 wait for all but the newest group; the tile and the kernel's end for all
    assert_eq!(text.matches("cp.async.bulk.wait_group.read 1").count(), 4);
    assert_eq!(text.matches("cp.async.bulk.wait_group.read 0").count(), 2);
    // each warpgroup's barrier: once before the tile, before subtiles 2..5 and after each
    for id in [1, 2] {
        assert_eq!(text.matches(&format!("bar.sync {id}, 128")).count(), 1 + 4 + 6);
    }
    assert_eq!(text.matches("fence.proxy.async").count(), 6);
}

#[test]
fn subtiled_pingpong_kernels_assemble_for_sm_90a_without_spills() {
    // the tuner's subtiled ping-pong candidates for 8192 × 8192 × 1024 and 2048³ (bf16 and
    // f32 C: every width 128..=208 at its deepest ring), the other subtile widths at bn 176,
    // the op at bn 128, and the cooperative kernel's
    let mut configs = Vec::new();
    for (m, n, k, out) in [
        (8192, 8192, 1024, ScalarType::BF16),
        (2048, 2048, 2048, ScalarType::BF16),
        (8192, 8192, 1024, ScalarType::F32),
    ] {
        let p = GemmProblem::new(m, n, k, ScalarType::BF16, out, true);
        for c in p.candidates().iter().filter(|c| c.epilogue_subtile > 0) {
            let cfg = p.config(c);
            if !configs.contains(&cfg) {
                configs.push(cfg);
            }
        }
    }
    // (2048³ with a bf16 C takes the same as 8192 × 8192 × 1024; and per C type the
    // cooperative 128 × 256 tile in 128-byte subtiles)
    assert_eq!(configs.len(), 2 * (PINGPONG_SUBTILE_WIDTHS.len() + 1), "{configs:?}");
    for sub in [16, 64] {
        configs.push(pp(176, if sub == 64 { 4 } else { 5 }, sub));
    }
    configs.push(GemmConfig { op: full_op(ScalarType::F32), ..pp(128, 6, 32) });
    // the cooperative kernel with the op at bn 128 (the widest an op takes in subtiles), and
    // its plain product at bn 256 in 128-byte subtiles
    let coop = GemmConfig { pingpong: false, ..pp(128, 6, 64) };
    configs.push(GemmConfig { op: full_op(ScalarType::F32), ..coop });
    configs.push(GemmConfig { bn: 256, stages: 3, epilogue_subtile: 64, ..coop });
    for cfg in configs {
        assemble_clean(cfg);
    }
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

#[test]
fn the_kernels_without_subtiles_are_unchanged_byte_for_byte() {
    // the PTX (FNV-1a, length) of ping-pong and TMA-store kernels as main emitted them before
    // `epilogue_subtile` existed (a7abe94: derived there with this list); the cooperative ones
    // are pinned in gemm_sm90.rs. An emitter change elsewhere changes them too — then re-derive
    // them from a commit without the subtile's kernel changes, never from this one
    let p = GemmConfig {
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(8),
        pingpong: true,
        ..GemmConfig::default()
    };
    let tma = Epilogue::Tma;
    let cases = [
        (GemmConfig { bn: 128, stages: 5, epilogue: tma, ..p }, 0xe3b43782b5ea4a36u64, 43639usize),
        (GemmConfig { bn: 176, stages: 3, epilogue: tma, ..p }, 0xca5cc9f25dd547b2, 54362),
        (
            GemmConfig { bn: 144, stages: 2, epilogue: tma, output: ScalarType::F32, ..p },
            0x9b7feac4a9a583cc,
            42437,
        ),
        (
            GemmConfig { bn: 192, stages: 5, epilogue: Epilogue::Registers, ..p },
            0x3a7642cc795b2906,
            84401,
        ),
        (
            GemmConfig { bn: 128, stages: 4, epilogue: tma, op: full_op(ScalarType::F32), ..p },
            0x6a53769811ea2d01,
            162105,
        ),
        (
            GemmConfig { bn: 144, stages: 4, epilogue: tma, consumers: 1, pingpong: false, ..p },
            0xfee5f105a185d585,
            28802,
        ),
    ];
    for (cfg, hash, len) in cases {
        assert_eq!(cfg.epilogue_subtile, 0);
        let k = build_gemm_sm90(cfg).unwrap();
        let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
        assert_eq!((fnv(&ptx), ptx.len()), (hash, len), "{}", cfg.label());
    }
}

// ptxas assembled this file's kernels, or the summary counts one ignored test (docs/testing.md)
tilekit_ptx::ptxas_sentinel!();
