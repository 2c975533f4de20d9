//! Grants no AI client can widen (issue 42, point 1; interpretation §10): API tokens carry a
//! scope, `read` < `ai` < `account`, and may be limited to chosen sites. Every route is walked
//! with a token of each scope: a route beyond the token's scope is refused with `403` naming the
//! scope it needs, before anything is done; the rest are not refused for their scope.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use servio_store::Scope;

use crate::common;
use common::{Browser, PASSWORD};

/// A token of `scope` (and `sites`) made by the signed-in `browser`; the token's secret.
async fn token(server: &common::Server, browser: &Browser, scope: &str, sites: Option<Vec<i64>>) -> String {
    let mut body = json!({ "name": format!("{scope} token"), "scope": scope });
    if scope == "account" {
        body["password"] = json!(PASSWORD);
    }
    if let Some(sites) = sites {
        body["sites"] = json!(sites);
    }
    let (status, created, _) = server.send(browser, Method::POST, "/api/tokens", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["scope"], scope, "{created}");
    created["token"].as_str().unwrap().to_owned()
}

fn bearer(token: &str) -> Browser {
    Browser { bearer: Some(token.to_owned()), ..Browser::default() }
}

fn stored_scope(name: &str) -> Scope {
    match name {
        "read" => Scope::Read,
        "ai" => Scope::Ai,
        _ => Scope::Account,
    }
}

/// Regression: the token given to an AI client could approve its own new tools and mint
/// tokens that outlive its revocation. Every route, as each scope.
#[tokio::test]
async fn every_route_answers_each_scope_as_the_table_says() {
    for (name, server) in common::servers(None).await {
        let owner = server.sign_up(&format!("scopes-walk-{name}@example.com")).await;
        let routes = common::api_routes(&server).await;
        for scope in ["read", "ai", "account"] {
            let caller = bearer(&token(&server, &owner, scope, None).await);
            for route in routes.iter().filter(|route| route.signed_in) {
                // Ids that name nothing: no route may revoke the token that walks them.
                let path = route.path.replace("{id}", "999999999").replace("{name}", "no_such_tool");
                let method = Method::from_bytes(route.method.as_bytes()).unwrap();
                let (status, answer, _) = server.send(&caller, method.clone(), &path, Some(json!({}))).await;
                let label = format!("{name}: {} {} as an `{scope}` token", route.method, route.path);
                let needed = servio_platform::scopes::needed(&method, &route.path);
                route.assert_documented(status, &answer, &label);
                if stored_scope(scope).covers(needed) {
                    let refused_for_scope = status == StatusCode::FORBIDDEN
                        && answer["error"].as_str().unwrap_or_default().contains("token's scope");
                    assert!(!refused_for_scope, "{label}: refused for its scope: {answer}");
                } else {
                    assert_eq!(status, StatusCode::FORBIDDEN, "{label}: {answer}");
                    let said = answer["error"].as_str().unwrap_or_default();
                    assert!(said.contains(&format!("this token's scope is `{scope}`")), "{label}: {said}");
                }
            }
        }
    }
}

/// The point of scopes: an `ai` token lists and calls the approved tools, and can neither
/// approve a change nor make a token; an `account` token is made only with the password, from
/// a signed-in session.
#[tokio::test]
async fn an_ai_token_calls_tools_and_cannot_approve_or_mint() {
    let (site, servers) = common::demo_and_servers("demo").await;
    for (name, server) in servers {
        let owner = server.sign_up(&format!("scopes-ai-{name}@example.com")).await;
        let id = server.add_site(&owner, &site.origin, "demo").await;
        let ai = bearer(&token(&server, &owner, "ai", None).await);
        let (status, tools, _) = server.send(&ai, Method::GET, "/api/tools", None).await;
        assert_eq!(status, StatusCode::OK, "{name}: {tools}");
        let tool = tools["tools"][0]["name"].as_str().unwrap().to_owned();
        let (status, called, _) =
            server.send(&ai, Method::POST, &format!("/api/tools/{tool}/call"), Some(json!({}))).await;
        assert_ne!(status, StatusCode::FORBIDDEN, "{name}: {called}");

        for (method, path, body) in [
            (Method::POST, format!("/api/vault/{id}/approve"), json!({ "version": 1 })),
            (Method::POST, format!("/api/vault/{id}/keep"), json!({ "version": 1 })),
            (Method::PUT, format!("/api/vault/{id}/credential"), json!({ "token": "x" })),
            (Method::POST, "/api/tokens".to_owned(), json!({ "name": "more" })),
            (Method::DELETE, "/api/sessions".to_owned(), json!({})),
            (Method::PUT, "/api/me/time_zone".to_owned(), json!({ "time_zone": "UTC" })),
        ] {
            let (status, answer, _) = server.send(&ai, method.clone(), &path, Some(body)).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{name}: {method} {path}: {answer}");
        }

        // An `account` token: only with the password, only from a session.
        let body = json!({ "name": "acct", "scope": "account", "password": "not the password" });
        let (status, answer, _) = server.send(&owner, Method::POST, "/api/tokens", Some(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {answer}");
        let account = bearer(&token(&server, &owner, "account", None).await);
        let body = json!({ "name": "acct 2", "scope": "account", "password": PASSWORD });
        let (status, answer, _) = server.send(&account, Method::POST, "/api/tokens", Some(body)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}: an account token makes no account token: {answer}");
        let (status, answer, _) =
            server.send(&account, Method::POST, "/api/tokens", Some(json!({ "name": "x" }))).await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {answer}");
        assert_eq!(answer["scope"], "ai", "{name}: the default scope");

        // The list says what each token may do.
        let (_, listed, _) = server.send(&owner, Method::GET, "/api/tokens", None).await;
        let scopes: Vec<&Value> = listed["tokens"].as_array().unwrap().iter().map(|t| &t["scope"]).collect();
        assert!(scopes.contains(&&json!("ai")) && scopes.contains(&&json!("account")), "{name}: {listed}");
    }
}

/// A token limited to sites sees and calls only their tools, and a site not in the vault
/// cannot be named.
#[tokio::test]
async fn a_token_limited_to_a_site_reaches_only_its_tools() {
    let ca = servio_demo_site::LocalCa::generate(&[]).unwrap();
    let (first, second) = (common::demo_site(&ca, "demo").await, common::demo_site(&ca, "demo").await);
    for (name, server) in common::servers(Some(&ca.ca_pem)).await {
        let owner = server.sign_up(&format!("scopes-sites-{name}@example.com")).await;
        let one = server.add_site(&owner, &first.origin, "demo").await;
        server.add_site(&owner, &second.origin, "demo").await;
        let (status, answer, _) = server
            .send(&owner, Method::POST, "/api/tokens", Some(json!({ "name": "x", "sites": [one, 999_999] })))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: a site not in the vault: {answer}");
        let many: Vec<i64> = std::iter::repeat_n(one, 101).collect();
        let (status, answer, _) =
            server.send(&owner, Method::POST, "/api/tokens", Some(json!({ "name": "x", "sites": many }))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: 101 sites: {answer}");
        assert!(answer["error"].as_str().unwrap_or_default().contains("1 to 100 ids"), "{name}: {answer}");

        let limited = bearer(&token(&server, &owner, "ai", Some(vec![one])).await);
        let (_, all, _) = server.send(&owner, Method::GET, "/api/tools", None).await;
        let (_, reached, _) = server.send(&limited, Method::GET, "/api/tools", None).await;
        let sites = |list: &Value| -> Vec<i64> {
            list["tools"].as_array().unwrap().iter().map(|t| t["site_id"].as_i64().unwrap()).collect()
        };
        assert!(sites(&all).iter().any(|&site| site != one), "{name}: {all}");
        assert!(!sites(&reached).is_empty() && sites(&reached).iter().all(|&site| site == one), "{name}: {reached}");
        let other = all["tools"].as_array().unwrap().iter().find(|t| t["site_id"] != one).unwrap();
        let path = format!("/api/tools/{}/call", other["name"].as_str().unwrap());
        let (status, answer, _) = server.send(&limited, Method::POST, &path, Some(json!({}))).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}: another site's tool: {answer}");
        let (status, answer, _) = server.send(&limited, Method::GET, "/api/dashboard", None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: every site's figures: {answer}");
    }
}

/// Issue 43, point 2: each write tells its change. A token's user is kept with the token, so
/// a password or time zone changed by a session was not seen through the token until the kept
/// entry expired: the old password still confirmed an account token's requests, and the
/// dashboard it read was of the old zone.
#[tokio::test]
async fn a_token_sees_its_users_new_password_and_zone_at_once() {
    for (name, server) in common::servers(None).await {
        let ana = server.sign_up(&common::email("ana", "kept-user", name)).await;
        let account = bearer(&token(&server, &ana, "account", None).await);
        let (status, shown, _) = server.send(&account, Method::GET, "/api/dashboard", None).await;
        assert_eq!((status, shown["time_zone"].as_str()), (StatusCode::OK, Some("Pacific/Auckland")), "{name}");

        let zone = json!({ "time_zone": "Europe/Lisbon" });
        let (status, body, _) = server.send(&ana, Method::PUT, "/api/me/time_zone", Some(zone)).await;
        assert!(status.is_success(), "{name}: {body}");
        let (_, shown, _) = server.send(&account, Method::GET, "/api/dashboard", None).await;
        assert_eq!(shown["time_zone"], "Europe/Lisbon", "{name}: the token's kept user has the new zone");

        let new_password = "a new password, long enough";
        let change = json!({ "current_password": PASSWORD, "new_password": new_password });
        let (status, body, _) = server.send(&ana, Method::PUT, "/api/me/password", Some(change)).await;
        assert!(status.is_success(), "{name}: {body}");
        let again = json!({ "current_password": PASSWORD, "new_password": "yet another long password" });
        let (status, refused, _) = server.send(&account, Method::PUT, "/api/me/password", Some(again)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: the old password no longer confirms: {refused}");
        let right = json!({ "current_password": new_password, "new_password": "yet another long password" });
        let (status, body, _) = server.send(&account, Method::PUT, "/api/me/password", Some(right)).await;
        assert!(status.is_success(), "{name}: {body}");
    }
}
