//! The arguments of every batched kernel, as one `#[repr(C)]` struct: the host fills it, the
//! kernels read it, and neither side can get the order of a codec's arguments wrong.

/// One batched call: device addresses of the per-chunk arrays, the scratch, and the codec's
/// options. An address of 0 means "none" where a field says so.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchArgs {
    /// Device array of the `count` input chunks' addresses (`u64`).
    pub inputs: u64,
    /// Device array of the input chunks' byte counts (`usize`).
    pub input_sizes: u64,
    /// Device array of the output chunks' addresses (0 for the size kernels).
    pub outputs: u64,
    /// Device array of the output chunks' capacities (`usize`); 0 when every output has
    /// `output_capacity` bytes.
    pub output_capacities: u64,
    /// Room of every output when `output_capacities` is 0.
    pub output_capacity: u64,
    /// Device array receiving each chunk's result size (`usize`; 0 where it failed).
    pub result_sizes: u64,
    /// Device array receiving each chunk's [`crate::Status`] code (`u32`), or 0.
    pub statuses: u64,
    /// Device `u32` lowered to the index of the first failing chunk, or 0.
    pub first_failure: u64,
    /// Device scratch, or 0.
    pub scratch: u64,
    /// Bytes of scratch.
    pub scratch_len: u64,
    /// Chunks in the batch.
    pub count: u64,
    /// The codec's options, packed by its host module.
    pub options: u64,
}
