"""nvCOMP's chunks as fuzz seeds, made on a GPU machine with nvCOMP's Python API.

Compresses the round-trip seeds' samples (the bytes after their 8 option bytes) with every
nvCOMP codec whose chunks ferrocomp reads, in nvCOMP's RAW bitstream (one standard chunk each),
and writes them as ``OUT/decode_<target>/nvcomp-<name>``, to be copied into ``fuzz/corpus``.

    python3 fuzz/nvcomp_seeds.py OUT
"""

import pathlib
import sys

import cupy
import numpy as np
from nvidia import nvcomp

CORPUS = pathlib.Path(__file__).parent / "corpus"
# nvCOMP's algorithm name and its options, by the decode target that reads its chunks.
CODECS = {
    "decode_lz4": ("LZ4", {}),
    "decode_snappy": ("Snappy", {}),
    "decode_deflate": ("Deflate", {}),
    "decode_gdeflate": ("GDeflate", {}),
    "decode_zstd": ("Zstd", {}),
}


def samples() -> dict[str, bytes]:
    """The round-trip seeds' inputs by sample name (text, int32, float32, repeats)."""
    found = {}
    for seed in sorted((CORPUS / "roundtrip_lz4").glob("Lz4Lz4datatypeChar-*")):
        found[seed.name.rsplit("-", 1)[1]] = seed.read_bytes()[8:]
    return found


def main(out: pathlib.Path) -> None:
    """Writes every codec's chunk of every sample under ``out``."""
    for target, (algorithm, options) in CODECS.items():
        codec = nvcomp.Codec(algorithm=algorithm, bitstream_kind=nvcomp.BitstreamKind.RAW, **options)
        (out / target).mkdir(parents=True, exist_ok=True)
        for name, data in samples().items():
            chunk = codec.encode(nvcomp.as_array(cupy.asarray(np.frombuffer(data, dtype=np.uint8))))
            (out / target / f"nvcomp-{algorithm}-{name}").write_bytes(bytes(np.asarray(chunk.cpu())))
            print(target, name, len(data), "->", chunk.buffer_size)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
