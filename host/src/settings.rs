//! Codec options as users name them (the command line's flags, the Python `Codec`'s keyword
//! arguments), made into [`Options`] and [`Config`] by one set of rules: the algorithms' names,
//! which settings each algorithm takes, their ranges and defaults, and the errors, worded with
//! each front end's names for the settings ([`Names`]).

use crate::buffer_codec::Config;
use crate::checksum::ChecksumPolicy;
use crate::codec::{
    Ans, AnsDataType, Bitcomp, Blosc, Cascaded, Deflate, ElementType, ErrorBound, GDeflate, Lz4, Options, Snappy, Zstd,
};
use crate::container::Bitstream;
use ferrocomp_format::blosc::Shuffle;
use ferrocomp_format::cascaded::MAX_LAYERS;
use ferrocomp_format::deflate::Wrapper;
use ferrocomp_format::{Algorithm, DataType};
use std::ops::RangeInclusive;

/// A setting, which each front end names its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// The level, nvCOMP's `algorithm_type` (Deflate, GDeflate, Zstd; Bitcomp's algorithm).
    Level,
    /// The element type.
    DataType,
    /// Deflate's wrapper: raw, zlib or gzip.
    Wrapper,
    /// Blosc's element size.
    Typesize,
    /// Blosc's shuffle.
    Shuffle,
    /// Cascaded's run-length layers.
    Rles,
    /// Cascaded's delta layers.
    Deltas,
    /// Cascaded's bit-packing.
    Bitpack,
    /// Whether Cascaded searches its layer counts per sub-block.
    SearchLayers,
    /// Bitcomp's sparse algorithm.
    Sparse,
    /// Bitcomp's error bound (lossy).
    ErrorBound,
}

/// A front end's name for each setting, as its messages say it (`"--rles"`, `"num_rles"`).
pub type Names = fn(Setting) -> &'static str;

/// What the numbers of a `data_type` are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumberKind {
    /// Signed integers.
    Signed,
    /// Unsigned integers.
    Unsigned,
    /// Floating-point numbers.
    Float,
    /// Anything else (booleans, complex numbers, opaque bytes).
    Other,
}

/// A `data_type` as a user gives it: what its numbers are, and their width in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumberType {
    /// What the numbers are.
    pub kind: NumberKind,
    /// Bytes per number.
    pub width: usize,
}

/// Settings a user gave, `None` for the algorithm's default. A setting given to an algorithm that
/// does not take it is refused, but for `data_type`, which Deflate, GDeflate and Zstd ignore.
#[derive(Clone, Copy, Debug, Default)]
pub struct Settings<'a> {
    /// Deflate's and GDeflate's level (0 to 5), Zstd's (1 to 3), Bitcomp's algorithm (0 or 1).
    pub level: Option<i64>,
    /// The element type: LZ4's and Snappy's match width, Blosc's default typesize, the numeric
    /// codecs' numbers.
    pub data_type: Option<NumberType>,
    /// Deflate's: `"raw"`, `"zlib"` or `"gzip"`, in any case.
    pub wrapper: Option<&'a str>,
    /// Blosc's element size, 1 to 255.
    pub typesize: Option<usize>,
    /// Blosc's, by numcodecs' names or numbers: `"noshuffle"`/`"0"`, `"shuffle"`/`"1"`,
    /// `"bitshuffle"`/`"2"`.
    pub shuffle: Option<&'a str>,
    /// Cascaded's run-length layers, at most 4.
    pub rles: Option<u8>,
    /// Cascaded's delta layers, at most 4.
    pub deltas: Option<u8>,
    /// Whether Cascaded bit-packs its streams.
    pub bitpack: Option<bool>,
    /// Whether Cascaded searches its layer counts per sub-block (else applies them exactly).
    pub search_layers: Option<bool>,
    /// Whether Bitcomp uses its sparse algorithm.
    pub sparse: Option<bool>,
    /// Bitcomp's error bound: lossy, each float within it of its value.
    pub error_bound: Option<f32>,
    /// Whether bytes are signed where no `data_type` says (Bitcomp's elements): the command
    /// line's `char`, where nvCOMP's default is unsigned.
    pub signed_bytes: bool,
}

/// A setting refused, in words for the user.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct OptionError(String);

type Result<T> = std::result::Result<T, OptionError>;

/// The algorithms by nvCOMP's names (matched in any case): `zlib` and `gzip` are Deflate in that
/// wrapper, ahead of `Deflate` so that [`algorithm_name`] finds them first.
const ALGORITHMS: [(&str, Algorithm, Option<Wrapper>); 11] = [
    ("LZ4", Algorithm::Lz4, None),
    ("Snappy", Algorithm::Snappy, None),
    ("zlib", Algorithm::Deflate, Some(Wrapper::Zlib)),
    ("gzip", Algorithm::Deflate, Some(Wrapper::Gzip)),
    ("Deflate", Algorithm::Deflate, None),
    ("GDeflate", Algorithm::GDeflate, None),
    ("Blosc", Algorithm::Blosc, None),
    ("Zstd", Algorithm::Zstd, None),
    ("Cascaded", Algorithm::Cascaded, None),
    ("Bitcomp", Algorithm::Bitcomp, None),
    ("ANS", Algorithm::Ans, None),
];

/// The settings of each group, and the algorithms that take them.
const TAKEN_BY: [(&[Setting], &[Algorithm]); 6] = [
    (&[Setting::Level], &[Algorithm::Deflate, Algorithm::GDeflate, Algorithm::Zstd, Algorithm::Bitcomp]),
    (&[Setting::Wrapper], &[Algorithm::Deflate]),
    (&[Setting::Typesize, Setting::Shuffle], &[Algorithm::Blosc]),
    (&[Setting::Rles, Setting::Deltas, Setting::Bitpack, Setting::SearchLayers], &[Algorithm::Cascaded]),
    (&[Setting::Sparse], &[Algorithm::Bitcomp]),
    (&[Setting::ErrorBound], &[Algorithm::Bitcomp]),
];

/// nvCOMP's name of the algorithm of `options` (`zlib` and `gzip` for Deflate in those wrappers).
pub fn algorithm_name(options: &Options) -> &'static str {
    let wrapper = match options {
        Options::Deflate(deflate) => Some(deflate.wrapper),
        _ => None,
    };
    let named = ALGORITHMS.iter().find(|(_, algorithm, implied)| {
        *algorithm == options.algorithm() && implied.is_none_or(|implied| Some(implied) == wrapper)
    });
    named.expect("every algorithm has a name").0
}

/// nvCOMP's name of `algorithm`.
fn name_of(algorithm: Algorithm) -> &'static str {
    ALGORITHMS.iter().find(|(_, named, implied)| *named == algorithm && implied.is_none()).expect("named").0
}

/// The algorithm named `name`, and the wrapper the name implies.
fn algorithm(name: &str) -> Result<(Algorithm, Option<Wrapper>)> {
    let found = ALGORITHMS.iter().find(|(known, ..)| known.eq_ignore_ascii_case(name));
    let known = || listed(ALGORITHMS.iter().map(|(known, ..)| *known));
    found
        .map(|&(_, algorithm, wrapper)| (algorithm, wrapper))
        .ok_or_else(|| OptionError(format!("unknown algorithm {name:?}: ferrocomp has {}", known())))
}

/// Chunking, framing and checksums: a policy that requires checksums needs a bitstream that
/// stores them.
pub fn config(chunk_size: usize, bitstream: Bitstream, checksum: ChecksumPolicy) -> Result<Config> {
    if bitstream != Bitstream::Native && checksum.requires() {
        return Err(OptionError(
            "COMPUTE_AND_VERIFY requires checksums, which only the native bitstream (NVCOMP_NATIVE) stores".into(),
        ));
    }
    Ok(Config { chunk_size, bitstream, checksum })
}

impl Settings<'_> {
    /// The options of the algorithm named `name` (as nvCOMP names it, in any case) with these
    /// settings; errors name the settings as `names` does.
    pub fn options(&self, name: &str, names: Names) -> Result<Options> {
        let (algorithm, implied_wrapper) = algorithm(name)?;
        self.check_taken(algorithm, name, names)?;
        let deflate_level = || self.level(Deflate::LEVELS, Deflate::default().level, names);
        Ok(match algorithm {
            Algorithm::Lz4 => Options::Lz4(Lz4 { data_type: self.data_type(algorithm, names)? }),
            Algorithm::Snappy => Options::Snappy(Snappy { data_type: self.data_type(algorithm, names)? }),
            Algorithm::Deflate => Options::Deflate(Deflate {
                level: deflate_level()?,
                wrapper: self.wrapper(implied_wrapper, name, names)?,
            }),
            Algorithm::GDeflate => Options::GDeflate(GDeflate { level: deflate_level()? }),
            Algorithm::Blosc => Options::Blosc(self.blosc(names)?),
            Algorithm::Zstd => Options::Zstd(Zstd { level: self.level(Zstd::LEVELS, Zstd::default().level, names)? }),
            Algorithm::Cascaded => Options::Cascaded(self.cascaded(names)?),
            Algorithm::Bitcomp => Options::Bitcomp(self.bitcomp(names)?),
            Algorithm::Ans => Options::Ans(Ans { data_type: self.ans_data_type(names)? }),
        })
    }

    /// Whether `setting` was given.
    fn given(&self, setting: Setting) -> bool {
        match setting {
            Setting::Level => self.level.is_some(),
            Setting::DataType => self.data_type.is_some(),
            Setting::Wrapper => self.wrapper.is_some(),
            Setting::Typesize => self.typesize.is_some(),
            Setting::Shuffle => self.shuffle.is_some(),
            Setting::Rles => self.rles.is_some(),
            Setting::Deltas => self.deltas.is_some(),
            Setting::Bitpack => self.bitpack.is_some(),
            Setting::SearchLayers => self.search_layers.is_some(),
            Setting::Sparse => self.sparse.is_some(),
            Setting::ErrorBound => self.error_bound.is_some(),
        }
    }

    /// Fails for a setting given to an algorithm that does not take it (named `name`).
    fn check_taken(&self, algorithm: Algorithm, name: &str, names: Names) -> Result<()> {
        let refused = TAKEN_BY.iter().find(|(settings, takers)| {
            !takers.contains(&algorithm) && settings.iter().any(|&setting| self.given(setting))
        });
        let Some((settings, takers)) = refused else { return Ok(()) };
        let verb = if settings.len() == 1 { "applies" } else { "apply" };
        let (settings, takers) =
            (listed(settings.iter().map(|&s| names(s))), listed(takers.iter().map(|&a| name_of(a))));
        Err(OptionError(format!("{settings} {verb} to {takers}, not {name}")))
    }

    /// The level in `levels`, `default` if none was given.
    fn level(&self, levels: RangeInclusive<u8>, default: u8, names: Names) -> Result<u8> {
        match self.level {
            None => Ok(default),
            Some(level) if u8::try_from(level).is_ok_and(|level| levels.contains(&level)) => Ok(level as u8),
            Some(level) => {
                Err(OptionError(format!("{} {level} is outside {levels:?} for this algorithm", names(Setting::Level))))
            }
        }
    }

    /// Which of the widths 1, 2, 4 and 8 bytes the `data_type` has (`None` if none was given).
    fn width_index(&self, algorithm: Algorithm, names: Names) -> Result<Option<usize>> {
        let Some(NumberType { width, .. }) = self.data_type else { return Ok(None) };
        match width {
            1 | 2 | 4 | 8 => Ok(Some(width.trailing_zeros() as usize)),
            _ => Err(OptionError(format!(
                "{} of {width} bytes: {} elements take 1, 2, 4 or 8 bytes",
                names(Setting::DataType),
                name_of(algorithm)
            ))),
        }
    }

    /// LZ4's and Snappy's data type: the width matches keep to.
    fn data_type(&self, algorithm: Algorithm, names: Names) -> Result<DataType> {
        let widths = [DataType::Char, DataType::Short, DataType::Int, DataType::LongLong];
        Ok(self.width_index(algorithm, names)?.map_or(DataType::default(), |index| widths[index]))
    }

    /// The numeric codecs' element type (floats as the unsigned integers of their width),
    /// `default` if no `data_type` was given.
    fn element(&self, default: ElementType, algorithm: Algorithm, names: Names) -> Result<ElementType> {
        let Some(index) = self.width_index(algorithm, names)? else { return Ok(default) };
        let signed = self.data_type.is_some_and(|given| given.kind == NumberKind::Signed);
        Ok(ElementType::ALL[2 * index + usize::from(!signed)])
    }

    /// Deflate's wrapper: the one given or the name implies, raw by default.
    fn wrapper(&self, implied: Option<Wrapper>, name: &str, names: Names) -> Result<Wrapper> {
        let Some(given) = self.wrapper else { return Ok(implied.unwrap_or(Wrapper::Raw)) };
        match (given.to_ascii_lowercase().as_str(), implied) {
            ("raw", None) => Ok(Wrapper::Raw),
            ("zlib", None | Some(Wrapper::Zlib)) => Ok(Wrapper::Zlib),
            ("gzip", None | Some(Wrapper::Gzip)) => Ok(Wrapper::Gzip),
            (other, _) => {
                Err(OptionError(format!("{} {other:?} does not fit algorithm {name:?}", names(Setting::Wrapper))))
            }
        }
    }

    /// Blosc's typesize (the one given, else the `data_type`'s width, else 1) and shuffle.
    fn blosc(&self, names: Names) -> Result<Blosc> {
        let defaults = Blosc::default();
        let size = self.typesize.or(self.data_type.map(|given| given.width)).unwrap_or(defaults.typesize.into());
        let typesize = u8::try_from(size)
            .ok()
            .filter(|&size| size > 0)
            .ok_or_else(|| OptionError(format!("Blosc {} {size} is outside 1..=255", names(Setting::Typesize))))?;
        let shuffle = match self.shuffle {
            None => defaults.shuffle,
            Some("0" | "noshuffle") => Shuffle::None,
            Some("1" | "shuffle") => Shuffle::Byte,
            Some("2" | "bitshuffle") => Shuffle::Bit,
            Some(other) => {
                return Err(OptionError(format!(
                    "{} {other}: 0/\"noshuffle\", 1/\"shuffle\" or 2/\"bitshuffle\"",
                    names(Setting::Shuffle)
                )));
            }
        };
        Ok(Blosc { typesize, shuffle })
    }

    /// Cascaded's element type and layers.
    fn cascaded(&self, names: Names) -> Result<Cascaded> {
        let defaults = Cascaded::default();
        let options = Cascaded {
            element: self.element(defaults.element, Algorithm::Cascaded, names)?,
            rles: self.rles.unwrap_or(defaults.rles),
            deltas: self.deltas.unwrap_or(defaults.deltas),
            bitpack: self.bitpack.unwrap_or(defaults.bitpack),
            auto: self.search_layers.unwrap_or(defaults.auto),
        };
        if !options.valid() {
            return Err(OptionError(format!(
                "{} {} and {} {}: each may be at most {MAX_LAYERS}",
                names(Setting::Rles),
                options.rles,
                names(Setting::Deltas),
                options.deltas
            )));
        }
        Ok(options)
    }

    /// Bitcomp's element type (by default bytes, or float32 for a lossy one), algorithm (the
    /// level 0 or 1, or `sparse`) and error bound.
    fn bitcomp(&self, names: Names) -> Result<Bitcomp> {
        let defaults = Bitcomp::default();
        let default_element = match (self.error_bound, self.signed_bytes) {
            (Some(_), _) => ElementType::U32,
            (None, true) => ElementType::I8,
            (None, false) => defaults.element,
        };
        let element = self.element(default_element, Algorithm::Bitcomp, names)?;
        let (level, sparse) = (names(Setting::Level), names(Setting::Sparse));
        let sparse = match (self.level, self.sparse) {
            (None, given) => given.unwrap_or(defaults.sparse),
            (Some(0), None) => false,
            (Some(1), None) => true,
            (Some(_), Some(_)) => return Err(OptionError(format!("give {level} or {sparse}, not both"))),
            (Some(other), None) => {
                return Err(OptionError(format!("Bitcomp {level} {other}: 0 (default) or 1 (sparse)")));
            }
        };
        let bound_name = names(Setting::ErrorBound);
        let error_bound = self
            .error_bound
            .map(|bound| {
                ErrorBound::new(bound)
                    .ok_or_else(|| OptionError(format!("{bound_name} {bound}: the bound must be finite and above 0")))
            })
            .transpose()?;
        let options = Bitcomp { element, sparse, error_bound };
        if !options.valid() {
            return Err(OptionError(format!(
                "{bound_name} needs a 4- or 8-byte {} (float32 or float64), not {}-byte",
                names(Setting::DataType),
                element.width()
            )));
        }
        Ok(options)
    }

    /// ANS's data type: bytes (the default; any 1-byte type but floats), float8 (e4m3), float16 or
    /// float32.
    fn ans_data_type(&self, names: Names) -> Result<AnsDataType> {
        match self.data_type {
            Some(NumberType { kind: NumberKind::Float, width: 1 }) => Ok(AnsDataType::Float8),
            None | Some(NumberType { width: 1, .. }) => Ok(AnsDataType::Bytes),
            Some(NumberType { kind: NumberKind::Float, width: 2 }) => Ok(AnsDataType::Float16),
            Some(NumberType { kind: NumberKind::Float, width: 4 }) => Ok(AnsDataType::Float32),
            Some(NumberType { kind, width }) => {
                let numbers = match kind {
                    NumberKind::Signed => "signed integers",
                    NumberKind::Unsigned => "unsigned integers",
                    NumberKind::Float => "floats",
                    NumberKind::Other => "values",
                };
                Err(OptionError(format!(
                    "{} of {width}-byte {numbers}: ANS codes bytes, float8, float16 or float32",
                    names(Setting::DataType)
                )))
            }
        }
    }
}

/// `items` as a sentence lists them: "a", "a and b", "a, b and c".
fn listed<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.into_iter().collect();
    match items.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every setting named alike, for messages the tests do not read.
    fn unnamed(_: Setting) -> &'static str {
        "setting"
    }

    #[test]
    fn every_algorithm_name_reads_back() {
        for (name, ..) in ALGORITHMS {
            for spelled in [name.to_string(), name.to_lowercase()] {
                let options = Settings::default().options(&spelled, unnamed).unwrap();
                assert_eq!(algorithm_name(&options), name);
            }
        }
    }

    #[test]
    fn a_setting_of_another_algorithm_is_refused() {
        let error = Settings { rles: Some(1), ..Settings::default() }.options("lz4", unnamed).unwrap_err();
        assert_eq!(error.to_string(), "setting, setting, setting and setting apply to Cascaded, not lz4");
    }

    #[test]
    fn signed_bytes_change_only_bitcomps_default_element() {
        let signed = Settings { signed_bytes: true, ..Settings::default() };
        let Options::Bitcomp(bitcomp) = signed.options("bitcomp", unnamed).unwrap() else { unreachable!() };
        assert_eq!(bitcomp.element, ElementType::I8);
        let lossy = Settings { error_bound: Some(0.5), ..signed };
        let Options::Bitcomp(bitcomp) = lossy.options("bitcomp", unnamed).unwrap() else { unreachable!() };
        assert_eq!(bitcomp.element, ElementType::U32);
    }
}
