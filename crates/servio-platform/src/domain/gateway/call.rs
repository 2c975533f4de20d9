//! Calling a tool by its prefixed name: counted against the user's gateway limits, found in
//! the user's catalogue, its arguments checked against the site's schema, sent with the user's
//! credential (renewed once on a `401`), and logged.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use servio_client::CallError;
use servio_core::credentials::{Renewal, Retried};
use servio_core::manifests::{CheckedManifest, Refusal, Wait};
use servio_manifest::schema::ArgumentError;
use servio_store::{Grant, ToolCall, User, VaultEntry};

use super::catalogue::call_context;
use super::log::logged_detail;
use crate::AppState;
use crate::error::ApiError;

/// Why a call through the gateway failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// No tool of that name in the user's catalogue.
    UnknownTool(String),
    /// The name is not text the call log can keep (it holds a NUL); says what it must be.
    InvalidName(&'static str),
    /// The arguments do not match the tool's schema; nothing was sent.
    InvalidArguments(Vec<ArgumentError>),
    /// The site could not be reached (DNS, connect, TLS, timeout).
    SiteUnreachable(String),
    /// The site refused the user's credential, even after a refresh where one was possible.
    Unauthorized(String),
    /// The site answered with an error status.
    SiteError {
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The site's answer is not JSON.
    NotJson(String),
    /// The tool's `input_schema` cannot be used to check arguments (a remote `$ref`, say): the
    /// site's mistake, which no retry mends; says why.
    UnusableSchema(String),
    /// No manifest check or argument validation was free for as long as a call waits: try
    /// again after its `retry_after`.
    Busy(servio_core::Busy),
    /// The user made more gateway calls, or logged more bytes with them, than the limits let
    /// through (`ThrottleConfig::gateway_calls_per_user`, `gateway_log_bytes_per_user`):
    /// nothing was done or logged.
    Throttled {
        /// Which limit, and when to try again.
        message: String,
        /// Seconds until a call is let through again.
        retry_after: u64,
    },
    /// The platform failed (details logged).
    Internal(String),
}

impl Failure {
    /// The status word of the call log.
    pub fn status(&self) -> &'static str {
        match self {
            Failure::UnknownTool(_) => "unknown_tool",
            Failure::InvalidName(_) => "invalid_name",
            Failure::InvalidArguments(_) => "invalid_arguments",
            Failure::SiteUnreachable(_) => "site_unreachable",
            Failure::Unauthorized(_) => "unauthorized",
            Failure::SiteError { .. } => "site_error",
            Failure::NotJson(_) => "not_json",
            Failure::UnusableSchema(_) => "unusable_schema",
            Failure::Busy(_) => "busy",
            Failure::Throttled { .. } => "too_many_calls",
            Failure::Internal(_) => "internal",
        }
    }
}

impl Failure {
    /// The failure as data for a client: `error` (the status word), `message`, and for invalid
    /// arguments each offending `path` with its message, for a site's error its `site_status`.
    pub fn details(&self) -> Value {
        let mut details = serde_json::json!({ "status": self.status(), "error": self.to_string() });
        match self {
            Failure::InvalidArguments(problems) => {
                details["problems"] = problems
                    .iter()
                    .map(|p| serde_json::json!({ "path": p.pointer.as_str(), "message": p.message }))
                    .collect::<Vec<_>>()
                    .into();
            }
            Failure::SiteError { status, .. } => details["site_status"] = serde_json::json!(status),
            Failure::Throttled { retry_after, .. } => details["retry_after"] = serde_json::json!(retry_after),
            _ => {}
        }
        details
    }
}

impl Failure {
    /// A gateway limit's refusal ([`crate::throttle::Throttle::gateway_call`] and
    /// [`crate::throttle::Throttle::gateway_log`] answer `TooSoon`) as a failure.
    pub fn throttled(refused: ApiError) -> Failure {
        match refused {
            ApiError::TooSoon { message, retry_after } => Failure::Throttled { message, retry_after },
            ApiError::TooManyRequests { retry_after } => Failure::Throttled {
                message: format!("too many gateway calls; try again in {retry_after} s"),
                retry_after,
            },
            other => Failure::Internal(other.to_string()),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::UnknownTool(name) => {
                write!(f, "no tool named {name:?} in your vault; list the tools to see their names")
            }
            Failure::InvalidName(expected) => write!(f, "a tool name must be {expected}"),
            Failure::InvalidArguments(problems) => servio_client::call::write_invalid_arguments(f, problems),
            Failure::SiteUnreachable(detail) => write!(f, "the site cannot be reached: {detail}"),
            Failure::Unauthorized(detail) => f.write_str(detail),
            Failure::SiteError { status, body } => write!(f, "the site answered {status}: {body}"),
            Failure::NotJson(detail) => write!(f, "the site's answer is not JSON: {detail}"),
            Failure::UnusableSchema(reason) => {
                write!(
                    f,
                    "the tool's input_schema cannot be used, so it cannot be called until the site fixes it: {reason}"
                )
            }
            Failure::Busy(busy) => write!(f, "{busy}"),
            Failure::Throttled { message, .. } => f.write_str(message),
            Failure::Internal(_) => f.write_str("the platform failed to make the call; try again"),
        }
    }
}

/// Calls the tool `name` of `user`'s catalogue with `args`, and logs the call.
///
/// A name the log could not keep is refused first and not logged: queued, it would fail the
/// log's batch on PostgreSQL. Then the call is counted against the user's gateway limits,
/// before anything is read for it: past them it is refused ([`Failure::Throttled`]) with no
/// store read, no site call and no log entry. Its log entry's most bytes are counted next, once
/// the user's log setting says whether its arguments are kept. A tool the catalogue does not
/// hold costs no more: a lookup in the kept catalogue and its entry, counted like any other.
/// `caller` is the user and the API token they call with (`None`: a browser session); `reach`
/// what that token grants: a tool of a site it is not limited to is not there for it.
pub async fn call(
    state: &AppState,
    caller: (&User, Option<i64>),
    reach: &Grant,
    name: &str,
    args: &Value,
) -> Result<Value, Failure> {
    let (user, token_id) = caller;
    crate::text::check_text(name).map_err(Failure::InvalidName)?;
    if let Err(refused) = state.throttle.gateway_call(user.id) {
        return Err(refused_call(Failure::throttled(refused)));
    }
    // A name no catalogue holds can be as long as the request: it is logged, shown and echoed
    // cut to a bound, with its length, so its size decides nothing the platform keeps.
    let bounded_name = servio_store::clipped(name, servio_store::LOGGED_TOOL_NAME_BYTES);
    let started = Instant::now();
    let called_at = crate::now();
    let context = call_context(state, user).await;
    let keep_arguments = context.as_ref().is_ok_and(|context| context.log_arguments);
    // Bounded here too, not only by the store: the log's queue holds calls until written.
    let arguments = keep_arguments.then(|| servio_store::logged_arguments(&args.to_string()).into_owned());
    let most = super::log::most_logged(&bounded_name, arguments.as_deref());
    if let Err(refused) = state.throttle.gateway_log(user.id, most) {
        return Err(refused_call(Failure::throttled(refused)));
    }
    let (site_id, result) = match context {
        Ok(context) => match context.catalogue.find(name).filter(|(tool, ..)| reach.reaches(tool.site_id)) {
            Some((tool, entry, parsed, index)) => {
                (Some(tool.site_id), call_found(state, user, entry, parsed, index, args).await)
            }
            None => (None, Err(Failure::UnknownTool(bounded_name.clone().into_owned()))),
        },
        Err(ApiError::ChecksBusy(busy)) => (None, Err(Failure::Busy(busy))),
        Err(error) => (None, Err(Failure::Internal(error.to_string()))),
    };
    if let Err(Failure::Internal(detail)) = &result {
        tracing::error!(user_id = user.id, tool = %bounded_name, %detail, "a gateway call failed");
    }
    let status = result.as_ref().map_or_else(Failure::status, |_| "ok");
    metrics::counter!("servio_gateway_calls_total", "outcome" => status).increment(1);
    state.gateway.log(
        &state.store,
        ToolCall {
            id: 0,
            user_id: user.id,
            site_id,
            tool: bounded_name.into_owned(),
            called_at,
            status: status.to_owned(),
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            arguments,
            token_id,
            token_name: None,
            kind: "tool".to_owned(),
            detail: result.as_ref().err().map(|failure| logged_detail(&failure.to_string())),
        },
    );
    result
}

/// A call refused by the user's gateway limits: counted in `servio_gateway_calls_total`, not
/// logged (the limits are what keeps the log bounded).
fn refused_call(failure: Failure) -> Failure {
    metrics::counter!("servio_gateway_calls_total", "outcome" => failure.status()).increment(1);
    failure
}

async fn call_found(
    state: &AppState,
    user: &User,
    entry: &VaultEntry,
    parsed: &Arc<CheckedManifest>,
    index: usize,
    args: &Value,
) -> Result<Value, Failure> {
    // Compiling a schema and validating against it take long for a hostile schema: off the
    // async threads, a bounded number at once.
    // In the user's turn in the shared check pool: an MCP call runs in rmcp's task, outside the
    // request's scope.
    let validation = state.collector.manifests().validate(parsed, index, args, Wait::Bounded);
    match servio_core::fair::owned_by(Some(user.id), validation).await {
        Ok(()) => {}
        Err(Refusal::Unusable(reason)) => return Err(Failure::UnusableSchema(reason)),
        Err(Refusal::Invalid(problems)) => return Err(Failure::InvalidArguments(problems)),
        Err(Refusal::Busy(busy)) => return Err(Failure::Busy(busy)),
    }
    let manifest = &parsed.manifest;
    let tool = &manifest.tools[index].name;
    let sealed = entry.credential.as_deref();
    let credentials = state.credentials();
    let token = credentials.bearer(user.id, &entry.site, manifest, sealed, Renewal::IfExpiring).await.map_err(|e| {
        Failure::Unauthorized(format!(
            "the site's OAuth token could not be renewed: {}",
            servio_client::error_chain(&e)
        ))
    })?;
    let send = |token: Option<String>| async move {
        servio_client::post_tool(&state.client, &manifest.server_url, tool, args, token.as_deref()).await
    };
    let sent = credentials.send_with_renewal(user.id, &entry.site, manifest, sealed, token.as_deref(), send).await;
    let body = match sent.retried {
        Retried::RenewalFailed(e) => {
            return Err(Failure::Unauthorized(format!(
                "the site refused the token and renewing it failed: {}",
                servio_client::error_chain(&e)
            )));
        }
        retried => sent.result.map_err(|e| failure(e, matches!(retried, Retried::Renewed)))?,
    };
    serde_json::from_slice(&body).map_err(|e| Failure::NotJson(format!("{e}: {}", servio_client::call::excerpt(&body))))
}

fn failure(error: CallError, refreshed: bool) -> Failure {
    match error {
        CallError::Failed { status: 401, .. } if refreshed => Failure::Unauthorized(
            "the site refused the credential even after refreshing it: connect the site again".into(),
        ),
        CallError::Failed { status: 401, .. } => Failure::Unauthorized(
            "the site refused the stored credential: set a new token (or connect again) in the vault".into(),
        ),
        CallError::Failed { status, body, .. } => Failure::SiteError { status, body },
        CallError::Request(error) => Failure::SiteUnreachable(error.to_string()),
        CallError::NotJson(detail) => Failure::NotJson(detail),
        CallError::InvalidArguments(problems) => Failure::InvalidArguments(problems),
        CallError::BadSchema(reason) => Failure::UnusableSchema(reason),
        other => Failure::Internal(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a tool whose schema cannot be compiled answered "the platform failed to make
    /// the call; try again" (500), which no retry could mend.
    #[test]
    fn an_unusable_schema_is_the_sites_mistake_with_its_reason() {
        let failure = failure(CallError::BadSchema("`$ref` \"https://x.example/s.json\" points outside".into()), false);
        assert_eq!(failure.status(), "unusable_schema");
        let said = failure.to_string();
        assert!(said.contains("points outside") && !said.contains("try again"), "{said}");
    }
}
