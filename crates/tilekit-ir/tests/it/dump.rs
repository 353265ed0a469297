//! The text dump of a kernel with a loop, an if, shared memory, a shuffle and a barrier.

use tilekit_ir::{Axis, BinOp, KernelBuilder, ScalarType, ShflMode, Val};
use tilekit_layout::Idx;

#[test]
fn dump_of_a_small_reduction() {
    let b = KernelBuilder::new("demo", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let n = b.scalar_param("n", ScalarType::I32).unwrap();
    let s = b.shared("buf", ScalarType::F32, 32).unwrap();
    let t = b.thread_id(Axis::X);
    let acc = b
        .for_range(&t, &n, &Val::lit(32), &[b.f32(0.0)], |b, i, acc| {
            let v = b.load(x, &i, 1, None)?;
            Ok(vec![b.binary(BinOp::Add, &acc[0], &v[0])?])
        })
        .unwrap();
    let r = b.shfl(ShflMode::Down, &acc[0], &Val::lit(1)).unwrap();
    b.store(s, &t, &[r], None).unwrap();
    b.barrier();
    let first = t.eq_(&Val::lit(0));
    b.if_then(&first, |b| {
        let v = b.load(s, &Val::lit(4), 4, None)?;
        b.store(x, &Val::lit(0), &v[..1], None)
    })
    .unwrap();
    let k = b.finish().unwrap();
    let expected = "\
kernel @demo(x: ptr<global f32>, n: i32) block [32, 1, 1] {
  shared buf: f32[32]  ; 128 bytes
  %0 = param.i32 n
  %1 = sreg.tid.x.i32  ; 0..=31
  %2 = const.f32 0.0
  %3 = const.i32 32
  %4 = const.i32 1
  %5 = const.i32 0
  %6 = const.i32 4
  %11 = for %7 = %1 to %0 step %3 iter(%8 = %2) : i32 {
    %9 = ld.global.f32 x[%7]
    %10 = add.f32 %8, %9
    yield %10
  }
  %12 = shfl.sync.down.f32 %11, %4
  st.shared.f32 buf[%1], %12
  bar.sync
  %13 = cmp.eq.i32 %1, %5
  if %13 {
    %14, %15, %16, %17 = ld.shared.v4.f32 buf[%6]
    st.global.f32 x[%5], %14
  }
}
";
    assert_eq!(k.to_string(), expected);
}
