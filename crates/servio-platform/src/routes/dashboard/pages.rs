//! The morning dashboard as a page. Per metric, its view ([`crate::domain::figures::view`], the one the
//! API and MCP serve too): the latest value formatted for its unit, the change against the
//! comparison period only when that was collected (§8), week- and month-to-date totals for
//! amounts per day, a chart of the chosen range (7, 28, 90 or 365 days of periods ending at the
//! latest due one) with its comparison periods as a second line, and, when the latest due
//! period is missing, why (its latest attempt's reason) and what happens next. Per site, a line
//! of collection status with this week's periods without a value; the full collection log is a
//! page of its own. A canonical key collected from several sites is one card: each site's line,
//! then their total or why there is none. The cards are made from the same typed [`Dashboard`]
//! that `GET /api/dashboard` serves.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use askama::Template;
use axum::Router;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use serde::Deserialize;
use servio_manifest::period::Granularity;
use servio_store::{Attempt, AttemptOutcome};

use crate::AppState;
use crate::auth::PageUser;
use crate::domain::dashboard::{Dashboard, MetricData, dashboard_data};
use crate::error::ApiError;
use crate::shared::today::Today;
use crate::web::cards::{CardLines, card_lines, status_line};
use crate::web::{Layout, render};

/// The ranges a chart shows, in days, and the one shown unless another is chosen.
const RANGES: [u32; 4] = [7, 28, 90, 365];
const DEFAULT_RANGE: u32 = crate::domain::figures::view::DEFAULT_DAYS;
/// Attempts read per site for its status and log.
const ATTEMPTS_READ: i64 = 500;

/// The dashboard's routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/dashboard", get(page)).route("/dashboard/log", get(log_page))
}

/// Which range the charts show (`?range=90`).
#[derive(Debug, Deserialize)]
struct View {
    range: Option<u32>,
}

/// One site's collection status, in a line.
struct SiteStatus {
    id: i64,
    site: String,
    status: String,
    problems: Option<String>,
}

/// A link to a range, and whether it is the one shown.
struct RangeLink {
    days: u32,
    current: bool,
}

#[derive(Template)]
#[template(path = "dashboard.html")]
struct DashboardPage {
    layout: Layout,
    time_zone: String,
    ranges: Vec<RangeLink>,
    cards: Vec<CardLines>,
    statuses: Vec<SiteStatus>,
    attention: Vec<crate::domain::dashboard::SiteAttention>,
}

async fn page(State(state): State<AppState>, user: PageUser, Query(view): Query<View>) -> Result<Response, ApiError> {
    let range = view.range.filter(|r| RANGES.contains(r)).unwrap_or(DEFAULT_RANGE);
    let today = Today::of(&user.user)?;
    let (mut dashboard, attempts) = dashboard_and_attempts(&state, &user.user, range).await?;
    let statuses = statuses(&dashboard, &attempts, &today);
    let attention = std::mem::take(&mut dashboard.attention);
    let page = DashboardPage {
        layout: Layout::of(Some(&user)),
        time_zone: user.user.time_zone.clone(),
        ranges: RANGES.iter().map(|&days| RangeLink { days, current: days == range }).collect(),
        cards: card_lines(dashboard)?,
        statuses,
        attention,
    };
    Ok(render(&page))
}

/// The dashboard data of `user` over `range` days, and the recent attempts of each site.
async fn dashboard_and_attempts(
    state: &AppState,
    user: &servio_store::User,
    range: u32,
) -> Result<(Dashboard, HashMap<i64, Vec<Attempt>>), ApiError> {
    let dashboard = dashboard_data(state, user, range).await?;
    let mut attempts = HashMap::new();
    for metric in &dashboard.metrics {
        if let std::collections::hash_map::Entry::Vacant(entry) = attempts.entry(metric.site.id) {
            entry.insert(state.store.attempts(user.id, metric.site.id, ATTEMPTS_READ).await?);
        }
    }
    Ok((dashboard, attempts))
}

/// Each site's status: when it was last collected, when it is collected next, and what went
/// wrong this week.
fn statuses(dashboard: &Dashboard, attempts: &HashMap<i64, Vec<Attempt>>, today: &Today) -> Vec<SiteStatus> {
    let mut statuses: Vec<SiteStatus> = Vec::new();
    for metric in &dashboard.metrics {
        if statuses.iter().any(|s| s.id == metric.site.id) {
            continue;
        }
        let tried = attempts.get(&metric.site.id).map_or(&[][..], Vec::as_slice);
        let site_metrics = dashboard.metrics.iter().filter(|m| m.site.id == metric.site.id);
        let granularities = site_metrics.filter_map(|m| Granularity::from_name(m.granularity));
        statuses.push(SiteStatus {
            id: metric.site.id,
            site: metric.site.name.clone(),
            status: status_line(tried, granularities, today),
            problems: problems_this_week(dashboard.metrics.iter().filter(|m| m.site.id == metric.site.id)),
        });
    }
    statuses
}

/// "2 dropped, 1 failed this week": this week's periods of a site's metrics whose latest
/// attempt ended without a value (each metric's view counts them: periods, not attempts).
fn problems_this_week<'a>(metrics: impl Iterator<Item = &'a MetricData>) -> Option<String> {
    let (mut dropped, mut failed) = (0, 0);
    for metric in metrics {
        dropped += metric.view.this_week.dropped;
        failed += metric.view.this_week.failed;
    }
    let parts: Vec<String> = [(dropped, "dropped"), (failed, "failed")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, outcome)| format!("{n} {outcome}"))
        .collect();
    (!parts.is_empty()).then(|| format!("{} this week", parts.join(", ")))
}

struct LogRow {
    when: String,
    metric: String,
    period: String,
    outcome: String,
}

struct Log {
    id: i64,
    site: String,
    summary: Vec<String>,
    rows: Vec<LogRow>,
}

#[derive(Template)]
#[template(path = "collection_log.html")]
struct LogPage {
    layout: Layout,
    logs: Vec<Log>,
}

/// Rows of the log page per site.
const LOG_ROWS: usize = 100;

async fn log_page(State(state): State<AppState>, user: PageUser) -> Result<Response, ApiError> {
    let today = Today::of(&user.user)?;
    let mut logs = Vec::new();
    for site in state.store.vault(user.user.id).await? {
        let attempts = state.store.attempts(user.user.id, site.id, ATTEMPTS_READ).await?;
        logs.push(Log {
            id: site.id,
            site: site.origin.clone(),
            summary: summarize(&attempts),
            rows: attempts
                .iter()
                .take(LOG_ROWS)
                .map(|a| LogRow {
                    when: today.time(a.attempted_at),
                    metric: a.metric_key.clone(),
                    period: a.start_date.clone(),
                    outcome: match &a.reason {
                        Some(reason) => format!("{}: {reason}", a.outcome),
                        None => a.outcome.to_string(),
                    },
                })
                .collect(),
        });
    }
    Ok(render(&LogPage { layout: Layout::of(Some(&user)), logs }))
}

/// Reasons a site owner can act on: each distinct reason with how many periods it hit (a period
/// retried three times for one reason counts once).
fn summarize(attempts: &[Attempt]) -> Vec<String> {
    let mut reasons: BTreeMap<String, BTreeSet<(&str, &str)>> = BTreeMap::new();
    for attempt in attempts.iter().filter(|a| a.outcome != AttemptOutcome::Stored) {
        let reason = attempt.reason.clone().unwrap_or_else(|| attempt.outcome.to_string());
        reasons.entry(reason).or_default().insert((&attempt.metric_key, &attempt.start_date));
    }
    reasons
        .into_iter()
        .map(|(reason, periods)| {
            let n = periods.len();
            format!("{reason} ({n} period{})", if n == 1 { "" } else { "s" })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(metric: &str, date: &str, outcome: &str, reason: Option<&str>) -> Attempt {
        Attempt {
            metric_key: metric.into(),
            start_date: date.into(),
            attempted_at: 0,
            outcome: outcome.parse().unwrap(),
            reason: reason.map(str::to_owned),
            raw: None,
            retry_at: None,
        }
    }

    #[test]
    fn a_reason_counts_the_periods_it_hit_not_the_attempts() {
        let null = Some("valuePath totals.revenue: the value is null");
        let attempts = [
            attempt("revenue", "2026-09-01", "dropped", null),
            attempt("revenue", "2026-09-02", "dropped", null),
            attempt("orders", "2026-09-02", "dropped", null),
            attempt("revenue", "2026-09-03", "retry", Some("the tool answered 500")),
            attempt("revenue", "2026-09-03", "retry", Some("the tool answered 500")),
            attempt("revenue", "2026-09-03", "stored", None),
            attempt("revenue", "2026-09-04", "failed", None),
        ];
        assert_eq!(
            summarize(&attempts),
            [
                "failed (1 period)",
                "the tool answered 500 (1 period)",
                "valuePath totals.revenue: the value is null (3 periods)",
            ]
        );
        assert!(summarize(&attempts[5..6]).is_empty(), "stored is not a problem");
    }
}
