//! The audited figures: every metric collected for a user, and one metric's view ([`view`]):
//! its periods over a window, each with what it was read from (the zone, the tool, the
//! resolved arguments, the `valuePath`), the comparison (§8), the to-date totals and why the
//! periods without a value have none. The dashboard shows the views; MCP serves them as
//! resources, as the read-only tool [`METRICS_TOOL`](crate::domain::gateway::METRICS_TOOL), in the `morning_briefing` prompt and in the
//! App (see [`crate::mcp`]).
//!
//! A metric's address is `servio://metrics/{site}/{metric}`, where `{site}` is the site's host
//! (and `:port` when not the default) and `{metric}` the brief's key; `?from=&to=` (local
//! period start dates, `YYYY-MM-DD`) choose the range.

use std::collections::HashMap;

use jiff::civil::Date;
use jiff::tz::TimeZone;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use servio_manifest::Metric;
use servio_manifest::period::{self, Granularity, Period};
use servio_store::{AttemptOutcome, PeriodNumber, StoredValue, UnfilledPeriod, User};
use utoipa::ToSchema;

use crate::AppState;
use crate::error::ApiError;
use crate::shared::dates::{Range, dates};
use crate::shared::today::Today;
use crate::shared::trend::{Trend, change_words, comparison_start, trend};

pub mod view;

pub use view::{MetricView, ViewSummary, Window};

/// Where a metric's address starts.
pub const URI_PREFIX: &str = "servio://metrics/";
/// The address of any metric over any range (RFC 6570).
pub const URI_TEMPLATE: &str = "servio://metrics/{site}/{metric}{?from,to}";

/// Why figures could not be given.
#[derive(Debug, thiserror::Error)]
pub enum FiguresError {
    /// The address or the arguments are wrong: says what.
    #[error("{0}")]
    Invalid(String),
    /// No such metric in the user's vault.
    #[error("{0}")]
    NotFound(String),
    /// The platform failed.
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// A metric collected for the user.
pub struct MetricRef {
    /// The site's host and port, as in the address.
    pub site: String,
    /// The site's origin.
    pub origin: String,
    /// The site's id in the vault.
    pub(crate) site_id: i64,
    /// The manifest's name.
    pub site_name: String,
    /// The metric as the acting brief declares it.
    pub metric: Metric,
}

impl MetricRef {
    /// Its address.
    pub fn uri(&self) -> String {
        format!("{URI_PREFIX}{}/{}", self.site, self.metric.key)
    }

    /// Its name for people: the canonical key's label, or the key.
    pub fn title(&self) -> String {
        let label = servio_manifest::brief::canonical_label(&self.metric.key).unwrap_or(&self.metric.key);
        format!("{label} on {}", self.site_name)
    }
}

/// What names a metric: its site and its brief's declaration, as the list, a resource and the
/// tool's answers all give it.
#[derive(Debug, Serialize)]
pub struct MetricInfo {
    /// The site's host and port.
    pub site: String,
    /// The site's origin.
    pub origin: String,
    /// The manifest's name.
    pub site_name: String,
    /// The metric's key.
    pub metric: String,
    /// The canonical key's label.
    pub label: Option<&'static str>,
    /// The declared unit.
    pub unit: Option<String>,
    /// `hour`, `day`, `week` or `month`.
    pub granularity: &'static str,
}

impl From<&MetricRef> for MetricInfo {
    fn from(found: &MetricRef) -> MetricInfo {
        MetricInfo {
            site: found.site.clone(),
            origin: found.origin.clone(),
            site_name: found.site_name.clone(),
            metric: found.metric.key.clone(),
            label: servio_manifest::brief::canonical_label(&found.metric.key),
            unit: found.metric.unit.clone(),
            granularity: found.metric.granularity.as_str(),
        }
    }
}

/// One entry of the list of metrics: the metric, its resource, and its latest figure in the
/// default window (the view's, `view::view`).
#[derive(Debug, Serialize)]
pub struct Listed {
    /// The metric.
    #[serde(flatten)]
    pub metric: MetricInfo,
    /// The metric's resource.
    pub uri: String,
    /// The newest period with a value in the default window, with its change.
    pub latest: Option<view::LatestFigure>,
    /// Why the latest due period has no value, when it has none.
    pub missing: Option<String>,
}

impl Listed {
    /// The entry of `found`, with what its view says of its latest period.
    pub fn of(found: &MetricRef, view: &ViewSummary) -> Listed {
        Listed {
            metric: MetricInfo::from(found),
            uri: found.uri(),
            latest: view.latest_figure(),
            missing: view.missing.clone(),
        }
    }
}

/// The host and port of `origin` (`shop.example`, `localhost:8443`): its address's `{site}`.
pub(crate) fn authority(origin: &str) -> &str {
    origin.split_once("://").map_or(origin, |(_, rest)| rest).trim_end_matches('/')
}

/// Every metric of the briefs acting for `user` (the manifests they approved), site by site,
/// from the gateway's kept catalogue (the same sites, read once for tools and figures alike).
pub async fn metrics(state: &AppState, user: &User) -> Result<Vec<MetricRef>, ApiError> {
    let catalogue = crate::domain::gateway::catalogue(state, user).await?;
    let mut found = Vec::new();
    for (entry, acting) in catalogue.sites() {
        for metric in acting.brief.iter().flat_map(|brief| &brief.metrics) {
            found.push(MetricRef {
                site: authority(&entry.site.origin).to_owned(),
                origin: entry.site.origin.clone(),
                site_id: entry.site.id,
                site_name: acting.manifest.name.clone(),
                metric: metric.clone(),
            });
        }
    }
    Ok(found)
}

/// Which metric, over which local dates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ask {
    /// The site: its host and port, its origin, or any URL on it.
    pub site: String,
    /// The metric's key.
    pub metric: String,
    /// The first period's start date, `YYYY-MM-DD`.
    pub from: Option<String>,
    /// The last period's start date.
    pub to: Option<String>,
}

impl Ask {
    /// The ask a metric's address makes: `servio://metrics/{site}/{metric}[?from=&to=]`.
    pub fn from_uri(uri: &str) -> Result<Ask, FiguresError> {
        // No resource has an address of another form: it is not there.
        let invalid = || FiguresError::NotFound(format!("{uri:?} is not a metric's address: {URI_TEMPLATE}"));
        let rest = uri.strip_prefix(URI_PREFIX).ok_or_else(invalid)?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (site, metric) = path.split_once('/').ok_or_else(invalid)?;
        if site.is_empty() || metric.is_empty() || metric.contains('/') {
            return Err(invalid());
        }
        let mut ask = Ask { site: site.to_owned(), metric: metric.to_owned(), ..Ask::default() };
        for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
            let slot = match &*name {
                "from" => &mut ask.from,
                "to" => &mut ask.to,
                other => return Err(FiguresError::Invalid(format!("{uri:?}: unknown parameter {other:?}: from, to"))),
            };
            if slot.replace(value.into_owned()).is_some() {
                return Err(FiguresError::Invalid(format!("{uri:?}: `{name}` is given twice")));
            }
        }
        Ok(ask)
    }

    /// The address of this ask (with its range, when it names one).
    fn uri(&self, found: &MetricRef) -> String {
        let mut uri = found.uri();
        let range: Vec<String> = [("from", &self.from), ("to", &self.to)]
            .into_iter()
            .filter_map(|(name, value)| Some(format!("{name}={}", value.as_deref()?)))
            .collect();
        if !range.is_empty() {
            uri = format!("{uri}?{}", range.join("&"));
        }
        uri
    }
}

/// The metric `ask` names among `metrics`: the site by its host and port (whatever scheme or
/// path it was given with), the metric by its key.
pub fn find<'a>(metrics: &'a [MetricRef], ask: &Ask) -> Result<&'a MetricRef, FiguresError> {
    let wanted = servio_manifest::Site::parse(ask.site.trim())
        .map_err(|e| FiguresError::Invalid(format!("site {:?}: {e}", ask.site)))?;
    let wanted = authority(wanted.origin());
    let of_site: Vec<&MetricRef> = metrics.iter().filter(|m| m.site.eq_ignore_ascii_case(wanted)).collect();
    if of_site.is_empty() {
        return Err(FiguresError::NotFound(format!("no site {wanted:?} with collected metrics in your vault")));
    }
    of_site.into_iter().find(|m| m.metric.key == ask.metric).ok_or_else(|| {
        FiguresError::NotFound(format!("site {wanted:?} has no metric {:?} in the brief you approved", ask.metric))
    })
}

/// One metric's view over a range, as a resource and the tool give it.
#[derive(Debug, Serialize)]
pub struct History {
    /// Its address, with the range asked for (the metric's own address is `uri` in the list).
    pub uri: String,
    /// The metric.
    #[serde(flatten)]
    pub metric: MetricInfo,
    /// The user's zone now, in which `from` and `to` are read.
    pub time_zone: String,
    /// The periods, their comparisons, the to-date totals and the reasons: the one view of the
    /// metric the dashboard shows too.
    #[serde(flatten)]
    pub view: MetricView,
    /// How to read it.
    pub note: &'static str,
}

/// What a model is told of the figures.
const NOTE: &str = "Each value is the number the site's tool answered at value_path, for the period \
    in time_zone, collected at collected_at; raw is that answer's value as the site wrote it. A \
    period in neither periods nor unfilled was not collected (yet). A comparison is made only \
    against a period that was collected; otherwise it says why not. The window is the periods \
    from `from` to `to`, ending at the latest due period unless a range was asked for; these are \
    the figures, changes, totals and reasons the user's dashboard shows.";

/// A period with its value, and where the value comes from.
#[derive(Debug, Serialize, ToSchema)]
pub struct Figure {
    /// The period's key: its start date (and hour, for `hour`).
    pub period: String,
    /// Its first instant, RFC 3339 in the zone it was collected in.
    pub period_start: String,
    /// The first instant after it.
    pub period_end: String,
    /// The zone it was resolved in when collected (`null` for values from before this was kept).
    pub time_zone: Option<String>,
    /// The value.
    pub value: f64,
    /// The value as the site sent it: a number or a string.
    #[schema(schema_with = Raw::schema)]
    pub raw: Raw,
    /// When it was collected (UTC).
    pub collected_at: String,
    /// The tool called, unprefixed.
    pub tool: Option<String>,
    /// The arguments it was called with, placeholders filled.
    #[schema(value_type = Option<Object>)]
    pub arguments: Option<Value>,
    /// Where the number was in the answer.
    pub value_path: Option<String>,
    /// Against the comparison period.
    pub comparison: Comparison,
}

/// A period against its comparison period (§8).
#[derive(Debug, Serialize, ToSchema)]
pub struct Comparison {
    /// The comparison period's key.
    pub period: Option<String>,
    /// Its value, when it was collected.
    pub value: Option<f64>,
    /// The difference, when there is a value to compare with (in points for a rate in percent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<f64>,
    /// The difference in percent, unless the earlier value is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent: Option<f64>,
    /// The change in words, as the dashboard shows it: "no change against 2026-12-01",
    /// "▲ +2.1 pts against …" for a rate in percent, "▲ +20.0% against …" otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Why there is nothing to compare with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A period tried without a value.
#[derive(Debug, Serialize, ToSchema)]
pub struct Unfilled {
    /// The period's key.
    pub period: String,
    /// Its first instant (UTC).
    pub period_start: String,
    /// `dropped` (the answer held no number), `failed` (for good) or `retrying`.
    #[schema(value_type = String)]
    pub outcome: &'static str,
    /// Why, as the period's latest attempt says.
    pub reason: String,
    /// When it was last tried (UTC).
    pub attempted_at: String,
    /// When it is tried again, if it is (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<String>,
}

/// How many days an hour's range may span (others, 400: [`dates`]).
const MAX_HOUR_SPAN_DAYS: i64 = 31;

/// The view of `found` that `ask` wants, for `user`: the default window (the periods of
/// [`view::DEFAULT_DAYS`] days ending at the latest due period, as the dashboard shows) unless a
/// range is asked for.
pub async fn history(state: &AppState, user: &User, found: &MetricRef, ask: &Ask) -> Result<History, FiguresError> {
    let today = Today::of(user)?;
    let window = window(ask, found.metric.granularity, &today)?;
    let view = view::view(state, user.id, &today, found, &window).await?;
    Ok(History {
        uri: ask.uri(found),
        metric: MetricInfo::from(found),
        time_zone: user.time_zone.clone(),
        view,
        note: NOTE,
    })
}

/// The window `ask` names: without dates, the default one; with one or both, those dates,
/// checked as a backfill's are (`YYYY-MM-DD` from 1970 to 2999, `to` at most 400 days after
/// `from`), and an hour's range at most [`MAX_HOUR_SPAN_DAYS`]. A missing `to` is the latest
/// due period's date, a missing `from` as far before `to` as the default window reaches.
fn window(ask: &Ask, granularity: Granularity, today: &Today) -> Result<Window, FiguresError> {
    if ask.from.is_none() && ask.to.is_none() {
        return Ok(Window::Last(view::DEFAULT_DAYS));
    }
    let to = match &ask.to {
        Some(text) => text.clone(),
        None => view::latest_due(granularity, today)?.start_date.to_string(),
    };
    let from = match &ask.from {
        Some(text) => text.clone(),
        // A `to` that is not a date is said so by the check.
        None => to
            .parse::<Date>()
            .ok()
            .and_then(|to| view::first_date(granularity, to, view::DEFAULT_DAYS))
            .map_or_else(|| to.clone(), |from| from.to_string()),
    };
    let (from, to) = dates(&Range { from, to }).map_err(|error| FiguresError::Invalid(error.to_string()))?;
    if granularity == Granularity::Hour && i64::from((to - from).get_days()) > MAX_HOUR_SPAN_DAYS {
        return Err(FiguresError::Invalid(format!(
            "`to` must be at most {MAX_HOUR_SPAN_DAYS} days after `from` for a metric by the hour"
        )));
    }
    Ok(Window::Dates(from, to))
}

fn compared_with(granularity: Granularity) -> &'static str {
    match granularity {
        Granularity::Hour => "the same hour the day before",
        Granularity::Day => "the same weekday a week earlier",
        Granularity::Week => "the week before",
        Granularity::Month => "the month before",
    }
}

/// What a stored source says (a JSON object; `{}` for values from before it was kept).
fn source_of(value: &StoredValue) -> serde_json::Map<String, Value> {
    value.source.as_deref().and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default()
}

/// `instant` (Unix seconds) in RFC 3339, in `zone` or in UTC.
fn instant(seconds: i64, zone: Option<&TimeZone>) -> String {
    let Ok(instant) = jiff::Timestamp::from_second(seconds) else { return seconds.to_string() };
    match zone {
        Some(zone) => instant.to_zoned_datetime(zone.clone()).strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        None => instant.to_string(),
    }
}

/// The values read by key, and the periods tried without a value by key: what a comparison
/// looks among.
type Known<'a> = (&'a HashMap<&'a str, &'a PeriodNumber>, &'a HashMap<String, &'a UnfilledPeriod>);

/// A stored value as a figure, with its comparison among the values and unfilled periods known.
fn figure(value: &StoredValue, metric: &Metric, user_zone: &TimeZone, known: Known<'_>) -> Figure {
    let mut source = source_of(value);
    let zone_name = source.get("time_zone").and_then(Value::as_str).map(str::to_owned);
    let zone = zone_name.as_deref().and_then(|name| period::zone(name).ok());
    let text = |name: &str| source.get(name).and_then(Value::as_str).map(str::to_owned);
    let (tool, value_path) = (text("tool"), text("value_path"));
    let arguments = source.remove("arguments");
    let period = Period::from_key(metric.granularity, &value.period.key, zone.as_ref().unwrap_or(user_zone));
    Figure {
        period: value.period.key.clone(),
        period_start: instant(value.period.start, zone.as_ref()),
        period_end: instant(value.period.end, zone.as_ref()),
        time_zone: zone_name,
        value: value.value,
        raw: Raw::from_stored(&value.raw),
        collected_at: instant(value.collected_at, None),
        tool,
        arguments,
        value_path,
        comparison: comparison(value.value, period.as_ref(), metric, known),
    }
}

/// The key of the period `period` is compared with (§8).
fn comparison_key(period: &Period) -> Option<String> {
    let (date, hour) = comparison_start(period).ok()?;
    Some(match period.granularity {
        Granularity::Hour => format!("{date}T{hour:02}"),
        _ => date.to_string(),
    })
}

/// A value against its comparison period, when that was collected; otherwise why not.
fn comparison(current: f64, period: Option<&Period>, metric: &Metric, (values, unfilled): Known<'_>) -> Comparison {
    let none = |period: Option<String>, reason: String| Comparison {
        period,
        value: None,
        change: None,
        percent: None,
        text: None,
        reason: Some(reason),
    };
    let Some(key) = period.and_then(comparison_key) else {
        return none(None, "the period could not be resolved to find the one before it".to_owned());
    };
    let previous = values.get(key.as_str()).map(|number| number.value);
    let words = |change: f64, percent: Option<f64>| {
        Some(change_words(change, percent, &key, &metric.key, metric.unit.as_deref()))
    };
    match trend(current, previous) {
        Trend::None => {
            let reason = match unfilled.get(&key) {
                Some(tried) => format!("{key} has no value: {}", tried.reason.as_deref().unwrap_or("no reason logged")),
                None => format!("nothing was collected for {key}"),
            };
            none(Some(key), reason)
        }
        Trend::Absolute(change) => Comparison {
            text: words(change, None),
            period: Some(key),
            value: previous,
            change: Some(change),
            percent: None,
            reason: Some("the earlier value is 0: no percentage".to_owned()),
        },
        Trend::Relative { change, percent } => Comparison {
            text: words(change, Some(percent)),
            period: Some(key),
            value: previous,
            change: Some(change),
            percent: Some(percent),
            reason: None,
        },
    }
}

/// The key of an unfilled period (its start date and instant, for attempts from before keys).
fn unfilled_key(unfilled: &UnfilledPeriod) -> String {
    unfilled.period_key.clone().unwrap_or_else(|| format!("{}@{}", unfilled.start_date, unfilled.period_start))
}

fn unfilled_of(unfilled: &UnfilledPeriod) -> Unfilled {
    Unfilled {
        period: unfilled_key(unfilled),
        period_start: instant(unfilled.period_start, None),
        outcome: match unfilled.outcome {
            AttemptOutcome::Dropped => "dropped",
            AttemptOutcome::Retry => "retrying",
            _ => "failed",
        },
        reason: unfilled.reason.clone().unwrap_or_else(|| "no reason logged".to_owned()),
        attempted_at: instant(unfilled.attempted_at, None),
        retry_at: unfilled.retry_at.map(|at| instant(at, None)),
    }
}

/// The value as the site sent it, kept for audit: the store keeps the JSON text found at the
/// brief's `valuePath`, and the API serves it as that JSON (`3969.55` for a number, `"$936.24"`
/// for a string), not as a string holding JSON text. The text goes out byte for byte, so a
/// number keeps every digit the site wrote.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Raw {
    /// Stored text that is JSON, served as it is.
    Json(Box<RawValue>),
    /// Stored text that is not JSON, served as a string: an audit field never fails a dashboard.
    Text(String),
}

impl Raw {
    /// Its schema: a number or a string (§7 reads a value from nothing else).
    pub(crate) fn schema() -> utoipa::openapi::Object {
        use utoipa::openapi::schema::{SchemaType, Type};
        let types = SchemaType::from_iter([Type::Number, Type::String]);
        utoipa::openapi::ObjectBuilder::new().schema_type(types).build()
    }

    pub(crate) fn from_stored(text: &str) -> Raw {
        RawValue::from_string(text.to_owned()).map_or_else(|_| Raw::Text(text.to_owned()), Raw::Json)
    }

    /// The same text again.
    pub(crate) fn copy(&self) -> Raw {
        match self {
            Raw::Json(json) => Raw::from_stored(json.get()),
            Raw::Text(text) => Raw::Text(text.clone()),
        }
    }
}
