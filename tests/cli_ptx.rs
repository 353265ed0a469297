//! `tilekit ptx`: the generated PTX names the tile operations it comes from.

mod common;

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
    // (crates/tilekit-ops/tests/run.rs compares them structurally)
    let (code, small, _) = tilekit(&["ptx", "transpose", "--shape", "64x64", "--ir"]);
    assert_eq!(code, 0);
    let (code, big, _) = tilekit(&["ptx", "transpose", "--shape", "16384x16384", "--ir"]);
    assert_eq!(code, 0);
    // the lengths are run-time parameters: only the grid line differs
    assert_eq!(small.lines().skip(1).collect::<Vec<_>>(), big.lines().skip(1).collect::<Vec<_>>());
    assert!(small.starts_with("// grid [1, 1, 1]\n") && big.starts_with("// grid [256, 256, 1]\n"));
}
