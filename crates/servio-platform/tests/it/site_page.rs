//! The site page's collection: its status, "Collect now", "Backfill the last N days" queued
//! as jobs with their progress on the page, "Remove this site"; and a site collected as soon as
//! it is added. Over real HTTP, as a browser without JavaScript uses them, on every backend.

use reqwest::StatusCode;
use servio_collector::jobs::WorkerConfig;

use crate::common;
use common::PageSession;

/// Works every due job until none is left, as `servio worker --drain` does.
async fn drain(server: &common::Server) -> servio_collector::collect::Summary {
    let config = WorkerConfig { drain: true, ..WorkerConfig::new("site-page-test") };
    let (_keep, stop) = tokio::sync::watch::channel(false);
    server.state.collector.clone().run(config, stop).await
}

#[tokio::test]
async fn a_site_is_collected_backfilled_and_removed_from_its_page() {
    let (demo, servers) = common::demo_and_servers("demo").await;
    for (name, server) in servers {
        let me = PageSession::sign_up(&server, "owner@example.com", "UTC").await;

        // Added: its latest due periods are queued at once, and the page says so.
        let added = me.post("/vault", &[("token", "demo"), ("url", &demo.origin)]).await;
        let site_path = added.location.clone().unwrap_or_else(|| panic!("{name}: {}", added.html));
        let id: i64 = site_path.trim_start_matches("/vault/").parse().unwrap();
        let page = me.get(&site_path).await;
        assert!(page.html.contains("still to collect") && page.html.contains("http-equiv=\"refresh\""), "{name}");
        assert!(page.html.contains("nothing collected yet"), "{name}: {}", page.html);
        let first = drain(&server).await;
        assert!(first.stored >= 1, "{name}: the first collection stored {first:?}");
        let page = me.get(&site_path).await;
        assert!(page.html.contains("last collected") && !page.html.contains("still to collect"), "{name}");
        assert!(!page.html.contains("http-equiv=\"refresh\""), "{name}: no refresh once done");

        // Collect now: nothing new is due, and the page says what was done.
        let collected = me.post(&format!("/vault/{id}/collect"), &[]).await;
        assert_eq!(collected.location.as_deref(), Some(&*format!("/vault/{id}?done=collected")), "{name}");
        let page = me.get(collected.location.as_deref().unwrap()).await;
        assert!(page.html.contains("Collected what was due"), "{name}");

        // Backfill the last 7 days: queued at once, the page shows how many are left, a worker
        // collects them, and the values are there.
        let queued = me.post(&format!("/vault/{id}/backfill"), &[("days", "7")]).await;
        assert_eq!(queued.location.as_deref(), Some(&*format!("/vault/{id}?done=backfill")), "{name}");
        let pending = server.state.store.pending_jobs(queued_user(&server).await, id).await.unwrap();
        assert!(pending >= 6, "{name}: {pending} jobs queued");
        let page = me.get(queued.location.as_deref().unwrap()).await;
        assert!(page.html.contains(&format!("Collecting: {pending} periods still to collect")), "{name}");
        let summary = drain(&server).await;
        assert!(summary.stored >= 6, "{name}: {summary:?}");
        let again = me.post(&format!("/vault/{id}/backfill"), &[("days", "7")]).await;
        assert_eq!(again.location.as_deref(), Some(&*format!("/vault/{id}?done=nothing_to_backfill")), "{name}");

        // Bad numbers of days change nothing and say why.
        for days in ["0", "401", "-3", "seven", "99999999999999999999"] {
            let refused = me.post(&format!("/vault/{id}/backfill"), &[("days", days)]).await;
            assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{name}: {days}");
            assert!(refused.html.contains("from 1 to 400"), "{name}: {days}: {}", refused.html);
        }

        // Remove: gone from the vault, with its values; the page of the site is a 404.
        let user_id = queued_user(&server).await;
        assert!(!server.state.store.values(user_id, id, "sales.revenue.daily", 0..i64::MAX).await.unwrap().is_empty());
        let removed = me.post(&format!("/vault/{id}/remove"), &[]).await;
        assert_eq!(removed.location.as_deref(), Some("/vault?removed=1"), "{name}");
        let vault = me.get("/vault?removed=1").await;
        assert!(vault.html.contains("was removed from your vault") && !vault.html.contains(&demo.origin), "{name}");
        assert!(
            server.state.store.values(user_id, id, "sales.revenue.daily", 0..i64::MAX).await.unwrap().is_empty(),
            "{name}"
        );
        let gone = me.get(&site_path).await;
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
        let (path, queue) = (format!("/api/vault/{id}/jobs"), format!("/api/vault/{id}/backfill?queue=true"));
        let (status, queued, _) = server.send(&browser, reqwest::Method::POST, &queue, Some(range.clone())).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{name}: {queued}");
        assert!(queued["queued"].as_u64().unwrap() >= 10, "{name}: {queued}");
        drain(&server).await;
        let (_, progress, _) = server.send(&browser, reqwest::Method::GET, &path, None).await;
        assert_eq!(progress["pending"], 0, "{name}");
        // Queued again: nothing, every period has its value.
        let (_, again, _) = server.send(&browser, reqwest::Method::POST, &queue, Some(range)).await;
        assert_eq!(again["queued"], 0, "{name}: {again}");
        let bad = serde_json::json!({ "from": "2026-01-10", "to": "2025-01-01" });
        let (status, _, _) = server.send(&browser, reqwest::Method::POST, &queue, Some(bad)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
    }
}
