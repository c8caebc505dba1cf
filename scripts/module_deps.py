#!/usr/bin/env python3
"""Prints which modules of autograd-core each module uses, and the cycles among them.

A module `m` uses `n` when its code names `crate::n`, or an item that the crate root
re-exports from `n` (`crate::{Tensor, ..}`). Comments are ignored. Run from the
repository root: `python3 scripts/module_deps.py`.
"""
import glob
import os
import re
import sys

SRC = os.path.join(os.path.dirname(__file__), "..", "autograd-core", "src")

# Items the crate root re-exports, by the module that defines them.
ROOT = {
    "tensor": "Tensor TensorId StorageRef WeakTensor",
    "error": "Error Result",
    "device": "Device",
    "storage": "Storage",
    "grad_mode": "is_grad_enabled no_grad enable_grad NoGradGuard",
    "graph": "ComputationGraph NodeRef NodeInputRef",
    "op": "Differentiable OpEntry BackwardContext Grads InputSpec grad_if CheckCase CheckFn",
    "backward": "backward grad zero_grad BackwardOptions backward_many grad_many",
    "hooks": "HookHandle",
    "checkpoint": "MAX_CHECKPOINT_INPUTS",
    "registry": "registry OpRegistry",
    "gradcheck": "gradcheck gradgradcheck GradcheckOptions GradcheckReport",
    "accounting": "memory",
}
NAMES = {name: module for module, items in ROOT.items() for name in items.split()}


def deps():
    # A module is a file `m.rs`, or a folder `m/` (its files read as one module).
    files = {}
    for f in glob.glob(os.path.join(SRC, "*.rs")):
        files[os.path.basename(f)[:-3]] = [f]
    for d in glob.glob(os.path.join(SRC, "*", "mod.rs")):
        folder = os.path.dirname(d)
        files[os.path.basename(folder)] = sorted(glob.glob(os.path.join(folder, "*.rs")))
    files.pop("lib")
    modules = sorted(files)
    found = {}
    for m in modules:
        text = "".join(open(f).read() for f in files[m])
        src = re.sub(r"//[^\n]*", "", text)
        used = set()
        for name in re.findall(r"crate::([A-Za-z_]+)", src):
            used.add(name if name in modules else NAMES.get(name))
        for group in re.findall(r"use crate::\{([^}]*)\}", src):
            for name in re.split(r"[,\s]+", group):
                used.add(name if name in modules else NAMES.get(name))
        used.discard(None)
        used.discard(m)
        found[m] = sorted(used)
    return found


def cycles(graph):
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    graph = deps()
    for m, used in graph.items():
        print(f"{m:12} -> {' '.join(used)}")
    print("cycles:", cycles(graph) or "none")
