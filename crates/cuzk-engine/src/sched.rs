//! The two queues of the pipeline.
//!
//! [`Dispatch`] is the ordered dispatcher: a priority queue of partitions
//! and the memory budget under one lock. A partition leaves it only when it
//! is the highest-priority one waiting *and* its bytes fit in the budget, so
//! admission is strictly in priority/FIFO order and memory is granted before
//! synthesis starts. The [`Permit`] it returns travels with the partition
//! and is released once the prover has freed the a/b/c vectors. The budget
//! also counts the parameters resident or loading and the compiled R1CS.
//! A job's partitions wait here until its parameters are resident (their
//! load runs on a thread of its own), so a load never holds a synthesis
//! worker and a job whose parameters are resident passes those loading.
//!
//! [`Handoff`] is the bounded queue between synthesis and the provers, also
//! ordered by priority. A partition that outranks something already waiting
//! may exceed the bound (it is still covered by its memory permit), so a
//! PoSt job never queues behind lower-priority PoRep partitions.
//!
//! Both queues are served by workers of [`Lane`]s: general workers take
//! any partition, the lanes kept for PoSt only partitions at their
//! priority or above, so a PoSt finds a synthesis worker and a prover
//! worker free however many PoRep partitions hold the general ones (a
//! synthesis worker whose partition waits for the hand-off, a prover
//! waiting for the device). The budget keeps a reserve for PoSt too.

use crate::job::Job;
use crate::srs::MemoryBudget;
use crate::sync::lock;
use cuzk_core::Priority;
use cuzk_core::{PartitionData, ProvingParameters};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// Partitions at this priority or above are PoSt's (WindowPoSt is High,
/// WinningPoSt Critical by default): they have lanes of their own and the
/// budget's PoSt reserve.
pub(crate) const URGENT: Priority = Priority::High;

/// Which partitions a worker takes: those at `floor` or above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lane {
    floor: Priority,
}

impl Lane {
    /// Takes every partition.
    pub(crate) const GENERAL: Lane = Lane { floor: Priority::Low };
    /// The lanes kept for PoSt beside the general workers: one for High
    /// and above (a WindowPoSt), one for Critical alone (a WinningPoSt
    /// does not wait behind a WindowPoSt's long witness either).
    pub(crate) const KEPT_FOR_POST: [Lane; 2] = [
        Lane {
            floor: Priority::High,
        },
        Lane {
            floor: Priority::Critical,
        },
    ];

    pub(crate) fn takes(self, priority: Priority) -> bool {
        priority >= self.floor
    }

    /// For thread names: "" for the general lane, else the floor's name.
    pub(crate) fn suffix(self) -> &'static str {
        match self.floor {
            Priority::Low => "",
            floor => floor.name(),
        }
    }
}

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
    /// Bytes of parameters resident or loading (the SRS manager says).
    parameters: u64,
    closed: bool,
}

/// What [`Dispatch`] asks for the bytes held outside the permits.
pub(crate) struct Reserved(pub(crate) Box<dyn Fn() -> u64 + Send + Sync>);

impl std::fmt::Debug for Reserved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reserved")
    }
}

/// Frees what is idle (spare witness vectors, parameters) for a partition
/// that does not fit: given the bytes wanted, returns the bytes freed.
pub(crate) struct EvictIdle(pub(crate) Box<dyn Fn(u64) -> u64 + Send + Sync>);

impl std::fmt::Debug for EvictIdle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EvictIdle")
    }
}

/// Priority queue plus memory budget.
#[derive(Debug)]
pub(crate) struct Dispatch {
    state: Mutex<DispatchState>,
    changed: Condvar,
    total: u64,
    /// Bytes of `total` only PoSt partitions ([`URGENT`]) may be granted.
    post_reserve: u64,
    /// Bytes held outside the partitions' permits that the budget counts
    /// too (the compiled R1CS of the circuits in use, the plan sources'
    /// spare witness vectors), asked at each grant.
    reserved: Reserved,
    /// Set once the SRS manager exists (it holds this dispatcher).
    evict_idle: std::sync::OnceLock<EvictIdle>,
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

    /// Gives back what the partition no longer holds: the grant covers its
    /// synthesis (the plan's estimate), while what waits for a prover may
    /// be far less (a witness kept as bits). Never grows the grant.
    pub(crate) fn shrink_to(&mut self, bytes: u64) {
        if bytes >= self.bytes {
            return;
        }
        let freed = self.bytes - bytes;
        self.bytes = bytes;
        lock(&self.dispatch.state).used -= freed;
        self.dispatch.changed.notify_all();
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
    pub(crate) fn new(total_bytes: u64, post_reserve: u64, reserved: Reserved) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(DispatchState::default()),
            changed: Condvar::new(),
            total: total_bytes.max(1),
            post_reserve: post_reserve.min(total_bytes),
            reserved,
            evict_idle: std::sync::OnceLock::new(),
        })
    }

    /// How idle parameters are freed for partitions (set once).
    pub(crate) fn set_evict_idle(&self, evict: EvictIdle) {
        let _ = self.evict_idle.set(evict);
    }

    pub(crate) fn push(&self, item: WorkItem) {
        lock(&self.state).queue.push(item);
        self.changed.notify_all();
    }

    /// Blocks until the head partition `lane` takes (the highest-ranked
    /// one whose parameters are resident) fits the budget and returns it
    /// with its permit; `None` once closed. A partition below [`URGENT`]
    /// must leave the PoSt reserve free. (A partition larger than the budget
    /// beside its parameters is refused at submission, so every head fits
    /// eventually; the `used == 0` case only guards against an estimate
    /// that changed.)
    pub(crate) fn next(self: &Arc<Self>, lane: Lane) -> Option<(WorkItem, Permit)> {
        let mut state = lock(&self.state);
        loop {
            if state.closed {
                return None;
            }
            if let Some(head) = Self::pop_ready(&mut state, lane) {
                let bytes = head.job.partition_bytes;
                let held = state.used + bytes + state.parameters + (self.reserved.0)();
                let limit = match head.rank.0 >= URGENT {
                    true => self.total,
                    false => self.total - self.post_reserve,
                };
                // With nothing in flight the head always goes (a budget
                // too small for one partition would otherwise stall).
                if state.used == 0 || held <= limit {
                    if !head.job.has_parameters() {
                        head.job.take_early();
                    }
                    state.used += bytes;
                    let permit = Permit {
                        bytes,
                        dispatch: Arc::clone(self),
                    };
                    return Some((head, permit));
                }
                state.queue.push(head);
                // Idle parameters give way to a partition that is waiting.
                if let Some(evict) = self.evict_idle.get() {
                    drop(state);
                    let freed = (evict.0)(held - limit);
                    state = lock(&self.state);
                    if freed > 0 {
                        continue;
                    }
                }
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Drops finished jobs' partitions and takes the highest-ranked
    /// partition `lane` takes whose parameters are resident (or, when it
    /// heads the queue, a job's first while they load,
    /// [`Job::may_start_early`]); `None` when none is ready. Partitions
    /// of jobs whose parameters are still loading are set aside and put
    /// back, keeping their rank.
    fn pop_ready(state: &mut DispatchState, lane: Lane) -> Option<WorkItem> {
        let mut set_aside = Vec::new();
        let mut ready = None;
        while let Some(item) = state.queue.pop() {
            if item.job.is_final() {
                continue;
            }
            if !lane.takes(item.rank.0) {
                // Priority first: nothing below it is this lane's either.
                set_aside.push(item);
                break;
            }
            // Early only at the head: a job's first partition never
            // holds a worker ahead of higher-ranked ones that wait.
            if item.job.has_parameters() || (set_aside.is_empty() && item.job.may_start_early()) {
                ready = Some(item);
                break;
            }
            set_aside.push(item);
        }
        state.queue.extend(set_aside);
        ready
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

impl MemoryBudget for Dispatch {
    fn total(&self) -> u64 {
        self.total
    }

    fn granted(&self) -> u64 {
        lock(&self.state).used
    }

    fn set_parameter_bytes(&self, bytes: u64) {
        lock(&self.state).parameters = bytes;
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
                // Every prover looks: one of a lane kept for PoSt cannot
                // take a PoRep partition.
                self.not_empty.notify_all();
                return Ok(());
            }
            state = self.not_full.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The highest-priority ready partition, once `lane` takes it; `None`
    /// once closed.
    pub(crate) fn pop(&self, lane: Lane) -> Option<ReadyItem> {
        let mut state = lock(&self.state);
        loop {
            if state.closed {
                return None;
            }
            let takes = state.heap.peek().is_some_and(|head| lane.takes(head.rank.0));
            if let Some(item) = takes.then(|| state.heap.pop()).flatten() {
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
