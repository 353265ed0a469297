//! Builder misuse gives typed errors naming the offending value and what is valid.

use tilekit_ir::{Axis, BinOp, IrError, KernelBuilder, Lit, ScalarType, ShflMode, Val};
use tilekit_layout::Idx;

#[test]
fn too_much_shared_memory_names_bytes_and_limit() {
    let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
    b.shared("a", ScalarType::F16, 64 * 1024).unwrap(); // 128 KiB
    let e = b.shared("b", ScalarType::F32, 25 * 1024).unwrap_err(); // +100 KiB
    assert_eq!(
        e,
        IrError::SharedMemoryLimit {
            name: "b".into(),
            elem: ScalarType::F32,
            len: 25 * 1024,
            bytes: 102_400,
            total: 233_472,
            limit: 232_448,
            limit_desc: "227 KiB, sm_90".into(),
        }
    );
    // exactly at the limit is fine
    b.shared("c", ScalarType::U32, (232_448 - 131_072) / 4).unwrap();
}

#[test]
fn dtype_mismatch_vector_width_and_wrong_types() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F16).unwrap();
    assert_eq!(
        b.binary(BinOp::Add, &b.f32(1.0), &b.i32(1)).unwrap_err().to_string(),
        "add: operand types differ: f32 and i32 (both operands must have one type)"
    );
    assert_eq!(
        b.load(x, &Val::lit(0), 16, None).unwrap_err().to_string(),
        "ld.global: vector of 16 × f16 is invalid: valid widths for f16 are [1, 2, 4, 8] (powers of two, at most 16 bytes)"
    );
    assert_eq!(
        b.load(x, &b.f32(0.0), 1, None).unwrap_err().to_string(),
        "ld.global offset does not apply to f32: valid types are i32, u32, i64"
    );
    assert!(matches!(
        b.shfl(ShflMode::Idx, &b.konst(Lit::int(ScalarType::I64, 1).unwrap()), &Val::lit(0)),
        Err(IrError::WrongType { ty: ScalarType::I64, .. })
    ));
    assert!(matches!(
        b.binary(BinOp::Shl, &b.f32(1.0), &b.f32(1.0)),
        Err(IrError::WrongType { .. })
    ));
    assert_eq!(
        b.binary(BinOp::Div, &b.i32(4), &b.i32(0)).unwrap_err().to_string(),
        "div.i32 4, 0: division by the constant 0"
    );
    assert!(KernelBuilder::new("k", [32, 33, 1]).is_err());
}

#[test]
fn loop_and_if_yield_errors() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    let n = b.scalar_param("n", ScalarType::I32).unwrap();
    let e = b
        .for_range(&Val::lit(0), &n, &Val::lit(1), &[b.f32(0.0), b.f32(1.0)], |b, _, acc| {
            Ok(vec![acc[0].clone(), b.lane_id()])
        })
        .unwrap_err();
    assert_eq!(
        e,
        IrError::YieldType {
            what: "for body".into(),
            index: 1,
            got: ScalarType::I32,
            expected: ScalarType::F32
        }
    );
    let e = b
        .for_range(&Val::lit(0), &n, &Val::lit(1), &[b.f32(0.0)], |_, _, _| Ok(vec![]))
        .unwrap_err();
    assert_eq!(e.to_string(), "for body yields 0 values, expected 1");
    let p = b.lane_id().lt(&n);
    let e = b.if_then_else(&p, |b| Ok(vec![b.f32(1.0)]), |b| Ok(vec![b.lane_id()])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "else branch yields i32 as value 0, expected f32 (the type of the carried value)"
    );
    // a value from a closed loop body cannot be used outside
    let mut leaked = None;
    b.for_range(&Val::lit(0), &n, &Val::lit(1), &[], |b, i, _| {
        leaked = Some(b.binary(BinOp::Mul, &i, &n)?);
        Ok(vec![])
    })
    .unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let e = b.store(y, &Val::lit(0), &[leaked.unwrap()], None).unwrap_err();
    assert!(matches!(e, IrError::OutOfScope { .. }), "{e}");
}

#[test]
fn constant_conditions_and_empty_loops_fold_away() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    let t = b.thread_id(Axis::X);
    // tid.x < 32 always: only the then branch is emitted, without an if
    let p = t.lt(&Val::lit(32));
    b.if_then_else(
        &p,
        |b| b.store(y, &t, &[Val::lit(1)], None).map(|_| vec![]),
        |b| b.store(y, &t, &[Val::lit(2)], None).map(|_| vec![]),
    )
    .unwrap();
    let r = b
        .for_range(&Val::lit(5), &Val::lit(5), &Val::lit(1), &[b.i32(9)], |b, i, _| {
            Ok(vec![i + b.i32(1)])
        })
        .unwrap();
    assert_eq!(r[0].const_int(), Some(9));
    let k = b.finish().unwrap();
    assert_eq!(
        k.to_string(),
        "kernel @k(y: ptr<global i32>) block [32, 1, 1] {\n  %0 = sreg.tid.x.i32  ; 0..=31\n  %1 = const.i32 1\n  st.global.i32 y[%0], %1\n}\n"
    );
}
