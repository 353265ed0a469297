//! The example kernels against CPU references on random data (never zeros), outputs poisoned
//! first, shapes that are not multiples of the tile.

use crate::common;

use common::Rng;
use half::f16;
use tilekit_ir::examples::{copy, row_sum};
use tilekit_ir::interp::{run, Args, HostBuffer};
use tilekit_ir::{Lit, ScalarType};

#[test]
fn copy_f32_v4_on_many_lengths_and_grids() {
    let k = copy(ScalarType::F32, 4, 64).unwrap();
    let mut rng = Rng::new(1);
    // tile = 256: below, at, around and well above it, with grids smaller than the tile count
    for (n, grid) in [(1, 1), (3, 2), (255, 1), (256, 1), (257, 1), (1000, 3), (4099, 2)] {
        let x: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
        let mut args = Args::new();
        args.buffer(HostBuffer::from_f32(&x))
            .buffer(HostBuffer::filled(Lit::f32(f32::NAN), n))
            .int(n as i64);
        run(&k, [grid, 1, 1], &mut args).unwrap();
        let y = args.get_buffer(1).unwrap().to_f32().unwrap();
        assert_eq!(
            y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            x.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "n = {n}, grid = {grid}"
        );
    }
}

#[test]
fn copy_f16_v8_and_i64_v2() {
    let mut rng = Rng::new(2);
    let k = copy(ScalarType::F16, 8, 32).unwrap();
    for n in [7usize, 256, 300, 1031] {
        let x: Vec<f16> = (0..n).map(|_| f16::from_f32(rng.f32())).collect();
        let mut args = Args::new();
        args.buffer(HostBuffer::from_f16(&x))
            .buffer(HostBuffer::filled(Lit::float(ScalarType::F16, f64::NAN).unwrap(), n))
            .int(n as i64);
        run(&k, [3, 1, 1], &mut args).unwrap();
        let y = args.get_buffer(1).unwrap().to_f16().unwrap();
        assert_eq!(
            y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            x.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
    let k = copy(ScalarType::I64, 2, 64).unwrap();
    let x: Vec<i64> = (0..333).map(|_| rng.next_u64() as i64).collect();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_i64(&x)).buffer(HostBuffer::from_i64(&[i64::MIN; 333])).int(333);
    run(&k, [2, 1, 1], &mut args).unwrap();
    assert_eq!(args.get_buffer(1).unwrap().to_i64().unwrap(), x);
}

#[test]
fn copy_uses_16_byte_vectors_and_keeps_the_loop() {
    let k = copy(ScalarType::F32, 4, 64).unwrap();
    let text = k.to_string();
    assert!(text.contains("ld.global.v4.f32 x["), "{text}");
    assert!(text.contains("st.global.v4.f32 y["), "{text}");
    assert_eq!(text.matches("for %").count(), 1, "{text}");
    assert_eq!(text.matches("if %").count(), 1 + 8, "{text}"); // the tail path and masked ops
}

fn row_sum_ref(x: &[f32], rows: usize, cols: usize, stride: usize) -> Vec<f64> {
    (0..rows).map(|r| (0..cols).map(|c| x[r * stride + c] as f64).sum()).collect()
}

#[test]
fn row_sum_matches_reference_on_random_shapes() {
    let k = row_sum().unwrap();
    let mut rng = Rng::new(3);
    // cols below a warp, between warps, not a multiple of the block, padded row strides
    for (rows, cols, pad) in
        [(1, 1, 0), (3, 31, 2), (5, 128, 0), (2, 129, 3), (4, 1000, 7), (7, 77, 1)]
    {
        let stride = cols + pad;
        let x: Vec<f32> = (0..rows * stride).map(|_| rng.f32()).collect();
        let mut args = Args::new();
        args.tensor(HostBuffer::from_f32(&x), &[rows as i64, cols as i64], &[stride as i64, 1])
            .tensor(HostBuffer::filled(Lit::f32(f32::NAN), rows), &[rows as i64], &[1]);
        run(&k, [rows as u32, 1, 1], &mut args).unwrap();
        let y = args.get_buffer(5).unwrap().to_f32().unwrap();
        let r = row_sum_ref(&x, rows, cols, stride);
        for (i, (a, b)) in y.iter().zip(&r).enumerate() {
            let tol = 1e-5 * (cols as f64).sqrt() + 1e-6;
            assert!(((*a as f64) - b).abs() <= tol, "rows {rows} cols {cols} row {i}: {a} vs {b}");
        }
    }
}

#[test]
fn row_sum_writes_a_strided_output() {
    // y with stride 2: only the even elements are written, the others keep their sentinel
    let k = row_sum().unwrap();
    let x: Vec<f32> = (0..3 * 40).map(|i| (i % 7) as f32 + 0.5).collect();
    let mut args = Args::new();
    args.tensor(HostBuffer::from_f32(&x), &[3, 40], &[40, 1]).tensor(
        HostBuffer::from_f32(&[-7.0; 6]),
        &[3],
        &[2],
    );
    run(&k, [3, 1, 1], &mut args).unwrap();
    let y = args.get_buffer(5).unwrap().to_f32().unwrap();
    let r = row_sum_ref(&x, 3, 40, 40);
    assert_eq!(y, vec![r[0] as f32, -7.0, r[1] as f32, -7.0, r[2] as f32, -7.0]);
}
