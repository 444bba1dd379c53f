-- wrk script of bench/rate_limit.sh: counts the answers by status in each
-- wrk thread and prints their totals with the run's duration on one line,
-- "RESULT <200> <429> <other> <duration in microseconds>".
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  admitted = 0
  limited = 0
  other = 0
end

function response(status, headers, body)
  if status == 200 then
    admitted = admitted + 1
  elseif status == 429 then
    limited = limited + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local a, l, o = 0, 0, 0
  for _, thread in ipairs(threads) do
    a = a + thread:get("admitted")
    l = l + thread:get("limited")
    o = o + thread:get("other")
  end
  io.write(string.format("RESULT %d %d %d %d\n", a, l, o, summary.duration))
end
