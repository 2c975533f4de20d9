//! Issue 41, finding 10: sign-up enumeration. The "already taken" answers every client shares
//! (20, then one every 30 s) were never spent: the address was looked up only in its earlier
//! forms, so the store's unique index answered "already taken" instead, uncounted, and 30 of 30
//! probes from 30 addresses were told. Now every such answer spends the shared bound, and past
//! it every sign-up waits, a new address's too, so the refusal tells nothing.

use std::net::IpAddr;

use reqwest::StatusCode;
use serde_json::json;
use servio_demo_site::DemoAuth;

use super::harness::{Backend, PASSWORD, Platform, SITE_TOKEN, start_site};

/// Signs `email` up from `address`; answers the status.
async fn sign_up_from(platform: &Platform, address: &str, email: &str) -> StatusCode {
    let address: IpAddr = address.parse().unwrap();
    let http = reqwest::Client::builder().local_address(address).build().unwrap();
    let body = json!({ "email": email, "password": PASSWORD, "time_zone": "UTC" });
    http.post(format!("{}/api/signup", platform.url)).json(&body).send().await.unwrap().status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_from_many_addresses_spend_the_shared_taken_answers() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    for backend in Backend::all().await {
        let platform = Platform::start(&backend, &site, &[]).await;
        let victim = format!("victim-{}@example.com", backend.name());
        platform.user(&victim).await;
        let mut told = 0;
        for n in 1..=30 {
            match sign_up_from(&platform, &format!("127.0.3.{n}"), &victim).await {
                StatusCode::CONFLICT => told += 1,
                StatusCode::TOO_MANY_REQUESTS => {}
                other => panic!("{}: probe {n} answered {other}", backend.name()),
            }
        }
        assert_eq!(told, 20, "{}: the shared bound tells 20 probes, then none", backend.name());
        // While spent, a new address waits too: the answer depends on nothing asked about.
        let newcomer = format!("newcomer-{}@example.com", backend.name());
        assert_eq!(sign_up_from(&platform, "127.0.3.200", &newcomer).await, StatusCode::TOO_MANY_REQUESTS);
    }
}
