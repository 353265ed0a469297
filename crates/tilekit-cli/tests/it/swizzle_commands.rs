//! `tilekit morton`, `tilekit banks` and `tilekit sfc --stats`: the numbers behind the text, and
//! the typed errors for bad flags.

use tilekit_cli::banks::{analyse, to_text, Args};
use tilekit_cli::{morton, sfc, CliError};
use tilekit_layout::SpaceFillingCurve;

fn banks(layout: &str, tile: &str, dtype: &str, access: &str) -> Args {
    Args {
        layout: layout.into(),
        tile: Some(tile.into()),
        dtype: dtype.into(),
        access: Some(access.into()),
        ..Args::default()
    }
}

#[test]
fn morton_table_is_the_documents() {
    assert_eq!(
        morton::table(2),
        vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7], vec![8, 9, 12, 13], vec![10, 11, 14, 15]]
    );
    // 32 bits: the largest coordinates give the largest code
    assert_eq!(morton::encode_arg("4294967295,4294967295", 32).unwrap().2, u64::MAX);
    assert_eq!(
        morton::decode_arg("18446744073709551615", 32).unwrap(),
        (u64::MAX, u32::MAX, u32::MAX)
    );
    assert!(
        matches!(morton::check_bits(0), Err(CliError::BadArgument { ref flag, .. }) if flag == "--bits")
    );
    assert_eq!(
        morton::encode_arg("a,1", 3).unwrap_err().to_string(),
        "--encode \"a,1\" is invalid: expected Y,X: two integers 0..=7 (row, column)"
    );
}

#[test]
fn banks_walk_numbers() {
    let t = |a: &Args| {
        let s = analyse(a).unwrap().summary;
        (s.requests, s.transactions, s.ideal_transactions, s.worst_conflict)
    };
    assert_eq!(t(&banks("row-major", "64x64", "f16", "col-vec8")), (16, 512, 64, 8));
    assert_eq!(t(&banks("swizzle128", "64x64", "f16", "col-vec8")), (16, 64, 64, 1));
    assert_eq!(t(&banks("padded:1", "32x32", "fp32", "col")), (32, 32, 32, 1));
    assert_eq!(t(&banks("xor-lds", "32x32", "fp16", "col-vec8")), (4, 16, 16, 1));
    let text = to_text(&analyse(&banks("row-major", "32x32", "fp32", "col")).unwrap(), Some(0));
    assert!(text
        .contains("totals: 1024 wavefronts (ideal 32, 32.00×), worst 32-way, 32 of 32 requests"));
    assert!(text.contains("\n0     0..32  32 . . ."));
}

#[test]
fn banks_encoding_mode() {
    let a = Args {
        layout: "swizzle128".into(),
        dtype: "fp16".into(),
        encoding: Some("H[[4,16],[8,8]] P[[X1.0,X0.1]] Y[X0.0,X1.1]".into()),
        ..Args::default()
    };
    let r = analyse(&a).unwrap();
    let s = &r.summary;
    assert_eq!(
        (s.requests, s.transactions, s.ideal_transactions, s.worst_conflict),
        (16, 64, 64, 1)
    );
    assert_eq!(r.labels.as_ref().unwrap()[5], (1, 1)); // warp 1, access 1
    let plain = Args { layout: "row-major".into(), ..a.clone() };
    assert_eq!(analyse(&plain).unwrap().summary.transactions, 512);
}

#[test]
fn banks_errors_name_the_flag() {
    let flag = |a: &Args| match analyse(a) {
        Err(CliError::BadArgument { flag, .. }) => flag,
        other => panic!("expected BadArgument, got {other:?}"),
    };
    assert_eq!(flag(&banks("zigzag", "8x8", "fp32", "row")), "--layout");
    assert_eq!(flag(&banks("row-major", "8by8", "fp32", "row")), "--tile");
    assert_eq!(flag(&banks("row-major", "8x8", "int4", "row")), "--dtype");
    assert_eq!(flag(&banks("row-major", "8x8", "fp32", "diag")), "--access");
    assert_eq!(flag(&banks("swizzle64", "64x64", "fp16", "row-vec8")), "--layout");
    // fp16 scalars are 2-byte accesses, which the bank model does not cover
    assert_eq!(flag(&banks("row-major", "8x8", "fp16", "row")), "--access");
    let both = Args {
        encoding: Some("H[[2],[2]] P[[X0.0]] Y[X1.0]".into()),
        ..banks("row-major", "2x2", "fp32", "row")
    };
    assert_eq!(flag(&both), "--access");
}

#[test]
fn sfc_stats_of_row_and_column_walks() {
    // 8×8 fp32 packed (two 128-byte lines). Row-major: 63 sequential steps, 2 line visits.
    let rm = SpaceFillingCurve::new(vec![8, 8], vec![0, 1], vec![1, 1], false).unwrap();
    let l = sfc::locality(&rm, 4).unwrap().memory;
    assert_eq!(
        (l.sequential, l.within_line, l.large_jumps, l.distinct_lines, l.line_visits),
        (63, 0, 0, 2, 2)
    );
    // Column-major: steps of +8 inside a line (4 rows of 8 floats per line) or across it, and
    // the -55 jumps back to the top of the next column: 48 within, 15 large, 16 visits.
    let cm = SpaceFillingCurve::new(vec![8, 8], vec![1, 0], vec![1, 1], false).unwrap();
    let l = sfc::locality(&cm, 4).unwrap();
    let m = l.memory;
    assert_eq!(
        (m.sequential, m.within_line, m.large_jumps, m.distinct_lines, m.line_visits),
        (0, 48, 15, 2, 16)
    );
    // the document's index-space classifier calls the column walk sequential
    assert_eq!((l.index_space.sequential, l.index_space.cache_line_jumps), (56, 7));
}
