//! Issue 25, point 3: checks are linear. A valid manifest of 20,000 small tools (1.5 MB on one
//! line, 40,000 warnings) cost 17 s of CPU per check in a release build: each diagnostic's
//! column was counted from the start of its line, and the human renderer went through the whole
//! line for every diagnostic. Now the check and its rendering are linear, and the report lists
//! the first 1,000 problems with the count of the rest.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Runs `servio ARGS`, killed and failed if it takes longer than `bound`.
pub(crate) fn servio_within(args: &[&str], path: &Path, bound: Duration) -> Output {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_servio"))
        .args(args)
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Output is read on threads, so that a full pipe never stops the child.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(&mut stdout).unwrap());
    let err = std::thread::spawn(move || std::io::read_to_string(&mut stderr).unwrap());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > bound {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("servio {args:?} took longer than {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("servio {args:?}: {:?}", started.elapsed());
    Output { status, stdout: out.join().unwrap().into_bytes(), stderr: err.join().unwrap().into_bytes() }
}

/// A valid manifest of `count` tools on one line, each with two warnings: a name outside the
/// `namespace.actionTarget` form and a vague description.
fn many_tools(count: usize) -> String {
    let tools: Vec<Value> = (0..count)
        .map(|i| json!({ "name": format!("t{i}"), "description": "Do it", "input_schema": { "type": "object" } }))
        .collect();
    let manifest = json!({
        "name": "Many", "version": "1.0.0",
        "server": { "url": "https://many.example.com/api" },
        "auth": { "type": "bearer" },
        "tools": tools,
    });
    serde_json::to_string(&manifest).unwrap()
}

/// Regression (issue 25): 20,000 tools with 40,000 warnings took minutes in a debug build.
#[test]
fn twenty_thousand_tools_are_checked_and_rendered_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.json");
    let text = many_tools(20_000);
    assert!(text.len() > 1_200_000 && !text.contains('\n'), "{} bytes on one line", text.len());
    std::fs::write(&path, text).unwrap();

    let human = servio_within(&["check"], &path, Duration::from_secs(20));
    assert_eq!(human.status.code(), Some(0), "{}", String::from_utf8_lossy(&human.stderr));
    let out = String::from_utf8(human.stdout).unwrap();
    assert_eq!(out.matches(": W0").count(), 1_000, "the first 1,000 problems are listed");
    assert!(out.contains("... and 39000 more problems not shown"), "{}", &out[out.len().saturating_sub(500)..]);
    assert!(out.trim_end().ends_with("valid, 40000 warnings, no brief"), "{}", &out[out.len().saturating_sub(500)..]);

    let json = servio_within(&["check", "--format", "json"], &path, Duration::from_secs(20));
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["valid"], true);
    assert_eq!(report["warnings"].as_array().unwrap().len(), 1_000);
    assert_eq!(report["omitted"]["warnings"], 39_000);

    // Warnings denied: the verdict counts every warning, listed or not.
    let denied = servio_within(&["check", "--quiet", "--deny-warnings"], &path, Duration::from_secs(20));
    assert_eq!(denied.status.code(), Some(1));
}
