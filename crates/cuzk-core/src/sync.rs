//! The crate's one poisoned-mutex policy, and a lock that serves the
//! highest priority first.

use crate::request::Priority;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Locks `m`, taking the data even if a thread panicked while holding it:
/// every critical section here leaves its data consistent at each step, so
/// a panic elsewhere must not take the whole process down with it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A mutex that lets its waiters in highest priority first, then in
/// arrival order: a GPU's region lock, where a WinningPoSt partition must
/// not queue behind PoRep partitions already waiting for the device.
pub(crate) struct PriorityMutex<T> {
    data: Mutex<T>,
    queue: Mutex<Waiters>,
    freed: Condvar,
}

#[derive(Default)]
struct Waiters {
    held: bool,
    waiting: BinaryHeap<(Priority, Reverse<u64>)>,
    next_ticket: u64,
}

/// The lock held; given back (to the highest-priority waiter) on drop,
/// also when its holder panics.
pub(crate) struct PriorityGuard<'a, T> {
    data: Option<MutexGuard<'a, T>>,
    owner: &'a PriorityMutex<T>,
}

impl<T> PriorityMutex<T> {
    pub(crate) fn new(data: T) -> Self {
        Self {
            data: Mutex::new(data),
            queue: Mutex::new(Waiters::default()),
            freed: Condvar::new(),
        }
    }

    /// Waits until no waiter outranks this one and the lock is free.
    pub(crate) fn lock(&self, priority: Priority) -> PriorityGuard<'_, T> {
        let mut queue = lock(&self.queue);
        let ticket = (priority, Reverse(queue.next_ticket));
        queue.next_ticket += 1;
        queue.waiting.push(ticket);
        while queue.held || queue.waiting.peek() != Some(&ticket) {
            queue = self.freed.wait(queue).unwrap_or_else(|e| e.into_inner());
        }
        queue.waiting.pop();
        queue.held = true;
        drop(queue);
        PriorityGuard {
            data: Some(lock(&self.data)),
            owner: self,
        }
    }

    /// Waiters now (for tests and status).
    #[cfg(test)]
    fn waiting(&self) -> usize {
        lock(&self.queue).waiting.len()
    }
}

impl<T> std::fmt::Debug for PriorityMutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PriorityMutex")
    }
}

impl<T> std::ops::Deref for PriorityGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.data.as_ref().expect("held until drop")
    }
}

impl<T> std::ops::DerefMut for PriorityGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.data.as_mut().expect("held until drop")
    }
}

impl<T> Drop for PriorityGuard<'_, T> {
    fn drop(&mut self) {
        self.data = None;
        lock(&self.owner.queue).held = false;
        self.owner.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn wait_for_waiters<T>(m: &PriorityMutex<T>, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while m.waiting() < n {
            assert!(Instant::now() < deadline, "waiters never queued");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Two Normal waiters queued first, then a Critical and a High one:
    /// once the holder lets go they enter Critical, High, then the Normal
    /// ones in their arrival order.
    #[test]
    fn a_priority_mutex_lets_the_highest_priority_waiter_in_first() {
        let m = Arc::new(PriorityMutex::new(Vec::new()));
        let held = m.lock(Priority::Normal);
        let mut threads = Vec::new();
        for (i, p) in [
            (1, Priority::Normal),
            (2, Priority::Normal),
            (3, Priority::Critical),
            (4, Priority::High),
        ] {
            let m2 = Arc::clone(&m);
            threads.push(std::thread::spawn(move || m2.lock(p).push(i)));
            wait_for_waiters(&m, i);
        }
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*m.lock(Priority::Low), vec![3, 4, 1, 2]);
    }

    /// A holder that panics gives the lock back: the next waiter enters.
    #[test]
    fn a_priority_mutex_is_given_back_when_its_holder_panics() {
        let m = Arc::new(PriorityMutex::new(0u32));
        let m2 = Arc::clone(&m);
        let panicked = std::thread::spawn(move || {
            let mut guard = m2.lock(Priority::Normal);
            *guard += 1;
            panic!("injected");
        })
        .join();
        assert!(panicked.is_err());
        let m3 = Arc::clone(&m);
        let after = std::thread::spawn(move || *m3.lock(Priority::Critical) + 1);
        assert_eq!(after.join().unwrap(), 2);
    }
}
