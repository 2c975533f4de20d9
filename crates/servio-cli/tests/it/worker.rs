//! The kill test of `servio worker` (PostgreSQL only): 10,000 due collections against the real
//! demo site over HTTPS, four worker processes on one database, one of them SIGKILLed and
//! restarted every few seconds and another paused (SIGSTOP) past its lease and resumed. At the
//! end every slot has exactly one stored value and exactly one `stored` attempt, no job is left
//! pending, and jobs were taken over (fence above 1). Without `SERVIO_TEST_DATABASE_URL` the
//! test says it is skipped and passes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use servio_platform::testing::{Seed, seed_collections};
use servio_store::Store;
use tokio::process::{Child, Command};

const KEY: [u8; 32] = [7; 32];
const TOKEN: &str = "kill-test-token";
const ZONES: [&str; 5] = ["Pacific/Auckland", "America/Los_Angeles", "UTC", "Asia/Kolkata", "Europe/Berlin"];
/// Days per user: five users, two daily metrics, a thousand days each make 10,000 slots.
const DAYS: i64 = 1000;
const WORKERS: usize = 4;
/// Short leases, so that the jobs of a killed or paused worker are taken over quickly.
const LEASE_SECONDS: &str = "2";
/// However it goes, the test ends within this.
const BOUND: Duration = Duration::from_secs(420);

/// One `servio worker` process, killed when dropped, its output in files.
struct Worker {
    child: Child,
    id: String,
    log: PathBuf,
}

impl Worker {
    fn start(dir: &Path, url: &str, ca: &Path, id: &str) -> Worker {
        let log = dir.join(format!("{id}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_servio"))
            .args(["worker", "--database-url", url, "--allow-local", "--ca-cert"])
            .arg(ca)
            .args(["--id", id, "--lease", LEASE_SECONDS, "--batch-size", "16", "--in-flight", "32"])
            .args(["--plan-every", "3600", "--idle", "100"])
            .env("SERVIO_SECRET_KEY", KEY.iter().map(|b| format!("{b:02x}")).collect::<String>())
            .env_remove("SERVIO_DATABASE_URL")
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out))
            .kill_on_drop(true)
            .spawn()
            .expect("the servio binary");
        Worker { child, id: id.to_owned(), log }
    }

    fn signal(&self, name: &str) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill").args([format!("-{name}"), pid.to_string()]).status();
        }
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// Everything the workers printed, for a failure message.
fn outputs(workers: &[Worker], gone: &[String]) -> String {
    let mut text = gone.join("\n");
    for worker in workers {
        text.push_str(&format!("\n--- {} ---\n{}", worker.id, worker.output()));
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_collections_stored_exactly_once_while_workers_die() {
    let Some(base) = servio_store::testing::postgres_url() else { return };
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let url = servio_store::testing::fresh_schema_url(&base).await;
    let store = servio_store::open(&url).await.unwrap();

    // The demo site over HTTPS, trusted through its CA file.
    let ca = servio_demo_site::LocalCa::generate(&[]).unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.ca_pem).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("https://localhost:{}", listener.local_addr().unwrap().port());
    let site = servio_demo_site::Site::new(servio_demo_site::SiteConfig::bearer(&origin, TOKEN), None).await.unwrap();
    let manifest = site.manifest().to_string();
    let _running = servio_demo_site::serve_https_on(listener, &ca, site.router()).await.unwrap();

    let expected = seed(store.as_ref(), &origin, &manifest).await;
    assert_eq!(expected.len(), 10_000);

    let mut workers: Vec<Worker> =
        (0..WORKERS).map(|i| Worker::start(dir.path(), &url, &ca_file, &format!("w{i}-0"))).collect();
    let mut gone = Vec::new();
    let (mut kills, mut pauses) = (0, 0);
    let mut tick = 0u64;
    let mut paused = false;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        tick += 1;
        let counts = store.job_counts().await.unwrap();
        if counts.pending == 0 && !paused {
            break;
        }
        if started.elapsed() > BOUND {
            panic!("not done in {BOUND:?}: {counts:?}\n{}", outputs(&workers, &gone));
        }
        // Every three seconds worker 0 dies without a word, whatever it holds, and a new one
        // takes its place.
        if tick.is_multiple_of(3) {
            workers[0].child.kill().await.unwrap();
            kills += 1;
            gone.push(format!("--- {} (killed) ---\n{}", workers[0].id, workers[0].output()));
            workers[0] = Worker::start(dir.path(), &url, &ca_file, &format!("w0-{kills}"));
        }
        // Every six seconds worker 1 stops for three, past its two-second lease: the jobs it
        // holds are taken over, and what it tries to commit when it wakes up is fenced out.
        if tick % 6 == 1 {
            workers[1].signal("STOP");
            paused = true;
            pauses += 1;
        } else if tick % 6 == 4 {
            workers[1].signal("CONT");
            paused = false;
        }
    }

    // The others stop on SIGTERM after the batches in hand, and say what they did.
    for worker in &workers[1..] {
        worker.signal("TERM");
    }
    for worker in &mut workers[1..] {
        let status = tokio::time::timeout(Duration::from_secs(30), worker.child.wait()).await;
        assert!(
            matches!(status, Ok(Ok(s)) if s.success()),
            "{} on SIGTERM: {status:?}\n{}",
            worker.id,
            worker.output()
        );
    }
    let elapsed = started.elapsed();
    let counts = store.job_counts().await.unwrap();
    let report = outputs(&workers, &gone);

    // Every slot: exactly one value and exactly one `stored` attempt; nothing else attempted.
    let site_id = store.all_vault_entries().await.unwrap()[0].1.site.id;
    let mut values: HashMap<(i64, String, String), usize> = HashMap::new();
    let mut stored: HashMap<(i64, String, String), usize> = HashMap::new();
    let mut other_outcomes = Vec::new();
    for user_id in expected.iter().map(|(user, _, _)| *user).collect::<std::collections::BTreeSet<_>>() {
        for key in ["sales.revenue.daily", "sales.orders.daily"] {
            for value in store.values(user_id, site_id, key, 0..i64::MAX).await.unwrap() {
                *values.entry((user_id, value.metric_key, value.period.start_date)).or_default() += 1;
            }
        }
        for attempt in store.attempts(user_id, site_id, 1_000_000).await.unwrap() {
            if attempt.outcome == servio_store::AttemptOutcome::Stored {
                *stored.entry((user_id, attempt.metric_key, attempt.start_date)).or_default() += 1;
            } else {
                other_outcomes.push(format!("{} {:?}", attempt.outcome, attempt.reason));
            }
        }
    }
    for slot in &expected {
        assert_eq!(values.get(slot), Some(&1), "one value for {slot:?}");
        assert_eq!(stored.get(slot), Some(&1), "one stored attempt for {slot:?}\n{report}");
    }
    // The workers' own planning may add the latest due day of each user: those too, once.
    assert!(stored.values().all(|&n| n == 1), "a slot stored twice\n{report}");
    assert_eq!(stored.len(), values.len(), "a stored attempt for each value, no more");
    assert!(other_outcomes.is_empty(), "only stored attempts: {other_outcomes:?}");
    assert_eq!(counts.pending, 0, "{counts:?}");
    assert_eq!(counts.done, values.len() as i64, "every job done, with its value: {counts:?}");
    assert!(counts.leased_again > 0 && counts.max_fence > 1, "jobs were taken over after a lease ran out: {counts:?}");
    let fenced_out: usize = report
        .lines()
        .filter_map(|line| line.strip_suffix(" fenced out"))
        .filter(|line| line.contains("stopped:"))
        .filter_map(|line| line.rsplit(", ").next()?.parse::<usize>().ok())
        .sum();
    eprintln!(
        "kill test: {} slots stored once each in {elapsed:.1?}; {kills} kills, {pauses} pauses, {} jobs leased more \
         than once (highest fence {}), {fenced_out} results fenced out in the workers that stopped cleanly",
        values.len(),
        counts.leased_again,
        counts.max_fence
    );
}

/// Five users in different zones with the demo site in their vault (its token sealed with
/// [`KEY`]), and a job for each of their last thousand due days and both metrics.
async fn seed(store: &dyn Store, origin: &str, manifest: &str) -> Vec<(i64, String, String)> {
    let metrics = ["sales.revenue.daily", "sales.orders.daily"];
    let seed = Seed { origin, manifest, token: TOKEN, key: &KEY, zones: &ZONES, days: DAYS, metrics: &metrics };
    seed_collections(store, &seed).await.unwrap()
}
