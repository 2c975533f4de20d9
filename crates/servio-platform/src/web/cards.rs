//! The dashboard's cards, as the dashboard page and the MCP App show them: each card of the
//! dashboard data ([`domain::dashboard::cards`]) in words, its label, each site's line with its latest value, change, chart, to-date totals and why the latest
//! period is missing; and a site's collection status in words. Made from the typed
//! [`Dashboard`] that `GET /api/dashboard` serves.

use askama::Template;
use servio_manifest::period::Granularity;
use servio_store::{Attempt, AttemptOutcome};

use crate::domain::dashboard::{Dashboard, MetricData, dashboard_data};
use crate::error::ApiError;
use crate::shared::format;
use crate::shared::today::Today;
use crate::web::chart::Chart;
use crate::{AppState, domain};

/// The range the MCP App's cards show, in days.
const DEFAULT_RANGE: u32 = domain::figures::view::DEFAULT_DAYS;

/// One site's metric in a card, in words.
pub(crate) struct SiteLine {
    pub(crate) site: String,
    pub(crate) key: String,
    pub(crate) period: String,
    pub(crate) latest: Option<String>,
    pub(crate) change: Option<String>,
    pub(crate) change_class: &'static str,
    pub(crate) chart: String,
    pub(crate) to_date: Vec<String>,
    pub(crate) missing: Option<String>,
}

/// One card of the dashboard in words, for the templates: its label, a line per site, the
/// total (or a note saying why there is none). The card itself is
/// [`domain::dashboard::cards::Card`], which this is made from.
pub(crate) struct CardLines {
    pub(crate) label: String,
    pub(crate) key: String,
    pub(crate) lines: Vec<SiteLine>,
    pub(crate) total: Option<String>,
    pub(crate) note: Option<String>,
}

/// The dashboard's cards alone, for the MCP App view (`templates/mcp_app_cards.html`).
#[derive(Template)]
#[template(path = "mcp_app_cards.html")]
struct AppCards {
    cards: Vec<CardLines>,
}

/// The dashboard's cards of `user` (the default range), as the page renders them: every card,
/// or with `only` (a site's id and a metric key) that metric's line alone.
pub(crate) async fn cards_html(
    state: &AppState,
    user: &servio_store::User,
    only: Option<(i64, &str)>,
) -> Result<String, ApiError> {
    let mut dashboard = dashboard_data(state, user, DEFAULT_RANGE).await?;
    if let Some((site_id, key)) = only {
        // A card of several sites keeps only this one's line: its total would be another's.
        let keep: Vec<bool> = dashboard.metrics.iter().map(|m| m.site.id == site_id && m.key == key).collect();
        for card in &mut dashboard.cards {
            let kept = card.metrics.iter().zip(&card.sites).filter(|(index, _)| keep.get(**index) == Some(&true));
            (card.metrics, card.sites) = kept.map(|(index, site)| (*index, *site)).unzip();
            if card.metrics.len() < 2 {
                card.total = None;
                card.note = None;
            }
        }
        dashboard.cards.retain(|card| !card.metrics.is_empty());
    }
    let page = AppCards { cards: card_lines(dashboard)? };
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

/// The line of one metric of the dashboard data: its view, as every surface shows it.
fn site_line(metric: &MetricData) -> SiteLine {
    let unit = metric.unit.as_deref();
    let view = &metric.view;
    let change = metric.change.as_ref();
    let periods: Vec<String> = view.chart.iter().map(|point| point.period.clone()).collect();
    let values: Vec<Option<f64>> = view.chart.iter().map(|point| point.value).collect();
    let comparison: Vec<Option<f64>> = match Granularity::from_name(metric.granularity) {
        // Hours are drawn without the day before's.
        Some(Granularity::Hour) | None => Vec::new(),
        _ => view.chart.iter().map(|point| point.comparison).collect(),
    };
    let chart = Chart { periods: &periods, values: &values, comparison: &comparison, unit };
    SiteLine {
        site: metric.site.name.clone(),
        key: metric.key.clone(),
        period: metric.latest.as_ref().map(|l| l.period.clone()).unwrap_or_default(),
        latest: metric.latest.as_ref().map(|l| format::amount(l.value, unit)),
        change: change.map(|c| c.text.clone()),
        change_class: match change.map(|c| c.change) {
            Some(0.0) => "muted",
            Some(c) if c > 0.0 => "ok",
            _ => "warning",
        },
        chart: chart.svg(),
        to_date: view.to_date.iter().map(|total| total.text.clone()).collect(),
        missing: view.missing.clone(),
    }
}

/// The cards of the dashboard data in words, each with its sites' lines.
pub(crate) fn card_lines(dashboard: Dashboard) -> Result<Vec<CardLines>, ApiError> {
    let mut lines: Vec<Option<SiteLine>> = dashboard.metrics.iter().map(|metric| Some(site_line(metric))).collect();
    let cards = dashboard
        .cards
        .into_iter()
        .map(|card| CardLines {
            label: card.label.unwrap_or(&card.key).to_owned(),
            total: card.total.as_ref().and_then(|total| {
                total.value.map(|value| format!("{} · {}", format::amount(value, total.unit.as_deref()), total.period))
            }),
            lines: card.metrics.iter().filter_map(|&i| lines.get_mut(i)?.take()).collect(),
            note: card.note,
            key: card.key,
        })
        .collect();
    Ok(cards)
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
