//! The builder ↔ tile layer: generated code for a published distribution, typed misuse errors,
//! the mma fragment distributions against the interpreter's PTX-ISA layout.

use tilekit_ir::interp::warp::{mma_a_coord, mma_b_coord, mma_c_coord};
use tilekit_ir::{Axis, KernelBuilder, ScalarType, Val};
use tilekit_kernel::{dist, DTile, KernelError, View, Window};
use tilekit_layout::{Idx, TensorDescriptor};
use tilekit_tile::encoding::EncodingSpec;
use tilekit_tile::TileDistribution;

/// The design documents' 4×16 row-major fp32 distribution (2×4 threads, 2 rows × 4 columns each).
fn doc_rowmajor_4x16() -> TileDistribution {
    TileDistribution::from_spec(EncodingSpec {
        rs_lengths: vec![],
        hs_lengthss: vec![vec![2, 2], vec![4, 4]],
        ps_to_rhss_major: vec![vec![1], vec![2]],
        ps_to_rhss_minor: vec![vec![0], vec![0]],
        ys_to_rhs_major: vec![1, 2],
        ys_to_rhs_minor: vec![1, 1],
    })
    .unwrap()
}

#[test]
fn window_load_of_a_published_distribution_pins_its_instruction_count() {
    let b = KernelBuilder::new("load", [8, 1, 1]).unwrap();
    let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
    let d = doc_rowmajor_4x16();
    let origin = [b.block_id(Axis::Y) * Val::lit(4), b.block_id(Axis::X) * Val::lit(16)];
    let w = Window::new(&b, &View::global(&x, 4).unwrap(), &[4, 16], &origin, &d).unwrap();
    let t = w.load(&b).unwrap();
    for r in &t.regs {
        b.keep(r);
    }
    let k = b.finish().unwrap();
    let text = k.to_string();
    assert_eq!(text.matches("ld.global.v4.f32").count(), 2, "{text}");
    // tid.x, ctaid.x/y, the stride param, P = (tid / 4, tid % 4), row and column, the two offsets
    assert_eq!(k.instruction_count(), PINNED, "{text}");
}

const PINNED: usize = 19;

#[test]
fn padded_window_masks_its_accesses() {
    let b = KernelBuilder::new("load", [8, 1, 1]).unwrap();
    let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
    let w = Window::new(
        &b,
        &View::global(&x, 4).unwrap().pad(&[4, 16]).unwrap(),
        &[4, 16],
        &[Val::lit(0), Val::lit(0)],
        &doc_rowmajor_4x16(),
    )
    .unwrap();
    assert!(w.walk().iter().all(|a| a.valid.id().is_some()));
    let t = w.load(&b).unwrap();
    assert_eq!(t.regs.len(), 8);
}

#[test]
fn misuse_is_a_typed_error() {
    let b = KernelBuilder::new("k", [8, 1, 1]).unwrap();
    let x = b.tensor_param("x", ScalarType::F32, 2).unwrap();
    let y = b.tensor_param("y", ScalarType::F16, 2).unwrap();
    let d = doc_rowmajor_4x16();
    let o = [Val::lit(0), Val::lit(0)];
    // shape mismatch: window lengths are not the distribution's
    let e = Window::new(&b, &View::global(&x, 4).unwrap(), &[4, 8], &o, &d).unwrap_err();
    assert!(e.to_string().contains("must be the distribution's X lengths [4, 16]"), "{e}");
    // dtype mismatch: an f32 tile stored to an f16 view
    let t =
        Window::new(&b, &View::global(&x, 4).unwrap(), &[4, 16], &o, &d).unwrap().load(&b).unwrap();
    let wy = Window::new(&b, &View::global(&y, 8).unwrap(), &[4, 16], &o, &d).unwrap();
    let e = wy.store(&b, &t).unwrap_err();
    assert_eq!(e.to_string(), "window store: element type f32 does not match f16");
    // a window larger than an unpadded view of known length
    let s = View::shared(
        &b,
        "s",
        ScalarType::F32,
        &TensorDescriptor::packed(vec![4i64, 8], Some(4)).unwrap(),
    )
    .unwrap();
    let e = Window::new(&b, &s, &[4, 16], &o, &d).unwrap_err();
    assert!(matches!(e, KernelError::WindowExceedsView { dim: 1, window: 16, view: 8 }));
    // the same view padded is fine
    assert!(Window::new(&b, &s.pad(&[4, 16]).unwrap(), &[4, 16], &o, &d).is_ok());
    // too much shared memory
    let big = TensorDescriptor::packed(vec![256i64, 256], None).unwrap();
    let e = View::shared(&b, "big", ScalarType::F32, &big).unwrap_err();
    assert!(e.to_string().contains("over the limit"), "{e}");
    // a distribution for more threads than the block has
    let e = Window::new(
        &b,
        &View::global(&x, 4).unwrap(),
        &[8, 32],
        &o,
        &dist::row_major(8, 32, 64, 4).unwrap(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("must divide the block's 8 threads"), "{e}");
    // zip of two distributions
    let u = DTile::splat(&dist::row_major(8, 32, 64, 4).unwrap(), &b.f32(1.0));
    assert!(t.zip_map(&b, &u, |_, p, _| Ok(p.clone())).is_err());
}

#[test]
fn mma_fragment_distributions_match_the_ptx_isa_layout_of_the_interpreter() {
    let (a, bb, c) = (dist::mma_a().unwrap(), dist::mma_b().unwrap(), dist::mma_c().unwrap());
    assert_eq!(
        (a.x_lengths(), bb.x_lengths(), c.x_lengths()),
        (vec![16, 16], vec![16, 8], vec![16, 8])
    );
    for lane in 0..32usize {
        for i in 0..8 {
            let x = a.calculate_x(&[lane as i64], &a.d_to_ys(i as i64)).unwrap();
            let (r, col) = mma_a_coord(lane, i);
            assert_eq!(x, vec![r as i64, col as i64], "A lane {lane} i {i}");
        }
        for i in 0..4 {
            let x = bb.calculate_x(&[lane as i64], &bb.d_to_ys(i as i64)).unwrap();
            let (k, n) = mma_b_coord(lane, i);
            assert_eq!(x, vec![k as i64, n as i64], "B lane {lane} i {i}");
            let x = c.calculate_x(&[lane as i64], &c.d_to_ys(i as i64)).unwrap();
            let (r, col) = mma_c_coord(lane, i);
            assert_eq!(x, vec![r as i64, col as i64], "C lane {lane} i {i}");
        }
    }
    // the PTX ISA's A rule, written out: row = g (+8 for a2, a3, a6, a7), col = 2q + (i & 1) (+8 for i >= 4)
    for lane in 0..32usize {
        let (g, q) = (lane / 4, lane % 4);
        for i in 0..8 {
            let row = g + if matches!(i, 2 | 3 | 6 | 7) { 8 } else { 0 };
            let col = 2 * q + (i & 1) + if i >= 4 { 8 } else { 0 };
            assert_eq!(mma_a_coord(lane, i), (row, col));
        }
    }
}
