//! Host data: sizes checked before allocating (overflow and the memory limit are named errors),
//! the random inputs equal the sequential generator they replace, streaming comparison.
use half::bf16;
use tilekit_ir::interp::HostBuffer;
use tilekit_ir::ScalarType;
use tilekit_ops::backend::Interp;
use tilekit_ops::check::{check, Op};
use tilekit_ops::host::{self, compare, MEMORY_LIMIT_ENV};
use tilekit_ops::{api, reduce, transpose, OpsError};

/// The generator `host::random` had before it became counter-based: sequential splitmix64.
fn sequential_random_bf16(len: usize, seed: u64) -> Vec<bf16> {
    let mut state = seed ^ 0x005E_ED0F_711E_u64;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let x = ((z >> 11) as f64 / (1u64 << 53) as f64) * 4.0 - 2.0;
            let x = if x.abs() < 1.0 / 64.0 {
                x.signum() * (1.0 / 64.0 + x.abs()) + if x == 0.0 { 0.5 } else { 0.0 }
            } else {
                x
            };
            bf16::from_f64(x)
        })
        .collect()
}

#[test]
fn random_inputs_equal_the_sequential_generator() {
    for seed in [0u64, 1, 11, 0xdead_beef] {
        let b = host::random(ScalarType::BF16, 70_000, seed).unwrap();
        assert_eq!(b.to_bf16().unwrap(), sequential_random_bf16(70_000, seed), "seed {seed}");
    }
}

#[test]
fn overflowing_shapes_are_named_errors_before_any_allocation() {
    let e = host::elements("permute", &[i64::MAX, 2, 1]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "permute: shape = [9223372036854775807, 2, 1] is invalid: the element count overflows i64"
    );
    let e = host::check_shape("permute", &[2147483647, 2147483647, 2147483647], 3).unwrap_err();
    assert!(e.to_string().contains("the element count overflows i64"), "{e}");
    let e = check(&Interp, Op::Copy, &[65536, 65536], ScalarType::F32, 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        // the shape as given, not the kernel's rank-3 view [1, 65536, 65536]
        "copy: shape = [65536, 65536] is invalid: 4294967296 elements, more than 2^31-1"
    );
    // a public entry point given a permutation of the wrong rank: an error, not an index panic
    let x = tilekit_ir::tensor::HostTensor::from_slice(&[1.0f32; 6], &[1, 2, 3]).unwrap();
    let e = api::permute(&Interp, &x, &[1, 0]).unwrap_err();
    assert!(matches!(e, OpsError::Tensor(_) | OpsError::Invalid { .. }), "{e}");
    assert!(host::bytes(ScalarType::F64, u64::MAX / 4).is_err());
    let e = HostBuffer::try_zeroed(ScalarType::F32, usize::MAX / 2).unwrap_err();
    assert!(e.to_string().contains("overflows the address space"), "{e}");
}

#[test]
fn comparison_streams_over_buffers_and_slices() {
    let got = HostBuffer::from_f32(&[1.0, 2.0, 3.0, f32::NAN]);
    let want = HostBuffer::from_f64(&[1.0, 2.5, 3.0, 1.0]);
    let c = compare(&got, &want, 0.0);
    assert_eq!(c.mismatches, 2);
    assert!(c.max_abs.is_nan() && !c.passed);
    assert_eq!(c.max_rel, 0.2);
    let c = compare(&got, &[1.0, 2.0, 3.0], 0.0);
    assert_eq!((c.mismatches, c.passed), (1, false)); // lengths differ
                                                      // many chunks: the merged result equals the serial definition
    let n = 1_000_003;
    let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let b: Vec<f64> =
        (0..n).map(|i| if i % 1000 == 7 { i as f64 + 0.5 } else { i as f64 }).collect();
    let c = compare(&a, &b, 0.0);
    assert_eq!((c.mismatches, c.max_abs), ((0..n).filter(|i| i % 1000 == 7).count(), 0.5));
}

#[test]
fn references_read_the_buffers_in_place() {
    // softmax of one row [0, ln 3] is [1/4, 3/4]
    let x = HostBuffer::from_f64(&[0.0, 3f64.ln()]);
    let s = reduce::reference(reduce::Reduction::Softmax, &x, 1, 2, ScalarType::F32).unwrap();
    assert_eq!(s.to_f32().unwrap(), vec![0.25, 0.75]);
    let x = HostBuffer::from_bf16(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0].map(bf16::from_f32));
    let t = transpose::permute_reference(&x, &[1, 2, 3], &[0, 2, 1]).unwrap();
    assert_eq!(t.to_bf16().unwrap(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0].map(bf16::from_f32).to_vec());
}

/// The only test that sets the limit variable (tests of one binary share the environment).
#[test]
fn the_memory_limit_refuses_a_run_with_the_figures() {
    std::env::set_var(MEMORY_LIMIT_ENV, "1G");
    let e = check(&Interp, Op::Copy, &[1_000_000_000, 2], ScalarType::F32, 1).unwrap_err();
    let state = host::human_bytes(host::interp_state_bytes());
    // x, the reference (a copy of x), y, the interpreter's copies of x and y (y twice)
    assert_eq!(
        e.to_string(),
        format!(
            "copy 1000000000x2 f32: the run needs {} of host memory (inputs 7.5 GiB, reference \
             7.5 GiB, outputs 7.5 GiB, interpreter copies 22.4 GiB, race map 476.8 MiB, process \
             and interpreter state {state}), over the limit of 1.0 GiB \
             (TILEKIT_HOST_MEMORY_LIMIT=1G); set TILEKIT_HOST_MEMORY_LIMIT to a byte count (e.g. \
             32G) to change the limit",
            host::human_bytes(6 * 8_000_000_000 + 500_000_000 + host::interp_state_bytes())
        )
    );
    let softmax = Op::Reduce(reduce::Reduction::Softmax);
    match check(&Interp, softmax, &[65536, 16384], ScalarType::BF16, 1) {
        Err(OpsError::HostMemory { needed, limit, .. }) => {
            // x, y and the reference: 2 GiB each, the interpreter's copies 6 GiB, plus 2 bits
            // per output element and the state
            let state = host::interp_state_bytes();
            assert_eq!((needed, limit), (6 * (2 << 30) + (1 << 28) + state, 1 << 30));
        }
        r => panic!("expected HostMemory, got {r:?}"),
    }
    // the old estimate (inputs, output, reference, race map: 12.3 MB for softmax 1000x1000
    // f32) left out the interpreter's copies; a limit above it and below the peak now refuses
    let peak = tilekit_ops::check::run_bytes(softmax, &[1000, 1000], ScalarType::F32).unwrap();
    let old = 3 * 4_000_000 + host::race_map_bytes(1_000_000);
    assert!(peak.total() >= old + 3 * 4_000_000, "{peak:?}");
    std::env::set_var(MEMORY_LIMIT_ENV, (old + 1).to_string());
    match check(&Interp, softmax, &[1000, 1000], ScalarType::F32, 1) {
        Err(OpsError::HostMemory { needed, limit, .. }) => {
            assert_eq!((needed, limit), (peak.total(), old + 1))
        }
        r => panic!("expected HostMemory, got {r:?}"),
    }
    std::env::set_var(MEMORY_LIMIT_ENV, "1G");
    // under the limit the same kernels run
    assert!(check(&Interp, Op::Copy, &[100, 200], ScalarType::F32, 1).unwrap().compare().passed);
    std::env::set_var(MEMORY_LIMIT_ENV, "a lot");
    let e = check(&Interp, Op::Copy, &[100, 200], ScalarType::F32, 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "host memory limit: TILEKIT_HOST_MEMORY_LIMIT = \"a lot\" is invalid: a byte count, \
         optionally with a K, M, G or T suffix (powers of 1024)"
    );
    std::env::remove_var(MEMORY_LIMIT_ENV);
}
