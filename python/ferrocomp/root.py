"""ROOT's compression frames: split compressed TBasket payloads into blocks and decode a cluster in one batch per codec.

A compressed ROOT object is one or more blocks, each behind a 9-byte header: the algorithm ("ZL" zlib, "L4" LZ4,
"ZS" zstd, "XZ" lzma), a method byte, then the block's compressed and uncompressed sizes as 3-byte little-endian
integers. An LZ4 block starts with the big-endian xxhash64 of the LZ4 bytes (counted in the compressed size).
An object that did not shrink is stored as it is, without a header.

    frames = [f for seek, size, objlen in baskets for f in split_frames(file_bytes, seek, size, objlen)]
    out = numpy.empty(frames_size(frames), numpy.uint8)      # or one CuPy buffer, with file_bytes on the GPU
    decode_frames(file_bytes, frames, out)                  # one batched call per algorithm

Straight from a file, a cluster's pages as uproot lists them (each basket's compressed object: where it starts, its
size and its decoded size; the TKey left out) are read into one pinned batch on all cores, copied to the GPU once
and decoded into one CuPy buffer (numpy with ``gpu=False`` or without a GPU):

    tree = uproot.open(path)["events"]
    pages = []
    for branch in tree.branches:
        seek = int(branch.member("fBasketSeek")[basket])
        key = branch.basket_key(basket)  # uproot's TKey of the basket
        pages.append((seek + key.fKeylen, key.fNbytes - key.fKeylen, key.fObjlen))
    out = ferrocomp.root.read_cluster(path, pages)           # every page, decoded, one after the other
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ferrocomp import _zarr_batch
from ferrocomp._ferrocomp import device_count, read_ranges

HEADER_SIZE = 9
"""Bytes of a ROOT compression block header."""
LZ4_CHECKSUM_SIZE = 8
"""Bytes of the xxhash64 that leads an LZ4 block."""
ALGORITHMS = {b"ZL": "zlib", b"L4": "lz4", b"ZS": "zstd", b"XZ": "lzma", b"CS": "old"}
"""ROOT's two-letter algorithm tags."""
STORED = "stored"
"""The algorithm of an object kept uncompressed."""
DECODED_BY = {"zlib": _zarr_batch.ZLIB_STREAM, "lz4": _zarr_batch.LZ4_BLOCK, "zstd": _zarr_batch.ZSTD_FRAME}
"""The ferrocomp stream format of each ROOT algorithm this module decodes."""


class RootFrameError(ValueError):
    """A ROOT compression block that is truncated, corrupt, of an unknown algorithm, or fails its checksum."""


@dataclass(frozen=True)
class Frame:
    """One block of a compressed ROOT object: its algorithm, where its stream lies, and its decoded size."""

    algorithm: str
    """"zlib", "lz4", "zstd", "lzma" or "stored"."""
    start: int
    """Offset of the block's stream (after its header and checksum) in the buffer that was split."""
    size: int
    """Bytes of the stream."""
    decoded_size: int
    """Bytes the stream decodes to."""


def split_frames(
    data: Any, start: int = 0, size: int | None = None, decoded_size: int | None = None, *, verify: bool = True
) -> list[Frame]:
    """The blocks of the compressed object in `data[start : start + size]`, which decodes to `decoded_size` bytes.

    `data` is any bytes-like or 1-D uint8 host array. With `decoded_size` given, an object of exactly that many
    bytes is one stored frame, and the blocks' decoded sizes must add up to it. With `verify`, every LZ4 block's
    xxhash64 is checked (this needs the `xxhash` package).
    """
    view = memoryview(data).cast("B")
    end = len(view) if size is None else start + size
    if start < 0 or end > len(view) or end < start:
        raise RootFrameError(f"object [{start}, {end}) lies outside the {len(view)}-byte buffer")
    if decoded_size is not None and end - start == decoded_size:
        return [Frame(STORED, start, decoded_size, decoded_size)]
    frames = []
    position = start
    while position < end:
        frame = _read_frame(view, position, end)
        if verify and frame.algorithm == "lz4":
            _verify_lz4_checksum(view, frame)
        frames.append(frame)
        position = frame.start + frame.size
    total = frames_size(frames)
    if decoded_size is not None and total != decoded_size:
        raise RootFrameError(f"blocks at {start} decode to {total} bytes, the object has {decoded_size}")
    return frames


def _read_frame(view: memoryview, position: int, end: int) -> Frame:
    """The block whose header starts at `position`, checked to end by `end`."""
    if end - position < HEADER_SIZE:
        raise RootFrameError(f"block header at {position} is cut off: {end - position} of {HEADER_SIZE} bytes")
    header = bytes(view[position : position + HEADER_SIZE])
    algorithm = ALGORITHMS.get(header[:2])
    if algorithm is None:
        raise RootFrameError(f"unknown compression algorithm {header[:2]!r} at {position}")
    compressed = int.from_bytes(header[3:6], "little")
    decoded = int.from_bytes(header[6:9], "little")
    stream_start = position + HEADER_SIZE
    if algorithm == "lz4":
        if compressed < LZ4_CHECKSUM_SIZE:
            raise RootFrameError(f"LZ4 block at {position} is {compressed} bytes, too short for its checksum")
        stream_start += LZ4_CHECKSUM_SIZE
        compressed -= LZ4_CHECKSUM_SIZE
    if stream_start + compressed > end:
        raise RootFrameError(f"block at {position} declares {compressed} bytes, past the object's end at {end}")
    return Frame(algorithm, stream_start, compressed, decoded)


def _verify_lz4_checksum(view: memoryview, frame: Frame) -> None:
    """Raise unless the LZ4 block's leading xxhash64 matches its bytes."""
    import xxhash

    expected = int.from_bytes(view[frame.start - LZ4_CHECKSUM_SIZE : frame.start], "big")
    actual = xxhash.xxh64_intdigest(view[frame.start : frame.start + frame.size])
    if actual != expected:
        raise RootFrameError(f"LZ4 block at {frame.start}: xxhash64 {actual:016x}, header says {expected:016x}")


def frames_size(frames: Sequence[Frame]) -> int:
    """Bytes the frames decode to, together."""
    return sum(frame.decoded_size for frame in frames)


def decode_frames(source: Any, frames: Sequence[Frame], out: Any) -> list[Any]:
    """Decode `frames` (split from `source`) into consecutive slices of `out`, one batched call per algorithm.

    `source` and `out` are 1-D uint8 arrays of one kind: numpy on the host, or CuPy on the GPU (`source` holding the
    same bytes the frames were split from). Returns the slice of `out` each frame decoded into. A frame that is
    corrupt or does not decode to exactly its declared size raises `ferrocomp.DecodeError` naming it.
    """
    xp = _zarr_batch.array_module(out)
    if out.dtype != xp.uint8 or out.ndim != 1 or out.size != frames_size(frames):
        raise ValueError(
            f"out must be a 1-D uint8 array of {frames_size(frames)} bytes, got {out.dtype} of shape {out.shape}"
        )
    slices = _zarr_batch.split_buffer(out, [frame.decoded_size for frame in frames])
    for algorithm in dict.fromkeys(frame.algorithm for frame in frames):
        indices = [i for i, frame in enumerate(frames) if frame.algorithm == algorithm]
        streams = [source[frames[i].start : frames[i].start + frames[i].size] for i in indices]
        if algorithm == STORED:
            for i, stream in zip(indices, streams, strict=True):
                slices[i][...] = stream
            continue
        if algorithm not in DECODED_BY:
            raise RootFrameError(f"ferrocomp does not decode ROOT's {algorithm} blocks")
        with _zarr_batch.numbered(indices, "frame"):
            _zarr_batch.decode_into(DECODED_BY[algorithm], streams, [slices[i] for i in indices], "its header says")
    return slices


def read_cluster(
    path: str, pages: Sequence[tuple[int, int, int]], *, gpu: bool | None = None, verify: bool = True
) -> Any:
    """Every page of a cluster read from the file at `path` and decoded, one after the other, into one buffer.

    `pages` are (start, size, decoded size) of each basket's compressed object (after its TKey). The pages are read
    on all cores into one buffer (pinned where it goes to the GPU), split into frames there, copied to the GPU once
    and decoded with one batched call per algorithm into one CuPy buffer; into numpy with `gpu=False` (the default
    where there is no GPU). Raises `OSError` for a page past the file's end, `RootFrameError` for a bad header and
    `ferrocomp.DecodeError` naming the frame that does not decode.
    """
    on_gpu = device_count() > 0 if gpu is None else gpu
    sizes = [size for _, size, _ in pages]
    starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    total = int(starts[-1])
    if on_gpu:
        import cupyx

        host = cupyx.empty_pinned(total, np.uint8)
    else:
        host = np.empty(total, np.uint8)
    offsets = np.array([start for start, _, _ in pages], dtype=np.uint64)
    read_ranges([path] * len(pages), offsets, np.array(sizes, dtype=np.uint64), host)
    frames = [
        frame
        for (_, size, objlen), at in zip(pages, starts[:-1].tolist(), strict=True)
        for frame in split_frames(host, at, size, objlen, verify=verify)
    ]
    xp = np
    if on_gpu:
        import cupy as xp
    source = xp.asarray(host)
    out = xp.empty(frames_size(frames), xp.uint8)
    decode_frames(source, frames, out)
    return out
