#!/usr/bin/env python3
"""heapowners.py attributes a heap profile's live bytes to their owners.

Usage: scripts/heapowners.py BINARY PROFILE [BINARY PROFILE ...]
Each sample goes to the owner of the first frame, from the allocating one
outwards, that one of the OWNERS patterns matches, helpers (SKIP) left out:
a sample belongs to what asked for the bytes, not to its callers (a
scrape's allocations happen inside the store's walk); the table has a column
per profile (in MB, and B per stored parameter when STORED_PARAMS is set).
Profiles are inuse_space heap profiles (/debug/pprof/heap?gc=1), best taken
with GODEBUG=memprofilerate=4096 so that small owners are sampled.
"""
import os
import re
import subprocess
import sys

# Helpers that allocate for their callers.
SKIP = r"^(runtime|slices|sort|strings|bytes|strconv|fmt|sync|maps|unicode/utf8)\.|collector\.grown|store\.resized|exposition\.AppendEscaped"

# (owner, frame pattern): the first that matches a frame, from the leaf up.
OWNERS = [
    ("store: decoded values kept (boxed by wire)", r"wire\.\(\*paramDecoder\)\.value|wire\.unquote"),
    ("store: entries, maps, columns, label orders", r"realtime/store\."),
    ("prime decoding buffers", r"wire\.|cloudclient\.\(\*Client\)\.(Prime|fetchPrime)"),
    ("collector: catalog value index", r"collector\.\(\*valueIndex\)|collector\.\(\*moduleValues\)"),
    ("collector: catalog renders", r"collector\.newModuleRender|collector\.\(\*renderedParam\)"),
    ("catalog (parsed assets, rules)", r"bragerone_exporter/catalog(load)?[./]"),
    ("collector and exposition buffers", r"bragerone_exporter/(collector|exposition|serving)\."),
    ("compression (pooled gzip/zstd writers)", r"klauspost/compress"),
    ("transport and gateway (Socket.IO, queues)", r"bragerone_exporter/(realtime|fleet)[./]|zishang520|gorilla/websocket"),
    ("REST client", r"bragerone_exporter/cloudclient\.|net/http\.\(\*Transport\)|net/http\.\(\*persistConn\)"),
    ("client_golang registry and metrics", r"prometheus/client_golang|prometheus/common"),
    ("command line, config, pages", r"alecthomas/kong|internal/cli|text/template|html/template|bragerone_exporter/(exporter|serving/status)"),
]


def units(s):
    m = re.match(r"([\d.]+)([kMG]?B)", s)
    if not m:
        return 0.0
    return float(m.group(1)) * {"B": 1, "kB": 1024, "MB": 1 << 20, "GB": 1 << 30}[m.group(2)]


def owners(binary, profile):
    out = subprocess.run(["go", "tool", "pprof", "-traces", "-sample_index=inuse_space", binary, profile],
                         capture_output=True, text=True, check=True).stdout
    totals = {}
    for block in out.split("-----------+-------------------------------------------------------")[1:]:
        lines = [l for l in block.strip("\n").split("\n") if l.strip()]
        frames, value = [], 0.0
        for l in lines:
            if l.strip().startswith("bytes:"):
                continue
            m = re.match(r"\s*([\d.]+[kMG]?B|0)\s+(\S.*)", l)
            if m and not frames:
                value = units(m.group(1)) if m.group(1) != "0" else 0.0
                frames.append(m.group(2))
            else:
                frames.append(l.strip())
        owner = "other (runtime, standard library, package variables)"
        for f in frames:
            if re.search(SKIP, f):
                continue
            hit = next((o for o, p in OWNERS if re.search(p, f)), None)
            if hit:
                owner = hit
                break
        totals[owner] = totals.get(owner, 0.0) + value
    return totals


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        sys.exit(__doc__)
    cols = [owners(args[i], args[i + 1]) for i in range(0, len(args), 2)]
    stored = float(os.environ.get("STORED_PARAMS", "0"))
    names = [o for o, _ in OWNERS] + ["other (runtime, standard library, package variables)"]
    def cell(v):
        return f"{v / 1e6:.2f}" + (f" ({v / stored:.0f} B)" if stored else "")
    print("| owner | " + " | ".join(os.path.basename(args[i + 1]) for i in range(0, len(args), 2)) + " |")
    print("|---|" + "---|" * len(cols))
    for n in names:
        if any(c.get(n, 0) for c in cols):
            print(f"| {n} | " + " | ".join(cell(c.get(n, 0)) for c in cols) + " |")
    print("| **all (profile estimate)** | " + " | ".join(cell(sum(c.values())) for c in cols) + " |")


if __name__ == "__main__":
    main()
