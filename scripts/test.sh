#!/usr/bin/env bash
# The test suite: format, lints, and every test (GPU tests skip, saying so, without a device).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/setup.sh)"
cargo fmt --all --check
(cd kernels-gpu && cargo fmt --check && cargo clippy --quiet -- -D warnings)
cargo clippy --quiet --workspace --all-targets -- -D warnings
cargo test --workspace
