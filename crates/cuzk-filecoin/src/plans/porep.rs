//! PoRep commit phase 2: one partition per vanilla partition proof of C1.

use super::{internal, verdict, FilecoinPlan, FilecoinProof, PlanOptions, Spares, TreeDomain};
use crate::native::merkle::Level;
use crate::native::porep::{ChallengeWitness, ColumnWitness, PartitionWitness};
use crate::native::{self, Assignment};
use crate::request::PorepInput;
use crate::validate::{self, guard};
use cuzk_core::PlanError;
use cuzk_core::{Scalar, Witness};
use filecoin_hashers::Domain;
use filecoin_proofs::{
    parameters::setup_params, DefaultPieceDomain, DefaultPieceHasher, MerkleTreeTrait, PoRepConfig,
};
use std::fmt;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::{compound_proof, compound_proof::CompoundProof, proof::ProofScheme};
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};

/// The plan of a PoRep C2 request.
pub type PorepPlan<Tree> = FilecoinPlan<Porep<Tree>>;

type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
type Vanilla<'a, Tree> = StackedDrg<'a, Tree, DefaultPieceHasher>;

/// PoRep C2 as a [`FilecoinProof`]: the C1 output's vanilla partition
/// proofs, checked, with the StackedDrg public inputs and parameters.
pub struct Porep<Tree: 'static + MerkleTreeTrait> {
    input: PorepInput,
    config: PoRepConfig,
    pub_inputs: stacked::PublicInputs<TreeDomain<Tree>, DefaultPieceDomain>,
    pub_params: stacked::PublicParams<Tree>,
    vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
    constraints: usize,
    /// Why the proof cannot verify ([`PlanOptions::allow_unverifiable`]).
    unverifiable: Option<String>,
}

impl<Tree: 'static + MerkleTreeTrait> fmt::Debug for Porep<Tree> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PorepPlan")
            .field("registered_proof", &self.input.registered)
            .field("sector", &self.input.sector_number)
            .field("partitions", &self.vanilla.len())
            .field("unverifiable", &self.unverifiable.is_some())
            .finish()
    }
}

impl<Tree: 'static + MerkleTreeTrait> Porep<Tree> {
    /// Checks the C1 output against the request: its vanilla proofs must
    /// hold for its commitments, seed and the replica id of the request's
    /// miner and sector. With
    /// [`PlanOptions::allow_unverifiable`], vanilla proofs that do not hold
    /// (openings, labels, challenges) make the plan unverifiable instead of
    /// refusing it; every other check is the same.
    pub fn new_with(input: PorepInput, options: &PlanOptions) -> Result<Self, PlanError> {
        let invalid = PlanError::InvalidArgument;
        let config = input.registered.as_v1_config();
        let c1 = &input.c1;
        let vanilla = TryInto::<Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>>::try_into(
            c1.vanilla_proofs.clone(),
        )
        .map_err(|e| invalid(format!("C1 vanilla proofs: {e:#}")))?;
        if vanilla.len() != usize::from(config.partitions) {
            return Err(invalid(format!(
                "C1 holds {} vanilla partition proofs, {:?} needs {}",
                vanilla.len(),
                input.registered,
                usize::from(config.partitions)
            )));
        }
        if let Some(k) = vanilla.iter().position(Vec::is_empty) {
            return Err(invalid(format!(
                "C1 vanilla partition proof {k} holds no challenge proofs"
            )));
        }
        // Their shape first: nothing below may see a malformed proof.
        let setup = compound_proof::SetupParams {
            vanilla_params: setup_params(&config).map_err(internal)?,
            partitions: Some(usize::from(config.partitions)),
            priority: false,
        };
        let pub_params = <Compound<Tree> as CompoundProof<Vanilla<'_, Tree>, _>>::setup(&setup)
            .map_err(internal)?
            .vanilla_params;
        let mut unverifiable = check_shapes(&vanilla, &pub_params, u64::from(config.sector_size), options)?;
        let replica_id: TreeDomain<Tree> = {
            let fr: Scalar = c1.replica_id.into();
            fr.into()
        };
        // The proof is checked against the replica id filecoin-proofs derives
        // from the request's miner and sector; a mismatch would only fail at
        // the end, so reject it now.
        let expected = stacked::generate_replica_id::<Tree::Hasher, _>(
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
        // The vanilla proofs must hold for these commitments and this seed
        // (storage-proofs' vanilla verifier: Merkle paths and labels, cheap
        // next to the SNARK), so a mismatched C1 is refused now rather than
        // failing verification after the proving work. (Already known not
        // to hold when an opening failed above.)
        if unverifiable.is_none() {
            let valid = guard("the C1 vanilla proofs", || {
                Ok(<Vanilla<'_, Tree> as ProofScheme<'_>>::verify_all_partitions(
                    &pub_params,
                    &pub_inputs,
                    &vanilla,
                )
                .unwrap_or(false))
            })?;
            if !valid {
                unverifiable = Some(
                    options.unverifiable(
                        "the C1 vanilla proofs do not verify against its comm_r, comm_d, seed and replica_id"
                            .into(),
                    )?,
                );
            }
        }
        let constraints = crate::constraints::porep(u64::from(config.sector_size));
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

/// The shape of every challenge proof of every partition, before
/// storage-proofs' verifier (which indexes and hashes it unchecked) sees it:
/// every field element canonical, every column of one row per layer, every
/// Merkle path element well formed (see [`crate::validate`]), the comm_d and
/// comm_r_last openings of the sector's trees (the verifier checks only
/// their roots and indices, the circuit opens them fully: so they are
/// verified here), as many DRG and expander parent columns as the graph has
/// parents, and one labeling proof per layer.
///
/// An opening that does not hash to its root is a vanilla proof that does
/// not verify, not a malformed one: refused, or with
/// [`PlanOptions::allow_unverifiable`] returned as the reason the plan is
/// unverifiable (the shapes are all checked either way).
fn check_shapes<Tree: 'static + MerkleTreeTrait>(
    vanilla: &[Vec<stacked::Proof<Tree, DefaultPieceHasher>>],
    pub_params: &stacked::PublicParams<Tree>,
    sector_size: u64,
    options: &PlanOptions,
) -> Result<Option<String>, PlanError> {
    let invalid = PlanError::InvalidArgument;
    let leaves = (sector_size / 32) as usize;
    let layers = pub_params.num_layers;
    let drg = pub_params.graph.base_graph().degree();
    let exp = pub_params.graph.expansion_degree();
    let mut unverifiable = None;
    for (k, partition) in vanilla.iter().enumerate() {
        for (j, proof) in partition.iter().enumerate() {
            let what = format!("C1 partition {k} challenge proof {j}");
            validate::field_elements(&what, proof, Some(layers))?;
            validate::merkle_path(&format!("{what}: comm_d_proofs"), &proof.comm_d_proofs, leaves)?;
            validate::merkle_path(
                &format!("{what}: comm_r_last_proof"),
                &proof.comm_r_last_proof,
                leaves,
            )?;
            for (name, opening) in [
                ("comm_d_proofs", proof.comm_d_proofs.verify()),
                ("comm_r_last_proof", proof.comm_r_last_proof.verify()),
            ] {
                if !opening && unverifiable.is_none() {
                    unverifiable = Some(options.unverifiable(format!(
                        "{what}: {name} does not open its root (its path does not hash to it)"
                    ))?);
                }
            }
            let columns = &proof.replica_column_proofs;
            if columns.drg_parents.len() != drg || columns.exp_parents.len() != exp {
                return Err(invalid(format!(
                    "{what}: {} DRG and {} expander parent columns, the graph has {drg} and {exp} parents",
                    columns.drg_parents.len(),
                    columns.exp_parents.len()
                )));
            }
            if proof.labeling_proofs.len() != layers {
                return Err(invalid(format!(
                    "{what}: {} labeling proofs for {layers} layers",
                    proof.labeling_proofs.len()
                )));
            }
        }
    }
    Ok(unverifiable)
}

/// A vanilla column proof's parts, read back through its serialised form:
/// storage-proofs keeps the inclusion proof crate-private, and the circuit
/// it builds from it keeps the path private too. Field order is the
/// vanilla types' (`ColumnProof { column: Column { index, rows, _h },
/// inclusion_proof }`); a change there fails the read, and the partition
/// is computed through the gadgets instead.
#[derive(serde::Deserialize)]
#[serde(bound = "")]
struct ColumnProofParts<D: serde::de::DeserializeOwned, P: serde::de::DeserializeOwned> {
    column: ColumnParts<D>,
    inclusion_proof: P,
}

#[derive(serde::Deserialize)]
#[serde(bound = "")]
struct ColumnParts<D: serde::de::DeserializeOwned> {
    _index: u32,
    rows: Vec<D>,
    _h: std::marker::PhantomData<()>,
}

impl<Tree: 'static + MerkleTreeTrait> Porep<Tree> {
    /// A column proof's rows and path.
    fn column<P>(proof: &stacked::ColumnProof<P>) -> Result<ColumnWitness, PlanError>
    where
        P: MerkleProofTrait + serde::Serialize + serde::de::DeserializeOwned,
    {
        let fail = |what: &str| PlanError::Synthesis(format!("a column proof's {what}"));
        let bytes = bincode::serialize(proof).map_err(|_| fail("bytes"))?;
        let parts: ColumnProofParts<<P::Hasher as filecoin_hashers::Hasher>::Domain, P> =
            bincode::deserialize(&bytes).map_err(|_| fail("layout"))?;
        Ok(ColumnWitness {
            rows: parts.column.rows.into_iter().map(Into::into).collect(),
            path: Level::path_from_options(parts.inclusion_proof.as_options()).ok_or_else(|| fail("path"))?,
        })
    }

    /// What partition `index`'s circuit needs, as the compound proof
    /// builds it from the partition's challenge proofs.
    fn native_inputs(&self, index: usize) -> Result<PartitionWitness, PlanError> {
        let fail = |what: String| PlanError::Synthesis(format!("partition {index}: {what}"));
        let proofs = self
            .vanilla
            .get(index)
            .ok_or_else(|| fail("no such partition".into()))?;
        let first = proofs.first().ok_or_else(|| fail("no challenge proofs".into()))?;
        let tau = self
            .pub_inputs
            .tau
            .as_ref()
            .ok_or_else(|| fail("no commitments".into()))?;
        let challenges = proofs
            .iter()
            .map(|p| {
                let columns = |columns: &Vec<stacked::ColumnProof<_>>| {
                    columns.iter().map(Self::column).collect::<Result<Vec<_>, _>>()
                };
                let path = |options| {
                    Level::path_from_options(options)
                        .ok_or_else(|| fail("a path with a missing element".into()))
                };
                Ok(ChallengeWitness {
                    challenge: p.comm_d_proofs.path_index() as u64,
                    data_leaf: p.comm_d_proofs.leaf().into(),
                    comm_d_path: path(p.comm_d_proofs.as_options())?,
                    comm_r_last_path: path(p.comm_r_last_proof.as_options())?,
                    comm_c_path: Self::column(&p.replica_column_proofs.c_x)?.path,
                    drg_parents: columns(&p.replica_column_proofs.drg_parents)?,
                    exp_parents: columns(&p.replica_column_proofs.exp_parents)?,
                })
            })
            .collect::<Result<Vec<_>, PlanError>>()?;
        Ok(PartitionWitness {
            replica_id: self.pub_inputs.replica_id.into(),
            comm_d: tau.comm_d.into(),
            comm_r: tau.comm_r.into(),
            comm_r_last: first.comm_r_last().into(),
            comm_c: first.comm_c().into(),
            challenges,
        })
    }

    /// Partition `index`'s witness: the prologue, then the challenges
    /// written natively on the pool and laid end to end.
    fn native_partition(&self, index: usize, spares: Spares<'_>) -> Result<Witness, PlanError> {
        let inputs = self.native_inputs(index)?;
        let mut w = Assignment::default();
        let replica_bits = native::porep::prologue(&mut w, &inputs);
        native::lay_out(w, &inputs.challenges, spares, |unit, c| {
            native::porep::challenge::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(
                unit,
                &replica_bits,
                c,
            )
        })
        .map_err(|e| PlanError::Synthesis(format!("native witness of partition {index}: {e}")))
    }
}

impl<Tree: 'static + MerkleTreeTrait> FilecoinProof for Porep<Tree> {
    type Circuit = stacked::StackedCircuit<Tree, DefaultPieceHasher>;
    type Input = PorepInput;

    plan_fields!(vanilla);

    fn circuit(&self, index: usize) -> Result<Self::Circuit, PlanError> {
        <Compound<Tree> as CompoundProof<Vanilla<'_, Tree>, _>>::circuit(
            &self.pub_inputs,
            (),
            &self.vanilla[index],
            &self.pub_params,
            Some(index),
        )
        .map_err(|e| PlanError::Synthesis(format!("partition {index} circuit: {e:#}")))
    }

    /// storage-proofs' `StackedCircuit` runs each challenge proof in a
    /// top-level namespace `challenge_<i>`, after a prologue (replica id,
    /// comm_d, comm_r, comm_r_last, comm_c) that only depends on the
    /// partition: the challenges are independent units.
    fn unit_prefix(&self) -> Option<&'static str> {
        Some("challenge_")
    }

    fn unit_count(&self, index: usize) -> usize {
        self.vanilla.get(index).map_or(0, Vec::len)
    }

    /// The partition's circuit from challenge proof `unit` alone (the
    /// compound proof builds the same prologue from any of its proofs: it
    /// requires them to agree on comm_r_last and comm_c).
    fn unit_circuit(&self, index: usize, unit: usize) -> Result<Self::Circuit, PlanError> {
        let one = vec![self.vanilla[index]
            .get(unit)
            .ok_or_else(|| PlanError::Synthesis(format!("partition {index} has no challenge proof {unit}")))?
            .clone()];
        <Compound<Tree> as CompoundProof<Vanilla<'_, Tree>, _>>::circuit(
            &self.pub_inputs,
            (),
            &one,
            &self.pub_params,
            Some(index),
        )
        .map_err(|e| PlanError::Synthesis(format!("partition {index} challenge {unit} circuit: {e:#}")))
    }

    /// The partition written natively ([`crate::native::porep`]),
    /// challenges in parallel, for replica trees hashed with Poseidon (all
    /// of Filecoin's).
    fn native_witness(&self, index: usize, spares: Spares<'_>) -> Option<Result<Witness, PlanError>> {
        super::hashed_with_poseidon::<Tree>().then(|| self.native_partition(index, spares))
    }

    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        <Compound<Tree> as CompoundProof<Vanilla<'_, Tree>, _>>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params,
            Some(index),
        )
        .unwrap_or_default()
    }

    fn verify_whole(&self, proof: &[u8]) -> Result<(), PlanError> {
        let c1 = &self.input.c1;
        verdict(
            "verify_seal",
            filecoin_proofs::verify_seal::<Tree>(
                &self.config,
                c1.comm_r,
                c1.comm_d,
                self.input.prover_id,
                self.input.sector_number,
                c1.ticket,
                c1.seed,
                proof,
            ),
        )
    }
}
