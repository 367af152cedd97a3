//! `Codec` (nvCOMP's): an algorithm with its options, a bitstream kind and a device (or the CPU),
//! with `encode` and `decode` of one array or of a list (one batch). The native bitstream is
//! ferrocomp's `BufferCodec`, one call per array; `RAW` and `WITH_UNCOMPRESSED_SIZE` hold one
//! block per array and run a whole list as one `ChunkListCodec` call, writing into the caller's
//! `out=` arrays when given, and asynchronously with `sync=False`.

use crate::alloc::host_memory;
use crate::array::{Array, integers};
use crate::call::{Call, Outcomes, Pending, filled, first_failure, returned};
use crate::device::{self, StreamRef, stream_arg};
use crate::dtype::DType;
use crate::enums::{BitstreamKind, PyChecksumPolicy};
use crate::errors::{Direction, device_error, to_py, value_error};
use crate::keep::Keep;
use ferrocomp::{Ans, AnsDataType, Bitcomp, Cascaded, ErrorBound};
use ferrocomp::{
    Bitstream, Blosc, BufferCodec, ChecksumPolicy, ChunkListCodec, Config, DEFAULT_CHUNK_SIZE, DataType, Deflate,
    DeviceView, DeviceViewMut, ElementType, GDeflate, Gpu, Lz4, Options, Shuffle, Snappy, Wrapper, Zstd,
};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::collections::HashSet;
use std::ops::{Range, RangeInclusive};
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
/// `num_rles` (default 2) and `num_deltas` (default 1) its layers, at most 4 each, `use_bp`
/// (default True) bit-packing, and `search_layers` (default True) whether the layers are most, the
/// smallest coding searched per sub-block, or exact as nvCOMP 4 applied them. Bitcomp:
/// `data_type` the numbers it packs (default "|u1", nvCOMP's), `algorithm_type` 0 (default) or 1
/// (sparse: for data with many zeros), and `error_bound`: lossy, each element of a float32 or
/// float64 `data_type` (the default "<f4") decoded within this absolute error of its value. ANS:
/// `data_type` "|u1" (default: every byte a symbol) or "<f2" (each value's high byte a symbol).
#[pyclass(module = "ferrocomp", frozen)]
pub struct Codec {
    options: Option<Options>,
    bitstream: Bitstream,
    native: BufferCodec,
    chunks: Option<ChunkListCodec>,
    backend: Backend,
}

/// The algorithm and options nvCOMP's arguments name.
fn parse_options(
    algorithm: &str,
    data_type: Option<&Bound<'_, PyAny>>,
    algorithm_type: Option<i64>,
    wrapper: Option<&str>,
    blosc: BloscArgs,
    layers: CascadedArgs,
    error_bound: Option<f32>,
) -> PyResult<Options> {
    let name = algorithm.to_ascii_lowercase();
    if (blosc.typesize.is_some() || blosc.shuffle.is_some()) && name != "blosc" {
        return Err(value_error(format!("typesize and shuffle apply to Blosc, not {algorithm}")));
    }
    if layers.given() && name != "cascaded" {
        return Err(value_error(format!(
            "num_rles, num_deltas, use_bp and search_layers apply to Cascaded, not {algorithm}"
        )));
    }
    if error_bound.is_some() && name != "bitcomp" {
        return Err(value_error(format!("error_bound applies to Bitcomp, not {algorithm}")));
    }
    let element_type = data_type;
    let data_type = || -> PyResult<DataType> {
        let Some(arg) = element_type else { return Ok(DataType::default()) };
        match DType::from_arg(arg)?.size {
            1 => Ok(DataType::Char),
            2 => Ok(DataType::Short),
            4 => Ok(DataType::Int),
            8 => Ok(DataType::LongLong),
            size => Err(value_error(format!("data_type of {size} bytes: LZ4 and Snappy take 1, 2, 4 or 8"))),
        }
    };
    let level = |levels: RangeInclusive<u8>, default: u8| match algorithm_type {
        None => Ok(default),
        Some(level) if u8::try_from(level).is_ok_and(|level| levels.contains(&level)) => Ok(level as u8),
        Some(level) => Err(value_error(format!("algorithm_type {level} is outside {levels:?}"))),
    };
    if algorithm_type.is_some()
        && !matches!(name.as_str(), "deflate" | "zlib" | "gzip" | "gdeflate" | "zstd" | "bitcomp")
    {
        return Err(value_error(format!(
            "algorithm_type applies to Deflate, GDeflate, Zstd and Bitcomp, not {algorithm}"
        )));
    }
    let deflate_level = || level(Deflate::LEVELS, Deflate::default().level);
    let named_wrapper = match name.as_str() {
        "zlib" => Some(Wrapper::Zlib),
        "gzip" => Some(Wrapper::Gzip),
        _ => None,
    };
    let wrapper = match (wrapper.map(str::to_ascii_lowercase).as_deref(), named_wrapper) {
        (None, named) => named.unwrap_or(Wrapper::Raw),
        (Some(_), _) if !matches!(name.as_str(), "deflate" | "zlib" | "gzip") => {
            return Err(value_error(format!("wrapper applies to Deflate, not {algorithm}")));
        }
        (Some("raw"), None) => Wrapper::Raw,
        (Some("zlib"), None | Some(Wrapper::Zlib)) => Wrapper::Zlib,
        (Some("gzip"), None | Some(Wrapper::Gzip)) => Wrapper::Gzip,
        (Some(other), _) => {
            return Err(value_error(format!("wrapper {other:?} does not fit algorithm {algorithm:?}")));
        }
    };
    Ok(match name.as_str() {
        "lz4" => Options::Lz4(Lz4 { data_type: data_type()? }),
        "snappy" => Options::Snappy(Snappy { data_type: data_type()? }),
        "deflate" | "zlib" | "gzip" => Options::Deflate(Deflate { level: deflate_level()?, wrapper }),
        "gdeflate" => Options::GDeflate(GDeflate { level: deflate_level()? }),
        "blosc" => Options::Blosc(blosc.options(element_type)?),
        "zstd" => Options::Zstd(Zstd { level: level(Zstd::LEVELS, Zstd::default().level)? }),
        "cascaded" => Options::Cascaded(layers.options(element_type)?),
        "bitcomp" => Options::Bitcomp(bitcomp_options(element_type, algorithm_type, error_bound)?),
        "ans" => Options::Ans(Ans { data_type: ans_data_type(element_type)? }),
        _ => {
            return Err(value_error(format!(
                "unknown algorithm {algorithm:?}: ferrocomp has LZ4, Snappy, Deflate (and zlib, gzip), GDeflate, \
                 Blosc, Zstd, Cascaded, Bitcomp, ANS"
            )));
        }
    })
}

/// The numeric codecs' element type of `data_type` (floats as the unsigned integers of their width).
fn element_type(data_type: &Bound<'_, PyAny>, algorithm: &str) -> PyResult<ElementType> {
    let dtype = DType::from_arg(data_type)?;
    let by_width = match dtype.size {
        1 => [ElementType::U8, ElementType::I8],
        2 => [ElementType::U16, ElementType::I16],
        4 => [ElementType::U32, ElementType::I32],
        8 => [ElementType::U64, ElementType::I64],
        size => return Err(value_error(format!("{algorithm} data_type of {size} bytes: 1, 2, 4 or 8"))),
    };
    Ok(by_width[(dtype.kind == 'i') as usize])
}

/// ANS's data type: bytes (default) or 16-bit floats.
fn ans_data_type(data_type: Option<&Bound<'_, PyAny>>) -> PyResult<AnsDataType> {
    let Some(data_type) = data_type else { return Ok(AnsDataType::Bytes) };
    match DType::from_arg(data_type)? {
        DType { size: 1, .. } => Ok(AnsDataType::Bytes),
        DType { kind: 'f', size: 2, .. } => Ok(AnsDataType::Float16),
        DType { kind, size, .. } => {
            Err(value_error(format!("ANS data_type {kind}{size}: bytes (\"|u1\") or float16 (\"<f2\")")))
        }
    }
}

/// Bitcomp's options from nvCOMP's arguments and the error bound.
fn bitcomp_options(
    data_type: Option<&Bound<'_, PyAny>>,
    algorithm_type: Option<i64>,
    error_bound: Option<f32>,
) -> PyResult<Bitcomp> {
    let element = match data_type {
        Some(data_type) => element_type(data_type, "Bitcomp")?,
        None if error_bound.is_some() => ElementType::U32, // float32
        None => Bitcomp::default().element,
    };
    let sparse = match algorithm_type {
        None | Some(0) => false,
        Some(1) => true,
        Some(other) => return Err(value_error(format!("Bitcomp algorithm_type {other}: 0 (default) or 1 (sparse)"))),
    };
    let error_bound = error_bound
        .map(|bound| {
            ErrorBound::new(bound).ok_or_else(|| value_error(format!("error_bound {bound}: finite and above 0")))
        })
        .transpose()?;
    let options = Bitcomp { element, sparse, error_bound };
    if !options.valid() {
        return Err(value_error("error_bound needs a 4- or 8-byte data_type (float32 or float64)"));
    }
    Ok(options)
}

/// Blosc's encoder options: `typesize` (default: `data_type`'s size, else 1) and `shuffle`
/// (numcodecs' 0 none, 1 byte, 2 bit, or "noshuffle", "shuffle", "bitshuffle"; default byte).
struct BloscArgs {
    typesize: Option<usize>,
    shuffle: Option<Shuffle>,
}

impl BloscArgs {
    fn new(typesize: Option<usize>, shuffle: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let shuffle = shuffle
            .map(|arg| match (arg.extract::<i64>(), arg.extract::<String>().as_deref()) {
                (Ok(0), _) | (_, Ok("noshuffle")) => Ok(Shuffle::None),
                (Ok(1), _) | (_, Ok("shuffle")) => Ok(Shuffle::Byte),
                (Ok(2), _) | (_, Ok("bitshuffle")) => Ok(Shuffle::Bit),
                _ => Err(value_error(format!("shuffle {arg}: 0/\"noshuffle\", 1/\"shuffle\" or 2/\"bitshuffle\""))),
            })
            .transpose()?;
        Ok(Self { typesize, shuffle })
    }

    fn options(&self, data_type: Option<&Bound<'_, PyAny>>) -> PyResult<Blosc> {
        let from_dtype = data_type.map(|arg| DType::from_arg(arg).map(|d| d.size)).transpose()?;
        let typesize = match self.typesize.or(from_dtype).unwrap_or(1) {
            size @ 1..=255 => size as u8,
            size => return Err(value_error(format!("Blosc typesize {size} is outside 1..=255"))),
        };
        Ok(Blosc { typesize, shuffle: self.shuffle.unwrap_or(Shuffle::Byte) })
    }
}

/// Cascaded's options as nvCOMP 4 named them, and ferrocomp's layer search.
#[derive(Clone, Copy)]
struct CascadedArgs {
    num_rles: Option<u8>,
    num_deltas: Option<u8>,
    use_bp: Option<bool>,
    search_layers: Option<bool>,
}

impl CascadedArgs {
    /// Whether any was given.
    fn given(&self) -> bool {
        self.num_rles.is_some() || self.num_deltas.is_some() || self.use_bp.is_some() || self.search_layers.is_some()
    }

    fn options(&self, data_type: Option<&Bound<'_, PyAny>>) -> PyResult<Cascaded> {
        let defaults = Cascaded::default();
        let element = match data_type {
            None => defaults.element,
            Some(data_type) => element_type(data_type, "Cascaded")?,
        };
        let options = Cascaded {
            element,
            rles: self.num_rles.unwrap_or(defaults.rles),
            deltas: self.num_deltas.unwrap_or(defaults.deltas),
            bitpack: self.use_bp.unwrap_or(defaults.bitpack),
            auto: self.search_layers.unwrap_or(defaults.auto),
        };
        if !options.valid() {
            return Err(value_error(format!(
                "num_rles {} and num_deltas {}: each may be at most 4",
                options.rles, options.deltas
            )));
        }
        Ok(options)
    }
}

/// The name nvCOMP spells an algorithm with.
fn algorithm_name(options: &Options) -> &'static str {
    match options {
        Options::Lz4(_) => "LZ4",
        Options::Snappy(_) => "Snappy",
        Options::Deflate(Deflate { wrapper: Wrapper::Zlib, .. }) => "zlib",
        Options::Deflate(Deflate { wrapper: Wrapper::Gzip, .. }) => "gzip",
        Options::Deflate(_) => "Deflate",
        Options::GDeflate(_) => "GDeflate",
        Options::Blosc(_) => "Blosc",
        Options::Zstd(_) => "Zstd",
        Options::Cascaded(_) => "Cascaded",
        Options::Bitcomp(_) => "Bitcomp",
        Options::Ans(_) => "ANS",
    }
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
        search_layers = None,
        error_bound = None,
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
        search_layers: Option<bool>,
        error_bound: Option<f32>,
    ) -> PyResult<Self> {
        let blosc = BloscArgs::new(typesize, shuffle)?;
        let layers = CascadedArgs { num_rles, num_deltas, use_bp, search_layers };
        let options =
            algorithm.map(|name| parse_options(name, data_type, algorithm_type, wrapper, blosc, layers, error_bound));
        let options = options.transpose()?;
        let bitstream = Bitstream::from(bitstream_kind);
        let checksum = ChecksumPolicy::from(checksum_policy);
        if bitstream != Bitstream::Native && checksum.requires() {
            return Err(value_error("COMPUTE_AND_VERIFY needs checksums, which only NVCOMP_NATIVE streams store"));
        }
        let backend = backend(device_id, stream_arg(cuda_stream)?)?;
        let gpu = match &backend {
            Backend::Gpu { gpu, .. } => Some(gpu.clone()),
            Backend::Cpu => None,
        };
        let config = Config { chunk_size: uncomp_chunk_size, bitstream, checksum };
        let native = BufferCodec::new(options.unwrap_or_default(), config, gpu.clone()).map_err(device_error)?;
        let chunks = match (bitstream, options) {
            (Bitstream::Native, _) => None,
            (_, Some(options)) => Some(ChunkListCodec::new(options, bitstream, gpu).map_err(device_error)?),
            (_, None) => return Err(value_error("RAW and WITH_UNCOMPRESSED_SIZE streams name no algorithm: give one")),
        };
        Ok(Self { options, bitstream, native, chunks, backend })
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

    /// Compresses one array (returns an `Array`) or a list of them (one batch; returns a list).
    /// `out`: the caller's arrays to write into (each as large as `max_compressed_size` of the
    /// largest input). `sync=False` (`RAW`/`WITH_UNCOMPRESSED_SIZE`) returns a `Pending` at once.
    #[pyo3(signature = (array, out = None, *, sync = true))]
    fn encode(
        &self,
        py: Python<'_>,
        array: &Bound<'_, PyAny>,
        out: Option<&Bound<'_, PyAny>>,
        sync: bool,
    ) -> PyResult<Py<PyAny>> {
        if self.options.is_none() {
            return Err(value_error("this Codec has no algorithm; name one to encode"));
        }
        let (inputs, single) = self.inputs(py, array)?;
        let outs = self.outs(out, inputs.len(), single)?;
        match &self.chunks {
            Some(chunks) => self.run_chunks(py, Direction::Encode, chunks, inputs, outs, single, DType::bytes(), sync),
            None => self.run_native(py, Direction::Encode, inputs, outs, single, DType::bytes(), sync),
        }
    }

    /// Decompresses one array (returns an `Array`) or a list of them (one batch; returns a
    /// list). `data_type`: the element type of the arrays returned (default bytes, `"|u1"`).
    /// `out`: the caller's arrays to decode straight into (no copy; their decoded prefix is
    /// returned). `sync=False` (`RAW`/`WITH_UNCOMPRESSED_SIZE`) returns a `Pending` at once, with
    /// per-chunk statuses and sizes. A failing chunk raises one `DecodeError` naming it; the
    /// other chunks are decoded intact.
    #[pyo3(signature = (src, data_type = None, out = None, *, sync = true))]
    fn decode(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        data_type: Option<&Bound<'_, PyAny>>,
        out: Option<&Bound<'_, PyAny>>,
        sync: bool,
    ) -> PyResult<Py<PyAny>> {
        let dtype = data_type.map(DType::from_arg).transpose()?.unwrap_or_else(DType::bytes);
        let (inputs, single) = self.inputs(py, src)?;
        let outs = self.outs(out, inputs.len(), single)?;
        match &self.chunks {
            Some(chunks) => self.run_chunks(py, Direction::Decode, chunks, inputs, outs, single, dtype, sync),
            None => self.run_native(py, Direction::Decode, inputs, outs, single, dtype, sync),
        }
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
            inputs: vec![input],
            outputs: vec![output],
            callers_outputs: true,
            dtype: DType::bytes(),
            single: true,
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

    /// The call's input arrays, contiguous and where the codec runs (host ones uploaded on the
    /// codec's stream for a GPU codec, device ones copied down for the CPU), and whether the call
    /// took a single array.
    fn inputs(&self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<(Vec<Array>, bool)> {
        let single = !is_list(obj);
        let objects: Vec<Bound<'_, PyAny>> =
            if single { vec![obj.clone()] } else { obj.try_iter()?.collect::<PyResult<_>>()? };
        let mut arrays = Vec::with_capacity(objects.len());
        for (i, object) in objects.iter().enumerate() {
            let array = Array::from_object(object, None)?;
            array.require_contiguous(format_args!("input {i}"))?;
            let placed = match &self.backend {
                Backend::Cpu => array.to_host(py)?,
                Backend::Gpu { ordinal, stream, .. } => match array.device {
                    None => array.to_device(py, false, stream.raw())?,
                    Some(device) if device == *ordinal => array,
                    Some(device) => {
                        return Err(value_error(format!("input {i} is on device {device}, the codec on {ordinal}")));
                    }
                },
            };
            arrays.push(placed);
        }
        Ok((arrays, single))
    }

    /// The caller's `out=` arrays: one per input, contiguous, writable, where the codec runs.
    fn outs(&self, out: Option<&Bound<'_, PyAny>>, count: usize, single: bool) -> PyResult<Option<Vec<Array>>> {
        let Some(out) = out.filter(|out| !out.is_none()) else { return Ok(None) };
        let objects: Vec<Bound<'_, PyAny>> = match (single, is_list(out)) {
            (true, false) => vec![out.clone()],
            (false, true) => out.try_iter()?.collect::<PyResult<_>>()?,
            (true, true) => return Err(value_error("one array in, so out= is one array, not a list")),
            (false, false) => return Err(value_error("a list in, so out= is a list of arrays")),
        };
        if objects.len() != count {
            return Err(value_error(format!("{count} inputs but {} out= arrays", objects.len())));
        }
        let mut arrays = Vec::with_capacity(count);
        for (i, object) in objects.iter().enumerate() {
            let array = Array::from_object(object, None)?;
            let what = format_args!("out array {i}");
            array.require_contiguous(what)?;
            array.require_writable(what)?;
            match (&self.backend, array.device) {
                (Backend::Cpu, None) => {}
                (Backend::Gpu { ordinal, .. }, Some(device)) if device == *ordinal => {}
                (Backend::Cpu, Some(_)) => {
                    return Err(value_error(format!("{what} is on a GPU; the codec runs on the CPU")));
                }
                (Backend::Gpu { ordinal, .. }, _) => {
                    return Err(value_error(format!("{what} must be device memory on device {ordinal}")));
                }
            }
            arrays.push(array);
        }
        Ok(Some(arrays))
    }

    /// The distinct streams producing `arrays`' data, other than `own`.
    fn producers<'a>(arrays: impl IntoIterator<Item = &'a Array>, own: u64) -> HashSet<u64> {
        arrays.into_iter().filter_map(|a| a.stream.as_ref().map(|s| s.raw())).filter(|&raw| raw != own).collect()
    }

    /// One array (native bitstream) at a time, each a whole `BufferCodec` call.
    #[allow(clippy::too_many_arguments)]
    fn run_native(
        &self,
        py: Python<'_>,
        direction: Direction,
        inputs: Vec<Array>,
        outs: Option<Vec<Array>>,
        single: bool,
        dtype: DType,
        sync: bool,
    ) -> PyResult<Py<PyAny>> {
        if !sync {
            return Err(value_error("sync=False needs RAW or WITH_UNCOMPRESSED_SIZE; native streams decode whole"));
        }
        if let Backend::Gpu { gpu, stream, .. } = &self.backend {
            // The container's header is read with a plain copy, so the producers must be done.
            for producer in Self::producers(inputs.iter().chain(outs.iter().flatten()), 0) {
                py.detach(|| device::synchronize(gpu, producer)).map_err(device_error)?;
            }
            py.detach(|| stream.stream().synchronize()).map_err(device_error)?;
        }
        let fail = |e| to_py(e, direction);
        let mut results = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.iter().enumerate() {
            let out = outs.as_ref().map(|outs| &outs[i]);
            let result = match (&self.backend, direction, out) {
                (Backend::Cpu, Direction::Encode, _) => {
                    let bytes = py.detach(|| self.native.compress(unsafe { input.host_bytes() })).map_err(fail)?;
                    let ptr = bytes.as_ptr() as u64;
                    Array::new(ptr, bytes.len(), DType::bytes(), None, Arc::new(Keep::Bytes(bytes)))
                }
                (Backend::Gpu { ordinal, stream, .. }, Direction::Encode, _) => {
                    let view = input.device_bytes();
                    let buffer = py.detach(|| self.native.compress_device(view, stream.stream())).map_err(fail)?;
                    let (ptr, nbytes) = (buffer.address(), buffer.len());
                    Array::new(ptr, nbytes, DType::bytes(), Some(*ordinal), Arc::new(Keep::Device(buffer)))
                }
                (Backend::Cpu, Direction::Decode, Some(out)) => {
                    let (input, output) = unsafe { (input.host_bytes(), out.host_bytes_mut()) };
                    let size = py.detach(|| self.native.decompress_into(input, output)).map_err(fail)?;
                    filled(out, size, true, &dtype)?
                }
                (Backend::Cpu, Direction::Decode, None) => {
                    let bytes = unsafe { input.host_bytes() };
                    let total = self.native.decompressed_size(bytes).map_err(fail)?;
                    let (ptr, keep) = host_memory(py, total)?;
                    let output = Array::new(ptr, total, DType::bytes(), None, Arc::new(keep));
                    let target = unsafe { output.host_bytes_mut() };
                    py.detach(|| self.native.decompress_into(bytes, target)).map_err(fail)?;
                    filled(&output, total, false, &dtype)?
                }
                (Backend::Gpu { stream, .. }, Direction::Decode, Some(out)) => {
                    let (view, target) = (input.device_bytes(), out.device_bytes_mut());
                    let size = py
                        .detach(|| self.native.decompress_device_into(view, target, stream.stream()))
                        .map_err(fail)?;
                    filled(out, size, true, &dtype)?
                }
                (Backend::Gpu { ordinal, stream, .. }, Direction::Decode, None) => {
                    let view = input.device_bytes();
                    let buffer = py.detach(|| self.native.decompress_device(view, stream.stream())).map_err(fail)?;
                    let (ptr, nbytes) = (buffer.address(), buffer.len());
                    let output =
                        Array::new(ptr, nbytes, DType::bytes(), Some(*ordinal), Arc::new(Keep::Device(buffer)));
                    filled(&output, nbytes, false, &dtype)?
                }
            };
            let result = match (direction, out) {
                (Direction::Encode, Some(out)) => self.copy_into(py, &result, out)?,
                _ => result,
            };
            results.push(result);
        }
        returned(py, results, single)
    }

    /// Copies encoded bytes into the caller's `out` array (the native bitstream's size is only
    /// known once encoded); returns `out` as filled.
    fn copy_into(&self, py: Python<'_>, encoded: &Array, out: &Array) -> PyResult<Array> {
        let size = encoded.nbytes();
        if out.nbytes() < size {
            return Err(value_error(format!("out holds {} bytes, the encoded data is {size}", out.nbytes())));
        }
        match &self.backend {
            Backend::Cpu => unsafe { out.host_bytes_mut()[..size].copy_from_slice(encoded.host_bytes()) },
            Backend::Gpu { gpu, stream, .. } => py
                .detach(|| {
                    device::copy_async(gpu, out.ptr, encoded.ptr, size, stream.raw())?;
                    stream.stream().synchronize()
                })
                .map_err(device_error)?,
        }
        filled(out, size, true, &DType::bytes())
    }

    /// A whole list as one batched call (one block per array).
    #[allow(clippy::too_many_arguments)]
    fn run_chunks(
        &self,
        py: Python<'_>,
        direction: Direction,
        chunks: &ChunkListCodec,
        inputs: Vec<Array>,
        outs: Option<Vec<Array>>,
        single: bool,
        dtype: DType,
        sync: bool,
    ) -> PyResult<Py<PyAny>> {
        let callers_outputs = outs.is_some();
        let fail = |e| to_py(e, direction);
        let (outputs, outcomes, stream) = match &self.backend {
            Backend::Cpu => {
                let outputs = match outs {
                    Some(outs) => outs,
                    None => self.allocate(py, direction, chunks, &inputs)?,
                };
                let ins: Vec<&[u8]> = inputs.iter().map(|a| unsafe { a.host_bytes() }).collect();
                let mut targets: Vec<&mut [u8]> = outputs.iter().map(|a| unsafe { a.host_bytes_mut() }).collect();
                let outcomes = py.detach(|| match direction {
                    Direction::Encode => chunks.compress_cpu(&ins, &mut targets),
                    Direction::Decode => chunks.decompress_cpu(&ins, &mut targets),
                });
                (outputs, Outcomes::Cpu(outcomes), None)
            }
            Backend::Gpu { gpu, stream, .. } => {
                let producers = Self::producers(inputs.iter().chain(outs.iter().flatten()), stream.raw());
                for producer in producers {
                    device::wait_for(gpu, stream.raw(), producer).map_err(device_error)?;
                }
                let outputs = match outs {
                    Some(outs) => outs,
                    None => self.allocate(py, direction, chunks, &inputs)?,
                };
                let ins: Vec<DeviceView<'_, u8>> = inputs.iter().map(Array::device_bytes).collect();
                let targets: Vec<DeviceViewMut<'_, u8>> = outputs.iter().map(Array::device_bytes_mut).collect();
                let results = py
                    .detach(|| unsafe {
                        match direction {
                            Direction::Encode => chunks.compress_async(&ins, &targets, stream.stream()),
                            Direction::Decode => chunks.decompress_async(&ins, &targets, stream.stream()),
                        }
                    })
                    .map_err(fail)?;
                (outputs, Outcomes::Gpu(Arc::new(results)), Some(stream.clone()))
            }
        };
        let prefix_len = chunks.prefix_len();
        let call =
            Call { direction, inputs, outputs, callers_outputs, dtype, single, prefix_len, packed: false, outcomes };
        if sync { call.finish(py) } else { Ok(Py::new(py, Pending::new(py, call, stream)?)?.into_any()) }
    }

    /// Outputs for a batched call without `out=`, back to back in one allocation: room for the
    /// largest input's bound each when encoding; each chunk's decompressed size when decoding
    /// (asked first, which waits for the device).
    fn allocate(
        &self,
        py: Python<'_>,
        direction: Direction,
        chunks: &ChunkListCodec,
        inputs: &[Array],
    ) -> PyResult<Vec<Array>> {
        let sizes: Vec<usize> = match direction {
            Direction::Encode => {
                let largest = inputs.iter().map(Array::nbytes).max().unwrap_or(0);
                vec![chunks.max_compressed_size(largest); inputs.len()]
            }
            Direction::Decode => {
                let outcomes = match &self.backend {
                    Backend::Cpu => {
                        let ins: Vec<&[u8]> = inputs.iter().map(|a| unsafe { a.host_bytes() }).collect();
                        py.detach(|| chunks.decompressed_sizes_cpu(&ins))
                    }
                    Backend::Gpu { stream, .. } => {
                        let ins: Vec<DeviceView<'_, u8>> = inputs.iter().map(Array::device_bytes).collect();
                        py.detach(|| {
                            let results = unsafe { chunks.decompressed_sizes_async(&ins, stream.stream())? };
                            results.outcomes()
                        })
                        .map_err(|e| to_py(e, direction))?
                    }
                };
                first_failure(outcomes, direction)?
            }
        };
        let total = sizes.iter().sum();
        let (base, keep, device) = match &self.backend {
            Backend::Cpu => {
                let (ptr, keep) = host_memory(py, total)?;
                (ptr, keep, None)
            }
            Backend::Gpu { gpu, ordinal, .. } => {
                let buffer = gpu.alloc::<u8>(total).map_err(device_error)?;
                (buffer.address(), Keep::Device(buffer), Some(*ordinal))
            }
        };
        let keep = Arc::new(keep);
        let mut at = base;
        Ok(sizes
            .into_iter()
            .map(|size| {
                let array = Array::new(at, size, DType::bytes(), device, keep.clone());
                at += size as u64;
                array
            })
            .collect())
    }
}
