"""ferrocomp's Python API beside nvCOMP's (`nvidia.nvcomp`) on the same CuPy buffers, as a markdown report.

    python3 bench/python_bench.py --out results.md            # on the GPU machine (bench/run-python-device.sh)
    python3 bench/python_bench.py --cpu --mb 2 --out smoke.md  # anywhere: ferrocomp's CPU path, no nvCOMP

Sections: LZ4, Snappy, Deflate and GDeflate on bench/make_datasets.py's data sets (64 KiB chunks) as RAW streams
in one batched call (lists in, `out=` slices of one buffer) and as one NVCOMP_NATIVE buffer, GB/s of uncompressed
bytes (median and best of --reps, CUDA events on the codecs' stream) and ratio; the Python cost of one batched
decode call of 1,000 small chunks (wall time of the call alone, no synchronisation); Blosc(lz4, shuffle) decode of
float32 data on the GPU beside numcodecs on the CPU, on the same bytes. Every round trip is checked byte for byte.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

CODECS = ("LZ4", "Snappy", "Deflate", "GDeflate")
CHUNK = 64 * 1024
OVERHEAD_CHUNKS = 1000
OVERHEAD_CHUNK_BYTES = 4096
BLOSC_CHUNK = 1 << 20
MB = 1 << 20


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="markdown report to write")
    parser.add_argument("--mb", type=int, default=256, help="MiB per data set (default 256)")
    parser.add_argument(
        "--reps",
        type=int,
        default=5,
        help="timed repetitions after one warm-up (default 5)",
    )
    parser.add_argument(
        "--codecs",
        default=",".join(CODECS),
        help="comma-separated subset of " + ",".join(CODECS),
    )
    parser.add_argument(
        "--overhead-calls",
        type=int,
        default=200,
        help="calls timed for the call overhead",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="ferrocomp's CPU path on numpy, without nvCOMP",
    )
    return parser.parse_args()


def load_datasets(mb: int) -> dict[str, np.ndarray]:
    """bench/make_datasets.py's data sets at `mb` MiB each, as uint8 host arrays (binary only where PyTorch is)."""
    os.environ["ANCHOR_MB"] = str(mb)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    make_datasets = importlib.import_module("make_datasets")
    names = {"text.bin": "text(py-src)", "binary.bin": "binary(libtorch)"}
    names |= {"float32.bin": "float32-field", "int32.bin": "int32-offsets"}
    datasets = {}
    # The anchor's four sets (not realtext.bin, which needs a Linux source tarball).
    for file_name, name in names.items():
        try:
            datasets[name] = np.ascontiguousarray(make_datasets.DATA[file_name]())
        except ValueError as error:  # binary: no PyTorch libraries on this machine
            print(f"{name}: skipped ({error})", file=sys.stderr)
    return datasets


class Clock:
    """Times a callable: CUDA events on the codecs' stream on the GPU, the wall clock on the CPU."""

    def __init__(self, cupy: Any | None, stream: Any | None) -> None:
        self.cupy, self.stream = cupy, stream

    def seconds(self, function: Callable[[], Any]) -> float:
        """Seconds `function` takes, its GPU work included."""
        if self.cupy is None:
            start = time.perf_counter()
            function()
            return time.perf_counter() - start
        begin, end = self.cupy.cuda.Event(), self.cupy.cuda.Event()
        begin.record(self.stream)
        function()
        end.record(self.stream)
        end.synchronize()
        return self.cupy.cuda.get_elapsed_time(begin, end) / 1e3

    def sync(self) -> None:
        """Wait for the stream's work."""
        if self.stream is not None:
            self.stream.synchronize()


def measure(clock: Clock, function: Callable[[], Any], reps: int) -> tuple[float, float]:
    """(median, best) seconds of `function` over `reps` runs after one warm-up run."""
    function()
    clock.sync()
    times = [clock.seconds(function) for _ in range(reps)]
    return statistics.median(times), min(times)


class Library:
    """One library's Python API, as the benchmark drives it: codecs, batches, carved outputs, sizes."""

    def __init__(self, name: str, module: Any, stream: Any | None) -> None:
        self.name, self.module, self.stream = name, module, stream

    def stream_options(self) -> dict[str, Any]:
        """The `cuda_stream` option that puts the library's work on the benchmark's stream."""
        return {} if self.stream is None else {"cuda_stream": self.stream.ptr}

    def codec(self, algorithm: str, bitstream: str) -> Any:
        """A codec for `algorithm` with the named bitstream kind and 64 KiB chunks."""
        kind = getattr(self.module.BitstreamKind, bitstream)
        return self.module.Codec(
            algorithm=algorithm,
            bitstream_kind=kind,
            uncomp_chunk_size=CHUNK,
            **self.stream_options(),
        )

    def batch(self, arrays: Sequence[Any]) -> Any:
        """The input of a batched call: a list (ferrocomp), a BatchArray (nvCOMP's `as_arrays`)."""
        return list(arrays)

    def carve(self, buffer: Any, sizes: Sequence[int]) -> Any:
        """The `out=` of a batched decode, consecutive pieces of one buffer: `as_arrays(buffer, offsets, sizes)`."""
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
        return self.module.as_arrays(buffer, offsets, list(sizes), **self.stream_options())

    def sizes(self, encoded: Any) -> list[int]:
        """Bytes of each compressed chunk of a batch."""
        return [array.buffer_size for array in encoded]

    def decode_queued(self, codec: Any, sources: Any, targets: Any) -> Callable[[], Any]:
        """Queue a batched decode into `targets` without waiting for it; returns what waits for it."""
        pending = codec.decode(sources, out=targets, sync=False)
        return pending.wait


class Nvcomp(Library):
    """nvCOMP 6's batches are BatchArrays: `as_arrays(list)`, or one buffer carved by offsets and sizes."""

    def batch(self, arrays: Sequence[Any]) -> Any:
        """`nvcomp.as_arrays` of the arrays."""
        return self.module.as_arrays(list(arrays), **self.stream_options())

    def sizes(self, encoded: Any) -> list[int]:
        """The BatchArray's `buffer_sizes`."""
        return list(encoded.buffer_sizes)

    def decode_queued(self, codec: Any, sources: Any, targets: Any) -> Callable[[], Any]:
        """nvCOMP's decode queues its work on the stream and returns; waiting is the stream's synchronize."""
        codec.decode(sources, out=targets)
        return self.stream.synchronize


def split(buffer: Any, sizes: Sequence[int]) -> list[Any]:
    """Consecutive slices of `buffer` with the given sizes."""
    slices, start = [], 0
    for size in sizes:
        slices.append(buffer[start : start + size])
        start += size
    return slices


def gbps(nbytes: int, seconds: float) -> float:
    """GB/s (1e9 bytes) of `nbytes` in `seconds`."""
    return nbytes / seconds / 1e9


def rate(nbytes: int, timing: tuple[float, float]) -> str:
    """'median (best)' GB/s, to three significant digits."""
    median, best = timing
    return f"{gbps(nbytes, median):.3g} ({gbps(nbytes, best):.3g})"


def cell(function: Callable[[], str]) -> str:
    """`function()`, or the error it raised, shortened, so one failure leaves the rest of the table."""
    try:
        return function()
    except Exception as error:
        return f"error: {type(error).__name__}: {str(error)[:80]}".replace("|", "/")


def throughput(
    lib: Library,
    clock: Clock,
    xp: Any,
    data: Any,
    algorithm: str,
    bitstream: str,
    reps: int,
) -> dict:
    """Ratio and compress/decompress timings of one library on one data set, round trip checked."""
    n = int(data.size)
    codec = lib.codec(algorithm, "RAW" if bitstream.startswith("RAW") else bitstream)
    out = xp.empty(n, dtype=xp.uint8)
    if bitstream.startswith("RAW"):
        chunks = split(data, [min(CHUNK, n - start) for start in range(0, n, CHUNK)])
        source = lib.batch(chunks)
        encoded = codec.encode(source)
        sizes = lib.sizes(encoded)
        compressed = sum(sizes)
        targets = lib.carve(out, [int(c.size) for c in chunks])
        compress = measure(clock, lambda: codec.encode(source), reps)
        if bitstream == "RAW":
            decompress = measure(clock, lambda: codec.decode(encoded, out=targets), reps)
        else:  # the chunks packed in one buffer, described by offsets
            packed = xp.concatenate([xp.asarray(encoded[i]).view(xp.uint8).reshape(-1) for i in range(len(chunks))])
            offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.uint64)
            if isinstance(lib, Nvcomp):
                sources = lib.module.as_arrays(packed, offsets[:-1].tolist(), list(sizes), **lib.stream_options())
                decompress = measure(clock, lambda: codec.decode(sources, out=targets), reps)
            else:
                out_offsets = np.concatenate([[0], np.cumsum([int(c.size) for c in chunks])]).astype(np.uint64)
                decompress = measure(clock, lambda: codec.decode_packed(packed, offsets, out, out_offsets), reps)
    else:
        source = lib.module.as_array(data, **lib.stream_options())
        encoded = codec.encode(source)
        compressed = encoded.buffer_size
        compress = measure(clock, lambda: codec.encode(source), reps)
        decompress = measure(clock, lambda: codec.decode(encoded, out=out), reps)
    clock.sync()
    return {
        "ratio": n / compressed,
        "compress": compress,
        "decompress": decompress,
        "ok": bool((out == data).all()),
    }


def throughput_table(
    libs: list[Library],
    clock: Clock,
    xp: Any,
    datasets: dict,
    codecs: list[str],
    reps: int,
) -> str:
    """The markdown table of every data set, codec and bitstream, libraries side by side."""
    names = [lib.name for lib in libs]
    head = ["dataset", "codec", "bitstream", "ratio " + " / ".join(names)]
    for verb in ("compress", "decompress"):
        head += [f"{verb} GB/s {name}" for name in names]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for dataset, host in datasets.items():
        data = xp.asarray(host)
        for algorithm in codecs:
            for bitstream in ("RAW", "RAW packed", "NVCOMP_NATIVE"):
                results = {}
                for lib in libs:
                    try:
                        results[lib.name] = throughput(lib, clock, xp, data, algorithm, bitstream, reps)
                    except Exception as error:
                        results[lib.name] = error
                row = [
                    dataset,
                    algorithm,
                    "RAW batched" if bitstream == "RAW" else bitstream,
                ]
                row.append(" / ".join(cell(lambda r=results[name]: describe_ratio(r)) for name in names))
                for verb in ("compress", "decompress"):
                    row += [cell(lambda r=results[name], v=verb, n=data.size: describe_rate(r, v, n)) for name in names]
                rows.append("| " + " | ".join(row) + " |")
                print(rows[-1], flush=True)
    return "\n".join(rows)


def describe_ratio(result: Any) -> str:
    """A result's ratio, MISMATCH where its round trip failed; re-raises a stored error."""
    if isinstance(result, Exception):
        raise result
    return f"{result['ratio']:.3f}" + ("" if result["ok"] else " MISMATCH")


def describe_rate(result: Any, verb: str, nbytes: int) -> str:
    """A result's GB/s for `verb`; re-raises a stored error."""
    if isinstance(result, Exception):
        raise result
    return rate(int(nbytes), result[verb])


def queued_call_time(clock: Clock, queue: Callable[[], Callable[[], Any]], calls: int, out: Any, data: Any) -> str:
    """Median wall time of `queue()` (which queues a decode of OVERHEAD_CHUNKS chunks into `out` and returns what
    waits for it), the work waited for outside the timing; the round trip checked."""
    times = []
    for _ in range(calls):
        clock.sync()
        start = time.perf_counter()
        wait = queue()
        times.append(time.perf_counter() - start)
        wait()
    clock.sync()
    assert bool((out == data).all()), "round trip failed"
    median = statistics.median(times)
    return f"{median * 1e6:.0f} µs per call, {median * 1e9 / OVERHEAD_CHUNKS:.0f} ns per chunk"


def call_overhead(lib: Library, clock: Clock, xp: Any, text: np.ndarray, calls: int, batch: Callable) -> str:
    """Median wall time of one `decode(srcs, out=...)` call of OVERHEAD_CHUNKS LZ4 chunks, the call alone: the work
    is queued without waiting for it (ferrocomp's `sync=False`, nvCOMP's asynchronous decode), then waited for
    outside the timing. On the CPU the call does the decoding itself, so this is not overhead there."""
    data = xp.asarray(text[: OVERHEAD_CHUNKS * OVERHEAD_CHUNK_BYTES])
    chunks = split(data, [OVERHEAD_CHUNK_BYTES] * OVERHEAD_CHUNKS)
    codec = lib.codec("LZ4", "RAW")
    encoded = codec.encode(lib.batch(chunks))
    out = xp.empty(data.size, dtype=xp.uint8)
    targets = lib.carve(out, [OVERHEAD_CHUNK_BYTES] * OVERHEAD_CHUNKS)
    sources = batch(encoded)
    return queued_call_time(clock, lambda: lib.decode_queued(codec, sources, targets), calls, out, data)


def packed_overhead(lib: Library, clock: Clock, xp: Any, text: np.ndarray, calls: int) -> str:
    """As `call_overhead`, with the compressed chunks packed in one buffer and decoded into one buffer, described by
    offsets: ferrocomp's `decode_packed` (no Python object per chunk), nvCOMP's `as_arrays(buffer, offsets, sizes)`
    built before the timing."""
    data = xp.asarray(text[: OVERHEAD_CHUNKS * OVERHEAD_CHUNK_BYTES])
    codec = lib.codec("LZ4", "RAW")
    encoded = codec.encode(lib.batch(split(data, [OVERHEAD_CHUNK_BYTES] * OVERHEAD_CHUNKS)))
    sizes = lib.sizes(encoded)
    src = xp.concatenate([xp.asarray(encoded[i]).view(xp.uint8).reshape(-1) for i in range(OVERHEAD_CHUNKS)])
    src_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.uint64)
    out = xp.empty(data.size, dtype=xp.uint8)
    out_offsets = np.arange(OVERHEAD_CHUNKS + 1, dtype=np.uint64) * OVERHEAD_CHUNK_BYTES
    if isinstance(lib, Nvcomp):
        sources = lib.module.as_arrays(src, src_offsets[:-1].tolist(), list(sizes), **lib.stream_options())
        targets = lib.carve(out, [OVERHEAD_CHUNK_BYTES] * OVERHEAD_CHUNKS)

        def queue() -> Callable[[], Any]:
            return lib.decode_queued(codec, sources, targets)
    else:

        def queue() -> Callable[[], Any]:
            return codec.decode_packed(src, src_offsets, out, out_offsets, sync=False).wait

    return queued_call_time(clock, queue, calls, out, data)


def overhead_table(libs: list[Library], clock: Clock, xp: Any, text: np.ndarray, calls: int) -> str:
    """The markdown table of the call overhead, per library and input form."""
    rows = [
        f"| library | srcs passed as | median wall time of one decode call of {OVERHEAD_CHUNKS} chunks (queued) |",
        "|---|---|---|",
    ]
    for lib in libs:
        forms = {
            "what encode returned": lambda encoded: encoded,
            "BatchArray from as_arrays(list)": lambda encoded, lib=lib: lib.module.as_arrays(
                [encoded[i] for i in range(len(encoded))]
            ),
        }
        if not isinstance(lib, Nvcomp):
            forms["list"] = list
        for form, batch in forms.items():
            result = cell(lambda lib=lib, batch=batch: call_overhead(lib, clock, xp, text, calls, batch))
            rows.append(f"| {lib.name} | {form} | {result} |")
            print(rows[-1], flush=True)
        form = "as_arrays(buffer, offsets, sizes)" if isinstance(lib, Nvcomp) else "decode_packed(buffer, offsets)"
        result = cell(lambda lib=lib: packed_overhead(lib, clock, xp, text, calls))
        rows.append(f"| {lib.name} | one buffer: {form} | {result} |")
        print(rows[-1], flush=True)
    return "\n".join(rows)


def blosc_chunks(ferrocomp: Library, pieces: list[np.ndarray]) -> tuple[list[np.ndarray], str]:
    """Blosc(lz4, clevel 5, shuffle) chunks of the float32 pieces, and who wrote them: numcodecs where it is
    installed, else ferrocomp's own Blosc encoder (LZ4 blocks, byte shuffle, type size 4)."""
    try:
        import numcodecs
    except ImportError:
        codec = ferrocomp.module.Codec(
            algorithm="Blosc",
            bitstream_kind=ferrocomp.module.BitstreamKind.RAW,
            typesize=4,
            shuffle=1,
            device_id="cpu",
        )
        encoded = codec.encode([piece.view(np.uint8) for piece in pieces])
        return [np.array(array, dtype=np.uint8) for array in encoded], "ferrocomp (numcodecs is not installed)"
    codec = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    return [np.frombuffer(codec.encode(piece), np.uint8) for piece in pieces], "numcodecs"


def numcodecs_rows(chunks: list[np.ndarray], sizes: list[int], reps: int) -> list[str]:
    """numcodecs' Blosc decode of the chunks on the CPU, one thread and all cores; a note where it is missing."""
    try:
        import numcodecs.blosc
    except ImportError:
        return ["| numcodecs CPU | skipped: numcodecs is not installed |"]
    out = np.empty(sum(sizes), np.uint8)
    targets = split(out, sizes)
    cpu = Clock(None, None)
    rows = []
    for threads in sorted({1, os.cpu_count() or 1}):
        numcodecs.blosc.set_nthreads(threads)
        numcodecs.blosc.use_threads = threads > 1
        timing = measure(
            cpu,
            lambda: [numcodecs.blosc.decompress(c, t) for c, t in zip(chunks, targets, strict=True)],
            reps,
        )
        rows.append(f"| numcodecs CPU, {threads} thread{'s' * (threads > 1)} | {rate(out.size, timing)} |")
    return rows


def blosc_table(ferrocomp: Library, clock: Clock, xp: Any, floats: np.ndarray, reps: int) -> str:
    """Blosc(lz4, shuffle, typesize 4) chunks of float32 data: ferrocomp's decode beside numcodecs' on the CPU."""
    values = floats.view(np.float32)
    pieces = [values[i : i + BLOSC_CHUNK // 4] for i in range(0, values.size, BLOSC_CHUNK // 4)]
    chunks, writer = blosc_chunks(ferrocomp, pieces)
    sizes = [piece.nbytes for piece in pieces]
    n, compressed = int(values.nbytes), sum(c.size for c in chunks)
    rows = [
        f"Blosc(lz4, shuffle) of float32-field in {BLOSC_CHUNK // MB} MiB chunks written by {writer}: "
        f"ratio {n / compressed:.3f}",
        "",
        "| decoder | GB/s median (best) |",
        "|---|---|",
    ]

    def ours() -> str:
        device_chunks = split(xp.asarray(np.concatenate(chunks)), [c.size for c in chunks])
        blosc = ferrocomp.module.Codec(
            algorithm="Blosc",
            bitstream_kind=ferrocomp.module.BitstreamKind.RAW,
            **ferrocomp.stream_options(),
        )
        out = xp.empty(n, dtype=xp.uint8)
        targets = ferrocomp.carve(out, sizes)
        timing = measure(clock, lambda: blosc.decode(device_chunks, out=targets), reps)
        clock.sync()
        ok = bool((out == xp.asarray(values.view(np.uint8))).all())
        return rate(n, timing) + ("" if ok else " MISMATCH")

    rows.append(f"| ferrocomp {'CPU' if clock.cupy is None else 'GPU'} | {cell(ours)} |")
    rows += numcodecs_rows(chunks, sizes, reps)
    for row in rows[4:]:
        print(row, flush=True)
    return "\n".join(rows)


def gpu_libraries(ferrocomp: Any, notes: list[str]) -> tuple[Any, Any, list[Library]]:
    """CuPy, the benchmark's stream, and the libraries to compare on it (nvCOMP where it is installed)."""
    try:
        import cupy
    except ImportError:
        sys.exit("python_bench: CuPy is not installed; the GPU run needs it (or run with --cpu)")
    stream = cupy.cuda.Stream(non_blocking=True)
    stream.use()
    libs = [Library("ferrocomp", ferrocomp, stream)]
    try:
        from nvidia import nvcomp
    except ImportError as error:
        notes.append(f"nvCOMP not measured: nvidia-nvcomp-cu13 is not installed ({error}).")
        print(f"python_bench: {notes[-1]}", file=sys.stderr)
    else:
        libs.append(Nvcomp("nvCOMP", nvcomp, stream))
    return cupy, stream, libs


def main() -> None:
    """Run every section and write the report."""
    args = parse_args()
    import ferrocomp

    notes: list[str] = []
    if args.cpu:
        cupy, stream, xp, device = None, None, np, "CPU (ferrocomp's CPU path)"
        libs: list[Library] = [Library("ferrocomp", ferrocomp, None)]
    else:
        cupy, stream, libs = gpu_libraries(ferrocomp, notes)
        xp = cupy
        device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    datasets = load_datasets(args.mb)
    clock = Clock(cupy, stream)
    versions = ", ".join(f"{lib.name} {getattr(lib.module, '__version__', '?')}" for lib in libs)
    codecs = [c for c in args.codecs.split(",") if c]
    sections = [
        f"# Python API benchmark on {device}",
        "",
        f"{versions}; {args.mb} MiB per data set, {CHUNK // 1024} KiB chunks, median (best) of {args.reps} "
        "after a warm-up, GB/s of uncompressed bytes. RAW batched: one call on the list of chunks, decoding into "
        "`out=` pieces of one buffer (`as_arrays(buffer, offsets, sizes)`). RAW packed: the compressed chunks in one "
        "buffer too, decoded by offsets (ferrocomp's `decode_packed`, nvCOMP's `as_arrays(buffer, offsets, sizes)` "
        "built before the timing; compression as RAW batched). NVCOMP_NATIVE: one buffer in, one out.",
        *notes,
        "",
        throughput_table(libs, clock, xp, datasets, codecs, args.reps),
        "",
        "## Python call overhead",
        "",
        overhead_table(libs, clock, xp, datasets["text(py-src)"], args.overhead_calls),
        "",
        "## Blosc",
        "",
        blosc_table(libs[0], clock, xp, datasets["float32-field"], args.reps),
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(sections))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
