//! Regression tests (issue 12, item 4): malformed Filecoin inputs that made
//! filecoin-proofs or storage-proofs panic at submission (21 of 6,000 in
//! the run came back INTERNAL with a backtrace) are refused as
//! `InvalidArgument`, naming the problem, by the checks that run before the
//! Filecoin crates see them (not by the panic guard behind them: no message
//! here may carry `validate::PANIC_MARK`).
//!
//! The concrete inputs: a non-canonical 32-byte value (32 bytes of 0xff,
//! and the modulus itself) in every place a request carries one, and the
//! 2 KiB fixtures' vanilla proofs with mutated Merkle paths (indices past a
//! level's hashes, hashes removed, paths shortened and lengthened, proofs
//! of another tree shape, non-canonical leaves, roots and siblings) and
//! mutated counts (no inclusion proofs, no sector proofs, columns without
//! rows, parents missing). Each was a panic before: `from_repr failure`,
//! `insertion index (is 9) should be <= len (is 7)`, `unsupported arity 7`,
//! `index out of bounds`, `unsupported column size: 0`.

use cuzk_core::PlanError;
use cuzk_core::ProofRequest;
use cuzk_filecoin::fixtures;
use cuzk_filecoin::validate::PANIC_MARK;
use filecoin_proofs::{FallbackPoStSectorProof, SectorShape2KiB};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};
use storage_proofs_update::PartitionProof;

type Tree = SectorShape2KiB;

/// The BLS12-381 scalar modulus, little-endian: the smallest non-canonical
/// value.
const MODULUS: [u8; 32] = [
    0x01, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x5b, 0xfe, 0xff, 0x02, 0xa4, 0xbd, 0x53, 0x05,
    0xd8, 0xa1, 0x09, 0x08, 0xd8, 0x39, 0x33, 0x48, 0x7d, 0x9d, 0x29, 0x53, 0xa7, 0xed, 0x73,
];

mod common;
use common::fixture;

fn request_file(name: &str) -> ProofRequest {
    common::fixture_request(name)
}

fn c1_json() -> Value {
    serde_json::from_slice(&std::fs::read(fixture().0.path().join(fixtures::C1_FILE)).unwrap()).unwrap()
}

fn porep_request(c1: &Value) -> ProofRequest {
    let m = &fixture().1;
    cuzk_filecoin::request::porep_request(serde_json::to_vec(c1).unwrap(), m.miner_id, m.sector_number)
        .unwrap()
}

/// `plan_for(request)` must refuse it as an `InvalidArgument` containing
/// `names`, from a check (not a caught panic), and must not panic.
#[track_caller]
fn refused(case: &str, request: &ProofRequest, names: &str) {
    let outcome = catch_unwind(AssertUnwindSafe(|| cuzk_filecoin::plan_for(request)));
    match outcome {
        Err(_) => panic!("{case}: plan_for panicked"),
        Ok(Ok(_)) => panic!("{case}: accepted"),
        Ok(Err(PlanError::InvalidArgument(m))) => {
            assert!(
                !m.contains(PANIC_MARK),
                "{case}: refused only by the panic guard: {m}"
            );
            assert!(m.contains(names), "{case}: {m:?} does not name {names:?}");
        }
        Ok(Err(other)) => panic!("{case}: {other:?}, not InvalidArgument"),
    }
}

/// Vanilla proof `k` of `request` (bincode `T`) changed through its JSON.
fn with_vanilla<T: DeserializeOwned + Serialize>(
    request: &ProofRequest,
    k: usize,
    change: impl FnOnce(&mut Value),
) -> ProofRequest {
    let proof: T = bincode::deserialize(&request.vanilla_proofs[k]).unwrap();
    let mut value = serde_json::to_value(&proof).unwrap();
    change(&mut value);
    let proof: T = serde_json::from_value(value).expect("the mutation keeps the proof's types");
    let mut request = request.clone();
    request.vanilla_proofs[k] = bincode::serialize(&proof).unwrap();
    request
}

/// The node at a dotted path (numbers index arrays).
fn at<'a>(value: &'a mut Value, path: &str) -> &'a mut Value {
    path.split('.').fold(value, |v, key| match key.parse::<usize>() {
        Ok(i) => &mut v[i],
        Err(_) => &mut v[key],
    })
}

fn array<'a>(value: &'a mut Value, path: &str) -> &'a mut Vec<Value> {
    at(value, path).as_array_mut().expect("an array")
}

fn ff() -> Value {
    json!(vec![0xffu8; 32])
}

#[test]
fn the_unmutated_fixtures_are_planned() {
    for request in [
        porep_request(&c1_json()),
        request_file(fixtures::WINNING_FILE),
        request_file(fixtures::WPOST_FILE),
        request_file(fixtures::SNAP_FILE),
    ] {
        cuzk_filecoin::plan_for(&request).unwrap_or_else(|e| panic!("{:?}: {e}", request.kind));
    }
}

#[test]
fn non_canonical_request_fields_are_invalid_arguments() {
    for bad in [[0xffu8; 32], MODULUS] {
        let hex = hex::encode(bad);
        for file in [fixtures::WINNING_FILE, fixtures::WPOST_FILE] {
            let mut request = request_file(file);
            request.sector.randomness = bad.to_vec();
            refused(
                &format!("{file} randomness {hex}"),
                &request,
                "randomness is not a BLS12-381 field element",
            );
        }
        for field in ["comm_r_old", "comm_r_new", "comm_d_new"] {
            let mut request = request_file(fixtures::SNAP_FILE);
            let sector = &mut request.sector;
            *match field {
                "comm_r_old" => &mut sector.comm_r_old,
                "comm_r_new" => &mut sector.comm_r_new,
                _ => &mut sector.comm_d_new,
            } = bad.to_vec();
            refused(
                &format!("snap {field} {hex}"),
                &request,
                &format!("{field} is not a BLS12-381 field element"),
            );
        }
        for field in ["comm_r", "comm_d", "replica_id"] {
            let mut c1 = c1_json();
            c1[field] = json!(bad);
            refused(
                &format!("C1 {field} {hex}"),
                &porep_request(&c1),
                &format!("the C1 output's {field} is not a BLS12-381 field element"),
            );
        }
        // The seed and ticket are hashed as bytes, never read as field
        // elements: not refused for their value, but for what they change
        // (the challenges, the replica id).
        for (field, names) in [("seed", "do not verify"), ("ticket", "replica_id does not match")] {
            let mut c1 = c1_json();
            c1[field] = json!(bad);
            refused(&format!("C1 {field} {hex}"), &porep_request(&c1), names);
        }
    }
    // The same in the C1 envelope.
    let mut c1 = c1_json();
    c1["comm_r"] = ff();
    let m = &fixture().1;
    let envelope = serde_json::to_vec(&json!({
        "SectorNum": m.sector_number,
        "Phase1Out": base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            serde_json::to_vec(&c1).unwrap()
        ),
        "SectorSize": 2048,
    }))
    .unwrap();
    let request = cuzk_filecoin::request::porep_request(envelope, m.miner_id, 0).unwrap();
    refused(
        "enveloped C1 comm_r 0xff",
        &request,
        "the C1 output's comm_r is not a BLS12-381 field element",
    );
}

/// A mutation of a vanilla proof's JSON and the words its refusal must hold.
type Case = (&'static str, Box<dyn Fn(&mut Value)>, &'static str);

fn post_cases() -> Vec<Case> {
    const SECTOR: &str = "vanilla_proof.sectors.0";
    const PROOF: &str = "vanilla_proof.sectors.0.inclusion_proofs.0.data.Single";
    const PATH: &str = "vanilla_proof.sectors.0.inclusion_proofs.0.data.Single.path.path";
    let element = "is a Merkle path element";
    vec![
        (
            "index past the hashes",
            Box::new(|v| *at(v, &format!("{PATH}.0.index")) = json!(9)),
            "path.path[0] is a Merkle path element of arity 8 with index 9",
        ),
        (
            "index u64::MAX",
            Box::new(|v| *at(v, &format!("{PATH}.1.index")) = json!(u64::MAX)),
            element,
        ),
        (
            "a hash removed",
            Box::new(|v| {
                array(v, &format!("{PATH}.0.hashes")).pop();
            }),
            "Merkle path element of 6 hashes",
        ),
        (
            "no hashes",
            Box::new(|v| *at(v, &format!("{PATH}.0.hashes")) = json!([])),
            "Merkle path element of 0 hashes",
        ),
        (
            "empty path",
            Box::new(|v| *at(v, PATH) = json!([])),
            "the Merkle path has 0 levels, a tree of 64 leaves has 2",
        ),
        (
            "a level added",
            Box::new(|v| {
                let level = at(v, &format!("{PATH}.0")).clone();
                array(v, PATH).push(level);
            }),
            "the Merkle path has 3 levels",
        ),
        (
            "leaf 0xff",
            Box::new(|v| *at(v, &format!("{PROOF}.leaf")) = ff()),
            "inclusion_proofs[0].data.Single.leaf is not a BLS12-381 field element",
        ),
        (
            "root 0xff",
            Box::new(|v| *at(v, &format!("{PROOF}.root")) = ff()),
            "Single.root is not a BLS12-381 field element",
        ),
        (
            "sibling 0xff",
            Box::new(|v| *at(v, &format!("{PATH}.0.hashes.3")) = ff()),
            "hashes[3] is not a BLS12-381 field element",
        ),
        (
            "comm_r 0xff",
            Box::new(|v| v["comm_r"] = ff()),
            "comm_r is not a BLS12-381 field element",
        ),
        (
            "comm_c 0xff",
            Box::new(|v| *at(v, &format!("{SECTOR}.comm_c")) = ff()),
            "comm_c is not a BLS12-381 field element",
        ),
        (
            "comm_r_last 0xff",
            Box::new(|v| *at(v, &format!("{SECTOR}.comm_r_last")) = ff()),
            "comm_r_last is not a BLS12-381 field element",
        ),
        (
            "no inclusion proofs",
            Box::new(|v| *at(v, &format!("{SECTOR}.inclusion_proofs")) = json!([])),
            "holds 0 inclusion proofs",
        ),
        (
            "no sector proofs",
            Box::new(|v| *at(v, "vanilla_proof.sectors") = json!([])),
            "holds 0 sector proofs",
        ),
        (
            "two sector proofs",
            Box::new(|v| {
                let sector = at(v, SECTOR).clone();
                array(v, "vanilla_proof.sectors").push(sector);
            }),
            "holds 2 sector proofs",
        ),
        (
            "a sub-tree proof for a single tree",
            Box::new(|v| {
                let p = at(v, PROOF).clone();
                *at(v, "vanilla_proof.sectors.0.inclusion_proofs.0.data") = json!({"Sub": {
                    "base_proof": p["path"], "sub_proof": {"path": []}, "root": p["root"], "leaf": p["leaf"],
                }});
            }),
            "the Merkle proof is of another tree shape than 8-0-0",
        ),
        (
            "a top-tree proof for a single tree",
            Box::new(|v| {
                let p = at(v, PROOF).clone();
                *at(v, "vanilla_proof.sectors.0.inclusion_proofs.0.data") = json!({"Top": {
                    "base_proof": p["path"], "sub_proof": {"path": []},
                    "top_proof": {"path": [{"hashes": [p["leaf"]], "index": 1}]},
                    "root": p["root"], "leaf": p["leaf"],
                }});
            }),
            "the Merkle path has 3 levels",
        ),
        (
            "a root other than comm_r_last",
            Box::new(|v| *at(v, &format!("{SECTOR}.comm_r_last")) = json!(vec![1u8; 32])),
            "its root is not the sector proof's comm_r_last",
        ),
    ]
}

#[test]
fn mutated_post_vanilla_proofs_are_invalid_arguments() {
    for file in [fixtures::WINNING_FILE, fixtures::WPOST_FILE] {
        let request = request_file(file);
        for (case, change, names) in post_cases() {
            let mutated = with_vanilla::<FallbackPoStSectorProof<Tree>>(&request, 0, change);
            refused(&format!("{file}: {case}"), &mutated, names);
        }
    }
}

#[test]
fn mutated_snap_vanilla_proofs_are_invalid_arguments() {
    const C: &str = "challenge_proofs.0";
    let cases: Vec<Case> = vec![
        (
            "proof_r_old index past the hashes",
            Box::new(|v| *at(v, &format!("{C}.proof_r_old.data.Single.path.path.0.index")) = json!(9)),
            "proof_r_old.data.Single.path.path[0] is a Merkle path element of arity 8 with index 9",
        ),
        (
            "proof_r_new index past the hashes",
            Box::new(|v| *at(v, &format!("{C}.proof_r_new.data.Single.path.path.0.index")) = json!(8)),
            "arity 8 with index 8",
        ),
        (
            "proof_d_new index past the hashes",
            Box::new(|v| *at(v, &format!("{C}.proof_d_new.data.Single.path.path.0.index")) = json!(5)),
            "arity 2 with index 5",
        ),
        (
            "proof_r_old a hash removed",
            Box::new(|v| {
                array(v, &format!("{C}.proof_r_old.data.Single.path.path.0.hashes")).pop();
            }),
            "Merkle path element of 6 hashes",
        ),
        (
            "proof_d_new empty path",
            Box::new(|v| *at(v, &format!("{C}.proof_d_new.data.Single.path.path")) = json!([])),
            "proof_d_new: the Merkle path has 0 levels, a tree of 64 leaves has 6",
        ),
        (
            "proof_r_old leaf 0xff",
            Box::new(|v| *at(v, &format!("{C}.proof_r_old.data.Single.leaf")) = ff()),
            "proof_r_old.data.Single.leaf is not a BLS12-381 field element",
        ),
        (
            "comm_c 0xff",
            Box::new(|v| v["comm_c"] = ff()),
            "comm_c is not a BLS12-381 field element",
        ),
        (
            "apex leaf 0xff",
            Box::new(|v| *at(v, "apex_leafs.0") = ff()),
            "apex_leafs[0] is not a BLS12-381 field element",
        ),
    ];
    let request = request_file(fixtures::SNAP_FILE);
    for (case, change, names) in cases {
        let mutated = with_vanilla::<PartitionProof<Tree>>(&request, 0, change);
        refused(&format!("snap: {case}"), &mutated, names);
    }
}

#[test]
fn mutated_porep_c1_vanilla_proofs_are_invalid_arguments() {
    const P: &str = "vanilla_proofs.StackedDrg2KiBV1.0.0";
    let cases: Vec<Case> = vec![
        (
            "comm_d_proofs index past the hashes",
            Box::new(|v| *at(v, &format!("{P}.comm_d_proofs.data.Single.path.path.0.index")) = json!(3)),
            "comm_d_proofs.data.Single.path.path[0] is a Merkle path element of arity 2 with index 3",
        ),
        (
            "comm_d_proofs no hashes",
            Box::new(|v| *at(v, &format!("{P}.comm_d_proofs.data.Single.path.path.0.hashes")) = json!([])),
            "Merkle path element of 0 hashes",
        ),
        (
            "comm_d_proofs empty path",
            Box::new(|v| *at(v, &format!("{P}.comm_d_proofs.data.Single.path.path")) = json!([])),
            "comm_d_proofs: the Merkle path has 0 levels, a tree of 64 leaves has 6",
        ),
        (
            "comm_r_last_proof a hash removed",
            Box::new(|v| {
                array(
                    v,
                    &format!("{P}.comm_r_last_proof.data.Single.path.path.0.hashes"),
                )
                .pop();
            }),
            "comm_r_last_proof.data.Single.path.path[0] is a Merkle path element of 6 hashes",
        ),
        (
            "comm_r_last_proof a sibling changed",
            Box::new(|v| {
                *at(
                    v,
                    &format!("{P}.comm_r_last_proof.data.Single.path.path.0.hashes.0"),
                ) = json!(vec![1u8; 32])
            }),
            "comm_r_last_proof does not open its root",
        ),
        (
            "c_x column index past the hashes",
            Box::new(|v| {
                *at(
                    v,
                    &format!("{P}.replica_column_proofs.c_x.inclusion_proof.data.Single.path.path.0.index"),
                ) = json!(9)
            }),
            "c_x.inclusion_proof.data.Single.path.path[0] is a Merkle path element of arity 8 with index 9",
        ),
        (
            "c_x column without rows",
            Box::new(|v| *at(v, &format!("{P}.replica_column_proofs.c_x.column.rows")) = json!([])),
            "c_x.column.rows holds 0 rows; a column of this proof type has 2",
        ),
        (
            "c_x column row 0xff",
            Box::new(|v| *at(v, &format!("{P}.replica_column_proofs.c_x.column.rows.0")) = ff()),
            "c_x.column.rows[0] is not a BLS12-381 field element",
        ),
        (
            "DRG parent column without rows",
            Box::new(|v| *at(v, &format!("{P}.replica_column_proofs.drg_parents.0.column.rows")) = json!([])),
            "drg_parents[0].column.rows holds 0 rows",
        ),
        (
            "expander parent index past the hashes",
            Box::new(|v| {
                *at(
                    v,
                    &format!("{P}.replica_column_proofs.exp_parents.0.inclusion_proof.data.Single.path.path.0.index"),
                ) = json!(9)
            }),
            "exp_parents[0].inclusion_proof.data.Single.path.path[0] is a Merkle path element of arity 8",
        ),
        (
            "no expander parents",
            Box::new(|v| *at(v, &format!("{P}.replica_column_proofs.exp_parents")) = json!([])),
            "6 DRG and 0 expander parent columns, the graph has 6 and 8 parents",
        ),
        (
            "no labeling proofs",
            Box::new(|v| *at(v, &format!("{P}.labeling_proofs")) = json!([])),
            "0 labeling proofs for 2 layers",
        ),
        (
            "encoding parent 0xff",
            Box::new(|v| *at(v, &format!("{P}.encoding_proof.parents.0")) = ff()),
            "encoding_proof.parents[0] is not a BLS12-381 field element",
        ),
        (
            "no challenge proofs",
            Box::new(|v| *at(v, "vanilla_proofs.StackedDrg2KiBV1.0") = json!([])),
            "partition proof 0 holds no challenge proofs",
        ),
    ];
    for (case, change, names) in cases {
        let mut c1 = c1_json();
        change(&mut c1);
        refused(&format!("C1: {case}"), &porep_request(&c1), names);
    }
}

/// The checks accept 8 MiB fixtures too (same tree shape as 2 KiB, deeper
/// trees, 2 PoRep and 4 SnapDeals partitions). About 15 s:
/// `cargo test --release -p cuzk-filecoin --test malformed -- --ignored`.
#[test]
#[ignore]
fn the_unmutated_8mib_fixtures_are_planned() {
    fixture();
    let dir = tempfile::tempdir().unwrap();
    let manifest = fixtures::write_fixtures(8 << 20, dir.path(), 5).unwrap();
    let file = |name: &str| {
        fixtures::load_request_file(dir.path().join(name))
            .unwrap()
            .proof_request()
            .unwrap()
    };
    let c1 = std::fs::read(dir.path().join(fixtures::C1_FILE)).unwrap();
    let porep = cuzk_filecoin::request::porep_request(c1, manifest.miner_id, manifest.sector_number).unwrap();
    for request in [
        porep,
        file(fixtures::WINNING_FILE),
        file(fixtures::WPOST_FILE),
        file(fixtures::SNAP_FILE),
    ] {
        let plan = cuzk_filecoin::plan_for(&request).unwrap_or_else(|e| panic!("{:?}: {e}", request.kind));
        eprintln!("{:?}: {} partitions", request.kind, plan.partitions());
    }
}
