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
