-- Reap session ARGV[3] if its key is gone (on its keyspace notice).
return reap(ARGV[3])
