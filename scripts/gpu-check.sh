#!/usr/bin/env bash
# On the GPU machine, from the repository root, after scripts/gpu-pack.sh: every test with a GPU
# required, the GPU tests under compute-sanitizer memcheck, the examples, the Python tests with CuPy, and
# the CLI on the GPU. Logs go to $OUT. TESTS picks the test executables (default all of .gpu/tests but the emulated
# warp's, which need no GPU, run in CI, and would take the run past the device's 10 minutes a call).
set -uo pipefail
out=${OUT:-/tmp/ferrocomp-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export FERROCOMP_REQUIRE_GPU=1 RUST_BACKTRACE=1
failed=0
for test in ${TESTS:-$(ls .gpu/tests/* | grep -v _emulated)}; do
    echo "== $(basename "$test")"
    "$test" >"$out/$(basename "$test").log" 2>&1 || failed=1
    grep -E "^test result|panicked|FAILED" "$out/$(basename "$test").log"
done
# The codecs' decoders on foreign and corrupt streams (compressing at every level on one lane a
# chunk is too slow under memcheck).
for test in "gpu" "codecs corrupt cpu_libraries c_blosc libzstd zstd_chunks_ending"; do
    set -- $test
    echo "== compute-sanitizer memcheck: $*"
    timeout -s KILL 200 compute-sanitizer --tool memcheck --error-exitcode 9 ".gpu/tests/$1" "${@:2}" \
        >"$out/memcheck-$1.log" 2>&1 || failed=1
    grep -E "ERROR SUMMARY|^test result|panicked" "$out/memcheck-$1.log"
done
echo "== the examples (host/examples), on the GPU"
for example in .gpu/examples/*; do
    if said=$("$example" 2>&1); then
        echo "$(basename "$example"): ${said##*$'\n'}"
    else
        echo "$(basename "$example") FAILED: $said"
        failed=1
    fi
done
echo "== Python tests with CuPy (the wheel from .gpu/, zarr, numcodecs and uproot wheels from .whl/)"
python3 -m pip install --quiet --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl .gpu/ferrocomp-*.whl
PYTHONPATH=/tmp/site python3 -m pytest -p no:cacheprovider -rs python/tests >"$out/pytest.log" 2>&1 || failed=1
grep -E "^(FAILED|ERROR)|^=+ .* in [0-9.]+s" "$out/pytest.log"
echo "== CLI on the GPU, decoded on the CPU and back"
head -c 100000000 .gpu/ferrocomp >/tmp/cli-in && cat README.md docs/FORMAT.md >>/tmp/cli-in
for algorithm in lz4 snappy gzip gdeflate blosc zstd cascaded bitcomp ans; do
    .gpu/ferrocomp -v -f -a $algorithm --checksum compute-verify /tmp/cli-in -o /tmp/cli.fcmp &&
        .gpu/ferrocomp -v -f -d --cpu --checksum compute-verify /tmp/cli.fcmp -o /tmp/cli-cpu &&
        .gpu/ferrocomp -v -f -d /tmp/cli.fcmp -o /tmp/cli-gpu &&
        cmp /tmp/cli-in /tmp/cli-cpu && cmp /tmp/cli-in /tmp/cli-gpu && echo "CLI $algorithm round trip ok" || failed=1
done
exit $failed
