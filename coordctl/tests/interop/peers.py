#!/usr/bin/env python3
"""Participants for coordctl/tests/interop_peers/ (run by that test).

Every participant follows the marker protocol: right after it gets a hold
it creates DIR/holders/<KIND>.<IMPL>.<ID> exclusively (O_EXCL), lists
DIR/holders, and if what it sees is not allowed appends a line to
DIR/violations.log; it appends `IMPL ID KIND COUNT TIME MARKERS` to DIR/holds.log, holds
for 100..300 ms, removes its marker, then releases. KIND is W (exclusive:
a writer, a mutex holder, a leader) or R (shared: a reader, a lease).
Allowed: no W next to anyone else, and at most MAX markers in all.

Sub-commands (each exits by itself at --deadline, or when its parent dies,
so a test that is itself killed leaves nothing running for long):

  hold     the protocol once (the command coordctl / etcdctl lock run)
  loop     run a command again and again (a coordctl or etcdctl participant)
  kazoo    a kazoo participant: election | read | write
  etcd-elect  an `etcdctl elect` participant (etcdctl has no command mode)
"""

import argparse
import os
import random
import signal
import subprocess
import sys
import threading
import time


def watchdog(deadline):
    """Exit at the deadline, or once the parent has gone (reparented)."""
    parent = os.getppid()

    def run():
        while True:
            if time.time() > deadline or os.getppid() != parent:
                # A participant leads its own process group (the test
                # starts it so): take its children (coordctl, etcdctl,
                # the hold under them) along.
                if os.getpgrp() == os.getpid():
                    os.killpg(os.getpid(), signal.SIGKILL)
                os._exit(3)
            time.sleep(0.2)

    threading.Thread(target=run, daemon=True).start()


def append(path, line):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


class Marker:
    """The marker protocol around one hold."""

    def __init__(self, args):
        self.dir = args.dir
        self.holders = os.path.join(args.dir, "holders")
        self.name = "%s.%s.%s" % (args.kind, args.impl, args.id)
        self.path = os.path.join(self.holders, self.name)
        self.args = args

    def enter(self):
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        seen = sorted(os.listdir(self.holders))
        writers = [m for m in seen if m.startswith("W.")]
        if (writers and len(seen) > 1) or len(seen) > self.args.max:
            append(
                os.path.join(self.dir, "violations.log"),
                "%.3f %s saw %s" % (time.time(), self.name, " ".join(seen)),
            )
        append(
            os.path.join(self.dir, "holds.log"),
            "%s %s %s %d %.3f %s"
            % (
                self.args.impl,
                self.args.id,
                self.args.kind,
                len(seen),
                time.time(),
                ",".join(seen),
            ),
        )

    def leave(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def hold(self):
        self.enter()
        try:
            time.sleep(random.uniform(0.1, 0.3))
        finally:
            self.leave()


def common(p):
    p.add_argument("--dir", required=True)
    p.add_argument("--id", required=True)
    p.add_argument("--impl", required=True)
    p.add_argument("--kind", choices=["W", "R"], required=True)
    p.add_argument("--max", type=int, default=1)
    p.add_argument("--deadline", type=float, required=True)


def cmd_hold(args):
    marker = Marker(args)

    def lost(_sig, _frm):
        # coordctl sends SIGTERM when the hold is lost (or it is stopped):
        # stop acting at once.
        marker.leave()
        append(
            os.path.join(args.dir, "errors.log"),
            "%s %s: SIGTERM while holding" % (args.impl, args.id),
        )
        os._exit(143)

    signal.signal(signal.SIGTERM, lost)
    marker.hold()


def cmd_loop(args):
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    while time.time() < args.deadline:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            append(
                os.path.join(args.dir, "errors.log"),
                "%s %s: %s exited %d" % (args.impl, args.id, cmd[0], r.returncode),
            )
            time.sleep(0.2)


def cmd_kazoo(args):
    import logging

    logging.basicConfig(level=logging.CRITICAL)
    from kazoo.client import KazooClient

    client = KazooClient(hosts=args.hosts, timeout=2.0)
    client.start(timeout=15)
    marker = Marker(args)
    while time.time() < args.deadline:
        if args.role == "election":
            election = client.Election(args.path, args.id)
            # kazoo's Election has no extra_lock_patterns: replace the Lock
            # it runs on by one that also counts coord's (and Curator
            # LeaderLatch's) `_c_<uuid>-latch-<seq>` offers.
            election.lock = client.Lock(
                args.path, args.id, extra_lock_patterns=("-latch-",)
            )
            election.run(marker.hold)
        elif args.role == "lock":
            # Counts coord's (and Curator InterProcessMutex's)
            # `_c_<uuid>-lock-<seq>` nodes.
            lock = client.Lock(args.path, args.id, extra_lock_patterns=("-lock-",))
            with lock:
                marker.hold()
        elif args.role == "read":
            lock = client.ReadLock(args.path, args.id, extra_lock_patterns=("__WRIT__",))
            with lock:
                marker.hold()
        elif args.role == "write":
            lock = client.WriteLock(
                args.path, args.id, extra_lock_patterns=("__READ__", "__WRIT__")
            )
            with lock:
                marker.hold()
        else:
            raise SystemExit("unknown kazoo role " + args.role)


def cmd_etcd_elect(args):
    """`etcdctl elect NAME PROPOSAL` prints the leader key and value once
    elected and holds until interrupted, then resigns: campaign, hold,
    SIGINT it, wait, again. SIGTERM to this wrapper stops it the same way
    (etcdctl elect's session has a fixed 60 s TTL, so it is never killed
    with SIGKILL: its key would block the election for a minute)."""
    marker = Marker(args)
    state = {"child": None}

    def stop(_sig, _frm):
        marker.leave()
        child = state["child"]
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    env = dict(os.environ, ETCDCTL_API="3")
    while time.time() < args.deadline:
        proposal = "%s-%d" % (args.id, random.randrange(1 << 30))
        child = subprocess.Popen(
            ["etcdctl", "--endpoints", args.endpoints, "elect", args.path, proposal],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=env,
        )
        state["child"] = child
        key = child.stdout.readline()
        value = child.stdout.readline().decode().strip()
        if not key or value != proposal:
            append(
                os.path.join(args.dir, "errors.log"),
                "%s %s: etcdctl elect printed %r %r" % (args.impl, args.id, key, value),
            )
        else:
            marker.hold()
        child.send_signal(signal.SIGINT)
        child.wait()
        state["child"] = None


def main():
    top = argparse.ArgumentParser()
    sub = top.add_subparsers(dest="sub", required=True)
    p = sub.add_parser("hold")
    common(p)
    p = sub.add_parser("loop")
    common(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    p = sub.add_parser("kazoo")
    common(p)
    p.add_argument("--hosts", required=True)
    p.add_argument("--path", required=True)
    p.add_argument("--role", required=True)
    p = sub.add_parser("etcd-elect")
    common(p)
    p.add_argument("--endpoints", required=True)
    p.add_argument("--path", required=True)
    args = top.parse_args()
    watchdog(args.deadline)
    {
        "hold": cmd_hold,
        "loop": cmd_loop,
        "kazoo": cmd_kazoo,
        "etcd-elect": cmd_etcd_elect,
    }[args.sub](args)


if __name__ == "__main__":
    main()
