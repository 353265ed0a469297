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
