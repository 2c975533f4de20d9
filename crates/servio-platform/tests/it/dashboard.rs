//! The dashboard over collected values, against the demo site: a backfill (through the API)
//! stores exactly the figures the site computes for each date in the user's zone, the dashboard
//! shows the latest value and its change against the same weekday a week earlier, and slots
//! total a canonical key across sites. The collector itself is tested in `servio-collector`.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_demo_site::site::{daily_figures, dollars};
use servio_demo_site::{LocalCa, Misbehaviour};

use crate::common;

/// The latest day due in Pacific/Auckland (the tests' users' zone): the day a site's first
/// collection collects when it is added, the latest value of a dashboard.
fn latest_due_in_auckland() -> jiff::civil::Date {
    let auckland = jiff::tz::TimeZone::get("Pacific/Auckland").unwrap();
    let latest =
        servio_collector::plan::latest_due(servio_manifest::Granularity::Day, &auckland, jiff::Timestamp::now());
    latest.unwrap().start_date
}

#[tokio::test]
async fn backfill_then_dashboard() {
    let ca = LocalCa::generate(&[]).unwrap();
    let common::DemoSite { origin, site, .. } = &common::demo_site(&ca, "demo").await;
    // Fourteen days ending with the latest due in Auckland: recent enough for the dashboard.
    let last = latest_due_in_auckland();
    let first = last.checked_sub(jiff::ToSpan::days(13)).unwrap();
    let week_before = last.checked_sub(jiff::ToSpan::days(7)).unwrap().to_string();
    let (first, last) = (first.to_string(), last.to_string());
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        // The user is in Pacific/Auckland (common::Server::sign_up).
        let ivy = server.sign_up(&format!("ivy-{name}@example.com")).await;
        let id = server.add_site(&ivy, origin, "demo").await;
        let backfill = format!("/api/vault/{id}/backfill");
        let range = json!({ "from": first, "to": last });
        let (status, summary, _) = server.with_worker(server.send(&ivy, Method::POST, &backfill, Some(range))).await;
        assert_eq!(status, StatusCode::OK, "{name}: {summary}");
        // The last day's periods were queued when the site was added (its first collection):
        // the backfill waits for them too, as for those it queued.
        assert_eq!(summary, json!({ "stored": 28, "dropped": 0, "failed": 0 }), "{name}");

        let (status, dashboard, _) = server.send(&ivy, Method::GET, "/api/dashboard", None).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        // Regression (issue 24): the document typed `latest.raw` as an object; it is the number
        // or string the site sent, and the whole answer matches the documented schema.
        let routes = common::api_routes(&server).await;
        let route = routes.iter().find(|r| r.method == "GET" && r.path == "/api/dashboard").unwrap();
        route.assert_documented(status, &dashboard, &format!("{name}: GET /api/dashboard"));
        let revenue =
            dashboard["metrics"].as_array().unwrap().iter().find(|m| m["key"] == "sales.revenue.daily").unwrap();
        assert_eq!(revenue["label"], "Revenue");
        assert_eq!(revenue["values"].as_array().unwrap().len(), 14, "{name}");
        let (cents, _) = daily_figures(&last, "Pacific/Auckland");
        assert_eq!(revenue["latest"]["value"].as_f64().unwrap(), cents as f64 / 100.0, "{name}");
        // Regression: `raw` was served as a string holding JSON text (`"\"$936.24\""`, `"57"`);
        // it is the JSON value the site sent, a string for revenue and a number for orders.
        assert_eq!(revenue["latest"]["raw"], json!(dollars(cents)), "{name}: the raw value is kept");
        let orders =
            dashboard["metrics"].as_array().unwrap().iter().find(|m| m["key"] == "sales.orders.daily").unwrap();
        let (_, count) = daily_figures(&last, "Pacific/Auckland");
        assert_eq!(orders["latest"]["raw"], json!(count), "{name}: a number stays a JSON number");
        let (before, _) = daily_figures(&week_before, "Pacific/Auckland");
        assert_eq!(revenue["change"]["against"], week_before.as_str(), "{name}: the same weekday a week earlier");
        // The exact difference in cents, as a decimal: no binary noise after the cents.
        let change = revenue["change"]["change"].as_f64().unwrap();
        assert_eq!(change, (cents as f64 - before as f64) / 100.0, "{name}");

        // A bad answer stores nothing and says why.
        site.set_misbehaviour("/api/servio/tools/shop.getSalesSummary", Some(Misbehaviour::ServerError));
        let range = json!({ "from": "2026-07-01", "to": "2026-07-01" });
        let (_, failed, _) = server.with_worker(server.send(&ivy, Method::POST, &backfill, Some(range))).await;
        assert_eq!(failed, json!({ "stored": 0, "dropped": 0, "failed": 2 }), "{name}");
        site.set_misbehaviour("/api/servio/tools/shop.getSalesSummary", None);
        let (_, again, _) = server.send(&ivy, Method::GET, "/api/dashboard", None).await;
        let revenue = again["metrics"].as_array().unwrap().iter().find(|m| m["key"] == "sales.revenue.daily").unwrap();
        assert_eq!(revenue["values"].as_array().unwrap().len(), 14, "{name}: no zeros for failed periods");
    }
}

/// Interpretation §8: the same canonical key from two sites of one vault is one slot showing
/// each site's value and their total for the latest period; with units that differ, there is
/// no total but a note saying so.
#[tokio::test]
async fn canonical_keys_from_two_sites_share_one_slot_with_a_total_where_units_agree() {
    let ca = LocalCa::generate(&[]).unwrap();
    let shop = common::demo_site(&ca, "demo").await;
    let other = common::demo_site(&ca, "demo").await;
    let euro = common::demo_site(&ca, "demo").await;
    euro.site.set_revenue_unit(Some("EUR"));
    let last = latest_due_in_auckland();
    let first = last.checked_sub(jiff::ToSpan::days(2)).unwrap();
    let (first, last) = (first.to_string(), last.to_string());
    let (cents, orders) = daily_figures(&last, "Pacific/Auckland");
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let add_and_backfill = |who: common::Browser, origin: String| {
            let (server, range) = (&server, json!({ "from": first, "to": last }));
            async move {
                let id = server.add_site(&who, &origin, "demo").await;
                let path = format!("/api/vault/{id}/backfill");
                let (_, summary, _) = server.with_worker(server.send(&who, Method::POST, &path, Some(range))).await;
                // The site's first collection (queued when it was added) may have stored the
                // latest period before the backfill ran: the backfill stores the rest.
                let stored = summary["stored"].as_i64().unwrap_or_default();
                assert!((4..=6).contains(&stored), "{summary}");
                assert_eq!((summary["dropped"].clone(), summary["failed"].clone()), (json!(0), json!(0)), "{summary}");
                id
            }
        };
        let uma = server.sign_up(&format!("uma-{name}@example.com")).await;
        let ids = [
            add_and_backfill(uma.clone(), shop.origin.clone()).await,
            add_and_backfill(uma.clone(), other.origin.clone()).await,
        ];
        let (_, dashboard, _) = server.send(&uma, Method::GET, "/api/dashboard", None).await;
        assert_eq!(dashboard["metrics"].as_array().unwrap().len(), 4, "{name}: per-site metrics stay as they were");
        let slots = dashboard["slots"].as_array().unwrap();
        let keys: Vec<&str> = slots.iter().map(|s| s["key"].as_str().unwrap()).collect();
        assert_eq!(keys, ["sales.revenue.daily", "sales.orders.daily"], "{name}: one slot per canonical key");
        let revenue = &slots[0];
        assert_eq!((&revenue["label"], &revenue["sites"]), (&json!("Revenue"), &json!(ids)), "{name}");
        for index in revenue["metrics"].as_array().unwrap() {
            let metric = &dashboard["metrics"][index.as_u64().unwrap() as usize];
            assert_eq!(metric["key"], "sales.revenue.daily", "{name}");
            assert_eq!(metric["latest"]["value"].as_f64().unwrap(), cents as f64 / 100.0, "{name}: each site's value");
        }
        let total = &revenue["total"];
        assert_eq!((&total["period"], &total["unit"], &total["missing"]), (&json!(last), &json!("USD"), &json!([])));
        let sum = 2.0 * (cents as f64 / 100.0);
        assert!((total["value"].as_f64().unwrap() - sum).abs() < 1e-9, "{name}: the sum of both sites: {total}");
        assert_eq!(slots[1]["total"]["value"].as_f64(), Some(2.0 * orders as f64), "{name}");
        assert_eq!(revenue["note"], Value::Null, "{name}");

        // A third site declares revenue in EUR: the slot shows all three, with no total.
        add_and_backfill(uma.clone(), euro.origin.clone()).await;
        let (_, dashboard, _) = server.send(&uma, Method::GET, "/api/dashboard", None).await;
        let revenue = &dashboard["slots"][0];
        assert_eq!(revenue["sites"].as_array().unwrap().len(), 3, "{name}");
        assert_eq!(revenue["total"], Value::Null, "{name}: USD and EUR are not added up");
        let note = revenue["note"].as_str().unwrap();
        assert!(note.starts_with("no total: the units differ") && note.contains("EUR"), "{name}: {note}");
        assert_eq!(dashboard["slots"][1]["total"]["value"].as_f64(), Some(3.0 * orders as f64), "{name}: orders agree");
    }
}

/// The dashboard is kept per user with an `ETag`: asked again with it, the answer is `304`
/// while nothing changed; a backfill storing values changes it at once, not after the cache's
/// lifetime.
#[tokio::test]
async fn the_dashboard_answers_304_for_its_etag_until_values_change() {
    let ca = LocalCa::generate(&[]).unwrap();
    let common::DemoSite { origin, .. } = &common::demo_site(&ca, "demo").await;
    let today = jiff::Timestamp::now().to_zoned_datetime(jiff::tz::TimeZone::get("Pacific/Auckland").unwrap()).date();
    let day = today.checked_sub(jiff::ToSpan::days(3)).unwrap().to_string();
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let kim = server.sign_up(&format!("kim-etag-{name}@example.com")).await;
        let id = server.add_site(&kim, origin, "demo").await;
        let get = |etag: Option<&str>| {
            let mut request = server
                .http
                .get(format!("{}/api/dashboard", server.base))
                .header("cookie", kim.cookie.as_deref().unwrap());
            if let Some(etag) = etag {
                request = request.header("if-none-match", etag);
            }
            request.send()
        };
        let first = get(None).await.unwrap();
        assert_eq!(first.status(), StatusCode::OK, "{name}");
        assert_eq!(first.headers()["cache-control"], "private, no-cache", "{name}");
        let etag = first.headers()["etag"].to_str().unwrap().to_owned();
        let again = get(Some(&etag)).await.unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{name}");
        assert_eq!(again.headers()["etag"], etag.as_str(), "{name}");
        assert!(again.bytes().await.unwrap().is_empty(), "{name}: no body with a 304");

        let backfill = format!("/api/vault/{id}/backfill");
        let range = json!({ "from": day, "to": day });
        let (status, summary, _) = server.with_worker(server.send(&kim, Method::POST, &backfill, Some(range))).await;
        assert_eq!(status, StatusCode::OK, "{name}: {summary}");
        let changed = get(Some(&etag)).await.unwrap();
        assert_eq!(changed.status(), StatusCode::OK, "{name}: new values, a new dashboard");
        assert_ne!(changed.headers()["etag"], etag.as_str(), "{name}");
        let body: Value = changed.json().await.unwrap();
        assert!(body.to_string().contains(&day), "{name}: the backfilled day is there: {body}");
    }
}

/// Issue 24, point 2 (interpretation §8): a user who changed zone and backfilled again had two
/// values for one local date; the card read "Week to date $22,634.88, 10 of 6 days" and the
/// chart drew one of the two. A backfill of dates that have values, queued or waited for,
/// collects nothing again (a date collected again under another zone replaces its value: the
/// store's `one_value_per_period_key_whatever_the_zone`): one value per date in
/// `/api/dashboard`, the same numbers on the card and in the chart, and "N of M days" with N
/// at most M.
#[tokio::test]
async fn a_zone_change_keeps_one_value_per_date() {
    use servio_platform::shared::format::amount;
    let ca = LocalCa::generate(&[]).unwrap();
    let common::DemoSite { origin, .. } = &common::demo_site(&ca, "demo").await;
    let new_york = "America/New_York";
    let today = jiff::Timestamp::now().to_zoned_datetime(jiff::tz::TimeZone::get(new_york).unwrap()).date();
    // Due in both zones: the day before yesterday in New York has ended in Auckland too.
    let days = |n: i64| today.checked_sub(jiff::ToSpan::days(n)).unwrap();
    let (first, last) = (days(12).to_string(), days(2).to_string());
    let range = json!({ "from": first, "to": last });
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let una = server.sign_up(&format!("una-{name}@example.com")).await;
        let id = server.add_site(&una, origin, "demo").await;
        let backfill = format!("/api/vault/{id}/backfill");
        let (_, summary, _) = server.with_worker(server.send(&una, Method::POST, &backfill, Some(range.clone()))).await;
        assert_eq!(summary["stored"], 22, "{name}: eleven dates in Auckland: {summary}");

        let zone = json!({ "time_zone": new_york });
        let (status, _, _) = server.send(&una, Method::PUT, "/api/me/time_zone", Some(zone)).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        let queue = format!("{backfill}?queue=true");
        let (_, queued, _) = server.send(&una, Method::POST, &queue, Some(range.clone())).await;
        assert_eq!(queued["queued"], 0, "{name}: every date has its value already: {queued}");
        let (_, summary, _) = server.with_worker(server.send(&una, Method::POST, &backfill, Some(range.clone()))).await;
        assert_eq!(summary["stored"], 0, "{name}: waited for, nothing to collect either: {summary}");
        let (status, _, _) = server.send(&una, Method::POST, &format!("/api/vault/{id}/collect"), None).await;
        assert_eq!(status, StatusCode::OK, "{name}");

        let (_, dashboard, _) = server.send(&una, Method::GET, "/api/dashboard", None).await;
        let revenue =
            dashboard["metrics"].as_array().unwrap().iter().find(|m| m["key"] == "sales.revenue.daily").unwrap();
        let points: Vec<(String, f64)> = revenue["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["period"].as_str().unwrap().to_owned(), p["value"].as_f64().unwrap()))
            .collect();
        let mut dates: Vec<&str> = points.iter().map(|(date, _)| date.as_str()).collect();
        dates.dedup();
        assert_eq!(dates.len(), points.len(), "{name}: one value per date: {points:?}");
        for (date, value) in points.iter().filter(|(date, _)| *date >= first && *date <= last) {
            let (cents, _) = daily_figures(date, "Pacific/Auckland");
            assert_eq!(*value, cents as f64 / 100.0, "{name}: {date} keeps its value collected in Auckland");
        }

        let page = server.page(&una, "/dashboard").await;
        let usd = Some("USD");
        let latest = revenue["latest"]["value"].as_f64().unwrap();
        let period = revenue["latest"]["period"].as_str().unwrap();
        let figure = format!("{} <span class=\"muted\">{period}</span>", amount(latest, usd));
        assert!(page.contains(&figure), "{name}: the card's figure is the API's");
        for (date, value) in points.iter().filter(|(date, _)| *date < today.to_string()) {
            // The point's title, maybe followed by its comparison period's value.
            let title = format!("<title>{date}: {}", amount(*value, usd));
            let found = page.match_indices(&title).filter(|(at, _)| page[at + title.len()..].starts_with(['<', ' ']));
            assert_eq!(found.count(), 1, "{name}: the chart's {date} is the API's");
        }
        let monday = today.checked_sub(jiff::ToSpan::days(today.weekday().to_monday_zero_offset())).unwrap();
        for (label, start) in [("Week to date", monday), ("Month to date", today.first_of_month())] {
            let (start, end) = (start.to_string(), today.to_string());
            let counted: Vec<f64> =
                points.iter().filter(|(date, _)| *date >= start && *date < end).map(|(_, value)| *value).collect();
            if counted.is_empty() || start == end {
                continue;
            }
            let shown = format!("{label} {}", amount(counted.iter().sum(), usd));
            assert!(page.contains(&shown), "{name}: {shown:?} on the card");
        }
        // "Week to date $1,234.56, 3 of 4 days": never more days collected than there are.
        for span in page.split("<span>").skip(1).filter_map(|s| s.split("</span>").next()) {
            let Some((_, count)) = span.rsplit_once(", ") else { continue };
            let mut words = count.split(' ');
            let n: Option<u32> = words.next().and_then(|n| n.parse().ok());
            let m: Option<u32> = words.nth(1).and_then(|m| m.parse().ok());
            if let (Some(n), Some(m)) = (n, m) {
                assert!(n <= m, "{name}: {n} of {m} days");
            }
        }
    }
}

/// Issue 24, point 6 (§5): the demo's revenue and orders metrics call the same tool with the
/// same arguments; they were collected with two identical requests per period. The site is
/// asked once per period on every path: the scheduled collection (a worker leasing one job at
/// a time still gets both jobs of a period), collect-now, a backfill, and a queued backfill.
#[tokio::test]
async fn metrics_sharing_a_call_ask_the_site_once_per_period() {
    let ca = LocalCa::generate(&[]).unwrap();
    let common::DemoSite { origin, site, .. } = &common::demo_site(&ca, "demo").await;
    let summary_calls = || site.requests().iter().filter(|r| r.path.ends_with("/shop.getSalesSummary")).count();
    let today = jiff::Timestamp::now().to_zoned_datetime(jiff::tz::TimeZone::get("Pacific/Auckland").unwrap()).date();
    let days = |n: i64| today.checked_sub(jiff::ToSpan::days(n)).unwrap().to_string();
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let worker = || async {
            let config = servio_collector::WorkerConfig {
                drain: true,
                batch: 1,
                ..servio_collector::WorkerConfig::new(format!("one-at-a-time-{name}"))
            };
            let (_stop, stop) = tokio::sync::watch::channel(false);
            server.state.collector.clone().run(config, stop).await
        };
        // Scheduled: adding the site queues its latest due period, which a worker collects.
        let ada = server.sign_up(&format!("ada-{name}@example.com")).await;
        site.record_requests();
        let id = server.add_site(&ada, origin, "demo").await;
        let done = worker().await;
        assert_eq!((done.stored, summary_calls()), (2, 1), "{name}: scheduled, {done:?}");

        let bo = server.sign_up(&format!("bo-{name}@example.com")).await;
        let bo_site = server.add_site(&bo, origin, "demo").await;
        site.record_requests();
        let (_, now, _) = server.send(&bo, Method::POST, &format!("/api/vault/{bo_site}/collect"), None).await;
        assert_eq!((now["stored"].as_u64(), summary_calls()), (Some(2), 1), "{name}: collect-now, {now}");

        site.record_requests();
        let range = json!({ "from": days(6), "to": days(4) });
        let path = format!("/api/vault/{id}/backfill");
        let (_, backfill, _) = server.with_worker(server.send(&ada, Method::POST, &path, Some(range))).await;
        assert_eq!((backfill["stored"].as_u64(), summary_calls()), (Some(6), 3), "{name}: backfill, {backfill}");

        site.record_requests();
        let range = json!({ "from": days(10), "to": days(8) });
        let queue = format!("/api/vault/{id}/backfill?queue=true");
        let (_, queued, _) = server.send(&ada, Method::POST, &queue, Some(range)).await;
        assert_eq!(queued["queued"], 6, "{name}: {queued}");
        let done = worker().await;
        assert_eq!((done.stored, summary_calls()), (6, 3), "{name}: queued backfill, {done:?}");
    }
}

/// Issue 24, point 2: a job is for a local period. Planned in one zone and done after the user
/// moved to another, it collects that local date as it is in the new zone (one call, the new
/// zone's figures and instants) once it has ended there; before that it waits.
#[tokio::test]
async fn a_job_planned_before_a_zone_change_collects_its_date_in_the_new_zone() {
    use servio_manifest::Granularity::Day;
    let ca = LocalCa::generate(&[]).unwrap();
    let common::DemoSite { origin, site, .. } = &common::demo_site(&ca, "demo").await;
    let summary_calls = || site.requests().iter().filter(|r| r.path.ends_with("/shop.getSalesSummary")).count();
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let worker = || async {
            let config = servio_collector::WorkerConfig { drain: true, ..servio_collector::WorkerConfig::new("w") };
            let (_stop, stop) = tokio::sync::watch::channel(false);
            server.state.collector.clone().run(config, stop).await
        };
        let move_to = |who: common::Browser, zone: &'static str| {
            let server = &server;
            async move {
                let body = json!({ "time_zone": zone });
                let (status, _, _) = server.send(&who, Method::PUT, "/api/me/time_zone", Some(body)).await;
                assert_eq!(status, StatusCode::OK);
            }
        };
        // A user who adds the site in zone `planned` and then moves to `done`: their browser,
        // the vault site's id, and the latest date due in `planned`.
        let add_then_move = |label: &'static str, planned: &'static str, done: &'static str| {
            let (server, move_to) = (&server, &move_to);
            async move {
                let who = server.sign_up(&format!("{label}-{name}@example.com")).await;
                move_to(who.clone(), planned).await;
                let id = server.add_site(&who, origin, "demo").await;
                move_to(who.clone(), done).await;
                let zone = jiff::tz::TimeZone::get(planned).unwrap();
                let due = servio_collector::plan::latest_due(Day, &zone, jiff::Timestamp::now()).unwrap();
                (who, id, due.start_date)
            }
        };
        let revenue = |who: &common::Browser, id: i64| {
            let (store, user) = (&server.state.store, who.user_id.unwrap());
            async move { store.values(user, id, "sales.revenue.daily", 0..i64::MAX).await.unwrap() }
        };

        // Planned in New York, done in Auckland, where that date ended hours earlier.
        let (cy, id, planned) = add_then_move("cy", "America/New_York", "Pacific/Auckland").await;
        site.record_requests();
        let done = worker().await;
        // The worker also plans Auckland's own latest date, which may be another.
        let values = revenue(&cy, id).await;
        assert_eq!((done.stored, summary_calls()), (2 * values.len(), values.len()), "{name}: {done:?}");
        assert!(values.iter().any(|v| v.period.start_date == planned.to_string()), "{name}: {planned} collected");
        let auckland = jiff::tz::TimeZone::get("Pacific/Auckland").unwrap();
        for value in &values {
            let period =
                servio_manifest::period::resolve(Day, value.period.start_date.parse().unwrap(), 0, &auckland).unwrap();
            assert_eq!(value.period.start, period.start.as_second(), "{name}: the date as it is in Auckland");
            let (cents, _) = daily_figures(&value.period.start_date, "Pacific/Auckland");
            assert_eq!(value.value, cents as f64 / 100.0, "{name}: Auckland's figure");
        }

        // Planned in Kiritimati (UTC+14), done in Pago Pago (UTC-11): the date ends there 25
        // hours later, so not yet; the job waits for it.
        let (dee, id, planned) = add_then_move("dee", "Pacific/Kiritimati", "Pacific/Pago_Pago").await;
        site.record_requests();
        let done = worker().await;
        assert_eq!(done.waiting, 2, "{name}: {done:?}");
        // Pago Pago's own latest date is another, due there: that one is collected.
        let values = revenue(&dee, id).await;
        assert!(
            values.iter().all(|v| v.period.start_date != planned.to_string()),
            "{name}: {planned} is not over there"
        );
        assert_eq!(summary_calls(), values.len(), "{name}: {done:?}");
        let (_, progress, _) = server.send(&dee, Method::GET, &format!("/api/vault/{id}/jobs"), None).await;
        assert_eq!(progress["pending"], 2, "{name}: the jobs wait: {progress}");

        // Collect-now leases Pago Pago's own latest date and, when they are due sooner, the two
        // jobs planned in Kiritimati, which wait: waiting, not failed.
        let (ed, id, _) = add_then_move("ed", "Pacific/Kiritimati", "Pacific/Pago_Pago").await;
        let pago_pago = jiff::tz::TimeZone::get("Pacific/Pago_Pago").unwrap();
        let there = servio_collector::plan::latest_due(Day, &pago_pago, jiff::Timestamp::now()).unwrap().start_date;
        let (_, now, _) = server.send(&ed, Method::POST, &format!("/api/vault/{id}/collect"), None).await;
        assert_eq!(now["failed"], 0, "{name}: {now}");
        if there.tomorrow().unwrap() == planned {
            // Kiritimati's jobs are due first: leased, not asked; Pago Pago's not leased.
            assert_eq!((now["stored"].as_u64(), now["waiting"].as_u64()), (Some(0), Some(4)), "{name}: {now}");
        }
    }
}

/// Regression (issue 25): backfill dates at the calendar's extremes (year ±9999) answered 500;
/// dates outside 1970-01-01 to 2999-12-31 are now a 400 naming the field, queued or not.
#[tokio::test]
async fn backfill_dates_at_the_calendars_extremes_are_a_400() {
    let ca = LocalCa::generate(&[]).unwrap();
    let common::DemoSite { origin, .. } = &common::demo_site(&ca, "demo").await;
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let eve = server.sign_up(&format!("eve-extremes-{name}@example.com")).await;
        let id = server.add_site(&eve, origin, "demo").await;
        for (from, to, field) in [
            ("9999-12-31", "9999-12-31", "from"),
            ("-009999-01-01", "-009999-01-02", "from"),
            ("1969-12-31", "1970-01-01", "from"),
            ("2999-12-31", "3000-01-01", "to"),
        ] {
            for query in ["", "?queue=true"] {
                let path = format!("/api/vault/{id}/backfill{query}");
                let (status, body, _) =
                    server.send(&eve, Method::POST, &path, Some(json!({ "from": from, "to": to }))).await;
                assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {from}..{to}{query}: {body}");
                assert!(body["error"].as_str().unwrap().contains(&format!("`{field}`")), "{name}: {body}");
            }
        }
    }
}

/// Issue 41: a backfill's request no longer collects while it waits; it waits for the workers,
/// up to `BACKFILL_WAIT`, then answers `202` with what is still to collect. The document says
/// how long, from the same constant.
#[tokio::test]
async fn the_document_says_how_long_a_backfill_waits() {
    use servio_platform::domain::dashboard::BACKFILL_WAIT;
    let (_, server) = common::servers(None).await.remove(0);
    let (_, doc, _) = server.send(&common::Browser::default(), Method::GET, "/api/openapi.json", None).await;
    let answers = &doc["paths"]["/api/vault/{id}/backfill"]["post"]["responses"];
    let waited = format!("{} s", BACKFILL_WAIT.as_secs());
    for status in ["200", "202"] {
        let said = answers[status]["description"].as_str().unwrap_or_default();
        assert!(said.contains(&waited), "{status}: {said:?} does not say {waited}");
    }
}

/// Issue 42, point 8: a card showed "2026-12-06 not collected: 401" while the period's latest
/// attempt had found "49.0%", no number; and "58 dropped this week" counted a sixty-day
/// backfill's attempts made this week. The reason shown is the latest attempt's for the period
/// named, however many attempts came after it; the week's count is of this week's periods,
/// each once. Here the latest due day failed with a 401, then a backfill of sixty days (each
/// period tried five times, the due day first) dropped every period for "49.0%".
#[tokio::test]
async fn the_reason_shown_is_the_latest_attempts_and_the_week_counts_its_periods() {
    use servio_store::CollectionResult;
    let ca = LocalCa::generate(&[]).unwrap();
    let common::DemoSite { origin, .. } = &common::demo_site(&ca, "demo").await;
    let zone = jiff::tz::TimeZone::get("Pacific/Auckland").unwrap();
    let now = jiff::Timestamp::now();
    let today = now.to_zoned_datetime(zone.clone()).date();
    let due = latest_due_in_auckland();
    let days: Vec<String> = (0..60).map(|n| due.checked_sub(jiff::ToSpan::days(n)).unwrap().to_string()).collect();
    let week_start = today.checked_sub(jiff::ToSpan::days(7)).unwrap().to_string();
    let this_week = days.iter().filter(|date| **date >= week_start).count();
    let not_a_number = "valuePath data.totals.revenue: the string \"49.0%\" is not a number";
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let kim = server.sign_up(&format!("kim-reasons-{name}@example.com")).await;
        let id = server.add_site(&kim, origin, "demo").await;
        let user = kim.user_id.unwrap();
        let slot = |metric: &'static str, date: &String| {
            let day =
                servio_manifest::period::resolve(servio_manifest::Granularity::Day, date.parse().unwrap(), 0, &zone);
            let day = day.unwrap();
            let span = (day.start.as_second(), day.end.as_second());
            (metric, span, date.clone())
        };
        let record =
            |(metric, span, date): (&'static str, (i64, i64), String), result: CollectionResult<'static>, at| {
                let store = &server.state.store;
                async move {
                    let slot = servio_store::testing::daily_slot(user, id, metric, span, &date);
                    store.record_result(&slot, &result, at).await.unwrap();
                }
            };
        let at = now.as_second() - 7200;
        record(slot("sales.revenue.daily", &days[0]), CollectionResult::Failed { reason: "the tool answered 401" }, at)
            .await;
        let mut at = at + 1;
        for date in &days {
            for metric in ["sales.revenue.daily", "sales.orders.daily"] {
                for _ in 0..4 {
                    let retry =
                        CollectionResult::Retry { reason: "the tool answered 503", retry_at: None, not_before: None };
                    record(slot(metric, date), retry, at).await;
                    at += 1;
                }
                let dropped = CollectionResult::Dropped { reason: not_a_number, raw: Some("\"49.0%\"") };
                record(slot(metric, date), dropped, at).await;
                at += 1;
            }
        }

        let page = server.page(&kim, "/dashboard").await.replace("&#34;", "\"").replace("&quot;", "\"");
        let reason = format!("{} not collected: {not_a_number}.", days[0]);
        assert!(page.contains(&reason), "{name}: {reason:?} on the card: {page}");
        assert!(!page.contains("answered 401"), "{name}: an earlier attempt's reason on the page: {page}");
        let counted = format!("{} dropped this week", 2 * this_week);
        assert!(page.contains(&counted), "{name}: {counted:?}, not the backfill's periods: {page}");
    }
}

/// Issue 41 (budget row of a backfill that waits): the request waits for the workers as long
/// as the platform says (30 s by default, 300 ms here), then answers `202` with what is queued
/// and still to collect; the jobs go on, and the workers collect them afterwards.
#[tokio::test]
async fn a_backfill_past_its_wait_answers_202_and_its_jobs_go_on() {
    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo").await;
    let short = |state: &mut servio_platform::AppState| state.backfill_wait = std::time::Duration::from_millis(300);
    for (name, server) in common::servers_with(Some(&ca.ca_pem), short).await {
        let ana = server.sign_up(&format!("ana-waits-{name}@example.com")).await;
        let id = server.add_site(&ana, &demo.origin, "demo").await;
        // No worker runs: nothing is collected within the wait.
        let range = serde_json::json!({ "from": "2026-03-01", "to": "2026-03-03" });
        let path = format!("/api/vault/{id}/backfill");
        let started = std::time::Instant::now();
        let (status, answer, _) = server.send(&ana, Method::POST, &path, Some(range)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name}: {answer}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{name}: waited {:?}", started.elapsed());
        // Three days of two metrics, and the site's first collection queued when it was added.
        assert_eq!(answer["queued"].as_u64(), Some(6), "{name}: {answer}");
        assert!(answer["pending"].as_i64() >= Some(6), "{name}: {answer}");
        // The jobs go on: a worker collects them.
        let progress = format!("/api/vault/{id}/jobs");
        let collected = async {
            loop {
                let (_, left, _) = server.send(&ana, Method::GET, &progress, None).await;
                if left["pending"] == 0 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), server.with_worker(collected))
            .await
            .unwrap_or_else(|_| panic!("{name}: the jobs were not collected"));
    }
}
