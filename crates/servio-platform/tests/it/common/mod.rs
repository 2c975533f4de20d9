//! The platform over real HTTP on every backend, for integration tests.

#![allow(dead_code)] // Each test file uses part of this.

use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};
#[allow(unused_imports)] // Each test file uses part of this.
pub use servio_platform::testing::{Browser, PASSWORD, Server, browser, servers, servers_with};

/// The demo site over HTTPS on a port of its own.
pub use servio_demo_site::LocalSite as DemoSite;

/// Starts the demo site, trusted through `ca`, accepting the bearer `token`.
pub async fn demo_site(ca: &servio_demo_site::LocalCa, token: &str) -> DemoSite {
    DemoSite::start(ca, token).await.unwrap()
}

/// The demo site accepting `token`, and one platform per backend that trusts its certificate.
pub async fn demo_and_servers(token: &str) -> (DemoSite, Vec<(&'static str, Server)>) {
    let ca = servio_demo_site::LocalCa::generate(&[]).unwrap();
    (demo_site(&ca, token).await, servers(Some(&ca.ca_pem)).await)
}

/// The address of `who` in one test (`label`) on one backend (`name`), so that no two tests
/// or backends share a user.
pub fn email(who: &str, label: &str, name: &str) -> String {
    format!("{who}-{label}-{name}@example.com")
}

/// Ana, signed up for one test on one backend with the demo site in her vault, the site's token
/// being `label`: her browser and the vault site's id.
pub async fn ana_with_site(server: &Server, demo: &DemoSite, label: &str, name: &str) -> (Browser, i64) {
    server.sign_up_with_site(&email("ana", label, name), &demo.origin, label).await
}

/// [`ana_with_site`] with an API token of hers: her browser, the vault site's id and the token.
pub async fn ana_with_token(server: &Server, demo: &DemoSite, label: &str, name: &str) -> (Browser, i64, String) {
    let (ana, site) = ana_with_site(server, demo, label, name).await;
    let token = token_of_browser(server, &ana).await;
    (ana, site, token)
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
    /// The names of its query parameters.
    pub query: Vec<String>,
    /// Its documented responses, by status.
    pub responses: Value,
    /// The document's components, for the `$ref`s of its schemas.
    pub components: Value,
}

impl ApiRoute {
    /// Holds an answer to the document: its `status` is one the operation documents, an error
    /// is the API's JSON error body, and a JSON answer matches the documented schema.
    pub fn assert_documented(&self, status: StatusCode, answer: &Value, label: &str) {
        let documented = &self.responses[status.as_str()];
        assert!(documented.is_object(), "{label}: {status} is not documented ({answer})");
        if status.is_client_error() || status.is_server_error() {
            assert!(answer["error"].is_string(), "{label}: {status} is not the JSON error body: {answer}");
        }
        let Some(schema) = documented["content"]["application/json"].get("schema") else { return };
        if answer.is_null() {
            return;
        }
        // The operation's schema, with the document's components beside it for its `$ref`s.
        let root = json!({ "components": self.components, "allOf": [schema] });
        let validator = jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("{label}: {e}: {schema}"));
        let errors: Vec<String> =
            validator.iter_errors(answer).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        assert!(errors.is_empty(), "{label}: {status} does not match its documented schema: {errors:?}\n{answer}");
    }
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
                query: operation["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|p| p["in"] == "query")
                    .filter_map(|p| p["name"].as_str().map(str::to_owned))
                    .collect(),
                responses: operation["responses"].clone(),
                components: doc["components"].clone(),
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

/// A client as the page tests use it: redirects are read, not followed.
pub fn page_client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// A browser signed in to the pages: its cookie and the session's CSRF token.
#[derive(Clone)]
pub struct PageSession {
    pub http: reqwest::Client,
    pub base: String,
    pub cookie: String,
    pub csrf: String,
}

impl PageSession {
    /// Signs up `email` (with the password [`PASSWORD`]) through the sign-up form.
    pub async fn sign_up(server: &Server, email: &str, time_zone: &str) -> PageSession {
        let http = page_client();
        let form = [("email", email), ("password", PASSWORD), ("time_zone", time_zone)];
        let signed_up = request(&http, "POST", &format!("{}/signup", server.base), None, &form).await;
        let cookie = signed_up.cookie.unwrap_or_else(|| panic!("signing up {email}: {}", signed_up.html));
        let vault = request(&http, "GET", &format!("{}/vault", server.base), Some(&cookie), &[]).await;
        PageSession { csrf: csrf(&vault.html), http, base: server.base.clone(), cookie }
    }

    /// A page.
    pub async fn get(&self, path: &str) -> Page {
        request(&self.http, "GET", &format!("{}{path}", self.base), Some(&self.cookie), &[]).await
    }

    /// A form post with the CSRF field.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let mut form = vec![("csrf_token", self.csrf.as_str())];
        form.extend_from_slice(fields);
        request(&self.http, "POST", &format!("{}{path}", self.base), Some(&self.cookie), &form).await
    }
}

/// The MCP protocol revision the tests speak.
pub const VERSION: &str = "2025-11-25";

/// A user's API token on `server`, after signing up as `email`.
pub async fn token_of(server: &Server, email: &str) -> String {
    token_of_browser(server, &server.sign_up(email).await).await
}

/// A new API token of the user signed in as `browser`.
pub async fn token_of_browser(server: &Server, browser: &Browser) -> String {
    let (status, created, _) = server
        .send(
            browser,
            Method::POST,
            "/api/tokens",
            Some(json!({ "scope": "account", "password": PASSWORD, "name": "mcp" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["token"].as_str().unwrap().to_owned()
}

/// The JSON-RPC messages of an answer, whether JSON or a stream of server-sent events.
pub async fn messages(response: reqwest::Response) -> Vec<Value> {
    let text = response.text().await.unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(text.trim_start().starts_with('{').then_some(text.as_str()))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// The names of the tools MCP lists to the owner of `token`, in a session of its own.
pub async fn mcp_tool_names(server: &Server, token: &str) -> Vec<String> {
    mcp_tools(server, token).await.iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
}

/// The descriptions of the tools `tools/list` offers over MCP with `token`.
pub async fn mcp_tool_descriptions(server: &Server, token: &str) -> Vec<String> {
    mcp_tools(server, token).await.iter().map(|tool| tool["description"].as_str().unwrap().to_owned()).collect()
}

/// The tools `tools/list` offers over MCP with `token`, as listed.
async fn mcp_tools(server: &Server, token: &str) -> Vec<Value> {
    let session = open_session(server, token).await;
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let response = mcp(server, Method::POST, token, Some(&session)).json(&list).send().await.unwrap();
    let mut answer = messages(response).await.into_iter().find(|m| m["id"] == 2).expect("an answer to tools/list");
    match answer["result"]["tools"].take() {
        Value::Array(tools) => tools,
        _ => panic!("{answer}"),
    }
}

/// A request to `/mcp` with `token`, on `session` when given, accepting both answer types.
pub fn mcp(server: &Server, method: Method, token: &str, session: Option<&str>) -> RequestBuilder {
    let mut request = server
        .http
        .request(method, format!("{}/mcp", server.base))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", VERSION);
    }
    request
}

pub fn initialize() -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": { "name": "test", "version": "0" } } })
}

/// Opens a session for `token` and returns its id.
pub async fn open_session(server: &Server, token: &str) -> String {
    let response = mcp(server, Method::POST, token, None).json(&initialize()).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let response = mcp(server, Method::POST, token, Some(&session)).json(&initialized).send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    session
}

/// Opens an MCP session for `token` with its event stream (`GET`), once the session has
/// subscribed to changes.
pub async fn listen(server: &Server, token: &str) -> reqwest::Response {
    let before = server.state.notices.listeners();
    let session = open_session(server, token).await;
    let stream = mcp(server, Method::GET, token, Some(&session)).send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    // The session hears `notifications/initialized` after answering it, then subscribes.
    server.wait_for_listeners(before).await;
    stream
}

/// What an event stream brought within a time.
#[derive(Debug)]
pub struct Heard {
    /// Everything received.
    pub text: String,
    /// Whether the stream ended (the server closed it).
    pub ended: bool,
}

/// Reads `stream` until `needle` arrives, the stream ends, or `wait` passes.
pub async fn hear(stream: &mut reqwest::Response, needle: &str, wait: std::time::Duration) -> Heard {
    let mut heard = Heard { text: String::new(), ended: false };
    let _ = tokio::time::timeout(wait, async {
        loop {
            match stream.chunk().await {
                Ok(Some(chunk)) => {
                    heard.text.push_str(&String::from_utf8_lossy(&chunk));
                    if heard.text.contains(needle) {
                        return;
                    }
                }
                Ok(None) | Err(_) => {
                    heard.ended = true;
                    return;
                }
            }
        }
    })
    .await;
    heard
}

/// The current revision of MCP, stateless: every request says its version and the client's
/// capabilities in its `_meta`, and no session exists.
pub const STATELESS: &str = "2026-07-28";

/// A 2026-07-28 request of `method` with `params`, with the `_meta` and headers that revision
/// requires.
pub fn stateless(server: &Server, token: &str, id: i64, method: &str, mut params: Value) -> RequestBuilder {
    // The name the 2026-07-28 headers carry for methods that name something.
    let named = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str).map(str::to_owned);
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "test", "version": "0" },
    });
    let request = server
        .http
        .post(format!("{}/mcp", server.base))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", STATELESS)
        .header("mcp-method", method);
    let request = match named {
        Some(name) => request.header("mcp-name", name),
        None => request,
    };
    request.json(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
}

/// A `subscriptions/listen` stream (2026-07-28) of catalogue changes for `token`, once the
/// server acknowledged it.
pub async fn listen_stateless(server: &Server, token: &str) -> reqwest::Response {
    listen_stateless_with(server, token, json!({ "notifications": { "toolsListChanged": true } })).await
}

/// A `subscriptions/listen` stream (2026-07-28) with the params `filter`, once acknowledged.
pub async fn listen_stateless_with(server: &Server, token: &str, filter: Value) -> reqwest::Response {
    let mut stream = stateless(server, token, 1, "subscriptions/listen", filter).send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let acknowledged = "notifications/subscriptions/acknowledged";
    let heard = hear(&mut stream, acknowledged, std::time::Duration::from_secs(10)).await;
    assert!(heard.text.contains(acknowledged), "{heard:?}");
    stream
}
