--[[
  Takes (or refreshes) a tenant slot for a session: the per-tenant semaphore that caps how many of
  a tenant's sessions run at once. A slot is a lease: it expires unless refreshed, so a slot of a
  worker that died comes back by itself. Time is the Redis server's (TIME), never a worker clock.
  KEYS[1] slots: sorted set, member session id, score lease expiry (ms)
  KEYS[2] waiters: sorted set, member step job id, score priority * 1e13 + arrival ms
  ARGV[1] session id
  ARGV[2] lease ttl in milliseconds
  ARGV[3] limit (slots of the tenant)
  ARGV[4] job id of the step asking (registered as a waiter when refused)
  ARGV[5] job priority (lower first)
  Returns {1, running} when the session holds a slot (taken now or already held; running counts
  it), {0, running} when every slot is taken (the job is now a waiter).
]]
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
local running = redis.call("ZCARD", KEYS[1])
if redis.call("ZSCORE", KEYS[1], ARGV[1]) or running < tonumber(ARGV[3]) then
  local added = redis.call("ZADD", KEYS[1], string.format("%.0f", now + ttl), ARGV[1])
  redis.call("PEXPIRE", KEYS[1], ttl * 2)
  redis.call("ZREM", KEYS[2], ARGV[4])
  return {1, running + added}
end
redis.call("ZADD", KEYS[2], "NX", string.format("%.0f", tonumber(ARGV[5]) * 1e13 + now), ARGV[4])
redis.call("PEXPIRE", KEYS[2], 86400000)
return {0, running}
