//! `Codec` (nvCOMP's): an algorithm with its options, a bitstream kind and a device (or the CPU),
//! with `encode` and `decode` of one array or of a list (one batch). The native bitstream is
//! ferrocomp's `BufferCodec`, one call per array; `RAW` and `WITH_UNCOMPRESSED_SIZE` hold one
//! block per array and run a whole list as one `ChunkListCodec` call, writing into the caller's
//! `out=` arrays when given, and asynchronously with `sync=False`.

pub mod config;
mod options;
mod run;

use crate::array::Array;
use crate::array::batch::Arrays;
use crate::array::wrap::integers;
use crate::call::{Call, Outcomes, Pending, Returns};
use crate::device::{self, StreamRef, stream_arg};
use crate::dtype::{DType, ReturnType};
use crate::enums::{BitshuffleMode, BitstreamKind, DecompressBackend, ExecutionPolicy, PyChecksumPolicy};
use crate::errors::{Direction, device_error, option_error, to_py, value_error};
use config::{CompressConfig, DecompressConfig, sizes_arg};
use ferrocomp::settings::{algorithm_name, config};
use ferrocomp::{
    Algorithm, Bitstream, BufferCodec, ChecksumPolicy, ChunkListCodec, DEFAULT_CHUNK_SIZE, DeviceView, DeviceViewMut,
    Gpu, Options,
};
use options::{NvcompArgs, OptionArgs};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::ops::Range;
use std::sync::Arc;

/// Where a codec runs.
enum Backend {
    Cpu,
    Gpu { gpu: Gpu, ordinal: u32, stream: Arc<StreamRef> },
}

/// Compresses and decompresses arrays with one algorithm (nvCOMP's `Codec`).
///
/// `algorithm`: "LZ4", "Snappy", "Deflate", "GDeflate", "Blosc", "Zstd", "Cascaded", "Bitcomp", "ANS" (any case), or "zlib"/"gzip" for Deflate
/// with that wrapper; `None` makes a codec that only decodes native streams (their header names
/// the algorithm). `device_id`: a CUDA device, `"cpu"`, or `None` for the first GPU when there is
/// one (and `FERROCOMP_CPU=1` is not set), else the CPU. `cuda_stream`: the stream the codec
/// works on (an int or an object with `ptr`); by default one of its own. `uncomp_chunk_size`:
/// bytes per chunk of the native bitstream. `data_type` (LZ4, Snappy): the element type, as an
/// array-protocol string ("<i4") or NumPy dtype; matches then keep to its width.
/// `algorithm_type` (Deflate, GDeflate): nvCOMP's level, 0 to 5 (default 1); (Zstd) ferrocomp's
/// level, 1 (fast, the default), 2 (nvCOMP's ratio or better) or 3 (highest ratio), where nvCOMP's
/// Zstd has none. `wrapper`
/// (Deflate): "raw" (default), "zlib" or "gzip". `typesize` and `shuffle` (Blosc): the element
/// size the shuffle transposes (default `data_type`'s, else 1) and the filter, as numcodecs
/// names it (0/"noshuffle", 1/"shuffle" (default), 2/"bitshuffle"). Cascaded: `data_type` the
/// integers its layers work in (default "<u4"; floats as the integers of their width),
/// `num_rles` (default 2) and `num_deltas` (default 1) its layers, at most 4 each, `use_bp` (or
/// `use_bitpack`, as nvCOMP's reference spells it; default True) bit-packing, and `search_layers` (default True) whether the layers are most, the
/// smallest coding searched per sub-block, or exact as nvCOMP 4 applied them. Bitcomp:
/// `data_type` the numbers it packs (default "|u1", nvCOMP's), `algorithm_type` 0 (default) or 1
/// (sparse: for data with many zeros), and `error_bound`: lossy, each element of a float32 or
/// float64 `data_type` (the default "<f4") decoded within this absolute error of its value. ANS:
/// `data_type` "|u1" (default: every byte a symbol), "float8_e4m3" (each value a symbol, whole),
/// "<f2" or "<f4" (each value's high byte a symbol, its other bytes stored as they are).
/// nvCOMP 6's other options: `execution_policy`, `use_de_sort` and `skip_validate` are accepted
/// hints (one implementation, no hardware engine, every chunk checked anyway);
/// `decompress_backend` and `bitshuffle_mode` take their defaults only; Cascaded's `mode`
/// (`search_layers`), `terminal_codecs` (bit-packing), `fine_grained_encodings` and
/// `compression_level` (which layers, and how many) and Bitcomp's lossy `mode` with `delta`
/// (`error_bound` = `delta / 2`) become ferrocomp's options; ANS's layout options take 0 only.
#[pyclass(module = "ferrocomp", frozen)]
pub struct Codec {
    options: Option<Options>,
    bitstream: Bitstream,
    native: BufferCodec,
    chunks: Option<ChunkListCodec>,
    backend: Backend,
    /// The element type of the arrays `decode` returns unless it is given one.
    element_type: DType,
}

/// A `data_type` argument, `None` where it is left out or empty (nvCOMP's default, `""`).
fn given<'a, 'py>(data_type: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    data_type.filter(|arg| !arg.extract::<String>().is_ok_and(|s| s.is_empty()))
}

/// The element type of the arrays `decode` returns by default, as nvCOMP's: the codec's
/// `data_type`, else its algorithm's default (`char` for LZ4 and ANS, `uint32` for Cascaded,
/// bytes for the rest). 8-bit floats, which array libraries do not name, come as bytes.
fn element_type(data_type: Option<&Bound<'_, PyAny>>, options: Option<&Options>) -> PyResult<DType> {
    let dtype = match (given(data_type), options.map(Options::algorithm)) {
        (Some(arg), _) => DType::from_arg(arg)?,
        (None, Some(Algorithm::Lz4 | Algorithm::Ans)) => DType::chars(),
        (None, Some(Algorithm::Cascaded)) => DType { kind: 'u', size: 4, big_endian: false },
        (None, _) => DType::bytes(),
    };
    Ok(if dtype.kind == 'f' && dtype.size == 1 { DType::bytes() } else { dtype })
}

/// The backend `device_id` names.
fn backend(device_id: Option<&Bound<'_, PyAny>>, cuda_stream: Option<u64>) -> PyResult<Backend> {
    let ordinal = match device_id {
        Some(id) if id.extract::<String>().is_ok_and(|s| s.eq_ignore_ascii_case("cpu")) => return Ok(Backend::Cpu),
        Some(id) => Some(id.extract::<u32>().map_err(|_| value_error("device_id is a device index, \"cpu\" or None"))?),
        None => None,
    };
    let gpu = match ordinal {
        Some(ordinal) => device::gpu(ordinal).map_err(device_error)?,
        None => match device::default_gpu() {
            Some(gpu) => gpu,
            None => return Ok(Backend::Cpu),
        },
    };
    let stream = match cuda_stream {
        Some(raw) => StreamRef::borrowed(raw),
        None => StreamRef::owned(gpu.stream().map_err(device_error)?),
    };
    Ok(Backend::Gpu { gpu, ordinal: ordinal.unwrap_or(0), stream: Arc::new(stream) })
}

/// The byte ranges `n + 1` non-decreasing `offsets` (any integer array or list) cut from an
/// array of `len` bytes.
fn packed_ranges(py: Python<'_>, offsets: &Bound<'_, PyAny>, len: usize, what: &str) -> PyResult<Vec<Range<usize>>> {
    let offsets: Vec<usize> = integers(py, offsets)?.into_iter().map(|offset| offset as usize).collect();
    if offsets.is_empty() {
        return Err(value_error(format!("{what} is empty: n chunks need n + 1 offsets")));
    }
    if let Some(i) = offsets.windows(2).position(|pair| pair[0] > pair[1]) {
        return Err(value_error(format!("{what} decreases at chunk {i}: {} > {}", offsets[i], offsets[i + 1])));
    }
    if offsets[offsets.len() - 1] > len {
        return Err(value_error(format!(
            "{what} ends at {} but the array has {len} bytes",
            offsets[offsets.len() - 1]
        )));
    }
    Ok(offsets.windows(2).map(|pair| pair[0]..pair[1]).collect())
}

/// The alignment the codecs' buffers are fastest at (none is required): their kernels' 16-byte
/// loads and stores.
const PREFERRED_ALIGNMENT: usize = 16;

/// Whether `obj` is a list of arrays (one batch) rather than one array.
fn is_list(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>()
}

#[pymethods]
impl Codec {
    #[new]
    #[pyo3(signature = (
        algorithm = None,
        *,
        device_id = None,
        cuda_stream = None,
        uncomp_chunk_size = DEFAULT_CHUNK_SIZE,
        checksum_policy = PyChecksumPolicy::NoComputeNoVerify,
        bitstream_kind = BitstreamKind::NvcompNative,
        data_type = None,
        algorithm_type = None,
        wrapper = None,
        typesize = None,
        shuffle = None,
        num_rles = None,
        num_deltas = None,
        use_bp = None,
        use_bitpack = None,
        search_layers = None,
        error_bound = None,
        execution_policy = None,
        decompress_backend = None,
        use_de_sort = None,
        bitshuffle_mode = None,
        mode = None,
        delta = None,
        compression_level = None,
        terminal_codecs = None,
        fine_grained_encodings = None,
        coarse_grained_encodings = None,
        states_per_lane = None,
        histogram_reduction_log2 = None,
        max_sub_chunk_count = None,
        skip_validate = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        algorithm: Option<&str>,
        device_id: Option<&Bound<'_, PyAny>>,
        cuda_stream: Option<&Bound<'_, PyAny>>,
        uncomp_chunk_size: usize,
        checksum_policy: PyChecksumPolicy,
        bitstream_kind: BitstreamKind,
        data_type: Option<&Bound<'_, PyAny>>,
        algorithm_type: Option<i64>,
        wrapper: Option<&str>,
        typesize: Option<usize>,
        shuffle: Option<&Bound<'_, PyAny>>,
        num_rles: Option<u8>,
        num_deltas: Option<u8>,
        use_bp: Option<bool>,
        use_bitpack: Option<bool>,
        search_layers: Option<bool>,
        error_bound: Option<f32>,
        execution_policy: Option<ExecutionPolicy>,
        decompress_backend: Option<DecompressBackend>,
        use_de_sort: Option<bool>,
        bitshuffle_mode: Option<BitshuffleMode>,
        mode: Option<&Bound<'_, PyAny>>,
        delta: Option<f64>,
        compression_level: Option<u32>,
        terminal_codecs: Option<&Bound<'_, PyAny>>,
        fine_grained_encodings: Option<&Bound<'_, PyAny>>,
        coarse_grained_encodings: Option<&Bound<'_, PyAny>>,
        states_per_lane: Option<u32>,
        histogram_reduction_log2: Option<u32>,
        max_sub_chunk_count: Option<u32>,
        skip_validate: Option<bool>,
    ) -> PyResult<Self> {
        // Accepted as nvCOMP's hints, with nothing to choose: ferrocomp's kernels have one
        // implementation, no hardware engine's chunks to sort, and check every chunk anyway.
        let _ = (execution_policy, use_de_sort, skip_validate);
        let nvcomp = NvcompArgs {
            decompress_backend,
            bitshuffle_mode,
            mode,
            delta,
            compression_level,
            terminal_codecs,
            fine_grained_encodings,
            coarse_grained_encodings,
            states_per_lane,
            histogram_reduction_log2,
            max_sub_chunk_count,
        };
        let option_args = OptionArgs {
            data_type,
            algorithm_type,
            wrapper,
            typesize,
            shuffle,
            num_rles,
            num_deltas,
            use_bp,
            use_bitpack,
            search_layers,
            error_bound,
            nvcomp,
        };
        let options = match algorithm {
            Some(name) => Some(option_args.options(name)?),
            None => {
                option_args.nvcomp.check_common()?;
                None
            }
        };
        let bitstream = Bitstream::from(bitstream_kind);
        let config =
            config(uncomp_chunk_size, bitstream, ChecksumPolicy::from(checksum_policy)).map_err(option_error)?;
        let backend = backend(device_id, stream_arg(cuda_stream)?)?;
        let gpu = match &backend {
            Backend::Gpu { gpu, .. } => Some(gpu.clone()),
            Backend::Cpu => None,
        };
        let native = BufferCodec::new(options.unwrap_or_default(), config, gpu.clone()).map_err(device_error)?;
        let chunks = match (bitstream, options) {
            (Bitstream::Native, _) => None,
            (_, Some(options)) => Some(ChunkListCodec::new(options, bitstream, gpu).map_err(device_error)?),
            (_, None) => return Err(value_error("RAW and WITH_UNCOMPRESSED_SIZE streams name no algorithm: give one")),
        };
        let element_type = element_type(data_type, options.as_ref())?;
        Ok(Self { options, bitstream, native, chunks, backend, element_type })
    }

    /// The algorithm, as nvCOMP spells it (`None` for a decode-only codec).
    #[getter]
    fn algorithm(&self) -> Option<&'static str> {
        self.options.as_ref().map(algorithm_name)
    }

    /// The bitstream kind.
    #[getter]
    fn bitstream_kind(&self) -> BitstreamKind {
        match self.bitstream {
            Bitstream::Native => BitstreamKind::NvcompNative,
            Bitstream::Raw => BitstreamKind::Raw,
            Bitstream::WithUncompressedSize => BitstreamKind::WithUncompressedSize,
        }
    }

    /// The CUDA device the codec runs on, or `"cpu"`.
    #[getter]
    fn device_id(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match &self.backend {
            Backend::Gpu { ordinal, .. } => Ok(ordinal.into_pyobject(py)?.into_any().unbind()),
            Backend::Cpu => Ok("cpu".into_pyobject(py)?.into_any().unbind()),
        }
    }

    /// The stream the codec works on (`None` on the CPU).
    #[getter]
    fn cuda_stream(&self) -> Option<u64> {
        match &self.backend {
            Backend::Gpu { stream, .. } => Some(stream.raw()),
            Backend::Cpu => None,
        }
    }

    /// Room an `nbytes`-byte array may need once encoded (`RAW`/`WITH_UNCOMPRESSED_SIZE`): what
    /// each `out=` array of `encode` should hold.
    fn max_compressed_size(&self, nbytes: usize) -> PyResult<usize> {
        let chunks = self.chunks.as_ref().ok_or_else(|| value_error("max_compressed_size is for RAW streams"))?;
        Ok(chunks.max_compressed_size(nbytes))
    }

    /// Most bytes `encode` writes for the array `source` (nvCOMP's `get_max_comp_buffer_size`),
    /// in this codec's bitstream.
    fn get_max_comp_buffer_size(&self, source: &Bound<'_, PyAny>) -> PyResult<usize> {
        let nbytes = Array::from_object(source, None)?.nbytes();
        match &self.chunks {
            Some(chunks) => Ok(chunks.max_compressed_size(nbytes)),
            None => self.native.max_compressed_size(nbytes).map_err(|e| to_py(e, Direction::Encode)),
        }
    }

    /// The size the compressed array `source` decodes to (nvCOMP's `get_uncomp_buffer_size`):
    /// from a native stream's header (ferrocomp's or nvCOMP's) or a size prefix, or by walking
    /// a raw block (on the GPU for device arrays, which waits for it).
    fn get_uncomp_buffer_size(&self, py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<usize> {
        let (inputs, returns) = self.inputs(py, source)?;
        if inputs.len() != 1 {
            return Err(value_error(format!("get_uncomp_buffer_size takes one array, not {} of them", inputs.len())));
        }
        if returns != Returns::One {
            return Err(value_error("get_uncomp_buffer_size takes one array, not a list or a BatchArray"));
        }
        Ok(self.uncompressed_sizes(py, &inputs)?[0])
    }

    /// A configuration for encoding arrays of `uncompressed_size` bytes (an int), or a batch of
    /// arrays of these sizes (a list); nvCOMP's `compression_config`. It asks nothing of the
    /// device.
    fn compression_config(&self, uncompressed_size: &Bound<'_, PyAny>) -> PyResult<CompressConfig> {
        Ok(CompressConfig { sizes: sizes_arg(uncompressed_size)? })
    }

    /// A configuration for decoding (nvCOMP's `decompression_config`), reusable for batches of
    /// the same shape: from a `CompressConfig` (asking nothing of the device: the sync-free
    /// round trip), or read from compressed arrays (one, a list or a `BatchArray`), which for
    /// device arrays waits for the codec's stream.
    fn decompression_config(&self, py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<DecompressConfig> {
        if let Ok(config) = source.cast::<CompressConfig>() {
            return Ok(DecompressConfig { sizes: config.get().sizes.clone() });
        }
        let (inputs, _) = self.inputs(py, source)?;
        if inputs.is_empty() {
            return Err(value_error("a batch's configuration needs at least one array"));
        }
        Ok(DecompressConfig { sizes: self.uncompressed_sizes(py, &inputs)? })
    }

    /// The alignment of buffers `encode` reads and writes fastest (nvCOMP's
    /// `get_required_compression_alignment`): ferrocomp requires none, and its kernels take 16
    /// bytes at a time where the buffers allow.
    fn get_required_compression_alignment(&self) -> usize {
        PREFERRED_ALIGNMENT
    }

    /// The alignment of buffers `decode` reads and writes fastest (nvCOMP's
    /// `get_required_decompression_alignment`): none is required; 16 as for compression.
    fn get_required_decompression_alignment(&self) -> usize {
        PREFERRED_ALIGNMENT
    }

    /// Compresses one array (returns an `Array`) or a list of them (one batch; returns a list),
    /// of `"|i1"` elements as nvCOMP's. `out`: the caller's arrays to write into (each as large as `max_compressed_size` of the
    /// largest input). `compression_config`: from `compression_config`, checked against the
    /// arrays. `sync=False` (`RAW`/`WITH_UNCOMPRESSED_SIZE`) returns a `Pending` at once.
    #[pyo3(signature = (array, out = None, compression_config = None, *, sync = true))]
    fn encode(
        &self,
        py: Python<'_>,
        array: &Bound<'_, PyAny>,
        out: Option<&Bound<'_, PyAny>>,
        compression_config: Option<PyRef<'_, CompressConfig>>,
        sync: bool,
    ) -> PyResult<Py<PyAny>> {
        if self.options.is_none() {
            return Err(value_error("this Codec has no algorithm; name one to encode"));
        }
        let sizes = compression_config.map(|config| config.sizes.clone());
        let dtype = ReturnType { dtype: DType::chars(), asked: false };
        self.run(py, Direction::Encode, array, out, dtype, sync, sizes)
    }

    /// Decompresses one array (returns an `Array`) or a list of them (one batch; returns a
    /// list). `data_type`: the element type of the arrays returned, which must divide their
    /// sizes; by default the codec's `data_type`, else nvCOMP's default for the algorithm
    /// (`"|i1"` for LZ4 and ANS, `"<u4"` for Cascaded, `"|u1"` otherwise), and bytes (`"|u1"`)
    /// where that does not divide a size (nvCOMP drops the remainder).
    /// `out`: the caller's arrays to decode straight into (no copy; their decoded prefix is
    /// returned). `decompression_config`: from `decompression_config`, the sizes to allocate
    /// the outputs with, so that nothing is asked of the streams first. `sync=False`
    /// (`RAW`/`WITH_UNCOMPRESSED_SIZE`) returns a `Pending` at once, with per-chunk statuses and
    /// sizes. A failing chunk raises one `DecodeError` naming it; the other chunks are decoded
    /// intact.
    #[pyo3(signature = (src, data_type = None, out = None, decompression_config = None, *, sync = true))]
    fn decode(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        data_type: Option<&Bound<'_, PyAny>>,
        out: Option<&Bound<'_, PyAny>>,
        decompression_config: Option<PyRef<'_, DecompressConfig>>,
        sync: bool,
    ) -> PyResult<Py<PyAny>> {
        let dtype = match given(data_type) {
            Some(arg) => ReturnType { dtype: DType::from_arg(arg)?, asked: true },
            None => ReturnType { dtype: self.element_type.clone(), asked: false },
        };
        let sizes = decompression_config.map(|config| config.sizes.clone());
        self.run(py, Direction::Decode, src, out, dtype, sync, sizes)
    }

    /// Decompresses many RAW chunks packed in one array into one array, with no Python object
    /// per chunk (the cheapest batched call: an uproot cluster's pages into one buffer). Chunk
    /// `i` is `src[src_offsets[i]:src_offsets[i + 1]]` and decodes into
    /// `out[out_offsets[i]:out_offsets[i + 1]]`; offsets are byte offsets (any integer array or
    /// list, `n + 1` of them, non-decreasing). `src` and `out` are where the codec runs (device
    /// arrays for a GPU codec). Returns each chunk's decoded size (`uint64`), or raises one
    /// `DecodeError` naming the first failing chunk (the others decoded intact); `sync=False`
    /// returns a `Pending` at once, without waiting on the host.
    #[pyo3(signature = (src, src_offsets, out, out_offsets, *, sync = true))]
    fn decode_packed(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        src_offsets: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
        out_offsets: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<Py<PyAny>> {
        let chunks = self.chunks.as_ref().ok_or_else(|| value_error("decode_packed is for RAW streams"))?;
        let (input, output) = (Array::from_object(src, None)?, Array::from_object(out, None)?);
        input.require_contiguous("src")?;
        output.require_contiguous("out")?;
        output.require_writable("out")?;
        let ordinal = match &self.backend {
            Backend::Cpu => None,
            Backend::Gpu { ordinal, .. } => Some(*ordinal),
        };
        for (what, array) in [("src", &input), ("out", &output)] {
            if array.device != ordinal {
                return Err(value_error(format!("{what} must be in the memory the codec runs on ({})", self.place())));
            }
        }
        let ins = packed_ranges(py, src_offsets, input.nbytes(), "src_offsets")?;
        let outs = packed_ranges(py, out_offsets, output.nbytes(), "out_offsets")?;
        if ins.len() != outs.len() {
            return Err(value_error(format!("{} src chunks but {} out chunks", ins.len(), outs.len())));
        }
        let (outcomes, stream) = match &self.backend {
            Backend::Cpu => {
                let (bytes, mut rest) = unsafe { (input.host_bytes(), output.host_bytes_mut()) };
                let sources: Vec<&[u8]> = ins.iter().map(|r| &bytes[r.clone()]).collect();
                let mut targets = Vec::with_capacity(outs.len());
                let mut at = 0;
                for range in &outs {
                    let (_, tail) = std::mem::take(&mut rest).split_at_mut(range.start - at);
                    let (target, tail) = tail.split_at_mut(range.len());
                    targets.push(target);
                    (rest, at) = (tail, range.end);
                }
                (Outcomes::Cpu(py.detach(|| chunks.decompress_cpu(&sources, &mut targets))), None)
            }
            Backend::Gpu { gpu, stream, .. } => {
                for producer in Self::producers([&input, &output], stream.raw()) {
                    device::wait_for(gpu, stream.raw(), producer).map_err(device_error)?;
                }
                let sources: Vec<DeviceView<'_, u8>> =
                    ins.iter().map(|r| input.device_bytes().slice(r.start, r.len())).collect();
                let targets: Vec<DeviceViewMut<'_, u8>> = outs
                    .iter()
                    .map(|r| unsafe { DeviceViewMut::from_raw(output.ptr + r.start as u64, r.len()) })
                    .collect();
                let results = py
                    .detach(|| unsafe { chunks.decompress_async(&sources, &targets, stream.stream()) })
                    .map_err(|e| to_py(e, Direction::Decode))?;
                (Outcomes::Gpu(Arc::new(results)), Some(stream.clone()))
            }
        };
        let call = Call {
            direction: Direction::Decode,
            inputs: Arrays::Owned(vec![input]),
            outputs: Arrays::Owned(vec![output]),
            callers_outputs: true,
            dtype: ReturnType::bytes(),
            returns: Returns::One,
            prefix_len: chunks.prefix_len(),
            packed: true,
            outcomes,
        };
        if sync { call.finish(py) } else { Ok(Py::new(py, Pending::new(py, call, stream)?)?.into_any()) }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        false
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let place = self.place();
        let algorithm = self.algorithm().map_or("None".into(), |name| format!("'{name}'"));
        let kind = Py::new(py, self.bitstream_kind())?.into_bound(py).into_any().repr()?;
        Ok(format!("Codec(algorithm={algorithm}, bitstream_kind={kind}, {place})"))
    }
}

impl Codec {
    /// The chunk codec of a RAW or size-prefixed codec that runs on the CPU.
    pub(crate) fn cpu_chunks(&self) -> Option<&ChunkListCodec> {
        self.chunks.as_ref().filter(|_| matches!(self.backend, Backend::Cpu))
    }

    /// Where the codec runs, as its `device_id` argument reads.
    fn place(&self) -> String {
        match &self.backend {
            Backend::Gpu { ordinal, .. } => format!("device_id={ordinal}"),
            Backend::Cpu => "device_id='cpu'".into(),
        }
    }
}
