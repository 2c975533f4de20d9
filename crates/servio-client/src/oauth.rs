//! OAuth 2.0 authorization code with PKCE `S256` (interpretation §5), on the `oauth2` crate.
//!
//! The platform (or the CLI) is a public client: no secret, a fresh `state` per authorization that
//! must come back unchanged, a PKCE verifier that never leaves this process until the token
//! exchange. Token requests go through our own [`Client`], so the address guard applies to
//! token endpoints too, and redirects are not followed there.

use std::time::Duration;

use oauth2::basic::BasicClient;
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, CsrfToken, EndpointNotSet, EndpointSet, HttpRequest, HttpResponse,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken, Scope, TokenResponse, TokenUrl,
};
use reqwest::Method;
use url::Url;

use crate::http::{Client, ClientConfig, ClientError};

/// Where and as whom to ask for tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthSite {
    /// The manifest's `auth.authorization_url`.
    pub authorization_url: Url,
    /// The manifest's `auth.token_url`.
    pub token_url: Url,
    /// The manifest's `auth.scopes`.
    pub scopes: Vec<String>,
    /// The client id, from configuration (the manifest has none).
    pub client_id: String,
    /// Where the authorization server sends the user back.
    pub redirect_uri: Url,
}

/// An authorization in progress: the URL to send the user to, and what must come back.
pub struct StartedAuthorization {
    /// The URL the user opens.
    pub authorize_url: Url,
    state: CsrfToken,
    verifier: PkceCodeVerifier,
}

impl StartedAuthorization {
    /// The `state` sent, to find this authorization again when the browser comes back.
    pub fn state(&self) -> &str {
        self.state.secret()
    }

    /// The PKCE verifier: a secret, to keep (sealed) where the authorization waits for the browser.
    pub fn verifier(&self) -> &str {
        self.verifier.secret()
    }

    /// The authorization again from what [`StartedAuthorization::state`] and [`StartedAuthorization::verifier`] gave, when the
    /// browser comes back (perhaps to another process than the one that started it).
    pub fn resume(authorize_url: Url, state: String, verifier: String) -> StartedAuthorization {
        StartedAuthorization { authorize_url, state: CsrfToken::new(state), verifier: PkceCodeVerifier::new(verifier) }
    }
}

/// Tokens for a site. Serialized as these three members (the CLI's credentials file and the
/// platform's sealed credential keep them so).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tokens {
    /// The access token, sent as `Authorization: Bearer`.
    pub access_token: String,
    /// The refresh token, when the server gave one.
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    pub expires_at: Option<i64>,
}

impl Tokens {
    /// True when the access token has expired or expires within `margin` of `now` (seconds
    /// since the Unix epoch).
    pub fn expires_soon(&self, now: i64, margin: Duration) -> bool {
        self.expires_at.is_some_and(|at| at <= now + margin.as_secs() as i64)
    }
}

/// Why an OAuth step failed.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The `state` that came back is not the one sent: the answer is not ours.
    #[error("the state returned does not match the one sent; the answer is refused")]
    StateMismatch,
    /// The authorization server said no (`error=access_denied`, say).
    #[error("authorization was refused: {0}")]
    Denied(String),
    /// The token endpoint refused or could not be reached.
    #[error("the token request failed: {0}")]
    Token(String),
}

type Configured = BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

fn oauth_client(site: &OAuthSite) -> Result<Configured, OAuthError> {
    let bad = |e: url::ParseError| OAuthError::Token(e.to_string());
    Ok(BasicClient::new(ClientId::new(site.client_id.clone()))
        .set_auth_uri(AuthUrl::new(site.authorization_url.to_string()).map_err(bad)?)
        .set_token_uri(TokenUrl::new(site.token_url.to_string()).map_err(bad)?)
        .set_redirect_uri(RedirectUrl::new(site.redirect_uri.to_string()).map_err(bad)?))
}

/// Starts an authorization: a fresh `state` and PKCE pair, and the URL for the user.
pub fn start(site: &OAuthSite) -> Result<StartedAuthorization, OAuthError> {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let client = oauth_client(site)?;
    let mut request = client.authorize_url(CsrfToken::new_random).set_pkce_challenge(challenge);
    for scope in &site.scopes {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (authorize_url, state) = request.url();
    Ok(StartedAuthorization { authorize_url, state, verifier })
}

/// What came back to the redirect URI, as its query parameters.
#[derive(Debug, Clone, Default)]
pub struct Callback {
    /// `code`.
    pub code: Option<String>,
    /// `state`.
    pub state: Option<String>,
    /// `error` and `error_description`, when the server refused.
    pub error: Option<String>,
}

impl Callback {
    /// Reads the query of the redirect URI the browser came back to.
    pub fn from_query(query: &str) -> Callback {
        let mut callback = Callback::default();
        let mut description = None;
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            match key.as_ref() {
                "code" => callback.code = Some(value.into_owned()),
                "state" => callback.state = Some(value.into_owned()),
                "error" => callback.error = Some(value.into_owned()),
                "error_description" => description = Some(value.into_owned()),
                _ => {}
            }
        }
        if let (Some(error), Some(description)) = (&mut callback.error, description) {
            error.push_str(": ");
            error.push_str(&description);
        }
        callback
    }
}

/// Finishes an authorization: checks `state`, exchanges the code with the PKCE verifier.
pub async fn finish(
    client: &Client,
    site: &OAuthSite,
    authorization: StartedAuthorization,
    callback: &Callback,
) -> Result<Tokens, OAuthError> {
    if callback.state.as_deref() != Some(authorization.state.secret().as_str()) {
        return Err(OAuthError::StateMismatch);
    }
    if let Some(error) = &callback.error {
        return Err(OAuthError::Denied(error.clone()));
    }
    let code = callback.code.clone().ok_or_else(|| OAuthError::Denied("no code in the answer".into()))?;
    let http = token_http(client)?;
    let response = oauth_client(site)?
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(authorization.verifier)
        .request_async(&sender(http))
        .await
        .map_err(|e| OAuthError::Token(describe_request_error(&e)))?;
    Ok(tokens(&response, None))
}

/// Renews the access token: a new one for the refresh token (the `refresh_token` grant).
pub async fn renew(client: &Client, site: &OAuthSite, refresh_token: &str) -> Result<Tokens, OAuthError> {
    let http = token_http(client)?;
    let refresh_token = RefreshToken::new(refresh_token.to_owned());
    let response = oauth_client(site)?
        .exchange_refresh_token(&refresh_token)
        .request_async(&sender(http))
        .await
        .map_err(|e| OAuthError::Token(describe_request_error(&e)))?;
    Ok(tokens(&response, Some(refresh_token.secret().clone())))
}

fn tokens(response: &oauth2::basic::BasicTokenResponse, previous_refresh_token: Option<String>) -> Tokens {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    Tokens {
        access_token: response.access_token().secret().clone(),
        // A server that does not rotate refresh tokens keeps the old one valid.
        refresh_token: response.refresh_token().map(|t| t.secret().clone()).or(previous_refresh_token),
        expires_at: response.expires_in().map(|d| now + d.as_secs() as i64),
    }
}

/// The client for token requests: the same guard and roots, no redirects.
fn token_http(client: &Client) -> Result<Client, OAuthError> {
    Client::new(ClientConfig { max_redirects: 0, ..client.config().clone() })
        .map_err(|e| OAuthError::Token(e.to_string()))
}

/// The HTTP function `oauth2` calls: each call owns its client, so that the futures borrow
/// nothing and stay `Send` in any handler.
fn sender(
    client: Client,
) -> impl Fn(HttpRequest) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<HttpResponse, ClientError>> + Send>>
{
    move |request| {
        let client = client.clone();
        Box::pin(async move { send(&client, request).await })
    }
}

async fn send(client: &Client, request: HttpRequest) -> Result<HttpResponse, ClientError> {
    let (parts, body) = request.into_parts();
    let url: Url = parts.uri.to_string().parse().map_err(|e| ClientError::BadUrl(format!("{}: {e}", parts.uri)))?;
    let method =
        Method::from_bytes(parts.method.as_str().as_bytes()).map_err(|e| ClientError::BadUrl(e.to_string()))?;
    let fetched = client.send(method, &url, parts.headers, Some(body)).await?;
    let mut response = HttpResponse::new(fetched.body);
    *response.status_mut() = fetched.status;
    *response.headers_mut() = fetched.headers;
    Ok(response)
}

fn describe_request_error<E: std::error::Error>(error: &E) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7636, appendix B.
    #[test]
    fn pkce_s256_matches_the_rfc_7636_vector() {
        let verifier = PkceCodeVerifier::new("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".to_owned());
        let challenge = PkceCodeChallenge::from_code_verifier_sha256(&verifier);
        assert_eq!(challenge.as_str(), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert_eq!(challenge.method().as_str(), "S256");
    }

    #[test]
    fn each_start_has_a_fresh_state_and_challenge() {
        let site = OAuthSite {
            authorization_url: "https://a.example/oauth/authorize".parse().unwrap(),
            token_url: "https://a.example/oauth/token".parse().unwrap(),
            scopes: vec!["read".into(), "write".into()],
            client_id: "servio-cli".into(),
            redirect_uri: "http://127.0.0.1:5000/callback".parse().unwrap(),
        };
        let (a, b) = (start(&site).unwrap(), start(&site).unwrap());
        assert_ne!(a.state.secret(), b.state.secret());
        let query: std::collections::HashMap<_, _> = a.authorize_url.query_pairs().into_owned().collect();
        assert_eq!(query["code_challenge_method"], "S256");
        assert_eq!(query["response_type"], "code");
        assert_eq!(query["scope"], "read write");
        assert_eq!(&query["state"], a.state.secret());
        assert_ne!(
            query["code_challenge"],
            b.authorize_url.query_pairs().find(|(k, _)| k == "code_challenge").unwrap().1
        );
    }

    #[test]
    fn callbacks_are_read_from_the_query() {
        let ok = Callback::from_query("code=abc&state=xyz");
        assert_eq!((ok.code.as_deref(), ok.state.as_deref()), (Some("abc"), Some("xyz")));
        let denied = Callback::from_query("error=access_denied&error_description=user+said+no&state=s");
        assert_eq!(denied.error.as_deref(), Some("access_denied: user said no"));
    }
}
