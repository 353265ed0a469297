//! The kernel-author guide quotes its code from the examples, each block with the lines it came
//! from (`<sub>examples/layernorm.rs, lines 51–80</sub>`); the examples are compiled and tested,
//! so a quote that still matches its lines is code that builds and passes. This test fails when
//! an example changes under a quote.

use std::path::Path;

/// The lines without their common leading whitespace, outer blank lines dropped.
fn dedent(lines: &[&str]) -> Vec<String> {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<String> =
        lines.iter().map(|l| l.get(indent..).unwrap_or("").trim_end().to_string()).collect();
    while out.first().is_some_and(|l| l.is_empty()) {
        out.remove(0);
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

/// `<sub>FILE, lines A–B</sub>` → (FILE, A, B).
fn citation(line: &str) -> Option<(String, usize, usize)> {
    let inner = line.trim().strip_prefix("<sub>")?.strip_suffix("</sub>")?;
    let (file, range) = inner.split_once(", lines ")?;
    let (a, b) = range.split_once('–')?;
    Some((file.to_string(), a.parse().ok()?, b.parse().ok()?))
}

#[test]
fn every_quoted_block_matches_its_example_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join("docs/write-your-own-kernel.md")).unwrap();
    let lines: Vec<&str> = guide.lines().collect();
    let mut checked = 0;
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "```rust" {
            i += 1;
            continue;
        }
        let start = i + 1;
        let end = start + lines[start..].iter().position(|l| l.trim() == "```").unwrap();
        let next = lines[end + 1..].iter().find(|l| !l.trim().is_empty());
        if let Some((file, a, b)) = next.and_then(|l| citation(l)) {
            let src = std::fs::read_to_string(root.join(&file)).unwrap();
            let src: Vec<&str> = src.lines().collect();
            assert!(a >= 1 && b <= src.len() && a <= b, "{file} has no lines {a}–{b}");
            assert_eq!(
                dedent(&lines[start..end]),
                dedent(&src[a - 1..b]),
                "the guide's block at its line {} is not {file}, lines {a}–{b}",
                start + 1
            );
            checked += 1;
        }
        i = end + 1;
    }
    assert!(checked >= 12, "only {checked} quoted blocks found");
}
