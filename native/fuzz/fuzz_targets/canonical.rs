//! Any bytes into canonical JSON: never a panic; an accepted text canonicalises to valid JSON
//! that is its own canonical form (idempotent).
#![no_main]
use _core::canon::canonical;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if std::str::from_utf8(data).is_err() {
        return; // the scanners are given UTF-8-checked text only
    }
    if let Ok(text) = canonical(data) {
        let again = canonical(&text).expect("canonical output is JSON");
        assert_eq!(again, text, "canonical JSON is not idempotent");
    }
});
