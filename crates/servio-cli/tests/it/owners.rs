//! A site owner's tooling around `servio check` (issue 48): `servio init`, `servio check
//! --fix`, the examples with a brief, SARIF's links to the rules' pages, and the pre-commit
//! hook, each run as the owner runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn servio_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_servio"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("SERVIO_DOCS_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The manifest of the site owner of issue 48: MCP's `inputSchema`, a JSONPath `valuePath`,
/// `daily` for a granularity and two trailing commas.
const OWNERS_MANIFEST: &str = r#"{
  "name": "Shop",
  "version": "1.0.0",
  "server": { "url": "https://shop.example.com/api/servio" },
  "auth": { "type": "bearer" },
  "tools": [
    {
      "name": "shop.getSalesSummary",
      "description": "Summarise sales for a date range: revenue and order count.",
      "inputSchema": {
        "type": "object",
        "properties": {
          "from": { "type": "string", "description": "First date" },
          "to": { "type": "string", "description": "Last date" },
        },
        "required": ["from", "to"]
      }
    }
  ],
  "brief": {
    "metrics": [
      {
        "key": "sales.revenue.daily",
        "tool": "shop.getSalesSummary",
        "args": { "from": "{{periodStart}}", "to": "{{periodEnd}}" },
        "valuePath": "$.data[0].revenue",
        "granularity": "daily",
      }
    ]
  }
}
"#;

#[test]
fn check_fix_repairs_what_is_mechanical_and_says_what_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("servio.json");
    std::fs::write(&path, OWNERS_MANIFEST).unwrap();
    let out = servio_in(dir.path(), &["check", "--fix", "servio.json"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for change in [
        "servio.json:10:7: fixed E010 renamed `inputSchema` to `input_schema`",
        "servio.json:14:65: fixed E001 removed ,",
        "servio.json:26:22: fixed B040 replaced \"$.data[0].revenue\" with \"data.0.revenue\"",
        "servio.json:27:24: fixed B050 replaced \"daily\" with \"day\"",
    ] {
        assert!(stdout.contains(change), "{change} not in:\n{stdout}");
    }
    assert!(stdout.contains("servio.json: valid, 0 warnings, brief valid (1 metric)"), "{stdout}");
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert!(fixed.contains("\"input_schema\": {") && fixed.contains("\"valuePath\": \"data.0.revenue\""), "{fixed}");
    assert_eq!(servio_in(dir.path(), &["check", "servio.json"]).status.code(), Some(0));

    // Nothing left to fix: nothing said, nothing written.
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();
    let out = servio_in(dir.path(), &["check", "--fix", "servio.json"]);
    assert!(!text(&out.stdout).contains("fixed"), "{}", text(&out.stdout));
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), before);
}

#[test]
fn check_fix_says_what_it_cannot_repair_and_writes_only_what_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    // An http URL is not a mechanical fix: the file stays as it is, and exit 1.
    let http = OWNERS_MANIFEST.replace("https://shop", "http://shop");
    std::fs::write(dir.path().join("a.json"), &http).unwrap();
    let out = servio_in(dir.path(), &["check", "--fix", "--format", "json", "a.json"]);
    assert_eq!(out.status.code(), Some(1));
    // The report stays one JSON line; what changed goes to stderr.
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["errors"][0]["code"], "E020");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("a.json: 5 problems fixed, 1 error left that --fix cannot repair"), "{stderr}");
    let written = std::fs::read_to_string(dir.path().join("a.json")).unwrap();
    assert!(written.contains("http://shop") && written.contains("\"input_schema\""), "{written}");

    // A manifest with nothing mechanical to fix is not written at all.
    let only_http = r#"{"name": "Shop", "version": "1.0.0", "server": {"url": "http://shop.example.com"},
        "auth": {"type": "bearer"}, "tools": []}"#;
    std::fs::write(dir.path().join("b.json"), only_http).unwrap();
    let out = servio_in(dir.path(), &["check", "--fix", "b.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(dir.path().join("b.json")).unwrap(), only_http);

    // Standard input is no file to write.
    let out = servio_in(dir.path(), &["check", "--fix", "-"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is not a file"), "{}", text(&out.stderr));
}

#[test]
fn init_writes_a_manifest_that_passes_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let out = servio_in(
        dir.path(),
        &[
            "init",
            "--name",
            "Corner Shop",
            "--server-url",
            "https://shop.example.com/api/servio",
            "--auth",
            "oauth2",
            "--tool",
            "shop.getSalesSummary",
            "--metric",
            "sales.revenue.daily",
            "--value-path",
            "data.totals.revenue",
            "--unit",
            "USD",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = servio_in(dir.path(), &["check", "--deny-warnings", "--format", "json", "servio.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["brief"]["metrics"][0]["key"], "sales.revenue.daily");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("servio.json")).unwrap()).unwrap();
    assert_eq!(manifest["auth"]["token_url"], "https://shop.example.com/oauth/token");

    // It writes over nothing, asks nothing off a terminal, and writes nothing that fails.
    let again = servio_in(dir.path(), &["init", "--name", "X", "--server-url", "https://x.example"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("pass --force"), "{}", text(&again.stderr));
    let unasked = servio_in(dir.path(), &["init", "other.json", "--server-url", "https://x.example"]);
    assert_eq!(unasked.status.code(), Some(2));
    assert!(text(&unasked.stderr).contains("--name is needed"), "{}", text(&unasked.stderr));
    let http = servio_in(dir.path(), &["init", "http.json", "--name", "X", "--server-url", "http://x.example"]);
    assert_eq!(http.status.code(), Some(1));
    assert!(text(&http.stdout).contains("E020"), "{}", text(&http.stdout));
    assert!(!dir.path().join("http.json").exists());
}

/// On a terminal, `servio init` asks for what its flags leave out (run under `script`, which
/// gives it a terminal; skipped where util-linux's `script` is missing).
#[test]
fn init_asks_on_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("init_asks_on_a_terminal: skipped, util-linux `script` is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let command = format!("{} init asked.json", env!("CARGO_BIN_EXE_servio"));
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Name, server, authentication (default), tool, description (default), a metric, its path,
    // its unit (none).
    let answers = "Corner Shop\nhttps://shop.example.com/api\n\nshop.getSales\n\nsales.orders.daily\ndata.orders\n\n";
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), answers.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("asked.json")).unwrap()).unwrap();
    assert_eq!(manifest["name"], "Corner Shop");
    assert_eq!(manifest["auth"]["type"], "bearer");
    assert_eq!(manifest["brief"]["metrics"][0]["valuePath"], "data.orders");
    assert_eq!(servio_in(dir.path(), &["check", "--deny-warnings", "asked.json"]).status.code(), Some(0));
}

/// Every example but the one broken on purpose passes the check, and the format's headline
/// feature, the brief, is in them: each example with a brief is clean of warnings too.
#[test]
fn examples_pass_the_check_and_show_briefs() {
    let mut with_brief = 0;
    for entry in std::fs::read_dir(repo().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if name.ends_with("-broken.json") || !name.ends_with(".json") {
            continue;
        }
        let out = servio_in(&repo(), &["check", "--format", "json", &format!("examples/{name}")]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stdout));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if report["brief"]["status"] == "valid" {
            with_brief += 1;
            assert_eq!(report["warnings"], serde_json::json!([]), "{name}");
        }
    }
    assert!(with_brief >= 2, "examples with a brief: {with_brief}");
}

/// SARIF links each rule to its page, under the docs' base (`--docs-url`), and each result to
/// its rule.
#[test]
fn sarif_rules_link_to_their_pages() {
    let broken = "examples/devcommunity-broken.json";
    for (args, base) in [
        (vec!["check", "--format", "sarif", broken], "https://servio.dev"),
        (
            vec!["check", "--format", "sarif", "--docs-url", "https://platform.example/", broken],
            "https://platform.example",
        ),
    ] {
        let out = servio_in(&repo(), &args);
        let log: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let run = &log["runs"][0];
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        for rule in rules {
            assert_eq!(rule["helpUri"], format!("{base}/rules/{}", rule["id"].as_str().unwrap()));
        }
        for result in run["results"].as_array().unwrap() {
            let rule = &rules[result["ruleIndex"].as_u64().unwrap() as usize];
            assert_eq!(rule["id"], result["ruleId"]);
        }
    }
}

/// `pre-commit` from `tests/pre-commit/.venv` (installed by `.ci/run`), when installed.
fn pre_commit() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pre-commit/.venv/bin/pre-commit");
    if path.exists() {
        return Some(path);
    }
    // CI installs it (.ci/run): there a missing pre-commit is a failure, not a skip.
    assert!(std::env::var_os("CI").is_none(), "pre-commit is not installed in CI");
    eprintln!("skipped: pre-commit is not installed in crates/servio-cli/tests/pre-commit/.venv (see .ci/run)");
    None
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=Site Owner", "-c", "user.email=owner@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
}

/// The repository's `.pre-commit-hooks.yaml`, as a site owner's repository runs it: `pre-commit
/// try-repo` with the `servio-check` hook fails on a broken manifest and passes once it is
/// fixed. The hooks file is tried from a repository of its own, so that the test clones one
/// file rather than this repository.
#[test]
fn the_pre_commit_hook_fails_a_broken_manifest_and_passes_it_fixed() {
    let Some(pre_commit) = pre_commit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (hooks, site, cache) = (dir.path().join("hooks"), dir.path().join("site"), dir.path().join("cache"));
    for path in [&hooks, &site] {
        std::fs::create_dir(path).unwrap();
        git(path, &["init", "-q"]);
    }
    std::fs::copy(repo().join(".pre-commit-hooks.yaml"), hooks.join(".pre-commit-hooks.yaml")).unwrap();
    git(&hooks, &["add", "."]);
    git(&hooks, &["commit", "-qm", "hooks"]);

    // The `servio` under test is the one on PATH, as it is for a site owner.
    let bin = Path::new(env!("CARGO_BIN_EXE_servio")).parent().unwrap().to_owned();
    let path =
        std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())))
            .unwrap();
    let try_repo = || {
        Command::new(&pre_commit)
            .args(["try-repo", hooks.to_str().unwrap(), "servio-check", "--all-files"])
            .current_dir(&site)
            .env("PATH", &path)
            .env("PRE_COMMIT_HOME", &cache)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };

    // The owner's manifest without its trailing commas, which would hide the rest.
    std::fs::write(site.join("servio.json"), include_str!("../fixtures/messages/near_miss.json")).unwrap();
    git(&site, &["add", "servio.json"]);
    let out = try_repo();
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    assert!(said.contains("servio check") && said.contains("Failed"), "{said}");
    assert!(said.contains("E010 missing required member `input_schema`, written `inputSchema`"), "{said}");

    assert_eq!(servio_in(&site, &["check", "--fix", "servio.json"]).status.code(), Some(0));
    git(&site, &["add", "servio.json"]);
    let out = try_repo();
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
    assert!(said.contains("Passed"), "{said}");
}

/// The README documents every placeholder the brief knows, one table row each with what it
/// means, and the hook id it tells pre-commit users to add is the one the hooks file defines.
#[test]
fn the_readme_documents_the_placeholders_and_the_hook() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    for name in servio_manifest::period::PLACEHOLDERS {
        let row = readme.lines().find(|line| line.starts_with(&format!("| `{{{{{name}}}}}` | ")));
        assert!(row.is_some_and(|row| row.len() > name.len() + 20), "README has no row for {{{{{name}}}}}");
    }
    let hooks = std::fs::read_to_string(repo().join(".pre-commit-hooks.yaml")).unwrap();
    assert!(hooks.contains("\n- id: servio-check\n"), "{hooks}");
    assert!(readme.contains("- id: servio-check "), "the README's pre-commit entry names another hook");
}
