//! The OAuth 2.0 + PKCE client against the demo site's authorization server, over real HTTPS.

use std::net::TcpListener;
use std::time::Duration;

use servio_client::oauth::{self, Callback, OAuthError, OAuthSite};
use servio_client::{Client, ClientConfig, ToolCall};
use servio_demo_site::{DemoAuth, LocalCa, Site, SiteConfig, serve_https_on};
use servio_manifest::{Auth, CheckOptions, check};

struct Demo {
    site: OAuthSite,
    client: Client,
    browser: reqwest::Client,
    manifest: servio_manifest::Manifest,
    _running: servio_demo_site::Running,
}

async fn demo() -> Demo {
    let ca = LocalCa::generate(&[]).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("https://localhost:{}", listener.local_addr().unwrap().port());
    let config =
        SiteConfig { origin, token: String::new(), auth: DemoAuth::OAuth2 { access_ttl: Duration::from_secs(60) } };
    let demo_site = Site::new(config, None).await.unwrap();
    let manifest_text = demo_site.manifest().to_string();
    let running = serve_https_on(listener, &ca, demo_site.router()).await.unwrap();
    let manifest = check(manifest_text.as_bytes(), &CheckOptions::default()).manifest.unwrap();
    let Auth::OAuth2 { authorization_url, token_url, scopes } = manifest.auth.clone() else {
        panic!("oauth2 manifest")
    };
    let site = OAuthSite {
        authorization_url,
        token_url,
        scopes,
        client_id: "servio-test".into(),
        redirect_uri: "http://127.0.0.1:9/callback".parse().unwrap(),
    };
    let roots = ca.ca_pem.clone().into_bytes();
    let client = Client::new(ClientConfig { extra_roots_pem: Some(roots.clone()), ..ClientConfig::default() }).unwrap();
    // The "browser": follows nothing, so the test sees where the server sends the user.
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .tls_certs_merge(reqwest::Certificate::from_pem_bundle(&roots).unwrap())
        .build()
        .unwrap();
    Demo { site, client, browser, manifest, _running: running }
}

/// Plays the user: opens the consent page, presses the button, returns the callback query.
async fn consent(demo: &Demo, authorize_url: &url::Url, decision: &str) -> Callback {
    let page = demo.browser.get(authorize_url.clone()).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("servio-test") && html.contains("Approve"), "{html}");
    let params: Vec<(String, String)> = authorize_url.query_pairs().into_owned().collect();
    let get = |k: &str| params.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone()).unwrap_or_default();
    let form = [
        ("client_id", get("client_id")),
        ("redirect_uri", get("redirect_uri")),
        ("state", get("state")),
        ("code_challenge", get("code_challenge")),
        ("decision", decision.to_owned()),
    ];
    let action = authorize_url.join("/oauth/authorize").unwrap();
    let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form.iter()).finish();
    let answer = demo
        .browser
        .post(action)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_redirection(), "{}", answer.status());
    let location: url::Url = answer.headers()["location"].to_str().unwrap().parse().unwrap();
    assert!(location.as_str().starts_with("http://127.0.0.1:9/callback?"), "{location}");
    Callback::from_query(location.query().unwrap_or_default())
}

#[tokio::test]
async fn code_with_pkce_then_calls_then_renewal() {
    let demo = demo().await;
    let authorization = oauth::start(&demo.site).unwrap();
    let callback = consent(&demo, &authorization.authorize_url, "approve").await;
    let tokens = oauth::finish(&demo.client, &demo.site, authorization, &callback).await.unwrap();
    assert!(tokens.access_token.starts_with("at_"));
    assert!(tokens.expires_at.is_some());

    let args = serde_json::json!({"from": "2026-08-20", "to": "2026-08-20"});
    let call = |token| ToolCall { manifest: &demo.manifest, name: "shop.getSalesSummary", args: &args, token };
    let result = call(Some(&tokens.access_token)).json(&demo.client).await;
    assert!(result.is_ok(), "{result:?}");
    let refused = call(Some("at_forged")).json(&demo.client).await;
    assert!(matches!(refused, Err(servio_client::CallError::Failed { status: 401, .. })));

    let refresh_token = tokens.refresh_token.clone().unwrap();
    let renewed = oauth::renew(&demo.client, &demo.site, &refresh_token).await.unwrap();
    assert_ne!(renewed.access_token, tokens.access_token);
    assert!(call(Some(&renewed.access_token)).json(&demo.client).await.is_ok());
    // Refresh tokens rotate: the old one is spent.
    assert!(matches!(oauth::renew(&demo.client, &demo.site, &refresh_token).await, Err(OAuthError::Token(_))));
}

#[tokio::test]
async fn a_foreign_state_a_denial_and_a_replayed_code_are_refused() {
    let demo = demo().await;
    let authorization = oauth::start(&demo.site).unwrap();
    let mut callback = consent(&demo, &authorization.authorize_url, "approve").await;
    let real_state = callback.state.replace("forged".into());
    assert!(matches!(
        oauth::finish(&demo.client, &demo.site, authorization, &callback).await,
        Err(OAuthError::StateMismatch)
    ));

    // The same code with another authorization's verifier is refused by the server (PKCE).
    let other = oauth::start(&demo.site).unwrap();
    let other_state = other.authorize_url.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    callback.state = Some(other_state);
    assert!(real_state.is_some());
    let result = oauth::finish(&demo.client, &demo.site, other, &callback).await;
    assert!(matches!(&result, Err(OAuthError::Token(why)) if why.contains("invalid_grant")), "{result:?}");

    let authorization = oauth::start(&demo.site).unwrap();
    let denied = consent(&demo, &authorization.authorize_url, "deny").await;
    assert!(
        matches!(oauth::finish(&demo.client, &demo.site, authorization, &denied).await, Err(OAuthError::Denied(why)) if why.contains("access_denied"))
    );
}
