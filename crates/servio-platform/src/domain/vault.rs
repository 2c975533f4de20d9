//! The vault, for the API and the pages alike: a user adds a site by URL
//! (discovered and validated, refused with the report when invalid), sees their sites with
//! their tools and report, gives each a credential (encrypted at rest, never shown again),
//! approves changes and removes sites. One user's vault is out of every other user's reach:
//! what is not yours is "not found".

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};
use servio_client::DiscoveryError;
use servio_core::manifests::{CheckedManifest, CheckedText, VersionError, Wait};
use servio_manifest::diff::{TextPart, ToolChange, words};
use servio_manifest::hidden;
use servio_manifest::report_json::to_json;
use servio_manifest::{Report, Site};
use servio_store::{Approval, SiteRecord, VaultEntry, Version};
use std::sync::Arc;
use utoipa::ToSchema;

use crate::approval::{Unapproved, Waiting, acting_manifest, still_offered};
use crate::error::ApiError;
use crate::shared::discovered::{EMPTY_URL, discover, fetched_manifest, stored_origin};
use crate::{AppState, now};
use servio_core::credentials::Credential as SiteCredential;

/// A site to add.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AddSite {
    /// The site's URL or host name (`https://` is assumed): not empty, without NUL.
    #[schema(min_length = 1, pattern = r"^[^\x00]*[^\s\x00][^\x00]*$")]
    pub url: String,
    /// A bearer token for the site, stored encrypted: as [`BearerToken::token`]; left out (or
    /// `null`) for a site that needs none.
    #[schema(min_length = 1, max_length = 8192, pattern = r"^[ -~]*[!-~][ -~]*$")]
    pub token: Option<String>,
}

/// A bearer token for a vault site.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = Credential)]
pub struct BearerToken {
    /// The token, as the site gave it: printable ASCII (what an `Authorization` header carries),
    /// not only spaces (surrounding ones are trimmed), at most 8 KiB.
    #[schema(min_length = 1, max_length = 8192, pattern = r"^[ -~]*[!-~][ -~]*$")]
    pub token: String,
}

/// A site in the list of the vault.
#[derive(Debug, Serialize, ToSchema)]
pub struct SiteSummary {
    /// The vault site's id.
    pub id: i64,
    /// The site's origin.
    pub origin: String,
    /// The manifest's name.
    pub name: Option<String>,
    /// How many tools AI clients are offered (the approved manifest's, less any the site removed).
    pub tools: usize,
    /// Why the last refresh failed, while the last valid manifest stays in use.
    pub stale_error: Option<String>,
    /// Whether changes of the site wait for the user's approval (and were not set aside with
    /// "keep the approved version").
    pub changes_waiting: bool,
    /// Whether those changes hold characters a person does not see (Unicode tag characters,
    /// bidirectional controls, zero-width characters): the site page shows what they are.
    pub hidden_text: bool,
    /// Whether the brief of the manifest acting for the user is `used`, `ignored` or `absent`.
    #[schema(value_type = String)]
    pub brief: &'static str,
    /// Why the brief is ignored (each error as `servio check` words it); empty otherwise.
    pub brief_errors: Vec<BriefError>,
}

/// One reason a brief is ignored, as `servio check` words it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BriefError {
    /// The rule's code (`servio explain CODE` documents it).
    pub code: String,
    /// Where, as a JSON Pointer into the manifest.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
    /// How to mend it, where the rule says.
    pub help: Option<String>,
}

impl From<&servio_manifest::Diagnostic> for BriefError {
    fn from(d: &servio_manifest::Diagnostic) -> BriefError {
        BriefError {
            code: d.code.as_str().to_owned(),
            pointer: d.pointer.as_str().to_owned(),
            message: d.message.clone(),
            help: d.help.clone(),
        }
    }
}

impl BriefError {
    /// The brief errors of `report`.
    pub fn of(report: &Report) -> Vec<BriefError> {
        report.brief_errors.iter().map(BriefError::from).collect()
    }

    /// The error in one line, for people: `B012 /brief/metrics/0/valuePath: message (help)`.
    pub fn line(&self) -> String {
        let at = if self.pointer.is_empty() { "(the whole manifest)" } else { self.pointer.as_str() };
        match &self.help {
            Some(help) => format!("{} at {at}: {} ({help})", self.code, self.message),
            None => format!("{} at {at}: {}", self.code, self.message),
        }
    }
}

/// The user's vault.
#[derive(Debug, Serialize, ToSchema)]
pub struct SiteList {
    /// In the order they were added.
    pub sites: Vec<SiteSummary>,
}

/// A tool of a site's manifest.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolView {
    /// The name in the manifest.
    pub name: String,
    /// The name AI clients see (§4).
    pub prefixed_name: Option<String>,
    /// What the tool does.
    pub description: String,
    /// The JSON Schema of its arguments.
    #[schema(value_type = Object)]
    pub input_schema: Value,
    /// Whether a change to it waits for approval (only for a site of the vault).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_back: Option<bool>,
}

/// A manifest's report, served as `servio check --format json` prints it.
pub struct ReportView {
    /// Where the manifest was read.
    pub source: String,
    /// The text as checked (once: the manifest cache keeps it).
    pub checked: Arc<CheckedText>,
}

impl ReportView {
    /// The report.
    pub fn report(&self) -> &Report {
        &self.checked.report
    }
}

impl Serialize for ReportView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        to_json(&self.source, self.report()).serialize(serializer)
    }
}

/// What waits for the user's approval.
#[derive(Debug, Serialize, ToSchema)]
pub struct PendingView {
    /// Whether anything does.
    pub needs_approval: bool,
    /// The id of the site's current version: the one to name when approving (or keeping the
    /// approved version against it). Absent when the site has no stored version yet. Served as
    /// `version`, as it always was (the site's [`SiteView::version`] is the manifest's declared
    /// version string, another thing).
    #[serde(rename = "version")]
    pub version_id: Option<i64>,
    /// Whether the user chose to keep their approved version against this one: nothing is
    /// offered again until the site changes again.
    pub kept: bool,
    /// What changed, for people.
    pub changes: Vec<String>,
    /// Tools whose description or schema changed: the approved ones stay in use.
    pub held_back_tools: Vec<String>,
    /// New tools: offered to nobody until approved.
    pub new_tools: Vec<String>,
    /// Changed endpoints and grants (`server.url`, OAuth endpoints and scopes, the auth type),
    /// as "what: before → after".
    pub endpoints: Vec<String>,
    /// Whether the brief changed (the metrics collected, or how).
    pub brief_changed: bool,
    /// The other changes (name, version number, description), as "what: before → after".
    pub other: Vec<String>,
    /// Where the changed text holds characters a person does not see, and what they spell or
    /// are, as "where: what" (tag characters decoded, the others by code point and name).
    pub hidden_text: Vec<String>,
    /// Each changed tool, with its description's word diff and its schema's changes by pointer.
    pub tools: Vec<ToolChangeView>,
}

/// How one tool changed.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolChangeView {
    /// The tool's name in the manifest.
    pub name: String,
    /// `added`, `removed`, `description` or `schema`.
    #[schema(value_type = String)]
    pub change: &'static str,
    /// For a changed description: the word diff, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub description_diff: Vec<TextPartView>,
    /// For a changed schema: each difference by JSON Pointer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schema_diff: Vec<SchemaChangeView>,
}

/// One part of a word diff.
#[derive(Debug, Serialize, ToSchema)]
pub struct TextPartView {
    /// `same`, `removed` or `added`.
    #[schema(value_type = String)]
    pub op: &'static str,
    /// The words.
    pub text: String,
}

/// One difference of a schema.
#[derive(Debug, Serialize, ToSchema)]
pub struct SchemaChangeView {
    /// Where, as a JSON Pointer into the schema.
    pub pointer: String,
    /// The value before, absent when there was none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub before: Option<Value>,
    /// The value after, absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub after: Option<Value>,
}

impl ToolChangeView {
    /// The view of `change`; a new tool shows its whole description and schema (from `latest`)
    /// as added, since that is what the user is asked to grant.
    fn of(change: &ToolChange, latest: Option<&servio_manifest::Manifest>) -> ToolChangeView {
        let mut view = ToolChangeView {
            name: change.tool().to_owned(),
            change: "added",
            description_diff: Vec::new(),
            schema_diff: Vec::new(),
        };
        match change {
            ToolChange::Added(name) => {
                if let Some(tool) = latest.and_then(|m| m.tool(name)) {
                    view.description_diff = vec![TextPartView { op: "added", text: tool.description.clone() }];
                    let whole = SchemaChangeView {
                        pointer: String::new(),
                        before: None,
                        after: Some(tool.input_schema.clone()),
                    };
                    view.schema_diff = vec![whole];
                }
            }
            ToolChange::Removed(_) => view.change = "removed",
            ToolChange::Description { before, after, .. } => {
                view.change = "description";
                view.description_diff = words(before, after).into_iter().map(TextPartView::of).collect();
            }
            ToolChange::Schema { changes, .. } => {
                view.change = "schema";
                view.schema_diff = changes
                    .iter()
                    .map(|c| SchemaChangeView {
                        pointer: c.pointer.clone(),
                        before: c.before.clone(),
                        after: c.after.clone(),
                    })
                    .collect();
            }
        }
        view
    }
}

/// A run of text as a page draws it: `hidden` runs describe characters a person would not see
/// (tag characters decoded to what they spell, the others named), shown marked in their place.
#[derive(Debug, PartialEq, Eq)]
pub struct ShownPiece {
    /// The text, or the description of what is hidden.
    pub text: String,
    /// Whether this describes hidden characters.
    pub hidden: bool,
}

impl ShownPiece {
    /// `text` in runs a page draws, hidden characters described where they are.
    pub fn all(text: &str) -> Vec<ShownPiece> {
        hidden::pieces(text)
            .into_iter()
            .map(|piece| match piece {
                hidden::Piece::Shown(text) => ShownPiece { text: text.to_owned(), hidden: false },
                hidden::Piece::Hidden(what) => ShownPiece { text: what, hidden: true },
            })
            .collect()
    }
}

impl ToolView {
    /// The description in runs a page draws.
    pub fn description_pieces(&self) -> Vec<ShownPiece> {
        ShownPiece::all(&self.description)
    }
}

impl SchemaChangeView {
    /// The value before, as compact JSON in runs a page draws.
    pub fn before_pieces(&self) -> Option<Vec<ShownPiece>> {
        self.before.as_ref().map(|value| ShownPiece::all(&value.to_string()))
    }

    /// The value after, as compact JSON in runs a page draws.
    pub fn after_pieces(&self) -> Option<Vec<ShownPiece>> {
        self.after.as_ref().map(|value| ShownPiece::all(&value.to_string()))
    }
}

impl TextPartView {
    /// The words in runs a page draws.
    pub fn pieces(&self) -> Vec<ShownPiece> {
        ShownPiece::all(&self.text)
    }

    fn of(part: TextPart) -> TextPartView {
        match part {
            TextPart::Same(text) => TextPartView { op: "same", text },
            TextPart::Removed(text) => TextPartView { op: "removed", text },
            TextPart::Added(text) => TextPartView { op: "added", text },
        }
    }
}

/// A site with its manifest's details and report; for a vault site, what waits for approval.
#[derive(Serialize, ToSchema)]
pub struct SiteView {
    /// The vault site's id.
    pub id: i64,
    /// The site's origin.
    pub origin: String,
    /// Where the manifest was found.
    pub manifest_url: String,
    /// The manifest's name.
    pub name: Option<String>,
    /// The manifest's description.
    pub description: Option<String>,
    /// The manifest's declared version (its `version` member), not a stored version's id.
    pub version: Option<String>,
    /// `bearer` or `oauth2`.
    #[schema(value_type = Option<String>)]
    pub auth: Option<&'static str>,
    /// The manifest's tools.
    pub tools: Vec<ToolView>,
    /// When the manifest was fetched (Unix seconds).
    pub fetched_at: i64,
    /// Why the last refresh failed, while the last valid manifest stays in use.
    pub stale_error: Option<String>,
    /// Whether a credential is stored (it is never shown).
    pub has_credential: bool,
    /// The manifest's report, as `servio check --format json` prints it.
    #[schema(value_type = Object)]
    pub report: ReportView,
    /// What waits for approval (a site of the vault only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingView>,
}

/// One site.
#[derive(Serialize, ToSchema)]
pub struct SiteAnswer {
    /// The site.
    pub site: SiteView,
}

/// What a refresh did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RefreshView {
    /// The site answered 304 or served the same manifest.
    Unchanged,
    /// A new valid manifest was stored.
    Changed,
    /// The refresh failed; the last valid manifest stays.
    Stale {
        /// Why.
        reason: String,
    },
}

/// A refresh and the site after it.
#[derive(Serialize, ToSchema)]
pub struct RefreshAnswer {
    /// What the refresh did.
    pub refresh: RefreshView,
    /// The site now.
    pub site: SiteView,
}

/// One stored version of a manifest.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionView {
    /// The version's id: the one to name when approving it, while it is the current one.
    pub id: i64,
    /// Whether it is the site's current version.
    pub current: bool,
    /// Whether it is the version acting for the user (the one they approved).
    pub approved: bool,
    /// When it was fetched (Unix seconds).
    pub fetched_at: i64,
    /// What changed from the version before, for people.
    pub changes: Vec<String>,
}

/// Every version of a manifest.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionList {
    /// Newest first.
    pub versions: Vec<VersionView>,
}

/// The report of a stored or fetched manifest, checked as served by its origin.
fn site_view(record: &SiteRecord, checked: Arc<CheckedText>, source: &str, has_credential: bool) -> SiteView {
    let site = Site::parse(&record.origin).ok();
    let manifest = checked.report.manifest.as_ref();
    let tools = manifest
        .map(|m| {
            m.tools
                .iter()
                .map(|t| ToolView {
                    name: t.name.clone(),
                    prefixed_name: site.as_ref().map(|s| s.prefixed_name(&t.name)),
                    description: t.description.clone(),
                    input_schema: t.input_schema.clone(),
                    held_back: None,
                })
                .collect()
        })
        .unwrap_or_default();
    SiteView {
        id: record.id,
        origin: record.origin.clone(),
        manifest_url: record.manifest_url.clone(),
        name: manifest.map(|m| m.name.clone()),
        description: manifest.and_then(|m| m.description.clone()),
        version: manifest.map(|m| m.version.clone()),
        auth: manifest.map(|m| match m.auth {
            servio_manifest::Auth::Bearer => "bearer",
            servio_manifest::Auth::OAuth2 { .. } => "oauth2",
        }),
        tools,
        fetched_at: record.fetched_at,
        stale_error: record.stale_error.clone(),
        has_credential,
        report: ReportView { source: source.to_owned(), checked: checked.clone() },
        pending: None,
    }
}

/// The checked texts of a vault entry: the one acting for its user (the approved one) and the
/// site's current one, each checked once (the manifest cache keeps them).
struct EntryTexts {
    acting: Arc<CheckedText>,
    latest: Arc<CheckedText>,
}

impl EntryTexts {
    async fn of(state: &AppState, entry: &VaultEntry) -> Result<EntryTexts, ApiError> {
        let manifests = state.collector.manifests();
        let origin = &entry.site.origin;
        let acting = manifests.text(origin, acting_manifest(entry), Wait::Bounded).await?;
        let latest = manifests.text(origin, &entry.site.manifest, Wait::Bounded).await?;
        Ok(EntryTexts { acting, latest })
    }

    /// What changed from the approved text to the site's current one, worked out off the
    /// async threads (a diff of two large manifests takes a while).
    async fn pending(&self, state: &AppState, entry: &VaultEntry) -> Result<Unapproved, ApiError> {
        let (approved, latest) = (acting_manifest(entry), entry.site.manifest.as_str());
        if approved == latest {
            return Ok(Unapproved::default());
        }
        let (approved, latest) = (approved.to_owned(), latest.to_owned());
        let (old, new) = (self.acting.clone(), self.latest.clone());
        let pending = state.collector.manifests().run(Wait::Bounded, move || {
            Unapproved::of((&approved, old.report.manifest.as_ref()), (&latest, new.report.manifest.as_ref()))
        });
        Ok(pending.await?)
    }
}

/// A vault entry for its owner, as it acts for them: the approved manifest's report and tools
/// (a changed tool shown as approved and marked `held_back`, a removed one gone), and what
/// changed since they approved, against the site's current version `version_id`.
pub(crate) async fn entry_view(
    state: &AppState,
    entry: &VaultEntry,
    version_id: Option<i64>,
) -> Result<SiteView, ApiError> {
    let texts = EntryTexts::of(state, entry).await?;
    let pending = texts.pending(state, entry).await?;
    let latest = texts.latest.report.manifest.as_ref();
    let mut view = site_view(&entry.site, texts.acting.clone(), &entry.site.manifest_url, entry.credential.is_some());
    view.tools.retain(|tool| still_offered(latest, &tool.name));
    let held: Vec<&str> = pending.diff.held_back_tools();
    for tool in &mut view.tools {
        tool.held_back = Some(held.contains(&tool.name.as_str()));
    }
    view.pending = Some(PendingView {
        needs_approval: pending.needs_approval(),
        version_id,
        kept: version_id.is_some() && entry.kept_version == version_id,
        changes: pending.lines(),
        held_back_tools: held.iter().map(|name| (*name).to_owned()).collect(),
        new_tools: pending.diff.new_tools().iter().map(|name| (*name).to_owned()).collect(),
        endpoints: pending.diff.endpoints.clone(),
        brief_changed: pending.brief_changed,
        other: pending.diff.other.clone(),
        hidden_text: pending.diff.hidden_text.clone(),
        tools: pending.diff.tools.iter().map(|change| ToolChangeView::of(change, latest)).collect(),
    });
    Ok(view)
}

/// The user's vault site `id` as [`entry_view`] shows it, against the site's current version:
/// the text it diffs and the version id it names are read in one statement, from one row, so
/// approving the version shown approves the changes shown (read apart, a refresh saving a
/// version between the two reads paired the older text with the newer id).
///
/// Each tool is named as the user's AI clients see it: a tool whose prefixed name collides with
/// another in the user's catalogue carries its suffix here too (§4).
pub(crate) async fn view(state: &AppState, user_id: i64, id: i64) -> Result<SiteView, ApiError> {
    let current = state.store.current_entry(user_id, id).await?.ok_or(ApiError::NotFound)?;
    let mut view = entry_view(state, &current.entry, current.version).await?;
    let catalogue = crate::domain::gateway::catalogue_of(state, user_id).await?;
    for tool in &mut view.tools {
        let offered = catalogue.tools().iter().find(|offered| offered.site_id == id && offered.tool == tool.name);
        if let Some(offered) = offered {
            tool.prefixed_name = Some(offered.name.clone());
        }
    }
    Ok(view)
}

/// The id of the site's current version, without its text.
async fn current_version_id(state: &AppState, site_id: i64) -> Result<Option<i64>, ApiError> {
    let versions = state.store.version_summaries(site_id, None).await?;
    Ok(versions.first().map(|version| version.id))
}

/// Whether changes of the site wait for the user, and whether they hold hidden text: changes
/// that need approval from the version they approved (`None`: none, they act on the current
/// one) to the site's current version `version`, not set aside with "keep the approved version"
/// (`kept`). Kept per pair of versions: the vault list and the dashboard ask on every request,
/// and read no text after the first time.
pub(crate) async fn changes_waiting(
    state: &AppState,
    (site_id, origin): (i64, &str),
    approved: Option<i64>,
    version: Option<i64>,
    kept: Option<i64>,
) -> Result<Waiting, ApiError> {
    let (Some(approved), Some(version)) = (approved, version) else { return Ok(Waiting::default()) };
    if approved == version || kept == Some(version) {
        return Ok(Waiting::default());
    }
    let judge = async {
        let (old, new) = (version_text(state, site_id, approved).await?, version_text(state, site_id, version).await?);
        let manifests = state.collector.manifests();
        let old_checked = manifests.text(origin, &old, Wait::Bounded).await?;
        let new_checked = manifests.text(origin, &new, Wait::Bounded).await?;
        let verdict = manifests.run(Wait::Bounded, move || {
            let (old_manifest, new_manifest) =
                (old_checked.report.manifest.as_ref(), new_checked.report.manifest.as_ref());
            Unapproved::of((&old, old_manifest), (&new, new_manifest)).waiting()
        });
        Ok::<Waiting, ApiError>(verdict.await?)
    };
    state.collector.manifests().waiting((approved, version), judge).await
}

/// The text of a site's stored version; a version gone meanwhile (pruned) is not found.
async fn version_text(state: &AppState, site_id: i64, version: i64) -> Result<String, ApiError> {
    state.store.version_text(site_id, version).await?.ok_or(ApiError::NotFound)
}

/// The report of a site's stored version, its text read only the first time it is met.
async fn version_report(
    state: &AppState,
    (site_id, origin): (i64, &str),
    version: i64,
) -> Result<Arc<CheckedText>, ApiError> {
    let load = state.store.version_text(site_id, version);
    match state.collector.manifests().version(origin, version, Wait::Bounded, load).await {
        Ok(Some(checked)) => Ok(checked),
        Ok(None) => Err(ApiError::NotFound),
        Err(VersionError::Load(error)) => Err(error.into()),
        Err(VersionError::Busy(busy)) => Err(busy.into()),
    }
}

fn discovery_error(error: DiscoveryError) -> ApiError {
    match &error {
        DiscoveryError::BadInput(_) => ApiError::BadRequest(error.to_string()),
        _ if error.refusal().is_some() => ApiError::BadRequest(error.to_string()),
        _ => ApiError::Unprocessable(json!({ "error": error.to_string() })),
    }
}

/// The user's vault, each site as it acts for them: its name and tools from the approved
/// manifest, whether changes wait for approval and whether its brief is ignored, and why. It
/// names each site's versions and reads no text once their reports are kept.
pub(crate) async fn list(state: &AppState, user_id: i64) -> Result<SiteList, ApiError> {
    let entries = state.store.vault_listing(user_id).await?;
    let mut sites = Vec::with_capacity(entries.len());
    for entry in entries {
        let site = (entry.site_id, entry.origin.as_str());
        let acting = version_report(state, site, entry.acting_version()).await?;
        let latest = version_report(state, site, entry.version).await?;
        let (approved, kept) = (entry.approved_version, entry.kept_version);
        let waiting = changes_waiting(state, site, approved, Some(entry.version), kept).await?;
        let report = &acting.report;
        let latest = latest.report.manifest.as_ref();
        let offered =
            |m: &servio_manifest::Manifest| m.tools.iter().filter(|tool| still_offered(latest, &tool.name)).count();
        sites.push(SiteSummary {
            id: entry.site_id,
            name: report.manifest.as_ref().map(|m| m.name.clone()),
            tools: report.manifest.as_ref().map_or(0, offered),
            origin: entry.origin,
            stale_error: entry.stale_error,
            changes_waiting: waiting.needs_approval,
            hidden_text: waiting.hidden_text,
            brief: report.brief_status.as_str(),
            brief_errors: BriefError::of(report),
        });
    }
    Ok(SiteList { sites })
}

/// The user's vault entry `id`; "not found" when it is not theirs.
pub(crate) async fn entry(state: &AppState, user_id: i64, id: i64) -> Result<VaultEntry, ApiError> {
    state.store.vault_entry(user_id, id).await?.ok_or(ApiError::NotFound)
}

/// Adds the site at `url` to a user's vault with an optional bearer token (sealed). Refused
/// with the report when the manifest is invalid; refused (`409`) before anything is fetched
/// when the user has the site already, and (`429`) when the site's fetches are spent for now.
pub(crate) async fn add_site(
    state: &AppState,
    user_id: i64,
    url: &str,
    token: Option<&str>,
) -> Result<SiteView, ApiError> {
    let token = token.map(checked_token).transpose()?.flatten();
    let url = url.trim();
    if url.is_empty() {
        return Err(ApiError::BadRequest(EMPTY_URL.into()));
    }
    let url = if url.contains("://") { url.to_owned() } else { format!("https://{url}") };
    // The site is known from the URL: one the user has is refused as the store would refuse
    // it, before a fetch that could only end there (a flood of these once fetched for each).
    if let Ok(site) = Site::parse(&url)
        && state.store.vault_site_at(user_id, site.origin()).await?.is_some()
    {
        return Err(servio_store::StoreError::Conflict(IN_VAULT).into());
    }
    let found = discover(state, &url).await?.map_err(discovery_error)?;
    let origin = stored_origin(&found.origin).to_owned();
    let fetched = fetched_manifest(&origin, &found)?;
    let checked = state.collector.manifests().text(&origin, fetched.manifest, Wait::Bounded).await?;
    if !checked.report.is_valid() {
        return Err(ApiError::Unprocessable(json!({
            "error": "the manifest is invalid; nothing was added",
            "report": to_json(found.url.as_str(), &checked.report),
        })));
    }
    if let Some(manifest) = checked.report.manifest.as_ref() {
        refuse_unreachable(state, manifest).await?;
    }
    let credential = token.map(|token| SiteCredential::Token(token.to_owned()));
    let record =
        state.credentials().add_site(&fetched, user_id, credential.as_ref(), (now(), state.quotas.sites)).await?;
    if checked.report.brief.is_some() {
        queue_first_collection(state, user_id, record.id).await;
    }
    Ok(site_view(&record, checked, &record.manifest_url, token.is_some()))
}

/// Refuses a manifest whose endpoints (`server.url`, and OAuth's `authorization_url` and
/// `token_url`) the address guard refuses, with the guard's reason: added anyway, every call,
/// collection and Connect would fail later, after the site was stored.
async fn refuse_unreachable(state: &AppState, manifest: &servio_manifest::Manifest) -> Result<(), ApiError> {
    let mut endpoints = vec![("server.url", &manifest.server_url)];
    if let servio_manifest::Auth::OAuth2 { authorization_url, token_url, .. } = &manifest.auth {
        endpoints.extend([("auth.authorization_url", authorization_url), ("auth.token_url", token_url)]);
    }
    for (field, url) in endpoints {
        if let Err(error) = state.client.check_reachable(url).await {
            return Err(ApiError::BadRequest(format!(
                "the manifest's {field} ({url}) is refused: {error}; nothing was added"
            )));
        }
    }
    Ok(())
}

/// What a site added twice is, in the `409` that refuses it ("… is already taken"), as the
/// store says it when two adds race past the check before the fetch.
const IN_VAULT: &str = "this site in your vault";

/// Queues the due periods of a site just added (or given a credential: a period refused for want
/// of one is tried again), so that the next lease of a worker (`serve`'s
/// looks every few seconds) collects them rather than the next planning round, minutes away;
/// its page shows the jobs' progress meanwhile. The site is added whatever happens here: a
/// failure is logged, and planning queues them later.
pub(crate) async fn queue_first_collection(state: &AppState, user_id: i64, site_id: i64) {
    let queued = async {
        let user = state.store.user(user_id).await?.ok_or(ApiError::NotFound)?;
        let entry = state.store.vault_entry(user_id, site_id).await?.ok_or(ApiError::NotFound)?;
        Ok::<_, ApiError>(state.collector.plan_entry(&user, &entry, jiff::Timestamp::now()).await?)
    };
    if let Err(error) = queued.await {
        tracing::warn!(user_id, site_id, error = %servio_client::error_chain(&error), "queueing a new site's first collection failed");
    }
}

/// Refreshes the manifest of the user's vault site `id` now; the site after it. Limited per
/// site (`429`): each refresh fetches and checks the manifest and may store a version.
pub(crate) async fn refresh(state: &AppState, user_id: i64, id: i64) -> Result<RefreshAnswer, ApiError> {
    let before = entry(state, user_id, id).await?;
    state.throttle.site_refresh(before.site.id)?;
    let outcome = crate::domain::refresh::refresh_requested(state, &before.site).await?;
    let refresh = match outcome {
        crate::domain::refresh::Outcome::Unchanged => RefreshView::Unchanged,
        crate::domain::refresh::Outcome::Changed => RefreshView::Changed,
        crate::domain::refresh::Outcome::Stale(reason) => RefreshView::Stale { reason },
    };
    Ok(RefreshAnswer { refresh, site: view(state, user_id, id).await? })
}

/// Which version an approval names.
#[derive(Debug, Deserialize, ToSchema)]
pub struct Decision {
    /// The id of the version approved (or kept against): the site's current one, as the site's
    /// `pending.version` and the versions list give it. An integer written as one (`81705`;
    /// `81705.0` is refused). Read as `version`, as it always was.
    #[serde(rename = "version", deserialize_with = "crate::json_body::integer")]
    #[schema(minimum = 1)]
    pub version_id: i64,
}

/// What to do with the changes waiting for approval.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Verdict {
    /// Approve the version: it acts for the user from now on.
    Approve,
    /// Keep the approved version, and stop offering this one until the site changes again.
    Keep,
}

/// Approves the version `version_id` of the user's vault site `id`, or keeps the approved
/// manifest against it. Refused with 409 when `version_id` is no longer the site's current one, saying what
/// changed since: the user approves what they reviewed, never a newer text.
pub(crate) async fn decide(
    state: &AppState,
    user_id: i64,
    id: i64,
    version_id: i64,
    verdict: Verdict,
) -> Result<VaultEntry, ApiError> {
    let decided = match verdict {
        Verdict::Approve => state.store.approve(user_id, id, version_id).await?,
        Verdict::Keep => state.store.keep_approved(user_id, id, version_id).await?,
    };
    match decided {
        Approval::Done => {}
        Approval::NotInVault => return Err(ApiError::NotFound),
        Approval::NotCurrent { current } => return Err(moved_on(state, user_id, id, version_id, current).await?),
    }
    entry(state, user_id, id).await
}

/// The 409 of an approval naming version `named` when `current` is the site's current one: what
/// changed from the named version (or, when it is not this site's, from the approved one).
async fn moved_on(
    state: &AppState,
    user_id: i64,
    id: i64,
    named: i64,
    current: Option<Version>,
) -> Result<ApiError, ApiError> {
    let entry = entry(state, user_id, id).await?;
    let Some(current) = current else {
        return Ok(ApiError::Conflict("the site has no stored version to approve yet: refresh it first".into()));
    };
    let versions = state.store.versions(entry.site.id).await?;
    let from = versions.iter().find(|v| v.id == named).map_or(acting_manifest(&entry), |v| v.manifest.as_str());
    let manifests = state.collector.manifests();
    let old = manifests.get(&entry.site.origin, from, Wait::Bounded).await?;
    let new = manifests.get(&entry.site.origin, &current.manifest, Wait::Bounded).await?;
    // Comparing two large manifests takes a while: off the async threads, as everywhere else.
    let (from, latest) = (from.to_owned(), current.manifest.clone());
    let changes = manifests
        .run(Wait::Bounded, move || Unapproved::of((&from, manifest_of(&old)), (&latest, manifest_of(&new))).lines())
        .await?;
    let since = if versions.iter().any(|v| v.id == named) { "it" } else { "the version you approved" };
    Ok(ApiError::Conflict(format!(
        "version {named} is not the site's current version ({} is): since {since}, {}; review the changes again",
        current.id,
        if changes.is_empty() { "nothing that needs approval changed".to_owned() } else { changes.join("; ") }
    )))
}

/// The manifest of a checked text, when it is a valid one.
fn manifest_of(checked: &Option<Arc<CheckedManifest>>) -> Option<&servio_manifest::Manifest> {
    checked.as_deref().map(|checked| &checked.manifest)
}

/// The versions of a vault site, newest first, each with what changed as recorded when it was
/// saved (no stored text is read or checked again).
pub(crate) async fn versions(state: &AppState, user_id: i64, id: i64) -> Result<VersionList, ApiError> {
    let entry = entry(state, user_id, id).await?;
    let current = current_version_id(state, entry.site.id).await?;
    let versions = state.store.version_summaries(entry.site.id, entry.approved_version.or(current)).await?;
    let versions = versions
        .into_iter()
        .enumerate()
        .map(|(i, version)| VersionView {
            id: version.id,
            current: i == 0,
            approved: version.approved,
            fetched_at: version.fetched_at,
            changes: version.changes.as_deref().and_then(|lines| serde_json::from_str(lines).ok()).unwrap_or_default(),
        })
        .collect();
    Ok(VersionList { versions })
}

/// The longest credential stored: a bearer token is tens or hundreds of bytes; anything
/// near this is a paste gone wrong, and the store should not hold megabytes per user.
pub const MAX_CREDENTIAL_BYTES: usize = 8 * 1024;

/// A pasted token, trimmed: `None` when empty, an error when longer than
/// [`MAX_CREDENTIAL_BYTES`] or not something an `Authorization` header can carry.
pub(crate) fn checked_token(token: &str) -> Result<Option<&str>, ApiError> {
    let token = token.trim();
    if token.len() > MAX_CREDENTIAL_BYTES {
        return Err(ApiError::BadRequest(format!(
            "the token is {} bytes long; a credential may be at most 8 KiB ({MAX_CREDENTIAL_BYTES} bytes): paste only the token",
            token.len()
        )));
    }
    if let Some(bad) = token.chars().find(|c| c.is_control() || !c.is_ascii()) {
        return Err(ApiError::BadRequest(format!(
            "the token has a character an Authorization header cannot carry ({:?}): paste only the token",
            bad
        )));
    }
    Ok((!token.is_empty()).then_some(token))
}

/// Seals a pasted bearer token as the credential of a user's vault site.
pub(crate) async fn store_token(state: &AppState, user_id: i64, site_id: i64, token: &str) -> Result<(), ApiError> {
    let Some(token) = checked_token(token)? else {
        return Err(ApiError::BadRequest("`token` must not be empty".into()));
    };
    let stored = state.credentials().set_credential(user_id, site_id, &SiteCredential::Token(token.to_owned())).await?;
    if !stored {
        return Err(ApiError::NotFound);
    }
    // A period refused for want of a working credential is collected again now (§8).
    queue_first_collection(state, user_id, site_id).await;
    Ok(())
}

/// Takes a site out of the user's vault.
pub(crate) async fn remove(state: &AppState, user_id: i64, id: i64) -> Result<(), ApiError> {
    if !state.store.remove_from_vault(user_id, id).await? {
        return Err(ApiError::NotFound);
    }
    Ok(())
}
