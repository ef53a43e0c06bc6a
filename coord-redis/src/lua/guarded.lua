-- ARGV[3] fence path, [4] fence stamp, [5] op: create | set | delete | put,
-- [6] path, then create: [7] data [8] ephemeral [9] sequential;
-- set: [7] data [8] expected; delete: [7] expected; put: [7] data.
-- A put answers {'set', set's answer} or {'created', create's answer}.
local e = check_session()
if e then return e end
local fp = ARGV[3]
if fp == '/' or not live(fp) or redis.call('HGET', nkey(fp), 's') ~= ARGV[4] then
  return fail('LOCKLOST', fp)
end
local op = ARGV[5]
if op == 'create' then return do_create(ARGV[6], ARGV[7], ARGV[8], ARGV[9], '0') end
if op == 'set' then return do_set(ARGV[6], ARGV[7], ARGV[8]) end
if op == 'delete' then return do_delete(ARGV[6], ARGV[7]) end
if op == 'put' then
  -- In this one script with the fence check: nothing can make or delete
  -- the node between the look and the write.
  local r, kind
  if live(ARGV[6]) then
    r, kind = do_set(ARGV[6], ARGV[7], ''), 'set'
  else
    r, kind = do_create(ARGV[6], ARGV[7], '0', '0', '0'), 'created'
  end
  if r.err then return r end
  return { kind, r }
end
return fail('BADOP', op)
