//! 2 KiB fixtures, generated and checked with filecoin-proofs' vanilla
//! verifiers (storage-proofs-porep's StackedDrg, storage-proofs-post's
//! FallbackPoSt, the SnapDeals partition verifier), which recompute the
//! challenges from the public inputs rather than trusting the files.

use std::fs;
use std::path::Path;
use std::sync::Once;

use cuzk_filecoin::fixtures::{
    self, load_c1, load_c1_envelope, load_manifest, load_request_file, FixtureManifest, RequestKind,
    VanillaRequestFile, MINER_ID, SECTOR_NUMBER,
};
use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::Domain;
use filecoin_proofs::parameters::{public_params, window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{FallbackPoStSectorProof, SectorShape2KiB, VanillaSealProof};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::{
    PartitionProofBytes, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof,
};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, StackedDrg};
use storage_proofs_post::fallback::{self, FallbackPoSt, PublicSector};

/// 2 KiB and 8 MiB sectors share this tree shape (`SectorShapeBase`).
type Tree = SectorShape2KiB;

/// What a fixture of one size must contain, written out by hand (not taken
/// from the code under test).
struct Expect {
    size: u64,
    seal: RegisteredSealProof,
    seal_abi: u64,
    /// The variant of the C1 JSON's `vanilla_proofs` enum.
    c1_variant: &'static str,
    winning: RegisteredPoStProof,
    winning_abi: u64,
    window: RegisteredPoStProof,
    window_abi: u64,
    update: RegisteredUpdateProof,
    update_abi: u64,
    snap_partitions: usize,
}

const KIB2: Expect = Expect {
    size: 2048,
    seal: RegisteredSealProof::StackedDrg2KiBV1_1,
    seal_abi: 5,
    c1_variant: "StackedDrg2KiBV1",
    winning: RegisteredPoStProof::StackedDrgWinning2KiBV1,
    winning_abi: 0,
    window: RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
    window_abi: 10,
    update: RegisteredUpdateProof::StackedDrg2KiBV1,
    update_abi: 0,
    snap_partitions: 1,
};

const MIB8: Expect = Expect {
    size: 8 << 20,
    seal: RegisteredSealProof::StackedDrg8MiBV1_1,
    seal_abi: 6,
    c1_variant: "StackedDrg8MiBV1",
    winning: RegisteredPoStProof::StackedDrgWinning8MiBV1,
    winning_abi: 1,
    window: RegisteredPoStProof::StackedDrgWindow8MiBV1_2,
    window_abi: 11,
    update: RegisteredUpdateProof::StackedDrg8MiBV1,
    update_abi: 1,
    snap_partitions: 4,
};

/// filecoin-proofs latches its settings on first use: set them once, with
/// the parent cache under cargo's scratch dir (unless the env says else).
fn init_settings() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        cuzk_filecoin::settings::init(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("filecoin-params"));
    });
}

fn generate(size: u64, dir: &Path, seed: u64) -> FixtureManifest {
    init_settings();
    let started = std::time::Instant::now();
    let manifest = fixtures::write_fixtures(size, dir, seed).expect("write_fixtures");
    eprintln!(
        "{size}-byte fixtures (seed {seed}) in {:.2}s",
        started.elapsed().as_secs_f64()
    );
    manifest
}

fn b32(v: Vec<u8>) -> [u8; 32] {
    v.try_into().expect("32 bytes")
}

#[test]
fn fixtures_2kib_verify_with_filecoin_proofs_vanilla_verifiers() {
    generate_and_check(&KIB2);
}

/// About 10 s (single-core SDR): `cargo test --release -- --ignored`.
#[test]
#[ignore]
fn fixtures_8mib_verify_with_filecoin_proofs_vanilla_verifiers() {
    generate_and_check(&MIB8);
}

fn generate_and_check(x: &Expect) {
    let dir = tempfile::tempdir().unwrap();
    let manifest = generate(x.size, dir.path(), 42);

    // The manifest on disk is the one returned, and describes what we asked for.
    assert_eq!(load_manifest(dir.path()).unwrap(), manifest);
    assert_eq!(manifest.sector_size, x.size);
    assert_eq!(manifest.registered_seal_proof, x.seal_abi);
    assert_eq!(manifest.seal_proof().unwrap(), x.seal);
    assert_eq!(
        (manifest.miner_id, manifest.sector_number),
        (MINER_ID, SECTOR_NUMBER)
    );
    let mut prover_id = [0u8; 32];
    prover_id[..8].copy_from_slice(&1000u64.to_le_bytes());
    assert_eq!(manifest.prover_id_bytes().unwrap(), prover_id);
    assert_ne!(manifest.ticket_bytes().unwrap(), [0; 32]);
    assert_ne!(manifest.seed_bytes().unwrap(), [0; 32]);
    assert_ne!(manifest.ticket, manifest.seed);
    // Only the fixture files remain: the work directory is gone.
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "c1-envelope.json",
            "c1.json",
            "fixture.json",
            "snap.json",
            "winning.json",
            "wpost.json"
        ]
    );

    check_c1(x, dir.path(), &manifest);
    check_winning(x, dir.path(), &manifest);
    check_wpost(x, dir.path(), &manifest);
    check_snap(x, dir.path(), &manifest);
}

/// C1: the JSON is filecoin-proofs-api's typed output (round-trips byte for
/// byte), its replica id is the one derived from (prover, sector, ticket,
/// comm_d, porep id), and StackedDrg accepts its vanilla proofs for the
/// manifest's comm_r/comm_d/seed and rejects them for another seed or comm_r.
fn check_c1(x: &Expect, dir: &Path, manifest: &FixtureManifest) {
    let bytes = fs::read(dir.join(&manifest.files.c1)).unwrap();
    let c1: SealCommitPhase1Output = load_c1(dir.join(&manifest.files.c1)).unwrap();
    assert_eq!(
        serde_json::to_vec(&c1).unwrap(),
        bytes,
        "C1 JSON round-trips exactly"
    );
    let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(value["registered_proof"], format!("{:?}", x.seal));
    assert!(value["vanilla_proofs"][x.c1_variant].is_array());

    assert_eq!(c1.registered_proof, x.seal);
    let comm_r = manifest.comm_r_bytes().unwrap();
    let comm_d = manifest.comm_d_bytes().unwrap();
    let seed = manifest.seed_bytes().unwrap();
    let ticket = manifest.ticket_bytes().unwrap();
    assert_eq!(c1.comm_r, comm_r);
    assert_eq!(c1.comm_d, comm_d);
    assert_eq!(c1.seed, seed);
    assert_eq!(c1.ticket, ticket);

    let porep_config = c1.registered_proof.as_v1_config();
    let replica_id = stacked::generate_replica_id::<PoseidonHasher, _>(
        &manifest.prover_id_bytes().unwrap(),
        SECTOR_NUMBER,
        &ticket,
        comm_d,
        &porep_config.porep_id,
    );
    assert_eq!(replica_id, c1.replica_id);

    let proofs: Vec<Vec<VanillaSealProof<Tree>>> = c1.vanilla_proofs.clone().try_into().unwrap();
    assert_eq!(proofs.len(), usize::from(porep_config.partitions));
    let params = public_params::<Tree>(&porep_config).unwrap();
    let inputs = |seed: [u8; 32], comm_r: [u8; 32]| stacked::PublicInputs::<PoseidonDomain, Sha256Domain> {
        replica_id,
        seed: Some(seed),
        tau: Some(stacked::Tau {
            comm_d: Sha256Domain::try_from_bytes(&comm_d).unwrap(),
            comm_r: PoseidonDomain::try_from_bytes(&comm_r).unwrap(),
        }),
        k: None,
    };
    let verify = |inputs| StackedDrg::<Tree, Sha256Hasher>::verify_all_partitions(&params, &inputs, &proofs);
    assert!(verify(inputs(seed, comm_r)).unwrap(), "C1 vanilla proofs verify");
    let mut other_seed = seed;
    other_seed[0] ^= 1;
    assert!(
        !verify(inputs(other_seed, comm_r)).unwrap(),
        "C1 proofs must not verify for another seed"
    );
    let mut other_comm_r = comm_r;
    other_comm_r[0] ^= 1;
    assert!(
        !verify(inputs(seed, other_comm_r)).unwrap(),
        "C1 proofs must not verify for another comm_r"
    );

    // The envelope carries the same bytes.
    let envelope = load_c1_envelope(dir.join(&manifest.files.c1_envelope)).unwrap();
    assert_eq!(envelope.sector_num, SECTOR_NUMBER);
    assert_eq!(envelope.sector_size, x.size);
    assert_eq!(envelope.phase1_out_bytes().unwrap(), bytes);
    let raw: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join(&manifest.files.c1_envelope)).unwrap()).unwrap();
    let keys: Vec<&String> = raw.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 3);
    for key in ["SectorNum", "Phase1Out", "SectorSize"] {
        assert!(raw.get(key).is_some(), "envelope lacks {key}");
    }
}

/// The one sector proof of a PoSt request, decoded, after the checks all
/// PoSt requests share.
fn post_proof(
    x: &Expect,
    req: &VanillaRequestFile,
    manifest: &FixtureManifest,
) -> (FallbackPoStSectorProof<Tree>, [u8; 32]) {
    assert_eq!(req.sector_size, x.size);
    assert_eq!(
        (req.miner_id, req.sector_number, req.partition_index),
        (MINER_ID, SECTOR_NUMBER, 0)
    );
    assert!(req.comm_r_old.is_empty() && req.comm_r_new.is_empty() && req.comm_d_new.is_empty());
    let randomness = b32(req.randomness_bytes().unwrap());
    assert_eq!(randomness[31] & 0xc0, 0, "randomness is a canonical Fr");
    let vanilla = req.vanilla_proof_bytes().unwrap();
    assert_eq!(vanilla.len(), 1, "one sector");
    let proof: FallbackPoStSectorProof<Tree> = bincode::deserialize(&vanilla[0]).unwrap();
    assert_eq!(u64::from(proof.sector_id), SECTOR_NUMBER);
    assert_eq!(proof.comm_r.into_bytes(), manifest.comm_r_bytes().unwrap());
    (proof, randomness)
}

/// FallbackPoSt's own verifier on one partition: challenges derived from
/// `randomness` and `sector`, inclusion proofs against `comm_r`.
fn fallback_verify(
    params: &fallback::PublicParams,
    prover_id: [u8; 32],
    proof: &FallbackPoStSectorProof<Tree>,
    randomness: [u8; 32],
    sector: u64,
    comm_r: [u8; 32],
) -> bool {
    let mut sectors = proof.vanilla_proof.sectors.clone();
    // A partition proof has `sector_count` sectors; short ones repeat the last.
    while sectors.len() < params.sector_count {
        sectors.push(sectors.last().unwrap().clone());
    }
    let inputs = fallback::PublicInputs {
        randomness: PoseidonDomain::try_from_bytes(&randomness).unwrap(),
        prover_id: PoseidonDomain::try_from_bytes(&prover_id).unwrap(),
        sectors: vec![PublicSector {
            id: sector.into(),
            comm_r: PoseidonDomain::try_from_bytes(&comm_r).unwrap(),
        }],
        k: Some(0),
    };
    FallbackPoSt::<Tree>::verify(params, &inputs, &fallback::Proof { sectors }).unwrap()
}

fn check_post_negatives(
    params: &fallback::PublicParams,
    prover_id: [u8; 32],
    proof: &FallbackPoStSectorProof<Tree>,
    randomness: [u8; 32],
    comm_r: [u8; 32],
) {
    assert!(fallback_verify(
        params,
        prover_id,
        proof,
        randomness,
        SECTOR_NUMBER,
        comm_r
    ));
    let mut other = randomness;
    other[0] ^= 1;
    assert!(
        !fallback_verify(params, prover_id, proof, other, SECTOR_NUMBER, comm_r),
        "other randomness"
    );
    assert!(
        !fallback_verify(params, prover_id, proof, randomness, SECTOR_NUMBER + 1, comm_r),
        "other sector"
    );
    let mut other_comm_r = comm_r;
    other_comm_r[0] ^= 1;
    assert!(
        !fallback_verify(params, prover_id, proof, randomness, SECTOR_NUMBER, other_comm_r),
        "other comm_r"
    );
}

fn check_winning(x: &Expect, dir: &Path, manifest: &FixtureManifest) {
    let req = load_request_file(dir.join(&manifest.files.winning)).unwrap();
    assert_eq!(req.proof_kind, RequestKind::Winning);
    assert_eq!(req.registered_proof, x.winning_abi);
    let registered = req.post_proof().unwrap();
    assert_eq!(registered, x.winning);
    let (proof, randomness) = post_proof(x, &req, manifest);
    let config = registered.as_v1_config();
    assert_eq!(
        proof.vanilla_proof.sectors[0].inclusion_proofs.len(),
        config.challenge_count
    );

    // As generated: one sector with all 66 challenges.
    let params = fallback::PublicParams {
        sector_size: x.size,
        challenge_count: config.challenge_count,
        sector_count: config.sector_count,
        api_version: config.api_version,
    };
    let (prover_id, comm_r) = (
        manifest.prover_id_bytes().unwrap(),
        manifest.comm_r_bytes().unwrap(),
    );
    check_post_negatives(&params, prover_id, &proof, randomness, comm_r);

    // As the SNARK sees it: filecoin-proofs reshapes it into 66 one-challenge
    // sectors and verifies every partition before proving.
    let snark_params = FallbackPoSt::<Tree>::setup(&winning_post_setup_params(&config).unwrap()).unwrap();
    assert_eq!((snark_params.sector_count, snark_params.challenge_count), (66, 1));
    let inputs = fallback::PublicInputs {
        randomness: PoseidonDomain::try_from_bytes(&randomness).unwrap(),
        prover_id: PoseidonDomain::try_from_bytes(&prover_id).unwrap(),
        sectors: vec![PublicSector {
            id: proof.sector_id,
            comm_r: proof.comm_r,
        }],
        k: None,
    };
    // (By value: FallbackPoStSectorProof is Clone only for Clone trees.)
    let partitions =
        filecoin_proofs::partition_vanilla_proofs(&config, &snark_params, &inputs, 1, &[proof]).unwrap();
    assert_eq!(partitions.len(), 1);
    assert_eq!(partitions[0].sectors.len(), 66);
}

fn check_wpost(x: &Expect, dir: &Path, manifest: &FixtureManifest) {
    let req = load_request_file(dir.join(&manifest.files.wpost)).unwrap();
    assert_eq!(req.proof_kind, RequestKind::Wpost);
    assert_eq!(req.registered_proof, x.window_abi);
    let registered = req.post_proof().unwrap();
    assert_eq!(registered, x.window);
    let (proof, randomness) = post_proof(x, &req, manifest);
    let config = registered.as_v1_config();
    assert_eq!(
        proof.vanilla_proof.sectors[0].inclusion_proofs.len(),
        config.challenge_count
    );
    let params = FallbackPoSt::<Tree>::setup(&window_post_setup_params(&config)).unwrap();
    assert!(
        params.sector_count > 1,
        "2 KiB WindowPoSt partitions hold several sectors"
    );
    let (prover_id, comm_r) = (
        manifest.prover_id_bytes().unwrap(),
        manifest.comm_r_bytes().unwrap(),
    );
    check_post_negatives(&params, prover_id, &proof, randomness, comm_r);

    let winning = load_request_file(dir.join(&manifest.files.winning)).unwrap();
    assert_ne!(
        winning.randomness, req.randomness,
        "each PoSt draws its own randomness"
    );
}

fn check_snap(x: &Expect, dir: &Path, manifest: &FixtureManifest) {
    let req = load_request_file(dir.join(&manifest.files.snap)).unwrap();
    assert_eq!(req.proof_kind, RequestKind::Snap);
    assert_eq!(req.registered_proof, x.update_abi);
    let registered = req.update_proof().unwrap();
    assert_eq!(registered, x.update);
    assert!(req.post_proof().is_err());
    assert_eq!(req.sector_size, x.size);
    assert_eq!((req.miner_id, req.sector_number), (MINER_ID, SECTOR_NUMBER));
    assert!(req.randomness.is_empty());
    let comm_r_old = b32(req.comm_r_old_bytes().unwrap());
    let comm_r_new = b32(req.comm_r_new_bytes().unwrap());
    let comm_d_new = b32(req.comm_d_new_bytes().unwrap());
    assert_eq!(comm_r_old, manifest.comm_r_bytes().unwrap());
    assert_ne!(comm_r_new, comm_r_old);
    assert_ne!(
        comm_d_new,
        manifest.comm_d_bytes().unwrap(),
        "new data, new comm_d"
    );

    let proofs: Vec<PartitionProofBytes> = req
        .vanilla_proof_bytes()
        .unwrap()
        .into_iter()
        .map(PartitionProofBytes)
        .collect();
    assert_eq!(proofs.len(), x.snap_partitions);
    let verify =
        |old, new, d| filecoin_proofs_api::update::verify_partition_proofs(registered, &proofs, old, new, d);
    assert!(
        verify(comm_r_old, comm_r_new, comm_d_new).unwrap(),
        "SnapDeals vanilla proofs verify"
    );
    let old_comm_d = manifest.comm_d_bytes().unwrap();
    assert!(
        !matches!(verify(comm_r_old, comm_r_new, old_comm_d), Ok(true)),
        "wrong comm_d_new"
    );
    assert!(
        !matches!(verify(comm_r_new, comm_r_new, comm_d_new), Ok(true)),
        "wrong comm_r_old"
    );
    assert!(
        !matches!(verify(comm_r_old, comm_r_old, comm_d_new), Ok(true)),
        "wrong comm_r_new"
    );
}

#[test]
fn fixtures_are_deterministic_in_the_seed() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let c = tempfile::tempdir().unwrap();
    let ma = generate(KIB2.size, a.path(), 7);
    let mb = generate(KIB2.size, b.path(), 7);
    let mc = generate(KIB2.size, c.path(), 8);
    assert_eq!(ma, mb);
    for name in [
        "c1.json",
        "c1-envelope.json",
        "winning.json",
        "wpost.json",
        "snap.json",
        "fixture.json",
    ] {
        let (fa, fb) = (
            fs::read(a.path().join(name)).unwrap(),
            fs::read(b.path().join(name)).unwrap(),
        );
        assert!(fa == fb, "{name} differs between two runs of seed 7");
    }
    assert_ne!(ma.comm_d, mc.comm_d);
    assert_ne!(ma.comm_r, mc.comm_r);
    assert_ne!(ma.ticket, mc.ticket);
    assert_eq!(mc.rng_seed, 8);
}
