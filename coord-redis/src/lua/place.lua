-- ARGV[3] dir, [4] the contender's name, [5] its sequence, [6..] the
-- markers of earlier children that do not block it (none: every one
-- does). Where it stands in the queue of dir (coord_core::backend::order):
-- {0} gone (no live child of that name and sequence), {1} first, or
-- {2, name, sequence} of the nearest earlier live child that blocks it.
-- A walk down the sorted set from its score: O(log N), plus the earlier
-- children that are dead (reaped here, as a listing would) or let pass.
local e = check_session()
if e then return e end
local dir, me, seq = ARGV[3], ARGV[4], ARGV[5]
if not live(dir) then return { 0 } end
local score = redis.call('ZSCORE', ckey(dir), me)
if not score or tonumber(score) ~= tonumber(seq) or not live(join(dir, me)) then
  return { 0 }
end
local markers = {}
for i = 6, #ARGV do table.insert(markers, ARGV[i]) end
local function blocks(name)
  for _, m in ipairs(markers) do
    if string.find(name, m, 1, true) then return false end
  end
  return true
end
-- Sequences are unique among a directory's children: a page goes on
-- below the last score of the one before.
local below = '(' .. seq
while true do
  local kids = redis.call('ZREVRANGEBYSCORE', ckey(dir), below, '-inf', 'WITHSCORES', 'LIMIT', 0, 16)
  if #kids == 0 then return { 1 } end
  for i = 1, #kids, 2 do
    if blocks(kids[i]) and live(join(dir, kids[i])) then
      return { 2, kids[i], kids[i + 1] }
    end
  end
  below = '(' .. kids[#kids]
end
