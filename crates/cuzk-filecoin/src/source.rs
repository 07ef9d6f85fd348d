//! The Filecoin proof types as the engine's [`PlanSource`]: every request
//! becomes a Filecoin plan ([`crate::plan_for`]), and the official
//! parameter files (`v28-<circuit id>.params`) are read from one directory.

use crate::params::is_official_circuit_id;
use crate::plans::PlanOptions;
use crate::trust::{Digests, Trust, TrustedFile};
use cuzk_core::{
    ParameterFile, ParameterRecipe, PlanError, PlanSource, PointCheck, Prepared, ProofPlan, ProofRequest,
    R1csCache, SpareValues,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The most host memory kept in spare witness vectors
/// ([`PlanOptions::spare_values`]): room for two 32 GiB WindowPoSt
/// partitions' wide values, the one witness mostly wide. The engine's
/// budget counts what is kept ([`PlanSource::held_bytes`]).
pub const SPARE_WITNESS_BYTES: u64 = 8 << 30;

/// The plan source of the Filecoin proof types: the last, catch-all source
/// (it claims every request, refusing those that are no Filecoin proof), and
/// the one that names the official parameter files in `param_dir`.
#[derive(Clone, Debug)]
pub struct FilecoinPlans {
    param_dir: PathBuf,
    trust: Arc<Trust>,
    options: PlanOptions,
}

impl FilecoinPlans {
    /// The source whose parameters are the files of `param_dir` (the
    /// directory [`crate::settings::init_with`] returns, where
    /// filecoin-proofs' verifiers read the `.vk` files too). Official files
    /// that match their published digests are read trusted ([`crate::trust`]).
    pub fn new(param_dir: PathBuf) -> Self {
        Self {
            param_dir,
            trust: Arc::new(Trust::new(Digests::published(), false)),
            options: PlanOptions {
                r1cs_cache: Some(Arc::default()),
                spare_values: Some(SpareValues::new(SPARE_WITNESS_BYTES)),
                ..PlanOptions::default()
            },
        }
    }

    /// `allow`: plan requests whose vanilla proofs do not verify as
    /// unverifiable (proved, their final verification skipped, a warning
    /// logged) instead of refusing them, for benchmarks on real-structure
    /// inputs (`[benchmark] allow_unverifiable`; see
    /// [`PlanOptions::allow_unverifiable`]). Off unless set.
    /// Stand-in parameter files generated on this machine are then read
    /// trusted by their generation records ([`crate::trust`]).
    pub fn with_allow_unverifiable(self, allow: bool) -> Self {
        let trust = Arc::new(Trust::new(self.trust_digests(), self.trust.full()).honouring_generated(allow));
        Self {
            options: PlanOptions {
                allow_unverifiable: allow,
                ..self.options
            },
            trust,
            ..self
        }
    }

    /// The comparison switches of this process's environment
    /// ([`PlanOptions::with_environment`]), for a binary at its start.
    pub fn with_environment(self) -> Self {
        Self {
            options: self.options.with_environment(),
            ..self
        }
    }

    /// `gadgets`: every witness through the circuit's gadgets, native
    /// writers left aside (see [`PlanOptions::gadget_witness`]).
    pub fn with_gadget_witness(self, gadgets: bool) -> Self {
        Self {
            options: PlanOptions {
                gadget_witness: gadgets,
                ..self.options
            },
            ..self
        }
    }

    /// Keeps the circuits' compiled R1CS files in `store` (see
    /// [`PlanOptions::r1cs_store`]).
    pub fn with_r1cs_store(self, store: Arc<cuzk_core::R1csStore>) -> Self {
        Self {
            options: PlanOptions {
                r1cs_store: Some(store),
                ..self.options
            },
            ..self
        }
    }

    /// Its plans' compiled R1CS kept in `r1cs` (made by the daemon's
    /// setup, shared with its other sources) instead of a cache of its own.
    pub fn with_r1cs_cache(self, r1cs: Arc<R1csCache>) -> Self {
        Self {
            options: PlanOptions {
                r1cs_cache: Some(r1cs),
                ..self.options
            },
            ..self
        }
    }

    /// Native witnesses' wide values kept in `spares` between partitions
    /// (`None`: none kept); by default [`SPARE_WITNESS_BYTES`] of them.
    pub fn with_spare_values(self, spares: Option<Arc<SpareValues>>) -> Self {
        Self {
            options: PlanOptions {
                spare_values: spares,
                ..self.options
            },
            ..self
        }
    }

    /// `on_device`: PoSt witnesses leave their paths' values to the
    /// provers' GPUs (see [`PlanOptions::paths_on_device`]); the daemon's
    /// setup sets it when its provers are GPUs with the witness path.
    pub fn with_paths_on_device(self, on_device: bool) -> Self {
        Self {
            options: PlanOptions {
                paths_on_device: on_device,
                ..self.options
            },
            ..self
        }
    }

    /// How this source plans requests.
    pub fn options(&self) -> &PlanOptions {
        &self.options
    }

    /// `full`: read every file with the full point check, published digest
    /// or not (`[srs] verify_points = "full"`).
    pub fn with_full_point_check(self, full: bool) -> Self {
        let digests = self.trust_digests();
        let generated = self.trust.honours_generated();
        Self {
            trust: Arc::new(Trust::new(digests, full).honouring_generated(generated)),
            ..self
        }
    }

    /// Judges official files by `digests` instead of the published ones
    /// (tests; another release's table).
    pub fn with_digests(self, digests: Digests) -> Self {
        let full = self.trust.full();
        let generated = self.trust.honours_generated();
        Self {
            trust: Arc::new(Trust::new(digests, full).honouring_generated(generated)),
            ..self
        }
    }

    /// What this source has learnt of its files' digests.
    pub fn trust(&self) -> &Arc<Trust> {
        &self.trust
    }

    fn trust_digests(&self) -> Digests {
        self.trust.digests().clone()
    }

    /// The parameter directory.
    pub fn param_dir(&self) -> &Path {
        &self.param_dir
    }
}

impl PlanSource for FilecoinPlans {
    fn name(&self) -> &'static str {
        "filecoin"
    }

    /// Partitions whose witness was written natively, and native witnesses
    /// that failed their self-check and came from the gadgets instead
    /// (each also a WARN line).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("native_witness", crate::plans::native_witnesses()),
            ("native_witness_fallback", crate::plans::native_fallbacks()),
        ]
    }

    fn r1cs_cache(&self) -> Option<Arc<R1csCache>> {
        self.options.r1cs_cache.clone()
    }

    /// The spare witness vectors ([`PlanOptions::spare_values`]).
    fn held_bytes(&self) -> u64 {
        self.options
            .spare_values
            .as_ref()
            .map_or(0, |spares| spares.bytes())
    }

    fn release(&self, idle: Duration) -> u64 {
        self.options
            .spare_values
            .as_ref()
            .map_or(0, |spares| spares.release(idle))
    }

    /// The circuit's compiled R1CS read from its file into the source's
    /// cache ([`PlanOptions::r1cs_store`]), so the first request does not
    /// wait for it. Without a usable file the R1CS is recorded (by units)
    /// at the first request and its file written then: a preload readies it
    /// from the next start on.
    fn prepare(&self, circuit_id: &str) -> Option<Result<Prepared, PlanError>> {
        let Some(store) = &self.options.r1cs_store else {
            return Some(Ok(Prepared {
                summary: "no compiled R1CS files ([srs] r1cs_cache = \"off\"): \
                          the R1CS is recorded at the first request"
                    .into(),
                r1cs: None,
            }));
        };
        let Some(cache) = &self.options.r1cs_cache else {
            return None;
        };
        let loaded = cache.get_or_load(circuit_id, store, crate::plans::CIRCUIT_SHAPE, || Err(()));
        Some(Ok(match loaded {
            Ok(r1cs) => {
                // A PoSt witness is mostly wide values (its Poseidon
                // hashes): room for them made now, not at the first
                // request, when the spares allow it (WindowPoSt's).
                let spare = match (
                    &self.options.spare_values,
                    crate::params::is_post_circuit_id(circuit_id),
                ) {
                    (Some(spares), true) => spares.reserve(r1cs.num_aux()),
                    _ => 0,
                };
                Prepared {
                    summary: format!(
                        "compiled R1CS ready ({} constraints, {} MiB){}",
                        r1cs.num_constraints(),
                        r1cs.memory_bytes() >> 20,
                        match spare {
                            0 => String::new(),
                            bytes => format!(", {} MiB of witness vector made ahead", bytes >> 20),
                        }
                    ),
                    r1cs: Some(r1cs),
                }
            }
            Err(()) => Prepared {
                summary:
                    "no usable compiled R1CS file yet: recorded at the first request, its file written then"
                        .into(),
                r1cs: None,
            },
        }))
    }

    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>> {
        Some(crate::plan_with(request, self.options.clone()).map(|planned| planned.plan))
    }

    /// `param_dir/<id>.params`: an official file matching its published
    /// digest is read trusted, any other with full point checks. This is the
    /// catch-all source, so it claims every id that is a plain file name
    /// (letters, digits, `-`, `_`, `.`; no `..`), official or not, as the
    /// daemon always has; an id that is not (a path separator, `..`,
    /// anything else) is refused whoever it would be for, so no id reaches
    /// a file outside the directory.
    fn parameters(&self, circuit_id: &str) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>> {
        let plain = !circuit_id.is_empty()
            && circuit_id.len() <= 255
            && !circuit_id.contains("..")
            && circuit_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !plain {
            return Some(Err(PlanError::InvalidArgument(format!(
                "circuit id {:?} is not a file name",
                circuit_id.chars().take(80).collect::<String>()
            ))));
        }
        // Curio's short names are the official files under another name.
        let official = match crate::names::official_id(circuit_id) {
            Some(Ok(id)) => Some(id),
            Some(Err(e)) => return Some(Err(e)),
            None => None,
        };
        let file_id = official.as_deref().unwrap_or(circuit_id);
        let path = self.param_dir.join(format!("{file_id}.params"));
        let is_official = is_official_circuit_id(file_id);
        let hint = if is_official {
            "(set [srs] param_cache or FIL_PROOFS_PARAMETER_CACHE to the directory of the official \
             parameter files; test-size ones can be generated with `cuzk-bench gen-params`)"
        } else {
            "(set [srs] param_cache or FIL_PROOFS_PARAMETER_CACHE)"
        };
        let file = ParameterFile::new(path, PointCheck::Full).with_hint(hint);
        let file = match official {
            Some(id) => file.kept_as(id),
            None => file,
        };
        // Official files are judged by their published digests (trusted when
        // they match, full check otherwise); others get the full check.
        if is_official {
            Some(Ok(Box::new(TrustedFile::new(file, self.trust.clone()))))
        } else {
            Some(Ok(Box::new(file)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POREP_32GIB: &str = "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820";

    fn path_of(source: &FilecoinPlans, id: &str) -> Result<PathBuf, PlanError> {
        let recipe = source.parameters(id).expect("claimed")?;
        let file = format!("{recipe:?}");
        assert!(file.contains("Full"), "{file}");
        Ok(source.param_dir().join(format!("{id}.params")))
    }

    #[test]
    fn official_ids_are_files_of_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let source = FilecoinPlans::new(dir.path().to_path_buf());
        assert_eq!(source.name(), "filecoin");
        let path = path_of(&source, POREP_32GIB).unwrap();
        assert_eq!(path, dir.path().join(format!("{POREP_32GIB}.params")));
        // Not there: the recipe says so, naming the file.
        let recipe = source.parameters(POREP_32GIB).unwrap().unwrap();
        match recipe.check_available() {
            Err(PlanError::Parameters(m)) => assert!(m.contains(POREP_32GIB), "{m}"),
            other => panic!("{other:?}"),
        }
        std::fs::write(&path, b"").unwrap();
        recipe.check_available().unwrap();
    }

    #[test]
    fn other_plain_ids_are_files_of_the_directory_too() {
        // The catch-all: any plain file name is a file of the directory, as
        // the daemon always had it (Curio's short names map there too).
        let source = FilecoinPlans::new(PathBuf::from("/params"));
        for id in [
            "porep-1t",
            "v28-unknown-circuit",
            "V28-STACKED-PROOF-OF-REPLICATION-",
        ] {
            let recipe = source.parameters(id).expect("claimed").unwrap();
            match recipe.check_available() {
                Err(PlanError::Parameters(m)) => {
                    assert!(m.contains(&format!("{id}.params")), "{m}");
                    assert!(!m.contains("/params/"), "no server path in errors: {m}");
                    assert!(!m.contains("gen-params"), "only official ids get that hint: {m}");
                }
                other => panic!("{id}: {other:?}"),
            }
        }
        match source.parameters(POREP_32GIB).unwrap().unwrap().check_available() {
            Err(PlanError::Parameters(m)) => assert!(m.contains("gen-params"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    /// Issue 12.5: Curio's names (the reference's example config preloads
    /// `porep-32g`) are the official files, kept under the official id.
    #[test]
    fn curio_names_are_the_official_files() {
        let source = FilecoinPlans::new(PathBuf::from("/params"));
        let recipe = source.parameters("porep-32g").unwrap().unwrap();
        assert_eq!(recipe.canonical_id(), Some(POREP_32GIB));
        match recipe.check_available() {
            Err(PlanError::Parameters(m)) => assert!(m.contains(&format!("{POREP_32GIB}.params")), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ids_that_are_paths_are_refused() {
        let source = FilecoinPlans::new(PathBuf::from("/params"));
        for id in [
            "../v28-stacked-proof-of-replication-x",
            "v28-proof-of-spacetime-fallback-../../etc/passwd",
            "v28-empty-sector-update-a/b",
            "/etc/passwd",
            "a\\b",
            "..",
            "",
            "a b",
        ] {
            match source.parameters(id) {
                Some(Err(PlanError::InvalidArgument(m))) => assert!(m.contains("not a file name"), "{m}"),
                other => panic!("{id:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn every_request_is_claimed_and_bad_ones_refused() {
        let source = FilecoinPlans::new(PathBuf::from("/params"));
        let request = ProofRequest {
            request_id: String::new(),
            kind: cuzk_core::ProofKind::SnapDealsUpdate,
            registered_proof: 9000,
            priority: None,
            vanilla_proof: Vec::new(),
            vanilla_proofs: Vec::new(),
            sector: Default::default(),
        };
        match source.plan(&request) {
            Some(Err(PlanError::InvalidArgument(m))) => {
                assert!(m.contains("unknown update registered_proof 9000"), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }
}
