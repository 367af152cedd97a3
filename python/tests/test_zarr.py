"""ferrocomp's zarr codecs: stores written by plain zarr and numcodecs read back exactly through ferrocomp (one
batched call per batch of chunks), stores ferrocomp wrote read by plain zarr, Blosc chunks of every kind numcodecs
writes, and bad chunks refused with a clear error. GPU variants need CuPy and a GPU."""

from __future__ import annotations

from pathlib import Path

import numcodecs
import numpy as np
import pytest
import tomllib
import zarr
import zarr.codecs
import zarr.codecs.numcodecs
import zarr.registry
from zarr.storage import MemoryStore

import ferrocomp
import ferrocomp.zarr
from ferrocomp import _zarr_batch

SHAPE = (96, 80)
CHUNKS = (16, 40)
CHUNK_COUNT = (SHAPE[0] // CHUNKS[0]) * (SHAPE[1] // CHUNKS[1])
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
GZIP_LEVEL_5 = {"name": "gzip", "configuration": {"level": 5}}


def sample(dtype: str = "f4") -> np.ndarray:
    """A smooth field with noise, as `dtype`: compressible, and different in every chunk."""
    y, x = np.mgrid[0 : SHAPE[0], 0 : SHAPE[1]]
    field = np.sin(x / 7.0) * np.cos(y / 5.0) * 100 + np.random.default_rng(3).normal(0, 0.5, SHAPE)
    return np.round(field, 1).astype(dtype)


def write(store: MemoryStore, data: np.ndarray, compressor: object, zarr_format: int) -> zarr.Array:
    """`data` written to `store` as one array with CHUNKS and the given compressor."""
    array = zarr.create_array(
        store, shape=data.shape, chunks=CHUNKS, dtype=data.dtype, compressors=compressor, zarr_format=zarr_format
    )
    array[:] = data
    return array


# (zarr format, compressor as plain zarr writes it, ferrocomp algorithm that decodes it)
PLAIN_STORES = [
    (2, numcodecs.LZ4(), "LZ4"),
    (2, numcodecs.LZ4(acceleration=8), "LZ4"),
    (2, numcodecs.Zlib(level=1), "Deflate"),
    (2, numcodecs.Zlib(level=9), "Deflate"),
    (2, numcodecs.GZip(level=5), "Deflate"),
    (2, numcodecs.Blosc(cname="lz4", shuffle=numcodecs.Blosc.SHUFFLE), "Blosc"),
    (2, numcodecs.Blosc(cname="zlib", shuffle=numcodecs.Blosc.BITSHUFFLE), "Blosc"),
    (3, zarr.codecs.GzipCodec(level=6), "Deflate"),
    (3, zarr.codecs.BloscCodec(cname="lz4", shuffle="shuffle"), "Blosc"),
    (3, zarr.codecs.BloscCodec(cname="blosclz", shuffle="noshuffle"), "Blosc"),
    (3, zarr.codecs.numcodecs.LZ4(), "LZ4"),
    (3, zarr.codecs.numcodecs.Zlib(level=3), "Deflate"),
    (3, zarr.codecs.numcodecs.GZip(level=1), "Deflate"),
    (3, zarr.codecs.numcodecs.Blosc(cname="lz4hc", shuffle=1), "Blosc"),
    (2, numcodecs.Zstd(level=1), "Zstd"),
    (2, numcodecs.Zstd(level=19, checksum=True), "Zstd"),
    (3, zarr.codecs.ZstdCodec(level=0), "Zstd"),
    (3, zarr.codecs.ZstdCodec(level=-3, checksum=True), "Zstd"),
    (3, zarr.codecs.numcodecs.Zstd(level=9), "Zstd"),
]


def plain_store_cases() -> list:
    """PLAIN_STORES as pytest parameters."""
    return [pytest.param(fmt, codec, algorithm, id=f"v{fmt}-{codec!r}") for fmt, codec, algorithm in PLAIN_STORES]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("zarr_format", "compressor", "algorithm"), plain_store_cases())
def test_plain_zarr_store_reads_through_ferrocomp_in_one_call(
    zarr_format: int, compressor: object, algorithm: str, ferrocomp_calls: list
) -> None:
    """Every chunk of a store plain zarr wrote decodes in one ferrocomp call, to the exact array."""
    data = sample()
    store = MemoryStore()
    write(store, data, compressor, zarr_format)
    assert ferrocomp_calls == []
    with ferrocomp.zarr.enable():
        read = zarr.open_array(store, mode="r")[:]
    np.testing.assert_array_equal(read, data)
    assert isinstance(read, np.ndarray)
    assert ferrocomp_calls == [("decode", algorithm, CHUNK_COUNT)]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_batches_follow_the_configured_batch_size(ferrocomp_calls: list) -> None:
    """With batch_size 5, the 12 chunks go to ferrocomp as batches of 5, 5 and 2."""
    data = sample()
    store = MemoryStore()
    write(store, data, numcodecs.Zlib(), 2)
    with ferrocomp.zarr.enable(batch_size=5):
        np.testing.assert_array_equal(zarr.open_array(store, mode="r")[:], data)
    assert sorted(n for _, _, n in ferrocomp_calls) == [2, 5, 5]


# (zarr format, compressor as ferrocomp writes it, what ferrocomp's encoder is called as)
FERROCOMP_STORES = [
    (2, numcodecs.LZ4(), "LZ4"),
    (2, numcodecs.Zlib(level=6), "Deflate"),
    (2, numcodecs.GZip(level=1), "Deflate"),
    (2, numcodecs.Blosc(cname="lz4", shuffle=numcodecs.Blosc.SHUFFLE), "Blosc"),
    (3, GZIP_LEVEL_5, "Deflate"),
    (3, {"name": "blosc", "configuration": {"cname": "lz4", "shuffle": "shuffle", "clevel": 5}}, "Blosc"),
    (3, {"name": "numcodecs.lz4", "configuration": {}}, "LZ4"),
    (3, {"name": "numcodecs.zlib", "configuration": {"level": 1}}, "Deflate"),
    (3, {"name": "numcodecs.gzip", "configuration": {"level": 9}}, "Deflate"),
    (2, numcodecs.Zstd(level=1), "Zstd"),
    (2, numcodecs.Zstd(level=5), "Zstd"),
    (3, {"name": "zstd", "configuration": {"level": 0, "checksum": False}}, "Zstd"),
    (3, {"name": "zstd", "configuration": {"level": 9, "checksum": False}}, "Zstd"),
    (3, {"name": "numcodecs.zstd", "configuration": {"level": 3}}, "Zstd"),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    ("zarr_format", "compressor", "algorithm"),
    [pytest.param(fmt, codec, algorithm, id=f"v{fmt}-{codec!r}") for fmt, codec, algorithm in FERROCOMP_STORES],
)
def test_ferrocomp_store_reads_with_plain_zarr(
    zarr_format: int, compressor: object, algorithm: str, ferrocomp_calls: list
) -> None:
    """ferrocomp encodes all chunks of a write in one call; plain zarr (ferrocomp disabled) reads them back."""
    data = sample()
    store = MemoryStore()
    with ferrocomp.zarr.enable():
        write(store, data, compressor, zarr_format)
    assert ferrocomp_calls == [("encode", algorithm, CHUNK_COUNT)]
    assert zarr.registry.get_codec_class("gzip") is zarr.codecs.GzipCodec
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[:], data)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_deflate_chunks_over_64k_are_written_by_numcodecs(ferrocomp_calls: list) -> None:
    """ferrocomp compresses at most 64 KiB into one Deflate stream: 128 KiB gzip chunks are written by numcodecs
    and still read back through ferrocomp in one call."""
    data = np.tile(sample(), (4, 4))
    store = MemoryStore()
    with ferrocomp.zarr.enable():
        array = zarr.create_array(store, shape=data.shape, chunks=(128, 256), dtype="f4", compressors=GZIP_LEVEL_5)
        array[:] = data
        assert ferrocomp_calls == []
        np.testing.assert_array_equal(zarr.open_array(store, mode="r")[:], data)
    assert ferrocomp_calls == [("decode", "Deflate", 6)]


def test_blosc_written_by_ferrocomp_says_lz4_shuffle_and_the_type_size() -> None:
    """A Blosc chunk ferrocomp writes for a v2 float64 array declares LZ4, byte shuffle and type size 8."""
    data = sample("f8")
    store = MemoryStore()
    with ferrocomp.zarr.enable():
        write(store, data, numcodecs.Blosc(cname="lz4", shuffle=numcodecs.Blosc.SHUFFLE), 2)
    header = store._store_dict["0.0"].to_bytes()[:16]
    assert header[2] & 0x01 and header[2] >> 5 == 1 and header[3] == 8
    assert int.from_bytes(header[4:8], "little") == CHUNKS[0] * CHUNKS[1] * 8


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_blosc_zstd_chunks_decode_through_ferrocomp(ferrocomp_calls: list) -> None:
    """Blosc chunks of zstd blocks read through ferrocomp in one call; numcodecs writes them (ferrocomp writes LZ4)."""
    data = sample()
    store = MemoryStore()
    write(store, data, numcodecs.Blosc(cname="zstd"), 2)
    with ferrocomp.zarr.enable():
        write(MemoryStore(), data, zarr.codecs.BloscCodec(cname="zstd"), 3)
        assert ferrocomp_calls == []
        np.testing.assert_array_equal(zarr.open_array(store, mode="r")[:], data)
    assert ferrocomp_calls == [("decode", "Blosc", CHUNK_COUNT)]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_zstd_with_checksum_is_written_by_numcodecs(ferrocomp_calls: list) -> None:
    """A zstd codec asking for content checksums is written by numcodecs (checksums included), read by ferrocomp."""
    data = sample()
    store = MemoryStore()
    with ferrocomp.zarr.enable():
        write(store, data, zarr.codecs.ZstdCodec(level=3, checksum=True), 3)
        assert ferrocomp_calls == []
        np.testing.assert_array_equal(zarr.open_array(store, mode="r")[:], data)
    assert ferrocomp_calls == [("decode", "Zstd", CHUNK_COUNT)]
    assert store._store_dict["c/0/0"].to_bytes()[4] & 4, "the frame header's checksum flag"


def test_sharded_array_decodes_every_shard_in_one_call(ferrocomp_calls: list) -> None:
    """The inner gzip chunks of both shards go to ferrocomp together, in one call."""
    data = sample()
    store = MemoryStore()
    array = zarr.create_array(
        store, shape=SHAPE, shards=(48, 80), chunks=CHUNKS, dtype="f4", compressors=zarr.codecs.GzipCodec()
    )
    array[:] = data
    with ferrocomp.zarr.enable():
        np.testing.assert_array_equal(zarr.open_array(store, mode="r")[:], data)
    assert ferrocomp_calls == [("decode", "Deflate", 12)]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_missing_chunks_read_as_fill_value(ferrocomp_calls: list) -> None:
    """Chunks never written are not sent to ferrocomp; they read as the fill value."""
    store = MemoryStore()
    array = zarr.create_array(
        store, shape=SHAPE, chunks=CHUNKS, dtype="i4", compressors=numcodecs.LZ4(), fill_value=7, zarr_format=2
    )
    array[:16, :40] = 1
    with ferrocomp.zarr.enable():
        read = zarr.open_array(store, mode="r")[:]
    expected = np.full(SHAPE, 7, "i4")
    expected[:16, :40] = 1
    np.testing.assert_array_equal(read, expected)
    assert ferrocomp_calls == [("decode", "LZ4", 1)]


def test_enable_selects_our_codecs_and_restores_zarrs() -> None:
    """enable() makes zarr resolve every name we provide to our class, batches through our pipeline, and undoes it."""
    with ferrocomp.zarr.enable(batch_size=64):
        for name, codec_class in ferrocomp.zarr.CODECS.items():
            assert zarr.registry.get_codec_class(name) is codec_class
        assert zarr.registry.get_pipeline_class() is ferrocomp.zarr.BatchedPipeline
        assert zarr.config.get("codec_pipeline.batch_size") == 64
    assert zarr.registry.get_codec_class("gzip") is zarr.codecs.GzipCodec
    assert zarr.config.get("codec_pipeline.batch_size") == 1


def test_entry_points_name_every_codec() -> None:
    """pyproject's zarr.codecs entry points register exactly our codecs, under zarr's names, and the pipeline."""
    entry_points = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]
    assert entry_points["zarr.codecs"] == {
        name: f"ferrocomp.zarr:{cls.__name__}" for name, cls in ferrocomp.zarr.CODECS.items()
    }
    assert entry_points["zarr.codec_pipeline"] == {"ferrocomp": "ferrocomp.zarr:BatchedPipeline"}


def test_codecs_keep_zarrs_json() -> None:
    """Our codecs read and write the same metadata as zarr's."""
    for codec in (zarr.codecs.GzipCodec(level=3), zarr.codecs.numcodecs.Zlib(level=2)):
        ours = zarr.registry.get_codec_class(codec.to_dict()["name"])
        with ferrocomp.zarr.enable():
            ours = zarr.registry.get_codec_class(codec.to_dict()["name"])
        assert ours is not type(codec)
        assert ours.from_dict(codec.to_dict()).to_dict() == codec.to_dict()


# numcodecs Blosc: every cname ferrocomp decodes, at every shuffle and type size.
BLOSC_CNAMES = ("lz4", "lz4hc", "zlib", "blosclz")
BLOSC_SHUFFLES = (numcodecs.Blosc.NOSHUFFLE, numcodecs.Blosc.SHUFFLE, numcodecs.Blosc.BITSHUFFLE)
BLOSC_TYPESIZES = (1, 2, 4, 8)


def blosc_chunks() -> tuple[list[bytes], list[np.ndarray]]:
    """numcodecs Blosc chunks of every cname, shuffle and type size, with the arrays they hold."""
    rng = np.random.default_rng(11)
    chunks, arrays = [], []
    for cname in BLOSC_CNAMES:
        for shuffle in BLOSC_SHUFFLES:
            for typesize in BLOSC_TYPESIZES:
                values = np.cumsum(rng.integers(0, 4, 5000)).astype(f"u{typesize}")
                codec = numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle, blocksize=4096)
                chunks.append(bytes(codec.encode(values)))
                arrays.append(values)
    return chunks, arrays


def test_blosc_chunks_of_every_kind_decode_in_one_batch(ferrocomp_calls: list) -> None:
    """All 48 numcodecs Blosc chunks (4 cnames, 3 shuffles, 4 type sizes) decode in one call, byte for byte."""
    chunks, arrays = blosc_chunks()
    sources = [np.frombuffer(chunk, np.uint8) for chunk in chunks]
    decoded = _zarr_batch.decode_chunks(_zarr_batch.BLOSC_CHUNK, sources)
    for got, values in zip(decoded, arrays, strict=True):
        assert got.tobytes() == values.tobytes()
    assert ferrocomp_calls == [("decode", "Blosc", len(chunks))]


def read_with_chunk(compressor: object, key: str, chunk: bytes) -> np.ndarray:
    """Read through ferrocomp a v2 float32 array whose chunk `key` was replaced by `chunk`."""
    store = MemoryStore()
    write(store, sample(), compressor, 2)
    store._store_dict[key] = store._store_dict[key].from_bytes(chunk)
    with ferrocomp.zarr.enable():
        return zarr.open_array(store, mode="r")[:]


def stored_chunk(compressor: object, key: str = "0.0") -> bytes:
    """Chunk `key` of a v2 float32 sample array, as plain zarr writes it."""
    store = MemoryStore()
    write(store, sample(), compressor, 2)
    return store._store_dict[key].to_bytes()


def with_bytes(chunk: bytes, offset: int, value: bytes) -> bytes:
    """`chunk` with `value` written at `offset` (negative offsets count from the end)."""
    data = bytearray(chunk)
    offset %= len(data)
    data[offset : offset + len(value)] = value
    return bytes(data)


def lz4_prefix(change: int):
    """A damage that adds `change` to a numcodecs LZ4 chunk's size prefix."""
    return lambda c: with_bytes(c, 0, (int.from_bytes(c[:4], "little") + change).to_bytes(4, "little"))


@pytest.mark.parametrize(
    ("compressor", "bad_chunk", "message"),
    [
        pytest.param(
            numcodecs.LZ4(), lambda c: c[:3], "has 3 bytes, shorter than its 4-byte size prefix", id="lz4-cut"
        ),
        pytest.param(
            numcodecs.LZ4(),
            lambda c: with_bytes(c, 0, (1 << 31).to_bytes(4, "little")),
            "declares 2147483648 decoded bytes, more than",
            id="lz4-huge-size",
        ),
        pytest.param(
            numcodecs.LZ4(), lz4_prefix(8), "its size prefix says 2568 bytes, its shape holds 2560", id="lz4+8"
        ),
        pytest.param(numcodecs.LZ4(), lz4_prefix(-8), "prefix says 2552 bytes, its shape holds 2560", id="lz4-8"),
        pytest.param(
            numcodecs.GZip(),
            lambda c: with_bytes(c, -4, (1 << 30).to_bytes(4, "little")),
            "checksum",
            id="gzip-lying-isize",
        ),
        pytest.param(
            numcodecs.Blosc(cname="lz4"),
            lambda c: with_bytes(c, 12, (len(c) + 5).to_bytes(4, "little")),
            "truncated",
            id="blosc-lying-cbytes",
        ),
        pytest.param(
            numcodecs.Blosc(cname="lz4"),
            lambda c: with_bytes(c, 4, (1 << 30).to_bytes(4, "little")),
            "malformed",
            id="blosc-huge-nbytes",
        ),
        pytest.param(numcodecs.Blosc(cname="lz4"), lambda c: with_bytes(c, 0, b"\x09"), "version", id="blosc-version"),
        pytest.param(numcodecs.Blosc(cname="lz4"), lambda c: c[:2], "truncated", id="blosc-cut-header"),
    ],
)
def test_bad_chunk_headers_are_refused(compressor: object, bad_chunk, message: str) -> None:
    """Truncated chunks and headers that lie about sizes raise ferrocomp.DecodeError naming the chunk (1.1 is the
    batch's fourth) and why: the LZ4 size prefix is checked here, the rest by ferrocomp."""
    with pytest.raises(ferrocomp.DecodeError, match=f"^chunk 3: .*{message}") as raised:
        read_with_chunk(compressor, "1.1", bad_chunk(stored_chunk(compressor, "1.1")))
    assert raised.value.chunk == 3


def test_error_names_the_chunk_among_blosc_chunks_of_every_compressor(ferrocomp_calls: list) -> None:
    """With chunk 0.0 a Blosc-zstd chunk among Blosc-lz4 ones, a corrupt chunk 1.1 is named chunk 3."""
    zstd = stored_chunk(numcodecs.Blosc(cname="zstd"), "0.0")
    store = MemoryStore()
    write(store, sample(), numcodecs.Blosc(cname="lz4"), 2)
    store._store_dict["0.0"] = store._store_dict["0.0"].from_bytes(zstd)
    corrupt = with_bytes(store._store_dict["1.1"].to_bytes(), 12, (10**6).to_bytes(4, "little"))
    store._store_dict["1.1"] = store._store_dict["1.1"].from_bytes(corrupt)
    with ferrocomp.zarr.enable(), pytest.raises(ferrocomp.DecodeError, match="^chunk 3: ") as raised:
        zarr.open_array(store, mode="r")[:]
    assert raised.value.chunk == 3
    assert ferrocomp_calls == [("decode", "Blosc", CHUNK_COUNT)]


def test_non_contiguous_chunks_are_refused() -> None:
    """A chunk that is a strided view raises ValueError saying so, rather than reading the wrong bytes."""
    chunk = np.frombuffer(bytes(numcodecs.Zlib().encode(sample())) * 2, np.uint8)
    with pytest.raises(ValueError, match="C-contiguous"):
        _zarr_batch.decode_chunks(_zarr_batch.ZLIB_STREAM, [chunk[::2]])


def flip_middle(chunk: bytes) -> bytes:
    """`chunk` with 8 bytes in its middle inverted."""
    middle = len(chunk) // 2
    return with_bytes(chunk, middle, bytes(b ^ 0xFF for b in chunk[middle : middle + 8]))


@pytest.mark.parametrize(
    ("compressor", "damage"),
    [
        pytest.param(numcodecs.Zlib(), flip_middle, id="zlib-flipped"),
        pytest.param(numcodecs.GZip(), flip_middle, id="gzip-flipped"),
        pytest.param(numcodecs.LZ4(), lambda c: c[:-10], id="lz4-cut-block"),
        pytest.param(
            numcodecs.Blosc(cname="lz4"),
            lambda c: with_bytes(c, 16, (len(c) + 100).to_bytes(4, "little")),
            id="blosc-block-offset-past-end",
        ),
    ],
)
def test_corrupt_chunk_fails_the_read(compressor: object, damage) -> None:
    """A chunk damaged inside its compressed stream (checksummed bytes flipped, an LZ4 block cut short, a Blosc
    block pointing past the chunk) makes the read raise a DecodeError naming it instead of returning wrong numbers."""
    with pytest.raises(ferrocomp.DecodeError, match="^chunk 0: ") as raised:
        read_with_chunk(compressor, "0.0", damage(stored_chunk(compressor)))
    assert raised.value.chunk == 0


def test_chunk_of_the_wrong_size_fails_the_read() -> None:
    """A valid chunk of another array (other dtype, other size) in place of one of ours raises, naming it."""
    other = MemoryStore()
    array = zarr.create_array(other, shape=(10,), chunks=(10,), dtype="f8", compressors=numcodecs.Zlib(), zarr_format=2)
    array[:] = np.arange(10.0)
    with pytest.raises(ferrocomp.DecodeError, match="^chunk 0: 0.0: decodes to 80 bytes, its shape holds 2560"):
        read_with_chunk(numcodecs.Zlib(), "0.0", other._store_dict["0"].to_bytes())


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("zarr_format", "compressor", "algorithm"), plain_store_cases())
def test_gpu_read_gives_cupy(zarr_format: int, compressor: object, algorithm: str, cupy, ferrocomp_calls) -> None:
    """Under zarr.config.enable_gpu() the batch decodes on the GPU and zarr returns a CuPy array."""
    data = sample()
    store = MemoryStore()
    write(store, data, compressor, zarr_format)
    with zarr.config.enable_gpu(), ferrocomp.zarr.enable():
        read = zarr.open_array(store, mode="r")[:]
    assert isinstance(read, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(read), data)
    assert ferrocomp_calls == [("decode", algorithm, CHUNK_COUNT)]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gpu_write_reads_with_plain_zarr(cupy, ferrocomp_calls) -> None:
    """A v3 gzip array written from a CuPy array through ferrocomp reads back with plain zarr on the CPU."""
    data = sample()
    store = MemoryStore()
    with zarr.config.enable_gpu(), ferrocomp.zarr.enable():
        array = zarr.create_array(store, shape=SHAPE, chunks=CHUNKS, dtype="f4", compressors=GZIP_LEVEL_5)
        array[:] = cupy.asarray(data)
    assert ferrocomp_calls == [("encode", "Deflate", CHUNK_COUNT)]
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[:], data)


def test_gpu_blosc_chunks_of_every_kind_decode_in_one_batch(cupy, ferrocomp_calls: list) -> None:
    """The 48 numcodecs Blosc chunks, as CuPy arrays, decode on the GPU in one call into CuPy arrays."""
    chunks, arrays = blosc_chunks()
    decoded = _zarr_batch.decode_chunks(
        _zarr_batch.BLOSC_CHUNK, [cupy.asarray(np.frombuffer(c, np.uint8)) for c in chunks]
    )
    for got, values in zip(decoded, arrays, strict=True):
        assert isinstance(got, cupy.ndarray)
        assert got.get().tobytes() == values.tobytes()
    assert ferrocomp_calls == [("decode", "Blosc", len(chunks))]


@pytest.mark.parametrize(
    ("compressor", "bad_chunk", "message"),
    [
        pytest.param(
            numcodecs.LZ4(), lz4_prefix(8), "its size prefix says 2568 bytes, its shape holds 2560", id="lz4+8"
        ),
        pytest.param(numcodecs.Zlib(), flip_middle, "", id="zlib-flipped"),
        pytest.param(
            numcodecs.Blosc(cname="lz4"),
            lambda c: with_bytes(c, 16, (len(c) + 100).to_bytes(4, "little")),
            "malformed",
            id="blosc-block-offset-past-end",
        ),
    ],
)
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gpu_bad_chunk_fails_the_read(compressor: object, bad_chunk, message: str, cupy) -> None:
    """On the GPU too, a bad chunk 1.1 raises a DecodeError naming chunk 3 (its place in the batch)."""
    store = MemoryStore()
    write(store, sample(), compressor, 2)
    store._store_dict["1.1"] = store._store_dict["1.1"].from_bytes(bad_chunk(stored_chunk(compressor, "1.1")))
    with zarr.config.enable_gpu(), ferrocomp.zarr.enable():
        with pytest.raises(ferrocomp.DecodeError, match=f"^chunk 3: .*{message}") as raised:
            zarr.open_array(store, mode="r")[:]
    assert raised.value.chunk == 3
