//! Accounts: sign-up and sign-in behind the abuse checks, the time zone, passwords, sessions
//! listed and ended, personal API tokens, and the typed views the API and the pages render.
//! What a browser carries (session and device cookies, the cross-site check) is the routes'
//! (`routes::accounts::session`).

pub mod secrets;

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use servio_store::{Grant, Scope, User};
use utoipa::ToSchema;

use crate::domain::accounts::secrets::{
    check_password, check_time_zone, decoy_hash, earlier_forms, hash_password, new_token, normalize_email, token_hash,
    verify_password,
};
use crate::error::ApiError;
use crate::{AppState, now};

/// A user as the API shows them (never the password hash).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserView {
    /// The user's id.
    pub id: i64,
    /// The email, normalised (NFC, lowercase domain).
    pub email: String,
    /// The IANA time zone periods are worked out in.
    pub time_zone: String,
}

impl From<&User> for UserView {
    fn from(user: &User) -> UserView {
        UserView { id: user.id, email: user.email.clone(), time_zone: user.time_zone.clone() }
    }
}

/// The signed-in user, with the session's CSRF token when a session cookie signed them in.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionView {
    /// Who.
    pub user: UserView,
    /// Send it as `X-CSRF-Token` with every change made with the session cookie.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csrf_token: Option<String>,
}

/// A new account.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SignUp {
    /// The email to sign in with.
    #[schema(format = Email, max_length = 254)]
    pub email: String,
    /// 10 to 1024 characters.
    #[schema(min_length = 10, max_length = 1024)]
    pub password: String,
    /// An IANA time zone, such as `Europe/Berlin`.
    #[schema(min_length = 1)]
    pub time_zone: String,
}

/// An email and a password.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SignIn {
    /// The email signed up with.
    #[schema(format = Email)]
    pub email: String,
    /// The password.
    pub password: String,
}

/// The user's time zone, asked for and answered.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct TimeZone {
    /// An IANA time zone, such as `Pacific/Auckland`.
    #[schema(min_length = 1)]
    pub time_zone: String,
}

/// A name for a new API token.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NewToken {
    /// 1 to 100 characters, to tell tokens apart: not only spaces (surrounding ones are
    /// trimmed), without NUL.
    #[schema(min_length = 1, max_length = 100, pattern = r"^[^\x00]*[^\s\x00][^\x00]*$")]
    pub name: String,
    /// What the token may do: `ai` (the default: list and call the approved tools, read the
    /// figures), `read` (the figures only) or `account` (the account API as well; made only from
    /// a signed-in session, with `password`).
    #[serde(default)]
    pub scope: TokenScope,
    /// The vault sites (by id) the token is limited to, 1 to 100 of them; every site when left
    /// out.
    #[serde(default, deserialize_with = "crate::json_body::integers")]
    #[schema(min_items = 1, max_items = 100)]
    pub sites: Option<Vec<i64>>,
    /// The account's password, required for an `account` token.
    #[serde(default)]
    pub password: Option<String>,
}

/// What an API token may do (interpretation §10).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TokenScope {
    /// The figures only.
    Read,
    /// List and call the approved tools, read the figures: what an AI client is given.
    #[default]
    Ai,
    /// The account API as well: whatever changes what the platform grants or holds.
    Account,
}

impl From<TokenScope> for Scope {
    fn from(scope: TokenScope) -> Scope {
        match scope {
            TokenScope::Read => Scope::Read,
            TokenScope::Ai => Scope::Ai,
            TokenScope::Account => Scope::Account,
        }
    }
}

impl From<Scope> for TokenScope {
    fn from(scope: Scope) -> TokenScope {
        match scope {
            Scope::Read => TokenScope::Read,
            Scope::Ai => TokenScope::Ai,
            Scope::Account => TokenScope::Account,
        }
    }
}

/// The most sites one token may be limited to (a vault holds 100 by default).
const MAX_TOKEN_SITES: usize = 100;

/// A personal API token without its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenView {
    /// The token's id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// When it was made (Unix seconds).
    pub created_at: i64,
    /// When it was last used (Unix seconds), if ever.
    pub last_used_at: Option<i64>,
    /// What it may do (tokens made before scopes existed are `ai`).
    pub scope: TokenScope,
    /// The vault sites it is limited to; `null` for every site.
    pub sites: Option<Vec<i64>>,
}

/// The user's API tokens.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenList {
    /// Oldest first.
    pub tokens: Vec<TokenView>,
}

/// A token just made: the only time its secret is shown.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedToken {
    /// The token's id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// The token itself, for `Authorization: Bearer`.
    pub token: String,
    /// What it may do.
    pub scope: TokenScope,
    /// The vault sites it is limited to; `null` for every site.
    pub sites: Option<Vec<i64>>,
    /// "shown once: store it now".
    #[schema(value_type = String)]
    pub note: &'static str,
}

pub(crate) fn bad(field: &str, expected: &str) -> ApiError {
    ApiError::BadRequest(format!("`{field}` must be {expected}"))
}

/// Creates an account after checking who asks (within the address's sign-up limit
/// and while "already taken" answers are left, shared by every client, so that taken
/// addresses cannot be enumerated at speed from one address or many) and then its fields.
pub(crate) async fn register(state: &AppState, address: IpAddr, form: &SignUp) -> Result<User, ApiError> {
    state.throttle.sign_up(address)?;
    let normalized = normalize_email(&form.email).map_err(|e| bad("email", e))?;
    check_password(&form.password).map_err(|e| bad("password", e))?;
    check_time_zone(&form.time_zone).map_err(|e| bad("time_zone", e))?;
    // Hashed before the address is looked up, so that a taken address answers in the time a
    // new one takes: the answer's timing says nothing the throttled answer does not.
    let password = form.password.clone();
    let hash = state.throttle.hashing.run(move || hash_password(&password)).await?.map_err(ApiError::internal)?;
    // The address as stored now, and an account made before NFC under another form of it.
    let mut forms = vec![normalized.clone()];
    forms.extend(earlier_forms(&form.email, &normalized));
    if find_user(state, &forms).await?.is_some() {
        return Err(taken(state));
    }
    match state.store.create_user(&normalized, &hash, &form.time_zone, now()).await {
        // Two sign-ups of one new address at once: the unique index answers the second.
        Err(servio_store::StoreError::Conflict(_)) => Err(taken(state)),
        created => Ok(created?),
    }
}

/// "Already taken", spending one of the answers every client shares: probes from many
/// addresses get few of these answers.
fn taken(state: &AppState) -> ApiError {
    state.throttle.taken_answer();
    ApiError::Conflict("this email is already taken".into())
}

/// The first user stored under one of `forms` of an email.
async fn find_user(state: &AppState, forms: &[String]) -> Result<Option<User>, ApiError> {
    for form in forms {
        if let Some(user) = state.store.user_by_email(form).await? {
            return Ok(Some(user));
        }
    }
    Ok(None)
}

/// The user with these credentials; the same answer, in the same time, whichever is wrong.
/// Checked first: within the limits of the client's address (`address`) and of the account
/// (unless `is_known_device` says the browser signed in to it before).
pub(crate) async fn authenticate(
    state: &AppState,
    (address, is_known_device): (IpAddr, impl Fn(&str) -> bool),
    form: &SignIn,
) -> Result<User, ApiError> {
    crate::text::require_text("email", &form.email)?;
    let normalized = normalize_email(&form.email);
    let account = normalized.as_deref().unwrap_or(form.email.trim());
    state.throttle.sign_in(address, account, is_known_device(account))?;
    let normalized = normalized.map_err(|_| ApiError::WrongCredentials)?;
    let mut forms = vec![normalized.clone()];
    forms.extend(earlier_forms(&form.email, &normalized));
    let user = find_user(state, &forms).await?;
    let (password, hash) = (form.password.clone(), user.as_ref().map(|u| u.password_hash.clone()));
    let matches = state
        .throttle
        .hashing
        .run(move || match &hash {
            Some(hash) => verify_password(&password, hash),
            None => verify_password(&password, decoy_hash()),
        })
        .await?;
    match (matches, user) {
        (true, Some(user)) => {
            state.throttle.signed_in(address, &normalized);
            Ok(user)
        }
        _ => Err(ApiError::WrongCredentials),
    }
}

/// Changes the user's time zone.
pub(crate) async fn set_time_zone(state: &AppState, user_id: i64, form: TimeZone) -> Result<TimeZone, ApiError> {
    check_time_zone(&form.time_zone).map_err(|e| bad("time_zone", e))?;
    state.store.set_time_zone(user_id, &form.time_zone).await?;
    state.tokens.forget_user(user_id);
    Ok(form)
}

/// Makes a personal API token for the user as `form` asks: the stored record, and the token
/// itself (the only time it exists outside its hash). An `account` token is made only for a
/// signed-in session (`in_session`: the caller is a browser session, not an API token) that
/// gives the password again; a token may be limited to sites of
/// the user's vault.
pub(crate) async fn issue_token(
    state: &AppState,
    (user, in_session): (&User, bool),
    form: &NewToken,
) -> Result<IssuedToken, ApiError> {
    let name = form.name.trim();
    crate::text::require_text("name", name)?;
    if name.is_empty() || name.chars().count() > 100 {
        return Err(bad("name", "a name of 1 to 100 characters"));
    }
    let sites = token_sites(state, user.id, form.sites.as_deref()).await?;
    if form.scope == TokenScope::Account {
        if !in_session {
            return Err(ApiError::Forbidden(
                "an `account` token is made only from a signed-in session: ask for `ai` or `read` here".into(),
            ));
        }
        let password = form.password.as_deref().filter(|p| !p.is_empty());
        let password = password.ok_or_else(|| bad("password", "your password, to make an `account` token"))?;
        // Only a wrong password is one: past the account's checks (`429`) or with none free
        // (`503`), the refusal says so, and when to try again.
        confirm_password(state, user, password).await.map_err(|error| match error {
            ApiError::BadRequest(_) => bad("password", "your current password"),
            other => other,
        })?;
    }
    let grant = Grant { scope: form.scope.into(), sites };
    let token = new_token("svt_").map_err(ApiError::internal)?;
    let quota = (now(), state.quotas.api_tokens);
    let stored = match state.store.create_api_token(user.id, name, &token_hash(&token), &grant, quota).await {
        Err(servio_store::StoreError::AtLimit { limit, .. }) => {
            return Err(ApiError::Conflict(format!(
                "you have {limit} API tokens, the most one user may have: revoke one you no longer use \
                 (DELETE /api/tokens/{{id}}, or on the account page) before making another"
            )));
        }
        stored => stored?,
    };
    Ok(IssuedToken {
        id: stored.id,
        name: stored.name,
        token,
        scope: form.scope,
        sites: grant.sites,
        note: "shown once: store it now",
    })
}

/// The sites a new token is limited to: each one of the user's vault, said once; `None` for all.
async fn token_sites(state: &AppState, user_id: i64, asked: Option<&[i64]>) -> Result<Option<Vec<i64>>, ApiError> {
    let Some(asked) = asked else { return Ok(None) };
    if asked.is_empty() || asked.len() > MAX_TOKEN_SITES {
        return Err(bad("sites", &format!("1 to {MAX_TOKEN_SITES} ids of sites in your vault, or left out for all")));
    }
    let held: std::collections::HashSet<i64> =
        state.store.vault_listing(user_id).await?.into_iter().map(|entry| entry.site_id).collect();
    let mut sites = Vec::with_capacity(asked.len());
    for &id in asked {
        if !held.contains(&id) {
            return Err(ApiError::BadRequest(format!("`sites`: site {id} is not in your vault")));
        }
        if !sites.contains(&id) {
            sites.push(id);
        }
    }
    Ok(Some(sites))
}

/// The user's API tokens, without their secrets.
pub(crate) async fn tokens(state: &AppState, user_id: i64) -> Result<TokenList, ApiError> {
    let tokens = state.store.api_tokens(user_id).await?;
    let tokens = tokens
        .into_iter()
        .map(|t| {
            let grant = t.grant();
            TokenView {
                id: t.id,
                name: t.name,
                created_at: t.created_at,
                last_used_at: t.last_used_at,
                scope: grant.scope.into(),
                sites: grant.sites,
            }
        })
        .collect();
    Ok(TokenList { tokens })
}

/// Deletes one of the user's API tokens; "not found" when it is not theirs. MCP streams opened
/// with it end, in every process.
pub(crate) async fn delete_token(state: &AppState, user_id: i64, id: i64) -> Result<(), ApiError> {
    let deleted = state.store.delete_api_token(user_id, id).await?;
    state.tokens.forget_user(user_id);
    if deleted { Ok(()) } else { Err(ApiError::NotFound) }
}

/// What signing out everywhere or changing the password did to the user's access.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccessEnded {
    /// Browser sessions ended.
    pub sessions_ended: u64,
    /// API tokens revoked (only when asked: `revoke_api_tokens`).
    pub api_tokens_revoked: u64,
    /// API tokens that still work: AI clients and scripts holding them keep their access.
    pub api_tokens_kept: Vec<TokenView>,
}

/// Whether to revoke the API tokens too (`?revoke_api_tokens=true`).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RevokeTokens {
    /// Also revoke every API token of the user (AI clients using them lose access).
    #[serde(default)]
    pub revoke_api_tokens: bool,
}

/// Revokes every API token of the user when `revoke` says so; what was revoked and what stays.
async fn end_api_tokens(
    state: &AppState,
    user_id: i64,
    revoke: bool,
    sessions_ended: u64,
) -> Result<AccessEnded, ApiError> {
    let api_tokens_revoked = if revoke { state.store.delete_api_tokens(user_id).await? } else { 0 };
    if api_tokens_revoked > 0 {
        state.tokens.forget_user(user_id);
    }
    let api_tokens_kept = tokens(state, user_id).await?.tokens;
    Ok(AccessEnded { sessions_ended, api_tokens_revoked, api_tokens_kept })
}

/// A new password, with the current one.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PasswordChange {
    /// The password now.
    pub current_password: String,
    /// The new password, 10 to 1024 characters.
    #[schema(min_length = 10, max_length = 1024)]
    pub new_password: String,
    /// Also revoke every API token (whoever knew the old password may have made one); by
    /// default they keep working, and the answer lists them.
    #[serde(default)]
    pub revoke_api_tokens: bool,
}

/// The current password, confirming an account deletion.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CurrentPassword {
    /// The password now.
    pub current_password: String,
}

/// A session in the user's list.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionItem {
    /// When it began (Unix seconds).
    pub created_at: i64,
    /// When it was last used, to the hour.
    pub last_used_at: i64,
    /// When it ends at the latest.
    pub expires_at: i64,
    /// Whether it is the session asking.
    pub current: bool,
}

/// Checks that `password` is the user's current one, counted against the account's sign-in
/// limit.
async fn confirm_password(state: &AppState, user: &User, password: &str) -> Result<(), ApiError> {
    state.throttle.password_check(user.id)?;
    let (password, hash) = (password.to_owned(), user.password_hash.clone());
    match state.throttle.hashing.run(move || verify_password(&password, &hash)).await? {
        true => Ok(()),
        false => Err(ApiError::BadRequest("`current_password` is not your current password".into())),
    }
}

/// Changes the user's password (the current one required) and ends every other session of
/// theirs: whoever knew the old password is signed out. API tokens are revoked too when the
/// form asks; the answer says which still work. `keep` is the hash of the session asking, if a
/// session asks.
pub(crate) async fn change_password(
    state: &AppState,
    user: &User,
    keep: &str,
    form: &PasswordChange,
) -> Result<AccessEnded, ApiError> {
    confirm_password(state, user, &form.current_password).await?;
    check_password(&form.new_password).map_err(|e| bad("new_password", e))?;
    let password = form.new_password.clone();
    let hash = state.throttle.hashing.run(move || hash_password(&password)).await?.map_err(ApiError::internal)?;
    state.store.set_password_hash(user.id, &hash).await?;
    let ended = state.store.delete_sessions(user.id, keep).await?;
    end_api_tokens(state, user.id, form.revoke_api_tokens, ended).await
}

/// The user's live sessions, newest first, the asking one (hashed as `current`) marked.
pub(crate) async fn sessions(state: &AppState, user_id: i64, current: &str) -> Result<Vec<SessionItem>, ApiError> {
    let sessions = state.store.sessions(user_id, current, now()).await?;
    Ok(sessions
        .into_iter()
        .map(|s| SessionItem {
            created_at: s.created_at,
            last_used_at: s.last_used_at,
            expires_at: s.expires_at,
            current: s.current,
        })
        .collect())
}

/// Ends every session of the user, the asking one included: "sign out everywhere"; with
/// `revoke`, every API token too. Says which API tokens still work.
pub(crate) async fn sign_out_everywhere(state: &AppState, user_id: i64, revoke: bool) -> Result<AccessEnded, ApiError> {
    let ended = state.store.delete_sessions(user_id, "").await?;
    end_api_tokens(state, user_id, revoke, ended).await
}

/// Deletes the account (the current password required) and everything of the user's: sessions,
/// API tokens, vault entries with their credentials, values, attempts, calls and claims.
pub(crate) async fn delete_account(state: &AppState, user: &User, form: &CurrentPassword) -> Result<(), ApiError> {
    confirm_password(state, user, &form.current_password).await?;
    if !state.store.delete_user(user.id).await? {
        return Err(ApiError::NotFound);
    }
    state.tokens.forget_user(user.id);
    Ok(())
}
