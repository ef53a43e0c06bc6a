#!/usr/bin/env python3
"""Queue drain, side by side: coord's Queue, kazoo's Queue, Curator's
SimpleDistributedQueue on one ZooKeeper (issue 15). Run by
scripts/bench-peers-queue, which builds the peers and finds the server.

  queue_drain.py bench --zk HOST:PORT --coord-bin BIN --java-cp CP
                 [--items N] [--consumers C] [--blocks B] [--json FILE]
  queue_drain.py kazoo HOST:PORT PATH ITEMS CONSUMERS

`bench` runs one unrecorded warm-up round of all three (--warmup W;
a fresh ZooKeeper's JVM is cold), then B blocks; each block runs the three implementations once, in
an order rotated by one per block. Each run prefills ITEMS items
(item-0 .. item-<N-1>) into a fresh queue path with that implementation's
own producer (not timed), then times C consumers, each on its own
ZooKeeper session, polling until the queue is empty, and checks that every
item was taken exactly once. The clock starts once every consumer is
connected and ends when the last one finds the queue empty. Prints a
markdown table (items/s per implementation per block, coord / Curator and
coord / kazoo per block, then median and min-max) and writes the same as
JSON.

`kazoo` is kazoo's side: prefill with Queue.put from one client, then C
consumer processes (processes, not threads: kazoo's clients would
otherwise share one GIL), each with its own KazooClient, calling
Queue.get() until it returns None.
"""

import argparse
import datetime
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
import uuid

IMPLS = ["coord", "kazoo", "curator"]
RUN_TIMEOUT = 900  # seconds for one implementation's prefill + drain


# ------------------------------------------------------------------ kazoo


def _kazoo_client(hosts):
    from kazoo.client import KazooClient

    c = KazooClient(hosts=hosts, timeout=10.0)
    c.start(timeout=30)
    return c


def _kazoo_consumer(hosts, path, ready, go, out):
    from kazoo.recipe.queue import Queue

    taken, errors = [], []
    end = last = None
    try:
        client = _kazoo_client(hosts)
        q = Queue(client, path)
        ready.wait()
        go.wait()
        while True:
            try:
                item = q.get()
            except Exception as e:  # a real consumer would call get() again
                errors.append(repr(e))
                if len(errors) >= 100:
                    break
                continue
            if item is None:
                break
            taken.append(item.decode())
            last = time.monotonic()
        end = time.monotonic()
        client.stop()
        client.close()
    except Exception as e:
        errors.append(repr(e))
        end = end or time.monotonic()
        # Never leave the parent waiting at a barrier.
        for b in (ready, go):
            try:
                b.abort()
            except Exception:
                pass
    out.put((taken, end, errors, last))


def kazoo_main(hosts, path, items, consumers):
    from kazoo.recipe.queue import Queue

    producer = _kazoo_client(hosts)
    q = Queue(producer, path)
    for i in range(items):
        q.put(f"item-{i}".encode())
    producer.stop()
    producer.close()

    ctx = mp.get_context("spawn")
    ready = ctx.Barrier(consumers + 1)
    go = ctx.Barrier(consumers + 1)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_kazoo_consumer, args=(hosts, path, ready, go, out))
        for _ in range(consumers)
    ]
    for p in procs:
        p.start()
    errors = []
    start = None
    try:
        ready.wait(timeout=120)
        start = time.monotonic()
        go.wait(timeout=120)
    except Exception as e:
        errors.append(f"start: {e!r}")
    results = [out.get(timeout=RUN_TIMEOUT) for _ in procs]
    for p in procs:
        p.join()
    taken = [t for r in results for t in r[0]]
    ends = [r[1] for r in results if r[1] is not None]
    for r in results:
        errors.extend(r[2])
    seconds = (max(ends) - start) if (start is not None and ends) else None
    res = check("kazoo", items, taken, [len(r[0]) for r in results])
    res["seconds"] = seconds
    lasts = [r[3] for r in results if r[3] is not None]
    res["last_take_seconds"] = (max(lasts) - start) if (start is not None and lasts) else None
    # When each consumer found the queue empty (a consumer that took
    # nothing yet ended late spent its time in kazoo's retry back-off).
    res["consumer_end_s"] = [round(r[1] - start, 3) if (start is not None and r[1]) else None
                             for r in results]
    res["errors"] = "; ".join(errors[:10]) + (f" (+{len(errors) - 10})" if len(errors) > 10 else "")
    res["error_count"] = len(errors)
    res["ok"] = res["ok"] and seconds is not None
    print(json.dumps(res), flush=True)
    return 0 if res["ok"] else 1


def check(impl, items, taken, per_consumer):
    seen = {}
    for t in taken:
        seen[t] = seen.get(t, 0) + 1
    duplicates = sum(c - 1 for c in seen.values())
    missing = sum(1 for i in range(items) if f"item-{i}" not in seen)
    unexpected = len(seen) + missing - items
    return {
        "impl": impl,
        "items": items,
        "taken": len(taken),
        "duplicates": duplicates,
        "missing": missing,
        "unexpected": unexpected,
        "per_consumer": per_consumer,
        "ok": len(taken) == items and duplicates == 0 and missing == 0 and unexpected == 0,
    }


# ------------------------------------------------------------------ bench


def run_one(impl, args, path):
    if impl == "coord":
        cmd = [args.coord_bin, "--url", f"zk://{args.zk}", "--path", path,
               "--items", str(args.items), "--consumers", str(args.consumers),
               "--prefill", "--drain"]
    elif impl == "kazoo":
        cmd = [sys.executable, os.path.abspath(__file__), "kazoo", args.zk, path,
               str(args.items), str(args.consumers)]
    else:
        cmd = ["java", "-Xmx512m", "-cp", args.java_cp, "QueueDrain", args.zk, path,
               str(args.items), str(args.consumers)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"impl": impl, "ok": False, "seconds": None, "errors": f"timed out after {RUN_TIMEOUT}s"}
    wall = time.monotonic() - t0
    res = None
    for line in reversed(p.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                res = json.loads(line)
                break
            except ValueError:
                pass
    if res is None:
        res = {"impl": impl, "ok": False, "seconds": None}
    res["impl"] = impl
    res["exit"] = p.returncode
    res["wall_seconds"] = round(wall, 3)
    if p.returncode != 0 or not res.get("ok"):
        res["ok"] = False
        tail = "\n".join(p.stderr.strip().splitlines()[-5:])
        if tail:
            res["stderr"] = tail
    s = res.get("seconds")
    res["items_per_s"] = (args.items / s) if (res["ok"] and s) else None
    s = res.get("last_take_seconds")
    res["items_per_s_last_take"] = (args.items / s) if (res["ok"] and s) else None
    return res


def cleanup(zk, root):
    try:
        c = _kazoo_client(zk)
        c.delete(root, recursive=True)
        c.stop()
        c.close()
    except Exception as e:
        print(f"(could not remove {root}: {e!r})", file=sys.stderr)


def fmt(x, ratio=False):
    if x is None:
        return "failed"
    return f"{x:.2f}×" if ratio else f"{x:,.0f}"


def summary(values):
    v = [x for x in values if x is not None]
    if not v:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def bench_main(args):
    run_id = uuid.uuid4().hex[:8]
    root = f"/bench-peers-queue/{run_id}"
    # Unrecorded warm-up rounds first: a freshly started ZooKeeper's JVM is
    # cold, and the first block's first run was measured at half speed.
    warmup = []
    for w in range(args.warmup):
        for impl in IMPLS:
            r = run_one(impl, args, f"{root}/warmup{w}-{impl}")
            warmup.append(r)
            state = f"{fmt(r['items_per_s'])} items/s" if r["ok"] else "FAILED"
            print(f"   warm-up {w + 1}/{args.warmup} {impl}: {state} (not recorded)",
                  file=sys.stderr, flush=True)
    blocks = []
    for b in range(args.blocks):
        order = IMPLS[b % len(IMPLS):] + IMPLS[: b % len(IMPLS)]
        runs = {}
        for impl in order:
            path = f"{root}/b{b}-{impl}"
            r = run_one(impl, args, path)
            runs[impl] = r
            state = (f"{fmt(r['items_per_s'])} items/s ({r['seconds']:.3f} s)" if r["ok"]
                     else f"FAILED: {r.get('errors') or r.get('stderr') or r}")
            print(f"   block {b + 1}/{args.blocks} {impl}: {state}", file=sys.stderr, flush=True)
        c, k, j = (runs[i]["items_per_s"] for i in IMPLS)
        c2, k2, j2 = (runs[i]["items_per_s_last_take"] for i in IMPLS)
        blocks.append({
            "block": b + 1,
            "order": order,
            "runs": runs,
            "coord_over_curator": (c / j) if (c and j) else None,
            "coord_over_kazoo": (c / k) if (c and k) else None,
            "last_take_coord_over_curator": (c2 / j2) if (c2 and j2) else None,
            "last_take_coord_over_kazoo": (c2 / k2) if (c2 and k2) else None,
        })
    cleanup(args.zk, root)

    summ = {
        "coord_items_per_s": summary([bl["runs"]["coord"]["items_per_s"] for bl in blocks]),
        "kazoo_items_per_s": summary([bl["runs"]["kazoo"]["items_per_s"] for bl in blocks]),
        "curator_items_per_s": summary([bl["runs"]["curator"]["items_per_s"] for bl in blocks]),
        "coord_over_curator": summary([bl["coord_over_curator"] for bl in blocks]),
        "coord_over_kazoo": summary([bl["coord_over_kazoo"] for bl in blocks]),
        "last_take": {
            f"{i}_items_per_s": summary([bl["runs"][i]["items_per_s_last_take"] for bl in blocks])
            for i in IMPLS
        },
    }
    summ["last_take"]["coord_over_curator"] = summary(
        [bl["last_take_coord_over_curator"] for bl in blocks])
    summ["last_take"]["coord_over_kazoo"] = summary(
        [bl["last_take_coord_over_kazoo"] for bl in blocks])
    targets = {"coord_over_curator": 3.0, "coord_over_kazoo": 1.5}

    out = []
    out.append(f"## Queue drain, {args.consumers} consumers, {args.items} items, ZooKeeper {args.zk}")
    out.append("")
    out.append("Each run: prefill with the implementation's own producer (not timed), then "
               f"{args.consumers} consumers, one ZooKeeper session each, poll until empty (timed); "
               "every item checked taken exactly once. Blocks interleaved, order rotated, "
               f"after {args.warmup} unrecorded warm-up round(s) of all three.")
    out.append("")
    out.append("| block | order | coord items/s | kazoo items/s | Curator items/s | coord ÷ Curator | coord ÷ kazoo |")
    out.append("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for bl in blocks:
        r = bl["runs"]
        out.append(f"| {bl['block']} | {', '.join(bl['order'])} | {fmt(r['coord']['items_per_s'])} | "
                   f"{fmt(r['kazoo']['items_per_s'])} | {fmt(r['curator']['items_per_s'])} | "
                   f"{fmt(bl['coord_over_curator'], True)} | {fmt(bl['coord_over_kazoo'], True)} |")

    def mm(s, ratio=False):
        if s["median"] is None:
            return "failed"
        return f"{fmt(s['median'], ratio)} ({fmt(s['min'], ratio)} – {fmt(s['max'], ratio)})"

    out.append(f"| **median (min – max)** | | {mm(summ['coord_items_per_s'])} | {mm(summ['kazoo_items_per_s'])} | "
               f"{mm(summ['curator_items_per_s'])} | {mm(summ['coord_over_curator'], True)} | "
               f"{mm(summ['coord_over_kazoo'], True)} |")
    out.append("")
    # The same runs timed to the last item taken instead of to the last
    # consumer finding the queue empty: kazoo's losing consumers can sleep
    # in its retry back-off well after the queue is drained.
    lt = summ["last_take"]
    out.append("Secondary, the same runs timed to the last item taken (not to the last consumer's "
               "empty poll):")
    out.append("")
    out.append("| block | coord items/s | kazoo items/s | Curator items/s | coord ÷ Curator | coord ÷ kazoo |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for bl in blocks:
        r = bl["runs"]
        out.append(f"| {bl['block']} | {fmt(r['coord']['items_per_s_last_take'])} | "
                   f"{fmt(r['kazoo']['items_per_s_last_take'])} | "
                   f"{fmt(r['curator']['items_per_s_last_take'])} | "
                   f"{fmt(bl['last_take_coord_over_curator'], True)} | "
                   f"{fmt(bl['last_take_coord_over_kazoo'], True)} |")
    out.append(f"| **median (min – max)** | {mm(lt['coord_items_per_s'])} | {mm(lt['kazoo_items_per_s'])} | "
               f"{mm(lt['curator_items_per_s'])} | {mm(lt['coord_over_curator'], True)} | "
               f"{mm(lt['coord_over_kazoo'], True)} |")
    out.append("")
    out.append("Items taken per consumer: " + "; ".join(
        f"block {bl['block']} " + ", ".join(
            f"{i} {bl['runs'][i].get('per_consumer')}" for i in IMPLS) for bl in blocks))
    out.append("")
    verdicts = {}
    for key, goal in targets.items():
        s = summ[key]
        if s["median"] is None or s["n"] < args.blocks:
            v = "not measured (a run failed)"
        elif s["median"] >= goal:
            v = "met" + ("" if s["min"] >= goal else " on the median, not in every block")
        else:
            v = "NOT met"
        verdicts[key] = v
        name = "Curator" if key.endswith("curator") else "kazoo"
        out.append(f"- coord ÷ {name} ≥ {goal}×: {v} (median {fmt(s['median'], True)})")
    problems = [f"block {bl['block']} {i}: {bl['runs'][i].get('errors') or bl['runs'][i].get('stderr') or 'check failed'}"
                for bl in blocks for i in IMPLS if not bl["runs"][i]["ok"]]
    for bl in blocks:
        for i in IMPLS:
            r = bl["runs"][i]
            if r["ok"] and r.get("error_count"):
                problems.append(f"block {bl['block']} {i}: {r['error_count']} errors retried: {r.get('errors')}")
    for p in problems:
        out.append(f"- problem: {p}")
    print("\n".join(out), flush=True)

    doc = {
        "benchmark": "queue drain, side by side (issue 15)",
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "zk": args.zk,
        "items": args.items,
        "consumers": args.consumers,
        "blocks_requested": args.blocks,
        "warmup": warmup,
        "commit": args.commit,
        "blocks": blocks,
        "summary": summ,
        "targets": targets,
        "verdicts": verdicts,
        "problems": problems,
    }
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"\n(JSON: {args.json})", flush=True)
    return 0 if not problems or all("errors retried" in p for p in problems) else 1


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "kazoo":
        hosts, path, items, consumers = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        return kazoo_main(hosts, path, items, consumers)
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["bench"])
    ap.add_argument("--zk", required=True)
    ap.add_argument("--coord-bin", required=True)
    ap.add_argument("--java-cp", required=True)
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--consumers", type=int, default=4)
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--commit", default="")
    return bench_main(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
