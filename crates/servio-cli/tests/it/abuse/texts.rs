//! Issue 41, finding 6: manifest copies. A site's manifest was stored on the site, again as its
//! version and once more in the vault of every user who added it (an 8 MiB manifest: 24 MiB for
//! one user, 8 MiB more for each other), and every vault listing read and hashed every text
//! (1.7-2.8 s and 3.3 GB of memory for 4 listings at once). Now each text is stored once, as a
//! version that the site and the vault entries name, and a listing names versions: it reads a
//! text only the first time the platform meets that version.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use servio_demo_site::DemoAuth;
use servio_store::FetchedManifest;

use super::harness::{Backend, Platform, SITE_TOKEN, drawn, start_site, within};

/// The bytes of text added to a manifest: drawn hex, which neither backend compresses much.
const PADDING: usize = 2 << 20;

/// Pads the description of the manifest's first tool with [`PADDING`] bytes.
fn padded(manifest: &mut Value) {
    let tool = &mut manifest["tools"][0]["description"];
    *tool = json!(format!("{} {}", tool.as_str().unwrap_or_default(), drawn(PADDING, b"0123456789abcdef")));
}

/// Regression: three users adding one site stored its padded manifest five times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_is_stored_once_however_many_users_add_its_site() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    site.site.edit_manifest(Some(Arc::new(padded)));
    for backend in Backend::all().await {
        let platform = Platform::start(&backend, &site, &[]).await;
        let mut users = Vec::new();
        for i in 0..3 {
            users.push(platform.user(&format!("texts-{i}-{}@example.com", backend.name())).await);
        }
        let before = platform.stored_bytes().await;
        for user in &users {
            platform.add_site(user, &site).await;
        }
        let grown = platform.stored_bytes().await.saturating_sub(before);
        let copies = grown as f64 / PADDING as f64;
        eprintln!(
            "{}: three users added a site of {PADDING} bytes: +{grown} bytes ({copies:.1} texts)",
            backend.name()
        );
        // One copy, and on SQLite the pages of its write still in the journal beside it.
        assert!(grown < 3 * PADDING as u64, "{}: +{grown} bytes stored: {copies:.1} texts", backend.name());
    }
}

/// Sites in the vault of the listing test, each with a padded manifest.
const LISTED_SITES: usize = 8;
/// Listings asked at once.
const LISTINGS: usize = 4;
/// How many times they are asked.
const ROUNDS: usize = 5;

/// A valid manifest for `origin`, one tool described at [`PADDING`] bytes.
fn big_manifest(origin: &str, i: usize) -> String {
    let description = format!("Sales of one day ({i}): {}", drawn(PADDING, b"0123456789abcdef"));
    json!({
        "name": format!("Big {i}"), "version": "1.0.0",
        "server": { "url": format!("{origin}/api") },
        "auth": { "type": "bearer" },
        "tools": [{ "name": "shop.getSales", "description": description,
                    "input_schema": { "type": "object", "properties": { "day": { "type": "string" } } } }]
    })
    .to_string()
}

/// Regression: every listing read and hashed every text of the vault, megabytes a site, for
/// each of the listings asked at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vault_listings_read_no_texts_once_they_are_checked() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    for backend in Backend::all().await {
        let platform = Platform::start(&backend, &site, &[]).await;
        let user = platform.user(&format!("listings-{}@example.com", backend.name())).await;
        let store = platform.store().await;
        let user_id = store.user_by_email(&user.email).await.unwrap().unwrap().id;
        for i in 0..LISTED_SITES {
            let origin = format!("https://big-{i}.example.com");
            let (manifest, url) = (big_manifest(&origin, i), format!("{origin}/.well-known/servio.json"));
            let fetched = FetchedManifest {
                origin: &origin,
                manifest_url: &url,
                manifest: &manifest,
                etag: None,
                last_modified: None,
            };
            store.add_site(&fetched, user_id, None, 0, 100).await.unwrap();
        }
        let what = format!("{}: the first listing checks the {LISTED_SITES} texts", backend.name());
        let (status, list) =
            within(&platform, &what, Duration::from_secs(60), platform.send(&user, Method::GET, "/api/vault", None))
                .await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(list["sites"].as_array().unwrap().len(), LISTED_SITES, "{list}");
        assert_eq!(list["sites"][0]["name"], "Big 0", "{list}");

        let (held, health) = (platform.rss_kib(), platform.watch_health());
        platform.reset_peak();
        let what = format!("{}: {LISTINGS} listings at once, {ROUNDS} times", backend.name());
        within(&platform, &what, Duration::from_secs(60), async {
            for _ in 0..ROUNDS {
                let listings = (0..LISTINGS).map(|_| platform.send(&user, Method::GET, "/api/vault", None));
                for (status, list) in futures_util::future::join_all(listings).await {
                    assert_eq!(status, 200, "{list}");
                    assert_eq!(list["sites"].as_array().unwrap().len(), LISTED_SITES);
                }
            }
        })
        .await;
        let grown_mib = platform.peak_rss_kib().saturating_sub(held) / 1024;
        eprintln!("{what}: peak memory +{grown_mib} MiB");
        // Before: each listing held every text and its copy, 16 MiB and more each.
        assert!(grown_mib < 16, "{what}: the peak memory grew by {grown_mib} MiB");
        health.assert_healthy(&what).await;
    }
}
