//! Tiled Morton swizzle and its inverse: interpreter vs TiledMorton (padding filled with 0).
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
