//! E020 `https-url`: `server.url`, `auth.authorization_url` and `auth.token_url` are
//! absolute `https` URLs, without user information and without a fragment.

use url::Url;

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain E020` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that `server.url`, `auth.authorization_url` and `auth.token_url` are absolute `https` URLs without user information (`user:pass@`) and without a fragment (`#...`).\n\nWhy: tool calls carry the user's credentials; over plain http anyone on the path can read them. Credentials in the URL leak into logs, and a fragment is never sent to a server.\n\nExample:\n    \"server\": { \"url\": \"http://forum.example.com/api/servio\" }\n\nFix: serve the API over HTTPS and write \"url\": \"https://forum.example.com/api/servio\".";

crate::rules::fixture_test!("https_url.json", HttpsUrl);

/// The URL `text` at `at` (called `what` in messages), when it is an absolute `https` URL with
/// a host, no user information and no fragment; otherwise an E020 in `errors` saying which.
pub(crate) fn check(text: &str, at: &Pointer, what: &str, errors: &mut Vec<Diagnostic>) -> Option<Url> {
    let problem = match Url::parse(text) {
        Err(e) => Some((
            format!("{what} is not an absolute URL: {e}"),
            Some("write the full URL, starting with https://".to_owned()),
        )),
        Ok(url) if url.scheme() != "https" => Some((
            format!("{what} must use https: the URL uses {}, not https", url.scheme()),
            (url.scheme() == "http").then(|| format!("write {}", text.replacen("http:", "https:", 1))),
        )),
        Ok(url) if !url.username().is_empty() || url.password().is_some() => Some((
            format!("{what} must not contain user information"),
            Some("pass credentials through `auth`, never in the URL".to_owned()),
        )),
        Ok(url) if url.fragment().is_some() => Some((
            format!("{what} must not contain a fragment (`#...`)"),
            Some("a fragment is never sent to the server: remove it".to_owned()),
        )),
        Ok(url) if url.host_str().is_none_or(str::is_empty) => Some((format!("{what} has no host"), None)),
        Ok(url) => return Some(url),
    };
    if let Some((message, help)) = problem {
        errors.push(Diagnostic::at(Code::HttpsUrl, at.clone(), message).with_help_opt(help));
    }
    None
}
