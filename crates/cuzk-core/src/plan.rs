//! How a proof request becomes partitions.
//!
//! A [`PlanSource`] (the Filecoin proof types, the benchmark circuits) turns
//! a [`ProofRequest`] into a [`ProofPlan`], and names how the parameters of
//! its circuit ids are obtained ([`ParameterRecipe`]). The engine schedules
//! by the plan and loads what the recipe says; it knows no proof type.

use crate::params::{PointCheck, ProvingParameters};
use crate::r1cs::CompiledR1cs;
use crate::request::ProofRequest;
use crate::{Bls12, PartitionData, Proof, ProvingAssignment, Randomness, Scalar, Verifier};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes one partition of `constraints` constraints and `aux` variables
/// holds while in flight: a/b/c padded to the domain, the assignments, and
/// the byte copies the MSMs read (plus a quarter for bookkeeping).
pub fn partition_bytes(constraints: usize, aux: usize) -> u64 {
    let domain = constraints.next_power_of_two() as u64;
    let scalar = 32u64;
    let abc = 3 * domain * scalar;
    let witness = aux as u64 * (scalar * 2 + 1);
    (abc + witness) * 5 / 4
}

/// Why a request could not be planned, synthesised or verified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The request is malformed or out of bounds.
    #[error("{0}")]
    InvalidArgument(String),
    /// The proof type is not served.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The parameters cannot be had (missing file, unreadable, wrong circuit).
    #[error("{0}")]
    Parameters(String),
    /// A partition's witness could not be computed.
    #[error("synthesis failed: {0}")]
    Synthesis(String),
    /// The assembled proof did not verify.
    #[error("verification failed: {0}")]
    Verification(String),
    /// A step that should not fail did.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Everything the pipeline needs to know about one proof.
pub trait ProofPlan: Send + Sync + std::fmt::Debug {
    /// Key of the parameters (SRS) the partitions are proved with; the plan
    /// source that made this plan knows how to obtain them.
    fn circuit_id(&self) -> String;
    /// Number of partitions, each a separate Groth16 proof.
    fn partitions(&self) -> usize;
    /// Upper estimate of the host memory one partition holds from the start
    /// of its synthesis to the end of `prove_start`.
    fn partition_bytes(&self) -> u64;
    /// Builds partition `index`'s proving assignment.
    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, PlanError>;
    /// Upper estimate of the host memory one partition holds in flight
    /// when only its witness is synthesised ([`synthesize_witness`]);
    /// `None` for plans without a witness-only form.
    ///
    /// [`synthesize_witness`]: ProofPlan::synthesize_witness
    fn witness_bytes(&self) -> Option<u64> {
        None
    }
    /// Partition `index` for a backend that computes a, b, c itself: its
    /// witness with the circuit's compiled R1CS. By default (plans without
    /// a compiled R1CS) the whole assignment.
    fn synthesize_witness(&self, index: usize) -> Result<PartitionData, PlanError> {
        Ok(PartitionData::Evaluated(self.synthesize(index)?))
    }
    /// Public inputs of partition `index`, for verification.
    fn public_inputs(&self, index: usize) -> Vec<Scalar>;

    /// The blinding factors r, s of partition `index`: fresh secure
    /// randomness for every real proof. Only benchmark plans fix them, so
    /// that another prover's output can be compared byte for byte.
    fn randomness(&self, _index: usize) -> Randomness {
        Randomness::Secure
    }

    /// Why this plan's proof cannot verify, for a benchmark request the
    /// plan source accepted as unverifiable (Filecoin's `[benchmark]
    /// allow_unverifiable`: real-structure inputs with random values).
    /// `None`, the default, for every production request: the engine then
    /// verifies before reporting. With a reason the engine skips
    /// verification and reports COMPLETED marked `UNVERIFIED: <reason>`.
    fn unverifiable(&self) -> Option<String> {
        None
    }

    /// Checks the whole proof before it is reported: by default every
    /// partition against its public inputs with bellperson's verifier.
    /// Proof types with their own verifier (filecoin-proofs') add it.
    fn verify(&self, params: &ProvingParameters, proofs: &[Proof<Bls12>]) -> Result<(), PlanError> {
        verify_partitions(params, proofs, |index| self.public_inputs(index))
    }
}

/// Every partition proof against its public inputs, with bellperson's
/// verifier (the default [`ProofPlan::verify`]).
pub fn verify_partitions(
    params: &ProvingParameters,
    proofs: &[Proof<Bls12>],
    public_inputs: impl Fn(usize) -> Vec<Scalar>,
) -> Result<(), PlanError> {
    let verifier = Verifier::new(&params.vk);
    for (index, proof) in proofs.iter().enumerate() {
        match verifier.verify(proof, &public_inputs(index)) {
            Ok(true) => {}
            Ok(false) => {
                return Err(PlanError::Verification(format!(
                    "partition {index} proof failed verification"
                )))
            }
            Err(e) => {
                return Err(PlanError::Verification(format!(
                    "partition {index} verification error: {e}"
                )))
            }
        }
    }
    Ok(())
}

/// How one circuit's parameters are obtained: read from a file, or
/// generated on first use (benchmark circuits).
pub trait ParameterRecipe: Send + Sync + std::fmt::Debug {
    /// Whether the parameters can be had without loading them (a present
    /// file, or a generator), checked at submission so that a request for
    /// missing parameters is refused then, naming what is missing.
    fn check_available(&self) -> Result<(), PlanError>;
    /// Reads (or generates, then reads) the parameters.
    fn load(&self) -> Result<ProvingParameters, PlanError>;
    /// Upper estimate of the host memory [`load`](Self::load) takes: the
    /// parameters once resident, or the peak of reading or generating them
    /// when that is more. Admission refuses a circuit whose estimate does
    /// not fit beside the parameters already resident, so that one request
    /// cannot exhaust the host; it must never be an underestimate.
    fn memory_bytes(&self) -> u64;
    /// The id these parameters are kept under when the id asked for is an
    /// alias (Curio's `porep-32g` for the official circuit id), so that
    /// both names share one resident copy; `None` keeps the asked id.
    fn canonical_id(&self) -> Option<&str> {
        None
    }
}

/// Turns requests into plans and circuit ids into parameter recipes; one
/// per family of proof types. The engine asks each source in turn.
pub trait PlanSource: Send + Sync + std::fmt::Debug {
    /// Short name, for logs.
    fn name(&self) -> &'static str;
    /// The plan for `request`, or `None` when the request is not this
    /// source's (another source may serve it).
    fn plan(&self, request: &ProofRequest) -> Option<Result<Box<dyn ProofPlan>, PlanError>>;
    /// How `circuit_id`'s parameters are obtained, `None` when the id is
    /// not this source's, or an error when it is this source's but can
    /// never be served (out of bounds, malformed).
    fn parameters(&self, circuit_id: &str) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>>;
    /// The source's own event counts since the process started (monotonic),
    /// exported by the engine as `cuzk_plan_source_events_total{source,
    /// event}`: the Filecoin source's native witnesses and their fallbacks
    /// to the gadgets, say. None by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// Makes ready what the source keeps per circuit besides its
    /// parameters (the Filecoin source: the compiled R1CS, read from its
    /// file), for a preload; `circuit_id` is the canonical id. `None` when
    /// the id is not this source's, else what was made ready or why nothing
    /// was. Nothing by default.
    fn prepare(&self, _circuit_id: &str) -> Option<Result<Prepared, PlanError>> {
        None
    }
    /// The cache this source's plans keep their circuits' compiled R1CS
    /// in: the engine counts what it holds in the memory budget, reports
    /// it in its status and evicts it (idle, or with EvictSRS of its
    /// circuit). Sources may share one. `None` (the default): the source's
    /// plans keep no compiled R1CS.
    fn r1cs_cache(&self) -> Option<Arc<crate::R1csCache>> {
        None
    }
    /// Host bytes the source keeps between partitions, outside any
    /// partition's memory permit (the Filecoin source: spare witness
    /// vectors, [`crate::SpareValues`]); the engine's budget counts them.
    /// None by default.
    fn held_bytes(&self) -> u64 {
        0
    }
    /// Frees what the source keeps that went unused for `idle` (everything
    /// for `Duration::ZERO`: a partition waits for the memory); the bytes
    /// freed. Nothing by default.
    fn release(&self, _idle: std::time::Duration) -> u64 {
        0
    }
}

/// What a source made ready of a circuit at a preload.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// What was made ready, or why nothing was (a line for the log).
    pub summary: String,
    /// The circuit's compiled R1CS, when the source had it: the engine
    /// hands it to the backends with the parameters, so a device that
    /// evaluates a, b, c itself holds it before the first partition.
    pub r1cs: Option<Arc<CompiledR1cs>>,
}

/// Parameters read from a `.params` file.
#[derive(Debug, Clone)]
pub struct ParameterFile {
    /// The file.
    pub path: PathBuf,
    /// How much of each point is checked while reading.
    pub check: PointCheck,
    /// Said after "not found" when the file is missing (how to get it).
    pub missing_hint: String,
    /// The id the parameters are kept under (see
    /// [`ParameterRecipe::canonical_id`]); `None`: the id asked for.
    pub canonical_id: Option<String>,
}

impl ParameterFile {
    /// `path`, read with `check`.
    pub fn new(path: impl AsRef<Path>, check: PointCheck) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            check,
            missing_hint: String::new(),
            canonical_id: None,
        }
    }

    /// The same, kept under `id` whatever alias asked for it.
    pub fn kept_as(mut self, id: impl Into<String>) -> Self {
        self.canonical_id = Some(id.into());
        self
    }

    /// The same, saying `hint` when the file is missing.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.missing_hint = hint.into();
        self
    }
}

impl ParameterRecipe for ParameterFile {
    fn check_available(&self) -> Result<(), PlanError> {
        if self.path.exists() {
            Ok(())
        } else {
            // The file's name, not its path: errors go to clients, and the
            // server's directory layout is none of theirs.
            Err(PlanError::Parameters(format!(
                "parameter file {} not found in the parameter directory{}{}",
                self.path.file_name().map_or_else(
                    || self.path.display().to_string(),
                    |n| n.to_string_lossy().into_owned()
                ),
                if self.missing_hint.is_empty() { "" } else { " " },
                self.missing_hint
            )))
        }
    }

    fn canonical_id(&self) -> Option<&str> {
        self.canonical_id.as_deref()
    }

    /// The file's length: points are held as they are stored
    /// (uncompressed), and read section by section.
    fn memory_bytes(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |m| m.len())
    }

    fn load(&self) -> Result<ProvingParameters, PlanError> {
        self.check_available()?;
        ProvingParameters::read(&self.path, self.check)
            .map_err(|e| PlanError::Parameters(without_directory(&e.to_string(), &self.path)))
    }
}

/// `message` with `path`'s directory taken out: errors go to clients, and
/// the server's directory layout is none of theirs.
pub fn without_directory(message: &str, path: &Path) -> String {
    match path.parent().map(|d| d.display().to_string()) {
        Some(dir) if !dir.is_empty() => message.replace(&format!("{dir}/"), ""),
        _ => message.to_string(),
    }
}
