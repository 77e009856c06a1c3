--[[
  Renews many tenant slots at once (one renewal tick of a worker process), each only if its
  session still holds it (as extendSlot-1.lua).
  KEYS[i]   slots of a tenant: sorted set, member session id, score lease expiry (ms)
  ARGV[1]   lease ttl in milliseconds (the same for every slot of the tick)
  ARGV[i+1] session id of KEYS[i]
  Returns a list: 1 where renewed, 0 where the slot had expired or was released.
  Single-node Redis only (tenants' keys span slots on a Cluster: semaphore.ts renews one by one).
]]
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local expiry = string.format("%.0f", now + ttl)
local out = {}
for i, key in ipairs(KEYS) do
  local score = redis.call("ZSCORE", key, ARGV[i + 1])
  if not score or tonumber(score) <= now then
    out[i] = 0
  else
    redis.call("ZADD", key, "XX", expiry, ARGV[i + 1])
    redis.call("PEXPIRE", key, ttl * 2)
    out[i] = 1
  end
end
return out
