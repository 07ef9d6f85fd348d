//! Parameters generated for a circuit and cached on disk by circuit id.
//!
//! Generation uses bellperson's generator with an RNG seeded from the circuit
//! id, so the same id gives byte-identical files on every machine. These are
//! test parameters: their toxic waste is reproducible, so they must never
//! secure anything real.

use crate::params::{write_vk_file, ParamsError, PointCheck, ProvingParameters};
use bellperson::{groth16::generate_random_parameters, Circuit, SynthesisError};
use blstrs::{Bls12, Scalar};
use rand::SeedableRng;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Errors of the cache.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// A file could not be read or written.
    #[error(transparent)]
    Params(#[from] ParamsError),
    /// The cache directory could not be created.
    #[error("cannot create parameter cache {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// bellperson's generator failed.
    #[error("generating parameters for {circuit_id}: {source}")]
    Generate {
        /// The circuit.
        circuit_id: String,
        /// Why.
        source: SynthesisError,
    },
    /// Circuit ids become file names, so they are restricted.
    #[error("invalid circuit id {0:?}: use letters, digits, '-', '_' and '.'")]
    BadId(String),
}

/// How a lookup was satisfied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Read from the cache directory.
    Loaded(Duration),
    /// Generated now (and written to the directory).
    Generated(Duration),
}

/// A directory of `<circuit id>.params` / `.vk` files. Keeping parameters
/// resident in memory is the caller's business (the engine's SRS manager).
#[derive(Clone, Debug)]
pub struct ParameterCache {
    dir: PathBuf,
    /// One lock per circuit id being read or generated, so concurrent
    /// callers for one id generate it once while other ids go on: a large
    /// generation must not hold up a small read. (Across processes the
    /// temporary-file-and-rename write keeps readers safe; both would write
    /// identical bytes.)
    generating: Arc<Mutex<HashMap<String, Arc<Mutex<()>>>>>,
}

impl ParameterCache {
    /// A cache in `dir`, created if missing.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, CacheError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|source| CacheError::Dir {
            path: dir.clone(),
            source,
        })?;
        Ok(Self {
            dir,
            generating: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of the `.params` file for `circuit_id`.
    pub fn params_path(&self, circuit_id: &str) -> PathBuf {
        self.dir.join(format!("{circuit_id}.params"))
    }

    /// The parameters of `circuit_id`: read from the directory, or generated
    /// from `circuit()` and written there.
    pub fn load_or_generate<C: Circuit<Scalar>>(
        &self,
        circuit_id: &str,
        circuit: impl FnOnce() -> C,
    ) -> Result<(ProvingParameters, CacheOutcome), CacheError> {
        if circuit_id.is_empty()
            || !circuit_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(CacheError::BadId(circuit_id.to_string()));
        }
        let id_lock = Arc::clone(
            crate::sync::lock(&self.generating)
                .entry(circuit_id.to_string())
                .or_default(),
        );
        let result = {
            let _generating = crate::sync::lock(&id_lock);
            self.load_or_generate_locked(circuit_id, circuit)
        };
        // The last caller for this id takes its lock out of the map, so the
        // map holds only ids in progress.
        let mut locks = crate::sync::lock(&self.generating);
        drop(id_lock);
        if locks.get(circuit_id).is_some_and(|l| Arc::strong_count(l) == 1) {
            locks.remove(circuit_id);
        }
        result
    }

    fn load_or_generate_locked<C: Circuit<Scalar>>(
        &self,
        circuit_id: &str,
        circuit: impl FnOnce() -> C,
    ) -> Result<(ProvingParameters, CacheOutcome), CacheError> {
        let path = self.params_path(circuit_id);
        let started = Instant::now();
        // Files in the cache were written by this code; skip the subgroup
        // checks (points are still checked to be on the curve). One that
        // does not read (a crash mid-write elsewhere, disk corruption) is
        // generated again: generation is deterministic in the id, so the
        // new file has the bytes the old one should have had.
        let cached = if path.exists() {
            match ProvingParameters::read(&path, PointCheck::SkipSubgroup) {
                Ok(params) => Some(params),
                Err(e) => {
                    tracing::warn!(circuit_id, error = %e, "cached parameters unreadable; generating them again");
                    let _ = std::fs::remove_file(&path);
                    let _ = std::fs::remove_file(path.with_extension("vk"));
                    None
                }
            }
        } else {
            None
        };
        let (params, outcome) = if let Some(params) = cached {
            (params, CacheOutcome::Loaded(started.elapsed()))
        } else {
            tracing::info!(circuit_id, path = %path.display(), "generating parameters");
            let mut rng = rand_chacha::ChaCha20Rng::from_seed(seed_for(circuit_id));
            let generated =
                generate_random_parameters::<Bls12, _, _>(circuit(), &mut rng).map_err(|source| {
                    CacheError::Generate {
                        circuit_id: circuit_id.to_string(),
                        source,
                    }
                })?;
            let params = ProvingParameters::from_bellperson(generated, path.clone());
            params.write(&path)?;
            write_vk_file(&params.vk, &path.with_extension("vk"))?;
            (params, CacheOutcome::Generated(started.elapsed()))
        };
        Ok((params, outcome))
    }
}

/// A 32-byte seed from the circuit id (FNV-1a, spread over four lanes).
fn seed_for(circuit_id: &str) -> [u8; 32] {
    let mut seed = [0u8; 32];
    for (lane, chunk) in seed.chunks_mut(8).enumerate() {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ lane as u64;
        for byte in circuit_id.bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        chunk.copy_from_slice(&hash.to_le_bytes());
    }
    seed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SyntheticCircuit;
    use std::sync::mpsc;

    fn circuit(constraints: usize) -> SyntheticCircuit {
        SyntheticCircuit::new(constraints, vec![Scalar::from(0u64); 2], 0).unwrap()
    }

    /// Regression (issue 34.2): one cache-wide lock, held for the whole
    /// read or generation, made a tiny load wait 13.3 s behind a large
    /// generation. A generation held open here must not stop another id.
    #[test]
    fn a_generation_in_progress_does_not_block_another_circuit() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ParameterCache::new(dir.path()).unwrap();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel::<()>();
        let slow = {
            let cache = cache.clone();
            std::thread::spawn(move || {
                cache.load_or_generate("synthetic-v1-n64-i2", || {
                    started_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    circuit(64)
                })
            })
        };
        started_rx.recv().unwrap(); // the slow generation holds its id now
        let (done_tx, done_rx) = mpsc::channel();
        {
            let cache = cache.clone();
            std::thread::spawn(move || {
                let outcome = cache.load_or_generate("synthetic-v1-n32-i2", || circuit(32));
                done_tx
                    .send(outcome.map(|(_, outcome)| outcome).map_err(|e| e.to_string()))
                    .unwrap();
            });
        }
        let other = done_rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a second circuit waited for another circuit's generation");
        assert!(matches!(other, Ok(CacheOutcome::Generated(_))), "{other:?}");
        release_tx.send(()).unwrap();
        let (_, outcome) = slow.join().unwrap().unwrap();
        assert!(matches!(outcome, CacheOutcome::Generated(_)));
        // One id is still generated once by concurrent callers, and the
        // lock map holds nothing once they are done.
        let (_, again) = cache
            .load_or_generate("synthetic-v1-n64-i2", || circuit(64))
            .unwrap();
        assert!(matches!(again, CacheOutcome::Loaded(_)));
        assert!(crate::sync::lock(&cache.generating).is_empty());
    }
}
