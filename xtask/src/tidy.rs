//! The invariants of ARCHITECTURE.md that a machine can check. Each test names the rule it
//! holds and, when it fails, every place that breaks it, with what to do instead.
//!
//! Migration checksums are held where the migrations are rendered
//! (`servio-store/src/migrations.rs`, `rendered_migrations_are_byte_for_byte_the_shipped_ones`).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::{root, rust_files, shown};

/// Which workspace crates each crate may depend on (dev-dependencies aside): the layering of
/// ARCHITECTURE.md, from the pure format up to the binary. A new crate gets a row here and
/// in `crates/README.md`.
const LAYERS: &[(&str, &[&str])] = &[
    ("servio-manifest", &[]),
    ("servio-report", &["servio-manifest"]),
    ("servio-client", &["servio-manifest"]),
    ("servio-store", &[]),
    ("servio-demo-site", &[]),
    ("servio-core", &["servio-client", "servio-manifest", "servio-store"]),
    ("servio-collector", &["servio-client", "servio-core", "servio-manifest", "servio-store"]),
    (
        "servio-platform",
        &["servio-client", "servio-collector", "servio-core", "servio-manifest", "servio-report", "servio-store"],
    ),
    (
        "servio-cli",
        &[
            "servio-client",
            "servio-collector",
            "servio-core",
            "servio-demo-site",
            "servio-manifest",
            "servio-platform",
            "servio-report",
            "servio-store",
        ],
    ),
    ("xtask", &[]),
];

/// Outside crates a crate may not depend on, and why.
const FORBIDDEN: &[(&str, &[&str], &str)] = &[
    (
        "servio-manifest",
        &["tokio", "reqwest", "hyper", "axum", "sqlx", "annotate-snippets", "anstyle", "anstream", "owo-colors"],
        "the manifest crate is a pure library: no I/O, no network, no terminal (servio-report renders reports)",
    ),
    ("servio-client", &["sqlx", "axum"], "SQL lives in servio-store, routes in servio-platform"),
    ("servio-core", &["sqlx", "axum"], "SQL lives in servio-store, routes in servio-platform"),
    ("servio-collector", &["sqlx", "axum"], "SQL lives in servio-store, routes in servio-platform"),
    ("servio-platform", &["sqlx"], "SQL lives in servio-store"),
    ("servio-cli", &["sqlx"], "SQL lives in servio-store"),
    ("servio-report", &["tokio", "reqwest", "sqlx", "axum"], "rendering a report does no I/O"),
];

/// The workspace's packages as `cargo metadata` sees them.
fn packages() -> Vec<Value> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&output.stderr));
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    metadata["packages"].as_array().expect("packages").clone()
}

/// A package's dependencies that ship with it: normal and build, not dev.
fn shipped_dependencies(package: &Value) -> BTreeSet<String> {
    let dependencies = package["dependencies"].as_array().into_iter().flatten();
    dependencies
        .filter(|d| d["kind"].as_str() != Some("dev"))
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn crates_depend_only_on_the_layers_below_them() {
    let packages = packages();
    let ours: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut broken = Vec::new();
    for package in &packages {
        let name = package["name"].as_str().expect("a name");
        let Some((_, allowed)) = LAYERS.iter().find(|(crate_name, _)| *crate_name == name) else {
            broken
                .push(format!("{name}: not in LAYERS (xtask/src/tidy.rs); give it a row, and one in crates/README.md"));
            continue;
        };
        let dependencies = shipped_dependencies(package);
        for dependency in dependencies.iter().filter(|d| ours.contains(d.as_str())) {
            if !allowed.contains(&dependency.as_str()) {
                broken.push(format!("{name} depends on {dependency}, which LAYERS does not allow"));
            }
        }
        for (crate_name, forbidden, why) in FORBIDDEN.iter().filter(|(crate_name, ..)| *crate_name == name) {
            for dependency in dependencies.iter().filter(|d| forbidden.contains(&d.as_str())) {
                broken.push(format!("{crate_name} depends on {dependency}: {why}"));
            }
        }
    }
    assert!(broken.is_empty(), "crate layering broken:\n{}", broken.join("\n"));
}

/// Whether line `index` of `lines` carries an `allow` that says why: a `reason = "..."`, a
/// comment after it, or a comment (not a doc comment, which says what the item is) on the line
/// above.
fn allow_says_why(lines: &[&str], index: usize) -> bool {
    // The attribute runs to its closing `]`, over several lines once rustfmt wraps it.
    let end = (index..lines.len()).find(|&i| lines[i].contains(']')).unwrap_or(index);
    let attribute = lines[index..=end].join("\n");
    let after = &attribute[attribute.find("allow(").unwrap_or(0)..];
    let comment_above = index
        .checked_sub(1)
        .map(|above| lines[above].trim_start())
        .is_some_and(|above| above.starts_with("//") && !above.starts_with("///") && !above.starts_with("//!"));
    after.contains("reason =") || after.contains("//") || comment_above
}

#[test]
fn every_allow_says_why() {
    let mut broken = Vec::new();
    for path in rust_files(&root().join("crates")).into_iter().chain(rust_files(&root().join("xtask"))) {
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            let is_allow = trimmed.starts_with("#[allow(") || trimmed.starts_with("#![allow(");
            if is_allow && !allow_says_why(&lines, index) {
                broken.push(format!("{}:{}: {}", shown(&path), index + 1, trimmed));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "an #[allow] without a reason (add `reason = \"...\"`, or a comment beside or above it):\n{}",
        broken.join("\n")
    );
}

/// What the manifest crate's sources may not contain, and what each would mean.
const IMPURE: &[(&str, &str)] = &[
    ("\\x1b", "a terminal escape code"),
    ("\\u{1b}", "a terminal escape code"),
    ("\\033", "a terminal escape code"),
    ("std::io", "I/O"),
    ("std::fs", "file access"),
    ("std::net", "the network"),
    ("std::process", "processes"),
    ("std::env", "the environment"),
    ("println!", "printing"),
    ("eprintln!", "printing"),
    ("print!(", "printing"),
    ("eprint!(", "printing"),
];

#[test]
fn the_manifest_crate_does_no_io_and_knows_no_terminal() {
    let mut broken = Vec::new();
    for path in rust_files(&root().join("crates/servio-manifest/src")) {
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (pattern, meaning) in IMPURE.iter().filter(|(pattern, _)| line.contains(pattern)) {
                broken.push(format!("{}:{}: `{pattern}` ({meaning})", shown(&path), number + 1));
            }
        }
    }
    assert!(broken.is_empty(), "the manifest crate is a pure library:\n{}", broken.join("\n"));
}

#[test]
fn every_library_documents_its_public_items() {
    let mut libraries: Vec<_> = std::fs::read_dir(root().join("crates"))
        .expect("crates/")
        .flatten()
        .map(|entry| entry.path().join("src/lib.rs"))
        .filter(|lib| lib.exists())
        .collect();
    libraries.push(root().join("xtask/src/lib.rs"));
    let undocumented: Vec<String> = libraries
        .iter()
        .filter(|lib| !std::fs::read_to_string(lib).unwrap_or_default().contains("#![deny(missing_docs)]"))
        .map(|lib| shown(lib))
        .collect();
    assert!(undocumented.is_empty(), "libraries without #![deny(missing_docs)]:\n{}", undocumented.join("\n"));
}

#[test]
fn every_crate_takes_the_workspace_lints() {
    let manifests = std::fs::read_dir(root().join("crates"))
        .expect("crates/")
        .flatten()
        .map(|entry| entry.path().join("Cargo.toml"))
        .chain([root().join("xtask/Cargo.toml")])
        .filter(|manifest| manifest.exists());
    let without: Vec<String> =
        manifests.filter(|manifest| !takes_workspace_lints(manifest)).map(|manifest| shown(&manifest)).collect();
    assert!(without.is_empty(), "crates without `[lints] workspace = true`:\n{}", without.join("\n"));
}

fn takes_workspace_lints(manifest: &Path) -> bool {
    let text = std::fs::read_to_string(manifest).unwrap_or_default();
    text.split("\n[").any(|table| table.starts_with("lints]") && table.contains("workspace = true"))
}

/// `tools-empty` as `ToolsEmpty`.
fn upper_camel(kebab: &str) -> String {
    kebab
        .split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map(|first| first.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

/// The folder of the manifest crate that holds the rules of `code`'s kind: errors, the brief's
/// errors or lints, as a report lists them.
fn rule_folder(code: servio_manifest::Code) -> &'static str {
    match code.as_str().as_bytes()[0] {
        b'E' => "errors",
        b'B' => "brief_errors",
        _ => "lints",
    }
}

#[test]
fn each_rule_is_named_once_and_lives_in_its_own_file() {
    use servio_manifest::Code;
    let src = root().join("crates/servio-manifest/src");
    let mut broken = Vec::new();
    let mut expected_files = BTreeSet::new();
    for &code in Code::ALL {
        let (text, name) = (code.as_str(), code.name());
        let variant = format!("{code:?}");
        if variant != upper_camel(name) {
            broken.push(format!("{text}: the variant {variant} should be {} (its name is {name})", upper_camel(name)));
        }
        let folder = src.join(rule_folder(code));
        let stem = name.replace('-', "_");
        let file = folder.join(format!("{stem}.rs"));
        expected_files.insert(file.clone());
        let source = std::fs::read_to_string(&file).unwrap_or_default();
        if !source.starts_with(&format!("//! {text} `{name}`")) {
            broken.push(format!("{}: missing, or not starting with `//! {text} `{name}``", shown(&file)));
        }
        let fixture = folder.join(format!("{stem}.json"));
        if !fixture.exists() {
            broken.push(format!("{}: missing: a manifest that raises {text}, beside its rule", shown(&fixture)));
        }
        if !source.contains(&format!("crate::rules::fixture_test!(\"{stem}.json\", {variant});")) {
            broken.push(format!(
                "{}: its fixture's test belongs in the rule's file: `crate::rules::fixture_test!(\"{stem}.json\", {variant});`",
                shown(&file)
            ));
        }
        if !source.contains("pub(crate) const EXPLANATION: &str") {
            broken.push(format!("{}: its explanation (`EXPLANATION`) belongs in the rule's file", shown(&file)));
        }
    }
    // One rule a file: a rule folder holds its `mod.rs` and its rules' files, nothing else.
    for folder in ["errors", "brief_errors", "lints"] {
        let folder = src.join(folder);
        for path in rust_files(&folder) {
            if path != folder.join("mod.rs") && !expected_files.contains(&path) {
                broken.push(format!("{}: not the file of any code's name (crate::rules)", shown(&path)));
            }
        }
    }
    assert!(broken.is_empty(), "a rule's name is chosen once, as its code's name:\n{}", broken.join("\n"));
}

/// Change notices are told by the store's writes (`servio_store::Change`, ARCHITECTURE.md's
/// invariant): no source outside the notices' own module tells one by hand. Tests may, to
/// stand in for another process.
#[test]
fn notices_are_told_by_the_writes_not_by_hand() {
    let notices = root().join("crates/servio-platform/src/notices.rs");
    let mut broken = Vec::new();
    for crate_dir in std::fs::read_dir(root().join("crates")).expect("crates/").flatten() {
        for path in rust_files(&crate_dir.path().join("src")).into_iter().filter(|path| *path != notices) {
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            for (number, line) in text.lines().enumerate().filter(|(_, line)| line.contains("notices.told(")) {
                broken.push(format!("{}:{}: {}", shown(&path), number + 1, line.trim()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "a notice told by hand; make the store's write tell it (servio-store/src/changes.rs):\n{}",
        broken.join("\n")
    );
}

/// One word per idea (ARCHITECTURE.md's glossary): a worker *leases* jobs, and "claim" is the
/// Directory's word for ownership. The sources of jobs say no "claim", apart from the
/// `servio_jobs` gauge's `claimed` label, an outside contract kept in `metrics.rs`.
#[test]
fn jobs_are_leased_and_only_the_directory_claims() {
    let job_sources = [
        "crates/servio-store/src/jobs.rs",
        "crates/servio-store/src/sqlite.rs",
        "crates/servio-store/src/postgres.rs",
        "crates/servio-cli/src/worker_cmd.rs",
        "crates/servio-store/examples/lease_bench.rs",
    ];
    // The collector and the core know nothing of the Directory: all of them.
    let collector = rust_files(&root().join("crates/servio-collector/src"))
        .into_iter()
        .chain(rust_files(&root().join("crates/servio-core/src")));
    let mut broken = Vec::new();
    for path in job_sources.iter().map(|file| root().join(file)).chain(collector) {
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        let said = text.lines().enumerate().filter(|(_, line)| line.to_lowercase().contains("claim"));
        broken.extend(said.map(|(number, line)| format!("{}:{}: {}", shown(&path), number + 1, line.trim())));
    }
    assert!(broken.is_empty(), "jobs are leased, not claimed (the glossary):\n{}", broken.join("\n"));
}

/// The rows of the first Markdown table after the heading `heading` in `text`, each cell
/// trimmed (the header and its separator left out).
fn table_after(text: &str, heading: &str) -> Vec<Vec<String>> {
    let Some(start) = text.find(&format!("\n{heading}\n")) else { return Vec::new() };
    text[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|line| line.trim().trim_matches('|').split(" | ").map(|cell| cell.trim().to_owned()).collect())
        .collect()
}

/// Issue 41: every bound is in ARCHITECTURE.md's budget table (actor, resource, bound, where it
/// is enforced, the test that tries to exceed it), and the README's Limits table, which users
/// read, is that table without its last two columns: the two cannot drift apart, and no row
/// names a test that does not exist.
#[test]
fn the_readme_limits_are_the_budget_table() {
    let read = |file: &str| std::fs::read_to_string(root().join(file)).expect("a readable file");
    let budget = table_after(&read("ARCHITECTURE.md"), "## Budget");
    let limits = table_after(&read("README.md"), "## Limits");
    assert!(budget.len() > 10, "ARCHITECTURE.md's budget table under `## Budget`: {} rows", budget.len());
    let mut broken = Vec::new();
    for row in &budget {
        if row.len() != 5 || row.iter().any(String::is_empty) {
            broken.push(format!(
                "ARCHITECTURE.md: a budget row needs an actor, a resource, a bound, where and its test: {row:?}"
            ));
        } else {
            // A row whose bound has several parts may name a test for each, separated by commas.
            for missing in row[4].split(", ").filter_map(missing_test) {
                broken.push(format!("ARCHITECTURE.md: the budget row {:?} names {missing}", row[1]));
            }
        }
    }
    let expected: Vec<Vec<String>> = budget.iter().map(|row| row[..row.len().min(3)].to_vec()).collect();
    for (index, (want, have)) in expected.iter().zip(&limits).enumerate() {
        if want != have {
            broken.push(format!("row {}: the budget says {want:?}, the README {have:?}", index + 1));
        }
    }
    if expected.len() != limits.len() {
        broken.push(format!("the budget has {} rows, the README's Limits table {}", expected.len(), limits.len()));
    }
    assert!(
        broken.is_empty(),
        "the README's Limits table is the budget table less its last two columns:\n{}",
        broken.join("\n")
    );
}

/// Why `cell` (`` `path/under/crates.rs::test_name` ``) does not name a test: `None` when the
/// file under `crates/` has a function of that name marked as a test.
fn missing_test(cell: &str) -> Option<String> {
    let Some((path, name)) = cell.trim_matches('`').split_once("::") else {
        return Some(format!("{cell}, not a test as `file.rs::test_name`"));
    };
    let Ok(text) = std::fs::read_to_string(root().join("crates").join(path)) else {
        return Some(format!("{path}, which is not a file under crates/"));
    };
    let lines: Vec<&str> = text.lines().collect();
    let defined = lines.iter().position(|line| {
        let line = line.trim_start();
        line.starts_with(&format!("fn {name}(")) || line.starts_with(&format!("async fn {name}("))
    });
    // The test attribute is on one of the lines above (after the doc comment, before any other item).
    let marked = defined.is_some_and(|at| {
        lines[..at]
            .iter()
            .rev()
            .take_while(|line| !line.trim().is_empty() && !line.trim().ends_with('}'))
            .any(|line| line.trim_start().starts_with("#[") && line.contains("test"))
    });
    (!marked).then(|| format!("{path}::{name}, which is not a test there"))
}

/// Issue 41, design point 2: no queue a site, a user or a visitor can fill is unbounded. A
/// channel is bounded (in messages, and in bytes where its messages vary), and says what it
/// does when full.
#[test]
fn no_channel_is_unbounded() {
    let mut broken = Vec::new();
    for crate_dir in std::fs::read_dir(root().join("crates")).expect("crates/").flatten() {
        for path in rust_files(&crate_dir.path().join("src")) {
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            for (number, line) in text.lines().enumerate().filter(|(_, line)| line.contains("unbounded_channel")) {
                broken.push(format!("{}:{}: {}", shown(&path), number + 1, line.trim()));
            }
        }
    }
    assert!(broken.is_empty(), "an unbounded channel; bound it and say what happens when full:\n{}", broken.join("\n"));
}

/// Bounds by design (issue 41, finding 5): a `join_all` over a period's calls started 1,002
/// calls against `--in-flight` 64. No library source starts an unbounded number of futures at
/// once; work over a list whose length a site or a user decides goes through the collector's
/// one bounded helper, `calls::at_most`, the only file allowed these names.
#[test]
fn work_over_a_list_is_bounded_by_one_helper() {
    const UNBOUNDED: [&str; 5] = ["join_all", "try_join_all", "FuturesUnordered", "select_all", "buffer_unordered"];
    let helper = root().join("crates/servio-collector/src/calls.rs");
    let mut broken = Vec::new();
    for crate_dir in std::fs::read_dir(root().join("crates")).expect("crates/").flatten() {
        for path in rust_files(&crate_dir.path().join("src")).into_iter().filter(|path| *path != helper) {
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            let said = text.lines().enumerate().filter(|(_, line)| UNBOUNDED.iter().any(|name| line.contains(name)));
            broken.extend(said.map(|(number, line)| format!("{}:{}: {}", shown(&path), number + 1, line.trim())));
        }
    }
    assert!(
        broken.is_empty(),
        "futures started at once without a bound; use servio-collector's calls::at_most:\n{}",
        broken.join("\n")
    );
}

/// Every fetch of a site's manifest spends the site's budget first (issue 41, finding 11): the
/// platform's sources call discovery (`servio_client::discover`, `discovery::refresh`) only in
/// `shared/discovered.rs`, whose `discover` and `refresh` spend it, so that a new route that
/// fetches a manifest cannot forget the budget.
#[test]
fn manifests_are_fetched_only_within_their_sites_budget() {
    let budgeted = root().join("crates/servio-platform/src/shared/discovered.rs");
    let calls_discovery = |line: &str| {
        let imports = line.trim_start().starts_with("use servio_client")
            && line
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|word| word == "discover" || word == "refresh");
        imports || line.contains("servio_client::discover(") || line.contains("discovery::refresh(")
    };
    let mut broken = Vec::new();
    for path in rust_files(&root().join("crates/servio-platform/src")).into_iter().filter(|path| *path != budgeted) {
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        let found = text.lines().enumerate().filter(|(_, line)| calls_discovery(line));
        broken.extend(found.map(|(number, line)| format!("{}:{}: {}", shown(&path), number + 1, line.trim())));
    }
    assert!(
        broken.is_empty(),
        "a manifest fetched around the site's budget; fetch through shared::discovered::{{discover, refresh}}:\n{}",
        broken.join("\n")
    );
}

/// The route module (feature folder, or file directly under `routes/`) a source file of the
/// platform belongs to, or `None` outside `routes/`.
fn route_module(relative: &Path) -> Option<String> {
    let mut parts = relative.strip_prefix("routes").ok()?.components();
    let first = parts.next()?.as_os_str().to_string_lossy().into_owned();
    Some(first.trim_end_matches(".rs").to_owned())
}

/// The route modules a line of code names (`crate::routes::X`, or `super::super::X` inside a
/// feature folder), comments aside.
fn routes_named(line: &str, inside_folder: bool) -> Vec<String> {
    let code = line.split("//").next().unwrap_or_default();
    let mut named = Vec::new();
    for prefix in ["crate::routes::", "super::super::"] {
        if prefix == "super::super::" && !inside_folder {
            continue;
        }
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            named.push(name);
        }
    }
    if code.contains("crate::routes") && named.is_empty() {
        named.push(String::new());
    }
    named
}

/// The platform's modules above the domain layer: the doors a request or a round comes in by,
/// and what only they use (`auth`: who is asking, from a request's headers).
const DOORS: [&str; 6] = ["routes", "web", "mcp", "refresh::", "upkeep", "auth"];

/// One domain layer under every door (issue 43, point 1). In the platform, routes are thin
/// adapters over `domain/` (with what pages share in `web/`): no route module imports another
/// route module, no module outside `routes/` imports a route module (the composition root,
/// `lib.rs` building the router, and `routes/mod.rs` and `routes/openapi.rs` composing the
/// routes are the exceptions), and the domain layer knows nothing of HTTP (no `axum`).
#[test]
fn routes_are_adapters_over_one_domain_layer() {
    let source = root().join("crates/servio-platform/src");
    let composition = ["lib.rs", "routes/mod.rs", "routes/openapi.rs"].map(|file| source.join(file));
    let mut broken = Vec::new();
    for path in rust_files(&source).into_iter().filter(|path| !composition.contains(path)) {
        let relative = path.strip_prefix(&source).expect("under src/").to_path_buf();
        let own = route_module(&relative);
        let inside_folder = own.is_some() && relative.components().count() > 2;
        let in_domain = relative.starts_with("domain");
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        for (number, line) in text.lines().enumerate() {
            let at = format!("{}:{}: {}", shown(&path), number + 1, line.trim());
            for named in routes_named(line, inside_folder) {
                match &own {
                    Some(own) if *own == named => {}
                    Some(_) => broken.push(format!(
                        "{at}\n    a route module importing another; move what both need to domain/ or web/"
                    )),
                    None => broken.push(format!(
                        "{at}\n    a module outside routes/ importing a route; move what it needs to domain/ or web/"
                    )),
                }
            }
            let code = line.split("//").next().unwrap_or_default();
            if in_domain && code.contains("axum") {
                broken.push(format!(
                    "{at}\n    the domain layer knows nothing of HTTP; take what the request says in the route"
                ));
            }
            let door = DOORS.iter().find(|door| code.contains(&format!("crate::{door}")));
            if let (true, Some(door)) = (in_domain, door) {
                broken.push(format!(
                    "{at}\n    the domain layer imports `{door}`, a door above it; the door calls the domain"
                ));
            }
        }
    }
    assert!(broken.is_empty(), "the platform's layers:\n{}", broken.join("\n"));
}

/// The module of the platform's source file `relative` (`domain/vault.rs` is `domain::vault`,
/// `domain/gateway/mod.rs` is `domain::gateway`, `lib.rs` the crate).
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> =
        relative.with_extension("").components().map(|part| part.as_os_str().to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|last| last == "mod" || last == "lib") {
        parts.pop();
    }
    parts
}

/// The modules named on a line of code after `prefix` (`crate::`, `super::`), each from `base`.
fn named_after(code: &str, prefix: &str, base: &[String]) -> Vec<Vec<String>> {
    let mut named = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        // `super::super::x` is read once, from its first `super::`.
        if prefix == "super::" && code[..at].ends_with("super::") {
            continue;
        }
        let mut target = base.to_vec();
        let mut rest = &code[at + prefix.len()..];
        while prefix == "super::" && rest.starts_with("super::") {
            target.pop();
            rest = &rest["super::".len()..];
        }
        let segments = rest.split("::").map(|s| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
        target.extend(segments.take_while(|s: &String| !s.is_empty()));
        named.push(target);
    }
    named
}

/// The files of the platform each file names (`crate::a::b`, `super::x`), each by the longest
/// module path that is a file; itself and the crate root left out.
fn platform_imports(source: &Path) -> std::collections::BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files = rust_files(source);
    let modules: BTreeSet<Vec<String>> =
        files.iter().map(|path| module_of(path.strip_prefix(source).expect("under src/"))).collect();
    let resolve = |path: &[String]| (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|m| modules.contains(m));
    let mut graph = std::collections::BTreeMap::new();
    for path in &files {
        let relative = path.strip_prefix(source).expect("under src/");
        let me = module_of(relative);
        // `super::` of a file is its module's parent.
        let parent = me[..me.len().saturating_sub(1)].to_vec();
        let text = std::fs::read_to_string(path).expect("a readable source file");
        // A module's tests are not its imports.
        let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
        let mut named = BTreeSet::new();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or_default();
            let lines = named_after(code, "crate::", &[]).into_iter().chain(named_after(code, "super::", &parent));
            named.extend(lines.filter_map(|target| resolve(&target)).filter(|found| *found != me && !found.is_empty()));
        }
        graph.insert(me, named);
    }
    graph
}

/// No circle of files in the platform (issue 43): each file's imports lead down, never back
/// to itself, the crate root (`lib.rs`, which builds the router and holds `AppState`) aside.
#[test]
fn the_platforms_files_import_each_other_without_a_circle() {
    let graph = platform_imports(&root().join("crates/servio-platform/src"));
    let mut circles = Vec::new();
    for start in graph.keys() {
        // A path from `start` back to it, walked depth first.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in graph.get(&at).into_iter().flatten() {
                if next == start {
                    circles.push(path.iter().chain([start]).map(|m| m.join("::")).collect::<Vec<_>>().join(" -> "));
                } else if seen.insert(next.clone()) {
                    stack.push((next.clone(), path.iter().cloned().chain([next.clone()]).collect()));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "files importing each other in a circle; move what both need down a layer:\n{}",
        circles.join("\n")
    );
}
