//! nvCOMP 6's reusable configurations. A `CompressConfig` holds the uncompressed sizes of the
//! arrays a codec encodes; a `DecompressConfig` the sizes the arrays it decodes come to, so that
//! `decode` allocates its outputs from them instead of asking each stream (for a `RAW` or
//! `WITH_UNCOMPRESSED_SIZE` batch on the GPU, the question that waits for the device).

use crate::array::Array;
use crate::errors::value_error;
use pyo3::prelude::*;

/// The uncompressed sizes a codec's `encode` takes (nvCOMP's `CompressConfig`), from
/// `Codec.compression_config`. `encode(..., compression_config=...)` checks its arrays against
/// them; ferrocomp's encode has no configure step to skip.
#[pyclass(module = "ferrocomp", frozen)]
pub struct CompressConfig {
    pub sizes: Vec<usize>,
}

/// The sizes a codec's `decode` produces (nvCOMP's `DecompressConfig`), from
/// `Codec.decompression_config`: reusable for any batch of the same shape. `decode(...,
/// decompression_config=...)` allocates each output with its size, without reading a stream
/// first; a chunk that decodes to more fails as with a too small `out=` array.
#[pyclass(module = "ferrocomp", frozen)]
pub struct DecompressConfig {
    pub sizes: Vec<usize>,
}

/// Sizes from an int or a list of ints, each above 0 and at least one.
pub fn sizes_arg(arg: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let sizes = match arg.extract::<usize>() {
        Ok(size) => vec![size],
        Err(_) => arg.extract::<Vec<usize>>().map_err(|_| value_error("give a size in bytes, or a list of them"))?,
    };
    if sizes.is_empty() {
        return Err(value_error("a batch's configuration needs at least one size"));
    }
    if let Some(i) = sizes.iter().position(|&size| size == 0) {
        return Err(value_error(format!("size {i} is 0; each must be above 0")));
    }
    Ok(sizes)
}

/// Fails unless a configuration of `sizes` is for `count` arrays.
pub fn require_count(sizes: &[usize], count: usize, what: &str) -> PyResult<()> {
    if sizes.len() == count {
        return Ok(());
    }
    Err(value_error(format!("{what} is for {} arrays, the call has {count}", sizes.len())))
}

/// Fails unless `inputs` have the sizes of a `CompressConfig`.
pub fn require_sizes(sizes: &[usize], inputs: &[Array]) -> PyResult<()> {
    require_count(sizes, inputs.len(), "compression_config")?;
    match inputs.iter().zip(sizes).position(|(input, &size)| input.nbytes() != size) {
        None => Ok(()),
        Some(i) => Err(value_error(format!(
            "input {i} has {} bytes; compression_config was built for {}",
            inputs[i].nbytes(),
            sizes[i]
        ))),
    }
}

/// A configuration's repr: its class and sizes, summed where there are many.
fn describe(class: &str, sizes: &[usize]) -> String {
    match sizes {
        [size] => format!("{class}({size} bytes)"),
        _ => format!("{class}({} arrays, {} bytes)", sizes.len(), sizes.iter().sum::<usize>()),
    }
}

#[pymethods]
impl CompressConfig {
    /// Bytes of each array encoded.
    #[getter]
    fn uncompressed_sizes(&self) -> Vec<usize> {
        self.sizes.clone()
    }

    fn __repr__(&self) -> String {
        describe("CompressConfig", &self.sizes)
    }
}

#[pymethods]
impl DecompressConfig {
    /// Bytes each decoded array comes to.
    #[getter]
    fn uncompressed_sizes(&self) -> Vec<usize> {
        self.sizes.clone()
    }

    fn __repr__(&self) -> String {
        describe("DecompressConfig", &self.sizes)
    }
}
