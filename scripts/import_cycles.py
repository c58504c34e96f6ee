#!/usr/bin/env python3
"""Import circles between sibling modules of a Rust crate (house rule: none inside a module).

For every module directory, its children (a.rs or a/ with a.rs) are nodes; a child uses a
sibling when its files name it through `super::sibling`, `self::sibling` from the parent, or
`crate::<path>::sibling`. Prints each strongly connected group of two or more siblings and
exits 1 when there is one. Tests (`tests.rs`, `tests/`) are left out: they may use anything.

Usage: scripts/import_cycles.py [SRC_DIR ...]   (default: src crates/*/src)
"""
import re, sys, pathlib, glob

def rust_files(p):
    if p.is_file():
        yield p
    d = p.with_suffix("") if p.is_file() else p
    if d.is_dir():
        for f in d.rglob("*.rs"):
            if f.name != "tests.rs" and "tests" not in f.relative_to(d).parts[:-1]:
                yield f

def module_path(root, d):
    rel = d.relative_to(root)
    return [] if str(rel) == "." else list(rel.parts)

def children(d, root):
    out = {}
    for f in d.glob("*.rs"):
        if f.stem in ("mod", "lib", "main", "tests") or (d == root and f.stem == "main"):
            continue
        out[f.stem] = f
    for sub in d.iterdir():
        if sub.is_dir() and sub.name != "tests" and sub.name not in out and (sub / "mod.rs").exists():
            out[sub.name] = sub
    return out

def scc(graph):
    index, low, stack, on, out, i = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    for v in graph:
        if v not in index: visit(v)
    return out

def check(root):
    root = pathlib.Path(root)
    found = []
    for d in [root] + [p for p in root.rglob("*") if p.is_dir()]:
        if "tests" in d.relative_to(root).parts:
            continue
        kids = children(d, root)
        if len(kids) < 2:
            continue
        mp = module_path(root, d)
        graph = {k: set() for k in kids}
        for k, p in kids.items():
            for f in rust_files(p):
                text = re.sub(r"//[^\n]*", "", f.read_text())
                depth = len(f.relative_to(d).parts) - 1  # files below the child need more supers
                if f.stem == "mod":
                    depth -= 1
                for other in kids:
                    if other == k:
                        continue
                    pats = [r"\bcrate::" + "::".join(mp + [other]) + r"\b"]
                    pats.append(r"\b" + "super::" * (depth + 1) + other + r"\b")
                    # `use super::{a, other}` names it too.
                    pats.append(r"\b" + "super::" * (depth + 1) + r"\{[^}]*\b" + other + r"\b")
                    if d == root:
                        pats = [r"\bcrate::" + other + r"\b"]
                    if any(re.search(pt, text) for pt in pats):
                        graph[k].add(other)
        for comp in scc(graph):
            found.append((d, comp))
    return found

roots = sys.argv[1:] or ["src"] + glob.glob("crates/*/src")
bad = []
for r in roots:
    for d, comp in check(r):
        bad.append(f"{d}: {' <-> '.join(comp)}")
print("\n".join(bad) if bad else "no import circles")
sys.exit(1 if bad else 0)
