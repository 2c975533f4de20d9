//! Test support for the crates that run the platform, as `servio_store::testing` is for the
//! store (behind the `testing` feature): a platform state with a fixed key, and a running
//! platform on 127.0.0.1 per available backend, with a client that speaks to it as a browser
//! or a program would.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_client::{Client, ClientConfig};
use servio_collector::credentials::OAuthConfig;
use servio_collector::secrets::Secrets;
use servio_store::Store;

use crate::{AppState, router};

/// The sealing key of every test platform.
pub const KEY: [u8; 32] = [42; 32];

/// A platform's state over `store`, reaching sites with `client`, reached by browsers at
/// `public_url` (its OAuth callbacks).
pub fn state(store: Arc<dyn Store>, client: Client, public_url: &str) -> AppState {
    let oauth = OAuthConfig {
        public_url: public_url.to_owned(),
        client_id: "servio-test".into(),
        per_site: Default::default(),
    };
    AppState::new(store, client, Secrets::from_key(&KEY), oauth)
}

/// A client that may reach loopback (the demo site) and trusts `ca_pem` when given.
pub fn client(ca_pem: Option<&str>) -> Client {
    Client::new(ClientConfig { extra_roots_pem: ca_pem.map(|p| p.as_bytes().to_vec()), ..ClientConfig::default() })
        .expect("a client")
}

/// Serves `state` on `listener` in the background, with the peer address sign-in throttling
/// reads.
pub fn serve(listener: tokio::net::TcpListener, state: AppState) {
    let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });
}

/// A running platform.
pub struct Server {
    /// Where it listens: `http://127.0.0.1:PORT`.
    pub base: String,
    /// The client tests speak to it with.
    pub http: reqwest::Client,
    /// The platform's state, for driving the collector with a chosen clock.
    pub state: AppState,
}

/// One platform per backend. Outbound calls may reach loopback (the demo site) and trust
/// `ca_pem` when given.
pub async fn servers(ca_pem: Option<&str>) -> Vec<(&'static str, Server)> {
    servers_with(ca_pem, |_| {}).await
}

/// [`servers`] with their state changed by `configure` first (tighter limits, say).
pub async fn servers_with(ca_pem: Option<&str>, configure: impl Fn(&mut AppState)) -> Vec<(&'static str, Server)> {
    let mut all = Vec::new();
    for (name, store) in servio_store::testing::backends().await {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let mut state = state(Arc::from(store), client(ca_pem), &base);
        configure(&mut state);
        serve(listener, state.clone());
        all.push((name, Server { base, http: reqwest::Client::new(), state }));
    }
    all
}

/// A signed-in browser or program.
#[derive(Clone, Default)]
pub struct Browser {
    /// The session cookie (`name=value`).
    pub cookie: Option<String>,
    /// The session's CSRF token, sent as `X-CSRF-Token`.
    pub csrf: Option<String>,
    /// An API token, sent as a bearer token.
    pub bearer: Option<String>,
}

impl Server {
    /// Sends `method path` as `who`, with `body` as JSON; answers the status, the JSON body
    /// (`null` when there is none) and the `Set-Cookie` header.
    pub async fn send(
        &self,
        who: &Browser,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value, Option<String>) {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(cookie) = &who.cookie {
            request = request.header("cookie", cookie);
        }
        if let Some(csrf) = &who.csrf {
            request = request.header("x-csrf-token", csrf);
        }
        if let Some(token) = &who.bearer {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let set_cookie = response.headers().get("set-cookie").map(|v| v.to_str().unwrap().to_owned());
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body, set_cookie)
    }

    /// The user signed up as `email` and their only vault entry, from the store.
    pub async fn vault_entry_of(&self, email: &str) -> (servio_store::User, servio_store::VaultEntry) {
        let entries = self.state.store.all_vault_entries().await.unwrap();
        entries.into_iter().find(|(user, _)| user.email == email).unwrap()
    }

    /// Signs up `email` (in Pacific/Auckland) and answers their signed-in browser.
    pub async fn sign_up(&self, email: &str) -> Browser {
        let body = json!({ "email": email, "password": "a long enough password", "time_zone": "Pacific/Auckland" });
        let (status, body, set_cookie) = self.send(&Browser::default(), Method::POST, "/api/signup", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        browser(&body, set_cookie)
    }
}

/// The browser a sign-up or sign-in answer (`body`, `set_cookie`) makes, after checking the
/// session cookie's attributes.
pub fn browser(body: &Value, set_cookie: Option<String>) -> Browser {
    let set_cookie = set_cookie.expect("a session cookie");
    for attribute in ["__Host-servio_session=", "Path=/", "Secure", "HttpOnly", "SameSite=Lax"] {
        assert!(set_cookie.contains(attribute), "{attribute} in {set_cookie}");
    }
    Browser {
        cookie: Some(set_cookie.split(';').next().unwrap().to_owned()),
        csrf: body["csrf_token"].as_str().map(str::to_owned),
        bearer: None,
    }
}
