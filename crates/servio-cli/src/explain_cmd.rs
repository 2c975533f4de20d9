//! `servio explain CODE`: the rule's own documentation from the catalogue.

use anyhow::anyhow;
use servio_manifest::Code;

use crate::cli::ExplainArgs;
use crate::{Failure, Outcome};

pub fn run(args: &ExplainArgs) -> Result<Outcome, Failure> {
    let Some(code) = Code::from_text(&args.code) else {
        let known: Vec<String> = Code::ALL.iter().map(|c| format!("  {} {}", c.as_str(), c.name())).collect();
        return Err(Failure(anyhow!("unknown rule {:?}; the rules are:\n{}", args.code, known.join("\n"))));
    };
    let kind = match code.as_str().as_bytes()[0] {
        b'E' => "error: the manifest is invalid",
        b'B' => "brief error: the whole brief is ignored, the manifest stays valid",
        _ => "warning: can be turned off with --allow",
    };
    println!("{} {} ({kind})\n\n{}", code.as_str(), code.name(), code.explanation());
    Ok(Outcome::Ok)
}
