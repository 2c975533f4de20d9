//! Collecting the brief (interpretation §6–§8): a [`Collector`] plans due periods into jobs,
//! calls each metric's tool with the user's credential, and stores the value or logs why not.
//!
//! ```no_run
//! # async fn example(store: std::sync::Arc<dyn servio_store::Store>, client: servio_client::Client) {
//! use std::sync::Arc;
//! use servio_collector::{Collector, WorkerConfig};
//! use servio_core::{Credentials, credentials::OAuthConfig, secrets::Secrets};
//!
//! let secrets = Arc::new(Secrets::from_key(&[7; 32]));
//! let credentials = Credentials::new(store.clone(), client.clone(), secrets, Arc::new(OAuthConfig::default()));
//! let collector = Collector::new(store, client, Arc::new(credentials));
//! let (_stop, stopped) = tokio::sync::watch::channel(false);
//! let summary = collector.run(WorkerConfig { drain: true, ..WorkerConfig::new("example") }, stopped).await;
//! println!("{}", summary.describe());
//! # }
//! ```
//!
//! - [`plan`]: which period of a metric is due in a user's zone (pure, no I/O).
//! - [`collect`]: one collection ([`collect::Reading`]); [`jobs`]: collection as jobs shared
//!   by many processes (`servio worker`, `servio serve`'s scheduler), backfills queued and
//!   waited for included.
//! - It calls sites with the credentials, and reads the manifests that act for each user, of
//!   `servio-core` (the `Credentials` service, the manifest cache, approval).
//! - [`Error`]: the crate's one error type.
#![deny(missing_docs)]

mod calls;
pub mod collect;
pub mod error;
pub mod jobs;
pub mod plan;

/// A lease owner's name for this process: `prefix`, the process id and four random bytes, so
/// that processes on different machines with the same id never share a name (a stopping
/// process hands back the jobs held under its name, and only its own must be).
pub fn process_owner(prefix: &str) -> String {
    let mut bytes = [0u8; 4];
    // Without randomness, the process id alone still names this process on its machine.
    let _ = getrandom::fill(&mut bytes);
    let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{}-{suffix}", std::process::id())
}

use std::sync::Arc;

use servio_client::Client;
use servio_core::manifests::{self, CheckConfig, ManifestCache};
use servio_core::{Credentials, approval};
use servio_store::CollectorStore;

pub use error::{Error, ErrorKind};
pub use jobs::{BackfillLimits, Backfilled, WorkerConfig};

/// Collects: what `servio worker` runs, and what the platform's collect-now, backfill and
/// scheduler call. Cloning is cheap (shared parts).
#[derive(Clone)]
pub struct Collector {
    store: Arc<dyn CollectorStore>,
    client: Client,
    credentials: Arc<Credentials>,
    manifests: Arc<ManifestCache>,
    backfill_limits: jobs::BackfillLimits,
    /// Told when this process queues jobs, so that an idle worker leases them at once.
    queued: Arc<tokio::sync::Notify>,
    /// Told when this process's worker commits results, so that a backfill waited for looks
    /// at its jobs again at once.
    committed: Arc<tokio::sync::Notify>,
    /// Held per user while a backfill is counted against its limit and queued.
    backfilling: Arc<jobs::UserLocks>,
    /// The calls to sites in flight at once, for every path and every clone (`--in-flight`).
    calls: calls::CallRoom,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector").field("credentials", &self.credentials).finish_non_exhaustive()
    }
}

impl Collector {
    /// A collector over `store`, calling sites through `client` with `credentials`.
    pub fn new(store: Arc<dyn CollectorStore>, client: Client, credentials: Arc<Credentials>) -> Collector {
        Collector::with_checks(store, client, credentials, CheckConfig::default())
    }

    /// [`Collector::new`], running manifest checks and argument validations as `checks` says.
    pub fn with_checks(
        store: Arc<dyn CollectorStore>,
        client: Client,
        credentials: Arc<Credentials>,
        checks: CheckConfig,
    ) -> Collector {
        let manifests = Arc::new(ManifestCache::new(checks));
        Collector {
            store,
            client,
            credentials,
            manifests,
            backfill_limits: BackfillLimits::default(),
            queued: Arc::default(),
            committed: Arc::default(),
            backfilling: Arc::default(),
            calls: calls::CallRoom::new(Collector::IN_FLIGHT),
        }
    }

    /// The calls to sites a collector has in flight at once unless told otherwise
    /// ([`Collector::with_in_flight`]).
    pub const IN_FLIGHT: usize = 64;

    /// The same collector with room for `calls` calls to sites in flight at once (1 to 4,096),
    /// instead of [`Collector::IN_FLIGHT`]: every path that calls sites takes its room there
    /// (the jobs [`Collector::run`] works, collect-now), so the process never has more. Set
    /// before the collector is cloned: clones share the room they were made with.
    pub fn with_in_flight(mut self, calls: usize) -> Collector {
        self.calls = calls::CallRoom::new(calls);
        self
    }

    /// How many calls to sites it has in flight at most.
    pub fn in_flight(&self) -> usize {
        self.calls.size()
    }

    /// The same collector with other limits on backfills (the defaults of [`BackfillLimits`]
    /// otherwise).
    pub fn with_backfill_limits(mut self, limits: BackfillLimits) -> Collector {
        self.backfill_limits = limits;
        self
    }

    /// The store it collects into.
    pub fn store(&self) -> &Arc<dyn CollectorStore> {
        &self.store
    }

    /// The outbound client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The credentials it calls sites with.
    pub fn credentials(&self) -> &Arc<Credentials> {
        &self.credentials
    }

    /// The cache of checked manifests, shared with whoever else reads manifests (the gateway,
    /// the dashboard).
    pub fn manifests(&self) -> &Arc<ManifestCache> {
        &self.manifests
    }

    /// The checked manifest acting for the user of `entry` (the one they approved), checked
    /// off the async threads unless checked before; `None` when it is not a valid manifest.
    pub async fn acting(
        &self,
        entry: &servio_store::VaultEntry,
        wait: manifests::Wait,
    ) -> Result<Option<Arc<manifests::CheckedManifest>>, manifests::Busy> {
        self.manifests.get(&entry.site.origin, approval::acting_manifest(entry), wait).await
    }
}
