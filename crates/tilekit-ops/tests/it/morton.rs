//! Tiled Morton swizzle and its inverse: interpreter vs TiledMorton (padding filled with 0).
use tilekit_ir::ScalarType;
use tilekit_ops::backend::Interp;
use tilekit_ops::check::{check, Op};
use tilekit_ops::host::FLOAT_TYPES;

#[test]
fn swizzle_and_unswizzle_match_on_random_shapes() {
    for ty in FLOAT_TYPES {
        for (i, s) in [[1i64, 1], [10, 13], [64, 64], [33, 100], [8, 200]].iter().enumerate() {
            for inverse in [false, true] {
                let c = check(&Interp, Op::Morton { tile: 8, inverse }, s, ty, i as u64)
                    .unwrap()
                    .compare();
                assert!(c.passed && c.max_abs == 0.0, "{ty} {s:?} inverse {inverse}: {c:?}");
            }
        }
    }
}

#[test]
fn other_tile_sizes() {
    for t in [2, 4, 16] {
        let c = check(
            &Interp,
            Op::Morton { tile: t, inverse: false },
            &[37, 45],
            tilekit_ir::ScalarType::F32,
            5,
        )
        .unwrap()
        .compare();
        assert!(c.passed, "t {t}: {c:?}");
    }
}

#[test]
fn storage_order_unswizzle_equals_the_tile_order_one() {
    use tilekit_ir::tensor::{HostTensor, TensorLayout};
    use tilekit_ops::{
        api, backend::Backend, bind::Bindings, compiled::CompiledKernel, host, morton,
    };
    for (ty, h, w, t) in [
        (ScalarType::F32, 37i64, 61i64, 4i64),
        (ScalarType::BF16, 64, 64, 8),
        (ScalarType::F16, 9, 17, 2),
    ] {
        let len = api::morton_len(h, w, t).unwrap();
        let s = HostTensor::new(
            host::random(ty, len as usize, 9).unwrap(),
            TensorLayout::contiguous(ty, vec![len]).unwrap(),
        )
        .unwrap();
        let want = api::unmorton(&Interp, &s, h, w, t).unwrap(); // tile-order kernel
        let k = CompiledKernel::new(morton::build_storage_order_dir(ty, h, w, t, true).unwrap());
        let geo = tilekit_layout::swizzle::TiledMorton::new(h, w, t).unwrap();
        let tpb = morton::tiles_per_block(ty, t);
        let grid = [host::blocks(geo.tiles_w(), tpb).unwrap(), geo.tiles_h() as u32, 1];
        let mut y = Interp.empty(ty, &[h, w]).unwrap();
        let args = Bindings::new(&k)
            .output("image", &mut y, &Interp)
            .unwrap()
            .input_ptr("storage", &s, len, &Interp)
            .unwrap();
        Interp.launch(&k, grid, args).unwrap();
        assert_eq!(y.buffer().as_bytes(), want.buffer().as_bytes(), "{ty} {h}x{w} t {t}");
        // and the reference: element (r, c) of the image is storage[offset(r, c)]
        let sv = host::to_f64(&s.buffer());
        let yv = host::to_f64(&y.buffer());
        for r in 0..h {
            for c in 0..w {
                assert_eq!(
                    yv[(r * w + c) as usize].to_bits(),
                    sv[geo.offset(r, c) as usize].to_bits()
                );
            }
        }
    }
}
