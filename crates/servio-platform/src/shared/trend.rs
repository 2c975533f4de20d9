//! What a value is compared with, and how the change is shown (interpretation §8).
//!
//! A change is shown only against a period that was actually collected: a day against the same
//! weekday a week earlier (day-over-day movement mostly reflects the day of the week), an hour
//! against the same hour the day before, a week against the week before, a month against the
//! month before. A previous value of 0 shows the absolute change only.

use jiff::ToSpan;
use jiff::civil::Date;
use servio_manifest::period::{Granularity, Period, PeriodError};

use super::decimal::{round, round_to_operands};

/// The decimal places of a percentage: a hundredth of a percent is finer than any trend is read.
const PERCENT_PLACES: usize = 2;

/// The local start date (and, for hours, the clock hour) of the period a value is compared with.
pub fn comparison_start(period: &Period) -> Result<(Date, i8), PeriodError> {
    let hour = period.start.to_zoned_datetime(period.time_zone.clone()).hour();
    let date = match period.granularity {
        Granularity::Hour => period.start_date.checked_sub(1.day()),
        Granularity::Day => period.start_date.checked_sub(7.days()),
        Granularity::Week => period.start_date.checked_sub(7.days()),
        Granularity::Month => period.start_date.checked_sub(1.month()),
    }
    .map_err(|_| PeriodError::OutOfRange)?;
    Ok((date, hour))
}

/// How a value moved against the comparison period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trend {
    /// Nothing was collected for the comparison period: the value stands alone.
    None,
    /// The previous value was 0: only the difference can be shown.
    Absolute(f64),
    /// The difference and its share of the previous value, in percent.
    Relative {
        /// Current minus previous, rounded to the decimal places of the two (see
        /// [`super::decimal`]), so it is the exact difference: `-138.14`, never
        /// `-138.14000000000033`.
        change: f64,
        /// The change as a percentage of the previous value, rounded to two places.
        percent: f64,
    },
}

/// The trend of `current` against `previous`, if that was collected. The percentage is taken
/// of the exact (rounded) change, then rounded itself.
pub fn trend(current: f64, previous: Option<f64>) -> Trend {
    match previous {
        None => Trend::None,
        Some(0.0) => Trend::Absolute(current),
        Some(previous) => {
            let change = round_to_operands(current - previous, &[current, previous]);
            Trend::Relative { change, percent: round(change / previous.abs() * 100.0, PERCENT_PLACES) }
        }
    }
}

/// How a change reads (§8), wherever it is shown: a change of exactly zero is "no change"; a
/// ratio given in percent changes by points (`+2.1 pts`), not by a percent of a percent;
/// anything else by its percent of the earlier value, or by its amount when that was 0.
/// `percent` is `None` when the earlier value was 0.
pub fn change_words(change: f64, percent: Option<f64>, against: &str, key: &str, unit: Option<&str>) -> String {
    use servio_manifest::additivity::{Additivity, additivity};
    if change == 0.0 {
        return format!("no change against {against}");
    }
    let arrow = if change > 0.0 { "▲" } else { "▼" };
    let in_percent = unit.is_some_and(|u| matches!(u.trim().to_ascii_lowercase().as_str(), "%" | "percent" | "pct"));
    let ratio = additivity(key, unit) == Additivity::Ratio;
    match percent {
        _ if ratio && in_percent => format!("{arrow} {change:+} pts against {against}"),
        Some(percent) => format!("{arrow} {percent:+.1}% against {against}"),
        None => {
            let sign = if change > 0.0 { "+" } else { "" };
            format!("{arrow} {sign}{} against {against}", super::format::amount(change, unit))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;
    use servio_manifest::period::{resolve, zone};

    #[test]
    fn comparison_periods() {
        let ny = zone("America/New_York").unwrap();
        let cases = [
            (Granularity::Day, date(2026, 8, 20), 0, (date(2026, 8, 13), 0)),
            (Granularity::Day, date(2026, 3, 15), 0, (date(2026, 3, 8), 0)),
            (Granularity::Hour, date(2026, 3, 9), 14, (date(2026, 3, 8), 14)),
            (Granularity::Week, date(2026, 8, 20), 0, (date(2026, 8, 10), 0)),
            (Granularity::Month, date(2026, 3, 31), 0, (date(2026, 2, 1), 0)),
        ];
        for (granularity, day, hour, want) in cases {
            let period = resolve(granularity, day, hour, &ny).unwrap();
            assert_eq!(comparison_start(&period).unwrap(), want, "{granularity} {day}");
        }
    }

    #[test]
    fn trends() {
        assert_eq!(trend(120.0, None), Trend::None);
        assert_eq!(trend(120.0, Some(0.0)), Trend::Absolute(120.0));
        assert_eq!(trend(120.0, Some(100.0)), Trend::Relative { change: 20.0, percent: 20.0 });
        assert_eq!(trend(50.0, Some(-100.0)), Trend::Relative { change: 150.0, percent: 150.0 });
    }

    /// Issue 42, point 9: a zero change read "▲ +0.0%", and a rate in percent changed by a
    /// percent of a percent; every surface words a change here.
    #[test]
    fn changes_read_as_no_change_points_or_percent() {
        let words = |change, percent, key, unit| change_words(change, percent, "2026-09-03", key, Some(unit));
        assert_eq!(words(0.0, Some(0.0), "sales.revenue.daily", "USD"), "no change against 2026-09-03");
        assert_eq!(words(2.1, Some(5.4), "web.bounce.daily", "%"), "▲ +2.1 pts against 2026-09-03");
        assert_eq!(words(-1.5, Some(-3.0), "web.bounce.daily", "percent"), "▼ -1.5 pts against 2026-09-03");
        assert_eq!(words(20.0, Some(20.0), "sales.revenue.daily", "USD"), "▲ +20.0% against 2026-09-03");
        assert_eq!(words(12.5, None, "sales.revenue.daily", "USD"), "▲ +$12.50 against 2026-09-03");
    }

    /// The walk-through found a change like `-138.1400000000001` on the dashboard's API: the
    /// change is the exact difference of the two figures, the percentage two places.
    #[test]
    fn a_change_is_the_exact_difference_of_its_figures() {
        assert_eq!(trend(3831.41, Some(3969.55)), Trend::Relative { change: -138.14, percent: -3.48 });
        assert_eq!(trend(120.1, Some(100.0)), Trend::Relative { change: 20.1, percent: 20.1 });
        assert_eq!(trend(0.3, Some(0.1)), Trend::Relative { change: 0.2, percent: 200.0 });
    }
}
