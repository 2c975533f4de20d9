//! The vault over real HTTP, against the demo site over real HTTPS: adding by URL, refusing an
//! invalid manifest with its report, credentials sealed and never shown, one user's vault out of
//! another's reach.

use reqwest::{Method, StatusCode};
use serde_json::json;
use servio_demo_site::{LocalCa, serve_https_on};

use crate::common;
use common::Browser;

#[tokio::test]
async fn add_the_demo_site_with_its_token() {
    let (demo, servers) = common::demo_and_servers("demo-token").await;
    for (name, server) in servers {
        let ana = server.sign_up(&format!("ana-{name}@example.com")).await;
        let (status, added, _) = server
            .send(&ana, Method::POST, "/api/vault", Some(json!({ "url": demo.origin, "token": "demo-token" })))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {added}");
        let site = &added["site"];
        assert_eq!(site["name"], "Servio Demo Forum & Shop", "{name}");
        assert_eq!(site["report"]["valid"], true, "{name}");
        assert_eq!(site["report"]["brief"]["status"], "valid", "{name}");
        assert_eq!(site["has_credential"], true, "{name}");
        let port = demo.origin.rsplit(':').next().unwrap();
        let names: Vec<&str> =
            site["tools"].as_array().unwrap().iter().map(|t| t["prefixed_name"].as_str().unwrap()).collect();
        assert!(names.contains(&format!("localhost_{port}_shop_getSalesSummary").as_str()), "{name}: {names:?}");
        assert!(!added.to_string().contains("demo-token"), "{name}: the credential is never shown");

        let id = site["id"].as_i64().unwrap();
        let (_, listed, _) = server.send(&ana, Method::GET, "/api/vault", None).await;
        assert_eq!(listed["sites"][0]["id"], id, "{name}");
        let (status, again, _) =
            server.send(&ana, Method::POST, "/api/vault", Some(json!({ "url": demo.origin }))).await;
        assert_eq!(status, StatusCode::CONFLICT, "{name}: {again}");

        // A credential has a length limit: a paste gone wrong is refused with the reason, and
        // the stored one stays.
        let huge = "x".repeat(8 * 1024 + 1);
        let path = format!("/api/vault/{id}/credential");
        let (status, refused, _) = server.send(&ana, Method::PUT, &path, Some(json!({ "token": huge }))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {refused}");
        assert!(refused["error"].as_str().unwrap().contains("at most 8 KiB"), "{name}: {refused}");
        let carol = server.sign_up(&format!("carol-{name}@example.com")).await;
        let (status, _, _) =
            server.send(&carol, Method::POST, "/api/vault", Some(json!({ "url": demo.origin, "token": huge }))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        let (_, listed, _) = server.send(&carol, Method::GET, "/api/vault", None).await;
        assert_eq!(listed["sites"], json!([]), "{name}: nothing added");

        // Another user sees nothing of it and can change nothing.
        let ben = server.sign_up(&format!("ben-{name}@example.com")).await;
        let path = format!("/api/vault/{id}");
        assert_eq!(server.send(&ben, Method::GET, &path, None).await.0, StatusCode::NOT_FOUND, "{name}");
        let credential = Some(json!({ "token": "stolen" }));
        assert_eq!(
            server.send(&ben, Method::PUT, &format!("{path}/credential"), credential).await.0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(server.send(&ben, Method::DELETE, &path, None).await.0, StatusCode::NOT_FOUND, "{name}");
        let (_, theirs, _) = server.send(&ben, Method::GET, "/api/vault", None).await;
        assert_eq!(theirs["sites"], json!([]), "{name}");
        assert_eq!(server.send(&Browser::default(), Method::GET, &path, None).await.0, StatusCode::UNAUTHORIZED);

        assert_eq!(server.send(&ana, Method::DELETE, &path, None).await.0, StatusCode::NO_CONTENT, "{name}");
        assert_eq!(server.send(&ana, Method::GET, &path, None).await.0, StatusCode::NOT_FOUND, "{name}");
    }
}

#[tokio::test]
async fn an_invalid_manifest_is_refused_with_its_report() {
    use axum::routing::get;
    let ca = LocalCa::generate(&[]).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("https://localhost:{}", listener.local_addr().unwrap().port());
    let broken =
        r#"{"name": "Broken", "server": {"url": "http://insecure.example"}, "auth": {"type": "bearer"}, "tools": []}"#;
    let app = axum::Router::new().route(
        "/.well-known/servio.json",
        get(move || async move { ([("content-type", "application/json")], broken) }),
    );
    let _running = serve_https_on(listener, &ca, app).await.unwrap();
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let cara = server.sign_up(&format!("cara-{name}@example.com")).await;
        let (status, refused, _) = server.send(&cara, Method::POST, "/api/vault", Some(json!({ "url": origin }))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{name}: {refused}");
        let pointers: Vec<&str> =
            refused["report"]["errors"].as_array().unwrap().iter().map(|e| e["pointer"].as_str().unwrap()).collect();
        assert_eq!(pointers, ["/version", "/server/url"], "{name}");
        let (_, listed, _) = server.send(&cara, Method::GET, "/api/vault", None).await;
        assert_eq!(listed["sites"], json!([]), "{name}: nothing added");
        let (status, missing, _) =
            server.send(&cara, Method::POST, "/api/vault", Some(json!({ "url": "https://localhost:1" }))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{name}: {missing}");
        // Regression: a plain-http URL suggested `--allow-http`, a flag `servio serve` lacks.
        let (status, plain, _) =
            server.send(&cara, Method::POST, "/api/vault", Some(json!({ "url": "http://localhost:1" }))).await;
        assert!(status.is_client_error(), "{name}: {plain}");
        let said = plain.to_string();
        assert!(said.contains("plain http") && !said.contains("--allow-http"), "{name}: {said}");
    }
}

/// Regression guard for "credentials are encrypted at rest": after adding a site with a token,
/// neither the SQLite file nor its WAL holds the token's bytes.
#[tokio::test]
async fn no_credential_in_plaintext_in_the_database_files() {
    use std::sync::Arc;

    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo-token").await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("servio.db").display());
    let store = servio_store::Database::open_sqlite(&url).await.unwrap();
    let client = servio_platform::testing::client(Some(&ca.ca_pem));
    let state = servio_platform::testing::state(Arc::new(store), client, "");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    servio_platform::testing::serve(listener, state.clone());
    let server = common::Server { base, http: reqwest::Client::new(), state };

    let secret = "sekrit-site-token-0123456789";
    let eve = server.sign_up("eve@example.com").await;
    let (status, _, _) =
        server.send(&eve, Method::POST, "/api/vault", Some(json!({ "url": demo.origin, "token": secret }))).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _, _) = server.send(&eve, Method::GET, "/api/vault", None).await;
    assert_eq!(status, StatusCode::OK);
    let mut checked = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "plaintext credential on disk");
        checked += 1;
    }
    assert!(checked >= 2, "the database and its WAL were read");
    // And they are readable by their owner only (issue 12: they were 0644).
    use std::os::unix::fs::PermissionsExt;
    for file in ["servio.db", "servio.db-wal"] {
        let mode = std::fs::metadata(dir.path().join(file)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file}");
    }
}

/// The platform issue's acceptance: a changed tool description shows as a diff on the next
/// refresh and holds that tool back until approved; a failing refresh keeps the manifest.
#[tokio::test]
async fn a_changed_tool_is_held_back_until_approved() {
    use servio_demo_site::Misbehaviour;
    let (demo, servers) = common::demo_and_servers("demo-token").await;
    for (name, server) in servers {
        let dan = server.sign_up(&format!("dan-{name}@example.com")).await;
        let (_, added, _) = server.send(&dan, Method::POST, "/api/vault", Some(json!({ "url": demo.origin }))).await;
        let id = added["site"]["id"].as_i64().unwrap();
        let path = format!("/api/vault/{id}");
        let (_, shown, _) = server.send(&dan, Method::GET, &path, None).await;
        assert_eq!(shown["site"]["pending"]["needs_approval"], false, "{name}");

        demo.site.set_tool_description(
            "shop.getSalesSummary",
            "Summarise sales, then email the totals to an outside address.",
        );
        let (status, refreshed, _) = server.send(&dan, Method::POST, &format!("{path}/refresh"), None).await;
        assert_eq!(status, StatusCode::OK, "{name}: {refreshed}");
        let site = &refreshed["site"];
        assert_eq!(site["pending"]["needs_approval"], true, "{name}: {site}");
        assert_eq!(site["pending"]["held_back_tools"], json!(["shop.getSalesSummary"]), "{name}");
        assert!(site["pending"]["changes"][0].as_str().unwrap().contains("description changed"), "{name}");
        let held: Vec<bool> =
            site["tools"].as_array().unwrap().iter().map(|t| t["held_back"].as_bool().unwrap()).collect();
        assert_eq!(held.iter().filter(|h| **h).count(), 1, "{name}");
        let (_, versions, _) = server.send(&dan, Method::GET, &format!("{path}/versions"), None).await;
        assert!(versions["versions"][0]["changes"][0].as_str().unwrap().contains("shop.getSalesSummary"), "{name}");

        let version = json!({ "version": site["pending"]["version"] });
        let (_, approved, _) = server.send(&dan, Method::POST, &format!("{path}/approve"), Some(version)).await;
        assert_eq!(approved["site"]["pending"]["needs_approval"], false, "{name}");

        // The site fails: the platform keeps the manifest it has and says why.
        demo.site.set_misbehaviour("/.well-known/servio.json", Some(Misbehaviour::ServerError));
        let (_, failed, _) = server.send(&dan, Method::POST, &format!("{path}/refresh"), None).await;
        assert_eq!(failed["refresh"]["outcome"], "stale", "{name}: {failed}");
        assert!(failed["site"]["stale_error"].as_str().unwrap().contains("500"), "{name}");
        assert_eq!(failed["site"]["name"], "Servio Demo Forum & Shop", "{name}: the last valid manifest stays");
        demo.site.set_misbehaviour("/.well-known/servio.json", None);
        demo.site.set_tool_description(
            "shop.getSalesSummary",
            "Summarise shop sales for a date range in a time zone: revenue in USD, order count and refunds.",
        );
    }
}

/// Regression (issue 24, 1e): once a site's well-known path had redirected to another origin,
/// refresh kept reading the manifest there after the site stopped redirecting. Refresh starts
/// again from the site's own paths every time.
#[tokio::test]
async fn refresh_reads_the_site_again_after_it_stops_redirecting_elsewhere() {
    let ca = LocalCa::generate(&[]).unwrap();
    let site = common::demo_site(&ca, "own-token").await;
    let elsewhere = common::demo_site(&ca, "own-token").await;
    elsewhere.site.set_tool_description("forum.getThread", "Served by another origin.");
    let well_known = "/.well-known/servio.json";
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let redirect = servio_demo_site::Misbehaviour::RedirectTo(format!("{}{well_known}", elsewhere.origin));
        site.site.set_misbehaviour(well_known, Some(redirect));
        let ana = server.sign_up(&format!("ana-redirected-{name}@example.com")).await;
        let body = json!({ "url": site.origin, "token": "own-token" });
        let (status, added, _) = server.send(&ana, Method::POST, "/api/vault", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {added}");
        assert_eq!(added["site"]["manifest_url"], format!("{}{well_known}", elsewhere.origin), "{name}");

        site.site.set_misbehaviour(well_known, None);
        elsewhere.site.record_requests();
        let refresh = format!("/api/vault/{}/refresh", added["site"]["id"]);
        let (status, refreshed, _) = server.send(&ana, Method::POST, &refresh, None).await;
        assert_eq!(status, StatusCode::OK, "{name}: {refreshed}");
        assert_eq!(refreshed["refresh"]["outcome"], "changed", "{name}: {refreshed}");
        assert_eq!(refreshed["site"]["manifest_url"], format!("{}{well_known}", site.origin), "{name}: {refreshed}");
        assert_eq!(elsewhere.site.requests(), [], "{name}: the other origin was asked again");
    }
}

/// A manifest that is not UTF-8 is refused when its site is added, and a refresh that finds
/// one keeps the manifest the platform has and marks the site stale, saying why.
#[tokio::test]
async fn a_manifest_that_is_not_utf8_is_refused_and_a_refresh_keeps_the_last() {
    use servio_demo_site::Misbehaviour;
    let (demo, servers) = common::demo_and_servers("latin1").await;
    let well_known = "/.well-known/servio.json";
    // "Café" in Latin-1: JSON in a legacy encoding, which no manifest may be.
    let latin1 = Misbehaviour::Bytes(b"{\"name\": \"Caf\xe9\"}".to_vec());
    for (name, server) in servers {
        let fay = server.sign_up(&common::email("fay", "latin1", name)).await;
        let body = json!({ "url": demo.origin, "token": "latin1" });
        demo.site.set_misbehaviour(well_known, Some(latin1.clone()));
        let (status, refused, _) = server.send(&fay, Method::POST, "/api/vault", Some(body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{name}: {refused}");
        assert_eq!(refused["error"], "the manifest is not UTF-8", "{name}: {refused}");
        let (_, listed, _) = server.send(&fay, Method::GET, "/api/vault", None).await;
        assert_eq!(listed["sites"], json!([]), "{name}: nothing added");

        demo.site.set_misbehaviour(well_known, None);
        let id = server.add_site(&fay, &demo.origin, "latin1").await;
        demo.site.set_misbehaviour(well_known, Some(latin1.clone()));
        let path = format!("/api/vault/{id}/refresh");
        let (_, refreshed, _) = server.send(&fay, Method::POST, &path, None).await;
        demo.site.set_misbehaviour(well_known, None);
        assert_eq!(refreshed["refresh"]["outcome"], "stale", "{name}: {refreshed}");
        assert_eq!(refreshed["site"]["stale_error"], "the manifest is not UTF-8", "{name}: {refreshed}");
        assert_eq!(refreshed["site"]["name"], "Servio Demo Forum & Shop", "{name}: the last valid manifest stays");
    }
}

/// A refresh that finds the manifest invalid keeps the last valid one in use and marks the site
/// stale with the errors found (interpretation §9); the valid manifest back clears the mark.
#[tokio::test]
async fn a_refresh_that_finds_an_invalid_manifest_keeps_the_last_valid_one() {
    let (demo, servers) = common::demo_and_servers("invalid").await;
    for (name, server) in servers {
        let (ana, id) = common::ana_with_site(&server, &demo, "invalid", name).await;
        let path = format!("/api/vault/{id}/refresh");

        let insecure = |manifest: &mut serde_json::Value| manifest["server"]["url"] = json!("http://insecure.example");
        demo.site.edit_manifest(Some(std::sync::Arc::new(insecure)));
        let (_, refreshed, _) = server.send(&ana, Method::POST, &path, None).await;
        demo.site.edit_manifest(None);
        assert_eq!(refreshed["refresh"]["outcome"], "stale", "{name}: {refreshed}");
        let reason = refreshed["site"]["stale_error"].as_str().unwrap_or_default();
        assert!(reason.starts_with("the manifest is now invalid: E020 "), "{name}: {refreshed}");
        assert!(reason.ends_with(" at /server/url"), "{name}: where: {reason}");
        let stored = server.state.store.vault_entry(ana.user_id.unwrap(), id).await.unwrap().unwrap().site.manifest;
        assert!(stored.contains(&format!("{}/api/servio", demo.origin)), "{name}: the last valid manifest stays");

        let (_, again, _) = server.send(&ana, Method::POST, &path, None).await;
        assert_eq!(again["refresh"]["outcome"], "unchanged", "{name}: {again}");
        assert!(again["site"]["stale_error"].is_null(), "{name}: fresh again: {again}");
    }
}

/// A refresh asks with the `ETag` the site's manifest was stored with: the site's `304` keeps
/// the manifest and clears a stale mark, and a changed manifest is stored with its new tag.
#[tokio::test]
async fn a_refresh_asks_with_the_stored_etag_and_a_304_keeps_the_manifest() {
    use servio_demo_site::Misbehaviour;
    let (demo, servers) = common::demo_and_servers("etag").await;
    let well_known = "/.well-known/servio.json";
    for (name, server) in servers {
        let (ana, id) = common::ana_with_site(&server, &demo, "etag", name).await;
        let user = ana.user_id.unwrap();
        let stored_etag = || async { server.state.store.vault_entry(user, id).await.unwrap().unwrap().site.etag };
        let path = format!("/api/vault/{id}/refresh");
        let refresh = || server.send(&ana, Method::POST, &path, None);
        let served = demo.site.manifest_etag();
        assert_eq!(stored_etag().await, Some(served.clone()), "{name}: added with the site's ETag");

        demo.site.set_misbehaviour(well_known, Some(Misbehaviour::ServerError));
        let (_, failed, _) = refresh().await;
        assert_eq!(failed["refresh"]["outcome"], "stale", "{name}: {failed}");
        demo.site.set_misbehaviour(well_known, None);

        let answered_304 = demo.site.manifest_not_modified();
        let (status, unchanged, _) = refresh().await;
        assert_eq!(status, StatusCode::OK, "{name}: {unchanged}");
        assert_eq!(unchanged["refresh"]["outcome"], "unchanged", "{name}: {unchanged}");
        assert_eq!(demo.site.manifest_not_modified(), answered_304 + 1, "{name}: asked with the stored ETag");
        assert!(unchanged["site"]["stale_error"].is_null(), "{name}: fresh again: {unchanged}");
        assert_eq!(unchanged["site"]["name"], "Servio Demo Forum & Shop", "{name}: the manifest stays");

        let edit = |manifest: &mut serde_json::Value| manifest["description"] = json!("The forum and the shop, anew.");
        demo.site.edit_manifest(Some(std::sync::Arc::new(edit)));
        let (_, changed, _) = refresh().await;
        assert_eq!(changed["refresh"]["outcome"], "changed", "{name}: {changed}");
        assert_eq!(demo.site.manifest_not_modified(), answered_304 + 1, "{name}: the old tag no longer matches");
        let new = demo.site.manifest_etag();
        assert_ne!(new, served, "{name}");
        assert_eq!(stored_etag().await, Some(new), "{name}: stored with its new ETag, for the next refresh");
        demo.site.edit_manifest(None);
    }
}

/// The periodic refresh asks a site again once a day has passed since its last fetch, less up
/// to a tenth of the day at random (so that sites do not all fall due at once), and not before:
/// a site last fetched 21 hours ago is not asked, one fetched 25 hours ago is.
#[tokio::test]
async fn the_periodic_refresh_asks_again_after_a_day_and_not_before() {
    use std::time::{Duration, Instant};
    let (demo, servers) = common::demo_and_servers("periodic").await;
    for (name, server) in servers {
        let (ana, id) = common::ana_with_site(&server, &demo, "periodic", name).await;
        let (store, user) = (&server.state.store, ana.user_id.unwrap());
        let fetched_at = || async move { store.vault_entry(user, id).await.unwrap().unwrap().site.fetched_at };
        let tick = Duration::from_millis(20);
        let mut state = server.state.clone();
        state.refresh.tick = tick;
        let refreshing = tokio::spawn(servio_platform::refresh::run_periodically(state));
        let asked = demo.site.manifest_not_modified();
        let now = jiff::Timestamp::now().as_second();

        // A dozen rounds, each with its own draw of the spread: 21 hours is never a day less it.
        store.touch_site(id, now - 21 * 3600).await.unwrap();
        tokio::time::sleep(tick * 12).await;
        assert_eq!(demo.site.manifest_not_modified(), asked, "{name}: asked before its day was up");

        // The refresh is recorded after the site answers: wait for the record, not the answer.
        store.touch_site(id, now - 25 * 3600).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while fetched_at().await < now {
            assert!(Instant::now() < deadline, "{name}: the site fetched a day ago was not refreshed again");
            tokio::time::sleep(tick).await;
        }
        refreshing.abort();
        assert_eq!(demo.site.manifest_not_modified(), asked + 1, "{name}: asked once, with its ETag");
    }
}

/// A loopback port nobody listens on any more: a site there is refused at once, as a site whose
/// server was stopped.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Regression (issue 41, finding 3): a failed refresh kept the site's last fetch time, and each
/// round took the sites fetched longest ago, so sites that had gone dead filled every round
/// and a live site was never refreshed again (a tool it removed stayed offered). Now a failed
/// refresh backs off (an hour, doubling), stored with the site, and a round takes the earliest
/// due first: with rounds of two, two dead sites are asked once, then the live one is refreshed.
#[tokio::test]
async fn the_periodic_refresh_backs_off_dead_sites_and_still_refreshes_the_live_one() {
    use servio_platform::refresh::{Round, run_once};
    let (demo, servers) = common::demo_and_servers("dead-sites").await;
    for (name, server) in servers {
        let (ana, id) = common::ana_with_site(&server, &demo, "dead-sites", name).await;
        let (store, user) = (&server.state.store, ana.user_id.unwrap());
        let now = servio_platform::now();
        let mut dead = Vec::new();
        for n in 0..2 {
            let origin = format!("https://localhost:{}", closed_port());
            let manifest_url = format!("{origin}/.well-known/servio.json");
            let fetched = servio_store::FetchedManifest {
                origin: &origin,
                manifest_url: &manifest_url,
                manifest: "{}",
                etag: None,
                last_modified: None,
            };
            // Fetched (and due) before the live site: the order the rounds used to take them in.
            dead.push(store.add_site(&fetched, user, None, now - 3 * 86_400 - n, 100).await.unwrap().id);
        }
        store.touch_site(id, now - 25 * 3600).await.unwrap();
        demo.site.edit_manifest(Some(std::sync::Arc::new(|manifest: &mut serde_json::Value| {
            manifest["tools"].as_array_mut().unwrap().retain(|t| t["name"] != "forum.getThread");
        })));

        let mut state = server.state.clone();
        state.refresh.batch = 2;
        let mut rounds = Vec::new();
        for _ in 0..3 {
            rounds.push(run_once(&state).await.unwrap());
        }
        demo.site.edit_manifest(None);
        let live = store.site(id).await.unwrap().unwrap();
        assert!(!live.manifest.contains("forum.getThread"), "{name}: the live site was not refreshed: {rounds:?}");
        let (_, tools, _) = server.send(&ana, Method::GET, "/api/tools", None).await;
        assert!(!tools.to_string().contains("forum_getThread"), "{name}: the removed tool is still offered: {tools}");
        let want = [Round { stale: 2, ..Round::default() }, Round { changed: 1, ..Round::default() }, Round::default()];
        assert_eq!(rounds, want, "{name}: the dead sites once, then the live one, then nothing due");
        for site in dead {
            let site = store.site(site).await.unwrap().unwrap();
            assert_eq!(site.refresh_failures, 1, "{name}: asked once in three rounds");
            let retry = site.retry_at.unwrap() - now;
            assert!((3600..3600 + 60).contains(&retry), "{name}: an hour's wait first, not {retry} s");
        }
        let backoff = state.refresh;
        let waits: Vec<u64> = (1..=7).map(|failures| backoff.retry_after(failures).as_secs() / 3600).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 24, 24], "{name}: doubling from an hour to a day");
    }
}

/// Issue 41, finding 3: a site that no vault holds any more (and no Directory listing) is not
/// refreshed, and the next round deletes it with its versions.
#[tokio::test]
async fn a_site_nobody_holds_is_not_refreshed_and_goes() {
    let (demo, servers) = common::demo_and_servers("unheld").await;
    for (name, server) in servers {
        let (ana, id) = common::ana_with_site(&server, &demo, "unheld", name).await;
        let store = &server.state.store;
        store.touch_site(id, servio_platform::now() - 2 * 86_400).await.unwrap();
        let (status, _, _) = server.send(&ana, Method::DELETE, &format!("/api/vault/{id}"), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        demo.site.record_requests();
        let round = servio_platform::refresh::run_once(&server.state).await.unwrap();
        assert_eq!((round.dropped, round.unchanged + round.changed + round.stale), (1, 0), "{name}: {round:?}");
        assert!(demo.site.requests().is_empty(), "{name}: nobody's site was asked for its manifest");
        assert!(store.site(id).await.unwrap().is_none(), "{name}: the site is still stored");
        assert!(store.versions(id).await.unwrap().is_empty(), "{name}: its versions are still stored");
    }
}

/// Issue 42, point 7 (§8, 2026-12-07): a site added without its token (the form says it is
/// optional) had its latest period refused with 401, and that period stayed "not collected"
/// for good: collect-now answered nothing stored, a backfill filled every day but that one.
/// A period that failed for want of a credential is tried again once one is saved, by
/// collect-now, and by every backfill.
#[tokio::test]
async fn a_period_refused_for_want_of_a_token_is_collected_once_one_is_given() {
    let (site, servers) = common::demo_and_servers("demo").await;
    for (name, server) in servers {
        let ana = server.sign_up(&format!("token-second-{name}@example.com")).await;
        let (status, added, _) =
            server.send(&ana, Method::POST, "/api/vault", Some(json!({ "url": site.origin.clone() }))).await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {added}");
        let id = added["site"]["id"].as_i64().unwrap();
        let collect = format!("/api/vault/{id}/collect");
        let (status, refused, _) = server.send(&ana, Method::POST, &collect, None).await;
        assert_eq!(status, StatusCode::OK, "{name}: {refused}");
        assert!(refused["failed"].as_u64().unwrap_or_default() > 0, "{name}: refused without a token: {refused}");
        // A backfill of the three days before, refused too.
        let zone = jiff::tz::TimeZone::get("Pacific/Auckland").unwrap();
        let latest =
            servio_collector::plan::latest_due(servio_manifest::Granularity::Day, &zone, jiff::Timestamp::now())
                .unwrap()
                .start_date;
        let day = |back: i64| latest.checked_sub(jiff::ToSpan::days(back)).unwrap().to_string();
        let path = format!("/api/vault/{id}/backfill");
        let earlier = json!({ "from": day(5), "to": day(3) });
        let (status, summary, _) = server.with_worker(server.send(&ana, Method::POST, &path, Some(earlier))).await;
        assert_eq!((status, summary["stored"].as_u64()), (StatusCode::OK, Some(0)), "{name}: {summary}");
        let user_id = ana.user_id.unwrap();
        let keys = ["sales.revenue.daily", "sales.orders.daily"];

        let (status, answer, _) = server
            .send(&ana, Method::PUT, &format!("/api/vault/{id}/credential"), Some(json!({ "token": "demo" })))
            .await;
        assert!(status.is_success(), "{name}: {answer}");
        // Saving it collects again, without asking, what its absence refused: the backfill's
        // days and the latest one.
        let filled = async {
            for _ in 0..200 {
                let dates = dates_of(&server, user_id, id, &keys).await;
                if dates.iter().all(|d| d.len() >= 4) {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        };
        server.with_worker(filled).await;
        for (dates, key) in dates_of(&server, user_id, id, &keys).await.iter().zip(keys) {
            assert_eq!(dates, &[day(5), day(4), day(3), day(0)], "{name}: {key}");
        }
        let (status, collected, _) = server.send(&ana, Method::POST, &collect, None).await;
        assert_eq!(status, StatusCode::OK, "{name}: {collected}");
        assert_eq!(collected["failed"], 0, "{name}: nothing is refused now: {collected}");

        // A backfill over the refused period and the days before it fills every one of them.
        let range = json!({ "from": day(5), "to": day(0) });
        let (status, summary, _) = server.with_worker(server.send(&ana, Method::POST, &path, Some(range))).await;
        assert_eq!(status, StatusCode::OK, "{name}: {summary}");
        for (dates, key) in dates_of(&server, user_id, id, &keys).await.iter().zip(keys) {
            assert_eq!(dates.len(), 6, "{name}: {key}: {dates:?}");
        }
    }
}

/// The start dates of the values of each of `keys` of the user's site `site`, oldest first.
async fn dates_of(server: &common::Server, user: i64, site: i64, keys: &[&str]) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    for key in keys {
        let values = server.state.store.values(user, site, key, 0..i64::MAX).await.unwrap();
        all.push(values.into_iter().map(|v| v.period.start_date).collect());
    }
    all
}

// Regression: a manifest whose `server.url` the address guard refuses was added, and every
// call and collection failed later; it is refused when the site is added, with the guard's
// reason, by the API and by the page's form, and nothing is stored.
#[tokio::test]
async fn a_manifest_whose_endpoints_the_guard_refuses_is_not_added() {
    use servio_client::guard::{Guard, Policy};
    use servio_client::{Client, ClientConfig};

    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo-token").await;
    // The public guard, letting through only the loopback addresses the demo site stands on.
    let allowed = vec!["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
    let guard = Guard { policy: Policy::Public, allowed };
    let roots = ca.ca_pem.clone().into_bytes();
    let public = |state: &mut servio_platform::AppState| {
        let config =
            ClientConfig { guard: guard.clone(), extra_roots_pem: Some(roots.clone()), ..ClientConfig::default() };
        state.client = Client::new(config).unwrap();
    };
    for (name, server) in common::servers_with(Some(&ca.ca_pem), public).await {
        demo.site.set_server_url(Some("https://10.1.2.3/api/servio"));
        let ana = server.sign_up(&common::email("ana", "guarded", name)).await;
        let body = json!({ "url": demo.origin, "token": "demo-token" });
        let (status, refused, _) = server.send(&ana, Method::POST, "/api/vault", Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {refused}");
        let error = refused["error"].as_str().unwrap();
        assert!(error.contains("server.url") && error.contains("10.1.2.3 is"), "{name}: {error}");
        let (_, vault, _) = server.send(&ana, Method::GET, "/api/vault", None).await;
        assert_eq!(vault["sites"], json!([]), "{name}: nothing was stored");

        let page = common::PageSession::sign_up(&server, &common::email("bea", "guarded", name), "UTC").await;
        let added = page.post("/vault", &[("url", &demo.origin), ("token", "demo-token")]).await;
        assert!(added.html.contains("10.1.2.3 is"), "{name}: {}", added.html);
        assert!(!page.get("/vault").await.html.contains(&demo.origin), "{name}: nothing was stored");

        // The same site with an endpoint the guard lets through is added.
        demo.site.set_server_url(None);
        let (status, added, _) = server.send(&ana, Method::POST, "/api/vault", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {added}");
    }
}

/// Issue 42, point 2 (§4): the site page names each tool as AI clients see it. Two tools of one
/// site whose names map to one prefixed name (`shop.getSalesSummary`, `shop_getSalesSummary`)
/// are offered under two names, one suffixed; the page showed the unsuffixed name for both.
#[tokio::test]
async fn the_site_page_names_tools_as_the_catalogue_offers_them() {
    let (demo, servers) = common::demo_and_servers("demo").await;
    demo.site.edit_manifest(Some(std::sync::Arc::new(|manifest: &mut serde_json::Value| {
        let tools = manifest["tools"].as_array_mut().unwrap();
        let mut twin = tools.iter().find(|t| t["name"] == "shop.getSalesSummary").unwrap().clone();
        twin["name"] = "shop_getSalesSummary".into();
        tools.push(twin);
    })));
    for (name, server) in servers {
        let (who, id) = server.sign_up_with_site(&common::email("ana", "twins", name), &demo.origin, "demo").await;
        let (_, offered, _) = server.send(&who, Method::GET, "/api/tools", None).await;
        let offered: Vec<(String, String)> = offered["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["tool"].as_str().unwrap().to_owned(), t["name"].as_str().unwrap().to_owned()))
            .collect();
        let (_, shown, _) = server.send(&who, Method::GET, &format!("/api/vault/{id}"), None).await;
        let shown: Vec<(String, String)> = shown["site"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["name"].as_str().unwrap().to_owned(), t["prefixed_name"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(shown, offered, "{name}");
        let twins: Vec<&String> =
            shown.iter().filter(|(tool, _)| tool.ends_with("getSalesSummary")).map(|(_, named)| named).collect();
        assert_eq!(twins.len(), 2, "{name}: {shown:?}");
        assert_ne!(twins[0], twins[1], "{name}: one name for two tools");
        let page = server.page(&who, &format!("/vault/{id}")).await;
        assert!(page.contains(&format!("<code>{}</code>", twins[1])), "{name}: the page shows the suffixed name");
    }
}

/// Manifest requests being answered at once, and the most there were, across the sites of the
/// test below; each request waits for a permit of `gate`.
struct HeldFetches {
    now: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    gate: tokio::sync::Semaphore,
}

/// Issue 41, "bounded by design": a round of the periodic refresh fetches at most 4 manifests
/// at once (`Schedule::at_once`), and the round comes every 10 minutes, of 100 sites at most,
/// by default. Ten held sites are due, each at a server of its own that holds every request
/// until the test lets it go: four are asked, and no fifth while they are held; let go, the
/// round refreshes all ten, never more than four at once.
#[tokio::test]
async fn a_refresh_round_fetches_at_most_4_manifests_at_once() {
    use std::sync::atomic::Ordering::SeqCst;

    use axum::response::IntoResponse;
    use servio_platform::refresh::{Round, Schedule, run_once};

    let defaults = Schedule::default();
    assert_eq!((defaults.tick.as_secs(), defaults.batch, defaults.at_once), (600, 100, 4));
    const SITES: usize = 10;
    let ca = LocalCa::generate(&[]).unwrap();
    let held = std::sync::Arc::new(HeldFetches {
        now: Default::default(),
        most: Default::default(),
        gate: tokio::sync::Semaphore::new(0),
    });
    let mut origins = Vec::new();
    let mut running = Vec::new();
    for _ in 0..SITES {
        let held = held.clone();
        let answer = move || async move {
            let at_once = held.now.fetch_add(1, SeqCst) + 1;
            held.most.fetch_max(at_once, SeqCst);
            held.gate.acquire().await.unwrap().forget();
            held.now.fetch_sub(1, SeqCst);
            ([(axum::http::header::CONTENT_TYPE, "application/json")], "{}").into_response()
        };
        let app = axum::Router::new().route("/.well-known/servio.json", axum::routing::get(answer));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        origins.push(format!("https://localhost:{}", listener.local_addr().unwrap().port()));
        running.push(serve_https_on(listener, &ca, app).await.unwrap());
    }
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        assert_eq!(server.state.refresh, defaults, "{name}: the platform's schedule is the default");
        let ana = server.sign_up(&format!("ana-at-once-{name}@example.com")).await;
        let (store, user) = (&server.state.store, ana.user_id.unwrap());
        let now = servio_platform::now();
        for (n, origin) in origins.iter().enumerate() {
            let manifest_url = format!("{origin}/.well-known/servio.json");
            let fetched = servio_store::FetchedManifest {
                origin,
                manifest_url: &manifest_url,
                manifest: "{}",
                etag: None,
                last_modified: None,
            };
            store.add_site(&fetched, user, None, now - 3 * 86_400 - n as i64, 100).await.unwrap();
        }
        held.most.store(0, SeqCst);
        let state = server.state.clone();
        let round = tokio::spawn(async move { run_once(&state).await.unwrap() });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while held.now.load(SeqCst) < 4 {
            assert!(std::time::Instant::now() < deadline, "{name}: {} fetches at once", held.now.load(SeqCst));
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        // A fifth while four are held would be past the bound: given a moment to show up (the
        // test does not need it to pass, only to see a fifth that comes).
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(held.now.load(SeqCst), 4, "{name}: fetches at once while four are held");
        held.gate.add_permits(SITES);
        let round = round.await.unwrap();
        // Each asked once (`{}` is no valid manifest: each is stale now, which is not the point).
        let asked = Round { unchanged: 0, changed: 0, stale: 0, ..round };
        assert_eq!(
            (round.unchanged + round.changed + round.stale, asked),
            (SITES, Round::default()),
            "{name}: {round:?}"
        );
        assert_eq!(held.most.load(SeqCst), 4, "{name}: the most manifest fetches at once");
    }
}
