"""Dask workers that read and write zarr through ferrocomp's batched pipeline.

    from dask.distributed import Client, LocalCluster
    import dask.array as da
    import ferrocomp.dask

    client = Client(LocalCluster())                            # or a scheduler's address: every machine alike
    client.register_plugin(ferrocomp.dask.ZarrOnWorkers())     # gpu=True: each worker reads into CuPy arrays
    array = da.from_zarr(store, chunks=(4096, 4096))           # a task reads its 64 zarr chunks in one batch
    total = array.sum().compute()

Give each Dask chunk many zarr chunks: a task's selection is the batch ferrocomp reads at once. With several GPUs,
start one worker per GPU (``dask-cuda``'s ``LocalCUDACluster``, or ``CUDA_VISIBLE_DEVICES`` per worker), each with
the plugin and ``gpu=True``.
"""

from __future__ import annotations

import zarr
from distributed import WorkerPlugin

import ferrocomp.zarr


class ZarrOnWorkers(WorkerPlugin):
    """Sets every worker's zarr configuration as `ferrocomp.zarr.enable` does (and `zarr.config.enable_gpu` with
    `gpu`), so the arrays its tasks read and write go through ferrocomp's pipeline."""

    name = "ferrocomp-zarr"

    def __init__(self, *, gpu: bool = False, batch_size: int = ferrocomp.zarr.DEFAULT_BATCH_SIZE) -> None:
        self.gpu = gpu
        self.batch_size = batch_size

    def setup(self, worker: object) -> None:
        """Called by each worker as it starts (or as the plugin is registered). Workers that are threads of one
        process (``processes=False``) share that process's configuration, the client's included."""
        ferrocomp.zarr.enable(batch_size=self.batch_size)
        if self.gpu:
            zarr.config.enable_gpu()
