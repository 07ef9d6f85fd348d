//! The compiled R1CS of every circuit id in use, shared by the plans of
//! the sources it is handed to.
//!
//! A circuit id's constraint system never changes (its parameters are
//! generated from it), so the first partition of an id records it
//! ([`CompiledR1cs::record`]) and every later partition and proof reuses
//! it. The cache knows what it holds ([`R1csCache::memory_bytes`], counted
//! by the engine's memory budget) and when each id was last used, so an
//! idle circuit's R1CS is evicted like idle parameters
//! ([`R1csCache::evict_idle`], [`R1csCache::evict`]); a partition that
//! still holds one keeps it alive until it finishes.

use crate::r1cs::CompiledR1cs;
use crate::r1cs_store::R1csStore;
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One circuit id's entry: its R1CS once recorded, and its last use.
#[derive(Debug, Default)]
struct Slot {
    r1cs: Option<Arc<CompiledR1cs>>,
    last_used: Option<Instant>,
}

/// A circuit id's compiled R1CS as [`R1csCache::snapshot`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedR1cs {
    /// The circuit id.
    pub circuit_id: String,
    /// Host bytes held (`CompiledR1cs::memory_bytes`).
    pub bytes: u64,
    /// Since its last use.
    pub idle: Duration,
}

/// See the module documentation. The daemon's setup makes one and hands
/// it to its plan sources, which give it to their plans; the engine finds
/// it through the sources ([`crate::PlanSource::r1cs_cache`]).
#[derive(Debug, Default)]
pub struct R1csCache {
    /// One slot per id. The first partition of an id records into its slot
    /// while the others of that id wait on the slot's lock rather than
    /// record it again; other ids are not held up (the map's lock is held
    /// only to find the slot).
    slots: Mutex<HashMap<String, Arc<Mutex<Slot>>>>,
}

impl R1csCache {
    /// The compiled R1CS of `circuit_id`, recorded by `record` if not held.
    pub fn get_or_record<E>(
        &self,
        circuit_id: &str,
        record: impl FnOnce() -> Result<CompiledR1cs, E>,
    ) -> Result<Arc<CompiledR1cs>, E> {
        let slot = Arc::clone(lock(&self.slots).entry(circuit_id.to_owned()).or_default());
        let mut slot = lock(&slot);
        slot.last_used = Some(Instant::now());
        if let Some(r1cs) = &slot.r1cs {
            return Ok(Arc::clone(r1cs));
        }
        let started = Instant::now();
        let r1cs = Arc::new(record()?);
        tracing::info!(
            circuit_id,
            constraints = r1cs.num_constraints(),
            nonzeros = r1cs.nonzeros(),
            bytes = r1cs.memory_bytes(),
            ms = started.elapsed().as_millis() as u64,
            "compiled R1CS ready (recorded, or read from its file)"
        );
        slot.r1cs = Some(Arc::clone(&r1cs));
        Ok(r1cs)
    }

    /// [`get_or_record`](Self::get_or_record) through `store`: an R1CS
    /// not held is read from its file there when one can be used, else
    /// recorded by `record` and its file written (on a thread of its own:
    /// the caller does not wait for the disk). `shape` names what shapes
    /// the circuit (the versions of the crates that build it): a file of
    /// another shape is stale.
    pub fn get_or_load<E>(
        &self,
        circuit_id: &str,
        store: &R1csStore,
        shape: &str,
        record: impl FnOnce() -> Result<CompiledR1cs, E>,
    ) -> Result<Arc<CompiledR1cs>, E> {
        let mut recorded = false;
        let r1cs = self.get_or_record(circuit_id, || match store.load(circuit_id, shape) {
            Some(r1cs) => Ok(r1cs),
            None => {
                recorded = true;
                record()
            }
        })?;
        if recorded {
            store.save_in_background(circuit_id, shape, Arc::clone(&r1cs));
        }
        Ok(r1cs)
    }

    /// Host bytes of every R1CS held.
    pub fn memory_bytes(&self) -> u64 {
        self.snapshot().iter().map(|entry| entry.bytes).sum()
    }

    /// Every R1CS held, by circuit id.
    pub fn snapshot(&self) -> Vec<CachedR1cs> {
        let slots: Vec<(String, Arc<Mutex<Slot>>)> = lock(&self.slots)
            .iter()
            .map(|(id, slot)| (id.clone(), Arc::clone(slot)))
            .collect();
        let mut out: Vec<CachedR1cs> = slots
            .into_iter()
            .filter_map(|(circuit_id, slot)| {
                // A slot being recorded is skipped rather than waited for:
                // status must answer at once.
                let slot = slot.try_lock().ok()?;
                let r1cs = slot.r1cs.as_ref()?;
                Some(CachedR1cs {
                    circuit_id,
                    bytes: r1cs.memory_bytes() as u64,
                    idle: slot.last_used.map_or(Duration::ZERO, |t| t.elapsed()),
                })
            })
            .collect();
        out.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        out
    }

    /// Drops `circuit_id`'s R1CS; the bytes it held (0 when none). A
    /// partition still holding it keeps it until it finishes.
    pub fn evict(&self, circuit_id: &str) -> u64 {
        let slot = lock(&self.slots).remove(circuit_id);
        let Some(slot) = slot else { return 0 };
        let taken = lock(&slot).r1cs.take();
        taken.map_or(0, |r1cs| r1cs.memory_bytes() as u64)
    }

    /// Drops every R1CS unused for `idle`; the ids dropped.
    pub fn evict_idle(&self, idle: Duration) -> Vec<String> {
        let stale: Vec<String> = self
            .snapshot()
            .into_iter()
            .filter(|entry| entry.idle >= idle)
            .map(|entry| entry.circuit_id)
            .collect();
        for id in &stale {
            let bytes = self.evict(id);
            tracing::info!(circuit_id = %id, bytes, "idle compiled R1CS evicted");
        }
        stale
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SyntheticCircuit;
    use blstrs::Scalar;

    fn record(n: usize) -> Result<CompiledR1cs, crate::R1csError> {
        CompiledR1cs::record(SyntheticCircuit::new(n, vec![Scalar::from(1u64)], 1).unwrap())
    }

    #[test]
    fn records_once_counts_and_evicts() {
        let cache = R1csCache::default();
        let first = cache.get_or_record("x", || record(2000)).unwrap();
        let again = cache
            .get_or_record("x", || -> Result<CompiledR1cs, crate::R1csError> {
                panic!("recorded twice")
            })
            .unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        cache.get_or_record("y", || record(3000)).unwrap();
        let bytes =
            (first.memory_bytes() + cache.get_or_record("y", || record(1)).unwrap().memory_bytes()) as u64;
        assert_eq!(cache.memory_bytes(), bytes);
        assert_eq!(cache.snapshot().len(), 2);
        assert_eq!(cache.evict("x"), first.memory_bytes() as u64);
        assert_eq!(cache.evict("x"), 0);
        assert_eq!(cache.evict_idle(Duration::from_secs(3600)), Vec::<String>::new());
        assert_eq!(cache.evict_idle(Duration::ZERO), vec!["y".to_string()]);
        assert_eq!(cache.memory_bytes(), 0);
        // A failed recording keeps nothing and is retried next time.
        let failed: Result<_, &str> = cache.get_or_record("z", || Err("no"));
        assert!(failed.is_err());
        assert!(cache.get_or_record("z", || record(2000)).is_ok());
    }

    /// Issue 36: a process that recorded a circuit leaves its file; the
    /// next process (a fresh cache) reads it instead of recording.
    #[test]
    fn r1cs_recorded_once_is_read_from_its_file_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let store = R1csStore::in_dir(dir.path());
        let first = R1csCache::default()
            .get_or_load("x", &store, "shape", || record(2000))
            .unwrap();
        // The file is written on a thread of its own.
        let path = store.path("x").unwrap();
        let started = Instant::now();
        while CompiledR1cs::read_file(&path, "x", "shape").is_err() {
            assert!(started.elapsed() < Duration::from_secs(30), "no file written");
            std::thread::sleep(Duration::from_millis(10));
        }
        let restarted = R1csCache::default()
            .get_or_load(
                "x",
                &store,
                "shape",
                || -> Result<CompiledR1cs, crate::R1csError> {
                    panic!("recorded again although its file is there")
                },
            )
            .unwrap();
        assert!(*restarted == *first);
        // Another shape (the circuit crates upgraded) records again.
        let upgraded = R1csCache::default().get_or_load("x", &store, "shape 2", || record(2000));
        assert!(upgraded.is_ok());
    }
}
