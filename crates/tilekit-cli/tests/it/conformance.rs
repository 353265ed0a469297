//! `tilekit conformance` on the published vectors, and proof that the checker can fail.

use std::path::PathBuf;

use tilekit_cli::conformance::run_suite;

fn vectors() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance")
}

/// A fresh folder, removed when the test ends (pass or fail).
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("tilekit-conf-{name}-")).tempdir().unwrap()
}

#[test]
fn published_vectors_pass() {
    let r = run_suite(&vectors()).unwrap();
    for (name, t) in &r.categories {
        assert_eq!(t.failed, 0, "{name}: {:?}", &t.failures[..t.failures.len().min(5)]);
    }
    assert!(r.unreadable.is_empty(), "{:?}", r.unreadable);
    let desc = &r.categories["descriptors"];
    assert!(desc.passed > 6000, "descriptors checked only {} values", desc.passed);
    let traits = &r.categories["load_store_traits"];
    assert!(traits.passed > 4500, "load_store_traits checked only {} values", traits.passed);
    let walks = &r.categories["window_walks"];
    assert!(walks.passed > 3000, "window_walks checked only {} values", walks.passed);
}

/// Copies the named published files into a scratch folder, letting `edit` change one of them.
fn with_files(
    name: &str,
    files: &[&str],
    edit: impl Fn(&str, &mut serde_json::Value),
) -> tempfile::TempDir {
    let dir = scratch(name);
    for f in files {
        let text = std::fs::read_to_string(vectors().join(f)).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        edit(f, &mut v);
        std::fs::write(dir.path().join(f), serde_json::to_string(&v).unwrap()).unwrap();
    }
    dir
}

#[test]
fn wrong_traits_and_walk_numbers_are_caught() {
    let dir = with_files(
        "traits-walks-wrong",
        &["distributions.json", "load_store_traits.json", "window_walks.json"],
        |f, v| match f {
            "load_store_traits.json" => {
                let e = &mut v["traits"][0];
                assert_eq!(e["distribution"], "simple_2x2_rows");
                e["accesses_snake"][0]["d_elems"][1] = 5.into();
                e["scalar_per_vector"] = 4.into();
            }
            "window_walks.json" => {
                let a = &mut v["walks"][0]["threads"][1]["accesses"][0];
                assert_eq!(a["valid"], false);
                a["valid"] = true.into();
                a["offset"] = 41.into();
            }
            _ => {}
        },
    );
    let r = run_suite(dir.path()).unwrap();
    let t = &r.categories["load_store_traits"];
    assert_eq!(t.failed, 2, "{:?}", t.failures);
    assert!(t
        .failures
        .iter()
        .any(|f| f.contains("accesses_snake[0].d_elems: expected [0, 5], got [0, 1]")));
    let w = &r.categories["window_walks"];
    assert_eq!(w.failed, 2, "{:?}", w.failures);
    assert!(
        w.failures[0].contains(
            "gemm_a_fp16_100x40_origin_0_32 p [0, 1]: access 0.offset: expected 41, got 40"
        ),
        "{}",
        w.failures[0]
    );
}

#[test]
fn traits_entries_resolve_their_distribution() {
    // Without distributions.json the named distributions cannot be found: one failure per entry.
    let dir = with_files("traits-alone", &["load_store_traits.json"], |_, _| {});
    let r = run_suite(dir.path()).unwrap();
    let t = &r.categories["load_store_traits"];
    assert!(t.failed > 0 && t.passed == 0);
    assert!(t.failures[0].contains("is neither given in the entry"), "{}", t.failures[0]);
    // An entry that carries its own encoding needs no distributions file.
    let dists: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(vectors().join("distributions.json")).unwrap(),
    )
    .unwrap();
    let dir =
        with_files("traits-inline", &["load_store_traits.json", "window_walks.json"], |f, v| {
            let key = if f == "load_store_traits.json" { "traits" } else { "walks" };
            for e in v[key].as_array_mut().unwrap() {
                let d = dists["distributions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|d| d["name"] == e["distribution"])
                    .unwrap();
                e["encoding"] = d["encoding"].clone();
                e["distribution"] = "renamed".into();
            }
        });
    let r = run_suite(dir.path()).unwrap();
    for c in ["load_store_traits", "window_walks"] {
        let t = &r.categories[c];
        assert_eq!(t.failed, 0, "{c}: {:?}", &t.failures[..t.failures.len().min(3)]);
        assert!(t.passed > 3000, "{c}: {}", t.passed);
    }
}

#[test]
fn a_wrong_number_is_caught() {
    let text = std::fs::read_to_string(vectors().join("descriptors.json")).unwrap();
    // morton_8x8: the entry for z = 3 must have offset 9 ((1,1) in an 8×8 row-major tile)
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let d = v["descriptors"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|d| d["name"] == "morton_8x8")
        .unwrap();
    assert_eq!(d["entries"][3]["offset"], 9);
    d["entries"][3]["offset"] = 10.into();
    let dir = scratch("wrong");
    std::fs::write(dir.path().join("descriptors.json"), serde_json::to_string(&v).unwrap())
        .unwrap();
    let r = run_suite(dir.path()).unwrap();
    let t = &r.categories["descriptors"];
    assert_eq!(t.failed, 2, "{:?}", t.failures); // offset and coordinate offset
    assert!(
        t.failures[0].contains("morton_8x8 idx [3]: offset: expected 10, got 9"),
        "{}",
        t.failures[0]
    );
}

#[test]
fn a_corrupt_file_is_reported_not_panicked() {
    let dir = scratch("corrupt");
    std::fs::write(
        dir.path().join("descriptors.json"),
        r#"{"meta": {"category": "tensor_descriptor"}, "descriptors": [{"name": 3}]}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("junk.json"), "not json").unwrap();
    let r = run_suite(dir.path()).unwrap();
    assert_eq!(r.unreadable.len(), 2, "{:?}", r.unreadable);
    assert!(r.unreadable.iter().any(|u| u.contains("not a valid conformance file")));
    assert_eq!(r.failed(), 2);
}

#[test]
fn an_invalid_transform_fails_with_its_error() {
    let dir = scratch("invalid");
    let text = r#"{"meta": {"category": "tensor_descriptor"}, "descriptors": [{
        "name": "bad_merge", "top_lengths": [0], "ndim_top": 1, "ndim_hidden": 2, "element_space_size": 1,
        "guaranteed_vector_lengths": [-1, -1], "guaranteed_vector_strides": [-1, -1],
        "top_safe_vector_lengths": [-1], "top_safe_vector_strides": [-1],
        "adaptor": {"ndim_hidden": 2, "bottom_hidden_ids": [0], "top_hidden_ids": [1], "transforms": [
            {"transform": {"kind": "unmerge", "up_lengths": [0], "use_24bit": false}, "lower_hidden_ids": [0], "upper_hidden_ids": [1]}]},
        "entries": [], "walks": null}]}"#;
    std::fs::write(dir.path().join("d.json"), text).unwrap();
    let r = run_suite(dir.path()).unwrap();
    let t = &r.categories["descriptors"];
    assert_eq!(t.failed, 1);
    assert!(
        t.failures[0].contains("unmerge transform: up_lengths[0] = 0 is invalid"),
        "{}",
        t.failures[0]
    );
}

/// Sizes in a vector file are data: a length of 3·10⁹ (or an overflowing product) in any
/// category is a failure naming the file, the entry and the field — never an allocation of
/// that size, an overflow panic or a billion-step loop.
#[test]
fn huge_sizes_in_files_are_named_failures() {
    let files = [
        "descriptors.json",
        "distributions.json",
        "load_store_traits.json",
        "window_walks.json",
        "sfc.json",
    ];
    let big = serde_json::json!(3_000_000_000i64);
    let dir = with_files("huge", &files, |f, v| match f {
        "descriptors.json" => {
            let d = &mut v["descriptors"];
            assert_eq!(d[0]["name"], "naive_rowmajor_4x6_vec4");
            d[0]["top_lengths"][0] = big.clone();
            d[1]["adaptor"]["ndim_hidden"] = big.clone();
            // an embed of 3·10⁹ × 3·10⁹ (column-major): its index range overflows i64
            d[2]["adaptor"]["transforms"][0]["transform"]["up_lengths"] =
                serde_json::json!([3_000_000_000i64, 3_000_000_000i64]);
            d[2]["adaptor"]["transforms"][0]["transform"]["coefficients"] =
                serde_json::json!([1, 4_000_000_000i64]);
        }
        "distributions.json" => {
            let d = &mut v["distributions"];
            assert_eq!(d[0]["name"], "simple_2x2_rows");
            d[0]["encoding"]["hs_lengthss"][0][0] = big.clone(); // valid, 6·10⁹ threads
            assert_eq!(d[8]["name"], "edge_doc_rowmajor_dup_p");
            d[8]["x_lengths"] = serde_json::json!([3_000_000_000i64, 3_000_000_000i64]);
        }
        "load_store_traits.json" => {
            let e = &mut v["traits"][0];
            e["encoding"] = serde_json::json!({"rs_lengths": [], "hs_lengthss": [[3_000_000_000i64, 2], [2]],
                "ps_to_rhss_major": [[1]], "ps_to_rhss_minor": [[0]],
                "ys_to_rhs_major": [1, 2], "ys_to_rhs_minor": [1, 0]});
        }
        "window_walks.json" => {
            let w = &mut v["walks"][0];
            w["tensor_lengths"] = serde_json::json!([3_000_000_000i64, 40]);
        }
        "sfc.json" => {
            let c = &mut v["configs"][0];
            c["tensor_lengths"] = serde_json::json!([3_000_000_000i64]);
            c["num_access_compiles"] = false.into();
        }
        _ => {}
    });
    let r = run_suite(dir.path()).unwrap();
    let has = |cat: &str, what: &str| {
        let t = &r.categories[cat];
        assert!(
            t.failures.iter().any(|f| f.contains(what)),
            "{cat}: no {what:?} in {:#?}",
            t.failures
        );
    };
    has(
        "descriptors",
        "descriptors.json: entry \"naive_rowmajor_4x6_vec4\": top_lengths = [3000000000, 6] is \
         invalid: it describes 18000000000 indices; the checker enumerates at most 16777216 per entry",
    );
    has("descriptors", "ndim_hidden = 3000000000 is invalid: an adaptor has at most 1048576");
    has(
        "descriptors",
        "naive_colmajor_4x6: could not build the adaptor: embed transform: the lower index range \
         Σ (up_length − 1)·coefficient overflows i64: up_lengths [3000000000, 3000000000], \
         coefficients [1, 4000000000]",
    );
    has(
        "distributions",
        "simple_2x2_rows: ps enumerate every P row-major: the file lists 2 indices, the lengths \
         [3000000000] have 3000000000",
    );
    has(
        "load_store_traits",
        "load_store_traits.json: entry \"simple_2x2_rows fp32\": encoding.hs_lengthss[0]",
    );
    has(
        "window_walks",
        "window_walks.json: entry \"gemm_a_fp16_100x40_origin_0_32\": the element space",
    );
    has("sfc", "the curve has 3000000000 accesses; the checker walks at most 16777216 per config");
    // the refused distribution with an absurd x_lengths: judged from the file's holders alone
    let d = &r.categories["distributions"];
    assert!(
        !d.failures.iter().any(|f| f.starts_with("edge_doc_rowmajor_dup_p:")),
        "{:#?}",
        d.failures
    );
}
