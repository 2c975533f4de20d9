//! `servio brief test`: the dry run a site owner wants before any platform collects. It judges
//! each answer as the platform does (`servio_collector::collect::judge`: stored, dropped, a
//! permanent failure, or a transient one the platform retries until the period's deadline),
//! and asks once for metrics that share a call, as the platform does.

use anyhow::{Context, anyhow};
use jiff::tz::TimeZone;
use servio_client::call::{excerpt, tool_url};
use servio_client::{CallError, ToolCall};
use servio_collector::collect::{CollectionOutcome, judge, retry_deadline, shared_calls};
use servio_manifest::{CheckOptions, Period, ResolvedMetric, Site, ValuePath, check, period, resolve_brief};

use crate::auth::SiteToken;
use crate::brief_cmd::{check_metric, usable_brief};
use crate::cli::BriefTestArgs;
use crate::fetch::{Fetcher, request_failure};
use crate::{Failure, Outcome};

pub fn run(args: &BriefTestArgs) -> Result<Outcome, Failure> {
    let zone_name = match &args.timezone {
        Some(name) => name.clone(),
        None => jiff::tz::TimeZone::system()
            .iana_name()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("this machine's time zone has no IANA name; pass --timezone"))?,
    };
    let zone = period::zone(&zone_name)?;
    let date: jiff::civil::Date = match &args.date {
        Some(text) => text.parse().map_err(|e| anyhow!("--date {text:?} is not a date of the form YYYY-MM-DD: {e}"))?,
        None => {
            jiff::Timestamp::now().to_zoned_datetime(zone.clone()).date().yesterday().context("computing yesterday")?
        }
    };
    let fetcher = Fetcher::new(&args.access.fetch)?;
    let found = fetcher.discover(&args.site)?;
    let report = check(
        &found.body,
        &CheckOptions { site: Site::from_url(&found.origin), allow: Vec::new(), ..Default::default() },
    );
    let Some(manifest) = &report.manifest else {
        eprintln!("error: {}: the manifest is invalid; run `servio check {}` for the details", found.url, args.site);
        return Ok(Outcome::Invalid);
    };
    let Some(brief) = usable_brief(found.url.as_str(), &report) else { return Ok(Outcome::Invalid) };
    check_metric(brief, args.metric.as_deref())?;
    let resolution = resolve_brief(brief, date, args.hour, &zone_name)?;
    let origin = found.origin.as_str().trim_end_matches('/');
    let mut credential = SiteToken::find(&fetcher, origin, args.access.token.as_deref())?;
    println!("{} — {} in {zone_name}\n", found.url, date);
    let mut all_stored = true;
    for (key, why) in &resolution.skipped {
        println!("{key}\n  skipped: {why}\n");
    }
    let metrics: Vec<&ResolvedMetric> =
        resolution.metrics.iter().filter(|m| args.metric.as_ref().is_none_or(|k| *k == m.key)).collect();
    // Metrics sharing a tool and resolved arguments for a period are one request (§5), as on
    // the platform: each reads its value from the answer to the first one's call.
    let lead = leads(&shared_calls(metrics.iter().map(|m| (m.tool.as_str(), &m.args, &m.period))), metrics.len());
    let mut answers: Vec<Option<Result<Vec<u8>, CallError>>> = metrics.iter().map(|_| None).collect();
    for (index, metric) in metrics.iter().enumerate() {
        let spec = brief.metrics.iter().find(|m| m.key == metric.key).expect("resolved from this brief");
        println!("{}", metric.key);
        println!(
            "  period:  {} .. {} ({} to {})",
            metric.period.start_date,
            metric.period.end_date,
            metric.period.start_time(),
            metric.period.end_time()
        );
        let url = tool_url(&manifest.server_url, &metric.tool);
        let shared = (lead[index] != index).then(|| format!(" (one request with {})", metrics[lead[index]].key));
        println!("  call:    POST {url}{}", shared.unwrap_or_default());
        println!("  args:    {}", metric.args);
        if lead[index] == index {
            let call = |token: Option<&str>| {
                let call = ToolCall { manifest, name: &metric.tool, args: &metric.args, token };
                fetcher.block_on(call.send(fetcher.tool_client(), None))
            };
            let mut outcome = call(credential.token());
            if matches!(outcome, Err(CallError::Failed { status: 401, .. })) && credential.renew(&fetcher)? {
                outcome = call(credential.token());
            }
            if let Err(CallError::Request(error)) = &outcome {
                // The dry run could not reach the site: a problem of where it runs, said so.
                return Err(Failure(request_failure(&url, error).context(metric.key.clone())));
            }
            answers[index] = Some(outcome);
        }
        let Some(answer) = &answers[lead[index]] else { continue };
        let token_given = args.access.token.is_some();
        all_stored &= show_verdict(answer, &spec.value_path, &metric.period, (&zone, token_given));
    }
    Ok(if all_stored { Outcome::Ok } else { Outcome::Invalid })
}

/// For each of `count` metrics, the first of the metrics it shares its call with (itself when
/// it leads or shares with none), from the groups of [`shared_calls`].
fn leads(groups: &[Vec<usize>], count: usize) -> Vec<usize> {
    let mut lead: Vec<usize> = (0..count).collect();
    for members in groups {
        for &member in members {
            lead[member] = members[0];
        }
    }
    lead
}

/// Prints the answer, the value and the verdict of one metric whose value is at `value_path`,
/// judged as the platform judges it; whether it would be stored.
fn show_verdict(
    answer: &Result<Vec<u8>, CallError>,
    value_path: &ValuePath,
    period: &Period,
    (zone, token_given): (&TimeZone, bool),
) -> bool {
    if let Ok(body) = answer {
        println!("  answer:  {}", one_line(&excerpt(body)));
    }
    let reading = judge(answer, value_path);
    if let Some(raw) = &reading.raw {
        println!("  value:   {raw} at {value_path}");
    }
    match &reading.outcome {
        CollectionOutcome::Stored(value) => println!("  verdict: stored as {value}\n"),
        CollectionOutcome::Dropped(reason) => println!("  verdict: dropped: {reason}\n"),
        CollectionOutcome::Failed { reason, transient: true } => {
            println!("  verdict: {}: {reason}\n", retried_until(period, zone));
        }
        CollectionOutcome::Failed { reason, transient: false } => {
            println!("  verdict: failed: {reason}\n");
            if matches!(answer, Err(CallError::Failed { status: 401, .. })) && !token_given {
                println!("  help:    pass the site's token with --token or SERVIO_TOKEN\n");
            }
        }
    }
    matches!(reading.outcome, CollectionOutcome::Stored(_))
}

/// What the platform does with a transient failure of `period`: it retries until the period's
/// deadline (§8: 24 hours after it is due), said in the zone of the dry run, `would be retried
/// until 01:00 on 2026-08-22 (America/Los_Angeles)`.
fn retried_until(period: &Period, zone: &TimeZone) -> String {
    match retry_deadline(period) {
        Some(deadline) => {
            let local = deadline.to_zoned_datetime(zone.clone());
            let zone_name = zone.iana_name().unwrap_or("this zone");
            format!("would be retried until {} on {} ({zone_name})", local.strftime("%H:%M"), local.date())
        }
        None => "would be retried".to_owned(),
    }
}

fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 160 { format!("{}…", flat.chars().take(160).collect::<String>()) } else { flat }
}
