"""Dask over a zarr store: every worker of a LocalCluster (threads, and processes) reads through ferrocomp's pipeline
with `ferrocomp.dask.ZarrOnWorkers`, and the computed array is what plain zarr reads."""

from __future__ import annotations

from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
from zarr.storage import LocalStore

da = pytest.importorskip("dask.array", reason="dask is not installed")
distributed = pytest.importorskip("distributed", reason="distributed is not installed")

import ferrocomp.dask  # noqa: E402


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """A format 2 Blosc(zstd) store written by plain zarr, and what it holds."""
    path = tmp_path_factory.mktemp("dask") / "a.zarr"
    data = (np.add.outer(np.arange(512), np.arange(384)) % 97).astype("<f4")
    array = zarr.create_array(
        LocalStore(path),
        shape=data.shape,
        chunks=(64, 64),
        dtype="<f4",
        zarr_format=2,
        compressors=numcodecs.Blosc(cname="zstd", shuffle=2),
    )
    array[:] = data
    return path, data


@pytest.fixture(autouse=True)
def zarr_config_kept() -> object:
    """The test process's zarr configuration as it was before (workers in threads share it)."""
    keys = ("codec_pipeline.path", "codec_pipeline.batch_size", "codecs", "buffer", "ndbuffer")
    with zarr.config.set({key: zarr.config.get(key) for key in keys}):
        yield


def pipeline_path() -> str:
    return zarr.config.get("codec_pipeline.path")


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_workers_read_through_ferrocomp(store: tuple[Path, np.ndarray], processes: bool) -> None:
    path, data = store
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=processes, dashboard_address=None, silence_logs=40
    )
    with cluster, distributed.Client(cluster) as client:
        client.register_plugin(ferrocomp.dask.ZarrOnWorkers())
        paths = client.run(pipeline_path)
        assert set(paths.values()) == {"ferrocomp.zarr.BatchedPipeline"}, paths
        array = da.from_zarr(zarr.open_array(LocalStore(path, read_only=True), mode="r"), chunks=(256, 192))
        np.testing.assert_array_equal(array.compute(), data)
        assert float(array.sum().compute()) == float(data.sum(dtype=np.float64))


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gpu_workers_read_cupy(store: tuple[Path, np.ndarray], cupy) -> None:
    path, data = store
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        client.register_plugin(ferrocomp.dask.ZarrOnWorkers(gpu=True))
        array = da.from_zarr(zarr.open_array(LocalStore(path, read_only=True), mode="r"), chunks=(256, 192))
        grid = array.to_delayed()
        blocks = client.compute(grid.ravel().tolist(), sync=True)
        assert all(isinstance(block, cupy.ndarray) for block in blocks)
        rows = [blocks[i : i + grid.shape[1]] for i in range(0, len(blocks), grid.shape[1])]
        np.testing.assert_array_equal(np.block([[cupy.asnumpy(b) for b in row] for row in rows]), data)
