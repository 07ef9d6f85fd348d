//! The pre-compiled R1CS evaluator (`cuzk_core::CompiledR1cs`) on the real
//! PoRep 2 KiB partition circuit: equal to `cuzk_core::synthesize`, in
//! agreement with bellperson's own constraint systems, sensitive to the
//! witness, and cached per circuit id by the plans.

use bellperson::util_cs::{metric_cs::MetricCS, test_cs::TestConstraintSystem, Comparable};
use bellperson::Circuit;
use cuzk_core::{
    synthesize, CompiledR1cs, ProofKind, ProofPlan, ProofRequest, ProvingAssignment, Scalar, SectorFields,
    SizeHint,
};
use cuzk_filecoin::fixtures;
use cuzk_filecoin::plans::PorepPlan;
use cuzk_filecoin::request::PorepInput;
use filecoin_proofs::SectorShape2KiB;
use std::cell::Cell;
use std::sync::{Arc, OnceLock};

/// Constraints of the PoRep 2 KiB partition, with the per-input ones (as
/// pinned in tests/circuits.rs).
const POREP_2KIB_CONSTRAINTS: usize = 2_687_921 + 40;

mod common;
use common::fixture;

fn porep_request() -> ProofRequest {
    let (dir, manifest) = fixture();
    ProofRequest {
        request_id: String::new(),
        kind: ProofKind::PorepSealCommit,
        registered_proof: manifest.registered_seal_proof,
        priority: None,
        vanilla_proof: std::fs::read(dir.path().join(fixtures::C1_FILE)).unwrap(),
        vanilla_proofs: Vec::new(),
        sector: SectorFields {
            miner_id: manifest.miner_id,
            sector_number: manifest.sector_number,
            ..SectorFields::default()
        },
    }
}

fn porep_plan() -> PorepPlan<SectorShape2KiB> {
    PorepPlan::new(PorepInput::parse(&porep_request()).unwrap(), &Default::default()).unwrap()
}

/// The partition's circuit, recorded once for all tests of this binary.
fn compiled() -> &'static CompiledR1cs {
    static R1CS: OnceLock<CompiledR1cs> = OnceLock::new();
    R1CS.get_or_init(|| CompiledR1cs::record(porep_plan().circuit(0).unwrap()).unwrap())
}

fn unsatisfied(assignment: &ProvingAssignment) -> usize {
    (0..assignment.a.len())
        .filter(|&i| assignment.a[i] * assignment.b[i] != assignment.c[i])
        .count()
}

#[test]
fn porep_evaluator_equals_synthesize() {
    let plan = porep_plan();
    let r1cs = compiled();
    assert_eq!(r1cs.num_constraints(), POREP_2KIB_CONSTRAINTS);
    let ours = r1cs.synthesize(plan.circuit(0).unwrap()).unwrap();
    let expected = synthesize(plan.circuit(0).unwrap(), SizeHint::default()).unwrap();
    assert_eq!(ours.a.len(), POREP_2KIB_CONSTRAINTS);
    assert!(
        ours == expected,
        "the evaluator's assignment differs from cuzk_core::synthesize's"
    );
    assert_eq!(unsatisfied(&ours), 0);
}

/// Independent of both cuzk synthesisers: bellperson's
/// `TestConstraintSystem` computes the values (and says the circuit is
/// satisfied), bellperson's `MetricCS` records the constraints, and
/// bellperson's `LinearCombination::eval` evaluates them; every row of ours
/// must match.
#[test]
fn porep_rows_agree_with_bellpersons_constraint_systems() {
    let plan = porep_plan();
    let ours = compiled().synthesize(plan.circuit(0).unwrap()).unwrap();

    let (inputs, aux) = {
        let mut test_cs = TestConstraintSystem::<Scalar>::new();
        plan.circuit(0).unwrap().synthesize(&mut test_cs).unwrap();
        assert!(test_cs.is_satisfied(), "{:?}", test_cs.which_is_unsatisfied());
        (test_cs.scalar_inputs(), test_cs.scalar_aux())
    };
    assert!(
        ours.input_assignment == inputs,
        "inputs differ from TestConstraintSystem's"
    );
    assert!(
        ours.aux_assignment == aux,
        "aux values differ from TestConstraintSystem's"
    );

    let mut metric = MetricCS::<Scalar>::new();
    plan.circuit(0).unwrap().synthesize(&mut metric).unwrap();
    let constraints = metric.constraints();
    assert_eq!(constraints.len() + inputs.len(), ours.a.len());
    for (row, (a, b, c, name)) in constraints.iter().enumerate() {
        assert!(ours.a[row] == a.eval(&inputs, &aux), "A of {name}");
        assert!(ours.b[row] == b.eval(&inputs, &aux), "B of {name}");
        assert!(ours.c[row] == c.eval(&inputs, &aux), "C of {name}");
    }
}

#[test]
fn porep_changed_witness_breaks_some_constraint() {
    let r1cs = compiled();
    let good = r1cs.witness(porep_plan().circuit(0).unwrap()).unwrap();
    // Not +1: a 0 bit made 1 can still satisfy its lone boolean constraint.
    let change = Scalar::from(5u64);
    for index in [0, good.aux.len() / 3, good.aux.len() - 1] {
        let mut aux = good.aux.to_scalars();
        aux[index] += change;
        let bad = cuzk_core::Witness {
            inputs: good.inputs.clone(),
            aux: cuzk_core::PackedScalars::from_scalars(&aux),
            left: None,
        };
        let broken = unsatisfied(&r1cs.assign(bad).unwrap());
        assert!(broken > 0, "aux {index} changed by 5, every row still holds");
    }
    let mut bad = good;
    bad.inputs[1] += change;
    assert!(
        unsatisfied(&r1cs.assign(bad).unwrap()) > 0,
        "input 1 changed, every row still holds"
    );
}

/// A cache records a circuit id once and hands the same compiled R1CS to
/// every later partition.
#[test]
fn plans_cache_the_compiled_r1cs_per_circuit_id() {
    let plan = porep_plan();
    let id = plan.circuit_id();
    let recordings = Cell::new(0);
    let circuit = || {
        recordings.set(recordings.get() + 1);
        plan.circuit(0)
    };
    let cache = cuzk_core::R1csCache::default();
    let first = cuzk_filecoin::plans::compiled_r1cs(&cache, &id, circuit).unwrap();
    let again = cuzk_filecoin::plans::compiled_r1cs(&cache, &id, circuit).unwrap();
    assert!(Arc::ptr_eq(&first, &again));
    assert_eq!(recordings.get(), 1);
    assert_eq!(first.num_constraints(), POREP_2KIB_CONSTRAINTS);

    // The plan's own synthesis goes through it and matches.
    let ours = plan.synthesize(0).unwrap();
    assert!(ours == first.synthesize(plan.circuit(0).unwrap()).unwrap());
}
