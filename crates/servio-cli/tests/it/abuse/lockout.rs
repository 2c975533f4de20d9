//! Point 8: the owner is never locked out. A flood of wrong passwords for the owner's account
//! from several addresses (127.0.0.2 to 127.0.0.6: Linux answers the whole of 127/8 on the
//! loopback) used to spend the account's sign-in limit, so that the owner's right password got
//! `429`, and so did their own password change. Now the owner's browser, a known device since
//! its last sign-in, signs in, the signed-in password change goes through, and an attacker's
//! (account, address) pair backs off with a growing `Retry-After`.

use std::net::IpAddr;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use servio_demo_site::DemoAuth;

use super::harness::{Backend, PASSWORD, Platform, SITE_TOKEN, start_site, within};

/// A client whose connections come from `address`.
fn client_from(address: &str) -> reqwest::Client {
    let address: IpAddr = address.parse().unwrap();
    reqwest::Client::builder().local_address(address).build().unwrap()
}

/// Signs in as `email` with `password`; answers the status, the `Retry-After` header (seconds,
/// 0 when absent), the body and every `Set-Cookie` (name=value).
async fn sign_in(
    http: &reqwest::Client,
    platform: &Platform,
    email: &str,
    password: &str,
    cookies: &[String],
) -> (StatusCode, u64, Value, Vec<String>) {
    let mut request = http.post(format!("{}/api/signin", platform.url));
    if !cookies.is_empty() {
        request = request.header("cookie", cookies.join("; "));
    }
    let response = request.json(&json!({ "email": email, "password": password })).send().await.unwrap();
    let status = response.status();
    let retry_after = response.headers().get("retry-after").map_or(0, |v| v.to_str().unwrap().parse().unwrap());
    let set: Vec<String> = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, retry_after, body, set)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_wrong_passwords_does_not_lock_the_owner_out() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    for backend in Backend::all().await {
        let platform = Platform::start(&backend, &site, &[]).await;
        let email = format!("owner-{}@example.com", backend.name());
        platform.user(&email).await;
        let owner = client_from("127.0.0.1");
        // The owner signs in once from their browser: it becomes a known device.
        let (status, _, _, set) = sign_in(&owner, &platform, &email, PASSWORD, &[]).await;
        assert_eq!(status, StatusCode::OK, "{}", backend.name());
        let device: Vec<String> = set.into_iter().filter(|c| c.starts_with("__Host-servio_device=")).collect();
        assert_eq!(device.len(), 1, "{}: the known-device cookie is set", backend.name());

        // Forty wrong passwords from each of five other addresses, at once.
        let flood = async {
            let attackers = (2..=6).map(|n| {
                let (http, email, platform) = (client_from(&format!("127.0.0.{n}")), &email, &platform);
                async move {
                    let mut statuses = Vec::new();
                    for guess in 0..40 {
                        let wrong = format!("wrong password {guess}");
                        statuses.push(sign_in(&http, platform, email, &wrong, &[]).await.0);
                    }
                    statuses
                }
            });
            futures_util::future::join_all(attackers).await
        };
        let answers = within(&platform, "a flood of wrong passwords", Duration::from_secs(60), flood).await;
        let refused = answers.iter().flatten().filter(|s| **s == StatusCode::TOO_MANY_REQUESTS).count();
        assert!(refused > 100, "{}: the flood is mostly refused ({refused} of 200)", backend.name());
        assert!(
            answers.iter().flatten().all(|s| [StatusCode::UNAUTHORIZED, StatusCode::TOO_MANY_REQUESTS].contains(s))
        );

        // The owner, from their known device, signs in with the right password.
        let (status, _, body, set) = sign_in(&owner, &platform, &email, PASSWORD, &device).await;
        assert_eq!(status, StatusCode::OK, "{}: the owner is locked out: {body}", backend.name());
        let session = set.iter().find(|c| c.starts_with("__Host-servio_session=")).unwrap().clone();
        let csrf = body["csrf_token"].as_str().unwrap();

        // ...and changes their password, signed in, whatever the flood did to the account.
        let changed = owner
            .put(format!("{}/api/me/password", platform.url))
            .header("cookie", &session)
            .header("x-csrf-token", csrf)
            .json(&json!({ "current_password": PASSWORD, "new_password": "the owner's new password" }))
            .send()
            .await
            .unwrap();
        assert_eq!(changed.status(), StatusCode::OK, "{}: the password change: {}", backend.name(), changed.status());

        // An attacker's pair waits, longer after each attempt it is let through (on another
        // account, whose own limit the flood above has not spent).
        let attacker = client_from("127.0.0.7");
        let other = format!("other-{}@example.com", backend.name());
        let mut waits = Vec::new();
        for guess in 0..8 {
            let (status, retry_after, _, _) = sign_in(&attacker, &platform, &other, &format!("w{guess}"), &[]).await;
            if status == StatusCode::TOO_MANY_REQUESTS {
                waits.push(retry_after);
                if waits.len() == 2 {
                    break;
                }
                // Waits out the backoff, then guesses once more: the next wait is longer.
                tokio::time::sleep(Duration::from_secs(retry_after)).await;
            }
        }
        assert!(waits.len() == 2 && waits[0] >= 1 && waits[1] > waits[0], "{}: waits {waits:?}", backend.name());
    }
}
