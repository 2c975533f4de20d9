//! The web pages over real HTTP, as a browser without JavaScript uses them: forms, redirects,
//! the session cookie, the CSRF field, and escaping of what sites put in their manifests.

use std::time::Duration;

use reqwest::StatusCode;
use servio_collector::plan::Planner;
use servio_demo_site::{DemoAuth, LocalCa, Site, SiteConfig, serve_https_on};

use crate::common;
use common::{Page, csrf, request};

#[tokio::test]
async fn sign_up_add_the_demo_site_and_see_its_page() {
    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo").await;
    let (origin, site) = (demo.origin.clone(), &demo.site);
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let url = |path: &str| format!("{}{path}", server.base);
        let signin = request(&http, "GET", &url("/signin"), None, &[]).await;
        assert!(signin.html.contains("Create account"), "{name}");

        let email = format!("page-{name}@example.com");
        let form = [("email", email.as_str()), ("password", common::PASSWORD), ("time_zone", "Europe/Berlin")];
        let created = request(&http, "POST", &url("/signup"), None, &form).await;
        assert_eq!((created.status, created.location.as_deref()), (StatusCode::SEE_OTHER, Some("/vault")), "{name}");
        let cookie = created.cookie.expect("a session cookie");

        let vault = request(&http, "GET", &url("/vault"), Some(&cookie), &[]).await;
        assert!(vault.html.contains("Add a site") && vault.html.contains(&email), "{name}");
        let token = csrf(&vault.html);

        // Without the CSRF field, nothing is added.
        let refused =
            request(&http, "POST", &url("/vault"), Some(&cookie), &[("url", &origin), ("token", "demo")]).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{name}");

        let added = request(
            &http,
            "POST",
            &url("/vault"),
            Some(&cookie),
            &[("csrf_token", &token), ("url", &origin), ("token", "demo")],
        )
        .await;
        let site_path = added.location.clone().unwrap_or_else(|| panic!("{name}: {}", added.html));
        let page = request(&http, "GET", &url(&site_path), Some(&cookie), &[]).await;
        assert_eq!(page.status, StatusCode::OK, "{name}");
        for expected in [
            "Servio Demo Forum &#38; Shop", // askama escapes `&` as a numeric reference
            "shop.getSalesSummary",
            "sales.revenue.daily",
            "A token is stored",
            "Valid, no warnings",
        ] {
            assert!(page.html.contains(expected), "{name}: {expected} missing");
        }
        assert!(!page.html.contains("demo\""), "{name}: the token is not in the page");

        // Nobody: sent to sign in.
        let nobody = request(&http, "GET", &url(&site_path), None, &[]).await;
        assert_eq!((nobody.status, nobody.location.as_deref()), (StatusCode::SEE_OTHER, Some("/signin")), "{name}");
        let directory = request(&http, "GET", &url("/directory?q=forum"), None, &[]).await;
        assert!(directory.html.contains("No listed site matches"), "{name}");

        // List it in the Directory: claim, put the token in the manifest, verify, find it.
        let claimed = request(
            &http,
            "POST",
            &url("/directory/claims"),
            Some(&cookie),
            &[("csrf_token", &token), ("url", &origin)],
        )
        .await;
        assert_eq!(claimed.status, StatusCode::SEE_OTHER, "{name}: {}", claimed.html);
        let mine = request(&http, "GET", &url("/directory"), Some(&cookie), &[]).await;
        assert!(mine.html.contains("Pending: add the token, then verify"), "{name}: the claim's state");
        let at = mine.html.find("wmcp_verify_").expect("the token is shown");
        let verification = mine.html[at..at + 44].to_owned();
        let action =
            mine.html.split("action=\"/directory/claims/").nth(1).unwrap().split('"').next().unwrap().to_owned();
        site.set_verification(Some(&verification));
        let verified = request(
            &http,
            "POST",
            &url(&format!("/directory/claims/{action}")),
            Some(&cookie),
            &[("csrf_token", &token)],
        )
        .await;
        assert!(verified.html.contains("Verified: the site is listed."), "{name}");
        assert!(verified.html.contains("class=\"notice\""), "{name}: a success is said as one");
        assert!(
            verified.html.contains("Verified: listed</td>") && !verified.html.contains(">Verify</button>"),
            "{name}"
        );
        let found = request(&http, "GET", &url("/directory?q=sales"), None, &[]).await;
        assert!(found.html.contains(&origin) && found.html.contains("shop.getSalesSummary"), "{name}");
        assert!(!found.html.contains("Add to my vault"), "{name}: not offered to nobody");
        let mine = request(&http, "GET", &url("/directory?q=sales"), Some(&cookie), &[]).await;
        assert!(mine.html.contains("In your vault.") && !mine.html.contains("Add to my vault"), "{name}");

        // Another user adds it from the Directory with one button.
        let form = [("email", "reader@example.com"), ("password", common::PASSWORD), ("time_zone", "UTC")];
        let reader = request(&http, "POST", &url("/signup"), None, &form).await.cookie.unwrap();
        let results = request(&http, "GET", &url("/directory?q=sales"), Some(&reader), &[]).await;
        assert!(results.html.contains(">Add to my vault</button>"), "{name}");
        let reader_token = csrf(&results.html);
        let added =
            request(&http, "POST", &url("/vault"), Some(&reader), &[("csrf_token", &reader_token), ("url", &origin)])
                .await;
        assert!(added.location.as_deref().is_some_and(|to| to.starts_with("/vault/")), "{name}: {}", added.html);

        // The token leaves the manifest: the next refresh suspends the listing, and the claim says why.
        site.set_verification(None);
        let site_id: i64 = site_path.trim_start_matches("/vault/").parse().unwrap();
        request(&http, "POST", &url(&format!("/vault/{site_id}/refresh")), Some(&cookie), &[("csrf_token", &token)])
            .await;
        let mine = request(&http, "GET", &url("/directory"), Some(&cookie), &[]).await;
        assert!(mine.html.contains("Suspended: the verification token is no longer in the manifest"), "{name}");
        assert!(mine.html.contains(">Verify again</button>"), "{name}");
    }
}

/// A site whose manifest is full of markup, with a brief whose revenue tool always answers
/// 12.5; served over HTTPS on a port of its own.
async fn markup_site(ca: &LocalCa) -> (String, servio_demo_site::Running) {
    use axum::routing::{get, post};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("https://localhost:{}", listener.local_addr().unwrap().port());
    let manifest = serde_json::json!({
        "name": "<script>alert(1)</script>", "version": "1.0.0", "server": {"url": format!("{origin}/api")},
        "auth": {"type": "bearer"},
        "tools": [{"name": "x.doThing", "description": "<img src=x onerror=alert(2)> does things for you", "input_schema": {"type": "object"}}],
        "brief": {"metrics": [{"key": "sales.revenue.daily", "tool": "x.doThing", "valuePath": "total", "unit": "<b>USD<b>"}]}
    })
    .to_string();
    let app = axum::Router::new()
        .route(
            "/.well-known/servio.json",
            get(move || async move { ([("content-type", "application/json")], manifest) }),
        )
        .route("/api/tools/x.doThing", post(|| async { axum::Json(serde_json::json!({ "total": 12.5 })) }));
    (origin, serve_https_on(listener, ca, app).await.unwrap())
}

#[tokio::test]
async fn what_a_manifest_says_is_escaped() {
    let ca = LocalCa::generate(&[]).unwrap();
    let (origin, _running) = markup_site(&ca).await;
    let (second_origin, _second) = markup_site(&ca).await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let (_, server) = common::servers(Some(&ca.ca_pem)).await.remove(0);
    let url = |path: &str| format!("{}{path}", server.base);
    let form = [("email", "xss@example.com"), ("password", common::PASSWORD), ("time_zone", "UTC")];
    let cookie = request(&http, "POST", &url("/signup"), None, &form).await.cookie.unwrap();
    let token = csrf(&request(&http, "GET", &url("/vault"), Some(&cookie), &[]).await.html);
    let added =
        request(&http, "POST", &url("/vault"), Some(&cookie), &[("csrf_token", &token), ("url", &origin)]).await;
    let page = request(&http, "GET", &url(&added.location.unwrap()), Some(&cookie), &[]).await;
    assert!(page.html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"), "escaped name");
    assert!(
        !page.html.contains("<script>alert(1)") && !page.html.contains("<img src=x"),
        "no markup from the manifest"
    );

    // The same canonical key from both sites: one dashboard card, each site's value and the
    // total, everything the manifests said still escaped.
    let again =
        request(&http, "POST", &url("/vault"), Some(&cookie), &[("csrf_token", &token), ("url", &second_origin)]).await;
    assert_eq!(again.status, StatusCode::SEE_OTHER, "{}", again.html);
    let entries = server.state.store.all_vault_entries().await.unwrap();
    let mine: Vec<_> = entries.into_iter().filter(|(user, _)| user.email == "xss@example.com").collect();
    assert_eq!(mine.len(), 2);
    for (user, entry) in &mine {
        let now = jiff::Timestamp::now();
        let summary = server.state.collector.collect_due(user, entry, &mut Planner::new(now)).await.unwrap();
        assert_eq!(summary.stored, 1, "{}", entry.site.origin);
    }
    let dashboard = request(&http, "GET", &url("/dashboard"), Some(&cookie), &[]).await;
    let html = &dashboard.html;
    assert_eq!(html.matches("<h2>Revenue</h2>").count(), 1, "one slot: {html}");
    assert!(html.contains("2 sites") && html.contains("<strong>25 &#60;b&#62;USD&#60;b&#62; · "), "the total: {html}");
    assert_eq!(html.matches("<h3>&#60;script&#62;alert(1)&#60;/script&#62;</h3>").count(), 2, "both sites: {html}");
    assert_eq!(html.matches("12.5 &#60;b&#62;USD&#60;b&#62; <span").count(), 2, "each site's value: {html}");
    assert!(!html.contains("<script>alert(1)") && !html.contains("<b>USD"), "no markup from the manifests: {html}");
}

/// The demo site with its own OAuth server, and a browser-like client that trusts it and does
/// not follow redirects.
struct OAuthDemo {
    ca: LocalCa,
    origin: String,
    site: Site,
    http: reqwest::Client,
    /// How long its access tokens live.
    access_ttl: Duration,
    _running: servio_demo_site::Running,
}

impl OAuthDemo {
    /// Starts the site, its access tokens living `access_ttl`.
    async fn start(access_ttl: Duration) -> OAuthDemo {
        let ca = LocalCa::generate(&[]).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("https://localhost:{}", listener.local_addr().unwrap().port());
        let auth = DemoAuth::OAuth2 { access_ttl };
        let site = Site::new(SiteConfig { origin: origin.clone(), token: String::new(), auth }, None).await.unwrap();
        let _running = serve_https_on(listener, &ca, site.router()).await.unwrap();
        let roots = reqwest::Certificate::from_pem_bundle(ca.ca_pem.as_bytes()).unwrap();
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).tls_certs_merge(roots);
        OAuthDemo { ca, origin, site, http: http.build().unwrap(), access_ttl, _running }
    }

    /// A platform on each backend, trusting the site.
    async fn servers(&self) -> Vec<(&'static str, common::Server)> {
        common::servers(Some(&self.ca.ca_pem)).await
    }

    /// A new user, `prefix-{name}@example.com`, who added the site and connected it: the email,
    /// the user and the vault entry.
    async fn user(
        &self,
        server: &common::Server,
        name: &str,
        prefix: &str,
    ) -> (String, servio_store::User, servio_store::VaultEntry) {
        let email = format!("{prefix}-{name}@example.com");
        connect_with_oauth(self, server, name, &email).await;
        let (user, entry) = server.vault_entry_of(&email).await;
        (email, user, entry)
    }

    /// Waits until the access tokens issued before have expired.
    async fn outlive_access_tokens(&self) {
        tokio::time::sleep(self.access_ttl + Duration::from_millis(100)).await;
    }
}

/// Signs `email` up, adds the OAuth demo site and goes through "Connect" as a browser would;
/// returns the session cookie, the vault site's page and the callback URL used.
async fn connect_with_oauth(
    demo: &OAuthDemo,
    server: &common::Server,
    name: &str,
    email: &str,
) -> (String, String, String) {
    let (http, origin) = (&demo.http, demo.origin.as_str());
    let url = |path: &str| format!("{}{path}", server.base);
    let form = [("email", email), ("password", common::PASSWORD), ("time_zone", "UTC")];
    let cookie = request(http, "POST", &url("/signup"), None, &form).await.cookie.unwrap();
    let token = csrf(&request(http, "GET", &url("/vault"), Some(&cookie), &[]).await.html);
    let added = request(http, "POST", &url("/vault"), Some(&cookie), &[("csrf_token", &token), ("url", origin)]).await;
    let site_path = added.location.unwrap();
    let page = request(http, "GET", &url(&site_path), Some(&cookie), &[]).await;
    assert!(page.html.contains("Connect with OAuth") && page.html.contains("No token stored"), "{name}");

    // Regression: a GET started a Connect, so a cross-site link could start one. It is a form
    // posted with the CSRF token; a GET, or a post without the token, starts nothing.
    let connect = url(&format!("{site_path}/connect"));
    let linked = request(http, "GET", &connect, Some(&cookie), &[]).await;
    assert_eq!((linked.status, linked.location), (StatusCode::METHOD_NOT_ALLOWED, None), "{name}");
    let forged = request(http, "POST", &connect, Some(&cookie), &[("csrf_token", "forged")]).await;
    assert_eq!((forged.status, forged.location), (StatusCode::FORBIDDEN, None), "{name}");
    assert!(page.html.contains(&format!(r#"<form method="post" action="{site_path}/connect">"#)), "{name}");
    let to_site = start_connect(http, &server.base, &site_path, &cookie).await;
    let authorize: url::Url = to_site.location.expect("off to the site").parse().unwrap();
    assert!(authorize.as_str().starts_with(&format!("{origin}/oauth/authorize")), "{name}: {authorize}");
    let param = |k: &str| authorize.query_pairs().find(|(key, _)| key == k).map(|(_, v)| v.into_owned()).unwrap();
    assert_eq!(param("redirect_uri"), url("/oauth/callback"), "{name}");
    assert_eq!(param("client_id"), "servio-test", "{name}");
    let consent = request(http, "GET", authorize.as_str(), None, &[]).await;
    assert!(consent.html.contains("Approve"), "{name}");
    let fields = [
        ("client_id", param("client_id")),
        ("redirect_uri", param("redirect_uri")),
        ("state", param("state")),
        ("code_challenge", param("code_challenge")),
        ("decision", "approve".to_owned()),
    ];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let back = request(http, "POST", &format!("{origin}/oauth/authorize"), None, &fields).await.location.unwrap();
    assert!(back.starts_with(&url("/oauth/callback?")), "{name}: {back}");

    let done = request(http, "GET", &back, Some(&cookie), &[]).await;
    assert_eq!(done.location.as_deref(), Some(site_path.as_str()), "{name}: {}", done.html);
    (cookie, site_path, back)
}

/// Starts "Connect" from the site page at `site_path` as its button does: a post with the page's
/// CSRF token.
async fn start_connect(http: &reqwest::Client, base: &str, site_path: &str, cookie: &str) -> Page {
    let page = request(http, "GET", &format!("{base}{site_path}"), Some(cookie), &[]).await;
    let token = csrf(&page.html);
    request(http, "POST", &format!("{base}{site_path}/connect"), Some(cookie), &[("csrf_token", &token)]).await
}

/// "Connect": OAuth 2.0 with PKCE through the platform's callback, against the demo site's own
/// authorization server; the tokens end up sealed as the site's credential.
#[tokio::test]
async fn connect_a_site_with_oauth() {
    let demo = OAuthDemo::start(Duration::from_secs(600)).await;
    for (name, server) in demo.servers().await {
        let url = |path: &str| format!("{}{path}", server.base);
        let email = format!("connect-{name}@example.com");
        let (cookie, site_path, back) = connect_with_oauth(&demo, &server, name, &email).await;
        let page = request(&demo.http, "GET", &url(&site_path), Some(&cookie), &[]).await;
        assert!(page.html.contains("A token is stored"), "{name}");
        // The attempt is spent: the same callback again is refused.
        assert_eq!(
            request(&demo.http, "GET", &back, Some(&cookie), &[]).await.status,
            StatusCode::BAD_REQUEST,
            "{name}"
        );

        // Someone else's session cannot finish this user's attempt.
        let other_form = [("email", "intruder@example.com"), ("password", common::PASSWORD), ("time_zone", "UTC")];
        let intruder = request(&demo.http, "POST", &url("/signup"), None, &other_form).await.cookie.unwrap();
        let authorize: url::Url =
            start_connect(&demo.http, &server.base, &site_path, &cookie).await.location.unwrap().parse().unwrap();
        let state = authorize.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
        let stolen =
            request(&demo.http, "GET", &url(&format!("/oauth/callback?code=x&state={state}")), Some(&intruder), &[])
                .await;
        assert_eq!(stolen.status, StatusCode::BAD_REQUEST, "{name}");
    }
}

/// Collection with an OAuth site whose access token has expired: the platform renews it
/// with the refresh token, seals the new tokens into the vault, and the values are stored.
#[tokio::test]
async fn collection_renews_an_expired_oauth_token() {
    // Tokens of 3 s: expired after the sleep, and a renewed one lives long enough for its
    // calls on a busy machine (1 s was not always).
    let demo = OAuthDemo::start(Duration::from_secs(3)).await;
    for (name, server) in demo.servers().await {
        let (email, user, connected) = demo.user(&server, name, "renew").await;
        demo.outlive_access_tokens().await;

        let summary = collect_now(&server, &user, &connected).await;
        assert_eq!((summary.stored, summary.failed), (2, 0), "{name}: collected with a renewed token");
        let (_, renewed) = server.vault_entry_of(&email).await;
        assert!(renewed.credential.is_some(), "{name}");
        assert_ne!(renewed.credential, connected.credential, "{name}: the new tokens are kept");
    }
}

/// Interpretation §9: scopes are part of `auth`. A site that widens its scopes waits for the
/// user's approval, and meanwhile "Connect" asks for the approved scopes only; once approved,
/// for the new ones.
#[tokio::test]
async fn wider_scopes_wait_for_approval_and_connect_asks_for_the_approved_ones() {
    let demo = OAuthDemo::start(Duration::from_secs(600)).await;
    for (name, server) in demo.servers().await {
        demo.site.edit_manifest(None);
        let email = format!("scopes-{name}@example.com");
        let (cookie, site_path, _) = connect_with_oauth(&demo, &server, name, &email).await;
        let (_, entry) = server.vault_entry_of(&email).await;
        demo.site.edit_manifest(Some(std::sync::Arc::new(|manifest: &mut serde_json::Value| {
            manifest["auth"]["scopes"] = serde_json::json!(["read", "write", "admin", "delete_everything"]);
        })));
        let refreshed = servio_platform::domain::refresh::refresh_site(&server.state, &entry.site).await.unwrap();
        assert_eq!(refreshed, servio_platform::domain::refresh::Outcome::Changed, "{name}");

        let scope_asked = |cookie: String, site_path: String| {
            let (http, base) = (demo.http.clone(), server.base.clone());
            async move {
                let to_site = start_connect(&http, &base, &site_path, &cookie).await;
                let authorize: url::Url = to_site.location.expect("off to the site").parse().unwrap();
                authorize.query_pairs().find(|(k, _)| k == "scope").map(|(_, v)| v.into_owned()).unwrap_or_default()
            }
        };
        let page = request(&demo.http, "GET", &format!("{}{site_path}", server.base), Some(&cookie), &[]).await;
        assert!(page.html.contains("Changes waiting for your approval"), "{name}");
        assert!(page.html.contains("auth.scopes: [read, write] → [admin, delete_everything, read, write]"), "{name}");
        assert_eq!(scope_asked(cookie.clone(), site_path.clone()).await, "read write", "{name}: the approved scopes");

        let version = page.html.split("name=\"version\" value=\"").nth(1).unwrap().split('"').next().unwrap();
        let form = [("csrf_token", csrf(&page.html)), ("version", version.to_owned())];
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let approved =
            request(&demo.http, "POST", &format!("{}{site_path}/approve", server.base), Some(&cookie), &form).await;
        assert_eq!(approved.status, StatusCode::SEE_OTHER, "{name}: {}", approved.html);
        assert_eq!(scope_asked(cookie, site_path).await, "read write admin delete_everything", "{name}");
    }
}

/// Regression (issue 12): with a `token_url` moved to another origin and not yet approved,
/// collection with an expired access token posted the user's refresh token to the new
/// `token_url`. The approved one renews it; the other origin hears nothing.
#[tokio::test]
async fn an_unapproved_token_url_never_receives_the_refresh_token() {
    let demo = OAuthDemo::start(Duration::from_secs(3)).await;
    let hostile = common::demo_site(&demo.ca, "hostile").await;
    for (name, server) in demo.servers().await {
        demo.site.set_token_url(None);
        let (email, user, connected) = demo.user(&server, name, "moved-token-url").await;
        demo.site.set_token_url(Some(&format!("{}/oauth/token", hostile.origin)));
        let refreshed = servio_platform::domain::refresh::refresh_site(&server.state, &connected.site).await.unwrap();
        assert_eq!(refreshed, servio_platform::domain::refresh::Outcome::Changed, "{name}");
        hostile.site.record_requests();
        demo.outlive_access_tokens().await;

        let (_, entry) = server.vault_entry_of(&email).await;
        let summary = collect_now(&server, &user, &entry).await;
        assert_eq!((summary.stored, summary.failed), (2, 0), "{name}: renewed at the approved token_url");
        assert_eq!(hostile.site.requests(), [], "{name}: the unapproved token_url received requests");
    }
}

/// A site that refuses an OAuth access token before it expires (revoked, say): the collector
/// renews it once and calls again, the values are stored and the new tokens kept.
#[tokio::test]
async fn collection_renews_an_oauth_token_the_site_refused_before_it_expired() {
    let demo = OAuthDemo::start(Duration::from_secs(600)).await;
    for (name, server) in demo.servers().await {
        let (email, user, connected) = demo.user(&server, name, "revoked").await;
        demo.site.revoke_access_tokens();

        let summary = collect_now(&server, &user, &connected).await;
        assert_eq!((summary.stored, summary.failed), (2, 0), "{name}: collected after one renewal");
        let (_, renewed) = server.vault_entry_of(&email).await;
        assert_ne!(renewed.credential, connected.credential, "{name}: the new tokens are kept");
    }
}

/// Many gateway calls racing on an expired OAuth token share one renewal: the demo site's
/// authorization server rotates refresh tokens and refuses a used one, so a second renewal
/// with the same token would fail its call.
#[tokio::test]
async fn gateway_calls_racing_on_an_expired_token_renew_it_once() {
    // Tokens of 65 s are renewed once within a minute of expiry, so after 5.5 s; a renewed
    // one then stays fresh for 5 s however slow the machine is.
    let demo = OAuthDemo::start(Duration::from_secs(65)).await;
    for (name, server) in demo.servers().await {
        let (_, user, _) = demo.user(&server, name, "race").await;
        tokio::time::sleep(Duration::from_millis(5500)).await;
        let catalogue = servio_platform::domain::gateway::catalogue(&server.state, &user).await.unwrap();
        let tool = catalogue.tools().iter().find(|t| t.tool == "shop.getSalesSummary").unwrap().name.clone();
        let args = serde_json::json!({ "from": "2026-08-20", "to": "2026-08-20" });
        let everything = servio_store::Grant::all_sites(servio_store::Scope::Account);
        let calls = (0..12)
            .map(|_| servio_platform::domain::gateway::call(&server.state, (&user, None), &everything, &tool, &args));
        let results = futures_util::future::join_all(calls).await;
        for result in &results {
            let value = result.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(value["data"]["totals"]["orders"].is_u64(), "{name}: {value}");
        }
    }
}
/// Collects what is due now for `user`'s vault `entry`, as the collect-now button does.
async fn collect_now(
    server: &common::Server,
    user: &servio_store::User,
    entry: &servio_store::VaultEntry,
) -> servio_collector::collect::Summary {
    server.state.collector.collect_due(user, entry, &mut Planner::new(jiff::Timestamp::now())).await.unwrap()
}
