//! `tilekit conformance` on the published vectors, and proof that the checker can fail.

use std::path::PathBuf;

use tilekit_cli::conformance::run_suite;

fn vectors() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tilekit-conf-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
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
fn with_files(name: &str, files: &[&str], edit: impl Fn(&str, &mut serde_json::Value)) -> PathBuf {
    let dir = scratch(name);
    for f in files {
        let text = std::fs::read_to_string(vectors().join(f)).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        edit(f, &mut v);
        std::fs::write(dir.join(f), serde_json::to_string(&v).unwrap()).unwrap();
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
    let r = run_suite(&dir).unwrap();
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
    let r = run_suite(&dir).unwrap();
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
    let r = run_suite(&dir).unwrap();
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
    std::fs::write(dir.join("descriptors.json"), serde_json::to_string(&v).unwrap()).unwrap();
    let r = run_suite(&dir).unwrap();
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
        dir.join("descriptors.json"),
        r#"{"meta": {"category": "tensor_descriptor"}, "descriptors": [{"name": 3}]}"#,
    )
    .unwrap();
    std::fs::write(dir.join("junk.json"), "not json").unwrap();
    let r = run_suite(&dir).unwrap();
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
    std::fs::write(dir.join("d.json"), text).unwrap();
    let r = run_suite(&dir).unwrap();
    let t = &r.categories["descriptors"];
    assert_eq!(t.failed, 1);
    assert!(
        t.failures[0].contains("unmerge transform: up_lengths[0] = 0 is invalid"),
        "{}",
        t.failures[0]
    );
}
