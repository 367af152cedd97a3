//! Element types as the array interfaces spell them (`"<i4"`, `"|u1"`), and their translations
//! to and from the buffer protocol's formats and DLPack's type codes.

use crate::errors::value_error;
use pyo3::prelude::*;

/// DLPack's type codes.
const DL_INT: u8 = 0;
const DL_UINT: u8 = 1;
const DL_FLOAT: u8 = 2;
const DL_BFLOAT: u8 = 4;
const DL_COMPLEX: u8 = 5;
const DL_BOOL: u8 = 6;

/// An element type: kind letter (`i`, `u`, `f`, `c`, `b`, `V`, ...), width and byte order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DType {
    pub kind: char,
    pub size: usize,
    pub big_endian: bool,
}

impl DType {
    /// Bytes (`"|u1"`).
    pub fn bytes() -> Self {
        Self { kind: 'u', size: 1, big_endian: false }
    }

    /// nvCOMP's `char` (`"|i1"`): the type of its compressed arrays.
    pub fn chars() -> Self {
        Self { kind: 'i', size: 1, big_endian: false }
    }

    /// The type a typestring (`"<f4"`) names.
    pub fn parse(typestr: &str) -> PyResult<Self> {
        let bad = || value_error(format!("{typestr:?} is not an array-protocol type string such as \"<i4\""));
        let mut chars = typestr.chars();
        let order = chars.next().ok_or_else(bad)?;
        let kind = chars.next().filter(|k| k.is_ascii_alphabetic()).ok_or_else(bad)?;
        let size: usize = chars.as_str().parse().map_err(|_| bad())?;
        if !matches!(order, '<' | '>' | '|' | '=') || size == 0 {
            return Err(bad());
        }
        Ok(Self { kind, size, big_endian: order == '>' && size > 1 })
    }

    /// The type a `data_type` argument names: a typestring, an 8-bit float's name
    /// (`float8_e4m3`, or ml_dtypes' `float8_e4m3fn`), or anything `numpy.dtype` takes.
    pub fn from_arg(arg: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(typestr) = arg.extract::<String>() {
            if matches!(typestr.as_str(), "float8_e4m3" | "float8_e4m3fn") {
                return Ok(Self { kind: 'f', size: 1, big_endian: false });
            }
            if let Ok(dtype) = Self::parse(&typestr) {
                return Ok(dtype);
            }
        }
        let numpy = arg.py().import("numpy")?;
        let typestr: String = numpy.call_method1("dtype", (arg,))?.getattr("str")?.extract()?;
        Self::parse(&typestr)
    }

    /// The type a buffer-protocol `format` with items of `itemsize` bytes describes.
    pub fn from_buffer_format(format: &str, itemsize: usize) -> Self {
        let big_endian = format.starts_with(['>', '!']) && itemsize > 1;
        let code = format.trim_start_matches(['@', '=', '<', '>', '!']);
        let kind = match code {
            "?" => 'b',
            "b" | "h" | "i" | "l" | "q" | "n" => 'i',
            "B" | "H" | "I" | "L" | "Q" | "N" => 'u',
            "e" | "f" | "d" => 'f',
            "Zf" | "Zd" => 'c',
            _ => 'V',
        };
        Self { kind, size: itemsize.max(1), big_endian }
    }

    /// The type of a DLPack tensor.
    pub fn from_dlpack(code: u8, bits: u8, lanes: u16) -> PyResult<Self> {
        if lanes != 1 || bits == 0 || !bits.is_multiple_of(8) {
            return Err(value_error(format!("DLPack type with {bits} bits in {lanes} lanes is not supported")));
        }
        let kind = match code {
            DL_INT => 'i',
            DL_UINT => 'u',
            DL_FLOAT => 'f',
            DL_COMPLEX => 'c',
            DL_BOOL => 'b',
            _ => 'V',
        };
        Ok(Self { kind, size: bits as usize / 8, big_endian: false })
    }

    /// DLPack's code, bits and lanes for this type.
    pub fn to_dlpack(&self) -> PyResult<(u8, u8, u16)> {
        if self.big_endian {
            return Err(value_error("DLPack has no big-endian types"));
        }
        let code = match (self.kind, self.size) {
            ('i', _) => DL_INT,
            ('u', _) => DL_UINT,
            ('f', _) => DL_FLOAT,
            ('c', _) => DL_COMPLEX,
            ('b', 1) => DL_BOOL,
            ('V', 2) => DL_BFLOAT,
            _ => return Err(value_error(format!("type {} has no DLPack equivalent", self.typestr()))),
        };
        Ok((code, (self.size * 8) as u8, 1))
    }

    /// The typestring (`"<i4"`; `"|"` for one-byte types).
    pub fn typestr(&self) -> String {
        let order = if self.size == 1 {
            '|'
        } else if self.big_endian {
            '>'
        } else {
            '<'
        };
        format!("{order}{}{}", self.kind, self.size)
    }
}

/// The element type of the arrays a call allocates and returns, and whether the caller asked
/// for it: a size it does not divide is then an error. A codec's own type (nvCOMP's default for
/// decoded arrays) gives such a size as bytes instead, as nvCOMP's does not (it drops the tail).
#[derive(Clone, Debug)]
pub struct ReturnType {
    pub dtype: DType,
    pub asked: bool,
}

impl ReturnType {
    /// Bytes, as a default.
    pub fn bytes() -> Self {
        Self { dtype: DType::bytes(), asked: false }
    }

    /// The type of an array of `size` bytes.
    pub fn of(&self, size: usize) -> PyResult<DType> {
        match (size.is_multiple_of(self.dtype.size), self.asked) {
            (true, _) => Ok(self.dtype.clone()),
            (false, false) => Ok(DType::bytes()),
            (false, true) => Err(value_error(format!(
                "the data is {size} bytes, not a whole number of {} elements",
                self.dtype.typestr()
            ))),
        }
    }
}
