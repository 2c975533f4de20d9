//! Which periods are due.
//!
//! A period is due once it has ended in the user's zone and a settle delay has passed (5 minutes
//! for hours, an hour otherwise), so that a site has its figures complete and the day is on the
//! dashboard in the morning. Collection starts with the latest due period; older ones are only
//! collected when the user asks for a backfill.

use std::collections::HashMap;

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, ToSpan};
use servio_manifest::period::{self, Granularity, Period, PeriodError};

/// How long after a period's end it becomes due.
pub fn settle_delay(granularity: Granularity) -> SignedDuration {
    match granularity {
        Granularity::Hour => SignedDuration::from_mins(5),
        _ => SignedDuration::from_hours(1),
    }
}

/// Whether `period` is due at `now`.
pub fn is_due(period: &Period, now: Timestamp) -> bool {
    period.end.checked_add(settle_delay(period.granularity)).is_ok_and(|due| due <= now)
}

/// The first retry waits this long; each further one twice as long, up to [`RETRY_CAP`].
pub const RETRY_BASE: SignedDuration = SignedDuration::from_mins(5);
/// The longest wait between two retries of one slot.
pub const RETRY_CAP: SignedDuration = SignedDuration::from_hours(2);

/// When a slot that failed transiently `failures` times, last at `last_attempt`, may be tried
/// again: exponential backoff from [`RETRY_BASE`] capped at [`RETRY_CAP`], and never before a
/// site's `Retry-After` (a site asking for more time gets it, even past the cap).
pub fn next_retry(failures: u32, last_attempt: Timestamp, retry_after: Option<Timestamp>) -> Timestamp {
    let doublings = failures.saturating_sub(1).min(16);
    let wait = RETRY_BASE.checked_mul(1 << doublings).map_or(RETRY_CAP, |wait| wait.min(RETRY_CAP));
    let backoff = last_attempt.checked_add(wait).unwrap_or(Timestamp::MAX);
    retry_after.map_or(backoff, |asked| asked.max(backoff))
}

/// The latest period of `granularity` that is due at `now` in `zone`.
pub fn latest_due(granularity: Granularity, zone: &TimeZone, now: Timestamp) -> Result<Period, PeriodError> {
    let today = now.to_zoned_datetime(zone.clone()).date();
    // Walk back from the period containing `now`; a few steps always reach a due one (a skipped
    // date or hour is simply passed over).
    let mut date = today;
    for _ in 0..8 {
        let candidates = periods_on(granularity, date, zone)?;
        if let Some(period) = candidates.into_iter().rev().find(|p| is_due(p, now)) {
            return Ok(period);
        }
        date = step_back(granularity, date)?;
    }
    Err(PeriodError::OutOfRange)
}

/// The latest due periods at one instant, worked out once per (zone, granularity) however many
/// users and metrics share them: a scheduler round plans with one `Planner`, so its cost grows
/// with the zones in use, not with the number of (user, metric) pairs.
#[derive(Debug)]
pub struct Planner {
    now: Timestamp,
    /// By zone name; one entry per granularity, in [`Granularity`] order.
    due: HashMap<Box<str>, [Option<Result<Period, PeriodError>>; 4]>,
}

impl Planner {
    /// A planner for the instant `now`.
    pub fn new(now: Timestamp) -> Planner {
        Planner { now, due: HashMap::new() }
    }

    /// The instant it plans for.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// [`latest_due`] for the zone named `zone_name` (an IANA name, as users store it).
    pub fn latest_due(&mut self, zone_name: &str, granularity: Granularity) -> Result<&Period, PeriodError> {
        let index = match granularity {
            Granularity::Hour => 0,
            Granularity::Day => 1,
            Granularity::Week => 2,
            Granularity::Month => 3,
        };
        if !self.due.contains_key(zone_name) {
            self.due.insert(zone_name.into(), Default::default());
        }
        let now = self.now;
        let entry = self.due.get_mut(zone_name).expect("inserted above");
        let found = entry[index].get_or_insert_with(|| latest_due(granularity, &period::zone(zone_name)?, now));
        found.as_ref().map_err(Clone::clone)
    }
}

/// Every period of `granularity` whose start date lies in `first..=last`, in order: for a
/// backfill of that range.
pub fn periods_between(
    granularity: Granularity,
    first: Date,
    last: Date,
    zone: &TimeZone,
) -> Result<Vec<Period>, PeriodError> {
    let mut out: Vec<Period> = Vec::new();
    let mut date = first;
    while date <= last {
        for period in periods_on(granularity, date, zone)? {
            if out.last().is_none_or(|previous| previous.start < period.start) {
                out.push(period);
            }
        }
        date = date.checked_add(1.day()).map_err(|_| PeriodError::OutOfRange)?;
    }
    Ok(out)
}

/// At most how many periods of `granularity` that [`periods_between`] finds for
/// `first..=last` are due at `now`, worked out from the dates alone, without building a
/// period: what a backfill is counted by before anything is built (issue 41: building the
/// periods first, a request of 1,500 hourly metrics took a gigabyte to be refused).
///
/// No period that starts after today is due, nor the day, week or month holding today, so the
/// range ends before them. Then days are counted, less the dates the zone skips; ISO weeks and
/// months by their number; hours as 24 a date, and the dates where the zone's offset changes
/// (23, 25 or other counts of hours) one by one, from the zone's own transitions. Exact but for
/// periods ended and not settled yet, and today's hours, counted whole.
pub fn due_periods_at_most(
    granularity: Granularity,
    (first, last): (Date, Date),
    zone: &TimeZone,
    now: Timestamp,
) -> Result<u64, PeriodError> {
    let out_of_range = |_| PeriodError::OutOfRange;
    let today = now.to_zoned_datetime(zone.clone()).date();
    let before = |date: Date| date.yesterday().map_err(out_of_range);
    let last = match granularity {
        Granularity::Hour => last.min(today),
        Granularity::Day => last.min(before(today)?),
        Granularity::Week => {
            let monday = today.checked_sub(i64::from(today.weekday().to_monday_zero_offset()).days());
            last.min(before(monday.map_err(out_of_range)?)?)
        }
        Granularity::Month => last.min(before(today.first_of_month())?),
    };
    if last < first {
        return Ok(0);
    }
    let count = |from: Date, to: Date| u64::try_from(from.duration_until(to).as_hours() / 24).unwrap_or(0);
    let days = count(first, last) + 1;
    Ok(match granularity {
        Granularity::Week => {
            let monday = |date: Date| date.checked_sub(i64::from(date.weekday().to_monday_zero_offset()).days());
            count(monday(first).map_err(out_of_range)?, monday(last).map_err(out_of_range)?) / 7 + 1
        }
        Granularity::Month => {
            let months = |date: Date| i64::from(date.year()) * 12 + i64::from(date.month());
            u64::try_from(months(last) - months(first) + 1).unwrap_or(0)
        }
        Granularity::Day => {
            let mut skipped = 0;
            for date in changing_dates((first, last), zone)? {
                if let Err(PeriodError::SkippedDate(_)) = period::resolve(Granularity::Day, date, 0, zone) {
                    skipped += 1;
                }
            }
            days - skipped
        }
        Granularity::Hour => {
            let mut hours = days * 24;
            for date in changing_dates((first, last), zone)? {
                let those = u64::try_from(period::hours_of_day(date, zone)?.len()).unwrap_or(u64::MAX);
                hours = hours.saturating_add(those) - 24;
            }
            hours
        }
    })
}

/// The dates of `first..=last` on which `zone` changes its offset (a date beside one, too:
/// counting one of those one by one costs a date's hours, never a wrong count), in order.
/// Every other date has 24 hours, each once.
fn changing_dates((first, last): (Date, Date), zone: &TimeZone) -> Result<Vec<Date>, PeriodError> {
    let out_of_range = |_| PeriodError::OutOfRange;
    // Two days beyond each end at UTC midnight hold every instant of the range's local dates,
    // whatever the zone's offset (less than a day either way).
    let utc = |date: Date, days: i64| -> Result<Timestamp, PeriodError> {
        let date = date.checked_add(days.days()).map_err(out_of_range)?;
        Ok(date.to_zoned_datetime(TimeZone::UTC).map_err(out_of_range)?.timestamp())
    };
    let (start, end) = (utc(first, -2)?, utc(last, 2)?);
    let mut dates: Vec<Date> = Vec::new();
    for transition in zone.following(start).take_while(|transition| transition.timestamp() < end) {
        let date = transition.timestamp().to_zoned_datetime(zone.clone()).date();
        for near in [date.yesterday(), Ok(date), date.tomorrow()].into_iter().flatten() {
            if (first..=last).contains(&near) && dates.last().is_none_or(|seen| *seen < near) {
                dates.push(near);
            }
        }
    }
    Ok(dates)
}

/// The periods that start on local `date` (hours: every hour of it; others: the one containing it).
fn periods_on(granularity: Granularity, date: Date, zone: &TimeZone) -> Result<Vec<Period>, PeriodError> {
    match granularity {
        Granularity::Hour => period::hours_of_day(date, zone),
        _ => match period::resolve(granularity, date, 0, zone) {
            Ok(period) => Ok(vec![period]),
            Err(PeriodError::SkippedDate(_)) => Ok(Vec::new()),
            Err(error) => Err(error),
        },
    }
}

fn step_back(granularity: Granularity, date: Date) -> Result<Date, PeriodError> {
    let span = match granularity {
        Granularity::Hour | Granularity::Day => 1.day(),
        Granularity::Week => 7.days(),
        Granularity::Month => 1.month(),
    };
    date.checked_sub(span).map_err(|_| PeriodError::OutOfRange)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn zone(name: &str) -> TimeZone {
        period::zone(name).unwrap()
    }

    #[test]
    fn auckland_and_los_angeles_collect_their_own_20th_at_different_instants() {
        let (auckland, la) = (zone("Pacific/Auckland"), zone("America/Los_Angeles"));
        // Auckland's 20 August ends at 12:00Z; due an hour later. LA's ends at 07:00Z on the 21st.
        let cases = [
            ("2026-08-20T12:59:59Z", "2026-08-19", "2026-08-19"),
            ("2026-08-20T13:00:00Z", "2026-08-20", "2026-08-19"),
            ("2026-08-21T07:59:59Z", "2026-08-20", "2026-08-19"),
            ("2026-08-21T08:00:00Z", "2026-08-20", "2026-08-20"),
        ];
        for (now, nz_date, la_date) in cases {
            let nz = latest_due(Granularity::Day, &auckland, at(now)).unwrap();
            let us = latest_due(Granularity::Day, &la, at(now)).unwrap();
            assert_eq!(
                (nz.start_date.to_string(), us.start_date.to_string()),
                (nz_date.into(), la_date.into()),
                "{now}"
            );
        }
    }

    #[test]
    fn hours_weeks_and_months_settle_too() {
        let utc = zone("UTC");
        let hour = latest_due(Granularity::Hour, &utc, at("2026-08-20T13:04:59Z")).unwrap();
        assert_eq!(hour.start_time(), "2026-08-20T11:00:00+00:00");
        let hour = latest_due(Granularity::Hour, &utc, at("2026-08-20T13:05:00Z")).unwrap();
        assert_eq!(hour.start_time(), "2026-08-20T12:00:00+00:00");
        let week = latest_due(Granularity::Week, &utc, at("2026-08-24T00:30:00Z")).unwrap();
        assert_eq!(week.start_date, date(2026, 8, 10), "the week of the 17th is not settled yet");
        let month = latest_due(Granularity::Month, &utc, at("2026-09-01T01:00:00Z")).unwrap();
        assert_eq!(month.start_date, date(2026, 8, 1));
    }

    #[test]
    fn a_backfill_covers_the_range_without_gaps() {
        let ny = zone("America/New_York");
        let days = periods_between(Granularity::Day, date(2026, 3, 1), date(2026, 3, 14), &ny).unwrap();
        assert_eq!(days.len(), 14);
        assert!(days.windows(2).all(|w| w[0].end == w[1].start));
        let hours = periods_between(Granularity::Hour, date(2026, 11, 1), date(2026, 11, 1), &ny).unwrap();
        assert_eq!(hours.len(), 25, "the fall-back day repeats an hour");
        let weeks = periods_between(Granularity::Week, date(2026, 8, 1), date(2026, 8, 31), &ny).unwrap();
        assert_eq!(weeks.first().unwrap().start_date, date(2026, 7, 27));
        assert!(weeks.windows(2).all(|w| w[0].end == w[1].start));
    }

    /// The count a backfill is refused by is never below the periods it would build, and equal
    /// to them but for today's hours: in zones with a DST change each way, half-hour and
    /// two-hour changes, a whole skipped date (Apia, 30 December 2011) and none at all, for
    /// ranges wholly past and ranges reaching past now.
    #[test]
    fn due_periods_are_counted_without_building_them() {
        let zones = [
            "UTC",
            "America/New_York",
            "Pacific/Auckland",
            "Australia/Lord_Howe",
            "Antarctica/Troll",
            "Pacific/Apia",
            "Asia/Kathmandu",
            "America/Santiago",
        ];
        let ranges = [
            (date(2011, 12, 1), date(2012, 1, 31)),
            (date(2025, 12, 29), date(2026, 12, 31)),
            (date(2026, 3, 29), date(2026, 3, 29)),
            (date(2026, 11, 1), date(2026, 11, 1)),
            (date(2026, 8, 3), date(2026, 8, 20)),
        ];
        let nows = [at("2027-02-10T12:00:00Z"), at("2026-08-20T10:30:00Z"), at("2011-12-31T05:00:00Z")];
        let all = [Granularity::Hour, Granularity::Day, Granularity::Week, Granularity::Month];
        for name in zones {
            let zone = zone(name);
            for (first, last) in ranges {
                for now in nows {
                    for granularity in all {
                        let built = periods_between(granularity, first, last, &zone).unwrap();
                        let due = built.iter().filter(|p| is_due(p, now)).count() as u64;
                        let counted = due_periods_at_most(granularity, (first, last), &zone, now).unwrap();
                        let case = format!("{name} {granularity:?} {first}..={last} at {now}");
                        assert!(counted >= due, "{case}: counted {counted}, {due} due");
                        // Beyond those due: periods ended but not settled yet, and today's hours.
                        let today = now.to_zoned_datetime(zone.clone()).date();
                        let hour = granularity == Granularity::Hour;
                        let unsettled = |p: &&Period| p.end <= now || (hour && p.start_date <= today);
                        let more = built.iter().filter(|p| !is_due(p, now)).filter(unsettled).count() as u64;
                        assert_eq!(counted, due + more, "{case}: only unsettled periods beyond those due");
                    }
                }
            }
        }
    }

    #[test]
    fn retries_back_off_exponentially_up_to_the_cap_and_respect_retry_after() {
        let last: Timestamp = "2026-03-01T10:00:00Z".parse().unwrap();
        let after = |failures, retry_after: Option<&str>| {
            let next = next_retry(failures, last, retry_after.map(|t| t.parse().unwrap()));
            next.duration_since(last).as_mins()
        };
        assert_eq!([1, 2, 3, 4, 5, 6, 7, 40].map(|n| after(n, None)), [5, 10, 20, 40, 80, 120, 120, 120]);
        assert_eq!(after(1, Some("2026-03-01T10:30:00Z")), 30, "a later Retry-After wins");
        assert_eq!(after(3, Some("2026-03-01T10:01:00Z")), 20, "an earlier Retry-After does not shorten backoff");
        assert_eq!(after(1, Some("2026-03-01T16:00:00Z")), 360, "Retry-After may exceed the cap");
        assert_eq!(after(u32::MAX, None), 120);
    }

    #[test]
    fn the_planner_agrees_with_latest_due_and_remembers_unknown_zones() {
        let now: Timestamp = "2026-03-29T01:30:00Z".parse().unwrap();
        let mut planner = Planner::new(now);
        for name in ["Pacific/Auckland", "America/Los_Angeles", "Europe/London", "Asia/Kathmandu", "UTC"] {
            let zone = period::zone(name).unwrap();
            for granularity in [Granularity::Hour, Granularity::Day, Granularity::Week, Granularity::Month] {
                let want = latest_due(granularity, &zone, now).unwrap();
                assert_eq!(planner.latest_due(name, granularity).unwrap(), &want, "{name} {granularity:?}");
                assert_eq!(planner.latest_due(name, granularity).unwrap(), &want, "{name} {granularity:?}, again");
            }
        }
        assert!(matches!(planner.latest_due("Mars/Olympus", Granularity::Day), Err(PeriodError::UnknownZone(_))));
        assert!(matches!(planner.latest_due("Mars/Olympus", Granularity::Day), Err(PeriodError::UnknownZone(_))));
        assert_eq!(planner.now(), now);
    }
}
