//! `Codec`'s keyword arguments for the algorithm's options (nvCOMP's, and ferrocomp's own for
//! Blosc, Cascaded's layer search and Bitcomp's error bound), made into [`Options`] by the rules
//! the command line shares ([`Settings`]). nvCOMP 6's options for its own formats are translated
//! where ferrocomp's formats have the same choice ([`NvcompArgs`]), and refused where not.

use crate::dtype::DType;
use crate::enums::{
    BitcompMode, BitshuffleMode, CascadedFineGrainedEncoding, CascadedMode, CascadedTerminalCodec, DecompressBackend,
    mask,
};
use crate::errors::{option_error, value_error};
use ferrocomp::Options;
use ferrocomp::settings::{NumberKind, NumberType, Setting, Settings};
use ferrocomp_format::cascaded::MAX_LAYERS;
use pyo3::prelude::*;

/// The option arguments of `Codec(...)`, as given.
pub struct OptionArgs<'a, 'py> {
    pub data_type: Option<&'a Bound<'py, PyAny>>,
    pub algorithm_type: Option<i64>,
    pub wrapper: Option<&'a str>,
    pub typesize: Option<usize>,
    pub shuffle: Option<&'a Bound<'py, PyAny>>,
    pub num_rles: Option<u8>,
    pub num_deltas: Option<u8>,
    pub use_bp: Option<bool>,
    /// `use_bp` as nvCOMP's reference spells it.
    pub use_bitpack: Option<bool>,
    pub search_layers: Option<bool>,
    pub error_bound: Option<f32>,
    pub nvcomp: NvcompArgs<'a, 'py>,
}

/// nvCOMP 6's option arguments that ferrocomp's own arguments do not spell the same way.
#[derive(Default)]
pub struct NvcompArgs<'a, 'py> {
    pub decompress_backend: Option<DecompressBackend>,
    pub bitshuffle_mode: Option<BitshuffleMode>,
    /// Bitcomp's `BitcompMode` or Cascaded's `CascadedMode`.
    pub mode: Option<&'a Bound<'py, PyAny>>,
    pub delta: Option<f64>,
    pub compression_level: Option<u32>,
    pub terminal_codecs: Option<&'a Bound<'py, PyAny>>,
    pub fine_grained_encodings: Option<&'a Bound<'py, PyAny>>,
    pub coarse_grained_encodings: Option<&'a Bound<'py, PyAny>>,
    pub states_per_lane: Option<u32>,
    pub histogram_reduction_log2: Option<u32>,
    pub max_sub_chunk_count: Option<u32>,
}

/// What nvCOMP's options come to in ferrocomp's settings.
#[derive(Default)]
struct Translated {
    rles: Option<u8>,
    deltas: Option<u8>,
    bitpack: Option<bool>,
    search_layers: Option<bool>,
    error_bound: Option<f32>,
}

impl NvcompArgs<'_, '_> {
    /// ferrocomp's settings for nvCOMP's options of `algorithm`; an error for a choice
    /// ferrocomp's formats do not have.
    fn translate(&self, algorithm: &str) -> PyResult<Translated> {
        self.check_common()?;
        let algorithm = algorithm.to_ascii_lowercase();
        match algorithm.as_str() {
            "bitcomp" => self.bitcomp(),
            "cascaded" => self.cascaded(),
            _ => match self.cascaded_or_bitcomp_option() {
                Some(name) => Err(value_error(format!("{name} applies to Cascaded or Bitcomp, not {algorithm}"))),
                None => Ok(Translated::default()),
            },
        }
    }

    /// Fails for a backend, bit shuffle or ANS layout ferrocomp does not have (whatever the
    /// algorithm: a codec without one decodes any).
    pub fn check_common(&self) -> PyResult<()> {
        if self.decompress_backend == Some(DecompressBackend::Hardware) {
            return Err(value_error(
                "decompress_backend NVCOMP_DECOMPRESS_BACKEND_HARDWARE: ferrocomp decodes with CUDA kernels, not \
                 Blackwell's decompression engine; give NVCOMP_DECOMPRESS_BACKEND_DEFAULT or _CUDA",
            ));
        }
        if self.bitshuffle_mode.is_some_and(|mode| mode != BitshuffleMode::None) {
            return Err(value_error(
                "bitshuffle_mode: ferrocomp's LZ4 is plain LZ4, without nvCOMP's bit shuffle; give \
                 NVCOMP_BITSHUFFLE_NONE",
            ));
        }
        let ans_layout = [
            ("states_per_lane", self.states_per_lane),
            ("histogram_reduction_log2", self.histogram_reduction_log2),
            ("max_sub_chunk_count", self.max_sub_chunk_count),
        ];
        if let Some((name, Some(value))) = ans_layout.into_iter().find(|(_, value)| value.is_some_and(|v| v != 0)) {
            return Err(value_error(format!(
                "{name} {value}: a parameter of nvCOMP's ANS format; ferrocomp's ANS fixes its layout (32 \
                 interleaved states per 8 KiB sub-block, from an exact histogram); give 0 (auto)"
            )));
        }
        Ok(())
    }

    /// The first Cascaded or Bitcomp option given, by name.
    fn cascaded_or_bitcomp_option(&self) -> Option<&'static str> {
        let shared = [("mode", self.mode.is_some()), ("delta", self.delta.is_some())];
        shared.into_iter().find_map(|(name, given)| given.then_some(name)).or_else(|| self.cascaded_option())
    }

    /// Bitcomp's `mode` and `delta`: lossy quantises to steps of `delta`, each value within
    /// `delta / 2`, ferrocomp's error bound.
    fn bitcomp(&self) -> PyResult<Translated> {
        if let Some(name) = self.cascaded_option() {
            return Err(value_error(format!("{name} applies to Cascaded, not Bitcomp")));
        }
        let mode = self.mode.map(|mode| mode.extract::<BitcompMode>()).transpose();
        let mode = mode.map_err(|_| value_error("Bitcomp's mode is a BitcompMode"))?;
        if mode.is_none_or(|mode| mode == BitcompMode::Lossless) {
            return Ok(Translated::default());
        }
        match self.delta {
            Some(delta) if delta.is_finite() && delta > 0.0 => {
                Ok(Translated { error_bound: Some((delta / 2.0) as f32), ..Translated::default() })
            }
            delta => Err(value_error(format!(
                "lossy Bitcomp needs a delta above 0 (the quantisation step), not {}",
                delta.map_or("none".into(), |d| d.to_string())
            ))),
        }
    }

    /// The first Cascaded-only option given, by name.
    fn cascaded_option(&self) -> Option<&'static str> {
        [
            ("compression_level", self.compression_level.is_some()),
            ("terminal_codecs", self.terminal_codecs.is_some()),
            ("fine_grained_encodings", self.fine_grained_encodings.is_some()),
            ("coarse_grained_encodings", self.coarse_grained_encodings.is_some()),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
    }

    /// Cascaded's stages as nvCOMP 6 names them: `mode` whether they are searched per sub-block,
    /// `terminal_codecs` bit-packing (required), `fine_grained_encodings` which optional layers,
    /// and `compression_level` how many at most: one delta layer where `DELTA` is on, the rest
    /// run-length layers where `RLE` is.
    fn cascaded(&self) -> PyResult<Translated> {
        if self.delta.is_some() {
            return Err(value_error("delta applies to Bitcomp, not Cascaded"));
        }
        let mut translated = Translated::default();
        if let Some(mode) = self.mode {
            let mode = mode.extract::<CascadedMode>().map_err(|_| value_error("Cascaded's mode is a CascadedMode"))?;
            translated.search_layers = Some(mode == CascadedMode::Asymmetric);
        }
        if let Some(codecs) = self.terminal_codecs {
            if mask(codecs)? & CascadedTerminalCodec::CascadedBitpack as u32 == 0 {
                return Err(value_error(
                    "terminal_codecs must include CASCADED_BITPACK, Cascaded's only terminal codec",
                ));
            }
            translated.bitpack = Some(true);
        }
        if let Some(coarse) = self.coarse_grained_encodings
            && mask(coarse)? != 0
        {
            return Err(value_error("coarse_grained_encodings: only NONE exists"));
        }
        if self.fine_grained_encodings.is_none() && self.compression_level.is_none() {
            return Ok(translated);
        }
        let fine = match self.fine_grained_encodings {
            Some(fine) => mask(fine)?,
            None => CascadedFineGrainedEncoding::Delta as u32 | CascadedFineGrainedEncoding::Rle as u32,
        };
        let level = self.compression_level.unwrap_or(3) as usize;
        let deltas = if fine & CascadedFineGrainedEncoding::Delta as u32 != 0 { level.min(1) } else { 0 };
        let rles =
            if fine & CascadedFineGrainedEncoding::Rle as u32 != 0 { (level - deltas).min(MAX_LAYERS) } else { 0 };
        translated.deltas = Some(deltas as u8);
        translated.rles = Some(rles as u8);
        Ok(translated)
    }
}

impl OptionArgs<'_, '_> {
    /// The options of the algorithm named `algorithm` with these arguments.
    pub fn options(&self, algorithm: &str) -> PyResult<Options> {
        let data_type = self.data_type.map(DType::from_arg).transpose()?.map(|dtype| number_type(&dtype));
        // numcodecs' shuffle: a number or a name.
        let shuffle = match self.shuffle {
            Some(arg) => Some(match arg.extract::<i64>() {
                Ok(number) => number.to_string(),
                Err(_) => arg.str()?.to_string(),
            }),
            None => None,
        };
        let bitpack = match (self.use_bp, self.use_bitpack) {
            (Some(use_bp), Some(use_bitpack)) if use_bp != use_bitpack => {
                return Err(value_error("use_bp and use_bitpack (its other name) disagree; give one"));
            }
            (use_bp, use_bitpack) => use_bp.or(use_bitpack),
        };
        let nvcomps = self.nvcomp.translate(algorithm)?;
        let settings = Settings {
            level: self.algorithm_type,
            data_type,
            wrapper: self.wrapper,
            typesize: self.typesize,
            shuffle: shuffle.as_deref(),
            rles: either("num_rles", self.num_rles, nvcomps.rles)?,
            deltas: either("num_deltas", self.num_deltas, nvcomps.deltas)?,
            bitpack: either("use_bp", bitpack, nvcomps.bitpack)?,
            search_layers: either("search_layers", self.search_layers, nvcomps.search_layers)?,
            error_bound: either("error_bound", self.error_bound, nvcomps.error_bound)?,
            ..Settings::default()
        };
        settings.options(algorithm, keyword).map_err(option_error)
    }
}

/// A setting given as ferrocomp's argument `name` or through nvCOMP's options, not both.
fn either<T>(name: &str, own: Option<T>, nvcomps: Option<T>) -> PyResult<Option<T>> {
    match (own, nvcomps) {
        (Some(_), Some(_)) => Err(value_error(format!("{name} and nvCOMP's option for the same choice: give one"))),
        (own, nvcomps) => Ok(own.or(nvcomps)),
    }
}

/// What a `data_type`'s numbers are, and their width.
fn number_type(dtype: &DType) -> NumberType {
    let kind = match dtype.kind {
        'i' => NumberKind::Signed,
        'u' => NumberKind::Unsigned,
        'f' => NumberKind::Float,
        _ => NumberKind::Other,
    };
    NumberType { kind, width: dtype.size }
}

/// The keyword argument of a setting, as the messages say it.
fn keyword(setting: Setting) -> &'static str {
    match setting {
        Setting::Level => "algorithm_type",
        Setting::DataType => "data_type",
        Setting::Wrapper => "wrapper",
        Setting::Typesize => "typesize",
        Setting::Shuffle => "shuffle",
        Setting::Rles => "num_rles",
        Setting::Deltas => "num_deltas",
        Setting::Bitpack => "use_bp",
        Setting::SearchLayers => "search_layers",
        Setting::ErrorBound => "error_bound",
        // Not a keyword: Bitcomp's algorithm_type 1.
        Setting::Sparse => "sparse",
    }
}
