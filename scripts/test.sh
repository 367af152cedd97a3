#!/usr/bin/env bash
# The test suite: format, lints, the shipped PTX and the docs, every Rust test, the examples, the
# packages as a dependent sees them, each fuzz target briefly, then the Python package
# built into .venv and its tests (GPU tests skip, saying so, without a device; FERROCOMP_REQUIRE_GPU=1 makes them fail).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all --check
cargo clippy --quiet --workspace --all-targets -- -D warnings
# The shipped PTX is what the kernels' source builds to; the API docs build, warning-free.
scripts/ptx.sh --check
RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p ferrocomp-format -p ferrocomp-kernels-gpu -p ferrocomp
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace 2>&1 | tee "$log"
# The examples, on the CPU path without a GPU (those that need one say so).
for example in host/examples/*.rs; do
    cargo run --quiet -p ferrocomp --example "$(basename "$example" .rs)"
done
# What a dependent gets: packages, the MSRV, a stable-Rust project using ferrocomp.
scripts/packaging.sh
# Every fuzz target for a few seconds over its seeds, so that a regression surfaces here.
scripts/fuzz.sh --time 5

# Python: a virtual environment with the pinned tools, the extension built into it, lint, pytest.
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet -r python/requirements-test.txt
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --quiet --manifest-path python/Cargo.toml
.venv/bin/ruff format --check --config python/pyproject.toml python bench fuzz
.venv/bin/ruff check --config python/pyproject.toml python bench fuzz
.venv/bin/python -m pytest -p no:cacheprovider python/tests 2>&1 | tee -a "$log"

# One line for the whole run, summed over every Rust test binary and pytest.
awk '/^test result:/ { passed += $4; failed += $6 }
     /^=+ .*(passed|failed).* in [0-9.]+s/ {
         for (i = 2; i <= NF; i++) { if ($i ~ /^passed/) passed += $(i - 1); if ($i ~ /^failed/) failed += $(i - 1) } }
     END { printf "Total: %d passed, %d failed\n", passed, failed }' "$log"
