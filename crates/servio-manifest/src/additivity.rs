//! What may be added up (interpretation §8, 2026-12-07): a metric is an amount per period, a
//! level or a ratio, by its key and unit. Only amounts have to-date totals and sum over time;
//! a ratio never sums, even across sites.

/// How a metric's values combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Additivity {
    /// An amount per period (`sales.revenue.daily`): sums over periods and across sites.
    Amount,
    /// A level at a moment (`community.unanswered.count`): never summed over time; across sites
    /// at one moment its values do add up.
    Level,
    /// A ratio (`%`, a rate, a unit with `/`): never summed.
    Ratio,
}

/// The key's last segments that name an amount per period.
const PER_PERIOD: [&str; 4] = ["hourly", "daily", "weekly", "monthly"];

/// Units that are ratios.
const RATIO_UNITS: [&str; 5] = ["%", "percent", "pct", "ratio", "rate"];

/// How the metric with `key` and `unit` combines.
pub fn additivity(key: &str, unit: Option<&str>) -> Additivity {
    let unit = unit.unwrap_or_default().trim().to_ascii_lowercase();
    if unit.contains('/') || RATIO_UNITS.contains(&unit.as_str()) {
        return Additivity::Ratio;
    }
    let last = key.rsplit('.').next().unwrap_or_default();
    if PER_PERIOD.contains(&last) { Additivity::Amount } else { Additivity::Level }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_levels_and_ratios_by_key_and_unit() {
        assert_eq!(additivity("sales.revenue.daily", Some("USD")), Additivity::Amount);
        assert_eq!(additivity("sales.orders.weekly", None), Additivity::Amount);
        assert_eq!(additivity("community.unanswered.count", None), Additivity::Level);
        assert_eq!(additivity("web.bounce.daily", Some("%")), Additivity::Ratio);
        assert_eq!(additivity("web.bounce.daily", Some(" Percent ")), Additivity::Ratio);
        assert_eq!(additivity("support.replies.daily", Some("replies/hour")), Additivity::Ratio);
        assert_eq!(additivity("web.conversion.daily", Some("rate")), Additivity::Ratio);
        assert_eq!(additivity("daily", None), Additivity::Amount);
        assert_eq!(additivity("sales.dailyish", None), Additivity::Level);
    }
}
