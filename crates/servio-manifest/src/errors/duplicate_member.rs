//! E003 `duplicate-member`: no object has the same member name twice.
//!
//! Found while parsing: [`crate::json::parse`] says whether the document has any repeated name,
//! and [`crate::locate::find_duplicates`] finds each in the source. This is the diagnostic
//! [`crate::check`] makes of each one.

use crate::diagnostic::{Anchor, Diagnostic, Span};
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain E003` prints: what the rule checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Checks that no object has the same member name twice.\n\nWhy: JSON parsers disagree on which of two equal names wins, so the platform and your own tools could read different manifests from the same bytes.\n\nExample:\n    { \"name\": \"Forum\", \"name\": \"Shop\" }\n\nFix: keep one of the two members.";

crate::rules::fixture_test!("duplicate_member.json", DuplicateMember);

/// The member at `pointer`, whose name is at `span`, repeats an earlier one of its object.
pub(crate) fn diagnostic(pointer: Pointer, span: Span) -> Diagnostic {
    let name = pointer.segments().last().unwrap_or_default();
    Diagnostic::new(
        Code::DuplicateMember,
        pointer,
        Anchor::Offset(span),
        format!("member `{name}` appears more than once in this object"),
    )
    .with_help("keep one of them: JSON parsers disagree on which one wins")
}
