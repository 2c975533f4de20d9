//! W008 `tools-empty`: a manifest whose `tools` array is empty gives an AI nothing to do.

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain W008` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns when `tools` is an empty array.\n\nWhy: a site without tools gives an AI nothing to do.\n\nExample:\n    \"tools\": []\n\nFix: describe at least one tool.";

crate::rules::fixture_test!("tools_empty.json", ToolsEmpty);

pub(crate) fn diagnostic(at: &Pointer) -> Diagnostic {
    Diagnostic::at(Code::ToolsEmpty, at.clone(), "`tools` is empty").with_help("describe at least one tool")
}
