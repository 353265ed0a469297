//! Tests of `tilekit_layout::morton`: the design document's tables, the conformance vector,
//! portable vs BMI2 equality (exhaustive for small bit counts, random otherwise), inverses, and
//! the typed errors.

use proptest::prelude::*;
use tilekit_layout::morton::{
    self, decode2, decode2_bits, decode3, decode3_bits, encode2, encode2_bits, encode3,
    encode3_bits, Bmi2, Interleave, Portable,
};
use tilekit_layout::LayoutError;

/// Independent reference: the design document's `morton_encode_2d` loop, one bit at a time.
fn ref_encode2(y: u64, x: u64, bits: u32) -> u64 {
    let mut r = 0;
    for i in 0..bits {
        r |= ((y >> i) & 1) << (2 * i + 1) | ((x >> i) & 1) << (2 * i);
    }
    r
}

/// Independent reference: the document's `morton_decode_2d` loop.
fn ref_decode2(code: u64, bits: u32) -> (u64, u64) {
    let (mut y, mut x) = (0, 0);
    for i in 0..bits {
        y |= ((code >> (2 * i + 1)) & 1) << i;
        x |= ((code >> (2 * i)) & 1) << i;
    }
    (y, x)
}

/// Independent reference for 3-D: x on bit 3i, y on 3i+1, z on 3i+2.
fn ref_encode3(z: u64, y: u64, x: u64, bits: u32) -> u64 {
    let mut r = 0;
    for i in 0..bits {
        r |= ((x >> i) & 1) << (3 * i)
            | ((y >> i) & 1) << (3 * i + 1)
            | ((z >> i) & 1) << (3 * i + 2);
    }
    r
}

fn ref_decode3(code: u64, bits: u32) -> (u64, u64, u64) {
    let (mut z, mut y, mut x) = (0, 0, 0);
    for i in 0..bits {
        x |= ((code >> (3 * i)) & 1) << i;
        y |= ((code >> (3 * i + 1)) & 1) << i;
        z |= ((code >> (3 * i + 2)) & 1) << i;
    }
    (z, y, x)
}

/// The implementations available on this machine (the portable one always; BMI2 when present).
fn impls() -> Vec<Impl> {
    let mut v = vec![Impl::P(Portable)];
    if let Some(b) = Bmi2::detect() {
        v.push(Impl::B(b));
    }
    v
}

#[derive(Clone, Copy)]
enum Impl {
    P(Portable),
    B(Bmi2),
}

impl Impl {
    fn e2(self, y: u32, x: u32) -> u64 {
        match self {
            Impl::P(p) => p.encode2(y, x),
            Impl::B(b) => b.encode2(y, x),
        }
    }
    fn d2(self, c: u64) -> (u32, u32) {
        match self {
            Impl::P(p) => p.decode2(c),
            Impl::B(b) => b.decode2(c),
        }
    }
    fn e3(self, z: u32, y: u32, x: u32) -> u64 {
        match self {
            Impl::P(p) => p.encode3(z, y, x),
            Impl::B(b) => b.encode3(z, y, x),
        }
    }
    fn d3(self, c: u64) -> (u32, u32, u32) {
        match self {
            Impl::P(p) => p.decode3(c),
            Impl::B(b) => b.decode3(c),
        }
    }
}

/// The "Morton Index Layout" of a 4×4 tile printed in docs-ck-tile/001.
const DOC_4X4: [[u64; 4]; 4] = [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]];

#[test]
fn document_4x4_table() {
    for (y, row) in DOC_4X4.iter().enumerate() {
        for (x, &want) in row.iter().enumerate() {
            let (y, x) = (y as u32, x as u32);
            assert_eq!(encode2(y, x), want, "encode2({y}, {x})");
            assert_eq!(encode2_bits(y, x, 2).unwrap(), want);
            assert_eq!(decode2(want), (y, x));
            assert_eq!(decode2_bits(want, 2).unwrap(), (y, x));
            for i in impls() {
                assert_eq!(i.e2(y, x), want);
                assert_eq!(i.d2(want), (y, x));
            }
        }
    }
}

#[test]
fn document_bit_pattern_breakdown() {
    // "(0,2) = (00, 10) → 4 = 0100" etc., the eight lines of the document.
    let lines = [
        ((0, 0), 0b0000),
        ((0, 1), 0b0001),
        ((0, 2), 0b0100),
        ((0, 3), 0b0101),
        ((1, 0), 0b0010),
        ((1, 1), 0b0011),
        ((1, 2), 0b0110),
        ((1, 3), 0b0111),
    ];
    for ((y, x), code) in lines {
        assert_eq!(encode2(y, x), code);
    }
}

#[test]
fn conformance_morton_8x8() {
    // `morton_8x8` in shared/conformance/descriptors.json: the offset (8·row + col) of each z.
    const OFFSETS: [u64; 64] = [
        0, 1, 8, 9, 2, 3, 10, 11, 16, 17, 24, 25, 18, 19, 26, 27, 4, 5, 12, 13, 6, 7, 14, 15, 20,
        21, 28, 29, 22, 23, 30, 31, 32, 33, 40, 41, 34, 35, 42, 43, 48, 49, 56, 57, 50, 51, 58, 59,
        36, 37, 44, 45, 38, 39, 46, 47, 52, 53, 60, 61, 54, 55, 62, 63,
    ];
    for (z, &off) in OFFSETS.iter().enumerate() {
        let (y, x) = decode2_bits(z as u64, 3).unwrap();
        assert_eq!(u64::from(y) * 8 + u64::from(x), off, "z = {z}");
        assert_eq!(encode2_bits(y, x, 3).unwrap(), z as u64);
    }
}

#[test]
fn document_3d_literals() {
    // A 2×2×2 cube: the code is z0 y0 x0.
    let want =
        [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (1, 0, 0), (1, 0, 1), (1, 1, 0), (1, 1, 1)];
    for (code, &(z, y, x)) in want.iter().enumerate() {
        assert_eq!(encode3(z, y, x).unwrap(), code as u64);
        assert_eq!(decode3(code as u64).unwrap(), (z, y, x));
    }
    // x = 2 is bit 3; y = 2 bit 4; z = 2 bit 5.
    assert_eq!(encode3(0, 0, 2).unwrap(), 8);
    assert_eq!(encode3(0, 2, 0).unwrap(), 16);
    assert_eq!(encode3(2, 0, 0).unwrap(), 32);
    // All 21 bits of every coordinate set: the low 63 bits of the code.
    let m = (1 << 21) - 1;
    assert_eq!(encode3(m, m, m).unwrap(), (1 << 63) - 1);
    assert_eq!(decode3((1 << 63) - 1).unwrap(), (m, m, m));
}

#[test]
fn exhaustive_2d_encode_small_bits() {
    // Every (y, x) with up to 6 bits: 4096 pairs, each against the reference loop on every path.
    let impls = impls();
    for bits in 0..=6u32 {
        for y in 0..(1u32 << bits) {
            for x in 0..(1u32 << bits) {
                let want = ref_encode2(y.into(), x.into(), bits);
                assert_eq!(encode2_bits(y, x, bits).unwrap(), want);
                for &i in &impls {
                    assert_eq!(i.e2(y, x), want);
                }
            }
        }
    }
}

#[test]
fn exhaustive_2d_decode_16_bit_codes() {
    // Every code below 2^16 (8 bits per coordinate).
    let impls = impls();
    for code in 0..(1u64 << 16) {
        let (y, x) = ref_decode2(code, 8);
        let want = (y as u32, x as u32);
        assert_eq!(decode2_bits(code, 8).unwrap(), want);
        for &i in &impls {
            assert_eq!(i.d2(code), want);
        }
    }
}

#[test]
fn exhaustive_3d_small_bits() {
    let impls = impls();
    for bits in 0..=4u32 {
        let n = 1u32 << bits;
        for z in 0..n {
            for y in 0..n {
                for x in 0..n {
                    let want = ref_encode3(z.into(), y.into(), x.into(), bits);
                    assert_eq!(encode3_bits(z, y, x, bits).unwrap(), want);
                    for &i in &impls {
                        assert_eq!(i.e3(z, y, x), want);
                    }
                }
            }
        }
    }
    for code in 0..(1u64 << 15) {
        let (z, y, x) = ref_decode3(code, 5);
        let want = (z as u32, y as u32, x as u32);
        assert_eq!(decode3_bits(code, 5).unwrap(), want);
        for &i in &impls {
            assert_eq!(i.d3(code), want);
        }
    }
}

/// Outputs of the four batch methods.
type Batches = (Vec<u64>, Vec<u64>, Vec<(u32, u32)>, Vec<(u32, u32, u32)>);

#[test]
fn batch_methods_equal_per_call() {
    // 1000 inputs from a fixed-seed xorshift; the batch methods must append exactly what
    // per-call encoding gives, on every path (BMI2 runs its own loop).
    let mut s = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let pairs: Vec<(u32, u32)> = (0..1000).map(|_| (next() as u32, next() as u32)).collect();
    let triples: Vec<(u32, u32, u32)> = (0..1000)
        .map(|_| (next() as u32 >> 11, next() as u32 >> 11, next() as u32 >> 11))
        .collect();
    let codes: Vec<u64> = (0..1000).map(|_| next()).collect();
    let want2: Vec<u64> = pairs.iter().map(|&(y, x)| ref_encode2(y.into(), x.into(), 32)).collect();
    let want3: Vec<u64> =
        triples.iter().map(|&(z, y, x)| ref_encode3(z.into(), y.into(), x.into(), 21)).collect();
    let want_d2: Vec<(u32, u32)> =
        codes.iter().map(|&c| ref_decode2(c, 32)).map(|(y, x)| (y as u32, x as u32)).collect();
    let want_d3: Vec<(u32, u32, u32)> = codes
        .iter()
        .map(|&c| ref_decode3(c, 21))
        .map(|(z, y, x)| (z as u32, y as u32, x as u32))
        .collect();
    fn run<P: Interleave>(
        p: P,
        pairs: &[(u32, u32)],
        triples: &[(u32, u32, u32)],
        codes: &[u64],
    ) -> Batches {
        // Start from non-empty vectors: the methods append.
        let (mut e2, mut e3, mut d2, mut d3) = (vec![7], vec![7], vec![(7, 7)], vec![(7, 7, 7)]);
        p.encode2_batch(pairs, &mut e2);
        p.encode3_batch(triples, &mut e3);
        p.decode2_batch(codes, &mut d2);
        p.decode3_batch(codes, &mut d3);
        (e2[1..].to_vec(), e3[1..].to_vec(), d2[1..].to_vec(), d3[1..].to_vec())
    }
    let mut results = vec![run(Portable, &pairs, &triples, &codes)];
    if let Some(b) = Bmi2::detect() {
        results.push(run(b, &pairs, &triples, &codes));
    }
    for (e2, e3, d2, d3) in results {
        assert_eq!(e2, want2);
        assert_eq!(e3, want3);
        assert_eq!(d2, want_d2);
        assert_eq!(d3, want_d3);
    }
}

#[test]
fn bmi2_detection_matches_the_cpu() {
    #[cfg(target_arch = "x86_64")]
    assert_eq!(Bmi2::detect().is_some(), std::arch::is_x86_feature_detected!("bmi2"));
    #[cfg(not(target_arch = "x86_64"))]
    assert_eq!(Bmi2::detect(), None);
    if Bmi2::detect().is_none() {
        eprintln!("note: this CPU has no BMI2; only the portable path was tested");
    }
}

#[test]
fn raw_3d_paths_agree_on_out_of_range_input() {
    // The unchecked trait methods keep the low 21 bits and ignore bit 63 on every path.
    let impls = impls();
    for &i in &impls {
        // z = 2^21 drops to 0; x = 2^21 | 0b101 keeps 0b101 -> x0 on bit 0, x2 on bit 6.
        assert_eq!(i.e3(1 << 21, 0, (1 << 21) | 5), 65);
        assert_eq!(i.d3(1 << 63 | 0b111), (1, 1, 1));
        assert_eq!(i.e3(u32::MAX, u32::MAX, u32::MAX), (1 << 63) - 1);
    }
}

fn invalid(e: LayoutError) -> (String, String, String, String) {
    match e {
        LayoutError::InvalidParameter { context, field, value, rule } => {
            (context, field, value, rule)
        }
        other => panic!("expected InvalidParameter, got {other:?}"),
    }
}

#[test]
fn errors_name_the_value_and_the_valid_range() {
    let (c, f, v, r) = invalid(encode2_bits(0, 1 << 16, 16).unwrap_err());
    assert_eq!((c.as_str(), f.as_str(), v.as_str()), ("morton encode2_bits", "x", "65536"));
    assert_eq!(r, "with 16 bits per coordinate it must be in 0..=65535");

    let (_, f, v, _) = invalid(encode2_bits(4, 0, 2).unwrap_err());
    assert_eq!((f.as_str(), v.as_str()), ("y", "4"));

    assert_eq!(
        encode2_bits(0, 0, 33).unwrap_err().to_string(),
        "morton encode2_bits: bits = 33 is invalid: a 2-D code holds at most 32 bits per coordinate, so bits must be in 0..=32"
    );
    assert_eq!(
        encode2_bits(1, 0, 0).unwrap_err().to_string(),
        "morton encode2_bits: y = 1 is invalid: with 0 bits per coordinate it must be in 0..=0"
    );
    assert_eq!(encode2_bits(0, 0, 0).unwrap(), 0);
    assert_eq!(encode2_bits(u32::MAX, u32::MAX, 32).unwrap(), u64::MAX);
    assert_eq!(decode2_bits(u64::MAX, 32).unwrap(), (u32::MAX, u32::MAX));

    assert_eq!(
        decode2_bits(1 << 20, 10).unwrap_err().to_string(),
        "morton decode2_bits: code = 1048576 is invalid: with 10 bits per coordinate the code has 20 bits, so it must be in 0..=1048575"
    );

    assert_eq!(
        encode3(1 << 21, 0, 0).unwrap_err().to_string(),
        "morton encode3: z = 2097152 is invalid: with 21 bits per coordinate it must be in 0..=2097151"
    );
    assert_eq!(
        encode3(0, 0, u32::MAX).unwrap_err().to_string(),
        "morton encode3: x = 4294967295 is invalid: with 21 bits per coordinate it must be in 0..=2097151"
    );
    assert_eq!(
        decode3(1 << 63).unwrap_err().to_string(),
        "morton decode3: code = 9223372036854775808 is invalid: with 21 bits per coordinate the code has 63 bits, so it must be in 0..=9223372036854775807"
    );
    let (c, f, v, _) = invalid(encode3_bits(0, 0, 0, 22).unwrap_err());
    assert_eq!((c.as_str(), f.as_str(), v.as_str()), ("morton encode3_bits", "bits", "22"));
    let (c, f, _, _) = invalid(decode3_bits(8, 1).unwrap_err());
    assert_eq!((c.as_str(), f.as_str()), ("morton decode3_bits", "code"));
    assert!(decode3_bits(7, 1).is_ok());
}

#[test]
fn constants() {
    assert_eq!(morton::MAX_BITS_2D, 32);
    assert_eq!(morton::MAX_BITS_3D, 21);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn prop_2d_paths_equal_reference(y: u32, x: u32) {
        let want = ref_encode2(y.into(), x.into(), 32);
        prop_assert_eq!(encode2(y, x), want);
        for i in impls() {
            prop_assert_eq!(i.e2(y, x), want);
            prop_assert_eq!(i.d2(want), (y, x));
        }
    }

    #[test]
    fn prop_2d_decode_then_encode(code: u64) {
        let (y, x) = decode2(code);
        let (ry, rx) = ref_decode2(code, 32);
        prop_assert_eq!((u64::from(y), u64::from(x)), (ry, rx));
        prop_assert_eq!(encode2(y, x), code);
        for i in impls() {
            prop_assert_eq!(i.d2(code), (y, x));
        }
    }

    #[test]
    fn prop_3d_paths_equal_reference(z in 0u32..(1 << 21), y in 0u32..(1 << 21), x in 0u32..(1 << 21)) {
        let want = ref_encode3(z.into(), y.into(), x.into(), 21);
        prop_assert_eq!(encode3(z, y, x).unwrap(), want);
        prop_assert_eq!(decode3(want).unwrap(), (z, y, x));
        for i in impls() {
            prop_assert_eq!(i.e3(z, y, x), want);
            prop_assert_eq!(i.d3(want), (z, y, x));
        }
    }

    #[test]
    fn prop_3d_decode_then_encode(code in 0u64..(1 << 63)) {
        let (z, y, x) = decode3(code).unwrap();
        let (rz, ry, rx) = ref_decode3(code, 21);
        prop_assert_eq!((u64::from(z), u64::from(y), u64::from(x)), (rz, ry, rx));
        prop_assert_eq!(encode3(z, y, x).unwrap(), code);
    }

    #[test]
    fn prop_bits_variants_accept_exactly_the_range(bits in 0u32..=32, y: u32, x: u32) {
        let fits = |v: u32| bits == 32 || u64::from(v) < (1u64 << bits);
        let r = encode2_bits(y, x, bits);
        prop_assert_eq!(r.is_ok(), fits(y) && fits(x));
        if let Ok(code) = r {
            prop_assert!(bits == 32 || code < (1u64 << (2 * bits)));
            prop_assert_eq!(decode2_bits(code, bits).unwrap(), (y, x));
        }
    }

    #[test]
    fn prop_3d_bits_variants_accept_exactly_the_range(bits in 0u32..=21, z in 0u32..(1 << 22), y in 0u32..(1 << 22), x in 0u32..(1 << 22)) {
        let fits = |v: u32| u64::from(v) < (1u64 << bits);
        let r = encode3_bits(z, y, x, bits);
        prop_assert_eq!(r.is_ok(), fits(z) && fits(y) && fits(x));
        if let Ok(code) = r {
            prop_assert!(code < (1u64 << (3 * bits)));
            prop_assert_eq!(decode3_bits(code, bits).unwrap(), (z, y, x));
        }
    }
}
