#!/usr/bin/env bash
# Rebuilds the kernels' PTX from kernels-gpu's Rust source with the pinned nightly and writes it to
# kernels-gpu/kernels.ptx, the file the crate ships; run it after editing a kernel and commit the
# result. With --check (CI), writes nothing and fails if the shipped file differs from the rebuild.
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
[ "${1:-}" = --check ] && check=true
# kernels-gpu's build script compiles the PTX (the default arch) and says where it put it.
fresh=$(env -u FERROCOMP_PTX_ARCH FERROCOMP_REBUILD_PTX=1 \
    cargo build --quiet --package ferrocomp-kernels-gpu --message-format=json |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "build-script-executed" and "ferrocomp-kernels-gpu" in m["package_id"]:
        print(dict(m["env"])["FERROCOMP_KERNELS_PTX"])')
shipped=kernels-gpu/kernels.ptx
if ! $check; then
    cp "$fresh" "$shipped"
    echo "wrote $shipped ($(wc -c <"$shipped") bytes)"
elif cmp -s "$fresh" "$shipped"; then
    echo "$shipped is what kernels-gpu's source builds to"
else
    diff "$shipped" "$fresh" | head -20 >&2 || true
    echo "$shipped differs from a fresh build of kernels-gpu: run scripts/ptx.sh and commit it" >&2
    exit 1
fi
