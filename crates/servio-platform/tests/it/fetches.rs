//! Issue 41, finding 11: fetches of a site's manifest are bounded per site, whoever asks. 200
//! requests adding a site already in the user's vault made 200 fetches of its manifest in a
//! tenth of a second, and every claim verification fetched too. Now a site the user holds is
//! refused before anything is fetched, and every fetch (adding, verifying a claim, testing a
//! manifest, refreshing) spends one of the site's fetches: past its budget the answer is `429`
//! with `Retry-After`, and the periodic refresh puts the site off.

use futures_util::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_demo_site::{LocalCa, LocalSite};
use servio_platform::domain::accounts::secrets::{decoy_hash, new_token, token_hash};

use crate::common::{self, Browser, Server};

/// The budget these tests set: fetches of one site's manifest a minute.
const BUDGET: u32 = 3;

/// The requests `site` received for its manifest (the first path discovery asks, which the demo
/// site serves) since it started recording.
fn manifest_fetches(site: &LocalSite) -> usize {
    site.site.requests().iter().filter(|seen| seen.path == "/.well-known/servio.json").count()
}

/// `count` users made through the store (sign-up is limited per address), each with an API
/// token; `label` keeps them apart from other tests and backends.
async fn users(server: &Server, label: &str, count: usize) -> Vec<Browser> {
    let store = &server.state.store;
    let now = servio_platform::now();
    let mut all = Vec::new();
    for n in 0..count {
        let user = store.create_user(&format!("{label}-{n}@example.com"), decoy_hash(), "UTC", now).await.unwrap();
        let token = new_token("servio_").unwrap();
        store
            .create_api_token(
                user.id,
                "test",
                &token_hash(&token),
                &servio_store::Grant::all_sites(servio_store::Scope::Account),
                (now, 100),
            )
            .await
            .unwrap();
        all.push(Browser { bearer: Some(token), user_id: Some(user.id), ..Browser::default() });
    }
    all
}

/// `POST path` with `body` as `who`: the status, the `Retry-After` seconds and the JSON body.
async fn post(server: &Server, who: &Browser, path: &str, body: Option<Value>) -> (StatusCode, Option<u64>, Value) {
    let mut request = server.http.post(format!("{}{path}", server.base)).bearer_auth(who.bearer.as_deref().unwrap());
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok());
    (status, retry_after, response.json().await.unwrap_or(Value::Null))
}

/// Regression: every add of a site already in the user's vault fetched its manifest before the
/// store refused it. Now it is refused (`409`, as the store says it) before any fetch, however
/// the URL names the site.
#[tokio::test]
async fn adding_a_site_you_have_fetches_nothing() {
    let (demo, servers) = common::demo_and_servers("held").await;
    for (name, server) in servers {
        let (_, _, token) = common::ana_with_token(&server, &demo, "held", name).await;
        let ana = Browser { bearer: Some(token), ..Browser::default() };
        demo.site.record_requests();
        let host = demo.origin.trim_start_matches("https://").to_owned();
        let urls = [demo.origin.clone(), format!("{}/forum/threads?page=2", demo.origin), host];
        let adds = (0..60).map(|n| {
            let body = json!({ "url": urls[n % urls.len()], "token": "held" });
            post(&server, &ana, "/api/vault", Some(body))
        });
        for (status, _, body) in join_all(adds).await {
            assert_eq!(status, StatusCode::CONFLICT, "{name}: {body}");
            assert_eq!(body["error"], "this site in your vault is already taken", "{name}");
        }
        assert_eq!(manifest_fetches(&demo), 0, "{name}: a site the user has was fetched");
    }
}

/// Regression: many users adding one site, or verifying claims on it, fetched its manifest once
/// each, at once. Now at most the site's budget of fetches is made, whoever asks, and the rest
/// are `429` with `Retry-After`; the periodic refresh of a site whose fetches are spent puts
/// it off without a fetch or a failure.
#[tokio::test]
async fn a_burst_of_adds_and_verifications_of_one_site_stays_within_its_budget() {
    let ca = LocalCa::generate(&[]).unwrap();
    let (added, claimed) = (common::demo_site(&ca, "budget").await, common::demo_site(&ca, "budget").await);
    let budget = |state: &mut servio_platform::AppState| {
        let limits =
            servio_platform::throttle::ThrottleConfig { manifest_fetches_per_site: BUDGET, ..Default::default() };
        state.throttle = std::sync::Arc::new(servio_platform::throttle::Throttle::new(&limits));
    };
    for (name, server) in common::servers_with(Some(&ca.ca_pem), budget).await {
        let many = users(&server, &format!("budget-{name}"), 8).await;

        added.site.record_requests();
        let adds = many.iter().map(|who| {
            post(&server, who, "/api/vault", Some(json!({ "url": added.origin.clone(), "token": "budget" })))
        });
        let answers = join_all(adds).await;
        let site_id =
            answers.iter().find_map(|(_, _, body)| body["site"]["id"].as_i64()).expect("one add went through");
        let fetched = manifest_fetches(&added);
        assert!(fetched <= BUDGET as usize, "{name}: {fetched} fetches of one site for {} adds", many.len());
        let added_ok = answers.iter().filter(|(status, ..)| *status == StatusCode::CREATED).count();
        assert_eq!(added_ok, fetched, "{name}: each fetch added the site for its user");
        for (status, retry_after, body) in answers.iter().filter(|(status, ..)| *status != StatusCode::CREATED) {
            assert_eq!(*status, StatusCode::TOO_MANY_REQUESTS, "{name}: {body}");
            assert!(retry_after.is_some_and(|s| (1..=60).contains(&s)), "{name}: Retry-After {retry_after:?}");
            assert!(body["error"].as_str().unwrap().contains("fetched 3 times in the last minute"), "{name}: {body}");
        }

        // A refresh on request of the site is refused by the same budget, before any fetch.
        let holder = answers.iter().position(|(status, ..)| *status == StatusCode::CREATED).expect("a holder");
        let (status, retry_after, body) =
            post(&server, &many[holder], &format!("/api/vault/{site_id}/refresh"), None).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{name}: {body}");
        assert!(retry_after.is_some() && body["error"].as_str().unwrap().contains("fetched 3 times"), "{name}");

        // The periodic refresh of the site whose fetches are spent asks nothing and counts no
        // failure: the site waits until its fetches are back.
        server.state.store.touch_site(site_id, servio_platform::now() - 2 * 86_400).await.unwrap();
        let before = added.site.requests().len();
        assert_eq!(manifest_fetches(&added), fetched, "{name}: the refresh on request fetched");
        let round = servio_platform::refresh::run_once(&server.state).await.unwrap();
        assert_eq!(round.put_off, 1, "{name}: {round:?}");
        assert_eq!(added.site.requests().len(), before, "{name}: a spent site was asked");
        let put_off = server.state.store.site(site_id).await.unwrap().unwrap();
        assert_eq!(put_off.refresh_failures, 0, "{name}: put off, not failed");
        assert!(put_off.retry_at.is_some_and(|at| at > servio_platform::now()), "{name}: {put_off:?}");

        claimed.site.record_requests();
        let mut verifications = Vec::new();
        for who in &many {
            let (status, claim, _) =
                server.send(who, Method::POST, "/api/directory/claims", Some(json!({ "url": claimed.origin }))).await;
            assert_eq!(status, StatusCode::CREATED, "{name}: {claim}");
            verifications.push(format!("/api/directory/claims/{}/verify", claim["id"]));
        }
        let answers = join_all(many.iter().zip(&verifications).map(|(who, path)| post(&server, who, path, None))).await;
        let fetched = manifest_fetches(&claimed);
        assert!(fetched <= BUDGET as usize, "{name}: {fetched} fetches of one site for {} verifications", many.len());
        let statuses: Vec<StatusCode> = answers.iter().map(|(status, ..)| *status).collect();
        let refused = statuses.iter().filter(|status| **status == StatusCode::TOO_MANY_REQUESTS).count();
        assert_eq!(refused, many.len() - fetched, "{name}: every verification not fetched is a 429: {statuses:?}");

        // The statuses answered are the documented ones.
        let (_, document, _) = server.send(&Browser::default(), Method::GET, "/api/openapi.json", None).await;
        for path in ["/api/vault", "/api/vault/{id}/refresh", "/api/directory/claims/{id}/verify"] {
            assert!(document["paths"][path]["post"]["responses"]["429"].is_object(), "{name}: {path} lists no 429");
        }
    }
}

/// Issue 41, "bounded by design": testing a manifest at its URL ("test your manifest") fetches
/// it, and spends the site's fetches as adding it does. Five tests of one site's URL with a
/// budget of [`BUDGET`] fetch it that many times; the others are `429` saying so, before any
/// fetch, and a pasted manifest, which fetches nothing, is still checked.
#[tokio::test]
async fn testing_a_manifest_at_its_url_spends_the_sites_fetches() {
    let ca = LocalCa::generate(&[]).unwrap();
    let tested = common::demo_site(&ca, "tested").await;
    let budget = |state: &mut servio_platform::AppState| {
        let limits =
            servio_platform::throttle::ThrottleConfig { manifest_fetches_per_site: BUDGET, ..Default::default() };
        state.throttle = std::sync::Arc::new(servio_platform::throttle::Throttle::new(&limits));
    };
    for (name, server) in common::servers_with(Some(&ca.ca_pem), budget).await {
        let me = common::PageSession::sign_up(&server, &format!("tester-fetches-{name}@example.com"), "UTC").await;
        let form = |field: &'static str, value: &str| {
            vec![("date", "2026-12-01".to_owned()), ("time_zone", "UTC".to_owned()), (field, value.to_owned())]
        };
        let post = |fields: Vec<(&'static str, String)>| {
            let me = &me;
            async move {
                let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
                me.post("/check", &pairs).await
            }
        };
        tested.site.record_requests();
        let mut statuses = Vec::new();
        for _ in 0..5 {
            let checked = post(form("url", &tested.origin)).await;
            if checked.status == StatusCode::TOO_MANY_REQUESTS {
                assert!(checked.html.contains("fetched 3 times in the last minute"), "{name}: {}", checked.html);
            } else {
                assert!(checked.html.contains(">Valid</span>"), "{name}: {} {}", checked.status, checked.html);
            }
            statuses.push(checked.status);
        }
        assert_eq!(manifest_fetches(&tested), BUDGET as usize, "{name}: {statuses:?}");
        let refused = statuses.iter().filter(|status| **status == StatusCode::TOO_MANY_REQUESTS).count();
        assert_eq!(refused, 5 - BUDGET as usize, "{name}: every test past the budget is a 429: {statuses:?}");
        // The user's own limit of tests (10 at once) is not what refused them.
        let pasted = post(form("manifest", "{}")).await;
        assert_eq!(pasted.status, StatusCode::OK, "{name}: {}", pasted.html);
    }
}
