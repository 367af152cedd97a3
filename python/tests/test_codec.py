"""nvCOMP's `Codec` on the CPU: every algorithm and bitstream round trip, checked byte for byte against the
original and against independent libraries (lz4, cramjam's Snappy, zlib, numcodecs' Blosc); algorithm names, levels
and options."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from codec_helpers import (
    ALGORITHMS,
    KINDS,
    NATIVE,
    RAW,
    SIZE_PREFIX_LEN,
    SIZED,
    batch,
    codec,
    decode_block,
    encode_block,
    host,
    native_chunks,
    oracle,
    sample,
    size_prefix,
)

import ferrocomp as fc

# ---- round trips ----


@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS.keys())
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_round_trip_one_array(algorithm, kind):
    data = sample(50_000)
    c = codec(algorithm, kind)
    encoded = c.encode(data)
    assert isinstance(encoded, fc.Array)
    # nvCOMP's element types: `char` compressed, and its algorithm's default decoded.
    assert encoded.dtype == np.int8 and encoded.ndim == 1
    assert encoded.buffer_kind == fc.ArrayBufferKind.STRIDED_HOST
    decoded = c.decode(encoded)
    assert isinstance(decoded, fc.Array)
    assert host(decoded) == data.tobytes()
    assert decoded.dtype == (np.int8 if algorithm == "LZ4" else np.uint8) and decoded.shape == (len(data),)


@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS.keys())
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_round_trip_list(algorithm, kind):
    chunks = batch()
    c = codec(algorithm, kind)
    encoded = c.encode(chunks)
    assert isinstance(encoded, list) and len(encoded) == len(chunks)
    decoded = c.decode(encoded)
    assert [host(d) for d in decoded] == [chunk.tobytes() for chunk in chunks]
    # A tuple is a batch too.
    assert [host(d) for d in c.decode(tuple(encoded))] == [chunk.tobytes() for chunk in chunks]


@pytest.mark.parametrize("algorithm", ["LZ4", "Snappy", "Deflate", "zlib", "gzip", "Blosc", "Zstd"])
def test_raw_blocks_are_the_algorithms_own(algorithm):
    chunks = batch()
    encoded = codec(algorithm, RAW).encode(chunks)
    for block, chunk in zip(encoded, chunks, strict=True):
        assert decode_block(algorithm, host(block), len(chunk)) == chunk.tobytes()


@pytest.mark.parametrize("algorithm", ["LZ4", "Snappy", "Deflate", "zlib", "gzip", "Blosc", "Zstd"])
def test_decodes_the_algorithms_own_blocks(algorithm):
    chunks = batch()
    blocks = [np.frombuffer(encode_block(algorithm, chunk.tobytes()), np.uint8) for chunk in chunks]
    decoded = codec(algorithm, RAW).decode(blocks)
    assert [host(d) for d in decoded] == [chunk.tobytes() for chunk in chunks]


@pytest.mark.parametrize("algorithm", ["LZ4", "Snappy", "Deflate", "Blosc", "Zstd"])
def test_with_uncompressed_size_is_a_size_then_a_block(algorithm):
    chunks = batch()
    c = codec(algorithm, SIZED)
    encoded = c.encode(chunks)
    for block, chunk in zip(encoded, chunks, strict=True):
        raw = host(block)
        assert raw[:SIZE_PREFIX_LEN] == size_prefix(len(chunk))
        assert decode_block(algorithm, raw[SIZE_PREFIX_LEN:], len(chunk)) == chunk.tobytes()
    built = [np.frombuffer(size_prefix(len(ch)) + encode_block(algorithm, ch.tobytes()), np.uint8) for ch in chunks]
    assert [host(d) for d in c.decode(built)] == [chunk.tobytes() for chunk in chunks]


@pytest.mark.parametrize(
    ("algorithm", "algorithm_id"), [("LZ4", 1), ("Snappy", 2), ("Deflate", 3), ("gzip", 3), ("Zstd", 6)]
)
def test_native_stream_holds_the_algorithms_blocks(algorithm, algorithm_id):
    data = sample(10_000)
    stream = host(codec(algorithm, NATIVE, uncomp_chunk_size=4096).encode(data))
    found_id, total, chunk_size, chunks = native_chunks(stream)
    assert (found_id, total, chunk_size, len(chunks)) == (algorithm_id, 10_000, 4096, 3)
    pieces = [data[i : i + 4096].tobytes() for i in range(0, 10_000, 4096)]
    assert [decode_block(algorithm, chunk, len(p)) for chunk, p in zip(chunks, pieces, strict=True)] == pieces


def test_native_stream_needs_no_algorithm_to_decode():
    data = sample(20_000)
    for algorithm in ALGORITHMS:
        stream = codec(algorithm, NATIVE).encode(data)
        reader = fc.Codec(device_id="cpu")
        assert reader.algorithm is None
        assert host(reader.decode(stream)) == data.tobytes()


@pytest.mark.parametrize(
    "name", ["lz4", "LZ4", "Lz4", "snappy", "SNAPPY", "deflate", "DEFLATE", "gdeflate", "blosc", "zstd", "ZSTD"]
)
def test_algorithm_names_are_case_insensitive(name):
    c = codec(name)
    assert c.algorithm.lower() == name.lower()
    data = sample(3000)
    assert host(c.decode(c.encode(data))) == data.tobytes()


@pytest.mark.parametrize(("name", "wbits"), [("zlib", 15), ("ZLIB", 15), ("gzip", 31), ("Gzip", 31)])
def test_zlib_and_gzip_names_pick_the_wrapper(name, wbits):
    data = sample(3000)
    c = codec(name)
    assert c.algorithm == name.lower()
    assert zlib.decompress(host(c.encode(data)), wbits) == data.tobytes()


@pytest.mark.parametrize(
    ("wrapper", "wbits", "name"), [("raw", -15, "Deflate"), ("zlib", 15, "zlib"), ("GZIP", 31, "gzip")]
)
def test_deflate_wrapper_option(wrapper, wbits, name):
    data = sample(3000)
    c = codec("Deflate", wrapper=wrapper)
    assert c.algorithm == name
    assert zlib.decompress(host(c.encode(data)), wbits) == data.tobytes()
    assert (
        host(
            codec("zlib" if name == "zlib" else "gzip" if name == "gzip" else "deflate", wrapper=wrapper).decode(
                c.encode(data)
            )
        )
        == data.tobytes()
    )


@pytest.mark.parametrize("level", range(6))
@pytest.mark.parametrize("algorithm", ["Deflate", "GDeflate"])
def test_algorithm_type_levels_round_trip(algorithm, level):
    data = sample(30_000)
    c = codec(algorithm, algorithm_type=level)
    encoded = host(c.encode(data))
    if algorithm == "Deflate":
        assert zlib.decompress(encoded, -15) == data.tobytes()
    assert host(c.decode(np.frombuffer(encoded, np.uint8))) == data.tobytes()


@pytest.mark.parametrize("level", [1, 2, 3])
def test_zstd_levels_write_frames_zstandard_reads(level):
    data = sample(200_000)
    c = codec("Zstd", RAW, algorithm_type=level)
    encoded = host(c.encode(data))
    assert decode_block("Zstd", encoded, data.size) == data.tobytes()
    assert host(c.decode(np.frombuffer(encoded, np.uint8))) == data.tobytes()


@pytest.mark.parametrize("level", [0, 4, -1])
def test_zstd_levels_outside_the_range_are_refused(level):
    with pytest.raises(ValueError, match="algorithm_type"):
        codec("Zstd", algorithm_type=level)


def test_zstd_frames_of_every_kind_decode_in_one_call():
    """zstandard's frames at several levels, with and without checksum and content size, several in one chunk."""
    zstandard = oracle("zstandard")
    data = sample(100_000).tobytes()
    frames, expected = [], []
    for level in (1, 3, 9, 19, -5):
        for checksum, size in ((False, True), (True, False)):
            frames.append(zstandard.ZstdCompressor(level=level, write_checksum=checksum, write_content_size=size))
            expected.append(data)
    blocks = [f.compress(data) for f in frames]
    blocks.append(blocks[0] + blocks[1])
    expected.append(data + data)
    decoded = codec("Zstd", RAW).decode([np.frombuffer(b, np.uint8) for b in blocks])
    assert [host(d) for d in decoded] == expected


@pytest.mark.parametrize("data_type", ["|u1", "<u2", "<i4", "<i8", np.int16, np.dtype("float32"), "float64"])
@pytest.mark.parametrize("algorithm", ["LZ4", "Snappy"])
def test_data_type_option_round_trips(algorithm, data_type):
    data = np.arange(5000, dtype=np.dtype(data_type)) // 3
    for kind in KINDS.values():
        c = codec(algorithm, kind, data_type=data_type)
        decoded = c.decode(c.encode(data), data_type=data_type)
        assert decoded.dtype == np.dtype(data_type)
        assert np.array_equal(np.asarray(decoded), data)


@pytest.mark.parametrize("shuffle", [0, 1, 2, "noshuffle", "shuffle", "bitshuffle"])
@pytest.mark.parametrize("typesize", [1, 2, 4, 8])
def test_blosc_shuffles_match_numcodecs(typesize, shuffle):
    data = (np.arange(8000, dtype=np.uint64) % 97).astype(f"<u{typesize}")
    c = codec("Blosc", RAW, typesize=typesize, shuffle=shuffle)
    block = host(c.encode(data))
    assert bytes(oracle("numcodecs").Blosc().decode(block)) == data.tobytes()
    flag = struct.unpack_from("<B", block, 2)[0]
    code = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}.get(shuffle, shuffle)
    assert block[3] == typesize
    if code == 1 and typesize > 1:
        assert flag & 0x01
    if code == 2:
        assert flag & 0x04
    assert host(c.decode(np.frombuffer(block, np.uint8))) == data.tobytes()


def test_blosc_typesize_defaults_to_data_type():
    data = np.arange(4000, dtype="<u4")
    block = host(codec("Blosc", RAW, data_type="<u4").encode(data))
    assert block[3] == 4
    assert bytes(oracle("numcodecs").Blosc().decode(block)) == data.tobytes()


@pytest.mark.parametrize("cname", ["blosclz", "lz4", "lz4hc", "zlib"])
def test_blosc_decodes_numcodecs_compressors(cname):
    data = (np.arange(20_000, dtype="<i4") % 1000).astype("<i4")
    block = oracle("numcodecs").Blosc(cname=cname, clevel=5, shuffle=oracle("numcodecs").Blosc.SHUFFLE).encode(data)
    decoded = codec("Blosc", RAW).decode(np.frombuffer(block, np.uint8), data_type="<i4")
    assert np.array_equal(np.asarray(decoded), data)


@pytest.mark.parametrize("shuffle", [0, 1, 2])
def test_blosc_zstd_chunks_decode_as_numcodecs_wrote_them(shuffle):
    data = np.arange(300_000, dtype="<i4") // 7
    block = oracle("numcodecs").Blosc(cname="zstd", shuffle=shuffle).encode(data)
    decoded = codec("Blosc", RAW).decode([np.frombuffer(block, np.uint8)])
    assert host(decoded[0]) == data.tobytes()


def test_empty_arrays_round_trip():
    empty = np.zeros(0, np.uint8)
    for algorithm in ["LZ4", "Snappy", "Deflate", "zlib", "gzip", "GDeflate"]:
        for kind in KINDS.values():
            c = codec(algorithm, kind)
            assert host(c.decode(c.encode(empty))) == b""
    assert codec("LZ4").encode([]) == []
    assert codec("LZ4").decode([]) == []
