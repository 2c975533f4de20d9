//! Issue 41, finding 2: patterns are matched in linear time. A site's `pattern` with a
//! look-ahead made the `jsonschema` crate's default engine backtrack: one gateway call with a
//! long argument held a validation for 44-46 s while other users' calls got 503 (3 of 3), and
//! `servio check` of a manifest with 300 brief metrics took 9.5-14 s. Now such a pattern is
//! E055 (a site is refused with it, a refresh that finds it keeps the last valid manifest),
//! every pattern is matched by the `regex` crate's engine, and what matching would cost (a
//! string's length times its pattern's size) is counted and bounded before it is done.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use servio_demo_site::DemoAuth;
use servio_demo_site::site::ManifestEdit;

use super::harness::{Backend, Platform, SITE_TOKEN, User, start_site, within};
use super::many_tools::servio_within;

/// Backtracks in the `fancy-regex` engine, the `jsonschema` crate's default: every way of
/// splitting a run of `a` is tried from every position (20,000 characters took 31 s in a debug
/// build).
const BACKTRACKING: &str = "(?=a)(a+)+b";
/// The classic catastrophic pattern, for a backtracking engine; one pass for a linear one.
const CATASTROPHIC: &str = "^(a+)+$";
/// Linear, but its 402 positions run side by side on a string of `a` and `b` that the lazy DFA
/// cannot cache: 3.4 s on 1 MiB in a release build, minutes in a debug one.
const HEAVY: &str = "a[ab]{400}[^ab]";
/// The size of the long arguments, about what the API's 2 MiB body allows twice over.
const LONG: usize = 1024 * 1024;
/// How long the calls may take together, with their 1 MiB bodies parsed, counted and matched
/// by a debug build.
const CALLS_BOUND: Duration = Duration::from_secs(20);

/// The demo site's manifest with `pattern` on `forum.searchThreads`'s `query` and `content` on
/// `forum.createPost`'s `content`.
fn with_patterns(query: &'static str, content: &'static str) -> ManifestEdit {
    Arc::new(move |manifest: &mut Value| {
        for tool in manifest["tools"].as_array_mut().unwrap() {
            let property = match tool["name"].as_str() {
                Some("forum.searchThreads") => ("query", query),
                Some("forum.createPost") => ("content", content),
                _ => continue,
            };
            tool["input_schema"]["properties"][property.0]["pattern"] = json!(property.1);
        }
    })
}

/// `n` letters `a` and `b`, each drawn, so that no automaton state repeats.
fn random_ab(n: usize) -> String {
    super::harness::drawn(n, b"ab")
}

/// Calls `tool` through the HTTP gateway as `user`; the status and the body.
async fn call(platform: &Platform, user: &User, tool: &str, args: Value) -> (u16, Value) {
    platform.send(user, Method::POST, &format!("/api/tools/{tool}/call"), Some(args)).await
}

/// Regression (issue 41): one call with a long argument against a backtracking pattern held a
/// validation for 44-46 s, and another user's three calls meanwhile were refused with 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_arguments_are_answered_at_once_and_a_backtracking_pattern_is_refused() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    let port = site.origin.rsplit(':').next().unwrap().to_owned();
    let tool = |name: &str| format!("localhost_{port}_{}", name.replace('.', "_"));
    let (search, post, sales) = (tool("forum.searchThreads"), tool("forum.createPost"), tool("shop.getSalesSummary"));
    let long_a = format!("{}!", "a".repeat(LONG));
    let long_ab = random_ab(LONG);
    for backend in Backend::all().await {
        let name = backend.name();
        let platform = Platform::start(&backend, &site, &[]).await;
        let hostile = platform.user(&format!("patterns-hostile-{name}@example.com")).await;
        let other = platform.user(&format!("patterns-other-{name}@example.com")).await;
        site.site.edit_manifest(Some(with_patterns(CATASTROPHIC, HEAVY)));
        let added = platform.add_site(&hostile, &site).await;
        platform.add_site(&other, &site).await;

        let what = format!("{name}: 1 MiB arguments against ^(a+)+$ and a[ab]{{400}}[^ab], another user calling");
        let (hostile_answers, other_answers) = within(&platform, &what, CALLS_BOUND, async {
            let hostile_calls = async {
                tokio::join!(
                    call(&platform, &hostile, &search, json!({ "query": long_a })),
                    call(&platform, &hostile, &post, json!({ "thread_id": 1, "content": long_ab })),
                    call(&platform, &hostile, &post, json!({ "thread_id": 2, "content": long_ab })),
                )
            };
            let other_calls = async {
                let args = json!({ "from": "2026-08-20", "to": "2026-08-20" });
                let mut statuses = Vec::new();
                for _ in 0..3 {
                    statuses.push(call(&platform, &other, &sales, args.clone()).await.0);
                }
                statuses
            };
            tokio::join!(hostile_calls, other_calls)
        })
        .await;
        // Matched in one pass, and refused as arguments that do not match.
        let (status, body) = hostile_answers.0;
        assert_eq!(status, 400, "{name}: {}", &body.to_string()[..300.min(body.to_string().len())]);
        assert!(body.to_string().contains("does not match \\\"^(a+)+$\\\""), "{name}: the pattern named");
        // Counted before matching, and refused without matching.
        for (status, body) in [hostile_answers.1, hostile_answers.2] {
            assert_eq!(status, 422, "{name}: {body}");
            assert!(body.to_string().contains("would take more than 67,108,864 pattern steps"), "{name}: {body}");
        }
        assert_eq!(other_answers, [200, 200, 200], "{name}: another user's calls meanwhile");

        // A refresh that finds a backtracking pattern keeps the last valid manifest.
        site.site.edit_manifest(Some(with_patterns(BACKTRACKING, HEAVY)));
        let id = added["site"]["id"].as_i64().unwrap();
        let (status, refreshed) =
            platform.send(&hostile, Method::POST, &format!("/api/vault/{id}/refresh"), None).await;
        assert_eq!(status, 200, "{name}: {refreshed}");
        assert_eq!(refreshed["refresh"]["outcome"], "stale", "{name}: {refreshed}");
        assert!(refreshed.to_string().contains("linear time"), "{name}: the reason is E055's: {refreshed}");
        let (status, body) = call(&platform, &hostile, &search, json!({ "query": "aaa" })).await;
        assert_eq!(status, 200, "{name}: the last valid manifest still acts: {body}");

        // A user adding the site now is refused, with E055 at the pattern.
        let newcomer = platform.user(&format!("patterns-newcomer-{name}@example.com")).await;
        let (status, body) = within(&platform, &format!("{name}: adding the site"), CALLS_BOUND, async {
            platform
                .send(&newcomer, Method::POST, "/api/vault", Some(json!({ "url": site.origin, "token": SITE_TOKEN })))
                .await
        })
        .await;
        assert_eq!(status, 422, "{name}: {body}");
        let errors: Vec<(&str, &str)> = body["report"]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["code"].as_str().unwrap(), e["pointer"].as_str().unwrap()))
            .collect();
        assert_eq!(errors, [("E055", "/tools/0/input_schema/properties/query/pattern")], "{name}: {body}");
        site.site.edit_manifest(None);
    }
}

/// A manifest whose one tool's `q` has `pattern`, and a brief of 300 metrics calling it, the
/// metric `i` with `argument(i)` as `q`.
fn three_hundred_metrics(pattern: &str, argument: impl Fn(usize) -> String) -> String {
    let metrics: Vec<Value> = (0..300)
        .map(|i| {
            json!({ "key": format!("shop.metric{i}.daily"), "tool": "shop.getSales",
                    "args": { "q": argument(i), "day": "{{periodStart}}" }, "valuePath": "total" })
        })
        .collect();
    let manifest = json!({
        "name": "Patterns", "version": "1.0.0",
        "server": { "url": "https://patterns.example.com/api" },
        "auth": { "type": "bearer" },
        "tools": [{
            "name": "shop.getSales",
            "description": "Summarise the sales of a day as revenue and orders.",
            "input_schema": { "type": "object", "properties": {
                "q": { "type": "string", "pattern": pattern, "description": "What to count" },
                "day": { "type": "string", "description": "The day" } } },
        }],
        "brief": { "metrics": metrics },
    });
    serde_json::to_string(&manifest).unwrap()
}

/// Regression (issue 41): `servio check` of 300 brief metrics over a backtracking pattern took
/// 9.5-14 s (each metric's arguments validated against it). The pattern is E055, and a tool
/// whose schema is invalid validates no arguments.
#[test]
fn checking_300_metrics_over_a_backtracking_pattern_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.json");
    std::fs::write(&path, three_hundred_metrics(BACKTRACKING, |_| format!("{}!", "a".repeat(2_000)))).unwrap();
    let out = servio_within(&["check", "--format", "json"], &path, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors: Vec<(&str, &str)> = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["code"].as_str().unwrap(), e["pointer"].as_str().unwrap()))
        .collect();
    assert_eq!(errors, [("E055", "/tools/0/input_schema/properties/q/pattern")]);
}

/// The same with a pattern the linear engine matches but at a cost (a[ab]{400}[^ab]) and
/// 20 KB arguments: each metric is within one call's bound, and all of them together, 2.5
/// billion steps, would take minutes. The check's metrics share one budget instead: the first
/// 8 take it (runs of `a`, which the engine matches on its fast path, so that the test is
/// quick), and the 292 others, drawn from `a` and `b`, are refused without being matched.
#[test]
fn checking_300_metrics_over_a_heavy_pattern_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.json");
    let (fast, slow) = ("a".repeat(20_000), random_ab(20_000));
    std::fs::write(&path, three_hundred_metrics(HEAVY, |i| if i < 8 { fast.clone() } else { slow.clone() })).unwrap();
    let out = servio_within(&["check", "--format", "json"], &path, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["valid"], true, "the manifest itself is valid");
    let refused = report["brief"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"].as_str().unwrap().contains("would take more than 67,108,864 pattern steps"))
        .count();
    // 20,000 bytes times 418 steps a byte: 8 metrics fit in 67,108,864 steps.
    assert_eq!(refused, 292, "the metrics past the check's budget");
}
