//! What a write changed for its users ([`Change`]), told after it commits to every hook given
//! to [`Operations::on_change`](crate::Operations::on_change): the platform drops what it keeps
//! of them and tells the other processes sharing the database. Each write that changes such
//! state tells it itself, so that no caller can forget to.

use std::sync::RwLock;

/// A change of a user's state that what is kept of them depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Their catalogue: a site added to or taken out of their vault, a site's manifest saved
    /// anew, an approval, the account deleted.
    Catalogue(i64),
    /// What their calls are made with and what they are shown of their account: a credential,
    /// the call log's setting, the time zone, the password, a version kept against a change.
    /// Wider than the gateway's call context (their catalogue and log setting), which it drops.
    Context(i64),
    /// New values.
    Values(i64),
    /// API tokens revoked, or the account deleted.
    Access(i64),
}

impl Change {
    /// Whose change it is.
    pub fn user_id(self) -> i64 {
        let (Change::Catalogue(user_id) | Change::Context(user_id) | Change::Values(user_id) | Change::Access(user_id)) =
            self;
        user_id
    }

    /// Its kind as one word: `catalogue`, `context`, `values` or `access`.
    pub fn word(self) -> &'static str {
        match self {
            Change::Catalogue(_) => "catalogue",
            Change::Context(_) => "context",
            Change::Values(_) => "values",
            Change::Access(_) => "access",
        }
    }

    /// The kind [`Change::word`] names, made of a user's id; `None` for another word.
    pub fn of_word(word: &str) -> Option<fn(i64) -> Change> {
        Some(match word {
            "catalogue" => Change::Catalogue,
            "context" => Change::Context,
            "values" => Change::Values,
            "access" => Change::Access,
            _ => return None,
        })
    }
}

/// Told of the changes of each write once it committed, in the order they were made. It runs
/// on the writer's task: it must not block.
pub type ChangeHook = Box<dyn Fn(&[Change]) + Send + Sync>;

/// The hooks of one store.
#[derive(Default)]
pub(crate) struct Hooks(RwLock<Vec<ChangeHook>>);

impl Hooks {
    pub(crate) fn add(&self, hook: ChangeHook) {
        self.0.write().unwrap_or_else(|poisoned| poisoned.into_inner()).push(hook);
    }

    /// Tells every hook of `changes`, unless there are none.
    pub(crate) fn tell(&self, changes: &[Change]) {
        if changes.is_empty() {
            return;
        }
        for hook in self.0.read().unwrap_or_else(|poisoned| poisoned.into_inner()).iter() {
            hook(changes);
        }
    }

    /// Tells every hook of `changes` if the write `changed` anything: one that may find nothing
    /// to change (a delete of an id that is gone) tells nobody then.
    pub(crate) fn tell_if(&self, changed: bool, changes: &[Change]) {
        if changed {
            self.tell(changes);
        }
    }

    /// Tells every hook that each of `users` (deduplicated) had a change `of` kind.
    pub(crate) fn tell_each(&self, of: fn(i64) -> Change, users: impl IntoIterator<Item = i64>) {
        let mut users: Vec<i64> = users.into_iter().collect();
        users.sort_unstable();
        users.dedup();
        self.tell(&users.into_iter().map(of).collect::<Vec<_>>());
    }
}
