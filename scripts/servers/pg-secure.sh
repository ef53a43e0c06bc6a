# A secured PostgreSQL for coord-pg's tests: sourced by scripts/test-all (see
# its contract); defines start_pg_secure.
#
# One cluster as scripts/servers/pg.sh makes it (initdb as the `postgres`
# system user, a free loopback port, everything under $COORD_TMP), that
# speaks only TLS over TCP and requires a client certificate signed by the
# test CA (pg_hba: `hostssl … scram-sha-256 clientcert=verify-ca`, plain TCP
# rejected), with the certificates of $COORD_TEST_CERTS (make_test_certs in
# scripts/lib.sh: server.pem for 127.0.0.1 / localhost). The role `coord`
# has a random password (scram-sha-256) and owns the database `coord`.
#
# Exports COORD_TEST_PG_SECURE=postgres://coord:PW@127.0.0.1:PORT/coord
# (the client certificate and CA are COORD_TEST_CERTS' client.pem,
# client-key.pem and ca.pem).

need_packages+=(postgresql openssl)
servers+=(pg_secure)

start_pg_secure() {
  local port dir bin password certs="$COORD_TEST_CERTS"
  [ -s "$certs/ca.pem" ] || {
    echo "!! pg_secure: no certificates in COORD_TEST_CERTS=${certs:-<unset>}" >&2
    return 1
  }
  port=$(free_port)
  dir="$COORD_TMP/pg-secure"
  bin=$(pg_bin)
  password=$(openssl rand -hex 16)
  mkdir -p "$dir"
  chmod 711 "$COORD_TMP"
  printf '%s\n' "$password" >"$dir/pwfile"
  # The server reads its key as the postgres user, and refuses a key
  # others may read.
  cp "$certs/server.pem" "$certs/server-key.pem" "$certs/ca.pem" "$dir/"
  chmod 600 "$dir/server-key.pem"
  chown -R postgres:postgres "$dir"
  chmod 700 "$dir"
  setpriv --reuid=postgres --regid=postgres --init-groups \
    "$bin/initdb" -D "$dir/data" -U coord --pwfile="$dir/pwfile" \
    -A scram-sha-256 --encoding=UTF8 --locale=C >"$dir/initdb.log" 2>&1 || {
    echo "!! initdb failed:" >&2
    cat "$dir/initdb.log" >&2
    return 1
  }
  cat >"$dir/data/pg_hba.conf" <<HBA
local   all all                scram-sha-256
hostssl all all 127.0.0.1/32   scram-sha-256 clientcert=verify-ca
host    all all 127.0.0.1/32   reject
HBA
  chown postgres:postgres "$dir/data/pg_hba.conf"
  setpriv --reuid=postgres --regid=postgres --init-groups \
    "$bin/postgres" -D "$dir/data" -p "$port" -k "$dir" \
    -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=400 \
    -c dynamic_shared_memory_type=mmap \
    -c ssl=on -c ssl_cert_file="$dir/server.pem" -c ssl_key_file="$dir/server-key.pem" \
    -c ssl_ca_file="$dir/ca.pem" \
    >"$dir/postgres.log" 2>&1 &
  track_pid $!
  wait_until 30 "PostgreSQL (TLS) on port $port" \
    "$bin/pg_isready" -q -h "$dir" -p "$port"
  PGPASSWORD="$password" psql -q -h "$dir" -p "$port" -U coord -d postgres \
    -c "create database coord" >/dev/null
  export COORD_TEST_PG_SECURE="postgres://coord:$password@127.0.0.1:$port/coord"
  echo "   PostgreSQL (TLS, client certificates) at 127.0.0.1:$port (role coord; logs in $dir)"
}
