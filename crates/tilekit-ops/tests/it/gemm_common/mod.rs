//! Helpers shared by the Hopper GEMM test files (`mod gemm_common;` in each).

use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::tma::TensorMapArg;
use tilekit_ir::wgmma::Major;
use tilekit_ir::{Lit, ScalarType};
use tilekit_ops::backend::{Backend, Interp};
use tilekit_ops::bind::{map_arg, Bindings};
use tilekit_ops::compiled::CompiledKernel;
use tilekit_ops::gemm_sm90::{
    build_gemm_sm90, hilbert_order, launch_grid, Activation, Epilogue, EpilogueOp, GemmConfig,
    Raster,
};
use tilekit_ops::host;

/// Every step of the epilogue op: alpha, beta·C, a bias of type `bias`, GELU.
pub fn full_op(bias: ScalarType) -> EpilogueOp {
    EpilogueOp { alpha: true, beta: true, bias: Some(bias), act: Activation::Gelu }
}

/// The bias the kernel adds (`n` random elements of the op's bias type), if `cfg` has one.
pub fn bias_tensor(cfg: &GemmConfig, n: i64, seed: u64) -> Option<HostTensor> {
    cfg.op.bias.map(|t| {
        HostTensor::new(
            host::random(t, n as usize, seed).unwrap(),
            TensorLayout::contiguous(t, vec![n]).unwrap(),
        )
        .unwrap()
    })
}

/// The Hilbert tile order of an `m × n` C in `cfg`'s tiles: (tiles along M, along N, order).
pub fn tile_order(cfg: &GemmConfig, m: i64, n: i64) -> (i64, i64, HostTensor) {
    let bm = cfg.bm();
    let (tm, tn) = ((m + bm - 1) / bm, (n + cfg.bn - 1) / cfg.bn);
    (tm, tn, HostTensor::from_slice(&hilbert_order(tm, tn), &[tm * tn]).unwrap())
}

/// The GEMM's parameters beyond A, B, C and K, as `cfg` declares them: C's tensor map (TMA-store
/// epilogue; unwrapped only there), the Hilbert tile order (`tiles` entries), `alpha`, `beta` and the bias (`n`
/// elements).
pub fn bind_epilogue<'a>(
    mut bind: Bindings<'a, Interp>,
    cfg: &GemmConfig,
    (c_map, order, tiles): (tilekit_ops::Result<TensorMapArg>, &'a HostTensor, i64),
    (alpha, beta): (f32, f32),
    (bias, n): (Option<&'a HostTensor>, i64),
) -> Bindings<'a, Interp> {
    if cfg.epilogue == Epilogue::Tma {
        let map = c_map.unwrap();
        for name in cfg.c_maps() {
            bind = bind.tensor_map(name, map.clone()).unwrap();
        }
    }
    if cfg.raster == Raster::Hilbert {
        bind = bind.input_ptr("order", order, tiles, &Interp).unwrap();
    }
    if cfg.op.alpha {
        bind = bind.scalar("alpha", Lit::f32(alpha)).unwrap();
    }
    if cfg.op.beta {
        bind = bind.scalar("beta", Lit::f32(beta)).unwrap();
    }
    if let Some(bias) = bias {
        bind = bind.input_ptr("bias", bias, n, &Interp).unwrap();
    }
    bind
}

/// An operand of `mn` rows (M or N) and `k` columns stored K-major (`mn × k`) or MN-major
/// (`k × mn`), random, each stored row padded with NaN to a multiple of 8 elements (16 bytes,
/// TMA's pitch; the map's dims stop before the padding, so a NaN in C means a read past them);
/// with its tensor map and row pitch.
#[allow(dead_code)] // (not every test file runs the plain kernel)
pub fn operand(
    ty: ScalarType,
    major: Major,
    mn: i64,
    k: i64,
    seed: u64,
) -> (HostTensor, TensorMapArg, usize) {
    let (outer, inner) = if major == Major::K { (mn, k) } else { (k, mn) };
    let pitch = (inner + 7) / 8 * 8;
    let r = host::random(ty, (outer * pitch) as usize, seed).unwrap();
    let nan = host::round_bits(ty, f64::NAN);
    let buf =
        host::fill_with(ty, r.len(), |i| if (i as i64 % pitch) < inner { r.bits(i) } else { nan })
            .unwrap();
    let t =
        HostTensor::new(buf, TensorLayout::contiguous(ty, vec![outer, pitch]).unwrap()).unwrap();
    let eb = ty.size_bytes() as u64;
    let map = TensorMapArg::new(&[inner as u64, outer as u64], &[pitch as u64 * eb]);
    (t, map, pitch as usize)
}

#[allow(dead_code)]
pub fn run(cfg: GemmConfig, m: i64, n: i64, k: i64, seed: u64) {
    run_on(cfg, m, n, k, seed, Interp.multiprocessors());
}

/// `sms`: the multiprocessors the launch grid is computed for (fewer than the tiles: each
/// persistent block walks several). The epilogue's `alpha` is 1.5, `beta` −0.75 (C then starts
/// random, otherwise NaN), the bias random.
#[allow(dead_code)]
pub fn run_on(cfg: GemmConfig, m: i64, n: i64, k: i64, seed: u64, sms: u32) {
    let kernel = CompiledKernel::new(build_gemm_sm90(cfg).unwrap());
    let ty = cfg.input;
    let (a, a_map, a_pitch) = operand(ty, cfg.a_major, m, k, seed);
    let (b, b_map, b_pitch) = operand(ty, cfg.b_major, n, k, seed + 1);
    let (alpha, beta) = (1.5f32, -0.75f32);
    let c0 = if cfg.op.beta {
        host::random(cfg.output, (m * n) as usize, seed + 2).unwrap()
    } else {
        host::poisoned(cfg.output, (m * n) as usize).unwrap()
    };
    let c_old = host::to_f64(&c0);
    let mut c =
        HostTensor::new(c0, TensorLayout::contiguous(cfg.output, vec![m, n]).unwrap()).unwrap();
    let bias = bias_tensor(&cfg, n, seed + 3);
    let c_map = map_arg(c.layout());
    let (tm, tn, order) = tile_order(&cfg, m, n);
    let bind = Bindings::new(&kernel)
        .input_ptr("a", &a, a.layout().shape().iter().product(), &Interp)
        .unwrap()
        .input_ptr("b", &b, b.layout().shape().iter().product(), &Interp)
        .unwrap()
        .tensor_map("am", a_map)
        .unwrap()
        .tensor_map("bm", b_map)
        .unwrap()
        .output("c", &mut c, &Interp)
        .unwrap()
        .int("k", k)
        .unwrap();
    let bind =
        bind_epilogue(bind, &cfg, (c_map, &order, tm * tn), (alpha, beta), (bias.as_ref(), n));
    let grid = launch_grid(&cfg, m, n, sms).unwrap();
    Interp.launch(&kernel, grid, bind).unwrap_or_else(|e| panic!("{cfg:?} {m}x{n}x{k}: {e}"));
    let (av, bv) = (host::to_f64(&a.buffer()), host::to_f64(&b.buffer()));
    // f32 inputs run as tf32: wgmma reads the top 19 bits (the low 13 mantissa bits ignored)
    let tf32 = |v: Vec<f64>| -> Vec<f64> {
        if cfg.input != ScalarType::F32 {
            return v;
        }
        v.into_iter().map(|x| f64::from(f32::from_bits((x as f32).to_bits() & !0x1fff))).collect()
    };
    let (av, bv) = (tf32(av), tf32(bv));
    let ku = k as usize;
    // element (row, x) of an operand of row pitch `pitch`, through its storage order
    let at = |major, v: &[f64], pitch: usize, row: usize, x: usize| match major {
        Major::K => v[row * pitch + x],
        Major::MN => v[x * pitch + row],
    };
    let got = host::to_f64(&c.buffer());
    let biases = bias.map_or(vec![0.0; n as usize], |t| host::to_f64(&t.buffer()));
    let out_eps = if cfg.output == ScalarType::F32 { 0.0 } else { 1.0 / 256.0 };
    let (alpha, beta) = (alpha as f64, beta as f64);
    let mut live = 0;
    for i in 0..m as usize {
        for j in 0..n as usize {
            let terms = (0..ku)
                .map(|x| at(cfg.a_major, &av, a_pitch, i, x) * at(cfg.b_major, &bv, b_pitch, j, x));
            let product: f64 = terms.clone().sum();
            // C's old value where it is read (NaN otherwise: must not reach the result)
            let old = if cfg.op.beta { c_old[i * n as usize + j] } else { 0.0 };
            let want = cfg.op.reference(product, alpha, beta, old, biases[j]);
            live += usize::from(want != 0.0);
            // the product's rounding (scaled), f32 steps of the epilogue, the output's rounding;
            // GELU: ex2.approx / rcp.approx (relative 2⁻²⁰ of the pre-activation)
            let pre = terms.map(f64::abs).sum::<f64>() * alpha.abs().max(1.0)
                + (beta * old).abs()
                + biases[j].abs();
            let act = if cfg.op.act == Activation::Gelu { pre * 1e-6 } else { 0.0 };
            let tol = pre * 8.0 * f32::EPSILON as f64 + want.abs() * out_eps + act + 1e-30;
            let g = got[i * n as usize + j];
            assert!(
                (g - want).abs() <= tol,
                "{cfg:?} {m}x{n}x{k}: C[{i}][{j}] = {g}, reference {want} (tolerance {tol})"
            );
        }
    }
    // a real result, not zeros (ReLU keeps about half)
    assert!(live > (m * n / 4) as usize, "{cfg:?}: only {live} nonzero elements");
}

/// Builds `cfg`, emits its sm_90a PTX and, where ptxas is installed, assembles it and asserts
/// no spill stores or loads and no serialized wgmma (C7514: an instruction reading
/// accumulators while a wgmma may still write them); prints the registers line. Returns the
/// PTX and the ptxas report (None without ptxas).
#[allow(dead_code)]
pub fn assemble_clean(cfg: GemmConfig) -> (String, Option<String>) {
    let k = build_gemm_sm90(cfg).unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
    let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
    let report =
        tilekit_ptx::ptxas::assemble(&ptx, tilekit_ptx::Target::Sm90a, "gemm_sm90").unwrap();
    if let Some(report) = &report {
        assert!(report.contains("0 bytes spill stores"), "{}\n{report}", cfg.label());
        assert!(report.contains("0 bytes spill loads"), "{}\n{report}", cfg.label());
        assert!(!report.contains("C7514"), "{}\n{report}", cfg.label());
        let regs: Vec<&str> =
            report.lines().filter(|l| l.contains("registers") || l.contains("spill")).collect();
        eprintln!("{}: {}", cfg.label(), regs.join(" | "));
    }
    (ptx, report)
}
