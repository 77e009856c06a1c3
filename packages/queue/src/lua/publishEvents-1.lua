-- Appends events to a session's stream, refreshes its TTL and tells the gateways' event hubs that
-- the stream grew (PUBLISH on the session's channel: a wake-up, the events stay in the stream), in
-- one command (no pipeline).
-- KEYS[1] the stream; ARGV[1] approximate MAXLEN, ARGV[2] TTL in seconds, ARGV[3] the channel,
-- ARGV[4..] event JSON.
local last
for i = 4, #ARGV do
  last = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[i])
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], last)
return #ARGV - 3
