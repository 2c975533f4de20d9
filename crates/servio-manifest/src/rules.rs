//! The catalogue of rules: every stable code, its name, its severity and where it lives.
//!
//! Codes never change meaning once released: tools and CI configurations refer to them
//! (`servio check --allow W004`). `E` codes make a manifest invalid, `B` codes make the brief
//! ignored, `W` codes are lints. Each rule is one file, named as its code's name (`E020`
//! `https-url` is `https_url.rs`), in the folder of its kind, as a [`crate::Report`] lists them:
//! `E` in `src/errors/`, `B` in `src/brief_errors/`, `W` in `src/lints/`. The file's doc says
//! what the rule checks, its `EXPLANATION` is what `servio explain CODE` prints, and its fixture
//! (`https_url.json`, beside it) is a manifest that raises it, whose diagnostics are a snapshot
//! (`fixture_test!`, below). A new rule is that file, its fixture, a line in its folder's
//! `mod.rs` and a row here, naming its module; `xtask`'s tidy tests hold the names.

use crate::diagnostic::Severity;

macro_rules! rules {
    ($(
        $folder:ident, $severity:ident {$(
            $(#[$doc:meta])*
            $variant:ident = $code:literal, $name:literal, $module:ident;
        )*}
    )*) => {
        /// A stable rule code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $($( $(#[$doc])* $variant, )*)*
        }

        impl Code {
            /// Every code, in catalogue order.
            pub const ALL: &'static [Code] = &[$($(Code::$variant),*),*];

            /// The code as written in reports, such as `E020`.
            pub fn as_str(self) -> &'static str {
                match self { $($(Code::$variant => $code,)*)* }
            }

            /// The rule's kebab-case name, such as `https-url`.
            pub fn name(self) -> &'static str {
                match self { $($(Code::$variant => $name,)*)* }
            }

            /// Error or warning. Brief (`B`) codes are errors of the brief.
            pub fn severity(self) -> Severity {
                match self { $($(Code::$variant => Severity::$severity,)*)* }
            }

            /// What the rule checks, why, an example and the fix, as Markdown-like text: the
            /// `EXPLANATION` of the rule's file.
            pub fn explanation(self) -> &'static str {
                match self { $($(Code::$variant => crate::$folder::$module::EXPLANATION,)*)* }
            }

            /// The rule's fixture, a manifest that raises it (beside the rule's file).
            #[cfg(test)]
            fn fixture(self) -> &'static str {
                match self { $($(Code::$variant => crate::$folder::$module::FIXTURE,)*)* }
            }
        }
    };
}

rules! {
    // `E` codes, in `src/errors/`: the manifest is invalid.
    errors, Error {
        /// The document is not syntactically valid JSON.
        JsonSyntax = "E001", "json-syntax", json_syntax;

        /// The top level is not an object.
        TopLevelObject = "E002", "top-level-object", top_level_object;

        /// An object has the same member name twice.
        DuplicateMember = "E003", "duplicate-member", duplicate_member;

        /// Nesting is deeper than 128 levels.
        NestingDepth = "E004", "nesting-depth", nesting_depth;

        /// A required member is missing.
        RequiredMember = "E010", "required-member", required_member;

        /// A member has the wrong JSON type.
        MemberType = "E011", "member-type", member_type;

        /// A required string is empty or only white space.
        BlankString = "E012", "blank-string", blank_string;

        /// `server.url` or an OAuth URL is not an absolute https URL.
        HttpsUrl = "E020", "https-url", https_url;

        /// `auth.type` is not a known authentication method.
        AuthType = "E030", "auth-type", auth_type;

        /// Two tools have the same name.
        ToolNameUnique = "E040", "tool-name-unique", tool_name_unique;

        /// A tool name has characters outside `A-Z a-z 0-9 _ . -`.
        ToolNameCharacters = "E041", "tool-name-characters", tool_name_characters;

        /// An `input_schema` is not a valid JSON Schema.
        SchemaValid = "E050", "schema-valid", schema_valid;

        /// The root of an `input_schema` does not declare `"type": "object"`.
        SchemaRootObject = "E051", "schema-root-object", schema_root_object;

        /// A subschema uses a type outside the supported set.
        SchemaSupportedType = "E052", "schema-supported-type", schema_supported_type;

        /// A `$ref` or `$dynamicRef` resolves neither inside its `input_schema` nor to a bundled
        /// meta-schema.
        SchemaRef = "E053", "schema-ref", schema_ref;

        /// An `input_schema` unfolds, through its references, to more subschemas than any call
        /// may evaluate.
        SchemaExpansion = "E054", "schema-expansion", schema_expansion;

        /// A `pattern` or `patternProperties` key cannot be matched in linear time: it uses
        /// look-around or a backreference, or is too long or too large to compile.
        SchemaLinearPattern = "E055", "schema-linear-pattern", schema_linear_pattern;
    }

    // `B` codes, in `src/brief_errors/`: the brief is ignored, the manifest stays valid.
    brief_errors, Error {
        /// A `brief` has a member of the wrong type or is missing `metrics`.
        BriefShape = "B001", "brief-shape", brief_shape;

        /// A metric key does not match the key grammar.
        MetricKey = "B010", "metric-key", metric_key;

        /// A metric key occurs twice in the brief.
        MetricKeyUnique = "B011", "metric-key-unique", metric_key_unique;

        /// A metric names a tool that is not in the manifest.
        MetricTool = "B020", "metric-tool", metric_tool;

        /// A metric's `args`, with sample placeholder values, do not match the tool's schema.
        MetricArgs = "B030", "metric-args", metric_args;

        /// `args` has an unknown or malformed `{{...}}` placeholder, or one in a member name.
        Placeholder = "B031", "placeholder", placeholder;

        /// A `valuePath` is empty or malformed.
        ValuePath = "B040", "value-path", value_path;

        /// A `granularity` is not `hour`, `day`, `week` or `month`.
        Granularity = "B050", "granularity", granularity;
    }

    // `W` codes, in `src/lints/`: lints; the manifest stays valid.
    lints, Warning {
        /// `version` is not semantic versioning.
        VersionSemver = "W001", "version-semver", version_semver;

        /// A tool name is not in the `namespace.actionTarget` form.
        ToolNameConvention = "W002", "tool-name-convention", tool_name_convention;

        /// A tool description is too short to be useful.
        DescriptionVague = "W003", "description-vague", description_vague;

        /// A schema property has no `description`.
        PropertyDescription = "W004", "property-description", property_description;

        /// A `required` name is not among the schema's `properties`.
        RequiredInProperties = "W005", "required-in-properties", required_in_properties;

        /// A `default` does not validate against its own schema.
        DefaultValid = "W006", "default-valid", default_valid;

        /// A member the format does not define.
        UnknownField = "W007", "unknown-field", unknown_field;

        /// `tools` is empty.
        ToolsEmpty = "W008", "tools-empty", tools_empty;

        /// A prefixed tool name is longer than 64 characters.
        PrefixedNameLength = "W009", "prefixed-name-length", prefixed_name_length;

        /// A metric key's period segment contradicts its granularity.
        MetricKeyGranularity = "W010", "metric-key-granularity", metric_key_granularity;

        /// A string or member name holds characters a person does not see (tag characters,
        /// bidirectional controls, zero-width characters).
        HiddenText = "W011", "hidden-text", hidden_text;
    }
}

/// Where the rules' pages live by default: each rule's page is `{base}/rules/{CODE}`
/// ([`Code::page`]). A platform serves them under its own public URL, and `servio check
/// --docs-url` (`SERVIO_DOCS_URL`) names that base for links made offline (SARIF's `helpUri`).
/// This is the one place the scheme is written.
pub const DOCS_BASE: &str = "https://servio.dev";

impl Code {
    /// The rule's page under the docs `base` (a URL without a trailing `/`, such as
    /// [`DOCS_BASE`]): `https://servio.dev/rules/E020`.
    pub fn page(self, base: &str) -> String {
        format!("{}/rules/{}", base.trim_end_matches('/'), self.as_str())
    }

    /// Looks a code up by its text (`e020` and `E020` alike) or by its name (`https-url`).
    pub fn from_text(text: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|code| code.as_str().eq_ignore_ascii_case(text) || code.name() == text)
    }

    /// True for the brief's own codes, whose diagnostics make the brief ignored.
    pub fn is_brief(self) -> bool {
        self.as_str().starts_with('B')
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The test of a rule's fixture, in the rule's file: the manifest `$file`, beside it, raises
/// `$code`, and what [`crate::check`] says of it is a snapshot (`snapshots/`, beside the file).
/// It also makes the fixture the rule's `FIXTURE`, which the catalogue's own test reads for
/// every code, so a row whose file has no fixture does not build.
macro_rules! fixture_test {
    ($file:literal, $code:ident) => {
        /// The rule's fixture: a manifest that raises it.
        #[cfg(test)]
        pub(crate) const FIXTURE: &str = include_str!($file);

        #[cfg(test)]
        #[test]
        fn the_fixture_raises_it() {
            insta::assert_snapshot!(crate::rules::fixture_report(FIXTURE, crate::Code::$code));
        }
    };
}
pub(crate) use fixture_test;

/// What [`crate::check`] says of `source`, one diagnostic a line (`line:column CODE message`,
/// then its help), for a rule's snapshot.
///
/// # Panics
/// When `code` is not among what it says: a rule's fixture must raise its rule.
#[cfg(test)]
pub(crate) fn fixture_report(source: &str, code: Code) -> String {
    let report = crate::check(source.as_bytes(), &crate::CheckOptions::default());
    let all = report.errors.iter().chain(&report.brief_errors).chain(&report.warnings);
    assert!(all.clone().any(|d| d.code == code), "the fixture does not raise {}", code.as_str());
    let lines = all.map(|d| {
        let help = d.help.as_deref().map(|help| format!("\n  = help: {help}")).unwrap_or_default();
        format!("{}:{} {} {}{help}", d.line, d.column, d.code.as_str(), d.message)
    });
    lines.collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            assert!(seen.insert(code.as_str()), "duplicate code {code}");
            assert!(seen.insert(code.name()), "duplicate name {}", code.name());
            let expected = match code.as_str().as_bytes()[0] {
                b'W' => Severity::Warning,
                _ => Severity::Error,
            };
            assert_eq!(code.severity(), expected, "{code}");
            let text = code.explanation();
            assert!(text.contains("Example:") && text.contains("Fix:") && text.contains("Why:"), "{code}");
        }
    }

    #[test]
    fn a_rules_page_is_its_code_under_the_docs_base() {
        assert_eq!(Code::HttpsUrl.page(DOCS_BASE), "https://servio.dev/rules/E020");
        assert_eq!(Code::UnknownField.page("https://platform.example/"), "https://platform.example/rules/W007");
    }

    #[test]
    fn lookup_accepts_code_or_name() {
        assert_eq!(Code::from_text("w004"), Some(Code::PropertyDescription));
        assert_eq!(Code::from_text("https-url"), Some(Code::HttpsUrl));
        assert_eq!(Code::from_text("X999"), None);
    }

    /// Every code has a fixture that raises it; its snapshot is the test in the rule's file.
    #[test]
    fn every_rule_has_a_fixture_that_raises_it() {
        for &code in Code::ALL {
            fixture_report(code.fixture(), code);
        }
    }
}
