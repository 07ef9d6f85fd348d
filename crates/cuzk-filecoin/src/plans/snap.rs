//! SnapDeals empty-sector update: one partition per vanilla partition proof.

use super::{deserialize_vanilla, internal, verdict, FilecoinPlan, FilecoinProof, PlanOptions, Spares};
use crate::native::snap::{SnapChallenge, SnapWitness};
use crate::native::{self, Assignment};
use crate::request::SnapInput;
use crate::validate::{self, guard};
use cuzk_core::PlanError;
use cuzk_core::{Scalar, Witness};
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
    /// Why the proof cannot verify ([`PlanOptions::allow_unverifiable`]).
    unverifiable: Option<String>,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> fmt::Debug for Snap<Tree> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapPlan")
            .field("registered_proof", &self.input.registered)
            .field("partitions", &self.vanilla.len())
            .field("unverifiable", &self.unverifiable.is_some())
            .finish()
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Snap<Tree> {
    /// Checks the vanilla partition proofs against the request: all of the
    /// update's partitions, in order, for its commitments. With
    /// [`PlanOptions::allow_unverifiable`], partition proofs that do not
    /// verify make the plan unverifiable instead of refusing it, provided
    /// they still meet what the circuit asserts while it is synthesised
    /// ([`check_circuit_preconditions`]); every other check is the same.
    pub fn new_with(input: SnapInput, options: &PlanOptions) -> Result<Self, PlanError> {
        let invalid = PlanError::InvalidArgument;
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
        let vanilla: Vec<PartitionProof<Tree>> =
            deserialize_vanilla(&input.vanilla_proofs, "PartitionProof")?;
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
        let unverifiable = if valid {
            None
        } else {
            let reason = options.unverifiable(
                "the vanilla partition proofs do not verify, in this order, against comm_r_old, comm_r_new and comm_d_new"
                    .into(),
            )?;
            // Proofs that verify meet these; others must be checked, or the
            // circuit's own assertions would panic it.
            check_circuit_preconditions(&vanilla, &pub_inputs, &pub_params)?;
            Some(reason)
        };
        let constraints = crate::constraints::snap(u64::from(config.sector_size));
        Ok(Self {
            input,
            config,
            pub_inputs,
            pub_params,
            vanilla,
            constraints,
            unverifiable,
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Snap<Tree> {
    /// What partition `index`'s circuit needs, read from the circuit the
    /// compound proof builds (its inputs are public fields), in the shape
    /// the circuit takes them.
    fn native_inputs(&self, index: usize) -> Result<SnapWitness, PlanError> {
        let fail = |what: &str| PlanError::Synthesis(format!("partition {index}: {what}"));
        let circuit = self.circuit(index)?;
        let (params, public, private) = (&circuit.pub_params, &circuit.pub_inputs, &circuit.priv_inputs);
        let value = |v: Option<Scalar>| v.ok_or_else(|| fail("a missing value"));
        let values = |v: &[Option<Scalar>]| v.iter().map(|&x| value(x)).collect::<Result<Vec<_>, _>>();
        let siblings = |levels: &[Vec<Option<Scalar>>]| {
            levels
                .iter()
                .map(|level| match level.as_slice() {
                    [one] => value(*one),
                    _ => Err(fail("a tree D level without exactly one sibling")),
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let bits = params.challenge_bit_len;
        let to_apex = bits
            .checked_sub(params.partition_bit_len + params.apex_leaf_bit_len)
            .ok_or_else(|| fail("a sector smaller than its apex tree"))?;
        let first = private
            .challenge_proofs
            .first()
            .ok_or_else(|| fail("no challenge proofs"))?;
        let challenges = private
            .challenge_proofs
            .iter()
            .map(|c| {
                if c.path_d_new.len() != bits {
                    return Err(fail("a tree D path of the wrong length"));
                }
                Ok(SnapChallenge {
                    leaf_r_old: value(c.leaf_r_old)?,
                    path_r_old: c.path_r_old.iter().map(|l| values(l)).collect::<Result<_, _>>()?,
                    leaf_d_new: value(c.leaf_d_new)?,
                    path_to_apex_leaf: siblings(&c.path_d_new[..to_apex])?,
                    path_r_new: c.path_r_new.iter().map(|l| values(l)).collect::<Result<_, _>>()?,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if challenges.len() != params.challenge_count || private.apex_leafs.len() != params.apex_leaf_count {
            return Err(fail("a partition proof of the wrong shape"));
        }
        Ok(SnapWitness {
            k_and_h_select: value(public.k_and_h_select)?,
            partition_bit_len: params.partition_bit_len,
            challenge_bit_len: bits,
            apex_leaf_bit_len: params.apex_leaf_bit_len,
            hs: storage_proofs_update::constants::hs(params.sector_nodes).to_vec(),
            comm_r_old: value(public.comm_r_old)?,
            comm_d_new: value(public.comm_d_new)?,
            comm_r_new: value(public.comm_r_new)?,
            comm_c: value(private.comm_c)?,
            root_r_old: value(private.root_r_old)?,
            root_r_new: value(private.root_r_new)?,
            apex_leafs: values(&private.apex_leafs)?,
            partition_path: siblings(&first.path_d_new[bits - params.partition_bit_len..])?,
            challenges,
        })
    }

    /// Partition `index`'s witness: the prologue, then the challenges
    /// written on the pool and laid end to end.
    fn native_partition(&self, index: usize, spares: Spares<'_>) -> Result<Witness, PlanError> {
        let inputs = self.native_inputs(index)?;
        let mut w = Assignment::default();
        let shared = native::snap::prologue(&mut w, &inputs);
        let challenges: Vec<usize> = (0..inputs.challenges.len()).collect();
        native::lay_out(w, &challenges, spares, |unit, &c| {
            native::snap::challenge::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(
                unit, &inputs, &shared, c,
            )
        })
        .map_err(|e| PlanError::Synthesis(format!("native witness of partition {index}: {e}")))
    }
}

/// What `EmptySectorUpdateCircuit` asserts (panics on) while it is
/// synthesised, for partition proofs that do not verify: per partition, one
/// partition path (TreeD's top `partition_bit_len` levels) shared by all
/// challenge proofs, and each challenge's new replica leaf the encoding of
/// its old leaf and data (`leaf_r_new = leaf_r_old + leaf_d_new * rho`, with
/// rho of the challenge the circuit derives from comm_r_new).
fn check_circuit_preconditions<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    vanilla: &[PartitionProof<Tree>],
    pub_inputs: &storage_proofs_update::PublicInputs,
    pub_params: &storage_proofs_update::PublicParams,
) -> Result<(), PlanError> {
    use storage_proofs_core::merkle::MerkleProofTrait;
    let invalid = PlanError::InvalidArgument;
    let phi = storage_proofs_update::vanilla::phi(&pub_inputs.comm_d_new, &pub_inputs.comm_r_old);
    let bits = pub_params.challenge_bit_len;
    let top = bits - pub_params.partition_bit_len;
    let high_shift = bits.saturating_sub(pub_inputs.h);
    for (k, proof) in vanilla.iter().enumerate() {
        if proof.challenge_proofs.len() != pub_params.challenge_count {
            return Err(invalid(format!(
                "vanilla_proofs[{k}] holds {} challenge proofs, a partition has {}",
                proof.challenge_proofs.len(),
                pub_params.challenge_count
            )));
        }
        if proof.apex_leafs.len() != pub_params.apex_leaf_count {
            return Err(invalid(format!(
                "vanilla_proofs[{k}] holds {} apex leaves, a partition has {}",
                proof.apex_leafs.len(),
                pub_params.apex_leaf_count
            )));
        }
        let partition_path = |j: usize| -> Vec<_> {
            proof.challenge_proofs[j].proof_d_new.path()[top..]
                .iter()
                .map(|(hashes, _)| hashes.clone())
                .collect()
        };
        let first = partition_path(0);
        let challenges =
            storage_proofs_update::Challenges::new(pub_params.sector_nodes, pub_inputs.comm_r_new, k);
        for (j, (challenge, c)) in proof.challenge_proofs.iter().zip(challenges).enumerate() {
            let what = format!("vanilla_proofs[{k}] challenge proof {j}");
            if partition_path(j) != first {
                return Err(invalid(format!(
                    "{what}: its TreeD path's top {} levels differ from the partition's first challenge's",
                    pub_params.partition_bit_len
                )));
            }
            let rho = storage_proofs_update::vanilla::rho(&phi, c >> high_shift);
            let old: Scalar = challenge.proof_r_old.leaf().into();
            let data: Scalar = challenge.proof_d_new.leaf().into();
            let new: Scalar = challenge.proof_r_new.leaf().into();
            if old + data * rho != new {
                return Err(invalid(format!(
                    "{what}: its new replica leaf is not the encoding of its old leaf and data"
                )));
            }
        }
    }
    Ok(())
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
) -> Result<(), PlanError> {
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
    type Input = SnapInput;

    plan_fields!(vanilla);

    fn circuit(&self, index: usize) -> Result<Self::Circuit, PlanError> {
        EmptySectorUpdateCompound::<Tree>::circuit(
            &self.pub_inputs,
            (),
            &self.vanilla[index],
            &self.pub_params,
            Some(index),
        )
        .map_err(|e| PlanError::Synthesis(format!("partition {index} circuit: {e:#}")))
    }

    /// The partition written natively ([`crate::native::snap`]),
    /// challenges in parallel.
    fn native_witness(&self, index: usize, spares: Spares<'_>) -> Option<Result<Witness, PlanError>> {
        Some(self.native_partition(index, spares))
    }

    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        EmptySectorUpdateCompound::<Tree>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params,
            Some(index),
        )
        .unwrap_or_default()
    }

    fn verify_whole(&self, proof: &[u8]) -> Result<(), PlanError> {
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
