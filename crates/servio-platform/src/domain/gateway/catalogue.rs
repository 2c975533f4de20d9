//! Each user's catalogue: every approved tool of their vault under its prefixed name (§4),
//! with the log setting, kept for [`CALL_CONTEXT_TTL`] in at most `--catalogue-cache-bytes`, and
//! dropped at once on a change notice from any process.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use servio_core::manifests::{CheckedManifest, Wait};
use servio_manifest::Site;
use servio_store::{User, VaultEntry};

use super::Gateway;
use crate::AppState;
use crate::cache::{Weight, json_weight};
use crate::error::ApiError;
use crate::notices::Change;

/// How many bytes the kept catalogues may weigh unless told (`--catalogue-cache-bytes`).
pub const DEFAULT_CATALOGUE_BYTES: u64 = 64 << 20;

/// How long a user's catalogue and log setting are reused without asking the store.
pub const CALL_CONTEXT_TTL: Duration = Duration::from_secs(2);

impl Gateway {
    pub(super) fn kept(&self, user_id: i64) -> Option<Arc<CallContext>> {
        self.call_contexts.get(&user_id)
    }

    fn keep(&self, user_id: i64, context: Arc<CallContext>) {
        self.call_contexts.insert(user_id, context);
    }

    /// Drops what is kept of the user a change is about (everything for `None`: changes may
    /// have gone unheard); new values change no catalogue.
    pub fn drop_kept(&self, change: Option<Change>) {
        match change {
            Some(Change::Values(_)) => {}
            Some(change) => self.call_contexts.remove(&change.user_id()),
            None => self.call_contexts.clear(),
        }
    }

    /// The bytes of catalogues kept now.
    pub fn catalogue_bytes(&self) -> u64 {
        self.call_contexts.bytes()
    }
}

/// One tool of a user's catalogue.
#[derive(Debug, Clone)]
pub struct CatalogueTool {
    /// The prefixed name, unique among the user's tools.
    pub name: String,
    /// The site's id in the vault.
    pub site_id: i64,
    /// The site's origin.
    pub origin: String,
    /// The tool's name in its manifest.
    pub tool: String,
    /// What it does.
    pub description: String,
    /// Its arguments' schema.
    pub input_schema: Value,
}

/// Every approved tool of a user's vault, under prefixed names.
pub struct Catalogue {
    tools: Vec<CatalogueTool>,
    places: Vec<(usize, usize)>,
    sites: Vec<(VaultEntry, Arc<CheckedManifest>)>,
}

impl Catalogue {
    /// The tools, in vault order, then manifest order.
    pub fn tools(&self) -> &[CatalogueTool] {
        &self.tools
    }

    /// The vault's sites, each with the checked manifest acting for the user (the one they
    /// approved), in vault order.
    pub fn sites(&self) -> &[(VaultEntry, Arc<CheckedManifest>)] {
        &self.sites
    }

    pub(super) fn find(&self, name: &str) -> Option<(&CatalogueTool, &VaultEntry, &Arc<CheckedManifest>, usize)> {
        let at = self.tools.iter().position(|tool| tool.name == name)?;
        let (site, tool) = self.places[at];
        let (entry, parsed) = &self.sites[site];
        Some((&self.tools[at], entry, parsed, tool))
    }
}

/// A user's **call context**: what a gateway call needs of its user besides the token, their
/// catalogue and the log setting; kept as one, so the cache of catalogues holds these. Not the
/// [`Change::Context`] notice, which tells of a change of what calls are made with (a
/// credential, the log setting) or a user is shown, and drops these among other things.
pub(super) struct CallContext {
    pub(super) catalogue: Arc<Catalogue>,
    pub(super) log_arguments: bool,
}

/// A tool's or a site's cost besides its text: the struct, its strings' headers, the map nodes.
const ITEM_OVERHEAD: usize = 256;

impl Weight for CallContext {
    /// The tools (names, descriptions, schemas: each a copy of the manifest's) and the vault
    /// entries (each holding its manifest texts); the checked manifests are shared with the
    /// manifest cache and are not counted here.
    fn weight(&self) -> usize {
        let catalogue = &self.catalogue;
        let tools: usize = catalogue
            .tools
            .iter()
            .map(|tool| {
                let text = tool.name.len() + tool.origin.len() + tool.tool.len() + tool.description.len();
                ITEM_OVERHEAD + text + json_weight(&tool.input_schema)
            })
            .sum();
        let sites: usize = catalogue
            .sites
            .iter()
            .map(|(entry, _)| {
                let site = &entry.site;
                let texts = [&site.manifest, &site.origin, &site.manifest_url];
                let text: usize = texts.iter().map(|text| text.len()).sum();
                let own = entry.approved_manifest.as_ref().map_or(0, String::len);
                ITEM_OVERHEAD + text + own + entry.credential.as_ref().map_or(0, Vec::len)
            })
            .sum();
        ITEM_OVERHEAD + tools + sites + catalogue.places.len() * 16
    }
}

/// What a call needs of `user`: kept, or read and kept.
pub(super) async fn call_context(state: &AppState, user: &User) -> Result<Arc<CallContext>, ApiError> {
    call_context_of(state, user.id).await
}

async fn call_context_of(state: &AppState, user_id: i64) -> Result<Arc<CallContext>, ApiError> {
    if let Some(kept) = state.gateway.kept(user_id) {
        return Ok(kept);
    }
    let catalogue = Arc::new(read_catalogue(state, user_id).await?);
    let log_arguments = state.store.log_arguments(user_id).await?;
    let context = Arc::new(CallContext { catalogue, log_arguments });
    state.gateway.keep(user_id, context.clone());
    Ok(context)
}

/// The catalogue of `user`: the tools of the manifest each site was approved with (changed
/// tools stay held back until the user approves them).
/// Refused with [`ApiError::ChecksBusy`] when its manifests cannot be checked now.
pub async fn catalogue(state: &AppState, user: &User) -> Result<Arc<Catalogue>, ApiError> {
    catalogue_of(state, user.id).await
}

/// [`catalogue`] of the user `user_id`.
pub async fn catalogue_of(state: &AppState, user_id: i64) -> Result<Arc<Catalogue>, ApiError> {
    Ok(call_context_of(state, user_id).await?.catalogue.clone())
}

async fn read_catalogue(state: &AppState, user_id: i64) -> Result<Catalogue, ApiError> {
    let entries = state.store.vault_entries(user_id).await?;
    let mut sites = Vec::with_capacity(entries.len());
    for entry in entries {
        match state.collector.acting(&entry, Wait::Bounded).await? {
            Some(parsed) => sites.push((entry, parsed)),
            None => tracing::warn!(site = %entry.site.origin, "the approved manifest no longer parses"),
        }
    }
    // A tool the site removed goes at once, even while its other changes wait for approval.
    let mut latest: Vec<Option<Arc<CheckedManifest>>> = Vec::with_capacity(sites.len());
    for (entry, _) in &sites {
        latest.push(state.collector.manifests().get(&entry.site.origin, &entry.site.manifest, Wait::Bounded).await?);
    }
    Ok(assemble(sites, &latest))
}

/// The catalogue of `sites` (each with the manifest acting for the user), given each site's
/// latest checked manifest, in the same order.
fn assemble(sites: Vec<(VaultEntry, Arc<CheckedManifest>)>, latest: &[Option<Arc<CheckedManifest>>]) -> Catalogue {
    let addresses: Vec<Option<Site>> = sites.iter().map(|(entry, _)| Site::parse(&entry.site.origin).ok()).collect();
    let mut pairs = Vec::new();
    let mut places = Vec::new();
    for (index, (address, (_, parsed))) in addresses.iter().zip(&sites).enumerate() {
        let Some(address) = address else { continue };
        let latest = latest[index].as_deref().map(|checked| &checked.manifest);
        for (tool_index, tool) in parsed.manifest.tools.iter().enumerate() {
            if !crate::approval::still_offered(latest, &tool.name) {
                continue;
            }
            pairs.push((address, tool.name.as_str()));
            places.push((index, tool_index));
        }
    }
    // The platform's own tool keeps its name; a site tool named like it takes the suffix (§4).
    // Every name is unique by construction; a tool that cannot have a name of its own (the
    // same tool listed twice) is not offered, so a call by name reaches one tool or none.
    let names = servio_manifest::address::assign_names_beside(&pairs, &[crate::domain::gateway::METRICS_TOOL]);
    let (names, places): (Vec<String>, Vec<(usize, usize)>) =
        names.into_iter().zip(places).filter_map(|(name, place)| Some((name?, place))).unzip();
    let tools = names
        .into_iter()
        .zip(&places)
        .map(|(name, &(site, tool))| {
            let (entry, parsed) = &sites[site];
            let tool = &parsed.manifest.tools[tool];
            CatalogueTool {
                name,
                site_id: entry.site.id,
                origin: entry.site.origin.clone(),
                tool: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: tool.input_schema.clone(),
            }
        })
        .collect();
    Catalogue { tools, places, sites }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use servio_manifest::{CheckOptions, check};
    use servio_store::SiteRecord;

    use super::*;

    /// A vault entry for `origin` whose manifest offers `tools`, with its checked manifest.
    fn site(id: i64, origin: &str, tools: &[&str]) -> (VaultEntry, Arc<CheckedManifest>) {
        let tools: Vec<Value> = tools
            .iter()
            .map(|name| serde_json::json!({ "name": name, "description": "d", "input_schema": { "type": "object" } }))
            .collect();
        let manifest = serde_json::json!({ "name": "s", "version": "1.0.0", "server": { "url": origin }, "auth": { "type": "bearer" }, "tools": tools });
        let text = manifest.to_string();
        let options = CheckOptions { site: Site::parse(origin).ok(), ..CheckOptions::default() };
        let report = check(text.as_bytes(), &options);
        let checked = CheckedManifest::of(&report).unwrap_or_else(|| panic!("{:?}", report.errors));
        let record = SiteRecord {
            id,
            origin: Site::parse(origin).unwrap().origin().to_owned(),
            manifest_url: format!("{origin}/servio.json"),
            manifest: text,
            etag: None,
            last_modified: None,
            fetched_at: 0,
            stale_error: None,
            refresh_failures: 0,
            retry_at: None,
        };
        let entry = VaultEntry {
            site: record,
            credential: None,
            approved_manifest: None,
            approved_version: None,
            kept_version: None,
        };
        (entry, Arc::new(checked))
    }

    // Regression: two sites whose hosts map to one identifier gave two catalogue entries under
    // one suffixed name, and a call by that name reached whichever site came first in the
    // vault (the victim's card number went to the other site).
    #[test]
    fn a_call_by_name_reaches_one_tool_whatever_the_hosts() {
        let victim = Site::parse("https://shop.example.com").unwrap();
        let suffixed = format!("pay_{}", &victim.hash("pay")[..6]);
        let sites = vec![
            site(1, "https://shop-example.com", &["pay", &suffixed, "servio_metrics"]),
            site(2, "https://shop.example.com", &["pay", "refund"]),
            site(3, "https://shop_example.com", &["pay", "refund"]),
        ];
        let latest: Vec<_> = sites.iter().map(|(_, checked)| Some(checked.clone())).collect();
        let catalogue = assemble(sites, &latest);
        let tools = catalogue.tools();
        assert_eq!(tools.len(), 7, "every tool is offered: {tools:?}");
        let names: HashSet<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(names.len(), tools.len(), "names are pairwise distinct: {tools:?}");
        assert!(!names.contains(crate::domain::gateway::METRICS_TOOL), "the platform's tool keeps its name");
        for tool in tools {
            let (found, entry, parsed, index) = catalogue.find(&tool.name).unwrap();
            assert_eq!((found.site_id, found.tool.as_str()), (tool.site_id, tool.tool.as_str()));
            assert_eq!((entry.site.id, parsed.manifest.tools[index].name.as_str()), (tool.site_id, tool.tool.as_str()));
        }
        let victims = tools.iter().find(|tool| tool.site_id == 2 && tool.tool == "pay").unwrap();
        assert_eq!(victims.name, victim.hash("pay"), "the clash left after the suffix takes the full hash");
    }
}
