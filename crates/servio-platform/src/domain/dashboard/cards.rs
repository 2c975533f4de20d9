//! Dashboard cards (interpretation §8): metrics with the same canonical key from several sites
//! of a user's vault share one card, each site's value shown, with a total where it is honest.
//!
//! The rule for a total, for whoever changes it:
//! - Only a card of two or more sites has one; a card of one site is that site's value.
//! - Every site must declare the same unit and granularity, or there is no total and the
//!   card's note says what differs (`USD` and `EUR` are not added up).
//! - The total is for the card's latest period: the newest period any of its sites collected.
//!   A site with no value for that period is a gap, never a zero, so there is then no total
//!   value at all: the card names the missing sites instead of summing partial data. (A site
//!   collecting later than the others thus hides the total for a while; a partial sum shown
//!   as "the total" would be wrong without anyone noticing.)
//!
//! - The total is the exact sum of the sites' decimal figures, rounded to the places of the
//!   longest (see [`crate::shared::decimal`]).
//!
//! Keys that are not canonical are never merged: each stays its own card, as two sites may mean
//! different things by the same private key.

use serde::Serialize;
use utoipa::ToSchema;

use servio_manifest::additivity::{Additivity, additivity};

use crate::shared::decimal::round_to_operands;

/// One dashboard card: a metric of one site, or a canonical key shared by several sites.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Card {
    /// The metric key.
    pub key: String,
    /// The canonical key's label.
    #[schema(value_type = Option<String>)]
    pub label: Option<&'static str>,
    /// Whether the key is canonical (shared by every site declaring it).
    pub canonical: bool,
    /// Indexes into the dashboard's `metrics`.
    pub metrics: Vec<usize>,
    /// Site ids, in the order of `metrics`.
    pub sites: Vec<i64>,
    /// Only for two sites or more with the same unit and granularity, for the latest period
    /// any of them collected.
    pub total: Option<Total>,
    /// Why there is no total (units or periods differ, a site is missing).
    pub note: Option<String>,
}

/// The total of a card for its latest period.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Total {
    /// The period's first local date.
    pub period: String,
    /// The unit the sites share.
    pub unit: Option<String>,
    /// The sum; null when a site has no value for the period (a gap is never a zero).
    pub value: Option<f64>,
    /// The sites summed.
    pub sites: Vec<i64>,
    /// The sites with no value for the period.
    pub missing: Vec<i64>,
}

/// One site's metric, as far as cards need it; its values are read where they are.
#[derive(Debug, Clone)]
pub struct SiteMetric<'a> {
    /// The site's id.
    pub site_id: i64,
    /// The site's display name (from its manifest).
    pub site_name: String,
    /// The metric's key.
    pub key: String,
    /// The declared unit, if any.
    pub unit: Option<String>,
    /// `hour`, `day`, `week` or `month`.
    pub granularity: String,
    /// Collected values as (period start instant, period's first local date, value), oldest first.
    pub values: &'a [(i64, String, f64)],
}

/// The cards of `metrics`, in the order their first metric appears. Each card lists the
/// indexes of its metrics in `metrics` (so the API's `metrics` array stays as it was and each
/// card points into it), the sites, its `total` and a `note` when there is no total.
pub fn cards(metrics: &[SiteMetric]) -> Vec<Card> {
    let mut groups: Vec<(Option<&'static str>, Vec<usize>)> = Vec::new();
    for (index, metric) in metrics.iter().enumerate() {
        let label = servio_manifest::brief::canonical_label(&metric.key);
        let shared = label.and_then(|_| groups.iter_mut().find(|(_, members)| metrics[members[0]].key == metric.key));
        match shared {
            Some((_, members)) => members.push(index),
            None => groups.push((label, vec![index])),
        }
    }
    groups
        .into_iter()
        .map(|(label, members)| {
            let (total, note) = if members.len() < 2 { (None, None) } else { total(metrics, &members) };
            Card {
                key: metrics[members[0]].key.clone(),
                label,
                canonical: label.is_some(),
                sites: members.iter().map(|&i| metrics[i].site_id).collect(),
                metrics: members,
                total,
                note,
            }
        })
        .collect()
}

/// The total of a card of two or more metrics, and a note when there is none to show.
fn total(metrics: &[SiteMetric], members: &[usize]) -> (Option<Total>, Option<String>) {
    let first = &metrics[members[0]];
    let each = |what: &dyn Fn(&SiteMetric) -> String| {
        members.iter().map(|&i| format!("{} at {}", what(&metrics[i]), metrics[i].site_name)).collect::<Vec<_>>()
    };
    if members.iter().any(|&i| metrics[i].unit != first.unit) {
        let units = each(&|m| m.unit.clone().unwrap_or_else(|| "no unit".into()));
        return (None, Some(format!("no total: the units differ ({})", units.join(", "))));
    }
    if members.iter().any(|&i| metrics[i].granularity != first.granularity) {
        let periods = each(&|m| m.granularity.clone());
        return (None, Some(format!("no total: the periods differ ({})", periods.join(", "))));
    }
    // A ratio does not add up, across sites either (§8): two bounce rates are no third one.
    let ratio = |i: &usize| additivity(&metrics[*i].key, metrics[*i].unit.as_deref()) == Additivity::Ratio;
    if members.iter().any(ratio) {
        return (None, Some("no total: a ratio does not add up".to_owned()));
    }
    let latest = members.iter().filter_map(|&i| metrics[i].values.last()).max_by_key(|(start, _, _)| *start);
    let Some((start, date, _)) = latest else {
        return (None, None);
    };
    let (mut addends, mut summed, mut missing) = (Vec::new(), Vec::new(), Vec::new());
    for &i in members {
        // Values are oldest first and unique per period: a binary search finds the period.
        match metrics[i].values.binary_search_by_key(start, |(s, _, _)| *s) {
            Ok(at) => {
                addends.push(metrics[i].values[at].2);
                summed.push(metrics[i].site_id);
            }
            Err(_) => missing.push(i),
        }
    }
    // The exact sum of the sites' decimals, not binary noise (`300.3`, not `300.29999999999995`).
    let sum = round_to_operands(addends.iter().sum(), &addends);
    let total = Total {
        period: date.clone(),
        unit: first.unit.clone(),
        value: missing.is_empty().then_some(sum),
        sites: summed,
        missing: missing.iter().map(|&i| metrics[i].site_id).collect(),
    };
    if missing.is_empty() {
        return (Some(total), None);
    }
    let names: Vec<&str> = missing.iter().map(|&i| metrics[i].site_name.as_str()).collect();
    let verb = if names.len() == 1 { "has" } else { "have" };
    (Some(total), Some(format!("no total for {date}: {} {verb} no value for it yet", names.join(", "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(site_id: i64, key: &str, unit: &str, values: &[(i64, f64)]) -> SiteMetric<'static> {
        SiteMetric {
            site_id,
            site_name: format!("Shop {site_id}"),
            key: key.into(),
            unit: (!unit.is_empty()).then(|| unit.to_owned()),
            granularity: "day".into(),
            values: Vec::leak(values.iter().map(|&(day, v)| (day * 86_400, format!("2026-09-{day:02}"), v)).collect()),
        }
    }

    const REVENUE: &str = "sales.revenue.daily";

    /// One case per line: the card's metrics, then its total value and note.
    fn check(metrics: &[SiteMetric], want_total: Option<f64>, want_note: Option<&str>) {
        let cards = cards(metrics);
        assert_eq!(cards.len(), 1, "{cards:?}");
        assert_eq!(cards[0].total.as_ref().and_then(|t| t.value), want_total, "{:?}", cards[0]);
        assert_eq!(cards[0].note.as_deref(), want_note, "{:?}", cards[0]);
    }

    #[test]
    fn ratios_have_no_total_and_levels_do() {
        // No canonical key is a ratio, but any key whose unit is one is.
        let rate = |site| metric(site, REVENUE, "%", &[(1, 40.0)]);
        check(&[rate(1), rate(2)], None, Some("no total: a ratio does not add up"));
        let waiting = |site| metric(site, "community.unanswered.count", "", &[(1, 3.0)]);
        check(&[waiting(1), waiting(2)], Some(6.0), None);
    }

    #[test]
    fn totals_only_where_units_agree_and_no_site_is_missing() {
        let a = metric(1, REVENUE, "USD", &[(1, 10.0), (2, 20.0)]);
        let b = metric(2, REVENUE, "USD", &[(1, 1.0), (2, 2.5)]);
        check(&[a.clone(), b.clone()], Some(22.5), None);
        check(
            &[a.clone(), metric(2, REVENUE, "EUR", &[(2, 2.5)])],
            None,
            Some("no total: the units differ (USD at Shop 1, EUR at Shop 2)"),
        );
        check(
            &[a.clone(), metric(2, REVENUE, "", &[(2, 2.5)])],
            None,
            Some("no total: the units differ (USD at Shop 1, no unit at Shop 2)"),
        );
        // Shop 2 has nothing for 2 September: a gap, not a zero, so no total for that day.
        check(
            &[a.clone(), metric(2, REVENUE, "USD", &[(1, 1.0)])],
            None,
            Some("no total for 2026-09-02: Shop 2 has no value for it yet"),
        );
        check(
            &[a.clone(), metric(2, REVENUE, "USD", &[])],
            None,
            Some("no total for 2026-09-02: Shop 2 has no value for it yet"),
        );
        check(&[metric(1, REVENUE, "USD", &[]), metric(2, REVENUE, "USD", &[])], None, None);
        let mut weekly = b.clone();
        weekly.granularity = "week".into();
        check(&[a.clone(), weekly], None, Some("no total: the periods differ (day at Shop 1, week at Shop 2)"));
        // A zero is a value: it is summed.
        check(&[a, metric(2, REVENUE, "USD", &[(2, 0.0)])], Some(20.0), None);
        // The exact sum of the sites' figures: 100.1 + 200.2 is 300.29999999999995 in binary.
        let (c, d) = (metric(1, REVENUE, "USD", &[(2, 100.1)]), metric(2, REVENUE, "USD", &[(2, 200.2)]));
        check(&[c, d], Some(300.3), None);
    }

    #[test]
    fn a_missing_site_is_named_and_the_summed_ones_listed() {
        let cards = cards(&[
            metric(1, REVENUE, "USD", &[(3, 5.0)]),
            metric(2, REVENUE, "USD", &[(2, 1.0)]),
            metric(3, REVENUE, "USD", &[(3, 7.0)]),
        ]);
        let total = cards[0].total.as_ref().unwrap();
        assert_eq!(
            (total.period.as_str(), &total.sites[..], &total.missing[..]),
            ("2026-09-03", &[1, 3][..], &[2][..])
        );
    }

    #[test]
    fn canonical_keys_share_a_card_and_other_keys_stay_per_site() {
        let metrics = [
            metric(1, REVENUE, "USD", &[]),
            metric(1, "shop.refunds.daily", "USD", &[]),
            metric(2, REVENUE, "USD", &[]),
            metric(2, "shop.refunds.daily", "USD", &[]),
            metric(2, "sales.orders.daily", "count", &[]),
        ];
        let cards = cards(&metrics);
        let shape: Vec<(&str, &[usize], Option<&str>)> =
            cards.iter().map(|s| (s.key.as_str(), &s.metrics[..], s.label)).collect();
        assert_eq!(
            shape,
            [
                (REVENUE, &[0, 2][..], Some("Revenue")),
                ("shop.refunds.daily", &[1][..], None),
                ("shop.refunds.daily", &[3][..], None),
                ("sales.orders.daily", &[4][..], Some("Orders")),
            ]
        );
        assert!(cards[3].total.is_none(), "one site: no total");
    }
}
