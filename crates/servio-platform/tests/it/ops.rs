//! The operators' routes on every backend: the probes, `/metrics` (on its own listener only),
//! request ids, and the probes in the OpenAPI document.

use crate::common;

use reqwest::{Method, StatusCode};
use serde_json::json;

use common::{Browser, servers};

#[tokio::test]
async fn the_probes_say_alive_and_ready_and_not_ready_once_stopping() {
    for (backend, server) in servers(None).await {
        let nobody = Browser::default();
        let (status, body, _) = server.send(&nobody, Method::GET, "/healthz", None).await;
        assert_eq!((status, &body), (StatusCode::OK, &json!({ "status": "ok" })), "{backend}");
        let (status, body, _) = server.send(&nobody, Method::GET, "/readyz", None).await;
        assert_eq!((status, &body), (StatusCode::OK, &json!({ "status": "ok" })), "{backend}");

        server.state.stopping.begin();
        let (status, body, _) = server.send(&nobody, Method::GET, "/readyz", None).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{backend}: {body}");
        assert_eq!(body["reason"], "the process is stopping", "{backend}");
        // Alive all the same: a stopping process is not to be restarted.
        let (status, _, _) = server.send(&nobody, Method::GET, "/healthz", None).await;
        assert_eq!(status, StatusCode::OK, "{backend}");
    }
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_gateway_calls_by_outcome() {
    for (backend, server) in servers(None).await {
        let user = server.sign_up(&format!("metrics-{backend}@example.com")).await;
        // Two ids in the path, one route template in the metrics.
        for id in [12345, 67890] {
            let (status, _, _) = server.send(&user, Method::GET, &format!("/api/vault/{id}"), None).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{backend}");
        }
        let call = server.send(&user, Method::POST, "/api/tools/nowhere_tool/call", Some(json!({}))).await;
        assert_eq!(call.0, StatusCode::NOT_FOUND, "{backend}: {}", call.1);

        // Regression: the main listener answered /metrics to anyone, sign-in outcomes included.
        let public = server.http.get(format!("{}/metrics", server.base)).send().await.unwrap();
        assert_eq!(public.status(), StatusCode::NOT_FOUND, "{backend}: /metrics is for --metrics-addr only");
        // The listener of its own that `--metrics-addr` starts.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let metrics_url = format!("http://{}/metrics", listener.local_addr().unwrap());
        let app = servio_platform::metrics::router(server.state.store.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let response = server.http.get(metrics_url).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{backend}");
        assert_eq!(response.headers()["content-type"], "text/plain; version=0.0.4; charset=utf-8");
        let text = response.text().await.unwrap();
        for expected in [
            r#"servio_http_requests_total{method="GET",route="/api/vault/{id}",status="404"}"#,
            r#"servio_http_request_duration_seconds_bucket{method="POST",route="/api/signup",le="0.5"}"#,
            r#"servio_gateway_calls_total{outcome="unknown_tool"}"#,
            r#"servio_jobs{state="pending"}"#,
            r#"servio_jobs{state="overdue"}"#,
            r#"servio_db_connections{state="max"}"#,
            "# TYPE servio_http_requests_total counter",
            "# HELP servio_gateway_calls_total Tool calls through the AI gateway",
        ] {
            assert!(text.contains(expected), "{backend}: no {expected} in\n{text}");
        }
        for leaked in ["12345", "67890", "nowhere_tool"] {
            assert!(!text.contains(leaked), "{backend}: a path's {leaked} became a label:\n{text}");
        }
    }
}

#[tokio::test]
async fn every_answer_carries_a_request_id_and_a_fit_one_from_the_client_is_kept() {
    let (_, server) = servers(None).await.remove(0);
    let ask = |id: Option<&str>| {
        let mut request = server.http.get(format!("{}/healthz", server.base));
        if let Some(id) = id {
            request = request.header("x-request-id", id);
        }
        request.send()
    };
    let first = ask(None).await.unwrap().headers()["x-request-id"].to_str().unwrap().to_owned();
    let second = ask(None).await.unwrap().headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(!first.is_empty() && first != second, "{first} {second}");
    assert_eq!(ask(Some("balancer-7f.2")).await.unwrap().headers()["x-request-id"], "balancer-7f.2");
    let long = "x".repeat(65);
    for unfit in ["two words", "<script>", long.as_str()] {
        let answered = ask(Some(unfit)).await.unwrap();
        assert_ne!(answered.headers()["x-request-id"], unfit);
    }
}

#[tokio::test]
async fn the_openapi_document_has_the_probes_open_to_anyone_and_no_metrics() {
    let (_, server) = servers(None).await.remove(0);
    let (status, doc, _) = server.send(&Browser::default(), Method::GET, "/api/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["paths"]["/metrics"].is_null(), "/metrics is not on the main listener");
    for path in ["/healthz", "/readyz"] {
        let get = &doc["paths"][path]["get"];
        assert!(get.is_object(), "{path} in the document");
        assert_eq!(get["security"], json!([{}]), "{path} needs no sign-in");
    }
    assert!(doc["paths"]["/readyz"]["get"]["responses"]["503"].is_object());
}

/// Upkeep applies the retention: attempts and calls older than theirs go, recent ones stay.
#[tokio::test]
async fn upkeep_prunes_the_logs_past_their_retention() {
    use servio_store::{CollectionResult, Slot, ToolCall};
    const DAY: i64 = 86_400;
    for (backend, server) in servers(None).await {
        let store = &server.state.store;
        let now = servio_platform::now();
        let user = store.create_user(&format!("keep-{backend}@example.com"), "h", "UTC", 0).await.unwrap();
        let site = servio_store::testing::site(store.as_ref(), "https://keep.example").await;
        for (day, age_days) in [(0, 40), (1, 10)] {
            let slot = Slot { metric_key: "m", ..servio_store::testing::day_slot(user.id, site, day, "1970-01-01") };
            let at = now - age_days * DAY;
            store.record_result(&slot, &CollectionResult::Failed { reason: "no" }, at).await.unwrap();
            let call = ToolCall { site_id: Some(site), ..servio_store::testing::tool_call(user.id, "t", at) };
            store.log_tool_calls(&[call]).await.unwrap();
        }
        let mut state = server.state.clone();
        let kept = servio_platform::upkeep::run_once(&state).await.unwrap();
        assert_eq!(kept.pruned, 0, "{backend}: 90 days by default keep both");
        let month = std::time::Duration::from_secs(30 * DAY as u64);
        state.retention = servio_platform::upkeep::Retention { attempts: month, calls: month, ..Default::default() };
        let round = servio_platform::upkeep::run_once(&state).await.unwrap();
        assert_eq!(round.pruned, 2, "{backend}: the 40-day-old attempt and call");
        let attempts = store.attempts(user.id, site, 10).await.unwrap();
        assert_eq!(attempts.iter().map(|a| a.attempted_at).collect::<Vec<_>>(), [now - 10 * DAY], "{backend}");
        let calls = store.tool_calls(user.id, servio_store::CallPage { before: None, limit: 10 }).await.unwrap();
        assert_eq!(calls.iter().map(|c| c.called_at).collect::<Vec<_>>(), [now - 10 * DAY], "{backend}");
    }
}
