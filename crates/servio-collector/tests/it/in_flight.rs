//! Issue 41, finding 5: a period's calls all started at once. A brief of 1,500 metrics, each
//! its own call, had 1,002 calls in flight against `--in-flight` 64, and the process ran out of
//! file descriptors. Here a site whose brief has [`METRICS`] metrics, each its own call, is
//! collected by a worker and by collect-now with room for [`IN_FLIGHT`] calls: the site never
//! answers more at once, on every backend, and every metric is still collected.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use servio_collector::WorkerConfig;
use servio_collector::plan::Planner;
use servio_demo_site::{LocalCa, Misbehaviour};

use crate::common;

const TOOL: &str = "/api/servio/tools/shop.getSalesSummary";
/// Metrics of the site's brief, each a call of its own.
const METRICS: usize = 200;
/// The collector's room for calls.
const IN_FLIGHT: usize = 4;

/// The demo site's brief with [`METRICS`] daily metrics, each asking with an argument of its
/// own (`copy`), so that none shares a call.
fn many_calls(manifest: &mut Value) {
    let first = manifest["brief"]["metrics"][0].clone();
    let metrics = (0..METRICS).map(|n| {
        let mut metric = first.clone();
        metric["key"] = json!(format!("many.metric{n}.daily"));
        metric["args"]["copy"] = json!(n);
        metric
    });
    manifest["brief"]["metrics"] = Value::Array(metrics.collect());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brief_of_many_metrics_never_has_more_calls_in_flight_than_the_room() {
    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo").await;
    demo.site.edit_manifest(Some(Arc::new(many_calls)));
    // Slow enough that calls started together overlap at the site.
    demo.site.set_misbehaviour(TOOL, Some(Misbehaviour::Slow(Duration::from_millis(20))));
    for (name, collector) in common::collectors(&ca.ca_pem).await {
        let collector = collector.with(|c| c.with_in_flight(IN_FLIGHT));

        // Collect-now: the latest due period of every metric, at once.
        let email = format!("now-{name}@example.com");
        let (user, entry) = common::user_with_site(&collector, &email, &demo, "demo").await;
        demo.site.reset_calls_at_once();
        let now = jiff::Timestamp::now();
        let summary = collector.collect_due(&user, &entry, &mut Planner::new(now)).await.unwrap();
        assert_eq!(summary.stored, METRICS, "{name}: collect-now, {summary:?}");
        let most = demo.site.most_calls_at_once();
        assert!(most <= IN_FLIGHT, "{name}: collect-now had {most} calls in flight, room for {IN_FLIGHT}");

        // A worker: the same period of another user, leased whole (its jobs in one task).
        let email = format!("worker-{name}@example.com");
        let (user, entry) = common::user_with_site(&collector, &email, &demo, "demo").await;
        collector.plan_entry(&user, &entry, jiff::Timestamp::now()).await.unwrap();
        demo.site.reset_calls_at_once();
        let (_stop, stop) = tokio::sync::watch::channel(false);
        let config = WorkerConfig { drain: true, ..WorkerConfig::new(format!("many-{name}")) };
        let summary = collector.clone().run(config, stop).await;
        assert_eq!(summary.stored, METRICS, "{name}: the worker, {summary:?}");
        let most = demo.site.most_calls_at_once();
        assert!(most <= IN_FLIGHT, "{name}: the worker had {most} calls in flight, room for {IN_FLIGHT}");
    }
}
