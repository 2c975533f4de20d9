//! The "test your manifest" page: the form, and the report under it.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::AppState;
use crate::auth::{PageForm, PageUser};
use crate::domain::check::{self as domain, CheckForm, Checked};
use crate::error::ApiError;
use crate::shared::today::Today;
use crate::web::{Layout, render, zones};

/// The page's routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/check", get(form_page).post(check))
}

#[derive(Template)]
#[template(path = "check.html")]
struct CheckPage {
    layout: Layout,
    form: CheckForm,
    zones: &'static [String],
    error: Option<String>,
    checked: Option<Checked>,
}

fn page(user: &PageUser, form: CheckForm, error: Option<String>, checked: Option<Checked>) -> Response {
    render(&CheckPage { layout: Layout::of(Some(user)), form, zones: zones(), error, checked })
}

async fn form_page(user: PageUser) -> Result<Response, ApiError> {
    let today = Today::of(&user.user)?;
    let form =
        CheckForm { date: today.date.to_string(), time_zone: user.user.time_zone.clone(), ..CheckForm::default() };
    Ok(page(&user, form, None, None))
}

async fn check(State(state): State<AppState>, posted: PageForm<CheckForm>) -> Response {
    let PageForm { user, form } = posted;
    match domain::check_manifest(&state, user.user.id, &form).await {
        Ok(checked) => page(&user, form, None, Some(checked)),
        Err(ApiError::BadRequest(message)) => {
            let mut response = page(&user, form, Some(message), None);
            *response.status_mut() = StatusCode::BAD_REQUEST;
            response
        }
        // Too many checks by the user, or fetches of the site: said on the page, with its wait.
        Err(error @ (ApiError::TooManyRequests { .. } | ApiError::TooSoon { .. })) => {
            let mut response = page(&user, form, Some(error.to_string()), None);
            *response.status_mut() = error.status();
            error.with_retry_after(response)
        }
        Err(error) => error.into_response(),
    }
}
