//! Issue 41, finding 8: raw values. A number written with two million zeros is a finite number,
//! and its text was stored whole as the raw value of each period (60 values: +387 MiB; one
//! `resources/read`: a 114 MiB answer). Now a value's JSON text is kept up to 1,024 bytes;
//! a longer one is dropped with its length, as the spec drops what is not a number.

use std::time::Duration;

use reqwest::Method;
use servio_demo_site::{DemoAuth, Misbehaviour};

use super::harness::{Backend, Platform, SITE_TOKEN, start_site, within};

/// The tool every metric of the demo brief calls.
const SALES_TOOL: &str = "/api/servio/tools/shop.getSalesSummary";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_of_megabytes_is_dropped_and_only_its_length_is_kept() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    let zeros = format!("0.{}1", "0".repeat(2_000_000));
    site.site.set_misbehaviour(SALES_TOOL, Some(Misbehaviour::Totals(zeros.clone())));
    for backend in Backend::all().await {
        let platform = Platform::start(&backend, &site, &[]).await;
        let user = platform.user(&format!("raw-{}@example.com", backend.name())).await;
        let site_id = platform.add_site(&user, &site).await["site"]["id"].as_i64().unwrap();
        let before = platform.data_bytes();
        for _ in 0..5 {
            let path = format!("/api/vault/{site_id}/collect");
            let (status, summary) = within(&platform, "collecting megabyte values", Duration::from_secs(30), async {
                platform.send(&user, Method::POST, &path, None).await
            })
            .await;
            assert_eq!(status, 200, "{summary}");
        }
        let store = platform.store().await;
        let user_id = store.user_by_email(&user.email).await.unwrap().unwrap().id;
        // A collect-now that found the period leased by the site's first collection (queued
        // when it was added) answers at once; that collection's attempts commit a moment later.
        let mut attempts = store.attempts(user_id, site_id, 1_000).await.unwrap();
        for _ in 0..300 {
            if !attempts.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            attempts = store.attempts(user_id, site_id, 1_000).await.unwrap();
        }
        assert!(!attempts.is_empty(), "no attempt was logged within 30 s");
        for attempt in &attempts {
            let reason = attempt.reason.as_deref().unwrap_or_default();
            assert!(reason.contains("more than the 1,024 a value may take"), "{reason}");
            let raw = attempt.raw.as_deref().unwrap_or_default();
            assert!(raw.len() < 100 && raw.ends_with(&format!("({} bytes)", zeros.len())), "{raw}");
        }
        let grown = platform.data_bytes().saturating_sub(before);
        assert!(grown < 4 << 20, "{}: the data grew by {grown} bytes", backend.name());
    }
}
