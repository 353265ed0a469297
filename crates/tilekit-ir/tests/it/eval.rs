//! The shared op semantics (folder and interpreter) against hand-computed values.

use tilekit_ir::eval::{canonical_nan, eval_binary, eval_cvt, eval_fma, eval_pair, eval_unary};
use tilekit_ir::{BinOp, Lit, ScalarType, UnOp};

fn i32b(v: i32) -> u64 {
    Lit::int(ScalarType::I32, v as i64).unwrap().bits()
}

#[test]
fn integer_semantics_follow_ptx() {
    use ScalarType::*;
    assert_eq!(eval_binary(BinOp::Rem, I32, i32b(-7), i32b(3)), Ok(i32b(-1)));
    assert_eq!(eval_binary(BinOp::Shr, I32, i32b(-16), 2), Ok(i32b(-4)));
    assert_eq!(eval_binary(BinOp::Shr, I32, i32b(-16), 40), Ok(i32b(-1)));
    assert_eq!(eval_binary(BinOp::Shl, U32, 1, 32), Ok(0));
    assert_eq!(eval_binary(BinOp::Add, I32, i32b(i32::MAX), i32b(1)), Ok(i32b(i32::MIN)));
    assert_eq!(eval_binary(BinOp::Div, U32, 0xffff_fffe, 2), Ok(0x7fff_ffff));
    assert_eq!(eval_binary(BinOp::Min, U32, 0xffff_ffff, 3), Ok(3));
    assert_eq!(eval_unary(UnOp::Not, U32, 0), Ok(0xffff_ffff));
}

#[test]
fn float_semantics_round_once() {
    use ScalarType::*;
    let h = |x: f64| Lit::float(F16, x).unwrap().bits();
    // 1 + 2^-11 is a tie in f16: rounds to even (1.0)
    assert_eq!(eval_binary(BinOp::Add, F16, h(1.0), h(2f64.powi(-11))), Ok(h(1.0)));
    assert_eq!(
        eval_binary(
            BinOp::Mul,
            BF16,
            Lit::float(BF16, 3.0).unwrap().bits(),
            Lit::float(BF16, 0.5).unwrap().bits()
        ),
        Ok(Lit::float(BF16, 1.5).unwrap().bits())
    );
    let f = |x: f32| x.to_bits() as u64;
    // fma rounds once: (1 + 2^-23)(1 - 2^-23) - 1 = -2^-46 exactly
    let a = 1.0 + f32::EPSILON;
    let b = 1.0 - f32::EPSILON;
    assert_eq!(eval_fma(F32, f(a), f(b), f(-1.0)), Ok(f(-(2f32.powi(-46)))));
    assert_eq!(eval_cvt(F32, I32, f(3.99)), 3);
    assert_eq!(eval_cvt(F32, I32, f(1e20)), i32::MAX as u64);
    assert_eq!(eval_cvt(F32, I32, f(f32::NAN)), 0);
    assert_eq!(eval_cvt(I32, F16, i32b(-2)), h(-2.0));
    assert_eq!(eval_unary(UnOp::Exp2Approx, F32, f(3.0)), Ok(f(8.0)));
    assert_eq!(eval_unary(UnOp::RsqrtApprox, F32, f(16.0)), Ok(f(0.25)));
}

#[test]
fn float_max_and_min_propagate_nan_as_ptx_max_nan() {
    use ScalarType::*;
    for ty in [F16, BF16, F32, F64] {
        let v = |x: f64| Lit::float(ty, x).unwrap().bits();
        // a quiet NaN, and a negative NaN with a payload: both give the canonical NaN
        let nans = [v(f64::NAN), v(-f64::NAN) | 1];
        let want = Ok(canonical_nan(ty));
        for op in [BinOp::Max, BinOp::Min] {
            for nan in nans {
                for x in [1.0, -2.0, 0.0, f64::INFINITY, f64::NEG_INFINITY] {
                    assert_eq!(eval_binary(op, ty, nan, v(x)), want, "{ty} {op:?}(NaN, {x})");
                    assert_eq!(eval_binary(op, ty, v(x), nan), want, "{ty} {op:?}({x}, NaN)");
                }
                assert_eq!(eval_binary(op, ty, nan, nan), want, "{ty} {op:?}(NaN, NaN)");
            }
        }
        // numbers as before; −∞ (+∞) is still max's (min's) identity
        assert_eq!(eval_binary(BinOp::Max, ty, v(-2.0), v(1.0)), Ok(v(1.0)));
        assert_eq!(eval_binary(BinOp::Min, ty, v(-2.0), v(1.0)), Ok(v(-2.0)));
        assert_eq!(eval_binary(BinOp::Max, ty, v(f64::NEG_INFINITY), v(-3.0)), Ok(v(-3.0)));
        assert_eq!(eval_binary(BinOp::Min, ty, v(f64::INFINITY), v(-3.0)), Ok(v(-3.0)));
    }
    assert_eq!(canonical_nan(F32), 0x7fff_ffff);
    assert_eq!(canonical_nan(F16), 0x7fff);
    // the packed 16-bit pair lanes: the same rule
    for ty in [F16, BF16] {
        let v = |x: f64| Lit::float(ty, x).unwrap().bits();
        let nan = v(f64::NAN);
        for op in [BinOp::Max, BinOp::Min] {
            assert_eq!(eval_pair(op, ty, nan, v(1.0)), 0x7fff, "{ty} {op:?}");
            assert_eq!(eval_pair(op, ty, v(f64::NEG_INFINITY), nan), 0x7fff, "{ty} {op:?}");
            assert_eq!(eval_pair(op, ty, nan, nan), 0x7fff, "{ty} {op:?}");
        }
        assert_eq!(eval_pair(BinOp::Max, ty, v(-2.0), v(1.0)), v(1.0));
        assert_eq!(eval_pair(BinOp::Min, ty, v(-2.0), v(1.0)), v(-2.0));
    }
    // integers have no NaN: bit patterns that would be NaNs as floats are plain numbers
    assert_eq!(eval_binary(BinOp::Max, U32, 0x7fff_ffff, 0x7fc0_0000), Ok(0x7fff_ffff));
    assert_eq!(eval_binary(BinOp::Max, I32, i32b(-1), i32b(3)), Ok(i32b(3)));
    assert_eq!(eval_binary(BinOp::Min, I64, u64::MAX, 5), Ok(u64::MAX));
}
