//! The AI gateway: every approved tool of every site in a user's vault under its prefixed name
//! (interpretation §4), and calls by that name with the user's credential.
//!
//! The MCP endpoint ([`crate::mcp`]), `servio mcp` and the HTTP API (`/api/tools`) all go
//! through [`catalogue`] and [`call`]. Checked manifests and compiled argument validators come
//! from the collector's [`servio_collector::ManifestCache`] (by site and manifest text), so a
//! call costs no parse and no schema compilation; each
//! user's catalogue and log setting are kept for [`CONTEXT_TTL`] (dropped at once when this
//! process changes them, so only another process's change can take that long to show), at most
//! `--catalogue-cache-bytes` of them together (a catalogue of 1,000 tools weighs megabytes: a
//! bound by count bounded nothing); the call log is written by a background task in batches, so a call never waits for a commit.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use servio_client::CallError;
use servio_collector::credentials::{Renewal, Retried};
use servio_collector::manifests::{CheckedManifest, Refusal, Wait};
use servio_manifest::Site;
use servio_manifest::schema::ArgumentError;
use servio_store::{Store, ToolCall, User, VaultEntry};
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::AppState;
use crate::cache::{Counted, Weight, json_weight};
use crate::error::ApiError;

/// How many bytes the kept catalogues may weigh unless told (`--catalogue-cache-bytes`).
pub const DEFAULT_CATALOGUE_BYTES: u64 = 64 << 20;

/// How long a user's catalogue and log setting are reused without asking the store.
pub const CONTEXT_TTL: Duration = Duration::from_secs(2);

/// How many call-log entries the writer commits in one transaction at most.
const LOG_BATCH: usize = 256;

/// How long the call-log writer gathers calls after the first before it commits them: calls
/// that come one at a time then share a commit (on SQLite, an `fsync`) instead of paying one
/// each, which was a fifth of a gateway call's overhead (BENCHMARKS.md). A flush does not wait.
const LOG_LINGER: Duration = Duration::from_millis(50);

/// The gateway's shared state: each user's catalogue, the call-log writer and change notices.
pub struct Gateway {
    contexts: Counted<i64, UserContext>,
    log: OnceLock<mpsc::UnboundedSender<LogEntry>>,
    changes: broadcast::Sender<Change>,
    /// Where changes are announced to the other processes sharing the database.
    announcer: OnceLock<Arc<dyn Store>>,
    /// The notices to announce, in the order the changes were made, to the one task that
    /// sends them (started with the first): sent from a task each, a revocation could reach
    /// the other processes after a change made after it, and a stream opened with the revoked
    /// token would hear that change.
    notices: OnceLock<mpsc::UnboundedSender<Vec<String>>>,
    /// This gateway's name in its notices, so that it knows its own when it hears them.
    id: String,
    /// Told of every change, from this process or another (the dashboard's cache).
    hooks: std::sync::RwLock<Vec<ChangeHook>>,
}

/// Told of each change (`None`: changes may have gone unheard).
type ChangeHook = Box<dyn Fn(Option<Change>) + Send + Sync>;

impl Default for Gateway {
    fn default() -> Gateway {
        Gateway::new(DEFAULT_CATALOGUE_BYTES)
    }
}

impl Gateway {
    /// A gateway keeping at most `catalogue_bytes` of catalogues.
    pub fn new(catalogue_bytes: u64) -> Gateway {
        Gateway {
            contexts: Counted::new("catalogue", catalogue_bytes, CONTEXT_TTL),
            log: OnceLock::new(),
            changes: broadcast::channel(256).0,
            announcer: OnceLock::new(),
            notices: OnceLock::new(),
            id: servio_collector::process_owner("gateway"),
            hooks: std::sync::RwLock::default(),
        }
    }
}

/// A change of a user's gateway state, as the processes sharing a database tell each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The user's catalogue changed: drop what is kept, and tell their MCP clients.
    Catalogue(i64),
    /// The user's credentials or log setting changed: drop what is kept.
    Context(i64),
    /// The user has new values (the dashboard).
    Values(i64),
    /// Some of the user's API tokens were revoked: MCP streams opened with one of them end.
    Access(i64),
}

/// The longest notice sent: PostgreSQL takes up to 8,000 bytes.
const NOTICE_LIMIT: usize = 7000;

impl Change {
    /// Whose change it is.
    pub fn user_id(self) -> i64 {
        let (Change::Catalogue(user_id) | Change::Context(user_id) | Change::Values(user_id) | Change::Access(user_id)) =
            self;
        user_id
    }

    fn word(self) -> &'static str {
        match self {
            Change::Catalogue(_) => "catalogue",
            Change::Context(_) => "context",
            Change::Values(_) => "values",
            Change::Access(_) => "access",
        }
    }

    /// The notice's text: `SENDER catalogue|context|values USER_ID`.
    fn announcement(self, sender: &str) -> String {
        format!("{sender} {} {}", self.word(), self.user_id())
    }

    /// The changes a notice tells of (`values` may name several users, comma-separated),
    /// unless `own` sent it; none for text that is no notice.
    fn heard(text: &str, own: &str) -> Vec<Change> {
        let mut words = text.split(' ');
        let (Some(sender), Some(word), Some(users), None) = (words.next(), words.next(), words.next(), words.next())
        else {
            return Vec::new();
        };
        if sender == own {
            return Vec::new();
        }
        let change: fn(i64) -> Change = match word {
            "catalogue" => Change::Catalogue,
            "context" => Change::Context,
            "values" => Change::Values,
            "access" => Change::Access,
            _ => return Vec::new(),
        };
        users.split(',').filter_map(|id| id.parse().ok()).map(change).collect()
    }
}

/// The notices telling that `users` had a change of `word` (`catalogue`, `values`):
/// `SENDER WORD ID,ID,…`, as few as fit.
fn batched_notices(sender: &str, word: &str, users: &[i64]) -> Vec<String> {
    let mut notices = Vec::new();
    let mut notice = String::new();
    for user_id in users {
        if notice.len() > NOTICE_LIMIT {
            notices.push(std::mem::take(&mut notice));
        }
        notice.push_str(&if notice.is_empty() { format!("{sender} {word} {user_id}") } else { format!(",{user_id}") });
    }
    notices.extend((!notice.is_empty()).then_some(notice));
    notices
}

/// The notice that `user_id`'s credentials changed, from a process without a gateway (a
/// worker that renewed an OAuth token), so that the gateways drop what they keep of them.
pub fn context_notice(user_id: i64) -> Vec<String> {
    vec![Change::Context(user_id).announcement("worker")]
}

/// The notices that `users` have new values, from a process without a gateway (a worker), so
/// that the platform's processes drop the dashboards they keep of them.
pub fn new_values_notices(users: &[i64]) -> Vec<String> {
    batched_notices("worker", "values", users)
}

/// Sends `notices` to the other processes sharing `store`, in the background and in order. A
/// notice that fails is logged: the others see the change when what they keep expires.
pub fn announce(store: Arc<dyn Store>, notices: Vec<String>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async move { announce_now(store.as_ref(), notices).await });
}

/// Sends `notices` through `store`, in order, logging those that fail.
async fn announce_now(store: &dyn Store, notices: Vec<String>) {
    for notice in notices {
        if let Err(error) = store.announce(&notice).await {
            tracing::warn!(%error, notice, "announcing a change to the other processes failed");
        }
    }
}

impl Gateway {
    /// Tells connected MCP clients of `user_id` that their catalogue changed, here and in the
    /// other processes sharing the database.
    pub fn catalogue_changed(&self, user_id: i64) {
        self.changed(Change::Catalogue(user_id));
    }

    /// Tells the MCP streams of `user_id`, here and in the other processes, that some of the
    /// user's API tokens were revoked: a stream opened with one of them ends.
    pub fn access_revoked(&self, user_id: i64) {
        self.changed(Change::Access(user_id));
    }

    /// Drops what is kept of `user_id` (after a change of their credentials or log setting),
    /// here and in the other processes sharing the database.
    pub fn forget(&self, user_id: i64) {
        self.changed(Change::Context(user_id));
    }

    /// [`Gateway::catalogue_changed`] for many users at once, in as few notices as fit.
    pub fn catalogues_changed(&self, users: &[i64]) {
        self.all_changed(Change::Catalogue, users);
    }

    /// Tells the dashboards of `users` that they have new values, here and in the other
    /// processes sharing the database.
    pub fn values_changed(&self, users: &[i64]) {
        self.all_changed(Change::Values, users);
    }

    /// Applies `change` here and announces it to the other processes.
    fn changed(&self, change: Change) {
        self.apply(change);
        self.announce(change);
    }

    /// Applies the change `of` each of `users` here, and announces them in as few notices as fit.
    fn all_changed(&self, of: fn(i64) -> Change, users: &[i64]) {
        let Some(word) = users.first().map(|first| of(*first).word()) else { return };
        for user_id in users {
            self.apply(of(*user_id));
        }
        self.send(batched_notices(&self.id, word, users));
    }

    /// Calls `hook` with every change, made here or heard from another process, and with
    /// `None` when changes may have gone unheard (anything may have changed).
    pub fn on_change(&self, hook: impl Fn(Option<Change>) + Send + Sync + 'static) {
        self.hooks.write().unwrap_or_else(|poisoned| poisoned.into_inner()).push(Box::new(hook));
    }

    /// Announces changes through `store` from now on (once; later calls change nothing).
    pub fn announce_through(&self, store: Arc<dyn Store>) {
        let _ = self.announcer.set(store);
    }

    /// Applies what another process announced (`text`), or, when notices may have been
    /// missed, drops everything kept.
    pub fn heard(&self, heard: &servio_store::Heard) {
        match heard {
            servio_store::Heard::Change(text) => {
                for change in Change::heard(text, &self.id) {
                    self.apply(change);
                }
            }
            servio_store::Heard::Missed => {
                self.contexts.clear();
                self.tell_hooks(None);
            }
        }
    }

    fn apply(&self, change: Change) {
        if !matches!(change, Change::Values(_)) {
            self.contexts.remove(&change.user_id());
        }
        // The hooks first: a stream told that a token was revoked asks the token cache at
        // once, and must not find the token still kept there.
        self.tell_hooks(Some(change));
        if let Change::Catalogue(_) | Change::Access(_) | Change::Values(_) = change {
            // No receiver just means no MCP client is connected here.
            let _ = self.changes.send(change);
        }
    }

    /// Tells the hooks of `change`, or with `None` that changes may have gone unheard.
    fn tell_hooks(&self, change: Option<Change>) {
        let hooks = self.hooks.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        for hook in hooks.iter() {
            hook(change);
        }
    }

    fn announce(&self, change: Change) {
        self.send(vec![change.announcement(&self.id)]);
    }

    fn send(&self, notices: Vec<String>) {
        let Some(store) = self.announcer.get() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let queue = self.notices.get_or_init(|| {
            let (queue, mut waiting) = mpsc::unbounded_channel::<Vec<String>>();
            let store = store.clone();
            runtime.spawn(async move {
                while let Some(notices) = waiting.recv().await {
                    announce_now(store.as_ref(), notices).await;
                }
            });
            queue
        });
        // Fails only once the runtime that ran the task is gone.
        let _ = queue.send(notices);
    }

    fn kept(&self, user_id: i64) -> Option<Arc<UserContext>> {
        self.contexts.get(&user_id)
    }

    fn keep(&self, user_id: i64, context: Arc<UserContext>) {
        self.contexts.insert(user_id, context);
    }

    /// The bytes of catalogues kept now.
    pub fn catalogue_bytes(&self) -> u64 {
        self.contexts.bytes()
    }

    /// Notices of changed catalogues and revoked access, for MCP streams.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    fn log(&self, store: &Arc<dyn Store>, call: ToolCall) {
        let sender = self.log.get_or_init(|| start_log_writer(store.clone()));
        if sender.send(LogEntry::Call(call)).is_err() {
            tracing::error!("the tool-call log writer has stopped; a call went unlogged");
        }
    }

    /// Returns once every call logged before it is written (or its loss logged): for a
    /// graceful stop, after the last request has been answered.
    pub async fn flush(&self) {
        let Some(sender) = self.log.get() else { return };
        let (done, written) = oneshot::channel();
        if sender.send(LogEntry::Flush(done)).is_ok() {
            let _ = written.await;
        }
    }
}

/// What the call-log writer is sent.
enum LogEntry {
    /// A call to write.
    Call(ToolCall),
    /// Answer once everything sent before is written.
    Flush(oneshot::Sender<()>),
}

/// Applies what the other processes sharing the database announce, until the store stops
/// listening; returns at once where there are no others (SQLite).
pub async fn hear_other_processes(state: AppState) {
    let mut heard = match state.store.changes().await {
        Ok(Some(heard)) => heard,
        Ok(None) => return,
        Err(error) => {
            tracing::error!(%error, "listening to the other processes failed; their changes show within seconds");
            return;
        }
    };
    while let Some(next) = heard.recv().await {
        state.gateway.heard(&next);
    }
}

/// Writes logged calls in batches until every sender is gone.
fn start_log_writer(store: Arc<dyn Store>) -> mpsc::UnboundedSender<LogEntry> {
    let (sender, mut receiver) = mpsc::unbounded_channel::<LogEntry>();
    tokio::spawn(async move {
        let mut received = Vec::with_capacity(LOG_BATCH);
        let mut batch = Vec::with_capacity(LOG_BATCH);
        while receiver.recv_many(&mut received, LOG_BATCH).await > 0 {
            let deadline = tokio::time::Instant::now() + LOG_LINGER;
            while received.len() < LOG_BATCH && !received.iter().any(|entry| matches!(entry, LogEntry::Flush(_))) {
                let room = LOG_BATCH - received.len();
                match tokio::time::timeout_at(deadline, receiver.recv_many(&mut received, room)).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            let mut flushed = Vec::new();
            for entry in received.drain(..) {
                match entry {
                    LogEntry::Call(call) => batch.push(call),
                    LogEntry::Flush(done) => flushed.push(done),
                }
            }
            if !batch.is_empty() {
                write_log(store.as_ref(), &batch).await;
                batch.clear();
            }
            for done in flushed {
                let _ = done.send(());
            }
        }
    });
    sender
}

/// Writes `batch` in one transaction or, when the store refuses that, row by row: a batch holds
/// the calls of many users, and one row the store cannot take must cost only itself.
async fn write_log(store: &dyn Store, batch: &[ToolCall]) {
    let Err(error) = store.log_tool_calls(batch).await else { return };
    if let [call] = batch {
        return lost(call, &error);
    }
    tracing::warn!(entries = batch.len(), %error, "writing tool-call log entries at once failed; writing them one by one");
    for call in batch {
        if let Err(error) = store.log_tool_calls(std::slice::from_ref(call)).await {
            lost(call, &error);
        }
    }
}

/// Says which log entry was lost and why; the arguments are left out, as they may hold secrets.
fn lost(call: &ToolCall, error: &servio_store::StoreError) {
    tracing::error!(user_id = call.user_id, tool = %call.tool, %error, "a tool-call log entry was lost");
}

/// One tool of a user's catalogue.
#[derive(Debug, Clone)]
pub struct CatalogueTool {
    /// The prefixed name, unique among the user's tools.
    pub name: String,
    /// The site's id in the vault.
    pub site_id: i64,
    /// The site's origin.
    pub origin: String,
    /// The tool's name in its manifest.
    pub tool: String,
    /// What it does.
    pub description: String,
    /// Its arguments' schema.
    pub input_schema: Value,
}

/// Every approved tool of a user's vault, under prefixed names.
pub struct Catalogue {
    tools: Vec<CatalogueTool>,
    places: Vec<(usize, usize)>,
    sites: Vec<(VaultEntry, Arc<CheckedManifest>)>,
}

impl Catalogue {
    /// The tools, in vault order, then manifest order.
    pub fn tools(&self) -> &[CatalogueTool] {
        &self.tools
    }

    /// The vault's sites, each with the checked manifest acting for the user (the one they
    /// approved), in vault order.
    pub fn sites(&self) -> &[(VaultEntry, Arc<CheckedManifest>)] {
        &self.sites
    }

    fn find(&self, name: &str) -> Option<(&CatalogueTool, &VaultEntry, &Arc<CheckedManifest>, usize)> {
        let at = self.tools.iter().position(|tool| tool.name == name)?;
        let (site, tool) = self.places[at];
        let (entry, parsed) = &self.sites[site];
        Some((&self.tools[at], entry, parsed, tool))
    }
}

/// What a call needs of its user besides the token: the catalogue and the log setting.
struct UserContext {
    catalogue: Arc<Catalogue>,
    log_arguments: bool,
}

/// A tool's or a site's cost besides its text: the struct, its strings' headers, the map nodes.
const ITEM_OVERHEAD: usize = 256;

impl Weight for UserContext {
    /// The tools (names, descriptions, schemas: each a copy of the manifest's) and the vault
    /// entries (each holding its manifest texts); the checked manifests are shared with the
    /// manifest cache and are not counted here.
    fn weight(&self) -> usize {
        let catalogue = &self.catalogue;
        let tools: usize = catalogue
            .tools
            .iter()
            .map(|tool| {
                let text = tool.name.len() + tool.origin.len() + tool.tool.len() + tool.description.len();
                ITEM_OVERHEAD + text + json_weight(&tool.input_schema)
            })
            .sum();
        let sites: usize = catalogue
            .sites
            .iter()
            .map(|(entry, _)| {
                let site = &entry.site;
                let texts = [&site.manifest, &site.origin, &site.manifest_url];
                let text: usize = texts.iter().map(|text| text.len()).sum();
                let own = entry.approved_manifest.as_ref().map_or(0, String::len);
                ITEM_OVERHEAD + text + own + entry.credential.as_ref().map_or(0, Vec::len)
            })
            .sum();
        ITEM_OVERHEAD + tools + sites + catalogue.places.len() * 16
    }
}

async fn context(state: &AppState, user: &User) -> Result<Arc<UserContext>, ApiError> {
    if let Some(kept) = state.gateway.kept(user.id) {
        return Ok(kept);
    }
    let catalogue = Arc::new(read_catalogue(state, user).await?);
    let log_arguments = state.store.log_arguments(user.id).await?;
    let context = Arc::new(UserContext { catalogue, log_arguments });
    state.gateway.keep(user.id, context.clone());
    Ok(context)
}

/// The catalogue of `user`: the tools of the manifest each site was approved with (changed
/// tools stay held back until the user approves them).
/// Refused with [`ApiError::ChecksBusy`] when its manifests cannot be checked now.
pub async fn catalogue(state: &AppState, user: &User) -> Result<Arc<Catalogue>, ApiError> {
    Ok(context(state, user).await?.catalogue.clone())
}

async fn read_catalogue(state: &AppState, user: &User) -> Result<Catalogue, ApiError> {
    let entries = state.store.vault_entries(user.id).await?;
    let mut sites = Vec::with_capacity(entries.len());
    for entry in entries {
        match state.collector.acting(&entry, Wait::Bounded).await? {
            Some(parsed) => sites.push((entry, parsed)),
            None => tracing::warn!(site = %entry.site.origin, "the approved manifest no longer parses"),
        }
    }
    let addresses: Vec<Option<Site>> = sites.iter().map(|(entry, _)| Site::parse(&entry.site.origin).ok()).collect();
    // A tool the site removed goes at once, even while its other changes wait for approval.
    let mut latest: Vec<Option<Arc<CheckedManifest>>> = Vec::with_capacity(sites.len());
    for (entry, _) in &sites {
        latest.push(state.collector.manifests().get(&entry.site.origin, &entry.site.manifest, Wait::Bounded).await?);
    }
    let mut pairs = Vec::new();
    let mut places = Vec::new();
    for (index, (address, (_, parsed))) in addresses.iter().zip(&sites).enumerate() {
        let Some(address) = address else { continue };
        let latest = latest[index].as_deref().map(|checked| &checked.manifest);
        for (tool_index, tool) in parsed.manifest.tools.iter().enumerate() {
            if !crate::approval::still_offered(latest, &tool.name) {
                continue;
            }
            pairs.push((address, tool.name.as_str()));
            places.push((index, tool_index));
        }
    }
    // The platform's own tool keeps its name; a site tool named like it takes the suffix (§4).
    let names = servio_manifest::address::assign_names_beside(&pairs, &[crate::figures::TOOL_NAME]);
    let tools = names
        .into_iter()
        .zip(&places)
        .map(|(name, &(site, tool))| {
            let (entry, parsed) = &sites[site];
            let tool = &parsed.manifest.tools[tool];
            CatalogueTool {
                name,
                site_id: entry.site.id,
                origin: entry.site.origin.clone(),
                tool: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: tool.input_schema.clone(),
            }
        })
        .collect();
    Ok(Catalogue { tools, places, sites })
}

/// Why a call through the gateway failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// No tool of that name in the user's catalogue.
    UnknownTool(String),
    /// The name is not text the call log can keep (it holds a NUL); says what it must be.
    InvalidName(&'static str),
    /// The arguments do not match the tool's schema; nothing was sent.
    InvalidArguments(Vec<ArgumentError>),
    /// The site could not be reached (DNS, connect, TLS, timeout).
    SiteUnreachable(String),
    /// The site refused the user's credential, even after a refresh where one was possible.
    Unauthorized(String),
    /// The site answered with an error status.
    SiteError {
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The site's answer is not JSON.
    NotJson(String),
    /// The tool's `input_schema` cannot be used to check arguments (a remote `$ref`, say): the
    /// site's mistake, which no retry mends; says why.
    UnusableSchema(String),
    /// No manifest check or argument validation was free for as long as a call waits: try
    /// again after its `retry_after`.
    Busy(servio_collector::Busy),
    /// The platform failed (details logged).
    Internal(String),
}

impl Failure {
    /// The status word of the call log.
    pub fn status(&self) -> &'static str {
        match self {
            Failure::UnknownTool(_) => "unknown_tool",
            Failure::InvalidName(_) => "invalid_name",
            Failure::InvalidArguments(_) => "invalid_arguments",
            Failure::SiteUnreachable(_) => "site_unreachable",
            Failure::Unauthorized(_) => "unauthorized",
            Failure::SiteError { .. } => "site_error",
            Failure::NotJson(_) => "not_json",
            Failure::UnusableSchema(_) => "unusable_schema",
            Failure::Busy(_) => "busy",
            Failure::Internal(_) => "internal",
        }
    }
}

impl Failure {
    /// The failure as data for a client: `error` (the status word), `message`, and for invalid
    /// arguments each offending `path` with its message, for a site's error its `site_status`.
    pub fn details(&self) -> Value {
        let mut details = serde_json::json!({ "status": self.status(), "error": self.to_string() });
        match self {
            Failure::InvalidArguments(problems) => {
                details["problems"] = problems
                    .iter()
                    .map(|p| serde_json::json!({ "path": p.pointer.as_str(), "message": p.message }))
                    .collect::<Vec<_>>()
                    .into();
            }
            Failure::SiteError { status, .. } => details["site_status"] = serde_json::json!(status),
            _ => {}
        }
        details
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::UnknownTool(name) => {
                write!(f, "no tool named {name:?} in your vault; list the tools to see their names")
            }
            Failure::InvalidName(expected) => write!(f, "a tool name must be {expected}"),
            Failure::InvalidArguments(problems) => servio_client::call::write_invalid_arguments(f, problems),
            Failure::SiteUnreachable(detail) => write!(f, "the site cannot be reached: {detail}"),
            Failure::Unauthorized(detail) => f.write_str(detail),
            Failure::SiteError { status, body } => write!(f, "the site answered {status}: {body}"),
            Failure::NotJson(detail) => write!(f, "the site's answer is not JSON: {detail}"),
            Failure::UnusableSchema(reason) => {
                write!(
                    f,
                    "the tool's input_schema cannot be used, so it cannot be called until the site fixes it: {reason}"
                )
            }
            Failure::Busy(busy) => write!(f, "{busy}"),
            Failure::Internal(_) => f.write_str("the platform failed to make the call; try again"),
        }
    }
}

/// Calls the tool `name` of `user`'s catalogue with `args`, and logs the call.
///
/// A name the log could not keep is refused first and not logged: queued, it would fail the
/// log's batch on PostgreSQL.
/// `caller` is the user and the API token they call with (`None`: a browser session).
pub async fn call(state: &AppState, caller: (&User, Option<i64>), name: &str, args: &Value) -> Result<Value, Failure> {
    let (user, token_id) = caller;
    crate::text::check_text(name).map_err(Failure::InvalidName)?;
    // A name no catalogue holds can be as long as the request: it is logged, shown and echoed
    // cut to a bound, with its length, so its size decides nothing the platform keeps.
    let bounded_name = servio_store::clipped(name, servio_store::LOGGED_TOOL_NAME_BYTES);
    let started = Instant::now();
    let called_at = crate::now();
    let (site_id, keep_arguments, result) = match context(state, user).await {
        Ok(context) => match context.catalogue.find(name) {
            Some((tool, entry, parsed, index)) => {
                let result = call_found(state, user, entry, parsed, index, args).await;
                (Some(tool.site_id), context.log_arguments, result)
            }
            None => (None, context.log_arguments, Err(Failure::UnknownTool(bounded_name.clone().into_owned()))),
        },
        Err(ApiError::ChecksBusy(busy)) => (None, false, Err(Failure::Busy(busy))),
        Err(error) => (None, false, Err(Failure::Internal(error.to_string()))),
    };
    if let Err(Failure::Internal(detail)) = &result {
        tracing::error!(user_id = user.id, tool = %bounded_name, %detail, "a gateway call failed");
    }
    let status = result.as_ref().map_or_else(Failure::status, |_| "ok");
    metrics::counter!("servio_gateway_calls_total", "outcome" => status).increment(1);
    state.gateway.log(
        &state.store,
        ToolCall {
            id: 0,
            user_id: user.id,
            site_id,
            tool: bounded_name.into_owned(),
            called_at,
            status: status.to_owned(),
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            // Bounded here too, not only by the store: the log's queue holds calls until written.
            arguments: keep_arguments.then(|| servio_store::logged_arguments(&args.to_string()).into_owned()),
            token_id,
            token_name: None,
            kind: "tool".to_owned(),
            detail: result.as_ref().err().map(|failure| logged_detail(&failure.to_string())),
        },
    );
    result
}

/// A worded status as the log keeps it: bounded here, since the log's queue holds it until
/// written.
fn logged_detail(detail: &str) -> String {
    servio_store::clipped(detail, servio_store::LOGGED_DETAIL_BYTES).into_owned()
}

/// What the platform answered itself, for the call log: a metrics query, a resource read or
/// a prompt (`kind`), `what` (the tool's or prompt's name, the resource's address), its status
/// word and, when it failed, why.
pub struct Asked<'a> {
    /// `metrics`, `resource` or `prompt`.
    pub kind: &'static str,
    /// What was asked for.
    pub what: &'a str,
    /// `ok`, or the failure's status word.
    pub status: &'static str,
    /// Why it failed.
    pub detail: Option<String>,
    /// When it started, and how long it took.
    pub started: (i64, Instant),
}

/// Logs what the platform answered itself for `caller` (see [`Asked`]); arguments are not kept.
pub fn log_asked(state: &AppState, caller: (&User, Option<i64>), asked: Asked<'_>) {
    let (user, token_id) = caller;
    state.gateway.log(
        &state.store,
        ToolCall {
            id: 0,
            user_id: user.id,
            site_id: None,
            tool: servio_store::clipped(asked.what, servio_store::LOGGED_TOOL_NAME_BYTES).into_owned(),
            called_at: asked.started.0,
            status: asked.status.to_owned(),
            duration_ms: asked.started.1.elapsed().as_secs_f64() * 1000.0,
            arguments: None,
            token_id,
            token_name: None,
            kind: asked.kind.to_owned(),
            detail: asked.detail.as_deref().map(logged_detail),
        },
    );
}

async fn call_found(
    state: &AppState,
    user: &User,
    entry: &VaultEntry,
    parsed: &Arc<CheckedManifest>,
    index: usize,
    args: &Value,
) -> Result<Value, Failure> {
    // Compiling a schema and validating against it take long for a hostile schema: off the
    // async threads, a bounded number at once.
    match state.collector.manifests().validate(parsed, index, args, Wait::Bounded).await {
        Ok(()) => {}
        Err(Refusal::Unusable(reason)) => return Err(Failure::UnusableSchema(reason)),
        Err(Refusal::Invalid(problems)) => return Err(Failure::InvalidArguments(problems)),
        Err(Refusal::Busy(busy)) => return Err(Failure::Busy(busy)),
    }
    let manifest = &parsed.manifest;
    let tool = &manifest.tools[index].name;
    let sealed = entry.credential.as_deref();
    let credentials = state.credentials();
    let token = credentials
        .bearer(user.id, &entry.site, manifest, sealed, Renewal::IfExpiring)
        .await
        .map_err(|e| Failure::Unauthorized(format!("the site's OAuth token could not be refreshed: {}", e.chain())))?;
    let send = |token: Option<String>| async move {
        servio_client::post_tool(&state.client, &manifest.server_url, tool, args, token.as_deref()).await
    };
    let sent = credentials.send_with_renewal(user.id, &entry.site, manifest, sealed, token.as_deref(), send).await;
    let body = match sent.retried {
        Retried::RenewalFailed(e) => {
            return Err(Failure::Unauthorized(format!(
                "the site refused the token and refreshing it failed: {}",
                e.chain()
            )));
        }
        retried => sent.result.map_err(|e| failure(e, matches!(retried, Retried::Renewed)))?,
    };
    serde_json::from_slice(&body).map_err(|e| Failure::NotJson(format!("{e}: {}", servio_client::call::excerpt(&body))))
}

fn failure(error: CallError, refreshed: bool) -> Failure {
    match error {
        CallError::Failed { status: 401, .. } if refreshed => Failure::Unauthorized(
            "the site refused the credential even after refreshing it: connect the site again".into(),
        ),
        CallError::Failed { status: 401, .. } => Failure::Unauthorized(
            "the site refused the stored credential: set a new token (or connect again) in the vault".into(),
        ),
        CallError::Failed { status, body, .. } => Failure::SiteError { status, body },
        CallError::Request(error) => Failure::SiteUnreachable(error.to_string()),
        CallError::NotJson(detail) => Failure::NotJson(detail),
        CallError::InvalidArguments(problems) => Failure::InvalidArguments(problems),
        CallError::BadSchema(reason) => Failure::UnusableSchema(reason),
        other => Failure::Internal(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Notices name their sender and are heard by the others only; a `values` notice names
    /// many users and is split below PostgreSQL's limit; anything else is no notice.
    #[test]
    fn notices_round_trip_and_values_come_in_chunks() {
        let text = Change::Catalogue(7).announcement("a");
        assert_eq!(Change::heard(&text, "b"), [Change::Catalogue(7)]);
        assert!(Change::heard(&text, "a").is_empty(), "one's own notice");
        let users: Vec<i64> = (1_000_000..1_003_000).collect();
        let notices = batched_notices("a", "values", &users);
        assert!(notices.len() > 1 && notices.iter().all(|n| n.len() <= NOTICE_LIMIT + 20), "{}", notices.len());
        let heard: Vec<i64> = notices.iter().flat_map(|n| Change::heard(n, "b")).map(Change::user_id).collect();
        assert_eq!(heard, users);
        for junk in ["", "a", "a values", "a values 1 2", "a forget 1", "a values x"] {
            assert!(Change::heard(junk, "b").is_empty(), "{junk:?}");
        }
    }

    /// A graceful stop flushes the call log: once `flush` returns, every call logged before it
    /// is in the store, however many were queued.
    #[tokio::test]
    async fn a_flush_returns_once_every_queued_call_is_written() {
        let store: Arc<dyn Store> = Arc::from(servio_store::open("sqlite::memory:").await.unwrap());
        let user = store.create_user("log@example.com", "h", "UTC", 0).await.unwrap();
        let gateway = Gateway::default();
        gateway.flush().await;
        for at in 0..3000 {
            let call = servio_store::testing::tool_call(user.id, "a_tool", at);
            gateway.log(&store, call);
        }
        gateway.flush().await;
        assert_eq!(
            store.tool_calls(user.id, servio_store::CallPage { before: None, limit: 10_000 }).await.unwrap().len(),
            3000
        );
    }

    /// Regression: a tool whose schema cannot be compiled answered "the platform failed to make
    /// the call; try again" (500), which no retry could mend.
    #[test]
    fn an_unusable_schema_is_the_sites_mistake_with_its_reason() {
        let failure = failure(CallError::BadSchema("`$ref` \"https://x.example/s.json\" points outside".into()), false);
        assert_eq!(failure.status(), "unusable_schema");
        let said = failure.to_string();
        assert!(said.contains("points outside") && !said.contains("try again"), "{said}");
    }

    fn entry(user_id: i64, tool: &str) -> ToolCall {
        servio_store::testing::tool_call(user_id, tool, 1)
    }

    /// Regression: one row the store refused lost its whole batch, other users' entries with it
    /// (17 calls of another user in the audit). A row of a user who does not exist (refused by
    /// the foreign key on both backends, as after an account is deleted) now costs only itself.
    #[tokio::test]
    async fn a_row_the_store_refuses_costs_only_itself() {
        for (name, store) in servio_store::testing::backends().await {
            let user = store.create_user(&format!("log-{name}@example.com"), "hash", "UTC", 0).await.unwrap();
            let mut batch: Vec<ToolCall> = (0..5).map(|i| entry(user.id, &format!("tool_{i}"))).collect();
            batch.insert(2, entry(user.id + 1_000_000, "orphan"));
            write_log(store.as_ref(), &batch).await;
            let kept = store.tool_calls(user.id, servio_store::CallPage { before: None, limit: 100 }).await.unwrap();
            let mut tools: Vec<&str> = kept.iter().map(|call| call.tool.as_str()).collect();
            tools.sort_unstable();
            assert_eq!(tools, ["tool_0", "tool_1", "tool_2", "tool_3", "tool_4"], "{name}");
        }
    }
}
