//! Periods in a user's time zone and the placeholders filled from them (interpretation §6).
//!
//! A period is a half-open interval of instants `[start, end)` labelled with local dates.
//! Boundaries come from local clock times through the IANA database (`jiff`): a local time
//! that occurs twice (a fold) is two boundaries, one that never occurs (a gap) is the instant
//! the clock jumped. So days have 23 or 25 hours on DST changes, a repeated hour is two
//! periods and a skipped hour is none, and consecutive periods always meet exactly.

use std::fmt;

use jiff::civil::{Date, DateTime, Weekday};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{Timestamp, ToSpan};
use serde_json::Value;

/// How long a metric's period is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Granularity {
    /// One local clock hour.
    Hour,
    /// One local date.
    Day,
    /// One ISO week, Monday to Sunday.
    Week,
    /// One calendar month.
    Month,
}

impl Granularity {
    /// Every granularity, shortest first.
    pub const ALL: [Granularity; 4] = [Granularity::Hour, Granularity::Day, Granularity::Week, Granularity::Month];

    /// The name used in manifests: `hour`, `day`, `week`, `month`.
    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::Hour => "hour",
            Granularity::Day => "day",
            Granularity::Week => "week",
            Granularity::Month => "month",
        }
    }

    /// Parses a manifest name.
    pub fn from_name(name: &str) -> Option<Granularity> {
        Granularity::ALL.into_iter().find(|g| g.as_str() == name)
    }

    /// The adjective used in metric keys (`daily`), for the key-granularity lint.
    pub fn adjective(self) -> &'static str {
        match self {
            Granularity::Hour => "hourly",
            Granularity::Day => "daily",
            Granularity::Week => "weekly",
            Granularity::Month => "monthly",
        }
    }
}

impl fmt::Display for Granularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One period of a metric, resolved in a time zone.
#[derive(Debug, Clone, PartialEq)]
pub struct Period {
    /// The granularity it was resolved for.
    pub granularity: Granularity,
    /// `periodStart`: the first local date.
    pub start_date: Date,
    /// `periodEnd`: the last local date (the same date for days and hours).
    pub end_date: Date,
    /// The first instant.
    pub start: Timestamp,
    /// The first instant after the period (the start of the next one).
    pub end: Timestamp,
    /// The zone it was resolved in.
    pub time_zone: TimeZone,
}

impl Period {
    /// `periodStartTime`: RFC 3339 with the zone's offset at that instant.
    pub fn start_time(&self) -> String {
        rfc3339(self.start, &self.time_zone)
    }

    /// `periodEndTime`: RFC 3339 with the zone's offset at that instant.
    pub fn end_time(&self) -> String {
        rfc3339(self.end, &self.time_zone)
    }

    /// The period's key (interpretation §8): its local start as resolved, the same text in
    /// any zone for the same local period. Day, week and month: the start date
    /// (`2026-08-17`); hour: the date and clock hour (`2026-11-01T01`), and for the second
    /// occurrence of a clock hour the clocks repeat, `#2` after it (`2026-11-01T01#2`), so a
    /// repeated hour stays two periods (§6). A value is kept per key: collecting the same
    /// local period under another zone replaces it.
    pub fn key(&self) -> String {
        if self.granularity != Granularity::Hour {
            return self.start_date.to_string();
        }
        let local = self.start.to_zoned_datetime(self.time_zone.clone());
        let clock = local.datetime();
        // A fold reads the same clock twice; the later instant is the second occurrence.
        let first = self.time_zone.to_ambiguous_timestamp(clock).earlier().unwrap_or(self.start);
        let repeat = if first < self.start { "#2" } else { "" };
        format!("{}T{:02}{repeat}", local.date(), local.hour())
    }

    /// The period of `granularity` whose [`Period::key`] is `key`, resolved in `zone`: the
    /// same local period in another zone than it was keyed in. `None` when the key is not
    /// one, or names an hour that does not occur there.
    pub fn from_key(granularity: Granularity, key: &str, zone: &TimeZone) -> Option<Period> {
        let date: Date = key.get(..10)?.parse().ok()?;
        if granularity != Granularity::Hour {
            let period = resolve(granularity, date, 0, zone).ok()?;
            return (period.key() == key).then_some(period);
        }
        hours_of_day(date, zone).ok()?.into_iter().find(|period| period.key() == key)
    }
}

fn rfc3339(instant: Timestamp, zone: &TimeZone) -> String {
    let local = instant.to_zoned_datetime(zone.clone());
    local.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

/// Why a period could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeriodError {
    /// The time zone name is not in the IANA database.
    UnknownZone(String),
    /// The hour is not 0 to 23.
    BadHour(u8),
    /// The hour does not occur on that date in that zone (a DST gap).
    SkippedHour {
        /// The date.
        date: Date,
        /// The hour.
        hour: u8,
    },
    /// The date does not occur in that zone (a zone that skipped a whole day).
    SkippedDate(Date),
    /// The date is outside the range the time library supports.
    OutOfRange,
}

impl fmt::Display for PeriodError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeriodError::UnknownZone(name) => {
                write!(f, "unknown time zone {name:?}: expected an IANA name such as Pacific/Auckland")
            }
            PeriodError::BadHour(hour) => write!(f, "hour {hour} is not 0 to 23"),
            PeriodError::SkippedHour { date, hour } => {
                write!(f, "hour {hour} does not occur on {date} in this zone (the clocks skip it)")
            }
            PeriodError::SkippedDate(date) => write!(f, "{date} does not occur in this zone (the calendar skips it)"),
            PeriodError::OutOfRange => f.write_str("the date is out of the supported range"),
        }
    }
}

impl std::error::Error for PeriodError {}

/// Looks a zone up in the IANA database by name (`Pacific/Auckland`).
pub fn zone(name: &str) -> Result<TimeZone, PeriodError> {
    // `jiff` also accepts POSIX TZ strings and fixed offsets here; only names are zones.
    if name.is_empty() || name.contains([',', '<']) {
        return Err(PeriodError::UnknownZone(name.to_owned()));
    }
    let zone = TimeZone::get(name).map_err(|_| PeriodError::UnknownZone(name.to_owned()))?;
    Ok(zone)
}

/// The period of `granularity` that contains local `date` (and, for hours, local `hour`, its
/// first occurrence when the clocks repeat it).
pub fn resolve(granularity: Granularity, date: Date, hour: u8, zone: &TimeZone) -> Result<Period, PeriodError> {
    if hour > 23 {
        return Err(PeriodError::BadHour(hour));
    }
    let (start_date, end_date, next_date) = match granularity {
        Granularity::Hour => return resolve_hour(date, hour, zone),
        Granularity::Day => (date, date, add_days(date, 1)?),
        Granularity::Week => {
            let monday = add_days(date, -i64::from(date.weekday().to_monday_zero_offset()))?;
            (monday, add_days(monday, 6)?, add_days(monday, 7)?)
        }
        Granularity::Month => {
            let first = date.first_of_month();
            (first, date.last_of_month(), add_days(date.last_of_month(), 1)?)
        }
    };
    let start = day_start(start_date, zone)?;
    let end = day_start(next_date, zone)?;
    if start == end {
        return Err(PeriodError::SkippedDate(date));
    }
    Ok(Period { granularity, start_date, end_date, start, end, time_zone: zone.clone() })
}

/// Every hour period of local `date`, in order: 23, 24 or 25 of them on DST changes.
pub fn hours_of_day(date: Date, zone: &TimeZone) -> Result<Vec<Period>, PeriodError> {
    Ok(labelled_hours(date, zone)?.into_iter().map(|(_, period)| period).collect())
}

/// The hour periods of `date`, each with the clock hour it starts at. Boundaries are sorted
/// by instant, since a fold longer than an hour (Antarctica/Troll falls back two hours)
/// repeats several clock hours in a row; a clock hour that starts where the next one does is
/// skipped.
fn labelled_hours(date: Date, zone: &TimeZone) -> Result<Vec<(u8, Period)>, PeriodError> {
    let mut bounds: Vec<(Timestamp, u8)> = Vec::with_capacity(27);
    for hour in 0..24u8 {
        for instant in boundaries(date.at(hour as i8, 0, 0, 0), zone)? {
            bounds.push((instant, hour));
        }
    }
    bounds.sort_by_key(|(instant, _)| *instant);
    bounds.push((day_start(add_days(date, 1)?, zone)?, 24));
    Ok(bounds
        .windows(2)
        .filter(|pair| pair[0].0 < pair[1].0)
        .map(|pair| {
            let period = Period {
                granularity: Granularity::Hour,
                start_date: date,
                end_date: date,
                start: pair[0].0,
                end: pair[1].0,
                time_zone: zone.clone(),
            };
            (pair[0].1, period)
        })
        .collect())
}

fn resolve_hour(date: Date, hour: u8, zone: &TimeZone) -> Result<Period, PeriodError> {
    labelled_hours(date, zone)?
        .into_iter()
        .find(|(label, _)| *label == hour)
        .map(|(_, period)| period)
        .ok_or(PeriodError::SkippedHour { date, hour })
}

/// The first instant of local `date`.
fn day_start(date: Date, zone: &TimeZone) -> Result<Timestamp, PeriodError> {
    Ok(boundaries(date.at(0, 0, 0, 0), zone)?[0])
}

/// The instants at which the local clock reads `clock`: one normally, two in a fold, and in a
/// gap the instant the clock jumped past it.
fn boundaries(clock: DateTime, zone: &TimeZone) -> Result<Vec<Timestamp>, PeriodError> {
    let ambiguous = zone.to_ambiguous_timestamp(clock);
    let at = |offset: jiff::tz::Offset| offset.to_timestamp(clock).map_err(|_| PeriodError::OutOfRange);
    Ok(match ambiguous.offset() {
        AmbiguousOffset::Unambiguous { offset } => vec![at(offset)?],
        AmbiguousOffset::Fold { before, after } => vec![at(before)?, at(after)?],
        AmbiguousOffset::Gap { after, .. } => {
            // Read with the later offset the clock time lies before the jump; the jump is the
            // first transition after that.
            let before_jump = at(after)?;
            let jump = zone.following(before_jump).next().map(|t| t.timestamp()).ok_or(PeriodError::OutOfRange)?;
            vec![jump]
        }
    })
}

fn add_days(date: Date, days: i64) -> Result<Date, PeriodError> {
    date.checked_add(days.days()).map_err(|_| PeriodError::OutOfRange)
}

/// The weekday a date falls on; re-exported for callers that compare periods.
pub fn weekday(date: Date) -> Weekday {
    date.weekday()
}

/// The placeholders a brief's `args` may use.
pub const PLACEHOLDERS: [&str; 5] = ["periodStart", "periodEnd", "timezone", "periodStartTime", "periodEndTime"];

/// A `{{...}}` in a string that is not one of [`PLACEHOLDERS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPlaceholder {
    /// The text found, such as `{{periodstart}}` or an unclosed `{{period`.
    pub text: String,
    /// The placeholder it was probably meant to be.
    pub suggestion: Option<&'static str>,
}

/// The bad placeholders in `text`.
pub fn bad_placeholders(text: &str) -> Vec<BadPlaceholder> {
    let mut bad = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        match after.find("}}") {
            Some(close) => {
                let name = &after[..close];
                if !PLACEHOLDERS.contains(&name) {
                    let suggestion = crate::suggest::closest(name.trim(), &PLACEHOLDERS);
                    bad.push(BadPlaceholder { text: format!("{{{{{name}}}}}"), suggestion });
                }
                rest = &after[close + 2..];
            }
            None => {
                bad.push(BadPlaceholder { text: rest[open..].to_owned(), suggestion: None });
                break;
            }
        }
    }
    bad
}

/// The values placeholders are replaced with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceholderValues {
    /// `{{periodStart}}`.
    pub period_start: String,
    /// `{{periodEnd}}`.
    pub period_end: String,
    /// `{{timezone}}`.
    pub timezone: String,
    /// `{{periodStartTime}}`.
    pub period_start_time: String,
    /// `{{periodEndTime}}`.
    pub period_end_time: String,
}

impl PlaceholderValues {
    /// The values for `period` in the zone named `timezone`.
    pub fn for_period(period: &Period, timezone: &str) -> PlaceholderValues {
        PlaceholderValues {
            period_start: period.start_date.to_string(),
            period_end: period.end_date.to_string(),
            timezone: timezone.to_owned(),
            period_start_time: period.start_time(),
            period_end_time: period.end_time(),
        }
    }

    /// The sample values a brief's `args` are validated with (interpretation §3).
    pub fn sample() -> PlaceholderValues {
        PlaceholderValues {
            period_start: "2026-08-20".into(),
            period_end: "2026-08-20".into(),
            timezone: "UTC".into(),
            period_start_time: "2026-08-20T00:00:00+00:00".into(),
            period_end_time: "2026-08-21T00:00:00+00:00".into(),
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        Some(match name {
            "periodStart" => &self.period_start,
            "periodEnd" => &self.period_end,
            "timezone" => &self.timezone,
            "periodStartTime" => &self.period_start_time,
            "periodEndTime" => &self.period_end_time,
            _ => return None,
        })
    }

    /// `args` with every known placeholder in every string value replaced, at any depth.
    /// Member names and other values are kept as they are.
    pub fn fill(&self, args: &Value) -> Value {
        match args {
            Value::String(text) => Value::String(self.fill_str(text)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.fill(v)).collect()),
            Value::Object(members) => Value::Object(members.iter().map(|(k, v)| (k.clone(), self.fill(v))).collect()),
            other => other.clone(),
        }
    }

    fn fill_str(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            let after = &rest[open + 2..];
            let Some(close) = after.find("}}") else { break };
            out.push_str(&rest[..open]);
            match self.get(&after[..close]) {
                Some(value) => out.push_str(value),
                None => out.push_str(&rest[open..open + close + 4]),
            }
            rest = &after[close + 2..];
        }
        out.push_str(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;
    use serde_json::json;

    fn period(g: Granularity, d: Date, hour: u8, tz: &str) -> (String, String, String, String) {
        let p = resolve(g, d, hour, &zone(tz).unwrap()).unwrap();
        (p.start_date.to_string(), p.end_date.to_string(), p.start_time(), p.end_time())
    }

    fn s(a: &str, b: &str, c: &str, d: &str) -> (String, String, String, String) {
        (a.into(), b.into(), c.into(), d.into())
    }

    /// A zone change maps the same local period onto the same key; a repeated hour is two.
    #[test]
    fn keys_name_local_periods() {
        let auckland = zone("Pacific/Auckland").unwrap();
        let new_york = zone("America/New_York").unwrap();
        let day = |tz: &TimeZone| resolve(Granularity::Day, date(2026, 8, 20), 0, tz).unwrap();
        assert_eq!(day(&auckland).key(), "2026-08-20");
        assert_eq!(day(&auckland).key(), day(&new_york).key());
        assert_ne!(day(&auckland).start, day(&new_york).start);
        let week = resolve(Granularity::Week, date(2026, 8, 20), 0, &auckland).unwrap();
        assert_eq!(week.key(), "2026-08-17");
        let month = resolve(Granularity::Month, date(2026, 8, 20), 0, &auckland).unwrap();
        assert_eq!(month.key(), "2026-08-01");
        // New York falls back on 2026-11-01: 01:00 is two hours, 25 in the day.
        let hours = hours_of_day(date(2026, 11, 1), &new_york).unwrap();
        let keys: Vec<String> = hours.iter().map(Period::key).collect();
        assert_eq!(keys.len(), 25);
        assert_eq!(keys[..4], ["2026-11-01T00", "2026-11-01T01", "2026-11-01T01#2", "2026-11-01T02"]);
        // Spring forward on 2026-03-08: 02:00 never occurs.
        let spring: Vec<String> = hours_of_day(date(2026, 3, 8), &new_york).unwrap().iter().map(Period::key).collect();
        assert_eq!(spring[..3], ["2026-03-08T00", "2026-03-08T01", "2026-03-08T03"]);
        for (key, period) in keys.iter().zip(&hours) {
            assert_eq!(Period::from_key(Granularity::Hour, key, &new_york).as_ref(), Some(period));
        }
        let in_auckland = Period::from_key(Granularity::Hour, "2026-11-01T01#2", &auckland);
        assert_eq!(in_auckland, None, "Auckland does not repeat that hour");
        let moved = Period::from_key(Granularity::Day, "2026-08-20", &new_york).unwrap();
        assert_eq!(moved, day(&new_york));
        assert_eq!(Period::from_key(Granularity::Week, "2026-08-20", &new_york), None, "not a week's start");
        assert_eq!(Period::from_key(Granularity::Day, "2026-08-20@1787", &new_york), None);
    }

    #[test]
    fn periods_in_their_zones() {
        use Granularity::*;
        let cases = [
            (
                Day,
                date(2026, 8, 20),
                0,
                "Pacific/Auckland",
                s("2026-08-20", "2026-08-20", "2026-08-20T00:00:00+12:00", "2026-08-21T00:00:00+12:00"),
            ),
            (
                Day,
                date(2026, 3, 8),
                0,
                "America/New_York",
                s("2026-03-08", "2026-03-08", "2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00"),
            ),
            (
                Day,
                date(2026, 11, 1),
                0,
                "America/New_York",
                s("2026-11-01", "2026-11-01", "2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00"),
            ),
            (
                Day,
                date(2026, 8, 20),
                0,
                "Asia/Kathmandu",
                s("2026-08-20", "2026-08-20", "2026-08-20T00:00:00+05:45", "2026-08-21T00:00:00+05:45"),
            ),
            (
                Day,
                date(2026, 4, 5),
                0,
                "Pacific/Chatham",
                s("2026-04-05", "2026-04-05", "2026-04-05T00:00:00+13:45", "2026-04-06T00:00:00+12:45"),
            ),
            (
                Week,
                date(2026, 8, 20),
                0,
                "Europe/Berlin",
                s("2026-08-17", "2026-08-23", "2026-08-17T00:00:00+02:00", "2026-08-24T00:00:00+02:00"),
            ),
            (
                Week,
                date(2026, 8, 23),
                0,
                "Europe/Berlin",
                s("2026-08-17", "2026-08-23", "2026-08-17T00:00:00+02:00", "2026-08-24T00:00:00+02:00"),
            ),
            (
                Month,
                date(2026, 2, 10),
                0,
                "Asia/Tokyo",
                s("2026-02-01", "2026-02-28", "2026-02-01T00:00:00+09:00", "2026-03-01T00:00:00+09:00"),
            ),
            (
                Month,
                date(2028, 2, 10),
                0,
                "UTC",
                s("2028-02-01", "2028-02-29", "2028-02-01T00:00:00+00:00", "2028-03-01T00:00:00+00:00"),
            ),
            (
                Hour,
                date(2026, 8, 20),
                13,
                "Asia/Kolkata",
                s("2026-08-20", "2026-08-20", "2026-08-20T13:00:00+05:30", "2026-08-20T14:00:00+05:30"),
            ),
            // The repeated hour resolves to its first occurrence.
            (
                Hour,
                date(2026, 11, 1),
                1,
                "America/New_York",
                s("2026-11-01", "2026-11-01", "2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00"),
            ),
            // The hour before a skipped hour ends when the clocks jump.
            (
                Hour,
                date(2026, 3, 8),
                1,
                "America/New_York",
                s("2026-03-08", "2026-03-08", "2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00"),
            ),
            // A day that starts at 01:00 because midnight is skipped (Chile's spring change).
            (
                Day,
                date(2026, 9, 6),
                0,
                "America/Santiago",
                s("2026-09-06", "2026-09-06", "2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00"),
            ),
        ];
        for (g, d, hour, tz, want) in cases {
            assert_eq!(period(g, d, hour, tz), want, "{g} {d} {hour} {tz}");
        }
    }

    #[test]
    fn skipped_hours_and_dates_are_errors() {
        let ny = zone("America/New_York").unwrap();
        assert_eq!(
            resolve(Granularity::Hour, date(2026, 3, 8), 2, &ny),
            Err(PeriodError::SkippedHour { date: date(2026, 3, 8), hour: 2 })
        );
        let apia = zone("Pacific/Apia").unwrap();
        assert_eq!(
            resolve(Granularity::Day, date(2011, 12, 30), 0, &apia),
            Err(PeriodError::SkippedDate(date(2011, 12, 30)))
        );
        assert!(matches!(zone("Mars/Olympus"), Err(PeriodError::UnknownZone(_))));
        assert!(matches!(zone("EST5EDT,M3.2.0,M11.1.0"), Err(PeriodError::UnknownZone(_))));
    }

    #[test]
    fn dst_days_have_23_24_and_25_hours() {
        let ny = zone("America/New_York").unwrap();
        for (d, n) in [(date(2026, 3, 8), 23), (date(2026, 3, 9), 24), (date(2026, 11, 1), 25)] {
            let hours = hours_of_day(d, &ny).unwrap();
            assert_eq!(hours.len(), n, "{d}");
            let day = resolve(Granularity::Day, d, 0, &ny).unwrap();
            assert_eq!((hours[0].start, hours[n - 1].end), (day.start, day.end));
        }
    }

    /// Regression: Antarctica/Troll falls back two hours at once, so two clock hours repeat
    /// in a row; the first occurrence of 01:00 used to run until the second occurrence.
    #[test]
    fn a_two_hour_fold_repeats_two_hours() {
        let troll = zone("Antarctica/Troll").unwrap();
        assert_eq!(hours_of_day(date(2026, 10, 25), &troll).unwrap().len(), 26);
        assert_eq!(
            period(Granularity::Hour, date(2026, 10, 25), 1, "Antarctica/Troll"),
            s("2026-10-25", "2026-10-25", "2026-10-25T01:00:00+02:00", "2026-10-25T02:00:00+02:00")
        );
    }

    #[test]
    fn placeholders_are_filled_at_any_depth_and_checked() {
        let values = PlaceholderValues::sample();
        let args = json!({"a": "{{periodStart}}..{{periodEnd}}", "b": ["{{timezone}}", 5, {"{{x}}": "{{periodEndTime}}"}], "c": "{{nope}}"});
        assert_eq!(
            values.fill(&args),
            json!({"a": "2026-08-20..2026-08-20", "b": ["UTC", 5, {"{{x}}": "2026-08-21T00:00:00+00:00"}], "c": "{{nope}}"})
        );
        let bad = bad_placeholders("{{periodstart}} and {{timezone}} and {{ end");
        assert_eq!(bad.len(), 2);
        assert_eq!(bad[0], BadPlaceholder { text: "{{periodstart}}".into(), suggestion: Some("periodStart") });
        assert_eq!(bad[1].text, "{{ end");
        assert!(bad_placeholders("{{periodStartTime}}/{{periodEndTime}}").is_empty());
    }
}
