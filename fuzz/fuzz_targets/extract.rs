//! Any response and any value path: extraction never panics, and a value it returns is
//! always finite.
#![no_main]

use libfuzzer_sys::fuzz_target;
use servio_manifest::value::{ValuePath, extract, reduce};

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (path, response) = data.split_at(split);
    if let Ok(text) = std::str::from_utf8(path) {
        if let Some(n) = reduce(text) {
            assert!(n.is_finite());
        }
        if let Ok(path) = ValuePath::parse(text) {
            if let Ok(found) = extract(response.get(1..).unwrap_or_default(), &path) {
                assert!(found.value.is_finite());
            }
        }
    }
});
