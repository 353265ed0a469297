//! Assembling PTX with NVIDIA's `ptxas`, where one is installed — how CI checks every kernel the
//! library builds without a GPU.
//!
//! The assembler is found through `TILEKIT_PTXAS` (a path) or as `ptxas` on the PATH. When
//! `TILEKIT_REQUIRE_PTXAS` is set (CI sets it), a missing assembler is an error instead of a skip.

use std::path::PathBuf;
use std::process::Command;

use crate::target::Target;

/// The assembler to use, if any; an error when one is required but missing.
///
/// ```
/// // no assertion about the machine: either an assembler or why there is none
/// let _ = tilekit_ptx::ptxas::find();
/// ```
pub fn find() -> Result<Option<PathBuf>, String> {
    if let Some(p) = std::env::var_os("TILEKIT_PTXAS") {
        return Ok(Some(PathBuf::from(p)));
    }
    if Command::new("ptxas").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Ok(Some(PathBuf::from("ptxas")));
    }
    if std::env::var_os("TILEKIT_REQUIRE_PTXAS").is_some() {
        return Err(
            "TILEKIT_REQUIRE_PTXAS is set but no ptxas was found (set TILEKIT_PTXAS)".into()
        );
    }
    Ok(None)
}

/// Assembles `ptx` for `target` with `ptxas -v`; `Ok(Some(report))` with the assembler's
/// resource report, `Ok(None)` when no assembler is installed (and none is required), `Err`
/// with the assembler's messages when it rejects the PTX. The PTX and the cubin live in a
/// temporary folder of their own, removed before this returns.
///
/// ```
/// use tilekit_ptx::{emit_kernel, ptxas, Target};
/// let k = tilekit_ir::KernelBuilder::new("nothing", [32, 1, 1]).unwrap().finish().unwrap();
/// let ptx = emit_kernel(&k, Target::Sm90a).unwrap();
/// if let Ok(Some(report)) = ptxas::assemble(&ptx, Target::Sm90a, "nothing") {
///     assert!(report.contains("Used"));
/// }
/// ```
pub fn assemble(ptx: &str, target: Target, name: &str) -> Result<Option<String>, String> {
    let Some(ptxas) = find()? else { return Ok(None) };
    // a fresh folder for the PTX and the cubin, removed (with them) when `tmp` is dropped
    let tmp = tempfile::Builder::new()
        .prefix("tilekit-ptxas-")
        .tempdir()
        .map_err(|e| format!("a temporary folder for ptxas: {e}"))?;
    let dir = tmp.path();
    let stem: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let src = dir.join(format!("{stem}_{}.ptx", target.name()));
    std::fs::write(&src, ptx).map_err(|e| format!("{}: {e}", src.display()))?;
    let out = Command::new(&ptxas)
        .arg(format!("-arch={}", target.name()))
        .arg("-v")
        .arg(&src)
        .arg("-o")
        .arg(dir.join(format!("{stem}_{}.cubin", target.name())))
        .output()
        .map_err(|e| format!("{}: {e}", ptxas.display()))?;
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        Ok(Some(text))
    } else {
        Err(format!("ptxas -arch={} rejected {name}:\n{text}", target.name()))
    }
}

/// The disassembler for [`sass`], if any: `TILEKIT_CUOBJDUMP` (a path) or `cuobjdump` on the
/// PATH (pip's `nvidia-cuda-cuobjdump` wheel has one; any CUDA 12.x or 13.x reads sm_90a).
///
/// ```
/// // no assertion about the machine: a disassembler or none
/// let _ = tilekit_ptx::ptxas::find_cuobjdump();
/// ```
pub fn find_cuobjdump() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TILEKIT_CUOBJDUMP") {
        return Some(PathBuf::from(p));
    }
    Command::new("cuobjdump")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
        .then(|| PathBuf::from("cuobjdump"))
}

/// The machine code (SASS) ptxas makes of `ptx`: assembled as by [`assemble`], then
/// `cuobjdump -sass` of the cubin. `Ok(Some(sass))`, `Ok(None)` when the assembler or the
/// disassembler ([`find_cuobjdump`]) is missing, `Err` with the tool's messages when one fails.
/// For properties only the SASS shows: where ptxas put a `wgmma.wait_group`
/// (`WARPGROUP.DEPBAR.LE gsb0, N`), what a loop holds between two of them.
///
/// ```
/// use tilekit_ptx::{emit_kernel, ptxas, Target};
/// let k = tilekit_ir::KernelBuilder::new("nothing", [32, 1, 1]).unwrap().finish().unwrap();
/// let ptx = emit_kernel(&k, Target::Sm90a).unwrap();
/// if let Ok(Some(sass)) = ptxas::sass(&ptx, Target::Sm90a, "nothing") {
///     assert!(sass.contains("EXIT"));
/// }
/// ```
pub fn sass(ptx: &str, target: Target, name: &str) -> Result<Option<String>, String> {
    let (Some(ptxas), Some(cuobjdump)) = (find()?, find_cuobjdump()) else { return Ok(None) };
    let tmp = tempfile::Builder::new()
        .prefix("tilekit-sass-")
        .tempdir()
        .map_err(|e| format!("a temporary folder for ptxas: {e}"))?;
    let dir = tmp.path();
    let stem: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let src = dir.join(format!("{stem}.ptx"));
    let cubin = dir.join(format!("{stem}.cubin"));
    std::fs::write(&src, ptx).map_err(|e| format!("{}: {e}", src.display()))?;
    let out = Command::new(&ptxas)
        .arg(format!("-arch={}", target.name()))
        .arg(&src)
        .arg("-o")
        .arg(&cubin)
        .output()
        .map_err(|e| format!("{}: {e}", ptxas.display()))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        return Err(format!("ptxas -arch={} rejected {name}:\n{text}", target.name()));
    }
    let out = Command::new(&cuobjdump)
        .arg("-sass")
        .arg(&cubin)
        .output()
        .map_err(|e| format!("{}: {e}", cuobjdump.display()))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        return Err(format!("cuobjdump -sass {name}:\n{text}"));
    }
    Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// The sentinel test of a file whose tests emit and check their kernels everywhere and
/// assemble them with ptxas where one is found: it is reported as ignored where the build of
/// the calling crate found no ptxas (`cfg(has_ptxas)`, set by the build script in
/// `crates/tilekit-ptx/build.rs`; docs/testing.md), so the summary says the assembly was not
/// checked, and it fails where ptxas was expected but is missing. One line at the end of such a
/// test file:
///
/// ```text
/// tilekit_ptx::ptxas_sentinel!();
/// ```
#[macro_export]
macro_rules! ptxas_sentinel {
    () => {
        #[test]
        #[cfg_attr(
            not(has_ptxas),
            ignore = "needs ptxas (TILEKIT_PTXAS): without it this file's kernels are emitted and checked, not assembled"
        )]
        fn ptxas_assembled_the_kernels_of_this_file() {
            let found = $crate::ptxas::find().unwrap();
            assert!(
                found.is_some(),
                "no ptxas (TILEKIT_PTXAS or the PATH): the kernels were not assembled"
            );
        }
    };
}
