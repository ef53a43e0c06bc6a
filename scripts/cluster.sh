# Shared by the cluster server files (scripts/servers/zk3.sh, etcd3.sh):
# free ports for several members, and the control directory through which
# tests kill -9 and restart single members. Sourced, not run; needs lib.sh.
#
# A control directory CTL holds, for each member N (0, 1, 2, … in the order
# of the cluster's connect string):
#
#   start-N     start member N unless it runs, on its own ports and data
#               dir; returns once it listens on its client port, printing
#               its pid. The pid goes to pid-N and to $COORD_TMP/pids, so
#               stop_tracked stops it too.
#   kill-N      kill -9 member N and return once it is gone (its ports are
#               closed); drops its pid from pid-N and $COORD_TMP/pids.
#   pid-N       the running member's pid (absent while it is down).
#   member-N.sh what start-N runs (sourced): the command line, its log, its
#               client port, and a string of its command line (its config
#               or data dir) that tells our member from any other process.
#
# and `members`, the number of members. Both scripts are idempotent and can
# run concurrently for different members.

CLUSTER_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# free_ports K: K distinct free loopback ports, below the kernel's
# ephemeral range: a member killed by a test is restarted on the same
# ports, and an outgoing connection must not have taken one meanwhile.
free_ports() {
  python3 - "$1" <<'EOF'
import random, socket, sys
k = int(sys.argv[1])
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        lo, hi = map(int, f.read().split())
except (OSError, ValueError):
    lo, hi = 32768, 60999
candidates = [p for p in range(10000, 65536) if not lo <= p <= hi]
random.shuffle(candidates)
held, ports = [], []
for p in candidates:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        s.close()
        continue
    held.append(s)  # kept open until all are chosen: no duplicates
    ports.append(p)
    if len(ports) == k:
        break
if len(ports) < k:
    sys.exit("no %d free loopback ports" % k)
print(" ".join(map(str, ports)))
EOF
}

# port_open PORT: true once something listens on 127.0.0.1:PORT.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# member_running PID: PID runs and is not a zombie, whatever its command
# line. Right after the fork that starts a member, the child may not have
# exec'd the member's command yet, so its command line is still the
# shell's: member_alive would take it for dead.
member_running() {
  local pid=$1 stat
  [ -n "$pid" ] || return 1
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# member_alive PID MARK: member_running, and its command line contains
# MARK, so a recycled pid is never taken for our member.
member_alive() {
  member_running "$1" || return 1
  tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"
}

# Add or drop a pid in $COORD_TMP/pids, under a lock (members of one
# cluster may be started and killed concurrently).
tracked_edit() {
  local op=$1 pid=$2
  (
    flock 9
    case "$op" in
      add) echo "$pid" >>"$COORD_TMP/pids" ;;
      drop) [ -f "$COORD_TMP/pids" ] && sed -i "/^${pid}\$/d" "$COORD_TMP/pids" ;;
    esac
  ) 9>>"$COORD_TMP/pids.lock"
}

# member_start CTL N: what start-N does (see above).
member_start() {
  local ctl=$1 n=$2 pid="" member_cmd member_log member_mark member_port
  . "$ctl/member-$n.sh"
  pid=$(cat "$ctl/pid-$n" 2>/dev/null || true)
  if member_alive "$pid" "$member_mark"; then
    echo "$pid"
    return 0
  fi
  rm -f "$ctl/pid-$n.new"
  # A subshell starts the member and waits for it, so the member is reaped
  # when it dies even where pid 1 reaps nothing (an orphan left as a zombie
  # would still look alive to stop_tracked's kill -0). Every descriptor is
  # redirected: a caller that reads our output must not wait for the member.
  (
    "${member_cmd[@]}" >>"$member_log" 2>&1 </dev/null &
    echo $! >"$ctl/pid-$n.new"
    wait
  ) >/dev/null 2>&1 </dev/null &
  for _ in $(seq 500); do
    [ -s "$ctl/pid-$n.new" ] && break
    sleep 0.01
  done
  pid=$(cat "$ctl/pid-$n.new")
  mv "$ctl/pid-$n.new" "$ctl/pid-$n"
  tracked_edit add "$pid"
  local deadline=$((SECONDS + 60))
  # Our own child, just started: its pid cannot have been recycled yet, and
  # its command line may still be the shell's (see member_running).
  until port_open "$member_port"; do
    if ! member_running "$pid" || [ $SECONDS -ge $deadline ]; then
      echo "!! member $n ($member_mark) did not come up on port $member_port" >&2
      tail -n 30 "$member_log" >&2
      return 1
    fi
    sleep 0.05
  done
  echo "$pid"
}

# member_kill CTL N: what kill-N does (see above).
member_kill() {
  local ctl=$1 n=$2 pid="" member_cmd member_log member_mark member_port
  . "$ctl/member-$n.sh"
  pid=$(cat "$ctl/pid-$n" 2>/dev/null || true)
  if member_alive "$pid" "$member_mark"; then
    kill -9 "$pid" 2>/dev/null || true
    for _ in $(seq 1000); do
      member_alive "$pid" "$member_mark" || break
      sleep 0.01
    done
    if member_alive "$pid" "$member_mark"; then
      echo "!! member $n (pid $pid) survived kill -9" >&2
      return 1
    fi
  fi
  rm -f "$ctl/pid-$n"
  [ -z "$pid" ] || tracked_edit drop "$pid"
}

# cluster_member CTL N LOG MARK PORT -- CMD...: describe member N (its
# command, log, the string that marks its command line, its client port)
# and write its start-N and kill-N scripts.
cluster_member() {
  local ctl=$1 n=$2 log=$3 mark=$4 port=$5 verb
  shift 5
  [ "$1" = "--" ] && shift
  {
    printf 'member_log=%q\n' "$log"
    printf 'member_mark=%q\n' "$mark"
    printf 'member_port=%q\n' "$port"
    printf 'member_cmd=('
    printf '%q ' "$@"
    printf ')\n'
  } >"$ctl/member-$n.sh"
  for verb in start kill; do
    {
      echo '#!/usr/bin/env bash'
      echo "# $verb member $n of the cluster controlled from this directory (scripts/cluster.sh)."
      echo 'set -euo pipefail'
      printf 'export COORD_TMP=%q\n' "$COORD_TMP"
      printf '. %q\n' "$CLUSTER_LIB_DIR/lib.sh" "$CLUSTER_LIB_DIR/cluster.sh"
      printf 'member_%s %q %q\n' "$verb" "$ctl" "$n"
    } >"$ctl/$verb-$n"
    chmod +x "$ctl/$verb-$n"
  done
}

# cluster_start_all CTL: start every member at once; fails if one fails.
cluster_start_all() {
  local ctl=$1 n pids=() failed=0
  for ((n = 0; n < $(cat "$ctl/members"); n++)); do
    "$ctl/start-$n" >/dev/null &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  return $failed
}
