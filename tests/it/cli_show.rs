//! `tilekit show` end to end: every published encoding is shown (its ownership agreeing with the
//! reference's numbers, its traits with load_store_traits.json), ill-formed ones are refused
//! with their named error, and the inputs (text form, inline JSON, files) agree.

use crate::common;

use std::path::PathBuf;

use serde_json::Value;

use common::tilekit;

fn conformance() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance")
}

fn load(file: &str) -> Value {
    let text = std::fs::read_to_string(conformance().join(file)).expect("conformance file");
    serde_json::from_str(&text).expect("json")
}

/// The ill-formed encodings of distributions.json and the start of the error each must get.
const REFUSED: [(&str, &str); 3] = [
    (
        "edge_doc_rowmajor_dup_p",
        "tilekit: error: tile distribution encoding: X0.H0 = [\"P0 (ps_to_rhss[0][0])\", \
         \"P1 (ps_to_rhss[1][0])\"] is invalid: every H component must be used by exactly one P",
    ),
    (
        "doc_rowmajor_literal",
        "tilekit: error: tile distribution encoding: ys_to_rhs_major[1] = 4 is invalid: the \
         encoding has 2 X dims, so RH majors are 0 (R) or 1..=2 (X0..X1)",
    ),
    (
        "y_mapped_to_R",
        "tilekit: error: tile distribution encoding: ys_to_rhs_major[0] = 0 is invalid: a Y \
         cannot map to an R (replication) component",
    ),
];

#[test]
fn every_published_encoding_is_shown_or_refused_by_name() {
    let dists = load("distributions.json");
    let traits = load("load_store_traits.json");
    let file = conformance().join("distributions.json");
    let file = file.to_str().unwrap();
    let mut names: Vec<(String, bool)> = Vec::new();
    for d in dists["distributions"].as_array().unwrap() {
        names.push((d["name"].as_str().unwrap().to_string(), true));
    }
    for d in dists["meta"]["compile_failures"].as_array().unwrap() {
        names.push((d["name"].as_str().unwrap().to_string(), false));
    }
    let mut shown = 0;
    for (name, listed) in &names {
        let refused = REFUSED.iter().find(|(n, _)| n == name);
        let (code, out, err) =
            tilekit(&["show", "--from", file, "--name", name, "--dtype", "fp16", "--json"]);
        if let Some((_, msg)) = refused {
            assert_eq!(code, 2, "{name} must be refused");
            assert!(err.starts_with(msg), "{name}: {err}");
            continue;
        }
        assert!(*listed, "{name}: every compile failure must be refused");
        assert_eq!(code, 0, "{name}: {err}");
        shown += 1;
        let v: Value = serde_json::from_str(&out).expect("valid JSON");
        let d = dists["distributions"].as_array().unwrap().iter().find(|d| d["name"] == **name);
        let d = d.unwrap();
        assert_eq!(v["x_lengths"], d["x_lengths"], "{name}");
        assert_eq!(v["thread_buffer_size"], d["thread_buffer_size"], "{name}");
        // ownership agrees with the reference's X of every (thread, Y)
        let owners = v["owners"].as_array().unwrap();
        let xl: Vec<i64> =
            d["x_lengths"].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect();
        for (t, p) in d["ps"].as_array().unwrap().iter().enumerate() {
            for (k, x) in p["xs"].as_array().unwrap().iter().enumerate() {
                let lin = x
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip(&xl)
                    .fold(0, |acc, (i, l)| acc * l + i.as_i64().unwrap());
                let pair = serde_json::json!([t, d["ys_to_d"][k]["d"]]);
                assert!(
                    owners[lin as usize].as_array().unwrap().contains(&pair),
                    "{name}: thread {t} y {k}"
                );
            }
        }
        // traits agree with load_store_traits.json for fp16 (and fp32 below)
        for dtype in ["fp16", "fp32"] {
            let t = traits["traits"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["distribution"] == **name && t["dtype"] == dtype)
                .unwrap_or_else(|| panic!("{name} {dtype} traits"));
            let v = if dtype == "fp16" {
                v.clone()
            } else {
                let (_, out, _) =
                    tilekit(&["show", "--from", file, "--name", name, "--dtype", dtype, "--json"]);
                serde_json::from_str(&out).unwrap()
            };
            for (ours, theirs) in [
                ("vector_dim_y", "vector_dim_y"),
                ("scalar_per_vector", "scalar_per_vector"),
                ("num_access", "num_access"),
                ("ys_vector_lengths", "ys_safe_vector_lengths"),
                ("ys_vector_strides", "ys_safe_vector_strides"),
            ] {
                assert_eq!(v["traits"][ours], t[theirs], "{name} {dtype} {ours}");
            }
        }
    }
    assert_eq!(shown, names.len() - REFUSED.len());
}

#[test]
fn ownership_map_of_simple_2x2_rows() {
    let file = conformance().join("distributions.json");
    let (code, out, _) =
        tilekit(&["show", "--from", file.to_str().unwrap(), "--name", "simple_2x2_rows"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("encoding: H[[2],[2]] P[[X0.0]] Y[X1.0]\n"));
    assert!(out.ends_with(
        "ownership map (rows = X0, columns = X1; each cell is thread:d):\n\
         \x20      0    1\n\
         \x20 0  0:0  0:1\n\
         \x20 1  1:0  1:1\n"
    ));
    assert!(
        out.contains("\n  vector dim Y0, 2 scalars per vector (8 bytes), 1 access per thread\n")
    );
}

#[test]
fn words_for_doc_rowmajor_4x16_fixed() {
    let file = conformance().join("distributions.json");
    let (code, out, _) =
        tilekit(&["show", "--from", file.to_str().unwrap(), "--name", "doc_rowmajor_4x16_fixed"]);
    assert_eq!(code, 0);
    let expected = "\
encoding: H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]
tile 4×16 over 8 threads (P 2×4), 8 values per thread (Y 2×4), each element held by one thread

X (tile dims; each is its H components row-major, first slowest):
  X0 = 4 = H[2, 2]: H0 = 2 (stride 2) → P0; H1 = 2 (stride 1) → Y0
  X1 = 16 = H[4, 4]: H0 = 4 (stride 4) → P1; H1 = 4 (stride 1) → Y1
P (thread dims; each is the row-major merge of its components):
  P0 = 2 = merge(X0.H0):
    X0.H0  length 2: +2 in X0 per step of P0
  P1 = 4 = merge(X1.H0):
    X1.H0  length 4: +4 in X1 per step of P1
Y (values held by each thread):
  Y0 = X0.H1  length 2: +1 in X0 per step
  Y1 = X1.H1  length 4: +1 in X1 per step
R (replication): none
thread buffer: 8 values; d = 4·y0 + y1 (ys_to_d: row-major in Y order, last Y fastest)
threads per block: 8; thread = 4·p0 + p1 (row-major over P)

traits for fp32 (the view guarantees 4 contiguous elements = 16 bytes on the last X):
  Y vector lengths [-1, 4], strides [-1, 1] (propagated through ps_ys_to_xs; -1 = none)
  vector dim Y1, 4 scalars per vector (16 bytes), 2 accesses per thread
";
    assert!(out.starts_with(expected), "{out}");
    assert!(out.contains("\n  2  4:0  4:1  4:2  4:3  5:0  5:1  5:2  5:3  6:0"));
}

#[test]
fn text_form_inline_json_and_files_agree() {
    let text = "R[4] H[[8],[4,4]] P[[R0],[X0.0,X1.0]] Y[X1.1]";
    let json = r#"{"rs_lengths": [4], "hs_lengthss": [[8], [4, 4]], "ps_to_rhss_major": [[0], [1, 2]],
        "ps_to_rhss_minor": [[0], [0, 0]], "ys_to_rhs_major": [2], "ys_to_rhs_minor": [1]}"#;
    let dir = tempfile::tempdir().unwrap(); // removed when dropped, pass or fail
    let entry = dir.path().join("entry.json");
    std::fs::write(&entry, format!("{{\"name\": \"x\", \"encoding\": {json}}}")).unwrap();
    let (c1, a, _) = tilekit(&["show", text]);
    let (c2, b, _) = tilekit(&["show", json]);
    let (c3, c, _) = tilekit(&["show", entry.to_str().unwrap()]);
    assert_eq!((c1, c2, c3), (0, 0, 0));
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert!(a.contains("each element held by 4 threads (replication)"));
    assert!(a.contains(
        "\n    R0  length 4: replication, no X movement; P0 values 1 apart hold the same data\n"
    ));
    assert!(a.contains("\n  0    0/32/64/96:0    0/32/64/96:1"));
    // SVG
    let svg = dir.path().join("r.svg");
    let (code, out, _) =
        tilekit(&["show", text, "--dtype", "fp16", "--svg", svg.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.ends_with(&format!("\nwrote {}\n", svg.display())));
    let doc = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(doc.matches("class=\"cell\"").count(), 128);
    assert_eq!(doc.matches("class=\"vector\"").count(), 32, "one bar of 4 fp16 per lane");
}

#[test]
fn broken_encodings_show_what_the_reference_does() {
    let (code, out, err) = tilekit(&["show", "H[[2,2],[4,4]] P[[X0.0],[X0.0]] Y[X0.1,X1.1]"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("tilekit: error: tile distribution encoding: X0.H0 = "));
    assert!(out.contains("refused by the validator (rule HUsedOnce; the error is below)"));
    assert!(out.contains("\n  never owned: 48 of 64 elements: [0, 4], [0, 5],"));
    assert!(
        out.contains("\n  owned more than once: 16 elements: [0, 0] by 0/1:0, [0, 1] by 0/1:1,")
    );
    assert!(out.contains("\n  0  0/1:0  0/1:1  0/1:2  0/1:3      -      -"));
}

#[test]
fn bad_inputs_name_position_flag_and_rule() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["H[[2,2],[4,4]] P[[X0.0],[Z1.0]] Y[X0.1,X1.1]"],
            "encoding text, column 26: found `Z1.0`, expected a component: R<r> (R component r) or \
             X<i>.<j> (H component j of X i), e.g. X0.1",
        ),
        (
            &["{\"rs_lengths\": []}"],
            "ENCODING \"{\\\"rs_lengths\\\": []}\" is invalid: not an encoding object (missing field \
             `hs_lengthss`); expected {\"rs_lengths\", \"hs_lengthss\", \"ps_to_rhss_major\", \
             \"ps_to_rhss_minor\", \"ys_to_rhs_major\", \"ys_to_rhs_minor\"} or an object with an \
             \"encoding\" field",
        ),
        (
            &["nowhere/enc.json"],
            "ENCODING \"nowhere/enc.json\" is invalid: no such file (ENCODING is inline JSON, a \
             JSON file, or the text form)",
        ),
        (
            &["H[[2],[2]] P[[X0.0]] Y[X1.0]", "--dtype", "int4"],
            "--dtype \"int4\" is invalid: one of f32 (fp32), f16 (fp16), bf16, fp8 (f8), f64 (fp64)",
        ),
        (&["--name", "x"], "--name \"x\" is invalid: --name needs --from FILE"),
    ];
    for (args, msg) in cases {
        let mut all = vec!["show"];
        all.extend_from_slice(args);
        let (code, out, err) = tilekit(&all);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?} printed {out}");
        assert_eq!(err.trim_end(), format!("tilekit: error: {msg}"), "{args:?}");
    }
}

#[test]
fn text_form_round_trips_on_every_published_encoding() {
    use tilekit::tile::encoding::EncodingSpec;
    use tilekit::tile::encoding_text::{parse_encoding, print_encoding};
    let dists = load("distributions.json");
    let all = dists["distributions"]
        .as_array()
        .unwrap()
        .iter()
        .chain(dists["meta"]["compile_failures"].as_array().unwrap());
    let mut n = 0;
    for d in all {
        let spec: EncodingSpec = serde_json::from_value(d["encoding"].clone()).unwrap();
        assert_eq!(parse_encoding(&print_encoding(&spec)).unwrap(), spec, "{}", d["name"]);
        n += 1;
    }
    assert_eq!(n, dists["distributions"].as_array().unwrap().len() + 2);
    let gemm = dists["distributions"][10]["encoding"].clone();
    let spec: EncodingSpec = serde_json::from_value(gemm).unwrap();
    assert_eq!(print_encoding(&spec), "R[1] H[[2,4,16],[4,8]] P[[X0.1],[X0.2,X1.0]] Y[X0.0,X1.1]");
}

#[test]
fn an_empty_encoding_file_is_named_empty() {
    // an empty file used to get the JSON parser's "EOF … at line 1 column 0" (--from) or the
    // text parser's "column 1: found the end of the text" (ENCODING) (issue 31, point 6)
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "  \n").unwrap();
    let path = empty.to_str().unwrap();
    for args in [&["show", path][..], &["show", "--from", path, "--name", "x"]] {
        let (code, out, err) = tilekit(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?} printed {out}");
        assert_eq!(
            err.trim_end(),
            format!(
                "tilekit: error: {path}: the file is empty (expected an encoding: JSON or the \
                 text form)"
            ),
            "{args:?}"
        );
    }
}
