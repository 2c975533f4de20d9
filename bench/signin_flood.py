"""bench/signin_flood.sh's probe: GET /api/me with a session cookie every 50 ms on one kept-alive
connection while the flood runs, and the server's resident memory from /proc every 50 ms.
Prints the median and p90 latency and the peak RSS growth over the RSS before the flood, which
the caller reads before starting the flood and passes as the fifth argument (in KiB)."""
import http.client
import statistics
import sys
import time

port, cookie, pid, seconds = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
base_kib = int(sys.argv[5])


def rss_kib(field):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


base_rss = base_kib
peak_rss = max(base_rss, rss_kib("VmRSS"))
latencies = []
statuses = {}
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    started = time.monotonic()
    try:
        connection.request("GET", "/api/me", headers={"Cookie": cookie})
        response = connection.getresponse()
        response.read()
        statuses[response.status] = statuses.get(response.status, 0) + 1
        latencies.append(time.monotonic() - started)
    except (OSError, http.client.HTTPException):
        statuses["error"] = statuses.get("error", 0) + 1
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    peak_rss = max(peak_rss, rss_kib("VmRSS"))
    time.sleep(max(0.0, 0.05 - (time.monotonic() - started)))

latencies.sort()
median = statistics.median(latencies) * 1000 if latencies else float("nan")
p90 = latencies[int(len(latencies) * 0.9)] * 1000 if latencies else float("nan")
print(f"/api/me: {len(latencies)} requests, statuses {statuses}, median {median:.1f} ms, p90 {p90:.1f} ms")
print(f"rss: before {base_rss / 1024:.0f} MiB, peak {peak_rss / 1024:.0f} MiB, "
      f"growth {(peak_rss - base_rss) / 1024:.0f} MiB, VmHWM {rss_kib('VmHWM') / 1024:.0f} MiB")
