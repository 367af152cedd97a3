"""Runs a command (`> FILE` at the end redirects its output); prints a Markdown row: its wall time, GB/s of
the N bytes given, and the peak resident memory of the command."""

import resource
import subprocess
import sys
import time

label, nbytes, *cmd = sys.argv[1:]
out = subprocess.DEVNULL
if ">" in cmd:
    at = cmd.index(">")
    out = open(cmd[at + 1], "wb")  # noqa: SIM115 (held for the child's lifetime)
    cmd = cmd[:at]
start = time.perf_counter()
rc = subprocess.run(cmd, stdout=out).returncode
seconds = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"| {label} | {seconds:.3f} s | {int(nbytes) / seconds / 1e9:.2f} GB/s | {rss:.0f} MiB | rc {rc} |", flush=True)
