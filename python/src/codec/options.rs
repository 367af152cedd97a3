//! `Codec`'s keyword arguments for the algorithm's options (nvCOMP's, and ferrocomp's own for
//! Blosc, Cascaded's layer search and Bitcomp's error bound), made into [`Options`] by the rules
//! the command line shares ([`Settings`]).

use crate::dtype::DType;
use crate::errors::{option_error, value_error};
use ferrocomp::Options;
use ferrocomp::settings::{NumberKind, NumberType, Setting, Settings};
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
        let settings = Settings {
            level: self.algorithm_type,
            data_type,
            wrapper: self.wrapper,
            typesize: self.typesize,
            shuffle: shuffle.as_deref(),
            rles: self.num_rles,
            deltas: self.num_deltas,
            bitpack,
            search_layers: self.search_layers,
            error_bound: self.error_bound,
            ..Settings::default()
        };
        settings.options(algorithm, keyword).map_err(option_error)
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
