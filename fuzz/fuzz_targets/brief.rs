//! A valid manifest around a fuzzed brief, then resolution of whatever brief validates, for
//! a fuzzed date, hour and zone. Must never panic; a valid brief always resolves or says why.
#![no_main]

use libfuzzer_sys::fuzz_target;
use servio_manifest::{CheckOptions, check, resolve_brief};

const ZONES: [&str; 6] = [
    "UTC",
    "Pacific/Auckland",
    "America/New_York",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "Pacific/Apia",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, brief)) = data.split_first() else {
        return;
    };
    let Ok(brief) = std::str::from_utf8(brief) else {
        return;
    };
    let manifest = format!(
        r#"{{"name": "F", "version": "1.0.0", "server": {{"url": "https://f.example.com"}}, "auth": {{"type": "bearer"}},
        "tools": [{{"name": "shop.getSalesSummary", "description": "Summarise sales for a date range in the shop.",
        "input_schema": {{"type": "object", "properties": {{"from": {{"type": "string"}}, "to": {{"type": "string"}}}}, "required": ["from"]}}}}],
        "brief": {brief}}}"#
    );
    let report = check(manifest.as_bytes(), &CheckOptions::default());
    if let Some(brief) = report.brief {
        let day = 1 + (selector % 28) as i8;
        let date = jiff::civil::date(2026, 1 + (selector % 12) as i8, day);
        let zone = ZONES[selector as usize % ZONES.len()];
        let _ = resolve_brief(&brief, date, selector % 24, zone)
            .expect("a known zone and a valid date resolve");
    }
});
