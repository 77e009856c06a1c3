--[[
  Releases a session lock only if the caller owns it (compare-and-delete).
  KEYS[1] lock key
  ARGV[1] owner token
  Returns 1 when released, 0 when it was not ours.
]]
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
