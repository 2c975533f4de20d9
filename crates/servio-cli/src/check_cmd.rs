//! `servio check`: gathers sources, checks them (in parallel for many files) and prints the
//! reports in the order the sources were given.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, anyhow};
use servio_manifest::{BriefStatus, CheckOptions, Code, Report, Severity, Site, check};

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
    let options = CheckOptions { site: None, allow: allowed_codes(&args.allow)?, ..Default::default() };
    if args.fix
        && let Some(source) = args.sources.iter().find(|s| *s == Path::new("-") || is_url(&s.to_string_lossy()))
    {
        return Err(Failure(anyhow!(
            "--fix writes the files it fixes, and {} is not a file: save the manifest to a file first",
            source.display()
        )));
    }
    let sources = expand_sources(&args.sources);
    let style = render::detect_style();
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)).max(1);

    // The network client is built only when a source is a site.
    let fetcher = match sources.iter().flatten().any(|p| is_url(&p.to_string_lossy())) {
        true => Some(Fetcher::new(&args.fetch)?),
        false => None,
    };
    let job = Job {
        options: &options,
        format: args.format,
        quiet: args.quiet,
        style,
        fetcher: fetcher.as_ref(),
        fix: args.fix,
    };

    let mut stdout = std::io::stdout().lock();
    let mut tally = Tally::default();
    let mut unreadable = Vec::new();
    let mut sarif = render::sarif::Builder::new(&args.docs_url);
    let mut write_error = None;
    check_all(&sources, &job, jobs, |result| {
        let rendered = match result {
            Err(problem) => {
                tally.unreadable += 1;
                let record =
                    (args.format == Format::Json).then(|| render::json::error_line(&problem.source, &problem.message));
                unreadable.push(problem.message);
                record
            }
            Ok(checked) => {
                tally.add(&checked);
                // What --fix changed: beside the report for people, apart from it (on stderr)
                // when the report is for machines.
                eprint!("{}", checked.changes_apart);
                if let Some((bytes, report)) = &checked.sarif {
                    sarif.add(&checked.name, bytes, report);
                }
                Some(checked.rendered)
            }
        };
        if let Some(Err(e)) = rendered.map(|text| stdout.write_all(text.as_bytes())) {
            write_error.get_or_insert(e);
        }
    });
    if let Some(error) = write_error {
        return Err(Failure(anyhow!(error).context("writing to standard output")));
    }
    if args.format == Format::Sarif {
        writeln!(stdout, "{}", sarif.finish()).context("writing to standard output")?;
    }
    stdout.flush().context("writing to standard output")?;
    if args.format == Format::Human && !args.quiet && (sources.len() > 1 || args.sources.iter().any(|s| s.is_dir())) {
        eprintln!("{}", tally.summary());
    }
    if !unreadable.is_empty() {
        return Err(Failure(anyhow!("{}", unreadable.join("\nerror: "))));
    }
    Ok(if tally.fails(args.deny_warnings) { Outcome::Invalid } else { Outcome::Ok })
}

/// How the manifests of one run came out: for the exit code and the closing summary.
#[derive(Debug, Default)]
struct Tally {
    valid: usize,
    invalid: usize,
    brief_ignored: usize,
    unreadable: usize,
    warnings: usize,
}

impl Tally {
    fn add(&mut self, checked: &Checked) {
        match checked.verdict {
            Verdict::Valid => self.valid += 1,
            Verdict::BriefIgnored => self.brief_ignored += 1,
            Verdict::Invalid => self.invalid += 1,
        }
        self.warnings += checked.warnings;
    }

    /// Exit 1: an invalid manifest or an ignored brief (collection would be lost), or a
    /// warning when warnings are denied.
    fn fails(&self, deny_warnings: bool) -> bool {
        self.invalid > 0 || self.brief_ignored > 0 || (deny_warnings && self.warnings > 0)
    }

    /// `3 manifests: 1 valid, 1 invalid, 1 with its brief ignored; 4 warnings`.
    fn summary(&self) -> String {
        let checked = self.valid + self.invalid + self.brief_ignored;
        let mut parts = Vec::new();
        if self.valid > 0 || checked == 0 {
            parts.push(format!("{} valid", self.valid));
        }
        if self.invalid > 0 {
            parts.push(format!("{} invalid", self.invalid));
        }
        if self.brief_ignored > 0 {
            let its = if self.brief_ignored == 1 { "its brief" } else { "their brief" };
            parts.push(format!("{} with {its} ignored", self.brief_ignored));
        }
        if self.unreadable > 0 {
            parts.push(format!("{} could not be read", self.unreadable));
        }
        format!(
            "{}: {}; {}",
            plural(checked + self.unreadable, "manifest"),
            parts.join(", "),
            plural(self.warnings, "warning")
        )
    }
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The lints' codes as a range, `W001 to W011`, from the catalogue.
fn lint_range() -> String {
    let mut lints = Code::ALL.iter().filter(|code| code.severity() == Severity::Warning);
    let first = lints.next().map_or("", |code| code.as_str());
    let last = lints.next_back().map_or(first, |code| code.as_str());
    format!("{first} to {last}")
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
                "unknown rule {name:?}: `servio explain` lists nothing by that name; lints are {}",
                lint_range()
            ))),
        })
        .collect()
}

/// Whether a manifest can be used as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Valid, with its brief (if any) in use.
    Valid,
    /// Valid, but its brief is ignored: nothing of it would be collected.
    BriefIgnored,
    /// Invalid: the platform refuses it.
    Invalid,
}

impl Verdict {
    fn of(report: &Report) -> Verdict {
        match (report.is_valid(), report.brief_status) {
            (false, _) => Verdict::Invalid,
            (true, BriefStatus::Ignored) => Verdict::BriefIgnored,
            (true, _) => Verdict::Valid,
        }
    }
}

/// One checked source with its output already rendered (for human and JSON formats). The
/// report itself travels only for SARIF: freeing it on the thread that allocated it keeps the
/// allocator from serialising the workers.
struct Checked {
    name: String,
    verdict: Verdict,
    warnings: usize,
    rendered: String,
    /// What `--fix` changed, when it is not part of `rendered` (JSON and SARIF).
    changes_apart: String,
    sarif: Option<(Vec<u8>, Report)>,
}

/// A source that could not be read or fetched.
#[derive(Clone)]
struct Unreadable {
    /// The source as given.
    source: String,
    /// What went wrong, naming the source.
    message: String,
}

/// Every file to check, in order: files as given, directories expanded to their `*.json`
/// files in sorted order. A directory that cannot be read is reported in its place, not fatal.
fn expand_sources(sources: &[PathBuf]) -> Vec<Result<PathBuf, Unreadable>> {
    let mut files = Vec::new();
    for source in sources {
        if !source.is_dir() {
            files.push(Ok(source.clone()));
            continue;
        }
        let mut found = Vec::new();
        match collect_json(source, &mut found) {
            Ok(()) => files.extend(found.into_iter().map(Ok)),
            Err(e) => files.push(Err(Unreadable {
                source: source.display().to_string(),
                message: format!("could not read directory {}: {e}", source.display()),
            })),
        }
    }
    files
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

/// Reads a source; `-` is standard input. The error says what could not be read, with the
/// system's reason as its source.
pub fn read_source(path: &Path) -> anyhow::Result<Source> {
    use anyhow::Context;
    if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).context("could not read standard input")?;
        return Ok(Source { name: "<stdin>".to_owned(), bytes });
    }
    let bytes = std::fs::read(path).with_context(|| format!("could not read {}", path.display()))?;
    Ok(Source { name: path.display().to_string(), bytes })
}

/// What every check of one run shares.
struct Job<'a> {
    options: &'a CheckOptions,
    format: Format,
    /// Leave out what is not a problem: clean manifests and the summary lines.
    quiet: bool,
    style: render::Style,
    fetcher: Option<&'a Fetcher>,
    /// Apply the mechanical fixes and write the files they change (`--fix`).
    fix: bool,
}

/// Reads a file or fetches a site's manifest; a site is its own site for the name lints.
fn load(path: &Path, job: &Job<'_>) -> Result<(Source, CheckOptions), Unreadable> {
    let text = path.to_string_lossy();
    let unreadable = |message: String| Unreadable { source: text.to_string(), message };
    match job.fetcher {
        Some(fetcher) if is_url(&text) => {
            let found = fetcher.discover(&text).map_err(|e| unreadable(format!("{e:#}")))?;
            let options = CheckOptions { site: Site::from_url(&found.origin), ..job.options.clone() };
            Ok((Source { name: found.url.to_string(), bytes: found.body }, options))
        }
        _ => Ok((read_source(path).map_err(|e| unreadable(format!("{e:#}")))?, job.options.clone())),
    }
}

fn check_one(path: &Path, job: &Job<'_>) -> Result<Checked, Unreadable> {
    let (Source { name, bytes }, options) = load(path, job)?;
    let (bytes, report, changes) = match job.fix {
        true => fix_file(path, &name, bytes, &options)?,
        false => {
            let report = check(&bytes, &options);
            (bytes, report, String::new())
        }
    };
    let verdict = Verdict::of(&report);
    let clean = verdict == Verdict::Valid && report.warning_count() == 0;
    let rendered = match job.format {
        _ if job.quiet && clean => String::new(),
        Format::Human => render::human::render(&name, &bytes, &report, job.style, !job.quiet),
        Format::Json => render::json::render_line(&name, &report),
        Format::Sarif => String::new(),
    };
    let (rendered, changes_apart) = match job.format {
        Format::Human => (changes + &rendered, String::new()),
        _ => (rendered, changes),
    };
    Ok(Checked {
        name,
        verdict,
        warnings: report.warning_count(),
        rendered,
        changes_apart,
        sarif: (job.format == Format::Sarif).then_some((bytes, report)),
    })
}

/// `--fix` on one file: the mechanical fixes applied, the file written only when one was
/// (replaced whole, so that an interrupted run never leaves half a manifest), and the fixed
/// text with its report and a line for each change (`NAME:LINE:COL: fixed CODE: what`), ending
/// with what remains when the fixes did not make the manifest valid and its brief used.
fn fix_file(
    path: &Path,
    name: &str,
    bytes: Vec<u8>,
    options: &CheckOptions,
) -> Result<(Vec<u8>, Report, String), Unreadable> {
    let fixed = servio_manifest::fix::fix(&bytes, options);
    let mut changes: String = fixed
        .changes
        .iter()
        .map(|c| format!("{name}:{}:{}: fixed {} {}\n", c.line, c.column, c.code, c.what))
        .collect();
    if fixed.changed() {
        write_replacing(path, &fixed.text).map_err(|e| Unreadable {
            source: name.to_owned(),
            message: format!("could not write the fixed {name}: {e:#}"),
        })?;
        let remain = fixed.report.error_count() + fixed.report.brief_error_count();
        if remain > 0 {
            changes.push_str(&format!(
                "{name}: {} fixed, {} left that --fix cannot repair (below)\n",
                plural(fixed.changes.len(), "problem"),
                plural(remain, "error"),
            ));
        }
    }
    Ok((fixed.text, fixed.report, changes))
}

/// Replaces the file at `path` with `bytes`: written beside it, given its permissions, then
/// renamed over it.
fn write_replacing(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let permissions = std::fs::metadata(path).context("reading its permissions")?.permissions();
    let mut file = tempfile::NamedTempFile::new_in(dir).context("creating a file beside it")?;
    file.write_all(bytes).context("writing")?;
    file.as_file().set_permissions(permissions).context("setting its permissions")?;
    file.persist(path).context("replacing it")?;
    Ok(())
}

/// Checks every source with `jobs` threads and hands each result to `emit` in source order,
/// as soon as it and all before it are done, so that memory stays flat over a big corpus.
fn check_all(
    sources: &[Result<PathBuf, Unreadable>],
    job: &Job<'_>,
    jobs: usize,
    mut emit: impl FnMut(Result<Checked, Unreadable>),
) {
    let check_source = |source: &Result<PathBuf, Unreadable>| match source {
        Ok(path) => check_one(path, job),
        Err(problem) => Err(problem.clone()),
    };
    let jobs = jobs.min(sources.len()).max(1);
    if jobs == 1 {
        sources.iter().for_each(|source| emit(check_source(source)));
        return;
    }
    let next = AtomicUsize::new(0);
    let (sender, receiver) = std::sync::mpsc::sync_channel(jobs * 4);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let sender = sender.clone();
            let next = &next;
            let check_source = &check_source;
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(source) = sources.get(i) else { break };
                    if sender.send((i, check_source(source))).is_err() {
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
