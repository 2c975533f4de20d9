//! What "test your manifest" does: read the manifest (pasted, or discovered at a URL through
//! the platform's guarded client), check it as `servio check` does, and resolve its brief for
//! a date and a zone.

use serde::Deserialize;
use servio_manifest::{CheckOptions, Site, period, resolve_brief};
use servio_report::{Style, render};

use crate::AppState;
use crate::error::ApiError;

/// The largest manifest tested, pasted or fetched.
pub const MAX_MANIFEST_BYTES: usize = 1024 * 1024;

/// What the user asks to test.
#[derive(Debug, Default, Deserialize)]
pub struct CheckForm {
    /// A manifest's JSON, pasted.
    #[serde(default)]
    pub manifest: String,
    /// Or a site's URL (its manifest is discovered as when adding a site).
    #[serde(default)]
    pub url: String,
    /// The date of the brief's dry run, `YYYY-MM-DD`.
    #[serde(default)]
    pub date: String,
    /// The zone of the dry run.
    #[serde(default)]
    pub time_zone: String,
}

/// One metric of the dry run: its period and the arguments its tool would be called with.
#[derive(Debug)]
pub struct DryRunMetric {
    /// The metric's key.
    pub key: String,
    /// The tool.
    pub tool: String,
    /// `2026-12-01 to 2026-12-01`.
    pub period: String,
    /// The arguments, as JSON.
    pub args: String,
}

/// The report, as `servio check` prints it, and the dry run.
#[derive(Debug)]
pub struct Checked {
    /// What was checked: the URL the manifest came from, or `manifest.json`.
    pub source: String,
    /// The human report (plain text, rustc-style).
    pub text: String,
    /// Whether the manifest is valid.
    pub valid: bool,
    /// The brief's metrics for the chosen date and zone.
    pub dry_run: Vec<DryRunMetric>,
    /// Why there is no dry run, or what it left out.
    pub dry_run_notes: Vec<String>,
}

/// Tests a manifest for the user `user_id` (counted against their limit first).
pub(crate) async fn check_manifest(state: &AppState, user_id: i64, form: &CheckForm) -> Result<Checked, ApiError> {
    state.throttle.manifest_check(user_id)?;
    let date: jiff::civil::Date = form.date.trim().parse().map_err(|e| {
        ApiError::BadRequest(format!("the date {:?} is not a date of the form YYYY-MM-DD: {e}", form.date))
    })?;
    let zone = form.time_zone.trim();
    period::zone(zone).map_err(|e| ApiError::BadRequest(format!("the time zone {zone:?}: {e}")))?;
    let (source, bytes, site) = read(state, form).await?;
    // A pasted text is checked once and not kept: off the async threads, like every check.
    let report = state
        .collector
        .manifests()
        .check_once(bytes.clone(), CheckOptions { site, allow: Vec::new(), ..Default::default() })
        .await?;
    let text = render(&source, &bytes, &report, Style::Plain, true);
    let mut checked =
        Checked { source, text, valid: report.is_valid(), dry_run: Vec::new(), dry_run_notes: Vec::new() };
    match report.brief.as_ref().filter(|_| report.is_valid()) {
        None => checked.dry_run_notes.push("No dry run: the manifest has no valid brief.".into()),
        Some(brief) => match resolve_brief(brief, date, 0, zone) {
            Ok(resolution) => {
                checked.dry_run = resolution
                    .metrics
                    .iter()
                    .map(|m| DryRunMetric {
                        key: m.key.clone(),
                        tool: m.tool.clone(),
                        period: format!("{} to {}", m.period.start_date, m.period.end_date),
                        args: m.args.to_string(),
                    })
                    .collect();
                checked.dry_run_notes = resolution.skipped.iter().map(|(key, why)| format!("{key}: {why}")).collect();
            }
            Err(error) => checked.dry_run_notes.push(format!("No dry run: {error}")),
        },
    }
    Ok(checked)
}

/// The manifest's source name, bytes, and site (for the lints that compare with it).
async fn read(state: &AppState, form: &CheckForm) -> Result<(String, Vec<u8>, Option<Site>), ApiError> {
    let url = form.url.trim();
    if !url.is_empty() {
        crate::text::require_text("url", url)?;
        let url = if url.contains("://") { url.to_owned() } else { format!("https://{url}") };
        let found = crate::shared::discovered::discover(state, &url)
            .await?
            .map_err(|error| ApiError::BadRequest(format!("no manifest could be read there: {error}")))?;
        if found.body.len() > MAX_MANIFEST_BYTES {
            return Err(ApiError::BadRequest("the manifest is larger than 1 MiB".into()));
        }
        let site = Site::parse(found.origin.as_str().trim_end_matches('/')).ok();
        return Ok((found.url.to_string(), found.body, site));
    }
    if form.manifest.trim().is_empty() {
        return Err(ApiError::BadRequest("paste a manifest, or give a site's URL".into()));
    }
    if form.manifest.len() > MAX_MANIFEST_BYTES {
        return Err(ApiError::BadRequest("the manifest is larger than 1 MiB".into()));
    }
    Ok(("manifest.json".into(), form.manifest.as_bytes().to_vec(), None))
}
