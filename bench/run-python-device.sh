#!/usr/bin/env bash
# On the GPU machine, from the repo root: ferrocomp's Python API beside nvCOMP's (bench/python_bench.py), then the
# Python tests' GPU variants (where pytest is there); zarr reads are bench/run-zarr-device.sh's. Uses .nvcomp/ and
# .whl/ (scripts/gpu-wheels.sh: nvidia-nvcomp-cu13, nvidia-libnvcomp-cu13, zarr and what it needs that the machine
# lacks: numcodecs, donfig, msgspec, google-crc32c; uproot, awkward, cramjam, fsspec and xxhash for the ROOT test)
# and ferrocomp as a wheel in .gpu/ (built on the dev machine) or, failing that, python/ferrocomp with its built
# extension carried. Missing optional wheels leave their parts out with a message; a step that fails does not stop
# the others. Writes $OUT/python_bench.md, $OUT/pytest.log and the bench's log ($OUT defaults to /tmp/out).
# ANCHOR_MB sets the data set size (default 256); a few minutes of device time.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
wheels=(.whl/*.whl .nvcomp/*.whl .gpu/ferrocomp-*.whl)
present=()
for wheel in "${wheels[@]}"; do [ -f "$wheel" ] && present+=("$wheel"); done
if [ ${#present[@]} -gt 0 ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        "${present[@]}" || echo "run-python-device: installing the wheels failed; going on with what is there"
fi
site=/tmp/site
if ! ls .gpu/ferrocomp-*.whl >/dev/null 2>&1; then
    if ls python/ferrocomp/_ferrocomp*.so >/dev/null 2>&1; then
        echo "run-python-device: no .gpu/ferrocomp-*.whl; using python/ferrocomp with its carried extension"
        site=$PWD/python:/tmp/site
    else
        echo "run-python-device: ferrocomp is missing (no .gpu/ferrocomp-*.whl, no python/ferrocomp/_ferrocomp*.so)"
        exit 1
    fi
fi
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
status=0
step() {
    local name=$1
    shift
    "$@" 2>&1 | tee "$out/$name.log"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || { echo "run-python-device: $name exited with $rc"; status=1; }
}
step python_bench python3 bench/python_bench.py --mb "${ANCHOR_MB:-256}" --out "$out/python_bench.md"
if python3 -c "import pytest" 2>/dev/null; then
    step pytest env FERROCOMP_REQUIRE_GPU=1 python3 -m pytest -q -p no:cacheprovider -rs -k "gpu or cupy" \
        python/tests/test_zarr.py python/tests/test_root.py
else
    echo "run-python-device: pytest is not installed; the Python tests' GPU variants were not run"
fi
exit $status
