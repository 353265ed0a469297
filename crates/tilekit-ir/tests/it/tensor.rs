//! Tensor layouts and host tensors against brute force and hand-computed values.

use half::{bf16, f16};
use proptest::prelude::*;
use tilekit_ir::interp::HostBuffer;
use tilekit_ir::tensor::{gather_bytes, HostTensor, TensorError, TensorLayout};
use tilekit_ir::ScalarType;

/// Every index of `shape` in row-major order.
fn indices(shape: &[i64]) -> Vec<Vec<i64>> {
    let mut out = vec![vec![]];
    for &len in shape {
        out = out
            .into_iter()
            .flat_map(|p| (0..len).map(move |i| [p.clone(), vec![i]].concat()))
            .collect();
    }
    out
}

fn brute_offset(l: &TensorLayout, idx: &[i64]) -> i64 {
    l.offset() + idx.iter().zip(l.strides()).map(|(i, s)| i * s).sum::<i64>()
}

#[test]
fn offset_of_and_offsets_match_brute_force() {
    let l = TensorLayout::strided(ScalarType::F32, vec![3, 4, 2], vec![11, 2, 1], 5).unwrap();
    let offs: Vec<i64> = l.offsets().collect();
    let all = indices(l.shape());
    assert_eq!(all.len(), 24);
    for (k, idx) in all.iter().enumerate() {
        assert_eq!(l.offset_of(idx).unwrap(), brute_offset(&l, idx));
        assert_eq!(offs[k], brute_offset(&l, idx));
    }
    assert_eq!(l.span_elems(), 5 + 2 * 11 + 3 * 2 + 1 + 1);
    assert_eq!(l.size_bytes(), 35 * 4);
    assert!(l.fits(35) && !l.fits(34));
}

#[test]
fn contiguous_and_empty_and_scalar() {
    let l = TensorLayout::contiguous(ScalarType::F16, vec![2, 3, 4]).unwrap();
    assert_eq!(
        (l.strides(), l.numel(), l.span_elems(), l.size_bytes()),
        (&[12, 4, 1][..], 24, 24, 48)
    );
    assert!(l.is_contiguous());
    assert_eq!(l.offsets().collect::<Vec<_>>(), (0..24).collect::<Vec<_>>());
    let e = TensorLayout::contiguous(ScalarType::F32, vec![3, 0, 2]).unwrap();
    assert_eq!((e.numel(), e.span_elems(), e.size_bytes()), (0, 0, 0));
    assert!(e.fits(0));
    assert_eq!(e.offsets().count(), 0);
    let s = TensorLayout::strided(ScalarType::F32, vec![], vec![], 7).unwrap();
    assert_eq!((s.rank(), s.numel(), s.span_elems()), (0, 1, 8));
    assert_eq!(s.offset_of(&[]).unwrap(), 7);
    // length-1 dimensions may have any stride and stay contiguous
    assert!(TensorLayout::strided(ScalarType::F32, vec![1, 3], vec![99, 1], 2)
        .unwrap()
        .is_contiguous());
    assert!(!TensorLayout::strided(ScalarType::F32, vec![2, 3], vec![4, 1], 0)
        .unwrap()
        .is_contiguous());
}

#[test]
fn views_permute_narrow_broadcast() {
    let l = TensorLayout::contiguous(ScalarType::I32, vec![2, 3, 4]).unwrap();
    let p = l.permute(&[1, 2, 0]).unwrap();
    assert_eq!((p.shape(), p.strides(), p.span_elems()), (&[3, 4, 2][..], &[4, 1, 12][..], 24));
    let t = l.transpose(0, 2).unwrap();
    assert_eq!((t.shape(), t.strides()), (&[4, 3, 2][..], &[1, 4, 12][..]));
    let n = l.narrow(2, 1, 2).unwrap().narrow(0, 1, 1).unwrap();
    assert_eq!((n.shape(), n.offset(), n.span_elems()), (&[1, 3, 2][..], 13, 13 + 8 + 1 + 1));
    let empty = l.narrow(1, 3, 0).unwrap();
    assert_eq!((empty.numel(), empty.span_elems()), (0, 0));
    let b = TensorLayout::contiguous(ScalarType::I32, vec![3, 1])
        .unwrap()
        .broadcast_to(&[2, 3, 5])
        .unwrap();
    assert_eq!((b.strides(), b.numel(), b.span_elems()), (&[0, 1, 0][..], 30, 3));
}

#[test]
fn host_gathers_match_hand_computed() {
    let data: Vec<i32> = (0..24).collect();
    let t = HostTensor::from_slice(&data, &[2, 3, 4]).unwrap();
    assert_eq!(t.to_vec::<i32>().unwrap(), data);
    // permute [2, 0, 1]: out[k][i][j] = in[i][j][k] = 12i + 4j + k
    let p = t.permute(&[2, 0, 1]).unwrap();
    let mut want = vec![];
    for k in 0..4 {
        for i in 0..2 {
            for j in 0..3 {
                want.push(12 * i + 4 * j + k);
            }
        }
    }
    assert_eq!(p.to_vec::<i32>().unwrap(), want);
    assert_eq!(p.contiguous().unwrap().buffer().to_i32().unwrap(), want);
    // narrow then transpose: rows 1..2 of the last two dims of block 1
    let n = t.narrow(0, 1, 1).unwrap().narrow(2, 1, 2).unwrap().transpose(1, 2).unwrap();
    assert_eq!(n.shape(), &[1, 2, 3]);
    assert_eq!(n.to_vec::<i32>().unwrap(), vec![13, 17, 21, 14, 18, 22]);
    // broadcast a column
    let c = HostTensor::from_slice(&[1.0f32, 2.0], &[2, 1]).unwrap();
    assert_eq!(
        c.broadcast_to(&[2, 2, 3]).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
    );
    // a strided layout over a bigger buffer, half types
    let buf = HostBuffer::from_bf16(&(0..10).map(|x| bf16::from_f32(x as f32)).collect::<Vec<_>>());
    let l = TensorLayout::strided(ScalarType::BF16, vec![2, 2], vec![4, 3], 1).unwrap();
    let h = HostTensor::new(buf, l).unwrap();
    assert_eq!(h.to_vec::<bf16>().unwrap(), [1.0f32, 4.0, 5.0, 8.0].map(bf16::from_f32).to_vec());
    let f = HostTensor::from_slice(&[f16::ONE, f16::ZERO], &[2]).unwrap();
    assert_eq!(f.transpose(0, 0).unwrap().to_vec::<f16>().unwrap(), vec![f16::ONE, f16::ZERO]);
    for (dt, t) in [
        (ScalarType::F64, HostTensor::from_slice(&[1.0f64], &[1]).unwrap()),
        (ScalarType::U32, HostTensor::from_slice(&[1u32], &[1]).unwrap()),
        (ScalarType::I64, HostTensor::from_slice(&[1i64], &[1]).unwrap()),
    ] {
        assert_eq!(t.dtype(), dt);
        assert_eq!(
            HostTensor::zeros(dt, &[3]).unwrap().to_buffer().unwrap(),
            HostBuffer::zeroed(dt, 3)
        );
    }
}

#[test]
fn every_error_names_the_value_and_the_rule() {
    let f = ScalarType::F32;
    let l = TensorLayout::contiguous(f, vec![2, 3]).unwrap();
    let cases: Vec<(TensorError, &str)> = vec![
        (
            TensorLayout::strided(f, vec![2, 3], vec![1], 0).unwrap_err(),
            "strides has rank 1: must equal the tensor's rank 2",
        ),
        (
            TensorLayout::contiguous(f, vec![2, -3]).unwrap_err(),
            "length -3 of dimension 1 is negative: lengths must be >= 0",
        ),
        (
            TensorLayout::strided(f, vec![2], vec![-2], 0).unwrap_err(),
            "stride -2 of dimension 0 is negative: strides must be >= 0",
        ),
        (
            TensorLayout::strided(f, vec![2], vec![1], -1).unwrap_err(),
            "offset -1 is negative: the offset must be >= 0",
        ),
        (
            TensorLayout::contiguous(f, vec![1 << 32, 1 << 32]).unwrap_err(),
            "the element count of shape [4294967296, 4294967296] with strides [4294967296, 1] and offset 0 overflows i64: it must be at most 9223372036854775807",
        ),
        (
            TensorLayout::strided(f, vec![2], vec![i64::MAX], 0).unwrap_err(),
            "the span of shape [2] with strides [9223372036854775807] and offset 0 overflows i64: it must be at most 2305843009213693951",
        ),
        (
            TensorLayout::strided(f, vec![2], vec![1 << 62], 0).unwrap_err(),
            "the byte size of shape [2] with strides [4611686018427387904] and offset 0 overflows i64: it must be at most 2305843009213693951",
        ),
        (
            TensorLayout::contiguous(ScalarType::Pred, vec![1]).unwrap_err(),
            "dtype pred cannot be a tensor element: use i32, u32, i64, f16, bf16, f32 or f64",
        ),
        (
            l.transpose(0, 2).unwrap_err(),
            "dimension 2 is out of range: the tensor has rank 2 (dimensions 0..2)",
        ),
        (
            l.permute(&[1, 1]).unwrap_err(),
            "permutation [1, 1] is invalid: it must name every dimension 0..2 exactly once",
        ),
        (
            l.permute(&[0]).unwrap_err(),
            "permutation has rank 1: must equal the tensor's rank 2",
        ),
        (
            l.narrow(1, 2, 2).unwrap_err(),
            "narrow of dimension 1 at start 2 with length 2 is out of range: start >= 0, len >= 0 and start + len <= 3",
        ),
        (
            l.broadcast_to(&[2, 4]).unwrap_err(),
            "shape [2, 3] cannot be broadcast to [2, 4]: dimension 1 must have length 1 or 4",
        ),
        (l.broadcast_to(&[3]).unwrap_err(), "broadcast shape has rank 1: must equal the tensor's rank 2"),
        (
            l.offset_of(&[1, 3]).unwrap_err(),
            "index 3 of dimension 1 is out of range: it must be in 0..3",
        ),
        (l.offset_of(&[1]).unwrap_err(), "index has rank 1: must equal the tensor's rank 2"),
        (
            l.check_fits(5).unwrap_err(),
            "the layout spans 6 elements but the buffer holds 5: the buffer must hold at least 6",
        ),
        (
            HostTensor::new(HostBuffer::from_i32(&[0; 6]), l.clone()).unwrap_err(),
            "dtype mismatch: the tensor holds f32 but i32 was given or asked for",
        ),
        (
            HostTensor::from_slice(&[0.0f32; 5], &[2, 3]).unwrap_err(),
            "5 elements were given for shape [2, 3]: it needs exactly 6",
        ),
        (
            HostTensor::from_slice(&[0.0f32], &[1])
                .unwrap()
                .broadcast_to(&[1 << 40, 1 << 20])
                .unwrap()
                .to_vec::<f32>()
                .unwrap_err(),
            "a contiguous copy of 1152921504606846976 f32 elements cannot be allocated on the host: the copy must fit in memory",
        ),
    ];
    for (e, want) in cases {
        assert_eq!(e.to_string(), want, "{e:?}");
    }
    assert!(matches!(
        HostTensor::from_slice(&[1i32], &[1]).unwrap().to_vec::<f32>(),
        Err(TensorError::DtypeMismatch { layout: ScalarType::I32, other: ScalarType::F32 })
    ));
    assert!(matches!(
        gather_bytes(&l, &[0u8; 23]),
        Err(TensorError::DoesNotFit { span: 6, buffer_len: 5 })
    ));
}

/// A random layout: rank 0..=4, lengths 0..=4, strides 0..=9, offset 0..=5.
fn layout() -> impl Strategy<Value = TensorLayout> {
    (0usize..=4)
        .prop_flat_map(|r| {
            (prop::collection::vec(0i64..=4, r), prop::collection::vec(0i64..=9, r), 0i64..=5)
        })
        .prop_map(|(shape, strides, offset)| {
            TensorLayout::strided(ScalarType::I32, shape, strides, offset).unwrap()
        })
}

proptest! {
    #[test]
    fn permute_then_inverse_is_identity((l, perm) in layout().prop_flat_map(|l| {
        let r = l.rank();
        (Just(l), Just((0..r).collect::<Vec<_>>()).prop_shuffle())
    })) {
        let p = l.permute(&perm).unwrap();
        let mut inv = vec![0; perm.len()];
        for (d, &q) in perm.iter().enumerate() {
            inv[q] = d;
        }
        prop_assert_eq!(p.permute(&inv).unwrap(), l.clone());
        prop_assert_eq!(p.span_elems(), l.span_elems());
        prop_assert_eq!(p.numel(), l.numel());
        // gather order of the permuted view: p[idx] = l[idx permuted back]
        let buf: Vec<i32> = (0..l.span_elems() as i32).collect();
        let tl = HostTensor::new(HostBuffer::from_i32(&buf), l.clone()).unwrap();
        let tp = tl.permute(&perm).unwrap();
        let got = tp.to_vec::<i32>().unwrap();
        let want: Vec<i32> = indices(p.shape()).iter().map(|idx| {
            let mut orig = vec![0; idx.len()];
            for (d, &q) in perm.iter().enumerate() {
                orig[q] = idx[d];
            }
            buf[l.offset_of(&orig).unwrap() as usize]
        }).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn offsets_span_and_gathers_match_brute_force(l in layout()) {
        let all = indices(l.shape());
        let offs: Vec<i64> = l.offsets().collect();
        prop_assert_eq!(offs.len(), all.len());
        for (k, idx) in all.iter().enumerate() {
            prop_assert_eq!(offs[k], brute_offset(&l, idx));
            prop_assert_eq!(l.offset_of(idx).unwrap(), offs[k]);
        }
        let span = offs.iter().max().map_or(0, |m| m + 1);
        prop_assert_eq!(l.span_elems(), span);
        prop_assert!(l.fits(span as usize));
        prop_assert!(span == 0 || !l.fits(span as usize - 1));
        let buf: Vec<i32> = (0..span as i32).map(|x| x * 3 + 1).collect();
        let t = HostTensor::new(HostBuffer::from_i32(&buf), l.clone()).unwrap();
        let want: Vec<i32> = offs.iter().map(|&o| buf[o as usize]).collect();
        prop_assert_eq!(t.to_vec::<i32>().unwrap(), want.clone());
        let c = t.contiguous().unwrap();
        prop_assert!(c.layout().is_contiguous());
        prop_assert_eq!(c.to_vec::<i32>().unwrap(), want);
        // what the CUDA runtime does: gather the downloaded bytes [offset, span) with the
        // layout rebased to offset 0
        let bytes = HostBuffer::from_i32(&buf);
        let es = 4;
        let rebased = l.with_offset(0).unwrap();
        let lo = if span == 0 { 0 } else { l.offset() as usize * es };
        let direct = gather_bytes(&l, bytes.as_bytes()).unwrap();
        prop_assert_eq!(gather_bytes(&rebased, &bytes.as_bytes()[lo..span as usize * es]).unwrap(), direct);
        // narrowing each dimension to its second half agrees with brute force
        for d in 0..l.rank() {
            let len = l.shape()[d];
            let n = t.narrow(d, len / 2, len - len / 2).unwrap();
            let want: Vec<i32> = indices(n.shape()).iter().map(|idx| {
                let mut orig = idx.clone();
                orig[d] += len / 2;
                buf[l.offset_of(&orig).unwrap() as usize]
            }).collect();
            prop_assert_eq!(n.to_vec::<i32>().unwrap(), want);
        }
    }
}
