"""zarr chunks written as one batch: gathered out of the value in one pass, encoded in one call, copied to the host
once and put concurrently."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import numpy as np
from zarr.core.buffer import default_buffer_prototype
from zarr.core.codec_pipeline import fill_value_or_default

from ferrocomp import _zarr_batch
from ferrocomp._ferrocomp import scatter
from ferrocomp._zarr_layout import ChunkLayout, Piece, scatter_boxes, with_dtype


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
    layout = with_dtype(layout, dtype, spec.order)
    on_gpu = _zarr_batch.is_device_array(value)
    fill = fill_value_or_default(spec)
    pieces = [Piece(key, 0, None, tuple(s.shape), cs, os_, fill) for key, s, cs, os_, _ in batch_info]
    codec, lock = (
        _zarr_batch.codec_for(layout.stream_format, encode_options, None if on_gpu else _zarr_batch.CPU)
        if layout.stream_format
        else (None, None)
    )
    stream = {"cuda_stream": codec.cuda_stream} if on_gpu and codec is not None else {}
    with _zarr_batch.ordered_on(stream):
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
    if any(not piece.covers_chunk() for piece in pieces):  # edge chunks: what lies past the array is the fill value
        packed.view(dtype)[...] = fill
    boxes = scatter_boxes(layout, pieces, offsets, value)
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
