#!/usr/bin/env python3
"""Writes the test data of nvCOMP's NVCOMP_NATIVE streams: run on a GPU machine with nvCOMP's Python API
(`nvidia-nvcomp-cu13`), it encodes inputs of several sizes with `nvidia.nvcomp.Codec` for each algorithm, chunk size
and checksum policy, checks that nvCOMP decodes each back, and writes them to OUT_DIR as `NAME.nvcomp` beside the
input (`INPUT.raw`) and `streams.json`, which lists each stream's input and options. It also writes `api.txt`: the
module's members with their docstrings (pybind11's carry the signatures), to compare with ferrocomp's.

usage: scripts/nvcomp_native_streams.py OUT_DIR"""

import inspect
import json
import sys
from pathlib import Path

import cupy as cp
import numpy as np
from nvidia import nvcomp

# Sizes that end a chunk exactly, cut one short, and leave a short last chunk; 0 and 1 at the edges.
SIZES = (0, 1, 1000, 4096, 70000)
CHUNK_SIZES = (4096, 65536)
POLICIES = ("NO_COMPUTE_NO_VERIFY", "COMPUTE_AND_VERIFY")
STANDARD = ("LZ4", "Snappy", "Deflate", "GDeflate", "Zstd")
# nvCOMP's own formats: their streams are refused by ferrocomp, which must say why.
OWN = ("Cascaded", "Bitcomp", "ANS")


def text(size, seed=1):
    """`size` bytes of text-like data (words from a small vocabulary picked by a linear congruential generator)."""
    words = b"the of and to in is that for it as with was on be by this are from at or an which have not".split()
    out, state = bytearray(), seed
    while len(out) < size:
        state = (state * 1103515245 + 12345) % 2**31
        out += words[(state >> 16) % len(words)] + b" "
    return bytes(out[:size])


def encode(algorithm, data, dtype=np.uint8, **options):
    """nvCOMP's stream of `data` (as an array of `dtype`) and what nvCOMP decodes it to."""
    codec = nvcomp.Codec(algorithm=algorithm, **options)
    encoded = codec.encode(nvcomp.as_array(cp.asarray(np.frombuffer(data, dtype=dtype))))
    stream = cp.asnumpy(cp.asarray(encoded).view(cp.uint8)).tobytes()
    decoded = nvcomp.Codec(algorithm=algorithm, **options).decode(encoded)
    back = cp.asnumpy(cp.asarray(decoded).view(cp.uint8)).tobytes()
    return stream, back


def api():
    """The module's public members and their docstrings, class by class."""
    lines = [f"nvcomp {nvcomp.__version__} (CUDA {nvcomp.__cuda_version__})"]
    for name, member in sorted(vars(nvcomp).items()):
        if name.startswith("_"):
            continue
        lines.append(f"\n## {name}: {type(member).__name__}\n{inspect.getdoc(member) or ''}")
        if inspect.isclass(member):
            for attr, value in sorted(vars(member).items()):
                if not attr.startswith("_") or attr in ("__init__", "__call__"):
                    lines.append(f"### {name}.{attr}: {type(value).__name__}\n{inspect.getdoc(value) or ''}")
    return "\n".join(lines) + "\n"


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    (out / "api.txt").write_text(api())
    streams, failures = [], []
    for size in SIZES:
        data = text(size)
        (out / f"text-{size}.raw").write_bytes(data)
        for algorithm in STANDARD + OWN:
            for chunk_size in CHUNK_SIZES:
                for policy in POLICIES:
                    name = f"{algorithm.lower()}-{size}-{chunk_size}-{policy.lower()}"
                    options = {
                        "uncomp_chunk_size": chunk_size,
                        "checksum_policy": getattr(nvcomp.ChecksumPolicy, policy),
                    }
                    try:
                        stream, back = encode(algorithm, data, **options)
                    except Exception as error:  # noqa: BLE001 - what nvCOMP refuses is recorded, not fatal
                        failures.append(f"{name}: {type(error).__name__}: {error}")
                        continue
                    if back != data:
                        failures.append(f"{name}: nvCOMP decoded {len(back)} bytes unlike its input")
                    (out / f"{name}.nvcomp").write_bytes(stream)
                    streams.append(
                        {
                            "stream": f"{name}.nvcomp",
                            "input": f"text-{size}.raw",
                            "algorithm": algorithm,
                            "uncomp_chunk_size": chunk_size,
                            "checksum_policy": policy,
                            "round_trip": back == data,
                        }
                    )
    # The same bytes as 32-bit values: does the header keep the array's type?
    data = text(70000)
    for algorithm in ("LZ4", "Zstd"):
        name = f"{algorithm.lower()}-70000-65536-uint32"
        stream, back = encode(algorithm, data, dtype=np.uint32)
        (out / f"{name}.nvcomp").write_bytes(stream)
        streams.append(
            {
                "stream": f"{name}.nvcomp",
                "input": "text-70000.raw",
                "algorithm": algorithm,
                "dtype": "uint32",
                "uncomp_chunk_size": 65536,
                "checksum_policy": "NO_COMPUTE_NO_VERIFY",
                "round_trip": back == data,
            }
        )
    meta = {"nvcomp": nvcomp.__version__, "streams": streams, "failures": failures}
    (out / "streams.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{len(streams)} streams, {len(failures)} failures", *failures, sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
