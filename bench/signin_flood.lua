-- bench/signin_flood.sh: POST /api/signin with the bench user's email, three wrong passwords
-- for each right one; counts answers by status.
local email = os.getenv("SERVIO_BENCH_EMAIL")
local password = os.getenv("SERVIO_BENCH_PASSWORD")
local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

function init(args)
    counts = {}
    n = 0
end

function request()
    n = n + 1
    local sent = password
    if n % 4 ~= 0 then sent = "a wrong password " .. n end
    local body = string.format('{"email":"%s","password":"%s"}', email, sent)
    return wrk.format("POST", "/api/signin", { ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
    counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
    local total = {}
    for _, thread in ipairs(threads) do
        for status, count in pairs(thread:get("counts")) do
            total[status] = (total[status] or 0) + count
        end
    end
    for status, count in pairs(total) do
        io.write(string.format("status %d: %d\n", status, count))
    end
end
