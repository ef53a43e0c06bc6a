-- ARGV[3] dir. Returns {name, score, name, score, ...} in order: by
-- sequence, then (score "inf") by name. Dead sessions' nodes are reaped first.
local e = check_session()
if e then return e end
local dir = ARGV[3]
if not live(dir) then return fail('NONODE', dir) end
local out = {}
local kids = redis.call('ZRANGE', ckey(dir), 0, -1, 'WITHSCORES')
for i = 1, #kids, 2 do
  if live(join(dir, kids[i])) then
    table.insert(out, kids[i])
    table.insert(out, kids[i + 1])
  end
end
return out
