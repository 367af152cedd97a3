#!/usr/bin/env bash
# Prepares a fresh machine to build and test ferrocomp: the pinned toolchain (rust-toolchain.toml)
# and, where no NVIDIA driver is installed, a link-time libcuda.so from Debian's non-free `libcuda1`
# (downloaded and unpacked into .cache/, never installed). Prints the environment to `source`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cache="$root/.cache"
mkdir -p "$cache"

rustup toolchain install >&2

if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    exit 0 # a real driver: link and run against it
fi

lib="$cache/libcuda/usr/lib/x86_64-linux-gnu/nvidia/current"
if [ ! -e "$lib/libcuda.so.1" ]; then
    apt_dir="$cache/apt"
    mkdir -p "$apt_dir/sources" "$apt_dir/lists/partial" "$apt_dir/archives/partial"
    sed 's/^Components: main$/Components: main non-free/' /etc/apt/sources.list.d/debian.sources \
        >"$apt_dir/sources/debian.sources"
    opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt_dir/sources"
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives")
    apt-get "${opts[@]}" update >&2
    (cd "$apt_dir" && apt-get "${opts[@]}" download libcuda1 >&2)
    dpkg -x "$apt_dir"/libcuda1_*.deb "$cache/libcuda"
    ln -sfn libcuda.so.1 "$lib/libcuda.so"
fi
# cust's build looks for libcuda under $CUDA_LIBRARY_PATH/lib64.
mkdir -p "$cache/cuda" && ln -sfn "$lib" "$cache/cuda/lib64"
echo "export CUDA_LIBRARY_PATH=$cache/cuda LD_LIBRARY_PATH=$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
