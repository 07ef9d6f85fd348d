//! `cores::share_with_pool` puts the calling thread to work beside the pool.
//! In a binary of its own, so the global pool can have exactly one thread.

use cuzk_core::cores::share_with_pool;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[test]
fn the_caller_works_beside_a_pool_of_one_and_results_keep_their_order() {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
        .unwrap();
    let caller = std::thread::current().id();
    let arrived = AtomicUsize::new(0);
    let met = AtomicUsize::new(0);
    let on_caller = AtomicUsize::new(0);
    let out = share_with_pool((0..2).collect(), |i: usize| {
        if std::thread::current().id() == caller {
            on_caller.fetch_add(1, Ordering::SeqCst);
        }
        // Two items meet only if they run at once: with a pool of one
        // thread, one of them must be on the caller. The deadline turns a
        // parked caller into a failure rather than a hang.
        arrived.fetch_add(1, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(20);
        while arrived.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        if arrived.load(Ordering::SeqCst) == 2 {
            met.fetch_add(1, Ordering::SeqCst);
        }
        i * 10
    });
    assert_eq!(out, [0, 10]);
    assert_eq!(met.load(Ordering::SeqCst), 2, "both items ran at once");
    assert_eq!(on_caller.load(Ordering::SeqCst), 1, "the caller took one item");
    // More items than threads: every one runs once, in order.
    let many = share_with_pool((0..100).collect(), |i: u64| i * i);
    assert_eq!(many, (0..100).map(|i| i * i).collect::<Vec<u64>>());
}
