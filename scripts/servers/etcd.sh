# etcd for the tests: a single member on free loopback client and peer ports.
# Sourced by scripts/test-all (see the contract there); defines start_etcd.
#
# Debian's `etcd-server` brings etcd 3.4 and may start a system etcd service
# on 2379 when installed: we never use or touch it. Our member has its own
# ports, and its data and log live in $COORD_TMP/etcd. `etcd-client` brings
# etcdctl, which the health check and coord-etcd's interoperability tests
# run. Building coord-etcd (etcd-client crate) needs protoc and the
# well-known protobuf types.
#
# Exports COORD_TEST_ETCD=http://127.0.0.1:<client port>.

need_packages+=(etcd-server etcd-client protobuf-compiler libprotobuf-dev)
servers+=(etcd)

start_etcd() {
  local dir="$COORD_TMP/etcd" port peer
  mkdir -p "$dir"
  port=$(free_port)
  peer=$(free_port)
  while [ "$peer" = "$port" ]; do peer=$(free_port); done
  # A unique name and cluster token, so this member never mistakes another
  # etcd on the machine for a peer.
  etcd \
    --name "coord-test-$port" \
    --data-dir "$dir/data" \
    --listen-client-urls "http://127.0.0.1:$port" \
    --advertise-client-urls "http://127.0.0.1:$port" \
    --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "coord-test-$port=http://127.0.0.1:$peer" \
    --initial-cluster-token "coord-test-$port" \
    --initial-cluster-state new \
    >"$dir/etcd.log" 2>&1 </dev/null &
  track_pid $!
  wait_until 60 "etcd on 127.0.0.1:$port" \
    env ETCDCTL_API=3 etcdctl --endpoints "http://127.0.0.1:$port" --dial-timeout 2s \
    --command-timeout 2s endpoint health || {
    tail -n 30 "$dir/etcd.log" >&2
    return 1
  }
  export COORD_TEST_ETCD="http://127.0.0.1:$port"
  echo "== etcd at $COORD_TEST_ETCD (log: $dir/etcd.log)"
}
