//! Test fixtures from real Filecoin proofs: one sector sealed end to end on
//! the CPU with filecoin-proofs-api, and the inputs of the four SNARK kinds
//! derived from it, written as the files a bench client submits.
//!
//! [`write_fixtures`] writes into `out_dir`:
//!
//! * `c1.json`: the PoRep C1 output (`SealCommitPhase1Output` of
//!   filecoin-proofs-api as JSON), byte for byte what filecoin-ffi returns
//!   from `seal_commit_phase1` and lotus/curio pass on as `Commit1Out`.
//! * `c1-envelope.json`: `{"SectorNum":1,"Phase1Out":"<base64 of c1.json>","SectorSize":2048}`,
//!   the shape of lotus-bench's C1 output files.
//! * `winning.json`, `wpost.json`, `snap.json`: [`VanillaRequestFile`]s with
//!   the WinningPoSt, WindowPoSt (partition 0) and SnapDeals vanilla proofs.
//! * `fixture.json`: the [`FixtureManifest`].
//!
//! Sealing needs no Groth16 parameters, only the SDR parent cache (made on
//! first use where `FIL_PROOFS_PARENT_CACHE` points; see [`crate::settings`]).
//!
//! Errors: a malformed file or field is an `InvalidArgument` naming it; a
//! failed sealing step or file write an `Internal` error naming the step.

use crate::registry::{self, POST_PROOFS, SEAL_PROOFS, UPDATE_PROOFS};
use crate::request::prover_id;
use base64::Engine as _;
use cuzk_core::PlanError;
use cuzk_core::{ProofKind, ProofRequest, SectorFields};
use filecoin_proofs_api::seal::{self, SealCommitPhase1Output};
use filecoin_proofs_api::{
    post, update, Commitment, PaddedBytesAmount, PieceInfo, PrivateReplicaInfo, ProverId,
    RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof, SectorId, UnpaddedBytesAmount,
};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use std::fmt::Display;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type Result<T, E = PlanError> = std::result::Result<T, E>;

/// A malformed file or field.
fn invalid(message: String) -> PlanError {
    PlanError::InvalidArgument(message)
}

/// A sealing step (or file write), named by `what`, failed.
fn failed<E: Display>(what: impl Display) -> impl FnOnce(E) -> PlanError {
    move |e| PlanError::Internal(format!("{what}: {e:#}"))
}

/// An outcome of sealing that should not be.
fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<()> {
    if condition {
        Ok(())
    } else {
        Err(PlanError::Internal(message()))
    }
}

/// The miner (actor) id of every fixture.
pub const MINER_ID: u64 = 1000;
/// The sector number of every fixture.
pub const SECTOR_NUMBER: u64 = 1;

/// `c1.json`: the C1 output as filecoin-ffi serialises it.
pub const C1_FILE: &str = "c1.json";
/// `c1-envelope.json`: the C1 output base64-wrapped with its sector.
pub const C1_ENVELOPE_FILE: &str = "c1-envelope.json";
/// `winning.json`: WinningPoSt request.
pub const WINNING_FILE: &str = "winning.json";
/// `wpost.json`: WindowPoSt request (partition 0).
pub const WPOST_FILE: &str = "wpost.json";
/// `snap.json`: SnapDeals request (all partitions).
pub const SNAP_FILE: &str = "snap.json";
/// `fixture.json`: the manifest.
pub const MANIFEST_FILE: &str = "fixture.json";

/// Sector sizes with registered proofs, in the order of the Go ABI numbers
/// within each proof family.
pub const SECTOR_SIZES: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];

/// Go ABI number of a seal proof.
pub fn seal_proof_abi(proof: RegisteredSealProof) -> u64 {
    SEAL_PROOFS
        .iter()
        .position(|&p| p == proof)
        .expect("every variant is listed") as u64
}

/// Go ABI number of a PoSt proof.
pub fn post_proof_abi(proof: RegisteredPoStProof) -> u64 {
    POST_PROOFS
        .iter()
        .position(|&p| p == proof)
        .expect("every variant is listed") as u64
}

/// Go ABI number of an update proof.
pub fn update_proof_abi(proof: RegisteredUpdateProof) -> u64 {
    UPDATE_PROOFS
        .iter()
        .position(|&p| p == proof)
        .expect("every variant is listed") as u64
}

/// The seal proof of a Go ABI number.
pub fn seal_proof_from_abi(n: u64) -> Result<RegisteredSealProof> {
    registry::lookup(&SEAL_PROOFS, n, "seal")
}

/// The PoSt proof of a Go ABI number.
pub fn post_proof_from_abi(n: u64) -> Result<RegisteredPoStProof> {
    registry::lookup(&POST_PROOFS, n, "PoSt")
}

/// The update proof of a Go ABI number.
pub fn update_proof_from_abi(n: u64) -> Result<RegisteredUpdateProof> {
    registry::lookup(&UPDATE_PROOFS, n, "update")
}

/// The proofs a fixture of one sector size uses: seal V1_1, WinningPoSt V1,
/// WindowPoSt V1_2 and SnapDeals (update) V1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeProofs {
    pub seal: RegisteredSealProof,
    pub winning: RegisteredPoStProof,
    pub window: RegisteredPoStProof,
    pub update: RegisteredUpdateProof,
}

impl SizeProofs {
    /// The proofs of `sector_size` bytes (2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB).
    pub fn for_sector_size(sector_size: u64) -> Result<Self> {
        let i = SECTOR_SIZES
            .iter()
            .position(|&s| s == sector_size)
            .ok_or_else(|| {
                invalid(format!(
                    "no registered proofs for sector size {sector_size} (have {SECTOR_SIZES:?})"
                ))
            })?;
        Ok(Self {
            seal: SEAL_PROOFS[5 + i],
            winning: POST_PROOFS[i],
            window: POST_PROOFS[10 + i],
            update: UPDATE_PROOFS[i],
        })
    }
}

/// Partitions of a SnapDeals proof (1 for 2 KiB, 4 for 8 MiB, 16 from
/// 512 MiB). Not `RegisteredUpdateProof::partitions()`: that returns the
/// *PoRep* partition count of the size (1 for 8 MiB, 10 for 32 GiB).
pub fn snap_partitions(proof: RegisteredUpdateProof) -> usize {
    crate::constraints::snap_partitions(u64::from(proof.sector_size()))
}

/// PoSt randomness as filecoin-proofs takes it: 32 little-endian bytes that
/// must be a canonical BLS12-381 scalar (`as_safe_commitment` rejects others),
/// so the top two bits are cleared as lotus does (`rand[31] &= 0x3f`).
pub fn post_randomness(rng: &mut impl RngCore) -> [u8; 32] {
    let mut r = [0u8; 32];
    rng.fill_bytes(&mut r);
    r[31] &= 0x3f;
    r
}

/// Which SNARK a [`VanillaRequestFile`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestKind {
    Winning,
    Wpost,
    Snap,
}

impl RequestKind {
    /// The proof kind of the request.
    pub fn proof_kind(self) -> ProofKind {
        match self {
            RequestKind::Winning => ProofKind::WinningPost,
            RequestKind::Wpost => ProofKind::WindowPostPartition,
            RequestKind::Snap => ProofKind::SnapDealsUpdate,
        }
    }
}

/// A PoSt or SnapDeals proving request, with the gRPC `SubmitProofRequest`
/// fields (bytes as hex, vanilla proofs as standard base64).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VanillaRequestFile {
    pub proof_kind: RequestKind,
    /// Go ABI number: a `RegisteredPoStProof` (winning, wpost) or a
    /// `RegisteredUpdateProof` (snap).
    pub registered_proof: u64,
    pub sector_size: u64,
    pub miner_id: u64,
    pub sector_number: u64,
    /// 32 bytes hex (PoSt); empty for snap.
    pub randomness: String,
    pub partition_index: u32,
    /// 32 bytes hex (snap); empty for PoSt.
    pub comm_r_old: String,
    pub comm_r_new: String,
    pub comm_d_new: String,
    /// Base64 vanilla proofs: bincode `FallbackPoStSectorProof`s, one per
    /// sector (PoSt), or bincode `PartitionProof`s, one per partition (snap).
    pub vanilla_proofs: Vec<String>,
}

impl VanillaRequestFile {
    /// The randomness bytes (32, or none for snap).
    pub fn randomness_bytes(&self) -> Result<Vec<u8>> {
        decode_hex32_or_empty("randomness", &self.randomness)
    }

    /// `comm_r_old` bytes (32, or none).
    pub fn comm_r_old_bytes(&self) -> Result<Vec<u8>> {
        decode_hex32_or_empty("comm_r_old", &self.comm_r_old)
    }

    /// `comm_r_new` bytes (32, or none).
    pub fn comm_r_new_bytes(&self) -> Result<Vec<u8>> {
        decode_hex32_or_empty("comm_r_new", &self.comm_r_new)
    }

    /// `comm_d_new` bytes (32, or none).
    pub fn comm_d_new_bytes(&self) -> Result<Vec<u8>> {
        decode_hex32_or_empty("comm_d_new", &self.comm_d_new)
    }

    /// The vanilla proofs, decoded.
    pub fn vanilla_proof_bytes(&self) -> Result<Vec<Vec<u8>>> {
        self.vanilla_proofs
            .iter()
            .enumerate()
            .map(|(i, p)| decode_base64(&format!("vanilla_proofs[{i}]"), p))
            .collect()
    }

    /// The registered PoSt proof (winning, wpost only).
    pub fn post_proof(&self) -> Result<RegisteredPoStProof> {
        if self.proof_kind == RequestKind::Snap {
            return Err(invalid("a snap request has no PoSt proof type".into()));
        }
        post_proof_from_abi(self.registered_proof)
    }

    /// The registered update proof (snap only).
    pub fn update_proof(&self) -> Result<RegisteredUpdateProof> {
        if self.proof_kind != RequestKind::Snap {
            return Err(invalid(format!(
                "a {:?} request has no update proof type",
                self.proof_kind
            )));
        }
        update_proof_from_abi(self.registered_proof)
    }

    /// The proof request the file describes (its fields decoded).
    pub fn proof_request(&self) -> Result<ProofRequest> {
        Ok(ProofRequest {
            request_id: String::new(),
            kind: self.proof_kind.proof_kind(),
            registered_proof: self.registered_proof,
            priority: None,
            vanilla_proof: Vec::new(),
            vanilla_proofs: self.vanilla_proof_bytes()?,
            sector: SectorFields {
                sector_size: self.sector_size,
                sector_number: self.sector_number,
                miner_id: self.miner_id,
                randomness: self.randomness_bytes()?,
                partition_index: self.partition_index,
                comm_r_old: self.comm_r_old_bytes()?,
                comm_r_new: self.comm_r_new_bytes()?,
                comm_d_new: self.comm_d_new_bytes()?,
            },
        })
    }
}

/// `c1-envelope.json`: lotus-bench's wrapping of a C1 output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct C1Envelope {
    #[serde(rename = "SectorNum")]
    pub sector_num: u64,
    /// Standard base64 of the C1 JSON bytes.
    #[serde(rename = "Phase1Out")]
    pub phase1_out: String,
    #[serde(rename = "SectorSize")]
    pub sector_size: u64,
}

impl C1Envelope {
    /// The C1 JSON bytes inside.
    pub fn phase1_out_bytes(&self) -> Result<Vec<u8>> {
        decode_base64("Phase1Out", &self.phase1_out)
    }
}

/// The names of a fixture's files (relative to its directory).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixtureFiles {
    pub c1: String,
    pub c1_envelope: String,
    pub winning: String,
    pub wpost: String,
    pub snap: String,
}

/// `fixture.json`: what was sealed, and where its request files are.
/// Byte strings are hex; every field is a deterministic function of
/// `(sector_size, rng_seed)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixtureManifest {
    pub sector_size: u64,
    /// Go ABI number of the seal proof (V1_1 of the size).
    pub registered_seal_proof: u64,
    pub miner_id: u64,
    pub sector_number: u64,
    pub prover_id: String,
    /// PreCommit ticket (replica id randomness).
    pub ticket: String,
    /// Interactive PoRep seed (C1 challenges).
    pub seed: String,
    pub comm_r: String,
    pub comm_d: String,
    /// The seed of the ChaCha20 rng everything random was drawn from.
    pub rng_seed: u64,
    pub files: FixtureFiles,
}

impl FixtureManifest {
    /// `comm_r` bytes.
    pub fn comm_r_bytes(&self) -> Result<[u8; 32]> {
        decode_hex32("comm_r", &self.comm_r)
    }
    /// `comm_d` bytes.
    pub fn comm_d_bytes(&self) -> Result<[u8; 32]> {
        decode_hex32("comm_d", &self.comm_d)
    }
    /// Ticket bytes.
    pub fn ticket_bytes(&self) -> Result<[u8; 32]> {
        decode_hex32("ticket", &self.ticket)
    }
    /// Seed bytes.
    pub fn seed_bytes(&self) -> Result<[u8; 32]> {
        decode_hex32("seed", &self.seed)
    }
    /// Prover id bytes.
    pub fn prover_id_bytes(&self) -> Result<[u8; 32]> {
        decode_hex32("prover_id", &self.prover_id)
    }
    /// The seal proof.
    pub fn seal_proof(&self) -> Result<RegisteredSealProof> {
        seal_proof_from_abi(self.registered_seal_proof)
    }
}

/// Reads a [`VanillaRequestFile`] (`winning.json`, `wpost.json`, `snap.json`).
pub fn load_request_file(path: impl AsRef<Path>) -> Result<VanillaRequestFile> {
    load_json(path.as_ref())
}

/// Reads a `c1.json` (filecoin-proofs-api's typed C1 output).
pub fn load_c1(path: impl AsRef<Path>) -> Result<SealCommitPhase1Output> {
    load_json(path.as_ref())
}

/// Reads a `c1-envelope.json`.
pub fn load_c1_envelope(path: impl AsRef<Path>) -> Result<C1Envelope> {
    load_json(path.as_ref())
}

/// Reads the `fixture.json` of a fixture directory.
pub fn load_manifest(dir: impl AsRef<Path>) -> Result<FixtureManifest> {
    load_json(&dir.as_ref().join(MANIFEST_FILE))
}

fn load_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = fs::read(path).map_err(|e| invalid(format!("reading {}: {e}", path.display())))?;
    serde_json::from_slice(&bytes).map_err(|e| invalid(format!("parsing {}: {e}", path.display())))
}

/// Hex of exactly 32 bytes.
pub fn decode_hex32(field: &str, s: &str) -> Result<[u8; 32]> {
    let v = hex::decode(s).map_err(|e| invalid(format!("{field}: invalid hex {s:?}: {e}")))?;
    v.as_slice()
        .try_into()
        .map_err(|_| invalid(format!("{field}: expected 32 bytes, got {}", v.len())))
}

/// Empty, or hex of exactly 32 bytes.
pub fn decode_hex32_or_empty(field: &str, s: &str) -> Result<Vec<u8>> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    Ok(decode_hex32(field, s)?.to_vec())
}

/// Standard (padded) base64.
pub fn decode_base64(field: &str, s: &str) -> Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| invalid(format!("{field}: invalid base64 ({} chars): {e}", s.len())))
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// How long one step of [`write_fixtures_timed`] took.
#[derive(Clone, Debug)]
pub struct PhaseTiming {
    pub phase: &'static str,
    pub elapsed: Duration,
}

/// Seals one sector of `sector_size` bytes and writes its fixtures into
/// `out_dir` (see the module docs); returns the manifest it wrote.
///
/// Deterministic in `(sector_size, seed)`. Scratch files go to
/// `out_dir/work`, removed at the end. Call [`crate::settings::init`] first
/// so the SDR parent cache lands in a directory of ours.
pub fn write_fixtures(sector_size: u64, out_dir: &Path, seed: u64) -> Result<FixtureManifest> {
    write_fixtures_timed(sector_size, out_dir, seed).map(|(manifest, _)| manifest)
}

/// [`write_fixtures`], also returning the time of each step.
pub fn write_fixtures_timed(
    sector_size: u64,
    out_dir: &Path,
    seed: u64,
) -> Result<(FixtureManifest, Vec<PhaseTiming>)> {
    let proofs = SizeProofs::for_sector_size(sector_size)?;
    ensure(u64::from(proofs.seal.sector_size()) == sector_size, || {
        format!("seal proof {:?} is not of {sector_size} bytes", proofs.seal)
    })?;
    let mut timings = Vec::new();
    let mut clock = Instant::now();
    let mut lap = |phase: &'static str| {
        let elapsed = clock.elapsed();
        tracing::info!(phase, secs = elapsed.as_secs_f64(), "fixture step done");
        timings.push(PhaseTiming { phase, elapsed });
        clock = Instant::now();
    };

    fs::create_dir_all(out_dir).map_err(failed(format_args!("creating {}", out_dir.display())))?;
    let work = Work::create(&out_dir.join("work"))?;

    // Everything random comes from one rng, in a fixed order.
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let ticket: [u8; 32] = nonzero(rng.gen());
    let interactive_seed: [u8; 32] = nonzero(rng.gen());
    let prover = prover_id(MINER_ID);
    let sector_id = SectorId::from(SECTOR_NUMBER);
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size));

    // AddPiece: one random piece filling the sector.
    let piece = random_piece(&mut rng, unpadded);
    let piece_info = stage_piece(proofs.seal, &piece, &work.staged, unpadded)?;
    drop(piece);
    let piece_infos = [piece_info];
    lap("add_piece");

    // PreCommit 1 (SDR labels) and 2 (tree_c, tree_r_last, comm_r).
    File::create(&work.sealed).map_err(failed(format_args!("creating {}", work.sealed.display())))?;
    let pc1 = seal::seal_pre_commit_phase1(
        proofs.seal,
        &work.cache,
        &work.staged,
        &work.sealed,
        prover,
        sector_id,
        ticket,
        &piece_infos,
    )
    .map_err(failed("seal_pre_commit_phase1"))?;
    lap("precommit1");
    let pc2 = seal::seal_pre_commit_phase2(pc1, &work.cache, &work.sealed)
        .map_err(failed("seal_pre_commit_phase2"))?;
    let (comm_r, comm_d) = (pc2.comm_r, pc2.comm_d);
    lap("precommit2");

    // Commit 1: the PoRep vanilla proofs (filecoin-proofs verifies them).
    let c1 = seal::seal_commit_phase1(
        &work.cache,
        &work.sealed,
        prover,
        sector_id,
        ticket,
        interactive_seed,
        pc2,
        &piece_infos,
    )
    .map_err(failed("seal_commit_phase1"))?;
    ensure(c1.comm_r == comm_r && c1.comm_d == comm_d, || {
        "C1 commitments differ from PreCommit's".into()
    })?;
    let c1_json = serde_json::to_vec(&c1).map_err(failed("serialising the C1 output"))?;
    drop(c1);
    // What lotus keeps after C1: the replica, tree_r_last, p_aux/t_aux.
    seal::clear_cache(&work.cache).map_err(failed("clear_cache"))?;
    lap("commit1");

    // WinningPoSt: one sector per proof.
    let winning_randomness = post_randomness(&mut rng);
    let challenged =
        post::generate_winning_post_sector_challenge(proofs.winning, &winning_randomness, 1, prover)
            .map_err(failed("generate_winning_post_sector_challenge"))?;
    ensure(challenged == [0], || {
        format!("one sector, yet WinningPoSt challenged {challenged:?}")
    })?;
    let winning_vanilla = post_vanilla(proofs.winning, &winning_randomness, prover, comm_r, &work)?;
    lap("winning_post_vanilla");

    // WindowPoSt, partition 0 (the only one: one sector).
    let window_randomness = post_randomness(&mut rng);
    let wpost_vanilla = post_vanilla(proofs.window, &window_randomness, prover, comm_r, &work)?;
    lap("window_post_vanilla");

    // SnapDeals: new random data encoded into the sealed replica.
    let new_piece = random_piece(&mut rng, unpadded);
    let new_piece_info = stage_piece(proofs.seal, &new_piece, &work.new_staged, unpadded)?;
    drop(new_piece);
    let sealed_len = fs::metadata(&work.sealed)
        .map_err(failed(format_args!("reading {}", work.sealed.display())))?
        .len();
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&work.update)
        .and_then(|f| f.set_len(sealed_len))
        .map_err(failed(format_args!("creating {}", work.update.display())))?;
    let encoded = update::empty_sector_update_encode_into(
        proofs.update,
        &work.update,
        &work.update_cache,
        &work.sealed,
        &work.cache,
        &work.new_staged,
        &[new_piece_info],
    )
    .map_err(failed("empty_sector_update_encode_into"))?;
    lap("snap_encode");
    let snap_vanilla = update::generate_partition_proofs(
        proofs.update,
        comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &work.sealed,
        &work.cache,
        &work.update,
        &work.update_cache,
    )
    .map_err(failed("generate_partition_proofs"))?;
    ensure(snap_vanilla.len() == snap_partitions(proofs.update), || {
        format!(
            "{} SnapDeals partition proofs, expected {}",
            snap_vanilla.len(),
            snap_partitions(proofs.update)
        )
    })?;
    lap("snap_vanilla");

    // The files.
    write_file(&out_dir.join(C1_FILE), &c1_json)?;
    let envelope = C1Envelope {
        sector_num: SECTOR_NUMBER,
        phase1_out: b64(&c1_json),
        sector_size,
    };
    write_json(&out_dir.join(C1_ENVELOPE_FILE), &envelope)?;

    let post_request = |kind, proof, randomness: &[u8; 32], vanilla: &[u8]| VanillaRequestFile {
        proof_kind: kind,
        registered_proof: post_proof_abi(proof),
        sector_size,
        miner_id: MINER_ID,
        sector_number: SECTOR_NUMBER,
        randomness: hex::encode(randomness),
        partition_index: 0,
        comm_r_old: String::new(),
        comm_r_new: String::new(),
        comm_d_new: String::new(),
        vanilla_proofs: vec![b64(vanilla)],
    };
    write_json(
        &out_dir.join(WINNING_FILE),
        &post_request(
            RequestKind::Winning,
            proofs.winning,
            &winning_randomness,
            &winning_vanilla,
        ),
    )?;
    write_json(
        &out_dir.join(WPOST_FILE),
        &post_request(
            RequestKind::Wpost,
            proofs.window,
            &window_randomness,
            &wpost_vanilla,
        ),
    )?;
    let snap = VanillaRequestFile {
        proof_kind: RequestKind::Snap,
        registered_proof: update_proof_abi(proofs.update),
        sector_size,
        miner_id: MINER_ID,
        sector_number: SECTOR_NUMBER,
        randomness: String::new(),
        partition_index: 0,
        comm_r_old: hex::encode(comm_r),
        comm_r_new: hex::encode(encoded.comm_r_new),
        comm_d_new: hex::encode(encoded.comm_d_new),
        vanilla_proofs: snap_vanilla.iter().map(|p| b64(&p.0)).collect(),
    };
    write_json(&out_dir.join(SNAP_FILE), &snap)?;

    let manifest = FixtureManifest {
        sector_size,
        registered_seal_proof: seal_proof_abi(proofs.seal),
        miner_id: MINER_ID,
        sector_number: SECTOR_NUMBER,
        prover_id: hex::encode(prover),
        ticket: hex::encode(ticket),
        seed: hex::encode(interactive_seed),
        comm_r: hex::encode(comm_r),
        comm_d: hex::encode(comm_d),
        rng_seed: seed,
        files: FixtureFiles {
            c1: C1_FILE.into(),
            c1_envelope: C1_ENVELOPE_FILE.into(),
            winning: WINNING_FILE.into(),
            wpost: WPOST_FILE.into(),
            snap: SNAP_FILE.into(),
        },
    };
    write_json(&out_dir.join(MANIFEST_FILE), &manifest)?;
    work.remove()?;
    lap("write");
    Ok((manifest, timings))
}

/// Scratch paths under `out_dir/work`.
struct Work {
    root: PathBuf,
    staged: PathBuf,
    sealed: PathBuf,
    cache: PathBuf,
    new_staged: PathBuf,
    update: PathBuf,
    update_cache: PathBuf,
}

impl Work {
    fn create(root: &Path) -> Result<Self> {
        if root.exists() {
            fs::remove_dir_all(root).map_err(failed(format_args!("removing stale {}", root.display())))?;
        }
        let work = Self {
            root: root.to_path_buf(),
            staged: root.join("staged"),
            sealed: root.join("sealed"),
            cache: root.join("cache"),
            new_staged: root.join("update-staged"),
            update: root.join("update"),
            update_cache: root.join("update-cache"),
        };
        for dir in [&work.cache, &work.update_cache] {
            fs::create_dir_all(dir).map_err(failed(format_args!("creating {}", dir.display())))?;
        }
        Ok(work)
    }

    fn remove(self) -> Result<()> {
        fs::remove_dir_all(&self.root).map_err(failed(format_args!("removing {}", self.root.display())))
    }
}

fn nonzero(bytes: [u8; 32]) -> [u8; 32] {
    let mut bytes = bytes;
    if bytes == [0; 32] {
        bytes[0] = 1;
    }
    bytes
}

fn random_piece(rng: &mut impl RngCore, unpadded: UnpaddedBytesAmount) -> Vec<u8> {
    let mut piece = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut piece);
    piece
}

/// AddPiece of one full-sector piece into a new staged file.
fn stage_piece(
    proof: RegisteredSealProof,
    piece: &[u8],
    staged: &Path,
    unpadded: UnpaddedBytesAmount,
) -> Result<PieceInfo> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(staged)
        .map_err(failed(format_args!("creating {}", staged.display())))?;
    let (info, written) = seal::add_piece(proof, piece, file, unpadded, &[]).map_err(failed("add_piece"))?;
    ensure(written == unpadded, || {
        format!("add_piece wrote {written:?} of {unpadded:?}")
    })?;
    Ok(info)
}

/// The vanilla proof (bincode `FallbackPoStSectorProof`) of our one sector.
fn post_vanilla(
    proof: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover: ProverId,
    comm_r: Commitment,
    work: &Work,
) -> Result<Vec<u8>> {
    let sector_id = SectorId::from(SECTOR_NUMBER);
    let step = format!("generate_fallback_sector_challenges({proof:?})");
    let mut challenges = post::generate_fallback_sector_challenges(proof, randomness, &[sector_id], prover)
        .map_err(failed(step))?;
    let challenges = challenges
        .remove(&sector_id)
        .ok_or_else(|| PlanError::Internal(format!("{proof:?}: no challenges for sector {SECTOR_NUMBER}")))?;
    let replica = PrivateReplicaInfo::new(proof, comm_r, work.cache.clone(), work.sealed.clone());
    post::generate_single_vanilla_proof(proof, sector_id, &replica, &challenges)
        .map_err(failed(format_args!("generate_single_vanilla_proof({proof:?})")))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    fs::write(path, bytes).map_err(failed(format_args!("writing {}", path.display())))
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes =
        serde_json::to_vec_pretty(value).map_err(failed(format_args!("serialising {}", path.display())))?;
    bytes.push(b'\n');
    write_file(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_numbers_match_the_go_constants() {
        assert_eq!(seal_proof_abi(RegisteredSealProof::StackedDrg2KiBV1_1), 5);
        assert_eq!(seal_proof_abi(RegisteredSealProof::StackedDrg32GiBV1_1), 8);
        assert_eq!(
            seal_proof_abi(RegisteredSealProof::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep),
            19
        );
        assert_eq!(post_proof_abi(RegisteredPoStProof::StackedDrgWinning32GiBV1), 3);
        assert_eq!(post_proof_abi(RegisteredPoStProof::StackedDrgWindow2KiBV1_2), 10);
        assert_eq!(post_proof_abi(RegisteredPoStProof::StackedDrgWindow64GiBV1_2), 14);
        assert_eq!(update_proof_abi(RegisteredUpdateProof::StackedDrg512MiBV1), 2);
        for (n, p) in SEAL_PROOFS.iter().enumerate() {
            assert_eq!(seal_proof_from_abi(n as u64).unwrap(), *p);
        }
        assert!(post_proof_from_abi(15).is_err());
        assert!(update_proof_from_abi(5).is_err());
    }

    #[test]
    fn size_proofs_agree_on_the_sector_size() {
        for size in SECTOR_SIZES {
            let p = SizeProofs::for_sector_size(size).unwrap();
            assert_eq!(u64::from(p.seal.sector_size()), size);
            assert_eq!(u64::from(p.winning.sector_size()), size);
            assert_eq!(u64::from(p.window.sector_size()), size);
            assert_eq!(u64::from(p.update.sector_size()), size);
            assert!(format!("{:?}", p.seal).ends_with("V1_1"));
            assert!(format!("{:?}", p.window).ends_with("V1_2"));
        }
        assert!(SizeProofs::for_sector_size(4096).is_err());
    }

    #[test]
    fn snap_partitions_are_the_update_circuit_counts() {
        let counts: Vec<usize> = UPDATE_PROOFS.iter().map(|&p| snap_partitions(p)).collect();
        assert_eq!(counts, [1, 4, 16, 16, 16]);
    }

    #[test]
    fn post_randomness_is_a_canonical_scalar() {
        use ff::PrimeField;
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for _ in 0..1000 {
            let r = post_randomness(&mut rng);
            assert!(bool::from(blstrs::Scalar::from_repr(r).is_some()));
        }
    }

    #[test]
    fn field_decoding_errors_name_the_field() {
        let err = decode_hex32("comm_r_new", "abcd").unwrap_err().to_string();
        assert!(err.contains("comm_r_new") && err.contains("got 2"), "{err}");
        let err = decode_hex32("randomness", "zz").unwrap_err().to_string();
        assert!(err.contains("randomness") && err.contains("invalid hex"), "{err}");
        assert!(decode_hex32_or_empty("comm_d_new", "").unwrap().is_empty());
        let err = decode_base64("vanilla_proofs[3]", "***").unwrap_err().to_string();
        assert!(err.contains("vanilla_proofs[3]"), "{err}");
    }
}
