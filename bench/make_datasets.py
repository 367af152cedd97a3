"""Writes the four data sets of the nvCOMP anchor (shared/anchors/nvcomp_bench.py) as raw files into the
directory argv[1]: text.bin, binary.bin, float32.bin, int32.bin. The data set functions are the anchor's,
unchanged, so the bytes are the same on the same machine. ANCHOR_MB sets the size (default 256).
Needs numpy only. Without PyTorch's libraries (the binary data set's source), binary.bin is skipped.

A fifth, real text nobody here wrote or generated: realtext.bin, the Linux kernel's C sources and headers
(*.c, *.h) in the order Debian's linux-source-6.1 tarball lists them, ANCHOR_MB of them, never repeated. Get the
tarball with `apt-get download linux-source-6.1 && dpkg -x linux-source-6.1_*.deb DIR` and name it in
LINUX_SOURCE (DIR/usr/src/linux-source-6.1.tar.xz); without it, realtext.bin is skipped."""

import glob
import os
import sys
import tarfile

import numpy as np

MB = 1 << 20
SIZE = int(os.environ.get("ANCHOR_MB", "256")) * MB


def text_data():
    files = sorted(glob.glob("/usr/lib/python3*/**/*.py", recursive=True))
    buf = bytearray()
    for f in files:
        with open(f, "rb") as fh:
            buf += fh.read()
        if len(buf) >= SIZE:
            break
    while len(buf) < SIZE:
        buf += buf[: SIZE - len(buf)]
    return np.frombuffer(bytes(buf[:SIZE]), dtype=np.uint8)


def binary_data():
    libs = glob.glob("/opt/torch/.venv/lib/python3*/site-packages/torch/lib/*.so*")
    biggest = max(libs, key=os.path.getsize)
    with open(biggest, "rb") as fh:
        b = fh.read(SIZE)
    if len(b) < SIZE:
        b = (b * (SIZE // len(b) + 1))[:SIZE]
    return np.frombuffer(b, dtype=np.uint8)


def float_field():
    n = SIZE // 4
    side = int(np.sqrt(n))
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side
    f = (np.sin(8 * x) * np.cos(6 * y) * 20 + 280).astype(np.float32)
    f += np.random.default_rng(1).normal(0, 0.01, f.shape).astype(np.float32)
    f = np.round(f, 2).ravel()
    out = np.resize(f, n).astype(np.float32)
    return out.view(np.uint8)


def int_offsets():
    n = SIZE // 4
    rng = np.random.default_rng(2)
    return np.cumsum(rng.integers(0, 50, n), dtype=np.int64).astype(np.int32).view(np.uint8)


def real_text():
    buf = bytearray()
    with tarfile.open(os.environ["LINUX_SOURCE"], "r|xz") as tar:
        for member in tar:
            if member.isfile() and member.name.endswith((".c", ".h")):
                buf += tar.extractfile(member).read()
                if len(buf) >= SIZE:
                    break
    if len(buf) < SIZE:
        sys.exit(f"LINUX_SOURCE has {len(buf)} bytes of C sources, fewer than ANCHOR_MB")
    return np.frombuffer(bytes(buf[:SIZE]), dtype=np.uint8)


DATA = {
    "text.bin": text_data,
    "binary.bin": binary_data,
    "float32.bin": float_field,
    "int32.bin": int_offsets,
    "realtext.bin": real_text,
}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_datasets.py DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, make in DATA.items():
        if name == "binary.bin" and not glob.glob("/opt/torch/.venv/lib/python3*/site-packages/torch/lib/*.so*"):
            print(f"{name}: skipped (no PyTorch libraries under /opt/torch)", file=sys.stderr)
            continue
        if name == "realtext.bin" and not os.environ.get("LINUX_SOURCE"):
            print(f"{name}: skipped (LINUX_SOURCE names no linux-source tarball)", file=sys.stderr)
            continue
        data = make()
        with open(os.path.join(out, name), "wb") as fh:
            fh.write(data.tobytes())
        print(f"{name}: {data.nbytes} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
