#!/usr/bin/env python3
"""What ptxas makes of each kernel, without a GPU: the kernels' PTX as the host loads it (the shipped file, or a
variant given with --ptx, with the launch bounds written in) compiled for an arch (default sm_90, the H100's and
H200's) and disassembled. Per kernel: registers, stack frame, spills, instructions, local loads and stores, and
those at a computed address (an array indexed at run time, which ptxas keeps on the stack: a round trip to memory
for every element); with --loops, the loops of at most N instructions (default 300: the inner ones) holding local
accesses. A loop that stores what it just loaded to the stack waits for the load there, whatever the code meant
to overlap.

usage: scripts/sass_audit.py [KERNEL ...] [--ptx FILE] [--arch sm_90] [--loops [N]]

Needs ptxas and nvdisasm: $PTXAS and $NVDISASM, else on PATH, else installed once from PyPI's wheels
(nvidia-cuda-nvcc-cu12, nvidia-cuda-nvdisasm) into ~/.cache/ferrocomp/cuda-tools."""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = Path.home() / ".cache" / "ferrocomp" / "cuda-tools"
WHEELS = {"ptxas": "nvidia-cuda-nvcc-cu12", "nvdisasm": "nvidia-cuda-nvdisasm"}

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
LOCAL = re.compile(r"\b(LDL|STL)(\.\S+)?\s")
# A local access at the stack pointer plus a constant; any other address register is computed.
AT_STACK = re.compile(r"\[R1(\+0x[0-9a-f]+)?\]")
BRANCH_TARGET = re.compile(r"BRA.*`\((\.L_x_\d+)\)")


def tool(name):
    """The path of `name`: from the environment, PATH or the cached wheel (installed on first use)."""
    found = os.environ.get(name.upper()) or shutil.which(name)
    if found:
        return found
    target = TOOLS / WHEELS[name]
    cached = sorted(target.glob(f"nvidia/**/bin/{name}"))
    if not cached:
        print(f"sass_audit: installing {WHEELS[name]} into {target} for {name}", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", str(target), WHEELS[name]], check=True
        )
        cached = sorted(target.glob(f"nvidia/**/bin/{name}"))
    if not cached:
        sys.exit(f"sass_audit: no {name} in {WHEELS[name]}; set ${name.upper()}")
    return str(cached[-1])


def run(command, **options):
    """`command`'s output; on failure, what it said, and exit."""
    done = subprocess.run(command, capture_output=True, **options)
    if done.returncode != 0:
        said = done.stderr if isinstance(done.stderr, str) else done.stderr.decode(errors="replace")
        sys.exit(f"sass_audit: {' '.join(command)} failed:\n{said}")
    return done


def bounded_ptx(variant):
    """The PTX the host would load, the launch bounds written in by the tests crate's example `bounded-ptx`."""
    command = ["cargo", "run", "-q", "-p", "ferrocomp-tests", "--example", "bounded-ptx"]
    return run(command + ([variant] if variant else []), cwd=ROOT).stdout


def functions(ptxas_log):
    """Per function ptxas reported on: its stack frame and spills (bytes), and registers."""
    found, name = {}, None
    for line in ptxas_log.splitlines():
        if m := re.search(r"Function properties for (\S+)", line):
            name = m.group(1)
        elif name and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill", line)):
            found[name] = {"frame": int(m[1]), "spill stores": int(m[2]), "spill loads": int(m[3])}
        elif name and (m := re.search(r"Used (\d+) registers", line)):
            found[name]["registers"] = int(m[1])
    return found


def kernels(sass):
    """Each kernel's section of the disassembly (its own code and the functions it calls, which
    ptxas reports apart), as lines, and the names of those functions."""
    sections, name = {}, None
    for line in sass.splitlines():
        if m := re.match(r"//-+ \.text\.(\S+)", line):
            name = m.group(1)
            sections[name] = ([], set())
        elif name:
            sections[name][0].append(line)
            if m := re.match(rf"^\${re.escape(name)}\$(\S+):", line):
                sections[name][1].add(m.group(1))
    return sections


def parse(lines):
    """The instructions (address, text) of a section, and the address each label stands at."""
    instructions, labels, pending = [], {}, []
    for line in lines:
        if m := LABEL.match(line):
            pending.append(m.group(1))
        elif m := INSTRUCTION.search(line):
            address = int(m.group(1), 16)
            instructions.append((address, m.group(2)))
            labels.update((label, address) for label in pending)
            pending = []
    return instructions, labels


def is_computed(text):
    """Whether the instruction `text` is a local access at a computed address."""
    return bool(LOCAL.search(text)) and not AT_STACK.search(text)


def loops(instructions, labels):
    """Each loop (a branch back to an earlier label) holding local accesses: (first, last) addresses,
    instructions, local accesses, those at a computed address. Innermost first."""
    index = {address: i for i, (address, _) in enumerate(instructions)}
    found = set()
    for i, (address, text) in enumerate(instructions):
        m = BRANCH_TARGET.search(text)
        if m and m.group(1) in labels and labels[m.group(1)] <= address:
            body = [t for _, t in instructions[index[labels[m.group(1)]] : i + 1]]
            local = sum(1 for t in body if LOCAL.search(t))
            if local:
                computed = sum(1 for t in body if is_computed(t))
                found.add((labels[m.group(1)], address, len(body), local, computed))
    return sorted(found, key=lambda loop: (loop[2], loop[0]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernels", nargs="*", help="kernel names (default: every kernel)")
    parser.add_argument("--ptx", help="a variant PTX file instead of the shipped kernels-gpu/kernels.ptx")
    parser.add_argument("--arch", default="sm_90")
    loops_help = "list the loops of at most N instructions with local accesses"
    parser.add_argument("--loops", nargs="?", type=int, const=300, help=loops_help)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        ptx, cubin = Path(work, "kernels.ptx"), Path(work, "kernels.cubin")
        ptx.write_bytes(bounded_ptx(args.ptx and str(Path(args.ptx).resolve())))
        compiled = run([tool("ptxas"), f"-arch={args.arch}", "-v", str(ptx), "-o", str(cubin)], text=True)
        sass = run([tool("nvdisasm"), "-c", str(cubin)], text=True)
    properties = functions(compiled.stderr)
    columns = "kernel | registers | stack | spill stores / loads | instructions | local loads / stores"
    print(f"| {columns} | at a computed address |")
    print("|---|---|---|---|---|---|---|")
    for name, (lines, called) in kernels(sass.stdout).items():
        if args.kernels and name not in args.kernels:
            continue
        instructions, labels = parse(lines)
        own = dict(properties.get(name, {}))
        for function in called:
            for key in ("spill stores", "spill loads"):
                own[key] = own.get(key, 0) + properties.get(function, {}).get(key, 0)
        loads = sum(1 for _, t in instructions if re.search(r"\bLDL", t))
        stores = sum(1 for _, t in instructions if re.search(r"\bSTL", t))
        computed = sum(1 for _, t in instructions if is_computed(t))
        spills = f"{own.get('spill stores', '?')} / {own.get('spill loads', '?')}"
        print(
            f"| {name} | {own.get('registers', '?')} | {own.get('frame', '?')} | {spills} | {len(instructions)} "
            f"| {loads} / {stores} | {computed} |"
        )
        if args.loops:
            for first, last, size, local, at_computed in loops(instructions, labels):
                if size <= args.loops:
                    print(f"|   loop {first:#x}-{last:#x} | | | | {size} | {local} | {at_computed} |")


if __name__ == "__main__":
    main()
