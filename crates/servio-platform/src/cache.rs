//! The one shape of the platform's caches that hold large values (rendered dashboards,
//! catalogues): a `moka` cache bounded in bytes, each value weighing what [`Weight`] says,
//! expiring after a time to live, with its hits and misses counted for `/metrics`
//! (`servio_cache_requests_total{cache, result}`) and its size as a gauge (`servio_cache_bytes`).
//!
//! A bound by entry count bounds nothing when one entry is 1 KiB and the next 8 MiB; moka's
//! weigher and TinyLFU admission keep the total under the bound and the useful entries in.

pub mod rendered;

use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

/// What a cached value costs in memory, in bytes (an estimate: its buffers and strings, plus a
/// fixed overhead per allocation where that matters).
pub trait Weight {
    /// The value's weight in bytes.
    fn weight(&self) -> usize;
}

/// A cache of `Arc<V>` by `K`, at most `bytes` together, each entry at most `ttl` old.
pub struct Counted<K, V> {
    name: &'static str,
    inner: moka::sync::Cache<K, Arc<V>>,
}

impl<K, V> Counted<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Weight + Send + Sync + 'static,
{
    /// A cache named `name` in the metrics, holding at most `bytes`.
    pub fn new(name: &'static str, bytes: u64, ttl: Duration) -> Counted<K, V> {
        let inner = moka::sync::Cache::builder()
            .max_capacity(bytes)
            // moka counts weights in u32; a value heavier than 4 GiB is heavier than any bound.
            .weigher(|_: &K, value: &Arc<V>| u32::try_from(value.weight()).unwrap_or(u32::MAX))
            .time_to_live(ttl)
            .build();
        Counted { name, inner }
    }

    /// The value kept for `key`, counted as a hit or a miss.
    pub fn get(&self, key: &K) -> Option<Arc<V>> {
        let found = self.peek(key);
        self.count(found.is_some());
        found
    }

    /// The value kept for `key`, not counted (a second look after waiting, or a value that
    /// holds several answers and is judged by its caller, who counts).
    pub fn peek(&self, key: &K) -> Option<Arc<V>> {
        self.inner.get(key)
    }

    /// Counts a hit (`true`) or a miss.
    pub fn count(&self, hit: bool) {
        let result = if hit { "hit" } else { "miss" };
        metrics::counter!("servio_cache_requests_total", "cache" => self.name, "result" => result).increment(1);
    }

    /// Keeps `value` for `key`, replacing what was kept.
    pub fn insert(&self, key: K, value: impl Into<Arc<V>>) {
        self.inner.insert(key, value.into());
        metrics::gauge!("servio_cache_bytes", "cache" => self.name).set(self.inner.weighted_size() as f64);
    }

    /// Drops what is kept for `key`.
    pub fn remove(&self, key: &K) {
        self.inner.invalidate(key);
    }

    /// Drops everything.
    pub fn clear(&self) {
        self.inner.invalidate_all();
    }

    /// The bytes kept, as moka counts them (its bookkeeping trails inserts by a moment).
    pub fn bytes(&self) -> u64 {
        self.inner.run_pending_tasks();
        self.inner.weighted_size()
    }
}

/// The weight of a JSON value: its strings and numbers' text, plus a node's overhead for every
/// value and member (a `serde_json::Value` is 32 to 80 bytes before what it points to).
pub fn json_weight(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    const NODE: usize = 80;
    NODE + match value {
        Value::Null | Value::Bool(_) => 0,
        Value::Number(number) => number.as_str().len(),
        Value::String(text) => text.len(),
        Value::Array(items) => items.iter().map(json_weight).sum(),
        Value::Object(members) => members.iter().map(|(name, value)| name.len() + json_weight(value)).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Blob(usize);

    impl Weight for Blob {
        fn weight(&self) -> usize {
            self.0
        }
    }

    #[test]
    fn the_bound_is_in_bytes_not_entries() {
        let cache: Counted<u32, Blob> = Counted::new("test", 10_000, Duration::from_secs(60));
        for key in 0..100 {
            cache.insert(key, Blob(1_000));
        }
        assert!(cache.bytes() <= 10_000, "{} bytes kept", cache.bytes());
        cache.insert(1_000, Blob(20_000));
        assert!(cache.bytes() <= 10_000, "one value over the bound is not kept");
        assert!(cache.get(&1_000).is_none());
    }

    #[test]
    fn json_weighs_its_text_and_its_nodes() {
        let small = json_weight(&serde_json::json!({"a": 1}));
        let large = json_weight(&serde_json::json!({"a": "x".repeat(10_000)}));
        assert!(small < 400 && large > 10_000, "{small} {large}");
    }
}
