-- ARGV[3] fence path, [4] fence stamp, [5] op: create | set | delete,
-- [6] path, then create: [7] data [8] ephemeral [9] sequential;
-- set: [7] data [8] expected; delete: [7] expected.
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
return fail('BADOP', op)
