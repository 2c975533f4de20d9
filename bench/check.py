#!/usr/bin/env python3
"""Benchmark: `servio check` over the corpus against a plain serde_json::Value parse.

    bench/check.py [--rounds N] [--corpus DIR] [--bin-dir DIR]

Builds the release binaries (or, with --bin-dir, takes `servio` and `baseline_parse` from DIR,
such as binaries built from an older commit), generates the corpus when missing (bench/gen_corpus.py), then in
one run alternates, round after round, the baseline (`baseline_parse`: read every file and
parse it into a serde_json::Value) and `servio check --format json` with one thread and with
the default number of threads. Reports median wall times, throughput, the ratio of check
throughput to baseline throughput (target: at least 0.75 with one thread), and the peak
memory of checking the 5 MB manifest against its size (target: under 10x).
"""
import argparse, os, resource, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    """Wall time and peak RSS (bytes) of one command, its output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"{cmd} failed with exit {code}")
    return elapsed, usage.ru_maxrss * 1024


def corpus_bytes(path):
    total = 0
    for base, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(base, f)) for f in files if f.endswith(".json"))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--corpus", default=os.path.join(ROOT, "bench", "corpus"))
    ap.add_argument("--bin-dir", help="take servio and baseline_parse from here instead of building them")
    args = ap.parse_args()
    if args.bin_dir is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "servio", "--example", "baseline_parse"], cwd=ROOT, check=True)
    if not os.path.isdir(args.corpus):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_corpus.py"), args.corpus], check=True)
    if args.bin_dir is None:
        servio = os.path.join(ROOT, "target", "release", "servio")
        baseline = os.path.join(ROOT, "target", "release", "examples", "baseline_parse")
    else:
        servio = os.path.join(args.bin_dir, "servio")
        baseline = os.path.join(args.bin_dir, "baseline_parse")
    large = os.path.join(args.corpus, "large", "large.json")
    size = corpus_bytes(args.corpus)

    commands = {
        "baseline: serde_json::Value parse": [baseline, args.corpus],
        "servio check, 1 thread": [servio, "check", "--format", "json", "-j", "1", args.corpus],
        "servio check, default threads": [servio, "check", "--format", "json", args.corpus],
    }
    times = {name: [] for name in commands}
    run(commands["baseline: serde_json::Value parse"])  # warm the page cache
    for _ in range(args.rounds):
        for name, cmd in commands.items():
            times[name].append(run(cmd)[0])
    base = statistics.median(times["baseline: serde_json::Value parse"])

    print(f"corpus: {size / 1e6:.1f} MB in {sum(len(f) for _, _, f in os.walk(args.corpus))} files, {args.rounds} rounds, median wall time")
    print()
    print("| run | median s | MB/s | throughput vs baseline |")
    print("|---|---|---|---|")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"| {name} | {median:.3f} | {size / 1e6 / median:.1f} | {base / median:.2f}x |")

    large_size = os.path.getsize(large)
    check_rss = max(run([servio, "check", "--format", "json", large])[1] for _ in range(3))
    base_rss = max(run([baseline, large])[1] for _ in range(3))
    print()
    print(f"5 MB manifest ({large_size / 1e6:.2f} MB): peak RSS of servio check {check_rss / 1e6:.1f} MB = "
          f"{check_rss / large_size:.1f}x its size (baseline parse: {base_rss / 1e6:.1f} MB = {base_rss / large_size:.1f}x)")


if __name__ == "__main__":
    main()
