# Redis for coord-redis's tests: sourced by scripts/test-all (see its contract).
# One redis-server on a free loopback port, no persistence, keyspace
# notifications for expired keys on (coord-redis reaps a dead session's
# ephemeral nodes when its key expires), everything under $COORD_TMP/redis.
# Debian's package may also run a system service on 6379: it is never used
# nor touched here.

need_packages+=(redis-server)
servers+=(redis)

start_redis() {
  local port dir
  port=$(free_port)
  dir="$COORD_TMP/redis"
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 \
    --save '' --appendonly no \
    --dir "$dir" --logfile "$dir/redis.log" \
    --notify-keyspace-events Kx \
    --daemonize no >"$dir/stdout.log" 2>&1 &
  track_pid $!
  wait_until 30 "redis-server on port $port" redis-cli -p "$port" ping
  export COORD_TEST_REDIS="redis://127.0.0.1:$port"
  echo "   redis at $COORD_TEST_REDIS (logs in $dir)"
}
