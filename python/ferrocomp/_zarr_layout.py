"""Where a zarr array's chunk elements lie: the layout its pipeline's codecs give a stored chunk (`plan_read` says
whether the batched path handles them), the pieces of a selection, and the boxes that move them between chunks and
the array."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from zarr.codecs import BytesCodec, ShardingCodec, TransposeCodec
from zarr.codecs._v2 import V2Codec

from ferrocomp._zarr_batch import StreamFormat


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

    def covers_chunk(self) -> bool:
        """Whether the selection covers the whole chunk."""
        return all(
            isinstance(s, slice) and s.indices(n) == (0, n, 1)
            for s, n in zip(self.chunk_selection, self.shape, strict=True)
        )


def with_dtype(layout: ChunkLayout, dtype: np.dtype, order: str) -> ChunkLayout:
    """`layout` for elements of `dtype`; a format 2 codec's memory order is the array's."""
    return replace(layout, dtype=dtype, order=order if layout.order == "V2" else layout.order)


def scatter_boxes(layout: ChunkLayout, pieces: list[Piece], offsets: np.ndarray, out: Any) -> np.ndarray:
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
