#!/usr/bin/env bash
# Builds the test, bench and CLI executables into .gpu/ (ignored by git) to carry to the GPU machine,
# which has no Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
rm -rf .gpu && mkdir -p .gpu/tests
collect() { # copies the test executables cargo reports into $1 (binaries are copied by name below; examples
    # such as fuzz_seeds and bounded-ptx are tools, not tests)
    python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and not {"bin", "example"} & set(m["target"]["kind"]):
        shutil.copy(m["executable"], sys.argv[1] + "/" + m["target"]["name"])' "$1"
}
cargo test --release --no-run --message-format=json -p ferrocomp-tests -p ferrocomp-format | collect .gpu/tests
cargo test --release --no-run --message-format=json -p ferrocomp --lib | collect .gpu/tests # the host's unit tests
cargo bench --no-run --message-format=json -p ferrocomp-bench | collect .gpu
cargo build --release -p ferrocomp-cli -p ferrocomp-bench
cargo build --release -p ferrocomp-tests --bin differential
release=${CARGO_TARGET_DIR:-target}/release # where cargo put them (a worktree's build may share another target)
for binary in ferrocomp ferrocomp-bench cpu-path zstd-anatomy deflate-anatomy differential; do
    cp "$release/$binary" .gpu/
done
cargo build --release -p ferrocomp --examples
mkdir -p .gpu/examples
for example in host/examples/*.rs; do cp "$release/examples/$(basename "$example" .rs)" .gpu/examples/; done
strip .gpu/* .gpu/tests/* .gpu/examples/* 2>/dev/null || true
# The Python package as an abi3 wheel (the GPU machine's CPython 3.12 installs it with pip --target).
[ -x .venv/bin/maturin ] || { python3 -m venv .venv && .venv/bin/python -m pip install --quiet -r python/requirements-test.txt; }
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin build --quiet --release --compatibility linux \
    --manifest-path python/Cargo.toml --out .gpu
du -sh .gpu
