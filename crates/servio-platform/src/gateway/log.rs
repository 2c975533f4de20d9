//! The call log: every gateway call, and every figure the platform answered itself, queued
//! by the request and written by one background task in batches (what comes within
//! [`LOG_LINGER`], one commit), so that no call waits for a commit.

use std::sync::Arc;
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

/// What the call-log writer is sent.
pub(super) enum LogEntry {
    /// A call to write.
    Call(ToolCall),
    /// Answer once everything sent before is written.
    Flush(oneshot::Sender<()>),
}

impl Gateway {
    /// Queues `call` for the log writer, started on the first call with the `store` it writes to.
    pub(super) fn log(&self, store: &Arc<dyn Store>, call: ToolCall) {
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

/// Writes logged calls in batches until every sender is gone.
fn start_log_writer(store: Arc<dyn CallLog>) -> mpsc::UnboundedSender<LogEntry> {
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
