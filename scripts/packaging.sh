#!/usr/bin/env bash
# What a user of the crates gets, checked as CI does: the packages build from their tarballs alone,
# the stated MSRV builds them, and a project on current stable Rust that depends on ferrocomp by
# path builds and runs the README's example (the CPU path, without a GPU), as does the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/setup.sh
# The shipped PTX, never a rebuild: that is what a dependent gets.
unset FERROCOMP_REBUILD_PTX FERROCOMP_PTX_ARCH
crates=(-p ferrocomp-format -p ferrocomp-kernels-gpu -p ferrocomp -p ferrocomp-cli)

echo "== cargo package (each crate verified by building its .crate file)"
# Cargo verifies against the tarballs it extracted, and keeps extractions and builds of the same
# name and version from an earlier run of this script (as it does any registry crate's): ours go,
# so the check builds this tree's crates.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ferrocomp{,-format,-kernels-gpu,-cli}-[0-9]* target/package \
    target/debug/build/ferrocomp{,-format,-kernels-gpu,-cli} target/debug/.fingerprint/ferrocomp{,-format,-kernels-gpu,-cli}-*
cargo package --quiet --allow-dirty "${crates[@]}" # dirty: a local run checks the working tree

msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
echo "== MSRV $msrv"
rustup toolchain install "$msrv" --profile minimal >&2
cargo "+$msrv" check --quiet "${crates[@]}" --lib --bins --examples --target-dir target/msrv

echo "== a dependent crate on stable Rust"
rustup toolchain install stable --profile minimal >&2
rustc +stable --version
dependent=$(mktemp -d)
trap 'rm -rf "$dependent"' EXIT
mkdir "$dependent/src"
cat >"$dependent/Cargo.toml" <<TOML
[package]
name = "uses-ferrocomp"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
ferrocomp = { path = "$root/host" }
TOML
# The README's first Rust block is the program.
cp host/examples/quickstart.rs "$dependent/src/main.rs" # tests/tests/readme.rs checks the README's block is this file
export CARGO_TARGET_DIR=$root/target/dependent
(cd "$dependent" && cargo +stable run --quiet)

echo "== the CLI installed with stable Rust"
cargo +stable install --quiet --locked --path cli --root "$dependent/cli"
"$dependent/cli/bin/ferrocomp" --cpu -q -c README.md | "$dependent/cli/bin/ferrocomp" -d -q -c - | cmp - README.md
echo "ferrocomp CLI: README.md round-trips on the CPU"
