//! The dashboard over collected values, against the demo site: a backfill (through the API)
//! stores exactly the figures the site computes for each date in the user's zone, the dashboard
//! shows the latest value and its change against the same weekday a week earlier, and slots
//! total a canonical key across sites. The collector itself is tested in `servio-collector`.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_demo_site::site::{daily_figures, dollars};
use servio_demo_site::{LocalCa, Misbehaviour};

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
        let (_, failed, _) =
            server.send(&ivy, Method::POST, &backfill, Some(json!({ "from": "2026-07-01", "to": "2026-07-01" }))).await;
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
        let (_, added, _) =
            server.send(&kim, Method::POST, "/api/vault", Some(json!({ "url": origin, "token": "demo" }))).await;
        let id = added["site"]["id"].as_i64().unwrap();
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
        let (status, summary, _) =
            server.send(&kim, Method::POST, &backfill, Some(json!({ "from": day, "to": day }))).await;
        assert_eq!(status, StatusCode::OK, "{name}: {summary}");
        let changed = get(Some(&etag)).await.unwrap();
        assert_eq!(changed.status(), StatusCode::OK, "{name}: new values, a new dashboard");
        assert_ne!(changed.headers()["etag"], etag.as_str(), "{name}");
        let body: Value = changed.json().await.unwrap();
        assert!(body.to_string().contains(&day), "{name}: the backfilled day is there: {body}");
    }
}
