-- Open session SID: ARGV[3] = TTL in ms. Returns 1. (Ids are random UUIDs;
-- running it twice, after a lost answer, is harmless.)
redis.call('SET', skey(SID), '1', 'PX', ARGV[3])
redis.call('SADD', NS .. 'sessions', SID)
return 1
