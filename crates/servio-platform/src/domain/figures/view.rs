//! One view of a metric (interpretation §8, 2026-12-07): its periods in a window, each value
//! with where it came from and its comparison, the change of the newest one worded once, the
//! week- and month-to-date totals, the reason each period without a value has none (its latest
//! attempt's), and this week's periods that ended without a value. Computed here once, by
//! `view`, and served as it is by the dashboard page, `GET /api/dashboard`, the MCP
//! resources, the `servio_metrics` tool, the `morning_briefing` prompt and the MCP App. One
//! metric's view is two indexed reads (`view`); a dashboard's views are two reads for all its
//! metrics (`views`); both feed the same pure computation.
//!
//! A window of N days is the periods of those days ending at the latest due period
//! ([`Window::Last`]): N days, N / 7 weeks or N / 30 months (two at least), or the hours of N
//! days; a window of dates ([`Window::Dates`]) is the periods starting on them, up to the latest
//! due one.

use std::collections::{HashMap, HashSet};

use jiff::ToSpan;
use jiff::civil::Date;
use serde::Serialize;
use servio_manifest::additivity::{Additivity, additivity};
use servio_manifest::period::{Granularity, Period, PeriodError};
use servio_store::{AttemptOutcome, PeriodKeys, PeriodNumber, StoredValue, UnfilledPeriod};
use utoipa::ToSchema;

use super::{Comparison, Figure, FiguresError, Known, MetricRef, Unfilled};
use crate::AppState;
use crate::error::ApiError;
use crate::shared::decimal::round_to_operands;
use crate::shared::format;
use crate::shared::today::Today;

/// The window shown unless another is asked for, in days: the page's and MCP's (the API's
/// `?days=` keeps its default of 62, with the same meaning).
pub const DEFAULT_DAYS: u32 = 28;
/// How far before a window its comparison periods reach (a month, for `month`).
const COMPARISON_REACH_SECONDS: i64 = 32 * 24 * 3600;
/// How far the same local period may lie from where the user's zone now puts it, when it was
/// collected in another zone (offsets differ by 26 hours at most).
const ZONE_ROOM_SECONDS: i64 = 27 * 3600;
/// How many days back "this week" reaches: the periods starting on the seven days before today,
/// and today.
const WEEK_DAYS: i64 = 7;

/// Which periods a view shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The periods of this many days ending at the latest due period.
    Last(u32),
    /// The periods starting on these dates (first, last), up to the latest due one.
    Dates(Date, Date),
}

/// One metric's view: the same on every surface.
#[derive(Debug, Serialize, ToSchema)]
pub struct MetricView {
    /// The first period's start date.
    pub from: String,
    /// The last period's start date: the latest due period's, unless a range ended earlier.
    pub to: String,
    /// How many periods the window holds (with a value or not).
    pub window: usize,
    /// What each period is compared with (§8).
    #[schema(value_type = String)]
    pub compared_with: &'static str,
    /// The periods of the window with a value, oldest first, each with its source and its
    /// comparison; the last one's comparison is the card's change.
    pub periods: Vec<Figure>,
    /// The periods of the window tried without a value, oldest first, each with its latest
    /// attempt's outcome and reason.
    pub unfilled: Vec<Unfilled>,
    /// Week- and month-to-date totals (only for an amount per day, §8).
    pub to_date: Vec<ToDate>,
    /// Why the latest due period has no value, and what happens next (its latest attempt's
    /// reason), when it has none.
    pub missing: Option<String>,
    /// This week's periods whose latest attempt ended without a value.
    pub this_week: ThisWeek,
    /// Every period of the window, for charts (not served: `periods` and `unfilled` say it).
    #[serde(skip)]
    pub(crate) chart: Vec<ChartPoint>,
    /// The window's values as (period start instant, start date, value), for slot totals.
    #[serde(skip)]
    pub(crate) points: Vec<(i64, String, f64)>,
}

/// A metric's view without each period's figure, as the dashboard and the lists serve it: the
/// window's values are the dashboard's `values`, each one's source is in the metric's resource;
/// the newest keeps its figure (source and comparison). Everything else is the view's own.
#[derive(Debug, Serialize, ToSchema)]
pub struct ViewSummary {
    /// The first period's start date.
    pub from: String,
    /// The last period's start date: the latest due period's, unless a range ended earlier.
    pub to: String,
    /// How many periods the window holds (with a value or not).
    pub window: usize,
    /// What each period is compared with (§8).
    #[schema(value_type = String)]
    pub compared_with: &'static str,
    /// The newest period with a value, with its source and its comparison (the card's change).
    pub latest: Option<Figure>,
    /// The periods of the window tried without a value, oldest first, each with its latest
    /// attempt's outcome and reason.
    pub unfilled: Vec<Unfilled>,
    /// Week- and month-to-date totals (only for an amount per day, §8).
    pub to_date: Vec<ToDate>,
    /// Why the latest due period has no value, and what happens next, when it has none.
    pub missing: Option<String>,
    /// This week's periods whose latest attempt ended without a value.
    pub this_week: ThisWeek,
    #[serde(skip)]
    pub(crate) chart: Vec<ChartPoint>,
    #[serde(skip)]
    pub(crate) points: Vec<(i64, String, f64)>,
}

impl From<MetricView> for ViewSummary {
    fn from(mut view: MetricView) -> ViewSummary {
        ViewSummary {
            latest: view.periods.pop(),
            from: view.from,
            to: view.to,
            window: view.window,
            compared_with: view.compared_with,
            unfilled: view.unfilled,
            to_date: view.to_date,
            missing: view.missing,
            this_week: view.this_week,
            chart: view.chart,
            points: view.points,
        }
    }
}

impl ViewSummary {
    /// The newest period with a value, for the list.
    pub fn latest_figure(&self) -> Option<LatestFigure> {
        self.latest.as_ref().map(|figure| LatestFigure {
            period: figure.period.clone(),
            value: figure.value,
            change: figure.comparison.text.clone(),
        })
    }

    /// The newest value's comparison, when it has a change.
    pub fn change(&self) -> Option<&Comparison> {
        self.latest.as_ref().map(|figure| &figure.comparison).filter(|c| c.change.is_some())
    }
}

/// A week- or month-to-date total.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ToDate {
    /// "Week to date" or "Month to date".
    #[schema(value_type = String)]
    pub label: &'static str,
    /// The first day counted (the Monday, the 1st); the last is yesterday.
    pub from: String,
    /// The sum of the values collected.
    pub total: f64,
    /// Days with a value.
    pub collected: usize,
    /// Days in the span.
    pub days: usize,
    /// As the card says it: "Week to date $1,234.56, 3 of 4 days".
    pub text: String,
}

/// How many of this week's periods (those starting on the last seven days and today) ended
/// without a value, by their latest attempt: each period counts once, however many times it
/// was tried.
#[derive(Debug, Clone, Copy, Default, Serialize, ToSchema)]
pub struct ThisWeek {
    /// The site answered, but no number was found.
    pub dropped: usize,
    /// The call failed for good.
    pub failed: usize,
}

/// The newest value of a view, as the list of metrics gives it.
#[derive(Debug, Clone, Serialize)]
pub struct LatestFigure {
    /// The period's key.
    pub period: String,
    /// The value.
    pub value: f64,
    /// The change in words against the comparison period, when that was collected.
    pub change: Option<String>,
}

/// One period of a chart: its key, its value and its comparison period's value.
#[derive(Debug, Clone)]
pub(crate) struct ChartPoint {
    pub(crate) period: String,
    pub(crate) value: Option<f64>,
    pub(crate) comparison: Option<f64>,
}

/// The latest due period of `granularity` for `today`'s user.
pub(crate) fn latest_due(granularity: Granularity, today: &Today) -> Result<Period, FiguresError> {
    servio_collector::plan::latest_due(granularity, &today.zone, today.now).map_err(|e| invalid_period(&e))
}

fn invalid_period(error: &PeriodError) -> FiguresError {
    FiguresError::Invalid(format!("the period could not be resolved: {error}"))
}

/// The first start date of a window of `days` days whose last period starts on `last`.
pub(crate) fn first_date(granularity: Granularity, last: Date, days: u32) -> Option<Date> {
    let days = i64::from(days.max(1));
    match granularity {
        Granularity::Hour | Granularity::Day => last.checked_sub((days - 1).days()).ok(),
        Granularity::Week => last.checked_sub((7 * ((days / 7).max(2) - 1)).days()).ok(),
        Granularity::Month => last.checked_sub(((days / 30).max(2) - 1).months()).ok(),
    }
}

/// The periods of `window` for a metric of `granularity`, oldest first, none after `due`.
fn periods(granularity: Granularity, window: Window, due: &Period, today: &Today) -> Result<Vec<Period>, FiguresError> {
    let (first, last) = match window {
        Window::Last(days) => {
            let last = due.start_date;
            (first_date(granularity, last, days).ok_or_else(|| invalid_period(&PeriodError::OutOfRange))?, last)
        }
        Window::Dates(first, last) => (first, last.min(due.start_date)),
    };
    if first > last {
        return Ok(Vec::new());
    }
    let mut periods = servio_collector::plan::periods_between(granularity, first, last, &today.zone)
        .map_err(|e| invalid_period(&e))?;
    periods.retain(|period| period.start <= due.start);
    Ok(periods)
}

/// What a view of one metric reads: its window's periods, its latest due period, and the
/// period starts to read (the window with its comparison periods, the month and the week so
/// far, up to now).
struct Reach {
    periods: Vec<Period>,
    due: Period,
    starts: std::ops::Range<i64>,
}

fn reach(found: &MetricRef, window: &Window, today: &Today) -> Result<Reach, FiguresError> {
    let granularity = found.metric.granularity;
    let due = latest_due(granularity, today)?;
    let periods = periods(granularity, *window, &due, today)?;
    let month = today.date.first_of_month();
    let week = today.date.checked_sub(WEEK_DAYS.days()).unwrap_or(month);
    let since_day = servio_manifest::period::resolve(Granularity::Day, month.min(week), 0, &today.zone)
        .map_or(today.now.as_second(), |p| p.start.as_second());
    let first_start = periods.first().map_or(due.start.as_second(), |p| p.start.as_second());
    let since = first_start.min(since_day) - COMPARISON_REACH_SECONDS - ZONE_ROOM_SECONDS;
    let until = periods.last().map_or(0, |p| p.end.as_second()).max(today.now.as_second()) + ZONE_ROOM_SECONDS;
    Ok(Reach { periods, due, starts: since..until })
}

/// The view of `found` for user `user_id` over `window`, as of `today`: two indexed reads (the
/// values and the periods without one).
pub(crate) async fn view(
    state: &AppState,
    user_id: i64,
    today: &Today,
    found: &MetricRef,
    window: &Window,
) -> Result<MetricView, FiguresError> {
    let Reach { periods, due, starts } = reach(found, window, today)?;
    let key = &found.metric.key;
    // Both at once: on SQLite, two of the pool's readers.
    let (values, unfilled) = tokio::try_join!(
        state.store.values(user_id, found.site_id, key, starts.clone()),
        state.store.unfilled_periods(user_id, found.site_id, key, starts),
    )
    .map_err(ApiError::from)?;
    let numbers: Vec<PeriodNumber> = values.iter().map(PeriodNumber::of).collect();
    Ok(compute(found, (&periods, &due), today, (&numbers, &unfilled), Figures::Every(&values)))
}

/// The views of `metrics` over `window`, in their order, as summaries (each metric's figures
/// dropped once it is summed up: a year of fifty metrics is 20,000 of them), from two reads
/// for them all (one read a metric was most of a dashboard's request): the values and the
/// periods without one of every (site, metric) from the earliest period any of them reads.
pub(crate) async fn views(
    state: &AppState,
    user_id: i64,
    today: &Today,
    metrics: &[MetricRef],
    window: &Window,
) -> Result<Vec<ViewSummary>, FiguresError> {
    let reaches: Vec<Reach> = metrics.iter().map(|found| reach(found, window, today)).collect::<Result<_, _>>()?;
    let (Some(since), Some(until)) =
        (reaches.iter().map(|r| r.starts.start).min(), reaches.iter().map(|r| r.starts.end).max())
    else {
        return Ok(Vec::new());
    };
    let mut sites: Vec<i64> = metrics.iter().map(|found| found.site_id).collect();
    sites.sort_unstable();
    sites.dedup();
    // Hours are keyed by their local hour, the others by their date (read from an index alone).
    let hourly = |found: &&MetricRef| found.metric.granularity == Granularity::Hour;
    let (by_hour, by_date) = (keys_of(metrics.iter().filter(hourly)), keys_of(metrics.iter().filter(|m| !hourly(m))));
    let all_keys = keys_of(metrics.iter());
    let store = &state.store;
    // The numbers alone (packed on SQLite), then the whole rows of the one value each metric
    // shows with its source.
    let (dated, hours, unfilled) = tokio::try_join!(
        store.numbers_in(user_id, (&sites, &by_date), since..until, PeriodKeys::Dates),
        store.numbers_in(user_id, (&sites, &by_hour), since..until, PeriodKeys::Stored),
        store.unfilled_in(user_id, &sites, &all_keys, since..until),
    )
    .map_err(ApiError::from)?;
    let mut values_of: HashMap<(bool, i64, String), Vec<PeriodNumber>> = HashMap::new();
    for (hour, found) in dated.into_iter().map(|v| (false, v)).chain(hours.into_iter().map(|v| (true, v))) {
        values_of.insert((hour, found.site_id, found.metric_key), found.numbers);
    }
    let mut unfilled_of: HashMap<(i64, String), Vec<UnfilledPeriod>> = HashMap::new();
    for found in unfilled {
        unfilled_of.entry((found.site_id, found.metric_key)).or_default().push(found.period);
    }
    let read: Vec<(Vec<PeriodNumber>, Vec<UnfilledPeriod>)> = metrics
        .iter()
        .map(|found| {
            let at = (found.site_id, found.metric.key.clone());
            let values = values_of.remove(&(hourly(&found), at.0, at.1.clone())).unwrap_or_default();
            (values, unfilled_of.remove(&at).unwrap_or_default())
        })
        .collect();
    let newest: Vec<Option<&PeriodNumber>> = metrics
        .iter()
        .zip(&reaches)
        .zip(&read)
        .map(|((_, reach), (values, _))| newest_in(&reach.periods, values))
        .collect();
    let at: Vec<(i64, &str, i64)> = metrics
        .iter()
        .zip(&newest)
        .filter_map(|(found, value)| value.map(|value| (found.site_id, found.metric.key.as_str(), value.start)))
        .collect();
    let mut whole: HashMap<(i64, String, i64), StoredValue> = HashMap::new();
    for found in state.store.values_at(user_id, &at).await.map_err(ApiError::from)? {
        whole.insert((found.site_id, found.value.metric_key.clone(), found.value.period.start), found.value);
    }
    Ok(metrics
        .iter()
        .zip(&reaches)
        .zip(&read)
        .zip(&newest)
        .map(|(((found, reach), (values, unfilled)), newest)| {
            // Gone since the numbers were read (its site removed): no figure, rather than one
            // without its source and instants.
            let shown = newest.and_then(|value| whole.get(&(found.site_id, found.metric.key.clone(), value.start)));
            let read = (values.as_slice(), unfilled.as_slice());
            ViewSummary::from(compute(found, (&reach.periods, &reach.due), today, read, Figures::Newest(shown)))
        })
        .collect())
}

/// The distinct metric keys of `metrics`, sorted.
fn keys_of<'a>(metrics: impl Iterator<Item = &'a MetricRef>) -> Vec<&'a str> {
    let mut keys: Vec<&str> = metrics.map(|found| found.metric.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The value of the newest period of `periods` that has one.
fn newest_in<'a>(periods: &[Period], values: &'a [PeriodNumber]) -> Option<&'a PeriodNumber> {
    let by_key: HashMap<&str, &PeriodNumber> = values.iter().map(|v| (v.key(), v)).collect();
    periods.iter().rev().find_map(|period| by_key.get(period.key().as_str()).copied())
}

/// Which periods of a view get their figure (source, instants, comparison): a figure costs a
/// parse of its source and its instants' formatting, and a summary shows only the newest one
/// (a dashboard of fifty metrics over 62 days built 3,100 of them and kept fifty).
#[derive(Debug, Clone, Copy)]
enum Figures<'a> {
    /// Every value of the window, from these whole ones.
    Every(&'a [StoredValue]),
    /// The newest period's value alone, whole (read apart from the others' numbers).
    Newest(Option<&'a StoredValue>),
}

/// The view, from what was read (the window's periods and the latest due one; the values and
/// the periods without one): pure, so that every surface shows the same.
fn compute(
    found: &MetricRef,
    (periods, due): (&[Period], &Period),
    today: &Today,
    (values, unfilled): (&[PeriodNumber], &[UnfilledPeriod]),
    wanted: Figures<'_>,
) -> MetricView {
    let metric = &found.metric;
    let by_key: HashMap<&str, &PeriodNumber> = values.iter().map(|v| (v.key(), v)).collect();
    let why_not: HashMap<String, &UnfilledPeriod> = unfilled.iter().map(|u| (super::unfilled_key(u), u)).collect();
    let known: Known<'_> = (&by_key, &why_not);
    let keys: Vec<String> = periods.iter().map(Period::key).collect();
    let in_window: HashSet<&str> = keys.iter().map(String::as_str).collect();
    let (from, to) = match (periods.first(), periods.last()) {
        (Some(first), Some(last)) => (first.start_date.to_string(), last.start_date.to_string()),
        _ => (String::new(), String::new()),
    };
    let in_dates = |date: &str| !from.is_empty() && (from.as_str()..=to.as_str()).contains(&date);

    let mut with_value: Vec<&str> = Vec::new();
    let mut points = Vec::new();
    let mut chart = Vec::with_capacity(periods.len());
    for (period, key) in periods.iter().zip(&keys) {
        let value = by_key.get(key.as_str()).copied();
        if let Some(value) = value {
            with_value.push(key);
            points.push((value.start, value.start_date.clone(), value.value));
        }
        let comparison = super::comparison_key(period).and_then(|k| by_key.get(k.as_str()).map(|v| v.value));
        chart.push(ChartPoint { period: key.clone(), value: value.map(|v| v.value), comparison });
    }
    let figured: Vec<&StoredValue> = match wanted {
        Figures::Every(whole) => {
            let whole: HashMap<&str, &StoredValue> = whole.iter().map(|v| (v.period.key.as_str(), v)).collect();
            with_value.iter().filter_map(|key| whole.get(key).copied()).collect()
        }
        Figures::Newest(newest) => newest.into_iter().collect(),
    };
    let figures = figured.iter().map(|value| super::figure(value, metric, &today.zone, known)).collect();
    // A period logged before keys is known by its date alone.
    let unfilled_in_window = unfilled.iter().filter(|u| match &u.period_key {
        Some(key) => in_window.contains(key.as_str()),
        None => metric.granularity != Granularity::Hour && in_dates(&u.start_date),
    });
    let ends_at_due = keys.last().is_some_and(|key| *key == due.key());
    MetricView {
        window: periods.len(),
        compared_with: super::compared_with(metric.granularity),
        periods: figures,
        unfilled: unfilled_in_window.map(super::unfilled_of).collect(),
        to_date: to_date((&metric.key, metric.unit.as_deref(), metric.granularity), values, today),
        missing: if ends_at_due { missing(&due.key(), &by_key, &why_not, today) } else { None },
        this_week: this_week(unfilled, today),
        chart,
        points,
        from,
        to,
    }
}

/// Why the latest due period (`due`) has no value, and what happens next: its latest
/// attempt's reason, whatever earlier attempts said.
fn missing(
    due: &str,
    values: &HashMap<&str, &PeriodNumber>,
    why_not: &HashMap<String, &UnfilledPeriod>,
    today: &Today,
) -> Option<String> {
    if values.contains_key(due) {
        return None;
    }
    Some(match why_not.get(due) {
        None => format!("{due} not collected yet: it is due, and collected within a few minutes."),
        Some(latest) => {
            let reason = latest.reason.clone().unwrap_or_else(|| latest.outcome.to_string());
            match (latest.outcome, latest.retry_at) {
                (AttemptOutcome::Retry, Some(at)) => {
                    format!("{due} not collected yet: {reason}; retrying at {}.", today.time(at))
                }
                (AttemptOutcome::Retry, None) => format!("{due} not collected: {reason}; past its deadline."),
                _ => format!("{due} not collected: {reason}."),
            }
        }
    })
}

/// This week's periods without a value whose latest attempt dropped or failed: each counted
/// once, by its start date (not when it was tried: a backfill of sixty days tried this week
/// is not sixty days of this week).
fn this_week(unfilled: &[UnfilledPeriod], today: &Today) -> ThisWeek {
    let Ok(first) = today.date.checked_sub(WEEK_DAYS.days()) else { return ThisWeek::default() };
    let (first, last) = (first.to_string(), today.date.to_string());
    let mut counts = ThisWeek::default();
    for period in unfilled.iter().filter(|u| (first.as_str()..=last.as_str()).contains(&u.start_date.as_str())) {
        match period.outcome {
            AttemptOutcome::Dropped => counts.dropped += 1,
            AttemptOutcome::Failed => counts.failed += 1,
            _ => {}
        }
    }
    counts
}

/// Week- and month-to-date totals of a daily metric: what was collected since Monday, and
/// since the first of the month, before today. Only an amount per period has them (§8): a
/// level or a ratio summed over days means nothing ("month to date 73 percent").
fn to_date(
    (key, unit, granularity): (&str, Option<&str>, Granularity),
    values: &[PeriodNumber],
    today: &Today,
) -> Vec<ToDate> {
    if granularity != Granularity::Day || additivity(key, unit) != Additivity::Amount {
        return Vec::new();
    }
    let by_date: Vec<(Date, f64)> = values.iter().filter_map(|v| Some((v.start_date.parse().ok()?, v.value))).collect();
    to_date_of(&by_date, unit, today.date)
}

/// The to-date totals of `values` (by start date, one per date) on `today`.
fn to_date_of(values: &[(Date, f64)], unit: Option<&str>, today: Date) -> Vec<ToDate> {
    let week = today.checked_sub(i64::from(today.weekday().to_monday_zero_offset()).days());
    let starts = [("Week to date", week.ok()), ("Month to date", Some(today.first_of_month()))];
    let mut totals = Vec::new();
    for (label, start) in starts {
        let Some(start) = start else { continue };
        let days = (today - start).get_days();
        let collected: Vec<f64> =
            values.iter().filter(|(date, _)| *date >= start && *date < today).map(|(_, value)| *value).collect();
        if days <= 0 || collected.is_empty() {
            continue;
        }
        // The exact sum of the figures, not binary noise.
        let total = round_to_operands(collected.iter().sum(), &collected);
        let days = days as usize;
        let of = if collected.len() == days { String::new() } else { format!(", {} of {days} days", collected.len()) };
        totals.push(ToDate {
            label,
            from: start.to_string(),
            total,
            collected: collected.len(),
            days,
            text: format!("{label} {}{of}", format::amount(total, unit)),
        });
    }
    totals
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 42, point 6: "Month to date 73 percent" summed a bounce rate; the spec's own
    /// `community.unanswered.count` (a level) was summed too. Only amounts per period are.
    #[test]
    fn only_amounts_per_period_have_to_date_totals() {
        let date: Date = "2026-09-10".parse().unwrap();
        let zone = jiff::tz::TimeZone::UTC;
        let today =
            Today { now: zone.to_timestamp(date.to_datetime(jiff::civil::Time::midnight())).unwrap(), zone, date };
        let values: Vec<PeriodNumber> = (1..10)
            .map(|day| PeriodNumber {
                start: day * 86_400,
                start_date: format!("2026-09-{day:02}"),
                key: None,
                value: 40.0,
            })
            .collect();
        let day = Granularity::Day;
        let totals = to_date(("sales.revenue.daily", Some("USD"), day), &values, &today);
        assert_eq!(totals.len(), 2, "{totals:?}");
        assert_eq!(totals[1].text, "Month to date $360.00", "{totals:?}");
        assert!(to_date(("web.bounce.daily", Some("%"), day), &values, &today).is_empty());
        assert!(to_date(("community.unanswered.count", None, day), &values, &today).is_empty());
    }
}
