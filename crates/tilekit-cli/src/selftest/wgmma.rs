//! The wgmma coverage cases of `tilekit selftest` ([`tilekit_ptx::coverage::wgmma`]): one per
//! (f16/bf16, N ∈ {8, 64, 128, 256}, A in shared memory / registers) and tf32. Tensor cores
//! and the interpreter round sums differently, so the GPU is compared with the interpreter and
//! with an f64 CPU reference within f32 accumulation tolerance (not bit for bit).

use tilekit_ir::interp::{self, Args as KArgs};
use tilekit_ptx::coverage::WgmmaCase;

use super::{poison, random_buffer, Case};
use crate::rng::Rng;
use crate::CliError;

/// The wgmma cases, with inputs `a` (64×kt), `b` (n×kt) and a poisoned `d` (64×n f32).
///
/// ```
/// let cases = tilekit_cli::selftest::wgmma::cases(1).unwrap();
/// assert_eq!(cases[0].1.name, "wgmma wgmma_f16_n8_ss");
/// ```
pub fn cases(seed: u64) -> Result<Vec<(WgmmaCase, Case)>, CliError> {
    let mut rng = Rng::new(seed ^ 0x9e37_79b9);
    let mut out = vec![];
    for wc in WgmmaCase::all() {
        let kernel = tilekit_ptx::coverage::wgmma(&wc).map_err(|e| CliError::Check {
            what: "selftest".into(),
            why: format!("the wgmma case {} could not be built: {e}", wc.name()),
        })?;
        let (n, kt) = (wc.n as usize, wc.kt as usize);
        let elem = wc.ty.elem();
        // tf32 inputs representable in tf32 (low 13 mantissa bits clear), so that the tensor
        // cores' conversion of f32 data, whether it truncates or rounds, changes nothing
        let input = |len: usize, rng: &mut Rng| {
            let mut b = random_buffer(elem, len, rng);
            if wc.ty == tilekit_ir::wgmma::WgmmaType::TF32 {
                for i in 0..len {
                    b.set_bits(i, b.bits(i) & !0x1fff);
                }
            }
            b
        };
        let mut args = KArgs::new();
        args.buffer(input(64 * kt, &mut rng))
            .buffer(input(n * kt, &mut rng))
            .buffer(poison(tilekit_ir::ScalarType::F32, 64 * n));
        let reference: super::Reference =
            Box::new(move |input, output| within_reference(&wc, input, output));
        out.push((
            wc,
            Case {
                name: format!("wgmma {}", wc.name()),
                kernel,
                grid: [1, 1, 1],
                args,
                reference: Some(reference),
            },
        ));
    }
    Ok(out)
}

/// D = A·B in f64 from the inputs, and the tolerance of each element: kt · ε(f32) · Σ|a·b|
/// (a bound on f32 accumulation of kt products in any order).
fn reference(wc: &WgmmaCase, input: &KArgs) -> Result<(Vec<f64>, Vec<f64>), String> {
    let (Some(a), Some(b)) = (input.get_buffer(0), input.get_buffer(1)) else {
        return Err("missing input buffers".into());
    };
    let (n, kt) = (wc.n as usize, wc.kt as usize);
    let elem = wc.ty.elem();
    let val = |buf: &tilekit_ir::interp::HostBuffer, i: usize| {
        wc.ty.input(tilekit_ir::eval::to_f64(elem, buf.bits(i)))
    };
    let mut d = vec![0f64; 64 * n];
    let mut tol = vec![0f64; 64 * n];
    for m in 0..64 {
        for j in 0..n {
            let terms: Vec<f64> =
                (0..kt).map(|k| val(a, m * kt + k) * val(b, j * kt + k)).collect();
            d[m * n + j] = terms.iter().sum();
            tol[m * n + j] =
                kt as f64 * f64::from(f32::EPSILON) * terms.iter().map(|t| t.abs()).sum::<f64>()
                    + 1e-30;
        }
    }
    Ok((d, tol))
}

/// Whether `got` is within `tol` of `want` (NaN never is).
fn close(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol
}

fn output(buf: Option<&tilekit_ir::interp::HostBuffer>) -> Result<Vec<f32>, String> {
    buf.and_then(|b| b.to_f32()).ok_or_else(|| "missing the f32 output d".to_string())
}

/// The output `d` against the CPU reference.
///
/// ```
/// use tilekit_cli::selftest::wgmma::{cases, within_reference};
/// let (wc, case) = &cases(2).unwrap()[0];
/// // the poisoned output (NaN) is not within tolerance
/// assert!(within_reference(wc, &case.args, &case.args).unwrap_err().starts_with("D[0][0] = NaN"));
/// ```
pub fn within_reference(wc: &WgmmaCase, input: &KArgs, got: &KArgs) -> Result<(), String> {
    let (want, tol) = reference(wc, input)?;
    let d = output(got.get_buffer(2))?;
    let n = wc.n as usize;
    match (0..want.len()).find(|&i| !close(d[i] as f64, want[i], tol[i])) {
        Some(i) => Err(format!(
            "D[{}][{}] = {}, reference {} (tolerance {:.2e})",
            i / n,
            i % n,
            d[i],
            want[i],
            tol[i]
        )),
        None => Ok(()),
    }
}

/// The GPU's `d` against the interpreter's, within the reference's tolerance.
///
/// ```
/// use tilekit_cli::selftest::wgmma::{cases, interpreter, within_interpreter};
/// let (wc, case) = &cases(3).unwrap()[0];
/// let out = interpreter(wc, case).unwrap();
/// assert!(within_interpreter(wc, &case.args, &out, &out).is_ok());
/// assert!(within_interpreter(wc, &case.args, &out, &case.args).is_err()); // NaN
/// ```
pub fn within_interpreter(
    wc: &WgmmaCase,
    input: &KArgs,
    interp_out: &KArgs,
    gpu_out: &KArgs,
) -> Result<(), String> {
    let (_, tol) = reference(wc, input)?;
    let (i, g) = (output(interp_out.get_buffer(2))?, output(gpu_out.get_buffer(2))?);
    match (0..tol.len()).find(|&k| !close(i[k] as f64, g[k] as f64, tol[k])) {
        Some(k) => Err(format!("element {k}: interpreter {}, GPU {}", i[k], g[k])),
        None => Ok(()),
    }
}

/// Runs one case in the interpreter and checks it against the reference; returns the
/// interpreter's outputs.
///
/// ```
/// use tilekit_cli::selftest::wgmma::{cases, interpreter};
/// let (wc, case) = &cases(4).unwrap()[1];
/// assert!(interpreter(wc, case).is_ok());
/// ```
pub fn interpreter(wc: &WgmmaCase, case: &Case) -> Result<KArgs, String> {
    let mut want = case.args.clone();
    interp::run(&case.kernel, case.grid, &mut want).map_err(|e| format!("interpreter: {e}"))?;
    within_reference(wc, &case.args, &want)
        .map_err(|e| format!("interpreter vs reference: {e}"))?;
    Ok(want)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_wgmma_case_passes_in_the_interpreter() {
        let cases = super::cases(5).unwrap();
        assert_eq!(cases.len(), 18);
        for (wc, case) in &cases {
            super::interpreter(wc, case).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        }
    }

    #[test]
    fn a_wrong_output_fails_the_reference() {
        let cases = super::cases(6).unwrap();
        let (wc, case) = &cases[0];
        let mut out = super::interpreter(wc, case).unwrap();
        let mut d = out.take_buffer(2).unwrap();
        d.set_bits(5, (f32::from_bits(d.bits(5) as u32) + 0.01).to_bits() as u64);
        let mut args = tilekit_ir::interp::Args::new();
        args.buffer(case.args.get_buffer(0).unwrap().clone())
            .buffer(case.args.get_buffer(1).unwrap().clone())
            .buffer(d);
        let e = super::within_reference(wc, &case.args, &args).unwrap_err();
        assert!(e.starts_with("D[0][5]"), "{e}");
    }
}
