"""nvCOMP's API on the GPU with CuPy: round trips on device arrays, the CUDA array interface's stream honoured, DLPack
both ways, zero-copy asynchronous decoding into slices of one buffer (no allocation, no host wait), streams, Pending
with a corrupt chunk, cpu()/cuda() copies and CuPy's allocator plugged in. Skipped without a GPU (conftest's `cupy`
fixture), failed where FERROCOMP_REQUIRE_GPU=1."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import ferrocomp as fc

RAW = fc.BitstreamKind.RAW
KINDS = [fc.BitstreamKind.NVCOMP_NATIVE, RAW, fc.BitstreamKind.WITH_UNCOMPRESSED_SIZE]
ALGORITHMS = ["LZ4", "Snappy", "Deflate", "zlib", "gzip", "GDeflate", "Blosc", "Zstd", "Cascaded", "Bitcomp", "ANS"]

SPIN_SOURCE = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}
"""


def oracle(module: str):
    """An independent library the test checks against, or a skip where it is not installed."""
    return pytest.importorskip(module)


def sample(size: int, seed: int = 0) -> np.ndarray:
    """`size` compressible bytes."""
    rng = np.random.default_rng(seed)
    words = np.frombuffer(rng.integers(0, 40, size=size // 4 + 1, dtype=np.uint32).tobytes()[:size], np.uint8)
    text = np.resize(np.frombuffer(b"device bytes %d; " % seed, np.uint8), size)
    return np.where(np.arange(size) % 3 == 0, text, words).astype(np.uint8)


def busy(cupy, stream, seconds: float = 0.5) -> None:
    """Queues about `seconds` of GPU work on `stream` (a clock64 spin, or large matrix products without NVRTC)."""
    with stream:
        try:
            kernel = cupy.RawKernel(SPIN_SOURCE, "spin")
            clock_khz = cupy.cuda.Device().attributes["ClockRate"]
            kernel((1,), (1,), (np.int64(seconds * clock_khz * 1000),))
        except Exception:  # no NVRTC: fall back to plain heavy work
            a = cupy.ones((4096, 4096), dtype=cupy.float32)
            for _ in range(int(seconds * 200)):
                a = a @ a
                a /= 4096


def pointer(array) -> int:
    """The device address an array's CUDA array interface gives."""
    return array.__cuda_array_interface__["data"][0]


def gpu_codec(algorithm, kind=RAW, **options) -> fc.Codec:
    """A codec on device 0."""
    return fc.Codec(algorithm, device_id=0, bitstream_kind=kind, **options)


@pytest.fixture
def counting_device_allocator(cupy):
    """CuPy's allocator plugged into ferrocomp, counting its calls; the addresses it gave out."""
    given: list[int] = []

    def allocate(nbytes, stream):
        memory = cupy.cuda.alloc(nbytes)
        given.append(memory.ptr)
        return memory

    fc.set_device_allocator(allocate)
    yield given
    fc.set_device_allocator(None)


@pytest.mark.parametrize("kind", KINDS, ids=["native", "raw", "sized"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_round_trip_on_cupy_arrays(cupy, algorithm, kind):
    chunks = [sample(size, seed) for seed, size in enumerate((1, 1000, 65536))]
    device = [cupy.asarray(chunk) for chunk in chunks]
    c = gpu_codec(algorithm, kind)
    assert c.device_id == 0 and c.cuda_stream is not None
    encoded = c.encode(device)
    assert all(e.buffer_kind == fc.ArrayBufferKind.STRIDED_DEVICE for e in encoded)
    decoded = c.decode(encoded)
    assert [cupy.asnumpy(cupy.asarray(d)).tobytes() for d in decoded] == [ch.tobytes() for ch in chunks]
    one = c.decode(c.encode(device[2]))  # of the codec's element type (Cascaded's <u4)
    assert cupy.array_equal(cupy.asarray(one).view(cupy.uint8), device[2])


@pytest.mark.parametrize("kind", KINDS, ids=["native", "raw", "sized"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_gpu_and_cpu_write_the_same_bytes(cupy, algorithm, kind):
    data = sample(60_000)
    on_gpu = bytes(gpu_codec(algorithm, kind).encode(cupy.asarray(data)).cpu())
    on_cpu = bytes(fc.Codec(algorithm, device_id="cpu", bitstream_kind=kind).encode(data))
    assert on_gpu == on_cpu


def test_raw_blocks_from_the_gpu_open_with_the_cpu_libraries(cupy):
    data = sample(50_000)
    block = bytes(gpu_codec("LZ4").encode(cupy.asarray(data)))
    assert oracle("lz4.block").decompress(block, uncompressed_size=len(data)) == data.tobytes()
    stream = bytes(gpu_codec("gzip").encode(cupy.asarray(data)))
    assert zlib.decompress(stream, 31) == data.tobytes()
    # And the other way: liblz4's block decodes on the GPU.
    foreign = cupy.asarray(np.frombuffer(oracle("lz4.block").compress(data.tobytes(), store_size=False), np.uint8))
    assert cupy.asnumpy(cupy.asarray(gpu_codec("LZ4").decode(foreign))).tobytes() == data.tobytes()


def test_host_inputs_are_uploaded(cupy):
    data = sample(20_000)
    c = gpu_codec("Snappy")
    encoded = c.encode(data)
    assert encoded.buffer_kind == fc.ArrayBufferKind.STRIDED_DEVICE
    assert bytes(c.decode(encoded)) == data.tobytes()


def test_decode_data_type_on_the_gpu(cupy):
    data = cupy.arange(10_000, dtype=cupy.int32) // 7
    c = gpu_codec("LZ4", data_type="<i4")
    decoded = c.decode(c.encode(data), data_type="<i4")
    assert decoded.dtype == np.int32
    assert cupy.array_equal(cupy.asarray(decoded), data)


# ---- array interfaces ----


def test_cuda_array_interface_of_cupy_arrays(cupy):
    source = cupy.arange(24, dtype=cupy.float32).reshape(4, 6)
    a = fc.as_array(source)
    assert a.buffer_kind == fc.ArrayBufferKind.STRIDED_DEVICE
    assert (a.shape, a.dtype, a.strides, a.buffer_size) == ((4, 6), np.float32, (24, 4), 96)
    assert pointer(a) == source.data.ptr
    interface = a.__cuda_array_interface__
    assert interface["version"] == 3 and interface["typestr"] == "<f4"
    assert not hasattr(a, "__array_interface__")
    view = cupy.asarray(a)
    assert view.data.ptr == source.data.ptr and cupy.array_equal(view, source)


def test_cuda_array_interface_stream_is_waited_for(cupy):
    """The codec's stream waits for the stream the producer names in CAI v3 before reading the data."""
    data = sample(200_000)
    source = cupy.zeros(len(data), dtype=cupy.uint8)
    staged = cupy.asarray(data)
    cupy.cuda.Device().synchronize()
    producer = cupy.cuda.Stream(non_blocking=True)
    for kind in [RAW, fc.BitstreamKind.NVCOMP_NATIVE]:
        source.fill(0)
        cupy.cuda.Device().synchronize()
        busy(cupy, producer)
        with producer:
            source[...] = staged  # queued behind the spin: the bytes are zeros until it ends
            assert source.__cuda_array_interface__["stream"] == producer.ptr
            c = gpu_codec("LZ4", kind)
            encoded = c.encode(source)
        assert bytes(c.decode(encoded)) == data.tobytes()


def test_array_cuda_stream_argument_orders_the_consumer(cupy):
    producer, consumer = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    busy(cupy, producer)
    with producer:
        source = cupy.full(1 << 20, 7, dtype=cupy.uint8)
        a = fc.Array(source, cuda_stream=consumer.ptr)  # CuPy names `producer` in the interface
    assert a.__cuda_array_interface__["stream"] == consumer.ptr
    with consumer:
        assert int(cupy.asarray(a).sum()) == 7 << 20


def test_dlpack_with_cupy(cupy):
    source = cupy.arange(60, dtype=cupy.int16).reshape(3, 20)
    a = fc.from_dlpack(source)
    assert a.__dlpack_device__() == (2, 0)
    assert pointer(a) == source.data.ptr and a.shape == (3, 20) and a.dtype == np.int16
    back = cupy.from_dlpack(a)
    assert back.data.ptr == source.data.ptr and cupy.array_equal(back, source)
    via_capsule = fc.from_dlpack(source.__dlpack__())
    assert pointer(via_capsule) == source.data.ptr
    assert cupy.array_equal(cupy.from_dlpack(fc.as_array(source)), source)


def test_dlpack_export_waits_for_pending_work(cupy):
    data = sample(100_000)
    c = gpu_codec("LZ4")
    encoded = c.encode(cupy.asarray(data))
    pending = c.decode(encoded, sync=False)
    consumer = cupy.cuda.Stream(non_blocking=True)
    with consumer:
        result = cupy.from_dlpack(pending.arrays[0])
        assert cupy.asnumpy(result).tobytes() == data.tobytes()
    pending.wait()


# ---- zero copy, no allocation, no host wait ----


def test_decode_into_slices_of_one_buffer_without_allocating_or_waiting(cupy, counting_device_allocator):
    chunks = [sample(size, seed) for seed, size in enumerate((3000, 65536, 20_000, 4096))]
    stream = cupy.cuda.Stream(non_blocking=True)
    c = gpu_codec("LZ4", cuda_stream=stream.ptr)
    assert c.cuda_stream == stream.ptr
    with stream:
        sources = [cupy.asarray(chunk) for chunk in chunks]
        encoded = [cupy.asarray(e) for e in c.encode(sources)]
        whole = cupy.zeros(sum(len(ch) for ch in chunks), dtype=cupy.uint8)
    bounds = np.cumsum([0] + [len(ch) for ch in chunks]).tolist()
    outs = [whole[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    c.decode(encoded, out=outs)  # warm up: the codec's staging slots are made once
    whole.fill(0)
    stream.synchronize()

    before = len(counting_device_allocator)
    busy(cupy, stream)
    with stream:  # the arrays' interfaces name the codec's own stream
        pending = c.decode(encoded, out=outs, sync=False)
    assert not stream.done, "the call waited on the host for work queued before it"
    assert not pending.done
    assert len(counting_device_allocator) == before, "the call allocated device memory"

    decoded = pending.wait()
    assert pending.done
    assert [pointer(d) for d in decoded] == [whole.data.ptr + a for a in bounds[:-1]]
    assert cupy.asnumpy(whole).tobytes() == b"".join(ch.tobytes() for ch in chunks)
    statuses = cupy.asarray(pending.statuses)
    assert statuses.dtype == cupy.uint32 and statuses.tolist() == [0] * len(chunks)
    assert cupy.asarray(pending.sizes).tolist() == [len(ch) for ch in chunks]


def test_decode_packed_into_one_buffer_without_allocating_or_waiting(cupy, counting_device_allocator):
    chunks = [sample(size, seed) for seed, size in enumerate((3000, 65536, 20_000, 4096))]
    stream = cupy.cuda.Stream(non_blocking=True)
    c = gpu_codec("LZ4", cuda_stream=stream.ptr)
    encoded = [bytes(e.cpu()) for e in c.encode([cupy.asarray(chunk) for chunk in chunks])]
    src_offsets = np.cumsum([0] + [len(e) for e in encoded])
    out_offsets = np.cumsum([0] + [len(ch) for ch in chunks])
    with stream:
        src = cupy.asarray(np.frombuffer(b"".join(encoded), np.uint8))
        whole = cupy.zeros(int(out_offsets[-1]), dtype=cupy.uint8)
    c.decode_packed(src, src_offsets, whole, out_offsets)  # warm up: the codec's staging slots are made once
    whole.fill(0)
    stream.synchronize()

    before = len(counting_device_allocator)
    busy(cupy, stream)
    pending = c.decode_packed(src, src_offsets, whole, out_offsets, sync=False)
    assert not stream.done, "the call waited on the host for work queued before it"
    assert len(counting_device_allocator) == before, "the call allocated device memory"
    assert [pointer(a) for a in pending.arrays] == [whole.data.ptr]
    assert cupy.asnumpy(pending.wait()).tolist() == [len(ch) for ch in chunks]
    assert cupy.asnumpy(whole).tobytes() == b"".join(ch.tobytes() for ch in chunks)


def test_sync_decode_into_out_returns_the_callers_memory(cupy):
    chunks = [sample(5000, seed) for seed in range(3)]
    c = gpu_codec("Deflate")
    encoded = c.encode([cupy.asarray(ch) for ch in chunks])
    outs = [cupy.empty(5000, dtype=cupy.uint8) for _ in chunks]
    decoded = c.decode(encoded, out=outs)
    assert [pointer(d) for d in decoded] == [o.data.ptr for o in outs]
    assert [cupy.asnumpy(o).tobytes() for o in outs] == [ch.tobytes() for ch in chunks]
    assert all(d.__cuda_array_interface__["stream"] is None for d in decoded)


def test_pending_arrays_carry_the_codec_stream(cupy):
    stream = cupy.cuda.Stream(non_blocking=True)
    c = gpu_codec("LZ4", cuda_stream=stream)
    encoded = c.encode([cupy.asarray(sample(4000))])
    pending = c.decode(encoded, sync=False)
    assert [a.__cuda_array_interface__["stream"] for a in pending.arrays] == [stream.ptr]
    assert pending.statuses.__cuda_array_interface__["stream"] == stream.ptr
    assert pending.statuses.buffer_kind == fc.ArrayBufferKind.STRIDED_DEVICE
    with stream:
        assert cupy.asnumpy(cupy.asarray(pending.arrays[0])).tobytes() == sample(4000).tobytes()
    pending.wait()


def test_async_pending_with_a_corrupt_chunk(cupy):
    chunks = [sample(size, seed) for seed, size in enumerate((1000, 2000, 3000, 4000))]
    c = gpu_codec("LZ4")
    encoded = [bytes(e) for e in c.encode([cupy.asarray(ch) for ch in chunks])]
    encoded[2] = encoded[2][:5] + bytes(range(256)) * 2
    sources = [cupy.asarray(np.frombuffer(e, np.uint8)) for e in encoded]
    outs = [cupy.zeros(len(ch), dtype=cupy.uint8) for ch in chunks]
    pending = c.decode(sources, out=outs, sync=False)
    statuses = cupy.asnumpy(cupy.asarray(pending.statuses)).tolist()
    sizes = cupy.asnumpy(cupy.asarray(pending.sizes)).tolist()
    assert statuses[2] != 0 and statuses[:2] + statuses[3:] == [0, 0, 0]
    assert sizes[:2] + sizes[3:] == [1000, 2000, 4000]
    with pytest.raises(fc.DecodeError) as error:
        pending.wait()
    assert error.value.chunk == 2 and error.value.status == statuses[2]
    for i in (0, 1, 3):
        assert cupy.asnumpy(outs[i]).tobytes() == chunks[i].tobytes()
    with pytest.raises(fc.DecodeError) as error:
        c.decode(sources)
    assert error.value.chunk == 2


def test_native_corrupt_stream_on_the_gpu(cupy):
    c = gpu_codec("LZ4", fc.BitstreamKind.NVCOMP_NATIVE)
    stream = bytearray(bytes(c.encode(cupy.asarray(sample(50_000)))))
    stream[16:24] = (1 << 50).to_bytes(8, "little")
    with pytest.raises(fc.DecodeError, match="invalid container"):
        c.decode(cupy.asarray(np.frombuffer(bytes(stream), np.uint8)))


def test_out_on_the_wrong_side(cupy):
    c = gpu_codec("LZ4")
    encoded = c.encode(cupy.asarray(sample(1000)))
    with pytest.raises(ValueError, match="device memory"):
        c.decode(encoded, out=np.zeros(1000, np.uint8))
    with pytest.raises(ValueError, match="on a GPU"):
        fc.Codec("LZ4", device_id="cpu", bitstream_kind=RAW).decode(bytes(encoded), out=cupy.zeros(1000, cupy.uint8))


# ---- copies and streams ----


def test_cpu_and_cuda_copies(cupy):
    data = np.arange(1000, dtype="<u4")
    on_device = fc.as_array(data).cuda()
    assert on_device.buffer_kind == fc.ArrayBufferKind.STRIDED_DEVICE
    assert on_device.shape == (1000,) and on_device.dtype == np.uint32
    assert cupy.array_equal(cupy.asarray(on_device), cupy.asarray(data))
    assert on_device.cuda() is on_device
    back = on_device.cpu()
    assert back.buffer_kind == fc.ArrayBufferKind.STRIDED_HOST
    assert np.array_equal(np.asarray(back), data)
    assert not np.shares_memory(np.asarray(back), data)
    stream = cupy.cuda.Stream(non_blocking=True)
    later = fc.as_array(data).cuda(synchronize=False, cuda_stream=stream.ptr)
    assert later.__cuda_array_interface__["stream"] == stream.ptr
    with stream:
        assert cupy.array_equal(cupy.asarray(later), cupy.asarray(data))
    assert bytes(fc.as_array(cupy.asarray(data))) == data.tobytes()


def test_cuda_streams(cupy):
    own = fc.CudaStream.make_new()
    assert own.device == 0 and not own.is_special and own.ptr != 0
    theirs = cupy.cuda.Stream(non_blocking=True)
    borrowed = fc.CudaStream.borrow(theirs.ptr)
    assert (borrowed.ptr, borrowed.device, borrowed.is_special) == (theirs.ptr, 0, False)
    with pytest.raises(ValueError, match="belongs to device 0"):
        fc.CudaStream.borrow(theirs.ptr, 1)
    c = gpu_codec("LZ4", cuda_stream=own)
    assert c.cuda_stream == own.ptr
    data = sample(10_000)
    assert bytes(c.decode(c.encode(cupy.asarray(data)))) == data.tobytes()


def test_work_on_a_borrowed_stream_follows_the_producer(cupy):
    data = sample(300_000)
    stream = cupy.cuda.Stream(non_blocking=True)
    c = gpu_codec("Snappy", cuda_stream=stream.ptr)
    with stream:
        staged = cupy.asarray(data)
        source = cupy.zeros(len(data), dtype=cupy.uint8)
        stream.synchronize()
        busy(cupy, stream)
        source[...] = staged  # queued behind the spin on the codec's own stream
        encoded = c.encode(source, sync=False).wait()
        decoded = c.decode(encoded)
    assert bytes(decoded) == data.tobytes()


# ---- allocators ----


def test_cupy_device_allocator_serves_ferrocomp(cupy, counting_device_allocator):
    data = sample(100_000)
    c = gpu_codec("LZ4")
    encoded = c.encode(cupy.asarray(data))
    decoded = c.decode(encoded)
    assert counting_device_allocator, "the allocator was never called"
    assert pointer(encoded) in counting_device_allocator
    assert pointer(decoded) in counting_device_allocator
    assert bytes(decoded) == data.tobytes()


def test_failing_device_allocator_raises(cupy):
    def broken(nbytes, stream):
        raise MemoryError("device pool exhausted")

    fc.set_device_allocator(broken)
    try:
        with pytest.raises((MemoryError, ValueError, RuntimeError), match="device pool exhausted"):
            gpu_codec("LZ4").decode(gpu_codec("LZ4").encode(cupy.asarray(sample(1000))))
    finally:
        fc.set_device_allocator(None)
