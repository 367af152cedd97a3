//! A warp emulated by 32 coroutines on the calling thread, switched at every barrier: the kernels'
//! test double. Between two barriers each lane runs alone, in lane order, one interleaving of those
//! the hardware may choose; a race-free kernel decodes the same under any of them. (32 OS threads
//! at a barrier cost the test suite minutes of context switches on a two-core machine.)

use crate::warp::{WARP_SIZE, Warp};
use core::cell::Cell;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::vec::Vec;

/// Each lane's stack: as much as a test thread gets (the decoders keep their tables on it).
const LANE_STACK: usize = 8 << 20;

/// One lane of an emulated warp.
pub struct EmulatedWarp<'a> {
    lane: u32,
    yielder: &'a Yielder<(), ()>,
    slots: &'a [Cell<u32>; WARP_SIZE as usize],
}

/// Runs `body` as a warp: once per lane, each on a coroutine, switching at every barrier; returns
/// each lane's result in order. Panics (rather than hangs) when lanes disagree on the barriers.
pub fn run<T, F: Fn(&EmulatedWarp) -> T>(body: F) -> Vec<T> {
    let slots: [Cell<u32>; WARP_SIZE as usize] = core::array::from_fn(|_| Cell::new(0));
    let (body, slots) = (&body, &slots);
    let mut lanes: Vec<_> = (0..WARP_SIZE)
        .map(|lane| {
            let stack = DefaultStack::new(LANE_STACK).expect("a stack for an emulated lane");
            let lane_body = move |yielder: &Yielder<(), ()>, ()| body(&EmulatedWarp { lane, yielder, slots });
            // SAFETY: the coroutines borrow `body` and `slots`, which outlive them: every one is
            // dropped (run to its end, or unwound) before this function returns.
            unsafe { Coroutine::with_stack_unchecked(stack, lane_body) }
        })
        .collect();
    let mut results: Vec<Option<T>> = (0..WARP_SIZE).map(|_| None).collect();
    loop {
        let mut at_barrier = 0;
        for (lane, coroutine) in lanes.iter_mut().enumerate() {
            if coroutine.done() {
                continue;
            }
            match coroutine.resume(()) {
                CoroutineResult::Yield(()) => at_barrier += 1,
                CoroutineResult::Return(result) => results[lane] = Some(result),
            }
        }
        let finished = results.iter().filter(|result| result.is_some()).count();
        match (at_barrier, finished) {
            (0, _) => break,
            (_, 0) => continue,
            _ => panic!("emulated warp: {finished} lanes returned while {at_barrier} wait at a barrier"),
        }
    }
    drop(lanes);
    results.into_iter().map(|result| result.expect("every lane returned")).collect()
}

impl EmulatedWarp<'_> {
    /// Every lane's `value`.
    fn exchange(&self, value: u32) -> [u32; WARP_SIZE as usize] {
        self.slots[self.lane as usize].set(value);
        self.sync();
        let all = core::array::from_fn(|i| self.slots[i].get());
        self.sync();
        all
    }
}

impl Warp for EmulatedWarp<'_> {
    fn lane(&self) -> u32 {
        self.lane
    }

    fn sync(&self) {
        self.yielder.suspend(());
    }

    fn ballot(&self, predicate: bool) -> u32 {
        let all = self.exchange(predicate as u32);
        (0..WARP_SIZE).filter(|&i| all[i as usize] != 0).fold(0, |m, i| m | 1 << i)
    }

    fn shuffle(&self, value: u32, src_lane: u32) -> u32 {
        self.exchange(value)[(src_lane % WARP_SIZE) as usize]
    }

    fn match_any(&self, value: u32) -> u32 {
        let all = self.exchange(value);
        (0..WARP_SIZE).filter(|&i| all[i as usize] == value).fold(0, |m, i| m | 1 << i)
    }
}
