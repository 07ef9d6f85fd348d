//! Real Filecoin proofs (2 KiB sectors) through the real daemon: inputs made
//! by sealing a sector with filecoin-proofs, parameters generated with
//! filecoin-proofs' generator (kept between runs in the target directory),
//! every returned proof checked here again with filecoin-proofs-api's own
//! verifiers, and malformed inputs refused with INVALID_ARGUMENT.

use cuzk_core::ProofKind as Kind;
use cuzk_filecoin::fixtures::{self, FixtureManifest, VanillaRequestFile};
use cuzk_proto::v1 as pb;
use filecoin_proofs_api::{PublicReplicaInfo, SectorId};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use tonic::Code;

mod common;
use common::{await_job, Client, Daemon, Listen};
use pb::await_proof_response::Status;

/// Parameters and fixtures shared by the tests of this binary (filecoin-proofs
/// latches its settings once per process, so one directory for all).
fn param_dir() -> PathBuf {
    cuzk_filecoin::settings::init_once(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("filecoin-params"))
}

/// Generates (once, serialised: two writers of one file would collide) the
/// parameters of the 2 KiB proof of `kind`.
fn ensure_params(kind: Kind) {
    static LOCK: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    param_dir();
    let proofs = fixtures::SizeProofs::for_sector_size(2048).unwrap();
    let number = match kind {
        Kind::PorepSealCommit => fixtures::seal_proof_abi(proofs.seal),
        Kind::WinningPost => fixtures::post_proof_abi(proofs.winning),
        Kind::WindowPostPartition => fixtures::post_proof_abi(proofs.window),
        Kind::SnapDealsUpdate => fixtures::update_proof_abi(proofs.update),
    };
    let files = cuzk_filecoin::params::ensure(kind, number, 1).unwrap();
    if files.generated_in.as_millis() > 0 {
        eprintln!(
            "generated {} in {:.0}s",
            files.params.display(),
            files.generated_in.as_secs_f64()
        );
    }
}

/// A sealed 2 KiB sector's C1 output and vanilla proofs.
fn fixture() -> &'static (tempfile::TempDir, FixtureManifest) {
    static FIXTURE: OnceLock<(tempfile::TempDir, FixtureManifest)> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        param_dir();
        let dir = tempfile::tempdir().unwrap();
        let manifest = fixtures::write_fixtures(2048, dir.path(), 7).unwrap();
        (dir, manifest)
    })
}

fn fixture_file(name: &str) -> PathBuf {
    fixture().0.path().join(name)
}

fn daemon() -> Daemon {
    Daemon::start_with_params(tempfile::tempdir().unwrap(), &param_dir(), Listen::Tcp, "")
}

/// The wire request of a PoSt / SnapDeals request file.
fn vanilla_request(file: &VanillaRequestFile, kind: pb::ProofKind) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        proof_kind: kind as i32,
        registered_proof: file.registered_proof,
        sector_size: file.sector_size,
        vanilla_proofs: file.vanilla_proof_bytes().unwrap(),
        sector_number: file.sector_number,
        miner_id: file.miner_id,
        randomness: file.randomness_bytes().unwrap(),
        partition_index: file.partition_index,
        comm_r_old: file.comm_r_old_bytes().unwrap(),
        comm_r_new: file.comm_r_new_bytes().unwrap(),
        comm_d_new: file.comm_d_new_bytes().unwrap(),
        ..Default::default()
    }
}

fn porep_request(c1: Vec<u8>) -> pb::SubmitProofRequest {
    let manifest = &fixture().1;
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        registered_proof: manifest.registered_seal_proof,
        sector_size: 2048,
        vanilla_proof: c1,
        sector_number: manifest.sector_number,
        miner_id: manifest.miner_id,
        ..Default::default()
    }
}

async fn prove(client: &mut Client, request: pb::SubmitProofRequest) -> pb::AwaitProofResponse {
    let job = client.submit_proof(request).await.unwrap().into_inner().job_id;
    // Generous: a correctness test, not a timing one (2 shared cores).
    let response = await_job(client, &job, 3_600_000).await;
    assert_eq!(
        response.status,
        Status::Completed as i32,
        "job failed: {}",
        response.error_message
    );
    response
}

fn replicas(file: &VanillaRequestFile) -> BTreeMap<SectorId, PublicReplicaInfo> {
    let manifest = &fixture().1;
    let mut map = BTreeMap::new();
    map.insert(
        SectorId::from(manifest.sector_number),
        PublicReplicaInfo::new(file.post_proof().unwrap(), manifest.comm_r_bytes().unwrap()),
    );
    map
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn winning_and_window_post_verify_with_filecoin_proofs() {
    ensure_params(Kind::WinningPost);
    ensure_params(Kind::WindowPostPartition);
    let daemon = daemon();
    let mut client = daemon.client();
    let manifest = &fixture().1;
    let prover_id = manifest.prover_id_bytes().unwrap();

    let winning = fixtures::load_request_file(fixture_file(fixtures::WINNING_FILE)).unwrap();
    let response = prove(&mut client, vanilla_request(&winning, pb::ProofKind::WinningPost)).await;
    assert_eq!(response.proof.len(), 192);
    let randomness: [u8; 32] = winning.randomness_bytes().unwrap().try_into().unwrap();
    assert!(filecoin_proofs_api::post::verify_winning_post(
        &randomness,
        &response.proof,
        &replicas(&winning),
        prover_id
    )
    .unwrap());
    // The same proof does not verify for other randomness.
    let mut other = randomness;
    other[0] ^= 1;
    assert!(!filecoin_proofs_api::post::verify_winning_post(
        &other,
        &response.proof,
        &replicas(&winning),
        prover_id
    )
    .unwrap_or(false));

    let window = fixtures::load_request_file(fixture_file(fixtures::WPOST_FILE)).unwrap();
    let response = prove(
        &mut client,
        vanilla_request(&window, pb::ProofKind::WindowPostPartition),
    )
    .await;
    assert_eq!(response.proof.len(), 192);
    let randomness: [u8; 32] = window.randomness_bytes().unwrap().try_into().unwrap();
    let proofs = [(window.post_proof().unwrap(), response.proof.as_slice())];
    assert!(filecoin_proofs_api::post::verify_window_post(
        &randomness,
        &proofs,
        &replicas(&window),
        prover_id
    )
    .unwrap());
    assert_native_witnesses(&mut client, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn porep_c2_verifies_with_filecoin_proofs() {
    // PoRep 2 KiB parameters take minutes to generate on 2 cores (once per
    // machine: they stay in the target directory).
    ensure_params(Kind::PorepSealCommit);
    let daemon = daemon();
    let mut client = daemon.client();
    let manifest = &fixture().1;

    // PoRep from the enveloped C1 output, as the reference daemon takes it.
    let envelope = std::fs::read(fixture_file(fixtures::C1_ENVELOPE_FILE)).unwrap();
    let response = prove(&mut client, porep_request(envelope)).await;
    assert_eq!(response.proof.len(), 192);
    let verified = filecoin_proofs_api::seal::verify_seal(
        manifest.seal_proof().unwrap(),
        manifest.comm_r_bytes().unwrap(),
        manifest.comm_d_bytes().unwrap(),
        manifest.prover_id_bytes().unwrap(),
        SectorId::from(manifest.sector_number),
        manifest.ticket_bytes().unwrap(),
        manifest.seed_bytes().unwrap(),
        &response.proof,
    )
    .unwrap();
    assert!(verified, "filecoin-proofs verify_seal rejected our PoRep proof");
    // The accepted proof was made from the native witness (issue 35), not
    // from the gadgets after a failed self-check.
    assert_native_witnesses(&mut client, 1).await;
}

/// The daemon's metrics count at least `at_least` partitions whose witness
/// was written natively, and no native witness that fell back.
async fn assert_native_witnesses(client: &mut Client, at_least: u64) {
    let metrics = common::metrics(client).await;
    let count = |event: &str| -> u64 {
        let series = format!("cuzk_plan_source_events_total{{event=\"{event}\",source=\"filecoin\"}} ");
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&series)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {series}in the metrics:\n{metrics}"))
    };
    assert!(count("native_witness") >= at_least, "{metrics}");
    assert_eq!(count("native_witness_fallback"), 0, "{metrics}");
}

// SnapDeals 2 KiB parameters take about 14 minutes to generate on 2 cores
// (filecoin-proofs' generator, mostly single-threaded): run with
// `--ignored` where they are cached; CI runs the PoSt and PoRep tests.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs SnapDeals parameters (about 14 min to generate on 2 cores)"]
async fn snapdeals_verifies_with_filecoin_proofs() {
    ensure_params(Kind::SnapDealsUpdate);
    let daemon = daemon();
    let mut client = daemon.client();

    let snap = fixtures::load_request_file(fixture_file(fixtures::SNAP_FILE)).unwrap();
    let response = prove(
        &mut client,
        vanilla_request(&snap, pb::ProofKind::SnapDealsUpdate),
    )
    .await;
    assert_eq!(response.proof.len(), 192 * snap.vanilla_proofs.len());
    let bytes32 = |v: Vec<u8>| -> [u8; 32] { v.try_into().unwrap() };
    let verified = filecoin_proofs_api::update::verify_empty_sector_update_proof(
        snap.update_proof().unwrap(),
        &response.proof,
        bytes32(snap.comm_r_old_bytes().unwrap()),
        bytes32(snap.comm_r_new_bytes().unwrap()),
        bytes32(snap.comm_d_new_bytes().unwrap()),
    )
    .unwrap();
    assert!(verified, "filecoin-proofs rejected our SnapDeals proof");
    assert_native_witnesses(&mut client, snap.vanilla_proofs.len() as u64).await;
}

async fn refused(client: &mut Client, request: pb::SubmitProofRequest, names: &str) {
    let Err(error) = client.submit_proof(request).await else {
        panic!("a request that should be refused naming {names:?} was accepted");
    };
    assert_eq!(error.code(), Code::InvalidArgument, "{}", error.message());
    assert!(
        error.message().contains(names),
        "error {:?} does not name {names:?}",
        error.message()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_filecoin_requests_are_invalid_arguments() {
    // No parameters needed: every input is checked before the job exists.
    let daemon = daemon();
    let mut client = daemon.client();
    let c1 = std::fs::read(fixture_file(fixtures::C1_FILE)).unwrap();
    let c1_json: serde_json::Value = serde_json::from_slice(&c1).unwrap();

    let mut wrong_size = porep_request(c1.clone());
    wrong_size.sector_size = 8 << 20;
    refused(&mut client, wrong_size, "sector_size").await;

    let mut other_size_proof = porep_request(c1.clone());
    other_size_proof.registered_proof = 6; // 8 MiB V1_1
    other_size_proof.sector_size = 0; // taken from the registered proof
    refused(&mut client, other_size_proof, "differs from the C1 output").await;

    refused(
        &mut client,
        porep_request(c1[..c1.len() / 2].to_vec()),
        "C1 output is not a valid",
    )
    .await;
    refused(
        &mut client,
        porep_request(b"{not json".to_vec()),
        "C1 output is not a valid",
    )
    .await;
    let bad_base64 = br#"{"SectorNum": 1, "Phase1Out": "***", "SectorSize": 2048}"#.to_vec();
    refused(&mut client, porep_request(bad_base64), "base64").await;

    for field in ["comm_r", "comm_d", "seed"] {
        let mut zeroed = c1_json.clone();
        zeroed[field] = serde_json::json!(vec![0u8; 32]);
        refused(
            &mut client,
            porep_request(serde_json::to_vec(&zeroed).unwrap()),
            field,
        )
        .await;
    }

    let mut other_miner = porep_request(c1.clone());
    other_miner.miner_id += 1;
    refused(&mut client, other_miner, "replica_id").await;

    let window = fixtures::load_request_file(fixture_file(fixtures::WPOST_FILE)).unwrap();
    // Vanilla proofs that do not answer this request's challenges (another
    // randomness). WindowPoSt V1_2 challenges do not depend on the partition
    // index, so there the proofs' sectors are what makes the partition.
    let mut wrong_challenges = vanilla_request(&window, pb::ProofKind::WindowPostPartition);
    wrong_challenges.randomness[0] ^= 1;
    refused(&mut client, wrong_challenges, "challenges").await;

    // C1 proofs under another seed, and snap proofs for another comm_r_new.
    let mut other_seed = c1_json.clone();
    other_seed["seed"][0] = serde_json::json!((c1_json["seed"][0].as_u64().unwrap() + 1) % 256);
    refused(
        &mut client,
        porep_request(serde_json::to_vec(&other_seed).unwrap()),
        "C1 vanilla proofs do not verify",
    )
    .await;

    let mut garbage = vanilla_request(&window, pb::ProofKind::WindowPostPartition);
    garbage.vanilla_proofs[0].truncate(100);
    refused(&mut client, garbage, "vanilla_proofs[0]").await;

    let winning = fixtures::load_request_file(fixture_file(fixtures::WINNING_FILE)).unwrap();
    let mut short_randomness = vanilla_request(&winning, pb::ProofKind::WinningPost);
    short_randomness.randomness.pop();
    refused(&mut client, short_randomness, "randomness").await;

    let mut window_as_winning = vanilla_request(&window, pb::ProofKind::WinningPost);
    window_as_winning.randomness = winning.randomness_bytes().unwrap();
    refused(&mut client, window_as_winning, "not a WinningPoSt").await;

    let snap = fixtures::load_request_file(fixture_file(fixtures::SNAP_FILE)).unwrap();
    let mut zero_comm = vanilla_request(&snap, pb::ProofKind::SnapDealsUpdate);
    zero_comm.comm_d_new = vec![0; 32];
    refused(&mut client, zero_comm, "comm_d_new").await;
    let mut swapped = vanilla_request(&snap, pb::ProofKind::SnapDealsUpdate);
    swapped.comm_r_new = swapped.comm_r_old.clone();
    refused(&mut client, swapped, "vanilla partition proofs do not verify").await;

    // Nothing disturbed: the daemon still answers and has no job.
    let status = common::status(&mut client).await;
    assert_eq!(status.total_proofs_failed, 0);
    assert_eq!(status.total_proofs_completed, 0);
    // A client's bad input is its error, not the daemon's: nothing at
    // ERROR (storage-proofs logged one line a failing challenge), and one
    // warning for the PoSt whose vanilla proofs do not hold (issue 34,
    // item 7).
    let log = daemon.log();
    let errors: Vec<&str> = log.lines().filter(|l| l.contains(" ERROR ")).collect();
    assert!(errors.is_empty(), "{} lines at ERROR: {errors:#?}", errors.len());
    let refusals = log.lines().filter(|l| l.contains("PoSt request refused")).count();
    assert_eq!(refusals, 1, "{log}");
}
