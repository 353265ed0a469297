//! Helpers shared by the test files of this folder (`mod common;` in each; each file uses some).
#![allow(dead_code)]

use tilekit_ir::interp::HostBuffer;
use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::{Kernel, ScalarType};
use tilekit_ops::api;
use tilekit_ops::backend::{Launch, LayoutTensor, Record, TunedInterp};
use tilekit_ops::host;
use tilekit_ops::reduce::{reference, Reduction};
use tilekit_ops::tuning::Tuning;

/// Element by element against the f64 reference, relative: f32 within 1e-5 of the value, bf16
/// within one ulp (2⁻⁷ of the value); and every row sums to one.
pub fn assert_close_relative(
    got: &HostBuffer,
    want: &HostBuffer,
    n: usize,
    ty: ScalarType,
    what: &str,
) {
    let (g, w) = (host::to_f64(got), host::to_f64(want));
    assert_eq!(g.len(), w.len(), "{what}");
    let rel = if ty == ScalarType::F32 { 1e-5 } else { 1.0 / 128.0 };
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!((a - b).abs() <= rel * b.abs(), "{what}: element {i}: got {a}, want {b}");
    }
    for (r, row) in g.chunks(n).enumerate() {
        let s = row.iter().sum::<f64>();
        let tol = if ty == ScalarType::F32 { 1e-4 } else { 1.0 / 64.0 };
        assert!((s - 1.0).abs() < tol, "{what}: row {r} sums to {s}");
    }
}

/// Random row values (xorshift): uniform in [−6, 6) plus a per-(row, block-sized part) offset
/// of up to ±20, so the blocks of a row see different maxima and must rescale their sums.
pub fn random_rows(m: usize, n: usize, part: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let offsets: Vec<f64> = (0..m * n.div_ceil(part)).map(|_| 40.0 * next() - 20.0).collect();
    (0..m * n)
        .map(|i| {
            let (r, c) = (i / n, i % n);
            12.0 * next() - 6.0 + offsets[r * n.div_ceil(part) + c / part]
        })
        .collect()
}

/// A host tensor of `ty` holding `vals`.
pub fn tensor(ty: ScalarType, vals: &[f64], shape: &[i64]) -> HostTensor {
    let layout = TensorLayout::contiguous(ty, shape.to_vec()).unwrap();
    HostTensor::new(host::from_f64(ty, vals), layout).unwrap()
}

/// What `api::softmax` does with an `m × n` tensor of `ty` under the tuning `t`: the one launch
/// it plans (returned), and its result on the interpreter — [`random_rows`] with a new offset
/// every `part` columns, over a NaN-poisoned output — checked against the f64 reference.
pub fn api_softmax_checked(
    t: Tuning,
    ty: ScalarType,
    (m, n): (i64, i64),
    (part, seed): (usize, u64),
    what: &str,
) -> Launch {
    let rec = Record::with_tuning(t);
    let lx = LayoutTensor::contiguous(ty, &[m, n]).unwrap();
    api::softmax_into(&rec, &lx, &mut lx.clone()).unwrap();
    let mut launched = rec.take();
    assert_eq!(launched.len(), 1, "{what}: one launch");
    let x = tensor(ty, &random_rows(m as usize, n as usize, part, seed), &[m, n]);
    let mut y = tensor(ty, &vec![f64::NAN; (m * n) as usize], &[m, n]);
    api::softmax_into(&TunedInterp(t), &x, &mut y).unwrap();
    let want = reference(Reduction::Softmax, &x.buffer(), m as usize, n as usize, ty).unwrap();
    assert_close_relative(&y.buffer(), &want, n as usize, ty, what);
    launched.remove(0)
}

/// A kernel that may run as a programmatic dependent: it waits on the prior grid, and in its
/// PTX the wait comes before the first global load, the trigger after the last global load and
/// before the first global store.
pub fn assert_pdl_placement(k: &Kernel) {
    assert!(k.waits_on_prior_grid(), "{k}");
    let ptx = tilekit_ptx::emit_kernel(k, tilekit_ptx::Target::Sm90a).unwrap();
    let wait = ptx.find("griddepcontrol.wait;").unwrap();
    let trigger = ptx.find("griddepcontrol.launch_dependents;").unwrap();
    assert!(wait < ptx.find("ld.global").unwrap(), "{}: {ptx}", k.name);
    assert!(ptx.rfind("ld.global").unwrap() < trigger, "{}: {ptx}", k.name);
    assert!(trigger < ptx.find("st.global").unwrap(), "{}: {ptx}", k.name);
}

/// Runs a softmax kernel whose blocks exchange (max, sum) pairs through global memory
/// (`reduce::coop`, `coop_smem`, `ring`) on the interpreter on `blocks` blocks: `m` rows of
/// `n` of `x`, the output and the `2 · m · k` pair slots poisoned with NaN, the counters
/// zeroed. Returns the output and the counters (`ws[0]` the tickets, then one per row).
pub fn run_exchange(
    kern: &Kernel,
    x: &HostBuffer,
    (m, n): (usize, usize),
    ty: ScalarType,
    (k, blocks): (u32, u32),
) -> Result<(HostBuffer, Vec<u32>), tilekit_ir::interp::InterpError> {
    use tilekit_ir::interp::{self, Args};
    let mut a = Args::new();
    let (mi, ni) = (m as i64, n as i64);
    let y = host::poisoned(ty, m * n).unwrap();
    a.tensor(x.clone(), &[mi, ni], &[ni, 1]).tensor(y, &[mi, ni], &[ni, 1]);
    a.buffer(HostBuffer::from_u32(&vec![0; m + 1]));
    a.buffer(HostBuffer::from_f32(&vec![f32::NAN; 2 * m * k as usize]));
    interp::run(kern, [blocks, 1, 1], &mut a)?;
    let ws = a.take_buffer(10).unwrap().to_u32().unwrap();
    Ok((a.take_buffer(5).unwrap(), ws))
}
