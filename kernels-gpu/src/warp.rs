//! The warp operations kernel bodies are written against.

use ferrocomp_format::Status;

/// Lanes in a warp.
pub const WARP_SIZE: u32 = 32;

/// One warp of 32 lanes executing together. Every lane must make each call (full-mask
/// semantics), so kernel bodies keep their control flow uniform around them.
pub trait Warp {
    /// This lane's index, 0..32.
    fn lane(&self) -> u32;
    /// Waits for all lanes; memory written before it is visible to every lane after it.
    fn sync(&self);
    /// Bit `i` set where lane `i`'s predicate is true.
    fn ballot(&self, predicate: bool) -> u32;
    /// `value` as held by lane `src_lane` modulo 32.
    fn shuffle(&self, value: u32, src_lane: u32) -> u32;
    /// Bit `i` set where lane `i` holds the same `value` as this lane.
    fn match_any(&self, value: u32) -> u32;

    /// Calls `f(i)` for this lane's share of `0..n` (i = lane, lane + 32, …): a warp-strided
    /// loop. Plain adds, where `step_by` would divide on every loop entry.
    #[inline(always)]
    fn for_each_strided(&self, n: usize, mut f: impl FnMut(usize)) {
        if n <= u32::MAX as usize {
            let (mut i, n) = (self.lane(), n as u32); // 32-bit counting: one add a step
            while i < n {
                f(i as usize);
                i += WARP_SIZE;
            }
        } else {
            let mut i = self.lane() as usize;
            while i < n {
                f(i);
                i += WARP_SIZE as usize;
            }
        }
    }

    /// Sum (wrapping) of `value` over all lanes, in every lane.
    fn reduce_add(&self, mut value: u32) -> u32 {
        let mut distance = WARP_SIZE / 2;
        while distance > 0 {
            value = value.wrapping_add(self.shuffle(value, self.lane() ^ distance));
            distance /= 2;
        }
        value
    }

    /// Largest `value` of all lanes, in every lane.
    fn reduce_max(&self, mut value: u32) -> u32 {
        let mut distance = WARP_SIZE / 2;
        while distance > 0 {
            value = value.max(self.shuffle(value, self.lane() ^ distance));
            distance /= 2;
        }
        value
    }

    /// XOR of `value` over all lanes, in every lane.
    fn reduce_xor(&self, mut value: u32) -> u32 {
        let mut distance = WARP_SIZE / 2;
        while distance > 0 {
            value ^= self.shuffle(value, self.lane() ^ distance);
            distance /= 2;
        }
        value
    }
}

/// Runs `f` in the first lane alone; its result (at most `u32::MAX`), and what it wrote, reach
/// every lane.
pub fn first_lane<W: Warp>(warp: &W, f: impl FnOnce() -> Result<usize, Status>) -> Result<usize, Status> {
    let result = if warp.lane() == 0 { f() } else { Ok(0) };
    warp.sync();
    let (value, code) = match result {
        Ok(value) => (value as u32, Status::Success as u32),
        Err(status) => (0, status as u32),
    };
    match Status::from_code(warp.shuffle(code, 0)) {
        Status::Success => Ok(warp.shuffle(value, 0) as usize),
        status => Err(status),
    }
}
