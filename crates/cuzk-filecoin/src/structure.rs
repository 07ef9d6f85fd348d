//! Real-structure inputs: proof requests with the exact structure of
//! production sectors, made in memory in seconds without sealing anything,
//! so that the real storage-proofs circuits can be built, counted,
//! synthesised and proved at full size (issue 13).
//!
//! What is real (taken from storage-proofs' own setup and derivations, so
//! it follows the crates if they change):
//!
//! - PoRep C2 ([`porep_c1`]): every partition, the number of challenges per
//!   partition of the `PoRepConfig`, each challenge derived from the replica
//!   id and seed as the vanilla verifier derives it, the replica id derived
//!   from the prover, sector, ticket and comm_d, the comm_d path of the
//!   binary tree's depth, comm_r_last and tree_c paths of the sector's
//!   arities (8-8-0 for 32 GiB, 8-8-2 for 64 GiB) whose indices are the
//!   challenge's, the DRG and expander parents of each challenge from the
//!   `StackedBucketGraph` (so every parent column opens the parent's index),
//!   columns of one row per layer, one node's column the same wherever it
//!   appears, labels computed from the parents' labels as SDR labels them
//!   (the labeling proofs verify), and the encoding (replica = key + data).
//! - WindowPoSt / WinningPoSt ([`post_request`]): the sector proofs of a
//!   full partition (2349 sectors of 32 GiB for WindowPoSt), the leaf
//!   challenges filecoin-proofs derives from the randomness and sector ids,
//!   paths of the sector's tree shape, comm_r = H(comm_c, comm_r_last).
//! - SnapDeals ([`snap_request`]): all partitions, the challenges derived
//!   from comm_r_new, paths of TreeR and TreeD shape with the partition path
//!   shared by the partition's challenges, the apex leaves and the apex
//!   levels of every TreeD path taken from their apex tree, and each new
//!   replica leaf the encoding of its old leaf and data (the circuit checks
//!   it while synthesising).
//!
//! What is random (a seeded ChaCha20 rng): data, Merkle siblings and roots,
//! parent labels, commitments. So the Merkle paths do not open their roots
//! and the requests' vanilla proofs do not verify: the engine refuses them
//! unless its benchmark switch allows unverifiable requests
//! ([`crate::plans::PlanOptions`]), and then proves them without verifying
//! the proof. Their circuits are storage-proofs' own, with the constraint
//! counts of production sectors (pinned in `tests/structure.rs`).
//!
//! The requests are in the formats the daemon takes, written by
//! [`StructureInput::write`]: a PoRep is a C1 output
//! (`SealCommitPhase1Output` JSON, wrapped in the `{SectorNum, Phase1Out,
//! SectorSize}` envelope so the sector number travels with it); PoSt and
//! SnapDeals are [`VanillaRequestFile`]s with bincode vanilla proofs, as
//! [`crate::fixtures`] writes them. Every request is for sector
//! [`fixtures::SECTOR_NUMBER`] of miner [`fixtures::MINER_ID`] (PoSt:
//! sectors 1 to N).

use crate::fixtures::{
    self, post_proof_abi, post_randomness, update_proof_abi, RequestKind, SizeProofs, VanillaRequestFile,
};
use crate::plans::{FilecoinPlan, FilecoinProof, PlanOptions, Planned, PorepPlan, PostPlan, SnapPlan};
use crate::registry::sector_size_name;
use crate::request::prover_id;
use crate::{PlanError, ShapeDispatch};
use base64::Engine as _;
use blstrs::Scalar as Fr;
use cuzk_core::ProofRequest;
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::{
    parameters::setup_params, DefaultPieceDomain, DefaultPieceHasher, FallbackPoStSectorProof,
    MerkleTreeTrait, PoStType, SectorUpdateConfig, TreeRHasher,
};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};
use std::any::Any;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{base_path_length, MerkleProof, MerkleProofTrait};
use storage_proofs_core::sector::SectorId;
use storage_proofs_porep::stacked::{
    self, Column, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof, StackedCompound, StackedDrg,
    TOTAL_PARENTS,
};
use storage_proofs_post::fallback::{self, SectorProof};
use storage_proofs_update::{constants::TreeDHasher, ChallengeProof, Challenges, PartitionProof};
use typenum::Unsigned;

type Result<T, E = PlanError> = std::result::Result<T, E>;

/// Maps an error of the Filecoin crates (where none should be) to
/// `Internal`, naming the step.
fn step<T, E: fmt::Display>(what: &str, result: Result<T, E>) -> Result<T> {
    result.map_err(|e| PlanError::Internal(format!("{what}: {e:#}")))
}

/// The proof types real-structure inputs are made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StructureKind {
    /// PoRep C2 (a C1 output: all partitions).
    Porep,
    /// One WindowPoSt partition.
    WindowPost,
    /// WinningPoSt.
    WinningPost,
    /// SnapDeals (all partitions).
    Snap,
}

impl StructureKind {
    /// The name used in [`StructureSpec`]'s text form.
    pub fn name(self) -> &'static str {
        match self {
            StructureKind::Porep => "porep",
            StructureKind::WindowPost => "window-post",
            StructureKind::WinningPost => "winning-post",
            StructureKind::Snap => "snap",
        }
    }
}

/// What to make: a proof type, a sector size and a seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StructureSpec {
    /// The proof type.
    pub kind: StructureKind,
    /// Sector size in bytes (2 KiB, 8 MiB, 512 MiB, 32 GiB or 64 GiB).
    pub sector_size: u64,
    /// Seed of the ChaCha20 rng every random value is drawn from.
    pub seed: u64,
    /// WindowPoSt: sectors in the partition (`None`: a full partition, as
    /// many as the proof type's partition holds).
    pub sectors: Option<usize>,
}

/// The short sector size names of [`StructureSpec`]'s text form.
const SIZE_NAMES: [(&str, u64); 5] = [
    ("2k", 2 << 10),
    ("8m", 8 << 20),
    ("512m", 512 << 20),
    ("32g", 32 << 30),
    ("64g", 64 << 30),
];

impl StructureSpec {
    /// The seed of a spec that names none.
    pub const DEFAULT_SEED: u64 = 1;

    /// `kind` for `sector_size`, seed [`Self::DEFAULT_SEED`], a full partition.
    pub fn new(kind: StructureKind, sector_size: u64) -> Self {
        Self {
            kind,
            sector_size,
            seed: Self::DEFAULT_SEED,
            sectors: None,
        }
    }

    /// The same with `seed`.
    pub fn with_seed(self, seed: u64) -> Self {
        Self { seed, ..self }
    }
}

impl FromStr for StructureSpec {
    type Err = PlanError;

    /// `<kind>-<size>`: kind `porep`, `window-post` (or `wpost`),
    /// `winning-post` (or `winning`), `snap`; size `2k`, `8m`, `512m`, `32g`,
    /// `64g` (e.g. `porep-32g`, `window-post-32g`).
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            PlanError::InvalidArgument(format!(
                "{s:?} is not <kind>-<size> (kind porep, window-post, winning-post or snap; \
                 size 2k, 8m, 512m, 32g or 64g; e.g. porep-32g)"
            ))
        };
        let (kind, size) = s.rsplit_once('-').ok_or_else(bad)?;
        let kind = match kind {
            "porep" => StructureKind::Porep,
            "window-post" | "wpost" => StructureKind::WindowPost,
            "winning-post" | "winning" => StructureKind::WinningPost,
            "snap" => StructureKind::Snap,
            _ => return Err(bad()),
        };
        let (_, sector_size) = SIZE_NAMES
            .iter()
            .find(|(name, _)| *name == size)
            .ok_or_else(bad)?;
        Ok(Self::new(kind, *sector_size))
    }
}

impl fmt::Display for StructureSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match SIZE_NAMES.iter().find(|(_, size)| *size == self.sector_size) {
            Some((name, _)) => write!(f, "{}-{name}", self.kind.name()),
            None => write!(f, "{}-{}", self.kind.name(), self.sector_size),
        }
    }
}

/// A real-structure request, in the form the daemon takes.
#[derive(Clone, Debug)]
pub enum StructureInput {
    /// A PoRep C1 output (of sector [`fixtures::SECTOR_NUMBER`] of miner
    /// [`fixtures::MINER_ID`]).
    Porep(Box<SealCommitPhase1Output>),
    /// A PoSt or SnapDeals request file.
    Vanilla(VanillaRequestFile),
}

/// The file [`StructureInput::write`] writes a PoRep's C1 output to.
pub const C1_ENVELOPE_FILE: &str = fixtures::C1_ENVELOPE_FILE;

impl StructureInput {
    /// The C1 output as JSON (filecoin-ffi's `Commit1Out`).
    fn c1_json(c1: &SealCommitPhase1Output) -> Result<Vec<u8>> {
        step("serialising the C1 output", serde_json::to_vec(c1))
    }

    /// The proof request, as the daemon's wire conversion would make it.
    pub fn proof_request(&self) -> Result<ProofRequest> {
        match self {
            StructureInput::Porep(c1) => {
                crate::request::porep_request(Self::c1_json(c1)?, fixtures::MINER_ID, fixtures::SECTOR_NUMBER)
            }
            StructureInput::Vanilla(file) => file.proof_request(),
        }
    }

    /// The name of the file [`write`](Self::write) writes: `c1-envelope.json`
    /// (PoRep), `wpost.json`, `winning.json` or `snap.json`.
    pub fn file_name(&self) -> &'static str {
        match self {
            StructureInput::Porep(_) => C1_ENVELOPE_FILE,
            StructureInput::Vanilla(file) => match file.proof_kind {
                RequestKind::Winning => fixtures::WINNING_FILE,
                RequestKind::Wpost => fixtures::WPOST_FILE,
                RequestKind::Snap => fixtures::SNAP_FILE,
            },
        }
    }

    /// Writes the request into `dir` (created if missing) as the file the
    /// bench client submits (`cuzk-bench batch --type porep --c1 <file>`, or
    /// `--type wpost|winning|snap --vanilla <file>`); returns its path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf> {
        let io = |what: &Path| {
            let what = what.display().to_string();
            move |e: std::io::Error| PlanError::Internal(format!("writing {what}: {e}"))
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(self.file_name());
        let bytes = match self {
            StructureInput::Porep(c1) => {
                let envelope = fixtures::C1Envelope {
                    sector_num: fixtures::SECTOR_NUMBER,
                    phase1_out: base64::engine::general_purpose::STANDARD.encode(Self::c1_json(c1)?),
                    sector_size: u64::from(c1.registered_proof.sector_size()),
                };
                step("serialising the C1 envelope", serde_json::to_vec(&envelope))?
            }
            StructureInput::Vanilla(file) => {
                step("serialising the request file", serde_json::to_vec_pretty(file))?
            }
        };
        std::fs::write(&path, bytes).map_err(io(&path))?;
        Ok(path)
    }
}

/// Makes the request `spec` describes (deterministic in `spec`).
pub fn generate(spec: &StructureSpec) -> Result<StructureInput> {
    let proofs = SizeProofs::for_sector_size(spec.sector_size)?;
    let mut rng = ChaCha20Rng::seed_from_u64(spec.seed);
    match spec.kind {
        StructureKind::Porep => Ok(StructureInput::Porep(Box::new(porep_c1(proofs.seal, &mut rng)?))),
        StructureKind::WindowPost => {
            post_request(proofs.window, spec.sectors, &mut rng).map(StructureInput::Vanilla)
        }
        StructureKind::WinningPost => {
            post_request(proofs.winning, None, &mut rng).map(StructureInput::Vanilla)
        }
        StructureKind::Snap => snap_request(proofs.update, &mut rng).map(StructureInput::Vanilla),
    }
}

// ------------------------------------------------------------------ paths

/// The arity of every level of a path of proof type `P` opening a tree of
/// `leaves` leaves, bottom first: the base arity up to the base trees'
/// roots, then the sub-tree and the top-tree level where the shape has them
/// (the levels storage-proofs' `expected_len` counts).
fn level_arities<P: MerkleProofTrait>(leaves: usize) -> Vec<usize> {
    let (base, sub, top) = (
        P::Arity::to_usize(),
        P::SubTreeArity::to_usize(),
        P::TopTreeArity::to_usize(),
    );
    let mut arities = vec![base; base_path_length::<P::Arity, P::SubTreeArity, P::TopTreeArity>(leaves)];
    arities.extend([sub, top].into_iter().filter(|&a| a > 0));
    arities
}

/// The digits of `index` in the mixed radix of `arities` (lowest level
/// first): the position of the path's node among its siblings at each level,
/// as `MerkleProofTrait::path_index` reads them back.
fn digits(index: usize, arities: &[usize]) -> Vec<usize> {
    let mut rest = index;
    arities
        .iter()
        .map(|&arity| {
            let digit = rest % arity;
            rest /= arity;
            digit
        })
        .collect()
}

/// A path opening `index` through levels of `arities`, with random
/// siblings.
fn random_path<D: Domain>(rng: &mut impl RngCore, index: usize, arities: &[usize]) -> Vec<(Vec<D>, usize)> {
    arities
        .iter()
        .zip(digits(index, arities))
        .map(|(&arity, digit)| ((1..arity).map(|_| D::random(rng)).collect(), digit))
        .collect()
}

/// An opening of `index` in a tree of base arity `A`, sub-tree arity `B` and
/// top-tree arity `C` over `leaves` leaves, with the given leaf and root and
/// random siblings.
fn opening<H: Hasher, A, B, C>(
    rng: &mut impl RngCore,
    leaves: usize,
    index: usize,
    leaf: H::Domain,
    root: H::Domain,
) -> MerkleProof<H, A, B, C>
where
    A: 'static + filecoin_hashers::PoseidonArity,
    B: 'static + filecoin_hashers::PoseidonArity,
    C: 'static + filecoin_hashers::PoseidonArity,
{
    let arities = level_arities::<MerkleProof<H, A, B, C>>(leaves);
    MerkleProof::from_parts(leaf, root, random_path(rng, index, &arities))
}

fn nonzero(mut bytes: [u8; 32]) -> [u8; 32] {
    if bytes == [0; 32] {
        bytes[0] = 1;
    }
    bytes
}

fn domain_bytes<D: Domain>(d: &D) -> Result<[u8; 32]> {
    d.into_bytes()
        .try_into()
        .map_err(|_| PlanError::Internal("a domain value is not 32 bytes".into()))
}

// ------------------------------------------------------------------ PoRep

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;
type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type SealProof<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;

/// SDR's label of `node` in `layer` from its parents' labels (already
/// repeated to [`TOTAL_PARENTS`]): SHA-256 of the replica id, the layer
/// (big-endian u32) and node (big-endian u64) zero-padded to 64 bytes, then
/// the parents, truncated to a field element (the top two bits cleared).
/// The same function as storage-proofs' `LabelingProof` checks (a test
/// holds them equal).
fn sdr_label<D: Domain>(replica_id: &D, layer: u32, node: u64, parents: &[D]) -> Result<D> {
    let mut head = [0u8; 64];
    head[..32].copy_from_slice(replica_id.as_ref());
    head[32..36].copy_from_slice(&layer.to_be_bytes());
    head[36..44].copy_from_slice(&node.to_be_bytes());
    let mut hasher = Sha256::new();
    hasher.update(head);
    for parent in parents {
        hasher.update(parent.as_ref());
    }
    let mut repr: [u8; 32] = hasher.finalize().into();
    repr[31] &= 0b0011_1111;
    step("an SDR label", D::try_from_bytes(&repr))
}

/// The parent labels a labeling proof of `layer` hashes: the DRG parents'
/// labels of this layer, from layer 2 on followed by the expander parents'
/// of the previous layer, repeated cyclically to [`TOTAL_PARENTS`] (as
/// storage-proofs' prover and circuit take them).
fn layer_parents<D: Domain>(
    columns: &HashMap<u32, Vec<D>>,
    parents: &[u32],
    drg: usize,
    layer: usize,
) -> Result<Vec<D>> {
    let label = |node: u32, layer: usize| {
        columns
            .get(&node)
            .and_then(|rows| rows.get(layer - 1))
            .copied()
            .ok_or_else(|| PlanError::Internal(format!("no label of node {node} in layer {layer} yet")))
    };
    let mut own: Vec<D> = parents[..drg]
        .iter()
        .map(|&p| label(p, layer))
        .collect::<Result<_>>()?;
    if layer > 1 {
        for &p in &parents[drg..] {
            own.push(label(p, layer - 1)?);
        }
    }
    Ok(own.iter().copied().cycle().take(TOTAL_PARENTS).collect())
}

/// The C1 output of a sector of `registered`'s size with the structure of a
/// sealed one (see the module docs).
pub fn porep_c1(registered: RegisteredSealProof, rng: &mut ChaCha20Rng) -> Result<SealCommitPhase1Output> {
    crate::dispatch_shape(u64::from(registered.sector_size()), PorepWork { registered, rng })
}

struct PorepWork<'a> {
    registered: RegisteredSealProof,
    rng: &'a mut ChaCha20Rng,
}

impl ShapeDispatch for PorepWork<'_> {
    type Out = SealCommitPhase1Output;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<Self::Out> {
        porep_for::<Tree>(self.registered, self.rng)
    }
}

fn porep_for<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: RegisteredSealProof,
    rng: &mut ChaCha20Rng,
) -> Result<SealCommitPhase1Output> {
    let config = registered.as_v1_config();
    let partitions = usize::from(config.partitions);
    let setup = compound_proof::SetupParams {
        vanilla_params: step("setup_params", setup_params(&config))?,
        partitions: Some(partitions),
        priority: false,
    };
    let pub_params = step(
        "StackedDrg setup",
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::setup(&setup),
    )?
    .vanilla_params;
    let graph = &pub_params.graph;
    let nodes = graph.size();
    let layers = pub_params.num_layers;
    let drg = graph.base_graph().degree();

    // The commitments, and the replica id filecoin-proofs derives from them.
    let ticket = nonzero(rng.gen());
    let seed = nonzero(rng.gen());
    let comm_d = DefaultPieceDomain::random(rng);
    let comm_d_bytes = domain_bytes(&comm_d)?;
    let prover = prover_id(fixtures::MINER_ID);
    let replica_id = stacked::generate_replica_id::<Tree::Hasher, _>(
        &prover,
        fixtures::SECTOR_NUMBER,
        &ticket,
        comm_d_bytes,
        &config.porep_id,
    );
    let comm_c = TreeDomain::<Tree>::random(rng);
    let comm_r_last = TreeDomain::<Tree>::random(rng);
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    let pub_inputs = stacked::PublicInputs::<TreeDomain<Tree>, DefaultPieceDomain> {
        replica_id,
        seed: Some(seed),
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
    };

    // Every partition's challenges, as the verifier derives them, and
    // their parents in the graph.
    let challenges: Vec<Vec<usize>> = (0..partitions)
        .map(|k| pub_inputs.challenges(&pub_params.challenges, nodes, Some(k)))
        .collect();
    let challenged: BTreeSet<u32> = challenges.iter().flatten().map(|&c| c as u32).collect();
    let mut parents: HashMap<u32, Vec<u32>> = HashMap::new();
    for &c in &challenged {
        let mut p = vec![0u32; graph.degree()];
        step("graph parents", graph.parents(c as usize, &mut p))?;
        parents.insert(c, p);
    }

    // Columns: random labels for the parents that are not challenged, then
    // the challenged nodes' labels computed layer by layer in node order
    // (DRG parents precede their node; expander parents are of the layer
    // before), so a challenged parent's labels are its own computed ones.
    let mut columns: HashMap<u32, Vec<TreeDomain<Tree>>> = HashMap::new();
    for p in parents.values().flatten() {
        if !challenged.contains(p) && !columns.contains_key(p) {
            columns.insert(*p, (0..layers).map(|_| TreeDomain::<Tree>::random(rng)).collect());
        }
    }
    for &c in &challenged {
        if let Some(&p) = parents[&c][..drg].iter().find(|&&p| p >= c) {
            return Err(PlanError::Internal(format!(
                "DRG parent {p} of node {c} does not precede it"
            )));
        }
        columns.insert(c, Vec::with_capacity(layers));
    }
    let mut last_parents: HashMap<u32, Vec<TreeDomain<Tree>>> = HashMap::new();
    for layer in 1..=layers {
        for &c in &challenged {
            let repeated = layer_parents(&columns, &parents[&c], drg, layer)?;
            let label = sdr_label(&replica_id, layer as u32, u64::from(c), &repeated)?;
            if let Some(rows) = columns.get_mut(&c) {
                rows.push(label);
            }
            if layer == layers {
                last_parents.insert(c, repeated);
            }
        }
    }

    // The openings. A node's column proof is made once and reused wherever
    // the node appears (as a challenge or a parent).
    let mut column_proofs: HashMap<u32, ColumnProof<TreeProof<Tree>>> = HashMap::new();
    let mut column_proof = |node: u32, rng: &mut ChaCha20Rng| -> Result<ColumnProof<TreeProof<Tree>>> {
        if let Some(proof) = column_proofs.get(&node) {
            return Ok(proof.clone());
        }
        let rows = columns
            .get(&node)
            .cloned()
            .ok_or_else(|| PlanError::Internal(format!("no column of node {node}")))?;
        let hash: TreeDomain<Tree> = step("column", Column::<Tree::Hasher>::new(node, rows.clone()))?
            .hash()
            .into();
        let path = opening(rng, nodes, node as usize, hash, comm_c);
        let proof = ColumnProof::new(node, rows, path);
        column_proofs.insert(node, proof.clone());
        Ok(proof)
    };
    let mut vanilla: Vec<Vec<SealProof<Tree>>> = Vec::with_capacity(partitions);
    for partition in &challenges {
        let mut proofs = Vec::with_capacity(partition.len());
        for &challenge in partition {
            let c = challenge as u32;
            let data = DefaultPieceDomain::random(rng);
            let key = *columns[&c]
                .last()
                .ok_or_else(|| PlanError::Internal("a column without rows".into()))?;
            let replica: TreeDomain<Tree> = {
                let (key, data): (Fr, Fr) = (key.into(), data.into());
                (key + data).into()
            };
            let c_x = column_proof(c, rng)?;
            let node_parents = &parents[&c];
            let drg_parents = node_parents[..drg]
                .iter()
                .map(|&p| column_proof(p, rng))
                .collect::<Result<Vec<_>>>()?;
            let exp_parents = node_parents[drg..]
                .iter()
                .map(|&p| column_proof(p, rng))
                .collect::<Result<Vec<_>>>()?;
            let labeling_proofs = (1..=layers)
                .map(|layer| {
                    layer_parents(&columns, node_parents, drg, layer)
                        .map(|repeated| LabelingProof::new(layer as u32, u64::from(c), repeated))
                })
                .collect::<Result<Vec<_>>>()?;
            let encoding_proof = EncodingProof::new(layers as u32, u64::from(c), last_parents[&c].clone());
            proofs.push(SealProof::<Tree> {
                comm_d_proofs: opening(rng, nodes, challenge, data, comm_d),
                comm_r_last_proof: opening(rng, nodes, challenge, replica, comm_r_last),
                replica_column_proofs: ReplicaColumnProof {
                    c_x,
                    drg_parents,
                    exp_parents,
                },
                labeling_proofs,
                encoding_proof,
            });
        }
        vanilla.push(proofs);
    }

    Ok(SealCommitPhase1Output {
        registered_proof: registered,
        vanilla_proofs: wrap_seal_proofs::<Tree>(u64::from(config.sector_size), vanilla)?,
        comm_r: domain_bytes(&comm_r)?,
        comm_d: comm_d_bytes,
        replica_id,
        seed,
        ticket,
    })
}

/// The C1 output's enum variant of `sector_size` holding `proofs` (the
/// tree type is the variant's: every sector size of one shape has the same
/// type, so the variant is picked by size, then the type checked).
fn wrap_seal_proofs<Tree: 'static + MerkleTreeTrait>(
    sector_size: u64,
    proofs: Vec<Vec<SealProof<Tree>>>,
) -> Result<VanillaSealProof> {
    fn take<T: 'static>(proofs: Box<dyn Any>) -> Result<T> {
        proofs
            .downcast::<T>()
            .map(|p| *p)
            .map_err(|_| PlanError::Internal("vanilla proofs of another tree shape".into()))
    }
    let proofs: Box<dyn Any> = Box::new(proofs);
    use filecoin_proofs::{
        SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_512_MIB, SECTOR_SIZE_64_GIB, SECTOR_SIZE_8_MIB,
    };
    Ok(match sector_size {
        SECTOR_SIZE_2_KIB => VanillaSealProof::StackedDrg2KiBV1(take(proofs)?),
        SECTOR_SIZE_8_MIB => VanillaSealProof::StackedDrg8MiBV1(take(proofs)?),
        SECTOR_SIZE_512_MIB => VanillaSealProof::StackedDrg512MiBV1(take(proofs)?),
        SECTOR_SIZE_32_GIB => VanillaSealProof::StackedDrg32GiBV1(take(proofs)?),
        SECTOR_SIZE_64_GIB => VanillaSealProof::StackedDrg64GiBV1(take(proofs)?),
        other => {
            return Err(PlanError::InvalidArgument(format!(
                "no C1 output for {} sectors",
                sector_size_name(other)
            )))
        }
    })
}

// ------------------------------------------------------------------- PoSt

/// A PoSt request of `registered` (partition 0 of a WindowPoSt of `sectors`
/// sectors, default a full partition; a WinningPoSt of its one challenged
/// sector), as a request file.
pub fn post_request(
    registered: RegisteredPoStProof,
    sectors: Option<usize>,
    rng: &mut ChaCha20Rng,
) -> Result<VanillaRequestFile> {
    crate::dispatch_shape(
        u64::from(registered.sector_size()),
        PostWork {
            registered,
            sectors,
            rng,
        },
    )
}

struct PostWork<'a> {
    registered: RegisteredPoStProof,
    sectors: Option<usize>,
    rng: &'a mut ChaCha20Rng,
}

impl ShapeDispatch for PostWork<'_> {
    type Out = VanillaRequestFile;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<Self::Out> {
        post_for::<Tree>(self.registered, self.sectors, self.rng)
    }
}

fn post_for<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: RegisteredPoStProof,
    sectors: Option<usize>,
    rng: &mut ChaCha20Rng,
) -> Result<VanillaRequestFile> {
    let config = registered.as_v1_config();
    let winning = config.typ == PoStType::Winning;
    // A WinningPoSt proves `sector_count` (one) challenged sector; a
    // WindowPoSt partition holds up to `sector_count` sectors.
    let count = match (winning, sectors) {
        (true, _) | (false, None) => config.sector_count,
        (false, Some(n)) if (1..=config.sector_count).contains(&n) => n,
        (false, Some(n)) => {
            return Err(PlanError::InvalidArgument(format!(
                "a {registered:?} partition holds 1 to {} sectors, not {n}",
                config.sector_count
            )))
        }
    };
    let randomness = post_randomness(rng);
    let prover = prover_id(fixtures::MINER_ID);
    let ids: Vec<SectorId> = (0..count as u64)
        .map(|i| SectorId::from(fixtures::SECTOR_NUMBER + i))
        .collect();
    let challenges = step(
        "generate_fallback_sector_challenges",
        filecoin_proofs::generate_fallback_sector_challenges::<Tree>(&config, &randomness, &ids, prover),
    )?;
    let leaves = (u64::from(config.sector_size) / 32) as usize;
    let mut vanilla = Vec::with_capacity(count);
    for id in &ids {
        let leaf_challenges = challenges
            .get(id)
            .ok_or_else(|| PlanError::Internal(format!("no challenges for sector {id:?}")))?;
        let comm_c = TreeDomain::<Tree>::random(rng);
        let comm_r_last = TreeDomain::<Tree>::random(rng);
        let inclusion_proofs: Vec<TreeProof<Tree>> = leaf_challenges
            .iter()
            .map(|&leaf| {
                let value = TreeDomain::<Tree>::random(rng);
                opening(rng, leaves, leaf as usize, value, comm_r_last)
            })
            .collect();
        let proof = FallbackPoStSectorProof::<Tree> {
            sector_id: *id,
            comm_r: <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last),
            vanilla_proof: fallback::Proof {
                sectors: vec![SectorProof {
                    inclusion_proofs,
                    comm_c,
                    comm_r_last,
                }],
            },
        };
        vanilla.push(step("serialising a sector proof", bincode::serialize(&proof))?);
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(VanillaRequestFile {
        proof_kind: if winning {
            RequestKind::Winning
        } else {
            RequestKind::Wpost
        },
        registered_proof: post_proof_abi(registered),
        sector_size: u64::from(config.sector_size),
        miner_id: fixtures::MINER_ID,
        sector_number: fixtures::SECTOR_NUMBER,
        randomness: hex::encode(randomness),
        partition_index: 0,
        comm_r_old: String::new(),
        comm_r_new: String::new(),
        comm_d_new: String::new(),
        vanilla_proofs: vanilla.iter().map(|p| b64.encode(p)).collect(),
    })
}

// -------------------------------------------------------------- SnapDeals

/// A SnapDeals request of `registered` (all partitions), as a request file.
pub fn snap_request(registered: RegisteredUpdateProof, rng: &mut ChaCha20Rng) -> Result<VanillaRequestFile> {
    crate::dispatch_shape(u64::from(registered.sector_size()), SnapWork { registered, rng })
}

struct SnapWork<'a> {
    registered: RegisteredUpdateProof,
    rng: &'a mut ChaCha20Rng,
}

impl ShapeDispatch for SnapWork<'_> {
    type Out = VanillaRequestFile;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<Self::Out> {
        snap_for::<Tree>(self.registered, self.rng)
    }
}

type TreeDDomain = <TreeDHasher as Hasher>::Domain;

fn snap_for<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered: RegisteredUpdateProof,
    rng: &mut ChaCha20Rng,
) -> Result<VanillaRequestFile> {
    let config = registered.as_v1_config();
    let update = SectorUpdateConfig::from_porep_config(&config);
    let sector_bytes = u64::from(update.sector_size);
    let params = storage_proofs_update::PublicParams::from_sector_size(sector_bytes);
    let nodes = params.sector_nodes;
    let h = update.h;

    let comm_c = TreeDomain::<Tree>::random(rng);
    let root_r_old = TreeDomain::<Tree>::random(rng);
    let root_r_new = TreeDomain::<Tree>::random(rng);
    let comm_d_new = TreeDDomain::random(rng);
    let hash2 = <TreeRHasher as Hasher>::Function::hash2;
    let (comm_r_old, comm_r_new) = (hash2(&comm_c, &root_r_old), hash2(&comm_c, &root_r_new));
    let phi = storage_proofs_update::vanilla::phi(&comm_d_new, &comm_r_old);
    let high_shift = params.challenge_bit_len - h;
    // TreeD is binary: its path holds one sibling per level, the partition
    // path (its top `partition_bit_len` levels) is common to a partition's
    // challenges, and the `apex_leaf_bit_len` levels below it lie in the
    // partition's apex tree.
    let d_levels = params.challenge_bit_len;
    let apex_from = d_levels - params.partition_bit_len - params.apex_leaf_bit_len;

    let mut vanilla = Vec::with_capacity(params.partition_count);
    for k in 0..params.partition_count {
        let apex_leafs: Vec<TreeDDomain> = (0..params.apex_leaf_count)
            .map(|_| TreeDDomain::random(rng))
            .collect();
        let mut apex_rows = vec![apex_leafs.clone()];
        for _ in 0..params.apex_leaf_bit_len {
            let row: Vec<TreeDDomain> = apex_rows[apex_rows.len() - 1]
                .chunks(2)
                .map(|pair| <TreeDHasher as Hasher>::Function::hash2(&pair[0], &pair[1]))
                .collect();
            apex_rows.push(row);
        }
        let partition_path: Vec<TreeDDomain> = (0..params.partition_bit_len)
            .map(|_| TreeDDomain::random(rng))
            .collect();
        let mut challenge_proofs = Vec::with_capacity(params.challenge_count);
        for c in Challenges::new(nodes, comm_r_new, k) {
            let c = c as usize;
            let leaf_r_old = TreeDomain::<Tree>::random(rng);
            let leaf_d_new = TreeDDomain::random(rng);
            let rho = storage_proofs_update::vanilla::rho(&phi, (c >> high_shift) as u32);
            let leaf_r_new: TreeDomain<Tree> = {
                let (old, data): (Fr, Fr) = (leaf_r_old.into(), leaf_d_new.into());
                (old + data * rho).into()
            };
            let bits = digits(c, &vec![2; d_levels]);
            let path_d: Vec<(Vec<TreeDDomain>, usize)> = bits
                .iter()
                .enumerate()
                .map(|(level, &bit)| {
                    let sibling = if level >= d_levels - params.partition_bit_len {
                        partition_path[level - (d_levels - params.partition_bit_len)]
                    } else if level >= apex_from {
                        // The apex tree's row `level - apex_from`, at the
                        // sibling of the challenge's node there.
                        let row = &apex_rows[level - apex_from];
                        let node = (c >> level) % row.len();
                        row[node ^ 1]
                    } else {
                        TreeDDomain::random(rng)
                    };
                    (vec![sibling], bit)
                })
                .collect();
            challenge_proofs.push(ChallengeProof::<Tree> {
                proof_r_old: opening(rng, nodes, c, leaf_r_old, root_r_old),
                proof_d_new: MerkleProof::from_parts(leaf_d_new, comm_d_new, path_d),
                proof_r_new: opening(rng, nodes, c, leaf_r_new, root_r_new),
            });
        }
        let proof = PartitionProof::<Tree> {
            comm_c,
            apex_leafs,
            challenge_proofs,
        };
        vanilla.push(step("serialising a partition proof", bincode::serialize(&proof))?);
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(VanillaRequestFile {
        proof_kind: RequestKind::Snap,
        registered_proof: update_proof_abi(registered),
        sector_size: sector_bytes,
        miner_id: fixtures::MINER_ID,
        sector_number: fixtures::SECTOR_NUMBER,
        randomness: String::new(),
        partition_index: 0,
        comm_r_old: hex::encode(domain_bytes(&comm_r_old)?),
        comm_r_new: hex::encode(domain_bytes(&comm_r_new)?),
        comm_d_new: hex::encode(domain_bytes(&comm_d_new)?),
        vanilla_proofs: vanilla.iter().map(|p| b64.encode(p)).collect(),
    })
}

// ------------------------------------------------- circuits and counting

/// Work on one partition's storage-proofs circuit, whatever its type (see
/// [`with_partition_circuit`]).
pub trait CircuitWork {
    /// What the work returns.
    type Out;
    /// Runs the work; `circuit` builds the partition's circuit (a fresh
    /// instance per call, as proving consumes one); `units`, where the
    /// proof type's partitions are made of independent units, builds the
    /// circuit of one unit alone (as the plan's parallel witness does);
    /// `native` writes the partition's witness without the circuit
    /// (`FilecoinProof::native_witness`, no self-check; `None` for proof
    /// types without a writer), its wide values in a vector of the spares
    /// given when one fits.
    fn run<C: bellperson::Circuit<Fr> + Send>(
        self,
        circuit: &dyn Fn() -> Result<C>,
        units: Option<PartitionUnits<'_, C>>,
        native: &NativeWriter<'_>,
    ) -> Result<Self::Out>;
}

/// A partition's native writer, for [`CircuitWork`].
pub type NativeWriter<'a> =
    dyn Fn(Option<&std::sync::Arc<cuzk_core::SpareValues>>) -> Option<Result<cuzk_core::Witness>> + 'a;

/// A partition's independent units ([`FilecoinProof::unit_prefix`]), for
/// [`CircuitWork`]: their namespace prefix, and the circuit of unit `i`
/// alone (for `CompiledR1cs::witness_by_units`).
pub struct PartitionUnits<'a, C> {
    /// The units' namespace prefix (`challenge_`, `outer namespace/sector_`).
    pub prefix: &'static str,
    /// The partition's circuit with unit `i` alone.
    pub circuit: &'a (dyn Fn(usize) -> Result<C> + Sync),
}

impl<C> fmt::Debug for PartitionUnits<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionUnits")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// Plans `request` with `options` (as the engine would, every check
/// included) and runs `work` on partition `partition`'s circuit: the
/// storage-proofs circuit of the request's proof type and sector shape,
/// built as the plan builds it for synthesis. A panic in the Filecoin crates
/// is an `InvalidArgument`, as for planning.
pub fn with_partition_circuit<W: CircuitWork>(
    request: &ProofRequest,
    options: PlanOptions,
    partition: usize,
    work: W,
) -> Result<W::Out> {
    crate::validate::guard("the request", || {
        let (size, planned) = crate::plans::parse_request(request)?;
        crate::dispatch_shape(
            size,
            PartitionWork {
                planned,
                options,
                partition,
                work,
            },
        )
    })
}

struct PartitionWork<W> {
    planned: Planned,
    options: PlanOptions,
    partition: usize,
    work: W,
}

/// The work of a [`PartitionWork`], once its plan is made.
struct OnPlan<W> {
    partition: usize,
    work: W,
}

impl<W: CircuitWork> OnPlan<W> {
    fn run<P: FilecoinProof>(self, plan: FilecoinPlan<P>) -> Result<W::Out> {
        let partitions = plan.proof().partitions();
        let partition = self.partition;
        if partition >= partitions {
            return Err(PlanError::InvalidArgument(format!(
                "partition {partition} of a proof of {partitions} partitions"
            )));
        }
        let unit_circuit = |unit: usize| plan.proof().unit_circuit(partition, unit);
        let units = plan.proof().unit_prefix().map(|prefix| PartitionUnits {
            prefix,
            circuit: &unit_circuit,
        });
        self.work.run(&|| plan.circuit(partition), units, &|spares| {
            plan.proof().native_witness(partition, spares)
        })
    }
}

impl<W: CircuitWork> ShapeDispatch for PartitionWork<W> {
    type Out = W::Out;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<Self::Out> {
        let PartitionWork {
            planned,
            options,
            partition,
            work,
        } = self;
        let on = OnPlan { partition, work };
        match planned {
            Planned::Porep(input) => on.run(PorepPlan::<Tree>::new(input, &options)?),
            Planned::Post(input) => on.run(PostPlan::<Tree>::new(input, &options)?),
            Planned::Snap(input) => on.run(SnapPlan::<Tree>::new(input, &options)?),
        }
    }
}

/// The sizes of a circuit's constraint system ([`count_constraints`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConstraintCounts {
    /// The circuit's own constraints (without the one per public input
    /// bellperson's prover appends).
    pub constraints: usize,
    /// Public inputs, the constant one included.
    pub inputs: usize,
    /// Private (aux) variables.
    pub aux: usize,
}

impl ConstraintCounts {
    /// Constraints as cuzk's synthesis counts them (`ProvingAssignment`'s
    /// `a.len()`, `CompiledR1cs::num_constraints`): the circuit's, plus one
    /// `input * 0 = 0` per input.
    pub fn with_input_constraints(&self) -> usize {
        self.constraints + self.inputs
    }
}

/// Runs `circuit` through a constraint system that only counts: every
/// variable's value is computed (so a witness that cannot be computed is an
/// error, as in synthesis) and dropped, no linear combination is built or
/// kept, so a full-size circuit is counted in the memory of the circuit
/// itself.
pub fn count_constraints<C: bellperson::Circuit<Fr>>(circuit: C) -> Result<ConstraintCounts> {
    let mut counter = Counter(ConstraintCounts {
        inputs: 1,
        ..ConstraintCounts::default()
    });
    circuit
        .synthesize(&mut counter)
        .map_err(|e| PlanError::Synthesis(format!("counting constraints: {e}")))?;
    Ok(counter.0)
}

/// The counting constraint system of [`count_constraints`].
struct Counter(ConstraintCounts);

impl bellperson::ConstraintSystem<Fr> for Counter {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<bellperson::Variable, bellperson::SynthesisError>
    where
        F: FnOnce() -> Result<Fr, bellperson::SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        f()?;
        self.0.aux += 1;
        Ok(bellperson::Variable::new_unchecked(bellperson::Index::Aux(
            self.0.aux - 1,
        )))
    }

    fn alloc_input<F, A, AR>(
        &mut self,
        _: A,
        f: F,
    ) -> Result<bellperson::Variable, bellperson::SynthesisError>
    where
        F: FnOnce() -> Result<Fr, bellperson::SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        f()?;
        self.0.inputs += 1;
        Ok(bellperson::Variable::new_unchecked(bellperson::Index::Input(
            self.0.inputs - 1,
        )))
    }

    cuzk_core::enforce_without_combinations!(this => this.0.constraints += 1);

    cuzk_core::flat_namespaces!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print() {
        for name in [
            "porep-32g",
            "porep-64g",
            "window-post-32g",
            "winning-post-2k",
            "snap-8m",
            "porep-512m",
        ] {
            let spec: StructureSpec = name.parse().unwrap();
            assert_eq!(spec.to_string(), name);
        }
        assert_eq!(
            "wpost-32g".parse::<StructureSpec>().unwrap(),
            StructureSpec::new(StructureKind::WindowPost, 32 << 30)
        );
        for bad in ["porep", "porep-4k", "seal-32g", "", "-32g"] {
            let e = bad.parse::<StructureSpec>().unwrap_err();
            assert!(
                matches!(&e, PlanError::InvalidArgument(m) if m.contains("<kind>-<size>")),
                "{e:?}"
            );
        }
    }

    #[test]
    fn digits_are_read_back_as_the_index() {
        let arities = [8, 8, 8, 2];
        for index in [0, 1, 7, 8, 63, 511, 1023] {
            let d = digits(index, &arities);
            let back = d
                .iter()
                .zip(arities)
                .rev()
                .fold(0, |acc, (&digit, arity)| acc * arity + digit);
            assert_eq!(back, index);
        }
    }

    #[test]
    fn labels_are_the_ones_storage_proofs_checks() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let replica_id = <TreeRHasher as Hasher>::Domain::random(&mut rng);
        let parents: Vec<_> = (0..TOTAL_PARENTS)
            .map(|_| <TreeRHasher as Hasher>::Domain::random(&mut rng))
            .collect();
        let label = sdr_label(&replica_id, 3, 1234, &parents).unwrap();
        let proof = LabelingProof::<TreeRHasher>::new(3, 1234, parents.clone());
        assert!(proof.verify(&replica_id, &label));
        let other = sdr_label(&replica_id, 4, 1234, &parents).unwrap();
        assert!(!proof.verify(&replica_id, &other));
    }
}
