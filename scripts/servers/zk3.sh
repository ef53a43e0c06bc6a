# A 3-member ZooKeeper ensemble for the cluster tests (coord-zk's
# tests/cluster.rs): sourced by scripts/test-all (see the contract there);
# defines start_zk3.
#
# Three QuorumPeerMain JVMs on free loopback ports (client, quorum and
# election port each), config, data and logs in $COORD_TMP/zk3/<member>.
# tickTime is 200 ms so that electing a leader after a kill takes well
# under 2 s, and sessions may ask for 1 s .. 20 s. `cons` (which member a
# session is connected to) and `srvr` (leader or follower) are whitelisted.
#
# Exports
#   COORD_TEST_ZK3=127.0.0.1:<c0>,127.0.0.1:<c1>,127.0.0.1:<c2>
#   COORD_TEST_ZK3_CTL=<dir>   start-N / kill-N / pid-N for member N = 0, 1, 2
#                              in connect-string order (scripts/cluster.sh)

need_packages+=(zookeeper)
servers+=(zk3)
. "$(dirname "${BASH_SOURCE[0]}")/../cluster.sh"

# zk3_mode PORT: the `Mode:` line of the member's `srvr` (leader, follower),
# or nothing while it is not serving. A subshell, so a refused connection
# cannot end the calling shell.
zk3_mode() {
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'srvr' >&3
    timeout 2 cat <&3 | sed -n 's/^Mode: //p'
  ) 2>/dev/null
}

# zk3_serving PORT...: every member serves, and exactly one leads.
zk3_serving() {
  local p mode leaders=0
  for p in "$@"; do
    mode=$(zk3_mode "$p")
    case "$mode" in
      leader) leaders=$((leaders + 1)) ;;
      follower) ;;
      *) return 1 ;;
    esac
  done
  [ $leaders -eq 1 ]
}

start_zk3() {
  local dir="$COORD_TMP/zk3" ctl="$COORD_TMP/zk3/ctl" ports n quorum="" hosts="" t0=$SECONDS
  mkdir -p "$ctl"
  # Member n: client port ports[n], quorum port ports[3+n], election port ports[6+n].
  read -r -a ports <<<"$(free_ports 9)"
  for n in 0 1 2; do
    quorum+="server.$((n + 1))=127.0.0.1:${ports[3 + n]}:${ports[6 + n]}"$'\n'
    hosts+="${hosts:+,}127.0.0.1:${ports[n]}"
  done
  for n in 0 1 2; do
    mkdir -p "$dir/$n/data"
    echo $((n + 1)) >"$dir/$n/data/myid"
    # initLimit/syncLimit of 10 ticks (2 s): a loaded 2-core machine does
    # not drop a follower for a short stall, and a killed peer's sockets
    # close at once on loopback anyway. cnxTimeout bounds an election's
    # connection attempt to a member that is down.
    cat >"$dir/$n/zoo.cfg" <<EOF
tickTime=200
initLimit=10
syncLimit=10
cnxTimeout=500
minSessionTimeout=1000
maxSessionTimeout=20000
dataDir=$dir/$n/data
clientPort=${ports[n]}
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,cons,mntr
maxClientCnxns=0
standaloneEnabled=false
reconfigEnabled=false
$quorum
EOF
    cluster_member "$ctl" "$n" "$dir/$n/zookeeper.log" "$dir/$n/zoo.cfg" "${ports[n]}" -- \
      java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
      -Dorg.slf4j.simpleLogger.defaultLogLevel=info \
      -Dzookeeper.extendedTypesEnabled=true -Dznode.container.checkIntervalMs=200 \
      -cp "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar" \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/$n/zoo.cfg"
  done
  echo 3 >"$ctl/members"
  cluster_start_all "$ctl"
  wait_until 60 "a ZooKeeper ensemble with a leader" \
    zk3_serving "${ports[0]}" "${ports[1]}" "${ports[2]}" || {
    for n in 0 1 2; do tail -n 20 "$dir/$n/zookeeper.log" >&2; done
    return 1
  }
  export COORD_TEST_ZK3="$hosts"
  export COORD_TEST_ZK3_CTL="$ctl"
  echo "   ZooKeeper ensemble at $COORD_TEST_ZK3 (control: $ctl; up in $((SECONDS - t0)) s)"
}
