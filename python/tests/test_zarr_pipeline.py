"""The batched read path (`ferrocomp._zarr_pipeline`): local stores written by plain zarr read identical through it,
whole and by selection, on the CPU (numpy) and the GPU (CuPy), in one ferrocomp call per batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr
import zarr.codecs
from zarr.storage import LocalStore

import ferrocomp
import ferrocomp.zarr

SHAPE = (150, 97)
CHUNKS = (32, 40)
# Selections: whole, steps, one chunk, across chunk (and shard) boundaries, a row, a column picked by an integer.
SELECTIONS = [
    np.s_[:],
    np.s_[3:140:3, 5:90:4],
    np.s_[32:64, 40:80],
    np.s_[20:100, 30:95],
    np.s_[77, :],
    np.s_[:, 41],
]


def blosc(cname: str, shuffle: int) -> Any:
    return numcodecs.Blosc(cname=cname, shuffle=shuffle)


# (id, zarr format, compressor, extra create_array arguments)
STORES = [
    *[
        (f"v2-blosc-{cname}-{shuffle}", 2, blosc(cname, shuffle), {})
        for cname in ("lz4", "zstd", "zlib")
        for shuffle in (0, 1, 2)
    ],
    ("v2-zstd", 2, numcodecs.Zstd(level=3), {}),
    ("v2-lz4", 2, numcodecs.LZ4(), {}),
    ("v2-zlib", 2, numcodecs.Zlib(level=5), {}),
    ("v2-gzip-F", 2, numcodecs.GZip(level=5), {"order": "F"}),
    ("v3-zstd", 3, zarr.codecs.ZstdCodec(level=3), {}),
    ("v3-gzip", 3, zarr.codecs.GzipCodec(level=5), {}),
    ("v3-blosc-zstd-bit", 3, zarr.codecs.BloscCodec(cname="zstd", shuffle="bitshuffle"), {}),
    ("v3-uncompressed", 3, None, {}),
    ("v3-transposed", 3, zarr.codecs.ZstdCodec(), {"filters": [zarr.codecs.TransposeCodec(order=(1, 0))]}),
    ("v3-sharded", 3, zarr.codecs.ZstdCodec(), {"shards": (64, 80)}),
]
DTYPES = ["<f8", "<f4", "<i2", "u1"]


def values(dtype: str) -> np.ndarray:
    """Data of `dtype` that compresses, with edge chunks left partial by SHAPE."""
    grid = np.add.outer(np.arange(SHAPE[0]), np.arange(SHAPE[1]) * 3) % 251
    return (grid * (0.25 if dtype.startswith("<f") else 1)).astype(dtype)


def create(path: Path, case: str, dtype: str, shape: tuple[int, ...] = SHAPE, fill: Any = 0) -> Any:
    """An empty array of `case`'s store at `path`, created by zarr (through ferrocomp where it is enabled)."""
    _, fmt, compressor, extra = next(s for s in STORES if s[0] == case)
    return zarr.create_array(
        LocalStore(path),
        shape=shape,
        chunks=CHUNKS,
        dtype=dtype,
        compressors=compressor,
        zarr_format=fmt,
        fill_value=fill,
        **extra,
    )


def write_store(path: Path, case: str, dtype: str, fill: Any = 0) -> np.ndarray:
    """A store of `case` written by plain zarr, with two chunks emptied after (they read as `fill`); what it holds."""
    array = create(path, case, dtype, fill=fill)
    array[:] = values(dtype)
    array[96:, :40] = fill  # chunks (3, 0) and (4, 0): stored in full, then emptied
    return array[:]


@pytest.fixture(params=[s[0] for s in STORES])
def store_case(request: pytest.FixtureRequest) -> tuple[Any, ...]:
    return next(s for s in STORES if s[0] == request.param)


def counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """A list that gets an item each time `_zarr_pipeline.<name>` (an async function) is called, from now on."""
    from ferrocomp import _zarr_pipeline

    calls = []
    function = getattr(_zarr_pipeline, name)

    async def counting(*args: Any) -> None:
        calls.append(1)
        await function(*args)

    monkeypatch.setattr(_zarr_pipeline, name, counting)
    return calls


def read_counting(path: Path, selection: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """`selection` of the store through ferrocomp's pipeline, and how many batched reads it took."""
    batches = counted(monkeypatch, "read_batch")
    with ferrocomp.zarr.enable():
        result = zarr.open_array(LocalStore(path, read_only=True), mode="r")[selection]
    return result, len(batches)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("dtype", DTYPES)
def test_stores_written_by_zarr_pipeline_identical(tmp_path: Path, store_case, dtype: str, monkeypatch) -> None:
    name = store_case[0]
    expected = write_store(tmp_path / "a.zarr", name, dtype, fill=7)
    for selection in SELECTIONS:
        got, batches = read_counting(tmp_path / "a.zarr", selection, monkeypatch)
        np.testing.assert_array_equal(got, expected[selection], err_msg=f"{name} {dtype} {selection}")
        assert got.dtype == expected.dtype
        assert batches == 1, f"{name}: {batches} batched reads for {selection}"


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_missing_chunks_and_shards_read_as_the_fill_value(tmp_path: Path, monkeypatch) -> None:
    array = zarr.create_array(
        LocalStore(tmp_path / "s.zarr"), shape=(256, 64), chunks=(16, 16), shards=(64, 64), dtype="i4", fill_value=-3
    )
    array[70:90, 5:40] = 11  # one shard, partly
    expected = np.full((256, 64), -3, "i4")
    expected[70:90, 5:40] = 11
    got, batches = read_counting(tmp_path / "s.zarr", np.s_[:], monkeypatch)
    np.testing.assert_array_equal(got, expected)
    assert batches == 1


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_corrupt_chunk_raises_naming_its_key(tmp_path: Path) -> None:
    write_store(tmp_path / "c.zarr", "v3-zstd", "<f4")
    key = tmp_path / "c.zarr" / "c" / "2" / "1"
    chunk = bytearray(key.read_bytes())
    chunk[len(chunk) // 2 :] = bytes(len(chunk) - len(chunk) // 2)
    key.write_bytes(bytes(chunk))
    with ferrocomp.zarr.enable(), pytest.raises(ferrocomp.DecodeError, match=r"^chunk \d+: c/2/1: "):
        zarr.open_array(LocalStore(tmp_path / "c.zarr"), mode="r")[:]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", ["v2-blosc-zstd-2", "v3-sharded", "v3-transposed"])
def test_local_files_on_the_cpu_are_read_decoded_and_placed_in_one_call(tmp_path: Path, case: str, monkeypatch) -> None:
    """On the CPU a local store's chunks go through one `decode_ranges` call (read, decoded and placed chunk by chunk,
    nothing packed), whole arrays and selections alike, with zarr's values."""
    from ferrocomp import _zarr_pipeline

    expected = write_store(tmp_path / "l.zarr", case, "<f4", fill=7)
    calls = []
    decode_ranges = _zarr_pipeline.decode_ranges
    monkeypatch.setattr(_zarr_pipeline, "decode_ranges", lambda *a: calls.append(1) or decode_ranges(*a))
    for selection in SELECTIONS:
        calls.clear()
        got, _ = read_counting(tmp_path / "l.zarr", selection, monkeypatch)
        np.testing.assert_array_equal(got, expected[selection], err_msg=f"{case} {selection}")
        assert len(calls) <= 1, f"{case} {selection}"
    calls.clear()
    read_counting(tmp_path / "l.zarr", np.s_[10:90, 3:77], monkeypatch)
    assert calls == [1]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_fancy_indexing_goes_through_zarrs_pipeline(tmp_path: Path, monkeypatch) -> None:
    expected = write_store(tmp_path / "f.zarr", "v2-zstd", "<f4")
    with ferrocomp.zarr.enable():
        array = zarr.open_array(LocalStore(tmp_path / "f.zarr"), mode="r")
        np.testing.assert_array_equal(array.oindex[[1, 50, 149], [0, 96]], expected[np.ix_([1, 50, 149], [0, 96])])


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", ["v2-blosc-zstd-2", "v3-zstd", "v3-gzip", "v3-sharded", "v2-gzip-F", "v3-transposed"])
def test_gpu_reads_give_cupy_arrays_equal_to_zarrs(tmp_path: Path, case: str, cupy, monkeypatch) -> None:
    expected = write_store(tmp_path / "g.zarr", case, "<f4", fill=7)
    for selection in SELECTIONS:
        with zarr.config.enable_gpu():
            got, batches = read_counting(tmp_path / "g.zarr", selection, monkeypatch)
        assert isinstance(got, cupy.ndarray)
        np.testing.assert_array_equal(cupy.asnumpy(got), expected[selection], err_msg=f"{case} {selection}")
        assert batches == 1


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gpu_read_allocates_no_device_memory_per_chunk(tmp_path: Path, cupy) -> None:
    """Reading 120 chunks (whole, and a slice that scatters) takes a few device allocations, none per chunk: CuPy's
    (the array, the packed bytes, the decoded staging) and ferrocomp's own, counted through its allocator hook."""
    expected = write_store(tmp_path / "m.zarr", "v3-zstd", "<f4")
    ours, theirs = [], []

    def counting(nbytes: int, stream: object) -> object:
        ours.append(nbytes)
        return cupy.cuda.alloc(nbytes)

    hook = cupy.cuda.memory_hooks.DebugPrintHook()
    hook.malloc_preprocess = lambda **kw: theirs.append(kw["size"])
    ferrocomp.set_device_allocator(counting)
    try:
        with zarr.config.enable_gpu(), ferrocomp.zarr.enable():
            array = zarr.open_array(LocalStore(tmp_path / "m.zarr"), mode="r")
            for selection in (np.s_[:], np.s_[1:, 2:]):
                array[selection]  # warm: the codec, the reader and their slots
                ours.clear()
                theirs.clear()
                with hook:
                    got = array[selection]
                np.testing.assert_array_equal(cupy.asnumpy(got), expected[selection])
                assert len(theirs) - len(ours) <= 4, (selection, theirs, ours)
                assert len(ours) <= 2, (selection, ours)
    finally:
        ferrocomp.set_device_allocator(None)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", ["v2-blosc-lz4-1", "v3-zstd", "v3-transposed", "v3-sharded", "v3-uncompressed"])
@pytest.mark.parametrize("shape", [(128, 120), (64, 40), (96, 40)])
def test_whole_chunks_decode_in_place(tmp_path: Path, case: str, shape: tuple[int, int], monkeypatch) -> None:
    """An array of whole chunks read whole decodes straight into the output (slab by slab of rows), the same
    values as zarr's; so does a slice of whole chunks, while one that cuts chunks goes through a scatter."""
    from ferrocomp import _zarr_pipeline

    data = np.arange(np.prod(shape), dtype="<f4").reshape(shape) % 1000
    create(tmp_path / "w.zarr", case, "<f4", shape)[:] = data
    monkeypatch.setattr(_zarr_pipeline, "in_place_on_host", True)
    orders = []
    in_place_order = _zarr_pipeline._in_place_order
    monkeypatch.setattr(_zarr_pipeline, "_in_place_order", lambda *a: orders.append(in_place_order(*a)) or orders[-1])
    for selection, in_place in [(np.s_[:], True), (np.s_[32:, :], True), (np.s_[:, 20:], False)]:
        orders.clear()
        got, _ = read_counting(tmp_path / "w.zarr", selection, monkeypatch)
        np.testing.assert_array_equal(got, data[selection], err_msg=f"{case} {shape} {selection}")
        assert [order is not None for order in orders] == [in_place], f"{case} {shape} {selection}"


WRITABLE = ["v2-blosc-lz4-1", "v2-blosc-lz4-2", "v2-zstd", "v2-lz4", "v2-zlib", "v2-gzip-F", "v3-zstd", "v3-gzip"]
WRITABLE += ["v3-uncompressed", "v3-transposed"]


def write_counting(path: Path, case: str, data: Any, monkeypatch: pytest.MonkeyPatch, selection: Any = np.s_[:]) -> int:
    """Create the store of `case` through ferrocomp and write `data` into `selection`; the batched writes it took."""
    batches = counted(monkeypatch, "write_batch")
    with ferrocomp.zarr.enable():
        array = create(path, case, data.dtype, fill=7)
        array[selection] = data[selection]
    return len(batches)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", WRITABLE)
@pytest.mark.parametrize("dtype", ["<f8", "<i2"])
def test_stores_written_in_one_batch_read_with_plain_zarr(tmp_path: Path, case: str, dtype: str, monkeypatch) -> None:
    data = values(dtype)
    data[96:, :40] = 7  # two chunks of the fill value: not stored
    assert write_counting(tmp_path / "w.zarr", case, data, monkeypatch) == 1
    plain = zarr.open_array(LocalStore(tmp_path / "w.zarr"), mode="r")
    np.testing.assert_array_equal(plain[:], data, err_msg=case)
    metadata = {"zarr.json", ".zarray", ".zattrs", ".zgroup"}
    stored = [path for path in (tmp_path / "w.zarr").rglob("*") if path.is_file() and path.name not in metadata]
    assert len(stored) == 5 * 3 - 2, case


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_partial_chunk_writes_go_through_zarrs_pipeline(tmp_path: Path, monkeypatch) -> None:
    data = values("<f4")
    assert write_counting(tmp_path / "p.zarr", "v3-zstd", data, monkeypatch, np.s_[10:50, 3:90]) == 0
    expected = np.full(SHAPE, 7, "<f4")
    expected[10:50, 3:90] = data[10:50, 3:90]
    np.testing.assert_array_equal(zarr.open_array(LocalStore(tmp_path / "p.zarr"), mode="r")[:], expected)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", ["v2-blosc-lz4-1", "v3-zstd", "v3-gzip", "v2-gzip-F", "v3-transposed"])
def test_gpu_writes_read_with_plain_zarr(tmp_path: Path, case: str, cupy, monkeypatch) -> None:
    data = values("<f4")
    with zarr.config.enable_gpu():
        assert write_counting(tmp_path / "g.zarr", case, cupy.asarray(data), monkeypatch) == 1
    np.testing.assert_array_equal(zarr.open_array(LocalStore(tmp_path / "g.zarr"), mode="r")[:], data, err_msg=case)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", ["v2-blosc-zstd-2", "v3-zstd", "v3-transposed", "v3-sharded", "v3-uncompressed"])
def test_gpu_whole_chunks_decode_in_place(tmp_path: Path, case: str, cupy, monkeypatch) -> None:
    """On the GPU an array of whole chunks decodes into the output itself, the same values as zarr's."""
    from ferrocomp import _zarr_pipeline

    data = np.arange(256 * 160, dtype="<f4").reshape(256, 160) % 1000
    create(tmp_path / "w.zarr", case, "<f4", data.shape)[:] = data
    orders = []
    in_place_order = _zarr_pipeline._in_place_order
    monkeypatch.setattr(_zarr_pipeline, "_in_place_order", lambda *a: orders.append(in_place_order(*a)) or orders[-1])
    with zarr.config.enable_gpu():
        for _ in range(3):  # again and again, on reused memory
            got, _ = read_counting(tmp_path / "w.zarr", np.s_[:], monkeypatch)
            np.testing.assert_array_equal(cupy.asnumpy(got), data, err_msg=case)
    assert orders and all(order is not None for order in orders), case


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gds_store_reads_through_kvikio_where_gds_is(tmp_path: Path, cupy, monkeypatch) -> None:
    """KvikIO's GDSStore (an optional dependency) reads its files through KvikIO, straight into device memory, where
    GPUDirect Storage is there (faked here); in KvikIO's compatibility mode ferrocomp's reader takes them."""
    kvikio_zarr = pytest.importorskip("kvikio.zarr", reason="kvikio is not installed (an optional dependency)")
    import kvikio.defaults

    from ferrocomp import _zarr_fetch

    expected = write_store(tmp_path / "k.zarr", "v3-zstd", "<f4", fill=7)
    reads = []
    read_with_kvikio = _zarr_fetch._read_with_kvikio
    monkeypatch.setattr(_zarr_fetch, "_read_with_kvikio", lambda *a: reads.append(1) or read_with_kvikio(*a))
    for compat, through_kvikio in [(True, []), (False, [1])]:
        reads.clear()
        monkeypatch.setattr(kvikio.defaults, "is_compat_mode_preferred", lambda compat=compat: compat)
        with zarr.config.enable_gpu(), ferrocomp.zarr.enable():
            got = zarr.open_array(kvikio_zarr.GDSStore(tmp_path / "k.zarr"), mode="r")[:]
        np.testing.assert_array_equal(cupy.asnumpy(got), expected)
        assert reads == through_kvikio, compat


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_shard_index_that_lies_raises_naming_the_chunk(tmp_path: Path) -> None:
    """An inner chunk whose index entry reaches past its shard's file raises before anything is allocated for it."""
    write_store(tmp_path / "s.zarr", "v3-sharded", "<f4")
    shard = tmp_path / "s.zarr" / "c" / "0" / "0"
    data = bytearray(shard.read_bytes())
    index_at = len(data) - (2 * 2 * 16 + 4)  # 2 x 2 inner chunks of (offset, size), then the CRC-32C
    data[index_at + 8 : index_at + 16] = (1 << 40).to_bytes(8, "little")  # the first inner chunk's size
    crc = bytes(numcodecs.CRC32C().encode(bytes(data[index_at : len(data) - 4])))[-4:]
    data[-4:] = crc
    shard.write_bytes(bytes(data))
    with ferrocomp.zarr.enable(), pytest.raises(ferrocomp.DecodeError, match=r"^chunk 0: c/0/0\[.*past the end"):
        zarr.open_array(LocalStore(tmp_path / "s.zarr"), mode="r")[:]
