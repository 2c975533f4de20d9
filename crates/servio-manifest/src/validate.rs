//! Validation of the manifest proper: top-level members, `server`, `auth` and `tools`
//! (interpretation §2). Builds the typed [`Manifest`] when nothing is wrong.

use std::collections::HashSet;

use serde_json::Value;

use crate::address::Site;
use crate::diagnostic::Diagnostic;
use crate::errors::{auth_type, https_url, tool_name_characters, tool_name_unique, top_level_object};
use crate::fields::{self, Object};
use crate::lints;
use crate::manifest::{Auth, Manifest, Tool};
use crate::pointer::Pointer;
use crate::rules::Code;
use crate::schema::{self, PatternSteps};

const TOP_LEVEL_FIELDS: [&str; 8] =
    ["name", "version", "description", "server", "auth", "tools", "verification", "brief"];
const SERVER_FIELDS: [&str; 1] = ["url"];
const AUTH_FIELDS: [&str; 4] = ["type", "authorization_url", "token_url", "scopes"];
const TOOL_FIELDS: [&str; 3] = ["name", "description", "input_schema"];

/// What validating the manifest proper found.
pub(crate) struct Validated<'a> {
    /// The manifest, when it has no errors.
    pub manifest: Option<Manifest>,
    /// The tools that could be read, valid or not, for checking the brief against.
    pub tools: Vec<ToolRef<'a>>,
}

/// A tool as far as the brief needs it: every tool with a name, so that a metric naming a
/// tool without a usable `input_schema` hears that the tool is broken, not that it is absent.
pub(crate) struct ToolRef<'a> {
    pub name: &'a str,
    /// `None` when the tool has no `input_schema` (its E010 says so).
    pub input_schema: Option<&'a Value>,
    /// Where the tool's `input_schema` is, or would be.
    pub schema_at: Pointer,
}

/// Validates the top-level object `root`, appending to `errors` and `warnings`.
pub(crate) fn validate<'a>(
    root: &'a Value,
    site: Option<&Site>,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
    pattern_steps: &mut PatternSteps,
) -> Validated<'a> {
    let at = Pointer::root();
    let Some(top) = top_level_object::check(root, errors) else {
        return Validated { manifest: None, tools: Vec::new() };
    };
    let first_error = errors.len();
    let doc = Object { map: top, at: at.clone(), codes: fields::MANIFEST };
    lints::unknown_field::check(top, &at, &TOP_LEVEL_FIELDS, warnings);

    let name = doc.required_str("name", errors);
    let version = doc.required_str("version", errors);
    if let Some(version) = version {
        lints::version_semver::check(version, &at.child("version"), warnings);
    }
    let description = doc.optional_str("description", errors);
    let verification = doc.optional_str("verification", errors);

    let server_url = doc.required_object("server", errors).and_then(|server| {
        lints::unknown_field::check(server.map, &server.at, &SERVER_FIELDS, warnings);
        let url = server.required_str("url", errors)?;
        https_url::check(url, &server.at.child("url"), "server.url", errors)
    });

    let auth = doc.required_object("auth", errors).and_then(|auth| {
        lints::unknown_field::check(auth.map, &auth.at, &AUTH_FIELDS, warnings);
        check_auth(&auth, errors)
    });

    // `server.url` stands in for the site when a manifest is checked from a file.
    let site = site.cloned().or_else(|| server_url.as_ref().and_then(Site::from_url));
    let tools_at = at.child("tools");
    let (tools, tool_refs) = match doc.required("tools", errors).and_then(|v| doc.array("tools", v, errors)) {
        Some(items) => check_tools(items, &tools_at, site.as_ref(), errors, warnings, pattern_steps),
        None => (Vec::new(), Vec::new()),
    };

    let manifest = match (name, version, server_url, auth) {
        (Some(name), Some(version), Some(server_url), Some(auth)) if errors.len() == first_error => Some(Manifest {
            name: name.to_owned(),
            version: version.to_owned(),
            description: description.map(str::to_owned),
            server_url,
            auth,
            tools,
            verification: verification.map(str::to_owned),
        }),
        _ => None,
    };
    Validated { manifest, tools: tool_refs }
}

fn check_auth(auth: &Object<'_>, errors: &mut Vec<Diagnostic>) -> Option<Auth> {
    let first = errors.len();
    let scopes = check_scopes(auth, errors);
    let kind = auth.required_str("type", errors)?;
    match kind {
        "bearer" => (errors.len() == first).then_some(Auth::Bearer),
        "oauth2" => {
            let mut url = |key: &str| {
                let text = auth.required_str(key, errors)?;
                https_url::check(text, &auth.at.child(key), &format!("auth.{key}"), errors)
            };
            let authorization_url = url("authorization_url");
            let token_url = url("token_url");
            match (authorization_url, token_url) {
                (Some(authorization_url), Some(token_url)) if errors.len() == first => {
                    Some(Auth::OAuth2 { authorization_url, token_url, scopes: scopes.unwrap_or_default() })
                }
                _ => None,
            }
        }
        other => {
            errors.push(auth_type::diagnostic(other, auth.at.child("type")));
            None
        }
    }
}

fn check_scopes(auth: &Object<'_>, errors: &mut Vec<Diagnostic>) -> Option<Vec<String>> {
    let value = auth.map.get("scopes")?;
    let items = auth.array("scopes", value, errors)?;
    let at = auth.at.child("scopes");
    let mut scopes = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(scope) => scopes.push(scope.to_owned()),
            None => errors.push(Diagnostic::at(
                Code::MemberType,
                at.index(i),
                format!("each scope must be a string, found {}", schema::kind_of(item)),
            )),
        }
    }
    Some(scopes)
}

fn check_tools<'a>(
    items: &'a [Value],
    at: &Pointer,
    site: Option<&Site>,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
    pattern_steps: &mut PatternSteps,
) -> (Vec<Tool>, Vec<ToolRef<'a>>) {
    if items.is_empty() {
        warnings.push(lints::tools_empty::diagnostic(at));
    }
    let mut tools = Vec::with_capacity(items.len());
    let mut refs = Vec::with_capacity(items.len());
    let mut names = HashSet::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if pattern_steps.abandoned() {
            break;
        }
        let tool_at = at.index(i);
        let Some(tool) = Object::expect(item, &tool_at, "each tool", fields::MANIFEST, errors) else {
            continue;
        };
        let first = errors.len();
        lints::unknown_field::check(tool.map, &tool_at, &TOOL_FIELDS, warnings);
        let name = tool.required_str("name", errors);
        if let Some(name) = name {
            check_tool_name(name, &tool_at.child("name"), &mut names, site, errors, warnings);
        }
        let description = tool.required_str("description", errors);
        if let Some(description) = description {
            lints::description_vague::check(description, &tool_at.child("description"), warnings);
        }
        let schema_at = tool_at.child("input_schema");
        let input_schema = tool.required("input_schema", errors);
        if let Some(input_schema) = input_schema {
            schema::check_input_schema(input_schema, &schema_at, errors, &mut |sub, path| {
                lints::schema_lints(sub, path, warnings, pattern_steps)
            });
        }
        if let Some(name) = name {
            refs.push(ToolRef { name, input_schema, schema_at });
        }
        if let (Some(name), Some(description), Some(input_schema), true) =
            (name, description, input_schema, errors.len() == first)
        {
            // The schema is moved out of the parsed document once the whole check is done
            // (see `crate::check`): cloning it here would double the memory of a big manifest.
            let _ = input_schema;
            tools.push(Tool { name: name.to_owned(), description: description.to_owned(), input_schema: Value::Null });
        }
    }
    (tools, refs)
}

/// A tool's name: unique (E040), of allowed characters (E041), then its lints.
fn check_tool_name<'a>(
    name: &'a str,
    at: &Pointer,
    seen: &mut HashSet<&'a str>,
    site: Option<&Site>,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) {
    tool_name_unique::check(name, at, seen, errors);
    if !tool_name_characters::check(name, at, errors) {
        return;
    }
    lints::tool_name_convention::check(name, at, warnings);
    if let Some(site) = site {
        lints::prefixed_name_length::check(site, name, at, warnings);
    }
}
