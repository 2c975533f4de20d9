//! A pool of permits that serves its owners in turn (issue 41, design point 3: fair shares, not
//! first come). Each owner (a user, or everyone not signed in) waits in a queue of its own, and a
//! freed permit goes to the next owner in the rotation that has someone waiting, so one owner's
//! backlog delays another owner's work by at most one unit of work per permit.
//!
//! Who asks is a task-local ([`owned_by`], [`set_owner`]): the platform opens a scope for each
//! request and names its user once it is known; the collector opens one per user's jobs. Work
//! from outside any scope is nobody's, one owner like any other.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

tokio::task_local! {
    /// The user on whose behalf the current task works, once known.
    static OWNER: Cell<Option<i64>>;
}

/// Runs `work` as `owner`'s (`None`: nobody known yet; [`set_owner`] may name them later).
pub async fn owned_by<F: Future>(owner: Option<i64>, work: F) -> F::Output {
    OWNER.scope(Cell::new(owner), work).await
}

/// Names the user the current task works for, within an [`owned_by`] scope (elsewhere it does
/// nothing).
pub fn set_owner(user_id: i64) {
    let _ = OWNER.try_with(|owner| owner.set(Some(user_id)));
}

/// The user the current task works for, `None` when nobody is known.
pub fn current_owner() -> Option<i64> {
    OWNER.try_with(Cell::get).ok().flatten()
}

/// Permits served to their owners in turn.
#[derive(Debug)]
pub struct FairPermits {
    state: Mutex<Queues>,
}

#[derive(Debug, Default)]
struct Queues {
    /// Permits nobody holds.
    free: usize,
    /// Each owner's waiters, oldest first.
    waiting: HashMap<Option<i64>, VecDeque<oneshot::Sender<FairPermit>>>,
    /// The owners with someone waiting, in the order they are served.
    turns: VecDeque<Option<i64>>,
}

/// One permit; it goes to the next owner in turn when dropped.
#[derive(Debug)]
pub struct FairPermit {
    pool: Option<Arc<FairPermits>>,
}

impl FairPermits {
    /// A pool of `permits` permits.
    pub fn new(permits: usize) -> Arc<FairPermits> {
        Arc::new(FairPermits { state: Mutex::new(Queues { free: permits, ..Queues::default() }) })
    }

    /// A permit for `owner`, once it is their turn. Dropping the future gives up the place;
    /// a permit handed to it meanwhile goes on to the next in turn.
    pub async fn acquire(self: &Arc<Self>, owner: Option<i64>) -> FairPermit {
        let granted = {
            let mut queues = self.lock();
            if queues.free > 0 && queues.turns.is_empty() {
                queues.free -= 1;
                return FairPermit { pool: Some(self.clone()) };
            }
            let (grant, granted) = oneshot::channel();
            let queues = &mut *queues;
            let waiting = queues.waiting.entry(owner).or_default();
            if waiting.is_empty() {
                queues.turns.push_back(owner);
            }
            waiting.push_back(grant);
            granted
        };
        // The pool outlives its waiters: a sender is only dropped when a permit is handed over.
        granted.await.expect("a waiter is answered with a permit")
    }

    /// Permits nobody holds, and waiters (given up or not), now.
    pub fn status(&self) -> (usize, usize) {
        let queues = self.lock();
        (queues.free, queues.waiting.values().map(VecDeque::len).sum())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queues> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A permit came back: to the next owner in turn whose waiter is still there, or free.
    fn release(self: &Arc<Self>) {
        let mut guard = self.lock();
        let queues = &mut *guard;
        while let Some(owner) = queues.turns.pop_front() {
            let Some(waiting) = queues.waiting.get_mut(&owner) else { continue };
            let next = waiting.pop_front();
            if waiting.is_empty() {
                queues.waiting.remove(&owner);
            } else {
                queues.turns.push_back(owner);
            }
            let Some(grant) = next else { continue };
            match grant.send(FairPermit { pool: Some(self.clone()) }) {
                Ok(()) => return,
                // That waiter gave up: the permit comes back here, unreleased.
                Err(mut unused) => unused.pool = None,
            }
        }
        queues.free += 1;
    }
}

impl Drop for FairPermit {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One owner's backlog of nine waits behind another's single request by one turn at most.
    #[tokio::test]
    async fn owners_are_served_in_turn_not_first_come() {
        let pool = FairPermits::new(1);
        let held = pool.acquire(Some(1)).await;
        let served = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (owner, count) in [(Some(1), 9), (Some(2), 1)] {
            for _ in 0..count {
                let (pool, served) = (pool.clone(), served.clone());
                tasks.push(tokio::spawn(async move {
                    let _permit = pool.acquire(owner).await;
                    served.lock().unwrap().push(owner);
                    tokio::task::yield_now().await;
                }));
                tokio::task::yield_now().await;
            }
        }
        drop(held);
        for task in tasks {
            task.await.unwrap();
        }
        let served = served.lock().unwrap().clone();
        let second = served.iter().position(|owner| *owner == Some(2)).unwrap();
        assert!(second <= 1, "owner 2 served at place {second} of {served:?}");
        assert_eq!(pool.status(), (1, 0));
    }

    /// A waiter that gives up leaves no permit behind it.
    #[tokio::test]
    async fn a_waiter_that_gives_up_loses_no_permit() {
        let pool = FairPermits::new(1);
        let held = pool.acquire(None).await;
        let gave_up = tokio::time::timeout(std::time::Duration::from_millis(10), pool.acquire(Some(7))).await;
        assert!(gave_up.is_err());
        drop(held);
        assert_eq!(pool.status(), (1, 0));
        let _again = pool.acquire(Some(8)).await;
        assert_eq!(pool.status(), (0, 0));
    }

    #[tokio::test]
    async fn the_owner_is_the_scopes() {
        assert_eq!(current_owner(), None);
        let seen = owned_by(None, async {
            set_owner(42);
            tokio::task::yield_now().await;
            current_owner()
        })
        .await;
        assert_eq!(seen, Some(42));
        set_owner(7);
        assert_eq!(current_owner(), None, "outside a scope nobody is named");
    }
}
