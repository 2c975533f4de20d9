//! `servio explain [CODE]`: the rule's own documentation from the catalogue, or with no code
//! the list of every rule.

use anyhow::anyhow;
use servio_manifest::Code;

use crate::cli::ExplainArgs;
use crate::{Failure, Outcome};

pub fn run(args: &ExplainArgs) -> Result<Outcome, Failure> {
    let Some(text) = &args.code else {
        println!("{}", catalogue());
        return Ok(Outcome::Ok);
    };
    let Some(code) = Code::from_text(text) else {
        return Err(Failure(anyhow!("unknown rule {text:?}; the rules are:\n{}", catalogue())));
    };
    println!("{} {} ({})\n\n{}", code.as_str(), code.name(), kind(code), code.explanation());
    Ok(Outcome::Ok)
}

/// What a diagnostic of this code does to a manifest, and to `servio check`'s exit status.
fn kind(code: Code) -> &'static str {
    match code.as_str().as_bytes()[0] {
        b'E' => "error: the manifest is invalid; `servio check` exits 1",
        b'B' => "brief error: the whole brief is ignored, the manifest stays valid; `servio check` exits 1",
        _ => "warning: can be turned off with --allow; exits 1 only with --deny-warnings",
    }
}

/// Every rule, one a line: code, name and the first line of its explanation.
fn catalogue() -> String {
    let width = Code::ALL.iter().map(|c| c.name().len()).max().unwrap_or(0);
    let lines: Vec<String> = Code::ALL
        .iter()
        .map(|c| format!("  {} {:width$}  {}", c.as_str(), c.name(), summary(c.explanation())))
        .collect();
    format!(
        "{}\n\nE: the manifest is invalid. B: the brief is ignored. W: a lint (--allow turns it off).\n\
         `servio explain CODE` tells more.",
        lines.join("\n")
    )
}

/// The first sentence of an explanation, up to a colon that starts a list, and at most about
/// 80 characters, so that the catalogue fits a terminal line.
fn summary(explanation: &str) -> String {
    let line = explanation.lines().next().unwrap_or_default();
    let sentence = line.split(". ").next().unwrap_or(line);
    let head = sentence.split(": ").next().unwrap_or(sentence);
    let balanced = head.matches('(').count() == head.matches(')').count();
    let first = if balanced { head } else { sentence }.trim_end_matches('.');
    if first.chars().count() <= 80 {
        return first.to_owned();
    }
    let cut: String = first.chars().take(80).collect();
    format!("{}…", cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head))
}
