#!/usr/bin/env bash
# On the GPU machine, from the repo root: the read path's checks and bench (issue 46). Carried in .dev/ (ignored):
# gpu.txz (scripts/gpu-pack.sh's .gpu/tests, xz'd), cli.txz (its ferrocomp), ferrocomp-*.whl, wheels/*.whl (zarr,
# numcodecs and what they need), nvcomp/ (nvCOMP's Python wheel, and libnvcomp.so.6 in libnvcomp.txz, for the
# nvCOMP reader). STEPS picks from "tests pytest bench cli" (default all; cli: a file decoded through the range
# reader beside the same bytes streamed from stdin); ZARR_MB and IMAGE_MB size the bench's arrays (default 1024 and
# 512), ONLY picks stores by name. The report and device.txt go to $OUT, with every log in $OUT/logs.tgz.
set -uo pipefail
out=${OUT:-/tmp/out}
logs=/tmp/logs
mkdir -p "$out" "$logs"
trap 'tar -czf "$out/logs.tgz" -C "$logs" .' EXIT
steps=${STEPS:-tests pytest bench cli}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
export FERROCOMP_REQUIRE_GPU=1 RUST_BACKTRACE=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/site .dev/wheels/*.whl .dev/ferrocomp-*.whl \
    $(ls .dev/nvcomp/*.whl 2>/dev/null)
if [ -f .dev/nvcomp/libnvcomp.txz ]; then
    tar -xJf .dev/nvcomp/libnvcomp.txz -C /tmp/site
fi
export PYTHONPATH=/tmp/site
failed=0
mkdir -p /tmp/gpu
for packed in .dev/gpu.txz .dev/cli.txz; do
    if [ -f $packed ]; then tar -xJf $packed -C /tmp/gpu; fi
done
if [[ $steps == *tests* ]]; then
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
if [[ $steps == *cli* ]]; then
    F=/tmp/gpu/ferrocomp M="python3 bench/measure.py"
    ANCHOR_MB=256 python3 bench/make_datasets.py /tmp/data >/dev/null 2>&1
    for i in $(seq 16); do cat /tmp/data/text.bin; done >/tmp/t4g
    n=$(stat -c %s /tmp/t4g)
    echo "| CLI, 4 GiB of text from the page cache | seconds | GB/s | peak RSS | |"
    echo "|---|---|---|---|---|"
    for codec in lz4 zstd; do
        $F -q -f -a $codec /tmp/t4g -o /tmp/t.fcmp
        for run in 1 2; do
            $M "$codec: -d FILE (range reader), run $run" "$n" $F -q -f -d /tmp/t.fcmp -o /tmp/t.out
            cmp /tmp/t4g /tmp/t.out || { echo "$codec: the file decode differs"; failed=1; }
            $M "$codec: -d from stdin (streamed), run $run" "$n" sh -c "$F -q -f -d -o /tmp/t.out - </tmp/t.fcmp"
            cmp /tmp/t4g /tmp/t.out || { echo "$codec: the streamed decode differs"; failed=1; }
        done
    done
    rm -f /tmp/t.fcmp /tmp/t.out /tmp/t4g
fi
exit $failed
