//! The Filecoin proof types as partition plans: each partition's circuit is
//! the storage-proofs crate's own (built from the vanilla proof the way
//! `CompoundProof::circuit_proofs` builds it), its public inputs are the
//! crate's `generate_public_inputs`, and the whole proof is checked with
//! filecoin-proofs' verifier for the type before it is reported.
//!
//! One plan, [`FilecoinPlan`], does the work the types share (synthesis
//! through the compiled R1CS, bellperson's check of every partition, then
//! filecoin-proofs'); each type is a [`FilecoinProof`]:
//!
//! - [`porep`]: PoRep commit phase 2 ([`PorepPlan`]).
//! - [`post`]: WinningPoSt and one WindowPoSt partition ([`PostPlan`]).
//! - [`snap`]: SnapDeals empty-sector update ([`SnapPlan`]).

pub mod porep;
pub mod post;
pub mod snap;

pub use porep::{Porep, PorepPlan};
pub use post::{Post, PostPlan};
pub use snap::{Snap, SnapPlan};

use crate::request::{PorepInput, PostInput, SnapInput};
use crate::validate::{catch, PANIC_MARK};
use crate::{FilecoinError, ShapeDispatch};
use cuzk_core::{
    synthesize, Bls12, CompiledR1cs, PlanError, Proof, ProofKind, ProofPlan, ProofRequest, ProvingAssignment,
    ProvingParameters, Scalar, SizeHint,
};
use filecoin_hashers::Hasher;
use filecoin_proofs::{MerkleTreeTrait, TreeRHasher};
use std::collections::HashMap;
use std::fmt::{self, Display};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

pub(crate) type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// One Filecoin proof type, as [`FilecoinPlan`] runs it: its partitions'
/// circuits and public inputs (from storage-proofs), and filecoin-proofs'
/// verifier of the whole proof. Built from a checked request by the type's
/// plan constructor ([`PorepPlan::new`], [`PostPlan::new`],
/// [`SnapPlan::new`]), which refuses inputs that would only fail after the
/// proving work.
pub trait FilecoinProof: Send + Sync + fmt::Debug + 'static {
    /// The storage-proofs circuit of one partition.
    type Circuit: bellperson::Circuit<Scalar>;

    /// Key (and file stem) of the parameters: `v28-<identifier>`.
    fn circuit_id(&self) -> &str;
    /// Number of partitions.
    fn partitions(&self) -> usize;
    /// Upper estimate of one partition's constraints (see
    /// [`crate::constraints`]): sizes the synthesis and the in-flight bytes.
    fn constraints(&self) -> usize;
    /// Partition `index`'s circuit, as `CompoundProof::circuit_proofs`
    /// builds it.
    fn circuit(&self, index: usize) -> Result<Self::Circuit, FilecoinError>;
    /// Partition `index`'s public inputs (`CompoundProof::generate_public_inputs`).
    fn public_inputs(&self, index: usize) -> Vec<Scalar>;
    /// The whole proof (the partition proofs' bytes, concatenated) through
    /// filecoin-proofs' verifier of the type (see [`verdict`]).
    fn verify_whole(&self, proof: &[u8]) -> Result<(), FilecoinError>;
}

/// The plan of one Filecoin proof of type `P`.
pub struct FilecoinPlan<P>(P);

impl<P: FilecoinProof> FilecoinPlan<P> {
    /// The plan of `proof`.
    pub fn from_proof(proof: P) -> Self {
        Self(proof)
    }

    /// The proof type's side of the plan.
    pub fn proof(&self) -> &P {
        &self.0
    }

    /// Partition `index`'s circuit, as `CompoundProof::circuit_proofs` builds it.
    pub fn circuit(&self, index: usize) -> Result<P::Circuit, FilecoinError> {
        self.0.circuit(index)
    }
}

impl<P: FilecoinProof> fmt::Debug for FilecoinPlan<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<P: FilecoinProof> ProofPlan for FilecoinPlan<P> {
    fn circuit_id(&self) -> String {
        self.0.circuit_id().to_owned()
    }

    fn partitions(&self) -> usize {
        self.0.partitions()
    }

    fn partition_bytes(&self) -> u64 {
        in_flight_bytes(self.0.constraints())
    }

    /// The storage-proofs circuit runs under [`catch`]: a panic in it fails
    /// the partition with a `Synthesis` error.
    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, PlanError> {
        let assignment = catch(|| {
            synth(
                self.0.circuit_id(),
                || self.0.circuit(index),
                self.0.constraints(),
            )
        })
        .map_err(|text| FilecoinError::Synthesis(format!("partition {index}: {PANIC_MARK}: {text}")))??;
        Ok(assignment)
    }

    /// Empty (so verification fails, naming the partition) if storage-proofs
    /// panics making them.
    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        catch(|| self.0.public_inputs(index)).unwrap_or_default()
    }

    /// First checks every partition with bellperson's verifier (cheap, and
    /// names the bad partition), then the whole proof with filecoin-proofs'
    /// (a panic in either is a `Verification` error).
    fn verify(&self, params: &ProvingParameters, proofs: &[Proof<Bls12>]) -> Result<(), PlanError> {
        catch(|| {
            cuzk_core::plan::verify_partitions(params, proofs, |index| self.public_inputs(index))?;
            Ok(self.0.verify_whole(&proofs_bytes(proofs))?)
        })
        .map_err(|text| PlanError::Verification(format!("{PANIC_MARK}: {text}")))?
    }
}

/// filecoin-proofs' `verifier`'s answer (`Ok(true)`: the proof holds) as a
/// result: a rejection or an error is a `Verification` error naming it.
pub fn verdict<E: Display>(verifier: &str, answer: Result<bool, E>) -> Result<(), FilecoinError> {
    match answer {
        Ok(true) => Ok(()),
        Ok(false) => Err(FilecoinError::Verification(format!(
            "filecoin-proofs {verifier} rejected the proof"
        ))),
        Err(e) => Err(FilecoinError::Verification(format!(
            "filecoin-proofs {verifier} failed: {e:#}"
        ))),
    }
}

/// An error of filecoin-proofs (or storage-proofs) where none should be.
pub(crate) fn internal(e: impl Display) -> FilecoinError {
    FilecoinError::Internal(format!("{e:#}"))
}

/// Bytes one partition of about `constraints` constraints (and as many
/// aux variables) holds in flight, by the engine's rule.
fn in_flight_bytes(constraints: usize) -> u64 {
    cuzk_core::plan::partition_bytes(constraints, constraints)
}

fn proofs_bytes(proofs: &[Proof<Bls12>]) -> Vec<u8> {
    proofs.iter().flat_map(cuzk_core::proof_to_bytes).collect()
}

/// Synthesises one partition: by default through the circuit's pre-compiled
/// R1CS (recorded on the first partition of its circuit id in this process,
/// then only the witness is computed and a, b, c follow by sparse products);
/// with `CUZK_R1CS=off`, by `cuzk_core::synthesize` as before. Both give the
/// same assignment. `circuit` builds the partition's circuit; it is called
/// twice when the R1CS is recorded (recording consumes one instance).
fn synth<C: bellperson::Circuit<Scalar>>(
    circuit_id: &str,
    circuit: impl Fn() -> Result<C, FilecoinError>,
    constraints: usize,
) -> Result<ProvingAssignment, FilecoinError> {
    if !r1cs_enabled() {
        let hint = SizeHint {
            constraints,
            inputs: 0,
            aux: constraints,
        };
        return synthesize(circuit()?, hint).map_err(|e| FilecoinError::Synthesis(format!("synthesis: {e}")));
    }
    let r1cs = compiled_r1cs(circuit_id, &circuit)?;
    r1cs.synthesize(circuit()?).map_err(|e| {
        FilecoinError::Synthesis(format!("synthesis with the compiled R1CS of {circuit_id}: {e}"))
    })
}

/// The escape hatch: `CUZK_R1CS=off` (or `0`, `false`) synthesises with
/// `cuzk_core::synthesize`, without recording or holding compiled R1CS.
pub fn r1cs_enabled() -> bool {
    std::env::var("CUZK_R1CS").map_or(true, |v| !matches!(v.trim(), "off" | "0" | "false"))
}

/// One slot per circuit id. The first partition of a circuit id records
/// into its slot while the others of that id wait on the slot's lock rather
/// than record it again; other circuit ids are not held up (the map's lock
/// is only held to find the slot).
type R1csSlot = Arc<Mutex<Option<Arc<CompiledR1cs>>>>;

/// The compiled R1CS of every circuit id used in this process. Kept for the
/// life of the process: a circuit id's constraint system is fixed (its
/// parameters are generated from it), so later partitions and proofs reuse
/// it. Its memory is `CompiledR1cs::memory_bytes` per circuit id.
static COMPILED: LazyLock<Mutex<HashMap<String, R1csSlot>>> = LazyLock::new(Default::default);

/// The compiled R1CS of `circuit_id`, recorded from `circuit()` if this
/// process has not recorded it yet.
pub fn compiled_r1cs<C: bellperson::Circuit<Scalar>>(
    circuit_id: &str,
    circuit: impl FnOnce() -> Result<C, FilecoinError>,
) -> Result<Arc<CompiledR1cs>, FilecoinError> {
    let slot = {
        let mut map = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(circuit_id.to_owned()).or_default().clone()
    };
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r1cs) = slot.as_ref() {
        return Ok(r1cs.clone());
    }
    let started = Instant::now();
    let r1cs = CompiledR1cs::record(circuit()?)
        .map_err(|e| FilecoinError::Synthesis(format!("recording the R1CS of {circuit_id}: {e}")))?;
    tracing::info!(
        circuit_id,
        constraints = r1cs.num_constraints(),
        nonzeros = r1cs.nonzeros(),
        bytes = r1cs.memory_bytes(),
        record_ms = started.elapsed().as_millis() as u64,
        "compiled R1CS recorded"
    );
    let r1cs = Arc::new(r1cs);
    *slot = Some(r1cs.clone());
    Ok(r1cs)
}

// ---------------------------------------------------------------- dispatch

/// Builds the plan of a checked request with the tree shape of its sector
/// size.
enum Planned {
    Porep(PorepInput),
    Post(PostInput),
    Snap(SnapInput),
}

impl ShapeDispatch for Planned {
    type Out = Box<dyn ProofPlan>;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<Self::Out, FilecoinError> {
        Ok(match self {
            Planned::Porep(input) => Box::new(PorepPlan::<Tree>::new(input)?),
            Planned::Post(input) => Box::new(PostPlan::<Tree>::new(input)?),
            Planned::Snap(input) => Box::new(SnapPlan::<Tree>::new(input)?),
        })
    }
}

/// The plan of a Filecoin request (inputs parsed and checked). No input
/// panics it: the request is checked before the Filecoin crates see it, and
/// a panic in them is caught ([`crate::validate::guard`]) and refused as an
/// `InvalidArgument`.
pub fn plan_for(request: &ProofRequest) -> Result<Box<dyn ProofPlan>, FilecoinError> {
    crate::validate::guard("the request", || plan_checked(request))
}

fn plan_checked(request: &ProofRequest) -> Result<Box<dyn ProofPlan>, FilecoinError> {
    let (size, planned) = match request.kind {
        ProofKind::PorepSealCommit => {
            let input = PorepInput::parse(request)?;
            (u64::from(input.registered.sector_size()), Planned::Porep(input))
        }
        ProofKind::WinningPost | ProofKind::WindowPostPartition => {
            let input = PostInput::parse(request)?;
            (u64::from(input.registered.sector_size()), Planned::Post(input))
        }
        ProofKind::SnapDealsUpdate => {
            let input = SnapInput::parse(request)?;
            (u64::from(input.registered.sector_size()), Planned::Snap(input))
        }
    };
    crate::dispatch_shape(size, planned)
}
