//! Which scope of API token each route needs (interpretation §10): the one table, read by the
//! [`crate::auth::Caller`] extractor before any handler runs. A browser session may do
//! everything; a token only what its scope grants.
//!
//! Deny by default: a route that is not listed here needs [`Scope::Account`], so a route added
//! without a thought for AI clients is kept from them, never opened to them. What changes what
//! the platform grants or holds (approvals, credentials, Connects, tokens, sessions, the
//! password, the zone, the account, the Directory, the vault's sites and collections) is not
//! listed: a token given to a model can never approve the tools it uses or mint more tokens.

use axum::http::Method;
use servio_store::Scope;

/// The routes a token narrower than [`Scope::Account`] may ask for: (method, route as matched,
/// the scope it needs).
const GRANTED: &[(Method, &str, Scope)] = &[
    (Method::GET, "/api/me", Scope::Read),
    (Method::GET, "/api/dashboard", Scope::Read),
    (Method::GET, "/api/tools", Scope::Ai),
    (Method::POST, "/api/tools/{name}/call", Scope::Ai),
    (Method::GET, "/api/tool-calls", Scope::Ai),
];

/// The refusal of a token limited to some sites asking for figures of every site (the
/// dashboard, MCP resources and `servio_metrics` show all the vault's figures together).
pub fn figures_of_every_site() -> crate::error::ApiError {
    crate::error::ApiError::BadRequest(
        "this token is limited to some sites, and the figures are read for every site of the vault together: \
         use a token for every site (scope `read` is enough)"
            .into(),
    )
}

/// The scope a request with `method` on the matched route `route` needs.
pub fn needed(method: &Method, route: &str) -> Scope {
    GRANTED
        .iter()
        .find(|(granted, path, _)| granted == method && *path == route)
        .map_or(Scope::Account, |(_, _, scope)| *scope)
}

/// Every (method, route) a narrower token may ask for, for the route walk and the docs.
pub fn granted() -> impl Iterator<Item = (&'static Method, &'static str, Scope)> {
    GRANTED.iter().map(|(method, route, scope)| (method, *route, *scope))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_not_listed_needs_an_account_token() {
        assert_eq!(needed(&Method::POST, "/api/vault/{id}/approve"), Scope::Account);
        assert_eq!(needed(&Method::POST, "/api/tokens"), Scope::Account);
        assert_eq!(needed(&Method::GET, "/a-route-added-later"), Scope::Account);
        assert_eq!(needed(&Method::POST, "/api/dashboard"), Scope::Account);
        assert_eq!(needed(&Method::GET, "/api/dashboard"), Scope::Read);
        assert_eq!(needed(&Method::POST, "/api/tools/{name}/call"), Scope::Ai);
    }

    #[test]
    fn wider_scopes_cover_narrower_ones() {
        assert!(Scope::Account.covers(Scope::Ai) && Scope::Ai.covers(Scope::Read));
        assert!(!Scope::Ai.covers(Scope::Account) && !Scope::Read.covers(Scope::Ai));
    }
}
