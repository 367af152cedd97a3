#!/usr/bin/env bash
# On the GPU machine, from the repo root: ferrocomp's LZ4, Snappy, Deflate and GDeflate (levels 1 and 4), Blosc and
# Zstd (every level) against nvCOMP's on the anchor's data sets, then the per-kernel criterion benchmarks. Needs .nvcomp/ (the
# nvidia-libnvcomp-cu13 wheel, from scripts/gpu-wheels.sh) and .gpu/ (built on the dev machine: ferrocomp-bench, and the criterion bench as
# kernels-bench or kernels, if there). Writes $OUT/bench.md and $OUT/criterion/ ($OUT defaults to /tmp/out).
# ANCHOR_MB sets the data set size, CODECS the codecs (default all), CRITERION=0 skips criterion. Few repetitions and short criterion runs, to save device time.
set -euo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
python3 -m zipfile -e .nvcomp/nvidia_libnvcomp_cu13-*.whl /tmp/nvcomp
python3 bench/make_datasets.py /tmp/data
.gpu/ferrocomp-bench --data /tmp/data --nvcomp /tmp/nvcomp/nvidia/libnvcomp/lib64/libnvcomp.so.6 \
    --codecs "${CODECS:-lz4,snappy,deflate,gdeflate,blosc,zstd,cascaded,bitcomp,ans}" --levels 1,4 --reps 5 --out "$out/bench.md"
[ "${CRITERION:-1}" = 0 ] && exit 0
for kernels in .gpu/kernels-bench .gpu/kernels; do
    if [ -x "$kernels" ]; then
        CRITERION_HOME="$out/criterion" "$kernels" --bench --warm-up-time 1 --measurement-time 3
        break
    fi
done
