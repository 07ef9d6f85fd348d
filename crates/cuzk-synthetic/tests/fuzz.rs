//! Fuzz tests (issue 12, item 9) of the benchmark plan source's parsers of
//! untrusted input: the JSON spec of a synthetic request
//! (`SyntheticSpec::from_vanilla_proof`, then the plan made of it) and
//! benchmark circuit ids (`parameters::recipe`, as PreloadSRS hands them
//! over). Mutated inputs must be refused with an error, never panic, and
//! never allocate by an untrusted size (no recipe is loaded: loading is
//! generation). The mutator is cuzk-core's `tests/fuzzing`.

#[path = "../../cuzk-core/tests/fuzzing/json.rs"]
mod fuzz_json;
#[path = "../../cuzk-core/tests/fuzzing/mod.rs"]
mod fuzzing;

use cuzk_core::{ParameterCache, PlanSource, ProofKind, ProofRequest, SectorFields};
use cuzk_synthetic::{parameters, SyntheticPlans, SyntheticSpec, SYNTHETIC_REGISTERED_PROOF};
use fuzzing::{mutate_bytes, Rng, Verdict};
use std::sync::OnceLock;

const SPEC_SEEDS: [&str; 6] = [
    "",
    "{}",
    r#"{"constraints": 65536, "partitions": 2}"#,
    r#"{"constraints": 1024, "partitions": 1, "inputs": 4, "seed": 9}"#,
    r#"{"constraints": 134217728, "partitions": 10, "inputs": 40, "witness": "shaped", "shape_seed": 3}"#,
    r#"{"constraints":4,"partitions":64,"inputs":1,"seed":18446744073709551615,"witness":"circuit","shape_seed":0}"#,
];

fn mutated_spec(rng: &mut Rng) -> Vec<u8> {
    let seed = rng.pick(&SPEC_SEEDS).as_bytes();
    let others: Vec<&[u8]> = SPEC_SEEDS.iter().map(|s| s.as_bytes()).collect();
    if !seed.is_empty() && rng.one_in(2) {
        let mut value: serde_json::Value = serde_json::from_slice(seed).expect("seeds are JSON");
        fuzz_json::mutate_json(rng, &mut value);
        let bytes = serde_json::to_vec(&value).expect("a Value serialises");
        if rng.one_in(4) {
            return mutate_bytes(rng, &bytes, &others);
        }
        return bytes;
    }
    mutate_bytes(rng, seed, &others)
}

#[test]
fn fuzz_synthetic_specs() {
    let dir = tempfile::tempdir().unwrap();
    let source = SyntheticPlans::new(ParameterCache::new(dir.path()).unwrap());
    fuzzing::run("synthetic_specs", 100_000, mutated_spec, |bytes| {
        let parsed = SyntheticSpec::from_vanilla_proof(bytes);
        let request = ProofRequest {
            request_id: String::new(),
            kind: ProofKind::PorepSealCommit,
            registered_proof: SYNTHETIC_REGISTERED_PROOF,
            priority: None,
            vanilla_proof: bytes.clone(),
            vanilla_proofs: Vec::new(),
            sector: SectorFields::default(),
        };
        let planned = source.plan(&request).expect("the synthetic source claims 9000");
        match (parsed, planned) {
            (Ok(spec), Ok(plan)) => {
                // What the engine asks of a plan at submission (nothing
                // that synthesises or draws densities).
                let id = plan.circuit_id();
                let _ = (plan.partitions(), plan.partition_bytes());
                if plan.partitions() != spec.partitions {
                    return Verdict::Finding(format!("{spec:?} planned {} partitions", plan.partitions()));
                }
                // The plan's id must be one the same source accepts.
                match source.parameters(&id) {
                    Some(Ok(_)) => Verdict::Accepted,
                    other => Verdict::Finding(format!("{spec:?}: its circuit id {id} is refused: {other:?}")),
                }
            }
            (Err(_), Err(_)) => Verdict::Refused,
            (parsed, planned) => Verdict::Finding(format!(
                "the spec parser and the plan disagree: {parsed:?} / {:?}",
                planned.map(|p| p.circuit_id())
            )),
        }
    });
}

fn mutated_circuit_id(rng: &mut Rng) -> String {
    const SEEDS: [&str; 6] = [
        "synthetic-v1-n65536-i2",
        "synthetic-v1-n1024-i0",
        "shaped-v1-n134217728-i40-s0",
        "shaped-v1-n65536-i2-s7",
        "synthetic-v1-n1000000000000-i2",
        "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-032d3138d22506ec0082ed72b2dcba18df18477904e35bafee82b3793b06832f",
    ];
    let seed = *rng.pick(&SEEDS);
    if rng.one_in(3) {
        let numbers = [
            u64::MAX.to_string(),
            (u64::MAX / 2).to_string(),
            (1u64 << 27).to_string(),
            ((1u64 << 27) + 1).to_string(),
            "1025".into(),
            "18446744073709551616".into(),
            "-1".into(),
            String::new(),
            rng.interesting_u64().to_string(),
        ];
        return fuzzing::with_a_number_replaced(rng, seed, 0, &numbers);
    }
    let others: Vec<&[u8]> = SEEDS.iter().map(|s| s.as_bytes()).collect();
    String::from_utf8_lossy(&mutate_bytes(rng, seed.as_bytes(), &others)).into_owned()
}

fn cache() -> &'static (tempfile::TempDir, ParameterCache) {
    static CACHE: OnceLock<(tempfile::TempDir, ParameterCache)> = OnceLock::new();
    CACHE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let cache = ParameterCache::new(dir.path()).unwrap();
        (dir, cache)
    })
}

#[test]
fn fuzz_benchmark_circuit_ids() {
    fuzzing::run(
        "benchmark_circuit_ids",
        200_000,
        mutated_circuit_id,
        |id| match parameters::recipe(&cache().1, id) {
            None => Verdict::Refused,
            Some(Err(_)) => Verdict::Refused,
            Some(Ok(recipe)) => match recipe.check_available() {
                Ok(()) => Verdict::Accepted,
                Err(e) => Verdict::Finding(format!("{id}: accepted, then unavailable: {e}")),
            },
        },
    );
}
