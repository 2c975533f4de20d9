//! `servio login` against the demo site's OAuth server, then calls with the stored tokens,
//! renewed before expiry and after a 401.

use std::process::Stdio;
use std::time::Duration;

use servio_demo_site::DemoAuth;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::common;

fn browser(ca_pem: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .tls_certs_merge(reqwest::Certificate::from_pem_bundle(ca_pem.as_bytes()).unwrap())
        .build()
        .unwrap()
}

/// Plays the user in the browser: consent page, Approve, back to the CLI's loopback address.
async fn approve(browser: &reqwest::Client, authorize_url: &url::Url) {
    let page = browser.get(authorize_url.clone()).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("Approve"), "{page}");
    let get = |k: &str| authorize_url.query_pairs().find(|(key, _)| key == k).map(|(_, v)| v.into_owned()).unwrap();
    let form = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("client_id", get("client_id")),
            ("redirect_uri", get("redirect_uri")),
            ("state", get("state")),
            ("code_challenge", get("code_challenge")),
            ("decision", "approve".into()),
        ])
        .finish();
    let answer = browser
        .post(authorize_url.join("/oauth/authorize").unwrap())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap();
    let back = answer.headers()["location"].to_str().unwrap().to_owned();
    assert!(back.starts_with("http://127.0.0.1:"), "{back}");
    let done = reqwest::get(back).await.unwrap();
    assert_eq!(done.status(), 200);
}

#[tokio::test]
async fn login_stores_private_tokens_that_calls_use_and_renew() {
    let auth = DemoAuth::OAuth2 { access_ttl: Duration::from_secs(3600) };
    let demo = common::start("", auth).await;
    let (origin, ca_file) = (demo.origin.clone(), demo.ca_file.clone());
    let credentials = demo.dir.path().join("config").join("credentials.json");
    let servio = |args: &[&str]| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_servio"));
        command.args(args).args(["--ca-cert", ca_file.to_str().unwrap()]).env("SERVIO_CREDENTIALS", &credentials);
        command
    };

    let mut login =
        servio(&["login", &origin, "--no-browser", "--timeout", "30"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(login.stdout.take().unwrap()).lines();
    let authorize_url: url::Url = loop {
        let line = lines.next_line().await.unwrap().expect("the login URL is printed");
        if let Some(url) = line.trim().strip_prefix("https://") {
            break format!("https://{url}").parse().unwrap();
        }
    };
    approve(&browser(&demo.ca_pem), &authorize_url).await;
    assert!(login.wait().await.unwrap().success());

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&credentials).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "credentials readable only by their owner");
    }
    let stored = || -> serde_json::Value { serde_json::from_slice(&std::fs::read(&credentials).unwrap()).unwrap() };
    let first = stored()["sites"][&origin]["access_token"].as_str().unwrap().to_owned();

    let call = || {
        servio(&["call", &origin, "shop.getSalesSummary", "--json", r#"{"from":"2026-08-20","to":"2026-08-20"}"#])
            .output()
    };
    let out = call().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stored()["sites"][&origin]["access_token"], first.as_str(), "a fresh token is used as it is");

    // About to expire: renewed before the call.
    let mut file = stored();
    file["sites"][&origin]["expires_at"] = serde_json::json!(0);
    std::fs::write(&credentials, serde_json::to_vec(&file).unwrap()).unwrap();
    assert_eq!(call().await.unwrap().status.code(), Some(0));
    let second = stored()["sites"][&origin]["access_token"].as_str().unwrap().to_owned();
    assert_ne!(second, first);

    // Refused although not expired: renewed once after the 401, and the call goes through.
    let mut file = stored();
    file["sites"][&origin]["access_token"] = serde_json::json!("at_revoked");
    std::fs::write(&credentials, serde_json::to_vec(&file).unwrap()).unwrap();
    let out = call().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_ne!(stored()["sites"][&origin]["access_token"], "at_revoked");
}
