//! The catalogue of rules: every stable code, its severity and its explanation.
//!
//! Codes never change meaning once released: tools and CI configurations refer to them
//! (`servio check --allow W004`). `E` codes make a manifest invalid, `B` codes make the brief
//! ignored, `W` codes are lints.

use crate::diagnostic::Severity;

macro_rules! rules {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $code:literal, $name:literal, $severity:ident,
        explain: $explain:expr;
    )*) => {
        /// A stable rule code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        impl Code {
            /// Every code, in catalogue order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The code as written in reports, such as `E020`.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)* }
            }

            /// The rule's kebab-case name, such as `server-url`.
            pub fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            /// Error or warning. Brief (`B`) codes are errors of the brief.
            pub fn severity(self) -> Severity {
                match self { $(Code::$variant => Severity::$severity,)* }
            }

            /// What the rule checks, why, an example and the fix, as Markdown-like text.
            pub fn explanation(self) -> &'static str {
                match self { $(Code::$variant => $explain,)* }
            }
        }
    };
}

rules! {
    /// The document is not syntactically valid JSON.
    JsonSyntax = "E001", "json-syntax", Error,
    explain: "Checks that the manifest is syntactically valid JSON (RFC 8259).\n\nWhy: nothing else can be read from a document that does not parse. JSON allows no comments, no trailing commas and no single quotes.\n\nExample:\n    { \"name\": \"Forum\", }\n\nFix: remove the trailing comma, quote every member name with double quotes, and check that every bracket is closed.";

    /// The top level is not an object.
    TopLevelNotObject = "E002", "top-level-object", Error,
    explain: "Checks that the manifest's top level is a JSON object.\n\nWhy: every field of the manifest is a member of that object.\n\nExample:\n    [ { \"name\": \"Forum\" } ]\n\nFix: write the manifest as a single object `{ \"name\": ..., \"version\": ..., ... }`.";

    /// An object has the same member name twice.
    DuplicateMember = "E003", "duplicate-member", Error,
    explain: "Checks that no object has the same member name twice.\n\nWhy: JSON parsers disagree on which of two equal names wins, so the platform and your own tools could read different manifests from the same bytes.\n\nExample:\n    { \"name\": \"Forum\", \"name\": \"Shop\" }\n\nFix: keep one of the two members.";

    /// Nesting is deeper than 128 levels.
    NestingTooDeep = "E004", "nesting-depth", Error,
    explain: "Checks that arrays and objects are nested at most 128 levels deep (the top-level object is level 1).\n\nWhy: deep nesting is how a document exhausts a parser's stack; no real manifest needs it.\n\nExample:\n    { \"a\": [[[[[[ ... 130 levels ... ]]]]]] }\n\nFix: flatten the structure; an input_schema can use `$defs` and `$ref` instead of nesting.";

    /// A required member is missing.
    MissingMember = "E010", "required-member", Error,
    explain: "Checks that every required member is present: `name`, `version`, `server`, `server.url`, `auth`, `auth.type`, `tools`, and each tool's `name`, `description` and `input_schema` (and, in a brief, `metrics` and each metric's `key`, `tool` and `valuePath`).\n\nWhy: the platform cannot show, authenticate or call a site without them.\n\nExample:\n    { \"name\": \"Forum\", \"server\": { \"url\": \"https://forum.example.com/api\" } }\n\nFix: add the member the message names, at the pointer it gives.";

    /// A member has the wrong JSON type.
    WrongType = "E011", "member-type", Error,
    explain: "Checks that each known member has the JSON type the format gives it: strings for names, URLs and descriptions, an object for `server`, `auth` and each tool, an array for `tools` and `auth.scopes`.\n\nWhy: a number where a string belongs is almost always a mistake that would show up later as a confusing failure.\n\nExample:\n    \"version\": 2\n\nFix: write the value with the type the message names, for instance \"version\": \"2.0.0\".";

    /// A required string is empty or only white space.
    BlankString = "E012", "blank-string", Error,
    explain: "Checks that required strings are not empty and not only white space.\n\nWhy: an empty name or description is as good as a missing one, and harder to spot.\n\nExample:\n    \"name\": \"   \"\n\nFix: write the text, or remove the tool if it is a placeholder.";

    /// `server.url` or an OAuth URL is not an absolute https URL.
    InvalidUrl = "E020", "https-url", Error,
    explain: "Checks that `server.url`, `auth.authorization_url` and `auth.token_url` are absolute `https` URLs without user information (`user:pass@`) and without a fragment (`#...`).\n\nWhy: tool calls carry the user's credentials; over plain http anyone on the path can read them. Credentials in the URL leak into logs, and a fragment is never sent to a server.\n\nExample:\n    \"server\": { \"url\": \"http://forum.example.com/api/servio\" }\n\nFix: serve the API over HTTPS and write \"url\": \"https://forum.example.com/api/servio\".";

    /// `auth.type` is not a known authentication method.
    UnknownAuthType = "E030", "auth-type", Error,
    explain: "Checks that `auth.type` is `bearer` or `oauth2`.\n\nWhy: the platform knows how to authenticate in exactly these two ways.\n\nExample:\n    \"auth\": { \"type\": \"apikey\" }\n\nFix: use \"bearer\" for a token the user pastes, or \"oauth2\" with `authorization_url` and `token_url` for OAuth 2.0 with PKCE.";

    /// Two tools have the same name.
    DuplicateToolName = "E040", "tool-name-unique", Error,
    explain: "Checks that tool names are unique within the manifest. Each later occurrence is reported.\n\nWhy: tools are called by name; with two tools of one name, the platform cannot tell which one an AI meant.\n\nExample:\n    \"tools\": [ { \"name\": \"forum.search\", ... }, { \"name\": \"forum.search\", ... } ]\n\nFix: rename one of them, for instance `forum.searchPosts`.";

    /// A tool name has characters outside `A-Z a-z 0-9 _ . -`.
    ToolNameCharacters = "E041", "tool-name-characters", Error,
    explain: "Checks that tool names use only the characters `A-Z a-z 0-9 _ . -`.\n\nWhy: tool names travel in URL paths (`POST {server.url}/tools/{name}`) and, prefixed, into AI model APIs that accept only letters, digits, `_` and `-`.\n\nExample:\n    \"name\": \"forum search\"\n\nFix: write it as `forum.search` or `forum_search`.";

    /// An `input_schema` is not a valid JSON Schema.
    InvalidSchema = "E050", "schema-valid", Error,
    explain: "Checks each `input_schema` against the JSON Schema draft 2020-12 meta-schema, with format assertions, so that a `pattern` must be a valid regular expression.\n\nWhy: the platform validates every call's arguments against this schema before sending it; a schema it cannot read means the tool cannot be called safely.\n\nExample:\n    \"query\": { \"type\": \"string\", \"pattern\": \"[\" }\n\nFix: correct the keyword the message names; `required` is an array of unique strings, `properties` an object of schemas, `enum` an array.";

    /// The root of an `input_schema` does not declare `"type": "object"`.
    SchemaRootType = "E051", "schema-root-object", Error,
    explain: "Checks that each `input_schema` is an object whose root `type` is \"object\".\n\nWhy: tool arguments are sent as one JSON object; a schema for anything else cannot describe them.\n\nExample:\n    \"input_schema\": { \"type\": \"array\", \"items\": { \"type\": \"string\" } }\n\nFix: wrap the arguments in an object: { \"type\": \"object\", \"properties\": { \"items\": { \"type\": \"array\", ... } } }.";

    /// A subschema uses a type outside the supported set.
    UnsupportedType = "E052", "schema-supported-type", Error,
    explain: "Checks that every `type` in an `input_schema` (in any subschema: properties, items, allOf, $defs and the rest) is one of `string`, `number`, `integer`, `boolean`, `array`, `object`. In a type array each unsupported entry is reported on its own.\n\nWhy: these are the types the format supports; `null` and misspellings such as `int` or `strng` are not understood by AI clients.\n\nExample:\n    \"limit\": { \"type\": \"int\" }\n\nFix: use \"integer\" (or \"number\" for fractions); make a property optional by leaving it out of `required` instead of allowing null.";

    /// A `$ref` or `$dynamicRef` resolves neither inside its `input_schema` nor to a bundled
    /// meta-schema.
    UnresolvedRef = "E053", "schema-ref", Error,
    explain: "Checks that every `$ref` and `$dynamicRef` in an input_schema resolves inside that same input_schema (a `#/...` path, an `$anchor`, or an `$id` declared within it) or to one of the JSON Schema draft 2020-12 meta-schemas.\n\nWhy: the platform never fetches a schema from the network, so a reference to another document could never be followed when the tool is called: every call of the tool would fail.\n\nExample:\n    \"address\": { \"$ref\": \"https://example.com/schemas/address.json\" }\n\nFix: copy the referenced schema into the input_schema's `$defs` and refer to it there: \"$defs\": { \"address\": { ... } } and \"$ref\": \"#/$defs/address\".";

    /// An `input_schema` unfolds, through its references, to more subschemas than any call
    /// may evaluate.
    SchemaExpansion = "E054", "schema-expansion", Error,
    explain: "Checks that each input_schema, with every `$ref` and `$dynamicRef` unfolded, reaches at most 10,000 subschemas through its references. A subschema is counted once for each reference that reaches it; a reference back to a subschema it is already inside (a recursive schema, such as a tree whose nodes refer to the node definition) counts once, since what it costs follows the arguments. Subschemas written out in the schema are not counted: the manifest's size bounds them. The error is at the `$ref` of the schema's own properties (the first on the way from the root) whose unfolding passed the bound.\n\nWhy: the platform validates a tool's arguments against its schema before every call, and a schema whose references each refer twice to the next definition doubles the work at every level: 30 levels, 2.5 KB of manifest, are two billion evaluations per call. Independently of this rule, validating one set of arguments is refused when it would take more than 100,000 subschema evaluations (\"the arguments would take more than 100,000 schema evaluations to validate\"), so that a recursive schema with very deep arguments cannot hold the platform either.\n\nExample:\n    \"$defs\": { \"d0\": { \"allOf\": [ { \"$ref\": \"#/$defs/d1\" }, { \"$ref\": \"#/$defs/d1\" } ] }, \"d1\": { \"allOf\": [ { \"$ref\": \"#/$defs/d2\" }, { \"$ref\": \"#/$defs/d2\" } ] }, ... }\n\nFix: refer to a shared definition once where it applies (two references to the same subschema side by side check the same thing twice); write a deep structure as a recursive definition rather than one definition per level.";

    /// A `brief` has a member of the wrong type or is missing `metrics`.
    BriefShape = "B001", "brief-shape", Error,
    explain: "Checks the shape of the brief: `brief` is an object, `brief.metrics` an array of objects, and each metric has `key`, `tool` and `valuePath` strings, optional `args` object and optional `unit` string.\n\nWhy: a brief that fails validation is ignored in full, so that a typo costs collection instead of producing a silently wrong series.\n\nExample:\n    \"brief\": { \"metrics\": { \"key\": \"sales.revenue.daily\" } }\n\nFix: write `metrics` as an array: \"metrics\": [ { \"key\": ..., \"tool\": ..., \"valuePath\": ... } ].";

    /// A metric key does not match the key grammar.
    MetricKey = "B010", "metric-key", Error,
    explain: "Checks that each metric `key` matches ^[a-z0-9]+(\\.[a-z0-9_]+)+$: lowercase segments separated by dots, at least two of them.\n\nWhy: keys are platform-neutral slots that a shop, a forum and a course platform can share on one dashboard.\n\nExample:\n    \"key\": \"Sales.Revenue\"\n\nFix: write it in lowercase, and use a canonical key where one fits: sales.revenue.daily, sales.orders.daily, community.unanswered.count, content.published.daily.";

    /// A metric key occurs twice in the brief.
    DuplicateMetricKey = "B011", "metric-key-unique", Error,
    explain: "Checks that metric keys are unique within the brief. Each later occurrence is reported.\n\nWhy: one key is one series; two definitions would write over each other.\n\nExample:\n    [ { \"key\": \"sales.orders.daily\", ... }, { \"key\": \"sales.orders.daily\", ... } ]\n\nFix: give the second metric its own key.";

    /// A metric names a tool that is not in the manifest.
    UnknownMetricTool = "B020", "metric-tool", Error,
    explain: "Checks that each metric's `tool` names a tool of this manifest, exactly and without any site prefix.\n\nWhy: the platform calls that tool to collect the metric.\n\nExample:\n    \"tool\": \"getSalesSummary\"   (while the tool is named \"shop.getSalesSummary\")\n\nFix: write the tool's name exactly as in `tools`.";

    /// A metric's `args`, with sample placeholder values, do not match the tool's schema.
    MetricArgs = "B030", "metric-args", Error,
    explain: "Checks that each metric's `args` is an object and that, with its placeholders filled with sample values (periodStart and periodEnd 2026-08-20, timezone UTC, periodStartTime 2026-08-20T00:00:00+00:00, periodEndTime 2026-08-21T00:00:00+00:00), it validates against the tool's input_schema.\n\nWhy: a metric whose call the tool would refuse can never be collected.\n\nExample:\n    \"args\": { \"from\": \"{{periodStart}}\" }   (while the schema requires `to` as well)\n\nFix: supply every required argument, with the type the schema asks for.";

    /// `args` has an unknown or malformed `{{...}}` placeholder, or one in a member name.
    Placeholder = "B031", "placeholder", Error,
    explain: "Checks the placeholders in `args`: only {{periodStart}}, {{periodEnd}}, {{timezone}}, {{periodStartTime}} and {{periodEndTime}} exist, they are case-sensitive, and they work in string values only, not in member names.\n\nWhy: an unknown placeholder would be sent literally and the tool would answer for the wrong period; a typo must cost collection, never produce a wrong series.\n\nExample:\n    \"from\": \"{{periodstart}}\"\n\nFix: write {{periodStart}}.";

    /// A `valuePath` is empty or malformed.
    ValuePath = "B040", "value-path", Error,
    explain: "Checks that `valuePath` is a dotted path: non-empty segments separated by `.`, where a segment of digits indexes an array. It is not JSONPath: a leading `$`, brackets and `*` are errors.\n\nWhy: a selection the platform cannot audit is a selection it cannot trust.\n\nExample:\n    \"valuePath\": \"$.data.rows[0].count\"\n\nFix: write data.rows.0.count.";

    /// A `granularity` is not `hour`, `day`, `week` or `month`.
    Granularity = "B050", "granularity", Error,
    explain: "Checks that `granularity`, when present, is one of hour, day, week or month (the default is day).\n\nWhy: the granularity decides which period is collected and which period it is compared with.\n\nExample:\n    \"granularity\": \"daily\"\n\nFix: write \"day\".";

    /// `version` is not semantic versioning.
    VersionSemver = "W001", "version-semver", Warning,
    explain: crate::lints::version_semver::EXPLANATION;

    /// A tool name is not in the `namespace.actionTarget` form.
    ToolNameConvention = "W002", "tool-name-convention", Warning,
    explain: crate::lints::tool_name_convention::EXPLANATION;

    /// A tool description is too short to be useful.
    DescriptionVague = "W003", "description-vague", Warning,
    explain: crate::lints::description_vague::EXPLANATION;

    /// A schema property has no `description`.
    PropertyDescription = "W004", "property-description", Warning,
    explain: crate::lints::property_description::EXPLANATION;

    /// A `required` name is not among the schema's `properties`.
    RequiredInProperties = "W005", "required-in-properties", Warning,
    explain: crate::lints::required_in_properties::EXPLANATION;

    /// A `default` does not validate against its own schema.
    DefaultValid = "W006", "default-valid", Warning,
    explain: crate::lints::default_valid::EXPLANATION;

    /// A member the format does not define.
    UnknownField = "W007", "unknown-field", Warning,
    explain: crate::lints::unknown_field::EXPLANATION;

    /// `tools` is empty.
    ToolsEmpty = "W008", "tools-empty", Warning,
    explain: crate::lints::tools_empty::EXPLANATION;

    /// A prefixed tool name is longer than 64 characters.
    PrefixedNameLength = "W009", "prefixed-name-length", Warning,
    explain: crate::lints::prefixed_name_length::EXPLANATION;

    /// A metric key's period segment contradicts its granularity.
    MetricKeyGranularity = "W010", "metric-key-granularity", Warning,
    explain: crate::lints::metric_key_granularity::EXPLANATION;
}

impl Code {
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
    fn lookup_accepts_code_or_name() {
        assert_eq!(Code::from_text("w004"), Some(Code::PropertyDescription));
        assert_eq!(Code::from_text("https-url"), Some(Code::InvalidUrl));
        assert_eq!(Code::from_text("X999"), None);
    }
}
