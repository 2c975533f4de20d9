//! Change notices: when a user's catalogue, credentials, values or API tokens change, every
//! part of this process that keeps something of them is told ([`Notices::on_change`], the
//! gateway's catalogues, the dashboards, the token cache), the MCP streams hear it
//! ([`Notices::subscribe`]), and so do the other processes sharing the database (PostgreSQL
//! `NOTIFY`, heard by [`hear_other_processes`]).
//!
//! The changes come from the store: each write that changes such state tells its
//! [`Change`]s once it committed ([`Notices::hear_store`]), so that no route, job or refresh
//! has one to remember. A worker, which keeps nothing of users, hears its store the same way
//! (`Notices::of_process("worker")`), so its changes reach the other processes by the same
//! ordered path.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

pub use servio_store::Change;
use servio_store::Operations;
use tokio::sync::{broadcast, mpsc};

use crate::AppState;

/// The notice bus of one process (see the module's documentation).
pub struct Notices {
    changes: broadcast::Sender<Change>,
    /// Where changes are announced to the other processes sharing the database.
    announcer: OnceLock<Arc<dyn Operations>>,
    /// The notices to announce, in the order the changes were made, to the one task that
    /// sends them (started with the first): sent from a task each, a revocation could reach
    /// the other processes after a change made after it, and a stream opened with the revoked
    /// token would hear that change. Bounded ([`QUEUED_NOTICES`]): what does not fit is not
    /// held but announced as missed ([`MISSED`]) once the queue has room.
    queue: OnceLock<mpsc::Sender<Vec<String>>>,
    /// Notices were left out since the last announcement.
    overflowed: Arc<AtomicBool>,
    /// This process's name in its notices, so that it knows its own when it hears them.
    id: String,
    /// Told of every change, from this process or another, in the order they were added.
    hooks: RwLock<Vec<ChangeHook>>,
}

/// Told of each change (`None`: changes may have gone unheard).
type ChangeHook = Box<dyn Fn(Option<Change>) + Send + Sync>;

impl Default for Notices {
    fn default() -> Notices {
        Notices::of_process("platform")
    }
}

impl Notices {
    /// The notice bus of a process of `kind` (`platform`, `worker`): its name in its notices is
    /// `kind` and a suffix of its own.
    pub fn of_process(kind: &str) -> Notices {
        Notices {
            changes: broadcast::channel(256).0,
            announcer: OnceLock::new(),
            queue: OnceLock::new(),
            overflowed: Arc::default(),
            id: servio_collector::process_owner(kind),
            hooks: RwLock::default(),
        }
    }
}

/// The longest notice sent: PostgreSQL takes up to 8,000 bytes.
const NOTICE_LIMIT: usize = 7000;

/// The writes whose notices may wait to be announced at once (each a few notices of at most
/// [`NOTICE_LIMIT`] bytes, so at most some 7 MiB of a 1,024-write backlog; a write's notices
/// are announced in milliseconds, so a backlog means the database is not answering).
const QUEUED_NOTICES: usize = 1024;

/// The word of a notice saying that the sender left notices out (`SENDER missed`): whoever
/// hears it drops everything they keep of every user, as when they miss notices themselves.
const MISSED: &str = "missed";

/// Whether `text` is another process's notice that it left notices out.
fn is_missed(text: &str, own: &str) -> bool {
    matches!(text.split_once(' '), Some((sender, MISSED)) if sender != own)
}

/// The changes a notice tells of (`SENDER WORD ID,ID,…`), unless `own` sent it; none for text
/// that is no notice.
fn heard_changes(text: &str, own: &str) -> Vec<Change> {
    let mut words = text.split(' ');
    let (Some(sender), Some(word), Some(users), None) = (words.next(), words.next(), words.next(), words.next()) else {
        return Vec::new();
    };
    let Some(change) = Change::of_word(word).filter(|_| sender != own) else { return Vec::new() };
    users.split(',').filter_map(|id| id.parse().ok()).map(change).collect()
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

/// The notices telling of `changes` from `sender`, each run of changes of one kind in as few
/// notices as fit.
pub fn notices_of(sender: &str, changes: &[Change]) -> Vec<String> {
    let mut notices = Vec::new();
    for run in changes.chunk_by(|a, b| a.word() == b.word()) {
        let users: Vec<i64> = run.iter().map(|change| change.user_id()).collect();
        notices.extend(batched_notices(sender, run[0].word(), &users));
    }
    notices
}

/// Sends `notices` through `store`, in order, logging those that fail.
async fn announce_now(store: &dyn Operations, notices: Vec<String>) {
    for notice in notices {
        if let Err(error) = store.announce(&notice).await {
            tracing::warn!(error = %servio_client::error_chain(&error), notice, "announcing a change to the other processes failed");
        }
    }
}

impl Notices {
    /// Applies `changes`, made here (the store tells them: see [`Notices::hear_store`]), and
    /// announces them to the other processes, in order.
    pub fn told(&self, changes: &[Change]) {
        for change in changes {
            self.apply(Some(*change));
        }
        self.send(notices_of(&self.id, changes));
    }

    /// Hears every change `store` makes from now on ([`Notices::told`]) and announces changes
    /// to the other processes through it (once; a later store is neither heard nor used). The
    /// hook holds the notices weakly: the notices hold the store.
    pub fn hear_store(self: &Arc<Self>, store: Arc<dyn Operations>) {
        if self.announcer.set(store.clone()).is_err() {
            return;
        }
        let notices = Arc::downgrade(self);
        store.on_change(Box::new(move |changes| {
            if let Some(notices) = notices.upgrade() {
                notices.told(changes);
            }
        }));
    }

    /// Calls `hook` with every change, made here or heard from another process, and with
    /// `None` when changes may have gone unheard (anything may have changed). Hooks are told
    /// in the order they were added.
    pub fn on_change(&self, hook: impl Fn(Option<Change>) + Send + Sync + 'static) {
        self.hooks.write().unwrap_or_else(|poisoned| poisoned.into_inner()).push(Box::new(hook));
    }

    /// Applies what another process announced (`text`), or, when notices may have been
    /// missed, tells every hook that anything may have changed.
    pub fn heard(&self, heard: &servio_store::Heard) {
        match heard {
            servio_store::Heard::Change(text) if is_missed(text, &self.id) => self.apply(None),
            servio_store::Heard::Change(text) => {
                for change in heard_changes(text, &self.id) {
                    self.apply(Some(change));
                }
            }
            servio_store::Heard::Missed => self.apply(None),
        }
    }

    /// Tells the hooks, then the MCP streams. The hooks first: a stream told that a token was
    /// revoked asks the token cache at once, and must not find the token still kept there.
    fn apply(&self, change: Option<Change>) {
        let hooks = self.hooks.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        for hook in hooks.iter() {
            hook(change);
        }
        if let Some(change @ (Change::Catalogue(_) | Change::Access(_) | Change::Values(_))) = change {
            // No receiver just means no MCP client is connected here.
            let _ = self.changes.send(change);
        }
    }

    fn send(&self, notices: Vec<String>) {
        let Some(store) = self.announcer.get() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let queue = self.queue.get_or_init(|| {
            let (queue, mut waiting) = mpsc::channel::<Vec<String>>(QUEUED_NOTICES);
            let (store, overflowed, missed) = (store.clone(), self.overflowed.clone(), format!("{} {MISSED}", self.id));
            runtime.spawn(async move {
                while let Some(notices) = waiting.recv().await {
                    announce_now(store.as_ref(), notices).await;
                    if overflowed.swap(false, Ordering::Relaxed) {
                        announce_now(store.as_ref(), vec![missed.clone()]).await;
                    }
                }
            });
            queue
        });
        if let Err(mpsc::error::TrySendError::Full(_)) = queue.try_send(notices) {
            // Never waits: the store's writer tells from wherever it committed.
            self.overflowed.store(true, Ordering::Relaxed);
            metrics::counter!("servio_notices_missed_total").increment(1);
        }
        // Closed only once the runtime that ran the task is gone.
    }

    /// Notices of changed catalogues, new values and revoked access, for MCP streams.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// How many MCP streams listen now: what a test waits on before it makes a change a
    /// stream must hear, rather than sleeping and hoping.
    pub fn listeners(&self) -> usize {
        self.changes.receiver_count()
    }
}

/// Applies what the other processes sharing the database announce, until the store stops
/// listening; returns at once where there are no others (SQLite).
pub async fn hear_other_processes(state: AppState) {
    let mut heard = match state.store.changes().await {
        Ok(Some(heard)) => heard,
        Ok(None) => return,
        Err(error) => {
            tracing::error!(error = %servio_client::error_chain(&error), "listening to the other processes failed; their changes show within seconds");
            return;
        }
    };
    while let Some(next) = heard.recv().await {
        state.notices.heard(&next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Notices name their sender and are heard by the others only; a `values` notice names
    /// many users and is split below PostgreSQL's limit; anything else is no notice.
    #[test]
    fn notices_round_trip_and_values_come_in_chunks() {
        let texts = notices_of("a", &[Change::Catalogue(7), Change::Access(7), Change::Access(8)]);
        assert_eq!(texts, ["a catalogue 7", "a access 7,8"]);
        assert_eq!(heard_changes(&texts[0], "b"), [Change::Catalogue(7)]);
        assert!(heard_changes(&texts[0], "a").is_empty(), "one's own notice");
        let users: Vec<i64> = (1_000_000..1_003_000).collect();
        let notices = batched_notices("a", "values", &users);
        assert!(notices.len() > 1 && notices.iter().all(|n| n.len() <= NOTICE_LIMIT + 20), "{}", notices.len());
        let heard: Vec<i64> = notices.iter().flat_map(|n| heard_changes(n, "b")).map(Change::user_id).collect();
        assert_eq!(heard, users);
        for junk in ["", "a", "a values", "a values 1 2", "a forget 1", "a values x"] {
            assert!(heard_changes(junk, "b").is_empty(), "{junk:?}");
        }
        assert!(is_missed("a missed", "b") && !is_missed("a missed", "a") && !is_missed("a values 1", "b"));
    }

    /// Issue 41: the queue of notices to announce was unbounded. Past its bound a write's
    /// notices are not held; the others hear, once the queue drains, that some were missed.
    #[tokio::test]
    async fn notices_past_the_queue_are_announced_as_missed() {
        let store: Arc<dyn servio_store::Store> =
            Arc::from(servio_store::open("sqlite::memory:").await.expect("an in-memory store"));
        let notices = Arc::new(Notices::default());
        notices.hear_store(store.clone());
        // The announcing task cannot run before this test yields: the queue fills up.
        for user_id in 0..(QUEUED_NOTICES as i64 + 10) {
            notices.told(&[Change::Catalogue(user_id)]);
        }
        assert!(notices.overflowed.load(Ordering::Relaxed), "the notices past the bound were left out");
        let queued = notices.queue.get().expect("the queue").max_capacity() - notices.queue.get().unwrap().capacity();
        assert_eq!(queued, QUEUED_NOTICES);
        for _ in 0..100 {
            if !notices.overflowed.load(Ordering::Relaxed) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(!notices.overflowed.load(Ordering::Relaxed), "announced as missed once the queue drained");
    }
}
