//! The encoding text parser on arbitrary text; when it parses, the print/parse round trip and
//! what `tilekit show` does with the spec (validation, explanation, traits, and for small specs
//! the ownership map, SVG and sweep, or what the reference builds from a refused spec).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        tilekit_fuzz::exercise_text(text);
    }
});
