//! The Filecoin plans against independent implementations: constraint
//! counts pinned per proof type (2 KiB), our proof bytes equal to
//! bellperson's `create_proof` on the same storage-proofs circuit with the
//! same r and s, and the whole proof accepted by filecoin-proofs' verifier.
//! PoSt proofs here come from the native witness (issue 35): equal bytes to
//! bellperson's make it equal to the gadgets' witness.

use cuzk_core::{
    finish, proof_to_bytes, prove_start, PlanSource, ProofKind, ProofRequest, ProvingParameters, Randomness,
    Scalar,
};
use cuzk_filecoin::fixtures;
use cuzk_filecoin::FilecoinPlans;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod common;
use common::{fixture, fixture_request, param_dir, porep_request};

/// The parameters of (`kind`, `number`), generated once (serialised), and
/// read as the engine reads them: through `FilecoinPlans`' recipe for
/// `circuit_id`.
fn params(kind: ProofKind, number: u64, circuit_id: &str) -> (Arc<ProvingParameters>, PathBuf) {
    static LOCK: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let source = FilecoinPlans::new(param_dir());
    let files = cuzk_filecoin::params::ensure(kind, number, 1).unwrap();
    let recipe = source
        .parameters(circuit_id)
        .expect("an official circuit id")
        .unwrap();
    // The file filecoin-proofs wrote, read with every point checked.
    let described = format!("{recipe:?}");
    assert!(
        described.contains(&format!("{:?}", files.params)) && described.contains("Full"),
        "{described} is not a full read of {}",
        files.params.display()
    );
    recipe.check_available().unwrap();
    (Arc::new(recipe.load().unwrap()), files.params)
}

/// The PoSt request of a fixture file, which must be of `kind`.
fn post_request(kind: ProofKind, file: &str) -> ProofRequest {
    let request = fixture_request(file);
    assert_eq!(request.kind, kind);
    assert!(request.vanilla_proof.is_empty() && !request.vanilla_proofs.is_empty());
    assert_eq!(request.sector.randomness.len(), 32);
    request
}

/// Our proof of partition 0 equals bellperson's for the same circuit, r and
/// s; the plan's whole-proof check (bellperson's verifier, then
/// filecoin-proofs') accepts it and rejects a tampered one.
fn check_against_bellperson(request: &ProofRequest, expected_constraints: usize) {
    check_against_bellperson_with(FilecoinPlans::new(param_dir()), request, expected_constraints);
}

fn check_against_bellperson_with(source: FilecoinPlans, request: &ProofRequest, expected_constraints: usize) {
    // Planned as the engine plans it: by the catch-all Filecoin source.
    let plan = source
        .plan(request)
        .expect("the Filecoin source claims every request")
        .unwrap();
    // PoSt partitions take the native witness (issue 35), self-checked on
    // sampled constraints for these valid requests: it must not fall back.
    let fallbacks = cuzk_filecoin::plans::native_fallbacks();
    let assignment = plan.synthesize(0).unwrap();
    assert_eq!(
        cuzk_filecoin::plans::native_fallbacks(),
        fallbacks,
        "{:?}: the native witness failed its self-check",
        request.kind
    );
    assert_eq!(
        assignment.a.len(),
        expected_constraints,
        "{:?} constraints changed",
        request.kind
    );
    let (params, path) = params(request.kind, request.registered_proof, &plan.circuit_id());
    assert_eq!(
        format!("{}.params", plan.circuit_id()),
        path.file_name().unwrap().to_str().unwrap()
    );
    let (r, s) = (Scalar::from(12345u64), Scalar::from(678u64));
    let (ours, _) = finish(prove_start(assignment, &params, Randomness::Fixed { r, s }).unwrap()).unwrap();

    // bellperson, on its own reading of the file and a fresh circuit.
    let file = std::fs::File::open(&path).unwrap();
    let bell_params =
        bellperson::groth16::Parameters::<blstrs::Bls12>::read(std::io::BufReader::new(file), false).unwrap();
    let circuit = plan_circuit(request);
    let theirs = bellperson::groth16::create_proof(circuit, &bell_params, r, s).unwrap();
    let mut theirs_bytes = Vec::new();
    theirs.write(&mut theirs_bytes).unwrap();
    assert_eq!(
        proof_to_bytes(&ours).to_vec(),
        theirs_bytes,
        "{:?}: bytes differ from bellperson's",
        request.kind
    );

    plan.verify(&params, std::slice::from_ref(&ours)).unwrap();
    let mut tampered = ours;
    tampered.c = tampered.a;
    assert!(plan.verify(&params, &[tampered]).is_err());
}

/// The circuit of partition 0, built again for bellperson (2 KiB sectors
/// have the base tree shape).
fn plan_circuit(request: &ProofRequest) -> impl bellperson::Circuit<Scalar> {
    let input = cuzk_filecoin::request::PostInput::parse(request).unwrap();
    cuzk_filecoin::plans::PostPlan::<filecoin_proofs::SectorShape2KiB>::new(input, &Default::default())
        .unwrap()
        .circuit(0)
        .unwrap()
}

#[test]
fn winning_post_matches_bellperson_and_verifies() {
    let request = post_request(ProofKind::WinningPost, fixtures::WINNING_FILE);
    check_against_bellperson(&request, WINNING_2KIB_CONSTRAINTS);
}

#[test]
fn window_post_matches_bellperson_and_verifies() {
    let request = post_request(ProofKind::WindowPostPartition, fixtures::WPOST_FILE);
    check_against_bellperson(&request, WINDOW_2KIB_CONSTRAINTS);
}

/// Issue 35: PoSt witnesses that leave their paths' values to the prover
/// (`[gpus] post_paths_on_device`), finished here on the host as a CPU
/// prover does, give bellperson's bytes and verify; the witness does leave
/// them (and a device would write them: `tests/gpu.rs`).
#[test]
fn post_with_paths_left_to_the_prover_matches_bellperson_and_verifies() {
    for (kind, file, constraints) in [
        (
            ProofKind::WinningPost,
            fixtures::WINNING_FILE,
            WINNING_2KIB_CONSTRAINTS,
        ),
        (
            ProofKind::WindowPostPartition,
            fixtures::WPOST_FILE,
            WINDOW_2KIB_CONSTRAINTS,
        ),
    ] {
        let request = post_request(kind, file);
        let source = || FilecoinPlans::new(param_dir()).with_paths_on_device(true);
        let plan = source().plan(&request).unwrap().unwrap();
        let cuzk_core::PartitionData::Witness(data) = plan.synthesize_witness(0).unwrap() else {
            panic!("{kind:?}: no witness-only form");
        };
        let left = data.witness.left.as_ref().expect("paths left to the prover");
        assert!(left.check_roots && !left.paths.is_empty(), "{kind:?}");
        check_against_bellperson_with(source(), &request, constraints);
    }
}

#[test]
fn porep_2kib_constraint_count_is_pinned() {
    // Synthesis only: no parameters needed.
    let manifest = &fixture().1;
    let request = porep_request();
    // The helper clients use builds the same request from the C1 alone.
    let built = cuzk_filecoin::request::porep_request(
        request.vanilla_proof.clone(),
        manifest.miner_id,
        manifest.sector_number,
    )
    .unwrap();
    assert_eq!(
        (built.kind, built.registered_proof, &built.sector),
        (request.kind, request.registered_proof, &request.sector)
    );
    assert!(built.vanilla_proof == request.vanilla_proof && built.vanilla_proofs.is_empty());

    let plan = cuzk_filecoin::plan_for(&request).unwrap();
    assert_eq!(plan.partitions(), 1);
    let assignment = plan.synthesize(0).unwrap();
    assert_eq!(assignment.a.len(), POREP_2KIB_CONSTRAINTS);
    assert_eq!(assignment.input_assignment.len(), plan.public_inputs(0).len() + 1);
}

// Constraints per partition as cuzk counts them: the circuit's R1CS
// constraints (storage-proofs 19.1, as the reference measured them) plus
// one per public input (bellperson's input constraints).
const WINNING_2KIB_CONSTRAINTS: usize = 90_750 + 133;
const WINDOW_2KIB_CONSTRAINTS: usize = 21_866 + 23;
const POREP_2KIB_CONSTRAINTS: usize = 2_687_921 + 40;
