//! Walks every documented route: each exists, nobody gets past a signed-in route, another user
//! reaches nothing of the first user's, and no cookie-authenticated change passes without the
//! CSRF token.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_platform::routes::openapi::{Access, ROUTES};

mod common;
use common::Browser;

fn method(name: &str) -> Method {
    Method::from_bytes(name.as_bytes()).unwrap()
}

fn body_for(path: &str) -> Option<Value> {
    Some(match path {
        "/api/me/time_zone" => json!({ "time_zone": "UTC" }),
        "/api/tokens" => json!({ "name": "walk" }),
        "/api/vault" | "/api/directory/claims" => json!({ "url": "https://localhost:1" }),
        p if p.ends_with("/credential") => json!({ "token": "x" }),
        p if p.ends_with("/backfill") => json!({ "from": "2026-08-01", "to": "2026-08-02" }),
        _ => json!({}),
    })
}

#[tokio::test]
async fn every_route_exists_and_is_guarded() {
    for (name, server) in common::servers(None).await {
        let first = server.sign_up(&format!("first-{name}@example.com")).await;
        let second = server.sign_up(&format!("second-{name}@example.com")).await;
        // Something of the first user's for the {id} routes: an API token and a claim.
        let (_, token, _) = server.send(&first, Method::POST, "/api/tokens", Some(json!({ "name": "mine" }))).await;
        let (_, claim, _) = server
            .send(&first, Method::POST, "/api/directory/claims", Some(json!({ "url": "https://a.example" })))
            .await;
        for route in ROUTES {
            let id = if route.path.starts_with("/api/directory/claims") { &claim["id"] } else { &token["id"] };
            let path = route.path.replace("{id}", &id.to_string());
            let label = format!("{name}: {} {}", route.method, route.path);

            // Nobody.
            let (status, answer, _) =
                server.send(&Browser::default(), method(route.method), &path, body_for(route.path)).await;
            assert!(!(status == StatusCode::NOT_FOUND && answer.is_null()), "{label}: the route is missing");
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{label}: the method is missing");
            if route.access == Access::User {
                assert_eq!(status, StatusCode::UNAUTHORIZED, "{label} as nobody: {answer}");
            }

            // A cookie without the CSRF token may read, never change.
            let no_csrf = Browser { csrf: None, ..first.clone() };
            let (status, answer, _) = server.send(&no_csrf, method(route.method), &path, body_for(route.path)).await;
            if route.access == Access::User && route.method != "GET" {
                assert_eq!(status, StatusCode::FORBIDDEN, "{label} without CSRF: {answer}");
            }

            // The second user reaches nothing of the first user's.
            if route.access == Access::User && route.path.contains("{id}") {
                let (status, answer, _) = server.send(&second, method(route.method), &path, body_for(route.path)).await;
                assert_eq!(status, StatusCode::NOT_FOUND, "{label} as another user: {answer}");
            }
        }
        // The first user's token survived all of that.
        let (_, tokens, _) = server.send(&first, Method::GET, "/api/tokens", None).await;
        assert!(tokens["tokens"].as_array().unwrap().iter().any(|t| t["id"] == token["id"]), "{name}");
    }
}

#[tokio::test]
async fn the_openapi_document_lists_every_route() {
    let (_, server) = common::servers(None).await.remove(0);
    let (status, doc, _) = server.send(&Browser::default(), Method::GET, "/api/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    for route in ROUTES {
        assert!(doc["paths"][route.path][route.method.to_lowercase()].is_object(), "{} {}", route.method, route.path);
    }
}

/// The web pages: nobody is sent to sign in, a post without the CSRF field changes nothing, and
/// another user reaches nothing of the first user's.
#[tokio::test]
async fn every_page_is_guarded() {
    use servio_platform::routes::pages::PAGES;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for (name, server) in common::servers(None).await {
        let first = server.sign_up(&format!("page-first-{name}@example.com")).await;
        let second = server.sign_up(&format!("page-second-{name}@example.com")).await;
        let (_, claim, _) = server
            .send(&first, Method::POST, "/api/directory/claims", Some(json!({ "url": "https://b.example" })))
            .await;
        for (verb, path, signed_in) in PAGES {
            // A vault id that is not the second user's, and the first user's claim.
            let id = if path.starts_with("/directory/claims") { claim["id"].to_string() } else { "1".to_owned() };
            let url = format!("{}{}", server.base, path.replace("{id}", &id));
            let label = format!("{name}: {verb} {path}");
            let send = |cookie: Option<&str>, csrf: Option<&str>| {
                let mut request =
                    http.request(method(verb), &url).header("content-type", "application/x-www-form-urlencoded");
                if let Some(cookie) = cookie {
                    request = request.header("cookie", cookie);
                }
                let mut form = vec![
                    ("url", "https://c.example"),
                    ("token", "x"),
                    ("email", "e@x.io"),
                    ("password", "p"),
                    ("time_zone", "UTC"),
                ];
                if let Some(csrf) = csrf {
                    form.push(("csrf_token", csrf));
                }
                request.body(url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish()).send()
            };
            let nobody = send(None, None).await.unwrap();
            assert_ne!(nobody.status(), StatusCode::METHOD_NOT_ALLOWED, "{label}: the method is missing");
            if *signed_in {
                assert_eq!(nobody.status(), StatusCode::SEE_OTHER, "{label} as nobody");
                assert_eq!(nobody.headers()["location"], "/signin", "{label}");
                if *verb == "POST" {
                    let no_csrf = send(first.cookie.as_deref(), None).await.unwrap();
                    assert_eq!(no_csrf.status(), StatusCode::FORBIDDEN, "{label} without the CSRF field");
                }
                if path.contains("{id}") {
                    let other = send(second.cookie.as_deref(), second.csrf.as_deref()).await.unwrap();
                    assert_eq!(other.status(), StatusCode::NOT_FOUND, "{label} as another user");
                }
            }
        }
    }
}
