//! A collector on every backend, and the demo site over HTTPS to collect from.

#![allow(dead_code)] // Each test file uses part of this.

use std::sync::Arc;

use servio_client::{Client, ClientConfig};
use servio_collector::Collector;
use servio_core::Credentials;
use servio_core::credentials::{Credential, OAuthConfig};
use servio_core::secrets::Secrets;
use servio_store::{FetchedManifest, Store, User, VaultEntry};

/// The demo site over HTTPS on a loopback port of its own, with bearer authentication.
pub use servio_demo_site::LocalSite as DemoSite;

/// Starts the demo site, trusted through `ca`, accepting the bearer `token`.
pub async fn demo_site(ca: &servio_demo_site::LocalCa, token: &str) -> DemoSite {
    DemoSite::start(ca, token).await.unwrap()
}

/// A client that may reach loopback (the demo site) and trusts `ca_pem`, with `config`'s limits.
pub fn client(ca_pem: &str, config: ClientConfig) -> Client {
    Client::new(ClientConfig { extra_roots_pem: Some(ca_pem.as_bytes().to_vec()), ..config }).unwrap()
}

/// A collector over `store`, calling through `client`, with the tests' sealing key.
pub fn collector(store: Arc<dyn Store>, client: Client) -> Collecting {
    let secrets = Arc::new(Secrets::from_key(&[42; 32]));
    let credentials = Credentials::new(store.clone(), client.clone(), secrets, Arc::new(OAuthConfig::default()));
    Collecting { collector: Collector::new(store.clone(), client, Arc::new(credentials)), store }
}

/// A collector with the whole store it collects into: the collector holds only what collecting
/// needs of it (`CollectorStore`), a test also makes users and reads what was stored.
pub struct Collecting {
    pub collector: Collector,
    store: Arc<dyn Store>,
}

impl Collecting {
    /// The whole store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The same, its collector changed by `change` (`with_in_flight`, `with_backfill_limits`).
    pub fn with(self, change: impl FnOnce(Collector) -> Collector) -> Collecting {
        Collecting { collector: change(self.collector), store: self.store }
    }
}

impl std::ops::Deref for Collecting {
    type Target = Collector;

    fn deref(&self) -> &Collector {
        &self.collector
    }
}

/// One collector per backend.
pub async fn collectors(ca_pem: &str) -> Vec<(&'static str, Collecting)> {
    let mut all = Vec::new();
    for (name, store) in servio_store::testing::backends().await {
        all.push((name, collector(Arc::from(store), client(ca_pem, ClientConfig::default()))));
    }
    all
}

/// A new user in Pacific/Auckland with `demo`'s site in their vault and `token` as its
/// credential, as the platform's "add a site" stores them.
pub async fn user_with_site(collector: &Collecting, email: &str, demo: &DemoSite, token: &str) -> (User, VaultEntry) {
    let store = collector.store();
    let user = store.create_user(email, "not a hash", "Pacific/Auckland", 0).await.unwrap();
    let manifest = demo.site.manifest().to_string();
    let manifest_url = format!("{}/.well-known/servio.json", demo.origin);
    let fetched = FetchedManifest {
        origin: &demo.origin,
        manifest_url: &manifest_url,
        manifest: &manifest,
        etag: None,
        last_modified: None,
    };
    let credential = Credential::Token(token.to_owned());
    let site = collector.credentials().add_site(&fetched, user.id, Some(&credential), (0, 100)).await.unwrap();
    let entry = store.vault_entry(user.id, site.id).await.unwrap().expect("in the vault");
    (user, entry)
}
