#!/usr/bin/env python3
"""Benchmark: `servio check` on manifests of many small tools (issue 25, point 3).

    bench/many_tools.py [--tools 20000,100000] [--rounds N] [--bin-dir DIR] [--timeout S]

Builds the release `servio` (or, with --bin-dir, takes it from DIR, such as a binary built from
an older commit), writes one valid manifest per tool count on a single line (each tool named
outside the namespace.actionTarget form and described in two words: two warnings per tool,
40,000 for 20,000 tools), then times `servio check` (human output) and `servio check --format
json` on each, and reads their peak memory. Prints median wall times, CPU times and peak RSS.
A run longer than --timeout seconds is stopped and shown as such.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def manifest(count):
    tools = [{"name": f"t{i}", "description": "Do it", "input_schema": {"type": "object"}} for i in range(count)]
    return json.dumps({
        "name": "Many", "version": "1.0.0",
        "server": {"url": "https://many.example.com/api"},
        "auth": {"type": "bearer"},
        "tools": tools,
    }, separators=(",", ":"))


def run(cmd, timeout):
    """Wall time, CPU time and peak RSS (bytes) of one command, or None past the timeout."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            return None
        time.sleep(0.01)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"{cmd} failed with exit {code}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", default="20000,100000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin-dir", help="take servio from here instead of building it")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    if args.bin_dir is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "servio"], cwd=ROOT, check=True)
        servio = os.path.join(ROOT, "target", "release", "servio")
    else:
        servio = os.path.join(args.bin_dir, "servio")
    print("| tools | MB | output | median wall s | median CPU s | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for count in [int(n) for n in args.tools.split(",")]:
            path = os.path.join(tmp, f"many-{count}.json")
            with open(path, "w") as f:
                f.write(manifest(count))
            size = os.path.getsize(path) / 1e6
            for output, extra in [("human", []), ("json", ["--format", "json"])]:
                samples = [run([servio, "check", *extra, path], args.timeout) for _ in range(args.rounds)]
                if any(s is None for s in samples):
                    print(f"| {count} | {size:.1f} | {output} | over {args.timeout:.0f} (stopped) | | |")
                    continue
                wall = statistics.median(s[0] for s in samples)
                cpu = statistics.median(s[1] for s in samples)
                rss = max(s[2] for s in samples) / 1e6
                print(f"| {count} | {size:.1f} | {output} | {wall:.3f} | {cpu:.3f} | {rss:.0f} |")


if __name__ == "__main__":
    main()
