"""The `Codec` object on the CPU: options refused with clear exceptions, its properties and repr, a context manager,
the device forced by the environment, and a host allocator serving its arrays."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from codec_helpers import RAW, codec, host, sample

import ferrocomp as fc

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
        (("LZ4",), {"error_bound": 0.1}, "apply to Bitcomp|applies to Bitcomp"),
        (("LZ4",), {"num_rles": 1}, "apply to Cascaded"),
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


def test_deflate_single_block_streams_past_64_kib():
    # nvCOMP's single-block bitstreams hold more than its 64 KiB chunks: one stream, zlib's to read.
    data = sample(200_000)
    stream = host(codec("Deflate", RAW).encode(data))
    assert zlib.decompress(stream, -15) == data.tobytes()
    for algorithm in ["Deflate", "GDeflate"]:
        c = codec(algorithm, RAW)
        assert host(c.decode(c.encode(data))) == data.tobytes()
        with pytest.raises(ValueError, match="16777216-byte chunk limit") as error:
            c.encode(np.zeros((16 << 20) + 1, np.uint8))
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
