"""Cascaded through nvCOMP's `Codec` on the CPU: round trips at every element type and layer option and bitstream,
the ratio its layers reach on sorted offsets, its chunk layout's first bytes (docs/FORMAT.md), and options refused
with clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from codec_helpers import assert_native_stream_names

import ferrocomp as fc

KINDS = [fc.BitstreamKind.NVCOMP_NATIVE, fc.BitstreamKind.RAW, fc.BitstreamKind.WITH_UNCOMPRESSED_SIZE]
DTYPES = ["|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"]


def offsets(count: int, seed: int = 0) -> np.ndarray:
    """Sorted offsets with steps below 50, as the bench's int32 set."""
    return np.cumsum(np.random.default_rng(seed).integers(0, 50, count), dtype=np.int64).astype(np.int32)


def runs(count: int, dtype: str, seed: int = 0) -> np.ndarray:
    """Runs of 1 to 40 equal values of `dtype`, slowly changing, then random bytes (a tail that is no element)."""
    rng = np.random.default_rng(seed)
    values = np.cumsum(rng.integers(-3, 6, count // 8)).astype(np.dtype(dtype))
    data = np.repeat(values, rng.integers(1, 40, len(values)))[:count].tobytes()
    return np.frombuffer(data + rng.integers(0, 256, 3, dtype=np.uint8).tobytes(), np.uint8)


def codec(kind=fc.BitstreamKind.RAW, **options) -> fc.Codec:
    return fc.Codec("Cascaded", device_id="cpu", bitstream_kind=kind, **options)


@pytest.mark.parametrize("kind", KINDS, ids=["native", "raw", "sized"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_element_type_round_trips(dtype, kind):
    data = runs(20_000, dtype)
    c = codec(kind, data_type=dtype)
    assert bytes(c.decode(c.encode(data))) == data.tobytes()


@pytest.mark.parametrize("use_bp", [True, False])
@pytest.mark.parametrize("search_layers", [True, False])
@pytest.mark.parametrize(("num_rles", "num_deltas"), [(0, 0), (1, 0), (2, 1), (4, 4)])
def test_layer_options_round_trip(num_rles, num_deltas, use_bp, search_layers):
    data = runs(30_000, "<u4", 1)
    c = codec(num_rles=num_rles, num_deltas=num_deltas, use_bp=use_bp, search_layers=search_layers)
    assert bytes(c.decode(c.encode(data))) == data.tobytes()


def test_a_list_of_chunks_round_trips():
    chunks = [runs(size, "<i8", seed) for seed, size in enumerate((0, 1, 4096, 70_000))]
    c = codec()
    assert [bytes(d) for d in c.decode(c.encode(chunks))] == [chunk.tobytes() for chunk in chunks]


def test_sorted_offsets_compress_past_nvcomps_ratio():
    data = offsets(1 << 20)
    searched = data.nbytes / len(bytes(codec().encode(data)))
    exact = data.nbytes / len(bytes(codec(search_layers=False).encode(data)))
    assert searched > 5.19  # nvCOMP 6's ratio on the same data (../shared/anchors)
    assert exact < searched


def test_the_raw_block_starts_with_the_documented_header():
    data = offsets(5000)
    block = bytes(codec(data_type="<i4").encode(data))
    # Version 1, element type 4 (nvcompType_t's INT), two reserved bytes, the size, then a size per sub-block.
    assert block[:8] == bytes([1, 4, 0, 0]) + (20_000).to_bytes(4, "little")
    assert len(block) > 8 + 2 * 5


def test_native_stream_names_cascaded():
    data = offsets(10_000)
    assert_native_stream_names(codec(fc.BitstreamKind.NVCOMP_NATIVE), data, 7)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_rles": 5}, "at most 4"),
        ({"num_deltas": 9}, "at most 4"),
        ({"data_type": "<f2", "num_rles": 1}, None),
        ({"data_type": "|V3"}, "3 bytes"),
    ],
)
def test_options_are_checked(options, message):
    if message is None:
        codec(**options)  # a 16-bit float works as 16-bit integers
        return
    with pytest.raises(ValueError, match=message):
        codec(**options)


def test_use_bitpack_is_use_bp():
    data = runs(30_000, "<u4", 2)
    unpacked = bytes(codec(use_bp=False).encode(data))
    assert bytes(codec(use_bitpack=False).encode(data)) == unpacked
    assert bytes(codec(use_bp=False, use_bitpack=False).encode(data)) == unpacked
    assert bytes(codec(use_bitpack=True).encode(data)) != unpacked
    with pytest.raises(ValueError, match="use_bp and use_bitpack .* disagree"):
        codec(use_bp=True, use_bitpack=False)


def test_corrupt_streams_raise():
    block = bytearray(bytes(codec().encode(offsets(5000))))
    block[0] = 9
    with pytest.raises(Exception, match="(?i)version|support"):
        codec().decode(np.frombuffer(bytes(block), np.uint8))
