//! Tells this crate's tests which NVIDIA tools they can use, at build time, so that a test that
//! needs one is reported as ignored where the tool is missing instead of passing without its
//! check (docs/testing.md):
//!
//! * `cfg(has_ptxas)`: `TILEKIT_PTXAS` is set, or `ptxas --version` runs (the PATH as it is when
//!   this crate is built; `TILEKIT_PTXAS` is the reliable way), or `TILEKIT_REQUIRE_PTXAS` is set
//!   (CI: then the tests run, and fail if the assembler is missing);
//! * `cfg(has_cuobjdump)`: `has_ptxas` and a disassembler for the SASS tests: `TILEKIT_CUOBJDUMP`
//!   is set, or `cuobjdump --version` runs, or `TILEKIT_REQUIRE_PTXAS` is set.
//!
//! Nothing else of the crate depends on these cfgs. tilekit-ops and tilekit-cuda build with
//! this same script (`build = "../tilekit-ptx/build.rs"` in their Cargo.toml).

use std::process::Command;

fn runs(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

fn main() {
    // (no rerun-if-changed of the script itself: cargo reruns a build script it rebuilds)
    for var in ["TILEKIT_PTXAS", "TILEKIT_REQUIRE_PTXAS", "TILEKIT_CUOBJDUMP"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rustc-check-cfg=cfg(has_ptxas)");
    println!("cargo::rustc-check-cfg=cfg(has_cuobjdump)");
    let required = std::env::var_os("TILEKIT_REQUIRE_PTXAS").is_some();
    let ptxas = required || std::env::var_os("TILEKIT_PTXAS").is_some() || runs("ptxas");
    let cuobjdump =
        required || std::env::var_os("TILEKIT_CUOBJDUMP").is_some() || runs("cuobjdump");
    if ptxas {
        println!("cargo::rustc-cfg=has_ptxas");
        if cuobjdump {
            println!("cargo::rustc-cfg=has_cuobjdump");
        }
    }
}
