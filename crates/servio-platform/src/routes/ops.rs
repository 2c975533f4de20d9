//! What operators and orchestrators ask, without signing in: `/healthz` (the process answers:
//! a liveness probe) and `/readyz` (the database answers, this binary's migrations are applied
//! and the process is not stopping: a readiness probe). `/metrics` is not here: it tells
//! outcomes (sign-ins, gateway calls) that are nobody's business on the public listener, so
//! it is served only on `--metrics-addr` (`crate::metrics::router`).
//!
//! The probes say why they fail in words, never with the database's own error (which may name
//! hosts and users); that goes to the log.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;

/// How long readiness waits for the database before it says no.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The probes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(healthz)).routes(routes!(readyz))
}

/// A probe's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Probe {
    /// `ok`, or `unavailable`.
    status: &'static str,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

impl Probe {
    fn ok() -> Response {
        quiet(Json(Probe { status: "ok", reason: None }).into_response())
    }

    fn unavailable(reason: impl Into<String>) -> Response {
        let body = Probe { status: "unavailable", reason: Some(reason.into()) };
        quiet((StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response())
    }
}

/// Marks a probe's answer, which the request log keeps at `debug`.
fn quiet(mut response: Response) -> Response {
    response.extensions_mut().insert(crate::metrics::Quiet);
    response
}

/// The process answers (liveness: restart it when this fails)
#[utoipa::path(get, path = "/healthz", security(()), responses((status = 200, description = "Alive", body = Probe)))]
async fn healthz() -> Response {
    Probe::ok()
}

/// The database answers, every migration this binary knows is applied, and the process is not stopping (readiness: send it traffic while this succeeds)
#[utoipa::path(get, path = "/readyz", security(()), responses(
    (status = 200, description = "Ready", body = Probe),
    (status = 503, description = "Not ready, and why", body = Probe),
))]
async fn readyz(State(state): State<AppState>) -> Response {
    if state.stopping.is_stopping() {
        return Probe::unavailable("the process is stopping");
    }
    match tokio::time::timeout(READY_TIMEOUT, state.store.readiness()).await {
        Ok(Ok(servio_store::Readiness::Ready)) => Probe::ok(),
        Ok(Ok(servio_store::Readiness::Behind { applied, known })) => {
            Probe::unavailable(format!("the database has migrations up to {applied}; this binary needs {known}"))
        }
        Ok(Err(error)) => {
            tracing::warn!(error = %servio_client::error_chain(&error), "readiness: the database failed");
            Probe::unavailable("the database does not answer")
        }
        Err(_) => Probe::unavailable(format!("the database did not answer within {}s", READY_TIMEOUT.as_secs())),
    }
}
