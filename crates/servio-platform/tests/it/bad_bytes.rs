//! Text with a NUL character (`\u0000`) over real HTTP, on every backend: PostgreSQL refuses NUL
//! in text, so every user-supplied string that reaches the store is checked first and refused
//! with a `400` that says why, on the JSON API, the form pages and MCP alike; and one user's bad
//! tool name costs no other user any entry of their call log.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common;
use common::{Browser, Server};
use servio_platform::testing::{MCP_VERSION, mcp_post};

/// A program holding a new API token of a user signed up as `email`.
async fn program(server: &Server, email: &str) -> Browser {
    let browser = server.sign_up(email).await;
    let (status, created, _) = server
        .send(
            &browser,
            Method::POST,
            "/api/tokens",
            Some(json!({ "scope": "account", "password": common::PASSWORD, "name": "t" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    Browser { bearer: created["token"].as_str().map(str::to_owned), ..Browser::default() }
}

/// Asserts a `400` whose error names the NUL.
fn assert_refused(what: &str, (status, body): (StatusCode, &Value)) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
    let error = body["error"].as_str().unwrap_or_default();
    assert!(error.contains("NUL"), "{what}: says why: {body}");
}

/// Posts a form to a page and returns its status and HTML.
async fn post_form(server: &Server, path: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
    let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form.iter()).finish();
    let response = server
        .http
        .post(format!("{}{path}", server.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    (response.status(), response.text().await.unwrap())
}

/// Regression: a NUL in an email, a token name or a search was a `500` on PostgreSQL (which
/// refuses NUL in text); it is a `400` saying so on every backend.
#[tokio::test]
async fn a_nul_in_user_text_is_a_bad_request_not_a_server_error() {
    for (name, server) in common::servers(None).await {
        let nobody = Browser::default();
        let password = common::PASSWORD;
        let email = format!("a\u{0}na-{name}@example.com");
        let signup = json!({ "email": email, "password": password, "time_zone": "UTC" });
        let (status, body, _) = server.send(&nobody, Method::POST, "/api/signup", Some(signup)).await;
        assert_refused(&format!("{name}: sign-up email"), (status, &body));
        let signin = json!({ "email": email, "password": password });
        let (status, body, _) = server.send(&nobody, Method::POST, "/api/signin", Some(signin)).await;
        assert_refused(&format!("{name}: sign-in email"), (status, &body));

        let ana = server.sign_up(&format!("ana-nul-{name}@example.com")).await;
        let token = json!({ "name": "lap\u{0}top" });
        let (status, body, _) = server.send(&ana, Method::POST, "/api/tokens", Some(token)).await;
        assert_refused(&format!("{name}: token name"), (status, &body));
        let zone = json!({ "time_zone": "UTC\u{0}" });
        let (status, body, _) = server.send(&ana, Method::PUT, "/api/me/time_zone", Some(zone)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: time zone: {body}");
        let (status, body, _) = server.send(&nobody, Method::GET, "/api/directory?q=a%00b", None).await;
        assert_refused(&format!("{name}: directory search"), (status, &body));
        for (path, url) in [("/api/vault", "https://exa\u{0}mple.com"), ("/api/directory/claims", "exa\u{0}mple.com")] {
            let (status, body, _) = server.send(&ana, Method::POST, path, Some(json!({ "url": url }))).await;
            assert!(status.is_client_error(), "{name}: {path}: {status} {body}");
        }

        // The form pages: the form again, with why.
        let (status, html) =
            post_form(&server, "/signup", &[("email", &email), ("password", password), ("time_zone", "UTC")]).await;
        assert!(status == StatusCode::BAD_REQUEST && html.contains("NUL"), "{name}: sign-up page: {status}");
        let (status, html) = post_form(&server, "/signin", &[("email", &email), ("password", password)]).await;
        assert!(status == StatusCode::BAD_REQUEST && html.contains("NUL"), "{name}: sign-in page: {status}");
        let page = server.http.get(format!("{}/directory?q=a%00b", server.base)).send().await.unwrap();
        assert_eq!(page.status(), StatusCode::BAD_REQUEST, "{name}: directory page");
    }
}

/// Regression: a call by a tool name holding a NUL was logged, and on PostgreSQL failed the
/// call log's whole batch, so other users lost their entries (17 calls in the audit). Such a
/// name is now refused before it is logged, over the API and over MCP, and every call of the
/// other user made meanwhile is in their log.
#[tokio::test]
async fn a_bad_tool_name_costs_no_other_user_their_log() {
    for (name, server) in common::servers(None).await {
        let ana = program(&server, &format!("ana-log-{name}@example.com")).await;
        let ben = program(&server, &format!("ben-log-{name}@example.com")).await;
        const CALLS: usize = 12;
        // Interleaved and at once, so that the writer's batches mix both users' calls.
        let paths: Vec<(&Browser, String)> = (0..CALLS)
            .flat_map(|i| [(&ana, "/api/tools/ba%00d/call".to_owned()), (&ben, format!("/api/tools/missing_{i}/call"))])
            .collect();
        let calls = paths.iter().map(|(who, path)| server.send(who, Method::POST, path, Some(json!({}))));
        let answers = futures_util::future::join_all(calls).await;
        for (index, (status, body, _)) in answers.iter().enumerate() {
            match index % 2 {
                0 => assert_refused(&format!("{name}: ana's bad name"), (*status, body)),
                _ => assert_eq!(*status, StatusCode::NOT_FOUND, "{name}: ben's unknown tool: {body}"),
            }
        }
        assert_eq!(mcp_call_status(&server, ana.bearer.as_deref().unwrap(), "ba\u{0}d").await, -32602, "{name}");

        // The log is written in the background: wait for Ben's calls.
        let mut logged = 0;
        for _ in 0..50 {
            let (_, log, _) = server.send(&ben, Method::GET, "/api/tool-calls", None).await;
            logged = log["calls"].as_array().map_or(0, Vec::len);
            if logged == CALLS {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(logged, CALLS, "{name}: every call of ben's is logged");
        let (_, log, _) = server.send(&ana, Method::GET, "/api/tool-calls", None).await;
        assert_eq!(log["calls"], json!([]), "{name}: refused calls are not logged");
    }
}

/// The JSON-RPC error code of a `tools/call` of `tool` over MCP, in a new session.
async fn mcp_call_status(server: &Server, token: &str, tool: &str) -> i64 {
    let post = |session: Option<String>, message: Value| async move {
        mcp_post(&server.http, &server.base, token, session.as_deref(), &message).await
    };
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": MCP_VERSION, "capabilities": {}, "clientInfo": { "name": "test", "version": "0" } } });
    let (_, session, _) = post(None, initialize).await;
    let session = session.expect("a session id");
    post(Some(session.clone()), json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    let call =
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": tool, "arguments": {} } });
    let (_, _, messages) = post(Some(session), call).await;
    let answer = messages.into_iter().find(|message| message["id"] == 2).unwrap_or_default();
    answer["error"]["code"].as_i64().unwrap_or_default()
}
