"""ferrocomp: GPU compression in Rust, with nvCOMP's Python API (``nvidia.nvcomp``).

Code written against ``nvidia.nvcomp`` runs by changing the import::

    import ferrocomp as nvcomp
    codec = nvcomp.Codec(algorithm="LZ4")
    compressed = codec.encode(nvcomp.as_array(cupy_array))
    restored = codec.decode(compressed)

Beyond nvCOMP: ``decode(srcs, out=[...])`` writes each chunk of a ``RAW`` batch straight into the
caller's arrays (e.g. slices of one CuPy buffer) without a copy or an allocation; with
``sync=False`` it returns a :class:`Pending` at once, without a host wait, with per-chunk statuses
and sizes on the device (``sync=True`` waits, to raise for bad chunks); bad data raises one
:class:`DecodeError` naming the chunk. Without a GPU (or with ``device_id="cpu"`` or
``FERROCOMP_CPU=1``) the same calls run on the CPU with NumPy or any buffer.
"""

from ferrocomp._errors import ChunkError, DecodeError, EncodeError
from ferrocomp._ferrocomp import (
    Array,
    ArrayBufferKind,
    BatchArray,
    BitcompMode,
    BitshuffleMode,
    BitstreamKind,
    CascadedCoarseGrainedEncoding,
    CascadedFineGrainedEncoding,
    CascadedMode,
    CascadedTerminalCodec,
    ChecksumPolicy,
    Codec,
    CompressConfig,
    CudaStream,
    DecompressBackend,
    DecompressConfig,
    ExecutionPolicy,
    Pending,
    Status,
    __version__,
    as_array,
    as_arrays,
    device_count,
    from_dlpack,
    set_device_allocator,
    set_host_allocator,
    set_pinned_allocator,
)
from ferrocomp.external_memory import ExternalMemory

# nvCOMP's module exports these enums' members by name too (its NONE is CascadedCoarseGrainedEncoding's).
NO_COMPUTE_NO_VERIFY = ChecksumPolicy.NO_COMPUTE_NO_VERIFY
COMPUTE_AND_NO_VERIFY = ChecksumPolicy.COMPUTE_AND_NO_VERIFY
NO_COMPUTE_AND_VERIFY_IF_PRESENT = ChecksumPolicy.NO_COMPUTE_AND_VERIFY_IF_PRESENT
COMPUTE_AND_VERIFY_IF_PRESENT = ChecksumPolicy.COMPUTE_AND_VERIFY_IF_PRESENT
COMPUTE_AND_VERIFY = ChecksumPolicy.COMPUTE_AND_VERIFY
STRIDED_DEVICE = ArrayBufferKind.STRIDED_DEVICE
STRIDED_HOST = ArrayBufferKind.STRIDED_HOST
BITCOMP_LOSSLESS = BitcompMode.BITCOMP_LOSSLESS
BITCOMP_LOSSY_FP_TO_SIGNED = BitcompMode.BITCOMP_LOSSY_FP_TO_SIGNED
BITCOMP_LOSSY_FP_TO_UNSIGNED = BitcompMode.BITCOMP_LOSSY_FP_TO_UNSIGNED
NVCOMP_BITSHUFFLE_NONE = BitshuffleMode.NVCOMP_BITSHUFFLE_NONE
NVCOMP_BITSHUFFLE_MSB_FIRST = BitshuffleMode.NVCOMP_BITSHUFFLE_MSB_FIRST
NVCOMP_BITSHUFFLE_LSB_FIRST = BitshuffleMode.NVCOMP_BITSHUFFLE_LSB_FIRST
NONE = CascadedCoarseGrainedEncoding.NONE
DELTA = CascadedFineGrainedEncoding.DELTA
RLE = CascadedFineGrainedEncoding.RLE
FOR = CascadedFineGrainedEncoding.FOR
ASYMMETRIC = CascadedMode.ASYMMETRIC
SYMMETRIC = CascadedMode.SYMMETRIC
UNSPECIFIED = CascadedTerminalCodec.UNSPECIFIED
CASCADED_BITPACK = CascadedTerminalCodec.CASCADED_BITPACK
NVCOMP_DECOMPRESS_BACKEND_DEFAULT = DecompressBackend.NVCOMP_DECOMPRESS_BACKEND_DEFAULT
NVCOMP_DECOMPRESS_BACKEND_HARDWARE = DecompressBackend.NVCOMP_DECOMPRESS_BACKEND_HARDWARE
NVCOMP_DECOMPRESS_BACKEND_CUDA = DecompressBackend.NVCOMP_DECOMPRESS_BACKEND_CUDA

__all__ = [
    "ASYMMETRIC",
    "BITCOMP_LOSSLESS",
    "BITCOMP_LOSSY_FP_TO_SIGNED",
    "BITCOMP_LOSSY_FP_TO_UNSIGNED",
    "CASCADED_BITPACK",
    "DELTA",
    "FOR",
    "NONE",
    "NVCOMP_BITSHUFFLE_LSB_FIRST",
    "NVCOMP_BITSHUFFLE_MSB_FIRST",
    "NVCOMP_BITSHUFFLE_NONE",
    "NVCOMP_DECOMPRESS_BACKEND_CUDA",
    "NVCOMP_DECOMPRESS_BACKEND_DEFAULT",
    "NVCOMP_DECOMPRESS_BACKEND_HARDWARE",
    "RLE",
    "SYMMETRIC",
    "UNSPECIFIED",
    "COMPUTE_AND_NO_VERIFY",
    "COMPUTE_AND_VERIFY",
    "COMPUTE_AND_VERIFY_IF_PRESENT",
    "NO_COMPUTE_AND_VERIFY_IF_PRESENT",
    "NO_COMPUTE_NO_VERIFY",
    "STRIDED_DEVICE",
    "STRIDED_HOST",
    "Array",
    "ArrayBufferKind",
    "BatchArray",
    "BitcompMode",
    "BitshuffleMode",
    "BitstreamKind",
    "CascadedCoarseGrainedEncoding",
    "CascadedFineGrainedEncoding",
    "CascadedMode",
    "CascadedTerminalCodec",
    "ChecksumPolicy",
    "ChunkError",
    "Codec",
    "CompressConfig",
    "CudaStream",
    "DecodeError",
    "DecompressBackend",
    "DecompressConfig",
    "EncodeError",
    "ExecutionPolicy",
    "ExternalMemory",
    "Pending",
    "Status",
    "__version__",
    "as_array",
    "as_arrays",
    "device_count",
    "from_dlpack",
    "set_device_allocator",
    "set_host_allocator",
    "set_pinned_allocator",
]
