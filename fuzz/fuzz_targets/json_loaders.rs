//! The conformance loaders on arbitrary JSON text: every category's schema deserialisation and
//! checks (`tilekit conformance` on a file holding these bytes), the category dispatch,
//! `tilekit show`'s JSON encoding input (inline JSON: an encoding object or an object with an
//! `encoding` field), and the tuning files a device's backend reads at start (the launch-shape
//! table and the GEMM choices: a corrupt one must be an error, and a loaded one usable).
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tilekit_cli::conformance::{descriptors, distributions, sfc, traits, windows};
use tilekit_cli::show;
use tilekit_ir::ScalarType;
use tilekit_ops::gemm_tuning::{self, GemmProblem, GemmTable};
use tilekit_ops::tuning::{self, Tuning};

/// A folder of this process for the tuning files (the loaders read files by device name).
fn tuning_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("tilekit-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("a temporary folder");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = Path::new("fuzz.json");
    let checks: [fn(&Path, &str) -> Result<_, _>; 5] =
        [sfc::check, descriptors::check, distributions::check, traits::check, windows::check];
    for check in checks {
        if let Ok(tally) = check(path, text) {
            assert_eq!(tally.failed, tally.failures.len(), "every failed check is described");
        }
    }
    // the tuning files: whatever loads must serve every problem without a panic
    let dir = tuning_dir();
    if std::fs::write(dir.join(tuning::file_name("GPU")), text).is_ok() {
        if let Ok(Some((t, _))) = Tuning::load(dir, "GPU") {
            let _ = t.softmax_threads(ScalarType::BF16);
        }
    }
    if std::fs::write(dir.join(gemm_tuning::file_name("GPU")), text).is_ok() {
        if let Ok(Some((t, _))) = GemmTable::load(dir, "GPU") {
            for (m, n, k) in [(64, 8192, 8192), (8192, 8192, 8192), (1, 1, 1)] {
                for out in [ScalarType::F32, ScalarType::BF16] {
                    let p = GemmProblem::new(m, n, k, ScalarType::BF16, out, true);
                    let c = t.choose(&p);
                    assert!(p.config(&c).check().is_ok(), "a chosen configuration builds: {c:?}");
                    let _ = c.label();
                }
            }
        }
    }
    if text.trim_start().starts_with('{') {
        let args = show::Args { encoding: Some(text.to_string()), ..show::Args::default() };
        if let Ok(spec) = show::spec_from_args(&args) {
            tilekit_fuzz::exercise_spec(&spec);
        }
    }
});
