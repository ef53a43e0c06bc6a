# PostgreSQL 15 for coord-pg's tests: sourced by scripts/test-all (see its
# contract). One cluster made with initdb in $COORD_TMP/pg, run as the
# `postgres` system user (PostgreSQL refuses to run as root) on a free
# loopback port, its socket in the same directory; a role `coord` with a
# password (scram-sha-256) owning a database `coord`. fsync is off: the
# tests restart it on purpose, they do not test the disk. Its dynamic
# shared memory is files in its data directory (mmap), not POSIX segments
# in /dev/shm, which a server that does not shut down cleanly leaves
# behind. Debian's package
# may also run a system cluster on 5432: it is never used nor touched here.
#
# Exports COORD_TEST_PG (the role coord, owner of the database) and
# COORD_TEST_PG_APP (the role coordapp, which owns the schema `coordapp`
# and may create nothing else).

need_packages+=(postgresql)
servers+=(pg)

# The server's own binaries (Debian keeps them out of PATH).
pg_bin() {
  local b
  for b in /usr/lib/postgresql/*/bin; do
    [ -x "$b/postgres" ] && { echo "$b"; return; }
  done
  echo "!! no PostgreSQL server binaries under /usr/lib/postgresql" >&2
  return 1
}

start_pg() {
  local port dir bin password app_password
  port=$(free_port)
  dir="$COORD_TMP/pg"
  bin=$(pg_bin)
  password=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  mkdir -p "$dir"
  # The postgres user must reach its directory: let others traverse (not
  # list) the temp dir, which mktemp made 0700.
  chmod 711 "$COORD_TMP"
  printf '%s\n' "$password" >"$dir/pwfile"
  chown -R postgres:postgres "$dir"
  chmod 700 "$dir"
  # setpriv execs the server itself (no su/runuser parent in between), so
  # the pid tracked is the postmaster's and stopping it stops the cluster.
  setpriv --reuid=postgres --regid=postgres --init-groups \
    "$bin/initdb" -D "$dir/data" -U coord --pwfile="$dir/pwfile" \
    -A scram-sha-256 --encoding=UTF8 --locale=C >"$dir/initdb.log" 2>&1 || {
    echo "!! initdb failed:" >&2
    cat "$dir/initdb.log" >&2
    return 1
  }
  setpriv --reuid=postgres --regid=postgres --init-groups \
    "$bin/postgres" -D "$dir/data" -p "$port" -k "$dir" \
    -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections="${COORD_PG_MAX_CONNECTIONS:-400}" \
    -c dynamic_shared_memory_type=mmap \
    >"$dir/postgres.log" 2>&1 &
  track_pid $!
  wait_until 30 "PostgreSQL on port $port" \
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"
  PGPASSWORD="$password" psql -q -h 127.0.0.1 -p "$port" -U coord -d postgres \
    -c "create database coord" >/dev/null
  # A role that owns one schema and nothing else (no CREATE on the
  # database): what an operator grants an application (coord-pg's docs).
  app_password=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  PGPASSWORD="$password" psql -q -h 127.0.0.1 -p "$port" -U coord -d coord \
    -c "create role coordapp login password '$app_password'" \
    -c "create schema coordapp authorization coordapp" >/dev/null
  export COORD_TEST_PG="postgres://coord:$password@127.0.0.1:$port/coord"
  export COORD_TEST_PG_APP="postgres://coordapp:$app_password@127.0.0.1:$port/coord"
  echo "   PostgreSQL at 127.0.0.1:$port (role coord, database coord; logs in $dir)"
}
