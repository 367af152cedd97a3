"""What `Codec` takes and gives on the CPU: inputs of every kind, the decoded data type, `out=`, `sync=False` and
`decode_packed`."""

from __future__ import annotations

import numpy as np
import pytest
from codec_helpers import ALGORITHMS, KINDS, NATIVE, RAW, SIZE_PREFIX_LEN, SIZED, batch, codec, host, sample

import ferrocomp as fc

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
    # Without one, nvCOMP's default for LZ4: `char`.
    assert c.decode(encoded).dtype == np.int8


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
    prefix = SIZE_PREFIX_LEN if kind == SIZED else 0
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
