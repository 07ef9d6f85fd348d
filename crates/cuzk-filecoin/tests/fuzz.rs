//! Fuzz tests (issue 12, item 9) of the Filecoin request parsers, from
//! the 2 KiB fixtures (sealed in the test) as seeds: the C1 output, raw and
//! in its envelope (`PorepInput::parse`, then `plan_for`, which checks the
//! vanilla proofs), PoSt vanilla proofs (WinningPoSt and WindowPoSt through
//! `plan_for`), SnapDeals vanilla proofs (likewise), and circuit ids
//! (`FilecoinPlans::parameters`). Every mutated input must be refused with
//! an error or accepted, never panic, and never reach a panic inside the
//! Filecoin crates either: an error carrying `validate::PANIC_MARK` (a
//! panic the plan's guard caught) is a finding, as it means a check let the
//! input through to code that panics on it.
//!
//! The mutator is cuzk-core's `tests/fuzzing` (bytes; `json.rs` for the
//! JSON-structure-aware mutations, which PoSt and SnapDeals proofs also get:
//! bincode to typed proof to JSON, mutated, and back).

#[path = "../../cuzk-core/tests/fuzzing/json.rs"]
mod fuzz_json;
#[path = "../../cuzk-core/tests/fuzzing/mod.rs"]
mod fuzzing;

use base64::Engine as _;
use cuzk_core::PlanError;
use cuzk_core::{PlanSource, ProofKind, ProofRequest};
use cuzk_filecoin::fixtures::{self, FixtureManifest};
use cuzk_filecoin::validate::PANIC_MARK;
use cuzk_filecoin::FilecoinPlans;
use filecoin_proofs::{FallbackPoStSectorProof, SectorShape2KiB};
use fuzz_json::{mutate_json, JsonSeed};
use fuzzing::{mutate_bytes, Rng, Verdict};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::{json, Value};
use std::sync::OnceLock;
use storage_proofs_update::PartitionProof;

type Tree = SectorShape2KiB;

/// The valid inputs every target starts from.
struct Seeds {
    _dir: tempfile::TempDir,
    manifest: FixtureManifest,
    c1: Vec<u8>,
    c1_json: JsonSeed,
    envelope: Vec<u8>,
    envelope_json: Value,
    winning: ProofRequest,
    wpost: ProofRequest,
    snap: ProofRequest,
    /// The JSON of each vanilla proof of `winning`, `wpost`, `snap`.
    winning_json: Vec<JsonSeed>,
    wpost_json: Vec<JsonSeed>,
    snap_json: Vec<JsonSeed>,
}

mod common;
use common::param_dir;

fn to_json<T: DeserializeOwned + Serialize>(bytes: &[u8]) -> JsonSeed {
    let proof: T = bincode::deserialize(bytes).expect("a fixture's vanilla proof");
    JsonSeed::new(serde_json::to_value(&proof).expect("a proof serialises"))
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        param_dir();
        let dir = tempfile::tempdir().unwrap();
        let manifest = fixtures::write_fixtures(2048, dir.path(), 3).unwrap();
        let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
        let request = |name: &str| {
            fixtures::load_request_file(dir.path().join(name))
                .unwrap()
                .proof_request()
                .unwrap()
        };
        let (c1, envelope) = (read(fixtures::C1_FILE), read(fixtures::C1_ENVELOPE_FILE));
        let (winning, wpost, snap) = (
            request(fixtures::WINNING_FILE),
            request(fixtures::WPOST_FILE),
            request(fixtures::SNAP_FILE),
        );
        let post_json = |r: &ProofRequest| -> Vec<JsonSeed> {
            r.vanilla_proofs
                .iter()
                .map(|p| to_json::<FallbackPoStSectorProof<Tree>>(p))
                .collect()
        };
        Seeds {
            c1_json: JsonSeed::new(serde_json::from_slice(&c1).unwrap()),
            envelope_json: serde_json::from_slice(&envelope).unwrap(),
            winning_json: post_json(&winning),
            wpost_json: post_json(&wpost),
            snap_json: snap
                .vanilla_proofs
                .iter()
                .map(|p| to_json::<PartitionProof<Tree>>(p))
                .collect(),
            c1,
            envelope,
            winning,
            wpost,
            snap,
            manifest,
            _dir: dir,
        }
    })
}

/// A plan's answer as a verdict: refused is fine, unless the refusal says
/// a panic was caught inside the Filecoin crates.
fn verdict<T>(result: Result<T, PlanError>) -> Verdict {
    if std::env::var_os("CUZK_FUZZ_VERBOSE").is_some() {
        if let Err(e) = &result {
            eprintln!("refused: {}", e.to_string().chars().take(200).collect::<String>());
        }
    }
    match result {
        Ok(_) => Verdict::Accepted,
        Err(PlanError::InvalidArgument(m)) if m.contains(PANIC_MARK) => Verdict::Finding(m),
        Err(_) => Verdict::Refused,
    }
}

fn envelope_of(c1: &[u8], sector_num: u64, sector_size: u64) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "SectorNum": sector_num,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1),
        "SectorSize": sector_size,
    }))
    .unwrap()
}

/// A PoRep request from a mutated C1: JSON-structure-aware mutations of the
/// C1 (raw or re-enveloped), byte mutations of either file, mutations of the
/// envelope's fields, and now and then of the request's own fields.
fn mutated_porep(rng: &mut Rng) -> ProofRequest {
    let s = seeds();
    let mut envelope = true;
    let mut registered_proof = s.manifest.registered_seal_proof;
    let bytes = match rng.below(32) {
        0..=15 => {
            let c1 = serde_json::to_vec(&s.c1_json.mutated(rng)).unwrap();
            envelope = rng.one_in(2);
            if envelope {
                envelope_of(&c1, 1, 2048)
            } else {
                c1
            }
        }
        31 => {
            // The 2 KiB proofs as another sector size's (another tree
            // shape: 8 MiB and 512 MiB share the 2 KiB one, 32 GiB has
            // sub-trees, 64 GiB a top tree too), with that size's proof
            // type, so they reach that shape's checks.
            const SIZES: [(&str, &str, u64); 5] = [
                ("StackedDrg2KiBV1", "StackedDrg2KiBV1_1", 5),
                ("StackedDrg8MiBV1", "StackedDrg8MiBV1_1", 6),
                ("StackedDrg512MiBV1", "StackedDrg512MiBV1_1", 7),
                ("StackedDrg32GiBV1", "StackedDrg32GiBV1_1", 8),
                ("StackedDrg64GiBV1", "StackedDrg64GiBV1_1", 9),
            ];
            let (variant, name, abi) = *rng.pick(&SIZES);
            let mut c1 = s.c1_json.value.clone();
            let mut partitions = c1["vanilla_proofs"]["StackedDrg2KiBV1"].clone();
            if let Some(list) = partitions.as_array_mut() {
                // As many partitions as the size has, often (1 for 2 KiB,
                // 2 for 8 and 512 MiB, 10 for 32 and 64 GiB).
                let any = 1 + rng.below(11);
                let count = *rng.pick(&[1, 2, 10, any]);
                let first = list[0].clone();
                list.resize(count, first);
            }
            c1["vanilla_proofs"] = json!({ variant: partitions });
            c1["registered_proof"] = json!(name);
            registered_proof = abi;
            if rng.one_in(2) {
                mutate_json(rng, &mut c1);
            }
            let c1 = serde_json::to_vec(&c1).unwrap();
            envelope = rng.one_in(2);
            if envelope {
                envelope_of(&c1, 1, 0)
            } else {
                c1
            }
        }
        16..=19 => mutate_bytes(rng, &s.c1, &[&s.envelope]),
        20..=23 => mutate_bytes(rng, &s.envelope, &[&s.c1]),
        24..=27 => {
            let mut envelope = s.envelope_json.clone();
            mutate_json(rng, &mut envelope);
            serde_json::to_vec(&envelope).unwrap()
        }
        _ => {
            // The C1 bytes mutated inside a valid envelope.
            let c1 = mutate_bytes(rng, &s.c1, &[]);
            envelope_of(
                &c1,
                rng.interesting_u64() % 3,
                if rng.one_in(4) {
                    rng.interesting_u64()
                } else {
                    2048
                },
            )
        }
    };
    let mut request = ProofRequest {
        request_id: String::new(),
        kind: ProofKind::PorepSealCommit,
        registered_proof,
        priority: None,
        vanilla_proof: bytes,
        vanilla_proofs: Vec::new(),
        sector: cuzk_core::SectorFields {
            miner_id: s.manifest.miner_id,
            // 0: the envelope's (a raw C1 has none: its sector number is
            // the request's).
            sector_number: if envelope && rng.one_in(4) {
                0
            } else {
                s.manifest.sector_number
            },
            ..Default::default()
        },
    };
    if rng.one_in(16) {
        match rng.below(4) {
            0 => request.registered_proof = rng.interesting_u64() % 24,
            1 => request.sector.miner_id = rng.interesting_u64(),
            2 => request.sector.sector_number = rng.interesting_u64(),
            _ => request.sector.sector_size = rng.interesting_u64(),
        }
    }
    request
}

/// One vanilla proof of `request` mutated: through its JSON (typed back,
/// then bincode), or as bincode bytes.
fn mutate_vanilla<T: DeserializeOwned + Serialize>(
    rng: &mut Rng,
    request: &mut ProofRequest,
    values: &[JsonSeed],
    others: &[&[u8]],
) {
    let k = rng.below(request.vanilla_proofs.len());
    if let Some(seed) = values.get(k).filter(|_| rng.below(3) != 0) {
        let value = seed.mutated(rng);
        if let Ok(proof) = serde_json::from_value::<T>(value) {
            request.vanilla_proofs[k] = bincode::serialize(&proof).unwrap();
            return;
        }
    }
    request.vanilla_proofs[k] = mutate_bytes(rng, &request.vanilla_proofs[k], others);
}

/// 32 bytes (or a wrong length) that break a commitment or randomness.
fn mutated_32(rng: &mut Rng, field: &mut Vec<u8>) {
    match rng.below(5) {
        0 => *field = vec![0xff; 32],
        1 => *field = vec![0; 32],
        2 => {
            let len = rng.below(3) * 16 + rng.below(2);
            *field = rng.bytes(len);
        }
        _ => *field = mutate_bytes(rng, field, &[]),
    }
}

/// The request-level mutations PoSt and SnapDeals share.
fn mutate_request_fields(rng: &mut Rng, request: &mut ProofRequest, other: &ProofRequest) {
    match rng.below(9) {
        0 => {
            // Another proof type (sector size 0: the registered proof's).
            request.registered_proof = rng.interesting_u64() % 16;
            if rng.below(4) != 0 {
                request.sector.sector_size = 0;
            }
        }
        1 => request.sector.sector_size = rng.interesting_u64(),
        2 => request.sector.partition_index = rng.interesting_u64() as u32,
        3 => request.sector.miner_id = rng.interesting_u64(),
        4 => {
            let k = rng.below(request.vanilla_proofs.len());
            request.vanilla_proofs.remove(k);
        }
        5 => {
            let k = rng.below(request.vanilla_proofs.len());
            let copy = request.vanilla_proofs[k].clone();
            request.vanilla_proofs.push(copy);
        }
        6 => {
            let k = rng.below(request.vanilla_proofs.len());
            request.vanilla_proofs[k] = rng.pick(&other.vanilla_proofs).clone();
        }
        7 => {
            request.kind = *rng.pick(&[
                ProofKind::WinningPost,
                ProofKind::WindowPostPartition,
                ProofKind::SnapDealsUpdate,
                ProofKind::PorepSealCommit,
            ])
        }
        _ => request.vanilla_proofs.clear(),
    }
}

fn mutated_post(rng: &mut Rng) -> ProofRequest {
    let s = seeds();
    let winning = rng.one_in(2);
    let (mut request, values, other) = if winning {
        (s.winning.clone(), &s.winning_json, &s.wpost)
    } else {
        (s.wpost.clone(), &s.wpost_json, &s.winning)
    };
    let others: Vec<&[u8]> = other.vanilla_proofs.iter().map(Vec::as_slice).collect();
    for _ in 0..1 + usize::from(rng.one_in(4)) {
        match rng.below(6) {
            0..=3 => mutate_vanilla::<FallbackPoStSectorProof<Tree>>(rng, &mut request, values, &others),
            4 => mutated_32(rng, &mut request.sector.randomness),
            _ => mutate_request_fields(rng, &mut request, other),
        }
        if request.vanilla_proofs.is_empty() {
            break;
        }
    }
    request
}

fn mutated_snap(rng: &mut Rng) -> ProofRequest {
    let s = seeds();
    let mut request = s.snap.clone();
    let others: Vec<&[u8]> = s.winning.vanilla_proofs.iter().map(Vec::as_slice).collect();
    for _ in 0..1 + usize::from(rng.one_in(4)) {
        match rng.below(7) {
            0..=3 => mutate_vanilla::<PartitionProof<Tree>>(rng, &mut request, &s.snap_json, &others),
            4 => {
                let field = match rng.below(3) {
                    0 => &mut request.sector.comm_r_old,
                    1 => &mut request.sector.comm_r_new,
                    _ => &mut request.sector.comm_d_new,
                };
                mutated_32(rng, field);
            }
            5 => {
                // The commitments in another order.
                let sector = &mut request.sector;
                std::mem::swap(&mut sector.comm_r_old, &mut sector.comm_r_new);
            }
            _ => mutate_request_fields(rng, &mut request, &s.winning),
        }
        if request.vanilla_proofs.is_empty() {
            break;
        }
    }
    request
}

#[test]
fn fuzz_porep_c1() {
    seeds();
    fuzzing::run("porep_c1", 20_000, mutated_porep, |request| {
        // (What clients call on a C1 file; one input in four, as it parses
        // the whole C1 again.)
        if request.vanilla_proof.len() % 4 == 0 {
            let _ = cuzk_filecoin::request::c1_registered_proof(&request.vanilla_proof);
        }
        // plan_for parses the request (PorepInput::parse) first.
        verdict(cuzk_filecoin::plan_for(request))
    });
}

#[test]
fn fuzz_post_vanilla_proofs() {
    seeds();
    fuzzing::run("post_vanilla", 20_000, mutated_post, |request| {
        if let Err(e) = cuzk_filecoin::request::PostInput::parse(request) {
            return verdict::<()>(Err(e));
        }
        verdict(cuzk_filecoin::plan_for(request))
    });
}

#[test]
fn fuzz_snap_vanilla_proofs() {
    seeds();
    fuzzing::run("snap_vanilla", 20_000, mutated_snap, |request| {
        if let Err(e) = cuzk_filecoin::request::SnapInput::parse(request) {
            return verdict::<()>(Err(e));
        }
        verdict(cuzk_filecoin::plan_for(request))
    });
}

fn mutated_circuit_id(rng: &mut Rng) -> String {
    const SEEDS: [&str; 5] = [
        "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820",
        "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-0170db1f394b35d995252228ee359194b13199d259380541dc529fb0099096b0",
        "v28-empty-sector-update-merkletree-poseidon_hasher-8-8-0-3b7f44a9362e3985369454947bc94022e118211e49fd672d52bec1cbfd599d18",
        "porep-32g",
        "../etc/passwd",
    ];
    let others: Vec<&[u8]> = SEEDS.iter().map(|s| s.as_bytes()).collect();
    let seed = *rng.pick(&SEEDS);
    let bytes = mutate_bytes(rng, seed.as_bytes(), &others);
    let mut id = String::from_utf8_lossy(&bytes).into_owned();
    if rng.one_in(16) {
        // Long ids (the source refuses ids over 255 bytes).
        id = id.repeat(1 + rng.below(40));
    }
    id
}

#[test]
fn fuzz_filecoin_circuit_ids() {
    let dir = tempfile::tempdir().unwrap();
    let source = FilecoinPlans::new(dir.path().to_path_buf());
    fuzzing::run("filecoin_circuit_ids", 200_000, mutated_circuit_id, |id| {
        let _ = cuzk_filecoin::params::is_official_circuit_id(id);
        match source.parameters(id) {
            Some(Ok(recipe)) => {
                if id.contains('/') || id.contains("..") || id.contains('\\') {
                    return Verdict::Finding(format!("{id:?} names a path outside the directory"));
                }
                // Stats the file only (there is none): never loaded.
                match recipe.check_available() {
                    Err(_) => Verdict::Accepted,
                    Ok(()) => Verdict::Finding(format!("{id:?}: a file that does not exist is available")),
                }
            }
            Some(Err(_)) => Verdict::Refused,
            None => Verdict::Finding(format!("{id:?} is not claimed by the catch-all source")),
        }
    });
}

/// The seeds themselves are accepted by the targets (so the mutations start
/// from inputs that reach every check).
#[test]
fn the_seeds_are_accepted() {
    let s = seeds();
    let c1 =
        cuzk_filecoin::request::porep_request(s.c1.clone(), s.manifest.miner_id, s.manifest.sector_number);
    let envelope = cuzk_filecoin::request::porep_request(s.envelope.clone(), s.manifest.miner_id, 0);
    for request in [
        c1.unwrap(),
        envelope.unwrap(),
        s.winning.clone(),
        s.wpost.clone(),
        s.snap.clone(),
    ] {
        cuzk_filecoin::plan_for(&request).unwrap_or_else(|e| panic!("{:?}: {e}", request.kind));
    }
}

/// Regression (issue 12, item 9): a bincode length prefix far beyond the
/// bytes is refused without allocating by it (bincode reads from the slice
/// and serde caps what a length may preallocate at 1 MiB).
#[test]
fn hostile_bincode_lengths_do_not_allocate() {
    let s = seeds();
    let proof = &s.winning.vanilla_proofs[0];
    // sector_id (8 bytes), comm_r (32), then the lengths of
    // vanilla_proof.sectors and of its first sector's inclusion proofs.
    let read = |at: usize| u64::from_le_bytes(proof[at..at + 8].try_into().unwrap());
    assert_eq!(
        (read(40), read(48)),
        (1, 66),
        "the layout of a WinningPoSt vanilla proof"
    );
    for at in [40, 48] {
        for length in [u64::MAX, 1 << 40, 1 << 32] {
            let mut request = s.winning.clone();
            request.vanilla_proofs[0][at..at + 8].copy_from_slice(&length.to_le_bytes());
            fuzzing::take_thread_largest();
            let refused = cuzk_filecoin::plan_for(&request).unwrap_err();
            let largest = fuzzing::take_thread_largest();
            assert!(
                matches!(&refused, PlanError::InvalidArgument(m) if m.contains("not a bincode")),
                "{refused:?}"
            );
            assert!(
                largest <= 2 << 20,
                "length {length} at {at}: an allocation of {largest} bytes"
            );
        }
    }
}
