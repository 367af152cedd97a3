"""nvCOMP 6's own NVCOMP_NATIVE streams (tests/data/nvcomp6, written by `nvidia.nvcomp.Codec.encode` on an H100):
`Codec()` and `Codec(algorithm=...)` decode them on the CPU, their checksums verified as the policy says, and
nvCOMP's own Cascaded, Bitcomp and ANS streams are refused with the reason. Its RAW and WITH_UNCOMPRESSED_SIZE
streams of the five standard codecs decode too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ferrocomp as fc

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "nvcomp6"
STANDARD = ("lz4", "snappy", "deflate", "gdeflate", "zstd")
NAMES = {"lz4": "LZ4", "snappy": "Snappy", "deflate": "Deflate", "gdeflate": "GDeflate", "zstd": "Zstd"}
STREAMS = sorted(p.stem for p in DATA.glob("*.nvcomp") if p.stem.split("-")[0] in STANDARD)


def stream(name: str) -> tuple[np.ndarray, bytes]:
    """The stream `name` as an array, and the bytes it holds."""
    encoded = np.frombuffer((DATA / f"{name}.nvcomp").read_bytes(), np.uint8)
    return encoded, (DATA / f"text-{name.split('-')[1]}.raw").read_bytes()


def test_the_data_has_every_codec():
    assert len(STREAMS) == 72 and {name.split("-")[0] for name in STREAMS} == set(STANDARD)


@pytest.mark.parametrize("name", STREAMS)
def test_codec_without_an_algorithm_decodes_nvcomps_stream(name):
    encoded, expected = stream(name)
    policy = fc.ChecksumPolicy.COMPUTE_AND_VERIFY if name.endswith("compute_and_verify") else None
    options = {"checksum_policy": policy} if policy else {}
    assert bytes(fc.Codec(device_id="cpu", **options).decode(encoded)) == expected
    algorithm = NAMES[name.split("-")[0]]
    assert bytes(fc.Codec(algorithm, device_id="cpu", **options).decode(encoded)) == expected


def test_a_changed_chunk_fails_its_checksum():
    encoded, _ = stream("zstd-70000-4096-compute_and_verify")
    changed = encoded.copy()
    data_at = int(changed[40:44].view("<u4")[0])
    changed[data_at + 20] ^= 0x10
    verifying = fc.Codec(device_id="cpu", checksum_policy=fc.ChecksumPolicy.NO_COMPUTE_AND_VERIFY_IF_PRESENT)
    with pytest.raises(Exception, match="checksum") as error:
        verifying.decode(changed)
    assert "chunk 0" in str(error.value)


@pytest.mark.parametrize(
    "name, algorithm",
    [
        ("cascaded-1000-4096-compute_and_verify", "Cascaded"),
        ("bitcomp-1000-65536-no_compute_no_verify", "Bitcomp"),
        ("ans-1000-65536-no_compute_no_verify", "ANS"),
    ],
)
def test_nvcomps_own_formats_are_refused(name, algorithm):
    encoded = np.frombuffer((DATA / f"{name}.nvcomp").read_bytes(), np.uint8)
    with pytest.raises(Exception, match=f"nvCOMP's own {algorithm} layout"):
        fc.Codec(device_id="cpu").decode(encoded)


@pytest.mark.parametrize("name", [n for n in STREAMS if n.split("-")[1] == "70000"])
def test_codec_decodes_nvcomps_stream_on_the_gpu(cupy, name):
    encoded, expected = stream(name)
    on_device = cupy.asarray(encoded)
    policy = fc.ChecksumPolicy.COMPUTE_AND_VERIFY if name.endswith("compute_and_verify") else None
    options = {"checksum_policy": policy} if policy else {}
    decoded = fc.Codec(**options).decode(on_device)
    assert cupy.asnumpy(cupy.asarray(decoded)).tobytes() == expected


# nvCOMP's single-chunk bitstreams: `ALGORITHM-with-size-SIZE.bin` (its 16-byte size prefix, then the block) and
# `ALGORITHM-raw-100000.bin` (Deflate's and GDeflate's a stream past 64 KiB).
SINGLE = [(name, kind) for name in STANDARD for kind in ("with-size-1", "with-size-1000", "raw-100000")]


def single(name: str, kind: str) -> tuple[fc.Codec, np.ndarray, bytes]:
    """A CPU codec for nvCOMP's stream `NAME-KIND.bin`, the stream and the bytes it holds."""
    bitstream = fc.BitstreamKind.RAW if kind.startswith("raw") else fc.BitstreamKind.WITH_UNCOMPRESSED_SIZE
    codec = fc.Codec(NAMES[name], device_id="cpu", bitstream_kind=bitstream)
    encoded = np.frombuffer((DATA / f"{name}-{kind}.bin").read_bytes(), np.uint8)
    return codec, encoded, (DATA / f"text-{kind.rsplit('-', 1)[1]}.raw").read_bytes()


@pytest.mark.parametrize("name, kind", SINGLE)
def test_nvcomps_single_chunk_streams_decode(name, kind):
    codec, encoded, expected = single(name, kind)
    assert bytes(codec.decode(encoded)) == expected
    assert [bytes(d) for d in codec.decode([encoded, encoded])] == [expected, expected]
    if kind.startswith("with-size"):
        assert bytes(codec.encode(np.frombuffer(expected, np.uint8)))[:16] == encoded[:16].tobytes()


@pytest.mark.parametrize("name, kind", SINGLE)
def test_nvcomps_single_chunk_streams_decode_on_the_gpu(cupy, name, kind):
    _, encoded, expected = single(name, kind)
    bitstream = fc.BitstreamKind.RAW if kind.startswith("raw") else fc.BitstreamKind.WITH_UNCOMPRESSED_SIZE
    decoded = fc.Codec(NAMES[name], bitstream_kind=bitstream).decode(cupy.asarray(encoded))
    assert cupy.asnumpy(cupy.asarray(decoded)).tobytes() == expected
