-- coord-pg's schema, version 2: the tree, the sessions and every operation
-- of the primitive contract as one SQL function each, so an operation is
-- one round trip and one transaction (atomic, its change notices sent at
-- its commit, in commit order).
--
-- coord runs this itself (src/schema.rs), idempotently, when the schema is
-- missing or older, with `@schema@` replaced by the schema's name (default
-- `coord`; the notice channel has the same name). To run it by hand:
--   sed 's/@schema@/coord/g' schema.sql | psql …
--
-- Errors are raised with SQLSTATEs of coord's own class CX, which the
-- client maps onto coord_core::Error:
--   CXSES the session is over (expired, closed or unknown)
--   CXNON no node                      CXEXI a node already exists
--   CXVER another version              CXNEM the node has children
--   CXEPH a child of an ephemeral node CXFEN a fence does not hold
-- A transaction's refusal carries the failing step in its DETAIL
-- (`fence:I` or `op:I`).

-- CREATE SCHEMA checks the database's CREATE privilege even with IF NOT
-- EXISTS: make it only when missing, so a role that owns the schema an
-- administrator made needs nothing on the database.
do $do$ begin
  if not exists (select 1 from pg_namespace where nspname = '@schema@') then
    create schema @schema@;
  end if;
end $do$;

create table if not exists @schema@.meta (
  version int not null
);
insert into @schema@.meta (version)
  select 0 where not exists (select 1 from @schema@.meta);

-- Stamps (fencing tokens) and session ids. A sequence is WAL-logged ahead
-- of what it hands out, so after a crash it skips forward, never back.
create sequence if not exists @schema@.stamps;
create sequence if not exists @schema@.session_ids;

-- A session ends when the *server's* clock passes expires_at (renewed by
-- heartbeats); its ephemeral nodes go with its row (on delete cascade).
create table if not exists @schema@.sessions (
  id bigint primary key,
  timeout_ms int not null check (timeout_ms > 0),
  expires_at timestamptz not null
);

create table if not exists @schema@.nodes (
  path text primary key,
  parent text,                       -- null for the root only
  name text not null,
  data bytea not null,
  version bigint not null default 0, -- counts sets
  stamp bigint not null,             -- from @schema@.stamps; the root has 0
  seq bigint,                        -- for nodes created sequential
  owner bigint references @schema@.sessions (id) on delete cascade,
  ttl_ms bigint,                     -- TTL nodes: deleted after a TTL unchanged
  mtime timestamptz not null,
  ctime timestamptz not null,
  next_seq bigint not null default 0 -- the next sequence among its children
);
-- Children in order: sequential ones by sequence, then the rest by name.
-- The same index answers `place` and `first_children` in O(log N).
create index if not exists nodes_children on @schema@.nodes (parent, seq, name);
create index if not exists nodes_ttl on @schema@.nodes (ttl_ms) where ttl_ms is not null;
-- A session's ephemeral nodes, for the cascade that deletes them with it
-- (without it, every session reaped is a scan of every node).
create index if not exists nodes_owner on @schema@.nodes (owner) where owner is not null;

insert into @schema@.nodes (path, parent, name, data, stamp, mtime, ctime)
  values ('/', null, '', '', 0, clock_timestamp(), clock_timestamp())
  on conflict do nothing;

-- Change notices: 'c' created, 'u' set, 'd' deleted, then the node's
-- stamp, its version and its path, ':' between them (`u:12:3:/a/b`), on
-- the channel named after the schema (NOTIFY is transactional: sent at
-- commit, in commit order). The stamp and version let a watch set before
-- a read tell a change its read already saw from a later one.
create or replace function @schema@.notice() returns trigger
language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    perform pg_notify('@schema@', 'c:' || new.stamp || ':' || new.version || ':' || new.path);
  elsif tg_op = 'UPDATE' then
    perform pg_notify('@schema@', 'u:' || new.stamp || ':' || new.version || ':' || new.path);
  else
    perform pg_notify('@schema@', 'd:' || old.stamp || ':' || old.version || ':' || old.path);
  end if;
  return null;
end $$;
drop trigger if exists nodes_notice on @schema@.nodes;
create trigger nodes_notice after insert or update of data, version or delete
  on @schema@.nodes for each row execute function @schema@.notice();

-- End every session the server's clock has passed (their ephemeral nodes
-- go by cascade, with their notices), and every TTL node gone its TTL
-- unchanged and childless. Every operation and every heartbeat calls it,
-- so a dead process's nodes go at the first operation of anyone after its
-- expiry.
--
-- Hundreds of clients reap at once: a reaper never waits on another, nor on
-- an operation of the session it would end. It deletes only the rows it
-- can lock at once (`skip locked`: one being deleted by another reaper, or
-- in use by its own session's operation, see live()), in one order (by
-- key). A reaper that waited could deadlock: its snapshot, taken before
-- the wait, shows a session renewed since as expired, and that session's
-- renewer waits on it in turn. So nothing may count on reap() having ended
-- every expired session: live() checks the clock itself.
create or replace function @schema@.reap() returns void
language plpgsql as $$
begin
  delete from @schema@.sessions s where s.id in (
    select e.id from @schema@.sessions e
      where e.expires_at < clock_timestamp()
      order by e.id
      for update of e skip locked);
  delete from @schema@.nodes n where n.path in (
    select t.path from @schema@.nodes t
      where t.ttl_ms is not null
        and t.mtime + t.ttl_ms * interval '1 millisecond' < clock_timestamp()
        and not exists (select 1 from @schema@.nodes c where c.parent = t.path)
      order by t.path
      for update of t skip locked);
end $$;

-- Refuse unless session `sid` lives by the server's clock, and hold its
-- row (key share) until the operation commits: a reaper skips it. So no
-- session is reaped in the middle of its own operation, which would wait on
-- the reaper (its new node's owner check) while the reaper, in an operation
-- of its own, waits on a row that one holds (a directory's sequence
-- counter). Then reap.
create or replace function @schema@.live(sid bigint) returns void
language plpgsql as $$
begin
  perform 1 from @schema@.sessions s
    where s.id = sid and s.expires_at >= clock_timestamp()
    for key share of s;
  if not found then
    raise exception 'session % is over', sid using errcode = 'CXSES';
  end if;
  perform @schema@.reap();
end $$;

create or replace function @schema@.open(timeout_ms int)
returns table (id bigint, expires_at timestamptz)
language plpgsql as $$
declare
  sid bigint := nextval('@schema@.session_ids');
begin
  perform @schema@.reap();
  insert into @schema@.sessions (id, timeout_ms, expires_at)
    values (sid, open.timeout_ms, clock_timestamp() + open.timeout_ms * interval '1 millisecond');
  return query select s.id, s.expires_at from @schema@.sessions s where s.id = sid;
end $$;

-- A heartbeat: true while the session lives (its end moved on), false once
-- the server ended it.
create or replace function @schema@.renew(sid bigint) returns boolean
language plpgsql as $$
begin
  update @schema@.sessions
    set expires_at = clock_timestamp() + timeout_ms * interval '1 millisecond'
    where id = sid and expires_at >= clock_timestamp();
  -- Every heartbeat reaps too, so with any live client a dead session's
  -- nodes and an expired TTL node go within a heartbeat period.
  if found then
    perform @schema@.reap();
    delete from @schema@.done d
      where d.session = sid
        and d.at < clock_timestamp() - (select s.timeout_ms from @schema@.sessions s where s.id = sid)
                                       * interval '1 millisecond';
    return true;
  end if;
  perform @schema@.reap();
  return false;
end $$;

create or replace function @schema@.close(sid bigint) returns void
language plpgsql as $$
begin
  delete from @schema@.sessions where id = sid;
end $$;

-- The test hook: end session `sid` now, as its expiry would.
create or replace function @schema@.expire(sid bigint) returns boolean
language plpgsql as $$
begin
  delete from @schema@.sessions where id = sid;
  return found;
end $$;

create or replace function @schema@.parent_of(p text) returns text
language sql immutable as $$
  select case when p = '/' then null
              when position('/' in substr(p, 2)) = 0 then '/'
              else regexp_replace(p, '/[^/]*$', '') end
$$;

create or replace function @schema@.name_of(p text) returns text
language sql immutable as $$
  select regexp_replace(p, '^.*/', '')
$$;

-- Make the missing ancestors of `p` (persistent, empty), refusing to go
-- under an ephemeral node.
create or replace function @schema@.make_parents(p text) returns void
language plpgsql as $$
declare
  dir text := @schema@.parent_of(p);
  missing text[] := '{}';
  o bigint;
begin
  while dir is not null loop
    select owner into o from @schema@.nodes where path = dir;
    if found then
      if o is not null then
        raise exception 'no children under the ephemeral node %', dir using errcode = 'CXEPH';
      end if;
      exit;
    end if;
    missing := dir || missing;
    dir := @schema@.parent_of(dir);
  end loop;
  foreach dir in array missing loop
    insert into @schema@.nodes (path, parent, name, data, stamp, mtime, ctime)
      values (dir, @schema@.parent_of(dir), @schema@.name_of(dir), '', nextval('@schema@.stamps'),
              clock_timestamp(), clock_timestamp())
      on conflict do nothing;
  end loop;
end $$;

-- Create `p` (sequential: `p` is the prefix, the name gets a ten-digit
-- sequence) for session `sid`; ephemeral nodes are `sid`'s.
create or replace function @schema@.create(sid bigint, p text, d bytea, ephemeral boolean,
                                        sequential boolean, ttl_ms bigint)
returns table (path text, seq bigint, stamp bigint, version bigint)
language plpgsql as $$
declare
  dir text := @schema@.parent_of(p);
  s bigint := null;
  made text := p;
  st bigint;
begin
  perform @schema@.live(sid);
  perform @schema@.make_parents(p);
  if sequential then
    -- The parent's row lock orders concurrent sequential creates.
    update @schema@.nodes set next_seq = next_seq + 1 where nodes.path = dir
      returning next_seq - 1 into s;
    made := p || lpad(s::text, 10, '0');
    while exists (select 1 from @schema@.nodes n where n.path = made) loop
      update @schema@.nodes set next_seq = next_seq + 1 where nodes.path = dir
        returning next_seq - 1 into s;
      made := p || lpad(s::text, 10, '0');
    end loop;
  end if;
  st := nextval('@schema@.stamps');
  begin
    insert into @schema@.nodes (path, parent, name, data, stamp, seq, owner, ttl_ms, mtime, ctime)
      values (made, dir, @schema@.name_of(made), d, st, s,
              case when ephemeral then sid end, ttl_ms, clock_timestamp(), clock_timestamp());
  exception when unique_violation then
    raise exception 'a node already exists at %', made using errcode = 'CXEXI';
  end;
  return query select made, s, st, 0::bigint;
end $$;

-- Creates whose answer may be lost: the client names each with a request
-- id; the row, written in the create's own transaction, says after a
-- reconnect whether (and what) it made, even when the node is gone again.
-- Kept for the session's timeout (renew drops older ones) and never past
-- the session.
create table if not exists @schema@.done (
  req text primary key,
  session bigint not null references @schema@.sessions (id) on delete cascade,
  path text not null,
  seq bigint,
  stamp bigint not null,
  at timestamptz not null
);
create index if not exists done_session on @schema@.done (session, at);

-- create, recording request `req` in `done`.
create or replace function @schema@.create_once(sid bigint, req text, p text, d bytea,
                                             ephemeral boolean, sequential boolean, ttl_ms bigint)
returns table (path text, seq bigint, stamp bigint, version bigint)
language plpgsql as $$
declare
  c record;
begin
  select * into c from @schema@.create(sid, p, d, ephemeral, sequential, ttl_ms);
  insert into @schema@.done (req, session, path, seq, stamp, at)
    values (req, sid, c.path, c.seq, c.stamp, clock_timestamp());
  return query select c.path, c.seq, c.stamp, c.version;
end $$;

-- What request `req` of session `sid` created, if it did.
create or replace function @schema@.created(sid bigint, req text)
returns table (path text, seq bigint, stamp bigint)
language plpgsql as $$
begin
  perform @schema@.live(sid);
  return query select d.path, d.seq, d.stamp from @schema@.done d
    where d.req = created.req and d.session = sid;
end $$;

create or replace function @schema@.get(sid bigint, p text)
returns table (data bytea, version bigint, stamp bigint, owner bigint, ctime timestamptz)
language plpgsql as $$
begin
  perform @schema@.live(sid);
  return query select n.data, n.version, n.stamp, n.owner, n.ctime
    from @schema@.nodes n where n.path = p;
end $$;

-- Set `p`'s data; compare-and-set when `v` is not null.
drop function if exists @schema@.set(bigint, text, bytea, bigint) cascade;
create or replace function @schema@.set(sid bigint, p text, d bytea, v bigint)
returns table (version bigint, stamp bigint, owner bigint, ctime timestamptz)
language plpgsql as $$
declare
  cur bigint;
begin
  perform @schema@.live(sid);
  select n.version into cur from @schema@.nodes n where n.path = p for update;
  if not found then
    raise exception 'no node at %', p using errcode = 'CXNON';
  end if;
  if v is not null and v <> cur then
    raise exception 'version mismatch at %', p using errcode = 'CXVER';
  end if;
  return query update @schema@.nodes n
    set data = d, version = n.version + 1, mtime = clock_timestamp()
    where n.path = p
    returning n.version, n.stamp, n.owner, n.ctime;
end $$;

-- Delete `p`; compare-and-delete when `v` is not null.
create or replace function @schema@.delete(sid bigint, p text, v bigint) returns void
language plpgsql as $$
declare
  cur bigint;
begin
  perform @schema@.live(sid);
  select n.version into cur from @schema@.nodes n where n.path = p for update;
  if not found then
    raise exception 'no node at %', p using errcode = 'CXNON';
  end if;
  if v is not null and v <> cur then
    raise exception 'version mismatch at %', p using errcode = 'CXVER';
  end if;
  if exists (select 1 from @schema@.nodes c where c.parent = p) then
    raise exception 'node % has children', p using errcode = 'CXNEM';
  end if;
  delete from @schema@.nodes n where n.path = p;
end $$;

-- The children of `dir`: sequential ones by sequence, then the rest by
-- name (the index's order).
create or replace function @schema@.children(sid bigint, dir text)
returns table (name text, seq bigint, stamp bigint)
language plpgsql as $$
begin
  perform @schema@.live(sid);
  if not exists (select 1 from @schema@.nodes n where n.path = dir) then
    raise exception 'no node at %', dir using errcode = 'CXNON';
  end if;
  return query select n.name, n.seq, n.stamp from @schema@.nodes n
    where n.parent = dir order by n.seq nulls last, n.name;
end $$;

-- Where a contender with sequence `me_seq` stands among `dir`'s earlier
-- children (coord_core::backend::order): kind 1 first, 2 behind the child
-- named: the nearest earlier one with a sequence whose name holds none of
-- `markers` (null: every earlier one blocks). A backward scan of
-- nodes_children from `me_seq`: O(log N), plus the earlier children the
-- markers let pass. `place` and `create_contender` answer with it.
create or replace function @schema@.nearest_before(dir text, me_seq bigint, markers text[])
returns table (kind smallint, name text, seq bigint)
language plpgsql as $$
begin
  return query select 2::smallint, n.name, n.seq from @schema@.nodes n
    where n.parent = dir and n.seq < me_seq
      and (markers is null
           or not exists (select 1 from unnest(markers) m where strpos(n.name, m) > 0))
    order by n.seq desc, n.name desc limit 1;
  if not found then
    return query select 1::smallint, null::text, null::bigint;
  end if;
end $$;

-- Where the contender `me_name` (sequence `me_seq`) stands in `dir`'s
-- queue: kind 0 gone (no child of that name and sequence), else as
-- `nearest_before` answers.
create or replace function @schema@.place(sid bigint, dir text, me_name text, me_seq bigint,
                                          markers text[])
returns table (kind smallint, name text, seq bigint)
language plpgsql as $$
begin
  perform @schema@.live(sid);
  if not exists (select 1 from @schema@.nodes n
                 where n.parent = dir and n.name = me_name and n.seq = me_seq) then
    return query select 0::smallint, null::text, null::bigint;
    return;
  end if;
  return query select * from @schema@.nearest_before(dir, me_seq, markers);
end $$;

-- A contender's create (`create_once`: ephemeral, sequential, recorded
-- as request `req`) and its place (`nearest_before`) in one call and one
-- transaction. The place is read after the insert, while the create
-- still holds the directory's row (its sequence counter) until commit:
-- every create with an earlier sequence has committed, and each statement
-- of this function sees it. So the answer is the place the new node had
-- at its create, what `place` would answer right after it.
create or replace function @schema@.create_contender(sid bigint, req text, p text, d bytea,
                                                     markers text[])
returns table (path text, seq bigint, stamp bigint, kind smallint, name text, pseq bigint)
language plpgsql as $$
declare
  c record;
begin
  select * into c from @schema@.create_once(sid, req, p, d, true, true, null);
  return query select c.path, c.seq, c.stamp, b.kind, b.name, b.seq
    from @schema@.nearest_before(@schema@.parent_of(p), c.seq, markers) b;
end $$;

-- The first `n` children of `dir` in the order of `children` (the
-- index's): O(log N + n).
create or replace function @schema@.first_children(sid bigint, dir text, n bigint)
returns table (name text, seq bigint)
language plpgsql as $$
begin
  perform @schema@.live(sid);
  if not exists (select 1 from @schema@.nodes d where d.path = dir) then
    raise exception 'no node at %', dir using errcode = 'CXNON';
  end if;
  return query select c.name, c.seq from @schema@.nodes c
    where c.parent = dir order by c.seq nulls last, c.name limit n;
end $$;

-- A guarded write's check: the fence node exists with its stamp, and its
-- owner (if ephemeral) lives by the server's clock: an expired session's
-- node may outlive it until a reaper gets to it (see reap()).
create or replace function @schema@.holds(p text, st bigint) returns boolean
language sql as $$
  select exists (select 1 from @schema@.nodes n
                 where n.path = p and n.stamp = st
                   and (n.owner is null
                        or exists (select 1 from @schema@.sessions s
                                   where s.id = n.owner
                                     and s.expires_at >= clock_timestamp())))
$$;

create or replace function @schema@.fence(p text, st bigint) returns void
language plpgsql as $$
begin
  if not @schema@.holds(p, st) then
    raise exception 'the fence % does not hold', p using errcode = 'CXFEN';
  end if;
end $$;

-- Guarded writes: the fence checked, then the write, in one transaction.
create or replace function @schema@.guarded_create(sid bigint, fp text, fst bigint, p text, d bytea,
                                                ephemeral boolean, sequential boolean)
returns table (path text, seq bigint, stamp bigint, version bigint)
language plpgsql as $$
begin
  perform @schema@.live(sid);
  perform @schema@.fence(fp, fst);
  return query select * from @schema@.create(sid, p, d, ephemeral, sequential, null);
end $$;

create or replace function @schema@.guarded_set(sid bigint, fp text, fst bigint, p text, d bytea, v bigint)
returns table (version bigint, stamp bigint, owner bigint, ctime timestamptz)
language plpgsql as $$
begin
  perform @schema@.live(sid);
  perform @schema@.fence(fp, fst);
  return query select * from @schema@.set(sid, p, d, v);
end $$;

create or replace function @schema@.guarded_delete(sid bigint, fp text, fst bigint, p text, v bigint)
returns void
language plpgsql as $$
begin
  perform @schema@.live(sid);
  perform @schema@.fence(fp, fst);
  perform @schema@.delete(sid, p, v);
end $$;

-- A guarded put: set the node if it is there, else create it persistent
-- (with its parents); `created` says which.
create or replace function @schema@.guarded_put(sid bigint, fp text, fst bigint, p text, d bytea)
returns table (created boolean, path text, seq bigint, version bigint, stamp bigint,
               owner bigint, ctime timestamptz)
language plpgsql as $$
begin
  perform @schema@.live(sid);
  perform @schema@.fence(fp, fst);
  if exists (select 1 from @schema@.nodes n where n.path = p) then
    return query select false, p, null::bigint, s.version, s.stamp, s.owner, s.ctime
      from @schema@.set(sid, p, d, null) s;
  else
    return query select true, c.path, c.seq, c.version, c.stamp, null::bigint, null::timestamptz
      from @schema@.create(sid, p, d, false, false, null) c;
  end if;
end $$;

-- A transaction, as parallel arrays (op i is kinds[i], paths[i], …; kinds
-- are 'check', 'create', 'set', 'delete'): every fence checked first, then
-- every op against the state before any write, then the writes, in op
-- order. A refusal raises with DETAIL 'fence:I' or 'op:I' (from 0) and
-- nothing is applied: the statement's transaction rolls back. One row per
-- op: what it did.
create or replace function @schema@.txn(sid bigint, fpaths text[], fstamps bigint[],
                                        kinds text[], paths text[], datas bytea[],
                                        versions bigint[], ephemerals boolean[],
                                        sequentials boolean[], ttls bigint[])
returns table (kind text, path text, seq bigint, version bigint, stamp bigint,
               owner bigint, ctime timestamptz)
language plpgsql as $$
declare
  i int;
  cur bigint;
begin
  perform @schema@.live(sid);
  for i in 1 .. coalesce(array_length(fpaths, 1), 0) loop
    if not @schema@.holds(fpaths[i], fstamps[i]) then
      raise exception 'the fence % does not hold', fpaths[i]
        using errcode = 'CXFEN', detail = 'fence:' || (i - 1);
    end if;
  end loop;
  for i in 1 .. coalesce(array_length(kinds, 1), 0) loop
    if kinds[i] = 'create' then
      if not sequentials[i] and exists (select 1 from @schema@.nodes n where n.path = paths[i]) then
        raise exception 'a node already exists at %', paths[i]
          using errcode = 'CXEXI', detail = 'op:' || (i - 1);
      end if;
    else
      select n.version into cur from @schema@.nodes n where n.path = paths[i] for update;
      if not found then
        raise exception 'no node at %', paths[i]
          using errcode = 'CXNON', detail = 'op:' || (i - 1);
      end if;
      if versions[i] is not null and versions[i] <> cur then
        raise exception 'version mismatch at %', paths[i]
          using errcode = 'CXVER', detail = 'op:' || (i - 1);
      end if;
      if kinds[i] = 'delete'
         and exists (select 1 from @schema@.nodes c where c.parent = paths[i]) then
        raise exception 'node % has children', paths[i]
          using errcode = 'CXNEM', detail = 'op:' || (i - 1);
      end if;
    end if;
  end loop;
  for i in 1 .. coalesce(array_length(kinds, 1), 0) loop
    if kinds[i] = 'check' then
      return query select 'check'::text, paths[i], null::bigint, null::bigint, null::bigint,
                          null::bigint, null::timestamptz;
    elsif kinds[i] = 'create' then
      return query select 'create'::text, c.path, c.seq, c.version, c.stamp, null::bigint,
                          null::timestamptz
        from @schema@.create(sid, paths[i], datas[i], ephemerals[i], sequentials[i], ttls[i]) c;
    elsif kinds[i] = 'set' then
      return query select 'set'::text, paths[i], null::bigint, s.version, s.stamp, s.owner, s.ctime
        from @schema@.set(sid, paths[i], datas[i], null) s;
    else
      perform @schema@.delete(sid, paths[i], null);
      return query select 'delete'::text, paths[i], null::bigint, null::bigint, null::bigint,
                          null::bigint, null::timestamptz;
    end if;
  end loop;
end $$;

-- The version this script makes, last: a schema whose version is lower is
-- brought up to date by running the script again (it is idempotent).
update @schema@.meta set version = 2 where version < 2;
