-- A transaction (coord_core::Transaction): ARGV[3] its number in the
-- session ('' for one that writes nothing), [4] how long its outcome is
-- kept, in ms; [5] the number of fences, then each fence's path and
-- stamp; then the ops, seven arguments each:
-- kind (check | create | set | delete), path, data, version ('' for any),
-- ephemeral and sequential ('1' or '0'), TTL in ms or ''.
--
-- Every fence, then every op, is checked before anything is written, so
-- against the state before the transaction. The first that does not hold
-- is returned as "TXNFAILED fence <i> FENCELOST" or "TXNFAILED op <i>
-- <CODE>" (i from 0), a create under an ephemeral node as NOTSUPPORTED.
-- Then every write, in op order, with the same functions as the single
-- writes. None can fail now: no written path is under another (the rules
-- of coord_core::Transaction, checked before it is sent), so no write
-- changes what another write's check found.
-- Returns one {kind, answer} per op: {'checked', 1}, {'created', create's
-- answer}, {'set', set's answer}, {'deleted', 1}.
local e = check_session()
if e then return e end
-- Its outcome, kept for a look after a lost answer (txn_outcome.lua),
-- which marks it '' when it finds none: this run came too late then.
local mk = nil
if ARGV[3] ~= '' then
  mk = NS .. 't:' .. SID .. ':' .. ARGV[3]
  if redis.call('EXISTS', mk) == 1 then return fail('TXNLATE', ARGV[3]) end
end
local i = 6
for f = 0, tonumber(ARGV[5]) - 1 do
  local fp, st = ARGV[i], ARGV[i + 1]
  if fp == '/' or not live(fp) or redis.call('HGET', nkey(fp), 's') ~= st then
    return { err = 'TXNFAILED fence ' .. f .. ' FENCELOST' }
  end
  i = i + 2
end
local ops = {}
while i <= #ARGV do
  table.insert(ops, { ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6] })
  i = i + 7
end
for k, op in ipairs(ops) do
  local kind, path, bad = op[1], op[2], nil
  if kind == 'check' or kind == 'set' then
    bad = version_check(path, op[4])
  elseif kind == 'delete' then
    bad = delete_check(path, op[4])
  elseif kind == 'create' then
    bad = create_check(path, op[6])
  else
    return fail('BADOP', kind)
  end
  if bad then
    local code = string.match(bad.err, '^%S+')
    if code == 'NOTSUPPORTED' then return bad end
    return { err = 'TXNFAILED op ' .. (k - 1) .. ' ' .. code }
  end
end
-- Checks are done: from here on the script writes.
local out = {}
local done = { check = 'checked', create = 'created', set = 'set', delete = 'deleted' }
for k, op in ipairs(ops) do
  local kind, path, r = op[1], op[2], 1
  if kind == 'create' then
    r = do_create(path, op[3], op[5], op[6], '0', op[7])
  elseif kind == 'set' then
    r = do_set(path, op[3], op[4])
  elseif kind == 'delete' then
    r = do_delete(path, op[4])
  end
  if type(r) == 'table' and r.err then return r end
  out[k] = { done[kind], r }
end
if mk then redis.call('SET', mk, cmsgpack.pack(out), 'PX', ARGV[4]) end
return out
