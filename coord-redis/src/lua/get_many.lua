-- ARGV[3..] paths. Returns one answer per path, each as get.lua's: false
-- (nil) or {data, version, stamp, ephemeral 1/0, creation time in ms or
-- -1, owner session}.
local e = check_session()
if e then return e end
local out = {}
for i = 3, #ARGV do
  local p = ARGV[i]
  if p == '/' then
    out[#out + 1] = { '', 0, 0, 0, -1, '' }
  elseif not live(p) then
    out[#out + 1] = false
  else
    local f = redis.call('HMGET', nkey(p), 'd', 'v', 's', 'o', 't')
    local eph = 0
    if f[4] ~= '' then eph = 1 end
    out[#out + 1] = { f[1], tonumber(f[2]), tonumber(f[3]), eph, tonumber(f[5]) or -1, f[4] }
  end
end
return out
