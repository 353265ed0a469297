//! The mma.sync GEMM: interpreter vs f64 product.
use tilekit_ir::ScalarType;
use tilekit_ops::backend::Interp;
use tilekit_ops::check::{check, Op};

#[test]
fn gemm_matches_the_f64_product() {
    for ty in [ScalarType::F16, ScalarType::BF16] {
        for (i, s) in
            [[64i64, 64, 32], [128, 64, 64], [64, 128, 96], [192, 64, 32], [128, 128, 128]]
                .iter()
                .enumerate()
        {
            let o = check(&Interp, Op::Gemm, s, ty, i as u64).unwrap();
            let c = o.compare();
            assert!(c.passed, "{ty} {s:?}: {c:?}");
            assert!(tilekit_ops::host::to_f64(&o.want).iter().any(|v| v.abs() > 1.0));
            // a real product, not zeros
        }
    }
}

#[test]
fn shapes_off_the_tile_compute_on_the_hopper_kernel() {
    // K = 40 is off the mma.sync kernel's 32-element tile: api::gemm (what `check` calls) takes
    // the Hopper kernel on the interpreter, which computes any shape against the f64 product
    let o = check(&Interp, Op::Gemm, &[64, 64, 40], ScalarType::F16, 1).unwrap();
    assert!(o.compare().passed, "{:?}", o.compare());
}

/// The mma.sync kernel itself (api::gemm sends every layout it takes to the Hopper kernel on
/// an sm_90 backend, the interpreter included, so it is launched directly here): row-major A
/// and B, 128 × 64 × 96, against the f64 product; C poisoned with NaN.
#[test]
fn the_mma_sync_kernel_matches_the_f64_product() {
    use tilekit_ir::tensor::{HostTensor, TensorLayout};
    use tilekit_ops::backend::Backend;
    use tilekit_ops::{bind::Bindings, compiled::CompiledKernel, host};
    for (i, ty) in [ScalarType::F16, ScalarType::BF16].into_iter().enumerate() {
        let (m, n, k) = (128i64, 64i64, 96i64);
        let t = |shape: Vec<i64>, buf| {
            HostTensor::new(buf, TensorLayout::contiguous(ty, shape).unwrap()).unwrap()
        };
        let a = t(vec![m, k], host::random(ty, (m * k) as usize, 200 + i as u64).unwrap());
        let b = t(vec![k, n], host::random(ty, (k * n) as usize, 300 + i as u64).unwrap());
        let mut c = HostTensor::new(
            host::poisoned(ScalarType::F32, (m * n) as usize).unwrap(),
            TensorLayout::contiguous(ScalarType::F32, vec![m, n]).unwrap(),
        )
        .unwrap();
        let kernel = CompiledKernel::new(tilekit_ops::gemm::build(ty).unwrap());
        let (tm, tn, _) = tilekit_ops::gemm::TILE;
        let args = Bindings::new(&kernel)
            .input("a", &a, &Interp)
            .unwrap()
            .input("b", &b, &Interp)
            .unwrap()
            .output("c", &mut c, &Interp)
            .unwrap();
        Interp.launch(&kernel, [(n / tn) as u32, (m / tm) as u32, 1], args).unwrap();
        let want = tilekit_ops::gemm::reference(
            &host::to_f64(&a.buffer()),
            &host::to_f64(&b.buffer()),
            m as usize,
            n as usize,
            k as usize,
        )
        .unwrap();
        let got = host::to_f64(&c.buffer());
        let cmp = host::compare(&got, &want, tilekit_ops::gemm::gemm_tolerance(k));
        assert!(cmp.passed, "{ty}: {cmp:?}");
    }
}
