"""Compressed-chunk formats (numcodecs' and zarr's) as batches of ferrocomp RAW streams.

ferrocomp parses its own formats: it finds every stream's decoded size (a Blosc header, the end of a zlib stream or
gzip member) and checks it. What is left here is framing that is not ferrocomp's (numcodecs' LZ4 puts a 4-byte size
in front of the block). `decode_chunks` and
`encode_chunks` turn a whole batch of chunks into one ferrocomp call; the chunks and results are numpy arrays on
the host (ferrocomp's CPU path) or CuPy arrays on the GPU, the same kind in as out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

import ferrocomp

LZ4_MAX_RATIO = 255
"""The most bytes one byte of an LZ4 block can expand to (a match of 255-length runs per byte)."""
CPU = "cpu"
"""The device of a codec for host arrays (ferrocomp's CPU path)."""


class ChunkFormatError(ferrocomp.DecodeError):
    """A chunk whose framing (outside ferrocomp's format) is truncated or declares a size its stream does not hold."""


def is_device_array(array: Any) -> bool:
    """Whether `array` lives in GPU memory (exposes the CUDA array interface)."""
    return hasattr(array, "__cuda_array_interface__")


def array_module(array: Any) -> Any:
    """numpy for host arrays, CuPy for device arrays."""
    if is_device_array(array):
        import cupy

        return cupy
    return np


def as_bytes_array(array: Any, like: Any) -> Any:
    """`array` (a ferrocomp Array or any array) as a 1-D uint8 array in the same memory kind as `like`."""
    xp = array_module(like)
    if xp is np and is_device_array(array):
        array = array.cpu()
    return xp.asarray(array).view(xp.uint8).reshape(-1)


@dataclass(frozen=True)
class StreamFormat:
    """A chunk format whose chunks are exactly one ferrocomp RAW stream."""

    algorithm: str
    """ferrocomp's name for the codec that decodes the payload."""
    options: tuple[tuple[str, Any], ...] = ()
    """Codec options that select this format's variant (for example Deflate's wrapper)."""

    max_encode_size = 1 << 24
    """Largest chunk ferrocomp's encoder takes (LZ4's 16 MiB; Deflate compresses at most 64 KiB at a time)."""

    def decode(self, chunks: Sequence[Any]) -> list[Any]:
        """The chunks decoded in one call, ferrocomp finding their sizes; slices of one buffer like the chunks."""
        codec, lock = codec_for(self, device=device_of(chunks[0]))
        with lock:
            decoded = codec.decode(list(chunks))
        return [as_bytes_array(array, chunks[0]) for array in decoded]

    def frame(self, encoded: Any, decoded_size: int) -> Any:
        """The chunk for an encoded payload of `decoded_size` bytes."""
        return encoded


class NumcodecsLz4Format(StreamFormat):
    """numcodecs' LZ4: the decoded size (u32, little-endian), then one LZ4 block."""

    prefix_size = 4

    def decode(self, chunks: Sequence[Any]) -> list[Any]:
        """The blocks decoded into slices of one buffer sized by their prefixes, each size checked."""
        prefixes = read_heads(chunks, self.prefix_size)
        sizes = [
            self.declared_size(index, prefix, chunk.size)
            for index, (prefix, chunk) in enumerate(zip(prefixes, chunks, strict=True))
        ]
        xp = array_module(chunks[0])
        outputs = split_buffer(xp.empty(sum(sizes), dtype=xp.uint8), sizes)
        decode_into(self, [chunk[self.prefix_size :] for chunk in chunks], outputs, "its size prefix says")
        return outputs

    def declared_size(self, index: int, prefix: bytes, length: int) -> int:
        """The size prefix of chunk `index`, checked against what its block can hold."""
        if len(prefix) < self.prefix_size:
            raise ChunkFormatError(f"chunk {index}: has {length} bytes, shorter than its 4-byte size prefix", index)
        declared = int.from_bytes(prefix, "little")
        if declared > (length - self.prefix_size) * LZ4_MAX_RATIO:
            raise ChunkFormatError(
                f"chunk {index}: declares {declared} decoded bytes, more than its {length - 4}-byte LZ4 block can hold",
                index,
            )
        return declared

    def frame(self, encoded: Any, decoded_size: int) -> Any:
        """The size prefix in front of the block."""
        xp = array_module(encoded)
        prefix = xp.asarray(np.frombuffer(decoded_size.to_bytes(4, "little"), np.uint8))
        return xp.concatenate([prefix, encoded])


class DeflateFormat(StreamFormat):
    """A zlib stream or gzip member per chunk; ferrocomp compresses at most 64 KiB into one stream."""

    max_encode_size = 1 << 16


BLOSC_HEADER_SIZE = 16


class BloscFormat(StreamFormat):
    """A Blosc 1 chunk (header, then blocks), which ferrocomp parses and checks itself."""

    max_encode_size = (1 << 31) - 1 - BLOSC_HEADER_SIZE


LZ4_BLOCK = StreamFormat("LZ4")
NUMCODECS_LZ4 = NumcodecsLz4Format("LZ4")
ZLIB_STREAM = DeflateFormat("Deflate", (("wrapper", "zlib"),))
GZIP_MEMBER = DeflateFormat("Deflate", (("wrapper", "gzip"),))
BLOSC_CHUNK = BloscFormat("Blosc")
ZSTD_FRAME = StreamFormat("Zstd")


_codecs: dict[tuple[Any, ...], tuple[Any, threading.Lock]] = {}
_codecs_lock = threading.Lock()


def device_of(array: Any) -> str | None:
    """The ferrocomp device for a codec working on `array`: the CPU for host arrays, the default GPU otherwise."""
    return None if is_device_array(array) else CPU


def make_codec(
    stream_format: StreamFormat, options: tuple[tuple[str, Any], ...] = (), device: str | None = None
) -> Any:
    """A ferrocomp RAW codec for `stream_format` with extra options, on `device` (None: ferrocomp's default GPU)."""
    return ferrocomp.Codec(
        algorithm=stream_format.algorithm,
        bitstream_kind=ferrocomp.BitstreamKind.RAW,
        device_id=device,
        **dict(stream_format.options + options),
    )


def codec_for(
    stream_format: StreamFormat, options: tuple[tuple[str, Any], ...] = (), device: str | None = None
) -> tuple[Any, threading.Lock]:
    """The shared codec for a format, extra options and device, and the lock that gives one thread at a time its use."""
    key = (stream_format.algorithm, stream_format.options, options, device)
    with _codecs_lock:
        if key not in _codecs:
            _codecs[key] = (make_codec(stream_format, options, device), threading.Lock())
        return _codecs[key]


@contextmanager
def ordered_on(stream: dict[str, Any]) -> Iterator[None]:
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


def decode_into(stream_format: StreamFormat, streams: Sequence[Any], outputs: Sequence[Any], declared: str) -> None:
    """Decode `streams` into the caller's `outputs` in one call; each must fill its output exactly, else a
    `ferrocomp.DecodeError` names the first that does not (`declared` says who gave the output's size)."""
    codec, lock = codec_for(stream_format, device=device_of(outputs[0]) if outputs else CPU)
    with lock:
        decoded = codec.decode(list(streams), out=list(outputs))
    for index, (array, output) in enumerate(zip(decoded, outputs, strict=True)):
        if array.buffer_size != output.size:
            raise ferrocomp.DecodeError(
                f"chunk {index}: decodes to {array.buffer_size} bytes, but {declared} {output.size}", index
            )


@contextmanager
def numbered(indices: Sequence[int], what: str = "chunk", name: Callable[[int], str] | None = None) -> Iterator[None]:
    """Re-raise a ferrocomp error about chunk i of a batch as one about `what` `indices[i]` (the caller's numbering),
    followed by `name(indices[i])` where given (a chunk's key, say)."""
    try:
        yield
    except ferrocomp.ChunkError as error:
        if error.chunk is None or not 0 <= error.chunk < len(indices):
            raise
        reason = str(error).removeprefix(f"chunk {error.chunk}: ")
        index = indices[error.chunk]
        named = f"{name(index)}: " if name else ""
        raise type(error)(f"{what} {index}: {named}{reason}", index, error.status) from error


def read_heads(chunks: Sequence[Any], size: int) -> list[bytes]:
    """The first `size` bytes of every chunk (fewer where a chunk is shorter), one copy off the GPU for a batch."""
    if not chunks:
        return []
    pieces = [chunk[:size] for chunk in chunks]
    xp = array_module(chunks[0])
    joined = xp.concatenate(pieces) if pieces else xp.empty(0, xp.uint8)
    host = bytes(joined.get() if xp is not np else joined)
    ends = np.cumsum([0] + [piece.size for piece in pieces]).tolist()
    return [host[start:end] for start, end in zip(ends[:-1], ends[1:], strict=True)]


def split_buffer(buffer: Any, sizes: Sequence[int]) -> list[Any]:
    """Consecutive slices of `buffer` with the given sizes."""
    offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    return [buffer[int(start) : int(end)] for start, end in zip(offsets[:-1], offsets[1:], strict=True)]


def decode_chunks(stream_format: StreamFormat, chunks: Sequence[Any]) -> list[Any]:
    """Decode a batch of chunks of one format in one ferrocomp call; each result is a uint8 slice of one buffer."""
    return stream_format.decode(chunks) if chunks else []


def encode_chunks(
    stream_format: StreamFormat,
    chunks: Sequence[Any],
    options: tuple[tuple[str, Any], ...],
) -> list[Any]:
    """Encode a batch of uint8 chunks in one ferrocomp call and frame each result in the format."""
    if not chunks:
        return []
    codec, lock = codec_for(stream_format, options, device_of(chunks[0]))
    with lock:
        encoded = codec.encode(list(chunks))
    return [
        stream_format.frame(as_bytes_array(array, chunk), chunk.size)
        for array, chunk in zip(encoded, chunks, strict=True)
    ]
