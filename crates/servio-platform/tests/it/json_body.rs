//! Request bodies of the JSON API (interpretation §5), on every route that reads one: a body
//! without `Content-Type` is JSON, a body of another type is refused with `415`, and broken
//! JSON is a `400` saying what is wrong and where, all in the API's `{"error": …}` shape.
//!
//! Regression (issue 11): `curl -d` of a tool call answered 400 (a form type taken as broken
//! JSON), and a body without `Content-Type` was refused by axum's extractor in plain text.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common;

/// Every route that reads a JSON body.
const BODY_ROUTES: &[(&str, &str)] = &[
    ("POST", "/api/signup"),
    ("POST", "/api/signin"),
    ("PUT", "/api/me/time_zone"),
    ("POST", "/api/tokens"),
    ("POST", "/api/vault"),
    ("PUT", "/api/vault/{id}/credential"),
    ("POST", "/api/vault/{id}/backfill"),
    ("POST", "/api/vault/{id}/approve"),
    ("POST", "/api/vault/{id}/keep"),
    ("PUT", "/api/me/password"),
    ("DELETE", "/api/me"),
    ("POST", "/api/directory/claims"),
    ("POST", "/api/tools/{name}/call"),
    ("PUT", "/api/me/log_arguments"),
];

/// Sends `body` as it is, with `content_type` when given, and an API token when given.
async fn send_raw(
    server: &common::Server,
    token: Option<&str>,
    (verb, path): (&str, &str),
    content_type: Option<&str>,
    body: &str,
) -> (StatusCode, Value) {
    let path = path.replace("{id}", "1").replace("{name}", "x");
    let method = reqwest::Method::from_bytes(verb.as_bytes()).unwrap();
    let mut request = server.http.request(method, format!("{}{path}", server.base)).body(body.to_owned());
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{verb} {path}: not JSON ({e}): {text}"));
    (status, body)
}

/// A new user and one of their API tokens.
async fn user_with_token(server: &common::Server, email: &str) -> String {
    let browser = server.sign_up(email).await;
    let (_, token, _) = server
        .send(
            &browser,
            reqwest::Method::POST,
            "/api/tokens",
            Some(json!({ "scope": "account", "password": common::PASSWORD, "name": "body test" })),
        )
        .await;
    token["token"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_body_of_another_type_than_json_is_refused_with_415_on_every_route() {
    for (name, server) in common::servers(None).await {
        let documented: Vec<(String, String)> = common::api_routes(&server)
            .await
            .into_iter()
            .filter(|route| route.body_schema.is_some())
            .map(|route| (route.method, route.path))
            .collect();
        let listed: Vec<(String, String)> = BODY_ROUTES.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
        assert!(
            documented.len() == listed.len() && listed.iter().all(|route| documented.contains(route)),
            "{name}: the routes with a JSON body are these: {documented:?}"
        );
        let token = user_with_token(&server, &format!("types-{name}@example.com")).await;
        for &route in BODY_ROUTES {
            for content_type in ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"] {
                let (status, body) = send_raw(&server, Some(&token), route, Some(content_type), "{}").await;
                let label = format!("{name}: {route:?} as {content_type}: {body}");
                assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{label}");
                let message = body["error"].as_str().unwrap_or_default();
                assert!(
                    message.contains("Content-Type: application/json") && message.contains(content_type),
                    "{label}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_body_without_content_type_is_json() {
    for (name, server) in common::servers(None).await {
        let email = format!("untyped-{name}@example.com");
        let signup = json!({ "email": email, "password": common::PASSWORD, "time_zone": "UTC" }).to_string();
        let (status, body) = send_raw(&server, None, ("POST", "/api/signup"), None, &signup).await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {body}");

        let token = user_with_token(&server, &format!("untyped-token-{name}@example.com")).await;
        let cases = [
            (("PUT", "/api/me/time_zone"), None, r#"{"time_zone": "Europe/Paris"}"#),
            (("PUT", "/api/me/log_arguments"), None, r#"{"log_arguments": true}"#),
            (("PUT", "/api/me/log_arguments"), Some("application/json; charset=utf-8"), r#"{"log_arguments": false}"#),
            (("POST", "/api/tokens"), Some("application/merge-patch+json"), r#"{"name": "suffix"}"#),
        ];
        for (route, content_type, text) in cases {
            let (status, body) = send_raw(&server, Some(&token), route, content_type, text).await;
            assert!(status.is_success(), "{name}: {route:?} as {content_type:?}: {status} {body}");
        }
    }
}

#[tokio::test]
async fn broken_json_is_a_400_saying_what_and_where() {
    let (_, server) = common::servers(None).await.remove(0);
    let token = user_with_token(&server, "broken-json@example.com").await;
    let cases = [
        (
            ("PUT", "/api/me/time_zone"),
            "{\"time_zone\": \"UTC\",\n}",
            "the body is not valid JSON: trailing comma at line 2 column 1",
        ),
        (
            ("PUT", "/api/me/time_zone"),
            r#"{"time_zone": 1}"#,
            "the body is JSON but not what this route takes: invalid type: integer `1`, expected a string at line 1 column 15",
        ),
        (
            ("POST", "/api/tools/{name}/call"),
            "day=2026-08-20",
            "the body is not valid JSON: expected value at line 1 column 1",
        ),
        (("POST", "/api/tools/{name}/call"), "", "the body is empty: send it as JSON"),
        (
            ("PUT", "/api/me/log_arguments"),
            "{}",
            "the body is JSON but not what this route takes: missing field `log_arguments` at line 1 column 2",
        ),
    ];
    for (route, text, want) in cases {
        let (status, body) = send_raw(&server, Some(&token), route, None, text).await;
        assert_eq!((status, body), (StatusCode::BAD_REQUEST, json!({ "error": want })), "{route:?} {text:?}");
    }
}
