//! Issue 41, finding 11: fetch amplification. 200 `POST /api/vault` of a site already in the
//! user's vault made 200 fetches of its manifest in a tenth of a second, and every Directory
//! claim verification fetched: the platform fetched a site's manifest as fast as anyone asked.
//! Now a site the user holds is refused (`409`) before anything is fetched, and every fetch of
//! a manifest spends one of the site's fetches (`--manifest-fetches-per-site`, 10 a minute),
//! whoever asks: past it the answer is `429` with `Retry-After`.

use std::time::Duration;

use futures_util::future::join_all;
use serde_json::{Value, json};
use servio_demo_site::DemoAuth;

use super::harness::{Backend, Demo, Platform, SITE_TOKEN, User, within};

/// Adds of a site its user already holds, all at once.
const HELD_ADDS: usize = 200;

/// Users adding one site, or verifying their claims on another, all at once.
const MANY: usize = 30;

/// `servio serve`'s default budget: fetches of one site's manifest a minute.
const BUDGET: usize = 10;

/// The requests `site` received for its manifest (the first path discovery asks, which the demo
/// site serves) since it started recording.
fn manifest_fetches(site: &Demo) -> usize {
    site.site.requests().iter().filter(|seen| seen.path == "/.well-known/servio.json").count()
}

/// `count` users made through the store (sign-up is limited per address), each with an API token.
async fn users(platform: &Platform, label: &str, count: usize) -> Vec<User> {
    let store = platform.store().await;
    let mut all = Vec::new();
    for n in 0..count {
        let email = format!("{label}-{n}-{}@example.com", platform.backend.name());
        let (_, token) = super::harness::stored_user(&*store, &email).await;
        all.push(User { email, cookie: String::new(), token });
    }
    all
}

/// `POST path` as `user`: the status, the `Retry-After` seconds and the JSON body.
async fn post(platform: &Platform, user: &User, path: &str, body: Option<Value>) -> (u16, Option<u64>, Value) {
    let mut request = platform.http.post(format!("{}{path}", platform.url)).bearer_auth(&user.token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok());
    (status, retry_after, response.json().await.unwrap_or(Value::Null))
}

/// Asserts that `answers` made at most [`BUDGET`] of `fetches`, each answer a success
/// (`success`) or one fetched and refused by the site's manifest (`422`) when it fetched, and
/// a `429` with `Retry-After` when it did not.
fn assert_within_budget(what: &str, answers: &[(u16, Option<u64>, Value)], fetches: usize, success: u16) {
    assert!(fetches <= BUDGET, "{what}: {fetches} fetches of one site's manifest");
    let fetched = answers.iter().filter(|(status, ..)| [success, 422].contains(status)).count();
    assert_eq!(fetched, fetches, "{what}: every answer that fetched, and only those");
    for (status, retry_after, body) in answers.iter().filter(|(status, ..)| ![success, 422].contains(status)) {
        assert_eq!(*status, 429, "{what}: {body}");
        assert!(retry_after.is_some_and(|s| (1..=60).contains(&s)), "{what}: Retry-After {retry_after:?}");
        let said = body["error"].as_str().unwrap_or_default();
        assert!(said.contains("fetched 10 times in the last minute"), "{what}: {body}");
    }
}

/// Regression: each add of a site the user already held fetched its manifest first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adding_a_held_site_again_and_again_fetches_nothing() {
    let site = super::harness::start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    for backend in Backend::all().await {
        let platform = Platform::start(&backend, &site, &[]).await;
        let user = platform.user(&format!("held-{}@example.com", backend.name())).await;
        platform.add_site(&user, &site).await;
        site.site.record_requests();
        let what = format!("{}: {HELD_ADDS} adds of a held site at once", backend.name());
        let body = json!({ "url": site.origin, "token": SITE_TOKEN });
        let answers = within(&platform, &what, Duration::from_secs(60), async {
            join_all((0..HELD_ADDS).map(|_| post(&platform, &user, "/api/vault", Some(body.clone())))).await
        })
        .await;
        for (status, _, body) in &answers {
            assert_eq!(*status, 409, "{what}: {body}");
        }
        assert_eq!(manifest_fetches(&site), 0, "{what}: the held site was fetched");
    }
}

/// Regression: many users adding one site, or verifying claims on another, made one fetch
/// each, all at once. Now the site's budget bounds the fetches, whoever asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_users_fetch_one_site_within_its_budget() {
    let mut sites = crate::common::start_many(SITE_TOKEN, DemoAuth::Bearer, 2).await;
    let (claimed, added) = (sites.pop().expect("a site to claim"), sites.pop().expect("a site to add"));
    for backend in Backend::all().await {
        let platform = Platform::start(&backend, &added, &[]).await;
        let many = users(&platform, "many", MANY).await;

        added.site.record_requests();
        let what = format!("{}: {MANY} users adding one site at once", backend.name());
        let body = json!({ "url": added.origin, "token": SITE_TOKEN });
        let answers = within(&platform, &what, Duration::from_secs(120), async {
            join_all(many.iter().map(|user| post(&platform, user, "/api/vault", Some(body.clone())))).await
        })
        .await;
        assert_within_budget(&what, &answers, manifest_fetches(&added), 201);

        let mut verify = Vec::new();
        for user in &many {
            let claim = json!({ "url": claimed.origin });
            let (status, claim) =
                platform.send(user, reqwest::Method::POST, "/api/directory/claims", Some(claim)).await;
            assert_eq!(status, 201, "{claim}");
            verify.push(format!("/api/directory/claims/{}/verify", claim["id"]));
        }
        claimed.site.record_requests();
        let what = format!("{}: {MANY} claims on one site verified at once", backend.name());
        let answers = within(&platform, &what, Duration::from_secs(120), async {
            join_all(many.iter().zip(&verify).map(|(user, path)| post(&platform, user, path, None))).await
        })
        .await;
        // The site lists none of their tokens: a verification that fetched is a `422`.
        assert_within_budget(&what, &answers, manifest_fetches(&claimed), 200);
    }
}
