//! Folding, CSE, DCE and renumbering, each against the value it must produce.

use tilekit_ir::{passes::fold::range_binary, Axis, BinOp, KernelBuilder, Op, ScalarType, Val};
use tilekit_layout::Idx;

fn def(k: &tilekit_ir::Kernel, text: &str) -> bool {
    k.to_string().lines().any(|l| l.trim_start().starts_with(text))
}

#[test]
fn folding_rules() {
    let b = KernelBuilder::new("k", [256, 1, 1]).unwrap();
    let t = b.thread_id(Axis::X);
    let n = b.scalar_param("n", ScalarType::I32).unwrap();
    // identities
    assert_eq!((n.clone() + Val::lit(0)).id(), n.id());
    assert_eq!((n.clone() * Val::lit(1)).id(), n.id());
    assert_eq!((n.clone() / Val::lit(1)).id(), n.id());
    assert_eq!((n.clone() * Val::lit(0)).const_int(), Some(0));
    assert_eq!((n.clone() % Val::lit(1)).const_int(), Some(0));
    assert_eq!((n.clone() - n.clone()).const_int(), Some(0));
    assert_eq!((n.clone() ^ n.clone()).const_int(), Some(0));
    // ranges: tid.x in 0..=255
    assert_eq!((t.clone() / Val::lit(256)).const_int(), Some(0));
    assert_eq!((t.clone() % Val::lit(300)).id(), t.id());
    // reassociation
    assert_eq!(((n.clone() + Val::lit(3)) + Val::lit(4)).id(), (n.clone() + Val::lit(7)).id());
    assert_eq!(((n.clone() - Val::lit(3)) + Val::lit(3)).id(), n.id());
    assert_eq!(((t.clone() * Val::lit(8)) / Val::lit(4)).id(), (t.clone() * Val::lit(2)).id());
    assert_eq!(((t.clone() * Val::lit(8)) % Val::lit(4)).const_int(), Some(0));
    assert_eq!(((n.clone() / Val::lit(3)) / Val::lit(5)).id(), (n.clone() / Val::lit(15)).id());
    // strength reduction only where the dividend is known non-negative
    let k_shr = (t.clone() / Val::lit(16)).range();
    assert_eq!(k_shr, Some((0, 15)));
    b.keep(&(t.clone() / Val::lit(16)));
    b.keep(&(n.clone() / Val::lit(16)));
    b.keep(&(n.clone() % Val::lit(16)));
    let k = b.finish().unwrap();
    assert!(def(&k, "%") && k.to_string().contains("shr.i32"));
    assert!(k.to_string().contains("div.i32"), "n may be negative: {k}");
    assert!(k.to_string().contains("rem.i32"), "{k}");
}

#[test]
fn cse_unifies_commuted_and_repeated_expressions_across_scopes() {
    let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    let t = b.thread_id(Axis::X);
    let n = b.scalar_param("n", ScalarType::I32).unwrap();
    let outer = t.clone() * n.clone();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    b.for_range(&Val::lit(0), &n, &Val::lit(1), &[], |b, i, _| {
        // the same product inside the loop is the outer value; new invariant math is hoisted
        assert_eq!((n.clone() * t.clone()).id(), outer.id());
        let inv = t.clone() + n.clone();
        b.store(y, &(inv + i), std::slice::from_ref(&outer), None)?;
        Ok(vec![])
    })
    .unwrap();
    let k = b.finish().unwrap();
    let Op::For { body, .. } = &k.body.insts.last().unwrap().op else { panic!("{k}") };
    // only the add of the induction variable and the store stay in the loop
    assert_eq!(body.insts.len(), 2, "{k}");
}

#[test]
fn dce_removes_unused_pure_code_but_keeps_effects() {
    let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let t = b.thread_id(Axis::X);
    let _unused_load = b.load(x, &t, 1, None).unwrap();
    let _unused_math =
        b.binary(BinOp::Mul, &t, &b.scalar_param("n", ScalarType::I32).unwrap()).unwrap();
    b.barrier();
    let k = b.finish().unwrap();
    assert_eq!(k.instruction_count(), 1, "{k}");
    assert_eq!(k.values.len(), 0);
}

#[test]
fn ranges_of_binary_ops() {
    assert_eq!(range_binary(BinOp::Sub, Some((0, 10)), Some((2, 3))), Some((-3, 8)));
    assert_eq!(range_binary(BinOp::And, Some((-5, 100)), Some((0, 7))), Some((0, 7)));
    assert_eq!(range_binary(BinOp::Xor, Some((0, 5)), Some((0, 9))), Some((0, 15)));
    assert_eq!(range_binary(BinOp::Shr, Some((16, 255)), Some((4, 4))), Some((1, 15)));
    assert_eq!(range_binary(BinOp::Mul, Some((i64::MAX / 2, i64::MAX)), Some((4, 4))), None);
}
