--[[
  Reserves a tenant's model tokens in the current window (the token budget): the estimate of the
  next prompt is added when it fits what is left. An empty window admits any call, so a prompt
  larger than the whole budget still runs (alone in its window) instead of waiting forever.
  KEYS[1] window counter
  ARGV[1] tokens to reserve
  ARGV[2] budget of the window
  ARGV[3] counter ttl in milliseconds (a little over the window)
  Returns {1, used after} when reserved, {0, used} when the window has too little left.
]]
local used = tonumber(redis.call("GET", KEYS[1]) or "0")
local want = tonumber(ARGV[1])
if used > 0 and used + want > tonumber(ARGV[2]) then
  return {0, used}
end
local after = redis.call("INCRBY", KEYS[1], want)
redis.call("PEXPIRE", KEYS[1], ARGV[3])
return {1, after}
