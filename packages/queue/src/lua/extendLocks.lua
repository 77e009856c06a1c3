--[[
  Extends many session locks at once (one renewal tick of a worker process), each only if the
  caller still owns it.
  KEYS[i]  lock key
  ARGV[1]  ttl in milliseconds (the same for every lock of the tick)
  ARGV[i+1] owner token of KEYS[i]
  Returns a list: 1 where the lock was extended, 0 where it is gone or owned by another runner.
  Single-node Redis only: the keys carry one hash tag per session, so on a Cluster they span
  slots (lock.ts renews each with extendLock-1.lua there).
]]
local ttl = ARGV[1]
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call("GET", key) == ARGV[i + 1] then
    out[i] = redis.call("PEXPIRE", key, ttl)
  else
    out[i] = 0
  end
end
return out
