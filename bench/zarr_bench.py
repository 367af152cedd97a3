"""Reading zarr stores from local disk (the page cache) into arrays: plain zarr on the CPU, ferrocomp's batched read
path on the CPU (numpy) and on the GPU (CuPy), nvCOMP through a batched zarr codec, and KvikIO's GDSStore with
ferrocomp's pipeline where kvikio is installed. Writes a markdown report.

    python3 bench/zarr_bench.py --out zarr.md                       # on the GPU machine (bench/run-python-device.sh)
    python3 bench/zarr_bench.py --cpu --mb 64 --image-mb 16 --out z.md  # anywhere: the CPU readers alone

Two arrays, written by plain zarr into a temporary folder: bench/make_datasets.py's float32 field (--mb, 1 GiB by
default) and an int16 image (--image-mb: a smooth field with sensor noise, as a microscope writes), 512 x 512 chunks,
in the stores zarr users meet: format 2 Blosc(lz4, shuffle), Blosc(zstd, bitshuffle) and Zstd(3); format 3 zstd(3),
gzip(5) and zstd(3) in shards of 4096 x 4096. Each read is `array[:]` after one warm-up read (which also puts the
files in the page cache); GB/s counts the array's bytes, median (best) of --reps. For ferrocomp a further read
breaks the time down into fetch (keys resolved, files read, bytes on the device), decode and scatter, and on the
GPU the CuPy pool's size after it (the output, the packed compressed bytes and what the scatter stages) is given.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

try:
    import numcodecs
    import zarr
    import zarr.codecs
    import zarr.registry
    from zarr.storage import LocalStore
except ImportError as missing:
    sys.exit(f"zarr_bench: skipped, {missing} (install zarr 3 and numcodecs, e.g. from the wheels in .whl/)")

CHUNK = 512
SHARD = 4096
MB = 1 << 20

# Store name -> (zarr format, compressor, extra create_array arguments)
STORES: dict[str, tuple[int, Any, dict[str, Any]]] = {
    "v2 Blosc(lz4, shuffle)": (2, numcodecs.Blosc(cname="lz4", shuffle=numcodecs.Blosc.SHUFFLE), {}),
    "v2 Blosc(zstd, bitshuffle)": (2, numcodecs.Blosc(cname="zstd", shuffle=numcodecs.Blosc.BITSHUFFLE), {}),
    "v2 Zstd(3)": (2, numcodecs.Zstd(level=3), {}),
    "v3 zstd(3)": (3, zarr.codecs.ZstdCodec(level=3), {}),
    "v3 gzip(5)": (3, zarr.codecs.GzipCodec(level=5), {}),
    "v3 zstd(3), shards of 4096²": (3, zarr.codecs.ZstdCodec(level=3), {"shards": (SHARD, SHARD)}),
}
NVCOMP_STORES = ("v3 zstd(3)", "v3 zstd(3), shards of 4096²")
"""Stores whose codec the nvCOMP zarr codec below stands in for (zarr's zstd)."""


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="markdown report to write")
    parser.add_argument("--mb", type=int, default=1024, help="MiB of the float32 array (default 1024)")
    parser.add_argument("--image-mb", type=int, default=512, help="MiB of the int16 image (default 512)")
    parser.add_argument("--reps", type=int, default=3, help="timed reads after one warm-up (default 3)")
    parser.add_argument("--cpu", action="store_true", help="the CPU readers only, without a GPU")
    parser.add_argument("--dir", type=Path, help="where to write the stores (default: a temporary folder)")
    parser.add_argument("--only", default="", help="only the stores whose name contains this (e.g. Blosc)")
    return parser.parse_args()


def square(values: np.ndarray) -> np.ndarray:
    """`values` as a square-ish 2-D array of whole chunks."""
    side = int(math.isqrt(values.size)) // CHUNK * CHUNK
    return values[: side * (values.size // side // CHUNK * CHUNK)].reshape(side, -1)


def float_field(mb: int) -> np.ndarray:
    """make_datasets' float32 field at `mb` MiB."""
    os.environ["ANCHOR_MB"] = str(mb)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    return square(importlib.import_module("make_datasets").float_field().view(np.float32))


def int16_image(mb: int) -> np.ndarray:
    """A microscope-like int16 image: smooth structures over a background, with shot noise."""
    side = int(math.isqrt(mb * MB // 2)) // CHUNK * CHUNK
    rng = np.random.default_rng(46)
    y, x = np.ogrid[:side, :side]
    signal = 800 + 600 * np.sin(x / 97.0) * np.cos(y / 131.0) + 300 * np.sin((x + y) / 23.0)
    return (signal + rng.normal(0, 12, (side, side))).astype(np.int16)


def write_store(path: Path, data: np.ndarray, zarr_format: int, compressor: Any, extra: dict) -> int:
    """`data` in a new local store, as plain zarr writes it; the store's compressed bytes."""
    array = zarr.create_array(
        LocalStore(path),
        shape=data.shape,
        chunks=(CHUNK, CHUNK),
        dtype=data.dtype,
        compressors=compressor,
        zarr_format=zarr_format,
        **extra,
    )
    array[:] = data
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.name.startswith(("zarr", ".z")))


def nvcomp_zstd(nvcomp: Any, cupy: Any) -> type:
    """zarr's zstd codec decoding a batch with one nvCOMP call into slices of one buffer, on a stream of its own."""

    class NvcompZstd(zarr.codecs.ZstdCodec):
        algorithm: ClassVar[str] = "Zstd"

        async def decode(self, chunks_and_specs: Iterable[tuple[Any, Any]]) -> list[Any]:
            pairs = list(chunks_and_specs)
            stream = nvcomp_stream(cupy)
            codec = nvcomp.Codec(algorithm="Zstd", bitstream_kind=nvcomp.BitstreamKind.RAW, cuda_stream=stream.ptr)
            sizes = [math.prod(spec.shape) * spec.dtype.to_native_dtype().itemsize for _, spec in pairs]
            offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
            out = cupy.empty(sum(sizes), dtype=cupy.uint8)
            sources = nvcomp.as_arrays([chunk.as_array_like() for chunk, _ in pairs], cuda_stream=stream.ptr)
            codec.decode(sources, out=nvcomp.as_arrays(out, offsets, sizes, cuda_stream=stream.ptr))
            stream.synchronize()
            return [
                spec.prototype.buffer.from_array_like(out[offset : offset + size])
                for (_, spec), offset, size in zip(pairs, offsets, sizes, strict=True)
            ]

    return NvcompZstd


_streams: dict[int, Any] = {}


def nvcomp_stream(cupy: Any) -> Any:
    """One non-blocking CUDA stream per thread for nvCOMP, kept (it refuses the legacy default stream)."""
    import threading

    key = threading.get_ident()
    if key not in _streams:
        _streams[key] = cupy.cuda.Stream(non_blocking=True)
    return _streams[key]


def enter_nvcomp(codec_class: type) -> Callable[[ExitStack], None]:
    """Selects the nvCOMP zstd codec, all chunks of a read in one batch."""

    def enter(stack: ExitStack) -> None:
        zarr.registry.register_codec("zstd", codec_class)
        codecs = dict(zarr.config.get("codecs"))
        codecs["zstd"] = zarr.registry.fully_qualified_name(codec_class)
        stack.enter_context(zarr.config.set({"codecs": codecs, "codec_pipeline.batch_size": 1 << 20}))

    return enter


def window(shape: tuple[int, ...], itemsize: int) -> tuple[slice, slice]:
    """A 16 MiB window of 2048 rows off the chunk grid (a small read, as a viewer or a training batch makes)."""
    cols = 16 * MB // (2048 * itemsize)
    row, col = min(1000, shape[0] - 2048), min(3000, shape[1] - cols)
    return np.s_[row : row + 2048, col : col + cols]


def timed_reads(
    open_array: Callable[[], Any],
    enter: Callable[[ExitStack], None],
    gpu: Any,
    reps: int,
    warmed: Callable[[], None] = lambda: None,
    selection: Any = np.s_[:],
) -> tuple:
    """Seconds of `reps` reads of `selection` (the whole array) after a warm-up (then `warmed` is called), and the
    last read."""
    times = []
    with ExitStack() as stack:
        if gpu is not None:
            stack.enter_context(zarr.config.enable_gpu())
        enter(stack)
        array = open_array()
        result = array[selection]
        warmed()
        for _ in range(reps):
            start = time.perf_counter()
            result = array[selection]
            if gpu is not None:
                gpu.cuda.Device().synchronize()
            times.append(time.perf_counter() - start)
    return times, result


def small_reads(
    open_array: Callable[[], Any], enter: Callable[[ExitStack], None], gpu: Any, data: Any, row: str
) -> str:
    """The row of 16 MiB window reads (`window`), median (best) of 10."""
    selection = window(data.shape, data.itemsize)
    expected = data[selection]
    try:
        times, result = timed_reads(open_array, enter, gpu, 10, selection=selection)
        host = result.get() if gpu is not None else result
        ok = "" if np.array_equal(host, expected) else " MISMATCH"
        median, best = expected.nbytes / statistics.median(times), expected.nbytes / min(times)
        speed = f"{median / 1e9:.2f} ({best / 1e9:.2f}){ok}"
    except Exception as error:  # reported, the other reads still run
        speed = f"error: {type(error).__name__}: {str(error)[:80]}".replace("|", "/")
    return f"{row}, 16 MiB window | {speed} |  |  |"


def breakdown(open_array: Callable[[], Any], enter: Callable[[ExitStack], None], gpu: Any) -> str:
    """One more ferrocomp read with its phases timed (each waiting for the device): ms of fetch / decode / scatter /
    the rest (zarr's indexing and ours, outside the phases)."""
    from ferrocomp import _zarr_pipeline

    try:
        (total,), _ = timed_reads(open_array, enter, gpu, 1, lambda: setattr(_zarr_pipeline, "timings", {}))
        phases = _zarr_pipeline.timings
    finally:
        _zarr_pipeline.timings = None
    rest = total - sum(phases.values())
    return " / ".join(f"{ms * 1e3:.0f}" for ms in (*(phases.get(n, 0.0) for n in ("fetch", "decode", "scatter")), rest))


def peak_device_memory(open_array: Callable[[], Any], enter: Callable[[ExitStack], None], gpu: Any) -> str:
    """MiB of device memory one more read holds at its peak: every allocation, ferrocomp's included, comes from
    CuPy's pool (see `main`), which is emptied first (the codecs kept for later calls dropped, with their scratch)
    and keeps what it gave out, so its size after the read is the read's peak."""
    from ferrocomp import _zarr_batch

    with ExitStack() as stack:
        stack.enter_context(zarr.config.enable_gpu())
        enter(stack)
        array = open_array()
        _zarr_batch._codecs.clear()
        gc.collect()
        gpu.get_default_memory_pool().free_all_blocks()
        result = array[:]
        gpu.cuda.Device().synchronize()
        peak = gpu.get_default_memory_pool().total_bytes()
        del result
    return f"{peak / MB:.0f}"


def main() -> None:
    """Write the stores, read each every way that applies, and write the report."""
    args = parse_args()
    import ferrocomp
    import ferrocomp.zarr

    cupy = nvcomp_codec = gds_store = None
    notes = []
    if not args.cpu:
        try:
            import cupy
        except ImportError:
            sys.exit("zarr_bench: CuPy is not installed; the GPU run needs it (or run with --cpu)")
        ferrocomp.set_device_allocator(lambda nbytes, stream: cupy.cuda.alloc(nbytes))  # one pool to measure
        try:
            from nvidia import nvcomp

            nvcomp_codec = nvcomp_zstd(nvcomp, cupy)
        except ImportError as error:
            notes.append(f"nvCOMP not measured: {error}.")
        try:
            from kvikio.zarr import GDSStore as gds_store
        except ImportError as error:
            notes.append(f"KvikIO's GDSStore not measured: {error}.")
    where = "the CPU" if cupy is None else cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    root = args.dir or Path(tempfile.mkdtemp(prefix="zarr_bench_"))
    lines = [
        f"# zarr reads from local disk (page cache) on {where}, {os.cpu_count()} cores",
        "",
        f"ferrocomp {ferrocomp.__version__}, zarr {zarr.__version__}, numcodecs {numcodecs.__version__}; `array[:]`, "
        f"median (best) of {args.reps} after a warm-up; {CHUNK}x{CHUNK} chunks. ferrocomp's breakdown: ms of fetch "
        "(files read, bytes on the device) / decode / scatter / the rest (zarr's indexing and ours) in one more read, "
        "each phase waiting for the device; peak device memory of one more read (every allocation, ferrocomp's "
        "scratch included, from CuPy's pool).",
        *notes,
        "",
        "| array | store | ratio | reader | GB/s median (best) | breakdown ms | peak device MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")  # rows are appended as they come, so a crash keeps them
    ferro = lambda stack: stack.enter_context(ferrocomp.zarr.enable(batch_size=1 << 20))  # noqa: E731
    datasets = {"float32": float_field(args.mb), "int16 image": int16_image(args.image_mb)}
    for label, data in datasets.items():
        shape = "x".join(map(str, data.shape))
        for name, (zarr_format, compressor, extra) in STORES.items():
            if args.only not in name:
                continue
            path = root / f"{label.split()[0]}-{len(lines)}.zarr"
            compressed = write_store(path, data, zarr_format, compressor, extra)
            print(f"{label} {name}: {data.nbytes / MB:.0f} MiB, {compressed / MB:.0f} MiB stored", flush=True)
            readers: list[tuple[str, Callable, Any, Callable[[], Any]]] = [
                ("zarr CPU", lambda stack: None, None, lambda p=path: zarr.open_array(LocalStore(p), mode="r")),
                ("ferrocomp CPU", ferro, None, lambda p=path: zarr.open_array(LocalStore(p), mode="r")),
            ]
            if cupy is not None:
                readers.append(("ferrocomp GPU", ferro, cupy, lambda p=path: zarr.open_array(LocalStore(p), mode="r")))
                if gds_store is not None:
                    readers.append(
                        ("ferrocomp GPU, GDSStore", ferro, cupy, lambda p=path: zarr.open_array(gds_store(p)))
                    )
                if nvcomp_codec is not None and name in NVCOMP_STORES:
                    readers.append(
                        ("nvCOMP GPU", enter_nvcomp(nvcomp_codec), cupy, lambda p=path: zarr.open_array(LocalStore(p)))
                    )
            for reader, enter, gpu, open_array in readers:
                parts, pool = "", ""
                try:
                    if gpu is not None:
                        gpu.get_default_memory_pool().free_all_blocks()
                    times, result = timed_reads(open_array, enter, gpu, args.reps)
                    host = result.get() if gpu is not None else result
                    ok = "" if np.array_equal(host, data) else " MISMATCH"
                    median, best = data.nbytes / statistics.median(times), data.nbytes / min(times)
                    speed = f"{median / 1e9:.2f} ({best / 1e9:.2f}){ok}"
                    if reader.startswith("ferrocomp"):
                        parts = breakdown(open_array, enter, gpu)
                    del result, host
                    if gpu is not None:
                        pool = peak_device_memory(open_array, enter, gpu)
                except Exception as error:  # a reader that fails is reported, the others still run
                    speed = f"error: {type(error).__name__}: {str(error)[:80]}".replace("|", "/")
                ratio = data.nbytes / compressed
                row = f"| {label} {shape} | {name} | {ratio:.3f} | {reader} | {speed} | {parts} | {pool} |"
                row += "\n" + small_reads(
                    open_array, enter, gpu, data, f"| {label} {shape} | {name} | {ratio:.3f} | {reader}"
                )
                with args.out.open("a") as report:
                    report.write(row + "\n")
                print(row, flush=True)
            shutil.rmtree(path)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
