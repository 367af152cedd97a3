//! A warp emulated by 32 host threads meeting at a barrier: the kernels' test double.

use crate::warp::{WARP_SIZE, Warp};
use core::sync::atomic::{AtomicU32, Ordering};
use std::sync::Barrier;
use std::vec::Vec;

/// One lane of an emulated warp.
pub struct EmulatedWarp<'a> {
    lane: u32,
    shared: &'a Exchange,
}

struct Exchange {
    barrier: Barrier,
    slots: [AtomicU32; WARP_SIZE as usize],
}

/// Runs `body` as a warp: once per lane, on 32 threads; returns each lane's result in order.
pub fn run<T: Send, F: Fn(&EmulatedWarp) -> T + Sync>(body: F) -> Vec<T> {
    let shared =
        Exchange { barrier: Barrier::new(WARP_SIZE as usize), slots: core::array::from_fn(|_| AtomicU32::new(0)) };
    std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..WARP_SIZE)
            .map(|lane| {
                let (shared, body) = (&shared, &body);
                scope.spawn(move || body(&EmulatedWarp { lane, shared }))
            })
            .collect();
        lanes.into_iter().map(|lane| lane.join().expect("emulated lane panicked")).collect()
    })
}

impl EmulatedWarp<'_> {
    /// Every lane's `value`.
    fn exchange(&self, value: u32) -> [u32; WARP_SIZE as usize] {
        self.shared.slots[self.lane as usize].store(value, Ordering::Relaxed);
        self.shared.barrier.wait();
        let all = core::array::from_fn(|i| self.shared.slots[i].load(Ordering::Relaxed));
        self.shared.barrier.wait();
        all
    }
}

impl Warp for EmulatedWarp<'_> {
    fn lane(&self) -> u32 {
        self.lane
    }

    fn sync(&self) {
        self.shared.barrier.wait();
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
