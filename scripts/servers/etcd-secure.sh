# A secured etcd for the tests: one member whose client port speaks only TLS
# and requires a client certificate (mutual TLS), with authentication on.
# Sourced by scripts/test-all (see the contract there); defines
# start_etcd_secure.
#
# Certificates come from $COORD_TEST_CERTS (make_test_certs in
# scripts/lib.sh): the member serves server.pem (127.0.0.1 / localhost) and
# trusts ca.pem for client certificates. The peer port is plaintext
# loopback (a one-member cluster has no peer traffic).
#
# Users: root (random password, only for this setup and for tests that
# administer users, e.g. coord-etcd/tests/auth_secure.rs) and `coord`
# (random password) whose role `coordrole` grants readwrite on the whole
# keyspace. Tokens are etcd's simple tokens with a short TTL
# (COORD_TEST_ETCD_SECURE_TOKEN_TTL seconds of disuse), so the tests also
# prove that sessions survive the expiry of their token. Passwords are
# hashed with bcrypt's lowest cost (4): every session authenticates, and at
# etcd's default cost (10) that alone loads a small test machine.
#
# Note that with --client-cert-auth etcd takes a request that carries no
# token as made by the user named by its client certificate's CN (coord
# here: make_test_certs' client.pem).
#
# Exports COORD_TEST_ETCD_SECURE=https://127.0.0.1:<client port>,
# COORD_TEST_ETCD_SECURE_USER=coord, COORD_TEST_ETCD_SECURE_PASSWORD,
# COORD_TEST_ETCD_SECURE_ROOT_PASSWORD and COORD_TEST_ETCD_SECURE_TOKEN_TTL.

need_packages+=(etcd-server etcd-client openssl)
servers+=(etcd_secure)

start_etcd_secure() {
  local dir="$COORD_TMP/etcd-secure" port peer certs="$COORD_TEST_CERTS" ttl=3
  local root_pw coord_pw url
  [ -s "$certs/ca.pem" ] || {
    echo "!! etcd_secure: no certificates in COORD_TEST_CERTS=${certs:-<unset>}" >&2
    return 1
  }
  mkdir -p "$dir"
  port=$(free_port)
  peer=$(free_port)
  while [ "$peer" = "$port" ]; do peer=$(free_port); done
  url="https://127.0.0.1:$port"
  root_pw=$(openssl rand -hex 16)
  coord_pw=$(openssl rand -hex 16)
  etcd \
    --name "coord-secure-$port" \
    --data-dir "$dir/data" \
    --listen-client-urls "$url" \
    --advertise-client-urls "$url" \
    --cert-file "$certs/server.pem" \
    --key-file "$certs/server-key.pem" \
    --client-cert-auth \
    --trusted-ca-file "$certs/ca.pem" \
    --auth-token "simple" \
    --auth-token-ttl "$ttl" \
    --bcrypt-cost 4 \
    --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "coord-secure-$port=http://127.0.0.1:$peer" \
    --initial-cluster-token "coord-secure-$port" \
    --initial-cluster-state new \
    >"$dir/etcd.log" 2>&1 </dev/null &
  track_pid $!
  ctl() {
    env ETCDCTL_API=3 etcdctl --endpoints "$url" --dial-timeout 2s --command-timeout 5s \
      --cacert "$certs/ca.pem" --cert "$certs/client.pem" --key "$certs/client-key.pem" "$@"
  }
  wait_until 60 "etcd (TLS) on 127.0.0.1:$port" ctl endpoint health || {
    tail -n 30 "$dir/etcd.log" >&2
    return 1
  }
  {
    ctl user add "root:$root_pw" --interactive=false &&
      ctl role add coordrole &&
      ctl role grant-permission coordrole --prefix=true readwrite '' &&
      ctl user add "coord:$coord_pw" --interactive=false &&
      ctl user grant-role coord coordrole &&
      ctl auth enable &&
      ctl --user "coord:$coord_pw" put coord-secure-ready yes &&
      ctl --user "coord:$coord_pw" del coord-secure-ready
  } >"$dir/setup.log" 2>&1 || {
    echo "!! etcd_secure: setting up users failed:" >&2
    cat "$dir/setup.log" >&2
    tail -n 30 "$dir/etcd.log" >&2
    return 1
  }
  export COORD_TEST_ETCD_SECURE="$url"
  export COORD_TEST_ETCD_SECURE_USER=coord
  export COORD_TEST_ETCD_SECURE_PASSWORD="$coord_pw"
  export COORD_TEST_ETCD_SECURE_ROOT_PASSWORD="$root_pw"
  export COORD_TEST_ETCD_SECURE_TOKEN_TTL="$ttl"
  echo "== etcd (mutual TLS, auth) at $COORD_TEST_ETCD_SECURE (log: $dir/etcd.log)"
}
