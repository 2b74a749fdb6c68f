#!/usr/bin/env python3
# Summarises bench/sitting.sh's runs of bench/peers: every table row of
# every run (base.N.md, head.N.md in the directory given), keyed by its
# section and its label cells, with the median over runs of each figure,
# printed as "base -> head".
import glob
import os
import re
import statistics
import sys

LABELS = {"goroutines", "keys", "contender", "workload"}
num = re.compile(r"-?\d+(?:\.\d+)?")


def parse(path):
    rows, section, header = {}, None, None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("### "):
            section, header = re.sub(r"\s*\(.*", "", line[4:]), None
            continue
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = cells
            continue
        label = tuple(c for h, c in zip(header, cells) if h in LABELS)
        for h, c in zip(header, cells):
            m = num.match(c)
            if h not in LABELS and m and not h.startswith("commands"):
                rows.setdefault((section, tuple(header)), {}).setdefault(label, {})[h] = float(m.group())
    return rows


def collect(d, build):
    runs = [parse(p) for p in sorted(glob.glob(os.path.join(d, build + ".*.md")))]
    out = {}
    for r in runs:
        for sec, labels in r.items():
            for label, vals in labels.items():
                for h, v in vals.items():
                    out.setdefault(sec, {}).setdefault(label, {}).setdefault(h, []).append(v)
    return out


base, head = collect(sys.argv[1], "base"), collect(sys.argv[1], "head")
fmt = lambda xs: "—" if not xs else f"{statistics.median(xs):.2f}"
for sec in head:
    name, header = sec
    labels = [h for h in header if h in LABELS]
    values = [h for h in header if h not in LABELS and not h.startswith("commands")]
    print(f"\n### {name}\n")
    print("| " + " | ".join(labels + values) + " |")
    print("|" + "---|" * (len(labels) + len(values)))
    for label, vals in head[sec].items():
        b = base.get(sec, {}).get(label, {})
        cells = [f"{fmt(b.get(h, []))} → {fmt(vals.get(h, []))}" for h in values]
        print("| " + " | ".join(list(label) + cells) + " |")
