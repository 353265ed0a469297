//! The index domain's integer helpers at the edges of i64.

use tilekit_layout::idx::{checked_product, gcd, product};

#[test]
fn checked_product_refuses_what_product_would_wrap() {
    assert_eq!(checked_product(&[3, 5, 7]), Some(product(&[3i64, 5, 7])));
    assert_eq!(checked_product(&[i64::MAX, 1]), Some(i64::MAX));
    assert_eq!(checked_product(&[i64::MAX, 2]), None);
    assert_eq!(checked_product(&[-(1 << 31), 1 << 32]), Some(i64::MIN));
    assert_eq!(checked_product(&[0, i64::MAX, i64::MAX]), Some(0));
}

#[test]
fn gcd_handles_every_i64() {
    assert_eq!(gcd(-12, 18), 6);
    assert_eq!(gcd(i64::MIN, 6), 2);
    assert_eq!(gcd(i64::MIN, i64::MAX), 1);
    // 2^63 does not fit: saturates
    assert_eq!(gcd(i64::MIN, 0), i64::MAX);
}
