//! Helpers shared by the test files of this folder (`mod common;` in each).

use tilekit_ir::interp::HostBuffer;
use tilekit_ir::ScalarType;
use tilekit_ops::host;

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
