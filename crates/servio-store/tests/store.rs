//! The same behaviour from both backends: SQLite in a temporary file, and PostgreSQL in a
//! schema of its own when `SERVIO_TEST_DATABASE_URL` is set (CI sets it; elsewhere those runs
//! say they are skipped).

use servio_store::testing::{daily_slot, day_slot};
use servio_store::{Approval, Database, Job, Operations, Session, Store};

/// Sites one user may hold, where a test does not try the bound.
const SITES: i64 = 100;

struct Backend {
    name: &'static str,
    store: Box<dyn Store>,
    _dir: Option<tempfile::TempDir>,
}

/// SQLite in a file (the WAL path), plus every backend of `servio_store::testing`.
async fn backends() -> Vec<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("servio.db").display());
    let mut all = vec![Backend {
        name: "sqlite file",
        store: Box::new(Database::open_sqlite(&url).await.unwrap()),
        _dir: Some(dir),
    }];
    for (name, store) in servio_store::testing::backends().await {
        all.push(Backend { name, store, _dir: None });
    }
    all
}

#[tokio::test]
async fn users_are_unique_by_email() {
    for Backend { name, store, .. } in backends().await {
        let ana = store.create_user("ana@example.com", "$argon2id$x", "Pacific/Auckland", 100).await.unwrap();
        assert_eq!(store.user_by_email("ana@example.com").await.unwrap().as_ref(), Some(&ana), "{name}");
        assert_eq!(store.user(ana.id).await.unwrap().unwrap().time_zone, "Pacific/Auckland", "{name}");
        let again = store.create_user("ana@example.com", "$argon2id$y", "UTC", 101).await.unwrap_err();
        assert!(again.is_conflict(), "{name}: {again}");
        store.set_time_zone(ana.id, "America/Los_Angeles").await.unwrap();
        assert_eq!(store.user(ana.id).await.unwrap().unwrap().time_zone, "America/Los_Angeles", "{name}");
        assert!(store.user_by_email("nobody@example.com").await.unwrap().is_none(), "{name}");
    }
}

#[tokio::test]
async fn sessions_expire_and_end() {
    for Backend { name, store, .. } in backends().await {
        let user = store.create_user("ben@example.com", "h", "UTC", 0).await.unwrap();
        let session = Session { user_id: user.id, csrf_token: "csrf".into(), expires_at: 1_000, idle_seconds: 10_000 };
        store.create_session("hash-1", &session, 0).await.unwrap();
        assert_eq!(store.session("hash-1", 999).await.unwrap(), Some(session.clone()), "{name}");
        assert_eq!(store.session("hash-1", 1_000).await.unwrap(), None, "{name}: expired");
        assert_eq!(store.session("hash-2", 0).await.unwrap(), None, "{name}");
        store.delete_session("hash-1").await.unwrap();
        assert_eq!(store.session("hash-1", 0).await.unwrap(), None, "{name}: ended");
    }
}

/// Regression: a session lived its full 14 days however long it lay unused. Now it also ends
/// after `idle_seconds` without use, and each use (recorded to the hour) pushes that end back.
#[tokio::test]
async fn sessions_end_when_idle_and_use_keeps_them() {
    const DAY: i64 = 24 * 3600;
    for Backend { name, store, .. } in backends().await {
        let user = store.create_user("idle@example.com", "h", "UTC", 0).await.unwrap();
        let session = Session { user_id: user.id, csrf_token: "c".into(), expires_at: 14 * DAY, idle_seconds: 7 * DAY };
        store.create_session("used", &session, 0).await.unwrap();
        store.create_session("left", &session, 0).await.unwrap();
        assert!(store.session("used", 6 * DAY).await.unwrap().is_some(), "{name}: used on day 6");
        assert!(store.session("used", 12 * DAY).await.unwrap().is_some(), "{name}: six days after its last use");
        assert!(store.session("left", 7 * DAY).await.unwrap().is_none(), "{name}: a week unused");
        assert!(store.session("used", 14 * DAY).await.unwrap().is_none(), "{name}: the absolute limit");
    }
}

/// Regression: expired sessions stayed in the table for ever. Purging deletes expired and
/// idled-out ones, at most `limit` at a time, and leaves live ones.
#[tokio::test]
async fn expired_and_idle_sessions_are_purged_in_batches() {
    for Backend { name, store, .. } in backends().await {
        let user = store.create_user("purge@example.com", "h", "UTC", 0).await.unwrap();
        let session =
            |expires_at, idle_seconds| Session { user_id: user.id, csrf_token: "c".into(), expires_at, idle_seconds };
        store.create_session("expired-1", &session(50, 1_000), 0).await.unwrap();
        store.create_session("expired-2", &session(60, 1_000), 0).await.unwrap();
        store.create_session("idle", &session(1_000, 10), 0).await.unwrap();
        store.create_session("live", &session(1_000, 1_000), 0).await.unwrap();
        assert_eq!(store.purge_sessions(100, 2).await.unwrap(), 2, "{name}: a batch of two");
        assert_eq!(store.purge_sessions(100, 2).await.unwrap(), 1, "{name}: the rest");
        assert_eq!(store.purge_sessions(100, 2).await.unwrap(), 0, "{name}: nothing left to purge");
        assert!(store.session("live", 100).await.unwrap().is_some(), "{name}: the live one stays");
    }
}

#[tokio::test]
async fn api_tokens_find_their_owner_only() {
    for Backend { name, store, .. } in backends().await {
        let chen = store.create_user("chen@example.com", "h", "UTC", 0).await.unwrap();
        let dana = store.create_user("dana@example.com", "h", "UTC", 0).await.unwrap();
        let token = store
            .create_api_token(
                chen.id,
                "laptop",
                "token-hash",
                &servio_store::Grant::all_sites(servio_store::Scope::Account),
                (5, 100),
            )
            .await
            .unwrap();
        assert_eq!(store.user_by_api_token("token-hash", 7).await.unwrap().map(|(u, _)| u.id), Some(chen.id), "{name}");
        assert_eq!(store.api_tokens(chen.id).await.unwrap()[0].last_used_at, Some(7), "{name}");
        assert!(store.api_tokens(dana.id).await.unwrap().is_empty(), "{name}");
        assert!(!store.delete_api_token(dana.id, token.id).await.unwrap(), "{name}: not hers to delete");
        assert!(store.delete_api_token(chen.id, token.id).await.unwrap(), "{name}");
        assert!(store.user_by_api_token("token-hash", 8).await.unwrap().is_none(), "{name}");
    }
}

#[tokio::test]
async fn vaults_hold_sites_per_user_with_their_credentials() {
    use servio_store::FetchedManifest;
    for Backend { name, store, .. } in backends().await {
        let eve = store.create_user("eve@example.com", "h", "UTC", 0).await.unwrap();
        let fay = store.create_user("fay@example.com", "h", "UTC", 0).await.unwrap();
        let fetched = FetchedManifest {
            origin: "https://shop.example",
            manifest_url: "https://shop.example/.well-known/servio.json",
            manifest: "{\"name\": \"v1\"}",
            etag: Some("\"1\""),
            last_modified: None,
        };
        let site = store.save_site(&fetched, 10).await.unwrap();
        store.add_to_vault(eve.id, site.id, 11).await.unwrap();
        assert!(store.add_to_vault(eve.id, site.id, 12).await.unwrap_err().is_conflict(), "{name}");
        let again = store.save_site(&FetchedManifest { manifest: "{\"name\": \"v2\"}", ..fetched }, 20).await.unwrap();
        assert_eq!(
            (again.id, again.manifest.as_str(), again.fetched_at),
            (site.id, "{\"name\": \"v2\"}", 20),
            "{name}"
        );

        assert_eq!(store.vault(eve.id).await.unwrap().len(), 1, "{name}");
        assert!(store.vault(fay.id).await.unwrap().is_empty(), "{name}");
        assert!(store.vault_entry(fay.id, site.id).await.unwrap().is_none(), "{name}: not hers");
        assert!(!store.set_credential(fay.id, site.id, Some(b"x")).await.unwrap(), "{name}: not hers");
        assert!(store.set_credential(eve.id, site.id, Some(&[1, 2, 3])).await.unwrap(), "{name}");
        let entry = store.vault_entry(eve.id, site.id).await.unwrap().unwrap();
        assert_eq!(entry.credential, Some(vec![1, 2, 3]), "{name}");
        assert_eq!(entry.approved_manifest.as_deref(), Some("{\"name\": \"v1\"}"), "{name}: approved as added");
        let versions = store.versions(site.id).await.unwrap();
        assert_eq!(versions.len(), 2, "{name}");
        assert_eq!(store.approve(eve.id, site.id, versions[0].id).await.unwrap(), Approval::Done, "{name}");
        let entry = store.vault_entry(eve.id, site.id).await.unwrap().unwrap();
        assert_eq!(entry.approved_manifest.as_deref(), Some("{\"name\": \"v2\"}"), "{name}: approved the current one");
        let refused = store.approve(fay.id, site.id, versions[0].id).await.unwrap();
        assert_eq!(refused, Approval::NotInVault, "{name}: not hers");
        assert_eq!(store.sites_due(21, 1, 10).await.unwrap().len(), 1, "{name}: a second after its fetch");
        assert!(store.sites_due(20, 1, 10).await.unwrap().is_empty(), "{name}");
        store.mark_stale(site.id, "503 from the site", 25).await.unwrap();
        let stale = &store.vault(eve.id).await.unwrap()[0];
        assert_eq!(stale.stale_error.as_deref(), Some("503 from the site"), "{name}");
        assert_eq!((stale.refresh_failures, stale.retry_at), (1, Some(25)), "{name}");
        assert!(store.sites_due(24, 1, 10).await.unwrap().is_empty(), "{name}: backing off");
        assert_eq!(store.sites_due(25, 1, 10).await.unwrap().len(), 1, "{name}: due again at its retry");
        store.touch_site(site.id, 30).await.unwrap();
        let touched = &store.vault(eve.id).await.unwrap()[0];
        assert_eq!((touched.fetched_at, touched.stale_error.as_deref()), (30, None), "{name}");
        assert_eq!((touched.refresh_failures, touched.retry_at), (0, None), "{name}: answering again");
        let same = store.save_site(&FetchedManifest { manifest: "{\"name\": \"v2\"}", ..fetched }, 40).await.unwrap();
        assert_eq!(same.fetched_at, 40, "{name}");
        assert_eq!(store.versions(site.id).await.unwrap().len(), 2, "{name}: an unchanged manifest is no new version");
        assert!(!store.remove_from_vault(fay.id, site.id).await.unwrap(), "{name}");
        assert!(store.remove_from_vault(eve.id, site.id).await.unwrap(), "{name}");
        assert!(store.vault(eve.id).await.unwrap().is_empty(), "{name}");
    }
}

/// Regression (issue 41, finding 3): a failed refresh kept the site's last fetch time, and the
/// due sites came oldest fetch first, so the same failing sites filled every round for ever and
/// a live site was never refreshed again. Now a failed site waits for its `retry_at` and the
/// earliest due come first; a put-off site counts no failure; only held sites (a vault entry,
/// a listing) are due, and the others are deleted with what hangs on them.
#[tokio::test]
async fn failing_sites_back_off_behind_live_ones_and_unheld_sites_go() {
    use servio_store::{Listing, StartedConnect, ToolCall};
    for Backend { name, store, .. } in backends().await {
        let ana =
            store.create_user(&format!("dead-{}@example.com", name.replace(' ', "-")), "h", "UTC", 0).await.unwrap();
        let save = |origin: &'static str, at: i64| {
            let store = &store;
            async move { store.save_site(&fetched_manifest(origin, &format!("{origin}/servio.json"), "{}"), at).await }
        };
        let dead =
            [save("https://dead-1.example", 0).await.unwrap().id, save("https://dead-2.example", 0).await.unwrap().id];
        let live = save("https://live.example", 10).await.unwrap().id;
        for site in dead.into_iter().chain([live]) {
            store.add_to_vault(ana.id, site, 10).await.unwrap();
        }
        let listed = save("https://listed.example", 0).await.unwrap().id;
        let claim = store.create_claim(ana.id, "https://listed.example", "wmcp_verify_l", 0, 50).await.unwrap();
        let listing = Listing {
            site_id: listed,
            claim_id: claim.id,
            listed: true,
            suspended_reason: None,
            name: "Listed".into(),
            description: String::new(),
            tools: String::new(),
            verified_at: 0,
        };
        store.save_listing(&listing).await.unwrap();
        let gone = save("https://gone.example", 0).await.unwrap().id;
        let ids = |sites: Vec<servio_store::SiteRecord>| sites.into_iter().map(|s| s.id).collect::<Vec<_>>();

        // Due an interval (50) after their fetch, the earliest first; nobody holds `gone`.
        assert_eq!(ids(store.sites_due(100, 50, 2).await.unwrap()), dead, "{name}: the oldest due first");
        for site in dead {
            store.mark_stale(site, "connection refused", 200).await.unwrap();
        }
        assert_eq!(ids(store.sites_due(100, 50, 2).await.unwrap()), [listed, live], "{name}: the failed ones wait");
        let due = ids(store.sites_due(200, 50, 10).await.unwrap());
        assert_eq!(due, [listed, live, dead[0], dead[1]], "{name}: by due time, the retries after");
        store.put_off_refresh(live, 300).await.unwrap();
        assert_eq!(ids(store.sites_due(250, 50, 10).await.unwrap()), [listed, dead[0], dead[1]], "{name}: put off");
        let put_off = store.site(live).await.unwrap().unwrap();
        assert_eq!((put_off.refresh_failures, put_off.retry_at, put_off.stale_error), (0, Some(300), None), "{name}");

        // What hangs on a site nobody holds goes with it; the call log keeps its calls.
        let connect = StartedConnect {
            state_hash: format!("gone-{name}"),
            user_id: ana.id,
            site_id: gone,
            sealed: vec![1],
            created_at: 0,
            expires_at: 1_000,
        };
        store.keep_started_connect(&connect, 5, 0).await.unwrap();
        enqueue_days(store.as_ref(), (ana.id, gone), 0..2, "2026-08-20", 10_000).await;
        let call = ToolCall { site_id: Some(gone), ..servio_store::testing::tool_call(ana.id, "t", 5) };
        store.log_tool_calls(&[call]).await.unwrap();
        assert_eq!(store.pending_jobs(ana.id, gone).await.unwrap(), 2, "{name}");
        let fresh = save("https://fresh.example", 90).await.unwrap().id;
        assert_eq!(store.drop_unheld_sites(50, 10).await.unwrap(), 1, "{name}: only the old unheld one");
        assert!(store.site(gone).await.unwrap().is_none(), "{name}");
        assert!(store.versions(gone).await.unwrap().is_empty(), "{name}: its versions went");
        assert_eq!(store.take_started_connect(&connect.state_hash, ana.id, 1).await.unwrap(), None, "{name}");
        assert_eq!(store.pending_jobs(ana.id, gone).await.unwrap(), 0, "{name}: its jobs went");
        let calls = store.tool_calls(ana.id, servio_store::CallPage { before: None, limit: 10 }).await.unwrap();
        assert_eq!(calls.iter().map(|c| c.site_id).collect::<Vec<_>>(), [None], "{name}: the call stays");
        assert!(store.site(fresh).await.unwrap().is_some(), "{name}: fetched since, being added maybe");

        // A site leaves the last vault that held it: it is due no more, and goes.
        assert!(store.remove_from_vault(ana.id, dead[0]).await.unwrap(), "{name}");
        assert_eq!(ids(store.sites_due(250, 50, 10).await.unwrap()), [listed, dead[1]], "{name}");
        assert_eq!(store.drop_unheld_sites(50, 10).await.unwrap(), 1, "{name}");
        assert!(store.site(dead[0]).await.unwrap().is_none(), "{name}");
        assert!(store.site(listed).await.unwrap().is_some(), "{name}: a listing holds its site");
    }
}

/// Interpretation §9: an approval names the version the user reviewed, and a refresh advances
/// approvals to exactly the text it judged, whatever another process saved meanwhile.
#[tokio::test]
async fn approvals_are_bound_to_the_text_judged() {
    use servio_store::FetchedManifest;
    for Backend { name, store, .. } in backends().await {
        let gus = store.create_user("gus@example.com", "h", "UTC", 0).await.unwrap();
        let hal = store.create_user("hal@example.com", "h", "UTC", 0).await.unwrap();
        let fetched = |manifest| {
            fetched_manifest("https://race.example", "https://race.example/.well-known/servio.json", manifest)
        };
        let site = store.save_site(&fetched("v1"), 10).await.unwrap();
        for user in [&gus, &hal] {
            store.add_to_vault(user.id, site.id, 11).await.unwrap();
        }
        // A refresh judged v2 (no approval needed), but another process saved v3 (a new
        // server.url) before the refresh advanced the approvals.
        store.save_site(&fetched("v2"), 20).await.unwrap();
        store.save_site(&fetched("v3"), 21).await.unwrap();
        let advanced = store.advance_approvals(site.id, "v1", "v2").await.unwrap();
        assert_eq!(advanced, [gus.id, hal.id], "{name}");
        let approved = store.vault_entry(gus.id, site.id).await.unwrap().unwrap().approved_manifest;
        assert_eq!(approved.as_deref(), Some("v2"), "{name}: exactly the judged text, not the site's newest");
        assert!(store.advance_approvals(site.id, "v1", "v2").await.unwrap().is_empty(), "{name}: guarded by v1");

        // Approving names a version: one that is no longer current is refused, with the current.
        let versions = store.versions(site.id).await.unwrap();
        let (v3, v2) = (versions[0].id, versions[1].id);
        let refused = store.approve(gus.id, site.id, v2).await.unwrap();
        assert!(matches!(&refused, Approval::NotCurrent { current: Some(c) } if c.id == v3), "{name}: {refused:?}");
        let entry = store.vault_entry(gus.id, site.id).await.unwrap().unwrap();
        assert_eq!(entry.approved_manifest.as_deref(), Some("v2"), "{name}: a refusal changes nothing");
        assert_eq!(store.current_version(site.id).await.unwrap().map(|v| v.id), Some(v3), "{name}");

        // Keeping the approved version records the version set aside, until approval.
        assert_eq!(store.keep_approved(hal.id, site.id, v3).await.unwrap(), Approval::Done, "{name}");
        let entry = store.vault_entry(hal.id, site.id).await.unwrap().unwrap();
        assert_eq!((entry.approved_manifest.as_deref(), entry.kept_version), (Some("v2"), Some(v3)), "{name}");
        assert_eq!(store.current_versions(hal.id).await.unwrap(), [(site.id, v3)], "{name}");
        assert_eq!(store.approve(hal.id, site.id, v3).await.unwrap(), Approval::Done, "{name}");
        let entry = store.vault_entry(hal.id, site.id).await.unwrap().unwrap();
        assert_eq!((entry.approved_manifest.as_deref(), entry.kept_version), (Some("v3"), None), "{name}");
        let other = store.save_site(&FetchedManifest { origin: "https://other.example", ..fetched("o1") }, 30).await;
        let other_version = store.current_version(other.unwrap().id).await.unwrap().unwrap().id;
        let refused = store.approve(gus.id, site.id, other_version).await.unwrap();
        assert!(matches!(refused, Approval::NotCurrent { .. }), "{name}: another site's version");
    }
}

#[tokio::test]
async fn the_directory_lists_verified_sites_and_searches_them() {
    use servio_store::Listing;
    for Backend { name, store, .. } in backends().await {
        let gil = store.create_user("gil@example.com", "h", "UTC", 0).await.unwrap();
        let claim = store
            .create_claim(gil.id, "https://forum.example", "wmcp_verify_00112233445566778899aabbccddeeff", 1, 50)
            .await
            .unwrap();
        assert!(
            store
                .create_claim(gil.id, "https://forum.example", "wmcp_verify_x", 2, 50)
                .await
                .unwrap_err()
                .is_conflict(),
            "{name}"
        );
        assert_eq!(store.claims(gil.id).await.unwrap(), std::slice::from_ref(&claim), "{name}");
        assert_eq!(store.claims_on("https://forum.example").await.unwrap().len(), 1, "{name}");
        let fetched = fetched_manifest("https://forum.example", "https://forum.example/servio.json", "{}");
        let site = store.save_site(&fetched, 3).await.unwrap();
        let mut listing = Listing {
            site_id: site.id,
            claim_id: claim.id,
            listed: true,
            suspended_reason: None,
            name: "Rustacean Forum".into(),
            description: "A community of systems programmers".into(),
            tools: "forum.searchThreads: Search threads by keyword".into(),
            verified_at: 3,
        };
        store.save_listing(&listing).await.unwrap();
        for query in ["rustacean", "RUST", "systems programmers", "searchthreads", "keyword", "", "  "] {
            let found = store.search(query, 10).await.unwrap();
            assert_eq!(found.len(), 1, "{name}: {query:?}");
            assert_eq!(found[0].origin, "https://forum.example", "{name}");
        }
        for query in ["python", "rust python", "\"; DROP TABLE listings; --", "forum* OR"] {
            let found = store.search(query, 10).await.unwrap();
            assert!(query.contains("forum") || found.is_empty(), "{name}: {query:?}");
        }
        listing.listed = false;
        listing.suspended_reason = Some("the token is gone from the manifest".into());
        store.save_listing(&listing).await.unwrap();
        assert!(store.search("rustacean", 10).await.unwrap().is_empty(), "{name}: suspended");
        assert_eq!(
            store.listing(site.id).await.unwrap().unwrap().suspended_reason.as_deref(),
            Some("the token is gone from the manifest")
        );
    }
}

#[tokio::test]
async fn one_value_per_slot_and_every_attempt_logged() {
    use servio_store::{AttemptOutcome, CollectionResult, Slot};
    for Backend { name, store, .. } in backends().await {
        let hal = store.create_user("hal@example.com", "h", "UTC", 0).await.unwrap();
        let fetched = fetched_manifest("https://s.example", "https://s.example/servio.json", "{}");
        let site = store.save_site(&fetched, 0).await.unwrap();
        let slot = daily_slot(hal.id, site.id, "sales.revenue.daily", (1_000, 87_400), "2026-08-20");
        store
            .record_result(&slot, &CollectionResult::Stored { value: 2340.0, raw: "\"$2,340.00\"", source: None }, 5)
            .await
            .unwrap();
        let source = Some(r#"{"tool":"shop.getSalesSummary"}"#);
        store
            .record_result(&slot, &CollectionResult::Stored { value: 2341.5, raw: "2341.5", source }, 6)
            .await
            .unwrap();
        let later = Slot { period_start: 87_400, start_date: "2026-08-21", period_key: "2026-08-21", ..slot.clone() };
        let dropped = CollectionResult::Dropped { reason: "the value is null", raw: Some("null") };
        store.record_result(&later, &dropped, 7).await.unwrap();

        let values = store.values(hal.id, site.id, "sales.revenue.daily", 0..i64::MAX).await.unwrap();
        assert_eq!(values.len(), 1, "{name}: replaced, not duplicated");
        assert_eq!((values[0].value, values[0].raw.as_str()), (2341.5, "2341.5"), "{name}");
        assert_eq!(values[0].source.as_deref(), source, "{name}: what the value was read from");
        let attempts = store.attempts(hal.id, site.id, 10).await.unwrap();
        assert_eq!(attempts.len(), 3, "{name}");
        assert_eq!(
            (attempts[0].outcome, attempts[0].reason.as_deref()),
            (AttemptOutcome::Dropped, Some("the value is null")),
            "{name}"
        );
        assert!(
            store.values(hal.id, site.id, "sales.revenue.daily", 2_000..i64::MAX).await.unwrap().is_empty(),
            "{name}: a dropped value is no value"
        );
        assert!(store.values(hal.id, site.id, "sales.revenue.daily", 0..1_000).await.unwrap().is_empty(), "{name}");
        // The period without a value, with its latest attempt; none past the range's end.
        let unfilled = store.unfilled_periods(hal.id, site.id, "sales.revenue.daily", 0..i64::MAX).await.unwrap();
        let found: Vec<_> = unfilled.iter().map(|u| (u.period_start, u.outcome, u.reason.as_deref())).collect();
        assert_eq!(found, [(87_400, AttemptOutcome::Dropped, Some("the value is null"))], "{name}");
        assert!(store.unfilled_periods(hal.id, site.id, "sales.revenue.daily", 0..87_400).await.unwrap().is_empty());
        // The same, read for several sites and metrics at once (the dashboard's views).
        let keys = ["sales.revenue.daily", "sales.orders.daily"];
        let all = store.values_in(hal.id, &[site.id, site.id + 1000], &keys, 0..i64::MAX).await.unwrap();
        assert_eq!(all.iter().map(|v| (v.site_id, &v.value)).collect::<Vec<_>>(), [(site.id, &values[0])], "{name}");
        assert!(store.values_in(hal.id, &[site.id], &keys, 2_000..i64::MAX).await.unwrap().is_empty(), "{name}");
        let all = store.unfilled_in(hal.id, &[site.id], &keys, 0..i64::MAX).await.unwrap();
        let found: Vec<_> = all.iter().map(|u| (u.site_id, u.metric_key.as_str(), &u.period)).collect();
        assert_eq!(found, [(site.id, "sales.revenue.daily", &unfilled[0])], "{name}");
        assert!(store.unfilled_in(hal.id, &[site.id], &keys, 0..87_400).await.unwrap().is_empty(), "{name}");
        assert!(store.unfilled_in(hal.id, &[], &keys, 0..i64::MAX).await.unwrap().is_empty(), "{name}");
    }
}

#[tokio::test]
async fn retries_count_transient_failures_of_one_slot() {
    use servio_store::{AttemptOutcome, CollectionResult, Retries, Slot};
    for Backend { name, store, .. } in backends().await {
        let ida = store.create_user("ida@example.com", "h", "UTC", 0).await.unwrap();
        let fetched = fetched_manifest("https://r.example", "https://r.example/servio.json", "{}");
        let site = store.save_site(&fetched, 0).await.unwrap();
        let slot = daily_slot(ida.id, site.id, "sales.orders.daily", (1_000, 87_400), "2026-08-20");
        assert_eq!(store.retries(&slot).await.unwrap(), Retries::default(), "{name}");
        let retry = |reason, retry_at| CollectionResult::Retry { reason, retry_at, not_before: None };
        store.record_result(&slot, &retry("the tool answered 503", Some(900)), 100).await.unwrap();
        store.record_result(&slot, &retry("connection refused", None), 400).await.unwrap();
        let dropped = CollectionResult::Dropped { reason: "not a number", raw: Some("\"n/a\"") };
        store.record_result(&slot, &dropped, 500).await.unwrap();
        let other = Slot { period_start: 87_400, start_date: "2026-08-21", period_key: "2026-08-21", ..slot.clone() };
        store.record_result(&other, &retry("the tool answered 429", Some(5_000)), 600).await.unwrap();

        let retries = store.retries(&slot).await.unwrap();
        assert_eq!(retries, Retries { failures: 2, last_at: Some(400), retry_at: Some(900) }, "{name}");
        let attempts = store.attempts(ida.id, site.id, 10).await.unwrap();
        assert_eq!(
            attempts.iter().filter(|a| a.outcome == AttemptOutcome::Retry).count(),
            3,
            "{name}: retries are in the log"
        );
    }
}

/// Seeding many values at once: one transaction, and a slot stored twice keeps the later value,
/// as `record_result` would.
#[tokio::test]
async fn many_values_are_stored_in_one_go() {
    use servio_store::Slot;
    for Backend { name, store, .. } in backends().await {
        let ida = store.create_user("ida@example.com", "h", "UTC", 0).await.unwrap();
        let fetched = fetched_manifest("https://bulk.example", "https://bulk.example/servio.json", "{}");
        let site = store.save_site(&fetched, 0).await.unwrap();
        let dates: Vec<String> = (1..=30).map(|day| format!("2026-09-{day:02}")).collect();
        let mut values: Vec<(Slot<'_>, f64, &str)> = dates
            .iter()
            .enumerate()
            .map(|(i, date)| {
                let start = i as i64 * 86_400;
                let slot = daily_slot(ida.id, site.id, "sales.orders.daily", (start, start + 86_400), date);
                (slot, i as f64, "n")
            })
            .collect();
        values.push((values[0].0.clone(), 99.0, "again"));
        store.store_values(&values, 1).await.unwrap();
        let stored = store.values(ida.id, site.id, "sales.orders.daily", 0..i64::MAX).await.unwrap();
        assert_eq!(stored.len(), 30, "{name}");
        assert_eq!((stored[0].value, stored[0].raw.as_str()), (99.0, "again"), "{name}: the later one wins");
        assert_eq!((stored[29].value, stored[29].period.start_date.as_str()), (29.0, "2026-09-30"), "{name}");
        assert!(store.attempts(ida.id, site.id, 10).await.unwrap().is_empty(), "{name}: no attempts logged");
    }
}

/// The dashboard's one query of values: every (site, key) combination asked for, from the
/// range's start, ordered by site, key and start, every double read back exactly, each with
/// its raw text.
#[tokio::test]
async fn values_in_several_metrics_in_one_query() {
    for Backend { name, store, .. } in backends().await {
        let jo = store.create_user("jo@example.com", "h", "UTC", 0).await.unwrap();
        let mut sites = Vec::new();
        for origin in ["https://a.example", "https://b.example"] {
            let manifest_url = format!("{origin}/servio.json");
            let fetched = fetched_manifest(origin, &manifest_url, "{}");
            sites.push(store.save_site(&fetched, 0).await.unwrap().id);
        }
        // Doubles that travel as millionths and doubles that do not.
        let awkward = [2340.0, 0.1 + 0.2, 1e-300, 123_456.789, -0.0, f64::MAX, 0.07, -1234.25, 1e-7, 9.3e15, 1.5];
        let dates: Vec<String> = (0..awkward.len()).map(|day| format!("2026-09-{:02}", day + 1)).collect();
        let raws: Vec<String> = (0..awkward.len()).map(|day| format!("\"x{day}\" \n,]")).collect();
        let mut values = Vec::new();
        for (site, key) in [(sites[0], "a.one"), (sites[0], "a.two"), (sites[1], "a.one"), (sites[1], "b.raw")] {
            // Stored newest first, to see the order come from the store.
            for (day, value) in awkward.iter().enumerate().rev() {
                let start = day as i64 * 86_400;
                let slot = daily_slot(jo.id, site, key, (start, start + 86_400), &dates[day]);
                values.push((slot, *value, raws[day].as_str()));
            }
        }
        store.store_values(&values, 3).await.unwrap();
        let got = store.values_in(jo.id, &[sites[0], sites[1]], &["a.one", "b.raw"], 86_400..i64::MAX).await.unwrap();
        let wanted = [(sites[0], "a.one"), (sites[1], "b.raw")];
        let got: Vec<_> = got.iter().filter(|v| wanted.contains(&(v.site_id, v.value.metric_key.as_str()))).collect();
        let shape: Vec<(i64, &str, i64, u64)> = got
            .iter()
            .map(|v| (v.site_id, v.value.metric_key.as_str(), v.value.period.start, v.value.value.to_bits()))
            .collect();
        // Exactly what asking pair by pair gives (SQLite itself keeps -0.0 as 0.0, either way).
        let mut want = Vec::new();
        for (site, key) in [(sites[0], "a.one"), (sites[1], "b.raw")] {
            for v in store.values(jo.id, site, key, 86_400..i64::MAX).await.unwrap() {
                want.push((site, key, v.period.start, v.value.to_bits()));
            }
        }
        assert_eq!(want.len(), 20, "{name}");
        let exact: Vec<u64> = awkward[1..].iter().filter(|v| **v != 0.0).map(|v| v.to_bits()).collect();
        assert!(exact.iter().all(|bits| shape.iter().any(|s| s.3 == *bits)), "{name}: doubles read back exactly");
        assert_eq!(shape, want, "{name}");
        assert_eq!(got[0].value.period.start_date, "2026-09-02", "{name}");
        assert_eq!(got[got.len() - 1].value.raw, raws[awkward.len() - 1], "{name}: each value's raw text");
        assert!(store.values_in(jo.id, &[], &["a.one"], 0..i64::MAX).await.unwrap().is_empty(), "{name}");
    }
}

/// The dashboard's packed read (issue 42: full rows made it 10 times slower): the same values as
/// `values_in`, numbers read back exactly, whole millionths or not (random doubles of every
/// exponent), without their raw text and source; and `values_at` the whole rows of a few.
#[tokio::test]
async fn numbers_in_reads_the_values_of_values_in_without_their_heavy_parts() {
    use servio_store::PeriodKeys;
    for Backend { name, store, .. } in backends().await {
        let lu = store.create_user("lu@example.com", "h", "UTC", 0).await.unwrap();
        let fetched = fetched_manifest("https://a.example", "https://a.example/servio.json", "{}");
        let site = store.save_site(&fetched, 0).await.unwrap().id;
        let mut bits: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut doubles =
            vec![2340.0, 0.1 + 0.2, 1e-300, 123_456.789, f64::MAX, 0.07, -1234.25, 1e-7, 9.3e15, 1.0 / 3.0];
        while doubles.len() < 300 {
            // xorshift: doubles of every exponent; NaN and infinities are never stored.
            bits ^= bits << 13;
            bits ^= bits >> 7;
            bits ^= bits << 17;
            let double = f64::from_bits(bits);
            if double.is_finite() {
                doubles.push(double);
            }
        }
        let dates: Vec<String> = (0..doubles.len()).map(|day| format!("day-{day}")).collect();
        let mut values = Vec::new();
        for (key, raw) in [("k.one", "1"), ("k.two", "\"two\"")] {
            for (day, value) in doubles.iter().enumerate() {
                let start = day as i64 * 86_400;
                values.push((daily_slot(lu.id, site, key, (start, start + 86_400), &dates[day]), *value, raw));
            }
        }
        store.store_values(&values, 3).await.unwrap();
        let keys = ["k.one", "k.two"];
        let whole = store.values_in(lu.id, &[site], &keys, 0..i64::MAX).await.unwrap();
        let shape = |v: &servio_store::SiteValue| {
            let period = &v.value.period;
            (
                v.site_id,
                v.value.metric_key.clone(),
                period.start,
                period.start_date.clone(),
                period.key.clone(),
                v.value.value.to_bits(),
            )
        };
        let want: Vec<_> = whole.iter().map(shape).collect();
        for keyed in [PeriodKeys::Dates, PeriodKeys::Stored] {
            let numbers = store.numbers_in(lu.id, (&[site], &keys), 0..i64::MAX, keyed).await.unwrap();
            let got: Vec<_> = numbers
                .iter()
                .flat_map(|metric| {
                    metric.numbers.iter().map(|n| {
                        (
                            metric.site_id,
                            metric.metric_key.clone(),
                            n.start,
                            n.start_date.clone(),
                            n.key().to_owned(),
                            n.value.to_bits(),
                        )
                    })
                })
                .collect();
            assert_eq!(got, want, "{name}, {keyed:?}");
        }
        assert_eq!(want.len(), 600, "{name}");
        let at = [(site, "k.two", 86_400), (site, "k.one", 5 * 86_400), (site, "k.one", -1)];
        let mut found = store.values_at(lu.id, &at).await.unwrap();
        found.sort_by_key(|v| v.value.period.start);
        let found: Vec<_> =
            found.iter().map(|v| (v.value.metric_key.as_str(), v.value.period.start, v.value.raw.as_str())).collect();
        assert_eq!(
            found,
            [("k.two", 86_400, "\"two\""), ("k.one", 5 * 86_400, "1")],
            "{name}: whole rows, those that exist"
        );
        assert!(
            store.numbers_in(lu.id, (&[], &keys), 0..i64::MAX, PeriodKeys::Dates).await.unwrap().is_empty(),
            "{name}"
        );
    }
}

/// A token used again within a minute is not written again; later it is.
#[tokio::test]
async fn a_token_use_is_recorded_to_the_minute() {
    for Backend { name, store, .. } in backends().await {
        let kai = store.create_user("kai@example.com", "h", "UTC", 0).await.unwrap();
        store
            .create_api_token(
                kai.id,
                "poller",
                "kai-hash",
                &servio_store::Grant::all_sites(servio_store::Scope::Account),
                (0, 100),
            )
            .await
            .unwrap();
        for (now, recorded) in [(100, 100), (159, 100), (160, 160)] {
            assert_eq!(store.user_by_api_token("kai-hash", now).await.unwrap().map(|(u, _)| u.id), Some(kai.id));
            assert_eq!(store.api_tokens(kai.id).await.unwrap()[0].last_used_at, Some(recorded), "{name} at {now}");
        }
    }
}

/// A user and a site to hang jobs on, and the slot of `day` (0, 1, ...) of one metric.
async fn job_owner(store: &dyn Store, email: &str) -> (i64, i64) {
    let user = store.create_user(email, "h", "UTC", 0).await.unwrap();
    (user.id, servio_store::testing::site(store, &format!("https://{}", email.replace('@', "."))).await)
}

/// Enqueues a job due at once for each of `days` of one metric, ending at `deadline`.
async fn enqueue_days(
    store: &dyn Store,
    (user, site): (i64, i64),
    days: std::ops::Range<i64>,
    date: &str,
    deadline: i64,
) {
    // A period key per day (one job per key): the date with the day's number.
    let dates: Vec<(i64, String)> = days.map(|day| (day, format!("{date}/{day}"))).collect();
    let jobs: Vec<servio_store::NewJob> =
        dates.iter().map(|(day, date)| scheduled(day_slot(user, site, *day, date), 0, deadline)).collect();
    store.enqueue_jobs(&jobs, 0).await.unwrap();
}

/// A scheduled job for `slot`, leasable from `not_before`, failed by a transient error after
/// `deadline`.
fn scheduled(slot: servio_store::Slot<'_>, not_before: i64, deadline: i64) -> servio_store::NewJob<'_> {
    servio_store::NewJob { slot, not_before, deadline, kind: servio_store::JobKind::Scheduled }
}

/// The completion of `job` that stores `value`, read from the text `raw`.
fn stored<'a>(job: &'a servio_store::Job, value: f64, raw: &'a str) -> servio_store::Completion<'a> {
    let result = servio_store::CollectionResult::Stored { value, raw, source: None };
    servio_store::Completion { job, result, duration_ms: None }
}

/// A manifest as fetched, without validators.
fn fetched_manifest<'a>(
    origin: &'a str,
    manifest_url: &'a str,
    manifest: &'a str,
) -> servio_store::FetchedManifest<'a> {
    servio_store::FetchedManifest { origin, manifest_url, manifest, etag: None, last_modified: None }
}

/// One day's job of `owner`'s, leased by worker `a` at 10 for 30 seconds and, that lease run
/// out, by `again` at 40: the job as each lease got it, the second with the next fence.
async fn leased_twice(store: &dyn Store, owner: (i64, i64), again: &str, name: &str) -> (Job, Job) {
    enqueue_days(store, owner, 0..1, "2026-08-20", 10_000).await;
    let first = store.lease_jobs(&lease("a", 10, 30, 5)).await.unwrap();
    assert_eq!(first.len(), 1, "{name}");
    assert!(store.lease_jobs(&lease(again, 39, 30, 5)).await.unwrap().is_empty(), "{name}: the lease holds");
    let second = store.lease_jobs(&lease(again, 40, 30, 5)).await.unwrap();
    assert_eq!(second.len(), 1, "{name}: the lease expired");
    let (first, second) = (first[0].clone(), second[0].clone());
    assert_eq!((second.id, second.fence), (first.id, 2), "{name}: the same job, fenced anew");
    (first, second)
}

fn lease(owner: &str, now: i64, lease: i64, limit: i64) -> servio_store::JobLease<'_> {
    servio_store::JobLease { owner, now, lease_until: now + lease, limit, only: None, after_user: 0 }
}

#[tokio::test]
async fn enqueueing_a_slot_twice_keeps_one_job_and_leases_wait_for_not_before() {
    use servio_store::NewJob;
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "jo@example.com").await;
        let dates = ["2026-08-20", "2026-08-21", "2026-08-22"];
        let jobs: Vec<NewJob> =
            (0..3).map(|day| scheduled(day_slot(user, site, day, dates[day as usize]), 100 + day, 10_000)).collect();
        assert_eq!(store.enqueue_jobs(&jobs, 0).await.unwrap(), 3, "{name}");
        assert_eq!(store.enqueue_jobs(&jobs, 1).await.unwrap(), 0, "{name}: planning again adds nothing");
        assert_eq!(store.enqueue_jobs(&[], 1).await.unwrap(), 0, "{name}");
        assert!(store.lease_jobs(&lease("a", 99, 30, 10)).await.unwrap().is_empty(), "{name}: none due yet");
        let first = store.lease_jobs(&lease("a", 101, 30, 10)).await.unwrap();
        let days: Vec<i64> = first.iter().map(|j| j.period.start / 86_400).collect();
        assert_eq!(days, [0, 1], "{name}: only the due ones, soonest first");
        assert!(first.iter().all(|j| j.fence == 1), "{name}");
        let only = servio_store::JobLease { only: Some((user + 1000, site)), ..lease("b", 200, 30, 10) };
        assert!(store.lease_jobs(&only).await.unwrap().is_empty(), "{name}: another user's jobs are not theirs");
        let counts = store.job_counts().await.unwrap();
        assert_eq!((counts.pending, counts.done, counts.leased_again, counts.max_fence), (3, 0, 0, 1), "{name}");
    }
}

/// The lease and the fence: while a lease holds nobody else gets the job; after it expires the
/// next leaser gets it with a higher fence, and the first holder's completion then writes
/// nothing at all, neither the value nor an attempt.
#[tokio::test]
async fn a_completion_after_the_lease_was_taken_over_is_fenced_out() {
    use servio_store::{CollectionResult, Completion};
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "kai@example.com").await;
        let (first, second) = leased_twice(store.as_ref(), (user, site), "b", name).await;
        let stale = stored(&first, 1.0, "1");
        assert_eq!(store.complete_jobs(&[stale], 41).await.unwrap(), [false], "{name}: fenced out");
        assert!(store.values(user, site, "sales.revenue.daily", 0..i64::MAX).await.unwrap().is_empty(), "{name}");
        assert!(store.attempts(user, site, 10).await.unwrap().is_empty(), "{name}: not even an attempt");
        assert_eq!(store.job_counts().await.unwrap().pending, 1, "{name}: nor the job's state");

        let current = Completion {
            job: &second,
            result: CollectionResult::Stored { value: 2.0, raw: "\"$2\"", source: Some(r#"{"tool":"t"}"#) },
            duration_ms: None,
        };
        assert_eq!(store.complete_jobs(&[current], 42).await.unwrap(), [true], "{name}");
        let values = store.values(user, site, "sales.revenue.daily", 0..i64::MAX).await.unwrap();
        assert_eq!((values.len(), values[0].value, values[0].raw.as_str()), (1, 2.0, "\"$2\""), "{name}");
        assert_eq!(values[0].source.as_deref(), Some(r#"{"tool":"t"}"#), "{name}: what it was read from");
        let attempts = store.attempts(user, site, 10).await.unwrap();
        assert_eq!(attempts.iter().map(|a| a.outcome.as_str()).collect::<Vec<_>>(), ["stored"], "{name}");
        assert!(store.lease_jobs(&lease("c", 1_000, 30, 5)).await.unwrap().is_empty(), "{name}: done");
        let counts = store.job_counts().await.unwrap();
        assert_eq!((counts.pending, counts.done, counts.leased_again, counts.max_fence), (0, 1, 1, 2), "{name}");
    }
}

/// A worker whose lease ran out may lease its own job again and then commit both results in
/// one group: only the one under the current fence is written, once.
#[tokio::test]
async fn a_job_twice_in_one_completion_is_written_once_under_its_current_fence() {
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "noa@example.com").await;
        let (first, second) = leased_twice(store.as_ref(), (user, site), "a", name).await;
        let both = [stored(&first, 1.0, "1"), stored(&second, 2.0, "2")];
        assert_eq!(store.complete_jobs(&both, 41).await.unwrap(), [false, true], "{name}");
        let values = store.values(user, site, "sales.revenue.daily", 0..i64::MAX).await.unwrap();
        assert_eq!(values.iter().map(|v| v.value).collect::<Vec<_>>(), [2.0], "{name}");
        let attempts = store.attempts(user, site, 10).await.unwrap();
        assert_eq!(attempts.iter().map(|a| a.raw.as_deref()).collect::<Vec<_>>(), [Some("2")], "{name}");
    }
}

/// Issue 41: a backfill's request waits for its periods' jobs rather than calling the site; it
/// reads how they stand here. Each job of its range counts once, whoever queued it, by its
/// state and its period's latest attempt: untried, retrying (a retry logged, before the request
/// too), stored, dropped, failed. Jobs finished before the request began, and periods outside
/// its range, are not counted.
#[tokio::test]
async fn a_backfills_progress_counts_its_periods_jobs_by_state_and_latest_attempt() {
    use servio_store::{BackfillJobs, BackfillProgress, CollectionResult, JobKind, NewJob};
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "bea@example.com").await;
        let dates: Vec<String> = (0..10).map(|day| format!("2026-08-{:02}", day + 1)).collect();
        let job = |day: i64, kind| NewJob {
            slot: day_slot(user, site, day, &dates[day as usize]),
            not_before: 0,
            deadline: 500,
            kind,
        };
        let retry =
            || CollectionResult::Retry { reason: "the tool answered 503", retry_at: None, not_before: Some(400) };
        // Before the request (at 100): one period collected, one backing off.
        store.enqueue_jobs(&[job(1, JobKind::Scheduled), job(2, JobKind::Scheduled)], 0).await.unwrap();
        let before = store.lease_jobs(&lease("w", 1, 30, 20)).await.unwrap();
        let stored = CollectionResult::Stored { value: 1.0, raw: "1", source: None };
        complete_days(store.as_ref(), &before, vec![(&dates[1], stored.clone()), (&dates[2], retry())], 2).await;
        // The request's five, a scheduled job of its range, and a backfill past it.
        let mine: Vec<NewJob> = (3..=7).map(|day| job(day, JobKind::Backfill)).collect();
        store.enqueue_jobs(&mine, 100).await.unwrap();
        store.enqueue_jobs(&[job(8, JobKind::Scheduled), job(9, JobKind::Backfill)], 100).await.unwrap();
        let leased = store.lease_jobs(&lease("w", 101, 30, 20)).await.unwrap();
        let results = vec![
            (dates[3].as_str(), stored),
            (&dates[4], CollectionResult::Dropped { reason: "valuePath data: null", raw: Some("null") }),
            (&dates[5], CollectionResult::Failed { reason: "the tool answered 401" }),
            (&dates[6], retry()),
        ];
        complete_days(store.as_ref(), &leased, results, 102).await;
        let asked = BackfillJobs { since: 100, starts: (86_400, 8 * 86_400) };
        let progress = store.backfill_progress(user, site, asked).await.unwrap();
        let expected = BackfillProgress { untried: 2, retrying: 2, stored: 1, dropped: 1, failed: 1 };
        assert_eq!(progress, expected, "{name}");
    }
}

/// Completes the jobs of `leased` whose periods start on the dates of `results` with their
/// result, at `at`.
async fn complete_days(
    store: &dyn Store,
    leased: &[servio_store::Job],
    results: Vec<(&str, servio_store::CollectionResult<'_>)>,
    at: i64,
) {
    let completions: Vec<servio_store::Completion> = results
        .into_iter()
        .map(|(date, result)| {
            let job = leased.iter().find(|j| j.period.start_date == date).unwrap();
            servio_store::Completion { job, result, duration_ms: Some(1.0) }
        })
        .collect();
    store.complete_jobs(&completions, at).await.unwrap();
}

/// A transient failure puts the job back with its backoff and logs the retry; one with no time
/// left ends it as failed; permanent results end it at once. Several completions share one
/// transaction, each checked against its own fence.
#[tokio::test]
async fn retries_come_back_after_their_backoff_and_other_results_end_the_job() {
    use servio_store::{CollectionResult, Completion, NewJob};
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "lou@example.com").await;
        let dates = ["2026-08-20", "2026-08-21", "2026-08-22", "2026-08-23"];
        let jobs: Vec<NewJob> =
            (0..4).map(|day| scheduled(day_slot(user, site, day, dates[day as usize]), 0, 500)).collect();
        store.enqueue_jobs(&jobs, 0).await.unwrap();
        let leased = store.lease_jobs(&lease("a", 10, 30, 10)).await.unwrap();
        assert_eq!(leased.len(), 4, "{name}");
        let results = [
            CollectionResult::Retry { reason: "the tool answered 503", retry_at: Some(300), not_before: Some(300) },
            CollectionResult::Retry { reason: "connection refused", retry_at: None, not_before: None },
            CollectionResult::Dropped { reason: "valuePath data: null", raw: Some("null") },
            CollectionResult::Failed { reason: "the tool answered 401" },
        ];
        let completions: Vec<Completion> = leased
            .iter()
            .zip(results)
            .map(|(job, result)| Completion { job, result, duration_ms: Some(1.0) })
            .collect();
        assert_eq!(store.complete_jobs(&completions, 20).await.unwrap(), [true; 4], "{name}");
        assert!(store.lease_jobs(&lease("b", 299, 30, 10)).await.unwrap().is_empty(), "{name}: backing off");
        let again = store.lease_jobs(&lease("b", 300, 30, 10)).await.unwrap();
        assert_eq!(again.iter().map(|j| (j.period.start_date.as_str(), j.fence)).collect::<Vec<_>>(), [(dates[0], 2)]);
        let retries = store.retries(&day_slot(user, site, 0, dates[0])).await.unwrap();
        assert_eq!((retries.failures, retries.retry_at), (1, Some(300)), "{name}: the retry is in the log");
        let counts = store.job_counts().await.unwrap();
        assert_eq!((counts.pending, counts.done, counts.failed), (1, 0, 3), "{name}");
        let mut outcomes: Vec<String> =
            store.attempts(user, site, 10).await.unwrap().into_iter().map(|a| a.outcome.to_string()).collect();
        outcomes.sort();
        assert_eq!(outcomes, ["dropped", "failed", "retry", "retry"], "{name}");
        assert!(
            store.values(user, site, "sales.revenue.daily", 0..i64::MAX).await.unwrap().is_empty(),
            "{name}: no zeros"
        );
    }
}

/// Concurrent leasers never get the same job (PostgreSQL: `SKIP LOCKED`; SQLite: one
/// immediate transaction per lease).
#[tokio::test]
async fn concurrent_leases_share_out_the_jobs_without_overlap() {
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "max@example.com").await;
        enqueue_days(store.as_ref(), (user, site), 0..60, "2026-01-01", 1).await;
        let owners = ["a", "b", "c", "d", "e", "f"];
        let requests = owners.map(|owner| lease(owner, 10, 30, 7));
        let [a, b, c, d, e, f] = requests.each_ref().map(|request| store.lease_jobs(request));
        let (a, b, c, d, e, f) = tokio::join!(a, b, c, d, e, f);
        let mut ids: Vec<i64> = [a, b, c, d, e, f].into_iter().flat_map(|r| r.unwrap()).map(|j| j.id).collect();
        assert_eq!(ids.len(), 42, "{name}: each leaser got its seven");
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 42, "{name}: no job went to two leasers");
    }
}

/// Issue 12: started "Connect"s were kept in memory forever (about 1 KB a visit). In the
/// store they expire, a user keeps only a few, and each is taken once, by its own user.
#[tokio::test]
async fn started_connects_expire_are_capped_per_user_and_taken_once() {
    use servio_store::StartedConnect;
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), &format!("connect-{name}@example.com")).await;
        let other = store.create_user(&format!("other-connect-{name}@example.com"), "h", "UTC", 0).await.unwrap();
        let started = |n: i64, expires_at: i64| StartedConnect {
            state_hash: format!("state-{n}"),
            user_id: user,
            site_id: site,
            sealed: vec![n as u8; 16],
            created_at: n,
            expires_at,
        };
        for n in 0..8 {
            store.keep_started_connect(&started(n, 1_000), 5, n).await.unwrap();
        }
        // Only the five newest are kept.
        assert_eq!(store.take_started_connect("state-2", user, 10).await.unwrap(), None, "{name}: the oldest went");
        assert_eq!(store.take_started_connect("state-3", other.id, 10).await.unwrap(), None, "{name}: not theirs");
        assert_eq!(store.take_started_connect("state-3", user, 10).await.unwrap(), Some(started(3, 1_000)), "{name}");
        assert_eq!(store.take_started_connect("state-3", user, 10).await.unwrap(), None, "{name}: taken once");
        assert_eq!(store.take_started_connect("state-4", user, 1_001).await.unwrap(), None, "{name}: expired");
        // Starting one after the others expired clears them out.
        store.keep_started_connect(&started(100, 5_000), 5, 2_000).await.unwrap();
        assert_eq!(store.take_started_connect("state-7", user, 10).await.unwrap(), None, "{name}: purged");
        assert!(store.take_started_connect("state-100", user, 2_001).await.unwrap().is_some(), "{name}");
    }
}

/// Adding a site writes the site, the vault entry and its sealed credential in one
/// transaction; adding it twice changes nothing of the first.
#[tokio::test]
async fn a_site_is_added_with_its_credential_at_once() {
    for Backend { name, store, .. } in backends().await {
        let user = store.create_user(&format!("add-{name}@example.com"), "h", "UTC", 0).await.unwrap();
        let fetched =
            fetched_manifest("https://add.example", "https://add.example/.well-known/servio.json", "{\"v\": 1}");
        let seal = |site_id: i64| format!("sealed for site {site_id}").into_bytes();
        let record = store.add_site(&fetched, user.id, Some(&seal), 5, SITES).await.unwrap();
        let entry = store.vault_entry(user.id, record.id).await.unwrap().unwrap();
        assert_eq!(entry.credential, Some(format!("sealed for site {}", record.id).into_bytes()), "{name}");
        assert_eq!(entry.approved_manifest.as_deref(), Some("{\"v\": 1}"), "{name}");

        let other = |_: i64| b"another".to_vec();
        let again = store.add_site(&fetched, user.id, Some(&other), 6, SITES).await.unwrap_err();
        assert!(again.is_conflict(), "{name}: {again}");
        let entry = store.vault_entry(user.id, record.id).await.unwrap().unwrap();
        assert_eq!(entry.credential, Some(format!("sealed for site {}", record.id).into_bytes()), "{name}: kept");
        let without = store.create_user(&format!("add-none-{name}@example.com"), "h", "UTC", 0).await.unwrap();
        store.add_site(&fetched, without.id, None, 7, SITES).await.unwrap();
        assert_eq!(store.vault_entry(without.id, record.id).await.unwrap().unwrap().credential, None, "{name}");
    }
}

/// Issue 41, finding 6: a user's sites were unbounded. Past the quota a site is refused
/// whole, also when many are added at once (counted under the user's lock).
#[tokio::test]
async fn a_user_holds_at_most_their_quota_of_sites_even_added_at_once() {
    for Backend { name, store, .. } in backends().await {
        let user = store.create_user(&format!("quota-{name}@example.com"), "h", "UTC", 0).await.unwrap();
        let origins: Vec<String> = (0..6).map(|n| format!("https://quota{n}.example")).collect();
        let adds = origins.iter().map(|origin| {
            let store = &store;
            async move {
                let url = format!("{origin}/.well-known/servio.json");
                let fetched = fetched_manifest(origin, &url, "{}");
                store.add_site(&fetched, user.id, None, 1, 3).await
            }
        });
        let added = futures_util::future::join_all(adds).await;
        let refused: Vec<String> = added.iter().filter_map(|a| a.as_ref().err()).map(ToString::to_string).collect();
        assert_eq!(added.len() - refused.len(), 3, "{name}: {refused:?}");
        assert!(refused.iter().all(|e| e.contains("at most 3 sites per user")), "{name}: {refused:?}");
        assert_eq!(store.vault(user.id).await.unwrap().len(), 3, "{name}");
    }
}

/// "Sign out everywhere" ends every session of the user but the one kept, and no one else's;
/// the list marks the asking session and leaves out ended ones.
#[tokio::test]
async fn a_user_lists_their_sessions_and_ends_all_but_this_one() {
    for Backend { name, store, .. } in backends().await {
        let ivy = store.create_user("ivy@example.com", "h", "UTC", 0).await.unwrap();
        let other = store.create_user("other@example.com", "h", "UTC", 0).await.unwrap();
        let session = |user_id| Session { user_id, csrf_token: "c".into(), expires_at: 1_000, idle_seconds: 500 };
        store.create_session("ivy-phone", &session(ivy.id), 10).await.unwrap();
        store.create_session("ivy-laptop", &session(ivy.id), 20).await.unwrap();
        store.create_session("other", &session(other.id), 10).await.unwrap();
        let listed = store.sessions(ivy.id, "ivy-laptop", 100).await.unwrap();
        assert_eq!(
            listed.iter().map(|s| (s.created_at, s.current)).collect::<Vec<_>>(),
            [(20, true), (10, false)],
            "{name}"
        );
        assert!(store.sessions(ivy.id, "", 600).await.unwrap().is_empty(), "{name}: idled out");

        assert_eq!(store.delete_sessions(ivy.id, "ivy-laptop").await.unwrap(), 1, "{name}");
        assert!(store.session("ivy-phone", 100).await.unwrap().is_none(), "{name}");
        assert!(store.session("ivy-laptop", 100).await.unwrap().is_some(), "{name}: kept");
        assert!(store.session("other", 100).await.unwrap().is_some(), "{name}: not ivy's");
        assert_eq!(store.delete_sessions(ivy.id, "").await.unwrap(), 1, "{name}: everywhere");
        assert!(store.session("ivy-laptop", 100).await.unwrap().is_none(), "{name}");

        store.set_password_hash(ivy.id, "$argon2id$new").await.unwrap();
        assert_eq!(store.user(ivy.id).await.unwrap().unwrap().password_hash, "$argon2id$new", "{name}");
        assert_eq!(store.user(other.id).await.unwrap().unwrap().password_hash, "h", "{name}: not another's");
    }
}

/// A worker loads the vault entries of a leased batch at once: exactly the pairs asked for
/// that are in a vault, with their users, however the users and sites cross.
#[tokio::test]
async fn entries_of_many_pairs_come_in_one_call() {
    use servio_store::testing::site;
    for Backend { name, store, .. } in backends().await {
        let (a, b) = (site(&*store, "https://a.example").await, site(&*store, "https://b.example").await);
        let mut users = Vec::new();
        for email in ["u1@example.com", "u2@example.com", "u3@example.com"] {
            users.push(store.create_user(email, "h", "Europe/Paris", 0).await.unwrap().id);
        }
        let (u1, u2, u3) = (users[0], users[1], users[2]);
        for (user, site) in [(u1, a), (u1, b), (u2, a), (u2, b), (u3, b)] {
            store.add_to_vault(user, site, 0).await.unwrap();
        }
        store.set_credential(u2, a, Some(b"sealed")).await.unwrap();
        // (u1, b) and (u2, b) are in vaults but not asked for; (u3, a) is asked for but in none.
        let asked = [(u1, a), (u2, a), (u3, b), (u3, a)];
        let mut found: Vec<(i64, i64, String, Option<Vec<u8>>)> = store
            .entries_of(&asked)
            .await
            .unwrap()
            .into_iter()
            .map(|(user, entry)| (user.id, entry.site.id, user.time_zone, entry.credential))
            .collect();
        found.sort();
        let zone = || "Europe/Paris".to_owned();
        let mut expected =
            vec![(u1, a, zone(), None), (u2, a, zone(), Some(b"sealed".to_vec())), (u3, b, zone(), None)];
        expected.sort();
        assert_eq!(found, expected, "{name}");
        assert!(store.entries_of(&[]).await.unwrap().is_empty(), "{name}: none asked");
        // More pairs than one query takes: every one is found.
        let many: Vec<(i64, i64)> = (0..2_500).map(|i| if i == 1_700 { (u2, b) } else { (u1, a) }).collect();
        let found = store.entries_of(&many).await.unwrap();
        assert!(found.iter().any(|(user, entry)| (user.id, entry.site.id) == (u2, b)), "{name}: past the first query");
    }
}

/// Removing a site from a vault deletes what was collected for that user from it; deleting an
/// account deletes everything of the user's and nothing of anyone else's.
#[tokio::test]
async fn removal_and_account_deletion_take_the_users_data_with_them() {
    use servio_store::CollectionResult;
    for Backend { name, store, .. } in backends().await {
        let fetched = fetched_manifest("https://gone.example", "https://gone.example/servio.json", "{}");
        let site = store.save_site(&fetched, 0).await.unwrap();
        let mut users = Vec::new();
        for email in ["leaving@example.com", "staying@example.com"] {
            let user = store.create_user(email, "h", "UTC", 0).await.unwrap();
            store.add_to_vault(user.id, site.id, 0).await.unwrap();
            assert!(store.set_credential(user.id, site.id, Some(b"sealed")).await.unwrap(), "{name}");
            let slot = day_slot(user.id, site.id, 1, "2026-01-02");
            store
                .record_result(&slot, &CollectionResult::Stored { value: 1.0, raw: "1", source: None }, 5)
                .await
                .unwrap();
            let slot = day_slot(user.id, site.id, 2, "2026-01-03");
            let job = scheduled(slot, 0, 9);
            store.enqueue_jobs(&[job], 0).await.unwrap();
            store
                .create_api_token(
                    user.id,
                    "t",
                    &format!("hash-{email}"),
                    &servio_store::Grant::all_sites(servio_store::Scope::Account),
                    (0, 100),
                )
                .await
                .unwrap();
            users.push(user);
        }
        let (leaving, staying) = (&users[0], &users[1]);
        let collected = |user_id| {
            let store = &store;
            async move {
                let values = store.values(user_id, site.id, "sales.revenue.daily", 0..i64::MAX).await.unwrap().len();
                let attempts = store.attempts(user_id, site.id, 10).await.unwrap().len();
                let jobs = store.pending_jobs(user_id, site.id).await.unwrap();
                (values, attempts, jobs)
            }
        };
        assert_eq!(collected(leaving.id).await, (1, 1, 1), "{name}");

        assert!(store.remove_from_vault(leaving.id, site.id).await.unwrap(), "{name}");
        assert_eq!(collected(leaving.id).await, (0, 0, 0), "{name}: removed with the site");
        assert_eq!(collected(staying.id).await, (1, 1, 1), "{name}: another user's stay");
        assert!(!store.remove_from_vault(leaving.id, site.id).await.unwrap(), "{name}: twice");

        assert!(store.delete_user(staying.id).await.unwrap(), "{name}");
        assert!(store.user(staying.id).await.unwrap().is_none(), "{name}");
        assert_eq!(collected(staying.id).await, (0, 0, 0), "{name}: deleted with the account");
        assert!(store.vault_entry(staying.id, site.id).await.unwrap().is_none(), "{name}: credential gone");
        assert!(store.user_by_api_token("hash-staying@example.com", 0).await.unwrap().is_none(), "{name}");
        assert!(store.user(leaving.id).await.unwrap().is_some(), "{name}: another account stays");
        assert!(!store.delete_user(staying.id).await.unwrap(), "{name}: twice");
    }
}

/// The owner's health page: how collections from a site ended across its users, with the
/// reasons and the call durations; a figure fewer than `min_users` users stand behind is left
/// out, however many attempts it counts; another site's attempts and older ones never count.
#[tokio::test]
async fn site_health_counts_across_users_and_hides_what_few_stand_behind() {
    use servio_store::{AttemptOutcome, CollectionResult, JobLease};
    for Backend { name, store, .. } in backends().await {
        let (_, site) = job_owner(&*store, &format!("health-owner-{name}@example.com")).await;
        let (_, other_site) = job_owner(&*store, &format!("health-other-{name}@example.com")).await;
        // Writes one attempt for `user` at `at` through a job, as workers do, with a duration.
        let attempt = |user_id: i64, site_id: i64, day: i64, result: CollectionResult<'static>, ms: f64, at: i64| {
            let store = &store;
            async move {
                let date = format!("2026-01-{:02}", day + 1);
                let slot = day_slot(user_id, site_id, day, &date);
                store.enqueue_jobs(&[scheduled(slot, 0, i64::MAX)], 0).await.unwrap();
                let lease = JobLease {
                    owner: "w",
                    now: at,
                    lease_until: at + 60,
                    limit: 1,
                    only: Some((user_id, site_id)),
                    after_user: 0,
                };
                let jobs = store.lease_jobs(&lease).await.unwrap();
                let done = [servio_store::Completion { job: &jobs[0], result, duration_ms: Some(ms) }];
                assert_eq!(store.complete_jobs(&done, at).await.unwrap(), [true]);
            }
        };
        let not_a_number =
            CollectionResult::Dropped { reason: "valuePath total: \"no sales\" is not a number", raw: None };
        for i in 0..6 {
            let user = store.create_user(&format!("health-{i}-{name}@example.com"), "h", "UTC", 0).await.unwrap();
            // Six users stored a value, in 10 to 60 ms; five of them also had one dropped.
            attempt(
                user.id,
                site,
                1,
                CollectionResult::Stored { value: 1.0, raw: "1", source: None },
                10.0 * (i + 1) as f64,
                1_000,
            )
            .await;
            if i < 5 {
                attempt(user.id, site, 2, not_a_number.clone(), 5.0, 1_000).await;
            }
            // One user only failed: too few to show.
            if i == 5 {
                attempt(user.id, site, 3, CollectionResult::Failed { reason: "the tool answered 404" }, 5.0, 1_000)
                    .await;
            }
            // Before the window, and on another site: not counted.
            attempt(user.id, site, 4, CollectionResult::Failed { reason: "old" }, 5.0, 10).await;
            attempt(user.id, other_site, 1, CollectionResult::Failed { reason: "elsewhere" }, 5.0, 1_000).await;
        }
        // Every attempt so far was made on the first day (of the epoch): with two days asked
        // of each user, nobody counts yet.
        assert_eq!(store.site_health(site, 500, 5, 2).await.unwrap(), servio_store::SiteHealth::default(), "{name}");
        let health = store.site_health(site, 500, 5, 1).await.unwrap();
        let outcomes: Vec<_> = health.outcomes.iter().map(|o| (o.outcome, o.attempts, o.users)).collect();
        // Counts rounded down to fives: six stored values show as five.
        assert_eq!(outcomes, [(AttemptOutcome::Dropped, 5, 5), (AttemptOutcome::Stored, 5, 5)], "{name}");
        let reasons: Vec<_> = health.reasons.iter().map(|r| (r.reason.as_str(), r.attempts)).collect();
        assert_eq!(reasons, [("valuePath total: \"no sales\" is not a number", 5)], "{name}: not the 404 nor 'old'");
        assert_eq!(health.latencies.len(), 1, "{name}");
        let latency = &health.latencies[0];
        // Twelve timed calls: six of 5 ms, then 10 to 60 ms; nearest ranks 6 (50%) and 12 (95%),
        // shown in tens of milliseconds, and the counts in fives.
        assert_eq!((latency.calls, latency.users, latency.p50_ms, latency.p95_ms), (10, 5, 10.0, 60.0), "{name}");
        // With a threshold of 7, nothing at all.
        assert_eq!(store.site_health(site, 500, 7, 1).await.unwrap(), servio_store::SiteHealth::default(), "{name}");
    }
}

/// A stopping worker hands back what it holds: the jobs are leasable at once by another, with
/// a new fence, so the stopped one's late result writes nothing; another owner's jobs and
/// finished ones stay as they are. The gauges count them on the way.
#[tokio::test]
async fn handed_back_jobs_are_leased_at_once_and_fence_out_their_old_holder() {
    use servio_store::JobGauges;
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "ren@example.com").await;
        enqueue_days(store.as_ref(), (user, site), 0..3, "2026-08-20", 10_000).await;
        let gauges = store.job_gauges(10, 5).await.unwrap();
        assert_eq!(gauges, JobGauges { pending: 3, leased: 0, overdue: 3 }, "{name}: due since 0, held by no one");
        let held = store.lease_jobs(&lease("stopping", 10, 600, 2)).await.unwrap();
        let other = store.lease_jobs(&lease("other", 10, 600, 1)).await.unwrap();
        assert_eq!((held.len(), other.len()), (2, 1), "{name}");
        let gauges = store.job_gauges(11, 5).await.unwrap();
        assert_eq!(gauges, JobGauges { pending: 3, leased: 3, overdue: 0 }, "{name}");

        assert_eq!(store.release_jobs("stopping", 20).await.unwrap(), 2, "{name}");
        assert_eq!(store.release_jobs("stopping", 21).await.unwrap(), 0, "{name}: nothing held any more");
        assert_eq!(store.job_gauges(21, 5).await.unwrap().leased, 1, "{name}: the other owner's job stays held");
        let taken = store.lease_jobs(&lease("next", 21, 600, 10)).await.unwrap();
        let mut ids: Vec<i64> = taken.iter().map(|job| job.id).collect();
        ids.sort_unstable();
        let mut held_ids: Vec<i64> = held.iter().map(|job| job.id).collect();
        held_ids.sort_unstable();
        assert_eq!(ids, held_ids, "{name}: the handed-back jobs, at once, not the other owner's");
        assert!(taken.iter().all(|job| job.fence == 3), "{name}: leased, handed back, leased again");

        let late = stored(&held[0], 1.0, "1");
        assert_eq!(store.complete_jobs(&[late], 22).await.unwrap(), [false], "{name}: the old holder is fenced out");
    }
}

#[tokio::test]
async fn a_database_with_every_migration_is_ready() {
    for Backend { name, store, .. } in backends().await {
        assert_eq!(store.readiness().await.unwrap(), servio_store::Readiness::Ready, "{name}");
        let pool = store.pool_use();
        assert!(pool.max >= 1 && pool.open <= pool.max && pool.idle <= pool.open, "{name}: {pool:?}");
    }
}

/// Retention: the attempt log, the call log and finished jobs lose what is older than the
/// cut-off, a batch at a time and the oldest first; recent rows and pending jobs stay.
#[tokio::test]
async fn pruning_deletes_old_rows_in_batches_and_keeps_recent_ones() {
    use servio_store::{CollectionResult, Completion, Pruned, ToolCall};
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "pia@example.com").await;
        for (day, at) in [(0, 100), (1, 200), (2, 300), (3, 10_000)] {
            let slot = day_slot(user, site, day, "2026-08-20");
            store.record_result(&slot, &CollectionResult::Failed { reason: "no" }, at).await.unwrap();
        }
        let calls: Vec<ToolCall> = [100, 200, 300, 10_000]
            .into_iter()
            .map(|called_at| ToolCall { site_id: Some(site), ..servio_store::testing::tool_call(user, "t", called_at) })
            .collect();
        store.log_tool_calls(&calls).await.unwrap();
        enqueue_days(store.as_ref(), (user, site), 10..12, "2026-08-21", 10_000).await;
        let leased = store.lease_jobs(&lease("w", 50, 30, 1)).await.unwrap();
        let done = Completion { job: &leased[0], result: CollectionResult::Abandoned, duration_ms: None };
        store.complete_jobs(&[done], 100).await.unwrap();

        for (what, left) in [(Pruned::Attempts, 1), (Pruned::ToolCalls, 1)] {
            let mut deleted = Vec::new();
            for _ in 0..3 {
                deleted.push(store.prune(what, 5_000, 2).await.unwrap());
            }
            assert_eq!(deleted, [2, 1, 0], "{name}: {what:?} in batches of two");
            let kept = match what {
                Pruned::Attempts => store.attempts(user, site, 100).await.unwrap().len(),
                _ => store.tool_calls(user, servio_store::CallPage { before: None, limit: 100 }).await.unwrap().len(),
            };
            assert_eq!(kept, left, "{name}: {what:?}: the recent one stays");
        }
        assert_eq!(store.prune(Pruned::FinishedJobs, 5_000, 10).await.unwrap(), 1, "{name}: the job done at 100");
        let counts = store.job_counts().await.unwrap();
        assert_eq!((counts.pending, counts.done, counts.failed), (1, 0, 0), "{name}: the pending one stays");
    }
}

/// MCP sessions: owner and state written in either order, read back, deleted, and pruned.
#[tokio::test]
async fn mcp_sessions_keep_their_owner_and_state() {
    use servio_store::{McpSession, Pruned};
    for Backend { name, store, .. } in backends().await {
        let user = store.create_user("mo@example.com", "h", "UTC", 0).await.unwrap();
        let owner = McpSession { user_id: Some(user.id), state: None };
        let state = |text: &str| McpSession { user_id: None, state: Some(text.into()) };
        store.keep_mcp_session("s-1", &state(r#"{"protocolVersion":"2025-06-18"}"#), 10).await.unwrap();
        store.keep_mcp_session("s-1", &owner, 11).await.unwrap();
        store.keep_mcp_session("s-2", &owner, 500).await.unwrap();
        store.keep_mcp_session("s-2", &state("{}"), 501).await.unwrap();
        let one = store.mcp_session("s-1").await.unwrap();
        let expected = McpSession { user_id: Some(user.id), state: Some(r#"{"protocolVersion":"2025-06-18"}"#.into()) };
        assert_eq!(one, Some(expected), "{name}");
        assert_eq!(store.mcp_session("s-3").await.unwrap(), None, "{name}");
        store.delete_mcp_session("s-2").await.unwrap();
        assert_eq!(store.mcp_session("s-2").await.unwrap(), None, "{name}");
        assert_eq!(store.prune(Pruned::McpSessions, 100, 10).await.unwrap(), 1, "{name}: opened at 10");
        assert_eq!(store.mcp_session("s-1").await.unwrap(), None, "{name}");
    }
}

/// Change notices reach every process on the same schema, and only those; SQLite has none.
#[tokio::test]
async fn changes_announced_by_one_process_are_heard_by_the_others_on_its_schema() {
    use servio_store::Heard;
    let sqlite = Database::open_sqlite("sqlite::memory:").await.unwrap();
    assert!(sqlite.changes().await.unwrap().is_none());
    sqlite.announce("nobody hears this").await.unwrap();
    // Change notices need PostgreSQL.
    let Some(url) = servio_store::testing::postgres_url() else { return };
    let sharing = servio_store::testing::postgres_sharing(&url, 2).await;
    let elsewhere = servio_store::testing::postgres(&url).await;
    let mut heard = sharing[1].changes().await.unwrap().expect("PostgreSQL listens");
    let mut not_heard = elsewhere.changes().await.unwrap().expect("PostgreSQL listens");
    sharing[0].announce("catalogue 42").await.unwrap();
    let next = tokio::time::timeout(std::time::Duration::from_secs(10), heard.recv()).await.unwrap();
    assert_eq!(next, Some(Heard::Change("catalogue 42".into())));
    let other = tokio::time::timeout(std::time::Duration::from_millis(500), not_heard.recv()).await;
    assert!(other.is_err(), "another schema's platform heard {other:?}");
}

/// Issue 24: the same local date collected under two zones made two values ("10 of 6 days").
/// A value is kept per period key: collecting the key again under another zone replaces the
/// value, instants included; the slot is settled under either zone; a job of the key is one
/// job whatever zone plans it.
#[tokio::test]
async fn one_value_per_period_key_whatever_the_zone() {
    use servio_store::{CollectionResult, Slot};
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "zed@example.com").await;
        // 2026-08-20 in Pacific/Auckland, then in America/New_York.
        let auckland =
            Slot { period_start: 1_787_140_800, period_end: 1_787_227_200, ..day_slot(user, site, 0, "2026-08-20") };
        let new_york = Slot { period_start: 1_787_198_400, period_end: 1_787_284_800, ..auckland.clone() };
        store
            .record_result(&auckland, &CollectionResult::Stored { value: 1.0, raw: "1", source: None }, 10)
            .await
            .unwrap();
        assert!(store.slot_settled(&new_york).await.unwrap(), "{name}: the date has a value");
        store
            .record_result(&new_york, &CollectionResult::Stored { value: 2.0, raw: "2", source: None }, 20)
            .await
            .unwrap();
        let values = store.values(user, site, "sales.revenue.daily", 0..i64::MAX).await.unwrap();
        let got: Vec<(&str, i64, f64)> =
            values.iter().map(|v| (v.period.start_date.as_str(), v.period.start, v.value)).collect();
        assert_eq!(got, [("2026-08-20", new_york.period_start, 2.0)], "{name}: replaced, with the new instants");
        assert_eq!(store.attempts(user, site, 10).await.unwrap().len(), 2, "{name}: the log keeps both");
        let got = store.values_in(user, &[site], &["sales.revenue.daily"], 0..i64::MAX).await.unwrap();
        assert_eq!(got.len(), 1, "{name}: the dashboard's query too");

        // A date dropped under one zone is settled under another.
        let next = Slot { period_key: "2026-08-21", start_date: "2026-08-21", ..new_york.clone() };
        let dropped = CollectionResult::Dropped { reason: "no number", raw: None };
        store.record_result(&next, &dropped, 30).await.unwrap();
        assert!(store.slot_settled(&Slot { period_start: 7, ..next.clone() }).await.unwrap(), "{name}");

        // One job per key: planning the date under the other zone finds the job it has.
        let job = |slot: &Slot<'static>| scheduled(slot.clone(), 0, 1_000);
        let (a, b) = (
            Slot { period_key: "2026-08-22", ..auckland.clone() },
            Slot { period_key: "2026-08-22", ..new_york.clone() },
        );
        assert_eq!(store.enqueue_jobs(&[job(&a)], 0).await.unwrap(), 1, "{name}");
        assert_eq!(store.enqueue_jobs(&[job(&b)], 0).await.unwrap(), 0, "{name}: the same local date");
    }
}

/// An hour value from before period keys (migration 0014 keyed it `DATE@INSTANT`, its zone
/// unknown) settles its hour and is replaced by a new value of the hour at that instant.
#[tokio::test]
async fn an_hour_value_from_before_keys_is_replaced_by_its_hour() {
    use servio_store::{CollectionResult, Slot};
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "hal9@example.com").await;
        let hour = Slot {
            metric_key: "visits.hourly",
            granularity: "hour",
            period_start: 3_600,
            period_end: 7_200,
            period_key: "1970-01-01@3600",
            ..day_slot(user, site, 0, "1970-01-01")
        };
        store.store_values(&[(hour.clone(), 1.0, "1")], 5).await.unwrap();
        let keyed = Slot { period_key: "1970-01-01T01", ..hour.clone() };
        assert!(store.slot_settled(&keyed).await.unwrap(), "{name}: settled by the value from before");
        store.record_result(&keyed, &CollectionResult::Stored { value: 2.0, raw: "2", source: None }, 6).await.unwrap();
        let values = store.values(user, site, "visits.hourly", 0..i64::MAX).await.unwrap();
        assert_eq!(values.iter().map(|v| v.value).collect::<Vec<_>>(), [2.0], "{name}: replaced, not beside it");

        // Issue 43, point 3: a job's completion replaces it too, on both backends (PostgreSQL's
        // batched completion kept the old value beside the new one).
        let next = Slot { period_start: 7_200, period_end: 10_800, period_key: "1970-01-01@7200", ..hour.clone() };
        store.store_values(&[(next.clone(), 3.0, "3")], 5).await.unwrap();
        let keyed = Slot { period_key: "1970-01-01T02", ..next };
        assert_eq!(store.enqueue_jobs(&[scheduled(keyed, 0, 1_000)], 6).await.unwrap(), 1, "{name}");
        let jobs = store.lease_jobs(&lease("w", 10, 30, 10)).await.unwrap();
        assert_eq!(jobs.len(), 1, "{name}");
        assert_eq!(store.complete_jobs(&[stored(&jobs[0], 4.0, "4")], 11).await.unwrap(), [true], "{name}");
        let values = store.values(user, site, "visits.hourly", 7_200..10_800).await.unwrap();
        assert_eq!(values.iter().map(|v| v.value).collect::<Vec<_>>(), [4.0], "{name}: replaced, not beside it");
    }
}

/// The jobs of one (user, site, period) are leased together, however the limit falls: the
/// metrics that share a call are in one batch.
#[tokio::test]
async fn a_lease_takes_the_other_jobs_of_its_periods() {
    use servio_store::Slot;
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "sib@example.com").await;
        let dates = ["2026-08-20", "2026-08-21"];
        let mut jobs = Vec::new();
        for (day, date) in dates.iter().enumerate() {
            for key in ["sales.revenue.daily", "sales.orders.daily"] {
                let slot = Slot { metric_key: key, ..day_slot(user, site, day as i64, date) };
                jobs.push(scheduled(slot, 0, 1_000));
            }
        }
        assert_eq!(store.enqueue_jobs(&jobs, 0).await.unwrap(), 4, "{name}");
        let first = store.lease_jobs(&lease("a", 10, 30, 1)).await.unwrap();
        let keys: Vec<(&str, &str)> = first.iter().map(|j| (j.period.key.as_str(), j.metric_key.as_str())).collect();
        assert_eq!(keys.len(), 2, "{name}: a limit of one brings its period's other job: {keys:?}");
        assert!(keys.iter().all(|(key, _)| *key == "2026-08-20"), "{name}: {keys:?}");
        let next = store.lease_jobs(&lease("b", 10, 30, 10)).await.unwrap();
        assert!(next.iter().all(|j| j.period.key == "2026-08-21") && next.len() == 2, "{name}");
    }
}

/// Issue 25: the limit counted seeds, and each seed brought its period's other jobs: a
/// backlog queued metric by metric put one period of the first metric in each seed, so a lease
/// of 64 took 704 jobs of an eleven-metric brief. Whole periods are taken while the jobs
/// before stay under the limit: a limit of five over four metrics takes two periods.
#[tokio::test]
async fn a_lease_takes_whole_periods_up_to_its_limit() {
    use servio_store::{NewJob, Slot};
    const KEYS: [&str; 4] = ["m.a", "m.b", "m.c", "m.d"];
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), "whole@example.com").await;
        let dates: Vec<String> = (0..10).map(|day| format!("2026-08-{:02}", day + 1)).collect();
        // Metric by metric, as a backfill queues them: the first metric's jobs come first.
        let mut jobs = Vec::new();
        for key in KEYS {
            for (day, date) in dates.iter().enumerate() {
                let slot = Slot { metric_key: key, ..day_slot(user, site, day as i64, date) };
                jobs.push(NewJob { slot, not_before: 0, deadline: 1_000, kind: servio_store::JobKind::Backfill });
            }
        }
        assert_eq!(store.enqueue_jobs(&jobs, 0).await.unwrap(), 40, "{name}");
        let leased = store.lease_jobs(&lease("a", 10, 30, 5)).await.unwrap();
        let mut periods: Vec<&str> = leased.iter().map(|job| job.period.key.as_str()).collect();
        periods.sort_unstable();
        periods.dedup();
        assert_eq!(leased.len(), 8, "{name}: two whole periods, {periods:?}");
        assert_eq!(periods, ["2026-08-01", "2026-08-02"], "{name}");
    }
}

/// Regression (issue 25): a NUL in a site's error body or in a `valuePath` made PostgreSQL
/// refuse the whole commit group, every other user's results with it (and SQLite kept the NUL).
/// Text from sites is now stored alike on both: each NUL as U+FFFD, the rest of the group kept.
#[tokio::test]
async fn a_nul_from_a_site_is_stored_as_a_replacement_and_costs_no_other_result() {
    use servio_store::{CollectionResult, Completion};
    for Backend { name, store, .. } in backends().await {
        let hostile = job_owner(store.as_ref(), &format!("nul-{}@example.com", name.replace(' ', "-"))).await;
        let healthy = job_owner(store.as_ref(), &format!("ok-{}@example.com", name.replace(' ', "-"))).await;
        enqueue_days(store.as_ref(), hostile, 0..3, "2026-03-01", 10_000).await;
        enqueue_days(store.as_ref(), healthy, 0..3, "2026-03-01", 10_000).await;
        let jobs = store.lease_jobs(&lease("w", 10, 60, 100)).await.unwrap();
        assert_eq!(jobs.len(), 6, "{name}");
        let results = |job: &servio_store::Job| match (job.user_id == hostile.0, job.period.start / 86_400) {
            (true, 0) => CollectionResult::Retry {
                reason: "the tool answered 503: bu\0sy",
                retry_at: None,
                not_before: Some(20),
            },
            (true, 1) => {
                CollectionResult::Dropped { reason: "valuePath data.to\0tal: no value there", raw: Some("\"4\0\"") }
            }
            (true, _) => CollectionResult::Failed { reason: "the tool answered 400: \0" },
            (false, _) => CollectionResult::Stored { value: 7.0, raw: "7", source: None },
        };
        let completions: Vec<Completion> =
            jobs.iter().map(|job| Completion { job, result: results(job), duration_ms: Some(1.0) }).collect();
        assert_eq!(store.complete_jobs(&completions, 11).await.unwrap(), [true; 6], "{name}: the whole group");
        assert_eq!(
            store.values(healthy.0, healthy.1, "sales.revenue.daily", 0..i64::MAX).await.unwrap().len(),
            3,
            "{name}"
        );
        let mut reasons: Vec<String> =
            store.attempts(hostile.0, hostile.1, 10).await.unwrap().into_iter().filter_map(|a| a.reason).collect();
        reasons.sort();
        assert_eq!(
            reasons,
            [
                "the tool answered 400: \u{FFFD}",
                "the tool answered 503: bu\u{FFFD}sy",
                "valuePath data.to\u{FFFD}tal: no value there"
            ],
            "{name}"
        );
        // A backfill's write, the same rule.
        let slot = day_slot(hostile.0, hostile.1, 9, "2026-03-10");
        store.record_result(&slot, &CollectionResult::Failed { reason: "a\0b" }, 12).await.unwrap();
        assert_eq!(store.attempts(hostile.0, hostile.1, 1).await.unwrap()[0].reason.as_deref(), Some("a\u{FFFD}b"));
    }
}

/// Regression (issue 25): an unknown tool name of 3 MiB was logged whole, and reading the log
/// back took gigabytes. Every logged field is bounded; pages follow one another by `before`.
#[tokio::test]
async fn the_call_log_keeps_bounded_fields_and_reads_in_pages() {
    use servio_store::{CallPage, LOGGED_ARGUMENTS_BYTES, LOGGED_TOOL_NAME_BYTES, testing::tool_call};
    for Backend { name, store, .. } in backends().await {
        let user = store.create_user(&format!("pages-{}@example.com", name.replace(' ', "-")), "h", "UTC", 0).await;
        let user = user.unwrap().id;
        let long = "x".repeat(3 * 1024 * 1024);
        let mut calls: Vec<_> = (0..5).map(|i| tool_call(user, &format!("tool_{i}"), i)).collect();
        calls.push(tool_call(user, &long, 5));
        calls.push(servio_store::ToolCall {
            arguments: Some(format!("{{\"q\": \"{}\"}}", "y".repeat(LOGGED_ARGUMENTS_BYTES))),
            ..tool_call(user, "lo\0ng_args", 6)
        });
        store.log_tool_calls(&calls).await.unwrap();
        let first = store.tool_calls(user, CallPage { before: None, limit: 3 }).await.unwrap();
        assert_eq!(first.iter().map(|c| c.called_at).collect::<Vec<_>>(), [6, 5, 4], "{name}: newest first");
        assert_eq!(first[0].tool, "lo\u{FFFD}ng_args", "{name}");
        let note = first[0].arguments.as_deref().unwrap();
        assert!(note.starts_with("\"not kept: ") && note.len() < 100, "{name}: {note}");
        let cut = &first[1].tool;
        assert!(cut.len() <= LOGGED_TOOL_NAME_BYTES && cut.ends_with(&format!("… ({} bytes)", long.len())), "{name}");
        let next = store.tool_calls(user, CallPage { before: Some(first[2].id), limit: 3 }).await.unwrap();
        assert_eq!(next.iter().map(|c| c.called_at).collect::<Vec<_>>(), [3, 2, 1], "{name}: the next page");
    }
}

/// Regression (issue 25): a Directory listing whose name held a NUL was a `500` on PostgreSQL
/// only. Listing texts come from the site's manifest and are stored by the same rule.
#[tokio::test]
async fn a_listing_name_with_nul_is_stored_alike_on_both_stores() {
    for Backend { name, store, .. } in backends().await {
        let (user, site) = job_owner(store.as_ref(), &format!("listing-{}@example.com", name.replace(' ', "-"))).await;
        let claim = store.create_claim(user, "https://nul.example", "wmcp_verify_x", 0, 50).await.unwrap();
        let listing = servio_store::Listing {
            site_id: site,
            claim_id: claim.id,
            listed: true,
            suspended_reason: None,
            name: "Fo\0rum".into(),
            description: "a\0b".into(),
            tools: "[]".into(),
            verified_at: 1,
        };
        store.save_listing(&listing).await.unwrap();
        let kept = store.listing(site).await.unwrap().unwrap();
        assert_eq!((kept.name.as_str(), kept.description.as_str()), ("Fo\u{FFFD}rum", "a\u{FFFD}b"), "{name}");
        store.mark_stale(site, "the site answered 500: \0", 2).await.unwrap();
        assert_eq!(
            store.site(site).await.unwrap().unwrap().stale_error.as_deref(),
            Some("the site answered 500: \u{FFFD}")
        );
    }
}

/// `count` jobs of one metric for `owner`, due at `not_before`, of `kind` (day `first` on).
async fn enqueue_kind(
    store: &dyn Store,
    owner: (i64, i64),
    (first, count): (i64, i64),
    not_before: i64,
    kind: servio_store::JobKind,
) {
    let dates: Vec<(i64, String)> = (first..first + count).map(|day| (day, format!("day-{day}"))).collect();
    let jobs: Vec<servio_store::NewJob> = dates
        .iter()
        .map(|(day, date)| servio_store::NewJob {
            slot: day_slot(owner.0, owner.1, *day, date),
            not_before,
            deadline: i64::MAX,
            kind,
        })
        .collect();
    store.enqueue_jobs(&jobs, 0).await.unwrap();
}

/// Issue 25: one user's backfill of 192,500 jobs made another user's jobs wait over 150 s, as
/// leases took the soonest due first. Leases take scheduled jobs before backfills, and users in
/// turns: here a batch of four is the scheduled user's two, then one of each backfill.
#[tokio::test]
async fn leases_take_scheduled_jobs_first_and_users_in_turns() {
    use servio_store::JobKind::{Backfill, Scheduled};
    for Backend { name, store, .. } in backends().await {
        let heavy = job_owner(store.as_ref(), "heavy@example.com").await;
        let light = job_owner(store.as_ref(), "light@example.com").await;
        let due = job_owner(store.as_ref(), "due@example.com").await;
        enqueue_kind(store.as_ref(), heavy, (0, 300), 0, Backfill).await;
        enqueue_kind(store.as_ref(), light, (0, 3), 50, Backfill).await;
        enqueue_kind(store.as_ref(), due, (0, 2), 60, Scheduled).await;
        let leased = store.lease_jobs(&lease("a", 100, 30, 4)).await.unwrap();
        let mut users: Vec<i64> = leased.iter().map(|job| job.user_id).collect();
        users.sort_unstable();
        let mut want = vec![heavy.0, light.0, due.0, due.0];
        want.sort_unstable();
        assert_eq!(users, want, "{name}");
        // The next turns: one of each backfill again, never two of the heavy user's first.
        let next = store.lease_jobs(&lease("a", 101, 30, 2)).await.unwrap();
        let mut users: Vec<i64> = next.iter().map(|job| job.user_id).collect();
        users.sort_unstable();
        assert_eq!(users, vec![heavy.0.min(light.0), heavy.0.max(light.0)], "{name}");
        // Collecting one vault entry now takes its jobs only.
        let only = servio_store::JobLease { only: Some(light), ..lease("b", 102, 30, 10) };
        let mine = store.lease_jobs(&only).await.unwrap();
        assert_eq!(mine.len(), 1, "{name}: the light user's last job");
        assert!(mine.iter().all(|job| (job.user_id, job.site_id) == light), "{name}");
        assert_eq!(store.pending_backfills(heavy.0).await.unwrap(), 300, "{name}: leased jobs are still pending");
        assert_eq!(store.pending_backfills(due.0).await.unwrap(), 0, "{name}");
    }
}

/// Issue 25: a worker with room for one call at a time leased one job at a time, and each
/// lease's first turn went to the oldest job: the user whose backlog was queued first, every
/// time. Turns start after the user the last lease served, so small leases go round.
#[tokio::test]
async fn small_leases_serve_users_in_rotation() {
    use servio_store::JobKind::Backfill;
    for Backend { name, store, .. } in backends().await {
        let heavy = job_owner(store.as_ref(), "heavy@example.com").await;
        let second = job_owner(store.as_ref(), "second@example.com").await;
        let third = job_owner(store.as_ref(), "third@example.com").await;
        // The heavy user's backlog is the oldest: it won every tie.
        enqueue_kind(store.as_ref(), heavy, (0, 50), 0, Backfill).await;
        enqueue_kind(store.as_ref(), second, (0, 2), 40, Backfill).await;
        enqueue_kind(store.as_ref(), third, (0, 2), 50, Backfill).await;
        let mut after_user = 0;
        let mut served = Vec::new();
        for at in 100..106 {
            let one = servio_store::JobLease { after_user, ..lease("a", at, 600, 1) };
            let jobs = store.lease_jobs(&one).await.unwrap();
            assert_eq!(jobs.len(), 1, "{name}");
            after_user = servio_store::last_served(after_user, &jobs);
            served.push(jobs[0].user_id);
        }
        let mut users = [heavy.0, second.0, third.0];
        users.sort_unstable();
        let round: Vec<i64> = users.iter().chain(users.iter()).copied().collect();
        assert_eq!(served, round, "{name}: each user in turn, twice round");
    }
}

/// Issue 25: 2,000 API tokens and 2,000 claims of one user went through. Both stop at the
/// limit with [`servio_store::StoreError::AtLimit`]; a withdrawn claim makes room again.
#[tokio::test]
async fn api_tokens_and_pending_claims_stop_at_the_limit() {
    use servio_store::StoreError;
    for Backend { name, store, .. } in backends().await {
        let user = store.create_user("many@example.com", "h", "UTC", 0).await.unwrap();
        for n in 0..3 {
            store
                .create_api_token(
                    user.id,
                    "t",
                    &format!("hash-{n}"),
                    &servio_store::Grant::all_sites(servio_store::Scope::Account),
                    (0, 3),
                )
                .await
                .unwrap();
        }
        let refused = store
            .create_api_token(
                user.id,
                "t",
                "hash-3",
                &servio_store::Grant::all_sites(servio_store::Scope::Account),
                (0, 3),
            )
            .await
            .unwrap_err();
        assert!(matches!(refused, StoreError::AtLimit { limit: 3, .. }), "{name}: {refused:?}");
        assert_eq!(store.api_tokens(user.id).await.unwrap().len(), 3, "{name}");
        let mut claims = Vec::new();
        for n in 0..2 {
            claims.push(
                store.create_claim(user.id, &format!("https://s{n}.example"), &format!("v{n}"), 0, 2).await.unwrap(),
            );
        }
        let refused = store.create_claim(user.id, "https://s2.example", "v2", 0, 2).await.unwrap_err();
        assert!(matches!(refused, StoreError::AtLimit { limit: 2, .. }), "{name}: {refused:?}");
        let other = store.create_user("other@example.com", "h", "UTC", 0).await.unwrap();
        assert!(!store.delete_pending_claim(other.id, claims[0].id).await.unwrap(), "{name}: not theirs");
        assert!(store.delete_pending_claim(user.id, claims[0].id).await.unwrap(), "{name}");
        store.create_claim(user.id, "https://s2.example", "v2", 0, 2).await.unwrap();
    }
}

/// Issue 25: 5,000 MCP sessions of one user were all kept. Trimming keeps the most recently
/// used and says which went; browser sessions likewise.
#[tokio::test]
async fn sessions_beyond_the_limit_go_least_recently_used_first() {
    use servio_store::McpSession;
    for Backend { name, store, .. } in backends().await {
        let user = store.create_user("mcp@example.com", "h", "UTC", 0).await.unwrap();
        let owned = McpSession { user_id: Some(user.id), state: None };
        for (id, at) in [("s1", 1), ("s2", 2), ("s3", 3)] {
            store.keep_mcp_session(id, &owned, at).await.unwrap();
        }
        store.touch_mcp_session("s1", 4_000).await.unwrap();
        assert_eq!(store.trim_mcp_sessions(user.id, 2).await.unwrap(), vec!["s2".to_owned()], "{name}");
        assert!(store.mcp_session("s2").await.unwrap().is_none(), "{name}");
        assert!(store.mcp_session("s1").await.unwrap().is_some(), "{name}");
        assert!(store.trim_mcp_sessions(user.id, 2).await.unwrap().is_empty(), "{name}");

        for n in 0..3 {
            let session =
                Session { user_id: user.id, csrf_token: "c".into(), expires_at: 1_000_000, idle_seconds: 1_000_000 };
            store.create_session(&format!("browser-{n}"), &session, n).await.unwrap();
        }
        assert_eq!(store.trim_sessions(user.id, 2).await.unwrap(), 1, "{name}");
        assert!(store.session("browser-0", 10).await.unwrap().is_none(), "{name}: the least recently used went");
        assert!(store.session("browser-2", 10).await.unwrap().is_some(), "{name}");
    }
}

/// Every write that changes what is kept of a user tells the store's hooks once it committed,
/// so that no caller has a notice to remember; a write that changed nothing tells nothing.
#[tokio::test]
async fn each_write_tells_what_it_changed_for_whom() {
    use std::sync::{Arc, Mutex};

    use servio_store::{Change, CollectionResult, Completion};
    for Backend { name, store, .. } in backends().await {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let hook = heard.clone();
        store.on_change(Box::new(move |changes| hook.lock().unwrap().extend_from_slice(changes)));
        let take = || std::mem::take(&mut *heard.lock().unwrap());
        let ana = store.create_user("tell-ana@example.com", "h", "UTC", 0).await.unwrap().id;
        let ben = store.create_user("tell-ben@example.com", "h", "UTC", 0).await.unwrap().id;
        assert_eq!(take(), [], "{name}: a new account changes nothing kept");

        store.set_time_zone(ana, "Europe/Paris").await.unwrap();
        store.set_log_arguments(ana, true).await.unwrap();
        assert_eq!(take(), [Change::Context(ana), Change::Context(ana)], "{name}: zone, log setting");

        let fetched = |manifest| fetched_manifest("https://tell.example", "https://tell.example/servio.json", manifest);
        let seal = |_: i64| b"sealed".to_vec();
        let site = store.add_site(&fetched("v1"), ana, Some(&seal), 1, SITES).await.unwrap().id;
        assert_eq!(take(), [Change::Context(ana), Change::Catalogue(ana)], "{name}: a site with a credential");
        store.add_site(&fetched("v1"), ben, None, 2, SITES).await.unwrap();
        assert_eq!(take(), [Change::Catalogue(ben)], "{name}: a site without one");
        assert!(store.set_credential(ana, site, Some(b"again")).await.unwrap());
        assert!(!store.set_credential(ana, site + 1_000, Some(b"x")).await.unwrap());
        assert_eq!(take(), [Change::Context(ana)], "{name}: only the credential stored");

        store.save_site(&fetched("v1"), 3).await.unwrap();
        assert_eq!(take(), [], "{name}: the same text again is no new version");
        store.save_site(&fetched("v2"), 4).await.unwrap();
        assert_eq!(take(), [Change::Catalogue(ana), Change::Catalogue(ben)], "{name}: a new version, to everyone");
        assert_eq!(store.advance_approvals(site, "v1", "v2").await.unwrap().len(), 2, "{name}");
        assert_eq!(take(), [Change::Catalogue(ana), Change::Catalogue(ben)], "{name}: advanced approvals");
        store.save_site(&fetched("v3"), 5).await.unwrap();
        take();
        let v3 = store.current_version(site).await.unwrap().unwrap().id;
        assert_eq!(store.approve(ana, site, v3).await.unwrap(), Approval::Done, "{name}");
        assert_ne!(store.approve(ana, site, v3 - 1).await.unwrap(), Approval::Done, "{name}");
        assert_eq!(take(), [Change::Catalogue(ana)], "{name}: only the approval done");

        let slot = day_slot(ana, site, 0, "2026-12-01");
        let value = CollectionResult::Stored { value: 1.0, raw: "1", source: None };
        store.record_result(&slot, &value, 6).await.unwrap();
        store.record_result(&slot, &CollectionResult::Failed { reason: "down" }, 7).await.unwrap();
        assert_eq!(take(), [Change::Values(ana)], "{name}: a value, not a failure");
        let new = |user| scheduled(day_slot(user, site, 1, "2026-12-02"), 0, 100);
        store.enqueue_jobs(&[new(ana), new(ben)], 0).await.unwrap();
        let jobs = store.lease_jobs(&lease("w", 10, 30, 10)).await.unwrap();
        let completions: Vec<Completion> = jobs.iter().map(|job| stored(job, 2.0, "2")).collect();
        assert_eq!(store.complete_jobs(&completions, 11).await.unwrap(), [true, true], "{name}");
        assert_eq!(take(), [Change::Values(ana), Change::Values(ben)], "{name}: each user with a value, once");

        assert!(store.remove_from_vault(ben, site).await.unwrap());
        assert!(!store.remove_from_vault(ben, site).await.unwrap());
        assert_eq!(take(), [Change::Catalogue(ben)], "{name}: only the removal done");
        let token = store
            .create_api_token(
                ana,
                "t",
                "tell-hash",
                &servio_store::Grant::all_sites(servio_store::Scope::Account),
                (0, 10),
            )
            .await
            .unwrap();
        assert!(!store.delete_api_token(ben, token.id).await.unwrap(), "{name}: not ben's");
        assert!(store.delete_api_token(ana, token.id).await.unwrap());
        assert_eq!(store.delete_api_tokens(ana).await.unwrap(), 0, "{name}");
        assert_eq!(take(), [Change::Access(ana)], "{name}: only the token revoked");
        assert!(store.delete_user(ana).await.unwrap());
        assert_eq!(take(), [Change::Access(ana), Change::Catalogue(ana)], "{name}: the account gone");
    }
}

#[tokio::test]
async fn the_current_entry_names_the_version_of_its_text() {
    for Backend { name, store, .. } in backends().await {
        let ivy = store.create_user("ivy@example.com", "h", "UTC", 0).await.unwrap();
        let fetched = |manifest| fetched_manifest("https://pair.example", "https://pair.example/servio.json", manifest);
        let site = store.save_site(&fetched("v1"), 10).await.unwrap();
        store.add_to_vault(ivy.id, site.id, 11).await.unwrap();
        assert_eq!(store.current_entry(ivy.id + 1, site.id).await.unwrap(), None, "{name}: not theirs");
        for (at, text) in [(20, "v2"), (21, "v3")] {
            store.save_site(&fetched(text), at).await.unwrap();
            let current = store.current_entry(ivy.id, site.id).await.unwrap().unwrap();
            let version = current.version.expect("a stored version");
            assert_eq!(current.entry.site.manifest, text, "{name}");
            assert_eq!(store.version_text(site.id, version).await.unwrap().as_deref(), Some(text), "{name}");
            assert_eq!(current.entry, store.vault_entry(ivy.id, site.id).await.unwrap().unwrap(), "{name}");
        }
    }
}
