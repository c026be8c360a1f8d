--[[
  wrk script for `lockstock bench sale`: POSTs {"quantity":1} to the URL's path, each request with the
  next bearer token of a file (one token a line), so every request is a distinct buyer; counts the
  responses by status and prints one JSON line at the end.

  Arguments (after `--`): tokens file, first token (0-based), number of tokens to use, threads.
  Threads take tokens in turn (thread t: first + t, first + t + threads, ...); they wrap around when
  the range is used up (a repeated buyer then shows up as a 409 limit_reached, counted apart).

  Prints   {"requests": n, "durationUs": n, "statuses": {"<status>": n, ...},
            "latencyUs": {"p50": n, "p99": n, "mean": n},
            "errors": {"connect": n, "read": n, "write": n, "timeout": n}}
]]
local threads = {}

function setup(thread)
  thread:set('thread_index', #threads)
  table.insert(threads, thread)
end

local tokens = {}
local next_token = 0
local stride = 1
statuses = {} -- a global: done() reads each thread's with thread:get

function init(args)
  local first = tonumber(args[2])
  local count = tonumber(args[3])
  local index = 0
  for line in io.lines(args[1]) do
    if index >= first and index < first + count then
      tokens[#tokens + 1] = line
    end
    index = index + 1
  end
  stride = tonumber(args[4])
  next_token = thread_index
  wrk.method = 'POST'
  wrk.body = '{"quantity":1}'
end

function request()
  local token = tokens[(next_token % #tokens) + 1]
  next_token = next_token + stride
  -- Headers given here replace wrk.headers (wrk.format adds Host and Content-Length).
  return wrk.format(nil, nil, { ['Content-Type'] = 'application/json', Authorization = 'Bearer ' .. token })
end

function response(status)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency)
  local totals = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get('statuses')) do
      totals[status] = (totals[status] or 0) + n
    end
  end
  local parts = {}
  for status, n in pairs(totals) do
    parts[#parts + 1] = string.format('"%d": %d', status, n)
  end
  local errors = summary.errors
  io.write(string.format(
    '{"requests": %d, "durationUs": %d, "statuses": {%s}, "latencyUs": {"p50": %d, "p99": %d, "mean": %d}, '
      .. '"errors": {"connect": %d, "read": %d, "write": %d, "timeout": %d}}\n',
    summary.requests, summary.duration, table.concat(parts, ', '),
    latency:percentile(50), latency:percentile(99), latency.mean,
    errors.connect, errors.read, errors.write, errors.timeout))
end
