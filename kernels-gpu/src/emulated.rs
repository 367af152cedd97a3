//! A block of threads emulated by coroutines on the calling thread, switched at every barrier:
//! the kernels' test double. Between two barriers each thread runs alone, in thread order after
//! one barrier and in reverse order after the next: two of the interleavings the hardware may
//! choose, so that a thread reading what another writes between the same barriers reads it
//! written in some rounds and not in others. A race-free kernel decodes the same under any of
//! them. A thread pausing in a spin-wait runs again in the next round. Threads form warps of 32
//! ([`Warp`]) and a block ([`Block`]); [`run`] emulates one warp.
//! (32 OS threads at a barrier cost the test suite minutes of context switches on two cores.)

use crate::block::Block;
use crate::warp::{WARP_SIZE, Warp};
use core::cell::Cell;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::vec;
use std::vec::Vec;

/// Each thread's stack when it is one of a warp: as much as a test thread gets (the warp
/// decoders keep their tables on it).
const WARP_THREAD_STACK: usize = 8 << 20;
/// Each thread's stack when it is one of a larger block.
const BLOCK_THREAD_STACK: usize = 256 << 10;

/// The barrier a thread waits at.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Barrier {
    /// Its warp's: every lane of the warp.
    Warp,
    /// The block's: every thread.
    Block,
    /// None: the thread pauses in a spin-wait ([`Block::pause`]) and runs again next round.
    Pause,
}

/// Pauses the block's threads may make in spin-waits with no store released meanwhile: past
/// them they wait on stores no thread will make (a deadlock on the hardware), and the emulation
/// panics rather than spin forever.
const MAX_PAUSES: u32 = 1 << 20;

/// One thread of an emulated block: a lane of its warp, too.
pub struct EmulatedThread<'a> {
    index: u32,
    threads: u32,
    yielder: &'a Yielder<(), Barrier>,
    slots: &'a [Cell<u32>],
    /// Pauses since a thread last released a store ([`Block::store_release`]).
    pauses: &'a Cell<u32>,
}

/// A lane of an emulated warp (a thread of a block of 32).
pub type EmulatedWarp<'a> = EmulatedThread<'a>;

/// Runs `body` as a warp: [`run_block`] with 32 threads.
pub fn run<T, F: Fn(&EmulatedWarp) -> T>(body: F) -> Vec<T> {
    run_block(WARP_SIZE, body)
}

/// Runs `body` as a block of `threads` threads (a multiple of 32): once per thread, each on a
/// coroutine, switching at every barrier; returns each thread's result in order. Panics (rather
/// than hangs) when threads disagree on the barriers.
pub fn run_block<T, F: Fn(&EmulatedThread) -> T>(threads: u32, body: F) -> Vec<T> {
    assert!(threads > 0 && threads.is_multiple_of(WARP_SIZE), "a block is whole warps");
    let slots: Vec<Cell<u32>> = (0..threads).map(|_| Cell::new(0)).collect();
    let pauses = Cell::new(0);
    let (body, slots, pauses) = (&body, &slots[..], &pauses);
    let stack_size = if threads == WARP_SIZE { WARP_THREAD_STACK } else { BLOCK_THREAD_STACK };
    let mut coroutines: Vec<_> = (0..threads)
        .map(|index| {
            let stack = DefaultStack::new(stack_size).expect("a stack for an emulated thread");
            let thread_body = move |yielder: &Yielder<(), Barrier>, ()| {
                body(&EmulatedThread { index, threads, yielder, slots, pauses })
            };
            // SAFETY: the coroutines borrow `body`, `slots` and `pauses`, which outlive them: every
            // one is dropped (run to its end, or unwound) before this function returns.
            unsafe { Coroutine::with_stack_unchecked(stack, thread_body) }
        })
        .collect();
    let n = threads as usize;
    let mut results: Vec<Option<T>> = (0..n).map(|_| None).collect();
    let mut waiting: Vec<Option<Barrier>> = vec![None; n];
    let mut runnable = vec![true; n];
    let mut reversed = false;
    loop {
        for k in 0..n {
            let i = if reversed { n - 1 - k } else { k };
            if !runnable[i] {
                continue;
            }
            runnable[i] = false;
            match coroutines[i].resume(()) {
                CoroutineResult::Yield(Barrier::Pause) => runnable[i] = true,
                CoroutineResult::Yield(barrier) => waiting[i] = Some(barrier),
                CoroutineResult::Return(result) => results[i] = Some(result),
            }
        }
        reversed = !reversed;
        // Release every warp whose lanes all wait at the warp barrier; else the block, if every
        // thread still running waits at the block barrier.
        let mut released = false;
        for warp in (0..n).step_by(WARP_SIZE as usize) {
            let lanes = warp..warp + WARP_SIZE as usize;
            if waiting[lanes.clone()].iter().all(|&w| w == Some(Barrier::Warp)) {
                lanes.for_each(|i| (waiting[i], runnable[i]) = (None, true));
                released = true;
            } else if waiting[lanes.clone()].contains(&Some(Barrier::Warp))
                && results[lanes].iter().any(Option::is_some)
            {
                panic!("emulated warp {}: lanes returned while others wait at a warp barrier", warp / 32);
            }
        }
        let running = results.iter().filter(|result| result.is_none()).count();
        if released || runnable.contains(&true) {
            continue;
        }
        if running == 0 {
            break;
        }
        if waiting.iter().filter(|&&w| w == Some(Barrier::Block)).count() == running {
            for (wait, run) in waiting.iter_mut().zip(&mut runnable).filter(|(wait, _)| wait.is_some()) {
                (*wait, *run) = (None, true);
            }
            continue;
        }
        panic!("emulated block: {running} threads wait at barriers that cannot all be reached");
    }
    drop(coroutines);
    results.into_iter().map(|result| result.expect("every thread returned")).collect()
}

impl EmulatedThread<'_> {
    /// Every lane's `value`, in this thread's warp.
    fn exchange(&self, value: u32) -> [u32; WARP_SIZE as usize] {
        let warp = (self.index - self.lane()) as usize;
        self.slots[self.index as usize].set(value);
        Warp::sync(self);
        let all = core::array::from_fn(|i| self.slots[warp + i].get());
        Warp::sync(self);
        all
    }
}

impl Warp for EmulatedThread<'_> {
    fn lane(&self) -> u32 {
        self.index % WARP_SIZE
    }

    fn sync(&self) {
        self.yielder.suspend(Barrier::Warp);
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

impl Block for EmulatedThread<'_> {
    fn thread(&self) -> u32 {
        self.index
    }

    fn threads(&self) -> u32 {
        self.threads
    }

    fn sync_threads(&self) {
        self.yielder.suspend(Barrier::Block);
    }

    fn pause(&self) {
        let pauses = self.pauses.get() + 1;
        assert!(pauses < MAX_PAUSES, "emulated block: threads wait on stores no thread makes");
        self.pauses.set(pauses);
        self.yielder.suspend(Barrier::Pause);
    }

    unsafe fn load_acquire(&self, at: *const u32) -> u32 {
        unsafe { at.read_volatile() }
    }

    unsafe fn store_release(&self, at: *mut u32, value: u32) {
        self.pauses.set(0);
        unsafe { at.write_volatile(value) }
    }

    /// One thread runs at a time, between barriers: a read and a write are atomic.
    unsafe fn fetch_add(&self, at: *mut u32, value: u32) -> u32 {
        let before = unsafe { at.read_volatile() };
        unsafe { at.write_volatile(before.wrapping_add(value)) };
        before
    }
}
