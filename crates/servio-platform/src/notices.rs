//! Change notices: when a user's catalogue, credentials, values or API tokens change, every
//! part of this process that keeps something of them is told ([`Notices::on_change`], the
//! gateway's catalogues, the dashboards, the token cache), the MCP streams hear it
//! ([`Notices::subscribe`]), and so do the other processes sharing the database (PostgreSQL
//! `NOTIFY`, heard by [`hear_other_processes`]). A worker, which has no platform state, sends
//! its notices with [`announce`].

use std::sync::{Arc, OnceLock, RwLock};

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
    /// token would hear that change.
    queue: OnceLock<mpsc::UnboundedSender<Vec<String>>>,
    /// This process's name in its notices, so that it knows its own when it hears them.
    id: String,
    /// Told of every change, from this process or another, in the order they were added.
    hooks: RwLock<Vec<ChangeHook>>,
}

/// Told of each change (`None`: changes may have gone unheard).
type ChangeHook = Box<dyn Fn(Option<Change>) + Send + Sync>;

impl Default for Notices {
    fn default() -> Notices {
        Notices {
            changes: broadcast::channel(256).0,
            announcer: OnceLock::new(),
            queue: OnceLock::new(),
            id: servio_collector::process_owner("platform"),
            hooks: RwLock::default(),
        }
    }
}

/// A change of a user's state that what is kept of them depends on, as the processes sharing a
/// database tell each other.
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
pub fn announce(store: Arc<dyn Operations>, notices: Vec<String>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async move { announce_now(store.as_ref(), notices).await });
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

    /// Tells that `user_id`'s credentials or log setting changed, so that what is kept of them
    /// is dropped, here and in the other processes sharing the database.
    pub fn context_changed(&self, user_id: i64) {
        self.changed(Change::Context(user_id));
    }

    /// [`Notices::catalogue_changed`] for many users at once, in as few notices as fit.
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
        self.apply(Some(change));
        self.send(vec![change.announcement(&self.id)]);
    }

    /// Applies the change `of` each of `users` here, and announces them in as few notices as fit.
    fn all_changed(&self, of: fn(i64) -> Change, users: &[i64]) {
        let Some(word) = users.first().map(|first| of(*first).word()) else { return };
        for user_id in users {
            self.apply(Some(of(*user_id)));
        }
        self.send(batched_notices(&self.id, word, users));
    }

    /// Calls `hook` with every change, made here or heard from another process, and with
    /// `None` when changes may have gone unheard (anything may have changed). Hooks are told
    /// in the order they were added.
    pub fn on_change(&self, hook: impl Fn(Option<Change>) + Send + Sync + 'static) {
        self.hooks.write().unwrap_or_else(|poisoned| poisoned.into_inner()).push(Box::new(hook));
    }

    /// Announces changes through `store` from now on (once; later calls change nothing).
    pub fn announce_through(&self, store: Arc<dyn Operations>) {
        let _ = self.announcer.set(store);
    }

    /// Applies what another process announced (`text`), or, when notices may have been
    /// missed, tells every hook that anything may have changed.
    pub fn heard(&self, heard: &servio_store::Heard) {
        match heard {
            servio_store::Heard::Change(text) => {
                for change in Change::heard(text, &self.id) {
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

    /// Notices of changed catalogues, new values and revoked access, for MCP streams.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
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
}
