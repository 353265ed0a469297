//! Matrix descriptors derived from tilekit-layout tiles: every swizzle mode and the interleaved
//! layout, K-major and MN-major, give the layout type, LBO and SBO of the canonical layouts
//! (CUTLASS `make_gmma_desc`), reproduce every element; the hardware address function agrees
//! with tilekit-layout's own definition of the Hopper swizzle; layouts no descriptor expresses
//! are refused by name.

use tilekit_ir::wgmma::{interleaved, DescLayout, Major, MatrixDescriptor, SmemMatrix, WgmmaError};
use tilekit_ir::ScalarType;
use tilekit_layout::swizzle::HopperSwizzle;
use tilekit_layout::TensorDescriptor;

const SWIZZLES: [(HopperSwizzle, DescLayout); 3] = [
    (HopperSwizzle::B32, DescLayout::B32),
    (HopperSwizzle::B64, DescLayout::B64),
    (HopperSwizzle::B128, DescLayout::B128),
];

#[test]
fn k_major_swizzled_tiles_derive_their_mode_and_sbo() {
    for (s, mode) in SWIZZLES {
        for elem in [ScalarType::F16, ScalarType::BF16, ScalarType::F32] {
            let eb = elem.size_bytes() as i64;
            let period = 1024 / s.row_bytes();
            for rows in [period, 2 * period, 256.max(period)] {
                let layout = s.descriptor(rows, s.row_bytes() / eb, eb).unwrap();
                let m = SmemMatrix::from_layout(&layout, Major::K, elem).unwrap();
                assert_eq!((m.layout(), m.lbo(), m.sbo()), (mode, 16, 8 * s.row_bytes() as u32));
                assert_eq!(m.blocks() as i64, s.row_bytes() / 32);
                for blk in 0..m.blocks() {
                    assert!(m.check(0, blk).is_ok() && m.check(4096, blk).is_ok());
                }
            }
        }
    }
}

#[test]
fn mn_major_swizzled_tiles_derive_their_mode_and_offsets() {
    for (s, mode) in SWIZZLES {
        let elem = ScalarType::F16;
        let mn = s.row_bytes() / 2;
        let layout = s.descriptor(32, mn, 2).unwrap(); // top (k, mn): K = 32 rows
        let m = SmemMatrix::from_layout(&layout, Major::MN, elem).unwrap();
        assert_eq!((m.layout(), m.major(), m.mn(), m.k()), (mode, Major::MN, mn as usize, 32));
        // SBO: the next 8 K rows, 8 rows of the swizzle row apart
        assert_eq!(m.sbo(), 8 * s.row_bytes() as u32);
        assert_eq!(m.block_offset(1), 16 * mn as u32);
    }
}

#[test]
fn interleaved_tiles_derive_lbo_and_sbo() {
    for (major, mn, k) in
        [(Major::K, 64, 32), (Major::MN, 64, 32), (Major::K, 256, 16), (Major::MN, 128, 16)]
    {
        let m =
            SmemMatrix::from_layout(&interleaved(major, mn, k, 2).unwrap(), major, ScalarType::F16)
                .unwrap();
        assert_eq!(m.layout(), DescLayout::Interleave);
        let (lbo, sbo) = match major {
            // K-major: the next core matrix along K is 128 bytes on; the next 8 rows k/8 of them
            Major::K => (128, (k / 8 * 128) as u32),
            // MN-major: the next 8 MN elements 128 bytes on; the next 8 K rows mn/8 of them
            Major::MN => ((mn / 8 * 128) as u32, 128),
        };
        assert_eq!((m.lbo(), m.sbo()), (lbo, sbo), "{major} {mn}x{k}");
    }
}

#[test]
fn the_hardware_address_is_tilekit_layouts_swizzle() {
    // K-major, rows W bytes apart, 8-row groups 8W apart: the address of (mn, k) is the Hopper
    // swizzle (as tilekit-layout defines it on byte offsets) of the row-major byte offset
    for (s, mode) in SWIZZLES {
        let w = s.row_bytes();
        let d =
            MatrixDescriptor { start: 0, lbo: 16, sbo: 8 * w as u32, base_offset: 0, layout: mode };
        for mn in 0..64 {
            for k in 0..16 {
                let want = s.swizzle_byte_offset(mn as i64 * w + k as i64 * 2);
                assert_eq!(d.address(Major::K, 2, mn, k) as i64, want, "{mode:?} ({mn}, {k})");
            }
        }
    }
}

#[test]
fn layouts_no_descriptor_expresses_are_refused() {
    // row-major 64×16 f16: rows 32 bytes apart without a swizzle
    let plain = TensorDescriptor::packed(vec![64i64, 16], None).unwrap();
    let e = SmemMatrix::from_layout(&plain, Major::K, ScalarType::F16).unwrap_err();
    assert!(matches!(e, WgmmaError::NotExpressible { mn: 64, k: 16, .. }), "{e}");
    let text = e.to_string();
    for mode in ["128B:", "64B:", "32B:", "interleave:"] {
        assert!(text.contains(mode), "every layout type is reported: {text}");
    }
    // the padded row-major tile of mma.sync kernels (rows of 64 f16 + 8 padding, 144 bytes)
    let padded = TensorDescriptor::naive(vec![64i64, 64], vec![72, 1], None).unwrap();
    assert!(SmemMatrix::from_layout(&padded, Major::K, ScalarType::F16).is_err());
    // (a K-major swizzled tile read as MN-major is the MN-major canonical layout: accepted)
    let sw = HopperSwizzle::B128.descriptor(64, 64, 2).unwrap();
    assert_eq!(
        SmemMatrix::from_layout(&sw, Major::MN, ScalarType::F16).unwrap().layout(),
        DescLayout::B128
    );
    // MN not a multiple of 8
    let odd = TensorDescriptor::packed(vec![12i64, 16], None).unwrap();
    let e = SmemMatrix::from_layout(&odd, Major::K, ScalarType::F16).unwrap_err();
    assert!(e.to_string().contains("MN must be a positive multiple of 8"), "{e}");
}
