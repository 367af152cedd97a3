"""Helpers shared by the `test_codec*.py` files: CPU codecs, sample chunks, and each algorithm's blocks encoded and
decoded by its own library (lz4, cramjam's Snappy, zlib, numcodecs' Blosc, zstandard)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

import ferrocomp as fc

NATIVE = fc.BitstreamKind.NVCOMP_NATIVE
RAW = fc.BitstreamKind.RAW
SIZED = fc.BitstreamKind.WITH_UNCOMPRESSED_SIZE
KINDS = {"native": NATIVE, "raw": RAW, "sized": SIZED}
ALGORITHMS = ["LZ4", "Snappy", "Deflate", "zlib", "gzip", "GDeflate", "Blosc", "Zstd"]
# nvCOMP 6's WITH_UNCOMPRESSED_SIZE prefix: the size as a u64, then eight reserved bytes (zero).
SIZE_PREFIX_LEN = 16


def size_prefix(size: int) -> bytes:
    """The WITH_UNCOMPRESSED_SIZE prefix of a `size`-byte input."""
    return struct.pack("<QQ", size, 0)


# zlib's window bits for each Deflate wrapper.
WBITS = {"Deflate": -15, "zlib": 15, "gzip": 31}


def oracle(module: str):
    """An independent library the test checks against, or a skip where it is not installed."""
    return pytest.importorskip(module)


def sample(size: int, seed: int = 0) -> np.ndarray:
    """`size` compressible bytes: runs of small random words and repeated text."""
    rng = np.random.default_rng(seed)
    words = np.frombuffer(rng.integers(0, 40, size=size // 4 + 1, dtype=np.uint32).tobytes()[:size], np.uint8)
    text = np.frombuffer(b"ferrocomp decodes what nvCOMP encodes %d; " % seed, np.uint8)
    repeated = np.resize(text, size)
    return np.where(np.arange(size) % 3 == 0, repeated, words).astype(np.uint8)


def batch(sizes=(1, 1000, 4096, 65536)) -> list[np.ndarray]:
    """Chunks of the given sizes, each different."""
    return [sample(size, seed) for seed, size in enumerate(sizes)]


def codec(algorithm: str, kind=RAW, **options) -> fc.Codec:
    """A CPU codec."""
    return fc.Codec(algorithm, device_id="cpu", bitstream_kind=kind, **options)


def host(array) -> bytes:
    """The bytes of a returned array."""
    return bytes(array)


def decode_block(algorithm: str, block: bytes, size: int) -> bytes:
    """One standard block decoded by the algorithm's own library (not ferrocomp)."""
    if algorithm == "LZ4":
        return oracle("lz4.block").decompress(block, uncompressed_size=size)
    if algorithm == "Snappy":
        return bytes(oracle("cramjam").snappy.decompress_raw(block))
    if algorithm in WBITS:
        inflater = zlib.decompressobj(WBITS[algorithm])
        out = inflater.decompress(block) + inflater.flush()
        assert inflater.eof and not inflater.unused_data
        return out
    if algorithm == "Blosc":
        return bytes(oracle("numcodecs").Blosc().decode(block))
    if algorithm == "Zstd":
        return oracle("zstandard").ZstdDecompressor().decompress(block, max_output_size=size)
    raise AssertionError(f"no oracle for {algorithm}")


def encode_block(algorithm: str, data: bytes) -> bytes:
    """One standard block encoded by the algorithm's own library."""
    if algorithm == "LZ4":
        return oracle("lz4.block").compress(data, store_size=False)
    if algorithm == "Snappy":
        return bytes(oracle("cramjam").snappy.compress_raw(data))
    if algorithm in WBITS:
        deflater = zlib.compressobj(6, zlib.DEFLATED, WBITS[algorithm])
        return deflater.compress(data) + deflater.flush()
    if algorithm == "Blosc":
        return bytes(
            oracle("numcodecs")
            .Blosc(cname="lz4", clevel=5, shuffle=oracle("numcodecs").Blosc.SHUFFLE, typesize=4)
            .encode(data)
        )
    if algorithm == "Zstd":
        return oracle("zstandard").ZstdCompressor(level=3, write_checksum=True).compress(data)
    raise AssertionError(f"no oracle for {algorithm}")


def native_chunks(stream: bytes) -> tuple[int, int, int, list[bytes]]:
    """A native stream's algorithm id, total size, chunk size and chunks, as docs/FORMAT.md lays them out."""
    assert stream[:4] == b"FCMP" and stream[4] == 1
    algorithm_id, flags = stream[5], stream[6]
    total, chunk_size, count = struct.unpack_from("<QII", stream, 16)
    sizes = struct.unpack_from(f"<{count}I", stream, 32)
    at = 32 + 4 * count * (1 + bin(flags & 3).count("1"))
    chunks = []
    for size in sizes:
        chunks.append(stream[at : at + size])
        at += size
    assert at == len(stream)
    return algorithm_id, total, chunk_size, chunks


def assert_native_stream_names(encoder: fc.Codec, data: np.ndarray, algorithm_id: int) -> None:
    """`encoder`'s native stream of `data` starts with the magic and names `algorithm_id` (docs/FORMAT.md), and a codec
    given no algorithm takes it from the stream and decodes `data` back."""
    stream = bytes(encoder.encode(data))
    assert stream[:4] == b"FCMP" and stream[5] == algorithm_id
    assert bytes(fc.Codec(device_id="cpu").decode(stream)) == data.tobytes()
