#!/usr/bin/env bash
# Prepares a fresh machine to build and test ferrocomp: the pinned toolchain (rust-toolchain.toml).
# Nothing CUDA: the driver is opened at run time where there is one, and the CPU path runs where not.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup toolchain install >&2
