//! The API's per-call host work (plan from the layout, kernel-cache lookup, binding with its
//! checks) measured without any driver on the record backend: what `tilekit bench launch`
//! adds to a raw launch. The bound is generous (a debug build on a shared machine); a
//! regression to rebuilding kernels or hashing the IR per call costs milliseconds and fails.

use std::time::Instant;

use tilekit_ir::ScalarType;
use tilekit_ops::api;
use tilekit_ops::backend::{LayoutTensor, Record};
use tilekit_ops::compiled::cached_count;

#[test]
fn api_host_work_per_call_is_microseconds_and_builds_nothing() {
    let rec = Record::new();
    let x = LayoutTensor::contiguous(ScalarType::F32, &[1, 256]).unwrap();
    let mut y = LayoutTensor::contiguous(ScalarType::F32, &[1, 256]).unwrap();
    let s = LayoutTensor::contiguous(ScalarType::BF16, &[64, 1000]).unwrap();
    let mut p = LayoutTensor::contiguous(ScalarType::BF16, &[64, 1000]).unwrap();
    // warm: the kernels are built once
    api::copy_into(&rec, &x, &mut y).unwrap();
    api::softmax_into(&rec, &s, &mut p).unwrap();
    let built = cached_count();
    let first = rec.take();
    assert_eq!(first.len(), 2);
    let calls = 20_000;
    let t = Instant::now();
    for _ in 0..calls {
        api::copy_into(&rec, &x, &mut y).unwrap();
    }
    let copy_us = t.elapsed().as_secs_f64() * 1e6 / calls as f64;
    let t = Instant::now();
    for _ in 0..calls {
        api::softmax_into(&rec, &s, &mut p).unwrap();
    }
    let softmax_us = t.elapsed().as_secs_f64() * 1e6 / calls as f64;
    let launched = rec.take();
    assert_eq!(launched.len(), 2 * calls);
    // every call found the same kernels in the cache: nothing was built again
    assert_eq!(cached_count(), built);
    assert!(launched[..calls].iter().all(|l| l.kernel.id() == first[0].kernel.id()));
    assert!(launched[calls..].iter().all(|l| l.kernel.id() == first[1].kernel.id()));
    println!("api host work per call: copy_into {copy_us:.2} µs, softmax_into {softmax_us:.2} µs");
    assert!(copy_us < 200.0 && softmax_us < 200.0, "{copy_us} µs, {softmax_us} µs per call");
}

#[test]
fn the_empty_kernel_of_bench_launch_builds_and_emits() {
    // `tilekit bench launch` times a raw launch of a kernel with no parameters and no body
    let k = tilekit_ir::KernelBuilder::new("empty", [32, 1, 1]).unwrap().finish().unwrap();
    assert!(k.params.is_empty());
    let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
    assert!(ptx.contains(".visible .entry empty("), "{ptx}");
}
