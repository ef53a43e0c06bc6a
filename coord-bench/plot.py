#!/usr/bin/env python3
"""Plot W2 (contended handoff) throughput vs sessions for every backend.

usage: plot.py RESULTS_DIR OUT.png
Reads RESULTS_DIR/<backend>.json as written by coord-bench.

usage: plot.py --scale RESULTS_DIR OUT.png
Plots the lock-scale workload instead (issue 35): hand-offs per second
against waiting sessions, log-log, one panel per backend, coord and the
peers on the same axes; reads RESULTS_DIR/scale-<backend>.json as written
by coord-bench's lock-scale (scripts/bench-scale).
"""
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BACKENDS = ["mem", "zk", "etcd", "redis", "pg"]
SERIES = [
    ("lock", "coord Lock", "-o"),
    ("simple", "coord SimpleLock (herd)", "--s"),
    ("native", "native lock / floor", ":^"),
]


def panels(n):
    """A figure with n panels, two a row; its axes as one list."""
    cols = 2 if n > 1 else 1
    nrows = (n + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5.3 * cols, 4.0 * nrows), squeeze=False)
    flat = [a for row in axes for a in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat


SCALE_ROW = re.compile(r"^scale\.k(\d+)\.([a-z]+)\.per_s$")
SCALE_STYLE = {
    "lock": "-o",
    "lockdrop": "-D",
    "zkclient": ":^",
    "curator": ":v",
    "etcdrpc": ":^",
    "advisory": ":^",
    "tokio": ":^",
}


def scale(src, dst):
    runs = {}
    for b in BACKENDS:
        p = os.path.join(src, "scale-" + b + ".json")
        if not os.path.exists(p):
            continue
        series = {}
        with open(p) as f:
            for r in json.load(f)["rows"]:
                m = SCALE_ROW.match(r["key"])
                if not m or r["value"] is None:
                    continue
                label = r["case"].rsplit(", ", 1)[0]
                series.setdefault(m.group(2), (label, []))[1].append((int(m.group(1)), r["value"]))
        if series:
            runs[b] = series
    if not runs:
        sys.exit(f"no scale-<backend>.json in {src}")
    fig, flat = panels(len(runs))
    for ax, (b, series) in zip(flat, runs.items()):
        ks = set()
        for slug, (label, pts) in series.items():
            pts.sort()
            ks.update(k for k, _ in pts)
            ax.plot([k for k, _ in pts], [v for _, v in pts], SCALE_STYLE.get(slug, "-x"), label=label)
        ks = sorted(ks)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks])
        ax.set_title(b)
        ax.set_xlabel("sessions contending for one lock")
        ax.set_ylabel("hand-offs / s (log)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Lock hand-off rate against waiters (coord and the peers)")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


def main():
    if sys.argv[1] == "--scale":
        scale(sys.argv[2], sys.argv[3])
        return
    src, dst = sys.argv[1], sys.argv[2]
    runs = {}
    for b in BACKENDS:
        p = os.path.join(src, b + ".json")
        if os.path.exists(p):
            with open(p) as f:
                runs[b] = {r["key"]: r for r in json.load(f)["rows"]}
    if not runs:
        sys.exit(f"no <backend>.json in {src}")
    fig, flat = panels(len(runs))
    for ax, (b, rows) in zip(flat, runs.items()):
        for key, label, style in SERIES:
            pts = []
            for k in (2, 8, 32):
                r = rows.get(f"w2.{key}.k{k}.per_s")
                if r:
                    pts.append((k, r["value"]))
            if not pts:
                continue
            if key == "native":
                label = rows[f"w2.native.k{pts[0][0]}.per_s"]["case"].split(" (baseline)")[0]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks([2, 8, 32])
        ax.set_xticklabels(["2", "8", "32"])
        ax.set_title(b)
        ax.set_xlabel("contending sessions")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylabel("handoffs / s (log)")
        ax.legend(fontsize=8)
    fig.suptitle("W2: contended lock handoffs per second vs sessions")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main()
