-- wrk: the demo site's metric tool, as the collector calls it (the brief's args for one day in
-- one zone, the bearer token from SERVIO_BENCH_TOKEN).
wrk.method = "POST"
wrk.body = '{"from":"2026-08-20","to":"2026-08-20","timezone":"Pacific/Auckland"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("SERVIO_BENCH_TOKEN")
