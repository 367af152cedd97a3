"""The stored bytes of a batch's chunks: where each stream lies (a local store's file and range, or the value fetched
from another store), read into one packed buffer on the host or the GPU."""

from __future__ import annotations

import asyncio
import math
import os
import sys
from typing import Any

import numpy as np
from zarr.abc.store import RangeByteRequest
from zarr.core.buffer import default_buffer_prototype
from zarr.storage import LocalStore

from ferrocomp import _zarr_batch
from ferrocomp._ferrocomp import read_ranges
from ferrocomp._zarr_batch import NumcodecsLz4Format
from ferrocomp._zarr_layout import ChunkLayout, Piece


async def locate(pieces: list[Piece], layout: ChunkLayout) -> tuple[list[int], list[tuple[Any, int, int]]]:
    """The pieces with stored bytes (those without get `key = None`), and for each where its stream lies: a file
    path of a local store with the stream's start and length, or its fetched bytes (other stores). numcodecs' LZ4
    size prefixes are checked against the chunks' shapes and skipped."""
    lz4 = layout.stream_format if isinstance(layout.stream_format, NumcodecsLz4Format) else None
    prefix = lz4.prefix_size if lz4 else 0
    sources: dict[int, tuple[Any, int, int]] = {}
    fetch = []
    roots: dict[int, str] = {}  # a local store's folder, by the store's id
    file_sizes: dict[str, int] = {}
    for i, piece in enumerate(pieces):
        if piece.key is None:
            continue
        store = getattr(piece.key, "store", None)
        if not isinstance(store, LocalStore):
            fetch.append(i)
            continue
        root = roots.get(id(store)) or roots.setdefault(id(store), f"{store.root}{os.sep}")
        path = root + piece.key.path
        if piece.size is None:
            try:
                sources[i] = (path, 0, os.stat(path).st_size)
            except FileNotFoundError:
                piece.key = None
            continue
        # An inner chunk of a shard: its index may lie, so its range is checked before anything is allocated.
        file_size = file_sizes.get(path) or file_sizes.setdefault(path, os.stat(path).st_size)
        if piece.start + piece.size > file_size:
            message = f"chunk {i}: the shard index puts it past the end of its {file_size}-byte file"
            raise _zarr_batch.ChunkFormatError(message, i)
        sources[i] = (path, piece.start, piece.size)
    values = await asyncio.gather(*(_get(pieces[i]) for i in fetch))
    for i, data in zip(fetch, values, strict=True):
        if data is None:
            pieces[i].key = None
        else:
            sources[i] = (data, 0, data.size)
    present = sorted(sources)
    streams = []
    for i in present:
        source, start, length = sources[i]
        if lz4:
            declared = lz4.declared_size(i, _head(source, start, min(length, prefix)), length)
            expected = math.prod(pieces[i].shape) * layout.dtype.itemsize
            if declared != expected:
                message = f"chunk {i}: its size prefix says {declared} bytes, its shape holds {expected}"
                raise _zarr_batch.ChunkFormatError(message, i)
        streams.append((source, start + prefix, length - prefix))
    return present, streams


def _head(source: Any, start: int, size: int) -> bytes:
    """The first `size` bytes of a stream: read from its file, or of its fetched bytes."""
    if isinstance(source, str):
        with open(source, "rb") as file:
            return os.pread(file.fileno(), size, start)
    return bytes(source[start : start + size])


async def _get(piece: Piece) -> np.ndarray | None:
    """A piece's stored bytes from its store (None where the key holds nothing)."""
    byte_range = None if piece.size is None else RangeByteRequest(piece.start, piece.start + piece.size)
    value = await piece.key.get(prototype=default_buffer_prototype(), byte_range=byte_range)
    return None if value is None else value.as_numpy_array().view(np.uint8).reshape(-1)


async def packed_bytes(
    sources: list[tuple[Any, int, int]], xp: Any, stream: dict[str, Any], into: Any = None, gds: bool = False
) -> Any:
    """The sources' bytes packed in one buffer of the output's kind (`into`, or a new one): files read on all cores
    (to the GPU through pinned staging, one copy per segment; through KvikIO for a `GDSStore`'s files, `gds`),
    fetched values joined and copied once."""
    total = sum(length for *_, length in sources)
    packed = xp.empty(max(total, 1), dtype=xp.uint8)[:total] if into is None else into[:total]
    files = [i for i, (source, *_) in enumerate(sources) if isinstance(source, str)]
    if gds and xp is not np and len(files) == len(sources):
        await asyncio.to_thread(_read_with_kvikio, sources, packed)
        return packed
    if len(files) == len(sources):
        await asyncio.to_thread(
            read_ranges,
            [s[0] for s in sources],
            np.array([s[1] for s in sources], dtype=np.uint64),
            np.array([s[2] for s in sources], dtype=np.uint64),
            packed,
            **stream,
        )
        return packed
    host = packed if xp is np else np.empty(total, dtype=np.uint8)
    at = 0
    for source, start, length in sources:
        if isinstance(source, str):
            with open(source, "rb") as file:
                file.seek(start)
                host[at : at + length] = np.frombuffer(file.read(length), dtype=np.uint8)
        else:
            host[at : at + length] = source[start : start + length]
        at += length
    if xp is not np:
        packed.set(host)
    return packed


def _read_with_kvikio(sources: list[tuple[str, int, int]], packed: Any) -> None:
    """The files' ranges read straight into device memory by KvikIO (GPUDirect Storage where the system has it, its
    compatibility mode otherwise), all reads in flight at once."""
    import kvikio

    files: dict[str, Any] = {}
    reads = []
    at = 0
    try:
        for path, start, length in sources:
            file = files.get(path) or files.setdefault(path, kvikio.CuFile(path, "r"))
            reads.append(file.pread(packed[at : at + length], length, start))
            at += length
        for read in reads:
            read.get()
    finally:
        for file in files.values():
            file.close()


def reads_with_kvikio(store: Any) -> bool:
    """Whether `store` is KvikIO's `GDSStore` on a system with GPUDirect Storage. In KvikIO's compatibility mode
    (no GDS) ferrocomp's reader takes its files: on the H200 machine it fetched 1 GiB of zarr chunks in 13 to 17 ms
    where KvikIO took 56 to 86 (bench/RESULTS.md)."""
    kvikio_zarr = sys.modules.get("kvikio.zarr")
    if kvikio_zarr is None or not isinstance(store, kvikio_zarr.GDSStore):
        return False
    import kvikio.defaults

    return not kvikio.defaults.is_compat_mode_preferred()
