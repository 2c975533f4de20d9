//! Accounts over real HTTP, on every backend: sessions in `__Host-` cookies rotated at sign-in,
//! CSRF on cookie-authenticated changes, API tokens shown once and usable as bearer tokens, and
//! one user's things out of another's reach.

use reqwest::{Method, StatusCode};
use serde_json::json;

mod common;
use common::{Browser, browser};

async fn servers() -> Vec<(&'static str, common::Server)> {
    common::servers(None).await
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
        let credentials = json!({ "email": format!("ANA-{name}@example.com"), "password": "a long enough password" });
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
            (
                json!({ "email": format!("ben-{name}@example.com"), "password": "a long enough password", "time_zone": "UTC" }),
                StatusCode::CONFLICT,
                "already taken",
            ),
            (
                json!({ "email": "ben", "password": "a long enough password", "time_zone": "UTC" }),
                StatusCode::BAD_REQUEST,
                "`email`",
            ),
            (
                json!({ "email": "x@example.com", "password": "short", "time_zone": "UTC" }),
                StatusCode::BAD_REQUEST,
                "`password`",
            ),
            (
                json!({ "email": "x@example.com", "password": "a long enough password", "time_zone": "Mars/Base" }),
                StatusCode::BAD_REQUEST,
                "`time_zone`",
            ),
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
        let (status, created, _) =
            server.send(&chen, Method::POST, "/api/tokens", Some(json!({ "name": "laptop" }))).await;
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
    let Ok(url) = std::env::var("SERVIO_TEST_DATABASE_URL") else {
        eprintln!("skipped: SERVIO_TEST_DATABASE_URL is not set");
        return;
    };
    let mut servers = Vec::new();
    for store in servio_store::testing::postgres_sharing(&url, 2).await {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let client = servio_client::Client::new(servio_client::ClientConfig::default()).unwrap();
        let secrets = servio_platform::secrets::Secrets::from_key(&[1; 32]);
        let state = servio_platform::AppState::new(Arc::new(store), client, secrets, Default::default());
        let app = servio_platform::router(state.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        servers.push(common::Server { base, http: reqwest::Client::new(), state });
    }
    let ana = servers[0].sign_up("shared@example.com").await;
    let (status, me, _) = servers[1].send(&ana, Method::GET, "/api/me", None).await;
    assert_eq!((status, me["user"]["email"].as_str()), (StatusCode::OK, Some("shared@example.com")));
    let (_, token, _) = servers[1].send(&ana, Method::POST, "/api/tokens", Some(json!({ "name": "cli" }))).await;
    let program = Browser { bearer: token["token"].as_str().map(str::to_owned), ..Browser::default() };
    assert_eq!(servers[0].send(&program, Method::GET, "/api/me", None).await.0, StatusCode::OK);
}
