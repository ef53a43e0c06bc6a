# Shared helpers for scripts/test-all and the server files in scripts/servers/.
# Sourced, not run.

# Install the Debian packages named that are not installed yet (one apt-get
# update, one install). Needs root, as on the project's machines and CI.
# A package removed but not purged (dpkg's "rc": only its config files left)
# is not installed, though `dpkg -s` knows it: ask for its status.
ensure_packages() {
  local missing=()
  for p in "$@"; do
    case " ${missing[*]} " in *" $p "*) continue ;; esac
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# A free TCP port on 127.0.0.1 (the kernel picks it).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Remember a pid we started, so cleanup stops exactly it.
track_pid() {
  echo "$1" >>"$COORD_TMP/pids"
}

# wait_until SECONDS DESCRIPTION COMMAND...: run COMMAND until it succeeds.
wait_until() {
  local secs=$1 what=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "!! $what did not come up within ${secs}s" >&2
      return 1
    fi
    sleep 0.2
  done
}

# Stop every pid we started (TERM, then KILL), and remove the temp dir.
stop_tracked() {
  [ -n "${COORD_TMP:-}" ] || return 0
  if [ -f "$COORD_TMP/pids" ]; then
    while read -r pid; do
      kill "$pid" 2>/dev/null || true
    done <"$COORD_TMP/pids"
    for _ in $(seq 50); do
      local alive=0
      while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$COORD_TMP/pids"
      [ $alive -eq 0 ] && break
      sleep 0.1
    done
    while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$COORD_TMP/pids"
  fi
  rm -rf "$COORD_TMP"
}

# make_test_certs DIR: a throwaway certificate authority and, signed by it,
# a server certificate for 127.0.0.1 / localhost and a client certificate
# (CN=coord), for the secured servers (scripts/servers/*-secure.sh) and
# the TLS tests. Also a second, untrusted authority with a client
# certificate of its own (a client the servers must refuse). EC P-256
# keys in PKCS#8 PEM ("BEGIN PRIVATE KEY"), which ZooKeeper, etcd, Redis
# and rustls all read. Files: ca.pem, server.pem, server-key.pem,
# server-both.pem (key then certificate: ZooKeeper's PEM key store),
# client.pem, client-key.pem, rogue-ca.pem, rogue-client.pem,
# rogue-client-key.pem. Idempotent: an existing ca.pem is kept.
make_test_certs() {
  local dir=$1
  [ -s "$dir/ca.pem" ] && return 0
  mkdir -p "$dir"
  (
    set -e
    cd "$dir"
    key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
    ca() { # ca NAME CN
      key "$1-key.pem"
      openssl req -x509 -new -key "$1-key.pem" -subj "/CN=$2" -days 3650 -sha256 \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$1.pem" 2>/dev/null
    }
    leaf() { # leaf NAME CN CA EXTENSIONS
      key "$1-key.pem"
      openssl req -new -key "$1-key.pem" -subj "/CN=$2" -out "$1.csr" 2>/dev/null
      printf '%s\n' "$4" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3-key.pem" -CAcreateserial \
        -days 3650 -sha256 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    ca ca "coord test CA"
    leaf server localhost ca "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
    leaf client coord ca "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
    cat server-key.pem server.pem >server-both.pem
    ca rogue-ca "rogue CA"
    leaf rogue-client coord rogue-ca "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
    chmod 600 ./*-key.pem server-both.pem
  )
}
