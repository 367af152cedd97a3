"""zarr-python 3 codecs that decode and encode a whole batch of chunks in one ferrocomp call.

Each codec subclasses zarr's own (same name, same JSON, same bytes), so a store written through ferrocomp opens
with plain zarr and the other way round. They are registered under zarr's codec names through the ``zarr.codecs``
entry points and chosen the way zarr chooses any codec implementation, through ``zarr.config``:

    import ferrocomp.zarr
    with ferrocomp.zarr.enable():          # or: zarr.config.set({"codecs.gzip": "ferrocomp.zarr.GzipCodec", ...})
        data = zarr.open_array(store)[:]   # numpy; under zarr.config.enable_gpu() a CuPy array

`enable` also selects `BatchedPipeline`, zarr's batched pipeline that hands a zarr format 2 array's numcodecs
compressor (lz4, zlib, gzip, blosc, zstd) to the same batched codecs, and sets `codec_pipeline.batch_size`, the
number of chunks that go to ferrocomp in one call.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import zarr
import zarr.codecs
import zarr.codecs.numcodecs
import zarr.registry
from zarr.abc.codec import BytesBytesCodec, Codec
from zarr.codecs._v2 import V2Codec
from zarr.core.codec_pipeline import BatchedCodecPipeline

from ferrocomp import _zarr_batch, _zarr_pipeline
from ferrocomp._zarr_batch import (
    BLOSC_CHUNK,
    GZIP_MEMBER,
    NUMCODECS_LZ4,
    ZLIB_STREAM,
    ZSTD_FRAME,
    StreamFormat,
    array_module,
)

if TYPE_CHECKING:
    from donfig.config_obj import ConfigSet
    from zarr.abc.numcodec import Numcodec
    from zarr.abc.store import ByteGetter, ByteSetter
    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer, NDBuffer
    from zarr.core.indexing import SelectorTuple

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "Blosc",
    "BloscCodec",
    "GZip",
    "GzipCodec",
    "LZ4",
    "BatchedPipeline",
    "Zlib",
    "Zstd",
    "ZstdCodec",
    "enable",
    "register",
]

DEFAULT_BATCH_SIZE = 1024
"""Chunks per ferrocomp call that `enable` sets (zarr's own default is 1, one chunk at a time)."""

CODECS: dict[str, type[Codec]] = {}
"""Our codec class for each zarr codec name, filled in as the classes below are declared."""
V2_COMPRESSORS: dict[str, StreamFormat] = {
    "lz4": NUMCODECS_LZ4,
    "zlib": ZLIB_STREAM,
    "gzip": GZIP_MEMBER,
    "blosc": BLOSC_CHUNK,
    "zstd": ZSTD_FRAME,
}
"""The numcodecs compressor ids of zarr format 2 arrays that `BatchedPipeline` decodes with ferrocomp."""

ENCODE_LEVELS = (0, 1, 2, 2, 2, 2, 4, 4, 4, 5)
"""ferrocomp's Deflate level (nvCOMP's algorithm_type 0-5) for each zlib/gzip level 0-9."""
ZSTD_LEVELS = (4, 10)
"""The first zstd levels ferrocomp writes at its levels 2 and 3 (below the first: its fast level 1)."""
BLOSC_SHUFFLES = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
BLOSC_AUTOSHUFFLE = -1
"""numcodecs' shuffle that picks bit shuffle for 1-byte elements, byte shuffle for others."""


def _shuffle_code(shuffle: Any) -> int:
    """Blosc's shuffle as numcodecs' integer, from zarr's string, enum (zarr < 3.2) or an integer."""
    value = getattr(shuffle, "value", shuffle)
    return BLOSC_SHUFFLES[value] if isinstance(value, str) else int(value)


def _blosc_options(cname: Any, shuffle: Any, typesize: int) -> tuple[tuple[str, Any], ...] | None:
    """ferrocomp's Blosc options where it writes what is asked (LZ4 blocks, any shuffle), else None."""
    if str(getattr(cname, "value", cname)) not in ("lz4", "lz4hc"):
        return None
    code = _shuffle_code(shuffle)
    if code == BLOSC_AUTOSHUFFLE:
        code = BLOSC_SHUFFLES["bitshuffle" if typesize == 1 else "shuffle"]
    return (("typesize", typesize), ("shuffle", code))


class _BatchedStreamCodec(BytesBytesCodec):
    """A bytes-to-bytes codec whose batches go to ferrocomp in one call; the per-chunk methods are batches of one.

    A subclass names its `stream_format`, its `encode_options` (None: ferrocomp cannot write what is asked) and the
    numcodecs codec that writes chunks ferrocomp does not (Blosc chunks of zstd blocks, say).
    """

    stream_format: ClassVar[StreamFormat]
    is_fixed_size = False

    def __init_subclass__(
        cls,
        *,
        name: str | None = None,
        stream_format: StreamFormat | None = None,
        **kw: Any,
    ):
        super().__init_subclass__(**kw)
        if stream_format is not None:
            cls.stream_format = stream_format
        if name is not None:
            CODECS[name] = cls

    def encode_options(self, chunk_spec: ArraySpec) -> tuple[tuple[str, Any], ...] | None:
        """Options for ferrocomp's encoder, or None where it cannot write this codec's configuration."""
        return ()

    @property
    def numcodec(self) -> Numcodec:
        """The numcodecs codec for chunks ferrocomp does not write."""
        raise NotImplementedError

    def numcodec_input(self, chunk: np.ndarray, chunk_spec: ArraySpec) -> np.ndarray:
        """What the numcodecs codec is given to encode for a chunk's bytes."""
        return chunk

    async def decode(self, chunks_and_specs: Iterable[tuple[Buffer | None, ArraySpec]]) -> list[Buffer | None]:
        """Decode a batch of chunks with one ferrocomp call (missing chunks stay None)."""
        return await _run_present(self.decode_batch, chunks_and_specs)

    async def encode(self, chunks_and_specs: Iterable[tuple[Buffer | None, ArraySpec]]) -> list[Buffer | None]:
        """Encode a batch of chunks with one ferrocomp call (missing chunks stay None)."""
        return await _run_present(self.encode_batch, chunks_and_specs)

    async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        return (await self.decode([(chunk_bytes, chunk_spec)]))[0]

    async def _encode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        return (await self.encode([(chunk_bytes, chunk_spec)]))[0]

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        return self.decode_batch([chunk_bytes], [chunk_spec])[0]

    def _encode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        return self.encode_batch([chunk_bytes], [chunk_spec])[0]

    def decode_batch(self, buffers: list[Buffer], specs: list[ArraySpec]) -> list[Buffer]:
        """Decode chunks in one ferrocomp call."""
        chunks = [buffer.as_array_like() for buffer in buffers]
        decoded = _zarr_batch.decode_chunks(self.stream_format, chunks)
        return [spec.prototype.buffer.from_array_like(array) for array, spec in zip(decoded, specs, strict=True)]

    def encode_batch(self, buffers: list[Buffer], specs: list[ArraySpec]) -> list[Buffer]:
        """Encode chunks in one ferrocomp call; numcodecs takes those ferrocomp cannot write (by size or settings)."""
        chunks = [buffer.as_array_like() for buffer in buffers]
        options = self.encode_options(specs[0])
        fits = self.stream_format.max_encode_size
        encoded = _partition(
            [] if options is None else [i for i, chunk in enumerate(chunks) if chunk.size <= fits],
            len(chunks),
            lambda ours: _zarr_batch.encode_chunks(self.stream_format, [chunks[i] for i in ours], options or ()),
            lambda i: _on_host(lambda host: self.numcodec.encode(self.numcodec_input(host, specs[i])), chunks[i]),
        )
        return [spec.prototype.buffer.from_array_like(array) for array, spec in zip(encoded, specs, strict=True)]


def _partition(ours: list[int], count: int, batch: Any, single: Any) -> list[Any]:
    """`count` results: those at the indices `ours` from one `batch(ours)` call, the others from `single(index)`.
    A ferrocomp error names the failing chunk by its index among the `count`."""
    results = {}
    if ours:
        with _zarr_batch.numbered(ours):
            results = dict(zip(ours, batch(ours), strict=True))
    return [results[i] if i in results else single(i) for i in range(count)]


async def _run_present(batch: Any, chunks_and_specs: Iterable[tuple[Buffer | None, ArraySpec]]) -> list[Any]:
    """Run `batch` (in a worker thread) on the chunks that are not None, keeping None where they are."""
    pairs = list(chunks_and_specs)
    present = [i for i, (chunk, _) in enumerate(pairs) if chunk is not None]
    results: list[Any] = [None] * len(pairs)
    if present:
        done = await asyncio.to_thread(batch, [pairs[i][0] for i in present], [pairs[i][1] for i in present])
        for i, result in zip(present, done, strict=True):
            results[i] = result
    return results


def _on_host(function: Any, chunk: Any) -> Any:
    """`function` applied to a chunk's bytes on the host; the result as uint8 in the chunk's memory kind."""
    xp = array_module(chunk)
    host = chunk.get() if xp is not np else chunk
    result = np.frombuffer(function(host), dtype=np.uint8)
    return xp.asarray(result)


def _deflate_options(level: int) -> tuple[tuple[str, Any], ...]:
    """ferrocomp's Deflate level for a zlib/gzip level."""
    return (("algorithm_type", ENCODE_LEVELS[level]),)


def _zstd_options(level: int, checksum: bool) -> tuple[tuple[str, Any], ...] | None:
    """ferrocomp's Zstd level for a zstd level, or None where a content checksum is asked (numcodecs writes)."""
    if checksum:
        return None
    return (("algorithm_type", 1 + sum(level >= first for first in ZSTD_LEVELS)),)


class GzipCodec(_BatchedStreamCodec, zarr.codecs.GzipCodec, name="gzip", stream_format=GZIP_MEMBER):
    """zarr's gzip codec (one gzip member per chunk), batched through ferrocomp."""

    def encode_options(self, chunk_spec: ArraySpec) -> tuple[tuple[str, Any], ...]:
        """The Deflate level for the codec's gzip level."""
        return _deflate_options(self.level)

    @property
    def numcodec(self) -> Numcodec:
        """numcodecs' GZip at the codec's level."""
        return self._gzip_codec


class BloscCodec(_BatchedStreamCodec, zarr.codecs.BloscCodec, name="blosc", stream_format=BLOSC_CHUNK):
    """zarr's Blosc codec; ferrocomp decodes chunks of every compressor (blosclz, LZ4, snappy, zlib, zstd) and writes
    LZ4 ones."""

    def encode_options(self, chunk_spec: ArraySpec) -> tuple[tuple[str, Any], ...] | None:
        """ferrocomp's options where the codec asks for LZ4 blocks, else None (numcodecs writes)."""
        return _blosc_options(self.cname, self.shuffle, self.typesize)

    @property
    def numcodec(self) -> Numcodec:
        """numcodecs' Blosc with the codec's configuration."""
        return self._blosc_codec


class ZstdCodec(_BatchedStreamCodec, zarr.codecs.ZstdCodec, name="zstd", stream_format=ZSTD_FRAME):
    """zarr's zstd codec (zarr format 3's default): one or more frames per chunk, batched through ferrocomp."""

    def encode_options(self, chunk_spec: ArraySpec) -> tuple[tuple[str, Any], ...] | None:
        """ferrocomp's level for the codec's level; None (numcodecs writes) where a checksum is asked."""
        return _zstd_options(self.level, self.checksum)

    @property
    def numcodec(self) -> Numcodec:
        """numcodecs' Zstd with the codec's configuration."""
        return self._zstd_codec


class _NumcodecsStreamCodec(_BatchedStreamCodec):
    """The shared part of zarr's ``numcodecs.*`` wrappers: their numcodecs codec and its configuration."""

    @property
    def numcodec(self) -> Numcodec:
        """The wrapped numcodecs codec."""
        return self._codec


class _NumcodecsDeflateCodec(_NumcodecsStreamCodec):
    """The shared part of zarr's ``numcodecs.zlib`` and ``numcodecs.gzip`` wrappers: the Deflate level."""

    def encode_options(self, chunk_spec: ArraySpec) -> tuple[tuple[str, Any], ...]:
        """The Deflate level for the configured zlib/gzip level (numcodecs' default is 1)."""
        return _deflate_options(int(self.codec_config.get("level", 1)))


class LZ4(_NumcodecsStreamCodec, zarr.codecs.numcodecs.LZ4, name="numcodecs.lz4", stream_format=NUMCODECS_LZ4):
    """numcodecs' LZ4 in zarr format 3 (a 4-byte size, then an LZ4 block), batched through ferrocomp."""


class Zlib(_NumcodecsDeflateCodec, zarr.codecs.numcodecs.Zlib, name="numcodecs.zlib", stream_format=ZLIB_STREAM):
    """numcodecs' zlib in zarr format 3 (one zlib stream per chunk), batched through ferrocomp."""


class GZip(_NumcodecsDeflateCodec, zarr.codecs.numcodecs.GZip, name="numcodecs.gzip", stream_format=GZIP_MEMBER):
    """numcodecs' gzip in zarr format 3 (one gzip member per chunk), batched through ferrocomp."""


class Blosc(_NumcodecsStreamCodec, zarr.codecs.numcodecs.Blosc, name="numcodecs.blosc", stream_format=BLOSC_CHUNK):
    """numcodecs' Blosc in zarr format 3, batched through ferrocomp (see `BloscCodec` for what it writes)."""

    def encode_options(self, chunk_spec: ArraySpec) -> tuple[tuple[str, Any], ...] | None:
        """As `BloscCodec`; numcodecs treats the bytes it is given as of type size 1 unless configured."""
        config = self.codec_config
        return _blosc_options(
            config.get("cname", "lz4"),
            config.get("shuffle", 1),
            config.get("typesize") or 1,
        )


class Zstd(_NumcodecsStreamCodec, zarr.codecs.numcodecs.Zstd, name="numcodecs.zstd", stream_format=ZSTD_FRAME):
    """numcodecs' Zstd in zarr format 3, batched through ferrocomp."""

    def encode_options(self, chunk_spec: ArraySpec) -> tuple[tuple[str, Any], ...] | None:
        """ferrocomp's level for the configured level (numcodecs' default is 1)."""
        config = self.codec_config
        return _zstd_options(int(config.get("level", 1)), bool(config.get("checksum", False)))


@dataclass(frozen=True)
class V2Compressor(_BatchedStreamCodec):
    """A zarr format 2 array's numcodecs compressor as a batched bytes-to-bytes codec (built by `BatchedPipeline`)."""

    compressor: Numcodec

    @property
    def stream_format(self) -> StreamFormat:  # type: ignore[override]
        """The format of the compressor's chunks."""
        return V2_COMPRESSORS[self.compressor.codec_id]

    @property
    def numcodec(self) -> Numcodec:
        """The compressor itself."""
        return self.compressor

    def numcodec_input(self, chunk: np.ndarray, chunk_spec: ArraySpec) -> np.ndarray:
        """The chunk as the array's dtype, as zarr hands it to a format 2 compressor (Blosc's type size)."""
        return chunk.view(chunk_spec.dtype.to_native_dtype())

    def encode_options(self, chunk_spec: ArraySpec) -> tuple[tuple[str, Any], ...] | None:
        """The compressor's level or Blosc configuration, Blosc's type size defaulting to the dtype's."""
        config = self.compressor.get_config()
        codec_id = config["id"]
        if codec_id == "blosc":
            typesize = config.get("typesize") or chunk_spec.dtype.to_native_dtype().itemsize
            return _blosc_options(config["cname"], config["shuffle"], typesize)
        if codec_id in ("zlib", "gzip"):
            return _deflate_options(int(config.get("level", 1)))
        if codec_id == "zstd":
            return _zstd_options(int(config.get("level", 1)), bool(config.get("checksum", False)))
        return ()

    def to_dict(self) -> dict[str, Any]:
        """The compressor's numcodecs configuration (this codec never reaches array metadata)."""
        return self.compressor.get_config()


def _batched_codecs(codecs: Iterable[Codec]) -> list[Codec]:
    """`codecs` with ours in place of zarr's of the same name (an array created with zarr's codec objects), and each
    filterless format 2 codec whose compressor ferrocomp decodes split into two: the uncompressed format 2 codec,
    then that compressor as a batched `V2Compressor`."""
    result: list[Codec] = []
    for codec in codecs:
        compressor = getattr(codec, "compressor", None)
        name = codec.to_dict().get("name") if isinstance(codec, BytesBytesCodec) else None
        if isinstance(codec, V2Codec) and not codec.filters and getattr(compressor, "codec_id", None) in V2_COMPRESSORS:
            result += [V2Codec(filters=None, compressor=None), V2Compressor(compressor)]
        elif name in CODECS and not isinstance(codec, CODECS[name]):
            result.append(CODECS[name].from_dict(codec.to_dict()))
        else:
            result.append(codec)
    return result


class BatchedPipeline(BatchedCodecPipeline):
    """zarr's batched codec pipeline, reading a selection as one batch through ferrocomp (`ferrocomp._zarr_pipeline`):
    the chunks' bytes fetched at once, one copy to the device, one decode, one scatter into the output. What that
    path does not take (codecs other than ferrocomp's and transposes, fancy indexing) goes through zarr's own
    per-chunk pipeline, with format 2 compressors (lz4, zlib, gzip, blosc, zstd) batched through ferrocomp too."""

    @classmethod
    def from_codecs(cls, codecs: Iterable[Codec], *, batch_size: int | None = None) -> BatchedPipeline:
        """The pipeline for `codecs`, with ours for zarr's and a format 2 compressor split off as a `V2Compressor`."""
        return super().from_codecs(_batched_codecs(codecs), batch_size=batch_size)

    @cached_property
    def chunk_layout(self) -> _zarr_pipeline.ChunkLayout | None:
        """How the codecs lay out a chunk, where the batched read takes them (else None)."""
        return _zarr_pipeline.plan_read(self, _stream_format_of)

    async def read(
        self,
        batch_info: Iterable[tuple[ByteGetter, ArraySpec, SelectorTuple, SelectorTuple, bool]],
        out: NDBuffer,
        drop_axes: tuple[int, ...] = (),
    ) -> None:
        """Read the selection's chunks into `out` in batches of `batch_size` chunks (of a sharded array: shards, the
        inner chunks of a batch's shards going together), or through zarr's pipeline where that cannot."""
        batch_info = list(batch_info)
        array = out.as_ndarray_like()
        if self._batchable(batch_info, array, drop_axes):
            for start in range(0, len(batch_info), self.batch_size):
                await _zarr_pipeline.read_batch(self.chunk_layout, batch_info[start : start + self.batch_size], array)
        else:
            await super().read(batch_info, out, drop_axes)

    async def write(
        self,
        batch_info: Iterable[tuple[ByteSetter, ArraySpec, SelectorTuple, SelectorTuple, bool]],
        value: NDBuffer,
        drop_axes: tuple[int, ...] = (),
    ) -> None:
        """Write whole chunks in batches of `batch_size` (one gather, one encode, one copy to the host, concurrent
        puts each), or through zarr's pipeline for partial chunks, shards and codecs ferrocomp does not write."""
        batch_info = list(batch_info)
        array = value.as_ndarray_like()
        options = self._write_options(batch_info, array, drop_axes)
        if options is None:
            await super().write(batch_info, value, drop_axes)
            return
        for start in range(0, len(batch_info), self.batch_size):
            batch = batch_info[start : start + self.batch_size]
            await _zarr_pipeline.write_batch(self.chunk_layout, options, batch, array)

    def _write_options(self, batch_info: list[Any], array: Any, drop_axes: tuple[int, ...]) -> tuple | None:
        """ferrocomp's encode options where the batch can be written in one go, else None."""
        layout = self.chunk_layout
        if layout is None or layout.sharding is not None or not batch_info:
            return None
        if not all(complete for *_, complete in batch_info) or not self._batchable(batch_info, array, drop_axes):
            return None
        spec = batch_info[0][1]
        if array.shape == () or array.dtype != spec.dtype.to_native_dtype() or array.dtype.itemsize not in (1, 2, 4, 8):
            return None
        if layout.stream_format is None:
            return ()
        codec = self.bytes_bytes_codecs[0]
        nbytes = math.prod(spec.shape) * array.dtype.itemsize
        return codec.encode_options(spec) if nbytes <= layout.stream_format.max_encode_size else None

    def _batchable(self, batch_info: list[Any], array: Any, drop_axes: tuple[int, ...]) -> bool:
        """Whether the batched path takes these chunks: codecs it plans, basic selections, a contiguous array."""
        layout = self.chunk_layout
        if layout is None or not batch_info or drop_axes or array.ndim == 0:
            return False
        if not (array.flags.c_contiguous or array.flags.f_contiguous):
            return False
        return all(
            _zarr_pipeline.is_basic(chunk_selection) and _zarr_pipeline.is_basic(out_selection)
            for _, _, chunk_selection, out_selection, _ in batch_info
        )


def _stream_format_of(codec: Codec) -> StreamFormat | None:
    """The stream format of one of our bytes-to-bytes codecs, None for any other codec."""
    return codec.stream_format if isinstance(codec, _BatchedStreamCodec) else None


def register() -> None:
    """Register the codecs and the pipeline with zarr (the entry points do this where ferrocomp is installed)."""
    for name, codec_class in CODECS.items():
        zarr.registry.register_codec(name, codec_class)
    zarr.registry.register_pipeline(BatchedPipeline)


def enable(*, batch_size: int = DEFAULT_BATCH_SIZE) -> ConfigSet:
    """Make zarr read and write through ferrocomp's codecs, `batch_size` chunks per call.

    Returns zarr's config set, which also works as a context manager that restores the previous configuration.
    """
    register()
    codecs = dict(zarr.config.get("codecs"))
    codecs.update({name: zarr.registry.fully_qualified_name(cls) for name, cls in CODECS.items()})
    return zarr.config.set(
        {
            "codecs": codecs,
            "codec_pipeline.path": zarr.registry.fully_qualified_name(BatchedPipeline),
            "codec_pipeline.batch_size": batch_size,
        }
    )
