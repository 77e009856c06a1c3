--[[
  Extends a session lock if the caller still owns it.
  KEYS[1] lock key
  ARGV[1] owner token
  ARGV[2] ttl in milliseconds
  Returns 1 when extended, 0 when the lock is gone or owned by another runner.
]]
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
