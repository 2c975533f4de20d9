//! `servio brief resolve` and `servio brief extract`.

use anyhow::{Context, anyhow};
use serde_json::{Value, json};
use servio_manifest::value::{ValuePath, extract as extract_value};
use servio_manifest::{BriefStatus, CheckOptions, check, period, resolve_brief};

use crate::check_cmd::read_source;
use crate::cli::{ExtractArgs, ResolveArgs};
use crate::{Failure, Outcome};

pub fn resolve(args: &ResolveArgs) -> Result<Outcome, Failure> {
    // Bad arguments are reported before the manifest is looked at: they are exit 2 whatever
    // the manifest says.
    let date: jiff::civil::Date =
        args.date.parse().map_err(|e| anyhow!("--date {:?} is not a date of the form YYYY-MM-DD: {e}", args.date))?;
    period::zone(&args.timezone)?;
    if args.hour > 23 {
        return Err(Failure(anyhow!("--hour {} is not 0 to 23", args.hour)));
    }
    let source = read_source(&args.file)?;
    let report = check(&source.bytes, &CheckOptions::default());
    if !report.is_valid() {
        eprintln!("error: {}: the manifest is invalid:", source.name);
        for e in &report.errors {
            eprintln!(
                "  {}:{}: {} {} (at {})",
                e.line,
                e.column,
                e.code,
                e.message,
                display_pointer(e.pointer.as_str())
            );
        }
        return Ok(Outcome::Invalid);
    }
    let Some(brief) = usable_brief(&source.name, &report) else { return Ok(Outcome::Invalid) };
    check_metric(brief, args.metric.as_deref())?;
    let resolution = resolve_brief(brief, date, args.hour, &args.timezone)?;
    for (key, why) in resolution.skipped {
        if args.metric.as_ref().is_none_or(|k| *k == key) {
            eprintln!("note: {key} is left out: {why}");
        }
    }
    let out: Vec<Value> = resolution
        .metrics
        .iter()
        .filter(|m| args.metric.as_ref().is_none_or(|k| *k == m.key))
        .map(|m| {
            json!({
                "key": m.key,
                "tool": m.tool,
                "granularity": m.granularity.as_str(),
                "period": {
                    "start": m.period.start_date.to_string(),
                    "end": m.period.end_date.to_string(),
                    "start_time": m.period.start_time(),
                    "end_time": m.period.end_time(),
                },
                "args": m.args,
            })
        })
        .collect();
    println!("{}", serde_json::to_string_pretty(&out).context("rendering JSON")?);
    Ok(Outcome::Ok)
}

/// The brief when it is there and valid; otherwise says why on stderr (the caller exits 1).
pub fn usable_brief<'r>(name: &str, report: &'r servio_manifest::Report) -> Option<&'r servio_manifest::Brief> {
    match (report.brief_status, &report.brief) {
        (BriefStatus::Valid, Some(brief)) => Some(brief),
        (BriefStatus::Ignored, _) => {
            eprintln!("error: {name}: the brief is ignored, so nothing would be collected:");
            for e in &report.brief_errors {
                eprintln!("  {}:{}: {} {} (at {})", e.line, e.column, e.code, e.message, e.pointer);
            }
            None
        }
        _ => {
            eprintln!("error: {name}: the manifest has no brief, so nothing would be collected");
            None
        }
    }
}

/// `--metric KEY` must name a metric of the brief.
pub fn check_metric(brief: &servio_manifest::Brief, metric: Option<&str>) -> Result<(), Failure> {
    match metric.filter(|key| !brief.metrics.iter().any(|m| m.key == *key)) {
        Some(key) => {
            let keys: Vec<&str> = brief.metrics.iter().map(|m| m.key.as_str()).collect();
            Err(Failure(anyhow!("no metric {key:?} in the brief; it declares: {}", keys.join(", "))))
        }
        None => Ok(()),
    }
}

fn display_pointer(pointer: &str) -> &str {
    if pointer.is_empty() { "the whole document" } else { pointer }
}

pub fn extract(args: &ExtractArgs) -> Result<Outcome, Failure> {
    let path = ValuePath::parse(&args.value_path).map_err(|e| anyhow!("--value-path {:?}: {e}", args.value_path))?;
    let source = read_source(&args.file)?;
    match extract_value(&source.bytes, &path) {
        Ok(found) => {
            println!("{}", json!({ "value": number(found.value), "raw": raw_json(&found.raw) }));
            Ok(Outcome::Ok)
        }
        Err(dropped) => {
            let raw = dropped.raw.as_deref().map(raw_json);
            println!("{}", json!({ "dropped": dropped.reason, "raw": raw }));
            Ok(Outcome::Invalid)
        }
    }
}

/// A whole number prints as an integer (`2340`, not `2340.0`) while it is exact in `f64`.
fn number(value: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if value.fract() == 0.0 && value.abs() < EXACT { json!(value as i64) } else { json!(value) }
}

/// The raw value exactly as the response wrote it.
fn raw_json(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}
