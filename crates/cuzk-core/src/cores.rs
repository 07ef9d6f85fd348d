//! One budget of cores for the whole process.
//!
//! A host's `cpu_threads` cores are split in two:
//!
//! - a few **sequential slots** ([`Slots`]): a synthesis worker holds one
//!   while it runs its partition's single-threaded work (building the
//!   circuit, a circuit's one-time recording, a sequential witness);
//! - **rayon's pool** with the rest, where every parallel pass runs (the
//!   units of a witness, a, b, c, the backends' preparation and MSMs).
//!
//! A worker gives its slot up while it waits on a parallel pass
//! ([`parallel`], [`share_with_pool`]), so at most `cpu_threads` threads
//! compute at once however many partitions are in flight, and another
//! worker builds its circuit on the lent core meanwhile.
//!
//! A long single-threaded pass that takes no lock (a witness computed
//! sequentially where the circuit has no units and no native writer) runs
//! as one task of the pool instead ([`on_pool`]), in one of a bounded
//! number of **pool seats** (half the pool): several such partitions then
//! use the cores the slots would leave idle, and the other half of the
//! pool stays free for the parallel passes (the provers' host work, a
//! PoSt's witness).
//!
//! Why syntheses do not simply run on the pool: a pool thread waiting inside
//! a parallel pass steals queued work, and a stolen synthesis that waits on
//! a lock held lower on the same stack (a circuit's one-time recording, a
//! plan's shared witness) never returns (`cuzk-engine/tests/pool.rs`).
//! Slot holders are threads of their own, so nothing is ever stolen onto
//! them.

use crate::request::Priority;
use crate::sync::lock;
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// How many of `cpu_threads` cores are sequential slots when the
/// configuration leaves it open: one per eight cores, at least one. A slot
/// holder lends its slot while its parallel passes run, so few
/// are needed; more let circuits be built while others prove.
pub fn default_sequential_slots(cpu_threads: usize) -> usize {
    (cpu_threads / 8).max(1)
}

/// The pool's share of `cpu_threads` cores once `slots` are set aside (at
/// least one thread).
pub fn pool_threads(cpu_threads: usize, slots: usize) -> usize {
    cpu_threads.saturating_sub(slots).max(1)
}

#[derive(Debug, Default)]
struct SlotState {
    /// Below zero while workers back from a parallel pass exceed the slots.
    free: isize,
    /// Waiters, highest priority first, then in arrival order.
    waiting: BinaryHeap<(Priority, Reverse<u64>)>,
    next_ticket: u64,
    peak_in_use: usize,
}

/// The sequential slots: a counting semaphore that serves the
/// highest-priority waiter first (a WinningPoSt's synthesis does not wait
/// behind PoRep partitions for a core).
#[derive(Debug)]
pub struct Slots {
    state: Mutex<SlotState>,
    freed: Condvar,
    total: usize,
    /// Sequential passes running on the pool ([`on_pool`]), and the most
    /// that may.
    seats: Mutex<usize>,
    seat_freed: Condvar,
    seats_total: usize,
}

/// What [`Slots::snapshot`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotsSnapshot {
    pub total: usize,
    pub in_use: usize,
    pub waiting: usize,
    /// The most slots ever held at once.
    pub peak_in_use: usize,
}

impl Slots {
    /// `total` slots (at least one), and pool seats for half the pool.
    pub fn new(total: usize) -> Arc<Self> {
        Self::with_pool_seats(total, rayon::current_num_threads() / 2)
    }

    /// `total` slots and `seats` sequential passes on the pool at once
    /// (each at least one).
    pub fn with_pool_seats(total: usize, seats: usize) -> Arc<Self> {
        let total = total.max(1);
        Arc::new(Self {
            state: Mutex::new(SlotState {
                free: total as isize,
                ..SlotState::default()
            }),
            freed: Condvar::new(),
            total,
            seats: Mutex::new(0),
            seat_freed: Condvar::new(),
            seats_total: seats.max(1),
        })
    }

    /// Waits for a pool seat (the caller keeps its slot meanwhile: every
    /// seat is computing, so no core idles).
    fn take_seat(&self) {
        let mut taken = lock(&self.seats);
        while *taken >= self.seats_total {
            taken = self.seat_freed.wait(taken).unwrap_or_else(|e| e.into_inner());
        }
        *taken += 1;
    }

    fn leave_seat(&self) {
        *lock(&self.seats) -= 1;
        self.seat_freed.notify_one();
    }

    pub fn snapshot(&self) -> SlotsSnapshot {
        let state = lock(&self.state);
        SlotsSnapshot {
            total: self.total,
            in_use: (self.total as isize - state.free) as usize,
            waiting: state.waiting.len(),
            peak_in_use: state.peak_in_use,
        }
    }

    fn acquire(&self, priority: Priority) {
        let mut state = lock(&self.state);
        let ticket = (priority, Reverse(state.next_ticket));
        state.next_ticket += 1;
        state.waiting.push(ticket);
        loop {
            if state.free > 0 && state.waiting.peek() == Some(&ticket) {
                state.waiting.pop();
                state.free -= 1;
                state.peak_in_use = state.peak_in_use.max((self.total as isize - state.free) as usize);
                drop(state);
                // The next waiter may fit too.
                self.freed.notify_all();
                return;
            }
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Takes a slot back at once, even if none is free: a worker back from a
    /// parallel pass never waits for its slot, because the workers that took
    /// it meanwhile may be waiting on what this one computes (a circuit's
    /// one-time recording, a plan's shared witness). New holders then wait
    /// until the count is back within the slots.
    fn reclaim(&self) {
        let mut state = lock(&self.state);
        state.free -= 1;
        state.peak_in_use = state.peak_in_use.max((self.total as isize - state.free) as usize);
    }

    fn release(&self) {
        lock(&self.state).free += 1;
        self.freed.notify_all();
    }
}

thread_local! {
    /// The slot this thread holds, if any, and the priority it was taken at.
    static HELD: RefCell<Option<(Arc<Slots>, Priority)>> = const { RefCell::new(None) };
}

/// Gives the slot back (and forgets it) when dropped, panics included.
struct Holding;

impl Drop for Holding {
    fn drop(&mut self) {
        if let Some((slots, _)) = HELD.with(|held| held.borrow_mut().take()) {
            slots.release();
        }
    }
}

/// Runs `work` on this thread holding one of `slots` (waiting for one, in
/// priority order). A thread that already holds a slot just runs `work`.
pub fn in_slot<T>(slots: &Arc<Slots>, priority: Priority, work: impl FnOnce() -> T) -> T {
    if HELD.with(|held| held.borrow().is_some()) {
        return work();
    }
    slots.acquire(priority);
    HELD.with(|held| *held.borrow_mut() = Some((Arc::clone(slots), priority)));
    let _holding = Holding;
    work()
}

/// Takes the slot back when dropped.
struct Lent(Option<(Arc<Slots>, Priority)>);

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some((slots, priority)) = self.0.take() {
            slots.reclaim();
            HELD.with(|held| *held.borrow_mut() = Some((slots, priority)));
        }
    }
}

/// Runs a parallel pass (`work` hands its work to the pool and waits):
/// the calling thread's slot, if it holds one, is given up meanwhile, since
/// the thread only waits, and taken back afterwards, at once even when the
/// slots are all taken (the workers that took them may be waiting on what
/// this one computes).
pub fn parallel<T>(work: impl FnOnce() -> T) -> T {
    let held = HELD.with(|held| held.borrow_mut().take());
    if let Some((slots, _)) = &held {
        slots.release();
    }
    let _lent = Lent(held);
    work()
}

/// Runs `work`, a single-threaded pass that waits on no lock another
/// synthesis may hold, as one task of the pool in one of the slots' pool
/// seats, the caller's slot lent meanwhile: sequential passes of several
/// partitions then run on the pool's cores rather than queue for the few
/// slots. A caller that holds no slot just runs `work`. Panics are
/// re-raised here.
pub fn on_pool<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    let Some(slots) = HELD.with(|held| held.borrow().as_ref().map(|(slots, _)| Arc::clone(slots))) else {
        return work();
    };
    slots.take_seat();
    struct Seat<'a>(&'a Slots);
    impl Drop for Seat<'_> {
        fn drop(&mut self) {
            self.0.leave_seat();
        }
    }
    let _seat = Seat(&slots);
    parallel(|| {
        let mut out = None;
        rayon::in_place_scope(|scope| scope.spawn(|_| out = Some(work())));
        out.expect("the pool task ran (a panic would have been re-raised)")
    })
}

/// Runs `work` on every item, on the pool and, unless it holds a
/// sequential slot, on the calling thread too, and returns the results in
/// the items' order. A slot holder (a synthesis worker) lends its slot for
/// the pass and waits: another worker then builds its circuit on that core
/// meanwhile, so the next partition's units are ready when these run out
/// (without it the pool idled at every partition boundary: BENCHMARKS.md,
/// "One budget of cores"). Any other caller works beside the pool rather
/// than parking, as a parallel iterator started from outside the pool
/// would.
pub fn share_with_pool<I: Send, R: Send>(items: Vec<I>, work: impl Fn(I) -> R + Sync) -> Vec<R> {
    let count = items.len();
    let items: Vec<Mutex<Option<I>>> = items.into_iter().map(|i| Mutex::new(Some(i))).collect();
    let results: Vec<Mutex<Option<R>>> = (0..count).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let drain = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= count {
            break;
        }
        if let Some(item) = lock(&items[i]).take() {
            let result = work(item);
            *lock(&results[i]) = Some(result);
        }
    };
    let holds_slot = HELD.with(|held| held.borrow().is_some());
    let pass = || {
        let caller_works = !holds_slot;
        let helpers = rayon::current_num_threads().min(count.saturating_sub(caller_works as usize));
        // A panic in any share is re-raised here once every share has stopped.
        rayon::in_place_scope(|scope| {
            for _ in 0..helpers {
                scope.spawn(|_| drain());
            }
            if caller_works {
                drain();
            }
        });
    };
    if holds_slot {
        parallel(pass);
    } else {
        pass();
    }
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every item ran: the shares stop only when none is left")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::time::Duration;

    #[test]
    fn the_pool_gets_what_the_slots_leave() {
        assert_eq!(default_sequential_slots(2), 1);
        assert_eq!(default_sequential_slots(16), 2);
        assert_eq!(pool_threads(16, 2), 14);
        assert_eq!(pool_threads(1, 1), 1);
    }

    #[test]
    fn no_more_holders_than_slots_and_parallel_lends_the_slot() {
        let slots = Slots::new(2);
        let inside = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    in_slot(&slots, Priority::Normal, || {
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        // While this thread waits on a pass, its slot is free.
                        parallel(|| {
                            assert!(HELD.with(|h| h.borrow().is_none()));
                            std::thread::sleep(Duration::from_millis(20));
                        });
                        assert!(HELD.with(|h| h.borrow().is_some()), "the slot is taken back");
                    })
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 2);
        let after = slots.snapshot();
        assert_eq!((after.in_use, after.waiting), (0, 0));
    }

    #[test]
    fn a_slot_holder_lends_its_slot_while_its_units_run() {
        // One slot: the second worker gets it only if the first lends it
        // during its units (the deadline turns a kept slot into a failure).
        let slots = Slots::new(1);
        let second_ran = std::sync::atomic::AtomicBool::new(false);
        let first_in = Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                in_slot(&slots, Priority::Normal, || {
                    first_in.wait();
                    let waited = share_with_pool(vec![0u8; 2], |_| {
                        let deadline = std::time::Instant::now() + Duration::from_secs(20);
                        while !second_ran.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        second_ran.load(Ordering::SeqCst)
                    });
                    assert_eq!(waited, [true, true], "the slot was kept through the units");
                    assert!(HELD.with(|h| h.borrow().is_some()), "the slot is taken back");
                })
            });
            first_in.wait();
            s.spawn(|| {
                in_slot(&slots, Priority::Normal, || {
                    second_ran.store(true, Ordering::SeqCst)
                })
            });
        });
        assert_eq!(slots.snapshot().in_use, 0);
    }

    #[test]
    fn sequential_passes_on_the_pool_run_beyond_the_slots_within_the_seats() {
        // One slot, two seats: two passes meet at the barrier only if both
        // run at once (the slot lent while each runs on the pool); a third
        // never joins them (the deadline turns a wait into a failure).
        let slots = Slots::with_pool_seats(1, 2);
        let inside = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let met = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    in_slot(&slots, Priority::Normal, || {
                        on_pool(|| {
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            let deadline = std::time::Instant::now() + Duration::from_secs(20);
                            while inside.load(Ordering::SeqCst) < 2 && met.load(Ordering::SeqCst) == 0 {
                                assert!(
                                    std::time::Instant::now() < deadline,
                                    "no second pass beside this one"
                                );
                                std::thread::sleep(Duration::from_millis(1));
                            }
                            met.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(30));
                            inside.fetch_sub(1, Ordering::SeqCst);
                        });
                        assert!(HELD.with(|h| h.borrow().is_some()), "the slot is taken back");
                    })
                });
            }
        });
        assert_eq!(
            most.load(Ordering::SeqCst),
            2,
            "more passes than seats, or fewer than two"
        );
        assert_eq!(slots.snapshot().in_use, 0);
        assert_eq!(*lock(&slots.seats), 0, "every seat left");
    }

    #[test]
    fn a_higher_priority_waiter_is_served_first() {
        let slots = Slots::new(1);
        let order = Mutex::new(Vec::new());
        let holder_in = Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                in_slot(&slots, Priority::Normal, || {
                    holder_in.wait();
                    // Let both waiters queue up behind the holder.
                    while slots.snapshot().waiting < 2 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                })
            });
            holder_in.wait();
            s.spawn(|| in_slot(&slots, Priority::Low, || lock(&order).push("low")));
            while slots.snapshot().waiting < 1 {
                std::thread::sleep(Duration::from_millis(1));
            }
            s.spawn(|| in_slot(&slots, Priority::Critical, || lock(&order).push("critical")));
        });
        assert_eq!(*lock(&order), ["critical", "low"]);
    }

    #[test]
    fn a_slot_is_given_back_after_a_panic() {
        let slots = Slots::new(1);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            in_slot(&slots, Priority::Normal, || panic!("synthesis failed"))
        }));
        assert!(panicked.is_err());
        assert_eq!(slots.snapshot().in_use, 0);
        assert!(HELD.with(|h| h.borrow().is_none()));
    }
}
