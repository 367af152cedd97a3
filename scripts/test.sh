#!/usr/bin/env bash
# The test suite: format, lints, and every test (GPU tests skip, saying so, without a device).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/setup.sh)"
cargo fmt --all --check
(cd kernels-gpu && cargo fmt --check && cargo clippy --quiet -- -D warnings)
cargo clippy --quiet --workspace --all-targets -- -D warnings
log=$(mktemp)
cargo test --workspace 2>&1 | tee "$log"
# One line for the whole run, summed over every test binary.
awk '/^test result:/ { passed += $4; failed += $6 } END { printf "Total: %d passed, %d failed\n", passed, failed }' "$log"
rm -f "$log"
