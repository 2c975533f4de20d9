//! The site page's collection: its status, "Collect now", "Backfill the last N days" queued
//! as jobs with their progress on the page, "Remove this site"; and a site collected as soon as
//! it is added. Over real HTTP, as a browser without JavaScript uses them, on every backend.

use reqwest::StatusCode;
use servio_collector::jobs::WorkerConfig;

mod common;
use common::{csrf, request};

/// Works every due job until none is left, as `servio worker --drain` does.
async fn drain(server: &common::Server) -> servio_collector::collect::Summary {
    let config = WorkerConfig { drain: true, ..WorkerConfig::new("site-page-test") };
    let (_keep, stop) = tokio::sync::watch::channel(false);
    server.state.collector.clone().run(config, stop).await
}

#[tokio::test]
async fn a_site_is_collected_backfilled_and_removed_from_its_page() {
    let (demo, servers) = common::demo_and_servers("demo").await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for (name, server) in servers {
        let url = |path: &str| format!("{}{path}", server.base);
        let form = [("email", "owner@example.com"), ("password", "a long enough password"), ("time_zone", "UTC")];
        let cookie = request(&http, "POST", &url("/signup"), None, &form).await.cookie.unwrap();
        let token = csrf(&request(&http, "GET", &url("/vault"), Some(&cookie), &[]).await.html);
        let with_csrf = |extra: &[(&'static str, &'static str)]| {
            let mut form = vec![("csrf_token", token.clone())];
            form.extend(extra.iter().map(|&(k, v)| (k, v.to_owned())));
            form
        };
        let post = |path: String, form: Vec<(&'static str, String)>| {
            let (http, cookie) = (http.clone(), cookie.clone());
            async move {
                let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
                request(&http, "POST", &path, Some(&cookie), &pairs).await
            }
        };

        // Added: its latest due periods are queued at once, and the page says so.
        let mut add = with_csrf(&[("token", "demo")]);
        add.push(("url", demo.origin.clone()));
        let added = post(url("/vault"), add).await;
        let site_path = added.location.clone().unwrap_or_else(|| panic!("{name}: {}", added.html));
        let id: i64 = site_path.trim_start_matches("/vault/").parse().unwrap();
        let page = request(&http, "GET", &url(&site_path), Some(&cookie), &[]).await;
        assert!(page.html.contains("still to collect") && page.html.contains("http-equiv=\"refresh\""), "{name}");
        assert!(page.html.contains("nothing collected yet"), "{name}: {}", page.html);
        let first = drain(&server).await;
        assert!(first.stored >= 1, "{name}: the first collection stored {first:?}");
        let page = request(&http, "GET", &url(&site_path), Some(&cookie), &[]).await;
        assert!(page.html.contains("last collected") && !page.html.contains("still to collect"), "{name}");
        assert!(!page.html.contains("http-equiv=\"refresh\""), "{name}: no refresh once done");

        // Collect now: nothing new is due, and the page says what was done.
        let collected = post(url(&format!("/vault/{id}/collect")), with_csrf(&[])).await;
        assert_eq!(collected.location.as_deref(), Some(&*format!("/vault/{id}?done=collected")), "{name}");
        let page = request(&http, "GET", &url(collected.location.as_deref().unwrap()), Some(&cookie), &[]).await;
        assert!(page.html.contains("Collected what was due"), "{name}");

        // Backfill the last 7 days: queued at once, the page shows how many are left, a worker
        // collects them, and the values are there.
        let queued = post(url(&format!("/vault/{id}/backfill")), with_csrf(&[("days", "7")])).await;
        assert_eq!(queued.location.as_deref(), Some(&*format!("/vault/{id}?done=backfill")), "{name}");
        let pending = server.state.store.pending_jobs(queued_user(&server).await, id).await.unwrap();
        assert!(pending >= 6, "{name}: {pending} jobs queued");
        let page = request(&http, "GET", &url(queued.location.as_deref().unwrap()), Some(&cookie), &[]).await;
        assert!(page.html.contains(&format!("Collecting: {pending} periods still to collect")), "{name}");
        let summary = drain(&server).await;
        assert!(summary.stored >= 6, "{name}: {summary:?}");
        let again = post(url(&format!("/vault/{id}/backfill")), with_csrf(&[("days", "7")])).await;
        assert_eq!(again.location.as_deref(), Some(&*format!("/vault/{id}?done=nothing_to_backfill")), "{name}");

        // Bad numbers of days change nothing and say why.
        for days in ["0", "401", "-3", "seven", "99999999999999999999"] {
            let refused = post(url(&format!("/vault/{id}/backfill")), with_csrf(&[("days", days)])).await;
            assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{name}: {days}");
            assert!(refused.html.contains("from 1 to 400"), "{name}: {days}: {}", refused.html);
        }

        // Remove: gone from the vault, with its values; the page of the site is a 404.
        let user_id = queued_user(&server).await;
        assert!(!server.state.store.values(user_id, id, "sales.revenue.daily", 0).await.unwrap().is_empty());
        let removed = post(url(&format!("/vault/{id}/remove")), with_csrf(&[])).await;
        assert_eq!(removed.location.as_deref(), Some("/vault?removed=1"), "{name}");
        let vault = request(&http, "GET", &url("/vault?removed=1"), Some(&cookie), &[]).await;
        assert!(vault.html.contains("was removed from your vault") && !vault.html.contains(&demo.origin), "{name}");
        assert!(server.state.store.values(user_id, id, "sales.revenue.daily", 0).await.unwrap().is_empty(), "{name}");
        let gone = request(&http, "GET", &url(&site_path), Some(&cookie), &[]).await;
        assert_eq!(gone.status, StatusCode::NOT_FOUND, "{name}");
        assert!(gone.html.contains("<!doctype html>"), "{name}: an HTML 404");
    }
}

/// The id of the one user of these tests.
async fn queued_user(server: &common::Server) -> i64 {
    server.state.store.user_by_email("owner@example.com").await.unwrap().unwrap().id
}

/// The same backfill over the API: `202` at once, then progress until nothing is pending.
#[tokio::test]
async fn the_api_queues_a_backfill_and_reports_its_progress() {
    let (demo, servers) = common::demo_and_servers("demo").await;
    for (name, server) in servers {
        let browser = server.sign_up("api-backfill@example.com").await;
        let (_, site, _) = server
            .send(
                &browser,
                reqwest::Method::POST,
                "/api/vault",
                Some(serde_json::json!({ "url": demo.origin, "token": "demo" })),
            )
            .await;
        let id = site["site"]["id"].as_i64().unwrap();
        let range = serde_json::json!({ "from": "2026-01-01", "to": "2026-01-10" });
        let path = format!("/api/vault/{id}/jobs");
        let (status, queued, _) = server.send(&browser, reqwest::Method::POST, &path, Some(range.clone())).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name}: {queued}");
        assert!(queued["queued"].as_u64().unwrap() >= 10, "{name}: {queued}");
        drain(&server).await;
        let (_, progress, _) = server.send(&browser, reqwest::Method::GET, &path, None).await;
        assert_eq!(progress["pending"], 0, "{name}");
        // Queued again: nothing, every period has its value.
        let (_, again, _) = server.send(&browser, reqwest::Method::POST, &path, Some(range)).await;
        assert_eq!(again["queued"], 0, "{name}: {again}");
        let bad = serde_json::json!({ "from": "2026-01-10", "to": "2025-01-01" });
        let (status, _, _) = server.send(&browser, reqwest::Method::POST, &path, Some(bad)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
    }
}
