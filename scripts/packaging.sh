#!/usr/bin/env bash
# What a user of the crates gets, checked as CI does: the packages build from their tarballs alone;
# with the stated MSRV (a stable release, so one toolchain serves both checks) a project that
# depends on ferrocomp by path builds and runs the README's example on the CPU path, the examples
# build, and the CLI installs and round-trips a file; neither binary links libcuda.
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
echo "== Rust $msrv (the MSRV): a dependent crate, the examples, the CLI"
rustup toolchain install "$msrv" --profile minimal >&2
rustc "+$msrv" --version
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
# The README's first Rust block (tests/tests/readme.rs checks that it is this file).
cp host/examples/quickstart.rs "$dependent/src/main.rs"
# Resolved afresh, as a user's project is; the workspace's own builds below use its lock file.
(cd "$dependent" && cargo "+$msrv" run --quiet --target-dir "$root/target/msrv")
cargo "+$msrv" build --quiet --locked -p ferrocomp --examples --target-dir target/msrv
cargo "+$msrv" install --quiet --debug --locked --path cli --root "$dependent/cli" --target-dir target/msrv
cli=$dependent/cli/bin/ferrocomp
"$cli" --cpu -q -c README.md | "$cli" -d -q -c - | cmp - README.md
echo "ferrocomp CLI: README.md round-trips on the CPU"
for binary in "$cli" target/msrv/debug/uses-ferrocomp; do
    if ldd "$binary" | grep -i cuda; then
        echo "$binary links a CUDA library" >&2
        exit 1
    fi
done
echo "no libcuda linked: the driver is opened at run time"
