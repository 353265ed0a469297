//! The batched Hopper GEMM (`GemmConfig::batched`: one launch for strided batches, 3-D tensor
//! maps, the walk over batch × tiles) on the interpreter against an f64 reference per entry:
//! edge tiles, each operand layout, both epilogues, persistent and one-block-per-tile grids, a
//! shared (batch step 0) operand; gaps between entries and past each row stay untouched; and
//! its PTX assembles for sm_90a without spills.

use crate::gemm_common;

use gemm_common::{bias_tensor, bind_epilogue, full_op, tile_order};
use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::tma::TensorMapArg;
use tilekit_ir::wgmma::Major;
use tilekit_ir::ScalarType;
use tilekit_ops::backend::{Backend, Interp};
use tilekit_ops::bind::{map_arg, Bindings};
use tilekit_ops::compiled::CompiledKernel;
use tilekit_ops::gemm_sm90::{
    build_gemm_sm90, launch_grid_batched, Activation, Epilogue, GemmConfig, Raster,
};
use tilekit_ops::host;

/// `entries` operands of `mn` rows (M or N) and `k` columns, stored K-major (`mn × k`) or
/// MN-major (`k × mn`), random; each stored row padded with NaN to a multiple of 8 elements
/// and one NaN row between entries (the map's dims stop before both: a NaN in C is a read
/// past them). With its 3-D tensor map, row pitch and entry stride (elements).
fn operand(
    ty: ScalarType,
    major: Major,
    entries: i64,
    mn: i64,
    k: i64,
    seed: u64,
) -> (HostTensor, TensorMapArg, usize, usize) {
    let (outer, inner) = if major == Major::K { (mn, k) } else { (k, mn) };
    let pitch = (inner + 7) / 8 * 8;
    let entry = (outer + 1) * pitch;
    let len = entries * entry;
    let r = host::random(ty, len as usize, seed).unwrap();
    let nan = host::round_bits(ty, f64::NAN);
    let inside = |i: i64| i % pitch < inner && i % entry < outer * pitch;
    let buf =
        host::fill_with(ty, r.len(), |i| if inside(i as i64) { r.bits(i) } else { nan }).unwrap();
    let t = HostTensor::new(buf, TensorLayout::contiguous(ty, vec![len]).unwrap()).unwrap();
    let eb = ty.size_bytes() as u64;
    let map = TensorMapArg::new(
        &[inner as u64, outer as u64, entries as u64],
        &[pitch as u64 * eb, entry as u64 * eb],
    );
    (t, map, pitch as usize, entry as usize)
}

/// One launch of `batch` products `m × n × k`; `shared_b`: B is one entry (step 0) that every
/// entry reads. `alpha` 1.5, `beta` −0.75 (C then starts random, otherwise NaN), bias random.
/// C is `batch × m × n` with its rows padded to 8 elements and a padding row between entries:
/// the padding must stay as it was.
fn run(cfg: GemmConfig, batch: i64, (m, n, k): (i64, i64, i64), shared_b: bool, sms: u32) {
    let seed = (batch * 1000 + m * 7 + n * 3 + k) as u64;
    let cfg = GemmConfig { batched: true, ..cfg };
    let kernel = CompiledKernel::new(build_gemm_sm90(cfg).unwrap());
    let ty = cfg.input;
    let b_entries = if shared_b { 1 } else { batch };
    let (a, a_map, a_pitch, a_entry) = operand(ty, cfg.a_major, batch, m, k, seed);
    let (b, b_map, b_pitch, b_entry) = operand(ty, cfg.b_major, b_entries, n, k, seed + 1);
    let (alpha, beta) = (1.5f32, -0.75f32);
    let c_pitch = (n + 7) / 8 * 8;
    let c_entry = (m + 1) * c_pitch;
    let c_len = (batch * c_entry) as usize;
    let c0 = if cfg.op.beta {
        host::random(cfg.output, c_len, seed + 2).unwrap()
    } else {
        host::poisoned(cfg.output, c_len).unwrap()
    };
    let c_old = host::to_f64(&c0);
    let c_layout =
        TensorLayout::strided(cfg.output, vec![batch, m, n], vec![c_entry, c_pitch, 1], 0).unwrap();
    let mut c = HostTensor::new(c0, c_layout).unwrap();
    let bias = bias_tensor(&cfg, n, seed + 3);
    let c_map = map_arg(c.layout());
    let (tm, tn, order) = tile_order(&cfg, m, n);
    let bind = Bindings::new(&kernel)
        .input_ptr("a", &a, a.layout().shape()[0], &Interp)
        .unwrap()
        .input_ptr("b", &b, b.layout().shape()[0], &Interp)
        .unwrap()
        .tensor_map("am", a_map)
        .unwrap()
        .tensor_map("bm", b_map)
        .unwrap()
        .output("c", &mut c, &Interp)
        .unwrap()
        .int("k", k)
        .unwrap()
        .int("a_batch_step", 1)
        .unwrap()
        .int("b_batch_step", i64::from(!shared_b))
        .unwrap();
    let bind =
        bind_epilogue(bind, &cfg, (c_map, &order, tm * tn), (alpha, beta), (bias.as_ref(), n));
    let grid = launch_grid_batched(&cfg, batch, m, n, sms).unwrap();
    let what = format!("{} batch {batch} {m}x{n}x{k}", cfg.label());
    Interp.launch(&kernel, grid, bind).unwrap_or_else(|e| panic!("{what}: {e}"));
    // f32 inputs run as tf32: wgmma reads the top 19 bits (the low 13 mantissa bits ignored)
    let tf32 = |v: Vec<f64>| -> Vec<f64> {
        if cfg.input != ScalarType::F32 {
            return v;
        }
        v.into_iter().map(|x| f64::from(f32::from_bits((x as f32).to_bits() & !0x1fff))).collect()
    };
    let (av, bv) = (tf32(host::to_f64(&a.buffer())), tf32(host::to_f64(&b.buffer())));
    // element (row, x) of entry e of an operand, through its storage order
    let at = |major, v: &[f64], pitch: usize, entry: usize, e: usize, row: usize, x: usize| {
        v[e * entry
            + match major {
                Major::K => row * pitch + x,
                Major::MN => x * pitch + row,
            }]
    };
    let got = host::to_f64(&c.buffer());
    let biases = bias.map_or(vec![0.0; n as usize], |t| host::to_f64(&t.buffer()));
    let out_eps = if cfg.output == ScalarType::F32 { 0.0 } else { 1.0 / 256.0 };
    let (alpha, beta) = (alpha as f64, beta as f64);
    let (mu, nu, ku, cp, ce) = (m as usize, n as usize, k as usize, c_pitch as usize, c_entry);
    let mut live = 0;
    for e in 0..batch as usize {
        let eb = if shared_b { 0 } else { e };
        for i in 0..mu {
            for (j, &bias_j) in biases.iter().enumerate() {
                let terms = (0..ku).map(|x| {
                    at(cfg.a_major, &av, a_pitch, a_entry, e, i, x)
                        * at(cfg.b_major, &bv, b_pitch, b_entry, eb, j, x)
                });
                let product: f64 = terms.clone().sum();
                let place = e * ce as usize + i * cp + j;
                let old = if cfg.op.beta { c_old[place] } else { 0.0 };
                let want = cfg.op.reference(product, alpha, beta, old, bias_j);
                live += usize::from(want != 0.0);
                let pre = terms.map(f64::abs).sum::<f64>() * alpha.abs().max(1.0)
                    + (beta * old).abs()
                    + bias_j.abs();
                let act = if cfg.op.act == Activation::Gelu { pre * 1e-6 } else { 0.0 };
                let tol = pre * 8.0 * f32::EPSILON as f64 + want.abs() * out_eps + act + 1e-30;
                let g = got[place];
                assert!(
                    (g - want).abs() <= tol,
                    "{what}: C[{e}][{i}][{j}] = {g}, reference {want} (tolerance {tol})"
                );
            }
        }
    }
    assert!(live > (batch * m * n / 4) as usize, "{what}: only {live} nonzero elements");
    // the padding (past each row, the row between entries) is as it was
    for (p, (&g, &o)) in got.iter().zip(&c_old).enumerate() {
        let (r, col) = (p % ce as usize / cp, p % cp);
        if r >= mu || col >= nu {
            assert!(
                g.to_bits() == o.to_bits() || (g.is_nan() && o.is_nan()),
                "{what}: padding element {p} written ({o} → {g})"
            );
        }
    }
}

const LAYOUTS: [(Major, Major); 4] =
    [(Major::K, Major::K), (Major::K, Major::MN), (Major::MN, Major::K), (Major::MN, Major::MN)];

#[test]
fn every_layout_batched_in_one_launch_matches_the_reference_per_entry() {
    // 3 entries of 130 × 72 × 80 (two M-tiles, the second 2 rows; N one slab and 8 columns;
    // K: the second stage 16 deep): one block per tile (grid z = the batch), register stores
    for (a_major, b_major) in LAYOUTS {
        let cfg = GemmConfig { a_major, b_major, bn: 64, stages: 2, ..GemmConfig::default() };
        run(cfg, 3, (130, 72, 80), false, 132);
    }
}

#[test]
fn the_persistent_batched_walk_crosses_entries() {
    // 3 entries × 2 × 3 tiles walked by 4 blocks (a block's tiles span entries; the ring runs
    // on across them), grouped order inside an entry, register and TMA-store epilogues
    let base = GemmConfig {
        bn: 64,
        stages: 3,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(2),
        ..GemmConfig::default()
    };
    run(base, 3, (200, 136, 136), false, 4);
    run(GemmConfig { epilogue: Epilogue::Tma, ..base }, 3, (200, 136, 136), false, 4);
    // MN-major operands, f16 through the C tile, Hilbert order; linear order one block per tile
    let tma = GemmConfig {
        input: ScalarType::F16,
        output: ScalarType::F16,
        a_major: Major::MN,
        b_major: Major::MN,
        epilogue: Epilogue::Tma,
        raster: Raster::Hilbert,
        ..base
    };
    run(tma, 3, (136, 200, 72), false, 5);
    run(
        GemmConfig { persistent: false, raster: Raster::Linear, ..tma },
        3,
        (136, 72, 72),
        false,
        1,
    );
    // grouped order without persistence: grid (batch · tiles, 1, 1)
    run(GemmConfig { persistent: false, ..base }, 3, (130, 72, 72), false, 1);
}

#[test]
fn batched_pairs_of_blocks_share_b_within_each_entry() {
    // 2-block clusters: 3 entries of 3 × 3 tiles (2 × 3 pairs each, the last pair half below
    // C), 2 clusters walking 18 pairs that span entries, register and TMA-store epilogues
    let pair = GemmConfig {
        bn: 64,
        stages: 3,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(1),
        cluster: 2,
        ..GemmConfig::default()
    };
    run(pair, 3, (300, 136, 136), false, 4);
    run(GemmConfig { epilogue: Epilogue::Tma, ..pair }, 3, (300, 136, 72), false, 4);
    // one pair per cluster (no persistence), B MN-major and shared by the entries
    let shared = GemmConfig { persistent: false, b_major: Major::MN, bn: 128, ..pair };
    run(shared, 2, (130, 200, 72), true, 132);
}

#[test]
fn a_shared_operand_is_read_by_every_entry() {
    // B one entry (batch step 0), A three: the per-entry products of a shared weight
    let cfg = GemmConfig { bn: 64, stages: 2, persistent: true, ..GemmConfig::default() };
    run(cfg, 3, (130, 72, 80), true, 2);
    run(
        GemmConfig { b_major: Major::MN, epilogue: Epilogue::Tma, ..cfg },
        3,
        (64, 64, 64),
        true,
        3,
    );
}

#[test]
fn the_batched_epilogue_steps_match_the_reference() {
    // alpha, beta·C (each entry's C read), f32 bias, GELU — both epilogues; f32 output; tf32
    let op = full_op(ScalarType::F32);
    for epilogue in [Epilogue::Registers, Epilogue::Tma] {
        let cfg = GemmConfig {
            bn: 64,
            stages: 2,
            epilogue,
            op,
            persistent: true,
            ..GemmConfig::default()
        };
        run(cfg, 3, (136, 72, 80), false, 3);
        run(GemmConfig { output: ScalarType::F32, ..cfg }, 2, (72, 136, 80), false, 2);
    }
    let tf32 = GemmConfig {
        input: ScalarType::F32,
        output: ScalarType::F32,
        bn: 128,
        stages: 3,
        ..GemmConfig::default()
    };
    run(tf32, 3, (130, 72, 100), false, 132);
}

#[test]
fn a_batched_split_k_and_a_batch_of_the_plain_kernel_are_refused() {
    let cfg =
        GemmConfig { output: ScalarType::F32, split_k: 2, batched: true, ..GemmConfig::default() };
    let e = cfg.check().unwrap_err().to_string();
    assert!(e.contains("split_k = 2") && e.contains("batched"), "{e}");
    let e = launch_grid_batched(&GemmConfig::default(), 3, 64, 64, 132).unwrap_err().to_string();
    assert!(e.contains("batch = 3"), "{e}");
    // one block per tile in linear order: the batch is grid z (at most 65535)
    let lin = GemmConfig { batched: true, ..GemmConfig::default() };
    assert!(launch_grid_batched(&lin, 65536, 64, 64, 132).is_err());
    assert_eq!(launch_grid_batched(&lin, 65535, 64, 64, 132).unwrap(), [1, 1, 65535]);
    // a 2-D map where the kernel has 3-D ones: a typed error at binding
    let kernel = CompiledKernel::new(build_gemm_sm90(lin).unwrap());
    let e = Bindings::<Interp>::new(&kernel)
        .tensor_map("am", TensorMapArg::new(&[64, 128], &[128]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("rank"), "{e}");
}

#[test]
fn the_batched_gemm_assembles_for_sm_90a_without_spills() {
    let api = GemmConfig {
        bn: 256,
        output: ScalarType::F32,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(8),
        batched: true,
        ..GemmConfig::default()
    };
    let all = full_op(ScalarType::F32);
    let configs = LAYOUTS
        .into_iter()
        .flat_map(|(a_major, b_major)| {
            let cfg = GemmConfig { a_major, b_major, ..api };
            [cfg, GemmConfig { bn: 128, output: ScalarType::BF16, epilogue: Epilogue::Tma, ..cfg }]
        })
        .chain([
            GemmConfig { op: all, b_major: Major::MN, ..api },
            GemmConfig { op: all, bn: 128, epilogue: Epilogue::Tma, ..api },
            GemmConfig { batched: true, ..GemmConfig::default() },
            GemmConfig { raster: Raster::Hilbert, ..api },
            // pairs of blocks sharing B (the multicast coordinates carry the entry)
            GemmConfig {
                cluster: 2,
                bn: 256,
                stages: 3,
                epilogue: Epilogue::Tma,
                output: ScalarType::BF16,
                ..api
            },
            // one consumer warpgroup (64-row tiles): the API's register kernel and a TMA store
            GemmConfig { consumers: 1, stages: 5, ..api },
            GemmConfig {
                consumers: 1,
                bn: 128,
                stages: 8,
                epilogue: Epilogue::Tma,
                output: ScalarType::BF16,
                ..api
            },
        ]);
    for cfg in configs {
        let k = build_gemm_sm90(cfg).unwrap();
        let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
        assert!(ptx.contains("cp.async.bulk.tensor.3d"), "{}", cfg.label());
        if let Some(report) =
            tilekit_ptx::ptxas::assemble(&ptx, tilekit_ptx::Target::Sm90a, "gemm_sm90").unwrap()
        {
            assert!(report.contains("0 bytes spill stores"), "{}\n{report}", cfg.label());
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

#[test]
fn one_consumer_batched_walks_match_the_reference_per_entry() {
    // 64-row tiles: 3 entries of 100 × 136 × 136 (2 × 3 tiles of bn 64 each, the second M-tile
    // 36 rows) walked by 4 persistent blocks across entries, both epilogues; one block per tile
    // in linear order (grid (tiles_n, tiles_m, batch)) with A MN-major and B shared
    let base = GemmConfig {
        bn: 64,
        stages: 3,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(2),
        consumers: 1,
        ..GemmConfig::default()
    };
    run(base, 3, (100, 136, 136), false, 4);
    run(GemmConfig { epilogue: Epilogue::Tma, ..base }, 3, (100, 136, 72), false, 4);
    let linear = GemmConfig {
        persistent: false,
        raster: Raster::Linear,
        a_major: Major::MN,
        bn: 128,
        ..base
    };
    run(linear, 2, (72, 200, 80), true, 132);
    // pairs of 64-row blocks sharing B within each entry (3 M-tiles: the last pair half below C)
    let pair = GemmConfig { cluster: 2, raster: Raster::Grouped(1), ..base };
    run(pair, 2, (150, 136, 72), false, 4);
}

#[test]
fn batched_kernels_store_c_in_subtiles_per_entry() {
    // the TMA store in column subtiles (GemmConfig::epilogue_subtile) with the entry as the
    // maps' third coordinate: 3 entries × 2 × 3 tiles of 128 × 112 in subtiles of 32 (three
    // 64-byte boxes and a 32-byte one through `cm_tail`) on 4 persistent blocks; f16 with
    // MN-major operands at bn 128 in subtiles of 16 (eight 32-byte boxes, one map)
    let base = GemmConfig {
        bn: 112,
        stages: 3,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(2),
        epilogue: Epilogue::Tma,
        epilogue_subtile: 32,
        ..GemmConfig::default()
    };
    assert_eq!(GemmConfig { batched: true, ..base }.c_maps(), ["cm", "cm_tail"]);
    run(base, 3, (200, 328, 136), false, 4);
    let mn = GemmConfig {
        input: ScalarType::F16,
        output: ScalarType::F16,
        a_major: Major::MN,
        b_major: Major::MN,
        bn: 128,
        epilogue_subtile: 16,
        ..base
    };
    assert_eq!(GemmConfig { batched: true, ..mn }.c_maps(), ["cm"]);
    run(mn, 3, (264, 200, 72), false, 3);
}

// ptxas assembled this file's kernels, or the summary counts one ignored test (docs/testing.md)
tilekit_ptx::ptxas_sentinel!();
