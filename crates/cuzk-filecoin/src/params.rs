//! Official parameter files (`v28-<circuit id>.params` / `.vk` in the
//! parameter cache) and generating them for test sizes, where no download
//! exists: filecoin-proofs' own generator over the blank circuit, seeded so
//! the same seed gives the same files.

use crate::registry::{lookup, POST_PROOFS, SEAL_PROOFS, UPDATE_PROOFS};
use crate::{PlanError, ShapeDispatch};
use cuzk_core::ProofKind;
use filecoin_proofs::{
    parameters::{public_params, window_post_public_params, winning_post_public_params},
    DefaultPieceHasher, MerkleTreeTrait, PoRepConfig, PoStConfig, PoStType, TreeRHasher,
};
use rand::SeedableRng;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::{
    parameter_cache_params_path, parameter_cache_verifying_key_path, VERSION,
};
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::{EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound};

/// The parameter files of one circuit.
#[derive(Clone, Debug)]
pub struct ParameterFiles {
    /// `v28-<id>.params`.
    pub params: PathBuf,
    /// `v28-<id>.vk`.
    pub vk: PathBuf,
    /// Time spent generating (zero when both existed).
    pub generated_in: Duration,
}

/// The circuit families of filecoin-proofs' parameter files: a circuit id
/// (file stem) is `v28-` ([`VERSION`]), one of these, then the shape,
/// hashers and a digest of the public parameters.
pub const CIRCUIT_FAMILIES: [&str; 3] = [
    // PoRep (StackedDrg)
    "stacked-proof-of-replication-",
    // WinningPoSt and WindowPoSt (FallbackPoSt)
    "proof-of-spacetime-fallback-",
    // SnapDeals (EmptySectorUpdate, and its Poseidon variant)
    "empty-sector-update-",
];

/// Whether `circuit_id` is a PoSt circuit's (WinningPoSt or WindowPoSt).
pub fn is_post_circuit_id(circuit_id: &str) -> bool {
    circuit_id
        .strip_prefix(&format!("v{VERSION}-"))
        .is_some_and(|rest| rest.starts_with(CIRCUIT_FAMILIES[1]))
}

/// Whether `circuit_id` names one of filecoin-proofs' parameter files (of
/// this parameter version): `v28-<family>...`, in the characters those
/// names use (lower-case letters, digits, `-`, `_`), so it is a plain file
/// name in the parameter directory.
pub fn is_official_circuit_id(circuit_id: &str) -> bool {
    let Some(rest) = circuit_id.strip_prefix(&format!("v{VERSION}-")) else {
        return false;
    };
    CIRCUIT_FAMILIES.iter().any(|family| rest.starts_with(family))
        && rest
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

enum Target {
    Porep(PoRepConfig),
    Post(PoStConfig),
    Snap(PoRepConfig),
}

fn target(kind: ProofKind, registered_proof: u64) -> Result<(Target, u64, String), PlanError> {
    Ok(match kind {
        ProofKind::PorepSealCommit => {
            let p = lookup(&SEAL_PROOFS, registered_proof, "seal")?;
            let id = p
                .circuit_identifier()
                .map_err(|e| PlanError::Internal(format!("{e:#}")))?;
            (Target::Porep(p.as_v1_config()), u64::from(p.sector_size()), id)
        }
        ProofKind::WinningPost | ProofKind::WindowPostPartition => {
            let p = lookup(&POST_PROOFS, registered_proof, "PoSt")?;
            let winning = matches!(p.typ(), PoStType::Winning);
            if winning != (kind == ProofKind::WinningPost) {
                return Err(PlanError::InvalidArgument(format!(
                    "registered_proof {registered_proof} ({p:?}) is not a {kind:?} proof"
                )));
            }
            let id = p
                .circuit_identifier()
                .map_err(|e| PlanError::Internal(format!("{e:#}")))?;
            (Target::Post(p.as_v1_config()), u64::from(p.sector_size()), id)
        }
        ProofKind::SnapDealsUpdate => {
            let p = lookup(&UPDATE_PROOFS, registered_proof, "update")?;
            let size = u64::from(p.sector_size());
            (Target::Snap(p.as_v1_config()), size, snap_identifier_for(size)?)
        }
    })
}

/// Where the files of (`kind`, `registered_proof`) live in the parameter
/// cache (`FIL_PROOFS_PARAMETER_CACHE`).
pub fn files(kind: ProofKind, registered_proof: u64) -> Result<(PathBuf, PathBuf), PlanError> {
    let (_, _, id) = target(kind, registered_proof)?;
    Ok((
        parameter_cache_params_path(&id),
        parameter_cache_verifying_key_path(&id),
    ))
}

/// The SnapDeals circuit's cache identifier. (filecoin-proofs-api's
/// `RegisteredUpdateProof::circuit_identifier` returns the PoRep circuit's,
/// not the update circuit's whose files filecoin-proofs reads.)
pub fn snap_identifier<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(sector_size: u64) -> String {
    use storage_proofs_core::parameter_cache::CacheableParameters;
    let pp = storage_proofs_update::PublicParams::from_sector_size(sector_size);
    <EmptySectorUpdateCompound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(&pp)
}

struct SnapIdentifier(u64);

impl ShapeDispatch for SnapIdentifier {
    type Out = String;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<String, PlanError> {
        Ok(snap_identifier::<Tree>(self.0))
    }
}

/// The SnapDeals identifier for a sector size, shape picked at run time.
pub fn snap_identifier_for(sector_size: u64) -> Result<String, PlanError> {
    crate::dispatch_shape(sector_size, SnapIdentifier(sector_size))
}

struct Generate {
    target: Target,
    seed: u64,
}

impl ShapeDispatch for Generate {
    type Out = ();
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<(), PlanError> {
        fn fail(e: impl std::fmt::Display) -> PlanError {
            PlanError::Parameters(format!("parameter generation: {e:#}"))
        }
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(self.seed);
        // groth_params writes the .params file when missing, verifying_key
        // the .vk (from the cached .params), both under the official names.
        match self.target {
            Target::Porep(config) => {
                let pp = public_params::<Tree>(&config).map_err(fail)?;
                type C<T> = StackedCompound<T, DefaultPieceHasher>;
                <C<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::groth_params(
                    Some(&mut rng),
                    &pp,
                )
                .map_err(fail)?;
                <C<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::verifying_key(
                    Some(&mut rng),
                    &pp,
                )
                .map_err(fail)?;
            }
            Target::Post(config) => {
                let pp = match config.typ {
                    PoStType::Winning => winning_post_public_params::<Tree>(&config),
                    PoStType::Window => window_post_public_params::<Tree>(&config),
                }
                .map_err(fail)?;
                type P<'a, T> = FallbackPoSt<'a, T>;
                <FallbackPoStCompound<Tree> as CompoundProof<P<'_, Tree>, FallbackPoStCircuit<Tree>>>::groth_params(
                    Some(&mut rng),
                    &pp,
                )
                .map_err(fail)?;
                <FallbackPoStCompound<Tree> as CompoundProof<P<'_, Tree>, FallbackPoStCircuit<Tree>>>::verifying_key(
                    Some(&mut rng),
                    &pp,
                )
                .map_err(fail)?;
            }
            Target::Snap(config) => {
                let pp = storage_proofs_update::PublicParams::from_sector_size(u64::from(config.sector_size));
                <EmptySectorUpdateCompound<Tree> as CompoundProof<
                    EmptySectorUpdate<Tree>,
                    EmptySectorUpdateCircuit<Tree>,
                >>::groth_params(Some(&mut rng), &pp)
                .map_err(fail)?;
                <EmptySectorUpdateCompound<Tree> as CompoundProof<
                    EmptySectorUpdate<Tree>,
                    EmptySectorUpdateCircuit<Tree>,
                >>::verifying_key(Some(&mut rng), &pp)
                .map_err(fail)?;
            }
        }
        Ok(())
    }
}

/// The parameter files of (`kind`, `registered_proof`), generated from
/// `seed` when missing. Test sizes only in practice: a 2 KiB PoRep takes
/// about 7 min on 2 cores (1.1 GB); PoSt test sizes seconds.
pub fn ensure(kind: ProofKind, registered_proof: u64, seed: u64) -> Result<ParameterFiles, PlanError> {
    let (params, vk) = files(kind, registered_proof)?;
    let started = Instant::now();
    if !(params.exists() && vk.exists()) {
        // storage-proofs writes the parameters in place, then the key: a
        // parameter file without its key is what an interrupted generation
        // left, and storage-proofs would read it back as it is.
        if params.exists() {
            tracing::warn!(path = %params.display(), "parameters without their verifying key: generated again");
            std::fs::remove_file(&params)
                .map_err(|e| PlanError::Parameters(format!("{}: {e}", params.display())))?;
        }
        let (target, sector_size, id) = target(kind, registered_proof)?;
        tracing::info!(circuit = %id, path = %params.display(), "generating Filecoin parameters");
        crate::dispatch_shape(sector_size, Generate { target, seed })?;
        if params.exists() && vk.exists() {
            // Made here from filecoin-proofs' generator: read trusted
            // (crate::trust) instead of point by point at every load.
            if let Err(e) = crate::trust::record_generated(&params, crate::trust::Generation::Verifiable) {
                tracing::warn!(path = %params.display(), error = %e,
                    "no generation record written: the file will be read with the full point check");
            }
        }
    }
    let generated_in = if params.exists() && vk.exists() {
        started.elapsed()
    } else {
        return Err(PlanError::Parameters(format!(
            "generation did not leave {} and {}",
            params.display(),
            vk.display()
        )));
    };
    Ok(ParameterFiles {
        params,
        vk,
        generated_in,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every registered proof's circuit id is named as filecoin-proofs
    /// names its files (so `FilecoinPlans` serves its parameters).
    #[test]
    fn every_registered_circuit_id_is_official() {
        let tables = [
            (ProofKind::PorepSealCommit, SEAL_PROOFS.len()),
            (ProofKind::WinningPost, 5),
            (ProofKind::WindowPostPartition, POST_PROOFS.len()),
            (ProofKind::SnapDealsUpdate, UPDATE_PROOFS.len()),
        ];
        for (kind, count) in tables {
            let first = if kind == ProofKind::WindowPostPartition {
                5
            } else {
                0
            };
            for number in first..count as u64 {
                let (_, _, id) = target(kind, number).unwrap();
                let circuit_id = format!("v{VERSION}-{id}");
                assert!(
                    is_official_circuit_id(&circuit_id),
                    "{kind:?} {number}: {circuit_id}"
                );
                let post = matches!(kind, ProofKind::WinningPost | ProofKind::WindowPostPartition);
                assert_eq!(
                    is_post_circuit_id(&circuit_id),
                    post,
                    "{kind:?} {number}: {circuit_id}"
                );
            }
        }
    }

    #[test]
    fn official_circuit_ids_are_plain_file_names() {
        for id in [
            "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-2-sha256_hasher-96f1b4a04c5c51e4759bbf224bbc2ef5a42c7100f16ec0637123f16a845ddfb2",
            "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-0170db1f394b35d995252228ee359194b13199d259380541dc529fb0099096b0",
            "v28-empty-sector-update-poseidon-merkletree-poseidon_hasher-8-8-0-3b7f44a9362e3985369454947bc94022e118211e49fd672d52bec1cbfd599d18",
        ] {
            assert!(is_official_circuit_id(id), "{id}");
        }
        for id in [
            "v28-stacked-proof-of-replication-../x",
            "v28-empty-sector-update-a/b",
            "v28-proof-of-spacetime-fallback-A",
            "v27-proof-of-spacetime-fallback-0",
            "v28-fil-inner-product-v1",
            "synthetic-1024-4-1",
        ] {
            assert!(!is_official_circuit_id(id), "{id}");
        }
    }
}
