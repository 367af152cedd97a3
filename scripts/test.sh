#!/usr/bin/env bash
# The test suite: format, lints, every Rust test, each fuzz target briefly, then the Python package
# built into .venv and its tests (GPU tests skip, saying so, without a device; FERROCOMP_REQUIRE_GPU=1 makes them fail).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/setup.sh)"
cargo fmt --all --check
(cd kernels-gpu && cargo fmt --check && cargo clippy --quiet -- -D warnings)
cargo clippy --quiet --workspace --all-targets -- -D warnings
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace 2>&1 | tee "$log"
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
