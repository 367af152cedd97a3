"""Bitcomp through nvCOMP's `Codec` on the CPU: round trips at every element type, algorithm type and bitstream,
lossy float32/float64 within the error bound element by element, its chunk layout's first bytes (docs/FORMAT.md),
and options refused with clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from codec_helpers import assert_native_stream_names

import ferrocomp as fc

KINDS = [fc.BitstreamKind.NVCOMP_NATIVE, fc.BitstreamKind.RAW, fc.BitstreamKind.WITH_UNCOMPRESSED_SIZE]
DTYPES = ["|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"]


def numbers(count: int, dtype: str, seed: int = 0) -> np.ndarray:
    """Sorted offsets, mostly zeros, a narrow range and noise, of `dtype`, then 3 random bytes (a tail)."""
    rng = np.random.default_rng(seed)
    quarter = count // 4
    parts = [
        np.cumsum(rng.integers(0, 50, quarter)),
        np.where(rng.integers(0, 10, quarter) == 0, rng.integers(1, 200, quarter), 0),
        5000 + rng.integers(0, 30, quarter),
        rng.integers(0, 1 << 62, count - 3 * quarter),
    ]
    data = np.concatenate(parts).astype(np.dtype(dtype)).tobytes()
    return np.frombuffer(data + rng.integers(0, 256, 3, dtype=np.uint8).tobytes(), np.uint8)


def field(count: int, dtype: str) -> np.ndarray:
    """A smooth field with zeros, a NaN and an infinity."""
    values = 280 + 20 * np.sin(np.arange(count) / 700) + (np.arange(count) % 7) * 0.013
    values[100:400] = 0
    values[17], values[18] = np.nan, np.inf
    return values.astype(dtype)


def codec(kind=fc.BitstreamKind.RAW, **options) -> fc.Codec:
    return fc.Codec("Bitcomp", device_id="cpu", bitstream_kind=kind, **options)


@pytest.mark.parametrize("kind", KINDS, ids=["native", "raw", "sized"])
@pytest.mark.parametrize("algorithm_type", [0, 1])
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_element_type_and_algorithm_round_trips(dtype, algorithm_type, kind):
    data = numbers(20_000, dtype)
    c = codec(kind, data_type=dtype, algorithm_type=algorithm_type)
    assert bytes(c.decode(c.encode(data))) == data.tobytes()


def test_a_list_of_chunks_round_trips():
    chunks = [numbers(size, "<i8", seed) for seed, size in enumerate((0, 1, 4096, 70_000))]
    c = codec(algorithm_type=1)
    assert [bytes(d) for d in c.decode(c.encode(chunks))] == [chunk.tobytes() for chunk in chunks]


@pytest.mark.parametrize("algorithm_type", [0, 1])
@pytest.mark.parametrize("bound", [1e-4, 0.01, 1.0])
@pytest.mark.parametrize("dtype", ["<f4", "<f8"])
def test_lossy_values_are_within_the_bound(dtype, bound, algorithm_type):
    data = field(50_000, dtype)
    c = codec(fc.BitstreamKind.NVCOMP_NATIVE, data_type=dtype, algorithm_type=algorithm_type, error_bound=bound)
    encoded = bytes(c.encode(data))
    decoded = np.frombuffer(bytes(c.decode(encoded)), dtype)
    finite = np.isfinite(data)
    np.testing.assert_allclose(decoded[finite], data[finite], rtol=0, atol=bound)
    assert np.array_equal(decoded[~finite], data[~finite], equal_nan=True)
    if bound >= 0.01:
        assert len(encoded) < data.nbytes / 2


def test_sorted_offsets_compress_as_deltas():
    data = np.cumsum(np.random.default_rng(2).integers(0, 50, 1 << 18), dtype=np.int64).astype(np.int32)
    assert data.nbytes / len(bytes(codec(data_type="<i4").encode(data))) > 4


def test_the_raw_block_starts_with_the_documented_header():
    data = numbers(5000, "<u2")
    block = bytes(codec(data_type="<u2", algorithm_type=1).encode(data))
    # Version 2, element type 3 (nvcompType_t's USHORT), the sparse flag, a reserved byte, the size, no bound.
    assert block[:12] == bytes([2, 3, 1, 0]) + (10_003).to_bytes(4, "little") + bytes(4)


def test_native_stream_names_bitcomp():
    data = numbers(10_000, "<u4")
    assert_native_stream_names(codec(fc.BitstreamKind.NVCOMP_NATIVE), data, 8)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"algorithm_type": 2}, "0 \\(default\\) or 1"),
        ({"error_bound": 0.0}, "above 0"),
        ({"error_bound": float("nan")}, "above 0"),
        ({"data_type": "<f2", "error_bound": 0.1}, "4- or 8-byte"),
        ({"data_type": "|V3"}, "3 bytes"),
    ],
)
def test_options_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        codec(**options)


def test_corrupt_streams_raise():
    block = bytearray(bytes(codec().encode(numbers(5000, "|u1"))))
    block[0] = 9
    with pytest.raises(Exception, match="(?i)version|support"):
        codec().decode(np.frombuffer(bytes(block), np.uint8))
