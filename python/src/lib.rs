//! `ferrocomp._ferrocomp`: nvCOMP's Python API (`nvidia.nvcomp`) on the ferrocomp crate.
//! Arrays cross without copies (CUDA array interface, array interface, buffer protocol, DLPack);
//! the codecs are ferrocomp's `BufferCodec` (native bitstream) and `ChunkListCodec` (one block per
//! array, a list in one batched call); without a GPU the same calls run on the CPU.

mod alloc;
mod array;
mod buffer;
mod call;
mod codec;
mod device;
mod dlpack;
mod dtype;
mod enums;
mod errors;
mod keep;
mod read;

use pyo3::prelude::*;

#[pymodule]
fn _ferrocomp(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    device::on_load(alloc::apply);
    module.add_class::<array::Array>()?;
    module.add_class::<array::batch::BatchArray>()?;
    module.add_class::<codec::Codec>()?;
    module.add_class::<codec::config::CompressConfig>()?;
    module.add_class::<codec::config::DecompressConfig>()?;
    module.add_class::<call::Pending>()?;
    module.add_class::<device::CudaStream>()?;
    module.add_class::<enums::BitstreamKind>()?;
    module.add_class::<enums::PyChecksumPolicy>()?;
    module.add_class::<enums::ArrayBufferKind>()?;
    module.add_class::<enums::PyStatus>()?;
    module.add_class::<enums::ExecutionPolicy>()?;
    module.add_class::<enums::DecompressBackend>()?;
    module.add_class::<enums::BitshuffleMode>()?;
    module.add_class::<enums::BitcompMode>()?;
    module.add_class::<enums::CascadedMode>()?;
    module.add_class::<enums::CascadedTerminalCodec>()?;
    module.add_class::<enums::CascadedFineGrainedEncoding>()?;
    module.add_class::<enums::CascadedCoarseGrainedEncoding>()?;
    module.add_function(wrap_pyfunction!(array::wrap::as_array, module)?)?;
    module.add_function(wrap_pyfunction!(array::wrap::as_arrays, module)?)?;
    module.add_function(wrap_pyfunction!(array::wrap::from_dlpack, module)?)?;
    module.add_function(wrap_pyfunction!(alloc::set_device_allocator, module)?)?;
    module.add_function(wrap_pyfunction!(alloc::set_pinned_allocator, module)?)?;
    module.add_function(wrap_pyfunction!(alloc::set_host_allocator, module)?)?;
    module.add_function(wrap_pyfunction!(device::device_count, module)?)?;
    module.add_function(wrap_pyfunction!(read::read_ranges, module)?)?;
    module.add_function(wrap_pyfunction!(read::decode_ranges, module)?)?;
    module.add_function(wrap_pyfunction!(read::scatter, module)?)?;
    module.add_function(wrap_pyfunction!(read::rearrange_slabs, module)?)?;
    Ok(())
}
