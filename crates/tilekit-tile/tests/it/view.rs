//! Buffer and tensor views: per-vector validity, custom invalid values, the global range check,
//! no-range-check spaces on the host, updates, padding.

use proptest::prelude::*;
use tilekit_tile::view::{
    make_naive_tensor_view, make_naive_tensor_view_with_guarantee, pad_tensor_view, AddressSpace,
    BufferView, MemoryOp,
};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// On a padded row-major view every vector read equals the model: all lanes = the invalid
    /// value when the first element is in the pad, else the buffer contents (0 past its end).
    #[test]
    fn padded_reads_follow_the_per_vector_model(
        rows in 1i64..6, cols in 1i64..9, tr in 1i64..5, tc in 1i64..5, n in 1usize..5, custom in any::<bool>()
    ) {
        let data: Vec<i32> = (1..=rows * cols).map(|v| v as i32).collect();
        let mut v = make_naive_tensor_view(&data[..], &[rows, cols], &[cols, 1]).unwrap();
        if custom { v = v.with_invalid_value(-5); }
        let v = pad_tensor_view(v, &[tr, tc], &[true, true]).unwrap();
        let invalid = if custom { -5 } else { 0 };
        let lens = v.lengths();
        for i in 0..lens[0] {
            for j in 0..lens[1] {
                let got = v.get_vectorized_elements(&v.coordinate(&[i, j]).unwrap(), n).unwrap();
                let want: Vec<i32> = if i < rows && j < cols {
                    (0..n as i64).map(|k| {
                        let o = i * cols + j + k;
                        if o < rows * cols { data[o as usize] } else { 0 }
                    }).collect()
                } else {
                    vec![invalid; n]
                };
                prop_assert_eq!(got, want, "({}, {})", i, j);
            }
        }
    }
}

#[test]
fn shared_and_generic_spaces_have_no_range_check_but_never_panic() {
    let data = [1i32, 2, 3, 4];
    for space in [AddressSpace::Shared, AddressSpace::Generic] {
        let v = make_naive_tensor_view(&data[..], &[4], &[1]).unwrap().with_address_space(space);
        let c = v.coordinate(&[3]).unwrap();
        assert_eq!(v.get_vectorized_elements(&c, 1).unwrap(), vec![4]);
        let e = v.get_vectorized_elements(&c, 2).unwrap_err().to_string();
        assert!(e.contains("has no range check"), "{e}");
        // the index is not range-checked either: 5 maps to offset 5, outside the storage
        assert!(v.get_vectorized_elements(&v.coordinate(&[5]).unwrap(), 1).is_err());
    }
    // global: the hardware range masks it
    let v = make_naive_tensor_view(&data[..], &[4], &[1]).unwrap();
    assert_eq!(v.get_vectorized_elements(&v.coordinate(&[5]).unwrap(), 1).unwrap(), vec![0]);
    assert_eq!(v.get_vectorized_elements(&v.coordinate(&[-1]).unwrap(), 2).unwrap(), vec![0, 1]);
}

#[test]
fn failed_plain_writes_write_nothing() {
    let mut data = vec![0i32; 4];
    let mut v = make_naive_tensor_view(&mut data[..], &[4], &[1])
        .unwrap()
        .with_address_space(AddressSpace::Shared);
    let c = v.coordinate(&[2]).unwrap();
    assert!(v.set_vectorized_elements(&c, &[7, 8, 9]).is_err());
    v.update_vectorized_elements(&c, &[7, 8], MemoryOp::Add).unwrap();
    assert_eq!(data, [0, 0, 7, 8]);
}

#[test]
fn global_custom_value_applies_to_invalid_vectors_only() {
    // out-of-buffer lanes of a valid vector read 0 (hardware), invalid vectors read the custom value
    let data = [1f32, 2.0, 3.0];
    let b = BufferView::new(&data[..], AddressSpace::Global, 3).unwrap().with_invalid_value(9.0);
    assert_eq!(b.get(2, true, 2).unwrap(), vec![3.0, 0.0]);
    assert_eq!(b.get(2, false, 2).unwrap(), vec![9.0, 9.0]);
}

#[test]
fn default_and_explicit_guarantees() {
    let d32 = [0f32; 16];
    let v = make_naive_tensor_view(&d32[..], &[2, 8], &[8, 1]).unwrap();
    assert_eq!(v.descriptor().top_safe_vector_lengths_strides(), (vec![-1, 4], vec![-1, 1]));
    let d16 = [0u16; 16];
    let v = make_naive_tensor_view(&d16[..], &[2, 8], &[8, 1]).unwrap();
    assert_eq!(v.descriptor().top_safe_vector_lengths_strides(), (vec![-1, 8], vec![-1, 1]));
    let v =
        make_naive_tensor_view_with_guarantee(&d16[..], &[2, 8], &[8, 1], Some((2, 1))).unwrap();
    assert_eq!(v.descriptor().top_safe_vector_lengths_strides(), (vec![-1, 2], vec![-1, 1]));
    assert!(make_naive_tensor_view(&d16[..], &[2, 8], &[8]).is_err());
    assert!(pad_tensor_view(
        make_naive_tensor_view(&d16[..], &[2, 8], &[8, 1]).unwrap(),
        &[2],
        &[true]
    )
    .is_err());
}

#[test]
fn padding_a_huge_view_is_an_error_not_an_overflow() {
    let data = [0f32; 4];
    // a broadcast view of i64::MAX elements: padding it to a multiple of 4 does not fit in i64
    let v = make_naive_tensor_view(&data[..], &[i64::MAX], &[0]).unwrap();
    let e = pad_tensor_view(v, &[4], &[true]).unwrap_err();
    assert!(e.to_string().contains("low_length + right_pad overflows i64"), "{e}");
    // already a multiple: no pad needed, fine
    let v = make_naive_tensor_view(&data[..], &[1 << 62], &[0]).unwrap();
    assert_eq!(pad_tensor_view(v, &[4], &[true]).unwrap().lengths(), vec![1 << 62]);
    // a view whose index count overflows is refused when it is made
    assert!(make_naive_tensor_view(&data[..], &[i64::MAX, 4], &[0, 1]).is_err());
}
