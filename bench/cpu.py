"""CPU accounting for bench/collector.sh: what PostgreSQL (every process of the local server,
those that exited included) and a given process used between two snapshots.

`cpu.py snapshot SITE_PID > FILE` records, in clock ticks, every postgres process's CPU, the
postmaster's waited-for children's CPU (a backend that exits lands there) and SITE_PID's CPU.
`cpu.py split BEFORE AFTER JOBS WORKER_TICKS` prints CPU per collection by side. Linux only.
"""
import json
import os
import sys

TICK = os.sysconf("SC_CLK_TCK")


def stat(pid):
    """(command, parent pid, own ticks, waited-for children's ticks) of a process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    command = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    # After the command: state (3), ppid (4), ... utime (14), stime (15), cutime (16), cstime (17).
    return command, int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def snapshot(site_pid):
    processes = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = stat(int(entry))
            if found and found[0] == "postgres":
                processes[int(entry)] = found
    postmasters = [pid for pid, (_, ppid, _, _) in processes.items() if ppid not in processes]
    site = stat(site_pid)
    return {
        "postgres": {str(pid): own for pid, (_, _, own, _) in processes.items()},
        "reaped": sum(processes[pid][3] for pid in postmasters),
        "site": site[2] if site else 0,
    }


def split(before, after, jobs, worker_ticks):
    # Every process's ticks at the end are either its own (alive) or in its postmaster's
    # reaped total; those at the start were counted before the window.
    postgres = after["reaped"] - before["reaped"] + sum(after["postgres"].values()) - sum(before["postgres"].values())
    us = 1e6 / TICK / jobs
    print(
        f"CPU per collection: PostgreSQL {postgres * us:.0f} us, workers {worker_ticks * us:.0f} us "
        f"(together {(postgres + worker_ticks) * us:.0f} us), demo site {(after['site'] - before['site']) * us:.0f} us"
    )


if __name__ == "__main__":
    if sys.argv[1] == "snapshot":
        json.dump(snapshot(int(sys.argv[2])), sys.stdout)
    else:
        with open(sys.argv[2]) as b, open(sys.argv[3]) as a:
            split(json.load(b), json.load(a), int(sys.argv[4]), int(sys.argv[5]))
