//! `servio brief test`: the dry run a site owner wants before any platform collects.

use anyhow::{Context, anyhow};
use servio_client::call::{excerpt, tool_url};
use servio_client::{CallError, ToolCall};
use servio_manifest::value::extract;
use servio_manifest::{CheckOptions, Site, check, period, resolve_brief};

use crate::auth::Credential;
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
    let report = check(&found.body, &CheckOptions { site: Site::from_url(&found.origin), allow: Vec::new() });
    let Some(manifest) = &report.manifest else {
        eprintln!("error: {}: the manifest is invalid; run `servio check {}` for the details", found.url, args.site);
        return Ok(Outcome::Invalid);
    };
    let Some(brief) = usable_brief(found.url.as_str(), &report) else { return Ok(Outcome::Invalid) };
    check_metric(brief, args.metric.as_deref())?;
    let resolution = resolve_brief(brief, date, args.hour, &zone_name)?;
    let origin = found.origin.as_str().trim_end_matches('/');
    let mut credential = Credential::find(&fetcher, origin, args.access.token.as_deref())?;
    println!("{} — {} in {zone_name}\n", found.url, date);
    let mut all_stored = true;
    for (key, why) in &resolution.skipped {
        println!("{key}\n  skipped: {why}\n");
    }
    for metric in resolution.metrics.iter().filter(|m| args.metric.as_ref().is_none_or(|k| *k == m.key)) {
        let spec = brief.metrics.iter().find(|m| m.key == metric.key).expect("resolved from this brief");
        println!("{}", metric.key);
        println!(
            "  period:  {} .. {} ({} to {})",
            metric.period.start_date,
            metric.period.end_date,
            metric.period.start_time(),
            metric.period.end_time()
        );
        println!("  call:    POST {}", tool_url(&manifest.server_url, &metric.tool));
        println!("  args:    {}", metric.args);
        let call = |token: Option<&str>| {
            let call = ToolCall { manifest, name: &metric.tool, args: &metric.args, token };
            fetcher.block_on(call.send(fetcher.tool_client(), None))
        };
        let mut outcome = call(credential.token());
        if matches!(outcome, Err(CallError::Failed { status: 401, .. })) && credential.refresh(&fetcher)? {
            outcome = call(credential.token());
        }
        match outcome {
            Ok(body) => {
                println!("  answer:  {}", one_line(&excerpt(&body)));
                match extract(&body, &spec.value_path) {
                    Ok(found) => println!(
                        "  value:   {} at {}\n  verdict: stored as {}\n",
                        found.raw, spec.value_path, found.value
                    ),
                    Err(dropped) => {
                        all_stored = false;
                        if let Some(raw) = &dropped.raw {
                            println!("  value:   {raw} at {}", spec.value_path);
                        }
                        println!("  verdict: dropped: {}\n", dropped.reason);
                    }
                }
            }
            Err(CallError::Request(error)) => {
                let url = tool_url(&manifest.server_url, &metric.tool);
                return Err(Failure(request_failure(&url, &error).context(metric.key.clone())));
            }
            Err(error) => {
                all_stored = false;
                println!("  verdict: dropped: {error}\n");
                if matches!(error, CallError::Failed { status: 401, .. }) && args.access.token.is_none() {
                    println!("  help:    pass the site's token with --token or SERVIO_TOKEN\n");
                }
            }
        }
    }
    Ok(if all_stored { Outcome::Ok } else { Outcome::Invalid })
}

fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 160 { format!("{}…", flat.chars().take(160).collect::<String>()) } else { flat }
}
