//! W009 `prefixed-name-length`: a prefixed tool name longer than 64 characters.
//!
//! The platform then shortens it to 55 characters, `_` and 8 hex digits of a hash, which is
//! harder for the AI and for people to read.

use crate::address::{self, Site};
use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain W009` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns when a tool's prefixed name (site identifier, `_`, tool name) is longer than 64 characters, so that the platform shortens it to 55 characters, `_` and 8 hex digits of a hash. When a manifest is checked from a file, the origin of `server.url` stands in for the site.\n\nWhy: AI model APIs accept tool names up to 64 characters; a shortened name is harder for the AI and the user to read.\n\nExample:\n    \"name\": \"reporting.getQuarterlyRevenueBreakdownByRegionAndProductCategory\"\n\nFix: choose a shorter name, such as reporting.getRevenueByRegion.";

crate::rules::fixture_test!("prefixed_name_length.json", PrefixedNameLength);

pub(crate) fn check(site: &Site, tool: &str, at: &Pointer, warnings: &mut Vec<Diagnostic>) {
    if address::is_shortened(site, tool) {
        let name = site.prefixed_name(tool);
        warnings.push(
            Diagnostic::at(
                Code::PrefixedNameLength,
                at.clone(),
                format!(
                    "on {} this tool is addressed as {name}, shortened from more than 64 characters",
                    site.origin()
                ),
            )
            .with_help(format!(
                "choose a name of at most {} characters",
                address::MAX_NAME_LEN.saturating_sub(site.identifier().len() + 1)
            )),
        );
    }
}
