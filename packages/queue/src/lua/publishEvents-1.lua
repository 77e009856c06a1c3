-- Appends events to a session's stream and refreshes its TTL, in one command (no pipeline).
-- KEYS[1] the stream; ARGV[1] approximate MAXLEN, ARGV[2] TTL in seconds, ARGV[3..] event JSON.
for i = 3, #ARGV do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[i])
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return #ARGV - 2
