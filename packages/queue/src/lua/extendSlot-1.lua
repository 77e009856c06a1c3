--[[
  Renews a session's tenant slot while its step runs, if the session still holds it.
  KEYS[1] slots: sorted set, member session id, score lease expiry (ms)
  ARGV[1] session id
  ARGV[2] lease ttl in milliseconds
  Returns 1 when renewed, 0 when the slot had expired or was released.
]]
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local score = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then
  return 0
end
redis.call("ZADD", KEYS[1], "XX", string.format("%.0f", now + tonumber(ARGV[2])), ARGV[1])
redis.call("PEXPIRE", KEYS[1], tonumber(ARGV[2]) * 2)
return 1
