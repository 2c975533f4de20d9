//! Issue 25, point 2: schema work is bounded. A 2.5 KB manifest whose definitions each refer
//! twice to the next made validating the brief's `args` exponential (depth 30 held `/healthz`
//! for 13.7 s from two checks, and the work went on after the client left). E054 refuses it at
//! check time, at the `$ref` where the unfolding starts, before anything is validated.

use std::time::Duration;

use serde_json::{Value, json};
use servio_demo_site::DemoAuth;

use super::harness::{Backend, Platform, SITE_TOKEN, User, start_site, within};

/// `{"$defs": {"d0": {"allOf": [d1, d1]}, ..., "d30": {"type": "string"}}}` under property `x`,
/// and a brief whose `args` must be validated against it.
fn doubling_manifest(depth: usize) -> String {
    let mut defs = serde_json::Map::new();
    for level in 0..depth {
        let next = json!({ "$ref": format!("#/$defs/d{}", level + 1) });
        defs.insert(format!("d{level}"), json!({ "allOf": [next, next] }));
    }
    defs.insert(format!("d{depth}"), json!({ "type": "string" }));
    let manifest = json!({
        "name": "Doubling", "version": "1.0.0",
        "server": { "url": "https://doubling.example.com/api" },
        "auth": { "type": "bearer" },
        "tools": [{
            "name": "shop.getSales",
            "description": "Summarise the sales of a day as revenue and orders.",
            "input_schema": { "type": "object", "$defs": defs, "properties": {
                "x": { "$ref": "#/$defs/d0", "description": "The day" } } },
        }],
        "brief": { "metrics": [{
            "key": "sales.revenue.daily", "tool": "shop.getSales",
            "args": { "x": "{{periodStart}}" }, "valuePath": "revenue",
        }] },
    });
    serde_json::to_string_pretty(&manifest).unwrap()
}

/// `manifest.json:LINE:COL` of the first `$ref`, as the report names it.
fn place_of_first_ref(text: &str) -> String {
    let offset = text.find(r##""#/$defs/d0""##).expect("the first reference");
    let line = text[..offset].matches('\n').count() + 1;
    let column = offset - text[..offset].rfind('\n').map_or(0, |i| i + 1) + 1;
    format!("manifest.json:{line}:{column}")
}

/// Posts `manifest` to "test your manifest" as `user`; answers the status and the page.
async fn check_page(platform: &Platform, user: &User, manifest: &str) -> (u16, String) {
    let (_, form) = platform.page(user, "/check").await;
    let csrf = form
        .split(r#"name="csrf_token" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the check page's CSRF token")
        .to_owned();
    let fields = [("csrf_token", csrf.as_str()), ("manifest", manifest), ("date", "2026-08-20"), ("time_zone", "UTC")];
    let answer = platform
        .http
        .post(format!("{}/check", platform.url))
        .header("cookie", &user.cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(url::form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish())
        .send()
        .await
        .unwrap();
    (answer.status().as_u16(), answer.text().await.unwrap())
}

/// Regression (issue 25): two checks of the depth-30 doubling manifest froze the platform.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_doubling_schema_is_refused_at_its_ref_while_the_platform_answers() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    let manifest = doubling_manifest(30);
    assert!(manifest.len() < 10_000, "a small manifest: {} bytes", manifest.len());
    let place = place_of_first_ref(&manifest);
    for backend in Backend::all().await {
        let platform = Platform::start(&backend, &site, &[]).await;
        let first = platform.user(&format!("schema-a-{}@example.com", backend.name())).await;
        let second = platform.user(&format!("schema-b-{}@example.com", backend.name())).await;
        let answers = within(&platform, "two checks of a doubling schema", Duration::from_secs(20), async {
            tokio::join!(check_page(&platform, &first, &manifest), check_page(&platform, &second, &manifest))
        })
        .await;
        for (status, page) in [answers.0, answers.1] {
            assert_eq!(status, 200, "{}", backend.name());
            assert!(page.contains(&format!("{place}: E054 ")), "{}: {place} E054 in {page}", backend.name());
            assert!(page.contains("more than 10,000 subschemas"), "{page}");
        }
    }
}

/// The JSON report of the same manifest, from the binary, names the pointer.
#[test]
fn the_report_names_the_ref_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.json");
    std::fs::write(&path, doubling_manifest(30)).unwrap();
    let out = super::many_tools::servio_within(&["check", "--format", "json"], &path, Duration::from_secs(20));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors: Vec<(&str, &str)> = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["code"].as_str().unwrap(), e["pointer"].as_str().unwrap()))
        .collect();
    assert_eq!(errors, [("E054", "/tools/0/input_schema/properties/x/$ref")], "{report}");
}
