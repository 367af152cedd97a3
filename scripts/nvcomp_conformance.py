#!/usr/bin/env python3
"""One script, two imports: the calls and options of nvCOMP 6.0's Python reference, run with
`import nvidia.nvcomp as nvcomp` and with `import ferrocomp as nvcomp` on a GPU, each observation recorded
(decoded bytes as a digest, shapes, type strings, sizes, the class of an exception raised), then the two runs
compared. Compressed bytes are not compared (each library's encoders are its own): they are kept so that each
library decodes the other's streams (`--peer`).

usage:
  nvcomp_conformance.py run MODULE OUT [--peer PEER.npz]   MODULE: nvidia.nvcomp or ferrocomp; writes OUT.json
                                                          and OUT.npz (the streams it wrote)
  nvcomp_conformance.py compare NVCOMP.json FERROCOMP.json NVCOMP-PEER.json REPORT.md
                                                          (NVCOMP-PEER: nvCOMP's run given ferrocomp's streams)"""

from __future__ import annotations

import hashlib
import importlib
import json
import signal
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

STANDARD = ("LZ4", "Snappy", "Deflate", "GDeflate", "Zstd")
OWN = ("Cascaded", "Bitcomp", "ANS")
KINDS = ("NVCOMP_NATIVE", "RAW", "WITH_UNCOMPRESSED_SIZE")
POLICIES = (
    "NO_COMPUTE_NO_VERIFY",
    "COMPUTE_AND_NO_VERIFY",
    "NO_COMPUTE_AND_VERIFY_IF_PRESENT",
    "COMPUTE_AND_VERIFY_IF_PRESENT",
    "COMPUTE_AND_VERIFY",
)
ENUMS = {
    "BitstreamKind": KINDS,
    "ChecksumPolicy": POLICIES,
    "ArrayBufferKind": ("STRIDED_DEVICE", "STRIDED_HOST"),
    "ExecutionPolicy": ("CONCURRENCY", "LATENCY"),
    "DecompressBackend": (
        "NVCOMP_DECOMPRESS_BACKEND_DEFAULT",
        "NVCOMP_DECOMPRESS_BACKEND_HARDWARE",
        "NVCOMP_DECOMPRESS_BACKEND_CUDA",
    ),
    "BitshuffleMode": ("NVCOMP_BITSHUFFLE_NONE", "NVCOMP_BITSHUFFLE_MSB_FIRST", "NVCOMP_BITSHUFFLE_LSB_FIRST"),
    "BitcompMode": ("BITCOMP_LOSSLESS", "BITCOMP_LOSSY_FP_TO_SIGNED", "BITCOMP_LOSSY_FP_TO_UNSIGNED"),
    "CascadedMode": ("ASYMMETRIC", "SYMMETRIC"),
    "CascadedTerminalCodec": ("UNSPECIFIED", "CASCADED_BITPACK"),
    "CascadedFineGrainedEncoding": ("NONE", "DELTA", "RLE", "FOR"),
    "CascadedCoarseGrainedEncoding": ("NONE",),
}
# Module-level names nvCOMP exports for its enums' members.
MODULE_MEMBERS = (
    "STRIDED_DEVICE",
    "STRIDED_HOST",
    "NO_COMPUTE_NO_VERIFY",
    "COMPUTE_AND_VERIFY",
    "BITCOMP_LOSSLESS",
    "NVCOMP_BITSHUFFLE_NONE",
    "NONE",
    "DELTA",
    "RLE",
    "FOR",
    "ASYMMETRIC",
    "SYMMETRIC",
    "UNSPECIFIED",
    "CASCADED_BITPACK",
    "NVCOMP_DECOMPRESS_BACKEND_DEFAULT",
)


def text(size: int, seed: int = 1) -> np.ndarray:
    """`size` bytes of text-like data: words of a small vocabulary picked by a linear congruential generator."""
    words = b"the of and to in is that for it as with was on be by this are from at or an which have not".split()
    out, state = bytearray(), seed
    while len(out) < size:
        state = (state * 1103515245 + 12345) % 2**31
        out += words[(state >> 16) % len(words)] + b" "
    return np.frombuffer(bytes(out[:size]), np.uint8).copy()


def field(count: int) -> np.ndarray:
    """A smooth float32 field: what Bitcomp, ANS's float modes and lossy compression are for."""
    x = np.linspace(0, 20, count, dtype=np.float32)
    return (np.sin(x) * 100 + x).astype(np.float32)


def offsets(count: int) -> np.ndarray:
    """Increasing int32 offsets with runs: Cascaded's data."""
    return np.cumsum(np.repeat(np.arange(count // 8, dtype=np.int32) % 5, 8)).astype(np.int32)


class Run:
    """One library's run: the module, CuPy, each case's observations and the streams it wrote."""

    def __init__(self, module: str) -> None:
        import cupy

        self.cp = cupy
        self.module = module
        self.nv = importlib.import_module(module)
        self.observed: dict[str, Any] = {}
        self.streams: dict[str, np.ndarray] = {}

    def case(self, name: str, call: Callable[[], Any]) -> None:
        """Records what `call` returns, or the class of what it raises."""
        try:
            value = call()
        except Exception as error:  # each case records the failure, and the run goes on
            value = {"raised": type(error).__name__, "is_value_error": isinstance(error, ValueError)}
        self.observed[name] = value
        print(f"{name}: {value}", flush=True)

    def isolated(self, name: str, case: str, *args: str) -> None:
        """Records case `case` of ISOLATED, given `args`, run in a child process: what it returns, or the signal
        that ended it."""
        child = subprocess.run(
            [sys.executable, __file__, "child", self.module, case, *args], capture_output=True, text=True, check=False
        )
        if child.returncode < 0:
            self.observed[name] = {"crashed": signal.Signals(-child.returncode).name}
        else:
            self.observed[name] = json.loads(child.stdout.strip().splitlines()[-1]) if child.stdout.strip() else None
        print(f"{name}: {self.observed[name]}", flush=True)

    def host(self, array: Any) -> np.ndarray:
        """An array's bytes on the host, whichever library made it and wherever it is."""
        if str(array.buffer_kind).endswith("STRIDED_DEVICE"):
            return self.cp.asnumpy(self.cp.asarray(array)).view(np.uint8).reshape(-1)
        return np.asarray(array.cpu()).view(np.uint8).reshape(-1)

    def seen(self, array: Any) -> dict[str, Any]:
        """What an array shows: shape, type string, where it is, and a digest of its bytes."""
        return {
            "shape": list(array.shape),
            "typestr": array.__cuda_array_interface__["typestr"]
            if str(array.buffer_kind).endswith("STRIDED_DEVICE")
            else array.__array_interface__["typestr"],
            "buffer_kind": str(array.buffer_kind).rsplit(".", 1)[-1],
            "sha": hashlib.sha256(self.host(array).tobytes()).hexdigest()[:16],
        }

    def codec(self, algorithm: str | None = None, kind: str = "NVCOMP_NATIVE", **options: Any) -> Any:
        """A codec on the first GPU."""
        if algorithm is not None:
            options["algorithm"] = algorithm
        return self.nv.Codec(bitstream_kind=getattr(self.nv.BitstreamKind, kind), **options)


def enums(run: Run) -> None:
    """Every enum's members, names and values, and the module-level names."""
    nv = run.nv
    for cls, members in ENUMS.items():
        run.case(
            f"enum {cls}",
            lambda cls=cls, members=members: {m: int(getattr(getattr(nv, cls), m).value) for m in members},
        )
    run.case("module-level members", lambda: {m: str(getattr(nv, m)).rsplit(".", 2)[-2:] for m in MODULE_MEMBERS})
    run.case("masks combine", lambda: [int(nv.DELTA | nv.RLE), int(nv.FOR | nv.DELTA)])


def arrays(run: Run) -> None:
    """`as_array`, `Array`'s attributes and conversions, and `as_arrays` in both forms."""
    nv, cp = run.nv, run.cp
    samples = {
        "host u8": np.arange(1000, dtype=np.uint8),
        "host f32 2d": np.ones((10, 20), np.float32),
        "device i32 2d": cp.arange(21, dtype=cp.int32).reshape(7, 3),
        "device f64": cp.linspace(0, 1, 100),
    }
    for label, source in samples.items():

        def attributes(source=source) -> dict[str, Any]:
            array = nv.as_array(source)
            names = ("shape", "strides", "item_size", "ndim", "size", "buffer_size", "precision", "capacity")
            seen = {name: getattr(array, name) for name in names}
            seen |= {"dtype": str(np.dtype(array.dtype)), "buffer_kind": str(array.buffer_kind).rsplit(".", 1)[-1]}
            return {key: list(value) if isinstance(value, tuple) else value for key, value in seen.items()}

        run.case(f"as_array {label}", attributes)
        run.case(f"Array(...) {label}", lambda source=source: run.seen(nv.Array(source)))
    device = cp.arange(5000, dtype=cp.uint16)
    run.case("cpu() then cuda()", lambda: run.seen(nv.as_array(device).cpu().cuda()))
    run.case("cupy.asarray(Array)", lambda: bool(cp.array_equal(cp.asarray(nv.as_array(device)), device)))
    run.case("cupy.from_dlpack(Array)", lambda: bool(cp.array_equal(cp.from_dlpack(nv.as_array(device)), device)))
    run.case("to_dlpack()", lambda: bool(cp.array_equal(cp.from_dlpack(nv.as_array(device).to_dlpack()), device)))
    run.case("from_dlpack(cupy)", lambda: run.seen(nv.from_dlpack(device)))
    run.case("numpy.asarray(host Array)", lambda: np.asarray(nv.as_array(np.arange(6, dtype=np.int16))).tolist())
    run.case("non-contiguous device array", lambda: run.seen(nv.as_array(device[::2])))
    pieces = [cp.arange(n, dtype=cp.uint8) for n in (1, 100, 5000)]

    def batch() -> dict[str, Any]:
        arrays = nv.as_arrays(pieces)
        return {
            "type": type(arrays).__name__,
            "len": len(arrays),
            "buffer_sizes": list(arrays.buffer_sizes),
            "entries": [run.seen(a) for a in arrays],
            "last": run.seen(arrays[-1]),
        }

    run.case("as_arrays(list)", batch)
    buffer = cp.arange(300, dtype=cp.uint8)

    def carved() -> dict[str, Any]:
        arrays = nv.as_arrays(buffer, [0, 100, 250], [100, 150, 50])
        return {"len": len(arrays), "buffer_sizes": list(arrays.buffer_sizes), "entries": [run.seen(a) for a in arrays]}

    run.case("as_arrays(buffer, offsets, sizes)", carved)
    run.case("as_arrays, sizes past the end", lambda: len(nv.as_arrays(buffer, [0, 250], [100, 100])))


def data_for(algorithm: str) -> tuple[np.ndarray, dict[str, Any]]:
    """The data an algorithm is tried on, and its options."""
    if algorithm == "Cascaded":
        return offsets(40_000), {"data_type": "<i4"}
    if algorithm == "Bitcomp":
        return field(40_000), {"data_type": "<f4"}
    return text(200_000), {}


def codecs(run: Run) -> None:
    """Every algorithm and bitstream kind: one array and a batch, encoded, sized and decoded."""
    nv, cp = run.nv, run.cp
    for algorithm in STANDARD + OWN:
        data, options = data_for(algorithm)
        device = cp.asarray(data)
        for kind in KINDS:
            name = f"{algorithm} {kind}"

            def one(algorithm=algorithm, kind=kind, options=options, device=device, name=name) -> dict[str, Any]:
                codec = run.codec(algorithm, kind, **options)
                encoded = codec.encode(nv.as_array(device))
                run.streams[name] = run.host(encoded)
                decoded = codec.decode(encoded)
                return {
                    "decoded": run.seen(decoded),
                    "as <i4": run.seen(codec.decode(encoded, data_type="<i4")),
                    "within max": encoded.buffer_size <= codec.get_max_comp_buffer_size(nv.as_array(device)),
                    "uncomp size": codec.get_uncomp_buffer_size(encoded),
                    "alignments": [
                        codec.get_required_compression_alignment(),
                        codec.get_required_decompression_alignment(),
                    ],
                    "encoded": {k: v for k, v in run.seen(encoded).items() if k in ("typestr", "buffer_kind")},
                }

            run.case(f"{name}: one array", one)

            def batch(algorithm=algorithm, kind=kind, options=options, device=device) -> dict[str, Any]:
                codec = run.codec(algorithm, kind, **options)
                parts = nv.as_arrays([device[:4], device[4:70_004], device[70_004:]])
                encoded = codec.encode(parts)
                decoded = codec.decode(encoded)
                return {
                    "types": [type(encoded).__name__, type(decoded).__name__],
                    "decoded": [run.seen(d) for d in decoded],
                    "buffer_sizes": list(decoded.buffer_sizes),
                }

            run.case(f"{name}: batch", batch)
    for data_type, values in (("<f4", field(30_000)), ("<f2", field(30_000).astype(np.float16)), ("|u1", text(30_000))):
        run.case(
            f"ANS data_type {data_type}",
            lambda data_type=data_type, values=values: run.seen(
                run.codec("ANS", data_type=data_type).decode(
                    run.codec("ANS", data_type=data_type).encode(cp.asarray(values))
                )
            ),
        )
    fp8 = cp.asarray(text(30_000) & 0x7E)
    run.case(
        "ANS data_type |f1 (float8 e4m3)",
        lambda: run.seen(run.codec("ANS", data_type="|f1").decode(run.codec("ANS", data_type="|f1").encode(fp8))),
    )
    for level in range(6):
        run.case(
            f"Deflate algorithm_type {level}",
            lambda level=level: run.seen(
                run.codec("Deflate", algorithm_type=level).decode(
                    run.codec("Deflate", algorithm_type=level).encode(cp.asarray(text(50_000)))
                )
            ),
        )
    run.case(
        "Codec() decodes a native stream",
        lambda: run.seen(nv.Codec().decode(run.codec("Zstd").encode(cp.asarray(text(9_000))))),
    )
    run.case(
        "LZ4 data_type <i4",
        lambda: run.seen(
            run.codec("LZ4", data_type="<i4").decode(
                run.codec("LZ4", data_type="<i4").encode(cp.asarray(offsets(8_000)))
            )
        ),
    )
    # Sizes that are not a whole number of the codec's elements: nvCOMP drops the remainder.
    run.case(
        "Cascaded <i4 of 160,001 bytes",
        lambda: run.seen(
            run.codec("Cascaded", data_type="<i4").decode(
                run.codec("Cascaded", data_type="<i4").encode(cp.asarray(text(160_001)))
            )
        ),
    )
    run.case(
        "uncomp_chunk_size 4096",
        lambda: run.seen(
            run.codec("LZ4", uncomp_chunk_size=4096).decode(
                run.codec("LZ4", uncomp_chunk_size=4096).encode(cp.asarray(text(50_000)))
            )
        ),
    )


def options(run: Run) -> None:
    """nvCOMP 6's options for its own formats and its hints: accepted (a round trip) or refused."""
    cp = run.cp
    values, ints = cp.asarray(field(20_000)), cp.asarray(offsets(20_000))

    def round_trip(algorithm: str, data: Any, **options: Any) -> Callable[[], Any]:
        def call() -> Any:
            codec = run.codec(algorithm, **options)
            decoded = codec.decode(codec.encode(data))
            return {"exact": bool(cp.array_equal(cp.asarray(decoded).view(data.dtype), data)), "dtype": str(data.dtype)}

        return call

    nv = run.nv
    run.case("execution_policy LATENCY", round_trip("LZ4", ints, execution_policy=nv.ExecutionPolicy.LATENCY))
    run.case(
        "decompress_backend CUDA", round_trip("Snappy", ints, decompress_backend=nv.NVCOMP_DECOMPRESS_BACKEND_CUDA)
    )
    run.case(
        "decompress_backend HARDWARE", round_trip("LZ4", ints, decompress_backend=nv.NVCOMP_DECOMPRESS_BACKEND_HARDWARE)
    )
    run.case("use_de_sort", round_trip("Deflate", ints, use_de_sort=True))
    run.case("bitshuffle_mode NONE", round_trip("LZ4", ints, bitshuffle_mode=nv.NVCOMP_BITSHUFFLE_NONE))
    run.case("bitshuffle_mode MSB_FIRST", round_trip("LZ4", ints, bitshuffle_mode=nv.NVCOMP_BITSHUFFLE_MSB_FIRST))
    run.case("Bitcomp algorithm_type 1", round_trip("Bitcomp", ints, algorithm_type=1, data_type="<i4"))
    run.case("Bitcomp LOSSLESS", round_trip("Bitcomp", values, mode=nv.BITCOMP_LOSSLESS, data_type="<f4"))

    def lossy() -> Any:
        codec = run.codec("Bitcomp", mode=nv.BITCOMP_LOSSY_FP_TO_SIGNED, delta=0.01, data_type="<f4")
        decoded = cp.asarray(codec.decode(codec.encode(values))).view(cp.float32)
        return {"within delta / 2": bool(cp.abs(decoded - values).max() <= 0.005)}

    run.case("Bitcomp LOSSY delta 0.01", lossy)
    run.case(
        "Bitcomp LOSSY without delta",
        round_trip("Bitcomp", values, mode=nv.BITCOMP_LOSSY_FP_TO_UNSIGNED, data_type="<f4"),
    )
    for mode in ("ASYMMETRIC", "SYMMETRIC"):
        run.case(f"Cascaded {mode}", round_trip("Cascaded", ints, mode=getattr(nv, mode), data_type="<i4"))
    run.case(
        "Cascaded stages",
        round_trip(
            "Cascaded",
            ints,
            data_type="<i4",
            compression_level=2,
            terminal_codecs=nv.CASCADED_BITPACK,
            fine_grained_encodings=nv.DELTA | nv.RLE,
            coarse_grained_encodings=nv.NONE,
        ),
    )
    run.case(
        "Cascaded terminal UNSPECIFIED", round_trip("Cascaded", ints, data_type="<i4", terminal_codecs=nv.UNSPECIFIED)
    )
    run.case(
        "ANS defaults spelled",
        round_trip("ANS", ints, states_per_lane=0, histogram_reduction_log2=0, max_sub_chunk_count=0),
    )
    run.case("ANS states_per_lane 2", round_trip("ANS", ints, states_per_lane=2))
    run.case("ANS skip_validate", round_trip("ANS", ints, skip_validate=True))
    for policy in POLICIES:
        run.case(f"checksum_policy {policy}", round_trip("LZ4", ints, checksum_policy=getattr(nv, policy)))


def calls(run: Run) -> None:
    """`out=`, the reusable configurations, streams, and the errors bad input raises."""
    nv, cp = run.nv, run.cp
    data = cp.asarray(text(100_000))

    def encode_into() -> Any:
        codec = run.codec("LZ4")
        out = cp.zeros(codec.get_max_comp_buffer_size(nv.as_array(data)), cp.uint8)
        encoded = codec.encode(nv.as_array(data), out=out)
        return {"decoded": run.seen(codec.decode(encoded)), "in out": int(cp.asarray(encoded).data.ptr) == out.data.ptr}

    run.case("encode(out=)", encode_into)

    def decode_into() -> Any:
        codec = run.codec("Zstd", "RAW")
        out = cp.zeros(100_000, cp.uint8)
        decoded = codec.decode(codec.encode(nv.as_array(data)), out=out)
        return {"decoded": run.seen(decoded), "filled": bool(cp.array_equal(out, data))}

    run.case("decode(out=)", decode_into)
    run.case(
        "decode(out=) too small",
        lambda: run.seen(
            run.codec("Zstd", "RAW").decode(run.codec("Zstd", "RAW").encode(data), out=cp.zeros(99_999, cp.uint8))
        ),
    )

    def batch_into() -> Any:
        codec = run.codec("Snappy", "RAW")
        parts = nv.as_arrays([data[:50_000], data[50_000:]])
        out = cp.zeros(100_000, cp.uint8)
        codec.decode(codec.encode(parts), out=nv.as_arrays(out, [0, 50_000], [50_000, 50_000]))
        return bool(cp.array_equal(out, data))

    run.case("decode(batch, out=BatchArray)", batch_into)
    for kind in KINDS:

        def configured(kind: str = kind) -> Any:
            codec = run.codec("LZ4", kind)
            size_config = codec.compression_config(100_000)
            encoded = codec.encode(nv.as_array(data), compression_config=size_config)
            from_sizes = codec.decompression_config(size_config)
            from_stream = codec.decompression_config(encoded)
            return [run.seen(codec.decode(encoded, decompression_config=c)) for c in (from_sizes, from_stream)]

        run.case(f"configurations {kind}", configured)

        def batch_configured(kind: str = kind) -> Any:
            codec = run.codec("Zstd", kind)
            parts = nv.as_arrays([data[:30_000], data[30_000:]])
            config = codec.compression_config([30_000, 70_000])
            encoded = codec.encode(parts, compression_config=config)
            decoded = codec.decode(encoded, decompression_config=codec.decompression_config(config))
            again = codec.decode(encoded, decompression_config=codec.decompression_config(encoded))
            return [[run.seen(d) for d in decoded], [run.seen(d) for d in again]]

        run.case(f"batch configurations {kind}", batch_configured)
    run.case("compression_config(0)", lambda: type(run.codec("LZ4").compression_config(0)).__name__)

    run.isolated("CudaStream make_new, borrow", "streams")
    run.case("Codec(algorithm='nope')", lambda: run.codec("nope"))
    run.case("Codec() encode", lambda: nv.Codec().encode(data))
    for name in BAD_INPUTS:
        run.isolated(name, name)


def garbage(run: Run) -> Any:
    """5,000 random bytes on the device."""
    return run.cp.asarray(np.random.default_rng(3).integers(0, 256, 5000, np.uint8))


def flipped(run: Run) -> Any:
    """An LZ4 native stream with checksums, one byte in its middle flipped."""
    codec = run.codec("LZ4", checksum_policy=run.nv.COMPUTE_AND_VERIFY)
    stream = run.host(codec.encode(run.cp.asarray(text(100_000)))).copy()
    stream[len(stream) // 2] ^= 0xFF
    return run.cp.asarray(stream)


# Bad input, each case in a child process: nvCOMP's RAW decoders left the CUDA context broken (an illegal address)
# on garbage on an H100, which would fail every later case.
BAD_INPUTS: dict[str, Callable[[Run], Any]] = {
    **{
        f"{algorithm} RAW decodes garbage": lambda run, algorithm=algorithm: run.seen(
            run.codec(algorithm, "RAW").decode(garbage(run))
        )
        for algorithm in STANDARD
    },
    "native decodes garbage": lambda run: run.seen(run.nv.Codec().decode(garbage(run))),
    "native stream truncated": lambda run: run.seen(
        run.nv.Codec().decode(run.cp.asarray(run.host(run.codec("LZ4").encode(run.cp.asarray(text(100_000))))[:-100]))
    ),
    "checksum mismatch, COMPUTE_AND_VERIFY": lambda run: run.seen(
        run.codec("LZ4", checksum_policy=run.nv.COMPUTE_AND_VERIFY).decode(flipped(run))
    ),
    "get_uncomp_buffer_size of garbage": lambda run: run.codec("LZ4").get_uncomp_buffer_size(
        run.nv.as_array(garbage(run))
    ),
}


def streams(run: Run) -> Any:
    """`CudaStream.make_new` and `borrow`, and a codec on a stream of the caller's (run in a child process: it
    crashed nvCOMP's on an H100)."""
    nv, cp = run.nv, run.cp
    data = cp.asarray(text(100_000))
    made = nv.CudaStream.make_new()
    theirs = cp.cuda.Stream(non_blocking=True)  # alive while borrowed
    borrowed = nv.CudaStream.borrow(theirs.ptr)
    codec = run.codec("LZ4", cuda_stream=made.ptr)
    decoded = codec.decode(codec.encode(data))
    return {"ptr is int": [isinstance(s.ptr, int) for s in (made, borrowed)], "decoded": run.seen(decoded)}


def peer_decode(run: Run, streams: str, name: str) -> Any:
    """The other library's stream `name` (of the .npz `streams`), decoded here: whether it equals its data."""
    algorithm, kind = name.split(" ")
    data, options = data_for(algorithm)
    native = kind == "NVCOMP_NATIVE"
    codec = run.codec(None if native else algorithm, kind, **({} if native else options))
    decoded = codec.decode(run.cp.asarray(np.load(streams)[name]))
    return bool(np.array_equal(run.host(decoded), data.view(np.uint8)))


# Cases run in a child process, by name.
ISOLATED = {"streams": streams, "peer": peer_decode, **BAD_INPUTS}


def peer(run: Run, streams: Path) -> None:
    """The other library's streams, each decoded in a child process (a stream nvCOMP cannot read leaves its CUDA
    context broken for the ones after): equal to their data, or what was raised."""
    names = sorted(np.load(streams).files)
    with ThreadPoolExecutor(8) as children:
        list(children.map(lambda name: run.isolated(f"peer's {name}", "peer", str(streams), name), names))


def compare(nvcomps: dict[str, Any], ours: dict[str, Any], nvcomp_peer: dict[str, Any]) -> str:
    """The markdown report: the cases observed differently under the two imports, side by side; then each
    library decoding the other's streams (`ours` and `nvcomp_peer` hold the peer cases)."""
    peers = {case for case in ours if case.startswith("peer's ")}
    cases = sorted((set(nvcomps) | set(ours)) - peers)
    rows = ["| case | nvidia.nvcomp | ferrocomp |", "|---|---|---|"]
    for case in cases:
        theirs, mine = nvcomps.get(case, "(not run)"), ours.get(case, "(not run)")
        if theirs != mine:
            rows.append(f"| {case} | `{json.dumps(theirs)}` | `{json.dumps(mine)}` |")
    same = len(cases) - (len(rows) - 2)
    report = [f"{same} of {len(cases)} cases observed the same under both imports; the others:", "", *rows, ""]
    report += [
        "Each library decoding the other's stream of the same data (True: the data came back):",
        "",
        "| stream | ferrocomp reads nvCOMP's | nvCOMP reads ferrocomp's |",
        "|---|---|---|",
    ]
    for case in sorted(peers | {c for c in nvcomp_peer if c.startswith("peer's ")}):
        stream = case.removeprefix("peer's ")
        report.append(f"| {stream} | `{json.dumps(ours.get(case))}` | `{json.dumps(nvcomp_peer.get(case))}` |")
    return "\n".join(report) + "\n"


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["compare"] and len(args) == 5:
        nvcomps, ours, nvcomp_peer = (json.loads(Path(path).read_text()) for path in args[1:4])
        Path(args[4]).write_text(compare(nvcomps, ours, nvcomp_peer))
        return
    if args[:1] == ["child"] and len(args) >= 3:
        run = Run(args[1])
        run.case(args[2], lambda: ISOLATED[args[2]](run, *args[3:]))
        print(json.dumps(run.observed[args[2]], default=str))
        return
    if args[:1] != ["run"] or len(args) not in (3, 5):
        sys.exit(__doc__)
    run = Run(args[1])
    for part in (enums, arrays, codecs, options, calls):
        part(run)
    if len(args) == 5 and args[3] == "--peer":
        peer(run, Path(args[4]))
    out = Path(args[2])
    out.with_suffix(".json").write_text(json.dumps(run.observed, indent=1, default=str))
    np.savez(out.with_suffix(".npz"), **run.streams)


if __name__ == "__main__":
    main()
