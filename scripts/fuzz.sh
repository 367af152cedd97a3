#!/usr/bin/env bash
# Runs the fuzz targets (fuzz/fuzz_targets/, libFuzzer through cargo fuzz) and prints one line per
# target: executions, coverage reached, corpus size and findings.
#
#   scripts/fuzz.sh [--time SECONDS] [--runs N] [--fork JOBS] [TARGET...]
#
# Each target runs for SECONDS (default 10) or N executions, whichever ends first, over its seeds
# in fuzz/corpus/<target>; what it learns goes to target/fuzz-corpus/<target>, never into the
# repository's seeds. --fork runs JOBS processes per target (libFuzzer's -fork). A crash, a hang
# (an input taking over 10 s) or running out of memory (2 GiB) fails the run; the input is left in
# target/fuzz-artifacts/<target>/ to replay with `cargo fuzz run <target> <file>` and to add as a
# regression test. Every target runs from one binary, by_name (FUZZ_TARGET names the target); on a
# machine without cargo, point $FUZZ_BIN at the folder holding a prebuilt one.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=10 runs=-1 fork=0 targets=()
while [ $# -gt 0 ]; do
    case $1 in
    --time) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --fork) fork=$2; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(ls fuzz/fuzz_targets | sed 's/\.rs$//' | grep -v '^by_name$')

bin=${FUZZ_BIN:-}
if [ -z "$bin" ]; then
    scripts/setup.sh
    command -v cargo-fuzz >/dev/null || cargo install --locked --quiet cargo-fuzz@0.13.2
    cargo fuzz build --fuzz-dir fuzz --sanitizer none --debug-assertions >&2
    bin=target/x86_64-unknown-linux-gnu/release
fi

# A field ("cov: 123") of the last status line.
field() { grep -oE "$1: [0-9]+" <<<"$line" | tail -1 || true; }

failed=0
export RAYON_NUM_THREADS=1 # one input at a time: waking a pool costs more than the work
for target in "${targets[@]}"; do
    corpus=target/fuzz-corpus/$target artifacts=target/fuzz-artifacts/$target/
    mkdir -p "$corpus" "$artifacts"
    log=target/fuzz-artifacts/$target.log
    options=(-max_total_time="$seconds" -runs="$runs" -timeout=10 -rss_limit_mb=2048 -max_len=16384
             -artifact_prefix="$artifacts" -print_final_stats=1)
    [ "$fork" -gt 0 ] && options+=(-fork="$fork")
    status=0
    FUZZ_TARGET=$target "$bin/by_name" "${options[@]}" "$corpus" "fuzz/corpus/$target" >"$log" 2>&1 || status=$?
    # The last status line: "#RUNS ... cov: C ft: F corp: N/..." (or, forked, "#RUNS: cov: ...").
    line=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    execs=$(awk '/^stat::number_of_executed_units:/ { s += $2 } END { print s + 0 }' "$log")
    [ "$execs" -gt 0 ] || execs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"${line:-#0}")
    cov=$(field cov) ft=$(field ft) corp=$(field corp)
    findings=$(find "$artifacts" -type f | wc -l)
    printf '%-22s %12s runs  %-10s %-10s %-11s findings: %s\n' "$target" "$execs" "$cov" "$ft" "$corp" "$findings"
    if [ "$status" -ne 0 ] || [ "$findings" -gt 0 ]; then
        failed=1
        grep -E 'panicked|ERROR|SUMMARY|Test unit written|error' "$log" | head -5 >&2 || tail -3 "$log" >&2
    fi
done
exit $failed
