//! W008 `tools-empty`: a manifest whose `tools` array is empty gives an AI nothing to do.

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain W008` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns when `tools` is an empty array.\n\nWhy: a site without tools gives an AI nothing to do.\n\nExample:\n    \"tools\": []\n\nFix: describe at least one tool.";

pub(crate) fn diagnostic(at: &Pointer) -> Diagnostic {
    Diagnostic::at(Code::ToolsEmpty, at.clone(), "`tools` is empty").with_help("describe at least one tool")
}

#[cfg(test)]
mod tests {
    /// `tools_empty.json`, beside this file, raises W008; what `check` says of it is a snapshot.
    #[test]
    fn the_fixture_raises_it() {
        let said = crate::lints::fixture_report(include_str!("tools_empty.json"), crate::Code::ToolsEmpty);
        insta::assert_snapshot!(said);
    }
}
