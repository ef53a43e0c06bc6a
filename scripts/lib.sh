# Shared helpers for scripts/test-all and the server files in scripts/servers/.
# Sourced, not run.

# Install the Debian packages named that are not installed yet (one apt-get
# update, one install). Needs root, as on the project's machines and CI.
ensure_packages() {
  local missing=()
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
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
