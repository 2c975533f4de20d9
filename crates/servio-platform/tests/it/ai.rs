//! The "AI clients" page over real HTTP: a token made on the page (shown once) works at the
//! gateway, the argument setting is kept, and the forms check the CSRF field.

use reqwest::StatusCode;

use crate::common;
use common::{csrf, request};

/// A new user who signed up in the browser gets an API token for an AI client on the "AI
/// clients" page (shown once), sees the MCP address, and the token works at the gateway.
#[tokio::test]
async fn the_ai_clients_page_gives_a_token_that_works_at_the_gateway() {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for (name, server) in common::servers(None).await {
        let url = |path: &str| format!("{}{path}", server.base);
        let email = format!("ai-{name}@example.com");
        let form = [("email", email.as_str()), ("password", common::PASSWORD), ("time_zone", "UTC")];
        let cookie = request(&http, "POST", &url("/signup"), None, &form).await.cookie.expect("a session cookie");
        let page = request(&http, "GET", &url("/ai"), Some(&cookie), &[]).await;
        assert_eq!(page.status, StatusCode::OK, "{name}");
        assert!(page.html.contains(&format!("{}/mcp", server.base)), "{name}: the MCP address");
        let csrf = csrf(&page.html);
        let named = [("csrf_token", csrf.as_str()), ("name", "<laptop>")];
        let created = request(&http, "POST", &url("/ai/tokens"), Some(&cookie), &named).await;
        let at = created.html.find("svt_").expect("the new token on the page");
        let token: String =
            created.html[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').collect();
        let tools = http.get(url("/api/tools")).bearer_auth(&token).send().await.unwrap();
        assert_eq!(tools.status(), StatusCode::OK, "{name}: the page's token works");

        let keep = [("csrf_token", csrf.as_str()), ("keep", "true")];
        let kept = request(&http, "POST", &url("/ai/log_arguments"), Some(&cookie), &keep).await;
        assert_eq!(kept.location.as_deref(), Some("/ai"), "{name}");
        let page = request(&http, "GET", &url("/ai"), Some(&cookie), &[]).await;
        assert!(page.html.contains("Arguments are kept"), "{name}");
        let forged =
            request(&http, "POST", &url("/ai/tokens"), Some(&cookie), &[("csrf_token", "x"), ("name", "n")]).await;
        assert_eq!(forged.status, StatusCode::FORBIDDEN, "{name}: the CSRF field is checked");
    }
}
