//! Collection as jobs that many processes share. Planning turns each due slot into a job (one
//! per slot, so planning twice, or from two processes, adds nothing); workers lease due jobs
//! (an owner and an expiry) and commit each result, value and attempt together, only while their lease's
//! fence is still the job's, so a worker paused past its lease never writes over the worker that
//! took its jobs over. `servio serve` plans and works jobs each scheduler round; `servio worker`
//! processes do the same in a loop ([`Collector::run`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::Value;
use servio_manifest::period::{Granularity, Period};
use servio_manifest::{Brief, Metric};
use servio_store::{
    BackfillJobs, BackfillProgress, CollectionResult, Completion, Job, JobKind, JobLease, NewJob, StoreError, User,
    VaultEntry,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::calls::{MAX_IN_FLIGHT, at_most};
use crate::collect::{Bearer, DEADLINE, Reading, Summary, ToolAsk, args_of, shared_calls};
use crate::plan::{Planner, due_periods_at_most, next_retry, periods_between, settle_delay};
use crate::{Collector, Error};
use servio_core::manifests::{CheckedManifest, Wait};

/// How a worker works.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Its id, recorded as the lease owner of the jobs it leases.
    pub owner: String,
    /// How long a lease holds; past it another worker may take the job over (and this one's
    /// result is then fenced out).
    pub lease: Duration,
    /// The most jobs leased at once (one lease, their users and sites loaded once). A worker
    /// holds at most its collector's calls in flight ([`Collector::in_flight`]) + `batch` jobs
    /// leased and not done, so leases are smaller while calls are slow.
    pub batch: usize,
    /// How often due slots are planned into jobs.
    pub plan_every: Duration,
    /// How long to wait before leasing again when no job was due.
    pub idle: Duration,
    /// Stop once no job is due, instead of waiting for more (for batch runs); planning then
    /// happens once, at the start.
    pub drain: bool,
    /// Once told to stop, how long calls in flight may take to finish; what is still running
    /// then is cut off, and every job this worker still holds is handed back.
    pub grace: Duration,
}

impl WorkerConfig {
    /// The defaults of `servio worker`, for `owner`.
    pub fn new(owner: impl Into<String>) -> WorkerConfig {
        WorkerConfig {
            owner: owner.into(),
            lease: Duration::from_secs(60),
            batch: 128,
            plan_every: Duration::from_secs(60),
            idle: Duration::from_secs(1),
            drain: false,
            grace: Duration::from_secs(10),
        }
    }
}

/// A due slot found by planning, owned until it is enqueued.
#[derive(Debug, Clone)]
struct DueSlot {
    user_id: i64,
    site_id: i64,
    metric_key: String,
    granularity: &'static str,
    period_start: i64,
    period_end: i64,
    start_date: String,
    period_key: String,
    due: i64,
    deadline: i64,
    kind: JobKind,
}

impl DueSlot {
    /// The slot `metric` of `site_id` fills for `user` over `period`, due at `due` and
    /// collected until `deadline`.
    fn new(user: &User, site_id: i64, metric: &Metric, period: &Period, (due, deadline): (i64, i64)) -> DueSlot {
        DueSlot {
            user_id: user.id,
            site_id,
            metric_key: metric.key.clone(),
            granularity: metric.granularity.as_str(),
            period_start: period.start.as_second(),
            period_end: period.end.as_second(),
            start_date: period.start_date.to_string(),
            period_key: period.key(),
            due,
            deadline,
            kind: JobKind::Scheduled,
        }
    }

    fn slot(&self) -> servio_store::Slot<'_> {
        servio_store::Slot {
            user_id: self.user_id,
            site_id: self.site_id,
            metric_key: &self.metric_key,
            granularity: self.granularity,
            period_start: self.period_start,
            period_end: self.period_end,
            start_date: &self.start_date,
            period_key: &self.period_key,
        }
    }

    fn new_job(&self) -> NewJob<'_> {
        NewJob { slot: self.slot(), not_before: self.due, deadline: self.deadline, kind: self.kind }
    }
}

/// How far back a credential saved collects again the periods refused before it: the longest
/// backfill the site page offers (400 days), so what a backfill asked for and the credential's
/// absence refused is filled without asking again.
pub const REFUSED_WINDOW_DAYS: i64 = 400;

/// Whether the user asked for the periods (collect-now, a backfill, a credential saved), or the
/// scheduler plans them: a period the user asks for is tried again when it has no value,
/// whatever its earlier failures (§8, 2026-12-07); the scheduler leaves a period that ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    /// By the user.
    ByUser,
    /// By the scheduler.
    Scheduled,
}

/// Whether `slot` still needs collecting, as `asked` looks at it.
async fn needs_collecting(collector: &Collector, slot: &DueSlot, asked: Asked) -> Result<bool, StoreError> {
    Ok(match asked {
        Asked::ByUser => !collector.store.slot_has_value(&slot.slot()).await?,
        Asked::Scheduled => !collector.store.slot_settled(&slot.slot()).await?,
    })
}

/// The latest due period of every metric of `brief` for one vault entry that still needs
/// collecting: not past its deadline, and not settled already (a backfill may have collected
/// it without a job; for a period the user asks for, not stored already). A new brief or
/// metric thus starts with the current period.
async fn plan_entry(
    collector: &Collector,
    user: &User,
    site_id: i64,
    brief: &Brief,
    (planner, asked): (&mut Planner, Asked),
) -> Result<Vec<DueSlot>, Error> {
    let now = planner.now();
    let mut planned = Vec::new();
    for metric in &brief.metrics {
        let period = planner
            .latest_due(&user.time_zone, metric.granularity)
            .map_err(|source| Error::Zone { zone: user.time_zone.clone(), source })?
            .clone();
        // A period ending at the end of time is never due.
        let Ok(due) = period.end.checked_add(settle_delay(period.granularity)) else { continue };
        let deadline = due.checked_add(DEADLINE).unwrap_or(Timestamp::MAX);
        if now > deadline {
            continue;
        }
        let slot = DueSlot::new(user, site_id, metric, &period, (due.as_second(), deadline.as_second()));
        // Settled under the key: the same local period collected under another zone counts.
        if needs_collecting(collector, &slot, asked).await? {
            planned.push(slot);
        }
    }
    Ok(planned)
}

/// Adds `planned` as jobs (those that have one keep it, but a job of a period the user asked
/// for that ended without a value is pending again); returns how many are new or pending
/// again, and wakes this process's idle worker when there are any.
async fn enqueue(
    collector: &Collector,
    planned: &[DueSlot],
    (now, asked): (Timestamp, Asked),
) -> Result<u64, StoreError> {
    let mut added = 0;
    for chunk in planned.chunks(1000) {
        let jobs: Vec<NewJob> = chunk.iter().map(DueSlot::new_job).collect();
        added += collector.store.enqueue_jobs(&jobs, now.as_second()).await?;
        if asked == Asked::ByUser {
            added += collector.store.revive_jobs(&jobs, now.as_second()).await?;
        }
    }
    if added > 0 {
        collector.queued.notify_one();
    }
    Ok(added)
}

impl Collector {
    /// Plans the due slots of every vault entry of every user into jobs; returns how many jobs
    /// are new. Idempotent: a slot that has a job keeps it.
    pub async fn plan_all(&self, now: Timestamp) -> Result<u64, Error> {
        let span = tracing::info_span!("plan_all");
        async move {
            let entries = self.store.all_vault_entries().await?;
            // One instant per round: users sharing a zone share its due periods.
            let mut planner = Planner::new(now);
            let mut planned = Vec::new();
            for (user, entry) in entries {
                let Some(checked) = self.acting(&entry, Wait::Turn).await? else { continue };
                let Some(brief) = &checked.brief else { continue };
                match plan_entry(self, &user, entry.site.id, brief, (&mut planner, Asked::Scheduled)).await {
                    Ok(due) => planned.extend(due),
                    Err(error) => tracing::warn!(
                        user_id = user.id,
                        site = %entry.site.origin,
                        error = %servio_client::error_chain(&error),
                        "planning collection failed"
                    ),
                }
            }
            let added = enqueue(self, &planned, (now, Asked::Scheduled)).await?;
            tracing::debug!(due = planned.len(), added, "planned");
            Ok(added)
        }
        .instrument(span)
        .await
    }
}

impl Collector {
    /// Queues the due periods of one vault entry as jobs now (a site just added, a credential
    /// saved) rather than at the next planning round, so the next lease of any worker collects
    /// them; a latest period without a value is tried again whatever its earlier failures (one
    /// refused for want of a credential, say). Returns how many jobs are new or pending again.
    ///
    /// Older periods refused for good (for want of a credential, or any refusal: see
    /// [`servio_store::Jobs::revive_refused_jobs`]) whose start lies within
    /// [`REFUSED_WINDOW_DAYS`] are pending again too, each as the kind of job it was (a backfill's
    /// after everyone's scheduled periods): a credential saved fills what it was missing for.
    pub async fn plan_entry(&self, user: &User, entry: &VaultEntry, now: Timestamp) -> Result<u64, Error> {
        let Some(checked) = self.acting(entry, Wait::Bounded).await? else { return Ok(0) };
        let Some(brief) = &checked.brief else { return Ok(0) };
        let planned = plan_entry(self, user, entry.site.id, brief, (&mut Planner::new(now), Asked::ByUser)).await?;
        let mut added = enqueue(self, &planned, (now, Asked::ByUser)).await?;
        let since = now.as_second().saturating_sub(REFUSED_WINDOW_DAYS * 86_400);
        let deadline = now.checked_add(DEADLINE).unwrap_or(Timestamp::MAX).as_second();
        let revived =
            self.store.revive_refused_jobs(user.id, entry.site.id, since, (now.as_second(), deadline)).await?;
        if revived > 0 {
            added += revived;
            self.queued.notify_one();
        }
        Ok(added)
    }

    /// Queues a backfill: a job, due `now`, for every period of every metric of the brief
    /// acting for `user` at `entry` whose start date lies in `first..=last`, that is due and has
    /// no value yet. Workers collect them after every user's scheduled periods, users taking
    /// turns (so a backfill never delays anyone's due periods), each call in the room of the
    /// worker's collector; returns how many jobs are new ([`Collector::backfill`] also waits
    /// for them). A slot that has a job already keeps it.
    /// [`Error::NoBrief`] when the acting manifest has no valid brief; the limits of
    /// [`BackfillLimits`]: [`Error::TooManyPeriods`] for a range holding more periods than one
    /// request may ask for, [`Error::BackfillsInFlight`] when the user's backfills still to
    /// collect would pass their limit. Nothing is queued then.
    pub async fn queue_backfill(
        &self,
        user: &User,
        entry: &VaultEntry,
        dates: (jiff::civil::Date, jiff::civil::Date),
        now: Timestamp,
    ) -> Result<u64, Error> {
        Ok(self.queue_backfill_starts(user, entry, dates, now).await?.0)
    }

    /// [`Collector::queue_backfill`], with the first instants of the first and the last period
    /// it found to collect (none when every period has a value or ended without one), queued
    /// now or already.
    async fn queue_backfill_starts(
        &self,
        user: &User,
        entry: &VaultEntry,
        (first, last): (jiff::civil::Date, jiff::civil::Date),
        now: Timestamp,
    ) -> Result<(u64, Option<(i64, i64)>), Error> {
        let checked = self.acting(entry, Wait::Bounded).await?.ok_or(Error::NoBrief)?;
        let brief = checked.brief.as_ref().ok_or(Error::NoBrief)?;
        let zone = servio_manifest::period::zone(&user.time_zone)
            .map_err(|source| Error::Zone { zone: user.time_zone.clone(), source })?;
        // A backfilled period is long past: it has from now the time any due period has.
        let deadline = now.checked_add(DEADLINE).unwrap_or(Timestamp::MAX).as_second();
        self.backfill_limits.check_range(brief, (first, last), &zone, now)?;
        let mut due = Vec::new();
        for metric in &brief.metrics {
            let periods = periods_between(metric.granularity, first, last, &zone).map_err(Error::Period)?;
            due.extend(periods.into_iter().filter(|p| crate::plan::is_due(p, now)).map(|period| (metric, period)));
        }
        // A user already at the limit is refused before each period is looked up (a request
        // may ask for 10,000, each a query).
        let pending = self.store.pending_backfills(user.id).await?;
        if u64::try_from(pending).unwrap_or(0) >= self.backfill_limits.in_flight {
            self.backfill_limits.check_in_flight(pending, due.len())?;
        }
        let mut queued = Vec::new();
        for (metric, period) in &due {
            let mut slot = DueSlot::new(user, entry.site.id, metric, period, (now.as_second(), deadline));
            slot.kind = JobKind::Backfill;
            if needs_collecting(self, &slot, Asked::ByUser).await? {
                queued.push(slot);
            }
        }
        let starts = queued.iter().map(|slot| slot.period_start);
        let Some(starts) = starts.clone().min().zip(starts.max()) else { return Ok((0, None)) };
        // Counted and queued under the user's lock, so that two requests at once cannot both
        // pass the limit on the same count (in this process: each other process's requests
        // may add one more request's worth).
        let _turn = self.backfilling.lock(user.id).await;
        let pending = self.store.pending_backfills(user.id).await?;
        self.backfill_limits.check_in_flight(pending, queued.len())?;
        Ok((enqueue(self, &queued, (now, Asked::ByUser)).await?, Some(starts)))
    }
}

/// What a backfill a caller waited for came to ([`Collector::backfill`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backfilled {
    /// Periods queued (those with a value, or with a job already, are not queued again).
    pub queued: u64,
    /// How its periods without a value stood when the wait ended, whoever queued their jobs:
    /// each tried once, unless the wait ran out first (`untried` above 0; the workers go on).
    pub progress: BackfillProgress,
}

/// How often a backfill waited for looks at its jobs when no commit of this process's worker
/// wakes it (another process's worker may be doing them).
const BACKFILL_LOOK_EVERY: Duration = Duration::from_millis(250);

/// The least time between two looks of a backfill waited for, however often commits wake it.
const BACKFILL_LOOK_GAP: Duration = Duration::from_millis(20);

impl Collector {
    /// Queues a backfill as [`Collector::queue_backfill`] does, under the same limits, then
    /// waits up to `wait` for the workers (this process's or any other's on the database) to
    /// try each of its periods once. A caller that wants the result waits for its jobs and
    /// never calls a site itself (issue 41: four requests waited for at once made 11,232 calls
    /// past the user's pending limit, their turn and the calls in flight): its periods wait
    /// their turn behind every user's scheduled periods, and their calls take the collector's
    /// room like any other's. The same errors as [`Collector::queue_backfill`].
    pub async fn backfill(
        &self,
        user: &User,
        entry: &VaultEntry,
        dates: (jiff::civil::Date, jiff::civil::Date),
        wait: Duration,
    ) -> Result<Backfilled, Error> {
        let now = Timestamp::now();
        let (queued, starts) = self.queue_backfill_starts(user, entry, dates, now).await?;
        let until = tokio::time::Instant::now() + wait;
        loop {
            // Listening before looking, so that a commit between the two is not missed.
            let committed = self.committed.notified();
            tokio::pin!(committed);
            committed.as_mut().enable();
            // Its periods' jobs, those it queued and those it found queued (a period's
            // scheduled job, an earlier backfill's).
            let progress = match starts {
                Some(starts) => {
                    let jobs = BackfillJobs { since: now.as_second(), starts };
                    self.store.backfill_progress(user.id, entry.site.id, jobs).await?
                }
                None => BackfillProgress::default(),
            };
            if progress.untried == 0 || tokio::time::Instant::now() >= until {
                return Ok(Backfilled { queued, progress });
            }
            tokio::select! {
                () = committed => tokio::time::sleep(BACKFILL_LOOK_GAP).await,
                () = tokio::time::sleep(BACKFILL_LOOK_EVERY) => {}
                () = tokio::time::sleep_until(until) => {}
            }
        }
    }
}

/// Locks by user, striped: a user's lock is one of [`UserLocks::STRIPES`], shared with the
/// users whose ids fall on the same stripe (who then wait a turn), so that it costs a fixed
/// few bytes however many users there are.
#[derive(Debug)]
pub(crate) struct UserLocks([tokio::sync::Mutex<()>; UserLocks::STRIPES]);

impl UserLocks {
    const STRIPES: usize = 64;

    /// Waits for `user_id`'s lock; it is held until the guard is dropped.
    pub(crate) async fn lock(&self, user_id: i64) -> tokio::sync::MutexGuard<'_, ()> {
        let stripe = usize::try_from(user_id.rem_euclid(Self::STRIPES as i64)).unwrap_or(0);
        self.0[stripe].lock().await
    }
}

impl Default for UserLocks {
    fn default() -> UserLocks {
        UserLocks(std::array::from_fn(|_| tokio::sync::Mutex::new(())))
    }
}

/// How much a user may backfill: the periods one request may ask for (each metric's counted),
/// and the backfill periods a user may have queued and not yet collected. Beyond either, the
/// request is refused with what the limit is and how far past it it would go; nothing is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackfillLimits {
    /// The most periods one backfill may ask for (default 10,000: 400 days of an hourly metric
    /// is 9,600).
    pub per_request: u64,
    /// The most backfill periods a user may have queued at once (default 20,000: at a site's
    /// pace of a few calls a second, some hours of work, well within a period's 24 h deadline).
    pub in_flight: u64,
}

impl Default for BackfillLimits {
    fn default() -> BackfillLimits {
        BackfillLimits { per_request: 10_000, in_flight: 20_000 }
    }
}

impl BackfillLimits {
    /// [`Error::TooManyPeriods`] when a backfill of every metric of `brief` over `first..=last`
    /// in `zone` may hold more periods due at `now` than one request may ask for. Counted
    /// before anything is built or asked of the store ([`due_periods_at_most`]): a range too
    /// large costs its arithmetic, and for hourly metrics a look at the zone's transitions.
    pub(crate) fn check_range(
        &self,
        brief: &Brief,
        (first, last): (jiff::civil::Date, jiff::civil::Date),
        zone: &TimeZone,
        now: Timestamp,
    ) -> Result<(), Error> {
        let mut periods = 0u64;
        for metric in &brief.metrics {
            let more = due_periods_at_most(metric.granularity, (first, last), zone, now).map_err(Error::Period)?;
            periods = periods.saturating_add(more);
        }
        self.check_request(periods)
    }

    /// [`Error::TooManyPeriods`] when `periods` is more than one request may ask for.
    fn check_request(&self, periods: u64) -> Result<(), Error> {
        if periods > self.per_request {
            return Err(Error::TooManyPeriods { periods, max: self.per_request });
        }
        Ok(())
    }

    /// [`Error::BackfillsInFlight`] when `adding` periods to the `pending` ones passes the limit.
    fn check_in_flight(&self, pending: i64, adding: usize) -> Result<(), Error> {
        let adding = u64::try_from(adding).unwrap_or(u64::MAX);
        let total = u64::try_from(pending).unwrap_or(0).saturating_add(adding);
        if total > self.in_flight {
            return Err(Error::BackfillsInFlight { pending, adding, max: self.in_flight });
        }
        Ok(())
    }
}

/// What one job came to, owned until it is committed.
#[derive(Debug, Clone)]
enum Resolution {
    /// The site was asked; with a transient failure, `not_before` is when to try again
    /// (`None`: not before the deadline, so the job fails). `period` is the period asked for,
    /// its first instant and end, as resolved in the user's zone when it was asked.
    Answered { answer: Box<Reading>, not_before: Option<i64>, period: (i64, i64) },
    /// The job cannot be done any more, for this reason (logged).
    Failed(String),
    /// The period has not ended yet in the user's zone, which changed since it was planned
    /// (the same local date ends later there): the job waits until `due`, the reason logged.
    NotDue { reason: String, due: i64 },
    /// Nothing to do or to log: the site left the vault, or the period ran out untried.
    Abandoned,
}

impl Resolution {
    /// How long the site took to answer, when it was asked.
    fn duration_ms(&self) -> Option<f64> {
        match self {
            Resolution::Answered { answer, .. } => answer.duration_ms,
            _ => None,
        }
    }

    fn result(&self) -> CollectionResult<'_> {
        match self {
            Resolution::Answered { answer, not_before, .. } => answer.to_write(*not_before),
            Resolution::Failed(reason) => CollectionResult::Failed { reason },
            Resolution::NotDue { reason, due } => {
                CollectionResult::Retry { reason, retry_at: None, not_before: Some(*due) }
            }
            Resolution::Abandoned => CollectionResult::Abandoned,
        }
    }
}

/// What the jobs of one (user, site) need, loaded once per batch: the user, their vault entry,
/// the manifest acting for them (with a valid brief), the bearer token and the user's zone.
struct LoadedEntry {
    user: User,
    entry: VaultEntry,
    checked: Arc<CheckedManifest>,
    token: Option<String>,
    zone: TimeZone,
}

/// What the jobs of a (user, site) need from its vault `entry`; `Err` with the resolution of
/// all its jobs when they cannot be done.
async fn load_entry(collector: &Collector, user: User, entry: VaultEntry) -> Result<LoadedEntry, Resolution> {
    let checked = collector.acting(&entry, Wait::Turn).await.ok().flatten();
    let Some(checked) = checked.filter(|checked| checked.brief.is_some()) else {
        return Err(Resolution::Failed("the site's manifest no longer has a valid brief".into()));
    };
    let zone = match servio_manifest::period::zone(&user.time_zone) {
        Ok(zone) => zone,
        Err(error) => return Err(Resolution::Failed(format!("the user's time zone: {error}"))),
    };
    let sealed = entry.credential.as_deref();
    let token = collector.credentials.fresh_bearer(user.id, &entry.site, &checked.manifest, sealed).await;
    Ok(LoadedEntry { user, entry, checked, token, zone })
}

/// The period of a job, its key resolved in the user's zone as it is now: the same local
/// period the job was planned for, even when the zone changed since (then its instants are
/// the new zone's, and so are the value's). A job planned before keys (an hour keyed by its
/// instant) is found by its instant. `None` when that period does not occur in the zone now.
fn job_period(job: &Job, granularity: Granularity, zone: &TimeZone) -> Option<Period> {
    if let Some(period) = Period::from_key(granularity, &job.period.key, zone) {
        return Some(period);
    }
    let date: jiff::civil::Date = job.period.start_date.parse().ok()?;
    periods_between(granularity, date, date, zone).ok()?.into_iter().find(|p| p.start.as_second() == job.period.start)
}

/// When a slot that just failed transiently may be tried again: the backoff over its failures
/// so far (from the attempt log, this one included), never before a site's `Retry-After`;
/// `None` when that is past `deadline`, the job's in the user's zone.
async fn retry_not_before(
    collector: &Collector,
    job: &Job,
    (now, deadline): (Timestamp, i64),
    retry_at: Option<i64>,
) -> Result<Option<i64>, StoreError> {
    let prior = collector.store.retries(&job.slot()).await?;
    let failures = u32::try_from(prior.failures.saturating_add(1)).unwrap_or(u32::MAX);
    let asked = prior.retry_at.max(retry_at).and_then(|t| Timestamp::from_second(t).ok());
    let next = next_retry(failures, now, asked).as_second();
    Ok((next <= deadline).then_some(next))
}

/// What a job asks: its metric for its period with the arguments resolved, and the job's
/// deadline in the user's zone.
struct Prepared<'a> {
    metric: &'a Metric,
    period: Period,
    args: Value,
    deadline: i64,
}

/// What a job needs asked, or, when it cannot be asked now, its resolution.
fn prepare<'a>(context: &'a LoadedEntry, job: &Job, now: Timestamp) -> Result<Prepared<'a>, Resolution> {
    let metrics = context.checked.brief.iter().flat_map(|brief| &brief.metrics);
    let Some(metric) = metrics.into_iter().find(|m| m.key == job.metric_key) else {
        return Err(Resolution::Failed(format!("the brief no longer has the metric {}", job.metric_key)));
    };
    let period = (metric.granularity.as_str() == job.period.granularity)
        .then(|| job_period(job, metric.granularity, &context.zone))
        .flatten();
    let Some(period) = period else {
        let reason = format!("the period of {} no longer exists in {}", job.period.start_date, context.user.time_zone);
        return Err(Resolution::Failed(reason));
    };
    // Planned in another zone, the same local period may end later here: it is due, and its
    // deadline falls, where it ends now.
    let due = period.end.checked_add(settle_delay(period.granularity)).map_or(i64::MAX, |due| due.as_second());
    let deadline = job.deadline.max(due.saturating_add(DEADLINE.as_secs()));
    if now.as_second() > deadline {
        return Err(Resolution::Abandoned);
    }
    if now.as_second() < due {
        let reason = format!("{} has not ended yet in {}", job.period.start_date, context.user.time_zone);
        return Err(Resolution::NotDue { reason, due });
    }
    let args = args_of(metric, &period, &context.user.time_zone);
    Ok(Prepared { metric, period, args, deadline })
}

/// Does the jobs of one (user, site) in `context`: the site is asked once per call they share
/// (§5), `at_once` calls at a time (the permits the caller holds in the collector's room),
/// unless a job can no longer be done. Resolutions in job order.
async fn resolve(
    collector: &Collector,
    context: &LoadedEntry,
    jobs: &[Job],
    (now, at_once): (Timestamp, usize),
) -> Result<Vec<Resolution>, StoreError> {
    let prepared: Vec<Result<Prepared, Resolution>> = jobs.iter().map(|job| prepare(context, job, now)).collect();
    let asked: Vec<(usize, &Prepared)> =
        prepared.iter().enumerate().filter_map(|(index, ready)| Some((index, ready.as_ref().ok()?))).collect();
    let groups = shared_calls(asked.iter().map(|(_, ready)| (ready.metric.tool.as_str(), &ready.args, &ready.period)));
    let entry = &context.entry;
    let bearer = Bearer { site: &entry.site, sealed: entry.credential.as_deref(), token: context.token.as_deref() };
    // Made first, then run: the compiler cannot prove a stream mapping a closure `Send` here.
    let asks: Vec<_> = groups
        .iter()
        .map(|members| {
            let first = asked[members[0]].1;
            let tool = &first.metric.tool;
            collector.ask(ToolAsk { user: &context.user, checked: &context.checked, bearer, tool, args: &first.args })
        })
        .collect();
    let answers = at_most(at_once, asks).await;
    let mut resolutions: Vec<Option<Resolution>> = prepared.iter().map(|ready| ready.as_ref().err().cloned()).collect();
    for (members, answer) in groups.iter().zip(&answers) {
        for &member in members {
            let (index, ready) = asked[member];
            let reading = answer.reading(ready.metric, &ready.args, &context.user.time_zone);
            let not_before = match reading.is_transient() {
                true => retry_not_before(collector, &jobs[index], (now, ready.deadline), reading.retry_at).await?,
                false => None,
            };
            let period = (ready.period.start.as_second(), ready.period.end.as_second());
            resolutions[index] = Some(Resolution::Answered { answer: Box::new(reading), not_before, period });
        }
    }
    // Every job is either prepared for a call or resolved already.
    Ok(resolutions.into_iter().map(|resolution| resolution.unwrap_or(Resolution::Abandoned)).collect())
}

/// The jobs of `jobs` that are the same (user, site, period key), in the order their first job
/// appears: those whose metrics may share a call.
fn by_period(jobs: Vec<Job>) -> Vec<Vec<Job>> {
    let mut groups: Vec<Vec<Job>> = Vec::new();
    let mut index: HashMap<(i64, i64, String), usize> = HashMap::new();
    for job in jobs {
        let key = (job.user_id, job.site_id, job.period.key.clone());
        match index.get(&key) {
            Some(&at) => groups[at].push(job),
            None => {
                index.insert(key, groups.len());
                groups.push(vec![job]);
            }
        }
    }
    groups
}

/// The context of each (user, site) that jobs belong to.
type Contexts = HashMap<(i64, i64), Result<Arc<LoadedEntry>, Resolution>>;

/// Loads the context of every (user, site) among `jobs`, once each, their vault entries in
/// one query: a pair no longer in a vault (the site was removed, the account deleted) has
/// nothing to do.
async fn contexts(collector: &Collector, jobs: &[Job]) -> Result<Contexts, StoreError> {
    let mut pairs: Vec<(i64, i64)> = jobs.iter().map(|job| (job.user_id, job.site_id)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let mut contexts: Contexts = pairs.iter().map(|pair| (*pair, Err(Resolution::Abandoned))).collect();
    for (user, entry) in collector.store.entries_of(&pairs).await? {
        let pair = (user.id, entry.site.id);
        contexts.insert(pair, load_entry(collector, user, entry).await.map(Arc::new));
    }
    Ok(contexts)
}

/// Does the jobs of one (user, site) in their context, `at_once` calls at a time, or gives them
/// the resolution of all that pair's jobs; each job with what it came to, its period the one
/// asked for.
async fn resolve_in(
    collector: &Collector,
    context: &Result<Arc<LoadedEntry>, Resolution>,
    jobs: Vec<Job>,
    (now, at_once): (Timestamp, usize),
) -> Result<Vec<Done>, StoreError> {
    let resolutions = match context {
        Ok(context) => resolve(collector, context, &jobs, (now, at_once)).await?,
        Err(resolution) => vec![resolution.clone(); jobs.len()],
    };
    Ok(jobs
        .into_iter()
        .zip(resolutions)
        .map(|(mut job, resolution)| {
            // The value and the attempt are written for the period asked for, which is the
            // planned one in another zone when the user's zone changed since.
            if let Resolution::Answered { period: (start, end), .. } = resolution {
                (job.period.start, job.period.end) = (start, end);
            }
            (job, resolution)
        })
        .collect())
}

/// A leased job with what it came to, to commit.
type Done = (Job, Resolution);

/// Commits results in one transaction, each only while its job's fence is still the one it
/// was leased with; `now` is when their attempts are logged.
async fn commit(collector: &Collector, done: &[Done], now: Timestamp) -> Result<Summary, StoreError> {
    let completions: Vec<Completion> = done
        .iter()
        .map(|(job, resolution)| Completion { job, result: resolution.result(), duration_ms: resolution.duration_ms() })
        .collect();
    let committed = collector.store.complete_jobs(&completions, now.as_second()).await?;
    let mut summary = Summary::default();
    for ((completion, committed), (_, resolution)) in completions.iter().zip(committed).zip(done) {
        crate::collect::count_collection(&completion.result, committed);
        match (&completion.result, committed) {
            (_, false) => summary.fenced_out += 1,
            // Not asked: the period has not ended in the user's zone yet.
            _ if matches!(resolution, Resolution::NotDue { .. }) => summary.waiting += 1,
            (CollectionResult::Stored { .. }, true) => summary.stored += 1,
            (CollectionResult::Dropped { .. }, true) => summary.dropped += 1,
            (CollectionResult::Failed { .. } | CollectionResult::Retry { .. }, true) => summary.failed += 1,
            (CollectionResult::Abandoned, true) => {}
        }
    }
    Ok(summary)
}

/// Works leased jobs now: each period's calls in the collector's room for calls, as a worker's
/// are, then every result in one transaction. `now` is the clock of attempts and deadlines.
async fn work_jobs(collector: &Collector, jobs: Vec<Job>, now: Timestamp) -> Result<Summary, StoreError> {
    let contexts = contexts(collector, &jobs).await?;
    let groups = by_period(jobs);
    let periods: Vec<_> = groups
        .into_iter()
        .map(|group| {
            let context = &contexts[&(group[0].user_id, group[0].site_id)];
            async move {
                let room = collector.calls.room_for(group.len()).await;
                let at_once = room.num_permits();
                resolve_in(collector, context, group, (now, at_once)).await
            }
        })
        .collect();
    let resolved = at_most(collector.calls.size(), periods).await;
    let mut done: Vec<Done> = Vec::new();
    for group in resolved {
        done.extend(group?);
    }
    commit(collector, &done, now).await
}

impl Collector {
    /// Collects, for one user's vault site, the latest due period of every metric that is not
    /// settled yet (stored, or ended for good), right now. A new brief or metric thus starts
    /// with the current period; older periods only come from a backfill. Transient failures
    /// are tried again, with backoff and never before a site's `Retry-After`, until
    /// [`DEADLINE`] after the period was due. The slots go through jobs, as with `servio
    /// worker`, so a worker never collects them twice: a slot whose job another worker holds,
    /// or whose backoff has not passed, counts as waiting.
    pub async fn collect_due(&self, user: &User, entry: &VaultEntry, planner: &mut Planner) -> Result<Summary, Error> {
        let span = tracing::info_span!("collect_due", user_id = user.id, site_id = entry.site.id);
        async move {
            let now = planner.now();
            let Some(checked) = self.acting(entry, Wait::Bounded).await? else {
                return Ok(Summary::default());
            };
            let Some(brief) = &checked.brief else { return Ok(Summary::default()) };
            let planned = plan_entry(self, user, entry.site.id, brief, (planner, Asked::ByUser)).await?;
            if planned.is_empty() {
                return Ok(Summary::default());
            }
            enqueue(self, &planned, (now, Asked::ByUser)).await?;
            let lease = JobLease {
                owner: "servio-serve",
                now: now.as_second(),
                lease_until: now.as_second().saturating_add(ON_DEMAND_LEASE),
                limit: i64::try_from(planned.len()).unwrap_or(i64::MAX),
                only: Some((user.id, entry.site.id)),
                after_user: 0,
            };
            let jobs = self.store.lease_jobs(&lease).await?;
            let waiting = planned
                .iter()
                .filter(|p| !jobs.iter().any(|j| j.metric_key == p.metric_key && j.period.key == p.period_key))
                .count();
            let mut summary = work_jobs(self, jobs, now).await?;
            // Those not leased, and those leased whose period has not ended in the zone yet.
            summary.waiting += waiting;
            Ok(summary)
        }
        .instrument(span)
        .await
    }

    /// Plans and works jobs until `stop` turns true (or its sender is gone): a planning task
    /// every `config.plan_every`, and `work` with up to [`Collector::in_flight`] calls at once
    /// (collect-now's included).
    /// Stopped, it leases nothing more, gives calls in flight `config.grace` to end (and cuts
    /// off the rest), commits every result it has, and hands back the jobs it still holds, so
    /// that no job waits for a lease to expire. With `config.drain` it plans once and returns
    /// as soon as no job is due. This is `servio worker`.
    pub async fn run(self, config: WorkerConfig, stop: watch::Receiver<bool>) -> Summary {
        let span = tracing::info_span!("worker", owner = %config.owner);
        run(self, config, stop).instrument(span).await
    }

    /// `servio serve`'s own worker: collects what is due for every user until `stop`, planning
    /// every `tick` and working jobs as they fall due, alongside any `servio worker` sharing
    /// the database; stopped, it stops as [`Collector::run`] does, within `grace`.
    pub async fn run_scheduler(self, tick: Duration, grace: Duration, stop: watch::Receiver<bool>) -> Summary {
        let config = WorkerConfig {
            plan_every: tick,
            idle: Duration::from_secs(5),
            grace,
            ..WorkerConfig::new(crate::process_owner("servio-serve"))
        };
        self.run(config, stop).await
    }
}

/// How long the collection of one vault entry on demand may hold its jobs.
const ON_DEMAND_LEASE: i64 = 300;

/// Plans every vault entry's due slots into jobs, logging a failure (the next round tries
/// again).
async fn plan_logged(collector: &Collector) {
    if let Err(error) = collector.plan_all(Timestamp::now()).await {
        tracing::warn!(error = %servio_client::error_chain(&error), "planning collection failed");
    }
}

/// [`Collector::run`].
async fn run(collector: Collector, config: WorkerConfig, stop: watch::Receiver<bool>) -> Summary {
    let total = Arc::new(Mutex::new(Summary::default()));
    let mut others = tokio::task::JoinSet::new();
    if config.drain {
        // Once, before the first lease, so that draining finds what is due now.
        plan_logged(&collector).await;
    } else {
        let (collector, config, mut stop) = (collector.clone(), config.clone(), stop.clone());
        others.spawn(
            async move {
                while !*stop.borrow() {
                    plan_logged(&collector).await;
                    wait(&mut stop, config.plan_every).await;
                }
            }
            .in_current_span(),
        );
    }
    {
        // Progress, for operators: what this worker committed so far, every ten seconds.
        let (mut stop, total) = (stop.clone(), total.clone());
        others.spawn(
            async move {
                let mut shown = Summary::default();
                while !*stop.borrow() {
                    wait(&mut stop, Duration::from_secs(10)).await;
                    let now = *total.lock().unwrap_or_else(|e| e.into_inner());
                    if now != shown {
                        tracing::info!(
                            stored = now.stored,
                            dropped = now.dropped,
                            failed = now.failed,
                            fenced_out = now.fenced_out,
                            "collected so far"
                        );
                        shown = now;
                    }
                }
            }
            .in_current_span(),
        );
    }
    let owner = config.owner.clone();
    work(collector.clone(), config, stop.clone(), total.clone()).await;
    if *stop.borrow() {
        hand_back(&collector, &owner).await;
    }
    // Stopped, the others end by themselves (planning finishes its round); drained, only
    // the progress report is left, and nothing is lost by ending it.
    if !*stop.borrow() {
        others.abort_all();
    }
    while others.join_next().await.is_some() {}
    *total.lock().unwrap_or_else(|e| e.into_inner())
}

/// Hands back every job `owner` still holds (leased but not called, or cut off), so that
/// another worker leases them now rather than when their leases end.
async fn hand_back(collector: &Collector, owner: &str) {
    match collector.store.release_jobs(owner, Timestamp::now().as_second()).await {
        Ok(0) => {}
        Ok(released) => tracing::info!(released, "handed back the jobs not done"),
        Err(error) => {
            tracing::warn!(error = %servio_client::error_chain(&error), "handing back jobs failed; they wait for their leases")
        }
    }
}

/// The most results committed in one transaction.
const COMMIT_GROUP: usize = 1024;

/// Results a commit waits for, up to [`COMMIT_LINGER`], before it is made.
const COMMIT_AT_LEAST: usize = 128;

/// How long a commit of fewer than [`COMMIT_AT_LEAST`] results waits for more.
const COMMIT_LINGER: Duration = Duration::from_millis(5);

/// How long a leaser with room for fewer jobs than [`enough_room`] waits for more before it
/// leases what it has room for: leases of one job each would cost a query a job.
const LEASE_LINGER: Duration = Duration::from_millis(20);

/// Leased jobs with their contexts and their share of the room for jobs leased ahead, on
/// their way to be called.
struct Leased {
    jobs: Vec<Job>,
    contexts: Contexts,
    held: OwnedSemaphorePermit,
}

/// Leases and works jobs until `stop`, as three tasks joined by queues: [`lease_batches`]
/// leases while calls go on; the calls run up to the collector's `in_flight` at once, the jobs
/// of one (user, site, period) in a task that asks the site once per call they share, as many
/// at once as it holds permits (a permit per job, the whole room at most), and queues their
/// results; [`commit_results`] commits the results in groups while
/// calls go on. So neither a lease nor a durable commit leaves the calls waiting, and one commit
/// flushes for many jobs. A worker holds at most `in_flight` + `batch` jobs leased and not
/// done: the calls in flight and one batch waiting for them, so another user's job due now waits
/// at most `batch / in_flight` rounds of calls behind a leased backlog, then its own (issue 25:
/// with up to three batches of 128 held beside 64 calls of 2 s, another user's values took over
/// 30 s, now 5-6 s; leasing only what could start at once cut throughput by half, with a lease
/// between every round of calls). On `stop` no job is leased and no call started any more (the
/// jobs leased but not called stay held, for [`hand_back`]); calls in flight get
/// `config.grace`, then are cut off; it returns once every result is committed.
async fn work(collector: Collector, config: WorkerConfig, stop: watch::Receiver<bool>, total: Arc<Mutex<Summary>>) {
    let in_flight = collector.calls.size();
    let all = u32::try_from(in_flight).unwrap_or(u32::MAX);
    let grace = config.grace;
    // The collector's room, which collect-now takes its calls' room in too.
    let room = collector.calls.clone();
    let ahead_size = in_flight.saturating_add(config.batch.clamp(1, MAX_IN_FLIGHT));
    let ahead = Arc::new(Semaphore::new(ahead_size));
    let cut = CancellationToken::new();
    // Room for a whole group: results queue while a commit is made, so calls go on meanwhile
    // and the next commit takes them all (with room for only `in_flight`, calls waited and
    // groups averaged 31 jobs; each commit's statement has a cost of its own).
    let (results, received) = mpsc::channel::<Done>(COMMIT_GROUP);
    let committer = tokio::spawn(commit_results(collector.clone(), received, total).in_current_span());
    let (leased, mut batches) = mpsc::channel::<Leased>(1);
    let leaser = lease_batches(collector.clone(), config, stop.clone(), (ahead, ahead_size), leased);
    let leaser = tokio::spawn(leaser.in_current_span());
    let mut stopping = stop.clone();
    'batches: while let Some(Leased { jobs, contexts, mut held }) = batches.recv().await {
        for group in by_period(jobs) {
            // A permit per job, the whole room at most: a group makes no more calls than it has
            // jobs, and no more at once than it has permits.
            let permit = tokio::select! {
                permit = room.room_for(group.len()) => permit,
                () = stopped(&mut stopping) => break 'batches,
            };
            if *stop.borrow() {
                break 'batches;
            }
            // The leaser took a permit for each job (or the whole room, for a period larger
            // than it).
            let Some(ahead) = held.split(group.len().min(held.num_permits())) else { break 'batches };
            let (user_id, site_id) = (group[0].user_id, group[0].site_id);
            let context = contexts[&(user_id, site_id)].clone();
            let task = call(collector.clone(), context, group, (permit, ahead), results.clone(), cut.clone());
            // Its argument validations take the user's turn in the shared check pool.
            tokio::spawn(servio_core::fair::owned_by(Some(user_id), task).in_current_span());
        }
    }
    // Unblocks the leaser if it waits to hand over a batch, and drops that batch.
    drop(batches);
    let _ = leaser.await;
    // A call returns its permit only after its result is queued for the committer (or it was
    // cut off).
    let room = room.permits();
    if *stop.borrow() && tokio::time::timeout(grace, room.acquire_many(all)).await.is_err() {
        tracing::warn!(grace_s = grace.as_secs_f64(), "calls still running after the grace period are cut off");
        cut.cancel();
    }
    let _ = room.acquire_many(all).await;
    drop(results);
    let _ = committer.await;
}

/// Leases up to `config.batch` due jobs at a time into `leased` until `stop`, as many as
/// `ahead` has room for, each turn's users starting after the one its last lease served;
/// waiting `config.idle` (or until this process queues jobs) whenever none is due, or, with
/// `config.drain`, ending then.
async fn lease_batches(
    collector: Collector,
    config: WorkerConfig,
    mut stop: watch::Receiver<bool>,
    (ahead, ahead_size): (Arc<Semaphore>, usize),
    leased: mpsc::Sender<Leased>,
) {
    let want = u32::try_from(config.batch.max(1)).unwrap_or(u32::MAX);
    let mut after_user = 0;
    while !*stop.borrow() {
        let Some(mut held) = room_to_lease(&ahead, want, &mut stop).await else { break };
        match lease_batch(&collector, &config, held.num_permits(), after_user).await {
            Ok((jobs, _)) if jobs.is_empty() && config.drain => break,
            Ok((jobs, _)) if jobs.is_empty() => {
                drop(held);
                collector.wait_for_jobs(&mut stop, config.idle).await;
            }
            Ok((jobs, contexts)) => {
                after_user = servio_store::last_served(after_user, &jobs);
                // A lease takes whole periods, so it may bring a few jobs more than the room
                // it had: their room is taken before their calls, so the jobs held never pass
                // `ahead_size` (the whole room, when one period holds more jobs than that).
                let short = jobs.len().min(ahead_size).saturating_sub(held.num_permits());
                if short > 0 {
                    let more = tokio::select! {
                        Ok(more) = ahead.clone().acquire_many_owned(u32::try_from(short).unwrap_or(u32::MAX)) => more,
                        () = stopped(&mut stop) => break,
                    };
                    held.merge(more);
                }
                if leased.send(Leased { jobs, contexts, held }).await.is_err() {
                    break;
                }
            }
            Err(error) => {
                tracing::warn!(error = %servio_client::error_chain(&error), "leasing jobs failed");
                drop(held);
                wait(&mut stop, config.idle).await;
            }
        }
    }
}

/// The share of a lease's room a leaser waits for, up to [`LEASE_LINGER`], before it leases.
fn enough_room(want: u32) -> usize {
    usize::try_from(want / 4).unwrap_or(usize::MAX).max(1)
}

/// Room for the next lease in `room`: at least one permit, waiting up to [`LEASE_LINGER`]
/// for [`enough_room`], then every permit free up to `want`. `None` once `stop` is true.
async fn room_to_lease(
    room: &Arc<Semaphore>,
    want: u32,
    stop: &mut watch::Receiver<bool>,
) -> Option<OwnedSemaphorePermit> {
    let mut held = tokio::select! {
        // The semaphore is never closed, so this always holds.
        Ok(permit) = room.clone().acquire_owned() => permit,
        () = stopped(stop) => return None,
    };
    let linger = tokio::time::sleep(LEASE_LINGER);
    tokio::pin!(linger);
    while held.num_permits() < enough_room(want) {
        tokio::select! {
            Ok(more) = room.clone().acquire_owned() => held.merge(more),
            () = &mut linger => break,
        }
    }
    let free = usize::try_from(want).unwrap_or(usize::MAX).saturating_sub(held.num_permits());
    let free = u32::try_from(free.min(room.available_permits())).unwrap_or(0);
    if let Ok(more) = room.clone().try_acquire_many_owned(free) {
        held.merge(more);
    }
    Some(held)
}

/// Returns once `stop` is true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// Leases up to `limit` due jobs for `config.owner`, each turn's users from the one after
/// `after_user`, and loads their contexts.
async fn lease_batch(
    collector: &Collector,
    config: &WorkerConfig,
    limit: usize,
    after_user: i64,
) -> Result<(Vec<Job>, Contexts), StoreError> {
    let now = Timestamp::now().as_second();
    let lease = i64::try_from(config.lease.as_secs().max(1)).unwrap_or(i64::MAX);
    let lease = JobLease {
        owner: &config.owner,
        now,
        lease_until: now.saturating_add(lease),
        limit: i64::try_from(limit.max(1)).unwrap_or(i64::MAX),
        only: None,
        after_user,
    };
    let jobs = collector.store.lease_jobs(&lease).await?;
    let contexts = contexts(collector, &jobs).await?;
    tracing::debug!(jobs = jobs.len(), entries = contexts.len(), "leased");
    Ok((jobs, contexts))
}

/// Does the leased jobs of one (user, site, period) and queues their results for the
/// committer, holding `permits` (its calls in flight, its jobs leased) until then; when `cut` is cancelled first, it
/// leaves the jobs held (for [`hand_back`]).
async fn call(
    collector: Collector,
    context: Result<Arc<LoadedEntry>, Resolution>,
    jobs: Vec<Job>,
    permits: (OwnedSemaphorePermit, OwnedSemaphorePermit),
    results: mpsc::Sender<Done>,
    cut: CancellationToken,
) {
    let first = jobs.first().map(|job| job.id);
    let at_once = permits.0.num_permits();
    let resolved = tokio::select! {
        resolved = resolve_in(&collector, &context, jobs, (Timestamp::now(), at_once)) => resolved,
        () = cut.cancelled() => return,
    };
    match resolved {
        Ok(done) => {
            for one in done {
                // The receiver lives until every permit is back, so this is never refused.
                let _ = results.send(one).await;
            }
        }
        // The jobs stay leased; another lease takes them over when their leases end.
        Err(error) => {
            tracing::warn!(job_id = first, error = %servio_client::error_chain(&error), "collection jobs are left to their leases")
        }
    }
    drop(permits);
}

/// Commits results as they arrive, in groups: whatever arrived while one commit was being made
/// goes into the next, so the durable flush is paid once per group, not once per job.
async fn commit_results(collector: Collector, mut received: mpsc::Receiver<Done>, total: Arc<Mutex<Summary>>) {
    let mut group = Vec::with_capacity(COMMIT_GROUP);
    while received.recv_many(&mut group, COMMIT_GROUP).await > 0 {
        // A small group waits a moment for more: each commit's statement costs the database
        // the same again whatever its size.
        let linger = tokio::time::sleep(COMMIT_LINGER);
        tokio::pin!(linger);
        while group.len() < COMMIT_AT_LEAST {
            let room = COMMIT_GROUP - group.len();
            tokio::select! {
                added = received.recv_many(&mut group, room) => if added == 0 { break },
                () = &mut linger => break,
            }
        }
        let done = commit_group(&collector, &group, Timestamp::now()).await;
        total.lock().unwrap_or_else(|e| e.into_inner()).merge(&done);
        collector.committed.notify_waiters();
        group.clear();
    }
}

/// Commits `group` in one transaction or, when the store refuses that, result by result: a
/// group holds the results of many users, and one result the store cannot take must cost only
/// itself (as the call log's writer does). A result that still fails leaves its job leased;
/// another lease takes it over when its lease ends.
async fn commit_group(collector: &Collector, group: &[Done], now: Timestamp) -> Summary {
    let error = match commit(collector, group, now).await {
        Ok(done) => return done,
        Err(error) => error,
    };
    if let [(job, _)] = group {
        tracing::warn!(job_id = job.id, error = %servio_client::error_chain(&error), "committing a result failed");
        return Summary::default();
    }
    tracing::warn!(results = group.len(), error = %servio_client::error_chain(&error), "committing results at once failed; committing them one by one");
    let mut total = Summary::default();
    for one in group {
        match commit(collector, std::slice::from_ref(one), now).await {
            Ok(done) => total.merge(&done),
            Err(error) => {
                tracing::warn!(job_id = one.0.id, error = %servio_client::error_chain(&error), "committing a result failed")
            }
        }
    }
    total
}

impl Collector {
    /// Sleeps for `idle`, or until `stop` changes or this process queues jobs (a site added, a
    /// backfill asked for): an idle worker then leases at once rather than at its next poll.
    /// Jobs queued by other processes wait for the poll.
    async fn wait_for_jobs(&self, stop: &mut watch::Receiver<bool>, idle: Duration) {
        tokio::select! {
            () = tokio::time::sleep(idle) => {}
            () = self.queued.notified() => {}
            _ = stop.changed() => {}
        }
    }
}

/// Sleeps for `duration`, or until `stop` changes (or its sender is gone).
async fn wait(stop: &mut watch::Receiver<bool>, duration: Duration) {
    tokio::select! {
        () = tokio::time::sleep(duration) => {}
        _ = stop.changed() => {}
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use servio_client::{Client, ClientConfig};
    use servio_store::{JobLease, NewJob, Store};

    use super::*;
    use crate::collect::{CollectionOutcome, Reading};
    use servio_core::Credentials;
    use servio_core::credentials::OAuthConfig;
    use servio_core::secrets::Secrets;

    fn collector(store: Arc<dyn Store>) -> Collector {
        let client = Client::new(ClientConfig::default()).unwrap();
        let secrets = Arc::new(Secrets::from_key(&[25; 32]));
        let credentials = Credentials::new(store.clone(), client.clone(), secrets, Arc::new(OAuthConfig::default()));
        Collector::new(store, client, Arc::new(credentials))
    }

    fn stored(value: f64) -> Resolution {
        let answer = Reading {
            outcome: CollectionOutcome::Stored(value),
            raw: Some(value.to_string()),
            retry_at: None,
            duration_ms: Some(1.0),
            source: None,
        };
        Resolution::Answered { answer: Box::new(answer), not_before: None, period: (0, 86_400) }
    }

    /// Issue 41 (budget row of `--in-flight` and `--batch-size`): a lease takes whole periods,
    /// so a lease with room for 3 jobs of periods of 2 brings 4; the leaser takes the fourth's
    /// room before handing the batch over, so the jobs held never pass the room. Before, the
    /// batch held 3 permits for 4 jobs, one job more for each lease.
    #[tokio::test]
    async fn a_lease_of_whole_periods_takes_room_for_each_of_its_jobs() {
        let store: Arc<dyn Store> = Arc::from(servio_store::testing::backends().await.remove(0).1);
        let user = store.create_user("room@example.com", "h", "UTC", 0).await.unwrap();
        let site = servio_store::testing::site(store.as_ref(), "https://room.example").await;
        let dates: Vec<String> = (0..4).map(|day| format!("2026-04-0{}", day + 1)).collect();
        let jobs: Vec<NewJob> = (0..8)
            .map(|n| {
                let slot = servio_store::testing::day_slot(user.id, site, n / 2, &dates[(n / 2) as usize]);
                let metric_key = if n % 2 == 0 { "sales.revenue.daily" } else { "sales.orders.daily" };
                let slot = servio_store::Slot { metric_key, ..slot };
                NewJob { slot, not_before: 0, deadline: i64::MAX, kind: JobKind::Scheduled }
            })
            .collect();
        assert_eq!(store.enqueue_jobs(&jobs, 0).await.unwrap(), 8);
        let config = WorkerConfig { batch: 3, drain: true, ..WorkerConfig::new("room") };
        let (_stop, stopped) = watch::channel(false);
        let ahead = Arc::new(Semaphore::new(6));
        let (leased, mut batches) = mpsc::channel(1);
        let leaser = tokio::spawn(lease_batches(collector(store), config, stopped, (ahead.clone(), 6), leased));
        let first = batches.recv().await.expect("a batch");
        assert_eq!(first.jobs.len(), 4, "two whole periods for a room of three");
        assert_eq!(first.held.num_permits(), 4, "a permit for each job leased");
        drop(batches);
        leaser.await.unwrap();
    }

    /// A group of results that the store refuses as a whole is committed result by result, so
    /// that one result it cannot take costs only itself: before, a NUL from one site held the
    /// other users' results of its group (up to 1,024) leased until their deadline. SQLite
    /// refuses a NaN value (stored as NULL in a NOT NULL column), which no site can send, so
    /// it stands here for any row a store refuses.
    #[tokio::test]
    async fn a_result_the_store_refuses_costs_only_itself() {
        let store: Arc<dyn Store> = Arc::from(servio_store::testing::backends().await.remove(0).1);
        let user = store.create_user("group@example.com", "h", "UTC", 0).await.unwrap();
        let site = servio_store::testing::site(store.as_ref(), "https://group.example").await;
        let dates: Vec<String> = (0..3).map(|day| format!("2026-04-0{}", day + 1)).collect();
        let jobs: Vec<NewJob> = (0..3)
            .map(|day| NewJob {
                slot: servio_store::testing::day_slot(user.id, site, day, &dates[day as usize]),
                not_before: 0,
                deadline: i64::MAX,
                kind: JobKind::Scheduled,
            })
            .collect();
        store.enqueue_jobs(&jobs, 0).await.unwrap();
        let lease = JobLease { owner: "w", now: 1, lease_until: 100, limit: 10, only: None, after_user: 0 };
        let leased = store.lease_jobs(&lease).await.unwrap();
        let group: Vec<Done> = leased
            .into_iter()
            .map(|job| {
                let value = if job.period.start == 86_400 { f64::NAN } else { 5.0 };
                (job, stored(value))
            })
            .collect();
        let collector = collector(store.clone());
        let summary = commit_group(&collector, &group, Timestamp::from_second(2).unwrap()).await;
        assert_eq!(summary.stored, 2, "the two others are stored");
        assert_eq!(store.values(user.id, site, "sales.revenue.daily", 0..i64::MAX).await.unwrap().len(), 2);
    }
}
