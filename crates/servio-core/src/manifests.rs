//! The one place manifests are checked and tool arguments validated on the platform, and the
//! one cache of what checking gave, shared by the collector's jobs, the AI gateway, the vault,
//! the dashboard and refresh.
//!
//! **Off the async threads.** A check of a large or hostile manifest, or the validation of
//! arguments against a hostile schema, takes seconds of CPU. Every check and validation runs on
//! tokio's blocking pool, at most [`CheckConfig::concurrency`] at once, so `/healthz` and other
//! users' requests never wait behind it. **In turn:** the permits go to the users waiting for
//! them one after the other ([`crate::fair`]), so one user's backlog of checks delays another
//! user's by one check per permit at most. A request waits at most
//! [`CheckConfig::wait`] for its turn and is then answered [`Busy`] (the platform's `503` with
//! `Retry-After`) rather than queueing without limit; background collection waits its turn
//! (its own number in flight is bounded by the worker's `--in-flight`).
//!
//! **Once per text.** The report of a stored text never changes (for a given build), so it is
//! kept, keyed by the site's origin (the name lints compare with it) and the whole text: the
//! vault list, the site page, the versions list, the dashboard and refresh never check an
//! already checked text again. Concurrent requests for the same text wait for the one check
//! under way. A text that is not a valid manifest is kept as such too.
//!
//! **Bounded in bytes**: [`CheckConfig::cache_bytes`], each entry weighed by an estimate of
//! what it holds ([`weight`]); past the bound the least used entries go first (`moka`, as the
//! platform's other caches).
//! Nothing needs invalidating: a changed text is another key.
//!
//! **By version, reading no text.** A stored version's text never changes either, so the
//! report is also found by the version's id ([`ManifestCache::version`]), and whether the
//! changes from one version to another wait for approval is kept by the pair of ids
//! ([`ManifestCache::waiting`]): the vault list names versions and reads a text only for a
//! version it has not met (at most [`VERSIONS_KEPT`] ids and pairs are kept).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use servio_manifest::schema::{ArgumentError, ArgumentValidator, UnusableSchema};
use servio_manifest::{Abandon, Brief, CheckOptions, Diagnostic, Manifest, Report, Site};

use crate::approval::Waiting;
use crate::fair::{FairPermits, current_owner};

/// How checks run: how many at once, how long a request waits for its turn, how many bytes of
/// reports are kept.
#[derive(Debug, Clone, Copy)]
pub struct CheckConfig {
    /// Checks and argument validations running at once (each on a thread of the blocking pool).
    pub concurrency: usize,
    /// How long a request waits for a free check before it is answered [`Busy`].
    pub wait: Duration,
    /// The estimated bytes of checked manifests kept.
    pub cache_bytes: u64,
    /// How long one check of a site's text may run before it is abandoned (its report is not
    /// kept, and the text is refused as too costly to check).
    pub budget: Duration,
}

/// The default bound of the cache: 256 MiB.
pub const DEFAULT_CACHE_BYTES: u64 = 256 * 1024 * 1024;

/// The default wait for a free check: 5 seconds.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(5);

/// The default time one check may run: 20 seconds (a valid manifest of 20,000 tools takes a
/// few seconds in a release build).
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(20);

impl Default for CheckConfig {
    fn default() -> CheckConfig {
        CheckConfig {
            concurrency: std::thread::available_parallelism().map_or(2, usize::from),
            wait: DEFAULT_WAIT,
            cache_bytes: DEFAULT_CACHE_BYTES,
            budget: DEFAULT_BUDGET,
        }
    }
}

/// Every check was taken for longer than a request waits, or the check ran past its time and
/// was abandoned: try again after `retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy {
    /// How many checks run at once.
    pub concurrency: usize,
    /// How long the request waited.
    pub waited: Duration,
    /// When to try again.
    pub retry_after: Duration,
    /// The check's time ([`CheckConfig::budget`]), when it ran past it and was abandoned.
    pub abandoned_after: Option<Duration>,
}

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.abandoned_after {
            Some(budget) => write!(
                f,
                "the manifest's check ran past the {} s a check may take and was abandoned; try again in {} s",
                budget.as_secs(),
                self.retry_after.as_secs()
            ),
            None => write!(
                f,
                "the platform is busy checking manifests ({} at once, none free for {} s); try again in {} s",
                self.concurrency,
                self.waited.as_secs(),
                self.retry_after.as_secs()
            ),
        }
    }
}

impl std::error::Error for Busy {}

/// A valid manifest, checked once: typed, with its brief when that is valid, and each tool's
/// argument validator compiled on first use.
pub struct CheckedManifest {
    /// The manifest.
    pub manifest: Manifest,
    /// The brief, when the manifest has a valid one (else there is nothing to collect).
    pub brief: Option<Brief>,
    /// Why the brief is ignored, when it is (each error as `servio check` words it).
    pub brief_errors: Vec<Diagnostic>,
    validators: Vec<std::sync::OnceLock<Result<ArgumentValidator, UnusableSchema>>>,
}

impl std::fmt::Debug for CheckedManifest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedManifest").field("name", &self.manifest.name).finish_non_exhaustive()
    }
}

impl CheckedManifest {
    /// The checked manifest of `report`; `None` when it is not a valid manifest.
    pub fn of(report: &Report) -> Option<CheckedManifest> {
        let manifest = report.manifest.clone()?;
        let validators = manifest.tools.iter().map(|_| std::sync::OnceLock::new()).collect();
        Some(CheckedManifest {
            manifest,
            brief: report.brief.clone(),
            brief_errors: report.brief_errors.clone(),
            validators,
        })
    }

    /// The argument validator of the manifest's tool at `index`, compiled on first use; an
    /// error says why the tool's schema cannot be used. Compiling takes long for a large
    /// schema: call it through [`ManifestCache::validate`], off the async threads.
    ///
    /// # Panics
    /// When `index` is not the index of one of the manifest's tools.
    pub fn validator(&self, index: usize) -> &Result<ArgumentValidator, UnusableSchema> {
        self.validators[index].get_or_init(|| ArgumentValidator::new(&self.manifest.tools[index].input_schema))
    }

    /// The index of the tool named `tool`; `None` when the manifest has no such tool.
    pub fn tool_index(&self, tool: &str) -> Option<usize> {
        self.manifest.tools.iter().position(|t| t.name == tool)
    }
}

/// A stored text as checked: the report `servio check` gives for it, and the checked manifest
/// when it is valid.
pub struct CheckedText {
    /// The whole report (errors, warnings, the brief's verdict).
    pub report: Report,
    /// The manifest ready for use, when the text is a valid one.
    pub checked: Option<Arc<CheckedManifest>>,
    weight: u64,
}

impl std::fmt::Debug for CheckedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedText").field("valid", &self.report.is_valid()).finish_non_exhaustive()
    }
}

/// What an entry of `text_bytes` bytes whose report has `diagnostics` diagnostics is taken to
/// hold, in bytes: the key (the text), the parsed manifest twice (in the report and ready for
/// use, JSON values take several times their text) and each diagnostic with its message.
pub fn weight(text_bytes: usize, diagnostics: usize) -> u64 {
    (text_bytes as u64).saturating_mul(8).saturating_add((diagnostics as u64).saturating_mul(256))
}

/// Whether a request waits a bounded time for a free check, or background work its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// At most [`CheckConfig::wait`], then [`Busy`].
    Bounded,
    /// Until a check is free (background collection, bounded by its own number in flight).
    Turn,
}

/// Gives up the work it stands for when dropped: the caller of
/// [`ManifestCache::run_abandonable`] stopped waiting (or the work is done, when it changes
/// nothing).
struct GiveUpOnDrop(Abandon);

impl Drop for GiveUpOnDrop {
    fn drop(&mut self) {
        self.0.give_up();
    }
}

/// Why the report of a stored version could not be had.
#[derive(Debug)]
pub enum VersionError<E> {
    /// Reading its text failed.
    Load(E),
    /// No free check.
    Busy(Busy),
}

/// Why arguments cannot be sent.
#[derive(Debug)]
pub enum Refusal {
    /// The tool's schema cannot be used.
    Unusable(String),
    /// The arguments do not match it.
    Invalid(Vec<ArgumentError>),
    /// No free check.
    Busy(Busy),
}

/// What a report is kept under: a digest of the origin and the whole text, so that looking a
/// text up copies nothing (a manifest may be megabytes, looked up on every request).
type TextKey = [u8; 32];

fn text_key(origin: &str, text: &str) -> TextKey {
    use sha2::Digest;
    let mut digest = sha2::Sha256::new();
    digest.update(origin.as_bytes());
    digest.update(b"\n");
    digest.update(text.as_bytes());
    digest.finalize().into()
}

/// How many version ids, and pairs of them, are kept with what they stand for (a few dozen
/// bytes each).
pub const VERSIONS_KEPT: u64 = 100_000;

/// Checks and argument validations, off the async threads and bounded in number, and the
/// reports of texts checked before (see the module's documentation for its bounds).
pub struct ManifestCache {
    config: CheckConfig,
    permits: Arc<FairPermits>,
    texts: moka::future::Cache<TextKey, Arc<CheckedText>>,
    /// The key of each stored version's text met so far.
    versions: moka::future::Cache<i64, TextKey>,
    /// Whether the changes from the first version to the second wait for approval.
    verdicts: moka::future::Cache<(i64, i64), Waiting>,
}

impl Default for ManifestCache {
    fn default() -> ManifestCache {
        ManifestCache::new(CheckConfig::default())
    }
}

impl ManifestCache {
    /// A cache running checks as `config` says.
    pub fn new(config: CheckConfig) -> ManifestCache {
        let concurrency = config.concurrency.max(1);
        let texts = moka::future::Cache::builder()
            .max_capacity(config.cache_bytes)
            // A weight is at most 4 GiB here; a manifest is at most a few megabytes.
            .weigher(|_, text: &Arc<CheckedText>| u32::try_from(text.weight).unwrap_or(u32::MAX))
            .build();
        ManifestCache {
            config: CheckConfig { concurrency, ..config },
            permits: FairPermits::new(concurrency),
            texts,
            versions: moka::future::Cache::new(VERSIONS_KEPT),
            verdicts: moka::future::Cache::new(VERSIONS_KEPT),
        }
    }

    /// How checks run.
    pub fn config(&self) -> CheckConfig {
        self.config
    }

    /// Runs `work` on the blocking pool once one of the [`CheckConfig::concurrency`] permits is
    /// free and it is the turn of the user the task works for ([`crate::fair::owned_by`]);
    /// with [`Wait::Bounded`], [`Busy`] when none is within [`CheckConfig::wait`].
    pub async fn run<T: Send + 'static>(
        &self,
        wait: Wait,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Busy> {
        self.run_abandonable(wait, move |_| work()).await
    }

    /// [`ManifestCache::run`] for work that can end early: `work` gets an [`Abandon`] that is
    /// set once it has run for [`CheckConfig::budget`], or as soon as the caller stops waiting
    /// (its request ended): the permit it holds is then free within one step of the work, not
    /// at its end.
    pub async fn run_abandonable<T: Send + 'static>(
        &self,
        wait: Wait,
        work: impl FnOnce(Abandon) -> T + Send + 'static,
    ) -> Result<T, Busy> {
        let turn = self.permits.acquire(current_owner());
        let permit = match wait {
            Wait::Turn => turn.await,
            Wait::Bounded => tokio::time::timeout(self.config.wait, turn).await.map_err(|_| self.busy())?,
        };
        let abandon = Abandon::at(std::time::Instant::now() + self.config.budget);
        let _given_up_when_dropped = GiveUpOnDrop(abandon.clone());
        let done = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work(abandon)
        });
        match done.await {
            Ok(value) => Ok(value),
            Err(error) => match error.try_into_panic() {
                // The work panicked: the caller's task fails the same way.
                Ok(panic) => std::panic::resume_unwind(panic),
                // The runtime is shutting down: nothing will run any more.
                Err(_) => Err(self.busy()),
            },
        }
    }

    fn busy(&self) -> Busy {
        Busy {
            concurrency: self.config.concurrency,
            waited: self.config.wait,
            retry_after: self.config.wait,
            abandoned_after: None,
        }
    }

    /// The report of `text` as served by the site at `origin`, checked now (off the async
    /// threads) unless checked before.
    pub async fn text(&self, origin: &str, text: &str, wait: Wait) -> Result<Arc<CheckedText>, Busy> {
        self.text_under(text_key(origin, text), origin, text, wait).await
    }

    /// [`ManifestCache::text`] with its key worked out already (a digest of megabytes).
    async fn text_under(&self, key: TextKey, origin: &str, text: &str, wait: Wait) -> Result<Arc<CheckedText>, Busy> {
        if let Some(found) = self.texts.get(&key).await {
            return Ok(found);
        }
        let (origin, owned) = (origin.to_owned(), text.to_owned());
        let abandoned = Busy { abandoned_after: Some(self.config.budget), ..self.busy() };
        let check = async move {
            let checked = self.run_abandonable(wait, move |abandon| {
                let options = CheckOptions { site: Site::parse(&origin).ok(), allow: Vec::new(), abandon };
                let report = servio_manifest::check_or_abandon(owned.as_bytes(), &options);
                metrics::counter!("servio_manifest_checks_total").increment(1);
                let report = report.map_err(|_| abandoned)?;
                let diagnostics = report.errors.len() + report.warnings.len() + report.brief_errors.len();
                let checked = CheckedManifest::of(&report).map(Arc::new);
                Ok(Arc::new(CheckedText { report, checked, weight: weight(owned.len(), diagnostics) }))
            });
            checked.await?
        };
        // Those asking for the same text at once wait for this one check; a `Busy` or an
        // abandoned check is not kept (the next request checks again).
        self.texts.try_get_with(key, check).await.map_err(|busy| *busy)
    }

    /// The report of the stored version `version_id` of the site at `origin`, reading its text
    /// with `load` only when the version is met for the first time (or its report was let go):
    /// `None` when `load` finds no such version.
    pub async fn version<E>(
        &self,
        origin: &str,
        version_id: i64,
        wait: Wait,
        load: impl Future<Output = Result<Option<String>, E>>,
    ) -> Result<Option<Arc<CheckedText>>, VersionError<E>> {
        if let Some(key) = self.versions.get(&version_id).await
            && let Some(found) = self.texts.get(&key).await
        {
            return Ok(Some(found));
        }
        let Some(text) = load.await.map_err(VersionError::Load)? else { return Ok(None) };
        let key = text_key(origin, &text);
        let checked = self.text_under(key, origin, &text, wait).await.map_err(VersionError::Busy)?;
        self.versions.insert(version_id, key).await;
        Ok(Some(checked))
    }

    /// Whether the changes from version `approved` to version `latest` wait for approval, and
    /// whether they carry hidden text, as `judge` says the first time the pair is met (the same
    /// two texts always give the same answer).
    pub async fn waiting<E>(
        &self,
        (approved, latest): (i64, i64),
        judge: impl Future<Output = Result<Waiting, E>>,
    ) -> Result<Waiting, E> {
        if let Some(known) = self.verdicts.get(&(approved, latest)).await {
            return Ok(known);
        }
        let verdict = judge.await?;
        self.verdicts.insert((approved, latest), verdict).await;
        Ok(verdict)
    }

    /// The checked manifest of `text` served by `origin`; `None` when it is not a valid one.
    pub async fn get(&self, origin: &str, text: &str, wait: Wait) -> Result<Option<Arc<CheckedManifest>>, Busy> {
        Ok(self.text(origin, text, wait).await?.checked.clone())
    }

    /// Checks `source`, a text nobody stored (a manifest pasted to be tested), without keeping
    /// its report.
    pub async fn check_once(&self, source: Vec<u8>, options: CheckOptions) -> Result<Report, Busy> {
        let abandoned = Busy { abandoned_after: Some(self.config.budget), ..self.busy() };
        self.run_abandonable(Wait::Bounded, move |abandon| {
            metrics::counter!("servio_manifest_checks_total").increment(1);
            servio_manifest::check_or_abandon(&source, &CheckOptions { abandon, ..options }).map_err(|_| abandoned)
        })
        .await?
    }

    /// Validates `args` for the tool at `index` of `checked` (compiling its validator first, on
    /// first use), off the async threads.
    pub async fn validate(
        &self,
        checked: &Arc<CheckedManifest>,
        index: usize,
        args: &Value,
        wait: Wait,
    ) -> Result<(), Refusal> {
        let (checked, args) = (checked.clone(), args.clone());
        let outcome = self
            .run(wait, move || match checked.validator(index) {
                Err(unusable) => Err(Refusal::Unusable(unusable.message.clone())),
                // Arguments too costly to validate are the schema's fault, not the arguments':
                // a permanent refusal with its reason, like a schema that cannot be compiled.
                Ok(validator) => match validator.try_check(&args) {
                    Err(costly) => Err(Refusal::Unusable(costly.message)),
                    Ok(problems) if problems.is_empty() => Ok(()),
                    Ok(problems) => Err(Refusal::Invalid(problems)),
                },
            })
            .await;
        outcome.map_err(Refusal::Busy)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &str = "https://shop.example.com";

    fn manifest(version: &str) -> String {
        serde_json::json!({
            "name": "Shop", "version": version,
            "server": { "url": "https://shop.example.com/api" },
            "auth": { "type": "bearer" },
            "tools": [{ "name": "shop.getSales", "description": "Sales of one day",
                        "input_schema": { "type": "object", "properties": { "day": { "type": "string" } } } }],
            "brief": { "metrics": [{ "key": "sales.revenue.daily", "tool": "shop.getSales", "valuePath": "total" }] }
        })
        .to_string()
    }

    /// Arguments too costly to validate under a recursive schema are the schema's permanent
    /// refusal with its reason (never "invalid arguments" the caller could fix by retrying).
    #[tokio::test]
    async fn arguments_too_costly_to_validate_are_an_unusable_schema() {
        let cache = ManifestCache::default();
        let text = serde_json::json!({
            "name": "Tree", "version": "1.0.0",
            "server": { "url": "https://shop.example.com/api" },
            "auth": { "type": "bearer" },
            "tools": [{ "name": "tree.walkNodes", "description": "Walks a tree of nodes given whole",
                        "input_schema": { "type": "object", "$ref": "#/$defs/node", "$defs": { "node": {
                            "type": "object",
                            "properties": { "children": { "type": "array", "items": { "$ref": "#/$defs/node" } } } } } } }]
        })
        .to_string();
        let checked = cache.get(ORIGIN, &text, Wait::Bounded).await.unwrap().expect("valid");
        let mut deep = serde_json::json!({});
        for _ in 0..16 {
            deep = serde_json::json!({ "children": [deep.clone(), deep] });
        }
        match cache.validate(&checked, 0, &deep, Wait::Bounded).await {
            Err(Refusal::Unusable(reason)) => assert!(reason.contains("schema evaluations"), "{reason}"),
            other => panic!("expected the schema's refusal, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_text_is_checked_once_and_a_new_text_again() {
        let cache = ManifestCache::default();
        let get = |text: String| {
            let cache = &cache;
            async move { cache.get(ORIGIN, &text, Wait::Bounded).await.unwrap() }
        };
        let first = get(manifest("1.0.0")).await.expect("valid");
        assert!(first.brief.is_some());
        assert!(Arc::ptr_eq(&first, &get(manifest("1.0.0")).await.unwrap()), "kept");
        let second = get(manifest("1.0.1")).await.unwrap();
        assert!(!Arc::ptr_eq(&first, &second), "a changed text is checked again");
        assert!(Arc::ptr_eq(&first, &get(manifest("1.0.0")).await.unwrap()), "both versions kept");
        assert!(get("not a manifest".into()).await.is_none());
        let index = first.tool_index("shop.getSales").unwrap();
        assert!(first.tool_index("shop.unknown").is_none());
        let day = serde_json::json!({ "day": "2026-01-01" });
        assert!(cache.validate(&first, index, &day, Wait::Bounded).await.is_ok());
        let wrong = serde_json::json!({ "day": 1 });
        assert!(matches!(cache.validate(&first, index, &wrong, Wait::Bounded).await, Err(Refusal::Invalid(_))));
    }

    #[tokio::test]
    async fn the_cache_is_bounded_in_bytes() {
        let text = manifest("1.0.0");
        let cache =
            ManifestCache::new(CheckConfig { cache_bytes: weight(text.len(), 4) * 3, ..CheckConfig::default() });
        for patch in 0..20 {
            cache.get(ORIGIN, &manifest(&format!("1.0.{patch}")), Wait::Bounded).await.unwrap();
        }
        cache.texts.run_pending_tasks().await;
        let bound = cache.config.cache_bytes;
        assert!(cache.texts.weighted_size() <= bound, "{} of {bound}", cache.texts.weighted_size());
        assert!(cache.texts.entry_count() < 20);
    }

    /// A valid manifest of `tools` tools, each with a schema of its own to check.
    fn many_tools(tools: usize) -> String {
        let tools: Vec<Value> = (0..tools)
            .map(|i| {
                serde_json::json!({ "name": format!("shop.getSales{i}"), "description": "Sales of one day",
                                    "input_schema": { "type": "object", "properties": { "day": { "type": "string" } } } })
            })
            .collect();
        serde_json::json!({ "name": "Shop", "version": "1.0.0", "server": { "url": "https://shop.example.com/api" },
                            "auth": { "type": "bearer" }, "tools": tools })
        .to_string()
    }

    /// Tools enough that a whole check takes over ten seconds in a test build (about 4 s for
    /// 20,000 measured here).
    const MANY: usize = 60_000;

    /// Issue 41, finding 13: a check kept its permit to its end, even once nobody waited for it
    /// (a request gone): with one permit, the next check waited the whole check's time.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_check_nobody_waits_for_is_abandoned_and_frees_its_permit() {
        let cache = Arc::new(ManifestCache::new(CheckConfig { concurrency: 1, ..CheckConfig::default() }));
        let text = many_tools(MANY);
        let checking = tokio::spawn({
            let cache = cache.clone();
            async move { cache.text(ORIGIN, &text, Wait::Turn).await.map(drop) }
        });
        while cache.permits.status().0 != 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        checking.abort();
        let next = tokio::time::timeout(Duration::from_secs(2), cache.run(Wait::Turn, || ())).await;
        assert!(next.is_ok(), "the permit was still held 2 s after its check was given up");
        cache.texts.run_pending_tasks().await;
        assert_eq!(cache.texts.entry_count(), 0, "an abandoned check's report was kept");
    }

    /// Issue 41, design point 4: a check of a site's text runs within a time budget; past it, it
    /// is abandoned, the text refused with the reason, and nothing is kept.
    #[tokio::test]
    async fn a_check_past_its_budget_is_abandoned_and_not_kept() {
        let budget = Duration::from_millis(200);
        let cache = ManifestCache::new(CheckConfig { budget, ..CheckConfig::default() });
        let started = std::time::Instant::now();
        let refused = cache.text(ORIGIN, &many_tools(MANY), Wait::Bounded).await.unwrap_err();
        assert_eq!(refused.abandoned_after, Some(budget));
        assert!(refused.to_string().contains("was abandoned"), "{refused}");
        assert!(started.elapsed() < Duration::from_secs(10), "abandoned after {:?}", started.elapsed());
        cache.texts.run_pending_tasks().await;
        assert_eq!(cache.texts.entry_count(), 0);
        // A text within the budget is checked and kept as before.
        assert!(cache.get(ORIGIN, &manifest("1.0.0"), Wait::Bounded).await.unwrap().is_some());
    }

    /// Regression: checks ran on the async threads without a bound; a request now waits a
    /// bounded time for a free one and is told the platform is busy.
    #[tokio::test]
    async fn a_request_waits_a_bounded_time_for_a_free_check() {
        let wait = Duration::from_millis(50);
        let cache = Arc::new(ManifestCache::new(CheckConfig { concurrency: 1, wait, ..CheckConfig::default() }));
        let (hold, held) = std::sync::mpsc::channel::<()>();
        let holder = cache.clone();
        let blocked = tokio::spawn(async move { holder.run(Wait::Bounded, move || held.recv()).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let busy = cache.get(ORIGIN, &manifest("1.0.0"), Wait::Bounded).await.unwrap_err();
        assert_eq!(busy.retry_after, wait);
        hold.send(()).unwrap();
        blocked.await.unwrap().unwrap().unwrap();
        assert!(cache.get(ORIGIN, &manifest("1.0.0"), Wait::Bounded).await.unwrap().is_some());
    }

    /// Issue 41, design point 3: a user with a backlog of checks (a hostile manifest tested
    /// over and over) delays another user's one check by one turn, not by the backlog.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn checks_are_served_to_users_in_turn() {
        let cache = Arc::new(ManifestCache::new(CheckConfig { concurrency: 1, ..CheckConfig::default() }));
        // The one permit is held until every check below waits for it, in the order sent.
        let (release, held) = std::sync::mpsc::channel::<()>();
        let holder = tokio::spawn({
            let cache = cache.clone();
            async move { cache.run(Wait::Turn, move || held.recv()).await }
        });
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (user, count) in [(1, 8), (2, 1)] {
            for _ in 0..count {
                let (asking, order) = (cache.clone(), order.clone());
                let waiting = cache.permits.status().1;
                tasks.push(tokio::spawn(crate::fair::owned_by(Some(user), async move {
                    asking.run(Wait::Turn, move || order.lock().unwrap().push(user)).await
                })));
                while cache.permits.status().1 == waiting {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }
        release.send(()).unwrap();
        holder.await.unwrap().unwrap().unwrap();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        let order = order.lock().unwrap().clone();
        let place = order.iter().position(|user| *user == 2).unwrap();
        assert!(place <= 1, "user 2's check ran at place {place} of {order:?}");
    }
}
