//! W001 `version-semver`: `version` should be semantic versioning (MAJOR.MINOR.PATCH).
//!
//! Users tell a breaking change from a fix by the version.

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

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
        Diagnostic::at(Code::VersionNotSemver, at.clone(), format!("version {version:?} is not semantic versioning"))
            .with_help(help),
    );
}
