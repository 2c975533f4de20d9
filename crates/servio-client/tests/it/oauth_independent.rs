//! The OAuth client against an implementation nobody here wrote: `oauth2-mock-server` from the
//! npm registry (installed by `.ci/run`; on a machine without it this test says it is skipped).

use std::path::Path;
use std::process::Stdio;

use servio_client::oauth::{self, Callback, OAuthError, OAuthSite};
use servio_client::{Client, ClientConfig};
use tokio::io::{AsyncBufReadExt, BufReader};

struct MockServer {
    port: u16,
    _child: tokio::process::Child,
}

async fn start() -> Option<MockServer> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oauth2-mock-server");
    if !dir.join("node_modules/oauth2-mock-server").exists() {
        // CI installs it (.ci/run), so there a missing server is a failure, not a skip.
        assert!(std::env::var_os("CI").is_none(), "oauth2-mock-server is not installed in CI");
        eprintln!("skipped: oauth2-mock-server is not installed (npm install --prefix {})", dir.display());
        return None;
    }
    let mut child = tokio::process::Command::new("node")
        .arg("start.mjs")
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().expect("the mock server prints its port");
    let port = line.strip_prefix("listening ").expect("listening PORT").parse().unwrap();
    Some(MockServer { port, _child: child })
}

#[tokio::test]
async fn code_with_pkce_and_renewal_against_oauth2_mock_server() {
    let Some(server) = start().await else { return };
    let base = format!("http://127.0.0.1:{}", server.port);
    let site = OAuthSite {
        authorization_url: format!("{base}/authorize").parse().unwrap(),
        token_url: format!("{base}/token").parse().unwrap(),
        scopes: vec!["openid".into()],
        client_id: "servio-test".into(),
        redirect_uri: "http://127.0.0.1:9/callback".parse().unwrap(),
    };
    // The mock server speaks plain http on loopback: allowed here, as a site owner would.
    let client = Client::new(ClientConfig { allow_http: true, ..ClientConfig::default() }).unwrap();
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();

    let authorization = oauth::start(&site).unwrap();
    let answer = browser.get(authorization.authorize_url.clone()).send().await.unwrap();
    assert!(answer.status().is_redirection(), "{}", answer.status());
    let back: url::Url = answer.headers()["location"].to_str().unwrap().parse().unwrap();
    let callback = Callback::from_query(back.query().unwrap_or_default());
    let tokens = oauth::finish(&client, &site, authorization, &callback).await.unwrap();
    assert!(!tokens.access_token.is_empty());
    let refresh_token = tokens.refresh_token.clone().expect("a refresh token");
    let renewed = oauth::renew(&client, &site, &refresh_token).await.unwrap();
    assert!(!renewed.access_token.is_empty());

    // The independent server checks PKCE: another authorization's verifier is refused.
    let first = oauth::start(&site).unwrap();
    let answer = browser.get(first.authorize_url.clone()).send().await.unwrap();
    let back: url::Url = answer.headers()["location"].to_str().unwrap().parse().unwrap();
    let mut callback = Callback::from_query(back.query().unwrap_or_default());
    let second = oauth::start(&site).unwrap();
    callback.state = second.authorize_url.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned());
    let result = oauth::finish(&client, &site, second, &callback).await;
    assert!(matches!(result, Err(OAuthError::Token(_))), "{result:?}");
}
