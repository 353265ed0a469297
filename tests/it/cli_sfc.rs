//! `tilekit sfc` end to end: the binary's table, grid, JSON, SVG and flag errors.

use crate::common;

use common::tilekit;

#[test]
fn table_and_grid() {
    let (code, out, _) = tilekit(&["sfc", "--lengths", "4,8", "--vector", "1,4", "--snake"]);
    assert_eq!(code, 0);
    assert!(out.starts_with(
        "space_filling_curve(lengths [4, 8], order [0, 1], scalars [1, 4], snake)\n\
         scalar_per_vector 4, access_lengths [4, 2], ordered_access_lengths [4, 2], num_access 8\n"
    ));
    assert!(out.contains("\n2  [1, 4]  [1, 4]  [0, -4]\n"));
    assert!(out.contains("\n7  [3, 0]  [1, 4]  -\n"));
    assert!(out
        .ends_with("  0 0 0 0 1 1 1 1\n  3 3 3 3 2 2 2 2\n  4 4 4 4 5 5 5 5\n  7 7 7 7 6 6 6 6\n"));
}

#[test]
fn defaults_and_partial_accesses() {
    let (code, out, _) = tilekit(&["sfc", "--lengths", "5,7", "--vector", "2,3"]);
    assert_eq!(code, 0);
    assert!(out.contains("order [0, 1], scalars [2, 3], linear)"));
    assert!(out.contains("access_lengths [3, 3]"));
    assert!(out.contains("\n8  [4, 6]  [1, 1]*  -\n"));
    assert!(out.contains("(* partial access"));
    // the grid: rows of two, the last row partial
    assert!(out.ends_with(
        "  0 0 0 1 1 1 2\n  0 0 0 1 1 1 2\n  3 3 3 4 4 4 5\n  3 3 3 4 4 4 5\n  6 6 6 7 7 7 8\n"
    ));
}

#[test]
fn json_matches_the_library() {
    let (code, out, _) = tilekit(&["sfc", "--lengths", "3,2,2", "--order", "2,0,1", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(v["num_access"], 12);
    assert_eq!(v["ordered_access_lengths"], serde_json::json!([2, 3, 2]));
    assert_eq!(v["accesses"][5]["index"], serde_json::json!([2, 1, 0]));
    assert_eq!(v["accesses"][5]["forward_step"], serde_json::json!([-2, -1, 1]));
    assert_eq!(v["accesses"][0]["backward_step"], serde_json::Value::Null);
    assert_eq!(v["step_first_to_last"], serde_json::json!([2, 1, 1]));
}

#[test]
fn svg_is_written() {
    let dir = tempfile::tempdir().unwrap(); // removed when dropped, pass or fail
    let file = dir.path().join("c.svg");
    let f = file.to_str().unwrap();
    let (code, out, _) =
        tilekit(&["sfc", "--lengths", "5,7", "--vector", "2,3", "--snake", "--svg", f]);
    assert_eq!(code, 0, "{out}");
    let doc = std::fs::read_to_string(&file).unwrap();
    assert!(doc.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(doc.matches("class=\"access\"").count(), 9);
    assert_eq!(doc.matches("stroke-dasharray=\"4 3\"").count(), 5, "five partial bars");
    assert_eq!(doc.matches("<polyline").count(), 8, "one arrow per step");
}

#[test]
fn bad_flags_name_flag_value_and_rule() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["--lengths", "4,x"],
            "--lengths \"4,x\" is invalid: entry 2 (\"x\") is not an integer; \
             expected comma-separated integers such as 4,8",
        ),
        (
            &["--lengths", "4,8", "--order", "0,2"],
            "--order \"0,2\" is invalid: dim_access_order[1] = 2, but the curve has 2 dims, \
             so the order must be a permutation of 0..2",
        ),
        (
            &["--lengths", "4,8", "--order", "1,-1"],
            "--order \"1,-1\" is invalid: -1 is negative; the order must be a permutation of \
             0..2 (one entry per dim of --lengths)",
        ),
        (
            &["--lengths", "4,8", "--vector", "1,0"],
            "--vector \"1,0\" is invalid: scalars_per_access[1] = 0, but scalars per access \
             must be >= 1",
        ),
        (
            &["--lengths", "0,8"],
            "--lengths \"0,8\" is invalid: tensor_lengths[0] = 0, but lengths must be >= 1",
        ),
        (
            &["--lengths", "2,2,2", "--svg", "x.svg"],
            "--svg \"x.svg\" is invalid: SVG pictures are drawn for 1-D and 2-D curves; this \
             curve has rank 3 (use the text grid or --json for higher ranks)",
        ),
    ];
    for (args, msg) in cases {
        let mut all = vec!["sfc"];
        all.extend_from_slice(args);
        let (code, out, err) = tilekit(&all);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?} printed {out}");
        assert_eq!(err.trim_end(), format!("tilekit: error: {msg}"), "{args:?}");
    }
}
