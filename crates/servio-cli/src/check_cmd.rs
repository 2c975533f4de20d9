//! `servio check`: gathers sources, checks them (in parallel for many files) and prints the
//! reports in the order the sources were given.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, anyhow};
use servio_manifest::{CheckOptions, Code, Report, Severity, Site, check};

use crate::cli::{CheckArgs, Format};
use crate::fetch::{Fetcher, is_url};
use crate::render;
use crate::{Failure, Outcome};

/// A manifest read from a file or standard input.
pub struct Source {
    /// How to name it in output.
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

pub fn run(args: &CheckArgs) -> Result<Outcome, Failure> {
    let options = CheckOptions { site: None, allow: allowed_codes(&args.allow)? };
    let (paths, mut unreadable) = expand_sources(&args.sources);
    let style = render::Style::detect();
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)).max(1);

    // The network client is built only when a source is a site.
    let fetcher = match paths.iter().any(|p| is_url(&p.to_string_lossy())) {
        true => Some(Fetcher::new(&args.fetch)?),
        false => None,
    };
    let job = Job { options: &options, format: args.format, style, fetcher: fetcher.as_ref() };

    let mut stdout = std::io::stdout().lock();
    let mut any_invalid = false;
    let mut sarif = render::sarif::Builder::default();
    let mut write_error = None;
    check_all(&paths, &job, jobs, |result| match result {
        Err(message) => unreadable.push(message),
        Ok(checked) => {
            any_invalid |= !checked.valid || (args.deny_warnings && checked.has_warnings);
            match &checked.sarif {
                Some((bytes, report)) => sarif.add(&checked.name, bytes, report),
                None => {
                    if let Err(e) = stdout.write_all(checked.rendered.as_bytes()) {
                        write_error.get_or_insert(e);
                    }
                }
            }
        }
    });
    if let Some(error) = write_error {
        return Err(Failure(anyhow!(error).context("writing to standard output")));
    }
    if args.format == Format::Sarif {
        writeln!(stdout, "{}", sarif.finish()).context("writing to standard output")?;
    }
    stdout.flush().context("writing to standard output")?;
    if !unreadable.is_empty() {
        return Err(Failure(anyhow!("{}", unreadable.join("\nerror: "))));
    }
    Ok(if any_invalid { Outcome::Invalid } else { Outcome::Ok })
}

fn allowed_codes(names: &[String]) -> Result<Vec<Code>, Failure> {
    names
        .iter()
        .map(|name| match Code::from_text(name) {
            Some(code) if code.severity() == Severity::Warning => Ok(code),
            Some(code) => {
                Err(Failure(anyhow!("{code} is not a lint: only W codes can be allowed, errors always count")))
            }
            None => Err(Failure(anyhow!(
                "unknown rule {name:?}: `servio explain` lists nothing by that name; lints are W001 to W010"
            ))),
        })
        .collect()
}

/// One checked source with its output already rendered (for human and JSON formats). The
/// report itself travels only for SARIF: freeing it on the thread that allocated it keeps the
/// allocator from serialising the workers.
struct Checked {
    name: String,
    valid: bool,
    has_warnings: bool,
    rendered: String,
    sarif: Option<(Vec<u8>, Report)>,
}

/// Every file to check, in order: files as given, directories expanded to their `*.json`
/// files in sorted order. Directories that cannot be read are reported, not fatal.
fn expand_sources(sources: &[PathBuf]) -> (Vec<PathBuf>, Vec<String>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for source in sources {
        if source.is_dir() {
            if let Err(e) = collect_json(source, &mut files) {
                problems.push(format!("could not read directory {}: {e}", source.display()));
            }
        } else {
            files.push(source.clone());
        }
    }
    (files, problems)
}

fn collect_json(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_json(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "json") {
            out.push(path);
        }
    }
    Ok(())
}

/// Reads a source; `-` is standard input.
pub fn read_source(path: &Path) -> Result<Source, String> {
    if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).map_err(|e| format!("could not read standard input: {e}"))?;
        return Ok(Source { name: "<stdin>".to_owned(), bytes });
    }
    let bytes = std::fs::read(path).map_err(|e| format!("could not read {}: {e}", path.display()))?;
    Ok(Source { name: path.display().to_string(), bytes })
}

/// What every check of one run shares.
struct Job<'a> {
    options: &'a CheckOptions,
    format: Format,
    style: render::Style,
    fetcher: Option<&'a Fetcher>,
}

/// Reads a file or fetches a site's manifest; a site is its own site for the name lints.
fn load(path: &Path, job: &Job<'_>) -> Result<(Source, CheckOptions), String> {
    let text = path.to_string_lossy();
    match job.fetcher {
        Some(fetcher) if is_url(&text) => {
            let found = fetcher.discover(&text).map_err(|e| format!("{e:#}"))?;
            let options = CheckOptions { site: Site::from_url(&found.origin), ..job.options.clone() };
            Ok((Source { name: found.url.to_string(), bytes: found.body }, options))
        }
        _ => Ok((read_source(path)?, job.options.clone())),
    }
}

fn check_one(path: &Path, job: &Job<'_>) -> Result<Checked, String> {
    let (Source { name, bytes }, options) = load(path, job)?;
    let report = check(&bytes, &options);
    let rendered = match job.format {
        Format::Human => render::human::render(&name, &bytes, &report, job.style),
        Format::Json => render::json::render_line(&name, &report),
        Format::Sarif => String::new(),
    };
    Ok(Checked {
        name,
        valid: report.is_valid(),
        has_warnings: !report.warnings.is_empty(),
        rendered,
        sarif: (job.format == Format::Sarif).then_some((bytes, report)),
    })
}

/// Checks every path with `jobs` threads and hands each result to `emit` in path order, as
/// soon as it and all before it are done, so that memory stays flat over a big corpus.
fn check_all(paths: &[PathBuf], job: &Job<'_>, jobs: usize, mut emit: impl FnMut(Result<Checked, String>)) {
    let jobs = jobs.min(paths.len()).max(1);
    if jobs == 1 {
        paths.iter().for_each(|path| emit(check_one(path, job)));
        return;
    }
    let next = AtomicUsize::new(0);
    let (sender, receiver) = std::sync::mpsc::sync_channel(jobs * 4);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let sender = sender.clone();
            let next = &next;
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = paths.get(i) else { break };
                    if sender.send((i, check_one(path, job))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut waiting = BTreeMap::new();
        let mut expected = 0;
        for (i, result) in receiver {
            waiting.insert(i, result);
            while let Some(result) = waiting.remove(&expected) {
                emit(result);
                expected += 1;
            }
        }
    });
}
