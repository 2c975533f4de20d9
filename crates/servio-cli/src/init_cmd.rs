//! `servio init`: a starting manifest from flags, or from answers on a terminal, written only
//! when it passes `servio check`.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{Context, anyhow};
use servio_manifest::starter::{Starter, StarterAuth, StarterMetric, TOOL_DESCRIPTION};
use servio_manifest::{BriefStatus, CheckOptions, check};

use crate::cli::{InitArgs, InitAuth};
use crate::{Failure, Outcome, render};

pub fn run(args: &InitArgs) -> Result<Outcome, Failure> {
    if args.path.exists() && !args.force {
        return Err(Failure(anyhow!(
            "{} exists: choose another file, or pass --force to write over it",
            args.path.display()
        )));
    }
    let mut ask = Asker::new();
    let starter = gather(args, &mut ask)?;
    let text = starter.to_json();
    let name = args.path.display().to_string();
    let report = check(text.as_bytes(), &CheckOptions::default());
    if !report.is_valid() || report.brief_status == BriefStatus::Ignored {
        // What was given does not make a manifest the platform takes: say why, write nothing.
        print!("{}", render::human::render(&name, text.as_bytes(), &report, render::detect_style(), true));
        eprintln!("error: {name} was not written: the manifest made of these answers does not pass the check");
        return Ok(Outcome::Invalid);
    }
    std::fs::write(&args.path, &text).with_context(|| format!("could not write {name}"))?;
    let brief = match &starter.metric {
        Some(metric) => format!(", with a brief of one metric, {}", metric.key),
        None => String::new(),
    };
    println!("wrote {name}: a valid manifest{brief}");
    println!("next: describe your tool's real inputs, then `servio check {name}`");
    Ok(Outcome::Ok)
}

/// Every part of the manifest: from its flag, else asked on a terminal, else its default (or an
/// error, for the name and the server, which have none).
fn gather(args: &InitArgs, ask: &mut Asker) -> anyhow::Result<Starter> {
    let name = ask.required(args.name.as_deref(), "--name", "The site's name, as users will see it")?;
    let server_url =
        ask.required(args.server_url.as_deref(), "--server-url", "Where tool calls go (https://…/api/servio)")?;
    let auth = match args.auth {
        Some(auth) => auth,
        None => match ask.optional(None, "Authentication, bearer or oauth2", "bearer")?.as_str() {
            "oauth2" => InitAuth::Oauth2,
            "bearer" => InitAuth::Bearer,
            other => return Err(anyhow!("unknown authentication {other:?}: answer bearer or oauth2")),
        },
    };
    let auth = match auth {
        InitAuth::Bearer => StarterAuth::Bearer,
        InitAuth::Oauth2 => {
            let origin = origin_of(&server_url);
            StarterAuth::OAuth2 {
                authorization_url: ask.optional(
                    args.authorization_url.as_deref(),
                    "OAuth authorization URL",
                    &format!("{origin}/oauth/authorize"),
                )?,
                token_url: ask.optional(
                    args.token_url.as_deref(),
                    "OAuth token URL",
                    &format!("{origin}/oauth/token"),
                )?,
            }
        }
    };
    let tool = ask.optional(args.tool.as_deref(), "The tool's name (namespace.actionTarget)", "site.getSummary")?;
    let tool_description =
        ask.optional(args.tool_description.as_deref(), "What the tool does and returns", TOOL_DESCRIPTION)?;
    let metric = match ask.optional(
        args.metric.as_deref(),
        "A metric to collect, such as sales.revenue.daily (empty for none)",
        "",
    )? {
        key if key.is_empty() => None,
        key => Some(StarterMetric {
            key,
            value_path: ask.optional(args.value_path.as_deref(), "Where its number is in the answer", "data.total")?,
            unit: Some(ask.optional(args.unit.as_deref(), "Its unit, such as USD (empty for none)", "")?)
                .filter(|unit| !unit.is_empty()),
        }),
    };
    Ok(Starter { name, server_url, auth, tool, tool_description, metric })
}

/// `https://host[:port]` of `url`, for the default OAuth endpoints; the URL itself when it has
/// no origin to speak of (the check then says what is wrong with it).
fn origin_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) if parsed.has_host() => parsed.origin().ascii_serialization(),
        _ => url.trim_end_matches('/').to_owned(),
    }
}

/// Questions on the terminal, when standard input is one; otherwise none are asked.
struct Asker {
    terminal: bool,
}

impl Asker {
    fn new() -> Asker {
        Asker { terminal: std::io::stdin().is_terminal() }
    }

    /// The flag's value, or the answer to `question`; with neither, an error naming the flag.
    fn required(&mut self, flag_value: Option<&str>, flag: &str, question: &str) -> anyhow::Result<String> {
        if let Some(value) = flag_value {
            return Ok(value.to_owned());
        }
        if !self.terminal {
            return Err(anyhow!("{flag} is needed: standard input is not a terminal, so nothing can be asked"));
        }
        loop {
            let answer = self.read(&format!("{question}: "))?;
            if !answer.is_empty() {
                return Ok(answer);
            }
        }
    }

    /// The flag's value, or the answer to `question` (empty for `default`), or `default`.
    fn optional(&mut self, flag_value: Option<&str>, question: &str, default: &str) -> anyhow::Result<String> {
        if let Some(value) = flag_value {
            return Ok(value.to_owned());
        }
        if !self.terminal {
            return Ok(default.to_owned());
        }
        let shown = if default.is_empty() { String::new() } else { format!(" [{default}]") };
        let answer = self.read(&format!("{question}{shown}: "))?;
        Ok(if answer.is_empty() { default.to_owned() } else { answer })
    }

    fn read(&mut self, prompt: &str) -> anyhow::Result<String> {
        let mut stderr = std::io::stderr().lock();
        stderr.write_all(prompt.as_bytes()).and_then(|()| stderr.flush()).context("asking on the terminal")?;
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line).context("reading the answer")? == 0 {
            return Err(anyhow!("standard input ended before every question was answered"));
        }
        Ok(line.trim().to_owned())
    }
}
