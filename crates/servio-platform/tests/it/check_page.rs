//! "Test your manifest" over real HTTP: a pasted manifest gets `servio check`'s report (lines,
//! carets, codes), a site's URL gets its manifest checked and the brief's dry run for a date
//! and zone; bad input is said, never a crash; checks are throttled per user.

use reqwest::StatusCode;

use crate::common;
use common::PageSession;

#[tokio::test]
async fn a_manifest_is_checked_as_the_cli_checks_it_with_a_dry_run() {
    let (demo, servers) = common::demo_and_servers("demo").await;
    let (name, server) = servers.into_iter().next().unwrap();
    let me = PageSession::sign_up(&server, "checker@example.com", "UTC").await;
    let page = me.get("/check").await;
    assert!(page.html.contains("Test your manifest") && page.html.contains("<option selected>UTC</option>"), "{name}");
    let post = |fields: Vec<(&'static str, String)>| {
        let me = me.clone();
        async move {
            let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            me.post("/check", &pairs).await
        }
    };
    let day = |date: &str| vec![("date", date.to_owned()), ("time_zone", "Pacific/Auckland".to_owned())];

    // Pasted, with an http server URL: the CLI's report, line, caret and code, escaped.
    let manifest = "{\n  \"name\": \"<b>x</b>\",\n  \"version\": \"1.0.0\",\n  \"server\": {\"url\": \"http://a.example.com\"},\n  \"tools\": []\n}";
    let mut fields = day("2026-12-01");
    fields.push(("manifest", manifest.to_owned()));
    let checked = post(fields).await;
    assert_eq!(checked.status, StatusCode::OK, "{name}: {}", checked.html);
    let html = &checked.html;
    assert!(html.contains("Invalid") && html.contains("manifest.json:4:"), "{name}: {html}");
    assert!(html.contains("E0") && html.contains("^^^"), "{name}: code and carets: {html}");
    assert!(!html.contains("<b>x</b>"), "{name}: escaped");
    assert!(html.contains("No dry run"), "{name}");

    // A live site: valid, and each metric's period and arguments for that date in that zone.
    let mut fields = day("2026-12-01");
    fields.push(("url", demo.origin.clone()));
    let checked = post(fields).await;
    assert!(checked.html.contains(">Valid</span>"), "{name}: {}", checked.html);
    assert!(checked.html.contains("<code>sales.revenue.daily</code>"), "{name}");
    assert!(checked.html.contains("2026-12-01 to 2026-12-01") && checked.html.contains("Pacific/Auckland"), "{name}");

    // Bad input says what is wrong and keeps the form.
    for (field, value, said) in [
        ("date", "2026-13-40", "is not a date"),
        ("time_zone", "Mars/Olympus", "time zone"),
        ("manifest", "", "paste a manifest"),
    ] {
        let mut fields = day("2026-12-01");
        fields.retain(|(k, _)| *k != field);
        fields.push((field, value.to_owned()));
        if field != "manifest" {
            fields.push(("manifest", "{}".to_owned()));
        }
        let refused = post(fields).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{name}: {field}");
        assert!(refused.html.contains(said), "{name}: {field}: {}", refused.html);
    }
    let mut huge = day("2026-12-01");
    huge.push(("manifest", "a".repeat(1_100_000)));
    let refused = post(huge).await;
    assert!(refused.status == StatusCode::BAD_REQUEST && refused.html.contains("larger than 1 MiB"), "{name}");

    // Throttled: ten checks a minute after a burst of ten; these were eight.
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let mut fields = day("2026-12-01");
        fields.push(("manifest", "{}".to_owned()));
        statuses.push(post(fields).await.status);
    }
    assert!(statuses.contains(&StatusCode::TOO_MANY_REQUESTS), "{name}: {statuses:?}");
}
