//! The call log: every gateway call, and every figure the platform answered itself, queued
//! by the request and written by one background task in batches (what comes within
//! [`LOG_LINGER`], one commit), so that no call waits for a commit.
//!
//! The queue is bounded twice, in entries ([`QueueBounds::entries`]) and in bytes
//! ([`QueueBounds::bytes`], each entry weighed by [`weight`]), so that a database that stalls
//! or a flood of calls costs the process a known amount of memory (an unbounded queue once
//! held 1.6 GiB). What finds the queue full is not held: it is dropped, counted in
//! `servio_call_log_dropped_total` and said in a warning at most every [`WARN_EVERY`], and the
//! request goes on without waiting. Each user's calls are limited before they are logged
//! ([`crate::throttle::Throttle::gateway_call`], [`crate::throttle::Throttle::gateway_log`]),
//! so no one user can fill the queue for the others.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use servio_store::{CallLog, Store, ToolCall, User};
use tokio::sync::{mpsc, oneshot};

use super::Gateway;
use crate::AppState;

/// How many call-log entries the writer commits in one transaction at most.
const LOG_BATCH: usize = 256;

/// How long the call-log writer gathers calls after the first before it commits them: calls
/// that come one at a time then share a commit (on SQLite, an `fsync`) instead of paying one
/// each, which was a fifth of a gateway call's overhead (BENCHMARKS.md). A flush does not wait.
const LOG_LINGER: Duration = Duration::from_millis(50);

/// How often at most a warning says that entries were dropped (with how many since the last).
const WARN_EVERY: Duration = Duration::from_secs(10);

/// What an entry costs besides its texts: the `ToolCall` (some 200 bytes), its place in the
/// queue and its strings' allocations.
const ENTRY_OVERHEAD: usize = 256;

/// How much the call-log queue holds at most: entries waiting, and the bytes of those and of
/// the batch being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueBounds {
    /// Entries waiting to be written.
    pub entries: usize,
    /// Bytes of the entries waiting and of the batch being written (`weight`).
    pub bytes: usize,
}

impl Default for QueueBounds {
    /// 10,000 entries and 16 MiB. The writer commits a batch of 256 in milliseconds, so the
    /// queue only fills while the database stalls: 10,000 entries are 33 users' whole bursts
    /// of calls at once, or every user of a busy platform calling for seconds; 16 MiB is the
    /// most they weigh (most entries are under 1 KiB, one with kept arguments 17 KiB, so the
    /// bytes bind for those: some 900 of them).
    fn default() -> QueueBounds {
        QueueBounds { entries: 10_000, bytes: 16 << 20 }
    }
}

/// What the call-log writer is sent.
pub(super) enum LogEntry {
    /// A call to write.
    Call(ToolCall),
    /// Answer once everything sent before is written.
    Flush(oneshot::Sender<()>),
}

/// The bytes `call` holds while it waits to be written, and weighs in the log: its texts and
/// [`ENTRY_OVERHEAD`].
pub fn weight(call: &ToolCall) -> usize {
    let texts = [Some(&call.tool), Some(&call.status), Some(&call.kind), call.arguments.as_ref(), call.detail.as_ref()];
    let text: usize = texts.into_iter().flatten().map(String::len).sum();
    ENTRY_OVERHEAD + text + call.token_name.as_ref().map_or(0, String::len)
}

/// The most an entry can weigh (`weight`) for a call named `name` (as the log keeps it: at
/// most 256 bytes and its length) whose arguments are logged as `arguments`: what a call is
/// charged against its user's limit before it is made, since its worded failure, up to
/// [`servio_store::LOGGED_DETAIL_BYTES`], is known only after.
pub fn most_logged(name: &str, arguments: Option<&str>) -> usize {
    // The status and kind words, and the `… (N bytes)` a cut text ends with.
    const WORDS: usize = 64;
    let name = name.len().min(servio_store::LOGGED_TOOL_NAME_BYTES + WORDS);
    ENTRY_OVERHEAD + WORDS + name + arguments.map_or(0, str::len) + servio_store::LOGGED_DETAIL_BYTES + WORDS
}

/// The queue before the call-log writer, bounded by [`QueueBounds`].
pub(super) struct LogQueue {
    sender: mpsc::Sender<LogEntry>,
    /// Bytes of the entries queued or being written.
    bytes: Arc<AtomicUsize>,
    bounds: QueueBounds,
    dropped: Dropped,
}

impl LogQueue {
    /// Starts the writer of `store`'s call log, behind a queue of `bounds`.
    pub(super) fn start(store: Arc<dyn CallLog>, bounds: QueueBounds) -> LogQueue {
        let (sender, receiver) = mpsc::channel(bounds.entries.max(1));
        let bytes = Arc::new(AtomicUsize::new(0));
        tokio::spawn(write_until_closed(store, receiver, bytes.clone()));
        LogQueue { sender, bytes, bounds, dropped: Dropped::default() }
    }

    /// Queues `call` unless the queue is full (in entries or bytes); then drops it, counted and
    /// said. Never waits.
    pub(super) fn push(&self, call: ToolCall) {
        let weight = weight(&call);
        let before = self.bytes.fetch_add(weight, Ordering::AcqRel);
        if before + weight > self.bounds.bytes {
            self.bytes.fetch_sub(weight, Ordering::AcqRel);
            return self.dropped.one(&call, "bytes", self.bounds);
        }
        match self.sender.try_send(LogEntry::Call(call)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(LogEntry::Call(call))) => {
                self.bytes.fetch_sub(weight, Ordering::AcqRel);
                self.dropped.one(&call, "entries", self.bounds);
            }
            Err(_) => {
                self.bytes.fetch_sub(weight, Ordering::AcqRel);
                tracing::error!("the tool-call log writer has stopped; a call went unlogged");
            }
        }
    }

    /// Returns once every call queued before it is written (or its loss logged), waiting for
    /// room in the queue if need be.
    pub(super) async fn flush(&self) {
        let (done, written) = oneshot::channel();
        if self.sender.send(LogEntry::Flush(done)).await.is_ok() {
            let _ = written.await;
        }
    }

    /// How many entries were dropped since the writer started.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.total.load(Ordering::Relaxed)
    }
}

/// The entries dropped because the queue was full: counted, and said at most every
/// [`WARN_EVERY`] so that a flood of calls does not become a flood of log lines.
#[derive(Default)]
struct Dropped {
    total: AtomicU64,
    since_warning: AtomicU64,
    /// When the last warning was said (`None`: never).
    warned: Mutex<Option<Instant>>,
}

impl Dropped {
    fn one(&self, call: &ToolCall, full: &'static str, bounds: QueueBounds) {
        metrics::counter!("servio_call_log_dropped_total").increment(1);
        let total = self.total.fetch_add(1, Ordering::Relaxed) + 1;
        self.since_warning.fetch_add(1, Ordering::Relaxed);
        let Ok(mut warned) = self.warned.try_lock() else { return };
        if warned.is_some_and(|at| at.elapsed() < WARN_EVERY) {
            return;
        }
        *warned = Some(Instant::now());
        drop(warned);
        let dropped = self.since_warning.swap(0, Ordering::Relaxed);
        tracing::warn!(
            dropped,
            total,
            full,
            user_id = call.user_id,
            "the call log's queue is full ({} entries, {} bytes at most): {dropped} entries were dropped, \
             the latest of this user (servio_call_log_dropped_total counts them all)",
            bounds.entries,
            bounds.bytes
        );
    }
}

impl Gateway {
    /// Queues `call` for the log writer, started on the first call with the `store` it writes
    /// to; a call that finds the queue full is dropped (counted), never waited for.
    pub(super) fn log(&self, store: &Arc<dyn Store>, call: ToolCall) {
        let queue = self.log.get_or_init(|| LogQueue::start(store.clone(), self.log_bounds));
        queue.push(call);
    }

    /// Returns once every call logged before it is written (or its loss logged): for a
    /// graceful stop, after the last request has been answered.
    pub async fn flush(&self) {
        if let Some(queue) = self.log.get() {
            queue.flush().await;
        }
    }

    /// How many call-log entries this process dropped because the queue was full.
    pub fn dropped_log_entries(&self) -> u64 {
        self.log.get().map_or(0, LogQueue::dropped)
    }
}

/// A worded status as the log keeps it: bounded here, since the log's queue holds it until
/// written.
pub(super) fn logged_detail(detail: &str) -> String {
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

/// Counts what the platform is about to answer itself for `user` (`what`: see [`Asked`])
/// against the user's gateway limits, as a tool call is counted: refused with `429`'s words
/// (and nothing done, nothing logged) past them.
pub fn admit_asked(state: &AppState, user: &User, what: &str) -> Result<(), crate::error::ApiError> {
    state.throttle.gateway_call(user.id)?;
    state.throttle.gateway_log(user.id, most_logged(what, None))
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

/// Writes logged calls in batches until every sender is gone, giving back each batch's bytes
/// to the queue's count once it is written.
async fn write_until_closed(store: Arc<dyn CallLog>, mut receiver: mpsc::Receiver<LogEntry>, bytes: Arc<AtomicUsize>) {
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
            let written: usize = batch.iter().map(weight).sum();
            bytes.fetch_sub(written, Ordering::AcqRel);
            batch.clear();
        }
        for done in flushed {
            let _ = done.send(());
        }
    }
}

/// Writes `batch` in one transaction or, when the store refuses that, row by row: a batch holds
/// the calls of many users, and one row the store cannot take must cost only itself.
async fn write_log(store: &dyn CallLog, batch: &[ToolCall]) {
    let Err(error) = store.log_tool_calls(batch).await else { return };
    if let [call] = batch {
        return lost(call, &error);
    }
    tracing::warn!(entries = batch.len(), error = %servio_client::error_chain(&error), "writing tool-call log entries at once failed; writing them one by one");
    for call in batch {
        if let Err(error) = store.log_tool_calls(std::slice::from_ref(call)).await {
            lost(call, &error);
        }
    }
}

/// Says which log entry was lost and why; the arguments are left out, as they may hold secrets.
fn lost(call: &ToolCall, error: &servio_store::StoreError) {
    tracing::error!(user_id = call.user_id, tool = %call.tool, error = %servio_client::error_chain(&error), "a tool-call log entry was lost");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graceful stop flushes the call log: once `flush` returns, every call logged before it
    /// is in the store, as many as the queue holds.
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
        assert_eq!(gateway.dropped_log_entries(), 0);
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

    /// A call log whose writes wait until told to go on, as a stalled database's do.
    struct Stalled {
        open: tokio::sync::Semaphore,
        written: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl CallLog for Stalled {
        async fn log_arguments(&self, _: i64) -> servio_store::Result<bool> {
            Ok(false)
        }

        async fn set_log_arguments(&self, _: i64, _: bool) -> servio_store::Result<()> {
            Ok(())
        }

        async fn log_tool_calls(&self, calls: &[ToolCall]) -> servio_store::Result<()> {
            let _open = self.open.acquire().await;
            self.written.fetch_add(calls.len(), Ordering::AcqRel);
            Ok(())
        }

        async fn tool_calls(&self, _: i64, _: servio_store::CallPage) -> servio_store::Result<Vec<ToolCall>> {
            Ok(Vec::new())
        }
    }

    /// Regression (issue 41, finding 7): the queue before the writer was unbounded, and a
    /// flood of calls while the writer lagged held 1.6 GiB. Behind a stalled writer the queue
    /// now takes what its bounds allow (entries, then bytes), drops the rest without waiting,
    /// counting each, and writes what it kept once the store answers again.
    #[tokio::test]
    async fn a_stalled_writer_holds_at_most_the_bounds_and_drops_the_rest() {
        let stalled = Arc::new(Stalled { open: tokio::sync::Semaphore::new(0), written: AtomicUsize::new(0) });
        let bounds = QueueBounds { entries: 100, bytes: 1 << 20 };
        let queue = LogQueue::start(stalled.clone(), bounds);
        let call = entry(1, "a_tool");
        // The writer takes its first batch and waits on the store with it; then the queue fills.
        queue.push(call.clone());
        while queue.sender.capacity() < bounds.entries {
            tokio::task::yield_now().await;
        }
        for _ in 0..1000 {
            queue.push(call.clone());
        }
        assert_eq!(queue.dropped(), 1000 - 100, "entries past the queue's 100 are dropped");
        assert!(queue.bytes.load(Ordering::Acquire) <= bounds.bytes);

        // Large entries meet the bytes' bound before the entries'.
        let bytes_queue = LogQueue::start(stalled.clone(), QueueBounds { entries: 10_000, bytes: 1 << 20 });
        let mut large = call.clone();
        large.arguments = Some("x".repeat(16 * 1024));
        for _ in 0..1000 {
            bytes_queue.push(large.clone());
        }
        let kept = 1000 - bytes_queue.dropped() as usize;
        assert_eq!(kept, (1 << 20) / weight(&large), "as many as 1 MiB holds");
        assert!(bytes_queue.bytes.load(Ordering::Acquire) <= 1 << 20);

        stalled.open.add_permits(1_000_000);
        queue.flush().await;
        bytes_queue.flush().await;
        assert_eq!(stalled.written.load(Ordering::Acquire), 101 + kept, "everything kept is written");
        assert_eq!(queue.bytes.load(Ordering::Acquire), 0, "written entries leave the count");
    }
}
