-- ARGV[3] path. Returns nil, or {data, version, stamp, ephemeral 1/0,
-- creation time in ms since the epoch or -1 when none is recorded, owner
-- session ('' unless ephemeral)}.
local e = check_session()
if e then return e end
local p = ARGV[3]
if p == '/' then return { '', 0, 0, 0, -1, '' } end
if not live(p) then return false end
local f = redis.call('HMGET', nkey(p), 'd', 'v', 's', 'o', 't')
local eph = 0
if f[4] ~= '' then eph = 1 end
return { f[1], tonumber(f[2]), tonumber(f[3]), eph, tonumber(f[5]) or -1, f[4] }
