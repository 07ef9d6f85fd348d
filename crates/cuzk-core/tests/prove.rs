//! The CPU prover against bellperson: its verifier accepts our proofs, and
//! with the same r and s our proof bytes equal its `create_proof`.

mod common;

use common::circuit_and_params;
use cuzk_core::{
    finish, proof_to_bytes, prove, prove_start, synthesize, ProveError, Randomness, Scalar, SyntheticCircuit,
    Verifier,
};
use ff::Field;
use rand::SeedableRng;

fn prove_and_verify(constraints: usize, inputs: Vec<Scalar>) {
    let (circuit, params) = circuit_and_params(constraints, inputs, 11);
    let public = circuit.public_inputs().to_vec();
    let assignment = synthesize(circuit.clone(), circuit.size_hint()).unwrap();
    assert_eq!(
        assignment.num_constraints(),
        constraints,
        "the circuit has exactly the requested size"
    );
    let (proof, _) = prove(assignment, &params, Randomness::Secure).unwrap();
    let verifier = Verifier::new(&params.vk);
    assert!(
        verifier.verify(&proof, &public).unwrap(),
        "n = {constraints}: bellperson rejects our proof"
    );
    // The check can fail: the same proof with another public input is rejected.
    let mut wrong = public.clone();
    if let Some(first) = wrong.first_mut() {
        *first += Scalar::ONE;
        assert!(
            !verifier.verify(&proof, &wrong).unwrap(),
            "n = {constraints}: tampered input accepted"
        );
    }
}

#[test]
fn proofs_verify_for_power_of_two_sizes() {
    for k in 4..=14 {
        prove_and_verify(1 << k, vec![Scalar::ONE, Scalar::ZERO]);
    }
}

#[test]
fn proofs_verify_for_awkward_sizes_and_inputs() {
    let cases: Vec<(usize, Vec<Scalar>)> = vec![
        (SyntheticCircuit::min_constraints(0), vec![]),
        (SyntheticCircuit::min_constraints(1), vec![Scalar::ZERO]),
        (17, vec![Scalar::ONE]),
        (31, vec![Scalar::ZERO, Scalar::ZERO]),
        (1000, vec![Scalar::ONE, Scalar::ONE, Scalar::ZERO]),
        ((1 << 10) - 1, vec![Scalar::from(12345u64)]),
        ((1 << 10) + 1, vec![Scalar::ZERO]),
        (5000, vec![]),
    ];
    for (constraints, inputs) in cases {
        prove_and_verify(constraints, inputs);
    }
}

#[test]
fn proof_bytes_equal_bellperson_create_proof() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(99);
    let cases: Vec<(usize, Vec<Scalar>)> = vec![
        (1 << 6, vec![Scalar::ZERO]),
        (1 << 10, vec![Scalar::ONE, Scalar::ZERO]),
        ((1 << 9) + 3, vec![Scalar::ONE]),
        (1 << 12, vec![]),
    ];
    for (constraints, inputs) in cases {
        let (circuit, params) = circuit_and_params(constraints, inputs, 5);
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let theirs = bellperson::groth16::create_proof::<blstrs::Bls12, _, _>(
            circuit.clone(),
            &params.to_bellperson(),
            r,
            s,
        )
        .unwrap();
        let mut their_bytes = Vec::new();
        theirs.write(&mut their_bytes).unwrap();

        let assignment = synthesize(circuit.clone(), circuit.size_hint()).unwrap();
        let pending = prove_start(assignment, &params, Randomness::Fixed { r, s }).unwrap();
        let (ours, _) = finish(pending).unwrap();
        assert_eq!(proof_to_bytes(&ours).to_vec(), their_bytes, "n = {constraints}");
    }
}

#[test]
fn different_witnesses_give_different_valid_proofs() {
    let (circuit, params) = circuit_and_params(1 << 8, vec![Scalar::ONE], 1);
    let other = SyntheticCircuit::new(1 << 8, vec![Scalar::ONE], 2).unwrap();
    let fixed = Randomness::Fixed {
        r: Scalar::ONE,
        s: Scalar::ONE,
    };
    let a = prove(
        synthesize(circuit.clone(), circuit.size_hint()).unwrap(),
        &params,
        fixed,
    )
    .unwrap()
    .0;
    let b = prove(
        synthesize(other.clone(), other.size_hint()).unwrap(),
        &params,
        fixed,
    )
    .unwrap()
    .0;
    assert_ne!(proof_to_bytes(&a), proof_to_bytes(&b));
    let verifier = Verifier::new(&params.vk);
    assert!(verifier.verify(&a, circuit.public_inputs()).unwrap());
    assert!(verifier.verify(&b, other.public_inputs()).unwrap());
}

#[test]
fn invalid_assignments_are_errors_not_panics() {
    let (circuit, params) = circuit_and_params(64, vec![Scalar::ONE], 3);
    let good = synthesize(circuit.clone(), circuit.size_hint()).unwrap();

    let mut short_c = good.clone();
    short_c.c.pop();
    let err = prove_start(short_c, &params, Randomness::Secure).unwrap_err();
    assert!(matches!(err, ProveError::InvalidAssignment(_)), "{err}");

    let mut no_inputs = good.clone();
    no_inputs.input_assignment.clear();
    no_inputs.b_input_density = Default::default();
    assert!(matches!(
        prove_start(no_inputs, &params, Randomness::Secure).unwrap_err(),
        ProveError::InvalidAssignment(_)
    ));

    let mut extra_aux = good.clone();
    extra_aux.aux_assignment.push(Scalar::ONE);
    let err = prove_start(extra_aux, &params, Randomness::Secure).unwrap_err();
    assert!(err.to_string().contains("density"), "{err}");

    // The assignment of a larger circuit against these parameters.
    let bigger = SyntheticCircuit::new(128, vec![Scalar::ONE], 3).unwrap();
    let assignment = synthesize(bigger.clone(), bigger.size_hint()).unwrap();
    let err = prove_start(assignment, &params, Randomness::Secure).unwrap_err();
    assert!(err.to_string().contains("do not match the circuit"), "{err}");

    let empty = cuzk_core::ProvingAssignment::default();
    assert!(prove_start(empty, &params, Randomness::Secure).is_err());
}
