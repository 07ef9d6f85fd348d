//! The witness path on the real Filecoin circuits (2 KiB sectors: PoRep
//! C2, WinningPoSt, WindowPoSt, SnapDeals): for every partition the
//! device's a, b, c equal the host's byte for byte, the GPU proof from the
//! witness equals the CPU backend's proof of the host's assignment for the
//! same r, s, and the whole proof passes the plan's check (bellperson's
//! verifier, then filecoin-proofs'). Run on a GPU machine with
//! `cargo test -p cuzk-filecoin --features cuzk-core/cuda --release --test gpu`
//! (`scripts/gpu-run.sh check` runs it); without a device every test says
//! SKIPPED and passes vacuously.

use cuzk_core::backend::{prove_with, CudaBackend, Residency, Tuning};
use cuzk_core::{
    CpuBackend, PartitionData, PlanSource, ProofKind, ProofRequest, ProverInput, ProvingParameters,
    Randomness, Scalar,
};
use cuzk_filecoin::fixtures;
use cuzk_filecoin::FilecoinPlans;
use cuzk_sys::gpu::GpuR1cs;
use std::sync::{Arc, Mutex};

mod common;
use common::{param_dir, porep_request};

/// The parameters of (`kind`, `number`), generated once, read through the
/// Filecoin source's recipe for `circuit_id` (as the engine reads them).
fn params(kind: ProofKind, number: u64, circuit_id: &str) -> Arc<ProvingParameters> {
    static LOCK: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    cuzk_filecoin::params::ensure(kind, number, 1).unwrap();
    let recipe = FilecoinPlans::new(param_dir())
        .parameters(circuit_id)
        .expect("an official circuit id")
        .unwrap();
    Arc::new(recipe.load().unwrap())
}

fn gpu() -> Option<CudaBackend> {
    let found = CudaBackend::detect(&[], Residency::Device, Tuning::default())
        .into_iter()
        .next();
    if found.is_none() {
        eprintln!("SKIPPED: no CUDA device (or a build without --features cuzk-core/cuda)");
    }
    found
}

fn request_file(kind: ProofKind, file: &str) -> ProofRequest {
    let request = common::fixture_request(file);
    assert_eq!(request.kind, kind);
    request
}

/// Every partition of `request` through the witness path, checked as the
/// module documentation says.
fn witness_path_on(request: &ProofRequest) {
    witness_path_with(FilecoinPlans::new(param_dir()), request);
}

fn witness_path_with(source: FilecoinPlans, request: &ProofRequest) {
    let Some(gpu) = gpu() else {
        return;
    };
    let plan = source
        .plan(request)
        .expect("the Filecoin source claims every request")
        .unwrap();
    let params = params(request.kind, request.registered_proof, &plan.circuit_id());
    let mut proofs = Vec::new();
    for index in 0..plan.partitions() {
        let PartitionData::Witness(data) = plan.synthesize_witness(index).unwrap() else {
            panic!("{:?}: no witness-only form", request.kind);
        };
        let host = data.r1cs.assign(data.witness.clone()).unwrap();
        // Uploaded for this check only (freed at the end of the statement).
        let [a, b, c] = GpuR1cs::upload(gpu.ordinal(), &data.r1cs.device_upload())
            .unwrap()
            .evaluate(
                &data.witness.inputs,
                data.witness.aux.device_view(),
                data.witness.left.as_ref().map(|l| l.device_view()),
            )
            .unwrap();
        let what = format!("{:?} partition {index}", request.kind);
        assert!(
            a == host.a && b == host.b && c == host.c,
            "{what}: device a, b, c differ"
        );

        let fixed = Randomness::Fixed {
            r: Scalar::from(1000 + index as u64),
            s: Scalar::from(2000 + index as u64),
        };
        let (cpu, _) = prove_with(&CpuBackend, ProverInput::evaluated(host, &params, fixed)).unwrap();
        let input = ProverInput {
            data: PartitionData::Witness(data),
            params: Arc::clone(&params),
            randomness: fixed,
            priority: cuzk_core::Priority::Normal,
        };
        let (ours, timings) = prove_with(&gpu, input).unwrap();
        assert!(timings.abc_on_device, "{what}: took the host path");
        assert_eq!(
            cuzk_core::proof_to_bytes(&ours),
            cuzk_core::proof_to_bytes(&cpu),
            "{what}: GPU bytes differ from the CPU's"
        );
        proofs.push(ours);
    }
    plan.verify(&params, &proofs)
        .unwrap_or_else(|e| panic!("{:?}: {e}", request.kind));
}

#[test]
fn porep_witness_path_equals_the_host_and_verifies() {
    witness_path_on(&porep_request());
}

#[test]
fn winning_post_witness_path_equals_the_host_and_verifies() {
    witness_path_on(&request_file(ProofKind::WinningPost, fixtures::WINNING_FILE));
}

#[test]
fn window_post_witness_path_equals_the_host_and_verifies() {
    witness_path_on(&request_file(
        ProofKind::WindowPostPartition,
        fixtures::WPOST_FILE,
    ));
}

/// The PoSt witnesses with their paths' values left to the device
/// (`[gpus] post_paths_on_device`): the device's a, b, c equal the host's
/// (which finished the paths on the host), the proofs the CPU backend's,
/// and they verify.
#[test]
fn post_witness_path_with_paths_on_the_device_equals_the_host_and_verifies() {
    let source = || FilecoinPlans::new(param_dir()).with_paths_on_device(true);
    witness_path_with(
        source(),
        &request_file(ProofKind::WinningPost, fixtures::WINNING_FILE),
    );
    witness_path_with(
        source(),
        &request_file(ProofKind::WindowPostPartition, fixtures::WPOST_FILE),
    );
}

#[test]
fn snap_witness_path_equals_the_host_and_verifies() {
    witness_path_on(&request_file(ProofKind::SnapDealsUpdate, fixtures::SNAP_FILE));
}

/// Paths left to the prover and finished on the device equal them
/// finished on the host (cuzk-filecoin's writer, which equals the
/// gadgets'), with the same paths told as not leading to their roots: a
/// WindowPoSt 32 GiB tree's paths and a hash of each table (arities 2 and
/// 8); and paths whose levels reach past the vector are refused before the
/// device.
#[test]
fn native_paths_finished_on_the_device_equal_the_host() {
    use cuzk_filecoin::native::merkle::{device_tables, finish_on_host, sample_paths};
    if cuzk_sys::gpu::device_count() == 0 {
        eprintln!("SKIPPED: no CUDA device (or a build without --features cuzk-core/cuda)");
        return;
    }
    let cases = sample_paths();
    for (k, (aux, paths)) in cases.iter().enumerate() {
        let mut host = aux.clone();
        let off = finish_on_host(paths, &mut host);
        let mut device = aux.clone();
        let written = cuzk_sys::gpu::write_paths(0, device_tables(), paths.as_ref(), &mut device).unwrap();
        if let Some(i) = (0..host.len()).find(|&i| device[i] != host[i]) {
            panic!("case {k}: value {i} of {} differs from the host's", host.len());
        }
        assert_eq!(written.mismatches, off.len() as u64, "case {k}");
        assert_eq!(written.first_mismatch, off.first().copied(), "case {k}");
    }
    // A vector too short for the last level: refused.
    let (aux, paths) = cases.last().unwrap();
    let mut short = aux[..aux.len() - 4].to_vec();
    let refused = cuzk_sys::gpu::write_paths(0, device_tables(), paths.as_ref(), &mut short);
    assert!(
        matches!(refused, Err(cuzk_sys::gpu::GpuError::Invalid(_))),
        "{refused:?}"
    );
}
