"""ferrocomp's Python API beside nvCOMP 6.0's: the members of `nvidia.nvcomp` as installed on an H100
(tests/data/nvcomp6/api.txt, each with its docstring) all exist in ferrocomp but those not there yet, listed here;
and the sizes and alignments nvCOMP's `Codec` answers, answered the same way."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from codec_helpers import NATIVE, RAW, SIZED, codec

import ferrocomp as fc

API = (Path(__file__).resolve().parents[2] / "tests" / "data" / "nvcomp6" / "api.txt").read_text()
DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "nvcomp6"

# What nvCOMP 6.0 has that ferrocomp has not yet (issue 50): its reusable configurations, execution
# policy and decompression backend, and the option enums of its own Cascaded, Bitcomp and bit-shuffled LZ4 formats.
NOT_YET = {
    "ASYMMETRIC", "BITCOMP_LOSSLESS", "BITCOMP_LOSSY_FP_TO_SIGNED", "BITCOMP_LOSSY_FP_TO_UNSIGNED", "BitcompMode",
    "BitshuffleMode", "CASCADED_BITPACK", "CascadedCoarseGrainedEncoding", "CascadedFineGrainedEncoding",
    "CascadedMode", "CascadedTerminalCodec", "CompressConfig", "DELTA", "DecompressBackend", "DecompressConfig",
    "ExecutionPolicy", "FOR", "NONE", "NVCOMP_BITSHUFFLE_LSB_FIRST", "NVCOMP_BITSHUFFLE_MSB_FIRST",
    "NVCOMP_BITSHUFFLE_NONE", "NVCOMP_DECOMPRESS_BACKEND_CUDA", "NVCOMP_DECOMPRESS_BACKEND_DEFAULT",
    "NVCOMP_DECOMPRESS_BACKEND_HARDWARE", "RLE", "SYMMETRIC", "UNSPECIFIED",
    "Codec.compression_config", "Codec.decompression_config",
}  # fmt: skip


def nvcomp_members() -> set[str]:
    """nvCOMP's public names, and `Class.member` for the members of its classes that ferrocomp also has."""
    names = {name for name, kind in re.findall(r"^## (\w+): (\w+)$", API, re.M) if kind != "module"}
    members = {f"{cls}.{name}" for cls, name, _ in re.findall(r"^### (\w+)\.(\w+): (\w+)$", API, re.M)}
    return names | {member for member in members if hasattr(fc, member.split(".")[0])}


def test_every_member_of_nvcomps_module_is_here_but_those_not_yet():
    missing = {name for name in nvcomp_members() if not hasattr(fc, name.split(".")[0])}
    missing |= {m for m in nvcomp_members() if "." in m and not hasattr(getattr(fc, m.split(".")[0]), m.split(".")[1])}
    assert missing == NOT_YET


def test_module_level_enum_members_are_the_enums():
    assert fc.COMPUTE_AND_VERIFY is fc.ChecksumPolicy.COMPUTE_AND_VERIFY
    assert fc.NO_COMPUTE_NO_VERIFY is fc.ChecksumPolicy.NO_COMPUTE_NO_VERIFY
    assert fc.STRIDED_HOST is fc.ArrayBufferKind.STRIDED_HOST
    assert fc.as_array(np.zeros(10, np.uint8)).buffer_kind == fc.STRIDED_HOST


@pytest.mark.parametrize("kind", [NATIVE, RAW, SIZED], ids=["native", "raw", "sized"])
@pytest.mark.parametrize("algorithm", ["LZ4", "Zstd", "Deflate", "Cascaded"])
def test_sizes_bound_the_encoding_and_give_the_decoding(algorithm, kind):
    c = codec(algorithm, kind)
    for size in (1, 1000, 60000):
        for data in (np.arange(size, dtype=np.uint8), np.random.default_rng(size).integers(0, 256, size, np.uint8)):
            encoded = c.encode(data)
            assert encoded.buffer_size <= c.get_max_comp_buffer_size(fc.as_array(data))
            assert c.get_uncomp_buffer_size(encoded) == size
    assert c.get_required_compression_alignment() == c.get_required_decompression_alignment() == 16


@pytest.mark.parametrize("batch", [[], [np.zeros(4, np.uint8)], fc.as_arrays([])], ids=["empty", "list", "batch"])
def test_the_size_queries_take_one_array(batch):
    with pytest.raises(ValueError, match="takes one array"):
        codec("LZ4", NATIVE).get_uncomp_buffer_size(batch)


def test_the_uncompressed_size_of_nvcomps_stream_is_read_from_its_header():
    encoded = np.frombuffer((DATA / "gdeflate-70000-65536-no_compute_no_verify.nvcomp").read_bytes(), np.uint8)
    assert fc.Codec(device_id="cpu").get_uncomp_buffer_size(encoded) == 70000


def test_capacity_is_the_buffer_size():
    array = fc.as_array(np.zeros((3, 5), np.float32))
    assert array.capacity == array.buffer_size == 60


def test_sizes_of_device_arrays_are_read_on_the_gpu(cupy):
    nvcomps = np.frombuffer((DATA / "zstd-70000-4096-compute_and_verify.nvcomp").read_bytes(), np.uint8)
    assert fc.Codec().get_uncomp_buffer_size(cupy.asarray(nvcomps)) == 70000
    data = cupy.arange(50000, dtype=cupy.uint8)
    for kind in (NATIVE, RAW, SIZED):
        c = fc.Codec("LZ4", bitstream_kind=kind)
        encoded = c.encode(data)
        assert encoded.buffer_size <= c.get_max_comp_buffer_size(data)
        assert c.get_uncomp_buffer_size(encoded) == 50000
