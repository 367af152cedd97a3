"""zarr selections read and written as one batch.

A read resolves every chunk key first, reads the bytes at once (files of a local store on all cores, into reused
pinned staging on the way to the GPU; other stores through their async ``get``), makes one host-to-device copy, one
batched decode over packed offsets and one scatter of the decoded chunks into ``out``. On the CPU, a local store's
chunks are each read, decoded and placed by one core, all cores at once, with nothing packed. Chunks of a sharded
array are the inner chunks of every shard the selection touches, batched together. A write gathers the chunks out of
the value in one pass, encodes them in one call, copies them to the host once and puts them concurrently.

`plan_read` says whether a pipeline's codecs allow it (else zarr's own per-chunk path runs); `read_batch` and
`write_batch` do it. The read is here; the chunk layout is `_zarr_layout`'s, finding and reading the stored bytes
`_zarr_fetch`'s, and the write `_zarr_write`'s.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from zarr.codecs import ShardingCodec
from zarr.codecs.sharding import MAX_UINT_64
from zarr.core.codec_pipeline import fill_value_or_default

import ferrocomp
from ferrocomp import _zarr_batch
from ferrocomp._ferrocomp import decode_ranges, rearrange_slabs, scatter
from ferrocomp._zarr_fetch import locate, packed_bytes, reads_with_kvikio
from ferrocomp._zarr_layout import ChunkLayout, Piece, is_basic, plan_read, scatter_boxes, with_dtype
from ferrocomp._zarr_write import write_batch

__all__ = ["ChunkLayout", "Piece", "in_place_on_host", "is_basic", "plan_read", "read_batch", "timings", "write_batch"]

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


async def read_batch(layout: ChunkLayout, batch_info: list[tuple[Any, Any, Any, Any, bool]], out: Any) -> None:
    """Read every chunk of `batch_info` (basic selections) into `out`, a C- or F-contiguous numpy or CuPy array, in
    one batch."""
    spec = batch_info[0][1]
    dtype = np.dtype(spec.dtype.to_native_dtype())
    layout = with_dtype(layout, dtype, spec.order)
    pieces: list[Piece] = []
    if layout.sharding is not None:
        pieces = await _inner_pieces(layout, batch_info)
        layout = with_dtype(layout.inner, dtype, spec.order)
    else:
        for key, chunk_spec, chunk_selection, out_selection, _ in batch_info:
            fill = fill_value_or_default(chunk_spec)
            pieces.append(Piece(key, 0, None, tuple(chunk_spec.shape), chunk_selection, out_selection, fill))
    await _fetch_decode_scatter(layout, pieces, out)


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
    with _zarr_batch.numbered(range(len(pieces)), name=lambda i: _name(pieces[i])), _zarr_batch.ordered_on(stream):
        await _fetch_decode_scatter_on(layout, pieces, out, codec, lock, stream)


async def _fetch_decode_scatter_on(
    layout: ChunkLayout, pieces: list[Piece], out: Any, codec: Any, lock: Any, stream: dict[str, Any]
) -> None:
    on_gpu = _zarr_batch.is_device_array(out)
    xp = _zarr_batch.array_module(out)
    with _phase("fetch", on_gpu):
        present, sources = await locate(pieces, layout)
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
    gds = reads_with_kvikio(getattr(pieces[present[0]].key, "store", None))
    if codec is not None and not on_gpu and in_place is None and all(isinstance(s[0], str) for s in sources):
        # Local files on the CPU: each chunk read, decoded and placed by one core while in its cache.
        boxes = scatter_boxes(layout, [pieces[i] for i in present], out_offsets, out)
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
            decoded = await packed_bytes(sources, xp, stream, flat if in_place is not None else None, gds)
    else:
        with _phase("fetch", on_gpu):
            packed = await packed_bytes(sources, xp, stream, gds=gds)
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
    boxes = scatter_boxes(layout, pieces, out_offsets, out)
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
    if not all(piece.covers_chunk() for piece in pieces):
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
