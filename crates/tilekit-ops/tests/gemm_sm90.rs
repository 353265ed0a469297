//! The Hopper GEMM (TMA ring + wgmma, warp-specialised) on the interpreter: edge tiles in M, N
//! and K (TMA's zero fill, masked stores), every output type, against an f64 reference; and
//! its PTX assembles for sm_90a.

use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::ScalarType;
use tilekit_ops::backend::{Backend, Interp};
use tilekit_ops::bind::{map_arg, Bindings};
use tilekit_ops::compiled::CompiledKernel;
use tilekit_ops::gemm_sm90::{
    build_gemm_sm90, hilbert_order, launch_grid, Epilogue, GemmConfig, Raster, BM,
};
use tilekit_ops::host;

fn run(cfg: GemmConfig, m: i64, n: i64, k: i64, seed: u64) {
    run_on(cfg, m, n, k, seed, Interp.multiprocessors());
}

/// `sms`: the multiprocessors the launch grid is computed for (fewer than the tiles: each
/// persistent block walks several).
fn run_on(cfg: GemmConfig, m: i64, n: i64, k: i64, seed: u64, sms: u32) {
    let kernel = CompiledKernel::new(build_gemm_sm90(cfg).unwrap());
    let ty = cfg.input;
    let a = HostTensor::new(
        host::random(ty, (m * k) as usize, seed).unwrap(),
        TensorLayout::contiguous(ty, vec![m, k]).unwrap(),
    )
    .unwrap();
    let b = HostTensor::new(
        host::random(ty, (n * k) as usize, seed + 1).unwrap(),
        TensorLayout::contiguous(ty, vec![n, k]).unwrap(),
    )
    .unwrap();
    let mut c = HostTensor::new(
        host::poisoned(cfg.output, (m * n) as usize).unwrap(),
        TensorLayout::contiguous(cfg.output, vec![m, n]).unwrap(),
    )
    .unwrap();
    let c_map = map_arg(c.layout());
    let (tm, tn) = ((m + BM - 1) / BM, (n + cfg.bn - 1) / cfg.bn);
    let order = HostTensor::from_slice(&hilbert_order(tm, tn), &[tm * tn]).unwrap();
    let mut bind = Bindings::new(&kernel)
        .input_ptr("a", &a, m * k, &Interp)
        .unwrap()
        .input_ptr("b", &b, n * k, &Interp)
        .unwrap()
        .tensor_map("am", map_arg(a.layout()).unwrap())
        .unwrap()
        .tensor_map("bm", map_arg(b.layout()).unwrap())
        .unwrap()
        .output("c", &mut c, &Interp)
        .unwrap()
        .int("k", k)
        .unwrap();
    if cfg.epilogue == Epilogue::Tma {
        bind = bind.tensor_map("cm", c_map.unwrap()).unwrap();
    }
    if cfg.raster == Raster::Hilbert {
        bind = bind.input_ptr("order", &order, tm * tn, &Interp).unwrap();
    }
    let grid = launch_grid(&cfg, m, n, sms).unwrap();
    Interp.launch(&kernel, grid, bind).unwrap_or_else(|e| panic!("{cfg:?} {m}x{n}x{k}: {e}"));
    let (av, bv) = (host::to_f64(a.buffer()), host::to_f64(b.buffer()));
    let got = host::to_f64(c.buffer());
    let out_eps = if cfg.output == ScalarType::F32 { 0.0 } else { 1.0 / 256.0 };
    for i in 0..m as usize {
        for j in 0..n as usize {
            let terms = (0..k as usize).map(|x| av[i * k as usize + x] * bv[j * k as usize + x]);
            let want: f64 = terms.clone().sum();
            let mag: f64 = terms.map(f64::abs).sum();
            let tol = mag * 8.0 * f32::EPSILON as f64 + want.abs() * out_eps + 1e-30;
            let g = got[i * n as usize + j];
            assert!(
                (g - want).abs() <= tol,
                "{cfg:?} {m}x{n}x{k}: C[{i}][{j}] = {g}, reference {want} (tolerance {tol})"
            );
        }
    }
}

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
    ] {
        let k = build_gemm_sm90(cfg).unwrap();
        let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
        assert!(tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90).is_err());
        if let Some(report) =
            tilekit_ptx::ptxas::assemble(&ptx, tilekit_ptx::Target::Sm90a, "gemm_sm90").unwrap()
        {
            assert!(report.contains("0 bytes spill stores"), "{cfg:?}\n{report}");
        }
    }
}
