//! The platform over real HTTP on every backend, for integration tests.

#![allow(dead_code)] // Each test file uses part of this.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_client::{Client, ClientConfig};
use servio_collector::secrets::Secrets;
use servio_platform::{AppState, router};

/// The demo site over HTTPS on a port of its own, with bearer authentication.
pub struct DemoSite {
    pub origin: String,
    pub site: servio_demo_site::Site,
    _running: servio_demo_site::Running,
}

/// Starts the demo site, trusted through `ca`, accepting the bearer `token`.
pub async fn demo_site(ca: &servio_demo_site::LocalCa, token: &str) -> DemoSite {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("https://localhost:{}", listener.local_addr().unwrap().port());
    let site = servio_demo_site::Site::new(servio_demo_site::SiteConfig::bearer(&origin, token), None).await.unwrap();
    let running = servio_demo_site::serve_https_on(listener, ca, site.router()).await.unwrap();
    DemoSite { origin, site, _running: running }
}

/// A running platform.
pub struct Server {
    pub base: String,
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
        let client = Client::new(ClientConfig {
            extra_roots_pem: ca_pem.map(|p| p.as_bytes().to_vec()),
            ..ClientConfig::default()
        })
        .unwrap();
        let oauth = servio_platform::connect::OAuthConfig {
            public_url: base.clone(),
            client_id: "servio-test".into(),
            per_site: Default::default(),
        };
        let mut state = AppState::new(Arc::from(store), client, Secrets::from_key(&[42; 32]), oauth);
        configure(&mut state);
        let app = router(state.clone()).into_make_service_with_connect_info::<std::net::SocketAddr>();
        tokio::spawn(async move { axum::serve(listener, app).await });
        all.push((name, Server { base, http: reqwest::Client::new(), state }));
    }
    all
}

/// A signed-in browser or program.
#[derive(Clone, Default)]
pub struct Browser {
    pub cookie: Option<String>,
    pub csrf: Option<String>,
    pub bearer: Option<String>,
}

impl Server {
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

    pub async fn sign_up(&self, email: &str) -> Browser {
        let body = json!({ "email": email, "password": "a long enough password", "time_zone": "Pacific/Auckland" });
        let (status, body, set_cookie) = self.send(&Browser::default(), Method::POST, "/api/signup", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        browser(&body, set_cookie)
    }
}

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

/// One operation of the OpenAPI document the platform serves.
#[derive(Debug, Clone)]
pub struct ApiRoute {
    /// `GET`, `POST`, `PUT` or `DELETE`.
    pub method: String,
    /// The path, with `{id}` and `{name}` for parameters.
    pub path: String,
    /// Whether it needs a signed-in user.
    pub signed_in: bool,
    /// The schema of its JSON request body, if it takes one.
    pub body_schema: Option<Value>,
}

/// Every operation of the document at `/api/openapi.json`: the routes of the API, as the router
/// registered them.
pub async fn api_routes(server: &Server) -> Vec<ApiRoute> {
    let (status, doc, _) = server.send(&Browser::default(), Method::GET, "/api/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    let mut routes = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            routes.push(ApiRoute {
                method: method.to_uppercase(),
                path: path.clone(),
                // Signed-in unless the route waives the document's security (`[{}]`).
                signed_in: operation.get("security") != Some(&json!([{}])),
                body_schema: operation["requestBody"]["content"]["application/json"].get("schema").cloned(),
            });
        }
    }
    routes
}

/// A page as a browser without JavaScript sees it.
pub struct Page {
    pub status: StatusCode,
    pub location: Option<String>,
    pub cookie: Option<String>,
    pub html: String,
}

/// Sends a page request: a form post when `method` is `POST`; redirects are not followed when
/// `http` does not follow them.
pub async fn request(
    http: &reqwest::Client,
    method: &str,
    url: &str,
    cookie: Option<&str>,
    form: &[(&str, &str)],
) -> Page {
    let mut request = http.request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    if method == "POST" {
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form.iter()).finish();
        request = request.header("content-type", "application/x-www-form-urlencoded").body(body);
    }
    let response = request.send().await.unwrap();
    Page {
        status: response.status(),
        location: response.headers().get("location").map(|v| v.to_str().unwrap().to_owned()),
        cookie: response.headers().get("set-cookie").map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned()),
        html: response.text().await.unwrap(),
    }
}

/// The CSRF field of a page's forms.
pub fn csrf(html: &str) -> String {
    let at = html.find("name=\"csrf_token\" value=\"").expect("a CSRF field") + "name=\"csrf_token\" value=\"".len();
    html[at..].split('"').next().unwrap().to_owned()
}
