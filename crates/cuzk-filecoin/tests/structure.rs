//! Real-structure inputs (issue 13, item 1): requests of production
//! sectors' exact structure with random values.
//!
//! - Their circuits are storage-proofs' own with the production constraint
//!   counts (REFERENCE.md's workload table), counted by a constraint system
//!   that stores nothing: in CI for the test sizes and 32 GiB WinningPoSt;
//!   a 32 GiB PoRep partition, a full 32 GiB WindowPoSt partition, a 64 GiB
//!   PoRep partition and a 32 GiB SnapDeals partition with `--ignored`.
//! - Their structure is the real one: challenges as the verifiers derive
//!   them, the graph's DRG and expander parents behind every column
//!   opening, paths of the trees' depths and arities, labels that verify.
//! - The engine refuses them unless `[benchmark] allow_unverifiable` is set;
//!   then they are proved and their verification (only theirs) skipped,
//!   while malformed inputs are still refused and requests whose vanilla
//!   proofs hold are still verified.

use cuzk_core::{finish, prove_start, PlanError, PlanSource, ProofPlan, ProofRequest, Randomness, Scalar};
use cuzk_filecoin::fixtures;
use cuzk_filecoin::structure::{
    self, count_constraints, with_partition_circuit, CircuitWork, ConstraintCounts, PartitionUnits,
    StructureInput, StructureSpec,
};
use cuzk_filecoin::{FilecoinPlans, PlanOptions};
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::{
    parameters::setup_params, DefaultPieceHasher, FallbackPoStSectorProof, MerkleTreeTrait, SectorShape2KiB,
    SectorShape32GiB, TreeRHasher,
};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use std::sync::Arc;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};
use storage_proofs_update::PartitionProof;

const ALLOW: PlanOptions = PlanOptions::UNVERIFIABLE_ALLOWED;

mod common;
use common::{fixture as sealed, param_dir};

fn generate(name: &str) -> StructureInput {
    param_dir();
    structure::generate(&name.parse::<StructureSpec>().unwrap()).unwrap()
}

fn request(name: &str) -> ProofRequest {
    generate(name).proof_request().unwrap()
}

// ---------------------------------------------------------------- counts

struct Count;

impl CircuitWork for Count {
    type Out = ConstraintCounts;
    fn run<C: bellperson::Circuit<Scalar> + Send>(
        self,
        circuit: &dyn Fn() -> Result<C, PlanError>,
        _: Option<PartitionUnits<'_, C>>,
        _: &cuzk_filecoin::structure::NativeWriter<'_>,
    ) -> Result<ConstraintCounts, PlanError> {
        count_constraints(circuit()?)
    }
}

/// The counts of partition `partition` of real-structure input `name`.
fn counts(name: &str, partition: usize) -> ConstraintCounts {
    let started = std::time::Instant::now();
    let counts = with_partition_circuit(&request(name), ALLOW, partition, Count).unwrap();
    eprintln!(
        "{name} partition {partition}: {counts:?} ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    counts
}

/// The circuit's own constraints (storage-proofs 19.1, REFERENCE.md's
/// figures) and its public inputs with the constant one.
#[track_caller]
fn pinned(name: &str, partition: usize, constraints: usize, inputs: usize) {
    let counts = counts(name, partition);
    assert_eq!(
        (counts.constraints, counts.inputs),
        (constraints, inputs),
        "{name}: constraints and inputs changed"
    );
}

#[test]
fn test_sizes_have_the_production_constraint_counts() {
    pinned("porep-2k", 0, 2_687_921, 40);
    pinned("winning-post-2k", 0, 90_750, 133);
    pinned("window-post-2k", 0, 21_866, 23);
    pinned("snap-2k", 0, SNAP_2KIB, SNAP_2KIB_INPUTS);
    pinned("porep-8m", 0, 3_844_929, 40);
    pinned("porep-512m", 0, 4_423_433, 40);
}

/// The counting constraint system agrees with cuzk's recording of the same
/// circuit (which `tests/circuits.rs` pins against bellperson's prover).
#[test]
fn counts_agree_with_the_compiled_r1cs() {
    struct Record;
    impl CircuitWork for Record {
        type Out = (ConstraintCounts, cuzk_core::CompiledR1cs);
        fn run<C: bellperson::Circuit<Scalar> + Send>(
            self,
            circuit: &dyn Fn() -> Result<C, PlanError>,
            _: Option<PartitionUnits<'_, C>>,
            _: &cuzk_filecoin::structure::NativeWriter<'_>,
        ) -> Result<Self::Out, PlanError> {
            let r1cs = cuzk_core::CompiledR1cs::record(circuit()?)
                .map_err(|e| PlanError::Synthesis(e.to_string()))?;
            Ok((count_constraints(circuit()?)?, r1cs))
        }
    }
    for name in ["window-post-2k", "winning-post-2k", "snap-2k"] {
        let (counts, r1cs) = with_partition_circuit(&request(name), ALLOW, 0, Record).unwrap();
        assert_eq!(counts.with_input_constraints(), r1cs.num_constraints(), "{name}");
        assert_eq!(counts.inputs, r1cs.num_inputs(), "{name}");
        assert_eq!(counts.aux, r1cs.num_aux(), "{name}");
    }
}

#[test]
fn winning_post_32gib_constraint_count_is_pinned() {
    pinned("winning-post-32g", 0, 370_590, 133);
}

#[test]
#[ignore = "a 130 M-constraint circuit: minutes (cargo test --release -p cuzk-filecoin --test structure -- --ignored)"]
fn porep_32gib_partition_constraint_count_is_pinned() {
    pinned("porep-32g", 0, 130_278_541, 328);
}

#[test]
#[ignore = "a 125 M-constraint circuit: minutes"]
fn window_post_32gib_partition_constraint_count_is_pinned() {
    pinned("window-post-32g", 0, 125_279_217, 25_840);
}

#[test]
#[ignore = "a 131 M-constraint circuit: minutes"]
fn porep_64gib_partition_constraint_count_is_pinned() {
    pinned("porep-64g", 0, 131_185_849, 328);
}

#[test]
#[ignore = "an 81 M-constraint circuit: minutes"]
fn snap_32gib_partition_constraint_count_is_pinned() {
    pinned("snap-32g", 0, SNAP_32GIB, SNAP_32GIB_INPUTS);
}

const SNAP_2KIB: usize = 1_705_039;
const SNAP_2KIB_INPUTS: usize = 5;
const SNAP_32GIB: usize = 81_049_499;
const SNAP_32GIB_INPUTS: usize = 5;

// ------------------------------------------------------------- structure

type Shape32 = SectorShape32GiB;
type ColumnTreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

fn c1(name: &str) -> SealCommitPhase1Output {
    match generate(name) {
        StructureInput::Porep(c1) => *c1,
        other => panic!("{name}: {other:?}"),
    }
}

/// The index a column proof opens (its inclusion proof is the crate's own;
/// it is read back through its serialised form).
fn column_index<Tree: MerkleTreeTrait>(column: &stacked::ColumnProof<ColumnTreeProof<Tree>>) -> (u32, usize) {
    let value = serde_json::to_value(column).unwrap();
    let proof: ColumnTreeProof<Tree> = serde_json::from_value(value["inclusion_proof"].clone()).unwrap();
    let index = value["column"]["index"].as_u64().unwrap() as u32;
    (index, proof.path_index())
}

/// PoRep at 32 GiB: every partition, the derived challenges, the graph's
/// parents behind every column, paths of the trees' shapes, labels and
/// encodings that hold.
fn check_porep<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(name: &str, partitions: usize) {
    let c1 = c1(name);
    let config = c1.registered_proof.as_v1_config();
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(&config).unwrap(),
        partitions: Some(partitions),
        priority: false,
    };
    let pub_params = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)
    .unwrap()
    .vanilla_params;
    let graph = &pub_params.graph;
    let vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> =
        c1.vanilla_proofs.clone().try_into().unwrap();
    assert_eq!(vanilla.len(), partitions);
    let pub_inputs = stacked::PublicInputs::<_, filecoin_proofs::DefaultPieceDomain> {
        replica_id: c1.replica_id,
        seed: Some(c1.seed),
        tau: None,
        k: None,
    };
    let nodes = graph.size();
    let leaves_levels = nodes.trailing_zeros() as usize;
    for (k, partition) in vanilla.iter().enumerate() {
        let challenges = pub_inputs.challenges(&pub_params.challenges, nodes, Some(k));
        assert_eq!(
            partition.len(),
            pub_params.challenges.num_challenges_per_partition()
        );
        assert_eq!(partition.len(), challenges.len());
        for (proof, &challenge) in partition.iter().zip(&challenges) {
            assert_eq!(proof.comm_d_proofs.path_index(), challenge);
            assert_eq!(proof.comm_d_proofs.path().len(), leaves_levels, "comm_d depth");
            assert_eq!(proof.comm_r_last_proof.path_index(), challenge);
            assert_eq!(
                proof.comm_r_last_proof.path().len(),
                proof.comm_r_last_proof.expected_len(nodes)
            );
            let columns = &proof.replica_column_proofs;
            assert_eq!(column_index::<Tree>(&columns.c_x), (challenge as u32, challenge));
            let mut parents = vec![0u32; graph.degree()];
            graph.parents(challenge, &mut parents).unwrap();
            let opened: Vec<u32> = columns
                .drg_parents
                .iter()
                .chain(&columns.exp_parents)
                .map(|column| {
                    let (index, path) = column_index::<Tree>(column);
                    assert_eq!(index as usize, path);
                    index
                })
                .collect();
            assert_eq!(opened, parents, "partition {k} challenge {challenge}: parents");
            // Labels: each layer's label in the challenge's column is what
            // its labeling proof computes from the parents' labels.
            assert_eq!(proof.labeling_proofs.len(), pub_params.num_layers);
            for (layer, labeling) in (1..).zip(&proof.labeling_proofs) {
                let label = columns.c_x.get_node_at_layer(layer).unwrap();
                assert!(labeling.verify(&c1.replica_id, label), "label of layer {layer}");
            }
            assert!(proof.encoding_proof.verify::<DefaultPieceHasher>(
                &c1.replica_id,
                &proof.comm_r_last_proof.leaf(),
                &proof.comm_d_proofs.leaf()
            ));
            // One root per tree.
            assert_eq!(proof.comm_c(), partition[0].comm_c());
            assert_eq!(proof.comm_r_last(), partition[0].comm_r_last());
        }
    }
    let comm_r =
        <TreeRHasher as Hasher>::Function::hash2(&vanilla[0][0].comm_c(), &vanilla[0][0].comm_r_last());
    assert_eq!(
        <[u8; 32]>::try_from(filecoin_hashers::Domain::into_bytes(&comm_r)).unwrap(),
        c1.comm_r
    );
}

#[test]
fn porep_32gib_inputs_have_the_real_structure() {
    check_porep::<Shape32>("porep-32g", 10);
}

#[test]
fn porep_2kib_inputs_have_the_real_structure() {
    check_porep::<SectorShape2KiB>("porep-2k", 1);
}

fn vanilla_file(name: &str) -> fixtures::VanillaRequestFile {
    match generate(name) {
        StructureInput::Vanilla(file) => file,
        other => panic!("{name}: {other:?}"),
    }
}

/// A PoSt request's sector proofs answer the challenges filecoin-proofs
/// derives for them, with comm_r = H(comm_c, comm_r_last).
fn check_post(name: &str, sectors: usize, challenges: usize) {
    let file = vanilla_file(name);
    let proof_type = file.post_proof().unwrap();
    let config = proof_type.as_v1_config();
    let proofs: Vec<FallbackPoStSectorProof<Shape32>> = file
        .vanilla_proof_bytes()
        .unwrap()
        .iter()
        .map(|bytes| bincode::deserialize(bytes).unwrap())
        .collect();
    assert_eq!(proofs.len(), sectors);
    let ids: Vec<_> = proofs.iter().map(|p| p.sector_id).collect();
    let randomness = fixtures::decode_hex32("randomness", &file.randomness).unwrap();
    let prover = cuzk_filecoin::request::prover_id(file.miner_id);
    let expected =
        filecoin_proofs::generate_fallback_sector_challenges::<Shape32>(&config, &randomness, &ids, prover)
            .unwrap();
    for proof in &proofs {
        let [sector] = proof.vanilla_proof.sectors.as_slice() else {
            panic!("one sector proof per vanilla proof")
        };
        assert_eq!(sector.inclusion_proofs.len(), challenges);
        let opened: Vec<u64> = sector
            .inclusion_proofs
            .iter()
            .map(|p| p.path_index() as u64)
            .collect();
        assert_eq!(opened, expected[&proof.sector_id]);
        for inclusion in &sector.inclusion_proofs {
            assert_eq!(inclusion.root(), sector.comm_r_last);
            assert_eq!(inclusion.path().len(), inclusion.expected_len(1 << 30));
        }
        assert_eq!(
            proof.comm_r,
            <TreeRHasher as Hasher>::Function::hash2(&sector.comm_c, &sector.comm_r_last)
        );
    }
}

#[test]
fn window_post_32gib_inputs_are_a_full_partition_of_real_challenges() {
    check_post("window-post-32g", 2349, 10);
}

#[test]
fn winning_post_32gib_inputs_answer_the_real_challenges() {
    check_post("winning-post-32g", 1, 66);
}

#[test]
fn snap_32gib_inputs_have_the_real_structure() {
    let file = vanilla_file("snap-32g");
    let proofs: Vec<PartitionProof<Shape32>> = file
        .vanilla_proof_bytes()
        .unwrap()
        .iter()
        .map(|bytes| bincode::deserialize(bytes).unwrap())
        .collect();
    assert_eq!(proofs.len(), 16);
    let comm_r_new = fixtures::decode_hex32("comm_r_new", &file.comm_r_new).unwrap();
    let comm_r_new = filecoin_hashers::Domain::try_from_bytes(&comm_r_new).unwrap();
    for (k, proof) in proofs.iter().enumerate() {
        assert_eq!(proof.challenge_proofs.len(), 86);
        assert_eq!(proof.apex_leafs.len(), 128);
        let challenges: Vec<u32> = storage_proofs_update::Challenges::new(1 << 30, comm_r_new, k).collect();
        for (challenge, c) in proof.challenge_proofs.iter().zip(challenges) {
            assert_eq!(challenge.proof_r_old.path_index(), c as usize);
            assert_eq!(challenge.proof_d_new.path_index(), c as usize);
            assert_eq!(challenge.proof_r_new.path_index(), c as usize);
            assert_eq!(challenge.proof_d_new.path().len(), 30);
        }
    }
    // The circuit's own assertions (shared partition paths, the encoding
    // of every new leaf) are checked when planning an unverifiable request.
    let planned = cuzk_filecoin::plan_with(&file.proof_request().unwrap(), ALLOW).unwrap();
    assert_eq!(planned.plan.partitions(), 16);
    assert!(planned.unverifiable.is_some());
}

#[test]
fn written_files_are_what_the_bench_client_reads() {
    let dir = tempfile::tempdir().unwrap();
    let porep = generate("porep-2k");
    let path = porep.write(dir.path()).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    // The envelope carries the sector number the replica id was made for.
    let request = cuzk_filecoin::request::porep_request(bytes, fixtures::MINER_ID, 0).unwrap();
    assert!(cuzk_filecoin::plan_with(&request, ALLOW)
        .unwrap()
        .unverifiable
        .is_some());
    let wpost = generate("window-post-2k");
    let path = wpost.write(dir.path()).unwrap();
    assert_eq!(path.file_name().unwrap(), fixtures::WPOST_FILE);
    let file = fixtures::load_request_file(&path).unwrap();
    let (read, made) = (file.proof_request().unwrap(), wpost.proof_request().unwrap());
    assert_eq!(
        (
            read.kind,
            read.registered_proof,
            &read.sector,
            &read.vanilla_proofs
        ),
        (
            made.kind,
            made.registered_proof,
            &made.sector,
            &made.vanilla_proofs
        )
    );
    // Deterministic in the seed.
    assert_eq!(
        request_json("window-post-2k", 7),
        request_json("window-post-2k", 7)
    );
    assert_ne!(
        request_json("window-post-2k", 7),
        request_json("window-post-2k", 8)
    );
}

fn request_json(name: &str, seed: u64) -> String {
    let spec = name.parse::<StructureSpec>().unwrap().with_seed(seed);
    match structure::generate(&spec).unwrap() {
        StructureInput::Vanilla(file) => serde_json::to_string(&file).unwrap(),
        StructureInput::Porep(c1) => serde_json::to_string(&c1).unwrap(),
    }
}

// ------------------------------------------------------- the switch

fn source(allow: bool) -> FilecoinPlans {
    FilecoinPlans::new(param_dir()).with_allow_unverifiable(allow)
}

const SMALL: [&str; 4] = ["porep-2k", "window-post-2k", "winning-post-2k", "snap-2k"];

#[test]
fn real_structure_requests_are_refused_unless_allowed() {
    for name in SMALL {
        let request = request(name);
        match source(false).plan(&request) {
            Some(Err(PlanError::InvalidArgument(m))) => {
                assert!(
                    m.contains("not") && !m.contains(cuzk_filecoin::validate::PANIC_MARK),
                    "{name}: {m}"
                )
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(cuzk_filecoin::plan_for(&request).is_err(), "{name}");
        let plan = source(true).plan(&request).expect("claimed");
        assert!(plan.is_ok(), "{name}: {plan:?}");
        let planned = cuzk_filecoin::plan_with(&request, ALLOW).unwrap();
        let reason = planned.unverifiable.expect("unverifiable");
        assert!(reason.contains("not"), "{name}: {reason}");
    }
}

/// Proves partition(s) of `plan` on the CPU with parameters of the
/// assignments' shape (no setup: no proof made with them verifies).
fn prove(
    plan: &dyn ProofPlan,
) -> (
    Arc<cuzk_core::ProvingParameters>,
    Vec<cuzk_core::Proof<cuzk_core::Bls12>>,
) {
    let assignment = plan.synthesize(0).unwrap();
    let params = Arc::new(cuzk_core::shaped::shaped_parameters(&assignment, 1));
    let mut proofs = Vec::new();
    let (proof, _) = finish(prove_start(assignment, &params, Randomness::Secure).unwrap()).unwrap();
    proofs.push(proof);
    for index in 1..plan.partitions() {
        let assignment = plan.synthesize(index).unwrap();
        let (proof, _) = finish(prove_start(assignment, &params, Randomness::Secure).unwrap()).unwrap();
        proofs.push(proof);
    }
    (params, proofs)
}

#[test]
fn allowed_real_structure_requests_are_proved_without_verification() {
    for name in ["window-post-2k", "winning-post-2k", "porep-2k"] {
        let plan = source(true).plan(&request(name)).unwrap().unwrap();
        let (params, proofs) = prove(plan.as_ref());
        // Verification would fail (these proofs cannot verify) ...
        let checked = cuzk_core::plan::verify_partitions(&params, &proofs, |i| plan.public_inputs(i));
        assert!(checked.is_err(), "{name}: a proof of no setup verified");
        // ... and is skipped for this request only.
        plan.verify(&params, &proofs).unwrap();
    }
}

#[test]
fn requests_whose_vanilla_proofs_hold_are_verified_when_allowed() {
    let (dir, manifest) = sealed();
    let winning = fixtures::load_request_file(dir.path().join(fixtures::WINNING_FILE))
        .unwrap()
        .proof_request()
        .unwrap();
    let planned = cuzk_filecoin::plan_with(&winning, ALLOW).unwrap();
    assert_eq!(planned.unverifiable, None);
    let (params, proofs) = prove(planned.plan.as_ref());
    match planned.plan.verify(&params, &proofs) {
        Err(PlanError::Verification(_)) => {}
        other => panic!("a real request's bad proof was not refused: {other:?}"),
    }
    let c1 = std::fs::read(dir.path().join(fixtures::C1_FILE)).unwrap();
    let porep = cuzk_filecoin::request::porep_request(c1, manifest.miner_id, manifest.sector_number).unwrap();
    assert_eq!(
        cuzk_filecoin::plan_with(&porep, ALLOW).unwrap().unverifiable,
        None
    );
}

#[test]
fn malformed_inputs_are_refused_when_allowed() {
    // A PoRep challenge proof without one of its DRG parents' columns.
    let mut c1 = serde_json::to_value(c1("porep-2k")).unwrap();
    let parents = &mut c1["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]["replica_column_proofs"]["drg_parents"];
    parents.as_array_mut().unwrap().pop();
    let request = cuzk_filecoin::request::porep_request(
        serde_json::to_vec(&c1).unwrap(),
        fixtures::MINER_ID,
        fixtures::SECTOR_NUMBER,
    )
    .unwrap();
    let e = cuzk_filecoin::plan_with(&request, ALLOW).unwrap_err();
    assert!(
        matches!(&e, PlanError::InvalidArgument(m) if m.contains("DRG and")),
        "{e:?}"
    );

    // A WindowPoSt sector proof with a challenge missing.
    let mut file = vanilla_file("window-post-2k");
    let mut proof: FallbackPoStSectorProof<SectorShape2KiB> =
        bincode::deserialize(&file.vanilla_proof_bytes().unwrap()[0]).unwrap();
    proof.vanilla_proof.sectors[0].inclusion_proofs.pop();
    file.vanilla_proofs[0] = base64_of(&bincode::serialize(&proof).unwrap());
    let e = cuzk_filecoin::plan_with(&file.proof_request().unwrap(), ALLOW).unwrap_err();
    assert!(
        matches!(&e, PlanError::InvalidArgument(m) if m.contains("inclusion proofs")),
        "{e:?}"
    );

    // A SnapDeals new replica leaf that is not the encoding of its old leaf
    // and data: the circuit would panic on it.
    let mut file = vanilla_file("snap-2k");
    let mut proof: PartitionProof<SectorShape2KiB> =
        bincode::deserialize(&file.vanilla_proof_bytes().unwrap()[0]).unwrap();
    let c = &mut proof.challenge_proofs[3];
    c.proof_r_new = MerkleProof::from_parts(c.proof_r_old.leaf(), c.proof_r_new.root(), c.proof_r_new.path());
    file.vanilla_proofs[0] = base64_of(&bincode::serialize(&proof).unwrap());
    let e = cuzk_filecoin::plan_with(&file.proof_request().unwrap(), ALLOW).unwrap_err();
    assert!(
        matches!(&e, PlanError::InvalidArgument(m) if m.contains("encoding")),
        "{e:?}"
    );
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
