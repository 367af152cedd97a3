"""nvCOMP's `Array`, `as_array(s)`, `from_dlpack`, `CudaStream` and the enums, on host memory: views without copies
of bytes, bytearrays, memoryviews, `array.array` and NumPy arrays, and what they give back."""

from __future__ import annotations

import array
import gc

import numpy as np
import pytest

import ferrocomp as fc


def address(obj) -> int:
    """The address of a NumPy view of `obj`."""
    return np.asarray(obj).__array_interface__["data"][0]


@pytest.mark.parametrize(
    ("dtype", "shape"),
    [("<f4", (3, 4)), ("|u1", (10,)), ("<i8", (2, 3, 5)), ("<u2", (7,)), ("|b1", (4,)), ("<c16", (3,))],
)
def test_numpy_array_properties(dtype, shape):
    source = (np.arange(int(np.prod(shape))) % 2).astype(dtype).reshape(shape)
    a = fc.as_array(source)
    item = np.dtype(dtype).itemsize
    assert a.buffer_kind == fc.ArrayBufferKind.STRIDED_HOST
    assert a.buffer_size == source.nbytes
    assert a.dtype == np.dtype(dtype)
    assert a.typestr == np.dtype(dtype).str
    assert a.shape == shape and a.ndim == len(shape) and a.size == source.size
    assert a.item_size == item and a.strides == source.strides
    assert len(a) == shape[0]
    assert a.precision == 0
    assert bytes(a) == source.tobytes()
    assert address(a) == source.ctypes.data
    assert np.array_equal(np.asarray(a), source)


def test_array_interface():
    source = np.arange(12, dtype="<f4").reshape(3, 4)
    interface = fc.as_array(source).__array_interface__
    assert interface["shape"] == (3, 4)
    assert interface["typestr"] == "<f4"
    assert interface["data"] == (source.ctypes.data, False)
    assert interface["strides"] is None
    assert interface["version"] == 3


def test_host_array_has_no_cuda_array_interface():
    a = fc.as_array(np.zeros(3))
    assert not hasattr(a, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="host array"):
        a.__cuda_array_interface__  # noqa: B018


def test_bytes_are_read_only_views():
    data = b"ferrocomp"
    a = fc.as_array(data)
    assert (a.shape, a.dtype, bytes(a)) == ((9,), np.uint8, data)
    assert a.__array_interface__["data"][1] is True
    with pytest.raises(ValueError):
        np.asarray(a)[0] = 1


def test_bytearray_is_a_writable_view():
    data = bytearray(b"abcdef")
    a = fc.as_array(data)
    assert a.__array_interface__["data"][1] is False
    np.asarray(a)[0] = ord("z")
    assert data == bytearray(b"zbcdef")
    # The view holds the buffer, so it cannot be resized under it; dropping the view frees it.
    with pytest.raises(BufferError):
        data.extend(b"x" * 1000)
    del a
    gc.collect()
    data.extend(b"x")
    assert len(data) == 7


def test_memoryview_and_array_module_formats():
    cast = fc.as_array(memoryview(bytearray(range(16))).cast("i"))
    assert (cast.shape, cast.dtype) == ((4,), np.dtype("int32"))
    floats = array.array("d", [1.5, 2.5, 3.5])
    a = fc.as_array(floats)
    assert (a.shape, a.dtype, a.item_size) == ((3,), np.float64, 8)
    assert np.asarray(a).tolist() == [1.5, 2.5, 3.5]
    shaped = fc.as_array(memoryview(bytes(24)).cast("B", (2, 3, 4)))
    assert (shaped.shape, shaped.strides) == ((2, 3, 4), (12, 4, 1))


def test_strided_arrays_keep_their_strides():
    source = np.arange(12, dtype="<f4").reshape(3, 4)
    strided = source[:, ::2]
    a = fc.as_array(strided)
    assert a.shape == (3, 2) and a.strides == (16, 8)
    assert a.__array_interface__["strides"] == (16, 8)
    assert np.array_equal(np.asarray(a), strided)
    with pytest.raises(ValueError, match=r"not C-contiguous \(shape \(3, 2\), strides \(16, 8\)\)"):
        bytes(a)
    fortran = fc.as_array(np.asfortranarray(source))
    assert fortran.strides == (4, 12)


def test_zero_dimensional_arrays():
    a = fc.as_array(np.array(3.0))
    assert (a.shape, a.ndim, a.size, a.strides) == ((), 0, 1, ())
    assert bytes(a) == np.array(3.0).tobytes()
    with pytest.raises(TypeError, match="0-d"):
        len(a)


def test_big_endian_and_structured_types():
    big = fc.as_array(np.arange(3, dtype=">i4"))
    assert big.dtype == np.dtype(">i4") and np.asarray(big).tolist() == [0, 1, 2]
    record = fc.as_array(np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8")]))
    assert record.item_size == 12 and record.buffer_size == 36


def test_unsupported_type_string_is_a_value_error():
    with pytest.raises(ValueError, match="array-protocol type string"):
        fc.as_array(np.zeros(3, dtype="M8[s]"))


def test_repr():
    assert repr(fc.as_array(np.zeros((3, 4), "<f4"))) == "Array(shape=(3, 4), typestr='<f4', host)"
    assert repr(fc.as_array(b"abc")) == "Array(shape=(3,), typestr='|u1', host)"


def test_array_keeps_its_source_alive():
    source = np.arange(10, dtype=np.uint8)
    a = fc.Array(source)
    del source
    gc.collect()
    assert bytes(a) == bytes(range(10))


def test_as_array_of_an_array_is_itself():
    a = fc.as_array(np.zeros(3))
    assert fc.as_array(a) is a
    assert fc.Array(a).shape == (3,)


def test_as_arrays():
    sources = [np.arange(4, dtype="<i2"), b"xyz", memoryview(b"12")]
    arrays = fc.as_arrays(sources)
    assert [a.shape for a in arrays] == [(4,), (3,), (2,)]
    assert [bytes(a) for a in arrays] == [sources[0].tobytes(), b"xyz", b"12"]
    assert isinstance(arrays, fc.BatchArray) and len(fc.as_arrays(())) == 0


def test_a_batch_array_is_indexed_iterated_and_sized_like_nvcomps():
    sources = [np.arange(n, dtype=np.uint8) for n in (3, 0, 7)]
    batch = fc.as_arrays(sources)
    assert len(batch) == 3 and batch.buffer_sizes == [3, 0, 7]
    assert bytes(batch[2]) == bytes(batch[-1]) == sources[2].tobytes()
    assert [a.buffer_size for a in batch] == [3, 0, 7]
    for index in (3, -4):
        with pytest.raises(IndexError, match="outside a batch of 3"):
            batch[index]
    assert batch.cpu() is batch
    assert repr(batch) == "BatchArray(3 arrays, 10 bytes)"


def test_a_batch_array_in_is_a_batch_array_out():
    codec = fc.Codec("LZ4", device_id="cpu", bitstream_kind=fc.BitstreamKind.RAW)
    chunks = [np.frombuffer(bytes([i]) * (100 + i), np.uint8) for i in range(20)]
    encoded = codec.encode(fc.as_arrays(chunks))
    assert isinstance(encoded, fc.BatchArray) and len(encoded) == 20
    decoded = codec.decode(encoded)
    assert isinstance(decoded, fc.BatchArray)
    assert [bytes(a) for a in decoded] == [c.tobytes() for c in chunks]
    # Into one buffer carved by offsets, as nvCOMP 6's decode(batch, out=as_arrays(...)) does.
    sizes = [len(c) for c in chunks]
    out = np.zeros(sum(sizes), np.uint8)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
    codec.decode(encoded, out=fc.as_arrays(out, offsets, sizes))
    assert out.tobytes() == b"".join(c.tobytes() for c in chunks)
    # A list in is still a list out (nvCOMP 5's way).
    assert isinstance(codec.decode(list(encoded)), list)
    with pytest.raises(ValueError, match="out= is a list of arrays or a BatchArray"):
        codec.decode(encoded, out=np.zeros(10, np.uint8))


@pytest.mark.parametrize("bad", ["text", 3, 1.5, None, object()])
def test_as_array_of_something_else_is_a_type_error(bad):
    with pytest.raises(TypeError):
        fc.as_array(bad)


def test_cpu_of_a_host_array_is_itself():
    a = fc.as_array(np.zeros(3))
    assert a.cpu() is a


def test_cuda_without_a_gpu():
    if fc.device_count() > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        fc.as_array(np.zeros(3)).cuda()


# ---- DLPack ----


def test_dlpack_device_of_host_arrays():
    assert fc.as_array(np.zeros(3)).__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("dtype", ["<f4", "<f8", "<i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1", "<c8"])
def test_numpy_reads_our_dlpack(dtype):
    source = (np.arange(24) % 2).astype(dtype).reshape(2, 3, 4)
    a = fc.as_array(source)
    back = np.from_dlpack(a)
    assert back.dtype == source.dtype and back.shape == source.shape
    assert np.shares_memory(back, source) and np.array_equal(back, source)


def test_numpy_reads_our_strided_dlpack():
    source = np.arange(40, dtype="<i4").reshape(5, 8)[::2, 1::3]
    back = np.from_dlpack(fc.as_array(source))
    assert back.strides == source.strides and np.array_equal(back, source)


def test_dlpack_export_keeps_the_array_alive():
    a = fc.as_array(np.arange(5, dtype=np.int32))
    view = np.from_dlpack(a)
    del a
    gc.collect()
    assert view.tolist() == [0, 1, 2, 3, 4]


def test_to_dlpack_capsule():
    source = np.arange(6, dtype="<f8")
    capsule = fc.as_array(source).to_dlpack()
    assert type(capsule).__name__ == "PyCapsule"
    a = fc.from_dlpack(capsule)
    assert np.shares_memory(np.asarray(a), source)


def test_dlpack_refusals():
    a = fc.as_array(np.zeros(3))
    with pytest.raises(BufferError):
        a.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(2, 0))
    same = fc.from_dlpack(a.__dlpack__(dl_device=(1, 0), max_version=(1, 0)))
    assert address(same) == address(a)
    with pytest.raises(ValueError, match="big-endian"):
        fc.as_array(np.zeros(3, ">i4")).__dlpack__()


@pytest.mark.parametrize("dtype", ["<f4", "<i8", "|u1", "|b1", "<c16"])
def test_from_dlpack_of_numpy(dtype):
    source = (np.arange(12) % 2).astype(dtype).reshape(3, 4)
    for a in [fc.from_dlpack(source), fc.from_dlpack(source.__dlpack__())]:
        assert a.dtype == source.dtype and a.shape == (3, 4)
        assert a.buffer_kind == fc.ArrayBufferKind.STRIDED_HOST
        assert address(a) == source.ctypes.data
        assert bytes(a) == source.tobytes()


def test_from_dlpack_keeps_the_tensor_alive():
    a = fc.from_dlpack(np.arange(100, dtype="<u2"))
    gc.collect()
    assert np.asarray(a).tolist() == list(range(100))


def test_from_dlpack_strided():
    source = np.arange(20, dtype="<i4").reshape(4, 5)[:, ::2]
    a = fc.from_dlpack(source)
    assert a.strides == source.strides and np.array_equal(np.asarray(a), source)


def test_from_dlpack_reads_a_capsule_once():
    capsule = np.arange(3).__dlpack__()
    fc.from_dlpack(capsule)
    with pytest.raises(TypeError, match="unused DLPack capsule"):
        fc.from_dlpack(capsule)
    with pytest.raises(TypeError, match="unused DLPack capsule"):
        fc.from_dlpack(b"not a capsule")


def test_arrays_from_dlpack_encode():
    source = np.arange(5000, dtype="<i4") % 7
    c = fc.Codec("LZ4", device_id="cpu")
    assert bytes(c.decode(c.encode(fc.from_dlpack(source)))) == source.tobytes()


# ---- enums and streams ----

ENUMS = {
    fc.BitstreamKind: ["NVCOMP_NATIVE", "RAW", "WITH_UNCOMPRESSED_SIZE"],
    fc.ChecksumPolicy: [
        "NO_COMPUTE_NO_VERIFY",
        "COMPUTE_AND_NO_VERIFY",
        "NO_COMPUTE_AND_VERIFY_IF_PRESENT",
        "COMPUTE_AND_VERIFY_IF_PRESENT",
        "COMPUTE_AND_VERIFY",
    ],
    fc.ArrayBufferKind: ["STRIDED_DEVICE", "STRIDED_HOST"],
    fc.Status: [
        "SUCCESS",
        "TRUNCATED",
        "BAD_OFFSET",
        "OUTPUT_TOO_SMALL",
        "CHUNK_TOO_LARGE",
        "MALFORMED",
        "BAD_CHECKSUM",
        "UNSUPPORTED",
    ],
}
# The value of each enum's first member (0 but where nvCOMP 6's module numbers from 1, as an H100 showed).
FIRST_VALUE = {fc.ArrayBufferKind: 1}


@pytest.mark.parametrize("enum", ENUMS, ids=lambda e: e.__name__)
def test_enum_names_and_values(enum):
    for value, name in enumerate(ENUMS[enum], start=FIRST_VALUE.get(enum, 0)):
        member = getattr(enum, name)
        assert member.name == name and member.value == value and int(member) == value
        assert member == value and member == getattr(enum, name) and hash(member) == hash(value)
        assert repr(member) == f"{enum.__name__}.{name}"
    assert len({getattr(enum, name) for name in ENUMS[enum]}) == len(ENUMS[enum])


def test_status_describes_itself():
    assert "checksum" in fc.Status.BAD_CHECKSUM.describe().lower()
    assert "truncated" in fc.Status.TRUNCATED.describe().lower()
    assert len({getattr(fc.Status, name).describe() for name in ENUMS[fc.Status]}) == len(ENUMS[fc.Status])


def test_exceptions():
    assert issubclass(fc.DecodeError, fc.ChunkError) and issubclass(fc.EncodeError, fc.ChunkError)
    assert issubclass(fc.ChunkError, ValueError) and issubclass(fc.ChunkError, RuntimeError)
    error = fc.DecodeError("chunk 3: bad", 3, fc.Status.MALFORMED)
    assert (str(error), error.chunk, error.status) == ("chunk 3: bad", 3, fc.Status.MALFORMED)
    assert fc.DecodeError("whole stream").chunk is None


@pytest.mark.parametrize(("handle", "device", "expected_device"), [(0, -1, 0), (1, -1, 0), (2, 1, 1)])
def test_borrow_special_streams(handle, device, expected_device):
    stream = fc.CudaStream.borrow(handle, device)
    assert (stream.ptr, stream.device, stream.is_special, int(stream)) == (handle, expected_device, True, handle)
    assert repr(stream) == f"CudaStream(ptr={handle:#x}, device={expected_device})"


def test_streams_without_a_gpu():
    if fc.device_count() > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        fc.CudaStream.make_new()
    with pytest.raises(RuntimeError, match="no CUDA device"):
        fc.CudaStream.borrow(0x1234)


def test_external_memory_holds_memory_then_stream():
    class Memory:
        ptr = 1234

    memory = fc.ExternalMemory(Memory(), fc.CudaStream.borrow(0))
    assert memory.ptr == 1234


def test_module_exports():
    assert set(fc.__all__) <= set(dir(fc))
    assert isinstance(fc.__version__, str) and fc.__version__
    assert fc.device_count() >= 0


def test_as_arrays_carves_pieces_of_one_buffer_like_nvcomp():
    buffer = np.arange(100, dtype=np.uint8)
    pieces = fc.as_arrays(buffer, [0, 10, 60], [10, 50, 40])
    assert [bytes(p) for p in pieces] == [buffer[0:10].tobytes(), buffer[10:60].tobytes(), buffer[60:].tobytes()]
    base = buffer.__array_interface__["data"][0]
    assert [p.__array_interface__["data"][0] for p in pieces] == [base, base + 10, base + 60]
    with pytest.raises(ValueError, match="piece 1"):
        fc.as_arrays(buffer, [0, 90], [10, 20])
    with pytest.raises(ValueError, match="2 offsets but 1 sizes"):
        fc.as_arrays(buffer, [0, 10], [10])
