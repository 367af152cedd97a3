#!/usr/bin/env bash
# The test suite: format, lints, the docs, the shipped PTX, every Rust test and the examples, the
# Python wheel (manylinux, checked by auditwheel) installed into .venv and its tests (GPU tests
# skip, saying so, without a device; FERROCOMP_REQUIRE_GPU=1 makes them fail), the packages as a
# dependent sees them, and each fuzz target briefly. One build profile (dev) serves the tests, the
# examples, the CLI and the wheel; each stage prints its time.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Runs stage $1 (the command that follows), then prints how long it took.
stage() {
    local name=$1 started=$SECONDS
    shift
    echo "== $name"
    "$@"
    echo "== $name: $((SECONDS - started)) s"
}

lint() {
    cargo fmt --all --check
    cargo clippy --quiet --workspace --all-targets -- -D warnings
    # The API docs build, warning-free (on the check build clippy left).
    RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p ferrocomp-format -p ferrocomp-kernels-gpu -p ferrocomp
}

rust_tests() {
    cargo test --workspace 2>&1 | tee -a "$log"
    # The examples, on the CPU path without a GPU (those that need one say so); built by the tests.
    for example in host/examples/*.rs; do
        cargo run --quiet -p ferrocomp --example "$(basename "$example" .rs)"
    done
}

python_tests() {
    [ -x .venv/bin/python ] || python3 -m venv .venv
    .venv/bin/python -m pip install --quiet -r python/requirements-test.txt
    .venv/bin/ruff format --check --config python/pyproject.toml python bench fuzz scripts
    .venv/bin/ruff check --config python/pyproject.toml python bench fuzz scripts
    # The wheel as a user installs it: abi3, manylinux as auditwheel judges it, no libcuda linked.
    local wheels=target/wheels
    rm -rf "$wheels"
    .venv/bin/maturin build --quiet --profile dev --manifest-path python/Cargo.toml --out "$wheels"
    local wheel
    wheel=$(ls "$wheels"/ferrocomp-*-cp310-abi3-manylinux_*.whl)
    .venv/bin/auditwheel show "$wheel" | tee "$wheels/audit.txt"
    local tag
    tag=$(basename "$wheel" .whl | sed 's/.*-\(manylinux_[0-9]*_[0-9]*_x86_64\)$/\1/')
    tr '\n' ' ' <"$wheels/audit.txt" | grep -q "is consistent with the following platform tag: \"$tag\"" ||
        { echo "auditwheel does not find $wheel consistent with $tag" >&2; return 1; }
    if unzip -p "$wheel" 'ferrocomp/_ferrocomp*.so' >"$wheels/extension.so" && ldd "$wheels/extension.so" | grep -i cuda; then
        echo "the extension links a CUDA library" >&2
        return 1
    fi
    .venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheel"
    # From outside the source tree, so that the installed wheel is what imports.
    (cd python/tests && ../../.venv/bin/python -m pytest -p no:cacheprovider .) 2>&1 | tee -a "$log"
}

stage setup scripts/setup.sh
stage lint lint
# The shipped PTX is what the kernels' source builds to.
stage ptx scripts/ptx.sh --check
stage "rust tests" rust_tests
stage python python_tests
# What a dependent gets: packages, the MSRV, a project using ferrocomp, the CLI installed.
stage packaging scripts/packaging.sh
# Every fuzz target for a few seconds over its seeds, so that a regression surfaces here.
stage fuzz scripts/fuzz.sh --time 5

# One line for the whole run, summed over every Rust test binary and pytest.
awk '/^test result:/ { passed += $4; failed += $6 }
     /^=+ .*(passed|failed).* in [0-9.]+s/ {
         for (i = 2; i <= NF; i++) { if ($i ~ /^passed/) passed += $(i - 1); if ($i ~ /^failed/) failed += $(i - 1) } }
     END { printf "Total: %d passed, %d failed\n", passed, failed }' "$log"
echo "== all stages: $SECONDS s"
