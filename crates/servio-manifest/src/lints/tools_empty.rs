//! W008 `tools-empty`: a manifest whose `tools` array is empty gives an AI nothing to do.

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

pub(crate) fn diagnostic(at: &Pointer) -> Diagnostic {
    Diagnostic::at(Code::EmptyTools, at.clone(), "`tools` is empty").with_help("describe at least one tool")
}
