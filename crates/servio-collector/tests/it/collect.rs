//! Collection against the demo site on every backend, driving the [`Collector`] directly:
//! due periods are collected once, transient failures back off (honouring `Retry-After`), and
//! bad values are dropped with a reason, never stored.

use servio_client::ClientConfig;
use servio_collector::collect::Summary;
use servio_collector::plan::Planner;
use servio_demo_site::{LocalCa, Misbehaviour};
use servio_store::AttemptOutcome;

use crate::common;

const TOOL: &str = "/api/servio/tools/shop.getSalesSummary";

/// Stored, dropped, failed and waiting, to compare in one line.
fn counts(summary: &Summary) -> [usize; 4] {
    [summary.stored, summary.dropped, summary.failed, summary.waiting]
}

/// Scheduled collection: a new site starts with the current due period, a settled period is not
/// collected again, and a transient failure makes the slot wait out its backoff.
#[tokio::test]
async fn due_periods_are_collected_once_and_wait_after_a_transient_failure() {
    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo").await;
    for (name, collector) in common::collectors(&ca.ca_pem).await {
        let collect = |user, entry| {
            let collector = collector.clone();
            async move {
                let now = jiff::Timestamp::now();
                counts(&collector.collect_due(&user, &entry, &mut Planner::new(now)).await.unwrap())
            }
        };
        let (joe, entry) = common::user_with_site(&collector, &format!("joe-{name}@example.com"), &demo, "demo").await;
        assert_eq!(collect(joe.clone(), entry.clone()).await, [2, 0, 0, 0], "{name}");
        assert_eq!(collect(joe.clone(), entry.clone()).await, [0, 0, 0, 0], "{name}: settled");
        let values = collector.store().values(joe.id, entry.site.id, "sales.revenue.daily", 0..i64::MAX).await.unwrap();
        assert_eq!(values.len(), 1, "{name}: only the current period, no history");

        let (kim, entry) = common::user_with_site(&collector, &format!("kim-{name}@example.com"), &demo, "demo").await;
        demo.site.set_misbehaviour(TOOL, Some(Misbehaviour::ServerError));
        let failed = collect(kim.clone(), entry.clone()).await;
        demo.site.set_misbehaviour(TOOL, None);
        assert_eq!(failed, [0, 0, 2, 0], "{name}");
        assert_eq!(collect(kim, entry).await, [0, 0, 0, 2], "{name}: backing off");
    }
}

/// The scheduler's clock, driven by hand: transient failures are retried after 5, then 10
/// minutes, and a site's `Retry-After` is honoured even past the backoff; then the value is stored.
#[tokio::test]
async fn transient_failures_back_off_and_honour_retry_after() {
    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo").await;
    for (name, collector) in common::collectors(&ca.ca_pem).await {
        let (user, entry) = common::user_with_site(&collector, &format!("lea-{name}@example.com"), &demo, "demo").await;
        let round = |at: &str, misbehaviour: Option<Misbehaviour>| {
            demo.site.set_misbehaviour(TOOL, misbehaviour);
            let (collector, user, entry) = (collector.clone(), user.clone(), entry.clone());
            let at: jiff::Timestamp = at.parse().unwrap();
            async move {
                let summary = collector.collect_due(&user, &entry, &mut Planner::new(at)).await.unwrap();
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

        let attempts = collector.store().attempts(user.id, entry.site.id, 20).await.unwrap();
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
    let demo = common::demo_site(&ca, "demo").await;
    let (name, collector) = common::collectors(&ca.ca_pem).await.remove(0);
    let (user, entry) = common::user_with_site(&collector, &format!("kim-{name}@example.com"), &demo, "demo").await;
    // A backfill of one day, queued and collected by a worker that stops once nothing is due.
    let backfill = |day: Option<jiff::civil::Date>| {
        let (collector, user, entry) = (collector.clone(), user.clone(), entry.clone());
        async move {
            if let Some(day) = day {
                collector.queue_backfill(&user, &entry, (day, day), jiff::Timestamp::now()).await.unwrap();
            }
            let (_stop, stop) = tokio::sync::watch::channel(false);
            let config = servio_collector::WorkerConfig { drain: true, ..servio_collector::WorkerConfig::new("kim") };
            counts(&collector.run(config, stop).await)
        }
    };
    // The period due now, which a worker plans, collected first: the days below are alone.
    assert_eq!(backfill(None).await, [2, 0, 0, 0]);
    let backfill = |day| backfill(Some(day));
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
        demo.site.set_misbehaviour(TOOL, Some(Misbehaviour::Totals(raw.to_owned())));
        assert_eq!(backfill(day).await, [0, 2, 0, 0], "{raw}");
        day = day.tomorrow().unwrap();
    }
    for body in ["{not json", "[1, 2", "{}", r#"{"totals": {"revenue": {}}}"#] {
        demo.site.set_misbehaviour(TOOL, Some(Misbehaviour::Body(body.to_owned())));
        assert_eq!(backfill(day).await, [0, 2, 0, 0], "{body}");
        day = day.tomorrow().unwrap();
    }
    demo.site.set_misbehaviour(TOOL, Some(Misbehaviour::ServerError));
    assert_eq!(backfill(day).await, [0, 0, 2, 0], "500");
    day = day.tomorrow().unwrap();
    let mut accepted = Vec::new();
    for (raw, value) in [("2340", 2340.0), (r#""2340""#, 2340.0), (r#""$2,340.00""#, 2340.0), (r#""-€12.5""#, -12.5)]
    {
        demo.site.set_misbehaviour(TOOL, Some(Misbehaviour::Totals(raw.to_owned())));
        assert_eq!(backfill(day).await, [2, 0, 0, 0], "{raw}");
        accepted.push((day.to_string(), raw, value));
        day = day.tomorrow().unwrap();
    }
    demo.site.set_misbehaviour(TOOL, None);

    // Only the accepted forms are stored, with their number and raw text (beside the period
    // due now, collected first).
    let store = collector.store();
    let backfilled = jiff::civil::date(2026, 9, 1).to_zoned_datetime(jiff::tz::TimeZone::UTC).unwrap().timestamp();
    let before = jiff::civil::date(2026, 11, 1).to_zoned_datetime(jiff::tz::TimeZone::UTC).unwrap().timestamp();
    let days = backfilled.as_second()..before.as_second();
    let stored = store.values(user.id, entry.site.id, "sales.revenue.daily", days.clone()).await.unwrap();
    let stored: Vec<(String, String, f64)> =
        stored.into_iter().map(|v| (v.period.start_date, v.raw, v.value)).collect();
    let expected: Vec<(String, String, f64)> =
        accepted.into_iter().map(|(date, raw, value)| (date, raw.to_owned(), value)).collect();
    assert_eq!(stored, expected);

    // A site slower than the client's timeout: a transient failure, nothing stored.
    let config = ClientConfig { call_timeout: std::time::Duration::from_millis(300), ..Default::default() };
    let impatient = common::collector(store.clone(), common::client(&ca.ca_pem, config));
    demo.site.set_misbehaviour(TOOL, Some(Misbehaviour::Slow(std::time::Duration::from_secs(3))));
    let now = "2026-10-15T12:00:00Z".parse().unwrap();
    let slow = impatient.collect_due(&user, &entry, &mut Planner::new(now)).await.unwrap();
    demo.site.set_misbehaviour(TOOL, None);
    assert_eq!((slow.stored, slow.failed), (0, 2), "a timeout");
    let stored_after = store.values(user.id, entry.site.id, "sales.revenue.daily", days).await.unwrap();
    assert_eq!(stored_after.len(), stored.len(), "a timeout stores nothing");

    // Every drop and failure is in the log with a reason a site owner can act on.
    let attempts = store.attempts(user.id, entry.site.id, 100).await.unwrap();
    assert_eq!(attempts.len(), 2 * (1 + dropped.len() + 4 + 1 + 4 + 1));
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

/// A backfill of a site whose acting manifest has no valid brief is refused as such, not as a
/// failure of the platform.
#[tokio::test]
async fn a_backfill_without_a_brief_says_there_is_nothing_to_collect() {
    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo").await;
    let (name, collector) = common::collectors(&ca.ca_pem).await.remove(0);
    let (user, mut entry) = common::user_with_site(&collector, &format!("ned-{name}@example.com"), &demo, "demo").await;
    let mut manifest: serde_json::Value = serde_json::from_str(&entry.site.manifest).unwrap();
    manifest.as_object_mut().unwrap().remove("brief");
    entry.approved_manifest = Some(manifest.to_string());
    let day = jiff::civil::date(2026, 9, 1);
    let error = collector.backfill(&user, &entry, (day, day), std::time::Duration::ZERO).await.unwrap_err();
    assert_eq!(error.kind(), servio_collector::ErrorKind::NothingToCollect, "{error}");
}

/// Issue 25: a user's backfills still to collect were counted, then queued, so requests made
/// at once each passed the limit on the same count. Four requests of 20 periods at once,
/// against a limit of 30 in flight: one is queued, the others refused, on every backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfills_asked_at_once_cannot_pass_the_limit_together() {
    use servio_collector::jobs::BackfillLimits;
    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo").await;
    for (name, collector) in common::collectors(&ca.ca_pem).await {
        let collector = collector.with(|c| c.with_backfill_limits(BackfillLimits { per_request: 20, in_flight: 30 }));
        let (user, entry) = common::user_with_site(&collector, &format!("all-{name}@example.com"), &demo, "demo").await;
        let requests = (0..4).map(|month| {
            let (collector, user, entry) = (collector.clone(), user.clone(), entry.clone());
            // Ten days of the demo's two daily metrics: 20 periods each, in different months.
            let first = jiff::civil::date(2026, month + 1, 1);
            let last = jiff::civil::date(2026, month + 1, 10);
            tokio::spawn(
                async move { collector.queue_backfill(&user, &entry, (first, last), jiff::Timestamp::now()).await },
            )
        });
        let answers = futures_util::future::join_all(requests).await;
        let queued = answers.iter().filter(|answer| matches!(answer, Ok(Ok(20)))).count();
        let refused = answers
            .iter()
            .filter(|answer| matches!(answer, Ok(Err(e)) if e.kind() == servio_collector::ErrorKind::AtLimit))
            .count();
        assert_eq!((queued, refused), (1, 3), "{name}: {answers:?}");
        assert_eq!(collector.store().pending_backfills(user.id).await.unwrap(), 20, "{name}");
    }
}

/// A backfill asked for while this process's worker waits idle is leased at once, not at its
/// next poll (`servio serve` polls every 5 s; here a minute, so a missed wake-up shows).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_leases_a_backfill_queued_in_its_process_at_once() {
    use std::time::Duration;
    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo").await;
    let (name, collector) = common::collectors(&ca.ca_pem).await.remove(0);
    let (user, entry) = common::user_with_site(&collector, &format!("wake-{name}@example.com"), &demo, "demo").await;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let config = servio_collector::WorkerConfig {
        idle: Duration::from_secs(60),
        plan_every: Duration::from_secs(3600),
        ..servio_collector::WorkerConfig::new("idle")
    };
    let worker = tokio::spawn(collector.clone().run(config, stopped));
    // Its first lease finds nothing due: it waits.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let day = jiff::civil::date(2026, 3, 1);
    assert_eq!(collector.queue_backfill(&user, &entry, (day, day), jiff::Timestamp::now()).await.unwrap(), 2);
    let store = collector.store().clone();
    let collected = async {
        while store.pending_backfills(user.id).await.unwrap() > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let woke = tokio::time::timeout(Duration::from_secs(10), collected).await;
    stop.send(true).unwrap();
    worker.await.unwrap();
    assert!(woke.is_ok(), "{name}: the backfill waited for the worker's next poll");
}

/// Issue 41, finding 12: a backfill the caller waited for called the site itself, past the
/// user's limit of backfills in flight, their turn and the calls in flight (four requests at
/// once made 11,232 calls). It is queued as jobs now and waits for the workers: with none
/// running the site hears nothing and the wait ends with every period untried; with a worker
/// of room for 2 calls, four requests at once for the same days are refused past the user's
/// limit but one, whose days are each asked once, never more than 2 calls at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_waited_for_is_collected_by_the_workers_within_their_limits() {
    use std::time::Duration;

    use servio_collector::jobs::BackfillLimits;
    use servio_store::BackfillProgress;

    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo").await;
    // Slow enough that calls made together overlap at the site.
    demo.site.set_misbehaviour(TOOL, Some(Misbehaviour::Slow(Duration::from_millis(50))));
    let tool_calls = || demo.site.requests().iter().filter(|r| r.path == TOOL).count();
    for (name, collector) in common::collectors(&ca.ca_pem).await {
        let limits = BackfillLimits { per_request: 100, in_flight: 30 };
        let collector = collector.with(|c| c.with_in_flight(2).with_backfill_limits(limits));
        let email = format!("wait-{name}@example.com");
        let (user, entry) = common::user_with_site(&collector, &email, &demo, "demo").await;

        // No worker: the caller calls nobody, and says what is still to do when its wait ends.
        demo.site.record_requests();
        let day = jiff::civil::date(2026, 3, 1);
        let waited = collector.backfill(&user, &entry, (day, day), Duration::from_millis(300)).await.unwrap();
        assert_eq!((waited.queued, waited.progress.untried), (2, 2), "{name}: {waited:?}");
        assert_eq!(tool_calls(), 0, "{name}: the caller called the site itself");

        // A worker with room for 2 calls; four requests at once for ten days (20 periods, ten
        // calls: the demo's two metrics share one).
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let config = servio_collector::WorkerConfig {
            idle: Duration::from_millis(50),
            plan_every: Duration::from_secs(3600),
            ..servio_collector::WorkerConfig::new(format!("waited-{name}"))
        };
        let worker = tokio::spawn(collector.clone().run(config, stopped));
        demo.site.reset_calls_at_once();
        let (first, last) = (jiff::civil::date(2026, 3, 2), jiff::civil::date(2026, 3, 11));
        let requests = (0..4).map(|_| {
            let (collector, user, entry) = (collector.clone(), user.clone(), entry.clone());
            tokio::spawn(async move { collector.backfill(&user, &entry, (first, last), Duration::from_secs(30)).await })
        });
        let answers: Vec<_> = futures_util::future::join_all(requests).await.into_iter().map(Result::unwrap).collect();
        let _ = stop.send(true);
        worker.await.unwrap();
        let refused =
            answers.iter().filter(|a| matches!(a, Err(e) if e.kind() == servio_collector::ErrorKind::AtLimit));
        assert_eq!(refused.count(), 3, "{name}: past the user's limit of backfills in flight: {answers:?}");
        let waited = answers.iter().find_map(|answer| answer.as_ref().ok()).unwrap();
        let all_stored = BackfillProgress { stored: 20, ..BackfillProgress::default() };
        assert_eq!((waited.queued, waited.progress), (20, all_stored), "{name}");
        let most = demo.site.most_calls_at_once();
        assert!(most <= 2, "{name}: {most} calls at once, the worker's room is 2");
        // The ten days once each, the day first waited for, and the period due now (planned).
        assert_eq!(tool_calls(), 12, "{name}: each period asked once");
    }
}
