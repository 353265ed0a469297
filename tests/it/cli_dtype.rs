//! `--dtype` spellings: f32/fp32, f16/fp16 and bf16 mean the same to every kernel command.

use crate::common;

use common::tilekit;

#[test]
fn aliases_give_the_same_kernel() {
    for (name, alias) in [("f32", "fp32"), ("f16", "fp16")] {
        for cmd in ["ptx", "run"] {
            let (c1, a, e1) = tilekit(&[cmd, "copy", "--shape", "40x64", "--dtype", name]);
            let (c2, b, e2) = tilekit(&[cmd, "copy", "--shape", "40x64", "--dtype", alias]);
            assert_eq!((c1, c2), (0, 0), "{cmd} {name}/{alias}: {e1}{e2}");
            if cmd == "ptx" {
                assert_eq!(a, b, "{cmd}: {name} and {alias} differ");
            } else {
                // the summary names the type, not the time
                let head = |s: &str| s.split(':').next().unwrap_or_default().to_string();
                assert_eq!(head(&a), format!("copy 40x64 {name}"));
                assert_eq!(head(&a), head(&b));
            }
        }
    }
    // fp16 is really f16: the IR loads 8 f16 per access (4 f32 for fp32)
    let (code, ir, err) = tilekit(&["ptx", "copy", "--shape", "40x64", "--dtype", "fp16", "--ir"]);
    assert_eq!(code, 0, "{err}");
    assert!(ir.contains("x: ptr<global f16>") && ir.contains("ld.global.v8.f16"), "{ir}");
    let (_, ir, _) = tilekit(&["ptx", "copy", "--shape", "40x64", "--dtype", "fp32", "--ir"]);
    assert!(ir.contains("x: ptr<global f32>") && ir.contains("ld.global.v4.f32"), "{ir}");
    let (code, out, err) = tilekit(&["run", "softmax", "--shape", "4x300", "--dtype", "bf16"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("softmax 4x300 bf16:"), "{out}");
}

#[test]
fn help_lists_the_spellings() {
    let (_, out, _) = tilekit(&["run", "--help"]);
    assert!(out.contains("f32:  32-bit float (also fp32)"), "{out}");
    assert!(out.contains("f16:  16-bit IEEE float (also fp16)"), "{out}");
    assert!(out.contains("bf16: bfloat16"), "{out}");
}

#[test]
fn an_unknown_spelling_lists_the_valid_ones() {
    let (code, _, err) = tilekit(&["ptx", "copy", "--shape", "4x4", "--dtype", "half"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value 'half' for '--dtype <DTYPE>'"), "{err}");
    assert!(err.contains("[possible values: f32, f16, bf16]"), "{err}");
}

#[test]
fn layout_commands_take_the_same_spellings() {
    // show and banks parse --dtype with the kernel commands' table (plus fp8 and f64)
    let enc = "H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]";
    for (name, alias, access) in [
        ("f32", "fp32", "col-vec4"),
        ("f16", "fp16", "col-vec8"),
        ("f64", "fp64", "col-vec2"),
        ("fp8", "f8", "col-vec16"),
    ] {
        let (c1, a, e1) = tilekit(&["show", enc, "--dtype", name]);
        let (c2, b, e2) = tilekit(&["show", enc, "--dtype", alias]);
        assert_eq!((c1, c2), (0, 0), "show {name}/{alias}: {e1}{e2}");
        assert_eq!(a, b, "show: {name} and {alias} differ");
        let banks = |d: &str| {
            tilekit(&[
                "banks",
                "--layout",
                "row-major",
                "--tile",
                "32x32",
                "--dtype",
                d,
                "--access",
                access,
            ])
        };
        let ((c1, a, e1), (c2, b, e2)) = (banks(name), banks(alias));
        // the bank model has no 1-byte accesses: fp8 is refused, under either spelling alike
        let want = if name == "fp8" { 2 } else { 0 };
        assert_eq!((c1, c2), (want, want), "banks {name}/{alias}: {e1}{e2}");
        assert_eq!(e1.replace(alias, name), e2.replace(alias, name));
        assert_eq!(a, b, "banks: {name} and {alias} differ");
    }
    let (code, _, err) = tilekit(&["banks", "--layout", "row-major", "--dtype", "int4"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--dtype \"int4\" is invalid: one of f32 (fp32), f16 (fp16), bf16"),
        "{err}"
    );
}
