//! The morning dashboard as a page. Per metric: the latest value formatted for its unit, the
//! change against the comparison period only when that was collected (§8), week- and
//! month-to-date totals for daily metrics, a chart of the chosen range (7, 28, 90 or 365 days)
//! with its comparison periods as a second line, and, when the latest due period is missing,
//! why and what happens next. Per site, a line of collection status; the full collection log is
//! a page of its own. A canonical key collected from several sites is one card: each site's
//! line, then their total or why there is none. The cards are made from the same typed
//! [`Dashboard`] that `GET /api/dashboard` serves.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use askama::Template;
use axum::Router;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use jiff::ToSpan;
use jiff::civil::Date;
use serde::Deserialize;
use servio_manifest::period::Granularity;
use servio_store::{Attempt, AttemptOutcome};

use super::chart::Chart;
use super::service::{Change, Dashboard, MetricData, dashboard_data};
use crate::AppState;
use crate::auth::PageUser;
use crate::error::ApiError;
use crate::routes::pages::{Layout, render};
use crate::shared::format;
use crate::shared::today::Today;

/// The ranges a chart shows, in days, and the one shown unless another is chosen.
const RANGES: [u32; 4] = [7, 28, 90, 365];
const DEFAULT_RANGE: u32 = 28;
/// What the comparison periods of a range reach back beyond it: a month.
const COMPARISON_DAYS: u32 = 31;
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

/// One site's metric in a slot.
struct SiteLine {
    site: String,
    key: String,
    period: String,
    latest: Option<String>,
    change: Option<String>,
    change_class: &'static str,
    chart: String,
    to_date: Vec<String>,
    missing: Option<String>,
}

/// One dashboard slot: a metric of one site, or a canonical key shared by several sites with
/// their total (or a note saying why there is none).
struct Card {
    label: String,
    key: String,
    lines: Vec<SiteLine>,
    total: Option<String>,
    note: Option<String>,
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
    cards: Vec<Card>,
    statuses: Vec<SiteStatus>,
    attention: Vec<super::service::SiteAttention>,
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
        cards: cards(dashboard, &attempts, &today, range)?,
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
    let dashboard = dashboard_data(state, user, range + COMPARISON_DAYS).await?;
    let mut attempts = HashMap::new();
    for metric in &dashboard.metrics {
        if let std::collections::hash_map::Entry::Vacant(entry) = attempts.entry(metric.site.id) {
            entry.insert(state.store.attempts(user.id, metric.site.id, ATTEMPTS_READ).await?);
        }
    }
    Ok((dashboard, attempts))
}

/// The dashboard's cards alone, for the MCP App view (`templates/mcp_app_cards.html`).
#[derive(Template)]
#[template(path = "mcp_app_cards.html")]
struct AppCards {
    cards: Vec<Card>,
}

/// The dashboard's cards of `user` (the default range), as the page renders them: every card,
/// or with `only` (a site's id and a metric key) that metric's line alone.
pub(crate) async fn cards_html(
    state: &AppState,
    user: &servio_store::User,
    only: Option<(i64, &str)>,
) -> Result<String, ApiError> {
    let today = Today::of(user)?;
    let (mut dashboard, attempts) = dashboard_and_attempts(state, user, DEFAULT_RANGE).await?;
    if let Some((site_id, key)) = only {
        // A slot of several sites keeps only this one's line: its total would be another's.
        let keep: Vec<bool> = dashboard.metrics.iter().map(|m| m.site.id == site_id && m.key == key).collect();
        for slot in &mut dashboard.slots {
            let kept = slot.metrics.iter().zip(&slot.sites).filter(|(index, _)| keep.get(**index) == Some(&true));
            (slot.metrics, slot.sites) = kept.map(|(index, site)| (*index, *site)).unzip();
            if slot.metrics.len() < 2 {
                slot.total = None;
                slot.note = None;
            }
        }
        dashboard.slots.retain(|slot| !slot.metrics.is_empty());
    }
    let page = AppCards { cards: cards(dashboard, &attempts, &today, DEFAULT_RANGE)? };
    page.render().map_err(ApiError::internal)
}

/// The MCP App view (`templates/mcp_app.html`).
#[derive(Template)]
#[template(path = "mcp_app.html")]
struct AppView {
    version: &'static str,
}

/// The MCP App view's HTML: the same for every user, the figures come with each result.
pub(crate) fn app_view_html() -> Result<String, ApiError> {
    AppView { version: env!("CARGO_PKG_VERSION") }.render().map_err(ApiError::internal)
}

/// Each period of the chart with its value and its comparison period's value.
struct Series {
    periods: Vec<String>,
    values: Vec<Option<f64>>,
    comparison: Vec<Option<f64>>,
}

/// The periods a chart of `range` days shows for `metric`, ending with the latest that can be
/// due: every day (a day with nothing collected is a gap), week or month in the range; hours
/// as collected.
fn series(metric: &MetricData, today: &Today, range: u32) -> Series {
    let by_date: BTreeMap<Date, f64> =
        metric.values.iter().filter_map(|p| Some((p.period.parse().ok()?, p.value))).collect();
    let (dates, back): (Vec<Date>, jiff::Span) = match Granularity::from_name(metric.granularity) {
        Some(Granularity::Day) => (count_back(today.date.yesterday().ok(), i64::from(range), 1.day()), 7.days()),
        Some(Granularity::Week) => {
            let monday = today.date.checked_sub(i64::from(today.date.weekday().to_monday_zero_offset()).days()).ok();
            let last = monday.and_then(|m| m.checked_sub(7.days()).ok());
            (count_back(last, i64::from(range / 7).max(2), 7.days()), 7.days())
        }
        Some(Granularity::Month) => {
            let last = today.date.first_of_month().checked_sub(1.month()).ok();
            (count_back(last, i64::from(range / 30).max(2), 1.month()), 1.month())
        }
        _ => {
            let first = today.date.checked_sub(i64::from(range).days()).unwrap_or(today.date);
            let values: Vec<&super::service::Point> =
                metric.values.iter().filter(|p| p.period.parse::<Date>().is_ok_and(|d| d >= first)).collect();
            return Series {
                periods: values.iter().map(|p| p.period.clone()).collect(),
                values: values.iter().map(|p| Some(p.value)).collect(),
                comparison: Vec::new(),
            };
        }
    };
    let before = |date: &Date| date.checked_sub(back).ok().and_then(|d| by_date.get(&d).copied());
    Series {
        periods: dates.iter().map(Date::to_string).collect(),
        values: dates.iter().map(|d| by_date.get(d).copied()).collect(),
        comparison: dates.iter().map(before).collect(),
    }
}

/// `count` dates stepping back by `step` from `last`, oldest first.
fn count_back(last: Option<Date>, count: i64, step: jiff::Span) -> Vec<Date> {
    let mut dates: Vec<Date> = std::iter::successors(last, |d| d.checked_sub(step).ok()).take(count as usize).collect();
    dates.reverse();
    dates
}

/// Week- and month-to-date totals of a daily metric: what was collected since Monday, and
/// since the first of the month, before today. Only an amount per period has them (§8): a
/// level or a ratio summed over days means nothing ("month to date 73 percent").
fn to_date(metric: &MetricData, today: &Today) -> Vec<String> {
    let additivity = servio_manifest::additivity::additivity(&metric.key, metric.unit.as_deref());
    if metric.granularity != "day" || additivity != servio_manifest::additivity::Additivity::Amount {
        return Vec::new();
    }
    let week = today.date.checked_sub(i64::from(today.date.weekday().to_monday_zero_offset()).days());
    let starts = [("Week to date", week.ok()), ("Month to date", Some(today.date.first_of_month()))];
    let mut totals = Vec::new();
    for (label, start) in starts {
        let Some(start) = start else { continue };
        let days = (today.date - start).get_days();
        let collected: Vec<f64> = metric
            .values
            .iter()
            .filter(|p| p.period.parse::<Date>().is_ok_and(|d| d >= start && d < today.date))
            .map(|p| p.value)
            .collect();
        if days > 0 && !collected.is_empty() {
            let sum = format::amount(collected.iter().sum(), metric.unit.as_deref());
            let of = if collected.len() as i32 == days {
                String::new()
            } else {
                format!(", {} of {days} days", collected.len())
            };
            totals.push(format!("{label} {sum}{of}"));
        }
    }
    totals
}

/// Why the latest due period of `metric` has no value yet, and what happens next.
fn missing(metric: &MetricData, attempts: &[Attempt], today: &Today) -> Option<String> {
    let granularity = Granularity::from_name(metric.granularity)?;
    let due = servio_collector::plan::latest_due(granularity, &today.zone, today.now).ok()?;
    let date = due.start_date.to_string();
    if metric.latest.as_ref().is_some_and(|latest| latest.period >= date) {
        return None;
    }
    let last = attempts.iter().find(|a| a.metric_key == metric.key && a.start_date == date);
    Some(match last {
        None => format!("{date} not collected yet: it is due, and collected within a few minutes."),
        Some(attempt) => {
            let reason = attempt.reason.clone().unwrap_or_else(|| attempt.outcome.to_string());
            match (attempt.outcome, attempt.retry_at) {
                (AttemptOutcome::Retry, Some(at)) => {
                    format!("{date} not collected yet: {reason}; retrying at {}.", today.time(at))
                }
                (AttemptOutcome::Retry, None) => format!("{date} not collected: {reason}; past its deadline."),
                _ => format!("{date} not collected: {reason}."),
            }
        }
    })
}

/// How a change reads (§8): a change of exactly zero is "no change"; a ratio given in percent
/// changes by points (`+2.1 pts`), not by a percent of a percent; anything else by its percent
/// of the earlier value, or by its amount when that was 0.
fn change_text(c: &Change, key: &str, unit: Option<&str>) -> String {
    if c.change == 0.0 {
        return format!("no change against {}", c.against);
    }
    let arrow = if c.change > 0.0 { "▲" } else { "▼" };
    let in_percent = unit.is_some_and(|u| matches!(u.trim().to_ascii_lowercase().as_str(), "%" | "percent" | "pct"));
    let ratio = servio_manifest::additivity::additivity(key, unit) == servio_manifest::additivity::Additivity::Ratio;
    match c.percent {
        _ if ratio && in_percent => format!("{arrow} {:+} pts against {}", c.change, c.against),
        Some(percent) => format!("{arrow} {percent:+.1}% against {}", c.against),
        None => {
            let sign = if c.change > 0.0 { "+" } else { "" };
            format!("{arrow} {sign}{} against {}", format::amount(c.change, unit), c.against)
        }
    }
}

/// The line of one metric of the dashboard data.
fn site_line(metric: &MetricData, attempts: &[Attempt], today: &Today, range: u32) -> SiteLine {
    let unit = metric.unit.as_deref();
    let change = metric.change.as_ref().map(|c| change_text(c, &metric.key, unit));
    let rising = metric.change.as_ref().is_some_and(|c| c.change >= 0.0);
    let unchanged = metric.change.as_ref().is_some_and(|c| c.change == 0.0);
    let series = series(metric, today, range);
    let chart = Chart { periods: &series.periods, values: &series.values, comparison: &series.comparison, unit };
    SiteLine {
        site: metric.site.name.clone(),
        key: metric.key.clone(),
        period: metric.latest.as_ref().map(|l| l.period.clone()).unwrap_or_default(),
        latest: metric.latest.as_ref().map(|l| format::amount(l.value, unit)),
        change,
        change_class: match (unchanged, rising) {
            (true, _) => "muted",
            (false, true) => "ok",
            (false, false) => "warning",
        },
        chart: chart.svg(),
        to_date: to_date(metric, today),
        missing: missing(metric, attempts, today),
    }
}

/// The cards of the dashboard data: one per slot, each with its sites' lines.
fn cards(
    dashboard: Dashboard,
    attempts: &HashMap<i64, Vec<Attempt>>,
    today: &Today,
    range: u32,
) -> Result<Vec<Card>, ApiError> {
    let mut lines: Vec<Option<SiteLine>> = dashboard
        .metrics
        .iter()
        .map(|metric| {
            let tried = attempts.get(&metric.site.id).map_or(&[][..], Vec::as_slice);
            Some(site_line(metric, tried, today, range))
        })
        .collect();
    let cards = dashboard
        .slots
        .into_iter()
        .map(|slot| Card {
            label: slot.label.unwrap_or(&slot.key).to_owned(),
            total: slot.total.as_ref().and_then(|total| {
                total.value.map(|value| format!("{} · {}", format::amount(value, total.unit.as_deref()), total.period))
            }),
            lines: slot.metrics.iter().filter_map(|&i| lines.get_mut(i)?.take()).collect(),
            note: slot.note,
            key: slot.key,
        })
        .collect();
    Ok(cards)
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
            problems: problems_this_week(tried, today),
        });
    }
    statuses
}

/// A site's collection status in words, from its attempts (newest first) and the granularities
/// of its metrics: "last collected 06:10 · next run ~07:10".
pub(crate) fn status_line(
    tried: &[Attempt],
    granularities: impl IntoIterator<Item = Granularity>,
    today: &Today,
) -> String {
    let mut parts = Vec::new();
    match tried.iter().find(|a| a.outcome == AttemptOutcome::Stored) {
        Some(stored) => parts.push(format!("last collected {}", today.time(stored.attempted_at))),
        None => parts.push("nothing collected yet".to_owned()),
    }
    if let Some(next) = granularities.into_iter().filter_map(|g| next_due(g, today)).min() {
        parts.push(format!("next run ~{}", today.time(next)));
    }
    parts.join(" · ")
}

/// The latest attempt that ended without a value, if it is newer than the latest stored one:
/// "2026-12-02 revenue: the tool answered 503 (at 06:10)".
pub(crate) fn last_error(tried: &[Attempt], today: &Today) -> Option<String> {
    let latest = tried.first()?;
    let reason = latest.reason.as_deref().filter(|_| latest.outcome != AttemptOutcome::Stored)?;
    Some(format!("{} {}: {reason} (at {})", latest.start_date, latest.metric_key, today.time(latest.attempted_at)))
}

/// When the next period of `granularity` becomes due (Unix seconds): the end of the period
/// after the latest due one, plus the settle delay.
fn next_due(granularity: Granularity, today: &Today) -> Option<i64> {
    let due = servio_collector::plan::latest_due(granularity, &today.zone, today.now).ok()?;
    let length = due.end.duration_since(due.start);
    let next = due.end.checked_add(length).ok()?.checked_add(servio_collector::plan::settle_delay(granularity)).ok()?;
    Some(next.as_second())
}

/// "2 dropped, 1 failed this week": the periods of the last seven days that ended without a
/// value, by outcome.
fn problems_this_week(attempts: &[Attempt], today: &Today) -> Option<String> {
    let since = today.now.as_second() - 7 * 24 * 3600;
    let mut ended: BTreeMap<&str, BTreeSet<(&str, &str)>> = BTreeMap::new();
    for attempt in attempts.iter().filter(|a| a.attempted_at >= since) {
        if matches!(attempt.outcome, AttemptOutcome::Dropped | AttemptOutcome::Failed) {
            ended.entry(attempt.outcome.as_str()).or_default().insert((&attempt.metric_key, &attempt.start_date));
        }
    }
    let parts: Vec<String> = ended.iter().map(|(outcome, periods)| format!("{} {outcome}", periods.len())).collect();
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

    /// Issue 42, point 9: a zero change read "▲ +0.0%", and a rate in percent changed by a
    /// percent of a percent.
    #[test]
    fn changes_read_as_no_change_points_or_percent() {
        let change = |change: f64, percent: Option<f64>| Change { against: "2026-09-03".into(), change, percent };
        assert_eq!(
            change_text(&change(0.0, Some(0.0)), "sales.revenue.daily", Some("USD")),
            "no change against 2026-09-03"
        );
        assert_eq!(
            change_text(&change(2.1, Some(5.4)), "web.bounce.daily", Some("%")),
            "▲ +2.1 pts against 2026-09-03"
        );
        assert_eq!(
            change_text(&change(-1.5, Some(-3.0)), "web.bounce.daily", Some("percent")),
            "▼ -1.5 pts against 2026-09-03"
        );
        assert_eq!(
            change_text(&change(20.0, Some(20.0)), "sales.revenue.daily", Some("USD")),
            "▲ +20.0% against 2026-09-03"
        );
    }

    /// Issue 42, point 6: "Month to date 73 percent" summed a bounce rate; the spec's own
    /// `community.unanswered.count` (a level) was summed too. Only amounts per period are.
    #[test]
    fn only_amounts_per_period_have_to_date_totals() {
        let date: Date = "2026-09-10".parse().unwrap();
        let zone = jiff::tz::TimeZone::UTC;
        let today =
            Today { now: zone.to_timestamp(date.to_datetime(jiff::civil::Time::midnight())).unwrap(), zone, date };
        let metric = |key: &str, unit: Option<&str>| MetricData {
            site: super::super::service::SiteData { id: 1, origin: "https://s.example".into(), name: "S".into() },
            key: key.into(),
            label: None,
            unit: unit.map(str::to_owned),
            granularity: "day",
            latest: None,
            change: None,
            values: (1..10)
                .map(|day| super::super::service::Point { period: format!("2026-09-{day:02}"), value: 40.0 })
                .collect(),
        };
        let totals = to_date(&metric("sales.revenue.daily", Some("USD")), &today);
        assert_eq!(totals.len(), 2, "{totals:?}");
        assert!(totals[1].starts_with("Month to date"), "{totals:?}");
        assert_eq!(to_date(&metric("web.bounce.daily", Some("%")), &today), Vec::<String>::new());
        assert_eq!(to_date(&metric("community.unanswered.count", None), &today), Vec::<String>::new());
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
