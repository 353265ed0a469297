//! Morton encode/decode throughput: portable magic masks vs BMI2 pdep/pext, per call and through
//! the batch methods, and the dispatching (checked) free functions. Each benchmark iteration runs one operation over a batch of `BATCH` random
//! inputs (fixed seed), so ns per call = reported time / `BATCH` (criterion's throughput line
//! shows elements per second directly).
//!
//! Run: `cargo bench -p tilekit-layout --bench morton` (about 1.5 s per benchmark).

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use tilekit_layout::morton::{self, Bmi2, Interleave, Portable};

const BATCH: usize = 4096;

/// xorshift64*: a fixed-seed generator, so every run measures the same inputs.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

struct Inputs {
    pairs: Vec<(u32, u32)>,
    triples: Vec<(u32, u32, u32)>,
    codes2: Vec<u64>,
    codes3: Vec<u64>,
}

fn inputs() -> Inputs {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let low21 = (1u64 << 21) - 1;
    Inputs {
        pairs: (0..BATCH).map(|_| (r.next() as u32, r.next() as u32)).collect(),
        triples: (0..BATCH)
            .map(|_| {
                ((r.next() & low21) as u32, (r.next() & low21) as u32, (r.next() & low21) as u32)
            })
            .collect(),
        codes2: (0..BATCH).map(|_| r.next()).collect(),
        codes3: (0..BATCH).map(|_| r.next() >> 1).collect(),
    }
}

fn bench_path<P: Interleave>(
    g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    p: P,
    inp: &Inputs,
) {
    let name = p.name();
    g.bench_function(format!("encode2/{name}"), |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for &(y, x) in black_box(&inp.pairs) {
                acc ^= p.encode2(y, x);
            }
            acc
        })
    });
    g.bench_function(format!("decode2/{name}"), |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for &c in black_box(&inp.codes2) {
                let (y, x) = p.decode2(c);
                acc ^= y ^ x.rotate_left(7);
            }
            acc
        })
    });
    g.bench_function(format!("encode3/{name}"), |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for &(z, y, x) in black_box(&inp.triples) {
                acc ^= p.encode3(z, y, x);
            }
            acc
        })
    });
    g.bench_function(format!("decode3/{name}"), |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for &c in black_box(&inp.codes3) {
                let (z, y, x) = p.decode3(c);
                acc ^= z ^ y.rotate_left(7) ^ x.rotate_left(14);
            }
            acc
        })
    });
}

/// The same operations through the batch methods: one call per batch.
fn bench_batch<P: Interleave>(g: &mut BenchmarkGroup<'_, WallTime>, p: P, inp: &Inputs) {
    let name = p.name();
    let mut codes = Vec::with_capacity(BATCH);
    let mut pairs = Vec::with_capacity(BATCH);
    let mut triples = Vec::with_capacity(BATCH);
    g.bench_function(format!("encode2_batch/{name}"), |b| {
        b.iter(|| {
            codes.clear();
            p.encode2_batch(black_box(&inp.pairs), &mut codes);
            black_box(&codes);
        })
    });
    g.bench_function(format!("decode2_batch/{name}"), |b| {
        b.iter(|| {
            pairs.clear();
            p.decode2_batch(black_box(&inp.codes2), &mut pairs);
            black_box(&pairs);
        })
    });
    g.bench_function(format!("encode3_batch/{name}"), |b| {
        b.iter(|| {
            codes.clear();
            p.encode3_batch(black_box(&inp.triples), &mut codes);
            black_box(&codes);
        })
    });
    g.bench_function(format!("decode3_batch/{name}"), |b| {
        b.iter(|| {
            triples.clear();
            p.decode3_batch(black_box(&inp.codes3), &mut triples);
            black_box(&triples);
        })
    });
}

fn morton(c: &mut Criterion) {
    let inp = inputs();
    let mut g = c.benchmark_group("morton");
    g.throughput(Throughput::Elements(BATCH as u64));
    bench_path(&mut g, Portable, &inp);
    bench_batch(&mut g, Portable, &inp);
    match Bmi2::detect() {
        Some(b) => {
            bench_path(&mut g, b, &inp);
            bench_batch(&mut g, b, &inp);
        }
        None => eprintln!("note: no BMI2 on this CPU, the bmi2 benchmarks are skipped"),
    }
    // The public free functions: a cached CPU check (OnceLock) then the best path.
    g.bench_function("encode2/dispatch", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for &(y, x) in black_box(&inp.pairs) {
                acc ^= morton::encode2(y, x);
            }
            acc
        })
    });
    g.bench_function("decode2/dispatch", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for &c in black_box(&inp.codes2) {
                let (y, x) = morton::decode2(c);
                acc ^= y ^ x.rotate_left(7);
            }
            acc
        })
    });
    g.bench_function("encode3/dispatch", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for &(z, y, x) in black_box(&inp.triples) {
                acc ^= morton::encode3(z, y, x).unwrap_or(0);
            }
            acc
        })
    });
    g.bench_function("decode3/dispatch", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for &c in black_box(&inp.codes3) {
                let (z, y, x) = morton::decode3(c).unwrap_or((0, 0, 0));
                acc ^= z ^ y.rotate_left(7) ^ x.rotate_left(14);
            }
            acc
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(50);
    targets = morton
}
criterion_main!(benches);
