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

#[test]
fn base_is_valid_and_clean() {
    let found = run(Set("/name", json!("DevCommunity Forum")));
    assert_eq!(found, Found { errors: vec![], warnings: vec![], brief: BriefStatus::Valid, brief_errors: vec![] });
}

#[test]
fn document_rules() {
    use Code::*;
    errors(Text("{\"name\": \"x\",}"), &[("", JsonSyntax)]);
    errors(Text("[1, 2]"), &[("", TopLevelNotObject)]);
    errors(Text(""), &[("", JsonSyntax)]);
    let deep = format!("{{\"name\": {}{}}}", "[".repeat(128), "]".repeat(128));
    errors(Text(Box::leak(deep.into_boxed_str())), &[("", NestingTooDeep)]);
    errors(
        Text(
            r#"{"name": "a", "name": "b", "version": "1.0.0", "server": {"url": "https://a.example"}, "auth": {"type": "bearer"}, "tools": []}"#,
        ),
        &[("/name", DuplicateMember)],
    );
    errors(Remove("/name"), &[("/name", MissingMember)]);
    errors(Remove("/version"), &[("/version", MissingMember)]);
    errors(Remove("/server"), &[("/server", MissingMember)]);
    errors(Remove("/auth"), &[("/auth", MissingMember)]);
    errors(Set("/name", json!("  ")), &[("/name", BlankString)]);
    errors(Set("/version", json!(2)), &[("/version", WrongType)]);
    errors(Set("/tools", json!({})), &[("/tools", WrongType)]);
    errors(Set("/server", json!("https://a.example")), &[("/server", WrongType)]);
    errors(Set("/description", json!(5)), &[("/description", WrongType)]);
    errors(Set("/verification", json!(["x"])), &[("/verification", WrongType)]);
}

#[test]
fn url_and_auth_rules() {
    use Code::*;
    errors(Set("/server/url", json!("http://a.example.com")), &[("/server/url", InvalidUrl)]);
    errors(Set("/server/url", json!("/api/servio")), &[("/server/url", InvalidUrl)]);
    errors(Set("/server/url", json!("https://user:pw@a.example.com")), &[("/server/url", InvalidUrl)]);
    errors(Set("/server/url", json!("https://a.example.com/#x")), &[("/server/url", InvalidUrl)]);
    errors(Remove("/server/url"), &[("/server/url", MissingMember)]);
    errors(Set("/auth/type", json!("apikey")), &[("/auth/type", UnknownAuthType)]);
    errors(
        Set("/auth", json!({"type": "oauth2", "authorization_url": "https://a.example/authorize"})),
        &[("/auth/token_url", MissingMember)],
    );
    errors(
        Set(
            "/auth",
            json!({"type": "oauth2", "authorization_url": "http://a.example/a", "token_url": "https://a.example/t"}),
        ),
        &[("/auth/authorization_url", InvalidUrl)],
    );
    errors(
        Set(
            "/auth",
            json!({"type": "oauth2", "authorization_url": "https://a.example/a", "token_url": "https://a.example/t", "scopes": ["read", 5, null]}),
        ),
        &[("/auth/scopes/1", WrongType), ("/auth/scopes/2", WrongType)],
    );
    errors(Set("/auth/scopes", json!("read")), &[("/auth/scopes", WrongType)]);
}

#[test]
fn tool_rules() {
    use Code::*;
    errors(Remove("/tools/1/description"), &[("/tools/1/description", MissingMember)]);
    errors(Remove("/tools/0/name"), &[("/tools/0/name", MissingMember)]);
    errors(Remove("/tools/0/input_schema"), &[("/tools/0/input_schema", MissingMember)]);
    errors(Set("/tools/1/name", json!("forum.searchThreads")), &[("/tools/1/name", DuplicateToolName)]);
    errors(Set("/tools/0/name", json!("forum search")), &[("/tools/0/name", ToolNameCharacters)]);
    errors(Set("/tools/0/input_schema/type", json!("array")), &[("/tools/0/input_schema/type", SchemaRootType)]);
    errors(Remove("/tools/0/input_schema/type"), &[("/tools/0/input_schema/type", SchemaRootType)]);
    errors(
        Set("/tools/0/input_schema/properties/limit/type", json!("integr")),
        &[("/tools/0/input_schema/properties/limit/type", UnsupportedType)],
    );
    errors(
        Set("/tools/0/input_schema/properties/limit/type", json!(["integer", "null"])),
        &[("/tools/0/input_schema/properties/limit/type/1", UnsupportedType)],
    );
    errors(
        Set("/tools/0/input_schema/properties/query/pattern", json!("[")),
        &[("/tools/0/input_schema/properties/query/pattern", InvalidSchema)],
    );
    errors(Set("/tools/0/input_schema/required", json!("query")), &[("/tools/0/input_schema/required", InvalidSchema)]);
    errors(Set("/tools/0", json!("forum.searchThreads")), &[("/tools/0", WrongType)]);
}

#[test]
fn lints() {
    use Code::*;
    warns(Set("/version", json!("v2")), &[("/version", VersionNotSemver)]);
    warns(Set("/tools/0/name", json!("search_threads")), &[("/tools/0/name", ToolNameConvention)]);
    warns(Set("/tools/0/description", json!("Search threads")), &[("/tools/0/description", VagueDescription)]);
    warns(
        Remove("/tools/0/input_schema/properties/query/description"),
        &[("/tools/0/input_schema/properties/query", PropertyDescription)],
    );
    warns(
        Set("/tools/0/input_schema/required", json!(["query", "qeury"])),
        &[("/tools/0/input_schema/required/1", RequiredNotInProperties)],
    );
    warns(
        Set("/tools/0/input_schema/properties/limit/default", json!("10")),
        &[("/tools/0/input_schema/properties/limit/default", DefaultMismatch)],
    );
    warns(Set("/breif", json!({})), &[("/breif", UnknownField)]);
    warns(Set("/tools/0/inputSchema", json!({})), &[("/tools/0/inputSchema", UnknownField)]);
    warns(Set("/brief/metrics/0/value_path", json!("x")), &[("/brief/metrics/0/value_path", UnknownField)]);
    warns(
        Set("/tools/0/name", json!("reporting.getQuarterlyRevenueBreakdownByRegionAndProductCategory")),
        &[("/tools/0/name", PrefixedNameTooLong)],
    );
    warns(
        Set("/brief/metrics/0/granularity", json!("hour")),
        &[("/brief/metrics/0/granularity", KeyGranularityMismatch)],
    );
    warns(
        Set("/brief/metrics/0/key", json!("sales.revenue.weekly")),
        &[("/brief/metrics/0/granularity", KeyGranularityMismatch)],
    );
    let found = run(Text(
        r#"{"name": "x", "version": "1.0.0", "server": {"url": "https://a.example"}, "auth": {"type": "bearer"}, "tools": []}"#,
    ));
    assert_eq!(found.warnings, pairs(&[("/tools", EmptyTools)]));
}

#[test]
fn brief_rules() {
    use Code::*;
    ignores_brief(Set("/brief", json!([])), &[("/brief", BriefShape)]);
    ignores_brief(Set("/brief", json!({})), &[("/brief/metrics", BriefShape)]);
    ignores_brief(Set("/brief/metrics", json!({})), &[("/brief/metrics", BriefShape)]);
    ignores_brief(Set("/brief/metrics/0/key", json!("Sales.Revenue")), &[("/brief/metrics/0/key", MetricKey)]);
    ignores_brief(Remove("/brief/metrics/0/key"), &[("/brief/metrics/0/key", BriefShape)]);
    ignores_brief(Remove("/brief/metrics/0/valuePath"), &[("/brief/metrics/0/valuePath", BriefShape)]);
    ignores_brief(
        Set("/brief/metrics/0/tool", json!("getSalesSummary")),
        &[("/brief/metrics/0/tool", UnknownMetricTool)],
    );
    ignores_brief(
        Set("/brief/metrics/0/valuePath", json!("$.data.totals.revenue")),
        &[("/brief/metrics/0/valuePath", ValuePath)],
    );
    ignores_brief(
        Set("/brief/metrics/0/valuePath", json!("data..revenue")),
        &[("/brief/metrics/0/valuePath", ValuePath)],
    );
    ignores_brief(
        Set("/brief/metrics/0/valuePath", json!("rows.*.count")),
        &[("/brief/metrics/0/valuePath", ValuePath)],
    );
    ignores_brief(
        Set("/brief/metrics/0/granularity", json!("daily")),
        &[("/brief/metrics/0/granularity", Granularity)],
    );
    ignores_brief(Set("/brief/metrics/0/unit", json!(5)), &[("/brief/metrics/0/unit", BriefShape)]);
    ignores_brief(
        Set("/brief/metrics/0/args/from", json!("{{periodstart}}")),
        &[("/brief/metrics/0/args/from", Placeholder)],
    );
    ignores_brief(
        Set("/brief/metrics/0/args/from", json!("{{periodStart")),
        &[("/brief/metrics/0/args/from", Placeholder)],
    );
    ignores_brief(
        Set("/brief/metrics/0/args/x{{timezone}}", json!("a")),
        &[("/brief/metrics/0/args/x{{timezone}}", Placeholder)],
    );
    ignores_brief(Remove("/brief/metrics/0/args/to"), &[("/brief/metrics/0/args/to", MetricArgs)]);
    ignores_brief(
        Remove("/brief/metrics/0/args"),
        &[("/brief/metrics/0/args/from", MetricArgs), ("/brief/metrics/0/args/to", MetricArgs)],
    );
    ignores_brief(Set("/brief/metrics/0/args/to", json!(5)), &[("/brief/metrics/0/args/to", MetricArgs)]);
    ignores_brief(Set("/brief/metrics/0/args", json!([])), &[("/brief/metrics/0/args", MetricArgs)]);
    ignores_brief(
        Set("/brief/metrics/1", base()["brief"]["metrics"][0].clone()),
        &[("/brief/metrics/1/key", DuplicateMetricKey)],
    );
    ignores_brief(Set("/brief/metrics/1", json!("sales.orders.daily")), &[("/brief/metrics/1", BriefShape)]);
    // An empty metrics array is a valid brief that declares nothing.
    let found = run(Set("/brief/metrics", json!([])));
    assert_eq!((found.brief, found.errors.len()), (BriefStatus::Valid, 0));
}
