//! The cost of a fair lease (`bench/leases.sh`, results in BENCHMARKS.md): one user with
//! 200,000 pending backfill jobs and, beside them, other users' scheduled jobs; each lease of a
//! batch of 128 is timed (then completed, as a worker would), on SQLite and, when
//! `SERVIO_TEST_DATABASE_URL` is set, on PostgreSQL in a fresh schema. It checks what fairness
//! promises: every other user's due jobs are in the first lease.
//!
//! `BACKLOG` (200000) sets the one user's jobs, `USERS` (100) the other users, each with
//! `PER_USER` (10) scheduled jobs, `LEASES` (50) the leases timed.

use std::time::{Duration, Instant};

use servio_store::{CollectionResult, Completion, JobKind, JobLease, NewJob, Slot, Store};

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `count` jobs of `user` at `site`, hourly periods from the epoch, of `kind`.
async fn enqueue(store: &dyn Store, (user, site): (i64, i64), count: usize, kind: JobKind) {
    let keys: Vec<(String, String)> =
        (0..count).map(|n| (format!("1970-01-01T{n}"), format!("1970-01-{:02}", 1 + n / 24 % 28))).collect();
    for chunk in keys.chunks(5_000).enumerate() {
        let (offset, chunk) = chunk;
        let jobs: Vec<NewJob> = chunk
            .iter()
            .enumerate()
            .map(|(i, (key, date))| {
                let start = i64::try_from((offset * 5_000 + i) * 3_600).unwrap_or(i64::MAX);
                NewJob {
                    slot: Slot {
                        user_id: user,
                        site_id: site,
                        metric_key: "shop.orders.hourly",
                        granularity: "hour",
                        period_start: start,
                        period_end: start + 3_600,
                        start_date: date,
                        period_key: key,
                    },
                    not_before: 10,
                    deadline: i64::MAX,
                    kind,
                }
            })
            .collect();
        store.enqueue_jobs(&jobs, 0).await.expect("enqueueing");
    }
}

async fn bench(name: &str, store: &dyn Store) {
    let (backlog, users, per_user, leases) =
        (setting("BACKLOG", 200_000), setting("USERS", 100), setting("PER_USER", 10), setting("LEASES", 50));
    let site = servio_store::testing::site(store, "https://bench.example").await;
    let heavy = store.create_user("heavy@example.com", "h", "UTC", 0).await.expect("a user").id;
    let started = Instant::now();
    enqueue(store, (heavy, site), backlog, JobKind::Backfill).await;
    let mut others = Vec::new();
    for n in 0..users {
        let user = store.create_user(&format!("u{n}@example.com"), "h", "UTC", 0).await.expect("a user").id;
        enqueue(store, (user, site), per_user, JobKind::Scheduled).await;
        others.push(user);
    }
    eprintln!(
        "{name}: {backlog} backfill jobs of one user and {users} x {per_user} scheduled enqueued in {:?}",
        started.elapsed()
    );
    let mut times: Vec<Duration> = Vec::new();
    let mut now = 100;
    for n in 0..leases {
        now += 1;
        let lease = JobLease { owner: "bench", now, lease_until: now + 600, limit: 128, only: None, after_user: 0 };
        let started = Instant::now();
        let jobs = store.lease_jobs(&lease).await.expect("a lease");
        times.push(started.elapsed());
        if n == 0 {
            let served: std::collections::HashSet<i64> = jobs.iter().map(|j| j.user_id).collect();
            // Scheduled jobs first, a turn of each user's before anyone's second.
            let fair = !served.contains(&heavy) && served.len() == others.len().min(128);
            assert!(fair || users * per_user < 128, "{name}: the first lease served {served:?}");
        }
        let results: Vec<Completion> = jobs
            .iter()
            .map(|job| Completion { job, result: CollectionResult::Failed { reason: "bench" }, duration_ms: None })
            .collect();
        store.complete_jobs(&results, now).await.expect("completing");
    }
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name}: {leases} leases of 128 among {backlog} jobs of one user: median {:.2} ms, p90 {:.2} ms, max {:.2} ms",
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
        at(1.0).as_secs_f64() * 1e3
    );
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite:{}", dir.path().join("bench.db").display());
    let sqlite = servio_store::open(&url).await.expect("SQLite");
    bench("sqlite", sqlite.as_ref()).await;
    if let Ok(base) = std::env::var("SERVIO_TEST_DATABASE_URL") {
        let url = servio_store::testing::fresh_schema_url(&base).await;
        let postgres = servio_store::open(&url).await.expect("PostgreSQL");
        bench("postgres", postgres.as_ref()).await;
    }
}
