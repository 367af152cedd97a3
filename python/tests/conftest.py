"""Fixtures shared by the Python tests: the GPU (CuPy) when there is one, and a record of ferrocomp's batched calls."""

from __future__ import annotations

import os
from typing import Any

import pytest

from ferrocomp import _zarr_batch


def gpu_missing(reason: str) -> None:
    """Skip the test for a missing GPU, or fail it where FERROCOMP_REQUIRE_GPU=1 says a GPU must be there."""
    if os.environ.get("FERROCOMP_REQUIRE_GPU") == "1":
        pytest.fail(f"FERROCOMP_REQUIRE_GPU=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture
def cupy() -> Any:
    """The cupy module, where CuPy is installed and sees a GPU."""
    try:
        import cupy
    except ImportError:
        gpu_missing("CuPy is not installed")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as error:
        gpu_missing(f"CuPy finds no CUDA device ({error})")
    if count == 0:
        gpu_missing("CuPy finds no CUDA device")
    return cupy


class CountingCodec:
    """A ferrocomp codec that records each batched call as (verb, algorithm, number of chunks)."""

    def __init__(self, codec: Any, algorithm: str, calls: list[tuple[str, str, int]]) -> None:
        self.codec, self.algorithm, self.calls = codec, algorithm, calls

    def decode(self, sources: list[Any], **kwargs: Any) -> Any:
        """Record, then decode."""
        self.calls.append(("decode", self.algorithm, len(sources)))
        return self.codec.decode(sources, **kwargs)

    def encode(self, sources: list[Any], **kwargs: Any) -> Any:
        """Record, then encode."""
        self.calls.append(("encode", self.algorithm, len(sources)))
        return self.codec.encode(sources, **kwargs)

    def decode_packed(self, src: Any, src_offsets: Any, *args: Any, **kwargs: Any) -> Any:
        """Record, then decode the packed chunks."""
        self.calls.append(("decode", self.algorithm, len(src_offsets) - 1))
        return self.codec.decode_packed(src, src_offsets, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.codec, name)


@pytest.fixture
def ferrocomp_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, int]]:
    """The batched calls the zarr codecs and ROOT helpers make to ferrocomp during the test, in order."""
    calls: list[tuple[str, str, int]] = []
    make_codec = _zarr_batch.make_codec
    monkeypatch.setattr(_zarr_batch, "_codecs", {})
    monkeypatch.setattr(
        _zarr_batch,
        "make_codec",
        lambda stream_format, *args: CountingCodec(make_codec(stream_format, *args), stream_format.algorithm, calls),
    )
    return calls
