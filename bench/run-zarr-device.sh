#!/usr/bin/env bash
# On the GPU machine, from the repo root: the read path's checks and bench (issue 46). Carried in .dev/ (ignored):
# gpu.txz (scripts/gpu-pack.sh's .gpu/tests, xz'd), ferrocomp-*.whl, and wheels/*.whl (zarr, numcodecs and what they
# need; nvCOMP's Python wheel and libnvcomp.so.6 for the nvCOMP reader). STEPS picks from "tests pytest bench"
# (default all); ZARR_MB and IMAGE_MB size the bench's arrays (default 1024 and 512), ONLY picks stores by name. The report and device.txt go to
# $OUT, with every log in $OUT/logs.tgz.
set -uo pipefail
out=${OUT:-/tmp/out}
logs=/tmp/logs
mkdir -p "$out" "$logs"
trap 'tar -czf "$out/logs.tgz" -C "$logs" .' EXIT
steps=${STEPS:-tests pytest bench}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
export FERROCOMP_REQUIRE_GPU=1 RUST_BACKTRACE=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .dev/wheels/*.whl .dev/ferrocomp-*.whl
if [ -f .dev/libnvcomp.txz ]; then
    tar -xJf .dev/libnvcomp.txz -C /tmp/site
fi
export PYTHONPATH=/tmp/site
failed=0
if [[ $steps == *tests* ]]; then
    mkdir -p /tmp/gpu && tar -xJf .dev/gpu.txz -C /tmp/gpu
    for test in $(ls /tmp/gpu/tests/* | grep -v _emulated); do
        timeout -s KILL 240 "$test" >"$logs/$(basename "$test").log" 2>&1 || failed=1
        echo "$(basename "$test"): $(grep -E '^test result' "$logs/$(basename "$test").log" | tail -1)"
        grep -E "panicked|FAILED" "$logs/$(basename "$test").log" | head -5
    done
    timeout -s KILL 200 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/gpu/tests/codecs c_blosc \
        >"$logs/memcheck-codecs.log" 2>&1 || failed=1
    grep -E "ERROR SUMMARY|^test result" "$logs/memcheck-codecs.log"
fi
if [[ $steps == *pytest* ]]; then
    python3 -m pytest -q -p no:cacheprovider -rfEs python/tests >"$logs/pytest.log" 2>&1 || failed=1
    grep -E "^(FAILED|ERROR)|^=+ .* in [0-9.]+s|passed|SKIPPED" "$logs/pytest.log" | tail -15
    compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
        python/tests/test_zarr_pipeline.py -k gpu >"$logs/memcheck-pytest.log" 2>&1 || failed=1
    grep -E "ERROR SUMMARY|passed|failed" "$logs/memcheck-pytest.log" | tail -2
fi
if [[ $steps == *bench* ]]; then
    python3 bench/zarr_bench.py --mb "${ZARR_MB:-1024}" --image-mb "${IMAGE_MB:-512}" --only "${ONLY:-}" \
        --out "$out/zarr_bench.md" \
        2>&1 | tee "$logs/zarr_bench.log" || failed=1
fi
exit $failed
