#!/usr/bin/env python3
"""residency.py PID BINARY: which parts of a running Go executable are resident.

Reads /proc/PID/maps and /proc/PID/pagemap (root, or the process's owner
with CAP_SYS_ADMIN, to see present bits), finds every page of BINARY's own
mappings that is in the process's page tables, and splits each page among
the symbols it holds (`go tool nm -size`), in proportion to their bytes.
Pages of the read-only mapping with no symbol are the runtime's function
table (.gopclntab), which holds no symbols; the mapping holds little else
without one. BINARY must keep its symbol table (a build without -s; the
release build strips it). Prints MiB per mapping and per Go module (the
standard library as "std"), largest first.
"""
import bisect
import collections
import os
import re
import struct
import subprocess
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")


def symbols(binary):
    out = subprocess.run(["go", "tool", "nm", "-size", "-sort", "address", binary],
                         capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        f = line.split(None, 3)
        if len(f) < 4:
            continue
        try:
            syms.append((int(f[0], 16), int(f[1]), f[3]))
        except ValueError:
            continue
    syms.sort()
    return syms


def module(name):
    """The Go module (or "std", or a runtime table) a symbol belongs to."""
    if name.startswith("type:"):
        return "runtime type data"
    if name.startswith("go:"):
        return "runtime tables (" + name.split(".")[0] + ")"
    path = re.sub(r"\(.*$", "", name)
    path = path[: path.find(".", path.rfind("/") + 1)] if "." in path[path.rfind("/") + 1:] else path
    parts = path.split("/")
    if "." not in parts[0]:
        return "std"
    if parts[0] in ("github.com", "golang.org", "gopkg.in") and len(parts) >= 3:
        mod = parts[:3]
    else:
        mod = parts[:2]
    # major-version suffixes and nested modules stay with their repository
    return "/".join(mod)


def main():
    pid, binary = int(sys.argv[1]), sys.argv[2]
    syms = symbols(binary)
    starts = [s[0] for s in syms]
    real = os.path.realpath(binary)
    maps = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and os.path.realpath(fields[5]) == real:
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                maps.append((lo, hi, fields[1]))
    by_map, by_mod = collections.Counter(), collections.Counter()
    with open(f"/proc/{pid}/pagemap", "rb") as pm:
        for lo, hi, perm in maps:
            for page in range(lo, hi, PAGE):
                pm.seek(page // PAGE * 8)
                if not struct.unpack("Q", pm.read(8))[0] >> 63:
                    continue
                by_map[perm] += PAGE
                share = collections.Counter()
                i = max(bisect.bisect_right(starts, page) - 1, 0)
                while i < len(syms) and syms[i][0] < page + PAGE:
                    addr, size, name = syms[i]
                    overlap = min(addr + size, page + PAGE) - max(addr, page)
                    if overlap > 0:
                        share[module(name)] += overlap
                    i += 1
                total = sum(share.values())
                if total == 0:
                    by_mod["no symbol: .gopclntab" if perm.startswith("r--") else f"no symbol ({perm})"] += PAGE
                    continue
                for mod, n in share.items():
                    by_mod[mod] += PAGE * n / total
    mib = 1 << 20
    print("resident pages of %s: %s" % (binary, ", ".join(f"{p} {n / mib:.2f} MiB" for p, n in sorted(by_map.items()))))
    for mod, n in by_mod.most_common():
        if n >= mib / 100:
            print(f"{n / mib:7.2f} MiB  {mod}")


if __name__ == "__main__":
    main()
