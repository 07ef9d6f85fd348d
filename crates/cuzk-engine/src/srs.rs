//! The SRS manager: parameters loaded on demand or preloaded, one load per
//! circuit even under concurrent requests, resident while in use, evicted
//! when idle under memory pressure. How a circuit's parameters are obtained
//! (a file, a generator) is its plan source's business: the manager asks
//! for the recipe and follows it.
//!
//! Status never waits for a load: an entry's load is serialised by its own
//! lock, and what status reads (resident copy, size, last use) sits behind a
//! second lock that is only ever held for a few instructions.

use crate::plans::PlanSources;
use crate::state::lock;
use crate::EngineError;
use cuzk_core::ProvingParameters;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// Marker whose strong count is the entry's reference count.
#[derive(Debug)]
struct InUse;

#[derive(Debug)]
struct Resident {
    params: Option<Arc<ProvingParameters>>,
    size_bytes: u64,
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
    /// Bytes of resident parameters above which idle ones are evicted
    /// (0 = no limit).
    limit_bytes: u64,
    entries: Mutex<HashMap<String, Arc<Entry>>>,
}

impl SrsManager {
    pub(crate) fn new(sources: Arc<PlanSources>, limit_bytes: u64) -> Self {
        Self {
            sources,
            limit_bytes,
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
                    last_used: Instant::now(),
                }),
                in_use: Arc::new(InUse),
            })
        }))
    }

    /// The parameters of `circuit_id`, loading (or generating) them if
    /// needed. An id no plan source knows leaves no entry behind.
    pub(crate) fn acquire(&self, circuit_id: &str) -> Result<SrsHandle, EngineError> {
        let recipe = self.sources.parameters(circuit_id)?;
        let circuit_id = recipe.canonical_id().unwrap_or(circuit_id).to_string();
        let circuit_id = circuit_id.as_str();
        let entry = self.entry(circuit_id);
        let started = Instant::now();
        let params = {
            let _loading = lock(&entry.loading);
            let resident = lock(&entry.resident).params.clone();
            match resident {
                Some(params) => params,
                None => {
                    let loaded = match recipe.load() {
                        Ok(params) => Arc::new(params),
                        Err(e) => {
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
                    let mut resident = lock(&entry.resident);
                    resident.size_bytes = loaded.size_bytes();
                    resident.params = Some(Arc::clone(&loaded));
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

    /// Loads `circuit_id` if not resident; returns whether it already was and
    /// how long the load took.
    pub(crate) fn preload(&self, circuit_id: &str) -> Result<(bool, Duration), EngineError> {
        let already = self.is_resident(&self.canonical(circuit_id));
        let handle = self.acquire(circuit_id)?;
        Ok((already, handle.load_time))
    }

    /// Checks that `circuit_id`'s parameters can be had (resident, or what
    /// its recipe says), so a request for missing parameters is refused at
    /// submission, naming what is missing.
    pub(crate) fn check_available(&self, circuit_id: &str) -> Result<(), EngineError> {
        let recipe = self.sources.parameters(circuit_id)?;
        if self.is_resident(recipe.canonical_id().unwrap_or(circuit_id)) {
            return Ok(());
        }
        recipe.check_available().map_err(EngineError::from)
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
                (true, freed)
            }
        }
    }

    /// Evicts idle parameters, least recently used first, while the resident
    /// total exceeds the limit. `keep` is never evicted.
    fn evict_under_pressure(&self, keep: &str) {
        if self.limit_bytes == 0 {
            return;
        }
        loop {
            let report = self.status();
            let resident: u64 = report
                .iter()
                .filter(|s| s.tier != Tier::Cold)
                .map(|s| s.size_bytes)
                .sum();
            if resident <= self.limit_bytes {
                return;
            }
            let victim = {
                let entries = lock(&self.entries);
                report
                    .iter()
                    .filter(|s| s.tier == Tier::Warm && s.circuit_id != keep)
                    .min_by_key(|s| lock(&entries[&s.circuit_id].resident).last_used)
                    .map(|s| s.circuit_id.clone())
            };
            match victim {
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
