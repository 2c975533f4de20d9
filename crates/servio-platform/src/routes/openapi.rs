//! The OpenAPI 3.1 document of the JSON API at `/api/openapi.json`, generated from the same
//! registration as the router: each API route is registered with `utoipa_axum::routes!`, which
//! adds the handler to the router and its `#[utoipa::path]` (summary, parameters, request and
//! response bodies from the types the handler reads and answers) to the document at once.

use std::sync::LazyLock;

use axum::http::Method;
use axum::http::header;
use axum::response::IntoResponse;
use utoipa::openapi::header::Header;
use utoipa::openapi::path::{Operation, Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Required};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;

/// What the document says before the routes are added: its title and how to authenticate.
#[derive(OpenApi)]
#[openapi(info(title = "Servio platform API"), modifiers(&SecuritySchemes))]
struct Base;

/// The two ways to authenticate: the session cookie (with the CSRF header for changes) and a
/// personal API token.
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::auth::SESSION_COOKIE,
                "Changes also need the X-CSRF-Token header",
            ))),
        );
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some("A personal API token")).build(),
            ),
        );
    }
}

/// What every operation follows, said here once instead of in each `#[utoipa::path]`: a route
/// needs a signed-in user (session or token) unless it says `security(())`; a signed-in route
/// may answer `401`, and one that changes something `403` (the CSRF check); a path with `{id}`
/// or `{name}` has that parameter, and `{id}` may answer `404` (not there, not yours, or not a
/// 64-bit integer: [`crate::params::Params`]); a route that reads a JSON body may refuse it
/// (`400`, `413`, `415`: [`crate::json_body::JsonBody`]), and one with query parameters may
/// refuse them (`400`). A `429` or `503` refusal says when to try again (`Retry-After`).
struct Conventions;

impl Modify for Conventions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let anyone = SecurityRequirement::default();
        openapi.security = Some(vec![
            SecurityRequirement::new("session", Vec::<String>::new()),
            SecurityRequirement::new("token", Vec::<String>::new()),
        ]);
        for (path, item) in openapi.paths.paths.iter_mut() {
            let operations = [
                (Method::GET, &mut item.get),
                (Method::POST, &mut item.post),
                (Method::PUT, &mut item.put),
                (Method::DELETE, &mut item.delete),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation.as_mut() else { continue };
                let changes = method != Method::GET;
                let public = operation.security.as_ref().is_some_and(|list| list.iter().all(|r| *r == anyone));
                if !public {
                    refusal(operation, "401", "Not signed in");
                    let scope = crate::scopes::needed(&method, path).as_str();
                    let said = operation.description.take().unwrap_or_default();
                    operation.description = Some(format!(
                        "{said}\n\nAPI tokens: scope `{scope}` or wider (`read` < `ai` < `account`); a browser session \
                         may do everything."
                    ));
                    let forbidden = match changes {
                        true => {
                            "An API token whose scope does not reach this route, or a cookie-authenticated change \
                                 without its CSRF token"
                        }
                        false => "An API token whose scope does not reach this route",
                    };
                    refusal(operation, "403", forbidden);
                }
                if path.contains("{id}") {
                    let description = "The id of what the path names, as its list gives it";
                    parameter(operation, ("id", Type::Integer, None), description);
                    refusal(operation, "404", "Not there, not yours, or not an id");
                }
                if operation.request_body.is_some() {
                    refusal(operation, "400", "The body is not JSON, or not what this route takes");
                    refusal(operation, "413", &format!("The body is over {} bytes", crate::json_body::MAX_BODY));
                    refusal(operation, "415", "The body was sent as another type than JSON");
                }
                let in_query = |p: &RefOr<Parameter>| matches!(p, RefOr::T(p) if p.parameter_in == ParameterIn::Query);
                if operation.parameters.as_ref().is_some_and(|list| list.iter().any(in_query)) {
                    refusal(operation, "400", "A query parameter is not what this route takes");
                }
                if checks_manifests(path, changes) {
                    refusal(
                        operation,
                        "503",
                        "Every manifest check was taken for longer than a request waits (--check-wait): \
                         try again after Retry-After",
                    );
                }
                if path.contains("{name}") {
                    // A NUL is refused (`400`) before the catalogue is looked at.
                    let description = "The tool's prefixed name, as `GET /api/tools` lists it (without NUL)";
                    parameter(operation, ("name", Type::String, Some(r"^[^\x00]+$")), description);
                }
                retry_after(operation);
            }
        }
    }
}

/// Says `Retry-After` on each refusal in the API's error body that passes with time (`429`,
/// `503`): [`crate::error::ApiError::retry_after`] and the gateway's refusals always send it.
fn retry_after(operation: &mut Operation) {
    let is_error_body = |response: &Response| {
        response.content.values().any(|content| {
            matches!(content, RefOr::T(content) if content.schema == Some(RefOr::Ref(Ref::from_schema_name("ErrorBody"))))
        })
    };
    for (status, response) in operation.responses.responses.iter_mut() {
        let RefOr::T(response) = response else { continue };
        if !matches!(status.as_str(), "429" | "503") || !is_error_body(response) {
            continue;
        }
        let schema = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1));
        let mut header = Header::new(schema);
        header.description = Some("Seconds to wait before trying again".into());
        response.headers.insert("Retry-After".into(), RefOr::T(header));
    }
}

/// The routes whose answer needs a manifest checked or arguments validated, which wait a
/// bounded time for a free check and are answered `503` past it (`ChecksBusy`); `changes` is
/// whether the route is one of its path's changing methods.
fn checks_manifests(path: &str, changes: bool) -> bool {
    const READS: &[&str] =
        &["/api/dashboard", "/api/tools", "/api/vault", "/api/vault/{id}", "/api/directory/claims/{id}/health"];
    const CHANGES: &[&str] = &[
        "/api/vault",
        "/api/vault/{id}/approve",
        "/api/vault/{id}/keep",
        "/api/vault/{id}/refresh",
        "/api/vault/{id}/backfill",
        "/api/vault/{id}/collect",
        "/api/tools/{name}/call",
        "/api/directory/claims/{id}/verify",
    ];
    if changes { CHANGES.contains(&path) } else { READS.contains(&path) }
}

/// Adds a refusal with the API's error body, unless the route documents that status itself.
fn refusal(operation: &mut Operation, status: &str, description: &str) {
    let body = ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build();
    let response = ResponseBuilder::new().description(description).content("application/json", body).build();
    operation.responses.responses.entry(status.to_owned()).or_insert(RefOr::T(response));
}

/// Adds a required path parameter: its name, type and pattern.
fn parameter(operation: &mut Operation, (name, kind, pattern): (&str, Type, Option<&str>), description: &str) {
    // An id is read as an `i64`; anything else names nothing (`404`).
    let format = (kind == Type::Integer).then_some(SchemaFormat::KnownFormat(KnownFormat::Int64));
    let parameter = ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .description(Some(description))
        .schema(Some(ObjectBuilder::new().schema_type(kind).format(format).pattern(pattern)))
        .build();
    operation.parameters.get_or_insert_with(Vec::new).push(RefOr::T(parameter));
}

/// The document every feature's routes are added to.
pub(crate) fn base() -> utoipa::openapi::OpenApi {
    Base::openapi()
}

/// The route of the document itself.
pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(openapi_json))
}

/// The OpenAPI document of every route of [`crate::routes::api`], made once.
pub fn document() -> &'static utoipa::openapi::OpenApi {
    static DOCUMENT: LazyLock<utoipa::openapi::OpenApi> = LazyLock::new(|| {
        let mut document = super::api().split_for_parts().1;
        Conventions.modify(&mut document);
        document
    });
    &DOCUMENT
}

/// This document
#[utoipa::path(get, path = "/api/openapi.json", security(()), responses((status = 200, description = "The OpenAPI 3.1 document of this API", content_type = "application/json")))]
async fn openapi_json() -> impl IntoResponse {
    static TEXT: LazyLock<String> = LazyLock::new(|| document().to_json().unwrap_or_default());
    ([(header::CONTENT_TYPE, "application/json")], TEXT.as_str())
}
