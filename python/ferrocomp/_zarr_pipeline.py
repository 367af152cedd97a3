"""zarr selections read and written as one batch.

A read resolves every chunk key first, reads the bytes at once (files of a local store on all cores, into reused
pinned staging on the way to the GPU; other stores through their async ``get``), makes one host-to-device copy, one
batched decode over packed offsets and one scatter of the decoded chunks into ``out``. On the CPU, a local store's
chunks are each read, decoded and placed by one core, all cores at once, with nothing packed. Chunks of a sharded
array are the inner chunks of every shard the selection touches, batched together. A write gathers the chunks out of
the value in one pass, encodes them in one call, copies them to the host once and puts them concurrently.

`plan_read` says whether a pipeline's codecs allow it (else zarr's own per-chunk path runs); `read_batch` and
`write_batch` do it.
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from zarr.abc.store import RangeByteRequest
from zarr.codecs import BytesCodec, ShardingCodec, TransposeCodec
from zarr.codecs._v2 import V2Codec
from zarr.codecs.sharding import MAX_UINT_64
from zarr.core.buffer import default_buffer_prototype
from zarr.core.codec_pipeline import fill_value_or_default
from zarr.storage import LocalStore

import ferrocomp
from ferrocomp import _zarr_batch
from ferrocomp._ferrocomp import decode_ranges, read_ranges, rearrange_slabs, scatter
from ferrocomp._zarr_batch import NumcodecsLz4Format, StreamFormat

timings: dict[str, float] | None = None
"""Set to a dict to have each batched read add the seconds of its phases (waiting for the device after each):
"fetch" (keys resolved, bytes read and on the device), "decode" and "scatter". For benchmarks."""


in_place_on_host = False
"""Whether whole chunks decode in place on the host as on the GPU, where memory is scarce. Off: on the host a scatter
from a decoded copy measured as fast (set by the tests, which check the GPU's layout without a GPU)."""


@contextmanager
def _phase(name: str, on_gpu: bool) -> Iterator[None]:
    """Adds the seconds the block takes to `timings[name]`, when timings are kept."""
    if timings is None:
        yield
        return
    start = time.perf_counter()
    yield
    if on_gpu:
        import cupy

        cupy.cuda.Device().synchronize()
    timings[name] = timings.get(name, 0.0) + time.perf_counter() - start


@dataclass(frozen=True)
class ChunkLayout:
    """How a stored chunk's bytes become the chunk: an optional compressor, then elements laid out in storage order."""

    stream_format: StreamFormat | None
    """The compressed format (None: stored as is)."""
    dtype: np.dtype
    """The elements' type (native byte order)."""
    order: str
    """'C' or 'F': the memory order of the decoded elements."""
    axes: tuple[int, ...]
    """For each stored axis, the chunk axis it holds (a transpose codec's order; identity otherwise)."""
    inner: ChunkLayout | None = None
    """For a sharded array, the layout of the inner chunks."""
    sharding: ShardingCodec | None = None
    """The sharding codec, for its chunk shape and index."""

    def strides(self, shape: Sequence[int]) -> list[int]:
        """Byte strides of each chunk axis in a decoded chunk of `shape` (chunk axes)."""
        axes = self.axes or tuple(range(len(shape)))
        stored = [shape[axis] for axis in axes]
        itemsize = self.dtype.itemsize
        step = [0] * len(stored)
        run = itemsize
        for i in range(len(stored)) if self.order == "F" else reversed(range(len(stored))):
            step[i] = run
            run *= stored[i]
        strides = [0] * len(shape)
        for i, axis in enumerate(axes):
            strides[axis] = step[i]
        return strides


def plan_read(pipeline: Any, stream_format_of: Any) -> ChunkLayout | None:
    """The layout a pipeline's codecs give chunks, if the batched read handles them, else None.

    `stream_format_of(codec)` gives a bytes-to-bytes codec's stream format (None: not ferrocomp's)."""
    axes: tuple[int, ...] | None = None
    for codec in pipeline.array_array_codecs:
        if not isinstance(codec, TransposeCodec):
            return None
        order = tuple(codec.order)
        axes = order if axes is None else tuple(axes[i] for i in order)
    bytes_codecs = list(pipeline.bytes_bytes_codecs)
    stream_format = None
    if len(bytes_codecs) > 1:
        return None
    if bytes_codecs:
        stream_format = stream_format_of(bytes_codecs[0])
        if stream_format is None:
            return None
    array_bytes = pipeline.array_bytes_codec
    common = {"stream_format": stream_format, "dtype": np.dtype("u1"), "axes": axes or ()}
    if isinstance(array_bytes, BytesCodec):
        if array_bytes.endian is not None and array_bytes.endian.value != _native_endian():
            return None
        return ChunkLayout(order="C", **common)
    if isinstance(array_bytes, V2Codec) and not array_bytes.filters and array_bytes.compressor is None:
        return ChunkLayout(order="V2", **common)
    if isinstance(array_bytes, ShardingCodec) and not axes and stream_format is None:
        inner = plan_read(type(pipeline).from_codecs(array_bytes.codecs), stream_format_of)
        index_plain = [type(codec).__name__ for codec in array_bytes.index_codecs] in (
            ["BytesCodec"],
            ["BytesCodec", "Crc32cCodec"],
        )
        if inner is None or inner.inner is not None or not index_plain:
            return None
        return ChunkLayout(order="C", inner=inner, sharding=array_bytes, **common)
    return None


def _native_endian() -> str:
    return "little" if np.little_endian else "big"


def is_basic(selection: Any) -> bool:
    """Whether a selection tuple is slices and integers only (zarr's basic indexing)."""
    return all(type(s) is slice or isinstance(s, int | np.integer) for s in selection)


@dataclass
class Piece:
    """One chunk to read and where its elements go."""

    key: Any
    """The chunk's byte getter (a `StorePath`)."""
    start: int
    """Where its stored bytes start in the key's value."""
    size: int | None
    """Their length (None: to the end)."""
    shape: tuple[int, ...]
    """The decoded chunk's shape."""
    chunk_selection: tuple[Any, ...]
    out_selection: tuple[Any, ...]
    fill_value: Any


async def read_batch(layout: ChunkLayout, batch_info: list[tuple[Any, Any, Any, Any, bool]], out: Any) -> None:
    """Read every chunk of `batch_info` (basic selections) into `out`, a C- or F-contiguous numpy or CuPy array, in
    one batch."""
    spec = batch_info[0][1]
    dtype = np.dtype(spec.dtype.to_native_dtype())
    layout = _with_dtype(layout, dtype, spec.order)
    pieces: list[Piece] = []
    if layout.sharding is not None:
        pieces = await _inner_pieces(layout, batch_info)
        layout = _with_dtype(layout.inner, dtype, spec.order)
    else:
        for key, chunk_spec, chunk_selection, out_selection, _ in batch_info:
            fill = fill_value_or_default(chunk_spec)
            pieces.append(Piece(key, 0, None, tuple(chunk_spec.shape), chunk_selection, out_selection, fill))
    await _fetch_decode_scatter(layout, pieces, out)


def _with_dtype(layout: ChunkLayout, dtype: np.dtype, order: str) -> ChunkLayout:
    """`layout` for elements of `dtype`; a format 2 codec's memory order is the array's."""
    return replace(layout, dtype=dtype, order=order if layout.order == "V2" else layout.order)


async def _inner_pieces(layout: ChunkLayout, batch_info: list[tuple[Any, Any, Any, Any, bool]]) -> list[Piece]:
    """The inner chunks of every shard in the batch that the selection touches, with their selections."""
    sharding = layout.sharding
    pieces = []
    indexes = await asyncio.gather(*(_shard_index(sharding, key, spec) for key, spec, *_ in batch_info))
    for index, (key, spec, chunk_selection, out_selection, _) in zip(indexes, batch_info, strict=True):
        inner_shape = tuple(sharding.chunk_shape)
        fill = fill_value_or_default(spec)
        per_shard = tuple(s // c for s, c in zip(spec.shape, inner_shape, strict=True))
        for coords in np.ndindex(*per_shard):
            inner_sel, out_sel = _intersect(chunk_selection, out_selection, coords, inner_shape)
            if inner_sel is None:
                continue
            start, size = (MAX_UINT_64, MAX_UINT_64) if index is None else index[coords]
            present = start != MAX_UINT_64
            pieces.append(Piece(key if present else None, int(start), int(size), inner_shape, inner_sel, out_sel, fill))
    return pieces


async def _shard_index(sharding: ShardingCodec, key: Any, spec: Any) -> np.ndarray | None:
    """A shard's index as (chunk coords..., 2) offsets and lengths, or None for a missing shard."""
    per_shard = sharding._get_chunks_per_shard(spec)
    index = await sharding._load_shard_index_maybe(key, per_shard)
    return None if index is None else index.offsets_and_lengths


def _intersect(
    chunk_selection: tuple[Any, ...], out_selection: tuple[Any, ...], coords: tuple[int, ...], inner: tuple[int, ...]
) -> tuple[tuple[Any, ...] | None, tuple[Any, ...]]:
    """The part of a shard's selection in the inner chunk at `coords`, and where it goes in `out`."""
    inner_sel, out_sel = [], []
    out_axes = iter(out_selection)
    for sel, c, n in zip(chunk_selection, coords, inner, strict=True):
        lo, hi = c * n, (c + 1) * n
        if isinstance(sel, int | np.integer):
            if not lo <= sel < hi:
                return None, ()
            inner_sel.append(int(sel) - lo)
            continue
        out_slice = next(out_axes)
        step = sel.step or 1
        start = sel.start if sel.start >= lo else sel.start + -(-(lo - sel.start) // step) * step
        stop = min(sel.stop, hi)
        count = len(range(start, stop, step))
        if count == 0:
            return None, ()
        inner_sel.append(slice(start - lo, stop - lo, step))
        offset = out_slice.start + (start - sel.start) // step
        out_sel.append(slice(offset, offset + count, 1))
    return tuple(inner_sel), tuple(out_sel)


async def _fetch_decode_scatter(layout: ChunkLayout, pieces: list[Piece], out: Any) -> None:
    """Fetch the present pieces' bytes into one packed buffer, decode them in one call, scatter them into `out`;
    fill the missing pieces' places with their fill values. A bad chunk raises an error naming its key."""
    on_gpu = _zarr_batch.is_device_array(out)
    device = None if on_gpu else _zarr_batch.CPU
    codec, lock = _zarr_batch.codec_for(layout.stream_format, device=device) if layout.stream_format else (None, None)
    stream = {"cuda_stream": codec.cuda_stream} if on_gpu and codec is not None else {}
    with _zarr_batch.numbered(range(len(pieces)), name=lambda i: _name(pieces[i])), _ordered_on(stream):
        await _fetch_decode_scatter_on(layout, pieces, out, codec, lock, stream)


@contextmanager
def _ordered_on(stream: dict[str, Any]) -> Iterator[None]:
    """With a GPU codec's stream: CuPy's work in the block goes to that stream, which first waits for zarr's (the
    legacy default stream, where `out` was made), so every step of a batch is ordered after the one before."""
    if not stream:
        yield
        return
    import cupy

    ours = cupy.cuda.ExternalStream(stream["cuda_stream"])
    zarrs = cupy.cuda.Event(disable_timing=True)
    zarrs.record(cupy.cuda.Stream.null)
    ours.wait_event(zarrs)
    with ours:
        yield


async def _fetch_decode_scatter_on(
    layout: ChunkLayout, pieces: list[Piece], out: Any, codec: Any, lock: Any, stream: dict[str, Any]
) -> None:
    on_gpu = _zarr_batch.is_device_array(out)
    xp = _zarr_batch.array_module(out)
    with _phase("fetch", on_gpu):
        present, sources = await _locate(pieces, layout)
    for piece in pieces:
        if piece.key is None:
            out[piece.out_selection] = piece.fill_value
    if not present:
        return
    itemsize = layout.dtype.itemsize
    flat = (out if out.flags.c_contiguous else out.T).reshape(-1).view(xp.uint8)
    in_place = _in_place_order(pieces, present, out, itemsize) if on_gpu or in_place_on_host else None
    if in_place is not None:
        where = {piece: k for k, piece in enumerate(present)}
        sources = [sources[where[i]] for i in in_place]
        present = in_place
    decoded_sizes = [math.prod(pieces[i].shape) * itemsize for i in present]
    out_offsets = np.concatenate([[0], np.cumsum(decoded_sizes, dtype=np.int64)])
    gds = _reads_with_kvikio(getattr(pieces[present[0]].key, "store", None))
    if codec is not None and not on_gpu and in_place is None and all(isinstance(s[0], str) for s in sources):
        # Local files on the CPU: each chunk read, decoded and placed by one core while in its cache.
        boxes = _boxes(layout, [pieces[i] for i in present], out_offsets, out)
        boxes[:, 0] -= out_offsets[:-1]
        with _phase("decode", on_gpu), lock, _zarr_batch.numbered(present):
            decode_ranges(
                codec,
                [s[0] for s in sources],
                np.array([s[1] for s in sources], dtype=np.uint64),
                np.array([s[2] for s in sources], dtype=np.uint64),
                np.array(decoded_sizes, dtype=np.uint64),
                flat,
                itemsize,
                boxes,
            )
        return
    if codec is None:
        _check_sizes(pieces, present, [s[2] for s in sources], decoded_sizes)
        with _phase("fetch", on_gpu):
            decoded = await _packed_bytes(sources, xp, stream, flat if in_place is not None else None, gds)
    else:
        with _phase("fetch", on_gpu):
            packed = await _packed_bytes(sources, xp, stream, gds=gds)
        decoded = flat if in_place is not None else xp.empty(int(out_offsets[-1]), dtype=xp.uint8)
        src_offsets = np.concatenate([[0], np.cumsum([s[2] for s in sources], dtype=np.int64)])
        with _phase("decode", on_gpu), lock, _zarr_batch.numbered(present):
            sizes = codec.decode_packed(packed, src_offsets, decoded, out_offsets)
        _check_sizes(pieces, present, np.asarray(sizes).tolist(), decoded_sizes)
    with _phase("scatter", on_gpu):
        _scatter(layout, [pieces[i] for i in present], out_offsets, out, flat, decoded, in_place is not None, stream)


def _scatter(
    layout: ChunkLayout,
    pieces: list[Piece],
    out_offsets: np.ndarray,
    out: Any,
    flat: Any,
    decoded: Any,
    in_place: bool,
    stream: dict[str, Any],
) -> None:
    """Move the decoded pieces to their places in `out` (`flat` its bytes): from `decoded` in one scatter, or, where
    they were decoded in place, slab by slab."""
    itemsize = layout.dtype.itemsize
    xp = _zarr_batch.array_module(out)
    boxes = _boxes(layout, pieces, out_offsets, out)
    if not in_place:
        scatter(decoded, flat, itemsize, boxes, **stream)
        return
    # Decoded in place, slab by slab of rows: each slab's chunks are laid out one after the other where the slab
    # goes; a slab of several chunks is copied aside and scattered back, all slabs in one call.
    bounds = _slab_bounds(pieces)
    c_order = layout.order == "C" and list(layout.axes) in ([], sorted(layout.axes))
    moved = [(first, last) for first, last in bounds if last - first > 1 or not c_order]
    if not moved:
        return  # chunks of whole rows, in C order: already where they go
    boxes[:, 0] -= out_offsets[np.repeat([first for first, _ in bounds], [last - first for first, last in bounds])]
    slabs = np.array([(out_offsets[first], out_offsets[last], first, last) for first, last in moved], dtype=np.int64)
    staging = xp.empty(int((slabs[:, 1] - slabs[:, 0]).max()), dtype=xp.uint8)
    rearrange_slabs(flat, staging, itemsize, boxes, slabs, **stream)


def _in_place_order(pieces: list[Piece], present: list[int], out: Any, itemsize: int) -> list[int] | None:
    """The pieces in `out`'s memory order where they can be decoded straight into it: whole chunks, all present,
    tiling a C-contiguous `out` so that each slab of rows (the chunks sharing a first row) takes exactly its bytes."""
    if not out.flags.c_contiguous or len(present) != len(pieces):
        return None
    for piece in pieces:
        whole = all(
            isinstance(s, slice) and s.indices(n) == (0, n, 1)
            for s, n in zip(piece.chunk_selection, piece.shape, strict=True)
        )
        if not whole:
            return None
    order = sorted(present, key=lambda i: tuple(s.start for s in pieces[i].out_selection))
    nbytes = [math.prod(pieces[i].shape) * itemsize for i in order]
    if sum(nbytes) != out.nbytes:
        return None
    row_bytes = out.nbytes // out.shape[0]
    at = 0
    ordered = [pieces[i] for i in order]
    for first, last in _slab_bounds(ordered):
        rows = ordered[first].shape[0]
        if ordered[first].out_selection[0].start * row_bytes != at or sum(nbytes[first:last]) != rows * row_bytes:
            return None
        at += rows * row_bytes
    return order


def _slab_bounds(pieces: list[Piece]) -> list[tuple[int, int]]:
    """[first, last) index ranges of consecutive pieces that start on the same row of the output."""
    bounds, first = [], 0
    for i in range(1, len(pieces) + 1):
        if i == len(pieces) or pieces[i].out_selection[0].start != pieces[first].out_selection[0].start:
            bounds.append((first, i))
            first = i
    return bounds


def _check_sizes(pieces: list[Piece], present: list[int], got: list[int], expected: list[int]) -> None:
    for i, a, b in zip(present, got, expected, strict=True):
        if a != b:
            raise ferrocomp.DecodeError(f"chunk {i}: decodes to {a} bytes, its shape holds {b}", i)


def _name(piece: Piece) -> str:
    """The piece's key in its store (with its byte range inside a shard)."""
    key = str(getattr(piece.key, "path", piece.key))
    return key if piece.size is None else f"{key}[{piece.start}:{piece.start + piece.size}]"


async def _locate(pieces: list[Piece], layout: ChunkLayout) -> tuple[list[int], list[tuple[Any, int, int]]]:
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


async def _packed_bytes(
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


def _reads_with_kvikio(store: Any) -> bool:
    """Whether `store` is KvikIO's `GDSStore` on a system with GPUDirect Storage. In KvikIO's compatibility mode
    (no GDS) ferrocomp's reader takes its files: on the H200 machine it fetched 1 GiB of zarr chunks in 13 to 17 ms
    where KvikIO took 56 to 86 (bench/RESULTS.md)."""
    kvikio_zarr = sys.modules.get("kvikio.zarr")
    if kvikio_zarr is None or not isinstance(store, kvikio_zarr.GDSStore):
        return False
    import kvikio.defaults

    return not kvikio.defaults.is_compat_mode_preferred()


def _boxes(layout: ChunkLayout, pieces: list[Piece], offsets: np.ndarray, out: Any) -> np.ndarray:
    """One row per piece for `scatter`: source and destination offsets, shape, source and destination strides.
    An integer in a chunk selection picks one plane (zarr drops that axis from `out`)."""
    ndim = len(pieces[0].shape)
    out_shape, out_strides = out.shape, out.strides  # CuPy builds these tuples on every access
    rows = []
    strides_of: dict[tuple[int, ...], list[int]] = {}
    for piece, base in zip(pieces, offsets[:-1].tolist(), strict=False):
        strides = strides_of.get(piece.shape) or strides_of.setdefault(piece.shape, layout.strides(piece.shape))
        src, dst = int(base), 0
        shape, src_strides, dst_strides = [], [], []
        out_axes = iter(range(len(out_shape)))
        for axis, sel in enumerate(piece.chunk_selection):
            if isinstance(sel, int | np.integer):
                src += int(sel) * strides[axis]
                continue
            start, stop, step = sel.indices(piece.shape[axis])
            j = next(out_axes)
            out_start, _, out_step = piece.out_selection[j].indices(out_shape[j])
            src += start * strides[axis]
            dst += out_start * out_strides[j]
            shape.append(len(range(start, stop, step)))
            src_strides.append(step * strides[axis])
            dst_strides.append(out_step * out_strides[j])
        pad = ndim - len(shape)
        rows.append([src, dst, *shape, *[1] * pad, *src_strides, *[0] * pad, *dst_strides, *[0] * pad])
    return np.array(rows, dtype=np.int64).reshape(len(pieces), 2 + 3 * ndim)


async def write_batch(
    layout: ChunkLayout,
    encode_options: tuple[tuple[str, Any], ...],
    batch_info: list[tuple[Any, Any, Any, Any, bool]],
    value: Any,
) -> None:
    """Write the chunks of `batch_info`, each set whole from `value` (a C- or F-contiguous numpy or CuPy array of the
    selection's shape), in one batch; chunks equal to the fill value are deleted unless the array writes empty chunks.
    """
    spec = batch_info[0][1]
    dtype = np.dtype(spec.dtype.to_native_dtype())
    layout = _with_dtype(layout, dtype, spec.order)
    on_gpu = _zarr_batch.is_device_array(value)
    fill = fill_value_or_default(spec)
    pieces = [Piece(key, 0, None, tuple(s.shape), cs, os_, fill) for key, s, cs, os_, _ in batch_info]
    codec, lock = (
        _zarr_batch.codec_for(layout.stream_format, encode_options, None if on_gpu else _zarr_batch.CPU)
        if layout.stream_format
        else (None, None)
    )
    stream = {"cuda_stream": codec.cuda_stream} if on_gpu and codec is not None else {}
    with _ordered_on(stream):
        values, empty = _gather_encode(layout, codec, lock, pieces, value, stream, spec.config.write_empty_chunks)
    prototype = default_buffer_prototype()
    kept = [i for i in range(len(pieces)) if not empty[i]]
    await asyncio.gather(
        *(pieces[i].key.set(prototype.buffer.from_array_like(data)) for i, data in zip(kept, values, strict=True)),
        *(pieces[i].key.delete() for i in range(len(pieces)) if empty[i]),
    )


def _gather_encode(
    layout: ChunkLayout,
    codec: Any,
    lock: Any,
    pieces: list[Piece],
    value: Any,
    stream: dict[str, Any],
    write_empty: bool,
) -> tuple[list[np.ndarray], Any]:
    """The pieces gathered out of `value` in their stored layout and encoded: each stored one's framed bytes on the
    host, and which pieces are all the fill value (not stored)."""
    xp = _zarr_batch.array_module(value)
    dtype = layout.dtype
    fill = pieces[0].fill_value
    chunk_bytes = math.prod(pieces[0].shape) * dtype.itemsize
    offsets = np.arange(len(pieces) + 1, dtype=np.int64) * chunk_bytes
    packed = xp.empty(len(pieces) * chunk_bytes, dtype=xp.uint8)
    if any(not _whole(piece) for piece in pieces):  # edge chunks: what lies past the array is the fill value
        packed.view(dtype)[...] = fill
    boxes = _boxes(layout, pieces, offsets, value)
    ndim = len(pieces[0].shape)
    gather = np.concatenate(
        [boxes[:, [1, 0]], boxes[:, 2 : 2 + ndim], boxes[:, 2 + 2 * ndim :], boxes[:, 2 + ndim : 2 + 2 * ndim]], axis=1
    )
    flat = (value if value.flags.c_contiguous else value.T).reshape(-1).view(xp.uint8)
    scatter(flat, packed, dtype.itemsize, gather, **stream)
    chunks = packed.view(dtype).reshape(len(pieces), -1)
    empty = (chunks == fill) | (xp.isnan(chunks) & np.isnan(fill)) if dtype.kind in "fc" else chunks == fill
    empty = empty.all(axis=1) if not write_empty else xp.zeros(len(pieces), dtype=bool)
    empty = empty.get() if xp is not np else empty
    kept = [i for i in range(len(pieces)) if not empty[i]]
    return (_encode(layout, codec, lock, packed, offsets, kept, stream, xp) if kept else []), empty


def _whole(piece: Piece) -> bool:
    """Whether a piece's selection covers its whole chunk."""
    return all(
        isinstance(s, slice) and s.indices(n) == (0, n, 1)
        for s, n in zip(piece.chunk_selection, piece.shape, strict=True)
    )


def _encode(
    layout: ChunkLayout,
    codec: Any,
    lock: Any,
    packed: Any,
    offsets: np.ndarray,
    kept: list[int],
    stream: dict[str, Any],
    xp: Any,
) -> list[np.ndarray]:
    """The chunks `kept` of `packed` encoded in one call and framed, as host arrays: encoded into slots of one device
    buffer, packed together by one scatter, copied to the host at once."""
    chunk_bytes = int(offsets[1])
    chunks = [packed[offsets[i] : offsets[i + 1]] for i in kept]
    if codec is None:
        encoded_sizes = [chunk_bytes] * len(kept)
        compact = xp.concatenate(chunks) if len(chunks) > 1 else chunks[0]
    else:
        slot = codec.max_compressed_size(chunk_bytes)
        slots = xp.empty(len(kept) * slot, dtype=xp.uint8)
        with lock:
            encoded = codec.encode(chunks, out=[slots[i * slot : (i + 1) * slot] for i in range(len(kept))])
        encoded_sizes = [int(array.buffer_size) for array in encoded]
        starts = np.concatenate([[0], np.cumsum(encoded_sizes)]).astype(np.int64)
        compact = xp.empty(max(int(starts[-1]), 1), dtype=xp.uint8)
        boxes = np.array(
            [[i * slot, int(starts[i]), size, 1, 1] for i, size in enumerate(encoded_sizes)], dtype=np.int64
        ).reshape(-1, 5)
        scatter(slots, compact, 1, boxes, **stream)
    host = compact.get() if xp is not np else compact
    starts = np.concatenate([[0], np.cumsum(encoded_sizes)]).astype(np.int64).tolist()
    framed = []
    for size, start in zip(encoded_sizes, starts, strict=False):
        data = host[start : start + size]
        framed.append(layout.stream_format.frame(data, chunk_bytes) if layout.stream_format else data)
    return framed
