-- ARGV[3] dir, [4] n. The first n live children of dir, as children.lua
-- answers ({name, score, ...}, by sequence, then by name): a walk up the
-- sorted set by rank, O(log N + n), plus the dead children it reaps.
local e = check_session()
if e then return e end
local dir = ARGV[3]
local n = tonumber(ARGV[4])
if not live(dir) then return fail('NONODE', dir) end
local k = ckey(dir)
local out = {}
-- The last member looked at that is still in the set: the next page
-- starts after it (a reap may remove members anywhere, shifting ranks).
local anchor = nil
while #out < 2 * n do
  local start = 0
  if anchor then start = redis.call('ZRANK', k, anchor) + 1 end
  local want = n - #out / 2
  local kids = redis.call('ZRANGE', k, start, start + want - 1, 'WITHSCORES')
  if #kids == 0 then break end
  for i = 1, #kids, 2 do
    if live(join(dir, kids[i])) then
      table.insert(out, kids[i])
      table.insert(out, kids[i + 1])
      if #out >= 2 * n then break end
    end
  end
  for i = #kids - 1, 1, -2 do
    if redis.call('ZSCORE', k, kids[i]) then
      anchor = kids[i]
      break
    end
  end
end
return out
