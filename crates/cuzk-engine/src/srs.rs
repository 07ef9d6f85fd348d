//! The SRS manager: parameters loaded on demand or preloaded, one load per
//! file even under concurrent requests, resident while in use, evicted when
//! idle under memory pressure.

use crate::EngineError;
use cuzk_core::shaped::{parse_shaped_circuit_id, write_shaped_parameters, ShapedCircuit, SHAPED_POINT_SEED};
use cuzk_core::{CacheOutcome, ParameterCache, PointCheck, ProvingParameters, SyntheticCircuit};
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
    /// Known but not resident (evicted, or failed to load).
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
struct Entry {
    /// Held while loading, so one load per file.
    slot: Mutex<Option<Arc<ProvingParameters>>>,
    in_use: Arc<InUse>,
    size_bytes: Mutex<u64>,
    last_used: Mutex<Instant>,
}

/// Keeps parameters resident.
#[derive(Debug)]
pub struct SrsManager {
    cache: ParameterCache,
    /// Bytes of resident parameters above which idle ones are evicted
    /// (0 = no limit).
    limit_bytes: u64,
    entries: Mutex<HashMap<String, Arc<Entry>>>,
}

impl SrsManager {
    /// A manager over the parameter directory `cache`.
    pub fn new(cache: ParameterCache, limit_bytes: u64) -> Self {
        Self {
            cache,
            limit_bytes,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn entry(&self, circuit_id: &str) -> Arc<Entry> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(entries.entry(circuit_id.to_string()).or_insert_with(|| {
            Arc::new(Entry {
                slot: Mutex::new(None),
                in_use: Arc::new(InUse),
                size_bytes: Mutex::new(0),
                last_used: Mutex::new(Instant::now()),
            })
        }))
    }

    /// The parameters of `circuit_id`, loading (or, for synthetic circuits,
    /// generating) them if needed.
    pub fn acquire(&self, circuit_id: &str) -> Result<SrsHandle, EngineError> {
        let entry = self.entry(circuit_id);
        let started = Instant::now();
        let params = {
            let mut slot = entry.slot.lock().unwrap_or_else(|e| e.into_inner());
            match slot.as_ref() {
                Some(params) => Arc::clone(params),
                None => {
                    let params = Arc::new(self.load(circuit_id)?);
                    *entry.size_bytes.lock().unwrap() = params.size_bytes();
                    *slot = Some(Arc::clone(&params));
                    params
                }
            }
        };
        *entry.last_used.lock().unwrap() = Instant::now();
        let handle = SrsHandle {
            params,
            _in_use: Arc::clone(&entry.in_use),
            load_time: started.elapsed(),
        };
        self.evict_under_pressure(circuit_id);
        Ok(handle)
    }

    /// Loads `circuit_id` if not resident; returns whether it already was and
    /// how long the load took.
    pub fn preload(&self, circuit_id: &str) -> Result<(bool, Duration), EngineError> {
        let already = self.is_resident(circuit_id);
        let handle = self.acquire(circuit_id)?;
        Ok((already, handle.load_time))
    }

    /// Checks that `circuit_id`'s parameters can be had (resident, on disk,
    /// or a synthetic circuit's, generated on demand), so a request for
    /// missing parameters is refused at submission, naming the file.
    pub fn check_available(&self, circuit_id: &str) -> Result<(), EngineError> {
        if self.is_resident(circuit_id)
            || SyntheticCircuit::parse_circuit_id(circuit_id).is_some()
            || parse_shaped_circuit_id(circuit_id).is_some()
        {
            return Ok(());
        }
        let path = self.cache.params_path(circuit_id);
        if path.exists() {
            return Ok(());
        }
        Err(EngineError::Srs(format!(
            "parameter file {} not found (set [srs] param_cache or FIL_PROOFS_PARAMETER_CACHE; \
             test-size Filecoin parameters can be generated with `cuzk-bench gen-params`)",
            path.display()
        )))
    }

    fn is_resident(&self, circuit_id: &str) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(circuit_id)
            .is_some_and(|e| e.slot.lock().unwrap_or_else(|e| e.into_inner()).is_some())
    }

    /// Drops the resident copy of `circuit_id`. Jobs using it keep their
    /// reference, so memory is freed when the last of them finishes; the
    /// reported bytes are those freed now (zero while in use).
    pub fn evict(&self, circuit_id: &str) -> (bool, u64) {
        let entry = {
            let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            match entries.get(circuit_id) {
                Some(entry) => Arc::clone(entry),
                None => return (false, 0),
            }
        };
        let mut slot = entry.slot.lock().unwrap_or_else(|e| e.into_inner());
        match slot.take() {
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
                let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
                report
                    .iter()
                    .filter(|s| s.tier == Tier::Warm && s.circuit_id != keep)
                    .min_by_key(|s| *entries[&s.circuit_id].last_used.lock().unwrap())
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

    /// Every known circuit with its tier, size and reference count.
    pub fn status(&self) -> Vec<SrsStatus> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<SrsStatus> = entries
            .iter()
            .map(|(id, entry)| {
                let resident = entry.slot.lock().unwrap_or_else(|e| e.into_inner()).is_some();
                let ref_count = (Arc::strong_count(&entry.in_use) - 1) as u32;
                let tier = match (resident, ref_count) {
                    (true, 0) => Tier::Warm,
                    (true, _) => Tier::Hot,
                    (false, _) => Tier::Cold,
                };
                SrsStatus {
                    circuit_id: id.clone(),
                    tier,
                    size_bytes: *entry.size_bytes.lock().unwrap(),
                    ref_count,
                }
            })
            .collect();
        out.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        out
    }

    /// A shaped parameter file (`cuzk-bench gen-srs`), written here first if
    /// it is missing. Its points are checked to be on the curve but not for
    /// the subgroup: at full size (430 M points) that check alone would take
    /// many minutes, and only this machine's generator writes such files.
    fn load_shaped(
        &self,
        circuit_id: &str,
        circuit: ShapedCircuit,
    ) -> Result<ProvingParameters, EngineError> {
        let path = self.cache.params_path(circuit_id);
        let shape = circuit.shape();
        if !path.exists() {
            let started = Instant::now();
            write_shaped_parameters(&shape, SHAPED_POINT_SEED, &path)
                .map_err(|e| EngineError::Srs(e.to_string()))?;
            tracing::info!(
                circuit_id,
                seconds = started.elapsed().as_secs_f64(),
                "generated shaped parameters"
            );
        }
        let params = ProvingParameters::read(&path, PointCheck::SkipSubgroup)
            .map_err(|e| EngineError::Srs(e.to_string()))?;
        let sections = [
            params.h.len(),
            params.l.len(),
            params.a.len(),
            params.b_g2.len(),
            params.vk.ic.len(),
        ];
        if sections != [shape.h, shape.l, shape.a, shape.b, shape.inputs] {
            return Err(EngineError::Srs(format!(
                "{} does not have the sections of {circuit_id}",
                path.display()
            )));
        }
        Ok(params)
    }

    fn load(&self, circuit_id: &str) -> Result<ProvingParameters, EngineError> {
        let started = Instant::now();
        let params = if let Some((constraints, inputs)) = SyntheticCircuit::parse_circuit_id(circuit_id) {
            let circuit = SyntheticCircuit::new(constraints, vec![cuzk_core::Scalar::from(0u64); inputs], 0)
                .map_err(EngineError::InvalidArgument)?;
            let (params, outcome) = self
                .cache
                .load_or_generate(circuit_id, || circuit)
                .map_err(|e| EngineError::Srs(e.to_string()))?;
            if let CacheOutcome::Generated(t) = outcome {
                tracing::info!(
                    circuit_id,
                    seconds = t.as_secs_f64(),
                    "generated synthetic parameters"
                );
            }
            params
        } else if let Some((constraints, inputs, shape_seed)) = parse_shaped_circuit_id(circuit_id) {
            self.load_shaped(circuit_id, ShapedCircuit::new(constraints, inputs, shape_seed))?
        } else {
            let path = self.cache.params_path(circuit_id);
            if !path.exists() {
                return Err(EngineError::Srs(format!(
                    "no parameters for circuit {circuit_id}: {} does not exist",
                    path.display()
                )));
            }
            ProvingParameters::read(&path, PointCheck::Full).map_err(|e| EngineError::Srs(e.to_string()))?
        };
        tracing::info!(
            circuit_id,
            bytes = params.size_bytes(),
            ms = started.elapsed().as_millis() as u64,
            "SRS loaded"
        );
        Ok(params)
    }
}
