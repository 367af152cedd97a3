import numpy as np

import ferrocomp as nvcomp  # was: from nvidia import nvcomp

try:
    import cupy as xp  # device arrays: one batched GPU call each way
except ImportError:
    xp = np  # numpy arrays and no GPU: the same calls, on the CPU

codec = nvcomp.Codec(algorithm="LZ4", bitstream_kind=nvcomp.BitstreamKind.RAW)
data = xp.tile(xp.arange(1024, dtype=xp.float32), 4096)  # 16 MiB
pages = [data[i : i + 16384] for i in range(0, data.size, 16384)]
compressed = codec.encode(pages)
out = xp.empty_like(data)  # decode straight into one buffer, no copy:
codec.decode(compressed, out=nvcomp.as_arrays(out, [i * 65536 for i in range(len(pages))], [65536] * len(pages)))
assert (out == data).all()
print(f"{data.nbytes} bytes in {len(pages)} pages -> {sum(c.size for c in compressed)} bytes and back")
