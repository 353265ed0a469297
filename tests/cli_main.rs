//! The main job (`tilekit` with no command) finds the conformance vectors beside the repository
//! whatever the current folder, and fails loudly when they are not there.

use std::process::Command;

fn main_job(cwd: &std::path::Path, vectors: Option<&std::path::Path>) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tilekit"));
    cmd.current_dir(cwd).env_remove("TILEKIT_CONFORMANCE");
    if let Some(v) = vectors {
        cmd.env("TILEKIT_CONFORMANCE", v);
    }
    let out = cmd.output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The shared folder beside this repository.
fn shared() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance")
}

#[test]
fn runs_conformance_from_another_folder() {
    // a folder with no ../shared beside it: the vectors are found from the repository
    let elsewhere = tempfile::tempdir().unwrap();
    let deeper = elsewhere.path().join("a");
    std::fs::create_dir(&deeper).unwrap();
    let (code, out, err) = main_job(&deeper, None);
    assert_eq!(code, 0, "{out}{err}");
    let want = std::fs::canonicalize(shared()).unwrap();
    let first = out.lines().next().unwrap_or_default();
    let found = first.strip_prefix("conformance vectors: ").unwrap_or_else(|| panic!("{out}"));
    assert_eq!(std::fs::canonicalize(found).unwrap(), want);
    assert!(out.contains("descriptors: ") && out.contains(" passed, 0 failed"), "{out}");
    assert!(out.contains("kernels on the"), "{out}");
}

#[test]
fn runs_from_src_as_the_issue_did() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (code, out, err) = main_job(&src, None);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("window_walks: ") && !out.contains("skipped"), "{out}");
}

#[test]
fn missing_vectors_fail_loudly() {
    let empty = tempfile::tempdir().unwrap();
    let (code, out, err) = main_job(empty.path(), Some(empty.path()));
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(
        err.trim_end(),
        format!(
            "tilekit: error: conformance vectors not found: looked at {}; put the shared folder \
             beside the repository (../shared/conformance) or set TILEKIT_CONFORMANCE to the folder",
            empty.path().display()
        )
    );
}

#[test]
fn a_folder_of_other_vectors_is_used_as_given() {
    // TILEKIT_CONFORMANCE picks the folder: one published file copied there is all that runs
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(shared().join("sfc.json"), dir.path().join("sfc.json")).unwrap();
    let (code, out, err) = main_job(dir.path(), Some(dir.path()));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sfc: ") && !out.contains("descriptors: "), "{out}");
}
