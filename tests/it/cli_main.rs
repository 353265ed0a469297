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

// ------------------------------------------------------------- every `unsafe`, listed (issue 30)

/// One `.rs` file's `unsafe` code: blocks (`unsafe {`), functions (`unsafe fn NAME`) and impls
/// (`unsafe impl`), with the 1-based line of each block.
#[derive(Debug, Default, PartialEq)]
struct UnsafeCount {
    blocks: Vec<usize>,
    fns: usize,
    impls: usize,
}

/// The lines of `text` with comments and the contents of string and char literals blanked
/// (strings may span lines; raw strings are not special-cased: none hold a quote in `unsafe`
/// context), so that only code is searched.
fn code_lines(text: &str) -> Vec<String> {
    let mut in_string = false;
    text.lines()
        .map(|line| {
            let c: Vec<char> = line.chars().collect();
            let mut out = String::new();
            let mut i = 0;
            while i < c.len() {
                if in_string {
                    if c[i] == '\\' {
                        i += 2;
                        continue;
                    }
                    if c[i] == '"' {
                        in_string = false;
                        out.push('"');
                    }
                    i += 1;
                } else if c[i] == '/' && c.get(i + 1) == Some(&'/') {
                    break;
                } else if c[i] == '"' {
                    in_string = true;
                    out.push('"');
                    i += 1;
                } else if c[i] == '\'' && c.get(i + 1) != Some(&'\\') && c.get(i + 2) == Some(&'\'')
                {
                    out.push_str("' '");
                    i += 3;
                } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
                    match c[i + 2..].iter().position(|&x| x == '\'') {
                        Some(end) => {
                            out.push_str("' '");
                            i += end + 3;
                        }
                        None => {
                            out.push('\'');
                            i += 1;
                        }
                    }
                } else {
                    out.push(c[i]);
                    i += 1;
                }
            }
            out
        })
        .collect()
}

/// Counts the `unsafe` of one file; `Err` names an `unsafe` of another kind (a new form to list)
/// or a block without a `// SAFETY` comment on its line or in the 8 lines above it (with no
/// other `unsafe` in between: one comment per block, or per group of blocks it names).
fn count_unsafe(path: &str, text: &str) -> Result<UnsafeCount, String> {
    let raw: Vec<&str> = text.lines().collect();
    let code = code_lines(text);
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut n = UnsafeCount::default();
    for (k, line) in code.iter().enumerate() {
        let mut from = 0;
        while let Some(at) = line[from..].find("unsafe").map(|a| a + from) {
            from = at + "unsafe".len();
            let before = line[..at].chars().next_back();
            let after = line[from..].chars().next();
            if before.is_some_and(is_word) || after.is_some_and(is_word) {
                continue; // unsafe_code, unsafe_op_in_unsafe_fn, …
            }
            let rest = line[from..].trim_start();
            let word = |w: &str| {
                rest.strip_prefix(w).is_some_and(|r| r.starts_with(|c: char| !is_word(c)))
            };
            if rest.starts_with('{') {
                n.blocks.push(k + 1);
                let covered = (k.saturating_sub(8)..=k).rev().try_for_each(|j| {
                    if raw[j].split_once("//").is_some_and(|(_, c)| c.contains("SAFETY")) {
                        return Err(true);
                    }
                    if j < k && code[j].contains("unsafe") {
                        return Err(false);
                    }
                    Ok(())
                });
                if covered != Err(true) {
                    return Err(format!(
                        "{path}:{}: an unsafe block without a // SAFETY comment just above it",
                        k + 1
                    ));
                }
            } else if word("fn") && !rest["fn".len()..].trim_start().starts_with('(') {
                n.fns += 1;
            } else if word("impl") {
                n.impls += 1;
            } else if word("fn") || word("extern") {
                // a function-pointer type (`unsafe fn(…)`, `unsafe extern "C" fn(…)`): calling
                // one needs an unsafe block, counted there
            } else {
                return Err(format!("{path}:{}: an unsafe this test does not know: {line}", k + 1));
            }
        }
    }
    Ok(n)
}

/// Every `.rs` file of the repository (the workspace, fuzz/, build scripts, tests, examples),
/// skipping `target` and hidden folders, relative to the root, sorted.
fn rust_files(root: &std::path::Path) -> Vec<String> {
    let mut out = vec![];
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    stack.push(p);
                }
            } else if name.ends_with(".rs") {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// docs/unsafe.md lists every `unsafe` of the repository with its argument; its table of counts
/// must match the code, so a new `unsafe` (or one removed) cannot land without the list (and
/// every unsafe block must carry its `// SAFETY` comment).
#[test]
fn every_unsafe_is_listed_in_docs_unsafe_md() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = std::collections::BTreeMap::new();
    let mut problems = vec![];
    for f in rust_files(root) {
        let text = std::fs::read_to_string(root.join(&f)).unwrap();
        match count_unsafe(&f, &text) {
            Ok(n) if n != UnsafeCount::default() => {
                found.insert(f, (n.blocks.len(), n.fns, n.impls));
            }
            Ok(_) => {}
            Err(e) => problems.push(e),
        }
    }
    // the table: | `path` | blocks | fns | impls |
    let doc = std::fs::read_to_string(root.join("docs/unsafe.md")).unwrap();
    let mut listed = std::collections::BTreeMap::new();
    for line in doc.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let num = |i: usize| cells[i].parse::<usize>().unwrap_or_else(|_| panic!("{line}"));
        listed.insert(cells[0].trim_matches('`').to_string(), (num(1), num(2), num(3)));
    }
    for (f, n) in &found {
        match listed.get(f) {
            Some(l) if l == n => {}
            Some(l) => problems.push(format!(
                "{f}: (blocks, fns, impls) = {n:?} in the code, {l:?} in docs/unsafe.md"
            )),
            None => {
                problems.push(format!("{f}: {n:?} (blocks, fns, impls), not in docs/unsafe.md"))
            }
        }
    }
    for f in listed.keys().filter(|f| !found.contains_key(*f)) {
        problems.push(format!("{f}: listed in docs/unsafe.md, no unsafe in the code"));
    }
    let total = found.values().fold((0, 0, 0), |t, n| (t.0 + n.0, t.1 + n.1, t.2 + n.2));
    let line =
        format!("{} unsafe blocks, {} unsafe fns, {} unsafe impls", total.0, total.1, total.2);
    if !doc.contains(&line) {
        problems.push(format!("docs/unsafe.md must state the totals: \"{line}\""));
    }
    assert!(problems.is_empty(), "update the code or docs/unsafe.md:\n{}", problems.join("\n"));
}

#[test]
fn the_unsafe_scan_sees_code_not_comments_or_strings() {
    let text = "// unsafe { in a comment }\n\
                let s = \"unsafe { in a string }\"; let c = '\"';\n\
                #![forbid(unsafe_code)]\n\
                // SAFETY: a reason\n\
                let x = unsafe { f() };\n\
                pub unsafe fn g() {}\n\
                type F = Option<unsafe extern \"C\" fn(*mut u8)>;\n\
                unsafe impl Send for X {}\n";
    let n = count_unsafe("t.rs", text).unwrap();
    assert_eq!(n, UnsafeCount { blocks: vec![5], fns: 1, impls: 1 });
    // a block whose comment is missing, or belongs to another block
    let e = count_unsafe("t.rs", "let x = 1;\nlet y = unsafe { f() };\n").unwrap_err();
    assert!(e.contains("t.rs:2: an unsafe block without"), "{e}");
    let two = "// SAFETY: a reason\nlet x = unsafe { f() };\nlet y = unsafe { g() };\n";
    assert!(count_unsafe("t.rs", two).unwrap_err().contains("t.rs:3:"));
    assert!(count_unsafe("t.rs", "unsafe trait T {}\n").unwrap_err().contains("does not know"));
}
