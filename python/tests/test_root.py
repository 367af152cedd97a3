"""ROOT baskets (written by uproot with ZLIB, LZ4 and ZSTD) split into compression frames and decoded, a cluster at a
time, in one ferrocomp batch per codec into slices of one buffer; compared byte for byte with uproot's own decoding."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import ferrocomp
from ferrocomp import root

ak = pytest.importorskip("awkward", reason="the ROOT tests write their file with uproot and awkward")
uproot = pytest.importorskip("uproot", reason="the ROOT tests write their file with uproot and awkward")

ENTRIES_PER_CLUSTER = 4000
CLUSTERS = 3
# Branch -> (uproot type, compression); "stored" stays uncompressed (arange does not shrink under LZ4 level 1).
BRANCHES = {
    "energy": ("f8", uproot.ZLIB(4)),
    "hits": ("i4", uproot.ZLIB(1)),
    "time": ("i8", uproot.LZ4(4)),
    "stored": ("f4", uproot.LZ4(1)),
    "tracks": ("var * float64", uproot.LZ4(1)),
    "charge": ("f8", uproot.ZSTD(3)),
}
TKEY_HEAD = struct.Struct(">ihiIh")  # fNbytes, fVersion, fObjlen, fDatime, fKeylen


def cluster_data(cluster: int, rng: np.random.Generator) -> dict[str, object]:
    """One cluster's entries: smooth and random numbers that compress, and a jagged branch."""
    n = ENTRIES_PER_CLUSTER
    counts = rng.integers(0, 4, n)
    return {
        "energy": np.round(rng.normal(50, 5, n), 2),
        "hits": rng.integers(0, 100, n).astype("i4"),
        "time": np.cumsum(rng.integers(0, 9, n)) + cluster * 10**6,
        "stored": np.arange(n, dtype="f4") + cluster,
        "tracks": ak.unflatten(np.round(rng.normal(size=int(counts.sum())), 1), counts),
        "charge": np.round(rng.normal(0, 1, n), 3),
    }


@pytest.fixture(scope="module")
def root_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A ROOT file with one TTree of CLUSTERS clusters, each branch compressed as BRANCHES says."""
    path = str(tmp_path_factory.mktemp("root") / "events.root")
    rng = np.random.default_rng(7)
    with uproot.recreate(path, compression=uproot.ZLIB(1)) as file:
        file.mktree("events", {name: kind for name, (kind, _) in BRANCHES.items()})
        for name, (_, compression) in BRANCHES.items():
            file["events"][name].compression = compression
        for cluster in range(CLUSTERS):
            file["events"].extend(cluster_data(cluster, rng))
    return path


def cluster_baskets(path: str, cluster: int) -> tuple[bytes, list[tuple[object, int, int, int, int]]]:
    """The file's bytes and, for every branch, the basket of `cluster`: (branch, basket, start, size, objlen),
    where [start, start + size) is the compressed object after the basket's TKey."""
    tree = uproot.open(path)["events"]
    first_entry = int(tree.common_entry_offsets()[cluster])
    with open(path, "rb") as handle:
        file_bytes = handle.read()
    baskets = []
    for branch in tree.branches:
        entries = list(branch.member("fBasketEntry")[: branch.num_baskets])
        basket = entries.index(first_entry)
        seek = int(branch.member("fBasketSeek")[basket])
        nbytes, _, objlen, _, keylen = TKEY_HEAD.unpack_from(file_bytes, seek)
        baskets.append((branch, basket, seek + keylen, nbytes - keylen, objlen))
    return file_bytes, baskets


def split_cluster(file_bytes: bytes, baskets: list[tuple[object, int, int, int, int]]) -> list[list[root.Frame]]:
    """Every basket's frames, in basket order."""
    return [root.split_frames(file_bytes, start, size, objlen) for _, _, start, size, objlen in baskets]


def check_against_uproot(path: str, cluster: int, baskets: list, per_basket: list[list[root.Frame]], out) -> None:
    """Each basket's decoded bytes equal uproot's raw basket, and its data part equals uproot's array bytes."""
    tree = uproot.open(path)["events"]
    start, stop = (int(x) for x in tree.common_entry_offsets()[cluster : cluster + 2])
    position = 0
    for (branch, basket, *_), frames in zip(baskets, per_basket, strict=True):
        size = root.frames_size(frames)
        decoded = np.asarray(out[position : position + size])
        position += size
        model = branch.basket(basket)
        assert decoded.tobytes() == np.asarray(model.raw_data).tobytes(), branch.name
        expected = branch.array(entry_start=start, entry_stop=stop, library="ak")
        flat = ak.to_numpy(ak.flatten(expected, axis=None))
        assert decoded[: model.border].tobytes() == flat.astype(flat.dtype.newbyteorder(">")).tobytes(), branch.name


def test_frames_of_a_cluster_match_uproots_blocks(root_file: str) -> None:
    """split_frames finds the blocks uproot found: same algorithms and sizes; 'stored' is one stored frame."""
    file_bytes, baskets = cluster_baskets(root_file, 1)
    for (branch, basket, *_), frames in zip(baskets, split_cluster(file_bytes, baskets), strict=True):
        info = branch.basket(basket).block_compression_info
        if info is None:
            assert [f.algorithm for f in frames] == [root.STORED], branch.name
        else:
            assert [(f.algorithm.upper(), f.size, f.decoded_size) for f in frames] == list(info), branch.name
    assert {f.algorithm for frames in split_cluster(file_bytes, baskets) for f in frames} == {
        "zlib",
        "lz4",
        "zstd",
        "stored",
    }


@pytest.mark.parametrize("cluster", range(CLUSTERS))
def test_cluster_decodes_in_one_batch_per_codec(root_file: str, cluster: int, ferrocomp_calls: list) -> None:
    """All pages of a cluster decode into one numpy buffer: one ferrocomp call per codec (zlib, LZ4, zstd)."""
    file_bytes, baskets = cluster_baskets(root_file, cluster)
    per_basket = split_cluster(file_bytes, baskets)
    frames = [frame for frames in per_basket for frame in frames]
    out = np.empty(root.frames_size(frames), np.uint8)
    root.decode_frames(np.frombuffer(file_bytes, np.uint8), frames, out)
    check_against_uproot(root_file, cluster, baskets, per_basket, out)
    zlib_pages = sum(f.algorithm == "zlib" for f in frames)
    lz4_pages = sum(f.algorithm == "lz4" for f in frames)
    zstd_pages = sum(f.algorithm == "zstd" for f in frames)
    assert ferrocomp_calls == [
        ("decode", "Deflate", zlib_pages),
        ("decode", "LZ4", lz4_pages),
        ("decode", "Zstd", zstd_pages),
    ]


def test_cluster_decodes_into_one_cupy_buffer(root_file: str, cupy) -> None:
    """On the GPU: the file's bytes in one device array, every page of the cluster into one CuPy buffer."""
    file_bytes, baskets = cluster_baskets(root_file, 0)
    per_basket = split_cluster(file_bytes, baskets)
    frames = [frame for frames in per_basket for frame in frames]
    out = cupy.empty(root.frames_size(frames), cupy.uint8)
    root.decode_frames(cupy.asarray(np.frombuffer(file_bytes, np.uint8)), frames, out)
    check_against_uproot(root_file, 0, baskets, per_basket, out.get())


def lz4_basket(root_file: str) -> tuple[bytearray, int, int, int]:
    """A writable copy of the file and the LZ4-compressed 'time' basket of cluster 0: (bytes, start, size, objlen)."""
    file_bytes, baskets = cluster_baskets(root_file, 0)
    (_, _, start, size, objlen) = next(b for b in baskets if b[0].name == "time")
    return bytearray(file_bytes), start, size, objlen


def test_lz4_checksum_is_verified(root_file: str) -> None:
    """A flipped byte inside an LZ4 block fails its xxhash64 before anything is decoded."""
    data, start, size, objlen = lz4_basket(root_file)
    data[start + 40] ^= 0xFF
    with pytest.raises(root.RootFrameError, match="xxhash64"):
        root.split_frames(data, start, size, objlen)


@pytest.mark.parametrize(
    ("offset", "value", "message"),
    [
        (0, b"QQ", "unknown compression algorithm"),
        (3, b"\xff\xff\x7f", "past the object's end"),
        (6, b"\x01\x00\x00", "decode to 1 bytes"),
    ],
)
def test_bad_headers_are_refused(root_file: str, offset: int, value: bytes, message: str) -> None:
    """An unknown tag, a compressed size past the object, or sizes that do not add up raise RootFrameError."""
    data, start, size, objlen = lz4_basket(root_file)
    data[start + offset : start + offset + len(value)] = value
    with pytest.raises(root.RootFrameError, match=message):
        root.split_frames(data, start, size, objlen)


def test_truncated_object_is_refused(root_file: str) -> None:
    """An object cut inside a block header or inside a block raises RootFrameError."""
    data, start, size, objlen = lz4_basket(root_file)
    with pytest.raises(root.RootFrameError, match="cut off"):
        root.split_frames(data, start, 5, objlen)
    with pytest.raises(root.RootFrameError, match="past the object's end"):
        root.split_frames(data, start, size - 1, objlen)


def test_lying_decoded_size_fails_the_decode(root_file: str) -> None:
    """A block header that claims more decoded bytes than the stream holds fails in ferrocomp, not silently."""
    data, start, size, objlen = lz4_basket(root_file)
    frame = root.split_frames(data, start, size, objlen)[0]
    lying = root.Frame(frame.algorithm, frame.start, frame.size, frame.decoded_size + 8)
    message = f"^frame 1: decodes to {frame.decoded_size} bytes, but its header says {lying.decoded_size}$"
    with pytest.raises(ferrocomp.DecodeError, match=message) as raised:
        root.decode_frames(np.frombuffer(bytes(data), np.uint8), [frame, lying], np.empty(2 * objlen + 8, np.uint8))
    assert raised.value.chunk == 1


def test_corrupt_block_names_its_frame(root_file: str) -> None:
    """An LZ4 block cut short (its checksum not verified) fails in ferrocomp, naming the frame among all of them."""
    data, start, size, objlen = lz4_basket(root_file)
    frame = root.split_frames(data, start, size, objlen)[0]
    stored = root.Frame(root.STORED, 0, 16, 16)
    cut = root.Frame(frame.algorithm, frame.start, frame.size - 20, frame.decoded_size)
    with pytest.raises(ferrocomp.DecodeError, match="^frame 1: ") as raised:
        root.decode_frames(np.frombuffer(bytes(data), np.uint8), [stored, cut], np.empty(16 + objlen, np.uint8))
    assert raised.value.chunk == 1


def test_strided_buffers_are_refused(root_file: str) -> None:
    """A strided `out` (or source) is refused with a ValueError saying so, not written or read past."""
    data, start, size, objlen = lz4_basket(root_file)
    frames = root.split_frames(data, start, size, objlen)
    source = np.frombuffer(bytes(data), np.uint8)
    with pytest.raises(ValueError, match="C-contiguous"):
        root.decode_frames(source, frames, np.empty(2 * objlen, np.uint8)[::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        root.decode_frames(np.repeat(source, 2)[::2], frames, np.empty(objlen, np.uint8))


def test_out_of_the_wrong_size_or_dtype_is_refused(root_file: str) -> None:
    """decode_frames wants one 1-D uint8 buffer of exactly the frames' decoded size."""
    data, start, size, objlen = lz4_basket(root_file)
    frames = root.split_frames(data, start, size, objlen)
    source = np.frombuffer(bytes(data), np.uint8)
    for out in (np.empty(objlen - 1, np.uint8), np.empty(objlen // 8, np.float64)):
        with pytest.raises(ValueError, match="1-D uint8 array"):
            root.decode_frames(source, frames, out)


def cluster_pages(baskets: list[tuple[object, int, int, int, int]]) -> list[tuple[int, int, int]]:
    """The (start, size, decoded size) of every basket's compressed object, as read_cluster takes them, found the
    way ferrocomp.root's documentation shows (and checked against the TKeys read here)."""
    pages = []
    for branch, basket, start, size, objlen in baskets:
        seek = int(branch.member("fBasketSeek")[basket])
        key = branch.basket_key(basket)
        pages.append((seek + key.fKeylen, key.fNbytes - key.fKeylen, key.fObjlen))
        assert pages[-1] == (start, size, objlen), branch.name
    return pages


@pytest.mark.parametrize("cluster", range(CLUSTERS))
def test_cluster_reads_from_the_file_in_one_batch(root_file: str, cluster: int, ferrocomp_calls: list) -> None:
    """read_cluster reads a cluster's pages from the file and decodes them into one numpy buffer, one call per codec."""
    file_bytes, baskets = cluster_baskets(root_file, cluster)
    per_basket = split_cluster(file_bytes, baskets)
    out = root.read_cluster(root_file, cluster_pages(baskets), gpu=False)
    assert isinstance(out, np.ndarray)
    check_against_uproot(root_file, cluster, baskets, per_basket, out)
    assert [call[1] for call in ferrocomp_calls] == ["Deflate", "LZ4", "Zstd"]


def test_cluster_reads_from_the_file_into_one_cupy_buffer(root_file: str, cupy) -> None:
    file_bytes, baskets = cluster_baskets(root_file, 2)
    out = root.read_cluster(root_file, cluster_pages(baskets), gpu=True)
    assert isinstance(out, cupy.ndarray)
    check_against_uproot(root_file, 2, baskets, split_cluster(file_bytes, baskets), out.get())


def test_pages_past_the_end_of_the_file_are_refused(root_file: str) -> None:
    size = len(open(root_file, "rb").read())
    with pytest.raises(OSError, match="events.root"):
        root.read_cluster(root_file, [(size - 10, 20, 20)], gpu=False)
