#!/usr/bin/env python3
"""Module graph of crates/rtick: edges between top-level modules from `crate::X`
paths (in `use` lists too), then its strongly connected components (cycles)."""
import os, re, sys
args = [a for a in sys.argv[1:] if not a.startswith("-")]
root = args[0] if args else "crates/rtick/src"
mods = set()
for n in os.listdir(root):
    if n.endswith(".rs") and n != "lib.rs":
        mods.add(n[:-3])
    elif os.path.isdir(os.path.join(root, n)):
        mods.add(n)
edges = {m: {} for m in mods}
def strip_tests(text):
    # drop `#[cfg(test)] mod x { ... }` blocks: test code may use anything
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text):
        if m.start() < i: continue
        out.append(text[i:m.start()]); depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0); j += 1
        i = j
    out.append(text[i:]); return "".join(out)
for dp, _, fs in os.walk(root):
    for f in fs:
        if not f.endswith(".rs"): continue
        p = os.path.join(dp, f); rel = os.path.relpath(p, root)
        if rel == "lib.rs": continue
        if "/tests" in "/" + rel.replace(".rs", "") or rel.endswith("tests.rs"): continue
        src = mods & {rel.split(os.sep)[0].removesuffix(".rs")}
        if not src: continue
        src = src.pop(); text = strip_tests(open(p).read())
        text = re.sub(r"//[^\n]*", "", text)
        targets = set(re.findall(r"crate::(\w+)", text))
        for blk in re.findall(r"use crate::\{([^;]*)\}", text, re.S):
            targets |= set(re.findall(r"(?:^|[,{]\s*)(\w+)", blk))
        for t in targets:
            if t in mods and t != src:
                edges[src].setdefault(t, set()).add(rel)
# Tarjan
idx, low, st, on, sccs, c = {}, {}, [], set(), [], [0]
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges[v]:
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        sccs.append(comp)
sys.setrecursionlimit(10000)
for v in sorted(mods):
    if v not in idx: sc(v)
cyc = [sorted(s) for s in sccs if len(s) > 1]
if "-v" in sys.argv:
    for m in sorted(mods):
        print(f"{m} -> {', '.join(sorted(edges[m]))}")
for s in cyc:
    print("cycle:", " <-> ".join(s))
    for a in s:
        for b in s:
            if b in edges[a]:
                print(f"  {a} -> {b}: {', '.join(sorted(edges[a][b]))}")
if not cyc: print("no cycles among", len(mods), "top-level modules")
sys.exit(1 if cyc else 0)
