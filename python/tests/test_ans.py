"""ANS through nvCOMP's `Codec` on the CPU: round trips of bytes and 16-, 32- and 8-bit floats at every bitstream, the
ratio on skewed bytes, its chunk layout's first bytes (docs/FORMAT.md), the stored fallback, and options refused with
clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from codec_helpers import assert_native_stream_names

import ferrocomp as fc

KINDS = [fc.BitstreamKind.NVCOMP_NATIVE, fc.BitstreamKind.RAW, fc.BitstreamKind.WITH_UNCOMPRESSED_SIZE]


def skewed(count: int, seed: int = 0) -> np.ndarray:
    """Mostly a few letters, sometimes any byte."""
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"etaoin s", np.uint8)[rng.integers(0, 8, count)]
    return np.where(rng.integers(0, 8, count) == 0, rng.integers(0, 256, count), letters).astype(np.uint8)


def codec(kind=fc.BitstreamKind.RAW, **options) -> fc.Codec:
    return fc.Codec("ANS", device_id="cpu", bitstream_kind=kind, **options)


@pytest.mark.parametrize("kind", KINDS, ids=["native", "raw", "sized"])
@pytest.mark.parametrize("size", [0, 1, 33, 16385, 100_000])
def test_bytes_round_trip(size, kind):
    data = skewed(size)
    c = codec(kind)
    assert bytes(c.decode(c.encode(data))) == data.tobytes()


@pytest.mark.parametrize("kind", KINDS, ids=["native", "raw", "sized"])
@pytest.mark.parametrize(("dtype", "bound"), [(np.float16, 3 / 4), (np.float32, 4 / 5)], ids=["float16", "float32"])
def test_floats_round_trip_and_compress(kind, dtype, bound):
    data = (1.5 + np.sin(np.arange(50_000) / 300)).astype(dtype)
    c = codec(kind, data_type=data.dtype.str)
    encoded = bytes(c.encode(data))
    assert bytes(c.decode(encoded)) == data.tobytes()
    assert len(encoded) < data.nbytes * bound


def test_float32_keeps_low_bytes_in_order():
    data = (1.5 + np.sin(np.arange(50_000) / 300)).astype(np.float32)
    raw = codec(data_type=np.float32).encode(data)
    # Version 3, float32: the values' three low bytes close the block, in order.
    assert bytes(raw)[:2] == bytes([3, 2])
    assert bytes(raw)[-3 * data.size :] == data.view(np.uint8).reshape(-1, 4)[:, :3].tobytes()


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e4m3fn"])
def test_float8_codes_each_value_whole(name):
    data = (0x30 | (skewed(20_000) & 0x0F)).astype(np.uint8)
    c = codec(data_type=name)
    encoded = bytes(c.encode(data))
    assert bytes(c.decode(encoded)) == data.tobytes()
    assert encoded[1] == 3 and encoded[2:] == bytes(codec().encode(data))[2:]


def test_skewed_bytes_compress_near_their_entropy():
    data = skewed(1 << 20, 3)
    _, counts = np.unique(data, return_counts=True)
    p = counts / data.size
    entropy = -(p * np.log2(p)).sum()
    # The words take no more than the entropy; the rest is the layout's (docs/FORMAT.md): the header, the table,
    # and each sub-block of 8192 symbols' word count and 32 states.
    layout = 8 + 32 + 2 * counts.size + -(-data.size // 8192) * (2 + 4 * 32)
    assert 8 * len(bytes(codec().encode(data))) / data.size < entropy + 8 * layout / data.size


def test_the_raw_block_starts_with_the_documented_header():
    block = bytes(codec().encode(skewed(5000)))
    # Version 3, bytes, not stored, a reserved byte, the size, then the symbol bitmap.
    assert block[:8] == bytes([3, 0, 0, 0]) + (5000).to_bytes(4, "little")


def test_noise_is_stored():
    data = np.random.default_rng(1).integers(0, 256, 10_000, dtype=np.uint8)
    block = bytes(codec().encode(data))
    assert len(block) == 8 + data.size and block[2] == 1


def test_native_stream_names_ans():
    data = skewed(10_000)
    assert_native_stream_names(codec(fc.BitstreamKind.NVCOMP_NATIVE), data, 9)


@pytest.mark.parametrize("dtype", ["<i4", "<f8", "<u2"])
def test_other_data_types_are_refused(dtype):
    with pytest.raises(ValueError, match="float16"):
        codec(data_type=dtype)


def test_corrupt_streams_raise():
    block = bytearray(bytes(codec().encode(skewed(5000))))
    block[0] = 9
    with pytest.raises(Exception, match="(?i)version|support"):
        codec().decode(np.frombuffer(bytes(block), np.uint8))


def test_float16_needs_an_even_chunk_size():
    with pytest.raises(ValueError, match="2-byte values"):
        fc.Codec("ANS", device_id="cpu", data_type="<f2", uncomp_chunk_size=65537)
