/** The Lua scripts wrk runs for each workload (see load.ts). */

/**
 * `done` prints the figures as one JSON line; shared by every script. wrk reports the whole -d
 * duration even when its threads stopped sooner, so a script whose work can run out defines
 * `ranFor(whole)`, the microseconds its threads actually ran.
 */
const WRK_DONE = `
function done(summary, latency, requests)
  local e = summary.errors
  local duration = summary.duration
  if ranFor ~= nil then duration = ranFor(duration) end
  io.write(string.format('WRK_JSON {"requests":%.0f,"durationUs":%.0f,"p50Us":%.0f,"p99Us":%.0f,"failures":%.0f}\\n',
    summary.requests, duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
`;

const WRK_THREAD_INDEX = `
local threads = {}
function setup(thread)
  thread:set("tindex", #threads)
  threads[#threads + 1] = thread
end
`;

/** GET and POST: args token, GET|POST, idBase, and for GET a Prefer header ("" for none). */
export const WRK_SIMPLE = `${WRK_THREAD_INDEX}
function init(args)
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  if args[2] == "GET" and args[4] ~= nil and args[4] ~= "" then wrk.headers["Prefer"] = args[4] end
  if args[2] == "POST" then
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
    local base = tonumber(args[3]) + tindex * 1000000000
    local n = 0
    request = function()
      n = n + 1
      return wrk.format(nil, nil, nil, string.format('{"id":%.0f,"name":"bench plant %.0f","tag":"bench"}', base + n, base + n))
    end
  end
end
${WRK_DONE}`;

/** Batches: args token, idBase, size; each request POSTs that many plants with new ids. */
export const WRK_BATCH = `${WRK_THREAD_INDEX}
local size, base, n
function init(args)
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  wrk.headers["Content-Type"] = "application/json"
  wrk.method = "POST"
  base = tonumber(args[2]) + tindex * 1000000000
  size = tonumber(args[3])
  n = 0
end
function request()
  local items = {}
  for i = 1, size do
    n = n + 1
    items[i] = string.format('{"id":%.0f,"name":"bench plant %.0f","tag":"bench"}', base + n, base + n)
  end
  return wrk.format(nil, "/plants/batch", nil, "[" .. table.concat(items, ",") .. "]")
end
${WRK_DONE}`;

/**
 * Mixed: args tokensFile, idBase, postShare, followShare, limits (comma-separated). A page names
 * its account in each plant's name ("m0042 plant 000001", bench/seed-data.ts), which is how the
 * script knows which token follows its next link, whichever connection answered.
 */
export const WRK_MIXED = `${WRK_THREAD_INDEX}
local tokens, limits, waiting = {}, {}, {}
local base, n, postShare, followShare
local maxWaiting = 256
function init(args)
  for line in io.lines(args[1]) do
    if line ~= "" then tokens[#tokens + 1] = line end
  end
  base = tonumber(args[2]) + tindex * 1000000000
  n = 0
  postShare = tonumber(args[3])
  followShare = tonumber(args[4])
  for l in string.gmatch(args[5], "%d+") do limits[#limits + 1] = tonumber(l) end
  math.randomseed(os.time() + tindex * 7919)
end
local function auth(i)
  return { ["Authorization"] = "Bearer " .. tokens[i], ["Content-Type"] = "application/json" }
end
function request()
  local r = math.random()
  if r < postShare then
    n = n + 1
    return wrk.format("POST", "/plants", auth(math.random(#tokens)),
      string.format('{"id":%.0f,"name":"bench plant %.0f","tag":"bench"}', base + n, base + n))
  end
  if #waiting > 0 and math.random() < followShare then
    local item = table.remove(waiting, 1)
    return wrk.format("GET", item[2], auth(item[1]))
  end
  return wrk.format("GET", "/plants?limit=" .. limits[math.random(#limits)], auth(math.random(#tokens)))
end
function response(status, headers, body)
  local link = headers["link"] or headers["Link"]
  if link == nil or #waiting >= maxWaiting then return end
  local path = string.match(link, "<(/[^>]*)>") or string.match(link, "<https?://[^/]+(/[^>]*)>")
  local account = string.match(body, '"name":"m(%d+) ')
  if path and account then waiting[#waiting + 1] = { tonumber(account), path } end
end
${WRK_DONE}`;

/**
 * By id: args token, method, firstId, count, stamp, threads. With T threads, thread t takes
 * the ids firstId + t, firstId + t + T, ... GET and PATCH cycle over them. DELETE takes each once
 * and never asks past the last (that would be a 404, a cheaper answer counted as a failure): a
 * thread whose ids are used up stops, noting when on the monotonic clock (LuaJIT's ffi, as wrk
 * has no clock of its own), and `ranFor` gives the run's duration up to the last thread's stop.
 */
export const WRK_BY_ID = `${WRK_THREAD_INDEX}
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec *now);
]]
local clock = ffi.new("bench_timespec")
local CLOCK_MONOTONIC = 1
local function nowUs()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, clock)
  return tonumber(clock.tv_sec) * 1e6 + tonumber(clock.tv_nsec) / 1e3
end
local token, method, first, count, stamp, step, n
function init(args)
  token, method = args[1], args[2]
  first, count, stamp, step = tonumber(args[3]), tonumber(args[4]), tonumber(args[5]), tonumber(args[6])
  n = 0
end
function request()
  local seq = tindex + n * step
  if method == "DELETE" and seq >= count then
    if stoppedUs == nil then
      stoppedUs = nowUs()
      wrk.thread:stop()
    end
    -- Sends nothing: the connection waits for the thread to stop.
    return ""
  end
  if startedUs == nil then startedUs = nowUs() end
  n = n + 1
  local path = string.format("/plants/%.0f", first + seq % count)
  local headers = { ["Authorization"] = "Bearer " .. token }
  if method == "PATCH" then
    headers["Content-Type"] = "application/merge-patch+json"
    return wrk.format("PATCH", path, headers, string.format('{"name":"patched %.0f"}', stamp + seq))
  end
  return wrk.format(method, path, headers)
end
function ranFor(whole)
  local started, stopped
  for _, thread in ipairs(threads) do
    local from, to = thread:get("startedUs"), thread:get("stoppedUs")
    if to == nil then return whole end
    if from ~= nil and (started == nil or from < started) then started = from end
    if stopped == nil or to > stopped then stopped = to end
  end
  if started == nil then return whole end
  return math.min(whole, stopped - started)
end
${WRK_DONE}`;

/** Bad tokens: each request with a token no one has, 43 random base64url characters after \`pst_\`. */
export const WRK_BAD_TOKENS = `
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
math.randomseed(os.time())
function request()
  local chars = {}
  for i = 1, 43 do
    local r = math.random(1, 64)
    chars[i] = alphabet:sub(r, r)
  end
  return wrk.format("GET", nil, { ["Authorization"] = "Bearer pst_" .. table.concat(chars) })
end
${WRK_DONE}`;
