--[[
  Releases a session's tenant slot and hands back the waiters to wake: the caller promotes their
  delayed step jobs (interactive first, then oldest). A waiter whose job is no longer delayed just
  retries on its own timer, so popping it loses nothing.
  KEYS[1] slots: sorted set, member session id, score lease expiry (ms)
  KEYS[2] waiters: sorted set, member step job id, score priority * 1e13 + arrival ms
  ARGV[1] session id
  ARGV[2] how many waiters to pop
  Returns {released (1|0), job id…}.
]]
local released = redis.call("ZREM", KEYS[1], ARGV[1])
local out = {released}
local n = tonumber(ARGV[2])
if n > 0 then
  local popped = redis.call("ZPOPMIN", KEYS[2], n)
  for i = 1, #popped, 2 do
    out[#out + 1] = popped[i]
  end
end
return out
