-- ARGV[3] path, [4] data, [5] expected version or ''.
local e = check_session()
if e then return e end
return do_set(ARGV[3], ARGV[4], ARGV[5])
