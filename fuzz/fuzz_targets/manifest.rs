//! Any bytes through the whole check: parse, validate, lint, locate. Must never panic, and
//! every diagnostic must point inside the source.
#![no_main]

use libfuzzer_sys::fuzz_target;
use servio_manifest::{CheckOptions, check};

fuzz_target!(|data: &[u8]| {
    let report = check(data, &CheckOptions::default());
    for d in report
        .errors
        .iter()
        .chain(&report.warnings)
        .chain(&report.brief_errors)
    {
        assert!(
            d.span.start <= d.span.end && d.span.end <= data.len(),
            "span {:?} outside {} bytes",
            d.span,
            data.len()
        );
        assert!(d.line >= 1 && d.column >= 1);
    }
    if report.is_valid() {
        assert!(report.manifest.is_some());
    }
});
