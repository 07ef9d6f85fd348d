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

/// The [`FilecoinProof`] methods that every proof type answers from the
/// same fields: `new_with` builds it, its input names the circuit, its
/// partitions are the entries of `$partitions` (a `Vec`, one per
/// partition), and `constraints` and `unverifiable` are kept as planned.
/// A macro, not a default method: the fields are the types' own.
macro_rules! plan_fields {
    ($partitions:ident) => {
        fn from_input(input: Self::Input, options: &PlanOptions) -> Result<Self, PlanError> {
            Self::new_with(input, options)
        }

        fn circuit_id(&self) -> &str {
            &self.input.circuit_id
        }

        fn partitions(&self) -> usize {
            self.$partitions.len()
        }

        fn constraints(&self) -> usize {
            self.constraints
        }

        fn unverifiable(&self) -> Option<&str> {
            self.unverifiable.as_deref()
        }
    };
}

pub mod porep;
pub mod post;
pub mod snap;

pub use porep::{Porep, PorepPlan};
pub use post::{Post, PostPlan};
pub use snap::{Snap, SnapPlan};

use crate::request::{PorepInput, PostInput, SnapInput};
use crate::validate::{catch, PANIC_MARK};
use crate::ShapeDispatch;
use cuzk_core::request::cut_echoes;
use cuzk_core::{
    synthesize, Bls12, CompiledR1cs, PartitionData, PartitionWitness, PlanError, Proof, ProofKind, ProofPlan,
    ProofRequest, ProvingAssignment, ProvingParameters, R1csCache, R1csError, R1csStore, Scalar, SizeHint,
    SpareValues, Witness,
};
use filecoin_hashers::Hasher;
use filecoin_proofs::{MerkleTreeTrait, TreeRHasher};
use std::fmt::{self, Display};
use std::sync::Arc;

pub(crate) type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// One Filecoin proof type, as [`FilecoinPlan`] runs it: its partitions'
/// circuits and public inputs (from storage-proofs), and filecoin-proofs'
/// verifier of the whole proof. Built from a checked request by
/// [`from_input`](Self::from_input) (through [`FilecoinPlan::new`]), which
/// refuses inputs that would only fail after the proving work.
pub trait FilecoinProof: Send + Sync + fmt::Debug + 'static {
    /// The storage-proofs circuit of one partition.
    type Circuit: bellperson::Circuit<Scalar> + Send;
    /// The checked request it is built from ([`PorepInput`], ...).
    type Input;

    /// The proof of a checked request, planned with `options`.
    fn from_input(input: Self::Input, options: &PlanOptions) -> Result<Self, PlanError>
    where
        Self: Sized;

    /// Key (and file stem) of the parameters: `v28-<identifier>`.
    fn circuit_id(&self) -> &str;
    /// Number of partitions.
    fn partitions(&self) -> usize;
    /// Upper estimate of one partition's constraints (see
    /// [`crate::constraints`]): sizes the synthesis and the in-flight bytes.
    fn constraints(&self) -> usize;
    /// Partition `index`'s circuit, as `CompoundProof::circuit_proofs`
    /// builds it.
    fn circuit(&self, index: usize) -> Result<Self::Circuit, PlanError>;
    /// The prefix of the top-level namespaces that are the circuit's
    /// independent units (storage-proofs' PoRep: `challenge_`), whose
    /// witnesses are computed in parallel; `None` (the default): no units.
    fn unit_prefix(&self) -> Option<&'static str> {
        None
    }
    /// The number of units of partition `index`'s circuit (0 without
    /// units, the default).
    fn unit_count(&self, _index: usize) -> usize {
        0
    }
    /// Partition `index`'s circuit with unit `unit` alone (the same
    /// prologue), for the parallel witness and recording. Only called when
    /// [`unit_prefix`](Self::unit_prefix) is `Some`.
    fn unit_circuit(&self, index: usize, _unit: usize) -> Result<Self::Circuit, PlanError> {
        self.circuit(index)
    }
    /// Partition `index`'s variables written natively ([`crate::native`]),
    /// without the gadget code; `None` (the default) for proof types
    /// without a native writer, whose witness comes from the circuit. Its
    /// wide values go into a vector of `spares` when one fits.
    fn native_witness(&self, _index: usize, _spares: Spares<'_>) -> Option<Result<Witness, PlanError>> {
        None
    }
    /// Partition `index`'s public inputs (`CompoundProof::generate_public_inputs`).
    fn public_inputs(&self, index: usize) -> Vec<Scalar>;
    /// The whole proof (the partition proofs' bytes, concatenated) through
    /// filecoin-proofs' verifier of the type (see [`verdict`]).
    fn verify_whole(&self, proof: &[u8]) -> Result<(), PlanError>;
    /// Why this request's proof cannot verify, when it was planned with
    /// [`PlanOptions::allow_unverifiable`] although its vanilla proofs do not
    /// hold; `None` for every request whose vanilla proofs hold.
    fn unverifiable(&self) -> Option<&str>;
}

/// How Filecoin requests are planned.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// The benchmark switch (`[benchmark] allow_unverifiable`, off by
    /// default): a request whose vanilla proofs (or Merkle openings) do not
    /// verify, such as a real-structure input (`cuzk_filecoin::structure`), is
    /// planned as unverifiable (proved, and its final verification skipped)
    /// instead of refused. Every structural check still runs, so no
    /// malformed input reaches storage-proofs, and a request whose vanilla
    /// proofs hold is verified as always.
    pub allow_unverifiable: bool,
    /// Every witness through the circuit's gadgets, even where a native
    /// writer exists ([`FilecoinProof::native_witness`]): for side-by-side
    /// measurements. Off (native writers used) unless set (a binary sets
    /// it from `CUZK_NATIVE_WITNESS=off`, [`with_environment`](Self::with_environment)).
    pub gadget_witness: bool,
    /// Every gadget witness in one sequential pass, not by units on all
    /// cores (`CUZK_PARALLEL_WITNESS=off`): for comparisons.
    pub sequential_witness: bool,
    /// Partitions synthesised by `cuzk_core::synthesize`, no compiled R1CS
    /// recorded or held (`CUZK_R1CS=off`): the old path, for comparisons.
    pub without_compiled_r1cs: bool,
    /// Where the circuits' compiled R1CS files are kept (read at a
    /// circuit's first use instead of recording it, written after a
    /// recording); `None`: recorded in memory at every start.
    pub r1cs_store: Option<Arc<R1csStore>>,
    /// Where the circuits' compiled R1CS are kept in memory, shared by the
    /// plans made with these options (the source's, which the engine
    /// counts and evicts); `None`: each plan keeps its own.
    pub r1cs_cache: Option<Arc<R1csCache>>,
    /// Where native witnesses' wide values are kept between partitions
    /// ([`SpareValues`]); `None`: each witness allocates its own.
    pub spare_values: Option<Arc<SpareValues>>,
    /// PoSt witnesses leave their inclusion paths' values (their Poseidon
    /// traces: most of a WindowPoSt partition's witness) to the prover, a
    /// GPU writing them beside its region (`cuzk_core::paths`); a prover
    /// without one writes them on the host, slower than the host's own
    /// writer. Set where the provers are GPUs with the witness path.
    pub paths_on_device: bool,
}

/// Where a native witness's wide values may go ([`PlanOptions::spare_values`]).
pub type Spares<'a> = Option<&'a Arc<SpareValues>>;

/// Whether `Tree`'s replica trees are hashed with Poseidon (all of
/// Filecoin's), the hash the native writers follow.
pub(crate) fn hashed_with_poseidon<Tree: MerkleTreeTrait>() -> bool {
    std::any::TypeId::of::<Tree::Hasher>()
        == std::any::TypeId::of::<filecoin_hashers::poseidon::PoseidonHasher>()
}

/// What shapes the Filecoin circuits, for their compiled R1CS files: the
/// versions of the crates that build them (from Cargo.lock at build time,
/// see build.rs). A file recorded under other versions is not used.
pub const CIRCUIT_SHAPE: &str = env!("CUZK_CIRCUIT_SHAPE");

impl PlanOptions {
    /// The benchmark options (benchmarks and tests on real-structure
    /// inputs): unverifiable requests planned
    /// ([`allow_unverifiable`](Self::allow_unverifiable)), everything else
    /// as by default, each plan with an R1CS cache of its own.
    pub const UNVERIFIABLE_ALLOWED: PlanOptions = PlanOptions {
        allow_unverifiable: true,
        gadget_witness: false,
        sequential_witness: false,
        without_compiled_r1cs: false,
        r1cs_store: None,
        r1cs_cache: None,
        spare_values: None,
        paths_on_device: false,
    };

    /// These options with the comparison switches a process's environment
    /// sets (`CUZK_NATIVE_WITNESS`, `CUZK_PARALLEL_WITNESS`, `CUZK_R1CS`:
    /// `off`, `0` or `false` turn a step back): read by the binaries once,
    /// at start, never by the libraries.
    pub fn with_environment(self) -> Self {
        let off = |name: &str| std::env::var(name).is_ok_and(|v| matches!(v.trim(), "off" | "0" | "false"));
        Self {
            gadget_witness: self.gadget_witness || off("CUZK_NATIVE_WITNESS"),
            sequential_witness: self.sequential_witness || off("CUZK_PARALLEL_WITNESS"),
            without_compiled_r1cs: self.without_compiled_r1cs || off("CUZK_R1CS"),
            ..self
        }
    }

    /// A failed check of a request's vanilla proofs: with
    /// [`allow_unverifiable`](Self::allow_unverifiable), the reason the plan
    /// keeps (its proof will not be verified); otherwise the refusal.
    pub(crate) fn unverifiable(&self, reason: String) -> Result<String, PlanError> {
        if self.allow_unverifiable {
            Ok(reason)
        } else {
            Err(PlanError::InvalidArgument(reason))
        }
    }
}

/// The plan of one Filecoin proof of type `P`.
pub struct FilecoinPlan<P> {
    proof: P,
    /// Whether the witness is written natively where `P` can.
    native_witness: bool,
    /// Whether a gadget witness runs by units where `P` has them.
    parallel_witness: bool,
    /// Whether partitions go through the circuit's compiled R1CS.
    compiled_r1cs: bool,
    /// See [`PlanOptions::r1cs_store`].
    r1cs_store: Option<Arc<R1csStore>>,
    /// See [`PlanOptions::r1cs_cache`].
    r1cs_cache: Arc<R1csCache>,
    /// See [`PlanOptions::spare_values`].
    spares: Option<Arc<SpareValues>>,
}

impl<P: FilecoinProof> FilecoinPlan<P> {
    /// The plan of a checked request, with `options`.
    pub fn new(input: P::Input, options: &PlanOptions) -> Result<Self, PlanError> {
        P::from_input(input, options).map(|proof| Self::with_options(proof, options))
    }

    /// The plan of `proof` (witnesses written natively where it can).
    pub fn from_proof(proof: P) -> Self {
        Self {
            proof,
            native_witness: true,
            parallel_witness: true,
            compiled_r1cs: true,
            r1cs_store: None,
            r1cs_cache: Arc::default(),
            spares: None,
        }
    }

    /// The plan of `proof`, planned with `options`.
    fn with_options(proof: P, options: &PlanOptions) -> Self {
        Self {
            proof,
            native_witness: !options.gadget_witness,
            parallel_witness: !options.sequential_witness,
            compiled_r1cs: !options.without_compiled_r1cs,
            r1cs_store: options.r1cs_store.clone(),
            r1cs_cache: options.r1cs_cache.clone().unwrap_or_default(),
            spares: options.spare_values.clone(),
        }
    }

    /// The proof type's side of the plan.
    pub fn proof(&self) -> &P {
        &self.proof
    }

    /// Partition `index`'s circuit, as `CompoundProof::circuit_proofs` builds it.
    pub fn circuit(&self, index: usize) -> Result<P::Circuit, PlanError> {
        self.proof.circuit(index)
    }

    /// Why the proof cannot verify, for a request planned as unverifiable
    /// ([`PlanOptions::allow_unverifiable`]); `None` otherwise.
    pub fn unverifiable(&self) -> Option<&str> {
        self.proof.unverifiable()
    }
}

impl<P: FilecoinProof> FilecoinPlan<P> {
    /// Partition `index`'s witness through its circuit's compiled R1CS
    /// (recorded on first use): by units on all cores where the proof type
    /// has independent units ([`FilecoinProof::unit_prefix`]) unless
    /// [`PlanOptions::sequential_witness`], else in one sequential pass.
    /// Both give the same witness; a unit pass that fails its checks falls
    /// back to the sequential one (with a warning).
    fn witness(&self, index: usize) -> Result<(Arc<CompiledR1cs>, Witness), PlanError> {
        let id = self.proof.circuit_id();
        let r1cs = self.compiled_r1cs(index)?;
        if self.native_witness {
            // A writer that panics (an input it did not foresee) falls back
            // like one that fails its self-check.
            let native = catch(|| self.proof.native_witness(index, self.spares.as_ref()))
                .unwrap_or_else(|text| Some(Err(PlanError::Synthesis(format!("{PANIC_MARK}: {text}")))));
            if let Some(native) = native {
                match native.and_then(|witness| self.check_native(&r1cs, index, witness)) {
                    Ok(witness) => {
                        NATIVE_WITNESSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        return Ok((r1cs, witness));
                    }
                    Err(e) => {
                        NATIVE_FALLBACKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        tracing::warn!(circuit_id = id, partition = index, error = %e,
                            "native witness failed its self-check; computing it through the circuit")
                    }
                }
            }
        }
        let layout = self
            .proof
            .unit_prefix()
            .filter(|_| self.parallel_witness)
            .and_then(|prefix| r1cs.units(prefix))
            .filter(|layout| layout.len() > 1);
        if let Some(layout) = layout {
            let by_units = r1cs.witness_by_units(&layout, |unit| {
                self.proof
                    .unit_circuit(index, unit)
                    .map_err(|e| R1csError::UnitMismatch(e.to_string()))
            });
            match by_units {
                Ok(witness) => return Ok((r1cs, witness)),
                Err(e) => tracing::warn!(circuit_id = id, partition = index, error = %e,
                    "witness by units failed its checks; computing it sequentially"),
            }
        }
        // One pool task in a pool seat, the worker's slot lent meanwhile:
        // partitions without units or a native writer then run side by side
        // on the pool's cores rather than queue for the few slots.
        let witness = cuzk_core::cores::on_pool(|| {
            r1cs.witness(self.proof.circuit(index)?)
                .map_err(|e| PlanError::Synthesis(format!("witness with the compiled R1CS of {id}: {e}")))
        })?;
        Ok((r1cs, witness))
    }
}

impl<P: FilecoinProof> FilecoinPlan<P> {
    /// The compiled R1CS of the plan's circuit, as its cache
    /// ([`PlanOptions::r1cs_cache`]) holds it: when it does not yet, read from its file in the plan's
    /// store ([`PlanOptions::r1cs_store`]) or recorded from partition
    /// `index` ([`record_r1cs`](Self::record_r1cs)) and its file written.
    pub fn compiled_r1cs(&self, index: usize) -> Result<Arc<CompiledR1cs>, PlanError> {
        let id = self.proof.circuit_id();
        match &self.r1cs_store {
            Some(store) => self
                .r1cs_cache
                .get_or_load(id, store, CIRCUIT_SHAPE, || self.record_r1cs(index)),
            None => self.r1cs_cache.get_or_record(id, || self.record_r1cs(index)),
        }
    }

    /// Records the R1CS of the plan's circuit from partition `index`: by
    /// units on all cores where the proof type has them
    /// ([`CompiledR1cs::record_by_units`]), else (or when that fails its
    /// checks, with a warning) in one sequential pass. Both give the same.
    pub fn record_r1cs(&self, index: usize) -> Result<CompiledR1cs, PlanError> {
        let id = self.proof.circuit_id();
        let units = self.proof.unit_count(index);
        if let Some(prefix) = self.proof.unit_prefix().filter(|_| units > 1) {
            let by_units = CompiledR1cs::record_by_units(prefix, units, |unit| {
                self.proof
                    .unit_circuit(index, unit)
                    .map_err(|e| R1csError::UnitMismatch(e.to_string()))
            });
            match by_units {
                Ok(r1cs) => return Ok(r1cs),
                Err(e) => tracing::warn!(circuit_id = id, error = %e,
                    "recording the R1CS by units failed its checks; recording it sequentially"),
            }
        }
        CompiledR1cs::record(self.proof.circuit(index)?)
            .map_err(|e| PlanError::Synthesis(format!("recording the R1CS of {id}: {e}")))
    }

    /// The self-check of a native witness before it is proved: the
    /// recorded circuit's shape, the public inputs storage-proofs computes
    /// for the partition, and, for a request whose vanilla proofs hold
    /// (the witness then satisfies every constraint), a sample of the
    /// constraints spread over the whole circuit. A writer that strays
    /// from the gadgets' order breaks all three; a proof from a witness
    /// that passes and is still wrong fails verification, never returned.
    fn check_native(
        &self,
        r1cs: &CompiledR1cs,
        index: usize,
        witness: Witness,
    ) -> Result<Witness, PlanError> {
        let fail =
            |what: String| PlanError::Synthesis(format!("native witness of partition {index}: {what}"));
        r1cs.check_rows(&witness, []).map_err(|e| fail(e.to_string()))?;
        if witness.inputs[1..] != self.proof.public_inputs(index)[..] {
            return Err(fail("its public inputs are not storage-proofs'".into()));
        }
        if self.proof.unverifiable().is_none() {
            let rows = r1cs.num_constraints();
            let stride = (rows / NATIVE_CHECKED_ROWS).max(1);
            r1cs.check_rows(&witness, (0..rows).step_by(stride).chain(rows.checked_sub(1)))
                .map_err(|e| fail(e.to_string()))?;
        }
        Ok(witness)
    }
}

/// Constraints a native witness is checked on (spread evenly): a few
/// milliseconds beside the seconds the witness takes.
const NATIVE_CHECKED_ROWS: usize = 4096;

/// Native witnesses that failed their self-check and were computed
/// through the circuit instead, since the process started.
static NATIVE_FALLBACKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Native witnesses that passed their self-check, since the process started.
static NATIVE_WITNESSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many partitions' witnesses were written natively (and passed their
/// self-check); the others came from the gadgets.
pub fn native_witnesses() -> u64 {
    NATIVE_WITNESSES.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many native witnesses fell back to the circuit (a writer out of step
/// with the gadgets: each is also a WARN line).
pub fn native_fallbacks() -> u64 {
    NATIVE_FALLBACKS.load(std::sync::atomic::Ordering::Relaxed)
}

impl<P: FilecoinProof> fmt::Debug for FilecoinPlan<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.proof.fmt(f)
    }
}

impl<P: FilecoinProof> ProofPlan for FilecoinPlan<P> {
    fn circuit_id(&self) -> String {
        self.proof.circuit_id().to_owned()
    }

    fn partitions(&self) -> usize {
        self.proof.partitions()
    }

    fn partition_bytes(&self) -> u64 {
        in_flight_bytes(self.proof.constraints())
    }

    /// The storage-proofs circuit runs under [`catch`]: a panic in it fails
    /// the partition with a `Synthesis` error.
    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, PlanError> {
        let assignment = catch(|| {
            if !self.compiled_r1cs {
                return synth(|| self.proof.circuit(index), self.proof.constraints());
            }
            let (r1cs, witness) = self.witness(index)?;
            r1cs.assign(witness).map_err(|e| {
                PlanError::Synthesis(format!(
                    "a, b, c with the compiled R1CS of {}: {e}",
                    self.proof.circuit_id()
                ))
            })
        })
        .map_err(|text| PlanError::Synthesis(format!("partition {index}: {PANIC_MARK}: {text}")))??;
        Ok(assignment)
    }

    /// The witness (about one 32-byte scalar per constraint) with a
    /// quarter for the vectors' slack.
    fn witness_bytes(&self) -> Option<u64> {
        self.compiled_r1cs
            .then(|| self.proof.constraints() as u64 * 32 * 5 / 4)
    }

    /// The witness through the circuit's compiled R1CS (recorded on first
    /// use, as for [`synthesize`](Self::synthesize)), under [`catch`].
    fn synthesize_witness(&self, index: usize) -> Result<PartitionData, PlanError> {
        if !self.compiled_r1cs {
            return Ok(PartitionData::Evaluated(self.synthesize(index)?));
        }
        let witness = catch(|| {
            let (r1cs, witness) = self.witness(index)?;
            Ok::<_, PlanError>(PartitionWitness { r1cs, witness })
        })
        .map_err(|text| PlanError::Synthesis(format!("partition {index}: {PANIC_MARK}: {text}")))??;
        Ok(PartitionData::Witness(witness))
    }

    /// Empty (so verification fails, naming the partition) if storage-proofs
    /// panics making them.
    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        catch(|| self.proof.public_inputs(index)).unwrap_or_default()
    }

    fn unverifiable(&self) -> Option<String> {
        self.proof.unverifiable().map(str::to_owned)
    }

    /// First checks every partition with bellperson's verifier (cheap, and
    /// names the bad partition), then the whole proof with filecoin-proofs'
    /// (a panic in either is a `Verification` error). A request planned as
    /// unverifiable ([`PlanOptions::allow_unverifiable`]) is not verified:
    /// its proof could not pass, and the skip is logged.
    fn verify(&self, params: &ProvingParameters, proofs: &[Proof<Bls12>]) -> Result<(), PlanError> {
        if let Some(reason) = self.proof.unverifiable() {
            tracing::warn!(
                circuit_id = self.proof.circuit_id(),
                partitions = proofs.len(),
                reason,
                "UNVERIFIED proof: verification skipped for a request planned as unverifiable \
                 ([benchmark] allow_unverifiable)"
            );
            return Ok(());
        }
        catch(|| {
            cuzk_core::plan::verify_partitions(params, proofs, |index| self.public_inputs(index))?;
            self.proof.verify_whole(&proofs_bytes(proofs))
        })
        .map_err(|text| PlanError::Verification(format!("{PANIC_MARK}: {text}")))?
    }
}

/// filecoin-proofs' `verifier`'s answer (`Ok(true)`: the proof holds) as a
/// result: a rejection or an error is a `Verification` error naming it.
pub fn verdict<E: Display>(verifier: &str, answer: Result<bool, E>) -> Result<(), PlanError> {
    match answer {
        Ok(true) => Ok(()),
        Ok(false) => Err(PlanError::Verification(format!(
            "filecoin-proofs {verifier} rejected the proof"
        ))),
        Err(e) => Err(PlanError::Verification(format!(
            "filecoin-proofs {verifier} failed: {e:#}"
        ))),
    }
}

/// An error of filecoin-proofs (or storage-proofs) where none should be.
pub(crate) fn internal(e: impl Display) -> PlanError {
    PlanError::Internal(format!("{e:#}"))
}

/// Each of a request's vanilla proofs read as bincode `T`; an error names
/// the proof by its index and `T` by `type_name`, and echoes none of the
/// request's bytes.
pub(crate) fn deserialize_vanilla<T: serde::de::DeserializeOwned>(
    vanilla_proofs: &[Vec<u8>],
    type_name: &str,
) -> Result<Vec<T>, PlanError> {
    vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            bincode::deserialize(bytes).map_err(|e| {
                PlanError::InvalidArgument(cut_echoes(&format!(
                    "vanilla_proofs[{i}] is not a bincode {type_name}: {e}"
                )))
            })
        })
        .collect()
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
/// with [`PlanOptions::without_compiled_r1cs`], by `cuzk_core::synthesize` as before. Both give the
/// same assignment. `circuit` builds the partition's circuit; it is called
/// twice when the R1CS is recorded (recording consumes one instance).
fn synth<C: bellperson::Circuit<Scalar>>(
    circuit: impl Fn() -> Result<C, PlanError>,
    constraints: usize,
) -> Result<ProvingAssignment, PlanError> {
    let hint = SizeHint {
        constraints,
        inputs: 0,
        aux: constraints,
    };
    synthesize(circuit()?, hint).map_err(|e| PlanError::Synthesis(format!("synthesis: {e}")))
}

/// The compiled R1CS of `circuit_id`, recorded from `circuit()` if `cache`
/// does not hold it.
pub fn compiled_r1cs<C: bellperson::Circuit<Scalar>>(
    cache: &R1csCache,
    circuit_id: &str,
    circuit: impl FnOnce() -> Result<C, PlanError>,
) -> Result<Arc<CompiledR1cs>, PlanError> {
    cache.get_or_record(circuit_id, || {
        CompiledR1cs::record(circuit()?)
            .map_err(|e| PlanError::Synthesis(format!("recording the R1CS of {circuit_id}: {e}")))
    })
}

// ---------------------------------------------------------------- dispatch

/// A checked request, planned with the tree shape of its sector size.
pub(crate) enum Planned {
    Porep(PorepInput),
    Post(PostInput),
    Snap(SnapInput),
}

/// [`Planned`] with its options, as the shape dispatch runs it.
struct Planning(Planned, PlanOptions);

/// A planned Filecoin request ([`plan_with`]).
#[derive(Debug)]
pub struct FilecoinPlanned {
    /// The plan the engine runs.
    pub plan: Box<dyn ProofPlan>,
    /// Why its proof cannot verify, when it was planned as unverifiable
    /// ([`PlanOptions::allow_unverifiable`]); `None` for a request whose
    /// vanilla proofs hold (always, with the switch off).
    pub unverifiable: Option<String>,
}

fn planned<P: FilecoinProof>(plan: FilecoinPlan<P>) -> FilecoinPlanned {
    FilecoinPlanned {
        unverifiable: plan.unverifiable().map(str::to_owned),
        plan: Box::new(plan),
    }
}

impl ShapeDispatch for Planning {
    type Out = FilecoinPlanned;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<Self::Out, PlanError> {
        let Planning(input, options) = self;
        Ok(match input {
            Planned::Porep(input) => planned(PorepPlan::<Tree>::new(input, &options)?),
            Planned::Post(input) => planned(PostPlan::<Tree>::new(input, &options)?),
            Planned::Snap(input) => planned(SnapPlan::<Tree>::new(input, &options)?),
        })
    }
}

/// The plan of a Filecoin request (inputs parsed and checked). No input
/// panics it: the request is checked before the Filecoin crates see it, and
/// a panic in them is caught ([`crate::validate::guard`]) and refused as an
/// `InvalidArgument`. A request whose vanilla proofs do not verify is
/// refused ([`plan_with`] can allow it, for benchmarks).
pub fn plan_for(request: &ProofRequest) -> Result<Box<dyn ProofPlan>, PlanError> {
    plan_with(request, PlanOptions::default()).map(|planned| planned.plan)
}

/// [`plan_for`] with `options`. A request planned as unverifiable is
/// logged (a warning naming it and the reason) here, at plan time, and
/// again when its verification is skipped.
pub fn plan_with(request: &ProofRequest, options: PlanOptions) -> Result<FilecoinPlanned, PlanError> {
    let planned = crate::validate::guard("the request", || plan_checked(request, options))?;
    if let Some(reason) = &planned.unverifiable {
        tracing::warn!(
            request_id = %request.request_id,
            kind = ?request.kind,
            registered_proof = request.registered_proof,
            circuit_id = %planned.plan.circuit_id(),
            reason = %reason,
            "UNVERIFIABLE request planned ([benchmark] allow_unverifiable = true): it is proved, \
             its proof will not be verified"
        );
    }
    Ok(planned)
}

/// A request's checked input and its sector size.
pub(crate) fn parse_request(request: &ProofRequest) -> Result<(u64, Planned), PlanError> {
    Ok(match request.kind {
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
    })
}

fn plan_checked(request: &ProofRequest, options: PlanOptions) -> Result<FilecoinPlanned, PlanError> {
    let (size, planned) = parse_request(request)?;
    crate::dispatch_shape(size, Planning(planned, options))
}
