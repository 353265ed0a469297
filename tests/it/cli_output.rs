//! Output hygiene of the binary: a closed stdout pipe ends a command quietly with exit code 0,
//! a full disk is exit code 1 with a message on stderr; never a panic.

use crate::common;

use std::io::Read;
use std::process::{Command, Stdio};

/// Runs the binary with its stdout a pipe whose read end is closed at once: every write it makes
/// fails with EPIPE. Returns (exit code, stderr).
fn with_closed_stdout(args: &[&str]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilekit"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    drop(child.stdout.take());
    let mut err = String::new();
    child.stderr.take().expect("piped").read_to_string(&mut err).expect("stderr");
    let status = child.wait().expect("waits");
    (status.code().unwrap_or(-1), err)
}

/// Runs the binary with stdout on `/dev/full` (ENOSPC on every write): (exit code, stderr).
fn with_full_disk(args: &[&str]) -> (i32, String) {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let out =
        Command::new(env!("CARGO_BIN_EXE_tilekit")).args(args).stdout(full).output().expect("runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

const COMMANDS: &[&[&str]] = &[
    &["ptx", "transpose", "--shape", "64x64"],
    &["ptx", "softmax", "--shape", "4x16384", "--dtype", "bf16", "--ir"],
    &["run", "copy", "--shape", "40x50"],
    &["--help"],
    &["run", "--help"],
    &["--version"],
];

#[test]
fn closed_pipe_is_a_quiet_success() {
    for args in COMMANDS {
        let (code, err) = with_closed_stdout(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

#[test]
fn full_disk_is_exit_1_with_a_message() {
    for args in COMMANDS {
        let (code, err) = with_full_disk(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(
            err.trim_end(),
            "tilekit: error: writing to standard output: No space left on device (os error 28)",
            "{args:?}"
        );
    }
}

#[test]
fn readers_that_stop_early_through_a_shell_pipe() {
    // the forms: `tilekit … | head -c 10`, and a reader that is gone before the first
    // write (`| true`); bash's PIPESTATUS gives tilekit's own exit code
    let bin = env!("CARGO_BIN_EXE_tilekit");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "'{bin}' ptx softmax --shape 4x16384 --dtype bf16 | head -c 10; \
             echo \" status ${{PIPESTATUS[0]}}\"; \
             '{bin}' run copy --shape 40x50 | true; echo \"status ${{PIPESTATUS[0]}}\"; \
             '{bin}' --help | true; echo \"status ${{PIPESTATUS[0]}}\""
        ))
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout, "// grid [4 status 0\nstatus 0\nstatus 0\n", "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn the_main_job_into_head_stops_quietly() {
    // `tilekit | head -1`: the bare command (conformance, then kernels) loses its reader after
    // the first line; it exits 0 without a panic or a message
    let bin = env!("CARGO_BIN_EXE_tilekit");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("'{bin}' | head -1; echo \"status ${{PIPESTATUS[0]}}\""))
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with("conformance vectors: "), "{stdout}");
    assert_eq!(lines[1], "status 0", "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn a_closed_stderr_does_not_panic_either() {
    // usage errors go to stderr; a full stderr cannot be reported but must not panic
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let out = Command::new(env!("CARGO_BIN_EXE_tilekit"))
        .args(["run", "copy", "--shape", "4xq"])
        .stderr(full)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let (code, _, err) = common::tilekit(&["run", "copy", "--shape", "4xq"]);
    assert_eq!(code, 2);
    assert!(err.contains("--shape \"4xq\" is invalid"), "{err}");
}
