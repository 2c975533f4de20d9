//! The benchmark of issue 41, finding 2: what one validation of a 1 MiB argument against a
//! pattern costs, with the baselines measured in the same run: the same argument against no
//! pattern and against a trivial one, and the same patterns through the `jsonschema` crate's
//! default engine (`fancy-regex`, which backtracks), as arguments were validated before.
//! `bench/patterns.sh` builds it in release and runs it; `--rounds N` (default 5) for the
//! median of the fast rows (the slow ones run once). Each time is the wall time and, in
//! brackets, the CPU time of the thread (Linux's `/proc/thread-self/schedstat`, updated every
//! few milliseconds), which other work on the machine does not inflate.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use servio_manifest::schema::{ArgumentValidator, MAX_PATTERN_STEPS, STEPS_PER_BYTE_BASE};

const MIB: usize = 1024 * 1024;

/// `n` letters `a` and `b`, each drawn (a fixed xorshift), so that no automaton state repeats.
fn random_ab(n: usize) -> String {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(2) { 'a' } else { 'b' }
        })
        .collect()
}

/// A tool schema whose string `q` has `pattern`, or none.
fn schema(pattern: Option<&str>) -> Value {
    let mut q = json!({ "type": "string" });
    if let Some(pattern) = pattern {
        q["pattern"] = json!(pattern);
    }
    json!({ "type": "object", "properties": { "q": q } })
}

/// The time this thread has run on a CPU, when the system says.
fn cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(Duration::from_nanos(text.split_whitespace().next()?.parse().ok()?))
}

/// The wall and CPU times of one run.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Took {
    wall: Duration,
    cpu: Option<Duration>,
}

/// The run of median wall time among `rounds` runs of `work`.
fn median(rounds: usize, mut work: impl FnMut()) -> Took {
    let mut samples: Vec<Took> = (0..rounds.max(1))
        .map(|_| {
            let (started, cpu) = (Instant::now(), cpu_time());
            work();
            Took { wall: started.elapsed(), cpu: cpu.zip(cpu_time()).map(|(before, after)| after - before) }
        })
        .collect();
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(took: Took) -> String {
    let cpu = took.cpu.map(|cpu| format!(" ({:.1})", cpu.as_secs_f64() * 1000.0)).unwrap_or_default();
    format!("{:.1}{cpu}", took.wall.as_secs_f64() * 1000.0)
}

/// One validation through the platform's [`ArgumentValidator`]: its time and what it answered.
fn platform_row(label: &str, pattern: Option<&str>, argument: &str, rounds: usize) {
    let args = json!({ "q": argument });
    let mut built = None;
    let took = median(1, || built = Some(ArgumentValidator::new(&schema(pattern))));
    let validator = match built.expect("built once") {
        Ok(validator) => validator,
        Err(refused) => {
            println!(
                "| {label} | {} | refused before compiling (E055), in {} ms | {} |",
                argument.len(),
                ms(took),
                refused.message
            );
            return;
        }
    };
    let mut answer = String::new();
    let took = median(rounds, || {
        answer = match validator.try_check(&args) {
            Ok(errors) if errors.is_empty() => "valid".to_owned(),
            Ok(errors) => format!("{} error(s)", errors.len()),
            Err(refused) => format!("refused unmatched: {}", refused.message),
        };
    });
    println!("| {label} | {} | {} ms | {answer} |", argument.len(), ms(took));
}

/// One validation as before: the crate's default engine, `is_valid` then `iter_errors`.
fn before_row(label: &str, pattern: &str, argument: &str, rounds: usize) {
    let validator = jsonschema::validator_for(&schema(Some(pattern))).expect("compiles with fancy-regex");
    let args = json!({ "q": argument });
    let mut errors = 0;
    let took = median(rounds, || {
        errors = if validator.is_valid(&args) { 0 } else { validator.iter_errors(&args).count() };
    });
    println!("| before, fancy-regex: {label} | {} | {} ms | {errors} error(s) |", argument.len(), ms(took));
}

/// A manifest with a tool whose `q` has `pattern` and a brief of 300 metrics, the metric `i`
/// with `argument(i)`.
fn three_hundred_metrics(pattern: &str, argument: impl Fn(usize) -> String) -> String {
    let metrics: Vec<Value> = (0..300)
        .map(|i| json!({ "key": format!("shop.metric{i}.daily"), "tool": "shop.getSales", "args": { "q": argument(i) }, "valuePath": "total" }))
        .collect();
    json!({ "name": "Patterns", "version": "1.0.0", "server": { "url": "https://patterns.example.com/api" },
        "auth": { "type": "bearer" },
        "tools": [{ "name": "shop.getSales", "description": "Summarise the sales of a day as revenue and orders.",
            "input_schema": schema(Some(pattern)) }],
        "brief": { "metrics": metrics } })
    .to_string()
}

/// `tools` tools, each with a pattern of its own (`salt` makes them new to the process) when
/// `patterns`, for what E055's compiles add to a check.
fn many_tools(tools: usize, patterns: bool, salt: usize) -> String {
    let tools: Vec<Value> = (0..tools)
        .map(|i| {
            let pattern = patterns.then(|| format!("^[a-z]+-{i}-{salt}(?:\\.[0-9]+)?$"));
            json!({ "name": format!("shop.tool{i}"), "description": "Summarise the sales of a day as revenue and orders.",
                "input_schema": schema(pattern.as_deref()) })
        })
        .collect();
    json!({ "name": "Many", "version": "1.0.0", "server": { "url": "https://many.example.com/api" },
        "auth": { "type": "bearer" }, "tools": tools })
    .to_string()
}

fn check_row(label: &str, manifest: &str, rounds: usize) {
    let options = servio_manifest::CheckOptions::default();
    let mut summary = String::new();
    let took = median(rounds, || {
        let report = servio_manifest::check(manifest.as_bytes(), &options);
        summary = format!("{} errors, {} brief errors", report.errors.len(), report.brief_errors.len());
    });
    println!("| {label} | {} | {} ms | {summary} |", manifest.len(), ms(took));
}

fn main() {
    let mut rounds = 5;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => rounds = args.next().and_then(|n| n.parse().ok()).expect("--rounds N"),
            other => panic!("unknown argument {other:?}: expected --rounds N"),
        }
    }
    let run_of_a = format!("{}!", "a".repeat(MIB - 1));
    let ab = random_ab(MIB);
    let heavy = "a[ab]{400}[^ab]";
    // The longest string of `a` and `b` that [`MAX_PATTERN_STEPS`] lets `heavy` match: the
    // slowest a validation may be.
    let within = usize::try_from(MAX_PATTERN_STEPS / (402 + STEPS_PER_BYTE_BASE)).unwrap();

    println!("One validation, `q` against its pattern (median of {rounds}; rows marked once run once):\n");
    println!("| pattern | argument bytes | ms (CPU ms) | answer |");
    println!("|---|---|---|---|");
    platform_row("none (baseline)", None, &run_of_a, rounds);
    platform_row("`^[a-z!]+$` (baseline: a full pass)", Some("^[a-z!]+$"), &run_of_a, rounds);
    platform_row("`^(a+)+$`, `a…a!`", Some("^(a+)+$"), &run_of_a, rounds);
    platform_row("`(?=a)(a+)+b`, `a…a!`", Some("(?=a)(a+)+b"), &run_of_a, rounds);
    platform_row("`a[ab]{20}[^ab]`, random `ab`", Some("a[ab]{20}[^ab]"), &ab, rounds);
    platform_row("`a[ab]{400}[^ab]`, random `ab`", Some(heavy), &ab, rounds);
    platform_row("`a[ab]{400}[^ab]`, random `ab`, at the bound (once)", Some(heavy), &ab[..within], 1);
    before_row("`^[a-z!]+$`", "^[a-z!]+$", &run_of_a, rounds);
    before_row("`^(a+)+$`, `a…a!`", "^(a+)+$", &run_of_a, rounds);
    before_row("`a[ab]{400}[^ab]`, random `ab` (once)", heavy, &ab, 1);
    for size in [4 * 1024, 16 * 1024, 64 * 1024] {
        let run = format!("{}!", "a".repeat(size - 1));
        before_row("`(?=a)(a+)+b`, `a…a!` (once)", "(?=a)(a+)+b", &run, 1);
    }

    println!("\n`servio_manifest::check` (median of {rounds}):\n");
    println!("| manifest | bytes | ms (CPU ms) | report |");
    println!("|---|---|---|---|");
    let backtracking = three_hundred_metrics("(?=a)(a+)+b", |_| format!("{}!", "a".repeat(2_000)));
    check_row("300 metrics, 2 KB arguments, `(?=a)(a+)+b`", &backtracking, rounds);
    let (fast, slow) = ("a".repeat(20_000), random_ab(20_000));
    let shared = three_hundred_metrics(heavy, |i| if i < 8 { fast.clone() } else { slow.clone() });
    check_row("300 metrics, 20 KB arguments, `a[ab]{400}[^ab]`", &shared, rounds);
    let all_slow = three_hundred_metrics(heavy, |_| slow.clone());
    check_row("the same, every argument random `ab` (once)", &all_slow, 1);
    check_row("1,000 tools, no pattern (baseline)", &many_tools(1_000, false, 0), rounds);
    // Each round a manifest whose patterns the process has not judged yet.
    let fresh: Vec<String> = (1..=rounds).map(|salt| many_tools(1_000, true, salt)).collect();
    let mut next = fresh.iter();
    let cold = median(rounds, || {
        let text = next.next().expect("one manifest a round");
        servio_manifest::check(text.as_bytes(), &servio_manifest::CheckOptions::default());
    });
    println!("| 1,000 tools, a pattern each, new to the process | {} | {} ms | |", fresh[0].len(), ms(cold));
    check_row("1,000 tools, a pattern each, remembered", &many_tools(1_000, true, 1), rounds);

    // Before, the check validated each metric's arguments with the default engine.
    let before = jsonschema::validator_for(&schema(Some("(?=a)(a+)+b"))).expect("compiles with fancy-regex");
    let args = json!({ "q": format!("{}!", "a".repeat(2_000)) });
    let took = median(1, || {
        for _ in 0..300 {
            if !before.is_valid(&args) {
                before.iter_errors(&args).count();
            }
        }
    });
    println!("| before: 300 validations of the same 2 KB arguments with fancy-regex (once) | | {} ms | |", ms(took));
}
