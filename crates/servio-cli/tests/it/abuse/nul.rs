//! Issue 25, point 1: bad bytes never poison a group. A site whose error body carries NUL and a
//! manifest whose `valuePath` carries NUL (`"data.to\u0000tal"`, valid JSON) made PostgreSQL
//! refuse the whole commit group of results around them: the jobs stayed leased, were called
//! again until their deadline, and another user lost values (8 of 31 in the audit, its site
//! called 104 times for 31 periods). Now text from sites is made storable before it is written,
//! and a group the store refuses is committed result by result.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use servio_demo_site::{DemoAuth, Misbehaviour};

use super::harness::{Backend, Platform, SITE_TOKEN, User, within};
use crate::common::start_many;

/// The tool every metric of the demo brief calls.
const SALES_TOOL: &str = "/api/servio/tools/shop.getSalesSummary";
/// Days backfilled for each user.
const DAYS: i64 = 31;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nul_from_one_site_costs_another_user_nothing() {
    // NUL only poisons PostgreSQL.
    let Some(backend) = Backend::postgres().await else { return };
    let sites = start_many(SITE_TOKEN, DemoAuth::Bearer, 3).await;
    let (error_body, value_path, healthy) = (&sites[0], &sites[1], &sites[2]);
    error_body.site.set_misbehaviour(SALES_TOOL, Some(Misbehaviour::Status(400, "bad\0request".into())));
    value_path.site.edit_manifest(Some(std::sync::Arc::new(nul_value_paths)));
    let platform = Platform::start(&backend, healthy, &[]).await;

    let mut entries = Vec::new();
    for (name, site) in [("error-body", error_body), ("value-path", value_path), ("healthy", healthy)] {
        let user = platform.user(&format!("nul-{name}@example.com")).await;
        let added = platform.add_site(&user, site).await;
        entries.push((user, added["site"]["id"].as_i64().unwrap()));
    }
    let (healthy_user, healthy_site) = &entries[2];
    within(&platform, "collecting the healthy site's latest period", Duration::from_secs(60), async {
        while pending(&platform, healthy_user, *healthy_site).await > 0 {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await;
    healthy.site.record_requests();

    // A month long ago for each, queued as jobs: the scheduler leases them together, so
    // results of all three users share commit groups.
    let today = jiff::tz::TimeZone::UTC.to_datetime(jiff::Timestamp::now()).date();
    let range = json!({
        "from": today.checked_sub(jiff::Span::new().days(DAYS + 9)).unwrap().to_string(),
        "to": today.checked_sub(jiff::Span::new().days(10)).unwrap().to_string(),
    });
    for (user, site_id) in &entries {
        let path = format!("/api/vault/{site_id}/backfill?queue=true");
        let (status, queued) = platform.send(user, Method::POST, &path, Some(range.clone())).await;
        assert_eq!(status, 202, "{queued}");
    }
    within(&platform, "collecting beside NUL-bearing sites", Duration::from_secs(90), async {
        while pending(&platform, healthy_user, *healthy_site).await > 0 {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await;

    let store = platform.store().await;
    let id_of = |user: &User| {
        let store = &store;
        let email = user.email.clone();
        async move { store.user_by_email(&email).await.unwrap().unwrap().id }
    };
    let since = jiff::Timestamp::now().as_second() - 400 * 86_400;
    let values =
        store.values(id_of(healthy_user).await, *healthy_site, "sales.revenue.daily", since..i64::MAX).await.unwrap();
    // The month, and the period adding the site collected at once.
    assert_eq!(values.len() as i64, DAYS + 1, "every value of the healthy user is stored");
    let mut calls: HashMap<String, usize> = HashMap::new();
    for seen in healthy.site.requests().into_iter().filter(|r| r.path == SALES_TOOL) {
        let args: Value = serde_json::from_slice(&seen.body).unwrap();
        *calls.entry(args["from"].to_string()).or_default() += 1;
    }
    assert_eq!(calls.len() as i64, DAYS, "{calls:?}");
    assert!(calls.values().all(|&n| n == 1), "each period called once: {calls:?}");

    for ((user, site_id), expected) in entries.iter().zip(["bad\u{FFFD}request", "data.to\u{FFFD}tal"]) {
        let attempts = store.attempts(id_of(user).await, *site_id, 1_000).await.unwrap();
        let reasons: Vec<&str> = attempts.iter().filter_map(|a| a.reason.as_deref()).collect();
        // Both metrics of each period, and the period adding the site collected.
        assert_eq!(reasons.len() as i64, 2 * (DAYS + 1), "{}: every failure recorded", user.email);
        assert!(reasons.iter().all(|r| r.contains(expected) && !r.contains('\0')), "{reasons:?}");
    }

    // A Directory listing whose name holds NUL: stored cleanly, or refused; never a 500.
    let owner = &entries[1].0;
    value_path.site.edit_manifest(Some(std::sync::Arc::new(|m: &mut Value| {
        nul_value_paths(m);
        m["name"] = json!("Fo\u{0}rum");
    })));
    let (status, claim) =
        platform.send(owner, Method::POST, "/api/directory/claims", Some(json!({ "url": value_path.origin }))).await;
    assert!(status < 300, "{status} {claim}");
    value_path.site.set_verification(claim["token"].as_str());
    let (status, verified) =
        platform.send(owner, Method::POST, &format!("/api/directory/claims/{}/verify", claim["id"]), None).await;
    assert!((200..500).contains(&status), "verifying a listing named with NUL: {status} {verified}");
    let (status, found) = platform.send(owner, Method::GET, "/api/directory?q=fo", None).await;
    assert_eq!(status, 200, "{found}");
    assert!(!found.to_string().contains("\\u0000"), "{found}");
}

/// Every metric's `valuePath` with a NUL in it: valid JSON, and a valid path.
fn nul_value_paths(manifest: &mut Value) {
    for metric in manifest["brief"]["metrics"].as_array_mut().into_iter().flatten() {
        metric["valuePath"] = json!("data.to\u{0}tal");
    }
}

/// A user's jobs on a site still to do.
async fn pending(platform: &Platform, user: &User, site_id: i64) -> i64 {
    let (status, progress) = platform.send(user, Method::GET, &format!("/api/vault/{site_id}/jobs"), None).await;
    assert_eq!(status, 200, "{progress}");
    progress["pending"].as_i64().unwrap()
}
