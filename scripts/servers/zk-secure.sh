# A secured ZooKeeper for coord-zk's tests: sourced by scripts/test-all (see
# the contract there); defines start_zk_secure.
#
# One standalone ZooKeeper 3.8 (Debian's jar, started as scripts/servers/zk.sh
# starts it) with ONLY a secure client port: no plaintext clientPort. TLS
# needs the Netty connection factory; its jars are in /usr/share/java, and
# those the zookeeper.jar manifest's Class-Path lacks (netty-codec for the
# SslHandler, netty-resolver, netty-transport-native-unix-common) are added
# to the class path here. Key and trust stores are PEM files from
# $COORD_TEST_CERTS (make_test_certs in scripts/lib.sh): the server serves
# server-both.pem (key then certificate, for 127.0.0.1 / localhost) and
# requires a client certificate signed by ca.pem (ssl.clientAuth=need:
# mutual TLS).
#
# Authentication:
# - digest (`addauth digest user:password`) needs no server setting: any
#   digest credentials are an identity.
# - SASL DIGEST-MD5: the SASL provider is on (authProvider.sasl) and the
#   JAAS file's `Server` section (DigestLoginModule, mode 600) has the user
#   `coord` with a random password. SASL stays optional
#   (sessionRequireClientSASLAuth is not set), so digest-only and
#   unauthenticated sessions are let in too.
# - x509: ZooKeeper also gives every TLS session the identity of its client
#   certificate (`x509:CN=coord`, the X509AuthenticationProvider). A creator
#   ACL (`auth`) made by such a session names the digest/SASL identity AND
#   that x509 one, so two sessions with different passwords but the same
#   client certificate share an identity here: tests of foreign identities
#   belong on the plaintext server (COORD_TEST_ZK).
#
# A TLS-only server cannot answer `ruok` over plaintext: it is up once
# `ruok` over mutual TLS (openssl s_client with the client certificate)
# answers `imok`.
#
# Exports COORD_TEST_ZK_SECURE=127.0.0.1:<secure port>,
# COORD_TEST_ZK_SECURE_USER=coord and COORD_TEST_ZK_SECURE_PASSWORD (random
# per run): the same user and password for digest and for SASL.

need_packages+=(zookeeper openssl)
servers+=(zk_secure)

# True once the TLS-only server on port $1 answers `ruok` over mutual TLS
# (client certificate from $2). `timeout` bounds a half-open handshake.
zk_secure_answers() {
  local port=$1 certs=$2 reply
  reply=$(printf 'ruok' | timeout 5 openssl s_client -quiet -no_ign_eof \
    -connect "127.0.0.1:$port" -verify_return_error -CAfile "$certs/ca.pem" \
    -cert "$certs/client.pem" -key "$certs/client-key.pem" 2>/dev/null) || true
  [ "$reply" = imok ]
}

start_zk_secure() {
  local dir="$COORD_TMP/zk-secure" port certs="$COORD_TEST_CERTS" pw cp j
  [ -s "$certs/ca.pem" ] || {
    echo "!! zk_secure: no certificates in COORD_TEST_CERTS=${certs:-<unset>}" >&2
    return 1
  }
  mkdir -p "$dir/data"
  port=$(free_port)
  pw=$(openssl rand -hex 16)
  (
    umask 077
    cat >"$dir/jaas.conf" <<EOF
Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_coord="$pw";
};
EOF
  )
  # tickTime 500 ms, sessions of 1 s .. 10 s: as scripts/servers/zk.sh.
  cat >"$dir/zoo.cfg" <<EOF
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=10000
dataDir=$dir/data
secureClientPort=$port
secureClientPortAddress=127.0.0.1
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=$certs/server-both.pem
ssl.keyStore.type=PEM
ssl.trustStore.location=$certs/ca.pem
ssl.trustStore.type=PEM
ssl.clientAuth=need
authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
maxClientCnxns=0
EOF
  cp="/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"
  for j in netty-codec netty-resolver netty-transport-native-unix-common; do
    cp="$cp:/usr/share/java/$j.jar"
  done
  # TTL nodes and a 200 ms reaper, as scripts/servers/zk.sh (the
  # conformance suite's TTL tests run here too).
  java -Xmx256m -XX:+UseSerialGC -Dorg.slf4j.simpleLogger.defaultLogLevel=info \
    -Dzookeeper.extendedTypesEnabled=true -Dznode.container.checkIntervalMs=200 \
    -Djava.security.auth.login.config="$dir/jaas.conf" \
    -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
    >"$dir/zookeeper.log" 2>&1 </dev/null &
  track_pid $!
  wait_until 60 "ZooKeeper (TLS) on 127.0.0.1:$port" zk_secure_answers "$port" "$certs" || {
    tail -n 30 "$dir/zookeeper.log" >&2
    return 1
  }
  export COORD_TEST_ZK_SECURE="127.0.0.1:$port"
  export COORD_TEST_ZK_SECURE_USER=coord
  export COORD_TEST_ZK_SECURE_PASSWORD="$pw"
  echo "   ZooKeeper (TLS only, mutual TLS, digest + SASL user coord) at $COORD_TEST_ZK_SECURE (logs in $dir)"
}
