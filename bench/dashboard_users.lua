-- bench/dashboard.sh's uncached mode: GET /api/dashboard as a different user on every request,
-- rotating over the API tokens in the file named by SERVIO_BENCH_TOKENS (one a line), so that
-- no request finds another's dashboard kept and no two wait for the same render.
local tokens = {}
for line in io.lines(os.getenv("SERVIO_BENCH_TOKENS")) do
    if line ~= "" then tokens[#tokens + 1] = line end
end
local next_token = 0

function setup(thread)
    -- Threads start at different users.
    thread:set("offset", math.random(#tokens))
end

request = function()
    next_token = next_token + 1
    local token = tokens[(next_token + (offset or 0)) % #tokens + 1]
    return wrk.format("GET", "/api/dashboard", { ["Authorization"] = "Bearer " .. token })
end
