//! The conformance loaders on arbitrary JSON text: every category's schema deserialisation and
//! checks (`tilekit conformance` on a file holding these bytes), the category dispatch, and
//! `tilekit show`'s JSON encoding input (inline JSON: an encoding object or an object with an
//! `encoding` field).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tilekit_cli::conformance::{descriptors, distributions, sfc, traits, windows};
use tilekit_cli::show;

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
    if text.trim_start().starts_with('{') {
        let args = show::Args { encoding: Some(text.to_string()), ..show::Args::default() };
        if let Ok(spec) = show::spec_from_args(&args) {
            tilekit_fuzz::exercise_spec(&spec);
        }
    }
});
