//! The SRS manager: parameters loaded on demand or preloaded, one load per
//! circuit even under concurrent requests, resident while in use, evicted
//! when idle under memory pressure. How a circuit's parameters are obtained
//! (a file, a generator) is its plan source's business: the manager asks
//! for the recipe and follows it.
//!
//! Status never waits for a load: an entry's load is serialised by its own
//! lock, and what status reads (resident copy, size, last use) sits behind a
//! second lock that is only ever held for a few instructions. Loads of
//! different circuits never wait on each other.
//!
//! Memory: parameters count against the memory budget like partitions do
//! (the dispatcher is told their bytes, resident and loading), and against
//! `[srs] memory_limit` alone. A circuit whose parameters (their recipe's
//! estimate, which covers a generator's peak) do not fit beside those in
//! use or loading is refused at submission and at PreloadSRS; idle ones are
//! evicted, least recently used first, to make room.

use crate::plans::PlanSources;
use crate::sync::lock;
use crate::EngineError;
use cuzk_core::{CompiledR1cs, ProvingParameters};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the SRS manager needs of the memory budget (the dispatcher's):
/// its size, what partitions hold, and to be told what parameters hold.
pub(crate) trait MemoryBudget: Send + Sync + std::fmt::Debug {
    /// The whole budget.
    fn total(&self) -> u64;
    /// Bytes granted to partitions in flight.
    fn granted(&self) -> u64;
    /// What parameters hold now (resident and loading).
    fn set_parameter_bytes(&self, bytes: u64);
}

/// How warm a circuit's parameters are (the `cuzk.v1` tiers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Resident and in use by at least one job.
    Hot,
    /// Resident, idle.
    Warm,
    /// Known but not resident (evicted, loading, or failed to load).
    Cold,
}

/// One line of the SRS report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SrsStatus {
    /// Circuit id.
    pub circuit_id: String,
    /// Tier.
    pub tier: Tier,
    /// Bytes held (or last held).
    pub size_bytes: u64,
    /// Jobs using it now.
    pub ref_count: u32,
}

/// Parameters in use by a job: while any handle lives, the entry is HOT and
/// never evicted.
#[derive(Debug, Clone)]
pub struct SrsHandle {
    params: Arc<ProvingParameters>,
    _in_use: Arc<InUse>,
    /// How long this acquisition waited for a load (zero when resident).
    pub load_time: Duration,
}

impl SrsHandle {
    /// The parameters.
    pub fn params(&self) -> &Arc<ProvingParameters> {
        &self.params
    }
}

/// A preloaded circuit: its parameters (held in use while the handle
/// lives) and what its source prepared besides them.
#[derive(Debug)]
pub(crate) struct Preloaded {
    /// The parameters were resident before the preload.
    pub(crate) already_resident: bool,
    /// How long the load took (zero when resident).
    pub(crate) load_time: Duration,
    pub(crate) handle: SrsHandle,
    /// The circuit's compiled R1CS, when its source had it.
    pub(crate) r1cs: Option<Arc<CompiledR1cs>>,
}

/// At most 80 characters of a client's circuit id, for messages.
fn shown(circuit_id: &str) -> String {
    circuit_id.chars().take(80).collect()
}

/// Marker whose strong count is the entry's reference count.
#[derive(Debug)]
struct InUse;

#[derive(Debug)]
struct Resident {
    params: Option<Arc<ProvingParameters>>,
    size_bytes: u64,
    /// Bytes promised to a load in progress (its recipe's estimate), 0
    /// when none runs.
    loading_bytes: u64,
    last_used: Instant,
}

#[derive(Debug)]
struct Entry {
    /// Held for the whole load, so one load per circuit.
    loading: Mutex<()>,
    /// What status reads; held only briefly.
    resident: Mutex<Resident>,
    in_use: Arc<InUse>,
}

/// Keeps parameters resident.
#[derive(Debug)]
pub(crate) struct SrsManager {
    sources: Arc<PlanSources>,
    /// Bytes of parameters, resident and loading, above which idle ones
    /// are evicted and new ones refused: `[srs] memory_limit` or the whole
    /// memory budget, whichever is less.
    limit_bytes: u64,
    /// The memory budget, told how many bytes parameters hold.
    dispatch: Arc<dyn MemoryBudget>,
    entries: Mutex<HashMap<String, Arc<Entry>>>,
}

/// Why parameters cannot be loaded now.
enum NoRoom {
    /// They would not fit even alone.
    Never(EngineError),
    /// Not beside the parameters in use or loading, and the partitions in
    /// flight: room may come when those finish.
    NotNow(EngineError),
}

impl SrsManager {
    /// `limit_bytes`: `[srs] memory_limit` (0 = none beyond the budget).
    pub(crate) fn new(sources: Arc<PlanSources>, limit_bytes: u64, dispatch: Arc<dyn MemoryBudget>) -> Self {
        let budget = dispatch.total();
        Self {
            sources,
            limit_bytes: match limit_bytes {
                0 => budget,
                limit => limit.min(budget),
            },
            dispatch,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn entry(&self, circuit_id: &str) -> Arc<Entry> {
        let mut entries = lock(&self.entries);
        Arc::clone(entries.entry(circuit_id.to_string()).or_insert_with(|| {
            Arc::new(Entry {
                loading: Mutex::new(()),
                resident: Mutex::new(Resident {
                    params: None,
                    size_bytes: 0,
                    loading_bytes: 0,
                    last_used: Instant::now(),
                }),
                in_use: Arc::new(InUse),
            })
        }))
    }

    /// The parameters of `circuit_id`, loading (or generating) them if
    /// needed. An id no plan source knows leaves no entry behind. When
    /// they do not fit now beside the parameters in use or loading and the
    /// partitions in flight, the load waits for room while `keep_waiting`
    /// says so (a queued job's loader), else it is refused. `coming` is
    /// told `true` once the parameters are sure to come without more
    /// memory (this load runs with its memory reserved, or another's does
    /// and they are kept for this caller when it ends), `false` if that
    /// other load failed.
    pub(crate) fn acquire(
        &self,
        circuit_id: &str,
        keep_waiting: &dyn Fn() -> bool,
        coming: &dyn Fn(bool),
    ) -> Result<SrsHandle, EngineError> {
        let recipe = self.sources.parameters(circuit_id)?;
        let circuit_id = recipe.canonical_id().unwrap_or(circuit_id).to_string();
        let circuit_id = circuit_id.as_str();
        let entry = self.entry(circuit_id);
        let started = Instant::now();
        let params = {
            // Another's load runs (a preload's, say): pinned as in use, what
            // it loads is not evicted as idle before this caller has it.
            let pinned = (lock(&entry.resident).loading_bytes > 0).then(|| {
                coming(true);
                Arc::clone(&entry.in_use)
            });
            let _loading = lock(&entry.loading);
            let resident = lock(&entry.resident).params.clone();
            drop(pinned);
            match resident {
                Some(params) => params,
                None => {
                    coming(false);
                    let need = recipe.memory_bytes();
                    loop {
                        match self.reserve(circuit_id, &entry, need) {
                            Ok(()) => break,
                            Err(NoRoom::NotNow(_)) if keep_waiting() => {
                                std::thread::sleep(Duration::from_millis(50))
                            }
                            Err(NoRoom::Never(e) | NoRoom::NotNow(e)) => {
                                self.forget_if_unused(circuit_id, &entry);
                                return Err(e);
                            }
                        }
                    }
                    coming(true);
                    let loaded = recipe.load();
                    lock(&entry.resident).loading_bytes = 0;
                    let loaded = match loaded {
                        Ok(params) => Arc::new(params),
                        Err(e) => {
                            self.publish();
                            self.forget_if_unused(circuit_id, &entry);
                            return Err(e.into());
                        }
                    };
                    tracing::info!(
                        circuit_id,
                        bytes = loaded.size_bytes(),
                        ms = started.elapsed().as_millis() as u64,
                        "SRS loaded"
                    );
                    {
                        let mut resident = lock(&entry.resident);
                        resident.size_bytes = loaded.size_bytes();
                        resident.params = Some(Arc::clone(&loaded));
                    }
                    self.publish();
                    loaded
                }
            }
        };
        lock(&entry.resident).last_used = Instant::now();
        let handle = SrsHandle {
            params,
            _in_use: Arc::clone(&entry.in_use),
            load_time: started.elapsed(),
        };
        self.evict_under_pressure(circuit_id);
        Ok(handle)
    }

    /// Drops a failed entry nobody holds, so ids whose parameters cannot
    /// be had leave nothing behind (status stays bounded by what loaded).
    fn forget_if_unused(&self, circuit_id: &str, entry: &Arc<Entry>) {
        let mut entries = lock(&self.entries);
        let unused = lock(&entry.resident).params.is_none() && Arc::strong_count(&entry.in_use) == 1;
        if unused && entries.get(circuit_id).is_some_and(|e| Arc::ptr_eq(e, entry)) {
            entries.remove(circuit_id);
        }
    }

    /// Loads `circuit_id` if not resident, refused at once when the
    /// parameters do not fit now. Beside the load (on a thread of its own,
    /// both being reads of files the page cache may hold), the sources
    /// prepare what else they keep of the circuit (its compiled R1CS, from
    /// its file): a failure there is a warning, the parameters stay loaded.
    pub(crate) fn preload(&self, circuit_id: &str) -> Result<Preloaded, EngineError> {
        // An id no source serves is refused before anything is read.
        let recipe = self.sources.parameters(circuit_id)?;
        let canonical = recipe.canonical_id().unwrap_or(circuit_id).to_string();
        let already = self.is_resident(&canonical);
        let (handle, prepared) = std::thread::scope(|scope| {
            let prepared = scope.spawn(|| self.sources.prepare(&canonical));
            let handle = self.acquire(circuit_id, &|| false, &|_| {});
            (handle, prepared.join())
        });
        let handle = handle?;
        let r1cs = match prepared {
            Ok(Some(Ok(prepared))) => {
                tracing::info!(circuit_id = %canonical, "preload: {}", prepared.summary);
                prepared.r1cs
            }
            Ok(Some(Err(e))) => {
                tracing::warn!(circuit_id = %canonical, error = %e, "preload: not prepared");
                None
            }
            Ok(None) => None,
            Err(_) => {
                tracing::error!(circuit_id = %canonical, "preload: preparing the circuit panicked");
                None
            }
        };
        Ok(Preloaded {
            already_resident: already,
            load_time: handle.load_time,
            handle,
            r1cs,
        })
    }

    /// Whether `circuit_id`'s parameters are resident (an alias resolved).
    pub(crate) fn is_ready(&self, circuit_id: &str) -> bool {
        self.is_resident(&self.canonical(circuit_id))
    }

    /// Checks that `circuit_id`'s parameters can be had (resident, or what
    /// its recipe says) and that they fit in memory beside those in use or
    /// loading, so a request for missing parameters, or for parameters the
    /// host cannot hold, is refused at submission, naming what is missing.
    /// `partition_bytes`: what one partition of the request holds in
    /// flight, which must fit in the budget beside its parameters. Returns
    /// the bytes the parameters hold (or will).
    pub(crate) fn admit(&self, circuit_id: &str, partition_bytes: u64) -> Result<u64, EngineError> {
        let recipe = self.sources.parameters(circuit_id)?;
        let canonical = recipe.canonical_id().unwrap_or(circuit_id).to_string();
        let resident = {
            let entry = lock(&self.entries).get(&canonical).cloned();
            entry.and_then(|e| {
                let r = lock(&e.resident);
                r.params.as_ref().map(|_| r.size_bytes)
            })
        };
        let need = match resident {
            Some(bytes) => bytes,
            None => {
                recipe.check_available().map_err(EngineError::from)?;
                let need = recipe.memory_bytes();
                if let Err(NoRoom::Never(e) | NoRoom::NotNow(e)) = self.room_for(&canonical, need, false) {
                    return Err(e);
                }
                need
            }
        };
        let budget = self.dispatch.total();
        if partition_bytes.saturating_add(need) > budget {
            return Err(EngineError::ResourceExhausted(format!(
                "a partition of this request needs {} MiB in flight beside its {} MiB of parameters, more than \
                 the whole memory budget of {} MiB ([memory] total_budget)",
                partition_bytes >> 20,
                need >> 20,
                budget >> 20
            )));
        }
        Ok(need)
    }

    /// Whether `need` bytes of parameters for `circuit_id` fit: alone in
    /// the limit (else never), and beside the parameters in use or loading
    /// (and, with `in_flight`, the partitions in flight) now.
    fn room_for(&self, circuit_id: &str, need: u64, in_flight: bool) -> Result<(), NoRoom> {
        let mib = |b: u64| b >> 20;
        let limit = self.limit_bytes;
        if need > limit {
            return Err(NoRoom::Never(EngineError::ResourceExhausted(format!(
                "the parameters of {} need {} MiB of host memory, more than the {} MiB the daemon allows \
                 parameters ([srs] memory_limit, at most [memory] total_budget)",
                shown(circuit_id),
                mib(need),
                mib(limit)
            ))));
        }
        let pinned = self.pinned_bytes(circuit_id);
        let partitions = if in_flight { self.dispatch.granted() } else { 0 };
        if need + pinned + partitions > limit {
            return Err(NoRoom::NotNow(EngineError::ResourceExhausted(format!(
                "the parameters of {} need {} MiB of host memory; beside the {} MiB of parameters in use or \
                 loading{} that exceeds the {} MiB the daemon allows parameters ([srs] memory_limit, at most \
                 [memory] total_budget)",
                shown(circuit_id),
                mib(need),
                mib(pinned),
                if in_flight {
                    format!(" and the {} MiB of partitions in flight", mib(partitions))
                } else {
                    String::new()
                },
                mib(limit)
            ))));
        }
        Ok(())
    }

    /// Bytes of other circuits' parameters that cannot be evicted now: in
    /// use by a job, or being loaded.
    fn pinned_bytes(&self, except: &str) -> u64 {
        let entries = lock(&self.entries);
        entries
            .iter()
            .filter(|(id, _)| id.as_str() != except)
            .map(|(_, e)| {
                let r = lock(&e.resident);
                let in_use = r.params.is_some() && Arc::strong_count(&e.in_use) > 1;
                r.loading_bytes + if in_use { r.size_bytes } else { 0 }
            })
            .sum()
    }

    /// Promises `need` bytes to `entry`'s load when they fit, evicting idle
    /// parameters (least recently used first) to make the room real.
    fn reserve(&self, circuit_id: &str, entry: &Entry, need: u64) -> Result<(), NoRoom> {
        self.room_for(circuit_id, need, true)?;
        lock(&entry.resident).loading_bytes = need;
        self.publish();
        self.evict_under_pressure(circuit_id);
        Ok(())
    }

    /// Tells the memory budget what parameters hold now.
    fn publish(&self) {
        self.dispatch.set_parameter_bytes(self.held_bytes());
    }

    /// Bytes of parameters resident or being loaded.
    pub(crate) fn held_bytes(&self) -> u64 {
        let entries = lock(&self.entries);
        entries
            .values()
            .map(|e| {
                let r = lock(&e.resident);
                r.loading_bytes + if r.params.is_some() { r.size_bytes } else { 0 }
            })
            .sum()
    }

    /// Evicts idle parameters, least recently used first, until `bytes`
    /// are freed or none is idle; returns the bytes freed. The memory
    /// budget calls this when a partition does not fit.
    pub(crate) fn evict_idle_for(&self, bytes: u64) -> u64 {
        let mut freed = 0;
        while freed < bytes {
            match self.least_recently_used_idle(None) {
                Some(id) => {
                    tracing::info!(circuit_id = %id, "SRS evicted to make room for partitions");
                    freed += self.evict(&id).1;
                }
                None => break,
            }
        }
        freed
    }

    /// The idle (resident, unused) circuit used least recently, other than
    /// `keep`.
    fn least_recently_used_idle(&self, keep: Option<&str>) -> Option<String> {
        let entries = lock(&self.entries);
        entries
            .iter()
            .filter(|(id, e)| {
                Some(id.as_str()) != keep
                    && Arc::strong_count(&e.in_use) == 1
                    && lock(&e.resident).params.is_some()
            })
            .min_by_key(|(_, e)| lock(&e.resident).last_used)
            .map(|(id, _)| id.clone())
    }

    /// The id `circuit_id`'s parameters are kept under (an alias resolved),
    /// or `circuit_id` itself when no source knows it.
    fn canonical(&self, circuit_id: &str) -> String {
        match self.sources.parameters(circuit_id) {
            Ok(recipe) => recipe.canonical_id().unwrap_or(circuit_id).to_string(),
            Err(_) => circuit_id.to_string(),
        }
    }

    fn is_resident(&self, circuit_id: &str) -> bool {
        let entry = lock(&self.entries).get(circuit_id).cloned();
        entry.is_some_and(|e| lock(&e.resident).params.is_some())
    }

    /// Drops the resident copy of `circuit_id`. Jobs using it keep their
    /// reference, so memory is freed when the last of them finishes; the
    /// reported bytes are those freed now (zero while in use).
    pub(crate) fn evict(&self, circuit_id: &str) -> (bool, u64) {
        let circuit_id = self.canonical(circuit_id);
        let circuit_id = circuit_id.as_str();
        let Some(entry) = lock(&self.entries).get(circuit_id).cloned() else {
            return (false, 0);
        };
        let taken = lock(&entry.resident).params.take();
        match taken {
            None => (false, 0),
            Some(params) => {
                let freed = if Arc::strong_count(&params) == 1 {
                    params.size_bytes()
                } else {
                    0
                };
                tracing::info!(circuit_id, freed, "SRS evicted");
                self.publish();
                (true, freed)
            }
        }
    }

    /// Evicts idle parameters, least recently used first, while those
    /// resident and loading exceed the limit. `keep` is never evicted.
    fn evict_under_pressure(&self, keep: &str) {
        while self.held_bytes() > self.limit_bytes {
            match self.least_recently_used_idle(Some(keep)) {
                Some(id) => {
                    tracing::info!(circuit_id = %id, "SRS evicted under memory pressure");
                    self.evict(&id);
                }
                None => return,
            }
        }
    }

    /// Evicts resident parameters no job holds that were last used more
    /// than `idle` ago; returns how many.
    pub(crate) fn evict_idle(&self, idle: Duration) -> usize {
        let stale: Vec<String> = {
            let entries = lock(&self.entries);
            entries
                .iter()
                .filter(|(_, e)| {
                    let r = lock(&e.resident);
                    r.params.is_some() && Arc::strong_count(&e.in_use) == 1 && r.last_used.elapsed() >= idle
                })
                .map(|(id, _)| id.clone())
                .collect()
        };
        for id in &stale {
            tracing::info!(circuit_id = %id, idle_secs = idle.as_secs(), "SRS evicted after idling");
            self.evict(id);
        }
        stale.len()
    }

    /// Every known circuit with its tier, size and reference count. Never
    /// waits for a load in progress.
    pub(crate) fn status(&self) -> Vec<SrsStatus> {
        let entries = lock(&self.entries);
        let mut out: Vec<SrsStatus> = entries
            .iter()
            .map(|(id, entry)| {
                let (resident, size_bytes) = {
                    let r = lock(&entry.resident);
                    (r.params.is_some(), r.size_bytes)
                };
                let ref_count = (Arc::strong_count(&entry.in_use) - 1) as u32;
                let tier = match (resident, ref_count) {
                    (true, 0) => Tier::Warm,
                    (true, _) => Tier::Hot,
                    (false, _) => Tier::Cold,
                };
                SrsStatus {
                    circuit_id: id.clone(),
                    tier,
                    size_bytes,
                    ref_count,
                }
            })
            .collect();
        out.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        out
    }
}
