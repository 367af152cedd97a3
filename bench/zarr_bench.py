"""Reading a 1 GiB zarr array of float32: on the GPU through ferrocomp's zarr codecs, on the GPU through nvCOMP, and
on the CPU through zarr's own codecs. Writes a markdown report.

    python3 bench/zarr_bench.py --out zarr.md           # on the GPU machine (bench/run-python-device.sh)
    python3 bench/zarr_bench.py --cpu --mb 8 --out z.md  # anywhere: ferrocomp's CPU path beside zarr's

The array is bench/make_datasets.py's float32 field, (N, N) in 512 x 512 chunks (1 MiB), in memory stores written by
plain zarr: gzip, numcodecs' LZ4 (in zarr format 3 and 2), Blosc(lz4, shuffle) and zstd. zarr 3.4 ships no nvCOMP
codec, so the nvCOMP side is a minimal batched codec defined here on `nvidia.nvcomp` (one `decode` of a BatchArray per
batch, as ferrocomp's), used for the zstd and LZ4 stores. Each read is `array[:]` to a device (or host) array, the
stores' bytes starting on the host; GB/s counts the array's bytes, median (best) of --reps.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import statistics
import sys
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
    import zarr.codecs.numcodecs
    import zarr.registry
    from zarr.storage import MemoryStore
except ImportError as missing:
    sys.exit(f"zarr_bench: skipped, {missing} (install zarr 3 and numcodecs, e.g. from the wheels in .whl/)")

CHUNK_SIDE = 512
MB = 1 << 20


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="markdown report to write")
    parser.add_argument("--mb", type=int, default=1024, help="MiB of float32 data (default 1024)")
    parser.add_argument("--reps", type=int, default=3, help="timed reads after one warm-up (default 3)")
    parser.add_argument("--cpu", action="store_true", help="ferrocomp's CPU path beside zarr's, without a GPU")
    return parser.parse_args()


def float_field(mb: int) -> np.ndarray:
    """make_datasets' float32 field at `mb` MiB, as a square-ish 2-D array of whole chunks."""
    os.environ["ANCHOR_MB"] = str(mb)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    values = importlib.import_module("make_datasets").float_field().view(np.float32)
    side = int(math.isqrt(values.size)) // CHUNK_SIDE * CHUNK_SIDE
    return values[: side * (values.size // side)].reshape(side, -1)


# Store name -> (zarr format, compressor as plain zarr writes it, who decodes it on the GPU besides zarr on the CPU)
STORES = {
    "gzip level 1": (3, zarr.codecs.GzipCodec(level=1), ("ferrocomp",)),
    "numcodecs LZ4 (v3)": (3, zarr.codecs.numcodecs.LZ4(), ("ferrocomp", "nvCOMP")),
    "numcodecs LZ4 (v2)": (2, numcodecs.LZ4(), ("ferrocomp",)),
    "Blosc lz4 shuffle": (3, zarr.codecs.BloscCodec(cname="lz4", shuffle="shuffle", typesize=4), ("ferrocomp",)),
    "zstd level 0": (3, zarr.codecs.ZstdCodec(level=0), ("nvCOMP",)),
}


def write_store(data: np.ndarray, zarr_format: int, compressor: Any) -> tuple[MemoryStore, int]:
    """`data` in a new memory store with the compressor, and the store's compressed bytes."""
    store = MemoryStore()
    array = zarr.create_array(
        store,
        shape=data.shape,
        chunks=(CHUNK_SIDE, CHUNK_SIDE),
        dtype=data.dtype,
        compressors=compressor,
        zarr_format=zarr_format,
    )
    array[:] = data
    return store, sum(len(value) for key, value in store._store_dict.items() if not key.startswith((".z", "zarr")))


def nvcomp_codecs(nvcomp: Any, cupy: Any) -> dict[str, type]:
    """zarr codecs (zstd, numcodecs.lz4) that decode a batch with one nvCOMP call, on a stream of their own."""

    class NvcompBatched:
        """Decode a batch of chunks of fixed decoded size with one nvCOMP RAW decode into slices of one buffer."""

        algorithm: ClassVar[str]
        prefix: ClassVar[int] = 0

        async def decode(self, chunks_and_specs: Iterable[tuple[Any, Any]]) -> list[Any]:
            """The batch's chunks decoded; each chunk's size is its spec's (shape x item size)."""
            pairs = list(chunks_and_specs)
            stream = nvcomp_stream(cupy)
            codec = nvcomp.Codec(
                algorithm=self.algorithm, bitstream_kind=nvcomp.BitstreamKind.RAW, cuda_stream=stream.ptr
            )
            sizes = [math.prod(spec.shape) * spec.dtype.to_native_dtype().itemsize for _, spec in pairs]
            offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
            out = cupy.empty(sum(sizes), dtype=cupy.uint8)
            sources = nvcomp.as_arrays(
                [chunk.as_array_like()[self.prefix :] for chunk, _ in pairs], cuda_stream=stream.ptr
            )
            codec.decode(sources, out=nvcomp.as_arrays(out, offsets, sizes, cuda_stream=stream.ptr))
            stream.synchronize()
            return [
                spec.prototype.buffer.from_array_like(out[offset : offset + size])
                for (_, spec), offset, size in zip(pairs, offsets, sizes, strict=True)
            ]

    class NvcompZstd(NvcompBatched, zarr.codecs.ZstdCodec):
        """zarr's zstd, decoded by nvCOMP."""

        algorithm = "Zstd"

    class NvcompLz4(NvcompBatched, zarr.codecs.numcodecs.LZ4):
        """numcodecs' LZ4 (a 4-byte size, then the block), decoded by nvCOMP."""

        algorithm = "LZ4"
        prefix = 4

    return {"zstd": NvcompZstd, "numcodecs.lz4": NvcompLz4}


_streams: dict[int, Any] = {}


def nvcomp_stream(cupy: Any) -> Any:
    """One non-blocking CUDA stream per thread for nvCOMP (it refuses the legacy default stream)."""
    import threading

    key = threading.get_ident()
    if key not in _streams:
        _streams[key] = cupy.cuda.Stream(non_blocking=True)
    return _streams[key]


def with_nvcomp(codecs: dict[str, type], batch_size: int) -> Callable[[ExitStack], None]:
    """Enters the config that selects the nvCOMP codecs, batch_size chunks per batch."""

    def enter(stack: ExitStack) -> None:
        for name, codec_class in codecs.items():
            zarr.registry.register_codec(name, codec_class)
        selected = dict(zarr.config.get("codecs"))
        selected.update({name: zarr.registry.fully_qualified_name(cls) for name, cls in codecs.items()})
        stack.enter_context(zarr.config.set({"codecs": selected, "codec_pipeline.batch_size": batch_size}))

    return enter


def timed_read(store: MemoryStore, enter: Callable[[ExitStack], None], gpu: Any, reps: int) -> tuple[list, Any]:
    """Seconds of `reps` reads of the whole array (after a warm-up) under the config `enter` sets, and the last read."""
    times = []
    with ExitStack() as stack:
        if gpu is not None:
            stack.enter_context(zarr.config.enable_gpu())
        enter(stack)
        array = zarr.open_array(store, mode="r")
        result = array[:]
        for _ in range(reps):
            start = time.perf_counter()
            result = array[:]
            if gpu is not None:
                gpu.cuda.Device().synchronize()
            times.append(time.perf_counter() - start)
    return times, result


def main() -> None:
    """Write the stores, read each every way that applies, and write the report."""
    args = parse_args()
    import ferrocomp
    import ferrocomp.zarr

    data = float_field(args.mb)
    gpu = None
    readers: dict[str, Callable[[ExitStack], None]] = {
        "zarr CPU": lambda stack: None,
        "ferrocomp": lambda stack: stack.enter_context(ferrocomp.zarr.enable(batch_size=data.size)),
    }
    notes = []
    if not args.cpu:
        try:
            import cupy
        except ImportError:
            sys.exit("zarr_bench: CuPy is not installed; the GPU run needs it (or run with --cpu)")
        gpu = cupy
        try:
            from nvidia import nvcomp
        except ImportError as error:
            notes.append(f"nvCOMP not measured: nvidia-nvcomp-cu13 is not installed ({error}).")
            print(f"zarr_bench: {notes[-1]}", file=sys.stderr)
        else:
            readers["nvCOMP"] = with_nvcomp(nvcomp_codecs(nvcomp, cupy), data.size)
    where = "CPU" if gpu is None else gpu.cuda.runtime.getDeviceProperties(0)["name"].decode()
    lines = [
        f"# zarr read of {data.nbytes / MB:.0f} MiB float32 {data.shape}, {CHUNK_SIDE}x{CHUNK_SIDE} chunks, on {where}",
        "",
        f"ferrocomp {getattr(ferrocomp, '__version__', '?')}, zarr {zarr.__version__}, numcodecs "
        f"{numcodecs.__version__}; `array[:]` from an in-memory store, median (best) of {args.reps} after a warm-up; "
        "GPU reads return CuPy arrays (chunks copied to the device as zarr fetches them), CPU reads numpy.",
        *notes,
        "",
        "| store | ratio | reader | GB/s median (best) |",
        "|---|---|---|---|",
    ]
    for name, (zarr_format, compressor, gpu_readers) in STORES.items():
        store, compressed = write_store(data, zarr_format, compressor)
        for reader, enter in readers.items():
            if reader != "zarr CPU" and reader not in gpu_readers:
                continue
            on_gpu = gpu if reader != "zarr CPU" else None
            try:
                times, result = timed_read(store, enter, on_gpu, args.reps)
                host = result.get() if on_gpu is not None else result
                ok = "" if np.array_equal(host, data) else " MISMATCH"
                speed = f"{data.nbytes / statistics.median(times) / 1e9:.2f} ({data.nbytes / min(times) / 1e9:.2f}){ok}"
            except Exception as error:
                speed = f"error: {type(error).__name__}: {str(error)[:80]}".replace("|", "/")
            label = f"{reader} {'GPU' if on_gpu is not None else 'CPU'}" if reader != "zarr CPU" else reader
            lines.append(f"| {name} | {data.nbytes / compressed:.3f} | {label} | {speed} |")
            print(lines[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
