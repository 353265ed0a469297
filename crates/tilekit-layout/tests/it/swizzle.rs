//! Swizzled layouts: descriptors built from transforms against bit-level references.

use proptest::prelude::*;
use tilekit_layout::swizzle::{morton_tile, HopperSwizzle, TiledMorton};

/// Independent Morton decode: de-interleave z (x at even bits, y at odd bits) while both sides
/// have bits left, then the longer side takes the rest.
fn morton_decode(z: i64, rb: u32, cb: u32) -> (i64, i64) {
    let (mut r, mut c, mut bit) = (0i64, 0i64, 0u32);
    let (mut ri, mut ci) = (0u32, 0u32);
    while ri < rb || ci < cb {
        if ci < cb {
            c |= ((z >> bit) & 1) << ci;
            ci += 1;
            bit += 1;
        }
        if ri < rb {
            r |= ((z >> bit) & 1) << ri;
            ri += 1;
            bit += 1;
        }
    }
    (r, c)
}

#[test]
fn documents_morton_4x4_table() {
    // docs-ck-tile 001: the Z index of each cell of a 4×4 tile
    let d = morton_tile(2, 2).unwrap();
    let mut grid = [[0i64; 4]; 4];
    for z in 0..16 {
        let o = d.calculate_offset(&[z]).unwrap();
        grid[(o / 4) as usize][(o % 4) as usize] = z;
    }
    assert_eq!(grid, [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]]);
}

#[test]
fn morton_tile_equals_bit_decode_for_all_shapes() {
    for rb in 0..5 {
        for cb in 0..5 {
            if rb + cb == 0 {
                continue;
            }
            let d = morton_tile(rb, cb).unwrap();
            for z in 0..(1i64 << (rb + cb)) {
                let (r, c) = morton_decode(z, rb, cb);
                assert_eq!(
                    d.calculate_offset(&[z]).unwrap(),
                    (r << cb) + c,
                    "rb {rb} cb {cb} z {z}"
                );
            }
        }
    }
}

proptest! {
    #[test]
    fn tiled_morton_descriptor_equals_formula_and_round_trips(h in 1i64..40, w in 1i64..40, tb in 0u32..4) {
        let t = TiledMorton::new(h, w, 1 << tb).unwrap();
        let d = t.descriptor().unwrap();
        prop_assert_eq!(d.lengths(), vec![h, w]);
        let mut seen = vec![false; t.storage_len() as usize];
        for r in 0..h {
            for c in 0..w {
                let o = d.calculate_offset(&[r, c]).unwrap();
                prop_assert_eq!(o, t.offset(r, c));
                prop_assert!(!seen[o as usize]);
                seen[o as usize] = true;
            }
        }
        let image: Vec<i64> = (0..h * w).map(|k| 1000 + 7 * k).collect();
        let s = t.swizzle(&image, -1).unwrap();
        prop_assert_eq!(s.iter().filter(|&&v| v == -1).count() as i64, t.storage_len() - h * w);
        prop_assert_eq!(t.unswizzle(&s).unwrap(), image);
    }
}

#[test]
fn hopper_swizzles_equal_the_byte_formula() {
    for mode in [HopperSwizzle::B32, HopperSwizzle::B64, HopperSwizzle::B128] {
        for eb in [1i64, 2, 4, 8, 16] {
            let cols = mode.row_bytes() / eb;
            let rows = 2 * 1024 / mode.row_bytes();
            let d = mode.descriptor(rows, cols, eb).unwrap();
            for r in 0..rows {
                for c in 0..cols {
                    let byte = (r * cols + c) * eb;
                    assert_eq!(
                        d.calculate_offset(&[r, c]).unwrap() * eb,
                        mode.swizzle_byte_offset(byte),
                        "{mode:?} eb {eb} ({r}, {c})"
                    );
                }
            }
        }
    }
}

#[test]
fn hopper_128b_chunk_table() {
    // the first 8 rows of the 128-byte pattern: chunk' = chunk ^ row
    let d = HopperSwizzle::B128.descriptor(8, 64, 2).unwrap();
    let row3: Vec<i64> =
        (0..8).map(|ch| (d.calculate_offset(&[3, ch * 8]).unwrap() - 3 * 64) / 8).collect();
    assert_eq!(row3, [3, 2, 1, 0, 7, 6, 5, 4]);
    let e = HopperSwizzle::B64.descriptor(8, 64, 2).unwrap_err().to_string();
    assert!(e.contains("cols = 64 is invalid"), "{e}");
    let e = HopperSwizzle::B128.descriptor(4, 64, 2).unwrap_err().to_string();
    assert!(e.contains("rows = 4 is invalid: must be a positive multiple of 8"), "{e}");
}

#[test]
fn storage_order_adaptor_inverts_the_tiled_layout() {
    for (h, w, t) in [(16i64, 16i64, 4i64), (5, 7, 4), (9, 3, 2), (8, 8, 8), (3, 5, 1)] {
        let geo = TiledMorton::new(h, w, t).unwrap();
        let a = geo.storage_order_adaptor().unwrap();
        let mut seen = vec![false; geo.storage_len() as usize];
        for tr in 0..geo.tiles_h() {
            for tc in 0..geo.tiles_w() {
                for z in 0..t * t {
                    let rc = a.calculate_bottom_index(&[tr, tc, z]).unwrap();
                    // the brute-force offset of that image element is this storage position
                    let (r, c) = (rc[0], rc[1]);
                    assert!(r < geo.tiles_h() * t && c < geo.tiles_w() * t);
                    let off = geo.offset(r, c);
                    assert_eq!(
                        off,
                        (tr * geo.tiles_w() + tc) * t * t + z,
                        "{h}x{w}/{t}: ({tr},{tc},{z})"
                    );
                    assert!(!seen[off as usize]);
                    seen[off as usize] = true;
                }
            }
        }
    }
}

#[test]
fn swizzle_sizes_past_i64_are_errors() {
    use tilekit_layout::swizzle::xor_lds;
    use tilekit_layout::LayoutError;
    let e = TiledMorton::new(1 << 40, 1 << 40, 4).unwrap_err();
    assert!(matches!(e, LayoutError::Overflow { .. }));
    assert!(TiledMorton::new(i64::MAX, 1, 4).is_err()); // padded up to a whole tile: past i64
    let t = TiledMorton::new(1 << 31, 1 << 31, 4).unwrap();
    assert_eq!(t.storage_len(), 1 << 62);
    assert_eq!(t.offset((1 << 31) - 1, (1 << 31) - 1), (1 << 62) - 1);
    // a row of `cols` elements must be one swizzle row: an overflowing product is just wrong
    assert!(HopperSwizzle::B128.descriptor(8, 1 << 62, 2).is_err());
    assert!(xor_lds(1 << 40, 1 << 40, 8, 2).is_err());
    assert!(xor_lds(32, i64::MAX - 7, 8, 2).is_err());
}
