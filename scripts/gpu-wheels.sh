#!/usr/bin/env bash
# Downloads the wheels the GPU machine lacks (CPython 3.12, x86-64; it has no network): into .whl/,
# what scripts/gpu-check.sh installs for the Python tests (zarr, numcodecs, uproot and their
# dependencies); into .nvcomp/, nvCOMP's library and Python API for bench/run-device.sh and
# bench/run-python-device.sh. A device call carries at most 64 MiB: .gpu/ (less what the call does
# not run, such as the emulated tests) with one of the two folders.
set -euo pipefail
cd "$(dirname "$0")/.."
platforms=()
for p in manylinux_2_28 manylinux_2_27 manylinux_2_24 manylinux_2_17 manylinux2014 manylinux1; do
    platforms+=(--platform "${p}_x86_64")
done
download() { # DIR PACKAGE...
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${platforms[@]}" -d "$@"
}
# The tests' packages at the versions python/requirements-test.txt pins, then what zarr, numcodecs,
# uproot and dask need that the machine lacks, and KvikIO (its GDSStore, for the zarr bench and tests).
mapfile -t pinned < <(grep -E '^(zarr|numcodecs|uproot|lz4|xxhash|zstandard|dask|distributed)==' python/requirements-test.txt)
download .whl "${pinned[@]}" \
    donfig pyyaml msgspec google-crc32c crc32c packaging typing_extensions fsspec awkward awkward-cpp cramjam \
    toolz cloudpickle partd locket tblib zict sortedcontainers msgpack tornado click jinja2 markupsafe psutil urllib3 \
    importlib_metadata zipp kvikio-cu13 libkvikio-cu13 nvidia-cufile cuda-pathfinder rapids-logger
download .nvcomp nvidia-libnvcomp-cu13==6.0.0.12 nvidia-nvcomp-cu13==6.0.0.12
du -sh .whl .nvcomp
