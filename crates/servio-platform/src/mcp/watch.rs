//! What MCP clients watch: the metrics a session of the revisions before 2026-07-28 subscribed
//! to (`resources/subscribe`), and those a 2026-07-28 `subscriptions/listen` stream's filter
//! names (`resourceSubscriptions`), each told `notifications/resources/updated` when its
//! user's values change.
//!
//! What is watched is kept for as long as the session or stream lives, so it is bounded, and
//! every bound is checked before anything is kept, each refused with an error naming it:
//! - an address is a metric's canonical address (`servio://metrics/{site}/{metric}`, as
//!   `resources/list` gives it) of a metric the user has, and at most [`WatchLimits::address`]
//!   bytes (an address once padded to 2 MiB was kept as it came, 11 MiB a subscription);
//! - a session or stream watches at most [`MAX_SUBSCRIPTIONS`] of them, in at most
//!   [`WatchLimits::per_session`] bytes ([`address_weight`] each);
//! - a user's sessions and streams together hold at most [`WatchLimits::per_user`] bytes, and
//!   the process's at most [`WatchLimits::per_process`] ([`Watching`]).
//!
//! A session's `resources/subscribe` of an address that is not canonical is refused with the
//! canonical one; a listen stream's filter is read before the SDK sees it ([`bound_listen`]):
//! its addresses are replaced by the canonical addresses of the user's metrics they name, the
//! others left out (so the acknowledged filter says what is watched), and its bytes are counted
//! for as long as the request lives.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::ErrorData as McpError;
use serde_json::{Value, json};
use servio_store::User;

use crate::AppState;
use crate::domain::figures::{Ask, FiguresError, MetricRef};

/// How many resources one session or listen stream may watch: every metric a user could have.
pub(super) const MAX_SUBSCRIPTIONS: usize = 1000;

/// What holding one address costs besides its bytes: the `String`, its place in a set or list.
const ADDRESS_OVERHEAD: usize = 64;

/// The bytes of what is watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WatchLimits {
    /// One address.
    pub address: usize,
    /// What one session or listen stream watches ([`address_weight`] each).
    pub per_session: usize,
    /// What one user's sessions and streams watch together, in this process.
    pub per_user: usize,
    /// What every session and stream of this process watches together.
    pub per_process: usize,
}

impl Default for WatchLimits {
    /// An address of 512 bytes holds any host (253 bytes), a port and a metric key of 200
    /// bytes; canonical addresses are some 60. 128 KiB a session or stream is
    /// [`MAX_SUBSCRIPTIONS`] of those, held once by a session and twice by a listen stream (the
    /// SDK keeps the filter asked for and the one it accepted). 2 MiB a user is 16 such full
    /// sessions (a user may have 100 sessions and as many streams), and 64 MiB a process 32
    /// such users: what watching costs stays a small part of a process's memory, and no user
    /// can take the process's share.
    fn default() -> WatchLimits {
        WatchLimits { address: 512, per_session: 128 << 10, per_user: 2 << 20, per_process: 64 << 20 }
    }
}

/// What holding `address` costs.
pub(super) fn address_weight(address: &str) -> usize {
    address.len() + ADDRESS_OVERHEAD
}

/// The bytes every session and stream of this process watches, by user.
#[derive(Default)]
pub(super) struct Watching {
    limits: WatchLimits,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    total: usize,
    by_user: HashMap<i64, usize>,
}

/// Bytes one session or stream of a user holds in [`Watching`], given back when dropped.
pub(super) struct Share {
    watching: Arc<Watching>,
    user_id: i64,
    bytes: usize,
}

impl Watching {
    /// A count of what is watched, within `limits`.
    pub(super) fn new(limits: WatchLimits) -> Watching {
        Watching { limits, held: Mutex::default() }
    }

    /// The bounds it keeps.
    pub(super) fn limits(&self) -> WatchLimits {
        self.limits
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// An empty share of `user_id`'s, to grow.
    pub(super) fn share(self: &Arc<Self>, user_id: i64) -> Share {
        Share { watching: self.clone(), user_id, bytes: 0 }
    }
}

impl Share {
    /// Takes `bytes` more for this session or stream, unless that passes its bound, its user's
    /// or the process's: then nothing is taken, and the error names the bound.
    pub(super) fn grow(&mut self, bytes: usize) -> Result<(), McpError> {
        let limits = self.watching.limits;
        if self.bytes + bytes > limits.per_session {
            return Err(McpError::invalid_request(
                format!(
                    "one MCP session or listen stream watches at most {} bytes of addresses ({} each besides its \
                     length): unsubscribe from some first",
                    limits.per_session, ADDRESS_OVERHEAD
                ),
                Some(json!({ "bound": "per_session", "bytes": limits.per_session })),
            ));
        }
        let mut held = self.watching.held();
        let user = held.by_user.get(&self.user_id).copied().unwrap_or(0);
        if user + bytes > limits.per_user {
            return Err(McpError::invalid_request(
                format!(
                    "your MCP sessions and listen streams watch at most {} bytes of addresses together: close some \
                     or unsubscribe first",
                    limits.per_user
                ),
                Some(json!({ "bound": "per_user", "bytes": limits.per_user })),
            ));
        }
        if held.total + bytes > limits.per_process {
            return Err(McpError::invalid_request(
                format!(
                    "the platform's MCP sessions and listen streams watch at most {} bytes of addresses together, and \
                     have them: try again later",
                    limits.per_process
                ),
                Some(json!({ "bound": "per_process", "bytes": limits.per_process })),
            ));
        }
        held.total += bytes;
        *held.by_user.entry(self.user_id).or_default() += bytes;
        self.bytes += bytes;
        Ok(())
    }

    /// Gives back `bytes` of this share (an address unsubscribed).
    pub(super) fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        let mut held = self.watching.held();
        held.total -= bytes;
        if let Some(user) = held.by_user.get_mut(&self.user_id) {
            *user -= bytes;
            if *user == 0 {
                held.by_user.remove(&self.user_id);
            }
        }
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.shrink(self.bytes);
    }
}

/// The canonical address of the metric `uri` names among the user's `metrics`, refused with
/// MCP's errors: an address over `limits.address` bytes (invalid params, naming the bound),
/// not an address or no metric of the user (resource not found, as a read answers it).
pub(super) fn canonical(metrics: &[MetricRef], uri: &str, limits: WatchLimits) -> Result<String, McpError> {
    short_enough(uri, limits)?;
    let found =
        Ask::from_uri(uri).and_then(|ask| crate::domain::figures::find(metrics, &ask)).map_err(
            |error| match error {
                FiguresError::Invalid(message) => McpError::invalid_params(message, None),
                FiguresError::NotFound(message) => McpError::resource_not_found(message, Some(json!({ "uri": uri }))),
                FiguresError::Api(error) => {
                    tracing::error!(error = %servio_client::error_chain(&error), "reading a metric to watch failed");
                    McpError::internal_error("the metrics could not be read", None)
                }
            },
        )?;
    let canonical = found.uri();
    short_enough(&canonical, limits)?;
    Ok(canonical)
}

/// Refuses an address over [`WatchLimits::address`] bytes (invalid params, naming the bound).
pub(super) fn short_enough(uri: &str, limits: WatchLimits) -> Result<(), McpError> {
    let bound = limits.address;
    if uri.len() <= bound {
        return Ok(());
    }
    let message = format!("a resource address is at most {bound} bytes to be watched; this one is {} bytes", uri.len());
    Err(McpError::invalid_params(message, Some(json!({ "bound": "address", "bytes": bound }))))
}

/// What one session of the revisions before 2026-07-28 subscribed to.
pub(super) struct Subscribed {
    addresses: BTreeSet<String>,
    /// Its bytes in the process's count, once it subscribed to something.
    share: Option<Share>,
}

impl Subscribed {
    pub(super) fn new() -> Subscribed {
        Subscribed { addresses: BTreeSet::new(), share: None }
    }

    /// Subscribes to `address` (canonical) for `user_id`, unless that passes a bound.
    pub(super) fn add(&mut self, watching: &Arc<Watching>, user_id: i64, address: String) -> Result<(), McpError> {
        if self.addresses.contains(&address) {
            return Ok(());
        }
        if self.addresses.len() >= MAX_SUBSCRIPTIONS {
            let message = format!("one session watches at most {MAX_SUBSCRIPTIONS} resources: unsubscribe first");
            return Err(McpError::invalid_request(message, Some(json!({ "bound": "subscriptions" }))));
        }
        let share = self.share.get_or_insert_with(|| watching.share(user_id));
        share.grow(address_weight(&address))?;
        self.addresses.insert(address);
        Ok(())
    }

    /// Unsubscribes from `address`, as sent (only canonical addresses are held).
    pub(super) fn remove(&mut self, address: &str) {
        if self.addresses.remove(address)
            && let Some(share) = &mut self.share
        {
            share.shrink(address_weight(address));
        }
    }

    /// The addresses subscribed to.
    pub(super) fn addresses(&self) -> impl Iterator<Item = &String> {
        self.addresses.iter()
    }
}

/// What a listen stream's filter holds in the process's count, for as long as its request
/// lives (the SDK keeps the request's parts, with this, until the stream ends).
#[derive(Clone)]
pub(super) struct ListenShare(#[allow(dead_code, reason = "held for its drop")] Arc<Share>);

/// The state of [`bound_listen`].
#[derive(Clone)]
pub(super) struct ListenBounds {
    pub(super) state: AppState,
    pub(super) watching: Arc<Watching>,
}

/// Reads a `subscriptions/listen` request (2026-07-28: a `POST` without a session) before the
/// SDK does: its filter's addresses are bounded ([`MAX_SUBSCRIPTIONS`], each at most
/// [`WatchLimits::address`] bytes), replaced by the canonical addresses of the user's metrics
/// they name (the others left out), and counted against the stream's, the user's and the
/// process's bounds; a filter past one is answered with a JSON-RPC error naming it, and the SDK
/// never sees it. Every other request passes as it came.
pub(super) async fn bound_listen(State(bounds): State<ListenBounds>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST || request.headers().contains_key("mcp-session-id") {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    // The body's size is bounded by an outer layer.
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return next.run(Request::from_parts(parts, Body::empty())).await;
    };
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    let method = serde_json::from_slice::<Message>(&bytes).ok().and_then(|message| message.method);
    if method.as_deref() != Some("subscriptions/listen") {
        return next.run(Request::from_parts(parts, Body::from(bytes))).await;
    }
    let Some(user) = parts.extensions.get::<User>().cloned() else {
        return next.run(Request::from_parts(parts, Body::from(bytes))).await;
    };
    let Ok(mut message) = serde_json::from_slice::<Value>(&bytes) else {
        return next.run(Request::from_parts(parts, Body::from(bytes))).await;
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let asked = match message.pointer_mut("/params/notifications/resourceSubscriptions") {
        Some(Value::Array(asked)) => asked,
        // No resource is watched: nothing to count (the stream still needs its share).
        None => {
            parts.extensions.insert(ListenShare(Arc::new(bounds.watching.share(user.id))));
            return next.run(Request::from_parts(parts, Body::from(bytes))).await;
        }
        // Not a filter the SDK reads: it refuses the request.
        Some(_) => return next.run(Request::from_parts(parts, Body::from(bytes))).await,
    };
    match watched(&bounds, &user, asked).await {
        Ok((addresses, share)) => {
            *asked = addresses.into_iter().map(Value::String).collect();
            parts.extensions.insert(ListenShare(Arc::new(share)));
            parts.headers.remove(header::CONTENT_LENGTH);
            next.run(Request::from_parts(parts, Body::from(message.to_string()))).await
        }
        Err(error) => refused(id, &error),
    }
}

/// The canonical addresses `asked` names among `user`'s metrics, in the order asked and each
/// once, with their share of the process's count; or the bound they pass.
async fn watched(bounds: &ListenBounds, user: &User, asked: &[Value]) -> Result<(Vec<String>, Share), McpError> {
    let limits = bounds.watching.limits;
    if asked.len() > MAX_SUBSCRIPTIONS {
        let message =
            format!("a listen stream watches at most {MAX_SUBSCRIPTIONS} resources; this filter names {}", asked.len());
        return Err(McpError::invalid_params(message, Some(json!({ "bound": "subscriptions" }))));
    }
    // Every address's length first, before any is read.
    for uri in asked.iter().filter_map(Value::as_str) {
        short_enough(uri, limits)?;
    }
    let metrics = crate::domain::figures::metrics(&bounds.state, user).await.map_err(|error| {
        tracing::error!(user_id = user.id, error = %servio_client::error_chain(&error), "reading the metrics a listen stream watches failed");
        McpError::internal_error("the metrics could not be read", None)
    })?;
    let mut seen = BTreeSet::new();
    let mut addresses = Vec::new();
    for uri in asked.iter().filter_map(Value::as_str) {
        // An address the user cannot read is left out of the acknowledged filter.
        if let Ok(address) = canonical(&metrics, uri, limits)
            && seen.insert(address.clone())
        {
            addresses.push(address);
        }
    }
    // Held twice while the stream lives: the filter asked for and the one accepted.
    let bytes: usize = addresses.iter().map(|address| 2 * address_weight(address)).sum();
    let mut share = bounds.watching.share(user.id);
    share.grow(bytes)?;
    Ok((addresses, share))
}

/// The JSON-RPC error answering the request `id`.
fn refused(id: Value, error: &McpError) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": error });
    let mut response = body.to_string().into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every bound of [`Share::grow`] refuses before anything is taken, names itself, and what
    /// a dropped share held is free again.
    #[test]
    fn shares_are_bounded_per_session_user_and_process_and_given_back() {
        let limits = WatchLimits { address: 100, per_session: 1000, per_user: 1500, per_process: 2500 };
        let watching = Arc::new(Watching::new(limits));
        let bound = |error: McpError| error.data.unwrap()["bound"].as_str().unwrap().to_owned();

        let mut one = watching.share(1);
        one.grow(900).unwrap();
        assert_eq!(bound(one.grow(200).unwrap_err()), "per_session");
        let mut two = watching.share(1);
        two.grow(600).unwrap();
        assert_eq!(bound(two.grow(100).unwrap_err()), "per_user", "900 + 600 of 1,500");
        let mut others = watching.share(2);
        others.grow(1000).unwrap();
        let mut third = watching.share(3);
        assert_eq!(bound(third.grow(100).unwrap_err()), "per_process", "2,500 held");
        assert_eq!(watching.held().total, 2500, "nothing taken by a refusal");

        drop(one);
        third.grow(100).unwrap();
        two.shrink(600);
        drop(others);
        drop(third);
        let held = watching.held();
        assert_eq!((held.total, held.by_user.len()), (0, 0), "all given back");
    }
}
