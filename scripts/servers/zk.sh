# ZooKeeper for the tests: a standalone server on a free loopback port.
# Sourced by scripts/test-all (see the contract there); defines start_zk.
#
# Debian's `zookeeper` package brings the server jar (libzookeeper-java, with
# its dependencies named in the jar's manifest Class-Path) and a JRE
# (default-jre). We do not use /etc/zookeeper/conf: the config, data and log
# live in $COORD_TMP/zk, and the server logs through slf4j-simple to a file.

need_packages+=(zookeeper)
# Peers for coordctl's interop storms (coordctl/tests/interop_peers/):
# Apache Curator (its jars, with their dependencies, in /usr/share/java),
# compiled against with javac: the JDK only if javac is missing (the
# zookeeper package brings a JRE, not a compiler).
need_packages+=(libcurator-recipes-java)
# Curator's service discovery (curator-x-discovery.jar), for
# coordctl/tests/interop_discovery.rs.
need_packages+=(libcurator-discovery-java)
command -v javac >/dev/null 2>&1 || need_packages+=(default-jdk-headless)
servers+=(zk)

# True once the server on port $1 answers the `ruok` four-letter word
# (whitelisted in the config below). A subshell, so a refused connection
# cannot end the calling shell.
zk_answers() {
  local port=$1
  (
    exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
    printf 'ruok' >&3
    reply=""
    read -r -t 2 reply <&3 || true
    [ "$reply" = "imok" ]
  ) 2>/dev/null
}

# kazoo (Python) for coord-zk's interoperability test and coordctl's interop
# storms: from PyPI if missing (on a Python that refuses pip installs,
# PEP 668, Debian's python3-kazoo). Not fatal: without kazoo those tests
# fail and say why.
ensure_kazoo() {
  python3 -c 'import kazoo' 2>/dev/null && return 0
  echo "== installing kazoo (PyPI)"
  python3 -m pip install -q kazoo 2>/dev/null \
    || python3 -m pip install -q --break-system-packages kazoo 2>/dev/null \
    || ensure_packages python3-kazoo \
    || echo "!! could not install kazoo: coord-zk's interop test will fail" >&2
}

start_zk() {
  local dir="$COORD_TMP/zk" port
  mkdir -p "$dir/data"
  port=$(free_port)
  # tickTime 500 ms: sessions may ask for 1 s .. 10 s, so a test that waits
  # for a timeout does not wait long.
  cat >"$dir/zoo.cfg" <<EOF
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=10000
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
maxClientCnxns=0
EOF
  # TTL nodes need the extended types; the reaper that deletes them (and
  # empty containers) runs every 200 ms instead of every 60 s, so a test
  # awaiting a TTL node's deletion does not wait a minute.
  java -Xmx256m -XX:+UseSerialGC -Dorg.slf4j.simpleLogger.defaultLogLevel=info \
    -Dzookeeper.extendedTypesEnabled=true -Dznode.container.checkIntervalMs=200 \
    -cp "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
    >"$dir/zookeeper.log" 2>&1 </dev/null &
  track_pid $!
  wait_until 60 "ZooKeeper on 127.0.0.1:$port" zk_answers "$port" || {
    tail -n 30 "$dir/zookeeper.log" >&2
    return 1
  }
  export COORD_TEST_ZK="127.0.0.1:$port"
  echo "   ZooKeeper at $COORD_TEST_ZK (logs in $dir)"
  ensure_kazoo || true
}
