//! Issue 41, findings 4, 5 and 12: backfills and large briefs against a real `servio serve`.
//!
//! - Finding 4: a backfill far over the per-request limit built every period before it was
//!   refused (74 to 1,130 MiB, `/healthz` waiting 2-4 s). It is refused at once now, the
//!   process's memory all but unmoved.
//! - Finding 12: a backfill the request waited for called the site itself, past the user's
//!   limit of backfills pending, their turn and `--in-flight` (four requests made 11,232
//!   calls). Four at once now: one is queued and waited for, the others refused past the limit,
//!   and the site never has more than `--in-flight` calls at once.
//! - Finding 5: a period of a brief of 1,500 metrics was called all at once (1,002 calls in
//!   flight against `--in-flight` 64). Its first collection now keeps to `--in-flight`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use servio_demo_site::{DemoAuth, Misbehaviour};

use super::harness::{Backend, Demo, Platform, SITE_TOKEN, User, start_site, within};

const TOOL: &str = "/api/servio/tools/shop.getSalesSummary";

/// The demo site with its brief as `edit` makes it.
async fn site_with(edit: fn(&mut Value)) -> Demo {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    site.site.edit_manifest(Some(Arc::new(edit)));
    site
}

/// `metrics` copies of the demo's revenue metric, as `edit` changes each (its number `n`).
fn copies(manifest: &mut Value, metrics: usize, edit: impl Fn(&mut Value, usize)) {
    let first = manifest["brief"]["metrics"][0].clone();
    let metrics = (0..metrics).map(|n| {
        let mut metric = first.clone();
        edit(&mut metric, n);
        metric
    });
    manifest["brief"]["metrics"] = Value::Array(metrics.collect());
}

/// Hourly metrics of the site of the first test, all sharing one call.
const HOURLY_METRICS: usize = 100;

fn hourly(manifest: &mut Value) {
    copies(manifest, HOURLY_METRICS, |metric, n| {
        metric["key"] = json!(format!("abuse.metric{n}.hourly"));
        metric["granularity"] = json!("hour");
    });
}

/// Metrics of the site of the last test, each a call of its own (`copy`).
const BRIEF_METRICS: usize = 1_500;

fn many_calls(manifest: &mut Value) {
    copies(manifest, BRIEF_METRICS, |metric, n| {
        metric["key"] = json!(format!("abuse.metric{n}.daily"));
        metric["args"]["copy"] = json!(n);
    });
}

/// `user`'s vault site `site_id` once it has no job left to do; panics past `bound`.
async fn drained(platform: &Platform, user: &User, site_id: i64, bound: Duration) {
    let started = Instant::now();
    loop {
        let (status, progress) = platform.send(user, Method::GET, &format!("/api/vault/{site_id}/jobs"), None).await;
        assert_eq!(status, 200, "{progress}");
        if progress["pending"] == 0 {
            return;
        }
        assert!(started.elapsed() < bound, "jobs still pending after {bound:?}: {progress}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Peak memory a refused backfill may add. Refused by arithmetic it adds next to nothing; the
/// periods it asks for, built, take some 70 MiB (962,400 of them), twice that while the list
/// grows.
const REFUSAL_GROWTH_KIB: u64 = 16 * 1024;

/// Finding 4: 401 days of [`HOURLY_METRICS`] hourly metrics, 962,400 periods, refused within a
/// second, saying so, the process's peak memory up by less than [`REFUSAL_GROWTH_KIB`]. The
/// range's own bounds (issue 41, "bounded by design"): 400 days are taken and 401 refused, and
/// so are dates before 1970-01-01 or after 2999-12-31, queued or waited for, even where no
/// period would be queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_far_over_the_limit_is_refused_before_its_periods_are_built() {
    let site = site_with(hourly).await;
    for backend in Backend::all().await {
        let name = backend.name();
        let platform = Platform::start(&backend, &site, &[]).await;
        let user = platform.user(&format!("far-{name}@example.com")).await;
        let site_id = platform.add_site(&user, &site).await["site"]["id"].as_i64().unwrap();
        // The site's first collection (its manifest checked, its jobs done) is not growth.
        drained(&platform, &user, site_id, Duration::from_secs(60)).await;
        platform.reset_peak();
        let before = platform.rss_kib();
        let path = format!("/api/vault/{site_id}/backfill");
        let range = json!({ "from": "2024-01-01", "to": "2025-02-04" });
        let (status, refused) = within(&platform, "a backfill far over the limit", Duration::from_secs(1), async {
            platform.send(&user, Method::POST, &path, Some(range)).await
        })
        .await;
        let growth = platform.peak_rss_kib().saturating_sub(before);
        eprintln!("{name}: refusing it grew the process by {} KiB at the peak", growth);
        assert_eq!(status, 400, "{name}: {refused}");
        let said = refused["error"].as_str().unwrap_or_default();
        assert!(said.contains("962400") && said.contains("10000"), "{name}: {said}");
        assert!(growth < REFUSAL_GROWTH_KIB, "{name}: refusing it grew the process by {} MiB", growth / 1024);

        // The range's own bounds, each refused whatever the periods come to: these ranges are
        // in the future, where no period is due (nothing would be queued), so only the bound
        // on days or on dates refuses them.
        for query in ["", "?queue=true"] {
            let path = format!("/api/vault/{site_id}/backfill{query}");
            let (status, taken) = platform
                .send(&user, Method::POST, &path, Some(json!({ "from": "2990-01-01", "to": "2991-02-05" })))
                .await;
            assert!(status == 200 || status == 202, "{name}{query}: 400 days are taken: {status} {taken}");
            for (from, to, said) in [
                ("2990-01-01", "2991-02-06", "at most 400 days later"),
                ("2999-12-31", "3000-01-01", "`to` \"3000-01-01\" must be from 1970-01-01 to 2999-12-31"),
                ("1969-12-31", "1970-01-01", "`from` \"1969-12-31\" must be from 1970-01-01 to 2999-12-31"),
            ] {
                let (status, refused) =
                    platform.send(&user, Method::POST, &path, Some(json!({ "from": from, "to": to }))).await;
                assert_eq!(status, 400, "{name}{query}: {from}..{to}: {refused}");
                let error = refused["error"].as_str().unwrap_or_default();
                assert!(error.contains(said), "{name}{query}: {from}..{to}: {error}");
            }
        }
    }
}

/// Calls to sites in flight at once in the two tests below (`--in-flight`).
const IN_FLIGHT: usize = 2;

/// Finding 12: four backfills of the same twenty days asked at once and waited for, on a site
/// whose every call takes 100 ms, with room for [`IN_FLIGHT`] calls and 40 backfill periods
/// pending a user: one is queued and answered with its 40 values, the other three refused
/// (`409`), each day asked once, never more than [`IN_FLIGHT`] calls at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfills_waited_for_at_once_keep_to_the_limits() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    site.site.set_misbehaviour(TOOL, Some(Misbehaviour::Slow(Duration::from_millis(100))));
    let in_flight = IN_FLIGHT.to_string();
    for backend in Backend::all().await {
        let name = backend.name();
        let args = ["--in-flight", &in_flight, "--backfill-max-pending", "40"];
        let platform = Platform::start(&backend, &site, &args).await;
        let user = platform.user(&format!("waits-{name}@example.com")).await;
        let site_id = platform.add_site(&user, &site).await["site"]["id"].as_i64().unwrap();
        drained(&platform, &user, site_id, Duration::from_secs(60)).await;
        site.site.record_requests();
        site.site.reset_calls_at_once();
        let path = format!("/api/vault/{site_id}/backfill");
        let range = json!({ "from": "2026-03-01", "to": "2026-03-20" });
        let requests = (0..4).map(|_| platform.send(&user, Method::POST, &path, Some(range.clone())));
        let answers = within(&platform, "four backfills at once", Duration::from_secs(60), async {
            futures_util::future::join_all(requests).await
        })
        .await;
        let statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
        assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 3, "{name}: {answers:?}");
        let (_, collected) = answers.iter().find(|(status, _)| *status == 200).expect("one waited for");
        assert_eq!(collected, &json!({ "stored": 40, "dropped": 0, "failed": 0 }), "{name}");
        let most = site.site.most_calls_at_once();
        assert!(most <= IN_FLIGHT, "{name}: {most} calls at once at the site, --in-flight {IN_FLIGHT}");
        let calls = site.site.requests().iter().filter(|r| r.path == TOOL).count();
        assert_eq!(calls, 20, "{name}: each of the twenty days asked once (its two metrics share a call)");
    }
}

/// Calls in flight in the last test: a period of [`BRIEF_METRICS`] calls is 188 rounds of them.
const BRIEF_IN_FLIGHT: usize = 8;

/// Finding 5: a site whose brief has [`BRIEF_METRICS`] metrics, each its own call taking
/// 20 ms, is added: its first collection (one period of 1,500 jobs, leased whole) never has
/// more than `--in-flight` calls at the site, and the process answers `/healthz` meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brief_of_1500_metrics_keeps_to_in_flight() {
    let site = site_with(many_calls).await;
    site.site.set_misbehaviour(TOOL, Some(Misbehaviour::Slow(Duration::from_millis(20))));
    let in_flight = BRIEF_IN_FLIGHT.to_string();
    for backend in Backend::all().await {
        let name = backend.name();
        let platform = Platform::start(&backend, &site, &["--in-flight", &in_flight]).await;
        let user = platform.user(&format!("brief-{name}@example.com")).await;
        site.site.reset_calls_at_once();
        let site_id = within(&platform, "a brief of 1,500 metrics collected", Duration::from_secs(120), async {
            let site_id = platform.add_site(&user, &site).await["site"]["id"].as_i64().unwrap();
            drained(&platform, &user, site_id, Duration::from_secs(120)).await;
            site_id
        })
        .await;
        let most = site.site.most_calls_at_once();
        assert!(most <= BRIEF_IN_FLIGHT, "{name}: {most} calls at once at the site, --in-flight {BRIEF_IN_FLIGHT}");
        let (_, dashboard) = platform.send(&user, Method::GET, "/api/dashboard", None).await;
        let collected = dashboard["metrics"].as_array().unwrap().iter().filter(|m| !m["latest"].is_null()).count();
        assert_eq!(collected, BRIEF_METRICS, "{name}: every metric of vault site {site_id} collected");
    }
}
