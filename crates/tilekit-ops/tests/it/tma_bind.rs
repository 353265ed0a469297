//! A kernel with a TMA tensor map, bound by name and launched through a backend: the map views
//! the tensor bound to its pointer parameter (a view with an offset included), and the result
//! matches a plain CPU copy of each box with the out-of-bounds elements zero.

use tilekit_ir::lit;
use tilekit_ir::tensor::HostTensor;
use tilekit_ir::tma::{OobFill, TensorMapSpec, TmaSwizzle};
use tilekit_ir::{Axis, CmpOp, KernelBuilder, ScalarType};
use tilekit_ops::backend::{Backend, Interp};
use tilekit_ops::bind::{map_arg, Bindings};
use tilekit_ops::compiled::CompiledKernel;

/// Block b loads the 8 × 4 box at (8·b − 4, 1) of x and writes it densely to y[32·b ..].
fn boxes() -> CompiledKernel {
    let b = KernelBuilder::new("boxes", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let spec =
        TensorMapSpec::new(ScalarType::F32, &[8, 4], TmaSwizzle::None, OobFill::Zero).unwrap();
    let xm = b.tensor_map_param("xm", x, spec).unwrap();
    let s = b.shared("s", ScalarType::F32, 32).unwrap();
    let bar = b.mbarrier("bar", 1).unwrap();
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
    b.if_then(&first, |b| {
        b.mbarrier_init(bar, &lit(0), &lit(1))?;
        b.fence_mbarrier_init();
        Ok(())
    })
    .unwrap();
    b.barrier();
    let blk = b.block_id(Axis::X);
    b.if_then(&first, |b| {
        b.mbarrier_arrive(bar, &lit(0), Some(&lit(128)))?;
        b.tensor_load(s, &lit(0), xm, &[blk.clone() * lit(8) - lit(4), lit(1)], bar, &lit(0))
    })
    .unwrap();
    b.mbarrier_wait(bar, &lit(0), &lit(0)).unwrap();
    let v = b.load(s, &tid, 1, None).unwrap();
    b.store(y, &(blk * lit(32) + tid), &v, None).unwrap();
    CompiledKernel::new(b.finish().unwrap())
}

#[test]
fn a_bound_tensor_map_views_the_bound_tensor() {
    let k = boxes();
    // the rows 1..7 of a 7 × 24 buffer (a view starting 24 elements in) hold a 6 × 20 tensor
    // with a pitch of 24 elements: the pointer is bound to the rows, the map to the tensor
    let data: Vec<f32> = (0..24 * 7).map(|i| (i * 37 % 101) as f32 * 0.25 + 1.0).collect();
    let full = HostTensor::from_slice(&data, &[7, 24]).unwrap();
    let rows = full.narrow(0, 1, 6).unwrap();
    let x = rows.narrow(1, 0, 20).unwrap();
    let grid = 3u32;
    let mut y =
        HostTensor::from_slice(&vec![f32::NAN; 32 * grid as usize], &[32 * grid as i64]).unwrap();
    let arg = map_arg(x.layout()).unwrap();
    assert_eq!((arg.dims(), arg.byte_strides()), (&[20u64, 6][..], &[96u64][..]));
    let b = Bindings::new(&k)
        .input_ptr("x", &rows, 6 * 24, &Interp)
        .unwrap()
        .output_ptr("y", &mut y, 32 * grid as i64, &Interp)
        .unwrap()
        .tensor_map("xm", arg)
        .unwrap();
    Interp.launch(&k, [grid, 1, 1], b).unwrap();
    let y = y.to_vec::<f32>().unwrap();
    for blk in 0..grid as i64 {
        for l in 0..32i64 {
            let (col, row) = (blk * 8 - 4 + l % 8, 1 + l / 8);
            let want =
                if (0..20).contains(&col) { data[((row + 1) * 24 + col) as usize] } else { 0.0 };
            assert_eq!(y[(blk * 32 + l) as usize], want, "block {blk} element {l}");
        }
    }
}
