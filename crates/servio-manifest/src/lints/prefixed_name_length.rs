//! W009 `prefixed-name-length`: a prefixed tool name longer than 64 characters.
//!
//! The platform then shortens it to 55 characters, `_` and 8 hex digits of a hash, which is
//! harder for the AI and for people to read.

use crate::address::{self, Site};
use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

pub(crate) fn check(site: &Site, tool: &str, at: &Pointer, warnings: &mut Vec<Diagnostic>) {
    if address::is_shortened(site, tool) {
        let name = site.prefixed_name(tool);
        warnings.push(
            Diagnostic::at(
                Code::PrefixedNameTooLong,
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
