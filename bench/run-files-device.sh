#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-pack.sh (.gpu/) with .whl/ carried: GPU tests, the CLI end to end on 4 GiB of text, ferrocomp bench, the CPU path beside the libraries,
# memcheck on the pipeline, Python with CuPy.
set -uo pipefail
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export RUST_BACKTRACE=1
F=.gpu/ferrocomp; M="python3 bench/measure.py"
ANCHOR_MB=256 python3 bench/make_datasets.py /tmp/data >/dev/null 2>&1
for i in $(seq 16); do cat /tmp/data/text.bin; done > /tmp/t4g
N=$(stat -c %s /tmp/t4g)
echo "== GPU tests"
for t in stream gpu codecs; do
  FERROCOMP_REQUIRE_GPU=1 timeout 200 .gpu/tests/$t > $OUT/$t.log 2>&1; echo "$t exit $?"; grep -E "^test result|panicked|FAILED" $OUT/$t.log
done
echo "== CLI end to end, 4 GiB of text (page cache), LZ4"
$M "warm-up GPU compress (fills the driver's compile cache)" $N $F -q -f /tmp/t4g -o /tmp/t.fcmp
rm -f /tmp/t.fcmp
$M "GPU compress to a file" $N $F -q /tmp/t4g -o /tmp/t.fcmp
$M "GPU decompress to a file" $N $F -q -d /tmp/t.fcmp -o /tmp/t.out
cmp /tmp/t4g /tmp/t.out && echo "GPU round trip ok"; rm -f /tmp/t.out
$M "GPU decompress to /dev/null" $N $F -q -d -c /tmp/t.fcmp
$M "GPU decompress to tmpfs" $N $F -q -d /tmp/t.fcmp -o /dev/shm/t.out; rm -f /dev/shm/t.out
$M "GPU decompress to a pipe" $N sh -c "$F -q -d -c /tmp/t.fcmp | cat > /dev/null"
$M "CPU compress to a file" $N $F --cpu -q /tmp/t4g -o /tmp/tc.fcmp
cmp /tmp/t.fcmp /tmp/tc.fcmp && echo "GPU and CPU files identical"; rm -f /tmp/tc.fcmp
$M "CPU decompress to a file" $N $F --cpu -q -d /tmp/t.fcmp -o /tmp/t.out; rm -f /tmp/t.out
$M "CPU decompress to /dev/null" $N $F --cpu -q -d -c /tmp/t.fcmp
$M "GPU decompress, cold JIT cache" $N env CUDA_CACHE_DISABLE=1 $F -q -d -c /tmp/t.fcmp
$F info /tmp/t.fcmp
rm -f /tmp/t.fcmp
echo "== ferrocomp bench, 64 MiB of text"
head -c 67108864 /tmp/data/text.bin > /tmp/t64
timeout 200 $F bench -q --seconds 0.2 /tmp/t64 > $OUT/bench.md 2>$OUT/bench.err; echo "bench exit $?"; cat $OUT/bench.md
echo "== CPU path beside the libraries"
timeout 100 .gpu/cpu-path --data /tmp/data --reps 2 --zstd-levels 1 --out $OUT/cpu-path.md > $OUT/cpu-path.log 2>&1; echo "cpu-path exit $?"; cat $OUT/cpu-path.md
echo "== memcheck: the pipeline on the GPU"
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 .gpu/tests/stream files_are slices_through corrupted single_block > $OUT/memcheck-stream.log 2>&1; echo "exit $?"
grep -E "ERROR SUMMARY|^test result" $OUT/memcheck-stream.log
echo "== Python with CuPy"
python3 -m pip install --quiet --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl .gpu/ferrocomp-*.whl
FERROCOMP_REQUIRE_GPU=1 PYTHONPATH=/tmp/site timeout 120 python3 -m pytest -p no:cacheprovider -q -x python/tests > $OUT/pytest.log 2>&1; echo "pytest exit $?"
tail -3 $OUT/pytest.log
