//! Warp requests of layouts and windows: sizes past i64 and walks past the request cap are
//! typed errors, decided before anything is walked or allocated.

use tilekit_tile::analysis::requests::{
    tile_requests, window_requests, SmemLayout, WarpPattern, MAX_REQUESTS,
};
use tilekit_tile::encoding_text::parse_encoding;
use tilekit_tile::traits::AccessCurve;
use tilekit_tile::{TileDistribution, TileError};

#[test]
fn padding_past_i64_is_an_overflow_error() {
    let e = SmemLayout::Padded(i64::MAX).descriptor(4, 4, 4).unwrap_err();
    assert!(matches!(e, TileError::Layout(tilekit_layout::LayoutError::Overflow { .. })), "{e:?}");
    // a pitch that fits, rows that make the space overflow: the descriptor says so
    assert!(SmemLayout::Padded(1 << 61).descriptor(8, 4, 4).is_err());
    // the same padding of a sane size is fine: row r starts at r · (4 + 4)
    let d = SmemLayout::Padded(4).descriptor(4, 4, 4).unwrap();
    assert_eq!(d.calculate_offset(&[3, 1]).unwrap(), 25);
}

#[test]
fn walks_past_the_request_cap_are_refused() {
    // 2048 × 1024 fp32 read one element per lane: 65536 requests, the cap
    let d = SmemLayout::RowMajor.descriptor(2048, 1024, 4).unwrap();
    assert_eq!(tile_requests(&d, 4, WarpPattern::Row).unwrap().len(), MAX_REQUESTS);
    let d = SmemLayout::RowMajor.descriptor(2048, 1025, 4).unwrap();
    let e = tile_requests(&d, 4, WarpPattern::Row).unwrap_err();
    assert_eq!(
        e.to_string(),
        "tile requests: walk = \"2048×1025 tile read as row\" is invalid: it makes 65600 \
         requests; the analysis covers up to 65536 (analyse a smaller tile or window)"
    );
    // a window whose block has 2^31 threads: refused before one thread is walked
    let dist = TileDistribution::from_spec(
        parse_encoding("H[[2147483648],[4]] P[[X0.0]] Y[X1.0]").unwrap(),
    )
    .unwrap();
    let smem = SmemLayout::RowMajor.descriptor(1 << 31, 4, 4).unwrap();
    let e = window_requests(&dist, &smem, &[0, 0], AccessCurve::Linear, 4).unwrap_err();
    assert!(e.to_string().contains("2147483648 threads × 1 accesses"), "{e}");
}
