# A 3-member etcd cluster for the cluster tests (coord-etcd's
# tests/cluster.rs): sourced by scripts/test-all (see the contract there);
# defines start_etcd3.
#
# Three etcd processes on free loopback client and peer ports, data and
# logs in $COORD_TMP/etcd3/<member>, with a unique cluster token. Raft
# heartbeats every 50 ms and an election timeout of 500 ms, so a new
# leader is in place within about a second of a kill; pre-vote, so a
# restarted member does not depose a healthy leader.
#
# Exports
#   COORD_TEST_ETCD3=http://127.0.0.1:<c0>,http://127.0.0.1:<c1>,http://127.0.0.1:<c2>
#   COORD_TEST_ETCD3_CTL=<dir>  start-N / kill-N / pid-N for member N = 0, 1, 2
#                               in endpoint order (scripts/cluster.sh)

need_packages+=(etcd-server etcd-client protobuf-compiler libprotobuf-dev)
servers+=(etcd3)
. "$(dirname "${BASH_SOURCE[0]}")/../cluster.sh"

start_etcd3() {
  local dir="$COORD_TMP/etcd3" ctl="$COORD_TMP/etcd3/ctl" ports n token initial="" endpoints="" t0=$SECONDS
  mkdir -p "$ctl"
  # Member n: client port ports[n], peer port ports[3+n].
  read -r -a ports <<<"$(free_ports 6)"
  token="coord-test3-${ports[0]}"
  for n in 0 1 2; do
    initial+="${initial:+,}$token-$n=http://127.0.0.1:${ports[3 + n]}"
    endpoints+="${endpoints:+,}http://127.0.0.1:${ports[n]}"
  done
  for n in 0 1 2; do
    mkdir -p "$dir/$n"
    # On a restart the data dir's WAL wins over the --initial-* flags, so
    # the same command line brings the member back as itself.
    cluster_member "$ctl" "$n" "$dir/$n/etcd.log" "$dir/$n/data" "${ports[n]}" -- \
      etcd --name "$token-$n" \
      --data-dir "$dir/$n/data" \
      --listen-client-urls "http://127.0.0.1:${ports[n]}" \
      --advertise-client-urls "http://127.0.0.1:${ports[n]}" \
      --listen-peer-urls "http://127.0.0.1:${ports[3 + n]}" \
      --initial-advertise-peer-urls "http://127.0.0.1:${ports[3 + n]}" \
      --initial-cluster "$initial" \
      --initial-cluster-token "$token" \
      --initial-cluster-state new \
      --heartbeat-interval 50 \
      --election-timeout 500 \
      --pre-vote
  done
  echo 3 >"$ctl/members"
  cluster_start_all "$ctl"
  wait_until 60 "a 3-member etcd cluster" \
    env ETCDCTL_API=3 etcdctl --endpoints "$endpoints" --dial-timeout 2s \
    --command-timeout 2s endpoint health || {
    for n in 0 1 2; do tail -n 20 "$dir/$n/etcd.log" >&2; done
    return 1
  }
  export COORD_TEST_ETCD3="$endpoints"
  export COORD_TEST_ETCD3_CTL="$ctl"
  echo "== etcd cluster at $COORD_TEST_ETCD3 (control: $ctl; up in $((SECONDS - t0)) s)"
}
