//! The Filecoin proof types as partition plans: each partition's circuit is
//! the storage-proofs crate's own (built from the vanilla proof the way
//! `CompoundProof::circuit_proofs` builds it), its public inputs are the
//! crate's `generate_public_inputs`, and the whole proof is checked with
//! filecoin-proofs' verifier for the type before it is reported.

use crate::request::{FilecoinRequest, Kind, PorepInput, PostInput, SnapInput};
use crate::{FilecoinError, ShapeDispatch};
use cuzk_core::{
    synthesize, Bls12, CompiledR1cs, Proof, ProofPlan, ProvingAssignment, ProvingParameters, Scalar, SizeHint,
};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    parameters::{setup_params, window_post_setup_params, winning_post_setup_params},
    DefaultPieceDomain, DefaultPieceHasher, FallbackPoStSectorProof, MerkleTreeTrait, PoRepConfig,
    PoStConfig, PoStType, PublicReplicaInfo, SectorUpdateConfig, TreeRHasher,
};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;
use storage_proofs_core::{
    compound_proof, compound_proof::CompoundProof, proof::ProofScheme, sector::SectorId,
};
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound, PublicSector};
use storage_proofs_update::{EmptySectorUpdateCompound, PartitionProof};

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// Bytes one partition of about `constraints` constraints (and as many
/// aux variables) holds in flight, by the engine's rule.
fn in_flight_bytes(constraints: usize) -> u64 {
    cuzk_core::plan::partition_bytes(constraints, constraints)
}

/// Synthesises one partition: by default through the circuit's pre-compiled
/// R1CS (recorded on the first partition of its circuit id in this process,
/// then only the witness is computed and a, b, c follow by sparse products);
/// with `CUZK_R1CS=off`, by `cuzk_core::synthesize` as before. Both give the
/// same assignment. `circuit` builds the partition's circuit; it is called
/// twice when the R1CS is recorded (recording consumes one instance).
fn synth<C: bellperson::Circuit<Scalar>>(
    circuit_id: &str,
    circuit: impl Fn() -> Result<C, String>,
    constraints: usize,
) -> Result<ProvingAssignment, String> {
    if !r1cs_enabled() {
        let hint = SizeHint {
            constraints,
            inputs: 0,
            aux: constraints,
        };
        return synthesize(circuit()?, hint).map_err(|e| format!("synthesis: {e}"));
    }
    let r1cs = compiled_r1cs(circuit_id, &circuit)?;
    r1cs.synthesize(circuit()?)
        .map_err(|e| format!("synthesis with the compiled R1CS of {circuit_id}: {e}"))
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
    circuit: impl FnOnce() -> Result<C, String>,
) -> Result<Arc<CompiledR1cs>, String> {
    let slot = {
        let mut map = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(circuit_id.to_owned()).or_default().clone()
    };
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r1cs) = slot.as_ref() {
        return Ok(r1cs.clone());
    }
    let started = Instant::now();
    let r1cs =
        CompiledR1cs::record(circuit()?).map_err(|e| format!("recording the R1CS of {circuit_id}: {e}"))?;
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

fn proofs_bytes(proofs: &[Proof<Bls12>]) -> Vec<u8> {
    proofs.iter().flat_map(cuzk_core::proof_to_bytes).collect()
}

/// First checks every partition with bellperson's verifier (cheap, and names
/// the bad partition), then the whole proof with filecoin-proofs'.
fn verify_both(
    plan: &dyn ProofPlan,
    params: &ProvingParameters,
    proofs: &[Proof<Bls12>],
    filecoin: impl FnOnce(&[u8]) -> anyhow::Result<bool>,
    verifier: &str,
) -> Result<(), String> {
    let verifier_key = cuzk_core::Verifier::new(&params.vk);
    for (index, proof) in proofs.iter().enumerate() {
        match verifier_key.verify(proof, &plan.public_inputs(index)) {
            Ok(true) => {}
            Ok(false) => return Err(format!("partition {index} proof failed verification")),
            Err(e) => return Err(format!("partition {index} verification error: {e}")),
        }
    }
    match filecoin(&proofs_bytes(proofs)) {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!("filecoin-proofs {verifier} rejected the proof")),
        Err(e) => Err(format!("filecoin-proofs {verifier} failed: {e:#}")),
    }
}

// ---------------------------------------------------------------- PoRep C2

/// PoRep commit phase 2: one partition per vanilla partition proof of C1.
pub struct PorepPlan<Tree: 'static + MerkleTreeTrait> {
    input: PorepInput,
    config: PoRepConfig,
    pub_inputs: stacked::PublicInputs<TreeDomain<Tree>, DefaultPieceDomain>,
    pub_params: stacked::PublicParams<Tree>,
    vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
    constraints: usize,
}

impl<Tree: 'static + MerkleTreeTrait> std::fmt::Debug for PorepPlan<Tree> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PorepPlan")
            .field("registered_proof", &self.input.registered)
            .field("sector", &self.input.sector_number)
            .field("partitions", &self.vanilla.len())
            .finish()
    }
}

impl<Tree: 'static + MerkleTreeTrait> PorepPlan<Tree> {
    /// The plan of a checked PoRep request.
    pub fn new(input: PorepInput) -> Result<Self, FilecoinError> {
        let invalid = FilecoinError::InvalidArgument;
        let config = input.registered.as_v1_config();
        let c1 = &input.c1;
        let vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> = c1
            .vanilla_proofs
            .clone()
            .try_into()
            .map_err(|e: anyhow::Error| invalid(format!("C1 vanilla proofs: {e:#}")))?;
        if vanilla.len() != usize::from(config.partitions) || vanilla.iter().any(Vec::is_empty) {
            return Err(invalid(format!(
                "C1 holds {} vanilla partition proofs, {:?} needs {}",
                vanilla.len(),
                input.registered,
                usize::from(config.partitions)
            )));
        }
        let replica_id: TreeDomain<Tree> = {
            let fr: Scalar = c1.replica_id.into();
            fr.into()
        };
        // The proof is checked against the replica id filecoin-proofs derives
        // from the request's miner and sector; a mismatch would only fail at
        // the end, so reject it now.
        let expected = storage_proofs_porep::stacked::generate_replica_id::<Tree::Hasher, _>(
            &input.prover_id,
            u64::from(input.sector_number),
            &c1.ticket,
            c1.comm_d,
            &config.porep_id,
        );
        if expected != replica_id {
            return Err(invalid(format!(
                "the C1 output's replica_id does not match miner_id {} and sector_number {} \
                 (with its ticket, comm_d and proof type)",
                input.miner_id, input.sector_number
            )));
        }
        let comm_r =
            <TreeDomain<Tree>>::try_from_bytes(&c1.comm_r).map_err(|e| invalid(format!("comm_r: {e}")))?;
        let comm_d =
            DefaultPieceDomain::try_from_bytes(&c1.comm_d).map_err(|e| invalid(format!("comm_d: {e}")))?;
        let pub_inputs = stacked::PublicInputs {
            replica_id,
            tau: Some(stacked::Tau { comm_d, comm_r }),
            k: None,
            seed: Some(c1.seed),
        };
        let setup = compound_proof::SetupParams {
            vanilla_params: setup_params(&config).map_err(|e| FilecoinError::Internal(format!("{e:#}")))?,
            partitions: Some(usize::from(config.partitions)),
            priority: false,
        };
        let pub_params = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::setup(&setup)
        .map_err(|e| FilecoinError::Internal(format!("{e:#}")))?
        .vanilla_params;
        // The vanilla proofs must hold for these commitments and this seed
        // (storage-proofs' vanilla verifier: Merkle paths and labels, cheap
        // next to the SNARK), so a mismatched C1 is refused now rather than
        // failing verification after the proving work.
        let valid = <StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme<'_>>::verify_all_partitions(
            &pub_params,
            &pub_inputs,
            &vanilla,
        )
        .unwrap_or(false);
        if !valid {
            return Err(invalid(
                "the C1 vanilla proofs do not verify against its comm_r, comm_d, seed and replica_id".into(),
            ));
        }
        let constraints = crate::constraints::porep(u64::from(config.sector_size));
        Ok(Self {
            input,
            config,
            pub_inputs,
            pub_params,
            vanilla,
            constraints,
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait> PorepPlan<Tree> {
    /// Partition `index`'s circuit, as `CompoundProof::circuit_proofs` builds it.
    pub fn circuit(&self, index: usize) -> Result<stacked::StackedCircuit<Tree, DefaultPieceHasher>, String> {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::circuit(
            &self.pub_inputs,
            (),
            &self.vanilla[index],
            &self.pub_params,
            Some(index),
        )
        .map_err(|e| format!("partition {index} circuit: {e:#}"))
    }
}

impl<Tree: 'static + MerkleTreeTrait> ProofPlan for PorepPlan<Tree> {
    fn circuit_id(&self) -> String {
        self.input.circuit_id.clone()
    }

    fn partitions(&self) -> usize {
        self.vanilla.len()
    }

    fn partition_bytes(&self) -> u64 {
        in_flight_bytes(self.constraints)
    }

    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, String> {
        synth(&self.circuit_id(), || self.circuit(index), self.constraints)
    }

    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::generate_public_inputs(&self.pub_inputs, &self.pub_params, Some(index))
        .unwrap_or_default()
    }

    fn verify(&self, params: &ProvingParameters, proofs: &[Proof<Bls12>]) -> Result<(), String> {
        let c1 = &self.input.c1;
        verify_both(
            self,
            params,
            proofs,
            |bytes| {
                filecoin_proofs::verify_seal::<Tree>(
                    &self.config,
                    c1.comm_r,
                    c1.comm_d,
                    self.input.prover_id,
                    self.input.sector_number,
                    c1.ticket,
                    c1.seed,
                    bytes,
                )
            },
            "verify_seal",
        )
    }
}

// ---------------------------------------------------------------- PoSt

/// WinningPoSt (one circuit over all challenged sectors) or one WindowPoSt
/// partition.
pub struct PostPlan<Tree: 'static + MerkleTreeTrait> {
    input: PostInput,
    config: PoStConfig,
    pub_inputs: fallback::PublicInputs<TreeDomain<Tree>>,
    pub_params: fallback::PublicParams,
    /// The partition's vanilla proof, as `prove_with_vanilla` receives it.
    partition: Vec<fallback::Proof<<Tree as MerkleTreeTrait>::Proof>>,
    sectors: Vec<(SectorId, TreeDomain<Tree>)>,
    constraints: usize,
}

impl<Tree: 'static + MerkleTreeTrait> std::fmt::Debug for PostPlan<Tree> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostPlan")
            .field("registered_proof", &self.input.registered)
            .field("sectors", &self.sectors.len())
            .field("partition_index", &self.input.partition_index)
            .finish()
    }
}

impl<Tree: 'static + MerkleTreeTrait> PostPlan<Tree> {
    /// The plan of a checked PoSt request.
    pub fn new(input: PostInput) -> Result<Self, FilecoinError> {
        let invalid = FilecoinError::InvalidArgument;
        let config = input.registered.as_v1_config();
        let proofs: Vec<FallbackPoStSectorProof<Tree>> = input
            .vanilla_proofs
            .iter()
            .enumerate()
            .map(|(i, bytes)| {
                bincode::deserialize(bytes).map_err(|e| {
                    invalid(format!(
                        "vanilla_proofs[{i}] is not a bincode FallbackPoStSectorProof: {e}"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        let randomness = <TreeDomain<Tree>>::try_from_bytes(&input.randomness)
            .map_err(|e| invalid(format!("randomness is not a field element: {e}")))?;
        let prover_id = <TreeDomain<Tree>>::try_from_bytes(&input.prover_id)
            .map_err(|e| invalid(format!("prover id: {e}")))?;
        let sectors: Vec<(SectorId, TreeDomain<Tree>)> =
            proofs.iter().map(|p| (p.sector_id, p.comm_r)).collect();
        let public_sectors = sectors
            .iter()
            .map(|&(id, comm_r)| PublicSector { id, comm_r })
            .collect();
        let internal = |e: anyhow::Error| FilecoinError::Internal(format!("{e:#}"));
        let (pub_params, pub_inputs, partition, constraints) = match config.typ {
            PoStType::Winning => {
                if proofs.len() != config.sector_count {
                    return Err(invalid(format!(
                        "WinningPoSt needs {} vanilla proofs, got {}",
                        config.sector_count,
                        proofs.len()
                    )));
                }
                if input.partition_index != 0 {
                    return Err(invalid(format!(
                        "WinningPoSt has one partition; partition_index {} given",
                        input.partition_index
                    )));
                }
                let setup = compound_proof::SetupParams {
                    vanilla_params: winning_post_setup_params(&config).map_err(internal)?,
                    partitions: None,
                    priority: config.priority,
                };
                let pub_params = FallbackPoStCompound::<Tree>::setup(&setup).map_err(internal)?;
                let pub_inputs = fallback::PublicInputs {
                    randomness,
                    prover_id,
                    sectors: public_sectors,
                    k: None,
                };
                let partitions = pub_params.partitions.unwrap_or(1);
                let mut partitioned = filecoin_proofs::partition_vanilla_proofs(
                    &config,
                    &pub_params.vanilla_params,
                    &pub_inputs,
                    partitions,
                    &proofs,
                )
                .map_err(|e| invalid(format!("vanilla proofs do not match the challenges: {e:#}")))?;
                if partitioned.len() != 1 {
                    return Err(FilecoinError::Internal(format!(
                        "WinningPoSt split into {} partitions",
                        partitioned.len()
                    )));
                }
                // The SNARK treats each of the sector's challenges as a
                // "sector" of one challenge, each with its own challenge
                // index: the public inputs list the sector once per
                // challenge, as filecoin-proofs' verify_winning_post does.
                let mut pub_inputs = pub_inputs;
                let repeated = pub_params.vanilla_params.sector_count;
                pub_inputs.sectors = (0..repeated).flat_map(|_| pub_inputs.sectors.clone()).collect();
                let constraints = crate::constraints::winning(u64::from(config.sector_size));
                (
                    pub_params.vanilla_params,
                    pub_inputs,
                    vec![partitioned.remove(0)],
                    constraints,
                )
            }
            PoStType::Window => {
                if proofs.is_empty() {
                    return Err(invalid("WindowPoSt request carries no vanilla proofs".into()));
                }
                if proofs.len() > config.sector_count {
                    return Err(invalid(format!(
                        "a WindowPoSt partition holds at most {} sectors, got {}",
                        config.sector_count,
                        proofs.len()
                    )));
                }
                let setup = compound_proof::SetupParams {
                    vanilla_params: window_post_setup_params(&config),
                    partitions: Some(1),
                    priority: config.priority,
                };
                let pub_params = FallbackPoStCompound::<Tree>::setup(&setup).map_err(internal)?;
                let pub_inputs = fallback::PublicInputs {
                    randomness,
                    prover_id,
                    sectors: public_sectors,
                    k: Some(input.partition_index as usize),
                };
                let partition = filecoin_proofs::single_partition_vanilla_proofs(
                    &config,
                    &pub_params.vanilla_params,
                    &pub_inputs,
                    &proofs,
                )
                .map_err(|e| {
                    invalid(format!(
                        "vanilla proofs do not match partition {}'s challenges: {e:#}",
                        input.partition_index
                    ))
                })?;
                let constraints = crate::constraints::window(u64::from(config.sector_size));
                (
                    pub_params.vanilla_params,
                    pub_inputs,
                    vec![partition],
                    constraints,
                )
            }
        };
        // The vanilla proof must answer this partition's challenges (for
        // this randomness, prover and these sectors): storage-proofs'
        // vanilla verifier says so now, rather than a failed SNARK later.
        let k = input.partition_index as usize;
        let check_inputs = fallback::PublicInputs {
            k: Some(if config.typ == PoStType::Winning { 0 } else { k }),
            ..pub_inputs.clone()
        };
        let answers =
            <FallbackPoSt<'_, Tree> as ProofScheme<'_>>::verify(&pub_params, &check_inputs, &partition[0])
                .unwrap_or(false);
        if !answers {
            return Err(invalid(format!(
                "the vanilla proofs do not answer partition {k}'s challenges \
                 (wrong partition_index, randomness, miner_id or sectors?)"
            )));
        }
        Ok(Self {
            input,
            config,
            pub_inputs,
            pub_params,
            partition,
            sectors,
            constraints,
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait> PostPlan<Tree> {
    /// The partition's circuit, as `CompoundProof::circuit_proofs` builds it.
    pub fn circuit(&self, index: usize) -> Result<fallback::FallbackPoStCircuit<Tree>, String> {
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::circuit(
            &self.pub_inputs,
            Default::default(),
            &self.partition[index],
            &self.pub_params,
            Some(index),
        )
        .map_err(|e| format!("PoSt circuit: {e:#}"))
    }
}

impl<Tree: 'static + MerkleTreeTrait> ProofPlan for PostPlan<Tree> {
    fn circuit_id(&self) -> String {
        self.input.circuit_id.clone()
    }

    fn partitions(&self) -> usize {
        self.partition.len()
    }

    fn partition_bytes(&self) -> u64 {
        in_flight_bytes(self.constraints)
    }

    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, String> {
        synth(&self.circuit_id(), || self.circuit(index), self.constraints)
    }

    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params,
            Some(index),
        )
        .unwrap_or_default()
    }

    fn verify(&self, params: &ProvingParameters, proofs: &[Proof<Bls12>]) -> Result<(), String> {
        let replicas = || -> anyhow::Result<Vec<(SectorId, PublicReplicaInfo)>> {
            self.sectors
                .iter()
                .map(|(id, comm_r)| {
                    let bytes: [u8; 32] = comm_r.into_bytes().try_into().expect("32-byte domain");
                    Ok((*id, PublicReplicaInfo::new(bytes)?))
                })
                .collect()
        };
        match self.config.typ {
            PoStType::Winning => verify_both(
                self,
                params,
                proofs,
                |bytes| {
                    filecoin_proofs::verify_winning_post::<Tree>(
                        &self.config,
                        &self.input.randomness,
                        &replicas()?,
                        self.input.prover_id,
                        bytes,
                    )
                },
                "verify_winning_post",
            ),
            PoStType::Window => verify_both(
                self,
                params,
                proofs,
                |bytes| {
                    // filecoin-proofs verifies a whole WindowPoSt; a lone
                    // partition of a multi-partition PoSt is checked by the
                    // bellperson pass above against storage-proofs' inputs.
                    if self.input.partition_index != 0 {
                        return Ok(true);
                    }
                    let map = replicas()?.into_iter().collect();
                    filecoin_proofs::verify_window_post::<Tree>(
                        &self.config,
                        &self.input.randomness,
                        &map,
                        self.input.prover_id,
                        bytes,
                    )
                },
                "verify_window_post",
            ),
        }
    }
}

// ---------------------------------------------------------------- SnapDeals

/// SnapDeals empty-sector update: one partition per vanilla partition proof.
pub struct SnapPlan<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    input: SnapInput,
    config: PoRepConfig,
    pub_inputs: storage_proofs_update::PublicInputs,
    pub_params: storage_proofs_update::PublicParams,
    vanilla: Vec<PartitionProof<Tree>>,
    constraints: usize,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> std::fmt::Debug for SnapPlan<Tree> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapPlan")
            .field("registered_proof", &self.input.registered)
            .field("partitions", &self.vanilla.len())
            .finish()
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapPlan<Tree> {
    /// The plan of a checked SnapDeals request.
    pub fn new(input: SnapInput) -> Result<Self, FilecoinError> {
        let invalid = FilecoinError::InvalidArgument;
        let config = input.registered.as_v1_config();
        let update = SectorUpdateConfig::from_porep_config(&config);
        let partitions = usize::from(update.update_partitions);
        if input.vanilla_proofs.len() != partitions {
            return Err(invalid(format!(
                "{:?} needs {partitions} vanilla partition proofs, got {}",
                input.registered,
                input.vanilla_proofs.len()
            )));
        }
        let vanilla: Vec<PartitionProof<Tree>> = input
            .vanilla_proofs
            .iter()
            .enumerate()
            .map(|(i, bytes)| {
                bincode::deserialize(bytes).map_err(|e| {
                    invalid(format!(
                        "vanilla_proofs[{i}] is not a bincode PartitionProof: {e}"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        let domain = |what: &str, bytes: &[u8; 32]| {
            <TreeRHasher as Hasher>::Domain::try_from_bytes(bytes)
                .map_err(|e| invalid(format!("{what} is not a field element: {e}")))
        };
        let pub_inputs = storage_proofs_update::PublicInputs {
            k: partitions,
            comm_r_old: domain("comm_r_old", &input.comm_r_old)?,
            comm_d_new: DefaultPieceDomain::try_from_bytes(&input.comm_d_new)
                .map_err(|e| invalid(format!("comm_d_new is not a field element: {e}")))?,
            comm_r_new: domain("comm_r_new", &input.comm_r_new)?,
            h: update.h,
        };
        let setup = compound_proof::SetupParams {
            vanilla_params: storage_proofs_update::SetupParams {
                sector_bytes: u64::from(update.sector_size),
            },
            partitions: Some(partitions),
            priority: false,
        };
        let pub_params = EmptySectorUpdateCompound::<Tree>::setup(&setup)
            .map_err(|e| FilecoinError::Internal(format!("{e:#}")))?
            .vanilla_params;
        // The partition proofs must hold, in order, for these commitments
        // (filecoin-proofs' vanilla check), before any proving work.
        let partition_bytes: Vec<filecoin_proofs_api::PartitionProofBytes> = input
            .vanilla_proofs
            .iter()
            .cloned()
            .map(filecoin_proofs_api::PartitionProofBytes)
            .collect();
        let valid = filecoin_proofs_api::update::verify_partition_proofs(
            input.registered,
            &partition_bytes,
            input.comm_r_old,
            input.comm_r_new,
            input.comm_d_new,
        )
        .unwrap_or(false);
        if !valid {
            return Err(invalid(
                "the vanilla partition proofs do not verify, in this order, against comm_r_old, comm_r_new and comm_d_new"
                    .into(),
            ));
        }
        let constraints = crate::constraints::snap(u64::from(config.sector_size));
        Ok(Self {
            input,
            config,
            pub_inputs,
            pub_params,
            vanilla,
            constraints,
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapPlan<Tree> {
    /// Partition `index`'s circuit, as `CompoundProof::circuit_proofs` builds it.
    pub fn circuit(
        &self,
        index: usize,
    ) -> Result<storage_proofs_update::EmptySectorUpdateCircuit<Tree>, String> {
        EmptySectorUpdateCompound::<Tree>::circuit(
            &self.pub_inputs,
            (),
            &self.vanilla[index],
            &self.pub_params,
            Some(index),
        )
        .map_err(|e| format!("partition {index} circuit: {e:#}"))
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> ProofPlan for SnapPlan<Tree> {
    fn circuit_id(&self) -> String {
        self.input.circuit_id.clone()
    }

    fn partitions(&self) -> usize {
        self.vanilla.len()
    }

    fn partition_bytes(&self) -> u64 {
        in_flight_bytes(self.constraints)
    }

    fn synthesize(&self, index: usize) -> Result<ProvingAssignment, String> {
        synth(&self.circuit_id(), || self.circuit(index), self.constraints)
    }

    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        EmptySectorUpdateCompound::<Tree>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params,
            Some(index),
        )
        .unwrap_or_default()
    }

    fn verify(&self, params: &ProvingParameters, proofs: &[Proof<Bls12>]) -> Result<(), String> {
        verify_both(
            self,
            params,
            proofs,
            |bytes| {
                filecoin_proofs::verify_empty_sector_update_proof::<Tree>(
                    &self.config,
                    bytes,
                    self.input.comm_r_old,
                    self.input.comm_r_new,
                    self.input.comm_d_new,
                )
            },
            "verify_empty_sector_update_proof",
        )
    }
}

// ---------------------------------------------------------------- dispatch

struct PorepShape(PorepInput);
impl ShapeDispatch for PorepShape {
    type Out = Box<dyn ProofPlan>;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<Self::Out, FilecoinError> {
        Ok(Box::new(PorepPlan::<Tree>::new(self.0)?))
    }
}

struct PostShape(PostInput);
impl ShapeDispatch for PostShape {
    type Out = Box<dyn ProofPlan>;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<Self::Out, FilecoinError> {
        Ok(Box::new(PostPlan::<Tree>::new(self.0)?))
    }
}

struct SnapShape(SnapInput);
impl ShapeDispatch for SnapShape {
    type Out = Box<dyn ProofPlan>;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<Self::Out, FilecoinError> {
        Ok(Box::new(SnapPlan::<Tree>::new(self.0)?))
    }
}

/// The plan of a Filecoin request (inputs parsed and checked).
pub fn plan_for(request: &FilecoinRequest) -> Result<Box<dyn ProofPlan>, FilecoinError> {
    match request.kind {
        Kind::Porep => {
            let input = PorepInput::parse(request)?;
            let size = u64::from(input.registered.sector_size());
            crate::dispatch_shape(size, PorepShape(input))
        }
        Kind::Winning | Kind::Window => {
            let input = PostInput::parse(request)?;
            let size = u64::from(input.registered.sector_size());
            crate::dispatch_shape(size, PostShape(input))
        }
        Kind::Snap => {
            let input = SnapInput::parse(request)?;
            let size = u64::from(input.registered.sector_size());
            crate::dispatch_shape(size, SnapShape(input))
        }
    }
}
