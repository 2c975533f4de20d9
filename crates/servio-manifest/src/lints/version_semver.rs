//! W001 `version-semver`: `version` should be semantic versioning (MAJOR.MINOR.PATCH).
//!
//! Users tell a breaking change from a fix by the version.

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain W001` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns when `version` is not a semantic version (MAJOR.MINOR.PATCH, as in 2.1.0).\n\nWhy: the format asks for semantic versioning, so that users can tell a breaking change from a fix.\n\nExample:\n    \"version\": \"v2\"\n\nFix: write \"version\": \"2.0.0\".";

crate::rules::fixture_test!("version_semver.json", VersionSemver);

pub(crate) fn check(version: &str, at: &Pointer, warnings: &mut Vec<Diagnostic>) {
    if semver::Version::parse(version).is_ok() {
        return;
    }
    let digits: Vec<&str> = version.trim_start_matches(['v', 'V']).split('.').collect();
    let help = match digits.as_slice() {
        [major] if major.parse::<u64>().is_ok() => format!("write \"{major}.0.0\""),
        [major, minor] if major.parse::<u64>().is_ok() && minor.parse::<u64>().is_ok() => {
            format!("write \"{major}.{minor}.0\"")
        }
        _ => "write MAJOR.MINOR.PATCH, as in \"2.1.0\"".to_owned(),
    };
    warnings.push(
        Diagnostic::at(Code::VersionSemver, at.clone(), format!("version {version:?} is not semantic versioning"))
            .with_help(help),
    );
}
