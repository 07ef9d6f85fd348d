//! WinningPoSt (one circuit over all challenged sectors) and one WindowPoSt
//! partition.

use super::{
    deserialize_vanilla, internal, verdict, FilecoinPlan, FilecoinProof, PlanOptions, Spares, TreeDomain,
};
use crate::native::merkle::Level;
use crate::native::post::SectorWitness;
use crate::native::{self, Assignment};
use crate::request::PostInput;
use crate::validate::{self, guard};
use cuzk_core::PlanError;
use cuzk_core::{Scalar, Witness};
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
    /// Why the proof cannot verify ([`PlanOptions::allow_unverifiable`]).
    unverifiable: Option<String>,
    /// See [`PlanOptions::paths_on_device`].
    paths_on_device: bool,
}

impl<Tree: 'static + MerkleTreeTrait> fmt::Debug for Post<Tree> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostPlan")
            .field("registered_proof", &self.input.registered)
            .field("sectors", &self.sectors.len())
            .field("partition_index", &self.input.partition_index)
            .field("unverifiable", &self.unverifiable.is_some())
            .finish()
    }
}

impl<Tree: 'static + MerkleTreeTrait> Post<Tree> {
    /// Checks the vanilla proofs against the request: they must answer the
    /// partition's challenges for its randomness, prover and sectors. With
    /// [`PlanOptions::allow_unverifiable`], vanilla proofs that do not
    /// answer the challenges make the plan unverifiable instead of refusing
    /// it (the partition is then laid out as filecoin-proofs lays it out);
    /// every other check is the same.
    pub fn new_with(input: PostInput, options: &PlanOptions) -> Result<Self, PlanError> {
        let invalid = PlanError::InvalidArgument;
        let config = input.registered.as_v1_config();
        let proofs: Vec<FallbackPoStSectorProof<Tree>> =
            deserialize_vanilla(&input.vanilla_proofs, "FallbackPoStSectorProof")?;
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
        // With the switch on, an inclusion proof that does not open its root
        // makes the request unverifiable before filecoin-proofs lays out the
        // partition: that verifies every inclusion proof and logs an error
        // for each one that fails (23,490 lines for a full 32 GiB WindowPoSt
        // partition of real-structure inputs).
        let mut unverifiable = None;
        if options.allow_unverifiable {
            unverifiable = proofs.iter().enumerate().find_map(|(i, proof)| {
                let sector = proof.vanilla_proof.sectors.first()?;
                let j = sector.inclusion_proofs.iter().position(|p| !p.verify())?;
                Some(format!(
                    "vanilla_proofs[{i}] inclusion proof {j} does not open its root (its path does not hash to it)"
                ))
            });
        }
        // The compound proof's parameters and public inputs, which the two
        // types build alike from their own vanilla parameters, partition
        // count and partition index `k`.
        let compound = |vanilla_params, partitions, k| -> Result<_, PlanError> {
            let setup = compound_proof::SetupParams {
                vanilla_params,
                partitions,
                priority: config.priority,
            };
            let pub_params = FallbackPoStCompound::<Tree>::setup(&setup).map_err(internal)?;
            let pub_inputs = fallback::PublicInputs {
                randomness,
                prover_id,
                sectors: public_sectors,
                k,
            };
            Ok((pub_params, pub_inputs))
        };
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
                let (pub_params, pub_inputs) =
                    compound(winning_post_setup_params(&config).map_err(internal)?, None, None)?;
                let partitions = pub_params.partitions.unwrap_or(1);
                // filecoin-proofs' layout, which verifies the proofs (unless
                // they are already known not to hold).
                let laid_out = match unverifiable {
                    Some(_) => None,
                    None => Some(guard("the PoSt vanilla proofs", || {
                        Ok(filecoin_proofs::partition_vanilla_proofs(
                            &config,
                            &pub_params.vanilla_params,
                            &pub_inputs,
                            partitions,
                            &proofs,
                        ))
                    })?),
                };
                let own = || vec![winning_partition(&proofs, pub_params.vanilla_params.sector_count)];
                let mut partitioned = match laid_out {
                    Some(Ok(partitioned)) => partitioned,
                    Some(Err(e)) => {
                        unverifiable = Some(refuse_or_keep(
                            options,
                            format!("vanilla proofs do not match the challenges: {e:#}"),
                        )?);
                        own()
                    }
                    None => own(),
                };
                if partitioned.len() != 1 {
                    return Err(PlanError::Internal(format!(
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
                let (pub_params, pub_inputs) = compound(
                    window_post_setup_params(&config),
                    Some(1),
                    Some(input.partition_index as usize),
                )?;
                // filecoin-proofs' layout, which verifies the proofs (unless
                // they are already known not to hold).
                let laid_out = match unverifiable {
                    Some(_) => None,
                    None => Some(guard("the PoSt vanilla proofs", || {
                        Ok(filecoin_proofs::single_partition_vanilla_proofs(
                            &config,
                            &pub_params.vanilla_params,
                            &pub_inputs,
                            &proofs,
                        ))
                    })?),
                };
                let own = || window_partition(&proofs, pub_params.vanilla_params.sector_count);
                let partition = match laid_out {
                    Some(Ok(partition)) => partition,
                    Some(Err(e)) => {
                        unverifiable = Some(refuse_or_keep(
                            options,
                            format!(
                                "vanilla proofs do not match partition {}'s challenges: {e:#}",
                                input.partition_index
                            ),
                        )?);
                        own()
                    }
                    None => own(),
                };
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
        let answers = unverifiable.is_some()
            || guard("the PoSt vanilla proofs", || {
                Ok(<FallbackPoSt<'_, Tree> as ProofScheme<'_>>::verify(
                    &pub_params,
                    &check_inputs,
                    &partition[0],
                )
                .unwrap_or(false))
            })?;
        if !answers {
            unverifiable = Some(refuse_or_keep(
                options,
                format!(
                    "the vanilla proofs do not answer partition {k}'s challenges \
                 (wrong partition_index, randomness, miner_id or sectors?)"
                ),
            )?);
        }
        Ok(Self {
            input,
            config,
            pub_inputs,
            pub_params,
            partition,
            sectors,
            constraints,
            unverifiable,
            paths_on_device: options.paths_on_device,
        })
    }
}

/// [`PlanOptions::unverifiable`] for vanilla proofs that do not hold, with
/// one warning when the request is refused: storage-proofs' own errors
/// about them (one a failing challenge) are turned off in the daemon
/// ([`validate::CLIENT_INPUT_LOG_TARGETS`]), and a client's bad input is
/// not the daemon's error.
fn refuse_or_keep(options: &PlanOptions, reason: String) -> Result<String, PlanError> {
    let verdict = options.unverifiable(reason);
    if let Err(e) = &verdict {
        tracing::warn!(error = %e, "PoSt request refused: its vanilla proofs do not hold");
    }
    verdict
}

/// The WindowPoSt partition of `proofs` (checked by [`check_sector_proof`])
/// as filecoin-proofs' `single_partition_vanilla_proofs` lays it out before
/// it verifies it: every sector's proof in request order (the first proof
/// of each sector id, as its lookup finds them), the last repeated up to
/// the partition's `sector_count`. Used for unverifiable requests, which
/// that function refuses.
fn window_partition<Tree: 'static + MerkleTreeTrait>(
    proofs: &[FallbackPoStSectorProof<Tree>],
    sector_count: usize,
) -> fallback::Proof<<Tree as MerkleTreeTrait>::Proof> {
    let mut sectors: Vec<_> = proofs
        .iter()
        .filter_map(|p| proofs.iter().find(|q| q.sector_id == p.sector_id))
        .flat_map(|p| p.vanilla_proof.sectors.iter().cloned())
        .collect();
    pad(&mut sectors, sector_count);
    fallback::Proof { sectors }
}

/// The WinningPoSt partition of `proofs` (one sector proof, checked by
/// [`check_sector_proof`]) as filecoin-proofs' `partition_vanilla_proofs`
/// lays it out: each inclusion proof a sector proof of its own, the last
/// repeated up to `sector_count`. Used for unverifiable requests.
fn winning_partition<Tree: 'static + MerkleTreeTrait>(
    proofs: &[FallbackPoStSectorProof<Tree>],
    sector_count: usize,
) -> fallback::Proof<<Tree as MerkleTreeTrait>::Proof> {
    let mut sectors: Vec<_> = proofs
        .iter()
        .flat_map(|p| &p.vanilla_proof.sectors)
        .flat_map(|sector| {
            sector
                .inclusion_proofs
                .iter()
                .map(|inclusion| fallback::SectorProof {
                    inclusion_proofs: vec![inclusion.clone()],
                    comm_c: sector.comm_c,
                    comm_r_last: sector.comm_r_last,
                })
        })
        .collect();
    pad(&mut sectors, sector_count);
    fallback::Proof { sectors }
}

impl<Tree: 'static + MerkleTreeTrait> Post<Tree> {
    /// The sectors of partition `index` as the compound proof lays them
    /// out (see [`FilecoinProof::unit_circuit`]), each with what its
    /// circuit needs.
    fn native_sectors(&self, index: usize) -> Result<Vec<SectorWitness>, PlanError> {
        let missing = |what: String| PlanError::Synthesis(format!("partition {index}: {what}"));
        let vanilla = self
            .partition
            .get(index)
            .ok_or_else(|| missing("no such partition".into()))?;
        let publics = self
            .pub_inputs
            .sectors
            .chunks(self.pub_params.sector_count.max(1))
            .nth(index)
            .ok_or_else(|| missing("no public sectors".into()))?;
        vanilla
            .sectors
            .iter()
            .enumerate()
            .map(|(unit, proof)| {
                let public = publics
                    .get(unit)
                    .or(publics.last())
                    .ok_or_else(|| missing(format!("no public sector {unit}")))?;
                let challenges = proof
                    .leafs()
                    .into_iter()
                    .zip(proof.as_options())
                    .map(|(leaf, path)| {
                        let levels = Level::path_from_options(path).ok_or_else(|| {
                            missing(format!("sector {unit}: a path with a missing element"))
                        })?;
                        Ok((leaf.into(), levels))
                    })
                    .collect::<Result<Vec<_>, PlanError>>()?;
                Ok(SectorWitness {
                    comm_r: public.comm_r.into(),
                    comm_c: proof.comm_c.into(),
                    comm_r_last: proof.comm_r_last.into(),
                    challenges,
                })
            })
            .collect()
    }

    /// Partition `index`'s witness, sectors written natively on the pool
    /// a few at a time (their paths' hashes filling the Poseidon lanes),
    /// each group into its own stretch of the aux vector; with
    /// [`PlanOptions::paths_on_device`], their paths left to the prover.
    fn native_partition(&self, index: usize, spares: Spares<'_>) -> Result<Witness, PlanError> {
        let sectors = self.native_sectors(index)?;
        // Groups of one size: the pieces of one vector have one shape.
        let size = [3, 2]
            .into_iter()
            .find(|size| sectors.len() % size == 0)
            .unwrap_or(1);
        let groups: Vec<&[SectorWitness]> = sectors.chunks(size).collect();
        let on_device = self.paths_on_device
            && native::post::tree_on_device::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>();
        let mut witness = native::lay_out(Assignment::default(), &groups, spares, |w, group| {
            if on_device {
                native::post::sectors_on_device::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(
                    w, group,
                )
            } else {
                native::post::sectors::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(w, group)
            }
        })
        .map_err(|e| PlanError::Synthesis(format!("native witness of partition {index}: {e}")))?;
        // A benchmark's input planned unverifiable has random paths.
        if let Some(left) = witness.left.as_mut().filter(|_| self.unverifiable.is_some()) {
            std::sync::Arc::make_mut(left).check_roots = false;
        }
        Ok(witness)
    }
}

/// Repeats the last element until `v` holds `len` (the circuit's sector
/// count; `v` is never empty here: the request holds a checked proof).
fn pad<T: Clone>(v: &mut Vec<T>, len: usize) {
    while let Some(last) = v.last().filter(|_| v.len() < len).cloned() {
        v.push(last);
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
) -> Result<(), PlanError> {
    let invalid = PlanError::InvalidArgument;
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
    type Input = PostInput;

    plan_fields!(partition);

    fn circuit(&self, index: usize) -> Result<Self::Circuit, PlanError> {
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::circuit(
            &self.pub_inputs,
            Default::default(),
            &self.partition[index],
            &self.pub_params,
            Some(index),
        )
        .map_err(|e| PlanError::Synthesis(format!("PoSt circuit: {e:#}")))
    }

    /// storage-proofs' `FallbackPoStCircuit` proves each sector in its own
    /// namespace `sector_<i>` inside `outer namespace`, with nothing
    /// before: the sectors are independent units (2349 in a 32 GiB
    /// WindowPoSt partition).
    fn unit_prefix(&self) -> Option<&'static str> {
        Some("outer namespace/sector_")
    }

    fn unit_count(&self, index: usize) -> usize {
        self.partition
            .get(index)
            .map_or(0, |vanilla| vanilla.sectors.len())
    }

    /// The partition's circuit with sector `unit` alone: that sector's
    /// circuit as the compound proof builds it (its public sector, the last
    /// one repeated where the partition is short of sectors) and the prover
    /// id.
    fn unit_circuit(&self, index: usize, unit: usize) -> Result<Self::Circuit, PlanError> {
        let missing = || PlanError::Synthesis(format!("partition {index} has no sector {unit}"));
        let vanilla = self.partition.get(index).ok_or_else(missing)?;
        let sector_proof = vanilla.sectors.get(unit).ok_or_else(missing)?;
        let public = self
            .pub_inputs
            .sectors
            .chunks(self.pub_params.sector_count.max(1))
            .nth(index)
            .and_then(|sectors| sectors.get(unit).or(sectors.last()))
            .ok_or_else(missing)?;
        let sector = fallback::Sector::circuit(public, sector_proof)
            .map_err(|e| PlanError::Synthesis(format!("partition {index} sector {unit} circuit: {e:#}")))?;
        Ok(fallback::FallbackPoStCircuit {
            prover_id: Some(self.pub_inputs.prover_id.into()),
            sectors: vec![sector],
        })
    }

    /// Every sector of the partition written natively
    /// ([`crate::native::post`]), sectors in parallel, for replica trees
    /// hashed with Poseidon (all of Filecoin's).
    fn native_witness(&self, index: usize, spares: Spares<'_>) -> Option<Result<Witness, PlanError>> {
        super::hashed_with_poseidon::<Tree>().then(|| self.native_partition(index, spares))
    }

    fn public_inputs(&self, index: usize) -> Vec<Scalar> {
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::generate_public_inputs(
            &self.pub_inputs,
            &self.pub_params,
            Some(index),
        )
        .unwrap_or_default()
    }

    fn verify_whole(&self, proof: &[u8]) -> Result<(), PlanError> {
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
