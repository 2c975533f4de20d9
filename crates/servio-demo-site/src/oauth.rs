//! The demo site's OAuth 2.0 authorization server: authorization code with PKCE `S256` only,
//! a consent page that approves on a click, and a token endpoint with refresh tokens.
//!
//! State lives in memory: codes (single use, two minutes), access tokens (the configured
//! lifetime) and refresh tokens (rotated on use).

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Form;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use base64::Engine;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::site::{DemoAuth, Site};

const CODE_LIFETIME: Duration = Duration::from_secs(120);

/// What the server remembers.
#[derive(Default)]
pub struct Grants {
    codes: HashMap<String, CodeGrant>,
    access: HashMap<String, u64>,
    refresh: HashMap<String, String>,
}

struct CodeGrant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    expires: u64,
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn random_token(prefix: &str) -> String {
    let mut bytes = [0u8; 24];
    // Without randomness there is no safe token: fail loudly rather than hand out guessable ones.
    getrandom::fill(&mut bytes).expect("the operating system provides randomness");
    format!("{prefix}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// Forgets every access token (refresh tokens stay).
pub(crate) fn revoke_access_tokens(grants: &mut Grants) {
    grants.access.clear();
}

/// Whether `token` is a live access token of this site.
pub fn is_valid_access_token(site: &Site, token: &str) -> bool {
    let grants = site.oauth.lock().unwrap_or_else(|e| e.into_inner());
    grants.access.get(token).is_some_and(|expires| *expires > now())
}

/// The parameters of an authorization request.
#[derive(Debug, Deserialize)]
pub struct AuthorizeParams {
    response_type: Option<String>,
    client_id: Option<String>,
    redirect_uri: Option<String>,
    state: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    scope: Option<String>,
}

impl AuthorizeParams {
    /// The request's problem, if any, as an OAuth error code and a description.
    fn problem(&self) -> Option<(&'static str, &'static str)> {
        if self.response_type.as_deref() != Some("code") {
            return Some(("unsupported_response_type", "only response_type=code is supported"));
        }
        if self.client_id.as_deref().is_none_or(str::is_empty) {
            return Some(("invalid_request", "client_id is required"));
        }
        if self.code_challenge.as_deref().is_none_or(str::is_empty)
            || self.code_challenge_method.as_deref() != Some("S256")
        {
            return Some(("invalid_request", "PKCE with code_challenge_method=S256 is required"));
        }
        None
    }

    /// The redirect URI when it is one we send users back to: loopback (native apps, RFC
    /// 8252) or https.
    fn redirect_uri(&self) -> Option<url::Url> {
        let uri: url::Url = self.redirect_uri.as_deref()?.parse().ok()?;
        let loopback = uri.scheme() == "http" && matches!(uri.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
        (loopback || uri.scheme() == "https").then_some(uri)
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

fn oauth_disabled(site: &Site) -> Option<Response> {
    match site.config().auth {
        DemoAuth::OAuth2 { .. } => None,
        DemoAuth::Bearer => Some((StatusCode::NOT_FOUND, "this demo site runs with bearer tokens").into_response()),
    }
}

/// `GET /oauth/authorize`: the consent page.
pub async fn consent(State(site): State<Site>, Query(params): Query<AuthorizeParams>) -> Response {
    if let Some(response) = oauth_disabled(&site) {
        return response;
    }
    let Some(redirect_uri) = params.redirect_uri() else {
        return (StatusCode::BAD_REQUEST, Html("<p>Missing or unacceptable redirect_uri.</p>")).into_response();
    };
    if let Some((error, description)) = params.problem() {
        return redirect_with(
            &redirect_uri,
            &[("error", error), ("error_description", description)],
            params.state.as_deref(),
        );
    }
    let hidden: String = [
        ("client_id", &params.client_id),
        ("redirect_uri", &params.redirect_uri),
        ("state", &params.state),
        ("code_challenge", &params.code_challenge),
        ("scope", &params.scope),
    ]
    .iter()
    .map(|(name, value)| {
        format!("<input type=hidden name={name} value=\"{}\">", escape(value.as_deref().unwrap_or_default()))
    })
    .collect();
    let client = escape(params.client_id.as_deref().unwrap_or_default());
    let scope = escape(params.scope.as_deref().unwrap_or("(none)"));
    Html(format!(
        "<!doctype html><title>Authorize {client}</title><h1>Servio demo site</h1>\
         <p><b>{client}</b> asks for access with scopes <b>{scope}</b>.</p>\
         <form method=post action=/oauth/authorize>{hidden}\
         <button name=decision value=approve>Approve</button> <button name=decision value=deny>Deny</button></form>"
    ))
    .into_response()
}

/// The consent form.
#[derive(Debug, Deserialize)]
pub struct Decision {
    client_id: String,
    redirect_uri: String,
    state: Option<String>,
    code_challenge: String,
    decision: String,
}

/// `POST /oauth/authorize`: the user's decision; back to the client with a code or an error.
pub async fn approve(State(site): State<Site>, Form(form): Form<Decision>) -> Response {
    if let Some(response) = oauth_disabled(&site) {
        return response;
    }
    let params = AuthorizeParams {
        response_type: Some("code".into()),
        client_id: Some(form.client_id.clone()),
        redirect_uri: Some(form.redirect_uri.clone()),
        state: form.state.clone(),
        code_challenge: Some(form.code_challenge.clone()),
        code_challenge_method: Some("S256".into()),
        scope: None,
    };
    let Some(redirect_uri) = params.redirect_uri() else {
        return (StatusCode::BAD_REQUEST, Html("<p>Unacceptable redirect_uri.</p>")).into_response();
    };
    if form.decision != "approve" {
        return redirect_with(&redirect_uri, &[("error", "access_denied")], form.state.as_deref());
    }
    let code = random_token("code_");
    let grant = CodeGrant {
        client_id: form.client_id,
        redirect_uri: form.redirect_uri,
        challenge: form.code_challenge,
        expires: now() + CODE_LIFETIME.as_secs(),
    };
    site.oauth.lock().unwrap_or_else(|e| e.into_inner()).codes.insert(code.clone(), grant);
    redirect_with(&redirect_uri, &[("code", &code)], form.state.as_deref())
}

fn redirect_with(base: &url::Url, pairs: &[(&str, &str)], state: Option<&str>) -> Response {
    let mut url = base.clone();
    {
        let mut query = url.query_pairs_mut();
        for (key, value) in pairs {
            query.append_pair(key, value);
        }
        if let Some(state) = state {
            query.append_pair("state", state);
        }
    }
    Redirect::to(url.as_str()).into_response()
}

/// A token request (`application/x-www-form-urlencoded`).
#[derive(Debug, Deserialize)]
pub struct TokenRequest {
    grant_type: String,
    code: Option<String>,
    redirect_uri: Option<String>,
    client_id: Option<String>,
    code_verifier: Option<String>,
    refresh_token: Option<String>,
}

fn token_error(error: &str, description: &str) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(json!({ "error": error, "error_description": description }))).into_response()
}

/// `POST /oauth/token`: codes (with their PKCE verifier) and refresh tokens for tokens.
pub async fn token(State(site): State<Site>, Form(request): Form<TokenRequest>) -> Response {
    let DemoAuth::OAuth2 { access_ttl } = site.config().auth else {
        return token_error("unsupported_grant_type", "this demo site runs with bearer tokens");
    };
    let mut grants = site.oauth.lock().unwrap_or_else(|e| e.into_inner());
    match request.grant_type.as_str() {
        "authorization_code" => {
            let Some(grant) = request.code.as_deref().and_then(|code| grants.codes.remove(code)) else {
                return token_error("invalid_grant", "unknown or used code");
            };
            let verifier = request.code_verifier.unwrap_or_default();
            let challenge =
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
            if grant.expires < now() {
                return token_error("invalid_grant", "the code has expired");
            }
            if challenge != grant.challenge {
                return token_error("invalid_grant", "code_verifier does not match the code_challenge");
            }
            if request.redirect_uri.as_deref() != Some(grant.redirect_uri.as_str())
                || request.client_id.as_deref() != Some(grant.client_id.as_str())
            {
                return token_error("invalid_grant", "redirect_uri or client_id differ from the authorization request");
            }
            issue(&mut grants, access_ttl, grant.client_id)
        }
        "refresh_token" => {
            let Some(client_id) = request.refresh_token.as_deref().and_then(|t| grants.refresh.remove(t)) else {
                return token_error("invalid_grant", "unknown or used refresh token");
            };
            issue(&mut grants, access_ttl, client_id)
        }
        _ => token_error("unsupported_grant_type", "use authorization_code or refresh_token"),
    }
}

fn issue(grants: &mut Grants, access_ttl: Duration, client_id: String) -> Response {
    let access = random_token("at_");
    let refresh = random_token("rt_");
    grants.access.insert(access.clone(), now() + access_ttl.as_secs());
    grants.refresh.insert(refresh.clone(), client_id);
    axum::Json(json!({
        "access_token": access,
        "token_type": "bearer",
        "expires_in": access_ttl.as_secs(),
        "refresh_token": refresh,
        "scope": "read write",
    }))
    .into_response()
}
