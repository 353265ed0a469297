//! `tilekit ptx`: the generated PTX names the tile operations it comes from.

use crate::common;

use common::tilekit;

#[test]
fn ptx_is_commented_with_tile_operations() {
    let (code, out, err) = tilekit(&["ptx", "transpose", "--shape", "64x64"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(".visible .entry transpose("), "{out}");
    assert!(
        out.contains("// tile window load global 0: 4 accesses of 4 elements along Y1"),
        "{out}"
    );
    assert!(out.contains("ld.global.v4.f32") && out.contains("st.shared.v4.f32"), "{out}");
    let (code, ir, _) = tilekit(&["ptx", "row_sum", "--shape", "4x100", "--ir"]);
    assert_eq!(code, 0);
    assert!(ir.contains("// warp reduce (add) with butterfly shuffles"), "{ir}");
}

#[test]
fn bad_target_is_named() {
    let (code, _, err) = tilekit(&["ptx", "copy", "--shape", "4x4", "--target", "sm_75"]);
    assert_eq!(code, 2);
    assert!(err.contains("--target \"sm_75\" is invalid"), "{err}");
}

#[test]
fn huge_shapes_print_at_once_without_data() {
    // the examples: `copy 2147483647x1` used 24 GB, `transpose 16384x16384` 23 s and
    // 7.3 GB when printing ran the host side; only the kernel is built now
    let t = std::time::Instant::now();
    for (args, grid, entry) in [
        (&["ptx", "copy", "--shape", "2147483647x1"][..], "// grid [16777216, 1, 1]", "copy"),
        (&["ptx", "transpose", "--shape", "16384x16384"], "// grid [256, 256, 1]", "transpose"),
        (
            &["ptx", "softmax", "--shape", "131071x16384", "--dtype", "bf16"],
            "// grid [131071, 1, 1]",
            "softmax",
        ),
        (
            // rows longer than one block's registers are streamed by a cluster of 8 blocks
            &["ptx", "softmax", "--shape", "16383x131072", "--ir"],
            "// grid [131064, 1, 1]",
            "softmax_stream_cluster",
        ),
        // the Hopper kernel, persistent over the planning backend's 4 multiprocessors
        (&["ptx", "gemm", "--shape", "32768x32768x32", "--ir"], "// grid [4, 1, 1]", "gemm_sm90"),
        // the coverage kernels of the asynchronous machinery
        (&["ptx", "bulk_pipeline", "--shape", "2"], "// grid [6, 1, 1]", "bulk_pipeline_2"),
        (&["ptx", "multicast_pair", "--shape", "1"], "// grid [10, 1, 1]", "multicast_pair"),
        (&["ptx", "warp_ring", "--shape", "3"], "// grid [4, 1, 1]", "warp_ring_3"),
        (&["ptx", "warp_ring", "--shape", "2", "--ir"], "// grid [4, 1, 1]", "warp_ring_2"),
    ] {
        let (code, out, err) = tilekit(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.starts_with(&format!("{grid}\n")), "{args:?}: {}", &out[..out.len().min(200)]);
        let named = [format!(".entry {entry}("), format!("kernel @{entry}(")];
        assert!(named.iter().any(|n| out.contains(n.as_str())), "{args:?}");
    }
    // generous for a debug build on a busy machine; the old path took minutes or was killed
    assert!(t.elapsed().as_secs() < 30, "took {:?}", t.elapsed());
}

#[test]
fn printing_is_what_running_builds() {
    // same kernel text for a shape small enough to run: the plan is the launched kernel
    // (crates/tilekit-ops/tests/it/run.rs compares them structurally)
    let (code, small, _) = tilekit(&["ptx", "transpose", "--shape", "64x64", "--ir"]);
    assert_eq!(code, 0);
    let (code, big, _) = tilekit(&["ptx", "transpose", "--shape", "16384x16384", "--ir"]);
    assert_eq!(code, 0);
    // the lengths are run-time parameters: only the grid line differs
    assert_eq!(small.lines().skip(1).collect::<Vec<_>>(), big.lines().skip(1).collect::<Vec<_>>());
    assert!(small.starts_with("// grid [1, 1, 1]\n") && big.starts_with("// grid [256, 256, 1]\n"));
}

#[test]
fn shapes_and_default_dtypes_are_read_as_run_reads_them() {
    // `ptx attention` took the head dim alone as its shape where `run attention` takes
    // BxSQxSKxHxHKVxD, and its help gave f32 as the default dtype (issue 31, point 6)
    let shape = "2x77x300x8x2x128";
    let (code, run, err) = tilekit(&["run", "attention", "--shape", "1x77x300x4x2x64"]);
    assert_eq!(code, 0, "{err}");
    assert!(run.starts_with("attention 1x77x300x4x2x64 bf16: "), "{run}");
    for kernel in ["attention", "attention_causal"] {
        let (code, out, err) = tilekit(&["ptx", kernel, "--shape", shape]);
        assert_eq!(code, 0, "{kernel}: {err}");
        assert!(out.contains(".visible .entry attention"), "{kernel}");
        let (_, bf16, _) = tilekit(&["ptx", kernel, "--shape", shape, "--dtype", "bf16"]);
        assert_eq!(out, bf16, "{kernel}: the default dtype is run's, bf16");
        let (_, f16, _) = tilekit(&["ptx", kernel, "--shape", shape, "--dtype", "f16"]);
        assert_ne!(out, f16, "{kernel}");
        // a head dim alone is not an attention shape, for ptx as for run
        let (code, _, err) = tilekit(&["ptx", kernel, "--shape", "128"]);
        assert_eq!(code, 2, "{kernel}: {err}");
        let (run_code, _, _) = tilekit(&["run", kernel, "--shape", "128"]);
        assert_eq!(run_code, 2);
    }
    // every kernel's default dtype is run's
    for (kernel, shape, dtype) in
        [("gemm", "64x64x32", "f16"), ("copy", "4x4", "f32"), ("softmax", "4x300", "f32")]
    {
        let (_, default, _) = tilekit(&["ptx", kernel, "--shape", shape]);
        let (_, named, _) = tilekit(&["ptx", kernel, "--shape", shape, "--dtype", dtype]);
        assert_eq!(default, named, "{kernel}");
        let (_, out, _) = tilekit(&["run", kernel, "--shape", shape]);
        assert!(out.starts_with(&format!("{kernel} {shape} {dtype}: ")), "{out}");
    }
    // and the help says so, in the same words as run's
    let (_, ptx_help, _) = tilekit(&["ptx", "--help"]);
    let (_, run_help, _) = tilekit(&["run", "--help"]);
    for words in [
        "Problem shape, e.g. 1000x777 (gemm: MxNxK; attention: BxSQxSKxHxHKVxD)",
        "Element type (default f32; f16 for gemm, bf16 for attention)",
    ] {
        assert!(ptx_help.contains(words) && run_help.contains(words), "{words}\n{ptx_help}");
    }
}
