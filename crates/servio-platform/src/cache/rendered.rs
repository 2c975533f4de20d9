//! Rendered dashboards kept per user and window, each with its `ETag`: a dashboard is asked
//! for far more often than it changes (a user's values change when a collection stores one).
//! The same cache, by address instead of window, keeps the figures MCP serves as resources
//! ([`FiguresCache`]), bounded by `--figures-cache-bytes`, [`FIGURES_PER_USER`] per user.
//!
//! Bounded in bytes: the kept bodies weigh at most the `--dashboard-cache-bytes` setting
//! ([`DashboardCache::new`]), each user's entry weighing the bodies of the windows it holds (at
//! most [`WINDOWS`] of them); the least useful users go first (moka's TinyLFU). Entries were
//! bounded by count before, 10,000 of up to 1 MiB each. Hits and misses are counted in
//! `servio_cache_requests_total{cache="dashboard"}` for the hit rate at `/metrics`.
//!
//! An entry goes when the user's values, catalogue or credentials change, in this process or
//! in another sharing the database (the gateway's change notices), and after [`KEPT`] in any
//! case, since what a dashboard says also moves with the clock (the latest due period, "retrying
//! at"). The `ETag` is a digest of the body, so it is the same on every process: a client
//! revalidating through a load balancer gets `304 Not Modified` wherever it lands.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::HeaderValue;

use crate::cache::{Counted, Weight};
use crate::notices::Change;

/// How long an entry is used at most.
pub const KEPT: Duration = Duration::from_secs(30);

/// How many windows (`?days=`) one user's entry keeps at most: a user asking for every window
/// from 1 to 400 days keeps the last few, not 400 bodies.
pub const WINDOWS: usize = 4;

/// Render gates beyond this many are swept of unused ones.
const GATES: usize = 10_000;

/// What an entry costs besides its bodies: keys, tags, the map, moka's own node (measured
/// roughly; what matters is that an empty dashboard is not free).
const ENTRY_OVERHEAD: usize = 512;

/// A rendered dashboard.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The JSON body.
    pub body: Bytes,
    /// Its entity tag: a 64-bit hash of the body, in hex, quoted.
    pub etag: HeaderValue,
}

impl Rendered {
    fn of(body: Vec<u8>) -> Rendered {
        // Not a secret, only a version: a portable 64-bit hash (SHA-256 of the body was a
        // twentieth of a render).
        let digest = rapidhash::v3::rapidhash_v3(&body);
        let etag = HeaderValue::from_str(&format!("\"{digest:016x}\"")).unwrap_or(HeaderValue::from_static("\"\""));
        Rendered { body: Bytes::from(body), etag }
    }

    /// Whether an `If-None-Match` header names this version (or `*`).
    pub fn matches(&self, if_none_match: Option<&HeaderValue>) -> bool {
        let Some(tags) = if_none_match.and_then(|value| value.to_str().ok()) else { return false };
        let own = self.etag.to_str().unwrap_or_default();
        tags.split(',').map(str::trim).any(|tag| tag == "*" || tag.trim_start_matches("W/") == own)
    }
}

/// How many figure resources one user's entry keeps at most.
pub const FIGURES_PER_USER: usize = 32;

/// One user's kept answers, by window (days, or a resource's address): each rendered answer and
/// when its data was read, oldest first. Replaced whole when a window is added, so that its
/// weight is counted again.
#[derive(Debug, Clone)]
struct Windows<W>(Vec<(W, Instant, Arc<Rendered>)>);

impl<W> Default for Windows<W> {
    fn default() -> Self {
        Windows(Vec::new())
    }
}

impl<W: Window> Weight for Windows<W> {
    fn weight(&self) -> usize {
        let each = self.0.iter().map(|(window, _, rendered)| window.bytes() + rendered.body.len());
        ENTRY_OVERHEAD + each.sum::<usize>()
    }
}

/// What an answer is kept by besides its user, and what that key weighs.
pub trait Window: Clone + Eq + std::hash::Hash + Send + Sync + 'static {
    /// The bytes the key holds besides itself.
    fn bytes(&self) -> usize;
}

impl Window for u32 {
    fn bytes(&self) -> usize {
        0
    }
}

impl Window for String {
    fn bytes(&self) -> usize {
        self.len()
    }
}

/// The kept dashboards, by user, bounded in bytes.
pub type DashboardCache = RenderCache<u32>;

/// The kept figure resources (their JSON), by user and address, bounded in bytes.
pub type FiguresCache = RenderCache<String>;

/// Rendered answers kept by user and window (`W`), bounded in bytes.
pub struct RenderCache<W> {
    entries: Counted<i64, Windows<W>>,
    /// One render at a time per user and window: when an entry expires under load, the
    /// requests that find it gone wait for one render instead of each making its own.
    renders: Mutex<HashMap<(i64, W), Gate>>,
    /// How many windows one user's entry keeps.
    per_user: usize,
}

impl<W: Window> std::fmt::Debug for RenderCache<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderCache").field("bytes", &self.entries.bytes()).finish_non_exhaustive()
    }
}

/// Held while one dashboard renders.
type Gate = Arc<tokio::sync::Mutex<()>>;

impl RenderCache<u32> {
    /// A cache of dashboards whose bodies weigh at most `bytes` together.
    pub fn new(bytes: u64) -> DashboardCache {
        RenderCache::named("dashboard", bytes, WINDOWS)
    }
}

impl RenderCache<String> {
    /// A cache of figure resources whose bodies weigh at most `bytes` together.
    pub fn figures(bytes: u64) -> FiguresCache {
        RenderCache::named("figures", bytes, FIGURES_PER_USER)
    }
}

impl<W: Window> RenderCache<W> {
    fn named(name: &'static str, bytes: u64, per_user: usize) -> RenderCache<W> {
        RenderCache { entries: Counted::new(name, bytes, KEPT), renders: Mutex::default(), per_user }
    }

    /// The answer kept for `user_id` over `window`, while fresh (counted as a hit or a miss).
    pub fn get(&self, user_id: i64, window: &W) -> Option<Arc<Rendered>> {
        let found = self.find(user_id, window);
        self.entries.count(found.is_some());
        found
    }

    fn find(&self, user_id: i64, window: &W) -> Option<Arc<Rendered>> {
        let windows = self.entries.peek(&user_id)?;
        let (_, at, rendered) = windows.0.iter().find(|(kept, _, _)| kept == window)?;
        (at.elapsed() < KEPT).then(|| rendered.clone())
    }

    /// The answer of `user_id` over `window`: the kept one, or the one `render` makes (its
    /// JSON body), kept. Concurrent callers for the same answer share one render.
    pub async fn get_or_render<F, Fut, E>(&self, user_id: i64, window: W, render: F) -> Result<Arc<Rendered>, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<u8>, E>>,
    {
        if let Some(kept) = self.get(user_id, &window) {
            return Ok(kept);
        }
        let gate = {
            let mut renders = self.renders.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if renders.len() >= GATES {
                renders.retain(|_, gate| Arc::strong_count(gate) > 1);
            }
            renders.entry((user_id, window.clone())).or_default().clone()
        };
        let _turn = gate.lock().await;
        // Rendered while this one waited.
        if let Some(kept) = self.find(user_id, &window) {
            return Ok(kept);
        }
        let started = Instant::now();
        let body = render().await?;
        Ok(self.keep(user_id, window, body, started))
    }

    /// Keeps `body` as the answer of `user_id` over `window`, rendered at `since` (before the
    /// data was read, so that a change made while it was being read is not hidden for long);
    /// answers it with its tag.
    pub fn keep(&self, user_id: i64, window: W, body: Vec<u8>, since: Instant) -> Arc<Rendered> {
        let rendered = Arc::new(Rendered::of(body));
        let mut windows = self.entries.peek(&user_id).map(|kept| (*kept).clone()).unwrap_or_default();
        windows.0.retain(|(kept, at, _)| *kept != window && at.elapsed() < KEPT);
        if windows.0.len() >= self.per_user {
            windows.0.remove(0);
        }
        windows.0.push((window, since, rendered.clone()));
        self.entries.insert(user_id, windows);
        rendered
    }

    /// Drops what a change makes stale: the user's entries, or all of them when changes may
    /// have gone unheard (`None`).
    pub fn forget(&self, change: Option<Change>) {
        match change {
            Some(change) => self.entries.remove(&change.user_id()),
            None => self.entries.clear(),
        }
    }

    /// The bytes kept now (moka's count, which trails inserts by a moment).
    pub fn bytes(&self) -> u64 {
        self.entries.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_drops_only_its_users_entries_and_etags_follow_the_body() {
        let cache = DashboardCache::new(1 << 20);
        let first = cache.keep(1, 28, b"{\"a\":1}".to_vec(), Instant::now());
        cache.keep(2, 28, b"{\"a\":1}".to_vec(), Instant::now());
        assert_eq!(cache.get(2, &28).unwrap().etag, first.etag, "the same body, the same tag");
        assert!(cache.get(1, &7).is_none());
        cache.forget(Some(Change::Values(1)));
        assert!(cache.get(1, &28).is_none());
        assert!(cache.get(2, &28).is_some());
        let second = cache.keep(1, 28, b"{\"a\":2}".to_vec(), Instant::now());
        assert_ne!(second.etag, first.etag);
        assert!(second.matches(Some(&second.etag)));
        cache.forget(None);
        assert!(cache.get(2, &28).is_none());
    }

    /// A stampede: many requests find the dashboard gone at once; one renders, all get it.
    #[tokio::test]
    async fn concurrent_misses_share_one_render() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let cache = Arc::new(DashboardCache::new(1 << 20));
        let renders = Arc::new(AtomicUsize::new(0));
        let waiting: Vec<_> = (0..16)
            .map(|_| {
                let (cache, renders) = (cache.clone(), renders.clone());
                tokio::spawn(async move {
                    let render = || async {
                        renders.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok::<_, ()>(b"{}".to_vec())
                    };
                    cache.get_or_render(5, 28, render).await.unwrap().etag.clone()
                })
            })
            .collect();
        let mut tags = Vec::new();
        for task in waiting {
            tags.push(task.await.unwrap());
        }
        assert_eq!(renders.load(Ordering::SeqCst), 1);
        assert!(tags.windows(2).all(|pair| pair[0] == pair[1]));
    }

    #[test]
    fn if_none_match_lists_weak_tags_and_stars() {
        let rendered = Rendered::of(b"{}".to_vec());
        let tag = rendered.etag.to_str().unwrap().to_owned();
        for header in [tag.clone(), format!("W/{tag}"), format!("\"other\", {tag}"), "*".to_owned()] {
            assert!(rendered.matches(Some(&HeaderValue::from_str(&header).unwrap())), "{header}");
        }
        assert!(!rendered.matches(Some(&HeaderValue::from_static("\"other\""))));
        assert!(!rendered.matches(None));
    }
}
