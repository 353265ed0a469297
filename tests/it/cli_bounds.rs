//! Large and overflowing inputs end to end (issue 10): each command gives a named error or a
//! correct, bounded result — no abort on a huge allocation, no overflow panic (these tests run
//! the debug build, where overflow panics), no output in proportion to an absurd input.

use crate::common;

use std::io::Read;
use std::process::{Command, Stdio};

use common::tilekit;

/// A 1-D 3·10⁹ × 2 by 4 × 4 tile: valid, 9.6·10¹⁰ elements, 1.2·10¹⁰ threads.
const HUGE: &str = "H[[3000000000,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]";

#[test]
fn show_explains_huge_tiles_without_evaluating_them() {
    let (code, out, err) = tilekit(&["show", HUGE]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(
        "tile 6000000000×16 over 12000000000 threads (P 3000000000×4), 8 values per thread (Y 2×4)"
    ));
    assert!(out.contains("  X0 = 6000000000 = H[3000000000, 2]: H0 = 3000000000 (stride 2) → P0"));
    assert!(out.ends_with(
        "ownership map omitted: the tile has 96000000000 elements, the text map is printed up to \
         4096 (draw tiles of up to 65536 with --svg)\n"
    ));
    let (code, out, _) = tilekit(&["show", "H[[2048,2],[2048,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]"]);
    assert_eq!(code, 0);
    assert!(out.contains("ownership map omitted: the tile has 33554432 elements"));
    // a small tile with 2^20 replicas per element: explained, the map is a note
    let (code, out, err) = tilekit(&["show", "R[1048576] H[[32],[64]] P[[R0,X0.0]] Y[X1.0]"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("each element held by 1048576 threads (replication)"));
    assert!(out.ends_with(
        "ownership map omitted: the tile's 2048 elements have 2147483648 (thread, d) holders; \
         the map is evaluated for up to 1048576\n"
    ));
    // JSON: the numbers, and why the owners are not listed
    let (code, out, _) = tilekit(&["show", HUGE, "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["num_threads"], 12_000_000_000i64);
    assert_eq!(v["x_lengths"], serde_json::json!([6_000_000_000i64, 16]));
    assert_eq!(v["owners"], serde_json::Value::Null);
    assert_eq!(
        v["owners_omitted"],
        "the tile has 96000000000 elements; owners are listed for up to 65536"
    );
}

#[test]
fn show_svg_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.svg");
    let (code, out, err) = tilekit(&[
        "show",
        "H[[512,2],[512,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]",
        "--svg",
        big.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains(
            "ownership picture: tile = \"1024×2048\" is invalid: it has 2097152 elements; \
             pictures are drawn for up to 65536 (e.g. 256×256)"
        ),
        "{err}"
    );
    assert!(!big.exists(), "nothing is written for a refused picture");
    // at the cap: drawn, one cell per element, a few megabytes
    let edge = dir.path().join("edge.svg");
    let (code, _, err) = tilekit(&[
        "show",
        "H[[128,2],[64,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]",
        "--svg",
        edge.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let doc = std::fs::read_to_string(&edge).unwrap();
    assert_eq!(doc.matches("class=\"cell\"").count(), 256 * 256);
    assert!(doc.len() < 40 << 20, "{} bytes", doc.len());
}

#[test]
fn show_sizes_past_i64_are_named_errors() {
    let (code, out, err) = tilekit(&["show", "H[[4294967296],[4294967296]] P[[X0.0]] Y[X1.0]"]);
    assert_eq!(code, 2);
    assert!(out.contains("refused by the validator (rule FitsInI64"), "{out}");
    assert_eq!(
        err,
        "tilekit: error: tile distribution encoding: x_lengths = [4294967296, 4294967296] is \
         invalid: the tile's element count (the product of the X lengths) overflows i64\n"
    );
    // 3000 X dims of length 2: 2^3000 elements (this printed "over 0 threads" and exited 0)
    let hs = vec!["[2]"; 3000].join(",");
    let ys: Vec<String> = (1..3000).map(|i| format!("X{i}.0")).collect();
    let enc = format!("H[{hs}] P[[X0.0]] Y[{}]", ys.join(","));
    let (code, out, err) = tilekit(&["show", &enc]);
    assert_eq!(code, 2);
    assert!(!out.contains("over 0 threads"));
    assert!(err.contains("the tile's element count (the product of the X lengths) overflows i64"));
}

#[test]
fn sfc_json_and_stats_are_capped_or_streamed() {
    let (code, out, err) = tilekit(&["sfc", "--lengths", "3000000000", "--json"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(
        err,
        "tilekit: error: --json \"3000000000\" is invalid: the curve has 3000000000 accesses; \
         --json lists every access and is limited to 1048576 (the text table shows the first and \
         last 20)\n"
    );
    let (code, _, err) = tilekit(&["sfc", "--lengths", "9223372036854775807", "--stats"]);
    assert_eq!(code, 2);
    assert!(err.contains(
        "the curve has 9223372036854775807 accesses; the statistics walk curves of up to 4194304"
    ));
    // the text table of the same curve: its edges, at once
    let (code, out, _) = tilekit(&["sfc", "--lengths", "9223372036854775807"]);
    assert_eq!(code, 0);
    assert!(out.contains("… 9223372036854775767 accesses not shown"));
    assert!(out.contains("9223372036854775806  [9223372036854775806]  [1]     -"), "{out}");
    // at the JSON cap: streamed; a reader that stops early ends it quietly (exit 0)
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilekit"))
        .args(["sfc", "--lengths", "1024,1024", "--json", "--stats"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 64];
    child.stdout.as_mut().unwrap().read_exact(&mut head).unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(head.starts_with(b"{\n  \"tensor_lengths\": [1024,1024],"));
    assert_eq!((status.code(), err.as_str()), (Some(0), ""));
}

#[test]
fn banks_padding_past_i64_is_a_named_error() {
    let (code, out, err) = tilekit(&[
        "banks",
        "--layout",
        "padded:9223372036854775807",
        "--tile",
        "4x4",
        "--access",
        "row",
    ]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(
        err,
        "tilekit: error: --layout \"padded:9223372036854775807\" is invalid: shared-memory \
         layout: the row pitch cols + padding overflows i64: cols 4, padding 9223372036854775807\n"
    );
    // a walk of more requests than the analysis covers is refused by size
    let (code, _, err) =
        tilekit(&["banks", "--layout", "row-major", "--tile", "4096x4096", "--access", "row"]);
    assert_eq!(code, 2);
    assert!(err.contains("it makes 524288 requests; the analysis covers up to 65536"), "{err}");
}

#[test]
fn conformance_names_an_absurd_size_instead_of_allocating_it() {
    let shared = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    let text = std::fs::read_to_string(shared.join("descriptors.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["descriptors"][0]["top_lengths"][0] = 3_000_000_000i64.into();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("descriptors.json");
    std::fs::write(&file, serde_json::to_string(&v).unwrap()).unwrap();
    let (code, out, err) = tilekit(&["conformance", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains(&format!(
        "  FAIL naive_rowmajor_4x6_vec4: {}: entry \"naive_rowmajor_4x6_vec4\": top_lengths = \
         [3000000000, 6] is invalid: it describes 18000000000 indices",
        file.display()
    )));
    assert!(out.ends_with(" passed, 1 failed\n"), "{out}");
}
