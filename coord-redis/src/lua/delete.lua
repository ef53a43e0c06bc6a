-- ARGV[3] path, [4] expected version or ''.
local e = check_session()
if e then return e end
return do_delete(ARGV[3], ARGV[4])
