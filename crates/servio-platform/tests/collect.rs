//! Collection against the demo site: a backfill stores exactly the figures the site computes
//! for each date in the user's zone, the dashboard shows the latest value and its change against
//! the same weekday a week earlier, and bad values are dropped with a reason, never stored.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_collector::plan::Planner;
use servio_demo_site::site::{daily_figures, dollars};
use servio_demo_site::{LocalCa, Misbehaviour};
use servio_store::AttemptOutcome;

mod common;

#[tokio::test]
async fn backfill_then_dashboard() {
    let ca = LocalCa::generate(&[]).unwrap();
    let common::DemoSite { origin, site, .. } = &common::demo_site(&ca, "demo").await;
    // Fourteen days ending the day before yesterday in Auckland: recent enough for the dashboard.
    let today = jiff::Timestamp::now().to_zoned_datetime(jiff::tz::TimeZone::get("Pacific/Auckland").unwrap()).date();
    let last = today.checked_sub(jiff::ToSpan::days(2)).unwrap();
    let first = last.checked_sub(jiff::ToSpan::days(13)).unwrap();
    let week_before = last.checked_sub(jiff::ToSpan::days(7)).unwrap().to_string();
    let (first, last) = (first.to_string(), last.to_string());
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        // The user is in Pacific/Auckland (common::Server::sign_up).
        let ivy = server.sign_up(&format!("ivy-{name}@example.com")).await;
        let (_, added, _) =
            server.send(&ivy, Method::POST, "/api/vault", Some(json!({ "url": origin, "token": "demo" }))).await;
        let id = added["site"]["id"].as_i64().unwrap();
        let backfill = format!("/api/vault/{id}/backfill");
        let (status, summary, _) =
            server.send(&ivy, Method::POST, &backfill, Some(json!({ "from": first, "to": last }))).await;
        assert_eq!(status, StatusCode::OK, "{name}: {summary}");
        assert_eq!(summary, json!({ "stored": 28, "dropped": 0, "failed": 0 }), "{name}");

        let (status, dashboard, _) = server.send(&ivy, Method::GET, "/api/dashboard", None).await;
        assert_eq!(status, StatusCode::OK, "{name}");
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
        let (_, failed, _) =
            server.send(&ivy, Method::POST, &backfill, Some(json!({ "from": "2026-07-01", "to": "2026-07-01" }))).await;
        assert_eq!(failed, json!({ "stored": 0, "dropped": 0, "failed": 2 }), "{name}");
        site.set_misbehaviour("/api/servio/tools/shop.getSalesSummary", None);
        let (_, again, _) = server.send(&ivy, Method::GET, "/api/dashboard", None).await;
        let revenue = again["metrics"].as_array().unwrap().iter().find(|m| m["key"] == "sales.revenue.daily").unwrap();
        assert_eq!(revenue["values"].as_array().unwrap().len(), 14, "{name}: no zeros for failed periods");
    }
}

/// Scheduled collection: a new site starts with the current due period, a settled period is not
/// collected again, and a transient failure makes the slot wait out its backoff.
#[tokio::test]
async fn due_periods_are_collected_once_and_wait_after_a_transient_failure() {
    let ca = LocalCa::generate(&[]).unwrap();
    let common::DemoSite { origin, site, .. } = &common::demo_site(&ca, "demo").await;
    let tool = "/api/servio/tools/shop.getSalesSummary";
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let joe = server.sign_up(&format!("joe-{name}@example.com")).await;
        let (_, added, _) =
            server.send(&joe, Method::POST, "/api/vault", Some(json!({ "url": origin, "token": "demo" }))).await;
        let collect = format!("/api/vault/{}/collect", added["site"]["id"]);
        let (_, first, _) = server.send(&joe, Method::POST, &collect, None).await;
        assert_eq!(first, json!({ "stored": 2, "dropped": 0, "failed": 0, "waiting": 0 }), "{name}");
        let (_, second, _) = server.send(&joe, Method::POST, &collect, None).await;
        assert_eq!(second, json!({ "stored": 0, "dropped": 0, "failed": 0, "waiting": 0 }), "{name}: settled");
        let (_, dashboard, _) = server.send(&joe, Method::GET, "/api/dashboard", None).await;
        let revenue =
            dashboard["metrics"].as_array().unwrap().iter().find(|m| m["key"] == "sales.revenue.daily").unwrap();
        assert_eq!(revenue["values"].as_array().unwrap().len(), 1, "{name}: only the current period, no history");

        let kim = server.sign_up(&format!("kim-{name}@example.com")).await;
        let (_, added, _) =
            server.send(&kim, Method::POST, "/api/vault", Some(json!({ "url": origin, "token": "demo" }))).await;
        let collect = format!("/api/vault/{}/collect", added["site"]["id"]);
        site.set_misbehaviour(tool, Some(Misbehaviour::ServerError));
        let (_, failed, _) = server.send(&kim, Method::POST, &collect, None).await;
        site.set_misbehaviour(tool, None);
        assert_eq!(failed, json!({ "stored": 0, "dropped": 0, "failed": 2, "waiting": 0 }), "{name}");
        let (_, again, _) = server.send(&kim, Method::POST, &collect, None).await;
        assert_eq!(again, json!({ "stored": 0, "dropped": 0, "failed": 0, "waiting": 2 }), "{name}: backing off");
    }
}

/// The scheduler's clock, driven by hand: transient failures are retried after 5, then 10
/// minutes, and a site's `Retry-After` is honoured even past the backoff; then the value is stored.
#[tokio::test]
async fn transient_failures_back_off_and_honour_retry_after() {
    let ca = LocalCa::generate(&[]).unwrap();
    let common::DemoSite { origin, site, .. } = &common::demo_site(&ca, "demo").await;
    let tool = "/api/servio/tools/shop.getSalesSummary";
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let email = format!("lea-{name}@example.com");
        let lea = server.sign_up(&email).await;
        server.send(&lea, Method::POST, "/api/vault", Some(json!({ "url": origin, "token": "demo" }))).await;
        let (user, entry) = server.vault_entry_of(&email).await;
        let round = |at: &str, misbehaviour: Option<Misbehaviour>| {
            site.set_misbehaviour(tool, misbehaviour);
            let (state, user, entry) = (server.state.clone(), user.clone(), entry.clone());
            let at: jiff::Timestamp = at.parse().unwrap();
            async move {
                let summary =
                    servio_platform::collect::collect_due(&state, &user, &entry, &mut Planner::new(at)).await.unwrap();
                [summary.stored, summary.failed, summary.waiting]
            }
        };
        // Stored, failed, waiting; Pacific/Auckland's 3 March is due from 15:00Z on 2 March.
        let unavailable = || Some(Misbehaviour::Unavailable("Mon, 02 Mar 2026 17:00:00 GMT".into()));
        assert_eq!(round("2026-03-02T15:00:00Z", Some(Misbehaviour::ServerError)).await, [0, 2, 0], "{name}");
        assert_eq!(round("2026-03-02T15:04:59Z", None).await, [0, 0, 2], "{name}: 5 minutes after one failure");
        assert_eq!(round("2026-03-02T15:05:00Z", Some(Misbehaviour::ServerError)).await, [0, 2, 0], "{name}");
        assert_eq!(round("2026-03-02T15:14:59Z", None).await, [0, 0, 2], "{name}: 10 minutes after two");
        assert_eq!(round("2026-03-02T15:15:00Z", unavailable()).await, [0, 2, 0], "{name}");
        assert_eq!(round("2026-03-02T16:59:59Z", None).await, [0, 0, 2], "{name}: Retry-After beats 20 minutes");
        assert_eq!(round("2026-03-02T17:00:00Z", None).await, [2, 0, 0], "{name}");
        assert_eq!(round("2026-03-02T17:05:00Z", None).await, [0, 0, 0], "{name}: settled");

        let attempts = server.state.store.attempts(user.id, entry.site.id, 20).await.unwrap();
        let outcomes: Vec<&str> = attempts.iter().rev().map(|a| a.outcome.as_str()).collect();
        assert_eq!(outcomes, ["retry", "retry", "retry", "retry", "retry", "retry", "stored", "stored"], "{name}");
        let log = format!("{attempts:?}");
        assert!(log.contains("the tool answered 503"), "{name}: the log says why: {log}");
    }
}

/// Interpretation §7 against a real site: each bad value, and bad answers (invalid JSON, missing
/// paths, 500s, timeouts), store nothing and log why; the accepted forms store their number.
#[tokio::test]
async fn bad_values_are_dropped_with_a_reason_and_never_stored() {
    let ca = LocalCa::generate(&[]).unwrap();
    let common::DemoSite { origin, site, .. } = &common::demo_site(&ca, "demo").await;
    let tool = "/api/servio/tools/shop.getSalesSummary";
    let (name, server) = common::servers(Some(&ca.ca_pem)).await.remove(0);
    let kim = server.sign_up(&format!("kim-{name}@example.com")).await;
    let (_, added, _) =
        server.send(&kim, Method::POST, "/api/vault", Some(json!({ "url": origin, "token": "demo" }))).await;
    let id = added["site"]["id"].as_i64().unwrap();
    let backfill = |day: String| {
        let path = format!("/api/vault/{id}/backfill");
        let server = &server;
        let kim = &kim;
        async move { server.send(kim, Method::POST, &path, Some(json!({ "from": day, "to": day }))).await.1 }
    };
    let mut day = jiff::civil::date(2026, 9, 1);
    let dropped = [
        r#""no sales""#,
        "null",
        "{}",
        "[]",
        "true",
        r#""""#,
        r#""NaN""#,
        r#""Infinity""#,
        r#""1.234,56""#,
        r#""12%""#,
        r#""(5)""#,
        "1e400",
        r#""2 340""#,
        r#""R$ 5""#,
    ];
    for raw in dropped {
        site.set_misbehaviour(tool, Some(Misbehaviour::Totals(raw.to_owned())));
        let summary = backfill(day.to_string()).await;
        assert_eq!(summary, json!({ "stored": 0, "dropped": 2, "failed": 0 }), "{raw}");
        day = day.tomorrow().unwrap();
    }
    for body in ["{not json", "[1, 2", "{}", r#"{"totals": {"revenue": {}}}"#] {
        site.set_misbehaviour(tool, Some(Misbehaviour::Body(body.to_owned())));
        assert_eq!(backfill(day.to_string()).await, json!({ "stored": 0, "dropped": 2, "failed": 0 }), "{body}");
        day = day.tomorrow().unwrap();
    }
    site.set_misbehaviour(tool, Some(Misbehaviour::ServerError));
    assert_eq!(backfill(day.to_string()).await, json!({ "stored": 0, "dropped": 0, "failed": 2 }), "500");
    day = day.tomorrow().unwrap();
    let mut accepted = Vec::new();
    for (raw, value) in [("2340", 2340.0), (r#""2340""#, 2340.0), (r#""$2,340.00""#, 2340.0), (r#""-€12.5""#, -12.5)]
    {
        site.set_misbehaviour(tool, Some(Misbehaviour::Totals(raw.to_owned())));
        assert_eq!(backfill(day.to_string()).await, json!({ "stored": 2, "dropped": 0, "failed": 0 }), "{raw}");
        accepted.push((day.to_string(), raw, value));
        day = day.tomorrow().unwrap();
    }
    site.set_misbehaviour(tool, None);

    // Only the accepted forms are stored, with their number and raw text.
    let (user, entry) = server.vault_entry_of(&format!("kim-{name}@example.com")).await;
    let stored = server.state.store.values(user.id, entry.site.id, "sales.revenue.daily", 0).await.unwrap();
    let stored: Vec<(String, String, f64)> = stored.into_iter().map(|v| (v.start_date, v.raw, v.value)).collect();
    let expected: Vec<(String, String, f64)> =
        accepted.into_iter().map(|(date, raw, value)| (date, raw.to_owned(), value)).collect();
    assert_eq!(stored, expected);

    // A site slower than the client's timeout: a transient failure, nothing stored.
    let impatient = servio_platform::AppState::new(
        server.state.store.clone(),
        servio_client::Client::new(servio_client::ClientConfig {
            call_timeout: std::time::Duration::from_millis(300),
            extra_roots_pem: Some(ca.ca_pem.as_bytes().to_vec()),
            ..Default::default()
        })
        .unwrap(),
        servio_platform::secrets::Secrets::from_key(&[42; 32]),
        Default::default(),
    );
    site.set_misbehaviour(tool, Some(Misbehaviour::Slow(std::time::Duration::from_secs(3))));
    let now = "2026-10-15T12:00:00Z".parse().unwrap();
    let slow = servio_platform::collect::collect_due(&impatient, &user, &entry, &mut Planner::new(now)).await.unwrap();
    site.set_misbehaviour(tool, None);
    assert_eq!((slow.stored, slow.failed), (0, 2), "a timeout");
    let stored_after = server.state.store.values(user.id, entry.site.id, "sales.revenue.daily", 0).await.unwrap();
    assert_eq!(stored_after.len(), stored.len(), "a timeout stores nothing");

    // Every drop and failure is in the log with a reason a site owner can act on.
    let attempts = server.state.store.attempts(user.id, entry.site.id, 100).await.unwrap();
    assert_eq!(attempts.len(), 2 * (dropped.len() + 4 + 1 + 4 + 1));
    for attempt in attempts.iter().filter(|a| a.outcome != AttemptOutcome::Stored) {
        let reason = attempt.reason.as_deref().unwrap_or_default();
        let expected = match attempt.outcome {
            AttemptOutcome::Dropped => ["valuePath", "not JSON"].iter().any(|word| reason.contains(word)),
            AttemptOutcome::Retry => reason.contains("500") || reason.contains("no complete response within 0.3 s"),
            _ => false,
        };
        assert!(expected, "{attempt:?}");
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
    let today = jiff::Timestamp::now().to_zoned_datetime(jiff::tz::TimeZone::get("Pacific/Auckland").unwrap()).date();
    let last = today.checked_sub(jiff::ToSpan::days(2)).unwrap();
    let first = last.checked_sub(jiff::ToSpan::days(2)).unwrap();
    let (first, last) = (first.to_string(), last.to_string());
    let (cents, orders) = daily_figures(&last, "Pacific/Auckland");
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let add_and_backfill = |who: common::Browser, origin: String| {
            let (server, range) = (&server, json!({ "from": first, "to": last }));
            async move {
                let (status, added, _) = server
                    .send(&who, Method::POST, "/api/vault", Some(json!({ "url": origin, "token": "demo" })))
                    .await;
                assert_eq!(status, StatusCode::CREATED, "{added}");
                let id = added["site"]["id"].as_i64().unwrap();
                let (_, summary, _) =
                    server.send(&who, Method::POST, &format!("/api/vault/{id}/backfill"), Some(range)).await;
                assert_eq!(summary, json!({ "stored": 6, "dropped": 0, "failed": 0 }));
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
