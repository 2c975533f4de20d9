//! The collector half of `bench/collector.sh`: seeds PostgreSQL (a fresh schema) with users who
//! have the running demo site in their vault and `JOBS` due collections, starts `servio worker
//! --drain` processes on it, and times them until the last one exits, no job left pending: every
//! value committed durably, in the workers' fenced group commits. Prints `collections/s: N`.
//!
//! Usage: `collector_bench SERVIO_BIN ORIGIN TOKEN CA_PEM DATABASE_URL JOBS WORKERS IN_FLIGHT BATCH`
//! (`IN_FLIGHT` calls at once per worker, `BATCH` jobs per lease).

use std::process::Stdio;
use std::time::{Duration, Instant};

use servio_platform::testing::{Seed, seed_collections};

const KEY: [u8; 32] = [9; 32];
const ZONES: [&str; 10] = [
    "Pacific/Auckland",
    "America/Los_Angeles",
    "UTC",
    "Asia/Kolkata",
    "Europe/Berlin",
    "America/Sao_Paulo",
    "Asia/Tokyo",
    "Africa/Nairobi",
    "Australia/Adelaide",
    "America/New_York",
];
const METRICS: [&str; 2] = ["sales.revenue.daily", "sales.orders.daily"];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [servio, origin, token, ca, base_url, jobs, workers, in_flight, batch] = args.as_slice() else {
        return Err(
            "usage: collector_bench SERVIO_BIN ORIGIN TOKEN CA_PEM DATABASE_URL JOBS WORKERS IN_FLIGHT BATCH".into()
        );
    };
    let (jobs, workers): (usize, usize) = (jobs.parse()?, workers.parse()?);
    let url = servio_store::testing::fresh_schema_url(base_url).await;
    let store = servio_store::open(&url).await?;

    // The manifest the demo site serves is a function of its origin.
    let site = servio_demo_site::Site::new(servio_demo_site::SiteConfig::bearer(origin, token), None).await?;
    let manifest = site.manifest().to_string();
    let days = i64::try_from(jobs.div_ceil(ZONES.len() * METRICS.len()))?;
    let seed = Seed { origin, manifest: &manifest, token, key: &KEY, zones: &ZONES, days, metrics: &METRICS };
    let seeded = seed_collections(&*store, &seed).await?.len();
    eprintln!("seeded {seeded} jobs for {} users", ZONES.len());

    let key: String = KEY.iter().map(|b| format!("{b:02x}")).collect();
    let started = Instant::now();
    let mut children = Vec::new();
    for i in 0..workers {
        children.push(
            tokio::process::Command::new(servio)
                .args(["worker", "--database-url", &url, "--allow-local", "--ca-cert", ca, "--id"])
                .arg(format!("bench-{i}"))
                .args(["--in-flight", in_flight, "--batch-size", batch, "--lease", "60", "--drain"])
                .env("SERVIO_SECRET_KEY", &key)
                .stdout(Stdio::null())
                .kill_on_drop(true)
                .spawn()?,
        );
    }
    // Each worker exits once no job is left to lease and its results are committed: the clock
    // stops with the last one, and nothing polls the database meanwhile.
    let all_exit = futures_util::future::join_all(children.iter_mut().map(|child| child.wait()));
    let statuses = tokio::time::timeout(Duration::from_secs(600), all_exit).await.map_err(|_| "not done in 600 s")?;
    let elapsed = started.elapsed().as_secs_f64();
    for status in statuses {
        let status = status?;
        if !status.success() {
            return Err(format!("a worker failed: {status}").into());
        }
    }
    let counts = store.job_counts().await?;
    if counts.pending > 0 {
        return Err(format!("jobs left pending: {counts:?}").into());
    }
    if counts.failed > 0 {
        return Err(format!("{} collections failed: {counts:?}", counts.failed).into());
    }
    println!("collections: {} in {elapsed:.3} s", counts.done);
    println!("collections/s: {:.1}", counts.done as f64 / elapsed);
    if let Some(ticks) = children_cpu_ticks() {
        println!("worker_cpu_ticks: {ticks}");
    }
    Ok(())
}

/// The CPU the workers used, all waited for: this process's `cutime + cstime` in clock ticks
/// (Linux's `/proc/self/stat`; `None` elsewhere).
fn children_cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (in parentheses, which may hold spaces): the state is
    // field 3, cutime and cstime fields 16 and 17.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(13)?.parse::<u64>().ok()? + fields.get(14)?.parse::<u64>().ok()?)
}
