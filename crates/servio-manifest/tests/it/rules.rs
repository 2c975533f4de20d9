//! One line per rule: a valid base manifest, one change, and the codes and pointers expected.

use serde_json::{Value, json};
use servio_manifest::{BriefStatus, CheckOptions, Code, check};

fn base() -> Value {
    json!({
        "name": "DevCommunity Forum",
        "version": "2.1.0",
        "description": "Web developer community forum",
        "server": { "url": "https://devcommunity.example.com/api/servio" },
        "auth": { "type": "bearer" },
        "tools": [
            {
                "name": "forum.searchThreads",
                "description": "Search forum threads by keyword and return the matching titles.",
                "input_schema": { "type": "object", "properties": {
                    "query": { "type": "string", "description": "Words to look for" },
                    "limit": { "type": "integer", "default": 10, "description": "Max results" } },
                    "required": ["query"] }
            },
            {
                "name": "shop.getSalesSummary",
                "description": "Summarise sales for a date range: revenue and order count.",
                "input_schema": { "type": "object", "properties": {
                    "from": { "type": "string", "description": "First date" },
                    "to": { "type": "string", "description": "Last date" },
                    "tz": { "type": "string", "description": "IANA zone" } },
                    "required": ["from", "to"] }
            }
        ],
        "brief": { "metrics": [{
            "key": "sales.revenue.daily", "tool": "shop.getSalesSummary",
            "args": { "from": "{{periodStart}}", "to": "{{periodEnd}}", "tz": "{{timezone}}" },
            "valuePath": "data.totals.revenue", "unit": "ILS", "granularity": "day"
        }]}
    })
}

/// A change to the base manifest: set or remove the member at a pointer, or replace the
/// whole text.
enum Change {
    Set(&'static str, Value),
    Remove(&'static str),
    Text(&'static str),
}
use Change::*;

impl Change {
    /// The pointer a `Set` or `Remove` acts on.
    fn pointer(&self) -> &'static str {
        match self {
            Set(pointer, _) | Remove(pointer) => pointer,
            Text(_) => "",
        }
    }
}

#[derive(Debug, PartialEq)]
struct Found {
    errors: Vec<(String, Code)>,
    warnings: Vec<(String, Code)>,
    brief: BriefStatus,
    brief_errors: Vec<(String, Code)>,
}

fn apply(change: Change) -> Vec<u8> {
    let mut doc = base();
    match change {
        Set(pointer, value) => {
            let (parent, name) = pointer.rsplit_once('/').unwrap();
            match doc.pointer_mut(parent).unwrap() {
                Value::Object(map) => {
                    map.insert(name.replace("~1", "/").replace("~0", "~"), value);
                }
                Value::Array(items) => {
                    let i: usize = name.parse().unwrap();
                    if i < items.len() { items[i] = value } else { items.push(value) }
                }
                _ => panic!("{pointer}"),
            }
        }
        Remove(pointer) => {
            let (parent, name) = pointer.rsplit_once('/').unwrap();
            doc.pointer_mut(parent).unwrap().as_object_mut().unwrap().shift_remove(name);
        }
        Text(text) => return text.as_bytes().to_vec(),
    }
    serde_json::to_vec_pretty(&doc).unwrap()
}

fn run(change: Change) -> Found {
    let report = check(&apply(change), &CheckOptions::default());
    let list = |d: &[servio_manifest::Diagnostic]| d.iter().map(|d| (d.pointer.to_string(), d.code)).collect();
    for d in report.errors.iter().chain(&report.warnings).chain(&report.brief_errors) {
        assert!(d.line >= 1 && d.column >= 1, "{d:?}");
        assert!(!d.message.ends_with('.') && !d.message.is_empty(), "message style: {:?}", d.message);
    }
    Found {
        errors: list(&report.errors),
        warnings: list(&report.warnings),
        brief: report.brief_status,
        brief_errors: list(&report.brief_errors),
    }
}

fn pairs(items: &[(&str, Code)]) -> Vec<(String, Code)> {
    items.iter().map(|(p, c)| (p.to_string(), *c)).collect()
}

/// The change yields exactly these errors (and the brief stays valid).
fn errors(change: Change, want: &[(&str, Code)]) {
    let found = run(change);
    assert_eq!(found.errors, pairs(want), "{found:#?}");
}

/// The change yields these warnings and no errors.
fn warns(change: Change, want: &[(&str, Code)]) {
    let found = run(change);
    assert_eq!((found.errors, found.warnings), (vec![], pairs(want)));
}

/// The change makes the brief ignored with exactly these errors; the manifest stays valid.
fn ignores_brief(change: Change, want: &[(&str, Code)]) {
    let found = run(change);
    assert_eq!(found.errors, vec![], "{found:#?}");
    assert_eq!((found.brief, found.brief_errors), (BriefStatus::Ignored, pairs(want)));
}

/// [`errors`], [`warns`] and [`ignores_brief`] for the usual case: one diagnostic, at the
/// pointer the change sets or removes.
fn errors_at(change: Change, code: Code) {
    let pointer = change.pointer();
    errors(change, &[(pointer, code)]);
}

fn warns_at(change: Change, code: Code) {
    let pointer = change.pointer();
    warns(change, &[(pointer, code)]);
}

fn ignores_brief_at(change: Change, code: Code) {
    let pointer = change.pointer();
    ignores_brief(change, &[(pointer, code)]);
}

#[test]
fn base_is_valid_and_clean() {
    let found = run(Set("/name", json!("DevCommunity Forum")));
    assert_eq!(found, Found { errors: vec![], warnings: vec![], brief: BriefStatus::Valid, brief_errors: vec![] });
}

#[test]
fn document_rules() {
    use Code::*;
    errors(Text("{\"name\": \"x\",}"), &[("", JsonSyntax)]);
    errors(Text("[1, 2]"), &[("", TopLevelObject)]);
    errors(Text(""), &[("", JsonSyntax)]);
    let deep = format!("{{\"name\": {}{}}}", "[".repeat(128), "]".repeat(128));
    errors(Text(Box::leak(deep.into_boxed_str())), &[("", NestingDepth)]);
    errors(
        Text(
            r#"{"name": "a", "name": "b", "version": "1.0.0", "server": {"url": "https://a.example"}, "auth": {"type": "bearer"}, "tools": []}"#,
        ),
        &[("/name", DuplicateMember)],
    );
    errors_at(Remove("/name"), RequiredMember);
    errors_at(Remove("/version"), RequiredMember);
    errors_at(Remove("/server"), RequiredMember);
    errors_at(Remove("/auth"), RequiredMember);
    errors_at(Set("/name", json!(" ")), BlankString);
    errors_at(Set("/version", json!(2)), MemberType);
    errors_at(Set("/tools", json!({})), MemberType);
    errors_at(Set("/server", json!("https://a.example")), MemberType);
    errors_at(Set("/description", json!(5)), MemberType);
    errors_at(Set("/verification", json!(["x"])), MemberType);
}

#[test]
fn url_and_auth_rules() {
    use Code::*;
    for url in ["http://a.example.com", "/api/servio", "https://user:pw@a.example.com", "https://a.example.com/#x"] {
        errors_at(Set("/server/url", json!(url)), HttpsUrl);
    }
    errors_at(Remove("/server/url"), RequiredMember);
    errors_at(Set("/auth/type", json!("apikey")), AuthType);
    errors(
        Set("/auth", json!({"type": "oauth2", "authorization_url": "https://a.example/authorize"})),
        &[("/auth/token_url", RequiredMember)],
    );
    errors(
        Set(
            "/auth",
            json!({"type": "oauth2", "authorization_url": "http://a.example/a", "token_url": "https://a.example/t"}),
        ),
        &[("/auth/authorization_url", HttpsUrl)],
    );
    errors(
        Set(
            "/auth",
            json!({"type": "oauth2", "authorization_url": "https://a.example/a", "token_url": "https://a.example/t", "scopes": ["read", 5, null]}),
        ),
        &[("/auth/scopes/1", MemberType), ("/auth/scopes/2", MemberType)],
    );
    errors_at(Set("/auth/scopes", json!("read")), MemberType);
}

#[test]
fn tool_rules() {
    use Code::*;
    errors_at(Remove("/tools/1/description"), RequiredMember);
    errors_at(Remove("/tools/0/name"), RequiredMember);
    errors_at(Remove("/tools/0/input_schema"), RequiredMember);
    errors_at(Set("/tools/1/name", json!("forum.searchThreads")), ToolNameUnique);
    errors_at(Set("/tools/0/name", json!("forum search")), ToolNameCharacters);
    errors_at(Set("/tools/0/input_schema/type", json!("array")), SchemaRootObject);
    errors_at(Remove("/tools/0/input_schema/type"), SchemaRootObject);
    errors_at(Set("/tools/0/input_schema/properties/limit/type", json!("integr")), SchemaSupportedType);
    errors(
        Set("/tools/0/input_schema/properties/limit/type", json!(["integer", "null"])),
        &[("/tools/0/input_schema/properties/limit/type/1", SchemaSupportedType)],
    );
    errors_at(Set("/tools/0/input_schema/properties/query/pattern", json!("[")), SchemaValid);
    errors_at(Set("/tools/0/input_schema/required", json!("query")), SchemaValid);
    errors_at(Set("/tools/0", json!("forum.searchThreads")), MemberType);
}

#[test]
fn lints() {
    use Code::*;
    warns_at(Set("/version", json!("v2")), VersionSemver);
    warns_at(Set("/tools/0/name", json!("search_threads")), ToolNameConvention);
    warns_at(Set("/tools/0/description", json!("Search threads")), DescriptionVague);
    warns(
        Remove("/tools/0/input_schema/properties/query/description"),
        &[("/tools/0/input_schema/properties/query", PropertyDescription)],
    );
    warns(
        Set("/tools/0/input_schema/required", json!(["query", "qeury"])),
        &[("/tools/0/input_schema/required/1", RequiredInProperties)],
    );
    warns_at(Set("/tools/0/input_schema/properties/limit/default", json!("10")), DefaultValid);
    warns_at(Set("/breif", json!({})), UnknownField);
    warns_at(Set("/tools/0/inputSchema", json!({})), UnknownField);
    warns_at(Set("/brief/metrics/0/value_path", json!("x")), UnknownField);
    warns_at(
        Set("/tools/0/name", json!("reporting.getQuarterlyRevenueBreakdownByRegionAndProductCategory")),
        PrefixedNameLength,
    );
    warns_at(Set("/brief/metrics/0/granularity", json!("hour")), MetricKeyGranularity);
    warns(
        Set("/brief/metrics/0/key", json!("sales.revenue.weekly")),
        &[("/brief/metrics/0/granularity", MetricKeyGranularity)],
    );
    let found = run(Text(
        r#"{"name": "x", "version": "1.0.0", "server": {"url": "https://a.example"}, "auth": {"type": "bearer"}, "tools": []}"#,
    ));
    assert_eq!(found.warnings, pairs(&[("/tools", ToolsEmpty)]));
}

#[test]
fn brief_rules() {
    use Code::*;
    ignores_brief_at(Set("/brief", json!([])), BriefShape);
    ignores_brief(Set("/brief", json!({})), &[("/brief/metrics", BriefShape)]);
    ignores_brief_at(Set("/brief/metrics", json!({})), BriefShape);
    ignores_brief_at(Set("/brief/metrics/0/key", json!("Sales.Revenue")), MetricKey);
    ignores_brief_at(Remove("/brief/metrics/0/key"), BriefShape);
    ignores_brief_at(Remove("/brief/metrics/0/valuePath"), BriefShape);
    ignores_brief_at(Set("/brief/metrics/0/tool", json!("getSalesSummary")), MetricTool);
    for path in ["$.data.totals.revenue", "data..revenue", "rows.*.count"] {
        ignores_brief_at(Set("/brief/metrics/0/valuePath", json!(path)), ValuePath);
    }
    ignores_brief_at(Set("/brief/metrics/0/granularity", json!("daily")), Granularity);
    ignores_brief_at(Set("/brief/metrics/0/unit", json!(5)), BriefShape);
    ignores_brief_at(Set("/brief/metrics/0/args/from", json!("{{periodstart}}")), Placeholder);
    ignores_brief_at(Set("/brief/metrics/0/args/from", json!("{{periodStart")), Placeholder);
    ignores_brief_at(Set("/brief/metrics/0/args/x{{timezone}}", json!("a")), Placeholder);
    ignores_brief_at(Remove("/brief/metrics/0/args/to"), MetricArgs);
    ignores_brief(
        Remove("/brief/metrics/0/args"),
        &[("/brief/metrics/0/args/from", MetricArgs), ("/brief/metrics/0/args/to", MetricArgs)],
    );
    ignores_brief_at(Set("/brief/metrics/0/args/to", json!(5)), MetricArgs);
    ignores_brief_at(Set("/brief/metrics/0/args", json!([])), MetricArgs);
    ignores_brief(
        Set("/brief/metrics/1", base()["brief"]["metrics"][0].clone()),
        &[("/brief/metrics/1/key", MetricKeyUnique)],
    );
    ignores_brief_at(Set("/brief/metrics/1", json!("sales.orders.daily")), BriefShape);
    // An empty metrics array is a valid brief that declares nothing.
    let found = run(Set("/brief/metrics", json!([])));
    assert_eq!((found.brief, found.errors.len()), (BriefStatus::Valid, 0));
}
