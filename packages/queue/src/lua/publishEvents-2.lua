-- Appends events to a session's stream, keeps the stream within its budgets (entries and bytes),
-- refreshes the TTLs and tells the gateways' event hubs that the stream grew (PUBLISH on the
-- session's channel: a wake-up, the events stay in the stream), in one command (no pipeline).
-- KEYS[1] the stream, KEYS[2] its byte count (what its entries hold, as this script counts them);
-- ARGV[1] most entries, ARGV[2] TTL in seconds, ARGV[3] the channel, ARGV[4] most bytes,
-- ARGV[5..] event JSON.
-- Past either budget the oldest entries go, down to three quarters of both (so the trimming is
-- paid once per quarter of the budget, not at every publish); the newest entry always stays.
local maxLen = tonumber(ARGV[1])
local maxBytes = tonumber(ARGV[4])
-- An entry's size as counted: its JSON and about what the stream spends on its id and field.
local OVERHEAD = 32
local last
local added = 0
for i = 5, #ARGV do
  last = redis.call('XADD', KEYS[1], '*', 'e', ARGV[i])
  added = added + #ARGV[i] + OVERHEAD
end
local total = redis.call('INCRBY', KEYS[2], added)
local len = redis.call('XLEN', KEYS[1])
if total > maxBytes or len > maxLen then
  local keepBytes = math.floor(maxBytes * 3 / 4)
  local keepLen = math.floor(maxLen * 3 / 4)
  while total > keepBytes or len > keepLen do
    local entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 256)
    local cut
    for i = 1, #entries - 1 do
      if total <= keepBytes and len <= keepLen then break end
      total = total - #entries[i][2][2] - OVERHEAD
      len = len - 1
      cut = entries[i + 1][1]
    end
    if cut == nil then break end
    redis.call('XTRIM', KEYS[1], 'MINID', cut)
    if #entries < 256 then break end
  end
  -- Entries this script never counted (a stream older than its count) make `total` drift low:
  -- never below zero.
  if total < 0 then total = 0 end
  redis.call('SET', KEYS[2], total)
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('PUBLISH', ARGV[3], last)
return #ARGV - 4
