//! Shared helpers of the end-to-end tests of the `tilekit` binary.
#![allow(dead_code)]

use std::process::Command;

/// Runs the binary: (exit code, stdout, stderr).
pub fn tilekit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tilekit")).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
