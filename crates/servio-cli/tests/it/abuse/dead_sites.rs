//! Issue 41, finding 3: refresh starvation. The periodic refresh took the 100 sites fetched
//! longest ago each round, and a failed refresh kept the site's last fetch time, so once 100
//! sites had gone dead they filled every round for ever: live sites were never refreshed
//! again, and a tool a live site removed stayed offered. Now a failed refresh backs off (an
//! hour, doubling to a day, stored with the site) and a round takes the earliest due first.
//!
//! The platform runs with the hidden `--refresh-tick` and `--refresh-interval`, so that sites
//! fall due within the test rather than in a day; failed refreshes back off by the hour as
//! always, so each dead site is asked once here.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use servio_demo_site::DemoAuth;

use super::harness::{Backend, Demo, Platform, SITE_TOKEN, within};

/// Sites that go dead: more than one round refreshes (100), so that they alone could fill
/// every round.
const DEAD: usize = 110;

/// Seconds from a site's good fetch to its next periodic refresh here: longer than adding the
/// sites takes, so that every site is still as added when the dead ones stop.
const INTERVAL: &str = "30";

/// How long the live site may wait for its refresh: its interval, a round or two, and the slack
/// of a debug build on a shared machine.
const REFRESHED_WITHIN: Duration = Duration::from_secs(150);

/// The tool the live site removes.
const REMOVED: &str = "forum.getThread";

/// Serves the demo manifest without its brief (no collection jobs to get in the way), and
/// without [`REMOVED`] when `removed`.
fn serve_manifest(site: &Demo, removed: bool) {
    site.site.edit_manifest(Some(Arc::new(move |manifest: &mut Value| {
        manifest.as_object_mut().expect("the demo manifest is an object").remove("brief");
        if removed {
            manifest["tools"].as_array_mut().expect("tools").retain(|tool| tool["name"] != REMOVED);
        }
    })));
}

/// Regression: 110 dead sites starved a live one of its refresh, and the tool it removed
/// stayed offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_sites_do_not_starve_the_refresh_of_a_live_one() {
    for backend in Backend::all().await {
        let mut dead = crate::common::start_many(SITE_TOKEN, DemoAuth::Bearer, DEAD + 1).await;
        let live = dead.pop().expect("the live site");
        for site in dead.iter().chain([&live]) {
            serve_manifest(site, false);
        }
        let args = ["--refresh-tick", "1", "--refresh-interval", INTERVAL];
        let platform = Platform::start(&backend, &live, &args).await;
        // Two users, each under the quota of sites one user may hold (100).
        let name = backend.name();
        let users = [
            platform.user(&format!("dead-{name}@example.com")).await,
            platform.user(&format!("live-{name}@example.com")).await,
        ];
        let user = &users[1];
        // The dead first, the live one last: the order the rounds used to take them in.
        let added: Vec<Value> = futures_util::stream::iter(dead.iter().enumerate())
            .map(|(n, site)| platform.add_site(&users[n % 2], site))
            .buffer_unordered(8)
            .collect()
            .await;
        let live_id = platform.add_site(user, &live).await["site"]["id"].as_i64().expect("the live site's id");
        let dead_ids: Vec<i64> = added.iter().map(|entry| entry["site"]["id"].as_i64().expect("an id")).collect();

        // The dead sites' servers stop; the live site removes a tool.
        drop(dead);
        serve_manifest(&live, true);
        let removed = servio_manifest::Site::parse(&live.origin).expect("the live origin").prefixed_name(REMOVED);
        let offered = || async {
            let (status, tools) = platform.send(user, reqwest::Method::GET, "/api/tools", None).await;
            assert_eq!(status, 200, "{tools}");
            tools.to_string().contains(&removed)
        };
        assert!(offered().await, "{}: the tool is offered before the refresh", backend.name());

        let what = format!("{}: {DEAD} dead sites and a live one whose tool went", backend.name());
        within(&platform, &what, REFRESHED_WITHIN, async {
            while offered().await {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
        .await;

        // Each dead site was asked once (those of the live site's round may still be writing
        // their mark) and waits its hour; the live one answers.
        let store = platform.store().await;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        for id in dead_ids {
            let site = loop {
                let site = store.site(id).await.unwrap().expect("a dead site");
                if site.refresh_failures > 0 || std::time::Instant::now() > deadline {
                    break site;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            assert_eq!(site.refresh_failures, 1, "{what}: {} asked {} times", site.origin, site.refresh_failures);
            assert!(site.stale_error.is_some(), "{what}: {} is not marked stale", site.origin);
        }
        let site = store.site(live_id).await.unwrap().expect("the live site");
        assert_eq!((site.refresh_failures, site.stale_error), (0, None), "{what}");
    }
}
