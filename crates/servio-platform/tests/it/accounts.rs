//! Accounts over real HTTP, on every backend: sessions in `__Host-` cookies rotated at sign-in,
//! CSRF on cookie-authenticated changes, API tokens shown once and usable as bearer tokens, and
//! one user's things out of another's reach.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common;
use common::{Browser, browser};
use servio_platform::testing::{sign_in_body, sign_up_body};
use servio_platform::throttle::{Throttle, ThrottleConfig, quota};

async fn servers() -> Vec<(&'static str, common::Server)> {
    common::servers(None).await
}

/// Signs up `email`; the body that signs them in.
async fn signed_up(server: &common::Server, email: &str) -> Value {
    server.sign_up(email).await;
    sign_in_body(email)
}

#[tokio::test]
async fn sign_up_sign_in_and_csrf() {
    for (name, server) in servers().await {
        let ana = server.sign_up(&format!("ana-{name}@example.com")).await;
        let (status, me, _) = server.send(&ana, Method::GET, "/api/me", None).await;
        assert_eq!((status, me["user"]["time_zone"].as_str()), (StatusCode::OK, Some("Pacific/Auckland")), "{name}");

        // A change with the cookie but without the CSRF token is refused.
        let no_csrf = Browser { csrf: None, ..ana.clone() };
        let tz = json!({ "time_zone": "Europe/Berlin" });
        let (status, _, _) = server.send(&no_csrf, Method::PUT, "/api/me/time_zone", Some(tz.clone())).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        let (status, _, _) = server.send(&ana, Method::PUT, "/api/me/time_zone", Some(tz)).await;
        assert_eq!(status, StatusCode::OK, "{name}");

        // Signing in gives a new session; the old cookie stops working.
        let credentials = sign_in_body(&format!("ANA-{name}@example.com"));
        let (status, body, set_cookie) = server.send(&ana, Method::POST, "/api/signin", Some(credentials)).await;
        assert_eq!(status, StatusCode::OK, "{name}: {body}");
        let again = browser(&body, set_cookie);
        assert_ne!(again.cookie, ana.cookie, "{name}: rotated");
        assert_eq!(server.send(&ana, Method::GET, "/api/me", None).await.0, StatusCode::UNAUTHORIZED, "{name}");
        assert_eq!(server.send(&again, Method::GET, "/api/me", None).await.0, StatusCode::OK, "{name}");

        let wrong = json!({ "email": format!("ana-{name}@example.com"), "password": "not the password" });
        let (status, body, _) = server.send(&Browser::default(), Method::POST, "/api/signin", Some(wrong)).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("wrong email or password")),
            "{name}"
        );

        let (status, _, _) = server.send(&again, Method::POST, "/api/signout", None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        assert_eq!(server.send(&again, Method::GET, "/api/me", None).await.0, StatusCode::UNAUTHORIZED, "{name}");
    }
}

#[tokio::test]
async fn bad_sign_ups_say_what_is_wrong() {
    for (name, server) in servers().await {
        server.sign_up(&format!("ben-{name}@example.com")).await;
        let cases = [
            (sign_up_body(&format!("ben-{name}@example.com"), "UTC"), StatusCode::CONFLICT, "already taken"),
            (sign_up_body("ben", "UTC"), StatusCode::BAD_REQUEST, "`email`"),
            (
                json!({ "email": "x@example.com", "password": "short", "time_zone": "UTC" }),
                StatusCode::BAD_REQUEST,
                "`password`",
            ),
            (sign_up_body("x@example.com", "Mars/Base"), StatusCode::BAD_REQUEST, "`time_zone`"),
        ];
        for (body, want, says) in cases {
            let (status, answer, _) = server.send(&Browser::default(), Method::POST, "/api/signup", Some(body)).await;
            assert_eq!(status, want, "{name}: {answer}");
            assert!(answer["error"].as_str().unwrap().contains(says), "{name}: {answer}");
        }
        assert_eq!(server.send(&Browser::default(), Method::GET, "/api/me", None).await.0, StatusCode::UNAUTHORIZED);
    }
}

#[tokio::test]
async fn api_tokens_work_as_bearer_and_stay_with_their_owner() {
    for (name, server) in servers().await {
        let chen = server.sign_up(&format!("chen-{name}@example.com")).await;
        let dana = server.sign_up(&format!("dana-{name}@example.com")).await;
        let (status, created, _) = server
            .send(
                &chen,
                Method::POST,
                "/api/tokens",
                Some(json!({ "scope": "account", "password": common::PASSWORD, "name": "laptop" })),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{name}");
        let token = created["token"].as_str().unwrap().to_owned();

        // The token alone: no cookie, no CSRF token needed.
        let program = Browser { bearer: Some(token.clone()), ..Browser::default() };
        let (status, me, _) = server.send(&program, Method::GET, "/api/me", None).await;
        assert_eq!(
            (status, me["user"]["email"].as_str()),
            (StatusCode::OK, Some(format!("chen-{name}@example.com").as_str()))
        );
        assert!(me.get("csrf_token").is_none(), "{name}: no CSRF token for programs");
        let (status, _, _) =
            server.send(&program, Method::PUT, "/api/me/time_zone", Some(json!({ "time_zone": "UTC" }))).await;
        assert_eq!(status, StatusCode::OK, "{name}");

        // Listed without the secret; out of another user's reach.
        let (_, listed, _) = server.send(&chen, Method::GET, "/api/tokens", None).await;
        assert_eq!(listed["tokens"][0]["name"], "laptop");
        assert!(!listed.to_string().contains(&token), "{name}: never shown again");
        let (_, theirs, _) = server.send(&dana, Method::GET, "/api/tokens", None).await;
        assert_eq!(theirs["tokens"], json!([]), "{name}");
        let path = format!("/api/tokens/{}", created["id"]);
        assert_eq!(server.send(&dana, Method::DELETE, &path, None).await.0, StatusCode::NOT_FOUND, "{name}");
        assert_eq!(server.send(&chen, Method::DELETE, &path, None).await.0, StatusCode::NO_CONTENT, "{name}");
        assert_eq!(server.send(&program, Method::GET, "/api/me", None).await.0, StatusCode::UNAUTHORIZED, "{name}");
    }
}

/// Several `servio serve` processes on one PostgreSQL database: a session started on one is
/// good on the other, and a token made on the second works on the first.
#[tokio::test]
async fn two_platforms_share_one_postgres_database() {
    use std::sync::Arc;
    let Some(url) = servio_store::testing::postgres_url() else { return };
    let mut servers = Vec::new();
    for store in servio_store::testing::postgres_sharing(&url, 2).await {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = servio_platform::testing::state(Arc::new(store), servio_platform::testing::client(None), "");
        servio_platform::testing::serve(listener, state.clone());
        servers.push(common::Server { base, http: reqwest::Client::new(), state });
    }
    let ana = servers[0].sign_up("shared@example.com").await;
    let (status, me, _) = servers[1].send(&ana, Method::GET, "/api/me", None).await;
    assert_eq!((status, me["user"]["email"].as_str()), (StatusCode::OK, Some("shared@example.com")));
    let (_, token, _) = servers[1]
        .send(
            &ana,
            Method::POST,
            "/api/tokens",
            Some(json!({ "scope": "account", "password": common::PASSWORD, "name": "cli" })),
        )
        .await;
    let program = Browser { bearer: token["token"].as_str().map(str::to_owned), ..Browser::default() };
    assert_eq!(servers[0].send(&program, Method::GET, "/api/me", None).await.0, StatusCode::OK);
}

/// A request with the given headers, and a JSON or form body; the raw response, redirects not
/// followed (a page's sign-in answers with a redirect and the cookie).
async fn post(
    server: &common::Server,
    path: &str,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
    as_form: bool,
) -> reqwest::Response {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let mut request = http.post(format!("{}{path}", server.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request = if as_form {
        request.header("content-type", "application/x-www-form-urlencoded").body(form(body))
    } else {
        request.json(body)
    };
    request.send().await.unwrap()
}

/// The members of a JSON object (strings) as a form body.
fn form(body: &serde_json::Value) -> String {
    let pairs = body.as_object().unwrap().iter().map(|(name, value)| (name.as_str(), value.as_str().unwrap()));
    url::form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish()
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> &'a str {
    response.headers().get(name).map_or("", |v| v.to_str().unwrap())
}

/// Servers whose sign-in and sign-up limits are tightened by `configure`.
async fn throttled(configure: impl Fn(&mut ThrottleConfig)) -> Vec<(&'static str, common::Server)> {
    common::servers_with(None, |state| {
        let mut config = ThrottleConfig::default();
        configure(&mut config);
        state.throttle = std::sync::Arc::new(Throttle::new(&config));
    })
    .await
}

const HOUR: std::time::Duration = std::time::Duration::from_secs(3600);

/// Regression: wrong passwords could be tried at the speed of the hash. Past the account's
/// burst, sign-in answers 429 with `Retry-After`, even with the right password, on the API and
/// on the page; another account from the same address is not affected.
#[tokio::test]
async fn sign_ins_to_one_account_are_throttled() {
    for (name, server) in throttled(|c| c.sign_in_per_account = quota(3, HOUR).unwrap()).await {
        let email = format!("target-{name}@example.com");
        server.sign_up(&email).await;
        let wrong = json!({ "email": email, "password": "not the password" });
        for _ in 0..3 {
            assert_eq!(post(&server, "/api/signin", &[], &wrong, false).await.status(), StatusCode::UNAUTHORIZED);
        }
        let right = sign_in_body(&email.to_uppercase());
        let refused = post(&server, "/api/signin", &[], &right, false).await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS, "{name}");
        assert!(header(&refused, "retry-after").parse::<u64>().unwrap() > 0, "{name}");
        assert!(refused.text().await.unwrap().contains("too many attempts"), "{name}");

        let page = post(&server, "/signin", &[], &right, true).await;
        assert_eq!(page.status(), StatusCode::TOO_MANY_REQUESTS, "{name}");
        assert!(header(&page, "content-type").starts_with("text/html") && !header(&page, "retry-after").is_empty());
        assert!(page.headers().get("set-cookie").is_none(), "{name}: no session");
        assert!(page.text().await.unwrap().contains("too many attempts"), "{name}");

        let other = json!({ "email": format!("other-{name}@example.com"), "password": "not the password" });
        assert_eq!(post(&server, "/api/signin", &[], &other, false).await.status(), StatusCode::UNAUTHORIZED);
    }
}

/// Regression: one address could spray guesses over many accounts. Past the address's burst,
/// every sign-in from it answers 429 with `Retry-After`.
#[tokio::test]
async fn sign_ins_from_one_address_are_throttled() {
    for (name, server) in throttled(|c| c.sign_in_per_address = quota(3, HOUR).unwrap()).await {
        for n in 0..3 {
            let guess = json!({ "email": format!("spray-{n}-{name}@example.com"), "password": "a guess, wrong" });
            assert_eq!(post(&server, "/api/signin", &[], &guess, false).await.status(), StatusCode::UNAUTHORIZED);
        }
        let guess = json!({ "email": format!("spray-9-{name}@example.com"), "password": "a guess, wrong" });
        let refused = post(&server, "/api/signin", &[], &guess, false).await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS, "{name}");
        assert!(header(&refused, "retry-after").parse::<u64>().unwrap() > 0, "{name}");
    }
}

/// Regression: sign-up was unlimited, so taken addresses could be enumerated at speed through
/// "already taken". Past the address's burst, sign-up answers 429, on the API and the page.
#[tokio::test]
async fn sign_ups_from_one_address_are_throttled() {
    for (name, server) in throttled(|c| c.sign_up_per_address = quota(2, HOUR).unwrap()).await {
        server.sign_up(&format!("first-{name}@example.com")).await;
        server.sign_up(&format!("second-{name}@example.com")).await;
        let third = sign_up_body(&format!("third-{name}@example.com"), "UTC");
        let refused = post(&server, "/api/signup", &[], &third, false).await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS, "{name}");
        assert!(header(&refused, "retry-after").parse::<u64>().unwrap() > 0, "{name}");
        let page = post(&server, "/signup", &[], &third, true).await;
        assert_eq!(page.status(), StatusCode::TOO_MANY_REQUESTS, "{name}");
        assert!(header(&page, "content-type").starts_with("text/html") && !header(&page, "retry-after").is_empty());
    }
}

/// Regression: every sign-in hashed at once on the async threads, so a flood took all cores and
/// 19 MiB per attempt. With one hash at a time and no queue, concurrent sign-ins beyond it are
/// answered 503 with `Retry-After`, and the rest are answered normally.
#[tokio::test]
async fn password_hashing_is_bounded() {
    let servers = throttled(|c| {
        c.hashing_at_once = 1;
        c.hashing_queue = 0;
    })
    .await;
    for (name, server) in servers {
        let attempts = (0..16).map(|n| {
            let guess = json!({ "email": format!("flood-{n}-{name}@example.com"), "password": "a guess, wrong" });
            let server = &server;
            async move { post(server, "/api/signin", &[], &guess, false).await }
        });
        let answers = futures_util::future::join_all(attempts).await;
        let busy: Vec<_> = answers.iter().filter(|a| a.status() == StatusCode::SERVICE_UNAVAILABLE).collect();
        assert!(!busy.is_empty(), "{name}: some are refused while one is hashed");
        assert!(busy.iter().all(|a| header(a, "retry-after") == "1"), "{name}");
        assert!(
            answers.iter().all(|a| [StatusCode::UNAUTHORIZED, StatusCode::SERVICE_UNAVAILABLE].contains(&a.status()))
        );
    }
}

/// Regression (login CSRF): a form on another site could sign a visitor into the attacker's
/// account. A foreign `Origin` or `Sec-Fetch-Site: cross-site` is refused with 403 and no
/// session on every sign-in and sign-up route; the platform's own origin is accepted.
#[tokio::test]
async fn cross_site_sign_ins_start_no_session() {
    for (name, server) in servers().await {
        let sign_in = signed_up(&server, &format!("csrf-{name}@example.com")).await;
        let sign_up = sign_up_body(&format!("new-{name}@example.com"), "UTC");
        let foreign: [&[(&str, &str)]; 3] =
            [&[("origin", "https://evil.example")], &[("origin", "null")], &[("sec-fetch-site", "cross-site")]];
        for headers in foreign {
            for (path, body, as_form) in [
                ("/api/signin", &sign_in, false),
                ("/signin", &sign_in, true),
                ("/api/signup", &sign_up, false),
                ("/signup", &sign_up, true),
            ] {
                let answer = post(&server, path, headers, body, as_form).await;
                assert_eq!(answer.status(), StatusCode::FORBIDDEN, "{name}: {path} {headers:?}");
                assert!(answer.headers().get("set-cookie").is_none(), "{name}: {path}: no session");
                let page = as_form && header(&answer, "content-type").starts_with("text/html");
                let text = answer.text().await.unwrap();
                assert!(text.contains("another site"), "{name}: {path}: {text}");
                assert!(page || !as_form, "{name}: {path}: a page for a form");
            }
        }
        let own = [("origin", server.base.as_str()), ("sec-fetch-site", "same-origin")];
        let answer = post(&server, "/signin", &own, &sign_in, true).await;
        assert!(answer.headers().get("set-cookie").is_some(), "{name}: the platform's own form signs in");
        assert_eq!(post(&server, "/api/signin", &own, &sign_in, false).await.status(), StatusCode::OK, "{name}");
    }
}

/// Regression: `José` typed composed and decomposed were two accounts, and invisible characters
/// (zero-width, bidi controls, NUL) made look-alike addresses. Emails are NFC and lowercase;
/// invisible characters are refused with 400 and a clear message.
#[tokio::test]
async fn emails_are_normalised_and_invisible_characters_refused() {
    for (name, server) in servers().await {
        let decomposed = format!("jose\u{301}-{name}@example.com");
        server.sign_up(&decomposed).await;
        let composed = format!("JOS\u{c9}-{name}@example.com");
        let again = sign_up_body(&composed, "UTC");
        assert_eq!(post(&server, "/api/signup", &[], &again, false).await.status(), StatusCode::CONFLICT, "{name}");
        let sign_in = sign_in_body(&composed);
        let answer = post(&server, "/api/signin", &[], &sign_in, false).await;
        let body: serde_json::Value = answer.json().await.unwrap();
        assert_eq!(body["user"]["email"].as_str(), Some(format!("jos\u{e9}-{name}@example.com").as_str()), "{name}");

        // (A NUL is refused too, with its own message: tests/bad_bytes.rs.)
        for invisible in ["\u{200B}", "\u{202E}", "\u{2066}", "\u{FEFF}"] {
            let email = format!("ana{invisible}-{name}@example.com");
            let body = sign_up_body(&email, "UTC");
            let answer = post(&server, "/api/signup", &[], &body, false).await;
            assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{name}: {email:?}");
            let body: serde_json::Value = answer.json().await.unwrap();
            assert!(body["error"].as_str().unwrap().contains("invisible characters"), "{name}: {body}");
        }

        // An account stored before NFC, decomposed, is still found.
        let hash = server.state.store.user_by_email(&format!("jos\u{e9}-{name}@example.com")).await.unwrap().unwrap();
        let earlier = format!("rene\u{301}-{name}@example.com");
        server.state.store.create_user(&earlier, &hash.password_hash, "UTC", 0).await.unwrap();
        let sign_in = sign_in_body(&format!("REN\u{c9}-{name}@example.com"));
        assert_eq!(post(&server, "/api/signin", &[], &sign_in, false).await.status(), StatusCode::OK, "{name}");
    }
}

/// Regression: a session lasted 14 days even unused, and expired sessions were never deleted.
/// A session unused for more than 7 days is refused, and the upkeep round purges it.
#[tokio::test]
async fn idle_sessions_end_and_are_purged() {
    const DAY: i64 = 24 * 3600;
    for (name, server) in servers().await {
        let ana = server.sign_up(&format!("idle-{name}@example.com")).await;
        let (_, me, _) = server.send(&ana, Method::GET, "/api/me", None).await;
        let user_id = me["user"]["id"].as_i64().unwrap();
        let now = servio_platform::now();
        let session =
            servio_store::Session { user_id, csrf_token: "c".into(), expires_at: now + 6 * DAY, idle_seconds: 7 * DAY };
        let token = format!("s_idle_{name}");
        server
            .state
            .store
            .create_session(&servio_platform::domain::accounts::secrets::token_hash(&token), &session, now - 8 * DAY)
            .await
            .unwrap();
        let idle = Browser { cookie: Some(format!("__Host-servio_session={token}")), ..Browser::default() };
        assert_eq!(server.send(&idle, Method::GET, "/api/me", None).await.0, StatusCode::UNAUTHORIZED, "{name}");
        assert_eq!(server.send(&ana, Method::GET, "/api/me", None).await.0, StatusCode::OK, "{name}: a fresh one");

        let round = servio_platform::upkeep::run_once(&server.state).await.unwrap();
        assert!(round.sessions_purged >= 1, "{name}: {round:?}");
        assert_eq!(server.send(&ana, Method::GET, "/api/me", None).await.0, StatusCode::OK, "{name}: kept");
    }
}

/// Regression: pages and answers showing a new token could be cached, and pages could be
/// framed (clickjacking) or sniffed. Every page, and every answer with a token, says
/// `Cache-Control: no-store`; pages carry a content security policy and the other headers.
#[tokio::test]
async fn pages_and_token_answers_carry_security_headers() {
    for (name, server) in servers().await {
        let ana = server.sign_up(&format!("headers-{name}@example.com")).await;
        let page = server.http.get(format!("{}/signin", server.base)).send().await.unwrap();
        let ai = server
            .http
            .post(format!("{}/ai/tokens", server.base))
            .header("cookie", ana.cookie.as_deref().unwrap())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&json!({ "csrf_token": ana.csrf, "name": "laptop" })))
            .send()
            .await
            .unwrap();
        assert_eq!(ai.status(), StatusCode::OK, "{name}");
        for response in [&page, &ai] {
            let csp = header(response, "content-security-policy");
            assert!(csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'self'"), "{name}: {csp}");
            assert_eq!(header(response, "x-content-type-options"), "nosniff", "{name}");
            assert_eq!(header(response, "referrer-policy"), "same-origin", "{name}");
            assert_eq!(header(response, "cache-control"), "no-store", "{name}");
        }
        let token = server
            .http
            .post(format!("{}/api/tokens", server.base))
            .header("cookie", ana.cookie.as_deref().unwrap())
            .header("x-csrf-token", ana.csrf.as_deref().unwrap())
            .json(&json!({ "name": "cli" }))
            .send()
            .await
            .unwrap();
        let sign_in = sign_in_body(&format!("headers-{name}@example.com"));
        let signed_in = post(&server, "/api/signin", &[], &sign_in, false).await;
        for response in [&token, &signed_in] {
            assert!(response.status().is_success(), "{name}");
            assert_eq!(header(response, "cache-control"), "no-store", "{name}");
        }
    }
}

/// `POST /api/signin` from `address` (Linux answers the whole of 127/8 on the loopback) with
/// `cookie` when given.
async fn sign_in_from(
    server: &common::Server,
    address: &str,
    body: &serde_json::Value,
    cookie: Option<&str>,
) -> reqwest::Response {
    let http = reqwest::Client::builder().local_address(address.parse::<std::net::IpAddr>().unwrap()).build().unwrap();
    let mut request = http.post(format!("{}/api/signin", server.base)).json(body);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    request.send().await.unwrap()
}

/// The `name=value` of the `Set-Cookie` named `name`.
fn set_cookie(response: &reqwest::Response, name: &str) -> Option<String> {
    let values = response.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap());
    values.map(|v| v.split(';').next().unwrap().to_owned()).find(|v| v.starts_with(&format!("{name}=")))
}

/// Regression (issue 25): ten wrong passwords from anyone locked the owner out for as long as
/// the flood went on, their right password answered 429, and their own password change too.
/// Now the owner's browser, a known device since its last sign-in, skips the account's limit,
/// the signed-in password change has a limit of its own, and each attacker's (account, address)
/// pair backs off with a growing wait.
#[tokio::test]
async fn the_owner_is_not_locked_out_by_others_wrong_passwords() {
    for (name, server) in servers().await {
        let email = format!("owner-{name}@example.com");
        let right = signed_up(&server, &email).await;
        let first = sign_in_from(&server, "127.0.0.1", &right, None).await;
        assert_eq!(first.status(), StatusCode::OK, "{name}");
        let device = set_cookie(&first, "__Host-servio_device").expect("the known-device cookie");
        assert!(header(&first, "set-cookie").starts_with("__Host-servio_session="), "{name}: the session comes first");

        let wrong = json!({ "email": email, "password": "not the password" });
        for address in ["127.0.0.2", "127.0.0.3", "127.0.0.4"] {
            for _ in 0..4 {
                sign_in_from(&server, address, &wrong, None).await;
            }
        }
        let unknown = sign_in_from(&server, "127.0.0.1", &right, None).await;
        assert_eq!(unknown.status(), StatusCode::TOO_MANY_REQUESTS, "{name}: the account's limit is spent");
        let forged = format!("__Host-servio_device={}", "A".repeat(80));
        let refused = sign_in_from(&server, "127.0.0.1", &right, Some(&forged)).await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS, "{name}: a forged device is no device");
        let owner = sign_in_from(&server, "127.0.0.1", &right, Some(&device)).await;
        assert_eq!(owner.status(), StatusCode::OK, "{name}: the owner's known device signs in");
        let session = set_cookie(&owner, "__Host-servio_session").unwrap();
        let body: serde_json::Value = owner.json().await.unwrap();
        let ana = Browser {
            cookie: Some(session),
            csrf: body["csrf_token"].as_str().map(str::to_owned),
            ..Browser::default()
        };
        let change = json!({ "current_password": common::PASSWORD, "new_password": "another long password" });
        let (status, body, _) = server.send(&ana, Method::PUT, "/api/me/password", Some(change)).await;
        assert_eq!(status, StatusCode::OK, "{name}: the owner's password change: {body}");

        // A pair past its free attempts waits, and longer after each attempt let through.
        let other = json!({ "email": format!("other-{name}@example.com"), "password": "a guess, wrong" });
        let mut waits = Vec::new();
        while waits.len() < 2 {
            let answer = sign_in_from(&server, "127.0.0.5", &other, None).await;
            if answer.status() == StatusCode::TOO_MANY_REQUESTS {
                let wait: u64 = header(&answer, "retry-after").parse().unwrap();
                waits.push(wait);
                tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
            }
        }
        assert!(waits[0] >= 1 && waits[1] > waits[0], "{name}: {waits:?}");
    }
}
