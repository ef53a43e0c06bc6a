-- End session ARGV[3] now (close, or a test's expiry): delete its key, then
-- reap it. Returns how many ephemeral nodes went with it.
redis.call('DEL', skey(ARGV[3]))
return reap(ARGV[3])
