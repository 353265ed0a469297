//! `calculate_offset` in the i64 domain: the Morton 8×8 descriptor (embed, two unmerges, a
//! six-way merge) and a 4-stage descriptor with xor and merge (the GEMM LDS pattern).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tilekit_layout::{Coordinate, TensorDescriptor, Transform};

fn morton_8x8() -> TensorDescriptor<i64> {
    TensorDescriptor::naive(vec![8i64, 8], vec![8, 1], None)
        .unwrap()
        .transform(
            vec![
                Transform::unmerge(vec![2, 2, 2]).unwrap(),
                Transform::unmerge(vec![2, 2, 2]).unwrap(),
            ],
            vec![vec![0], vec![1]],
            vec![vec![0, 2, 4], vec![1, 3, 5]],
        )
        .unwrap()
        .transform(
            vec![Transform::merge(vec![2; 6]).unwrap()],
            vec![(0..6).collect()],
            vec![vec![0]],
        )
        .unwrap()
}

/// CK's GEMM LDS layout with XOR (naive → xor → unmerge → 2 × merge: 4 stages), 32×32 fp16.
fn xor_merge_4stage() -> TensorDescriptor<i64> {
    tilekit_layout::swizzle::xor_lds(32, 32, 8, 2).unwrap()
}

fn bench(c: &mut Criterion) {
    let morton = morton_8x8();
    let mut g = c.benchmark_group("calculate_offset");
    g.throughput(Throughput::Elements(64));
    g.bench_function("morton_8x8/all_64", |b| {
        b.iter(|| {
            let mut acc = 0i64;
            for z in 0..64 {
                acc += morton.calculate_offset(&[black_box(z)]).unwrap();
            }
            acc
        })
    });
    let lds = xor_merge_4stage();
    g.throughput(Throughput::Elements(32 * 32));
    g.bench_function("xor_merge_4stage_32x32/all_1024", |b| {
        b.iter(|| {
            let mut acc = 0i64;
            for i in 0..32 {
                for j in 0..32 {
                    acc += lds.calculate_offset(&[black_box(i), black_box(j)]).unwrap();
                }
            }
            acc
        })
    });
    g.bench_function("xor_merge_4stage_32x32/move_row_1024", |b| {
        b.iter(|| {
            let mut acc = 0i64;
            for i in 0..32 {
                let mut c = Coordinate::new_descriptor(&lds, &[black_box(i), 0]).unwrap();
                acc += c.offset();
                for _ in 1..32 {
                    lds.move_coordinate(&mut c, &[0, 1]).unwrap();
                    acc += c.offset();
                }
            }
            acc
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(std::time::Duration::from_secs(2)).warm_up_time(std::time::Duration::from_millis(500));
    targets = bench
}
criterion_main!(benches);
