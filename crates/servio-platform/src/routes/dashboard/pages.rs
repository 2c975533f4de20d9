//! The morning dashboard as a page: per metric the latest value with its unit and period, the
//! change against the comparison period only when that was collected, and a small SVG chart of
//! recent periods in which a missing period is a gap, never a zero. Below, each site's
//! collection log with the reasons a site owner can act on. A canonical key collected from
//! several sites is one card: each site's line, then their total or why there is none. The
//! cards are made from the same typed [`Dashboard`] that `GET /api/dashboard` serves.

use std::collections::{BTreeMap, BTreeSet};

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;

use super::service::{Dashboard, MetricData, dashboard_data};
use crate::AppState;
use crate::auth::PageUser;
use crate::error::ApiError;
use crate::routes::pages::{Layout, render, timestamp};

/// The dashboard page route.
pub fn router() -> Router<AppState> {
    Router::new().route("/dashboard", get(page))
}

/// One site's metric in a slot: its latest value, trend and chart.
struct SiteLine {
    site: String,
    key: String,
    unit: String,
    period: String,
    latest: Option<String>,
    change: Option<String>,
    change_class: String,
    chart: String,
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

struct LogRow {
    when: String,
    metric: String,
    period: String,
    outcome: String,
}

struct Log {
    site: String,
    summary: Vec<String>,
    rows: Vec<LogRow>,
}

#[derive(Template)]
#[template(path = "dashboard.html")]
struct DashboardPage {
    layout: Layout,
    time_zone: String,
    cards: Vec<Card>,
    logs: Vec<Log>,
}

fn format_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        let digits = (value.abs() as i64).to_string();
        let mut grouped = String::new();
        for (i, d) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(d);
        }
        if value < 0.0 { format!("-{grouped}") } else { grouped }
    } else {
        format!("{value:.2}")
    }
}

/// An SVG line of `points` (one per period, `None` where nothing was collected): segments
/// break at gaps.
pub fn chart(points: &[Option<f64>]) -> String {
    let (width, height) = (560.0, 80.0);
    let values: Vec<f64> = points.iter().flatten().copied().collect();
    if values.is_empty() {
        return String::new();
    }
    let (low, high) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
    let span = if high > low { high - low } else { 1.0 };
    let step = if points.len() > 1 { width / (points.len() - 1) as f64 } else { width };
    let mut segments: Vec<Vec<String>> = vec![Vec::new()];
    for (i, point) in points.iter().enumerate() {
        match point {
            Some(v) => {
                let (x, y) = (i as f64 * step, height - 4.0 - (v - low) / span * (height - 8.0));
                segments.last_mut().expect("one segment at least").push(format!("{x:.1},{y:.1}"));
            }
            None => segments.push(Vec::new()),
        }
    }
    let lines: String = segments
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.len() == 1 {
                let (x, y) = s[0].split_once(',').unwrap_or(("0", "0"));
                format!("<circle cx=\"{x}\" cy=\"{y}\" r=\"2\" fill=\"#2f6fde\"/>")
            } else {
                format!("<polyline fill=\"none\" stroke=\"#2f6fde\" stroke-width=\"2\" points=\"{}\"/>", s.join(" "))
            }
        })
        .collect();
    format!(
        "<svg viewBox=\"0 0 {width} {height}\" width=\"100%\" height=\"{height}\" role=\"img\" aria-label=\"recent periods\">{lines}</svg>"
    )
}

async fn page(State(state): State<AppState>, user: PageUser) -> Result<Response, ApiError> {
    let dashboard = dashboard_data(&state, &user.user).await?;
    let cards = cards(dashboard)?;
    let page = DashboardPage {
        layout: Layout::of(Some(&user)),
        time_zone: user.user.time_zone.clone(),
        cards,
        logs: logs(&state, user.user.id).await?,
    };
    Ok(render(&page))
}

/// The line of one metric of the dashboard data.
fn site_line(metric: &MetricData) -> Result<SiteLine, ApiError> {
    let values: BTreeMap<&str, f64> = metric.values.iter().map(|v| (v.period.as_str(), v.value)).collect();
    // One point per day between the first and the last collected period; gaps stay gaps.
    let points: Vec<Option<f64>> = match (values.keys().next(), values.keys().last()) {
        (Some(first), Some(last)) if metric.granularity == "day" => {
            let (mut day, last): (jiff::civil::Date, jiff::civil::Date) =
                (first.parse().map_err(ApiError::internal)?, last.parse().map_err(ApiError::internal)?);
            let mut points = Vec::new();
            while day <= last {
                points.push(values.get(day.to_string().as_str()).copied());
                day = day.tomorrow().map_err(ApiError::internal)?;
            }
            points
        }
        _ => values.values().map(|v| Some(*v)).collect(),
    };
    let change = metric.change.as_ref().map(|c| {
        let arrow = if c.change >= 0.0 { "▲" } else { "▼" };
        match c.percent {
            Some(percent) => format!("{arrow} {percent:+.1}% against {}", c.against),
            None => format!("{arrow} {:+} against {}", format_number(c.change), c.against),
        }
    });
    let rising = metric.change.as_ref().is_some_and(|c| c.change >= 0.0);
    Ok(SiteLine {
        site: metric.site.name.clone(),
        key: metric.key.clone(),
        unit: metric.unit.clone().unwrap_or_default(),
        period: metric.latest.as_ref().map(|l| l.period.clone()).unwrap_or_default(),
        latest: metric.latest.as_ref().map(|l| format_number(l.value)),
        change,
        change_class: if rising { "ok".into() } else { "warning".into() },
        chart: chart(&points),
    })
}

/// The cards of the dashboard data: one per slot, each with its sites' lines.
fn cards(dashboard: Dashboard) -> Result<Vec<Card>, ApiError> {
    let mut lines = Vec::new();
    for metric in &dashboard.metrics {
        lines.push(Some(site_line(metric)?));
    }
    let cards = dashboard
        .slots
        .into_iter()
        .map(|slot| Card {
            label: slot.label.unwrap_or(&slot.key).to_owned(),
            total: slot.total.as_ref().and_then(|total| {
                let unit = total.unit.as_ref().map(|u| format!(" {u}")).unwrap_or_default();
                total.value.map(|value| format!("{}{unit} · {}", format_number(value), total.period))
            }),
            lines: slot.metrics.iter().filter_map(|&i| lines.get_mut(i)?.take()).collect(),
            note: slot.note,
            key: slot.key,
        })
        .collect();
    Ok(cards)
}

/// Each site's collection log, newest first, with the reasons a site owner can act on.
async fn logs(state: &AppState, user_id: i64) -> Result<Vec<Log>, ApiError> {
    let mut logs = Vec::new();
    for site in state.store.vault(user_id).await? {
        let attempts = state.store.attempts(user_id, site.id, 200).await?;
        if attempts.is_empty() {
            continue;
        }
        logs.push(Log {
            site: site.origin.clone(),
            summary: summarize(&attempts),
            rows: attempts
                .iter()
                .take(20)
                .map(|a| LogRow {
                    when: timestamp(a.attempted_at),
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
    Ok(logs)
}

/// Reasons a site owner can act on: each distinct reason with how many periods it hit (a period
/// retried three times for one reason counts once).
fn summarize(attempts: &[servio_store::Attempt]) -> Vec<String> {
    let mut reasons: BTreeMap<String, BTreeSet<(&str, &str)>> = BTreeMap::new();
    for attempt in attempts.iter().filter(|a| a.outcome != servio_store::AttemptOutcome::Stored) {
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

    #[test]
    fn gaps_break_the_line_and_are_never_zero() {
        let svg = chart(&[Some(1.0), Some(2.0), None, Some(3.0), Some(1.0)]);
        assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
        let lone = chart(&[Some(1.0), None, Some(2.0)]);
        assert_eq!(lone.matches("<circle").count(), 2, "{lone}");
        assert_eq!(chart(&[None, None]), "");
        assert_eq!(format_number(2340.0), "2,340");
        assert_eq!(format_number(704.4), "704.40");
    }

    fn attempt(metric: &str, date: &str, outcome: &str, reason: Option<&str>) -> servio_store::Attempt {
        servio_store::Attempt {
            metric_key: metric.into(),
            start_date: date.into(),
            attempted_at: 0,
            outcome: outcome.parse().unwrap(),
            reason: reason.map(str::to_owned),
            raw: None,
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
