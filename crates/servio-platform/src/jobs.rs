//! Collection as jobs that many processes share. Planning turns each due slot into a job (one
//! per slot, so planning twice, or from two processes, adds nothing); workers claim due jobs
//! with a lease and commit each result, value and attempt together, only while their claim's
//! fence is still the job's, so a worker paused past its lease never writes over the worker that
//! took its jobs over. `servio serve` plans and works jobs each scheduler round; `servio worker`
//! processes do the same in a loop ([`run`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use servio_collector::plan::{Planner, next_retry, periods_between, settle_delay};
use servio_manifest::period::{Granularity, Period};
use servio_manifest::{Brief, Manifest};
use servio_store::{Completion, Job, JobClaim, JobResult, NewJob, StoreError, User};
use tokio::sync::watch;

use crate::AppState;
use crate::collect::{Answer, DEADLINE, Outcome, Summary, ask, fresh_bearer};

/// How a worker works.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Its id, recorded as the lease owner of the jobs it claims.
    pub owner: String,
    /// How long a claim holds; past it another worker may take the job over (and this one's
    /// result is then fenced out).
    pub lease: Duration,
    /// Jobs claimed at once: their calls run concurrently and their results commit in one
    /// transaction.
    pub batch: usize,
    /// Batches in flight at once.
    pub lanes: usize,
    /// How often due slots are planned into jobs.
    pub plan_every: Duration,
    /// How long a lane waits when no job is due.
    pub idle: Duration,
}

impl WorkerConfig {
    /// The defaults of `servio worker`, for `owner`.
    pub fn new(owner: impl Into<String>) -> WorkerConfig {
        WorkerConfig {
            owner: owner.into(),
            lease: Duration::from_secs(60),
            batch: 32,
            lanes: 2,
            plan_every: Duration::from_secs(60),
            idle: Duration::from_secs(1),
        }
    }
}

/// A site's manifest and brief, parsed once and shared by the jobs of every user of the site.
struct Parsed {
    manifest: Manifest,
    brief: Brief,
}

/// Parses a stored manifest; `None` when it has no valid brief (nothing to collect).
fn parse(text: &str) -> Option<Arc<Parsed>> {
    let report = servio_manifest::check(text.as_bytes(), &servio_manifest::CheckOptions::default());
    Some(Arc::new(Parsed { manifest: report.manifest?, brief: report.brief? }))
}

/// Parsed manifests by site, kept while the stored text is the same: checking a manifest costs
/// far more than the call it is needed for.
#[derive(Default)]
pub struct ManifestCache(HashMap<i64, (String, Option<Arc<Parsed>>)>);

impl ManifestCache {
    fn get(&mut self, site_id: i64, text: &str) -> Option<Arc<Parsed>> {
        if let Some((cached, parsed)) = self.0.get(&site_id)
            && cached == text
        {
            return parsed.clone();
        }
        // Bounded: a worker serving many sites re-parses rather than growing without end.
        if self.0.len() >= 1024 {
            self.0.clear();
        }
        let parsed = parse(text);
        self.0.insert(site_id, (text.to_owned(), parsed.clone()));
        parsed
    }
}

/// A due slot found by planning, owned until it is enqueued.
#[derive(Debug, Clone)]
struct Planned {
    user_id: i64,
    site_id: i64,
    metric_key: String,
    granularity: &'static str,
    period_start: i64,
    period_end: i64,
    start_date: String,
    due: i64,
    deadline: i64,
}

impl Planned {
    fn new_job(&self) -> NewJob<'_> {
        NewJob {
            slot: servio_store::Slot {
                user_id: self.user_id,
                site_id: self.site_id,
                metric_key: &self.metric_key,
                granularity: self.granularity,
                period_start: self.period_start,
                period_end: self.period_end,
                start_date: &self.start_date,
            },
            not_before: self.due,
            deadline: self.deadline,
        }
    }
}

/// The latest due period of every metric of `brief` for one vault entry that still needs
/// collecting: not past its deadline, and not settled already (a backfill may have collected
/// it without a job). A new brief or metric thus starts with the current period.
async fn plan_entry(
    state: &AppState,
    user: &User,
    site_id: i64,
    brief: &Brief,
    planner: &mut Planner,
) -> Result<Vec<Planned>, String> {
    let now = planner.now();
    let mut planned = Vec::new();
    for metric in &brief.metrics {
        let period = planner.latest_due(&user.time_zone, metric.granularity).map_err(|e| e.to_string())?.clone();
        let due = period.end.checked_add(settle_delay(period.granularity)).map_err(|e| e.to_string())?;
        let deadline = due.checked_add(DEADLINE).unwrap_or(Timestamp::MAX);
        if now > deadline {
            continue;
        }
        let settled = state
            .store
            .slot_settled(user.id, site_id, &metric.key, period.start.as_second())
            .await
            .map_err(|e| e.to_string())?;
        if !settled {
            planned.push(Planned {
                user_id: user.id,
                site_id,
                metric_key: metric.key.clone(),
                granularity: metric.granularity.as_str(),
                period_start: period.start.as_second(),
                period_end: period.end.as_second(),
                start_date: period.start_date.to_string(),
                due: due.as_second(),
                deadline: deadline.as_second(),
            });
        }
    }
    Ok(planned)
}

async fn enqueue(state: &AppState, planned: &[Planned], now: Timestamp) -> Result<u64, StoreError> {
    let mut added = 0;
    for chunk in planned.chunks(1000) {
        let jobs: Vec<NewJob> = chunk.iter().map(Planned::new_job).collect();
        added += state.store.enqueue_jobs(&jobs, now.as_second()).await?;
    }
    Ok(added)
}

/// Plans the due slots of every vault entry of every user into jobs; returns how many jobs are
/// new. Idempotent: a slot that has a job keeps it.
pub async fn plan_all(state: &AppState, now: Timestamp, cache: &mut ManifestCache) -> Result<u64, String> {
    let entries = state.store.all_vault_entries().await.map_err(|e| format!("listing vaults: {e}"))?;
    // One instant per round: users sharing a zone share its due periods.
    let mut planner = Planner::new(now);
    let mut planned = Vec::new();
    for (user, entry) in entries {
        let Some(parsed) = cache.get(entry.site.id, &entry.site.manifest) else { continue };
        match plan_entry(state, &user, entry.site.id, &parsed.brief, &mut planner).await {
            Ok(due) => planned.extend(due),
            Err(error) => eprintln!("servio: planning collection for {} failed: {error}", entry.site.origin),
        }
    }
    enqueue(state, &planned, now).await.map_err(|e| format!("enqueueing jobs: {e}"))
}

/// What one job came to, owned until it is committed.
#[derive(Debug, Clone)]
enum Resolution {
    /// The site was asked; with a transient failure, `not_before` is when to try again
    /// (`None`: not before the deadline, so the job fails).
    Answered { answer: Answer, not_before: Option<i64> },
    /// The job cannot be done any more, for this reason (logged).
    Failed(String),
    /// Nothing to do or to log: the site left the vault, or the period ran out untried.
    Abandoned,
}

impl Resolution {
    fn result(&self) -> JobResult<'_> {
        match self {
            Resolution::Answered { answer, not_before } => match &answer.outcome {
                Outcome::Stored(value) => {
                    JobResult::Stored { value: *value, raw: answer.raw.as_deref().unwrap_or_default() }
                }
                Outcome::Dropped(reason) => JobResult::Dropped { reason, raw: answer.raw.as_deref() },
                Outcome::Failed { reason, transient: true } => {
                    JobResult::Retry { reason, retry_at: answer.retry_at, not_before: *not_before }
                }
                Outcome::Failed { reason, transient: false } => JobResult::Failed { reason },
            },
            Resolution::Failed(reason) => JobResult::Failed { reason },
            Resolution::Abandoned => JobResult::Abandoned,
        }
    }
}

/// What the jobs of one (user, site) need: loaded once per batch.
struct Context {
    user: User,
    parsed: Arc<Parsed>,
    token: Option<String>,
    zone: TimeZone,
}

/// Loads the context of a (user, site); `Err` with the resolution of all its jobs when they
/// cannot be done.
async fn context(
    state: &AppState,
    user_id: i64,
    site_id: i64,
    cache: &mut ManifestCache,
) -> Result<Result<Context, Resolution>, StoreError> {
    let (Some(user), Some(entry)) =
        (state.store.user(user_id).await?, state.store.vault_entry(user_id, site_id).await?)
    else {
        return Ok(Err(Resolution::Abandoned));
    };
    let Some(parsed) = cache.get(site_id, &entry.site.manifest) else {
        return Ok(Err(Resolution::Failed("the site's manifest no longer has a valid brief".into())));
    };
    let zone = match servio_manifest::period::zone(&user.time_zone) {
        Ok(zone) => zone,
        Err(error) => return Ok(Err(Resolution::Failed(format!("the user's time zone: {error}")))),
    };
    let token = fresh_bearer(state, &user, &entry.site, &parsed.manifest, entry.credential.as_deref()).await;
    Ok(Ok(Context { user, parsed, token, zone }))
}

/// The period a job was planned for, resolved again in the user's zone; `None` when the zone
/// changed since, so that the job's start no longer begins a period there.
fn job_period(job: &Job, granularity: Granularity, zone: &TimeZone) -> Option<Period> {
    let date: jiff::civil::Date = job.start_date.parse().ok()?;
    periods_between(granularity, date, date, zone).ok()?.into_iter().find(|p| p.start.as_second() == job.period_start)
}

/// When a slot that just failed transiently may be tried again: the backoff over its failures
/// so far (from the attempt log, this one included), never before a site's `Retry-After`;
/// `None` when that is past the job's deadline.
async fn retry_not_before(
    state: &AppState,
    job: &Job,
    now: Timestamp,
    retry_at: Option<i64>,
) -> Result<Option<i64>, StoreError> {
    let prior = state.store.retries(&job.slot()).await?;
    let failures = u32::try_from(prior.failures.saturating_add(1)).unwrap_or(u32::MAX);
    let asked = prior.retry_at.max(retry_at).and_then(|t| Timestamp::from_second(t).ok());
    let next = next_retry(failures, now, asked).as_second();
    Ok((next <= job.deadline).then_some(next))
}

/// Does one job: asks the site, unless the job can no longer be done.
async fn resolve(state: &AppState, context: &Context, job: &Job, now: Timestamp) -> Result<Resolution, StoreError> {
    if now.as_second() > job.deadline {
        return Ok(Resolution::Abandoned);
    }
    let Some(metric) = context.parsed.brief.metrics.iter().find(|m| m.key == job.metric_key) else {
        return Ok(Resolution::Failed(format!("the brief no longer has the metric {}", job.metric_key)));
    };
    let period = (metric.granularity.as_str() == job.granularity)
        .then(|| job_period(job, metric.granularity, &context.zone))
        .flatten();
    let Some(period) = period else {
        let reason = format!("the period of {} no longer exists in {}", job.start_date, context.user.time_zone);
        return Ok(Resolution::Failed(reason));
    };
    let answer = ask(state, &context.user, &context.parsed.manifest, context.token.as_deref(), metric, &period).await;
    let not_before = match &answer.outcome {
        Outcome::Failed { transient: true, .. } => retry_not_before(state, job, now, answer.retry_at).await?,
        _ => None,
    };
    Ok(Resolution::Answered { answer, not_before })
}

/// Works claimed jobs: their calls concurrently, then every result in one transaction, each
/// committed only while its fence holds. `now` is the clock of attempts and deadlines.
async fn work_jobs(
    state: &AppState,
    jobs: &[Job],
    now: Timestamp,
    cache: &mut ManifestCache,
) -> Result<Summary, StoreError> {
    let mut contexts: HashMap<(i64, i64), Result<Context, Resolution>> = HashMap::new();
    for job in jobs {
        let key = (job.user_id, job.site_id);
        if let std::collections::hash_map::Entry::Vacant(slot) = contexts.entry(key) {
            slot.insert(context(state, job.user_id, job.site_id, cache).await?);
        }
    }
    let resolutions = futures_util::future::join_all(jobs.iter().map(|job| {
        let context = &contexts[&(job.user_id, job.site_id)];
        async move {
            match context {
                Ok(context) => resolve(state, context, job, now).await,
                Err(resolution) => Ok(resolution.clone()),
            }
        }
    }))
    .await
    .into_iter()
    .collect::<Result<Vec<Resolution>, StoreError>>()?;
    let completions: Vec<Completion> = jobs
        .iter()
        .zip(&resolutions)
        .map(|(job, resolution)| Completion { job, result: resolution.result() })
        .collect();
    let committed = state.store.complete_jobs(&completions, now.as_second()).await?;
    let mut summary = Summary::default();
    for (completion, committed) in completions.iter().zip(committed) {
        match (&completion.result, committed) {
            (_, false) => summary.fenced_out += 1,
            (JobResult::Stored { .. }, true) => summary.stored += 1,
            (JobResult::Dropped { .. }, true) => summary.dropped += 1,
            (JobResult::Failed { .. } | JobResult::Retry { .. }, true) => summary.failed += 1,
            (JobResult::Abandoned, true) => {}
        }
    }
    Ok(summary)
}

/// Claims up to `config.batch` due jobs for `config.owner` and works them; `None` when no job
/// was due.
pub async fn claim_and_work(
    state: &AppState,
    config: &WorkerConfig,
    cache: &mut ManifestCache,
) -> Result<Option<Summary>, StoreError> {
    let now = Timestamp::now();
    let lease = i64::try_from(config.lease.as_secs().max(1)).unwrap_or(i64::MAX);
    let claim = JobClaim {
        owner: &config.owner,
        now: now.as_second(),
        lease_until: now.as_second().saturating_add(lease),
        limit: i64::try_from(config.batch.max(1)).unwrap_or(i64::MAX),
        only: None,
    };
    let jobs = state.store.claim_jobs(&claim).await?;
    if jobs.is_empty() {
        return Ok(None);
    }
    work_jobs(state, &jobs, now, cache).await.map(Some)
}

/// How long the collection of one vault entry on demand may hold its jobs.
const ON_DEMAND_LEASE: i64 = 300;

/// Plans and works, right now, the due slots of one user's vault entry (what `collect_due`
/// does, through jobs): a slot whose job another worker holds, or whose backoff has not passed,
/// counts as waiting.
pub(crate) async fn collect_entry(
    state: &AppState,
    user: &User,
    entry: &servio_store::VaultEntry,
    planner: &mut Planner,
) -> Result<Summary, String> {
    let now = planner.now();
    let mut cache = ManifestCache::default();
    let Some(parsed) = cache.get(entry.site.id, &entry.site.manifest) else {
        return Ok(Summary::default());
    };
    let planned = plan_entry(state, user, entry.site.id, &parsed.brief, planner).await?;
    if planned.is_empty() {
        return Ok(Summary::default());
    }
    enqueue(state, &planned, now).await.map_err(|e| e.to_string())?;
    let claim = JobClaim {
        owner: "servio-serve",
        now: now.as_second(),
        lease_until: now.as_second().saturating_add(ON_DEMAND_LEASE),
        limit: i64::try_from(planned.len()).unwrap_or(i64::MAX),
        only: Some((user.id, entry.site.id)),
    };
    let jobs = state.store.claim_jobs(&claim).await.map_err(|e| e.to_string())?;
    let mut summary = work_jobs(state, &jobs, now, &mut cache).await.map_err(|e| e.to_string())?;
    summary.waiting = planned
        .iter()
        .filter(|p| !jobs.iter().any(|j| j.metric_key == p.metric_key && j.period_start == p.period_start))
        .count();
    Ok(summary)
}

/// Plans and works jobs until `stop` turns true (or its sender is gone): a planning task every
/// `config.plan_every`, and `config.lanes` lanes claiming and working batches. A lane finishes
/// (and commits) the batch it holds before it stops. Returns what was done.
pub async fn run(state: AppState, config: WorkerConfig, stop: watch::Receiver<bool>) -> Summary {
    let total = Arc::new(Mutex::new(Summary::default()));
    let mut tasks = tokio::task::JoinSet::new();
    {
        let (state, config, mut stop) = (state.clone(), config.clone(), stop.clone());
        tasks.spawn(async move {
            let mut cache = ManifestCache::default();
            while !*stop.borrow() {
                if let Err(error) = plan_all(&state, Timestamp::now(), &mut cache).await {
                    eprintln!("servio: planning collection failed: {error}");
                }
                wait(&mut stop, config.plan_every).await;
            }
        });
    }
    for _ in 0..config.lanes.max(1) {
        let (state, config, mut stop, total) = (state.clone(), config.clone(), stop.clone(), total.clone());
        tasks.spawn(async move {
            let mut cache = ManifestCache::default();
            while !*stop.borrow() {
                match claim_and_work(&state, &config, &mut cache).await {
                    Ok(Some(done)) => total.lock().unwrap_or_else(|e| e.into_inner()).merge(&done),
                    Ok(None) => wait(&mut stop, config.idle).await,
                    Err(error) => {
                        eprintln!("servio: {}: working jobs failed: {error}", config.owner);
                        wait(&mut stop, config.idle).await;
                    }
                }
            }
        });
    }
    {
        // Progress, for operators: what this worker committed so far, every ten seconds.
        let (owner, mut stop, total) = (config.owner.clone(), stop.clone(), total.clone());
        tasks.spawn(async move {
            let mut shown = Summary::default();
            while !*stop.borrow() {
                wait(&mut stop, Duration::from_secs(10)).await;
                let now = *total.lock().unwrap_or_else(|e| e.into_inner());
                if now != shown {
                    eprintln!("servio: {owner}: {}", now.describe());
                    shown = now;
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    *total.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sleeps for `duration`, or until `stop` changes (or its sender is gone).
async fn wait(stop: &mut watch::Receiver<bool>, duration: Duration) {
    tokio::select! {
        () = tokio::time::sleep(duration) => {}
        _ = stop.changed() => {}
    }
}

/// Collects what is due for every user, every `tick`, forever: each round plans due slots into
/// jobs, then works due jobs until none is left (with other processes sharing the database).
pub async fn run_rounds(state: AppState, tick: Duration) {
    let config = WorkerConfig::new(format!("servio-serve-{}", std::process::id()));
    let mut cache = ManifestCache::default();
    loop {
        if let Err(error) = plan_all(&state, Timestamp::now(), &mut cache).await {
            eprintln!("servio: planning collection failed: {error}");
        }
        loop {
            match claim_and_work(&state, &config, &mut cache).await {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(error) => {
                    eprintln!("servio: working collection jobs failed: {error}");
                    break;
                }
            }
        }
        tokio::time::sleep(tick).await;
    }
}
