//! `servio call`: discover a site, check the arguments, call the tool, print the result.

use anyhow::{Context, anyhow};
use serde_json::{Map, Value};
use servio_client::call::tool_url;
use servio_client::{CallError, ToolCall};
use servio_manifest::{CheckOptions, Site, check};

use crate::auth::SiteToken;
use crate::cli::CallArgs;
use crate::fetch::{Fetcher, request_failure};
use crate::{Failure, Outcome};

pub fn run(args: &CallArgs) -> Result<Outcome, Failure> {
    let arguments = build_arguments(args)?;
    let fetcher = Fetcher::new(&args.access.fetch)?;
    let found = fetcher.discover(&args.site)?;
    let report = check(
        &found.body,
        &CheckOptions { site: Site::from_url(&found.origin), allow: Vec::new(), ..Default::default() },
    );
    let Some(manifest) = report.manifest else {
        let problems: Vec<String> =
            report.errors.iter().map(|e| format!("  {}:{}: {} {}", e.line, e.column, e.code, e.message)).collect();
        return Err(Failure(anyhow!(
            "{} is not a valid manifest (servio check {} shows why):\n{}",
            found.url,
            args.site,
            problems.join("\n")
        )));
    };
    let origin = found.origin.as_str().trim_end_matches('/');
    let mut credential = SiteToken::find(&fetcher, origin, args.access.token.as_deref())?;
    let call = |token: Option<&str>| {
        let call = ToolCall { manifest: &manifest, name: &args.tool, args: &arguments, token };
        fetcher.block_on(call.json(fetcher.tool_client()))
    };
    let mut result = call(credential.token());
    // A stored OAuth token may have been revoked or expired early: renew it once and retry.
    if matches!(result, Err(CallError::Failed { status: 401, .. })) && credential.renew(&fetcher)? {
        result = call(credential.token());
    }
    match result {
        Ok(value) => {
            println!("{}", serde_json::to_string_pretty(&value).context("rendering the result")?);
            Ok(Outcome::Ok)
        }
        Err(
            error @ (CallError::InvalidArguments(_)
            | CallError::Failed { .. }
            | CallError::NotJson(_)
            | CallError::UnknownTool { .. }),
        ) => {
            eprintln!("error: {error}");
            if let CallError::UnknownTool { name, known } = &error {
                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                if let Some(near) = servio_manifest::suggest::closest(name, &known) {
                    eprintln!("help: did you mean {near:?}? servio call {} {near}", args.site);
                }
            }
            if matches!(error, CallError::Failed { status: 401, .. }) && args.access.token.is_none() {
                eprintln!(
                    "help: pass the site's token with --token or SERVIO_TOKEN, or sign in: servio login {}",
                    args.site
                );
            }
            Ok(Outcome::Invalid)
        }
        Err(CallError::Request(error)) => {
            Err(Failure(request_failure(&tool_url(&manifest.server_url, &args.tool), &error)))
        }
        Err(error) => Err(Failure(anyhow!(error))),
    }
}

/// The arguments object: `--json`, then each `--arg key=value` on top.
fn build_arguments(args: &CallArgs) -> anyhow::Result<Value> {
    let mut object = match &args.json {
        None => Map::new(),
        Some(text) => match serde_json::from_str(text).with_context(|| format!("--json {text:?} is not JSON"))? {
            Value::Object(map) => map,
            _ => {
                return Err(anyhow!("--json must be a JSON object of arguments, such as '{{\"query\": \"rust\"}}'"));
            }
        },
    };
    for pair in &args.args {
        let (key, value) =
            pair.split_once('=').ok_or_else(|| anyhow!("--arg {pair:?} is not of the form key=value"))?;
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
        object.insert(key.to_owned(), value);
    }
    Ok(Value::Object(object))
}
