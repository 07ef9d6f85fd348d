//! SnapDeals empty-sector update: one partition per vanilla partition proof.

use super::{internal, verdict, FilecoinPlan, FilecoinProof};
use crate::request::SnapInput;
use crate::validate::{self, guard};
use crate::FilecoinError;
use cuzk_core::Scalar;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{DefaultPieceDomain, MerkleTreeTrait, PoRepConfig, SectorUpdateConfig, TreeRHasher};
use std::fmt;
use storage_proofs_core::{compound_proof, compound_proof::CompoundProof};
use storage_proofs_update::{EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof};

/// The plan of a SnapDeals request.
pub type SnapPlan<Tree> = FilecoinPlan<Snap<Tree>>;

/// SnapDeals as a [`FilecoinProof`]: the vanilla partition proofs,
/// checked, with the EmptySectorUpdate public inputs and parameters.
pub struct Snap<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    input: SnapInput,
    config: PoRepConfig,
    pub_inputs: storage_proofs_update::PublicInputs,
    pub_params: storage_proofs_update::PublicParams,
    vanilla: Vec<PartitionProof<Tree>>,
    constraints: usize,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> fmt::Debug for Snap<Tree> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapPlan")
            .field("registered_proof", &self.input.registered)
            .field("partitions", &self.vanilla.len())
            .finish()
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapPlan<Tree> {
    /// The plan of a checked SnapDeals request.
    pub fn new(input: SnapInput) -> Result<Self, FilecoinError> {
        Snap::new(input).map(FilecoinPlan::from_proof)
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Snap<Tree> {
    /// Checks the vanilla partition proofs against the request: all of the
    /// update's partitions, in order, for its commitments.
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
        let leaves = (u64::from(update.sector_size) / 32) as usize;
        for (i, proof) in vanilla.iter().enumerate() {
            check_partition_proof(i, proof, leaves)?;
        }
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
            .map_err(internal)?
            .vanilla_params;
        // The partition proofs must hold, in order, for these commitments
        // (filecoin-proofs' vanilla check), before any proving work.
        let partition_bytes: Vec<filecoin_proofs_api::PartitionProofBytes> = input
            .vanilla_proofs
            .iter()
            .cloned()
            .map(filecoin_proofs_api::PartitionProofBytes)
            .collect();
        let valid = guard("the SnapDeals vanilla proofs", || {
            Ok(filecoin_proofs_api::update::verify_partition_proofs(
                input.registered,
                &partition_bytes,
                input.comm_r_old,
                input.comm_r_new,
                input.comm_d_new,
            )
            .unwrap_or(false))
        })?;
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

/// The shape of partition proof `i` before storage-proofs' verifier (which
/// hashes it unchecked) sees it: every field element canonical and every
/// Merkle path element well formed (see [`crate::validate`]), and each
/// challenge's three openings of the shape of their trees (TreeR for the old
/// and new replicas, the binary TreeD for the new data).
fn check_partition_proof<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    i: usize,
    proof: &PartitionProof<Tree>,
    leaves: usize,
) -> Result<(), FilecoinError> {
    let what = format!("vanilla_proofs[{i}]");
    validate::field_elements(&what, proof, None)?;
    for (j, challenge) in proof.challenge_proofs.iter().enumerate() {
        let what = format!("{what} challenge proof {j}");
        validate::merkle_path(&format!("{what}: proof_r_old"), &challenge.proof_r_old, leaves)?;
        validate::merkle_path(&format!("{what}: proof_d_new"), &challenge.proof_d_new, leaves)?;
        validate::merkle_path(&format!("{what}: proof_r_new"), &challenge.proof_r_new, leaves)?;
    }
    Ok(())
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> FilecoinProof for Snap<Tree> {
    type Circuit = EmptySectorUpdateCircuit<Tree>;

    fn circuit_id(&self) -> &str {
        &self.input.circuit_id
    }

    fn partitions(&self) -> usize {
        self.vanilla.len()
    }

    fn constraints(&self) -> usize {
        self.constraints
    }

    fn circuit(&self, index: usize) -> Result<Self::Circuit, FilecoinError> {
        EmptySectorUpdateCompound::<Tree>::circuit(
            &self.pub_inputs,
            (),
            &self.vanilla[index],
            &self.pub_params,
            Some(index),
        )
        .map_err(|e| FilecoinError::Synthesis(format!("partition {index} circuit: {e:#}")))
    }

    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        EmptySectorUpdateCompound::<Tree>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params,
            Some(index),
        )
        .unwrap_or_default()
    }

    fn verify_whole(&self, proof: &[u8]) -> Result<(), FilecoinError> {
        verdict(
            "verify_empty_sector_update_proof",
            filecoin_proofs::verify_empty_sector_update_proof::<Tree>(
                &self.config,
                proof,
                self.input.comm_r_old,
                self.input.comm_r_new,
                self.input.comm_d_new,
            ),
        )
    }
}
