-- Shared by every coord-redis script (prepended to each body).
--
-- ARGV[1] is the store's key prefix ("{ns}:"), ARGV[2] the calling session's
-- id; a script's own arguments start at ARGV[3]. Keys are computed here from
-- paths, so scripts declare none: coord-redis needs one primary that holds
-- the whole namespace (the "{ns}" hash tag keeps it in one slot).
--
-- Layout, every key under the prefix:
--   n:<path>   hash of a node: d data, v version, s stamp, o owner session
--              ('' unless ephemeral), c creating session, q sequence ('' if none),
--              t creation time (ms since the epoch by the server's TIME; absent
--              on nodes made by older versions); on a TTL node only: x its TTL
--              id, l its TTL in ms
--   c:<path>   sorted set of a node's children: score = sequence, or inf
--              for children without one (ties order by name)
--   q:<path>   counter of the sequential children of a directory
--   s:<sid>    a session: exists while it lives (PX TTL, kept by heartbeats)
--   e:<sid>    set of the paths of a session's ephemeral nodes
--   sessions   set of the ids of sessions not yet reaped
--   t:<sid>:<n>  the answer of a session's transaction n (msgpack), kept a
--              while (PX) for a look after a lost answer; '' when that
--              look found none
--   A TTL node is reaped as an ephemeral node is: it has a TTL id
--   ('ttl-<its stamp>') that is a session of its own, s:<id> with PX set to
--   the node's TTL (again by every set), e:<id> holding the node's path; so
--   the key's expiry notice or a read that finds it gone deletes the node.
--   stamp      the last stamp or version handed out (see next_stamp); absent
--              on a fresh (or data-losing restarted) server
-- Channels: w:<path> (the node was deleted; message = its stamp), u:<path> (the node was
-- set or deleted; message = its stamp), cw:<dir> (its children changed),
-- ended (a session was reaped; message = its id).
--
-- Failures are returned (never raised: Redis does not roll a script back)
-- as error replies "<CODE> <path>" ("NODEEXISTS <stamp> <path>"), before the script has written anything.

local NS = ARGV[1]
local SID = ARGV[2]

local function nkey(p) return NS .. 'n:' .. p end
local function ckey(p) return NS .. 'c:' .. p end
local function qkey(p) return NS .. 'q:' .. p end
local function skey(s) return NS .. 's:' .. s end
local function ekey(s) return NS .. 'e:' .. s end

local function num(n) return string.format('%d', n) end

local function parent(p)
  local i = string.find(p, '/[^/]*$')
  if i == nil or i == 1 then return '/' end
  return string.sub(p, 1, i - 1)
end

local function base(p) return string.match(p, '[^/]*$') end

local function join(d, n)
  if d == '/' then return '/' .. n end
  return d .. '/' .. n
end

local function fail(code, p) return { err = code .. ' ' .. p } end

local function notify_children(d) redis.call('PUBLISH', NS .. 'cw:' .. d, 'c') end
-- The message is the deleted node's stamp, so a waiter can tell the
-- deletion of the node it saw from that of an earlier one at that path.
local function notify_gone(p, stamp) redis.call('PUBLISH', NS .. 'w:' .. p, stamp) end
-- Any change to the node itself (a set, or its deletion), for data watches;
-- the message is the stamp of the node that changed, as on w:.
local function notify_changed(p, stamp) redis.call('PUBLISH', NS .. 'u:' .. p, stamp) end

-- The server's clock (TIME), as {whole milliseconds since the epoch (a
-- node's creation time, as a string), microseconds since the epoch (a
-- number)}. Redis 7 replicates (and appends to the AOF) a script's
-- effects, never the script itself, so reading the clock before writing
-- is allowed, and a replica or an AOF replay stores the values this run
-- computed. Microseconds since the epoch stay below 2^53 (exact in Lua's
-- doubles) until the year 2255.
local function server_time()
  local t = redis.call('TIME')
  local s, us = tonumber(t[1]), tonumber(t[2])
  return num(s * 1000 + math.floor(us / 1000)), s * 1000000 + us
end

-- The next stamp (or version): max(last + 1, the server's clock in
-- microseconds), stored as the new last. Strictly increasing while the
-- `stamp` key lives. A stamp runs ahead of the clock only by the few
-- handed out within one microsecond (one create making many parents), so
-- when a restart without the data loses the key, the clock carries on
-- above every stamp handed out before — unless the server's clock was
-- stepped back by more than the time the server was down.
-- now_us is server_time()'s second value.
local function next_stamp(now_us)
  local st = tonumber(redis.call('GET', NS .. 'stamp') or '0') + 1
  if now_us > st then st = now_us end
  st = num(st)
  redis.call('SET', NS .. 'stamp', st)
  return st
end

-- Remove an existing node that has no live children, with its notices.
local function unlink(p)
  local f = redis.call('HMGET', nkey(p), 'o', 's', 'x')
  redis.call('DEL', nkey(p), ckey(p), qkey(p))
  local d = parent(p)
  redis.call('ZREM', ckey(d), base(p))
  if f[1] and f[1] ~= '' then redis.call('SREM', ekey(f[1]), p) end
  if f[3] and f[3] ~= '' then
    -- A TTL node: its TTL id goes with it.
    redis.call('DEL', skey(f[3]), ekey(f[3]))
    redis.call('SREM', NS .. 'sessions', f[3])
  end
  notify_gone(p, f[2] or '0')
  notify_changed(p, f[2] or '0')
  notify_children(d)
end

-- End what is left of session s once its key is gone: delete its ephemeral
-- nodes (each with its notices) and announce it on `ended`. Idempotent; does
-- nothing while the session's key exists.
local function reap(s)
  if redis.call('EXISTS', skey(s)) == 1 then return -1 end
  local paths = redis.call('SMEMBERS', ekey(s))
  local n = 0
  for _, p in ipairs(paths) do
    local f = redis.call('HMGET', nkey(p), 'o', 'x')
    if f[1] == s or f[2] == s then
      unlink(p)
      n = n + 1
    end
  end
  redis.call('DEL', ekey(s))
  if redis.call('SREM', NS .. 'sessions', s) == 1 then
    redis.call('PUBLISH', NS .. 'ended', s)
  end
  return n
end

-- Whether a node exists at p, after reaping it (and the rest of its owner's
-- nodes) if it is an ephemeral whose session is gone. The root always exists.
local function live(p)
  if p == '/' then return true end
  local f = redis.call('HMGET', nkey(p), 'o', 'x')
  local o, x = f[1], f[2]
  if not o then return false end
  if o ~= '' and redis.call('EXISTS', skey(o)) == 0 then
    reap(o)
    return false
  end
  if x and x ~= '' and redis.call('EXISTS', skey(x)) == 0 then
    reap(x)
    return false
  end
  return true
end

-- nil when the calling session lives, else the error to return.
local function check_session()
  if redis.call('EXISTS', skey(SID)) == 1 then return nil end
  reap(SID)
  return fail('SESSIONEXPIRED', SID)
end

-- Whether p may have no children: an ephemeral or a TTL node.
local function is_ephemeral(p)
  if p == '/' then return false end
  local f = redis.call('HMGET', nkey(p), 'o', 'x')
  return f[1] ~= '' or (f[2] and f[2] ~= '')
end

-- Create a node: path (a prefix when seq == '1'), data, eph/seq '1' or '0'.
-- With recover == '1' (a retry after a lost answer), first return the node
-- this session already made under that prefix, if any; with recover == '2'
-- (a persistent sequential node, which another session may have removed
-- meanwhile) only look for it: not found is OUTCOMEUNKNOWN, never a second
-- node.
-- ttl: a TTL node's TTL in ms, or nil or '' for none.
-- Returns {path, sequence or -1, stamp, version}.
-- What a create at path (a prefix when seq == '1') needs: nil and the
-- missing ancestors to make (top down) when it may go ahead, else the
-- failure. Writes nothing (but reaps, as live does).
local function create_check(path, seq)
  local chain = {}
  local a = parent(path)
  while a ~= '/' do
    table.insert(chain, 1, a)
    a = parent(a)
  end
  local missing = {}
  for _, x in ipairs(chain) do
    if #missing > 0 then
      table.insert(missing, x)
    elseif live(x) then
      if is_ephemeral(x) then return fail('NOTSUPPORTED', x) end
    else
      table.insert(missing, x)
    end
  end
  if seq ~= '1' and live(path) then
    -- The stamp of the node in the way, so a wait for it can tell it from
    -- a successor.
    return fail('NODEEXISTS', redis.call('HGET', nkey(path), 's') .. ' ' .. path)
  end
  return nil, missing
end

local function do_create(path, data, eph, seq, recover, ttl)
  local d = parent(path)
  local bad, missing = create_check(path, seq)
  if bad then return bad end
  local name = base(path)
  if recover ~= '0' and seq == '1' and #missing == 0 then
    local kids = redis.call('ZRANGE', ckey(d), 0, -1)
    for _, k in ipairs(kids) do
      if string.len(k) == string.len(name) + 10 and string.sub(k, 1, string.len(name)) == name then
        local p = join(d, k)
        if live(p) and redis.call('HGET', nkey(p), 'c') == SID then
          local f = redis.call('HMGET', nkey(p), 's', 'v', 'q')
          return { p, tonumber(f[3]), tonumber(f[1]), tonumber(f[2]) }
        end
      end
    end
  end
  if recover == '2' then return fail('OUTCOMEUNKNOWN', path) end
  -- Checks are done: from here on the script writes.
  local created, now_us = server_time()
  for _, x in ipairs(missing) do
    local st = next_stamp(now_us)
    redis.call('HSET', nkey(x), 'd', '', 'v', st, 's', st, 'o', '', 'c', SID, 'q', '', 't', created)
    redis.call('ZADD', ckey(parent(x)), 'inf', base(x))
    notify_children(parent(x))
  end
  local sq = ''
  local score = 'inf'
  if seq == '1' then
    repeat
      sq = num(redis.call('INCR', qkey(d)))
      path = join(d, name .. string.format('%010d', tonumber(sq)))
    until not live(path)
    score = sq
  end
  local st = next_stamp(now_us)
  local owner = ''
  if eph == '1' then
    owner = SID
    redis.call('SADD', ekey(SID), path)
  end
  redis.call('HSET', nkey(path), 'd', data, 'v', st, 's', st, 'o', owner, 'c', SID, 'q', sq, 't', created)
  if ttl and ttl ~= '' then
    local tid = 'ttl-' .. st
    redis.call('SET', skey(tid), '1', 'PX', ttl)
    redis.call('SADD', NS .. 'sessions', tid)
    redis.call('SADD', ekey(tid), path)
    redis.call('HSET', nkey(path), 'x', tid, 'l', ttl)
  end
  redis.call('ZADD', ckey(d), score, base(path))
  notify_children(d)
  local rsq = -1
  if sq ~= '' then rsq = tonumber(sq) end
  return { path, rsq, tonumber(st), tonumber(st) }
end

-- Set a node's data; expected is a version or '' for any. Only the data and
-- the version change: owner and stamp stay, so a set by another session
-- leaves an ephemeral node its creator's, and its fence valid.
-- Returns {version, stamp, ephemeral 1/0, creation time in ms or -1,
-- owner session ('' unless ephemeral)}.
-- nil when the node at path exists with version expected ('' for any),
-- else the failure. Also a check's, and a set's.
local function version_check(path, expected)
  if path == '/' or not live(path) then return fail('NONODE', path) end
  if expected ~= '' and redis.call('HGET', nkey(path), 'v') ~= expected then
    return fail('BADVERSION', path)
  end
  return nil
end

local function do_set(path, data, expected)
  local bad = version_check(path, expected)
  if bad then return bad end
  local k = nkey(path)
  local _, now_us = server_time()
  local v = next_stamp(now_us)
  redis.call('HSET', k, 'd', data, 'v', v)
  local f = redis.call('HMGET', k, 's', 'o', 't', 'x', 'l')
  if f[4] and f[4] ~= '' then
    -- A TTL node: a change, so its TTL starts again.
    redis.call('PEXPIRE', skey(f[4]), f[5])
  end
  local eph = 0
  if f[2] ~= '' then eph = 1 end
  notify_changed(path, f[1])
  return { tonumber(v), tonumber(f[1]), eph, tonumber(f[3]) or -1, f[2] }
end

-- Delete a node; expected is a version or '' for any. Returns 1.
-- nil when a delete of path may go ahead, else the failure.
local function delete_check(path, expected)
  local bad = version_check(path, expected)
  if bad then return bad end
  if redis.call('ZCARD', ckey(path)) > 0 then
    for _, c in ipairs(redis.call('ZRANGE', ckey(path), 0, -1)) do
      if live(join(path, c)) then return fail('NOTEMPTY', path) end
    end
  end
  return nil
end

local function do_delete(path, expected)
  local bad = delete_check(path, expected)
  if bad then return bad end
  unlink(path)
  return 1
end
