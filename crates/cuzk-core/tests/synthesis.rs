//! Synthesis layout and the synthetic circuit's shape.

use bellperson::util_cs::test_cs::TestConstraintSystem;
use bellperson::Circuit;
use cuzk_core::{synthesize, Scalar, SyntheticCircuit};
use ff::Field;

#[test]
fn assignment_satisfies_every_constraint_and_has_the_advertised_shape() {
    let circuit = SyntheticCircuit::new(1 << 14, vec![Scalar::ONE, Scalar::ZERO], 7).unwrap();
    let hint = circuit.size_hint();
    let assignment = synthesize(circuit.clone(), hint).unwrap();
    assignment.validate().unwrap();
    assert_eq!(assignment.num_constraints(), 1 << 14);
    assert_eq!(assignment.input_assignment.len(), hint.inputs);
    assert_eq!(assignment.aux_assignment.len(), hint.aux);
    assert_eq!(assignment.a.capacity(), 1 << 14, "capacity hint avoided regrowth");
    for i in 0..assignment.num_constraints() {
        assert_eq!(
            assignment.a[i] * assignment.b[i],
            assignment.c[i],
            "constraint {i}"
        );
    }
    let aux = &assignment.aux_assignment;
    let zeros = aux.iter().filter(|s| s.is_zero_vartime()).count() as f64 / aux.len() as f64;
    let ones = aux.iter().filter(|s| **s == Scalar::ONE).count() as f64 / aux.len() as f64;
    let b_density = assignment.b_aux_density.count_ones() as f64 / aux.len() as f64;
    assert!((0.45..0.65).contains(&zeros), "zeros {zeros}");
    assert!((0.30..0.50).contains(&ones), "ones {ones}");
    assert!((0.20..0.30).contains(&b_density), "B density {b_density}");
    // Inputs are dense in B through the constant one only.
    assert!(assignment.b_input_density.get(0));
}

#[test]
fn bellperson_test_cs_agrees_the_circuit_is_satisfied() {
    for n in [10usize, 257, 4096] {
        let circuit = SyntheticCircuit::new(n, vec![Scalar::from(3u64)], 9).unwrap();
        let mut cs = TestConstraintSystem::<Scalar>::new();
        circuit.clone().synthesize(&mut cs).unwrap();
        assert!(cs.is_satisfied(), "n = {n}: {:?}", cs.which_is_unsatisfied());
        // bellperson's test CS does not append the per-input constraints.
        assert_eq!(cs.num_constraints(), n - circuit.public_inputs().len() - 1);
    }
}

#[test]
fn too_small_circuits_are_refused() {
    assert!(SyntheticCircuit::new(3, vec![Scalar::ONE], 0).is_err());
    assert!(SyntheticCircuit::new(4, vec![Scalar::ONE], 0).is_ok());
}
