# A secured Redis for coord-redis's tests: sourced by scripts/test-all (see
# its contract); defines start_redis_secure.
#
# One redis-server 7 that speaks only TLS (no plaintext port) and requires
# a client certificate (mutual TLS: tls-auth-clients yes), certificates from
# $COORD_TEST_CERTS (make_test_certs in scripts/lib.sh: server.pem for
# 127.0.0.1 / localhost, client certificates signed by ca.pem). No
# persistence; everything under $COORD_TMP/redis-secure.
#
# Keyspace notifications for expired keys (`notify-keyspace-events Kx`, as
# scripts/servers/redis.sh) are set in the server's config file: the coord
# user may not run CONFIG, and coord-redis checks them by watching a
# scratch key expire instead.
#
# Users (ACL lines in the config file, mode 600, never a CONFIG/ACL command):
# - `default` is off: a client without credentials gets NOAUTH.
# - `coord` (random password): what an operator grants coord, and no more:
#   every key and channel, every command but @admin and @dangerous
#   (`~* &* +@all -@admin -@dangerous`); coord needs nothing from those.
# - `coordnoeval` (random password): the same without EVAL/EVALSHA, the
#   commands coord runs everything with (tests expect PermissionDenied).
#
# Exports COORD_TEST_REDIS_SECURE=rediss://127.0.0.1:<tls port> (no
# credentials), COORD_TEST_REDIS_SECURE_USER=coord,
# COORD_TEST_REDIS_SECURE_PASSWORD, COORD_TEST_REDIS_SECURE_NOEVAL_USER and
# COORD_TEST_REDIS_SECURE_NOEVAL_PASSWORD.

need_packages+=(redis-server openssl)
servers+=(redis_secure)

start_redis_secure() {
  local port dir certs="$COORD_TEST_CERTS" coord_pw noeval_pw
  [ -s "$certs/ca.pem" ] || {
    echo "!! redis_secure: no certificates in COORD_TEST_CERTS=${certs:-<unset>}" >&2
    return 1
  }
  port=$(free_port)
  dir="$COORD_TMP/redis-secure"
  mkdir -p "$dir"
  coord_pw=$(openssl rand -hex 16)
  noeval_pw=$(openssl rand -hex 16)
  (
    umask 077
    cat >"$dir/redis.conf" <<EOF
port 0
tls-port $port
bind 127.0.0.1
tls-cert-file $certs/server.pem
tls-key-file $certs/server-key.pem
tls-ca-cert-file $certs/ca.pem
tls-auth-clients yes
save ""
appendonly no
dir $dir
logfile $dir/redis.log
notify-keyspace-events Kx
daemonize no
user default off resetpass nocommands
user coord on >$coord_pw ~* &* +@all -@admin -@dangerous
user coordnoeval on >$noeval_pw ~* &* +@all -@admin -@dangerous -eval -evalsha
EOF
  )
  redis-server "$dir/redis.conf" >"$dir/stdout.log" 2>&1 </dev/null &
  track_pid $!
  # Up when the coord user gets PONG over mutual TLS (redis-cli exits 0
  # on an error reply too, hence the grep).
  redis_secure_ping() {
    REDISCLI_AUTH="$coord_pw" redis-cli --tls -h 127.0.0.1 -p "$port" \
      --cacert "$certs/ca.pem" --cert "$certs/client.pem" --key "$certs/client-key.pem" \
      --user coord ping 2>/dev/null | grep -qx PONG
  }
  wait_until 30 "redis-server (TLS) on port $port" redis_secure_ping || {
    tail -n 30 "$dir/redis.log" "$dir/stdout.log" >&2
    return 1
  }
  export COORD_TEST_REDIS_SECURE="rediss://127.0.0.1:$port"
  export COORD_TEST_REDIS_SECURE_USER=coord
  export COORD_TEST_REDIS_SECURE_PASSWORD="$coord_pw"
  export COORD_TEST_REDIS_SECURE_NOEVAL_USER=coordnoeval
  export COORD_TEST_REDIS_SECURE_NOEVAL_PASSWORD="$noeval_pw"
  echo "   redis (mutual TLS, ACL user coord) at $COORD_TEST_REDIS_SECURE (logs in $dir)"
}
