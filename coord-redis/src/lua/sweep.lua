-- Reap every session whose key is gone (notices are fire-and-forget: one
-- may have been missed while nobody listened). Returns how many.
local n = 0
for _, s in ipairs(redis.call('SMEMBERS', NS .. 'sessions')) do
  if redis.call('EXISTS', skey(s)) == 0 then
    reap(s)
    n = n + 1
  end
end
return n
