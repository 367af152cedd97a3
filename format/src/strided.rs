//! Strided copies: a batch of N-dimensional boxes moved from one buffer to another in one pass
//! (decoded chunks scattered to their places in an array). The host plans them ([`Plan`]) and
//! checks their bounds; the GPU kernel and the CPU both run [`StridedCopy`]s of `unit`-byte
//! units, the innermost dimension contiguous.

/// Most dimensions of one copy (after merging the contiguous ones).
pub const MAX_DIMS: usize = 8;
/// Widest unit a copy moves at a time, in bytes.
pub const MAX_UNIT: usize = 16;

/// One box: `shape` units (outermost first; the last dimension contiguous, `unit` bytes apart)
/// from byte `src` of the source to byte `dst` of the destination, the outer dimensions
/// `src_strides`/`dst_strides` bytes apart. Unused leading dimensions have extent 1.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StridedCopy {
    /// Byte offset of the box in the source.
    pub src: u64,
    /// Byte offset of the box in the destination.
    pub dst: u64,
    /// Extent of each dimension, in units for the last.
    pub shape: [u64; MAX_DIMS],
    /// Bytes between neighbours along each dimension in the source (the last is `unit`).
    pub src_strides: [u64; MAX_DIMS],
    /// Bytes between neighbours along each dimension in the destination (the last is `unit`).
    pub dst_strides: [u64; MAX_DIMS],
}

impl StridedCopy {
    /// Units in the box.
    pub fn units(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Byte offsets (source, destination) of unit `index`, in C order over `shape`.
    #[inline(always)]
    pub fn offsets_of(&self, mut index: u64) -> (u64, u64) {
        let (mut src, mut dst) = (self.src, self.dst);
        let mut dim = MAX_DIMS;
        while dim > 0 && index > 0 {
            dim -= 1;
            let extent = self.shape[dim];
            let coordinate = index % extent;
            index /= extent;
            src += coordinate * self.src_strides[dim];
            dst += coordinate * self.dst_strides[dim];
        }
        (src, dst)
    }

    /// One past the last byte the box touches in the source and in the destination (0 for an empty box).
    pub fn extents(&self, unit: u64) -> (u64, u64) {
        if self.units() == 0 {
            return (0, 0);
        }
        let last = |strides: &[u64; MAX_DIMS]| self.shape.iter().zip(strides).map(|(&n, &s)| (n - 1) * s).sum::<u64>();
        (self.src + last(&self.src_strides) + unit, self.dst + last(&self.dst_strides) + unit)
    }
}

/// Why a box cannot be planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// More dimensions than [`MAX_DIMS`] remain after merging contiguous ones.
    TooManyDims,
    /// Shape and strides differ in length, or the element size is 0.
    Mismatched,
    /// The box reaches past the end of the source or the destination.
    OutOfBounds,
}

/// Turns boxes given in elements into [`StridedCopy`]s of the widest unit all of them allow.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Bytes per element.
    pub itemsize: u64,
    /// Bytes of the source.
    pub src_len: u64,
    /// Bytes of the destination.
    pub dst_len: u64,
}

impl Plan {
    /// The box of `shape` elements at byte `src` (strides `src_strides`, in bytes) going to byte
    /// `dst` (strides `dst_strides`), with dimensions of extent 1 dropped, contiguous ones merged
    /// and the elements as bytes of a last, contiguous dimension (`unit` 1; see [`Plan::widen`]).
    pub fn copy(
        &self,
        src: u64,
        dst: u64,
        shape: &[u64],
        src_strides: &[u64],
        dst_strides: &[u64],
    ) -> Result<StridedCopy, PlanError> {
        if shape.len() != src_strides.len() || shape.len() != dst_strides.len() || self.itemsize == 0 {
            return Err(PlanError::Mismatched);
        }
        // Innermost first: (extent, source stride, destination stride), in bytes.
        let mut dims = [(self.itemsize, 1, 1); MAX_DIMS + 1];
        let mut count = 1;
        let empty = shape.contains(&0);
        for i in (0..shape.len()).rev() {
            let (n, s, d) = (shape[i], src_strides[i], dst_strides[i]);
            if n == 1 {
                continue;
            }
            let (inner_n, inner_s, inner_d) = dims[count - 1];
            if s == inner_n * inner_s && d == inner_n * inner_d {
                dims[count - 1] = (inner_n * n, inner_s, inner_d);
            } else if count == MAX_DIMS {
                return Err(PlanError::TooManyDims);
            } else {
                dims[count] = (n, s, d);
                count += 1;
            }
        }
        let mut copy = StridedCopy { src, dst, shape: [1; MAX_DIMS], ..StridedCopy::default() };
        for (j, &(n, s, d)) in dims[..count].iter().enumerate() {
            let at = MAX_DIMS - 1 - j;
            copy.shape[at] = if empty { 0 } else { n };
            copy.src_strides[at] = s;
            copy.dst_strides[at] = d;
        }
        let (src_end, dst_end) = copy.extents(1);
        if src_end > self.src_len || dst_end > self.dst_len {
            return Err(PlanError::OutOfBounds);
        }
        Ok(copy)
    }

    /// The widest unit (a power of two up to [`MAX_UNIT`]) that divides every box's contiguous run,
    /// offsets (plus the buffers' addresses) and outer strides; each box is rescaled to it.
    pub fn widen(copies: &mut [StridedCopy], src_address: u64, dst_address: u64) -> u64 {
        let mut bits = src_address | dst_address | MAX_UNIT as u64;
        for copy in copies.iter().filter(|copy| copy.units() > 0) {
            bits |= (copy.src + src_address) | (copy.dst + dst_address) | copy.shape[MAX_DIMS - 1];
            for dim in 0..MAX_DIMS - 1 {
                if copy.shape[dim] > 1 {
                    bits |= copy.src_strides[dim] | copy.dst_strides[dim];
                }
            }
        }
        let unit = 1 << bits.trailing_zeros();
        for copy in copies.iter_mut() {
            copy.shape[MAX_DIMS - 1] /= unit;
            copy.src_strides[MAX_DIMS - 1] = unit;
            copy.dst_strides[MAX_DIMS - 1] = unit;
        }
        unit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: Plan = Plan { itemsize: 4, src_len: 1 << 20, dst_len: 1 << 20 };

    #[test]
    fn contiguous_rows_merge_into_one_run() {
        // A 4x8 chunk of float32 into a 16-wide array: 4 runs of 32 bytes.
        let copy = PLAN.copy(0, 64, &[4, 8], &[32, 4], &[64, 4]).unwrap();
        assert_eq!(copy.shape[MAX_DIMS - 2..], [4, 32]);
        assert_eq!(copy.dst_strides[MAX_DIMS - 2], 64);
        // A chunk that spans whole rows is one run.
        let whole = PLAN.copy(0, 0, &[4, 16], &[64, 4], &[64, 4]).unwrap();
        assert_eq!(whole.shape, [1, 1, 1, 1, 1, 1, 1, 256]);
    }

    #[test]
    fn widen_picks_the_unit_every_box_allows() {
        let mut copies = [PLAN.copy(0, 64, &[4, 8], &[32, 4], &[64, 4]).unwrap()];
        assert_eq!(Plan::widen(&mut copies, 0, 256), 16);
        assert_eq!(copies[0].shape[MAX_DIMS - 1], 2);
        assert_eq!(copies[0].offsets_of(3), (48, 64 + 64 + 16));
        let mut odd = [PLAN.copy(4, 64, &[4, 8], &[32, 4], &[64, 4]).unwrap()];
        assert_eq!(Plan::widen(&mut odd, 0, 0), 4);
    }

    #[test]
    fn strided_elements_keep_their_stride() {
        // Every other element of a row (a step of 2).
        let copy = PLAN.copy(0, 0, &[3], &[8], &[4]).unwrap();
        assert_eq!(copy.shape[MAX_DIMS - 2..], [3, 4]);
        assert_eq!(copy.offsets_of(5), (8 + 1, 4 + 1));
    }

    #[test]
    fn boxes_past_either_buffer_are_refused() {
        let small = Plan { itemsize: 4, src_len: 128, dst_len: 1 << 20 };
        assert!(small.copy(0, 0, &[4, 8], &[32, 4], &[64, 4]).is_ok());
        assert_eq!(small.copy(4, 0, &[4, 8], &[32, 4], &[64, 4]), Err(PlanError::OutOfBounds));
        assert_eq!(PLAN.copy(0, 0, &[2; 10], &[1; 10], &[1; 9]), Err(PlanError::Mismatched));
        let empty = PLAN.copy(1 << 30, 0, &[0, 8], &[32, 4], &[64, 4]).unwrap();
        assert_eq!(empty.units(), 0);
    }
}
