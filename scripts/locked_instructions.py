#!/usr/bin/env python3
"""Counts the locked (atomic read-modify-write) instructions a run executes, by
function, from a callgrind profile with instruction-level costs.

A locked instruction (`lock`-prefixed, or `xchg` with memory) costs a few
nanoseconds where an ordinary one costs a fraction of one: W1 (5000 two-op steps on
one-element tensors) spent about 40% of its time on them while they were 1% of
its instructions. Instruction counts alone do not show that; this does.

    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=cg.out \\
        target/release/examples/workloads W1       # (WORKLOADS_REPS=3)
    scripts/locked_instructions.py target/release/examples/workloads cg.out 35000

The last argument divides the counts (W1 with WORKLOADS_REPS=3 runs 7 steps of
5000 iterations: 35000). Needs `objdump` (binutils).
"""

import collections
import re
import subprocess
import sys


def locked_addresses(binary):
    """Addresses of the binary's locked instructions."""
    dump = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", binary],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    pattern = re.compile(r"^\s+([0-9a-f]+):\s+(lock |xchg\s+%\w+,(0x|\(|-))")
    return {int(m.group(1), 16) for m in map(pattern.match, dump.splitlines()) if m}


def executed(profile, locks):
    """Executions of the instructions at `locks`, by function, from a callgrind
    profile written with `--dump-instr=yes`."""
    names = {}
    by_function = collections.Counter()
    positions = ["line"]
    last = []
    function = None
    skip = False
    name_line = re.compile(r"c?fn=\((\d+)\)(?: (.*))?")
    with open(profile) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("positions:"):
                positions = line.split()[1:]
                last = [0] * len(positions)
                continue
            if line.startswith(("fn=", "cfn=")):
                m = name_line.match(line)
                if m:
                    if m.group(2):
                        names[m.group(1)] = m.group(2)
                    if line.startswith("fn="):
                        function = names.get(m.group(1))
                continue
            if line.startswith("calls="):
                skip = True  # the next cost line is the call's, not this function's
                continue
            if not line or line[0] not in "0123456789+-*":
                continue
            parts = line.split()
            for i, p in enumerate(parts[: len(positions)]):
                if p == "*":
                    continue
                if p[0] in "+-":
                    last[i] += int(p, 0)
                else:
                    last[i] = int(p, 0)
            if skip:
                skip = False
                continue
            if "instr" in positions and last[positions.index("instr")] in locks:
                cost = int(parts[len(positions)]) if len(parts) > len(positions) else 0
                by_function[function] += cost
    return by_function


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    binary, profile = sys.argv[1], sys.argv[2]
    per = float(sys.argv[3]) if len(sys.argv) == 4 else 1.0
    counts = executed(profile, locked_addresses(binary))
    total = sum(counts.values())
    print(f"locked instructions: {total} ({total / per:.2f} per unit)")
    for function, count in counts.most_common(25):
        if count / per >= 0.01:
            print(f"{count / per:10.2f}  {function}")


if __name__ == "__main__":
    main()
