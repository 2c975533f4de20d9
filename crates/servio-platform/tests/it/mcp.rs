//! The MCP endpoint's transport rules (MCP 2025-11-25, streamable HTTP) over real HTTP, on every
//! backend, with two users and their own API tokens: a foreign `Origin` is refused, a session
//! answers only its owner whatever the method, unreadable params and bodies get the errors the
//! specification names, and the owner's `DELETE` is a success a client can read as one.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common;

use common::{initialize, mcp, messages, open_session, token_of};

/// Regression: a page on another origin reached `/mcp` (200); the transport requires a 403,
/// before the token is even looked at. Same-origin and no-`Origin` requests still pass.
#[tokio::test]
async fn a_request_from_another_origin_is_refused() {
    for (name, server) in common::servers(None).await {
        let token = token_of(&server, &format!("ana-origin-{name}@example.com")).await;
        let port = server.base.rsplit(':').next().unwrap();
        for origin in ["https://evil.example", "null", &format!("http://10.0.0.1:{port}")] {
            let response =
                mcp(&server, Method::POST, &token, None).header("origin", origin).json(&initialize()).send().await;
            assert_eq!(response.unwrap().status(), StatusCode::FORBIDDEN, "{name}: {origin}");
        }
        let anonymous = server.http.post(format!("{}/mcp", server.base)).header("origin", "https://evil.example");
        assert_eq!(anonymous.json(&initialize()).send().await.unwrap().status(), StatusCode::FORBIDDEN, "{name}");

        let same = mcp(&server, Method::POST, &token, None).header("origin", &server.base).json(&initialize());
        assert_eq!(same.send().await.unwrap().status(), StatusCode::OK, "{name}: same origin");
        // A platform on a loopback address takes the pages of this machine under any name (as
        // the MCP conformance suite's DNS-rebinding scenario requires).
        let local = server.base.replace("127.0.0.1", "localhost");
        let local = mcp(&server, Method::POST, &token, None).header("origin", &local).json(&initialize());
        assert_eq!(local.send().await.unwrap().status(), StatusCode::OK, "{name}: localhost");
        let program = mcp(&server, Method::POST, &token, None).json(&initialize());
        assert_eq!(program.send().await.unwrap().status(), StatusCode::OK, "{name}: no Origin");
    }
}

/// Regression: another user's token could open the stream of a session it did not own (and
/// receive the owner's notifications) and end it with `DELETE`; its `POST` got a JSON-RPC
/// error that told the session was live. Now all three answer 404, as for a session that does
/// not exist, and the owner's own requests work, ending with a `DELETE` that answers 204 (the
/// SDK's 202 reads as a failure to the official Python client).
#[tokio::test]
async fn a_session_answers_only_the_user_who_opened_it() {
    for (name, server) in common::servers(None).await {
        let ana = token_of(&server, &format!("ana-session-{name}@example.com")).await;
        let ben = token_of(&server, &format!("ben-session-{name}@example.com")).await;
        let session = open_session(&server, &ana).await;
        let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });

        let post = mcp(&server, Method::POST, &ben, Some(&session)).json(&list).send().await.unwrap();
        assert_eq!(post.status(), StatusCode::NOT_FOUND, "{name}: ben's POST");
        let stream = mcp(&server, Method::GET, &ben, Some(&session)).send().await.unwrap();
        assert_eq!(stream.status(), StatusCode::NOT_FOUND, "{name}: ben's GET");
        let delete = mcp(&server, Method::DELETE, &ben, Some(&session)).send().await.unwrap();
        assert_eq!(delete.status(), StatusCode::NOT_FOUND, "{name}: ben's DELETE");
        let made_up = mcp(&server, Method::POST, &ben, Some("no-such-session")).json(&list).send().await.unwrap();
        assert_eq!(made_up.status(), StatusCode::NOT_FOUND, "{name}: the same answer as for no session");

        // The session survived Ben: Ana lists, opens her stream and ends the session.
        let own = mcp(&server, Method::POST, &ana, Some(&session)).json(&list).send().await.unwrap();
        assert_eq!(own.status(), StatusCode::OK, "{name}");
        let own = messages(own).await;
        assert!(own.iter().any(|m| m["result"]["tools"].is_array()), "{name}: {own:?}");
        let stream = mcp(&server, Method::GET, &ana, Some(&session)).send().await.unwrap();
        assert_eq!(stream.status(), StatusCode::OK, "{name}: ana's stream");
        drop(stream);
        let delete = mcp(&server, Method::DELETE, &ana, Some(&session)).send().await.unwrap();
        assert!(matches!(delete.status(), StatusCode::OK | StatusCode::NO_CONTENT), "{name}: {}", delete.status());
        let after = mcp(&server, Method::POST, &ana, Some(&session)).json(&list).send().await.unwrap();
        assert_eq!(after.status(), StatusCode::NOT_FOUND, "{name}: the session is over");
    }
}

/// Regression: `tools/call` with `arguments` that are not an object answered -32601 (method
/// not found), as if the server had no tools; it is -32602, invalid params.
#[tokio::test]
async fn tools_call_with_arguments_that_are_not_an_object_is_invalid_params() {
    for (name, server) in common::servers(None).await {
        let ana = token_of(&server, &format!("ana-params-{name}@example.com")).await;
        let session = open_session(&server, &ana).await;
        for (id, arguments) in [json!("a string"), json!([1, 2]), json!(7)].into_iter().enumerate() {
            let call = json!({ "jsonrpc": "2.0", "id": id + 10, "method": "tools/call",
                "params": { "name": "anything", "arguments": arguments } });
            let response = mcp(&server, Method::POST, &ana, Some(&session)).json(&call).send().await.unwrap();
            let answer = messages(response).await;
            let error = answer.iter().find(|m| m["id"] == id + 10).map(|m| &m["error"]);
            assert_eq!(error.map(|e| e["code"].clone()), Some(json!(-32602)), "{name}: {arguments}: {answer:?}");
            let message = error.and_then(|e| e["message"].as_str()).unwrap_or_default();
            assert!(message.contains("arguments"), "{name}: says what is wrong: {message}");
        }
    }
}

/// Regression: a body that is not JSON answered 415 (Unsupported Media Type) though its
/// content type was right; it is a 400 with a JSON-RPC parse error. A wrong content type stays
/// 415.
#[tokio::test]
async fn a_body_that_is_not_json_rpc_is_a_bad_request() {
    for (name, server) in common::servers(None).await {
        let ana = token_of(&server, &format!("ana-body-{name}@example.com")).await;
        for body in ["{\"jsonrpc\": \"2.0\", ", "not json", "{}"] {
            let response = mcp(&server, Method::POST, &ana, None)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{name}: {body}");
            let answer: Value = response.json().await.unwrap();
            assert_eq!(answer["error"]["code"], -32700, "{name}: {answer}");
        }
        let response = mcp(&server, Method::POST, &ana, None)
            .header("content-type", "text/plain")
            .body(initialize().to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE, "{name}: a wrong content type");
    }
}

/// Point 1 of issue 24: revocation reaches open streams. An MCP stream opened with a token that
/// is then revoked ends, and hears no more of the user's changes; "sign out everywhere" and a
/// password change revoke API tokens when asked, and otherwise say which still work.
#[tokio::test]
async fn a_revoked_token_ends_its_streams_and_sign_outs_say_which_tokens_stay() {
    use std::time::Duration;
    for (name, server) in common::servers(None).await {
        let who = server.sign_up(&format!("revoked-stream-{name}@example.com")).await;
        let token = common::token_of_browser(&server, &who).await;
        let mut stream = common::listen(&server, &token).await;
        let (_, tokens, _) = server.send(&who, Method::GET, "/api/tokens", None).await;
        let id = tokens["tokens"][0]["id"].as_i64().unwrap();
        let (status, _, _) = server.send(&who, Method::DELETE, &format!("/api/tokens/{id}"), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        server.state.notices.told(&[servio_store::Change::Catalogue(who.user_id.unwrap())]);
        let heard = common::hear(&mut stream, "notifications/tools/list_changed", Duration::from_secs(10)).await;
        assert!(!heard.text.contains("list_changed"), "{name}: a revoked token's stream heard: {heard:?}");
        assert!(heard.ended, "{name}: the stream ended");

        // Signing out everywhere keeps API tokens unless asked, and says which stay.
        let kept = common::token_of_browser(&server, &who).await;
        let (status, ended, _) = server.send(&who, Method::DELETE, "/api/sessions", None).await;
        assert_eq!(status, StatusCode::OK, "{name}: {ended}");
        assert_eq!(ended["api_tokens_kept"][0]["name"], "mcp", "{name}: {ended}");
        let program = common::Browser { bearer: Some(kept.clone()), ..Default::default() };
        let (status, _, _) = server.send(&program, Method::GET, "/api/tools", None).await;
        assert_eq!(status, StatusCode::OK, "{name}: kept");
        let path = "/api/sessions?revoke_api_tokens=true";
        let (status, ended, _) = server.send(&program, Method::DELETE, path, None).await;
        assert_eq!((status, &ended["api_tokens_revoked"]), (StatusCode::OK, &json!(1)), "{name}: {ended}");
        let (status, _, _) = server.send(&program, Method::GET, "/api/tools", None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}: revoked");
    }
}

/// Issue 26, point 3 (§9): a property schema `true` or `false` made the TypeScript SDK reject
/// the whole `tools/list`. MCP clients get the object of the same meaning; the HTTP API still
/// shows the site's own schema.
#[tokio::test]
async fn boolean_property_schemas_reach_mcp_clients_as_objects() {
    let (demo, servers) = common::demo_and_servers("schema-token").await;
    demo.site.edit_manifest(Some(std::sync::Arc::new(|manifest: &mut Value| {
        if let Some(tools) = manifest["tools"].as_array_mut() {
            for tool in tools {
                tool["input_schema"]["properties"]["anything"] = json!(true);
                tool["input_schema"]["properties"]["nothing"] = json!(false);
            }
        }
    })));
    for (name, server) in servers {
        let (ana, _) = common::ana_with_site(&server, &demo, "schema-token", name).await;
        let (_, tools, _) = server.send(&ana, Method::GET, "/api/tools", None).await;
        let own = &tools["tools"][0]["input_schema"]["properties"];
        assert_eq!((&own["anything"], &own["nothing"]), (&json!(true), &json!(false)), "{name}: the site's own");

        let token = common::token_of_browser(&server, &ana).await;
        let session = open_session(&server, &token).await;
        let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
        let listed =
            messages(mcp(&server, Method::POST, &token, Some(&session)).json(&list).send().await.unwrap()).await;
        let tools = listed.iter().find_map(|m| m["result"]["tools"].as_array()).expect("a tools/list result");
        let sites = tools.iter().filter(|tool| tool["name"] != "servio_metrics");
        assert!(tools.len() > 1, "{name}");
        for tool in sites {
            let properties = &tool["inputSchema"]["properties"];
            assert!(properties.as_object().unwrap().values().all(Value::is_object), "{name}: {properties}");
            assert_eq!((&properties["anything"], &properties["nothing"]), (&json!({}), &json!({ "not": {} })));
        }
    }
}

/// Issue 26, point 1: a 2026-07-28 client's `subscriptions/listen` was answered "method not
/// found", so it never heard that the vault changed. Its stream now hears its own user's
/// catalogue changes, not another user's, and ends with an error once its token is revoked.
#[tokio::test]
async fn a_listen_stream_hears_its_users_catalogue_changes_until_its_token_is_revoked() {
    for (name, server) in common::servers(None).await {
        let ana = server.sign_up(&format!("ana-listen-{name}@example.com")).await;
        let token = common::token_of_browser(&server, &ana).await;
        let ben = token_of(&server, &format!("ben-listen-{name}@example.com")).await;
        let ana_id = ana.user_id.unwrap();
        let ben_id =
            server.state.store.user_by_email(&format!("ben-listen-{name}@example.com")).await.unwrap().unwrap().id;
        let mut stream = common::listen_stateless(&server, &token).await;
        let mut bens = common::listen_stateless(&server, &ben).await;

        server.state.notices.told(&[servio_store::Change::Catalogue(ben_id)]);
        let changed = "notifications/tools/list_changed";
        let heard = common::hear(&mut bens, changed, std::time::Duration::from_secs(10)).await;
        assert!(heard.text.contains(changed), "{name}: ben hears his own change: {heard:?}");
        let heard = common::hear(&mut stream, changed, std::time::Duration::from_millis(500)).await;
        assert!(!heard.text.contains(changed), "{name}: ana heard ben's change: {heard:?}");

        server.state.notices.told(&[servio_store::Change::Catalogue(ana_id)]);
        let heard = common::hear(&mut stream, changed, std::time::Duration::from_secs(10)).await;
        assert!(heard.text.contains(changed), "{name}: ana hears hers: {heard:?}");

        let (_, tokens, _) = server.send(&ana, Method::GET, "/api/tokens", None).await;
        let id = tokens["tokens"][0]["id"].as_i64().unwrap();
        let (status, _, _) = server.send(&ana, Method::DELETE, &format!("/api/tokens/{id}"), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{name}");
        let heard = common::hear(&mut stream, "revoked", std::time::Duration::from_secs(10)).await;
        assert!(heard.text.contains("the API token of this stream was revoked"), "{name}: {heard:?}");
        assert!(!heard.text.contains(changed), "{name}: {heard:?}");
    }
}

/// Issue 26, point 1: 2026-07-28 requests are stateless (no session): `server/discover` and
/// `tools/list` answer at once, each for the user of the token it carries.
#[tokio::test]
async fn stateless_requests_answer_for_the_user_of_their_token() {
    let (demo, servers) = common::demo_and_servers("stateless-token").await;
    for (name, server) in servers {
        let (_, _, ana) = common::ana_with_token(&server, &demo, "stateless-token", name).await;
        let ben = token_of(&server, &format!("ben-stateless-{name}@example.com")).await;

        let discover = common::stateless(&server, &ana, 1, "server/discover", json!({})).send().await.unwrap();
        assert_eq!(discover.status(), StatusCode::OK, "{name}");
        assert!(discover.headers().get("mcp-session-id").is_none(), "{name}: no session");
        let discovered = messages(discover).await;
        let versions = &discovered[0]["result"]["supportedVersions"];
        assert!(versions.as_array().is_some_and(|v| v.contains(&json!("2026-07-28"))), "{name}: {discovered:?}");

        for (who, token, tools) in [("ana", &ana, true), ("ben", &ben, false)] {
            let list = common::stateless(&server, token, 2, "tools/list", json!({})).send().await.unwrap();
            assert_eq!(list.status(), StatusCode::OK, "{name}: {who}");
            let answer = messages(list).await;
            let listed = answer[0]["result"]["tools"].as_array().unwrap_or_else(|| panic!("{name}: {answer:?}"));
            // Besides the platform's own `servio_metrics`, which everyone has.
            let sites = listed.iter().filter(|tool| tool["name"] != "servio_metrics").count();
            assert_eq!(sites > 0, tools, "{name}: {who}'s tools: {answer:?}");
        }
    }
}

/// Issue 26, point 1: a request in a revision this server does not know is refused with the
/// versions it does, as the 2026-07-28 specification says.
#[tokio::test]
async fn an_unknown_protocol_version_is_refused_with_the_known_ones() {
    for (name, server) in common::servers(None).await {
        let token = token_of(&server, &format!("ana-version-{name}@example.com")).await;
        let mut meta = json!({});
        meta["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2099-01-01",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let request = server
            .http
            .post(format!("{}/mcp", server.base))
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2099-01-01")
            .header("mcp-method", "tools/list")
            .json(&json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": meta }));
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {text}");
        assert!(text.contains("2026-07-28"), "{name}: names the versions it knows: {text}");
    }
}

/// Issue 26, point 1: MCP 2025-03-26 requires JSON-RPC batches, which were refused with 400. A
/// batch in a 2025-03-26 session is answered as one array, each request in it for the session's
/// user only; a batch that names a later revision, an empty one and an `initialize` in one are
/// refused with what is wrong.
#[tokio::test]
async fn batches_are_answered_in_a_2025_03_26_session() {
    for (name, server) in common::servers(None).await {
        let ana = token_of(&server, &format!("ana-batch-{name}@example.com")).await;
        let ben = token_of(&server, &format!("ben-batch-{name}@example.com")).await;
        let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": { "name": "old", "version": "0" } } });
        let post = |token: &str| {
            server
                .http
                .post(format!("{}/mcp", server.base))
                .bearer_auth(token)
                .header("accept", "application/json, text/event-stream")
        };
        let opened = post(&ana).json(&initialize).send().await.unwrap();
        assert_eq!(opened.status(), StatusCode::OK, "{name}");
        let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let batch = json!([
            { "jsonrpc": "2.0", "method": "notifications/initialized" },
        ]);
        let answer = post(&ana).header("mcp-session-id", &session).json(&batch).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::ACCEPTED, "{name}: notifications only");

        let batch = json!([
            { "jsonrpc": "2.0", "id": "a", "method": "tools/list" },
            { "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "zz" } },
            { "jsonrpc": "2.0", "id": 7, "method": "ping" },
            { "jsonrpc": "2.0", "id": 8, "method": "initialize", "params": initialize["params"] },
        ]);
        let answer = post(&ana).header("mcp-session-id", &session).json(&batch).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "{name}");
        let answers: Value = answer.json().await.unwrap();
        let answers = answers.as_array().unwrap_or_else(|| panic!("{name}: {answers}"));
        assert_eq!(answers.len(), 3, "{name}: {answers:?}");
        assert!(answers[0]["result"]["tools"].is_array() && answers[0]["id"] == "a", "{name}: {answers:?}");
        assert_eq!((&answers[1]["id"], &answers[1]["result"]), (&json!(7), &json!({})), "{name}");
        assert_eq!((&answers[2]["id"], &answers[2]["error"]["code"]), (&json!(8), &json!(-32600)), "{name}");

        let bens = post(&ben).header("mcp-session-id", &session).json(&batch).send().await.unwrap();
        assert_eq!(bens.status(), StatusCode::NOT_FOUND, "{name}: another user's batch in ana's session");
        let later = post(&ana).header("mcp-session-id", &session).header("mcp-protocol-version", "2025-06-18");
        let later = later.json(&batch).send().await.unwrap();
        assert_eq!(later.status(), StatusCode::BAD_REQUEST, "{name}");
        assert!(later.text().await.unwrap().contains("2025-03-26 only"), "{name}");
        let empty = post(&ana).header("mcp-session-id", &session).json(&json!([])).send().await.unwrap();
        assert_eq!(empty.status(), StatusCode::BAD_REQUEST, "{name}: an empty batch");
        let pings: Vec<Value> = (0..101).map(|id| json!({ "jsonrpc": "2.0", "id": id, "method": "ping" })).collect();
        let many = post(&ana).header("mcp-session-id", &session).json(&pings).send().await.unwrap();
        assert_eq!(many.status(), StatusCode::BAD_REQUEST, "{name}: 101 messages");
        assert!(many.text().await.unwrap().contains("at most 100"), "{name}");
        let taken = post(&ana).header("mcp-session-id", &session).json(&pings[..100]).send().await.unwrap();
        let answers: Value = taken.json().await.unwrap();
        assert_eq!(answers.as_array().map(Vec::len), Some(100), "{name}: 100 messages are taken");
    }
}

/// Issue 41, "bounded by design": a batch holds at most 8 MiB of answers together. Twelve calls
/// of a tool whose every answer is 1 MiB at the site (more as MCP carries it): those that fit
/// are answered, the next one's answer does not fit and is an error saying so, and those left
/// are not run (the site never hears them), each answered with an error saying why.
#[tokio::test]
async fn a_batchs_answers_past_8_mib_leave_an_error_for_each_request_left() {
    const ANSWER: usize = 1024 * 1024;
    const CALLS: usize = 12;
    let (demo, servers) = common::demo_and_servers("batch-bytes").await;
    demo.site.set_misbehaviour(
        "/api/servio/tools/shop.getSalesSummary",
        Some(servio_demo_site::Misbehaviour::HugeBody(ANSWER)),
    );
    for (name, server) in servers {
        let (_, _, token) = common::ana_with_token(&server, &demo, "batch-bytes", name).await;
        let post = || {
            server
                .http
                .post(format!("{}/mcp", server.base))
                .bearer_auth(&token)
                .header("accept", "application/json, text/event-stream")
        };
        let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": { "name": "old", "version": "0" } } });
        let opened = post().json(&initialize).send().await.unwrap();
        assert_eq!(opened.status(), StatusCode::OK, "{name}");
        let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        post().header("mcp-session-id", &session).json(&initialized).send().await.unwrap();
        let listed = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
        let listed = messages(post().header("mcp-session-id", &session).json(&listed).send().await.unwrap()).await;
        let tools = listed[0]["result"]["tools"].as_array().unwrap_or_else(|| panic!("{name}: {listed:?}"));
        let sales =
            tools.iter().filter_map(|tool| tool["name"].as_str()).find(|tool| tool.ends_with("shop_getSalesSummary"));
        let sales = sales.unwrap_or_else(|| panic!("{name}: {tools:?}")).to_owned();

        demo.site.record_requests();
        let arguments = json!({ "from": "2026-08-20", "to": "2026-08-20" });
        let calls: Vec<Value> = (10..10 + CALLS)
            .map(|id| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": sales, "arguments": arguments } }))
            .collect();
        let answer = post().header("mcp-session-id", &session).json(&calls).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "{name}");
        let body = answer.bytes().await.unwrap();
        assert!(body.len() < 8 * 1024 * 1024 + 64 * 1024, "{name}: {} bytes of answers", body.len());
        let answers: Vec<Value> = serde_json::from_slice(&body).unwrap();
        let ids: Vec<Value> = answers.iter().map(|answer| answer["id"].clone()).collect();
        assert_eq!(ids, (10..10 + CALLS).map(|id| json!(id)).collect::<Vec<_>>(), "{name}: one answer each, in order");
        // Answered while they fit, then one whose answer did not, then the rest not run.
        let whole = answers.iter().take_while(|answer| answer["result"].is_object()).count();
        assert!(whole >= 2, "{name}: {whole} answered");
        let cut = answers[whole]["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(cut, "the batch's answers passed 8388608 bytes", "{name}: {}", answers[whole]);
        assert!(whole + 1 < CALLS, "{name}: no request was left");
        for left in &answers[whole + 1..] {
            let said = left["error"]["message"].as_str().unwrap_or_default();
            assert_eq!(said, "not run: the batch's answers passed 8388608 bytes", "{name}: {left}");
        }
        let called =
            demo.site.requests().iter().filter(|seen| seen.path == "/api/servio/tools/shop.getSalesSummary").count();
        assert_eq!(called, whole + 1, "{name}: the requests left were not run");
    }
}

/// A user's `subscriptions/listen` streams are bounded like their sessions (100 by default):
/// each holds a connection and a task. The next is refused with the limit, another user's are
/// not counted, and once streams close their places are free again.
#[tokio::test]
async fn a_users_listen_streams_are_bounded() {
    let servers = common::servers(None).await;
    let (name, server) = &servers[0];
    let ana = token_of(server, &format!("ana-streams-{name}@example.com")).await;
    let ben = token_of(server, &format!("ben-streams-{name}@example.com")).await;
    let limit = server.state.quotas.mcp_sessions;
    let mut open = Vec::new();
    for _ in 0..limit {
        open.push(common::listen_stateless(server, &ana).await);
    }
    let mut refused = common::listen_stateless(server, &ana).await;
    let heard = common::hear(&mut refused, "at most", std::time::Duration::from_secs(10)).await;
    assert!(heard.text.contains(&format!("at most {limit} listen streams")), "{name}: {heard:?}");
    drop(common::listen_stateless(server, &ben).await);

    drop(open);
    let started = std::time::Instant::now();
    loop {
        let mut again = common::listen_stateless(server, &ana).await;
        let heard = common::hear(&mut again, "at most", std::time::Duration::from_millis(300)).await;
        if !heard.text.contains("at most") {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{name}: closed streams still counted");
    }
}

/// The budget's row for an MCP session's `initialize`: its parameters are kept for as long as
/// the session lives, so one over 64 KiB (65,536 bytes) is refused with `413` and the reason,
/// and opens no session; one just under it opens one.
#[tokio::test]
async fn an_initialize_over_64_kib_is_refused_and_opens_no_session() {
    for (name, server) in common::servers(None).await {
        let token = token_of(&server, &format!("ana-initialize-{name}@example.com")).await;
        let with_description = |bytes: usize| {
            let mut request = initialize();
            request["params"]["clientInfo"]["description"] = json!("d".repeat(bytes));
            request
        };
        let small = initialize().to_string().len() + r#","description":"""#.len();
        let fits = with_description(65_536 - small);
        assert_eq!(fits.to_string().len(), 65_536, "{name}: the request that just fits");
        let response = mcp(&server, Method::POST, &token, None).json(&fits).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{name}: 65,536 bytes");
        assert!(response.headers().contains_key("mcp-session-id"), "{name}");

        let over = with_description(65_536 - small + 1);
        let response = mcp(&server, Method::POST, &token, None).json(&over).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE, "{name}: 65,537 bytes");
        assert!(!response.headers().contains_key("mcp-session-id"), "{name}");
        let answer: Value = response.json().await.unwrap();
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("65537 bytes, over the 65536"), "{name}: {answer}");
    }
}
