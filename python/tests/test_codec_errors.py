"""`Codec` on bad input on the CPU: corrupt, truncated and lying chunks and containers raise clear exceptions naming
the chunk, and checksums are written and checked as their policy says."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from codec_helpers import (
    NATIVE,
    RAW,
    SIZE_PREFIX_LEN,
    SIZED,
    batch,
    codec,
    host,
    native_chunks,
    oracle,
    sample,
    size_prefix,
)

import ferrocomp as fc

# ---- errors ----


def corrupt_batch(algorithm: str, kind=RAW):
    """A batch of four encoded chunks whose third is garbage after its first bytes."""
    chunks = batch((1000, 2000, 3000, 4000))
    c = codec(algorithm, kind)
    encoded = [host(e) for e in c.encode(chunks)]
    keep = SIZE_PREFIX_LEN + 5 if kind == SIZED else 5
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
    huge = np.frombuffer(size_prefix(1 << 60) + block, np.uint8)
    with pytest.raises(fc.DecodeError) as error:
        c.decode([np.frombuffer(size_prefix(1000) + block, np.uint8), huge])
    assert error.value.chunk == 1
    lying = np.frombuffer(size_prefix(999) + block, np.uint8)
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
