-- ARGV[3] path, [4] data, [5] ephemeral, [6] sequential, [7] recover,
-- [8] TTL in ms or ''.
local e = check_session()
if e then return e end
return do_create(ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8])
