//! E040 `tool-name-unique`: tool names are unique within the manifest; each later occurrence is
//! reported.

use std::collections::HashSet;

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain E040` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that tool names are unique within the manifest. Each later occurrence is reported.\n\nWhy: tools are called by name; with two tools of one name, the platform cannot tell which one an AI meant.\n\nExample:\n    \"tools\": [ { \"name\": \"forum.search\", ... }, { \"name\": \"forum.search\", ... } ]\n\nFix: rename one of them, for instance `forum.searchPosts`.";

crate::rules::fixture_test!("tool_name_unique.json", ToolNameUnique);

/// Adds the tool name `name`, at `at`, to the names `seen` so far, or reports it as taken.
pub(crate) fn check<'a>(name: &'a str, at: &Pointer, seen: &mut HashSet<&'a str>, errors: &mut Vec<Diagnostic>) {
    if !seen.insert(name) {
        errors.push(
            Diagnostic::at(
                Code::ToolNameUnique,
                at.clone(),
                format!("tool name {name:?} is already used by an earlier tool"),
            )
            .with_help("give each tool its own name"),
        );
    }
}
