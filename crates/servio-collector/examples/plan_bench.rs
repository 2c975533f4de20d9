//! Planning benchmark (issue 5): find the due collections among 1,000,000 (user, metric) pairs
//! spread over every zone of the time zone database, with the [`Planner`] a scheduler round
//! uses, against the baseline of working out each pair's latest due period on its own.
//!
//! Run with `bench/planning.sh` (release build, pinned to one core). Reports the planner's time,
//! the baseline's time on a sample scaled to the same number of pairs, their ratio, and the peak
//! memory per pair while planning (pairs, result and planner together): the growth of the
//! process's peak resident set over what it held before the pairs were made.

use std::time::Instant;

use jiff::Timestamp;
use servio_collector::plan::{Planner, latest_due};
use servio_manifest::period::{self, Granularity};

/// A figure from `/proc/self/status` (Linux), in bytes.
fn status_bytes(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status (Linux)");
    let line = status.lines().find(|l| l.starts_with(field)).expect("the field");
    let kib: usize = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number of kB");
    kib * 1024
}

const PAIRS: usize = 1_000_000;
const BASELINE_SAMPLE: usize = 20_000;

/// One (user, metric) pair as the scheduler knows it: the user's zone (an index into the zone
/// names), the metric's granularity, and the start of the period last settled.
struct Pair {
    zone: u16,
    granularity: Granularity,
    settled_start: i64,
}

fn main() {
    let zones: Vec<String> = jiff::tz::db().available().map(|name| name.to_string()).collect();
    let zones: Vec<String> = zones.into_iter().filter(|name| period::zone(name).is_ok()).collect();
    let now: Timestamp = "2026-12-02T07:30:00Z".parse().expect("a timestamp");
    let granularities = [Granularity::Day, Granularity::Day, Granularity::Hour, Granularity::Week, Granularity::Month];

    let before = status_bytes("VmRSS:");
    // Deterministic spread: consecutive pairs walk the zones and granularities; a third were
    // settled for their current period already.
    let pairs: Vec<Pair> = (0..PAIRS)
        .map(|i| Pair {
            zone: (i * 7919 % zones.len()) as u16,
            granularity: granularities[i % granularities.len()],
            settled_start: if i % 3 == 0 { i64::MAX } else { 0 },
        })
        .collect();

    let start = Instant::now();
    let mut planner = Planner::new(now);
    let mut due: Vec<(u32, i64)> = Vec::new();
    for (index, pair) in pairs.iter().enumerate() {
        let period = planner.latest_due(&zones[usize::from(pair.zone)], pair.granularity).expect("a due period");
        let start = period.start.as_second();
        if start > pair.settled_start {
            due.push((index as u32, start));
        }
    }
    let planned = start.elapsed();
    let peak_per_pair = status_bytes("VmHWM:").saturating_sub(before) as f64 / PAIRS as f64;

    let start = Instant::now();
    let mut baseline_due = 0usize;
    for pair in pairs.iter().take(BASELINE_SAMPLE) {
        let zone = period::zone(&zones[usize::from(pair.zone)]).expect("a zone");
        let period = latest_due(pair.granularity, &zone, now).expect("a due period");
        if period.start.as_second() > pair.settled_start {
            baseline_due += 1;
        }
    }
    let baseline = start.elapsed().as_secs_f64() * (PAIRS as f64 / BASELINE_SAMPLE as f64);
    let planner_due_in_sample = due.iter().take_while(|(index, _)| (*index as usize) < BASELINE_SAMPLE).count();
    assert_eq!(planner_due_in_sample, baseline_due, "the planner and the baseline find the same due pairs");

    println!("pairs:                 {PAIRS} over {} zones", zones.len());
    println!("due collections found: {}", due.len());
    println!("planner:               {:.3} s  (target < 1 s on one core)", planned.as_secs_f64());
    println!("baseline, per pair:    {baseline:.3} s  (scaled from {BASELINE_SAMPLE} pairs)");
    println!("planner vs baseline:   {:.1}x faster", baseline / planned.as_secs_f64());
    println!("peak memory per pair:  {peak_per_pair:.1} bytes  (target < 300)");
}
