//! Issue 25, point 6: 200 refreshes of a 0.9 MB manifest that changed each time stored 201
//! versions (180 MB) and made every user's site page 2.8 s, since it read and checked every
//! version. Now a site keeps its newest `--versions-per-site` versions plus those a user still
//! has approved, a refresh on request is limited per site (`429` with `Retry-After`), and the
//! versions list shows the changes recorded when each version was saved.
//!
//! A debug build checks some 15 ms of CPU a tool, so each refresh of a new 0.9 MB text would
//! take minutes here: the test refreshes a smaller manifest fewer times, keeping fewer
//! versions, which shows the same bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use servio_demo_site::DemoAuth;

use super::harness::{Backend, Platform, SITE_TOKEN, start_site, within};

/// Tools added to the demo site's manifest.
const TOOLS: usize = 1_000;
/// Refreshes on request, each of a changed text.
const REFRESHES: usize = 30;
/// Versions kept besides the approved ones.
const KEPT: usize = 10;
/// How long the site page may take (a debug build, two cores shared).
const PAGE_BOUND: Duration = Duration::from_secs(2);

/// A manifest of [`TOOLS`] tools whose first added tool's description changes every time it is
/// served: every refresh stores a new version, which waits for approval.
fn changing_manifest() -> servio_demo_site::site::ManifestEdit {
    let served = Arc::new(AtomicUsize::new(0));
    Arc::new(move |manifest: &mut Value| {
        let n = served.fetch_add(1, Ordering::Relaxed);
        let tools = manifest["tools"].as_array_mut().expect("the demo manifest has tools");
        for i in 0..TOOLS {
            let description = if i == 0 { format!("Served {n} times") } else { "Does it".to_owned() };
            tools.push(
                json!({ "name": format!("Tool{i}"), "description": description, "input_schema": { "type": "object" } }),
            );
        }
    })
}

async fn refresh(platform: &Platform, user: &super::harness::User, id: i64) -> reqwest::Response {
    platform
        .http
        .post(format!("{}/api/vault/{id}/refresh", platform.url))
        .bearer_auth(&user.token)
        .send()
        .await
        .unwrap()
}

/// Regression: every refresh stored a version for good and the site page read them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refreshes_keep_a_bounded_number_of_versions_and_the_site_page_fast() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    site.site.edit_manifest(Some(changing_manifest()));
    let size = serde_json::to_vec(&site.site.manifest()).unwrap().len();
    for backend in Backend::all().await {
        let kept = KEPT.to_string();
        // Both limits on fetching one site off: this test refreshes one site many times.
        let args = ["--refresh-every", "0", "--manifest-fetches-per-site", "0", "--versions-per-site", &kept];
        let platform = Platform::start(&backend, &site, &args).await;
        let user = platform.user("refreshes@example.com").await;
        let added = platform.add_site(&user, &site).await;
        let id = added["site"]["id"].as_i64().expect("the site's id");
        let rss_before = platform.rss_kib();

        let what = format!("{}: {REFRESHES} refreshes of a {size}-byte manifest", backend.name());
        within(&platform, &what, Duration::from_secs(900), async {
            for round in 0..REFRESHES {
                let answer = refresh(&platform, &user, id).await;
                let status = answer.status();
                let body: Value = answer.json().await.unwrap();
                assert_eq!(status, 200, "{what}: round {round}: {body}");
                assert_eq!(body["refresh"]["outcome"], "changed", "{what}: round {round}");
            }
        })
        .await;

        // The approved version (the one added) and the newest ones stay; the rest went.
        let store = platform.store().await;
        let versions = store.versions(id).await.unwrap();
        assert!(versions.len() <= KEPT + 1, "{what}: {} versions stored", versions.len());
        let owner = store.user_by_email(&user.email).await.unwrap().expect("the user");
        let entry = store.vault_entry(owner.id, id).await.unwrap().expect("the vault entry");
        let approved = entry.approved_manifest.expect("an approved text");
        assert!(versions.iter().any(|v| v.manifest == approved), "{what}: the approved version went");

        let what = format!("{}: the site page after {REFRESHES} refreshes", backend.name());
        within(&platform, &what, Duration::from_secs(60), async {
            for round in 0..3 {
                let asked = Instant::now();
                let (status, page) = platform.page(&user, &format!("/vault/{id}")).await;
                assert_eq!(status, 200, "{page}");
                let took = asked.elapsed();
                assert!(took <= PAGE_BOUND, "{what}: round {round} took {took:?}");
                assert!(page.contains("Served"), "{what}: the change is shown");
            }
            let (status, list) =
                platform.send(&user, reqwest::Method::GET, &format!("/api/vault/{id}/versions"), None).await;
            assert_eq!(status, 200, "{list}");
            let listed = list["versions"].as_array().unwrap();
            assert!(listed.len() <= KEPT + 1, "{what}: {} versions listed", listed.len());
            assert!(listed[0]["changes"].as_array().is_some_and(|c| !c.is_empty()), "{what}: {}", listed[0]);
        })
        .await;
        let grown = platform.peak_rss_kib().saturating_sub(rss_before) / 1024;
        eprintln!("{what}: memory grew by {grown} MiB at most");
        assert!(grown < 512, "{what}: memory grew by {grown} MiB");
    }
}

/// A refresh on request of one site is limited: the next within the minute is `429` with
/// `Retry-After` and a message saying why; the periodic refresh is another path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_on_request_is_limited_per_site() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    site.site.edit_manifest(Some(changing_manifest()));
    for backend in Backend::all().await {
        let platform = Platform::start(&backend, &site, &[]).await;
        let (first, second) = (platform.user("first@example.com").await, platform.user("second@example.com").await);
        let id = platform.add_site(&first, &site).await["site"]["id"].as_i64().unwrap();
        let other = platform.add_site(&second, &site).await["site"]["id"].as_i64().unwrap();
        let what = format!("{}: refreshes on request", backend.name());
        within(&platform, &what, Duration::from_secs(120), async {
            assert_eq!(refresh(&platform, &first, id).await.status(), 200, "{what}: the first");
            for (user, id) in [(&first, id), (&second, other)] {
                let answer = refresh(&platform, user, id).await;
                assert_eq!(answer.status(), 429, "{what}: another user's refresh of the same site too");
                let retry: u64 = answer.headers()["retry-after"].to_str().unwrap().parse().unwrap();
                assert!((1..=60).contains(&retry), "{what}: Retry-After {retry}");
                let body: Value = answer.json().await.unwrap();
                assert!(body["error"].as_str().unwrap().contains("refreshed on request"), "{what}: {body}");
            }
        })
        .await;
    }
}
