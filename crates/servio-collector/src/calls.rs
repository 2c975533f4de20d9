//! How many calls to sites a collector has in flight: one [`CallRoom`] for every clone of a
//! [`crate::Collector`], which every path that calls sites takes its room in (the worker's
//! periods, collect-now), and [`at_most`], the one way a list whose length a site or a user
//! decides (a brief's metrics, a lease's periods) is turned into work in progress at once.
//!
//! Issue 41, finding 5: a period's task held a permit per job, as many as the room had, and
//! then started every call of the period at once; a brief of 1,500 metrics had 1,002 calls in
//! flight against a room of 64, the process ran out of file descriptors and another user's
//! `/healthz` failed. Now a period's calls run [`at_most`] as many at once as its permits.

use std::future::Future;
use std::sync::Arc;

use futures_util::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most calls a collector keeps in flight, whatever it is told.
pub(crate) const MAX_IN_FLIGHT: usize = 4096;

/// The calls to sites a collector may have in flight at once (`--in-flight`), shared by every
/// clone: a caller holds a permit for each call it has in flight, and makes no more calls at
/// once than it holds permits.
#[derive(Debug, Clone)]
pub(crate) struct CallRoom {
    permits: Arc<Semaphore>,
    size: usize,
}

impl CallRoom {
    /// Room for `size` calls at once (1 to [`MAX_IN_FLIGHT`]).
    pub(crate) fn new(size: usize) -> CallRoom {
        let size = size.clamp(1, MAX_IN_FLIGHT);
        CallRoom { permits: Arc::new(Semaphore::new(size)), size }
    }

    /// How many calls it has room for.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The semaphore itself, for the worker, which waits for every permit when it stops.
    pub(crate) fn permits(&self) -> &Arc<Semaphore> {
        &self.permits
    }

    /// How many permits `calls` calls take: one each, the whole room at most.
    pub(crate) fn permits_for(&self, calls: usize) -> u32 {
        u32::try_from(calls.clamp(1, self.size)).unwrap_or(1)
    }

    /// Waits for room for `calls` calls ([`CallRoom::permits_for`]); the holder makes at most
    /// as many calls at once as the permit counts ([`at_most`]).
    pub(crate) async fn room_for(&self, calls: usize) -> OwnedSemaphorePermit {
        let wanted = self.permits_for(calls);
        // The semaphore is never closed.
        self.permits.clone().acquire_many_owned(wanted).await.expect("the call room is never closed")
    }
}

/// Runs `tasks`, at most `at_once` of them at a time, and answers their outputs in order.
pub(crate) async fn at_most<T>(at_once: usize, tasks: impl IntoIterator<Item = impl Future<Output = T>>) -> Vec<T> {
    futures_util::stream::iter(tasks).buffered(at_once.max(1)).collect().await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    /// However many tasks there are, no more than `at_once` run at a time, and their outputs
    /// come in their order.
    #[tokio::test]
    async fn at_most_runs_no_more_than_it_is_told_at_once() {
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let tasks = (0..200).map(|n| {
            let (now, most) = (&now, &most);
            async move {
                most.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                n
            }
        });
        let outputs = at_most(7, tasks).await;
        assert_eq!(outputs, (0..200).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 7);
    }
}
