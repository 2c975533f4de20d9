//! The vault as pages: the list with the "add a site" form, a site's page (report, tools,
//! brief, credential, versions, changes waiting for approval) and its actions, and "Connect"
//! (OAuth with PKCE through the platform's callback).

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use servio_manifest::Diagnostic;

use crate::AppState;
use crate::auth::{PageForm, PageUser};
use crate::domain::vault::{self, SiteSummary, SiteView};
use crate::error::ApiError;
use crate::params::{Id, Params};
use crate::shared::today::Today;
use crate::web::cards::{last_error, status_line};
use crate::web::{Layout, NoFields, render, table, timestamp};

/// The vault pages.
pub fn router() -> Router<AppState> {
    table([
        ("/vault", get(vault_page).post(add)),
        ("/vault/{id}", get(site_page)),
        // Approve, refresh, collect, remove.
        ("/vault/{id}/{action}", post(act)),
        ("/vault/{id}/credential", post(credential)),
        ("/vault/{id}/backfill", post(backfill)),
        // A POST with the CSRF token: a Connect started by a cross-site link (a GET) would
        // have started one for a site the user never asked to connect. GET answers 405.
        ("/vault/{id}/connect", post(connect)),
        ("/oauth/callback", get(oauth_callback)),
    ])
}

#[derive(Template)]
#[template(path = "vault.html")]
struct VaultPage {
    layout: Layout,
    error: Option<String>,
    report: Option<Vec<String>>,
    notice: Option<&'static str>,
    sites: Vec<SiteSummary>,
}

async fn vault_view(
    state: &AppState,
    user: &PageUser,
    error: Option<String>,
    report: Option<Vec<String>>,
) -> Result<Response, ApiError> {
    let sites = vault::list(state, user.user.id).await?.sites;
    let page = VaultPage { layout: Layout::of(Some(user)), error, report, notice: None, sites };
    Ok(render(&page))
}

#[derive(Deserialize)]
struct VaultQuery {
    removed: Option<u8>,
}

async fn vault_page(
    State(state): State<AppState>,
    user: PageUser,
    Query(query): Query<VaultQuery>,
) -> Result<Response, ApiError> {
    let sites = vault::list(&state, user.user.id).await?.sites;
    let notice = query.removed.map(|_| "The site was removed from your vault, with its credential and values.");
    let page = VaultPage { layout: Layout::of(Some(&user)), error: None, report: None, notice, sites };
    Ok(render(&page))
}

#[derive(Deserialize)]
struct AddForm {
    url: String,
    #[serde(default)]
    token: String,
}

/// Lines of a refused manifest's report errors, for people.
fn report_lines(report: &serde_json::Value) -> Vec<String> {
    report["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    format!(
                        "{}:{} {} {} (at {})",
                        e["line"],
                        e["column"],
                        e["code"].as_str().unwrap_or_default(),
                        e["message"].as_str().unwrap_or_default(),
                        e["pointer"].as_str().unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn add(State(state): State<AppState>, posted: PageForm<AddForm>) -> Result<Response, ApiError> {
    let PageForm { user, form } = posted;
    let token = Some(form.token.as_str()).filter(|t| !t.trim().is_empty());
    match vault::add_site(&state, user.user.id, &form.url, token).await {
        Ok(site) => Ok(Redirect::to(&format!("/vault/{}", site.id)).into_response()),
        // The refusal's body is the API's: its message, and the report of an invalid manifest.
        Err(ApiError::Unprocessable(body)) => {
            let message = body["error"].as_str().unwrap_or("the site could not be added").to_owned();
            let report = body.get("report").map(report_lines);
            vault_view(&state, &user, Some(message), report).await
        }
        Err(error) => vault_view(&state, &user, Some(error.to_string()), None).await,
    }
}

struct MetricRow {
    key: String,
    tool: String,
    granularity: &'static str,
    unit: String,
}

struct VersionRow {
    id: i64,
    fetched: String,
    changes: String,
    marks: &'static str,
}

/// The changes waiting for approval, as the site page shows them.
struct ApprovalCard {
    /// The id of the version the buttons name.
    version_id: i64,
    /// Whether the user kept the approved version against it.
    kept: bool,
    tools: Vec<vault::ToolChangeView>,
    endpoints: Vec<String>,
    brief_changed: bool,
    /// Name, version number, description.
    other: Vec<String>,
    /// Where the changes hold characters a person does not see, and what they are.
    hidden_text: Vec<String>,
}

/// The site's collection: its status in words, its last error, how many jobs are still to do
/// (a backfill's or a new site's first collection: the page then refreshes itself), and what the
/// last action did.
struct Collection {
    has_brief: bool,
    status: String,
    last_error: Option<String>,
    pending: i64,
    notice: Option<&'static str>,
}

#[derive(Template)]
#[template(path = "site.html")]
struct SitePage {
    layout: Layout,
    site: SiteView,
    collection: Collection,
    name: String,
    approval: Option<ApprovalCard>,
    errors: Vec<String>,
    warnings: Vec<String>,
    brief_status: String,
    brief_errors: Vec<String>,
    metrics: Vec<MetricRow>,
    versions: Vec<VersionRow>,
}

fn diagnostics(list: &[Diagnostic]) -> Vec<String> {
    list.iter()
        .map(|d| format!("{} {} (line {}, at {})", d.code.as_str(), d.message, d.line, d.pointer.as_str()))
        .collect()
}

impl SitePage {
    fn new(user: &PageUser, mut site: SiteView, versions: Vec<vault::VersionView>, collection: Collection) -> SitePage {
        let checked = site.report.checked.clone();
        let report = &checked.report;
        let metrics = report.brief.iter().flat_map(|brief| &brief.metrics).map(|m| MetricRow {
            key: m.key.clone(),
            tool: m.tool.clone(),
            granularity: m.granularity.as_str(),
            unit: m.unit.clone().unwrap_or_default(),
        });
        let approval = match site.pending.take() {
            Some(pending) if pending.needs_approval => pending.version_id.map(|version_id| ApprovalCard {
                version_id,
                kept: pending.kept,
                other: pending.other,
                hidden_text: pending.hidden_text,
                tools: pending.tools,
                endpoints: pending.endpoints,
                brief_changed: pending.brief_changed,
            }),
            _ => None,
        };
        SitePage {
            layout: Layout::of(Some(user)),
            name: site.name.clone().unwrap_or_default(),
            approval,
            errors: diagnostics(&report.errors),
            warnings: diagnostics(&report.warnings),
            brief_status: format!("Brief: {}", report.brief_status.as_str()),
            brief_errors: vault::BriefError::of(report).iter().map(vault::BriefError::line).collect(),
            metrics: metrics.collect(),
            collection,
            versions: versions
                .into_iter()
                .map(|v| VersionRow {
                    id: v.id,
                    fetched: timestamp(v.fetched_at),
                    changes: v.changes.join("; "),
                    marks: match (v.current, v.approved) {
                        (true, true) => "current, approved",
                        (true, false) => "current",
                        (false, true) => "approved",
                        (false, false) => "",
                    },
                })
                .collect(),
            site,
        }
    }
}

/// What the site page says of the action just done (`?done=`): a fixed message, so a link
/// cannot put words on the page.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Done {
    Collected,
    Backfill,
    NothingToBackfill,
    Approved,
    Kept,
    Refreshed,
    Token,
}

impl Done {
    fn message(self) -> &'static str {
        match self {
            Done::Collected => "Collected what was due: the status below says when, and any error.",
            Done::Backfill => "Backfill queued: the periods are collected in the background.",
            Done::NothingToBackfill => "Nothing to backfill: every period in that range is collected or queued.",
            Done::Approved => "Changes approved: the new version acts for you from now on.",
            Done::Kept => "You keep the approved version; these changes are not offered again until the site changes.",
            Done::Refreshed => "Manifest fetched again.",
            Done::Token => "Token saved.",
        }
    }
}

#[derive(Deserialize)]
struct SiteQuery {
    done: Option<Done>,
}

/// How many attempts the site page reads for its status.
const ATTEMPTS_READ: i64 = 50;

async fn site_page(
    State(state): State<AppState>,
    user: PageUser,
    Id(id): Id,
    Query(query): Query<SiteQuery>,
) -> Result<Response, ApiError> {
    let view = vault::view(&state, user.user.id, id).await?;
    let versions = vault::versions(&state, user.user.id, id).await.map(|list| list.versions).unwrap_or_default();
    let today = Today::of(&user.user)?;
    let tried = state.store.attempts(user.user.id, id, ATTEMPTS_READ).await?;
    let brief = view.report.report().brief.as_ref();
    let granularities = brief.iter().flat_map(|b| &b.metrics).map(|m| m.granularity);
    let collection = Collection {
        has_brief: brief.is_some(),
        status: status_line(&tried, granularities, &today),
        last_error: last_error(&tried, &today),
        pending: state.store.pending_jobs(user.user.id, id).await?,
        notice: query.done.map(Done::message),
    };
    Ok(render(&SitePage::new(&user, view, versions, collection)))
}

fn back_to_site(id: i64, done: &str) -> Response {
    Redirect::to(&format!("/vault/{id}?done={done}")).into_response()
}

/// A button of the site page that acts on the site, then shows it again (or the vault, after
/// a removal).
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum SiteAction {
    /// Approve the manifest's pending changes (the version the form names).
    Approve,
    /// Keep the approved version against the one the form names.
    Keep,
    /// Fetch the manifest again now.
    Refresh,
    /// Collect the due periods now.
    Collect,
    /// Take the site out of the vault, with its credential and values.
    Remove,
}

/// A site action's form: approving and keeping name the version the page showed, by its id
/// (the form's field `version`).
#[derive(Deserialize)]
struct ActionForm {
    #[serde(default, rename = "version")]
    version_id: Option<String>,
}

impl ActionForm {
    /// The id of the version the form names, if it names one.
    fn version_id(&self) -> Option<i64> {
        self.version_id.as_deref().and_then(|v| v.trim().parse().ok())
    }
}

async fn act(
    State(state): State<AppState>,
    Params(Path((id, action))): Params<Path<(i64, SiteAction)>>,
    posted: PageForm<ActionForm>,
) -> Result<Response, ApiError> {
    let user = &posted.user.user;
    match action {
        SiteAction::Approve | SiteAction::Keep => {
            let Some(version_id) = posted.form.version_id() else {
                // Another user's site is "not found" whatever the form says.
                vault::entry(&state, user.id, id).await?;
                let reload = "the form names no version to approve: reload the site's page and try again";
                return Err(ApiError::BadRequest(reload.into()));
            };
            let (verdict, done) = match action {
                SiteAction::Approve => (vault::Verdict::Approve, "approved"),
                _ => (vault::Verdict::Keep, "kept"),
            };
            vault::decide(&state, user.id, id, version_id, verdict).await?;
            Ok(back_to_site(id, done))
        }
        SiteAction::Refresh => {
            vault::refresh(&state, user.id, id).await?;
            Ok(back_to_site(id, "refreshed"))
        }
        SiteAction::Collect => {
            crate::domain::dashboard::collect_now(&state, user, id).await?;
            Ok(back_to_site(id, "collected"))
        }
        SiteAction::Remove => {
            vault::remove(&state, user.id, id).await?;
            Ok(Redirect::to("/vault?removed=1").into_response())
        }
    }
}

#[derive(Deserialize)]
struct BackfillForm {
    days: String,
}

/// "Backfill the last N days": the N days before today in the user's zone, queued as jobs.
async fn backfill(
    State(state): State<AppState>,
    Id(id): Id,
    posted: PageForm<BackfillForm>,
) -> Result<Response, ApiError> {
    let user = &posted.user.user;
    let days: i64 = match posted.form.days.trim().parse() {
        Ok(days @ 1..=400) => days,
        _ => return Err(ApiError::BadRequest("the number of days must be a whole number from 1 to 400".into())),
    };
    let today = Today::of(user)?.date;
    let from = today.checked_sub(jiff::ToSpan::days(days)).map_err(ApiError::internal)?;
    use crate::domain::dashboard::Backfill;
    use crate::shared::dates::Range;
    let range = Range { from: from.to_string(), to: today.to_string() };
    let queued = Backfill { state: &state, user, id, range: &range }.queue().await?;
    Ok(back_to_site(id, if queued.queued == 0 { "nothing_to_backfill" } else { "backfill" }))
}

async fn credential(
    State(state): State<AppState>,
    Id(id): Id,
    posted: PageForm<vault::BearerToken>,
) -> Result<Response, ApiError> {
    vault::store_token(&state, posted.user.user.id, id, &posted.form.token).await?;
    Ok(back_to_site(id, "token"))
}

/// Starts "Connect": a fresh PKCE start for this user and site, then off to the site.
async fn connect(State(state): State<AppState>, Id(id): Id, posted: PageForm<NoFields>) -> Result<Redirect, ApiError> {
    let user = posted.user;
    let entry = vault::entry(&state, user.user.id, id).await?;
    // The approved manifest names the endpoints: a new `authorization_url` or `token_url`
    // waits for the user's approval like any other change of endpoint.
    let acting = state.collector.acting(&entry, servio_core::manifests::Wait::Bounded).await?;
    let site = match acting
        .as_ref()
        .and_then(|m| crate::domain::connect::oauth_site(&state.oauth, &entry.site.origin, &m.manifest))
    {
        Some(site) => site.map_err(ApiError::internal)?,
        None => return Err(ApiError::BadRequest("this site uses bearer tokens: paste one instead".into())),
    };
    let to = crate::domain::connect::begin(&state, user.user.id, id, site).await.map_err(ApiError::internal)?;
    Ok(Redirect::to(to.as_str()))
}

#[derive(Deserialize)]
struct CallbackQuery {
    #[serde(default)]
    state: String,
}

/// The end of "Connect": the started Connect must be this user's; the tokens are sealed as the site's
/// credential.
async fn oauth_callback(
    State(state): State<AppState>,
    user: PageUser,
    Query(query): Query<CallbackQuery>,
    uri: axum::http::Uri,
) -> Result<Redirect, ApiError> {
    let Some(started) =
        crate::domain::connect::take(&state, user.user.id, &query.state).await.map_err(ApiError::internal)?
    else {
        return Err(ApiError::BadRequest(
            "unknown, expired or used sign-in started: start again from the site's page".into(),
        ));
    };
    let callback = servio_client::oauth::Callback::from_query(uri.query().unwrap_or_default());
    let tokens = servio_client::oauth::finish(&state.client, &started.site, started.authorization, &callback)
        .await
        .map_err(|error| ApiError::BadRequest(error.to_string()))?;
    let credential = servio_core::credentials::Credential::OAuth(tokens);
    let stored = state.credentials().set_credential(user.user.id, started.site_id, &credential).await?;
    if !stored {
        return Err(ApiError::NotFound);
    }
    // A period refused for want of a working credential is collected again now (§8).
    crate::domain::vault::queue_first_collection(&state, user.user.id, started.site_id).await;
    Ok(Redirect::to(&format!("/vault/{}", started.site_id)))
}
