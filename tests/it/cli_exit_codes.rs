//! Exit codes by category: 0 success, 1 a check or run failed (no GPU for a GPU command, a
//! closed stdout aside: see cli_output.rs), 2 usage or input errors — with every error on
//! stderr and nothing on stdout.

use crate::common;

use common::tilekit;

fn gpu_present() -> bool {
    tilekit(&["gpu"]).0 == 0
}

#[test]
fn success_is_0() {
    for args in [
        &["run", "copy", "--shape", "4x4"][..],
        &["ptx", "copy", "--shape", "4x4"],
        &["--help"],
        &["--version"],
        &["run", "--help"],
        &["help", "ptx"],
    ] {
        let (code, out, err) = tilekit(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!out.is_empty() && err.is_empty(), "{args:?}: {out}{err}");
    }
}

#[test]
fn usage_errors_are_2_on_stderr() {
    // clap's own usage errors (missing, unknown, malformed) and values the library refuses
    for (args, says) in [
        (&["nosuchcommand"][..], "unrecognized subcommand 'nosuchcommand'"),
        (&["run"], "required arguments were not provided"),
        (&["run", "copy"], "--shape <SHAPE>"),
        (&["run", "copy", "--shape", "4x4", "--bogus"], "unexpected argument '--bogus'"),
        (&["run", "copy", "--shape", "4x4", "--seed", "x"], "invalid value 'x' for '--seed"),
        (&["run", "copy", "--shape", "4x4", "--backend", "tpu"], "invalid value 'tpu'"),
        (&["run", "copy", "--shape", "4x4", "--dtype", "int8"], "invalid value 'int8'"),
        (&["ptx", "nope", "--shape", "4x4"], "invalid value 'nope' for '<KERNEL>'"),
        (&["bench", "nope"], "invalid value 'nope' for '[KERNEL]'"),
        (&["run", "copy", "--shape", "0x4"], "--shape \"0x4\" is invalid"),
        (&["run", "transpose", "--shape", "4x4x4"], "transpose: shape = [4, 4, 4] is invalid"),
        (
            &["run", "softmax", "--shape", "4x16385", "--dtype", "f16"],
            "softmax: dtype = f16 is invalid",
        ),
        (&["ptx", "gemm", "--shape", "64x64"], "gemm: shape = [64, 64] is invalid: [M, N, K]"),
        (&["ptx", "copy", "--shape", "65536x65536"], "4294967296 elements, more than 2^31-1"),
        (&["ptx", "copy", "--shape", "4x4", "--target", "sm_75"], "--target \"sm_75\" is invalid"),
    ] {
        let (code, out, err) = tilekit(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: stdout {out}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_missing_gpu_is_1_on_stderr() {
    if gpu_present() {
        return; // the GPU commands run: cli_gpu.rs checks them
    }
    for (args, command) in [
        (&["gpu"][..], "gpu"),
        (&["selftest"], "selftest"),
        (&["bench", "copy", "--mib", "1", "--reps", "1"], "bench"),
        (&["bench", "launch"], "bench launch"),
        (&["tune"], "tune"),
        (&["run", "copy", "--shape", "4x4", "--backend", "gpu"], "run --backend gpu"),
    ] {
        let (code, out, err) = tilekit(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(
            err.starts_with(&format!("tilekit: error: no usable GPU for `{command}`: ")),
            "{err}"
        );
    }
}

#[test]
fn missing_conformance_vectors_are_1() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("conformance");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tilekit"))
        .env("TILEKIT_CONFORMANCE", &missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("looked at {}", missing.display())), "{err}");
}

#[test]
fn conformance_on_a_folder_without_vectors_is_1() {
    // the table: "conformance vectors missing" is 1, for `tilekit conformance DIR` as for the
    // main job; a folder that does not exist and one with no vector file alike
    let empty = tempfile::tempdir().unwrap();
    let empty_dir = empty.path().to_str().unwrap().to_string();
    for (dir, says) in [
        ("/nonexistent".to_string(), "No such file or directory".to_string()),
        (empty_dir.clone(), "the folder holds no conformance file".to_string()),
    ] {
        let (code, out, err) = tilekit(&["conformance", &dir]);
        assert_eq!(code, 1, "{dir}: {err}");
        assert!(out.is_empty(), "{dir}: {out}");
        assert!(
            err.starts_with(&format!("tilekit: error: conformance vectors not found in {dir}: ")),
            "{err}"
        );
        assert!(err.contains(&says), "{err}");
    }
}

/// Runs the binary with stdout on `/dev/full` (ENOSPC on every write): (exit code, stderr).
fn with_stdout_full(args: &[&str]) -> (i32, String) {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tilekit"))
        .args(args)
        .stdout(full)
        .output()
        .expect("runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_full_disk_is_1_for_stdout_and_for_output_files_alike() {
    // the table: "stdout not writable (a full disk)" is 1; an --svg or --json FILE on a full
    // disk is the same failure and gets the same code (it was 2, as if the input were wrong)
    let (code, err) = with_stdout_full(&["morton", "--bits", "2"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err.trim_end(),
        "tilekit: error: writing to standard output: No space left on device (os error 28)"
    );
    let enc = "H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]";
    for args in [
        &["morton", "--bits", "2", "--svg", "/dev/full"][..],
        &["sfc", "--lengths", "4,8", "--svg", "/dev/full"],
        &["show", enc, "--svg", "/dev/full"],
    ] {
        let (code, out, err) = tilekit(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(!out.contains("wrote /dev/full"), "{args:?}: {out}");
        assert_eq!(
            err.trim_end(),
            "tilekit: error: writing /dev/full: No space left on device (os error 28)",
            "{args:?}"
        );
    }
}

#[test]
fn an_unreadable_input_file_is_2() {
    // reading is an input error: the file named is what is wrong, not the run
    let (code, out, err) = tilekit(&["show", "--from", "/nonexistent.json", "--name", "x"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.starts_with("tilekit: error: /nonexistent.json: "), "{err}");
}

#[test]
fn the_host_memory_guard_counts_the_interpreters_copies() {
    // softmax 1000x1000 f32: x, y and the reference are 4 MB each; the run also holds the
    // interpreter's copies of x and (twice) y, the race map and the process's own state at
    // its peak. The old estimate (x, y, reference, race map: 12.3 MB) passed a 16 MiB limit
    // and the run then used more; now it is refused before anything is allocated, with the
    // estimate and the limit (an input the library refuses: exit code 2).
    let run = |limit: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tilekit"))
            .args(["run", "softmax", "--shape", "1000x1000"])
            .env("TILEKIT_HOST_MEMORY_LIMIT", limit)
            .output()
            .unwrap()
    };
    let out = run("16M");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert!(
        err.starts_with("tilekit: error: softmax: softmax 1000x1000 f32: the run needs "),
        "{err}"
    );
    assert!(
        err.contains(
            " of host memory (inputs 3.8 MiB, reference 3.8 MiB, outputs 3.8 MiB, interpreter \
             copies 11.4 MiB, race map 244.1 KiB, process and interpreter state "
        ),
        "{err}"
    );
    assert!(err.contains("), over the limit of 16.0 MiB (TILEKIT_HOST_MEMORY_LIMIT=16M)"), "{err}");
    // with room for the peak the same run passes
    let out = run("1G");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn an_empty_conformance_file_is_named_empty() {
    // it used to read "no meta.category: EOF while parsing a value at line 1 column 0"
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("empty.json");
    std::fs::write(&file, "").unwrap();
    let (code, out, err) = tilekit(&["conformance", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains(&format!("UNREADABLE {}: the file is empty\n", file.display())), "{out}");
}
