//! Issue 25, point 3: a site whose manifest has 20,000 small tools with warnings (about
//! 1.5 MB). The platform checked it again, uncached and on the async threads, for every vault
//! list and three times for every site page (`GET /api/vault` took 19 s, for every request).
//! Now each text is checked once, off the async threads, and the pages read its kept report.
//!
//! A debug build checks some 15 ms of CPU a tool (each input schema against the meta-schema),
//! so 20,000 tools would take minutes to check even once on a shared machine: the test uses
//! [`TOOLS`], enough that one check takes seconds, which every request used to pay.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use servio_demo_site::DemoAuth;

use super::harness::{Backend, SITE_TOKEN, WithMetrics, start_site, within};

/// Tools added to the demo site's manifest.
const TOOLS: usize = 2_000;
/// How long one answer may take once the text was checked (a debug build, two cores shared).
const ANSWER_BOUND: Duration = Duration::from_secs(2);
/// How many times each page is asked.
const ROUNDS: usize = 10;

/// Adds [`TOOLS`] tools, each with two warnings: a name not in the `namespace.actionTarget`
/// form and a vague description.
fn many_tools(manifest: &mut Value) {
    let tools = manifest["tools"].as_array_mut().expect("the demo manifest has tools");
    for i in 0..TOOLS {
        tools.push(
            json!({ "name": format!("Tool{i}"), "description": "Does it", "input_schema": { "type": "object" } }),
        );
    }
}

/// Regression: every vault list and site page checked this manifest again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_manifest_is_checked_once_and_its_pages_stay_fast() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    site.site.edit_manifest(Some(Arc::new(many_tools)));
    for backend in Backend::all().await {
        let started = WithMetrics::start(&backend, &site, &[]).await;
        let platform = &started.platform;
        let user = platform.user("big-manifest@example.com").await;
        let what = format!("{}: adding a site with {TOOLS} tools", backend.name());
        let added = within(platform, &what, Duration::from_secs(120), platform.add_site(&user, &site)).await;
        let id = added["site"]["id"].as_i64().expect("the site's id");
        let checks = started.metric("servio_manifest_checks_total").await;
        assert_eq!(checks, 1.0, "{what}: the text was checked {checks} times");

        let what = format!("{}: the vault list and the site page, {ROUNDS} times each", backend.name());
        within(platform, &what, Duration::from_secs(120), async {
            for round in 0..ROUNDS {
                let asked = Instant::now();
                let (status, list) = platform.send(&user, reqwest::Method::GET, "/api/vault", None).await;
                assert_eq!(status, 200, "{list}");
                assert_eq!(list["sites"][0]["id"], id);
                let listed = asked.elapsed();
                let asked = Instant::now();
                let (status, page) = platform.page(&user, &format!("/vault/{id}")).await;
                assert_eq!(status, 200, "{page}");
                let shown = asked.elapsed();
                let (status, api) = platform.send(&user, reqwest::Method::GET, &format!("/api/vault/{id}"), None).await;
                assert_eq!(status, 200, "{api}");
                eprintln!("{what}: round {round}: list {listed:?}, page {shown:?}");
                assert!(listed <= ANSWER_BOUND, "{what}: the vault list took {listed:?} (round {round})");
                assert!(shown <= ANSWER_BOUND, "{what}: the site page took {shown:?} (round {round})");
            }
        })
        .await;
        let checks = started.metric("servio_manifest_checks_total").await;
        assert_eq!(checks, 1.0, "{what}: the one text was checked {checks} times in all");
    }
}
