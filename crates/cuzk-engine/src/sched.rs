//! The two queues of the pipeline.
//!
//! [`Dispatch`] is the ordered dispatcher: a priority queue of partitions
//! and the memory budget under one lock. A partition leaves it only when it
//! is the highest-priority one waiting *and* its bytes fit in the budget, so
//! admission is strictly in priority/FIFO order and memory is granted before
//! synthesis starts. The [`Permit`] it returns travels with the partition
//! and is released once the prover has freed the a/b/c vectors.
//!
//! [`Handoff`] is the bounded queue between synthesis and the provers, also
//! ordered by priority. A partition that outranks something already waiting
//! may exceed the bound (it is still covered by its memory permit), so a
//! PoSt job never queues behind lower-priority PoRep partitions.

use crate::job::Job;
use crate::state::lock;
use cuzk_core::Priority;
use cuzk_core::{PartitionData, ProvingParameters};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// Heap key: priority first, then the older job, then the lower partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Rank(Priority, Reverse<u64>, Reverse<usize>);

impl Rank {
    pub(crate) fn of(job: &Job, partition: usize) -> Self {
        Rank(job.priority, Reverse(job.seq), Reverse(partition))
    }
}

/// A partition waiting for synthesis.
#[derive(Debug)]
pub(crate) struct WorkItem {
    pub(crate) rank: Rank,
    pub(crate) job: Arc<Job>,
    pub(crate) partition: usize,
}

impl PartialEq for WorkItem {
    fn eq(&self, other: &Self) -> bool {
        self.rank == other.rank
    }
}
impl Eq for WorkItem {}
impl PartialOrd for WorkItem {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for WorkItem {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank.cmp(&other.rank)
    }
}

#[derive(Debug, Default)]
struct DispatchState {
    queue: BinaryHeap<WorkItem>,
    used: u64,
    closed: bool,
}

/// Priority queue plus memory budget.
#[derive(Debug)]
pub(crate) struct Dispatch {
    state: Mutex<DispatchState>,
    changed: Condvar,
    total: u64,
    /// Bytes held outside the partitions' permits that the budget counts
    /// too (the compiled R1CS of the circuits in use), asked at each grant.
    reserved: fn() -> u64,
}

/// Memory granted to one partition; returned to the budget on drop.
#[derive(Debug)]
pub(crate) struct Permit {
    bytes: u64,
    dispatch: Arc<Dispatch>,
}

impl Permit {
    /// Bytes granted.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = lock(&self.dispatch.state);
        state.used -= self.bytes;
        drop(state);
        self.dispatch.changed.notify_all();
    }
}

impl Dispatch {
    pub(crate) fn new(total_bytes: u64, reserved: fn() -> u64) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(DispatchState::default()),
            changed: Condvar::new(),
            total: total_bytes.max(1),
            reserved,
        })
    }

    /// Bytes the budget counts outside the permits now.
    pub(crate) fn reserved(&self) -> u64 {
        (self.reserved)()
    }

    pub(crate) fn push(&self, item: WorkItem) {
        lock(&self.state).queue.push(item);
        self.changed.notify_all();
    }

    /// Blocks until the head partition fits the budget and returns it with
    /// its permit; `None` once closed. (A partition larger than the whole
    /// budget is refused at submission, so every head fits eventually; the
    /// `used == 0` case only guards against an estimate that changed.)
    pub(crate) fn next(self: &Arc<Self>) -> Option<(WorkItem, Permit)> {
        let mut state = lock(&self.state);
        loop {
            if state.closed {
                return None;
            }
            while state.queue.peek().is_some_and(|item| item.job.is_final()) {
                state.queue.pop();
            }
            if let Some(head) = state.queue.peek() {
                let bytes = head.job.partition_bytes;
                // With nothing in flight the head always goes (a budget
                // too small for one partition would otherwise stall).
                if state.used == 0 || state.used + bytes + (self.reserved)() <= self.total {
                    let item = state.queue.pop().expect("peeked");
                    state.used += bytes;
                    let permit = Permit {
                        bytes,
                        dispatch: Arc::clone(self),
                    };
                    return Some((item, permit));
                }
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub(crate) fn close(&self) {
        lock(&self.state).closed = true;
        self.changed.notify_all();
    }

    /// (partitions waiting, bytes granted, budget).
    pub(crate) fn snapshot(&self) -> (usize, u64, u64) {
        let state = lock(&self.state);
        (state.queue.len(), state.used, self.total)
    }

    /// Wakes waiters to re-check the head (after a cancellation).
    pub(crate) fn poke(&self) {
        self.changed.notify_all();
    }
}

/// A synthesised partition waiting for a prover.
#[derive(Debug)]
pub(crate) struct ReadyItem {
    pub(crate) rank: Rank,
    pub(crate) job: Arc<Job>,
    pub(crate) partition: usize,
    pub(crate) data: PartitionData,
    pub(crate) params: Arc<ProvingParameters>,
    pub(crate) permit: Permit,
    pub(crate) queued_at: Instant,
}

impl PartialEq for ReadyItem {
    fn eq(&self, other: &Self) -> bool {
        self.rank == other.rank
    }
}
impl Eq for ReadyItem {}
impl PartialOrd for ReadyItem {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ReadyItem {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank.cmp(&other.rank)
    }
}

#[derive(Debug, Default)]
struct HandoffState {
    heap: BinaryHeap<ReadyItem>,
    closed: bool,
}

/// Bounded, priority-ordered hand-off from synthesis to the provers.
#[derive(Debug)]
pub(crate) struct Handoff {
    state: Mutex<HandoffState>,
    not_empty: Condvar,
    not_full: Condvar,
    capacity: usize,
}

impl Handoff {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(HandoffState::default()),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    /// Waits for room (or for the item to outrank a waiting one). Returns
    /// the item back when the queue is closed.
    pub(crate) fn push(&self, item: ReadyItem) -> Result<(), Box<ReadyItem>> {
        let mut state = lock(&self.state);
        loop {
            if state.closed {
                return Err(Box::new(item));
            }
            let outranks = state.heap.iter().any(|waiting| waiting.rank < item.rank);
            if state.heap.len() < self.capacity || outranks || item.job.is_final() {
                state.heap.push(item);
                drop(state);
                self.not_empty.notify_one();
                return Ok(());
            }
            state = self.not_full.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The highest-priority ready partition; `None` once closed.
    pub(crate) fn pop(&self) -> Option<ReadyItem> {
        let mut state = lock(&self.state);
        loop {
            if state.closed {
                return None;
            }
            if let Some(item) = state.heap.pop() {
                drop(state);
                self.not_full.notify_all();
                return Some(item);
            }
            state = self.not_empty.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.state).heap.len()
    }

    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    pub(crate) fn close(&self) {
        let mut state = lock(&self.state);
        state.closed = true;
        // Dropping the waiting items returns their memory permits.
        state.heap.clear();
        drop(state);
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }
}
