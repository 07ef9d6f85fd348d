//! WinningPoSt (one circuit over all challenged sectors) and one WindowPoSt
//! partition.

use super::{internal, verdict, FilecoinPlan, FilecoinProof, TreeDomain};
use crate::request::PostInput;
use crate::validate::{self, guard};
use crate::FilecoinError;
use cuzk_core::Scalar;
use filecoin_hashers::Domain;
use filecoin_proofs::{
    parameters::{window_post_setup_params, winning_post_setup_params},
    FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig, PoStType, PublicReplicaInfo,
};
use std::fmt;
use storage_proofs_core::{
    compound_proof, compound_proof::CompoundProof, merkle::MerkleProofTrait, proof::ProofScheme,
    sector::SectorId,
};
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound, PublicSector};

/// The plan of a WinningPoSt or WindowPoSt (one partition) request.
pub type PostPlan<Tree> = FilecoinPlan<Post<Tree>>;

/// A PoSt as a [`FilecoinProof`]: the partition's vanilla proof, checked
/// against its challenges, with the FallbackPoSt public inputs and
/// parameters.
pub struct Post<Tree: 'static + MerkleTreeTrait> {
    input: PostInput,
    config: PoStConfig,
    pub_inputs: fallback::PublicInputs<TreeDomain<Tree>>,
    pub_params: fallback::PublicParams,
    /// The partition's vanilla proof, as `prove_with_vanilla` receives it.
    partition: Vec<fallback::Proof<<Tree as MerkleTreeTrait>::Proof>>,
    sectors: Vec<(SectorId, TreeDomain<Tree>)>,
    constraints: usize,
}

impl<Tree: 'static + MerkleTreeTrait> fmt::Debug for Post<Tree> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        Post::new(input).map(FilecoinPlan::from_proof)
    }
}

impl<Tree: 'static + MerkleTreeTrait> Post<Tree> {
    /// Checks the vanilla proofs against the request: they must answer the
    /// partition's challenges for its randomness, prover and sectors.
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
        for (i, proof) in proofs.iter().enumerate() {
            check_sector_proof::<Tree>(i, proof, &config)?;
        }
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
                let mut partitioned = guard("the PoSt vanilla proofs", || {
                    filecoin_proofs::partition_vanilla_proofs(
                        &config,
                        &pub_params.vanilla_params,
                        &pub_inputs,
                        partitions,
                        &proofs,
                    )
                    .map_err(|e| invalid(format!("vanilla proofs do not match the challenges: {e:#}")))
                })?;
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
                let partition = guard("the PoSt vanilla proofs", || {
                    filecoin_proofs::single_partition_vanilla_proofs(
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
                    })
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
            guard("the PoSt vanilla proofs", || {
                Ok(<FallbackPoSt<'_, Tree> as ProofScheme<'_>>::verify(
                    &pub_params,
                    &check_inputs,
                    &partition[0],
                )
                .unwrap_or(false))
            })?;
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

/// The shape of vanilla proof `i` before filecoin-proofs and
/// storage-proofs (which index and hash it unchecked) see it: every field
/// element canonical and every Merkle path element well formed (see
/// [`crate::validate`]), one sector proof (as filecoin-proofs makes them),
/// with one inclusion proof per challenge, each an opening of the sector's
/// tree whose root is the sector proof's comm_r_last.
fn check_sector_proof<Tree: 'static + MerkleTreeTrait>(
    i: usize,
    proof: &FallbackPoStSectorProof<Tree>,
    config: &PoStConfig,
) -> Result<(), FilecoinError> {
    let invalid = FilecoinError::InvalidArgument;
    let what = format!("vanilla_proofs[{i}]");
    validate::field_elements(&what, proof, None)?;
    let [sector] = proof.vanilla_proof.sectors.as_slice() else {
        return Err(invalid(format!(
            "{what} holds {} sector proofs; a FallbackPoStSectorProof holds one",
            proof.vanilla_proof.sectors.len()
        )));
    };
    if sector.inclusion_proofs.len() != config.challenge_count {
        return Err(invalid(format!(
            "{what} holds {} inclusion proofs, {:?} challenges {} leaves per sector",
            sector.inclusion_proofs.len(),
            config.typ,
            config.challenge_count
        )));
    }
    let leaves = (u64::from(config.sector_size) / 32) as usize;
    for (j, inclusion) in sector.inclusion_proofs.iter().enumerate() {
        let what = format!("{what} inclusion proof {j}");
        validate::merkle_path(&what, inclusion, leaves)?;
        if inclusion.root() != sector.comm_r_last {
            return Err(invalid(format!(
                "{what}: its root is not the sector proof's comm_r_last"
            )));
        }
    }
    Ok(())
}

impl<Tree: 'static + MerkleTreeTrait> FilecoinProof for Post<Tree> {
    type Circuit = fallback::FallbackPoStCircuit<Tree>;

    fn circuit_id(&self) -> &str {
        &self.input.circuit_id
    }

    fn partitions(&self) -> usize {
        self.partition.len()
    }

    fn constraints(&self) -> usize {
        self.constraints
    }

    fn circuit(&self, index: usize) -> Result<Self::Circuit, FilecoinError> {
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::circuit(
            &self.pub_inputs,
            Default::default(),
            &self.partition[index],
            &self.pub_params,
            Some(index),
        )
        .map_err(|e| FilecoinError::Synthesis(format!("PoSt circuit: {e:#}")))
    }

    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params,
            Some(index),
        )
        .unwrap_or_default()
    }

    fn verify_whole(&self, proof: &[u8]) -> Result<(), FilecoinError> {
        let verifier = match self.config.typ {
            PoStType::Winning => "verify_winning_post",
            PoStType::Window => {
                // filecoin-proofs verifies a whole WindowPoSt; a lone
                // partition of a multi-partition PoSt is checked by the
                // bellperson pass before this against storage-proofs' inputs.
                if self.input.partition_index != 0 {
                    return Ok(());
                }
                "verify_window_post"
            }
        };
        let replicas: Vec<(SectorId, PublicReplicaInfo)> = match self
            .sectors
            .iter()
            .map(|(id, comm_r)| {
                let bytes: [u8; 32] = comm_r.into_bytes().try_into().expect("32-byte domain");
                PublicReplicaInfo::new(bytes).map(|replica| (*id, replica))
            })
            .collect()
        {
            Ok(replicas) => replicas,
            Err(e) => return verdict(verifier, Err(e)),
        };
        let (randomness, prover_id) = (&self.input.randomness, self.input.prover_id);
        let answer = match self.config.typ {
            PoStType::Winning => filecoin_proofs::verify_winning_post::<Tree>(
                &self.config,
                randomness,
                &replicas,
                prover_id,
                proof,
            ),
            PoStType::Window => {
                let map = replicas.into_iter().collect();
                filecoin_proofs::verify_window_post::<Tree>(&self.config, randomness, &map, prover_id, proof)
            }
        };
        verdict(verifier, answer)
    }
}
