#!/usr/bin/env bash
# GPU-vs-CPU differential fuzzing of every decoder (tests/src/bin/differential/): batches of
# mutated chunks decoded by the GPU's batched calls and by the CPU path, which must agree exactly
# and never write past an output room; optionally under compute-sanitizer memcheck or racecheck.
# Runs .gpu/differential (from scripts/gpu-pack.sh) where present, else builds it with cargo.
#
#   scripts/gpu-fuzz.sh SEED COUNT [memcheck|racecheck]
#
# COUNT chunks per decoder, drawn from SEED alone: the same SEED and COUNT repeat a run exactly (one
# decoder of it: .gpu/differential --seed SEED --count COUNT --decoder NAME). The chunks where the
# two sides differ are saved to ${OUT:-.}/differential-findings. Exit status 1 on a finding or a
# sanitizer error, 2 without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ] || [ $# -gt 3 ] || [[ ! ${3:-memcheck} =~ ^(memcheck|racecheck)$ ]]; then
    echo "usage: $0 SEED COUNT [memcheck|racecheck]" >&2
    exit 2
fi
bin=.gpu/differential
if [ ! -x "$bin" ]; then
    scripts/setup.sh
    cargo build --release -p ferrocomp-tests --bin differential
    bin=${CARGO_TARGET_DIR:-target}/release/differential
fi
run=("$bin" --seed "$1" --count "$2" --out "${OUT:-.}/differential-findings")
if [ $# -eq 2 ]; then
    exec "${run[@]}"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
compute-sanitizer --tool "$3" --error-exitcode 1 "${run[@]}" 2>&1 | tee "$log" || status=$?
echo "== compute-sanitizer $3:"
grep -E "SUMMARY" "$log" || echo "no summary from compute-sanitizer (it did not finish)"
exit $status
