//! The one cache of checked manifests, shared by the collector's jobs, the AI gateway and the
//! dashboard: checking a manifest (and compiling a tool's argument schema) costs far more than
//! the call it is needed for.
//!
//! **Keyed** by site id and the manifest's text: a site whose stored text changes is checked
//! again, and users who have not approved the change yet keep acting on the version before it,
//! so a few versions of one site are kept at once ([`VERSIONS_PER_SITE`], the oldest dropped
//! first). **Bounded**: past [`SITES_LIMIT`] sites the cache is emptied at once (a check again
//! is cheap enough to make this rare event harmless). A text that is not a valid manifest is
//! remembered as such, so it is not checked again on every request either.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use servio_manifest::schema::{ArgumentValidator, UnusableSchema};
use servio_manifest::{Brief, CheckOptions, Diagnostic, Manifest};

/// Versions of one site's manifest kept at once.
pub const VERSIONS_PER_SITE: usize = 4;

/// Sites kept at most; past this the cache starts again empty.
pub const SITES_LIMIT: usize = 4096;

/// A valid manifest, checked once: typed, with its brief when that is valid, and each tool's
/// argument validator compiled on first use.
pub struct CheckedManifest {
    /// The manifest.
    pub manifest: Manifest,
    /// The brief, when the manifest has a valid one (else there is nothing to collect).
    pub brief: Option<Brief>,
    /// Why the brief is ignored, when it is (each error as `servio check` words it).
    pub brief_errors: Vec<Diagnostic>,
    validators: Vec<OnceLock<Result<ArgumentValidator, UnusableSchema>>>,
}

impl std::fmt::Debug for CheckedManifest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedManifest").field("name", &self.manifest.name).finish_non_exhaustive()
    }
}

impl CheckedManifest {
    /// Checks `text`; `None` when it is not a valid manifest.
    pub fn check(text: &str) -> Option<CheckedManifest> {
        let report = servio_manifest::check(text.as_bytes(), &CheckOptions::default());
        let manifest = report.manifest?;
        let validators = manifest.tools.iter().map(|_| OnceLock::new()).collect();
        Some(CheckedManifest { manifest, brief: report.brief, brief_errors: report.brief_errors, validators })
    }

    /// The argument validator of the manifest's tool at `index`, compiled on first use; an
    /// error says why the tool's schema cannot be used.
    ///
    /// # Panics
    /// When `index` is not the index of one of the manifest's tools.
    pub fn validator(&self, index: usize) -> &Result<ArgumentValidator, UnusableSchema> {
        self.validators[index].get_or_init(|| ArgumentValidator::new(&self.manifest.tools[index].input_schema))
    }

    /// The argument validator of the tool named `tool`; `None` when the manifest has no such
    /// tool.
    pub fn validator_of(&self, tool: &str) -> Option<&Result<ArgumentValidator, UnusableSchema>> {
        let index = self.manifest.tools.iter().position(|t| t.name == tool)?;
        Some(self.validator(index))
    }
}

/// One checked version of a site's manifest: its text and what checking it gave.
struct Version {
    text: String,
    checked: Option<Arc<CheckedManifest>>,
}

/// Checked manifests by site and text (see the module's documentation for its bounds).
#[derive(Default)]
pub struct ManifestCache {
    sites: Mutex<HashMap<i64, Vec<Version>>>,
}

impl ManifestCache {
    /// The checked manifest of site `site_id` whose text is `text`, checked now unless kept;
    /// `None` when the text is not a valid manifest.
    pub fn get(&self, site_id: i64, text: &str) -> Option<Arc<CheckedManifest>> {
        if let Some(found) = self.kept(site_id, text) {
            return found;
        }
        // Checked outside the lock: a check takes long enough to hold up every other caller.
        let checked = CheckedManifest::check(text).map(Arc::new);
        let mut sites = self.sites.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if sites.len() >= SITES_LIMIT && !sites.contains_key(&site_id) {
            sites.clear();
        }
        let versions = sites.entry(site_id).or_default();
        if !versions.iter().any(|version| version.text == text) {
            if versions.len() >= VERSIONS_PER_SITE {
                versions.remove(0);
            }
            versions.push(Version { text: text.to_owned(), checked: checked.clone() });
        }
        checked
    }

    /// What is kept for `text` of `site_id`: `Some(verdict)` when it was checked before.
    fn kept(&self, site_id: i64, text: &str) -> Option<Option<Arc<CheckedManifest>>> {
        let sites = self.sites.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let version = sites.get(&site_id)?.iter().find(|version| version.text == text)?;
        Some(version.checked.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(version: &str) -> String {
        serde_json::json!({
            "name": "Shop", "version": version,
            "server": { "url": "https://shop.example.com/api" },
            "auth": { "type": "bearer" },
            "tools": [{ "name": "shop.getSales", "description": "Sales of one day",
                        "input_schema": { "type": "object", "properties": {} } }],
            "brief": { "metrics": [{ "key": "sales.revenue.daily", "tool": "shop.getSales", "valuePath": "total" }] }
        })
        .to_string()
    }

    #[test]
    fn a_text_is_checked_once_and_a_new_text_again() {
        let cache = ManifestCache::default();
        let first = cache.get(1, &manifest("1.0.0")).expect("valid");
        assert!(first.brief.is_some());
        assert!(Arc::ptr_eq(&first, &cache.get(1, &manifest("1.0.0")).unwrap()), "kept");
        let second = cache.get(1, &manifest("1.0.1")).unwrap();
        assert!(!Arc::ptr_eq(&first, &second), "a changed text is checked again");
        assert!(Arc::ptr_eq(&first, &cache.get(1, &manifest("1.0.0")).unwrap()), "both versions kept");
        assert!(cache.get(2, "not a manifest").is_none());
        assert!(first.validator_of("shop.getSales").unwrap().is_ok());
        assert!(first.validator_of("shop.unknown").is_none());
    }

    #[test]
    fn only_a_few_versions_of_a_site_are_kept() {
        let cache = ManifestCache::default();
        let oldest = cache.get(1, &manifest("1.0.0")).unwrap();
        for patch in 1..=VERSIONS_PER_SITE {
            cache.get(1, &manifest(&format!("1.0.{patch}")));
        }
        assert!(!Arc::ptr_eq(&oldest, &cache.get(1, &manifest("1.0.0")).unwrap()), "the oldest was dropped");
    }
}
