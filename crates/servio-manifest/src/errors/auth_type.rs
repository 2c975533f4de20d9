//! E030 `auth-type`: `auth.type` is `bearer` or `oauth2`.
//!
//! `crate::validate` reads `auth` by its type; any other type is the [`diagnostic`] here, with a
//! did-you-mean for the usual ways of writing the two.

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain E030` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that `auth.type` is `bearer` or `oauth2`.\n\nWhy: the platform knows how to authenticate in exactly these two ways.\n\nExample:\n    \"auth\": { \"type\": \"apikey\" }\n\nFix: use \"bearer\" for a token the user pastes, or \"oauth2\" with `authorization_url` and `token_url` for OAuth 2.0 with PKCE.";

crate::rules::fixture_test!("auth_type.json", AuthType);

/// `auth.type`, at `at`, is `kind`: neither `bearer` nor `oauth2`.
pub(crate) fn diagnostic(kind: &str, at: Pointer) -> Diagnostic {
    let suggestion = match kind.to_ascii_lowercase().as_str() {
        "oauth" | "oauth2.0" | "oauth 2.0" | "oauth2" | "oauth_2" => Some("oauth2"),
        "bearer" | "token" | "bearer_token" | "api_key" | "apikey" => Some("bearer"),
        _ => None,
    };
    Diagnostic::at(Code::AuthType, at, format!("unknown auth type {kind:?}: expected \"bearer\" or \"oauth2\""))
        .with_help_opt(suggestion.map(|s| format!("did you mean \"{s}\"?")))
}
