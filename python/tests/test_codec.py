"""nvCOMP's `Codec` on the CPU: every algorithm and bitstream round trip, checked byte for byte against the
original and against independent libraries (lz4, cramjam's Snappy, zlib, numcodecs' Blosc); `out=`, `sync=False`,
checksums, and bad input raising clear exceptions."""

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


# ---- round trips ----


@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS.keys())
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_round_trip_one_array(algorithm, kind):
    data = sample(50_000)
    c = codec(algorithm, kind)
    encoded = c.encode(data)
    assert isinstance(encoded, fc.Array)
    assert encoded.dtype == np.uint8 and encoded.ndim == 1
    assert encoded.buffer_kind == fc.ArrayBufferKind.STRIDED_HOST
    decoded = c.decode(encoded)
    assert isinstance(decoded, fc.Array)
    assert host(decoded) == data.tobytes()
    assert decoded.dtype == np.uint8 and decoded.shape == (len(data),)


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
        assert struct.unpack_from("<Q", raw)[0] == len(chunk)
        assert decode_block(algorithm, raw[8:], len(chunk)) == chunk.tobytes()
    built = [
        np.frombuffer(struct.pack("<Q", len(ch)) + encode_block(algorithm, ch.tobytes()), np.uint8) for ch in chunks
    ]
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


# ---- inputs ----


def test_inputs_from_bytes_bytearray_memoryview_and_arrays():
    data = sample(5000)
    c = codec("LZ4")
    expected = host(c.encode(data))
    for source in [data.tobytes(), bytearray(data.tobytes()), memoryview(data.tobytes()), fc.as_array(data)]:
        assert host(c.encode(source)) == expected
    for source in [expected, bytearray(expected), memoryview(expected), np.frombuffer(expected, np.uint8)]:
        assert host(c.decode(source)) == data.tobytes()


def test_multidimensional_and_typed_inputs_encode_their_bytes():
    data = np.arange(6000, dtype="<f8").reshape(20, 300)
    c = codec("LZ4")
    assert host(c.decode(c.encode(data))) == data.tobytes()
    decoded = c.decode(c.encode(data), data_type="<f8")
    assert np.array_equal(np.asarray(decoded), data.ravel())


def test_non_contiguous_input_is_refused():
    strided = np.arange(1000, dtype=np.uint8)[::2]
    for kind in KINDS.values():
        with pytest.raises(ValueError, match="not C-contiguous"):
            codec("LZ4", kind).encode(strided)
        with pytest.raises(ValueError, match="input 1 is not C-contiguous"):
            codec("LZ4", kind).encode([np.zeros(4, np.uint8), strided])


@pytest.mark.parametrize("bad", ["text", 5, None, object()])
def test_non_array_input_is_a_type_error(bad):
    with pytest.raises(TypeError, match="none of __cuda_array_interface__"):
        codec("LZ4").encode(bad)


# ---- decode output type ----


@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS.keys())
def test_decode_data_type(kind):
    data = np.arange(3000, dtype="<i4")
    c = codec("LZ4", kind)
    encoded = c.encode(data)
    for data_type in ["<i4", np.int32, np.dtype("<i4"), "int32"]:
        decoded = c.decode(encoded, data_type=data_type)
        assert decoded.dtype == np.int32 and decoded.shape == (3000,)
        assert np.array_equal(np.asarray(decoded), data)
    as_u2 = c.decode(encoded, data_type="<u2")
    assert as_u2.dtype == np.uint16 and np.array_equal(np.asarray(as_u2), data.view("<u2"))
    assert c.decode(encoded).dtype == np.uint8


def test_decode_data_type_that_does_not_divide_the_size():
    c = codec("LZ4", RAW)
    encoded = c.encode(np.arange(10, dtype=np.uint8))
    with pytest.raises(ValueError, match="not a whole number"):
        c.decode(encoded, data_type="<i4")
    with pytest.raises(ValueError, match="not a whole number"):
        codec("LZ4").decode(codec("LZ4").encode(np.arange(10, dtype=np.uint8)), data_type="<i8")


def test_decode_data_type_nonsense():
    with pytest.raises(TypeError):
        codec("LZ4").decode(codec("LZ4").encode(b"abc"), data_type="nonsense")


# ---- out= ----


@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS.keys())
def test_decode_into_callers_arrays(kind):
    chunks = batch()
    c = codec("LZ4", kind)
    encoded = c.encode(chunks)
    outs = [np.zeros(len(chunk), np.uint8) for chunk in chunks]
    decoded = c.decode(encoded, out=outs)
    for array, out, chunk in zip(decoded, outs, chunks, strict=True):
        view = np.asarray(array)
        assert view.__array_interface__["data"][0] == out.ctypes.data
        assert np.shares_memory(view, out)
        assert np.array_equal(out, chunk)


def test_decode_into_slices_of_one_buffer():
    chunks = batch((100, 2000, 30_000))
    c = codec("Snappy", RAW)
    encoded = c.encode(chunks)
    whole = np.full(sum(len(ch) for ch in chunks) + 10, 0xEE, np.uint8)
    bounds = np.cumsum([0] + [len(ch) for ch in chunks])
    outs = [whole[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    decoded = c.decode(encoded, out=outs)
    assert [np.asarray(d).ctypes.data for d in decoded] == [whole.ctypes.data + int(a) for a in bounds[:-1]]
    assert whole[: bounds[-1]].tobytes() == b"".join(ch.tobytes() for ch in chunks)
    assert (whole[bounds[-1] :] == 0xEE).all()


def test_decode_into_larger_out_returns_the_filled_prefix():
    data = np.arange(1000, dtype="<u4")
    c = codec("LZ4", RAW)
    out = np.zeros(1500, "<u4")
    decoded = c.decode(c.encode(data), out=out)
    assert decoded.shape == (1000,) and decoded.dtype == np.uint32
    assert np.asarray(decoded).ctypes.data == out.ctypes.data
    assert np.array_equal(out[:1000], data) and not out[1000:].any()


def test_decode_into_exact_out_keeps_its_shape():
    data = np.arange(1200, dtype="<f4").reshape(30, 40)
    c = codec("LZ4", RAW)
    out = np.zeros((30, 40), "<f4")
    decoded = c.decode(c.encode(data), out=out)
    assert decoded.shape == (30, 40) and decoded.dtype == np.float32
    assert np.shares_memory(np.asarray(decoded), out) and np.array_equal(out, data)


def test_native_decode_into_out():
    data = sample(100_000)
    c = codec("Deflate", NATIVE)
    out = np.zeros(len(data), np.uint8)
    decoded = c.decode(c.encode(data), out=out)
    assert np.shares_memory(np.asarray(decoded), out) and np.array_equal(out, data)


@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS.keys())
def test_encode_into_callers_arrays(kind):
    chunks = batch((100, 5000))
    c = codec("LZ4", kind)
    expected = [host(e) for e in c.encode(chunks)]
    room = max(len(e) for e in expected) if kind == NATIVE else c.max_compressed_size(5000)
    outs = [np.zeros(room, np.uint8) for _ in chunks]
    encoded = c.encode(chunks, out=outs)
    for array, out, want in zip(encoded, outs, expected, strict=True):
        assert np.asarray(array).ctypes.data == out.ctypes.data
        assert host(array) == want


def test_max_compressed_size_bounds_incompressible_data():
    noise = np.random.default_rng(7).integers(0, 256, 65536, dtype=np.uint8)
    for algorithm in ["LZ4", "Snappy", "Deflate", "zlib", "gzip", "GDeflate", "Blosc"]:
        for kind in [RAW, SIZED]:
            c = codec(algorithm, kind)
            bound = c.max_compressed_size(len(noise))
            assert len(host(c.encode(noise))) <= bound
    with pytest.raises(ValueError, match="RAW"):
        codec("LZ4", NATIVE).max_compressed_size(10)


def test_out_too_small_to_decode_into():
    c = codec("LZ4", RAW)
    encoded = c.encode(batch((1000, 1000)))
    outs = [np.zeros(1000, np.uint8), np.zeros(999, np.uint8)]
    with pytest.raises(fc.DecodeError) as error:
        c.decode(encoded, out=outs)
    assert error.value.chunk == 1 and error.value.status == fc.Status.OUTPUT_TOO_SMALL


def test_out_too_small_to_encode_into():
    c = codec("LZ4", RAW)
    with pytest.raises(fc.EncodeError) as error:
        c.encode([sample(1000), sample(1000)], out=[np.zeros(2000, np.uint8), np.zeros(3, np.uint8)])
    assert error.value.status == fc.Status.OUTPUT_TOO_SMALL
    with pytest.raises(ValueError, match="out holds 3 bytes"):
        codec("LZ4", NATIVE).encode(sample(1000), out=np.zeros(3, np.uint8))


def test_bad_out_arguments():
    c = codec("LZ4", RAW)
    encoded = c.encode(batch((100, 100)))
    with pytest.raises(ValueError, match="2 inputs but 1 out= arrays"):
        c.decode(encoded, out=[np.zeros(100, np.uint8)])
    with pytest.raises(ValueError, match="out= is a list"):
        c.decode(encoded, out=np.zeros(100, np.uint8))
    with pytest.raises(ValueError, match="not a list"):
        c.decode(encoded[0], out=[np.zeros(100, np.uint8)])
    with pytest.raises(ValueError, match="out array 1 is read-only"):
        c.decode(encoded, out=[np.zeros(100, np.uint8), np.frombuffer(bytes(100), np.uint8)])
    with pytest.raises(ValueError, match="out array 0 is not C-contiguous"):
        c.decode(encoded, out=[np.zeros(200, np.uint8)[::2], np.zeros(100, np.uint8)])
    with pytest.raises(TypeError):
        c.decode(encoded, out=[np.zeros(100, np.uint8), "no"])


def test_decode_into_out_of_another_dtype_fills_its_bytes():
    data = np.arange(256, dtype=np.uint8)
    c = codec("LZ4", RAW)
    out = np.zeros(64, "<u4")
    decoded = c.decode(c.encode(data), out=out)
    assert decoded.shape == (64,) and decoded.dtype == np.uint32
    assert out.tobytes() == data.tobytes()


# ---- sync=False ----


@pytest.mark.parametrize("kind", [RAW, SIZED], ids=["raw", "sized"])
def test_async_decode_pending(kind):
    chunks = batch()
    c = codec("Deflate", kind)
    encoded = c.encode(chunks)
    pending = c.decode(encoded, sync=False)
    assert isinstance(pending, fc.Pending)
    assert pending.done is True
    statuses, sizes = np.asarray(pending.statuses), np.asarray(pending.sizes)
    assert statuses.dtype == np.uint32 and sizes.dtype == np.uint64
    assert statuses.tolist() == [fc.Status.SUCCESS.value] * len(chunks)
    assert sizes.tolist() == [len(chunk) for chunk in chunks]
    assert [host(a) for a in pending.arrays] == [chunk.tobytes() for chunk in chunks]
    result = pending.wait()
    assert [host(a) for a in result] == [chunk.tobytes() for chunk in chunks]
    assert [host(a) for a in pending.wait()] == [chunk.tobytes() for chunk in chunks]


@pytest.mark.parametrize("kind", [RAW, SIZED], ids=["raw", "sized"])
def test_async_encode_pending_sizes_leave_out_the_prefix(kind):
    chunks = batch((100, 5000))
    c = codec("LZ4", kind)
    expected = [host(e) for e in c.encode(chunks)]
    pending = c.encode(chunks, sync=False)
    prefix = 8 if kind == SIZED else 0
    assert np.asarray(pending.sizes).tolist() == [len(e) - prefix for e in expected]
    assert [host(a) for a in pending.wait()] == expected


def test_async_single_array_returns_one_array():
    data = sample(3000)
    c = codec("LZ4", RAW)
    result = c.decode(c.encode(data), sync=False).wait()
    assert isinstance(result, fc.Array) and host(result) == data.tobytes()


def test_async_decode_with_a_corrupt_chunk_into_out():
    chunks = batch((1000, 2000, 3000, 4000))
    c = codec("LZ4", RAW)
    encoded = [host(e) for e in c.encode(chunks)]
    encoded[2] = encoded[2][:5] + b"\xff" * (len(encoded[2]) - 5)
    outs = [np.zeros(len(chunk), np.uint8) for chunk in chunks]
    pending = c.decode([np.frombuffer(e, np.uint8) for e in encoded], out=outs, sync=False)
    statuses = np.asarray(pending.statuses).tolist()
    assert statuses[:2] + statuses[3:] == [0, 0, 0] and statuses[2] != 0
    assert np.asarray(pending.sizes).tolist() == [1000, 2000, 0, 4000]
    for i in (0, 1, 3):
        assert np.array_equal(outs[i], chunks[i])
    with pytest.raises(fc.DecodeError) as error:
        pending.wait()
    assert error.value.chunk == 2 and error.value.status == statuses[2]
    assert error.value.status.value == statuses[2]
    with pytest.raises(fc.DecodeError):
        pending.wait()


def test_async_needs_a_chunk_list_bitstream():
    c = codec("LZ4", NATIVE)
    with pytest.raises(ValueError, match="sync=False needs RAW"):
        c.decode(c.encode(b"abc"), sync=False)
    with pytest.raises(ValueError, match="sync=False needs RAW"):
        c.encode(b"abc", sync=False)


# ---- errors ----


def corrupt_batch(algorithm: str, kind=RAW):
    """A batch of four encoded chunks whose third is garbage after its first bytes."""
    chunks = batch((1000, 2000, 3000, 4000))
    c = codec(algorithm, kind)
    encoded = [host(e) for e in c.encode(chunks)]
    keep = 8 + 5 if kind == SIZED else 5
    encoded[2] = encoded[2][:keep] + bytes(range(256)) * 2
    return c, chunks, [np.frombuffer(e, np.uint8) for e in encoded]


@pytest.mark.parametrize("kind", [RAW, SIZED], ids=["raw", "sized"])
@pytest.mark.parametrize("algorithm", ["LZ4", "Snappy", "Deflate", "zlib", "gzip", "GDeflate", "Blosc"])
def test_decode_error_names_the_chunk_and_keeps_the_others(algorithm, kind):
    c, chunks, encoded = corrupt_batch(algorithm, kind)
    outs = [np.zeros(len(chunk), np.uint8) for chunk in chunks]
    with pytest.raises(fc.DecodeError) as error:
        c.decode(encoded, out=outs)
    assert error.value.chunk == 2
    assert isinstance(error.value.status, fc.Status) and error.value.status != fc.Status.SUCCESS
    assert "chunk 2" in str(error.value)
    for i in (0, 1, 3):
        assert np.array_equal(outs[i], chunks[i])
    # Without out= the batch is sized first, which finds the same chunk.
    with pytest.raises(fc.DecodeError) as error:
        c.decode(encoded)
    assert error.value.chunk == 2


def test_decode_error_is_a_value_error_and_a_runtime_error():
    c, _, encoded = corrupt_batch("LZ4")
    for base in (ValueError, RuntimeError, fc.ChunkError):
        with pytest.raises(base):
            c.decode(encoded)


@pytest.mark.parametrize("kind", [RAW, SIZED], ids=["raw", "sized"])
@pytest.mark.parametrize("algorithm", ["LZ4", "Snappy", "Deflate", "gzip", "GDeflate", "Blosc"])
def test_truncated_chunk(algorithm, kind):
    chunks = batch((5000, 5000))
    c = codec(algorithm, kind)
    encoded = [host(e) for e in c.encode(chunks)]
    cut = encoded[1][: len(encoded[1]) // 2]
    truncated = [np.frombuffer(encoded[0], np.uint8), np.frombuffer(cut, np.uint8)]
    outs = [np.zeros(5000, np.uint8), np.zeros(5000, np.uint8)]
    if algorithm == "LZ4" and kind == RAW:
        # A RAW LZ4 block cut after a whole sequence is a shorter valid block, as liblz4 reads it too.
        decoded = c.decode(truncated, out=outs)
        assert host(decoded[1]) == oracle("lz4.block").decompress(cut, uncompressed_size=5000)
        assert 0 < len(host(decoded[1])) < 5000
    else:
        with pytest.raises(fc.DecodeError) as error:
            c.decode(truncated, out=outs)
        assert error.value.chunk == 1
    assert np.array_equal(outs[0], chunks[0])


def test_with_uncompressed_size_lying_prefix():
    c = codec("LZ4", SIZED)
    block = oracle("lz4.block").compress(b"a" * 1000, store_size=False)
    huge = np.frombuffer(struct.pack("<Q", 1 << 60) + block, np.uint8)
    with pytest.raises(fc.DecodeError) as error:
        c.decode([np.frombuffer(struct.pack("<Q", 1000) + block, np.uint8), huge])
    assert error.value.chunk == 1
    lying = np.frombuffer(struct.pack("<Q", 999) + block, np.uint8)
    with pytest.raises(fc.DecodeError) as error:
        c.decode(lying)
    assert error.value.chunk == 0
    with pytest.raises(fc.DecodeError) as error:
        c.decode(np.frombuffer(b"\x01\x02", np.uint8))
    assert error.value.status == fc.Status.TRUNCATED


def test_native_lying_header_with_a_huge_size():
    stream = bytearray(host(codec("LZ4", NATIVE).encode(sample(5000))))
    stream[16:24] = struct.pack("<Q", 1 << 50)
    with pytest.raises(fc.DecodeError, match="invalid container"):
        codec("LZ4", NATIVE).decode(np.frombuffer(bytes(stream), np.uint8))
    stream[16:24] = struct.pack("<Q", 1 << 50)
    with pytest.raises(fc.DecodeError):
        codec("LZ4", NATIVE).decode(np.frombuffer(bytes(stream), np.uint8), out=np.zeros(5000, np.uint8))


@pytest.mark.parametrize(
    "stream",
    [b"", b"FCMP", b"\x00" * 64, b"XXXX" + b"\x01" * 60],
    ids=["empty", "magic-only", "zeros", "bad-magic"],
)
def test_native_garbage(stream):
    with pytest.raises(fc.DecodeError, match="invalid container") as error:
        fc.Codec(device_id="cpu").decode(np.frombuffer(stream, np.uint8))
    assert error.value.chunk is None and error.value.status == fc.Status.MALFORMED


def test_native_truncated_stream():
    stream = host(codec("Snappy", NATIVE).encode(sample(50_000)))
    with pytest.raises(fc.DecodeError, match="invalid container"):
        codec("Snappy", NATIVE).decode(np.frombuffer(stream[: len(stream) - 10], np.uint8))


def test_native_corrupt_chunk_names_it():
    data = sample(20_000)
    c = codec("LZ4", NATIVE, uncomp_chunk_size=4096)
    stream = host(c.encode(data))
    _, _, _, chunks = native_chunks(stream)
    start = len(stream) - sum(len(ch) for ch in chunks) + sum(len(ch) for ch in chunks[:3])
    corrupt = bytearray(stream)
    corrupt[start + 1 : start + len(chunks[3])] = b"\xff" * (len(chunks[3]) - 1)
    with pytest.raises(fc.DecodeError) as error:
        c.decode(np.frombuffer(bytes(corrupt), np.uint8))
    assert error.value.chunk == 3


# ---- checksums ----

POLICIES = [
    "NO_COMPUTE_NO_VERIFY",
    "COMPUTE_AND_NO_VERIFY",
    "NO_COMPUTE_AND_VERIFY_IF_PRESENT",
    "COMPUTE_AND_VERIFY_IF_PRESENT",
    "COMPUTE_AND_VERIFY",
]


def flip_last_chunk_byte(stream: bytes) -> np.ndarray:
    """The stream with a bit flipped near its end (inside the last chunk)."""
    corrupt = bytearray(stream)
    corrupt[-20] ^= 0x40
    return np.frombuffer(bytes(corrupt), np.uint8)


@pytest.mark.parametrize("policy", POLICIES)
def test_checksum_policies(policy):
    data = np.frombuffer(b"".join(b"line %d\n" % i for i in range(2000)), np.uint8)
    chosen = getattr(fc.ChecksumPolicy, policy)
    c = codec("LZ4", NATIVE, checksum_policy=chosen, uncomp_chunk_size=1024)
    stream = host(c.encode(data))
    computes = policy.startswith("COMPUTE")
    flags = stream[6]
    assert flags == (3 if computes else 0)
    assert host(c.decode(np.frombuffer(stream, np.uint8))) == data.tobytes()
    checked = codec(
        "LZ4", NATIVE, checksum_policy=fc.ChecksumPolicy.COMPUTE_AND_VERIFY_IF_PRESENT, uncomp_chunk_size=1024
    )
    with_sums = host(checked.encode(data))
    verifies = "VERIFY" in policy and "NO_VERIFY" not in policy
    if verifies:
        with pytest.raises(fc.DecodeError) as error:
            c.decode(flip_last_chunk_byte(with_sums))
        assert error.value.status == fc.Status.BAD_CHECKSUM
        assert error.value.chunk == len(data) // 1024
    else:
        assert host(c.decode(flip_last_chunk_byte(with_sums))) != data.tobytes()


def test_compute_and_verify_requires_checksums():
    data = sample(5000)
    plain = codec("LZ4", NATIVE).encode(data)
    with pytest.raises(fc.DecodeError, match="requires checksums"):
        codec("LZ4", NATIVE, checksum_policy=fc.ChecksumPolicy.COMPUTE_AND_VERIFY).decode(plain)
    lenient = fc.ChecksumPolicy.NO_COMPUTE_AND_VERIFY_IF_PRESENT
    assert host(codec("LZ4", NATIVE, checksum_policy=lenient).decode(plain)) == data.tobytes()


def test_checksums_need_the_native_bitstream():
    for kind in [RAW, SIZED]:
        with pytest.raises(ValueError, match="NVCOMP_NATIVE"):
            codec("LZ4", kind, checksum_policy=fc.ChecksumPolicy.COMPUTE_AND_VERIFY)


# ---- bad options ----


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (("lzma",), {}, "unknown algorithm"),
        (("",), {}, "unknown algorithm"),
        (("deflate",), {"algorithm_type": 6}, "outside 0..=5"),
        (("deflate",), {"algorithm_type": -1}, "outside 0..=5"),
        (("LZ4",), {"algorithm_type": 1}, "applies to Deflate, GDeflate, Zstd and Bitcomp"),
        (("zstd",), {"algorithm_type": 4}, "outside 1..=3"),
        (("LZ4",), {"wrapper": "zlib"}, "wrapper applies to Deflate"),
        (("deflate",), {"wrapper": "brotli"}, "does not fit"),
        (("zlib",), {"wrapper": "gzip"}, "does not fit"),
        (("LZ4",), {"shuffle": 1}, "apply to Blosc"),
        (("LZ4",), {"typesize": 4}, "apply to Blosc"),
        (("Blosc",), {"shuffle": 3}, "bitshuffle"),
        (("Blosc",), {"shuffle": "byteshuffle"}, "bitshuffle"),
        (("Blosc",), {"typesize": 0}, "outside 1..=255"),
        (("Blosc",), {"typesize": 256}, "outside 1..=255"),
        (("LZ4",), {"data_type": "|V3"}, "take 1, 2, 4 or 8"),
        (("LZ4",), {"device_id": "gpu"}, "device index"),
        (("LZ4",), {"uncomp_chunk_size": 0}, "chunk size 0"),
        ((), {"bitstream_kind": RAW}, "name no algorithm"),
    ],
)
def test_bad_options_raise_value_error(args, kwargs, match):
    kwargs.setdefault("device_id", "cpu")
    with pytest.raises(ValueError, match=match):
        fc.Codec(*args, **kwargs)


def test_bad_option_types_raise_type_error():
    with pytest.raises(TypeError):
        fc.Codec("LZ4", device_id="cpu", bitstream_kind="RAW")
    with pytest.raises(TypeError):
        fc.Codec("LZ4", device_id="cpu", checksum_policy=3)
    with pytest.raises(TypeError):
        fc.Codec("LZ4", "cpu")


def test_decode_only_codec_cannot_encode():
    with pytest.raises(ValueError, match="no algorithm"):
        fc.Codec(device_id="cpu").encode(b"abc")


def test_deflate_chunk_limit_for_single_block_streams():
    big = sample(65537)
    for algorithm in ["Deflate", "GDeflate"]:
        with pytest.raises(ValueError, match="65536-byte chunk limit") as error:
            codec(algorithm, RAW).encode(big)
        assert str(error.value).count("invalid argument") <= 1


def test_no_gpu_device_id_is_a_runtime_error():
    if fc.device_count() > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        fc.Codec("LZ4", device_id=0)


# ---- the codec object ----


def test_codec_properties_and_repr():
    c = codec("gzip", RAW)
    assert (c.algorithm, c.bitstream_kind, c.device_id, c.cuda_stream) == ("gzip", RAW, "cpu", None)
    assert repr(c) == "Codec(algorithm='gzip', bitstream_kind=BitstreamKind.RAW, device_id='cpu')"
    assert repr(fc.Codec(device_id="cpu")) == (
        "Codec(algorithm=None, bitstream_kind=BitstreamKind.NVCOMP_NATIVE, device_id='cpu')"
    )
    assert fc.Codec("lz4", device_id="CPU").device_id == "cpu"


def test_codec_is_a_context_manager():
    with codec("LZ4") as c:
        assert host(c.decode(c.encode(b"hello hello hello"))) == b"hello hello hello"


def test_cpu_forced_by_environment(monkeypatch):
    monkeypatch.setenv("FERROCOMP_CPU", "1")
    assert fc.Codec("LZ4").device_id == "cpu"
    assert fc.device_count() == 0


def test_host_allocator_serves_returned_arrays():
    calls, keep = [], []

    class Memory:
        def __init__(self, nbytes):
            self.buffer = np.zeros(max(nbytes, 1), np.uint8)
            self.ptr = self.buffer.ctypes.data

    def allocate(nbytes, stream):
        calls.append((nbytes, stream))
        memory = Memory(nbytes)
        keep.append(memory.buffer)
        return memory

    fc.set_host_allocator(allocate)
    try:
        c = codec("LZ4", RAW)
        data = sample(3000)
        encoded = c.encode(data)
        decoded = c.decode(encoded)
    finally:
        fc.set_host_allocator(None)
    assert [nbytes for nbytes, _ in calls] == [c.max_compressed_size(3000), 3000]
    assert isinstance(calls[0][1], fc.CudaStream)
    assert np.shares_memory(np.asarray(encoded), keep[0]) and np.shares_memory(np.asarray(decoded), keep[1])
    assert host(decoded) == data.tobytes()
    after = codec("LZ4", RAW).decode(encoded)
    assert len(calls) == 2 and host(after) == data.tobytes()


def test_failing_host_allocator_raises_its_error():
    c = codec("LZ4", RAW)
    encoded = c.encode(b"abc" * 100)

    def broken(nbytes, stream):
        raise MemoryError("pool exhausted")

    fc.set_host_allocator(broken)
    try:
        with pytest.raises(MemoryError, match="pool exhausted"):
            c.decode(encoded)
        fc.set_host_allocator(lambda nbytes, stream: object())
        with pytest.raises(AttributeError, match="ptr"):
            c.decode(encoded)
    finally:
        fc.set_host_allocator(None)
    assert host(c.decode(encoded)) == b"abc" * 100


# ---- decode_packed: chunks packed in one buffer, decoded into one buffer ----


def packed(chunks: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """The chunks back to back in one uint8 array, and the n + 1 offsets that cut them out."""
    offsets = np.cumsum([0] + [len(chunk) for chunk in chunks]).astype(np.int64)
    return np.frombuffer(b"".join(chunks), np.uint8).copy(), offsets


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_decode_packed_into_one_buffer(algorithm):
    chunks = batch()
    c = codec(algorithm)
    src, src_offsets = packed([host(e) for e in c.encode(chunks)])
    out = np.zeros(sum(chunk.size for chunk in chunks) + 7, np.uint8)
    out_offsets = np.cumsum([0] + [chunk.size for chunk in chunks])
    sizes = c.decode_packed(src, src_offsets, out, list(out_offsets))
    assert np.asarray(sizes).tolist() == [chunk.size for chunk in chunks]
    assert out[: out_offsets[-1]].tobytes() == b"".join(chunk.tobytes() for chunk in chunks)
    assert not out[out_offsets[-1] :].any(), "bytes past the last chunk were written"


def test_decode_packed_names_the_corrupt_chunk_and_decodes_the_rest():
    chunks = batch()
    c = codec("LZ4")
    encoded = [host(e) for e in c.encode(chunks)]
    encoded[1] = encoded[1][:3] + b"\xff" * 40
    src, src_offsets = packed(encoded)
    out = np.zeros(sum(chunk.size for chunk in chunks), np.uint8)
    out_offsets = np.cumsum([0] + [chunk.size for chunk in chunks])
    with pytest.raises(fc.DecodeError) as error:
        c.decode_packed(src, src_offsets, out, out_offsets)
    assert error.value.chunk == 1
    for i in (0, 2, 3):
        assert out[out_offsets[i] : out_offsets[i + 1]].tobytes() == chunks[i].tobytes()
    pending = c.decode_packed(src, src_offsets, out, out_offsets, sync=False)
    statuses = np.asarray(pending.statuses).tolist()
    assert statuses[1] != 0 and statuses[:1] + statuses[2:] == [0, 0, 0]
    with pytest.raises(fc.DecodeError):
        pending.wait()


@pytest.mark.parametrize(
    ("src_offsets", "out_offsets", "message"),
    [
        ([], [0], "empty"),
        ([0, 5, 3], [0, 1, 2], "decreases at chunk 1"),
        ([0, 10**9], [0, 1], "ends at 1000000000"),
        ([0, 1], [0, 1, 2], "1 src chunks but 2 out chunks"),
    ],
)
def test_decode_packed_rejects_bad_offsets(src_offsets, out_offsets, message):
    c = codec("LZ4")
    with pytest.raises(ValueError, match=message):
        c.decode_packed(np.zeros(16, np.uint8), src_offsets, np.zeros(16, np.uint8), out_offsets)


def test_decode_packed_needs_a_raw_codec_and_a_writable_out():
    with pytest.raises(ValueError, match="RAW"):
        codec("LZ4", NATIVE).decode_packed(np.zeros(4, np.uint8), [0, 4], np.zeros(4, np.uint8), [0, 4])
    readonly = np.zeros(4, np.uint8)
    readonly.flags.writeable = False
    with pytest.raises(ValueError):
        codec("LZ4").decode_packed(np.zeros(4, np.uint8), [0, 4], readonly, [0, 4])
